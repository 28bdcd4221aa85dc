/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/rt.c - the runtime: one run of a program. It interprets each
 * clause's byte code for a probe hit on a fixed value stack, keeps
 * thread-local variables in a hash keyed by (tid, variable), aggregates
 * through report/ (keys interned in its dict, so strings compare as ids),
 * formats printf() output and resolves func/ustack/kstack through the
 * address-space tracker. Per hit it allocates nothing unless it meets a
 * key, thread, string or ip it has not seen before.
 */
#include "probe/probe_bpf_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void hwt_probe_rt_free(struct hwt_probe_rt *rt)
{
	if (!rt)
		return;
	if (rt->aggs)
		for (size_t i = 0; i < rt->prog->naggs; i++)
			hwt_rep_agg_free(rt->aggs[i]);
	free(rt->aggs);
	hwt_unw_free(rt->unw);
	if (rt->maps)
		for (size_t i = 0; i < rt->prog->naggs; i++)
			prb_tmap_fini(&rt->maps[i]);
	free(rt->maps);
	free(rt->str_ids);
	free(rt->probe_ids);
	free(rt->func_ids);
	free(rt->this_vals);
	free(rt->pt);
	free(rt->agg_max);
	free(rt->agg_drops);
	prb_map_fini(&rt->self);
	prb_syms_free(rt->syms);
	hwt_rep_dict_free(rt->dict);
	hwt_buf_fini(&rt->out);
	free(rt);
}

static int intern(struct hwt_probe_rt *rt, const char *s, uint32_t *id)
{
	return hwt_rep_dict_str(rt->dict, s ? s : "", s ? strlen(s) : 0, id);
}

/* A new, empty aggregation with agg i's function and keys. */
static int agg_alloc(struct hwt_probe_rt *rt, size_t i, struct hwt_rep_agg **out)
{
	const struct prb_agg *a = &rt->prog->aggs[i];
	struct hwt_rep_agg_config ac;

	hwt_rep_agg_config_init(&ac);
	ac.name = a->name;
	ac.func = a->func;
	ac.low = a->low;
	ac.high = a->high;
	ac.step = a->step;
	ac.nkeys = a->nkeys;
	for (size_t k = 0; k < a->nkeys; k++) {
		ac.key_types[k] = a->key_types[k];
		ac.key_names[k] = a->key_names[k];
	}
	ac.log = rt->cfg.log;
	return hwt_rep_agg_alloc(out, rt->dict, &ac);
}

/* The limits of cfg, as the BPF maps would hold them. */
static int set_limits(struct hwt_probe_rt *rt)
{
	struct prb_bpf_limits lim = {
	    .aggsize = rt->cfg.aggsize,
	    .dynvarsize = rt->cfg.dynvarsize,
	    .bufsize = rt->cfg.bufsize,
	    .strsize = rt->cfg.strsize,
	    .nstacks = rt->cfg.nstacks,
	};
	struct prb_bpf_layout lay;
	int err;

	if ((err = prb_bpf_layout_init(&lay, rt->prog, &lim)) < 0)
		return err;
	rt->agg_max = calloc(rt->prog->naggs + 1, sizeof(*rt->agg_max));
	rt->agg_drops = calloc(rt->prog->naggs + 1, sizeof(*rt->agg_drops));
	if (!rt->agg_max || !rt->agg_drops) {
		prb_bpf_layout_fini(&lay);
		return -ENOMEM;
	}
	for (size_t i = 0; i < rt->prog->naggs; i++)
		rt->agg_max[i] = prb_agg_max_keys(&lay, i);
	rt->self_max = lay.self_entries;
	rt->strsize = lay.lim.strsize;
	prb_bpf_layout_fini(&lay);
	return 0;
}

int hwt_probe_rt_alloc(struct hwt_probe_rt **out, const struct hwt_probe_prog *prog,
		       const struct hwt_probe_config *cfg)
{
	struct hwt_probe_config pcfg;
	struct hwt_probe_rt *rt;
	int err = -ENOMEM;

	if (!out || !prog)
		return -HWT_EINVAL;
	*out = NULL;
	pcfg = prog->cfg;
	if (cfg && hwt_opts_copy(&pcfg, sizeof(pcfg), cfg) < 0)
		return -HWT_EINVAL;
	if (!(rt = calloc(1, sizeof(*rt))))
		return -ENOMEM;
	rt->prog = prog;
	rt->cfg = pcfg;
	hwt_buf_init(&rt->out);
	if ((err = hwt_rep_dict_alloc(&rt->dict)) < 0)
		goto error;
	if ((err = prb_syms_alloc(&rt->syms, rt->dict, rt->cfg.proc_root, &rt->cfg.log)) < 0)
		goto error;
	err = -ENOMEM;
	rt->aggs = calloc(prog->naggs + 1, sizeof(*rt->aggs));
	rt->maps = calloc(prog->naggs + 1, sizeof(*rt->maps));
	rt->str_ids = calloc(prog->nstrs + 1, sizeof(*rt->str_ids));
	rt->probe_ids = calloc(prog->nprobes + 1, sizeof(*rt->probe_ids));
	rt->func_ids = calloc(prog->nprobes + 1, sizeof(*rt->func_ids));
	rt->this_vals = calloc(prog->nthis + 1, sizeof(*rt->this_vals));
	if (!rt->aggs || !rt->maps || !rt->str_ids || !rt->probe_ids || !rt->func_ids ||
	    !rt->this_vals)
		goto error;
	for (size_t i = 0; i < prog->nstrs; i++)
		if ((err = intern(rt, prog->strs[i], &rt->str_ids[i])) < 0)
			goto error;
	for (size_t i = 0; i < prog->nprobes; i++) {
		if ((err = intern(rt, prog->probes[i].text, &rt->probe_ids[i])) < 0)
			goto error;
		if (prog->probes[i].func &&
		    (err = intern(rt, prog->probes[i].func, &rt->func_ids[i])) < 0)
			goto error;
	}
	for (size_t i = 0; i < prog->naggs; i++) {
		if (prog->aggs[i].plain) {
			rt->maps[i].nkeys = prog->aggs[i].nkeys;
			continue;
		}
		if ((err = agg_alloc(rt, i, &rt->aggs[i])) < 0)
			goto error;
	}
	if ((err = set_limits(rt)) < 0)
		goto error;
	*out = rt;
	return 0;
error:
	hwt_probe_rt_free(rt);
	return err;
}

