/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptflow/ptf_int.h - the ptflow module's internals, shared by flow.c (the
 * per-record state machine: threads, stacks, functions) and views.c (what
 * hwt_ptf_finish() turns that state into, and the printers). Not part of
 * the contract: nothing outside ptflow/ includes it.
 */
#ifndef HWT_PTFLOW_PTF_INT_H
#define HWT_PTFLOW_PTF_INT_H

#include "ptflow/ptflow.h"
#include "symbolize/symbolize.h"

#define PTF_NONE UINT32_MAX
/* Deepest stack kept per thread: deeper calls (runaway recursion, or a
 * corrupt depth) are counted in hwt_ptf_stats.too_deep, not followed. */
#define PTF_MAX_DEPTH 65536

/* Open-addressing hash map from a pair of 64-bit keys to a 32-bit value.
 * Grows at half full; used for every "seen before?" question of the hot
 * path, so a repeated key costs one probe sequence and no allocation. */
struct ptf_map_ent {
	uint64_t a, b;
	uint32_t val; /* PTF_NONE: empty slot */
};

struct ptf_map {
	struct ptf_map_ent *e;
	size_t cap, n; /* cap is a power of two (or 0) */
};

void ptf_map_fini(struct ptf_map *m);
/* The value of (a, b), or PTF_NONE. */
uint32_t ptf_map_get(const struct ptf_map *m, uint64_t a, uint64_t b);
/* Stores (a, b) -> val (val != PTF_NONE). Returns 0 or -ENOMEM. */
int ptf_map_put(struct ptf_map *m, uint64_t a, uint64_t b, uint32_t val);

/* One entry of the call cache: a call to `to` from the frame of node
 * parent + 1 (0: empty) entered function func, node node. Direct-mapped:
 * a repeated call costs one probe instead of the address and the node
 * lookups. */
struct ptf_ccache {
	uint64_t to;
	uint32_t parent1, func, node;
};

#define PTF_CCACHE_BITS 12

/* A function: what frames, calls and self counts are kept by. Keyed by
 * (object index, object address of its start): the same function in two
 * processes (fork) is one. */
struct ptf_func {
	uint32_t object;	 /* aspace object index; PTF_NONE: unmapped */
	uint64_t key;		 /* object address of the start; UINT64_MAX: a
				  * mapped object without a symbol there */
	const char *name;	 /* symbol (sym cache), NULL when unknown */
	const char *path;	 /* mapped object (aspace), NULL when unknown */
	const char *label;	 /* what reports show (never NULL) */
	struct hwt_sym_obj *obj; /* for file:line; NULL */
	uint64_t start, size;	 /* runtime range where first resolved
				  * (start 0, size 0: unknown) */
	uint64_t bias;		 /* runtime address - object address */
	int32_t pid;		 /* process it was first resolved in */
	bool kernel;
	bool target;	/* BRANCHES: the function shown */
	uint32_t frame; /* dict frame id, PTF_NONE until needed */
	/* CALLS */
	uint64_t entry; /* first call target seen */
	uint64_t calls, returns;
	uint64_t incl_insns;
	uint64_t timed_returns, incl_ns, min_ns, max_ns;
	uint64_t self_insns, self_ns; /* summed from the nodes at finish */
	uint64_t *hist_ns;	      /* HWT_REP_QUANTIZE_BUCKETS, lazily */
	uint64_t *hist_insns;
};

/* A node of the call tree: one distinct stack of one thread. */
struct ptf_node {
	uint32_t parent; /* PTF_NONE: a thread's root ("[before the trace]") */
	uint32_t func;	 /* PTF_NONE for roots */
	uint32_t thread;
	uint64_t self_insns, self_ns;
};

/* One level of a thread's stack. Level 0 is the root (code whose callers
 * the trace never saw), level 1 the code at decoder depth 0, level d + 1
 * the frame of decoder depth d. */
struct ptf_frame {
	uint32_t node, func;
	uint64_t entry_insns, entry_time;
	bool entry_timed;
	/* TIMELINE: a run of short calls from this frame, merged into one
	 * span until a call that is not short breaks the run; the first two
	 * functions of the run name it. */
	uint32_t mfunc, mfunc2, mcount;
	bool mmore;
	uint64_t mbegin, mend;
};

