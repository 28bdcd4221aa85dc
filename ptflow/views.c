/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptflow/views.c - what hwt_ptf_finish() makes of the flow state, and the
 * views' accessors and printers: the call tree's nodes become profile
 * samples (one per distinct thread and stack, weighted by instructions or
 * time), calls become timeline spans (short ones merged, the total capped),
 * functions are ranked for the calls table with their latency histograms,
 * and the shown function's instructions are decoded, symbolized to
 * file:line and joined with their counts and branch targets.
 */
#include "ptflow/ptf_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Frames                                                                    */

int ptf_func_frame(struct hwt_ptf *ptf, uint32_t fi, uint32_t *id)
{
	struct ptf_func *f = &ptf->funcs[fi];
	struct hwt_rep_frame fr;
	int err;

	if (f->frame != PTF_NONE) {
		*id = f->frame;
		return 0;
	}
	memset(&fr, 0, sizeof(fr));
	/* Without a symbol the label ("[object]", "0x...") is the name, so
	 * that every view shows the function the same way. */
	fr.function = f->name ? f->name : (f->path || f->key ? f->label : NULL);
	fr.object = f->path;
	fr.kind = f->kernel ? HWT_REP_KIND_KERNEL : HWT_REP_KIND_USER;
	fr.addr = f->start;
	err = hwt_rep_dict_frame(ptf->dict, &fr, &f->frame);
	if (err < 0)
		return err;
	*id = f->frame;
	return 0;
}

/* The frame below a thread's depth-0 code: what called it before the
 * trace began. */
static int root_frame(struct hwt_ptf *ptf, uint32_t *id)
{
	struct hwt_rep_frame fr;

	memset(&fr, 0, sizeof(fr));
	fr.function = "[before the trace]";
	return hwt_rep_dict_frame(ptf->dict, &fr, id);
}

/* The frames of node's stack, leaf first, into ids (at most max). The root
 * frame is there only for a thread whose trace shows it had callers (a
 * return out of its depth-0 code): a program traced from its start has
 * none. */
static int node_frames(struct hwt_ptf *ptf, uint32_t node, uint32_t *ids, size_t max, size_t *n)
{
	const struct ptf_thread *t = &ptf->threads[ptf->nodes[node].thread];
	size_t k = 0;
	int err;

	for (uint32_t i = node; i != PTF_NONE && k < max; i = ptf->nodes[i].parent) {
		if (ptf->nodes[i].func == PTF_NONE && k && !t->older_frames)
			break;
		if (ptf->nodes[i].func == PTF_NONE)
			err = root_frame(ptf, &ids[k]);
		else
			err = ptf_func_frame(ptf, ptf->nodes[i].func, &ids[k]);
		if (err < 0)
			return err;
		k++;
	}
	*n = k;
	return 0;
}

static const char *thread_comm(struct hwt_ptf *ptf, const struct ptf_thread *t)
{
	if (!ptf->cfg.aspace || t->tid < 0)
		return NULL;
	return hwt_sym_aspace_comm_of(ptf->cfg.aspace, (uint32_t)t->tid, t->last_time);
}

/* ------------------------------------------------------------------------ */
/* TIMELINE                                                                  */

static int span(struct hwt_ptf *ptf, struct ptf_thread *t, const char *name, uint64_t begin,
		uint64_t end)
{
	if (ptf->st.spans >= ptf->cfg.timeline_max) {
		if (!ptf->st.spans_dropped++)
			return hwt_rep_timeline_instant(ptf->cfg.timeline, t->pid, t->tid,
							"[hwtrace: span limit reached, later calls "
							"not shown]",
							begin);
		return 0;
	}
	ptf->st.spans++;
	return hwt_rep_timeline_span(ptf->cfg.timeline, t->pid, t->tid, name, begin,
				     end >= begin ? end : begin);
}

int ptf_timeline_flush(struct hwt_ptf *ptf, struct ptf_thread *t, struct ptf_frame *f)
{
	const char *name;
	int err;

	if (!f->mcount)
		return 0;
	name = ptf->funcs[f->mfunc].label;
	if (f->mcount > 1) {
		const char *name2 = f->mfunc2 != PTF_NONE ? ptf->funcs[f->mfunc2].label : NULL;
		size_t need = strlen(name) + (name2 ? strlen(name2) : 0) + 48;

		err = ptf_grow((void **)&ptf->scratch, &ptf->capscratch, need, 1);
		if (err < 0)
			return err;
		snprintf(ptf->scratch, ptf->capscratch, "%s%s%s%s (%" PRIu32 " calls)", name,
			 name2 ? ", " : "", name2 ? name2 : "", f->mmore ? ", ..." : "", f->mcount);
		name = ptf->scratch;
	}
	err = span(ptf, t, name, f->mbegin, f->mend);
	f->mcount = 0;
	return err;
}

/* The frame at level closes at end (its clock: time, or instructions
 * without time). */
