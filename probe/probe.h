/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/probe.h - hwtrace's probes and one-liner language: DTrace-shaped
 * programs ("PROBE[,PROBE] /PREDICATE/ { ACTIONS }") compiled to a compact
 * byte code, run per probe hit in user space, aggregating through report/.
 * Probes fire live, from perf events (uprobes, uretprobes, kprobes,
 * kretprobes, tracepoints, timed sampling, software and hardware events),
 * offline, from the samples of a recording, and from decoded Intel PT flow
 * (function entries, returns and instructions, with no probe effect).
 *
 * This header is the whole contract of the probe module.
 *
 * Four objects:
 *
 *   prog     a parsed and checked program: probes, clauses, byte code,
 *            aggregations, thread-local variables. Immutable once built.
 *   rt       the state of one run of a prog: thread-local variables,
 *            aggregations (report/ objects), printf output, symbolization
 *            of ips for func/ustack/kstack, statistics. Fed one probe hit at
 *            a time through hwt_probe_rt_fire(); allocates nothing in the
 *            hot path except when it meets a new key, thread or string.
 *   live     perf events opened for the prog's live probes on a target
 *            (threads or CPUs), with their ring buffers; each drain parses
 *            the samples and fires the rt.
 *   offline  hwt_probe_offline_run() walks a recording (format/'s session)
 *            and fires the rt for every sample that a probe names.
 *
 * Usage, live (what `hwtrace trace` does):
 *
 *   struct hwt_probe_config cfg;
 *   hwt_probe_config_init(&cfg);
 *   struct hwt_probe_diag diag;
 *   err = hwt_probe_prog_alloc(&prog, text, &cfg, &diag);  // diag.column
 *   err = hwt_probe_rt_alloc(&rt, prog, &cfg);
 *   hwt_probe_rt_set_target(rt, child_pid);                // $target
 *   struct hwt_probe_live_config lc;
 *   hwt_probe_live_config_init(&lc);
 *   lc.tids = tids; lc.ntids = n; lc.enable_on_exec = true;
 *   err = hwt_probe_live_open(&live, rt, &lc, &diag);      // perf_event_open
 *   hwt_probe_rt_begin(rt);                                // BEGIN clauses
 *   ... release the target ...
 *   while (running) hwt_probe_live_poll(live, 100);        // fires clauses
 *   hwt_probe_live_drain(live);                            // the rest
 *   hwt_probe_rt_end(rt);                                  // END clauses
 *   hwt_probe_rt_print(rt, HWT_REP_FMT_TEXT, &buf);        // aggregations
 *   hwt_probe_live_close(live); hwt_probe_rt_free(rt); hwt_probe_prog_free(prog);
 *
 * Usage, offline: prog and rt as above, then
 *   err = hwt_probe_offline_run(rt, session, &diag);  // BEGIN, hits, END
 *
 * See docs/trace.md for the language.
 */
#ifndef HWT_PROBE_PROBE_H
#define HWT_PROBE_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hwt.h"

struct hwt_psys; /* perfsys/perfsys.h */

struct hwt_buf;
struct hwt_fmt_session;

/* ------------------------------------------------------------------------ */
/* Configuration and diagnostics                                            */

/* Where printf() output goes: text of len bytes (not NUL-terminated),
 * valid during the call. Returns 0, or a negative error that stops the run
 * (e.g. -EPIPE). */
typedef int (*hwt_probe_output_fn)(void *ctx, const char *text, size_t len);

struct hwt_probe_config {
	size_t size;		    /* sizeof(struct hwt_probe_config) */
	struct hwt_logger log;	    /* diagnostics; may have no fn */
	hwt_probe_output_fn output; /* printf() text; NULL discards it */
	void *output_ctx;
	/* Test seams, as pmc's: sysfs root (NULL "/sys": uprobe/kprobe PMU
	 * types and formats), tracefs root (NULL: /sys/kernel/tracing, then
	 * /sys/kernel/debug/tracing), perf_event_paranoid file (NULL: the
	 * real one), /proc root (NULL "/proc": maps and comm of live
	 * processes). Strings must outlive the objects using them. */
	const char *sysfs_root;
	const char *tracefs_root;
	const char *paranoid_path;
	const char *proc_root;
	/* The perf system calls (NULL: the kernel); outlives the objects. */
	struct hwt_psys *psys;
	/* Limits, as DTrace's -x options (0: the default). Both live paths
	 * keep them, so they drop (and count) the same updates:
	 *   aggsize     bytes of one aggregation's keys and values (4 MiB):
	 *               its key limit is aggsize / (key + value size)
	 *   dynvarsize  bytes of thread-local variables (1 MiB)
	 *   bufsize     bytes of the BPF ring buffer for printf (4 MiB)
	 *   strsize     bytes of a string from the kernel: comm, tracepoint
	 *               strings, str() (64, as bpftrace); longer ones are cut
	 *   nstacks     stacks the BPF stack map holds (4096) */
	uint64_t aggsize, dynvarsize, bufsize;
	uint32_t strsize, nstacks;
	/* Checking only (-n): what this kernel lacks (a struct member, a
	 * type, a kernel symbol) is a warning through log, not an error, so
	 * a script written for another kernel still checks. */
	bool check_only;
	/* bpftrace's output layout even without a "#!...bpftrace" line (a
	 * script named *.bt) */
	bool bpftrace_style;
};

/* Zeroes cfg and sets its size. */
HWT_API void hwt_probe_config_init(struct hwt_probe_config *cfg);

/* Why something failed, for people: msg is one line naming the cause and
 * the fix; column (1-based, in the line `line`, 1-based) points into the
 * program text when the problem is at a place in it (a syntax error, an
 * unknown probe, function or variable), else 0. */
struct hwt_probe_diag {
	int line;
	int column;
	char msg[1024];
};

/* ------------------------------------------------------------------------ */
/* Programs                                                                  */

/* Kinds of probe. */
enum hwt_probe_kind {
	HWT_PROBE_BEGIN = 1,  /* BEGIN: once, before any other probe */
	HWT_PROBE_END,	      /* END: once, after the last */
	HWT_PROBE_UPROBE,     /* uprobe:PATH:FUNC[+OFF] (u:) */
	HWT_PROBE_URETPROBE,  /* uretprobe:PATH:FUNC (ur:) */
	HWT_PROBE_KPROBE,     /* kprobe:FUNC[+OFF] (k:) */
	HWT_PROBE_KRETPROBE,  /* kretprobe:FUNC (kr:) */
	HWT_PROBE_TRACEPOINT, /* SUBSYS:EVENT, tracepoint:SUBSYS:EVENT (t:) */
	HWT_PROBE_PROFILE,    /* profile:hz:N, profile:{s,ms,us}:N */
	HWT_PROBE_SOFTWARE,   /* software:EVENT[:PERIOD] (s:) */
	HWT_PROBE_HARDWARE,   /* hardware:EVENT[:PERIOD] (h:) */
	HWT_PROBE_PT_ENTRY,   /* pt:OBJ:FUNC:entry */
	HWT_PROBE_PT_RETURN,  /* pt:OBJ:FUNC:return */
	HWT_PROBE_PT_INSN,    /* pt:OBJ:FUNC+OFF */
	HWT_PROBE_INTERVAL,   /* interval:{s,ms,us}:N, interval:hz:N: every N
			       * on one CPU (bpftrace's) */
};

/* A probe as the program names it (after parsing). Strings are owned by
 * the prog. */
struct hwt_probe_info {
	enum hwt_probe_kind kind;
	const char *text;   /* as written, e.g. "uprobe:/bin/ls:main+4" */
	const char *object; /* uprobe/pt: the object as written; else NULL */
	const char *func;   /* uprobe/kprobe/pt: function; else NULL */
	uint64_t offset;    /* +OFF, else 0 */
	const char *subsys; /* tracepoint: subsystem; else NULL */
	const char *event;  /* tracepoint: event; software/hardware: event name */
	uint64_t period;    /* profile: hz (freq) or ns period; sw/hw: period */
	bool freq;	    /* period is a frequency (profile:hz) */
	int line, column;   /* where it is written */
};

struct hwt_probe_prog;

/* Parses and checks a program. Tracepoint probes read their format from
 * tracefs now (their fields give args->NAME types); nothing else touches
 * the system (uprobe symbols are looked up when probes are opened).
 * Returns 0 and the prog, or with diag filled (diag may be NULL):
 *   -HWT_EPARSE    a syntax error; diag->column points at it
 *   -HWT_EINVAL    a semantic error: unknown variable or field, a type
 *                  mismatch, an aggregation used with two functions, a
 *                  builtin a probe cannot give (retval at an entry, ...)
 *   -HWT_ENOEVENT  an unknown tracepoint, software or hardware event (the
 *                  message lists the closest names)
 *   -HWT_ENOTSUP   no tracefs to read a tracepoint's format from
 *   -HWT_ETOOBIG   over 1 MiB of program text, 4096 probes, 65536 byte
 *                  code instructions, 256 variables or aggregations
 *   -ENOMEM. */
HWT_API int hwt_probe_prog_alloc(struct hwt_probe_prog **prog, const char *text,
				 const struct hwt_probe_config *cfg, struct hwt_probe_diag *diag);
/* Accepts NULL. */
HWT_API void hwt_probe_prog_free(struct hwt_probe_prog *prog);

/* Probes of the program, 0 .. n-1, in order of first appearance (a probe
 * named in two clauses is listed once). */
HWT_API size_t hwt_probe_prog_nprobes(const struct hwt_probe_prog *prog);
/* Returns 0 or -HWT_EINVAL (i out of range). */
HWT_API int hwt_probe_prog_probe(const struct hwt_probe_prog *prog, size_t i,
				 struct hwt_probe_info *info);

/* Fills diag from an error at byte offset pos of text (line and column
 * 1-based) and the message; a helper the CLI and tests share. */
HWT_API void hwt_probe_diag_at(struct hwt_probe_diag *diag, const char *text, size_t pos,
			       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------------------------ */
/* Runtime                                                                   */

struct hwt_probe_rt;

/* Allocates the state for one run of prog (which must outlive it). cfg is
 * copied (its strings must outlive the rt). Returns 0, -HWT_EINVAL,
 * -ENOMEM. */
HWT_API int hwt_probe_rt_alloc(struct hwt_probe_rt **rt, const struct hwt_probe_prog *prog,
			       const struct hwt_probe_config *cfg);
/* Accepts NULL. */
HWT_API void hwt_probe_rt_free(struct hwt_probe_rt *rt);

/* The value of $target (the launched or attached process; 0 when none). */
HWT_API void hwt_probe_rt_set_target(struct hwt_probe_rt *rt, int32_t pid);
/* Whether the rt may read /proc for the comm and maps of live processes
 * it has seen no sideband for (live runs: true; offline: false). */
HWT_API void hwt_probe_rt_set_live(struct hwt_probe_rt *rt, bool live);

/* Registers: arg0..arg5 (x86-64 SysV: rdi, rsi, rdx, rcx, r8, r9) and
 * retval (rax). */
enum { HWT_PROBE_NREGS = 7, HWT_PROBE_REG_RETVAL = 6 };

/* A probe hit: what the source knows about it. Pointers need only live
 * during hwt_probe_rt_fire(). */
struct hwt_probe_hit {
	int32_t pid, tid; /* -1 when unknown */
	int32_t cpu;	  /* -1 when unknown */
	uint64_t time;	  /* ns (CLOCK_MONOTONIC live; the recording's
			   * clock offline; PT time for PT probes) */
	uint64_t ip;	  /* where it fired; 0 when unknown */
	bool has_regs;	  /* regs[] are valid */
	uint64_t regs[HWT_PROBE_NREGS];
	const uint8_t *raw; /* tracepoint record (PERF_SAMPLE_RAW) */
	uint32_t raw_size;
	/* perf callchain (with PERF_CONTEXT_* markers), leaf first */
	const uint64_t *callchain;
	uint64_t callchain_nr;
	/* An exact stack of ips, leaf first (PT, or unwound from a user
	 * stack): used instead of the callchain, its frames at kernel
	 * addresses for kstack (when it has any), the others for ustack. */
	const uint64_t *stack;
	size_t stack_nr;
	/* The return address at a function's entry (read from the user stack
	 * by entry uprobes): the caller's frame, which a frame-pointer walk
	 * from the entry misses. Put after the leaf in ustack; 0: none. */
	uint64_t entry_ret;
	const char *comm; /* NULL: from sideband or /proc */
	const char *func; /* the function, when the source knows it (PT);
			   * NULL: the probe's, or symbolized from ip */
};

/* Runs BEGIN clauses (once; later calls do nothing). Returns 0, or the
 * output callback's error. Runtime faults (division by zero) are counted
 * in the stats, never returned. */
HWT_API int hwt_probe_rt_begin(struct hwt_probe_rt *rt);
/* Runs the clauses of probe (an index of hwt_probe_prog_probe()) for one
 * hit. Returns 0, -HWT_EINVAL (bad probe), -ENOMEM, or the output
 * callback's error. */
HWT_API int hwt_probe_rt_fire(struct hwt_probe_rt *rt, size_t probe,
			      const struct hwt_probe_hit *hit);
/* Runs END clauses (once). Returns as hwt_probe_rt_begin(). */
HWT_API int hwt_probe_rt_end(struct hwt_probe_rt *rt);
/* True once a clause called exit(). */
HWT_API bool hwt_probe_rt_exited(const struct hwt_probe_rt *rt);

/* Sideband: process and mapping events, so that ips resolve to functions
 * and comms are known (live: from the ring buffers; offline: from the
 * recording's MMAP2/COMM/FORK/EXIT records). path is copied. */
HWT_API int hwt_probe_rt_mmap(struct hwt_probe_rt *rt, int32_t pid, uint64_t start, uint64_t len,
			      uint64_t pgoff, const char *path);
HWT_API int hwt_probe_rt_comm(struct hwt_probe_rt *rt, int32_t pid, int32_t tid, const char *comm,
			      bool exec);
HWT_API int hwt_probe_rt_fork(struct hwt_probe_rt *rt, int32_t ppid, int32_t pid, int32_t tid);
HWT_API void hwt_probe_rt_exit(struct hwt_probe_rt *rt, int32_t pid, int32_t tid);

/* What a run counted: nothing is dropped silently. */
struct hwt_probe_stats {
	uint64_t hits;		   /* probe hits handed to the rt */
	uint64_t filtered;	   /* clause runs whose predicate was false */
	uint64_t faults;	   /* clause runs stopped by a fault (x / 0) */
	uint64_t lost;		   /* hits the kernel dropped (ring overflow) */
	uint64_t bad_samples;	   /* samples that could not be parsed */
	uint64_t unsymbolized;	   /* ips without a function (func, stacks) */
	uint64_t trace_gaps;	   /* pt: probes: PT trace lost or undecodable
				    * (hits inside it are missing) */
	uint64_t trace_gap_bytes;  /* ... PT bytes known to be skipped */
	uint64_t trace_lost_gaps;  /* ... of which trace data lost (AUX) */
	uint64_t trace_lost_bytes; /* ... and their bytes */
	uint64_t trace_overflows;  /* ... of which the CPU's overflows */
	uint64_t agg_drops;	   /* aggregation updates dropped: map full
				    * (hwt_probe_rt_agg_drops() says which) */
	uint64_t self_drops;	   /* self-> assignments dropped: dynvarsize */
	uint64_t ring_drops;	   /* BPF: printf/exit/print records dropped
				    * (ring buffer full: raise bufsize) */
	uint64_t stack_errors;	   /* BPF: stacks not taken (stack map full
				    * or a hash collision: raise nstacks) */
};

HWT_API void hwt_probe_rt_stats(const struct hwt_probe_rt *rt, struct hwt_probe_stats *stats);
/* Adds to the lost count (sources that see PERF_RECORD_LOST). */
HWT_API void hwt_probe_rt_lost(struct hwt_probe_rt *rt, uint64_t n);

/* Updates of aggregation i (in order of first appearance) dropped because
 * it held its limit of keys (aggsize): its name, the drops and the limit.
 * Returns 0, -HWT_EINVAL (i out of range). */
HWT_API int hwt_probe_rt_agg_drops(const struct hwt_probe_rt *rt, size_t i, const char **name,
				   uint64_t *drops, uint64_t *max_keys);

/* Appends every aggregation in order of first appearance in the program
 * (format HWT_REP_FMT_TEXT: DTrace's layout, aggregations separated by a
 * blank line; HWT_REP_FMT_JSON: {"aggregations": [...], "stats": {...}}).
 * An aggregation that was never updated is printed empty. Returns 0,
 * -HWT_EINVAL (other formats), -ENOMEM. */
HWT_API int hwt_probe_rt_print(struct hwt_probe_rt *rt, int format, struct hwt_buf *out);

/* The value of an aggregation with no keys (`@x = count()`), or of key
 * tuple of one integer (`@x[5]`), for tests and tools: count/sum/min/max/
 * avg value, or the total count of a histogram. Returns 0, -HWT_ENOSYM
 * (no such aggregation or key). */
HWT_API int hwt_probe_rt_agg_value(const struct hwt_probe_rt *rt, const char *name,
				   const int64_t *key, size_t nkey, int64_t *value);

/* ------------------------------------------------------------------------ */
/* Live probes                                                               */

/* How live probes run. */
enum hwt_probe_backend {
	/* BPF where it works (a program per probe, aggregating in the
	 * kernel), else the sampling path for that probe, with the reason */
	HWT_PROBE_BACKEND_AUTO = 0,
	/* every probe on perf samples aggregated by hwtrace (--no-bpf) */
	HWT_PROBE_BACKEND_SAMPLING,
};

struct hwt_probe_live_config {
	size_t size; /* sizeof(struct hwt_probe_live_config) */
	enum hwt_probe_backend backend;
	/* Targets: threads (per-thread events, inherited by what they create
	 * unless no_inherit) or CPUs (every task on them); one of the two. */
	const int *tids;
	size_t ntids;
	const int *cpus;
	size_t ncpus;
	bool enable_on_exec; /* start at the target's exec (launch) */
	bool no_inherit;
	/* Ring buffer data pages per buffer (power of two; 0: 128, 512 KiB). */
	size_t pages;
};

HWT_API void hwt_probe_live_config_init(struct hwt_probe_live_config *cfg);

struct hwt_probe_live;

/* Opens a perf event per live probe on every target (uprobes through the
 * uprobe PMU with the function's file offset from symbolize/, kprobes
 * through the kprobe PMU, tracepoints by id, profile as cpu-clock at a
 * frequency or period, software/hardware events through pmc/), one ring
 * buffer per target thread or CPU, sideband (mmap, comm, fork, exit) on
 * the first event of each buffer. Events on threads start enabled (or at
 * exec); on CPUs too. rt (and its prog) must outlive live.
 * Returns 0, or with diag filled:
 *   -HWT_ENOSYM   a function not found in its object (names the object,
 *                 closest symbols, suggests hwtrace addr2line / nm)
 *   -ENOENT       an object that does not exist
 *   -HWT_ENOTSUP  no kprobe PMU (or uprobe PMU) on this kernel; a pt:
 *                 probe (those fire from PT recordings, not live)
 *   -EACCES/-EPERM  perf_event_paranoid or capabilities (pmc/'s
 *                 explanation, with the fix)
 *   -HWT_EINVAL   no targets, or no live probe in the program
 *   -errno from perf_event_open/mmap, -ENOMEM. */
HWT_API int hwt_probe_live_open(struct hwt_probe_live **live, struct hwt_probe_rt *rt,
				const struct hwt_probe_live_config *cfg,
				struct hwt_probe_diag *diag);
/* Disables and closes every event and buffer. Accepts NULL. */
HWT_API void hwt_probe_live_close(struct hwt_probe_live *live);

/* Waits up to timeout_ms (0: not at all) for data, then drains every
 * buffer: records are parsed, ordered by time across buffers (a record is
 * held back until no buffer can still deliver an earlier one) and fed to
 * the rt. Returns the number of hits, or a negative error from the rt. */
HWT_API int hwt_probe_live_poll(struct hwt_probe_live *live, int timeout_ms);
/* Drains everything, holding nothing back (after the target ended).
 * Returns as hwt_probe_live_poll(). */
HWT_API int hwt_probe_live_drain(struct hwt_probe_live *live);
/* Number of perf events open. */
HWT_API size_t hwt_probe_live_nevents(const struct hwt_probe_live *live);

/* The path a live probe takes. */
enum hwt_probe_path {
	HWT_PROBE_PATH_NONE = 0, /* BEGIN, END: run by hwtrace */
	HWT_PROBE_PATH_BPF,	 /* a BPF program aggregates in the kernel */
	HWT_PROBE_PATH_COUNTER,	 /* a perf counter (its clauses only count) */
	HWT_PROBE_PATH_SAMPLING, /* perf samples, aggregated by hwtrace */
};

/* The path of probe i; *why (may be NULL) why it is not BPF when BPF was
 * tried (NULL otherwise), *log (may be NULL) the BPF verifier's log when
 * the verifier refused it (NULL otherwise), *insns the BPF program's
 * instructions. Strings live as long as live. Returns 0 or -HWT_EINVAL. */
HWT_API int hwt_probe_live_path(const struct hwt_probe_live *live, size_t i,
				enum hwt_probe_path *path, const char **why, const char **log,
				size_t *insns);

/* The perf_event_attr that would be opened for probe i of prog (for tests
 * and `--dry-run`): attr must point at a struct perf_event_attr; for
 * uprobes and kprobes, *path_or_sym receives the string config1 points at
 * (owned by the caller: free()). Returns 0, or the errors of
 * hwt_probe_live_open() for that probe. */
HWT_API int hwt_probe_live_attr(const struct hwt_probe_prog *prog, size_t i,
				const struct hwt_probe_config *cfg, void *attr, char **path_or_sym,
				struct hwt_probe_diag *diag);

/* ------------------------------------------------------------------------ */
/* Offline                                                                   */

/* Runs the program over a recording: BEGIN; then every record in time
 * order: MMAP/MMAP2/COMM/FORK/EXIT feed the rt's sideband, LOST counts,
 * and each sample fires the probes that name its event: profile probes
 * take the samples of timed and counting events (cpu-clock, task-clock,
 * cycles, ...), a tracepoint probe the samples of that tracepoint, a
 * software/hardware probe those of that event; then END (unless exit()).
 * Returns 0, or with diag filled:
 *   -HWT_ENOEVENT  a probe that matches no event of the recording (names
 *                  what the recording holds)
 *   -HWT_ENOTSUP   uprobes/kprobes (live only), pt: probes on a recording
 *                  without PT or on a pipe (PT needs a second pass)
 *   -ENOMEM
 *   errors of hwt_probe_rt_fire().
 * A damaged recording is not an error: damaged chunks are skipped, broken
 * perf.data framing ends the records, and what was read counts
 * (hwt_fmt_session_damage() tells the caller what happened).
 * pt: probes: after the records, the session is rewound and its PT decoded
 * (ptsession/): entry probes fire on every call of the function, return
 * probes on every return from it (also a frame left by longjmp or an
 * exception), FUNC+OFF on every execution of that instruction, with the
 * decoded call stack (its user frames ustack, its kernel frames kstack) and
 * the trace's times. So a program's PT hits
 * come after its sample hits, each in time order per thread. */
HWT_API int hwt_probe_offline_run(struct hwt_probe_rt *rt, struct hwt_fmt_session *session,
				  struct hwt_probe_diag *diag);

/* ------------------------------------------------------------------------ */
/* PT flow: the hook for a decoder                                            */

/* One event of decoded control flow for one thread. Addresses are runtime
 * ips of the traced process. */
enum hwt_probe_flow_kind {
	HWT_PROBE_FLOW_CALL = 1, /* ip: first instruction of the callee */
	HWT_PROBE_FLOW_RETURN,	 /* ip: the return instruction (inside the
				  * function that returns) */
	HWT_PROBE_FLOW_INSN,	 /* ip: an instruction retired */
};

struct hwt_probe_flow {
	enum hwt_probe_flow_kind kind;
	int32_t pid, tid, cpu;
	uint64_t time;	       /* ns */
	uint64_t ip;	       /* CALL: the callee's first instruction;
				* RETURN: the ret instruction; INSN: the
				* instruction */
	const uint64_t *stack; /* the call stack after the event, leaf first
				* (ips inside each frame); may be NULL */
	size_t stack_nr;
};

/* Resolves pt: probes against the objects of the recording: call after
 * the sideband (hwt_probe_rt_mmap) of the traced processes is in. Each
 * pt:OBJ:FUNC probe becomes an address range in every mapping of OBJ (a
 * path, or a basename). OBJ "kernel" (also "vmlinux", "[kernel.kallsyms]"),
 * or a kernel module's name that no process mapped, is the kernel: its
 * range, from the recording's kallsyms, is in every process (pid -1); it
 * needs an offline run (hwt_probe_offline_run() takes the recording's
 * kernel half). Returns the number of probes resolved, or -HWT_ENOSYM with
 * diag (a function not in OBJ), -HWT_ENOEVENT (OBJ was never mapped; for
 * the kernel: not traced, or its code or symbols not recorded),
 * -HWT_EINVAL (FUNC+OFF past the function's end or inside an instruction:
 * x86-64 code is decoded from the entry to check). */
HWT_API int hwt_probe_pt_resolve(struct hwt_probe_rt *rt, struct hwt_probe_diag *diag);

/* Feeds one decoded event: fires the pt: probes it matches (entry on a CALL
 * whose target is a probed function's entry, return on a RETURN from it,
 * FUNC+OFF on an INSN at that address, with exact stacks and times).
 * Allocates nothing. Returns the number of probes fired, or errors of
 * hwt_probe_rt_fire(). */
HWT_API int hwt_probe_pt_flow(struct hwt_probe_rt *rt, const struct hwt_probe_flow *ev);

/* What the resolved pt: probes watch, so that a decoder can hand over only
 * the events that can fire something: CALLs whose target is lo (entry),
 * RETURNs from [lo, hi) (return), INSNs at lo (FUNC+OFF), in process pid
 * (-1: in every process, kernel code). */
struct hwt_probe_pt_watch {
	enum hwt_probe_flow_kind kind;
	int32_t pid;
	uint64_t lo, hi;
};

/* Writes up to max watches to out; returns how many there are (which may
 * exceed max). Valid after hwt_probe_pt_resolve(). */
HWT_API size_t hwt_probe_pt_watches(const struct hwt_probe_rt *rt, struct hwt_probe_pt_watch *out,
				    size_t max);

/* True for a bpftrace script (its first line "#!...bpftrace"): output in
 * bpftrace's layout, hwt_probe_rt_print() beginning with its two
 * newlines. */
HWT_API bool hwt_probe_prog_bpftrace_style(const struct hwt_probe_prog *prog);

/* True when the program has pt: probes (it then needs the flow hook). */
HWT_API bool hwt_probe_prog_has_pt(const struct hwt_probe_prog *prog);

#endif /* HWT_PROBE_PROBE_H */
