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
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct hwt_pmc_counters {
	const struct hwt_pmc_evlist *list;
	struct hwt_logger logger;
	struct hwt_psys *psys;
	size_t nev, ncpu, nthr;
	int *cpus;	 /* ncpu entries (-1 for "any") */
	int *tids;	 /* nthr entries (-1 for "all") */
	int *fds;	 /* [ev][cpu][thr] */
	uint32_t *flags; /* per event: HWT_PMC_COUNT_NOT_SUPPORTED / USER_ONLY */
	bool *gone;	 /* per thread: exited before we opened */
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

void hwt_pmc_explain_open_error(char *buf, size_t len, int err, const struct hwt_pmc_event *ev,
				int pid, int cpu, int paranoid, size_t fds_needed)
{
	const char *name = ev ? ev->name : "?";
	char where[64];

	if (pid == -1 && cpu >= 0)
		snprintf(where, sizeof(where), "system-wide on CPU %d", cpu);
	else
		snprintf(where, sizeof(where), "for thread %d", pid);

	switch (-err) {
	case EACCES:
	case EPERM: {
		int need = ev ? hwt_pmc_paranoid_needed(&ev->attr, pid, cpu) : 2;
		const char *what = need <= 0   ? "system-wide counting"
				   : need == 1 ? "counting kernel space"
					       : "counting";

		if (paranoid != INT_MIN && paranoid > need) {
			snprintf(
			    buf, len,
			    "cannot count '%s' %s: %s needs perf_event_paranoid <= %d but it is "
			    "%d; run as root (or with CAP_PERFMON) or set it with 'sysctl -w "
			    "kernel.perf_event_paranoid=%d'%s",
			    name, where, what, need, paranoid, need,
			    need == 1 ? ", or count user space only with ':u'" : "");
		} else if (pid > 0) {
			snprintf(
			    buf, len,
			    "cannot count '%s' %s: permission denied (the process belongs to "
			    "another user, or ptrace is restricted); run as its owner or as root",
			    name, where);
		} else {
			snprintf(buf, len,
				 "cannot count '%s' %s: permission denied; run as root or with "
				 "CAP_PERFMON",
				 name, where);
		}
		return;
	}
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
	case ENXIO:
		snprintf(buf, len,
			 "event '%s' is not supported on this CPU/VM (the kernel has no counter "
			 "for it here, e.g. a VM without a virtual PMU); pick another event from "
			 "'hwtrace list' or run on a machine that exposes it",
			 name);
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
			 fds_needed, lim, fds_needed + 64);
		return;
	}
	case EBUSY:
		snprintf(buf, len,
			 "event '%s' is busy: another tool holds the PMU exclusively; stop "
			 "it and retry",
			 name);
		return;
	case EINVAL:
		snprintf(buf, len,
			 "the kernel rejected event '%s' (invalid argument): check its modifiers "
			 "and terms, or pick another event from 'hwtrace list'",
			 name);
		return;
	default:
		snprintf(buf, len, "cannot count '%s' %s: %s", name, where, hwt_strerror(err));
		return;
	}
}