struct ptf_thread {
	int32_t pid, tid;
	uint32_t root; /* node */
	struct ptf_frame *f;
	size_t n, cap;	     /* levels in use (>= 2) */
	uint64_t insns;	     /* instructions so far */
	uint64_t last_count; /* rec->insns of its last record */
	uint64_t last_time;  /* perf clock ns of the last timed record */
	bool has_time;
	bool older_frames; /* a return out of a frame older than the trace:
			    * the thread had callers before its trace began
			    * (stacks get the root frame) */
	/* The depth-0 code before the current one: 1 + its function (0:
	 * none) and its node (set_base()). */
	uint32_t prev_base1, prev_base_node;
};

/* BRANCHES: one instruction of the shown function. */
struct ptf_row {
	uint64_t ip;
	uint64_t count, taken, not_taken;
	bool decoded;
	struct hwt_dec_insn insn;
	const char *file;
	uint32_t line;
	size_t tfirst, ntargets; /* its slice of ptf->tgt_sorted */
};

struct ptf_tgt {
	uint64_t from, target, count;
	struct hwt_ptf_target out;
};

struct ptf_stack {
	uint32_t node;
	uint64_t count;
	size_t first, n; /* its frames in ptf->stack_frames */
};

struct hwt_ptf {
	struct hwt_ptf_config cfg;
	char *branch_func;
	struct hwt_rep_dict *dict; /* the profile's, or own_dict */
	struct hwt_rep_dict *own_dict;
	struct hwt_sym_hint hint;
	bool finished;

	struct ptf_func *funcs;
	size_t nfuncs, capfuncs;
	struct ptf_map func_map; /* (object, key) -> func */
	struct ptf_map addr_map; /* (pid, ip) -> func */
	uint32_t *bb_func;	 /* bb id -> func + 1 (0: not resolved) */
	size_t nbb;

	struct ptf_node *nodes;
	size_t nnodes, capnodes;
	struct ptf_map node_map;   /* (parent, func) -> node */
	struct ptf_ccache *ccache; /* 1 << PTF_CCACHE_BITS, lazily */

	struct ptf_thread *threads;
	size_t nthreads, capthreads;
	struct ptf_map thread_map; /* (pid, tid) -> thread */
	uint32_t last_thread;

	uint64_t *ips; /* block expansion scratch */
	size_t capips;

	/* BRANCHES */
	uint32_t target;	     /* func, PTF_NONE until it ran */
	struct hwt_dec_image *image; /* code of the target (a reference) */
	uint8_t mode;
	uint64_t stacks_ip; /* 0: none */
	struct ptf_row *rows;
	size_t nrows, caprows;
	struct ptf_map row_map; /* (ip, 0) -> row */
	struct ptf_tgt *tgts;
	size_t ntgts, captgts;
	struct ptf_map tgt_map; /* (from, target) -> tgt */
	struct hwt_ptf_target *tgt_sorted;
	size_t shown_first, shown_n; /* rows shown (branch_off) */
	uint64_t target_insns;
	struct ptf_stack *stacks;
	size_t nstacks, capstacks;
	struct ptf_map stack_map; /* (node, 0) -> stack */
	uint32_t *stack_frames;
	uint64_t stacks_total;

	/* CALLS, sorted at finish */
	uint32_t *order;

	char *scratch; /* span names */
	size_t capscratch;
	struct hwt_ptf_stats st;
};

/* Grows *p (elements of size sz) to hold at least need. Returns 0 or
 * -ENOMEM. */
int ptf_grow(void **p, size_t *cap, size_t need, size_t sz);

/* views.c */
int ptf_finish_views(struct hwt_ptf *ptf);
void ptf_free_views(struct hwt_ptf *ptf);
/* Adds a closed call to the timeline (merging short ones into the
 * caller's pending run). */
int ptf_timeline_call(struct hwt_ptf *ptf, struct ptf_thread *t, size_t level, uint64_t end);
/* Emits the caller's pending run of short calls. */
int ptf_timeline_flush(struct hwt_ptf *ptf, struct ptf_thread *t, struct ptf_frame *f);
/* The dict frame of a function (interned on first use). */
int ptf_func_frame(struct hwt_ptf *ptf, uint32_t fi, uint32_t *id);
/* The function at ip in pid (resolved once per address). */
int ptf_resolve(struct hwt_ptf *ptf, int32_t pid, uint64_t time, uint64_t ip, bool entry,
		uint32_t *fi);

#endif /* HWT_PTFLOW_PTF_INT_H */
