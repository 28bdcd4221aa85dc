/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/pmc/test_stat_print.c - perf stat's layout from known counts: the
 * table columns, thousands separators, derived metrics (CPUs utilized, GHz,
 * insn per cycle, branch and cache miss ratios, rates), the multiplexing
 * percentage of an event that ran half of the time, <not supported> and
 * <not counted>, repeats with noise, intervals and CSV. Hardware events
 * cannot run on this VM, so their lines are checked here from synthetic
 * counts; the expected lines were checked column by column against perf
 * 6.1's output for the same numbers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "pmc/pmc.h"
#include "tests/lib/testutil.h"

#define NEV 9

static struct hwt_pmc_evlist *make_list(void)
{
	struct hwt_pmc_evlist *l;

	assert_int_equal(hwt_pmc_evlist_alloc(&l, NULL), 0);
	assert_int_equal(hwt_pmc_evlist_add(l, "task-clock,cycles,instructions,branches,"
					       "branch-misses,cache-references,cache-misses,"
					       "page-faults,ref-cycles"),
			 NEV);
	return l;
}

static void fill(struct hwt_pmc_count *c, uint64_t v, uint64_t ena, uint64_t run, uint32_t flags)
{
	memset(c, 0, sizeof(*c));
	c->value = v;
	c->enabled = ena;
	c->running = run;
	c->flags = flags;
	hwt_pmc_count_scale(c);
}

static void counts_run(struct hwt_pmc_count *c, double k)
{
	fill(&c[0], (uint64_t)(2000000 * k), 2000000, 2000000, 0); /* 2 ms */
	fill(&c[1], (uint64_t)(6000000 * k), 2000000, 1000000, 0); /* 50%: 12M */
	fill(&c[2], (uint64_t)(9000000 * k), 2000000, 2000000, 0);
	fill(&c[3], (uint64_t)(1000000 * k), 2000000, 2000000, 0);
	fill(&c[4], (uint64_t)(25000 * k), 2000000, 2000000, 0);
	fill(&c[5], (uint64_t)(40000 * k), 2000000, 2000000, 0);
	fill(&c[6], (uint64_t)(10000 * k), 2000000, 2000000, 0);
	fill(&c[7], (uint64_t)(1234 * k), 2000000, 2000000, 0);
	fill(&c[8], 0, 0, 0, HWT_PMC_COUNT_NOT_SUPPORTED);
}

static const char table[] =
    "\n"
    " Performance counter stats for './app':\n"
    "\n"
    "              2.00 msec task-clock                       #    0.200 CPUs utilized          \n"
    "        12,000,000      cycles                           #    6.000 GHz                      "
    "(50.00%)\n"
    "         9,000,000      instructions                     #    0.75  insn per cycle         \n"
    "         1,000,000      branches                         #  500.000 M/sec                  \n"
    "            25,000      branch-misses                    #    2.50% of all branches        \n"
    "            40,000      cache-references                 #   20.000 M/sec                  \n"
    "            10,000      cache-misses                     #   25.000 % of all cache refs    \n"
    "             1,234      page-faults                      #  617.000 K/sec                  \n"
    "   <not supported>      ref-cycles                                                  \n"
    "\n"
    "       0.010000000 seconds time elapsed\n"
    "\n"
    "       0.001500000 seconds user\n"
    "       0.000500000 seconds sys\n"
    "\n";

