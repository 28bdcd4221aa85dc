/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/flow.c - phase 2: replays segment logs, in stream order, into
 * per-thread call stacks, the profile (per-block counts) and records for
 * the sinks.
 *
 * Stacks: a near call pushes a frame (its return address, the callee, the
 * time and instruction count at entry); a return pops to the frame whose
 * return address it went to. A return that matches no frame returns from a
 * frame that began before the trace (or before a gap): it is reported with
 * HWT_DEC_RF_UNKNOWN_FRAME, nothing is invented. Interrupts (async
 * branches) and far calls push frames too; a far return pops to the newest
 * of those. A direct call to the next instruction is position-independent
 * code fetching its address, not a call.
 *
 * Calls that leave an address filter return untraced: tracing resumes
 * (TIP.PGE) at the return address. An enable at the return address of an
 * open near frame, not where tracing stopped, is that return: it pops to
 * the newest such frame (HWT_DEC_RF_UNWOUND, no return instruction seen).
 *
 * Each stack is indexed by return address (a hash of frame chains, newest
 * first), so that a return matching no frame, or an older one, costs no
 * scan of a deep stack; at MAX_DEPTH the oldest half is dropped at once.
 * Frames enter the index when a return first needs it (one that does not
 * pop the newest frame), not at each call: most returns pop the newest.
 *
 * A sink that takes batches (struct hwt_dec_sink.batch) gets calls and
 * returns as a few fields each, gathered per thread and handed over
 * before the next record of another kind, a thread change, or the end of
 * the segment; their times are not looked up. Most records of call-heavy
 * code are calls and returns: a full record and its time cost more than
 * the stack itself.
 *
 * A sink with a call tree (struct hwt_dec_tree) gets neither: each frame
 * keeps the sink's node, a call finds its node in a cache by (parent
 * node, callee) and a return pops; instructions and calls are counted per
 * node here. A thread is in tree mode from the first call that top()
 * anchors to the sink's innermost node (frames [tlo, depth) have nodes,
 * the anchor is the node at tlo) until a record of it, a thread change, a
 * return below tlo or a drop at MAX_DEPTH: sync() then gives the sink its
 * stack back, and batches go on. From depth 0 (tlo 0), what changes the
 * depth-0 code (a block there with HWT_DEC_F_BASE_BLOCKS, a return out of
 * an older frame) goes to the tree's base() when it has one, and names the
 * new anchor: tree mode goes on (filtered traces enter and leave it at
 * every crossing of the filter otherwise). At the end of each segment sync() gives
 * the sink its stack and the thread stays in tree mode.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/flow.h"
#include "decoder/seg.h"

enum {
	FRAME_NEAR = 0,
	FRAME_ASYNC = 1, /* interrupt/exception */
	FRAME_FAR = 2,	 /* SYSCALL and other far calls */
	MAX_DEPTH = 1 << 16,
	BATCH_MAX = 1024, /* calls and returns per batch */
	RECS_MAX = 64,	  /* records per recs() of rec_run() */
	TCACHE_BITS = 12, /* tree mode's call cache */
};

/* Tree mode's call cache: a call to `to` from the sink's node parent1 - 1
 * (0: empty) entered node. */
struct tcache {
	uint64_t to;
	uint32_t parent1, node;
};

struct frame {
	uint64_t ret_addr;
	uint64_t func;
	uint64_t call_tsc;
	uint64_t insns; /* the thread's count at entry */
	uint32_t older; /* 1 + the next older frame in its bucket; 0: none */
	uint32_t fence; /* 1 + the newest non-near frame up to here; 0: none */
	uint32_t pnode; /* tree mode: the sink's node of the code that made
			 * the call (the innermost again when it returns) */
	uint8_t kind;
	bool has_time;
};

struct thread {
	int32_t pid, tid;
	struct frame *stack;
	size_t depth, cap;
	uint32_t *bucket; /* cap entries: 1 + the newest frame there; 0 */
	size_t indexed;	  /* frames [0, indexed) are in the index and have
			   * their fence (tree mode's pushes leave it) */
	uint64_t insns;
	uint64_t dropped;    /* frames dropped at MAX_DEPTH */
	uint64_t off_at;     /* tracing stopped asynchronously here; 0 */
	uint64_t run;	     /* hwt_dec_context.run */
	struct thread *next; /* hash chain */
	struct thread *all;  /* every thread, newest first */
	/* Tree mode (see the top): frames from tlo have pnodes (the one at
	 * tlo: anchor, the sink's node at depth tlo), tnode is the
	 * innermost's; instructions up to mark are counted. */
	bool tmode;
	size_t tlo;
	uint32_t anchor, tnode;
	uint64_t mark;
	/* The count the sink has from the thread's last record, batch entry
	 * or sync (UINT64_MAX: none since the run began or a record from
	 * outside the replay): an event at that count carries nothing to a
	 * sink with a call tree (do_event()). */
	uint64_t seen;
	/* Depth-0 code in tree mode (base()): the thread's number (1..,
	 * for the block memo), the image of the last block the sink got
	 * (NULL: none since tree mode began), the nodes base() holds
	 * returns out of older frames to, by their target (rto 0: none;
	 * rto_slot()), and whether top() declined the thread at a depth-0
	 * block (the sink filters it out: its blocks stay records). */
	uint32_t serial;
	bool no_block_top;
	const struct hwt_dec_image *bimg;
	uint64_t rto[4];
	uint32_t rnode[4];
};

static inline size_t rto_slot(uint64_t to)
{
	return (size_t)(to ^ (to >> 7)) & 3;
}

/* The node base() holds a block (by its id) to for thread serial (0:
 * none). */
struct bmemo {
	uint32_t node, serial;
};

struct target_count {
	uint64_t from, target, count;
};

/* Targets a block's entry in the target cache keeps (struct
 * hwt_dec_flow.tcache). */
enum { TC_WAYS = 4 };

/* A block's entry in the target cache: its last targets and their
 * counts, the newest first; an empty way's target and count are 0. The
 * branch is the block's end (the block by its id); a count that reaches
 * UINT32_MAX goes to the table (the entry is 48 bytes, as two targets
 * with 64-bit counts and their branch were: a larger cache per block
 * took fresh pages per decode). */
struct tc_line {
	uint64_t target[TC_WAYS];
	uint32_t count[TC_WAYS];
};

struct hwt_dec_flow {
	struct hwt_dec *dec;
	/* Threads by tid: 1 << bbits buckets, made with the first thread
	 * and doubled past a thread a bucket (a decode has one thread or a
	 * few: no table of hundreds to clear and scan per decode). */
	struct thread **buckets, *threads;
	unsigned int bbits;
	struct thread *cur;
	bool have_ctx;
	const struct hwt_dec_image *image;
	uint64_t calls, returns, unknown_returns, unwound, nthreads;
	/* Profile, by block id. */
	uint64_t *count, *taken, *partial, *partial_insns;
	size_t ncount;
	struct target_count *targets; /* open addressing on (from, target) */
	size_t cap_targets, ntargets;
	/* Per block id, its last TC_WAYS targets and their counts, the
	 * oldest folded into the table when a new target comes (most
	 * indirect branches have one target, two in turn or a few). */
	struct tc_line *tcache;
	/* Calls and returns not yet handed to the batch sink, of thread
	 * (bpid, btid); the last one at stream position bpos. */
	struct hwt_dec_callret *batch;
	size_t nbatch;
	/* rec_run()'s records for the sink's recs(). */
	struct hwt_dec_rec *recs;
	int32_t bpid, btid;
	uint64_t bpos;
	/* Tree mode: the sink's tree (NULL: none), the counts per node
	 * since the last hand-over, the call cache. */
	const struct hwt_dec_tree *tree;
	struct hwt_dec_tree_count *tcount;
	size_t ntcount;
	uint64_t tcalls, treturns, tunwound;
	bool tcounted;
	struct tcache *tcache_calls;
	/* base()'s answers it holds to (hwt_dec_tree_base.hold), by block
	 * id, and how many depth-0 records they stood for since the last
	 * counts() (returns out of older frames among them). */
	struct bmemo *bmemo;
	size_t nbmemo;
	uint64_t theld, theld_unknown;
};

int hwt_dec_flow_alloc(struct hwt_dec *dec, struct hwt_dec_flow **out)
{
	struct hwt_dec_flow *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->dec = dec;
	*out = f;
	return 0;
}

void hwt_dec_flow_free(struct hwt_dec_flow *f)
{
	if (!f)
		return;
	for (struct thread *t = f->threads, *n; t; t = n) {
		n = t->all;
		free(t->stack);
		free(t->bucket);
		free(t);
	}
	free(f->buckets);
	free(f->count);
	free(f->taken);
	free(f->partial);
	free(f->partial_insns);
	free(f->targets);
	free(f->tcache);
	free(f->batch);
	free(f->recs);
	free(f->tcount);
	free(f->tcache_calls);
	free(f->bmemo);
	free(f);
}

void hwt_dec_flow_stats(const struct hwt_dec_flow *f, struct hwt_dec_stats *st)
{
	st->calls = f->calls;
	st->returns = f->returns;
	st->unknown_returns = f->unknown_returns;
	st->unwound = f->unwound;
	st->threads = f->nthreads;
}

static inline size_t thread_hash(const struct hwt_dec_flow *f, int32_t tid)
{
	return ((uint32_t)tid * 2654435761u) >> (32 - f->bbits);
}

/* Makes the table 1 << bbits buckets, the threads hashed anew. */
static int threads_rehash(struct hwt_dec_flow *f, unsigned int bbits)
{
	struct thread **b = calloc((size_t)1 << bbits, sizeof(*b));

	if (!b)
		return -ENOMEM;
	free(f->buckets);
	f->buckets = b;
	f->bbits = bbits;
	for (struct thread *t = f->threads; t; t = t->all) {
		size_t h = thread_hash(f, t->tid);

		t->next = b[h];
		b[h] = t;
	}
	return 0;
}

static struct thread *thread_get(struct hwt_dec_flow *f, int32_t pid, int32_t tid)
{
	struct thread *t;
	size_t h;

