/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_ptemu.c - the PT emulator end to end: test programs
 * with known control flow run under hwt_ptemu_run(); each thread's PT is
 * decoded with libipt (pt_insn decoder, image from the MMAP2 sideband) and
 * must decode without errors, give exactly the emulator's ground truth
 * (every conditional branch outcome, every indirect and return target, the
 * instruction count) and the counts the programs are written to have
 * (loop trip counts at a labelled jcc, calls, handlers, jump-table uses).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/collector/ptemu_check.h"
#include "tests/lib/testutil.h"

#include <signal.h>
#include <unistd.h>

static bool have_qemu(void)
{
	return system("qemu-x86_64 --version >/dev/null 2>&1") == 0;
}

/* Decodes every stream of a capture and checks it against the truth;
 * returns the number of streams. libipt's instruction decoder decodes
 * `extra` instructions more than were traced in each stream (see
 * test_filter). */
static size_t check_all_extra(struct cap *c, const struct hwt_ptemu_result *res, uint64_t extra)
{
	assert_int_equal(c->ns, res->nthreads);
	for (size_t i = 0; i < c->ns; i++) {
		struct dec_result d;
		struct hwt_buf truth;

		memset(&d, 0, sizeof(d));
		cap_decode(c, i, &d);
		if (d.errors)
			fprintf(stderr, "tid %u: %llu decode errors, first %s\n", c->s[i].tid,
				(unsigned long long)d.errors, pt_errstr(pt_errcode(d.first_error)));
		assert_int_equal(d.errors, 0);
		assert_int_equal(res->threads[i].tid, c->s[i].tid);
		assert_int_equal(d.insns, res->threads[i].insns - res->threads[i].untraced + extra);
		cap_truth(c, c->s[i].tid, &truth);
		assert_true(truth.len > 0);
		assert_int_equal(cap_compare(&d.events, &truth), -1);
		hwt_buf_fini(&truth);
		hwt_buf_fini(&d.events);
	}
	return c->ns;
}

static size_t check_all(struct cap *c, const struct hwt_ptemu_result *res)
{
	return check_all_extra(c, res, 0);
}

/* Watches the labelled loop of ptemu_common.h in prog. */
static void watch_loop(struct dec_result *d, const struct cap *c, const char *prog)
{
	uint64_t bias = cap_bias(c, prog);
	uint64_t jcc = sym_addr(prog, "ptemu_loop_jcc", NULL);
	uint64_t body = sym_addr(prog, "ptemu_loop_body", NULL);
	uint64_t end = sym_addr(prog, "ptemu_loop_end", NULL);

	assert_true(jcc && body && end > body);
	d->w[0].ip = bias + jcc;
	d->w[1].lo = bias + body;
	d->w[1].hi = bias + end;
	d->nw = 2;
}

static void test_flow(void **state)
{
	const char *prog = hwt_test_prog("ptemu_flow");
	const char *argv[] = {prog, NULL};
	struct hwt_ptemu_result res;
	struct dec_result d;
	struct cap c;
	uint64_t bias, fib, h0, store;

	(void)state;
	if (!have_qemu())
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	assert_int_equal(cap_run(&c, &res, NULL, argv), 0);
	assert_int_equal(res.exit_status, 0);
	assert_true(c.emulated);
	assert_int_equal(check_all(&c, &res), 1);
	assert_int_equal(res.threads[0].lost, 0);
	assert_true(res.threads[0].ret_comp > 0);

	/* Independent counts, from the program's structure. */
	memset(&d, 0, sizeof(d));
	watch_loop(&d, &c, prog);
	bias = cap_bias(&c, prog);
	fib = sym_addr(prog, "fib", NULL);
	h0 = sym_addr(prog, "h0", NULL);
	store = sym_addr(prog, "main", NULL);
	assert_true(fib && h0 && store);
	d.w[2].ip = bias + fib;
	d.w[3].ip = bias + h0;
	d.nw = 4;
	cap_decode(&c, 0, &d);
	assert_int_equal(d.errors, 0);
	assert_int_equal(d.w[0].count, 1000); /* LOOP_N */
	assert_int_equal(d.w[0].taken, 999);
	assert_int_equal(d.w[1].count, 3 * 1000);
	assert_int_equal(d.w[2].count, 1973); /* calls of fib(15) */
	assert_int_equal(d.w[3].count, 100);  /* FPTR_ROUNDS */
	/* raise() and the SIGSEGV each leave user space and come back in a
	 * handler; the fault is a FUP + TIP.PGD at the faulting store. */
	assert_true(d.disables >= 3);
	assert_int_equal(d.disables, d.enables);
	hwt_buf_fini(&d.events);
	hwt_ptemu_result_fini(&res);
	cap_remove_dir(&c);
	cap_fini(&c);
}

