/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/report/test_agg.c - the aggregation engine against hand-computed
 * ground truth: quantize buckets at every power-of-two edge (negative,
 * zero, INT64 extremes), lquantize below/in/above its range, every
 * aggregating function, typed keys, DTrace's printed layout exactly, and
 * JSON that python3 parses into the same numbers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <malloc.h>
#include <stdint.h>

#include "tests/lib/testutil.h"
#include "tests/report/report_test.h"

static void test_quantize_edges(void **state)
{
	(void)state;
	assert_int_equal(hwt_rep_quantize_bucket(0), 63);
	assert_int_equal(hwt_rep_quantize_bucket(1), 64);
	assert_int_equal(hwt_rep_quantize_bucket(-1), 62);
	assert_int_equal(hwt_rep_quantize_bucket(INT64_MAX), 126);
	assert_int_equal(hwt_rep_quantize_bucket(INT64_MIN), 0);
	assert_int_equal(hwt_rep_quantize_bucket(INT64_MIN + 1), 0);
	/* Every positive edge: 2^k starts bucket 64+k, 2^k - 1 ends the one
	 * before; mirrored for negatives down to -2^61. */
	for (int k = 0; k <= 62; k++) {
		int64_t p = (int64_t)1 << k;

		assert_int_equal(hwt_rep_quantize_bucket(p), 64 + k);
		assert_int_equal(hwt_rep_quantize_label(64 + (size_t)k), p);
		if (k >= 1)
			assert_int_equal(hwt_rep_quantize_bucket(p - 1), 64 + k - 1);
		if (k < 62)
			assert_int_equal(hwt_rep_quantize_bucket(p + 1), k == 0 ? 65 : 64 + k);
		if (k <= 61) {
			assert_int_equal(hwt_rep_quantize_bucket(-p), 62 - k);
			assert_int_equal(hwt_rep_quantize_label(62 - (size_t)k), -p);
			/* -(2^(k+1)) + 1 is still in -2^k's bucket. */
			assert_int_equal(hwt_rep_quantize_bucket(-(p * 2) + 1), 62 - k);
		}
	}
	assert_int_equal(hwt_rep_quantize_bucket(-((int64_t)1 << 62)), 0);
	assert_int_equal(hwt_rep_quantize_bucket(-((int64_t)1 << 62) + 1), 1);
	assert_int_equal(hwt_rep_quantize_label(63), 0);
}

static void test_lquantize_edges(void **state)
{
	const int64_t big = (int64_t)1 << 62;

	(void)state;
	/* lquantize(v, 0, 100, 10): < 0, [0,10) .. [90,100), >= 100 */
	assert_int_equal(hwt_rep_lquantize_bucket(-1, 0, 100, 10), 0);
	assert_int_equal(hwt_rep_lquantize_bucket(INT64_MIN, 0, 100, 10), 0);
	assert_int_equal(hwt_rep_lquantize_bucket(0, 0, 100, 10), 1);
	assert_int_equal(hwt_rep_lquantize_bucket(9, 0, 100, 10), 1);
	assert_int_equal(hwt_rep_lquantize_bucket(10, 0, 100, 10), 2);
	assert_int_equal(hwt_rep_lquantize_bucket(99, 0, 100, 10), 10);
	assert_int_equal(hwt_rep_lquantize_bucket(100, 0, 100, 10), 11);
	assert_int_equal(hwt_rep_lquantize_bucket(INT64_MAX, 0, 100, 10), 11);
	/* A range across zero. */
	assert_int_equal(hwt_rep_lquantize_bucket(-11, -10, 10, 5), 0);
	assert_int_equal(hwt_rep_lquantize_bucket(-10, -10, 10, 5), 1);
	assert_int_equal(hwt_rep_lquantize_bucket(-6, -10, 10, 5), 1);
	assert_int_equal(hwt_rep_lquantize_bucket(-5, -10, 10, 5), 2);
	assert_int_equal(hwt_rep_lquantize_bucket(0, -10, 10, 5), 3);
	assert_int_equal(hwt_rep_lquantize_bucket(9, -10, 10, 5), 4);
	assert_int_equal(hwt_rep_lquantize_bucket(10, -10, 10, 5), 5);
	/* A range whose span does not fit int64: no overflow. */
	assert_int_equal(hwt_rep_lquantize_bucket(INT64_MIN, INT64_MIN, big, big), 1);
	assert_int_equal(hwt_rep_lquantize_bucket(-1, INT64_MIN, big, big), 2);
	assert_int_equal(hwt_rep_lquantize_bucket(0, INT64_MIN, big, big), 3);
	assert_int_equal(hwt_rep_lquantize_bucket(big - 1, INT64_MIN, big, big), 3);
	assert_int_equal(hwt_rep_lquantize_bucket(big, INT64_MIN, big, big), 4);
	assert_int_equal(hwt_rep_lquantize_bucket(INT64_MAX, INT64_MIN, big, big), 4);
}