int ptf_timeline_call(struct hwt_ptf *ptf, struct ptf_thread *t, size_t level, uint64_t end)
{
	struct ptf_frame *f = &t->f[level], *parent = &t->f[level - 1];
	uint64_t begin, stop, min = ptf->cfg.timeline_min;
	int err;

	if (f->entry_timed && t->has_time) {
		begin = f->entry_time;
		stop = end;
	} else if (!ptf->st.timed) {
		begin = f->entry_insns;
		stop = t->insns;
	} else {
		begin = stop = end; /* entered before time was known */
	}
	err = ptf_timeline_flush(ptf, t, f);
	if (err < 0)
		return err;
	if (min && stop - begin < min) {
		if (parent->mcount) {
			if (f->func != parent->mfunc && f->func != parent->mfunc2) {
				if (parent->mfunc2 == PTF_NONE)
					parent->mfunc2 = f->func;
				else
					parent->mmore = true;
			}
			parent->mend = stop;
			parent->mcount++;
			ptf->st.spans_merged++;
			return 0;
		}
		parent->mfunc = f->func;
		parent->mfunc2 = PTF_NONE;
		parent->mmore = false;
		parent->mcount = 1;
		parent->mbegin = begin;
		parent->mend = stop;
		return 0;
	}
	err = ptf_timeline_flush(ptf, t, parent);
	if (err < 0)
		return err;
	return span(ptf, t, ptf->funcs[f->func].label, begin, stop);
}

/* ------------------------------------------------------------------------ */
/* Finish                                                                    */

static int emit_profile(struct hwt_ptf *ptf)
{
	uint32_t *ids = malloc(HWT_REP_MAX_DEPTH * sizeof(*ids));
	int err = 0;

	if (!ids)
		return -ENOMEM;
	/* Every instruction is counted: say so (times are estimates). */
	if (ptf->cfg.weight == HWT_PTF_WEIGHT_INSNS)
		hwt_rep_profile_exact(ptf->cfg.profile, "instructions");
	for (size_t i = 0; i < ptf->nnodes && err >= 0; i++) {
		const struct ptf_node *nd = &ptf->nodes[i];
		const struct ptf_thread *t = &ptf->threads[nd->thread];
		uint64_t w = ptf->cfg.weight == HWT_PTF_WEIGHT_TIME ? nd->self_ns : nd->self_insns;
		struct hwt_rep_sample s;
		size_t n;

		if (!w)
			continue;
		err = node_frames(ptf, (uint32_t)i, ids, HWT_REP_MAX_DEPTH, &n);
		if (err < 0)
			break;
		memset(&s, 0, sizeof(s));
		s.event = ptf->cfg.weight == HWT_PTF_WEIGHT_TIME ? "time-ns" : "instructions";
		s.weight = w;
		s.pid = t->pid;
		s.tid = t->tid;
		s.cpu = -1;
		s.comm = thread_comm(ptf, t);
		s.frame_ids = ids;
		s.nframes = n;
		err = hwt_rep_profile_add(ptf->cfg.profile, &s);
	}
	free(ids);
	return err < 0 ? err : 0;
}

/* The calls table's order: most self instructions first. */
struct func_key {
	uint64_t self, calls;
	const char *label;
	uint32_t idx;
};

static int cmp_func(const void *pa, const void *pb)
{
	const struct func_key *a = pa, *b = pb;
	int c;

	if (a->self != b->self)
		return a->self > b->self ? -1 : 1;
	if (a->calls != b->calls)
		return a->calls > b->calls ? -1 : 1;
	c = strcmp(a->label, b->label);
	return c ? c : (a->idx < b->idx ? -1 : a->idx > b->idx);
}

static int cmp_row(const void *pa, const void *pb)
{
	const struct ptf_row *a = pa, *b = pb;

	return a->ip < b->ip ? -1 : a->ip > b->ip;
}

static int cmp_tgt(const void *pa, const void *pb)
{
	const struct ptf_tgt *a = pa, *b = pb;

	if (a->from != b->from)
		return a->from < b->from ? -1 : 1;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return a->target < b->target ? -1 : a->target > b->target;
}

static int cmp_stack(const void *pa, const void *pb)
{
	const struct ptf_stack *a = pa, *b = pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return a->node < b->node ? -1 : a->node > b->node;
}

