/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/dectest.c - see dectest.h.
 */
#include "tests/lib/dectest.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dectest_opts_init(struct dectest_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->engine = HWT_DEC_ENGINE_FAST;
}

static void buf_printf(struct dectest_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void buf_printf(struct dectest_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = b->cap ? b->cap * 2 : 4096;
			char *p;

			while (cap - b->len <= (size_t)n)
				cap *= 2;
			p = realloc(b->p, cap);
			if (!p)
				abort();
			b->p = p;
			b->cap = cap;
		}
	}
}

void dectest_rec_text(struct dectest_buf *b, const struct hwt_dec_rec *rec)
{
	buf_printf(
	    b, "%u f=%x p=%d t=%d d=%u n=%" PRIu64 " tsc=%" PRIx64 " tm=%" PRIx64 " off=%" PRIx64,
	    rec->type, rec->flags, rec->pid, rec->tid, rec->depth, rec->insns, rec->tsc, rec->time,
	    rec->offset);
	switch (rec->type) {
	case HWT_DEC_REC_BLOCK:
		buf_printf(b, " B %" PRIx64 "-%" PRIx64 " n=%u nx=%" PRIx64 " br=%u m=%u\n",
			   rec->u.block.ip, rec->u.block.end_ip, rec->u.block.ninsn,
			   rec->u.block.next_ip, rec->u.block.branch, rec->u.block.mode);
		break;
	case HWT_DEC_REC_CALL:
		buf_printf(b, " C %" PRIx64 "->%" PRIx64 " ra=%" PRIx64 " br=%u\n",
			   rec->u.call.from, rec->u.call.to, rec->u.call.ret_addr,
			   rec->u.call.branch);
		break;
	case HWT_DEC_REC_RETURN:
		buf_printf(b,
			   " R %" PRIx64 "->%" PRIx64 " fn=%" PRIx64 " ct=%" PRIx64 " n=%" PRIu64
			   " br=%u\n",
			   rec->u.ret.from, rec->u.ret.to, rec->u.ret.func, rec->u.ret.call_tsc,
			   rec->u.ret.insns, rec->u.ret.branch);
		break;
	case HWT_DEC_REC_EVENT:
		buf_printf(b, " E %u ip=%" PRIx64 " at=%" PRIx64 " p=%" PRIx64 " m=%u r=%u\n",
			   rec->u.event.type, rec->u.event.ip, rec->u.event.at,
			   rec->u.event.payload, rec->u.event.mode, rec->u.event.resumed);
		break;
	case HWT_DEC_REC_GAP:
		buf_printf(b, " G %u %d ip=%" PRIx64 " size=%" PRIu64 " s=%d %s\n", rec->u.gap.kind,
			   rec->u.gap.err, rec->u.gap.ip, rec->u.gap.size, rec->u.gap.sync,
			   rec->u.gap.what ? rec->u.gap.what : "");
		break;
	case HWT_DEC_REC_SWITCH:
		buf_printf(b, " S %d/%d\n", rec->u.sw.prev_pid, rec->u.sw.prev_tid);
		break;
	default:
		buf_printf(b, " ?\n");
		break;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct collect {
	struct dectest_buf buf;
	struct dectest_result *res;
	bool text;
};

/* A 64-bit mixer (splitmix64's finalizer): the profile hash sums mixed
 * entries, so it does not depend on the order of blocks. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int collect_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct collect *c = ctx;

	if (rec->type < 8)
		c->res->nrec[rec->type]++;
	if (rec->type == HWT_DEC_REC_BLOCK)
		c->res->block_insns += rec->u.block.ninsn;
	if (rec->type == HWT_DEC_REC_RETURN && (rec->flags & HWT_DEC_RF_UNWOUND))
		c->res->unwound++;
	if (!(rec->flags & HWT_DEC_RF_CPU) && rec->cpu != 0)
		c->res->stray_cpu++;
	if (rec->depth > c->res->max_depth)
		c->res->max_depth = rec->depth;
	if (c->text)
		dectest_rec_text(&c->buf, rec);
	return 0;
}

/* struct hwt_dec_sink.recs: as n calls of rec. */
static int collect_recs(void *ctx, const struct hwt_dec_rec *recs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		collect_rec(ctx, &recs[i]);
	return 0;
}

int dectest_decode(const struct dectest_opts *o, const uint8_t *code, size_t code_size,
		   uint64_t base, const uint8_t *pt, size_t len, struct dectest_result *res)
{
	struct hwt_dec_icache *ic = NULL;
	struct hwt_dec_image *img = NULL;
	struct hwt_dec *dec = NULL;
	struct hwt_dec_config cfg;
	struct hwt_dec_sink sink;
	struct collect c;
	int err;

	memset(res, 0, sizeof(*res));
	memset(&c, 0, sizeof(c));
	c.res = res;
	c.text = !o->no_text;
	if (o->icache) {
		img = hwt_dec_image_get(o->image);
	} else {
		err = hwt_dec_icache_alloc(&ic, NULL);
		if (err < 0)
			return err;
		err = hwt_dec_image_alloc(&img, ic, "test");
		if (err < 0)
			goto out;
	}
	if (code_size && !o->icache) {
		err = hwt_dec_image_add_mem(img, code, code_size, base, "code");
		if (err < 0)
			goto out;
	}
	hwt_dec_config_init(&cfg);
	cfg.engine = o->engine;
	cfg.threads = o->threads;
	cfg.window = o->window;
	if (o->segment_bytes)
		cfg.segment_bytes = o->segment_bytes;
	cfg.flags = o->flags;
	cfg.cpu = o->cpu;
	cfg.cpuid_0x15_eax = o->cpuid_0x15_eax;
	cfg.cpuid_0x15_ebx = o->cpuid_0x15_ebx;
	cfg.mtc_freq = o->mtc_freq;
	cfg.nom_freq = o->nom_freq;
	cfg.filter = o->filter;
	cfg.context = o->context;
	cfg.context_span = o->context_span;
	cfg.context_ctx = o->context_ctx;
	err = hwt_dec_alloc(&dec, &cfg, o->icache ? o->icache : ic);
	if (err < 0)
		goto out;
	err = hwt_dec_set_context(dec, 1, 1, img);
	if (err < 0)
		goto out;
	memset(&sink, 0, sizeof(sink));
	sink.size = sizeof(sink);
	sink.rec = collect_rec;
	if (o->recs)
		sink.recs = collect_recs;
	if (o->no_blocks)
		sink.want = HWT_DEC_WANT_ALL & ~HWT_DEC_WANT(HWT_DEC_REC_BLOCK);
	if (o->no_events)
		sink.want =
		    (sink.want ? sink.want : HWT_DEC_WANT_ALL) & ~HWT_DEC_WANT(HWT_DEC_REC_EVENT);
	sink.ctx = &c;
	err = hwt_dec_add_sink(dec, &sink);
	if (err < 0)
		goto out;
	if (o->piece) {
		res->err = 0;
		for (size_t off = 0; off < len && !res->err; off += o->piece)
			res->err = hwt_dec_feed(dec, pt + off,
						len - off < o->piece ? len - off : o->piece);
		if (!res->err)
			res->err = hwt_dec_finish(dec);
	} else {
		res->err = hwt_dec_decode(dec, pt, len);
	}
	hwt_dec_stats(dec, &res->stats);
	if (o->flags & HWT_DEC_F_PROFILE) {
		struct hwt_dec_bb_count bc;
		size_t it = 0, nfrom = 0, capfrom = 0;
		uint64_t *froms = NULL;

		while (hwt_dec_profile_next(dec, &it, &bc) > 0) {
			struct hwt_dec_bb_info info;

			hwt_dec_bb_info(bc.bb, &info);
			res->profile_insns += bc.count * info.ninsn + bc.partial_insns;
			res->profile_hash +=
			    mix(mix(mix(mix(mix(info.ip) ^ info.ninsn) ^ bc.count) ^ bc.taken) ^
				bc.partial) ^
			    bc.partial_insns;
			if (info.branch == HWT_DEC_BR_COND) {
				res->taken += bc.taken;
				res->not_taken += bc.count - bc.taken;
			}
			if (info.branch == HWT_DEC_BR_IND_JUMP ||
			    info.branch == HWT_DEC_BR_IND_CALL) {
				/* Blocks may share their last instruction. */
				if (nfrom == capfrom) {
					capfrom = capfrom ? 2 * capfrom : 64;
					froms = realloc(froms, capfrom * sizeof(*froms));
					if (!froms)
						abort();
				}
				froms[nfrom++] = info.end_ip;
			}
		}
		if (nfrom)
			qsort(froms, nfrom, sizeof(*froms), cmp_u64);
		for (size_t i = 0; i < nfrom; i++) {
			struct hwt_dec_target_count tc[64];
			size_t n;

			if (i && froms[i] == froms[i - 1])
				continue;
			n = hwt_dec_profile_targets(dec, froms[i], tc, 64);
			res->ind_distinct += n;
			for (size_t k = 0; k < n && k < 64; k++) {
				res->ind_targets += tc[k].count;
				res->profile_hash +=
				    mix(mix(mix(froms[i]) ^ tc[k].target) ^ tc[k].count);
			}
		}
		free(froms);
	}
	if (c.text) {
		if (!c.buf.p) {
			c.buf.p = calloc(1, 1);
			if (!c.buf.p)
				abort();
		}
		res->text = c.buf.p;
		res->len = c.buf.len;
		c.buf.p = NULL;
	}
	err = 0;
out:
	free(c.buf.p);
	hwt_dec_free(dec);
	hwt_dec_image_put(img);
	hwt_dec_icache_free(ic);
	return err;
}

void dectest_result_free(struct dectest_result *res)
{
	free(res->text);
	res->text = NULL;
}
