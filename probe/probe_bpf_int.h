/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/probe_bpf_int.h - internals of the BPF back end: the layout of the
 * maps that the generated programs and hwtrace share (aggregations, thread
 * variables, the per-CPU scratch area with its counters, the control
 * block, the ring buffer records), BPF instruction builders, and the
 * interfaces between the code generator (bpf_gen.c), the runner
 * (bpf_run.c) and the runtime (rt.c). Not part of the module's contract.
 *
 * Every layout here is computed once from the program (prb_bpf_layout_init)
 * and used by both sides, so the programs hwtrace writes and the reader
 * that merges their maps cannot disagree.
 */
#ifndef HWT_PROBE_PROBE_BPF_INT_H
#define HWT_PROBE_PROBE_BPF_INT_H

#include <linux/bpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe/probe_int.h"

/* ------------------------------------------------------------------------ */
/* Instructions (the kernel's filter.h macros are not UAPI)                  */

static inline struct bpf_insn prb_bpf_insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off,
					   int32_t imm)
{
	struct bpf_insn i;

	i.code = code;
	i.dst_reg = dst & 0xf;
	i.src_reg = src & 0xf;
	i.off = off;
	i.imm = imm;
	return i;
}

#define BI_ALU64_REG(op, d, s)	 prb_bpf_insn(BPF_ALU64 | BPF_OP(op) | BPF_X, d, s, 0, 0)
#define BI_ALU64_IMM(op, d, im)	 prb_bpf_insn(BPF_ALU64 | BPF_OP(op) | BPF_K, d, 0, 0, im)
#define BI_ALU32_IMM(op, d, im)	 prb_bpf_insn(BPF_ALU | BPF_OP(op) | BPF_K, d, 0, 0, im)
#define BI_MOV64_REG(d, s)	 prb_bpf_insn(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define BI_MOV64_IMM(d, im)	 prb_bpf_insn(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, im)
#define BI_MOV32_REG(d, s)	 prb_bpf_insn(BPF_ALU | BPF_MOV | BPF_X, d, s, 0, 0)
#define BI_MOV32_IMM(d, im)	 prb_bpf_insn(BPF_ALU | BPF_MOV | BPF_K, d, 0, 0, im)
#define BI_LDX(sz, d, s, o)	 prb_bpf_insn(BPF_LDX | BPF_SIZE(sz) | BPF_MEM, d, s, o, 0)
#define BI_STX(sz, d, s, o)	 prb_bpf_insn(BPF_STX | BPF_SIZE(sz) | BPF_MEM, d, s, o, 0)
#define BI_ST(sz, d, o, im)	 prb_bpf_insn(BPF_ST | BPF_SIZE(sz) | BPF_MEM, d, 0, o, im)
#define BI_JMP_IMM(op, d, im, o) prb_bpf_insn(BPF_JMP | BPF_OP(op) | BPF_K, d, 0, o, im)
#define BI_JMP_REG(op, d, s, o)	 prb_bpf_insn(BPF_JMP | BPF_OP(op) | BPF_X, d, s, o, 0)
#define BI_JA(o)		 prb_bpf_insn(BPF_JMP | BPF_JA, 0, 0, o, 0)
#define BI_CALL(fn)		 prb_bpf_insn(BPF_JMP | BPF_CALL, 0, 0, 0, fn)
#define BI_EXIT()		 prb_bpf_insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* ------------------------------------------------------------------------ */
/* Maps                                                                      */

/* The maps a program refers to, by slot; ld_imm64 instructions carry the
 * slot in imm until the loader puts the map's fd there. */
enum prb_bpf_slot {
	PRB_MS_CONTROL = 0, /* array[1], read through a direct value pointer */
	PRB_MS_SCRATCH,	    /* per-CPU array[nprobes]: counters + work area */
	PRB_MS_ZERO,	    /* array[1] of zeros: initial values of new keys */
	PRB_MS_RING,	    /* ring buffer: printf, exit, print, clear */
	PRB_MS_STACKS,	    /* stack trace map */
	PRB_MS_SELF,	    /* hash (tid, var) -> u64 */
	PRB_MS_SELF_STR,    /* hash (tid, var) -> string value */
	PRB_MS_TARGETS,	    /* hash tgid (or tid) -> 1: the traced tasks */
	PRB_MS_AGG0,	    /* PRB_MS_AGG0 + i: aggregation i, per-CPU hash */
};