void hwt_probe_rt_set_target(struct hwt_probe_rt *rt, int32_t pid)
{
	if (rt)
		rt->target = pid;
}

void hwt_probe_rt_set_live(struct hwt_probe_rt *rt, bool live)
{
	if (rt) {
		rt->live = live;
		prb_syms_set_live(rt->syms, live);
	}
}

bool hwt_probe_rt_exited(const struct hwt_probe_rt *rt)
{
	return rt && rt->exited;
}

void hwt_probe_rt_stats(const struct hwt_probe_rt *rt, struct hwt_probe_stats *stats)
{
	if (rt && stats)
		*stats = rt->stats;
}

void hwt_probe_rt_lost(struct hwt_probe_rt *rt, uint64_t n)
{
	if (rt)
		rt->stats.lost += n;
}

int hwt_probe_rt_mmap(struct hwt_probe_rt *rt, int32_t pid, uint64_t start, uint64_t len,
		      uint64_t pgoff, const char *path)
{
	return rt ? prb_syms_mmap(rt->syms, pid, start, len, pgoff, path) : -HWT_EINVAL;
}

int hwt_probe_rt_comm(struct hwt_probe_rt *rt, int32_t pid, int32_t tid, const char *comm,
		      bool exec)
{
	return rt && comm ? prb_syms_comm(rt->syms, pid, tid, comm, exec) : -HWT_EINVAL;
}

int hwt_probe_rt_fork(struct hwt_probe_rt *rt, int32_t ppid, int32_t pid, int32_t tid)
{
	return rt ? prb_syms_fork(rt->syms, ppid, pid, tid) : -HWT_EINVAL;
}

void hwt_probe_rt_exit(struct hwt_probe_rt *rt, int32_t pid, int32_t tid)
{
	if (rt)
		prb_syms_exit(rt->syms, pid, tid);
}

/* ------------------------------------------------------------------------ */
/* Builtins                                                                  */

static uint64_t chain_at(const struct hwt_probe_hit *hit, uint64_t i)
{
	uint64_t v;

	memcpy(&v, (const uint8_t *)hit->callchain + i * 8, 8);
	return v;
}

/* A stack id for the user (or kernel) part of the hit's stack. */
static int stack_id(struct hwt_probe_rt *rt, const struct hwt_probe_hit *hit, bool user,
		    int64_t *out)
{
	uint32_t ids[PRB_MAX_FRAMES], sid;
	size_t n = 0;
	bool known, kernel_in_stack = false;
	int err;

	for (size_t i = 0; !user && hit->stack && i < hit->stack_nr; i++)
		kernel_in_stack |= hit->stack[i] >= PRB_KERNEL_START;
	if (hit->stack && (user || kernel_in_stack)) {
		/* a decoded stack (PT) holds both: the kernel's frames are those
		 * at kernel addresses; an unwound user stack has only user
		 * frames (kstack then comes from the callchain) */
		for (size_t i = 0; i < hit->stack_nr && n < PRB_MAX_FRAMES; i++) {
			if ((hit->stack[i] >= PRB_KERNEL_START) == user)
				continue;
			if ((err = prb_syms_frame(rt->syms, hit->pid, hit->stack[i], i > 0, &ids[n],
						  &known)) < 0)
				return err;
			rt->stats.unsymbolized += !known;
			n++;
		}
	} else if (hit->callchain) {
		uint64_t ctx = 0;
		bool first = true, dedup = false;

		for (uint64_t i = 0; i < hit->callchain_nr && n < PRB_MAX_FRAMES; i++) {
			uint64_t ip = chain_at(hit, i);

			if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
				ctx = ip;
				first = true;
				continue;
			}
			if (user ? ctx != (uint64_t)PERF_CONTEXT_USER
				 : ctx != (uint64_t)PERF_CONTEXT_KERNEL)
				continue;
			/* kernels from 6.16 put the entry's return address in
			 * the chain themselves: keep it once */
			if (user && n == 2 && hit->entry_ret && ip == hit->entry_ret && !dedup) {
				dedup = true;
				continue;
			}
			if ((err = prb_syms_frame(rt->syms, hit->pid, ip, !first, &ids[n],
						  &known)) < 0)
				return err;
			rt->stats.unsymbolized += !known;
			n++;
			if (first && user && hit->entry_ret && n < PRB_MAX_FRAMES) {
				if ((err = prb_syms_frame(rt->syms, hit->pid, hit->entry_ret, true,
							  &ids[n], &known)) < 0)
					return err;
				rt->stats.unsymbolized += !known;
				n++;
			}
			first = false;
		}
	}
	if ((err = hwt_rep_dict_stack(rt->dict, ids, n, &sid)) < 0)
		return err;
	*out = sid;
	return 0;
}

/* The function of ip in pid, or DTrace's obj`0xOFF for an unsymbolized
 * one (the object's basename and file offset, stable across runs), else
 * the bare address. */
static int func_label(struct hwt_probe_rt *rt, int32_t pid, uint64_t ip, uint32_t *out)
{
	const struct hwt_rep_frame *f;
	uint32_t fid;
	bool known;
	int err;

	if ((err = prb_syms_frame(rt->syms, pid, ip, false, &fid, &known)) < 0)
		return err;
	rt->stats.unsymbolized += !known;
	f = hwt_rep_dict_frame_get(rt->dict, fid);
	if (f && f->function)
		return intern(rt, f->function, out);
	{
		char label[320];
		const char *path, *base;
		uint64_t start, pgoff;

		if (!prb_syms_map_of(rt->syms, pid, ip, &path, &start, &pgoff)) {
			base = strrchr(path, '/');
			snprintf(label, sizeof(label), "%s+0x%" PRIx64, base ? base + 1 : path,
				 ip - start + pgoff);
		} else {
			snprintf(label, sizeof(label), "0x%" PRIx64, ip);
		}
		return intern(rt, label, out);
	}
}

