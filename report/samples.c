/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report/samples.c - the one path from a recording's samples to resolved
 * stacks, shared by `hwtrace report`, `hwtrace flame` and `hwtrace script`:
 * sideband records feed a process map (symbolize's hwt_sym_aspace), each
 * sample's ip and call chain are located in it and symbolized into report
 * dict frame ids. perf's callchain context markers set frame kinds; return
 * addresses are looked up at ip - 1; LBR call stacks give the user part.
 *
 * Speed comes from two caches. The object cache maps (object, object
 * address, caller?, kind) to the frames once symbolized, so each distinct
 * address is resolved once however many processes share the object. The
 * address cache, in front of it, maps (pid, ip, caller?, kind) straight to
 * the same answer and skips the process-map lookup; it is direct-mapped
 * (a colliding entry replaces the old one) and each entry carries the
 * sideband epoch it was made in, bumped whenever a mapping, an exec or a
 * new process arrives, so an answer never outlives the mappings it came
 * from. Neither cache allocates on a hit.
 */
#include "report/report_int.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include "format/format.h"
#include "symbolize/symbolize.h"
#include "unwind/unwind.h"

/* Frames of an inline chain looked up at most (deeper chains keep their
 * innermost frames and the function). */
#define MAX_INLINE 32
/* Address cache slots (direct-mapped, a power of two). */
#define ADDR_CACHE_BITS 16

enum {
	KEY_CALLER = 1u << 0, /* a return address: looked up at ip - 1 */
	KEY_KIND_SHIFT = 1,   /* enum hwt_rep_kind in bits 1..3 */
};

/* What an address resolves to: one frame id, or `count` ids in the pool
 * from `first` (an inline chain, innermost first). */
struct rs_val {
	uint32_t first;
	uint16_t count;
	uint16_t flags; /* HWT_REP_SF_UNMAPPED / _NOSYM */
	uint64_t offset;
};

struct obj_entry {
	uint64_t addr;
	uint32_t object; /* aspace object index + 1; 0: empty slot */
	uint32_t keyflags;
	struct rs_val val;
};

struct addr_entry {
	uint64_t ip;
	uint32_t pid;
	uint16_t keyflags;
	uint16_t pad;
	uint32_t epoch; /* 0: empty */
	uint32_t pad2;
	struct rs_val val;
};

struct rs_event {
	char name[64];
	bool callchain, lbr;
	bool dwarf; /* user registers and stack: unwound from the CFI */
	bool has_period;
	uint64_t fixed_period; /* weight when the sample has no period */
	uint64_t period_ns;    /* what one sample stands for, for timelines */
};

struct hwt_rep_samples {
	struct hwt_rep_samples_config cfg;
	char *kallsyms, *debug_dir;
	struct hwt_fmt_session *session;
	struct hwt_rep_dict *dict;
	struct hwt_sym_cache *cache;
	struct hwt_sym_aspace *as;
	struct hwt_sym_hint hint;
	struct hwt_unw *unw; /* made on the first sample with a user stack */
	struct hwt_unw_frame uframes[HWT_REP_MAX_DEPTH];
	uint32_t cur_pid; /* the sample being unwound */
	uint64_t cur_time;
	uint32_t marker[HWT_UNW_END_COUNT_]; /* "[truncated: ...]" frame id + 1 */
	struct rs_event *events;
	size_t nevents;
	struct rs_event unknown_event;

	struct obj_entry *objs;	  /* object cache, open addressing */
	size_t nobjs, objs_cap;	  /* entries used, slots (power of two) */
	struct addr_entry *addrs; /* address cache, 1 << ADDR_CACHE_BITS */
	uint32_t epoch;
	uint32_t *pool; /* frame ids of inline chains */
	size_t npool, pool_cap;
	uint32_t unmapped[HWT_REP_KIND_COUNT_]; /* frame id + 1 per kind */

	struct hwt_rep_samples_stats st;
	uint32_t ids[HWT_REP_MAX_DEPTH];
	struct hwt_rep_sample_frame detail[HWT_REP_MAX_DEPTH];
	size_t ndetail;
};

void hwt_rep_samples_config_init(struct hwt_rep_samples_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->callchains = true;
	cfg->max_stack = 127;
}

/* ------------------------------------------------------------------------ */
/* setup                                                                     */

/* /proc/kallsyms names this machine's kernel: use it only for recordings
 * made under the same kernel release. */
static const char *default_kallsyms(const struct hwt_fmt_session *s)
{
	const struct hwt_fmt_meta *m = hwt_fmt_session_meta_find(s, HWT_META_KERNEL);
	struct utsname u;

	if (!m || m->type != HWT_FMT_META_STR || uname(&u) != 0 || strcmp(m->v.str, u.release))
		return NULL;
	return "/proc/kallsyms";
}

static void event_setup(struct rs_event *e, const struct hwt_fmt_event *fe, size_t index)
{
	const struct perf_event_attr *a = &fe->attr;

	if (fe->name && fe->name[0])
		snprintf(e->name, sizeof(e->name), "%s", fe->name);
	else
		snprintf(e->name, sizeof(e->name), "event%zu", index);
	e->lbr = (a->sample_type & PERF_SAMPLE_BRANCH_STACK) &&
		 (a->branch_sample_type & PERF_SAMPLE_BRANCH_CALL_STACK);
	e->dwarf = (a->sample_type & PERF_SAMPLE_REGS_USER) &&
		   (a->sample_type & PERF_SAMPLE_STACK_USER) && a->sample_regs_user &&
		   a->sample_stack_user;
	e->callchain = (a->sample_type & PERF_SAMPLE_CALLCHAIN) || e->lbr || e->dwarf;
	e->has_period = (a->sample_type & PERF_SAMPLE_PERIOD) != 0;
	e->fixed_period = !a->freq && a->sample_period ? a->sample_period : 1;
	/* A clock event's period is in ns; otherwise the rate says it. */
	if (a->freq && a->sample_freq)
		e->period_ns = 1000000000ull / a->sample_freq;
	else if (a->type == PERF_TYPE_SOFTWARE &&
		 (a->config == PERF_COUNT_SW_CPU_CLOCK || a->config == PERF_COUNT_SW_TASK_CLOCK) &&
		 a->sample_period)
		e->period_ns = a->sample_period;
	else
		e->period_ns = 1000000; /* 1 ms: a guess, only for drawing */
	if (!e->period_ns)
		e->period_ns = 1;
}

/* This process's own vDSO (its start and size from /proc/self/maps), for
 * recordings without a copy (perf.data) made under the running kernel,
 * whose vDSO is the same image. */
static void own_vdso(struct hwt_rep_samples *rs)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b;

		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &a, &b) == 2 && b > a) {
			hwt_sym_aspace_image(rs->as, "[vdso]", (const void *)(uintptr_t)a,
					     (size_t)(b - a));
			break;
		}
	}
	fclose(f);
}

