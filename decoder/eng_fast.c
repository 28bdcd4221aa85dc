/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/eng_fast.c - the fast engine: phase 1 for one PSB segment without
 * libipt, walking the basic-block cache with our own packet parser.
 *
 * libipt's block decoder proceeds instruction by instruction through its
 * query decoder, one call per conditional branch. Here a block's successors
 * are cached pointers and a TNT bit picks one, so the common path is a
 * handful of loads per basic block (libxdc's idea). The output must be the
 * canonical log libipt's engine (eng_ipt.c) writes for the same segment, so
 * the engine mirrors libipt's semantics where they show: the query
 * decoder's read-ahead and status flags (which decide the stream offsets the
 * log carries), event binding (enable, disable, interrupts, exec mode, CBR),
 * return compression with libipt's 64-entry return stack, and ptxed's loop.
 *
 * Anything outside that subset makes the engine decline the segment
 * (-HWT_ENOTSUP) and libipt decodes it instead: overflows, TSX, paging and
 * VMCS packets, power events, PTWRITE, MNT, address filters, errata that
 * change decoding, decode errors but three. Declining is cheap and always
 * correct; the differential tests (fast == libipt on every test and fuzz
 * input) keep the subset honest. The three errors are what real traces
 * show (libipt 2.0.5's "unexpected packet context" at an enable while
 * tracing is on, "no memory mapped" where the flow goes to code the image
 * does not have, "trace stream does not match query" where the block
 * decoder walks to an event's IP and meets a branch that needs trace:
 * walk_fails(), at the joins of traces run together): there the engine
 * fails as libipt's does, the same blocks, gap and resynchronization
 * (libipt_fails()), where all of that is certain.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/flow.h"
#include "decoder/pkt.h"
#include "decoder/seg.h"

#define DECLINE (-HWT_ENOTSUP)

/* libipt status flags and the query errors the block decoder handles. */
enum {
	ST_EVENT = 1 << 0,
	ST_IPSUP = 1 << 1,
	ST_EOS = 1 << 2,
	Q_BADQUERY = -2,
	Q_EOS = -3,
	/* libipt's block decoder fails here too, and the log has what
	 * eng_ipt.c writes for that (libipt_fails()): decoding ends. */
	Q_FAILED = -4,
	/* proceed_no_event(): no block at f->fail_ip (block_fails()). */
	Q_NOBLOCK = -5,
	/* proceed_no_event(): libipt's query for fail_bb's branch fails
	 * (branch_fails()). */
	Q_BRFAILS = -6,
	/* A run of repeated PSB+ listed as one entry (seg.h SEG_PSB_RUN)
	 * where one of them is to be decoded on its own: the segment is
	 * decoded again from a list without such entries
	 * (hwt_dec_seg_fast()). */
	Q_RELIST = -7,
};

struct fev {
	uint8_t type;	/* enum hwt_dec_event_type */
	uint8_t status; /* status update (PSB+) */
	uint8_t suppressed;
	uint8_t mode; /* exec mode */
	uint8_t aux;  /* paging: non-root; TSX: TSX_SPEC | TSX_ABORT */
	uint64_t ip, at;
	uint64_t payload; /* CBR ratio, CR3, VMCS base, power details */
};

/* Events waiting for the packet they bind to (libipt's pt_event_queue:
 * first in, first out; more than fit is libipt's to decode). */
struct evq {
	struct fev ev[4];
	unsigned int n;
};

enum { TSX_SPEC = 1, TSX_ABORT = 2 };

#define L1_SIZE 4096
#define L1_MIN	128

struct l1_entry {
	uint64_t ip;
	uint64_t image_id;
	uint8_t mode;
	struct hwt_dec_bb *bb;
};

/* A run: from a conditional branch's block and the next TNT bits (up to
 * RUN_BITS), the path those bits take through the block cache, up to the
 * next branch that is neither a conditional nor a compressed return with
 * a bit in hand. Runs are static (direct calls push known return
 * addresses; a return goes where a call of the run pushed, and one to an
 * older frame ends the run), so they are cached per worker and replayed
 * without a decision per bit. */
#define RUN_BITS 8
#define RUN_MAX	 16
#define RUN_PRE	 3 /* returns to frames older than the run */
/* The blocks a run may begin with (1 << enum hwt_dec_branch). */
#define RUN_STARTS                                                                                 \
	(1u << HWT_DEC_BR_COND | 1u << HWT_DEC_BR_RETURN | 1u << HWT_DEC_BR_CALL |                 \
	 1u << HWT_DEC_BR_JUMP | 1u << HWT_DEC_BR_NONE)
#define RUN_CACHE 2048
_Static_assert(RUN_CACHE <= UINT16_MAX, "run_slot holds an entry + 1");

/* An entry: the block, with bit 0 set when its log item is TAKEN
 * (blocks are 8-byte aligned). */
typedef uintptr_t run_ent;

/* A run's blocks are not logged one by one (libxdc's other idea): a run
 * adds its instruction total and counts its executions; only the blocks
 * phase 2 needs (calls and returns) become items, copied from the run's
 * (all but the position: a replay is a copy, and the return stack's
 * changes are the slots it leaves). The profile gets the run's count
 * times each of its blocks when the run is evicted or the segment ends
 * (run_fold). */
struct run {
	/* What a lookup and a replay read, in the first cache line. */
	const struct hwt_dec_bb *bb; /* key: the start */
	uint64_t image_id;	     /* key: the image it was built in */
	uint16_t key;		     /* key: bit count << 8 | bits */
	uint8_t used;		     /* bits consumed */
	uint8_t n;
	uint8_t nlog;		/* entries logged as items */
	uint8_t nlog_pre;	/* ... of them before the decision
				 * before the last (used >= 2) */
	uint8_t logs;		/* key: what it logs (run_logs_key()) */
	uint8_t npre;		/* returns to frames older than the run:
				 * the return stack's top entries it
				 * was built with (pre[]) */
	uint8_t nslots;		/* return stack slots it leaves changed */
	int8_t rs_net;		/* its pushes less its pops */
	bool last_logged;	/* its last block is its last item */
	uint32_t tail;		/* instructions after the last */
	uint32_t insns;		/* all instructions */
	uint64_t count;		/* runs since the last fold (defer: in
				 * this segment) */
	struct hwt_dec_bb *end; /* where to go on (not run yet) */
	uint64_t end_ip;
	const struct hwt_dec_bb *pre[RUN_PRE];
	/* The slots (from the return stack's top at the start) and what
	 * the run leaves in them. */
	int8_t slot_off[RUN_MAX];
	struct hwt_dec_bb *slot_val[RUN_MAX];
	run_ent ent[RUN_MAX];
	/* The items it logs, position aside; delta: instructions from
	 * the previous one (its own included; the first's plus those
	 * pending before the run). */
	struct seg_item log[RUN_MAX];
};

struct fast_scratch {
	/* The block cache in front of the shared table: l1_mask + 1
	 * entries, L1_MIN at first and L1_SIZE once as many blocks came
	 * (it starts empty again: a cache), so a cold decode of a short
	 * trace touches one page of it, not 32. */
	struct l1_entry *l1;
	uint32_t l1_mask;
	uint32_t l1_fills; /* fills since it last grew */
	/* The run cache: a run's hash slot names its entry in runs (+ 1; 0:
	 * none yet), and entries are taken in order, so a decoder touches
	 * the pages of as many runs as it builds, not all 0.5 MB of them
	 * (a fresh page costs a fault: 12-24 us in a VM). */
	uint16_t run_slot[RUN_CACHE];
	uint32_t nruns;
	struct run runs[RUN_CACHE];
	/* Runs with a count this segment (profile): folded at its end; with
	 * defer (seg_work.runs), with a count since the last flush. */
	uint32_t counted[RUN_CACHE];
	uint32_t ncounted;
	bool defer;
	/* Runs in segments decoded for good, not folded yet, per run
	 * (defer; apart from struct run, which the hot path reads), and
	 * those with such a count (an evicted one may be listed again). */
	uint64_t run_kept[RUN_CACHE];
	uint32_t kept[RUN_CACHE];
	uint32_t nkept;
	/* The engine's state of the segment being decoded (cleared for
	 * each: no allocation per segment). */
	struct fast *f;
};

struct fast {
	struct hwt_dec *dec;
	struct seg *s;
	struct fast_scratch *sc;
	const uint8_t *buf;
	uint64_t end;
	int skz84;

	/* Query decoder mirror. */
	uint64_t pos;		  /* next packet to decode */
	const struct seg_pkt *np; /* the packet at pos (after peek()) */
	uint64_t last_ip;
	bool last_ip_valid; /* some IP was seen since PSB */
	bool last_ip_suppressed;
	uint64_t tnt; /* cached TNT bits, oldest highest */
	unsigned int ntnt;
	struct evq tipq; /* events binding to TIP */
	struct evq fupq; /* events binding to FUP */
	/* PSB+ status events, delivered at PSBEND: [psbq_head, npsbq), in
	 * the lower half (psb_header()) or in either (psb_run() reads the
	 * next PSB+'s into the half the current one is not in). */
	struct fev psbq[16];
	unsigned int npsbq, psbq_head;
	bool q_enabled;
	bool consume_packet;

	/* Block decoder mirror. */
	uint64_t ip;
	uint8_t mode;
	bool enabled;
	uint8_t spec; /* SEG_F_SPECULATIVE in a transaction, else 0 */
	int status;
	bool process_event;
	struct fev ev;
	/* libipt's return stack holds addresses; ours holds the calls'
	 * blocks, whose fall-through successor is the return's block. A
	 * ring of 64 entries, the newest below rs_top (mod 64): a push over
	 * 64 overwrites the oldest, a pop clears its entry, so a pop finds
	 * NULL where libipt's stack is empty. */
	struct hwt_dec_bb *retstack[64];
	unsigned int rs_top;
	struct hwt_dec_bb *next_bb; /* complete_with_trace(): f->ip's block, if known */

	/* Context. */
	struct hwt_dec_context ctx;
	uint64_t image_id; /* ctx.image's id, or 0 */
	size_t tcur;
	/* With a sideband hook whose answer is the same over the segment's
	 * time span (span): libipt asks it again at every branch where time
	 * advanced (a tick), which changes nothing while ctx is span. */
	bool hooked;
	bool ctx_stale;	 /* ctx is not span: a tick may change it */
	bool cut_header; /* the segment ends inside its PSB+ */
	struct hwt_dec_context span;

	/* The last block whose outcome came from trace while no block has
	 * begun after it: libipt tells that outcome only with the next
	 * block, so an overflow first takes it back (held_*). */
	struct hwt_dec_bb *held_bb;
	size_t held_item;
	bool held_taken;
	/* ... and still libipt's pending decision (eng_ipt.c's
	 * c->pending): no event resolved it since (conv_event()). */
	bool held_pending;

	/* What libipt's last pt_blk_next() gave, where eng_ipt.c's
	 * error_ip() reads it at a failing pt_blk_event(): the IP, known
	 * when blk_ok (before the first: 0, libipt's block is zeroed). */
	uint64_t blk_ip;
	bool blk_ok;
	/* The last bb_at() or succ() failed where nothing is mapped;
	 * where proceed_no_event() was going then. */
	bool nomap;
	uint64_t fail_ip;

	/* Log bookkeeping: items wait for the position after the next
	 * decision or event (eng_ipt.c's rule). */
	size_t unposed;
	bool decided;		 /* a decision was taken in this blk_next */
	struct hwt_dec_bb *open; /* partially run block */
	uint32_t open_k;
};

/* A scratch is malloc()ed, and only what is read before it is written is
 * set: the run cache's slots (4 KiB), the counts, the L1 cache (small at
 * first) and the engine's state; a run's entry is set when a slot first
 * takes it (run_slot()). Most of its 2 MB is never touched by a short
 * trace's decode: calloc() cleared it all where the heap gave memory back
 * to malloc() (0.7 MB then was most of what a decoder of a short trace
 * cost), and a pool of scratches kept across decoders in the process
 * (until 2026-11-28) made a benchmark's repeated decodes cheaper than
 * the first, which libipt's loop, allocating all afresh each time, is not
 * (bench/bench_decoder.c's header). */
int hwt_dec_fast_scratch_alloc(void **out)
{
	struct fast_scratch *sc = malloc(sizeof(*sc));

	if (!sc)
		return -ENOMEM;
	memset(sc->run_slot, 0, sizeof(sc->run_slot));
	sc->nruns = sc->ncounted = sc->nkept = 0;
	sc->defer = false;
	sc->l1_mask = L1_MIN - 1;
	sc->l1_fills = 0;
	sc->f = calloc(1, sizeof(*sc->f));
	sc->l1 = calloc(L1_MIN, sizeof(*sc->l1));
	if (!sc->f || !sc->l1) {
		free(sc->f);
		free(sc->l1);
		free(sc);
		return -ENOMEM;
	}
	*out = sc;
	return 0;
}

void hwt_dec_fast_scratch_free(void *scratch)
{
	struct fast_scratch *sc = scratch;

	if (!sc)
		return;
	free(sc->f);
	free(sc->l1);
	free(sc);
}

/* ------------------------------------------------------------------------ */
/* Packets                                                                   */

/* The packet at pos, from the segment's decoded packets (np always points
 * at the packet that starts at pos). Returns its size, 0 at the end, -1
 * for a bad packet. */
static inline int peek(struct fast *f)
{
	uint8_t t = f->np->type;

	if (__builtin_expect(t == SEG_PKT_END, 0))
		return 0;
	if (__builtin_expect(t == HWT_PKT_BAD, 0))
		return -1;
	/* libipt refuses a core:bus ratio of 0 (pte_bad_packet, from its
	 * time tracking): the segment is left to it, so both say the same. */
	if (__builtin_expect(t == HWT_PKT_CBR && !f->np->payload, 0))
		return -1;
	return f->np->size;
}

/* Consumes the packet at pos. */
static inline void advance(struct fast *f)
{
	f->np++;
	f->pos = f->s->start + f->np->off;
}

/* Packet types as bits of a mask (enum hwt_pkt_type < 64). */
#define PKT_BIT(t) (1ull << (t))

static inline bool is_event_packet(uint8_t t)
{
	const uint64_t ev = PKT_BIT(HWT_PKT_TIP_PGE) | PKT_BIT(HWT_PKT_TIP_PGD) |
			    PKT_BIT(HWT_PKT_CBR) | PKT_BIT(HWT_PKT_MODE_EXEC) |
			    PKT_BIT(HWT_PKT_MODE_TSX) | PKT_BIT(HWT_PKT_PIP) |
			    PKT_BIT(HWT_PKT_VMCS) | PKT_BIT(HWT_PKT_OVF) | PKT_BIT(HWT_PKT_STOP) |
			    PKT_BIT(HWT_PKT_EXSTOP) | PKT_BIT(HWT_PKT_MWAIT) |
			    PKT_BIT(HWT_PKT_PWRE) | PKT_BIT(HWT_PKT_PWRX);

	return t < 64 && ((ev >> t) & 1);
}

/* Packets we do not decode: the segment goes to libipt. */
static bool unsupported(uint8_t t)
{
	switch (t) {
	case HWT_PKT_PAD:
	case HWT_PKT_TSC:
	case HWT_PKT_TMA:
	case HWT_PKT_MTC:
	case HWT_PKT_CYC:
	case HWT_PKT_CBR:
	case HWT_PKT_TNT_8:
	case HWT_PKT_TNT_64:
	case HWT_PKT_TIP:
	case HWT_PKT_TIP_PGE:
	case HWT_PKT_TIP_PGD:
	case HWT_PKT_FUP:
	case HWT_PKT_MODE_EXEC:
	case HWT_PKT_MODE_TSX:
	case HWT_PKT_PIP:
	case HWT_PKT_VMCS:
	case HWT_PKT_OVF:
	case HWT_PKT_STOP:
	case HWT_PKT_EXSTOP:
	case HWT_PKT_MWAIT:
	case HWT_PKT_PWRE:
	case HWT_PKT_PWRX:
	case HWT_PKT_PSBEND:
	case HWT_PKT_INVALID:
	case HWT_PKT_PSB:
		return false;
	default:
		return true;
	}
}

/* pt_qry_will_event() for the peeked packet (inline: the event path
 * asks it at every packet of a PSB+). */
static inline __attribute__((always_inline)) bool will_event(struct fast *f)
{
	uint8_t t = f->np->type;

	if (is_event_packet(t))
		return true;
	if (t == HWT_PKT_PSBEND)
		return f->npsbq > f->psbq_head;
	if (t == HWT_PKT_TIP)
		return f->tipq.n > 0;
	if (t == HWT_PKT_FUP)
		return f->fupq.n > 0;
	return false;
}

static inline __attribute__((always_inline)) int update_ip(struct fast *f)
{
	uint64_t ip = f->last_ip, v = f->np->payload;

	switch (f->np->ipc) {
	case HWT_IPC_SUPPRESSED:
		f->last_ip_suppressed = true;
		return 0;
	case HWT_IPC_UPDATE_16:
		ip = (ip & ~0xffffull) | (v & 0xffffull);
		break;
	case HWT_IPC_UPDATE_32:
		ip = (ip & ~0xffffffffull) | (v & 0xffffffffull);
		break;
	case HWT_IPC_SEXT_48:
		ip = v & 0xffffffffffffull;
		if (ip & (1ull << 47))
			ip |= 0xffff000000000000ull;
		break;
	case HWT_IPC_UPDATE_48:
		ip = (ip & ~0xffffffffffffull) | (v & 0xffffffffffffull);
		break;
	case HWT_IPC_FULL:
		ip = v;
		break;
	default:
		return DECLINE;
	}
	f->last_ip = ip;
	f->last_ip_valid = true;
	f->last_ip_suppressed = false;
	return 0;
}

/* pt_last_ip_query(): fails when suppressed or when no IP was seen. */
static bool query_ip(struct fast *f, uint64_t *ip)
{
	if (f->last_ip_suppressed || !f->last_ip_valid)
		return false;
	*ip = f->last_ip;
	return true;
}

/* After a query that read a packet: where libipt would ask the hook again
 * (pt_blk_tick when time advanced), its answer is the span's context, so
 * nothing changes unless the context is another one or the time unknown
 * here: those segments go to libipt. */
static inline int tick_point(struct fast *f)
{
	uint64_t tsc;

	if (__builtin_expect(!f->hooked, 1))
		return 0;
	if (f->ctx_stale || !seg_time_at(f->s, f->pos, &f->tcur, &tsc))
		return DECLINE;
	return 0;
}

static int evq_push(struct evq *q, const struct fev *ev)
{
	if (q->n == HWT_ARRAY_SIZE(q->ev))
		return DECLINE;
	q->ev[q->n++] = *ev;
	return 0;
}

static struct fev evq_pop(struct evq *q)
{
	struct fev ev = q->ev[0];

	memmove(q->ev, q->ev + 1, (q->n - 1) * sizeof(q->ev[0]));
	q->n--;
	return ev;
}

/* pt_evq_find(): the first TIP-bound event of a type, or NULL. */
static struct fev *tip_find(struct fast *f, uint8_t type)
{
	for (unsigned int i = 0; i < f->tipq.n; i++) {
		if (f->tipq.ev[i].type == type)
			return &f->tipq.ev[i];
	}
	return NULL;
}

