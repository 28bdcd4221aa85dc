/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/bt_print.c - bpftrace's output layout, for bpftrace's scripts (a
 * #! line naming bpftrace) and for plain maps: "@name[k1, k2]: value"
 * lines sorted by value (strings by key), histograms per key as bpftrace
 * draws them ("[4, 8)   12 |@@@@  |"), stats() as "count N, average A,
 * total T", and at the end every map in name order after two newlines, as
 * bpftrace 0.17 prints them.
 */
#include "probe/probe_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "[k1, k2]" (nothing without keys). */
static int print_key(struct hwt_buf *out, const struct hwt_rep_dict *dict,
		     const struct hwt_rep_val *key, size_t nkeys)
{
	int err = 0;

	if (!nkeys)
		return 0;
	err = hwt_buf_append(out, "[", 1);
	for (size_t k = 0; k < nkeys && err >= 0; k++) {
		if (k)
			err = hwt_buf_append(out, ", ", 2);
		if (err < 0)
			break;
		if (key[k].type == HWT_REP_INT) {
			err = hwt_buf_printf(out, "%" PRId64, key[k].v);
		} else if (key[k].type == HWT_REP_STR) {
			const char *s = hwt_rep_dict_str_get(dict, (uint32_t)key[k].v);

			err = hwt_buf_printf(out, "%s", s ? s : "");
		} else {
			err = prb_bt_print_stack(out, dict, (uint32_t)key[k].v);
		}
	}
	return err < 0 ? err : hwt_buf_append(out, "]", 1);
}

int prb_bt_print_stack(struct hwt_buf *out, const struct hwt_rep_dict *dict, uint32_t stack)
{
	const uint32_t *frames;
	size_t n = hwt_rep_dict_stack_get(dict, stack, &frames);
	int err = hwt_buf_append(out, "\n", 1);

	for (size_t i = 0; i < n && err >= 0; i++) {
		const char *l = hwt_rep_frame_label(dict, frames[i]);

		err = hwt_buf_printf(out, "        %s\n", l ? l : "[unknown]");
	}
	return err;
}

/* bpftrace's bucket labels: 1<<power with a K, M, G, T suffix. */
static void hist_label(int power, char *buf, size_t len)
{
	static const char suffix[] = {0, 'K', 'M', 'G', 'T'};
	int s = power >= 40 ? 4 : power / 10;

	if (s > 4)
		s = 4;
	power -= 10 * s;
	if (suffix[s])
		snprintf(buf, len, "%llu%c", 1ull << power, suffix[s]);
	else
		snprintf(buf, len, "%llu", 1ull << power);
}

static void lhist_label(int64_t v, char *buf, size_t len)
{
	if (v && v % 1048576 == 0)
		snprintf(buf, len, "%" PRId64 "M", v / 1048576);
	else if (v && v % 1024 == 0)
		snprintf(buf, len, "%" PRId64 "K", v / 1024);
	else
		snprintf(buf, len, "%" PRId64, v);
}

static int hist_line(struct hwt_buf *out, const char *label, uint64_t v, uint64_t max)
{
	char bar[53];
	int w = max ? (int)((float)v / (float)max * 52) : 0;

	memset(bar, '@', (size_t)w);
	memset(bar + w, ' ', (size_t)(52 - w));
	bar[52] = '\0';
	return hwt_buf_printf(out, "%-16s%8" PRIu64 " |%s|\n", label, v, bar);
}

/* A quantize() row as bpftrace's hist(): 65 buckets (negative, 0, 1,
 * [2^k, 2^(k+1)) ...) from the 127 power-of-two buckets. */
static int print_hist(struct hwt_buf *out, const struct hwt_rep_agg_result *r)
{
	uint64_t v[65] = {0}, max = 0;
	int lo = -1, hi = -1, err = 0;

	for (size_t i = 0; i < r->nbuckets && i < HWT_REP_QUANTIZE_BUCKETS; i++) {
		if (i < 63)
			v[0] += r->buckets[i];
		else if (i - 63 + 1 < 65)
			v[i - 63 + 1] += r->buckets[i];
	}
	for (int i = 0; i < 65; i++) {
		if (v[i]) {
			if (lo < 0)
				lo = i;
			hi = i;
		}
		if (v[i] > max)
			max = v[i];
	}
	for (int i = lo; lo >= 0 && i <= hi && err >= 0; i++) {
		char label[64], a[24], b[24];

		if (i == 0)
			snprintf(label, sizeof(label), "(..., 0)");
		else if (i == 1)
			snprintf(label, sizeof(label), "[0]");
		else if (i == 2)
			snprintf(label, sizeof(label), "[1]");
		else {
			hist_label(i - 2, a, sizeof(a));
			hist_label(i - 1, b, sizeof(b));
			snprintf(label, sizeof(label), "[%s, %s)", a, b);
		}
		err = hist_line(out, label, v[i], max);
	}
	return err;
}

static int print_lhist(struct hwt_buf *out, const struct prb_agg *a,
		       const struct hwt_rep_agg_result *r)
{
	uint64_t max = 0;
	size_t lo = SIZE_MAX, hi = 0, n = r->nbuckets;
	int err = 0;

	for (size_t i = 0; i < n; i++) {
		if (r->buckets[i]) {
			if (lo == SIZE_MAX)
				lo = i;
			hi = i;
		}
		if (r->buckets[i] > max)
			max = r->buckets[i];
	}
	for (size_t i = lo; lo != SIZE_MAX && i <= hi && err >= 0; i++) {
		char label[80], x[32], y[32];

		if (i == 0) {
			lhist_label(a->low, x, sizeof(x));
			snprintf(label, sizeof(label), "(..., %s)", x);
		} else if (i == n - 1) {
			lhist_label(a->high, x, sizeof(x));
			snprintf(label, sizeof(label), "[%s, ...)", x);
		} else {
			lhist_label(a->low + (int64_t)(i - 1) * a->step, x, sizeof(x));
			lhist_label(a->low + (int64_t)i * a->step, y, sizeof(y));
			snprintf(label, sizeof(label), "[%s, %s)", x, y);
		}
		err = hist_line(out, label, r->buckets[i], max);
	}
	return err;
}

/* What sorting needs (qsort has no context argument in C11: each row
 * carries it). */
struct sort_ctx {
	const struct hwt_rep_dict *dict;
	size_t nkeys;
	bool by_value; /* plain maps: integers by value, the others by key */
};

struct bt_row {
	const struct sort_ctx *ctx;
	const struct hwt_rep_val *key;
	struct hwt_rep_agg_result res;
	int64_t sortv;
};

/* Keys in order: integers by value, strings by text, stacks by id. */
static int cmp_key(const struct sort_ctx *ctx, const struct hwt_rep_val *a,
		   const struct hwt_rep_val *b)
{
	for (size_t k = 0; k < ctx->nkeys; k++) {
		int c = 0;

		if (a[k].type == HWT_REP_STR && a[k].v != b[k].v)
			c = strcmp(hwt_rep_dict_str_get(ctx->dict, (uint32_t)a[k].v),
				   hwt_rep_dict_str_get(ctx->dict, (uint32_t)b[k].v));
		else if (a[k].v != b[k].v)
			c = a[k].v < b[k].v ? -1 : 1;
		if (c)
			return c;
	}
	return 0;
}

static int cmp_rows(const void *pa, const void *pb)
{
	const struct bt_row *a = pa, *b = pb;

	if (a->sortv != b->sortv)
		return a->sortv < b->sortv ? -1 : 1;
	return cmp_key(a->ctx, a->key, b->key);
}

int prb_bt_print_agg(const struct hwt_probe_prog *prog, size_t ai, const struct hwt_rep_agg *agg,
		     const struct hwt_rep_dict *dict, uint32_t top, struct hwt_buf *out)
{
	const struct prb_agg *a = &prog->aggs[ai];
	size_t n = hwt_rep_agg_nrows(agg), first = 0;
	struct bt_row *rows = calloc(n + 1, sizeof(*rows));
	struct sort_ctx ctx = {dict, a->nkeys, true};
	bool hist = a->func == HWT_REP_QUANTIZE || a->func == HWT_REP_LQUANTIZE;
	bool stats = a->func == HWT_REP_AVG; /* avg() and stats() */
	int err = 0;

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		hwt_rep_agg_row(agg, i, &rows[i].res);
		rows[i].ctx = &ctx;
		rows[i].key = rows[i].res.key;
		/* bpftrace sorts histograms and stats by their counts, the
		 * others by value */
		rows[i].sortv =
		    hist || stats ? (int64_t)rows[i].res.count : (int64_t)rows[i].res.value;
	}
	qsort(rows, n, sizeof(*rows), cmp_rows);
	if (top && n > top)
		first = n - top;
	for (size_t i = first; i < n && err >= 0; i++) {
		const struct hwt_rep_agg_result *r = &rows[i].res;

		err = hwt_buf_printf(out, "@%s", a->name);
		if (err >= 0)
			err = print_key(out, dict, r->key, a->nkeys);
		if (err < 0)
			break;
		if (hist) {
			err = hwt_buf_printf(out, ": \n");
			if (err >= 0)
				err = a->func == HWT_REP_QUANTIZE ? print_hist(out, r)
								  : print_lhist(out, a, r);
			if (err >= 0 && i + 1 < n)
				err = hwt_buf_append(out, "\n", 1);
		} else if (a->stats) {
			err = hwt_buf_printf(
			    out, ": count %" PRIu64 ", average %" PRId64 ", total %" PRId64 "\n",
			    r->count, r->count ? r->sum / (int64_t)r->count : 0, r->sum);
		} else {
			err = hwt_buf_printf(out, ": %" PRId64 "\n", r->value);
		}
	}
	/* bpftrace ends a map with a newline; hist keys are separated by one
	 * and avg/stats maps get another */
	if (err >= 0 && (hist || !n))
		err = hwt_buf_append(out, "\n", 1);
	if (err >= 0 && stats)
		err = hwt_buf_append(out, "\n", 1);
	free(rows);
	return err;
}

