/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/collector.h - perf_event_open sessions and what they observe.
 * This header is the whole contract of the collector module.
 *
 * Part 1, the target: what to observe. A command launched by us (held
 * before exec so counters can be opened on it with enable_on_exec, then
 * released), running processes attached by PID (all their threads), or the
 * whole system (the online CPUs). The target also waits for the end of the
 * observed work, forwards SIGINT/SIGTERM/SIGHUP to a launched command and keeps
 * its exit status, so `stat`, `record` and `trace` share one behaviour.
 *
 * Usage (launch):
 *
 *   struct hwt_coll_target_config cfg;
 *   hwt_coll_target_config_init(&cfg);
 *   cfg.errmsg = msg; cfg.errmsg_len = sizeof(msg);
 *   err = hwt_coll_target_alloc(&t, &cfg);
 *   err = hwt_coll_target_launch(t, argv);   // -ENOENT: command not found
 *   n = hwt_coll_target_threads(t, &tids);     // {child pid}
 *   ... open events on tids with enable_on_exec ...
 *   err = hwt_coll_target_start(t);            // child execs now
 *   while ((r = hwt_coll_target_wait(t, interval_ms)) == HWT_COLL_WAIT_TIMEOUT)
 *           ... per-interval work ...
 *   status = hwt_coll_target_exit_status(t);   // shell style: 0..255
 *   hwt_coll_target_free(t);
 *
 * Attach: hwt_coll_target_attach(t, pids, n) instead of launch (start is
 * then only needed for signal handling); system-wide:
 * hwt_coll_target_system(t), optionally with a command launched as well
 * (`-a -- sleep 1`), whose end then ends the wait.
 */
#ifndef HWT_COLLECTOR_COLLECTOR_H
#define HWT_COLLECTOR_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hwt.h"

struct hwt_psys; /* perfsys/perfsys.h */

/* ------------------------------------------------------------------------ */
/* Targets                                                                  */

struct hwt_coll_target_config {
	size_t size; /* sizeof(struct hwt_coll_target_config) */
	struct hwt_logger logger;
	const char *sysfs_root; /* NULL: "/sys" (online CPUs); a test seam */
	const char *proc_root;	/* NULL: "/proc" (threads of a PID); a test seam */
	/* The machine (NULL: the kernel): a simulated one may run a launched
	 * command under its emulator (hwt_psys_exec_prefix). */
	struct hwt_psys *psys;
	/* On failure, a one-line explanation with the fix goes here
	 * (optional); the buffer must outlive the target. */
	char *errmsg;
	size_t errmsg_len;
};

/* Zeroes cfg and sets its size. */
HWT_API void hwt_coll_target_config_init(struct hwt_coll_target_config *cfg);

struct hwt_coll_target;

/* Allocates an empty target. cfg (may be NULL) is copied. 0, -ENOMEM,
 * -HWT_EINVAL. */
HWT_API int hwt_coll_target_alloc(struct hwt_coll_target **out,
				  const struct hwt_coll_target_config *cfg);

/* Frees the target. A launched child that was never started is released
 * without exec (it exits at once) and reaped; a running child is left
 * running. Restores the signal mask hwt_coll_target_start() changed. NULL
 * is fine. */
HWT_API void hwt_coll_target_free(struct hwt_coll_target *t);

/* Launches argv (argv[0] looked up in PATH like a shell, argv copied) as a
 * child that waits before exec until hwt_coll_target_start(). The child
 * keeps our stdin/stdout/stderr. Returns 0 or:
 *   -ENOENT      command not found (a shell would exit 127)
 *   -EACCES      found but not executable, or a directory (126)
 *   -HWT_EINVAL  empty argv, or a command was already launched
 *   -errno       pipe/fork failed */
HWT_API int hwt_coll_target_launch(struct hwt_coll_target *t, char *const argv[]);

/* Attaches to processes: every thread listed in /proc/PID/task now (later
 * threads are covered by counters with inherit). Returns 0 or:
 *   -ESRCH       a PID does not exist (errmsg names it)
 *   -HWT_EINVAL  no PIDs, or a PID <= 0
 *   -errno, -ENOMEM */