/* An event's IP from the last IP (pt_qry_event_ip): suppressed when none. */
static void event_ip(struct fast *f, struct fev *ev)
{
	if (!query_ip(f, &ev->ip))
		ev->suppressed = 1;
}

/* The CR3 a PIP packet carries (bits 51:5 in payload bits 47:1) and its
 * non-root bit. */
static uint64_t pip_cr3(uint64_t payload)
{
	return (payload >> 1) << 5;
}

static uint8_t exec_mode(uint8_t bits)
{
	bool csl = bits & 1, csd = bits & 2;

	if (csl)
		return csd ? HWT_DEC_MODE_UNKNOWN : HWT_DEC_MODE_64;
	return csd ? HWT_DEC_MODE_32 : HWT_DEC_MODE_16;
}

/* A FUP outside PSB+ with no FUP-bound event: an async branch binding to
 * the next TIP (pt_qry_decode_fup). */
static int decode_fup(struct fast *f)
{
	struct fev ev;
	int err = update_ip(f);

	if (err < 0)
		return err;
	memset(&ev, 0, sizeof(ev));
	if (!query_ip(f, &ev.at))
		return DECLINE;
	ev.type = HWT_DEC_EV_ASYNC_BRANCH;
	err = evq_push(&f->tipq, &ev);
	if (err < 0)
		return err;
	advance(f);
	return 0;
}

static int psb_header(struct fast *f);

/* Decodes a status packet during read-ahead. */
static int decode_status(struct fast *f)
{
	switch (f->np->type) {
	case HWT_PKT_PSB:
		/* A PSB+ inside the segment: decoding goes on through it
		 * (libipt's pt_qry_decode_psb). */
		return psb_header(f);
	case HWT_PKT_PAD:
	case HWT_PKT_TSC:
	case HWT_PKT_TMA:
	case HWT_PKT_MTC:
	case HWT_PKT_CYC:
	case HWT_PKT_PSBEND:
	case HWT_PKT_INVALID: /* SKZ84: a corrupted TMA, skipped */
		advance(f);
		return 0;
	case HWT_PKT_FUP:
		return decode_fup(f);
	default:
		return DECLINE;
	}
}

/* pt_qry_read_ahead(): decode status packets up to the next branch or
 * event packet. Returns 0, Q_EOS at the end, or DECLINE. */
static inline int read_ahead(struct fast *f)
{
	uint8_t t0 = f->np->type;

	/* The common cases: a branch packet right away, or an event packet
	 * (will_event(); but a CBR, whose payload peek() checks). */
	if (t0 == HWT_PKT_TNT_8 || t0 == HWT_PKT_TIP || t0 == HWT_PKT_TNT_64 ||
	    (t0 != HWT_PKT_CBR && is_event_packet(t0)))
		return 0;
	for (;;) {
		int n = peek(f), err;

		if (n == 0)
			return Q_EOS;
		if (n < 0 || unsupported(f->np->type))
			return DECLINE;
		if (f->np->type == HWT_PKT_TIP || f->np->type == HWT_PKT_TNT_8 ||
		    f->np->type == HWT_PKT_TNT_64)
			return 0;
		if (will_event(f))
			return 0;
		err = decode_status(f);
		if (err < 0)
			return err;
	}
}

/* pt_qry_status_flags(). Declines when the next packet is one we do not
 * handle: libipt would flag an event or an error there. */
static inline int status_flags(struct fast *f)
{
	int flags = 0;

	if (f->ntnt == 0) {
		uint8_t t = f->np->type;

		/* The common cases first (will_event() below). */
		if (t == HWT_PKT_TNT_8 || t == HWT_PKT_TNT_64)
			return 0;
		if (t == HWT_PKT_TIP)
			return f->tipq.n ? ST_EVENT : 0;
		/* An event packet: peek() takes it (but a CBR of 0),
		 * unsupported() does not refuse it, will_event() holds. */
		if (t != HWT_PKT_CBR && is_event_packet(t))
			return ST_EVENT;
	}
	if (f->ntnt == 0) {
		int n = peek(f);

		if (n < 0 || (n > 0 && unsupported(f->np->type)))
			return DECLINE;
		if (n > 0 && will_event(f))
			flags |= ST_EVENT;
		if (n == 0)
			flags |= ST_EOS;
	}
	return flags;
}

static inline int ra_tolerant(struct fast *f)
{
	int err = read_ahead(f);

	return err == Q_EOS ? 0 : err;
}

/* pt_qry_cond_branch()'s read of the TNT packet next (no cached bit):
 * its bits cached. */
static inline int tnt_fetch(struct fast *f)
{
	int err;

	f->tnt = f->np->payload;
	f->ntnt = f->np->aux;
	advance(f);
	if (f->ntnt == 0)
		return DECLINE;
	err = ra_tolerant(f);
	if (err < 0)
		return err;
	return tick_point(f);
}

/* pt_qry_cond_branch(). */
static inline int q_cond(struct fast *f, bool *taken)
{
	if (f->ntnt == 0) {
		uint8_t t = f->np->type;
		int n, err;

		if (t != HWT_PKT_TNT_8 && t != HWT_PKT_TNT_64) {
			/* No TNT next: what libipt would say instead. */
			n = peek(f);
			if (n == 0)
				return Q_EOS;
			if (n > 0 && !unsupported(t) && (will_event(f) || t == HWT_PKT_TIP))
				return Q_BADQUERY;
			return DECLINE;
		}
		err = tnt_fetch(f);
		if (err < 0)
			return err;
	}
	f->ntnt--;
	*taken = (f->tnt >> f->ntnt) & 1;
	return status_flags(f);
}

/* The next conditional branch's bit in the hot loop: a cached TNT bit
 * computes the status flags only once the cache runs dry; else
 * q_cond(). */
static inline int next_bit(struct fast *f, bool *taken)
{
	if (!f->ntnt)
		return q_cond(f, taken);
	f->ntnt--;
	*taken = (f->tnt >> f->ntnt) & 1;
	return f->ntnt ? 0 : status_flags(f);
}

/* pt_qry_indirect_branch(). */
static int q_indirect(struct fast *f, uint64_t *ip)
{
	int flags = 0, err;

	for (;;) {
		int n = peek(f);

		if (n == 0)
			return Q_EOS;
		if (n < 0 || unsupported(f->np->type))
			return DECLINE;
		if (will_event(f))
			return Q_BADQUERY;
		if (f->np->type == HWT_PKT_TNT_8 || f->np->type == HWT_PKT_TNT_64) {
			if (f->ntnt)
				return Q_BADQUERY;
			f->tnt = f->np->payload;
			f->ntnt = f->np->aux;
			advance(f);
			err = read_ahead(f);
			if (err < 0)
				return err == Q_EOS ? Q_EOS : err;
			continue;
		}
		if (f->np->type == HWT_PKT_TIP) {
			err = update_ip(f);
			if (err < 0)
				return err;
			if (!query_ip(f, ip))
				flags |= ST_IPSUP;
			advance(f);
			break;
		}
		err = decode_status(f);
		if (err < 0)
			return err;
		err = read_ahead(f);
		if (err < 0)
			return err == Q_EOS ? Q_EOS : err;
	}
	err = ra_tolerant(f);
	if (err < 0)
		return err;
	err = tick_point(f);
	if (err < 0)
		return err;
	err = status_flags(f);
	return err < 0 ? err : (flags | err);
}

/* pt_qry_find_ovf_fup(): after an OVF, a FUP before any packet that
 * needs tracing to be off or on. Returns 1 (a FUP: tracing resumed on), 0
 * (off, or the end of the segment: libipt finds the next PSB there), or
 * DECLINE (a packet that cannot follow an OVF: libipt's error). */
static int ovf_finds_fup(const struct fast *f)
{
	for (const struct seg_pkt *p = f->np;; p++) {
		switch (p->type) {
		case HWT_PKT_FUP:
			return 1;
		case HWT_PKT_PAD:
		case HWT_PKT_MNT:
		case HWT_PKT_CBR:
		case HWT_PKT_TSC:
		case HWT_PKT_TMA:
		case HWT_PKT_MTC:
		case HWT_PKT_CYC:
			continue;
		case SEG_PKT_END:
		case HWT_PKT_PSB:
		case HWT_PKT_TIP_PGE:
		case HWT_PKT_MODE_EXEC:
		case HWT_PKT_MODE_TSX:
		case HWT_PKT_PIP:
		case HWT_PKT_VMCS:
		case HWT_PKT_STOP:
		case HWT_PKT_OVF:
		case HWT_PKT_EXSTOP:
		case HWT_PKT_MWAIT:
		case HWT_PKT_PWRE:
		case HWT_PKT_PWRX:
		case HWT_PKT_PTW:
			return 0;
		default:
			return DECLINE;
		}
	}
}

/* An OVF (pt_qry_decode_ovf): the query decoder starts over; the overflow
 * binds to a FUP that follows (tracing on there) or stands alone (off).
 * The errata whose workarounds look further ahead are libipt's. */
static int decode_ovf(struct fast *f, struct fev *ev, bool *got)
{
	const struct pt_errata *e = &f->dec->ptcfg.errata;
	int st;

	if (e->skd010 || e->apl11 || e->apl12)
		return DECLINE;
	/* An OVF ends a PSB+ too: its status updates come first. */
	if (f->npsbq > f->psbq_head) {
		*ev = f->psbq[f->psbq_head++];
		if (ev->type != HWT_DEC_EV_CBR)
			event_ip(f, ev);
		*got = true;
		return 0;
	}
	f->q_enabled = false;
	f->consume_packet = false;
	f->last_ip = 0;
	f->last_ip_valid = false;
	f->last_ip_suppressed = false;
	f->ntnt = 0;
	f->tipq.n = f->fupq.n = 0;
	advance(f);
	st = ovf_finds_fup(f);
	if (st < 0)
		return st;
	ev->type = HWT_DEC_EV_OVERFLOW;
	if (st) {
		f->q_enabled = true;
		return evq_push(&f->fupq, ev);
	}
	ev->suppressed = 1;
	*got = true;
	return 0;
}

/* A FUP that FUP-bound events wait for (pt_qry_decode_fup). */
static int decode_bound_fup(struct fast *f, struct fev *out, bool *got)
{
	struct fev ev;
	int err = update_ip(f);

	if (err < 0)
		return err;
	ev = evq_pop(&f->fupq);
	switch (ev.type) {
	case HWT_DEC_EV_OVERFLOW:
		f->consume_packet = true;
		/* libipt needs the IP here. */
		if (!query_ip(f, &ev.ip))
			return DECLINE;
		break;
	case HWT_DEC_EV_TSX:
		if (!(ev.aux & TSX_ABORT))
			f->consume_packet = true;
		event_ip(f, &ev);
		break;
	case HWT_DEC_EV_EXSTOP:
	case HWT_DEC_EV_MWAIT:
		f->consume_packet = true;
		event_ip(f, &ev);
		break;
	default:
		return DECLINE;
	}
	*out = ev;
	*got = true;
	/* An abort's FUP goes on to be an asynchronous branch's. */
	if (f->fupq.n || !f->consume_packet)
		return 0;
	f->consume_packet = false;
	advance(f);
	return 0;
}

/* Decodes an event packet (pt_qry_decode_*); sets *got when an event is
 * published. */
static int decode_event(struct fast *f, struct fev *out, bool *got)
{
	const struct seg_pkt *p = f->np;
	struct fev ev, *bound;
	int err;

	*got = false;
	memset(&ev, 0, sizeof(ev));
	switch (p->type) {
	case HWT_PKT_TIP_PGE:
		err = update_ip(f);
		if (err < 0)
			return err;
		if (!f->consume_packet) {
			ev.type = HWT_DEC_EV_ENABLED;
			if (!query_ip(f, &ev.ip))
				return DECLINE; /* -pte_bad_packet */
			f->ntnt = 0;
			f->consume_packet = true;
			f->q_enabled = true;
		} else {
			if (!f->tipq.n)
				return DECLINE;
			ev = evq_pop(&f->tipq);
			if (ev.type != HWT_DEC_EV_EXEC_MODE)
				return DECLINE;
			event_ip(f, &ev);
		}
		*out = ev;
		*got = true;
		if (f->tipq.n)
			return 0;
		f->consume_packet = false;
		advance(f);
		return 0;
	case HWT_PKT_TIP_PGD:
		err = update_ip(f);
		if (err < 0)
			return err;
		if (f->tipq.n) {
			ev = evq_pop(&f->tipq);
			switch (ev.type) {
			case HWT_DEC_EV_ASYNC_BRANCH:
				ev.type = HWT_DEC_EV_ASYNC_DISABLED;
				event_ip(f, &ev);
				break;
			case HWT_DEC_EV_EXEC_MODE:
			case HWT_DEC_EV_ASYNC_PAGING:
			case HWT_DEC_EV_ASYNC_VMCS:
				/* Bound after the disable: no IP. */
				ev.suppressed = 1;
				break;
			default:
				return DECLINE;
			}
		} else {
			ev.type = HWT_DEC_EV_DISABLED;
			event_ip(f, &ev);
		}
		*out = ev;
		*got = true;
		if (f->tipq.n)
			return 0;
		f->q_enabled = false;
		advance(f);
		return 0;
	case HWT_PKT_TIP:
		/* Only with TIP-bound events pending (else not an event). */
		err = update_ip(f);
		if (err < 0)
			return err;
		ev = evq_pop(&f->tipq);
		switch (ev.type) {
		case HWT_DEC_EV_ASYNC_BRANCH:
			f->consume_packet = true;
			/* fall through */
		case HWT_DEC_EV_EXEC_MODE:
		case HWT_DEC_EV_ASYNC_PAGING:
		case HWT_DEC_EV_ASYNC_VMCS:
			event_ip(f, &ev);
			break;
		default:
			return DECLINE;
		}
		*out = ev;
		*got = true;
		if (f->tipq.n || !f->consume_packet)
			return 0;
		f->consume_packet = false;
		advance(f);
		return 0;
	case HWT_PKT_FUP:
		if (!f->fupq.n)
			return decode_status(f);
		return decode_bound_fup(f, out, got);
	case HWT_PKT_MODE_EXEC:
		ev.type = HWT_DEC_EV_EXEC_MODE;
		ev.mode = exec_mode(p->aux);
		err = evq_push(&f->tipq, &ev);
		if (err < 0)
			return err;
		advance(f);
		return 0;
	case HWT_PKT_MODE_TSX:
		ev.type = HWT_DEC_EV_TSX;
		ev.aux = (uint8_t)(((p->aux & 1) ? TSX_SPEC : 0) | ((p->aux & 2) ? TSX_ABORT : 0));
		advance(f);
		/* Standalone while tracing is off, else bound to a FUP. */
		if (f->q_enabled)
			return evq_push(&f->fupq, &ev);
		ev.suppressed = 1;
		*out = ev;
		*got = true;
		return 0;
	case HWT_PKT_PIP:
		ev.payload = pip_cr3(p->payload);
		ev.aux = p->payload & 1;
		advance(f);
		/* With an asynchronous branch in flight, bound to its TIP. */
		if (tip_find(f, HWT_DEC_EV_ASYNC_BRANCH)) {
			ev.type = HWT_DEC_EV_ASYNC_PAGING;
			return evq_push(&f->tipq, &ev);
		}
		ev.type = HWT_DEC_EV_PAGING;
		*out = ev;
		*got = true;
		return 0;
	case HWT_PKT_VMCS:
		ev.payload = p->payload;
		advance(f);
		bound = tip_find(f, HWT_DEC_EV_ASYNC_PAGING);
		if (bound) {
			/* Applied before the paging event it binds with. */
			struct fev paging = *bound;

			bound->type = HWT_DEC_EV_ASYNC_VMCS;
			bound->payload = ev.payload;
			bound->aux = 0;
			return evq_push(&f->tipq, &paging);
		}
		if (tip_find(f, HWT_DEC_EV_ASYNC_BRANCH)) {
			ev.type = HWT_DEC_EV_ASYNC_VMCS;
			return evq_push(&f->tipq, &ev);
		}
		ev.type = HWT_DEC_EV_VMCS;
		*out = ev;
		*got = true;
		return 0;
	case HWT_PKT_OVF:
		err = decode_ovf(f, &ev, got);
		if (*got)
			*out = ev;
		return err;
	case HWT_PKT_STOP:
		ev.type = HWT_DEC_EV_STOP;
		advance(f);
		*out = ev;
		*got = true;
		return 0;
	case HWT_PKT_EXSTOP:
		ev.type = HWT_DEC_EV_EXSTOP;
		advance(f);
		if (p->aux & 0x80)
			return evq_push(&f->fupq, &ev);
		ev.suppressed = 1;
		*out = ev;
		*got = true;
		return 0;
	case HWT_PKT_MWAIT:
		ev.type = HWT_DEC_EV_MWAIT;
		ev.payload = p->payload;
		advance(f);
		return evq_push(&f->fupq, &ev);
	case HWT_PKT_PWRE:
	case HWT_PKT_PWRX:
		ev.type = p->type == HWT_PKT_PWRE ? HWT_DEC_EV_PWRE : HWT_DEC_EV_PWRX;
		ev.payload = p->payload;
		advance(f);
		*out = ev;
		*got = true;
		return 0;
	case HWT_PKT_CBR:
		ev.type = HWT_DEC_EV_CBR;
		ev.payload = p->payload;
		*out = ev;
		*got = true;
		advance(f);
		return 0;
	case HWT_PKT_PSBEND:
		if (f->npsbq > f->psbq_head) {
			ev = f->psbq[f->psbq_head++];
			if (ev.type != HWT_DEC_EV_CBR)
				event_ip(f, &ev);
			*out = ev;
			*got = true;
			return 0;
		}
		advance(f);
		return 0;
	default:
		return decode_status(f);
	}
}

/* A TIP.PGE or TIP.PGD IP compression that updates the last IP (not
 * suppressed, not reserved): update_ip() succeeds and query_ip() then
 * does. */
static inline bool ipc_updates(uint8_t ipc)
{
	return ipc == HWT_IPC_UPDATE_16 || ipc == HWT_IPC_UPDATE_32 || ipc == HWT_IPC_SEXT_48 ||
	       ipc == HWT_IPC_UPDATE_48 || ipc == HWT_IPC_FULL;
}