static void load_metadata(struct hwt_rep_samples *rs, bool same_kernel)
{
	const struct hwt_fmt_meta *m;
	size_t plen = strlen(HWT_META_BUILDID_PREFIX);

	m = hwt_fmt_session_meta_find(rs->session, HWT_META_VDSO_IMAGE);
	if (m && m->type == HWT_FMT_META_BYTES && m->len)
		hwt_sym_aspace_image(rs->as, "[vdso]", m->v.bytes, m->len);
	else if (same_kernel)
		own_vdso(rs);
	for (size_t i = 0; i < hwt_fmt_session_nmeta(rs->session); i++) {
		m = hwt_fmt_session_meta(rs->session, i);
		if (strncmp(m->key, HWT_META_BUILDID_PREFIX, plen) ||
		    m->type != HWT_FMT_META_BYTES || !m->len || m->len > 64)
			continue;
		hwt_sym_aspace_build_id(rs->as, m->key + plen, m->v.bytes, m->len);
	}
}

static int dup_opt(const char *s, char **out)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

int hwt_rep_samples_alloc(struct hwt_rep_samples **out, struct hwt_fmt_session *session,
			  struct hwt_rep_dict *dict, const struct hwt_rep_samples_config *cfg)
{
	struct hwt_rep_samples_config def;
	struct hwt_sym_aspace_config acfg;
	struct hwt_sym_config ycfg;
	const struct hwt_fmt_evlist *ev;
	struct hwt_rep_samples *rs;
	int err;

	if (!out)
		return -HWT_EINVAL;
	*out = NULL;
	hwt_rep_samples_config_init(&def);
	if (cfg && hwt_opts_copy(&def, sizeof(def), cfg) < 0)
		return -HWT_EINVAL;
	cfg = &def;
	if (!session || !dict || !cfg->max_stack)
		return -HWT_EINVAL;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	rs->cfg = *cfg;
	if (rs->cfg.max_stack > HWT_REP_MAX_DEPTH)
		rs->cfg.max_stack = HWT_REP_MAX_DEPTH;
	rs->session = session;
	rs->dict = dict;
	rs->epoch = 1;
	err = -ENOMEM;
	if (dup_opt(cfg->kallsyms ? cfg->kallsyms : default_kallsyms(session), &rs->kallsyms) < 0 ||
	    dup_opt(cfg->debug_dir, &rs->debug_dir) < 0)
		goto error;
	rs->cfg.kallsyms = rs->kallsyms;
	rs->cfg.debug_dir = rs->debug_dir;

