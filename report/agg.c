/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report/agg.c - the aggregation engine: DTrace's @name[key] = func(value)
 * as named maps from typed key tuples to running values (count, sum, min,
 * max, avg, stddev) or histograms (quantize, lquantize), and their printing
 * in DTrace's layout and as JSON. Keys are interned once in a byte-key set;
 * an update of a known key is a hash lookup and a few adds.
 */
#include "report/report_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QZERO 63 /* the zero bucket of quantize */

struct agg_val {
	uint64_t count;
	__int128 sum;
	unsigned __int128 sumsq; /* stddev only: value^2 * weight */
	int64_t min, max;
};

struct hwt_rep_agg {
	struct hwt_rep_dict *dict;
	char *name;
	enum hwt_rep_func func;
	int64_t low, high, step;
	size_t nbuckets; /* 0 for scalar functions */
	size_t nkeys;
	uint32_t key_types[HWT_REP_MAX_KEYS];
	char *key_names[HWT_REP_MAX_KEYS];
	struct hwt_rep_set keys; /* nkeys x struct hwt_rep_val, padding zeroed */
	struct agg_val *vals;
	uint64_t *buckets; /* nrows x nbuckets */
	size_t cap;	   /* rows vals and buckets have room for */
	struct hwt_logger log;
};

static const char *const func_names[] = {
    [HWT_REP_COUNT] = "count",	     [HWT_REP_SUM] = "sum",
    [HWT_REP_MIN] = "min",	     [HWT_REP_MAX] = "max",
    [HWT_REP_AVG] = "avg",	     [HWT_REP_STDDEV] = "stddev",
    [HWT_REP_QUANTIZE] = "quantize", [HWT_REP_LQUANTIZE] = "lquantize",
};

void hwt_rep_agg_config_init(struct hwt_rep_agg_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->func = HWT_REP_COUNT;
}

size_t hwt_rep_quantize_bucket(int64_t v)
{
	uint64_t u;
	unsigned int k;

	if (v == 0)
		return QZERO;
	if (v > 0)
		return QZERO + 1 + (63 - (size_t)__builtin_clzll((uint64_t)v));
	/* Magnitude in unsigned arithmetic: -INT64_MIN does not fit int64. */
	u = 0 - (uint64_t)v;
	k = 63 - (unsigned int)__builtin_clzll(u);
	if (k >= 62)
		return 0;
	return QZERO - 1 - k;
}

int64_t hwt_rep_quantize_label(size_t bucket)
{
	if (bucket >= HWT_REP_QUANTIZE_BUCKETS)
		return 0;
	if (bucket < QZERO)
		return -(int64_t)(1ull << (QZERO - 1 - bucket));
	if (bucket == QZERO)
		return 0;
	return (int64_t)(1ull << (bucket - QZERO - 1));
}

size_t hwt_rep_lquantize_bucket(int64_t v, int64_t low, int64_t high, int64_t step)
{
	uint64_t levels;

	if (step <= 0 || high <= low)
		return 0;
	levels = ((uint64_t)high - (uint64_t)low) / (uint64_t)step;
	if (v < low)
		return 0;
	if (v >= high)
		return (size_t)levels + 1;
	return 1 + (size_t)(((uint64_t)v - (uint64_t)low) / (uint64_t)step);
}

