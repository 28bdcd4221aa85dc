/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pmc/counters.c - opening an event list on (cpu, thread) pairs with
 * perf_event_open, reading and scaling the counts, and turning the errors a
 * user meets (perf_event_paranoid, unsupported events, vanished threads,
 * descriptor limits) into one line that says what to do.
 *
 * Each descriptor is read on its own (time_enabled/time_running per fd, no
 * PERF_FORMAT_GROUP) so inherit works and any member can be summed across
 * CPUs and threads; groups still make the kernel schedule members together.
 */
#include "pmc/pmc_int.h"

#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

struct hwt_pmc_counters {
	const struct hwt_pmc_evlist *list;
	struct hwt_logger logger;
	struct hwt_psys *psys;
	size_t nev, ncpu, nthr;
	int *cpus;	  /* ncpu entries (-1 for "any") */
	int *tids;	  /* nthr entries (-1 for "all") */
	int *fds;	  /* [ev][cpu][thr] */
	uint32_t *flags;  /* per event: HWT_PMC_COUNT_NOT_SUPPORTED / USER_ONLY */
	bool *gone;	  /* per thread: exited before we opened */
	char (*why)[320]; /* per event: why it is not supported */
	size_t nr_fds;
};

void hwt_pmc_counters_config_init(struct hwt_pmc_counters_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->inherit = true;
}

static int *fdp(const struct hwt_pmc_counters *c, size_t ev, size_t cpu, size_t thr)
{
	return &c->fds[(ev * c->ncpu + cpu) * c->nthr + thr];
}

int hwt_pmc_counters_fd(const struct hwt_pmc_counters *ctr, size_t ev, size_t cpu_idx,
			size_t thread_idx)
{
	if (!ctr || ev >= ctr->nev || cpu_idx >= ctr->ncpu || thread_idx >= ctr->nthr)
		return -1;
	return *fdp(ctr, ev, cpu_idx, thread_idx);
}

size_t hwt_pmc_counters_nr_fds(const struct hwt_pmc_counters *ctr)
{
	return ctr ? ctr->nr_fds : 0;
}

const char *hwt_pmc_counters_why(const struct hwt_pmc_counters *ctr, size_t ev)
{
	return ctr && ev < ctr->nev ? ctr->why[ev] : "";
}

void hwt_pmc_counters_close(struct hwt_pmc_counters *ctr)
{
	if (!ctr)
		return;
	if (ctr->fds) {
		for (size_t i = 0; i < ctr->nev * ctr->ncpu * ctr->nthr; i++) {
			if (ctr->fds[i] >= 0)
				hwt_psys_close(ctr->psys, ctr->fds[i]);
		}
	}
	free(ctr->fds);
	free(ctr->cpus);
	free(ctr->tids);
	free(ctr->flags);
	free(ctr->gone);
	free(ctr->why);
	free(ctr);
}

int hwt_pmc_paranoid_needed(const struct perf_event_attr *attr, int pid, int cpu)
{
	/* kernel/events/core.c: perf_allow_cpu (> 0 denies CPU-wide),
	 * perf_allow_kernel (> 1 denies kernel space), perf_allow_tracepoint
	 * (raw samples need -1). Level 2 allows user-space per-process events;
	 * Debian's level 3 allows nothing unprivileged. */
	if (attr->type == PERF_TYPE_TRACEPOINT && (attr->sample_type & PERF_SAMPLE_RAW) &&
	    pid == -1)
		return -1;
	if (pid == -1 && cpu >= 0)
		return 0;
	if (!attr->exclude_kernel)
		return 1;
	return 2;
}

/* What the machine's sysfs says of the event's PMU, for explanations. */
struct pmu_facts {
	bool core_pmu;	 /* cpu, cpu_core or cpu_atom exists */
	bool hybrid;	 /* cpu_core and cpu_atom */
	bool amd_ibs;	 /* ibs_op exists */
	bool vm;	 /* /proc/cpuinfo has the hypervisor flag */
	int max_precise; /* caps/max_precise of the core PMU (-1: unknown) */
	char core[32];	 /* the core PMU's name */
};

static bool sysfs_has(const char *root, const char *rel)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s", root ? root : "/sys", rel);
	return stat(path, &st) == 0;
}

