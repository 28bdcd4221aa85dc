/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/probe_int.h - the probe module's internals: the program's parsed
 * form (AST), its compiled byte code, tracepoint formats, the runtime's
 * state, the small hash map everything keys on, and the address-space
 * tracker that turns ips into functions. Not part of the module's contract.
 */
#ifndef HWT_PROBE_PROBE_INT_H
#define HWT_PROBE_PROBE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hwt.h"
#include "probe/probe.h"

struct btf;
#include "report/report.h"
#include "symbolize/symbolize.h"
#include "unwind/unwind.h"

/* Limits (documented in probe.h and docs/trace.md). */
#define PRB_MAX_TEXT	    (1u << 20)
#define PRB_MAX_PROBES	    4096
#define PRB_MAX_CODE	    65536
#define PRB_MAX_VARS	    256
#define PRB_MAX_AGGS	    256
#define PRB_MAX_DEPTH	    48 /* expression nesting */
#define PRB_STACK	    64 /* interpreter value stack */
#define PRB_MAX_PRINTF_ARGS 16
#define PRB_MAX_FRAMES	    128 /* frames of a ustack/kstack key */

/* ------------------------------------------------------------------------ */
/* A map from a pair of u64 to a u64 (open addressing, linear probing,
 * backward-shift deletion). Grows at 1/2 load; never shrinks. */

struct prb_map_ent {
	uint64_t a, b, v;
	bool used;
};

struct prb_map {
	struct prb_map_ent *ents;
	size_t cap; /* power of two, or 0 */
	size_t n;
};

void prb_map_fini(struct prb_map *m);
/* Pointer to the value of (a, b), or NULL. */
uint64_t *prb_map_get(const struct prb_map *m, uint64_t a, uint64_t b);
/* Sets (a, b) to v. 0 or -ENOMEM. */
int prb_map_put(struct prb_map *m, uint64_t a, uint64_t b, uint64_t v);
/* Removes (a, b) if present. */
void prb_map_del(struct prb_map *m, uint64_t a, uint64_t b);

/* A map from a tuple of typed values (nkeys of them) to an int64. */
struct prb_tmap_ent {
	struct hwt_rep_val key[HWT_REP_MAX_KEYS];
	int64_t v;
	bool used;
};

struct prb_tmap {
	struct prb_tmap_ent *ents;
	size_t cap, n;
	size_t nkeys;
};

void prb_tmap_fini(struct prb_tmap *m);
void prb_tmap_clear(struct prb_tmap *m);
struct prb_tmap_ent *prb_tmap_get(const struct prb_tmap *m, const struct hwt_rep_val *key);
/* Sets key to v. 0 or -ENOMEM. */
int prb_tmap_put(struct prb_tmap *m, const struct hwt_rep_val *key, int64_t v);
void prb_tmap_del(struct prb_tmap *m, const struct hwt_rep_val *key);

/* ------------------------------------------------------------------------ */
/* Tracepoint formats (tracefs events/SUBSYS/EVENT/format)                   */

struct prb_tp_field {
	char *name;
	char *type; /* as declared, "const char *", "char[16]" */
	uint32_t offset, size;
	bool is_signed;
	bool is_string; /* char NAME[N] (inline) */
	bool data_loc;	/* __data_loc char[] NAME: u32 (len << 16 | offset) */
};

struct prb_tp_format {
	char *name;
	uint32_t id;
	size_t nfields;
	struct prb_tp_field *fields;
};

/* Parses a format file's text. Returns 0, -HWT_EFORMAT (no ID, a field line
 * that does not parse, a field past 64 KiB), -ENOMEM. */
int prb_tp_format_parse(const char *text, size_t len, struct prb_tp_format **out);
void prb_tp_format_free(struct prb_tp_format *f);
/* Field by name, or NULL. */
const struct prb_tp_field *prb_tp_format_field(const struct prb_tp_format *f, const char *name);
/* Reads tracefs_root/events/SUB/EV/format (tracefs_root NULL: the usual
 * mounts). Returns 0, -ENOENT (no such tracepoint), -HWT_ENOTSUP (no
 * tracefs), -HWT_EFORMAT, -ENOMEM. */
