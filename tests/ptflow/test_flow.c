/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/ptflow/test_flow.c - exact reports from PT (ptflow) against ground
 * truth, without the session layer:
 *
 *   - synthetic records whose stacks, counts and times are written by hand
 *     (attribution, inclusive counts, latencies, gaps, unknown frames);
 *   - tests/progs/ptflow_known recorded with the PT emulator, decoded here
 *     (image and address space from its sideband): call counts the program
 *     is written to make (leaf 1000, op_a/b/c 500/300/200, rec 50, nested
 *     10 deep), the conditional in leaf taken 300 and not taken 700 times,
 *     the indirect call's target histogram, the stacks reaching an
 *     instruction, the flame graph's stacks, the timeline's spans; and the
 *     views checked against each other (self = sum of instruction rows,
 *     inclusive = self + callees' inclusive).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/ptflow/ptf_load.h"

#include <inttypes.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Synthetic records                                                         */

static void feed(struct hwt_ptf *ptf, struct hwt_dec_rec *r)
{
	assert_int_equal(hwt_ptf_rec(ptf, r), 0);
}

static struct hwt_dec_rec block(uint64_t ip, uint32_t n, uint64_t *insns, uint32_t depth,
				uint64_t time)
{
	struct hwt_dec_rec r;

	memset(&r, 0, sizeof(r));
	r.type = HWT_DEC_REC_BLOCK;
	r.pid = 10;
	r.tid = 11;
	*insns += n;
	r.insns = *insns;
	r.depth = depth;
	r.u.block.ip = ip;
	r.u.block.end_ip = ip + n - 1;
	r.u.block.ninsn = n;
	if (time) {
		r.flags = HWT_DEC_RF_TIME;
		r.time = time;
	}
	return r;
}

static struct hwt_dec_rec call(uint64_t to, uint64_t insns, uint32_t depth, uint64_t time)
{
	struct hwt_dec_rec r;

	memset(&r, 0, sizeof(r));
	r.type = HWT_DEC_REC_CALL;
	r.pid = 10;
	r.tid = 11;
	r.insns = insns;
	r.depth = depth;
	r.u.call.to = to;
	if (time) {
		r.flags = HWT_DEC_RF_TIME;
		r.time = time;
	}
	return r;
}

static struct hwt_dec_rec ret(uint64_t to, uint64_t insns, uint32_t depth, uint64_t time,
			      uint32_t flags)
{
	struct hwt_dec_rec r;

	memset(&r, 0, sizeof(r));
	r.type = HWT_DEC_REC_RETURN;
	r.pid = 10;
	r.tid = 11;
	r.insns = insns;
	r.depth = depth;
	r.flags = flags;
	r.u.ret.to = to;
	if (time) {
		r.flags |= HWT_DEC_RF_TIME;
		r.time = time;
	}
	return r;
}

/* main-level code (3 insns) calls 0x2000 (4 insns, which calls 0x3000 with
 * 5 insns twice), returns, runs 2 more; then a call to 0x3000 is cut by a
 * gap; then a return out of a frame older than the trace. Times in ns. */
static void test_synthetic(void **state)
{
	struct hwt_ptf_config cfg;
	struct hwt_rep_profile *prof;
	struct hwt_ptf_call_stats c;
	struct hwt_ptf_stats st;
	struct hwt_ptf *ptf;
	struct hwt_dec_rec r;
	struct hwt_buf out;
	uint64_t n = 0;

	(void)state;
	assert_int_equal(hwt_rep_profile_alloc(&prof, NULL), 0);
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_PROFILE | HWT_PTF_CALLS;
	cfg.profile = prof;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);

	r = block(0x1000, 3, &n, 0, 100);
	feed(ptf, &r);
	r = call(0x2000, n, 1, 110);
	feed(ptf, &r);
	r = block(0x2000, 2, &n, 1, 120);
	feed(ptf, &r);
	for (int i = 0; i < 2; i++) {
		r = call(0x3000, n, 2, 130 + 100 * i);
		feed(ptf, &r);
		r = block(0x3000, 5, &n, 2, 0); /* no time of its own */
		feed(ptf, &r);
		r = ret(0x2002, n, 1, 170 + 100 * i, 0);
		feed(ptf, &r);
	}
	r = block(0x2002, 2, &n, 1, 0);
	feed(ptf, &r);
	r = ret(0x1003, n, 0, 400, 0);
	feed(ptf, &r);
	r = block(0x1003, 2, &n, 0, 410);
	feed(ptf, &r);
	r = call(0x3000, n, 1, 420);
	feed(ptf, &r);
	memset(&r, 0, sizeof(r));
	r.type = HWT_DEC_REC_GAP;
	r.pid = 10;
	r.tid = 11;
	r.insns = n;
	r.depth = 0; /* the decoder's stack was reset */
	feed(ptf, &r);
	r = ret(0x5000, n, 0, 500, HWT_DEC_RF_UNKNOWN_FRAME);
	feed(ptf, &r);
	r = block(0x5000, 1, &n, 0, 510);
	feed(ptf, &r);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	assert_int_equal(hwt_ptf_rec(ptf, &r), -HWT_EINVAL);
	assert_int_equal(hwt_ptf_finish(ptf), -HWT_EINVAL);

	hwt_ptf_stats(ptf, &st);
	assert_int_equal(st.insns, n);
	assert_int_equal(st.insns, 3 + 2 + 10 + 2 + 2 + 1);
	assert_int_equal(st.calls, 4);
	assert_int_equal(st.returns, 3);
	assert_int_equal(st.unknown_returns, 1);
	assert_int_equal(st.lost_frames, 1);
	assert_int_equal(st.gaps, 1);
	assert_true(st.timed);

	/* No aspace: called functions are named by their entry. */
	assert_int_equal(hwt_ptf_calls_find(ptf, "0x3000", &c), 0);
	assert_int_equal(c.calls, 3);
	assert_int_equal(c.returns, 2);
	assert_int_equal(c.self_insns, 10);
	assert_int_equal(c.incl_insns, 10);
	assert_true(c.timed);
	assert_int_equal(c.incl_ns, 40 + 40);
	assert_int_equal(c.min_ns, 40);
	assert_int_equal(c.max_ns, 40);
	assert_non_null(c.buckets);
	assert_int_equal(c.buckets[hwt_rep_quantize_bucket(40)], 2);
	assert_int_equal(hwt_ptf_calls_find(ptf, "0x2000", &c), 0);
	assert_int_equal(c.calls, 1);
	assert_int_equal(c.returns, 1);
	assert_int_equal(c.self_insns, 4);
	assert_int_equal(c.incl_insns, 14);
	assert_int_equal(c.incl_ns, 400 - 110);
	/* Code at depth 0 without symbols: "[unknown]" below "[unknown]". */
	assert_int_equal(hwt_ptf_calls_find(ptf, "[unknown]", &c), 0);
	assert_int_equal(c.self_insns, 3 + 2 + 1);
	assert_int_equal(c.calls, 0);
	assert_int_equal(hwt_ptf_calls_find(ptf, "nosuch", &c), -HWT_ENOSYM);

	/* The profile: the root frame (the thread returned out of a frame
	 * older than the trace: it had callers before it), the depth-0 code
	 * without a symbol, then the calls. */
	struct hwt_rep_render_config rc;

	hwt_rep_render_config_init(&rc);
	rc.format = HWT_REP_FMT_FOLDED;
	rc.by_comm = false;
	rc.annotate = false;
	hwt_buf_init(&out);
	assert_int_equal(hwt_rep_render(prof, &rc, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	assert_true(
	    hwt_test_contains((char *)out.data, "[before the trace];[unknown];0x2000;0x3000 10\n"));
	assert_true(hwt_test_contains((char *)out.data, "[before the trace];[unknown];0x2000 4\n"));
	assert_true(hwt_test_contains((char *)out.data, "[before the trace];[unknown] 6\n"));
	hwt_buf_fini(&out);

	hwt_buf_init(&out);
	assert_int_equal(hwt_ptf_calls_print(ptf, HWT_REP_FMT_JSON, 0, 0, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	assert_true(hwt_test_contains(
	    (char *)out.data, "{\"function\":\"0x3000\",\"object\":null,\"addr\":12288,"
			      "\"calls\":3,\"returns\":2,\"self_insns\":10,\"incl_insns\":10,"
			      "\"self_ns\":"));
	assert_true(
	    hwt_test_contains((char *)out.data, "\"latency_unit\":\"ns\",\"latency\":[[32,2]]"));
	hwt_buf_fini(&out);
	hwt_ptf_free(ptf);
	hwt_rep_profile_free(prof);
}

/* A thread whose trace continues in another stream (per-CPU recordings:
 * another decoder, whose instruction count and stack start afresh, at
 * times that may be earlier): nothing is counted twice or lost. */
static void test_stream_restart(void **state)
{
	struct hwt_ptf_config cfg;
	struct hwt_rep_profile *prof;
	struct hwt_ptf_call_stats c;
	struct hwt_ptf_stats st;
	struct hwt_ptf *ptf;
	struct hwt_dec_rec r;
	uint64_t n = 0;

	(void)state;
	assert_int_equal(hwt_rep_profile_alloc(&prof, NULL), 0);
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_PROFILE | HWT_PTF_CALLS;
	cfg.profile = prof;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	r = block(0x1000, 3, &n, 0, 100);
	feed(ptf, &r);
	r = call(0x2000, n, 1, 110);
	feed(ptf, &r);
	r = block(0x2000, 4, &n, 1, 120);
	feed(ptf, &r);
	n = 0; /* the next stream's decoder */
	r = block(0x2008, 2, &n, 0, 50);
	feed(ptf, &r);
	r = block(0x1000, 5, &n, 0, 60);
	feed(ptf, &r);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	hwt_ptf_stats(ptf, &st);
	assert_int_equal(st.insns, 3 + 4 + 2 + 5);
	assert_int_equal(hwt_rep_profile_stats(prof)->weight, st.insns);
	assert_int_equal(st.lost_frames, 1);
	assert_int_equal(st.open_frames, 0);
	assert_int_equal(hwt_ptf_calls_find(ptf, "0x2000", &c), 0);
	assert_int_equal(c.calls, 1);
	assert_int_equal(c.returns, 0);
	assert_int_equal(c.self_insns, 4);
	assert_int_equal(hwt_ptf_calls_find(ptf, "[unknown]", &c), 0);
	assert_int_equal(c.self_insns, 3 + 2 + 5);
	/* Time: 100 -> 110 (depth 0) -> 120 (in 0x2000) in the first
	 * stream; back to 50 (no time passes), then 60 in the second. */
	assert_int_equal(c.self_ns, 10 + 10);
	assert_int_equal(hwt_ptf_calls_find(ptf, "0x2000", &c), 0);
	assert_int_equal(c.self_ns, 10);
	hwt_ptf_free(ptf);
	hwt_rep_profile_free(prof);
}

/* More distinct calls than the call cache holds (two callers, 5000 leaves
 * each, twice, in opposite orders): every leaf's count, self instructions
 * and stack stay exact whichever entries the cache evicted. */
static void test_call_cache(void **state)
{
	enum { LEAVES = 5000 };
	const uint64_t callers[2] = {0x100000, 0x200000};
	struct hwt_ptf_config cfg;
	struct hwt_rep_profile *prof;
	struct hwt_ptf_call_stats c;
	struct hwt_ptf_stats st;
	struct hwt_ptf *ptf;
	struct hwt_dec_rec r;
	uint64_t n = 0, leaf_insns = 0;
	char name[32];

	(void)state;
	assert_int_equal(hwt_rep_profile_alloc(&prof, NULL), 0);
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_PROFILE | HWT_PTF_CALLS;
	cfg.profile = prof;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	r = block(0x1000, 3, &n, 0, 0);
	feed(ptf, &r);
	for (int round = 0; round < 2; round++) {
		for (int p = 0; p < 2; p++) {
			r = call(callers[p], n, 1, 0);
			feed(ptf, &r);
			r = block(callers[p], 2, &n, 1, 0);
			feed(ptf, &r);
			for (int i = 0; i < LEAVES; i++) {
				int k = round ? LEAVES - 1 - i : i;
				uint64_t leaf = 0x300000 + 16 * (uint64_t)k;

				r = call(leaf, n, 2, 0);
				feed(ptf, &r);
				r = block(leaf, (uint32_t)(k % 7 + 1), &n, 2, 0);
				feed(ptf, &r);
				leaf_insns += (uint64_t)(k % 7 + 1);
				r = ret(callers[p] + 5, n, 1, 0, 0);
				feed(ptf, &r);
			}
			r = block(callers[p] + 5, 1, &n, 1, 0);
			feed(ptf, &r);
			r = ret(0x1003, n, 0, 0, 0);
			feed(ptf, &r);
		}
	}
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	hwt_ptf_stats(ptf, &st);
	assert_int_equal(st.insns, 3 + 4 * 3 + leaf_insns);
	assert_int_equal(hwt_rep_profile_stats(prof)->weight, st.insns);
	assert_int_equal(st.calls, 4 + 4 * LEAVES);
	assert_int_equal(st.returns, 4 + 4 * LEAVES);
	/* The thread's root, the depth-0 code, the two callers and each
	 * leaf under each caller. */
	assert_int_equal(st.nodes, 1 + 1 + 2 + 2 * LEAVES);
	for (int p = 0; p < 2; p++) {
		snprintf(name, sizeof(name), "0x%" PRIx64, callers[p]);
		assert_int_equal(hwt_ptf_calls_find(ptf, name, &c), 0);
		assert_int_equal(c.calls, 2);
		assert_int_equal(c.self_insns, 2 * 3);
	}
	for (int k = 0; k < LEAVES; k++) {
		snprintf(name, sizeof(name), "0x%" PRIx64, 0x300000 + 16 * (uint64_t)k);
		assert_int_equal(hwt_ptf_calls_find(ptf, name, &c), 0);
		assert_int_equal(c.calls, 4);
		assert_int_equal(c.returns, 4);
		assert_int_equal(c.self_insns, 4 * (uint64_t)(k % 7 + 1));
		assert_int_equal(c.incl_insns, 4 * (uint64_t)(k % 7 + 1));
	}
	hwt_ptf_free(ptf);
	hwt_rep_profile_free(prof);
}

static void test_config_errors(void **state)
{
	struct hwt_ptf_config cfg;
	struct hwt_ptf *ptf = (void *)1;
	struct hwt_ptf_branch_info bi;
	struct hwt_buf out;

	(void)state;
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_PROFILE;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), -HWT_EINVAL);
	assert_null(ptf);
	cfg.views = HWT_PTF_TIMELINE;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), -HWT_EINVAL);
	cfg.views = HWT_PTF_BRANCHES;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), -HWT_EINVAL);
	/* libbpf's rule: a size smaller than the size field is refused; an
	 * older caller's struct (here the size field only) is accepted with
	 * the defaults for what it lacks, so BRANCHES beyond it is not read. */
	cfg.size = 4;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), -HWT_EINVAL);
	cfg.size = sizeof(size_t);
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	hwt_ptf_free(ptf);
	ptf = NULL;
	assert_int_equal(hwt_ptf_alloc(&ptf, NULL), -HWT_EINVAL);
	hwt_ptf_free(NULL);

	/* A function that never ran: found is false, printing says so. */
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_BRANCHES;
	cfg.branch_func = "nosuch";
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	hwt_buf_init(&out);
	assert_int_equal(hwt_ptf_calls_print(ptf, HWT_REP_FMT_TEXT, 0, 0, &out), -HWT_EINVAL);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	assert_int_equal(hwt_ptf_branches_info(ptf, &bi), 0);
	assert_false(bi.found);
	assert_int_equal(hwt_ptf_branches_print(ptf, HWT_REP_FMT_TEXT, &out), -HWT_ENOSYM);
	assert_int_equal(hwt_ptf_calls_print(ptf, HWT_REP_FMT_SVG, 0, 0, &out), -HWT_EINVAL);
	hwt_buf_fini(&out);
	hwt_ptf_free(ptf);
}

