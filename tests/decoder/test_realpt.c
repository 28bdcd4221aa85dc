/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/decoder/test_realpt.c - the decoder on traces real CPUs wrote
 * (tests/data/real-pt, see its README.md), against libipt 2.0.5's ptxed:
 * every instruction address ptxed decoded, in ptxed's order, and as many
 * decode errors as ptxed reports; through the FAST and LIBIPT engines,
 * whole, fed in pieces of several sizes and decoded on two threads with a
 * small window; FAST's records equal LIBIPT's, and FAST leaves nothing to
 * libipt: where libipt fails (ptxed's errors), FAST fails the same way.
 *
 * The traces carry what our own emulator does not write: PIP and VMCS in
 * every PSB+, MODE.TSX, CBR, PSB+ after PSB+ while packet generation is
 * off (without FUP or MODE.Exec), and PSB+ with a FUP that a TIP.PGE to
 * the same address follows: a segment decodes right only from the state
 * the one before left.
 *
 * A trace run together with itself (avscript_32 twice) has a join where
 * libipt fails with "bad query": tracing is off after the first copy's
 * last disable, and the next PSB+'s MODE.TSX has the FUP's address, which
 * libipt's block decoder walks the code to, tracing off or not, up to a
 * branch that needs trace. FAST fails there the same way.
 *
 * Records are compared in binary (struct rec: every field
 * dectest_rec_text() shows; as text they were most of the test's time),
 * in buffers kept from decode to decode, and ptxed's instructions are read
 * once per trace.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <intel-pt.h>

#include "decoder/decoder.h"
#include "decoder/pkt.h"
#include "tests/lib/testutil.h"

/* ptxed's view of a trace. */
struct truth {
	uint64_t *ips;
	size_t n;
	unsigned int errors;
};

static void read_truth(const char *dir, struct truth *t)
{
	struct hwt_test_run r;
	size_t cap = 0;

	memset(t, 0, sizeof(*t));
	hwt_test_run(&r, "zstdcat %s/ptxed-insn.txt.zst", dir);
	assert_int_equal(r.status, 0);
	for (const char *p = r.out; *p;) {
		const char *nl = strchr(p, '\n');
		char *end;
		uint64_t ip = strtoull(p, &end, 16);

		if (end - p == 16 && *end == ' ') {
			if (t->n == cap) {
				cap = cap ? 2 * cap : 4096;
				t->ips = realloc(t->ips, cap * sizeof(*t->ips));
				assert_non_null(t->ips);
			}
			t->ips[t->n++] = ip;
		} else if (*p == '[' && strstr(p, "error") && (!nl || strstr(p, "error") < nl)) {
			t->errors++;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	hwt_test_run_free(&r);
}

struct trace {
	char dir[1024];
	uint8_t *pt;
	size_t len;
	const struct truth *truth; /* ptxed's (truths[]), or rep */
	struct truth rep;	   /* repeat()'s */
};

/* ptxed's instructions of each trace, read once (unpacked, a million
 * instructions are 40 MB of text). */
static struct {
	char dir[1024];
	struct truth truth;
} truths[4];

static const struct truth *truth_of(const char *dir)
{
	size_t i = 0;

	while (i < HWT_ARRAY_SIZE(truths) && truths[i].dir[0] && strcmp(truths[i].dir, dir))
		i++;
	assert_true(i < HWT_ARRAY_SIZE(truths));
	if (!truths[i].dir[0]) {
		snprintf(truths[i].dir, sizeof(truths[i].dir), "%s", dir);
		read_truth(dir, &truths[i].truth);
	}
	return &truths[i].truth;
}

static void load(struct trace *tr, const char *name)
{
	char path[1100];

	memset(tr, 0, sizeof(*tr));
	snprintf(tr->dir, sizeof(tr->dir), "%s/real-pt/%s", hwt_test_testdata(), name);
	snprintf(path, sizeof(path), "%s/trace.pt", tr->dir);
	tr->pt = (uint8_t *)hwt_test_read_file(path, &tr->len);
	if (!tr->pt)
		fail_msg("%s is missing (tests/data is part of the tree)", path);
	tr->truth = truth_of(tr->dir);
}

static void unload(struct trace *tr)
{
	free(tr->pt);
	free(tr->rep.ips);
}

/* The code pages, as raw.args gives them to ptxed (--raw FILE:ADDR): all
 * of them; all but one; every other one. */
enum keep { KEEP_ALL, KEEP_BUT, KEEP_PARITY };

static unsigned int add_code(struct hwt_dec_image *img, const char *dir, enum keep keep,
			     unsigned int k)
{
	char path[1100], *args, *save = NULL;
	size_t len;
	unsigned int n = 0, i = 0;

	snprintf(path, sizeof(path), "%s/raw.args", dir);
	args = hwt_test_read_file(path, &len);
	assert_non_null(args);
	for (char *tok = strtok_r(args, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		char *colon;

		if (!strcmp(tok, "--raw"))
			continue;
		colon = strrchr(tok, ':');
		assert_non_null(colon);
		*colon = 0;
		snprintf(path, sizeof(path), "%s/%s", dir, tok);
		i++;
		if ((keep == KEEP_BUT && i - 1 == k) || (keep == KEEP_PARITY && (i - 1) % 2 == k))
			continue;
		assert_int_equal(
		    hwt_dec_image_add_file(img, path, 0, UINT64_MAX, strtoull(colon + 1, NULL, 0)),
		    0);
		n++;
	}
	free(args);
	assert_true(keep != KEEP_ALL || n > 0);
	return i;
}

/* A record as the checks compare it: every field dectest_rec_text()
 * shows, those of its type in a..e and k (a gap's text in struct
 * decoded's whats). */
struct rec {
	uint32_t type, flags;
	int32_t pid, tid;
	uint32_t depth, k;
	uint64_t insns, tsc, time, offset;
	uint64_t a, b, c, d, e;
};

/* A decode's records and instructions. The buffers stay from decode to
 * decode (decode() empties them): a decode of a million instructions
 * fills tens of MB. */
struct decoded {
	uint64_t *ips;
	size_t n, cap;
	struct rec *recs;
	size_t nrecs, cap_recs;
	char *whats; /* each gap's text and a newline, in order */
	size_t whats_len, whats_cap;
	unsigned int gaps;
	unsigned int undecodable; /* PTXED: blocks cut short (on_rec()) */
	/* Each gap: the instructions before it, whether it is libipt's
	 * "compressed return without call" and at which return. */
	struct gap_at {
		size_t n;
		bool retstack;
		uint64_t ip;
	} * gap_at;
	size_t gap_cap;
	struct hwt_dec_stats stats;
};

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return p;
	*cap = need * 2;
	p = realloc(p, *cap * size);
	assert_non_null(p);
	return p;
}

/* The two decodes the checks compare, for the whole program (a buffer
 * new to a decode is mostly page faults, under ASan most of all). */
static struct decoded bufs[8];

static void rec_of(struct decoded *d, const struct hwt_dec_rec *hr)
{
	struct rec *r;

	d->recs = grow(d->recs, &d->cap_recs, d->nrecs + 1, sizeof(*d->recs));
	r = &d->recs[d->nrecs++];
	memset(r, 0, sizeof(*r));
	r->type = hr->type;
	r->flags = hr->flags;
	r->pid = hr->pid;
	r->tid = hr->tid;
	r->depth = hr->depth;
	r->insns = hr->insns;
	r->tsc = hr->tsc;
	r->time = hr->time;
	r->offset = hr->offset;
	switch (hr->type) {
	case HWT_DEC_REC_BLOCK:
		r->a = hr->u.block.ip;
		r->b = hr->u.block.end_ip;
		r->c = hr->u.block.next_ip;
		r->k = hr->u.block.ninsn;
		r->d = hr->u.block.branch | (uint64_t)hr->u.block.mode << 8;
		break;
	case HWT_DEC_REC_CALL:
		r->a = hr->u.call.from;
		r->b = hr->u.call.to;
		r->c = hr->u.call.ret_addr;
		r->k = hr->u.call.branch;
		break;
	case HWT_DEC_REC_RETURN:
		r->a = hr->u.ret.from;
		r->b = hr->u.ret.to;
		r->c = hr->u.ret.func;
		r->d = hr->u.ret.call_tsc;
		r->e = hr->u.ret.insns;
		r->k = hr->u.ret.branch;
		break;
	case HWT_DEC_REC_EVENT:
		r->k = hr->u.event.type;
		r->a = hr->u.event.ip;
		r->b = hr->u.event.at;
		r->c = hr->u.event.payload;
		r->d = hr->u.event.mode | (uint64_t)hr->u.event.resumed << 32;
		break;
	case HWT_DEC_REC_GAP: {
		const char *what = hr->u.gap.what ? hr->u.gap.what : "";
		size_t len = strlen(what);

		r->k = hr->u.gap.kind;
		r->a = hr->u.gap.ip;
		r->b = hr->u.gap.size;
		r->c = (uint32_t)hr->u.gap.err;
		r->d = hr->u.gap.sync;
		d->whats = grow(d->whats, &d->whats_cap, d->whats_len + len + 2, 1);
		memcpy(d->whats + d->whats_len, what, len);
		d->whats_len += len;
		d->whats[d->whats_len++] = '\n';
		d->whats[d->whats_len] = 0;
		break;
	}
	case HWT_DEC_REC_SWITCH:
		r->a = (uint32_t)hr->u.sw.prev_pid;
		r->b = (uint32_t)hr->u.sw.prev_tid;
		break;
	default:
		break;
	}
}

/* Whether the instruction at ip of a block record is one (the walk of
 * hwt_dec_block_insns() does not decode a block's last). */
static bool decodes(const struct hwt_dec_rec *rec, uint64_t ip)
{
	struct hwt_dec_insn insn;

	return rec->u.block.image &&
	       hwt_dec_insn_decode(rec->u.block.image, ip, (enum hwt_dec_mode)rec->u.block.mode,
				   &insn) == 0;
}

static int on_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct decoded *d = ctx;
	int n;

	rec_of(d, rec);
	if (rec->type == HWT_DEC_REC_GAP) {
		d->gap_at = grow(d->gap_at, &d->gap_cap, d->gaps + 1, sizeof(*d->gap_at));
		d->gap_at[d->gaps].n = d->n;
		d->gap_at[d->gaps].retstack =
		    rec->u.gap.what && !strcmp(rec->u.gap.what, pt_errstr(pte_retstack_empty));
		d->gap_at[d->gaps].ip = rec->u.gap.ip;
		d->gaps++;
	}
	if (rec->type != HWT_DEC_REC_BLOCK)
		return 0;
	d->ips = grow(d->ips, &d->cap, d->n + rec->u.block.ninsn, sizeof(*d->ips));
	n = hwt_dec_block_insns(rec, d->ips + d->n, rec->u.block.ninsn);
	if (!rec->u.block.bb && n >= 1 &&
	    ((uint32_t)n < rec->u.block.ninsn || !decodes(rec, d->ips[d->n + (size_t)n - 1]))) {
		/* A block of libipt's (PTXED engine) that runs into bytes
		 * that are no instruction (libipt's length decoder takes
		 * more than ours, which is xed's: ptxed prints "xed decode
		 * error" there and skips the rest of the block): what runs
		 * before it. */
		n--;
		d->undecodable++;
	} else {
		assert_int_equal(n, rec->u.block.ninsn);
	}
	d->n += (size_t)n;
	return 0;
}

struct variant {
	uint32_t engine;
	unsigned int threads;
	size_t window;
	size_t piece;	 /* 0: one hwt_dec_decode */
	size_t seg;	 /* cfg.segment_bytes (0: the default) */
	const char *cpu; /* NULL: none (ptxed's default: no errata) */
	enum keep keep;	 /* the code the image gets */
	unsigned int k;
};

/* Decodes tr as v says into d (emptied first). */
static void decode(const struct trace *tr, const struct variant *v, struct decoded *d)
{
	struct hwt_dec_icache *ic;
	struct hwt_dec_image *img;
	struct hwt_dec *dec;
	struct hwt_dec_config cfg;
	struct hwt_dec_sink sink = {sizeof(sink), 0, on_rec, d, NULL, NULL, NULL};

	d->n = d->nrecs = d->whats_len = 0;
	d->gaps = d->undecodable = 0;
	assert_int_equal(hwt_dec_icache_alloc(&ic, NULL), 0);
	assert_int_equal(hwt_dec_image_alloc(&img, ic, "real-pt"), 0);
	add_code(img, tr->dir, v->keep, v->k);
	hwt_dec_config_init(&cfg);
	if (v->cpu)
		assert_int_equal(hwt_dec_cpu_parse(&cfg.cpu, v->cpu), 0);
	cfg.engine = v->engine;
	cfg.threads = v->threads;
	cfg.window = v->window;
	if (v->seg)
		cfg.segment_bytes = v->seg;
	assert_int_equal(hwt_dec_alloc(&dec, &cfg, ic), 0);
	assert_int_equal(hwt_dec_set_context(dec, 1, 1, img), 0);
	assert_int_equal(hwt_dec_add_sink(dec, &sink), 0);
	if (v->piece) {
		for (size_t off = 0; off < tr->len; off += v->piece)
			assert_int_equal(
			    hwt_dec_feed(dec, tr->pt + off,
					 tr->len - off < v->piece ? tr->len - off : v->piece),
			    0);
		assert_int_equal(hwt_dec_finish(dec), 0);
	} else {
		assert_int_equal(hwt_dec_decode(dec, tr->pt, tr->len), 0);
	}
	hwt_dec_stats(dec, &d->stats);
	hwt_dec_free(dec);
	hwt_dec_image_put(img);
	hwt_dec_icache_free(ic);
}

static void decoded_free(struct decoded *d)
{
	free(d->ips);
	free(d->recs);
	free(d->whats);
	free(d->gap_at);
	memset(d, 0, sizeof(*d));
}

static const char *rec_str(const struct rec *r, char *buf, size_t size)
{
	if (!r)
		return "(none)";
	snprintf(buf, size,
		 "type %u flags %x pid %d tid %d depth %u insns %" PRIu64 " tsc %" PRIx64
		 " time %" PRIx64 " offset %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64
		 " %" PRIx64 " %u",
		 r->type, r->flags, r->pid, r->tid, r->depth, r->insns, r->tsc, r->time, r->offset,
		 r->a, r->b, r->c, r->d, r->e, r->k);
	return buf;
}

static int free_all(void **state)
{
	(void)state;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(truths); i++)
		free(truths[i].truth.ips);
	for (size_t i = 0; i < HWT_ARRAY_SIZE(bufs); i++)
		decoded_free(&bufs[i]);
	return 0;
}

/* The index of the first record that differs, or of the record after
 * both's last. */
static size_t first_diff(const struct decoded *want, const struct decoded *got)
{
	size_t i = 0;

	while (i < want->nrecs && i < got->nrecs &&
	       !memcmp(&want->recs[i], &got->recs[i], sizeof(struct rec)))
		i++;
	return i;
}

/* Whether want and got have the same records and gap texts. */
static bool records_equal(const struct decoded *want, const struct decoded *got)
{
	return want->nrecs == got->nrecs && first_diff(want, got) == want->nrecs &&
	       want->whats_len == got->whats_len &&
	       (!want->whats_len || !memcmp(want->whats, got->whats, want->whats_len));
}

/* The same records, field by field (fails naming the first that
 * differs). */
static void same_records(const struct decoded *want, const struct decoded *got, const char *what)
{
	size_t i = first_diff(want, got);

	if (i < want->nrecs || i < got->nrecs) {
		char w[320], g[320];

		fail_msg("%s: record %zu differs (%zu and %zu records):\n%s\n%s", what, i,
			 want->nrecs, got->nrecs,
			 rec_str(i < want->nrecs ? &want->recs[i] : NULL, w, sizeof(w)),
			 rec_str(i < got->nrecs ? &got->recs[i] : NULL, g, sizeof(g)));
	}
	if (want->whats_len != got->whats_len ||
	    (want->whats_len && memcmp(want->whats, got->whats, want->whats_len)))
		fail_msg("%s: the gaps' texts differ:\n%s---\n%s", what,
			 want->whats ? want->whats : "", got->whats ? got->whats : "");
}

/* Every instruction ptxed decoded, none more, in the same order. */
static void check_truth(const struct trace *tr, const struct decoded *d, const char *what)
{
	const struct truth *t = tr->truth;
	size_t n = d->n < t->n ? d->n : t->n;

	for (size_t i = 0; i < n; i++) {
		if (d->ips[i] != t->ips[i])
			fail_msg("%s %s: instruction %zu is %" PRIx64 ", ptxed's %" PRIx64, tr->dir,
				 what, i, d->ips[i], t->ips[i]);
	}
	if (d->n != t->n)
		fail_msg("%s %s: %zu instructions, ptxed %zu", tr->dir, what, d->n, t->n);
	if (d->gaps != t->errors)
		fail_msg("%s %s: %u gaps, ptxed %u errors", tr->dir, what, d->gaps, t->errors);
}

/* The trace `times` over as one stream. What libipt decodes of it over
 * the whole stream (the PTXED engine: ptxed's loop) is the truth; it must
 * be ptxed's own instructions `times` over, with one more at each join
 * (where libipt walks to the TSX event's address and fails) and ptxed's
 * errors `times` over (each join's failure takes the place of the
 * trace's error at its start: the same resync). */
static void repeat(struct trace *tr, unsigned int times)
{
	struct variant ptxed = {HWT_DEC_ENGINE_PTXED, 1, 0, 0, 0, NULL, KEEP_ALL, 0};
	const struct truth *one = tr->truth;
	struct decoded *d = &bufs[1];
	uint8_t *pt = malloc(tr->len * times);

	assert_non_null(pt);
	for (unsigned int i = 0; i < times; i++)
		memcpy(pt + i * tr->len, tr->pt, tr->len);
	free(tr->pt);
	tr->pt = pt;
	tr->len *= times;
	decode(tr, &ptxed, d);
	assert_int_equal(d->n, one->n * times + times - 1);
	assert_int_equal(d->gaps, one->errors * times);
	for (size_t i = 0; i < d->n; i++) {
		size_t k = i % (one->n + 1);

		if (k < one->n && d->ips[i] != one->ips[k])
			fail_msg("%s x%u: libipt's instruction %zu is %" PRIx64
				 ", ptxed's %" PRIx64,
				 tr->dir, times, i, d->ips[i], one->ips[k]);
	}
	/* (The instructions are the truth's now.) */
	tr->rep.ips = d->ips;
	tr->rep.n = d->n;
	tr->rep.errors = d->gaps;
	tr->truth = &tr->rep;
	d->ips = NULL;
	d->cap = 0;
}

/* name's trace, `times` over as one stream (1: as it is). */
static void check_trace(const char *name, size_t min_insns, unsigned int times)
{
	static const struct variant variants[] = {
	    {HWT_DEC_ENGINE_FAST, 1, 0, 0, 0, NULL, KEEP_ALL, 0},
	    {HWT_DEC_ENGINE_LIBIPT, 1, 0, 0, 0, NULL, KEEP_ALL, 0},
	    {HWT_DEC_ENGINE_FAST, 1, 0, 777, 0, NULL, KEEP_ALL, 0},
	    {HWT_DEC_ENGINE_LIBIPT, 1, 0, 4096, 0, NULL, KEEP_ALL, 0},
	    {HWT_DEC_ENGINE_FAST, 2, 3, 0, 0, NULL, KEEP_ALL, 0},
	    {HWT_DEC_ENGINE_LIBIPT, 2, 3, 0, 0, NULL, KEEP_ALL, 0},
	    {HWT_DEC_ENGINE_FAST, 2, 64, 5000, 0, NULL, KEEP_ALL, 0},
	    /* Pieces larger than the carry's join (decoder.c run()):
	     * the rest of each piece decoded in place. */
	    {HWT_DEC_ENGINE_FAST, 1, 0, 40000, 0, NULL, KEEP_ALL, 0},
	    {HWT_DEC_ENGINE_LIBIPT, 1, 0, 40000, 0, NULL, KEEP_ALL, 0},
	    /* Segments of 4 KiB (PSBs inside): records differ from a
	     * segment at every PSB's only where a block runs across a
	     * segment's start (which splits it), not between these. */
	    {HWT_DEC_ENGINE_FAST, 1, 0, 0, 4096, NULL, KEEP_ALL, 0},
	    {HWT_DEC_ENGINE_LIBIPT, 1, 0, 0, 4096, NULL, KEEP_ALL, 0},
	    {HWT_DEC_ENGINE_FAST, 2, 3, 999, 4096, NULL, KEEP_ALL, 0},
	    {HWT_DEC_ENGINE_FAST, 1, 0, 40000, 4096, NULL, KEEP_ALL, 0},
	};
	struct trace tr;
	/* The first decode of each segment size (fast, the records the others
	 * must equal) and the one at hand. */
	struct decoded *fast = &bufs[0], *d = &bufs[1];
	size_t seg = 0;

	/* Run together: whole, in pieces, on two threads. */
	size_t nvariants = times > 1 ? 7 : HWT_ARRAY_SIZE(variants);

	load(&tr, name);
	assert_true(tr.truth->n >= min_insns);
	if (times > 1)
		repeat(&tr, times);
	for (size_t i = 0; i < nvariants; i++) {
		const struct variant *v = &variants[i];
		char what[1300];

		snprintf(what, sizeof(what),
			 "%s x%u %s threads=%u window=%zu piece=%zu segment=%zu", tr.dir, times,
			 v->engine == HWT_DEC_ENGINE_FAST ? "fast" : "libipt", v->threads,
			 v->window, v->piece, v->seg);
		decode(&tr, v, d);
		check_truth(&tr, d, what);
		/* FAST leaves nothing to libipt, in every way of decoding:
		 * where libipt fails (ptxed's errors), it fails the same
		 * way itself (eng_fast.c libipt_fails()). */
		if (v->engine == HWT_DEC_ENGINE_FAST &&
		    (d->stats.segments_fallback || d->stats.ipt_runs))
			fail_msg("%s: %" PRIu64 " segments left to libipt, %" PRIu64 " libipt runs",
				 what, d->stats.segments_fallback, d->stats.ipt_runs);
		/* ... in PSB intervals: at most one per ptxed error, with
		 * segments of 4 KiB too. */
		if (d->stats.segments_failed > tr.truth->errors ||
		    !tr.truth->errors != !d->stats.segments_failed)
			fail_msg("%s: %" PRIu64 " segments failed, ptxed %u errors", what,
				 d->stats.segments_failed, tr.truth->errors);
		if (i == 0 || v->seg != seg) {
			struct decoded *t = fast;

			fast = d;
			d = t;
			seg = v->seg;
			continue;
		}
		/* The same records, field by field, however decoded. */
		same_records(fast, d, what);
	}
	unload(&tr);
}

/* 32-bit code, 1.09 million instructions, one error at the start. */
static void test_avscript_32(void **state)
{
	(void)state;
	check_trace("avscript_32", 1000000, 1);
}

/* 64-bit, PSB+ runs while tracing is off, 21 errors (ptxed's own). */
static void test_dyn_test(void **state)
{
	(void)state;
	check_trace("dyn_test", 700, 1);
}

/* Kernel code; ptxed decodes nothing (one error). */
static void test_icelake_tip(void **state)
{
	(void)state;
	check_trace("icelake_tip", 0, 1);
}

/* avscript_32 twice over: the join is a "bad query" for libipt, and for
 * FAST, which leaves nothing to libipt there either. */
static void test_avscript_32_twice(void **state)
{
	(void)state;
	check_trace("avscript_32", 1000000, 2);
}

/* tr decoded as v says by FAST into fast and by LIBIPT into ipt: the same
 * records and instructions, and at most max_ipt segments of FAST's left to
 * libipt. */
static void fast_is_libipt(const struct trace *tr, struct variant v, struct decoded *fast,
			   struct decoded *ipt, const char *what, uint64_t max_ipt)
{
	v.engine = HWT_DEC_ENGINE_FAST;
	decode(tr, &v, fast);
	v.engine = HWT_DEC_ENGINE_LIBIPT;
	decode(tr, &v, ipt);
	if (fast->stats.segments_fallback > max_ipt || fast->stats.ipt_runs > max_ipt)
		fail_msg("%s: %" PRIu64 " segments left to libipt, %" PRIu64 " libipt runs", what,
			 fast->stats.segments_fallback, fast->stats.ipt_runs);
	same_records(ipt, fast, what);
	if (fast->n != ipt->n || fast->gaps != ipt->gaps)
		fail_msg("%s: %zu instructions, %u gaps; libipt %zu, %u", what, fast->n, fast->gaps,
			 ipt->n, ipt->gaps);
}

/* What ptxed was not asked: the same traces with part of their code
 * missing (libipt fails where the flow enters it: no memory mapped, on a
 * call, a jump, a return, on the way to an event's IP) and for a CPU whose
 * errata libipt works around (6/85: SKD022's asynchronous disables,
 * BDM70's PSB+ FUP before a TIP.PGE and others, which change what it
 * decodes). FAST's
 * records equal LIBIPT's, and FAST leaves no segment to libipt. (With all
 * the code and no CPU, check_trace()'s first two decodes are these.) */
static void check_others(const char *name, unsigned int drops)
{
	static const char *const cpus[] = {NULL, "6/85"};
	struct trace tr;
	unsigned int nsec;

	load(&tr, name);
	{
		struct hwt_dec_icache *ic;
		struct hwt_dec_image *img;

		assert_int_equal(hwt_dec_icache_alloc(&ic, NULL), 0);
		assert_int_equal(hwt_dec_image_alloc(&img, ic, "count"), 0);
		nsec = add_code(img, tr.dir, KEEP_ALL, 0);
		hwt_dec_image_put(img);
		hwt_dec_icache_free(ic);
	}
	for (size_t c = 0; c < HWT_ARRAY_SIZE(cpus); c++) {
		/* Every section left out in turn (at most drops of them,
		 * spread over the list), every other one, or none. */
		const unsigned int step = nsec > drops ? (nsec + drops - 1) / drops : 1;

		for (unsigned int j = 0; j <= nsec / step + 2; j++) {
			struct variant v = {HWT_DEC_ENGINE_FAST, 1, 0, 0, 0, cpus[c], KEEP_ALL, 0};
			char what[1300];

			if (j < 2) {
				v.keep = KEEP_PARITY;
				v.k = j;
			} else if (j > 2) {
				v.keep = KEEP_BUT;
				v.k = (j - 3) * step;
				if (v.k >= nsec)
					continue;
			} else if (!cpus[c]) {
				continue; /* check_trace()'s */
			}
			snprintf(what, sizeof(what), "%s cpu %s, %s %u", tr.dir,
				 cpus[c] ? cpus[c] : "none",
				 v.keep == KEEP_ALL	 ? "all code"
				 : v.keep == KEEP_PARITY ? "code sections of parity"
							 : "all code but section",
				 v.k);
			fast_is_libipt(&tr, v, &bufs[0], &bufs[1], what, 0);
		}
	}
	unload(&tr);
}

/* Real traces with bytes cut out, the way a lost AUX chunk looks
 * (avscript_32: 333 bytes at a few places; libipt fails there: "bad
 * compressed return", "no memory mapped", "unknown opcode", a resync
 * inside what was read as packets; dyn_test: a few cuts that left up to
 * 11 segments to libipt): FAST's records equal LIBIPT's, and FAST leaves
 * nothing to libipt. */
static void test_damaged(void **state)
{
	static const struct {
		const char *name;
		size_t at, len;
	} cuts[] = {
	    {"avscript_32", 2657, 333},	 {"avscript_32", 5315, 333},  {"avscript_32", 7973, 333},
	    {"avscript_32", 18605, 333}, {"avscript_32", 29236, 333}, {"avscript_32", 40000, 333},
	    {"dyn_test", 4269, 3},	 {"dyn_test", 3898, 64},      {"dyn_test", 8039, 333},
	};
	const struct variant v = {HWT_DEC_ENGINE_FAST, 1, 0, 0, 0, NULL, KEEP_ALL, 0};
	struct trace tr;
	uint8_t *whole;
	size_t len;

	(void)state;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(cuts); i++) {
		size_t at = cuts[i].at, cut = cuts[i].len;
		char what[64];

		load(&tr, cuts[i].name);
		whole = tr.pt;
		len = tr.len;
		tr.pt = malloc(len);
		assert_non_null(tr.pt);
		memcpy(tr.pt, whole, at);
		memcpy(tr.pt + at, whole + at + cut, len - at - cut);
		tr.len = len - cut;
		snprintf(what, sizeof(what), "%s cut at %zu", cuts[i].name, at);
		/* FAST fails where libipt does (a bad compressed return at
		 * 7973, an unknown opcode at 29236 and 40000) and decodes the
		 * rest after libipt's resync (from a time line and packets of
		 * its own where the walk from the segment's start stopped at
		 * the damage). */
		fast_is_libipt(&tr, v, &bufs[0], &bufs[1], what, 0);
		assert_true(bufs[0].gaps >= 1);
		free(whole);
		unload(&tr);
	}
}

/* The offsets of the PSBs in pt[0, len) (at most max), as the decoder
 * finds them. */
static size_t find_psbs(const uint8_t *pt, size_t len, size_t *psbs, size_t max)
{
	size_t n = 0;

	for (size_t i = hwt_pkt_find_psb(pt, len, 0); i < len && n < max;
	     i = hwt_pkt_find_psb(pt, len, i + HWT_PKT_PSB_SIZE))
		psbs[n++] = i;
	return n;
}

/* A number in [lo, hi], smaller ones likelier (log-uniform). */
static size_t rand_size(uint64_t *rng, size_t lo, size_t hi)
{
	unsigned int bits = 0;
	size_t top;

	while (((size_t)1 << bits) < hi - lo + 1)
		bits++;
	top = (size_t)1 << (hwt_test_rand(rng) % (bits + 1));
	top = top < hi - lo + 1 ? top : hi - lo + 1;
	return lo + hwt_test_rand(rng) % top;
}

/* Damages tr's trace in place as rng says: a trace longer than `window`
 * bytes is cut to that many from its start or a random PSB (what a
 * decoder given a part sees), then one to three times bytes are cut out
 * (a lost AUX chunk) or overwritten with random values, at a random
 * offset or inside a PSB+ (from its PSB on); what says where. */
static void damage(struct trace *tr, uint64_t *rng, size_t window, char *what, size_t size)
{
	unsigned int times = 1 + hwt_test_rand(rng) % 3;
	size_t used = strlen(what);

	if (tr->len > window) {
		size_t psbs[512], npsb = find_psbs(tr->pt, tr->len, psbs, HWT_ARRAY_SIZE(psbs));
		size_t from = npsb && hwt_test_rand(rng) % 4 ? psbs[hwt_test_rand(rng) % npsb] : 0;

		tr->len = tr->len - from < window ? tr->len - from : window;
		memmove(tr->pt, tr->pt + from, tr->len);
		used += (size_t)snprintf(what + used, used < size ? size - used : 0,
					 " bytes %zu+%zu:", from, tr->len);
	}

	for (unsigned int t = 0; t < times && tr->len > 64; t++) {
		size_t psbs[512], npsb = find_psbs(tr->pt, tr->len, psbs, HWT_ARRAY_SIZE(psbs));
		bool cut = hwt_test_rand(rng) % 2;
		bool in_psb = npsb && hwt_test_rand(rng) % 3 == 0;
		size_t at, len;

		if (in_psb) {
			at = psbs[hwt_test_rand(rng) % npsb] + hwt_test_rand(rng) % 48;
			len = rand_size(rng, 1, 16);
		} else {
			at = hwt_test_rand(rng) % tr->len;
			len = cut ? rand_size(rng, 1, 4096) : rand_size(rng, 1, 64);
		}
		if (at >= tr->len)
			at = tr->len - 1;
		if (len > tr->len - at)
			len = tr->len - at;
		if (cut) {
			memmove(tr->pt + at, tr->pt + at + len, tr->len - at - len);
			tr->len -= len;
		} else {
			for (size_t i = 0; i < len; i++)
				tr->pt[at + i] = (uint8_t)hwt_test_rand(rng);
		}
		used +=
		    (size_t)snprintf(what + used, used < size ? size - used : 0, " %s%s %zu+%zu",
				     cut ? "cut" : "overwrite", in_psb ? " (PSB+)" : "", at, len);
	}
}

/* Whether d has a gap before its instruction n (after n - 1); *k: the
 * first such gap. */
static bool gap_before(const struct decoded *d, size_t n, unsigned int *k)
{
	for (unsigned int i = 0; i < d->gaps && d->gap_at[i].n <= n; i++) {
		if (d->gap_at[i].n == n) {
			*k = i;
			return true;
		}
	}
	return false;
}

/* The first instruction of ptxed's (want) at or after i before which it
 * has a gap (want->n: none). */
static size_t next_gap(const struct decoded *want, size_t i)
{
	for (unsigned int k = 0; k < want->gaps; k++) {
		if (want->gap_at[k].n > i)
			return want->gap_at[k].n;
	}
	return want->n;
}

/* Where got goes on with want's instruction i (up to 8 of them in a row,
 * to want's next gap), at or after j; got->n where it does not. After
 * its next gap first: what got decodes more before it may be a loop that
 * want's instructions after its own gap run through too. */
static size_t find_on(const struct decoded *want, size_t i, const struct decoded *got, size_t j)
{
	size_t run = next_gap(want, i) - i, from = got->n;

	run = run < 8 ? run : 8;
	for (unsigned int g = 0; g < got->gaps && from == got->n; g++) {
		if (got->gap_at[g].n >= j)
			from = got->gap_at[g].n;
	}
	for (int pass = 0; pass < 2; pass++, from = j) {
		for (size_t at = from; at < got->n; at++) {
			size_t k = 0;

			while (k < run && at + k < got->n && got->ips[at + k] == want->ips[i + k])
				k++;
			if (k == run || at + k == got->n)
				return at;
		}
	}
	return got->n;
}

/* Walks ptxed's instructions (want) and hwtrace's (got) side by side:
 * the same, but where ptxed has a gap hwtrace may decode more (it goes
 * on where ptxed skipped a PSB: its instructions follow later) and where
 * hwtrace has a "compressed return without call" at the return ptxed ran
 * last, ptxed may decode more up to its next gap (its return stack
 * carries a call from before a PSB: *ret counts those). Returns the index
 * of the first instruction of want's that got loses, want->n where none. */
static size_t lost_at(const struct decoded *want, const struct decoded *got, unsigned int *ret)
{
	size_t i = 0, j = 0;

	*ret = 0;
	while (i < want->n) {
		unsigned int k;

		if (j < got->n && got->ips[j] == want->ips[i]) {
			i++;
			j++;
			continue;
		}
		if (i && gap_before(got, j, &k) && got->gap_at[k].retstack &&
		    got->gap_at[k].ip == want->ips[i - 1]) {
			(*ret)++;
			i = next_gap(want, i);
			if (i == want->n)
				break;
		} else if (!gap_before(want, i, &k)) {
			return i;
		}
		j = find_on(want, i, got, j);
		if (j == got->n)
			return i;
	}
	return want->n;
}

/* Both decodes' gaps: the instructions before each, its IP, offset and
 * text (HWT_PTX_GAPS). */
static void print_gaps(const struct decoded *want, const struct decoded *got)
{
	const struct decoded *ds[2] = {want, got};

	for (int w = 0; w < 2; w++) {
		const char *t = ds[w]->whats;
		unsigned int k = 0;

		for (size_t r = 0; r < ds[w]->nrecs; r++) {
			const char *nl = strchr(t, '\n');

			if (ds[w]->recs[r].type != HWT_DEC_REC_GAP)
				continue;
			printf("  %s gap after %zu (%" PRIx64 "): ip %" PRIx64 " offset %" PRIx64
			       " %.*s\n",
			       w ? "hwtrace" : "ptxed", ds[w]->gap_at[k].n,
			       ds[w]->gap_at[k].n ? ds[w]->ips[ds[w]->gap_at[k].n - 1] : 0,
			       ds[w]->recs[r].a, ds[w]->recs[r].offset, (int)(nl - t), t);
			t = nl + 1;
			k++;
		}
	}
}

/* The real traces damaged (bytes cut out or overwritten, at seeded
 * random places, inside PSB+ too), decoded by the PTXED engine (ptxed's
 * own loop: the reference) and by hwtrace: FAST, LIBIPT, FAST with a
 * segment at every PSB and FAST on two threads decode every instruction
 * ptxed decodes, in the same order; more only where ptxed skips a PSB
 * (docs/decoder.md). FAST's records equal LIBIPT's.
 * HWT_PTX_FIRST, HWT_PTX_COUNT: other seeds; HWT_PTX_WINDOW: the bytes of a
 * trace taken (16 KiB; avscript_32 has 96); HWT_PTX_REPORT: print each
 * difference instead of failing; HWT_PTX_DUMP=DIR: write each damaged
 * trace to DIR/NAME-SEED.pt. */
static void test_damaged_vs_ptxed(void **state)
{
	static const char *const names[] = {"avscript_32", "dyn_test"};
	static const struct {
		const char *name;
		struct variant v;
	} hwt[] = {
	    {"fast", {HWT_DEC_ENGINE_FAST, 1, 0, 0, 0, NULL, KEEP_ALL, 0}},
	    {"libipt", {HWT_DEC_ENGINE_LIBIPT, 1, 0, 0, 0, NULL, KEEP_ALL, 0}},
	    {"fast psb", {HWT_DEC_ENGINE_FAST, 1, 0, 0, 1, NULL, KEEP_ALL, 0}},
	    {"fast 2 threads", {HWT_DEC_ENGINE_FAST, 2, 3, 0, 0, NULL, KEEP_ALL, 0}},
	    {"libipt psb", {HWT_DEC_ENGINE_LIBIPT, 1, 0, 0, 1, NULL, KEEP_ALL, 0}},
	    {"fast psb 2 threads", {HWT_DEC_ENGINE_FAST, 2, 3, 0, 1, NULL, KEEP_ALL, 0}},
	    {"libipt psb 2 threads", {HWT_DEC_ENGINE_LIBIPT, 2, 3, 0, 1, NULL, KEEP_ALL, 0}},
	};
	/* Seeds past the first 100 that once failed (docs/decoder.md), with
	 * the trace where it is not the seed's own: 375 (a FUP running into
	 * the next PSB, seg.h cut_pkt), 742, 790, 922 (pieces after a resync
	 * joined too), 931 (the PTXED block's last instruction none). */
	static const struct {
		uint64_t seed;
		const char *name;
	} fixed[] = {{375, NULL}, {742, NULL}, {790, NULL}, {922, NULL}, {931, "avscript_32"}};
	const struct variant ptxed = {HWT_DEC_ENGINE_PTXED, 1, 0, 0, 0, NULL, KEEP_ALL, 0};
	const char *env = getenv("HWT_PTX_FIRST");
	uint64_t first = env ? strtoull(env, NULL, 0) : 1;
	uint64_t count = (env = getenv("HWT_PTX_COUNT")) ? strtoull(env, NULL, 0) : 100;
	/* HWT_PTX_TRACE: that trace for every seed (avscript_32, dyn_test,
	 * icelake_tip). */
	const char *only = getenv("HWT_PTX_TRACE");
	size_t nfixed =
	    getenv("HWT_PTX_FIRST") || getenv("HWT_PTX_COUNT") || only ? 0 : HWT_ARRAY_SIZE(fixed);
	bool report = getenv("HWT_PTX_REPORT") != NULL;
	size_t window = (env = getenv("HWT_PTX_WINDOW")) ? strtoull(env, NULL, 0) : 16384;
	unsigned int bad = 0, more = 0, to_libipt = 0, segs_to_libipt = 0, rets = 0;
	struct decoded *ref = &bufs[0];

	(void)state;
	for (uint64_t k = 0; k < count + nfixed; k++) {
		uint64_t seed = k < count ? first + k : fixed[k - count].seed;
		uint64_t rng = seed * 0x9e3779b97f4a7c15ull + 1;
		const char *name = only ? only : names[seed % HWT_ARRAY_SIZE(names)];

		if (k >= count && fixed[k - count].name)
			name = fixed[k - count].name;
		struct trace tr;
		char what[512];
		bool more_here = false, ret_here = false;

		load(&tr, name);
		snprintf(what, sizeof(what), "%s seed %" PRIu64 ":", name, seed);
		damage(&tr, &rng, window, what, sizeof(what));
		if (getenv("HWT_PTX_DUMP")) {
			char path[1100];

			snprintf(path, sizeof(path), "%s/%s-%" PRIu64 ".pt", getenv("HWT_PTX_DUMP"),
				 name, seed);
			hwt_test_write_file(path, tr.pt, tr.len);
		}
		decode(&tr, &ptxed, ref);
		for (size_t i = 0; i < HWT_ARRAY_SIZE(hwt); i++) {
			struct decoded *d = &bufs[1 + i];
			unsigned int ret;
			size_t lost;

			decode(&tr, &hwt[i].v, d);
			lost = lost_at(ref, d, &ret);
			ret_here |= ret > 0;
			if (lost < ref->n) {
				bad++;
				if (!report)
					fail_msg("%s: %s loses ptxed's instruction %zu (%" PRIx64
						 "; %zu instructions, ptxed %zu)",
						 what, hwt[i].name, lost, ref->ips[lost], d->n,
						 ref->n);
				printf("LOST %s: %s at ptxed's %zu of %zu (%zu decoded)\n", what,
				       hwt[i].name, lost, ref->n, d->n);
				if (getenv("HWT_PTX_GAPS"))
					print_gaps(ref, d);
			} else if (d->n > ref->n) {
				more_here = true;
				if (report)
					printf("MORE %s: %s %zu, ptxed %zu\n", what, hwt[i].name,
					       d->n, ref->n);
			}
		}
		more += more_here;
		rets += ret_here;
		/* FAST == LIBIPT, byte for byte; with a segment at every PSB
		 * too; and with it on two threads as on one. */
		for (size_t i = 0; i < 4; i++) {
			static const size_t pair[4][2] = {{2, 1}, {5, 3}, {3, 6}, {5, 7}};
			static const char *const how[4] = {"", " psb", " psb 2 threads",
							   " libipt psb 2 threads"};
			const struct decoded *l = &bufs[pair[i][0]], *f = &bufs[pair[i][1]];

			if (records_equal(l, f))
				continue;
			bad++;
			if (!report) {
				char m[600];

				snprintf(m, sizeof(m), "%s,%s", what, how[i]);
				same_records(l, f, m);
			}
			printf("%s %s%s: record %zu (%zu, %zu)\n",
			       i < 2 ? "FAST!=LIBIPT" : "J2!=J1", what, how[i], first_diff(l, f),
			       f->nrecs, l->nrecs);
		}
		if (bufs[1].stats.segments_fallback) {
			to_libipt++;
			segs_to_libipt += (unsigned int)bufs[1].stats.segments_fallback;
			if (report)
				printf("TO-LIBIPT %s: %" PRIu64 "\n", what,
				       bufs[1].stats.segments_fallback);
		}
		unload(&tr);
	}
	printf("damaged vs ptxed: %" PRIu64 " variants, %u differences, %u where hwtrace "
	       "decodes more, %u leave %u segments to libipt, %u with returns from before a PSB\n",
	       count + nfixed, bad, more, to_libipt, segs_to_libipt, rets);
	assert_int_equal(bad, 0);
}

static void test_partial_code_and_errata(void **state)
{
	(void)state;
	/* (A million instructions a decode: a few sections.) */
	check_others("avscript_32", 4);
	check_others("dyn_test", 12);
	check_others("icelake_tip", 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_avscript_32),
	    cmocka_unit_test(test_avscript_32_twice),
	    cmocka_unit_test(test_dyn_test),
	    cmocka_unit_test(test_icelake_tip),
	    cmocka_unit_test(test_partial_code_and_errata),
	    cmocka_unit_test(test_damaged),
	    cmocka_unit_test(test_damaged_vs_ptxed),
	};

	/* Exploring other seeds: that test alone. */
	if (getenv("HWT_PTX_COUNT"))
		return _cmocka_run_group_tests(
		    "damaged_vs_ptxed", tests + HWT_ARRAY_SIZE(tests) - 1, 1, NULL, free_all);

	return cmocka_run_group_tests(tests, NULL, free_all);
}