static int finish_branches(struct hwt_ptf *ptf)
{
	struct ptf_func *f;
	size_t nframes = 0;
	int err;

	if (ptf->target == PTF_NONE)
		return 0;
	f = &ptf->funcs[ptf->target];
	/* Every instruction of the function, executed or not, from the code
	 * the trace ran. */
	if (ptf->image && f->size) {
		for (uint64_t ip = f->start; ip < f->start + f->size;) {
			struct hwt_dec_insn insn;
			struct ptf_row *row;
			uint32_t k;

			if (hwt_dec_insn_decode(ptf->image, ip, ptf->mode, &insn) < 0)
				break;
			k = ptf_map_get(&ptf->row_map, ip, 0);
			if (k == PTF_NONE) {
				err = ptf_grow((void **)&ptf->rows, &ptf->caprows, ptf->nrows + 1,
					       sizeof(*ptf->rows));
				if (err < 0)
					return err;
				row = &ptf->rows[ptf->nrows];
				memset(row, 0, sizeof(*row));
				row->ip = ip;
				err = ptf_map_put(&ptf->row_map, ip, 0, (uint32_t)ptf->nrows);
				if (err < 0)
					return err;
				ptf->nrows++;
			} else {
				row = &ptf->rows[k];
			}
			row->decoded = true;
			row->insn = insn;
			ip += insn.size;
		}
	}
	for (size_t i = 0; i < ptf->nrows; i++) {
		struct ptf_row *row = &ptf->rows[i];

		if (!row->decoded && ptf->image &&
		    hwt_dec_insn_decode(ptf->image, row->ip, ptf->mode, &row->insn) == 0)
			row->decoded = true;
		if (f->obj) {
			struct hwt_sym_frame sf;
			struct hwt_sym_info si;

			if (hwt_sym_lookup(f->obj, row->ip - f->bias, 0, &si, &sf, 1) > 0 &&
			    sf.file) {
				row->file = sf.file;
				row->line = sf.line;
			}
		}
	}
	if (ptf->nrows > 1)
		qsort(ptf->rows, ptf->nrows, sizeof(*ptf->rows), cmp_row);
	ptf->shown_first = 0;
	ptf->shown_n = ptf->nrows;
	if (ptf->cfg.branch_off >= 0) {
		ptf->shown_n = 0;
		for (size_t i = 0; i < ptf->nrows; i++) {
			if (ptf->rows[i].ip == f->start + (uint64_t)ptf->cfg.branch_off) {
				ptf->shown_first = i;
				ptf->shown_n = 1;
			}
		}
	}
	/* Indirect targets, grouped by branch, most frequent first. */
	if (ptf->ntgts > 1)
		qsort(ptf->tgts, ptf->ntgts, sizeof(*ptf->tgts), cmp_tgt);
	ptf->tgt_sorted = calloc(ptf->ntgts ? ptf->ntgts : 1, sizeof(*ptf->tgt_sorted));
	if (!ptf->tgt_sorted)
		return -ENOMEM;
	for (size_t i = 0; i < ptf->ntgts; i++) {
		struct ptf_tgt *g = &ptf->tgts[i];
		struct hwt_ptf_target *o = &ptf->tgt_sorted[i];
		uint32_t fi;

		o->target = g->target;
		o->count = g->count;
		err = ptf_resolve(ptf, f->pid, 0, g->target, false, &fi);
		if (err < 0)
			return err;
		/* ptf->funcs may have moved: take f again. */
		f = &ptf->funcs[ptf->target];
		if (ptf->funcs[fi].name) {
			o->function = ptf->funcs[fi].name;
			o->offset = g->target - ptf->funcs[fi].start;
		}
	}
	for (size_t i = 0, r = 0; i < ptf->ntgts; i++) {
		while (r < ptf->nrows && ptf->rows[r].ip < ptf->tgts[i].from)
			r++;
		if (r < ptf->nrows && ptf->rows[r].ip == ptf->tgts[i].from) {
			if (!ptf->rows[r].ntargets)
				ptf->rows[r].tfirst = i;
			ptf->rows[r].ntargets++;
		}
	}
	/* Stacks, most frequent first, as frame ids. */
	if (ptf->nstacks > 1)
		qsort(ptf->stacks, ptf->nstacks, sizeof(*ptf->stacks), cmp_stack);
	for (size_t i = 0; i < ptf->nstacks; i++) {
		size_t d = 0;

		for (uint32_t k = ptf->stacks[i].node; k != PTF_NONE; k = ptf->nodes[k].parent)
			d++;
		ptf->stacks[i].first = nframes;
		ptf->stacks[i].n = d < HWT_REP_MAX_DEPTH ? d : HWT_REP_MAX_DEPTH;
		nframes += ptf->stacks[i].n;
	}
	ptf->stack_frames = malloc((nframes ? nframes : 1) * sizeof(*ptf->stack_frames));
	if (!ptf->stack_frames)
		return -ENOMEM;
	for (size_t i = 0; i < ptf->nstacks; i++) {
		size_t n;

		err = node_frames(ptf, ptf->stacks[i].node,
				  ptf->stack_frames + ptf->stacks[i].first, ptf->stacks[i].n, &n);
		if (err < 0)
			return err;
		/* Without the root frame (a thread traced from its start)
		 * the stack is a frame shorter than its nodes. */
		ptf->stacks[i].n = n;
	}
	return 0;
}