static void test_flow_terms(void **state)
{
	static const char *const terms[] = {
	    "noretcomp", "cyc,mtc_period=0,psb_period=0", "tsc=0,mtc=0",  "cyc,tsc_per_insn=3",
	    "real,vmcs", "real,ovf=1,noretcomp",	  "real,vmentry",
	};
	const char *prog = hwt_test_prog("ptemu_flow");
	const char *argv[] = {prog, NULL};

	(void)state;
	if (!have_qemu())
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	for (size_t i = 0; i < HWT_ARRAY_SIZE(terms); i++) {
		struct hwt_ptemu_result res;
		struct dec_result d;
		struct cap c;

		fprintf(stderr, "terms %s\n", terms[i]);
		assert_int_equal(cap_run(&c, &res, terms[i], argv), 0);
		assert_int_equal(res.exit_status, 0);
		check_all(&c, &res);
		if (c.terms.noretcomp)
			assert_int_equal(res.threads[0].ret_comp, 0);
		if (c.terms.psb_period == 0)
			assert_true(res.threads[0].psb >= res.threads[0].bytes / 2048 / 2);
		if (c.terms.psb_bytes)
			assert_true(res.threads[0].psb >= res.threads[0].bytes / c.terms.psb_bytes);
		if (c.terms.ovf) {
			/* About one per KiB of trace, each losing 16 blocks. */
			assert_true(res.threads[0].ovf >= res.threads[0].bytes / 1024 / 4);
			assert_true(res.threads[0].untraced >= res.threads[0].ovf * 16);
		} else {
			assert_int_equal(res.threads[0].untraced, 0);
		}
		memset(&d, 0, sizeof(d));
		cap_decode(&c, 0, &d);
		if (c.terms.tsc) {
			/* The deterministic clock: time runs forward, and the
			 * whole run spans about insns * tsc_per_insn ticks.
			 * With CYC, libipt estimates the time between timing
			 * packets from cycle counts (a CYC counts from the
			 * previous CYC, which may precede the last MTC) and
			 * the next MTC or TSC corrects it: a few ticks back
			 * (seen: 1 in 145,916 instructions, depending on the
			 * environment's size), never more than one MTC
			 * period (TSC/CTC = 84 ticks, times 2^mtc_period). */
			uint64_t span = res.threads[0].insns * c.terms.tsc_per_insn;

			if (c.terms.cyc)
				assert_true(d.time_back_max <= (84u << c.terms.mtc_period));
			else
				assert_true(d.time_monotonic);
			assert_true(d.time_first >= HWT_PTEMU_TSC0);
			assert_true(d.time_last - d.time_first <= span);
			if (c.terms.cyc)
				assert_true(d.time_last - d.time_first >= span / 2);
		}
		hwt_buf_fini(&d.events);
		hwt_ptemu_result_fini(&res);
		cap_remove_dir(&c);
		cap_fini(&c);
	}
}

/* Address filters on tests/progs/ptemu_filter.c, whose filt_work(10)
 * (called 3 times) leaves and re-enters its range every way a branch can.
 * libipt decodes each trace without error to the emulator's truth, and to
 * exactly the instructions of the range: filt_work's 4 + 9 * 10 per call
 * with `filter filt_work`; 6 per iteration with the range [filt_mid,
 * filt_last), entered and left by falling from one instruction to the next
 * too; only the first call's with a TraceStop on filt_tail. Each exit is a
 * TIP.PGD: 2 calls out and 1 jcc out every other iteration, and the tail
 * jmp (filt_work), or the indirect call out, the jcc and the fall out of
 * the range at filt_last every iteration ([filt_mid, filt_last)).
 * The fall out of the range is a TIP.PGD with the first IP outside (as
 * for any exit); libipt's block decoder (ptxed's, hwtrace's) stops there
 * (pt_blk_proceed_to_ip), its instruction decoder, used here, binds it to
 * the next branch that needs trace (pt_insn_at_disabled_event): the jnz
 * at filt_last, one instruction outside, decoded once per iteration. */