int hwt_rep_agg_alloc(struct hwt_rep_agg **aggp, struct hwt_rep_dict *dict,
		      const struct hwt_rep_agg_config *cfg)
{
	struct hwt_rep_agg_config c;
	struct hwt_rep_agg *agg;
	int err = -HWT_EINVAL;

	if (!aggp)
		return -HWT_EINVAL;
	*aggp = NULL;
	hwt_rep_agg_config_init(&c);
	if (!cfg || hwt_opts_copy(&c, sizeof(c), cfg) < 0)
		return -HWT_EINVAL;
	cfg = &c;
	if (!dict || cfg->nkeys > HWT_REP_MAX_KEYS || cfg->func < HWT_REP_COUNT ||
	    cfg->func > HWT_REP_LQUANTIZE)
		return -HWT_EINVAL;
	for (size_t i = 0; i < cfg->nkeys; i++) {
		if (cfg->key_types[i] < HWT_REP_INT || cfg->key_types[i] > HWT_REP_STACK)
			return -HWT_EINVAL;
	}
	agg = calloc(1, sizeof(*agg));
	if (!agg)
		return -ENOMEM;
	hwt_rep_set_init(&agg->keys);
	agg->dict = dict;
	agg->func = cfg->func;
	agg->nkeys = cfg->nkeys;
	agg->log = cfg->log;
	if (cfg->func == HWT_REP_QUANTIZE) {
		agg->nbuckets = HWT_REP_QUANTIZE_BUCKETS;
	} else if (cfg->func == HWT_REP_LQUANTIZE) {
		uint64_t span, levels;

		if (cfg->step <= 0 || cfg->high <= cfg->low) {
			hwt_log(&cfg->log, HWT_LOG_ERROR,
				"lquantize needs step > 0 and high > low (got %" PRId64 ", %" PRId64
				", %" PRId64 ")",
				cfg->low, cfg->high, cfg->step);
			goto error;
		}
		span = (uint64_t)cfg->high - (uint64_t)cfg->low;
		levels = span / (uint64_t)cfg->step;
		if (span % (uint64_t)cfg->step || levels > HWT_REP_LQUANTIZE_MAX_LEVELS) {
			hwt_log(&cfg->log, HWT_LOG_ERROR,
				"lquantize range %" PRId64 "..%" PRId64
				" must be a multiple of step %" PRId64 " and at most %d steps",
				cfg->low, cfg->high, cfg->step, HWT_REP_LQUANTIZE_MAX_LEVELS);
			goto error;
		}
		agg->low = cfg->low;
		agg->high = cfg->high;
		agg->step = cfg->step;
		agg->nbuckets = (size_t)levels + 2;
	}
	err = -ENOMEM;
	agg->name = strdup(cfg->name ? cfg->name : "");
	if (!agg->name)
		goto error;
	for (size_t i = 0; i < cfg->nkeys; i++) {
		char def[32];

		agg->key_types[i] = cfg->key_types[i];
		snprintf(def, sizeof(def), "key%zu", i);
		agg->key_names[i] = strdup(cfg->key_names[i] ? cfg->key_names[i] : def);
		if (!agg->key_names[i])
			goto error;
	}
	*aggp = agg;
	return 0;
error:
	hwt_rep_agg_free(agg);
	return err;
}

void hwt_rep_agg_free(struct hwt_rep_agg *agg)
{
	if (!agg)
		return;
	hwt_rep_set_fini(&agg->keys);
	for (size_t i = 0; i < HWT_REP_MAX_KEYS; i++)
		free(agg->key_names[i]);
	free(agg->name);
	free(agg->vals);
	free(agg->buckets);
	free(agg);
}

void hwt_rep_agg_clear(struct hwt_rep_agg *agg)
{
	if (agg)
		hwt_rep_set_clear(&agg->keys);
}

/* Copies key into a canonical form (padding zeroed) and checks its types
 * and ids. */
static int canon_key(const struct hwt_rep_agg *agg, const struct hwt_rep_val *key,
		     struct hwt_rep_val *out)
{
	memset(out, 0, agg->nkeys * sizeof(*out));
	if (agg->nkeys && !key)
		return -HWT_EINVAL;
	for (size_t i = 0; i < agg->nkeys; i++) {
		if (key[i].type != agg->key_types[i])
			return -HWT_EINVAL;
		if (key[i].type == HWT_REP_STR &&
		    (key[i].v < 0 || (uint64_t)key[i].v >= agg->dict->strs.n))
			return -HWT_EINVAL;
		if (key[i].type == HWT_REP_STACK &&
		    (key[i].v < 0 || (uint64_t)key[i].v >= agg->dict->stacks.n))
			return -HWT_EINVAL;
		out[i].type = key[i].type;
		out[i].v = key[i].v;
	}
	return 0;
}