HWT_API int hwt_coll_target_attach(struct hwt_coll_target *t, const int *pids, size_t npids);

/* Observes the whole system: the CPUs in /sys/devices/system/cpu/online.
 * Returns 0, -errno (sysfs unreadable), -HWT_EFORMAT. */
HWT_API int hwt_coll_target_system(struct hwt_coll_target *t);

/* Parses a CPU list ("0-3,8,10-11") into a sorted, de-duplicated array
 * (caller frees *cpus). Returns the count, -HWT_EPARSE, -ENOMEM. */
HWT_API int hwt_coll_cpu_list_parse(const char *s, int **cpus);

/* Threads to open per-thread events on: the launched child's PID, or every
 * attached thread; 0 when system-wide only. *tids stays valid until the
 * target is freed. */
HWT_API size_t hwt_coll_target_threads(const struct hwt_coll_target *t, const int **tids);
/* CPUs to open per-CPU events on (system-wide); 0 otherwise. */
HWT_API size_t hwt_coll_target_cpus(const struct hwt_coll_target *t, const int **cpus);
/* The launched child's PID, or -1. */
HWT_API int hwt_coll_target_child(const struct hwt_coll_target *t);
/* True when the target is system-wide. */
HWT_API bool hwt_coll_target_is_system(const struct hwt_coll_target *t);

/* Finds a command as a shell would (a path, or a search of $PATH): returns
 * 0 with its path in out (len bytes), or -ENOENT (not found) / -EACCES (not
 * an executable file), with the one line every command gives for it in
 * errmsg (errlen bytes; may be NULL). */
HWT_API int hwt_coll_command_find(const char *cmd, char *out, size_t len, char *errmsg,
				  size_t errlen);

/* Starts observing: blocks SIGINT/SIGTERM/SIGHUP/SIGCHLD in this thread (they are
 * handled by hwt_coll_target_wait) and releases a launched child to exec.
 * Returns 0, or for a child whose exec failed (it is reaped):
 *   -ENOENT, -EACCES, -ENOEXEC ... the exec error (errmsg explains)
 * Calling it twice is -HWT_EINVAL. */
HWT_API int hwt_coll_target_start(struct hwt_coll_target *t);

/* Results of hwt_coll_target_wait. */
enum hwt_coll_wait {
	HWT_COLL_WAIT_TIMEOUT = 0,     /* timeout_ms passed, the target runs on */
	HWT_COLL_WAIT_EXITED = 1,      /* the command exited / all PIDs are gone */
	HWT_COLL_WAIT_INTERRUPTED = 2, /* SIGINT/SIGTERM/SIGHUP, no command to end */
};

/* Waits up to timeout_ms (-1: no limit) for the target to end. A SIGINT,
 * SIGTERM or SIGHUP sent to us is forwarded to a launched command (which then decides
 * to exit); terminal-generated ones already reached it. Without a command
 * (attach, system-wide) such a signal ends the wait with INTERRUPTED.
 * Returns an enum hwt_coll_wait value, or -HWT_EINVAL before start. */
HWT_API int hwt_coll_target_wait(struct hwt_coll_target *t, int timeout_ms);

/* The launched command's status as a shell reports it: its exit code, or
 * 128 + the signal that killed it; -1 if it has not exited (or none). */
HWT_API int hwt_coll_target_exit_status(const struct hwt_coll_target *t);

/* The command's user and system CPU seconds (from wait4; children it
 * waited for included). 0 until it exits. */
HWT_API void hwt_coll_target_rusage(const struct hwt_coll_target *t, double *user_s, double *sys_s);

/* True when a SIGINT/SIGTERM/SIGHUP arrived during the waits. */
HWT_API bool hwt_coll_target_interrupted(const struct hwt_coll_target *t);

/* For callers that multiplex the target with their own descriptors (the
 * recorder's epoll): after start, the descriptors that become readable when
 * hwt_coll_target_wait(t, 0) may have news (the signalfd for SIGINT, SIGTERM,
 * SIGHUP and SIGCHLD; a pidfd per attached process). Writes at most max into fds
 * (owned by the target) and returns how many. */