/* The control block (PRB_MS_CONTROL's one value). */
struct prb_bpf_control {
	uint64_t exited;  /* set by exit(): every program returns at once */
	uint64_t t0;	  /* BEGIN's time, for elapsed */
	uint64_t pending; /* a launched command's pid: traced from its exec */
};

/* The counters at the start of each scratch value (one per probe and
 * CPU), summed by hwtrace. */
enum {
	PRB_SC_HITS = 0,
	PRB_SC_FILTERED = 8,
	PRB_SC_FAULTS = 16,
	PRB_SC_RING_DROPS = 24,	  /* ring buffer full: printf/exit/print lost */
	PRB_SC_SELF_DROPS = 32,	  /* thread variable map full */
	PRB_SC_STACK_ERRORS = 40, /* a stack not taken (collision, fault) */
	PRB_SC_AGG_DROPS = 48,	  /* + 8 * agg: updates of a full aggregation */
};

/* A string value as maps, keys and records hold it: a tag and a payload.
 * Tag 0: the payload is the string's bytes (NUL-padded); 1: a function by
 * address (payload: pid, ip: symbolized by hwtrace); 2: the text of probe
 * payload[0]; 3: the function of probe payload[0]. */
enum {
	PRB_SV_BYTES = 0,
	PRB_SV_FUNC_IP,
	PRB_SV_PROBE,
	PRB_SV_PROBE_FUNC,
	PRB_SV_INET, /* ntop(): family (2, 10), then 4 or 16 bytes */
	PRB_SV_BUF,  /* buf(): a length, then the bytes (printed with %r) */
};

/* Kinds of key slots. */
enum { PRB_KEY_INT = 1, PRB_KEY_STR, PRB_KEY_STACK };

/* A stack key slot holds pid << 32 | stack id (a kernel stack: 0xffffffff
 * << 32 | id), then the caller's return address an entry uprobe read at
 * [sp] (or 0). A stack that could not be taken has id 0xffffffff (an
 * empty stack). */
#define PRB_NO_STACK 0xffffffffu

struct prb_bpf_agg_layout {
	uint32_t key_size, value_size;
	uint32_t key_off[HWT_REP_MAX_KEYS];
	uint8_t key_kind[HWT_REP_MAX_KEYS];
	bool full;	    /* count, sum (128-bit), min, max [sumsq] [buckets] */
	uint32_t sumsq_off; /* stddev: 128-bit sum of squares; else 0 */
	uint32_t buckets_off, nbuckets;
	uint32_t max_entries;
};

/* Offsets in a full aggregation value. */
enum {
	PRB_AV_COUNT = 0,
	PRB_AV_SUM_LO = 8,
	PRB_AV_SUM_HI = 16,
	PRB_AV_MIN = 24,
	PRB_AV_MAX = 32,
	PRB_AV_HEADER = 40,
};

/* Ring buffer records: a header and the record's data. */
enum {
	PRB_RB_PRINTF = 1,
	PRB_RB_EXIT,
	PRB_RB_PRINT, /* arg: the aggregation | the top rows << 16 */
	PRB_RB_CLEAR,
	PRB_RB_TIME, /* arg: the format's string (0xffff: none) */
	PRB_RB_CAT,  /* arg: the path's string */
	PRB_RB_JOIN, /* arg: the separator's string; then 16 strings of strsize */
};

struct prb_bpf_rec {
	uint32_t kind; /* PRB_RB_* */
	uint32_t arg;  /* printf: the format's index; print/clear: aggregation */
		       /* printf: the arguments, 8 bytes per integer, a string value each */
};

/* Map sizes and string size (from -x options; 0: the defaults). */
struct prb_bpf_limits {
	uint64_t aggsize;    /* bytes per aggregation map (DTrace's aggsize: 4 MiB) */
	uint64_t dynvarsize; /* bytes of thread variables (DTrace's: 1 MiB) */
	uint64_t bufsize;    /* ring buffer bytes (DTrace's bufsize: 4 MiB) */
	uint32_t strsize;    /* bytes of a string value (64, as bpftrace) */
	uint32_t nstacks;    /* stack map entries (4096) */
};