static int agg_grow(struct hwt_rep_agg *agg, size_t need)
{
	size_t cap;
	struct agg_val *v;

	if (need <= agg->cap)
		return 0;
	cap = agg->cap ? agg->cap * 2 : 16;
	while (cap < need)
		cap *= 2;
	v = realloc(agg->vals, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	agg->vals = v;
	if (agg->nbuckets) {
		size_t bytes;
		uint64_t *b;

		if (hwt_mul_size(cap, agg->nbuckets * sizeof(*b), &bytes) < 0)
			return -HWT_ETOOBIG;
		b = realloc(agg->buckets, bytes);
		if (!b)
			return -ENOMEM;
		agg->buckets = b;
	}
	agg->cap = cap;
	return 0;
}

static int agg_row(struct hwt_rep_agg *agg, const struct hwt_rep_val *key, struct agg_val **out);

int hwt_rep_agg_update(struct hwt_rep_agg *agg, const struct hwt_rep_val *key, int64_t value,
		       uint64_t weight)
{
	struct agg_val *v;
	size_t row;
	int err;

	if (!agg)
		return -HWT_EINVAL;
	if (!weight)
		weight = 1;
	/* Room first, so a failed allocation never leaves a key without its
	 * value. For a known key this is a comparison, not an allocation. */
	if ((err = agg_row(agg, key, &v)) < 0)
		return err;
	row = (size_t)(v - agg->vals);
	v->count += weight;
	v->sum += (__int128)value * (__int128)weight;
	if (value < v->min)
		v->min = value;
	if (value > v->max)
		v->max = value;
	switch (agg->func) {
	case HWT_REP_STDDEV: {
		unsigned __int128 mag = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;

		v->sumsq += mag * mag * weight;
		break;
	}
	case HWT_REP_QUANTIZE:
		agg->buckets[row * agg->nbuckets + hwt_rep_quantize_bucket(value)] += weight;
		break;
	case HWT_REP_LQUANTIZE:
		agg->buckets[row * agg->nbuckets +
			     hwt_rep_lquantize_bucket(value, agg->low, agg->high, agg->step)] +=
		    weight;
		break;
	default:
		break;
	}
	return 0;
}

/* The row of key, created empty when new. */
static int agg_row(struct hwt_rep_agg *agg, const struct hwt_rep_val *key, struct agg_val **out)
{
	struct hwt_rep_val k[HWT_REP_MAX_KEYS];
	uint32_t row;
	int err;

	if ((err = canon_key(agg, key, k)) < 0)
		return err;
	if ((err = agg_grow(agg, agg->keys.n + 1)) < 0)
		return err;
	if ((err = hwt_rep_set_intern(&agg->keys, k, agg->nkeys * sizeof(*k), &row)) < 0)
		return err;
	*out = &agg->vals[row];
	if (err == 1) {
		memset(*out, 0, sizeof(**out));
		(*out)->min = INT64_MAX;
		(*out)->max = INT64_MIN;
		if (agg->nbuckets)
			memset(agg->buckets + (size_t)row * agg->nbuckets, 0,
			       agg->nbuckets * sizeof(uint64_t));
	}
	return 0;
}

static void add_val(struct hwt_rep_agg *agg, struct agg_val *v, uint64_t count, __int128 sum,
		    unsigned __int128 sumsq, int64_t min, int64_t max, const uint64_t *buckets)
{
	size_t row = (size_t)(v - agg->vals);

	v->count += count;
	v->sum += sum;
	v->sumsq += sumsq;
	if (min < v->min)
		v->min = min;
	if (max > v->max)
		v->max = max;
	for (size_t i = 0; buckets && i < agg->nbuckets; i++)
		agg->buckets[row * agg->nbuckets + i] += buckets[i];
}

int hwt_rep_agg_merge(struct hwt_rep_agg *agg, const struct hwt_rep_val *key,
		      const struct hwt_rep_agg_part *part)
{
	struct agg_val *v;
	int err;

	if (!agg || !part || part->nbuckets != agg->nbuckets || (agg->nbuckets && !part->buckets))
		return -HWT_EINVAL;
	if (!part->count)
		return 0;
	if ((err = agg_row(agg, key, &v)) < 0)
		return err;
	add_val(agg, v, part->count,
		(__int128)((unsigned __int128)(uint64_t)part->sum_hi << 64 | part->sum_lo),
		(unsigned __int128)part->sumsq_hi << 64 | part->sumsq_lo, part->min, part->max,
		part->buckets);
	return 0;
}

int hwt_rep_agg_add(struct hwt_rep_agg *dst, const struct hwt_rep_agg *src)
{
	if (!dst || !src || dst->func != src->func || dst->nkeys != src->nkeys ||
	    dst->dict != src->dict || dst->nbuckets != src->nbuckets || dst->low != src->low ||
	    dst->step != src->step)
		return -HWT_EINVAL;
	for (size_t i = 0; i < dst->nkeys; i++)
		if (dst->key_types[i] != src->key_types[i])
			return -HWT_EINVAL;
	for (size_t r = 0; r < src->keys.n; r++) {
		const struct agg_val *s = &src->vals[r];
		struct agg_val *v;
		int err = agg_row(
		    dst, (const struct hwt_rep_val *)hwt_rep_set_key(&src->keys, (uint32_t)r, NULL),
		    &v);

		if (err < 0)
			return err;
		add_val(dst, v, s->count, s->sum, s->sumsq, s->min, s->max,
			src->nbuckets ? src->buckets + r * src->nbuckets : NULL);
	}
	return 0;
}

size_t hwt_rep_agg_nrows(const struct hwt_rep_agg *agg)
{
	return agg ? agg->keys.n : 0;
}

static int64_t clamp128(__int128 x)
{
	if (x > INT64_MAX)
		return INT64_MAX;
	if (x < INT64_MIN)
		return INT64_MIN;
	return (int64_t)x;
}

static void fill_result(const struct hwt_rep_agg *agg, uint32_t row, struct hwt_rep_agg_result *res)
{
	const struct agg_val *v = &agg->vals[row];
	long double n = (long double)v->count, mean;

	memset(res, 0, sizeof(*res));
	res->key = (const struct hwt_rep_val *)hwt_rep_set_key(&agg->keys, row, NULL);
	res->count = v->count;
	res->sum = (int64_t)(uint64_t)(unsigned __int128)v->sum; /* wraps as int64 */
	res->min = v->min;
	res->max = v->max;
	mean = (long double)v->sum / n;
	res->avg = (double)mean;
	if (agg->func == HWT_REP_STDDEV) {
		long double var = (long double)v->sumsq / n - mean * mean;

		res->stddev = var > 0 ? (double)sqrtl(var) : 0.0;
	}
	switch (agg->func) {
	case HWT_REP_COUNT:
		res->value = v->count > INT64_MAX ? INT64_MAX : (int64_t)v->count;
		break;
	case HWT_REP_SUM:
		res->value = res->sum;
		break;
	case HWT_REP_MIN:
		res->value = v->min;
		break;
	case HWT_REP_MAX:
		res->value = v->max;
		break;
	case HWT_REP_AVG:
		/* Truncated toward zero, as DTrace's integer avg. */
		res->value = clamp128(v->sum / (__int128)v->count);
		break;
	case HWT_REP_STDDEV:
		res->value = (int64_t)res->stddev;
		break;
	case HWT_REP_QUANTIZE:
	case HWT_REP_LQUANTIZE:
		res->value = v->count > INT64_MAX ? INT64_MAX : (int64_t)v->count;
		res->nbuckets = agg->nbuckets;
		res->buckets = agg->buckets + (size_t)row * agg->nbuckets;
		break;
	}
}

int hwt_rep_agg_row(const struct hwt_rep_agg *agg, size_t i, struct hwt_rep_agg_result *res)
{
	if (!agg || !res || i >= agg->keys.n)
		return -HWT_EINVAL;
	fill_result(agg, (uint32_t)i, res);
	return 0;
}

int hwt_rep_agg_find(const struct hwt_rep_agg *agg, const struct hwt_rep_val *key,
		     struct hwt_rep_agg_result *res)
{
	struct hwt_rep_val k[HWT_REP_MAX_KEYS];
	uint32_t row;
	int err;

	if (!agg || !res)
		return -HWT_EINVAL;
	err = canon_key(agg, key, k);
	if (err < 0)
		return err;
	if (!hwt_rep_set_find(&agg->keys, k, agg->nkeys * sizeof(*k), &row))
		return -HWT_ENOSYM;
	fill_result(agg, row, res);
	return 0;
}

int hwt_rep_agg_bucket_low(const struct hwt_rep_agg *agg, size_t i, int64_t *low)
{
	if (!agg || !low || i >= agg->nbuckets)
		return -HWT_EINVAL;
	if (agg->func == HWT_REP_QUANTIZE) {
		*low = i == 0 ? INT64_MIN : hwt_rep_quantize_label(i);
		if (i > 0 && i < QZERO)
			*low = hwt_rep_quantize_label(i - 1) + 1;
		return 0;
	}
	if (i == 0)
		*low = INT64_MIN;
	else
		*low = (int64_t)((uint64_t)agg->low + (uint64_t)(i - 1) * (uint64_t)agg->step);
	return 0;
}

/* Highest value of bucket i (inclusive). */
static int64_t bucket_high(const struct hwt_rep_agg *agg, size_t i)
{
	if (agg->func == HWT_REP_QUANTIZE) {
		if (i <= QZERO)
			return hwt_rep_quantize_label(i);
		if (i == HWT_REP_QUANTIZE_BUCKETS - 1)
			return INT64_MAX;
		return hwt_rep_quantize_label(i + 1) - 1;
	}
	if (i == agg->nbuckets - 1)
		return INT64_MAX;
	return (int64_t)((uint64_t)agg->low + (uint64_t)i * (uint64_t)agg->step - 1);
}

/* ------------------------------------------------------------------------ */
/* Printing */

/* Stacks order by their frames' labels, leaf first, so that the order of
 * rows does not depend on which stack was seen first. */
static int cmp_stacks(const struct hwt_rep_dict *dict, uint32_t a, uint32_t b)
{
	const uint32_t *fa, *fb;
	size_t na = hwt_rep_dict_stack_get(dict, a, &fa), nb = hwt_rep_dict_stack_get(dict, b, &fb);

	for (size_t i = 0; i < na && i < nb; i++) {
		int c;

		if (fa[i] == fb[i])
			continue;
		c = strcmp(hwt_rep_frame_label(dict, fa[i]), hwt_rep_frame_label(dict, fb[i]));
		if (c)
			return c;
		/* equal labels: unknown frames of one object, by address */
		{
			const struct hwt_rep_frame *x = hwt_rep_dict_frame_get(dict, fa[i]),
						   *y = hwt_rep_dict_frame_get(dict, fb[i]);

			if (x && y && x->addr != y->addr)
				return x->addr < y->addr ? -1 : 1;
		}
		return fa[i] < fb[i] ? -1 : 1;
	}
	return na == nb ? 0 : na < nb ? -1 : 1;
}

static int cmp_keys(const struct hwt_rep_agg *agg, const struct hwt_rep_val *a,
		    const struct hwt_rep_val *b)
{
	for (size_t i = 0; i < agg->nkeys; i++) {
		int c = 0;

		if (a[i].type == HWT_REP_STR) {
			c = strcmp(hwt_rep_dict_str_get(agg->dict, (uint32_t)a[i].v),
				   hwt_rep_dict_str_get(agg->dict, (uint32_t)b[i].v));
		} else if (a[i].type == HWT_REP_STACK && a[i].v != b[i].v) {
			c = cmp_stacks(agg->dict, (uint32_t)a[i].v, (uint32_t)b[i].v);
		} else if (a[i].v != b[i].v) {
			c = a[i].v < b[i].v ? -1 : 1;
		}
		if (c)
			return c;
	}
	return 0;
}

/* qsort has no context argument in C11; the rows carry their agg. */
struct sort_row {
	const struct hwt_rep_agg *agg;
	struct hwt_rep_agg_result res;
};

static int cmp_rows(const void *pa, const void *pb)
{
	const struct sort_row *a = pa, *b = pb;

	if (a->res.value != b->res.value)
		return a->res.value < b->res.value ? -1 : 1;
	return cmp_keys(a->agg, a->res.key, b->res.key);
}

static struct sort_row *sorted_rows(const struct hwt_rep_agg *agg)
{
	size_t n = agg->keys.n;
	struct sort_row *rows = malloc((n ? n : 1) * sizeof(*rows));

	if (!rows)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		rows[i].agg = agg;
		fill_result(agg, (uint32_t)i, &rows[i].res);
	}
	qsort(rows, n, sizeof(*rows), cmp_rows);
	return rows;
}