/* ------------------------------------------------------------------------ */
/* ptflow_known under the emulator                                           */

struct known {
	char *dir;
	char path[512];
	char cyc[512];	  /* the same with CYC packets (cycle-accurate time) */
	char filt[512];	  /* real-shaped, filtered to work: TIP.PGD/PGE at each
			   * call out of it and each return into it */
	char leaves[512]; /* real-shaped, filtered to leaf and op_a (called
			   * from untraced code, calling nothing) */
	bool skip;
};

static struct known K;

static int setup_known(void **state)
{
	(void)state;
	if (system("qemu-x86_64 --version >/dev/null 2>&1") != 0) {
		K.skip = true;
		return 0;
	}
	K.dir = hwt_test_tmpdir();
	ptl_record(K.dir, "known", "", hwt_test_prog("ptflow_known"), "", K.path, sizeof(K.path));
	ptl_record(K.dir, "known_cyc", "cyc", hwt_test_prog("ptflow_known"), "", K.cyc,
		   sizeof(K.cyc));
	{
		char terms[600];

		snprintf(terms, sizeof(terms), "'real,filter=filter work @ %s'",
			 hwt_test_prog("ptflow_known"));
		ptl_record(K.dir, "known_filt", terms, hwt_test_prog("ptflow_known"), "", K.filt,
			   sizeof(K.filt));
		snprintf(terms, sizeof(terms), "'real,filter=filter leaf @ %s,filter op_a @ %s'",
			 hwt_test_prog("ptflow_known"), hwt_test_prog("ptflow_known"));
		ptl_record(K.dir, "known_leaves", terms, hwt_test_prog("ptflow_known"), "",
			   K.leaves, sizeof(K.leaves));
	}
	return 0;
}

