/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/dwarf.c - the lazy DWARF index and its lookups.
 *
 * At first use we list the compilation units and their address ranges
 * (sorted, for binary search). The first lookup inside a unit builds that
 * unit's index, under the object's lock, and publishes it with a release
 * store; after that lookups read it without locks:
 *
 *   - scopes: every DW_TAG_subprogram and DW_TAG_inlined_subroutine with
 *     code, with its name (linkage name preferred, through abstract_origin
 *     and specification), its parent scope and its call file/line/column;
 *   - segments: the scopes' ranges flattened into non-overlapping intervals
 *     that each name their innermost scope, so one binary search finds the
 *     whole inline chain;
 *   - rows: the line table, one row per address (the last row of several at
 *     one address wins, as in binutils and LLVM), sequences sorted.
 *
 * Two readers fill the index. Our own (dwarf_native.c, dwarf_line.c) reads
 * the bytes of .debug_info, .debug_abbrev, .debug_line and the range lists
 * directly and skips everything that holds no code; it is what makes
 * indexing cheap. libdwarf (dwarf_lib.c) indexes the units the native reader
 * declines (forms or line opcodes it does not handle), chosen per unit, and
 * everything when the configuration asks for it. Both go through the
 * builder helpers below, so the index means the same whichever built it.
 * Memory grows with the units looked up, not with the size of the debug
 * information.
 */
#include "symbolize/dwarf_int.h"

#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* ------------------------------------------------------------------------ */
/* Arena                                                                     */

#define ARENA_FIRST (256u << 10)
#define ARENA_MAX   (4u << 20) /* bounds what is populated but unused */
#define CHUNK_HDR   64	       /* header rounded to the alignment */