static struct hwt_rep_agg *mkagg(struct hwt_rep_dict *dict, const char *name,
				 enum hwt_rep_func func, size_t nkeys, const uint32_t *types,
				 const char *const *names)
{
	struct hwt_rep_agg_config cfg;
	struct hwt_rep_agg *agg;

	hwt_rep_agg_config_init(&cfg);
	cfg.name = name;
	cfg.func = func;
	cfg.nkeys = nkeys;
	for (size_t i = 0; i < nkeys; i++) {
		cfg.key_types[i] = types[i];
		cfg.key_names[i] = names ? names[i] : NULL;
	}
	assert_int_equal(hwt_rep_agg_alloc(&agg, dict, &cfg), 0);
	return agg;
}

static struct hwt_rep_val skey(struct hwt_rep_dict *dict, const char *s)
{
	struct hwt_rep_val v;
	uint32_t id;

	assert_int_equal(hwt_rep_dict_str(dict, s, strlen(s), &id), 0);
	v.type = HWT_REP_STR;
	v.v = id;
	return v;
}

/* The histogram a quantize aggregation holds matches bucket_low bounds. */
static void test_quantize_agg_buckets(void **state)
{
	static const int64_t values[] = {
	    INT64_MIN, -((int64_t)1 << 62), -5,	      -4, -3, -1, 0, 1, 2, 3, 4, 1023,
	    1024,      (int64_t)1 << 62,    INT64_MAX};
	struct hwt_rep_dict *dict;
	struct hwt_rep_agg *agg;
	struct hwt_rep_agg_result r;

	(void)state;
	assert_int_equal(hwt_rep_dict_alloc(&dict), 0);
	agg = mkagg(dict, "q", HWT_REP_QUANTIZE, 0, NULL, NULL);
	for (size_t i = 0; i < HWT_ARRAY_SIZE(values); i++)
		assert_int_equal(hwt_rep_agg_update(agg, NULL, values[i], 1), 0);
	assert_int_equal(hwt_rep_agg_nrows(agg), 1);
	assert_int_equal(hwt_rep_agg_row(agg, 0, &r), 0);
	assert_int_equal(r.nbuckets, HWT_REP_QUANTIZE_BUCKETS);
	assert_int_equal(r.count, HWT_ARRAY_SIZE(values));
	for (size_t i = 0; i < HWT_ARRAY_SIZE(values); i++) {
		size_t b = hwt_rep_quantize_bucket(values[i]);
		int64_t low, next_low;

		assert_int_equal(hwt_rep_agg_bucket_low(agg, b, &low), 0);
		assert_true(low <= values[i]);
		if (b + 1 < HWT_REP_QUANTIZE_BUCKETS) {
			assert_int_equal(hwt_rep_agg_bucket_low(agg, b + 1, &next_low), 0);
			assert_true(values[i] < next_low);
		}
	}
	/* Hand-counted: bucket 0 holds INT64_MIN and -2^62; -5 and -4 share
	 * (-8,-4]; 2 and 3 share [2,4); 1023 is in [512,1024). */
	assert_int_equal(r.buckets[0], 2);
	assert_int_equal(r.buckets[60], 2);
	assert_int_equal(r.buckets[61], 1);
	assert_int_equal(r.buckets[62], 1);
	assert_int_equal(r.buckets[63], 1);
	assert_int_equal(r.buckets[64], 1);
	assert_int_equal(r.buckets[65], 2);
	assert_int_equal(r.buckets[66], 1);
	assert_int_equal(r.buckets[64 + 9], 1);
	assert_int_equal(r.buckets[64 + 10], 1);
	assert_int_equal(r.buckets[126], 2);
	hwt_rep_agg_free(agg);
	hwt_rep_dict_free(dict);
}