static void test_filter(void **state)
{
	const char *prog = hwt_test_prog("ptemu_filter");
	const char *argv[] = {prog, NULL};
	uint64_t bias, work, work_size = 0, mid, last;
	struct {
		uint64_t insns, leaves;
		const char *shape;
	} cases[] = {
	    {3 * (4 + 9 * 10), 3 * (2 * 10 + 5 + 1), ""},
	    {3 * 10 * 6, 3 * (10 + 5 + 10), "real,"},
	    {4 + 9 * 10, 2 * 10 + 5 + 1, ""},
	};

	(void)state;
	if (!have_qemu())
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	work = sym_addr(prog, "filt_work", &work_size);
	mid = sym_addr(prog, "filt_mid", NULL);
	last = sym_addr(prog, "filt_last", NULL);
	assert_true(work && work_size && mid > work && last > mid);
	for (size_t i = 0; i < HWT_ARRAY_SIZE(cases); i++) {
		struct hwt_ptemu_result res;
		struct dec_result d;
		struct cap c;
		char terms[1024], filter[800];

		if (i == 0)
			snprintf(filter, sizeof(filter), "filter filt_work @ %s", prog);
		else if (i == 1)
			snprintf(filter, sizeof(filter), "filter 0x%llx/0x%llx @ %s",
				 (unsigned long long)mid, (unsigned long long)(last - mid), prog);
		else
			snprintf(filter, sizeof(filter),
				 "filter filt_work @ %s,tracestop filt_tail @ %s", prog, prog);
		snprintf(terms, sizeof(terms), "%sfilter=%s", cases[i].shape, filter);
		fprintf(stderr, "terms %s\n", terms);
		assert_int_equal(cap_run(&c, &res, terms, argv), 0);
		assert_int_equal(res.exit_status, 0);
		check_all_extra(&c, &res, i == 1 ? 3 * 10 : 0);
		assert_int_equal(res.threads[0].insns - res.threads[0].untraced, cases[i].insns);
		assert_int_equal(res.threads[0].filtered, res.threads[0].untraced);
		assert_int_equal(res.threads[0].leaves, cases[i].leaves);
		bias = cap_bias(&c, prog);
		memset(&d, 0, sizeof(d));
		d.w[0].lo = bias + (i == 1 ? mid : work);
		d.w[0].hi = bias + (i == 1 ? last : work + work_size);
		d.nw = 1;
		cap_decode(&c, 0, &d);
		assert_int_equal(d.errors, 0);
		assert_int_equal(d.w[0].count, cases[i].insns); /* all in the range */
		assert_int_equal(d.insns - d.w[0].count, i == 1 ? 3 * 10 : 0);
		hwt_buf_fini(&d.events);
		hwt_ptemu_result_fini(&res);
		cap_remove_dir(&c);
		cap_fini(&c);
	}
}

static void test_static(void **state)
{
	const char *prog = hwt_test_prog("ptemu_static");
	const char *argv[] = {prog, NULL};
	struct hwt_ptemu_result res;
	struct dec_result d;
	struct cap c;

	(void)state;
	if (!have_qemu())
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	assert_int_equal(cap_run(&c, &res, NULL, argv), 0);
	assert_int_equal(res.exit_status, 0);
	check_all(&c, &res);
	memset(&d, 0, sizeof(d));
	watch_loop(&d, &c, prog);
	cap_decode(&c, 0, &d);
	assert_int_equal(d.w[0].count, 1000);
	assert_int_equal(d.w[0].taken, 999);
	hwt_buf_fini(&d.events);
	hwt_ptemu_result_fini(&res);
	cap_remove_dir(&c);
	cap_fini(&c);
}

static void test_threads(void **state)
{
	const char *prog = hwt_test_prog("ptemu_threads");
	const char *argv[] = {prog, NULL};
	struct hwt_ptemu_result res;
	struct cap c;
	bool seen[4] = {false};
	size_t off = 0;
	int forks = 0;

	(void)state;
	if (!have_qemu())
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	assert_int_equal(cap_run(&c, &res, NULL, argv), 0);
	assert_int_equal(res.exit_status, 0);
	assert_int_equal(check_all(&c, &res), 4);
	for (size_t i = 0; i < c.ns; i++) {
		struct dec_result d;

		assert_int_equal(c.s[i].pid, c.s[0].pid);
		memset(&d, 0, sizeof(d));
		watch_loop(&d, &c, prog);
		cap_decode(&c, i, &d);
		/* Each thread ran the loop once with its own trip count. */
		assert_true(d.w[0].count >= 3000 && d.w[0].count <= 3003);
		assert_int_equal(d.w[0].taken, d.w[0].count - 1);
		assert_false(seen[d.w[0].count - 3000]);
		seen[d.w[0].count - 3000] = true;
		hwt_buf_fini(&d.events);
	}
	while (cap_next_rec(&c, &off, PERF_RECORD_FORK))
		forks++;
	assert_int_equal(forks, 3);
	hwt_ptemu_result_fini(&res);
	cap_remove_dir(&c);
	cap_fini(&c);
}

static void test_fork(void **state)
{
	const char *prog = hwt_test_prog("ptemu_fork");
	const char *argv[] = {prog, NULL};
	struct hwt_ptemu_result res;
	struct cap c;
	uint64_t counts[2];

	(void)state;
	if (!have_qemu())
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	assert_int_equal(cap_run(&c, &res, NULL, argv), 0);
	assert_int_equal(res.exit_status, 0);
	assert_int_equal(check_all(&c, &res), 2);
	assert_int_not_equal(c.s[0].pid, c.s[1].pid);
	for (size_t i = 0; i < 2; i++) {
		struct dec_result d;

		memset(&d, 0, sizeof(d));
		watch_loop(&d, &c, prog);
		cap_decode(&c, i, &d);
		counts[i] = d.w[0].count;
		hwt_buf_fini(&d.events);
	}
	/* Streams come in start order: the parent, then the child. */
	assert_int_equal(counts[0], 500);
	assert_int_equal(counts[1], 700);
	assert_int_equal(cap_parent(&c, c.s[1].pid), c.s[0].pid);
	hwt_ptemu_result_fini(&res);
	cap_remove_dir(&c);
	cap_fini(&c);
}