/* "object`function" for a stack frame line, as DTrace's ustack(). */
static int print_frame(struct hwt_buf *out, const struct hwt_rep_dict *dict, uint32_t fid)
{
	const struct hwt_rep_frame *f = hwt_rep_dict_frame_get(dict, fid);
	const char *obj = f && f->object ? f->object : NULL;

	if (obj && f->function) {
		const char *slash = strrchr(obj, '/');

		return hwt_buf_printf(out, "%s`%s", slash ? slash + 1 : obj, f->function);
	}
	if (f && !f->function && f->addr)
		return hwt_buf_printf(out, "0x%" PRIx64, f->addr);
	return hwt_buf_printf(out, "%s", hwt_rep_frame_label(dict, fid));
}

static int print_key_scalar(struct hwt_buf *out, const struct hwt_rep_agg *agg,
			    const struct hwt_rep_val *k, int width)
{
	if (k->type == HWT_REP_INT)
		return hwt_buf_printf(out, "%*" PRId64, width, k->v);
	return hwt_buf_printf(out, "%-*s", width, hwt_rep_dict_str_get(agg->dict, (uint32_t)k->v));
}

static int key_width(const struct hwt_rep_agg *agg, const struct hwt_rep_val *k)
{
	char tmp[32];

	if (k->type == HWT_REP_INT)
		return snprintf(tmp, sizeof(tmp), "%" PRId64, k->v);
	return (int)strlen(hwt_rep_dict_str_get(agg->dict, (uint32_t)k->v));
}