static void test_functions(void **state)
{
	static const enum hwt_rep_func funcs[] = {HWT_REP_COUNT, HWT_REP_SUM, HWT_REP_MIN,
						  HWT_REP_MAX,	 HWT_REP_AVG, HWT_REP_STDDEV};
	/* values 1, 5, -3: count 3, sum 3, min -3, max 5, avg 1,
	 * stddev sqrt(((0)^2 + 4^2 + (-4)^2) / 3) = sqrt(32/3) = 3.2659... */
	static const int64_t expect[] = {3, 3, -3, 5, 1, 3};
	const uint32_t types[] = {HWT_REP_STR};
	struct hwt_rep_dict *dict;

	(void)state;
	assert_int_equal(hwt_rep_dict_alloc(&dict), 0);
	for (size_t f = 0; f < HWT_ARRAY_SIZE(funcs); f++) {
		struct hwt_rep_agg *agg = mkagg(dict, "x", funcs[f], 1, types, NULL);
		struct hwt_rep_val k = skey(dict, "a"), other = skey(dict, "b");
		struct hwt_rep_agg_result r;

		assert_int_equal(hwt_rep_agg_update(agg, &k, 1, 1), 0);
		assert_int_equal(hwt_rep_agg_update(agg, &k, 5, 0), 0); /* weight 0 is 1 */
		assert_int_equal(hwt_rep_agg_update(agg, &k, -3, 1), 0);
		assert_int_equal(hwt_rep_agg_update(agg, &other, 100, 1), 0);
		assert_int_equal(hwt_rep_agg_nrows(agg), 2);
		assert_int_equal(hwt_rep_agg_find(agg, &k, &r), 0);
		assert_int_equal(r.value, expect[f]);
		assert_int_equal(r.count, 3);
		assert_int_equal(r.min, -3);
		assert_int_equal(r.max, 5);
		if (funcs[f] == HWT_REP_STDDEV)
			assert_true(r.stddev > 3.2659 && r.stddev < 3.2660);
		hwt_rep_agg_free(agg);
	}
	hwt_rep_dict_free(dict);
}