int prb_tp_format_load(const char *tracefs_root, const char *subsys, const char *event,
		       struct prb_tp_format **out);
/* The tracefs directory in use (static string), or NULL. */
const char *prb_tracefs_dir(const char *tracefs_root);

/* ------------------------------------------------------------------------ */
/* The program                                                               */

enum prb_type {
	PRB_T_NONE = 0,
	PRB_T_INT,
	PRB_T_STR,   /* a string id of the rt's dict */
	PRB_T_STACK, /* a stack id of the rt's dict */
	PRB_T_PTR,   /* an address (an integer that member access follows) */
	PRB_T_LVAL,  /* a struct or array in memory: its address (not loaded) */
};

/* A value's type in full: integers have a width (bswap, casts), pointers
 * and objects in memory a BTF type. */
struct prb_ty {
	uint8_t t;    /* enum prb_type */
	uint8_t bits; /* INT: 8, 16, 32 or 64 (0: 64) */
	bool sgn;     /* INT: signed */
	int32_t tid;  /* PTR: the pointee's BTF type; LVAL: the object's (0: none) */
};

enum prb_builtin {
	PRB_B_PID,
	PRB_B_TID,
	PRB_B_CPU,
	PRB_B_NSECS,
	PRB_B_ELAPSED,
	PRB_B_COMM,
	PRB_B_FUNC,
	PRB_B_PROBE,
	PRB_B_USTACK,
	PRB_B_KSTACK,
	PRB_B_ARG0, /* .. ARG5 */
	PRB_B_RETVAL = PRB_B_ARG0 + 6,
	PRB_B_TARGET,
	PRB_B_IP,
	PRB_B_UID,
	PRB_B_GID,
	PRB_B_CURTASK, /* the current task_struct (BPF only) */
	PRB_B_COUNT_
};

/* AST node kinds. */
enum prb_node_kind {
	PRB_N_INT = 1,
	PRB_N_STR,
	PRB_N_BUILTIN, /* v: enum prb_builtin */
	PRB_N_FIELD,   /* args->name: v = field slot */
	PRB_N_SELF,    /* self->name: v = variable */
	PRB_N_THIS,    /* this->name */
	PRB_N_UNARY,   /* op: '-', '!', '~' */
	PRB_N_BINARY,  /* op: an enum prb_op */
	PRB_N_TERNARY,
	PRB_N_CALL, /* name(args): aggregating functions in @x = f() */
	/* statements */
	PRB_N_AGG,    /* @name[keys] = call */
	PRB_N_ASSIGN, /* a: SELF/THIS node, b: value */
	PRB_N_PRINTF, /* v: format index; args */
	PRB_N_EXIT,
	PRB_N_CLEAR, /* v: aggregation */
	PRB_N_PRINT, /* v: aggregation; c: how many top rows (an INT) or NULL */
	/* bpftrace's language */
	PRB_N_MAPREF, /* @name[keys] read: v = map, args = keys */
	PRB_N_IDENT,  /* a name to resolve as a constant (enum, macro): name */
	PRB_N_MEMBER, /* a->name (op '>') or a.name (op '.') */
	PRB_N_CAST,   /* (TYPE)a: name = "struct sock", "uint8", ...; v = '*'s */
	PRB_N_DEREF,  /* *a */
	PRB_N_FCALL,  /* name(args): str, ntop, bswap, kaddr, usym, ksym, buf */
	PRB_N_MAPSET, /* @name[keys] = b (a plain map) */
	PRB_N_MAPDEL, /* delete(@name[keys]): v = map, args = keys */
	PRB_N_IF,     /* if (a) b [else c]: b a BLOCK, c a BLOCK, an IF or NULL */
	PRB_N_BLOCK,  /* { statements }: args */
	PRB_N_TIME,   /* time(["fmt"]): v = the format's string, or -1 */
	PRB_N_JOIN,   /* join(a[, "sep"]): v = the separator's string, or -1 */
	PRB_N_CAT,    /* cat("file"): v = the path's string */
};