static int teardown_known(void **state)
{
	(void)state;
	if (K.dir)
		hwt_test_tmpdir_remove(K.dir);
	return 0;
}

static void need_known(void)
{
	if (K.skip)
		hwt_test_skip("qemu-x86_64 is not installed: the PT emulator cannot run");
}

static void call_of(struct hwt_ptf *ptf, const char *name, struct hwt_ptf_call_stats *c)
{
	if (hwt_ptf_calls_find(ptf, name, c) != 0)
		fail_msg("function %s not in the calls table", name);
}

static void check_calls(struct hwt_ptf *ptf)
{
	struct hwt_ptf_call_stats leaf, disp, a, b, c, work, rec, mainf;

	call_of(ptf, "leaf", &leaf);
	call_of(ptf, "dispatch", &disp);
	call_of(ptf, "op_a", &a);
	call_of(ptf, "op_b", &b);
	call_of(ptf, "op_c", &c);
	call_of(ptf, "work", &work);
	call_of(ptf, "rec", &rec);
	call_of(ptf, "main", &mainf);
	assert_int_equal(leaf.calls, 1000);
	assert_int_equal(leaf.returns, 1000);
	assert_int_equal(disp.calls, 1000);
	assert_int_equal(a.calls, 500);
	assert_int_equal(b.calls, 300);
	assert_int_equal(c.calls, 200);
	assert_int_equal(work.calls, 1);
	assert_int_equal(rec.calls, 50);
	assert_int_equal(rec.returns, 50);
	assert_int_equal(mainf.calls, 1);
	/* leaf calls nothing: all its instructions are its own. */
	assert_int_equal(leaf.self_insns, leaf.incl_insns);
	assert_true(leaf.self_insns > 1000 * 10);
	/* Inclusive = self + the callees' inclusive. */
	assert_int_equal(disp.incl_insns,
			 disp.self_insns + a.incl_insns + b.incl_insns + c.incl_insns);
	assert_int_equal(work.incl_insns, work.self_insns + leaf.incl_insns + disp.incl_insns);
	/* op_a/b/c are straight-line: the same count per call. */
	assert_int_equal(a.self_insns % 500, 0);
	assert_int_equal(b.self_insns % 300, 0);
	assert_int_equal(c.self_insns % 200, 0);
	/* The emulated clock runs: latencies are known for every return. */
	assert_true(leaf.timed);
	uint64_t hist = 0;

	for (size_t i = 0; i < HWT_REP_QUANTIZE_BUCKETS; i++)
		hist += leaf.buckets[i];
	assert_int_equal(hist, 1000);
	assert_true(leaf.max_ns >= leaf.min_ns);
}