HWT_API size_t hwt_coll_target_pollfds(const struct hwt_coll_target *t, int *fds, size_t max);

/* ------------------------------------------------------------------------ */
/* Recording: samples (and Intel PT) into a container                        */
/*
 * The recorder opens the events on a target, reads the kernel's ring
 * buffers (one per CPU, or one per thread) with epoll, and hands the records
 * to format/'s writer thread, which compresses them into a .hwt file: one
 * RECORDS stream per ring buffer (samples and sideband as the kernel wrote
 * them), one AUX stream per ring buffer for Intel PT, metadata (machine,
 * events, clock conversion, vDSO image, build-ids of the objects samples
 * hit) and what was lost. It stops when the target ends (command exit, all
 * attached processes gone) or on SIGINT/SIGTERM/SIGHUP.
 *
 * Bounded loss: the writer puts a chunk on disk at most about a second
 * after its first record (format.h, flush_ms), losses are written as they
 * are counted, and a SIGINT/SIGTERM/SIGHUP writes out everything at once
 * (a SIGKILL may follow it), so a recorder killed at any moment leaves a
 * file that every command reads up to about its last second.
 *
 * Usage:
 *
 *   struct hwt_coll_rec_config cfg;
 *   hwt_coll_rec_config_init(&cfg);
 *   cfg.output = "hwtrace.hwt"; cfg.freq = 999; cfg.callgraph = HWT_COLL_CG_FP;
 *   cfg.errmsg = msg; cfg.errmsg_len = sizeof(msg);
 *   err = hwt_coll_rec_alloc(&rec, &cfg);      // events checked, nothing opened
 *   ... hwt_coll_target_launch/attach/system(t, ...) ...
 *   err = hwt_coll_rec_open(rec, t);           // events, buffers, output file
 *   err = hwt_coll_rec_run(rec);               // starts t, records until the end
 *   hwt_coll_rec_stats(rec, &st);
 *   hwt_coll_rec_free(rec);
 *
 * Errors come with a one-line explanation and its fix in cfg.errmsg.
 */

enum hwt_coll_callgraph {
	HWT_COLL_CG_NONE = 0,
	HWT_COLL_CG_FP = 1,    /* frame pointers: user and kernel call chains */
	HWT_COLL_CG_LBR = 2,   /* LBR call stack (Intel, Haswell and later) for
				  user space, frame pointers for the kernel */
	HWT_COLL_CG_DWARF = 3, /* user registers and the top of the user stack
				  (stack_user bytes), unwound offline from
				  the CFI; kernel frames by the kernel */
};

/* perf's default and largest user stack copy for --call-graph dwarf. */
#define HWT_COLL_STACK_USER_DEFAULT 8192u
#define HWT_COLL_STACK_USER_MAX	    65528u