/* Binary operators (precedence climbing in parse.c). */
enum prb_op {
	PRB_OP_MUL = 1,
	PRB_OP_DIV,
	PRB_OP_MOD,
	PRB_OP_ADD,
	PRB_OP_SUB,
	PRB_OP_SHL,
	PRB_OP_SHR,
	PRB_OP_LT,
	PRB_OP_LE,
	PRB_OP_GT,
	PRB_OP_GE,
	PRB_OP_EQ,
	PRB_OP_NE,
	PRB_OP_BAND,
	PRB_OP_BXOR,
	PRB_OP_BOR,
	PRB_OP_LAND,
	PRB_OP_LOR,
};

struct prb_node {
	uint8_t kind; /* enum prb_node_kind */
	uint8_t op;
	uint8_t type;	  /* enum prb_type, set by the checker */
	struct prb_ty ty; /* the full type of an expression of bpftrace's */
	int64_t v;
	size_t pos; /* byte offset in the text */
	size_t end; /* end offset (key names come from the text) */
	struct prb_node *a, *b, *c;
	struct prb_node **args;
	size_t nargs;
	char *name;		     /* call name, field name */
	struct prb_node *next_alloc; /* every node, for freeing */
};

struct prb_probe {
	struct hwt_probe_info info; /* strings point at the fields below */
	char *text, *object, *func, *subsys, *event;
	size_t pos;
	struct prb_tp_format *tp; /* tracepoints */
	int32_t *field_map;	  /* per field slot: index into tp->fields, or -1 */
	size_t *clauses;	  /* clauses it runs, in program order */
	size_t nclauses;
	unsigned uses; /* PRB_USE_* of its clauses */
	unsigned regs; /* registers its clauses read (bit i: arg i, 6: retval) */
	/* Its clauses only count, unkeyed and unconditionally (@x = count()):
	 * live, it can be a counting event instead of a sampled one. */
	bool count_only;
	/* A clause needs the BPF path (the first such clause's reason). */
	const char *bpf_only;
	size_t bpf_only_pos;
};

/* What a probe's clauses read from a hit (picks the sample_type). */
#define PRB_USE_REGS   (1u << 0)
#define PRB_USE_RAW    (1u << 1)
#define PRB_USE_USTACK (1u << 2)
#define PRB_USE_KSTACK (1u << 3)
#define PRB_USE_FUNC   (1u << 4) /* func: symbolized from the hit's ip */

struct prb_stmt_list {
	struct prb_node **v;
	size_t n, cap;
};

struct prb_clause {
	size_t pos;
	size_t *probes;
	size_t nprobes;
	struct prb_node *pred;
	struct prb_stmt_list stmts;
	uint32_t code, ncode; /* byte code range */
	unsigned uses;
	unsigned regs; /* bit i: arg i (0..5), bit 6: retval */
	/* something only a BPF program can do (read the traced task's
	 * memory, ...): what, and where; else NULL */
	const char *bpf_only;
	size_t bpf_only_pos;
};

struct prb_var {
	char *name;
	int scope;	   /* $name: the clause it belongs to; this->: -1 */
	uint8_t type;	   /* enum prb_type; NONE until an assignment types it */
	struct prb_ty ty;  /* in full */
	size_t first_read; /* offset of a read (for "never assigned"), or SIZE_MAX */
	bool assigned;
};

struct prb_agg {
	char *name;
	size_t pos;
	bool plain;	   /* a plain map (@x[k] = v), not an aggregation */
	bool stats;	   /* bpftrace's stats(): an avg() shown with its count and total */
	struct prb_ty vty; /* a plain map's values */
	size_t plain_pos;  /* where it is first assigned */
	enum hwt_rep_func func;
	int64_t low, high, step;
	size_t nkeys;
	bool typed;
	uint32_t key_types[HWT_REP_MAX_KEYS];
	char *key_names[HWT_REP_MAX_KEYS];
};