static void pmu_facts(const struct hwt_pmc_open_error *oe, struct pmu_facts *f)
{
	static const char *const cores[] = {"cpu_core", "cpu", "cpu_atom"};
	char path[4096], text[4096];
	FILE *fp;

	memset(f, 0, sizeof(*f));
	f->max_precise = -1;
	for (size_t i = 0; i < sizeof(cores) / sizeof(cores[0]) && !f->core_pmu; i++) {
		if (sysfs_has(oe->sysfs_root, cores[i])) {
			f->core_pmu = true;
			snprintf(f->core, sizeof(f->core), "%s", cores[i]);
		}
	}
	f->hybrid = sysfs_has(oe->sysfs_root, "cpu_core") && sysfs_has(oe->sysfs_root, "cpu_atom");
	f->amd_ibs = sysfs_has(oe->sysfs_root, "ibs_op");
	if (f->core_pmu) {
		snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s/caps/max_precise",
			 oe->sysfs_root ? oe->sysfs_root : "/sys", f->core);
		if (hwt_pmc_read_text(path, text, sizeof(text)) > 0)
			f->max_precise = atoi(text);
	}
	snprintf(path, sizeof(path), "%s/cpuinfo", oe->procfs_root ? oe->procfs_root : "/proc");
	if ((fp = fopen(path, "r"))) {
		while (fgets(text, sizeof(text), fp)) {
			if (!strncmp(text, "flags", 5)) {
				f->vm = strstr(text, " hypervisor") != NULL;
				break;
			}
		}
		fclose(fp);
	}
}

void hwt_pmc_explain_open_error(char *buf, size_t len, int err, const struct hwt_pmc_event *ev,
				int pid, int cpu, int paranoid, size_t fds_needed)
{
	struct hwt_pmc_open_error oe;

	memset(&oe, 0, sizeof(oe));
	oe.size = sizeof(oe);
	oe.err = err;
	oe.ev = ev;
	oe.pid = pid;
	oe.cpu = cpu;
	oe.paranoid = paranoid;
	oe.fds_needed = fds_needed;
	hwt_pmc_explain(buf, len, &oe);
}

int hwt_pmc_nmi_watchdog(const char *procfs_root)
{
	char path[4096], text[16];
	int n;

	snprintf(path, sizeof(path), "%s/sys/kernel/nmi_watchdog",
		 procfs_root ? procfs_root : "/proc");
	n = hwt_pmc_read_text(path, text, sizeof(text));
	if (n < 0)
		return n;
	return atoi(text) != 0;
}