static void test_known_calls(void **state)
{
	struct hwt_ptf_config cfg;
	struct hwt_ptf *ptf;
	struct ptl l;
	struct hwt_buf out;

	(void)state;
	need_known();
	ptl_open(&l, K.path);
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_CALLS;
	cfg.aspace = l.as;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	ptl_decode(&l, ptf, HWT_DEC_ENGINE_FAST);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	check_calls(ptf);

	hwt_buf_init(&out);
	assert_int_equal(hwt_ptf_calls_print(ptf, HWT_REP_FMT_TEXT, HWT_PTF_PRINT_HIST, 0, &out),
			 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	assert_true(hwt_test_contains((char *)out.data, "# Calls, exact"));
	assert_true(hwt_test_contains((char *)out.data, "@latency_ns[function]: quantize()"));
	hwt_buf_fini(&out);
	hwt_ptf_free(ptf);

	/* libipt's engine gives the same flow, so the same table. */
	struct hwt_ptf_call_stats x, y;
	struct hwt_ptf *ptf2;

	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	assert_int_equal(hwt_ptf_alloc(&ptf2, &cfg), 0);
	ptl_decode(&l, ptf, HWT_DEC_ENGINE_FAST);
	ptl_decode(&l, ptf2, HWT_DEC_ENGINE_LIBIPT);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	assert_int_equal(hwt_ptf_finish(ptf2), 0);
	check_calls(ptf2);
	assert_int_equal(hwt_ptf_calls_count(ptf), hwt_ptf_calls_count(ptf2));
	for (size_t i = 0; i < hwt_ptf_calls_count(ptf); i++) {
		assert_int_equal(hwt_ptf_calls_get(ptf, i, &x), 0);
		assert_int_equal(hwt_ptf_calls_get(ptf2, i, &y), 0);
		assert_string_equal(x.function, y.function);
		assert_int_equal(x.calls, y.calls);
		assert_int_equal(x.self_insns, y.self_insns);
		assert_int_equal(x.incl_insns, y.incl_insns);
	}
	hwt_ptf_free(ptf);
	hwt_ptf_free(ptf2);
	ptl_close(&l);
}

/* The profile alone (PROFILE, weighted by instructions) of the recording
 * l decodes, through batches and the decoder's call tree (no_tree: without
 * the tree): every instruction, call and return as in st (the profile and
 * calls views together, from records), the same folded output as want. The
 * stats in *got. */
static void profile_path_agrees(struct ptl *l, const struct hwt_ptf_config *base, bool no_tree,
				const struct hwt_ptf_stats *st,
				const struct hwt_rep_render_config *rc, const char *want,
				struct hwt_ptf_stats *got)
{
	struct hwt_ptf_config cfg = *base;
	struct hwt_rep_profile *prof;
	struct hwt_dec_sink sink;
	struct hwt_ptf *ptf;
	struct hwt_buf out;

	assert_int_equal(hwt_rep_profile_alloc(&prof, NULL), 0);
	cfg.views = HWT_PTF_PROFILE;
	cfg.profile = prof;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	hwt_ptf_sink(ptf, &sink);
	assert_non_null(sink.batch);
	assert_non_null(sink.tree);
	ptl_decode_opt(l, ptf, HWT_DEC_ENGINE_FAST, no_tree);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	hwt_ptf_stats(ptf, got);
	assert_int_equal(got->insns, st->insns);
	assert_int_equal(got->calls, st->calls);
	assert_int_equal(got->returns, st->returns);
	assert_int_equal(got->unwound, st->unwound);
	assert_int_equal(got->unknown_returns, st->unknown_returns);
	assert_int_equal(hwt_rep_profile_stats(prof)->weight, st->insns);
	hwt_buf_init(&out);
	assert_int_equal(hwt_rep_render(prof, rc, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	assert_string_equal((char *)out.data, want);
	hwt_buf_fini(&out);
	hwt_ptf_free(ptf);
	hwt_rep_profile_free(prof);
}

static void test_known_profile(void **state)
{
	struct hwt_rep_render_config rc;
	struct hwt_ptf_call_stats leaf, disp;
	struct hwt_dec_sink sink;
	struct hwt_rep_profile *prof;
	struct hwt_ptf_config cfg;
	struct hwt_ptf_stats st;
	struct hwt_ptf *ptf;
	struct hwt_buf out;
	char line[128];
	struct ptl l;

	(void)state;
	need_known();
	ptl_open(&l, K.path);
	assert_int_equal(hwt_rep_profile_alloc(&prof, NULL), 0);
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_PROFILE | HWT_PTF_CALLS;
	cfg.aspace = l.as;
	cfg.profile = prof;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	ptl_decode(&l, ptf, HWT_DEC_ENGINE_FAST);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	call_of(ptf, "leaf", &leaf);
	call_of(ptf, "dispatch", &disp);
	hwt_ptf_stats(ptf, &st);
	/* Every instruction is in the profile once. */
	assert_int_equal(hwt_rep_profile_stats(prof)->weight, st.insns);

	hwt_rep_render_config_init(&rc);
	rc.format = HWT_REP_FMT_FOLDED;
	rc.annotate = false;
	hwt_buf_init(&out);
	assert_int_equal(hwt_rep_render(prof, &rc, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	/* All of leaf's instructions under one stack: main -> work -> leaf,
	 * rooted at the program's entry: traced from its exec, it has no
	 * frame below (no "[before the trace]", no "[unknown]"). */
	snprintf(line, sizeof(line), ";main;work;leaf %" PRIu64 "\n", leaf.self_insns);
	assert_true(hwt_test_contains((char *)out.data, line));
	assert_true(hwt_test_contains((char *)out.data, "ptflow_known;_start;"));
	assert_false(hwt_test_contains((char *)out.data, "[unknown]"));
	assert_false(hwt_test_contains((char *)out.data, "[before the trace]"));
	snprintf(line, sizeof(line), ";main;work;dispatch %" PRIu64 "\n", disp.self_insns);
	assert_true(hwt_test_contains((char *)out.data, line));
	/* The recursion: rec nested ten deep. */
	assert_true(
	    hwt_test_contains((char *)out.data, ";main;rec;rec;rec;rec;rec;rec;rec;rec;rec;rec "));
	assert_false(
	    hwt_test_contains((char *)out.data, ";rec;rec;rec;rec;rec;rec;rec;rec;rec;rec;rec"));

	/* With block records at depth 0 only (what the views ask the
	 * decoder for): the same stacks and weights. */
	{
		struct hwt_rep_profile *prof2;
		struct hwt_ptf *ptf2;
		struct hwt_ptf_stats st2;
		struct hwt_buf out2;

		assert_int_equal(hwt_ptf_dec_flags(&cfg), HWT_DEC_F_BASE_BLOCKS);
		assert_int_equal(hwt_rep_profile_alloc(&prof2, NULL), 0);
		cfg.profile = prof2;
		assert_int_equal(hwt_ptf_alloc(&ptf2, &cfg), 0);
		l.cfg.flags |= hwt_ptf_dec_flags(&cfg);
		ptl_decode(&l, ptf2, HWT_DEC_ENGINE_FAST);
		l.cfg.flags &= ~HWT_DEC_F_BASE_BLOCKS;
		assert_int_equal(hwt_ptf_finish(ptf2), 0);
		hwt_ptf_stats(ptf2, &st2);
		assert_int_equal(st2.insns, st.insns);
		assert_int_equal(st2.calls, st.calls);
		assert_true(st2.records < st.records / 2);
		hwt_buf_init(&out2);
		assert_int_equal(hwt_rep_render(prof2, &rc, &out2), 0);
		assert_int_equal(hwt_buf_append(&out2, "", 1), 0);
		assert_string_equal((char *)out2.data, (char *)out.data);
		hwt_buf_fini(&out2);
		hwt_ptf_free(ptf2);
		hwt_rep_profile_free(prof2);
		cfg.profile = prof;
	}
	/* PROFILE alone, weighted by instructions, takes calls and returns
	 * in batches without times (CALLS does not: it needs them), and the
	 * decoder's call tree (nodes counted in the decoder's frames) unless
	 * the sink declines it: the same stacks and weights either way,
	 * every call and instruction counted. */
	hwt_ptf_sink(ptf, &sink);
	assert_null(sink.batch);
	assert_null(sink.tree);
	for (int no_tree = 0; no_tree < 2; no_tree++) {
		struct hwt_ptf_stats st3;

		profile_path_agrees(&l, &cfg, no_tree, &st, &rc, (const char *)out.data, &st3);
		assert_int_equal(st3.functions, st.functions);
	}
	hwt_buf_fini(&out);

	/* The other renderers take it as it is. */
	rc.format = HWT_REP_FMT_SVG;
	hwt_buf_init(&out);
	assert_int_equal(hwt_rep_render(prof, &rc, &out), 0);
	assert_true(out.len > 1000);
	hwt_buf_fini(&out);
	rc.format = HWT_REP_FMT_PPROF;
	hwt_buf_init(&out);
	assert_int_equal(hwt_rep_render(prof, &rc, &out), 0);
	assert_true(out.len > 100);
	hwt_buf_fini(&out);
	hwt_ptf_free(ptf);
	hwt_rep_profile_free(prof);

	/* Weighted by time, from a trace with CYC packets. Time is known at
	 * packets only: leaf's branches are bits of TNT packets that span
	 * several calls, so its calls take no measurable time, while work's
	 * one call spans the program's loop. The weights add up to the
	 * traced time. */
	struct ptl lc;

	ptl_open(&lc, K.cyc);
	assert_int_equal(hwt_rep_profile_alloc(&prof, NULL), 0);
	cfg.profile = prof;
	cfg.aspace = lc.as;
	cfg.weight = HWT_PTF_WEIGHT_TIME;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	ptl_decode(&lc, ptf, HWT_DEC_ENGINE_FAST);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	call_of(ptf, "leaf", &leaf);
	call_of(ptf, "work", &disp);
	assert_true(leaf.timed);
	assert_int_equal(leaf.incl_ns, 0);
	assert_int_equal(leaf.buckets[hwt_rep_quantize_bucket(0)], 1000);
	assert_true(disp.incl_ns > 0);
	assert_true(disp.self_ns > 0);
	assert_true(hwt_rep_profile_stats(prof)->weight > disp.incl_ns);
	hwt_ptf_free(ptf);
	hwt_rep_profile_free(prof);
	ptl_close(&lc);
	ptl_close(&l);
}

/* Filtered to work, whose calls leave the traced range: the same profile
 * from records (events and all), from batches and from the decoder's call
 * tree (which takes no event that carries no instructions, and stays in
 * tree mode across them). work's calls are seen, their callees are not. */
static void test_known_profile_filtered(void **state)
{
	struct hwt_rep_render_config rc;
	struct hwt_ptf_call_stats leaf, disp;
	struct hwt_ptf_stats st;
	struct hwt_buf out;
	struct ptl l;
	struct hwt_rep_profile *prof;
	struct hwt_ptf_config cfg;
	struct hwt_ptf *ptf;

	(void)state;
	need_known();
	ptl_open(&l, K.filt);
	hwt_rep_render_config_init(&rc);
	rc.format = HWT_REP_FMT_FOLDED;
	rc.annotate = false;
	/* Records: the calls view takes every record, times and all. */
	assert_int_equal(hwt_rep_profile_alloc(&prof, NULL), 0);
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_PROFILE | HWT_PTF_CALLS;
	cfg.aspace = l.as;
	cfg.profile = prof;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	l.cfg.flags |= hwt_ptf_dec_flags(&cfg);
	ptl_decode(&l, ptf, HWT_DEC_ENGINE_FAST);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	call_of(ptf, "leaf", &leaf);
	call_of(ptf, "dispatch", &disp);
	assert_int_equal(leaf.calls, 1000);
	assert_int_equal(disp.calls, 1000);
	/* Untraced callees: no instructions of theirs. */
	assert_int_equal(leaf.incl_insns, 0);
	assert_int_equal(disp.incl_insns, 0);
	hwt_ptf_stats(ptf, &st);
	assert_true(st.insns > 1000 * 5);
	assert_int_equal(hwt_rep_profile_stats(prof)->weight, st.insns);
	hwt_buf_init(&out);
	assert_int_equal(hwt_rep_render(prof, &rc, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	assert_true(hwt_test_contains((char *)out.data, ";work "));
	hwt_ptf_free(ptf);
	hwt_rep_profile_free(prof);

	for (int no_tree = 0; no_tree < 2; no_tree++) {
		struct hwt_ptf_stats st2;

		profile_path_agrees(&l, &cfg, no_tree, &st, &rc, (const char *)out.data, &st2);
	}
	hwt_buf_fini(&out);
	ptl_close(&l);
}

/* ptflow's sink with what reaches it counted: records (block records,
 * returns out of older frames) and the calls of its tree. */
struct csink {
	struct hwt_dec_sink inner;
	struct hwt_dec_tree tree;
	uint64_t blocks, unknown, events, tops, bases;
};

static int cs_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct csink *c = ctx;

	c->blocks += rec->type == HWT_DEC_REC_BLOCK;
	c->events += rec->type == HWT_DEC_REC_EVENT;
	c->unknown += rec->type == HWT_DEC_REC_RETURN && (rec->flags & HWT_DEC_RF_UNKNOWN_FRAME);
	return c->inner.rec(c->inner.ctx, rec);
}

static int cs_batch(void *ctx, const struct hwt_dec_batch *b)
{
	struct csink *c = ctx;

	for (size_t i = 0; i < b->n; i++)
		c->unknown += b->e[i].type == HWT_DEC_REC_RETURN &&
			      (b->e[i].flags & HWT_DEC_RF_UNKNOWN_FRAME);
	return c->inner.batch(c->inner.ctx, b);
}

static int cs_top(void *ctx, const struct hwt_dec_tree_at *at, uint32_t *node)
{
	struct csink *c = ctx;

	c->tops++;
	return c->inner.tree->top(c->inner.ctx, at, node);
}

static int cs_child(void *ctx, const struct hwt_dec_tree_at *at, uint32_t parent, uint64_t to,
		    uint32_t *node)
{
	struct csink *c = ctx;

	return c->inner.tree->child(c->inner.ctx, at, parent, to, node);
}

static int cs_sync(void *ctx, const struct hwt_dec_tree_at *at, uint32_t node)
{
	struct csink *c = ctx;

	return c->inner.tree->sync(c->inner.ctx, at, node);
}

static int cs_counts(void *ctx, const struct hwt_dec_tree_counts *counts)
{
	struct csink *c = ctx;

	return c->inner.tree->counts(c->inner.ctx, counts);
}

static int cs_base(void *ctx, const struct hwt_dec_rec *rec, struct hwt_dec_tree_base *out)
{
	struct csink *c = ctx;

	c->bases++;
	return c->inner.tree->base(c->inner.ctx, rec, out);
}

/* l decoded by engine into ptf through a counting sink (flags: the
 * decoder's, with l's; tree: with ptflow's call tree). */
static void decode_counted(struct ptl *l, struct hwt_ptf *ptf, uint32_t engine, uint32_t flags,
			   bool tree, struct csink *c)
{
	struct hwt_dec_sink sink;

	memset(c, 0, sizeof(*c));
	hwt_ptf_sink(ptf, &c->inner);
	assert_non_null(c->inner.tree);
	c->tree = (struct hwt_dec_tree){cs_top, cs_child, cs_sync, cs_counts, cs_base};
	sink = c->inner;
	sink.ctx = c;
	sink.rec = cs_rec;
	sink.batch = cs_batch;
	sink.tree = tree ? &c->tree : NULL;
	ptl_decode_sink(l, &sink, engine, flags);
}

/* Filtered to leaf and op_a, called from untraced code and calling
 * nothing: the depth-0 code changes 3000 times (1500 enables into them,
 * 1500 returns out of them to untraced code) and no call is seen. The
 * decoder's call tree begins at the first depth-0 block and stands for
 * them: base() is asked about each block and return target once (it
 * holds to its answers), not once per change, and no block record is
 * left. The profile is the records' (the calls view's), and each function
 * has exactly the instructions the whole program's trace gives it. */
static void test_known_depth0_tree(void **state)
{
	static const uint32_t engines[] = {HWT_DEC_ENGINE_FAST, HWT_DEC_ENGINE_LIBIPT};
	struct hwt_rep_render_config rc;
	struct hwt_ptf_call_stats leaf, op_a;
	struct hwt_rep_profile *prof;
	struct hwt_ptf_config cfg;
	struct hwt_ptf_stats st;
	struct hwt_ptf *ptf;
	struct hwt_buf out;
	struct csink c0;
	char want[256];
	struct ptl l;

	(void)state;
	need_known();
	/* The ground truth: the whole program's trace. */
	ptl_open(&l, K.path);
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_CALLS;
	cfg.aspace = l.as;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	ptl_decode(&l, ptf, HWT_DEC_ENGINE_FAST);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	call_of(ptf, "leaf", &leaf);
	call_of(ptf, "op_a", &op_a);
	assert_int_equal(leaf.calls, 1000);
	assert_int_equal(op_a.calls, 500);
	assert_int_equal(leaf.self_insns, leaf.incl_insns);
	hwt_ptf_free(ptf);
	ptl_close(&l);

	ptl_open(&l, K.leaves);
	cfg.aspace = l.as;
	hwt_rep_render_config_init(&rc);
	rc.format = HWT_REP_FMT_FOLDED;
	rc.annotate = false;
	snprintf(want, sizeof(want),
		 "ptflow_known;[before the trace];leaf %" PRIu64
		 "\nptflow_known;[before the trace];op_a %" PRIu64 "\n",
		 leaf.self_insns, op_a.self_insns);
	/* Records (the calls view takes every record). */
	assert_int_equal(hwt_rep_profile_alloc(&prof, NULL), 0);
	cfg.views = HWT_PTF_PROFILE | HWT_PTF_CALLS;
	cfg.profile = prof;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	ptl_decode(&l, ptf, HWT_DEC_ENGINE_FAST);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	hwt_ptf_stats(ptf, &st);
	assert_int_equal(st.insns, leaf.self_insns + op_a.self_insns);
	assert_int_equal(st.calls, 0);
	assert_int_equal(st.unknown_returns, 1500);
	hwt_buf_init(&out);
	assert_int_equal(hwt_rep_render(prof, &rc, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	assert_string_equal((char *)out.data, want);
	hwt_buf_fini(&out);
	hwt_ptf_free(ptf);
	hwt_rep_profile_free(prof);

	/* The profile alone through batches, block records at depth 0
	 * only: what the tree stands for. */
	assert_int_equal(hwt_rep_profile_alloc(&prof, NULL), 0);
	cfg.views = HWT_PTF_PROFILE;
	cfg.profile = prof;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	decode_counted(&l, ptf, HWT_DEC_ENGINE_FAST, hwt_ptf_dec_flags(&cfg), false, &c0);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	hwt_ptf_stats(ptf, &st);
	assert_int_equal(st.insns, leaf.self_insns + op_a.self_insns);
	assert_int_equal(st.unknown_returns, 1500);
	/* Each depth-0 block a record: more than one per change. */
	assert_true(c0.blocks > 1500);
	assert_int_equal(c0.unknown, 1500);
	hwt_ptf_free(ptf);
	hwt_rep_profile_free(prof);

	/* The profile alone through the decoder's call tree. */
	for (size_t e = 0; e < HWT_ARRAY_SIZE(engines); e++) {
		struct hwt_ptf_stats st2;
		struct csink c;

		assert_int_equal(hwt_rep_profile_alloc(&prof, NULL), 0);
		cfg.views = HWT_PTF_PROFILE;
		cfg.profile = prof;
		assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
		decode_counted(&l, ptf, engines[e], hwt_ptf_dec_flags(&cfg), true, &c);
		assert_int_equal(hwt_ptf_finish(ptf), 0);
		hwt_ptf_stats(ptf, &st2);
		assert_int_equal(st2.insns, st.insns);
		assert_int_equal(st2.calls, 0);
		assert_int_equal(st2.unknown_returns, 1500);
		/* Every block and return it held counts as its record. */
		assert_int_equal(st2.records, c0.blocks + c0.unknown + c.events);
		hwt_buf_init(&out);
		assert_int_equal(hwt_rep_render(prof, &rc, &out), 0);
		assert_int_equal(hwt_buf_append(&out, "", 1), 0);
		assert_string_equal((char *)out.data, want);
		hwt_buf_fini(&out);
		/* The first block (the sink has no count of the thread yet)
		 * is a record; tree mode begins at the next one and goes on. */
		assert_true(c.blocks <= 1);
		assert_int_equal(c.unknown, 0);
		assert_true(c.tops >= 1 && c.tops <= 2);
		assert_true(c.bases < 40);
		hwt_ptf_free(ptf);
		hwt_rep_profile_free(prof);
	}
	ptl_close(&l);
}

/* Frames left without their returns in the middle of a stack
 * (ptflow_unwind: a jump out of five nested down frames back into mid,
 * whose return then goes back over them to top, two calls below main):
 * the same profile from records, batches and the decoder's call tree,
 * which pops the frames as the records do, and counts what follows in
 * top, whose 100 leaf calls are top's. */
static void test_unwind_profile(void **state)
{
	struct hwt_rep_render_config rc;
	struct hwt_ptf_call_stats leaf, down;
	struct hwt_ptf_stats st;
	struct hwt_buf out;
	struct ptl l;
	struct hwt_rep_profile *prof;
	struct hwt_ptf_config cfg;
	struct hwt_ptf *ptf;
	char path[512];

	(void)state;
	need_known();
	ptl_record(K.dir, "unwind", "", hwt_test_prog("ptflow_unwind"), "", path, sizeof(path));
	ptl_open(&l, path);
	hwt_rep_render_config_init(&rc);
	rc.format = HWT_REP_FMT_FOLDED;
	rc.annotate = false;
	assert_int_equal(hwt_rep_profile_alloc(&prof, NULL), 0);
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_PROFILE | HWT_PTF_CALLS;
	cfg.aspace = l.as;
	cfg.profile = prof;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	l.cfg.flags |= hwt_ptf_dec_flags(&cfg);
	ptl_decode(&l, ptf, HWT_DEC_ENGINE_FAST);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	call_of(ptf, "leaf", &leaf);
	call_of(ptf, "down", &down);
	assert_int_equal(leaf.calls, 150);
	assert_int_equal(leaf.returns, 150);
	assert_int_equal(down.calls, 5);
	hwt_ptf_stats(ptf, &st);
	/* mid's return pops the five down frames with its own. */
	assert_int_equal(st.unwound, 5);
	hwt_buf_init(&out);
	assert_int_equal(hwt_rep_render(prof, &rc, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	/* leaf is 4 instructions: 100 calls from top, 50 from mid after the
	 * jump (under the innermost down frame: no return left it). */
	assert_true(hwt_test_contains((char *)out.data, ";main;top;leaf 400\n"));
	assert_true(
	    hwt_test_contains((char *)out.data, ";mid;down;down;down;down;down;leaf 200\n"));
	hwt_ptf_free(ptf);
	hwt_rep_profile_free(prof);

	for (int no_tree = 0; no_tree < 2; no_tree++) {
		struct hwt_ptf_stats st2;

		profile_path_agrees(&l, &cfg, no_tree, &st, &rc, (const char *)out.data, &st2);
	}
	hwt_buf_fini(&out);
	ptl_close(&l);
}

static const struct hwt_ptf_insn_stats *find_cond(const struct hwt_ptf_insn_stats *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (rows[i].taken + rows[i].not_taken)
			return &rows[i];
	}
	return NULL;
}

static void test_known_branches(void **state)
{
	struct hwt_ptf_insn_stats rows[64];
	struct hwt_ptf_branch_info bi;
	struct hwt_ptf_call_stats leaf;
	struct hwt_ptf_config cfg;
	const struct hwt_ptf_insn_stats *jcc;
	struct hwt_ptf *ptf;
	struct hwt_buf out;
	struct ptl l;
	uint64_t sum = 0;

	(void)state;
	need_known();
	ptl_open(&l, K.path);
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_BRANCHES | HWT_PTF_CALLS;
	cfg.aspace = l.as;
	cfg.branch_func = "leaf";
	cfg.stacks_off = 0;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	ptl_decode(&l, ptf, HWT_DEC_ENGINE_FAST);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	call_of(ptf, "leaf", &leaf);
	assert_int_equal(hwt_ptf_branches_info(ptf, &bi), 0);
	assert_true(bi.found);
	assert_string_equal(bi.function, "leaf");
	assert_int_equal(bi.calls, 1000);
	assert_true(bi.ninsns > 5 && bi.ninsns <= 64);
	for (size_t i = 0; i < bi.ninsns; i++) {
		assert_int_equal(hwt_ptf_branches_get(ptf, i, &rows[i]), 0);
		assert_true(rows[i].decoded);
		assert_non_null(rows[i].file);
		assert_true(hwt_test_contains(rows[i].file, "ptflow_known.c"));
		sum += rows[i].count;
	}
	/* The instruction rows add up to leaf's own instructions. */
	assert_int_equal(sum, leaf.self_insns);
	assert_int_equal(bi.insns, leaf.self_insns);
	assert_int_equal(rows[0].offset, 0);
	assert_int_equal(rows[0].count, 1000);
	/* k % 10 < 7 holds 700 times: one way 700, the other 300. */
	jcc = find_cond(rows, bi.ninsns);
	assert_non_null(jcc);
	assert_int_equal(jcc->taken + jcc->not_taken, 1000);
	assert_true((jcc->taken == 700 && jcc->not_taken == 300) ||
		    (jcc->taken == 300 && jcc->not_taken == 700));
	/* The instruction after the jcc runs exactly when it falls through. */
	for (size_t i = 0; i + 1 < bi.ninsns; i++) {
		if (&rows[i] == jcc)
			assert_int_equal(rows[i + 1].count, jcc->not_taken);
	}
	/* The last instruction (ret) runs every call. */
	assert_int_equal(rows[bi.ninsns - 1].count, 1000);
	assert_int_equal(rows[bi.ninsns - 1].insn.branch, HWT_DEC_BR_RETURN);

	/* Stacks reaching leaf+0: one, 1000 times, leaf <- work <- main. */
	size_t ns;
	uint64_t total, count;
	const uint32_t *frames;
	int nf;

	assert_int_equal(hwt_ptf_stacks_count(ptf, &ns, &total), 0);
	assert_int_equal(ns, 1);
	assert_int_equal(total, 1000);
	nf = hwt_ptf_stacks_get(ptf, 0, &frames, &count);
	assert_true(nf >= 4);
	assert_int_equal(count, 1000);
	assert_string_equal(hwt_rep_frame_label(hwt_ptf_dict(ptf), frames[0]), "leaf");
	assert_string_equal(hwt_rep_frame_label(hwt_ptf_dict(ptf), frames[1]), "work");
	assert_string_equal(hwt_rep_frame_label(hwt_ptf_dict(ptf), frames[2]), "main");
	assert_string_equal(hwt_rep_frame_label(hwt_ptf_dict(ptf), frames[nf - 1]), "_start");

	hwt_buf_init(&out);
	assert_int_equal(hwt_ptf_branches_print(ptf, HWT_REP_FMT_TEXT, &out), 0);
	assert_int_equal(hwt_ptf_stacks_print(ptf, HWT_REP_FMT_TEXT, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	assert_true(
	    hwt_test_contains((char *)out.data, "taken 300 (30.0%), not taken 700 (70.0%)") ||
	    hwt_test_contains((char *)out.data, "taken 700 (70.0%), not taken 300 (30.0%)"));
	assert_true(hwt_test_contains((char *)out.data, "ptflow_known`work\n"));
	hwt_buf_fini(&out);
	hwt_ptf_free(ptf);

	/* dispatch's indirect call: op_a 500, op_b 300, op_c 200. */
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_BRANCHES;
	cfg.aspace = l.as;
	cfg.branch_func = "dispatch";
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	ptl_decode(&l, ptf, HWT_DEC_ENGINE_FAST);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	assert_int_equal(hwt_ptf_branches_info(ptf, &bi), 0);
	const struct hwt_ptf_insn_stats *ind = NULL;

	for (size_t i = 0; i < bi.ninsns; i++) {
		assert_int_equal(hwt_ptf_branches_get(ptf, i, &rows[i]), 0);
		if (rows[i].ntargets)
			ind = &rows[i];
	}
	assert_non_null(ind);
	assert_int_equal(ind->insn.branch, HWT_DEC_BR_IND_CALL);
	assert_int_equal(ind->count, 1000);
	assert_int_equal(ind->ntargets, 3);
	assert_string_equal(ind->targets[0].function, "op_a");
	assert_int_equal(ind->targets[0].count, 500);
	assert_int_equal(ind->targets[0].offset, 0);
	assert_string_equal(ind->targets[1].function, "op_b");
	assert_int_equal(ind->targets[1].count, 300);
	assert_string_equal(ind->targets[2].function, "op_c");
	assert_int_equal(ind->targets[2].count, 200);
	hwt_buf_init(&out);
	assert_int_equal(hwt_ptf_branches_print(ptf, HWT_REP_FMT_JSON, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	assert_true(hwt_test_contains((char *)out.data,
				      "\"count\":500,\"function\":\"op_a\",\"offset\":0}"));
	hwt_buf_fini(&out);
	hwt_ptf_free(ptf);

	/* rec+0 is reached by ten distinct stacks (depth 1 .. 10), 5 each. */
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_BRANCHES;
	cfg.aspace = l.as;
	cfg.branch_func = "rec";
	cfg.branch_off = 0;
	cfg.stacks_off = 0;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	ptl_decode(&l, ptf, HWT_DEC_ENGINE_FAST);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	assert_int_equal(hwt_ptf_branches_info(ptf, &bi), 0);
	assert_int_equal(bi.ninsns, 1);
	assert_int_equal(hwt_ptf_branches_get(ptf, 0, &rows[0]), 0);
	assert_int_equal(rows[0].count, 50);
	assert_int_equal(hwt_ptf_stacks_count(ptf, &ns, &total), 0);
	assert_int_equal(ns, 10);
	assert_int_equal(total, 50);
	for (size_t i = 0; i < ns; i++) {
		int d = 0;

		nf = hwt_ptf_stacks_get(ptf, i, &frames, &count);
		assert_int_equal(count, 5);
		while (d < nf && !strcmp(hwt_rep_frame_label(hwt_ptf_dict(ptf), frames[d]), "rec"))
			d++;
		assert_true(d >= 1 && d <= 10);
		assert_string_equal(hwt_rep_frame_label(hwt_ptf_dict(ptf), frames[d]), "main");
	}
	hwt_ptf_free(ptf);
	ptl_close(&l);
}

static size_t count_str(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void test_known_timeline(void **state)
{
	struct hwt_rep_timeline *tl;
	struct hwt_ptf_config cfg;
	struct hwt_ptf_stats st;
	struct hwt_ptf *ptf;
	struct hwt_buf out;
	struct ptl l;

	(void)state;
	need_known();
	ptl_open(&l, K.path);
	assert_int_equal(hwt_rep_timeline_alloc(&tl), 0);
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_TIMELINE;
	cfg.aspace = l.as;
	cfg.timeline = tl;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	ptl_decode(&l, ptf, HWT_DEC_ENGINE_FAST);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	hwt_ptf_stats(ptf, &st);
	hwt_buf_init(&out);
	assert_int_equal(hwt_rep_timeline_render(tl, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	/* Every call a span: 1000 of leaf, 50 of rec. */
	assert_int_equal(count_str((char *)out.data, "\"ph\":\"X\""), st.spans);
	assert_int_equal(count_str((char *)out.data, "\"name\":\"leaf\"}"), 1000);
	assert_int_equal(count_str((char *)out.data, "\"name\":\"rec\"}"), 50);
	assert_int_equal(count_str((char *)out.data, "\"name\":\"thread_name\""), 1);
	assert_int_equal(st.spans, st.calls);
	assert_int_equal(st.spans_merged, 0);
	hwt_buf_fini(&out);
	hwt_ptf_free(ptf);
	hwt_rep_timeline_free(tl);

	/* Every call short: runs merge. work's 2000 calls of leaf and
	 * dispatch become one span, main's work and five rec(9) another;
	 * a dispatch's one op and a rec's one rec stay single spans. */
	assert_int_equal(hwt_rep_timeline_alloc(&tl), 0);
	cfg.timeline = tl;
	cfg.timeline_min = UINT64_MAX;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	ptl_decode(&l, ptf, HWT_DEC_ENGINE_FAST);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	hwt_ptf_stats(ptf, &st);
	hwt_buf_init(&out);
	assert_int_equal(hwt_rep_timeline_render(tl, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	assert_int_equal(count_str((char *)out.data, "\"name\":\"leaf, dispatch (2000 calls)\"}"),
			 1);
	assert_int_equal(count_str((char *)out.data, "\"name\":\"work, rec (6 calls)\"}"), 1);
	assert_int_equal(count_str((char *)out.data, "\"name\":\"rec\"}"), 45);
	assert_int_equal(count_str((char *)out.data, "\"name\":\"op_b\"}"), 300);
	assert_int_equal(count_str((char *)out.data, "\"name\":\"leaf\"}"), 0);
	assert_int_equal(st.spans + st.spans_merged, st.calls);
	hwt_buf_fini(&out);
	hwt_ptf_free(ptf);
	hwt_rep_timeline_free(tl);

	/* Capped: 100 spans, the rest counted, an instant marks the cut. */
	assert_int_equal(hwt_rep_timeline_alloc(&tl), 0);
	cfg.timeline = tl;
	cfg.timeline_min = 0;
	cfg.timeline_max = 100;
	assert_int_equal(hwt_ptf_alloc(&ptf, &cfg), 0);
	ptl_decode(&l, ptf, HWT_DEC_ENGINE_FAST);
	assert_int_equal(hwt_ptf_finish(ptf), 0);
	hwt_ptf_stats(ptf, &st);
	assert_int_equal(st.spans, 100);
	assert_int_equal(st.spans + st.spans_dropped, st.calls);
	hwt_buf_init(&out);
	assert_int_equal(hwt_rep_timeline_render(tl, &out), 0);
	assert_int_equal(hwt_buf_append(&out, "", 1), 0);
	assert_int_equal(count_str((char *)out.data, "\"ph\":\"X\""), 100);
	assert_int_equal(count_str((char *)out.data, "span limit reached"), 1);
	hwt_buf_fini(&out);
	hwt_ptf_free(ptf);
	hwt_rep_timeline_free(tl);
	ptl_close(&l);
}

/* ------------------------------------------------------------------------ */
/* The decoder's call tree (struct hwt_dec_tree) against records            */

/* Deeper than the stacks ptflow keeps (its PTF_MAX_DEPTH, 65536). */
#define TREE_DEEP (65536 + 20)

/* One side of test_tree_protocol: a ptflow fed either records, or the tree
 * as the decoder drives it (decoder/flow.c: top() at the first call, then
 * child() per new (parent, callee), pops, sync() before any record and
 * when a return leaves the anchor's frame, counts() at the end; a cache of
 * (parent, callee) in front of child(), as the decoder's). */
struct tside {
	struct hwt_rep_profile *prof;
	struct hwt_ptf *ptf;
	struct hwt_dec_sink sink;
	bool tree;
	/* the decoder's state of the thread */
	uint64_t insns, mark;
	uint32_t depth;
	bool tmode;
	uint32_t tlo, anchor, tnode;
	uint32_t *cnode; /* per frame */
	struct hwt_dec_tree_count *tc;
	size_t ntc;
	uint64_t calls, returns, children;
	struct {
		uint32_t parent;
		uint64_t to;
		uint32_t node;
	} cache[64];
	size_t ncache;
};

static void tside_init(struct tside *ts, bool tree)
{
	struct hwt_ptf_config cfg;

	memset(ts, 0, sizeof(*ts));
	ts->tree = tree;
	assert_int_equal(hwt_rep_profile_alloc(&ts->prof, NULL), 0);
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_PROFILE;
	cfg.profile = ts->prof;
	assert_int_equal(hwt_ptf_alloc(&ts->ptf, &cfg), 0);
	hwt_ptf_sink(ts->ptf, &ts->sink);
	assert_non_null(ts->sink.tree);
	ts->cnode = calloc(TREE_DEEP + 64, sizeof(*ts->cnode));
	ts->ntc = 1 << 20;
	ts->tc = calloc(ts->ntc, sizeof(*ts->tc));
	assert_non_null(ts->cnode);
	assert_non_null(ts->tc);
}

static void tside_at(const struct tside *ts, struct hwt_dec_tree_at *at, uint32_t depth)
{
	memset(at, 0, sizeof(*at));
	at->pid = 10;
	at->tid = 11;
	at->depth = depth;
	at->insns = ts->insns;
}

static void tside_self(struct tside *ts)
{
	ts->tc[ts->tnode].self += ts->insns - ts->mark;
	ts->mark = ts->insns;
}

static void tside_exit(struct tside *ts)
{
	struct hwt_dec_tree_at at;

	if (!ts->tmode)
		return;
	ts->tmode = false;
	tside_self(ts);
	tside_at(ts, &at, ts->depth);
	assert_int_equal(ts->sink.tree->sync(ts->sink.ctx, &at, ts->tnode), 0);
}

/* n instructions, then a call to `to`. */
static void tside_call(struct tside *ts, uint64_t n, uint64_t to)
{
	const struct hwt_dec_tree *tr = ts->sink.tree;
	struct hwt_dec_tree_at at;
	uint32_t node = HWT_DEC_NODE_NONE;
	struct hwt_dec_rec r;

	ts->insns += n;
	if (ts->tree && !ts->tmode) {
		tside_at(ts, &at, ts->depth);
		assert_int_equal(tr->top(ts->sink.ctx, &at, &node), 0);
		if (node != HWT_DEC_NODE_NONE) {
			ts->tmode = true;
			ts->tlo = ts->depth;
			ts->anchor = ts->tnode = node;
			ts->mark = ts->insns;
		}
	}
	if (ts->tmode) {
		size_t k;

		tside_self(ts);
		node = HWT_DEC_NODE_NONE;
		for (k = 0; k < ts->ncache; k++) {
			if (ts->cache[k].parent == ts->tnode && ts->cache[k].to == to) {
				node = ts->cache[k].node;
				ts->tc[node].calls++;
				ts->calls++;
				break;
			}
		}
		if (node == HWT_DEC_NODE_NONE) {
			tside_at(ts, &at, ts->depth + 1);
			assert_int_equal(tr->child(ts->sink.ctx, &at, ts->tnode, to, &node), 0);
			ts->children += node != HWT_DEC_NODE_NONE;
			if (node != HWT_DEC_NODE_NONE && ts->ncache < HWT_ARRAY_SIZE(ts->cache)) {
				ts->cache[ts->ncache].parent = ts->tnode;
				ts->cache[ts->ncache].to = to;
				ts->cache[ts->ncache++].node = node;
			}
		}
		if (node != HWT_DEC_NODE_NONE) {
			assert_true(node < ts->ntc);
			ts->cnode[ts->depth++] = node;
			ts->tnode = node;
			return;
		}
		tside_exit(ts);
	}
	ts->depth++;
	r = call(to, ts->insns, ts->depth, 0);
	feed(ts->ptf, &r);
}

/* n instructions, then a return to `to` (out of the newest frame, or out
 * of one older than the trace at depth 0). */
static void tside_ret(struct tside *ts, uint64_t n, uint64_t to)
{
	struct hwt_dec_rec r;

	ts->insns += n;
	if (ts->tmode && ts->depth && ts->depth - 1 >= ts->tlo) {
		tside_self(ts);
		ts->depth--;
		ts->returns++;
		ts->tnode = ts->depth > ts->tlo ? ts->cnode[ts->depth - 1] : ts->anchor;
		return;
	}
	tside_exit(ts);
	if (!ts->depth) {
		r = ret(to, ts->insns, 0, 0, HWT_DEC_RF_UNKNOWN_FRAME);
	} else {
		ts->depth--;
		r = ret(to, ts->insns, ts->depth, 0, 0);
	}
	feed(ts->ptf, &r);
}

/* n instructions, then a block record at depth 0 (ip's code). */
static void tside_block(struct tside *ts, uint64_t n, uint64_t ip)
{
	struct hwt_dec_rec r;

	tside_exit(ts);
	r = block(ip, (uint32_t)n, &ts->insns, ts->depth, 0);
	feed(ts->ptf, &r);
}

static void tside_finish(struct tside *ts, struct hwt_buf *out, struct hwt_ptf_stats *st)
{
	struct hwt_rep_render_config rc;
	struct hwt_dec_tree_counts c;

	tside_exit(ts);
	memset(&c, 0, sizeof(c));
	c.node = ts->tc;
	c.n = ts->ntc;
	c.calls = ts->calls;
	c.returns = ts->returns;
	if (ts->tree)
		assert_int_equal(ts->sink.tree->counts(ts->sink.ctx, &c), 0);
	assert_int_equal(hwt_ptf_finish(ts->ptf), 0);
	hwt_ptf_stats(ts->ptf, st);
	hwt_rep_render_config_init(&rc);
	rc.format = HWT_REP_FMT_FOLDED;
	rc.by_comm = false;
	rc.annotate = false;
	hwt_buf_init(out);
	assert_int_equal(hwt_rep_render(ts->prof, &rc, out), 0);
	assert_int_equal(hwt_buf_append(out, "", 1), 0);
	hwt_ptf_free(ts->ptf);
	hwt_rep_profile_free(ts->prof);
	free(ts->cnode);
	free(ts->tc);
}

/* Returns out of frames older than the trace ("[before the trace]"),
 * depth-0 code, recursion, and a stack deeper than ptflow keeps (where
 * ptflow counts calls it does not follow and child() declines): the same
 * stacks and counts through the tree as through records. */
static void test_tree_protocol(void **state)
{
	struct tside side[2];
	struct hwt_ptf_stats st[2];
	struct hwt_buf out[2];

	(void)state;
	for (int k = 0; k < 2; k++) {
		struct tside *ts = &side[k];

		tside_init(ts, k == 1);
		tside_call(ts, 2, 0x2000);
		tside_ret(ts, 3, 0x1005);
		tside_ret(ts, 1, 0x5000); /* out of a frame before the trace */
		tside_block(ts, 2, 0x5000);
		for (int i = 0; i < 3; i++) {
			tside_call(ts, 1, 0x2000);
			tside_call(ts, 2, 0x3000);
			tside_call(ts, 4, 0x4000);
			tside_ret(ts, 1, 0x3005);
			tside_ret(ts, 2, 0x2005);
			tside_call(ts, 3, 0x4000);
			tside_ret(ts, 1, 0x2009);
			tside_ret(ts, 1, 0x5005);
			tside_block(ts, 1, 0x5005);
		}
		/* Recursion past the deepest stack ptflow keeps, and back. */
		tside_call(ts, 1, 0x2000);
		for (int i = 0; i < TREE_DEEP; i++)
			tside_call(ts, 1 + (i & 3), 0x6000);
		for (int i = 0; i < TREE_DEEP; i++)
			tside_ret(ts, 2, 0x6004);
		tside_call(ts, 1, 0x4000);
		tside_ret(ts, 1, 0x2010);
		tside_ret(ts, 1, 0x5010);
		tside_ret(ts, 1, 0x7000); /* and again out of an older frame */
		tside_call(ts, 1, 0x2000);
		tside_call(ts, 1, 0x3000); /* open at the end */
		tside_finish(ts, &out[k], &st[k]);
	}
	assert_true(hwt_test_contains((char *)out[0].data,
				      "\n[before the trace];[unknown];0x2000;0x3000;0x4000 3\n"));
	assert_true(hwt_test_contains((char *)out[0].data, ";0x6000;0x6000;0x6000 "));
	assert_string_equal((char *)out[1].data, (char *)out[0].data);
	assert_int_equal(st[1].insns, st[0].insns);
	assert_int_equal(st[1].calls, st[0].calls);
	assert_int_equal(st[1].returns, st[0].returns);
	assert_int_equal(st[1].unknown_returns, st[0].unknown_returns);
	assert_int_equal(st[1].functions, st[0].functions);
	assert_int_equal(st[1].too_deep, st[0].too_deep);
	assert_int_equal(st[1].open_frames, st[0].open_frames);
	assert_true(st[0].too_deep > 0);
	/* The tree took the calls up to the limit, and repeated ones from
	 * its cache. */
	assert_true(side[1].children > 65000);
	assert_true(side[1].calls > 10);
	assert_true(side[1].returns > 10);
	hwt_buf_fini(&out[0]);
	hwt_buf_fini(&out[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tree_protocol),     cmocka_unit_test(test_synthetic),
	    cmocka_unit_test(test_stream_restart),    cmocka_unit_test(test_call_cache),
	    cmocka_unit_test(test_config_errors),     cmocka_unit_test(test_known_calls),
	    cmocka_unit_test(test_known_profile),     cmocka_unit_test(test_known_profile_filtered),
	    cmocka_unit_test(test_known_depth0_tree), cmocka_unit_test(test_unwind_profile),
	    cmocka_unit_test(test_known_branches),    cmocka_unit_test(test_known_timeline),
	};

	return cmocka_run_group_tests(tests, setup_known, teardown_known);
}