/* pt_qry_event(). */
static int q_event(struct fast *f, struct fev *out)
{
	const struct seg_pkt *p = f->np;
	int err;

	if (f->ntnt)
		return DECLINE; /* -pte_bad_query */
	/* An enable with an IP or a disable, nothing queued (an address
	 * filter's crossings, system calls): decode_event()'s, without the
	 * loop's checks (a packet of neither kind is one that will_event()
	 * takes and unsupported() does not). */
	if (!f->tipq.n &&
	    ((p->type == HWT_PKT_TIP_PGE && !f->consume_packet && ipc_updates(p->ipc)) ||
	     (p->type == HWT_PKT_TIP_PGD &&
	      (ipc_updates(p->ipc) || p->ipc == HWT_IPC_SUPPRESSED)))) {
		err = update_ip(f);
		if (err < 0)
			return err;
		memset(out, 0, sizeof(*out));
		if (p->type == HWT_PKT_TIP_PGE) {
			out->type = HWT_DEC_EV_ENABLED;
			out->ip = f->last_ip;
			f->q_enabled = true;
		} else {
			out->type = HWT_DEC_EV_DISABLED;
			event_ip(f, out);
			f->q_enabled = false;
		}
		advance(f);
		err = ra_tolerant(f);
		if (err < 0)
			return err;
		return status_flags(f);
	}
	for (;;) {
		int n = peek(f);
		bool got;

		if (n == 0)
			return DECLINE; /* -pte_eos: an error for libipt */
		if (n < 0 || unsupported(f->np->type))
			return DECLINE;
		if ((f->np->type == HWT_PKT_TIP || f->np->type == HWT_PKT_TNT_8 ||
		     f->np->type == HWT_PKT_TNT_64) &&
		    !will_event(f))
			return DECLINE;
		err = decode_event(f, out, &got);
		if (err < 0)
			return err;
		if (got)
			break;
		err = read_ahead(f);
		if (err < 0)
			return err == Q_EOS ? DECLINE : err;
	}
	err = ra_tolerant(f);
	if (err < 0)
		return err;
	return status_flags(f);
}

/* ------------------------------------------------------------------------ */
/* Block decoder mirror                                                      */

static int blk_status(struct fast *f, int flags)
{
	if (!f->enabled)
		flags |= ST_IPSUP;
	if ((f->status & ST_EOS) && !f->process_event)
		flags |= ST_EOS;
	return flags;
}

static int fetch_event(struct fast *f)
{
	int st;

	if (f->process_event)
		return 1;
	if (!(f->status & ST_EVENT))
		return 0;
	st = q_event(f, &f->ev);
	if (st < 0)
		return st;
	f->process_event = true;
	f->status = st;
	return 1;
}

static void rs_push(struct fast *f, struct hwt_dec_bb *call)
{
	f->retstack[f->rs_top++ & 63] = call;
}

static struct hwt_dec_bb *rs_pop(struct fast *f)
{
	struct hwt_dec_bb **e = &f->retstack[(f->rs_top - 1) & 63], *call = *e;

	if (!call)
		return NULL;
	*e = NULL;
	f->rs_top--;
	return call;
}

static __attribute__((noinline)) struct hwt_dec_bb *bb_at_slow(struct fast *f, uint64_t ip,
							       int *err)
{
	const struct hwt_dec_image *img = f->ctx.image;
	struct fast_scratch *sc = f->sc;
	struct l1_entry *e;
	struct hwt_dec_bb *bb;

	f->nomap = false;
	if (!img) {
		*err = DECLINE;
		return NULL;
	}
	if (++sc->l1_fills > sc->l1_mask && sc->l1_mask < L1_SIZE - 1) {
		/* As many fills as entries: the full size. */
		struct l1_entry *l1 = calloc(L1_SIZE, sizeof(*l1));

		if (l1) {
			free(sc->l1);
			sc->l1 = l1;
			sc->l1_mask = L1_SIZE - 1;
			sc->l1_fills = 0;
		}
	}
	e = &sc->l1[(ip ^ (ip >> 12)) & sc->l1_mask];
	if (hwt_dec_bb_get(f->dec->icache, img, ip, (enum hwt_dec_mode)f->mode, &bb) < 0) {
		/* libipt: no memory mapped (or a bad opcode). */
		f->s->decline_err = true;
		f->nomap = !hwt_dec_image_find(img, ip);
		*err = DECLINE;
		return NULL;
	}
	e->ip = ip;
	e->image_id = img->id;
	e->mode = f->mode;
	e->bb = bb;
	return bb;
}

/* The block at ip: a small direct-mapped cache in front of the shared
 * table. */
static inline struct hwt_dec_bb *bb_at(struct fast *f, uint64_t ip, int *err)
{
	const struct l1_entry *e = &f->sc->l1[(ip ^ (ip >> 12)) & f->sc->l1_mask];

	if (__builtin_expect(
		e->ip == ip && e->bb && e->image_id == f->image_id && e->mode == f->mode, 1))
		return e->bb;
	return bb_at_slow(f, ip, err);
}

/* succ() found no block: whether nothing is mapped there. */
static __attribute__((noinline, cold)) struct hwt_dec_bb *
succ_failed(struct fast *f, const struct hwt_dec_bb *bb, int dir, int *err)
{
	f->nomap = !hwt_dec_image_find(f->ctx.image, dir ? bb->target : bb->fallthrough);
	*err = DECLINE;
	return NULL;
}

static inline __attribute__((always_inline)) struct hwt_dec_bb *
succ(struct fast *f, struct hwt_dec_bb *bb, int dir, int *err)
{
	struct hwt_dec_bb *n = atomic_load_explicit(&bb->near[dir], memory_order_acquire);
	struct hwt_dec_edge *e;

	/* Successors share the block's mode (a mode change is an event). */
	if (__builtin_expect(n != NULL, 1))
		return n;
	e = atomic_load_explicit(&bb->succ[dir], memory_order_acquire);
	if (e && e->image_id == f->ctx.image->id)
		return e->bb;
	if (hwt_dec_bb_succ(f->dec->icache, f->ctx.image, bb, dir, &n) < 0)
		return succ_failed(f, bb, dir, err);
	return n;
}

static inline __attribute__((always_inline)) int
add_item(struct fast *f, struct hwt_dec_bb *bb, uint32_t ninsn, uint8_t flags, uint64_t next_ip)
{
	return seg_bb(f->s, bb, ninsn, flags | f->spec, next_ip, f->pos);
}

/* Gives the items since the last snapshot the current position. */
static inline __attribute__((always_inline)) void snapshot(struct fast *f)
{
	struct seg *s = f->s;
	size_t n = s->nitems;

	/* Every item the fast engine logs waits for its position (it
	 * carries the one when it was logged till then). */
	for (size_t i = f->unposed; i < n; i++)
		s->items[i].pos = f->pos;
	f->unposed = n;
}

/* A decision with an event right after it (see held_bb). */
static inline void hold(struct fast *f, struct hwt_dec_bb *bb, size_t item, bool taken)
{
	f->held_bb = bb;
	f->held_item = item;
	f->held_taken = taken;
	f->held_pending = true;
}

/* An overflow: the held decision's outcome is lost (eng_ipt.c resolves
 * it to 0), where it is still libipt's pending one; an event since
 * (an asynchronous disable at the branch's target, say) resolved it
 * already, with the outcome the item has. */
static int drop_held(struct fast *f)
{
	struct seg *s = f->s;
	struct hwt_dec_bb *bb = f->held_bb;

	if (!bb)
		return 0;
	f->held_bb = NULL;
	if (!f->held_pending)
		return 0;
	if (f->held_item != SEG_NOT_LOGGED) {
		s->items[f->held_item].next_ip = 0;
		s->items[f->held_item].flags &= (uint8_t)~SEG_F_TAKEN;
		s->items[f->held_item].stack = SEG_STACK_UNSAID;
	}
	if (f->held_taken && s->profile) {
		struct seg_work *w = s->work;
		struct seg_cnt *c;

		if (bb->id >= w->size && seg_work_grow(w, bb->id) < 0)
			return s->err = -ENOMEM;
		c = &w->c[bb->id];
		/* Runs' counts are folded in later (with runs kept, maybe
		 * into the profile, after this segment's counts): the sum
		 * is right. Touched, so that it goes with them. */
		if (!c->touched) {
			if (w->ntouched == w->cap_touched && seg_work_grow(w, UINT32_MAX) < 0)
				return s->err = -ENOMEM;
			c->touched = 1;
			w->touched[w->ntouched++] = bb->id;
		}
		c->taken--;
	}
	return 0;
}

static __attribute__((noinline)) int close_open_bb(struct fast *f)
{
	int err = add_item(f, f->open, f->open_k, SEG_F_PARTIAL, 0);

	f->open = NULL;
	return err;
}

/* The open block ran up to here: a partial item (none open: nothing). */
static inline int close_open(struct fast *f)
{
	return f->open ? close_open_bb(f) : 0;
}

static int start_at(struct fast *f, uint64_t at, const struct seg_state *e);

/* Whether libipt's pt_blk_sync_forward() at the PSB at sync succeeds
 * (1): its fresh start there, as start_at() mirrors it, gives a status;
 * or fails (0) at the end of the trace after a complete PSB+ (where a
 * segment would be empty). eng_ipt.c stops decoding where it fails.
 * Anything else is not certain (DECLINE): PSB patterns inside packets,
 * what the fast engine does not decode. */
static int resyncs(struct fast *f, uint64_t sync)
{
	const struct seg_pkt *p = f->np;
	struct seg_state none;
	struct seg_pkt *own = NULL;
	struct fast *g;
	int st;

	while (p->type != SEG_PKT_END && p->type != HWT_PKT_BAD && f->s->start + p->off < sync)
		p++;
	if (p->type == HWT_PKT_BAD && f->s->start + p->off < sync) {
		/* The list ends at a bad packet before it (what libipt
		 * skips to get there): the PSB+ from its own. */
		enum { OWN = 512 };

		own = malloc(OWN * sizeof(*own));
		if (!own)
			return -ENOMEM;
		seg_pkts_from(f->s, sync, f->skz84, own, OWN);
		p = own;
	}
	if (p->type != HWT_PKT_PSB || f->s->start + p->off != sync) {
		free(own);
		return DECLINE;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		free(own);
		return -ENOMEM;
	}
	g->dec = f->dec;
	g->s = f->s;
	g->sc = f->sc;
	g->buf = f->buf;
	g->end = f->end;
	g->skz84 = f->skz84;
	g->ctx = f->ctx;
	g->image_id = f->image_id;
	g->np = p;
	g->mode = HWT_DEC_MODE_UNKNOWN;
	memset(&none, 0, sizeof(none));
	st = start_at(g, sync, &none);
	if (st == Q_EOS && !g->cut_header)
		st = 0;
	else if (st >= 0)
		st = 1;
	else if (st != -ENOMEM)
		st = DECLINE;
	free(g);
	free(own);
	return st;
}

/* libipt's block decoder fails here too, with pterr: the log gets what
 * eng_ipt.c writes from there on (seg_ipt(), conv_resync()): what ran of
 * an open block, the gap at the query decoder's offset (where no trace
 * was read since the call that failed began, the offset before it) with
 * ip, the decision waiting for the next block resolved to none (the
 * held one, if libipt's is still pending); then libipt synchronizes
 * afresh at the next PSB (pt_blk_sync_forward()), which is where the
 * segment ends (eng_ipt.c's resync_stop: run.c decodes the rest from a
 * fresh sync), and the gap's size is the bytes up to there (or to the
 * segment's end, without a PSB). Returns Q_FAILED, or DECLINE where that
 * PSB is not certain: libipt looks for its pattern from the offset on
 * and takes a run's last 16 bytes, so a run of 02 82 that may begin
 * before the offset is left to it. */
static int libipt_fails_at(struct fast *f, int pterr, uint64_t ip, uint64_t at)
{
	struct seg *s = f->s;
	uint64_t pos = f->pos, sync;
	int err;

	/* With a sideband hook, libipt's engine keeps what its block cache
	 * made of a failing segment (eng_ipt.c), which this does not mirror. */
	if (f->dec->cfg.context || pos <= s->start || pos > s->end || s->buf[pos - 1] == 0x02 ||
	    s->buf[pos - 1] == 0x82)
		return DECLINE;
	/* A bad packet inside a PSB+ that libipt reads decoding on: its
	 * query decoder fails with its offset still at the PSB (it reads
	 * the PSB+ whole or not at all) and synchronizes there again (a
	 * damaged stream; test_realpt.c test_damaged_vs_ptxed, seeds 26
	 * and 60): left to it. */
	if (f->np->type == HWT_PKT_BAD) {
		for (const struct seg_pkt *p = f->np;
		     p > s->pkts && p[-1].type != HWT_PKT_PSBEND;) {
			if ((--p)->type == HWT_PKT_PSB)
				return DECLINE;
		}
	}
	sync = hwt_pkt_find_psb(s->buf, (size_t)s->end, (size_t)pos);
	if (sync < s->end) {
		err = resyncs(f, sync);
		if (err < 0)
			return err;
		if (!err)
			sync = s->end; /* it does not: decoding ends */
	}
	if (f->held_bb && f->held_pending) {
		err = drop_held(f);
		if (err < 0)
			return err;
	}
	f->held_bb = NULL;
	/* What was logged since the call began, and the gap, at its
	 * offset (eng_ipt.c: prepos). */
	f->pos = at;
	err = close_open(f);
	if (err < 0)
		return err;
	snapshot(f);
	err =
	    seg_add_gap(s, HWT_DEC_GAP_ERROR, hwt_dec_err_from_pt(pterr),
			pt_errstr(pt_errcode(pterr)), ip, (sync < s->end ? sync : s->end) - at, at);
	if (err < 0)
		return err;
	f->unposed = s->nitems;
	if (sync < s->end) {
		s->end = sync;
		s->last = false;
	}
	return Q_FAILED;
}

static int libipt_fails(struct fast *f, int pterr, uint64_t ip)
{
	return libipt_fails_at(f, pterr, ip, f->pos);
}

/* libipt's query for the branch that ends bb fails with pterr (a
 * compressed return whose bit is not taken or finds its stack empty; the
 * packet read ahead after the query's is not one: unknown opcode): its
 * block decoder fails with what ran up to and including that branch,
 * whose outcome is none; the gap at the offset where libipt's block began
 * (at: the call that failed began there, eng_ipt.c's prepos), libipt
 * synchronizing afresh from where its query decoder stopped (f->pos). */
static int branch_fails(struct fast *f, struct hwt_dec_bb *bb, int pterr, uint64_t at)
{
	int err;

	f->open = NULL;
	f->held_bb = NULL;
	err = add_item(f, bb, bb->ninsn, 0, 0);
	return err < 0 ? err : libipt_fails_at(f, pterr, bb->end_ip, at);
}

/* Whether the packet at f->np, which the read ahead after a query met, is
 * one whose opcode libipt does not know (its query then fails with
 * -pte_bad_opc; anything else about a bad packet is left to libipt). */
static bool bad_opcode_next(const struct fast *f)
{
	const struct seg *s = f->s;
	struct pt_config cfg = f->dec->ptcfg;
	struct pt_packet_decoder *d;
	struct pt_packet pk;
	int st;

	if (f->np->type != HWT_PKT_BAD)
		return false;
	cfg.begin = (uint8_t *)s->buf + s->start;
	cfg.end = (uint8_t *)s->buf + s->end;
	memset(&cfg.flags, 0, sizeof(cfg.flags));
	d = pt_pkt_alloc_decoder(&cfg);
	if (!d)
		return false;
	st = pt_pkt_sync_set(d, f->pos - s->start);
	if (st >= 0)
		st = pt_pkt_next(d, &pk, sizeof(pk));
	pt_pkt_free_decoder(d);
	return st == -pte_bad_opc;
}

/* The last packet a query read (TNT or TIP) before f->np, past timing
 * packets only (what read_ahead() goes past); NULL where other packets
 * come between. */
static const struct seg_pkt *last_query_pkt(const struct fast *f)
{
	const struct seg_pkt *p = f->np;

	while (p-- > f->s->pkts) {
		switch (p->type) {
		case HWT_PKT_TNT_8:
		case HWT_PKT_TNT_64:
		case HWT_PKT_TIP:
			return p;
		case HWT_PKT_PAD:
		case HWT_PKT_TSC:
		case HWT_PKT_TMA:
		case HWT_PKT_MTC:
		case HWT_PKT_CYC:
			continue;
		default:
			return NULL;
		}
	}
	return NULL;
}

/* The read ahead after a query's TNT packet met a packet with an unknown
 * opcode (bad_opcode_next()): that TNT packet's offset in *at, where
 * libipt's block began (its query read that packet first). */
static bool tnt_read_fails(const struct fast *f, uint64_t *at)
{
	const struct seg_pkt *p;

	/* (A TNT packet without bits is libipt's to refuse.) */
	if (!f->ntnt || !bad_opcode_next(f))
		return false;
	p = last_query_pkt(f);
	if (!p || p->type == HWT_PKT_TIP)
		return false;
	*at = f->s->start + p->off;
	return true;
}

/* Where libipt's block that ends with the return whose TNT bit was just
 * taken began: at the TNT packet that bit came from when the return's
 * query read it (its first bit: the hot loop reads it ahead of the
 * return's turn), else here (the bit was cached by an earlier query, TNT
 * or TIP, and no trace was read since but timing packets); UINT64_MAX
 * where that is not certain (other packets read since). */
static uint64_t ret_block_at(const struct fast *f)
{
	const struct seg_pkt *p = last_query_pkt(f);

	if (!p)
		return UINT64_MAX;
	if (p->type != HWT_PKT_TIP && p->aux == f->ntnt + 1)
		return f->s->start + p->off;
	return f->pos;
}

/* bb_at() or succ() failed (err) at ip, where libipt's block decoder
 * goes on: where nothing is mapped there, its pt_blk_next() fails with
 * -pte_nomap and the IP eng_ipt.c gives that gap is ip (an empty block
 * begins there, or the instruction after a block that runs into it).
 * Anything else is libipt's to decode. */
static int block_fails(struct fast *f, uint64_t ip, int err)
{
	if (err != DECLINE || !f->nomap)
		return err;
	return libipt_fails(f, -pte_nomap, ip);
}

static uint8_t cond_flags(const struct hwt_dec_bb *bb, uint64_t next)
{
	return (bb->branch == HWT_DEC_BR_COND && next == bb->target && next) ? SEG_F_TAKEN : 0;
}

/* Runs the open block (or a new one at f->ip) up to ip `to` without
 * trace (pt_blk_proceed_to_ip). Returns 1 when reached, Q_BADQUERY when a
 * branch needing trace comes first (f->ip is then that branch), DECLINE. */
static int proceed_to_ip(struct fast *f, uint64_t to, struct hwt_dec_bb **last)
{
	int steps = 0, err = 0;

	*last = NULL;
	for (;;) {
		struct hwt_dec_bb *bb;
		int k;

		if (f->ip == to)
			return 1;
		if (++steps > 4096)
			return DECLINE;
		if (f->open) {
			bb = f->open;
		} else {
			/* Where no block begins, the decision held stays
			 * libipt's pending one (libipt_fails() drops it). */
			bb = bb_at(f, f->ip, &err);
			if (!bb)
				return err;
			if (bb->flags & (HWT_DEC_BBF_ERROR | HWT_DEC_BBF_TRUNCATED))
				return DECLINE;
			f->open = bb;
			f->open_k = 0;
		}
		f->held_bb = NULL;
		*last = bb;
		/* Its instructions ascend from ip to end_ip: no search for an
		 * ip outside them (a disable's, mostly). */
		k = bb->end_ip >= bb->ip && (to < bb->ip || to > bb->end_ip)
			? -1
			: hwt_dec_bb_index(bb, to);
		if (k > (int)f->open_k) {
			f->open_k = (uint32_t)k;
			f->ip = to;
			return 1;
		}
		/* Run the rest of the block. */
		f->open_k = bb->ninsn;
		switch (bb->branch) {
		case HWT_DEC_BR_NONE:
		case HWT_DEC_BR_JUMP:
		case HWT_DEC_BR_CALL: {
			uint64_t next =
			    bb->branch == HWT_DEC_BR_NONE ? bb->fallthrough : bb->target;

			if (bb->branch == HWT_DEC_BR_CALL && !(bb->flags & HWT_DEC_BBF_PIC_CALL))
				rs_push(f, bb);
			f->open = NULL;
			err = add_item(f, bb, bb->ninsn, 0, next);
			if (err < 0)
				return err;
			f->ip = next;
			break;
		}
		default:
			/* Needs trace: the open block ends at its branch. */
			f->ip = bb->end_ip;
			return Q_BADQUERY;
		}
	}
}