struct hwt_coll_rec_config {
	size_t size;		  /* sizeof(struct hwt_coll_rec_config) */
	struct hwt_logger logger; /* notices (default event fallback, throttling) */
	const char *output;	  /* the .hwt file (required) */
	bool rename_old;	  /* an existing output becomes OUTPUT.old */
	/* Events to sample (pmc's -e syntax). NULL: cycles, or cpu-clock with
	 * a notice where the machine has no hardware counters. */
	const char *events;
	uint64_t period; /* sample every N events (-c) */
	uint64_t freq;	 /* ... or N times a second (-F); default 4000
			    (1 for tracepoints: every hit); capped at
			    kernel.perf_event_max_sample_rate */
	enum hwt_coll_callgraph callgraph;
	uint32_t stack_user;	    /* dwarf: stack bytes per sample (a multiple of
				       8, at most HWT_COLL_STACK_USER_MAX); 0:
				       8192 */
	bool switch_events;	    /* PERF_RECORD_SWITCH(_CPU_WIDE) */
	bool per_thread;	    /* one buffer per thread, no inheritance
				       (default: one per CPU, following new
				       threads and processes) */
	bool no_inherit;	    /* do not follow new threads/processes */
	size_t mmap_bytes;	    /* data area per buffer; 0: 1 MiB (rounded
				       up to a power of two pages) */
	int level;		    /* zstd level; 0: the writer's default (3) */
	const char *cmdline;	    /* hwtrace's command line, for metadata */
	const char *target_cmdline; /* the traced command, for metadata */
	/* Intel PT instead of samples: events is then ignored. */
	bool pt;
	const char *pt_spec;   /* "intel_pt/TERMS/MODS" or "TERMS" */
	bool pt_snapshot;      /* overwrite mode; snapshots on SIGUSR2 and
				  at the end */
	size_t aux_bytes;      /* AUX area per buffer; 0: 4 MiB */
	const char *pt_filter; /* IP filters, see docs/record.md */
	/* A control FIFO (perf's --control=fifo:CTL[,ACK]): "snapshot" and
	 * "stop" commands, answered with "ack" on ack_fifo (may be NULL). */
	const char *control_fifo;
	const char *ack_fifo;
	/* Test seams: sysfs and perf_event_paranoid (NULL: the real ones). */
	const char *sysfs_root;
	const char *paranoid_path;
	/* The perf system calls (NULL: the kernel); outlives the recorder. */
	struct hwt_psys *psys;
	/* On failure a one-line explanation with the fix (optional). */
	char *errmsg;
	size_t errmsg_len;
};

/* Zeroes cfg and sets its size. */
HWT_API void hwt_coll_rec_config_init(struct hwt_coll_rec_config *cfg);

struct hwt_coll_rec;

/* Checks the configuration and builds the events' attributes; opens
 * nothing. cfg is copied (its strings must outlive the recorder). Returns
 * 0, or with errmsg set:
 *   -HWT_EINVAL   bad config (no output, both period and freq, ...);
 *   -HWT_ENOEVENT, -HWT_EPARSE  an unknown or malformed event;
 *   -HWT_ENOPT    PT asked for on a machine without Intel PT;
 *   -HWT_ENOTSUP  a PT term or filter this CPU/kernel does not support;
 *   -ENOMEM. */
HWT_API int hwt_coll_rec_alloc(struct hwt_coll_rec **out, const struct hwt_coll_rec_config *cfg);

/* Opens the events on t (launched and not yet started, attached, or
 * system-wide), maps their buffers, creates the output file (renaming an
 * old one first when asked) and writes the metadata and, for processes that
 * already ran, their synthesized sideband. Returns 0, or with errmsg set:
 *   -EACCES/-EPERM  perf_event_paranoid or permissions (the needed level);
 *   -HWT_ENOTSUP    an event is not supported on this CPU/VM;
 *   -ESRCH          the target's threads are gone;
 *   -EMFILE         too many open files (how many are needed);
 *   -errno          the output cannot be created, or another failure. */
HWT_API int hwt_coll_rec_open(struct hwt_coll_rec *rec, struct hwt_coll_target *t);

/* Starts the target and records until it ends or SIGINT/SIGTERM/SIGHUP arrives
 * (SIGUSR2 takes a PT snapshot), then drains the buffers, writes the
 * build-ids, losses and times, and closes the file. Returns 0, or an error
 * (the target failed to exec, the disk filled up, ...) with errmsg set;
 * what was recorded until then is in the file. */
HWT_API int hwt_coll_rec_run(struct hwt_coll_rec *rec);

