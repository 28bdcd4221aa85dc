/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptflow/flow.c - the per-record state machine of hwt_ptf: per thread, the
 * stack of open calls rebuilt from the decoder's CALL/RETURN records (and
 * checked against each record's depth), the call tree of distinct stacks
 * that instructions and time are attributed to, functions resolved once
 * per address (or per basic block), call statistics at each return, and
 * for BRANCHES the per-instruction counts of one function. Everything a
 * record needs is looked up in hash maps or arrays built the first time
 * something is seen: a record that repeats known flow allocates nothing.
 */
#include "ptflow/ptf_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

int ptf_grow(void **p, size_t *cap, size_t need, size_t sz)
{
	size_t ncap = *cap ? *cap : 16, bytes;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (hwt_mul_size(ncap, 2, &ncap) < 0)
			return -ENOMEM;
	}
	if (hwt_mul_size(ncap, sz, &bytes) < 0)
		return -ENOMEM;
	np = realloc(*p, bytes);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

static inline uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6) + (a >> 2));

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return h;
}

void ptf_map_fini(struct ptf_map *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

uint32_t ptf_map_get(const struct ptf_map *m, uint64_t a, uint64_t b)
{
	size_t mask, i;

	if (!m->cap)
		return PTF_NONE;
	mask = m->cap - 1;
	for (i = mix(a, b) & mask;; i = (i + 1) & mask) {
		const struct ptf_map_ent *e = &m->e[i];

		if (e->val == PTF_NONE)
			return PTF_NONE;
		if (e->a == a && e->b == b)
			return e->val;
	}
}

static void map_insert(struct ptf_map_ent *tab, size_t cap, uint64_t a, uint64_t b, uint32_t v)
{
	size_t mask = cap - 1, i;

	for (i = mix(a, b) & mask; tab[i].val != PTF_NONE; i = (i + 1) & mask) {
		if (tab[i].a == a && tab[i].b == b)
			break;
	}
	tab[i].a = a;
	tab[i].b = b;
	tab[i].val = v;
}

int ptf_map_put(struct ptf_map *m, uint64_t a, uint64_t b, uint32_t val)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 64;
		struct ptf_map_ent *tab = malloc(ncap * sizeof(*tab));

		if (!tab || ncap < m->cap) {
			free(tab);
			return -ENOMEM;
		}
		for (size_t i = 0; i < ncap; i++)
			tab[i].val = PTF_NONE;
		for (size_t i = 0; i < m->cap; i++) {
			if (m->e[i].val != PTF_NONE)
				map_insert(tab, ncap, m->e[i].a, m->e[i].b, m->e[i].val);
		}
		free(m->e);
		m->e = tab;
		m->cap = ncap;
	}
	if (ptf_map_get(m, a, b) == PTF_NONE)
		m->n++;
	map_insert(m->e, m->cap, a, b, val);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Object                                                                    */

void hwt_ptf_config_init(struct hwt_ptf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->timeline_max = 1000000;
	cfg->branch_off = -1;
	cfg->stacks_off = -1;
}

int hwt_ptf_alloc(struct hwt_ptf **out, const struct hwt_ptf_config *cfg)
{
	struct hwt_ptf_config c;
	struct hwt_ptf *ptf;
	int err = -HWT_EINVAL;

	if (!out)
		return -HWT_EINVAL;
	*out = NULL;
	hwt_ptf_config_init(&c);
	if (!cfg || hwt_opts_copy(&c, sizeof(c), cfg) < 0)
		return -HWT_EINVAL;
	cfg = &c;
	if (((cfg->views & HWT_PTF_PROFILE) && !cfg->profile) ||
	    ((cfg->views & HWT_PTF_TIMELINE) && !cfg->timeline) ||
	    ((cfg->views & HWT_PTF_BRANCHES) && (!cfg->branch_func || !*cfg->branch_func)))
		return -HWT_EINVAL;
	ptf = calloc(1, sizeof(*ptf));
	if (!ptf)
		return -ENOMEM;
	ptf->cfg = *cfg;
	ptf->cfg.branch_func = NULL;
	ptf->target = PTF_NONE;
	ptf->last_thread = PTF_NONE;
	err = -ENOMEM;
	if (cfg->branch_func && !(ptf->branch_func = strdup(cfg->branch_func)))
		goto error;
	if (cfg->profile) {
		ptf->dict = hwt_rep_profile_dict(cfg->profile);
	} else {
		err = hwt_rep_dict_alloc(&ptf->own_dict);
		if (err < 0)
			goto error;
		ptf->dict = ptf->own_dict;
	}
	if (!ptf->cfg.timeline_max)
		ptf->cfg.timeline_max = UINT64_MAX;
	*out = ptf;
	return 0;
error:
	hwt_ptf_free(ptf);
	return err;
}

void hwt_ptf_free(struct hwt_ptf *ptf)
{
	if (!ptf)
		return;
	ptf_free_views(ptf);
	for (size_t i = 0; i < ptf->nfuncs; i++) {
		free(ptf->funcs[i].hist_ns);
		free(ptf->funcs[i].hist_insns);
	}
	free(ptf->funcs);
	ptf_map_fini(&ptf->func_map);
	ptf_map_fini(&ptf->addr_map);
	free(ptf->bb_func);
	free(ptf->nodes);
	ptf_map_fini(&ptf->node_map);
	free(ptf->ccache);
	for (size_t i = 0; i < ptf->nthreads; i++)
		free(ptf->threads[i].f);
	free(ptf->threads);
	ptf_map_fini(&ptf->thread_map);
	free(ptf->ips);
	hwt_dec_image_put(ptf->image);
	free(ptf->rows);
	ptf_map_fini(&ptf->row_map);
	free(ptf->tgts);
	ptf_map_fini(&ptf->tgt_map);
	free(ptf->stacks);
	ptf_map_fini(&ptf->stack_map);
	free(ptf->scratch);
	free(ptf->branch_func);
	hwt_rep_dict_free(ptf->own_dict);
	free(ptf);
}