/* The open block ran through its branch, which needs trace: take the
 * decision (pt_blk_proceed_with_trace). */
static int complete_with_trace(struct fast *f, struct hwt_dec_bb *bb)
{
	uint64_t next = 0;
	bool taken;
	int st, err;

	f->next_bb = NULL;
	switch (bb->branch) {
	case HWT_DEC_BR_COND:
		st = q_cond(f, &taken);
		if (st < 0)
			return st;
		next = taken ? bb->target : bb->fallthrough;
		break;
	case HWT_DEC_BR_RETURN:
		st = q_cond(f, &taken);
		if (st == Q_BADQUERY) {
			st = q_indirect(f, &next);
		} else if (st >= 0) {
			struct hwt_dec_bb *call = taken ? rs_pop(f) : NULL;

			if (!call)
				return DECLINE;
			next = call->fallthrough;
			f->next_bb = succ(f, call, 0, &err);
		}
		if (st < 0)
			return st;
		break;
	case HWT_DEC_BR_IND_CALL:
		rs_push(f, bb);
		/* fall through */
	default:
		st = q_indirect(f, &next);
		if (st < 0)
			return st;
		break;
	}
	if (st & ST_IPSUP)
		return DECLINE; /* -pte_noip */
	f->status = st;
	f->open = NULL;
	err = add_item(f, bb, bb->ninsn, cond_flags(bb, next), next);
	if (err < 0)
		return err;
	f->ip = next;
	return 0;
}

/* What run_logs() depends on, besides the block. */
static inline uint8_t run_logs_key(const struct seg *s)
{
	return (uint8_t)(s->log_all | s->profile << 1);
}

/* Whether seg_bb() logs a full block as an item (all of them with
 * log_all: a run then logs each of its blocks). */
static inline bool run_logs(const struct seg *s, const struct hwt_dec_bb *bb)
{
	return s->log_all || (bb->flags & HWT_DEC_BBF_LOG_STACK) ||
	       (s->profile && (bb->flags & HWT_DEC_BBF_LOG_TARGET));
}

/* Adds a run's count times each of its blocks to the worker's profile
 * counts (as seg_bb() would have, one run at a time). */
/* cnt runs of r straight into the profile (defer: segments accepted). */
static int run_keep(struct hwt_dec *dec, const struct run *r, uint64_t cnt)
{
	for (unsigned int i = 0; i < r->n; i++) {
		const struct hwt_dec_bb *bb = (const struct hwt_dec_bb *)(r->ent[i] & ~(run_ent)7);
		int err =
		    hwt_dec_flow_add_counts(dec->flow, bb->id, cnt, (r->ent[i] & 1) ? cnt : 0);

		if (err < 0)
			return err;
	}
	return 0;
}

/* Folds r's count into the segment's per-block counts, and its kept one
 * (defer: segments decoded for good before it) into the profile. */
static int run_fold(struct fast *f, struct run *r)
{
	struct seg *s = f->s;
	struct seg_work *w = s->work;
	uint64_t cnt = r->count, *kp = &f->sc->run_kept[r - f->sc->runs];

	r->count = 0;
	if (*kp) {
		uint64_t kept = *kp;

		*kp = 0;
		if (s->profile) {
			int err = run_keep(f->dec, r, kept);

			if (err < 0)
				return s->err = err;
		}
	}
	if (!cnt || !s->profile)
		return 0;
	for (unsigned int i = 0; i < r->n; i++) {
		const struct hwt_dec_bb *bb = (const struct hwt_dec_bb *)(r->ent[i] & ~(run_ent)7);
		uint32_t id = bb->id;
		struct seg_cnt *c;

		if (id >= w->size && seg_work_grow(w, id) < 0)
			return s->err = -ENOMEM;
		c = &w->c[id];
		c->count += cnt;
		c->taken += (r->ent[i] & 1) ? cnt : 0;
		if (!c->touched) {
			if (w->ntouched == w->cap_touched && seg_work_grow(w, UINT32_MAX) < 0)
				return s->err = -ENOMEM;
			c->touched = 1;
			w->touched[w->ntouched++] = id;
		}
	}
	return 0;
}

/* Folds every counted run (at the segment's end: its counts are then
 * committed or dropped with the rest, as for blocks counted one by
 * one). */
static int runs_fold_all(struct fast *f)
{
	struct fast_scratch *sc = f->sc;
	int err = 0;

	for (uint32_t i = 0; i < sc->ncounted; i++) {
		struct run *r = &sc->runs[sc->counted[i]];

		if (err == 0)
			err = run_fold(f, r);
		r->count = 0;
	}
	sc->ncounted = 0;
	return err;
}

/* The kept counts into the profile. */
static int runs_keep_all(struct hwt_dec *dec, struct fast_scratch *sc)
{
	int err = 0;

	for (uint32_t i = 0; i < sc->nkept; i++) {
		uint32_t k = sc->kept[i];

		if (sc->run_kept[k] && err == 0 && (dec->cfg.flags & HWT_DEC_F_PROFILE))
			err = run_keep(dec, &sc->runs[k], sc->run_kept[k]);
		sc->run_kept[k] = 0;
	}
	sc->nkept = 0;
	return err;
}

int hwt_dec_fast_runs_accept(struct hwt_dec *dec, void *scratch)
{
	struct fast_scratch *sc = scratch;

	if (!sc)
		return 0;
	for (uint32_t i = 0; i < sc->ncounted; i++) {
		struct run *r = &sc->runs[sc->counted[i]];

		if (!r->count)
			continue;
		if (!sc->run_kept[sc->counted[i]]) {
			if (sc->nkept == RUN_CACHE) {
				int err = runs_keep_all(dec, sc);

				if (err < 0)
					return err;
			}
			sc->kept[sc->nkept++] = sc->counted[i];
		}
		sc->run_kept[sc->counted[i]] += r->count;
		r->count = 0;
	}
	sc->ncounted = 0;
	return 0;
}

void hwt_dec_fast_runs_undo(void *scratch)
{
	struct fast_scratch *sc = scratch;

	if (!sc)
		return;
	for (uint32_t i = 0; i < sc->ncounted; i++)
		sc->runs[sc->counted[i]].count = 0;
	sc->ncounted = 0;
}

int hwt_dec_fast_runs_flush(struct hwt_dec *dec, void *scratch)
{
	struct fast_scratch *sc = scratch;

	if (!sc)
		return 0;
	/* A segment's not decoded for good (an error stopped it) go. */
	hwt_dec_fast_runs_undo(sc);
	return runs_keep_all(dec, sc);
}

/* Builds the run from bb with k bits. Returns false when something on
 * the way needs the slow path (no run then). A return takes a bit and
 * goes where a call of the run pushed (the slow path's return stack,
 * replayed); one to a frame older than the run ends it. */
static bool run_build(struct fast *f, struct hwt_dec_bb *bb, unsigned int k, unsigned int bits,
		      unsigned int rs_top, struct run *r)
{
	/* The run's own calls, for its returns (RUN_MAX > its entries). */
	struct hwt_dec_bb *calls[RUN_MAX];
	unsigned int used = 0, ncalls = 0;
	int depth = 0; /* of the return stack, from rs_top */
	uint32_t since = 0, insns_cut = 0;
	uint8_t n_cut = 0, nlog_cut = 0, nlog_dec = 0, pre_cut = 0, npre_cut = 0;
	bool cut = false;
	int err = 0;

	r->bb = bb;
	r->image_id = f->ctx.image->id;
	r->key = (uint16_t)(k << 8 | bits);
	r->logs = run_logs_key(f->s);
	r->n = 0;
	r->nlog = 0;
	r->npre = 0;
	r->insns = 0;
	for (;;) {
		struct hwt_dec_bb *nb, *from = bb;
		uint8_t stack = SEG_STACK_UNSAID;
		uint64_t next;
		run_ent fl = 0;
		int dir;

		if ((bb->flags & (HWT_DEC_BBF_ERROR | HWT_DEC_BBF_TRUNCATED)) || r->n == RUN_MAX)
			break;
		if (bb->branch == HWT_DEC_BR_COND) {
			if (used == k)
				break;
			dir = (bits >> (k - 1 - used)) & 1;
			used++;
			next = dir ? bb->target : bb->fallthrough;
			fl = next == bb->target ? 1 : 0;
		} else if (bb->branch == HWT_DEC_BR_RETURN) {
			/* Compressed: a taken bit (not taken, the slow
			 * path declines), to the newest call's return
			 * address and its fall-through block; past the
			 * run's own calls, the return stack's entry
			 * (checked at each replay: run_get()). */
			if (used == k || !((bits >> (k - 1 - used)) & 1))
				break;
			if (ncalls) {
				from = calls[--ncalls];
			} else {
				if (r->npre == RUN_PRE)
					break;
				from = f->retstack[(rs_top - 1 - r->npre) & 63];
				if (!from)
					break;
				r->pre[r->npre++] = from;
			}
			used++;
			dir = 0;
			next = from->fallthrough;
			stack = SEG_STACK_RET;
		} else if (bb->branch == HWT_DEC_BR_JUMP || bb->branch == HWT_DEC_BR_CALL ||
			   bb->branch == HWT_DEC_BR_NONE) {
			dir = bb->branch != HWT_DEC_BR_NONE;
			next = dir ? bb->target : bb->fallthrough;
			if (bb->branch == HWT_DEC_BR_CALL && !(bb->flags & HWT_DEC_BBF_PIC_CALL)) {
				calls[ncalls++] = bb;
				stack = SEG_STACK_CALL;
			}
		} else {
			break;
		}
		since += bb->ninsn;
		r->insns += bb->ninsn;
		if (run_logs(f->s, bb)) {
			struct seg_item *it = &r->log[r->nlog++];

			memset(it, 0, sizeof(*it));
			it->bb = bb;
			it->next_ip = next;
			it->ninsn = bb->ninsn;
			it->delta = since;
			it->kind = SEG_BB;
			it->flags = fl ? SEG_F_TAKEN : 0;
			it->stack = stack;
			since = 0;
		}
		r->ent[r->n++] = (run_ent)bb | fl;
		nb = succ(f, from, dir, &err);
		if (!nb) {
			if (bb->branch != HWT_DEC_BR_RETURN)
				return false;
			break;
		}
		if (bb->branch == HWT_DEC_BR_COND || bb->branch == HWT_DEC_BR_RETURN) {
			/* A run ends after a decision: the items before it
			 * get the position after it (snapshot()); blocks
			 * after the last decision wait for the next one,
			 * which may consume a packet (an indirect branch's
			 * TIP), so they are not part of the run. */
			r->end = nb;
			r->end_ip = next;
			r->used = (uint8_t)used;
			r->tail = since;
			r->nlog_pre = nlog_dec;
			nlog_dec = r->nlog;
			n_cut = r->n;
			nlog_cut = r->nlog;
			pre_cut = r->nlog_pre;
			insns_cut = r->insns;
			npre_cut = r->npre;
			cut = true;
			if (used == k)
				break;
		}
		bb = nb;
	}
	if (!cut)
		return false;
	r->n = n_cut;
	r->nlog = nlog_cut;
	r->nlog_pre = pre_cut;
	r->insns = insns_cut;
	r->npre = npre_cut;
	r->last_logged =
	    r->nlog && r->log[r->nlog - 1].bb == (void *)(r->ent[r->n - 1] & ~(run_ent)7);
	/* What the slow path's pushes and pops leave in the return
	 * stack's slots, the last write to each (calls and returns are
	 * items). */
	r->nslots = 0;
	for (unsigned int j = 0; j < r->nlog; j++) {
		const struct seg_item *it = &r->log[j];
		struct hwt_dec_bb *val;
		int off;

		if (it->stack == SEG_STACK_CALL) {
			off = depth++;
			val = it->bb;
		} else if (it->stack == SEG_STACK_RET) {
			off = --depth;
			val = NULL;
		} else {
			continue;
		}
		for (k = 0; k < r->nslots && r->slot_off[k] != off; k++)
			;
		if (k == r->nslots)
			r->slot_off[r->nslots++] = (int8_t)off;
		r->slot_val[k] = val;
	}
	r->rs_net = (int8_t)depth;
	return true;
}

/* run_get() that missed: builds the run for bb and the cached TNT bits
 * (k of them) in r, with the return stack's top at rs_top. A block and
 * bits with no run are cached too (used 0), as the lookup's answer. */
static __attribute__((noinline)) struct run *run_miss(struct fast *f, struct hwt_dec_bb *bb,
						      struct run *r, unsigned int k,
						      unsigned int bits, unsigned int rs_top)
{
	/* Evicted: its blocks' counts so far go to the profile. */
	if ((r->count || f->sc->run_kept[r - f->sc->runs]) && run_fold(f, r) < 0) {
		r->bb = NULL;
		return NULL;
	}
	if (!run_build(f, bb, k, bits, rs_top, r)) {
		r->used = 0;
		r->n = 0;
		r->nlog = 0;
		r->npre = 0;
		return NULL;
	}
	return r;
}

/* Whether the return stack (top at rs_top) has the entries r's returns
 * to older frames were built with. */
static inline __attribute__((always_inline)) bool
run_pre_ok(const struct fast *f, const struct run *r, unsigned int rs_top)
{
	for (unsigned int j = 0; j < r->npre; j++)
		if (f->retstack[(rs_top - 1 - j) & 63] != r->pre[j])
			return false;
	return true;
}

/* The slot of the run for bb and key (h: their hash): a free slot takes
 * the next entry (as many as slots). */
static inline __attribute__((always_inline)) struct run *run_slot(struct fast *f, uintptr_t h,
								  bool *found)
{
	struct fast_scratch *sc = f->sc;
	uint16_t *slot = &sc->run_slot[(h ^ (h >> 15)) & (RUN_CACHE - 1)];

	*found = *slot != 0;
	if (__builtin_expect(!*found, 0)) {
		/* A fresh entry (the scratch is not cleared): no counts. */
		sc->runs[sc->nruns].count = 0;
		sc->run_kept[sc->nruns] = 0;
		sc->nruns++;
		*slot = (uint16_t)sc->nruns;
	}
	return &sc->runs[*slot - 1];
}

static inline __attribute__((always_inline)) bool run_is(const struct fast *f, const struct run *r,
							 const struct hwt_dec_bb *bb, uint16_t key)
{
	return r->bb == bb && r->key == key && r->image_id == f->ctx.image->id &&
	       r->logs == run_logs_key(f->s);
}

/* run_get() where the run found returns to older frames than the return
 * stack has: the run for these frames, in a slot of its own (hashed with
 * the stack's top RUN_PRE entries; a function has many callers). */
static __attribute__((noinline)) struct run *run_get_pre(struct fast *f, struct hwt_dec_bb *bb,
							 uintptr_t h, unsigned int k,
							 unsigned int bits, unsigned int rs_top)
{
	uint16_t key = (uint16_t)(k << 8 | bits);
	struct run *r;
	bool found;

	for (unsigned int j = 0; j < RUN_PRE; j++)
		h += ((uintptr_t)f->retstack[(rs_top - 1 - j) & 63] >> 4) * (0xc2b2ae35u + 2 * j);
	r = run_slot(f, h, &found);
	if (found && run_is(f, r, bb, key) && run_pre_ok(f, r, rs_top))
		return r->used ? r : NULL;
	return run_miss(f, bb, r, k, bits, rs_top);
}

/* Finds or builds the run for bb and the cached TNT bits. Inline: it hits
 * (99.7% of the lookups of the call-heavy trace), and as a call its
 * prologue, epilogue and reloads were a third of its cost. */
static inline __attribute__((always_inline)) struct run *
run_get(struct fast *f, struct hwt_dec_bb *bb, unsigned int rs_top)
{
	unsigned int k = f->ntnt < RUN_BITS ? f->ntnt : RUN_BITS;
	unsigned int bits = (unsigned int)(f->tnt >> (f->ntnt - k)) & ((1u << k) - 1);
	uint16_t key = (uint16_t)(k << 8 | bits);
	uintptr_t h = ((uintptr_t)bb >> 4) * 0x9e3779b1u ^ key * 0x85ebca6bu;
	struct run *r;
	bool found;

	r = run_slot(f, h, &found);
	if (__builtin_expect(found && run_is(f, r, bb, key), 1)) {
		if (__builtin_expect(!r->npre, 1) || run_pre_ok(f, r, rs_top))
			return r->used ? r : NULL;
		return run_get_pre(f, bb, h, k, bits, rs_top);
	}
	return run_miss(f, bb, r, k, bits, rs_top);
}

/* What proceed_no_event() changes at each block, in locals (a struct
 * whose address never escapes: registers): the log's item count and
 * pending instructions, the block and instruction counts, the snapshot
 * mark and the return stack's top. Kept in struct seg and struct fast,
 * each item store would make the compiler load them again (an item may
 * alias them as far as it knows). lc_put() writes them back before
 * anything else reads them, lc_get() takes them again. */
struct logc {
	struct seg_item *items;
	size_t n, cap;	      /* s->nitems, s->cap_items */
	size_t n0;	      /* n when last taken or written back */
	size_t unposed;	      /* f->unposed */
	size_t last;	      /* s->last_logged */
	uint64_t insns, nbbs; /* not yet added to s's */
	uint32_t delta;	      /* s->delta */
	unsigned int rs_top;
	uint8_t logmask; /* HWT_DEC_BBF_* of the full blocks logged */
	uint8_t spec;	 /* f->spec */
	bool log_all, profile;
	bool all; /* proceed_no_event()'s lc_bb(all) */
};

static inline __attribute__((always_inline)) void lc_get(const struct fast *f, struct logc *lc)
{
	const struct seg *s = f->s;

	lc->items = s->items;
	lc->n = lc->n0 = s->nitems;
	lc->cap = s->cap_items;
	lc->unposed = f->unposed;
	lc->last = s->last_logged;
	lc->insns = lc->nbbs = 0;
	lc->delta = s->delta;
	lc->rs_top = f->rs_top;
	lc->log_all = s->log_all;
	lc->profile = s->profile;
	lc->logmask = (uint8_t)(HWT_DEC_BBF_LOG_STACK | (s->profile ? HWT_DEC_BBF_LOG_TARGET : 0));
	lc->spec = f->spec;
	lc->all = s->log_all && !s->profile;
}

