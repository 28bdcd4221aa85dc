/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptflow/ptflow.h - exact reports from a decoded Intel PT flow: the whole
 * contract of the ptflow module.
 *
 * The decoder (decoder/decoder.h) delivers, per thread, every block of
 * instructions executed, every call and return with the call depth and
 * running instruction counts. A struct hwt_ptf consumes those records (it
 * is a struct hwt_dec_sink) and builds what users ask of an exact trace:
 *
 *   PROFILE   the instructions (or the time) of every record attributed to
 *             the symbolized call stack it ran under, as samples of a
 *             struct hwt_rep_profile: flame graphs SVG/HTML, folded stacks
 *             and pprof then come from the report module unchanged. Not
 *             sampled: every instruction is counted once.
 *   CALLS     per function: exact call counts, instructions executed in it
 *             (self) and in its calls (inclusive), and with timing a
 *             latency distribution (power-of-two histogram) with totals.
 *   TIMELINE  every call as a span on its thread's timeline (Chrome trace
 *             JSON through struct hwt_rep_timeline), output bounded.
 *   BRANCHES  one function, instruction by instruction (FreeBSD DTrace's
 *             kinst view without probe effect): executions, conditional
 *             branches taken / not taken, indirect branch targets,
 *             disassembly with file:line, and the distinct call stacks that
 *             reached one instruction, with counts.
 *
 * Why a module of its own: it is the one place that knows both the
 * decoder's records and the report module's objects; the report module
 * stays free of libipt, and the decoder of symbols and reports.
 *
 * Stacks. A thread's stack is built from the decoder's CALL and RETURN
 * records: each open call is a frame named by the function it entered (the
 * call's target), so a frame stays its function's even while it runs code
 * it jumped to (a tail call). Below the calls the decoder saw is the code
 * the thread ran when its trace began (depth 0), named by the function that
 * holds the current instruction; what called it is not in the trace, never
 * invented. A return out of that level (from a frame older than the trace)
 * moves the depth-0 function to the return's target, and proves the thread
 * had callers: its stacks then have a root frame "[before the trace]". A
 * thread traced from its start (a program from its exec) has no such
 * frame.
 *
 * Functions. One definition in every view and count: a function ran when
 * a call entered it or instructions ran in it at depth 0 (hwt_ptf_stats.
 * functions; the rows of the calls table with HWT_PTF_PRINT_ALL).
 *
 * Weights. Instructions: the decoder's running count per thread (exact).
 * Time: perf clock nanoseconds between records, which the decoder estimates
 * from TSC/MTC packets, and from CYC packets (cycle-accurate mode) when the
 * trace has them; without CYC the time of a block is interpolated between
 * timing packets, so per-function times are coarse (use instructions).
 *
 * Usage:
 *
 *   struct hwt_ptf_config cfg;
 *   hwt_ptf_config_init(&cfg);
 *   cfg.aspace = as;                  // symbolizes (pid, time, ip)
 *   cfg.views = HWT_PTF_PROFILE | HWT_PTF_CALLS;
 *   cfg.profile = prof;               // receives the stacks at finish
 *   err = hwt_ptf_alloc(&ptf, &cfg);
 *   hwt_ptf_sink(ptf, &sink);  hwt_dec_add_sink(dec, &sink);
 *   ... decode ...
 *   err = hwt_ptf_finish(ptf);        // closes open calls, fills profile
 *   hwt_ptf_calls_print(ptf, HWT_REP_FMT_TEXT, HWT_PTF_PRINT_HIST, &buf);
 *   hwt_ptf_free(ptf);
 *
 * One object is used by one thread at a time (the decoder delivers records
 * in order from the thread that calls it). No globals, no printing.
 */
#ifndef HWT_PTFLOW_PTFLOW_H
#define HWT_PTFLOW_PTFLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hwt.h"
#include "decoder/decoder.h"
#include "report/report.h"

struct hwt_sym_aspace;

/* Views (bits of hwt_ptf_config.views). */
#define HWT_PTF_PROFILE	 (1u << 0)
#define HWT_PTF_CALLS	 (1u << 1)
#define HWT_PTF_TIMELINE (1u << 2)
#define HWT_PTF_BRANCHES (1u << 3)

enum hwt_ptf_weight {
	HWT_PTF_WEIGHT_INSNS = 0, /* instructions (exact); event "instructions" */
	HWT_PTF_WEIGHT_TIME = 1,  /* perf clock ns; event "time-ns" (records
				   * without time weigh nothing) */
};

struct hwt_ptf_config {
	size_t size;	/* sizeof(struct hwt_ptf_config) */
	uint32_t views; /* HWT_PTF_* bits */
	/* Symbolizes addresses of (pid, time); borrowed: it, and the symbol
	 * cache it opens objects in, must outlive the object (names point
	 * into them). NULL: functions are named by their entry address. */
	struct hwt_sym_aspace *aspace;

	/* PROFILE: stacks are added to this profile (borrowed) by
	 * hwt_ptf_finish(), one sample per distinct (thread, stack) with its
	 * weight. */
	struct hwt_rep_profile *profile;
	enum hwt_ptf_weight weight; /* default INSNS */

	/* TIMELINE: calls are added to this timeline (borrowed) as spans. */
	struct hwt_rep_timeline *timeline;
	uint64_t timeline_min; /* calls shorter than this (ns, or
				* instructions without time) are not
				* spans of their own: a run of
				* consecutive short calls from one
				* caller merges into one span "f (N
				* calls)" ("f, g, ... (N calls)" when
				* several functions alternate).
				* Default 0: every call */
	uint64_t timeline_max; /* at most this many spans; the rest are
				* counted in hwt_ptf_stats.spans_dropped
				* and an instant marks where the cut
				* began. Default 1000000 */

	/* BRANCHES: the function (as its symbol is named; demangled), and
	 * optionally one instruction of it. */
	const char *branch_func; /* copied */
	int64_t branch_off;	 /* >= 0: show only the instruction at
				  * this offset; default -1: all */
	/* Call stacks reaching one instruction of branch_func: its offset
	 * (>= 0), or its runtime address (stacks_addr, used when nonzero).
	 * Default -1 / 0: none. */
	int64_t stacks_off;
	uint64_t stacks_addr;

	struct hwt_logger log;
	/* The trace comes from hwtrace's PT emulator: the calls table says
	 * that its times are the emulator's clock (defined by instruction
	 * counts, not measured), the branches view that its addresses are
	 * where qemu-user loaded the code. Default false. */
	bool emulated;
};

/* Zeroes cfg and sets its size and defaults. */
HWT_API void hwt_ptf_config_init(struct hwt_ptf_config *cfg);

struct hwt_ptf;

/* Allocates a flow consumer. cfg is copied (branch_func too).
 * Returns 0, -HWT_EINVAL (cfg refused by hwt_opts_copy, PROFILE without a profile,
 * TIMELINE without a timeline, BRANCHES without branch_func), -ENOMEM. */
HWT_API int hwt_ptf_alloc(struct hwt_ptf **ptf, const struct hwt_ptf_config *cfg);
/* Accepts NULL. */
HWT_API void hwt_ptf_free(struct hwt_ptf *ptf);

/* Takes one decoder record (in decode order). Records of several threads
 * may interleave: each keeps its own stack. Allocates only for what was
 * not seen before (a thread, a function, a stack, a wider block).
 * Returns 0, -HWT_EINVAL (NULL arguments; after hwt_ptf_finish), -ENOMEM. */
HWT_API int hwt_ptf_rec(struct hwt_ptf *ptf, const struct hwt_dec_rec *rec);

/* Fills *sink so that a decoder delivers its records to ptf (every record
 * type). With the PROFILE view alone weighted by instructions, the sink
 * also takes calls and returns in batches (struct hwt_dec_sink.batch):
 * the same stacks and weights, without the cost of full records and their
 * times. */
HWT_API void hwt_ptf_sink(struct hwt_ptf *ptf, struct hwt_dec_sink *sink);

/* Decoder flags (HWT_DEC_F_*) that the views of cfg allow: without
 * BRANCHES, HWT_DEC_F_BASE_BLOCKS (blocks only where depth-0 code is
 * named; instructions come from the records' running count), which makes
 * decoding several times cheaper. The records of one thread must then
 * come from one decoder, or from ptsession (which continues the count
 * across a thread's streams). */
HWT_API uint32_t hwt_ptf_dec_flags(const struct hwt_ptf_config *cfg);

/* The trace ended: calls still open are closed at their thread's last time
 * (counted in hwt_ptf_stats.open_frames, not as completed calls), spans
 * go to the timeline, stacks to the profile. Call once, before the
 * accessors below. Returns 0, -HWT_EINVAL (called twice), -ENOMEM. */
HWT_API int hwt_ptf_finish(struct hwt_ptf *ptf);

struct hwt_ptf_stats {
	uint64_t records;
	uint64_t insns; /* instructions attributed */
	uint64_t threads;
	uint64_t functions;	   /* functions that ran (entered by a call, or
				    * running instructions at depth 0), the
				    * same whatever the views */
	uint64_t unsymbolized;	   /* ... of which without a name */
	uint64_t calls, returns;   /* CALL records; frames completed by RETURN */
	uint64_t unknown_returns;  /* returns from frames older than the trace */
	uint64_t unwound;	   /* frames left without their own return */
	uint64_t lost_frames;	   /* frames dropped when a gap reset a stack */
	uint64_t open_frames;	   /* frames still open at the end */
	uint64_t gaps;		   /* GAP records: trace lost, flow resumed */
	uint64_t lost_gaps;	   /* ... of which trace data lost (AUX) */
	uint64_t lost_bytes;	   /* ... and their bytes */
	uint64_t overflows;	   /* ... of which the CPU's overflows (OVF) */
	uint64_t too_deep;	   /* calls beyond 65536 frames, or depths
				    * jumping up by over 256: not followed */
	uint64_t nodes;		   /* distinct (thread, stack) paths */
	bool timed;		   /* records carried perf clock time */
	uint64_t spans;		   /* TIMELINE: spans added */
	uint64_t spans_merged;	   /* ... short calls merged into them */
	uint64_t spans_dropped;	   /* ... calls beyond timeline_max */
	uint64_t branch_instances; /* BRANCHES: other functions of the same
				    * name (another object or address),
				    * ignored: the first one seen is shown */
};

/* Counters so far (final after hwt_ptf_finish). */
HWT_API void hwt_ptf_stats(const struct hwt_ptf *ptf, struct hwt_ptf_stats *stats);

/* ------------------------------------------------------------------------ */
/* CALLS                                                                     */

struct hwt_ptf_call_stats {
	const char *function;	   /* never NULL: the name, "[object]" or
				    * "[unknown]" (0xADDR without aspace) */
	const char *object;	   /* NULL when unknown */
	uint64_t addr;		   /* entry (runtime address) where first seen;
				    * 0 for depth-0-only code */
	uint64_t calls;		   /* calls entering it seen in the trace */
	uint64_t returns;	   /* of those, completed (their return or an
				    * unwind seen): the latency counts */
	uint64_t self_insns;	   /* instructions run with it innermost,
				    * in calls and at depth 0 alike */
	uint64_t incl_insns;	   /* instructions of its completed calls,
				    * callees included (a recursive call
				    * counts at each level, as DTrace's) */
	bool timed;		   /* the times below are valid */
	uint64_t self_ns, incl_ns; /* as the instructions, perf clock ns */
	uint64_t min_ns, max_ns;   /* of completed calls */
	const uint64_t *buckets;   /* HWT_REP_QUANTIZE_BUCKETS counts of the
				    * completed calls' inclusive latency (ns,
				    * or instructions when !timed); NULL when
				    * there are none */
};

/* Number of functions (after hwt_ptf_finish). */
HWT_API size_t hwt_ptf_calls_count(const struct hwt_ptf *ptf);
/* Function i (0 .. count-1, most self instructions first). Strings and
 * buckets stay valid for the lifetime of ptf (and its aspace). Returns 0
 * or -HWT_EINVAL. */
HWT_API int hwt_ptf_calls_get(const struct hwt_ptf *ptf, size_t i, struct hwt_ptf_call_stats *out);
/* The function named name (the first with that label). Returns 0,
 * -HWT_ENOSYM or -HWT_EINVAL. */
HWT_API int hwt_ptf_calls_find(const struct hwt_ptf *ptf, const char *name,
			       struct hwt_ptf_call_stats *out);

#define HWT_PTF_PRINT_HIST (1u << 0) /* latency histograms per function */
#define HWT_PTF_PRINT_ALL                                                                          \
	(1u << 1) /* functions that ran but were never                                             \
		   * called too (depth-0 code) */

/* Appends the calls table (TEXT: a table and DTrace-style histograms;
 * JSON: one object) to out. max_rows 0: all. Returns 0, -HWT_EINVAL
 * (another format, before finish), -ENOMEM. */
HWT_API int hwt_ptf_calls_print(const struct hwt_ptf *ptf, enum hwt_rep_format format,
				unsigned int flags, size_t max_rows, struct hwt_buf *out);

/* ------------------------------------------------------------------------ */
/* BRANCHES                                                                  */

struct hwt_ptf_target {
	uint64_t target; /* runtime address */
	uint64_t count;
	const char *function; /* symbol of target, NULL when unknown */
	uint64_t offset;      /* target - that function's start */
};

struct hwt_ptf_insn_stats {
	uint64_t ip;	 /* runtime address */
	uint64_t offset; /* ip - function start */
	uint64_t count;	 /* executions */
	bool decoded;	 /* insn is valid (code was available) */
	struct hwt_dec_insn insn;
	const char *file; /* source of ip, NULL when unknown */
	uint32_t line;
	uint64_t taken, not_taken;	      /* conditional branches */
	size_t ntargets;		      /* indirect branches: distinct targets */
	const struct hwt_ptf_target *targets; /* most frequent first */
};

struct hwt_ptf_branch_info {
	bool found; /* the function ran in the trace */
	const char *function, *object;
	uint64_t start, size; /* runtime range */
	uint64_t calls;	      /* calls into it */
	uint64_t insns;	      /* instructions executed in its range */
	size_t ninsns;	      /* instruction rows */
};

/* What BRANCHES found (after hwt_ptf_finish). Returns 0 or -HWT_EINVAL
 * (no BRANCHES view). */
HWT_API int hwt_ptf_branches_info(const struct hwt_ptf *ptf, struct hwt_ptf_branch_info *info);
/* Row i in address order: every instruction of the function (decoded from
 * the code the trace ran), executed or not, or only the one at branch_off.
 * Returns 0 or -HWT_EINVAL. */
HWT_API int hwt_ptf_branches_get(const struct hwt_ptf *ptf, size_t i,
				 struct hwt_ptf_insn_stats *out);
/* Appends the per-instruction table (TEXT or JSON) to out. Returns 0,
 * -HWT_EINVAL, -HWT_ENOSYM (the function never ran), -ENOMEM. */
HWT_API int hwt_ptf_branches_print(const struct hwt_ptf *ptf, enum hwt_rep_format format,
				   struct hwt_buf *out);

/* The call stacks that reached the stacks instruction (after finish):
 * their number in *n and the executions they add up to in *total (either
 * may be NULL). Returns 0 or -HWT_EINVAL (no BRANCHES view). */
HWT_API int hwt_ptf_stacks_count(const struct hwt_ptf *ptf, size_t *n, uint64_t *total);
/* Stack i (most frequent first): its frames as frame ids of
 * hwt_ptf_dict() (leaf first; the root "[before the trace]" last, when the
 * thread had callers before its trace) through *frames,
 * valid for the lifetime of ptf, and how often it reached the instruction
 * in *count. Returns the number of frames, or -HWT_EINVAL (i out of
 * range). */
HWT_API int hwt_ptf_stacks_get(const struct hwt_ptf *ptf, size_t i, const uint32_t **frames,
			       uint64_t *count);
/* The dict that frame ids of stacks (and of the profile's samples) live
 * in: the profile's, or one of ptf's own. */
HWT_API const struct hwt_rep_dict *hwt_ptf_dict(const struct hwt_ptf *ptf);
/* Appends the stacks DTrace's way (@[stack()] = count(): a frame a line,
 * leaf first, the count under it; least frequent first) or as JSON.
 * Returns 0, -HWT_EINVAL, -ENOMEM. */
HWT_API int hwt_ptf_stacks_print(const struct hwt_ptf *ptf, enum hwt_rep_format format,
				 struct hwt_buf *out);

#endif /* HWT_PTFLOW_PTFLOW_H */