void hwt_ptf_stats(const struct hwt_ptf *ptf, struct hwt_ptf_stats *stats)
{
	if (!ptf || !stats)
		return;
	*stats = ptf->st;
	stats->threads = ptf->nthreads;
	stats->nodes = ptf->nnodes;
	if (!ptf->finished) {
		/* So far: every function seen (which ran is known at finish). */
		stats->functions = ptf->nfuncs;
		stats->unsymbolized = 0;
		for (size_t i = 0; i < ptf->nfuncs; i++)
			stats->unsymbolized += !ptf->funcs[i].name;
	}
}

/* ------------------------------------------------------------------------ */
/* Functions                                                                 */

/* A symbol name matches what the user typed: the whole name, or a C++
 * name without its parameter list ("ns::f" for "ns::f(int)"). */
static bool name_matches(const char *name, const char *want)
{
	size_t n = strlen(want);

	if (!name)
		return false;
	return !strcmp(name, want) || (!strncmp(name, want, n) && name[n] == '(');
}

static int intern_label(struct hwt_ptf *ptf, const char *text, const char **out)
{
	uint32_t id;
	int err = hwt_rep_dict_str(ptf->dict, text, strlen(text), &id);

	if (err < 0)
		return err;
	*out = hwt_rep_dict_str_get(ptf->dict, id);
	return 0;
}

/* The function of key (object, key), created on first sight. */
static int func_get(struct hwt_ptf *ptf, uint32_t object, uint64_t key, const char *name,
		    const char *path, uint32_t *fi, bool *created)
{
	uint32_t i = ptf_map_get(&ptf->func_map, object, key);
	struct ptf_func *f;
	char tmp[64];
	int err;

	*created = false;
	if (i != PTF_NONE) {
		*fi = i;
		return 0;
	}
	if (ptf->nfuncs >= PTF_NONE - 1)
		return -ENOMEM;
	err = ptf_grow((void **)&ptf->funcs, &ptf->capfuncs, ptf->nfuncs + 1, sizeof(*ptf->funcs));
	if (err < 0)
		return err;
	f = &ptf->funcs[ptf->nfuncs];
	memset(f, 0, sizeof(*f));
	f->object = object;
	f->key = key;
	f->name = name;
	f->path = path;
	f->frame = PTF_NONE;
	f->min_ns = UINT64_MAX;
	if (name) {
		f->label = name;
	} else if (path) {
		const char *slash = strrchr(path, '/');

		snprintf(tmp, sizeof(tmp), "[%s]", slash ? slash + 1 : path);
		err = intern_label(ptf, tmp, &f->label);
	} else if (object == PTF_NONE && key) {
		snprintf(tmp, sizeof(tmp), "0x%" PRIx64, key);
		err = intern_label(ptf, tmp, &f->label);
	} else {
		f->label = "[unknown]";
	}
	if (err < 0)
		return err;
	err = ptf_map_put(&ptf->func_map, object, key, (uint32_t)ptf->nfuncs);
	if (err < 0)
		return err;
	*fi = (uint32_t)ptf->nfuncs++;
	*created = true;
	return 0;
}

int ptf_resolve(struct hwt_ptf *ptf, int32_t pid, uint64_t time, uint64_t ip, bool entry,
		uint32_t *fi)
{
	uint32_t object = PTF_NONE, i = ptf_map_get(&ptf->addr_map, (uint64_t)(uint32_t)pid, ip);
	uint64_t key = 0, start = 0, size = 0, bias = 0;
	const char *name = NULL, *path = NULL;
	struct hwt_sym_obj *obj = NULL;
	bool created, kernel = false;
	int err;

	if (i != PTF_NONE) {
		*fi = i;
		return 0;
	}
	if (ptf->cfg.aspace) {
		struct hwt_sym_loc loc;
		struct hwt_sym_func fn;

		if (hwt_sym_aspace_lookup(ptf->cfg.aspace, (uint32_t)pid, time, ip, &loc) == 0) {
			object = loc.object;
			path = loc.path;
			kernel = loc.kernel;
			key = UINT64_MAX;
			if (loc.obj &&
			    hwt_sym_func_at(loc.obj, loc.addr, 0, &ptf->hint, &fn) == 0) {
				key = fn.addr;
				name = fn.name;
				obj = loc.obj;
				bias = ip - loc.addr;
				start = fn.addr + bias;
				size = fn.size;
			}
		}
	} else if (entry) {
		/* No symbols: a called address names its function. */
		key = ip;
		start = ip;
	}
	err = func_get(ptf, object, key, name, path, &i, &created);
	if (err < 0)
		return err;
	if (created) {
		struct ptf_func *f = &ptf->funcs[i];

		f->obj = obj;
		f->start = start;
		f->size = size;
		f->bias = bias;
		f->pid = pid;
		f->kernel = kernel || (ip >> 63);
		if (ptf->branch_func && name_matches(name, ptf->branch_func)) {
			if (ptf->target == PTF_NONE && start) {
				f->target = true;
				ptf->target = i;
				if (ptf->cfg.stacks_addr)
					ptf->stacks_ip = ptf->cfg.stacks_addr;
				else if (ptf->cfg.stacks_off >= 0)
					ptf->stacks_ip = start + (uint64_t)ptf->cfg.stacks_off;
			} else {
				ptf->st.branch_instances++;
			}
		}
	}
	err = ptf_map_put(&ptf->addr_map, (uint64_t)(uint32_t)pid, ip, i);
	if (err < 0)
		return err;
	*fi = i;
	return 0;
}

/* The function of a block: per basic block id when the engine gives
 * blocks (one array load), else per address. */