static int func_id(struct hwt_probe_rt *rt, const struct hwt_probe_hit *hit, int64_t *out)
{
	uint32_t sid;
	int err;

	if (hit->func) {
		if ((err = intern(rt, hit->func, &sid)) < 0)
			return err;
		*out = sid;
		return 0;
	}
	if (rt->func_ids[rt->probe]) {
		*out = rt->func_ids[rt->probe];
		return 0;
	}
	if (!hit->ip) {
		*out = 0;
		return 0;
	}
	if ((err = func_label(rt, hit->pid, hit->ip, &sid)) < 0)
		return err;
	*out = sid;
	return 0;
}

static int builtin(struct hwt_probe_rt *rt, unsigned b, int64_t *v)
{
	const struct hwt_probe_hit *hit = rt->hit;

	switch (b) {
	case PRB_B_PID:
		*v = hit->pid;
		return 0;
	case PRB_B_TID:
		*v = hit->tid;
		return 0;
	case PRB_B_CPU:
		*v = hit->cpu;
		return 0;
	case PRB_B_NSECS:
		*v = (int64_t)hit->time;
		return 0;
	case PRB_B_ELAPSED:
		*v = (int64_t)(hit->time - rt->t0);
		return 0;
	case PRB_B_COMM:
		if (hit->comm) {
			uint32_t id;
			int err = intern(rt, hit->comm, &id);

			*v = id;
			return err;
		}
		*v = prb_syms_comm_id(rt->syms, hit->pid, hit->tid);
		return 0;
	case PRB_B_FUNC:
		return func_id(rt, hit, v);
	case PRB_B_PROBE:
		*v = rt->probe_ids[rt->probe];
		return 0;
	case PRB_B_USTACK:
		return stack_id(rt, hit, true, v);
	case PRB_B_KSTACK:
		return stack_id(rt, hit, false, v);
	case PRB_B_TARGET:
		*v = rt->target;
		return 0;
	case PRB_B_IP:
		*v = (int64_t)hit->ip;
		return 0;
	case PRB_B_UID:
		*v = (int64_t)getuid(); /* BEGIN/END: hwtrace's; at hits BPF only */
		return 0;
	case PRB_B_GID:
		*v = (int64_t)getgid();
		return 0;
	case PRB_B_CURTASK:
		*v = 0;
		return 0;
	}
	if (b >= PRB_B_ARG0 && b <= PRB_B_RETVAL) {
		*v = hit->has_regs ? (int64_t)hit->regs[b - PRB_B_ARG0] : 0;
		return 0;
	}
	return -HWT_EINTERNAL;
}

/* args->NAME of a tracepoint hit: bounds-checked against the raw record;
 * a field the record is too short for reads as 0 or "". */
static int field(struct hwt_probe_rt *rt, unsigned slot, int64_t *v)
{
	const struct prb_probe *p = &rt->prog->probes[rt->probe];
	const struct hwt_probe_hit *hit = rt->hit;
	const struct prb_tp_field *f;
	const uint8_t *raw = hit->raw;
	uint32_t size = hit->raw_size;
	int32_t fi;

	*v = 0;
	if (!p->tp || !p->field_map || (fi = p->field_map[slot]) < 0)
		return 0;
	f = &p->tp->fields[fi];
	if (f->is_string || f->data_loc) {
		uint32_t off = f->offset, len = f->size, id = 0;
		const char *s;

		if (!raw || (uint64_t)f->offset + f->size > size)
			return 0;
		if (f->data_loc) {
			uint32_t loc = hwt_le32(raw + f->offset);

			off = loc & 0xffff;
			len = loc >> 16;
			if ((uint64_t)off + len > size)
				return 0;
		}
		s = (const char *)raw + off;
		if (len > rt->strsize - 1)
			len = rt->strsize - 1; /* as the BPF path reads it */
		{
			int err = hwt_rep_dict_str(rt->dict, s, strnlen(s, len), &id);

			*v = id;
			return err;
		}
	}
	if (!raw || (uint64_t)f->offset + f->size > size)
		return 0;
	switch (f->size) {
	case 1:
		*v = f->is_signed ? (int64_t)(int8_t)raw[f->offset] : (int64_t)raw[f->offset];
		break;
	case 2:
		*v = f->is_signed ? (int64_t)(int16_t)hwt_le16(raw + f->offset)
				  : (int64_t)hwt_le16(raw + f->offset);
		break;
	case 4:
		*v = f->is_signed ? (int64_t)(int32_t)hwt_le32(raw + f->offset)
				  : (int64_t)hwt_le32(raw + f->offset);
		break;
	case 8:
		*v = (int64_t)hwt_le64(raw + f->offset);
		break;
	default:
		*v = 0; /* an array of numbers: not one value */
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* printf                                                                    */

/* The specs were rebuilt by the compiler from checked pieces (one
 * conversion each, for an int64 or a string), so they are safe formats. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static int do_printf(struct hwt_probe_rt *rt, const struct prb_fmt *f, const int64_t *args)
{
	size_t a = 0;
	int err = 0;

	for (size_t i = 0; i < f->npieces && err >= 0; i++) {
		const struct prb_fmt_piece *p = &f->pieces[i];

		if (!p->conv) {
			err = hwt_buf_append(&rt->out, p->spec, strlen(p->spec));
		} else if (p->stack) {
			err = prb_bt_print_stack(&rt->out, rt->dict, (uint32_t)args[a++]);
		} else if (p->conv == 's' || p->conv == 'r') {
			const char *s = hwt_rep_dict_str_get(rt->dict, (uint32_t)args[a++]);

			err = hwt_buf_printf(&rt->out, p->spec, s ? s : "");
		} else if (p->conv == 'c') {
			err = hwt_buf_printf(&rt->out, p->spec, (int)(unsigned char)args[a++]);
		} else {
			uint64_t v = (uint64_t)args[a++];

			if (p->bits && p->bits < 64) {
				/* bpftrace's "%d" of -1 as an int's: its low bits,
				 * sign-extended for d, zero-extended otherwise */
				unsigned sh = 64u - p->bits;

				v = p->conv == 'd' ? (uint64_t)((int64_t)(v << sh) >> sh)
						   : v << sh >> sh;
			}
			err = hwt_buf_printf(&rt->out, p->spec, (long long)v);
		}
	}
	return err;
}
#pragma GCC diagnostic pop