struct map_row {
	const struct sort_ctx *ctx;
	const struct hwt_rep_val *key;
	int64_t v;
};

static int cmp_map_rows(const void *pa, const void *pb)
{
	const struct map_row *a = pa, *b = pb;

	/* integer maps by value, the others by key (as bpftrace) */
	if (a->ctx->by_value && a->v != b->v)
		return a->v < b->v ? -1 : 1;
	return cmp_key(a->ctx, a->key, b->key);
}

int prb_bt_print_map(const struct hwt_probe_prog *prog, size_t mi, const struct prb_tmap *m,
		     const struct hwt_rep_dict *dict, uint32_t top, struct hwt_buf *out)
{
	const struct prb_agg *a = &prog->aggs[mi];
	struct map_row *rows = calloc(m->n + 1, sizeof(*rows));
	struct sort_ctx ctx = {dict, a->nkeys, a->vty.t == PRB_T_INT || a->vty.t == PRB_T_PTR};
	size_t n = 0, first = 0;
	int err = 0;

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->ents[i].used) {
			rows[n].ctx = &ctx;
			rows[n].key = m->ents[i].key;
			rows[n++].v = m->ents[i].v;
		}
	qsort(rows, n, sizeof(*rows), cmp_map_rows);
	if (top && n > top)
		first = n - top;
	for (size_t i = first; i < n && err >= 0; i++) {
		err = hwt_buf_printf(out, "@%s", a->name);
		if (err >= 0)
			err = print_key(out, dict, rows[i].key, a->nkeys);
		if (err < 0)
			break;
		if (a->vty.t == PRB_T_STR) {
			const char *s = hwt_rep_dict_str_get(dict, (uint32_t)rows[i].v);

			err = hwt_buf_printf(out, ": %s\n", s ? s : "");
		} else if (a->vty.t == PRB_T_STACK) {
			err = hwt_buf_printf(out, ": ");
			if (err >= 0)
				err = prb_bt_print_stack(out, dict, (uint32_t)rows[i].v);
		} else {
			err = hwt_buf_printf(out, ": %" PRId64 "\n", rows[i].v);
		}
	}
	if (err >= 0 && !n)
		err = hwt_buf_append(out, "\n", 1);
	free(rows);
	return err;
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
	return err < 0 ? err : hwt_buf_append(out, "\"", 1);
}