/* EINVAL, EOPNOTSUPP, ENOENT...: what about this event the kernel refused. */
static void explain_unsupported(char *buf, size_t len, const struct hwt_pmc_open_error *oe,
				const struct perf_event_attr *a, const char *name)
{
	const struct hwt_pmc_event *ev = oe->ev;
	bool sampling = a->sample_period != 0;
	int e = -oe->err;
	struct pmu_facts f;

	pmu_facts(oe, &f);
	if (ev && ev->system_pmu && (oe->cpu < 0 || e == EINVAL)) {
		if (oe->cpu < 0)
			snprintf(
			    buf, len,
			    "'%s' is an event of the %s PMU, which counts the whole package for "
			    "every task: it cannot count one task; count it system-wide with -a",
			    name, ev->pmu);
		else if (sampling)
			snprintf(
			    buf, len,
			    "'%s' cannot sample: the %s PMU has no interrupt per event; count it "
			    "with 'hwtrace stat -a'",
			    name, ev->pmu);
		else if (a->exclude_user || a->exclude_kernel || a->exclude_hv || a->exclude_idle)
			snprintf(buf, len,
				 "'%s': the %s PMU counts every privilege level at once; drop the "
				 ":u/:k/:h/:I modifiers",
				 name, ev->pmu);
		else
			snprintf(
			    buf, len,
			    "the kernel rejected '%s' (invalid argument): check its terms against "
			    "%s/bus/event_source/devices/%s/events",
			    name, oe->sysfs_root ? oe->sysfs_root : "/sys", ev->pmu);
		return;
	}
	if (f.amd_ibs && a->precise_ip && e == EINVAL &&
	    (a->exclude_user || a->exclude_kernel || a->exclude_hv)) {
		snprintf(buf, len,
			 "'%s': on AMD, precise cycles (:p) are taken by IBS, which cannot filter "
			 "privilege levels (no :u or :k, and no user-space-only fallback under "
			 "perf_event_paranoid 2); drop the modifiers and run as root, or drop :p",
			 name);
		return;
	}
	if (a->precise_ip && e == EOPNOTSUPP) {
		if (f.max_precise >= 0)
			snprintf(
			    buf, len,
			    "'%s' asks for precise level %u but this CPU's PMU (%s) supports up "
			    "to %d (caps/max_precise); use :%.*s or :P (the highest that works)",
			    name, (unsigned)a->precise_ip, f.core, f.max_precise,
			    f.max_precise > 0 ? f.max_precise : 1, "ppp");
		else
			snprintf(buf, len,
				 "'%s' asks for precise level %u, which this CPU does not support; "
				 "drop the p modifiers or use :P (the highest that works)",
				 name, (unsigned)a->precise_ip);
		return;
	}
	if (a->precise_ip && !sampling && e == EINVAL) {
		snprintf(
		    buf, len,
		    "'%s': precise modifiers (:p) are for sampling (PEBS/IBS); count the event "
		    "without them (hwtrace record takes them)",
		    name);
		return;
	}
	if ((a->sample_type & PERF_SAMPLE_BRANCH_STACK) && (e == EOPNOTSUPP || e == ENOENT)) {
		snprintf(buf, len,
			 "'%s': this CPU has no branch stack (LBR) the kernel can use; use "
			 "--call-graph fp",
			 name);
		return;
	}
	if (e == EINVAL && ev && ev->leader >= 0 && ev->nr_members == 0) {
		snprintf(buf, len,
			 "'%s' cannot join its group: the group needs more counters than the PMU "
			 "has, or mixes PMUs; split the group, or make it weak with :W",
			 name);
		return;
	}
	if (e == EINVAL) {
		snprintf(buf, len,
			 "the kernel rejected event '%s' (invalid argument): its encoding or "
			 "modifiers do not fit %s; check it with 'hwtrace list'",
			 name, f.core_pmu ? "this CPU's PMU" : "this machine");
		return;
	}
	if (!f.core_pmu && (a->type == PERF_TYPE_HARDWARE || a->type == PERF_TYPE_HW_CACHE ||
			    a->type == PERF_TYPE_RAW)) {
		if (f.vm)
			snprintf(
			    buf, len,
			    "event '%s' is not supported on this CPU/VM: this virtual machine "
			    "exposes no hardware counters (no virtual PMU); enable one in the "
			    "hypervisor (KVM/QEMU: -cpu host; VMware: virtualize CPU performance "
			    "counters) or pick a software event from 'hwtrace list'",
			    name);
		else
			snprintf(
			    buf, len,
			    "event '%s' is not supported on this CPU: the kernel has no PMU "
			    "driver for it (no cpu PMU in /sys/bus/event_source/devices); pick a "
			    "software event from 'hwtrace list'",
			    name);
		return;
	}
	if (f.hybrid && oe->cpu >= 0 && ev && !ev->pmu[0])
		snprintf(buf, len,
			 "event '%s' names no core PMU and CPU %d is not a %s CPU (a hybrid CPU); "
			 "name the PMU: cpu_core/%s/ or cpu_atom/%s/",
			 name, oe->cpu, f.core, name, name);
	else if (f.vm)
		snprintf(buf, len,
			 "event '%s' is not supported on this CPU/VM (a virtual PMU exposes fewer "
			 "events than the CPU); pick another event from 'hwtrace list' or run on "
			 "bare metal",
			 name);
	else
		snprintf(buf, len,
			 "event '%s' is not supported by this CPU's PMU (%s): the kernel has no "
			 "such event here; pick another event from 'hwtrace list'",
			 name,
			 ev && ev->pmu[0] ? ev->pmu
			 : f.core_pmu	  ? f.core
					  : "none");
}