static int flush_out(struct hwt_probe_rt *rt)
{
	int err = 0;

	if (rt->out.len && rt->cfg.output)
		err = rt->cfg.output(rt->cfg.output_ctx, (const char *)rt->out.data, rt->out.len);
	rt->out.len = 0;
	return err;
}

/* ------------------------------------------------------------------------ */
/* The interpreter                                                           */

static int64_t binop(unsigned op, int64_t a, int64_t b, bool *fault)
{
	uint64_t ua = (uint64_t)a, ub = (uint64_t)b;

	switch (op) {
	case PRB_OP_MUL:
		return (int64_t)(ua * ub);
	case PRB_OP_DIV:
		if (!b || (a == INT64_MIN && b == -1)) {
			*fault = true;
			return 0;
		}
		return a / b;
	case PRB_OP_MOD:
		if (!b || (a == INT64_MIN && b == -1)) {
			*fault = true;
			return 0;
		}
		return a % b;
	case PRB_OP_ADD:
		return (int64_t)(ua + ub);
	case PRB_OP_SUB:
		return (int64_t)(ua - ub);
	case PRB_OP_SHL:
		return (int64_t)(ua << (ub & 63));
	case PRB_OP_SHR:
		return a >> (ub & 63);
	case PRB_OP_LT:
		return a < b;
	case PRB_OP_LE:
		return a <= b;
	case PRB_OP_GT:
		return a > b;
	case PRB_OP_GE:
		return a >= b;
	case PRB_OP_EQ:
		return a == b;
	case PRB_OP_NE:
		return a != b;
	case PRB_OP_BAND:
		return (int64_t)(ua & ub);
	case PRB_OP_BXOR:
		return (int64_t)(ua ^ ub);
	case PRB_OP_BOR:
		return (int64_t)(ua | ub);
	}
	*fault = true;
	return 0;
}

/* Aggregation updates and thread variables keep the BPF maps' limits, so
 * both paths drop the same updates. */
static int agg_update(struct hwt_probe_rt *rt, size_t a, const struct hwt_rep_val *key,
		      int64_t value)
{
	struct hwt_rep_agg *agg = rt->aggs[a];

	if (hwt_rep_agg_nrows(agg) >= rt->agg_max[a]) {
		struct hwt_rep_agg_result res;

		if (hwt_rep_agg_find(agg, key, &res) < 0) {
			rt->agg_drops[a]++;
			rt->stats.agg_drops++;
			return 0;
		}
	}
	return hwt_rep_agg_update(agg, key, value, 1);
}

static int store_self(struct hwt_probe_rt *rt, unsigned var, int64_t v)
{
	uint32_t tid = (uint32_t)rt->hit->tid;
	bool had = prb_map_get(&rt->self, tid, var) != NULL;
	int t = rt->prog->self_vars[var].type == PRB_T_STR;
	int err;

	if (!v) {
		if (had) {
			prb_map_del(&rt->self, tid, var);
			rt->self_n[t]--;
		}
		return 0;
	}
	if (!had && rt->self_n[t] >= rt->self_max) {
		rt->stats.self_drops++;
		return 0;
	}
	if ((err = prb_map_put(&rt->self, tid, var, (uint64_t)v)) < 0)
		return err;
	rt->self_n[t] += !had;
	return 0;
}

/* Aggregation a as it stands: the runtime's part, plus a source's (a
 * copy, freed by the caller, when there is a source). */
static int agg_snapshot(struct hwt_probe_rt *rt, size_t a, struct hwt_rep_agg **out, bool *owned)
{
	struct hwt_rep_agg *tmp = NULL;
	int err;

	*owned = false;
	*out = rt->aggs[a];
	if (!rt->src)
		return 0;
	if ((err = agg_alloc(rt, a, &tmp)) < 0)
		return err;
	if ((err = hwt_rep_agg_add(tmp, rt->aggs[a])) < 0 ||
	    (err = rt->src->merge(rt->src->ctx, a, tmp)) < 0) {
		hwt_rep_agg_free(tmp);
		return err;
	}
	*out = tmp;
	*owned = true;
	return 0;
}

/* Prints aggregation or map a: bpftrace's layout for bpftrace's scripts
 * and for plain maps (top: the last rows only), else DTrace's. */
static int print_agg_top(struct hwt_probe_rt *rt, size_t a, int format, uint32_t top,
			 struct hwt_buf *out)
{
	const struct hwt_probe_prog *prog = rt->prog;
	struct hwt_rep_agg *agg;
	bool owned;
	int err;

	if (prog->aggs[a].plain) {
		struct prb_tmap tmp = {.nkeys = prog->aggs[a].nkeys};
		const struct prb_tmap *m = &rt->maps[a];

		/* a map the BPF programs keep: its rows now */
		if (rt->src && (err = rt->src->map_rows(rt->src->ctx, a, &tmp)) != 0) {
			if (err < 0) {
				prb_tmap_fini(&tmp);
				return err;
			}
			m = &tmp;
		}
		if (format == HWT_REP_FMT_JSON)
			err = prb_json_print_map(prog, a, m, rt->dict, out);
		else
			err = prb_bt_print_map(prog, a, m, rt->dict, top, out);
		prb_tmap_fini(&tmp);
		return err;
	}
	if ((err = agg_snapshot(rt, a, &agg, &owned)) < 0)
		return err;
	if (prog->bpftrace_style && format == HWT_REP_FMT_TEXT)
		err = prb_bt_print_agg(prog, a, agg, rt->dict, top, out);
	else
		err = hwt_rep_agg_print(agg, format, out);
	if (owned)
		hwt_rep_agg_free(agg);
	return err;
}