static int json_val(struct hwt_buf *out, const struct hwt_rep_dict *dict, uint32_t type, int64_t v)
{
	if (type == HWT_REP_STR)
		return json_str(out, hwt_rep_dict_str_get(dict, (uint32_t)v));
	if (type == HWT_REP_STACK) {
		struct hwt_buf tmp;
		int err;

		hwt_buf_init(&tmp);
		err = prb_bt_print_stack(&tmp, dict, (uint32_t)v);
		if (err >= 0)
			err = hwt_buf_append(&tmp, "", 1);
		if (err >= 0)
			err = json_str(out, (const char *)tmp.data);
		hwt_buf_fini(&tmp);
		return err;
	}
	return hwt_buf_printf(out, "%" PRId64, v);
}

int prb_json_print_map(const struct hwt_probe_prog *prog, size_t mi, const struct prb_tmap *m,
		       const struct hwt_rep_dict *dict, struct hwt_buf *out)
{
	const struct prb_agg *a = &prog->aggs[mi];
	uint32_t vt = a->vty.t == PRB_T_STR	? HWT_REP_STR
		      : a->vty.t == PRB_T_STACK ? HWT_REP_STACK
						: HWT_REP_INT;
	bool first = true;
	int err = hwt_buf_printf(out, "{\"name\":");

	if (err >= 0)
		err = json_str(out, a->name);
	if (err >= 0)
		err = hwt_buf_printf(out, ",\"map\":true,\"rows\":[");
	for (size_t i = 0; i < m->cap && err >= 0; i++) {
		const struct prb_tmap_ent *e = &m->ents[i];

		if (!e->used)
			continue;
		err = hwt_buf_printf(out, "%s{\"key\":[", first ? "" : ",");
		first = false;
		for (size_t k = 0; k < a->nkeys && err >= 0; k++) {
			if (k)
				err = hwt_buf_append(out, ",", 1);
			if (err >= 0)
				err = json_val(out, dict, e->key[k].type, e->key[k].v);
		}
		if (err >= 0)
			err = hwt_buf_printf(out, "],\"value\":");
		if (err >= 0)
			err = json_val(out, dict, vt, e->v);
		if (err >= 0)
			err = hwt_buf_append(out, "}", 1);
	}
	return err < 0 ? err : hwt_buf_printf(out, "]}");
}