static void explain(char *buf, size_t len, const struct hwt_pmc_open_error *oe)
{
	const struct hwt_pmc_event *ev = oe->ev;
	const struct perf_event_attr *a = oe->attr ? oe->attr : ev ? &ev->attr : NULL;
	const char *name = ev ? ev->name : "?";
	const char *verb = oe->verb ? oe->verb : "count";
	int pid = oe->pid, cpu = oe->cpu, paranoid = oe->paranoid;
	struct perf_event_attr none;
	char where[64];

	if (!len)
		return;
	if (!a) {
		memset(&none, 0, sizeof(none));
		a = &none;
	}
	if (pid == -1 && cpu >= 0)
		snprintf(where, sizeof(where), "system-wide on CPU %d", cpu);
	else
		snprintf(where, sizeof(where), "for thread %d", pid);

	switch (-oe->err) {
	case EACCES:
	case EPERM: {
		int need = hwt_pmc_paranoid_needed(a, pid, cpu);
		const char *what = need <= 0   ? "system-wide counting"
				   : need == 1 ? "counting kernel space"
					       : "counting";

		if (paranoid != INT_MIN && paranoid > need) {
			/* ':u' helps only at level 2; Debian's 3 refuses all. */
			snprintf(buf, len,
				 "cannot %s '%s' %s: %s needs perf_event_paranoid <= %d but it is "
				 "%d; run as root (or with CAP_PERFMON) or set it with 'sysctl -w "
				 "kernel.perf_event_paranoid=%d'%s",
				 verb, name, where, what, need, paranoid, need,
				 need == 1 && paranoid == 2 ? ", or count user space only with ':u'"
							    : "");
		} else if (pid > 0) {
			snprintf(
			    buf, len,
			    "cannot %s '%s' %s: permission denied (the process belongs to "
			    "another user, or ptrace is restricted); run as its owner or as root",
			    verb, name, where);
		} else {
			snprintf(buf, len,
				 "cannot %s '%s' %s: permission denied; run as root or with "
				 "CAP_PERFMON",
				 verb, name, where);
		}
		return;
	}
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
	case ENXIO:
	case EINVAL:
		explain_unsupported(buf, len, oe, a, name);
		return;
	case ESRCH:
		snprintf(buf, len,
			 "process %d is gone (it exited or never existed); check the PID "
			 "with 'ps'",
			 pid);
		return;
	case EMFILE:
	case ENFILE: {
		struct rlimit rl;
		unsigned long long lim = 0;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
			lim = (unsigned long long)rl.rlim_cur;
		snprintf(buf, len,
			 "too many open files: counting needs %zu file descriptors besides those "
			 "already open and the limit is %llu; raise it with 'ulimit -n %zu' or "
			 "count fewer events or CPUs",
			 oe->fds_needed, lim, oe->fds_needed + 64);
		return;
	}
	case EBUSY:
		snprintf(buf, len,
			 "event '%s' is busy: another tool holds the PMU exclusively; stop "
			 "it and retry",
			 name);
		return;
	default:
		snprintf(buf, len, "cannot %s '%s' %s: %s", verb, name, where,
			 hwt_strerror(oe->err));
		return;
	}
}

void hwt_pmc_explain(char *buf, size_t len, const struct hwt_pmc_open_error *oe)
{
	/* The caller's struct may be an older, shorter one (libbpf's rule):
	 * what it lacks keeps the defaults. */
	struct hwt_pmc_open_error copy = {.paranoid = INT_MIN};

	if (!oe || hwt_opts_copy(&copy, sizeof(copy), oe) < 0) {
		if (len)
			snprintf(buf, len, "%s", hwt_strerror(-HWT_EINVAL));
		return;
	}
	explain(buf, len, &copy);
}

/* perf stat's stat_handle_error: these mean "not supported here" (the
 * event, its modifiers or its group), not a failure of the whole run. */
static bool unsupported_errno(int e)
{
	return e == ENOENT || e == EOPNOTSUPP || e == ENODEV || e == ENXIO || e == EINVAL;
}

/* Raises the soft descriptor limit to the hard one (perf does the same on
 * EMFILE). Returns true when it grew. */
static bool raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
		return false;
	rl.rlim_cur = rl.rlim_max;
	return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