static void run_end(const char *mode, int want_status, struct cap *c, struct hwt_ptemu_result *res,
		    struct dec_result *d)
{
	const char *prog = hwt_test_prog("ptemu_end");
	const char *argv[] = {prog, mode, NULL};

	assert_int_equal(cap_run(c, res, NULL, argv), 0);
	assert_int_equal(res->exit_status, want_status);
	assert_true(c->ns >= 1);
	memset(d, 0, sizeof(*d));
	watch_loop(d, c, prog);
	cap_decode(c, 0, d);
	assert_int_equal(d->errors, 0);
	/* ptemu_loop(400) ran before the end, and all of it decodes. */
	assert_true(d->w[0].count >= 400);
}

static void test_crash(void **state)
{
	struct hwt_ptemu_result res;
	struct dec_result d;
	struct cap c;
	uint64_t site;

	(void)state;
	if (!have_qemu())
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	run_end("crash", 128 + SIGSEGV, &c, &res, &d);
	check_all(&c, &res);
	assert_int_equal(d.w[0].count, 400);
	site = cap_bias(&c, hwt_test_prog("ptemu_end")) +
	       sym_addr(hwt_test_prog("ptemu_end"), "ptemu_crash_site", NULL);
	/* The trace stops at the faulting store: FUP(store), TIP.PGD. */
	assert_int_equal(d.last_disable_ip, site);
	assert_true(d.last_ip != site);
	hwt_buf_fini(&d.events);
	hwt_ptemu_result_fini(&res);
	cap_remove_dir(&c);
	cap_fini(&c);
}

static void test_exec(void **state)
{
	struct hwt_ptemu_result res;
	struct dec_result d;
	struct cap c;

	(void)state;
	if (!have_qemu())
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	run_end("exec", 0, &c, &res, &d);
	check_all(&c, &res);
	assert_int_equal(d.w[0].count, 400);
	assert_int_equal(res.threads[0].end, HWT_PTEMU_END_EXEC);
	hwt_buf_fini(&d.events);
	hwt_ptemu_result_fini(&res);
	cap_remove_dir(&c);
	cap_fini(&c);
}

static void test_killed(void **state)
{
	struct hwt_ptemu_result res;
	struct dec_result d;
	struct cap c;
	size_t off = 0;
	int exits = 0;

	(void)state;
	if (!have_qemu())
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user)");
	run_end("kill", 128 + SIGKILL, &c, &res, &d);
	/* The main thread was cut in the middle of ptemu_loop(1e12): its file
	 * decodes up to the last block it stored. */
	assert_true(d.w[0].count > 400 + 1000);
	assert_int_equal(res.threads[0].end, HWT_PTEMU_END_RUNNING);
	while (cap_next_rec(&c, &off, PERF_RECORD_EXIT))
		exits++;
	assert_int_equal(exits, (int)c.ns);
	hwt_buf_fini(&d.events);
	hwt_ptemu_result_fini(&res);
	cap_remove_dir(&c);
	cap_fini(&c);
}

static void test_bad_command(void **state)
{
	struct hwt_ptemu_config cfg;
	struct hwt_ptemu_sink sink;
	const char *argv[] = {"/nonexistent/hwt-no-such-program", NULL};
	const char *none[] = {NULL};

	(void)state;
	memset(&sink, 0, sizeof(sink));
	hwt_ptemu_config_init(&cfg);
	cfg.argv = argv;
	assert_int_equal(hwt_ptemu_run(&cfg, &sink, NULL), -ENOENT);
	cfg.argv = none;
	assert_int_equal(hwt_ptemu_run(&cfg, &sink, NULL), -HWT_EINVAL);
	cfg.argv = argv;
	cfg.qemu = "/nonexistent/qemu";
	assert_int_equal(hwt_ptemu_run(&cfg, &sink, NULL), -HWT_ENOTSUP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flow),   cmocka_unit_test(test_flow_terms),
	    cmocka_unit_test(test_static), cmocka_unit_test(test_threads),
	    cmocka_unit_test(test_fork),   cmocka_unit_test(test_crash),
	    cmocka_unit_test(test_exec),   cmocka_unit_test(test_killed),
	    cmocka_unit_test(test_filter), cmocka_unit_test(test_bad_command),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