/* printf: the format split into pieces, each a literal or one conversion. */
struct prb_fmt_piece {
	char *spec; /* a printf spec for one int64 ("%-8lld") or one
		     * string ("%5s"), or literal text (conv == 0) */
	char conv;  /* 'd','u','x','X','o','c','s','p','r', 0 for literal */
	bool stack; /* %s of a stack (a frame a line) */
	/* bits of an integer conversion: 64, or bpftrace's 32 ("%d"), 16
	 * ("%hd") and 8 ("%hhd"): it hands the 64-bit value to C's printf,
	 * which reads an int unless a length says otherwise */
	uint8_t bits;
};

struct prb_fmt {
	struct prb_fmt_piece *pieces;
	size_t npieces;
	size_t nargs;
};

/* Byte code. */
enum prb_opcode {
	PRB_I_INT = 1, /* push imm */
	PRB_I_STR,     /* push the dict id of literal a */
	PRB_I_BUILTIN, /* push builtin a */
	PRB_I_FIELD,   /* push tracepoint field slot a */
	PRB_I_SELF,    /* push self var a */
	PRB_I_THIS,    /* push this var a */
	PRB_I_NEG,
	PRB_I_NOT,
	PRB_I_BNOT,
	PRB_I_BIN,	  /* a: enum prb_op (not LAND/LOR) */
	PRB_I_BOOL,	  /* top = top != 0 */
	PRB_I_JZ,	  /* pop; jump to b when 0 */
	PRB_I_JNZ,	  /* pop; jump to b when not 0 */
	PRB_I_JMP,	  /* jump to b */
	PRB_I_PRED,	  /* pop; stop the clause (filtered) when 0 */
	PRB_I_STORE_SELF, /* pop into self var a (0 deletes it) */
	PRB_I_STORE_THIS, /* pop into this var a */
	PRB_I_AGG,	  /* pop value (when the function has one) and keys into agg a */
	PRB_I_PRINTF,	  /* pop b args, print format a */
	PRB_I_EXIT,
	PRB_I_CLEAR, /* agg a */
	PRB_I_PRINT, /* agg or map a; b: the top rows to print (0: all) */
	PRB_I_END,
	/* bpftrace's language */
	PRB_I_MAP_LOAD,	  /* pop map a's keys; push its value (0, "" when absent) */
	PRB_I_MAP_STORE,  /* pop the value and the keys into map a */
	PRB_I_MAP_DELETE, /* pop the keys; delete them from map a */
	PRB_I_READ,	  /* pop an address; push the a & 15 bytes there (signed: a & 16) */
	PRB_I_READ_STR,	  /* pop an address; push the string there (at most b bytes) */
	PRB_I_CAST,	  /* top = the low a & 127 bits (signed: a & 128) */
	PRB_I_BSWAP,	  /* top = its low a bits with their bytes swapped */
	PRB_I_NTOP,	  /* top = the address as text: a = 0 IPv4 (an integer),
			   * 1 IPv6 (16 bytes at top), 2 IPv4 (4 bytes at top) */
	PRB_I_SYM,	  /* top = the function at that address (a = 1: kernel) */
	PRB_I_BUF,	  /* pop a length and an address: push the bytes (%r) */
	PRB_I_TIME,	  /* print the time (format: string a, 0xffff: none) */
	PRB_I_JOIN,	  /* pop a char **: print its strings (separator: string a) */
	PRB_I_CAT,	  /* print the file named by string a */
};

struct prb_insn {
	uint16_t op;
	uint16_t a;
	uint32_t b;
	int64_t imm;
};

struct hwt_probe_prog {
	char *text;
	size_t len;
	struct prb_probe *probes;
	size_t nprobes, probes_cap;
	struct prb_clause *clauses;
	size_t nclauses, clauses_cap;
	struct prb_var *self_vars;
	size_t nself;
	struct prb_var *this_vars;
	size_t nthis;
	struct prb_agg *aggs;
	size_t naggs;
	char **fields; /* field slot names */
	size_t nfields;
	char **strs; /* string literals */
	size_t nstrs;
	struct prb_fmt *fmts;
	size_t nfmts;
	struct prb_insn *code;
	size_t ncode, code_cap;
	struct prb_node *nodes; /* all AST nodes */
	bool has_pt;
	bool bpftrace_style; /* a #! bpftrace script: bpftrace's output layout */
	struct btf *btf;     /* the kernel's types, loaded when a cast or a
			      * pointer field needs them */
	struct hwt_probe_config cfg;
};

