/*
 * probe/pt.c - PT probes: pt:OBJ:FUNC:entry, pt:OBJ:FUNC:return and
 * pt:OBJ:FUNC+OFF fire from decoded Intel PT control flow, with the
 * decoder's exact stacks and times and no probe effect (FreeBSD kinst's
 * semantics without its breakpoints). This file is the decoder-facing
 * hook: resolve the probes to runtime address ranges of every mapping of
 * OBJ (from the recording's sideband), then feed decoded calls, returns
 * and instructions through hwt_probe_pt_flow().
 */
#include "probe/probe_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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

static int resolve_map(void *vctx, int32_t pid, const char *path, uint64_t start, uint64_t end,
		       uint64_t pgoff)
{
	struct resolve_ctx *c = vctx;
	struct hwt_sym_def defs[4];
	struct hwt_sym_obj *obj;
	struct prb_pt_range r;
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
	memset(&r, 0, sizeof(r));
	r.lo = start + (defs[0].file_offset - pgoff);
	r.hi = r.lo + (defs[0].size ? defs[0].size : 1);
	r.at = r.lo + c->p->info.offset;
	r.pid = pid;
	r.probe = (uint32_t)c->probe;
	c->found++;
	return add_range(c->rt, &r);
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
		if ((err = prb_syms_each_map(rt->syms, p->object, resolve_map, &c)) < 0)
			return err;
		if (!c.found) {
			if (c.err == -HWT_ENOSYM) {
				if (diag)
					hwt_probe_diag_at(diag, prog->text, p->pos,
							  "function '%s' not found in %s; list its functions "
							  "with 'nm -C' on it",
							  p->func, p->object);
				return -HWT_ENOSYM;
			}
			if (diag)
				hwt_probe_diag_at(diag, prog->text, p->pos,
						  "%s: no object '%s' was mapped in the recording (give "
						  "its path or basename as the traced process mapped it)",
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

		if (r->pid != ev->pid)
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
