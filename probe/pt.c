/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/pt.c - PT probes: pt:OBJ:FUNC:entry, pt:OBJ:FUNC:return and
 * pt:OBJ:FUNC+OFF fire from decoded Intel PT control flow, with the
 * decoder's exact stacks and times and no probe effect (FreeBSD kinst's
 * semantics without its breakpoints). This file is the decoder-facing
 * hook: resolve the probes to runtime address ranges of every mapping of
 * OBJ (from the recording's sideband), or for the kernel (OBJ "kernel")
 * to ranges in every process from the recording's kallsyms, then feed
 * decoded calls, returns and instructions through hwt_probe_pt_flow().
 * prb_pt_offline() is that decoder leg for `hwtrace trace -i`: it decodes
 * the recording's PT with ptsession/ and keeps each thread's return
 * addresses for the hits' stacks.
 */
#include "probe/probe_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/decoder.h"
#include "format/format.h"
#include "ptsession/ptsession.h"

struct resolve_ctx {
	struct hwt_probe_rt *rt;
	const struct prb_probe *p;
	size_t probe;
	struct hwt_probe_diag *diag;
	int found;
	int err;
};

static int add_range(struct hwt_probe_rt *rt, const struct prb_pt_range *r)
{
	struct prb_pt_range *n = realloc(rt->pt, (rt->npt + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	rt->pt = n;
	rt->pt[rt->npt++] = *r;
	return 0;
}

/* Whether off is where an instruction of the function starts (decoding
 * code, its bytes from its entry; x86-64): 1 yes, 0 no (*before, *after:
 * the boundaries around it), -EIO when the bytes run out first (then it is
 * not checked). */
static int code_boundary(const uint8_t *code, size_t left, uint64_t off, uint64_t *before,
			 uint64_t *after)
{
	struct hwt_dec_icache *ic = NULL;
	struct hwt_dec_image *img = NULL;
	struct hwt_dec_insn insn;
	uint64_t addr = 0;
	int ret = -EIO;

	*before = *after = 0;
	if (hwt_dec_icache_alloc(&ic, NULL) < 0 || hwt_dec_image_alloc(&img, ic, NULL) < 0 ||
	    hwt_dec_image_add_mem(img, code, left, 0, NULL) < 0)
		goto out;
	/* The decoder's own instruction decoder: the boundaries the decoded
	 * flow will have. */
	while (addr < off && hwt_dec_insn_decode(img, addr, HWT_DEC_MODE_64, &insn) == 0 &&
	       addr + insn.size <= left) {
		*before = addr;
		addr += insn.size;
	}
	*after = addr;
	ret = addr == off;
	if (addr < off)
		ret = -EIO; /* ran out of bytes or of valid instructions */
out:
	hwt_dec_image_put(img);
	hwt_dec_icache_free(ic);
	return ret;
}

/* The same for a function at file_offset of size bytes in path; -errno
 * when the file cannot be read. */
static int insn_boundary(const char *path, uint64_t file_offset, uint64_t size, uint64_t off,
			 uint64_t *before, uint64_t *after)
{
	uint64_t want = size > off + 16 ? size : off + 16;
	uint8_t *buf = NULL;
	ssize_t got;
	int fd, ret = -EIO;

	if (want > (1u << 20))
		want = 1u << 20;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if ((buf = malloc(want)) && (got = pread(fd, buf, want, (off_t)file_offset)) > 0)
		ret = code_boundary(buf, (size_t)got, off, before, after);
	free(buf);
	close(fd);
	return ret;
}

/* FUNC+OFF's offset inside a function of size bytes (0: unknown) whose
 * instruction boundaries are known through boundary (1 at one, 0 inside an
 * instruction, < 0 unknown). Returns 0, or -HWT_EINVAL with diag. */
static int check_offset(struct resolve_ctx *c, uint64_t size, int boundary, uint64_t before,
			uint64_t after)
{
	const struct prb_probe *p = c->p;

	if (size && p->info.offset >= size) {
		if (c->diag)
			hwt_probe_diag_at(c->diag, c->rt->prog->text, p->pos,
					  "%s: offset %" PRIu64 " is past the end of %s (%" PRIu64
					  " bytes)",
					  p->text, p->info.offset, p->func, size);
		return c->err = -HWT_EINVAL;
	}
	if (boundary == 0) {
		if (c->diag)
			hwt_probe_diag_at(c->diag, c->rt->prog->text, p->pos,
					  "%s: offset %" PRIu64 " is inside an instruction of %s "
					  "(the nearest start at +%" PRIu64 " or +%" PRIu64
					  "; see 'objdump -d')",
					  p->text, p->info.offset, p->func, before, after);
		return c->err = -HWT_EINVAL;
	}
	return 0;
}

static bool has_offset(const struct prb_probe *p)
{
	return p->info.kind == HWT_PROBE_PT_INSN && p->info.offset;
}

/* A probed function at runtime address lo of size bytes in process pid (-1:
 * every process). */
static int add_func(struct resolve_ctx *c, int32_t pid, uint64_t lo, uint64_t size)
{
	struct prb_pt_range r;

	memset(&r, 0, sizeof(r));
	r.lo = lo;
	r.hi = r.lo + (size ? size : 1);
	r.at = r.lo + c->p->info.offset;
	r.pid = pid;
	r.probe = (uint32_t)c->probe;
	c->found++;
	return add_range(c->rt, &r);
}

static int resolve_map(void *vctx, int32_t pid, const char *path, uint64_t start, uint64_t end,
		       uint64_t pgoff)
{
	struct resolve_ctx *c = vctx;
	struct hwt_sym_def defs[4];
	struct hwt_sym_obj *obj;
	int n;

	if (hwt_sym_obj_open(prb_syms_cache(c->rt->syms), path, NULL, 0, &obj) < 0)
		return 0;
	n = hwt_sym_find(obj, c->p->func, defs, HWT_ARRAY_SIZE(defs));
	if (n <= 0) {
		if (!c->err)
			c->err = -HWT_ENOSYM;
		return 0;
	}
	/* The mapping covers file offsets [pgoff, pgoff + end - start). */
	if (!defs[0].has_offset || defs[0].file_offset < pgoff ||
	    defs[0].file_offset - pgoff >= end - start)
		return 0;
	if (has_offset(c->p)) {
		uint64_t before = 0, after = 0;
		int b = -EIO;

		if (!defs[0].size || c->p->info.offset < defs[0].size)
			b = insn_boundary(path, defs[0].file_offset, defs[0].size,
					  c->p->info.offset, &before, &after);
		if (check_offset(c, defs[0].size, b, before, after) < 0)
			return c->err;
	}
	return add_func(c, pid, start + (defs[0].file_offset - pgoff), defs[0].size);
}

/* The definitions of func in the recording's kallsyms (of kernel module
 * module only, when not NULL), up to max. */
static int kernel_defs(const struct hwt_probe_rt *rt, const char *func, const char *module,
		       struct hwt_sym_def *defs, int max)
{
	int n = rt->kallsyms ? hwt_sym_find(rt->kallsyms, func, defs, (unsigned)max) : 0, k = 0;

	for (int i = 0; i < n && i < max; i++) {
		struct hwt_sym_info info;

		if (module && (hwt_sym_lookup(rt->kallsyms, defs[i].addr, 0, &info, NULL, 0) < 0 ||
			       !info.module || strcmp(info.module, module)))
			continue;
		defs[k++] = defs[i];
	}
	return k;
}

/* Kernel code is in every process: a probe on a kernel function (or on a
 * function of the kernel module `module`) watches them all, at the
 * addresses of the recording's kallsyms. Returns 0 or an error with diag. */
static int resolve_kernel(struct resolve_ctx *c, const char *module)
{
	const struct hwt_probe_rt *rt = c->rt;
	const struct prb_probe *p = c->p;
	struct hwt_sym_def defs[16];
	const char *why = NULL;
	int n, err;

	if (!rt->kern_known)
		why = "kernel functions are only known from an Intel PT recording's copy of "
		      "the kernel (hwtrace trace -i FILE)";
	else if (!rt->kern_traced)
		why = "the recording traced user space only: record the kernel too (as root, "
		      "'hwtrace record --pt' traces it and copies its code)";
	else if (!rt->kcore)
		why = "the recording holds no copy of the kernel's code (kernel.kcore), so its "
		      "kernel trace cannot be decoded: record as root, where 'hwtrace record --pt' "
		      "reads /proc/kcore (or install the running kernel's vmlinux, its -dbg "
		      "package)";
	else if (!rt->kallsyms)
		why = "the recording holds no kernel symbols (kernel.kallsyms): record as root "
		      "(kptr_restrict hides /proc/kallsyms' addresses from others)";
	if (why) {
		if (c->diag)
			hwt_probe_diag_at(c->diag, rt->prog->text, p->pos, "%s: %s", p->text, why);
		return -HWT_ENOEVENT;
	}
	/* A name can be several functions (static ones of different files):
	 * the probe watches each. */
	n = kernel_defs(rt, p->func, module, defs, HWT_ARRAY_SIZE(defs));
	if (!n) {
		if (c->diag)
			hwt_probe_diag_at(c->diag, rt->prog->text, p->pos,
					  "function '%s' is not in the recording's kernel symbols "
					  "(kallsyms); on the recorded machine, 'grep -w %s "
					  "/proc/kallsyms' lists it",
					  p->func, p->func);
		return -HWT_ENOSYM;
	}
	for (int i = 0; i < n; i++) {
		struct hwt_sym_func fn;

		/* kallsyms has no sizes: a function reaches to the next one */
		if (!defs[i].size &&
		    hwt_sym_func_at(rt->kallsyms, defs[i].addr, 0, NULL, &fn) == 0 &&
		    fn.addr == defs[i].addr)
			defs[i].size = fn.size;
		if (has_offset(p)) {
			uint64_t before = 0, after = 0, len;
			size_t avail = 0;
			const uint8_t *code =
			    hwt_pts_kcore_at(rt->kcore, rt->kcore_len, defs[i].addr, &avail);
			int b = -EIO;

			len = defs[i].size && defs[i].size < avail ? defs[i].size : avail;
			if (code && (!defs[i].size || p->info.offset < defs[i].size))
				b = code_boundary(code, (size_t)len, p->info.offset, &before,
						  &after);
			if ((err = check_offset(c, defs[i].size, b, before, after)) < 0)
				return err;
		}
		if ((err = add_func(c, -1, defs[i].addr, defs[i].size)) < 0)
			return err;
	}
	return 0;
}

int hwt_probe_pt_resolve(struct hwt_probe_rt *rt, struct hwt_probe_diag *diag)
{
	const struct hwt_probe_prog *prog;
	int total = 0;

	if (diag)
		memset(diag, 0, sizeof(*diag));
	if (!rt)
		return -HWT_EINVAL;
	prog = rt->prog;
	rt->npt = 0;
	for (size_t i = 0; i < prog->nprobes; i++) {
		const struct prb_probe *p = &prog->probes[i];
		struct resolve_ctx c = {rt, p, i, diag, 0, 0};
		int err;

		if (p->info.kind != HWT_PROBE_PT_ENTRY && p->info.kind != HWT_PROBE_PT_RETURN &&
		    p->info.kind != HWT_PROBE_PT_INSN)
			continue;
		if (prb_syms_is_kernel(p->object)) {
			if ((err = resolve_kernel(&c, NULL)) < 0)
				return err;
			total++;
			continue;
		}
		if ((err = prb_syms_each_map(rt->syms, p->object, resolve_map, &c)) < 0)
			return err;
		if (c.err == -HWT_EINVAL)
			return c.err;
		if (!c.found && !c.err && rt->kern_traced && rt->kcore) {
			/* not mapped by a process: a kernel module's? */
			struct hwt_sym_def def;

			if (kernel_defs(rt, p->func, p->object, &def, 1) > 0) {
				if ((err = resolve_kernel(&c, p->object)) < 0)
					return err;
				total++;
				continue;
			}
		}
		if (!c.found) {
			if (c.err == -HWT_ENOSYM) {
				if (diag)
					hwt_probe_diag_at(
					    diag, prog->text, p->pos,
					    "function '%s' not found in %s; list its functions "
					    "with 'nm -C' on it",
					    p->func, p->object);
				return -HWT_ENOSYM;
			}
			if (diag)
				hwt_probe_diag_at(
				    diag, prog->text, p->pos,
				    "%s: no object '%s' was mapped in the recording (give "
				    "its path or basename as the traced process mapped it, or "
				    "'kernel' for the kernel's functions)",
				    p->text, p->object);
			return -HWT_ENOEVENT;
		}
		total++;
	}
	return total;
}

int hwt_probe_pt_flow(struct hwt_probe_rt *rt, const struct hwt_probe_flow *ev)
{
	int fired = 0, err;

	if (!rt || !ev)
		return -HWT_EINVAL;
	for (size_t i = 0; i < rt->npt; i++) {
		const struct prb_pt_range *r = &rt->pt[i];
		enum hwt_probe_kind k = rt->prog->probes[r->probe].info.kind;
		bool hit;

		if (r->pid != -1 && r->pid != ev->pid)
			continue;
		switch (ev->kind) {
		case HWT_PROBE_FLOW_CALL:
			hit = k == HWT_PROBE_PT_ENTRY && ev->ip == r->lo;
			break;
		case HWT_PROBE_FLOW_RETURN:
			hit = k == HWT_PROBE_PT_RETURN && ev->ip >= r->lo && ev->ip < r->hi;
			break;
		case HWT_PROBE_FLOW_INSN:
			hit = k == HWT_PROBE_PT_INSN && ev->ip == r->at;
			break;
		default:
			return -HWT_EINVAL;
		}
		if (!hit)
			continue;
		{
			struct hwt_probe_hit h;

			memset(&h, 0, sizeof(h));
			h.pid = ev->pid;
			h.tid = ev->tid;
			h.cpu = ev->cpu;
			h.time = ev->time;
			h.ip = ev->ip;
			h.stack = ev->stack;
			h.stack_nr = ev->stack_nr;
			if ((err = hwt_probe_rt_fire(rt, r->probe, &h)) < 0)
				return err;
			fired++;
		}
	}
	return fired;
}

size_t hwt_probe_pt_watches(const struct hwt_probe_rt *rt, struct hwt_probe_pt_watch *out,
			    size_t max)
{
	if (!rt)
		return 0;
	for (size_t i = 0; i < rt->npt && i < max && out; i++) {
		const struct prb_pt_range *r = &rt->pt[i];
		enum hwt_probe_kind k = rt->prog->probes[r->probe].info.kind;

		out[i].pid = r->pid;
		if (k == HWT_PROBE_PT_ENTRY) {
			out[i].kind = HWT_PROBE_FLOW_CALL;
			out[i].lo = r->lo;
			out[i].hi = r->lo + 1;
		} else if (k == HWT_PROBE_PT_RETURN) {
			out[i].kind = HWT_PROBE_FLOW_RETURN;
			out[i].lo = r->lo;
			out[i].hi = r->hi;
		} else {
			out[i].kind = HWT_PROBE_FLOW_INSN;
			out[i].lo = r->at;
			out[i].hi = r->at + 1;
		}
	}
	return rt->npt;
}

/* ------------------------------------------------------------------------ */
/* Offline: decoding the recording's PT and feeding the flow hook            */

/* A thread's open calls: their return addresses,
 * oldest first. */
struct pt_thread {
	int32_t tid;
	uint64_t *from;
	size_t n, cap;
};

struct pt_run {
	struct hwt_probe_rt *rt;
	struct hwt_probe_pt_watch *w;
	size_t nw;
	bool want_insn;
	struct pt_thread *threads;
	size_t nthreads, cap, last;
	uint64_t *stack; /* scratch: the stack of a hit, leaf first */
	size_t stack_cap;
	uint64_t *ips; /* scratch: a block's instructions */
	size_t ips_cap;
};

static struct pt_thread *pt_thread_get(struct pt_run *r, int32_t tid)
{
	struct pt_thread *t;

	if (r->last < r->nthreads && r->threads[r->last].tid == tid)
		return &r->threads[r->last];
	for (size_t i = 0; i < r->nthreads; i++) {
		if (r->threads[i].tid == tid) {
			r->last = i;
			return &r->threads[i];
		}
	}
	if (r->nthreads == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		void *n = realloc(r->threads, cap * sizeof(*r->threads));

		if (!n)
			return NULL;
		r->threads = n;
		r->cap = cap;
	}
	t = &r->threads[r->nthreads];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	r->last = r->nthreads++;
	return t;
}

static int grow(uint64_t **v, size_t *cap, size_t need)
{
	size_t cap2 = *cap ? *cap : 64;
	void *n;

	if (need <= *cap)
		return 0;
	while (cap2 < need)
		cap2 *= 2;
	if (!(n = realloc(*v, cap2 * sizeof(**v))))
		return -ENOMEM;
	*v = n;
	*cap = cap2;
	return 0;
}

static bool pt_watched(const struct pt_run *r, enum hwt_probe_flow_kind kind, int32_t pid,
		       uint64_t ip)
{
	for (size_t i = 0; i < r->nw; i++) {
		const struct hwt_probe_pt_watch *w = &r->w[i];

		if (w->kind == kind && (w->pid == -1 || w->pid == pid) && ip >= w->lo && ip < w->hi)
			return true;
	}
	return false;
}

/* Fires the probes an event matches, with the thread's stack under ip. */
static int pt_fire(struct pt_run *r, const struct hwt_dec_rec *rec, const struct pt_thread *t,
		   enum hwt_probe_flow_kind kind, uint64_t ip)
{
	struct hwt_probe_flow ev;
	int err;

	if ((err = grow(&r->stack, &r->stack_cap, t->n + 1)) < 0)
		return err;
	r->stack[0] = ip;
	for (size_t i = 0; i < t->n; i++)
		r->stack[1 + i] = t->from[t->n - 1 - i];
	memset(&ev, 0, sizeof(ev));
	ev.kind = kind;
	ev.pid = rec->pid;
	ev.tid = rec->tid;
	/* per-thread streams: the CPU is not in the trace */
	ev.cpu = rec->flags & HWT_DEC_RF_CPU ? rec->cpu : -1;
	ev.time = (rec->flags & HWT_DEC_RF_TIME) ? rec->time : 0;
	ev.ip = ip;
	ev.stack = r->stack;
	ev.stack_nr = t->n + 1;
	err = hwt_probe_pt_flow(r->rt, &ev);
	return err < 0 ? err : 0;
}

static int pt_block(struct pt_run *r, const struct hwt_dec_rec *rec, const struct pt_thread *t)
{
	uint64_t lo = rec->u.block.ip, hi = rec->u.block.end_ip;
	uint32_t n = rec->u.block.ninsn;
	bool any = false;
	size_t got;
	int err;

	/* A basic block lies within [ip, end_ip]; a PTXED-engine block
	 * (libipt's, no bb) may run across direct calls and jumps. */
	for (size_t i = 0; i < r->nw && !any; i++)
		any = r->w[i].kind == HWT_PROBE_FLOW_INSN &&
		      (r->w[i].pid == -1 || r->w[i].pid == rec->pid) &&
		      (!rec->u.block.bb || (r->w[i].lo >= lo && r->w[i].lo <= hi));
	if (!any || n == 0)
		return 0;
	if ((err = grow(&r->ips, &r->ips_cap, n)) < 0)
		return err;
	/* A partial block ran only its first ninsn instructions. */
	if ((err = hwt_dec_block_insns(rec, r->ips, n)) < 0)
		return err;
	got = (size_t)err;
	for (size_t i = 0; i < got; i++) {
		if (pt_watched(r, HWT_PROBE_FLOW_INSN, rec->pid, r->ips[i]) &&
		    (err = pt_fire(r, rec, t, HWT_PROBE_FLOW_INSN, r->ips[i])) < 0)
			return err;
	}
	return 0;
}

static int pt_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct pt_run *r = ctx;
	struct pt_thread *t = pt_thread_get(r, rec->tid);
	uint64_t ip;
	int err = 0;

	if (!t)
		return -ENOMEM;
	switch (rec->type) {
	case HWT_DEC_REC_BLOCK:
		err = pt_block(r, rec, t);
		break;
	case HWT_DEC_REC_CALL:
		if ((err = grow(&t->from, &t->cap, t->n + 1)) < 0)
			return err;
		/* return addresses, as in every stack (named by the byte
		 * before: a call as a function's first instruction is in it) */
		t->from[t->n++] = rec->u.call.ret_addr ? rec->u.call.ret_addr : rec->u.call.from;
		if (pt_watched(r, HWT_PROBE_FLOW_CALL, rec->pid, rec->u.call.to))
			err = pt_fire(r, rec, t, HWT_PROBE_FLOW_CALL, rec->u.call.to);
		break;
	case HWT_DEC_REC_RETURN:
		/* A frame left without its own return (longjmp, an exception)
		 * still returns from its function: match it by its entry. */
		ip = (rec->flags & HWT_DEC_RF_UNWOUND) && rec->u.ret.func ? rec->u.ret.func
									  : rec->u.ret.from;
		if (pt_watched(r, HWT_PROBE_FLOW_RETURN, rec->pid, ip))
			err = pt_fire(r, rec, t, HWT_PROBE_FLOW_RETURN, ip);
		if (t->n)
			t->n--;
		break;
	case HWT_DEC_REC_GAP:
		r->rt->stats.trace_gaps++;
		r->rt->stats.trace_gap_bytes += rec->u.gap.size;
		if (rec->u.gap.kind == HWT_DEC_GAP_LOST) {
			r->rt->stats.trace_lost_gaps++;
			r->rt->stats.trace_lost_bytes += rec->u.gap.size;
		} else if (rec->u.gap.kind == HWT_DEC_GAP_OVERFLOW) {
			r->rt->stats.trace_overflows++;
		}
		break;
	default:
		break;
	}
	/* The decoder's depth is the truth (frames from before the trace
	 * or a gap are not on our stack). */
	if (t->n > rec->depth)
		t->n = rec->depth;
	return err;
}

void prb_pt_kernel(struct hwt_probe_rt *rt, const struct hwt_fmt_session *session)
{
	struct hwt_pts_kernel k;

	hwt_pts_session_kernel(session, &k);
	rt->kern_known = true;
	rt->kern_traced = k.traced;
	rt->kcore = k.kcore;
	rt->kcore_len = k.kcore_len;
	rt->kallsyms = NULL;
	/* kernel frames (kstack, func) are named as the recording's kernel
	 * named them */
	if (k.kallsyms &&
	    hwt_pts_kallsyms_open(session, prb_syms_cache(rt->syms), &rt->kallsyms) == 0)
		prb_syms_set_kallsyms(rt->syms, rt->kallsyms);
}

int prb_pt_offline(struct hwt_probe_rt *rt, struct hwt_fmt_session *session,
		   struct hwt_probe_diag *diag)
{
	struct pt_run r;
	struct hwt_pts_config cfg;
	struct hwt_pts *pts = NULL;
	struct hwt_dec_sink sink;
	int32_t *pids = NULL;
	uint64_t off = 0;
	bool any_pid = false;
	int err;

	memset(&r, 0, sizeof(r));
	r.rt = rt;
	prb_pt_kernel(rt, session);
	if ((err = hwt_probe_pt_resolve(rt, diag)) < 0)
		return err;
	r.nw = hwt_probe_pt_watches(rt, NULL, 0);
	if (!(r.w = calloc(r.nw ? r.nw : 1, sizeof(*r.w))) ||
	    !(pids = calloc(r.nw ? r.nw : 1, sizeof(*pids)))) {
		err = -ENOMEM;
		goto out;
	}
	hwt_probe_pt_watches(rt, r.w, r.nw);
	for (size_t i = 0; i < r.nw; i++) {
		r.want_insn |= r.w[i].kind == HWT_PROBE_FLOW_INSN;
		pids[i] = r.w[i].pid;
		any_pid |= pids[i] == -1;
	}
	if ((err = hwt_fmt_session_rewind(session)) < 0) {
		if (diag)
			hwt_probe_diag_at(
			    diag, NULL, 0,
			    "pt: probes read the recording twice, and a pipe cannot be "
			    "rewound: save it to a file first (perf record -o FILE)");
		goto out;
	}
	hwt_pts_config_init(&cfg);
	cfg.log = rt->cfg.log;
	/* Only the processes the probes watch are decoded (all of them for
	 * kernel functions). */
	cfg.pids = pids;
	cfg.npids = any_pid ? 0 : r.nw;
	if ((err = hwt_pts_open(&pts, session, &cfg, &off)) < 0) {
		if (diag)
			hwt_probe_diag_at(
			    diag, NULL, 0,
			    "cannot decode the recording's Intel PT (at offset %" PRIu64 "): %s",
			    off, hwt_strerror(err));
		goto out;
	}
	memset(&sink, 0, sizeof(sink));
	sink.size = sizeof(sink);
	sink.want = HWT_DEC_WANT(HWT_DEC_REC_CALL) | HWT_DEC_WANT(HWT_DEC_REC_RETURN) |
		    HWT_DEC_WANT(HWT_DEC_REC_GAP) |
		    (r.want_insn ? HWT_DEC_WANT(HWT_DEC_REC_BLOCK) : 0);
	sink.rec = pt_rec;
	sink.ctx = &r;
	if ((err = hwt_pts_add_sink(pts, &sink)) < 0)
		goto out;
	if ((err = hwt_pts_run(pts)) < 0 && diag && !diag->msg[0])
		hwt_probe_diag_at(diag, NULL, 0, "decoding the recording's Intel PT failed: %s",
				  hwt_strerror(err));
out:
	hwt_pts_close(pts);
	for (size_t i = 0; i < r.nthreads; i++)
		free(r.threads[i].from);
	free(r.threads);
	free(r.stack);
	free(r.ips);
	free(r.w);
	free(pids);
	return err;
}