void *dw_arena_alloc(struct sym_dwarf *dw, size_t size)
{
	struct dw_chunk *c = dw->arena;
	size_t need = (size + 63) & ~(size_t)63;
	void *p;

	if (size > SIZE_MAX - 64 - CHUNK_HDR)
		return NULL;
	if (!c || c->size - c->used < need) {
		size_t csize = dw->arena_next ? dw->arena_next : ARENA_FIRST;

		if (csize < need + CHUNK_HDR)
			csize = (need + CHUNK_HDR + 4095) & ~(size_t)4095;
		p = mmap(NULL, csize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		/* Best effort: fault the chunk in at once (huge pages when
		 * allowed); older kernels fault page by page as usual. */
		if (csize >= (2u << 20))
			madvise(p, csize, MADV_HUGEPAGE);
		madvise(p, csize, MADV_POPULATE_WRITE);
		c = p;
		c->size = csize;
		c->used = CHUNK_HDR;
		c->next = dw->arena;
		dw->arena = c;
		if (dw->arena_next < ARENA_MAX)
			dw->arena_next = dw->arena_next ? dw->arena_next * 2 : ARENA_FIRST * 2;
	}
	p = (uint8_t *)c + c->used;
	c->used += need;
	return p;
}

static void arena_free(struct sym_dwarf *dw)
{
	while (dw->arena) {
		struct dw_chunk *c = dw->arena;

		dw->arena = c->next;
		munmap(c, c->size);
	}
}

/* Keys for n values in the arena (see sym_keys_alloc()). */
static int keys_alloc(struct sym_dwarf *dw, struct sym_keys *ks, size_t n)
{
	size_t ntop = (n + SYM_KEYS_BLOCK - 1) / SYM_KEYS_BLOCK;

	memset(ks, 0, sizeof(*ks));
	if (n == 0)
		return 0;
	if (ntop > SIZE_MAX / (SYM_KEYS_BLOCK * sizeof(*ks->k)))
		return -ENOMEM;
	ks->k = dw_arena_alloc(dw, ntop * SYM_KEYS_BLOCK * sizeof(*ks->k));
	ks->top = dw_arena_alloc(dw, ntop * sizeof(*ks->top));
	ks->bucket_cap = n / 4 + 2;
	ks->bucket = dw_arena_alloc(dw, ks->bucket_cap * sizeof(*ks->bucket));
	if (!ks->k || !ks->top || !ks->bucket) {
		memset(ks, 0, sizeof(*ks));
		return -ENOMEM;
	}
	ks->n = n;
	ks->ntop = ntop;
	ks->borrowed = true;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Builder helpers shared by both readers                                    */

int dw_range_add(struct dw_rangebuf *rb, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return 0;
	if (rb->n == rb->cap) {
		size_t cap = rb->cap ? rb->cap * 2 : 8;
		void *nr = realloc(rb->r, cap * sizeof(*rb->r));

		if (!nr)
			return -ENOMEM;
		rb->r = nr;
		rb->cap = cap;
	}
	rb->r[rb->n][0] = lo;
	rb->r[rb->n][1] = hi;
	rb->n++;
	return 0;
}

int dw_add_cranges(struct sym_dwarf *dw, uint32_t cu, const struct dw_rangebuf *rb, size_t *cap)
{
	for (size_t i = 0; i < rb->n; i++) {
		if (dw->ncranges == *cap) {
			size_t c = *cap ? *cap * 2 : 64;
			void *n = realloc(dw->cranges, c * sizeof(*dw->cranges));

			if (!n)
				return -ENOMEM;
			dw->cranges = n;
			*cap = c;
		}
		dw->cranges[dw->ncranges].lo = rb->r[i][0];
		dw->cranges[dw->ncranges].hi = rb->r[i][1];
		dw->cranges[dw->ncranges].cu = cu;
		dw->ncranges++;
	}
	return 0;
}

bool dw_lang_is_c_like(uint64_t lang)
{
	switch (lang) {
	case DW_LANG_C89:
	case DW_LANG_C:
	case DW_LANG_Cobol74:
	case DW_LANG_Cobol85:
	case DW_LANG_Fortran77:
	case DW_LANG_Pascal83:
	case DW_LANG_PLI:
	case DW_LANG_C99:
	case DW_LANG_UPC:
	case DW_LANG_C11:
	case DW_LANG_Mips_Assembler:
		return true;
	default:
		return false;
	}
}

struct dw_origin *dw_origin_slot(struct sym_dwarf *dw, uint64_t off)
{
	size_t mask, i;

	if (dw->norigins * 2 >= dw->origin_cap) {
		size_t cap = dw->origin_cap ? dw->origin_cap * 2 : 1024;
		struct dw_origin *n = calloc(cap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t k = 0; k < dw->origin_cap; k++) {
			if (!dw->origins[k].off)
				continue;
			i = (size_t)(dw->origins[k].off * 0x9E3779B97F4A7C15ull) & (cap - 1);
			while (n[i].off)
				i = (i + 1) & (cap - 1);
			n[i] = dw->origins[k];
		}
		free(dw->origins);
		dw->origins = n;
		dw->origin_cap = cap;
	}
	mask = dw->origin_cap - 1;
	i = (size_t)(off * 0x9E3779B97F4A7C15ull) & mask;
	while (dw->origins[i].off && dw->origins[i].off != off)
		i = (i + 1) & mask;
	return &dw->origins[i];
}

void dw_builder_init(struct dw_builder *b, struct sym_dwarf *dw, struct dw_cu *cu)
{
	memset(b, 0, sizeof(*b));
	b->dw = dw;
	b->cu = cu;
	b->cu_base = cu->base;
	b->ranges = dw->ranges_scratch;
	b->cap_ranges = dw->ranges_cap;
	b->scopes = dw->scopes_scratch;
	b->cap_scopes = dw->scopes_cap;
	b->rb = dw->rb_scratch;
	b->rb.n = 0;
	dw->ranges_scratch = NULL;
	dw->scopes_scratch = NULL;
	dw->rb_scratch.r = NULL;
}

int dw_add_scope(struct dw_builder *b, const char *name, const char *linkage, bool is_inline,
		 int32_t parent, uint32_t depth, const struct dw_callsite *call)
{
	struct dw_scope *s;

	if (b->nscopes == b->cap_scopes) {
		size_t cap = b->cap_scopes ? b->cap_scopes * 2 : 256;
		void *n = realloc(b->scopes, cap * sizeof(*b->scopes));

		if (!n)
			return -ENOMEM;
		b->scopes = n;
		b->cap_scopes = cap;
	}
	if (b->nscopes >= INT32_MAX)
		return -HWT_ETOOBIG;
	s = &b->scopes[b->nscopes];
	memset(s, 0, sizeof(*s));
	s->name = linkage ? linkage : name;
	s->is_linkage = linkage != NULL || !b->cu->mangled_lang;
	s->is_inline = is_inline;
	s->parent = is_inline ? parent : -1;
	s->lo = b->rb.r[0][0];
	if (is_inline && call) {
		if (call->has_file && call->file <= UINT32_MAX)
			s->call_file = (uint32_t)call->file;
		if (call->has_line && call->line <= UINT32_MAX)
			s->call_line = (uint32_t)call->line;
		if (call->has_column && call->column <= UINT32_MAX)
			s->call_column = (uint32_t)call->column;
	}
	for (size_t i = 0; i < b->rb.n; i++) {
		if (b->nranges == b->cap_ranges) {
			size_t cap = b->cap_ranges ? b->cap_ranges * 2 : 256;
			void *n = realloc(b->ranges, cap * sizeof(*b->ranges));

			if (!n)
				return -ENOMEM;
			b->ranges = n;
			b->cap_ranges = cap;
		}
		b->ranges[b->nranges].lo = b->rb.r[i][0];
		b->ranges[b->nranges].hi = b->rb.r[i][1];
		b->ranges[b->nranges].scope = (int32_t)b->nscopes;
		b->ranges[b->nranges].depth = depth;
		b->nranges++;
	}
	b->nscopes++;
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct dw_brange *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1; /* outer first */
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->scope < y->scope ? -1 : x->scope > y->scope;
}

static int seg_push(struct dw_seg **segs, size_t *n, size_t *cap, uint64_t start, int32_t scope)
{
	if (*n && (*segs)[*n - 1].start == start) {
		(*segs)[*n - 1].scope = scope; /* empty segment: replace */
		return 0;
	}
	if (*n && (*segs)[*n - 1].scope == scope)
		return 0; /* same owner continues */
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		void *nn = realloc(*segs, c * sizeof(**segs));

		if (!nn)
			return -ENOMEM;
		*segs = nn;
		*cap = c;
	}
	(*segs)[*n].start = start;
	(*segs)[*n].scope = scope;
	(*n)++;
	return 0;
}

/* Flattens nested ranges into segments owned by their innermost scope. */
static int flatten(struct dw_builder *b, struct dw_seg **segs, size_t *nsegs)
{
	struct {
		uint64_t hi;
		int32_t scope;
	} stack[MAX_DIE_DEPTH + 2];
	size_t sp = 0, cap = 0;
	int ret = 0;

	qsort(b->ranges, b->nranges, sizeof(*b->ranges), cmp_range);
	for (size_t i = 0; i < b->nranges && ret == 0; i++) {
		uint64_t lo = b->ranges[i].lo, hi = b->ranges[i].hi;

		/* close the ranges that end at or before lo */
		while (sp && stack[sp - 1].hi <= lo) {
			uint64_t end = stack[sp - 1].hi;

			sp--;
			ret = seg_push(segs, nsegs, &cap, end, sp ? stack[sp - 1].scope : -1);
		}
		if (sp && hi > stack[sp - 1].hi)
			hi = stack[sp - 1].hi; /* not nested: clip to the parent */
		if (hi <= lo || sp >= HWT_ARRAY_SIZE(stack))
			continue;
		ret = ret ? ret : seg_push(segs, nsegs, &cap, lo, b->ranges[i].scope);
		stack[sp].hi = hi;
		stack[sp].scope = b->ranges[i].scope;
		sp++;
	}
	while (sp && ret == 0) {
		uint64_t end = stack[sp - 1].hi;

		sp--;
		ret = seg_push(segs, nsegs, &cap, end, sp ? stack[sp - 1].scope : -1);
	}
	return ret;
}

int dw_builder_finish(struct dw_builder *b, struct dw_cuidx *x)
{
	struct dw_seg *segs = NULL;
	size_t nsegs = 0;
	int ret = flatten(b, &segs, &nsegs);

	if (ret == 0) {
		x->in_arena = true;
		x->seg_scope = dw_arena_alloc(b->dw, (nsegs ? nsegs : 1) * sizeof(*x->seg_scope));
		ret = keys_alloc(b->dw, &x->seg_start, nsegs);
		if (!x->seg_scope)
			ret = -ENOMEM;
	}
	if (ret == 0) {
		for (size_t i = 0; i < nsegs; i++) {
			x->seg_start.k[i] = segs[i].start;
			x->seg_scope[i] = segs[i].scope;
		}
		sym_keys_seal(&x->seg_start);
	}
	free(segs);
	if (ret < 0)
		return ret;
	x->scopes = dw_arena_alloc(b->dw, (b->nscopes ? b->nscopes : 1) * sizeof(*x->scopes));
	if (!x->scopes)
		return -ENOMEM;
	memcpy(x->scopes, b->scopes, b->nscopes * sizeof(*x->scopes));
	x->nscopes = b->nscopes;
	return 0;
}

void dw_builder_fini(struct dw_builder *b)
{
	struct sym_dwarf *dw = b->dw;

	free(dw->ranges_scratch);
	free(dw->scopes_scratch);
	free(dw->rb_scratch.r);
	dw->ranges_scratch = b->ranges;
	dw->ranges_cap = b->cap_ranges;
	dw->scopes_scratch = b->scopes;
	dw->scopes_cap = b->cap_scopes;
	dw->rb_scratch = b->rb;
	memset(b, 0, sizeof(*b));
}

char *dw_join_path(const char *comp_dir, const char *dir, const char *name)
{
	const char *d1 = NULL, *d2 = NULL;
	char *out;
	size_t len;

	if (!name)
		return strdup("<unknown>");
	if (name[0] == '/')
		return strdup(name);
	if (!dir || dir[0] != '/')
		d1 = comp_dir;
	if (!d1) {
		d1 = dir;
		dir = NULL;
	}
	if (!d1)
		return strdup(name);
	d2 = dir;
	len = strlen(d1) + strlen(name) + (d2 ? strlen(d2) + 1 : 0) + 2;
	out = malloc(len);
	if (!out)
		return NULL;
	if (d2)
		snprintf(out, len, "%s/%s/%s", d1, d2, name);
	else
		snprintf(out, len, "%s/%s", d1, name);
	return out;
}

int dw_rows_push(struct dw_rowbuf *rb, const struct dw_row *r, bool endseq)
{
	if (rb->nraw > rb->seq_start && r->addr < rb->raw[rb->nraw - 1].addr) {
		/* addresses went backwards: the row stays in this sequence */
		endseq = false;
	}
	if (rb->nraw == rb->cap) {
		size_t cap = rb->cap ? rb->cap * 2 : 1024;
		void *n = realloc(rb->raw, cap * sizeof(*rb->raw));

		if (!n)
			return -ENOMEM;
		rb->raw = n;
		rb->cap = cap;
	}
	rb->raw[rb->nraw++] = *r;
	if (endseq) {
		if (rb->nraw - rb->seq_start >= 2) {
			if (rb->nseqs == rb->cap_seqs) {
				size_t cap = rb->cap_seqs ? rb->cap_seqs * 2 : 64;
				void *n = realloc(rb->seqs, cap * sizeof(*rb->seqs));

				if (!n)
					return -ENOMEM;
				rb->seqs = n;
				rb->cap_seqs = cap;
			}
			rb->seqs[rb->nseqs][0] = rb->seq_start;
			rb->seqs[rb->nseqs][1] = rb->nraw;
			rb->seqs[rb->nseqs][2] = (size_t)rb->raw[rb->seq_start].addr;
			rb->nseqs++;
		}
		rb->seq_start = rb->nraw;
	}
	return 0;
}

static int cmp_seq(const void *a, const void *b)
{
	const size_t *x = a, *y = b; /* [start row, end row, addr lo] */

	if (x[2] != y[2])
		return x[2] < y[2] ? -1 : 1;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

struct dw_rowbuf *dw_rows_begin(struct sym_dwarf *dw)
{
	if (!dw->rows_scratch)
		dw->rows_scratch = calloc(1, sizeof(*dw->rows_scratch));
	if (dw->rows_scratch) {
		dw->rows_scratch->nraw = 0;
		dw->rows_scratch->nseqs = 0;
		dw->rows_scratch->seq_start = 0;
	}
	return dw->rows_scratch;
}

static inline bool r32_fits(const struct dw_row *r)
{
	return r->file == UINT32_MAX || (r->file < DW_R32_END && r->line <= 0xffffff &&
					 r->column <= 0xfff && r->discriminator <= 0xffff);
}

static inline uint64_t r32_pack(const struct dw_row *r)
{
	if (r->file == UINT32_MAX)
		return (uint64_t)DW_R32_END << 36;
	return (uint64_t)r->line | (uint64_t)r->column << 24 | (uint64_t)r->file << 36 |
	       (uint64_t)r->discriminator << 48;
}

static inline bool r32_is_end(uint64_t v)
{
	return ((v >> 36) & 0xfff) == DW_R32_END;
}

static inline void r32_unpack(uint64_t v, struct dw_line *out)
{
	out->line = (uint32_t)(v & 0xffffff);
	out->column = (uint32_t)((v >> 24) & 0xfff);
	out->file = (uint32_t)((v >> 36) & 0xfff);
	out->discriminator = (uint32_t)(v >> 48);
}

/* Builds t's bucket table (as sym_keys_seal() does for 64-bit keys). */
static void r32_seal(struct dw_rows32 *t, size_t cap)
{
	uint64_t span;
	size_t want, nb, i = 0;
	unsigned shift = 0;

	t->nbucket = 0;
	if (t->n < 4 * SYM_KEYS_BLOCK)
		return;
	span = t->k[t->n - 1];
	want = t->n / 4 < cap - 1 ? t->n / 4 : cap - 1;
	while (shift < 63 && (span >> shift) >= want)
		shift++;
	nb = (size_t)(span >> shift) + 1;
	for (size_t b = 0; b < nb; b++) {
		uint64_t start = (uint64_t)b << shift;

		while (i < t->n && t->k[i] < start)
			i++;
		t->bucket[b] = (uint32_t)i;
	}
	t->bucket[nb] = (uint32_t)t->n;
	t->shift = shift;
	t->nbucket = nb;
}

/* Rows <= addr in t (see sym_keys_upper_pf()). */
static inline size_t r32_upper(const struct dw_rows32 *t, uint64_t addr)
{
	uint64_t v;
	size_t lo, hi, cnt = 0;

	if (addr < t->base)
		return 0;
	if (addr - t->base > UINT32_MAX)
		return t->n;
	v = addr - t->base;
	if (t->nbucket) {
		uint64_t b = v >> t->shift;

		if (b >= t->nbucket)
			return t->n;
		lo = t->bucket[b];
		hi = t->bucket[b + 1];
		if (lo > 0)
			__builtin_prefetch(&t->v[lo - 1]);
	} else {
		lo = 0;
		hi = t->n;
	}
	if (hi - lo > 2 * SYM_KEYS_BLOCK) {
		/* a crowded slice, or no buckets: branch-free binary search */
		const uint32_t *base = t->k + lo;
		size_t n = hi - lo;

		while (n > 1) {
			size_t half = n / 2;

			base = base[half] <= v ? base + half : base;
			n -= half;
		}
		return (size_t)(base - t->k) + (*base <= v);
	}
	for (size_t i = lo; i < hi; i++)
		cnt += t->k[i] <= v;
	return lo + cnt;
}

/* The rows of the sorted sequences in order, each ending with its end
 * marker; an end marker followed by a row at the same address gives way to
 * the row. Calls emit(ctx, row) for each, and returns how many. */
static size_t rows_walk(const struct dw_rowbuf *rb,
			void (*emit)(void *, const struct dw_row *, bool first), void *ctx)
{
	const struct dw_row *prev = NULL;
	size_t n = 0;

	for (size_t s = 0; s < rb->nseqs; s++) {
		const struct dw_row *r = &rb->raw[rb->seqs[s][0]], *end = &rb->raw[rb->seqs[s][1]];

		if (prev && prev->file == UINT32_MAX && prev->addr == r->addr)
			n--; /* the caller overwrites it */
		for (bool first = true; r < end; r++, first = false) {
			emit(ctx, r, first);
			n++;
			prev = r;
		}
	}
	return n;
}

struct rows_fill {
	struct dw_cuidx *x;
	size_t n;
	bool compact;
	/* first pass */
	uint64_t lo, hi;
	bool fits;
	const struct dw_row *prev;
};

static void rows_check(void *ctx, const struct dw_row *r, bool first)
{
	struct rows_fill *f = ctx;

	(void)first;
	f->lo = r->addr < f->lo ? r->addr : f->lo;
	f->hi = r->addr > f->hi ? r->addr : f->hi;
	f->fits = f->fits && r32_fits(r);
}

static void rows_put(void *ctx, const struct dw_row *r, bool first)
{
	struct rows_fill *f = ctx;
	struct dw_cuidx *x = f->x;

	/* the previous sequence's end marker at this address gives way */
	if (first && f->prev && f->prev->file == UINT32_MAX && f->prev->addr == r->addr)
		f->n--;
	if (f->compact) {
		x->r32.k[f->n] = (uint32_t)(r->addr - x->r32.base);
		x->r32.v[f->n] = r32_pack(r);
	} else {
		x->row_addr.k[f->n] = r->addr;
		x->rows[f->n].file = r->file;
		x->rows[f->n].line = r->line;
		x->rows[f->n].column = r->column;
		x->rows[f->n].discriminator = r->discriminator;
	}
	f->n++;
	f->prev = r;
}

int dw_rows_finish(struct sym_dwarf *dw, struct dw_rowbuf *rb, struct dw_cuidx *x)
{
	struct rows_fill f = {.x = x, .lo = UINT64_MAX, .hi = 0, .fits = true};
	size_t n;

	/* Sorted sequences, each ending with its end marker. */
	if (rb->nseqs > 1)
		qsort(rb->seqs, rb->nseqs, sizeof(*rb->seqs), cmp_seq);
	n = rows_walk(rb, rows_check, &f);
	if (n == 0)
		return 0;
	f.compact = f.fits && f.hi - f.lo <= UINT32_MAX && rb->nraw <= UINT32_MAX;
	if (f.compact) {
		size_t cap = rb->nraw / 4 + 2;

		x->r32.base = f.lo;
		x->r32.k = dw_arena_alloc(dw, rb->nraw * sizeof(*x->r32.k));
		x->r32.v = dw_arena_alloc(dw, rb->nraw * sizeof(*x->r32.v));
		x->r32.bucket = dw_arena_alloc(dw, cap * sizeof(*x->r32.bucket));
		if (!x->r32.k || !x->r32.v || !x->r32.bucket) {
			memset(&x->r32, 0, sizeof(x->r32));
			return -ENOMEM;
		}
		rows_walk(rb, rows_put, &f);
		x->r32.n = f.n;
		r32_seal(&x->r32, cap);
		return 0;
	}
	x->in_arena = true;
	x->rows = dw_arena_alloc(dw, rb->nraw * sizeof(*x->rows));
	if (!x->rows || keys_alloc(dw, &x->row_addr, rb->nraw) < 0)
		return -ENOMEM;
	rows_walk(rb, rows_put, &f);
	/* fewer rows than allocated: only the first n count */
	x->row_addr.n = f.n;
	sym_keys_seal(&x->row_addr);
	return 0;
}

void dw_cuidx_free(struct dw_cuidx *x)
{
	if (!x)
		return;
	for (size_t s = 0; s < x->nscopes; s++) {
		const char *d = atomic_load(&x->scopes[s].demangled);

		if (d && d != x->scopes[s].name)
			free((char *)d);
	}
	for (size_t f = 0; f < x->nfiles; f++)
		free(x->files[f]);
	free(x->files);
	sym_keys_fini(&x->seg_start);
	sym_keys_fini(&x->row_addr);
	if (!x->in_arena) {
		free(x->scopes);
		free(x->seg_scope);
		free(x->rows);
	}
	free(x);
}

/* ------------------------------------------------------------------------ */
/* Opening                                                                   */

void sym_dwarf_free(struct sym_dwarf *dw)
{
	if (!dw)
		return;
	for (size_t i = 0; i < dw->ncus; i++)
		dw_cuidx_free(atomic_load(&dw->cus[i].idx));
	dwn_free(dw);
	dwl_close(dw);
	if (dw->rows_scratch) {
		free(dw->rows_scratch->raw);
		free(dw->rows_scratch->seqs);
		free(dw->rows_scratch);
	}
	free(dw->ranges_scratch);
	free(dw->scopes_scratch);
	free(dw->rb_scratch.r);
	arena_free(dw);
	free(dw->cus);
	free(dw->cranges);
	free(dw->crange_lo);
	free(dw->origins);
	free(dw);
}

static int cmp_crange(const void *a, const void *b)
{
	const struct dw_crange *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Lists the units of the object's DWARF image. Called once, under lock. */
static int dwarf_open(struct hwt_sym_obj *obj, struct sym_dwarf **out)
{
	struct sym_dwarf *dw;
	int ret;

	dw = calloc(1, sizeof(*dw));
	if (!dw)
		return -ENOMEM;
	dw->e = obj->dwelf;
	dw->obj = obj;
	dw->be = dw->e->big_endian;
	dw->mode = obj->cache->cfg.dwarf_reader;
	if (dw->mode == HWT_SYM_DWARF_LIBDWARF) {
		ret = dwl_open(dw);
		if (ret == 0)
			ret = dwl_list_units(dw);
	} else {
		ret = dwn_open(dw);
		if (ret == 0)
			ret = dwn_list_units(dw);
	}
	if (ret < 0)
		goto error;
	if (dw->ncranges > 1)
		qsort(dw->cranges, dw->ncranges, sizeof(*dw->cranges), cmp_crange);
	dw->crange_lo = malloc((dw->ncranges ? dw->ncranges : 1) * sizeof(*dw->crange_lo));
	if (!dw->crange_lo) {
		ret = -ENOMEM;
		goto error;
	}
	for (size_t i = 0; i < dw->ncranges; i++)
		dw->crange_lo[i] = dw->cranges[i].lo;
	*out = dw;
	return 0;
error:
	sym_dwarf_free(dw);
	return ret;
}

/* Builds the index of one unit with the reader chosen for it. Called under
 * obj->lock. */
static int build_unit(struct sym_dwarf *dw, struct dw_cu *cu, struct dw_cuidx **out)
{
	struct dw_cuidx *x;
	int ret = -HWT_ENOTSUP;

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	if (cu->reader == DW_READER_NATIVE) {
		ret = dwn_build_unit(dw, cu, x);
		if (ret == 0)
			cu->built_by = DW_READER_NATIVE;
		if (ret == -HWT_ENOTSUP && dw->mode == HWT_SYM_DWARF_AUTO) {
			/* a form or opcode we do not read: libdwarf does */
			sym_log(dw->obj, HWT_LOG_DEBUG,
				"%s: unit at 0x%llx: native DWARF reader declined; using libdwarf",
				dw->obj->path, (unsigned long long)cu->off);
			dw_cuidx_free(x);
			x = calloc(1, sizeof(*x));
			if (!x)
				return -ENOMEM;
			cu->reader = DW_READER_LIBDWARF;
		}
	}
	if (cu->reader == DW_READER_LIBDWARF) {
		ret = dwl_build_unit(dw, cu, x);
		if (ret == 0)
			cu->built_by = DW_READER_LIBDWARF;
	}
	if (ret < 0) {
		dw_cuidx_free(x);
		return ret;
	}
	if (cu->built_by == DW_READER_NATIVE)
		atomic_fetch_add(&dw->built_native, 1);
	else
		atomic_fetch_add(&dw->built_libdwarf, 1);
	*out = x;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Lookup                                                                    */

static struct sym_dwarf *get_dwarf(struct hwt_sym_obj *obj)
{
	int state = atomic_load_explicit(&obj->dwarf_state, memory_order_acquire);

	if (state == 1)
		return obj->dw;
	if (state < 0 || !obj->dwelf)
		return NULL;
	pthread_mutex_lock(&obj->lock);
	state = atomic_load_explicit(&obj->dwarf_state, memory_order_relaxed);
	if (state == 0) {
		struct sym_dwarf *dw = NULL;

		if (dwarf_open(obj, &dw) == 0) {
			obj->dw = dw;
			state = 1;
		} else {
			state = -1;
		}
		atomic_store_explicit(&obj->dwarf_state, state, memory_order_release);
	}
	pthread_mutex_unlock(&obj->lock);
	return state == 1 ? obj->dw : NULL;
}

static struct dw_cuidx *get_unit(struct hwt_sym_obj *obj, struct sym_dwarf *dw, uint32_t i)
{
	struct dw_cu *cu = &dw->cus[i];
	struct dw_cuidx *x = atomic_load_explicit(&cu->idx, memory_order_acquire);

	if (x)
		return x;
	pthread_mutex_lock(&obj->lock);
	x = atomic_load_explicit(&cu->idx, memory_order_relaxed);
	if (!x && !cu->failed) {
		int ret = build_unit(dw, cu, &x);

		if (ret < 0) {
			cu->failed = true;
			x = NULL;
			if (!atomic_exchange(&obj->warned_dwarf, true))
				sym_log(obj, HWT_LOG_WARN,
					"%s: malformed DWARF in unit at 0x%llx (%s); using symbols",
					obj->path, (unsigned long long)cu->die_off,
					hwt_strerror(ret));
		} else {
			atomic_store_explicit(&cu->idx, x, memory_order_release);
		}
	}
	pthread_mutex_unlock(&obj->lock);
	return x;
}

/* The unit ranges containing addr: there may be more than one when units
 * overlap (discarded COMDAT code at address 0, malformed input). */
static long find_crange(const struct sym_dwarf *dw, uint64_t addr)
{
	size_t lo = sym_upper_bound(dw->crange_lo, dw->ncranges, addr);

	/* the last range starting at or below addr that contains it */
	for (size_t i = lo; i-- > 0;) {
		if (addr < dw->cranges[i].hi)
			return (long)i;
		if (lo - i > 8)
			break;
	}
	return -1;
}

/* Keys <= v, walking forward from from (keys <= an earlier v): a few steps
 * for the next address of a sorted batch, else a search. */
static size_t upper_from(const struct sym_keys *ks, size_t from, uint64_t v)
{
	for (unsigned step = 0; step < 2 * SYM_KEYS_BLOCK; step++, from++) {
		if (from == ks->n || ks->k[from] > v)
			return from;
	}
	return sym_keys_upper(ks, v);
}

/* The same for compact rows. */
static size_t r32_upper_from(const struct dw_rows32 *t, size_t from, uint64_t addr)
{
	for (unsigned step = 0; step < 2 * SYM_KEYS_BLOCK; step++, from++) {
		if (from == t->n || (uint64_t)t->k[from] + t->base > addr)
			return from;
	}
	return r32_upper(t, addr);
}

static const char *scope_name(struct hwt_sym_obj *obj, struct dw_scope *s, uint64_t addr, bool raw)
{
	const char *name = s->name;

	if (!s->is_linkage) {
		/* binutils: in a mangling language, a name that is not a
		 * linkage name (main, extern "C" functions, clones) yields to
		 * the ELF symbol that starts exactly where the function does.
		 * (binutils' very first answer for such a function is the
		 * containing symbol whatever its start; it then caches this
		 * rule, which is what it answers from then on.) */
		long i = sym_symtab_find(obj, addr, true);

		while (i > 0 && obj->syms[i].addr > s->lo)
			i--;
		if (i >= 0 && obj->syms[i].addr == s->lo)
			return sym_entry_name(&obj->syms[i], raw);
	}
	if (!name)
		return NULL;
	if (raw)
		return name;
	return sym_demangle_cached(&s->demangled, name);
}

int sym_dwarf_lookup(struct hwt_sym_obj *obj, uint64_t addr, unsigned flags,
		     struct hwt_sym_frame *frames, unsigned max, unsigned *depth,
		     struct sym_dwarf_cursor *cur)
{
	struct sym_dwarf *dw = get_dwarf(obj);
	const struct dw_line *row = NULL;
	struct dw_line rowbuf;
	struct dw_cuidx *x = NULL;
	bool raw = flags & HWT_SYM_RAW;
	int32_t sc = -1;
	unsigned n = 0, d = 0;
	size_t ri, si;

	*depth = 0;
	if (!dw || dw->ncranges == 0)
		return 0;
	if (cur && cur->unit && addr >= cur->addr && addr < cur->hi) {
		/* sorted batch: same unit range, walk forward */
		x = (struct dw_cuidx *)cur->unit;
		ri = x->r32.k ? r32_upper_from(&x->r32, cur->row, addr)
			      : upper_from(&x->row_addr, cur->row, addr);
		si = upper_from(&x->seg_start, cur->seg, addr);
	} else {
		long r = find_crange(dw, addr);

		if (cur)
			cur->unit = NULL;
		if (r < 0)
			return 0;
		x = get_unit(obj, dw, dw->cranges[r].cu);
		if (!x)
			return 0;
		ri = x->r32.k ? r32_upper(&x->r32, addr)
			      : sym_keys_upper_pf(&x->row_addr, addr, x->rows, sizeof(*x->rows));
		si = sym_keys_upper_pf(&x->seg_start, addr, x->seg_scope, sizeof(*x->seg_scope));
		if (cur) {
			cur->hi = dw->cranges[r].hi;
			if ((size_t)r + 1 < dw->ncranges && dw->cranges[r + 1].lo < cur->hi)
				cur->hi = dw->cranges[r + 1].lo;
		}
	}
	if (cur) {
		cur->unit = x;
		cur->addr = addr;
		cur->row = ri;
		cur->seg = si;
	}
	/* the row at or before addr, unless past the end of a sequence */
	if (x->r32.k) {
		if (ri > 0 && ri < x->r32.n && !r32_is_end(x->r32.v[ri - 1])) {
			r32_unpack(x->r32.v[ri - 1], &rowbuf);
			row = &rowbuf;
		}
	} else if (ri > 0 && ri < x->row_addr.n && x->rows[ri - 1].file != UINT32_MAX) {
		row = &x->rows[ri - 1];
	}
	sc = si == 0 ? -1 : x->seg_scope[si - 1];
	if (!row && sc < 0)
		return 0;
	/* Innermost frame: the function owning the address, at the row's line. */
	if (max > 0) {
		frames[0].func = sc >= 0 ? scope_name(obj, &x->scopes[sc], addr, raw) : NULL;
		frames[0].file = row ? x->files[row->file] : NULL;
		frames[0].line = row ? row->line : 0;
		frames[0].column = row ? row->column : 0;
		frames[0].discriminator = row ? row->discriminator : 0;
		n = 1;
	}
	d = 1;
	if (sc >= 0 && (flags & HWT_SYM_NO_INLINE)) {
		/* only the real function: walk out to it, keep the row */
		while (x->scopes[sc].parent >= 0 && d < MAX_DIE_DEPTH) {
			sc = x->scopes[sc].parent;
			d++;
		}
		if (max > 0)
			frames[0].func = scope_name(obj, &x->scopes[sc], addr, raw);
		*depth = 1;
		return (int)n;
	}
	/* Each inlined scope adds its caller, at the call site. */
	while (sc >= 0 && x->scopes[sc].is_inline && x->scopes[sc].parent >= 0 &&
	       d < MAX_DIE_DEPTH) {
		const struct dw_scope *in = &x->scopes[sc];
		int32_t parent = in->parent;

		if (n < max) {
			struct hwt_sym_frame *f = &frames[n++];

			f->func = scope_name(obj, &x->scopes[parent], addr, raw);
			f->file = in->call_file < x->nfiles ? x->files[in->call_file] : NULL;
			f->line = in->call_line;
			f->column = in->call_column;
			f->discriminator = 0;
		}
		d++;
		sc = parent;
	}
	*depth = d;
	return (int)n;
}

void sym_dwarf_stats(const struct hwt_sym_obj *obj, size_t *units, size_t *native, size_t *libdwarf)
{
	int state =
	    atomic_load_explicit(&((struct hwt_sym_obj *)obj)->dwarf_state, memory_order_acquire);
	const struct sym_dwarf *dw = state == 1 ? obj->dw : NULL;

	*units = dw ? dw->ncus : 0;
	*native = dw ? atomic_load(&((struct sym_dwarf *)dw)->built_native) : 0;
	*libdwarf = dw ? atomic_load(&((struct sym_dwarf *)dw)->built_libdwarf) : 0;
}