int ptf_finish_views(struct hwt_ptf *ptf)
{
	struct func_key *keys;
	int err;

	for (size_t i = 0; i < ptf->nnodes; i++) {
		const struct ptf_node *nd = &ptf->nodes[i];

		if (nd->func != PTF_NONE) {
			ptf->funcs[nd->func].self_insns += nd->self_insns;
			ptf->funcs[nd->func].self_ns += nd->self_ns;
		}
	}
	/* The functions that ran: the one count every view gives (BRANCHES
	 * names the function of every block, and those that only ran inside
	 * another's frame are no functions of the report). */
	ptf->st.functions = ptf->st.unsymbolized = 0;
	for (size_t i = 0; i < ptf->nfuncs; i++) {
		if (!ptf->funcs[i].calls && !ptf->funcs[i].self_insns)
			continue;
		ptf->st.functions++;
		ptf->st.unsymbolized += !ptf->funcs[i].name;
	}
	ptf->order = malloc((ptf->nfuncs ? ptf->nfuncs : 1) * sizeof(*ptf->order));
	if (!ptf->order)
		return -ENOMEM;
	keys = malloc((ptf->nfuncs ? ptf->nfuncs : 1) * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < ptf->nfuncs; i++)
		keys[i] = (struct func_key){ptf->funcs[i].self_insns, ptf->funcs[i].calls,
					    ptf->funcs[i].label, (uint32_t)i};
	if (ptf->nfuncs > 1)
		qsort(keys, ptf->nfuncs, sizeof(*keys), cmp_func);
	for (size_t i = 0; i < ptf->nfuncs; i++)
		ptf->order[i] = keys[i].idx;
	free(keys);
	if (ptf->cfg.views & HWT_PTF_PROFILE) {
		err = emit_profile(ptf);
		if (err < 0)
			return err;
	}
	if (ptf->cfg.views & HWT_PTF_TIMELINE) {
		for (size_t i = 0; i < ptf->nthreads; i++) {
			const char *comm = thread_comm(ptf, &ptf->threads[i]);
			char name[64];

			if (!comm) {
				snprintf(name, sizeof(name), "tid %" PRId32, ptf->threads[i].tid);
				comm = name;
			}
			err = hwt_rep_timeline_thread(ptf->cfg.timeline, ptf->threads[i].pid,
						      ptf->threads[i].tid, comm);
			if (err < 0)
				return err;
		}
	}
	if (ptf->cfg.views & HWT_PTF_BRANCHES)
		return finish_branches(ptf);
	return 0;
}

void ptf_free_views(struct hwt_ptf *ptf)
{
	free(ptf->order);
	free(ptf->tgt_sorted);
	free(ptf->stack_frames);
}

/* ------------------------------------------------------------------------ */
/* CALLS                                                                     */

size_t hwt_ptf_calls_count(const struct hwt_ptf *ptf)
{
	return ptf && ptf->finished ? ptf->nfuncs : 0;
}

static void call_stats(const struct hwt_ptf *ptf, uint32_t fi, struct hwt_ptf_call_stats *o)
{
	const struct ptf_func *f = &ptf->funcs[fi];

	memset(o, 0, sizeof(*o));
	o->function = f->label;
	o->object = f->path;
	o->addr = f->entry;
	o->calls = f->calls;
	o->returns = f->returns;
	o->self_insns = f->self_insns;
	o->incl_insns = f->incl_insns;
	o->timed = f->timed_returns > 0 || (ptf->st.timed && !f->returns);
	o->self_ns = f->self_ns;
	o->incl_ns = f->incl_ns;
	o->min_ns = f->timed_returns ? f->min_ns : 0;
	o->max_ns = f->max_ns;
	o->buckets = f->timed_returns ? f->hist_ns : f->hist_insns;
}

int hwt_ptf_calls_get(const struct hwt_ptf *ptf, size_t i, struct hwt_ptf_call_stats *out)
{
	if (!ptf || !out || !ptf->finished || i >= ptf->nfuncs)
		return -HWT_EINVAL;
	call_stats(ptf, ptf->order[i], out);
	return 0;
}

int hwt_ptf_calls_find(const struct hwt_ptf *ptf, const char *name, struct hwt_ptf_call_stats *out)
{
	if (!ptf || !name || !out || !ptf->finished)
		return -HWT_EINVAL;
	for (size_t i = 0; i < ptf->nfuncs; i++) {
		if (!strcmp(ptf->funcs[ptf->order[i]].label, name)) {
			call_stats(ptf, ptf->order[i], out);
			return 0;
		}
	}
	return -HWT_ENOSYM;
}

static int json_str(struct hwt_buf *out, const char *s)
{
	int err = hwt_buf_append(out, "\"", 1);

	for (; s && *s && err >= 0; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			err = hwt_buf_printf(out, "\\%c", c);
		else if (c < 0x20)
			err = hwt_buf_printf(out, "\\u%04x", c);
		else
			err = hwt_buf_append(out, s, 1);
	}
	if (err >= 0)
		err = hwt_buf_append(out, "\"", 1);
	return err;
}

/* ns as text with a unit a person reads at once. */
static const char *fmt_ns(char *buf, size_t size, uint64_t ns)
{
	if (ns < 10000)
		snprintf(buf, size, "%" PRIu64 "ns", ns);
	else if (ns < 10000000)
		snprintf(buf, size, "%.1fus", (double)ns / 1e3);
	else if (ns < 10000000000ull)
		snprintf(buf, size, "%.1fms", (double)ns / 1e6);
	else
		snprintf(buf, size, "%.2fs", (double)ns / 1e9);
	return buf;
}

static bool call_shown(const struct hwt_ptf_call_stats *c, unsigned int flags)
{
	return c->calls || ((flags & HWT_PTF_PRINT_ALL) && c->self_insns);
}