	ev = hwt_fmt_session_evlist(session);
	rs->nevents = hwt_fmt_evlist_count(ev);
	rs->events = calloc(rs->nevents ? rs->nevents : 1, sizeof(*rs->events));
	rs->addrs = calloc((size_t)1 << ADDR_CACHE_BITS, sizeof(*rs->addrs));
	if (!rs->events || !rs->addrs)
		goto error;
	for (size_t i = 0; i < rs->nevents; i++)
		event_setup(&rs->events[i], hwt_fmt_evlist_event(ev, i), i);
	snprintf(rs->unknown_event.name, sizeof(rs->unknown_event.name), "unknown");
	rs->unknown_event.fixed_period = 1;
	rs->unknown_event.period_ns = 1000000;

	hwt_sym_config_init(&ycfg);
	ycfg.logger = cfg->log;
	ycfg.debug_dir = rs->debug_dir;
	if ((err = hwt_sym_cache_alloc(&ycfg, &rs->cache)) < 0)
		goto error;
	hwt_sym_aspace_config_init(&acfg);
	acfg.logger = cfg->log;
	acfg.cache = rs->cache;
	acfg.kallsyms = rs->kallsyms;
	if ((err = hwt_sym_aspace_alloc(&acfg, &rs->as)) < 0)
		goto error;
	load_metadata(rs, default_kallsyms(session) != NULL);
	*out = rs;
	return 0;
error:
	hwt_rep_samples_free(rs);
	return err;
}

void hwt_rep_samples_free(struct hwt_rep_samples *rs)
{
	if (!rs)
		return;
	hwt_unw_free(rs->unw);
	hwt_sym_aspace_free(rs->as);
	hwt_sym_cache_free(rs->cache);
	free(rs->events);
	free(rs->objs);
	free(rs->addrs);
	free(rs->pool);
	free(rs->kallsyms);
	free(rs->debug_dir);
	free(rs);
}

size_t hwt_rep_samples_events(const struct hwt_rep_samples *rs, struct hwt_rep_event_info *info,
			      size_t max)
{
	if (!rs)
		return 0;
	for (size_t i = 0; i < rs->nevents && i < max && info; i++) {
		info[i].name = rs->events[i].name;
		info[i].callchain = rs->events[i].callchain;
		info[i].dwarf = rs->events[i].dwarf;
	}
	return rs->nevents;
}

void hwt_rep_samples_stats(const struct hwt_rep_samples *rs, struct hwt_rep_samples_stats *st)
{
	struct hwt_fmt_session_stats ss;

	if (!rs || !st)
		return;
	*st = rs->st;
	hwt_fmt_session_stats(rs->session, &ss);
	st->bad_records = ss.bad_records;
}

size_t hwt_rep_samples_detail(const struct hwt_rep_samples *rs,
			      const struct hwt_rep_sample_frame **frames)
{
	if (!rs || !frames)
		return 0;
	*frames = rs->detail;
	return rs->ndetail;
}

/* ------------------------------------------------------------------------ */
/* sideband                                                                  */

/* perf's kernel map names ("[kernel.kallsyms]_text") as perf shows them. */
static const char *object_name(const char *path)
{
	if (!path)
		return NULL;
	return strncmp(path, "[kernel.kallsyms]", 17) ? path : "[kernel.kallsyms]";
}

static int feed(struct hwt_rep_samples *rs, const struct hwt_fmt_record *rec)
{
	switch (rec->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		struct hwt_fmt_mmap m;

		hwt_fmt_mmap_get(rec, &m);
		if (!(m.prot & PROT_EXEC))
			return 0;
		rs->epoch++;
		/* Object names take their dict ids in the order of their first
		 * mappings, as perf makes its objects: its order among equal
		 * call-graph branches (view.c). */
		if (m.filename) {
			const char *name = object_name(m.filename);
			uint32_t sid;

			if (hwt_rep_dict_str(rs->dict, name, strlen(name), &sid) < 0)
				return -ENOMEM;
		}
		/* A malformed mapping (empty, wrapping) is not an error of
		 * the whole recording: its addresses stay unmapped. */
		return hwt_sym_aspace_mmap(
			   rs->as, &(struct hwt_sym_mmap_event){m.pid, m.tid, m.time, m.start,
								m.len, m.pgoff, m.prot, m.filename,
								m.build_id, m.build_id_len}) ==
			       -ENOMEM
			   ? -ENOMEM
			   : 0;
	}
	case PERF_RECORD_COMM: {
		struct hwt_sym_comm_event ev = {rec->u.comm.pid, rec->u.comm.tid, rec->id.time,
						rec->u.comm.comm,
						(rec->misc & PERF_RECORD_MISC_COMM_EXEC) != 0};

		if (ev.exec)
			rs->epoch++;
		return hwt_sym_aspace_comm(rs->as, &ev) == -ENOMEM ? -ENOMEM : 0;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		struct hwt_sym_task_event ev = {rec->u.fork.pid, rec->u.fork.ppid, rec->u.fork.tid,
						rec->u.fork.ptid, rec->u.fork.time};

		if (rec->type == PERF_RECORD_EXIT)
			return 0;
		if (ev.pid != ev.ppid)
			rs->epoch++;
		return hwt_sym_aspace_fork(rs->as, &ev) == -ENOMEM ? -ENOMEM : 0;
	}
	case PERF_RECORD_LOST:
		rs->st.lost_records += rec->u.lost.lost;
		return 0;
	case PERF_RECORD_LOST_SAMPLES:
		rs->st.lost_samples += rec->u.lost_samples.lost;
		return 0;
	default:
		return 0;
	}
}

