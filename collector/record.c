/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/record.c - the recorder: events opened on a target, one ring
 * buffer per CPU (or per thread), read with epoll into format/'s writer,
 * plus Intel PT's AUX areas, sideband bookkeeping and the metadata that
 * makes the file readable on another machine.
 *
 * Buffers. Per-CPU mode (the default for a command or -p, and -a) opens
 * every event on every (thread, CPU) pair with inherit, so new threads and
 * processes are followed, and points all descriptors of a CPU at one
 * buffer (PERF_EVENT_IOC_SET_OUTPUT). Per-thread mode opens each thread on
 * any CPU without inheritance (the kernel refuses to mmap inherited
 * per-thread events) and gives each thread its buffer. Intel PT uses
 * per-thread buffers for a command or -p and per-CPU buffers for -a.
 *
 * The read loop. Each round takes a snapshot of every buffer's data_head,
 * then makes two passes over the new records: first the sideband of all
 * buffers (mappings, names, forks) goes into the address-space map, then the
 * samples of all buffers are looked up in it (to know which objects they
 * hit, for the build-ids stored at the end) and every run of records goes to
 * the writer. Because all heads are read before any sample is looked up, a
 * sample always finds the mapping it ran in even when the two sit in
 * different CPUs' buffers. Nothing in a round allocates except the map's
 * growth on new mappings.
 *
 * Memory ordering (the kernel's side is perf_output_put_handle()): the
 * kernel writes a record, then publishes data_head with a store-release
 * (smp_wmb + store); we load data_head with acquire before reading records,
 * so the records below it are visible; after copying them out we store
 * data_tail with release, so our reads complete before the kernel may
 * reuse the space (it checks data_tail before writing). The AUX area's
 * aux_head/aux_tail follow the same rule.
 */
#include "collector/rec_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "format/format.h"
#include "perfsys/perfsys.h"
#include "pmc/pmc.h"
#include "symbolize/symbolize.h"

#define DEFAULT_FREQ 4000
#define POLL_MS	     250
#define TAG_TARGET   (1ull << 32)
#define TAG_USR2     (2ull << 32)
#define TAG_CTL	     (3ull << 32)

struct rec_run {
	const uint8_t *p;
	size_t len;
};

struct rec_ring {
	int fd;		  /* the descriptor whose mmap this is */
	int32_t cpu, tid; /* -1 for "any" */
	uint8_t *base;
	size_t map_len;
	struct perf_event_mmap_page *pg;
	uint8_t *data;
	uint64_t size;
	uint64_t tail; /* our data_tail */
	uint64_t head; /* this round's data_head */
	struct rec_run runs[3];
	unsigned nruns;
	uint8_t *scratch; /* HWT_COLL_RECORD_MAX, for the record that wraps */
	uint32_t stream;
	bool hup;
	/* AUX (Intel PT) */
	uint8_t *aux;
	uint64_t aux_size;
	uint64_t aux_tail;
	uint32_t aux_stream;
	struct hwt_coll_aux_snap snap;
	/* losses, and how much of them the writer has: they are written as
	 * increments each round, so the file of a killed recorder counts
	 * them too */
	uint64_t lost_records, lost_samples, aux_lost, aux_gaps;
	/* an AUX record said TRUNCATED: the kernel disabled the intel_pt
	 * events writing here until they are enabled again */
	bool overrun;
	uint64_t lost_written[4];
};

struct rec_event {
	struct perf_event_attr attr;
	char name[HWT_PMC_NAME_MAX];
	struct hwt_pmc_event pev; /* for error messages */
	uint64_t *ids;
	size_t nids, capids;
	bool user_mods;
	bool user_only; /* fell back to user space (perf_event_paranoid) */
	int cur_fd;	/* its fd on the (pid, cpu) being opened: members' group */
	bool pt;	/* the intel_pt event (snapshots stop it alone) */
	bool tracking;	/* the dummy event that carries the sideband */
};

struct hwt_coll_rec {
	struct hwt_coll_rec_config cfg;
	struct hwt_pmc_evlist *evlist;
	struct rec_event *ev;
	size_t nev;
	/* Intel PT */
	struct hwt_coll_pt_pmu pmu;
	struct hwt_coll_pt_conf ptc;
	char filter[4096];
	/* the session */
	struct hwt_coll_target *t;
	int *fds;
	size_t nfds, capfds;
	uint32_t *fd_ev, *fd_ring; /* each fd's event and ring */
	struct rec_ring *rings;
	size_t nrings;
	bool per_thread;
	struct hwt_coll_memlock ml;
	size_t data_bytes, aux_bytes; /* per buffer, chosen for the limits */
	int epfd, usr2_fd;
	struct hwt_coll_ctl ctl; /* the control FIFO, fd -1 without */
	struct hwt_fmt_writer *w;
	int32_t synth_stream;
	struct hwt_fmt_attr_info info;
	struct hwt_sym_aspace *as;
	uint8_t *hit;
	size_t hitcap;
	bool kernel_hit;
	struct hwt_coll_aux_stats aux_st;
	uint64_t *overrun_times; /* perf ns of each AUX overrun */
	size_t noverruns, capoverruns;
	uint64_t time_min, time_max;
	struct hwt_coll_rec_stats st;
	sigset_t oldmask;
	bool masked, opened, done;
	bool stopping; /* the events are being disabled for the end */
	struct timespec t0;
	size_t page;
	/* the last mapping a sample hit (most hits repeat it) */
	bool c_valid;
	uint32_t c_pid, c_obj;
	uint64_t c_lo, c_hi;
	bool warned_nomem; /* a mapping was lost for want of memory */
	int err;
};

static int fail(struct hwt_coll_rec *r, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct hwt_coll_rec *r, int err, const char *fmt, ...)
{
	va_list ap;

	if (r->cfg.errmsg && r->cfg.errmsg_len) {
		va_start(ap, fmt);
		vsnprintf(r->cfg.errmsg, r->cfg.errmsg_len, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* Removes an output that holds no recording, if it is a regular file
 * ("-o /dev/null" must never remove /dev/null). */
static void remove_output(const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		unlink(path);
}

static int perf_open(struct hwt_coll_rec *r, struct perf_event_attr *attr, int pid, int cpu,
		     int group)
{
	return hwt_psys_event_open(r->cfg.psys, attr, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);
}

void hwt_coll_rec_config_init(struct hwt_coll_rec_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
}

/* ------------------------------------------------------------------------ */
/* events                                                                    */

static bool have_hw_cycles(struct hwt_coll_rec *r)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.sample_period = 100000;
	fd = perf_open(r, &a, 0, -1, -1);
	if (fd >= 0) {
		hwt_psys_close(r->cfg.psys, fd);
		return true;
	}
	/* Only "no such counter" means absent; a permission problem is
	 * reported when the real event is opened. */
	return !(fd == -ENOENT || fd == -EOPNOTSUPP || fd == -ENODEV || fd == -ENXIO);
}

static uint64_t max_sample_rate(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r");
	unsigned long long v = 0;

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static int add_event(struct hwt_coll_rec *r, const struct perf_event_attr *attr, const char *name)
{
	struct rec_event *n = realloc(r->ev, (r->nev + 1) * sizeof(*r->ev));

	if (!n)
		return -ENOMEM;
	r->ev = n;
	n = &r->ev[r->nev++];
	memset(n, 0, sizeof(*n));
	n->attr = *attr;
	snprintf(n->name, sizeof(n->name), "%s", name);
	snprintf(n->pev.name, sizeof(n->pev.name), "%s", name);
	n->pev.attr = *attr;
	return 0;
}

/* The sampling fields every event shares (so one parser reads them all). */
static void sampling_attr(struct hwt_coll_rec *r, struct perf_event_attr *a, bool tracepoint)
{
	a->size = sizeof(*a);
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	if (r->cfg.callgraph != HWT_COLL_CG_NONE)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (r->cfg.callgraph == HWT_COLL_CG_LBR && !hwt_pmc_lbr_attr(a))
		hwt_log(&r->cfg.logger, HWT_LOG_WARN,
			"LBR call stacks are user-space only and this event excludes user space: "
			"frame-pointer call chains instead");
	if (r->cfg.callgraph == HWT_COLL_CG_DWARF) {
		/* As perf record --call-graph dwarf: the kernel's chain for
		 * kernel frames, the user registers (perf's x86-64
		 * PERF_REGS_MASK: all but ds, es, fs, gs) and stack copy
		 * for the user part, unwound when the file is read. */
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = 0xff0fffull;
		a->sample_stack_user =
		    r->cfg.stack_user ? r->cfg.stack_user : HWT_COLL_STACK_USER_DEFAULT;
		a->exclude_callchain_user = 1;
	}
	a->sample_id_all = 1;
	a->read_format = 0;
	/* PERF_SAMPLE_PERIOD only where the period varies: with it, the
	 * kernel samples a software event with a fixed period on every hit
	 * (perf_swevent_event() overflows at once and reports nr as the
	 * period), so -c 1000000 -e page-faults would sample every fault.
	 * perf record leaves it out with -c for the same reason; readers
	 * take the attr's sample_period then. */
	if (r->cfg.period) {
		a->freq = 0;
		a->sample_period = r->cfg.period;
	} else if (r->cfg.freq || !tracepoint) {
		a->freq = 1;
		a->sample_freq = r->cfg.freq ? r->cfg.freq : DEFAULT_FREQ;
		a->sample_type |= PERF_SAMPLE_PERIOD;
	} else {
		a->freq = 0;
		a->sample_period = 1;		      /* a tracepoint: every hit, as perf */
		a->sample_type |= PERF_SAMPLE_PERIOD; /* hits that count several */
	}
}

static int build_sampling(struct hwt_coll_rec *r)
{
	struct hwt_pmc_config pcfg;
	const char *spec = r->cfg.events;
	int err;

	hwt_pmc_config_init(&pcfg);
	pcfg.logger = r->cfg.logger;
	pcfg.sysfs_root = r->cfg.sysfs_root;
	pcfg.psys = r->cfg.psys;
	err = hwt_pmc_evlist_alloc(&r->evlist, &pcfg);
	if (err < 0)
		return fail(r, err, "cannot set up events: %s", hwt_strerror(err));
	if (!spec) {
		if (have_hw_cycles(r)) {
			/* perf's default: the most precise level that opens
			 * (less skid), on every core PMU of a hybrid CPU. */
			spec = "cycles:P";
		} else {
			spec = "cpu-clock";
			hwt_log(&r->cfg.logger, HWT_LOG_INFO,
				"no hardware cycle counter here (a VM without a virtual PMU?): "
				"sampling cpu-clock instead");
		}
	}
	err = hwt_pmc_evlist_add(r->evlist, spec);
	if (err < 0)
		return fail(r, err, "%s", hwt_pmc_evlist_errmsg(r->evlist));
	if (r->cfg.freq == UINT64_MAX) {
		/* "-F max": the highest rate the kernel allows now. */
		r->cfg.freq = max_sample_rate();
		if (!r->cfg.freq)
			r->cfg.freq = DEFAULT_FREQ;
	} else if (r->cfg.freq) {
		uint64_t max = max_sample_rate();

		if (max && r->cfg.freq > max) {
			hwt_log(
			    &r->cfg.logger, HWT_LOG_WARN,
			    "-F %llu is above kernel.perf_event_max_sample_rate (%llu): sampling "
			    "at %llu Hz (raise it with 'sysctl -w "
			    "kernel.perf_event_max_sample_rate=N')",
			    (unsigned long long)r->cfg.freq, (unsigned long long)max,
			    (unsigned long long)max);
			r->cfg.freq = max;
		}
	}
	for (size_t i = 0; i < hwt_pmc_evlist_count(r->evlist); i++) {
		const struct hwt_pmc_event *pe = hwt_pmc_evlist_event(r->evlist, i);
		struct perf_event_attr a = pe->attr;

		/* Groups are opened as groups (scheduled together); members
		 * sample on their own unless the group says :S. */
		sampling_attr(r, &a, pe->source == HWT_PMC_SRC_TRACEPOINT);
		hwt_pmc_sample_group_attr(r->evlist, i, &a);
		err = add_event(r, &a, pe->name);
		if (err < 0)
			return fail(r, err, "out of memory");
		r->ev[r->nev - 1].pev = *pe;
		r->ev[r->nev - 1].user_mods = pe->user_mods;
	}
	return 0;
}

static int build_pt(struct hwt_coll_rec *r)
{
	struct perf_event_attr a;
	char msg[512];
	int err;

	err = hwt_coll_pt_pmu_read(r->cfg.sysfs_root, &r->pmu, msg, sizeof(msg));
	if (err == -HWT_ENOPT) {
		struct hwt_coll_cpuinfo ci;

		hwt_coll_cpuinfo(NULL, &ci);
		return fail(r, err,
			    "no Intel PT on this machine (%s%s; no intel_pt PMU in sysfs): record "
			    "emulated PT with --pt=emulate",
			    ci.desc[0] ? "CPU: " : "", ci.desc[0] ? ci.desc : "unknown CPU");
	}
	if (err < 0)
		return fail(r, err, "%s", msg);
	err = hwt_coll_pt_conf_parse(&r->pmu, r->cfg.pt_spec, &r->ptc, msg, sizeof(msg));
	if (err < 0)
		return fail(r, err, "%s", msg);

	if (r->cfg.pt_filter) {
		int64_t ranges = hwt_coll_pt_cap(&r->pmu, "num_address_ranges");

		if (hwt_coll_pt_cap(&r->pmu, "ip_filtering") <= 0 || ranges <= 0)
			return fail(r, -HWT_ENOTSUP,
				    "this CPU's Intel PT has no IP filtering (caps/ip_filtering, "
				    "caps/num_address_ranges): drop --filter");
		err = hwt_coll_pt_filter(r->cfg.pt_filter, (unsigned)ranges, 0, r->filter,
					 sizeof(r->filter), msg, sizeof(msg));
		if (err < 0)
			return fail(r, err, "%s", msg);
	}
	if (r->ptc.kernel && !r->ptc.user_set &&
	    !hwt_coll_kernel_code(hwt_psys_procfs_root(r->cfg.psys), msg, sizeof(msg))) {
		/* A trace of kernel code without the kernel's code decodes
		 * to gaps, and the user code after each entry is lost up to
		 * the next PSB: by default, user space only. */
		r->ptc.kernel = false;
		hwt_log(&r->cfg.logger, HWT_LOG_INFO,
			"recording user space only: the kernel's code cannot be read to decode "
			"its trace (%s); run as root (for /proc/kcore), or add 'k' "
			"(-e intel_pt//uk) to trace it anyway",
			msg);
	}
	hwt_coll_pt_attr(&r->pmu, &r->ptc, &a);
	err = add_event(r, &a, "intel_pt//");
	if (err < 0)
		return fail(r, err, "out of memory");
	r->ev[r->nev - 1].pt = true;
	/* The sideband rides on a dummy event of its own, as perf's tracking
	 * event: it stays enabled when a snapshot stops the trace, and it
	 * follows every thread and child the trace does. */
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_period = 1;
	a.sample_type = r->ev[0].attr.sample_type;
	a.sample_id_all = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.exclude_guest = 1;
	/* With the kernel traced, its text changes (static keys, ftrace,
	 * BPF) and new code (BPF programs) come as records too. */
	a.text_poke = r->ptc.kernel;
	a.ksymbol = r->ptc.kernel;
	err = add_event(r, &a, "dummy:u");
	if (err < 0)
		return fail(r, err, "out of memory");
	r->ev[r->nev - 1].tracking = true;
	r->ev[r->nev - 1].user_mods = true;
	return 0;
}

int hwt_coll_rec_alloc(struct hwt_coll_rec **out, const struct hwt_coll_rec_config *cfg)
{
	struct hwt_coll_rec *r;
	int err;

	*out = NULL;
	if (!cfg)
		return -HWT_EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	hwt_coll_rec_config_init(&r->cfg);
	if (hwt_opts_copy(&r->cfg, sizeof(r->cfg), cfg) < 0) {
		free(r);
		return -HWT_EINVAL;
	}
	r->epfd = -1;
	r->usr2_fd = -1;
	r->ctl.fd = r->ctl.ack_fd = -1;
	r->synth_stream = -1;
	r->st.exit_status = -1;
	r->page = (size_t)sysconf(_SC_PAGESIZE);
	if (r->cfg.errmsg && r->cfg.errmsg_len)
		r->cfg.errmsg[0] = '\0';
	err = -HWT_EINVAL;
	if (!r->cfg.output || !r->cfg.output[0]) {
		fail(r, err, "no output file");
		goto error;
	}
	if (r->cfg.period && r->cfg.freq) {
		fail(r, err, "give either a period (-c) or a frequency (-F), not both");
		goto error;
	}
	if (r->cfg.pt_snapshot && !r->cfg.pt) {
		fail(r, err, "snapshot mode (-S) is for Intel PT");
		goto error;
	}
	err = r->cfg.pt ? build_pt(r) : build_sampling(r);
	if (err < 0)
		goto error;
	hwt_fmt_attr_info_from_attr(&r->info, &r->ev[0].attr);
	*out = r;
	return 0;
error:
	hwt_coll_rec_free(r);
	return err;
}

/* ------------------------------------------------------------------------ */
/* opening                                                                   */

static int add_fd(struct hwt_coll_rec *r, int fd, size_t ev, size_t ring)
{
	if (r->nfds == r->capfds) {
		size_t nc = r->capfds ? r->capfds * 2 : 64;
		int *n = realloc(r->fds, nc * sizeof(int));
		uint32_t *e = realloc(r->fd_ev, nc * sizeof(uint32_t));
		uint32_t *g = e ? realloc(r->fd_ring, nc * sizeof(uint32_t)) : NULL;

		if (n)
			r->fds = n;
		if (e)
			r->fd_ev = e;
		if (g)
			r->fd_ring = g;
		if (!n || !e || !g)
			return -ENOMEM;
		r->capfds = nc;
	}
	r->fd_ev[r->nfds] = (uint32_t)ev;
	r->fd_ring[r->nfds] = (uint32_t)ring;
	r->fds[r->nfds++] = fd;
	return 0;
}

static int add_id(struct rec_event *e, uint64_t id)
{
	if (e->nids == e->capids) {
		size_t nc = e->capids ? e->capids * 2 : 16;
		uint64_t *n = realloc(e->ids, nc * sizeof(uint64_t));

		if (!n)
			return -ENOMEM;
		e->ids = n;
		e->capids = nc;
	}
	e->ids[e->nids++] = id;
	return 0;
}

static int read_paranoid(const char *path)
{
	int level;

	if (hwt_pmc_paranoid_read(path, &level) < 0)
		return INT_MIN;
	return level;
}

/* One line with the fix for a perf_event_open failure. */
static int explain(struct hwt_coll_rec *r, int err, const struct rec_event *e, int pid, int cpu,
		   size_t fds_needed)
{
	int paranoid = read_paranoid(r->cfg.paranoid_path);
	const char *what = r->cfg.pt ? "trace" : "sample";
	char where[64];

	if (pid == -1 && cpu >= 0)
		snprintf(where, sizeof(where), "system-wide on CPU %d", cpu);
	else
		snprintf(where, sizeof(where), "for thread %d", pid);
	if (err == -EACCES || err == -EPERM) {
		int need = hwt_pmc_paranoid_needed(&e->attr, pid, cpu);
		const char *why = need <= 0   ? "system-wide recording"
				  : need == 1 ? "recording kernel space"
					      : "recording";

		if (paranoid != INT_MIN && paranoid > need)
			return fail(
			    r, err,
			    "cannot %s '%s' %s: %s needs perf_event_paranoid <= %d but it is "
			    "%d; run as root (or with CAP_PERFMON) or set it with 'sysctl -w "
			    "kernel.perf_event_paranoid=%d'%s",
			    what, e->name, where, why, need, paranoid, need,
			    need == 1 ? ", or record user space only with ':u'" : "");
		if (pid > 0)
			return fail(
			    r, err,
			    "cannot %s '%s' %s: permission denied (the process belongs to "
			    "another user, or ptrace is restricted); run as its owner or as "
			    "root",
			    what, e->name, where);
		return fail(r, err,
			    "cannot %s '%s' %s: permission denied; run as root or with "
			    "CAP_PERFMON",
			    what, e->name, where);
	}
	if (err == -EMFILE || err == -ENFILE) {
		struct rlimit rl;
		unsigned long long lim = 0;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
			lim = (unsigned long long)rl.rlim_cur;
		return fail(r, err,
			    "too many open files: recording needs %zu file descriptors (events x "
			    "CPUs x threads) besides those already open and the limit is %llu; "
			    "raise it with 'ulimit -n %zu' or record fewer events or CPUs",
			    fds_needed, lim, fds_needed + 64);
	}
	if (r->cfg.callgraph == HWT_COLL_CG_LBR &&
	    (e->attr.sample_type & PERF_SAMPLE_BRANCH_STACK) &&
	    (err == -EOPNOTSUPP || err == -EINVAL || err == -ENOENT))
		return fail(
		    r, err,
		    "LBR call stacks are not available for '%s' on this CPU/VM (they need "
		    "an Intel CPU with LBR, Haswell or later, and a hardware event); use -g "
		    "for frame-pointer call chains",
		    e->name);
	if (r->cfg.pt && err == -EINVAL)
		return fail(r, err,
			    "the kernel rejected the intel_pt configuration (config %#llx%s%s); "
			    "check the terms against /sys/bus/event_source/devices/intel_pt/caps",
			    (unsigned long long)e->attr.config, r->filter[0] ? ", filter " : "",
			    r->filter);
	if (r->cfg.errmsg && r->cfg.errmsg_len) {
		struct hwt_pmc_open_error oe = {sizeof(oe),
						err,
						&e->pev,
						&e->attr,
						pid,
						cpu,
						paranoid,
						fds_needed,
						r->cfg.sysfs_root,
						hwt_psys_procfs_root(r->cfg.psys),
						what};

		hwt_pmc_explain(r->cfg.errmsg, r->cfg.errmsg_len, &oe);
	}
	return err;
}

/* Opens event e for (pid, cpu), falling back to user space only where
 * perf_event_paranoid forbids the kernel and the user did not ask for it
 * (as perf does). Returns the fd or -errno. */
static int open_event(struct hwt_coll_rec *r, struct rec_event *e, int pid, int cpu, int group)
{
	bool raised = false;

	for (;;) {
		int fd = perf_open(r, &e->attr, pid, cpu, group);

		if (fd >= 0)
			return fd;
		/* :P (the default cycles:P): the highest precise level the
		 * PMU takes, down to none. */
		if ((fd == -EOPNOTSUPP || fd == -EINVAL) && e->pev.precise_max &&
		    e->attr.precise_ip) {
			e->attr.precise_ip--;
			continue;
		}
		if (fd == -EINVAL && hwt_pmc_lbr_attr_older(&e->attr))
			continue;
		if ((fd == -EINVAL || fd == -EACCES || fd == -EPERM) && e->tracking &&
		    (e->attr.text_poke || e->attr.ksymbol)) {
			/* a kernel without (or refusing) them: the text as it
			 * was at the start is what decoding gets */
			e->attr.text_poke = 0;
			e->attr.ksymbol = 0;
			continue;
		}
		if (fd == -EMFILE && !raised) {
			struct rlimit rl;

			raised = true;
			if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
				rl.rlim_cur = rl.rlim_max;
				if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
					continue;
			}
		}
		if ((fd == -EACCES || fd == -EPERM) && !e->attr.exclude_kernel && !e->user_mods &&
		    !(r->cfg.pt && r->ptc.user_set) && read_paranoid(r->cfg.paranoid_path) >= 2) {
			e->attr.exclude_kernel = 1;
			e->attr.exclude_hv = 1;
			e->user_only = true; /* said once the open succeeds */
			continue;
		}
		return fd;
	}
}

static int ring_map(struct hwt_coll_rec *r, struct rec_ring *rg)
{
	size_t data = r->data_bytes;
	void *map;
	int err;

	rg->map_len = data + r->page;
	err = hwt_psys_mmap(r->cfg.psys, rg->fd, rg->map_len, PROT_READ | PROT_WRITE, 0, &map);
	if (err < 0) {
		int e = -err;
		char msg[768];

		rg->base = NULL;
		if (e == EPERM) {
			hwt_coll_buf_explain(&r->ml, r->nrings, data, r->aux_bytes, msg,
					     sizeof(msg));
			return fail(r, -e,
				    "cannot map the ring buffers: %s (other perf sessions "
				    "of this user count too)",
				    msg);
		}
		if (e == ENOMEM)
			return fail(r, -e, "cannot map a %zu KiB ring buffer: %s; lower it with -m",
				    data >> 10, strerror(e));
		return fail(r, -e, "cannot map the ring buffer: %s", strerror(e));
	}
	rg->base = map;
	rg->pg = (struct perf_event_mmap_page *)rg->base;
	rg->data = rg->base + r->page;
	rg->size = data;
	rg->scratch = malloc(HWT_COLL_RECORD_MAX);
	if (!rg->scratch)
		return -ENOMEM;
	if (r->cfg.pt) {
		size_t aux = r->aux_bytes;
		int prot = PROT_READ | (r->cfg.pt_snapshot ? 0 : PROT_WRITE);

		/* The AUX area lives after the data area in the same file;
		 * mapping it read-only selects overwrite (snapshot) mode. */
		rg->pg->aux_offset = rg->map_len;
		rg->pg->aux_size = aux;
		err = hwt_psys_mmap(r->cfg.psys, rg->fd, aux, prot, rg->map_len, &map);
		if (err < 0) {
			int e = -err;
			char msg[768];

			rg->aux = NULL;
			if (e == EPERM) {
				hwt_coll_buf_explain(&r->ml, r->nrings, data, aux, msg,
						     sizeof(msg));
				return fail(r, -e,
					    "cannot map the Intel PT AUX areas: %s (other perf "
					    "sessions of this user count too)",
					    msg);
			}
			return fail(r, -e,
				    "cannot map a %zu KiB AUX area for Intel PT: %s; lower it with "
				    "-m ,SIZE",
				    aux >> 10, strerror(e));
		}
		rg->aux = map;
		rg->aux_size = aux;
		hwt_coll_aux_snap_init(&rg->snap, aux);
	}
	return 0;
}

/* The CPUs to open per-CPU events on. */
static int online_cpus(struct hwt_coll_rec *r, int **cpus)
{
	char path[PATH_MAX], buf[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/devices/system/cpu/online",
		 r->cfg.sysfs_root ? r->cfg.sysfs_root : "/sys");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && r->cfg.sysfs_root) {
		/* a tree that describes PMUs only: the CPUs are this machine's */
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/online");
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return fail(r, -errno, "cannot read %s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return fail(r, -HWT_EFORMAT, "%s is empty", path);
	buf[n] = '\0';
	return hwt_coll_cpu_list_parse(buf, cpus);
}

/* Opens every event on (pid, cpu) into the ring `rg` (creating its mapping
 * with the first descriptor). Returns 0, 1 when the thread is gone, or an
 * error with errmsg set. */
static int open_into(struct hwt_coll_rec *r, struct rec_ring *rg, int pid, int cpu,
		     size_t fds_needed)
{
	for (size_t e = 0; e < r->nev; e++) {
		struct rec_event *ev = &r->ev[e];
		bool member = !r->cfg.pt && ev->pev.leader != (int)e;
		uint64_t id;
		int fd, err;

		ev->cur_fd = -1;
		/* A hybrid core PMU or a system PMU counts on its CPUs only. */
		if (!r->cfg.pt && !hwt_pmc_event_on_cpu(&ev->pev, cpu))
			continue;
		if (member && r->ev[ev->pev.leader].cur_fd < 0)
			continue; /* its leader is not on this CPU */
		fd = open_event(r, ev, pid, cpu, member ? r->ev[ev->pev.leader].cur_fd : -1);
		if (fd == -ESRCH && pid > 0)
			return 1;
		if (fd < 0)
			return explain(r, fd, ev, pid, cpu, fds_needed);
		err = add_fd(r, fd, e, (size_t)(rg - r->rings));
		if (err < 0) {
			hwt_psys_close(r->cfg.psys, fd);
			return err;
		}
		ev->cur_fd = fd;
		if (hwt_psys_event_id(r->cfg.psys, fd, &id) == 0) {
			err = add_id(ev, id);
			if (err < 0)
				return err;
		}
		if (rg->fd < 0) {
			rg->fd = fd;
			err = ring_map(r, rg);
			if (err < 0)
				return err;
		} else if ((err = hwt_psys_set_output(r->cfg.psys, fd, rg->fd)) < 0) {
			return fail(r, err, "cannot share a ring buffer between events: %s",
				    strerror(-err));
		}
		if (r->filter[0] && ev->pt &&
		    (err = hwt_psys_set_filter(r->cfg.psys, fd, r->filter)) < 0) {
			int e2 = -err;

			return fail(r, -e2,
				    "the kernel refused the Intel PT filter '%s': %s (it passed "
				    "hwtrace's checks of the kernel's rules; an older kernel may "
				    "refuse more: try one 'filter SYM @ FILE' range)",
				    r->filter, strerror(e2));
		}
	}
	return 0;
}

static struct rec_ring *new_ring(struct hwt_coll_rec *r, int32_t cpu, int32_t tid)
{
	struct rec_ring *n = realloc(r->rings, (r->nrings + 1) * sizeof(*r->rings));

	if (!n)
		return NULL;
	r->rings = n;
	n = &r->rings[r->nrings++];
	memset(n, 0, sizeof(*n));
	n->fd = -1;
	n->cpu = cpu;
	n->tid = tid;
	return n;
}

static int open_events(struct hwt_coll_rec *r, struct hwt_coll_target *t)
{
	const int *tids, *scpus;
	size_t ntids = hwt_coll_target_threads(t, &tids);
	size_t nscpus = hwt_coll_target_cpus(t, &scpus);
	bool system = hwt_coll_target_is_system(t);
	bool launch = hwt_coll_target_child(t) > 0;
	int *cpus = NULL, ncpus = 0, err = 0;
	size_t opened_threads = 0, needed;

	/* Which buffers: per CPU (following new threads and children, with
	 * switch records to tell them apart), or per thread. */
	r->per_thread = !system && r->cfg.per_thread;
	if (system) {
		cpus = malloc(nscpus * sizeof(int));
		if (!cpus)
			return -ENOMEM;
		memcpy(cpus, scpus, nscpus * sizeof(int));
		ncpus = (int)nscpus;
	} else if (!r->per_thread) {
		ncpus = online_cpus(r, &cpus);
		if (ncpus < 0)
			return ncpus;
	}
	/* Sizes that fit this caller's locked-memory limits (which grow with
	 * the online CPUs). */
	{
		struct hwt_coll_bufplan plan;
		char msg[768];
		long online = sysconf(_SC_NPROCESSORS_ONLN);

		hwt_coll_memlock_read(r->cfg.paranoid_path, NULL, online > 0 ? (unsigned)online : 1,
				      &r->ml);
		err =
		    hwt_coll_buf_plan(&r->ml, r->per_thread ? ntids : (size_t)ncpus, r->cfg.pt,
				      r->cfg.mmap_bytes, r->cfg.aux_bytes, &plan, msg, sizeof(msg));
		if (err < 0) {
			free(cpus);
			return fail(r, err, "cannot record: %s", msg);
		}
		if (plan.shrunk)
			hwt_log(
			    &r->cfg.logger, HWT_LOG_INFO,
			    "buffers of %zu KiB data and %zu KiB AUX per %s, to fit this user's "
			    "locked-memory limits (kernel.perf_event_mlock_kb, 'ulimit -l')",
			    plan.data >> 10, plan.aux >> 10, r->per_thread ? "thread" : "CPU");
		r->data_bytes = plan.data;
		r->aux_bytes = plan.aux;
	}
	for (size_t e = 0; e < r->nev; e++) {
		struct perf_event_attr *a = &r->ev[e].attr;

		a->disabled = 1;
		a->enable_on_exec = launch && !system;
		a->inherit = !system && !r->per_thread && !r->cfg.no_inherit &&
			     !(a->sample_type & PERF_SAMPLE_READ);
		/* Wake us when a quarter of the buffer is used. */
		a->watermark = 1;
		a->wakeup_watermark = (uint32_t)(r->data_bytes / 4);
		if (r->cfg.pt)
			a->aux_watermark = (uint32_t)(r->aux_bytes / 4);
		/* Sideband once: on the tracking event (Intel PT), or on the
		 * first event. A per-CPU trace cannot be told apart by thread
		 * without the switch records: always there. */
		if (r->cfg.pt ? r->ev[e].tracking : e == 0) {
			a->mmap = 1;
			a->mmap2 = 1;
			a->comm = 1;
			a->comm_exec = 1;
			a->task = 1;
			a->context_switch = r->cfg.switch_events || (r->cfg.pt && !r->per_thread);
		}
	}
	needed = r->nev * (r->per_thread ? ntids : (size_t)ncpus * (system ? 1 : ntids));
	if (r->per_thread) {
		for (size_t i = 0; i < ntids && err >= 0; i++) {
			struct rec_ring *rg = new_ring(r, -1, tids[i]);

			if (!rg) {
				err = -ENOMEM;
				break;
			}
			err = open_into(r, rg, tids[i], -1, needed);
			if (err == 1) {
				r->nrings--; /* gone: no buffer for it */
				err = 0;
			} else if (err == 0) {
				opened_threads++;
			}
		}
	} else {
		for (int c = 0; c < ncpus && err >= 0; c++) {
			struct rec_ring *rg = new_ring(r, cpus[c], -1);

			if (!rg) {
				err = -ENOMEM;
				break;
			}
			if (system) {
				err = open_into(r, rg, -1, cpus[c], needed);
				opened_threads = 1;
				continue;
			}
			for (size_t i = 0; i < ntids && err >= 0; i++) {
				int rc = open_into(r, r->rings + r->nrings - 1, tids[i], cpus[c],
						   needed);

				if (rc == 1)
					continue;
				err = rc;
				if (rc == 0 && c == 0)
					opened_threads++;
			}
		}
	}
	free(cpus);
	if (err < 0)
		return err;
	/* A CPU whose every thread was gone got no descriptor: no buffer. */
	{
		size_t k = 0;

		for (size_t i = 0; i < r->nrings; i++) {
			if (r->rings[i].fd >= 0)
				r->rings[k++] = r->rings[i];
		}
		r->nrings = k;
	}
	if (!opened_threads || !r->nrings)
		return fail(r, -ESRCH,
			    "every thread of the target is gone (it exited); check the "
			    "PID with 'ps'");
	r->st.fds = r->nfds;
	r->st.buffers = r->nrings;
	for (size_t e = 0; e < r->nev; e++) {
		if (r->ev[e].user_only)
			hwt_log(&r->cfg.logger, HWT_LOG_INFO,
				"perf_event_paranoid is %d: recording user space only for '%s'",
				read_paranoid(r->cfg.paranoid_path), r->ev[e].name);
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* metadata                                                                  */

static int meta_u64_cb(void *ctx, const char *key, uint64_t v)
{
	return hwt_fmt_writer_meta_u64(ctx, key, v);
}

static int meta_bytes_cb(void *ctx, const char *key, const void *v, size_t len)
{
	return hwt_fmt_writer_meta_bytes(ctx, key, v, len);
}

static int meta_str_cb(void *ctx, const char *key, const char *v)
{
	return hwt_fmt_writer_meta_str(ctx, key, v);
}

static int write_meta(struct hwt_coll_rec *r)
{
	struct hwt_fmt_writer *w = r->w;
	struct hwt_coll_cpuinfo ci;
	struct utsname u;
	char key[128];
	void *vdso = NULL;
	uint64_t vstart;
	int64_t vsize;
	int err = 0;

	err |= hwt_fmt_writer_meta_u64(w, HWT_META_VERSION, 1);
	if (uname(&u) == 0) {
		err |= hwt_fmt_writer_meta_str(w, HWT_META_HOST, u.nodename);
		err |= hwt_fmt_writer_meta_str(w, HWT_META_KERNEL, u.release);
		err |= hwt_fmt_writer_meta_str(w, HWT_META_ARCH, u.machine);
	}
	if (r->cfg.cmdline)
		err |= hwt_fmt_writer_meta_str(w, HWT_META_CMDLINE, r->cfg.cmdline);
	if (r->cfg.target_cmdline)
		err |= hwt_fmt_writer_meta_str(w, HWT_META_TARGET, r->cfg.target_cmdline);
	if (hwt_coll_cpuinfo(NULL, &ci) == 0) {
		if (ci.vendor[0])
			err |= hwt_fmt_writer_meta_str(w, HWT_META_CPU_VENDOR, ci.vendor);
		if (ci.desc[0])
			err |= hwt_fmt_writer_meta_str(w, HWT_META_CPU_DESC, ci.desc);
		if (ci.known) {
			err |= hwt_fmt_writer_meta_u64(w, HWT_META_CPU_FAMILY, ci.family);
			err |= hwt_fmt_writer_meta_u64(w, HWT_META_CPU_MODEL, ci.model);
			err |= hwt_fmt_writer_meta_u64(w, HWT_META_CPU_STEPPING, ci.stepping);
			if (r->cfg.pt) {
				err |=
				    hwt_fmt_writer_meta_u64(w, "pt.config.cpu.family", ci.family);
				err |= hwt_fmt_writer_meta_u64(w, "pt.config.cpu.model", ci.model);
				err |= hwt_fmt_writer_meta_u64(w, "pt.config.cpu.stepping",
							       ci.stepping);
			}
		}
	}
	err |=
	    hwt_fmt_writer_meta_u64(w, HWT_META_NR_CPUS, (uint64_t)sysconf(_SC_NPROCESSORS_ONLN));
	/* The clock: perf's sample times from TSC (for the PT decoder). */
	if (r->nrings && r->rings[0].pg->cap_user_time_zero) {
		const struct perf_event_mmap_page *pg = r->rings[0].pg;

		err |= hwt_fmt_writer_meta_u64(w, HWT_META_TIME_SHIFT, pg->time_shift);
		err |= hwt_fmt_writer_meta_u64(w, HWT_META_TIME_MULT, pg->time_mult);
		err |= hwt_fmt_writer_meta_u64(w, HWT_META_TIME_ZERO, pg->time_zero);
	}
	err |= hwt_fmt_writer_meta_u64(w, HWT_META_EVENT_COUNT, r->nev);
	for (size_t i = 0; i < r->nev; i++) {
		const struct rec_event *e = &r->ev[i];
		uint8_t *ids = malloc(e->nids * 8 + 8);

		snprintf(key, sizeof(key), HWT_META_EVENT_FMT, (unsigned)i, "attr");
		err |= hwt_fmt_writer_meta_bytes(w, key, &e->attr, sizeof(e->attr));
		snprintf(key, sizeof(key), HWT_META_EVENT_FMT, (unsigned)i, "name");
		err |= hwt_fmt_writer_meta_str(w, key, e->name);
		if (!ids)
			return -ENOMEM;
		for (size_t k = 0; k < e->nids; k++)
			hwt_put_le64(ids + 8 * k, e->ids[k]);
		snprintf(key, sizeof(key), HWT_META_EVENT_FMT, (unsigned)i, "ids");
		err |= hwt_fmt_writer_meta_bytes(w, key, ids, e->nids * 8);
		free(ids);
	}
	err |=
	    hwt_fmt_writer_meta_str(w, "record.buffers", r->per_thread ? "per-thread" : "per-cpu");
	if (!r->cfg.pt)
		err |= hwt_fmt_writer_meta_str(w, "record.callgraph",
					       r->cfg.callgraph == HWT_COLL_CG_DWARF ? "dwarf"
					       : r->cfg.callgraph == HWT_COLL_CG_LBR ? "lbr"
					       : r->cfg.callgraph == HWT_COLL_CG_FP  ? "fp"
										     : "none");
	vsize = hwt_coll_vdso(&vdso, &vstart);
	if (vsize > 0) {
		err |= hwt_fmt_writer_meta_bytes(w, HWT_META_VDSO_IMAGE, vdso, (size_t)vsize);
		err |= hwt_fmt_writer_meta_u64(w, HWT_META_VDSO_START, vstart);
		/* The recorder symbolizes nothing, but marks vDSO hits. */
	}
	free(vdso);
	if (r->cfg.pt) {
		/* What the events really trace, after any fallback to user
		 * space. */
		for (size_t i = 0; i < r->nev; i++) {
			if (r->ev[i].pt) {
				r->ptc.kernel = !r->ev[i].attr.exclude_kernel;
				r->ptc.user = !r->ev[i].attr.exclude_user;
			}
		}
		err |= hwt_coll_pt_meta(&r->pmu, &r->ptc, meta_u64_cb, w);
		if (r->ptc.kernel) {
			/* What decoding the kernel's trace needs, as perf
			 * record --kcore keeps it. */
			char why[512];
			int n = hwt_coll_kernel_capture(hwt_psys_procfs_root(r->cfg.psys), NULL,
							meta_bytes_cb, meta_str_cb, w, why,
							sizeof(why));

			if (n == -ENOMEM)
				err |= n;
			else if (n < 0)
				hwt_log(&r->cfg.logger, HWT_LOG_WARN,
					"the kernel's code could not be recorded (%s): its trace "
					"will not decode (gaps); run as root to read /proc/kcore, "
					"or record user space only (:u)",
					why);
			else
				hwt_log(&r->cfg.logger, HWT_LOG_INFO,
					"recorded the kernel's code for decoding: %.1f MB of text "
					"from %s, kallsyms and the modules' list",
					(double)n / 1e6, why);
		}
		err |= hwt_fmt_writer_meta_u64(w, "pt.config.per_thread", r->per_thread);
		err |= hwt_fmt_writer_meta_u64(w, "pt.config.snapshot", r->cfg.pt_snapshot);
		err |= hwt_fmt_writer_meta_u64(w, "pt.config.aux_size",
					       r->nrings ? r->rings[0].aux_size : 0);
		if (r->filter[0])
			err |= hwt_fmt_writer_meta_str(w, "pt.config.filter", r->filter);
	}
	return err < 0 ? -ENOMEM : 0;
}

/* ------------------------------------------------------------------------ */
/* sideband and samples                                                      */

static void feed_sideband(struct hwt_coll_rec *r, const struct hwt_fmt_record *rec)
{
	switch (rec->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		struct hwt_fmt_mmap m;

		hwt_fmt_mmap_get(rec, &m);
		/* A mapping lost for want of memory loses its object's
		 * build-id, which decoding elsewhere relies on: say so. */
		if (hwt_sym_aspace_mmap(
			r->as, &(struct hwt_sym_mmap_event){m.pid, m.tid, m.time, m.start, m.len,
							    m.pgoff, m.prot, m.filename, m.build_id,
							    m.build_id_len}) == -ENOMEM &&
		    !r->warned_nomem) {
			hwt_log(&r->cfg.logger, HWT_LOG_WARN,
				"out of memory tracking mappings: the build-ids of some "
				"objects are not stored");
			r->warned_nomem = true;
		}
		r->c_valid = false; /* a new mapping may hide the cached one */
		break;
	}
	case PERF_RECORD_COMM: {
		struct hwt_sym_comm_event ev = {rec->u.comm.pid, rec->u.comm.tid, rec->id.time,
						rec->u.comm.comm,
						(rec->misc & PERF_RECORD_MISC_COMM_EXEC) != 0};

		hwt_sym_aspace_comm(r->as, &ev);
		r->c_valid = false;
		break;
	}
	case PERF_RECORD_FORK: {
		struct hwt_sym_task_event ev = {rec->u.fork.pid, rec->u.fork.ppid, rec->u.fork.tid,
						rec->u.fork.ptid, rec->u.fork.time};

		hwt_sym_aspace_fork(r->as, &ev);
		break;
	}
	default:
		break;
	}
}

/* Grows the hit table to the objects known (after new sideband). */
static int hits_fit(struct hwt_coll_rec *r)
{
	size_t n = hwt_sym_aspace_nobjects(r->as);

	if (n <= r->hitcap)
		return 0;
	{
		size_t nc = n * 2 + 16;
		uint8_t *h = realloc(r->hit, nc);

		if (!h)
			return -ENOMEM;
		memset(h + r->hitcap, 0, nc - r->hitcap);
		r->hit = h;
		r->hitcap = nc;
	}
	return 0;
}

static void mark(struct hwt_coll_rec *r, uint32_t pid, uint64_t time, uint64_t ip)
{
	struct hwt_sym_loc loc;

	if (ip >> 63) {
		r->kernel_hit = true;
		return;
	}
	if (r->c_valid && pid == r->c_pid && ip >= r->c_lo && ip < r->c_hi) {
		r->hit[r->c_obj] = 1;
		return;
	}
	if (hwt_sym_aspace_lookup(r->as, pid, time, ip, &loc) < 0 || loc.object >= r->hitcap)
		return;
	r->hit[loc.object] = 1;
	r->c_valid = true;
	r->c_pid = pid;
	r->c_lo = loc.map_start;
	r->c_hi = loc.map_end;
	r->c_obj = loc.object;
}

static void on_sample(struct hwt_coll_rec *r, const struct hwt_fmt_record *rec)
{
	const struct hwt_fmt_sample *s = &rec->u.sample;
	bool user = true;

	r->st.samples++;
	if (!r->hit)
		return;
	if (!(s->type & PERF_SAMPLE_CALLCHAIN) || !s->callchain_nr) {
		mark(r, s->pid, s->time, s->ip);
		return;
	}
	for (uint64_t i = 0; i < s->callchain_nr; i++) {
		uint64_t ip;

		memcpy(&ip, s->callchain + i, sizeof(ip));
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			user = ip == (uint64_t)PERF_CONTEXT_USER;
			continue;
		}
		if (user || (ip >> 63))
			mark(r, s->pid, s->time, ip);
	}
}

static void on_record(struct hwt_coll_rec *r, struct rec_ring *rg, const struct hwt_fmt_record *rec)
{
	if ((rec->id.present & PERF_SAMPLE_TIME) && rec->id.time) {
		if (!r->time_min || rec->id.time < r->time_min)
			r->time_min = rec->id.time;
		if (rec->id.time > r->time_max)
			r->time_max = rec->id.time;
	}
	switch (rec->type) {
	case PERF_RECORD_SAMPLE:
		on_sample(r, rec);
		break;
	case PERF_RECORD_LOST:
		rg->lost_records += rec->u.lost.lost;
		r->st.lost_records += rec->u.lost.lost;
		break;
	case PERF_RECORD_LOST_SAMPLES:
		rg->lost_samples += rec->u.lost_samples.lost;
		r->st.lost_samples += rec->u.lost_samples.lost;
		break;
	case PERF_RECORD_THROTTLE:
		r->st.throttled++;
		break;
	case PERF_RECORD_AUX:
		if (hwt_coll_aux_account(&r->aux_st, rec->u.aux.aux_offset, rec->u.aux.aux_size,
					 rec->u.aux.flags))
			rg->aux_gaps++;
		if ((rec->u.aux.flags & PERF_AUX_FLAG_TRUNCATED) && !r->cfg.pt_snapshot) {
			/* The AUX area was full: the kernel disabled the event
			 * (perf_aux_output_end). Counted with its time, and
			 * enabled again once the area is drained. */
			rg->overrun = true;
			if (r->noverruns == r->capoverruns) {
				size_t nc = r->capoverruns ? r->capoverruns * 2 : 16;
				uint64_t *n = realloc(r->overrun_times, nc * sizeof(*n));

				if (n) {
					r->overrun_times = n;
					r->capoverruns = nc;
				}
			}
			if (r->noverruns < r->capoverruns)
				r->overrun_times[r->noverruns++] = rec->id.time;
			r->st.aux_overruns++;
		}
		break;
	default:
		break;
	}
}

static bool is_sideband(uint32_t type)
{
	return type == PERF_RECORD_MMAP || type == PERF_RECORD_MMAP2 || type == PERF_RECORD_COMM ||
	       type == PERF_RECORD_FORK;
}

/* Walks the records of a run; sideband or the rest. */
static void scan_run(struct hwt_coll_rec *r, struct rec_ring *rg, const uint8_t *p, size_t len,
		     bool sideband)
{
	struct hwt_fmt_record rec;

	for (size_t off = 0; off + 8 <= len;) {
		uint32_t type = hwt_le32(p + off);
		uint16_t size = hwt_le16(p + off + 6);

		if (size < 8 || size > len - off)
			break; /* ring.c checked this already */
		if (is_sideband(type) == sideband &&
		    hwt_fmt_record_parse(&r->info, p + off, size, &rec) == 0) {
			if (sideband)
				feed_sideband(r, &rec);
			else
				on_record(r, rg, &rec);
		}
		r->st.records += !sideband;
		off += size;
	}
}

/* ------------------------------------------------------------------------ */
/* the read loop                                                             */

static void gather(struct hwt_coll_rec *r, struct rec_ring *rg)
{
	uint64_t pos = rg->tail;
	int64_t n = 0;

	rg->nruns = 0;
	rg->head = __atomic_load_n(&rg->pg->data_head, __ATOMIC_ACQUIRE);
	while (rg->nruns < HWT_ARRAY_SIZE(rg->runs) &&
	       (n = hwt_coll_ring_next(rg->data, rg->size, &pos, rg->head, rg->scratch,
				       &rg->runs[rg->nruns].p)) > 0) {
		rg->runs[rg->nruns].len = (size_t)n;
		rg->nruns++;
	}
	if (n < 0) {
		/* Cannot happen with a sane kernel; do not spin on it. */
		hwt_log(&r->cfg.logger, HWT_LOG_ERROR,
			"ring buffer of %s %d is corrupt at %llu: skipping to its head",
			rg->cpu >= 0 ? "CPU" : "thread", rg->cpu >= 0 ? rg->cpu : rg->tid,
			(unsigned long long)pos);
		rg->nruns = 0;
		rg->tail = rg->head;
		__atomic_store_n(&rg->pg->data_tail, rg->tail, __ATOMIC_RELEASE);
	}
	rg->head = pos; /* what this round consumes */
}

/* PERF_EVENT_IOC_ENABLE/DISABLE on the intel_pt events of ring (all
 * rings: SIZE_MAX); the sideband's events keep running. */
static void ioctl_pt(struct hwt_coll_rec *r, unsigned long req, size_t ring)
{
	for (size_t i = 0; i < r->nfds; i++) {
		if (r->ev[r->fd_ev[i]].pt && (ring == SIZE_MAX || r->fd_ring[i] == ring))
			hwt_psys_ioctl(r->cfg.psys, r->fds[i], req, 0);
	}
}

static int write_aux(struct hwt_coll_rec *r, struct rec_ring *rg,
		     const struct hwt_coll_aux_read *rd)
{
	int err = 0;

	if (rd->lost) {
		rg->aux_lost += rd->lost;
		r->st.aux_lost += rd->lost;
	}
	for (unsigned i = 0; i < rd->nspans && err >= 0; i++) {
		const struct hwt_coll_aux_span *s = &rd->span[i];

		err = hwt_fmt_writer_aux(r->w, rg->aux_stream, s->aux_offset, rg->aux + s->buf_off,
					 (size_t)s->len);
		if (err == -HWT_EDROPPED)
			err = 0; /* counted by the writer, not recorded */
		else if (err >= 0)
			r->st.aux_bytes += s->len;
	}
	return err;
}

static int drain_aux_full(struct hwt_coll_rec *r, struct rec_ring *rg)
{
	struct hwt_coll_aux_read rd;
	uint64_t head = __atomic_load_n(&rg->pg->aux_head, __ATOMIC_ACQUIRE);
	int err;

	if (head == rg->aux_tail)
		return 0;
	err = hwt_coll_aux_full(rg->aux_size, rg->aux_tail, head, &rd);
	if (err < 0)
		return 0;
	err = write_aux(r, rg, &rd);
	rg->aux_tail = rd.new_tail;
	__atomic_store_n(&rg->pg->aux_tail, rg->aux_tail, __ATOMIC_RELEASE);
	return err;
}

/* Hands the losses counted since the last call to the writer. */
static int write_losses(struct hwt_coll_rec *r)
{
	int err = 0;

	for (size_t i = 0; i < r->nrings; i++) {
		struct rec_ring *rg = &r->rings[i];
		const struct {
			uint32_t stream;
			enum hwt_fmt_lost_kind kind;
			uint64_t amount;
		} l[HWT_ARRAY_SIZE(rg->lost_written)] = {
		    {rg->stream, HWT_FMT_LOST_RECORDS, rg->lost_records},
		    {rg->stream, HWT_FMT_LOST_SAMPLES, rg->lost_samples},
		    {rg->aux_stream, HWT_FMT_LOST_AUX, rg->aux_lost},
		    {rg->aux_stream, HWT_FMT_LOST_AUX_GAPS, rg->aux_gaps},
		};

		for (size_t k = 0; k < HWT_ARRAY_SIZE(l); k++) {
			if (l[k].amount == rg->lost_written[k])
				continue;
			err |= hwt_fmt_writer_lost(r->w, l[k].stream, l[k].kind,
						   l[k].amount - rg->lost_written[k]);
			rg->lost_written[k] = l[k].amount;
		}
	}
	return err;
}

/* One round over all buffers. Returns 0 or a writer error. */
static int drain(struct hwt_coll_rec *r)
{
	bool any = false;
	int err = 0;

	for (size_t i = 0; i < r->nrings; i++)
		gather(r, &r->rings[i]);
	for (size_t i = 0; i < r->nrings; i++) {
		struct rec_ring *rg = &r->rings[i];

		for (unsigned k = 0; k < rg->nruns; k++)
			scan_run(r, rg, rg->runs[k].p, rg->runs[k].len, true);
	}
	if (hits_fit(r) < 0)
		r->c_valid = false; /* out of memory: marks are skipped */
	for (size_t i = 0; i < r->nrings; i++) {
		struct rec_ring *rg = &r->rings[i];

		for (unsigned k = 0; k < rg->nruns; k++) {
			int e;

			scan_run(r, rg, rg->runs[k].p, rg->runs[k].len, false);
			e = hwt_fmt_writer_records(r->w, rg->stream, rg->runs[k].p,
						   rg->runs[k].len);
			if (e < 0 && e != -HWT_EDROPPED && !err)
				err = e;
			any = true;
		}
		if (rg->nruns) {
			rg->tail = rg->head;
			__atomic_store_n(&rg->pg->data_tail, rg->tail, __ATOMIC_RELEASE);
		}
		if (r->cfg.pt && !r->cfg.pt_snapshot && rg->aux) {
			int e = drain_aux_full(r, rg);

			if (e < 0 && !err)
				err = e;
			if (rg->overrun && !r->stopping) {
				/* drained: the trace may go on (perf's read_finish) */
				rg->overrun = false;
				ioctl_pt(r, PERF_EVENT_IOC_ENABLE, i);
			}
		}
	}
	r->st.wakeups += any;
	if (!err)
		err = write_losses(r);
	return err;
}

static void ioctl_all(struct hwt_coll_rec *r, unsigned long req)
{
	for (size_t i = 0; i < r->nfds; i++)
		hwt_psys_ioctl(r->cfg.psys, r->fds[i], req, 0);
}

/* Snapshot mode: stop the PMU so the AUX area holds still, take what it
 * has, and (unless it is the last) start it again. */
static int snapshot(struct hwt_coll_rec *r, bool last)
{
	int err = 0;

	/* Only the trace stops (perf's intel_pt_snapshot_start): the
	 * tracking event goes on recording mmaps, comms and forks. */
	ioctl_pt(r, PERF_EVENT_IOC_DISABLE, SIZE_MAX);
	err = drain(r);
	for (size_t i = 0; i < r->nrings && err >= 0; i++) {
		struct rec_ring *rg = &r->rings[i];
		struct hwt_coll_aux_read rd;
		uint64_t head;

		if (!rg->aux)
			continue;
		head = __atomic_load_n(&rg->pg->aux_head, __ATOMIC_ACQUIRE);
		if (hwt_coll_aux_snapshot(&rg->snap, rg->aux, head & (rg->aux_size - 1), &rd) < 0)
			continue;
		if (rd.gap)
			rg->aux_gaps++;
		err = write_aux(r, rg, &rd);
	}
	r->st.snapshots++;
	if (!last)
		ioctl_pt(r, PERF_EVENT_IOC_ENABLE, SIZE_MAX);
	return err;
}

/* ------------------------------------------------------------------------ */
/* open / run / finish                                                       */

static int synth_emit(void *ctx, const void *rec, size_t len)
{
	struct hwt_coll_rec *r = ctx;
	struct hwt_fmt_record parsed;

	if (hwt_fmt_record_parse(&r->info, rec, len, &parsed) == 0)
		feed_sideband(r, &parsed);
	return hwt_fmt_writer_records(r->w, (uint32_t)r->synth_stream, rec, len);
}

static int synthesize(struct hwt_coll_rec *r, struct hwt_coll_target *t)
{
	struct hwt_coll_synth s = {0};
	const int *tids;
	size_t n = hwt_coll_target_threads(t, &tids);
	int err = 0;

	if (hwt_coll_target_child(t) > 0 && !hwt_coll_target_is_system(t))
		return 0; /* a launched command: its exec tells everything */
	err = hwt_fmt_writer_add_stream(r->w, HWT_FMT_STREAM_RECORDS, -1, -1, "synthesized");
	if (err < 0)
		return err;
	r->synth_stream = err;
	{
		/* attributed to the event that carries the sideband */
		const struct rec_event *sb = &r->ev[0];

		for (size_t i = 0; i < r->nev; i++) {
			if (r->ev[i].tracking)
				sb = &r->ev[i];
		}
		s.sample_type = sb->attr.sample_type;
		s.id = sb->nids ? sb->ids[0] : 0;
	}
	s.emit = synth_emit;
	s.ctx = r;
	if (hwt_coll_target_is_system(t)) {
		s.skip_pid = hwt_coll_target_child(t);
		return hwt_coll_synth_all(&s);
	}
	/* Attached: each process once (tids lists all threads of each). */
	for (size_t i = 0; i < n && err >= 0; i++) {
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%d/maps", tids[i]);
		if (stat(path, &st) < 0)
			continue;
		/* Only thread-group leaders are listed in /proc; the other
		 * tids' /proc/TID exists too but describes the same process. */
		{
			char status[64], line[128];
			FILE *f;
			int tgid = tids[i];

			snprintf(status, sizeof(status), "/proc/%d/status", tids[i]);
			f = fopen(status, "r");
			if (f) {
				while (fgets(line, sizeof(line), f)) {
					if (sscanf(line, "Tgid: %d", &tgid) == 1)
						break;
				}
				fclose(f);
			}
			if (tgid != tids[i])
				continue;
		}
		err = hwt_coll_synth_process(&s, tids[i]);
		if (err == -ESRCH)
			err = 0;
	}
	return err;
}

int hwt_coll_rec_open(struct hwt_coll_rec *r, struct hwt_coll_target *t)
{
	struct hwt_fmt_writer_config wcfg;
	struct hwt_sym_aspace_config acfg;
	sigset_t set;
	int err;

	if (!r || !t || r->opened)
		return -HWT_EINVAL;
	r->opened = true;
	r->t = t;
	if (r->filter[0] && hwt_coll_target_is_system(t)) {
		/* Filters in files need a task: checked again now that the
		 * target is known to be the whole system. */
		char msg[512], tmp[sizeof(r->filter)];

		err = hwt_coll_pt_filter(
		    r->cfg.pt_filter, (unsigned)hwt_coll_pt_cap(&r->pmu, "num_address_ranges"),
		    HWT_COLL_PT_FILTER_CPU_WIDE, tmp, sizeof(tmp), msg, sizeof(msg));
		if (err < 0)
			return fail(r, err, "%s", msg);
	}
	err = open_events(r, t);
	if (err < 0)
		return err;
	/* Block the signals the loop handles before the writer starts its
	 * threads: they inherit the mask, and a process-directed SIGINT must
	 * not find a thread where it is not blocked (its default action would
	 * end the whole process with the file unfinished). */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGUSR2);
	if (pthread_sigmask(SIG_BLOCK, &set, &r->oldmask) == 0)
		r->masked = true;
	if (r->cfg.rename_old) {
		struct stat st;

		if (stat(r->cfg.output, &st) == 0 && S_ISREG(st.st_mode)) {
			char old[PATH_MAX];

			snprintf(old, sizeof(old), "%s.old", r->cfg.output);
			if (rename(r->cfg.output, old) < 0)
				return fail(r, -errno,
					    "cannot rename '%s' to '%s': %s; choose another "
					    "output with -o",
					    r->cfg.output, old, strerror(errno));
		}
	}
	hwt_fmt_writer_config_init(&wcfg);
	wcfg.log = r->cfg.logger;
	if (r->cfg.level > 0)
		wcfg.level = r->cfg.level;
	err = hwt_fmt_writer_open(&r->w, r->cfg.output, &wcfg);
	if (err < 0)
		return fail(r, err, "cannot write '%s': %s; choose a writable path with -o",
			    r->cfg.output, hwt_strerror(err));
	for (size_t i = 0; i < r->nrings; i++) {
		struct rec_ring *rg = &r->rings[i];
		char name[48];

		if (rg->cpu >= 0)
			snprintf(name, sizeof(name), "cpu%d", rg->cpu);
		else
			snprintf(name, sizeof(name), "tid%d", rg->tid);
		err =
		    hwt_fmt_writer_add_stream(r->w, HWT_FMT_STREAM_RECORDS, rg->cpu, rg->tid, name);
		if (err < 0)
			return fail(r, err, "cannot add a stream: %s", hwt_strerror(err));
		rg->stream = (uint32_t)err;
		if (rg->aux) {
			snprintf(name, sizeof(name), "pt.%s%d", rg->cpu >= 0 ? "cpu" : "tid",
				 rg->cpu >= 0 ? rg->cpu : rg->tid);
			err = hwt_fmt_writer_add_stream(r->w, HWT_FMT_STREAM_AUX, rg->cpu, rg->tid,
							name);
			if (err < 0)
				return fail(r, err, "cannot add a stream: %s", hwt_strerror(err));
			rg->aux_stream = (uint32_t)err;
		}
	}
	hwt_sym_aspace_config_init(&acfg);
	err = hwt_sym_aspace_alloc(&acfg, &r->as);
	if (err < 0)
		return fail(r, err, "out of memory");
	err = write_meta(r);
	if (err < 0)
		return fail(r, err, "cannot write metadata: %s", hwt_strerror(err));
	err = synthesize(r, t);
	if (err < 0)
		return fail(r, err, "cannot describe the running processes: %s", hwt_strerror(err));
	if (hits_fit(r) < 0)
		return -ENOMEM;
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (r->epfd < 0)
		return fail(r, -errno, "epoll: %s", strerror(errno));
	for (size_t i = 0; i < r->nrings; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i};

		if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->rings[i].fd, &ev) < 0)
			return fail(r, -errno, "epoll: %s", strerror(errno));
	}
	if (r->cfg.control_fifo) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_CTL};
		char msg[512];

		err = hwt_coll_ctl_open(&r->ctl, r->cfg.control_fifo, r->cfg.ack_fifo, msg,
					sizeof(msg));
		if (err < 0)
			return fail(r, err, "%s", msg);
		if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->ctl.fd, &ev) < 0)
			return fail(r, -errno, "epoll: %s", strerror(errno));
	}
	if (r->cfg.pt_snapshot) {
		sigset_t u;
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_USR2};

		sigemptyset(&u);
		sigaddset(&u, SIGUSR2);
		r->usr2_fd = signalfd(-1, &u, SFD_CLOEXEC | SFD_NONBLOCK);
		if (r->usr2_fd < 0 || epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->usr2_fd, &ev) < 0)
			return fail(r, -errno, "signalfd: %s", strerror(errno));
	}
	return 0;
}

