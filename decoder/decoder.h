/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/decoder.h - hwtrace's Intel PT decoder: the whole contract of the
 * decoder module.
 *
 * The decoder turns Intel PT packet bytes into the control flow of the traced
 * threads: runs of instructions (blocks), calls and returns with per-thread
 * call stacks, trace events (enable/disable, interrupts, overflows, ...) and
 * gaps, with timestamps on the perf clock. It is pure (STYLE.md habit 8): PT
 * bytes, code images (file sections or memory copies), the recorded CPU and the
 * time conversion come in through this API; it reads no trace files itself.
 *
 * Objects:
 *   struct hwt_dec_icache  code of all processes: image sections (shared with
 *                          libipt's image section cache) and decoded basic
 *                          blocks. Thread-safe; share one per session.
 *   struct hwt_dec_image   one address space (a process at some point in
 *                          time): sections mapped at virtual addresses.
 *                          Reference counted. Treat it as immutable once
 *                          handed to a decoder (build a new one for a
 *                          later mmap/exec), except from the context hook
 *                          of a one-thread decode (libipt-sb's way: a
 *                          changed image gets a new id, so nothing cached
 *                          for the old one is used).
 *   struct hwt_dec         decodes one PT stream (one CPU's or one thread's
 *                          AUX data) and delivers records to sinks.
 *
 * Engines: the default FAST engine walks a cache of decoded basic blocks with
 * its own packet parser (libxdc's idea); any PSB segment it cannot decode with
 * certainty (rare packets, errata, errors) is decoded by libipt's block
 * decoder instead, so its output is by construction the LIBIPT engine's
 * output. PTXED reproduces `ptxed` exactly (libipt blocks, continuous decode).
 *
 * Usage:
 *
 *   hwt_dec_icache_alloc(&ic, &log);
 *   hwt_dec_image_alloc(&img, ic, "app");
 *   hwt_dec_image_add_file(img, "/usr/bin/app", 0x1000, 0x5000, 0x401000);
 *   hwt_dec_config_init(&cfg);  cfg.cpu = ...;  cfg.tconv = ...;
 *   hwt_dec_alloc(&dec, &cfg, ic);
 *   hwt_dec_set_context(dec, pid, tid, img);     // or cfg.context callback
 *   hwt_dec_add_sink(dec, &sink);                // records, in order
 *   err = hwt_dec_decode(dec, pt_bytes, len);    // any number of times
 *   hwt_dec_stats(dec, &stats);
 *   hwt_dec_free(dec); hwt_dec_image_put(img); hwt_dec_icache_free(ic);
 */
#ifndef HWT_DECODER_DECODER_H
#define HWT_DECODER_DECODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hwt.h"

/* ------------------------------------------------------------------------ */
/* CPU, timing                                                               */

enum hwt_dec_cpu_vendor {
	HWT_DEC_CPU_UNKNOWN = 0, /* decode by the spec, no errata */
	HWT_DEC_CPU_INTEL = 1,
};

/* The CPU the trace was recorded on; selects libipt's errata workarounds. */
struct hwt_dec_cpu {
	uint32_t vendor; /* enum hwt_dec_cpu_vendor */
	uint16_t family;
	uint8_t model;
	uint8_t stepping;
};

/* Parses "none" or "F/M[/S]" (decimal or 0x-hex) into *cpu.
 * Returns 0 or -HWT_EINVAL. */
HWT_API int hwt_dec_cpu_parse(struct hwt_dec_cpu *cpu, const char *text);

/* Conversion between TSC and the perf clock, as the kernel publishes it in
 * perf_event_mmap_page (time_shift, time_mult, time_zero). */
struct hwt_dec_tconv {
	bool valid;
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
};

/* perf clock nanoseconds of a TSC value (the kernel's formula). With an
 * invalid conversion, returns tsc unchanged. */
HWT_API uint64_t hwt_dec_tsc_to_perf(const struct hwt_dec_tconv *conv, uint64_t tsc);
/* The first TSC value whose perf clock time is at or after time (the
 * inverse of the above, rounded up). */
HWT_API uint64_t hwt_dec_perf_to_tsc(const struct hwt_dec_tconv *conv, uint64_t time);

/* ------------------------------------------------------------------------ */
/* Code: image section cache and images                                      */

struct hwt_dec_icache;
struct hwt_dec_image;

/* Allocates an empty image section cache. log (may be NULL) is copied.
 * Returns 0 and stores it in *icache, or -ENOMEM / -HWT_ELIB. */
HWT_API int hwt_dec_icache_alloc(struct hwt_dec_icache **icache, const struct hwt_logger *log);
/* Frees the cache; every image and decoder using it must be gone. Accepts
 * NULL. */
HWT_API void hwt_dec_icache_free(struct hwt_dec_icache *icache);

/* Allocates an empty image (one reference, owned by the caller) that reads
 * its sections through icache (which must outlive it). name is copied and
 * may be NULL. Returns 0, -HWT_EINVAL or -ENOMEM. */
HWT_API int hwt_dec_image_alloc(struct hwt_dec_image **image, struct hwt_dec_icache *icache,
				const char *name);
/* Takes another reference. Returns image. */
HWT_API struct hwt_dec_image *hwt_dec_image_get(struct hwt_dec_image *image);
/* Drops a reference; the last one frees the image. Accepts NULL. */
HWT_API void hwt_dec_image_put(struct hwt_dec_image *image);

/* Maps size bytes of file path, starting at file offset, at vaddr (size
 * UINT64_MAX: to the end of the file; the section is clipped to the file).
 * A new section replaces the parts of older ones it overlaps, as mmap does.
 * The file is checked lazily, at the image's first lookup (a decode that
 * reads no code opens no file), and must stay unchanged while decoding:
 * a file that cannot be mapped then (missing, not a regular file, shorter
 * than offset) is named in the icache's log (an error) and its addresses
 * have no code, as where nothing is mapped (the decode's gaps). Callers
 * that want that error up front (a path the user named) check the file
 * with hwt_dec_file_check() first. Returns 0, or -HWT_EINVAL (bad
 * arguments: size 0), -ENOMEM. */
HWT_API int hwt_dec_image_add_file(struct hwt_dec_image *image, const char *path, uint64_t offset,
				   uint64_t size, uint64_t vaddr);
/* Checks what hwt_dec_image_add_file() checks at the image's first
 * lookup: path is a regular file that holds offset; *size (UINT64_MAX: to
 * the end of the file) is clipped to the file. Returns 0, -HWT_EINVAL (not
 * a regular file, offset beyond its end, size 0) or -errno of stat()
 * (-ENOENT, -EACCES, ...). */
HWT_API int hwt_dec_file_check(const char *path, uint64_t offset, uint64_t *size);
/* Maps a copy of size bytes of memory at vaddr (e.g. the vDSO, JIT code).
 * name (may be NULL) labels it in messages. Errors as above. */
HWT_API int hwt_dec_image_add_mem(struct hwt_dec_image *image, const void *bytes, size_t size,
				  uint64_t vaddr, const char *name);
/* Adds all sections of src to image (fork). Returns 0 or -ENOMEM. */
HWT_API int hwt_dec_image_copy(struct hwt_dec_image *image, const struct hwt_dec_image *src);
/* The image's name ("" when none). */
HWT_API const char *hwt_dec_image_name(const struct hwt_dec_image *image);
/* Reads up to size bytes of code at vaddr (stops at the end of a section).
 * Returns the bytes read, or -HWT_ENOSYM when nothing is mapped at vaddr. */
HWT_API int hwt_dec_image_read(const struct hwt_dec_image *image, uint64_t vaddr, void *buf,
			       size_t size);

/* ------------------------------------------------------------------------ */
/* Instructions                                                              */

enum hwt_dec_mode {
	HWT_DEC_MODE_UNKNOWN = 0,
	HWT_DEC_MODE_16 = 1,
	HWT_DEC_MODE_32 = 2,
	HWT_DEC_MODE_64 = 3,
};

/* What the last instruction of a block does to control flow. */
enum hwt_dec_branch {
	HWT_DEC_BR_NONE = 0,   /* no branch: the block was ended by an event,
				* a section end or the end of trace */
	HWT_DEC_BR_COND,       /* conditional near jump (Jcc, LOOP, JCXZ) */
	HWT_DEC_BR_JUMP,       /* direct near jump */
	HWT_DEC_BR_IND_JUMP,   /* indirect near jump */
	HWT_DEC_BR_CALL,       /* direct near call */
	HWT_DEC_BR_IND_CALL,   /* indirect near call */
	HWT_DEC_BR_RETURN,     /* near return */
	HWT_DEC_BR_FAR_CALL,   /* SYSCALL, SYSENTER, INT n, far CALL, VMCALL */
	HWT_DEC_BR_FAR_RETURN, /* SYSRET, SYSEXIT, IRET, far RET, VMLAUNCH/RESUME */
	HWT_DEC_BR_FAR_JUMP,   /* far JMP */
	HWT_DEC_BR_PTWRITE,    /* PTWRITE (not a branch; ends libipt blocks) */
	HWT_DEC_BR_OTHER,      /* libipt-level blocks (PTXED engine) only: a
				* block ended after a non-branch instruction */
};

/* A decoded instruction. */
struct hwt_dec_insn {
	uint64_t ip;
	uint8_t size;
	uint8_t branch;	    /* enum hwt_dec_branch */
	uint8_t mode;	    /* enum hwt_dec_mode */
	uint8_t has_target; /* target is set: a direct branch, or XBEGIN
			     * (whose displacement names its abort handler) */
	uint8_t raw[15];
	uint64_t target;
};

/* Decodes the instruction at ip in image. Returns 0, -HWT_ENOSYM (not
 * mapped) or -HWT_EDECODE (not a valid instruction). */
HWT_API int hwt_dec_insn_decode(const struct hwt_dec_image *image, uint64_t ip,
				enum hwt_dec_mode mode, struct hwt_dec_insn *insn);

/* Formats the instruction's disassembly (Intel syntax) into buf. Returns the
 * length, or a negative error as above. */
HWT_API int hwt_dec_insn_format(const struct hwt_dec_insn *insn, char *buf, size_t size);

/* A basic block in the decoded-code cache: ninsn instructions starting at
 * ip, ending at the first branch (or a section end). Blocks live as long as
 * their icache. */
struct hwt_dec_bb;

struct hwt_dec_bb_info {
	uint64_t ip;
	uint64_t end_ip; /* address of the last instruction */
	uint32_t ninsn;
	uint32_t id;	/* dense index, unique per icache */
	uint8_t branch; /* enum hwt_dec_branch of the last instruction */
	uint8_t mode;
	uint64_t target;      /* direct branch target */
	uint64_t fallthrough; /* address after the last instruction */
};

HWT_API void hwt_dec_bb_info(const struct hwt_dec_bb *bb, struct hwt_dec_bb_info *info);
/* Writes the addresses of the block's first min(n, ninsn) instructions to
 * ips. Returns the number written. */
HWT_API size_t hwt_dec_bb_insns(const struct hwt_dec_bb *bb, uint64_t *ips, size_t n);

/* ------------------------------------------------------------------------ */
/* Decoder output: records                                                   */

enum hwt_dec_rec_type {
	HWT_DEC_REC_BLOCK = 1, /* a run of instructions executed */
	HWT_DEC_REC_CALL,      /* a call (near, far, or an async entry) */
	HWT_DEC_REC_RETURN,    /* a return popped a frame */
	HWT_DEC_REC_EVENT,     /* a trace event, see enum hwt_dec_event_type */
	HWT_DEC_REC_GAP,       /* trace lost or undecodable; decoding resumed */
	HWT_DEC_REC_SWITCH,    /* the trace now belongs to another thread */
	HWT_DEC_REC_NOTE,      /* a sideband note (hwt_dec_context.note) at
				* its place in the record order */
};

#define HWT_DEC_WANT(type) (1u << (type))
#define HWT_DEC_WANT_ALL   0xffffffffu

/* Record flags. */
#define HWT_DEC_RF_TIME                                                                            \
	(1u << 0)			 /* tsc (and time, with a valid                            \
					  * conversion) are set */
#define HWT_DEC_RF_SPECULATIVE (1u << 1) /* executed inside a transaction */
#define HWT_DEC_RF_TRUNCATED                                                                       \
	(1u << 2)		     /* block: the last instruction                                \
				      * crosses a section end */
#define HWT_DEC_RF_PARTIAL (1u << 3) /* block: stopped before its branch */
#define HWT_DEC_RF_TAKEN                                                                           \
	(1u << 4)			   /* block: its conditional branch                        \
					    * was taken */
#define HWT_DEC_RF_STATUS	 (1u << 5) /* event: status update only (PSB+) */
#define HWT_DEC_RF_IP_SUPPRESSED (1u << 6) /* event: its ip is not known */
#define HWT_DEC_RF_UNKNOWN_FRAME                                                                   \
	(1u << 7) /* return: the frame began before                                                \
		   * the trace (or a gap) */
#define HWT_DEC_RF_ASYNC                                                                           \
	(1u << 8) /* call/return: an interrupt entry,                                              \
		   * or the far return leaving it */
#define HWT_DEC_RF_UNWOUND                                                                         \
	(1u << 9) /* return: the frame was left                                                    \
		   * without its own return (a return                                              \
		   * to an older frame: longjmp,                                                   \
		   * exceptions, or returns lost in an                                             \
		   * overflow), or it returned while                                               \
		   * tracing was off (an address                                                   \
		   * filter: tracing resumed at its                                                \
		   * return address); closed here */
#define HWT_DEC_RF_NEW_RUN                                                                         \
	(1u << 10) /* switch: the thread's run                                                     \
		    * changed (hwt_dec_context.run):                                               \
		    * its depth restarts at 0 */
/* cpu is set: the record comes from a per-CPU stream (ptsession sets it; the
 * decoder alone does not know the CPU) */
#define HWT_DEC_RF_CPU (1u << 11)

enum hwt_dec_event_type {
	HWT_DEC_EV_ENABLED = 1,	   /* tracing (re)started at ip */
	HWT_DEC_EV_DISABLED,	   /* tracing stopped after the last block */
	HWT_DEC_EV_ASYNC_DISABLED, /* tracing stopped asynchronously at `at` */
	HWT_DEC_EV_ASYNC_BRANCH,   /* interrupt/exception from `at` to ip */
	HWT_DEC_EV_PAGING,	   /* CR3 changed (payload) */
	HWT_DEC_EV_ASYNC_PAGING,
	HWT_DEC_EV_OVERFLOW,  /* internal buffer overflow: trace lost */
	HWT_DEC_EV_EXEC_MODE, /* execution mode now `mode` */
	HWT_DEC_EV_TSX,	      /* transaction begin/commit/abort */
	HWT_DEC_EV_STOP,      /* TraceStop */
	HWT_DEC_EV_VMCS,
	HWT_DEC_EV_ASYNC_VMCS,
	HWT_DEC_EV_EXSTOP,
	HWT_DEC_EV_MWAIT,
	HWT_DEC_EV_PWRE,
	HWT_DEC_EV_PWRX,
	HWT_DEC_EV_PTWRITE, /* payload */
	HWT_DEC_EV_TICK,    /* time advanced (only with HWT_DEC_F_TICK) */
	HWT_DEC_EV_CBR,	    /* core:bus ratio */
	HWT_DEC_EV_MNT,
	HWT_DEC_EV_END, /* the trace ended while tracing was enabled */
};

/* An event. ip/at are valid per type (see libipt's pt_event); fields not
 * meaningful for a type are zero. */
struct hwt_dec_event {
	uint32_t type;				   /* enum hwt_dec_event_type */
	uint64_t ip;				   /* enabled/resume ip, branch target, event ip */
	uint64_t at;				   /* async_disabled/async_branch: source ip */
	uint64_t payload;			   /* cr3, vmcs base, ptwrite/mnt payload, cbr */
	uint32_t mode;				   /* exec mode: enum hwt_dec_mode */
	uint8_t resumed;			   /* enabled: resumed where it was disabled */
	uint8_t non_root;			   /* paging: vmx non-root */
	uint8_t tsx;				   /* 0 commit, 1 begin, 2 abort */
	uint8_t pwr_state, pwr_sub_state, pwr_hw;  /* pwre */
	uint8_t pwrx_last, pwrx_deepest, pwrx_why; /* pwrx: bit0 int,
						    * bit1 store,
						    * bit2 hw */
	uint32_t mwait_hints, mwait_ext;
};

enum hwt_dec_gap_kind {
	HWT_DEC_GAP_ERROR = 1, /* decoding failed; resumed at the next PSB */
	HWT_DEC_GAP_SYNC,      /* no synchronization point found */
	HWT_DEC_GAP_OVERFLOW,  /* the CPU dropped trace (OVF) */
	HWT_DEC_GAP_LOST,      /* bytes missing from the stream (AUX loss) */
	HWT_DEC_GAP_CONFIG,    /* configuration problem (e.g. unknown CPU) */
};

/* One record. Pointers inside are valid only during the sink call. Of the
 * union u only the member of the record's type is set: the rest of its
 * bytes and the padding are undefined (the hot paths build CALL and RETURN
 * records in place and leave them), so read fields, never compare or
 * write a record byte-wise. */
struct hwt_dec_rec {
	uint32_t type;	  /* enum hwt_dec_rec_type */
	uint32_t flags;	  /* HWT_DEC_RF_* */
	int32_t pid, tid; /* -1 when unknown */
	uint32_t depth;	  /* the thread's call depth after this record */
	int32_t cpu;	  /* with HWT_DEC_RF_CPU: the CPU it ran on */
	uint64_t insns;	  /* the thread's instructions so far, this
			   * record's included (canonical engines): a
			   * consumer attributes the difference to the
			   * previous record's stack */
	uint64_t tsc;	  /* estimated TSC (HWT_DEC_RF_TIME) */
	uint64_t time;	  /* perf clock ns, when the conversion is valid */
	uint64_t offset;  /* PT stream offset of the decoder (libipt's
			   * pt_blk_get_offset after the record) */
	union {
		struct {
			uint64_t ip, end_ip; /* first and last instruction */
			uint64_t next_ip;    /* where control went, or 0 */
			uint32_t ninsn;
			uint8_t branch; /* enum hwt_dec_branch */
			uint8_t mode;
			const struct hwt_dec_bb *bb;	   /* canonical engines: the
							    * cached block (NULL:
							    * PTXED); expand any
							    * block with
							    * hwt_dec_block_insns */
			const struct hwt_dec_image *image; /* code it ran */
			const uint8_t *raw;		   /* truncated last insn bytes */
			uint8_t raw_size;
		} block;
		struct {
			uint64_t from;	   /* the call instruction (async: the
					    * interrupted ip) */
			uint64_t to;	   /* the callee */
			uint64_t ret_addr; /* where it should return to */
			uint8_t branch;	   /* enum hwt_dec_branch (0: async) */
		} call;
		struct {
			uint64_t from;	   /* the return instruction */
			uint64_t to;	   /* where it returned to */
			uint64_t func;	   /* entry of the frame it left (0:
					    * unknown frame) */
			uint64_t call_tsc; /* when that frame was entered */
			uint64_t insns;	   /* instructions executed in the frame,
					    * callees included */
			uint8_t branch;
		} ret;
		struct hwt_dec_event event;
		struct {
			uint32_t kind;	  /* enum hwt_dec_gap_kind */
			int err;	  /* hwtrace error code (negative) */
			const char *what; /* libipt's text for the error */
			uint64_t ip;	  /* where decoding stopped, or 0 */
			uint64_t size;	  /* bytes skipped (0: unknown) */
			bool sync;	  /* raised while synchronizing */
		} gap;
		struct {
			int32_t prev_pid, prev_tid; /* may be the thread
						     * itself (a new run) */
			uint64_t prev_insns;	    /* the previous thread's insns
						     * count here (its instructions
						     * after its last record) */
			uint64_t run;		    /* hwt_dec_context.run */
		} sw;
		struct {
			uint64_t cookie; /* the hook's hwt_dec_context.note */
		} note;
	} u;
};

/* The instructions of a block record, of any engine: writes the addresses
 * of its first min(n, ninsn) instructions, in the order they ran, to ips.
 * A canonical engine's block is a cached basic block; a PTXED-engine block
 * (libipt's) runs on across direct calls and jumps and is walked in
 * rec->u.block.image. Every consumer of blocks expands them with this.
 * Returns the number written: min(n, ninsn), or fewer when the walk
 * reached code it cannot read or decode (ips[ret - 1] is that
 * instruction's address); -HWT_EINVAL when rec is not a block record or ips
 * is NULL with n > 0. Allocates nothing. */
HWT_API int hwt_dec_block_insns(const struct hwt_dec_rec *rec, uint64_t *ips, size_t n);

/* One CALL or RETURN record of a batch (struct hwt_dec_batch), in the
 * few fields a consumer of call stacks reads. */
struct hwt_dec_callret {
	uint64_t ip;	/* CALL: u.call.to (the callee); RETURN:
			 * u.ret.to (where it returned to) */
	uint64_t insns; /* rec->insns, less the batch's insns_base */
	uint32_t depth; /* rec->depth */
	uint32_t flags; /* rec->flags: HWT_DEC_RF_ASYNC,
			 * HWT_DEC_RF_UNWOUND (never HWT_DEC_RF_TIME) */
	uint8_t type;	/* HWT_DEC_REC_CALL or HWT_DEC_REC_RETURN */
	uint8_t branch; /* u.call.branch or u.ret.branch */
};

/* Calls and returns of one thread, in order, without their own times:
 * entry i stands for the record {type, flags, pid, tid, depth, insns_base
 * + e[i].insns, u.call.to or u.ret.to = e[i].ip, branch}, its other
 * fields unknown. The batch's time is that of its last entry (to look up
 * code mapped by then: no entry ran later). Returns from a frame that
 * began before the trace (HWT_DEC_RF_UNKNOWN_FRAME) still come as
 * records. The array is valid only during the sink call. */
struct hwt_dec_batch {
	int32_t pid, tid;
	uint64_t insns_base;
	const struct hwt_dec_callret *e;
	size_t n;
	uint32_t flags; /* HWT_DEC_RF_TIME: tsc (and time) are set */
	uint64_t tsc;	/* estimated TSC of the last entry */
	uint64_t time;	/* perf clock ns, when the conversion is valid */
};

/* Call trees (struct hwt_dec_tree): a sink's node of a call stack, by its
 * own numbering; HWT_DEC_NODE_NONE stands for "not here". */
#define HWT_DEC_NODE_NONE UINT32_MAX

/* Where a thread is, for struct hwt_dec_tree: its count of instructions
 * and depth as a record there would carry them. */
struct hwt_dec_tree_at {
	int32_t pid, tid;
	uint32_t depth;
	uint32_t flags; /* HWT_DEC_RF_TIME: tsc (and time) are set */
	uint64_t insns;
	uint64_t tsc;
	uint64_t time; /* perf clock ns, when the conversion is valid */
};

/* What the decoder counted for one node of a sink between two calls of
 * hwt_dec_tree.counts: instructions that ran in it (not in its callees)
 * and calls that entered it (beyond the one hwt_dec_tree.child stood for). */
struct hwt_dec_tree_count {
	uint64_t self;
	uint64_t calls;
};

struct hwt_dec_tree_counts {
	const struct hwt_dec_tree_count *node; /* indexed by node, n of them */
	size_t n;
	uint64_t calls, returns, unwound; /* totals of the calls and returns
					   * the tree stood for */
	uint64_t held;			  /* records base() would have had
					   * (hwt_dec_tree_base.hold) ... */
	uint64_t held_unknown;		  /* ... of which returns out of
					   * frames older than the trace */
};

/* What base() names (struct hwt_dec_tree). */
struct hwt_dec_tree_base {
	uint32_t node; /* the depth-0 code's node; HWT_DEC_NODE_NONE: rec
			* comes as a record */
	bool hold;     /* base() names this node for this thread every
			* time again for a block of the same basic block
			* (hwt_dec_bb_info.id) or a return out of an older
			* frame to the same address, whatever came between,
			* and changes nothing else but its counts and the
			* time it has seen: the decoder may keep them */
};

/* A sink's call tree (optional, with batch): the decoder keeps, in its own
 * stack frames, the sink's node of each frame, and counts instructions
 * and calls per node itself; a call asks the sink only for a
 * (parent node, callee address) it has not seen (a cache of the decoder),
 * a return asks nothing. For a flame graph weighted by instructions, a
 * call costs a cache probe and a return a pop.
 *
 * Protocol, per thread: at a call the decoder asks top() for the node of
 * the thread's innermost frame, the sink's stack being as its records and
 * batches left it and the instructions up to at->insns counted as a record
 * at at->depth would count them. HWT_DEC_NODE_NONE: the call and what
 * follows go on as batches. Otherwise, from there on, each call is
 * child(): the node of a call to `to` from node parent, the call itself
 * counted by the sink (HWT_DEC_NODE_NONE: the decoder goes on with batches
 * from before this call; nothing is counted). Returns pop the decoder's
 * frames. Before any other record or batch of the thread, at a thread
 * change, when a return leaves the frame top() named, and at the end of
 * each segment the decoder calls sync(): the thread's stack is now the
 * chain of node (at at->depth, the depth of node's frame), its count
 * at->insns, everything before it counted (at->tsc/time: the time of the
 * last call or return it stood for, when known). After the end of a
 * segment's sync the decoder may go on from that node without top()
 * (the sink's stack being as that sync left it). counts() hands over what
 * was counted, at the end of each hwt_dec_decode(), _feed() or _finish().
 * A sync() before another record counts the instructions only up to the
 * last call or return it stood for: the record carries the rest (as after
 * a batch). Events (EVENT records other than overflows) that carry no
 * instructions to the sink (none ran since the thread's last record,
 * batch entry or sync) or come in tree mode (its counts and stack stand
 * for them) are not delivered to a sink with a tree: they change no
 * stack (TIP.PGD/PGE at each crossing of an address filter, PSB+ status);
 * the calls and returns they imply come as usual.
 * base (optional; NULL: these are records): with HWT_DEC_F_BASE_BLOCKS,
 * what changes the depth-0 code of a thread at depth 0 in tree mode from
 * depth 0 (top() named its depth-0 code's node): a block it runs there, or
 * a return out of a frame older than the trace (HWT_DEC_RF_UNKNOWN_FRAME).
 * A thread at depth 0 enters tree mode at such a block too (top() asked
 * at the count its last record, batch entry or sync left the sink, then
 * base() for the block). rec is the record it would have been (its time
 * converted as records' are; rec->insns is the decoder's count, which the
 * sink's stack does not have: nothing is counted by it). out->node: the
 * node of the depth-0 code now (a block's, or the code the return went
 * to; the same node when the return's target is unknown), which the
 * thread's stack now stands on; tree mode goes on from it. The
 * instructions since the last call, return or such record count as the
 * record would have carried them: a block's (its own included) to the
 * node, a return's to the code it left. HWT_DEC_NODE_NONE: the thread
 * leaves tree mode and rec comes as a record. With out->hold, the decoder
 * may keep the answer and not call base() again for the same block (in
 * the same image: the decoder's image of the block last given to base())
 * or return target of the thread: it counts as base() would and hands
 * over how many it kept (counts().held). The last one kept goes to base()
 * after all before the thread's next base() or sync() (so that the sink's
 * depth-0 code and time are as if each had come).
 * A negative return stops decoding with that error. */
struct hwt_dec_tree {
	int (*top)(void *ctx, const struct hwt_dec_tree_at *at, uint32_t *node);
	int (*child)(void *ctx, const struct hwt_dec_tree_at *at, uint32_t parent, uint64_t to,
		     uint32_t *node);
	int (*sync)(void *ctx, const struct hwt_dec_tree_at *at, uint32_t node);
	int (*counts)(void *ctx, const struct hwt_dec_tree_counts *counts);
	int (*base)(void *ctx, const struct hwt_dec_rec *rec, struct hwt_dec_tree_base *out);
};

/* A consumer of records. Records arrive in decode order from the thread
 * calling hwt_dec_decode(), also when segments are decoded in parallel. A
 * negative return stops decoding with that error.
 *
 * batch (optional): the sink takes calls and returns without their times
 * or the fields struct hwt_dec_callret leaves out (a flame graph weighted
 * by instructions needs no more). When a decoder's only sink has it, the
 * decoder delivers those records in batches, in their place among the
 * other records (which still come through rec), and does not look up
 * their times; with other sinks, everything comes through rec. */
struct hwt_dec_sink {
	size_t size;   /* sizeof(struct hwt_dec_sink) */
	uint32_t want; /* HWT_DEC_WANT(type) bits; 0 means all */
	int (*rec)(void *ctx, const struct hwt_dec_rec *rec);
	void *ctx;
	int (*batch)(void *ctx, const struct hwt_dec_batch *batch);
	/* tree (optional, with batch): the sink's call tree, used when the
	 * sink is the decoder's only one; NULL: batches. Remains the
	 * caller's; must stay valid while the decoder lives. */
	const struct hwt_dec_tree *tree;
	/* recs (optional): n records in a row, as n calls of rec would
	 * bring them (the array is valid only during the call). When the
	 * sink is the decoder's only one and takes no batches, the decoder
	 * hands over runs of calls and returns of one thread this way (up
	 * to a few hundred at a time): one call into the sink for many
	 * records. A negative return stops decoding; the records after the
	 * one that failed are not the sink's. */
	int (*recs)(void *ctx, const struct hwt_dec_rec *recs, size_t n);
};

/* ------------------------------------------------------------------------ */
/* Decoder                                                                   */

enum hwt_dec_engine {
	HWT_DEC_ENGINE_FAST = 0,   /* block cache + own packet walk, libipt for
				    * what it cannot decode with certainty */
	HWT_DEC_ENGINE_LIBIPT = 1, /* libipt's block decoder per PSB segment */
	HWT_DEC_ENGINE_PTXED = 2,  /* libipt's blocks as ptxed shows them:
				    * continuous decode, no call stacks */
};

/* Decoder flags. */
#define HWT_DEC_F_TICK	      (1u << 0) /* tick events when time changes */
#define HWT_DEC_F_END_ON_CALL (1u << 1) /* PTXED: end blocks after calls */
#define HWT_DEC_F_END_ON_JUMP (1u << 2) /* PTXED: end blocks after jumps */
#define HWT_DEC_F_PROFILE                                                                          \
	(1u << 3) /* count executions per basic block                                              \
		   * and branch outcomes (see                                                      \
		   * hwt_dec_profile_next) */
#define HWT_DEC_F_BASE_BLOCKS                                                                      \
	(1u << 4) /* block records only while the                                                  \
		   * thread has no known frame (depth                                              \
		   * 0): the code no call names; the                                               \
		   * rest counts in rec->insns (saves                                              \
		   * most records for consumers of                                                 \
		   * call stacks) */

/* The thread and address space that trace at a given time belongs to. */
struct hwt_dec_context {
	int32_t pid, tid;
	struct hwt_dec_image *image; /* borrowed; must stay valid until the
				      * decoder is freed or the context
				      * changes */
	uint64_t note;		     /* hook output: nonzero asks for a
				      * HWT_DEC_REC_NOTE record with this
				      * cookie where the query was made in
				      * the record order (to interleave
				      * sideband output with the flow) */
	uint64_t run;		     /* the thread's run (0 unless the
				      * hook says): when it changes, the
				      * thread ran elsewhere since (another
				      * CPU's stream) and its frames here
				      * are stale: they are forgotten and a
				      * SWITCH record with
				      * HWT_DEC_RF_NEW_RUN marks the place
				      * (the caller carries the stack over
				      * from the other stream); records'
				      * insns count from 0 again */
};

/* What the decoder knows when it asks the sideband hook for the context:
 * the time, and the event just decoded (NULL at the start of a segment). */
struct hwt_dec_context_query {
	uint64_t tsc;
	bool has_tsc;			   /* false: time unknown */
	const struct hwt_dec_event *event; /* NULL: none */
	bool ip_suppressed;		   /* the event's ip is unknown */
	bool status_update;		   /* the event restates state (PSB+) */
};

/* Sideband hook: fills *out with the context current at the query's time
 * (out->image NULL: none known yet, the decoder keeps the default context
 * of hwt_dec_set_context). Called at the start of every segment, after
 * every event and whenever time advances at a branch (libipt's tick;
 * except where a span companion, below, says the answer stays the same),
 * in decode order; with cfg.threads > 1 possibly from several threads at
 * once. Returns 0 or a negative error. */
typedef int (*hwt_dec_context_fn)(void *ctx, const struct hwt_dec_context_query *q,
				  struct hwt_dec_context *out);

/* The hook's optional companion: returns 1 and fills *out when the hook
 * answers *out (note 0) to every query with a time (has_tsc) in
 * [tsc_lo, tsc_hi], whatever its event; 0 when it may answer anything
 * else; or a negative error. The fast engine decodes a segment whose time
 * span is stable without asking at every branch where time advanced
 * (libipt's ticks); without a span function, segments with a hook are
 * decoded by libipt. */
typedef int (*hwt_dec_context_span_fn)(void *ctx, uint64_t tsc_lo, uint64_t tsc_hi,
				       struct hwt_dec_context *out);

struct hwt_dec_addr_filter {
	uint64_t addr_cfg; /* IA32_RTIT_CTL.ADDRn_CFG, 4 bits each */
	uint64_t addr_a[4], addr_b[4];
};

struct hwt_dec_config {
	size_t size;				 /* sizeof(struct hwt_dec_config) */
	struct hwt_dec_cpu cpu;			 /* selects errata; vendor 0: none */
	uint32_t cpuid_0x15_eax, cpuid_0x15_ebx; /* CTC:TSC ratio (MTC) */
	uint8_t mtc_freq;			 /* IA32_RTIT_CTL.MTCFreq */
	uint8_t nom_freq;			 /* MSR_PLATFORM_INFO[15:8] (CYC) */
	struct hwt_dec_addr_filter filter;
	struct hwt_dec_tconv tconv;	      /* TSC -> perf clock */
	uint32_t engine;		      /* enum hwt_dec_engine; default FAST */
	uint32_t flags;			      /* HWT_DEC_F_* */
	unsigned int threads;		      /* decode segments on this many threads;
					       * 0 or 1: in the calling thread */
	size_t window;			      /* segments in flight when parallel;
					       * default 64 (bounds memory) */
	size_t segment_bytes;		      /* a segment runs from a PSB to the
					       * first PSB this many bytes on or
					       * more (the PSBs inside decode as
					       * libipt decodes them in a whole
					       * stream); default 4096 (amortizes
					       * the set-up per segment: see
					       * docs/decoder.md); 1: every PSB
					       * starts one */
	hwt_dec_context_fn context;	      /* optional sideband hook */
	hwt_dec_context_span_fn context_span; /* optional, with context */
	void *context_ctx;
	struct hwt_logger log;
};

/* Zeroes cfg and sets its size and defaults. */
HWT_API void hwt_dec_config_init(struct hwt_dec_config *cfg);

struct hwt_dec;

/* Allocates a decoder using icache (which must outlive it). cfg is copied.
 * Returns 0 and stores the decoder, or -HWT_EINVAL (bad config),
 * -ENOMEM. An unknown CPU is not an error: it is reported as a
 * HWT_DEC_GAP_CONFIG record when decoding starts, and decoding goes on
 * without errata (as ptxed does). */
HWT_API int hwt_dec_alloc(struct hwt_dec **dec, const struct hwt_dec_config *cfg,
			  struct hwt_dec_icache *icache);
/* Frees the decoder. Accepts NULL. */
HWT_API void hwt_dec_free(struct hwt_dec *dec);

/* Sets the context used when there is no context hook (or it fails): trace
 * decoded from now on belongs to thread tid of pid, running image (a
 * reference is taken). Returns 0 or -HWT_EINVAL. */
HWT_API int hwt_dec_set_context(struct hwt_dec *dec, int32_t pid, int32_t tid,
				struct hwt_dec_image *image);

/* Adds a sink (copied). Returns 0, -HWT_EINVAL or -ENOMEM. */
HWT_API int hwt_dec_add_sink(struct hwt_dec *dec, const struct hwt_dec_sink *sink);

/* Decodes len bytes of PT data (borrowed for the call) that end the stream
 * given so far: hwt_dec_feed() then hwt_dec_finish(). Call again for more
 * of the same stream; per-thread call stacks carry over. Corrupt trace is
 * not an error: it gives GAP records and decoding goes on at the next PSB.
 * Returns 0, a sink's negative return, -ENOMEM, or -HWT_EINTERNAL. */
HWT_API int hwt_dec_decode(struct hwt_dec *dec, const uint8_t *buf, size_t len);

/* Streaming: appends len bytes (copied as needed) to the stream and decodes
 * every PSB segment that is complete; the rest waits for more bytes or
 * hwt_dec_finish(). Memory stays bounded by the largest segment (the PTXED
 * engine keeps everything until hwt_dec_finish). The records are those of
 * one hwt_dec_decode() of the whole stream, however it is cut. Returns as
 * hwt_dec_decode(). */
HWT_API int hwt_dec_feed(struct hwt_dec *dec, const uint8_t *buf, size_t len);
/* Decodes what hwt_dec_feed() kept: the stream ends here (for now). */
HWT_API int hwt_dec_finish(struct hwt_dec *dec);

/* Reports that size bytes (0: unknown) of the stream were lost after what
 * was given (which is finished first): emits a GAP record. Pieces that are
 * not contiguous must be separated by it. Returns 0 or a sink's error. */
HWT_API int hwt_dec_lost(struct hwt_dec *dec, uint64_t size);

/* Counters; every report should print the losses. */
struct hwt_dec_stats {
	uint64_t insns;		    /* instructions decoded */
	uint64_t blocks;	    /* block records (libipt blocks for PTXED) */
	uint64_t bytes;		    /* PT bytes given */
	uint64_t segments;	    /* PSB segments decoded */
	uint64_t segments_fallback; /* ... of which by libipt (FAST engine) */
	uint64_t segments_failed;   /* ... in which decoding failed (gaps) */
	uint64_t gaps;		    /* GAP records */
	uint64_t gap_bytes;	    /* PT bytes skipped by gaps */
	uint64_t overflows;	    /* OVF packets */
	uint64_t calls, returns;
	uint64_t unknown_returns; /* returns from frames older than the trace */
	uint64_t unwound;	  /* RETURN records of frames left without
				   * their own return (HWT_DEC_RF_UNWOUND) */
	uint64_t events;
	uint64_t threads;  /* threads seen */
	uint64_t ipt_runs; /* libipt block decoder runs over a segment or
			    * part of one (FAST: where it declined) */
};

HWT_API void hwt_dec_stats(const struct hwt_dec *dec, struct hwt_dec_stats *stats);

/* The losses of a decoded trace in the words every PT output uses (script's
 * summary, the calls table's footer, the warnings of report, flame and
 * branches), so that they count the same everywhere: "3 gaps (2 from lost
 * trace, 92470 bytes lost), 1 overflow". gaps: GAP records; lost_gaps and
 * lost_bytes: those of kind HWT_DEC_GAP_LOST and their sizes; overflows:
 * OVF packets. Writes at most len bytes (NUL-terminated when len > 0) and
 * returns the length the whole text needs (as snprintf). */
HWT_API int hwt_dec_losses_str(uint64_t gaps, uint64_t lost_gaps, uint64_t lost_bytes,
			       uint64_t overflows, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Profile (HWT_DEC_F_PROFILE): per basic block execution counts, kept
 * without per-block callbacks. Expand to instructions with
 * hwt_dec_bb_insns() for the functions of interest.                        */

struct hwt_dec_bb_count {
	const struct hwt_dec_bb *bb;
	uint64_t count;		/* complete executions */
	uint64_t partial;	/* executions stopped early (events, gaps) */
	uint64_t partial_insns; /* instructions of those */
	uint64_t taken;		/* conditional branch: went to the target
				 * (count - taken fell through). A jcc
				 * whose target is the next instruction
				 * counts as taken: the flow cannot tell */
};

/* Iterates over blocks executed at least once: start with *iter = 0.
 * Returns 1 and fills *out, or 0 at the end. Order: by block id. */
HWT_API int hwt_dec_profile_next(const struct hwt_dec *dec, size_t *iter,
				 struct hwt_dec_bb_count *out);

/* Indirect branch targets seen from the block ending at `from` (its last
 * instruction): fills up to n (target, count) pairs, most frequent first.
 * Returns the number of distinct targets. */
struct hwt_dec_target_count {
	uint64_t target;
	uint64_t count;
};
HWT_API size_t hwt_dec_profile_targets(const struct hwt_dec *dec, uint64_t from,
				       struct hwt_dec_target_count *out, size_t n);

#endif /* HWT_DECODER_DECODER_H */