/* ------------------------------------------------------------------------ */
/* resolving one address                                                     */

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* A frame of function func (NULL: none found) starting at start, an
 * address of its object (perf orders the branches of equal weight in a
 * call graph by it: view.c). */
static int frame_id(struct hwt_rep_samples *rs, const char *func, const char *object,
		    const char *file, uint32_t line, uint32_t kind, uint64_t start, uint32_t *id)
{
	struct hwt_rep_frame f = {func, object, file, line, kind, func ? start : 0};

	return hwt_rep_dict_frame(rs->dict, &f, id);
}

static int pool_add(struct hwt_rep_samples *rs, uint32_t id)
{
	if (rs->npool == rs->pool_cap) {
		size_t cap = rs->pool_cap ? rs->pool_cap * 2 : 256;
		uint32_t *p = realloc(rs->pool, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		rs->pool = p;
		rs->pool_cap = cap;
	}
	rs->pool[rs->npool++] = id;
	return 0;
}

/* Symbolizes an address of an opened object (a miss of both caches). */
static int symbolize(struct hwt_rep_samples *rs, const struct hwt_sym_loc *loc, bool caller,
		     uint32_t kind, struct rs_val *val)
{
	const char *object = object_name(loc->path);
	/* A return address follows its call: the call is at ip - 1. */
	uint64_t a = caller && loc->addr ? loc->addr - 1 : loc->addr;
	uint32_t id;
	int err;

	memset(val, 0, sizeof(*val));
	val->count = 1;
	rs->st.resolved++;
	if (loc->obj && (rs->cfg.inline_frames || rs->cfg.srclines)) {
		struct hwt_sym_frame fr[MAX_INLINE];
		struct hwt_sym_info info;
		int n = hwt_sym_lookup(loc->obj, a, 0, &info, fr, MAX_INLINE);

		if (n > 0) {
			/* The function is named from the symbol table, as perf
			 * names it ("f.constprop.0"); inlined callees from
			 * DWARF. */
			const char *outer = info.symbol ? info.symbol : fr[n - 1].func;
			uint32_t first = 0;

			val->offset = info.symbol ? loc->addr - info.sym_addr : 0;
			if (!rs->cfg.inline_frames || n == 1) {
				err = frame_id(rs, outer, object,
					       rs->cfg.srclines ? fr[0].file : NULL,
					       rs->cfg.srclines ? fr[0].line : 0, kind,
					       info.symbol ? info.sym_addr : 0, &id);
				if (err < 0)
					return err;
				val->first = id;
				if (!outer)
					val->flags |= HWT_REP_SF_NOSYM;
				return 0;
			}
			first = (uint32_t)rs->npool;
			for (int i = 0; i < n; i++) {
				bool last = i == n - 1;

				err = frame_id(rs, last ? outer : fr[i].func, object,
					       rs->cfg.srclines ? fr[i].file : NULL,
					       rs->cfg.srclines ? fr[i].line : 0,
					       last ? kind : HWT_REP_KIND_INLINED,
					       last && info.symbol ? info.sym_addr : 0, &id);
				if (err < 0 || (err = pool_add(rs, id)) < 0)
					return err;
			}
			val->first = first;
			val->count = (uint16_t)n;
			if (!outer)
				val->flags |= HWT_REP_SF_NOSYM;
			return 0;
		}
	} else if (loc->obj) {
		struct hwt_sym_func fn;

		if (hwt_sym_func_at(loc->obj, a, 0, &rs->hint, &fn) == 0) {
			val->offset = loc->addr - fn.addr;
			return frame_id(rs, fn.name, object, NULL, 0, kind, fn.addr, &val->first);
		}
	}
	val->flags |= HWT_REP_SF_NOSYM;
	return frame_id(rs, NULL, object, NULL, 0, kind, 0, &val->first);
}

static int objs_grow(struct hwt_rep_samples *rs)
{
	size_t cap = rs->objs_cap ? rs->objs_cap * 2 : 4096;
	struct obj_entry *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < rs->objs_cap; i++) {
		const struct obj_entry *e = &rs->objs[i];
		size_t j;

		if (!e->object)
			continue;
		j = mix64(e->addr ^ ((uint64_t)e->object << 40) ^ ((uint64_t)e->keyflags << 36)) &
		    (cap - 1);
		while (n[j].object)
			j = (j + 1) & (cap - 1);
		n[j] = *e;
	}
	free(rs->objs);
	rs->objs = n;
	rs->objs_cap = cap;
	return 0;
}