static int print_agg(struct hwt_probe_rt *rt, size_t a, int format, struct hwt_buf *out)
{
	return print_agg_top(rt, a, format, 0, out);
}

static int clear_agg(struct hwt_probe_rt *rt, size_t a)
{
	if (rt->prog->aggs[a].plain) {
		prb_tmap_clear(&rt->maps[a]);
		return rt->src ? rt->src->map_op(rt->src->ctx, PRB_MAP_CLEAR, a, NULL, NULL) : 0;
	}
	hwt_rep_agg_clear(rt->aggs[a]);
	return rt->src ? rt->src->clear(rt->src->ctx, a) : 0;
}

/* A plain map's key from the value stack. */
static void map_key(const struct hwt_probe_rt *rt, size_t m, const int64_t *st,
		    struct hwt_rep_val *key)
{
	const struct prb_agg *a = &rt->prog->aggs[m];

	memset(key, 0, HWT_REP_MAX_KEYS * sizeof(*key));
	for (size_t k = 0; k < a->nkeys; k++) {
		key[k].type = a->key_types[k];
		key[k].v = st[k];
	}
}

static int map_store(struct hwt_probe_rt *rt, size_t m, const struct hwt_rep_val *key, int64_t v)
{
	struct prb_tmap *t = &rt->maps[m];
	int err;

	/* BEGIN and END on a map the BPF programs keep */
	if (rt->src && (err = rt->src->map_op(rt->src->ctx, PRB_MAP_STORE, m, key, &v)) != 0)
		return err < 0 ? err : 0;
	if (!prb_tmap_get(t, key) && t->n >= rt->agg_max[m]) {
		rt->agg_drops[m]++;
		rt->stats.agg_drops++;
		return 0;
	}
	return prb_tmap_put(t, key, v);
}

/* bpftrace's ntop() of an IPv4 address held as an integer (in memory
 * order: the low byte first). */
static int ntop4(struct hwt_probe_rt *rt, uint64_t v, int64_t *out)
{
	char s[32];
	uint32_t id;
	int err;

	snprintf(s, sizeof(s), "%u.%u.%u.%u", (unsigned)(v & 255), (unsigned)(v >> 8 & 255),
		 (unsigned)(v >> 16 & 255), (unsigned)(v >> 24 & 255));
	err = intern(rt, s, &id);
	*out = id;
	return err;
}

/* time(): the local time, strftime's way (bpftrace's default: "%H:%M:%S\n"). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static int print_time(struct hwt_probe_rt *rt, unsigned fmt)
{
	char buf[512];
	time_t now = time(NULL);
	struct tm tm;
	size_t n;

	localtime_r(&now, &tm);
	n = strftime(buf, sizeof(buf), fmt < rt->prog->nstrs ? rt->prog->strs[fmt] : "%H:%M:%S\n",
		     &tm);
	return hwt_buf_append(&rt->out, buf, n);
}
#pragma GCC diagnostic pop

/* cat(): a file's contents (at most 64 KiB, never waiting: a device or a
 * pipe gives what it has). */
static int print_file(struct hwt_probe_rt *rt, unsigned path)
{
	char buf[4096];
	int fd = open(rt->prog->strs[path], O_RDONLY | O_NONBLOCK | O_CLOEXEC), err = 0;
	size_t total = 0;
	ssize_t n;

	if (fd < 0)
		return hwt_buf_printf(&rt->out, "cat(\"%s\"): %s\n", rt->prog->strs[path],
				      strerror(errno));
	while (total < 65536 && (n = read(fd, buf, sizeof(buf))) > 0 && err >= 0) {
		err = hwt_buf_append(&rt->out, buf, (size_t)n);
		total += (size_t)n;
	}
	close(fd);
	return err;
}

static uint64_t bswap_bits(uint64_t v, unsigned bits)
{
	switch (bits) {
	case 16:
		return __builtin_bswap16((uint16_t)v);
	case 32:
		return __builtin_bswap32((uint32_t)v);
	case 8:
		return v & 255;
	}
	return __builtin_bswap64(v);
}

