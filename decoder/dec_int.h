/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/dec_int.h - the decoder module's internal types, shared by its
 * source files and never included from outside decoder/.
 *
 * Layers, bottom up:
 *   image.c    sections of address spaces on top of libipt's image section
 *              cache; code reads
 *   ild.c      instruction decoding and classification (capstone)
 *   bb.c       the basic-block cache: decoded straight-line code, keyed by
 *              section, address and mode, with cached successors
 *   pkt.c      our own PT packet parser (the fast engine's)
 *   timeline.c TSC/MTC/CYC timing: PT stream offset -> TSC estimate
 *   seg.c      a PSB segment's decode log (engine output, phase 1)
 *   eng_fast.c the fast engine (block cache walk, phase 1)
 *   eng_ipt.c  libipt's block decoder per segment (phase 1) and the
 *              continuous ptxed-compatible loop
 *   flow.c     phase 2: threads, call stacks, profile, records to sinks
 *   decoder.c  the public decoder object, segmentation, parallelism
 */
#ifndef HWT_DECODER_DEC_INT_H
#define HWT_DECODER_DEC_INT_H

#include <intel-pt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "decoder/decoder.h"

/* libipt error -> hwtrace error (the module boundary, STYLE habit 3). */
int hwt_dec_err_from_pt(int pterr);

/* ------------------------------------------------------------------------ */
/* Images                                                                    */

/* A section's bytes in memory, for the fast engine's reads (image.c
 * section_code()): loaded on first use, never through libipt, whose
 * reads map and unmap the file with every icache (open, fstat, mmap,
 * a page fault, munmap with its TLB flush: most of the CPU time of a
 * short trace's decode) and copy out under a lock. */
struct hwt_dec_code {
	atomic_int state;     /* 0: not yet, 1: bytes, -1: libipt reads */
	const uint8_t *bytes; /* the section's size bytes */
	void *map;	      /* mmap()ed (large sections), else malloc()ed */
	size_t map_len;
	int fd; /* the file as its check opened it, for the load (-1: none) */
};

/* A file or memory section registered in the icache. */
struct hwt_dec_section {
	uint64_t vaddr;		   /* where the whole section was mapped */
	uint64_t size;		   /* after clipping to the file (when checked) */
	uint64_t asked;		   /* the size it was added with */
	uint64_t offset;	   /* file offset */
	int checked;		   /* 0: not yet (image.c section_check()), 1: ok,
				    * < 0: the error (the file is not mapped) */
	char *path;		   /* file name (memory: /proc/self/fd/N) */
	char *label;		   /* what messages show */
	struct hwt_dec_code *code; /* its bytes, loaded on first use */
};

/* A piece of a section visible in an image: [lo, hi) of section sec. */
struct hwt_dec_piece {
	uint64_t lo, hi;
	const struct hwt_dec_section *sec;
};

struct hwt_dec_bb_table;

struct hwt_dec_icache {
	/* libipt's, made when first needed (image.c icache_ipt()) */
	_Atomic(struct pt_image_section_cache *) ipt;
	struct hwt_logger log;
	pthread_mutex_t lock;	  /* sections, memfds, csh pool */
	pthread_mutex_t ipt_lock; /* one libipt block decoder at a time
				   * (see hwt_dec_seg_ipt) */
	uint8_t ipt_mode;	  /* the mode libipt's block caches in the sections
				   * are filled in (eng_ipt.c conv_image(); under
				   * ipt_lock) */
	struct hwt_dec_section **sections;
	size_t nsections, cap_sections;
	int *memfds; /* kept open so their names stay unique */
	size_t nmemfds, cap_memfds;
	void **csh_pool[4]; /* capstone handles per mode */
	size_t ncsh[4], cap_csh[4];
	struct hwt_dec_bb_table *bbs; /* basic-block cache */
};

struct hwt_dec_image {
	atomic_int refs;
	uint64_t id; /* unique per icache: tags cached edges */
	struct hwt_dec_icache *icache;
	struct pt_image *ipt; /* libipt's, made when first needed */
	char *name;
	struct hwt_dec_piece *pieces; /* sorted by lo, disjoint */
	size_t npieces, cap_pieces;
	/* Sections added and not yet checked (their files are stat()ed and
	 * mapped into pieces in this order at the image's first lookup:
	 * image.c image_resolve()); unresolved is set while there are any,
	 * and lookups see nfind pieces (0 then: a lookup below the first
	 * piece resolves the image, no test where one finds its piece). */
	struct hwt_dec_section **pending;
	size_t npending, cap_pending;
	atomic_bool unresolved;
	atomic_size_t nfind;
};

/* The image's libipt image, made of its pieces the first time a libipt run
 * needs it, or NULL with *err set (the file that failed is named in the
 * icache's log). */
struct pt_image *hwt_dec_image_ipt(const struct hwt_dec_image *image, int *err);
/* A new libipt image of the image's pieces in sections of the libipt
 * section cache isc (read from the same files), or NULL: with a cache no
 * other decoder uses (hwt_dec_iscache_alloc()) their block caches start
 * empty and no other decoder reads or reorders them, as in a ptxed
 * process. */
struct pt_image *hwt_dec_image_ipt_own(const struct hwt_dec_image *image,
				       struct pt_image_section_cache *isc);
/* A libipt image section cache that keeps sections mapped (up to 1 GiB of
 * files: libipt maps and unmaps a section's file, with open, fstat and
 * close, on every read without), or NULL. */
struct pt_image_section_cache *hwt_dec_iscache_alloc(void);
/* Finds the piece containing vaddr, or NULL. */
const struct hwt_dec_piece *hwt_dec_image_find(const struct hwt_dec_image *image, uint64_t vaddr);
/* Reads from one piece (clipped at its end). Returns bytes or negative. */
int hwt_dec_piece_read(const struct hwt_dec_icache *icache, const struct hwt_dec_piece *piece,
		       uint64_t vaddr, uint8_t *buf, size_t size);
/* Points *bytes at the piece's code at vaddr (inside the piece) and
 * returns how many bytes there are to the piece's end; 0 when the code
 * is not in memory (hwt_dec_piece_read() then). */
size_t hwt_dec_piece_bytes(const struct hwt_dec_piece *piece, uint64_t vaddr,
			   const uint8_t **bytes);

/* ------------------------------------------------------------------------ */
/* Instruction decoding (capstone)                                           */

/* Decodes one instruction from bytes (len available, at address ip).
 * Returns 0, or -HWT_EDECODE. */
int hwt_dec_ild(struct hwt_dec_icache *icache, const uint8_t *bytes, size_t len, uint64_t ip,
		enum hwt_dec_mode mode, struct hwt_dec_insn *insn);
/* Its two halves: the length decoder's tables (64- and 32-bit code), which
 * know the common instructions and return 1 with *insn as capstone gives
 * it, or 0 for capstone to decide; and capstone. */
int hwt_dec_ild_table(const uint8_t *bytes, size_t len, uint64_t ip, enum hwt_dec_mode mode,
		      struct hwt_dec_insn *insn);
int hwt_dec_ild_capstone(struct hwt_dec_icache *icache, const uint8_t *bytes, size_t len,
			 uint64_t ip, enum hwt_dec_mode mode, struct hwt_dec_insn *insn);

/* ------------------------------------------------------------------------ */
/* Basic blocks                                                              */

/* The most instructions one basic block holds; longer straight runs chain
 * blocks ending with HWT_DEC_BR_NONE. */
#define HWT_DEC_BB_MAX_INSNS 4096u

/* Direct jumps and calls in a row, with no trace used, after which the
 * code is taken to loop forever (`jmp .`, reached by corrupt trace or a
 * spinning program): decoding stops there with a gap until the next PSB.
 * libipt would walk such a loop for ever (2.0.5 recurses until its stack
 * overflows); real code has no such runs this long. */
#define HWT_DEC_MAX_DIRECT_RUN 4096u
/* Whether libipt may run with end-on-jump/call (the guard above needs it):
 * not where it changes libipt's SKL014 workaround (address filters on an
 * affected CPU), which then goes without the guard. */
#define HWT_DEC_CAN_END_ON_JUMP(ptcfg)                                                             \
	(!(ptcfg)->errata.skl014 || !(ptcfg)->addr_filter.config.addr_cfg)
#define HWT_DEC_ENDLESS_WHAT "endless loop of direct branches (no trace to follow)"

/* A cached successor: valid for the image with id image_id. Immutable once
 * published; replaced (never freed before the icache) when another image
 * needs a different one. */
struct hwt_dec_edge {
	uint64_t image_id;
	struct hwt_dec_bb *bb;
};

#define HWT_DEC_BBF_TRUNCATED (1u << 0) /* last insn crosses the piece end */
#define HWT_DEC_BBF_PIECE_END (1u << 1) /* ended at the piece end */
#define HWT_DEC_BBF_ERROR                                                                          \
	(1u << 2)			 /* ended at an undecodable insn:                          \
					  * ninsn counts the good ones */
#define HWT_DEC_BBF_PIC_CALL   (1u << 3) /* direct call to the next insn */
#define HWT_DEC_BBF_LOG_STACK  (1u << 4) /* its branch changes a call stack */
#define HWT_DEC_BBF_LOG_TARGET (1u << 5) /* indirect: has a target histogram */

struct hwt_dec_bb {
	uint64_t ip;	      /* first instruction */
	uint64_t end_ip;      /* last instruction */
	uint64_t limit;	      /* end of the piece it was decoded in */
	uint64_t target;      /* direct branch target */
	uint64_t fallthrough; /* end_ip + size of last insn */
	const struct hwt_dec_section *sec;
	uint32_t ninsn;
	uint32_t id;	/* dense, for per-decoder counter arrays */
	uint8_t branch; /* enum hwt_dec_branch */
	uint8_t mode;
	uint8_t flags; /* HWT_DEC_BBF_* */
	uint8_t last_size;
	uint16_t *offs;	   /* offsets of insns 1..ninsn-1 from ip (NULL
			    * when ninsn == 1); the first is at 0 */
	uint32_t *offs32;  /* used instead when the block spans >64 KiB */
	uint64_t piece_lo; /* start of the piece it was decoded in */
	/* Cached successors (fall-through, branch target). A successor in
	 * the same piece is the same block in every image that maps this
	 * one, so it is cached as a plain pointer (near); one in another
	 * piece depends on the image: an edge tagged with the image. */
	_Atomic(struct hwt_dec_bb *) near[2];
	_Atomic(struct hwt_dec_edge *) succ[2];
};

/* Looks up or decodes the basic block at ip in image (mode). Returns 0 and
 * stores it, or -HWT_ENOSYM (not mapped), -HWT_EDECODE (first insn bad),
 * -ENOMEM. Thread-safe. */
int hwt_dec_bb_get(struct hwt_dec_icache *icache, const struct hwt_dec_image *image, uint64_t ip,
		   enum hwt_dec_mode mode, struct hwt_dec_bb **bb);

/* Successor of bb in direction dir (0: fall-through, 1: branch target) in
 * image, using and filling the edge cache. */
int hwt_dec_bb_succ(struct hwt_dec_icache *icache, const struct hwt_dec_image *image,
		    struct hwt_dec_bb *bb, int dir, struct hwt_dec_bb **out);

/* Address of the k-th instruction (0-based) of bb. */
static inline uint64_t hwt_dec_bb_insn_ip(const struct hwt_dec_bb *bb, uint32_t k)
{
	if (k == 0)
		return bb->ip;
	if (bb->offs32)
		return bb->ip + bb->offs32[k - 1];
	return bb->ip + bb->offs[k - 1];
}

/* hwt_dec_tsc_to_perf() of a valid conversion c (the records' hot path:
 * no call). */
static inline uint64_t hwt_dec_tsc_perf(const struct hwt_dec_tconv *c, uint64_t tsc)
{
	uint64_t quot, rem;

	if (c->time_shift >= 64)
		return tsc;
	quot = tsc >> c->time_shift;
	rem = tsc & ((1ull << c->time_shift) - 1);
	return c->time_zero + quot * c->time_mult + ((rem * c->time_mult) >> c->time_shift);
}

/* Index of the instruction at ip in bb, or -1. */
int hwt_dec_bb_index(const struct hwt_dec_bb *bb, uint64_t ip);

/* Number of blocks decoded so far (ids are < this). */
uint32_t hwt_dec_bb_count(const struct hwt_dec_icache *icache);
/* The block with a given id, or NULL. */
const struct hwt_dec_bb *hwt_dec_bb_by_id(const struct hwt_dec_icache *icache, uint32_t id);

int hwt_dec_bb_table_alloc(struct hwt_dec_bb_table **table);
void hwt_dec_bb_table_free(struct hwt_dec_bb_table *table);

/* ------------------------------------------------------------------------ */
/* The decoder object                                                        */

/* The block decoder's state at a PSB (libipt's enabled flag, IP,
 * execution mode and transaction state), which a segment takes from the
 * end of the one before it, as libipt does when it decodes on across the
 * PSB (ptxed). A PSB+ alone does not tell it: a PSB+ written while packet
 * generation is off may still carry a FUP (a TIP.PGE to the same address
 * follows), and it need not carry MODE.Exec. After a decode error libipt
 * synchronizes at the next PSB afresh: `known` is false then (and at the
 * stream's start or after lost data), and the segment starts as
 * pt_blk_sync_set() starts it. */
struct seg_state {
	bool known;
	bool enabled;
	bool spec;    /* in a transaction (MODE.TSX) */
	uint8_t mode; /* enum hwt_dec_mode */
	uint64_t ip;  /* where decoding goes on (enabled), or libipt's
		       * expected resume address (disabled; 0: none) */
};

struct hwt_dec_flow; /* phase 2 state: threads, stacks, profile (flow.c) */

struct hwt_dec {
	struct hwt_dec_config cfg;
	struct hwt_dec_icache *icache;
	struct pt_config ptcfg; /* base libipt config (no buffer) */
	int errata_err;		/* pt_cpu_errata() result (< 0: report) */
	bool errata_reported;
	struct hwt_dec_sink *sinks;
	size_t nsinks;
	uint32_t want;		    /* union of the sinks' wants */
	struct hwt_dec_context ctx; /* default context (own reference) */
	struct hwt_dec_stats stats;
	struct hwt_dec_flow *flow;
	uint64_t stream_pos; /* bytes of the stream given so far */
	uint64_t base_pos;   /* stream offset of the buffer being
			      * decoded */
	uint8_t *carry;	     /* undecoded end of the stream given
			      * so far (hwt_dec_feed) */
	size_t carry_len, carry_cap;
	/* Bytes without a PSB, reported as one gap once it ends. */
	uint64_t nosync_pos, nosync_size;
	/* Where the last replayed segment left libipt's block decoder: the
	 * next segment starts there (not known: a fresh sync). */
	struct seg_state state;
	/* Decoding threads' caches kept between calls (run.c). */
	pthread_mutex_t workers_lock;
	struct hwt_dec_workers *workers;
};

/* Frees the kept workers (hwt_dec_free). */
void hwt_dec_workers_free(struct hwt_dec *dec);

/* Delivers a record to every sink that wants it. Returns 0 or the first
 * negative sink return. */
int hwt_dec_emit(struct hwt_dec *dec, struct hwt_dec_rec *rec);

/* The context for a query (hook or default). */
int hwt_dec_context_at(struct hwt_dec *dec, const struct hwt_dec_context_query *q,
		       struct hwt_dec_context *out);
/* The first size of the arrays by block id (the profile's counts, a
 * worker's): a block per 32 bytes of the stream given so far, 64 to 1,024
 * entries. A short trace does not clear 1,024 entries of each (dyn_test:
 * 12 KB, ids below 512); a longer one starts at 1,024 as before (starting
 * every decode lower, the arrays' doublings through realloc() ended in
 * fresh pages: 56a8b8a). */
static inline size_t hwt_dec_ids_first(const struct hwt_dec *dec)
{
	size_t n = 64;

	while (n < 1024 && n * 32 < dec->stream_pos)
		n *= 2;
	return n;
}

/* Whether the fast engine counts status updates instead of logging them
 * (seg.h count_status): no sink wants events and no sideband hook asks. */
static inline bool hwt_dec_counts_status(const struct hwt_dec *dec)
{
	return !(dec->want & HWT_DEC_WANT(HWT_DEC_REC_EVENT)) && !dec->cfg.context;
}

/* Whether two contexts name the same thread, run and code. */
static inline bool hwt_dec_context_same(const struct hwt_dec_context *a,
					const struct hwt_dec_context *b)
{
	return a->image == b->image && a->pid == b->pid && a->tid == b->tid && a->run == b->run;
}

/* The context every timed query in [tsc_lo, tsc_hi] gets (the span hook's
 * answer, the default context where it names no image). Returns 1 and
 * fills *out, 0 when the span is not stable or there is no span hook, or a
 * negative error. */
int hwt_dec_context_span(struct hwt_dec *dec, uint64_t tsc_lo, uint64_t tsc_hi,
			 struct hwt_dec_context *out);

/* Converts libipt's event to ours. */
void hwt_dec_event_from_pt(struct hwt_dec_event *out, const struct pt_event *ev);
enum hwt_dec_branch hwt_dec_branch_from_iclass(enum pt_insn_class iclass);
enum hwt_dec_mode hwt_dec_mode_from_pt(enum pt_exec_mode mode);

/* Engines. Each decodes one buffer (the whole given piece of stream). */
int hwt_dec_run_ptxed(struct hwt_dec *dec, const uint8_t *buf, size_t len);

#endif /* HWT_DECODER_DEC_INT_H */