void prb_bpf_limits_defaults(struct prb_bpf_limits *l);

struct prb_bpf_layout {
	struct prb_bpf_limits lim;
	uint32_t sv_size; /* 8 + strsize */
	struct prb_bpf_agg_layout *aggs;
	size_t naggs;
	uint32_t self_entries;
	uint32_t scratch_header; /* counters: PRB_SC_AGG_DROPS + 8 * naggs */
	uint32_t scratch_size;	 /* the largest probe's need (set by gen) */
	uint32_t zero_size;	 /* the largest initial value */
	uint32_t stack_depth;	 /* frames a stack map entry holds */
};

/* Fills the layout of prog's maps. Returns 0, -ENOMEM. */
int prb_bpf_layout_init(struct prb_bpf_layout *lay, const struct hwt_probe_prog *prog,
			const struct prb_bpf_limits *lim);
void prb_bpf_layout_fini(struct prb_bpf_layout *lay);

/* The keys an aggregation holds at most on either path (so that the
 * sampling path drops where the BPF path would). */
uint32_t prb_agg_max_keys(const struct prb_bpf_layout *lay, size_t agg);

/* ------------------------------------------------------------------------ */
/* Code generation                                                           */

/* How the programs find the traced tasks. */
enum prb_bpf_filter {
	PRB_FILTER_NONE = 0, /* the perf event selects them (or system-wide) */
	PRB_FILTER_TGID,     /* PRB_MS_TARGETS holds process ids */
	PRB_FILTER_TID,	     /* ... thread ids (no inheritance) */
};

struct prb_bpf_code {
	struct bpf_insn *insns;
	size_t n, cap;
	enum bpf_prog_type type;
	uint32_t *relocs; /* instructions whose imm is a map slot */
	size_t nrelocs, relcap;
	uint32_t scratch_used;
};

void prb_bpf_code_fini(struct prb_bpf_code *code);

/* Generates the program of probe i (all its clauses, in order). Returns 0,
 * -HWT_ENOTSUP with why filled (a construct without a BPF form), -ENOMEM. */
int prb_bpf_gen(const struct hwt_probe_prog *prog, size_t probe, const struct prb_bpf_layout *lay,
		enum prb_bpf_filter filter, int32_t target, struct prb_bpf_code *out, char *why,
		size_t whylen);

/* The helper programs of a launched or followed target: on
 * sched:sched_process_exec, the pending pid joins the targets; on
 * sched:sched_process_fork, the child of a target joins them. pid_off /
 * child_off: the offsets of the pid / child_pid fields in those
 * tracepoints' records. */
int prb_bpf_gen_exec_gate(const struct prb_bpf_layout *lay, uint32_t pid_off,
			  struct prb_bpf_code *out);
int prb_bpf_gen_fork_follow(const struct prb_bpf_layout *lay, uint32_t child_off,
			    struct prb_bpf_code *out);

/* ------------------------------------------------------------------------ */
/* The runtime's side                                                        */

/* A source of aggregation contents kept elsewhere (BPF maps): merged into
 * a copy of the runtime's own part whenever an aggregation is printed or
 * read, cleared with it. */
struct prb_agg_source {
	int (*merge)(void *ctx, size_t agg, struct hwt_rep_agg *into);
	int (*clear)(void *ctx, size_t agg);
	/* Plain maps the source keeps: every row into a map of the runtime's
	 * (returns 1; 0: the source does not keep it), and one key's load,
	 * store, delete or the whole map's clear for BEGIN and END, which
	 * hwtrace runs (returns 1 when done there, 0 when not kept). */
	int (*map_rows)(void *ctx, size_t map, struct prb_tmap *into);
	int (*map_op)(void *ctx, int op, size_t map, const struct hwt_rep_val *key, int64_t *v);
	void *ctx;
};

enum { PRB_MAP_LOAD = 1, PRB_MAP_STORE, PRB_MAP_DELETE, PRB_MAP_CLEAR };

