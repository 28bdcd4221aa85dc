/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * perfsys/sim.c - a simulated PMU (HWT_PMU_SIM=skl|adl|amd) that keeps the
 * kernel's rules for hardware events, so that the code that opens, reads
 * and explains them runs here as it does on real machines:
 *
 * - x86_pmu_event_init / x86_pmu_hw_config: generic events (with the PMU
 *   type in config bits 32+ on hybrid machines), raw and cache events;
 *   precise_ip above the PMU's limit is EOPNOTSUPP, precise on a counting
 *   event EINVAL; a group that cannot fit an empty PMU is EINVAL
 *   (validate_group); only a leader may be pinned; one PMU per group.
 * - hybrid PMUs count on their own CPUs: ENOENT on the others, and a task's
 *   event runs only while the task is on them.
 * - uncore_pmu_event_init / RAPL: no per-task events, no sampling, no
 *   exclude bits (EINVAL); the event moves to the PMU's cpumask CPU.
 * - AMD: precise cycles go to IBS, which cannot filter privilege levels.
 * - perf_event_open's permission checks at the simulated user's
 *   perf_event_paranoid level, and ptrace's for other users' processes.
 * - scheduling: per (task or CPU, PMU), pinned groups first, then the
 *   flexible ones rotated; the NMI watchdog holds a counter; a group that
 *   never fits never runs (time_running 0).
 *
 * Counts are deterministic functions of time: a real software event
 * (task-clock for a task, cpu-clock for a CPU) behind each simulated one
 * gives time_enabled and the time the task spent on the PMU's CPUs; the
 * count is that time times the model's rate for the event (cycles: its
 * GHz; instructions: cycles times its IPC; ...) times the share of the
 * rotation its group got. Samples are the backing event's, at the period
 * converted to time, so their IPs and threads are real.
 */
#include "perfsys/sim_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef HWT_PMU_SIM_SRCDIR
#define HWT_PMU_SIM_SRCDIR ""
#endif
#ifndef HWT_PMU_SIM_DATADIR
#define HWT_PMU_SIM_DATADIR ""
#endif

#define FMT_TIMES (PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING)

static struct sim_event *find_ev(struct sim *s, int fd)
{
	if (fd < 0)
		return NULL;
	for (size_t i = 0; i < s->nev; i++)
		if (s->ev[i].fd == fd)
			return &s->ev[i];
	return NULL;
}

static struct sim_pmu *pmu_by_type(struct sim *s, uint32_t type)
{
	for (int i = 0; i < s->npmus; i++)
		if (s->pmus[i].type == type)
			return &s->pmus[i];
	return NULL;
}

static bool covers(const struct sim_pmu *p, int cpu)
{
	return cpu >= p->first && cpu <= p->last;
}

static bool hybrid(const struct sim *s, const struct sim_pmu *p)
{
	return p->m->kind == SIM_CORE &&
	       (p->first != s->cpus[0] || p->last != s->cpus[s->ncpus - 1]);
}

/* ------------------------------------------------------------------------ */
/* Events and rates                                                          */

/* Counts per ns, fixed counter and whether it needs one, for an event of a
 * core PMU. 0, -ENOENT (no such event on this CPU) or -EINVAL. */
