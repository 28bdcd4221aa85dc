/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * unwind/unwind.h - call stacks without frame pointers: the caller chain of a
 * sample rebuilt offline from its user registers and a copy of the top of its
 * user stack (what `perf record --call-graph dwarf` and `hwtrace record
 * --call-graph dwarf` store: PERF_SAMPLE_REGS_USER + PERF_SAMPLE_STACK_USER),
 * by interpreting each object's call frame information (CFI): .eh_frame
 * (searched through .eh_frame_hdr's table when there is one) and
 * .debug_frame, from the object or from its separate debug file (found by
 * build-id or .gnu_debuglink when symbolize/ opened it).
 *
 * This header is the whole contract of the unwind module. It sits on the
 * floor of report/: it reads objects through symbolize/'s public API and is
 * used by report/ (the samples reader behind report, script, flame) and
 * probe/ (offline `trace`); the decoder never uses it.
 *
 * Model. An unwinder (struct hwt_unw) owns a table per object it has met
 * (keyed by the struct hwt_sym_obj, which stays owned by its symbolize
 * cache): where the object's CFI is, the sorted table of its FDEs, and a
 * cache of the rules computed at each code address already seen, so that a
 * return address met again in a later sample costs one hash lookup.
 * Walking a stack allocates only for addresses not seen before.
 *
 * What ends a walk (enum hwt_unw_end): the outermost frame (the CFI of
 * _start or a thread's start says there is no caller: a complete stack);
 * code without CFI (hand-written assembly, JIT code), an address in no
 * mapping, memory beyond the copied stack, CFI that is malformed or asks for
 * a register that was not sampled: those end a stack early, and the caller
 * marks it so (report/ appends a "[truncated: ...]" frame). Nothing is
 * guessed: no frame-pointer or stack-scanning heuristics.
 *
 * Signal frames (CIEs with the 'S' augmentation, such as glibc's
 * __restore_rt) are unwound through: the interrupted code's address is an
 * exact address, not a return address (struct hwt_unw_frame.exact).
 *
 * Architectures: x86-64 (perf's register ABI PERF_SAMPLE_REGS_ABI_64).
 *
 * Usage:
 *
 *   struct hwt_unw_config cfg;
 *   hwt_unw_config_init(&cfg);
 *   err = hwt_unw_alloc(&cfg, &u);
 *   per sample:
 *     struct hwt_unw_regs regs;
 *     err = hwt_unw_regs_from_perf(s->regs_user_abi, s->regs_user_mask,
 *                                  s->regs_user, &regs);
 *     struct hwt_unw_stack st = {regs.r[HWT_UNW_RSP], s->stack_user,
 *                                s->stack_user_dyn_size};
 *     n = hwt_unw_walk(u, &regs, &st, find, ctx, frames, max, &res);
 *   hwt_unw_free(u);
 *
 * Threads: an unwinder is used by one thread at a time.
 */
#ifndef HWT_UNWIND_UNWIND_H
#define HWT_UNWIND_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hwt.h"

struct hwt_sym_obj;
struct hwt_unw;

/* The register space: x86-64's DWARF register numbers (System V psABI). */
enum hwt_unw_reg {
	HWT_UNW_RAX = 0,
	HWT_UNW_RDX = 1,
	HWT_UNW_RCX = 2,
	HWT_UNW_RBX = 3,
	HWT_UNW_RSI = 4,
	HWT_UNW_RDI = 5,
	HWT_UNW_RBP = 6,
	HWT_UNW_RSP = 7,
	HWT_UNW_R8 = 8,	  /* ... R15 = 15 */
	HWT_UNW_RIP = 16, /* the return address column */
	HWT_UNW_NREGS = 17,
};

/* Register values; bit i of valid says r[i] is known. */
struct hwt_unw_regs {
	uint64_t r[HWT_UNW_NREGS];
	uint32_t valid;
};

/* The PERF_SAMPLE_REGS_USER mask perf records for --call-graph dwarf on
 * x86-64: every general register, ip, flags, cs and ss (not ds, es, fs,
 * gs, which the kernel does not sample). */
#define HWT_UNW_PERF_REGS_MASK 0xff0fffull

/* Converts perf's sampled user registers (the abi word, the attr's
 * sample_regs_user mask and popcount(mask) u64 values, as in
 * struct hwt_fmt_sample) to the unwinder's registers.
 * Returns 0, -HWT_ENOTSUP (abi PERF_SAMPLE_REGS_ABI_NONE: the sample hit a
 * kernel thread, or not 64-bit x86), -HWT_EFORMAT (ip or sp not sampled),
 * -HWT_EINVAL. */
HWT_API int hwt_unw_regs_from_perf(uint64_t abi, uint64_t mask, const uint8_t *values,
				   struct hwt_unw_regs *out);

/* The copy of the top of the user stack: size bytes read from address
 * start (the sampled sp). */
struct hwt_unw_stack {
	uint64_t start;
	const uint8_t *data;
	size_t size; /* PERF_SAMPLE_STACK_USER's dyn_size */
};

/* What the caller's find callback says about an address. */
struct hwt_unw_module {
	/* The object mapped there, opened through symbolize/; NULL when the
	 * mapping has no object to read (anonymous memory, a missing or
	 * changed file): its code has no CFI. */
	struct hwt_sym_obj *obj;
	uint64_t bias; /* runtime address - object address */
	/* With obj NULL: the mapping names a file that could not be read
	 * (missing, replaced since the recording, not ELF), as opposed to
	 * memory without a file (JIT code). */
	bool unreadable;
};

/* Finds the mapping holding ip in the process being unwound. Returns 0
 * (mod filled), -HWT_ENOSYM (nothing mapped there), or another error, which
 * ends the walk and is returned by hwt_unw_walk(). */
typedef int (*hwt_unw_find_fn)(void *ctx, uint64_t ip, struct hwt_unw_module *mod);

/* Why a walk ended. */
enum hwt_unw_end {
	HWT_UNW_END_OUTERMOST = 0, /* complete: the CFI says no caller */
	HWT_UNW_END_MAX = 1,	   /* the frames array is full */
	HWT_UNW_END_NO_CFI = 2,	   /* code without CFI (end_ip) */
	HWT_UNW_END_STACK = 3,	   /* the CFI needs memory beyond the stack
				      copy (a deeper stack than recorded) */
	HWT_UNW_END_UNMAPPED = 4,  /* an address in no mapping (end_ip) */
	HWT_UNW_END_BAD_CFI = 5,   /* malformed or unsupported CFI, or a
				      frame that does not go up the stack */
	HWT_UNW_END_NO_REGS = 6,   /* a register the CFI needs was not sampled
				      (or no registers at all) */
	HWT_UNW_END_NO_OBJECT = 7, /* the object at end_ip cannot be read */
	HWT_UNW_END_COUNT_
};

/* A short name of an end ("no CFI", "stack copy", ...); never NULL. */
HWT_API const char *hwt_unw_end_name(enum hwt_unw_end end);

/* One frame, innermost first: frames[0] is the sampled ip. */
struct hwt_unw_frame {
	uint64_t ip;
	/* ip is the address of an interrupted instruction (the first frame,
	 * or the frame a signal interrupted), not a return address: look it
	 * up as is, not at ip - 1. */
	bool exact;
	/* ip is in a signal trampoline (glibc's __restore_rt, whose CIE has
	 * the 'S' augmentation): the handler "returns" to its first
	 * instruction, so name it at ip, not at ip - 1. */
	bool signal;
};

struct hwt_unw_result {
	unsigned nframes;
	enum hwt_unw_end end;
	uint64_t end_ip; /* where the walk stopped (the last frame's ip, or
			    the address found without a mapping) */
};

struct hwt_unw_config {
	size_t size;		  /* sizeof(struct hwt_unw_config) */
	struct hwt_logger logger; /* malformed CFI is reported once per object */
	/* Rules cached per object at most (a full cache is emptied and
	 * refilled); 0: 65536. */
	size_t max_rows;
};

/* Zeroes cfg, sets its size and the defaults. */
HWT_API void hwt_unw_config_init(struct hwt_unw_config *cfg);

/* Allocates an unwinder. cfg may be NULL; it is copied. Returns 0,
 * -HWT_EINVAL (cfg refused by hwt_opts_copy), -ENOMEM. */
HWT_API int hwt_unw_alloc(const struct hwt_unw_config *cfg, struct hwt_unw **out);

/* Frees the unwinder and its tables (not the objects). Accepts NULL. */
HWT_API void hwt_unw_free(struct hwt_unw *u);

/* Unwinds one sample: frames[0] is regs' ip (exact), each next one the
 * caller's return address (or the interrupted address past a signal
 * frame). Writes at most max frames and fills *res (end and end_ip).
 * Memory is read only from stack (the copy); the objects' bytes only for
 * their CFI. regs is not changed.
 * Returns the number of frames written (>= 1 when regs has an ip and max >
 * 0), -HWT_EINVAL (NULL arguments), -ENOMEM, or an error of find. */
HWT_API int hwt_unw_walk(struct hwt_unw *u, const struct hwt_unw_regs *regs,
			 const struct hwt_unw_stack *stack, hwt_unw_find_fn find, void *ctx,
			 struct hwt_unw_frame *frames, unsigned max, struct hwt_unw_result *res);

struct hwt_unw_stats {
	uint64_t objects;     /* objects whose CFI was loaded */
	uint64_t fdes;	      /* FDEs listed (scanned, or in .eh_frame_hdr) */
	uint64_t rows;	      /* rules computed (cache misses) */
	uint64_t row_hits;    /* rules found in the cache */
	uint64_t bad_cfi;     /* FDEs or CIEs that failed to parse */
	uint64_t debug_frame; /* objects using .debug_frame */
};

HWT_API void hwt_unw_stats(const struct hwt_unw *u, struct hwt_unw_stats *st);

#endif /* HWT_UNWIND_UNWIND_H */