static inline __attribute__((always_inline)) void lc_put(struct fast *f, struct logc *lc)
{
	struct seg *s = f->s;

	s->nitems = lc->n;
	f->unposed = lc->unposed;
	s->last_logged = lc->last;
	s->insns += lc->insns;
	/* Every block an item (all): the blocks are the new items. */
	s->nbbs += lc->nbbs + (lc->all ? lc->n - lc->n0 : 0);
	lc->insns = lc->nbbs = 0;
	lc->n0 = lc->n;
	s->delta = lc->delta;
	f->rs_top = lc->rs_top;
}

static inline __attribute__((always_inline)) void lc_rs_push(struct fast *f, struct logc *lc,
							     struct hwt_dec_bb *call)
{
	f->retstack[lc->rs_top++ & 63] = call;
}

static inline __attribute__((always_inline)) struct hwt_dec_bb *lc_rs_pop(struct fast *f,
									  struct logc *lc)
{
	struct hwt_dec_bb **e = &f->retstack[(lc->rs_top - 1) & 63], *call = *e;

	if (!call)
		return NULL;
	*e = NULL;
	lc->rs_top--;
	return call;
}

/* A new item at the log's end (SEG_BB, position to come) with delta
 * instructions since the previous one; NULL: ENOMEM (in s->err). */
static inline __attribute__((always_inline)) struct seg_item *
lc_append(struct fast *f, struct logc *lc, struct hwt_dec_bb *bb, uint32_t ninsn, uint8_t flags,
	  uint64_t next_ip, uint32_t delta, uint8_t stack)
{
	struct seg_item *it;

	if (__builtin_expect(lc->n == lc->cap, 0)) {
		struct seg *s = f->s;

		s->nitems = lc->n;
		if (!seg_add(s, SEG_BB))
			return NULL;
		lc->items = s->items;
		lc->cap = s->cap_items;
	}
	it = &lc->items[lc->n++];
	it->bb = bb;
	it->next_ip = next_ip;
	it->pos = f->pos; /* for now (lc_snapshot_to()) */
	it->ninsn = ninsn;
	it->delta = delta;
	it->kind = SEG_BB;
	it->flags = flags;
	it->stack = stack;
	it->reserved = 0;
	return it;
}

/* seg_bb() on the locals (add_item()), of a full block that does stack
 * (enum seg_stack) to a call stack; all: every block is logged and none
 * counted (log_all without the profile: the call tree's case). */
static inline __attribute__((always_inline)) int lc_bb(struct fast *f, struct logc *lc,
						       struct hwt_dec_bb *bb, uint32_t ninsn,
						       uint8_t flags, uint64_t next_ip,
						       uint8_t stack, const bool all)
{
	flags |= lc->spec;
	if (all) {
		lc->insns += ninsn;
		if (!lc_append(f, lc, bb, ninsn, flags, next_ip, lc->delta + ninsn, stack))
			return f->s->err;
		lc->delta = 0;
		lc->last = lc->n - 1;
		return 0;
	}
	lc->insns += ninsn;
	lc->nbbs++;
	lc->delta += ninsn;
	if (lc->profile && seg_bb_count(f->s, bb, ninsn, flags) < 0)
		return f->s->err;
	lc->last = SEG_NOT_LOGGED;
	if (!lc->log_all && ((flags & SEG_F_PARTIAL) || !(bb->flags & lc->logmask)))
		return 0;
	if (!lc_append(f, lc, bb, ninsn, flags, next_ip, lc->delta, stack))
		return f->s->err;
	lc->delta = 0;
	lc->last = lc->n - 1;
	return 0;
}

/* snapshot() on the locals, and of the items before index n only. An
 * item carries the position when it was logged (add_item(), lc_append()):
 * where the oldest waiting has the current one, so have the others (the
 * position only moves on), as after a decision on a cached TNT bit. */
static inline __attribute__((always_inline)) void lc_snapshot_to(const struct fast *f,
								 struct logc *lc, size_t n)
{
	uint64_t pos = f->pos;

	if (lc->unposed >= n)
		return;
	if (lc->items[lc->unposed].pos != pos) {
		for (size_t i = lc->unposed; i < n; i++)
			lc->items[i].pos = pos;
	}
	lc->unposed = n;
}

static inline __attribute__((always_inline)) void lc_snapshot(const struct fast *f, struct logc *lc)
{
	lc_snapshot_to(f, lc, lc->n);
}

/* Runs a run: what seg_bb() would do for each of its blocks, with only
 * the logged ones touched one by one. */
static inline __attribute__((always_inline)) int run_replay(struct fast *f, struct logc *lc,
							    struct run *r)
{
	unsigned int nlog = r->nlog;

	for (unsigned int j = 0; j < r->nslots; j++)
		f->retstack[(lc->rs_top + (unsigned int)(int)r->slot_off[j]) & 63] = r->slot_val[j];
	lc->rs_top += (unsigned int)(int)r->rs_net;
	if (nlog) {
		struct seg_item *it;
		uint64_t pos = f->pos;

		if (__builtin_expect(lc->cap - lc->n < nlog, 0)) {
			struct seg *s = f->s;

			s->nitems = lc->n;
			if (seg_reserve(s, nlog) < 0)
				return s->err;
			lc->items = s->items;
			lc->cap = s->cap_items;
		}
		it = &lc->items[lc->n];
		for (unsigned int j = 0; j < nlog; j++) {
			it[j] = r->log[j];
			it[j].pos = pos;
		}
		it[0].delta += lc->delta;
		lc->n += nlog;
		lc->delta = 0;
	}
	lc->delta += r->tail;
	lc->insns += r->insns;
	/* (With every block logged, the log's length counts them.) */
	if (!lc->all)
		lc->nbbs += r->n;
	/* The run's last block (its last decision's) is the one an event
	 * right after it holds (hold()): its item when logged. */
	lc->last = r->last_logged ? lc->n - 1 : SEG_NOT_LOGGED;
	if (lc->profile) {
		struct fast_scratch *sc = f->sc;

		if (!r->count) {
			/* A run evicted and built again is listed twice:
			 * the list can fill up; folding is always right. */
			if (sc->ncounted == RUN_CACHE && runs_fold_all(f) < 0)
				return f->s->err;
			sc->counted[sc->ncounted++] = (uint32_t)(r - sc->runs);
		}
		r->count++;
	}
	return 0;
}

/* pt_blk_proceed_no_event(), repeated while nothing happens between
 * blocks: libipt ends a block at each decision and, with no event pending
 * and not at the end, the next pt_blk_next() just goes on, so we do too
 * and give each decision's items the position after it. The hot path:
 * the log's state in locals (struct logc), written back on the way out
 * and around complete_with_trace(); all: lc_bb()'s (a copy of its own,
 * with fewer checks per block and registers to spare). */
static inline __attribute__((always_inline)) int proceed_no_event_as(struct fast *f, const bool all)
{
	struct hwt_dec_bb *bb;
	unsigned int direct = 0; /* direct jumps and calls in a row */
	struct logc lc;
	struct hwt_dec_bb *fail_bb;
	bool fail_taken;
	int err = 0, ret;
	int fail_err = 0;
	uint64_t fail_at = 0;

/* Leaves with x, the locals written back. */
#define PNE_RET(x)                                                                                 \
	do {                                                                                       \
		ret = (x);                                                                         \
		goto out;                                                                          \
	} while (0)
/* bb_at() or succ() failed (err) where the flow goes to ip: block_fails()
 * once the locals are written back. */
#define PNE_FAIL(ip, held, tk)                                                                     \
	do {                                                                                       \
		f->fail_ip = (ip);                                                                 \
		fail_bb = (held);                                                                  \
		fail_taken = (tk);                                                                 \
		goto fail;                                                                         \
	} while (0)
/* libipt's query for bb's branch fails with pterr (at: where its block
 * began): branch_fails() once the locals are written back. */
#define PNE_BRFAILS(bb_, pterr)                                                                    \
	do {                                                                                       \
		fail_bb = (bb_);                                                                   \
		fail_err = (pterr);                                                                \
		PNE_RET(Q_BRFAILS);                                                                \
	} while (0)

	lc_get(f, &lc);
	if (f->open) {
		f->held_bb = NULL;
		bb = f->open;
		f->open = NULL;
		/* Continue a block an event stopped in: it is one item. */
		if (f->ip != hwt_dec_bb_insn_ip(bb, f->open_k))
			PNE_RET(DECLINE);
	} else {
		bb = bb_at(f, f->ip, &err);
		if (!bb)
			PNE_FAIL(f->ip, NULL, false);
		/* A block begins: the held decision is resolved. */
		f->held_bb = NULL;
	}
	for (;;) {
		struct hwt_dec_bb *nb;
		uint64_t next;
		bool taken;
		int st;

		if (bb->flags & (HWT_DEC_BBF_ERROR | HWT_DEC_BBF_TRUNCATED))
			PNE_RET(DECLINE);
		/* No bit cached and a TNT packet next: a return reads its
		 * bits right away, as q_cond() would, for a run from the
		 * return (what follows a TIP's call; conditional branches
		 * gain nothing from it in the filtered shapes). A direct
		 * call or jump or a block with no branch (a TIP's target,
		 * the block after a run that used up a packet) reads them
		 * first when a run from it with those bits exists (looked
		 * up with them peeked): the blocks one by one would read
		 * nothing before its first decision, which reads them. */
		if (!f->ntnt && !lc.spec && ((1u << bb->branch) & RUN_STARTS) &&
		    bb->branch != HWT_DEC_BR_COND &&
		    (f->np->type == HWT_PKT_TNT_8 || f->np->type == HWT_PKT_TNT_64)) {
			bool now = bb->branch == HWT_DEC_BR_RETURN;

			if (!now && f->np->aux && direct < HWT_DEC_MAX_DIRECT_RUN - RUN_MAX) {
				uint64_t tnt = f->tnt;

				f->tnt = f->np->payload;
				f->ntnt = f->np->aux;
				now = run_get(f, bb, lc.rs_top) != NULL;
				f->tnt = tnt;
				f->ntnt = 0;
			}
			if (now) {
				err = tnt_fetch(f);
				/* A return's query read them: it fails where
				 * libipt's does. */
				if (err == DECLINE && bb->branch == HWT_DEC_BR_RETURN &&
				    tnt_read_fails(f, &fail_at)) {
					PNE_BRFAILS(bb, -pte_bad_opc);
				}
				if (err < 0)
					PNE_RET(err == Q_EOS || err == Q_BADQUERY ? DECLINE : err);
			}
		}
		/* A run from here with the cached TNT bits (a run has no
		 * more direct branches in a row than RUN_MAX: the slow
		 * path's endless loop check would not have fired). */
		if (f->ntnt && !lc.spec && ((1u << bb->branch) & RUN_STARTS) &&
		    direct < HWT_DEC_MAX_DIRECT_RUN - RUN_MAX) {
			struct run *r = run_get(f, bb, lc.rs_top);

			if (r) {
				size_t base = lc.n;

				direct = 0;
				err = run_replay(f, &lc, r);
				if (err < 0)
					PNE_RET(err);
				f->ntnt -= r->used;
				f->ip = r->end_ip;
				bb = r->end;
				st = f->ntnt ? 0 : status_flags(f);
				if (st < 0)
					PNE_RET(st);
				f->status = st;
				if (st) {
					/* Only the items after the decision
					 * before the last wait (bit by bit,
					 * that decision took a snapshot). */
					if (r->used >= 2)
						lc_snapshot_to(f, &lc, base + r->nlog_pre);
					hold(f,
					     (struct hwt_dec_bb *)(r->ent[r->n - 1] & ~(run_ent)7),
					     lc.last, r->ent[r->n - 1] & 1);
					f->decided = true;
					PNE_RET(0);
				}
				lc_snapshot(f, &lc);
				continue;
			}
		}
		/* Calls and returns first, without the switch's table. */
		if (bb->branch == HWT_DEC_BR_CALL)
			goto case_call;
		if (bb->branch == HWT_DEC_BR_RETURN)
			goto case_ret;
		switch (bb->branch) {
		case HWT_DEC_BR_COND:
			direct = 0;
			st = next_bit(f, &taken);
			if (st == DECLINE && tnt_read_fails(f, &fail_at)) {
				PNE_BRFAILS(bb, -pte_bad_opc);
			}
			if (st < 0)
				PNE_RET(st == Q_BADQUERY || st == Q_EOS ? DECLINE : st);
			f->status = st;
			if (taken) {
				next = bb->target;
				err = lc_bb(f, &lc, bb, bb->ninsn, SEG_F_TAKEN, next,
					    SEG_STACK_NONE, all);
			} else {
				next = bb->fallthrough;
				err = lc_bb(f, &lc, bb, bb->ninsn,
					    next == bb->target ? SEG_F_TAKEN : 0, next,
					    SEG_STACK_NONE, all);
			}
			if (err < 0)
				PNE_RET(err);
			f->ip = next;
			if (st) {
				hold(f, bb, lc.last, next == bb->target);
				f->decided = true;
				PNE_RET(0);
			}
			lc_snapshot(f, &lc);
			nb = succ(f, bb, taken, &err);
			if (!nb)
				PNE_FAIL(next, bb, next == bb->target);
			bb = nb;
			continue;
		case HWT_DEC_BR_CALL:
		case_call:
			/* (The case below, for calls alone: the hot one.) */
			if (++direct > HWT_DEC_MAX_DIRECT_RUN)
				PNE_RET(DECLINE);
			next = bb->target;
			if (!(bb->flags & HWT_DEC_BBF_PIC_CALL))
				lc_rs_push(f, &lc, bb);
			err = lc_bb(f, &lc, bb, bb->ninsn, 0, next,
				    (bb->flags & HWT_DEC_BBF_PIC_CALL) ? SEG_STACK_NONE
								       : SEG_STACK_CALL,
				    all);
			if (err < 0)
				PNE_RET(err);
			nb = succ(f, bb, 1, &err);
			if (!nb)
				PNE_FAIL(next, NULL, false);
			f->ip = next;
			bb = nb;
			continue;
		case HWT_DEC_BR_JUMP:
		case HWT_DEC_BR_NONE:
			/* An endless loop: libipt's engine reports it. */
			if (bb->branch != HWT_DEC_BR_NONE && ++direct > HWT_DEC_MAX_DIRECT_RUN)
				PNE_RET(DECLINE);
			next = bb->branch == HWT_DEC_BR_NONE ? bb->fallthrough : bb->target;
			err = lc_bb(f, &lc, bb, bb->ninsn, 0, next, SEG_STACK_NONE, all);
			if (err < 0)
				PNE_RET(err);
			nb = succ(f, bb, bb->branch != HWT_DEC_BR_NONE, &err);
			if (!nb)
				PNE_FAIL(next, NULL, false);
			f->ip = next;
			bb = nb;
			continue;
		case HWT_DEC_BR_RETURN:
		case HWT_DEC_BR_IND_JUMP:
		case HWT_DEC_BR_IND_CALL:
		case_ret:
			/* The common cases of complete_with_trace(), inline:
			 * a compressed return taking a cached TNT bit or the
			 * next TNT packet's, and a TIP right at hand for an
			 * indirect branch. */
			if (bb->branch == HWT_DEC_BR_RETURN &&
			    (f->ntnt || f->np->type == HWT_PKT_TNT_8 ||
			     f->np->type == HWT_PKT_TNT_64)) {
				struct hwt_dec_bb *call;

				direct = 0;
				if (f->ntnt) {
					st = next_bit(f, &taken);
				} else {
					st = q_cond(f, &taken);
					if (st == DECLINE && tnt_read_fails(f, &fail_at)) {
						PNE_BRFAILS(bb, -pte_bad_opc);
					}
					if (st < 0)
						st = st == Q_EOS || st == Q_BADQUERY ? DECLINE : st;
					else if (st & ST_IPSUP)
						st = DECLINE; /* -pte_noip */
				}
				if (st < 0)
					PNE_RET(st);
				if (!taken || !(call = lc_rs_pop(f, &lc))) {
					/* pt_blk_proceed_with_trace(): libipt
					 * fails at the return. */
					fail_at = ret_block_at(f);
					if (fail_at == UINT64_MAX)
						PNE_RET(DECLINE);
					PNE_BRFAILS(bb,
						    taken ? -pte_retstack_empty : -pte_bad_retcomp);
				}
				f->status = st;
				next = call->fallthrough;
				err = lc_bb(f, &lc, bb, bb->ninsn, 0, next, SEG_STACK_RET, all);
				if (err < 0)
					PNE_RET(err);
				f->ip = next;
				if (st) {
					hold(f, bb, lc.last, false);
					f->decided = true;
					PNE_RET(0);
				}
				lc_snapshot(f, &lc);
				nb = succ(f, call, 0, &err);
				if (!nb)
					nb = bb_at(f, next, &err);
				if (!nb)
					PNE_FAIL(next, bb, false);
				bb = nb;
				continue;
			}
			if (!f->ntnt && f->np->type == HWT_PKT_TIP && !f->tipq.n) {
				direct = 0;
				if (bb->branch == HWT_DEC_BR_IND_CALL)
					lc_rs_push(f, &lc, bb);
				err = update_ip(f);
				if (err < 0)
					PNE_RET(err);
				if (!query_ip(f, &next))
					PNE_RET(DECLINE); /* -pte_noip */
				fail_at = f->pos;
				advance(f);
				err = ra_tolerant(f);
				if (err < 0) {
					if (err != DECLINE || !bad_opcode_next(f))
						PNE_RET(DECLINE);
					/* The query's read ahead fails. */
					PNE_BRFAILS(bb, -pte_bad_opc);
				}
				st = status_flags(f);
				if (st < 0)
					PNE_RET(st);
				f->status = st;
				err = lc_bb(f, &lc, bb, bb->ninsn, 0, next,
					    bb->branch == HWT_DEC_BR_IND_CALL ? SEG_STACK_CALL
					    : bb->branch == HWT_DEC_BR_RETURN ? SEG_STACK_RET
									      : SEG_STACK_NONE,
					    all);
				if (err < 0)
					PNE_RET(err);
				f->ip = next;
				if (st) {
					hold(f, bb, lc.last, false);
					f->decided = true;
					PNE_RET(0);
				}
				lc_snapshot(f, &lc);
				nb = bb_at(f, next, &err);
				if (!nb)
					PNE_FAIL(next, bb, false);
				bb = nb;
				continue;
			}
			/* fall through */
		default:
			direct = 0;
			f->open = bb;
			f->open_k = bb->ninsn;
			lc_put(f, &lc);
			err = complete_with_trace(f, bb);
			lc_get(f, &lc);
			if (err < 0)
				PNE_RET(err == Q_EOS || err == Q_BADQUERY ? DECLINE : err);
			if (f->status) {
				hold(f, bb, lc.last, cond_flags(bb, f->ip) != 0);
				f->decided = true;
				PNE_RET(0);
			}
			lc_snapshot(f, &lc);
			nb = f->next_bb ? f->next_bb : bb_at(f, f->ip, &err);
			if (!nb)
				PNE_FAIL(f->ip, bb, cond_flags(bb, f->ip) != 0);
			bb = nb;
			continue;
		}
	}
fail:
	/* The decision before, libipt's pending one (none after a direct
	 * branch or at the start). */
	if (fail_bb)
		hold(f, fail_bb, lc.last, fail_taken);
	ret = err == DECLINE ? Q_NOBLOCK : err;
#undef PNE_BRFAILS
#undef PNE_FAIL
#undef PNE_RET
out:
	lc_put(f, &lc);
	if (ret == Q_BRFAILS)
		return branch_fails(f, fail_bb, fail_err, fail_at);
	return ret == Q_NOBLOCK ? block_fails(f, f->fail_ip, DECLINE) : ret;
}