static void test_exact_sums(void **state)
{
	const uint32_t types[] = {HWT_REP_INT};
	struct hwt_rep_dict *dict;
	struct hwt_rep_agg *avg, *sum;
	struct hwt_rep_val k = {HWT_REP_INT, 7};
	struct hwt_rep_agg_result r;

	(void)state;
	assert_int_equal(hwt_rep_dict_alloc(&dict), 0);
	avg = mkagg(dict, "a", HWT_REP_AVG, 1, types, NULL);
	sum = mkagg(dict, "s", HWT_REP_SUM, 1, types, NULL);
	/* The average of two INT64_MAX is exact despite the int64 overflow. */
	assert_int_equal(hwt_rep_agg_update(avg, &k, INT64_MAX, 1), 0);
	assert_int_equal(hwt_rep_agg_update(avg, &k, INT64_MAX, 1), 0);
	assert_int_equal(hwt_rep_agg_find(avg, &k, &r), 0);
	assert_int_equal(r.value, INT64_MAX);
	/* Integer avg truncates toward zero, as DTrace's: -3 / 2 = -1. */
	k.v = 8;
	assert_int_equal(hwt_rep_agg_update(avg, &k, -1, 1), 0);
	assert_int_equal(hwt_rep_agg_update(avg, &k, -2, 1), 0);
	assert_int_equal(hwt_rep_agg_find(avg, &k, &r), 0);
	assert_int_equal(r.value, -1);
	assert_true(r.avg == -1.5);
	/* Weighted sum; sum wraps as int64 like DTrace's. */
	assert_int_equal(hwt_rep_agg_update(sum, &k, 10, 3), 0);
	assert_int_equal(hwt_rep_agg_find(sum, &k, &r), 0);
	assert_int_equal(r.value, 30);
	assert_int_equal(r.count, 3);
	k.v = 9;
	assert_int_equal(hwt_rep_agg_update(sum, &k, INT64_MAX, 1), 0);
	assert_int_equal(hwt_rep_agg_update(sum, &k, 1, 1), 0);
	assert_int_equal(hwt_rep_agg_find(sum, &k, &r), 0);
	assert_int_equal(r.value, INT64_MIN);
	hwt_rep_agg_free(avg);
	hwt_rep_agg_free(sum);
	hwt_rep_dict_free(dict);
}

static void test_bad_keys_and_config(void **state)
{
	const uint32_t types[] = {HWT_REP_STR, HWT_REP_INT};
	struct hwt_rep_agg_config cfg;
	struct hwt_rep_dict *dict;
	struct hwt_rep_agg *agg;
	struct hwt_rep_val key[2] = {{HWT_REP_INT, 0}, {HWT_REP_INT, 0}};
	struct hwt_rep_agg_result r;

	(void)state;
	assert_int_equal(hwt_rep_dict_alloc(&dict), 0);
	agg = mkagg(dict, "k", HWT_REP_COUNT, 2, types, NULL);
	assert_int_equal(hwt_rep_agg_update(agg, key, 1, 1), -HWT_EINVAL); /* wrong type */
	key[0].type = HWT_REP_STR;
	key[0].v = 999; /* an id the dict never gave */
	assert_int_equal(hwt_rep_agg_update(agg, key, 1, 1), -HWT_EINVAL);
	key[0].v = 0;
	assert_int_equal(hwt_rep_agg_find(agg, key, &r), -HWT_ENOSYM);
	assert_int_equal(hwt_rep_agg_update(agg, key, 1, 1), 0);
	assert_int_equal(hwt_rep_agg_find(agg, key, &r), 0);
	hwt_rep_agg_clear(agg);
	assert_int_equal(hwt_rep_agg_nrows(agg), 0);
	assert_int_equal(hwt_rep_agg_find(agg, key, &r), -HWT_ENOSYM);
	hwt_rep_agg_free(agg);

	hwt_rep_agg_config_init(&cfg);
	cfg.func = HWT_REP_LQUANTIZE;
	cfg.low = 0, cfg.high = 100, cfg.step = 0;
	assert_int_equal(hwt_rep_agg_alloc(&agg, dict, &cfg), -HWT_EINVAL);
	cfg.step = 30; /* 100 is not a multiple of 30 */
	assert_int_equal(hwt_rep_agg_alloc(&agg, dict, &cfg), -HWT_EINVAL);
	cfg.step = 10, cfg.high = 0;
	assert_int_equal(hwt_rep_agg_alloc(&agg, dict, &cfg), -HWT_EINVAL);
	cfg.low = 0, cfg.high = 10000000, cfg.step = 1; /* too many levels */
	assert_int_equal(hwt_rep_agg_alloc(&agg, dict, &cfg), -HWT_EINVAL);
	cfg.func = HWT_REP_COUNT;
	cfg.nkeys = 1;
	cfg.key_types[0] = 42;
	assert_int_equal(hwt_rep_agg_alloc(&agg, dict, &cfg), -HWT_EINVAL);
	hwt_rep_dict_free(dict);
}