static int calls_hist_text(const struct hwt_ptf *ptf, unsigned int flags, size_t max_rows,
			   bool timed, struct hwt_buf *out)
{
	struct hwt_rep_agg_config ac;
	struct hwt_rep_agg *agg = NULL;
	struct hwt_rep_dict *dict = NULL;
	int err;

	err = hwt_rep_dict_alloc(&dict);
	if (err < 0)
		return err;
	hwt_rep_agg_config_init(&ac);
	ac.name = timed ? "latency_ns" : "latency_insns";
	ac.func = HWT_REP_QUANTIZE;
	ac.nkeys = 1;
	ac.key_types[0] = HWT_REP_STR;
	ac.key_names[0] = "function";
	err = hwt_rep_agg_alloc(&agg, dict, &ac);
	for (size_t i = 0, shown = 0; err >= 0 && i < ptf->nfuncs; i++) {
		struct hwt_ptf_call_stats c;
		struct hwt_rep_val key = {HWT_REP_STR, 0};
		uint32_t id;

		call_stats(ptf, ptf->order[i], &c);
		if (!call_shown(&c, flags) || (max_rows && shown >= max_rows))
			continue;
		shown++;
		if (!c.buckets)
			continue;
		err = hwt_rep_dict_str(dict, c.function, strlen(c.function), &id);
		key.v = id;
		for (size_t b = 0; err >= 0 && b < HWT_REP_QUANTIZE_BUCKETS; b++) {
			if (c.buckets[b])
				err = hwt_rep_agg_update(agg, &key, hwt_rep_quantize_label(b),
							 c.buckets[b]);
		}
	}
	if (err >= 0 && hwt_rep_agg_nrows(agg)) {
		err = hwt_buf_printf(out, "\n");
		if (err >= 0)
			err = hwt_rep_agg_print(agg, HWT_REP_FMT_TEXT, out);
	}
	hwt_rep_agg_free(agg);
	hwt_rep_dict_free(dict);
	return err;
}