static int run_clause(struct hwt_probe_rt *rt, const struct prb_clause *cl)
{
	const struct hwt_probe_prog *prog = rt->prog;
	const struct prb_insn *code = prog->code;
	int64_t st[PRB_STACK];
	size_t sp = 0, pc = cl->code;
	int err = 0;

	for (;;) {
		const struct prb_insn *in = &code[pc++];
		bool fault = false;

		switch (in->op) {
		case PRB_I_INT:
			st[sp++] = in->imm;
			break;
		case PRB_I_STR:
			st[sp++] = rt->str_ids[in->a];
			break;
		case PRB_I_BUILTIN:
			if ((err = builtin(rt, in->a, &st[sp++])) < 0)
				return err;
			break;
		case PRB_I_FIELD:
			if ((err = field(rt, in->a, &st[sp++])) < 0)
				return err;
			break;
		case PRB_I_SELF: {
			const uint64_t *v = prb_map_get(&rt->self, (uint32_t)rt->hit->tid, in->a);

			st[sp++] = v ? (int64_t)*v : 0;
			break;
		}
		case PRB_I_THIS:
			st[sp++] = rt->this_vals[in->a];
			break;
		case PRB_I_NEG:
			st[sp - 1] = (int64_t)(0 - (uint64_t)st[sp - 1]);
			break;
		case PRB_I_NOT:
			st[sp - 1] = !st[sp - 1];
			break;
		case PRB_I_BNOT:
			st[sp - 1] = ~st[sp - 1];
			break;
		case PRB_I_BIN:
			st[sp - 2] = binop(in->a, st[sp - 2], st[sp - 1], &fault);
			sp--;
			if (fault) {
				if (!rt->stats.faults)
					hwt_log(
					    &rt->cfg.log, HWT_LOG_WARN,
					    "division by zero in a clause of %s: that clause run "
					    "stops (counted as a fault)",
					    prog->probes[rt->probe].text);
				rt->stats.faults++;
				return 0;
			}
			break;
		case PRB_I_BOOL:
			st[sp - 1] = st[sp - 1] != 0;
			break;
		case PRB_I_JZ:
			if (!st[--sp])
				pc = in->b;
			break;
		case PRB_I_JNZ:
			if (st[--sp])
				pc = in->b;
			break;
		case PRB_I_JMP:
			pc = in->b;
			break;
		case PRB_I_PRED:
			if (!st[--sp]) {
				rt->stats.filtered++;
				return 0;
			}
			break;
		case PRB_I_STORE_SELF:
			if ((err = store_self(rt, in->a, st[--sp])) < 0)
				return err;
			break;
		case PRB_I_STORE_THIS:
			rt->this_vals[in->a] = st[--sp];
			break;
		case PRB_I_AGG: {
			const struct prb_agg *a = &prog->aggs[in->a];
			struct hwt_rep_val key[HWT_REP_MAX_KEYS];
			int64_t value = 0;

			if (a->func != HWT_REP_COUNT)
				value = st[--sp];
			sp -= a->nkeys;
			for (size_t k = 0; k < a->nkeys; k++) {
				key[k].type = a->key_types[k];
				key[k].v = st[sp + k];
			}
			if ((err = agg_update(rt, in->a, key, value)) < 0)
				return err;
			break;
		}
		case PRB_I_PRINTF:
			sp -= in->b;
			if ((err = do_printf(rt, &prog->fmts[in->a], &st[sp])) < 0)
				return err;
			break;
		case PRB_I_EXIT:
			rt->exited = true;
			return 0;
		case PRB_I_CLEAR:
			if ((err = clear_agg(rt, in->a)) < 0)
				return err;
			break;
		case PRB_I_PRINT:
			if ((err = print_agg_top(rt, in->a, HWT_REP_FMT_TEXT, in->b, &rt->out)) < 0)
				return err;
			/* DTrace's printa separates with a blank line */
			if (!rt->prog->bpftrace_style && !rt->prog->aggs[in->a].plain &&
			    (err = hwt_buf_append(&rt->out, "\n", 1)) < 0)
				return err;
			break;
		case PRB_I_MAP_LOAD: {
			struct hwt_rep_val key[HWT_REP_MAX_KEYS];
			const struct prb_tmap_ent *e;

			sp -= prog->aggs[in->a].nkeys;
			map_key(rt, in->a, &st[sp], key);
			if (rt->src && (err = rt->src->map_op(rt->src->ctx, PRB_MAP_LOAD, in->a,
							      key, &st[sp])) != 0) {
				if (err < 0)
					return err;
				sp++;
				break;
			}
			e = prb_tmap_get(&rt->maps[in->a], key);
			st[sp++] = e ? e->v : 0;
			break;
		}
		case PRB_I_MAP_STORE: {
			struct hwt_rep_val key[HWT_REP_MAX_KEYS];
			int64_t v = st[--sp];

			sp -= prog->aggs[in->a].nkeys;
			map_key(rt, in->a, &st[sp], key);
			if ((err = map_store(rt, in->a, key, v)) < 0)
				return err;
			break;
		}
		case PRB_I_MAP_DELETE: {
			struct hwt_rep_val key[HWT_REP_MAX_KEYS];

			sp -= prog->aggs[in->a].nkeys;
			map_key(rt, in->a, &st[sp], key);
			if (rt->src && (err = rt->src->map_op(rt->src->ctx, PRB_MAP_DELETE, in->a,
							      key, NULL)) != 0) {
				if (err < 0)
					return err;
				break;
			}
			prb_tmap_del(&rt->maps[in->a], key);
			break;
		}
		case PRB_I_CAST: {
			unsigned bits = in->a & 127;
			uint64_t v = (uint64_t)st[sp - 1] & ((1ull << bits) - 1);

			if ((in->a & 128) && (v >> (bits - 1)) & 1)
				v |= ~0ull << bits;
			st[sp - 1] = (int64_t)v;
			break;
		}
		case PRB_I_BSWAP:
			st[sp - 1] = (int64_t)bswap_bits((uint64_t)st[sp - 1], in->a);
			break;
		case PRB_I_NTOP:
			if (in->a != 0)
				return -HWT_EINTERNAL; /* reads memory: BPF only */
			if ((err = ntop4(rt, (uint64_t)st[sp - 1], &st[sp - 1])) < 0)
				return err;
			break;
		case PRB_I_SYM: {
			uint32_t id;

			if ((err = func_label(rt, rt->hit->pid, (uint64_t)st[sp - 1], &id)) < 0)
				return err;
			st[sp - 1] = id;
			break;
		}
		case PRB_I_TIME:
			if ((err = print_time(rt, in->a)) < 0)
				return err;
			break;
		case PRB_I_CAT:
			if ((err = print_file(rt, in->a)) < 0)
				return err;
			break;
		case PRB_I_READ:
		case PRB_I_READ_STR:
		case PRB_I_BUF:
		case PRB_I_JOIN:
			/* reading memory at the hit: only BPF programs do */
			return -HWT_EINTERNAL;
		case PRB_I_END:
			return 0;
		default:
			return -HWT_EINTERNAL;
		}
	}
}

int hwt_probe_rt_fire(struct hwt_probe_rt *rt, size_t probe, const struct hwt_probe_hit *hit)
{
	const struct prb_probe *p;
	int err = 0;

	if (!rt || !hit || probe >= rt->prog->nprobes)
		return -HWT_EINVAL;
	if (rt->exited)
		return 0;
	p = &rt->prog->probes[probe];
	rt->stats.hits++;
	if (!rt->t0)
		rt->t0 = hit->time;
	rt->hit = hit;
	rt->probe = probe;
	if (rt->prog->nthis)
		memset(rt->this_vals, 0, rt->prog->nthis * sizeof(*rt->this_vals));
	for (size_t i = 0; i < p->nclauses && !rt->exited; i++)
		if ((err = run_clause(rt, &rt->prog->clauses[p->clauses[i]])) < 0)
			break;
	rt->hit = NULL;
	if (err >= 0)
		err = flush_out(rt);
	else
		(void)flush_out(rt);
	return err;
}