static char *print(const struct hwt_rep_agg *agg, enum hwt_rep_format fmt)
{
	struct hwt_buf b;

	hwt_buf_init(&b);
	assert_int_equal(hwt_rep_agg_print(agg, fmt, &b), 0);
	assert_int_equal(hwt_buf_append(&b, "", 1), 0);
	return (char *)b.data;
}

static void test_print_count(void **state)
{
	const uint32_t types[] = {HWT_REP_STR, HWT_REP_INT};
	const char *const names[] = {"comm", "pid"};
	struct hwt_rep_dict *dict;
	struct hwt_rep_agg *agg;
	struct hwt_rep_val k[2];
	char *text;

	(void)state;
	assert_int_equal(hwt_rep_dict_alloc(&dict), 0);
	agg = mkagg(dict, "calls", HWT_REP_COUNT, 2, types, names);
	k[0] = skey(dict, "bash");
	k[1].type = HWT_REP_INT;
	k[1].v = 4242;
	for (int i = 0; i < 3; i++)
		assert_int_equal(hwt_rep_agg_update(agg, k, 0, 1), 0);
	k[0] = skey(dict, "sshd");
	k[1].v = 7;
	assert_int_equal(hwt_rep_agg_update(agg, k, 0, 1), 0);
	k[0] = skey(dict, "a");
	k[1].v = 12;
	assert_int_equal(hwt_rep_agg_update(agg, k, 0, 12), 0);
	text = print(agg, HWT_REP_FMT_TEXT);
	/* Ascending by value; strings left-justified, integers right. */
	assert_string_equal(text, "@calls[comm, pid]: count()\n"
				  "  sshd     7   1\n"
				  "  bash  4242   3\n"
				  "  a       12  12\n");
	free(text);
	hwt_rep_agg_free(agg);
	hwt_rep_dict_free(dict);
}

static void test_print_quantize(void **state)
{
	struct hwt_rep_dict *dict;
	struct hwt_rep_agg *agg;
	struct hwt_rep_agg_config cfg;
	char *text;

	(void)state;
	assert_int_equal(hwt_rep_dict_alloc(&dict), 0);
	agg = mkagg(dict, "lat", HWT_REP_QUANTIZE, 0, NULL, NULL);
	/* 1 -> [1], 2,2,3 -> [2,4), 8 -> [8,16): bars of 40 * n / 5. */
	assert_int_equal(hwt_rep_agg_update(agg, NULL, 1, 1), 0);
	assert_int_equal(hwt_rep_agg_update(agg, NULL, 2, 2), 0);
	assert_int_equal(hwt_rep_agg_update(agg, NULL, 3, 1), 0);
	assert_int_equal(hwt_rep_agg_update(agg, NULL, 8, 1), 0);
	text = print(agg, HWT_REP_FMT_TEXT);
	assert_string_equal(text,
			    "@lat: quantize()\n"
			    "\n"
			    "           value  ------------- Distribution ------------- count\n"
			    "               0 |                                         0\n"
			    "               1 |@@@@@@@@                                 1\n"
			    "               2 |@@@@@@@@@@@@@@@@@@@@@@@@                 3\n"
			    "               4 |                                         0\n"
			    "               8 |@@@@@@@@                                 1\n"
			    "              16 |                                         0\n");
	free(text);
	hwt_rep_agg_free(agg);

	hwt_rep_agg_config_init(&cfg);
	cfg.name = "l";
	cfg.func = HWT_REP_LQUANTIZE;
	cfg.low = 0, cfg.high = 30, cfg.step = 10;
	assert_int_equal(hwt_rep_agg_alloc(&agg, dict, &cfg), 0);
	assert_int_equal(hwt_rep_agg_update(agg, NULL, -5, 1), 0);
	assert_int_equal(hwt_rep_agg_update(agg, NULL, 15, 2), 0);
	assert_int_equal(hwt_rep_agg_update(agg, NULL, 30, 1), 0);
	text = print(agg, HWT_REP_FMT_TEXT);
	assert_string_equal(text,
			    "@l: lquantize(0, 30, 10)\n"
			    "\n"
			    "           value  ------------- Distribution ------------- count\n"
			    "             < 0 |@@@@@@@@@@                               1\n"
			    "               0 |                                         0\n"
			    "              10 |@@@@@@@@@@@@@@@@@@@@                     2\n"
			    "              20 |                                         0\n"
			    "           >= 30 |@@@@@@@@@@                               1\n");
	free(text);
	hwt_rep_agg_free(agg);
	hwt_rep_dict_free(dict);
}

