/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_decoder.c - the decoder on arbitrary PT bytes, over a
 * fixed program (fuzz_decoder_code.h; the seed corpus holds real traces of
 * it, so mutations explore plausible streams).
 *
 * Input: one configuration byte (bits 0-2: the CPU, for libipt's errata;
 * bits 3-4: how to cut the stream for hwt_dec_feed; bits 5-7: a sideband
 * hook that switches thread and image each 2^(4 * K) TSC ticks, K = 1..7,
 * with its span companion; 0: none), then the PT bytes.
 *
 * Properties checked (a failure aborts, so the fuzzer reports it):
 *   - no engine crashes, hangs or reports an error other than gaps;
 *   - the FAST and LIBIPT engines give the same records (the fast engine
 *     must decode exactly what libipt decodes, or decline);
 *   - decoding the same bytes fed in pieces, or on two threads, gives
 *     the same records; with the default segmentation (4 KiB segments)
 *     and with a segment at every PSB;
 *   - decoding twice gives the same records (determinism);
 *   - without block records (the fast engine then counts cached TNT runs
 *     as a whole), FAST and LIBIPT give the same records and both give
 *     the same per-block profile as with them.
 * Records are compared through a hash of every field; profiles through a
 * sum of hashed (block, counts) and (branch, target, count) entries.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/decoder.h"
#include "tests/fuzz/fuzz_decoder_code.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct digest {
	uint64_t h, n, gaps, prof;
};

static void mix(struct digest *d, uint64_t v)
{
	/* FNV-1a over the value's bytes. */
	for (int i = 0; i < 8; i++) {
		d->h ^= (v >> (8 * i)) & 0xff;
		d->h *= 0x100000001b3ull;
	}
}

static int on_rec(void *ctx, const struct hwt_dec_rec *r)
{
	struct digest *d = ctx;

	d->n++;
	mix(d, r->type);
	mix(d, r->flags);
	mix(d, (uint64_t)(int64_t)r->tid);
	mix(d, r->depth);
	mix(d, r->insns);
	mix(d, r->tsc);
	mix(d, r->offset);
	switch (r->type) {
	case HWT_DEC_REC_BLOCK:
		mix(d, r->u.block.ip);
		mix(d, r->u.block.end_ip);
		mix(d, r->u.block.next_ip);
		mix(d, r->u.block.ninsn);
		mix(d, r->u.block.branch);
		mix(d, r->u.block.mode);
		break;
	case HWT_DEC_REC_CALL:
		mix(d, r->u.call.from);
		mix(d, r->u.call.to);
		mix(d, r->u.call.ret_addr);
		break;
	case HWT_DEC_REC_RETURN:
		mix(d, r->u.ret.from);
		mix(d, r->u.ret.to);
		mix(d, r->u.ret.func);
		mix(d, r->u.ret.insns);
		break;
	case HWT_DEC_REC_EVENT:
		mix(d, r->u.event.type);
		mix(d, r->u.event.ip);
		mix(d, r->u.event.at);
		mix(d, r->u.event.payload);
		break;
	case HWT_DEC_REC_GAP:
		d->gaps++;
		mix(d, r->u.gap.kind);
		mix(d, r->u.gap.ip);
		mix(d, r->u.gap.size);
		break;
	default:
		break;
	}
	return 0;
}

static struct hwt_dec_icache *icache;
static struct hwt_dec_image *image, *image2;

static void setup(void)
{
	if (icache)
		return;
	if (hwt_dec_icache_alloc(&icache, NULL) < 0 ||
	    hwt_dec_image_alloc(&image, icache, "fuzz") < 0 ||
	    hwt_dec_image_add_mem(image, fuzz_code, sizeof(fuzz_code), FUZZ_CODE_BASE, "code") <
		0 ||
	    hwt_dec_image_alloc(&image2, icache, "fuzz2") < 0 ||
	    hwt_dec_image_copy(image2, image) < 0)
		abort();
}

/* The hook: thread 2 (the copied image) in odd periods of 2^shift ticks,
 * thread 1 in even ones and without time. */
static int hook(void *ctx, const struct hwt_dec_context_query *q, struct hwt_dec_context *out)
{
	unsigned int shift = (unsigned int)(uintptr_t)ctx;
	bool odd = q->has_tsc && ((q->tsc >> shift) & 1);

	out->pid = 1;
	out->tid = odd ? 2 : 1;
	out->image = odd ? image2 : image;
	return 0;
}

static int span(void *ctx, uint64_t lo, uint64_t hi, struct hwt_dec_context *out)
{
	unsigned int shift = (unsigned int)(uintptr_t)ctx;
	struct hwt_dec_context_query q = {lo, true, NULL, false, false};

	if ((lo >> shift) != (hi >> shift))
		return 0;
	return hook(ctx, &q, out) < 0 ? -1 : 1;
}

static const char *const cpus[8] = {
    "none", "6/85/4", "6/78", "6/92", "6/61", "6/142", "6/106", "6/122",
};

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The profile's hash: independent of block ids (engines create blocks in
 * different orders). */
static uint64_t profile_hash(const struct hwt_dec *dec)
{
	struct hwt_dec_bb_count bc;
	size_t it = 0;
	uint64_t h = 0;

	while (hwt_dec_profile_next(dec, &it, &bc) > 0) {
		struct hwt_dec_bb_info info;

		hwt_dec_bb_info(bc.bb, &info);
		h += mix64(mix64(mix64(mix64(mix64(info.ip) ^ info.ninsn) ^ bc.count) ^ bc.taken) ^
			   bc.partial) ^
		     bc.partial_insns;
		if (info.branch == HWT_DEC_BR_IND_JUMP || info.branch == HWT_DEC_BR_IND_CALL) {
			struct hwt_dec_target_count tc[16];
			size_t n = hwt_dec_profile_targets(dec, info.end_ip, tc, 16);

			/* Blocks sharing their last instruction add the same
			 * histogram once each, with either engine. */
			for (size_t k = 0; k < n && k < 16; k++)
				h += mix64(mix64(info.end_ip ^ tc[k].target) ^ tc[k].count);
		}
	}
	return h;
}