/* The object cache: (object, address, flags) -> frames. */
static int resolve_obj(struct hwt_rep_samples *rs, const struct hwt_sym_loc *loc, uint32_t keyflags,
		       struct rs_val *val)
{
	uint32_t object = loc->object + 1;
	size_t j;
	int err;

	if (rs->cfg.no_cache)
		return symbolize(rs, loc, keyflags & KEY_CALLER, keyflags >> KEY_KIND_SHIFT, val);
	if ((rs->nobjs + 1) * 2 > rs->objs_cap && (err = objs_grow(rs)) < 0)
		return err;
	j = mix64(loc->addr ^ ((uint64_t)object << 40) ^ ((uint64_t)keyflags << 36)) &
	    (rs->objs_cap - 1);
	for (;; j = (j + 1) & (rs->objs_cap - 1)) {
		struct obj_entry *e = &rs->objs[j];

		if (!e->object)
			break;
		if (e->object == object && e->addr == loc->addr && e->keyflags == keyflags) {
			*val = e->val;
			return 0;
		}
	}
	err = symbolize(rs, loc, keyflags & KEY_CALLER, keyflags >> KEY_KIND_SHIFT, val);
	if (err < 0)
		return err;
	rs->objs[j].addr = loc->addr;
	rs->objs[j].object = object;
	rs->objs[j].keyflags = keyflags;
	rs->objs[j].val = *val;
	rs->nobjs++;
	return 0;
}

/* Resolves ip of process pid at time: the address cache, else the process
 * map and the object cache. */
static int resolve(struct hwt_rep_samples *rs, uint32_t pid, uint64_t time, uint64_t ip,
		   bool caller, uint32_t kind, struct rs_val *val)
{
	uint32_t keyflags = (caller ? KEY_CALLER : 0) | kind << KEY_KIND_SHIFT;
	/* Kernel addresses mean the same in every process. */
	uint32_t kpid = ip >> 63 ? UINT32_MAX : pid;
	struct addr_entry *ae = NULL;
	struct hwt_sym_loc loc;
	int err;

	if (!rs->cfg.no_cache) {
		ae = &rs->addrs[mix64(ip ^ ((uint64_t)kpid << 32) ^ keyflags) &
				(((size_t)1 << ADDR_CACHE_BITS) - 1)];
		if (ae->epoch == rs->epoch && ae->ip == ip && ae->pid == kpid &&
		    ae->keyflags == keyflags) {
			*val = ae->val;
			return 0;
		}
	}
	err = hwt_sym_aspace_lookup(rs->as, pid, time, ip, &loc);
	if (err == -HWT_ENOSYM) {
		/* Nothing mapped there (or address 0 ending a frame-pointer
		 * chain): one "[unknown]" frame per kind. */
		if (!rs->unmapped[kind]) {
			uint32_t id;

			err = frame_id(rs, NULL, NULL, NULL, 0, kind, 0, &id);
			if (err < 0)
				return err;
			rs->unmapped[kind] = id + 1;
		}
		memset(val, 0, sizeof(*val));
		val->first = rs->unmapped[kind] - 1;
		val->count = 1;
		val->flags = HWT_REP_SF_UNMAPPED;
	} else if (err < 0) {
		return err;
	} else if ((err = resolve_obj(rs, &loc, keyflags, val)) < 0) {
		return err;
	}
	if (ae) {
		ae->ip = ip;
		ae->pid = kpid;
		ae->keyflags = (uint16_t)keyflags;
		ae->epoch = rs->epoch;
		ae->val = *val;
	}
	return 0;
}

/* Appends the frames of one address to the sample being built. Returns 0,
 * 1 when the stack is full, or an error. */