static __attribute__((noinline)) int proceed_no_event_all(struct fast *f)
{
	return proceed_no_event_as(f, true);
}

static __attribute__((noinline)) int proceed_no_event_some(struct fast *f)
{
	return proceed_no_event_as(f, false);
}

static inline int proceed_no_event(struct fast *f)
{
	if (f->s->log_all && !f->s->profile)
		return proceed_no_event_all(f);
	return proceed_no_event_some(f);
}

/* Whether libipt's SKD022 workaround turns an asynchronous disable at ip
 * into a synchronous one (pt_blk_handle_erratum_skd022): when the
 * instruction there decodes and is VMLAUNCH or VMRESUME (0F 01 C2/C3, the
 * last bytes of an instruction of the far return class). Where nothing is
 * mapped or the bytes are no instruction, the workaround does not apply. */
static bool skd022_may_apply(const struct fast *f, uint64_t ip)
{
	struct hwt_dec_insn in;

	if (!f->ctx.image ||
	    hwt_dec_insn_decode(f->ctx.image, ip, (enum hwt_dec_mode)f->mode, &in) < 0 ||
	    in.branch != HWT_DEC_BR_FAR_RETURN || in.size < 3)
		return false;
	return in.raw[in.size - 3] == 0x0f && in.raw[in.size - 2] == 0x01 &&
	       (in.raw[in.size - 1] == 0xc2 || in.raw[in.size - 1] == 0xc3);
}

/* pt_blk_proceed_trailing_event() once f->ev is fetched. */
static inline int trailing_fetched(struct fast *f)
{
	switch (f->ev.type) {
	case HWT_DEC_EV_DISABLED:
		break;
	case HWT_DEC_EV_ENABLED:
	case HWT_DEC_EV_CBR:
		return blk_status(f, ST_EVENT);
	case HWT_DEC_EV_ASYNC_DISABLED:
		if (f->ip != f->ev.at)
			break;
		if (f->dec->ptcfg.errata.skd022 && skd022_may_apply(f, f->ev.at))
			return DECLINE;
		return blk_status(f, ST_EVENT);
	case HWT_DEC_EV_ASYNC_BRANCH:
		if (f->ip != f->ev.at)
			break;
		return blk_status(f, ST_EVENT);
	case HWT_DEC_EV_EXEC_MODE:
	case HWT_DEC_EV_ASYNC_PAGING:
	case HWT_DEC_EV_ASYNC_VMCS:
		if (!f->ev.suppressed && f->ip != f->ev.ip)
			break;
		return blk_status(f, ST_EVENT);
	case HWT_DEC_EV_PAGING:
	case HWT_DEC_EV_VMCS:
		/* Applied at once while tracing is off; else they bind to
		 * the instruction that changes CR3 or the VMCS. */
		if (f->enabled)
			break;
		return blk_status(f, ST_EVENT);
	case HWT_DEC_EV_TSX:
		if (f->ev.suppressed)
			return blk_status(f, ST_EVENT);
		/* BDM64 may move the decoder to the abort's IP. */
		if (f->dec->ptcfg.errata.bdm64 && (f->ev.aux & TSX_ABORT))
			return DECLINE;
		if (f->ip != f->ev.ip)
			break;
		return blk_status(f, ST_EVENT);
	case HWT_DEC_EV_EXSTOP:
	case HWT_DEC_EV_MWAIT:
		if (!f->ev.suppressed && f->enabled && f->ip != f->ev.ip)
			break;
		return blk_status(f, ST_EVENT);
	case HWT_DEC_EV_OVERFLOW:
	case HWT_DEC_EV_STOP:
	case HWT_DEC_EV_PWRE:
	case HWT_DEC_EV_PWRX:
		return blk_status(f, ST_EVENT);
	default:
		return DECLINE;
	}
	return blk_status(f, 0);
}

/* pt_blk_proceed_trailing_event(). */
static int trailing_event(struct fast *f)
{
	int st = fetch_event(f);

	if (st <= 0)
		return st < 0 ? st : blk_status(f, 0);
	return trailing_fetched(f);
}

/* proceed_to_ip() came to a branch that needs trace before the event's
 * IP, where libipt's pt_blk_proceed_to_ip() fails with "bad query" (no
 * query: its block decoder cannot go on without one): its partial block
 * ends with that branch, whose outcome is not known, then the gap
 * (libipt_fails()). */
static int walk_fails(struct fast *f, struct hwt_dec_bb *last)
{
	int err;

	f->open = NULL;
	err = add_item(f, last, last->ninsn, 0, 0);
	return err < 0 ? err : libipt_fails(f, -pte_bad_query, f->ip);
}

/* pt_blk_proceed_event(). */
static int proceed_event(struct fast *f)
{
	struct fev *ev = &f->ev;
	struct hwt_dec_bb *last;
	int st;

	switch (ev->type) {
	case HWT_DEC_EV_ENABLED:
	case HWT_DEC_EV_CBR:
		break;
	case HWT_DEC_EV_DISABLED:
		if (ev->suppressed) {
			/* Binds to the next branch that needs trace (a
			 * CR3 write would bind earlier: kernel code, not
			 * handled here). */
			st = proceed_to_ip(f, UINT64_MAX, &last);
		} else {
			st = proceed_to_ip(f, ev->ip, &last);
		}
		if (st == Q_BADQUERY) {
			/* Resume address: after a call, else unknown. */
			if (!last)
				return DECLINE;
			if (last->branch == HWT_DEC_BR_IND_CALL ||
			    last->branch == HWT_DEC_BR_FAR_CALL) {
				if (last->branch == HWT_DEC_BR_IND_CALL)
					rs_push(f, last);
				f->ip = last->fallthrough;
			} else {
				f->ip = 0;
			}
			/* The branch ran; its outcome is the disable. */
			f->open = NULL;
			{
				uint64_t next = ev->suppressed ? 0 : ev->ip;

				st = add_item(f, last, last->ninsn, cond_flags(last, next), next);
			}
			if (st < 0)
				return st;
		} else if (st < 0) {
			return st;
		}
		break;
	case HWT_DEC_EV_ASYNC_DISABLED:
		st = proceed_to_ip(f, ev->at, &last);
		if (st == Q_BADQUERY)
			return walk_fails(f, last);
		if (st <= 0)
			return st;
		if (f->dec->ptcfg.errata.skd022 && skd022_may_apply(f, ev->at))
			return DECLINE;
		break;
	case HWT_DEC_EV_ASYNC_BRANCH:
		st = proceed_to_ip(f, ev->at, &last);
		if (st == Q_BADQUERY)
			return walk_fails(f, last);
		if (st <= 0)
			return st;
		break;
	case HWT_DEC_EV_EXEC_MODE:
	case HWT_DEC_EV_ASYNC_PAGING:
	case HWT_DEC_EV_ASYNC_VMCS:
		/* pt_blk_proceed_to_ip_with_trace(). */
		if (ev->suppressed)
			break;
		/* Tracing off and elsewhere: libipt walks the code to the
		 * event's IP even so. */
		if (!f->enabled && f->ip != ev->ip)
			return DECLINE;
		st = proceed_to_ip(f, ev->ip, &last);
		if (st == Q_BADQUERY) {
			st = complete_with_trace(f, last);
			if (st < 0)
				return st == Q_EOS || st == Q_BADQUERY ? DECLINE : st;
			hold(f, last, f->s->last_logged, cond_flags(last, f->ip) != 0);
			f->decided = true;
			if (f->ip != ev->ip)
				return 0; /* not reached yet: block ends */
		} else if (st < 0) {
			return st;
		}
		break;
	case HWT_DEC_EV_PAGING:
	case HWT_DEC_EV_VMCS:
		/* Bound to a MOV CR3 or VMPTRLD: kernel code, libipt's. */
		if (f->enabled)
			return DECLINE;
		break;
	case HWT_DEC_EV_TSX:
	case HWT_DEC_EV_EXSTOP:
	case HWT_DEC_EV_MWAIT:
		/* pt_blk_proceed_to_ip(), without trace: a branch that
		 * needs it fails with "bad query". A TSX event walks there
		 * with tracing off as well (a PSB+ after a disable
		 * elsewhere: the joins of traces run together). */
		if (ev->suppressed || (ev->type != HWT_DEC_EV_TSX && !f->enabled))
			break;
		st = proceed_to_ip(f, ev->ip, &last);
		if (st == Q_BADQUERY)
			return walk_fails(f, last);
		/* Reached with tracing off: not mirrored. */
		if (st <= 0 || !f->enabled)
			return st < 0 ? st : DECLINE;
		break;
	case HWT_DEC_EV_OVERFLOW:
	case HWT_DEC_EV_STOP:
	case HWT_DEC_EV_PWRE:
	case HWT_DEC_EV_PWRX:
		break;
	default:
		return DECLINE;
	}
	return blk_status(f, ST_EVENT);
}

/* pt_blk_next(). */
static int blk_next(struct fast *f)
{
	int st = fetch_event(f);

	if (st != 0) {
		const struct hwt_dec_bb *open = f->open;
		uint64_t ip = f->ip, insns = f->s->insns;
		uint32_t k = f->open_k;

		if (st < 0)
			return st;
		/* A disable without IP: libipt stops at a CR3 write on the
		 * way (pt_blk_proceed_to_disabled()), which proceed_to_ip()
		 * does not look for. */
		const bool to_ip = !(f->ev.type == HWT_DEC_EV_DISABLED && f->ev.suppressed);

		f->nomap = false;
		st = proceed_event(f);
		/* libipt's block: where it began, when it is empty (no
		 * instruction ran to get to the event). */
		f->blk_ip = ip;
		f->blk_ok = f->s->insns == insns && f->open == open && f->open_k == k;
		/* On the way to the event's IP nothing was mapped
		 * (pt_blk_proceed_to_ip() fails with -pte_nomap). */
		return to_ip ? block_fails(f, f->ip, st) : st;
	}
	if (!f->enabled)
		return (f->status & ST_EOS) ? Q_EOS : DECLINE;
	st = proceed_no_event(f);
	if (st < 0)
		return st;
	/* libipt's block ended at the decision. */
	f->blk_ok = f->held_bb != NULL;
	f->blk_ip = f->held_bb ? f->held_bb->end_ip : 0;
	return trailing_event(f);
}

/* ------------------------------------------------------------------------ */
/* Driver: eng_ipt.c's loop, writing the log directly                        */

/* Asks the hook (at the segment's start, and after each event e with its
 * log flags, as eng_ipt.c's conv_context does). */
static int context(struct fast *f, uint64_t pos, bool first, const struct hwt_dec_event *e,
		   uint8_t flags)
{
	struct hwt_dec_context ctx;
	struct hwt_dec_context_query q = {0, false, NULL, false, false};
	int err;

	if (!first && !f->dec->cfg.context)
		return 0;
	q.has_tsc = seg_time_at(f->s, pos, &f->tcur, &q.tsc);
	q.event = e;
	q.ip_suppressed = flags & SEG_F_IP_SUPPRESSED;
	q.status_update = flags & SEG_F_STATUS;
	err = hwt_dec_context_at(f->dec, &q, &ctx);
	if (err < 0)
		return err;
	if (f->hooked)
		f->ctx_stale = ctx.note || !hwt_dec_context_same(&ctx, &f->span);
	if (!first && !ctx.note && hwt_dec_context_same(&ctx, &f->ctx))
		return 0;
	f->ctx = ctx;
	f->image_id = ctx.image ? ctx.image->id : 0;
	return seg_add_ctx(f->s, &ctx, pos);
}

/* Events that bind to a place in the flow end the open block there
 * (eng_ipt.c's event_breaks_flow). */
static bool breaks_flow(uint8_t type)
{
	return type != HWT_DEC_EV_CBR && type != HWT_DEC_EV_PWRE && type != HWT_DEC_EV_PWRX;
}

/* The event record, as hwt_dec_event_from_pt() makes it from libipt's. */
static inline void fev_record(const struct fev *ev, struct hwt_dec_event *e)
{
	memset(e, 0, sizeof(*e));
	e->type = ev->type;
	e->ip = ev->ip;
	e->at = ev->at;
	e->mode = ev->mode;
	switch (ev->type) {
	case HWT_DEC_EV_ENABLED:
		e->resumed = ev->payload ? 1 : 0;
		break;
	case HWT_DEC_EV_CBR:
	case HWT_DEC_EV_VMCS:
	case HWT_DEC_EV_ASYNC_VMCS:
		e->payload = ev->payload;
		break;
	case HWT_DEC_EV_PAGING:
	case HWT_DEC_EV_ASYNC_PAGING:
		e->payload = ev->payload;
		e->non_root = ev->aux;
		break;
	case HWT_DEC_EV_TSX:
		e->tsx = (ev->aux & TSX_ABORT) ? 2 : (ev->aux & TSX_SPEC) ? 1 : 0;
		break;
	case HWT_DEC_EV_MWAIT:
		e->mwait_hints = (uint32_t)ev->payload;
		e->mwait_ext = (uint32_t)(ev->payload >> 32);
		break;
	case HWT_DEC_EV_PWRE:
		e->pwr_state = (uint8_t)((ev->payload & 0xf000) >> 12);
		e->pwr_sub_state = (uint8_t)((ev->payload & 0xf00) >> 8);
		e->pwr_hw = (ev->payload & 0x8) ? 1 : 0;
		break;
	case HWT_DEC_EV_PWRX:
		e->pwrx_last = (uint8_t)((ev->payload & 0xf0) >> 4);
		e->pwrx_deepest = (uint8_t)(ev->payload & 0xf);
		e->pwrx_why =
		    (uint8_t)(((ev->payload & 0x100) ? 1 : 0) | ((ev->payload & 0x400) ? 2 : 0) |
			      ((ev->payload & 0x800) ? 4 : 0));
		break;
	default:
		break;
	}
}

/* After deliver_event() counted a PSB+ status update (f->s->count_status):
 * delivers the fetched ones that follow at the same PSBEND, counted, as
 * deliver_event() would one by one, as long as fetching the next takes no
 * read-ahead (another stays queued after it: q_event() pops it, finds
 * that one at the PSBEND and says ST_EVENT) and the delivery does not
 * decline. What is left (the PSB+'s last update, an update for an IP not
 * reached yet, anything else) deliver_event() takes. Returns its status. */
static int psb_more(struct fast *f, int st)
{
	struct seg *s = f->s;

	while ((st & ST_EVENT) && f->process_event && f->ev.status && !f->ntnt &&
	       (f->status & ST_EVENT) && f->np->type == HWT_PKT_PSBEND &&
	       f->psbq_head + 1 < f->npsbq && f->pos < s->end && !s->delta &&
	       f->unposed == s->nitems) {
		const struct fev *ev = &f->ev;
		uint8_t spec = f->spec;

		/* deliver_event()'s checks and changes. */
		switch (ev->type) {
		case HWT_DEC_EV_EXEC_MODE:
			if ((!ev->suppressed && f->ip != ev->ip) ||
			    (f->enabled && f->mode != HWT_DEC_MODE_UNKNOWN && f->mode != ev->mode))
				return st;
			f->mode = ev->mode;
			break;
		case HWT_DEC_EV_ASYNC_PAGING:
		case HWT_DEC_EV_ASYNC_VMCS:
			if (!ev->suppressed && f->ip != ev->ip)
				return st;
			break;
		case HWT_DEC_EV_TSX:
			if (!ev->suppressed && f->ip != ev->ip)
				return st;
			spec = (ev->aux & TSX_SPEC) ? SEG_F_SPECULATIVE : 0;
			break;
		case HWT_DEC_EV_CBR:
			break;
		default:
			return st;
		}
		/* trailing_event(): q_event() pops the next at the PSBEND,
		 * with more queued after it (read_ahead() stops there,
		 * status_flags() says ST_EVENT). */
		f->process_event = false;
		f->ev = f->psbq[f->psbq_head++];
		if (f->ev.type != HWT_DEC_EV_CBR)
			event_ip(f, &f->ev);
		f->process_event = true;
		f->status = ST_EVENT;
		st = trailing_fetched(f);
		if (st < 0)
			return st;
		f->spec = spec;
		/* Counted, as deliver_event() does. */
		s->nstatus++;
	}
	return st;
}

/* The log of an enable or a disable (fev_record() and seg_add_event()). */
static inline int log_onoff(struct fast *f, const struct fev *ev, uint8_t flags)
{
	return seg_add_onoff(f->s, ev->type, ev->ip, ev->at, ev->mode,
			     ev->type == HWT_DEC_EV_ENABLED && ev->payload, flags, f->pos);
}

/* Whether deliver_crossing() takes f->ev: a disable with its IP or
 * without, while tracing is on, an enable with an IP next (TIP.PGE,
 * nothing queued: an address filter's crossing, a system call's return),
 * no context hook. */
static inline bool crossing_ok(const struct fast *f)
{
	return f->ev.type == HWT_DEC_EV_DISABLED && f->process_event && !f->ev.status &&
	       f->enabled && (f->status & ST_EVENT) && f->np->type == HWT_PKT_TIP_PGE && !f->ntnt &&
	       !f->tipq.n && !f->fupq.n && !f->consume_packet && !f->dec->cfg.context &&
	       ipc_updates(f->np->ipc);
}

/* deliver_event() of the disable f->ev while crossing_ok(), then of the
 * enable it fetches: the same changes in the same order, without the
 * generic dispatch (q_event() of the TIP.PGE is decode_event()'s; the
 * main loop's psb_run() between them does nothing for a disable or an
 * enable). Returns what the second deliver_event() would, or the first's
 * error. */
static int deliver_crossing(struct fast *f)
{
	const struct fev off = f->ev;
	struct fev on;
	uint8_t flags = off.suppressed ? SEG_F_IP_SUPPRESSED : 0;
	int st, err;

	/* deliver_event(): the disable. */
	f->enabled = false;
	f->held_pending = false;
	f->process_event = false;
	/* trailing_event() -> fetch_event() -> q_event(): the TIP.PGE. */
	st = q_event(f, &f->ev);
	if (st < 0)
		return st;
	f->process_event = true;
	f->status = st;
	/* trailing_fetched() of an enable: blk_status(f, ST_EVENT), tracing
	 * off and an event to process. */
	err = close_open(f);
	if (err < 0)
		return err;
	snapshot(f);
	err = log_onoff(f, &off, flags);
	if (err < 0)
		return err;
	f->unposed = f->s->nitems;

	/* deliver_event(): the enable (tracing is off; the next fetch may
	 * replace f->ev). */
	on = f->ev;
	on.payload = on.ip == f->ip; /* resumed */
	f->ip = on.ip;
	f->enabled = true;
	f->process_event = false;
	st = trailing_event(f);
	if (st < 0)
		return st;
	err = close_open(f);
	if (err < 0)
		return err;
	snapshot(f);
	err = log_onoff(f, &on, 0);
	if (err < 0)
		return err;
	f->unposed = f->s->nitems;
	return st;
}