static int core_event(const struct sim *s, const struct sim_pmu *p, uint32_t type, uint64_t config,
		      double *rate, int *fixed, bool *fixed_only)
{
	const struct sim_pmu_model *m = p->m;
	double ins = m->ghz * m->ipc;
	bool intel = s->model->intel;

	*fixed = -1;
	*fixed_only = false;
	if (type == PERF_TYPE_HARDWARE) {
		switch (config) {
		case PERF_COUNT_HW_CPU_CYCLES:
			*rate = m->ghz;
			*fixed = intel ? 1 : -1;
			return 0;
		case PERF_COUNT_HW_INSTRUCTIONS:
			*rate = ins;
			*fixed = intel ? 0 : -1;
			return 0;
		case PERF_COUNT_HW_CACHE_REFERENCES:
			*rate = ins * 0.02;
			return 0;
		case PERF_COUNT_HW_CACHE_MISSES:
			*rate = ins * 0.002;
			return 0;
		case PERF_COUNT_HW_BRANCH_INSTRUCTIONS:
			*rate = ins * 0.2;
			return 0;
		case PERF_COUNT_HW_BRANCH_MISSES:
			*rate = ins * 0.002;
			return 0;
		case PERF_COUNT_HW_BUS_CYCLES:
			*rate = 0.1;
			return intel ? 0 : -ENOENT;
		case PERF_COUNT_HW_STALLED_CYCLES_FRONTEND:
		case PERF_COUNT_HW_STALLED_CYCLES_BACKEND:
			/* Intel's event map has none (0: ENOENT). */
			*rate = m->ghz * 0.25;
			return intel ? -ENOENT : 0;
		case PERF_COUNT_HW_REF_CPU_CYCLES:
			*rate = 2.0;
			*fixed = 2;
			*fixed_only = true;
			return intel ? 0 : -ENOENT;
		default:
			return -EINVAL; /* >= PERF_COUNT_HW_MAX */
		}
	}
	if (type == PERF_TYPE_HW_CACHE) {
		unsigned id = config & 0xff, op = (config >> 8) & 0xff, res = (config >> 16) & 0xff;

		if (id >= PERF_COUNT_HW_CACHE_MAX || op >= PERF_COUNT_HW_CACHE_OP_MAX ||
		    res >= PERF_COUNT_HW_CACHE_RESULT_MAX)
			return -EINVAL;
		/* No writes to the instruction side; no node events on AMD. */
		if ((id == PERF_COUNT_HW_CACHE_L1I || id == PERF_COUNT_HW_CACHE_ITLB ||
		     id == PERF_COUNT_HW_CACHE_BPU) &&
		    op != PERF_COUNT_HW_CACHE_OP_READ)
			return -ENOENT;
		if (!intel && id == PERF_COUNT_HW_CACHE_NODE)
			return -ENOENT;
		*rate = ins * (res ? 0.001 : 0.3);
		return 0;
	}
	/* Raw: event | umask << 8 (the format files). */
	switch (config & 0xffff) {
	case 0x003c:
		*rate = m->ghz;
		*fixed = intel ? 1 : -1;
		return 0;
	case 0x00c0:
		*rate = ins;
		*fixed = intel ? 0 : -1;
		return 0;
	case 0x0300:
		if (!intel)
			return -EINVAL;
		*rate = 2.0;
		*fixed = 2;
		*fixed_only = true;
		return 0;
	case 0x00c4:
		*rate = ins * 0.2;
		return 0;
	case 0x00c5:
		*rate = ins * 0.002;
		return 0;
	case 0x0000:
		return -EINVAL;
	default:
		*rate = m->ghz * 0.01;
		return 0;
	}
}

static int system_event(const struct sim_pmu *p, uint64_t config, double *rate)
{
	for (size_t i = 0; i < sizeof(p->m->rates) / sizeof(p->m->rates[0]); i++) {
		if (p->m->rates[i].per_ns > 0 && p->m->rates[i].config == config) {
			*rate = p->m->rates[i].per_ns;
			return 0;
		}
	}
	return -EINVAL; /* the uncore/RAPL drivers refuse unknown configs */
}

/* ------------------------------------------------------------------------ */
/* Scheduling                                                                */

struct slots {
	int gp;
	bool fixed[8];
};

static void slots_init(const struct sim *s, const struct sim_pmu *p, struct slots *sl)
{
	memset(sl, 0, sizeof(*sl));
	if (!s->watchdog || p->m->kind != SIM_CORE)
		return;
	/* The NMI watchdog's pinned cycles event: the fixed cycles counter
	 * on Intel, a general one on AMD. */
	if (p->m->nfixed > 1)
		sl->fixed[1] = true;
	else
		sl->gp = 1;
}

static bool take(const struct sim_pmu *p, struct slots *sl, const struct sim_event *e)
{
	if (e->fixed >= 0 && e->fixed < p->m->nfixed && !sl->fixed[e->fixed]) {
		sl->fixed[e->fixed] = true;
		return true;
	}
	if (e->fixed_only)
		return false;
	if (sl->gp < p->m->ngp) {
		sl->gp++;
		return true;
	}
	return false;
}

static bool same_ctx(const struct sim_event *a, const struct sim_event *b)
{
	return a->pmu == b->pmu && a->pid == b->pid && a->cpu == b->cpu;
}

/* Schedules the members of group `leader` in ctx (like e) into sl; false
 * (sl unchanged) when they do not all fit. */