static int push(struct hwt_rep_samples *rs, uint32_t pid, uint64_t time, uint64_t ip, bool caller,
		uint32_t kind)
{
	struct rs_val v;
	int err = resolve(rs, pid, time, ip, caller, kind, &v);

	if (err < 0)
		return err;
	for (uint32_t i = 0; i < v.count; i++) {
		struct hwt_rep_sample_frame *d;

		if (rs->ndetail == HWT_REP_MAX_DEPTH)
			return 1;
		d = &rs->detail[rs->ndetail];
		rs->ids[rs->ndetail++] = v.count == 1 ? v.first : rs->pool[v.first + i];
		d->ip = ip;
		d->offset = v.offset;
		d->flags = v.flags | (i + 1 < v.count ? HWT_REP_SF_INLINED : 0);
	}
	rs->st.frames += v.count;
	if (v.flags & HWT_REP_SF_UNMAPPED)
		rs->st.unmapped += v.count;
	else if (v.flags & HWT_REP_SF_NOSYM)
		rs->st.unsymbolized++;
	return 0;
}

static uint32_t context_kind(uint64_t marker)
{
	switch ((int64_t)marker) {
	case PERF_CONTEXT_KERNEL:
	case PERF_CONTEXT_GUEST_KERNEL:
	case PERF_CONTEXT_HV:
		return HWT_REP_KIND_KERNEL;
	default:
		return HWT_REP_KIND_USER;
	}
}

static uint32_t ip_kind(uint64_t ip)
{
	return ip >> 63 ? HWT_REP_KIND_KERNEL : HWT_REP_KIND_USER;
}

/* ------------------------------------------------------------------------ */
/* user stacks unwound from the CFI (--call-graph dwarf)                     */

/* The unwinder's view of the sample's process: which object is at ip. */
static int unw_find(void *ctx, uint64_t ip, struct hwt_unw_module *mod)
{
	struct hwt_rep_samples *rs = ctx;
	struct hwt_sym_loc loc;
	int err;

	if (ip >> 63)
		return -HWT_ENOSYM;
	err = hwt_sym_aspace_lookup(rs->as, rs->cur_pid, rs->cur_time, ip, &loc);
	if (err < 0)
		return err == -HWT_ENOSYM ? err : 0;
	mod->obj = loc.obj;
	mod->bias = loc.obj ? ip - loc.addr : 0;
	/* A file (or the vDSO) that could not be opened, as opposed to
	 * anonymous memory such as JIT code. */
	mod->unreadable = !loc.obj && loc.path && strncmp(loc.path, "//", 2) &&
			  (loc.path[0] == '/' || !strcmp(loc.path, "[vdso]"));
	return 0;
}

/* The frame that ends a stack the unwinder could not finish:
 * "[truncated: REASON]", in the object where it stopped when there is one
 * (code without CFI). */
static int push_marker(struct hwt_rep_samples *rs, enum hwt_unw_end end, uint64_t ip, uint32_t pid,
		       uint64_t time)
{
	char name[48];
	struct hwt_rep_sample_frame *d;
	struct hwt_sym_loc loc;
	const char *object = NULL;
	uint32_t id;
	int err;

	if (rs->ndetail == HWT_REP_MAX_DEPTH)
		return 1;
	if ((end == HWT_UNW_END_NO_CFI || end == HWT_UNW_END_NO_OBJECT) &&
	    hwt_sym_aspace_lookup(rs->as, pid, time, ip, &loc) == 0)
		object = object_name(loc.path);
	if (!object && rs->marker[end]) {
		id = rs->marker[end] - 1;
	} else {
		snprintf(name, sizeof(name), "[truncated: %s]", hwt_unw_end_name(end));
		if ((err = frame_id(rs, name, object, NULL, 0, HWT_REP_KIND_USER, 0, &id)) < 0)
			return err;
		if (!object)
			rs->marker[end] = id + 1;
	}
	d = &rs->detail[rs->ndetail];
	rs->ids[rs->ndetail++] = id;
	d->ip = ip;
	d->offset = 0;
	d->flags = HWT_REP_SF_TRUNCATED;
	rs->st.frames++;
	rs->st.unwind_truncated++;
	rs->st.unwind_ends[end]++;
	return 0;
}

/* The user part of a stack from the sampled registers and stack copy.
 * Returns 0 (nothing to unwind: no user registers, as in a kernel
 * thread's sample), 1 when frames were added, or an error. */
