/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/bpf_run.c - the BPF back end's runner: creates the maps the
 * generated programs share (libbpf's low-level API: bpf_map_create,
 * bpf_prog_load; no object file, no compiler), loads each probe's program
 * and keeps the verifier's log when it is refused, attaches programs to
 * the same perf events the sampling path opens (PERF_EVENT_IOC_SET_BPF),
 * reads the ring buffer (printf, exit, print, clear) and, when an
 * aggregation is printed, merges its per-CPU map into the runtime's copy.
 *
 * Which tasks are traced. Programs on perf events of their own (profile,
 * software, hardware) see only the tasks their events follow. A BPF
 * program on a tracepoint runs for every task in the system, and uprobe
 * events are opened system-wide (their breakpoints live in the object,
 * and a child's inherited event would get a probe without the program),
 * so those programs look the task up in a map of traced processes (or
 * threads, with --no-inherit): filled with the targets at the start, by a
 * program on sched:sched_process_exec when a launched command execs, and
 * by one on sched:sched_process_fork for the children of traced processes.
 */
#include "probe/probe_bpf_int.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perfsys/perfsys.h"

#define LOG_SIZE (1u << 20)

struct prb_bpf {
	struct hwt_probe_rt *rt;
	const struct hwt_probe_prog *prog;
	struct prb_bpf_target tgt;
	struct prb_bpf_layout lay;
	int *map_fd; /* per slot, -1 when not created */
	size_t nslots;
	struct prb_bpf_code *code; /* per probe */
	int *prog_fd;		   /* per probe, -1 */
	char **why;		   /* per probe: why not BPF */
	char **log;		   /* per probe: the verifier's log */
	int *ev_fd;
	size_t *ev_probe;
	size_t nevs, evcap;
	int helper_fd[2]; /* exec gate, fork follow programs */
	int helper_ev[2];
	struct ring_buffer *ring;
	int ncpus;
	enum prb_bpf_filter filter;
	struct prb_agg_source src;
	uint8_t *vals; /* per-CPU values of one key */
	size_t vals_size;
	uint64_t *ips; /* a stack map entry */
	bool exited;
	int err; /* the first error of a ring buffer callback */
};

static char *dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *dupf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

static void set_why(struct prb_bpf *b, size_t i, char *why)
{
	free(b->why[i]);
	b->why[i] = why;
}

/* ------------------------------------------------------------------------ */
/* Maps                                                                      */

static uint32_t round_pow2(uint64_t v)
{
	uint64_t p = 4096;

	while (p < v && p < (1ull << 30))
		p <<= 1;
	return (uint32_t)p;
}

static int create_map(struct prb_bpf *b, uint32_t slot)
{
	const struct prb_bpf_layout *lay = &b->lay;
	struct bpf_map_create_opts o;
	enum bpf_map_type type;
	uint32_t ksz = 4, vsz, n;
	char name[16];
	int fd;

	memset(&o, 0, sizeof(o));
	o.sz = sizeof(o);
	switch (slot) {
	case PRB_MS_CONTROL:
		type = BPF_MAP_TYPE_ARRAY;
		vsz = sizeof(struct prb_bpf_control);
		n = 1;
		snprintf(name, sizeof(name), "hwt_control");
		break;
	case PRB_MS_SCRATCH: {
		uint32_t need = lay->scratch_header;

		for (size_t i = 0; i < b->prog->nprobes; i++)
			if (b->code[i].insns && b->code[i].scratch_used > need)
				need = b->code[i].scratch_used;
		type = BPF_MAP_TYPE_PERCPU_ARRAY;
		vsz = need;
		n = (uint32_t)b->prog->nprobes;
		snprintf(name, sizeof(name), "hwt_scratch");
		break;
	}
	case PRB_MS_ZERO:
		type = BPF_MAP_TYPE_ARRAY;
		vsz = lay->zero_size;
		n = 1;
		o.map_flags = BPF_F_RDONLY_PROG;
		snprintf(name, sizeof(name), "hwt_zero");
		break;
	case PRB_MS_RING:
		type = BPF_MAP_TYPE_RINGBUF;
		ksz = vsz = 0;
		n = round_pow2(lay->lim.bufsize);
		snprintf(name, sizeof(name), "hwt_ring");
		break;
	case PRB_MS_STACKS:
		type = BPF_MAP_TYPE_STACK_TRACE;
		vsz = 8 * lay->stack_depth;
		n = lay->lim.nstacks;
		snprintf(name, sizeof(name), "hwt_stacks");
		break;
	case PRB_MS_SELF:
	case PRB_MS_SELF_STR:
		type = BPF_MAP_TYPE_HASH;
		ksz = 8;
		vsz = slot == PRB_MS_SELF ? 8 : lay->sv_size;
		n = lay->self_entries;
		o.map_flags = BPF_F_NO_PREALLOC;
		snprintf(name, sizeof(name), slot == PRB_MS_SELF ? "hwt_self" : "hwt_self_str");
		break;
	case PRB_MS_TARGETS:
		type = BPF_MAP_TYPE_HASH;
		vsz = 8;
		n = 65536;
		o.map_flags = BPF_F_NO_PREALLOC;
		snprintf(name, sizeof(name), "hwt_targets");
		break;
	default: {
		const struct prb_bpf_agg_layout *al = &lay->aggs[slot - PRB_MS_AGG0];

		/* aggregations per CPU; a plain map's values are shared */
		type = b->prog->aggs[slot - PRB_MS_AGG0].plain ? BPF_MAP_TYPE_HASH
							       : BPF_MAP_TYPE_PERCPU_HASH;
		ksz = al->key_size;
		vsz = al->value_size;
		n = al->max_entries;
		o.map_flags = BPF_F_NO_PREALLOC;
		snprintf(name, sizeof(name), "hwt_agg%u", (slot - PRB_MS_AGG0) % 10000);
	}
	}
	fd = bpf_map_create(type, name, ksz, vsz, n, &o);
	if (fd < 0)
		return fd;
	b->map_fd[slot] = fd;
	return 0;
}

/* Why the first map could not be made, for people. */
static char *map_error(int err)
{
	if (err == -EPERM || err == -EACCES)
		return dupf("no permission to use BPF (%s): BPF needs root, or CAP_BPF with "
			    "CAP_PERFMON",
			    strerror(-err));
	if (err == -ENOSYS)
		return dupf("this kernel has no BPF system call (CONFIG_BPF_SYSCALL)");
	if (err == -EINVAL)
		return dupf("this kernel lacks a BPF map type hwtrace needs (BPF ring buffers "
			    "need Linux 5.8)");
	return dupf("cannot create a BPF map: %s", strerror(-err));
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */

static const char *type_name(enum bpf_prog_type t)
{
	switch (t) {
	case BPF_PROG_TYPE_KPROBE:
		return "kprobe";
	case BPF_PROG_TYPE_TRACEPOINT:
		return "tracepoint";
	case BPF_PROG_TYPE_PERF_EVENT:
		return "perf_event";
	default:
		return "?";
	}
}

/* The last line of the verifier's log that says something. */
static void log_reason(const char *log, char *out, size_t len)
{
	const char *end = log + strlen(log), *s, *e;

	out[0] = '\0';
	while (end > log) {
		e = end;
		while (e > log && (e[-1] == '\n' || e[-1] == ' '))
			e--;
		s = e;
		while (s > log && s[-1] != '\n')
			s--;
		if (e > s && strncmp(s, "processed ", 10) && strncmp(s, "verification time", 17)) {
			snprintf(out, len, "%.*s", (int)(e - s), s);
			return;
		}
		end = s;
	}
}

static int load_code(struct prb_bpf *b, struct prb_bpf_code *c, const char *name, int *fd_out,
		     char **why, char **log)
{
	struct bpf_prog_load_opts o;
	char *buf;
	int fd;

	for (size_t r = 0; r < c->nrelocs; r++) {
		struct bpf_insn *in = &c->insns[c->relocs[r]];
		uint32_t slot = (uint32_t)in->imm;
		int err;

		if (slot >= b->nslots)
			return -HWT_EINTERNAL;
		if (b->map_fd[slot] < 0 && (err = create_map(b, slot)) < 0) {
			*why = slot == PRB_MS_RING && err == -EINVAL
				   ? dupf("this kernel has no BPF ring buffer (Linux 5.8)")
				   : dupf("cannot create a BPF map: %s", strerror(-err));
			return -HWT_ENOTSUP;
		}
		in->imm = b->map_fd[slot];
	}
	memset(&o, 0, sizeof(o));
	o.sz = sizeof(o);
	fd = bpf_prog_load(c->type, name, "Dual BSD/GPL", c->insns, c->n, &o);
	if (fd >= 0) {
		*fd_out = fd;
		return 0;
	}
	fd = -errno;
	/* EACCES is the verifier's refusal; EPERM a missing capability */
	if (fd == -EPERM) {
		*why = dupf("no permission to load BPF programs (%s): run as root", strerror(-fd));
		return -HWT_ENOTSUP;
	}
	/* again, for the verifier's log */
	if (!(buf = calloc(1, LOG_SIZE)))
		return -ENOMEM;
	o.log_buf = buf;
	o.log_size = LOG_SIZE;
	o.log_level = 1;
	fd = bpf_prog_load(c->type, name, "Dual BSD/GPL", c->insns, c->n, &o);
	if (fd >= 0) {
		/* accepted the second time (a transient failure) */
		free(buf);
		*fd_out = fd;
		return 0;
	}
	{
		char reason[256];

		log_reason(buf, reason, sizeof(reason));
		*why = dupf("the BPF verifier rejected its %s program: %s", type_name(c->type),
			    reason[0] ? reason : strerror(errno));
	}
	*log = buf;
	return -HWT_ENOTSUP;
}

int prb_bpf_alloc(struct prb_bpf **out, struct hwt_probe_rt *rt, const struct prb_bpf_target *t)
{
	const struct hwt_probe_prog *prog = rt->prog;
	struct prb_bpf_limits lim = {
	    .aggsize = rt->cfg.aggsize,
	    .dynvarsize = rt->cfg.dynvarsize,
	    .bufsize = rt->cfg.bufsize,
	    .strsize = rt->cfg.strsize,
	    .nstacks = rt->cfg.nstacks,
	};
	struct prb_bpf *b;
	int err = -ENOMEM;

	*out = NULL;
	if (!(b = calloc(1, sizeof(*b))))
		return -ENOMEM;
	b->rt = rt;
	b->prog = prog;
	b->tgt = *t;
	b->helper_fd[0] = b->helper_fd[1] = b->helper_ev[0] = b->helper_ev[1] = -1;
	if ((err = prb_bpf_layout_init(&b->lay, prog, &lim)) < 0)
		goto error;
	{
		FILE *f = fopen("/proc/sys/kernel/perf_event_max_stack", "re");
		unsigned d = 0;

		if (f) {
			if (fscanf(f, "%u", &d) == 1 && d && d < b->lay.stack_depth)
				b->lay.stack_depth = d;
			fclose(f);
		}
	}
	err = -ENOMEM;
	b->nslots = PRB_MS_AGG0 + prog->naggs;
	b->map_fd = malloc(b->nslots * sizeof(*b->map_fd));
	b->code = calloc(prog->nprobes + 1, sizeof(*b->code));
	b->prog_fd = malloc((prog->nprobes + 1) * sizeof(*b->prog_fd));
	b->why = calloc(prog->nprobes + 1, sizeof(*b->why));
	b->log = calloc(prog->nprobes + 1, sizeof(*b->log));
	b->ips = calloc(b->lay.stack_depth + 1, sizeof(*b->ips));
	if (!b->map_fd || !b->code || !b->prog_fd || !b->why || !b->log || !b->ips)
		goto error;
	for (size_t i = 0; i < b->nslots; i++)
		b->map_fd[i] = -1;
	for (size_t i = 0; i < prog->nprobes; i++)
		b->prog_fd[i] = -1;
	if ((b->ncpus = libbpf_num_possible_cpus()) <= 0) {
		err = -HWT_ENOTSUP;
		goto error;
	}
	if (t->cpus && t->ncpus)
		b->filter = PRB_FILTER_NONE;
	else
		b->filter = t->no_inherit ? PRB_FILTER_TID : PRB_FILTER_TGID;
	*out = b;
	return 0;
error:
	prb_bpf_free(b);
	return err;
}

static bool filtered_kind(enum hwt_probe_kind k)
{
	return k == HWT_PROBE_TRACEPOINT || k == HWT_PROBE_UPROBE || k == HWT_PROBE_URETPROBE ||
	       k == HWT_PROBE_KPROBE || k == HWT_PROBE_KRETPROBE;
}

int prb_bpf_load(struct prb_bpf *b, const bool *want, int32_t target)
{
	const struct hwt_probe_prog *prog = b->prog;
	int err;

	/* all programs first: the scratch map's size is the largest need */
	for (size_t i = 0; i < prog->nprobes; i++) {
		char why[256];
		enum prb_bpf_filter f;

		if (!want[i])
			continue;
		f = filtered_kind(prog->probes[i].info.kind) ? b->filter : PRB_FILTER_NONE;
		err = prb_bpf_gen(prog, i, &b->lay, f, target, &b->code[i], why, sizeof(why));
		if (err == -HWT_ENOTSUP)
			set_why(b, i, dupf("no BPF form for %s", why));
		else if (err < 0)
			return err;
	}
	/* the maps every program uses: the first tells whether BPF works */
	if ((err = create_map(b, PRB_MS_CONTROL)) < 0) {
		for (size_t i = 0; i < prog->nprobes; i++)
			if (want[i] && !b->why[i])
				set_why(b, i, map_error(err));
		return 0;
	}
	for (size_t i = 0; i < prog->nprobes; i++) {
		char name[24], *why = NULL, *log = NULL;

		if (!want[i] || !b->code[i].insns)
			continue;
		snprintf(name, sizeof(name), "hwt_p%u", (unsigned)(i % 10000));
		err = load_code(b, &b->code[i], name, &b->prog_fd[i], &why, &log);
		if (err == -HWT_ENOTSUP) {
			set_why(b, i, why ? why : dupf("cannot load its BPF program"));
			b->log[i] = log;
			continue;
		}
		free(why);
		free(log);
		if (err < 0)
			return err;
	}
	return 0;
}

bool prb_bpf_loaded(const struct prb_bpf *b, size_t i)
{
	return b && b->prog_fd[i] >= 0;
}

const char *prb_bpf_why(const struct prb_bpf *b, size_t i)
{
	return b ? b->why[i] : NULL;
}

const char *prb_bpf_log(const struct prb_bpf *b, size_t i)
{
	return b ? b->log[i] : NULL;
}

size_t prb_bpf_insns(const struct prb_bpf *b, size_t i)
{
	return b ? b->code[i].n : 0;
}

void prb_bpf_unload(struct prb_bpf *b, size_t i, const char *why)
{
	for (size_t e = 0; e < b->nevs; e++) {
		if (b->ev_probe[e] == i && b->ev_fd[e] >= 0) {
			hwt_psys_close(b->rt->cfg.psys, b->ev_fd[e]);
			b->ev_fd[e] = -1;
		}
	}
	if (b->prog_fd[i] >= 0)
		close(b->prog_fd[i]);
	b->prog_fd[i] = -1;
	if (why)
		set_why(b, i, dupf("%s", why));
}

/* ------------------------------------------------------------------------ */
/* Attaching                                                                 */

static int add_event(struct prb_bpf *b, size_t probe, int fd)
{
	if (b->nevs == b->evcap) {
		size_t cap = b->evcap ? b->evcap * 2 : 16;
		int *f = realloc(b->ev_fd, cap * sizeof(*f));
		size_t *p;

		if (!f)
			return -ENOMEM;
		b->ev_fd = f;
		if (!(p = realloc(b->ev_probe, cap * sizeof(*p))))
			return -ENOMEM;
		b->ev_probe = p;
		b->evcap = cap;
	}
	b->ev_fd[b->nevs] = fd;
	b->ev_probe[b->nevs++] = probe;
	return 0;
}

static int open_attach(struct prb_bpf *b, size_t probe, struct perf_event_attr *attr, int pid,
		       int cpu, int prog_fd, int *fd_out)
{
	struct hwt_psys *ps = b->rt->cfg.psys;
	int fd = hwt_psys_event_open(ps, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC), err;

	if (fd < 0)
		return fd;
	if ((err = hwt_psys_ioctl(ps, fd, PERF_EVENT_IOC_SET_BPF, (unsigned long)prog_fd)) < 0 ||
	    (!attr->disabled && (err = hwt_psys_ioctl(ps, fd, PERF_EVENT_IOC_ENABLE, 0)) < 0)) {
		hwt_psys_close(ps, fd);
		return err;
	}
	if (fd_out) {
		*fd_out = fd;
		return 0;
	}
	if ((err = add_event(b, probe, fd)) < 0) {
		hwt_psys_close(ps, fd);
		return err;
	}
	return 0;
}

int prb_bpf_attach(struct prb_bpf *b, size_t i, const struct perf_event_attr *base)
{
	const struct prb_bpf_target *t = &b->tgt;
	enum hwt_probe_kind k = b->prog->probes[i].info.kind;
	struct perf_event_attr attr = *base;
	int first_cpu = t->cpus && t->ncpus ? t->cpus[0] : 0, err;

	attr.sample_type = 0;
	attr.read_format = 0;
	attr.mmap = attr.mmap2 = attr.comm = attr.comm_exec = attr.task = 0;
	attr.watermark = 0;
	attr.wakeup_events = 1;
	attr.sample_id_all = 0;
	if (k == HWT_PROBE_INTERVAL) {
		/* one timer on one CPU, as bpftrace's: one a CPU fires N times
		 * a period on a busy machine, and the CPUs race past exit() */
		attr.disabled = attr.enable_on_exec = attr.inherit = 0;
		err = open_attach(b, i, &attr, -1, first_cpu, b->prog_fd[i], NULL);
		if (err < 0)
			set_why(
			    b, i,
			    dupf("cannot attach its BPF program to a timer: %s", strerror(-err)));
		return err;
	}
	if (filtered_kind(k)) {
		/* one event for the whole system; the program filters */
		attr.disabled = attr.enable_on_exec = attr.inherit = 0;
		attr.sample_period = 1;
		attr.freq = 0;
		err = open_attach(b, i, &attr, -1, first_cpu, b->prog_fd[i], NULL);
		if (err == -EACCES && k == HWT_PROBE_TRACEPOINT)
			set_why(b, i,
				dupf("the kernel refused to attach its BPF program (EACCES): it "
				     "reads past the tracepoint's record"));
		else if (err < 0)
			set_why(b, i,
				dupf("cannot attach its BPF program to a %s event: %s",
				     type_name(b->code[i].type), strerror(-err)));
		return err;
	}
	/* profile, software, hardware: the sampling path's events */
	attr.disabled = attr.enable_on_exec = t->enable_on_exec;
	if (t->cpus && t->ncpus) {
		for (size_t c = 0; c < t->ncpus; c++)
			if ((err = open_attach(b, i, &attr, -1, t->cpus[c], b->prog_fd[i], NULL)) <
			    0)
				goto fail;
	} else if (t->no_inherit) {
		for (size_t th = 0; th < t->ntids; th++)
			if ((err = open_attach(b, i, &attr, t->tids[th], -1, b->prog_fd[i], NULL)) <
			    0)
				goto fail;
	} else {
		attr.inherit = 1;
		for (size_t c = 0; c < t->nonline; c++)
			for (size_t th = 0; th < t->ntids; th++)
				if ((err = open_attach(b, i, &attr, t->tids[th], t->online[c],
						       b->prog_fd[i], NULL)) < 0)
					goto fail;
	}
	return 0;
fail:
	set_why(b, i, dupf("cannot attach its BPF program to its perf events: %s", strerror(-err)));
	return err;
}

/* A tracepoint's id and the offset of one of its fields. */
static int tp_field(const struct prb_bpf *b, const char *sub, const char *ev, const char *field,
		    uint32_t *id, uint32_t *off)
{
	struct prb_tp_format *f = NULL;
	const struct prb_tp_field *fl;
	int err = prb_tp_format_load(b->tgt.tracefs_root, sub, ev, &f);

	if (err < 0)
		return err;
	if (!(fl = prb_tp_format_field(f, field)) || fl->size != 4) {
		prb_tp_format_free(f);
		return -HWT_EFORMAT;
	}
	*id = f->id;
	*off = fl->offset;
	prb_tp_format_free(f);
	return 0;
}

static int attach_helper(struct prb_bpf *b, int which)
{
	static const char *const ev[2] = {"sched_process_exec", "sched_process_fork"};
	static const char *const field[2] = {"pid", "child_pid"};
	struct prb_bpf_code code;
	struct perf_event_attr attr;
	uint32_t id, off;
	char *why = NULL, *log = NULL;
	int err;

	if ((err = tp_field(b, "sched", ev[which], field[which], &id, &off)) < 0)
		return err;
	err = which ? prb_bpf_gen_fork_follow(&b->lay, off, &code)
		    : prb_bpf_gen_exec_gate(&b->lay, off, &code);
	if (err < 0)
		return err;
	err = load_code(b, &code, which ? "hwt_follow" : "hwt_exec", &b->helper_fd[which], &why,
			&log);
	prb_bpf_code_fini(&code);
	free(why);
	free(log);
	if (err < 0)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = id;
	attr.sample_period = 1;
	attr.wakeup_events = 1;
	return open_attach(b, SIZE_MAX, &attr, -1,
			   b->tgt.online && b->tgt.nonline ? b->tgt.online[0] : 0,
			   b->helper_fd[which], &b->helper_ev[which]);
}

/* Tgid of a thread, from /proc. */
static int tgid_of(const char *proc_root, int tid)
{
	char path[300], line[128];
	FILE *f;
	int tgid = -1;

	snprintf(path, sizeof(path), "%s/%d/status", proc_root ? proc_root : "/proc", tid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

static int add_target(struct prb_bpf *b, uint32_t id)
{
	uint64_t one = 1;

	return bpf_map_update_elem(b->map_fd[PRB_MS_TARGETS], &id, &one, BPF_ANY);
}

static int merge_agg(void *ctx, size_t agg, struct hwt_rep_agg *into);
static int clear_agg(void *ctx, size_t agg);
static int map_rows(void *ctx, size_t map, struct prb_tmap *into);
static int map_op(void *ctx, int op, size_t map, const struct hwt_rep_val *key, int64_t *v);
static int on_record(void *ctx, void *data, size_t size);

int prb_bpf_start(struct prb_bpf *b)
{
	const struct prb_bpf_target *t = &b->tgt;
	struct prb_bpf_control ctl;
	bool any = false;
	uint32_t zero = 0;
	int err;

	for (size_t i = 0; i < b->prog->nprobes; i++)
		any |= b->prog_fd[i] >= 0;
	if (!any)
		return 0;
	memset(&ctl, 0, sizeof(ctl));
	{
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ctl.t0 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	if (b->map_fd[PRB_MS_TARGETS] >= 0) {
		if (t->enable_on_exec && t->ntids) {
			/* a launched command: traced from its exec */
			ctl.pending = (uint32_t)t->tids[0];
			if ((err = attach_helper(b, 0)) < 0) {
				ctl.pending = 0;
				if ((err = add_target(b, (uint32_t)t->tids[0])) < 0)
					return err;
			}
		} else {
			for (size_t th = 0; th < t->ntids; th++) {
				int id = b->filter == PRB_FILTER_TID
					     ? t->tids[th]
					     : tgid_of(t->proc_root, t->tids[th]);

				if (id > 0 && (err = add_target(b, (uint32_t)id)) < 0)
					return err;
			}
		}
		if (b->filter == PRB_FILTER_TGID && (err = attach_helper(b, 1)) < 0)
			hwt_log(&b->rt->cfg.log, HWT_LOG_WARN,
				"cannot follow the children of traced processes on the BPF path "
				"(sched:sched_process_fork: %s): children are not traced",
				hwt_strerror(err));
	}
	if ((err = bpf_map_update_elem(b->map_fd[PRB_MS_CONTROL], &zero, &ctl, BPF_ANY)) < 0)
		return err;
	if (b->map_fd[PRB_MS_RING] >= 0) {
		b->ring = ring_buffer__new(b->map_fd[PRB_MS_RING], on_record, b, NULL);
		if (!b->ring)
			return -errno;
	}
	b->src.merge = merge_agg;
	b->src.clear = clear_agg;
	b->src.map_rows = map_rows;
	b->src.map_op = map_op;
	b->src.ctx = b;
	prb_rt_set_source(b->rt, &b->src);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The ring buffer                                                           */

static int stack_key(struct prb_bpf *b, const uint8_t *kp, int64_t *out);

static int on_printf(struct prb_bpf *b, uint32_t fmt, const uint8_t *p, size_t len)
{
	const struct prb_fmt *f;
	int64_t args[PRB_MAX_PRINTF_ARGS];
	size_t a = 0, off = 0;
	int err;

	if (fmt >= b->prog->nfmts)
		return -HWT_EFORMAT;
	f = &b->prog->fmts[fmt];
	for (size_t i = 0; i < f->npieces && a < PRB_MAX_PRINTF_ARGS; i++) {
		const struct prb_fmt_piece *pc = &f->pieces[i];

		if (!pc->conv)
			continue;
		if (pc->stack) {
			int64_t id;

			if (off + 16 > len)
				return -HWT_EFORMAT;
			if ((err = stack_key(b, p + off, &id)) < 0)
				return err;
			args[a++] = id;
			off += 16;
		} else if (pc->conv == 's' || pc->conv == 'r') {
			uint32_t id;

			if (off + b->lay.sv_size > len)
				return -HWT_EFORMAT;
			if ((err = prb_rt_sv_id(b->rt, p + off, b->lay.lim.strsize, &id)) < 0)
				return err;
			args[a++] = id;
			off += b->lay.sv_size;
		} else {
			if (off + 8 > len)
				return -HWT_EFORMAT;
			args[a++] = (int64_t)hwt_le64(p + off);
			off += 8;
		}
	}
	return prb_rt_printf(b->rt, fmt, args);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct prb_bpf *b = ctx;
	const uint8_t *p = data;
	uint32_t kind, arg;
	int err = 0;

	if (size < sizeof(struct prb_bpf_rec)) {
		b->rt->stats.bad_samples++;
		return 0;
	}
	kind = hwt_le32(p);
	arg = hwt_le32(p + 4);
	if (b->exited && kind != PRB_RB_EXIT)
		return 0; /* in flight on other CPUs when exit() ran */
	switch (kind) {
	case PRB_RB_PRINTF:
		err = on_printf(b, arg, p + 8, size - 8);
		break;
	case PRB_RB_EXIT:
		b->exited = true;
		prb_rt_set_exited(b->rt);
		break;
	case PRB_RB_PRINT:
		err = prb_rt_print_top(b->rt, arg & 0xffff, arg >> 16);
		break;
	case PRB_RB_TIME:
	case PRB_RB_CAT:
		err =
		    prb_rt_text(b->rt, kind == PRB_RB_TIME ? PRB_I_TIME : PRB_I_CAT, arg, NULL, 0);
		break;
	case PRB_RB_JOIN: {
		/* 16 strings of strsize bytes, "" after the last (the ring
		 * buffer is read-only: copies) */
		const char *args[16] = {0};
		char *copies[16] = {0};
		size_t n = 0, ss = b->lay.lim.strsize;

		for (; n < 16 && 8 + (n + 1) * ss <= size && p[8 + n * ss]; n++) {
			if (!(copies[n] = strndup((const char *)p + 8 + n * ss, ss - 1)))
				break;
			args[n] = copies[n];
		}
		err = prb_rt_text(b->rt, PRB_I_JOIN, arg, args, n);
		for (size_t i = 0; i < n; i++)
			free(copies[i]);
		break;
	}
	case PRB_RB_CLEAR:
		err = prb_rt_clear_agg(b->rt, arg);
		break;
	default:
		err = -HWT_EFORMAT;
	}
	if (err == -HWT_EFORMAT || err == -HWT_EINVAL) {
		b->rt->stats.bad_samples++;
		return 0;
	}
	if (err < 0 && !b->err)
		b->err = err;
	/* stop consuming after exit(): END and the printout come next */
	return err < 0 ? err : b->exited ? 1 : 0;
}

int prb_bpf_poll_fd(const struct prb_bpf *b)
{
	return b && b->ring ? ring_buffer__epoll_fd(b->ring) : -1;
}

int prb_bpf_poll(struct prb_bpf *b)
{
	int err;

	if (!b || !b->ring)
		return 0;
	err = ring_buffer__consume(b->ring);
	if (b->err)
		return b->err;
	if (err < 0 && err != -EINTR)
		return err;
	if (!b->exited && b->map_fd[PRB_MS_CONTROL] >= 0) {
		/* exit() whose record was dropped (ring buffer full) */
		struct prb_bpf_control ctl;
		uint32_t zero = 0;

		if (!bpf_map_lookup_elem(b->map_fd[PRB_MS_CONTROL], &zero, &ctl) && ctl.exited) {
			b->exited = true;
			prb_rt_set_exited(b->rt);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Merging                                                                   */

static int per_cpu_values(struct prb_bpf *b, uint32_t vsize)
{
	size_t need = (size_t)b->ncpus * ((vsize + 7) & ~7u);

	if (need > b->vals_size) {
		uint8_t *v = realloc(b->vals, need);

		if (!v)
			return -ENOMEM;
		b->vals = v;
		b->vals_size = need;
	}
	return 0;
}

static int stack_key(struct prb_bpf *b, const uint8_t *kp, int64_t *out)
{
	uint64_t v = hwt_le64(kp), ret = hwt_le64(kp + 8);
	uint32_t sid = (uint32_t)v, hi = (uint32_t)(v >> 32), id;
	size_t n = 0;
	int err;

	if (sid == PRB_NO_STACK || b->map_fd[PRB_MS_STACKS] < 0) {
		*out = 0; /* the empty stack */
		return 0;
	}
	memset(b->ips, 0, 8 * (b->lay.stack_depth + 1));
	if (bpf_map_lookup_elem(b->map_fd[PRB_MS_STACKS], &sid, b->ips) < 0) {
		*out = 0;
		return 0;
	}
	while (n < b->lay.stack_depth && b->ips[n])
		n++;
	if (ret && n) {
		/* the caller after the leaf, unless the kernel put it there
		 * (from Linux 6.16), as the sampling path does */
		if (n < 2 || b->ips[1] != ret) {
			memmove(b->ips + 2, b->ips + 1, (n - 1) * sizeof(*b->ips));
			b->ips[1] = ret;
			n++;
		}
	}
	err = prb_rt_stack_ips(b->rt, hi == 0xffffffffu ? -1 : (int32_t)hi, b->ips, n, &id);
	*out = id;
	return err;
}

static int merge_agg(void *ctx, size_t agg, struct hwt_rep_agg *into)
{
	struct prb_bpf *b = ctx;
	const struct prb_agg *a = &b->prog->aggs[agg];
	const struct prb_bpf_agg_layout *al = &b->lay.aggs[agg];
	int fd = b->map_fd[PRB_MS_AGG0 + agg], err;
	uint32_t stride = (al->value_size + 7) & ~7u;
	uint8_t *key, *next;
	uint64_t *buckets = NULL;
	bool first = true;

	if (fd < 0)
		return 0;
	if ((err = per_cpu_values(b, al->value_size)) < 0)
		return err;
	key = malloc(al->key_size);
	next = malloc(al->key_size);
	if (al->nbuckets)
		buckets = malloc(al->nbuckets * sizeof(*buckets));
	if (!key || !next || (al->nbuckets && !buckets)) {
		err = -ENOMEM;
		goto out;
	}
	err = 0;
	while (!bpf_map_get_next_key(fd, first ? NULL : key, next)) {
		struct hwt_rep_val kv[HWT_REP_MAX_KEYS];
		struct hwt_rep_agg_part part;
		unsigned __int128 sum = 0, sq = 0;

		first = false;
		memcpy(key, next, al->key_size);
		if (bpf_map_lookup_elem(fd, key, b->vals) < 0)
			continue; /* deleted meanwhile */
		for (size_t k = 0; k < a->nkeys; k++) {
			const uint8_t *kp = key + al->key_off[k];
			uint32_t id;

			kv[k].type = a->key_types[k];
			switch (al->key_kind[k]) {
			case PRB_KEY_INT:
				kv[k].v = (int64_t)hwt_le64(kp);
				break;
			case PRB_KEY_STR:
				if ((err = prb_rt_sv_id(b->rt, kp, b->lay.lim.strsize, &id)) < 0)
					goto out;
				kv[k].v = id;
				break;
			case PRB_KEY_STACK:
				if ((err = stack_key(b, kp, &kv[k].v)) < 0)
					goto out;
				break;
			}
		}
		memset(&part, 0, sizeof(part));
		part.min = INT64_MAX;
		part.max = INT64_MIN;
		if (buckets)
			memset(buckets, 0, al->nbuckets * sizeof(*buckets));
		for (int c = 0; c < b->ncpus; c++) {
			const uint8_t *v = b->vals + (size_t)c * stride;
			uint64_t n = hwt_le64(v + PRB_AV_COUNT);

			if (!n)
				continue;
			part.count += n;
			if (!al->full)
				continue;
			sum += (unsigned __int128)hwt_le64(v + PRB_AV_SUM_HI) << 64 |
			       hwt_le64(v + PRB_AV_SUM_LO);
			if ((int64_t)hwt_le64(v + PRB_AV_MIN) < part.min)
				part.min = (int64_t)hwt_le64(v + PRB_AV_MIN);
			if ((int64_t)hwt_le64(v + PRB_AV_MAX) > part.max)
				part.max = (int64_t)hwt_le64(v + PRB_AV_MAX);
			if (al->sumsq_off)
				sq += (unsigned __int128)hwt_le64(v + al->sumsq_off + 8) << 64 |
				      hwt_le64(v + al->sumsq_off);
			for (uint32_t i = 0; i < al->nbuckets; i++)
				buckets[i] += hwt_le64(v + al->buckets_off + 8 * i);
		}
		if (!al->full) {
			/* count(): every update is 0 */
			part.min = part.max = 0;
		}
		part.sum_lo = (uint64_t)sum;
		part.sum_hi = (int64_t)(uint64_t)(sum >> 64);
		part.sumsq_lo = (uint64_t)sq;
		part.sumsq_hi = (uint64_t)(sq >> 64);
		part.buckets = buckets;
		part.nbuckets = al->nbuckets;
		if ((err = hwt_rep_agg_merge(into, kv, &part)) < 0)
			goto out;
	}
out:
	free(key);
	free(next);
	free(buckets);
	return err;
}

static int clear_agg(void *ctx, size_t agg)
{
	struct prb_bpf *b = ctx;
	int fd = b->map_fd[PRB_MS_AGG0 + agg];
	const size_t ks = b->lay.aggs[agg].key_size, max = b->lay.aggs[agg].max_entries;
	uint8_t *keys = NULL;
	size_t n = 0, cap = 0;

	if (fd < 0)
		return 0;
	/* The keys first, then their deletion: the map's probes still fire
	 * while it is cleared, and a system-wide one that counts syscalls
	 * (syscount.bt's END) adds back the key of our own bpf() calls as
	 * fast as a loop of "first key, delete it" takes it out. */
	for (;;) {
		if (n == cap) {
			uint8_t *k;

			cap = cap ? 2 * cap : 64;
			if (cap > max + 1)
				cap = max + 1;
			if (n == cap || !(k = realloc(keys, cap * ks)))
				break;
			keys = k;
		}
		if (bpf_map_get_next_key(fd, n ? keys + (n - 1) * ks : NULL, keys + n * ks))
			break;
		n++;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, keys + i * ks);
	free(keys);
	return 0;
}

/* A plain map's key or string value from the runtime's values. */
static int to_bpf(struct prb_bpf *b, uint32_t type, int64_t v, uint8_t *out)
{
	if (type == HWT_REP_INT) {
		memcpy(out, &v, 8);
		return 8;
	}
	if (type == HWT_REP_STR) {
		const char *s = hwt_rep_dict_str_get(prb_rt_dict(b->rt), (uint32_t)v);
		size_t n = s ? strnlen(s, b->lay.lim.strsize - 1) : 0;

		memset(out, 0, b->lay.sv_size);
		if (n)
			memcpy(out + 8, s, n);
		return (int)b->lay.sv_size;
	}
	return -HWT_ENOTSUP; /* a stack of the runtime's: no BPF stack id */
}

/* The runtime's value of a key slot or a value of a plain map. */
static int from_bpf(struct prb_bpf *b, uint32_t type, const uint8_t *p, int64_t *v)
{
	uint32_t id;
	int err;

	if (type == HWT_REP_INT) {
		*v = (int64_t)hwt_le64(p);
		return 0;
	}
	if (type == HWT_REP_STACK)
		return stack_key(b, p, v);
	if ((err = prb_rt_sv_id(b->rt, p, b->lay.lim.strsize, &id)) < 0)
		return err;
	*v = id;
	return 0;
}

static uint32_t value_type(const struct prb_agg *a)
{
	return a->vty.t == PRB_T_STR	 ? HWT_REP_STR
	       : a->vty.t == PRB_T_STACK ? HWT_REP_STACK
					 : HWT_REP_INT;
}

static int map_rows(void *ctx, size_t mi, struct prb_tmap *into)
{
	struct prb_bpf *b = ctx;
	const struct prb_agg *a = &b->prog->aggs[mi];
	const struct prb_bpf_agg_layout *al = &b->lay.aggs[mi];
	int fd = b->map_fd[PRB_MS_AGG0 + mi], err = 0;
	uint8_t *key, *next, *val;
	bool first = true;

	if (fd < 0)
		return 0; /* not BPF's: the runtime's own */
	key = malloc(al->key_size);
	next = malloc(al->key_size);
	val = malloc(al->value_size);
	if (!key || !next || !val) {
		err = -ENOMEM;
		goto out;
	}
	while (!bpf_map_get_next_key(fd, first ? NULL : key, next)) {
		struct hwt_rep_val kv[HWT_REP_MAX_KEYS];
		int64_t v;

		first = false;
		memcpy(key, next, al->key_size);
		if (bpf_map_lookup_elem(fd, key, val) < 0)
			continue;
		memset(kv, 0, sizeof(kv));
		for (size_t k = 0; k < a->nkeys && err >= 0; k++) {
			kv[k].type = a->key_types[k];
			err = from_bpf(b, a->key_types[k], key + al->key_off[k], &kv[k].v);
		}
		if (err >= 0)
			err = from_bpf(b, value_type(a), val, &v);
		if (err >= 0)
			err = prb_tmap_put(into, kv, v);
		if (err < 0)
			break;
	}
out:
	free(key);
	free(next);
	free(val);
	return err < 0 ? err : 1;
}

/* BEGIN and END (run by hwtrace) on a plain map the programs keep. */
static int map_op(void *ctx, int op, size_t mi, const struct hwt_rep_val *kv, int64_t *v)
{
	struct prb_bpf *b = ctx;
	const struct prb_agg *a = &b->prog->aggs[mi];
	const struct prb_bpf_agg_layout *al = &b->lay.aggs[mi];
	int fd = b->map_fd[PRB_MS_AGG0 + mi], n;
	uint8_t key[HWT_REP_MAX_KEYS * 8 + 8 + 4096], val[4096 + 8];

	if (fd < 0)
		return 0;
	if (op == PRB_MAP_CLEAR) {
		while (!bpf_map_get_next_key(fd, NULL, key))
			if (bpf_map_delete_elem(fd, key) < 0)
				break;
		return 1;
	}
	if (al->key_size > sizeof(key) || al->value_size > sizeof(val))
		return -HWT_ENOTSUP;
	memset(key, 0, al->key_size);
	for (size_t k = 0; k < a->nkeys; k++)
		if ((n = to_bpf(b, a->key_types[k], kv[k].v, key + al->key_off[k])) < 0)
			return n;
	switch (op) {
	case PRB_MAP_LOAD:
		if (bpf_map_lookup_elem(fd, key, val) < 0)
			*v = 0;
		else if ((n = from_bpf(b, value_type(a), val, v)) < 0)
			return n;
		return 1;
	case PRB_MAP_STORE:
		if ((n = to_bpf(b, value_type(a), *v, val)) < 0)
			return n;
		if (bpf_map_update_elem(fd, key, val, BPF_ANY) < 0) {
			b->rt->agg_drops[mi]++;
			b->rt->stats.agg_drops++;
		}
		return 1;
	case PRB_MAP_DELETE:
		bpf_map_delete_elem(fd, key);
		return 1;
	}
	return -HWT_EINVAL;
}

/* ------------------------------------------------------------------------ */
/* The end                                                                   */

int prb_bpf_finish(struct prb_bpf *b)
{
	struct hwt_probe_stats *st;
	uint32_t size;
	int err, fd;

	if (!b)
		return 0;
	if ((err = prb_bpf_poll(b)) < 0)
		return err;
	fd = b->map_fd[PRB_MS_SCRATCH];
	if (fd < 0)
		return 0;
	{
		struct bpf_map_info info;
		uint32_t len = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
			return -errno;
		size = info.value_size;
	}
	if ((err = per_cpu_values(b, size)) < 0)
		return err;
	st = &b->rt->stats;
	for (uint32_t i = 0; i < b->prog->nprobes; i++) {
		if (!b->code[i].insns)
			continue;
		if (bpf_map_lookup_elem(fd, &i, b->vals) < 0)
			continue;
		for (int c = 0; c < b->ncpus; c++) {
			const uint8_t *v = b->vals + (size_t)c * ((size + 7) & ~7u);

			st->hits += hwt_le64(v + PRB_SC_HITS);
			st->filtered += hwt_le64(v + PRB_SC_FILTERED);
			st->faults += hwt_le64(v + PRB_SC_FAULTS);
			st->ring_drops += hwt_le64(v + PRB_SC_RING_DROPS);
			st->self_drops += hwt_le64(v + PRB_SC_SELF_DROPS);
			st->stack_errors += hwt_le64(v + PRB_SC_STACK_ERRORS);
			for (size_t a = 0; a < b->prog->naggs; a++) {
				uint64_t d = hwt_le64(v + PRB_SC_AGG_DROPS + 8 * a);

				b->rt->agg_drops[a] += d;
				st->agg_drops += d;
			}
		}
		/* counted once */
		memset(b->vals, 0, b->vals_size);
		bpf_map_update_elem(fd, &i, b->vals, BPF_ANY);
	}
	return 0;
}

size_t prb_bpf_nevents(const struct prb_bpf *b)
{
	return b ? b->nevs : 0;
}

struct closer {
	struct hwt_psys *ps;
	int *fds;
	size_t n;
};

static void *close_some(void *arg)
{
	struct closer *c = arg;

	for (size_t i = 0; i < c->n; i++)
		hwt_psys_close(c->ps, c->fds[i]);
	return NULL;
}

/* Closes the perf events. A tracepoint or probe event with a BPF program
 * waits for an RCU grace period as it goes (tens of milliseconds each
 * here): closed from several threads at once, they share grace periods. */
static void close_events(struct prb_bpf *b)
{
	enum { NT = 8 };
	int *fds = malloc((b->nevs + 2) * sizeof(*fds));
	struct closer cl[NT];
	pthread_t th[NT];
	bool started[NT] = {false};
	size_t n = 0;

	for (size_t e = 0; e < b->nevs; e++)
		if (b->ev_fd[e] >= 0) {
			if (fds)
				fds[n++] = b->ev_fd[e];
			else
				hwt_psys_close(b->rt->cfg.psys, b->ev_fd[e]);
		}
	for (int h = 0; h < 2; h++)
		if (b->helper_ev[h] >= 0) {
			if (fds)
				fds[n++] = b->helper_ev[h];
			else
				hwt_psys_close(b->rt->cfg.psys, b->helper_ev[h]);
		}
	for (size_t t = 0; t < NT && n; t++) {
		cl[t].ps = b->rt->cfg.psys;
		cl[t].fds = fds + t * n / NT;
		cl[t].n = (t + 1) * n / NT - t * n / NT;
		if (cl[t].n && t + 1 < NT && !pthread_create(&th[t], NULL, close_some, &cl[t]))
			started[t] = true;
		else if (cl[t].n)
			close_some(&cl[t]);
	}
	for (size_t t = 0; t < NT; t++)
		if (started[t])
			pthread_join(th[t], NULL);
	free(fds);
}

void prb_bpf_free(struct prb_bpf *b)
{
	if (!b)
		return;
	if (b->rt && b->rt->src == &b->src) {
		/* the maps go: keep what they hold in the runtime's own
		 * aggregations and maps */
		prb_rt_set_source(b->rt, NULL);
		for (size_t a = 0; a < b->prog->naggs; a++) {
			if (b->prog->aggs[a].plain)
				(void)map_rows(b, a, &b->rt->maps[a]);
			else
				(void)merge_agg(b, a, b->rt->aggs[a]);
		}
	}
	close_events(b);
	for (int h = 0; h < 2; h++)
		if (b->helper_fd[h] >= 0)
			close(b->helper_fd[h]);
	ring_buffer__free(b->ring);
	if (b->prog_fd)
		for (size_t i = 0; i < b->prog->nprobes; i++)
			if (b->prog_fd[i] >= 0)
				close(b->prog_fd[i]);
	if (b->map_fd)
		for (size_t i = 0; i < b->nslots; i++)
			if (b->map_fd[i] >= 0)
				close(b->map_fd[i]);
	if (b->code)
		for (size_t i = 0; i < b->prog->nprobes; i++)
			prb_bpf_code_fini(&b->code[i]);
	if (b->why)
		for (size_t i = 0; i < b->prog->nprobes; i++)
			free(b->why[i]);
	if (b->log)
		for (size_t i = 0; i < b->prog->nprobes; i++)
			free(b->log[i]);
	free(b->code);
	free(b->prog_fd);
	free(b->why);
	free(b->log);
	free(b->map_fd);
	free(b->ev_fd);
	free(b->ev_probe);
	free(b->vals);
	free(b->ips);
	prb_bpf_layout_fini(&b->lay);
	free(b);
}