struct hwt_coll_rec_stats {
	uint64_t samples;	       /* PERF_RECORD_SAMPLE records */
	uint64_t records;	       /* all records from the kernel */
	uint64_t lost_records;	       /* PERF_RECORD_LOST: ring buffer overflow */
	uint64_t lost_samples;	       /* PERF_RECORD_LOST_SAMPLES */
	uint64_t throttled;	       /* PERF_RECORD_THROTTLE */
	uint64_t writer_dropped;       /* bytes the writer could not take in time */
	uint64_t aux_bytes;	       /* Intel PT bytes recorded */
	uint64_t aux_lost;	       /* ... known lost (bytes) */
	uint64_t aux_gaps;	       /* AUX records with TRUNCATED/PARTIAL/COLLISION */
	uint64_t snapshots;	       /* PT snapshots taken */
	uint64_t aux_overruns;	       /* the AUX area was full: the kernel stopped
					  the trace and hwtrace enabled it again */
	const uint64_t *overrun_times; /* perf ns of each (aux_overruns of
					  them; valid until the free) */
	uint64_t first_time;	       /* perf ns of the first record */
	uint64_t raw_bytes;	       /* uncompressed bytes in the file */
	uint64_t file_bytes;	       /* size of the file */
	uint64_t wakeups;	       /* loop iterations that found data */
	size_t buffers;		       /* ring buffers */
	size_t fds;		       /* event descriptors */
	double seconds;		       /* wall time from start to end */
	int exit_status;	       /* of a launched command, -1 if none */
	bool interrupted;	       /* ended by SIGINT/SIGTERM/SIGHUP */
	char event[64];		       /* the first event's name */
};

/* Fills *st (valid after run, and partly during). */
HWT_API void hwt_coll_rec_stats(const struct hwt_coll_rec *rec, struct hwt_coll_rec_stats *st);

/* Closes everything (and the file, if run did not). Accepts NULL. */
HWT_API void hwt_coll_rec_free(struct hwt_coll_rec *rec);

/* ------------------------------------------------------------------------ */
/* The PT emulator.
 *
 * On machines without Intel PT, the emulator runs the real program under
 * qemu-x86_64 with hwtrace's TCG plugin and writes the Intel PT packet
 * stream that a CPU tracing that run's user space would have written (libipt
 * encoder), one stream per thread, plus the sideband the kernel would have
 * given (MMAP2, COMM, FORK, EXIT, ITRACE_START, AUX). Everything downstream
 * decodes it as real PT. Files record that it was emulated
 * (HWT_FMT_FLAG_EMULATED_PT, pt.emulated = 1). See docs/pt-emulator.md.
 *
 * Usage:
 *
 *   struct hwt_ptemu_config cfg;
 *   hwt_ptemu_config_init(&cfg);
 *   cfg.argv = argv;                               // the command
 *   err = hwt_ptemu_terms_parse(&cfg.terms, "mtc,cyc,psb_period=2");
 *   err = hwt_ptemu_record(&cfg, "out.hwt", &result);  // container
 *   // or hwt_ptemu_run(&cfg, &my_sink, &result) for the raw streams.
 */
/* PT configuration terms, as in perf's intel_pt//: "tsc,mtc,cyc,noretcomp,
 * mtc_period=N,psb_period=N". */
struct hwt_ptemu_terms {
	bool tsc;	       /* TSC packets in PSB+ (default on) */
	bool mtc;	       /* MTC packets (default on) and TMA in PSB+ */
	bool cyc;	       /* CYC packets (default off) */
	bool noretcomp;	       /* no return compression (default off) */
	uint8_t mtc_period;    /* MTC every 2^N crystal ticks, 0..15 (default 3) */
	uint8_t psb_period;    /* PSB+ every 2^(N+11) bytes, 0..15 (default 3: 16 KiB) */
	uint32_t tsc_per_insn; /* deterministic clock: TSC ticks per instruction
				* (default 1; "ipc" in docs) */
	/* Shapes real CPUs write (docs/pt-emulator.md, "Real-shaped
	 * traces"); all off by default, "real" turns on tsx, pip,
	 * psb_bytes=256 and psb_off=4. */
	bool tsx;	    /* MODE.TSX in every PSB+ (a CPU with TSX) */
	bool pip;	    /* PIP (the process's CR3) in every PSB+ */
	bool vmcs;	    /* VMCS in every PSB+ and PIP.NR set: the code
			     * runs in a VMX guest */
	uint32_t psb_bytes; /* a PSB+ every N bytes (256..2^26) instead of
			     * psb_period's 2^(N+11); 0: psb_period */
	uint32_t psb_off;   /* PSB+ written while packet generation is off,
			     * at each return from the kernel (0..64) */
	uint32_t ovf;	    /* an internal buffer overflow every N KiB of
			     * trace (1..2^20): OVF, FUP where it resumes */
	bool vmentry;	    /* each return from the kernel is a VM entry
			     * (kAFL): PSB+ with MODE.Exec and FUP at the
			     * IP, then TIP.PGE at the same IP (BDM70) */
	/* Address filters in perf's syntax (record --filter, docs/record.md):
	 * "filter|stop|tracestop SYM|OFFSET[/SIZE] @ FILE", comma-separated,
	 * at most 2 (the emulated CPU's address ranges); checked by the
	 * kernel's rules (collector/pt.c). Only code in the ranges is traced,
	 * with TIP.PGD/TIP.PGE at each crossing. NULL: none. The string
	 * must outlive the run. */
	const char *filter;
};