/* parse.c: text -> AST (probes, clauses, nodes). */
int prb_parse(struct hwt_probe_prog *prog, struct hwt_probe_diag *diag);
/* compile.c: types, probe checks, byte code. */
int prb_compile(struct hwt_probe_prog *prog, struct hwt_probe_diag *diag);
/* Probe spec parsing: fills p from text[pos, pos+len). */
int prb_probe_spec(struct hwt_probe_prog *prog, struct prb_probe *p, const char *spec, size_t pos,
		   struct hwt_probe_diag *diag);

/* The error for a name that is no variable or constant (suggesting the
 * closest builtin). Returns -HWT_EINVAL. */
int prb_unknown_name(const struct hwt_probe_prog *prog, const char *name, size_t pos,
		     struct hwt_probe_diag *diag);

/* Edit distance (for suggestions). */
size_t prb_edit_distance(const char *a, const char *b);

/* bt_print.c: bpftrace's layout of an aggregation (a snapshot), of a plain
 * map and of a stack; top: the last rows only (0: all). */
int prb_bt_print_agg(const struct hwt_probe_prog *prog, size_t agg, const struct hwt_rep_agg *a,
		     const struct hwt_rep_dict *dict, uint32_t top, struct hwt_buf *out);
int prb_bt_print_map(const struct hwt_probe_prog *prog, size_t map, const struct prb_tmap *m,
		     const struct hwt_rep_dict *dict, uint32_t top, struct hwt_buf *out);
int prb_bt_print_stack(struct hwt_buf *out, const struct hwt_rep_dict *dict, uint32_t stack);
/* A plain map as JSON: {"name", "map": true, "rows": [{"key", "value"}]}. */
int prb_json_print_map(const struct hwt_probe_prog *prog, size_t map, const struct prb_tmap *m,
		       const struct hwt_rep_dict *dict, struct hwt_buf *out);

/* ------------------------------------------------------------------------ */
/* Address spaces and symbols (syms.c)                                       */

struct prb_syms;

int prb_syms_alloc(struct prb_syms **out, struct hwt_rep_dict *dict, const char *proc_root,
		   const struct hwt_logger *log);
void prb_syms_free(struct prb_syms *s);
void prb_syms_set_live(struct prb_syms *s, bool live);
int prb_syms_mmap(struct prb_syms *s, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		  const char *path);
int prb_syms_comm(struct prb_syms *s, int32_t pid, int32_t tid, const char *comm, bool exec);
int prb_syms_fork(struct prb_syms *s, int32_t ppid, int32_t pid, int32_t tid);
void prb_syms_exit(struct prb_syms *s, int32_t pid, int32_t tid);
/* Dict string id of the comm of tid ("" id 0 when unknown). */
uint32_t prb_syms_comm_id(struct prb_syms *s, int32_t pid, int32_t tid);
/* Dict frame id of ip in pid (kernel addresses through kallsyms). caller:
 * ip is a return address (look up ip - 1). *known is false when no
 * function was found. Returns 0, -ENOMEM. */
int prb_syms_frame(struct prb_syms *s, int32_t pid, uint64_t ip, bool caller, uint32_t *id,
		   bool *known);
/* The mapping of ip in pid: object path, start, pgoff. Returns 0 or
 * -HWT_ENOSYM. */
int prb_syms_map_of(struct prb_syms *s, int32_t pid, uint64_t ip, const char **path,
		    uint64_t *start, uint64_t *pgoff);
/* Calls fn for every mapping (any pid) of an object whose path or
 * basename is obj. */
int prb_syms_each_map(struct prb_syms *s, const char *obj,
		      int (*fn)(void *ctx, int32_t pid, const char *path, uint64_t start,
				uint64_t end, uint64_t pgoff),
		      void *ctx);