static int block_func(struct hwt_ptf *ptf, const struct hwt_dec_rec *rec, uint64_t time,
		      uint32_t *fi)
{
	struct hwt_dec_bb_info info;
	int err;

	if (!rec->u.block.bb)
		return ptf_resolve(ptf, rec->pid, time, rec->u.block.ip, false, fi);
	hwt_dec_bb_info(rec->u.block.bb, &info);
	if (info.id < ptf->nbb && ptf->bb_func[info.id]) {
		*fi = ptf->bb_func[info.id] - 1;
		return 0;
	}
	err = ptf_resolve(ptf, rec->pid, time, rec->u.block.ip, false, fi);
	if (err < 0)
		return err;
	if (info.id >= ptf->nbb) {
		size_t old = ptf->nbb;

		err = ptf_grow((void **)&ptf->bb_func, &ptf->nbb, (size_t)info.id + 1,
			       sizeof(*ptf->bb_func));
		if (err < 0)
			return err;
		memset(ptf->bb_func + old, 0, (ptf->nbb - old) * sizeof(*ptf->bb_func));
	}
	ptf->bb_func[info.id] = *fi + 1;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Threads and the call tree                                                 */

static int node_new(struct hwt_ptf *ptf, uint32_t parent, uint32_t func, uint32_t thread,
		    uint32_t *out)
{
	int err;

	if (ptf->nnodes >= PTF_NONE - 1)
		return -ENOMEM;
	err = ptf_grow((void **)&ptf->nodes, &ptf->capnodes, ptf->nnodes + 1, sizeof(*ptf->nodes));
	if (err < 0)
		return err;
	ptf->nodes[ptf->nnodes] = (struct ptf_node){parent, func, thread, 0, 0};
	*out = (uint32_t)ptf->nnodes++;
	return 0;
}

static int node_child(struct hwt_ptf *ptf, uint32_t parent, uint32_t func, uint32_t *out)
{
	uint32_t n = ptf_map_get(&ptf->node_map, parent, func);
	int err;

	if (n != PTF_NONE) {
		*out = n;
		return 0;
	}
	err = node_new(ptf, parent, func, ptf->nodes[parent].thread, &n);
	if (err < 0)
		return err;
	err = ptf_map_put(&ptf->node_map, parent, func, n);
	if (err < 0)
		return err;
	*out = n;
	return 0;
}

static int thread_get(struct hwt_ptf *ptf, int32_t pid, int32_t tid, struct ptf_thread **out)
{
	uint32_t i;
	struct ptf_thread *t;
	int err;

	if (ptf->last_thread != PTF_NONE) {
		t = &ptf->threads[ptf->last_thread];
		if (t->tid == tid && t->pid == pid) {
			*out = t;
			return 0;
		}
	}
	i = ptf_map_get(&ptf->thread_map, (uint64_t)(uint32_t)pid, (uint64_t)(uint32_t)tid);
	if (i == PTF_NONE) {
		err = ptf_grow((void **)&ptf->threads, &ptf->capthreads, ptf->nthreads + 1,
			       sizeof(*ptf->threads));
		if (err < 0)
			return err;
		t = &ptf->threads[ptf->nthreads];
		memset(t, 0, sizeof(*t));
		t->pid = pid;
		t->tid = tid;
		err = node_new(ptf, PTF_NONE, PTF_NONE, (uint32_t)ptf->nthreads, &t->root);
		if (err < 0)
			return err;
		err = ptf_grow((void **)&t->f, &t->cap, 16, sizeof(*t->f));
		if (err < 0)
			return err;
		memset(t->f, 0, 2 * sizeof(*t->f));
		t->f[0].node = t->f[1].node = t->root;
		t->f[0].func = t->f[1].func = PTF_NONE;
		t->n = 2;
		err = ptf_map_put(&ptf->thread_map, (uint64_t)(uint32_t)pid,
				  (uint64_t)(uint32_t)tid, (uint32_t)ptf->nthreads);
		if (err < 0)
			return err;
		i = (uint32_t)ptf->nthreads++;
	}
	ptf->last_thread = i;
	*out = &ptf->threads[i];
	return 0;
}

/* The depth-0 code of t is now function fi. */
static int set_base(struct hwt_ptf *ptf, struct ptf_thread *t, uint32_t fi)
{
	uint32_t node;
	int err;

	if (t->f[1].func == fi)
		return 0;
	/* The depth-0 code often goes back to the one before (a filtered
	 * trace: the traced function and its untraced caller). */
	if (t->prev_base1 == fi + 1) {
		node = t->prev_base_node;
	} else {
		err = node_child(ptf, t->root, fi, &node);
		if (err < 0)
			return err;
	}
	if (t->f[1].func != PTF_NONE) {
		t->prev_base1 = t->f[1].func + 1;
		t->prev_base_node = t->f[1].node;
	}
	t->f[1].node = node;
	t->f[1].func = fi;
	return 0;
}

/* Opens a frame of function fi whose call-tree node is node. */
static inline int push_node(struct ptf_thread *t, uint32_t fi, uint32_t node, uint64_t now,
			    bool timed)
{
	struct ptf_frame *f;

	if (t->n == t->cap) {
		int err = ptf_grow((void **)&t->f, &t->cap, t->n + 1, sizeof(*t->f));

		if (err < 0)
			return err;
	}
	f = &t->f[t->n++];
	f->node = node;
	f->func = fi;
	f->entry_insns = t->insns;
	f->entry_time = now;
	f->entry_timed = timed;
	f->mcount = 0; /* the other merge fields are set with it */
	return 0;
}

static int push_frame(struct hwt_ptf *ptf, struct ptf_thread *t, uint32_t fi, uint64_t now,
		      bool timed)
{
	uint32_t node;
	int err;

	err = node_child(ptf, t->f[t->n - 1].node, fi, &node);
	if (err < 0)
		return err;
	return push_node(t, fi, node, now, timed);
}

/* The function and node a call to `to` from node parent of a thread of pid
 * enters: from the call cache, else resolved and cached. */
static int call_target_from(struct hwt_ptf *ptf, int32_t pid, uint32_t parent, uint64_t to,
			    uint64_t now, uint32_t *fi, uint32_t *node)
{
	struct ptf_ccache *c;
	int err;

	if (!ptf->ccache) {
		ptf->ccache = calloc((size_t)1 << PTF_CCACHE_BITS, sizeof(*ptf->ccache));
		if (!ptf->ccache)
			return -ENOMEM;
	}
	c = &ptf->ccache[((to ^ (uint64_t)parent * 0x9e3779b97f4a7c15ull) *
			  0xbf58476d1ce4e5b9ull) >>
			 (64 - PTF_CCACHE_BITS)];
	if (c->parent1 == parent + 1 && c->to == to) {
		*fi = c->func;
		*node = c->node;
		return 0;
	}
	err = ptf_resolve(ptf, pid, now, to, true, fi);
	if (err < 0)
		return err;
	err = node_child(ptf, parent, *fi, node);
	if (err < 0)
		return err;
	c->to = to;
	c->parent1 = parent + 1;
	c->func = *fi;
	c->node = *node;
	return 0;
}

/* The function and node a call to `to` from t's innermost frame enters. */
static inline int call_target(struct hwt_ptf *ptf, struct ptf_thread *t, uint64_t to, uint64_t now,
			      uint32_t *fi, uint32_t *node)
{
	return call_target_from(ptf, t->pid, t->f[t->n - 1].node, to, now, fi, node);
}

static int hist_add(uint64_t **hist, uint64_t v)
{
	if (!*hist) {
		*hist = calloc(HWT_REP_QUANTIZE_BUCKETS, sizeof(**hist));
		if (!*hist)
			return -ENOMEM;
	}
	(*hist)[hwt_rep_quantize_bucket(v > INT64_MAX ? INT64_MAX : (int64_t)v)]++;
	return 0;
}

/* Closes the innermost frame: a completed call (its return, or an unwind)
 * when complete, else a frame lost to a gap or open at the end. */
static inline int pop_frame(struct hwt_ptf *ptf, struct ptf_thread *t, bool complete,
			    uint64_t insns, uint64_t now, bool timed)
{
	struct ptf_frame *f = &t->f[t->n - 1];
	struct ptf_func *fn = &ptf->funcs[f->func];
	int err = 0;

	if (complete) {
		uint64_t in = insns >= f->entry_insns ? insns - f->entry_insns : 0;

		fn->returns++;
		fn->incl_insns += in;
		if (ptf->cfg.views & HWT_PTF_CALLS)
			err = hist_add(&fn->hist_insns, in);
		if (err >= 0 && timed && f->entry_timed && now >= f->entry_time) {
			uint64_t ns = now - f->entry_time;

			fn->timed_returns++;
			fn->incl_ns += ns;
			if (ns < fn->min_ns)
				fn->min_ns = ns;
			if (ns > fn->max_ns)
				fn->max_ns = ns;
			if (ptf->cfg.views & HWT_PTF_CALLS)
				err = hist_add(&fn->hist_ns, ns);
		}
		if (err < 0)
			return err;
	}
	if (ptf->cfg.views & HWT_PTF_TIMELINE) {
		err = ptf_timeline_call(ptf, t, t->n - 1, now);
		if (err < 0)
			return err;
	}
	t->n--;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* BRANCHES                                                                  */

static int row_get(struct hwt_ptf *ptf, uint64_t ip, struct ptf_row **out)
{
	uint32_t i = ptf_map_get(&ptf->row_map, ip, 0);
	int err;

	if (i == PTF_NONE) {
		err = ptf_grow((void **)&ptf->rows, &ptf->caprows, ptf->nrows + 1,
			       sizeof(*ptf->rows));
		if (err < 0)
			return err;
		memset(&ptf->rows[ptf->nrows], 0, sizeof(*ptf->rows));
		ptf->rows[ptf->nrows].ip = ip;
		err = ptf_map_put(&ptf->row_map, ip, 0, (uint32_t)ptf->nrows);
		if (err < 0)
			return err;
		i = (uint32_t)ptf->nrows++;
	}
	*out = &ptf->rows[i];
	return 0;
}

static int stack_hit(struct hwt_ptf *ptf, uint32_t node)
{
	uint32_t i = ptf_map_get(&ptf->stack_map, node, 0);
	int err;

	if (i == PTF_NONE) {
		err = ptf_grow((void **)&ptf->stacks, &ptf->capstacks, ptf->nstacks + 1,
			       sizeof(*ptf->stacks));
		if (err < 0)
			return err;
		memset(&ptf->stacks[ptf->nstacks], 0, sizeof(*ptf->stacks));
		ptf->stacks[ptf->nstacks].node = node;
		err = ptf_map_put(&ptf->stack_map, node, 0, (uint32_t)ptf->nstacks);
		if (err < 0)
			return err;
		i = (uint32_t)ptf->nstacks++;
	}
	ptf->stacks[i].count++;
	ptf->stacks_total++;
	return 0;
}

/* The instruction addresses of a block record into ptf->ips. */
static int block_ips(struct hwt_ptf *ptf, const struct hwt_dec_rec *rec, size_t *n)
{
	size_t want = rec->u.block.ninsn;
	int got, err;

	err = ptf_grow((void **)&ptf->ips, &ptf->capips, want ? want : 1, sizeof(*ptf->ips));
	if (err < 0)
		return err;
	got = hwt_dec_block_insns(rec, ptf->ips, want);
	if (got < 0)
		return got;
	*n = (size_t)got;
	return 0;
}

static int branch_block(struct hwt_ptf *ptf, struct ptf_thread *t, const struct hwt_dec_rec *rec)
{
	const struct ptf_func *f = &ptf->funcs[ptf->target];
	uint64_t lo = f->start, hi = f->start + (f->size ? f->size : 1);
	struct ptf_row *row = NULL;
	size_t n;
	int err;

	if (!ptf->image && rec->u.block.image) {
		ptf->image = hwt_dec_image_get((struct hwt_dec_image *)rec->u.block.image);
		ptf->mode = rec->u.block.mode;
	}
	err = block_ips(ptf, rec, &n);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n; i++) {
		uint64_t ip = ptf->ips[i];

		if (ip < lo || ip >= hi) {
			row = NULL;
			continue;
		}
		err = row_get(ptf, ip, &row);
		if (err < 0)
			return err;
		row->count++;
		ptf->target_insns++;
		if (ip == ptf->stacks_ip) {
			err = stack_hit(ptf, t->f[t->n - 1].node);
			if (err < 0)
				return err;
		}
	}
	/* The block's branch, when its last instruction is ours and ran. */
	if (!row || n != rec->u.block.ninsn || row->ip != rec->u.block.end_ip ||
	    (rec->flags & HWT_DEC_RF_PARTIAL))
		return 0;
	switch (rec->u.block.branch) {
	case HWT_DEC_BR_COND:
		if (rec->flags & HWT_DEC_RF_TAKEN)
			row->taken++;
		else
			row->not_taken++;
		break;
	case HWT_DEC_BR_IND_CALL:
	case HWT_DEC_BR_IND_JUMP: {
		uint64_t to = rec->u.block.next_ip;
		uint32_t k;

		if (!to)
			break;
		k = ptf_map_get(&ptf->tgt_map, row->ip, to);
		if (k == PTF_NONE) {
			err = ptf_grow((void **)&ptf->tgts, &ptf->captgts, ptf->ntgts + 1,
				       sizeof(*ptf->tgts));
			if (err < 0)
				return err;
			memset(&ptf->tgts[ptf->ntgts], 0, sizeof(*ptf->tgts));
			ptf->tgts[ptf->ntgts].from = row->ip;
			ptf->tgts[ptf->ntgts].target = to;
			err = ptf_map_put(&ptf->tgt_map, row->ip, to, (uint32_t)ptf->ntgts);
			if (err < 0)
				return err;
			k = (uint32_t)ptf->ntgts++;
		}
		ptf->tgts[k].count++;
		break;
	}
	default:
		break;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Records                                                                   */

/* Brings t's stack to decoder depth `depth` when the two disagree: a gap
 * reset the decoder's stack (frames lost), another stream of the thread
 * began (per-CPU traces restart stacks), or the decoder knows frames we
 * were not shown (kept as "[unknown]"). */
static int sync_depth_slow(struct hwt_ptf *ptf, struct ptf_thread *t, uint32_t depth, uint64_t now,
			   bool timed)
{
	size_t want = (size_t)(depth < PTF_MAX_DEPTH ? depth : PTF_MAX_DEPTH) + 2;
	int err;

	/* The decoder's depth moves one frame per record, except down at a
	 * gap: a jump up by more than this is a broken depth, not frames. */
	if (want > t->n + 256) {
		ptf->st.too_deep++;
		return 0;
	}
	while (t->n > want) {
		err = pop_frame(ptf, t, false, t->insns, now, timed);
		if (err < 0)
			return err;
		ptf->st.lost_frames++;
	}
	while (t->n < want) {
		uint32_t fi;
		bool created;

		err = func_get(ptf, PTF_NONE, 0, NULL, NULL, &fi, &created);
		if (err < 0)
			return err;
		err = push_frame(ptf, t, fi, now, timed);
		if (err < 0)
			return err;
	}
	return 0;
}

static inline int sync_depth(struct hwt_ptf *ptf, struct ptf_thread *t, uint32_t depth,
			     uint64_t now, bool timed)
{
	if (depth < PTF_MAX_DEPTH && t->n == (size_t)depth + 2)
		return 0;
	return sync_depth_slow(ptf, t, depth, now, timed);
}

/* The decoder depth before rec: CALL records are at the callee's depth,
 * RETURN records (of a known frame) at the caller's. */
static uint32_t depth_before(const struct hwt_dec_rec *rec)
{
	if (rec->type == HWT_DEC_REC_CALL && rec->depth)
		return rec->depth - 1;
	if (rec->type == HWT_DEC_REC_RETURN && !(rec->flags & HWT_DEC_RF_UNKNOWN_FRAME) &&
	    rec->depth < UINT32_MAX)
		return rec->depth + 1;
	return rec->depth;
}

/* The instructions since t's last record, from the records' running count
 * (so blocks need not be delivered: see hwt_ptf_dec_flags; ptsession
 * continues it across a thread's streams; a count that goes back is
 * another decoder's, from 0), into *delta; the time since, into *dt. */
static inline uint64_t advance_insns(struct ptf_thread *t, uint64_t insns)
{
	uint64_t delta = insns >= t->last_count ? insns - t->last_count : insns;

	t->last_count = insns;
	t->insns += delta;
	return delta;
}

static inline void advance(struct hwt_ptf *ptf, struct ptf_thread *t, const struct hwt_dec_rec *rec,
			   uint64_t *delta, uint64_t *dt)
{
	*delta = advance_insns(t, rec->insns);
	*dt = 0;
	if (rec->flags & HWT_DEC_RF_TIME) {
		ptf->st.timed = true;
		/* Time going back is another stream of the thread: no time
		 * passed for this one. */
		if (t->has_time && rec->time > t->last_time)
			*dt = rec->time - t->last_time;
		t->last_time = rec->time;
		t->has_time = true;
	}
}

/* What came before the record ran in t's innermost frame. */
static inline void attribute(struct hwt_ptf *ptf, struct ptf_thread *t, uint64_t delta, uint64_t dt)
{
	struct ptf_node *node = &ptf->nodes[t->f[t->n - 1].node];

	node->self_insns += delta;
	node->self_ns += dt;
	ptf->st.insns += delta;
}

/* hwt_ptf_rec() of a CALL to `to` whose depth t's stack already has,
 * after advance(); now and timed: the thread's time (batches: none). */
static inline int fast_call(struct hwt_ptf *ptf, struct ptf_thread *t, uint64_t delta, uint64_t dt,
			    uint64_t to, uint64_t now, bool timed)
{
	uint32_t fi, node;
	int err;

	attribute(ptf, t, delta, dt);
	ptf->st.calls++;
	err = call_target(ptf, t, to, now, &fi, &node);
	if (err < 0)
		return err;
	if (!ptf->funcs[fi].calls++)
		ptf->funcs[fi].entry = to;
	return push_node(t, fi, node, now, timed);
}

/* hwt_ptf_rec() of a RETURN out of t's innermost frame, after advance(). */
static inline int fast_return(struct hwt_ptf *ptf, struct ptf_thread *t, uint64_t delta,
			      uint64_t dt, uint32_t flags, uint64_t now, bool timed)
{
	attribute(ptf, t, delta, dt);
	ptf->st.returns++;
	if (flags & HWT_DEC_RF_UNWOUND)
		ptf->st.unwound++;
	return pop_frame(ptf, t, true, t->insns, now, timed);
}

/* hwt_ptf_rec() of every other record. */
static __attribute__((noinline)) int rec_slow(struct hwt_ptf *ptf, const struct hwt_dec_rec *rec)
{
	struct ptf_thread *t;
	uint64_t delta = 0, dt = 0, now;
	bool timed;
	uint32_t fi = PTF_NONE, cnode;
	int err;

	/* A switch or a note changes no stack and runs nothing: the
	 * thread's next record carries its count (and the idle task that
	 * per-CPU traces switch to is no thread of the report). */
	if (rec->type == HWT_DEC_REC_SWITCH || rec->type == HWT_DEC_REC_NOTE)
		return 0;
	/* Nor does a status event of a thread that ran nothing yet (the
	 * idle task at a PSB+). */
	if (rec->type == HWT_DEC_REC_EVENT && !rec->insns &&
	    ptf_map_get(&ptf->thread_map, (uint64_t)(uint32_t)rec->pid,
			(uint64_t)(uint32_t)rec->tid) == PTF_NONE)
		return 0;
	err = thread_get(ptf, rec->pid, rec->tid, &t);
	if (err < 0)
		return err;
	advance(ptf, t, rec, &delta, &dt);
	now = t->last_time;
	timed = t->has_time;
	err = sync_depth(ptf, t, depth_before(rec), now, timed);
	if (err < 0)
		return err;

	/* The depth-0 code changes without a call: name it by its function
	 * before its instructions are counted. */
	if (rec->type == HWT_DEC_REC_BLOCK && (t->n == 2 || (ptf->cfg.views & HWT_PTF_BRANCHES))) {
		err = block_func(ptf, rec, now, &fi);
		if (err < 0)
			return err;
		if (t->n == 2) {
			err = set_base(ptf, t, fi);
			if (err < 0)
				return err;
		}
	}
	attribute(ptf, t, delta, dt);

	switch (rec->type) {
	case HWT_DEC_REC_BLOCK:
		if (fi != PTF_NONE && ptf->funcs[fi].target) {
			err = branch_block(ptf, t, rec);
			if (err < 0)
				return err;
		}
		break;
	case HWT_DEC_REC_CALL:
		ptf->st.calls++;
		if (t->n >= PTF_MAX_DEPTH + 2) {
			err = ptf_resolve(ptf, rec->pid, now, rec->u.call.to, true, &fi);
			if (err < 0)
				return err;
			if (!ptf->funcs[fi].calls++)
				ptf->funcs[fi].entry = rec->u.call.to;
			ptf->st.too_deep++;
			break;
		}
		err = call_target(ptf, t, rec->u.call.to, now, &fi, &cnode);
		if (err < 0)
			return err;
		if (!ptf->funcs[fi].calls++)
			ptf->funcs[fi].entry = rec->u.call.to;
		err = push_node(t, fi, cnode, now, timed);
		if (err < 0)
			return err;
		break;
	case HWT_DEC_REC_RETURN:
		if ((rec->flags & HWT_DEC_RF_UNKNOWN_FRAME) || t->n <= 2) {
			/* Out of a frame older than the trace: the code it
			 * returns to is the new depth-0 code. */
			ptf->st.unknown_returns++;
			t->older_frames = true;
			if (t->n == 2 && rec->u.ret.to) {
				err = ptf_resolve(ptf, rec->pid, now, rec->u.ret.to, false, &fi);
				if (err < 0)
					return err;
				err = set_base(ptf, t, fi);
				if (err < 0)
					return err;
			}
			break;
		}
		ptf->st.returns++;
		if (rec->flags & HWT_DEC_RF_UNWOUND)
			ptf->st.unwound++;
		err = pop_frame(ptf, t, true, t->insns, now, timed);
		if (err < 0)
			return err;
		break;
	case HWT_DEC_REC_GAP:
		ptf->st.gaps++;
		if (rec->u.gap.kind == HWT_DEC_GAP_LOST) {
			ptf->st.lost_gaps++;
			ptf->st.lost_bytes += rec->u.gap.size;
		} else if (rec->u.gap.kind == HWT_DEC_GAP_OVERFLOW) {
			ptf->st.overflows++;
		}
		break;
	default:
		break;
	}
	return sync_depth(ptf, t, rec->depth, now, timed);
}

/* Whether a call or return of t (type, flags, depth) takes the fast path:
 * a call whose depth t's stack already has, a return out of its innermost
 * frame. */
static inline bool fast_call_ok(const struct ptf_thread *t, uint32_t type, uint32_t depth)
{
	return type == HWT_DEC_REC_CALL && depth && depth < PTF_MAX_DEPTH - 1 &&
	       t->n == (size_t)depth + 1;
}

static inline bool fast_return_ok(const struct ptf_thread *t, uint32_t type, uint32_t flags,
				  uint32_t depth)
{
	return type == HWT_DEC_REC_RETURN && !(flags & HWT_DEC_RF_UNKNOWN_FRAME) &&
	       depth < PTF_MAX_DEPTH - 1 && t->n == (size_t)depth + 3;
}

int hwt_ptf_rec(struct hwt_ptf *ptf, const struct hwt_dec_rec *rec)
{
	struct ptf_thread *t;
	uint64_t delta, dt;

	if (!ptf || !rec || ptf->finished)
		return -HWT_EINVAL;
	ptf->st.records++;
	/* Most records are calls and returns of the thread before, at the
	 * depth its stack already has. */
	if (ptf->last_thread != PTF_NONE &&
	    (rec->type == HWT_DEC_REC_CALL || rec->type == HWT_DEC_REC_RETURN)) {
		t = &ptf->threads[ptf->last_thread];
		if (t->tid == rec->tid && t->pid == rec->pid) {
			if (fast_call_ok(t, rec->type, rec->depth)) {
				advance(ptf, t, rec, &delta, &dt);
				return fast_call(ptf, t, delta, dt, rec->u.call.to, t->last_time,
						 t->has_time);
			}
			if (fast_return_ok(t, rec->type, rec->flags, rec->depth)) {
				advance(ptf, t, rec, &delta, &dt);
				return fast_return(ptf, t, delta, dt, rec->flags, t->last_time,
						   t->has_time);
			}
		}
	}
	return rec_slow(ptf, rec);
}

static int sink_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	return hwt_ptf_rec(ctx, rec);
}

/* A batch of calls and returns (no times of their own: the PROFILE view
 * weighted by instructions): the fast paths as in hwt_ptf_rec(), the rest
 * as the records they stand for. Code is looked up at the batch's time
 * (its last entry's: every callee was mapped by then). */
static int sink_batch(void *ctx, const struct hwt_dec_batch *b)
{
	struct hwt_ptf *ptf = ctx;
	struct ptf_thread *t;
	uint64_t now;
	int err;

	if (ptf->finished)
		return -HWT_EINVAL;
	err = thread_get(ptf, b->pid, b->tid, &t);
	if (err < 0)
		return err;
	now = (b->flags & HWT_DEC_RF_TIME) ? b->time : t->last_time;
	for (size_t i = 0; i < b->n; i++) {
		const struct hwt_dec_callret *e = &b->e[i];
		uint64_t insns = b->insns_base + e->insns;

		ptf->st.records++;
		if (fast_call_ok(t, e->type, e->depth)) {
			err = fast_call(ptf, t, advance_insns(t, insns), 0, e->ip, now, false);
		} else if (fast_return_ok(t, e->type, e->flags, e->depth)) {
			err = fast_return(ptf, t, advance_insns(t, insns), 0, e->flags, now, false);
		} else {
			struct hwt_dec_rec rec;

			memset(&rec, 0, sizeof(rec));
			rec.type = e->type;
			rec.flags = e->flags | (b->flags & HWT_DEC_RF_TIME);
			rec.pid = b->pid;
			rec.tid = b->tid;
			rec.depth = e->depth;
			rec.insns = insns;
			rec.tsc = b->tsc;
			rec.time = b->time;
			if (e->type == HWT_DEC_REC_CALL) {
				rec.u.call.to = e->ip;
				rec.u.call.branch = e->branch;
			} else {
				rec.u.ret.to = e->ip;
				rec.u.ret.branch = e->branch;
			}
			err = rec_slow(ptf, &rec);
			t = &ptf->threads[ptf->last_thread];
		}
		if (err < 0)
			return err;
	}
	return 0;
}

/* The decoder's call tree (struct hwt_dec_tree): the decoder keeps our
 * node in its frames and counts per node; our stack of the thread is left
 * as it was at top() until sync() gives it back. What it stands for is
 * what fast_call() and fast_return() do with the batch's entries. */

/* The node of t's innermost frame, the instructions up to at->insns
 * counted as a call at at->depth + 1 would count them (fast_call_ok()). */
static int tree_top(void *ctx, const struct hwt_dec_tree_at *at, uint32_t *node)
{
	struct hwt_ptf *ptf = ctx;
	struct ptf_thread *t;
	int err;

	*node = HWT_DEC_NODE_NONE;
	if (ptf->finished)
		return -HWT_EINVAL;
	err = thread_get(ptf, at->pid, at->tid, &t);
	if (err < 0)
		return err;
	if (!fast_call_ok(t, HWT_DEC_REC_CALL, at->depth + 1))
		return 0;
	attribute(ptf, t, advance_insns(t, at->insns), 0);
	*node = t->f[t->n - 1].node;
	return 0;
}

/* A call to `to` from node parent (at->depth: the callee's): the call
 * counted as fast_call() counts it. */
static int tree_child(void *ctx, const struct hwt_dec_tree_at *at, uint32_t parent, uint64_t to,
		      uint32_t *node)
{
	struct hwt_ptf *ptf = ctx;
	struct ptf_thread *t;
	uint32_t fi;
	int err;

	*node = HWT_DEC_NODE_NONE;
	if (ptf->finished || parent >= ptf->nnodes)
		return -HWT_EINVAL;
	if (!at->depth || at->depth >= PTF_MAX_DEPTH - 1)
		return 0;
	err = thread_get(ptf, at->pid, at->tid, &t);
	if (err < 0)
		return err;
	err = call_target_from(ptf, at->pid, parent, to,
			       (at->flags & HWT_DEC_RF_TIME) ? at->time : t->last_time, &fi, node);
	if (err < 0)
		return err;
	ptf->st.records++;
	ptf->st.calls++;
	if (!ptf->funcs[fi].calls++)
		ptf->funcs[fi].entry = to;
	return 0;
}

/* t's stack is now the chain of node, at decoder depth at->depth, its
 * instructions up to at->insns counted. */
static int tree_sync(void *ctx, const struct hwt_dec_tree_at *at, uint32_t node)
{
	struct hwt_ptf *ptf = ctx;
	struct ptf_thread *t;
	size_t n = (size_t)at->depth + 2, l;
	uint32_t x = node;
	int err;

	if (ptf->finished || node >= ptf->nnodes || at->depth >= PTF_MAX_DEPTH)
		return -HWT_EINVAL;
	err = thread_get(ptf, at->pid, at->tid, &t);
	if (err < 0)
		return err;
	advance_insns(t, at->insns);
	err = ptf_grow((void **)&t->f, &t->cap, n, sizeof(*t->f));
	if (err < 0)
		return err;
	/* From the innermost frame down to the first that is ours already
	 * (a frame's node is its caller's child: the rest is too). */
	for (l = n - 1; l >= 2; l--) {
		struct ptf_frame *f = &t->f[l];

		if (l < t->n && f->node == x)
			break;
		memset(f, 0, sizeof(*f));
		f->node = x;
		f->func = ptf->nodes[x].func;
		f->entry_insns = t->insns;
		x = ptf->nodes[x].parent;
	}
	if (l < 2 && x != t->f[1].node)
		return -HWT_EINTERNAL;
	t->n = n;
	return 0;
}

/* What the decoder counted per node. */
static int tree_counts(void *ctx, const struct hwt_dec_tree_counts *c)
{
	struct hwt_ptf *ptf = ctx;

	if (ptf->finished)
		return -HWT_EINVAL;
	for (size_t i = 0; i < c->n; i++) {
		const struct hwt_dec_tree_count *k = &c->node[i];
		struct ptf_node *nd;

		if (!k->self && !k->calls)
			continue;
		if (i >= ptf->nnodes)
			return -HWT_EINVAL;
		nd = &ptf->nodes[i];
		nd->self_insns += k->self;
		ptf->st.insns += k->self;
		if (k->calls && nd->func != PTF_NONE)
			ptf->funcs[nd->func].calls += k->calls;
	}
	ptf->st.calls += c->calls;
	ptf->st.returns += c->returns;
	ptf->st.unwound += c->unwound;
	ptf->st.records += c->calls + c->returns + c->held;
	ptf->st.unknown_returns += c->held_unknown;
	return 0;
}

/* A depth-0 block or unknown-frame return in tree mode: the function of
 * the block, or the one the return went to, is t's depth-0 code now (as
 * rec_slow() names it for their records); the decoder counts. */
static int tree_base(void *ctx, const struct hwt_dec_rec *rec, struct hwt_dec_tree_base *out)
{
	struct hwt_ptf *ptf = ctx;
	struct ptf_thread *t;
	uint32_t fi;
	int err;

	out->node = HWT_DEC_NODE_NONE;
	out->hold = false;
	if (ptf->finished)
		return -HWT_EINVAL;
	if (rec->type != HWT_DEC_REC_BLOCK &&
	    (rec->type != HWT_DEC_REC_RETURN || !(rec->flags & HWT_DEC_RF_UNKNOWN_FRAME)))
		return 0;
	err = thread_get(ptf, rec->pid, rec->tid, &t);
	if (err < 0)
		return err;
	if (rec->flags & HWT_DEC_RF_TIME) {
		ptf->st.timed = true;
		t->last_time = rec->time;
		t->has_time = true;
	}
	ptf->st.records++;
	if (rec->type == HWT_DEC_REC_BLOCK) {
		err = block_func(ptf, rec, t->last_time, &fi);
	} else {
		ptf->st.unknown_returns++;
		t->older_frames = true;
		fi = PTF_NONE;
		err = 0;
		if (rec->u.ret.to)
			err = ptf_resolve(ptf, rec->pid, t->last_time, rec->u.ret.to, false, &fi);
	}
	if (err < 0)
		return err;
	if (fi != PTF_NONE) {
		err = set_base(ptf, t, fi);
		if (err < 0)
			return err;
	}
	out->node = t->f[1].node;
	/* A block's function is its basic block's from now on (block_func()
	 * keeps it), a return target's its address's (ptf_resolve() keeps
	 * it per process); the node of a depth-0 function is the thread's
	 * root's child: the same each time. */
	out->hold = fi != PTF_NONE && (rec->type != HWT_DEC_REC_BLOCK || rec->u.block.bb);
	return 0;
}

static const struct hwt_dec_tree ptf_tree = {tree_top, tree_child, tree_sync, tree_counts,
					     tree_base};

uint32_t hwt_ptf_dec_flags(const struct hwt_ptf_config *cfg)
{
	/* BRANCHES looks at every block of its function. */
	return cfg && (cfg->views & HWT_PTF_BRANCHES) ? 0 : HWT_DEC_F_BASE_BLOCKS;
}

void hwt_ptf_sink(struct hwt_ptf *ptf, struct hwt_dec_sink *sink)
{
	memset(sink, 0, sizeof(*sink));
	sink->size = sizeof(*sink);
	sink->want = HWT_DEC_WANT_ALL;
	sink->rec = sink_rec;
	sink->ctx = ptf;
	/* Calls and returns without their times: enough for stacks weighted
	 * by instructions. */
	if (ptf->cfg.views == HWT_PTF_PROFILE && ptf->cfg.weight == HWT_PTF_WEIGHT_INSNS) {
		sink->batch = sink_batch;
		sink->tree = &ptf_tree;
	}
}

int hwt_ptf_finish(struct hwt_ptf *ptf)
{
	int err;

	if (!ptf || ptf->finished)
		return -HWT_EINVAL;
	ptf->finished = true;
	for (size_t i = 0; i < ptf->nthreads; i++) {
		struct ptf_thread *t = &ptf->threads[i];

		while (t->n > 2) {
			err = pop_frame(ptf, t, false, t->insns, t->last_time, t->has_time);
			if (err < 0)
				return err;
			ptf->st.open_frames++;
		}
		if (ptf->cfg.views & HWT_PTF_TIMELINE) {
			err = ptf_timeline_flush(ptf, t, &t->f[1]);
			if (err >= 0)
				err = ptf_timeline_flush(ptf, t, &t->f[0]);
			if (err < 0)
				return err;
		}
	}
	return ptf_finish_views(ptf);
}