static int fire_kind(struct hwt_probe_rt *rt, enum hwt_probe_kind kind)
{
	struct hwt_probe_hit hit = {0};
	bool exited = rt->exited;
	int err;

	hit.pid = (int32_t)getpid();
	hit.tid = hit.pid;
	hit.cpu = -1;
	hit.time = mono_ns();
	hit.comm = "hwtrace";
	/* live: elapsed counts from BEGIN; offline from the first hit */
	if (kind == HWT_PROBE_BEGIN && rt->live)
		rt->t0 = hit.time;
	/* END runs after exit() too (DTrace's order) */
	rt->exited = false;
	for (size_t i = 0; i < rt->prog->nprobes; i++) {
		if (rt->prog->probes[i].info.kind != kind)
			continue;
		if ((err = hwt_probe_rt_fire(rt, i, &hit)) < 0)
			return err;
		rt->stats.hits--; /* BEGIN and END are not hits */
	}
	rt->exited = rt->exited || exited;
	return 0;
}

int hwt_probe_rt_begin(struct hwt_probe_rt *rt)
{
	if (!rt)
		return -HWT_EINVAL;
	if (rt->began)
		return 0;
	rt->began = true;
	return fire_kind(rt, HWT_PROBE_BEGIN);
}

int hwt_probe_rt_end(struct hwt_probe_rt *rt)
{
	if (!rt)
		return -HWT_EINVAL;
	if (rt->ended)
		return 0;
	rt->ended = true;
	return fire_kind(rt, HWT_PROBE_END);
}

/* ------------------------------------------------------------------------ */
/* Results                                                                   */

int hwt_probe_rt_print(struct hwt_probe_rt *rt, int format, struct hwt_buf *out)
{
	int err = 0;

	if (!rt || !out)
		return -HWT_EINVAL;
	if (format == HWT_REP_FMT_TEXT && rt->prog->bpftrace_style) {
		/* bpftrace: two newlines, then every map in name order */
		size_t n = rt->prog->naggs, *order = calloc(n + 1, sizeof(*order));

		if (!order)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			size_t j = i;

			while (j > 0 && strcmp(rt->prog->aggs[order[j - 1]].name,
					       rt->prog->aggs[i].name) > 0) {
				order[j] = order[j - 1];
				j--;
			}
			order[j] = i;
		}
		err = hwt_buf_append(out, "\n\n", 2);
		for (size_t i = 0; i < n && err >= 0; i++)
			err = print_agg(rt, order[i], HWT_REP_FMT_TEXT, out);
		free(order);
		return err;
	}
	if (format == HWT_REP_FMT_TEXT) {
		for (size_t i = 0; i < rt->prog->naggs && err >= 0; i++) {
			if (i)
				err = hwt_buf_append(out, "\n", 1);
			if (err >= 0)
				err = print_agg(rt, i, HWT_REP_FMT_TEXT, out);
		}
		return err;
	}
	if (format != HWT_REP_FMT_JSON)
		return -HWT_EINVAL;
	err = hwt_buf_printf(out, "{\"aggregations\": [");
	for (size_t i = 0; i < rt->prog->naggs && err >= 0; i++) {
		if (i)
			err = hwt_buf_printf(out, ", ");
		if (err >= 0)
			err = print_agg(rt, i, HWT_REP_FMT_JSON, out);
		/* report/ ends an object with a newline: fine inside an array */
	}
	if (err >= 0)
		err =
		    hwt_buf_printf(out,
				   "], \"stats\": {\"hits\": %" PRIu64 ", \"filtered\": %" PRIu64
				   ", \"faults\": %" PRIu64 ", \"lost\": %" PRIu64
				   ", \"bad_samples\": %" PRIu64 ", \"unsymbolized\": %" PRIu64
				   ", \"agg_drops\": %" PRIu64 ", \"self_drops\": %" PRIu64 "}}\n",
				   rt->stats.hits, rt->stats.filtered, rt->stats.faults,
				   rt->stats.lost, rt->stats.bad_samples, rt->stats.unsymbolized,
				   rt->stats.agg_drops, rt->stats.self_drops);
	return err;
}

int hwt_probe_rt_agg_value(const struct hwt_probe_rt *rt, const char *name, const int64_t *key,
			   size_t nkey, int64_t *value)
{
	struct hwt_rep_val k[HWT_REP_MAX_KEYS];
	struct hwt_rep_agg_result res;

	if (!rt || !name || !value || nkey > HWT_REP_MAX_KEYS)
		return -HWT_EINVAL;
	for (size_t i = 0; i < rt->prog->naggs; i++) {
		if (strcmp(rt->prog->aggs[i].name, name))
			continue;
		if (rt->prog->aggs[i].nkeys != nkey)
			return -HWT_ENOSYM;
		if (rt->prog->aggs[i].plain) {
			const struct prb_tmap_ent *e;

			for (size_t j = 0; j < nkey; j++) {
				k[j].type = HWT_REP_INT;
				k[j].v = key[j];
			}
			for (size_t j = nkey; j < HWT_REP_MAX_KEYS; j++)
				k[j].type = 0, k[j].v = 0;
			if (!(e = prb_tmap_get(&rt->maps[i], k)))
				return -HWT_ENOSYM;
			*value = e->v;
			return 0;
		}
		for (size_t j = 0; j < nkey; j++) {
			if (rt->prog->aggs[i].key_types[j] != HWT_REP_INT)
				return -HWT_ENOSYM;
			k[j].type = HWT_REP_INT;
			k[j].v = key[j];
		}
		{
			struct hwt_probe_rt *mrt = (struct hwt_probe_rt *)rt;
			struct hwt_rep_agg *agg;
			bool owned;
			int err = agg_snapshot(mrt, i, &agg, &owned);

			if (err < 0)
				return err;
			err = hwt_rep_agg_find(agg, k, &res);
			if (err >= 0)
				*value = res.value;
			if (owned)
				hwt_rep_agg_free(agg);
			return err < 0 ? -HWT_ENOSYM : 0;
		}
	}
	return -HWT_ENOSYM;
}