static int unwind_user(struct hwt_rep_samples *rs, const struct hwt_fmt_sample *s, uint32_t pid,
		       uint64_t time, unsigned int *entries)
{
	struct hwt_unw_regs regs;
	struct hwt_unw_stack st;
	struct hwt_unw_result res;
	unsigned max;
	int n, err;

	if (!(s->type & PERF_SAMPLE_REGS_USER) || !s->regs_user_abi)
		return 0;
	if (!rs->unw) {
		struct hwt_unw_config ucfg;

		hwt_unw_config_init(&ucfg);
		ucfg.logger = rs->cfg.log;
		if ((err = hwt_unw_alloc(&ucfg, &rs->unw)) < 0)
			return err;
	}
	rs->st.unwound++;
	if (hwt_unw_regs_from_perf(s->regs_user_abi, s->regs_user_mask, s->regs_user, &regs) < 0) {
		/* Registers this unwinder cannot use: the sampled ip alone,
		 * marked. */
		if ((err = push(rs, pid, time, s->ip, false, HWT_REP_KIND_USER)) != 0)
			return err < 0 ? err : 1;
		(*entries)++;
		return push_marker(rs, HWT_UNW_END_NO_REGS, s->ip, pid, time) < 0 ? -ENOMEM : 1;
	}
	st.start = regs.r[HWT_UNW_RSP];
	st.data = (s->type & PERF_SAMPLE_STACK_USER) ? s->stack_user : NULL;
	st.size = st.data ? (size_t)s->stack_user_dyn_size : 0;
	if (st.size > s->stack_user_size)
		st.size = (size_t)s->stack_user_size;
	rs->cur_pid = pid;
	rs->cur_time = time;
	max = rs->cfg.max_stack > *entries ? rs->cfg.max_stack - *entries : 0;
	n = hwt_unw_walk(rs->unw, &regs, &st, unw_find, rs, rs->uframes, max, &res);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		err = push(rs, pid, time, rs->uframes[i].ip,
			   !rs->uframes[i].exact && !rs->uframes[i].signal, HWT_REP_KIND_USER);
		if (err)
			return err < 0 ? err : 1;
		(*entries)++;
	}
	if (res.end != HWT_UNW_END_OUTERMOST && res.end != HWT_UNW_END_MAX &&
	    (err = push_marker(rs, res.end, res.end_ip, pid, time)) < 0)
		return err;
	return 1;
}

/* The frames of a sample, leaf first. */
static int sample_frames(struct hwt_rep_samples *rs, const struct rs_event *ev,
			 const struct hwt_fmt_sample *s, uint32_t pid, uint64_t time)
{
	bool lbr = ev->lbr && (s->type & PERF_SAMPLE_BRANCH_STACK) && s->branch_nr;
	bool dwarf = ev->dwarf && (s->type & PERF_SAMPLE_REGS_USER) && s->regs_user_abi;
	unsigned int entries = 0;
	bool leaf = true;
	int err = 0;

	rs->ndetail = 0;
	if (rs->cfg.callchains && (s->type & PERF_SAMPLE_CALLCHAIN) && s->callchain_nr) {
		uint32_t kind = 0;
		bool user = false, at_ip = false;
		unsigned int nuser = 0;

		for (uint64_t i = 0; i < s->callchain_nr && entries < rs->cfg.max_stack; i++) {
			uint64_t ip;

			memcpy(&ip, s->callchain + i, sizeof(ip));
			if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
				kind = context_kind(ip);
				user = ip == (uint64_t)PERF_CONTEXT_USER;
				/* A context's first entry is where its code
				 * stopped (the user ip of a kernel sample: a
				 * faulting or interrupted instruction), not a
				 * return address: named at ip, as perf does. */
				at_ip = true;
				continue;
			}
			if (user && (lbr || dwarf))
				break; /* the LBR call stack or the unwinder
					  gives the user part */
			err = push(rs, pid, time, ip, !leaf && !at_ip, kind ? kind : ip_kind(ip));
			if (err)
				return err < 0 ? err : 0;
			leaf = false;
			at_ip = false;
			entries++;
			nuser += user;
		}
		/* Frame-pointer chains of code built without frame pointers
		 * stop after a frame or two (the hint to record with
		 * --call-graph dwarf). */
		if (nuser && !lbr && !dwarf) {
			rs->st.fp_user_stacks++;
			rs->st.fp_short += nuser <= 2;
		}
	}
	if (rs->cfg.callchains && lbr) {
		/* The sampled user address, then each active call's site (the
		 * "from" of the branch entries: call instructions themselves,
		 * so no return-address adjustment). */
		if (!(s->ip >> 63) && entries < rs->cfg.max_stack) {
			err = push(rs, pid, time, s->ip, false, HWT_REP_KIND_USER);
			entries++;
		}
		for (uint64_t i = 0; !err && i < s->branch_nr && entries < rs->cfg.max_stack; i++) {
			uint64_t from;

			memcpy(&from, s->branches + i * sizeof(struct perf_branch_entry),
			       sizeof(from));
			err = push(rs, pid, time, from, false, HWT_REP_KIND_USER);
			entries++;
		}
		leaf = false;
	}
	if (rs->cfg.callchains && dwarf && !lbr) {
		err = unwind_user(rs, s, pid, time, &entries);
		if (err < 0)
			return err;
		if (err)
			leaf = false;
		err = 0;
	}
	if (leaf && (s->type & PERF_SAMPLE_IP))
		err = push(rs, pid, time, s->ip, false, ip_kind(s->ip));
	return err < 0 ? err : 0;
}