static void test_table(void **state)
{
	struct hwt_pmc_evlist *l = make_list();
	struct hwt_pmc_stat_config cfg;
	struct hwt_pmc_stat *st;
	struct hwt_pmc_count c[NEV];
	struct hwt_buf out;

	(void)state;
	hwt_pmc_stat_config_init(&cfg);
	cfg.target = "'./app'";
	cfg.show_user_sys = true;
	assert_int_equal(hwt_pmc_stat_alloc(&st, l, &cfg), 0);
	counts_run(c, 1);
	assert_int_equal(hwt_pmc_stat_add_run(st, c, NEV, 0.01, 0.0015, 0.0005), 0);
	hwt_buf_init(&out);
	assert_int_equal(hwt_pmc_stat_print(st, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	if (strcmp((char *)out.data, table))
		fprintf(stderr, "got:\n%s", (char *)out.data);
	assert_string_equal((char *)out.data, table);
	hwt_buf_fini(&out);
	hwt_pmc_stat_free(st);
	hwt_pmc_evlist_free(l);
}

static const char csv[] = "2.00,msec,task-clock,2000000,100.00,0.200,CPUs utilized\n"
			  "12000000,,cycles,1000000,50.00,6.000,GHz\n"
			  "9000000,,instructions,2000000,100.00,0.75,insn per cycle\n"
			  "1000000,,branches,2000000,100.00,500.000,M/sec\n"
			  "25000,,branch-misses,2000000,100.00,2.50,of all branches\n"
			  "40000,,cache-references,2000000,100.00,20.000,M/sec\n"
			  "10000,,cache-misses,2000000,100.00,25.000,of all cache refs\n"
			  "1234,,page-faults,2000000,100.00,617.000,K/sec\n"
			  "<not supported>,,ref-cycles,0,100.00,,\n";

static void test_csv(void **state)
{
	struct hwt_pmc_evlist *l = make_list();
	struct hwt_pmc_stat_config cfg;
	struct hwt_pmc_stat *st;
	struct hwt_pmc_count c[NEV];
	struct hwt_buf out;

	(void)state;
	hwt_pmc_stat_config_init(&cfg);
	cfg.csv_sep = ",";
	cfg.target = "'./app'";
	assert_int_equal(hwt_pmc_stat_alloc(&st, l, &cfg), 0);
	counts_run(c, 1);
	assert_int_equal(hwt_pmc_stat_add_run(st, c, NEV, 0.01, 0, 0), 0);
	hwt_buf_init(&out);
	assert_int_equal(hwt_pmc_stat_print(st, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	if (strcmp((char *)out.data, csv))
		fprintf(stderr, "got:\n%s", (char *)out.data);
	assert_string_equal((char *)out.data, csv);
	hwt_buf_fini(&out);
	hwt_pmc_stat_free(st);
	hwt_pmc_evlist_free(l);
}

/* Two runs, the second with 10% more of everything: the mean is 1.05x and
 * the standard error of the mean is 0.05x, so every noisy line shows
 * +- 4.76%. */
static void test_repeat_noise(void **state)
{
	struct hwt_pmc_evlist *l;
	struct hwt_pmc_stat_config cfg;
	struct hwt_pmc_stat *st;
	struct hwt_pmc_count c[2];
	struct hwt_buf out;
	static const char want[] = "\n"
				   " Performance counter stats for './app' (2 runs):\n"
				   "\n"
				   "              2.10 msec task-clock                       #    "
				   "0.210 CPUs utilized            ( +-  4.76% )\n"
				   "             1,050      page-faults                      #  "
				   "500.000 K/sec                    ( +-  4.76% )\n"
				   "\n"
				   "          0.010000 +- 0.000000 seconds time elapsed\n"
				   "\n";

	(void)state;
	assert_int_equal(hwt_pmc_evlist_alloc(&l, NULL), 0);
	assert_int_equal(hwt_pmc_evlist_add(l, "task-clock,page-faults"), 2);
	hwt_pmc_stat_config_init(&cfg);
	cfg.target = "'./app'";
	cfg.runs = 2;
	assert_int_equal(hwt_pmc_stat_alloc(&st, l, &cfg), 0);
	fill(&c[0], 2000000, 2000000, 2000000, 0);
	fill(&c[1], 1000, 2000000, 2000000, 0);
	assert_int_equal(hwt_pmc_stat_add_run(st, c, 2, 0.01, 0, 0), 0);
	fill(&c[0], 2200000, 2200000, 2200000, 0);
	fill(&c[1], 1100, 2200000, 2200000, 0);
	assert_int_equal(hwt_pmc_stat_add_run(st, c, 2, 0.01, 0, 0), 0);
	hwt_buf_init(&out);
	assert_int_equal(hwt_pmc_stat_print(st, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	if (strcmp((char *)out.data, want))
		fprintf(stderr, "got:\n%s", (char *)out.data);
	assert_string_equal((char *)out.data, want);
	hwt_buf_fini(&out);
	hwt_pmc_stat_free(st);
	hwt_pmc_evlist_free(l);
}

static void test_interval(void **state)
{
	struct hwt_pmc_evlist *l;
	struct hwt_pmc_stat_config cfg;
	struct hwt_pmc_stat *st;
	struct hwt_pmc_count c[2];
	struct hwt_buf out;
	static const char want[] = "#           time             counts unit events\n"
				   "     1.000500000              50.00 msec task-clock            "
				   "           #    0.050 CPUs utilized          \n"
				   "     1.000500000             12,345      page-faults           "
				   "           #  246.900 K/sec                  \n"
				   "     2.001000000      <not counted> msec task-clock            "
				   "                                      \n"
				   "     2.001000000      <not counted>      page-faults           "
				   "                                      \n";

	(void)state;
	assert_int_equal(hwt_pmc_evlist_alloc(&l, NULL), 0);
	assert_int_equal(hwt_pmc_evlist_add(l, "task-clock,page-faults"), 2);
	hwt_pmc_stat_config_init(&cfg);
	assert_int_equal(hwt_pmc_stat_alloc(&st, l, &cfg), 0);
	hwt_buf_init(&out);
	fill(&c[0], 50000000, 50000000, 50000000, 0);
	fill(&c[1], 12345, 50000000, 50000000, 0);
	assert_int_equal(hwt_pmc_stat_print_interval(st, c, 2, 1.0005, 1.0, 0, &out), 0);
	fill(&c[0], 0, 0, 0, 0);
	fill(&c[1], 0, 0, 0, 0);
	assert_int_equal(hwt_pmc_stat_print_interval(st, c, 2, 2.001, 1.0, 1, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	if (strcmp((char *)out.data, want))
		fprintf(stderr, "got:\n%s", (char *)out.data);
	assert_string_equal((char *)out.data, want);
	hwt_buf_fini(&out);
	hwt_pmc_stat_free(st);
	hwt_pmc_evlist_free(l);
}

static void test_user_only_and_no_big_num(void **state)
{
	struct hwt_pmc_evlist *l;
	struct hwt_pmc_stat_config cfg;
	struct hwt_pmc_stat *st;
	struct hwt_pmc_count c[1];
	struct hwt_buf out;

	(void)state;
	assert_int_equal(hwt_pmc_evlist_alloc(&l, NULL), 0);
	assert_int_equal(hwt_pmc_evlist_add(l, "page-faults"), 1);
	hwt_pmc_stat_config_init(&cfg);
	cfg.big_num = false;
	cfg.target = "'x'";
	assert_int_equal(hwt_pmc_stat_alloc(&st, l, &cfg), 0);
	fill(&c[0], 1234567, 10, 10, HWT_PMC_COUNT_USER_ONLY);
	assert_int_equal(hwt_pmc_stat_add_run(st, c, 1, 1, 0, 0), 0);
	hwt_buf_init(&out);
	assert_int_equal(hwt_pmc_stat_print(st, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	assert_true(hwt_test_contains((char *)out.data,
				      "           1234567      page-faults:u                    "));
	hwt_buf_fini(&out);
	hwt_pmc_stat_free(st);
	hwt_pmc_evlist_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_csv),
	    cmocka_unit_test(test_repeat_noise),
	    cmocka_unit_test(test_interval),
	    cmocka_unit_test(test_user_only_and_no_big_num),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