static void close_thread(struct hwt_pmc_counters *c, size_t cpu, size_t thr)
{
	for (size_t e = 0; e < c->nev; e++) {
		int *fd = fdp(c, e, cpu, thr);

		if (*fd >= 0) {
			hwt_psys_close(c->psys, *fd);
			*fd = -1;
			c->nr_fds--;
		}
	}
}

static void close_event(struct hwt_pmc_counters *c, size_t ev)
{
	for (size_t cpu = 0; cpu < c->ncpu; cpu++) {
		for (size_t thr = 0; thr < c->nthr; thr++) {
			int *fd = fdp(c, ev, cpu, thr);

			if (*fd >= 0) {
				hwt_psys_close(c->psys, *fd);
				*fd = -1;
				c->nr_fds--;
			}
		}
	}
}

static int explain_into(const struct hwt_pmc_counters_config *cfg, struct hwt_pmc_counters *c,
			char *buf, size_t len, int err, size_t ev,
			const struct perf_event_attr *attr, int pid, int cpu)
{
	struct hwt_pmc_open_error oe;

	if (!buf || !len)
		return err;
	memset(&oe, 0, sizeof(oe));
	oe.size = sizeof(oe);
	oe.err = err;
	oe.ev = hwt_pmc_evlist_event(c->list, ev);
	oe.attr = attr;
	oe.pid = pid;
	oe.cpu = cpu;
	if (hwt_pmc_paranoid_read(cfg->paranoid_path, &oe.paranoid) < 0)
		oe.paranoid = INT_MIN;
	oe.fds_needed = c->nev * c->ncpu * c->nthr;
	oe.sysfs_root =
	    c->list->cfg.sysfs_root ? c->list->cfg.sysfs_root : hwt_psys_sysfs_root(cfg->psys);
	oe.procfs_root = hwt_psys_procfs_root(cfg->psys);
	hwt_pmc_explain(buf, len, &oe);
	return err;
}

/* Opens event e on (cpu index ci, thread index ti). Returns the fd or
 * -errno, after the user-space-only fallback and :P's precise levels;
 * *tried gets the attribute of the last attempt. */
static int open_one(struct hwt_pmc_counters *c, const struct hwt_pmc_counters_config *cfg, size_t e,
		    size_t ci, size_t ti, bool solo, struct perf_event_attr *tried)
{
	const struct hwt_pmc_event *ev = hwt_pmc_evlist_event(c->list, e);
	struct perf_event_attr *attr = tried;
	bool leader = ev->leader == (int)e || solo;
	int group_fd = leader ? -1 : *fdp(c, (size_t)ev->leader, ci, ti);
	bool raised = false;

	*attr = ev->attr;
	if (!leader && group_fd < 0)
		return -ENOENT; /* the leader is not supported */
	attr->size = sizeof(*attr);
	attr->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	attr->inherit = cfg->inherit && c->tids[ti] != -1 ? 1 : 0;
	/* Only leaders start disabled: members follow their leader. */
	attr->disabled = leader && (cfg->start_disabled || cfg->enable_on_exec);
	attr->enable_on_exec = leader && cfg->enable_on_exec;
	if (!leader)
		attr->pinned = attr->exclusive = 0;
	if (c->flags[e] & HWT_PMC_COUNT_USER_ONLY) {
		attr->exclude_kernel = 1;
		attr->exclude_hv = 1;
	}
	for (;;) {
		int fd = hwt_psys_event_open(c->psys, attr, c->tids[ti], c->cpus[ci], group_fd,
					     PERF_FLAG_FD_CLOEXEC);
		int paranoid;

		if (fd >= 0)
			return fd;
		if ((fd == -EMFILE) && !raised) {
			raised = true;
			if (raise_nofile())
				continue;
		}
		/* :P: the highest precise level that opens (a counting event
		 * opens with none). */
		if ((fd == -EOPNOTSUPP || fd == -EINVAL) && ev->precise_max && attr->precise_ip) {
			attr->precise_ip--;
			continue;
		}
		/* perf's fallback: with perf_event_paranoid 2 an unprivileged
		 * user may count user space only; do that unless the user
		 * asked for privilege levels, and say so in the output. */
		if ((fd == -EACCES || fd == -EPERM) && !attr->exclude_kernel && !ev->user_mods &&
		    hwt_pmc_paranoid_read(cfg->paranoid_path, &paranoid) == 0 && paranoid == 2) {
			attr->exclude_kernel = 1;
			attr->exclude_hv = 1;
			c->flags[e] |= HWT_PMC_COUNT_USER_ONLY;
			hwt_log(&c->logger, HWT_LOG_DEBUG,
				"%s: perf_event_paranoid is %d, counting user space only", ev->name,
				paranoid);
			continue;
		}
		return fd;
	}
}