static int print_hist(struct hwt_buf *out, const struct hwt_rep_agg *agg,
		      const struct hwt_rep_agg_result *r)
{
	size_t first = SIZE_MAX, last = 0;
	uint64_t total = 0;
	int err;

	for (size_t i = 0; i < r->nbuckets; i++) {
		if (r->buckets[i]) {
			if (first == SIZE_MAX)
				first = i;
			last = i;
			total += r->buckets[i];
		}
	}
	err = hwt_buf_printf(out, "%16s  %s %s\n", "value",
			     "------------- Distribution -------------", "count");
	if (err < 0 || first == SIZE_MAX)
		return err;
	/* One empty row on each side, as DTrace prints. */
	if (first > 0)
		first--;
	if (last + 1 < r->nbuckets)
		last++;
	for (size_t i = first; i <= last && err >= 0; i++) {
		char label[32];
		char bar[41];
		unsigned int depth;

		if (agg->func == HWT_REP_QUANTIZE)
			snprintf(label, sizeof(label), "%" PRId64, hwt_rep_quantize_label(i));
		else if (i == 0)
			snprintf(label, sizeof(label), "< %" PRId64, agg->low);
		else if (i == r->nbuckets - 1)
			snprintf(label, sizeof(label), ">= %" PRId64, agg->high);
		else
			snprintf(label, sizeof(label), "%" PRId64,
				 (int64_t)((uint64_t)agg->low +
					   (uint64_t)(i - 1) * (uint64_t)agg->step));
		depth =
		    (unsigned int)(((long double)r->buckets[i] * 40) / (long double)total + 0.5L);
		memset(bar, '@', depth);
		memset(bar + depth, ' ', 40 - depth);
		bar[40] = '\0';
		err = hwt_buf_printf(out, "%16s |%s %" PRIu64 "\n", label, bar, r->buckets[i]);
	}
	return err;
}