struct hwt_sym_cache *prb_syms_cache(struct prb_syms *s);
/* Addresses from here up are the kernel's (x86-64). */
#define PRB_KERNEL_START 0xffff800000000000ull

/* Kernel frames are named from kallsyms (a recording's copy; owned by
 * the cache) instead of proc_root's. */
void prb_syms_set_kallsyms(struct prb_syms *s, struct hwt_sym_obj *kallsyms);
/* Whether a probe's object names the kernel: "kernel", "vmlinux" or
 * perf's "[kernel.kallsyms]". */
bool prb_syms_is_kernel(const char *obj);
/* The object mapped at ip in pid, opened (NULL when it cannot be: *file
 * then says whether the mapping names a file), and ip's object address.
 * Returns 0 or -HWT_ENOSYM (nothing mapped there). For the unwinder. */
int prb_syms_obj_of(struct prb_syms *s, int32_t pid, uint64_t ip, struct hwt_sym_obj **obj,
		    uint64_t *addr, bool *file);

/* ------------------------------------------------------------------------ */
/* The runtime                                                               */

/* A resolved pt: probe range in one mapping. */
struct prb_pt_range {
	uint64_t lo, hi; /* runtime addresses: [lo, hi) of the function */
	uint64_t at;	 /* FUNC+OFF: the instruction's runtime address */
	int32_t pid;	 /* -1: every process (kernel code) */
	uint32_t probe;
};

/* The PT leg of an offline run (probe/pt.c): resolves the pt: probes,
 * rewinds the session, decodes its PT and fires them. Returns 0 or an error
 * with diag filled. */
struct hwt_fmt_session;
struct prb_agg_source;
int prb_pt_offline(struct hwt_probe_rt *rt, struct hwt_fmt_session *session,
		   struct hwt_probe_diag *diag);
/* Takes the recording's kernel half (rt->kern_*, kcore, kallsyms) for pt:
 * probes on kernel functions and for naming kernel frames. */
void prb_pt_kernel(struct hwt_probe_rt *rt, const struct hwt_fmt_session *session);

struct hwt_probe_rt {
	const struct hwt_probe_prog *prog;
	struct hwt_probe_config cfg;
	struct hwt_rep_dict *dict;
	struct hwt_rep_agg **aggs;
	uint32_t *str_ids;   /* literal -> dict id */
	uint32_t *probe_ids; /* probe text -> dict id */
	uint32_t *func_ids;  /* probe func -> dict id (0: none) */
	struct prb_map self; /* (tid, var) -> value */
	int64_t *this_vals;
	struct prb_syms *syms;
	struct hwt_buf out; /* printf scratch */
	int32_t target;
	uint64_t t0; /* first time seen, for elapsed */
	bool began, ended, exited, live;
	struct hwt_probe_stats stats;
	struct prb_pt_range *pt;
	size_t npt;
	/* the recording's kernel half (hwt_pts_session_kernel()), for pt:
	 * probes on kernel functions; set by the offline run */
	bool kern_known, kern_traced;
	const uint8_t *kcore;
	size_t kcore_len;
	struct hwt_sym_obj *kallsyms;
	/* limits (cfg's -x options), kept on every path */
	uint32_t *agg_max;   /* keys per aggregation */
	uint64_t *agg_drops; /* updates dropped per aggregation */
	uint32_t self_max;   /* entries of each thread variable map */
	uint32_t self_n[2];  /* entries now: integers, strings */
	uint32_t strsize;
	/* aggregation contents kept elsewhere (BPF maps), or NULL */
	const struct prb_agg_source *src;
	struct prb_tmap *maps; /* plain maps (prog->aggs[i].plain) */
	/* the hit being run */
	const struct hwt_probe_hit *hit;
	size_t probe;
	/* offline samples with user registers and stack (--call-graph
	 * dwarf): their ustack is unwound from the CFI (probe/offline.c) */
	struct hwt_unw *unw;
	int32_t unw_pid;
	uint64_t ustack[PRB_MAX_FRAMES];
};

#endif /* HWT_PROBE_PROBE_INT_H */