static bool fit_group(const struct sim *s, const struct sim_event *e, int leader, struct slots *sl)
{
	struct slots t = *sl;

	for (size_t i = 0; i < s->nev; i++) {
		const struct sim_event *m = &s->ev[i];

		if (m->leader == leader && same_ctx(m, e) && !take(e->pmu, &t, m))
			return false;
	}
	*sl = t;
	return true;
}

/* The share of the time event e's group is on the PMU, or -1 when it is
 * a pinned group that cannot be (the kernel's error state). */
static double share(const struct sim *s, const struct sim_event *e)
{
	int leaders[256];
	size_t n = 0, nflex = 0, mine = SIZE_MAX;
	unsigned count[256];
	struct slots base;

	slots_init(s, e->pmu, &base);
	/* Group leaders in opening order: pinned first. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < s->nev && n < 256; i++) {
			const struct sim_event *m = &s->ev[i];
			bool first = true;

			if (!same_ctx(m, e) || m->pinned != (pass == 0))
				continue;
			for (size_t k = 0; k < n; k++)
				first &= leaders[k] != m->leader;
			if (first)
				leaders[n++] = m->leader;
		}
	}
	for (size_t k = 0; k < n; k++) {
		const struct sim_event *l = NULL;

		for (size_t i = 0; i < s->nev && !l; i++)
			if (s->ev[i].leader == leaders[k] && same_ctx(&s->ev[i], e))
				l = &s->ev[i];
		if (l && l->pinned) {
			if (!fit_group(s, e, leaders[k], &base) && leaders[k] == e->leader)
				return -1;
			if (leaders[k] == e->leader)
				return 1;
		} else {
			if (leaders[k] == e->leader)
				mine = nflex;
			leaders[nflex++] = leaders[k];
		}
	}
	if (mine == SIZE_MAX || !nflex)
		return 1;
	memset(count, 0, sizeof(count));
	for (size_t r = 0; r < nflex; r++) {
		struct slots sl = base;

		for (size_t k = 0; k < nflex; k++) {
			size_t g = (r + k) % nflex;

			if (!fit_group(s, e, leaders[g], &sl))
				break; /* the kernel stops at the first that fails */
			count[g]++;
		}
	}
	return (double)count[mine] / (double)nflex;
}

/* validate_group(): the group with e added fits an empty PMU. */
static bool group_fits_empty(const struct sim *s, const struct sim_event *e)
{
	struct slots sl;

	memset(&sl, 0, sizeof(sl));
	return fit_group(s, e, e->leader, &sl) && take(e->pmu, &sl, e);
}

/* ------------------------------------------------------------------------ */
/* Permissions                                                               */

static bool descendant(pid_t pid)
{
	pid_t self = getpid();

	for (int depth = 0; pid > 1 && depth < 64; depth++) {
		char path[64], buf[512], *p;
		FILE *f;

		if (pid == self)
			return true;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if (!(f = fopen(path, "r")))
			return false;
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		if (!p || !(p = strrchr(buf, ')')))
			return false;
		pid = (pid_t)strtol(p + 4, NULL, 10); /* ") S PPID" */
	}
	return pid == self;
}