/* pt_blk_event() and the conversion of the event. */
static int deliver_event(struct fast *f)
{
	struct fev ev;
	struct hwt_dec_event e;
	uint8_t flags = 0, spec;
	int st, err;

	if (crossing_ok(f))
		return deliver_crossing(f);
	ev = f->ev;
	spec = f->spec;
	if (!f->process_event)
		return DECLINE;
	switch (ev.type) {
	case HWT_DEC_EV_ENABLED:
		if (f->enabled) {
			/* libipt: unexpected packet context (a status update
			 * or an enable without IP would fail otherwise). */
			f->s->decline_err = true;
			if (ev.status || ev.suppressed || !f->blk_ok)
				return DECLINE;
			return libipt_fails(f, -pte_bad_context, f->blk_ip);
		}
		if (ev.ip == f->ip)
			ev.payload = 1; /* resumed */
		f->ip = ev.ip;
		f->enabled = true;
		break;
	case HWT_DEC_EV_ASYNC_DISABLED:
		if (f->ip != ev.at)
			return DECLINE;
		/* fall through */
	case HWT_DEC_EV_DISABLED:
		if (!f->enabled)
			return DECLINE;
		f->enabled = false;
		break;
	case HWT_DEC_EV_ASYNC_BRANCH:
		if (f->ip != ev.at || !f->enabled)
			return DECLINE;
		f->ip = ev.ip;
		break;
	case HWT_DEC_EV_EXEC_MODE:
		if (!ev.suppressed && f->ip != ev.ip)
			return DECLINE;
		if (ev.status && f->enabled && f->mode != HWT_DEC_MODE_UNKNOWN &&
		    f->mode != ev.mode)
			return DECLINE;
		f->mode = ev.mode;
		break;
	case HWT_DEC_EV_ASYNC_PAGING:
	case HWT_DEC_EV_ASYNC_VMCS:
	case HWT_DEC_EV_TSX:
		if (!ev.suppressed && f->ip != ev.ip)
			return DECLINE;
		if (ev.type == HWT_DEC_EV_TSX)
			spec = (ev.aux & TSX_SPEC) ? SEG_F_SPECULATIVE : 0;
		break;
	case HWT_DEC_EV_EXSTOP:
	case HWT_DEC_EV_MWAIT:
		if (!ev.suppressed && f->enabled && f->ip != ev.ip)
			return DECLINE;
		break;
	case HWT_DEC_EV_OVERFLOW:
		err = drop_held(f);
		if (err < 0)
			return err;
		/* pt_blk_process_overflow(): on at the FUP, or off. */
		f->enabled = !ev.suppressed;
		f->ip = ev.suppressed ? 0 : ev.ip;
		spec = 0;
		break;
	case HWT_DEC_EV_STOP:
		if (f->enabled)
			return DECLINE;
		break;
	case HWT_DEC_EV_PAGING:
	case HWT_DEC_EV_VMCS:
	case HWT_DEC_EV_CBR:
	case HWT_DEC_EV_PWRE:
	case HWT_DEC_EV_PWRX:
		break;
	default:
		return DECLINE;
	}
	/* Events that resolve libipt's pending decision (conv_event()). */
	if (!ev.status &&
	    (ev.type == HWT_DEC_EV_ASYNC_BRANCH || ev.type == HWT_DEC_EV_ASYNC_DISABLED ||
	     ev.type == HWT_DEC_EV_DISABLED || ev.type == HWT_DEC_EV_ENABLED ||
	     ev.type == HWT_DEC_EV_OVERFLOW || (ev.type == HWT_DEC_EV_EXEC_MODE && !ev.suppressed)))
		f->held_pending = false;
	f->process_event = false;
	st = trailing_event(f);
	if (st < 0)
		return st;

	/* The log, as eng_ipt.c's conv_event() writes it. */
	if (ev.status)
		flags |= SEG_F_STATUS;
	if (ev.suppressed)
		flags |= SEG_F_IP_SUPPRESSED;
	if (!ev.status && breaks_flow(ev.type)) {
		/* What ran of the open block ran before the event. */
		err = close_open(f);
		if (err < 0)
			return err;
	}
	f->spec = spec;
	snapshot(f);
	if (ev.status && f->s->count_status) {
		/* A status update no sink wants: counted (seg.h; no context
		 * hook). */
		err = seg_count_status(f->s, f->pos);
		if (err < 0)
			return err;
		f->unposed = f->s->nitems;
		return psb_more(f, st);
	}
	if (!f->dec->cfg.context &&
	    (ev.type == HWT_DEC_EV_ENABLED || ev.type == HWT_DEC_EV_DISABLED)) {
		err = log_onoff(f, &ev, flags);
		if (err < 0)
			return err;
		f->unposed = f->s->nitems;
		return st;
	}
	fev_record(&ev, &e);
	err = seg_add_event(f->s, &e, flags, f->pos);
	if (err < 0)
		return err;
	f->unposed = f->s->nitems;
	if (f->dec->cfg.context) {
		err = context(f, f->pos, false, &e, flags);
		if (err < 0)
			return err;
		f->unposed = f->s->nitems;
	}
	return st;
}

/* A run of PSB+ while tracing is off (a CPU writes one every few hundred
 * bytes while it does not trace: real traces are mostly that): each PSB+'s
 * status updates are events libipt reports one by one at its PSBEND,
 * fetching the next as it delivers one, and reading ahead through the
 * next PSB+ when it takes the last. deliver_event() and q_event() do that
 * for any event; psb_run() does the same for this one case with nothing
 * between: no event queued but the PSB+'s, no trace, no IP, no context
 * hook. The records are the same (the differential tests compare them). */

/* libipt's read-ahead after the PSBEND at p - 1 once its PSB+'s updates
 * are out (read_ahead(), psb_header()): past timing packets to a PSB+ with
 * 1 to 5 status updates (no FUP, no OVF): returns its PSBEND, with the
 * packets of the updates psb_header() would queue in u (*nq); to an event
 * packet or the end of the segment: returns it (*nq 0); *status: what
 * status_flags() says there. NULL for anything else (the generic path
 * decodes it). */
static const struct seg_pkt *psb_ahead(const struct seg_pkt *p, const struct seg_pkt **u,
				       unsigned int *nq, int *status)
{
	const uint64_t timing = PKT_BIT(HWT_PKT_PAD) | PKT_BIT(HWT_PKT_TSC) | PKT_BIT(HWT_PKT_TMA) |
				PKT_BIT(HWT_PKT_MTC) | PKT_BIT(HWT_PKT_CYC);
	const struct seg_pkt *end = NULL;
	unsigned int n = 0;

	_Static_assert(
	    HWT_PKT_MODE_TSX == HWT_PKT_MODE_EXEC + 1 && HWT_PKT_PIP == HWT_PKT_MODE_EXEC + 2 &&
		HWT_PKT_VMCS == HWT_PKT_MODE_EXEC + 3 && HWT_PKT_CBR == HWT_PKT_MODE_EXEC + 4,
	    "the status update packets are consecutive");
	while (p->type < 64 && ((timing >> p->type) & 1))
		p++;
	if (p->type == SEG_PKT_END) {
		*status = ST_EOS;
		return p;
	}
	if (p->type != HWT_PKT_PSB) {
		if (!is_event_packet(p->type) || (p->type == HWT_PKT_CBR && !p->payload))
			return NULL;
		*status = ST_EVENT;
		return p;
	}
	if (p->ipc == SEG_PSB_RUN)
		return NULL; /* psb_header() gives Q_RELIST */
	if (p->ipc == SEG_PSB_SAME) {
		/* A repeat listed short (seg.h): its PSBEND follows, its
		 * updates are those of the run's first PSB+. */
		end = p + 1;
		p -= p->payload;
	}
	for (p++;; p++) {
		uint8_t t = p->type;

		if ((uint8_t)(t - HWT_PKT_MODE_EXEC) <= HWT_PKT_CBR - HWT_PKT_MODE_EXEC) {
			/* A status update (a CBR of 0 is peek()'s bad
			 * packet). */
			if (n == 5 || (t == HWT_PKT_CBR && !p->payload))
				return NULL;
			u[n++] = p;
			continue;
		}
		if (t < 64 && ((timing >> t) & 1))
			continue;
		if (t == HWT_PKT_PSBEND)
			break;
		return NULL;
	}
	if (!n)
		return NULL;
	*nq = n;
	*status = ST_EVENT;
	return end ? end : p;
}

/* The event psb_status() queues for the status update packet p. */
static inline void psb_fev(const struct seg_pkt *p, struct fev *ev)
{
	*ev = (struct fev){.status = 1};
	switch (p->type) {
	case HWT_PKT_MODE_EXEC:
		ev->type = HWT_DEC_EV_EXEC_MODE;
		ev->mode = exec_mode(p->aux);
		break;
	case HWT_PKT_CBR:
		ev->type = HWT_DEC_EV_CBR;
		ev->payload = p->payload;
		break;
	case HWT_PKT_MODE_TSX:
		ev->type = HWT_DEC_EV_TSX;
		ev->aux = (uint8_t)(((p->aux & 1) ? TSX_SPEC : 0) | ((p->aux & 2) ? TSX_ABORT : 0));
		break;
	case HWT_PKT_PIP:
		ev->type = HWT_DEC_EV_ASYNC_PAGING;
		ev->payload = pip_cr3(p->payload);
		ev->aux = p->payload & 1;
		break;
	default:
		ev->type = HWT_DEC_EV_ASYNC_VMCS;
		ev->payload = p->payload;
		break;
	}
}

/* Whether f->ev is a PSB+ status update psb_run() delivers: tracing off,
 * at its PSBEND, nothing else queued, no context hook, and a delivery that
 * only changes the mode or the transaction state. */
static inline bool psb_run_ok(const struct fast *f)
{
	uint8_t t = f->ev.type;

	return f->process_event && f->ev.status && !f->enabled && !f->q_enabled &&
	       (f->status & ST_EVENT) && f->np->type == HWT_PKT_PSBEND && f->psbq_head < f->npsbq &&
	       !f->tipq.n && !f->fupq.n && !f->ntnt && !f->last_ip_valid && !f->dec->cfg.context &&
	       (t == HWT_DEC_EV_CBR ||
		(f->ev.suppressed && (t == HWT_DEC_EV_TSX || t == HWT_DEC_EV_ASYNC_PAGING ||
				      t == HWT_DEC_EV_ASYNC_VMCS || t == HWT_DEC_EV_EXEC_MODE)));
}

/* deliver_event() of a PSB+ status update while psb_run_ok(): what it
 * changes. */
static inline void psb_apply(struct fast *f, const struct fev *ev)
{
	if (ev->type == HWT_DEC_EV_EXEC_MODE)
		f->mode = ev->mode;
	else if (ev->type == HWT_DEC_EV_TSX)
		f->spec = (ev->aux & TSX_SPEC) ? SEG_F_SPECULATIVE : 0;
}

/* psb_apply() of the update psb_fev() makes of the packet p. */
static inline void psb_apply_pkt(struct fast *f, const struct seg_pkt *p)
{
	if (p->type == HWT_PKT_MODE_EXEC)
		f->mode = exec_mode(p->aux);
	else if (p->type == HWT_PKT_MODE_TSX)
		f->spec = (p->aux & 1) ? SEG_F_SPECULATIVE : 0;
}

/* deliver_event() for f->ev while psb_run_ok(), and again for the events
 * it fetches, as long as that holds. Returns the status deliver_event()
 * would (st when it delivered nothing), or an error. */
static int psb_run(struct fast *f, int st)
{
	struct seg *s = f->s;

	if (!psb_run_ok(f))
		return st;
	/* What psb_run_ok() asks holds from here on while the loop goes on:
	 * the state it reads changes only by what follows, which keeps it
	 * (the next update is one of the same types, queued at a PSBEND,
	 * without an IP); else the loop ends after this one. */
	for (;;) {
		const struct fev ev = f->ev;
		const struct seg_pkt *end = NULL, *u[5];
		unsigned int nq = 0, base = 0;
		int ahead = ST_EVENT;

		/* The next fetch takes the PSB+'s last update: libipt reads
		 * ahead past its PSBEND then (into the half of the queue the
		 * current PSB+'s are not in). */
		if (f->psbq_head + 1 == f->npsbq) {
			base = f->npsbq > 8 ? 0 : 8;
			end = psb_ahead(f->np + 1, u, &nq, &ahead);
			if (!end)
				break;
			if (nq && s->count_status && !s->delta && f->unposed == s->nitems) {
				/* Counted (seg.h), nothing to flush or place:
				 * the deliveries up to the same point of the
				 * next PSB+ at once. The pending ones are
				 * f->ev, the queue's last and the next PSB+'s
				 * nq (u): all but the last two of them are
				 * delivered, as the loop below would one by
				 * one, at the next PSBEND; only those two
				 * are made events. */
				psb_apply(f, &ev);
				if (nq >= 2) {
					psb_apply(f, &f->psbq[f->psbq_head]);
					for (unsigned int i = 0; i + 2 < nq; i++)
						psb_apply_pkt(f, u[i]);
					psb_fev(u[nq - 2], &f->ev);
				} else {
					f->ev = f->psbq[f->psbq_head];
				}
				psb_fev(u[nq - 1], &f->psbq[base + nq - 1]);
				f->psbq_head = base + nq - 1;
				f->npsbq = base + nq;
				f->last_ip = 0;
				f->last_ip_suppressed = false;
				f->np = end;
				f->pos = s->start + end->off;
				if (f->ev.type != HWT_DEC_EV_CBR)
					f->ev.suppressed = 1; /* event_ip(): no IP */
				f->status = ahead;
				st = blk_status(f, ST_EVENT);
				s->nstatus += nq;
				if (nq >= 2) {
					/* PSB+ that repeat this one (seg.h,
					 * after the PADs that follow it):
					 * each leaves the same pending two
					 * (its last ones, the same events)
					 * and what it delivers before them is
					 * this one's (distinct types): these
					 * two applied, the rest is counting. */
					const struct seg_pkt *r = end + 1;

					while (r->type == HWT_PKT_PAD)
						r++;
					if (r->type == HWT_PKT_PSB && r->ipc) {
						psb_apply(f, &f->ev);
						psb_apply(f, &f->psbq[f->psbq_head]);
						do {
							if (r->ipc == SEG_PSB_RUN) {
								/* Repeats as one entry,
								 * a short one after
								 * it. */
								s->nstatus +=
								    nq * (r->payload >> 32);
								r++;
								continue;
							}
							end = r + 1;
							s->nstatus += nq;
							for (r = end + 1; r->type == HWT_PKT_PAD;
							     r++)
								;
						} while (r->type == HWT_PKT_PSB && r->ipc);
						f->np = end;
						f->pos = s->start + end->off;
					}
				}
				continue;
			}
		}
		/* deliver_event(): what this event changes. */
		psb_apply(f, &ev);
		/* trailing_event() -> q_event(): the next update, at this
		 * PSBEND or the next one. */
		f->ev = f->psbq[f->psbq_head++];
		if (end) {
			if (nq) {
				for (unsigned int i = 0; i < nq; i++)
					psb_fev(u[i], &f->psbq[base + i]);
				f->npsbq = base + nq;
				f->psbq_head = base;
				f->last_ip = 0;
				f->last_ip_suppressed = false;
			}
			f->np = end;
			f->pos = s->start + end->off;
		}
		if (f->ev.type != HWT_DEC_EV_CBR)
			f->ev.suppressed = 1; /* event_ip(): no IP */
		f->status = ahead;
		st = blk_status(f, ST_EVENT);
		snapshot(f);
		if (s->count_status) {
			/* No sink wants it: counted, as the replay would
			 * (seg.h). */
			int err = seg_count_status(s, f->pos);

			if (err < 0)
				return err;
			f->unposed = s->nitems;
		} else {
			/* The log of the delivered one (deliver_event(),
			 * with seg_add_event() written in place). */
			uint8_t flags = SEG_F_STATUS | (ev.suppressed ? SEG_F_IP_SUPPRESSED : 0);

			if (__builtin_expect(s->delta || s->nitems == s->cap_items ||
						 s->nevents == s->cap_events,
					     0)) {
				struct hwt_dec_event e;
				int err;

				fev_record(&ev, &e);
				err = seg_add_event(s, &e, flags, f->pos);
				if (err < 0)
					return err;
			} else {
				struct seg_item *it = &s->items[s->nitems++];

				fev_record(&ev, &s->events[s->nevents]);
				*it = (struct seg_item){.pos = f->pos,
							.ninsn = (uint32_t)s->nevents++,
							.kind = SEG_EVENT,
							.flags = flags};
			}
			f->unposed = s->nitems;
		}
		/* Read ahead to something else than a PSB+: the next
		 * delivery is deliver_event()'s. */
		if (end && !nq)
			break;
	}
	return st;
}

/* Erratum BDM70: a PSB+ may carry a FUP (and MODE.Exec) that belongs to a
 * TIP.PGE that follows it; libipt then ignores the FUP. Looks past the
 * header for that TIP.PGE (pt_qry_header_fup's check_erratum_bdm70): 1
 * when it follows, 0 when another packet or the end of the trace comes
 * first. A packet libipt's packet decoder rejects on the way (bad opcode
 * or payload, even past the PSBEND) fails its header read, so the PSB+
 * (pt_qry_decode_psb: a sync there, or decoding on through it) fails
 * with the offset at its PSB: DECLINE, libipt's to decode. */
static int bdm70_applies(struct fast *f, uint64_t off)
{
	while (off < f->end) {
		struct hwt_pkt p;
		int n = hwt_pkt_decode(f->buf + off, (size_t)(f->end - off), f->skz84, &p);

		if (n <= 0)
			return n < 0 ? DECLINE : 0;
		switch (p.type) {
		case HWT_PKT_TIP_PGE:
			return 1;
		case HWT_PKT_PAD:
		case HWT_PKT_TSC:
		case HWT_PKT_CBR:
		case HWT_PKT_PSBEND:
		case HWT_PKT_PIP:
		case HWT_PKT_MODE_EXEC:
		case HWT_PKT_MODE_TSX:
		case HWT_PKT_VMCS:
		case HWT_PKT_TMA:
		case HWT_PKT_MTC:
		case HWT_PKT_CYC:
		case HWT_PKT_MNT:
			off += (uint64_t)n;
			continue;
		default:
			return 0;
		}
	}
	return 0;
}

/* Queues a PSB+ status update for PSBEND (pt_qry_header_*). */
static int psb_status(struct fast *f, const struct seg_pkt *p)
{
	if (f->npsbq == HWT_ARRAY_SIZE(f->psbq))
		return DECLINE;
	psb_fev(p, &f->psbq[f->npsbq++]);
	return 0;
}

/* A PSB+ (pt_qry_decode_psb, pt_qry_read_psb_header): from the PSB at
 * f->np up to its PSBEND or an OVF, which end it (not consumed). The last
 * IP starts over; a FUP sets it (and tracing on for the query decoder);
 * the status updates wait in psbq for PSBEND. Returns 0, Q_EOS when the
 * trace ends inside it (f->cut_header), or DECLINE. */