	if (f->buckets) {
		for (t = f->buckets[thread_hash(f, tid)]; t; t = t->next) {
			if (t->tid == tid && t->pid == pid)
				return t;
		}
	}
	if ((!f->buckets || f->nthreads >> f->bbits) &&
	    threads_rehash(f, f->buckets ? f->bbits + 1 : 3) < 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pid = pid;
	t->tid = tid;
	t->seen = UINT64_MAX;
	h = thread_hash(f, tid);
	t->next = f->buckets[h];
	f->buckets[h] = t;
	t->all = f->threads;
	f->threads = t;
	f->nthreads++;
	t->serial = (uint32_t)f->nthreads;
	return t;
}

void hwt_dec_flow_leave_tree(struct hwt_dec_flow *f)
{
	/* Only the current thread can be in tree mode, and the sink got its
	 * stack at the end of the last segment: nothing ran since. */
	if (f->cur) {
		f->cur->tmode = false;
		f->cur->seen = UINT64_MAX;
	}
}

void hwt_dec_flow_gap(struct hwt_dec_flow *f)
{
	/* Frames stay: returns after the gap are checked against them and
	 * those that do not match become unknown-frame returns. */
	(void)f;
}

/* ------------------------------------------------------------------------ */
/* Profile                                                                   */

static int profile_grow(struct hwt_dec_flow *f, uint32_t id)
{
	size_t n = f->ncount ? f->ncount : hwt_dec_ids_first(f->dec);
	uint64_t **arrs[] = {&f->count, &f->taken, &f->partial, &f->partial_insns};
	struct tc_line *tc;

	if (id < f->ncount)
		return 0;
	while (n <= id)
		n *= 2;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(arrs); i++) {
		uint64_t *p = realloc(*arrs[i], n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		memset(p + f->ncount, 0, (n - f->ncount) * sizeof(*p));
		*arrs[i] = p;
	}
	tc = realloc(f->tcache, n * sizeof(*tc));
	if (!tc)
		return -ENOMEM;
	memset(tc + f->ncount, 0, (n - f->ncount) * sizeof(*tc));
	f->tcache = tc;
	f->ncount = n;
	return 0;
}

static uint64_t target_hash(uint64_t from, uint64_t target)
{
	uint64_t h = from * 0x9e3779b97f4a7c15ull ^ target * 0xc2b2ae3d27d4eb4full;

	return h ^ (h >> 31);
}

static int target_add(struct hwt_dec_flow *f, uint64_t from, uint64_t target, uint64_t count)
{
	size_t mask, i;

	if ((f->ntargets + 1) * 2 > f->cap_targets) {
		size_t ncap = f->cap_targets ? f->cap_targets * 2 : 256;
		struct target_count *nt = calloc(ncap, sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		for (size_t k = 0; k < f->cap_targets; k++) {
			struct target_count *o = &f->targets[k];

			if (!o->count)
				continue;
			for (i = target_hash(o->from, o->target) & (ncap - 1); nt[i].count;
			     i = (i + 1) & (ncap - 1))
				;
			nt[i] = *o;
		}
		free(f->targets);
		f->targets = nt;
		f->cap_targets = ncap;
	}
	mask = f->cap_targets - 1;
	for (i = target_hash(from, target) & mask;; i = (i + 1) & mask) {
		struct target_count *t = &f->targets[i];

		if (!t->count) {
			*t = (struct target_count){from, target, count};
			f->ntargets++;
			return 0;
		}
		if (t->from == from && t->target == target) {
			t->count += count;
			return 0;
		}
	}
}

/* An indirect branch of block bb went to target. */
static int target_seen(struct hwt_dec_flow *f, const struct hwt_dec_bb *bb, uint64_t target)
{
	struct tc_line *c;
	int err;

	if (bb->id >= f->ncount) {
		err = profile_grow(f, bb->id);
		if (err < 0)
			return err;
	}
	c = &f->tcache[bb->id];
	for (int k = 0; k < TC_WAYS; k++) {
		if (c->count[k] && c->target[k] == target) {
			if (c->count[k] == UINT32_MAX) {
				err = target_add(f, bb->end_ip, target, c->count[k]);
				if (err < 0)
					return err;
				c->count[k] = 0;
			}
			c->count[k]++;
			return 0;
		}
	}
	/* The oldest out, the new one first. */
	if (c->count[TC_WAYS - 1]) {
		err = target_add(f, bb->end_ip, c->target[TC_WAYS - 1], c->count[TC_WAYS - 1]);
		if (err < 0)
			return err;
	}
	memmove(c->target + 1, c->target, (TC_WAYS - 1) * sizeof(*c->target));
	memmove(c->count + 1, c->count, (TC_WAYS - 1) * sizeof(*c->count));
	c->target[0] = target;
	c->count[0] = 1;
	return 0;
}

int hwt_dec_flow_finish(struct hwt_dec_flow *f)
{
	/* Tree mode's counts go to the sink (sums: their order is free). */
	if (f->tree && f->tcounted) {
		struct hwt_dec_tree_counts c = {f->tcount,	 f->ntcount,  f->tcalls,
						f->treturns,	 f->tunwound, f->theld,
						f->theld_unknown};
		int err = f->tree->counts(f->dec->sinks[0].ctx, &c);

		memset(f->tcount, 0, f->ntcount * sizeof(*f->tcount));
		f->tcalls = f->treturns = f->tunwound = 0;
		f->theld = f->theld_unknown = 0;
		f->tcounted = false;
		if (err < 0)
			return err;
	}
	for (size_t i = 0; i < f->ncount; i++) {
		struct tc_line *c = &f->tcache[i];
		const struct hwt_dec_bb *bb;

		/* (Way 0 is the newest target, never at count 0.) */
		if (!c->count[0])
			continue;
		/* (The block of id i made the entry.) */
		bb = hwt_dec_bb_by_id(f->dec->icache, (uint32_t)i);
		for (int k = 0; k < TC_WAYS; k++) {
			if (c->count[k]) {
				int err = target_add(f, bb->end_ip, c->target[k], c->count[k]);

				if (err < 0)
					return err;
				c->target[k] = 0;
				c->count[k] = 0;
			}
		}
	}
	return 0;
}

int hwt_dec_profile_next(const struct hwt_dec *dec, size_t *iter, struct hwt_dec_bb_count *out)
{
	const struct hwt_dec_flow *f;

	if (!dec || !iter || !out)
		return 0;
	f = dec->flow;
	while (*iter < f->ncount) {
		size_t i = (*iter)++;

		if (!f->count[i] && !f->partial[i])
			continue;
		out->bb = hwt_dec_bb_by_id(dec->icache, (uint32_t)i);
		if (!out->bb)
			continue;
		out->count = f->count[i];
		out->taken = f->taken[i];
		out->partial = f->partial[i];
		out->partial_insns = f->partial_insns[i];
		return 1;
	}
	return 0;
}

static int cmp_target(const void *a, const void *b)
{
	const struct hwt_dec_target_count *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->target < y->target ? -1 : x->target > y->target;
}

size_t hwt_dec_profile_targets(const struct hwt_dec *dec, uint64_t from,
			       struct hwt_dec_target_count *out, size_t n)
{
	const struct hwt_dec_flow *f;
	struct hwt_dec_target_count *all = NULL;
	size_t k = 0, cap = 0;

	if (!dec)
		return 0;
	f = dec->flow;
	for (size_t i = 0; i < f->cap_targets; i++) {
		const struct target_count *t = &f->targets[i];

		if (!t->count || t->from != from)
			continue;
		if (k == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct hwt_dec_target_count *p = realloc(all, ncap * sizeof(*p));

			if (!p)
				break;
			all = p;
			cap = ncap;
		}
		all[k++] = (struct hwt_dec_target_count){t->target, t->count};
	}
	if (k)
		qsort(all, k, sizeof(*all), cmp_target);
	for (size_t i = 0; i < k && i < n && out; i++)
		out[i] = all[i];
	free(all);
	return k;
}

/* ------------------------------------------------------------------------ */
/* Replay                                                                    */

/* A record's first fields and its time, as rec_scan() copies each in one
 * piece (the layout of struct hwt_dec_rec). */
struct rec_head {
	uint32_t type, flags;
	int32_t pid, tid;
};

struct rec_tt {
	uint64_t tsc, time;
};

_Static_assert(offsetof(struct hwt_dec_rec, type) == 0 &&
		   offsetof(struct hwt_dec_rec, flags) == 4 &&
		   offsetof(struct hwt_dec_rec, pid) == 8 &&
		   offsetof(struct hwt_dec_rec, tid) == 12,
	       "struct rec_head is the start of struct hwt_dec_rec");
_Static_assert(offsetof(struct hwt_dec_rec, time) == offsetof(struct hwt_dec_rec, tsc) + 8,
	       "struct rec_tt is tsc and time of struct hwt_dec_rec");

/* The time of the replay for rec_run(): seg_time_at()'s answer for
 * positions [lo, lo + span) as a record has it: its flags
 * (HWT_DEC_RF_TIME or 0), tsc and perf time (0 without a valid
 * conversion). */
struct rec_time {
	uint64_t lo, span;
	struct rec_tt tt;
	uint32_t flags;
};

struct replay {
	struct hwt_dec_flow *f;
	struct seg *s;
	size_t tcur;
	bool want_block, want_call, want_ret;
	bool batching;	    /* calls and returns go to the sink's batch */
	bool treeing;	    /* ... or to the sink's call tree */
	bool base_only;	    /* HWT_DEC_F_BASE_BLOCKS */
	bool tree_base;	    /* ... and the sink's tree has base() */
	size_t bcur;	    /* seg_time_at() cursor of the batches */
	struct rec_time rt; /* rec_run()'s last time answer (span 0: none) */
	/* Tree mode: the stream position of the last call or return it
	 * stood for since the last sync() (tpos_valid). */
	uint64_t tpos;
	bool tpos_valid;
	/* The last depth-0 block or return the current thread held to
	 * base()'s answer for (kept: NULL when none since its last base()
	 * or sync()): a block item (full: it ran to its branch) in image,
	 * or a return (from, to, branch at stream position pos); the
	 * thread's count there, and the node. */
	struct {
		const struct seg_item *it;
		bool kept, full, ret;
		const struct hwt_dec_image *image;
		uint64_t from, to, pos, insns;
		uint8_t branch;
		uint32_t node;
	} pend;
};

/* Hands the gathered calls and returns to the sink, with the time of the
 * last (one lookup per batch). */
static int batch_flush(struct replay *r)
{
	struct hwt_dec_flow *f = r->f;
	struct hwt_dec_batch b;
	const struct hwt_dec_sink *sink;
	const struct hwt_dec_tconv *tc = &f->dec->cfg.tconv;

	if (!f->nbatch)
		return 0;
	b = (struct hwt_dec_batch){f->bpid, f->btid, 0, f->batch, f->nbatch, 0, 0, 0};
	f->nbatch = 0;
	if (seg_time_at(r->s, f->bpos, &r->bcur, &b.tsc)) {
		b.flags = HWT_DEC_RF_TIME;
		b.time = tc->valid ? hwt_dec_tsc_to_perf(tc, b.tsc) : 0;
	}
	sink = &f->dec->sinks[0];
	return sink->batch(sink->ctx, &b);
}

/* Adds a call or return of the current thread t, at stream position pos,
 * to the batch. */
static inline int batch_add(struct replay *r, struct thread *t, uint8_t type, uint32_t flags,
			    uint64_t ip, uint8_t branch, uint64_t pos)
{
	struct hwt_dec_flow *f = r->f;
	struct hwt_dec_callret *e;

	if (f->nbatch == BATCH_MAX) {
		int err = batch_flush(r);

		if (err < 0)
			return err;
	}
	if (!f->nbatch) {
		f->bpid = t->pid;
		f->btid = t->tid;
	}
	t->seen = t->insns;
	f->bpos = pos;
	e = &f->batch[f->nbatch++];
	e->ip = ip;
	e->insns = t->insns;
	e->depth = (uint32_t)t->depth;
	e->flags = flags;
	e->type = type;
	e->branch = branch;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Tree mode                                                                 */

static void tree_at(const struct thread *t, struct hwt_dec_tree_at *at)
{
	memset(at, 0, sizeof(*at));
	at->pid = t->pid;
	at->tid = t->tid;
	at->depth = (uint32_t)t->depth;
	at->insns = t->insns;
}

/* The instructions since the mark ran in t's innermost node. */
static inline void tree_self(struct hwt_dec_flow *f, struct thread *t)
{
	f->tcount[t->tnode].self += t->insns - t->mark;
	t->mark = t->insns;
	f->tcounted = true;
}

/* Room in the counts for node. */
static int tcount_room(struct hwt_dec_flow *f, uint32_t node)
{
	size_t n = f->ntcount ? f->ntcount : 256;
	struct hwt_dec_tree_count *p;

	if (node < f->ntcount)
		return 0;
	while (n <= node)
		n *= 2;
	p = realloc(f->tcount, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + f->ntcount, 0, (n - f->ntcount) * sizeof(*p));
	f->tcount = p;
	f->ntcount = n;
	return 0;
}

/* The call cache's slot of a call to `to` from node parent: a hash of
 * `to` plus parent, so that the slot is an add away from the node that
 * tree_run() just entered (its calls are a chain through the cache). */
static inline size_t tcache_slot(uint64_t to, uint32_t parent)
{
	return (size_t)(((to * 0x9e3779b97f4a7c15ull) >> (64 - TCACHE_BITS)) + parent) &
	       (((size_t)1 << TCACHE_BITS) - 1);
}

static int tree_flush(struct replay *r, struct thread *t);

/* Gives the sink t's stack in tree mode (sync()); t stays in it. With
 * all, its instructions up to now are counted; else up to its last call
 * or return (the mark), and a record that follows carries the rest, as
 * after a batch: a depth-0 block names its code before they count. */
static int tree_sync_to(struct replay *r, struct thread *t, bool all)
{
	struct hwt_dec_flow *f = r->f;
	const struct hwt_dec_tconv *tc = &f->dec->cfg.tconv;
	struct hwt_dec_tree_at at;

	/* The last depth-0 code held to first (its time and code). */
	if (r->pend.kept) {
		int err = tree_flush(r, t);

		if (err < 0)
			return err;
	}
	if (all)
		tree_self(f, t);
	tree_at(t, &at);
	at.insns = t->mark;
	t->seen = t->mark;
	if (r->tpos_valid && seg_time_at(r->s, r->tpos, &r->bcur, &at.tsc)) {
		at.flags = HWT_DEC_RF_TIME;
		at.time = tc->valid ? hwt_dec_tsc_to_perf(tc, at.tsc) : 0;
	}
	r->tpos_valid = false;
	return f->tree->sync(f->dec->sinks[0].ctx, &at, t->tnode);
}

static int tree_sync(struct replay *r, struct thread *t)
{
	return tree_sync_to(r, t, true);
}

/* Ends t's tree mode: the sink gets its stack back (up to the mark
 * without all). */
static int tree_exit_to(struct replay *r, struct thread *t, bool all)
{
	if (!t->tmode)
		return 0;
	t->tmode = false;
	return tree_sync_to(r, t, all);
}

static int tree_exit(struct replay *r, struct thread *t)
{
	return tree_exit_to(r, t, true);
}

/* A call of t to `to` at stream position pos in tree mode (entering it
 * when t is not): the callee's node into *node, or HWT_DEC_NODE_NONE when
 * the call goes on as a batch entry. */
static int tree_call(struct replay *r, struct thread *t, uint64_t to, uint64_t pos, uint32_t *node)
{
	struct hwt_dec_flow *f = r->f;
	void *ctx = f->dec->sinks[0].ctx;
	struct hwt_dec_tree_at at;
	struct tcache *c;
	uint32_t n = HWT_DEC_NODE_NONE;
	int err;

	*node = HWT_DEC_NODE_NONE;
	/* A call that drops frames (MAX_DEPTH) goes as a batch entry. */
	if (t->depth >= MAX_DEPTH - 1)
		return tree_exit(r, t);
	if (!t->tmode) {
		/* Calls and returns gathered before come first. */
		err = batch_flush(r);
		if (err < 0)
			return err;
		tree_at(t, &at);
		err = f->tree->top(ctx, &at, &n);
		if (err < 0 || n == HWT_DEC_NODE_NONE)
			return err;
		err = tcount_room(f, n);
		if (err < 0)
			return err;
		t->tmode = true;
		t->tlo = t->depth;
		t->anchor = t->tnode = n;
		t->bimg = NULL;
		t->mark = t->insns;
	}
	tree_self(f, t);
	c = &f->tcache_calls[tcache_slot(to, t->tnode)];
	if (c->parent1 == t->tnode + 1 && c->to == to) {
		f->tcount[c->node].calls++;
		f->tcalls++;
		*node = c->node;
		return 0;
	}
	tree_at(t, &at);
	at.depth++;
	if (seg_time_at(r->s, pos, &r->tcur, &at.tsc)) {
		const struct hwt_dec_tconv *tc = &f->dec->cfg.tconv;

		at.flags = HWT_DEC_RF_TIME;
		at.time = tc->valid ? hwt_dec_tsc_to_perf(tc, at.tsc) : 0;
	}
	n = HWT_DEC_NODE_NONE;
	err = f->tree->child(ctx, &at, t->tnode, to, &n);
	if (err < 0)
		return err;
	if (n == HWT_DEC_NODE_NONE)
		return tree_exit(r, t);
	err = tcount_room(f, n);
	if (err < 0)
		return err;
	c->to = to;
	c->parent1 = t->tnode + 1;
	c->node = n;
	*node = n;
	return 0;
}

/* hwt_dec_emit() of the replay: calls and returns gathered before rec go
 * first, and the thread leaves tree mode. */
static int flow_emit(struct replay *r, struct hwt_dec_rec *rec)
{
	struct thread *t = r->f->cur;
	int err = t ? tree_exit_to(r, t, false) : 0;

	if (err >= 0)
		err = batch_flush(r);
	if (err >= 0)
		err = hwt_dec_emit(r->f->dec, rec);
	/* (A switch or a note carries no count to the sink.) */
	if (t && rec->type != HWT_DEC_REC_SWITCH && rec->type != HWT_DEC_REC_NOTE)
		t->seen = t->insns;
	return err;
}

/* hwt_dec_emit() for the hot records (calls and returns: no statistics
 * to count), without its loop when one sink wants them. */
static inline int emit_hot(struct hwt_dec *dec, struct hwt_dec_rec *rec)
{
	const struct hwt_dec_tconv *tc = &dec->cfg.tconv;

	if (dec->nsinks != 1)
		return hwt_dec_emit(dec, rec);
	/* As hwt_dec_emit(): the replay wants them (r->want_call/ret), and
	 * a replay that makes them has no thread in tree mode (a tree goes
	 * with batches). */
	if ((rec->flags & HWT_DEC_RF_TIME) && tc->valid)
		rec->time = hwt_dec_tsc_perf(tc, rec->tsc);
	return dec->sinks[0].rec(dec->sinks[0].ctx, rec);
}

static void rec_head(struct replay *r, struct hwt_dec_rec *rec, uint32_t type, uint64_t pos,
		     bool has_time, uint64_t tsc)
{
	struct thread *t = r->f->cur;

	rec->type = type;
	rec->flags = has_time ? HWT_DEC_RF_TIME : 0;
	rec->pid = t ? t->pid : -1;
	rec->tid = t ? t->tid : -1;
	rec->depth = t ? (uint32_t)t->depth : 0;
	rec->cpu = 0; /* no HWT_DEC_RF_CPU: ptsession sets both */
	rec->insns = t ? t->insns : 0;
	rec->offset = r->f->dec->base_pos + pos;
	rec->time = 0;
	rec->tsc = has_time ? tsc : 0;
}

static void rec_base(struct replay *r, struct hwt_dec_rec *rec, uint32_t type, uint64_t pos)
{
	struct thread *t = r->f->cur;
	uint64_t tsc;

	/* The header, and the union part of this type (hot records are
	 * calls and returns: no memset of the whole record). */
	switch (type) {
	case HWT_DEC_REC_CALL:
		memset(&rec->u.call, 0, sizeof(rec->u.call));
		break;
	case HWT_DEC_REC_RETURN:
		memset(&rec->u.ret, 0, sizeof(rec->u.ret));
		break;
	default:
		memset(&rec->u, 0, sizeof(rec->u));
		break;
	}
	rec->type = type;
	rec->flags = 0;
	rec->pid = t ? t->pid : -1;
	rec->tid = t ? t->tid : -1;
	rec->depth = t ? (uint32_t)t->depth : 0;
	rec->cpu = 0;
	rec->insns = t ? t->insns : 0;
	rec->offset = r->f->dec->base_pos + pos;
	rec->time = 0;
	rec->tsc = 0;
	if (seg_time_at(r->s, pos, &r->tcur, &tsc)) {
		rec->tsc = tsc;
		rec->flags |= HWT_DEC_RF_TIME;
	}
}

/* The bucket of a return address (t->cap is a power of two). */
static inline size_t ret_bucket(const struct thread *t, uint64_t ret_addr)
{
	uint64_t h = ret_addr * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (t->cap - 1);
}

/* Links frame k (the newest) into the index. */
static inline void index_push(struct thread *t, size_t k)
{
	struct frame *fr = &t->stack[k];
	uint32_t *b = &t->bucket[ret_bucket(t, fr->ret_addr)];

	fr->older = *b;
	*b = (uint32_t)k + 1;
	fr->fence = fr->kind != FRAME_NEAR ? (uint32_t)k + 1 : k ? t->stack[k - 1].fence : 0;
}

/* Unlinks the newest frame from the index, if it is there. */
static inline void index_pop(struct thread *t)
{
	size_t k = t->depth - 1;
	const struct frame *fr = &t->stack[k];

	if (k < t->indexed) {
		t->bucket[ret_bucket(t, fr->ret_addr)] = fr->older;
		t->indexed = k;
	}
}

/* Links the frames tree mode pushed into the index. */
static inline void index_all(struct thread *t)
{
	for (size_t k = t->indexed; k < t->depth; k++)
		index_push(t, k);
	t->indexed = t->depth;
}

/* The newest near frame returning to ret_addr with no other kind of frame
 * above it: its index + 1, or 0. */
static size_t near_frame(struct thread *t, uint64_t ret_addr)
{
	uint32_t fence, k;

	if (!t->depth)
		return 0;
	index_all(t);
	fence = t->stack[t->depth - 1].fence;
	for (k = t->bucket[ret_bucket(t, ret_addr)]; k > fence; k = t->stack[k - 1].older) {
		if (t->stack[k - 1].ret_addr == ret_addr)
			return k;
	}
	return 0;
}

/* Room for one more frame: the stack grows to MAX_DEPTH, then drops its
 * oldest half (once per MAX_DEPTH / 2 calls, not a move per call). */
static int stack_room(struct thread *t)
{
	size_t ncap = t->cap, drop = 0;

	if (t->depth < t->cap)
		return 0;
	if (t->cap >= MAX_DEPTH) {
		drop = t->depth / 2;
		memmove(t->stack, t->stack + drop, (t->depth - drop) * sizeof(*t->stack));
		t->depth -= drop;
		t->dropped += drop;
	} else {
		struct frame *p;
		uint32_t *b;

		ncap = t->cap ? t->cap * 2 : 64;
		p = realloc(t->stack, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->stack = p;
		b = realloc(t->bucket, ncap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		t->bucket = b;
	}
	/* The index anew, at the new size or positions. */
	t->cap = ncap;
	memset(t->bucket, 0, t->cap * sizeof(*t->bucket));
	for (size_t k = 0; k < t->depth; k++)
		index_push(t, k);
	t->indexed = t->depth;
	return 0;
}

/* The CALL record of frame fr, just pushed (apart from the hot path: its
 * record and time make a large stack frame). */
static __attribute__((noinline)) int call_rec(struct replay *r, const struct frame *fr,
					      uint64_t from, uint8_t branch, uint64_t pos)
{
	struct hwt_dec_rec rec;

	rec_head(r, &rec, HWT_DEC_REC_CALL, pos, fr->has_time, fr->call_tsc);
	if (fr->kind == FRAME_ASYNC)
		rec.flags |= HWT_DEC_RF_ASYNC;
	rec.u.call.from = from;
	rec.u.call.to = fr->func;
	rec.u.call.ret_addr = fr->ret_addr;
	rec.u.call.branch = branch;
	return emit_hot(r->f->dec, &rec);
}

static int push(struct replay *r, uint64_t from, uint64_t to, uint64_t ret_addr, uint8_t kind,
		uint8_t branch, uint64_t pos)
{
	struct hwt_dec_flow *f = r->f;
	struct thread *t = f->cur;
	struct frame *fr;
	uint32_t cnode = HWT_DEC_NODE_NONE;
	int err;

	if (!t)
		return 0;
	if (r->treeing) {
		err = tree_call(r, t, to, pos, &cnode);
		if (err < 0)
			return err;
	}
	if (__builtin_expect(t->depth >= t->cap, 0)) {
		err = stack_room(t);
		if (err < 0)
			return err;
	}
	/* Not indexed here: near_frame() and far_return() index the frames
	 * pushed since (index_all()), once each, when a return does not
	 * pop the newest frame. */
	fr = &t->stack[t->depth++];
	fr->ret_addr = ret_addr;
	fr->func = to;
	fr->kind = kind;
	fr->pnode = t->tnode;
	fr->insns = t->insns;
	fr->has_time = false;
	fr->call_tsc = 0;
	if (cnode != HWT_DEC_NODE_NONE) {
		/* Tree mode: counted per node, nothing to hand over. */
		t->tnode = cnode;
		r->tpos = pos;
		r->tpos_valid = true;
		f->calls++;
		return 0;
	}
	/* The entry time is only needed for records (durations). */
	if ((r->want_call || r->want_ret) && !r->batching)
		fr->has_time = seg_time_at(r->s, pos, &r->tcur, &fr->call_tsc);
	f->calls++;
	if (!r->want_call)
		return 0;
	if (r->batching)
		return batch_add(r, t, HWT_DEC_REC_CALL, kind == FRAME_ASYNC ? HWT_DEC_RF_ASYNC : 0,
				 to, branch, pos);
	return call_rec(r, fr, from, branch, pos);
}

/* The RETURN record of frame fr, just popped. */
static __attribute__((noinline)) int ret_rec(struct replay *r, const struct frame *fr, bool unwound,
					     uint64_t from, uint64_t to, uint8_t branch,
					     uint64_t pos)
{
	struct hwt_dec_rec rec;

	rec_base(r, &rec, HWT_DEC_REC_RETURN, pos);
	if (fr->kind == FRAME_ASYNC)
		rec.flags |= HWT_DEC_RF_ASYNC;
	if (unwound)
		rec.flags |= HWT_DEC_RF_UNWOUND;
	rec.u.ret.from = from;
	rec.u.ret.to = to;
	rec.u.ret.func = fr->func;
	rec.u.ret.call_tsc = fr->has_time ? fr->call_tsc : 0;
	rec.u.ret.insns = r->f->cur->insns - fr->insns;
	rec.u.ret.branch = branch;
	return emit_hot(r->f->dec, &rec);
}

/* Pops frames down to and including index k; with untraced, k's return
 * was not seen either (tracing was off). */
static int pop_to(struct replay *r, size_t k, uint64_t from, uint64_t to, uint8_t branch,
		  uint64_t pos, bool untraced)
{
	struct hwt_dec_flow *f = r->f;
	struct thread *t = f->cur;
	int err;

	if (t->tmode && k < t->tlo) {
		/* Below the anchor: the sink's stack knows the frames. */
		err = tree_exit(r, t);
		if (err < 0)
			return err;
	}
	if (t->tmode) {
		tree_self(f, t);
		while (t->depth > k) {
			bool unwound;

			index_pop(t);
			--t->depth;
			unwound = t->depth > k || untraced;
			f->returns++;
			f->unwound += unwound;
			f->treturns++;
			f->tunwound += unwound;
		}
		t->tnode = t->stack[k].pnode; /* k >= tlo: its caller's */
		r->tpos = pos;
		r->tpos_valid = true;
		return 0;
	}
	while (t->depth > k) {
		const struct frame *fr;
		bool unwound;

		index_pop(t);
		fr = &t->stack[--t->depth]; /* stays in place until the next push */
		unwound = t->depth > k || untraced;

		f->returns++;
		f->unwound += unwound;
		if (!r->want_ret)
			continue;
		if (r->batching)
			err = batch_add(r, t, HWT_DEC_REC_RETURN,
					(fr->kind == FRAME_ASYNC ? HWT_DEC_RF_ASYNC : 0) |
					    (unwound ? HWT_DEC_RF_UNWOUND : 0),
					to, branch, pos);
		else
			err = ret_rec(r, fr, unwound, from, to, branch, pos);
		if (err < 0)
			return err;
	}
	return 0;
}

/* Whether the current thread is at depth 0 in tree mode from depth 0,
 * with a sink whose tree takes depth-0 code (base()). */
static inline bool tree_base_ok(const struct replay *r)
{
	const struct thread *t = r->f->cur;

	return r->tree_base && t && t->tmode && !t->depth && !t->tlo;
}

/* The node base() holds block id to for thread t; HWT_DEC_NODE_NONE:
 * none. */
static inline uint32_t bmemo_get(const struct hwt_dec_flow *f, const struct thread *t, uint32_t id)
{
	return id < f->nbmemo && f->bmemo[id].serial == t->serial ? f->bmemo[id].node
								  : HWT_DEC_NODE_NONE;
}

static int bmemo_put(struct hwt_dec_flow *f, const struct thread *t, uint32_t id, uint32_t node)
{
	if (id >= f->nbmemo) {
		size_t n = f->nbmemo ? f->nbmemo : 1024;
		struct bmemo *p;

		while (n <= id)
			n *= 2;
		p = realloc(f->bmemo, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		memset(p + f->nbmemo, 0, (n - f->nbmemo) * sizeof(*p));
		f->bmemo = p;
		f->nbmemo = n;
	}
	f->bmemo[id] = (struct bmemo){node, t->serial};
	return 0;
}

/* The sink's base() for rec of thread t at depth 0 in tree mode, the
 * depth-0 code held to before it first (tree_flush()); keeps what the
 * sink holds to. */
static int base_call(struct replay *r, struct thread *t, struct hwt_dec_rec *rec,
		     struct hwt_dec_tree_base *out)
{
	struct hwt_dec_flow *f = r->f;
	const struct hwt_dec_tconv *tc = &f->dec->cfg.tconv;
	int err;

	if (r->pend.kept) {
		err = tree_flush(r, t);
		if (err < 0)
			return err;
	}
	if ((rec->flags & HWT_DEC_RF_TIME) && tc->valid)
		rec->time = hwt_dec_tsc_to_perf(tc, rec->tsc);
	out->node = HWT_DEC_NODE_NONE;
	out->hold = false;
	err = f->tree->base(f->dec->sinks[0].ctx, rec, out);
	if (err < 0 || out->node == HWT_DEC_NODE_NONE)
		return err;
	if (out->node >= f->ntcount) {
		err = tcount_room(f, out->node);
		if (err < 0)
			return err;
	}
	if (rec->type == HWT_DEC_REC_BLOCK) {
		t->bimg = rec->u.block.image;
		if (out->hold && rec->u.block.bb)
			return bmemo_put(f, t, rec->u.block.bb->id, out->node);
	} else if (out->hold && rec->u.ret.to) {
		size_t k = rto_slot(rec->u.ret.to);

		t->rto[k] = rec->u.ret.to;
		t->rnode[k] = out->node;
	}
	return 0;
}

/* rec (a depth-0 block, or a return out of a frame older than the trace
 * at depth 0) of the current thread t to the sink's base(): 1 when it
 * took it (t's anchor is the node it named), 0 when rec is to be a
 * record. The instructions since the mark (the last call or return, or
 * the last such record) are counted as the record would have carried
 * them: a block's to the node it names, a return's to the code it left. */
static int tree_base(struct replay *r, struct thread *t, struct hwt_dec_rec *rec)
{
	struct hwt_dec_tree_base out;
	int err = base_call(r, t, rec, &out);

	if (err < 0 || out.node == HWT_DEC_NODE_NONE)
		return err;
	if (rec->type != HWT_DEC_REC_BLOCK)
		tree_self(r->f, t);
	t->anchor = t->tnode = out.node;
	tree_self(r->f, t);
	return 1;
}

/* Depth-0 code of t whose node base() holds to (what tree_base() does
 * with the node, without the call): kept for tree_flush(). */
static inline void tree_hold(struct replay *r, struct thread *t, uint32_t node)
{
	struct hwt_dec_flow *f = r->f;

	if (r->pend.ret)
		tree_self(f, t);
	t->anchor = t->tnode = node;
	tree_self(f, t);
	r->pend.kept = true;
	r->pend.insns = t->insns;
	r->pend.node = node;
	f->theld++;
	f->theld_unknown += r->pend.ret;
}

static int unknown_return(struct replay *r, uint64_t from, uint64_t to, uint8_t branch,
			  uint64_t pos)
{
	struct hwt_dec_rec rec;

	r->f->returns++;
	r->f->unknown_returns++;
	if (!r->want_ret)
		return 0;
	if (to && tree_base_ok(r) && r->f->cur->rto[rto_slot(to)] == to) {
		/* base() holds the code it returns to. */
		r->pend.ret = true;
		r->pend.from = from;
		r->pend.to = to;
		r->pend.branch = branch;
		r->pend.pos = pos;
		tree_hold(r, r->f->cur, r->f->cur->rnode[rto_slot(to)]);
		return 0;
	}
	rec_base(r, &rec, HWT_DEC_REC_RETURN, pos);
	rec.flags |= HWT_DEC_RF_UNKNOWN_FRAME;
	rec.u.ret.from = from;
	rec.u.ret.to = to;
	rec.u.ret.branch = branch;
	if (tree_base_ok(r)) {
		/* At depth 0 in tree mode from depth 0: the tree's base()
		 * names the code it returns to. */
		int took = tree_base(r, r->f->cur, &rec);

		if (took)
			return took < 0 ? took : 0;
	}
	return flow_emit(r, &rec);
}

static int near_return(struct replay *r, uint64_t from, uint64_t to, uint64_t pos)
{
	struct thread *t = r->f->cur;
	size_t k;

	if (!t)
		return 0;
	/* Pop to the newest frame this return goes back to; frames above it
	 * were left without a return (longjmp, exceptions). Interrupt frames
	 * are not crossed: a near return never leaves an interrupt. */
	if (t->depth && t->stack[t->depth - 1].ret_addr == to &&
	    t->stack[t->depth - 1].kind == FRAME_NEAR)
		return pop_to(r, t->depth - 1, from, to, HWT_DEC_BR_RETURN, pos, false);
	k = near_frame(t, to);
	if (k)
		return pop_to(r, k - 1, from, to, HWT_DEC_BR_RETURN, pos, false);
	return unknown_return(r, from, to, HWT_DEC_BR_RETURN, pos);
}

static int far_return(struct replay *r, uint64_t from, uint64_t to, uint64_t pos)
{
	struct thread *t = r->f->cur;

	if (!t)
		return 0;
	/* The newest interrupt or far call frame. */
	index_all(t);
	if (t->depth && t->stack[t->depth - 1].fence)
		return pop_to(r, t->stack[t->depth - 1].fence - 1, from, to, HWT_DEC_BR_FAR_RETURN,
			      pos, false);
	return unknown_return(r, from, to, HWT_DEC_BR_FAR_RETURN, pos);
}

static int do_ctx(struct replay *r, const struct seg_ctx *c, uint64_t pos)
{
	struct hwt_dec_flow *f = r->f;
	struct thread *prev = f->cur, *t;
	uint64_t prev_insns;
	bool new_run;
	int err;

	t = thread_get(f, c->pid, c->tid);
	if (!t)
		return -ENOMEM;
	/* The thread ran elsewhere since its frames here were seen. */
	new_run = t->run != c->run;
	/* The thread before leaves tree mode when it stops here. */
	if (prev && (prev != t || new_run)) {
		err = tree_exit(r, prev);
		if (err < 0)
			return err;
	}
	/* The batch is of the thread before. */
	err = batch_flush(r);
	if (err < 0)
		return err;
	f->image = c->image;
	f->cur = t;
	prev_insns = prev ? prev->insns : 0;
	if (new_run) {
		t->run = c->run;
		t->depth = 0;
		t->indexed = 0;
		t->insns = 0;
		t->seen = UINT64_MAX;
		if (t->bucket)
			memset(t->bucket, 0, t->cap * sizeof(*t->bucket));
	}
	if ((prev && prev != t) || new_run) {
		struct hwt_dec_rec rec;

		rec_base(r, &rec, HWT_DEC_REC_SWITCH, pos);
		if (new_run)
			rec.flags |= HWT_DEC_RF_NEW_RUN;
		rec.u.sw.prev_pid = prev ? prev->pid : -1;
		rec.u.sw.prev_tid = prev ? prev->tid : -1;
		rec.u.sw.prev_insns = prev_insns;
		rec.u.sw.run = c->run;
		err = flow_emit(r, &rec);
		if (err < 0)
			return err;
	}
	if (c->note) {
		struct hwt_dec_rec rec;

		rec_base(r, &rec, HWT_DEC_REC_NOTE, pos);
		rec.u.note.cookie = c->note;
		return flow_emit(r, &rec);
	}
	return 0;
}

/* The block record of item it (full: the block ran to its branch). */
static void block_rec(struct replay *r, const struct seg_item *it, bool full,
		      struct hwt_dec_rec *rec)
{
	const struct hwt_dec_bb *bb = it->bb;

	rec_base(r, rec, HWT_DEC_REC_BLOCK, it->pos);
	if (it->flags & SEG_F_TAKEN)
		rec->flags |= HWT_DEC_RF_TAKEN;
	if (!full)
		rec->flags |= HWT_DEC_RF_PARTIAL;
	if (it->flags & SEG_F_SPECULATIVE)
		rec->flags |= HWT_DEC_RF_SPECULATIVE;
	rec->u.block.ip = bb->ip;
	rec->u.block.ninsn = it->ninsn;
	rec->u.block.end_ip = it->ninsn ? hwt_dec_bb_insn_ip(bb, it->ninsn - 1) : bb->ip;
	rec->u.block.next_ip = full ? it->next_ip : 0;
	rec->u.block.branch = full ? bb->branch : HWT_DEC_BR_NONE;
	rec->u.block.mode = bb->mode;
	rec->u.block.bb = bb;
	rec->u.block.image = r->f->image;
}

static int do_bb_record(struct replay *r, const struct seg_item *it, bool full)
{
	struct hwt_dec_rec rec;

	block_rec(r, it, full, &rec);
	return flow_emit(r, &rec);
}

/* The depth-0 block or return of t that tree_hold() kept to the sink's
 * base() after all, as the record it would have been when it ran (the
 * decoder's counting is done). */
static int tree_flush(struct replay *r, struct thread *t)
{
	struct hwt_dec_flow *f = r->f;
	const struct hwt_dec_tconv *tc = &f->dec->cfg.tconv;
	struct hwt_dec_tree_base out = {HWT_DEC_NODE_NONE, false};
	struct hwt_dec_rec rec;
	int err;

	r->pend.kept = false;
	if (r->pend.ret) {
		rec_base(r, &rec, HWT_DEC_REC_RETURN, r->pend.pos);
		rec.flags |= HWT_DEC_RF_UNKNOWN_FRAME;
		rec.u.ret.from = r->pend.from;
		rec.u.ret.to = r->pend.to;
		rec.u.ret.branch = r->pend.branch;
		f->theld_unknown--;
	} else {
		block_rec(r, r->pend.it, r->pend.full, &rec);
		rec.u.block.image = r->pend.image;
	}
	f->theld--;
	rec.insns = r->pend.insns;
	rec.depth = 0;
	if ((rec.flags & HWT_DEC_RF_TIME) && tc->valid)
		rec.time = hwt_dec_tsc_to_perf(tc, rec.tsc);
	err = f->tree->base(f->dec->sinks[0].ctx, &rec, &out);
	if (err < 0)
		return err;
	/* It holds to its answer. */
	if (out.node != r->pend.node)
		return -HWT_EINTERNAL;
	if (!r->pend.ret)
		t->bimg = r->pend.image;
	return 0;
}

/* A block of the current thread t at depth 0 with a tree that has base()
 * (r->tree_base): in tree mode, held to base()'s answer for it (the same
 * image as the last block base() got) or to base() (tree_base()); else it
 * enters tree mode there when the sink has its count (top() at it; a
 * thread top() declines there stays out), and the block goes to base().
 * Returns 1 when taken, 0 when it is to be a record. */
static int tree_block(struct replay *r, struct thread *t, const struct seg_item *it, bool full)
{
	struct hwt_dec_flow *f = r->f;
	struct hwt_dec_rec rec;
	int err;

	if (t->tmode) {
		uint32_t node = bmemo_get(f, t, it->bb->id);

		if (node != HWT_DEC_NODE_NONE && f->image == t->bimg) {
			r->pend.ret = false;
			r->pend.it = it;
			r->pend.full = full;
			r->pend.image = f->image;
			tree_hold(r, t, node);
			return 1;
		}
	} else {
		struct hwt_dec_tree_at at;
		uint32_t n = HWT_DEC_NODE_NONE;

		if (t->seen == UINT64_MAX || t->no_block_top)
			return 0;
		/* Calls and returns gathered before come first. */
		err = batch_flush(r);
		if (err < 0)
			return err;
		tree_at(t, &at);
		at.insns = t->seen;
		err = f->tree->top(f->dec->sinks[0].ctx, &at, &n);
		if (err < 0)
			return err;
		if (n == HWT_DEC_NODE_NONE) {
			t->no_block_top = true;
			return 0;
		}
		err = tcount_room(f, n);
		if (err < 0)
			return err;
		t->tmode = true;
		t->tlo = 0;
		t->anchor = t->tnode = n;
		t->bimg = NULL;
		t->mark = t->seen;
	}
	block_rec(r, it, full, &rec);
	return tree_base(r, t, &rec);
}

/* The segment's block counts into the profile. */
static int apply_counts(struct hwt_dec_flow *f, struct seg *s)
{
	struct seg_work *w = s->counts_work;

	for (size_t i = 0; i < s->ncounts; i++) {
		const struct seg_count *c = &s->counts[i];

		if (c->id >= f->ncount) {
			int err = profile_grow(f, c->id);

			if (err < 0)
				return err;
		}
		f->count[c->id] += c->count;
		f->taken[c->id] += c->taken;
		f->partial[c->id] += c->partial;
		f->partial_insns[c->id] += c->pinsns;
	}
	if (!w || !w->ntouched) {
		/* (Not left pointing at the worker's table: the next
		 * segment's counts go there, which seg_reset() of this one
		 * would clear.) */
		s->counts_work = NULL;
		return 0;
	}
	/* Left in the worker's table (run.c): from there, cleared. The
	 * profile's arrays in locals (clearing an entry may alias them). */
	for (size_t i = 0, n = w->ntouched; i < n;) {
		uint64_t *count = f->count, *taken = f->taken, *partial = f->partial,
			 *pinsns = f->partial_insns;
		size_t ncount = f->ncount;

		for (; i < n && w->touched[i] < ncount; i++) {
			uint32_t id = w->touched[i];
			struct seg_cnt *c = &w->c[id];

			count[id] += c->count;
			taken[id] += c->taken;
			partial[id] += c->partial;
			pinsns[id] += c->pinsns;
			memset(c, 0, sizeof(*c));
		}
		if (i < n) {
			int err = profile_grow(f, w->touched[i]);

			if (err < 0)
				return err;
		}
	}
	w->ntouched = 0;
	s->counts_work = NULL;
	return 0;
}

int hwt_dec_flow_add_counts(struct hwt_dec_flow *f, uint32_t id, uint64_t count, uint64_t taken)
{
	if (id >= f->ncount) {
		int err = profile_grow(f, id);

		if (err < 0)
			return err;
	}
	f->count[id] += count;
	f->taken[id] += taken;
	return 0;
}

/* A block's effect on the stack (the block ran to its branch). */
static int do_bb_branch(struct replay *r, const struct seg_item *it)
{
	const struct hwt_dec_bb *bb = it->bb;

	switch (bb->branch) {
	case HWT_DEC_BR_CALL:
		if (bb->flags & HWT_DEC_BBF_PIC_CALL)
			return 0;
		return push(r, bb->end_ip, bb->target, bb->fallthrough, FRAME_NEAR, bb->branch,
			    it->pos);
	case HWT_DEC_BR_IND_CALL:
		return push(r, bb->end_ip, it->next_ip, bb->fallthrough, FRAME_NEAR, bb->branch,
			    it->pos);
	case HWT_DEC_BR_RETURN:
		if (!it->next_ip)
			return 0;
		return near_return(r, bb->end_ip, it->next_ip, it->pos);
	case HWT_DEC_BR_FAR_CALL:
		if (!it->next_ip)
			return 0;
		return push(r, bb->end_ip, it->next_ip, bb->fallthrough, FRAME_FAR, bb->branch,
			    it->pos);
	case HWT_DEC_BR_FAR_RETURN:
		if (!it->next_ip)
			return 0;
		return far_return(r, bb->end_ip, it->next_ip, it->pos);
	default:
		return 0;
	}
}

static int do_event(struct replay *r, const struct seg_item *it)
{
	struct hwt_dec_flow *f = r->f;
	const struct hwt_dec_event *ev = &r->s->events[it->ninsn];
	struct hwt_dec_rec rec;
	struct thread *t = f->cur;
	int err = 0;

	if (ev->type != HWT_DEC_EV_OVERFLOW &&
	    (!(f->dec->want & HWT_DEC_WANT(HWT_DEC_REC_EVENT)) ||
	     (r->treeing && t && (t->tmode || t->seen == t->insns)))) {
		/* No sink wants it: counted (hwt_dec_emit's statistics), not
		 * built, and calls gathered so far stay gathered. A real
		 * trace's PSB+ while tracing is off brings four or five
		 * status events each. Nor does a sink with a call tree,
		 * which takes only calls, returns and counts from events,
		 * want one that carries no instructions to it (none ran
		 * since its last record of the thread, or the thread is in
		 * tree mode, whose counts and stack stand for the event's):
		 * no record, and tree mode goes on (TIP.PGD/PGE at each
		 * crossing of an address filter, PSB+ status). */
		f->dec->stats.events++;
	} else {
		rec_base(r, &rec, HWT_DEC_REC_EVENT, it->pos);
		if (it->flags & SEG_F_STATUS)
			rec.flags |= HWT_DEC_RF_STATUS;
		if (it->flags & SEG_F_IP_SUPPRESSED)
			rec.flags |= HWT_DEC_RF_IP_SUPPRESSED;
		rec.u.event = *ev;
		if (ev->type == HWT_DEC_EV_OVERFLOW && !(it->flags & SEG_F_STATUS))
			f->dec->stats.overflows++;
		err = flow_emit(r, &rec);
	}
	if (err < 0 || (it->flags & SEG_F_STATUS))
		return err;
	if (ev->type == HWT_DEC_EV_OVERFLOW) {
		/* Trace was lost: a gap of unknown size. */
		rec.type = HWT_DEC_REC_GAP;
		rec.flags &= ~(uint32_t)HWT_DEC_RF_IP_SUPPRESSED;
		memset(&rec.u, 0, sizeof(rec.u));
		rec.u.gap.kind = HWT_DEC_GAP_OVERFLOW;
		rec.u.gap.what = "trace lost (overflow)";
		rec.u.gap.ip = (it->flags & SEG_F_IP_SUPPRESSED) ? 0 : ev->ip;
		err = flow_emit(r, &rec);
		if (err < 0)
			return err;
	}
	if (t && ev->type == HWT_DEC_EV_ASYNC_DISABLED)
		t->off_at = ev->at;
	else if (t && ev->type == HWT_DEC_EV_DISABLED)
		t->off_at = 0;
	switch (ev->type) {
	case HWT_DEC_EV_ASYNC_BRANCH:
		if (it->flags & SEG_F_IP_SUPPRESSED)
			return 0;
		return push(r, ev->at, ev->ip, ev->at, FRAME_ASYNC, 0, it->pos);
	case HWT_DEC_EV_ENABLED: {
		size_t k;

		if (!t || !t->depth)
			return 0;
		/* A far call (syscall) whose return was not traced: tracing
		 * resumes at its return address. */
		if (t->stack[t->depth - 1].kind == FRAME_FAR &&
		    t->stack[t->depth - 1].ret_addr == ev->ip)
			return pop_to(r, t->depth - 1, 0, ev->ip, HWT_DEC_BR_FAR_RETURN, it->pos,
				      false);
		/* A near call that left the traced range (an address filter)
		 * returned untraced. Not where tracing stopped asynchronously
		 * (an interrupt, a VM exit): that returned nothing, and in
		 * recursion an older frame may return there. (ev->resumed is
		 * no help: a PSB+ FUP before the enable sets it too.) */
		if (t->off_at == ev->ip)
			return 0;
		k = near_frame(t, ev->ip);
		if (k)
			return pop_to(r, k - 1, 0, ev->ip, HWT_DEC_BR_RETURN, it->pos, true);
		return 0;
	}
	default:
		return 0;
	}
}

/* Whether a branch class changes the stack. */
static inline bool stack_branch(uint8_t br)
{
	return br == HWT_DEC_BR_CALL || br == HWT_DEC_BR_IND_CALL || br == HWT_DEC_BR_RETURN ||
	       br == HWT_DEC_BR_FAR_CALL || br == HWT_DEC_BR_FAR_RETURN;
}

/* The replay of items i.. while the current thread is in tree mode and
 * they are blocks whose calls hit the call cache and whose returns pop its
 * newest near frame above the anchor (what call-heavy code is made of),
 * with the thread's state in locals. Returns the first item it leaves to
 * the general path (s->nitems: none). Without the profile, and with block
 * records at depth 0 only if any; the caller checks r->treeing. Its frames
 * are not indexed (index_all()) and have no func, insns or time: with
 * batches, no record reads them. */
static __attribute__((noinline)) size_t tree_run(struct replay *r, size_t i)
{
	struct hwt_dec_flow *f = r->f;
	const struct seg *s = r->s;
	struct thread *t = f->cur;
	const struct seg_item *const first = s->items + i, *const end = s->items + s->nitems;
	const struct seg_item *it = first;
	struct hwt_dec_tree_count *tc = f->tcount;
	const struct tcache *cache = f->tcache_calls;
	/* The stack as pointers: sp is the next free frame; frames above
	 * lo have nodes; a call at top would drop frames (MAX_DEPTH); a
	 * return to stop ends the run (depth 0 with block records, whose
	 * blocks there are records: the general path's). */
	struct frame *const stack = t->stack, *const lo = stack + t->tlo;
	struct frame *const top = stack + (t->cap < MAX_DEPTH - 1 ? t->cap : MAX_DEPTH - 1);
	struct frame *const stop = r->want_block ? stack : NULL;
	struct frame *sp = stack + t->depth, *const sp0 = sp;
	/* Frames below indexed are in the index (index_pop()). */
	struct frame *indexed = stack + t->indexed;
	uint64_t insns = t->insns, mark = t->mark, ncalls = 0, nrets;
	uint32_t tnode = t->tnode;

	if (sp == stop)
		return i;
	for (; it < end; it++) {
		const struct hwt_dec_bb *bb;
		const struct tcache *c;
		uint64_t to;
		uint8_t br;

		/* What the engine said the block does (no block read), else
		 * what the block and the item tell. */
		if (it->stack == SEG_STACK_RET) {
			to = it->next_ip;
			goto ret;
		}
		if (it->stack == SEG_STACK_CALL) {
			bb = it->bb;
			to = it->next_ip;
			goto call;
		}
		if (it->stack == SEG_STACK_NONE) {
			insns += it->delta;
			continue;
		}
		if (__builtin_expect(it->kind != SEG_BB, 0)) {
			if (it->kind != SEG_INSNS)
				break;
			insns += it->delta;
			continue;
		}
		bb = it->bb;
		br = bb->branch;
		if (__builtin_expect(it->flags & SEG_F_PARTIAL, 0))
			br = HWT_DEC_BR_NONE;
		if (br == HWT_DEC_BR_RETURN) {
			to = it->next_ip;
			goto ret;
		}
		if (br == HWT_DEC_BR_CALL) {
			if (bb->flags & HWT_DEC_BBF_PIC_CALL) {
				insns += it->delta;
				continue;
			}
			to = bb->target;
			goto call;
		}
		if (br == HWT_DEC_BR_IND_CALL) {
			to = it->next_ip;
			goto call;
		}
		if (br == HWT_DEC_BR_FAR_CALL || br == HWT_DEC_BR_FAR_RETURN)
			break;
		insns += it->delta;
		continue;
	ret:
		if (!to || sp <= lo || sp[-1].ret_addr != to || sp[-1].kind != FRAME_NEAR)
			break;
		insns += it->delta;
		tc[tnode].self += insns - mark;
		mark = insns;
		sp--;
		if (__builtin_expect(sp < indexed, 0)) {
			t->depth = (size_t)(sp - stack) + 1;
			index_pop(t);
			indexed = stack + t->indexed;
		}
		tnode = sp->pnode;
		if (__builtin_expect(sp == stop, 0)) {
			it++;
			break;
		}
		continue;
	call:
		c = &cache[tcache_slot(to, tnode)];
		if (c->parent1 != tnode + 1 || c->to != to || sp >= top)
			break;
		insns += it->delta;
		tc[tnode].self += insns - mark;
		mark = insns;
		sp->ret_addr = bb->fallthrough;
		sp->kind = FRAME_NEAR;
		sp->pnode = tnode;
		sp++;
		tnode = c->node;
		tc[tnode].calls++;
		ncalls++;
	}
	/* Only calls and returns moved the depth. */
	nrets = ncalls - (uint64_t)(sp - sp0);
	t->depth = (size_t)(sp - stack);
	t->insns = insns;
	t->mark = mark;
	t->tnode = tnode;
	f->calls += ncalls;
	f->tcalls += ncalls;
	f->returns += nrets;
	f->treturns += nrets;
	if (ncalls + nrets) {
		/* The time of a sync is that of the last call or return. */
		const struct seg_item *k = it;

		while (k-- > first) {
			if (k->kind == SEG_BB && !(k->flags & SEG_F_PARTIAL) &&
			    stack_branch(k->bb->branch) &&
			    !(k->bb->branch == HWT_DEC_BR_CALL &&
			      (k->bb->flags & HWT_DEC_BBF_PIC_CALL)))
				break;
		}
		f->tcounted = true;
		r->tpos = k->pos;
		r->tpos_valid = true;
	}
	return (size_t)(it - s->items);
}

/* The time of the replay at pos and the positions that share it. */
static __attribute__((noinline)) struct rec_time rec_time_at(struct replay *r, uint64_t pos)
{
	const struct seg *s = r->s;
	const struct hwt_dec_tconv *const tc = &r->f->dec->cfg.tconv;
	struct rec_time rt = {0};
	uint64_t hi;

	if (!seg_time_at(s, pos, &r->tcur, &rt.tt.tsc)) {
		/* Before the first time point (or none): no time up to it. */
		rt.span = s->ntl ? s->tl[0].off : UINT64_MAX;
		rt.tt.tsc = 0;
		return rt;
	}
	rt.lo = s->tl[r->tcur].off;
	hi = r->tcur + 1 < s->ntl ? s->tl[r->tcur + 1].off : UINT64_MAX;
	rt.span = hi - rt.lo;
	rt.tt.time = tc->valid ? hwt_dec_tsc_perf(tc, rt.tt.tsc) : 0;
	rt.flags = HWT_DEC_RF_TIME;
	return rt;
}

/* rec_scan()'s state: the replay's position, the thread's stack, count
 * and records in place, and what it reads. */
struct rec_state {
	const struct seg_item *it, *end;
	const struct seg_item *tseen; /* its indirect target counted */
	struct frame *sp, *ix;	      /* next free frame; [stack, ix) indexed */
	struct frame *stack, *stack_end;
	struct hwt_dec_rec *rec, *rec_end;
	uint64_t insns, ncalls;
	uint32_t depth;
	/* The time (a span of all positions when no record wants it) and
	 * the records' heads with it. */
	struct rec_time rt;
	struct rec_head call, ret;
	uint32_t tnode;
	uint64_t base_pos;
	bool profile, want_call, want_ret;
	struct tc_line *tcache; /* the profile's (f->tcache) */
	size_t ncount;
	struct thread *t;
};

/* Why rec_scan() stopped. */
enum rec_stop {
	REC_DONE,   /* at the end or an item for the general path */
	REC_TARGET, /* the item's indirect target: for target_seen() */
	REC_TIME,   /* the item's time: to look up */
	REC_FULL,   /* the records are full: for the sink */
};

/* rec_run()'s loop, until it needs a call: it calls nothing, so that the
 * state stays in registers (the fewer of them, the fewer spills: the call
 * count stays in *st). want_ret is a constant in each of rec_scan()'s two
 * copies: without return records a frame is its return address and kind
 * (what ends it), since only ret_rec() and rec_scan()'s return records
 * read the rest (the entry, time and count: want_ret is the decode's, and
 * tree mode, which reads pnode, makes no records). */
static inline __attribute__((always_inline)) enum rec_stop rec_scan_as(struct rec_state *st,
								       const bool want_ret)
{
	const struct seg_item *it = st->it, *const end = st->end, *const tseen = st->tseen;
	struct frame *sp = st->sp, *ix = st->ix;
	struct frame *const stack_end = st->stack_end;
	struct hwt_dec_rec *rec = st->rec, *const rec_end = st->rec_end;
	uint64_t insns = st->insns;
	uint32_t depth = st->depth;
	const uint64_t tlo = st->rt.lo, tspan = st->rt.span;
	const bool profile = st->profile, want_call = st->want_call;
	struct tc_line *const tcache = st->tcache;
	const size_t ncount = st->ncount;
	enum rec_stop why = REC_DONE;

	for (; it < end; it++) {
		const struct hwt_dec_bb *bb;
		struct frame *fr;
		uint64_t to;
		uint8_t br;

		/* What the engine said the block does (tree_run()), else
		 * what the block and the item tell. */
		bb = it->bb;
		if (it->stack == SEG_STACK_CALL) {
			br = bb->branch;
			to = it->next_ip;
			goto call;
		}
		if (it->stack == SEG_STACK_RET)
			goto ret;
		if (it->kind != SEG_BB) {
			if (it->kind != SEG_INSNS)
				break;
			insns += it->delta;
			continue;
		}
		br = (it->flags & SEG_F_PARTIAL) ? HWT_DEC_BR_NONE : bb->branch;
		switch (br) {
		case HWT_DEC_BR_RETURN:
		ret:
			if (!it->next_ip) {
				insns += it->delta;
				continue;
			}
			/* A return to an older frame or out of the trace's
			 * goes to the general path. */
			if (!depth || sp[-1].ret_addr != it->next_ip || sp[-1].kind != FRAME_NEAR)
				goto out;
			if (want_ret && it->pos - tlo >= tspan) {
				why = REC_TIME;
				goto out;
			}
			insns += it->delta;
			fr = --sp; /* stays in place until the next push */
			depth--;
			if (sp < ix) {
				struct thread *t = st->t;

				t->bucket[ret_bucket(t, fr->ret_addr)] = fr->older;
				ix = sp;
			}
			if (!want_ret)
				continue;
			memset(&rec->u.ret, 0, sizeof(rec->u.ret));
			memcpy(rec, &st->ret, sizeof(st->ret));
			rec->u.ret.from = bb->end_ip;
			rec->u.ret.to = it->next_ip;
			rec->u.ret.func = fr->func;
			rec->u.ret.call_tsc = fr->has_time ? fr->call_tsc : 0;
			rec->u.ret.insns = insns - fr->insns;
			rec->u.ret.branch = HWT_DEC_BR_RETURN;
			break;
		case HWT_DEC_BR_CALL:
		case HWT_DEC_BR_IND_CALL:
			if (br == HWT_DEC_BR_CALL && (bb->flags & HWT_DEC_BBF_PIC_CALL))
				goto plain;
			to = br == HWT_DEC_BR_CALL ? bb->target : it->next_ip;
		call:
			if (sp == stack_end)
				goto out;
			/* (The time first: its lookup changes nothing, the
			 * target's count does.) */
			if (it->pos - tlo >= tspan) {
				why = REC_TIME;
				goto out;
			}
			if ((bb->flags & HWT_DEC_BBF_LOG_TARGET) && profile && it->next_ip &&
			    it != tseen) {
				/* target_seen()'s common case: one of the
				 * block's last targets again. */
				struct tc_line *c;
				const uint64_t next = it->next_ip;
				unsigned int k;

				if (bb->id >= ncount) {
					why = REC_TARGET;
					goto out;
				}
				_Static_assert(TC_WAYS == 4, "rec_scan() looks at four");
				c = &tcache[bb->id];
				/* (An empty way's target is 0, next_ip not.) */
				if (c->target[0] == next)
					k = 0;
				else if (c->target[1] == next)
					k = 1;
				else if (c->target[2] == next)
					k = 2;
				else if (c->target[3] == next)
					k = 3;
				else {
					why = REC_TARGET;
					goto out;
				}
				if (__builtin_expect(!++c->count[k], 0)) {
					/* At UINT32_MAX: target_seen() folds it. */
					c->count[k]--;
					why = REC_TARGET;
					goto out;
				}
			}
			insns += it->delta;
			fr = sp++;
			depth++;
			fr->ret_addr = bb->fallthrough;
			fr->kind = FRAME_NEAR;
			if (want_ret) {
				fr->func = to;
				fr->pnode = st->tnode;
				fr->insns = insns;
				fr->has_time = st->rt.flags != 0;
				fr->call_tsc = st->rt.tt.tsc;
			}
			st->ncalls++;
			if (!want_call)
				continue;
			memcpy(rec, &st->call, sizeof(st->call));
			rec->u.call.from = bb->end_ip;
			rec->u.call.to = to;
			rec->u.call.ret_addr = bb->fallthrough;
			rec->u.call.branch = br;
			break;
		case HWT_DEC_BR_FAR_CALL:
		case HWT_DEC_BR_FAR_RETURN:
			goto out;
		default:
		plain:
			if ((bb->flags & HWT_DEC_BBF_LOG_TARGET) && profile &&
			    !(it->flags & SEG_F_PARTIAL) && it->next_ip && it != tseen) {
				why = REC_TARGET;
				goto out;
			}
			insns += it->delta;
			continue;
		}
		/* As hwt_dec_emit() (no tree mode with records): a record's
		 * time is its interval's (its tsc's), converted. */
		memcpy((char *)rec + offsetof(struct hwt_dec_rec, tsc), &st->rt.tt,
		       sizeof(st->rt.tt));
		rec->depth = depth;
		rec->insns = insns;
		rec->offset = st->base_pos + it->pos;
		if (++rec == rec_end) {
			it++;
			why = REC_FULL;
			break;
		}
	}
out:
	st->it = it;
	st->sp = sp;
	st->ix = ix;
	st->rec = rec;
	st->insns = insns;
	st->depth = depth;
	return why;
}

static __attribute__((noinline)) enum rec_stop rec_scan(struct rec_state *st)
{
	return st->want_ret ? rec_scan_as(st, true) : rec_scan_as(st, false);
}

/* The replay of items i.. of the current thread for sinks that take calls
 * and returns as records (no batch, no tree, no block records: `script
 * --flow`, pt: probes) while they are blocks whose calls are near calls
 * with room on the stack and whose returns pop the newest frame, a near
 * one (what call-heavy code is made of): what push(), near_return(),
 * call_rec() and ret_rec() do, with the thread's state in locals and the
 * records built in place: RECS_MAX at a time for a sink with recs(), else
 * one by one. Returns the first item it leaves to the general path
 * (s->nitems: none); *err: a sink's error (the replay stops). */
static __attribute__((noinline)) size_t rec_run(struct replay *r, size_t i, int *err)
{
	struct hwt_dec_flow *f = r->f;
	struct hwt_dec *dec = f->dec;
	const struct seg *s = r->s;
	struct thread *t = f->cur;
	const struct hwt_dec_sink *const sink = &dec->sinks[0];
	/* recs(): the records go to f->recs, up to RECS_MAX at a time. */
	const bool many = dec->nsinks == 1 && sink->recs;
	struct hwt_dec_rec one, *const out = many ? f->recs : &one;
	/* The time answered last in this segment (an empty span: none
	 * yet, the first position that wants it looks it up). */
	struct rec_state st = {
	    .it = s->items + i,
	    .end = s->items + s->nitems,
	    .sp = t->stack + t->depth,
	    .ix = t->stack + t->indexed,
	    .stack = t->stack,
	    .stack_end = t->stack + t->cap,
	    .rec = out,
	    .rec_end = out + (many ? RECS_MAX : 1),
	    .insns = t->insns,
	    .depth = (uint32_t)t->depth,
	    .rt = r->rt,
	    .call = {HWT_DEC_REC_CALL, r->rt.flags, t->pid, t->tid},
	    .ret = {HWT_DEC_REC_RETURN, r->rt.flags, t->pid, t->tid},
	    .tnode = t->tnode,
	    .base_pos = dec->base_pos,
	    .profile = dec->cfg.flags & HWT_DEC_F_PROFILE,
	    .want_call = r->want_call,
	    .want_ret = r->want_ret,
	    .tcache = f->tcache,
	    .ncount = f->ncount,
	    .t = t,
	};
	const uint32_t depth0 = st.depth;
	enum rec_stop why;

	*err = 0;
	one.cpu = 0; /* rec_scan() writes every field but cpu */
	while ((why = rec_scan(&st)) != REC_DONE) {
		if (why == REC_TARGET) {
			/* The item again, its target counted. */
			*err = target_seen(f, st.it->bb, st.it->next_ip);
			if (*err < 0)
				break;
			st.tseen = st.it;
			st.tcache = f->tcache;
			st.ncount = f->ncount;
		} else if (why == REC_TIME) {
			r->rt = st.rt = rec_time_at(r, st.it->pos);
			st.call.flags = st.ret.flags = st.rt.flags;
		} else {
			t->depth = st.depth;
			t->indexed = (size_t)(st.ix - st.stack);
			t->insns = st.insns;
			*err = many ? sink->recs(sink->ctx, out, RECS_MAX) : emit_hot(dec, out);
			st.rec = out;
			if (*err < 0)
				break;
		}
	}
	t->depth = st.depth;
	t->indexed = (size_t)(st.ix - st.stack);
	t->insns = st.insns;
	f->calls += st.ncalls;
	/* Only calls and returns moved the depth. */
	f->returns += st.ncalls + depth0 - (uint64_t)st.depth;
	if (st.rec > out && *err >= 0)
		*err = sink->recs(sink->ctx, out, (size_t)(st.rec - out));
	return (size_t)(st.it - s->items);
}

/* Whether item `it` of the current thread at depth 0 in tree mode from
 * depth 0 is a block base() holds to the node its depth-0 code is, with
 * no effect on the stack (base_run()). */
static inline bool base_held(const struct replay *r, const struct seg_item *it)
{
	const struct hwt_dec_flow *f = r->f;
	const struct thread *t = f->cur;

	return it->kind == SEG_BB && f->image == t->bimg &&
	       bmemo_get(f, t, it->bb->id) == t->tnode &&
	       ((it->flags & SEG_F_PARTIAL) || !stack_branch(it->bb->branch));
}

/* The replay of items i.. while the current thread is at depth 0 in tree
 * mode from depth 0 (tree_base_ok()) and they are instructions, or
 * blocks that base() holds to the node its depth-0 code is (tree_hold():
 * a filtered trace's loops there) and that leave the stack as it is, with
 * the thread's count in a local. Returns the first item it leaves to the
 * general path. Without the profile. */
static size_t base_run(struct replay *r, size_t i)
{
	struct hwt_dec_flow *f = r->f;
	const struct seg *s = r->s;
	struct thread *t = f->cur;
	const struct seg_item *it = s->items + i, *const end = s->items + s->nitems;
	const struct seg_item *last = NULL;
	const struct bmemo *const memo = f->bmemo;
	const size_t nmemo = f->nbmemo;
	const uint32_t serial = t->serial, tnode = t->tnode;
	uint64_t insns = t->insns, at = 0, nheld = 0;

	for (; it < end; it++) {
		const struct hwt_dec_bb *bb;

		if (it->kind != SEG_BB) {
			if (it->kind != SEG_INSNS)
				break;
			insns += it->delta;
			continue;
		}
		bb = it->bb;
		if (bb->id >= nmemo || memo[bb->id].serial != serial ||
		    memo[bb->id].node != tnode ||
		    (!(it->flags & SEG_F_PARTIAL) && stack_branch(bb->branch)))
			break;
		insns += it->delta;
		at = insns;
		last = it;
		nheld++;
	}
	if (last) {
		/* As tree_hold() at each. */
		f->tcount[tnode].self += at - t->mark;
		t->mark = at;
		f->tcounted = true;
		f->theld += nheld;
		r->pend.kept = true;
		r->pend.ret = false;
		r->pend.it = last;
		r->pend.full = !(last->flags & SEG_F_PARTIAL);
		r->pend.image = f->image;
		r->pend.insns = at;
		r->pend.node = tnode;
	}
	t->insns = insns;
	return (size_t)(it - s->items);
}

/* The decoder's statistics of segment s as its replay begins: the
 * segment, failed (gaps) or left to libipt. */
static void count_seg(struct hwt_dec_flow *f, const struct seg *s)
{
	f->dec->stats.segments++;
	if (s->ngaps)
		f->dec->stats.segments_failed++;
	if (s->fallback)
		f->dec->stats.segments_fallback++;
}

/* ... and as it ends: its instructions, blocks and the status updates the
 * fast engine counted (seg.h count_status: what do_event() does with
 * them). */
static void count_totals(struct hwt_dec_flow *f, const struct seg *s)
{
	f->dec->stats.insns += s->insns;
	f->dec->stats.blocks += s->nbbs;
	f->dec->stats.events += s->nstatus;
}

/* do_ctx() of c would change nothing: the same thread, run and image, no
 * note, nothing batched; and the thread is not in tree mode (the replay's
 * end syncs the sink's stacks then). */
static bool ctx_is_current(const struct hwt_dec_flow *f, const struct seg_ctx *c)
{
	const struct thread *t = f->cur;

	return t && t->pid == c->pid && t->tid == c->tid && t->run == c->run && !t->tmode &&
	       f->image == c->image && !c->note && !f->nbatch;
}

bool hwt_dec_flow_in_ctx(const struct hwt_dec_flow *f, const struct hwt_dec_context *ctx)
{
	const struct seg_ctx c = {
	    .pid = ctx->pid, .tid = ctx->tid, .image = ctx->image, .note = 0, .run = ctx->run};

	return ctx_is_current(f, &c);
}

void hwt_dec_flow_count(struct hwt_dec_flow *f, const struct seg *s)
{
	count_seg(f, s);
	count_totals(f, s);
}

void hwt_dec_flow_count_psb_again(struct hwt_dec_flow *f, const struct seg *s, uint64_t n)
{
	f->dec->stats.segments += n;
	f->dec->stats.events += n * s->nstatus;
}

int hwt_dec_flow_replay(struct hwt_dec_flow *f, struct seg *s)
{
	struct replay r;
	bool profile = f->dec->cfg.flags & HWT_DEC_F_PROFILE;
	bool base_only = f->dec->cfg.flags & HWT_DEC_F_BASE_BLOCKS;
	bool tree_fast, rec_fast;
	int err = 0;

	if (s->nitems == 1 && s->items[0].kind == SEG_CTX && !s->ngaps && !s->ncounts &&
	    !(s->counts_work && s->counts_work->ntouched) &&
	    ctx_is_current(f, &s->ctxs[s->items[0].ninsn])) {
		/* Only the context the flow is in (a PSB+ while tracing is
		 * off: eng_fast.c psb_only()): what the loop and the end
		 * below would do, do_ctx() with the same thread and image
		 * changing nothing, no batch to hand over, no stacks in tree
		 * mode to sync. */
		count_seg(f, s);
		count_totals(f, s);
		return 0;
	}
	memset(&r, 0, sizeof(r));
	r.f = f;
	r.s = s;
	r.want_block = f->dec->want & HWT_DEC_WANT(HWT_DEC_REC_BLOCK);
	r.want_call = f->dec->want & HWT_DEC_WANT(HWT_DEC_REC_CALL);
	r.want_ret = f->dec->want & HWT_DEC_WANT(HWT_DEC_REC_RETURN);
	/* rec_run(): no time looked up yet, or none wanted (a span of all
	 * positions). */
	r.rt.span = r.want_call || r.want_ret ? 0 : UINT64_MAX;
	r.batching = f->dec->nsinks == 1 && f->dec->sinks[0].batch;
	if (!r.batching && f->dec->nsinks == 1 && f->dec->sinks[0].recs && !f->recs) {
		/* Zeroed: rec_scan() writes every field but cpu. */
		f->recs = calloc(RECS_MAX, sizeof(*f->recs));
		if (!f->recs)
			return -ENOMEM;
	}
	if (r.batching && !f->batch) {
		f->batch = malloc(BATCH_MAX * sizeof(*f->batch));
		if (!f->batch)
			return -ENOMEM;
	}
	r.treeing = r.batching && f->dec->sinks[0].tree && r.want_call && r.want_ret;
	r.base_only = base_only;
	r.tree_base = r.treeing && base_only && f->dec->sinks[0].tree->base;
	tree_fast = r.treeing && !profile && (base_only || !r.want_block);
	rec_fast = !r.batching && !r.want_block;
	if (r.treeing && !f->tcache_calls) {
		f->tcache_calls = calloc((size_t)1 << TCACHE_BITS, sizeof(*f->tcache_calls));
		if (!f->tcache_calls)
			return -ENOMEM;
	}
	if (r.treeing)
		f->tree = f->dec->sinks[0].tree;
	count_seg(f, s);
	for (size_t i = 0; i < s->nitems && err >= 0; i++) {
		const struct seg_item *it;

		/* Tree mode's common cases first: calls and returns, and a
		 * filtered trace's depth-0 code. */
		if (tree_fast && f->cur && f->cur->tmode && s->items[i].kind == SEG_BB) {
			if (f->cur->depth || !r.want_block) {
				i = tree_run(&r, i);
				if (i == s->nitems)
					break;
			}
			if (r.tree_base && !f->cur->depth && base_held(&r, &s->items[i])) {
				i = base_run(&r, i);
				if (i == s->nitems)
					break;
			}
		}
		/* Calls and returns as records, where two blocks come in a
		 * row (a lone one, as between a filter's crossings, costs
		 * rec_run() more than the general path). A thread without
		 * a stack yet (no call so far) gets it there first. */
		if (rec_fast && f->cur && f->cur->stack && s->items[i].kind == SEG_BB &&
		    i + 1 < s->nitems && s->items[i + 1].kind == SEG_BB) {
			i = rec_run(&r, i, &err);
			if (err < 0 || i == s->nitems)
				break;
		}
		it = &s->items[i];
		if (it->kind == SEG_BB && f->cur) {
			/* The hot path: a block, no callbacks unless asked. */
			bool full = !(it->flags & SEG_F_PARTIAL);
			const struct hwt_dec_bb *bb = it->bb;

			f->cur->insns += it->delta;
			if ((bb->flags & HWT_DEC_BBF_LOG_TARGET) && profile && full &&
			    it->next_ip && bb->branch != HWT_DEC_BR_RETURN) {
				err = target_seen(f, bb, it->next_ip);
				if (err < 0)
					break;
			}
			if (r.want_block && (!base_only || !f->cur->depth)) {
				/* A depth-0 block: the tree's base() if it has
				 * one. */
				err = 0;
				if (r.tree_base && !f->cur->depth)
					err = tree_block(&r, f->cur, it, full);
				if (!err)
					err = do_bb_record(&r, it, full);
				if (err < 0)
					break;
			}
			if (full && stack_branch(it->bb->branch))
				err = do_bb_branch(&r, it);
			continue;
		}
		switch (it->kind) {
		case SEG_CTX:
			err = do_ctx(&r, &s->ctxs[it->ninsn], it->pos);
			break;
		case SEG_INSNS:
			if (f->cur)
				f->cur->insns += it->delta;
			break;
		case SEG_BB: {
			struct seg_ctx none = {-1, -1, NULL, 0, 0};

			err = do_ctx(&r, &none, it->pos);
			i--; /* again, now with a thread */
			break;
		}
		case SEG_EVENT:
			err = do_event(&r, it);
			break;
		case SEG_GAP: {
			const struct seg_gap *g = &s->gaps[it->ninsn];
			struct hwt_dec_rec rec;

			rec_base(&r, &rec, HWT_DEC_REC_GAP, it->pos);
			rec.u.gap.kind = g->kind;
			rec.u.gap.err = g->err;
			rec.u.gap.what = g->what;
			rec.u.gap.ip = g->ip;
			rec.u.gap.size = g->size;
			f->dec->stats.gap_bytes += g->size;
			err = flow_emit(&r, &rec);
			break;
		}
		}
	}
	/* The sink has its stacks at the end of each segment (records
	 * between segments find them, and the last call's time is the
	 * sink's as after a batch); the thread stays in tree mode. */
	if (err >= 0 && f->cur && f->cur->tmode)
		err = tree_sync(&r, f->cur);
	if (err >= 0)
		err = batch_flush(&r);
	if (err >= 0 && profile)
		err = apply_counts(f, s);
	count_totals(f, s);
	return err;
}