int hwt_ptf_calls_print(const struct hwt_ptf *ptf, enum hwt_rep_format format, unsigned int flags,
			size_t max_rows, struct hwt_buf *out)
{
	bool timed, json = format == HWT_REP_FMT_JSON;
	uint64_t calls = 0;
	size_t shown = 0, called = 0;
	int err = 0;

	if (!ptf || !out || !ptf->finished || (format != HWT_REP_FMT_TEXT && !json))
		return -HWT_EINVAL;
	timed = ptf->st.timed;
	for (size_t i = 0; i < ptf->nfuncs; i++) {
		calls += ptf->funcs[i].calls;
		called += ptf->funcs[i].calls != 0;
	}
	/* functions: those that ran (hwt_ptf_stats.functions, the count
	 * every view gives); called: those of them a call entered, the rows
	 * without --all. */
	if (json) {
		err = hwt_buf_printf(out,
				     "{\"functions\":%" PRIu64 ",\"called\":%zu,\"calls\":%" PRIu64
				     ",\"instructions\":%" PRIu64 ",\"timed\":%s,\"rows\":[",
				     ptf->st.functions, called, calls, ptf->st.insns,
				     timed ? "true" : "false");
	} else {
		err = hwt_buf_printf(
		    out,
		    "# Calls, exact (from the decoded trace): %" PRIu64 " instructions in %" PRIu64
		    " functions, %" PRIu64 " calls to %zu of them%s\n",
		    ptf->st.insns, ptf->st.functions, calls, called,
		    !timed		? " (no timing in the trace: latencies in instructions)"
		    : ptf->cfg.emulated ? " (times are the PT emulator's clock, which counts "
					  "instructions: not measured)"
					: "");
		if (err >= 0)
			err = hwt_buf_printf(out, "%10s %14s %14s", "CALLS", "SELF INSNS",
					     "INCL INSNS");
		if (err >= 0 && timed)
			err = hwt_buf_printf(out, " %10s %10s %10s %10s", "SELF TIME", "INCL TIME",
					     "AVG", "MAX");
		if (err >= 0)
			err = hwt_buf_printf(out, "  FUNCTION\n");
	}
	for (size_t i = 0; i < ptf->nfuncs && err >= 0; i++) {
		struct hwt_ptf_call_stats c;
		char b1[32], b2[32], b3[32], b4[32];

		call_stats(ptf, ptf->order[i], &c);
		if (!call_shown(&c, flags) || (max_rows && shown >= max_rows))
			continue;
		if (json) {
			err = hwt_buf_printf(out, "%s{\"function\":", shown ? "," : "");
			if (err >= 0)
				err = json_str(out, c.function);
			if (err >= 0)
				err = hwt_buf_printf(out, ",\"object\":");
			if (err >= 0)
				err = c.object ? json_str(out, c.object)
					       : hwt_buf_printf(out, "null");
			if (err >= 0)
				err = hwt_buf_printf(
				    out,
				    ",\"addr\":%" PRIu64 ",\"calls\":%" PRIu64
				    ",\"returns\":%" PRIu64 ",\"self_insns\":%" PRIu64
				    ",\"incl_insns\":%" PRIu64,
				    c.addr, c.calls, c.returns, c.self_insns, c.incl_insns);
			if (err >= 0 && c.timed)
				err = hwt_buf_printf(out,
						     ",\"self_ns\":%" PRIu64 ",\"incl_ns\":%" PRIu64
						     ",\"min_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64,
						     c.self_ns, c.incl_ns, c.min_ns, c.max_ns);
			if (err >= 0 && c.buckets) {
				bool first = true;

				err = hwt_buf_printf(out, ",\"latency_unit\":\"%s\",\"latency\":[",
						     c.timed ? "ns" : "insns");
				for (size_t b = 0; b < HWT_REP_QUANTIZE_BUCKETS && err >= 0; b++) {
					if (!c.buckets[b])
						continue;
					err = hwt_buf_printf(
					    out, "%s[%" PRId64 ",%" PRIu64 "]", first ? "" : ",",
					    hwt_rep_quantize_label(b), c.buckets[b]);
					first = false;
				}
				if (err >= 0)
					err = hwt_buf_printf(out, "]");
			}
			if (err >= 0)
				err = hwt_buf_printf(out, "}");
		} else {
			err = hwt_buf_printf(out, "%10" PRIu64 " %14" PRIu64 " %14" PRIu64, c.calls,
					     c.self_insns, c.incl_insns);
			if (err >= 0 && timed)
				err = hwt_buf_printf(
				    out, " %10s %10s %10s %10s", fmt_ns(b1, sizeof(b1), c.self_ns),
				    fmt_ns(b2, sizeof(b2), c.incl_ns),
				    c.returns && c.timed
					? fmt_ns(b3, sizeof(b3), c.incl_ns / c.returns)
					: "-",
				    c.returns && c.timed ? fmt_ns(b4, sizeof(b4), c.max_ns) : "-");
			if (err >= 0)
				err = hwt_buf_printf(out, "  %s\n", c.function);
		}
		shown++;
	}
	if (err < 0)
		return err;
	if (json)
		return hwt_buf_printf(out,
				      "],\"stats\":{\"records\":%" PRIu64 ",\"gaps\":%" PRIu64
				      ",\"unknown_returns\":%" PRIu64 ",\"unwound\":%" PRIu64
				      ",\"lost_frames\":%" PRIu64 ",\"open_frames\":%" PRIu64
				      ",\"unsymbolized\":%" PRIu64 ",\"lost_gaps\":%" PRIu64
				      ",\"lost_bytes\":%" PRIu64 ",\"overflows\":%" PRIu64 "}}\n",
				      ptf->st.records, ptf->st.gaps, ptf->st.unknown_returns,
				      ptf->st.unwound, ptf->st.lost_frames, ptf->st.open_frames,
				      ptf->st.unsymbolized, ptf->st.lost_gaps, ptf->st.lost_bytes,
				      ptf->st.overflows);
	{
		char losses[160];

		/* The losses in the words of every PT output. */
		hwt_dec_losses_str(ptf->st.gaps, ptf->st.lost_gaps, ptf->st.lost_bytes,
				   ptf->st.overflows, losses, sizeof(losses));
		err = hwt_buf_printf(out,
				     "# %s; %" PRIu64 " returns from frames older than the trace, "
				     "%" PRIu64 " frames unwound, %" PRIu64
				     " frames cut by gaps, %" PRIu64 " open at the end\n",
				     losses, ptf->st.unknown_returns, ptf->st.unwound,
				     ptf->st.lost_frames, ptf->st.open_frames);
	}
	if (err >= 0 && (flags & HWT_PTF_PRINT_HIST))
		err = calls_hist_text(ptf, flags, max_rows, timed, out);
	return err;
}

/* ------------------------------------------------------------------------ */
/* BRANCHES                                                                  */

int hwt_ptf_branches_info(const struct hwt_ptf *ptf, struct hwt_ptf_branch_info *info)
{
	const struct ptf_func *f;

	if (!ptf || !info || !ptf->finished || !(ptf->cfg.views & HWT_PTF_BRANCHES))
		return -HWT_EINVAL;
	memset(info, 0, sizeof(*info));
	info->function = ptf->branch_func;
	if (ptf->target == PTF_NONE)
		return 0;
	f = &ptf->funcs[ptf->target];
	info->found = true;
	info->function = f->label;
	info->object = f->path;
	info->start = f->start;
	info->size = f->size;
	info->calls = f->calls;
	info->insns = ptf->target_insns;
	info->ninsns = ptf->shown_n;
	return 0;
}

