/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/bb.c - the basic-block cache: straight-line code decoded once and
 * walked many times.
 *
 * A basic block starts at an address and runs to the first branch (any
 * class), to the end of the section piece it starts in, or to
 * HWT_DEC_BB_MAX_INSNS instructions. Blocks are keyed by (section, piece
 * end, mode, address), so they are shared by every image that maps the same
 * section the same way, and by every thread. Each block caches its two
 * successors (fall-through and direct target) as immutable edges tagged with
 * the image they were resolved in, so the hot path follows pointers instead
 * of hashing; an edge resolved for another image is replaced, never freed
 * before the icache.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/seg.h"

struct bb_key {
	const struct hwt_dec_section *sec;
	uint64_t limit;
	uint64_t ip;
	uint8_t mode;
};

struct edge_chunk {
	struct edge_chunk *next;
	size_t used;
	struct hwt_dec_edge edges[1024];
};

/* Blocks and their offsets live in chunks that are freed with the table
 * (blocks are never freed alone): a block was a calloc(), its offsets a
 * realloc() while decoding, a malloc() and a free(), and two free()s at the
 * end, 12% of the instructions of a decode of dyn_test (731 instructions,
 * 142 blocks). */
#define BB_CHUNK_MIN (8u << 10)
#define BB_CHUNK_MAX (64u << 10)

struct bb_chunk {
	struct bb_chunk *next;
	size_t used, size;
	_Alignas(8) unsigned char mem[];
};

struct hwt_dec_bb_table {
	pthread_mutex_t lock;
	struct hwt_dec_bb **slots; /* open addressing */
	size_t cap, count;
	struct hwt_dec_bb **byid;
	size_t cap_byid;
	atomic_uint nbbs; /* published count of byid */
	struct edge_chunk *edges;
	struct bb_chunk *chunks; /* the blocks' memory, newest first */
};

static uint64_t key_hash(const struct bb_key *k)
{
	uint64_t h = k->ip * 0x9e3779b97f4a7c15ull;

	h ^= (uint64_t)(uintptr_t)k->sec * 0xc2b2ae3d27d4eb4full;
	h ^= k->limit * 0x165667b19e3779f9ull;
	h ^= k->mode;
	h ^= h >> 29;
	return h * 0xbf58476d1ce4e5b9ull;
}

static bool key_eq(const struct hwt_dec_bb *bb, const struct bb_key *k)
{
	return bb->ip == k->ip && bb->sec == k->sec && bb->limit == k->limit && bb->mode == k->mode;
}

int hwt_dec_bb_table_alloc(struct hwt_dec_bb_table **out)
{
	struct hwt_dec_bb_table *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	/* Slots come with the first block and grow with use (a decode with
	 * no instruction makes none). */
	atomic_init(&t->nbbs, 0);
	*out = t;
	return 0;
}