static void test_print_stack(void **state)
{
	const uint32_t types[] = {HWT_REP_STACK};
	struct hwt_rep_frame fr[2] = {rt_frame("f", "/usr/lib/libx.so", HWT_REP_KIND_USER),
				      rt_frame("main", "/bin/prog", HWT_REP_KIND_USER)};
	struct hwt_rep_dict *dict;
	struct hwt_rep_agg *agg;
	struct hwt_rep_val k = {HWT_REP_STACK, 0};
	uint32_t ids[2], sid;
	char *text;

	(void)state;
	assert_int_equal(hwt_rep_dict_alloc(&dict), 0);
	assert_int_equal(hwt_rep_dict_frame(dict, &fr[0], &ids[0]), 0);
	assert_int_equal(hwt_rep_dict_frame(dict, &fr[1], &ids[1]), 0);
	assert_int_equal(hwt_rep_dict_stack(dict, ids, 2, &sid), 0);
	agg = mkagg(dict, "", HWT_REP_COUNT, 1, types, (const char *const[]){"ustack"});
	k.v = sid;
	assert_int_equal(hwt_rep_agg_update(agg, &k, 0, 2), 0);
	text = print(agg, HWT_REP_FMT_TEXT);
	assert_string_equal(text, "@[ustack]: count()\n"
				  "\n"
				  "              libx.so`f\n"
				  "              prog`main\n"
				  "                2\n");
	free(text);
	hwt_rep_agg_free(agg);
	hwt_rep_dict_free(dict);
}

static void test_json(void **state)
{
	const uint32_t types[] = {HWT_REP_STR};
	struct hwt_rep_dict *dict;
	struct hwt_rep_agg *agg;
	struct hwt_rep_val k;
	char *dir = hwt_test_tmpdir(), *text, buf[256];
	const char *path;

	(void)state;
	assert_int_equal(hwt_rep_dict_alloc(&dict), 0);
	agg = mkagg(dict, "q\"x", HWT_REP_QUANTIZE, 1, types, (const char *const[]){"comm"});
	k = skey(dict, "we\"ird\n<name>");
	assert_int_equal(hwt_rep_agg_update(agg, &k, 3, 1), 0);
	assert_int_equal(hwt_rep_agg_update(agg, &k, -1, 4), 0);
	assert_int_equal(hwt_rep_agg_update(agg, &k, INT64_MIN, 1), 0);
	text = print(agg, HWT_REP_FMT_JSON);
	path = rt_write(dir, "agg.json", text, strlen(text));
	rt_json_valid(path);
	assert_string_equal(
	    rt_json_eval(path, "d[\"name\"], d[\"function\"], d[\"keys\"]", buf, sizeof(buf)),
	    "q\"x quantize ['comm']");
	assert_string_equal(rt_json_eval(path,
					 "d[\"rows\"][0][\"key\"][0] == \"we\\\"ird\\n<name>\"",
					 buf, sizeof(buf)),
			    "True");
	assert_string_equal(rt_json_eval(path,
					 "d[\"rows\"][0][\"value\"], d[\"rows\"][0][\"count\"]",
					 buf, sizeof(buf)),
			    "6 6");
	/* Buckets with inclusive bounds: [-2^63, -2^62], [-1, -1], [2, 3]. */
	assert_string_equal(
	    rt_json_eval(
		path,
		"[(b[\"low\"], b[\"high\"], b[\"count\"]) for b in d[\"rows\"][0][\"buckets\"]]",
		buf, sizeof(buf)),
	    "[(-9223372036854775808, -4611686018427387904, 1), (-1, -1, 4), (2, 3, 1)]");
	free(text);
	hwt_rep_agg_free(agg);
	hwt_rep_dict_free(dict);
	hwt_test_tmpdir_remove(dir);
}