int hwt_rep_samples_record(struct hwt_rep_samples *rs, const struct hwt_fmt_record *rec,
			   struct hwt_rep_sample *out)
{
	const struct hwt_fmt_sample *s;
	const struct rs_event *ev;
	uint32_t pid;
	uint64_t time;
	int err;

	if (!rs || !rec || !out)
		return -HWT_EINVAL;
	if (rec->type != PERF_RECORD_SAMPLE)
		return feed(rs, rec);
	s = &rec->u.sample;
	ev = rec->event >= 0 && (size_t)rec->event < rs->nevents ? &rs->events[rec->event]
								 : &rs->unknown_event;
	pid = s->type & PERF_SAMPLE_TID ? s->pid : UINT32_MAX;
	time = s->type & PERF_SAMPLE_TIME ? s->time : 0;
	err = sample_frames(rs, ev, s, pid, time);
	if (err < 0)
		return err;
	rs->st.samples++;
	if (!ev->callchain)
		rs->st.no_callchain++;
	memset(out, 0, sizeof(*out));
	out->event = ev->name;
	out->weight = ev->has_period ? s->period : ev->fixed_period;
	if (!out->weight)
		out->weight = 1;
	out->time = time;
	out->pid = s->type & PERF_SAMPLE_TID ? (int32_t)s->pid : -1;
	out->tid = s->type & PERF_SAMPLE_TID ? (int32_t)s->tid : -1;
	out->cpu = s->type & PERF_SAMPLE_CPU ? (int32_t)s->cpu : -1;
	out->comm = s->type & PERF_SAMPLE_TID ? hwt_sym_aspace_comm_of(rs->as, s->tid, time) : NULL;
	if (!out->comm && out->tid == 0)
		out->comm = "swapper"; /* the idle task, as perf names it */
	out->frame_ids = rs->ids;
	out->nframes = rs->ndetail;
	return 1;
}

/* ------------------------------------------------------------------------ */
/* the whole session                                                         */

int64_t hwt_rep_samples_load(struct hwt_rep_samples *rs, struct hwt_rep_profile *profile,
			     struct hwt_rep_timeline *timeline, uint64_t *err_offset)
{
	struct hwt_fmt_record rec;
	struct hwt_rep_sample smp;
	struct hwt_fmt_session_stats ss;
	int64_t n = 0;
	uint64_t off = 0;
	int err;

	if (!rs || !profile || hwt_rep_profile_dict(profile) != rs->dict)
		return -HWT_EINVAL;
	while ((err = hwt_fmt_session_next(rs->session, &rec, &off)) != -HWT_EEOS) {
		if (err < 0) {
			/* A damaged chunk of a .hwt: say where, go on with the
			 * next one. perf.data framing errors end the session. */
			if ((err == -HWT_ECHECKSUM || err == -HWT_ECOMPRESS ||
			     err == -HWT_ETRUNC) &&
			    hwt_fmt_session_kind(rs->session) == HWT_FMT_KIND_HWT) {
				hwt_log(&rs->cfg.log, HWT_LOG_WARN,
					"%s at offset %" PRIu64 ": the records there are skipped",
					hwt_strerror(err), off);
				rs->st.damaged++;
				continue;
			}
			if (err_offset)
				*err_offset = off;
			return err;
		}
		err = hwt_rep_samples_record(rs, &rec, &smp);
		if (err < 0)
			return err;
		if (err == 0)
			continue;
		n++;
		err = hwt_rep_profile_add(profile, &smp);
		if (err < 0)
			return err == -HWT_EINVAL ? -HWT_EINTERNAL : err;
		if (timeline && err == 1) {
			const struct rs_event *ev =
			    rec.event >= 0 && (size_t)rec.event < rs->nevents
				? &rs->events[rec.event]
				: &rs->unknown_event;

			err = hwt_rep_timeline_stack(timeline, rs->dict, smp.pid, smp.tid, smp.comm,
						     smp.time, ev->period_ns, smp.frame_ids,
						     smp.nframes);
			if (err < 0)
				return err;
		}
	}
	hwt_rep_profile_lost(profile, rs->st.lost_records + rs->st.lost_samples);
	hwt_fmt_session_stats(rs->session, &ss);
	hwt_rep_profile_bad_input(profile, ss.bad_records + rs->st.damaged);
	if (timeline) {
		int64_t r = hwt_rep_timeline_flush(timeline);

		if (r < 0)
			return r;
	}
	return n;
}