/* Marks event e not supported with its reason and closes what it opened. */
static void not_supported(struct hwt_pmc_counters *c, size_t e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void not_supported(struct hwt_pmc_counters *c, size_t e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why[e], sizeof(c->why[e]), fmt, ap);
	va_end(ap);
	hwt_log(&c->logger, HWT_LOG_DEBUG, "%s: not supported: %s",
		hwt_pmc_evlist_event(c->list, e)->name, c->why[e]);
	c->flags[e] |= HWT_PMC_COUNT_NOT_SUPPORTED;
	close_event(c, e);
}

int hwt_pmc_counters_open(struct hwt_pmc_counters **out, const struct hwt_pmc_evlist *list,
			  const int *tids, size_t ntids, const int *cpus, size_t ncpus,
			  const struct hwt_pmc_counters_config *cfg)
{
	struct hwt_pmc_counters_config dcfg, ccfg;
	struct hwt_pmc_counters *c;
	size_t total, alive;
	bool *solo = NULL;
	int err;

	*out = NULL;
	if (!cfg) {
		hwt_pmc_counters_config_init(&dcfg);
		cfg = &dcfg;
	}
	hwt_pmc_counters_config_init(&ccfg);
	if (hwt_opts_copy(&ccfg, sizeof(ccfg), cfg) < 0 || !list)
		return -HWT_EINVAL;
	cfg = &ccfg;
	if (cfg->errmsg && cfg->errmsg_len)
		cfg->errmsg[0] = '\0';
	if ((!tids || !ntids) && (!cpus || !ncpus)) {
		if (cfg->errmsg && cfg->errmsg_len)
			snprintf(cfg->errmsg, cfg->errmsg_len,
				 "nothing to count: no thread and no CPU");
		return -HWT_EINVAL;
	}
	if (!hwt_pmc_evlist_count(list)) {
		if (cfg->errmsg && cfg->errmsg_len)
			snprintf(cfg->errmsg, cfg->errmsg_len, "no events to count");
		return -HWT_EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->list = list;
	c->logger = cfg->logger;
	c->psys = cfg->psys;
	c->nev = hwt_pmc_evlist_count(list);
	c->ncpu = cpus && ncpus ? ncpus : 1;
	c->nthr = tids && ntids ? ntids : 1;
	err = -HWT_ETOOBIG;
	if (hwt_mul_size(c->nev, c->ncpu, &total) < 0 || hwt_mul_size(total, c->nthr, &total) < 0)
		goto error;
	err = -ENOMEM;
	c->cpus = malloc(c->ncpu * sizeof(int));
	c->tids = malloc(c->nthr * sizeof(int));
	c->fds = malloc(total * sizeof(int));
	c->flags = calloc(c->nev, sizeof(uint32_t));
	c->gone = calloc(c->nthr, sizeof(bool));
	c->why = calloc(c->nev, sizeof(*c->why));
	solo = calloc(c->nev, sizeof(bool));
	if (!c->cpus || !c->tids || !c->fds || !c->flags || !c->gone || !c->why || !solo)
		goto error;
	for (size_t i = 0; i < c->ncpu; i++)
		c->cpus[i] = cpus && ncpus ? cpus[i] : -1;
	for (size_t i = 0; i < c->nthr; i++)
		c->tids[i] = tids && ntids ? tids[i] : -1;
	for (size_t i = 0; i < total; i++)
		c->fds[i] = -1;

	alive = c->nthr;
	for (size_t ti = 0; ti < c->nthr; ti++) {
		for (size_t ci = 0; ci < c->ncpu && !c->gone[ti]; ci++) {
			for (size_t e = 0; e < c->nev; e++) {
				const struct hwt_pmc_event *ev = hwt_pmc_evlist_event(list, e);
				struct perf_event_attr tried;
				char why[sizeof(c->why[0])];
				int fd;

				if (c->flags[e] & HWT_PMC_COUNT_NOT_SUPPORTED)
					continue;
				/* A PMU that counts on some CPUs only (hybrid core
				 * PMUs, system PMUs on their cpumask CPU) is opened
				 * there only: elsewhere the kernel would refuse it
				 * or, for system PMUs, count the package again. */
				if (c->cpus[ci] >= 0 && !hwt_pmc_event_on_cpu(ev, c->cpus[ci]))
					continue;
				if (ev->system_pmu && c->cpus[ci] < 0 && cfg->skip_unsupported) {
					explain_into(cfg, c, why, sizeof(why), -EINVAL, e, NULL,
						     c->tids[ti], -1);
					not_supported(c, e, "%s", why);
					continue;
				}
				if (ev->leader != (int)e && !solo[e] &&
				    (c->flags[ev->leader] & HWT_PMC_COUNT_NOT_SUPPORTED) &&
				    cfg->skip_unsupported) {
					not_supported(
					    c, e, "its group leader '%s' is not supported",
					    hwt_pmc_evlist_event(list, (size_t)ev->leader)->name);
					continue;
				}
				fd = open_one(c, cfg, e, ci, ti, solo[e], &tried);
				if (fd >= 0) {
					*fdp(c, e, ci, ti) = fd;
					c->nr_fds++;
					continue;
				}
				if (fd == -ESRCH && c->tids[ti] > 0) {
					/* The thread exited while we opened: skip it. */
					hwt_log(&c->logger, HWT_LOG_DEBUG,
						"thread %d exited before counting started",
						c->tids[ti]);
					close_thread(c, ci, ti);
					for (size_t cj = 0; cj < ci; cj++)
						close_thread(c, cj, ti);
					c->gone[ti] = true;
					alive--;
					break;
				}
				/* :W, a weak group that does not fit: its members
				 * count on their own (perf's evlist__reset_weak_group);
				 * only where nothing of the group is open yet. */
				if (fd == -EINVAL && ev->leader != (int)e && !solo[e] && ti == 0 &&
				    ci == 0 &&
				    hwt_pmc_evlist_event(list, (size_t)ev->leader)->weak_group) {
					size_t l = (size_t)ev->leader;

					for (size_t m = l; m < c->nev; m++) {
						if (hwt_pmc_evlist_event(list, m)->leader != (int)l)
							continue;
						solo[m] = true;
						close_event(c, m);
					}
					e = l - 1; /* again from the leader (e++ follows) */
					if (l == 0)
						e = (size_t)-1;
					continue;
				}
				if (unsupported_errno(-fd) && cfg->skip_unsupported) {
					explain_into(cfg, c, why, sizeof(why), fd, e, &tried,
						     c->tids[ti], c->cpus[ci]);
					not_supported(c, e, "%s", why);
					continue;
				}
				err = explain_into(cfg, c, cfg->errmsg, cfg->errmsg_len, fd, e,
						   &tried, c->tids[ti], c->cpus[ci]);
				if (unsupported_errno(-fd))
					err = -HWT_ENOTSUP;
				goto error;
			}
		}
	}
	if (!alive) {
		err = explain_into(cfg, c, cfg->errmsg, cfg->errmsg_len, -ESRCH, 0, NULL,
				   c->tids[0], -1);
		goto error;
	}
	free(solo);
	*out = c;
	return 0;
error:
	free(solo);
	hwt_pmc_counters_close(c);
	return err;
}

static int ioctl_all(struct hwt_pmc_counters *c, unsigned long req)
{
	for (size_t e = 0; e < c->nev; e++) {
		const struct hwt_pmc_event *ev = hwt_pmc_evlist_event(c->list, e);

		if (ev->leader != (int)e)
			continue;
		for (size_t ci = 0; ci < c->ncpu; ci++) {
			for (size_t ti = 0; ti < c->nthr; ti++) {
				int fd = *fdp(c, e, ci, ti);

				int err =
				    fd >= 0 ? hwt_psys_ioctl(c->psys, fd, req, PERF_IOC_FLAG_GROUP)
					    : 0;

				if (err < 0)
					return err;
			}
		}
	}
	return 0;
}

int hwt_pmc_counters_enable(struct hwt_pmc_counters *ctr)
{
	return ctr ? ioctl_all(ctr, PERF_EVENT_IOC_ENABLE) : -HWT_EINVAL;
}

int hwt_pmc_counters_disable(struct hwt_pmc_counters *ctr)
{
	return ctr ? ioctl_all(ctr, PERF_EVENT_IOC_DISABLE) : -HWT_EINVAL;
}

void hwt_pmc_count_scale(struct hwt_pmc_count *c)
{
	c->flags &= ~(HWT_PMC_COUNT_SCALED | HWT_PMC_COUNT_NOT_COUNTED);
	if (c->flags & HWT_PMC_COUNT_NOT_SUPPORTED) {
		c->scaled = 0;
		return;
	}
	if (!c->running) {
		/* Never on the PMU: there is nothing to extrapolate from. */
		c->scaled = 0;
		c->flags |= HWT_PMC_COUNT_NOT_COUNTED;
		return;
	}
	if (c->running < c->enabled) {
		c->scaled = (double)c->value * ((double)c->enabled / (double)c->running);
		c->flags |= HWT_PMC_COUNT_SCALED;
		return;
	}
	c->scaled = (double)c->value;
}

void hwt_pmc_count_delta(const struct hwt_pmc_count *now, const struct hwt_pmc_count *prev,
			 struct hwt_pmc_count *out)
{
	/* Counters only grow; a smaller reading would be a kernel bug, clamp. */
	out->value = now->value >= prev->value ? now->value - prev->value : 0;
	out->enabled = now->enabled >= prev->enabled ? now->enabled - prev->enabled : 0;
	out->running = now->running >= prev->running ? now->running - prev->running : 0;
	out->flags = now->flags & ~(HWT_PMC_COUNT_SCALED | HWT_PMC_COUNT_NOT_COUNTED);
	hwt_pmc_count_scale(out);
}

int hwt_pmc_counters_read(struct hwt_pmc_counters *ctr, struct hwt_pmc_count *counts, size_t n)
{
	cpu_set_t old, one;
	bool pin;

	if (!ctr || n < ctr->nev)
		return -HWT_EINVAL;
	for (size_t e = 0; e < ctr->nev; e++) {
		memset(&counts[e], 0, sizeof(counts[e]));
		counts[e].flags = ctr->flags[e];
	}
	/* Reading a CPU's counter from another CPU costs an IPI per read;
	 * perf reads each CPU's counters from that CPU (evlist__for_each_cpu
	 * with affinity): so do we, and put our affinity back after. */
	pin = ctr->ncpu > 1 && ctr->cpus[0] >= 0 && sched_getaffinity(0, sizeof(old), &old) == 0;
	for (size_t ci = 0; ci < ctr->ncpu; ci++) {
		if (pin && ctr->cpus[ci] < CPU_SETSIZE) {
			CPU_ZERO(&one);
			CPU_SET(ctr->cpus[ci], &one);
			sched_setaffinity(0, sizeof(one), &one);
		}
		for (size_t e = 0; e < ctr->nev; e++) {
			struct hwt_pmc_count *c = &counts[e];

			for (size_t ti = 0; ti < ctr->nthr; ti++) {
				int fd = *fdp(ctr, e, ci, ti);
				uint64_t v[3];
				ssize_t got;

				if (fd < 0)
					continue;
				got = hwt_psys_read(ctr->psys, fd, v, sizeof(v));
				if (got < 0) {
					if (pin)
						sched_setaffinity(0, sizeof(old), &old);
					return (int)got;
				}
				/* 0 bytes: a pinned event in error state; counts nothing. */
				if (got != (ssize_t)sizeof(v))
					continue;
				c->value += v[0];
				c->enabled += v[1];
				c->running += v[2];
			}
		}
	}
	if (pin)
		sched_setaffinity(0, sizeof(old), &old);
	for (size_t e = 0; e < ctr->nev; e++)
		hwt_pmc_count_scale(&counts[e]);
	return 0;
}
