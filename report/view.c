/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report/view.c - the perf-report-like views of a profile, in text and
 * JSON: entries keyed by the sort fields (default comm, object, function)
 * with self and children totals, sorted, each with a call graph in caller
 * order (its callees; for its own samples the whole chain from the root)
 * or callee order (its callers), laid out as `perf report --stdio` does.
 * One section per event; percentages are of the event's total weight.
 */
#include "report/report_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_FRAME UINT32_MAX

struct entry_val {
	uint64_t self, children, samples;
	uint32_t stamp; /* last row that counted into children */
	uint32_t frame; /* a frame of this entry (for its kind), or NO_FRAME */
	uint32_t comm;	/* the command of its first sample (pid, tid columns) */
};

/* All rows of one event. */
struct group {
	uint32_t event;
	uint64_t samples, weight;
	struct hwt_rep_set entries; /* keys: nsort x uint64_t */
	struct entry_val *ev;
	size_t ev_cap;
	uint32_t *rows;	   /* profile row ids */
	uint32_t *row_off; /* row i's entry ids: pos[row_off[i]..] */
	size_t nrows, rows_cap, row_off_cap;
	uint32_t *pos; /* entry id per stack position */
	size_t npos, pos_cap;
};

struct view {
	bool json;
	enum hwt_rep_field sort[8];
	size_t nsort;
	bool frame_fields; /* some sort field depends on the frame */
	struct group *groups;
	size_t ngroups;
};

/* A call-graph tree: node 0 is the virtual root. */
struct tree {
	struct hwt_rep_set nodes; /* keys: {parent, label} */
	uint64_t *val;
	size_t cap;
	uint32_t *frame; /* node -> the dict frame that made it */
	size_t frame_cap;
	uint32_t *first_child, *next_sibling; /* built before printing */
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t c;
	void *np;