/* Updates of keys seen before allocate nothing: the heap's in-use bytes
 * (glibc's mallinfo2) do not move across thousands of them, for
 * aggregations and for profiles fed resolved frames or frame ids. */
static void test_hot_path_allocates_nothing(void **state)
{
	const uint32_t types[] = {HWT_REP_STR, HWT_REP_INT};
	struct hwt_rep_frame fr[3] = {rt_frame("leaf", "/bin/p", HWT_REP_KIND_USER),
				      rt_frame("mid", "/bin/p", HWT_REP_KIND_USER),
				      rt_frame("main", "/bin/p", HWT_REP_KIND_USER)};
	struct hwt_rep_profile_config pc;
	struct hwt_rep_profile *p;
	struct hwt_rep_dict *dict;
	struct hwt_rep_agg *agg;
	struct hwt_rep_val k[2];
	struct hwt_rep_sample s;
	uint32_t ids[3];
	size_t before;

	(void)state;
	assert_int_equal(hwt_rep_dict_alloc(&dict), 0);
	agg = mkagg(dict, "h", HWT_REP_QUANTIZE, 2, types, NULL);
	k[0] = skey(dict, "bash");
	k[1].type = HWT_REP_INT;
	k[1].v = 1;
	assert_int_equal(hwt_rep_agg_update(agg, k, 5, 1), 0);
	hwt_rep_profile_config_init(&pc);
	pc.dict = dict;
	assert_int_equal(hwt_rep_profile_alloc(&p, &pc), 0);
	memset(&s, 0, sizeof(s));
	s.comm = "bash";
	s.event = "cycles";
	s.frames = fr;
	s.nframes = 3;
	assert_int_equal(hwt_rep_profile_add(p, &s), 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(hwt_rep_dict_frame(dict, &fr[i], &ids[i]), 0);
	before = mallinfo2().uordblks;
	for (int i = 0; i < 10000; i++) {
		assert_int_equal(hwt_rep_agg_update(agg, k, i, 1), 0);
		s.frames = fr;
		s.frame_ids = NULL;
		assert_int_equal(hwt_rep_profile_add(p, &s), 1);
		s.frames = NULL;
		s.frame_ids = ids;
		assert_int_equal(hwt_rep_profile_add(p, &s), 1);
	}
	assert_int_equal(mallinfo2().uordblks, before);
	assert_int_equal(hwt_rep_profile_stats(p)->samples, 20001);
	hwt_rep_profile_free(p);
	hwt_rep_agg_free(agg);
	hwt_rep_dict_free(dict);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_quantize_edges),
	    cmocka_unit_test(test_lquantize_edges),
	    cmocka_unit_test(test_quantize_agg_buckets),
	    cmocka_unit_test(test_functions),
	    cmocka_unit_test(test_exact_sums),
	    cmocka_unit_test(test_bad_keys_and_config),
	    cmocka_unit_test(test_print_count),
	    cmocka_unit_test(test_print_quantize),
	    cmocka_unit_test(test_print_stack),
	    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_hot_path_allocates_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