/* Defaults as documented above. */
HWT_API void hwt_ptemu_terms_init(struct hwt_ptemu_terms *terms);

/* Parses comma-separated terms into terms (which keeps values not named).
 * Accepts tsc, mtc, cyc, noretcomp, tsx, pip, vmcs, vmentry, real (each optionally
 * =0/=1), mtc_period=N, psb_period=N, tsc_per_insn=N, psb_bytes=N,
 * psb_off=N, ovf=N, and last filter=FILTERS (the rest of spec, commas
 * included; terms->filter then points into spec). Returns 0 or
 * -HWT_EPARSE; *bad (when not NULL) then points at the offending term in
 * spec. */
HWT_API int hwt_ptemu_terms_parse(struct hwt_ptemu_terms *terms, const char *spec,
				  const char **bad);

/* The intel_pt config word (perf's format bits) for the terms. */
HWT_API uint64_t hwt_ptemu_terms_config(const struct hwt_ptemu_terms *terms);

/* The PMU type stored in the emulated event's attr when the machine has no
 * intel_pt PMU (otherwise the real intel_pt type is used). */
#define HWT_PTEMU_PMU_TYPE 8u

/* Statistics of one thread's stream. */
struct hwt_ptemu_thread {
	uint32_t pid, tid, ppid, ptid;
	uint64_t insns;	   /* instructions retired (ground truth) */
	uint64_t cond;	   /* conditional branches */
	uint64_t taken;	   /* ... taken */
	uint64_t indirect; /* indirect branches (TIP) */
	uint64_t ret_comp; /* compressed returns */
	uint64_t ret_tip;  /* uncompressed returns */
	uint64_t kernel;   /* kernel entries (syscalls, faults, signals) */
	uint64_t lost;	   /* events whose position was not known (OVF) */
	uint64_t ovf;	   /* injected overflows (term ovf) */
	uint64_t filtered; /* instructions run outside the address filters
			    * (or after a TraceStop) */
	uint64_t leaves;   /* TIP.PGD where execution left the filters */
	uint64_t untraced; /* instructions left untraced by overflows and
			    * filters (the decoder gets insns - untraced) */
	uint64_t psb;
	uint64_t bytes; /* PT bytes */
	uint64_t tsc_start, tsc_end;
	int end; /* 0 running (killed), 1 exit, 2 exec, 3 signal */
};

/* What a run gave. */
struct hwt_ptemu_result {
	int exit_status; /* of the command: exit code, or 128+signal */
	size_t nthreads;
	struct hwt_ptemu_thread *threads; /* owned: hwt_ptemu_result_fini() */
	uint64_t insns, bytes;		  /* totals */
	double seconds;			  /* wall time of the traced run */
};

HWT_API void hwt_ptemu_result_fini(struct hwt_ptemu_result *res);

/* Where the streams go. Callbacks are called from the calling thread, after
 * the traced command ended, in this order: meta, records (all sideband, in
 * the order it happened), then per thread: stream, aux*. Each returns 0 or a
 * negative error, which stops the run and is returned. Bytes are only valid
 * during the call. */