	if (need <= *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	while (c < need)
		c *= 2;
	if (c > SIZE_MAX / elem)
		return -HWT_ETOOBIG;
	np = realloc(*p, c * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = c;
	return 0;
}

static int view_init(struct hwt_rep_render_ctx *ctx, bool json)
{
	const struct hwt_rep_render_config *cfg = ctx->cfg;
	struct view *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	ctx->state = v;
	v->json = json;
	if (cfg->nsort) {
		for (size_t i = 0; i < cfg->nsort; i++) {
			switch (cfg->sort[i]) {
			case HWT_REP_F_FUNCTION:
			case HWT_REP_F_OBJECT:
			case HWT_REP_F_SRCLINE:
				v->frame_fields = true;
				/* fall through */
			case HWT_REP_F_COMM:
			case HWT_REP_F_PID:
			case HWT_REP_F_TID:
			case HWT_REP_F_CPU:
			case HWT_REP_F_EVENT:
				break;
			default:
				hwt_log(&cfg->log, HWT_LOG_ERROR, "cannot sort a report by '%s'",
					hwt_rep_field_name(cfg->sort[i]));
				return -HWT_EINVAL;
			}
			v->sort[i] = cfg->sort[i];
		}
		v->nsort = cfg->nsort;
	} else {
		v->sort[0] = HWT_REP_F_COMM;
		v->sort[1] = HWT_REP_F_OBJECT;
		v->sort[2] = HWT_REP_F_FUNCTION;
		v->nsort = 3;
		v->frame_fields = true;
	}
	return 0;
}

static int view_init_text(struct hwt_rep_render_ctx *ctx)
{
	return view_init(ctx, false);
}

static int view_init_json(struct hwt_rep_render_ctx *ctx)
{
	return view_init(ctx, true);
}

static struct group *find_group(struct view *v, uint32_t event)
{
	struct group *g;

	for (size_t i = 0; i < v->ngroups; i++) {
		if (v->groups[i].event == event)
			return &v->groups[i];
	}
	g = realloc(v->groups, (v->ngroups + 1) * sizeof(*g));
	if (!g)
		return NULL;
	v->groups = g;
	g = &v->groups[v->ngroups++];
	memset(g, 0, sizeof(*g));
	g->event = event;
	hwt_rep_set_init(&g->entries);
	return g;
}

static void entry_key(const struct view *v, const struct hwt_rep_dict *dict,
		      const struct hwt_rep_row_key *row, uint32_t frame, uint64_t *key)
{
	const struct hwt_rep_frame_key *fk =
	    frame == NO_FRAME ? NULL : hwt_rep_dict_frame_key(dict, frame);

	for (size_t i = 0; i < v->nsort; i++) {
		switch (v->sort[i]) {
		case HWT_REP_F_FUNCTION:
			key[i] = fk ? hwt_rep_dict_label_id(dict, frame) : 0;
			break;
		case HWT_REP_F_OBJECT:
			key[i] = fk ? fk->object : 0;
			break;
		case HWT_REP_F_SRCLINE:
			key[i] = fk ? ((uint64_t)fk->file << 32) | fk->line : 0;
			break;
		case HWT_REP_F_COMM:
			key[i] = row->comm;
			break;
		case HWT_REP_F_EVENT:
			key[i] = row->event;
			break;
		case HWT_REP_F_PID:
			key[i] = (uint32_t)row->pid;
			break;
		case HWT_REP_F_TID:
			key[i] = (uint32_t)row->tid;
			break;
		case HWT_REP_F_CPU:
			key[i] = (uint32_t)row->cpu;
			break;
		default:
			key[i] = 0;
			break;
		}
	}
}

static int view_process(struct hwt_rep_render_ctx *ctx, int source, uint32_t row_index,
			const struct hwt_rep_row_key *row, const struct hwt_rep_row_val *val)
{
	struct view *v = ctx->state;
	const struct hwt_rep_dict *dict = ctx->profile->dict;
	const uint32_t *frames;
	size_t n, npos;
	struct group *g;
	uint32_t row_id;
	int err;

	if (source != 0)
		return 0;
	g = find_group(v, row->event);
	if (!g)
		return -ENOMEM;
	n = hwt_rep_dict_stack_get(dict, row->stack, &frames);
	npos = v->frame_fields && n ? n : 1;
	if ((err = grow((void **)&g->rows, &g->rows_cap, g->nrows + 1, sizeof(*g->rows))) < 0 ||
	    (err = grow((void **)&g->row_off, &g->row_off_cap, g->nrows + 1, sizeof(*g->row_off))) <
		0)
		return err;
	if ((err = grow((void **)&g->pos, &g->pos_cap, g->npos + npos, sizeof(*g->pos))) < 0)
		return err;
	if (g->npos + npos > UINT32_MAX)
		return -HWT_ETOOBIG;
	row_id = (uint32_t)g->nrows;
	g->rows[g->nrows] = row_index;
	g->row_off[g->nrows++] = (uint32_t)g->npos;
	g->samples += val->samples;
	g->weight += val->weight;
	for (size_t i = 0; i < npos; i++) {
		uint64_t key[8];
		uint32_t frame = n ? frames[i] : NO_FRAME, id;
		struct entry_val *e;

		entry_key(v, dict, row, frame, key);
		if ((err = grow((void **)&g->ev, &g->ev_cap, g->entries.n + 1, sizeof(*g->ev))) < 0)
			return err;
		err = hwt_rep_set_intern(&g->entries, key, v->nsort * sizeof(uint64_t), &id);
		if (err < 0)
			return err;
		e = &g->ev[id];
		if (err == 1) {
			memset(e, 0, sizeof(*e));
			e->stamp = UINT32_MAX;
			e->frame = frame;
			e->comm = row->comm;
		}
		g->pos[g->npos++] = id;
		if (i == 0) {
			e->self += val->weight;
			e->samples += val->samples;
		}
		/* A recursive function counts once per sample in children. */
		if (e->stamp != row_id) {
			e->stamp = row_id;
			e->children += val->weight;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Sorting entries */

struct sorted {
	uint32_t id;
	uint64_t primary, secondary;
	const char *name;
};

static int cmp_sorted(const void *pa, const void *pb)
{
	const struct sorted *a = pa, *b = pb;

	if (a->primary != b->primary)
		return a->primary > b->primary ? -1 : 1;
	if (a->secondary != b->secondary)
		return a->secondary > b->secondary ? -1 : 1;
	if (a->name && b->name) {
		int c = strcmp(a->name, b->name);

		if (c)
			return c;
	}
	return a->id < b->id ? -1 : a->id > b->id;
}

static const char *entry_name(const struct view *v, const struct hwt_rep_dict *dict,
			      const struct group *g, uint32_t id)
{
	const uint64_t *key = (const uint64_t *)hwt_rep_set_key(&g->entries, id, NULL);

	for (size_t i = 0; i < v->nsort; i++) {
		if (v->sort[i] == HWT_REP_F_FUNCTION)
			return key[i] ? hwt_rep_dict_str_get(dict, (uint32_t)key[i]) : "[unknown]";
	}
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Call-graph trees */

static void tree_fini(struct tree *t)
{
	hwt_rep_set_fini(&t->nodes);
	free(t->val);
	free(t->frame);
	free(t->first_child);
	free(t->next_sibling);
	memset(t, 0, sizeof(*t));
}

static int tree_init(struct tree *t)
{
	uint32_t key[2] = {UINT32_MAX, UINT32_MAX}, id;
	int err;

	memset(t, 0, sizeof(*t));
	hwt_rep_set_init(&t->nodes);
	if ((err = grow((void **)&t->val, &t->cap, 1, sizeof(*t->val))) < 0 ||
	    (err = grow((void **)&t->frame, &t->frame_cap, 1, sizeof(*t->frame))) < 0)
		return err;
	err = hwt_rep_set_intern(&t->nodes, key, sizeof(key), &id);
	if (err < 0)
		return err;
	t->val[0] = 0;
	t->frame[0] = UINT32_MAX;
	return 0;
}

static inline uint32_t tree_label(const struct tree *t, uint32_t node)
{
	return ((const uint32_t *)hwt_rep_set_key(&t->nodes, node, NULL))[1];
}

struct child_ref {
	uint32_t id;
	uint64_t val;
	const char *name;
	uint64_t addr;	 /* its function's start in its object; 0: unknown */
	uint32_t object; /* its object (dict string id) */
	uint32_t kind;	 /* enum hwt_rep_kind */
};

/* Heavier first; equal weights in perf's order. perf keys the children of
 * a call-graph node by object, then symbol start (inlined frames by name),
 * and lists equal weights in that key's order, highest first. So in one
 * object the higher address comes first (siblings are distinct functions:
 * any address of each gives the order of their starts); inlined frames
 * (perf compares their names) by name, the greater first, before the
 * object's functions. perf orders objects by the addresses of its own
 * structures, in practice the order it made them: the kernel's first, the
 * others as mapped. So the kernel's come last here, the others the later
 * mapped first (samples.c interns object names as they are mapped). That
 * order is perf's allocator's, not defined: the tests hold perf to this
 * order only in one object (tests/report/perf_compare.py). */
static int cmp_child(const void *pa, const void *pb)
{
	const struct child_ref *a = pa, *b = pb;
	bool ka = a->kind == HWT_REP_KIND_KERNEL, kb = b->kind == HWT_REP_KIND_KERNEL;
	bool ia = a->kind == HWT_REP_KIND_INLINED, ib = b->kind == HWT_REP_KIND_INLINED;

	if (a->val != b->val)
		return a->val > b->val ? -1 : 1;
	if (ka != kb)
		return ka ? 1 : -1;
	if (a->object != b->object)
		return a->object > b->object ? -1 : 1;
	if (ia != ib)
		return ia ? -1 : 1;
	if (ia)
		return -strcmp(a->name, b->name);
	if (a->addr != b->addr)
		return a->addr > b->addr ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Links children lists, each sorted by cmp_child. */
static int tree_link(struct tree *t, const struct hwt_rep_dict *dict)
{
	size_t n = t->nodes.n;
	struct child_ref *refs;
	uint32_t *count;
	size_t *start;

	t->first_child = malloc(n * sizeof(uint32_t));
	t->next_sibling = malloc(n * sizeof(uint32_t));
	refs = malloc(n * sizeof(*refs));
	count = calloc(n + 1, sizeof(*count));
	start = calloc(n + 1, sizeof(*start));
	if (!t->first_child || !t->next_sibling || !refs || !count || !start) {
		free(refs);
		free(count);
		free(start);
		return -ENOMEM;
	}
	for (size_t i = 1; i < n; i++)
		count[((const uint32_t *)hwt_rep_set_key(&t->nodes, (uint32_t)i, NULL))[0]]++;
	for (size_t i = 0; i < n; i++)
		start[i + 1] = start[i] + count[i];
	for (size_t i = 0; i < n; i++) {
		t->first_child[i] = UINT32_MAX;
		count[i] = 0;
	}
	for (size_t i = 1; i < n; i++) {
		uint32_t parent =
		    ((const uint32_t *)hwt_rep_set_key(&t->nodes, (uint32_t)i, NULL))[0];
		struct child_ref *r = &refs[start[parent] + count[parent]++];

		const struct hwt_rep_frame_key *fk = hwt_rep_dict_frame_key(dict, t->frame[i]);

		r->id = (uint32_t)i;
		r->val = t->val[i];
		r->name = hwt_rep_dict_str_get(dict, tree_label(t, (uint32_t)i));
		r->addr = fk->addr;
		r->object = fk->object;
		r->kind = fk->kind;
	}
	for (size_t p = 0; p < n; p++) {
		size_t k = start[p + 1] - start[p];

		if (!k)
			continue;
		qsort(refs + start[p], k, sizeof(*refs), cmp_child);
		t->first_child[p] = refs[start[p]].id;
		for (size_t j = 0; j < k; j++)
			t->next_sibling[refs[start[p] + j].id] =
			    j + 1 < k ? refs[start[p] + j + 1].id : UINT32_MAX;
	}
	free(refs);
	free(count);
	free(start);
	return 0;
}

/* Which rows hold each entry: an index (CSR) so that building an entry's
 * graph visits only its rows, not the whole profile once per entry. */
struct entry_rows {
	uint32_t *off;	/* entry -> first index in rows; n + 1 of them */
	uint32_t *rows; /* group row indices */
};

static void entry_rows_fini(struct entry_rows *er)
{
	free(er->off);
	free(er->rows);
}

static int entry_rows_init(struct entry_rows *er, const struct view *v, const struct group *g)
{
	size_t n = g->entries.n;
	uint32_t *last = malloc((n ? n : 1) * sizeof(*last));
	size_t total = 0;

	er->off = calloc(n + 1, sizeof(*er->off));
	er->rows = NULL;
	if (!last || !er->off) {
		free(last);
		return -ENOMEM;
	}
	/* Two passes: count each entry once per row, then place. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++)
			last[i] = UINT32_MAX;
		for (size_t r = 0; r < g->nrows; r++) {
			size_t end = r + 1 < g->nrows ? g->row_off[r + 1] : g->npos;

			for (size_t k = g->row_off[r]; k < end; k++) {
				uint32_t e = g->pos[k];

				if (last[e] == r)
					continue;
				last[e] = (uint32_t)r;
				if (pass == 0)
					er->off[e + 1]++;
				else
					er->rows[er->off[e]++] = (uint32_t)r;
			}
		}
		if (pass == 0) {
			for (size_t i = 0; i < n; i++)
				er->off[i + 1] += er->off[i];
			total = er->off[n];
			er->rows = malloc((total ? total : 1) * sizeof(*er->rows));
			if (!er->rows) {
				free(last);
				return -ENOMEM;
			}
		}
	}
	/* The fill advanced each start to the next entry's: shift back. */
	memmove(er->off + 1, er->off, n * sizeof(*er->off));
	er->off[0] = 0;
	free(last);
	(void)v;
	return 0;
}

/* A row on its way down an entry's graph. */
struct walker {
	const uint32_t *frames; /* the row's stack, leaf first */
	uint32_t top;		/* stack index of the path's first frame
				 * (its root end in caller order, its leaf
				 * end in callee order) */
	uint32_t len;		/* frames in the path */
	uint32_t node;		/* tree node reached so far */
	uint64_t weight;
};

/* Builds the graph of entry `id` from its rows; with !worth (the entry is
 * under the graph limit, so no branch could show) an empty graph. caller:
 * its callees (and the whole chain from the root for its own samples);
 * else its callers. Without children the entry stands for its own
 * samples only, so only they make its graph (as perf's self entries,
 * whose call chains are the chains of their samples). */
static int build_tree(struct tree *t, const struct view *v, const struct hwt_rep_profile *p,
		      const struct group *g, const struct entry_rows *er, uint32_t id, bool caller,
		      bool children, bool worth, uint64_t min)
{
	size_t nw = 0, cap = worth ? er->off[id + 1] - er->off[id] : 0;
	struct walker *w = malloc((cap ? cap : 1) * sizeof(*w));
	int err = tree_init(t);

	if (!w) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t ri = er->off[id]; worth && ri < er->off[id + 1] && err >= 0; ri++) {
		size_t r = er->rows[ri];
		const struct hwt_rep_row_key *row = hwt_rep_profile_row(p, g->rows[r]);
		const uint32_t *pos = g->pos + g->row_off[r], *frames;
		size_t n = hwt_rep_dict_stack_get(p->dict, row->stack, &frames), npos, j;

		if (!n)
			continue;
		npos = v->frame_fields ? n : 1;
		if (!children && pos[0] != id)
			continue; /* without children an entry is its own samples */
		/* As perf's cumulative entries: a sample whose leaf is in the
		 * entry gives its whole chain (root to leaf in caller order,
		 * leaf to root in callee order); any other sample gives the
		 * path from the entry's occurrence that perf meets first when
		 * it walks the chain in display order: the outermost one
		 * toward the leaf (its callees) in caller order, the innermost
		 * one toward the root (its callers) in callee order. So a
		 * recursive function shows once. */
		if (pos[0] == id) {
			j = caller ? n - 1 : 0;
		} else if (caller) {
			for (j = npos; j-- > 0;) {
				if (pos[j] == id)
					break;
			}
		} else {
			for (j = 0; j < npos && pos[j] != id; j++)
				;
			if (j == npos)
				j = SIZE_MAX;
		}
		if (j == SIZE_MAX)
			continue;
		w[nw].frames = frames;
		w[nw].top = (uint32_t)j;
		w[nw].len = caller ? (uint32_t)j + 1 : (uint32_t)(n - j);
		w[nw].node = 0;
		w[nw].weight = p->vals[g->rows[r]].weight;
		t->val[0] += w[nw].weight;
		nw++;
	}
	/* Level by level, so that a branch under the graph limit is not
	 * grown further: it could never be shown, and growing every path in
	 * full costs a hash insert per frame of every sample. */
	for (uint32_t level = 0; nw && err >= 0; level++) {
		size_t keep = 0;

		for (size_t i = 0; i < nw && err >= 0; i++) {
			struct walker *k = &w[i];
			uint32_t f = caller ? k->frames[k->top - level] : k->frames[k->top + level];
			uint32_t key[2] = {k->node, hwt_rep_dict_label_id(p->dict, f)}, nid;

			if ((err = grow((void **)&t->val, &t->cap, t->nodes.n + 1,
					sizeof(*t->val))) < 0 ||
			    (err = grow((void **)&t->frame, &t->frame_cap, t->nodes.n + 1,
					sizeof(*t->frame))) < 0)
				break;
			err = hwt_rep_set_intern(&t->nodes, key, sizeof(key), &nid);
			if (err < 0)
				break;
			if (err == 1) {
				t->val[nid] = 0;
				t->frame[nid] = f;
			}
			err = 0;
			t->val[nid] += k->weight;
			k->node = nid;
		}
		for (size_t i = 0; i < nw && err >= 0; i++) {
			if (level + 1 < w[i].len && t->val[w[i].node] >= min && t->val[w[i].node])
				w[keep++] = w[i];
		}
		nw = keep;
	}
out:
	free(w);
	if (err >= 0)
		err = tree_link(t, p->dict);
	return err;
}

/* The first child from c on (c itself or a later sibling) whose weight
 * reaches the limit, or UINT32_MAX. */
static uint32_t shown_from(const struct tree *t, uint32_t c, uint64_t min)
{
	while (c != UINT32_MAX && (t->val[c] < min || !t->val[c]))
		c = t->next_sibling[c];
	return c;
}

/* The only child of node when it carries all of node's weight (a chain
 * perf prints one name a line, without a percentage), else UINT32_MAX. */
static uint32_t chain_child(const struct tree *t, uint32_t node)
{
	uint32_t c = t->first_child[node];

	if (c != UINT32_MAX && t->next_sibling[c] == UINT32_MAX && t->val[c] == t->val[node])
		return c;
	return UINT32_MAX;
}

static int print_branches(struct hwt_buf *out, const struct tree *t,
			  const struct hwt_rep_dict *dict, uint32_t node, struct hwt_buf *prefix,
			  uint64_t total, uint64_t min, unsigned int depth)
{
	uint32_t next = shown_from(t, t->first_child[node], min);
	int err = 0;

	/* Deeper than any real stack would be; stop rather than recurse on. */
	if (depth > HWT_REP_MAX_DEPTH + 2)
		return 0;
	while (next != UINT32_MAX && err >= 0) {
		uint32_t c = next;
		bool last;
		char pct[48];
		size_t plen = prefix->len;

		next = shown_from(t, t->next_sibling[c], min);
		last = next == UINT32_MAX;

		snprintf(pct, sizeof(pct), "--%.2f%%--", 100.0 * (double)t->val[c] / (double)total);
		err =
		    hwt_buf_printf(out, "%.*s|          \n", (int)plen, (const char *)prefix->data);
		if (err >= 0)
			err = hwt_buf_printf(out, "%.*s%c%s%s\n", (int)plen,
					     (const char *)prefix->data, last ? ' ' : '|', pct,
					     hwt_rep_dict_str_get(dict, tree_label(t, c)));
		/* perf gives every level 11 columns ("|" and 10 blanks,
		 * ipchain__fprintf_graph), whatever the width of the
		 * percentage: the names after the first of a chain sit one
		 * column right of it under "--0.76%--" and one column left
		 * under "--100.00%--", and so do they here. */
		if (err >= 0)
			err = hwt_buf_printf(prefix, "%c%10s", last ? ' ' : '|', "");
		for (uint32_t d; err >= 0 && (d = chain_child(t, c)) != UINT32_MAX; c = d)
			err = hwt_buf_printf(out, "%.*s%s\n", (int)prefix->len,
					     (const char *)prefix->data,
					     hwt_rep_dict_str_get(dict, tree_label(t, d)));
		if (err >= 0)
			err = print_branches(out, t, dict, c, prefix, total, min, depth + 1);
		prefix->len = plen;
	}
	return err;
}

/* Returns 1 when a graph was printed, 0 when nothing reached the limit.
 * skip: leave out the first name of a chain from the top, as perf does
 * when the sort keys start with sym (callchain__fprintf_graph): that name
 * is mostly the entry's own, shown twice otherwise. perf drops it also
 * where it is not (the root of a self entry's chain in caller order), and
 * so does this, so that the two reports read the same. */
static int print_graph(struct hwt_buf *out, const struct tree *t, const struct hwt_rep_dict *dict,
		       uint64_t total, double limit, bool skip)
{
	uint64_t min = (uint64_t)((double)total * limit / 100.0);
	size_t start = out->len;
	struct hwt_buf prefix;
	uint32_t first = shown_from(t, t->first_child[0], min);
	int err;

	if (first == UINT32_MAX)
		return 0;
	hwt_buf_init(&prefix);
	if (shown_from(t, t->next_sibling[first], min) == UINT32_MAX &&
	    t->val[first] == t->val[0]) {
		uint32_t c = first, d;
		bool printed = false;

		/* One chain from the top: no percentage, "---" before its first
		 * name (perf's callchain__fprintf_graph), less the first name
		 * with skip. */
		err = 0;
		for (d = c; err >= 0 && d != UINT32_MAX; c = d, d = chain_child(t, d)) {
			const char *name = hwt_rep_dict_str_get(dict, tree_label(t, d));

			if (d == first && skip)
				continue;
			err = hwt_buf_printf(out,
					     printed ? "               %s\n"
						     : "            |\n            ---%s\n",
					     name);
			printed = true;
		}
		if (err >= 0)
			err = hwt_buf_printf(&prefix, printed ? "%15s" : "%12s", "");
		if (err >= 0)
			err = print_branches(out, t, dict, c, &prefix, total, min, 0);
	} else {
		err = hwt_buf_printf(&prefix, "%12s", "");
		if (err >= 0)
			err = print_branches(out, t, dict, 0, &prefix, total, min, 0);
	}
	hwt_buf_fini(&prefix);
	/* A lone chain of one skipped name prints nothing, and then takes
	 * no blank line after it either (as perf). */
	return err < 0 ? err : out->len > start;
}

static int json_tree(struct hwt_buf *out, const struct tree *t, const struct hwt_rep_dict *dict,
		     uint32_t node, uint64_t total, uint64_t min, unsigned int depth)
{
	bool first = true;
	int err = hwt_buf_printf(out, "[");

	for (uint32_t c = t->first_child[node];
	     c != UINT32_MAX && err >= 0 && depth <= HWT_REP_MAX_DEPTH + 2;
	     c = t->next_sibling[c]) {
		if (t->val[c] < min || !t->val[c])
			continue;
		err = hwt_buf_printf(out, "%s{\"name\":", first ? "" : ",");
		first = false;
		if (err >= 0)
			err = hwt_rep_json_str(out, hwt_rep_dict_str_get(dict, tree_label(t, c)));
		if (err >= 0)
			err = hwt_buf_printf(
			    out,
			    ",\"weight\":%" PRIu64 ",\"percent\":%.4f,\"children\":", t->val[c],
			    100.0 * (double)t->val[c] / (double)total);
		if (err >= 0)
			err = json_tree(out, t, dict, c, total, min, depth + 1);
		if (err >= 0)
			err = hwt_buf_printf(out, "}");
	}
	if (err >= 0)
		err = hwt_buf_printf(out, "]");
	return err;
}

/* ------------------------------------------------------------------------ */
/* Entry columns */

static const char *kind_marker(uint32_t kind)
{
	switch (kind) {
	case HWT_REP_KIND_KERNEL:
		return "[k]";
	case HWT_REP_KIND_INLINED:
		return "[i]";
	case HWT_REP_KIND_JIT:
		return "[j]";
	default:
		return "[.]";
	}
}

static const char *column_title(enum hwt_rep_field f)
{
	switch (f) {
	case HWT_REP_F_COMM:
		return "Command";
	case HWT_REP_F_PID:
		return "    Pid:Command"; /* as perf's, over "%7d:comm" */
	case HWT_REP_F_TID:
		return "    Tid:Command";
	case HWT_REP_F_CPU:
		return "CPU";
	case HWT_REP_F_EVENT:
		return "Event";
	case HWT_REP_F_OBJECT:
		return "Shared Object";
	case HWT_REP_F_SRCLINE:
		return "Source:Line";
	default:
		return "Symbol";
	}
}

/* The text of column i of an entry (into tmp when it must be built). */
static const char *column_text(const struct view *v, const struct hwt_rep_dict *dict,
			       const struct group *g, uint32_t id, size_t i, char *tmp,
			       size_t tmpsz, bool marker)
{
	const uint64_t *key = (const uint64_t *)hwt_rep_set_key(&g->entries, id, NULL);
	const struct entry_val *e = &g->ev[id];
	const char *s;

	switch (v->sort[i]) {
	case HWT_REP_F_COMM:
	case HWT_REP_F_EVENT:
		s = hwt_rep_dict_str_get(dict, (uint32_t)key[i]);
		return *s ? s : "[unknown]";
	case HWT_REP_F_PID:
	case HWT_REP_F_TID:
		/* Text as perf's thread column: the number and the command
		 * (marker: for people; else the bare number, for JSON). */
		s = hwt_rep_dict_str_get(dict, e->comm);
		if (marker)
			snprintf(tmp, tmpsz, "%7" PRId32 ":%s", (int32_t)(uint32_t)key[i],
				 *s ? s : "[unknown]");
		else
			snprintf(tmp, tmpsz, "%" PRId32, (int32_t)(uint32_t)key[i]);
		return tmp;
	case HWT_REP_F_CPU:
		/* perf prints three digits ("%*.*d" at width 3) */
		snprintf(tmp, tmpsz, marker ? "%.3" PRId32 : "%" PRId32, (int32_t)(uint32_t)key[i]);
		return tmp;
	case HWT_REP_F_OBJECT:
		s = hwt_rep_dict_str_get(dict, (uint32_t)key[i]);
		if (!*s)
			return "[unknown]";
		return strrchr(s, '/') ? strrchr(s, '/') + 1 : s;
	case HWT_REP_F_SRCLINE:
		if (!(key[i] >> 32))
			return "[unknown]";
		snprintf(tmp, tmpsz, "%s:%u", hwt_rep_dict_str_get(dict, (uint32_t)(key[i] >> 32)),
			 (unsigned int)(uint32_t)key[i]);
		return tmp;
	case HWT_REP_F_FUNCTION: {
		const struct hwt_rep_frame_key *fk =
		    e->frame == NO_FRAME ? NULL : hwt_rep_dict_frame_key(dict, e->frame);
		const char *name =
		    key[i] ? hwt_rep_dict_str_get(dict, (uint32_t)key[i]) : "[unknown]";

		if (!marker)
			return name;
		snprintf(tmp, tmpsz, "%s %s", kind_marker(fk ? fk->kind : 0), name);
		return tmp;
	}
	default:
		return "";
	}
}

static const char *kind_name(uint32_t kind)
{
	static const char *const names[] = {"unknown", "user", "kernel", "inlined", "jit"};

	return kind < HWT_ARRAY_SIZE(names) ? names[kind] : "unknown";
}

/* ------------------------------------------------------------------------ */
/* Output */

/* The text an entry sorts by among equal shares: its key columns' texts
 * joined by \x01 and ending in a NUL, numbers as fixed-width hex of their
 * offset from INT32_MIN so that they sort as numbers. */
static int tie_key(struct hwt_buf *out, const struct view *v, const struct hwt_rep_dict *dict,
		   const struct group *g, uint32_t id, char *tmp, size_t tmpsz)
{
	const uint64_t *key = (const uint64_t *)hwt_rep_set_key(&g->entries, id, NULL);
	int err = 0;

	for (size_t c = 0; c < v->nsort && err >= 0; c++) {
		enum hwt_rep_field f = v->sort[c];

		if (f == HWT_REP_F_PID || f == HWT_REP_F_TID || f == HWT_REP_F_CPU)
			err = hwt_buf_printf(out, "%08" PRIx32 "\x01",
					     (uint32_t)key[c] ^ 0x80000000u);
		else
			err = hwt_buf_printf(out, "%s\x01",
					     column_text(v, dict, g, id, c, tmp, tmpsz, false));
	}
	if (err >= 0)
		err = hwt_buf_append(out, "", 1);
	return err;
}

/* perf leaves a comm or dso column out when --comms or --dsos names one
 * value, and prints "# comm: NAME" above instead. Here a column is left
 * out when its filter names one value and every shown entry has it (with
 * children, entries of callers in other objects keep the column). Returns
 * the value, or NULL when column c shows. */
static const char *elided(struct hwt_rep_render_ctx *ctx, const struct group *g,
			  const struct sorted *order, size_t shown, size_t c, char *tmp,
			  size_t tmpsz)
{
	const struct hwt_rep_profile *p = ctx->profile;
	const struct view *v = ctx->state;
	const char *only;

	if (v->nsort < 2)
		return NULL;
	if (v->sort[c] == HWT_REP_F_COMM && p->nf_comms == 1)
		only = hwt_rep_dict_str_get(p->dict, p->f_comms[0]);
	else if (v->sort[c] == HWT_REP_F_OBJECT && p->nf_objects == 1)
		only = strrchr(p->f_objects[0], '/') ? strrchr(p->f_objects[0], '/') + 1
						     : p->f_objects[0];
	else
		return NULL;
	for (size_t i = 0; i < shown; i++) {
		if (strcmp(column_text(v, p->dict, g, order[i].id, c, tmp, tmpsz, true), only))
			return NULL;
	}
	return only;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static int print_group(struct hwt_rep_render_ctx *ctx, struct group *g, struct hwt_buf *out,
		       bool first_group)
{
	const struct hwt_rep_render_config *cfg = ctx->cfg;
	const struct hwt_rep_dict *dict = ctx->profile->dict;
	struct view *v = ctx->state;
	size_t n = g->entries.n, shown = 0;
	struct sorted *order;
	enum hwt_rep_order ord = cfg->order;
	enum hwt_rep_graph graph = cfg->graph;
	bool children = cfg->children;
	uint64_t graph_min, total = g->weight, total_samples = g->samples;
	struct entry_rows er;
	int widths[8];
	bool show[8];
	size_t last_col = 0;
	struct hwt_buf keys;
	int err = 0;
	char tmp[4400];

	/* perf's default percentages are of every sample in the time range,
	 * the ones the other filters rejected too (--percentage absolute). */
	if (!cfg->relative) {
		const struct hwt_rep_profile *p = ctx->profile;

		for (size_t i = 0; i < p->nf_events; i++) {
			if (p->f_events[i].event == g->event) {
				total += p->f_events[i].weight;
				total_samples += p->f_events[i].samples;
			}
		}
	}
	if (!children && ord == HWT_REP_ORDER_CHILDREN)
		ord = HWT_REP_ORDER_SELF;
	if (graph == HWT_REP_GRAPH_AUTO)
		graph = children ? HWT_REP_GRAPH_CALLER : HWT_REP_GRAPH_CALLEE;
	order = malloc((n ? n : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	/* Without children, perf lists entries of equal self by their keys,
	 * column after column, ascending: their texts, kept in one buffer. */
	hwt_buf_init(&keys);
	if (!children) {
		size_t *off = malloc((n ? n : 1) * sizeof(*off));

		if (!off) {
			free(order);
			return -ENOMEM;
		}
		for (size_t i = 0; i < n && err >= 0; i++) {
			off[i] = keys.len;
			err = tie_key(&keys, v, dict, g, (uint32_t)i, tmp, sizeof(tmp));
		}
		for (size_t i = 0; i < n && err >= 0; i++)
			order[i].name = (const char *)keys.data + off[i];
		free(off);
		if (err < 0) {
			hwt_buf_fini(&keys);
			free(order);
			return err;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct entry_val *e = &g->ev[i];

		order[i].id = (uint32_t)i;
		if (children)
			order[i].name = entry_name(v, dict, g, (uint32_t)i);
		switch (ord) {
		case HWT_REP_ORDER_SELF:
			order[i].primary = e->self;
			order[i].secondary = children ? e->children : 0;
			break;
		case HWT_REP_ORDER_SAMPLES:
			order[i].primary = e->samples;
			order[i].secondary = e->self;
			break;
		default:
			order[i].primary = e->children;
			order[i].secondary = e->self;
			break;
		}
	}
	qsort(order, n, sizeof(*order), cmp_sorted);
	graph_min = (uint64_t)((double)total * cfg->graph_limit / 100.0);
	/* Which entries show: over the percent limit, at most max_entries. */
	for (size_t i = 0; i < n; i++) {
		const struct entry_val *e = &g->ev[order[i].id];
		uint64_t key = ord == HWT_REP_ORDER_SELF || !children ? e->self : e->children;

		if (cfg->max_entries && shown == cfg->max_entries)
			break;
		if (ord == HWT_REP_ORDER_SAMPLES)
			key = e->self;
		if (pct(key, total) < cfg->percent_limit)
			break;
		if (!key)
			break; /* an entry with nothing to show */
		order[shown++] = order[i];
	}
	if (v->json) {
		err = hwt_buf_printf(out, "%s{\"event\":", first_group ? "" : ",");
		if (err >= 0)
			err = hwt_rep_json_str(out, hwt_rep_dict_str_get(dict, g->event));
		if (err >= 0)
			err = hwt_buf_printf(
			    out, ",\"samples\":%" PRIu64 ",\"weight\":%" PRIu64 ",\"entries\":[",
			    total_samples, total);
	} else {
		const char *ev = hwt_rep_dict_str_get(dict, g->event);

		err = hwt_buf_printf(out, "%s#\n", first_group ? "" : "\n");
		for (size_t c = 0; c < v->nsort && err >= 0; c++) {
			const char *only = elided(ctx, g, order, shown, c, tmp, sizeof(tmp));

			show[c] = !only;
			if (only)
				err = hwt_buf_printf(out, "# %s: %s\n",
						     v->sort[c] == HWT_REP_F_COMM ? "comm" : "dso",
						     only);
			else
				last_col = c;
		}
		if (err >= 0 && ctx->profile->stats.exact)
			err = hwt_buf_printf(out,
					     "# Distinct stacks: %" PRIu64
					     " of event '%s', exact (every event counted, not "
					     "sampled)\n# Event count: %" PRIu64 "\n#\n",
					     total_samples, *ev ? ev : "unknown", total);
		else if (err >= 0)
			err = hwt_buf_printf(out,
					     "# Samples: %" PRIu64
					     " of event '%s'\n# Event count: %" PRIu64 "\n#\n",
					     total_samples, *ev ? ev : "unknown", total);
		for (size_t c = 0; c < v->nsort; c++) {
			widths[c] = (int)strlen(column_title(v->sort[c]));
			for (size_t i = 0; i < shown; i++) {
				int w = (int)strlen(column_text(v, dict, g, order[i].id, c, tmp,
								sizeof(tmp), true));

				if (w > widths[c])
					widths[c] = w;
			}
			if (c == last_col)
				widths[c] = 0; /* no padding at the end of a line */
		}
		if (err >= 0)
			err = hwt_buf_printf(out, children ? "# Children      Self" : "# Overhead");
		for (size_t c = 0; c < v->nsort && err >= 0; c++) {
			if (show[c])
				err = hwt_buf_printf(out, "  %-*s", widths[c],
						     column_title(v->sort[c]));
		}
		if (err >= 0)
			err = hwt_buf_printf(out,
					     children ? "\n# ........  ........" : "\n# ........");
		for (size_t c = 0; c < v->nsort && err >= 0; c++) {
			int w = widths[c] ? widths[c] : (int)strlen(column_title(v->sort[c]));

			if (!show[c])
				continue;
			err = hwt_buf_printf(out, "  ");
			for (int k = 0; k < w && err >= 0; k++)
				err = hwt_buf_append(out, ".", 1);
		}
		if (err >= 0)
			err = hwt_buf_printf(out, "\n#\n");
	}
	memset(&er, 0, sizeof(er));
	if (err >= 0 && graph != HWT_REP_GRAPH_NONE && shown)
		err = entry_rows_init(&er, v, g);
	for (size_t i = 0; i < shown && err >= 0; i++) {
		const struct entry_val *e = &g->ev[order[i].id];
		struct tree t;
		bool want_graph = graph != HWT_REP_GRAPH_NONE;

		memset(&t, 0, sizeof(t));
		if (want_graph) {
			bool caller = graph == HWT_REP_GRAPH_CALLER;
			uint64_t gtotal = children ? e->children : e->self;

			err = build_tree(&t, v, ctx->profile, g, &er, order[i].id, caller, children,
					 gtotal && gtotal >= graph_min, graph_min);
			if (err < 0) {
				tree_fini(&t);
				break;
			}
		}
		if (v->json) {
			uint64_t min = (uint64_t)((double)total * cfg->graph_limit / 100.0);

			err = hwt_buf_printf(out, "%s{", i ? "," : "");
			for (size_t c = 0; c < v->nsort && err >= 0; c++) {
				enum hwt_rep_field f = v->sort[c];
				const char *s = column_text(v, dict, g, order[i].id, c, tmp,
							    sizeof(tmp), false);

				err = hwt_buf_printf(out, "\"%s\":", hwt_rep_field_name(f));
				if (err < 0)
					break;
				if (f == HWT_REP_F_PID || f == HWT_REP_F_TID || f == HWT_REP_F_CPU)
					err = hwt_buf_printf(out, "%s,", s);
				else {
					err = hwt_rep_json_str(out, s);
					if (err >= 0)
						err = hwt_buf_printf(out, ",");
				}
				if (err >= 0 && f == HWT_REP_F_FUNCTION)
					err = hwt_buf_printf(
					    out, "\"kind\":\"%s\",",
					    kind_name(e->frame == NO_FRAME
							  ? 0
							  : hwt_rep_dict_frame_key(dict, e->frame)
								->kind));
			}
			if (err >= 0)
				err = hwt_buf_printf(
				    out,
				    "\"self\":%" PRIu64 ",\"children\":%" PRIu64
				    ",\"samples\":%" PRIu64
				    ",\"self_percent\":%.4f,\"children_percent\":%.4f",
				    e->self, children ? e->children : e->self, e->samples,
				    pct(e->self, total),
				    pct(children ? e->children : e->self, total));
			if (err >= 0 && want_graph) {
				err = hwt_buf_printf(
				    out, ",\"callgraph\":{\"mode\":\"%s\",\"tree\":",
				    graph == HWT_REP_GRAPH_CALLER ? "caller" : "callee");
				if (err >= 0)
					err = json_tree(out, &t, dict, 0, total, min, 0);
				if (err >= 0)
					err = hwt_buf_printf(out, "}");
			}
			if (err >= 0)
				err = hwt_buf_printf(out, "}");
		} else {
			if (children)
				err = hwt_buf_printf(out, "%9.2f%%%9.2f%%", pct(e->children, total),
						     pct(e->self, total));
			else
				err = hwt_buf_printf(out, "%9.2f%%", pct(e->self, total));
			for (size_t c = 0; c < v->nsort && err >= 0; c++) {
				if (show[c])
					err = hwt_buf_printf(out, "  %-*s", widths[c],
							     column_text(v, dict, g, order[i].id, c,
									 tmp, sizeof(tmp), true));
			}
			if (err >= 0)
				err = hwt_buf_printf(out, "\n");
			if (err >= 0 && want_graph) {
				err = print_graph(out, &t, dict, total, cfg->graph_limit,
						  v->sort[0] == HWT_REP_F_FUNCTION);
				if (err == 1)
					err = hwt_buf_printf(out, "\n");
			}
		}
		tree_fini(&t);
	}
	if (err >= 0 && v->json)
		err = hwt_buf_printf(out, "]}");
	entry_rows_fini(&er);
	hwt_buf_fini(&keys);
	free(order);
	return err;
}

static void view_free(struct view *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->ngroups; i++) {
		struct group *g = &v->groups[i];

		hwt_rep_set_fini(&g->entries);
		free(g->ev);
		free(g->rows);
		free(g->row_off);
		free(g->pos);
	}
	free(v->groups);
	free(v);
}

static int cmp_group(const void *pa, const void *pb)
{
	const struct group *a = pa, *b = pb;

	if (a->weight != b->weight)
		return a->weight > b->weight ? -1 : 1;
	return a->event < b->event ? -1 : a->event > b->event;
}

static int view_finish(struct hwt_rep_render_ctx *ctx, int err, struct hwt_buf *out)
{
	struct view *v = ctx->state;
	const struct hwt_rep_stats *st = &ctx->profile->stats;

	if (err < 0 || !v)
		goto done;
	if (v->ngroups > 1)
		qsort(v->groups, v->ngroups, sizeof(*v->groups), cmp_group);
	if (v->json)
		err = hwt_buf_printf(out, "{\"events\":[");
	else
		err = hwt_buf_printf(out, "# hwtrace report\n");
	for (size_t i = 0; i < v->ngroups && err >= 0; i++)
		err = print_group(ctx, &v->groups[i], out, i == 0);
	if (err >= 0 && v->json) {
		err = hwt_buf_printf(out, "],\"stats\":");
		if (err >= 0)
			err = hwt_rep_stats_json(out, st);
		if (err >= 0)
			err = hwt_buf_printf(out, "}\n");
	} else if (err >= 0) {
		if (!v->ngroups)
			err = hwt_buf_printf(out, "#\n# no samples\n");
		if (err >= 0)
			err = hwt_buf_printf(out, "#\n");
		if (err >= 0)
			err = hwt_rep_stats_text(out, st, "# ");
	}
done:
	view_free(v);
	ctx->state = NULL;
	return err;
}

const struct hwt_rep_format_ops hwt_rep_fmt_report_text = {
    .name = "text",
    .format = HWT_REP_FMT_TEXT,
    .init = view_init_text,
    .process = view_process,
    .finish = view_finish,
};

const struct hwt_rep_format_ops hwt_rep_fmt_report_json = {
    .name = "json",
    .format = HWT_REP_FMT_JSON,
    .init = view_init_json,
    .process = view_process,
    .finish = view_finish,
};
