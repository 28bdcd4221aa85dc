/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/compile_int.h - what the compiler's files share: its state, the
 * byte code emitter, and the typing of bpftrace's constructs (compile_bt.c:
 * maps, $variables, if/else, casts and member access through the kernel's
 * BTF, str(), ntop(), time(), join() ...). Not part of the module's
 * contract.
 */
#ifndef HWT_PROBE_COMPILE_INT_H
#define HWT_PROBE_COMPILE_INT_H

#include "probe/probe_int.h"

struct comp {
	struct hwt_probe_prog *prog;
	struct hwt_probe_diag *diag;
	struct prb_clause *cl;
	int depth, max_depth;
	int err;
};

int cfail(struct hwt_probe_prog *prog, struct hwt_probe_diag *diag, size_t pos, int err,
	  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define FAIL(c, pos, e, ...) ((c)->err = cfail((c)->prog, (c)->diag, (pos), (e), __VA_ARGS__))

const char *prb_type_name(int t);
/* Appends an instruction; its index or an error. */
int emit(struct comp *c, uint16_t op, uint16_t a, uint32_t b, int64_t imm, size_t pos);
/* Tracks the value stack's depth. */
void push(struct comp *c, int n);
/* Code that leaves the node's value on the stack; its type or an error. */
int gen_expr(struct comp *c, struct prb_node *n);
int gen_stmt(struct comp *c, struct prb_node *n);

/* The full type of an expression without code (PRB_T_NONE when it
 * depends on something not typed yet). */
int prb_infer_ty(struct hwt_probe_prog *prog, const struct prb_clause *cl, const struct prb_node *n,
		 struct prb_ty *ty);

/* Code for key k of aggregation or map agg (typed at its first use,
 * checked at the others). 0 or an error. */
int prb_gen_key(struct comp *c, struct prb_agg *agg, size_t k, struct prb_node *arg);

/* compile_bt.c */

/* Code for the nodes of bpftrace's language (expressions and statements);
 * the type of an expression, 0 for a statement, or an error. */
int prb_gen_bt(struct comp *c, struct prb_node *n);
/* The type of an expression without code (PRB_T_NONE when it depends on
 * something not typed yet), with its BTF type and width in *ty. */
int prb_infer_bt(struct hwt_probe_prog *prog, const struct prb_clause *cl, const struct prb_node *n,
		 struct prb_ty *ty);
/* Marks the clause as needing the BPF path (the first reason is kept). */
void prb_needs_bpf(struct comp *c, size_t pos, const char *what);
/* A tracepoint field's type in BTF terms (a pointer to a struct, ...). */
void prb_field_ty(struct hwt_probe_prog *prog, const struct prb_tp_field *f, struct prb_ty *ty);

#endif /* HWT_PROBE_COMPILE_INT_H */