struct hwt_ptemu_sink {
	void *ctx;
	/* Static facts: see docs/pt-emulator.md for the keys' meaning. */
	int (*meta_u64)(void *ctx, const char *key, uint64_t value);
	int (*meta_str)(void *ctx, const char *key, const char *value);
	int (*meta_bytes)(void *ctx, const char *key, const void *value, size_t len);
	/* Whole perf records, kernel layout, sample_id_all trailer as in attr. */
	int (*records)(void *ctx, const void *buf, size_t len);
	/* A new per-thread PT stream; returns a stream handle (>= 0). */
	int (*stream)(void *ctx, uint32_t pid, uint32_t tid);
	/* PT bytes of a stream at an AUX offset. */
	int (*aux)(void *ctx, int stream, uint64_t offset, const void *buf, size_t len);
};

struct hwt_ptemu_config {
	size_t size;		 /* sizeof(struct hwt_ptemu_config) */
	const char *const *argv; /* the command, NULL-terminated */
	struct hwt_ptemu_terms terms;
	const char *qemu;    /* default "qemu-x86_64" (PATH) */
	const char *plugin;  /* default: $HWT_PTEMU_PLUGIN, the build
			      * tree's, then the installed one */
	const char *workdir; /* where the plugin writes; default a new
			      * directory under $TMPDIR, removed after */
	bool truth;	     /* keep ground-truth files in workdir
			      * (tests); needs workdir */
	struct hwt_logger log;
};

HWT_API void hwt_ptemu_config_init(struct hwt_ptemu_config *cfg);

/* Runs cfg->argv under the emulator and delivers the streams to sink.
 * stdin/stdout/stderr are the caller's. Returns 0 (whatever the command's
 * exit status, see res->exit_status) or:
 *   -HWT_EINVAL   no command, bad config size or terms; address filters
 *                 the kernel would refuse (the rule logged);
 *   -HWT_ENOTSUP  qemu-x86_64 or the plugin not found, or a filter on
 *                 kernel addresses (message logged);
 *   -ENOENT       the command does not exist;
 *   -errno, -ENOMEM, or a sink's error.
 * res (may be NULL) is filled and must be released with
 * hwt_ptemu_result_fini(). */
HWT_API int hwt_ptemu_run(const struct hwt_ptemu_config *cfg, const struct hwt_ptemu_sink *sink,
			  struct hwt_ptemu_result *res);

/* hwt_ptemu_run() into a new container file at path (format/'s writer):
 * one AUX stream per thread, one RECORDS stream of sideband, metadata
 * (event.0.attr, pt.config.*, cpu.*, time.*, pt.emulated) and the
 * HWT_FMT_FLAG_EMULATED_PT flag. Errors as hwt_ptemu_run() plus the
 * writer's. */
HWT_API int hwt_ptemu_record(const struct hwt_ptemu_config *cfg, const char *path,
			     struct hwt_ptemu_result *res);

/* The emulated intel_pt event's attr (struct perf_event_attr bytes, size
 * PERF_ATTR_SIZE_VER7 or the header's) for these terms; returns its size. */
HWT_API size_t hwt_ptemu_attr(const struct hwt_ptemu_terms *terms, void *attr, size_t cap);

/* Path of the plugin that would be used (see cfg->plugin), or NULL. */
HWT_API const char *hwt_ptemu_plugin_path(void);

/* ------------------------------------------------------------------------ */
/* The simulated intel_pt PMU                                                */

/* A machine for perfsys (hwt_psys_open_env) whose intel_pt PMU is simulated,
 * switched on by HWT_PT_SIM ("1", or options: cpus=N, wait): intel_pt and
 * dummy events follow the kernel's rules (attributes, PT's exclusivity,
 * inherit, SET_OUTPUT, address filters, mlock accounting, AUX head and
 * tail, overwrite, overruns that disable the event, PERF_RECORD_AUX flags,
 * ITRACE_START, SWITCH), and a command the tool launches runs under the PT
 * emulator, whose trace the simulated CPUs write into the AUX areas. See
 * docs/record.md, "Testing without PT hardware". */
struct hwt_psys_backend;
HWT_API const struct hwt_psys_backend *hwt_coll_ptsim_backend(void);

#endif /* HWT_COLLECTOR_COLLECTOR_H */