/* ------------------------------------------------------------------------ */
/* For the BPF back end                                                      */

void prb_rt_set_source(struct hwt_probe_rt *rt, const struct prb_agg_source *src)
{
	rt->src = src;
}

struct hwt_rep_dict *prb_rt_dict(struct hwt_probe_rt *rt)
{
	return rt->dict;
}

void prb_rt_set_exited(struct hwt_probe_rt *rt)
{
	rt->exited = true;
}

int prb_rt_printf(struct hwt_probe_rt *rt, size_t fmt, const int64_t *args)
{
	int err;

	if (fmt >= rt->prog->nfmts)
		return -HWT_EINVAL;
	err = do_printf(rt, &rt->prog->fmts[fmt], args);
	if (err >= 0)
		err = flush_out(rt);
	else
		(void)flush_out(rt);
	return err;
}

int prb_rt_print_top(struct hwt_probe_rt *rt, size_t agg, uint32_t top)
{
	int err;

	if (agg >= rt->prog->naggs)
		return -HWT_EINVAL;
	if ((err = print_agg_top(rt, agg, HWT_REP_FMT_TEXT, top, &rt->out)) < 0 ||
	    (!rt->prog->bpftrace_style && !rt->prog->aggs[agg].plain &&
	     (err = hwt_buf_append(&rt->out, "\n", 1)) < 0)) {
		rt->out.len = 0;
		return err;
	}
	return flush_out(rt);
}

int prb_rt_text(struct hwt_probe_rt *rt, int op, unsigned str, const char *const *args, size_t n)
{
	int err = 0;

	if (op == PRB_I_TIME) {
		err = print_time(rt, str);
	} else if (op == PRB_I_CAT) {
		err = str < rt->prog->nstrs ? print_file(rt, str) : -HWT_EINVAL;
	} else {
		const char *sep = str < rt->prog->nstrs ? rt->prog->strs[str] : " ";

		for (size_t i = 0; i < n && err >= 0; i++)
			err = hwt_buf_printf(&rt->out, "%s%s", i ? sep : "", args[i]);
		if (err >= 0)
			err = hwt_buf_append(&rt->out, "\n", 1);
	}
	if (err < 0) {
		rt->out.len = 0;
		return err;
	}
	return flush_out(rt);
}

int prb_rt_clear_agg(struct hwt_probe_rt *rt, size_t agg)
{
	return agg < rt->prog->naggs ? clear_agg(rt, agg) : -HWT_EINVAL;
}

int prb_rt_sv_id(struct hwt_probe_rt *rt, const uint8_t *sv, uint32_t strsize, uint32_t *id)
{
	uint64_t tag = hwt_le64(sv), a = hwt_le64(sv + 8);

	switch (tag) {
	case PRB_SV_BYTES:
		return hwt_rep_dict_str(rt->dict, (const char *)sv + 8,
					strnlen((const char *)sv + 8, strsize), id);
	case PRB_SV_FUNC_IP:
		return func_label(rt, (int32_t)a, hwt_le64(sv + 16), id);
	case PRB_SV_PROBE:
	case PRB_SV_PROBE_FUNC:
		if (a >= rt->prog->nprobes)
			return -HWT_EFORMAT;
		*id = tag == PRB_SV_PROBE ? rt->probe_ids[a] : rt->func_ids[a];
		return 0;
	case PRB_SV_INET: {
		char txt[INET6_ADDRSTRLEN];

		if (!inet_ntop(a == 10 ? AF_INET6 : AF_INET, sv + 16, txt, sizeof(txt)))
			snprintf(txt, sizeof(txt), "?");
		return intern(rt, txt, id);
	}
	case PRB_SV_BUF: {
		/* bpftrace's %r: printable bytes as they are, others \xNN */
		struct hwt_buf b;
		int err = 0;

		hwt_buf_init(&b);
		if (a > strsize - 8)
			a = strsize - 8;
		for (uint64_t i = 0; i < a && err >= 0; i++) {
			unsigned char c = sv[16 + i];

			err = isprint(c) ? hwt_buf_append(&b, &c, 1)
					 : hwt_buf_printf(&b, "\\x%02x", c);
		}
		if (err >= 0)
			err = hwt_rep_dict_str(rt->dict, (const char *)b.data, b.len, id);
		hwt_buf_fini(&b);
		return err;
	}
	}
	return -HWT_EFORMAT;
}

int prb_rt_stack_ips(struct hwt_probe_rt *rt, int32_t pid, const uint64_t *ips, size_t n,
		     uint32_t *id)
{
	uint32_t ids[PRB_MAX_FRAMES];
	bool known;
	int err;

	if (n > PRB_MAX_FRAMES)
		n = PRB_MAX_FRAMES;
	for (size_t i = 0; i < n; i++) {
		if ((err = prb_syms_frame(rt->syms, pid, ips[i], i > 0, &ids[i], &known)) < 0)
			return err;
		rt->stats.unsymbolized += !known;
	}
	return hwt_rep_dict_stack(rt->dict, ids, n, id);
}

int hwt_probe_rt_agg_drops(const struct hwt_probe_rt *rt, size_t i, const char **name,
			   uint64_t *drops, uint64_t *max_keys)
{
	if (!rt || i >= rt->prog->naggs)
		return -HWT_EINVAL;
	if (name)
		*name = rt->prog->aggs[i].name;
	if (drops)
		*drops = rt->agg_drops[i];
	if (max_keys)
		*max_keys = rt->agg_max[i];
	return 0;
}