static int permission(const struct sim *s, const struct perf_event_attr *a, int pid, int cpu)
{
	if (!s->unprivileged)
		return 0;
	/* Debian's level 3: nothing without CAP_PERFMON. */
	if (s->paranoid > 2)
		return -EACCES;
	if (!a->exclude_kernel && s->paranoid > 1)
		return -EACCES;
	if (pid == -1 && cpu >= 0 && s->paranoid > 0)
		return -EACCES;
	if (pid > 0) {
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%d", pid);
		if (stat(path, &st) < 0)
			return -ESRCH;
		/* ptrace_may_access: the simulated user owns only what this
		 * process started. */
		if (!descendant(pid))
			return -EACCES;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The backend                                                               */

static int add_event(struct sim *s, const struct sim_event *e)
{
	if (s->nev == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct sim_event *n = realloc(s->ev, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->ev = n;
		s->cap = cap;
	}
	s->ev[s->nev++] = *e;
	return 0;
}

static void close_backs(struct hwt_psys *ps, struct sim_event *e)
{
	for (int i = 0; i < e->nback; i++)
		hwt_psys_close(hwt_psys_lower(ps), e->back[i]);
	e->nback = 0;
}

/* Opens the software events behind e: one per CPU of a hybrid PMU for a
 * task's counting event (so only the time on those CPUs runs), else one. */
static int open_backs(struct hwt_psys *ps, struct sim *s, struct sim_event *e,
		      const struct perf_event_attr *attr, int group_fd, unsigned long flags)
{
	struct sim_event *l = find_ev(s, group_fd);
	struct perf_event_attr b = *attr;
	int cpus[SIM_MAX_BACK], n = 0;

	b.type = PERF_TYPE_SOFTWARE;
	b.config = e->pid == -1 ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_TASK_CLOCK;
	b.precise_ip = 0;
	b.exclude_guest = b.exclude_host = b.exclude_idle = 0;
	b.config1 = b.config2 = 0;
	b.branch_sample_type = 0;
	if (!e->sampling) {
		b.read_format = FMT_TIMES;
	} else if (!b.freq) {
		double ns = (double)attr->sample_period / (e->rate * (e->priv > 0 ? e->priv : 1));

		b.sample_period = ns < 10000 ? 10000 : (uint64_t)ns;
	}
	if (e->pid != -1 && e->cpu == -1 && !e->sampling && hybrid(s, e->pmu)) {
		for (int i = 0; i < s->ncpus && n < SIM_MAX_BACK; i++)
			if (covers(e->pmu, s->cpus[i]))
				cpus[n++] = s->cpus[i];
	} else {
		cpus[n++] = e->cpu;
	}
	for (int i = 0; i < n; i++) {
		int g = group_fd, fd;

		if (l) {
			g = -1;
			for (int k = 0; k < l->nback; k++)
				if (l->back_cpu[k] == cpus[i] || l->nback == 1)
					g = l->back[k];
			if (g < 0) {
				close_backs(ps, e);
				return -EINVAL;
			}
		}
		fd = hwt_psys_event_open(hwt_psys_lower(ps), &b, e->pid, cpus[i], g, flags);
		if (fd < 0) {
			close_backs(ps, e);
			return fd;
		}
		e->back[e->nback] = fd;
		e->back_cpu[e->nback++] = cpus[i];
	}
	e->fd = e->back[0];
	return 0;
}

static int sim_event_open(struct hwt_psys *ps, struct perf_event_attr *attr, int pid, int cpu,
			  int group_fd, unsigned long flags)
{
	struct sim *s = hwt_psys_ctx(ps);
	struct sim_event e, *leader = find_ev(s, group_fd);
	uint32_t type = attr->type;
	uint64_t config = attr->config;
	struct sim_pmu *p = NULL;
	int err;

	if ((err = permission(s, attr, pid, cpu)) < 0)
		return err;
	/* Only a group leader can be exclusive or pinned. */
	if (group_fd >= 0 && (attr->pinned || attr->exclusive))
		return -EINVAL;
	if (type == PERF_TYPE_HARDWARE || type == PERF_TYPE_HW_CACHE) {
		uint32_t ext = (uint32_t)(config >> 32);

		/* The PMU type in bits 32+ (hybrid), else the one of type 4. */
		p = pmu_by_type(s, ext ? ext : PERF_TYPE_RAW);
		if (!p || p->m->kind != SIM_CORE)
			return -ENOENT;
		config &= 0xffffffffull;
	} else {
		p = pmu_by_type(s, type);
		if (!p) /* software, tracepoints, probes: the kernel's */
			return hwt_psys_event_open(hwt_psys_lower(ps), attr, pid, cpu, group_fd,
						   flags);
	}
	memset(&e, 0, sizeof(e));
	e.pmu = p;
	e.pid = pid;
	e.cpu = cpu;
	e.pinned = attr->pinned;
	e.sampling = attr->sample_period != 0; /* sample_freq shares it */
	e.read_format = attr->read_format;
	e.priv = 1;
	e.fixed = -1;
	if (p->m->kind == SIM_SYSTEM) {
		/* uncore_pmu_event_init, rapl_pmu_event_init */
		if (cpu < 0 || e.sampling)
			return -EINVAL;
		if (attr->exclude_user || attr->exclude_kernel || attr->exclude_hv ||
		    attr->exclude_idle)
			return -EINVAL;
		if ((err = system_event(p, config, &e.rate)) < 0)
			return err;
		e.cpu = p->first; /* the kernel moves it to the cpumask CPU */
	} else {
		if (hybrid(s, p) && cpu >= 0 && !covers(p, cpu))
			return -ENOENT;
		if (!s->model->intel && attr->precise_ip && type == PERF_TYPE_HARDWARE &&
		    config == PERF_COUNT_HW_CPU_CYCLES) {
			/* AMD: precise cycles are forwarded to IBS op. */
			for (int i = 0; i < s->npmus; i++)
				if (!strcmp(s->pmus[i].m->name, "ibs_op"))
					p = e.pmu = &s->pmus[i];
		}
		if (p->m->kind == SIM_IBS)
			config = 0x3c; /* IBS ops count in cycles */
		if (p->m->kind == SIM_IBS) {
			/* perf_ibs_init: privilege filtering is not possible. */
			if (attr->exclude_user || attr->exclude_kernel || attr->exclude_hv)
				return -EINVAL;
			if (attr->precise_ip > p->m->max_precise)
				return -EOPNOTSUPP;
		} else if (attr->precise_ip) {
			/* x86_pmu_hw_config */
			if (attr->precise_ip > p->m->max_precise)
				return -EOPNOTSUPP;
			if (!e.sampling)
				return -EINVAL;
		}
		if ((attr->sample_type & PERF_SAMPLE_BRANCH_STACK) && !p->m->lbr)
			return -EOPNOTSUPP;
		if ((err = core_event(s, p,
				      type == PERF_TYPE_RAW || p->m->kind == SIM_IBS ? PERF_TYPE_RAW
										     : type,
				      config, &e.rate, &e.fixed, &e.fixed_only)) < 0)
			return err;
		/* User space runs 80% of the cycles; a guest adds a quarter to
		 * what a CPU counts unless exclude_guest. */
		e.priv = (attr->exclude_user ? 0 : 0.8) + (attr->exclude_kernel ? 0 : 0.2);
		if (pid == -1 && !attr->exclude_guest)
			e.priv *= 1.25;
	}
	if (leader) {
		if (leader->pmu != p && leader->pmu->m->kind != SIM_IBS)
			return -EINVAL; /* one hardware PMU per group */
		e.leader = leader->fd;
		e.pinned = leader->pinned;
	}
	if (!leader && group_fd < 0)
		e.leader = -1; /* set to its own fd once open */
	else if (!leader)
		e.leader = group_fd; /* a software leader */
	if (e.leader != -1 && !group_fits_empty(s, &e))
		return -EINVAL;
	if (e.leader == -1 && !group_fits_empty(s, &e))
		return -EINVAL;
	if ((attr->sample_type & PERF_SAMPLE_BRANCH_STACK) && e.sampling)
		return -EOPNOTSUPP; /* branch stacks are not simulated */
	if ((err = open_backs(ps, s, &e, attr, group_fd, flags)) < 0)
		return err;
	if (e.leader == -1)
		e.leader = e.fd;
	e.seq = ++s->seq;
	if ((err = add_event(s, &e)) < 0) {
		close_backs(ps, &e);
		return err;
	}
	return e.fd;
}

static ssize_t sim_read(struct hwt_psys *ps, int fd, void *buf, size_t len)
{
	struct sim *s = hwt_psys_ctx(ps);
	struct sim_event *e = find_ev(s, fd);
	uint64_t out[4], en = 0, run = 0;
	double sh, running;
	size_t n = 0;

	if (!e || (e->read_format & PERF_FORMAT_GROUP) || e->sampling)
		return hwt_psys_read(hwt_psys_lower(ps), fd, buf, len);
	for (int i = 0; i < e->nback; i++) {
		uint64_t v[3];
		ssize_t got = hwt_psys_read(hwt_psys_lower(ps), e->back[i], v, sizeof(v));

		if (got < 0)
			return got;
		if (got != (ssize_t)sizeof(v))
			continue;
		en = v[1] > en ? v[1] : en;
		run += v[2];
	}
	sh = share(s, e);
	if (sh < 0)
		return 0; /* a pinned group that cannot run: error state */
	running = (double)run * sh;
	out[n++] = (uint64_t)(running * e->rate * e->priv);
	if (e->read_format & PERF_FORMAT_TOTAL_TIME_ENABLED)
		out[n++] = en;
	if (e->read_format & PERF_FORMAT_TOTAL_TIME_RUNNING)
		out[n++] = (uint64_t)running;
	if (e->read_format & PERF_FORMAT_ID) {
		int err = hwt_psys_event_id(hwt_psys_lower(ps), e->back[0], &out[n]);

		if (err < 0)
			return err;
		n++;
	}
	if (len < n * sizeof(uint64_t))
		return -ENOSPC;
	memcpy(buf, out, n * sizeof(uint64_t));
	return (ssize_t)(n * sizeof(uint64_t));
}

static int sim_ioctl(struct hwt_psys *ps, int fd, unsigned long req, unsigned long arg)
{
	struct sim *s = hwt_psys_ctx(ps);
	struct sim_event *e = find_ev(s, fd);
	int err = 0;

	if (!e || e->nback < 2 || req == PERF_EVENT_IOC_ID || req == PERF_EVENT_IOC_SET_OUTPUT)
		return hwt_psys_ioctl(hwt_psys_lower(ps), fd, req, arg);
	for (int i = 0; i < e->nback; i++) {
		int r = hwt_psys_ioctl(hwt_psys_lower(ps), e->back[i], req, arg);

		if (r < 0 && !err)
			err = r;
	}
	return err;
}

static int sim_close(struct hwt_psys *ps, int fd)
{
	struct sim *s = hwt_psys_ctx(ps);
	struct sim_event *e = find_ev(s, fd);

	if (!e)
		return hwt_psys_close(hwt_psys_lower(ps), fd);
	close_backs(ps, e);
	*e = s->ev[--s->nev];
	return 0;
}

static void sim_fini(void *ctx)
{
	struct sim *s = ctx;

	if (!s)
		return;
	hwt_sim_tree_remove(s);
	free(s->ev);
	free(s);
}

static const struct hwt_psys_ops sim_ops = {
    .size = sizeof(struct hwt_psys_ops),
    .event_open = sim_event_open,
    .ioctl = sim_ioctl,
    .read = sim_read,
    .close = sim_close,
    .fini = sim_fini,
};

static const char *fixture_dir(void)
{
	const char *env = getenv("HWT_PMU_SIM_DIR");
	struct stat st;

	if (env && *env)
		return env;
	if (HWT_PMU_SIM_SRCDIR[0] && stat(HWT_PMU_SIM_SRCDIR, &st) == 0)
		return HWT_PMU_SIM_SRCDIR;
	return HWT_PMU_SIM_DATADIR;
}

static int sim_create(struct hwt_psys **inout, const char *value, char *errmsg, size_t len)
{
	const struct sim_model *m = NULL;
	const char *env;
	struct sim *s;
	FILE *f;
	int err;

	for (const struct sim_model *k = hwt_sim_models; k->name; k++)
		if (!strcmp(k->name, value))
			m = k;
	if (!m) {
		snprintf(errmsg, len,
			 "HWT_PMU_SIM=%s: no such simulated machine; use skl, adl or amd", value);
		return -HWT_EINVAL;
	}
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	s->model = m;
	s->ops = sim_ops;
	env = getenv("HWT_PMU_SIM_PARANOID");
	if (env && *env) {
		char *end;
		long v = strtol(env, &end, 10);

		if (*end || v < -1 || v > 4) {
			snprintf(
			    errmsg, len,
			    "HWT_PMU_SIM_PARANOID=%s: give a perf_event_paranoid level from -1 "
			    "to 4",
			    env);
			free(s);
			return -HWT_EINVAL;
		}
		s->paranoid = (int)v;
		s->unprivileged = true;
	} else if ((f = fopen("/proc/sys/kernel/perf_event_paranoid", "r"))) {
		if (fscanf(f, "%d", &s->paranoid) != 1)
			s->paranoid = 2;
		fclose(f);
	}
	env = getenv("HWT_PMU_SIM_WATCHDOG");
	s->watchdog = !(env && !strcmp(env, "0"));
	if ((err = hwt_sim_tree_build(s, fixture_dir(), errmsg, len)) < 0) {
		sim_fini(s);
		return err;
	}
	s->ops.name = m->name;
	s->ops.sysfs_root = s->sysfs;
	s->ops.procfs_root = s->procfs;
	/* The simulated PMU replaces the kernel's hardware: it goes at the
	 * bottom, under what was stacked before. */
	if (*inout) {
		snprintf(errmsg, len, "HWT_PMU_SIM must be the first backend");
		sim_fini(s);
		return -HWT_EINVAL;
	}
	return hwt_psys_alloc(inout, &s->ops, s, NULL);
}

const struct hwt_psys_backend hwt_psys_pmu_sim = {
    sizeof(struct hwt_psys_backend),
    "HWT_PMU_SIM",
    sim_create,
};