void prb_rt_set_source(struct hwt_probe_rt *rt, const struct prb_agg_source *src);
/* printf of format fmt with its arguments (integers, dict string ids). */
int prb_rt_printf(struct hwt_probe_rt *rt, size_t fmt, const int64_t *args);
/* print(@agg[, top]) / clear(@agg) as a clause runs them. */
int prb_rt_print_top(struct hwt_probe_rt *rt, size_t agg, uint32_t top);
/* The output of time() (op PRB_I_TIME, string s: its format or 0xffff),
 * cat() (PRB_I_CAT, s: the path) or join() (PRB_I_JOIN, s: the separator
 * or 0xffff, args: the strings). */
int prb_rt_text(struct hwt_probe_rt *rt, int op, unsigned s, const char *const *args, size_t n);
int prb_rt_clear_agg(struct hwt_probe_rt *rt, size_t agg);
void prb_rt_set_exited(struct hwt_probe_rt *rt);
/* A string value (tag and payload, as above) to a dict string id. */
int prb_rt_sv_id(struct hwt_probe_rt *rt, const uint8_t *sv, uint32_t strsize, uint32_t *id);
/* A stack of ips (leaf first, return addresses after the first) of pid to
 * a dict stack id, symbolized as the sampling path does. */
int prb_rt_stack_ips(struct hwt_probe_rt *rt, int32_t pid, const uint64_t *ips, size_t n,
		     uint32_t *id);
struct hwt_rep_dict *prb_rt_dict(struct hwt_probe_rt *rt);

/* ------------------------------------------------------------------------ */
/* The runner (bpf_run.c)                                                    */

struct perf_event_attr;

/* The traced tasks, as the live run targets them. */
struct prb_bpf_target {
	const int *tids; /* threads (inherited unless no_inherit), or */
	size_t ntids;
	const int *cpus; /* CPUs: the whole system */
	size_t ncpus;
	const int *online; /* every online CPU (per-CPU events of threads) */
	size_t nonline;
	bool no_inherit;
	bool enable_on_exec; /* tids[0] is a launched command: from its exec */
	const char *tracefs_root, *proc_root;
};

struct prb_bpf;

/* Usage: alloc, load (the probes wanted), attach each loaded probe to its
 * events (or unload it), start, then poll while running, finish at the
 * end (counters to the runtime), free. While started, the runtime prints
 * aggregations merged with the maps. */
int prb_bpf_alloc(struct prb_bpf **b, struct hwt_probe_rt *rt, const struct prb_bpf_target *t);
/* Generates and loads the programs of the probes in want[]: a probe that
 * has no BPF form, or that the kernel refuses, is left unloaded with its
 * reason (and the verifier's log). Returns 0 or -ENOMEM. */
int prb_bpf_load(struct prb_bpf *b, const bool *want, int32_t target);
bool prb_bpf_loaded(const struct prb_bpf *b, size_t probe);
const char *prb_bpf_why(const struct prb_bpf *b, size_t probe);
const char *prb_bpf_log(const struct prb_bpf *b, size_t probe);
size_t prb_bpf_insns(const struct prb_bpf *b, size_t probe);
/* Detaches and unloads probe's program, with the reason (copied). */
void prb_bpf_unload(struct prb_bpf *b, size_t probe, const char *why);
/* Opens probe's events (base: its sampling attributes) with its program.
 * Returns 0 or -errno (the reason is kept). */
int prb_bpf_attach(struct prb_bpf *b, size_t probe, const struct perf_event_attr *base);
int prb_bpf_start(struct prb_bpf *b);
/* An fd to poll for ring buffer records (-1: none). */
int prb_bpf_poll_fd(const struct prb_bpf *b);
/* Handles the ring buffer's records. Returns 0 or the runtime's error. */
int prb_bpf_poll(struct prb_bpf *b);
int prb_bpf_finish(struct prb_bpf *b);
size_t prb_bpf_nevents(const struct prb_bpf *b);
/* Folds the maps into the runtime's aggregations and closes everything.
 * Accepts NULL. */
void prb_bpf_free(struct prb_bpf *b);

#endif /* HWT_PROBE_PROBE_BPF_INT_H */