static int print_text(const struct hwt_rep_agg *agg, struct hwt_buf *out)
{
	struct sort_row *rows = sorted_rows(agg);
	int widths[HWT_REP_MAX_KEYS] = {0};
	bool has_stack = false, hist = agg->nbuckets > 0;
	int err, vwidth = 1;

	if (!rows)
		return -ENOMEM;
	err = hwt_buf_printf(out, "@%s", agg->name);
	for (size_t i = 0; i < agg->nkeys && err >= 0; i++)
		err = hwt_buf_printf(out, "%s%s", i ? ", " : "[", agg->key_names[i]);
	if (err >= 0 && agg->nkeys)
		err = hwt_buf_printf(out, "]");
	if (err >= 0 && agg->func == HWT_REP_LQUANTIZE)
		err = hwt_buf_printf(out, ": lquantize(%" PRId64 ", %" PRId64 ", %" PRId64 ")\n",
				     agg->low, agg->high, agg->step);
	else if (err >= 0)
		err = hwt_buf_printf(out, ": %s()\n", func_names[agg->func]);
	for (size_t k = 0; k < agg->nkeys; k++)
		has_stack |= agg->key_types[k] == HWT_REP_STACK;
	for (size_t r = 0; r < agg->keys.n; r++) {
		char tmp[32];
		int w = snprintf(tmp, sizeof(tmp), "%" PRId64, rows[r].res.value);

		if (w > vwidth)
			vwidth = w;
		for (size_t k = 0; k < agg->nkeys; k++) {
			if (agg->key_types[k] == HWT_REP_STACK)
				continue;
			w = key_width(agg, &rows[r].res.key[k]);
			if (w > widths[k])
				widths[k] = w;
		}
	}
	for (size_t r = 0; r < agg->keys.n && err >= 0; r++) {
		const struct hwt_rep_agg_result *res = &rows[r].res;
		bool any = false;

		if (has_stack || hist)
			err = hwt_buf_printf(out, "\n");
		/* Scalar keys on one line, left-justified strings and
		 * right-justified integers, as DTrace's printa. */
		for (size_t k = 0; k < agg->nkeys && err >= 0; k++) {
			if (res->key[k].type == HWT_REP_STACK)
				continue;
			err = hwt_buf_printf(out, "  ");
			if (err >= 0)
				err = print_key_scalar(out, agg, &res->key[k], widths[k]);
			any = true;
		}
		if (err < 0)
			break;
		if (has_stack || hist) {
			if (any)
				err = hwt_buf_printf(out, "\n");
			for (size_t k = 0; k < agg->nkeys && err >= 0; k++) {
				const uint32_t *frames;
				size_t n;

				if (res->key[k].type != HWT_REP_STACK)
					continue;
				n = hwt_rep_dict_stack_get(agg->dict, (uint32_t)res->key[k].v,
							   &frames);
				for (size_t f = 0; f < n && err >= 0; f++) {
					err = hwt_buf_printf(out, "%14s", "");
					if (err >= 0)
						err = print_frame(out, agg->dict, frames[f]);
					if (err >= 0)
						err = hwt_buf_printf(out, "\n");
				}
			}
			if (err < 0)
				break;
			if (hist)
				err = print_hist(out, agg, res);
			else
				err = hwt_buf_printf(out, "%17" PRId64 "\n", res->value);
		} else {
			err = hwt_buf_printf(out, "  %*" PRId64 "\n", vwidth, res->value);
		}
	}
	free(rows);
	return err;
}