void hwt_dec_bb_table_free(struct hwt_dec_bb_table *t)
{
	if (!t)
		return;
	free(t->byid);
	free(t->slots);
	while (t->edges) {
		struct edge_chunk *c = t->edges;

		t->edges = c->next;
		free(c);
	}
	while (t->chunks) {
		struct bb_chunk *c = t->chunks;

		t->chunks = c->next;
		free(c);
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static struct hwt_dec_bb *table_find(struct hwt_dec_bb_table *t, const struct bb_key *k)
{
	size_t mask = t->cap - 1;

	if (!t->cap)
		return NULL;
	for (size_t i = key_hash(k) & mask;; i = (i + 1) & mask) {
		struct hwt_dec_bb *bb = t->slots[i];

		if (!bb)
			return NULL;
		if (key_eq(bb, k))
			return bb;
	}
}

static int table_grow(struct hwt_dec_bb_table *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 64;
	struct hwt_dec_bb **ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		struct hwt_dec_bb *bb = t->slots[i];
		struct bb_key k;
		size_t j;

		if (!bb)
			continue;
		k = (struct bb_key){bb->sec, bb->limit, bb->ip, bb->mode};
		for (j = key_hash(&k) & (ncap - 1); ns[j]; j = (j + 1) & (ncap - 1))
			;
		ns[j] = bb;
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

/* bytes of the table's chunks (8-byte aligned), or NULL. Locked. */
static void *chunk_alloc(struct hwt_dec_bb_table *t, size_t bytes)
{
	struct bb_chunk *c = t->chunks;
	void *p;

	bytes = (bytes + 7) & ~(size_t)7;
	if (!c || c->size - c->used < bytes) {
		/* 8 KiB first, twice the last up to 64 KiB (a short trace's
		 * blocks take 20 KB). */
		size_t size = c ? (c->size + sizeof(*c)) * 2 : BB_CHUNK_MIN;

		if (size > BB_CHUNK_MAX)
			size = BB_CHUNK_MAX;
		size -= sizeof(*c);
		if (size < bytes)
			size = bytes;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->next = t->chunks;
		c->used = 0;
		c->size = size;
		t->chunks = c;
	}
	p = c->mem + c->used;
	c->used += bytes;
	return p;
}

/* Inserts a copy of the block dec with the offsets offs (its instructions
 * 1..ninsn-1 from its ip), or returns an equal one inserted meanwhile.
 * Locked. */
static struct hwt_dec_bb *table_insert(struct hwt_dec_bb_table *t, const struct hwt_dec_bb *dec,
				       const uint32_t *offs, int *err)
{
	struct bb_key k = {dec->sec, dec->limit, dec->ip, dec->mode};
	struct hwt_dec_bb *bb;
	size_t j, n, noffs = dec->ninsn > 1 ? dec->ninsn - 1 : 0;
	bool wide = dec->end_ip - dec->ip > UINT16_MAX;

	bb = table_find(t, &k);
	if (bb)
		return bb;
	if ((t->count + 1) * 2 > t->cap) {
		*err = table_grow(t);
		if (*err < 0)
			return NULL;
	}
	n = atomic_load(&t->nbbs);
	if (n == t->cap_byid) {
		size_t ncap = t->cap_byid ? t->cap_byid * 2 : 1024;
		struct hwt_dec_bb **p = realloc(t->byid, ncap * sizeof(*p));

		if (!p) {
			*err = -ENOMEM;
			return NULL;
		}
		t->byid = p;
		t->cap_byid = ncap;
	}
	if (n >= UINT32_MAX) {
		*err = -HWT_ETOOBIG;
		return NULL;
	}
	bb = chunk_alloc(t, sizeof(*bb) + noffs * (wide ? sizeof(uint32_t) : sizeof(uint16_t)));
	if (!bb) {
		*err = -ENOMEM;
		return NULL;
	}
	*bb = *dec;
	if (wide) {
		bb->offs32 = memcpy(bb + 1, offs, noffs * sizeof(uint32_t));
	} else if (noffs) {
		bb->offs = (uint16_t *)(bb + 1);
		for (size_t i = 0; i < noffs; i++)
			bb->offs[i] = (uint16_t)offs[i];
	}
	bb->id = (uint32_t)n;
	t->byid[n] = bb;
	atomic_store(&t->nbbs, n + 1);
	for (j = key_hash(&k) & (t->cap - 1); t->slots[j]; j = (j + 1) & (t->cap - 1))
		;
	t->slots[j] = bb;
	t->count++;
	return bb;
}

/* Decodes the block at ip inside piece into bb, the offsets of its
 * instructions 1..ninsn-1 from ip into offs (room for
 * HWT_DEC_BB_MAX_INSNS - 1). */
static int bb_decode(struct hwt_dec_icache *ic, const struct hwt_dec_image *image,
		     const struct hwt_dec_piece *piece, uint64_t ip, enum hwt_dec_mode mode,
		     struct hwt_dec_bb *bb, uint32_t *offs)
{
	uint8_t buf[4096 + 16];
	const uint8_t *code = buf;
	uint64_t buf_ip = 0, cur = ip;
	size_t buf_len = 0;
	int err;

	memset(bb, 0, sizeof(*bb));
	bb->ip = ip;
	bb->sec = piece->sec;
	bb->limit = piece->hi;
	bb->piece_lo = piece->lo;
	bb->mode = (uint8_t)mode;
	/* The code in memory, to the piece's end: no copy. */
	buf_len = hwt_dec_piece_bytes(piece, ip, &code);
	if (buf_len)
		buf_ip = ip;
	else
		code = buf;
	for (;;) {
		struct hwt_dec_insn insn;
		size_t avail;

		if (cur >= piece->hi) {
			bb->flags |= HWT_DEC_BBF_PIECE_END;
			break;
		}
		/* Keep at least 15 bytes (or the rest of the piece) buffered
		 * (in memory, the rest of the piece is). */
		if (buf_len == 0 || cur < buf_ip || (code == buf && cur + 15 > buf_ip + buf_len)) {
			int n = hwt_dec_piece_read(ic, piece, cur, buf, 4096);

			if (n <= 0) {
				err = n < 0 ? n : -HWT_ENOSYM;
				goto fail_or_stop;
			}
			code = buf;
			buf_ip = cur;
			buf_len = (size_t)n;
		}
		avail = (size_t)(buf_ip + buf_len - cur);
		err = hwt_dec_ild(ic, code + (cur - buf_ip), avail, cur, mode, &insn);
		if (err < 0 && err != -HWT_EDECODE)
			return err;
		if (err < 0 || cur + insn.size > piece->hi) {
			/* Maybe the instruction continues in the next piece. */
			if (avail < 15 && cur + avail == piece->hi) {
				int e2 = hwt_dec_insn_decode(image, cur, mode, &insn);

				if (e2 == 0 && cur + insn.size > piece->hi) {
					bb->flags |= HWT_DEC_BBF_TRUNCATED;
					err = 0;
				}
			}
			if (err < 0 || !(bb->flags & HWT_DEC_BBF_TRUNCATED)) {
				err = -HWT_EDECODE;
				goto fail_or_stop;
			}
		}
		if (bb->ninsn > 0)
			offs[bb->ninsn - 1] = (uint32_t)(cur - ip);
		bb->ninsn++;
		bb->end_ip = cur;
		bb->last_size = insn.size;
		bb->fallthrough = cur + insn.size;
		if (insn.branch != HWT_DEC_BR_NONE && insn.branch != HWT_DEC_BR_PTWRITE) {
			bb->branch = insn.branch;
			bb->target = insn.target;
			if (insn.branch == HWT_DEC_BR_CALL && insn.target == bb->fallthrough)
				bb->flags |= HWT_DEC_BBF_PIC_CALL;
			switch (insn.branch) {
			case HWT_DEC_BR_CALL:
				if (!(bb->flags & HWT_DEC_BBF_PIC_CALL))
					bb->flags |= HWT_DEC_BBF_LOG_STACK;
				break;
			case HWT_DEC_BR_IND_CALL:
				bb->flags |= HWT_DEC_BBF_LOG_STACK | HWT_DEC_BBF_LOG_TARGET;
				break;
			case HWT_DEC_BR_RETURN:
				/* Where returns go is the call stack's business,
				 * not a target histogram's. */
				bb->flags |= HWT_DEC_BBF_LOG_STACK;
				break;
			case HWT_DEC_BR_FAR_CALL:
			case HWT_DEC_BR_FAR_RETURN:
				bb->flags |= HWT_DEC_BBF_LOG_STACK;
				break;
			case HWT_DEC_BR_IND_JUMP:
				bb->flags |= HWT_DEC_BBF_LOG_TARGET;
				break;
			default:
				break;
			}
			break;
		}
		if (bb->flags & HWT_DEC_BBF_TRUNCATED)
			break;
		if (bb->ninsn == HWT_DEC_BB_MAX_INSNS)
			break;
		cur += insn.size;
		if (mode == HWT_DEC_MODE_32)
			cur &= 0xffffffffull;
	}
	return 0;
fail_or_stop:
	if (bb->ninsn == 0)
		return err;
	bb->flags |= HWT_DEC_BBF_ERROR;
	return 0;
}

int hwt_dec_bb_get(struct hwt_dec_icache *ic, const struct hwt_dec_image *image, uint64_t ip,
		   enum hwt_dec_mode mode, struct hwt_dec_bb **out)
{
	struct hwt_dec_bb_table *t = ic->bbs;
	const struct hwt_dec_piece *piece;
	struct hwt_dec_bb *bb, dec;
	uint32_t offs[HWT_DEC_BB_MAX_INSNS - 1];
	struct bb_key k;
	int err = 0;

	piece = hwt_dec_image_find(image, ip);
	if (!piece)
		return -HWT_ENOSYM;
	k = (struct bb_key){piece->sec, piece->hi, ip, (uint8_t)mode};
	pthread_mutex_lock(&t->lock);
	bb = table_find(t, &k);
	pthread_mutex_unlock(&t->lock);
	if (bb) {
		*out = bb;
		return 0;
	}
	err = bb_decode(ic, image, piece, ip, mode, &dec, offs);
	if (err < 0)
		return err;
	pthread_mutex_lock(&t->lock);
	bb = table_insert(t, &dec, offs, &err);
	pthread_mutex_unlock(&t->lock);
	if (!bb)
		return err;
	*out = bb;
	return 0;
}

int hwt_dec_bb_succ(struct hwt_dec_icache *ic, const struct hwt_dec_image *image,
		    struct hwt_dec_bb *bb, int dir, struct hwt_dec_bb **out)
{
	struct hwt_dec_bb_table *t = ic->bbs;
	struct hwt_dec_bb *next = atomic_load_explicit(&bb->near[dir], memory_order_acquire);
	struct hwt_dec_edge *e;
	uint64_t ip = dir ? bb->target : bb->fallthrough;
	int err;

	if (next) {
		*out = next;
		return 0;
	}
	e = atomic_load_explicit(&bb->succ[dir], memory_order_acquire);
	if (e && e->image_id == image->id) {
		*out = e->bb;
		return 0;
	}
	err = hwt_dec_bb_get(ic, image, ip, (enum hwt_dec_mode)bb->mode, &next);
	if (err < 0)
		return err;
	if (ip >= bb->piece_lo && ip < bb->limit && next->sec == bb->sec &&
	    next->limit == bb->limit) {
		/* Same piece: the same block wherever this one is mapped. */
		atomic_store_explicit(&bb->near[dir], next, memory_order_release);
		*out = next;
		return 0;
	}
	pthread_mutex_lock(&t->lock);
	if (!t->edges || t->edges->used == HWT_ARRAY_SIZE(t->edges->edges)) {
		/* Not cleared: an edge is written before it is published. */
		struct edge_chunk *c = malloc(sizeof(*c));

		if (!c) {
			pthread_mutex_unlock(&t->lock);
			*out = next;
			return 0; /* uncached, still correct */
		}
		c->next = t->edges;
		c->used = 0;
		t->edges = c;
	}
	e = &t->edges->edges[t->edges->used++];
	e->image_id = image->id;
	e->bb = next;
	pthread_mutex_unlock(&t->lock);
	atomic_store_explicit(&bb->succ[dir], e, memory_order_release);
	*out = next;
	return 0;
}

int hwt_dec_bb_index(const struct hwt_dec_bb *bb, uint64_t ip)
{
	uint32_t lo = 0, hi = bb->ninsn;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t a = hwt_dec_bb_insn_ip(bb, mid);

		if (a == ip)
			return (int)mid;
		if (a < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

uint32_t hwt_dec_bb_count(const struct hwt_dec_icache *ic)
{
	return atomic_load(&ic->bbs->nbbs);
}

const struct hwt_dec_bb *hwt_dec_bb_by_id(const struct hwt_dec_icache *ic, uint32_t id)
{
	struct hwt_dec_bb_table *t = ic->bbs;
	const struct hwt_dec_bb *bb = NULL;

	pthread_mutex_lock(&t->lock);
	if (id < atomic_load(&t->nbbs))
		bb = t->byid[id];
	pthread_mutex_unlock(&t->lock);
	return bb;
}

void hwt_dec_bb_info(const struct hwt_dec_bb *bb, struct hwt_dec_bb_info *info)
{
	memset(info, 0, sizeof(*info));
	if (!bb)
		return;
	info->ip = bb->ip;
	info->end_ip = bb->end_ip;
	info->ninsn = bb->ninsn;
	info->id = bb->id;
	info->branch = bb->branch;
	info->mode = bb->mode;
	info->target = bb->target;
	info->fallthrough = bb->fallthrough;
}

size_t hwt_dec_bb_insns(const struct hwt_dec_bb *bb, uint64_t *ips, size_t n)
{
	size_t k;

	if (!bb || !ips)
		return 0;
	for (k = 0; k < n && k < bb->ninsn; k++)
		ips[k] = hwt_dec_bb_insn_ip(bb, (uint32_t)k);
	return k;
}