static bool unsupported_errno(int e)
{
	return e == ENOENT || e == EOPNOTSUPP || e == ENODEV || e == ENXIO;
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

static int explain(const struct hwt_pmc_counters_config *cfg, struct hwt_pmc_counters *c, int err,
		   size_t ev, int pid, int cpu)
{
	int paranoid = INT_MIN;

	if (!cfg->errmsg || !cfg->errmsg_len)
		return err;
	if (hwt_pmc_paranoid_read(cfg->paranoid_path, &paranoid) < 0)
		paranoid = INT_MIN;
	hwt_pmc_explain_open_error(cfg->errmsg, cfg->errmsg_len, err,
				   hwt_pmc_evlist_event(c->list, ev), pid, cpu, paranoid,
				   c->nev * c->ncpu * c->nthr);
	return err;
}

/* Opens event e on (cpu index ci, thread index ti). Returns the fd or
 * -errno, after the user-space-only fallback. */
static int open_one(struct hwt_pmc_counters *c, const struct hwt_pmc_counters_config *cfg, size_t e,
		    size_t ci, size_t ti)
{
	const struct hwt_pmc_event *ev = hwt_pmc_evlist_event(c->list, e);
	struct perf_event_attr attr = ev->attr;
	bool leader = ev->leader == (int)e;
	int group_fd = leader ? -1 : *fdp(c, (size_t)ev->leader, ci, ti);
	bool raised = false;

	if (!leader && group_fd < 0)
		return -ENOENT; /* the leader is not supported */
	attr.size = sizeof(attr);
	attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	attr.inherit = cfg->inherit && c->tids[ti] != -1 ? 1 : 0;
	/* Only leaders start disabled: members follow their leader. */
	attr.disabled = leader && (cfg->start_disabled || cfg->enable_on_exec);
	attr.enable_on_exec = leader && cfg->enable_on_exec;
	if (c->flags[e] & HWT_PMC_COUNT_USER_ONLY) {
		attr.exclude_kernel = 1;
		attr.exclude_hv = 1;
	}
	for (;;) {
		int fd = hwt_psys_event_open(c->psys, &attr, c->tids[ti], c->cpus[ci], group_fd,
					     PERF_FLAG_FD_CLOEXEC);
		int paranoid;

		if (fd >= 0)
			return fd;
		if ((fd == -EMFILE) && !raised) {
			raised = true;
			if (raise_nofile())
				continue;
		}
		/* perf's fallback: with perf_event_paranoid 2 an unprivileged
		 * user may count user space only; do that unless the user
		 * asked for privilege levels, and say so in the output. */
		if ((fd == -EACCES || fd == -EPERM) && !attr.exclude_kernel && !ev->user_mods &&
		    hwt_pmc_paranoid_read(cfg->paranoid_path, &paranoid) == 0 && paranoid >= 2) {
			attr.exclude_kernel = 1;
			attr.exclude_hv = 1;
			c->flags[e] |= HWT_PMC_COUNT_USER_ONLY;
			hwt_log(&c->logger, HWT_LOG_DEBUG,
				"%s: perf_event_paranoid is %d, counting user space only", ev->name,
				paranoid);
			continue;
		}
		return fd;
	}
}

int hwt_pmc_counters_open(struct hwt_pmc_counters **out, const struct hwt_pmc_evlist *list,
			  const int *tids, size_t ntids, const int *cpus, size_t ncpus,
			  const struct hwt_pmc_counters_config *cfg)
{
	struct hwt_pmc_counters_config dcfg;
	struct hwt_pmc_counters *c;
	size_t total, alive;
	int err;

	*out = NULL;
	if (!cfg) {
		hwt_pmc_counters_config_init(&dcfg);
		cfg = &dcfg;
	}
	if (cfg->size < sizeof(*cfg) || !list)
		return -HWT_EINVAL;
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
	if (!c->cpus || !c->tids || !c->fds || !c->flags || !c->gone)
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
				int fd;

				if (c->flags[e] & HWT_PMC_COUNT_NOT_SUPPORTED)
					continue;
				fd = open_one(c, cfg, e, ci, ti);
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
				if (unsupported_errno(-fd) && cfg->skip_unsupported) {
					const struct hwt_pmc_event *ev =
					    hwt_pmc_evlist_event(list, e);

					hwt_log(&c->logger, HWT_LOG_DEBUG, "%s: not supported (%s)",
						ev->name, hwt_strerror(fd));
					c->flags[e] |= HWT_PMC_COUNT_NOT_SUPPORTED;
					close_event(c, e);
					continue;
				}
				err = explain(cfg, c, fd, e, c->tids[ti], c->cpus[ci]);
				if (unsupported_errno(-fd))
					err = -HWT_ENOTSUP;
				goto error;
			}
		}
	}
	if (!alive) {
		err = explain(cfg, c, -ESRCH, 0, c->tids[0], -1);
		goto error;
	}
	*out = c;
	return 0;
error:
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
	if (!ctr || n < ctr->nev)
		return -HWT_EINVAL;
	for (size_t e = 0; e < ctr->nev; e++) {
		struct hwt_pmc_count *c = &counts[e];

		memset(c, 0, sizeof(*c));
		c->flags = ctr->flags[e];
		for (size_t ci = 0; ci < ctr->ncpu; ci++) {
			for (size_t ti = 0; ti < ctr->nthr; ti++) {
				int fd = *fdp(ctr, e, ci, ti);
				uint64_t v[3];
				ssize_t got;

				if (fd < 0)
					continue;
				got = hwt_psys_read(ctr->psys, fd, v, sizeof(v));
				if (got < 0)
					return (int)got;
				/* 0 bytes: a pinned event in error state; counts nothing. */
				if (got != (ssize_t)sizeof(v))
					continue;
				c->value += v[0];
				c->enabled += v[1];
				c->running += v[2];
			}
		}
		hwt_pmc_count_scale(c);
	}
	return 0;
}