static struct digest run(uint32_t engine, uint8_t conf, const uint8_t *pt, size_t len, size_t piece,
			 bool blocks, unsigned int threads, size_t segment_bytes)
{
	struct hwt_dec_config cfg;
	struct hwt_dec *dec;
	struct hwt_dec_sink sink;
	struct digest d = {0xcbf29ce484222325ull, 0, 0, 0};
	int err = 0;

	hwt_dec_config_init(&cfg);
	cfg.engine = engine;
	cfg.flags = HWT_DEC_F_PROFILE;
	cfg.mtc_freq = 3;
	cfg.cpuid_0x15_eax = 1;
	cfg.cpuid_0x15_ebx = 100;
	cfg.threads = threads;
	cfg.window = 2;
	if (segment_bytes)
		cfg.segment_bytes = segment_bytes;
	if (hwt_dec_cpu_parse(&cfg.cpu, cpus[conf & 7]) < 0)
		abort();
	if (conf >> 5) {
		cfg.context = hook;
		cfg.context_span = span;
		cfg.context_ctx = (void *)(uintptr_t)(4 * (conf >> 5));
	}
	if (hwt_dec_alloc(&dec, &cfg, icache) < 0 || hwt_dec_set_context(dec, 1, 1, image) < 0)
		abort();
	memset(&sink, 0, sizeof(sink));
	sink.size = sizeof(sink);
	sink.rec = on_rec;
	sink.ctx = &d;
	if (!blocks)
		sink.want = HWT_DEC_WANT_ALL & ~HWT_DEC_WANT(HWT_DEC_REC_BLOCK);
	if (hwt_dec_add_sink(dec, &sink) < 0)
		abort();
	if (piece) {
		for (size_t off = 0; off < len && !err; off += piece)
			err = hwt_dec_feed(dec, pt + off, len - off < piece ? len - off : piece);
		if (!err)
			err = hwt_dec_finish(dec);
	} else {
		err = hwt_dec_decode(dec, pt, len);
	}
	if (err < 0) {
		fprintf(stderr, "engine %u: decoding failed: %s\n", engine, hwt_strerror(err));
		abort();
	}
	d.prof = profile_hash(dec);
	hwt_dec_free(dec);
	return d;
}

static void same(const struct digest *a, const struct digest *b, const char *what)
{
	if (a->prof != b->prof) {
		fprintf(stderr, "%s: profiles differ\n", what);
		abort();
	}
	if (a->h != b->h || a->n != b->n) {
		fprintf(stderr, "%s: records differ (%llu vs %llu records)\n", what,
			(unsigned long long)a->n, (unsigned long long)b->n);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t pieces[4] = {0, 7, 61, 1000};
	struct digest fast, again, ipt, cut, par, seg, seg_ipt, seg_par, nb_fast, nb_ipt;
	uint8_t conf;

	if (!size || size > (1u << 20))
		return 0;
	setup();
	conf = data[0];
	data++;
	size--;
	/* The default segmentation (segments of 4 KiB, PSBs inside). */
	fast = run(HWT_DEC_ENGINE_FAST, conf, data, size, 0, true, 1, 0);
	again = run(HWT_DEC_ENGINE_FAST, conf, data, size, 0, true, 1, 0);
	same(&fast, &again, "fast twice");
	ipt = run(HWT_DEC_ENGINE_LIBIPT, conf, data, size, 0, true, 1, 0);
	same(&fast, &ipt, "fast vs libipt");
	if (pieces[(conf >> 3) & 3]) {
		cut =
		    run(HWT_DEC_ENGINE_FAST, conf, data, size, pieces[(conf >> 3) & 3], true, 1, 0);
		same(&fast, &cut, "fast in pieces");
	}
	par = run(HWT_DEC_ENGINE_FAST, conf, data, size, 0, true, 2, 0);
	same(&fast, &par, "fast on two threads");
	nb_fast = run(HWT_DEC_ENGINE_FAST, conf, data, size, 0, false, 1, 0);
	nb_ipt = run(HWT_DEC_ENGINE_LIBIPT, conf, data, size, 0, false, 1, 0);
	same(&nb_fast, &nb_ipt, "fast vs libipt without blocks");
	if (nb_fast.prof != fast.prof) {
		fprintf(stderr, "profile without blocks differs\n");
		abort();
	}
	/* A segment at every PSB: the engines agree too, and segments
	 * decoded ahead on threads start from a guess of the state the one
	 * before leaves and are decoded again where it matters. (Records
	 * differ from the default segmentation's where a block runs across
	 * a segment's start, which splits it.) */
	seg = run(HWT_DEC_ENGINE_FAST, conf, data, size, 0, true, 1, 1);
	seg_ipt = run(HWT_DEC_ENGINE_LIBIPT, conf, data, size, 0, true, 1, 1);
	same(&seg, &seg_ipt, "fast vs libipt, a segment at every PSB");
	seg_par = run(HWT_DEC_ENGINE_FAST, conf, data, size, 0, true, 2, 1);
	same(&seg, &seg_par, "fast on two threads, a segment at every PSB");
	(void)run(HWT_DEC_ENGINE_PTXED, conf, data, size, 0, true, 1, 0);
	return 0;
}