static int psb_header(struct fast *f)
{
	/* A repeat listed short (seg.h): the run's first PSB+. */
	const struct seg_pkt *t = f->np->ipc == SEG_PSB_SAME ? f->np - f->np->payload : NULL;
	int n, err;

	if (f->np->ipc == SEG_PSB_RUN)
		return Q_RELIST;
	advance(f);
	f->last_ip = 0;
	f->last_ip_valid = false;
	f->last_ip_suppressed = false;
	f->npsbq = f->psbq_head = 0;
	if (t) {
		/* A repeat listed short (seg.h): the status updates of the
		 * run's first PSB+ (1 to 5, no FUP), at its PSBEND (f->np). */
		for (t++; t->type != HWT_PKT_PSBEND; t++) {
			if ((uint8_t)(t->type - HWT_PKT_MODE_EXEC) <=
			    HWT_PKT_CBR - HWT_PKT_MODE_EXEC) {
				err = psb_status(f, t);
				if (err < 0)
					return err;
			}
		}
		return 0;
	}
	for (;;) {
		n = peek(f);
		if (n <= 0) {
			/* The trace ends inside the PSB+: libipt cannot
			 * decode it, nothing to decode. */
			f->cut_header = n == 0;
			return n == 0 ? Q_EOS : DECLINE;
		}
		switch (f->np->type) {
		case HWT_PKT_PSBEND:
		case HWT_PKT_OVF:
			return 0;
		case HWT_PKT_FUP:
			if (f->dec->ptcfg.errata.bdm70 && !f->q_enabled) {
				err = bdm70_applies(f, f->pos + (uint64_t)n);
				if (err < 0)
					return err;
				if (err)
					break; /* the FUP is ignored */
			}
			err = update_ip(f);
			if (err < 0)
				return err;
			if (f->np->ipc != HWT_IPC_SUPPRESSED)
				f->q_enabled = true;
			break;
		case HWT_PKT_MODE_EXEC:
		case HWT_PKT_CBR:
		case HWT_PKT_MODE_TSX:
		case HWT_PKT_PIP:
		case HWT_PKT_VMCS:
			err = psb_status(f, f->np);
			if (err < 0)
				return err;
			/* libipt queues a PSB+'s status updates in a small
			 * fixed ring and fails (pte_nomem, "out of memory")
			 * when one holds more (seen: 7 fail, 6 do not). A
			 * CPU writes at most five (MODE.Exec, MODE.TSX, PIP,
			 * VMCS, CBR): more are left to libipt. */
			if (f->npsbq > 5)
				return DECLINE;
			break;
		case HWT_PKT_PAD:
		case HWT_PKT_TSC:
		case HWT_PKT_TMA:
		case HWT_PKT_MTC:
		case HWT_PKT_CYC:
			break;
		default:
			return DECLINE;
		}
		advance(f);
	}
}

/* PSB+ at the segment start (pt_qry_start and pt_blk_start), or at the
 * PSB at `at` (f->np) where libipt synchronizes afresh (e: nothing
 * known). */
static int start_at(struct fast *f, uint64_t at, const struct seg_state *e)
{
	/* libipt starts from a state with nothing to tell (tracing off, no
	 * resume address, mode or transaction) as from a fresh sync: its
	 * prefix (eng_ipt.c) is a PSB+ without events. */
	bool cont = e->known && (e->enabled || e->ip || e->mode != HWT_DEC_MODE_UNKNOWN || e->spec);
	int n, st, err;

	f->pos = at;
	n = peek(f);
	/* A PSB+ that runs into the next PSB: libipt fails there. One that
	 * runs into the end of the trace while decoding on is libipt's too
	 * (its block decoder then reports the end where it stopped). */
	if (n <= 0 || f->np->type != HWT_PKT_PSB ||
	    (at == f->s->start && f->s->hdr.open && (!f->s->last || cont)))
		return DECLINE;
	/* Decoding on from the segment before: the query decoder's own
	 * enabled flag (BDM70's check) is where tracing was. */
	if (e->known)
		f->q_enabled = e->enabled;
	err = psb_header(f);
	if (err < 0)
		return err;
	if (cont) {
		uint64_t fup;

		/* libipt decoding on across the PSB: the block decoder keeps
		 * its state; the PSB+ only updates the query decoder. Going
		 * on from elsewhere than the PSB+'s FUP is libipt's to
		 * decode. */
		if (e->enabled && (!query_ip(f, &fup) || fup != e->ip))
			return DECLINE;
		f->ip = e->ip;
		f->mode = e->mode;
		f->spec = e->spec ? SEG_F_SPECULATIVE : 0;
		st = e->enabled ? 0 : ST_IPSUP;
	} else if (query_ip(f, &f->ip)) {
		/* The start address is taken before reading ahead. */
		st = 0;
	} else {
		st = ST_IPSUP;
	}
	/* libipt's sync fails at the end of the trace (a PSB+ and nothing
	 * after it). */
	err = read_ahead(f);
	if (err < 0)
		return err;
	/* Without an IP, one from a PSB+ right after (read ahead) is taken
	 * (pt_qry_start's second look). */
	if (!cont && (st & ST_IPSUP) && query_ip(f, &f->ip))
		st = 0;
	err = status_flags(f);
	if (err < 0)
		return err;
	st |= err;
	f->status = st;
	if (!(st & ST_IPSUP))
		f->enabled = true;
	return trailing_event(f);
}

/* Erratum SKD007: an OVF may overwrite the rest of a multi-byte CYC. libipt
 * takes a two-byte CYC whose second byte looks like an extended opcode,
 * followed by an OVF opcode, for that (check_erratum_skd007). */
static bool skd007_hits(const struct seg *s)
{
	for (const struct seg_pkt *p = s->pkts; p->type != SEG_PKT_END && p->type != HWT_PKT_BAD;
	     p++) {
		uint64_t next = s->start + p->off + 2;

		if (p->type == HWT_PKT_CYC && p->size == 2 && (p->payload & ~0x1full) == 0x20 &&
		    next < s->end && s->buf[next] == 0xf3)
			return true;
	}
	return false;
}

/* Clears f for a segment but for the event queues' entries, which are
 * read only below their counts (written first), and the return stack,
 * which the segment before left empty (rs_clear()): 1.3 of its 1.7 KB, a
 * segment at every PSB clears it for each PSB. */
static void fast_clear(struct fast *f)
{
	_Static_assert(offsetof(struct fast, fupq) > offsetof(struct fast, tipq) &&
			   offsetof(struct fast, psbq) > offsetof(struct fast, fupq) &&
			   offsetof(struct fast, npsbq) > offsetof(struct fast, psbq) &&
			   offsetof(struct fast, retstack) > offsetof(struct fast, npsbq) &&
			   offsetof(struct fast, rs_top) > offsetof(struct fast, retstack),
		       "the queues follow each other");
	memset(f, 0, offsetof(struct fast, tipq));
	f->tipq.n = f->fupq.n = 0;
	memset(&f->npsbq, 0, offsetof(struct fast, retstack) - offsetof(struct fast, npsbq));
	memset(&f->rs_top, 0, sizeof(*f) - offsetof(struct fast, rs_top));
}

/* Empties the return stack at a segment's end, for the next (fast_clear):
 * its entries are the newest below rs_top down to the first NULL (a push
 * writes at rs_top, a pop clears the entry below it, a run leaves what
 * its pushes and pops would). */
static void rs_clear(struct fast *f)
{
	for (unsigned int i = 1; i <= 64; i++) {
		struct hwt_dec_bb **e = &f->retstack[(f->rs_top - i) & 63];

		if (!*e)
			break;
		*e = NULL;
	}
}

static int seg_fast(struct hwt_dec *dec, struct seg *s, void *scratch)
{
	struct fast *f;
	bool empty = false;
	/* Its log's positions never decrease (f->pos only moves on), if
	 * it starts empty. */
	bool sorted = s->nitems == 0;
	int status, err, ferr;

	/* Outside the subset from the start. */
	/* Address filters matter to libipt only for its SKL014 workaround. */
	if ((dec->cfg.filter.addr_cfg && dec->ptcfg.errata.skl014) ||
	    (dec->cfg.flags & HWT_DEC_F_TICK) ||
	    (dec->cfg.context && (!dec->cfg.context_span || !s->ntl)))
		return DECLINE;
	f = ((struct fast_scratch *)scratch)->f;
	fast_clear(f);
	((struct fast_scratch *)scratch)->defer = s->work && s->work->runs == scratch;
	if (dec->cfg.context) {
		uint64_t lo = UINT64_MAX, hi = 0;

		for (size_t i = 0; i < s->ntl; i++) {
			lo = s->tl[i].tsc < lo ? s->tl[i].tsc : lo;
			hi = s->tl[i].tsc > hi ? s->tl[i].tsc : hi;
		}
		err = hwt_dec_context_span(dec, lo, hi, &f->span);
		if (err <= 0)
			return err < 0 ? err : DECLINE;
		f->hooked = true;
	}
	f->dec = dec;
	f->s = s;
	f->sc = scratch;
	f->buf = s->buf;
	f->end = s->end;
	f->skz84 = dec->ptcfg.errata.skz84;
	if (!s->want_pkts || !s->npkts || s->time_error) {
		err = DECLINE;
		goto out;
	}
	f->np = s->pkts;
	f->mode = HWT_DEC_MODE_UNKNOWN;
	f->blk_ok = true;
	/* SKZ84 only changes how packets decode (pkt.c does it, and an
	 * INVALID packet is unsupported); SKD007 changes a CYC's meaning
	 * where it hits. */
	if (dec->ptcfg.errata.skd007 && skd007_hits(s)) {
		err = DECLINE;
		goto out;
	}

	err = context(f, s->start, true, NULL, 0);
	if (err < 0)
		goto out;
	f->unposed = s->nitems;
	status = start_at(f, s->start, &s->entry);
	if (status == Q_EOS && s->entry.known && s->entry.enabled && !f->cut_header) {
		/* libipt goes on here with tracing on (eng_ipt.c's prefix)
		 * and finds no trace: its view of where the flow ends. */
		err = DECLINE;
		goto out;
	}
	if (status == Q_EOS) {
		/* A PSB+ and nothing after it. */
		empty = true;
		err = 0;
		goto out;
	}
	if (status < 0) {
		err = status == Q_BADQUERY ? DECLINE : status;
		goto out;
	}
	for (;;) {
		while (status & ST_EVENT) {
			status = psb_run(f, status);
			if (status >= 0 && (status & ST_EVENT))
				status = deliver_event(f);
			if (status < 0) {
				err = status == Q_BADQUERY || status == Q_EOS ? DECLINE : status;
				goto out;
			}
		}
		if (status & ST_EOS) {
			snapshot(f);
			if (!(status & ST_IPSUP) && !s->last && s->has_end_ip) {
				struct hwt_dec_bb *bb = f->open;

				if (bb && f->ip != hwt_dec_bb_insn_ip(bb, f->open_k)) {
					err = close_open(f);
					if (err < 0)
						goto out;
					bb = NULL;
				}
				f->open = NULL;
				snapshot(f);
				err = seg_tail(dec, s, f->ctx.image, bb ? bb->ip : f->ip,
					       (enum hwt_dec_mode)f->mode, f->pos, f->spec);
				goto out;
			}
			err = close_open(f);
			if (err < 0)
				goto out;
			snapshot(f);
			if (s->last && !(status & ST_IPSUP)) {
				struct hwt_dec_event e;

				memset(&e, 0, sizeof(e));
				e.type = HWT_DEC_EV_END;
				err = seg_add_event(s, &e, 0, f->pos);
			}
			goto out;
		}
		status = blk_next(f);
		if (status < 0) {
			err = status == Q_BADQUERY || status == Q_EOS ? DECLINE : status;
			goto out;
		}
		if ((status & ST_EVENT) || f->decided)
			snapshot(f);
		f->decided = false;
	}
out:
	rs_clear(f);
	/* With defer the counts stay in the runs (undone with the rest). */
	ferr = f->sc->defer ? 0 : runs_fold_all(f);
	if (err == Q_FAILED)
		err = 0;
	if (err == 0)
		err = ferr;
	if (err == 0) {
		snapshot(f);
		err = seg_flush_delta(s, f->pos);
	}
	if (err == 0 && s->err)
		err = s->err;
	s->sorted = err == 0 && sorted;
	if (empty)
		seg_exit_empty(s);
	else
		seg_set_exit(s, err == 0 && !s->ngaps, f->enabled, f->ip, f->mode, f->spec != 0);
	if (err == DECLINE)
		s->decline_pos = f->pos > s->start ? f->pos : s->start + 1;
	return err;
}

/* A segment that is a PSB+ while tracing is off and nothing else (its
 * PSBEND, PADs to the end), decoded on from the segment before with a
 * state to tell (start_at()'s cont): a CPU writes such PSB+ one after the
 * other while it does not trace, and with a segment at every PSB (pieces
 * of a few hundred bytes) most segments are one (psb_only(),
 * hwt_dec_seg_psb_only()). What seg_fast() gives for it, without its
 * set-up: the context item at the start, the PSB+'s status updates
 * counted (count_status: no sink wants them, no hook; at most one of each
 * type, none a CBR of 0), the state the updates leave (after_header(), as
 * seg_through()). seg_fast() may count the last update where libipt reads
 * ahead, at the segment's end (s->status_end), which only hands_over()
 * reads: run.c asks it of no segment decoded here. This: whether the
 * segment's state and header allow it. */
static bool psb_only_fits(const struct hwt_dec *dec, bool count_status, const struct seg_state *e,
			  const struct seg_header *h)
{
	return count_status && e->known && !e->enabled &&
	       (e->ip || e->mode != HWT_DEC_MODE_UNKNOWN || e->spec) && !h->open && !h->fup &&
	       h->nstatus && !(dec->cfg.filter.addr_cfg && dec->ptcfg.errata.skl014) &&
	       !(dec->cfg.flags & HWT_DEC_F_TICK);
}

static bool psb_only_ok(const struct hwt_dec *dec, const struct seg *s)
{
	const struct seg_header *h = &s->hdr;

	/* No more than PADs after its PSB+: where trace follows it, the byte
	 * after its PSBEND is not one. */
	if (h->psbend_end && h->psbend_end < s->end && s->buf[h->psbend_end])
		return false;
	return !s->nitems && psb_only_fits(dec, s->count_status, &s->entry, &s->hdr);
}

/* Its exit: the state the PSB+'s updates leave (seg_set_exit()'s). */
static struct seg_state psb_only_exit(const struct seg_state *e, const struct seg_header *h)
{
	struct seg_state st;

	memset(&st, 0, sizeof(st));
	st.known = true;
	st.ip = e->ip;
	st.mode = h->mode_ok ? h->mode : e->mode;
	st.spec = h->tsx_ok ? h->spec : e->spec;
	return st;
}

/* psb_only()'s log and exit state. */
static bool psb_only_log(struct hwt_dec *dec, struct seg *s)
{
	struct hwt_dec_context_query q = {0, false, NULL, false, false};
	struct hwt_dec_context ctx;
	size_t cursor = 0;

	q.has_tsc = seg_time_at(s, s->start, &cursor, &q.tsc);
	if (hwt_dec_context_at(dec, &q, &ctx) < 0 || seg_add_ctx(s, &ctx, s->start) < 0)
		return false;
	s->nstatus += s->hdr.nstatus;
	s->exit = psb_only_exit(&s->entry, &s->hdr);
	s->sorted = true;
	return true;
}

/* The segment from its packet list (the walk's). */
static bool psb_only(struct hwt_dec *dec, struct seg *s)
{
	const struct seg_pkt *p = s->pkts;
	unsigned int seen = 0, nq = 0;

	if (!psb_only_ok(dec, s) || !s->want_pkts || !s->npkts || s->time_error ||
	    p->type != HWT_PKT_PSB || p->ipc)
		return false;
	for (p++;; p++) {
		switch (p->type) {
		case HWT_PKT_PAD:
		case HWT_PKT_TSC:
		case HWT_PKT_TMA:
			continue;
		case HWT_PKT_CBR:
			if (!p->payload)
				return false;
			/* fall through */
		case HWT_PKT_MODE_EXEC:
		case HWT_PKT_MODE_TSX:
		case HWT_PKT_PIP:
		case HWT_PKT_VMCS:
			if (seen & (1u << p->type))
				return false;
			seen |= 1u << p->type;
			nq++;
			continue;
		default:
			break;
		}
		break;
	}
	if (p->type != HWT_PKT_PSBEND || !nq || nq != s->hdr.nstatus)
		return false;
	for (p++; p->type == HWT_PKT_PAD; p++)
		;
	return p->type == SEG_PKT_END && psb_only_log(dec, s);
}

bool hwt_dec_seg_psb_only(struct hwt_dec *dec, struct seg *s, const struct seg_tail *head)
{
	return psb_only_ok(dec, s) && seg_timeline_psb_only(s, head) && psb_only_log(dec, s);
}

/* s, moved on to a PSB+ repeat (seg.c), decoded from dec->state (with
 * more, it was one already: its log empty). */
static void psb_again_decoded(const struct hwt_dec *dec, struct seg *s, bool more)
{
	if (!more)
		seg_reset(s);
	s->entry = dec->state;
	s->exit = psb_only_exit(&s->entry, &s->hdr);
	s->nstatus = s->hdr.nstatus;
	s->sorted = true;
}

bool hwt_dec_seg_psb_again(struct hwt_dec *dec, struct seg *s, uint64_t end, bool more)
{
	/* Its header is s's next one (seg_header()'s with no FUP in it). */
	if (!psb_only_fits(dec, hwt_dec_counts_status(dec), &dec->state, &s->next_hdr) ||
	    !seg_psb_again(s, end))
		return false;
	psb_again_decoded(dec, s, more);
	return true;
}

uint64_t hwt_dec_seg_psb_again_run(struct hwt_dec *dec, struct seg *s, uint64_t limit, bool more)
{
	uint64_t n;

	/* The state and the header each leaves are the one before's. */
	if (!psb_only_fits(dec, hwt_dec_counts_status(dec), &dec->state, &s->next_hdr))
		return 0;
	n = seg_psb_again_run(s, more ? s->end - s->start : 0, limit);
	if (n && !more)
		psb_again_decoded(dec, s, more);
	return n;
}

int hwt_dec_seg_fast(struct hwt_dec *dec, struct seg *s, void *scratch)
{
	bool fresh = s->nitems == 0;
	int err;

	if (psb_only(dec, s))
		return 0;
	err = seg_fast(dec, s, scratch);

	if (err != Q_RELIST)
		return err;
	/* A PSB+ that one list entry stands for with others is to be
	 * decoded on its own (seg.h SEG_PSB_RUN): again, from its own walk
	 * listing each. */
	if (!fresh)
		return DECLINE;
	seg_drop_counts(s);
	seg_reset(s);
	s->no_runs = true;
	seg_timeline_walk(s, dec);
	if (s->err)
		return s->err;
	err = seg_fast(dec, s, scratch);
	return err == Q_RELIST ? DECLINE : err;
}