int hwt_ptf_branches_get(const struct hwt_ptf *ptf, size_t i, struct hwt_ptf_insn_stats *out)
{
	const struct ptf_row *r;

	if (!ptf || !out || !ptf->finished || i >= ptf->shown_n)
		return -HWT_EINVAL;
	r = &ptf->rows[ptf->shown_first + i];
	memset(out, 0, sizeof(*out));
	out->ip = r->ip;
	out->offset = r->ip - ptf->funcs[ptf->target].start;
	out->count = r->count;
	out->decoded = r->decoded;
	out->insn = r->insn;
	out->file = r->file;
	out->line = r->line;
	out->taken = r->taken;
	out->not_taken = r->not_taken;
	out->ntargets = r->ntargets;
	out->targets = r->ntargets ? &ptf->tgt_sorted[r->tfirst] : NULL;
	return 0;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static int branch_row_text(struct hwt_buf *out, const struct hwt_ptf_insn_stats *r)
{
	char dis[128], src[96];
	const char *file = r->file ? strrchr(r->file, '/') : NULL;
	int err;

	if (!r->decoded || hwt_dec_insn_format(&r->insn, dis, sizeof(dis)) < 0)
		snprintf(dis, sizeof(dis), "(code not available)");
	if (r->file)
		snprintf(src, sizeof(src), "%s:%" PRIu32, file ? file + 1 : r->file, r->line);
	else
		snprintf(src, sizeof(src), "-");
	char addr[24], off[24];
	bool more = r->taken + r->not_taken || r->ntargets;

	snprintf(addr, sizeof(addr), "0x%" PRIx64, r->ip);
	snprintf(off, sizeof(off), "+0x%" PRIx64, r->offset);
	err = hwt_buf_printf(out, "%12" PRIu64 "  %-18s %-7s %-22s %-*s", r->count, addr, off, src,
			     more ? 36 : 0, dis);
	if (err >= 0 && r->taken + r->not_taken)
		err = hwt_buf_printf(out,
				     "  taken %" PRIu64 " (%.1f%%), not taken %" PRIu64 " (%.1f%%)",
				     r->taken, pct(r->taken, r->taken + r->not_taken), r->not_taken,
				     pct(r->not_taken, r->taken + r->not_taken));
	if (err >= 0 && r->ntargets) {
		uint64_t total = 0;

		for (size_t k = 0; k < r->ntargets; k++)
			total += r->targets[k].count;
		err = hwt_buf_printf(out, "  ->");
		for (size_t k = 0; k < r->ntargets && err >= 0; k++) {
			const struct hwt_ptf_target *t = &r->targets[k];

			if (t->function && t->offset)
				err = hwt_buf_printf(out, "%s %s+0x%" PRIx64, k ? "," : "",
						     t->function, t->offset);
			else if (t->function)
				err = hwt_buf_printf(out, "%s %s", k ? "," : "", t->function);
			else
				err = hwt_buf_printf(out, "%s 0x%" PRIx64, k ? "," : "", t->target);
			if (err >= 0)
				err = hwt_buf_printf(out, " %" PRIu64 " (%.1f%%)", t->count,
						     pct(t->count, total));
		}
	}
	if (err >= 0)
		err = hwt_buf_printf(out, "\n");
	return err;
}

static int branch_row_json(struct hwt_buf *out, const struct hwt_ptf_insn_stats *r)
{
	char dis[128];
	int err;

	err = hwt_buf_printf(out, "{\"ip\":%" PRIu64 ",\"offset\":%" PRIu64 ",\"count\":%" PRIu64,
			     r->ip, r->offset, r->count);
	if (err >= 0 && r->decoded && hwt_dec_insn_format(&r->insn, dis, sizeof(dis)) >= 0) {
		err = hwt_buf_printf(out, ",\"insn\":");
		if (err >= 0)
			err = json_str(out, dis);
	}
	if (err >= 0 && r->file) {
		err = hwt_buf_printf(out, ",\"file\":");
		if (err >= 0)
			err = json_str(out, r->file);
		if (err >= 0)
			err = hwt_buf_printf(out, ",\"line\":%" PRIu32, r->line);
	}
	if (err >= 0 && r->taken + r->not_taken)
		err = hwt_buf_printf(out, ",\"taken\":%" PRIu64 ",\"not_taken\":%" PRIu64, r->taken,
				     r->not_taken);
	if (err >= 0 && r->ntargets) {
		err = hwt_buf_printf(out, ",\"targets\":[");
		for (size_t k = 0; k < r->ntargets && err >= 0; k++) {
			err =
			    hwt_buf_printf(out, "%s{\"target\":%" PRIu64 ",\"count\":%" PRIu64,
					   k ? "," : "", r->targets[k].target, r->targets[k].count);
			if (err >= 0 && r->targets[k].function) {
				err = hwt_buf_printf(out, ",\"function\":");
				if (err >= 0)
					err = json_str(out, r->targets[k].function);
				if (err >= 0)
					err = hwt_buf_printf(out, ",\"offset\":%" PRIu64,
							     r->targets[k].offset);
			}
			if (err >= 0)
				err = hwt_buf_printf(out, "}");
		}
		if (err >= 0)
			err = hwt_buf_printf(out, "]");
	}
	if (err >= 0)
		err = hwt_buf_printf(out, "}");
	return err;
}

int hwt_ptf_branches_print(const struct hwt_ptf *ptf, enum hwt_rep_format format,
			   struct hwt_buf *out)
{
	struct hwt_ptf_branch_info info;
	bool json = format == HWT_REP_FMT_JSON;
	int err;

	if (!out || (format != HWT_REP_FMT_TEXT && !json))
		return -HWT_EINVAL;
	err = hwt_ptf_branches_info(ptf, &info);
	if (err < 0)
		return err;
	if (!info.found)
		return -HWT_ENOSYM;
	if (json) {
		err = hwt_buf_printf(out, "{\"function\":");
		if (err >= 0)
			err = json_str(out, info.function);
		if (err >= 0)
			err = hwt_buf_printf(out, ",\"object\":");
		if (err >= 0)
			err =
			    info.object ? json_str(out, info.object) : hwt_buf_printf(out, "null");
		if (err >= 0)
			err = hwt_buf_printf(out,
					     ",\"start\":%" PRIu64 ",\"size\":%" PRIu64
					     ",\"calls\":%" PRIu64 ",\"instructions\":%" PRIu64
					     ",\"rows\":[",
					     info.start, info.size, info.calls, info.insns);
	} else {
		err = hwt_buf_printf(out,
				     "# %s in %s at 0x%" PRIx64 " (%" PRIu64 " bytes): %" PRIu64
				     " calls, %" PRIu64 " instructions executed (exact)\n",
				     info.function, info.object ? info.object : "[unknown]",
				     info.start, info.size, info.calls, info.insns);
		if (err >= 0 && ptf->cfg.emulated)
			err = hwt_buf_printf(out,
					     "# addresses are the PT emulator's: where "
					     "qemu-user loaded the code (offsets and source lines "
					     "are the program's)\n");
		if (err >= 0 && ptf->st.branch_instances)
			err = hwt_buf_printf(
			    out, "# %" PRIu64 " other function(s) of this name not shown\n",
			    ptf->st.branch_instances);
		if (err >= 0)
			err =
			    hwt_buf_printf(out, "%12s  %-18s %-7s %-22s %-36s  %s\n", "COUNT",
					   "ADDRESS", "OFFSET", "SOURCE", "INSTRUCTION", "BRANCH");
	}
	for (size_t i = 0; i < info.ninsns && err >= 0; i++) {
		struct hwt_ptf_insn_stats r;

		err = hwt_ptf_branches_get(ptf, i, &r);
		if (err >= 0 && json)
			err = hwt_buf_printf(out, "%s", i ? "," : "");
		if (err >= 0)
			err = json ? branch_row_json(out, &r) : branch_row_text(out, &r);
	}
	if (err >= 0 && json)
		err = hwt_buf_printf(out, "]}\n");
	return err;
}

int hwt_ptf_stacks_count(const struct hwt_ptf *ptf, size_t *n, uint64_t *total)
{
	if (!ptf || !ptf->finished || !(ptf->cfg.views & HWT_PTF_BRANCHES))
		return -HWT_EINVAL;
	if (n)
		*n = ptf->nstacks;
	if (total)
		*total = ptf->stacks_total;
	return 0;
}

int hwt_ptf_stacks_get(const struct hwt_ptf *ptf, size_t i, const uint32_t **frames,
		       uint64_t *count)
{
	if (!ptf || !frames || !count || !ptf->finished || i >= ptf->nstacks)
		return -HWT_EINVAL;
	*frames = ptf->stack_frames + ptf->stacks[i].first;
	*count = ptf->stacks[i].count;
	return (int)ptf->stacks[i].n;
}

const struct hwt_rep_dict *hwt_ptf_dict(const struct hwt_ptf *ptf)
{
	return ptf ? ptf->dict : NULL;
}

int hwt_ptf_stacks_print(const struct hwt_ptf *ptf, enum hwt_rep_format format, struct hwt_buf *out)
{
	struct hwt_rep_agg_config ac;
	struct hwt_rep_agg *agg = NULL;
	int err;

	if (!ptf || !out || !ptf->finished || !(ptf->cfg.views & HWT_PTF_BRANCHES) ||
	    (format != HWT_REP_FMT_TEXT && format != HWT_REP_FMT_JSON))
		return -HWT_EINVAL;
	hwt_rep_agg_config_init(&ac);
	ac.name = "stacks";
	ac.func = HWT_REP_COUNT;
	ac.nkeys = 1;
	ac.key_types[0] = HWT_REP_STACK;
	ac.key_names[0] = "stack";
	/* The dict gains the stacks: it is the ptf's own, or the profile's,
	 * whose ids do not change by it. */
	err = hwt_rep_agg_alloc(&agg, ptf->dict, &ac);
	for (size_t i = 0; i < ptf->nstacks && err >= 0; i++) {
		struct hwt_rep_val key = {HWT_REP_STACK, 0};
		uint32_t id;

		err = hwt_rep_dict_stack(ptf->dict, ptf->stack_frames + ptf->stacks[i].first,
					 ptf->stacks[i].n, &id);
		key.v = id;
		if (err >= 0)
			err = hwt_rep_agg_update(agg, &key, 0, ptf->stacks[i].count);
	}
	if (err >= 0 && format == HWT_REP_FMT_TEXT && ptf->target != PTF_NONE)
		err = hwt_buf_printf(out,
				     "# call stacks reaching %s+0x%" PRIx64 " (0x%" PRIx64
				     "): %" PRIu64 " executions, %zu distinct stacks\n",
				     ptf->funcs[ptf->target].label,
				     ptf->stacks_ip - ptf->funcs[ptf->target].start, ptf->stacks_ip,
				     ptf->stacks_total, ptf->nstacks);
	if (err >= 0)
		err = hwt_rep_agg_print(agg, format, out);
	hwt_rep_agg_free(agg);
	return err;
}