static double elapsed(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Build-ids of every object a sample hit, the losses, the time range. */
static int finish(struct hwt_coll_rec *r)
{
	struct hwt_fmt_writer_stats ws;
	char key[PATH_MAX + 16];
	uint8_t id[64];
	int err = 0, n;

	for (size_t i = 0; i < hwt_sym_aspace_nobjects(r->as) && i < r->hitcap; i++) {
		struct hwt_sym_aspace_object o;

		/* dwarf call stacks are unwound later, through objects no
		 * sample's ip named: every mapped object's id is kept. */
		if ((!r->hit[i] && r->cfg.callgraph != HWT_COLL_CG_DWARF) ||
		    hwt_sym_aspace_object(r->as, (uint32_t)i, &o) < 0 || o.path[0] != '/' ||
		    !strncmp(o.path, "//", 2))
			continue;
		n = o.build_id_len ? (int)o.build_id_len
				   : hwt_sym_build_id_read(o.path, id, sizeof(id));
		if (n <= 0)
			continue;
		snprintf(key, sizeof(key), HWT_META_BUILDID_PREFIX "%s", o.path);
		err |= hwt_fmt_writer_meta_bytes(r->w, key, o.build_id_len ? o.build_id : id,
						 (size_t)n);
	}
	if (r->kernel_hit) {
		n = hwt_coll_kernel_build_id(r->cfg.sysfs_root, id, sizeof(id));
		if (n > 0)
			err |= hwt_fmt_writer_meta_bytes(
			    r->w, HWT_META_BUILDID_PREFIX "[kernel.kallsyms]", id, (size_t)n);
	}
	if (r->time_min) {
		err |= hwt_fmt_writer_meta_u64(r->w, HWT_META_TIME_START, r->time_min);
		err |= hwt_fmt_writer_meta_u64(r->w, HWT_META_TIME_END, r->time_max);
	}
	err |= hwt_fmt_writer_meta_u64(r->w, "record.samples", r->st.samples);
	err |= write_losses(r);
	r->st.aux_gaps = r->aux_st.gaps;
	if (r->noverruns) {
		uint8_t *b = malloc(r->noverruns * 8);

		err |= hwt_fmt_writer_meta_u64(r->w, "pt.overruns", r->noverruns);
		for (size_t i = 0; b && i < r->noverruns; i++)
			hwt_put_le64(b + 8 * i, r->overrun_times[i]);
		if (b)
			err |= hwt_fmt_writer_meta_bytes(r->w, "pt.overrun_times", b,
							 r->noverruns * 8);
		free(b);
	}
	/* Flushed first, so that the byte counts are the final ones (only the
	 * index and trailer follow). */
	err |= hwt_fmt_writer_flush(r->w);
	hwt_fmt_writer_stats(r->w, &ws);
	r->st.writer_dropped = ws.dropped_bytes;
	{
		int cerr = hwt_fmt_writer_close(r->w);
		struct stat st;

		r->w = NULL;
		if (stat(r->cfg.output, &st) == 0)
			r->st.file_bytes = (uint64_t)st.st_size;
		r->st.raw_bytes = ws.raw_bytes;
		if (cerr < 0)
			return fail(r, cerr, "cannot finish '%s': %s", r->cfg.output,
				    hwt_strerror(cerr));
	}
	return err < 0 ? fail(r, -ENOMEM, "cannot write metadata") : 0;
}

int hwt_coll_rec_run(struct hwt_coll_rec *r)
{
	struct epoll_event evs[64];
	int tfds[64], err, werr = 0;
	bool stop = false; /* "stop" on the control FIFO */
	bool flushed = false;
	size_t ntfds;

	if (!r || !r->w || r->done)
		return -HWT_EINVAL;
	r->done = true;
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	/* A launched command's events start at its exec (enable_on_exec), so
	 * hwtrace's own start-up is not recorded; the others start now, before
	 * a command launched with -a is released, so that its exec and
	 * mappings are seen. */
	if (hwt_coll_target_is_system(r->t) || hwt_coll_target_child(r->t) <= 0)
		ioctl_all(r, PERF_EVENT_IOC_ENABLE);
	err = hwt_coll_target_start(r->t);
	if (err < 0) {
		/* The command could not exec: the target says why. */
		hwt_fmt_writer_close(r->w);
		r->w = NULL;
		remove_output(r->cfg.output);
		return err;
	}
	ntfds = hwt_coll_target_pollfds(r->t, tfds, HWT_ARRAY_SIZE(tfds));
	for (size_t i = 0; i < ntfds; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_TARGET | i};

		epoll_ctl(r->epfd, EPOLL_CTL_ADD, tfds[i], &ev);
	}
	for (;;) {
		int n = epoll_wait(r->epfd, evs, (int)HWT_ARRAY_SIZE(evs), POLL_MS), w;

		if (n < 0 && errno != EINTR) {
			err = fail(r, -errno, "epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;

			if (tag < TAG_TARGET && (evs[i].events & (EPOLLHUP | EPOLLERR))) {
				/* The events' task is gone: nothing more will come from
				 * this buffer except what it holds (drained below). */
				struct rec_ring *rg = &r->rings[tag];

				if (!rg->hup) {
					rg->hup = true;
					epoll_ctl(r->epfd, EPOLL_CTL_DEL, rg->fd, NULL);
				}
			} else if (tag == TAG_USR2) {
				struct signalfd_siginfo si;

				while (read(r->usr2_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
					;
				werr = snapshot(r, false);
			} else if (tag == TAG_CTL) {
				int cmd;

				while ((cmd = hwt_coll_ctl_next(&r->ctl)) != HWT_COLL_CTL_NONE) {
					if (cmd == HWT_COLL_CTL_SNAPSHOT && r->cfg.pt_snapshot &&
					    !werr)
						werr = snapshot(r, false);
					else if (cmd == HWT_COLL_CTL_STOP)
						stop = true;
				}
			}
		}
		if (!werr)
			werr = drain(r);
		if (werr) {
			err = fail(r, werr, "cannot write '%s': %s (recording stopped)",
				   r->cfg.output, hwt_strerror(werr));
			break;
		}
		if (stop) {
			r->st.interrupted = true;
			break;
		}
		w = hwt_coll_target_wait(r->t, 0);
		if (w == HWT_COLL_WAIT_EXITED || w == HWT_COLL_WAIT_INTERRUPTED)
			break;
		/* Asked to stop, but the command runs on: what is recorded
		 * goes to disk now (a SIGKILL may follow). */
		if (!flushed && hwt_coll_target_interrupted(r->t)) {
			flushed = true;
			werr = hwt_fmt_writer_flush(r->w);
			if (werr) {
				err = fail(r, werr, "cannot write '%s': %s (recording stopped)",
					   r->cfg.output, hwt_strerror(werr));
				break;
			}
		}
		if (w < 0) {
			err = fail(r, w, "waiting for the target: %s", hwt_strerror(w));
			break;
		}
	}
	/* A simulated PMU may still be writing what the ended command did:
	 * drain until it is all in (the kernel's is at once). */
	for (int i = 0; i < 12000 && !werr; i++) {
		struct timespec ts = {0, 5 * 1000 * 1000};
		int s = hwt_psys_settle(r->cfg.psys);

		if (s <= 0)
			break;
		werr = drain(r);
		nanosleep(&ts, NULL);
	}
	/* Stop the events, then take everything they wrote. */
	r->stopping = true;
	if (r->cfg.pt_snapshot) {
		werr = snapshot(r, true);
	} else {
		ioctl_all(r, PERF_EVENT_IOC_DISABLE);
		werr = drain(r);
	}
	r->st.seconds = elapsed(&r->t0);
	r->st.exit_status = hwt_coll_target_exit_status(r->t);
	r->st.interrupted = r->st.interrupted || hwt_coll_target_interrupted(r->t);
	{
		int ferr = finish(r);

		if (!err)
			err = werr ? fail(r, werr, "cannot write '%s': %s", r->cfg.output,
					  hwt_strerror(werr))
				   : ferr;
	}
	return err;
}

void hwt_coll_rec_stats(const struct hwt_coll_rec *r, struct hwt_coll_rec_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!r)
		return;
	*st = r->st;
	st->overrun_times = r->overrun_times;
	st->aux_overruns = r->noverruns;
	st->first_time = r->time_min;
	if (r->nev)
		snprintf(st->event, sizeof(st->event), "%.63s", r->ev[0].name);
	if (r->w) {
		struct hwt_fmt_writer_stats ws;

		hwt_fmt_writer_stats(r->w, &ws);
		st->raw_bytes = ws.raw_bytes;
		st->file_bytes = ws.file_bytes;
	}
}

void hwt_coll_rec_free(struct hwt_coll_rec *r)
{
	if (!r)
		return;
	if (r->w) {
		/* Opened but never run (or run failed early): keep no empty file
		 * that looks like a recording. */
		hwt_fmt_writer_close(r->w);
		remove_output(r->cfg.output);
	}
	for (size_t i = 0; i < r->nrings; i++) {
		struct rec_ring *rg = &r->rings[i];

		if (rg->aux)
			hwt_psys_munmap(r->cfg.psys, rg->aux, rg->aux_size);
		if (rg->base)
			hwt_psys_munmap(r->cfg.psys, rg->base, rg->map_len);
		free(rg->scratch);
	}
	free(r->rings);
	for (size_t i = 0; i < r->nfds; i++)
		hwt_psys_close(r->cfg.psys, r->fds[i]);
	free(r->fds);
	free(r->fd_ev);
	free(r->fd_ring);
	free(r->overrun_times);
	for (size_t i = 0; i < r->nev; i++)
		free(r->ev[i].ids);
	free(r->ev);
	hwt_pmc_evlist_free(r->evlist);
	hwt_sym_aspace_free(r->as);
	free(r->hit);
	if (r->epfd >= 0)
		close(r->epfd);
	if (r->usr2_fd >= 0)
		close(r->usr2_fd);
	hwt_coll_ctl_close(&r->ctl);
	if (r->masked) {
		/* Drop what arrived for us while blocked, then restore. */
		sigset_t set;
		struct timespec zero = {0, 0};

		sigemptyset(&set);
		sigaddset(&set, SIGUSR2);
		while (sigtimedwait(&set, NULL, &zero) > 0)
			;
		/* A snapshot asked for after the end (a script sending SIGUSR2
		 * in a loop) must not kill us once unblocked. */
		if (r->cfg.pt_snapshot)
			signal(SIGUSR2, SIG_IGN);
		pthread_sigmask(SIG_SETMASK, &r->oldmask, NULL);
	}
	free(r);
}