static int json_key(struct hwt_buf *out, const struct hwt_rep_agg *agg, const struct hwt_rep_val *k)
{
	const uint32_t *frames;
	size_t n;
	int err;

	if (k->type == HWT_REP_INT)
		return hwt_buf_printf(out, "%" PRId64, k->v);
	if (k->type == HWT_REP_STR)
		return hwt_rep_json_str(out, hwt_rep_dict_str_get(agg->dict, (uint32_t)k->v));
	n = hwt_rep_dict_stack_get(agg->dict, (uint32_t)k->v, &frames);
	err = hwt_buf_printf(out, "[");
	for (size_t f = 0; f < n && err >= 0; f++) {
		struct hwt_buf tmp;

		if (f)
			err = hwt_buf_printf(out, ",");
		hwt_buf_init(&tmp);
		if (err >= 0)
			err = print_frame(&tmp, agg->dict, frames[f]);
		if (err >= 0)
			err = hwt_rep_json_str(out, (const char *)tmp.data);
		hwt_buf_fini(&tmp);
	}
	if (err >= 0)
		err = hwt_buf_printf(out, "]");
	return err;
}

static int print_json(const struct hwt_rep_agg *agg, struct hwt_buf *out)
{
	struct sort_row *rows = sorted_rows(agg);
	int err;

	if (!rows)
		return -ENOMEM;
	err = hwt_buf_printf(out, "{\"name\":");
	if (err >= 0)
		err = hwt_rep_json_str(out, agg->name);
	if (err >= 0)
		err = hwt_buf_printf(out, ",\"function\":\"%s\"", func_names[agg->func]);
	if (err >= 0 && agg->func == HWT_REP_LQUANTIZE)
		err = hwt_buf_printf(out,
				     ",\"low\":%" PRId64 ",\"high\":%" PRId64 ",\"step\":%" PRId64,
				     agg->low, agg->high, agg->step);
	if (err >= 0)
		err = hwt_buf_printf(out, ",\"keys\":[");
	for (size_t k = 0; k < agg->nkeys && err >= 0; k++) {
		if (k)
			err = hwt_buf_printf(out, ",");
		if (err >= 0)
			err = hwt_rep_json_str(out, agg->key_names[k]);
	}
	if (err >= 0)
		err = hwt_buf_printf(out, "],\"rows\":[");
	for (size_t r = 0; r < agg->keys.n && err >= 0; r++) {
		const struct hwt_rep_agg_result *res = &rows[r].res;

		err = hwt_buf_printf(out, "%s{\"key\":[", r ? "," : "");
		for (size_t k = 0; k < agg->nkeys && err >= 0; k++) {
			if (k)
				err = hwt_buf_printf(out, ",");
			if (err >= 0)
				err = json_key(out, agg, &res->key[k]);
		}
		if (err >= 0)
			err = hwt_buf_printf(
			    out,
			    "],\"value\":%" PRId64 ",\"count\":%" PRIu64 ",\"sum\":%" PRId64
			    ",\"min\":%" PRId64 ",\"max\":%" PRId64 ",\"avg\":%.17g",
			    res->value, res->count, res->sum, res->min, res->max, res->avg);
		if (err >= 0 && agg->func == HWT_REP_STDDEV)
			err = hwt_buf_printf(out, ",\"stddev\":%.17g", res->stddev);
		if (err >= 0 && res->nbuckets) {
			bool first = true;

			err = hwt_buf_printf(out, ",\"buckets\":[");
			for (size_t i = 0; i < res->nbuckets && err >= 0; i++) {
				int64_t low;

				if (!res->buckets[i])
					continue;
				hwt_rep_agg_bucket_low(agg, i, &low);
				err = hwt_buf_printf(out,
						     "%s{\"low\":%" PRId64 ",\"high\":%" PRId64
						     ",\"count\":%" PRIu64 "}",
						     first ? "" : ",", low, bucket_high(agg, i),
						     res->buckets[i]);
				first = false;
			}
			if (err >= 0)
				err = hwt_buf_printf(out, "]");
		}
		if (err >= 0)
			err = hwt_buf_printf(out, "}");
	}
	if (err >= 0)
		err = hwt_buf_printf(out, "]}");
	free(rows);
	return err;
}

int hwt_rep_agg_print(const struct hwt_rep_agg *agg, enum hwt_rep_format format,
		      struct hwt_buf *out)
{
	if (!agg || !out)
		return -HWT_EINVAL;
	if (format == HWT_REP_FMT_TEXT)
		return print_text(agg, out);
	if (format == HWT_REP_FMT_JSON)
		return print_json(agg, out);
	return -HWT_EINVAL;
}
