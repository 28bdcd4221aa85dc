/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/bpf_gen.c - the BPF back end's code generator: the byte code of a
 * probe's clauses (compile.c) becomes one BPF program, written directly as
 * instructions (no compiler at run time). The byte code is a stack machine;
 * its value stack lives in the BPF stack frame, one 8-byte slot per depth,
 * and the generator follows the kind of every slot statically (an integer,
 * a pointer to a string buffer, a function address to symbolize later, a
 * probe's name or function as a constant, a stack id), so each operation
 * is emitted for the kinds it meets. Where the byte code does something
 * with no BPF form (a kind the kernel cannot hold, a value stack deeper
 * than the BPF stack), generation stops with the reason and the probe runs
 * on the sampling path instead.
 *
 * Registers: r6 the context, r7 this probe's per-CPU scratch value (its
 * counters, this-> variables, string buffers, the key being built), r8 the
 * control block, r9 a value pointer kept across helper calls; r0-r5 are
 * temporaries. The verifier's limits hold by construction: no loops, at
 * most 28 value slots (and their shadows: a stack value's second word) in
 * the 512-byte stack, every map value pointer checked for NULL, every ring
 * buffer reservation submitted on every path.
 *
 * Semantics follow the interpreter in rt.c exactly: signed 64-bit
 * arithmetic, a division by zero stops the clause run and counts a fault,
 * a false predicate counts a filtered run, self-> variables assigned 0 (or
 * "") are deleted, this-> variables start at 0 on each hit.
 */
#include "probe/probe_bpf_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Value stack slots: fp-16 .. fp-1 are temporaries for helper keys; each
 * slot has a shadow slot for the second word of a stack value (the return
 * address an entry uprobe adds). */
#define TMP0	    (-8)
#define TMP1	    (-16)
#define MAX_SLOTS   28
#define SLOT(i)	    ((int16_t)(-16 - 8 * ((int)(i) + 1)))
#define SHADOW(i)   ((int16_t)(-16 - 8 * MAX_SLOTS - 8 * ((int)(i) + 1)))
#define SCRATCH_MAX (32 * 1024)

/* Static kinds of value stack slots. */
enum vkind {
	VK_INT = 1,
	VK_BUF,	      /* a pointer to a string value: a tag and strsize bytes
		       * (NUL-padded), as maps and records hold it */
	VK_FUNCIP,    /* an instruction address (symbolized by hwtrace) */
	VK_PROBE,     /* the text of probe cval (nothing in the slot) */
	VK_PROBEFUNC, /* the function of probe cval (nothing in the slot) */
	VK_STACK,     /* pid << 32 | stack id, or 0xffffffff << 32 | id */
};

struct vstate {
	uint8_t kind[PRB_STACK];
	int64_t cval[PRB_STACK];
	size_t sp;
	bool live; /* reachable */
};

struct label {
	int32_t at; /* instruction index, -1 until bound */
};

struct fixup {
	uint32_t insn;
	uint32_t label;
};

struct gen {
	const struct hwt_probe_prog *prog;
	const struct prb_probe *p;
	size_t probe;
	const struct prb_bpf_layout *lay;
	struct prb_bpf_code *out;
	char *why;
	size_t whylen;
	int err;
	enum prb_bpf_filter filter;
	int32_t target;

	struct vstate st;
	struct label *labels;
	size_t nlabels, labcap;
	struct fixup *fixes;
	size_t nfixes, fixcap;
	/* per byte-code pc of the clause: its label and the state jumps
	 * bring there */
	uint32_t *pc_label;
	struct vstate *pc_state;
	uint32_t cl_base, cl_len;

	uint32_t scratch; /* next free byte of the scratch value */
	uint32_t keybuf;  /* the key / value being built */
	uint32_t this_off[PRB_MAX_VARS];
	uint32_t stackbuf; /* 8 bytes for bpf_get_stack's first frame */
	uint32_t valbuf;   /* a map value being stored */
	bool fault_used;   /* the clause can divide by zero */
};

static int nosup(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int nosup(struct gen *g, const char *fmt, ...)
{
	va_list ap;

	if (g->err)
		return g->err;
	va_start(ap, fmt);
	if (g->why && g->whylen)
		vsnprintf(g->why, g->whylen, fmt, ap);
	va_end(ap);
	g->err = -HWT_ENOTSUP;
	return g->err;
}

/* ------------------------------------------------------------------------ */
/* Emission                                                                  */

static void emit(struct gen *g, struct bpf_insn in)
{
	struct prb_bpf_code *c = g->out;

	if (g->err)
		return;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct bpf_insn *v = realloc(c->insns, cap * sizeof(*v));

		if (!v) {
			g->err = -ENOMEM;
			return;
		}
		c->insns = v;
		c->cap = cap;
	}
	c->insns[c->n++] = in;
}

static void reloc(struct gen *g)
{
	struct prb_bpf_code *c = g->out;

	if (g->err)
		return;
	if (c->nrelocs == c->relcap) {
		size_t cap = c->relcap ? c->relcap * 2 : 32;
		uint32_t *v = realloc(c->relocs, cap * sizeof(*v));

		if (!v) {
			g->err = -ENOMEM;
			return;
		}
		c->relocs = v;
		c->relcap = cap;
	}
	c->relocs[c->nrelocs++] = (uint32_t)c->n;
}

static void ld_imm64(struct gen *g, int reg, uint64_t v)
{
	emit(g, prb_bpf_insn(BPF_LD | BPF_DW | BPF_IMM, (uint8_t)reg, 0, 0, (int32_t)(uint32_t)v));
	emit(g, prb_bpf_insn(0, 0, 0, 0, (int32_t)(uint32_t)(v >> 32)));
}

/* reg = the map of slot (an fd for helpers). */
static void ld_map(struct gen *g, int reg, uint32_t slot)
{
	reloc(g);
	emit(g, prb_bpf_insn(BPF_LD | BPF_DW | BPF_IMM, (uint8_t)reg, BPF_PSEUDO_MAP_FD, 0,
			     (int32_t)slot));
	emit(g, prb_bpf_insn(0, 0, 0, 0, 0));
}

/* reg = a pointer into the value of array map slot (element 0). */
static void ld_map_value(struct gen *g, int reg, uint32_t slot, uint32_t off)
{
	reloc(g);
	emit(g, prb_bpf_insn(BPF_LD | BPF_DW | BPF_IMM, (uint8_t)reg, BPF_PSEUDO_MAP_VALUE, 0,
			     (int32_t)slot));
	emit(g, prb_bpf_insn(0, 0, 0, 0, (int32_t)off));
}

static void set_imm(struct gen *g, int reg, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX)
		emit(g, BI_MOV64_IMM(reg, (int32_t)v));
	else
		ld_imm64(g, reg, (uint64_t)v);
}

static uint32_t new_label(struct gen *g)
{
	if (g->nlabels == g->labcap) {
		size_t cap = g->labcap ? g->labcap * 2 : 64;
		struct label *v = realloc(g->labels, cap * sizeof(*v));

		if (!v) {
			g->err = -ENOMEM;
			return 0;
		}
		g->labels = v;
		g->labcap = cap;
	}
	g->labels[g->nlabels].at = -1;
	return (uint32_t)g->nlabels++;
}

/* Emits a jump (its off is fixed when the label is bound). */
static void jump(struct gen *g, struct bpf_insn in, uint32_t label)
{
	if (g->err)
		return;
	if (g->nfixes == g->fixcap) {
		size_t cap = g->fixcap ? g->fixcap * 2 : 64;
		struct fixup *v = realloc(g->fixes, cap * sizeof(*v));

		if (!v) {
			g->err = -ENOMEM;
			return;
		}
		g->fixes = v;
		g->fixcap = cap;
	}
	g->fixes[g->nfixes++] = (struct fixup){(uint32_t)g->out->n, label};
	emit(g, in);
}

static void bind(struct gen *g, uint32_t label)
{
	if (!g->err)
		g->labels[label].at = (int32_t)g->out->n;
}

static int resolve(struct gen *g)
{
	for (size_t i = 0; i < g->nfixes && !g->err; i++) {
		const struct fixup *f = &g->fixes[i];
		int32_t at = g->labels[f->label].at;
		int32_t off = at - (int32_t)f->insn - 1;

		if (at < 0 || off < 0 || off > INT16_MAX)
			return nosup(g, "the program is too large for a BPF jump");
		g->out->insns[f->insn].off = (int16_t)off;
	}
	return g->err;
}

/* Adds 1 to the 8-byte counter at scratch offset off. */
static void count(struct gen *g, uint32_t off)
{
	emit(g, BI_LDX(BPF_DW, 1, 7, (int16_t)off));
	emit(g, BI_ALU64_IMM(BPF_ADD, 1, 1));
	emit(g, BI_STX(BPF_DW, 7, 1, (int16_t)off));
}

static uint32_t alloc_scratch(struct gen *g, uint32_t n)
{
	uint32_t at = g->scratch;

	n = (n + 7) & ~7u;
	if (g->scratch + n > SCRATCH_MAX) {
		nosup(g, "the clauses need more than %d KiB of per-CPU work space",
		      SCRATCH_MAX / 1024);
		return 0;
	}
	g->scratch += n;
	return at;
}

/* Zeroes n bytes (a multiple of 8) at scratch offset off. */
static void zero_scratch(struct gen *g, uint32_t off, uint32_t n)
{
	for (uint32_t i = 0; i < n; i += 8)
		emit(g, BI_ST(BPF_DW, 7, (int16_t)(off + i), 0));
}

/* Copies n bytes (a multiple of 8) from [src + soff] to [dst + doff]
 * through r5 (src and dst are never r5). */
static void copy_words(struct gen *g, int dst, int16_t doff, int src, int16_t soff, uint32_t n)
{
	for (uint32_t i = 0; i < n; i += 8) {
		emit(g, BI_LDX(BPF_DW, 5, (uint8_t)src, (int16_t)(soff + i)));
		emit(g, BI_STX(BPF_DW, (uint8_t)dst, 5, (int16_t)(doff + i)));
	}
}

/* ------------------------------------------------------------------------ */
/* The value stack                                                           */

static void push(struct gen *g, enum vkind k, int64_t cval)
{
	if (g->st.sp >= MAX_SLOTS) {
		nosup(g, "a clause needs more than %d values at once on the BPF stack", MAX_SLOTS);
		return;
	}
	g->st.kind[g->st.sp] = (uint8_t)k;
	g->st.cval[g->st.sp] = cval;
	g->st.sp++;
}

/* Pushes the value of reg. */
static void push_reg(struct gen *g, int reg, enum vkind k)
{
	size_t at = g->st.sp;

	push(g, k, 0);
	emit(g, BI_STX(BPF_DW, BPF_REG_10, (uint8_t)reg, SLOT(at)));
}

/* Pushes a pointer to a string buffer at scratch offset off. */
static void push_buf(struct gen *g, uint32_t off)
{
	emit(g, BI_MOV64_REG(1, 7));
	emit(g, BI_ALU64_IMM(BPF_ADD, 1, (int32_t)off));
	push_reg(g, 1, VK_BUF);
}

static void load_slot(struct gen *g, int reg, size_t i)
{
	emit(g, BI_LDX(BPF_DW, (uint8_t)reg, BPF_REG_10, SLOT(i)));
}

static uint32_t strsize(const struct gen *g)
{
	return g->lay->lim.strsize;
}

static uint32_t svsize(const struct gen *g)
{
	return g->lay->sv_size;
}

/* A new string value in the scratch area, zeroed (tag 0: bytes). */
static uint32_t new_sv(struct gen *g)
{
	uint32_t r = alloc_scratch(g, svsize(g));

	zero_scratch(g, r, svsize(g));
	return r;
}

/* Writes the string value (tag and payload) of slot i to [dst + off]. */
static void write_sv(struct gen *g, size_t i, int dst, int16_t off)
{
	uint32_t from = 16; /* payload bytes written before the zero fill */

	switch (g->st.kind[i]) {
	case VK_BUF:
		load_slot(g, 1, i);
		copy_words(g, dst, off, 1, 0, svsize(g));
		return;
	case VK_FUNCIP:
		emit(g, BI_ST(BPF_DW, (uint8_t)dst, off, PRB_SV_FUNC_IP));
		load_slot(g, 1, i);
		emit(g, BI_STX(BPF_DW, (uint8_t)dst, 1, (int16_t)(off + 16)));
		emit(g, BI_CALL(BPF_FUNC_get_current_pid_tgid));
		emit(g, BI_ALU64_IMM(BPF_RSH, 0, 32));
		emit(g, BI_STX(BPF_DW, (uint8_t)dst, 0, (int16_t)(off + 8)));
		break;
	case VK_PROBE:
	case VK_PROBEFUNC:
		emit(g, BI_ST(BPF_DW, (uint8_t)dst, off,
			      g->st.kind[i] == VK_PROBE ? PRB_SV_PROBE : PRB_SV_PROBE_FUNC));
		emit(g, BI_ST(BPF_DW, (uint8_t)dst, (int16_t)(off + 8), (int32_t)g->st.cval[i]));
		emit(g, BI_ST(BPF_DW, (uint8_t)dst, (int16_t)(off + 16), 0));
		break;
	default:
		nosup(g, "a value that is not a string where a string is kept");
		return;
	}
	for (uint32_t w = from; w < strsize(g); w += 8)
		emit(g, BI_ST(BPF_DW, (uint8_t)dst, (int16_t)(off + 8 + w), 0));
}

/* ------------------------------------------------------------------------ */
/* Builtins and fields                                                       */

static bool kprobe_ctx(const struct gen *g)
{
	return g->out->type == BPF_PROG_TYPE_KPROBE;
}

/* pt_regs offsets (x86-64) of arg0..arg5 and retval. */
static const int16_t reg_off[HWT_PROBE_NREGS] = {112, 104, 96, 88, 72, 64, 80};
#define PT_REGS_IP 128
#define PT_REGS_SP 152

/* r0 = the instruction address of the hit. */
static void load_ip(struct gen *g)
{
	if (g->out->type != BPF_PROG_TYPE_TRACEPOINT) {
		/* pt_regs, or bpf_perf_event_data whose regs come first */
		emit(g, BI_LDX(BPF_DW, 0, 6, PT_REGS_IP));
		return;
	}
	/* a tracepoint's sample ip is its caller's, the kernel stack's first
	 * frame */
	emit(g, BI_ST(BPF_DW, 7, (int16_t)g->stackbuf, 0));
	emit(g, BI_MOV64_REG(1, 6));
	emit(g, BI_MOV64_REG(2, 7));
	emit(g, BI_ALU64_IMM(BPF_ADD, 2, (int32_t)g->stackbuf));
	emit(g, BI_MOV64_IMM(3, 8));
	emit(g, BI_MOV64_IMM(4, 0));
	emit(g, BI_CALL(BPF_FUNC_get_stack));
	emit(g, BI_LDX(BPF_DW, 0, 7, (int16_t)g->stackbuf));
}

static void gen_stack(struct gen *g, bool user)
{
	uint32_t ok = new_label(g);

	emit(g, BI_MOV64_REG(1, 6));
	ld_map(g, 2, PRB_MS_STACKS);
	emit(g, BI_MOV64_IMM(3, user ? BPF_F_USER_STACK : 0));
	emit(g, BI_CALL(BPF_FUNC_get_stackid));
	jump(g, BI_JMP_IMM(BPF_JSGE, 0, 0, 0), ok);
	count(g, PRB_SC_STACK_ERRORS);
	emit(g, BI_MOV64_IMM(0, -1)); /* 0xffffffff in the low half */
	bind(g, ok);
	emit(g, BI_MOV32_REG(9, 0)); /* zero-extends the id */
	if (user) {
		emit(g, BI_CALL(BPF_FUNC_get_current_pid_tgid));
		emit(g, BI_ALU64_IMM(BPF_RSH, 0, 32));
	} else {
		emit(g, BI_MOV64_IMM(0, -1));
	}
	emit(g, BI_ALU64_IMM(BPF_LSH, 0, 32));
	emit(g, BI_ALU64_REG(BPF_OR, 0, 9));
	push_reg(g, 0, VK_STACK);
	/* at a function's first instruction the caller's frame is only the
	 * return address at [sp] (as the sampling path takes it) */
	if (user && g->p->info.kind == HWT_PROBE_UPROBE && !g->p->info.offset) {
		emit(g, BI_ST(BPF_DW, BPF_REG_10, TMP0, 0));
		emit(g, BI_MOV64_REG(1, BPF_REG_10));
		emit(g, BI_ALU64_IMM(BPF_ADD, 1, TMP0));
		emit(g, BI_MOV64_IMM(2, 8));
		emit(g, BI_LDX(BPF_DW, 3, 6, PT_REGS_SP));
		emit(g, BI_CALL(BPF_FUNC_probe_read_user));
		emit(g, BI_LDX(BPF_DW, 0, BPF_REG_10, TMP0));
	} else {
		emit(g, BI_MOV64_IMM(0, 0));
	}
	emit(g, BI_STX(BPF_DW, BPF_REG_10, 0, SHADOW(g->st.sp - 1)));
}

static void gen_builtin(struct gen *g, unsigned b)
{
	enum hwt_probe_kind k = g->p->info.kind;

	switch (b) {
	case PRB_B_PID:
	case PRB_B_TID:
		emit(g, BI_CALL(BPF_FUNC_get_current_pid_tgid));
		if (b == PRB_B_PID)
			emit(g, BI_ALU64_IMM(BPF_RSH, 0, 32));
		else
			emit(g, BI_MOV32_REG(0, 0));
		push_reg(g, 0, VK_INT);
		return;
	case PRB_B_CPU:
		emit(g, BI_CALL(BPF_FUNC_get_smp_processor_id));
		push_reg(g, 0, VK_INT);
		return;
	case PRB_B_NSECS:
	case PRB_B_ELAPSED:
		emit(g, BI_CALL(BPF_FUNC_ktime_get_ns));
		if (b == PRB_B_ELAPSED) {
			emit(g, BI_LDX(BPF_DW, 1, 8, offsetof(struct prb_bpf_control, t0)));
			emit(g, BI_ALU64_REG(BPF_SUB, 0, 1));
		}
		push_reg(g, 0, VK_INT);
		return;
	case PRB_B_COMM: {
		uint32_t r = new_sv(g);

		emit(g, BI_MOV64_REG(1, 7));
		emit(g, BI_ALU64_IMM(BPF_ADD, 1, (int32_t)r + 8));
		emit(g, BI_MOV64_IMM(2, 16));
		emit(g, BI_CALL(BPF_FUNC_get_current_comm));
		push_buf(g, r);
		return;
	}
	case PRB_B_FUNC:
		if (k == HWT_PROBE_UPROBE || k == HWT_PROBE_URETPROBE || k == HWT_PROBE_KPROBE ||
		    k == HWT_PROBE_KRETPROBE) {
			push(g, VK_PROBEFUNC, (int64_t)g->probe);
			return;
		}
		load_ip(g);
		push_reg(g, 0, VK_FUNCIP);
		return;
	case PRB_B_PROBE:
		push(g, VK_PROBE, (int64_t)g->probe);
		return;
	case PRB_B_USTACK:
	case PRB_B_KSTACK:
		gen_stack(g, b == PRB_B_USTACK);
		return;
	case PRB_B_TARGET:
		set_imm(g, 0, g->target);
		push_reg(g, 0, VK_INT);
		return;
	case PRB_B_IP:
		load_ip(g);
		push_reg(g, 0, VK_INT);
		return;
	case PRB_B_CURTASK:
		emit(g, BI_CALL(BPF_FUNC_get_current_task));
		push_reg(g, 0, VK_INT);
		return;
	case PRB_B_UID:
	case PRB_B_GID:
		emit(g, BI_CALL(BPF_FUNC_get_current_uid_gid));
		if (b == PRB_B_GID)
			emit(g, BI_ALU64_IMM(BPF_RSH, 0, 32));
		else
			emit(g, BI_MOV32_REG(0, 0));
		push_reg(g, 0, VK_INT);
		return;
	}
	if (b >= PRB_B_ARG0 && b <= PRB_B_RETVAL) {
		if (!kprobe_ctx(g)) {
			nosup(g, "registers at %s", g->p->text);
			return;
		}
		emit(g, BI_LDX(BPF_DW, 0, 6, reg_off[b - PRB_B_ARG0]));
		push_reg(g, 0, VK_INT);
		return;
	}
	nosup(g, "builtin %u", b);
}

static void gen_field(struct gen *g, unsigned slot)
{
	const struct prb_probe *p = g->p;
	const struct prb_tp_field *f;
	int32_t fi;

	if (!p->tp || !p->field_map || (fi = p->field_map[slot]) < 0) {
		set_imm(g, 0, 0);
		push_reg(g, 0, VK_INT);
		return;
	}
	f = &p->tp->fields[fi];
	if (f->offset < 8) {
		/* the kernel keeps the registers there for BPF: the common
		 * fields come from helpers */
		if (!strcmp(f->name, "common_pid")) {
			gen_builtin(g, PRB_B_TID);
			return;
		}
		if (!strcmp(f->name, "common_type")) {
			set_imm(g, 0, p->tp->id);
			push_reg(g, 0, VK_INT);
			return;
		}
		nosup(g, "field %s (the first 8 bytes of a tracepoint record are not given to BPF)",
		      f->name);
		return;
	}
	if (f->is_string || f->data_loc) {
		uint32_t r = new_sv(g);

		emit(g, BI_MOV64_REG(1, 7));
		emit(g, BI_ALU64_IMM(BPF_ADD, 1, (int32_t)r + 8));
		if (f->data_loc) {
			/* u32 (length << 16 | offset) */
			emit(g, BI_LDX(BPF_W, 3, 6, (int16_t)f->offset));
			emit(g, BI_ALU64_IMM(BPF_AND, 3, 0xffff));
			emit(g, BI_ALU64_REG(BPF_ADD, 3, 6));
			emit(g, BI_MOV64_IMM(2, (int32_t)strsize(g)));
			emit(g, BI_CALL(BPF_FUNC_probe_read_kernel_str));
		} else {
			uint32_t n = f->size < strsize(g) - 1 ? f->size : strsize(g) - 1;

			emit(g, BI_MOV64_IMM(2, (int32_t)n));
			emit(g, BI_MOV64_REG(3, 6));
			emit(g, BI_ALU64_IMM(BPF_ADD, 3, (int32_t)f->offset));
			emit(g, BI_CALL(BPF_FUNC_probe_read_kernel));
		}
		push_buf(g, r);
		return;
	}
	if (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8) {
		set_imm(g, 0, 0); /* an array of numbers: not one value (as rt.c) */
		push_reg(g, 0, VK_INT);
		return;
	}
	{
		static const uint8_t sizes[9] = {
		    [1] = BPF_B, [2] = BPF_H, [4] = BPF_W, [8] = BPF_DW};

		if (f->offset % f->size == 0 && f->offset + f->size <= 0x7fff) {
			emit(g, BI_LDX(sizes[f->size], 0, 6, (int16_t)f->offset));
		} else {
			emit(g, BI_ST(BPF_DW, BPF_REG_10, TMP0, 0));
			emit(g, BI_MOV64_REG(1, BPF_REG_10));
			emit(g, BI_ALU64_IMM(BPF_ADD, 1, TMP0));
			emit(g, BI_MOV64_IMM(2, (int32_t)f->size));
			emit(g, BI_MOV64_REG(3, 6));
			emit(g, BI_ALU64_IMM(BPF_ADD, 3, (int32_t)f->offset));
			emit(g, BI_CALL(BPF_FUNC_probe_read_kernel));
			emit(g, BI_LDX(sizes[f->size], 0, BPF_REG_10, TMP0));
		}
		if (f->is_signed && f->size < 8) {
			emit(g, BI_ALU64_IMM(BPF_LSH, 0, 64 - 8 * (int)f->size));
			emit(g, BI_ALU64_IMM(BPF_ARSH, 0, 64 - 8 * (int)f->size));
		}
		push_reg(g, 0, VK_INT);
	}
}

/* ------------------------------------------------------------------------ */
/* Variables                                                                 */

/* [fp-8] = (u32 tid, u32 var). */
static void self_key(struct gen *g, unsigned var)
{
	emit(g, BI_CALL(BPF_FUNC_get_current_pid_tgid));
	emit(g, BI_STX(BPF_W, BPF_REG_10, 0, TMP0));
	emit(g, BI_ST(BPF_W, BPF_REG_10, TMP0 + 4, (int32_t)var));
}

static void gen_self_load(struct gen *g, unsigned var)
{
	bool str = g->prog->self_vars[var].type == PRB_T_STR;
	uint32_t none = new_label(g);

	self_key(g, var);
	ld_map(g, 1, str ? PRB_MS_SELF_STR : PRB_MS_SELF);
	emit(g, BI_MOV64_REG(2, BPF_REG_10));
	emit(g, BI_ALU64_IMM(BPF_ADD, 2, TMP0));
	emit(g, BI_CALL(BPF_FUNC_map_lookup_elem));
	if (!str) {
		uint32_t done = new_label(g);

		emit(g, BI_MOV64_IMM(1, 0));
		jump(g, BI_JMP_IMM(BPF_JEQ, 0, 0, 0), done);
		emit(g, BI_LDX(BPF_DW, 1, 0, 0));
		bind(g, done);
		push_reg(g, 1, VK_INT);
		return;
	}
	{
		uint32_t r = new_sv(g);

		jump(g, BI_JMP_IMM(BPF_JEQ, 0, 0, 0), none);
		copy_words(g, 7, (int16_t)r, 0, 0, svsize(g));
		bind(g, none);
		push_buf(g, r);
	}
}

static void gen_self_store(struct gen *g, unsigned var)
{
	bool str = g->prog->self_vars[var].type == PRB_T_STR;
	size_t v = g->st.sp - 1;
	uint32_t del = new_label(g), done = new_label(g), ok = new_label(g);

	self_key(g, var);
	if (str) {
		/* "" deletes, as 0 does: the value's tag and first word */
		write_sv(g, v, 7, (int16_t)g->keybuf);
		emit(g, BI_LDX(BPF_DW, 1, 7, (int16_t)g->keybuf));
		emit(g, BI_LDX(BPF_DW, 2, 7, (int16_t)(g->keybuf + 8)));
		emit(g, BI_ALU64_REG(BPF_OR, 1, 2));
	} else {
		load_slot(g, 1, v);
	}
	jump(g, BI_JMP_IMM(BPF_JEQ, 1, 0, 0), del);
	if (str) {
		ld_map(g, 1, PRB_MS_SELF_STR);
		emit(g, BI_MOV64_REG(2, BPF_REG_10));
		emit(g, BI_ALU64_IMM(BPF_ADD, 2, TMP0));
		emit(g, BI_MOV64_REG(3, 7));
		emit(g, BI_ALU64_IMM(BPF_ADD, 3, (int32_t)g->keybuf));
	} else {
		ld_map(g, 1, PRB_MS_SELF);
		emit(g, BI_MOV64_REG(2, BPF_REG_10));
		emit(g, BI_ALU64_IMM(BPF_ADD, 2, TMP0));
		emit(g, BI_MOV64_REG(3, BPF_REG_10));
		emit(g, BI_ALU64_IMM(BPF_ADD, 3, SLOT(v)));
	}
	emit(g, BI_MOV64_IMM(4, BPF_ANY));
	emit(g, BI_CALL(BPF_FUNC_map_update_elem));
	jump(g, BI_JMP_IMM(BPF_JEQ, 0, 0, 0), ok);
	count(g, PRB_SC_SELF_DROPS);
	bind(g, ok);
	jump(g, BI_JA(0), done);
	bind(g, del);
	ld_map(g, 1, str ? PRB_MS_SELF_STR : PRB_MS_SELF);
	emit(g, BI_MOV64_REG(2, BPF_REG_10));
	emit(g, BI_ALU64_IMM(BPF_ADD, 2, TMP0));
	emit(g, BI_CALL(BPF_FUNC_map_delete_elem));
	bind(g, done);
	g->st.sp--;
}

static void gen_this_store(struct gen *g, unsigned var)
{
	size_t v = g->st.sp - 1;

	if (g->prog->this_vars[var].type == PRB_T_STR) {
		write_sv(g, v, 7, (int16_t)g->this_off[var]);
	} else {
		load_slot(g, 1, v);
		emit(g, BI_STX(BPF_DW, 7, 1, (int16_t)g->this_off[var]));
	}
	g->st.sp--;
}

static void gen_this_load(struct gen *g, unsigned var)
{
	if (g->prog->this_vars[var].type == PRB_T_STR) {
		push_buf(g, g->this_off[var]);
		return;
	}
	emit(g, BI_LDX(BPF_DW, 0, 7, (int16_t)g->this_off[var]));
	push_reg(g, 0, VK_INT);
}

/* ------------------------------------------------------------------------ */
/* Operators                                                                 */

/* r1 = a, r2 = b; result in r1. fault: the clause's fault label. */
static void gen_div(struct gen *g, bool mod, uint32_t fault)
{
	uint32_t a_pos = new_label(g), b_pos = new_label(g), done = new_label(g);

	/* x / 0 and INT64_MIN / -1 fault, as the interpreter */
	g->fault_used = true;
	jump(g, BI_JMP_IMM(BPF_JEQ, 2, 0, 0), fault);
	{
		uint32_t ok = new_label(g);

		jump(g, BI_JMP_IMM(BPF_JNE, 2, -1, 0), ok);
		ld_imm64(g, 3, 0x8000000000000000ull);
		jump(g, BI_JMP_REG(BPF_JEQ, 1, 3, 0), fault);
		bind(g, ok);
	}
	/* r4: the result's sign (1 negative), r1, r2: magnitudes */
	emit(g, BI_MOV64_IMM(4, 0));
	jump(g, BI_JMP_IMM(BPF_JSGE, 1, 0, 0), a_pos);
	emit(g, prb_bpf_insn(BPF_ALU64 | BPF_NEG, 1, 0, 0, 0));
	emit(g, BI_MOV64_IMM(4, 1));
	bind(g, a_pos);
	jump(g, BI_JMP_IMM(BPF_JSGE, 2, 0, 0), b_pos);
	emit(g, prb_bpf_insn(BPF_ALU64 | BPF_NEG, 2, 0, 0, 0));
	if (!mod)
		emit(g, BI_ALU64_IMM(BPF_XOR, 4, 1)); /* the remainder takes a's sign */
	bind(g, b_pos);
	emit(g, BI_ALU64_REG(mod ? BPF_MOD : BPF_DIV, 1, 2));
	jump(g, BI_JMP_IMM(BPF_JEQ, 4, 0, 0), done);
	emit(g, prb_bpf_insn(BPF_ALU64 | BPF_NEG, 1, 0, 0, 0));
	bind(g, done);
}

/* String equality of slots a and b (both string buffers): r1 = 1 or 0. */
static void gen_str_eq(struct gen *g, size_t a, size_t b)
{
	uint32_t ne = new_label(g), done = new_label(g);

	load_slot(g, 2, a);
	load_slot(g, 3, b);
	for (uint32_t w = 0; w < svsize(g); w += 8) {
		emit(g, BI_LDX(BPF_DW, 4, 2, (int16_t)w));
		emit(g, BI_LDX(BPF_DW, 5, 3, (int16_t)w));
		jump(g, BI_JMP_REG(BPF_JNE, 4, 5, 0), ne);
	}
	emit(g, BI_MOV64_IMM(1, 1));
	jump(g, BI_JA(0), done);
	bind(g, ne);
	emit(g, BI_MOV64_IMM(1, 0));
	bind(g, done);
}

static void gen_bin(struct gen *g, unsigned op, uint32_t fault)
{
	size_t a = g->st.sp - 2, b = g->st.sp - 1;
	static const uint8_t cmp[] = {
	    [PRB_OP_LT] = BPF_JSLT, [PRB_OP_LE] = BPF_JSLE, [PRB_OP_GT] = BPF_JSGT,
	    [PRB_OP_GE] = BPF_JSGE, [PRB_OP_EQ] = BPF_JEQ,  [PRB_OP_NE] = BPF_JNE,
	};

	if (g->st.kind[a] != VK_INT || g->st.kind[b] != VK_INT) {
		bool eq;

		if (op != PRB_OP_EQ && op != PRB_OP_NE) {
			nosup(g, "operator on non-integers");
			return;
		}
		if (g->st.kind[a] == VK_BUF && g->st.kind[b] == VK_BUF) {
			gen_str_eq(g, a, b);
		} else if ((g->st.kind[a] == VK_PROBE || g->st.kind[a] == VK_PROBEFUNC) &&
			   g->st.kind[a] == g->st.kind[b]) {
			eq = g->st.cval[a] == g->st.cval[b];
			emit(g, BI_MOV64_IMM(1, eq));
		} else {
			nosup(g, "a comparison of a function or probe name with another string");
			return;
		}
		if (op == PRB_OP_NE)
			emit(g, BI_ALU64_IMM(BPF_XOR, 1, 1));
		g->st.sp -= 2;
		push_reg(g, 1, VK_INT);
		return;
	}
	load_slot(g, 1, a);
	load_slot(g, 2, b);
	switch (op) {
	case PRB_OP_MUL:
		emit(g, BI_ALU64_REG(BPF_MUL, 1, 2));
		break;
	case PRB_OP_ADD:
		emit(g, BI_ALU64_REG(BPF_ADD, 1, 2));
		break;
	case PRB_OP_SUB:
		emit(g, BI_ALU64_REG(BPF_SUB, 1, 2));
		break;
	case PRB_OP_BAND:
		emit(g, BI_ALU64_REG(BPF_AND, 1, 2));
		break;
	case PRB_OP_BOR:
		emit(g, BI_ALU64_REG(BPF_OR, 1, 2));
		break;
	case PRB_OP_BXOR:
		emit(g, BI_ALU64_REG(BPF_XOR, 1, 2));
		break;
	case PRB_OP_SHL:
	case PRB_OP_SHR:
		emit(g, BI_ALU64_IMM(BPF_AND, 2, 63));
		emit(g, BI_ALU64_REG(op == PRB_OP_SHL ? BPF_LSH : BPF_ARSH, 1, 2));
		break;
	case PRB_OP_DIV:
	case PRB_OP_MOD:
		gen_div(g, op == PRB_OP_MOD, fault);
		break;
	case PRB_OP_LT:
	case PRB_OP_LE:
	case PRB_OP_GT:
	case PRB_OP_GE:
	case PRB_OP_EQ:
	case PRB_OP_NE: {
		uint32_t yes = new_label(g), done = new_label(g);

		jump(g, BI_JMP_REG(cmp[op], 1, 2, 0), yes);
		emit(g, BI_MOV64_IMM(1, 0));
		jump(g, BI_JA(0), done);
		bind(g, yes);
		emit(g, BI_MOV64_IMM(1, 1));
		bind(g, done);
		break;
	}
	default:
		nosup(g, "operator %u", op);
		return;
	}
	g->st.sp -= 2;
	push_reg(g, 1, VK_INT);
}

/* ------------------------------------------------------------------------ */
/* Aggregations                                                              */

/* r0 = floor(log2(r1)) for r1 > 0 (unsigned); clobbers r1, r2. */
static void gen_log2(struct gen *g)
{
	emit(g, BI_MOV64_IMM(0, 0));
	for (int s = 32; s >= 1; s /= 2) {
		uint32_t skip = new_label(g);

		emit(g, BI_MOV64_REG(2, 1));
		emit(g, BI_ALU64_IMM(BPF_RSH, 2, s));
		jump(g, BI_JMP_IMM(BPF_JEQ, 2, 0, 0), skip);
		emit(g, BI_MOV64_REG(1, 2));
		emit(g, BI_ALU64_IMM(BPF_ADD, 0, s));
		bind(g, skip);
	}
}

/* Adds 1 to bucket r3 (bounded below nbuckets) of the value at r9. */
static void bump_bucket(struct gen *g, const struct prb_bpf_agg_layout *al)
{
	uint32_t skip = new_label(g);

	jump(g, BI_JMP_IMM(BPF_JGE, 3, (int32_t)al->nbuckets, 0), skip);
	emit(g, BI_ALU64_IMM(BPF_LSH, 3, 3));
	emit(g, BI_ALU64_REG(BPF_ADD, 3, 9));
	emit(g, BI_LDX(BPF_DW, 1, 3, (int16_t)al->buckets_off));
	emit(g, BI_ALU64_IMM(BPF_ADD, 1, 1));
	emit(g, BI_STX(BPF_DW, 3, 1, (int16_t)al->buckets_off));
	bind(g, skip);
}

/* The value update of a full aggregation (count, sum, min, max, sums of
 * squares, buckets) with the value in slot v; r9 = the map value. */
static void gen_agg_full(struct gen *g, const struct prb_agg *a,
			 const struct prb_bpf_agg_layout *al, size_t v)
{
	uint32_t first = new_label(g), counted = new_label(g), l1 = new_label(g), l2 = new_label(g);

	load_slot(g, 2, v);
	emit(g, BI_LDX(BPF_DW, 1, 9, PRB_AV_COUNT));
	jump(g, BI_JMP_IMM(BPF_JEQ, 1, 0, 0), first);
	emit(g, BI_LDX(BPF_DW, 3, 9, PRB_AV_MIN));
	jump(g, BI_JMP_REG(BPF_JSGE, 2, 3, 0), l1);
	emit(g, BI_STX(BPF_DW, 9, 2, PRB_AV_MIN));
	bind(g, l1);
	emit(g, BI_LDX(BPF_DW, 3, 9, PRB_AV_MAX));
	jump(g, BI_JMP_REG(BPF_JSLE, 2, 3, 0), l2);
	emit(g, BI_STX(BPF_DW, 9, 2, PRB_AV_MAX));
	bind(g, l2);
	jump(g, BI_JA(0), counted);
	bind(g, first);
	emit(g, BI_STX(BPF_DW, 9, 2, PRB_AV_MIN));
	emit(g, BI_STX(BPF_DW, 9, 2, PRB_AV_MAX));
	bind(g, counted);
	emit(g, BI_ALU64_IMM(BPF_ADD, 1, 1));
	emit(g, BI_STX(BPF_DW, 9, 1, PRB_AV_COUNT));
	/* 128-bit sum: lo += v, carry into hi with v's sign */
	{
		uint32_t nc = new_label(g);

		emit(g, BI_LDX(BPF_DW, 3, 9, PRB_AV_SUM_LO));
		emit(g, BI_MOV64_REG(4, 3));
		emit(g, BI_ALU64_REG(BPF_ADD, 4, 2));
		emit(g, BI_STX(BPF_DW, 9, 4, PRB_AV_SUM_LO));
		emit(g, BI_MOV64_REG(5, 2));
		emit(g, BI_ALU64_IMM(BPF_ARSH, 5, 63));
		jump(g, BI_JMP_REG(BPF_JGE, 4, 3, 0), nc);
		emit(g, BI_ALU64_IMM(BPF_ADD, 5, 1));
		bind(g, nc);
		emit(g, BI_LDX(BPF_DW, 3, 9, PRB_AV_SUM_HI));
		emit(g, BI_ALU64_REG(BPF_ADD, 3, 5));
		emit(g, BI_STX(BPF_DW, 9, 3, PRB_AV_SUM_HI));
	}
	if (a->func == HWT_REP_STDDEV) {
		/* m = |v|; m * m as 128 bits from 32-bit halves:
		 * lo*lo + (lo*hi << 33) + (hi*hi << 64) */
		uint32_t pos = new_label(g), c1 = new_label(g), c2 = new_label(g);
		int16_t so = (int16_t)al->sumsq_off;

		jump(g, BI_JMP_IMM(BPF_JSGE, 2, 0, 0), pos);
		emit(g, prb_bpf_insn(BPF_ALU64 | BPF_NEG, 2, 0, 0, 0));
		bind(g, pos);
		emit(g, BI_MOV32_REG(3, 2));	       /* r3 = lo */
		emit(g, BI_ALU64_IMM(BPF_RSH, 2, 32)); /* r2 = hi */
		emit(g, BI_MOV64_REG(4, 3));
		emit(g, BI_ALU64_REG(BPF_MUL, 4, 3)); /* r4 = lo*lo */
		emit(g, BI_ALU64_REG(BPF_MUL, 3, 2)); /* r3 = lo*hi */
		emit(g, BI_ALU64_REG(BPF_MUL, 2, 2)); /* r2 = hi*hi */
		emit(g, BI_MOV64_REG(5, 3));
		emit(g, BI_ALU64_IMM(BPF_RSH, 5, 31));
		emit(g, BI_ALU64_REG(BPF_ADD, 2, 5)); /* high part of mid << 33 */
		emit(g, BI_ALU64_IMM(BPF_LSH, 3, 33));
		emit(g, BI_ALU64_REG(BPF_ADD, 3, 4)); /* r3 = square's low */
		jump(g, BI_JMP_REG(BPF_JGE, 3, 4, 0), c1);
		emit(g, BI_ALU64_IMM(BPF_ADD, 2, 1));
		bind(g, c1);
		/* sumsq += (r2, r3) */
		emit(g, BI_LDX(BPF_DW, 4, 9, so));
		emit(g, BI_MOV64_REG(5, 4));
		emit(g, BI_ALU64_REG(BPF_ADD, 5, 3));
		emit(g, BI_STX(BPF_DW, 9, 5, so));
		jump(g, BI_JMP_REG(BPF_JGE, 5, 4, 0), c2);
		emit(g, BI_ALU64_IMM(BPF_ADD, 2, 1));
		bind(g, c2);
		emit(g, BI_LDX(BPF_DW, 4, 9, (int16_t)(so + 8)));
		emit(g, BI_ALU64_REG(BPF_ADD, 4, 2));
		emit(g, BI_STX(BPF_DW, 9, 4, (int16_t)(so + 8)));
	}
	if (a->func == HWT_REP_QUANTIZE) {
		/* bucket: 63 for 0, 64 + log2(v) above, 62 - log2(-v) below
		 * (0 from 2^62 down) */
		uint32_t neg = new_label(g), done = new_label(g), zero = new_label(g),
			 low = new_label(g);

		load_slot(g, 1, v);
		jump(g, BI_JMP_IMM(BPF_JEQ, 1, 0, 0), zero);
		jump(g, BI_JMP_IMM(BPF_JSLT, 1, 0, 0), neg);
		gen_log2(g);
		emit(g, BI_MOV64_REG(3, 0));
		emit(g, BI_ALU64_IMM(BPF_ADD, 3, 64));
		jump(g, BI_JA(0), done);
		bind(g, neg);
		emit(g, prb_bpf_insn(BPF_ALU64 | BPF_NEG, 1, 0, 0, 0));
		gen_log2(g);
		emit(g, BI_MOV64_IMM(3, 0));
		jump(g, BI_JMP_IMM(BPF_JGE, 0, 62, 0), done);
		emit(g, BI_MOV64_IMM(3, 62));
		emit(g, BI_ALU64_REG(BPF_SUB, 3, 0));
		jump(g, BI_JA(0), done);
		bind(g, zero);
		emit(g, BI_MOV64_IMM(3, 63));
		bind(g, done);
		(void)low;
		bump_bucket(g, al);
	} else if (a->func == HWT_REP_LQUANTIZE) {
		uint32_t done = new_label(g), below = new_label(g), above = new_label(g);
		uint64_t levels = (uint64_t)(a->high - a->low) / (uint64_t)a->step;

		load_slot(g, 1, v);
		ld_imm64(g, 2, (uint64_t)a->low);
		jump(g, BI_JMP_REG(BPF_JSLT, 1, 2, 0), below);
		ld_imm64(g, 4, (uint64_t)a->high);
		jump(g, BI_JMP_REG(BPF_JSGE, 1, 4, 0), above);
		emit(g, BI_ALU64_REG(BPF_SUB, 1, 2));
		ld_imm64(g, 2, (uint64_t)a->step);
		emit(g, BI_ALU64_REG(BPF_DIV, 1, 2));
		emit(g, BI_MOV64_REG(3, 1));
		emit(g, BI_ALU64_IMM(BPF_ADD, 3, 1));
		jump(g, BI_JA(0), done);
		bind(g, below);
		emit(g, BI_MOV64_IMM(3, 0));
		jump(g, BI_JA(0), done);
		bind(g, above);
		set_imm(g, 3, (int64_t)levels + 1);
		bind(g, done);
		bump_bucket(g, al);
	}
}

static void ring_reserve(struct gen *g, uint32_t size, uint32_t fail);
static void ring_submit(struct gen *g);

/* The key of map or aggregation ai from the slots at base, in keybuf. */
static void build_key(struct gen *g, unsigned ai, size_t base)
{
	const struct prb_agg *a = &g->prog->aggs[ai];
	const struct prb_bpf_agg_layout *al = &g->lay->aggs[ai];
	int16_t kb = (int16_t)g->keybuf;

	if (!a->nkeys)
		emit(g, BI_ST(BPF_DW, 7, kb, 0));
	for (size_t k = 0; k < a->nkeys && !g->err; k++) {
		size_t s = base + k;
		int16_t off = (int16_t)(kb + (int16_t)al->key_off[k]);

		switch (al->key_kind[k]) {
		case PRB_KEY_INT:
		case PRB_KEY_STACK:
			if (g->st.kind[s] != (al->key_kind[k] == PRB_KEY_INT ? VK_INT : VK_STACK)) {
				nosup(g, "a key of @%s of an unexpected kind", a->name);
				return;
			}
			load_slot(g, 1, s);
			emit(g, BI_STX(BPF_DW, 7, 1, off));
			if (al->key_kind[k] == PRB_KEY_STACK) {
				emit(g, BI_LDX(BPF_DW, 1, BPF_REG_10, SHADOW(s)));
				emit(g, BI_STX(BPF_DW, 7, 1, (int16_t)(off + 8)));
			}
			break;
		case PRB_KEY_STR:
			write_sv(g, s, 7, off);
			break;
		}
	}
}

/* r1 = the map of ai, r2 = its key (keybuf). */
static void map_and_key(struct gen *g, unsigned ai)
{
	ld_map(g, 1, PRB_MS_AGG0 + ai);
	emit(g, BI_MOV64_REG(2, 7));
	emit(g, BI_ALU64_IMM(BPF_ADD, 2, (int32_t)g->keybuf));
}

static void gen_map_load(struct gen *g, unsigned ai)
{
	const struct prb_agg *a = &g->prog->aggs[ai];
	size_t base = g->st.sp - a->nkeys;
	uint32_t none = new_label(g), done = new_label(g);

	build_key(g, ai, base);
	map_and_key(g, ai);
	emit(g, BI_CALL(BPF_FUNC_map_lookup_elem));
	g->st.sp = base;
	if (a->vty.t == PRB_T_STR) {
		/* a copy: the program may change the map before it uses it */
		uint32_t r = new_sv(g);

		jump(g, BI_JMP_IMM(BPF_JEQ, 0, 0, 0), none);
		copy_words(g, 7, (int16_t)r, 0, 0, svsize(g));
		bind(g, none);
		push_buf(g, r);
		return;
	}
	/* absent: 0, or no stack */
	emit(g, BI_MOV64_IMM(1, 0));
	emit(g, BI_MOV64_IMM(2, 0));
	if (a->vty.t == PRB_T_STACK)
		emit(g, BI_MOV32_IMM(1, -1));
	jump(g, BI_JMP_IMM(BPF_JEQ, 0, 0, 0), done);
	emit(g, BI_LDX(BPF_DW, 1, 0, 0));
	if (a->vty.t == PRB_T_STACK)
		emit(g, BI_LDX(BPF_DW, 2, 0, 8));
	bind(g, done);
	push_reg(g, 1, a->vty.t == PRB_T_STACK ? VK_STACK : VK_INT);
	if (a->vty.t == PRB_T_STACK)
		emit(g, BI_STX(BPF_DW, BPF_REG_10, 2, SHADOW(g->st.sp - 1)));
}

static void gen_map_store(struct gen *g, unsigned ai)
{
	const struct prb_agg *a = &g->prog->aggs[ai];
	size_t v = g->st.sp - 1, base = v - a->nkeys;
	uint32_t ok = new_label(g);

	build_key(g, ai, base);
	if (a->vty.t == PRB_T_STR) {
		write_sv(g, v, 7, (int16_t)g->valbuf);
	} else {
		load_slot(g, 1, v);
		emit(g, BI_STX(BPF_DW, 7, 1, (int16_t)g->valbuf));
		if (a->vty.t == PRB_T_STACK) {
			emit(g, BI_LDX(BPF_DW, 1, BPF_REG_10, SHADOW(v)));
			emit(g, BI_STX(BPF_DW, 7, 1, (int16_t)(g->valbuf + 8)));
		}
	}
	map_and_key(g, ai);
	emit(g, BI_MOV64_REG(3, 7));
	emit(g, BI_ALU64_IMM(BPF_ADD, 3, (int32_t)g->valbuf));
	emit(g, BI_MOV64_IMM(4, BPF_ANY));
	emit(g, BI_CALL(BPF_FUNC_map_update_elem));
	jump(g, BI_JMP_IMM(BPF_JEQ, 0, 0, 0), ok);
	count(g, PRB_SC_AGG_DROPS + 8 * ai);
	bind(g, ok);
	g->st.sp = base;
}

static void gen_map_delete(struct gen *g, unsigned ai)
{
	size_t base = g->st.sp - g->prog->aggs[ai].nkeys;

	build_key(g, ai, base);
	map_and_key(g, ai);
	emit(g, BI_CALL(BPF_FUNC_map_delete_elem));
	g->st.sp = base;
}

/* Reads r2 bytes at the address in r3 to [r1], from kernel or user
 * memory by the address; str: a string. */
static void read_mem(struct gen *g, bool str)
{
	uint32_t kernel = new_label(g), done = new_label(g);

	ld_imm64(g, 4, 0xffff800000000000ull);
	jump(g, BI_JMP_REG(BPF_JGE, 3, 4, 0), kernel);
	emit(g, BI_CALL(str ? BPF_FUNC_probe_read_user_str : BPF_FUNC_probe_read_user));
	jump(g, BI_JA(0), done);
	bind(g, kernel);
	emit(g, BI_CALL(str ? BPF_FUNC_probe_read_kernel_str : BPF_FUNC_probe_read_kernel));
	bind(g, done);
}

/* READ: the integer of size bytes at the address on top. */
static void gen_read(struct gen *g, unsigned a)
{
	unsigned size = a & 15;
	static const uint8_t sizes[9] = {[1] = BPF_B, [2] = BPF_H, [4] = BPF_W, [8] = BPF_DW};

	if (size != 1 && size != 2 && size != 4 && size != 8) {
		nosup(g, "a read of %u bytes", size);
		return;
	}
	load_slot(g, 3, g->st.sp - 1);
	emit(g, BI_ST(BPF_DW, BPF_REG_10, TMP0, 0));
	emit(g, BI_MOV64_REG(1, BPF_REG_10));
	emit(g, BI_ALU64_IMM(BPF_ADD, 1, TMP0));
	emit(g, BI_MOV64_IMM(2, (int32_t)size));
	read_mem(g, false);
	emit(g, BI_LDX(sizes[size], 0, BPF_REG_10, TMP0));
	if ((a & 16) && size < 8) {
		emit(g, BI_ALU64_IMM(BPF_LSH, 0, 64 - 8 * (int)size));
		emit(g, BI_ALU64_IMM(BPF_ARSH, 0, 64 - 8 * (int)size));
	}
	g->st.sp--;
	push_reg(g, 0, VK_INT);
}

/* READ_STR: the string at the address on top (at most max bytes). */
static void gen_read_str(struct gen *g, uint32_t max)
{
	/* str(p, n): n characters and the NUL, as bpftrace's */
	uint32_t r = new_sv(g), n = max && max < strsize(g) ? max + 1 : strsize(g);

	load_slot(g, 3, g->st.sp - 1);
	emit(g, BI_MOV64_REG(1, 7));
	emit(g, BI_ALU64_IMM(BPF_ADD, 1, (int32_t)r + 8));
	emit(g, BI_MOV64_IMM(2, (int32_t)n));
	read_mem(g, true);
	g->st.sp--;
	push_buf(g, r);
}

/* ntop(): an address value (tag INET: family, then 4 or 16 bytes). */
static void gen_ntop(struct gen *g, unsigned mode)
{
	uint32_t r = new_sv(g);

	emit(g, BI_ST(BPF_DW, 7, (int16_t)r, PRB_SV_INET));
	emit(g, BI_ST(BPF_DW, 7, (int16_t)(r + 8), mode == 1 ? 10 : 2));
	load_slot(g, 3, g->st.sp - 1);
	if (mode == 0) {
		emit(g, BI_STX(BPF_W, 7, 3, (int16_t)(r + 16)));
	} else {
		emit(g, BI_MOV64_REG(1, 7));
		emit(g, BI_ALU64_IMM(BPF_ADD, 1, (int32_t)r + 16));
		emit(g, BI_MOV64_IMM(2, mode == 1 ? 16 : 4));
		read_mem(g, false);
	}
	g->st.sp--;
	push_buf(g, r);
}

/* buf(addr, len): the bytes (tag BUF: the length, then the bytes). */
static void gen_buf(struct gen *g)
{
	uint32_t r = new_sv(g), max = strsize(g) - 8, ok = new_label(g);

	load_slot(g, 2, g->st.sp - 1);
	jump(g, BI_JMP_IMM(BPF_JLE, 2, (int32_t)max, 0), ok);
	emit(g, BI_MOV64_IMM(2, (int32_t)max));
	bind(g, ok);
	emit(g, BI_ST(BPF_DW, 7, (int16_t)r, PRB_SV_BUF));
	emit(g, BI_STX(BPF_DW, 7, 2, (int16_t)(r + 8)));
	load_slot(g, 3, g->st.sp - 2);
	emit(g, BI_MOV64_REG(1, 7));
	emit(g, BI_ALU64_IMM(BPF_ADD, 1, (int32_t)r + 16));
	read_mem(g, false);
	g->st.sp -= 2;
	push_buf(g, r);
}

/* join(argv): up to 16 strings of a char ** in user memory, in a record
 * (bpftrace's limit). */
static void gen_join(struct gen *g, unsigned sep)
{
	enum { NARGS = 16 };
	uint32_t hdr = sizeof(struct prb_bpf_rec), size = hdr + NARGS * strsize(g),
		 fail = new_label(g), done = new_label(g), end = new_label(g);

	if (size > 0x7fff) {
		nosup(g, "join() with strings of more than 2 KiB");
		return;
	}
	ring_reserve(g, size, fail);
	emit(g, BI_ST(BPF_W, 9, 0, PRB_RB_JOIN));
	emit(g, BI_ST(BPF_W, 9, 4, (int32_t)sep));
	for (unsigned i = 0; i < NARGS; i++)
		emit(g, BI_ST(BPF_B, 9, (int16_t)(hdr + i * strsize(g)), 0));
	for (unsigned i = 0; i < NARGS; i++) {
		/* argv[i]: 8 bytes at argv + 8i; NULL ends the array */
		emit(g, BI_ST(BPF_DW, BPF_REG_10, TMP0, 0));
		emit(g, BI_MOV64_REG(1, BPF_REG_10));
		emit(g, BI_ALU64_IMM(BPF_ADD, 1, TMP0));
		emit(g, BI_MOV64_IMM(2, 8));
		load_slot(g, 3, g->st.sp - 1);
		emit(g, BI_ALU64_IMM(BPF_ADD, 3, (int32_t)(8 * i)));
		emit(g, BI_CALL(BPF_FUNC_probe_read_user));
		emit(g, BI_LDX(BPF_DW, 3, BPF_REG_10, TMP0));
		jump(g, BI_JMP_IMM(BPF_JEQ, 3, 0, 0), end);
		emit(g, BI_MOV64_REG(1, 9));
		emit(g, BI_ALU64_IMM(BPF_ADD, 1, (int32_t)(hdr + i * strsize(g))));
		emit(g, BI_MOV64_IMM(2, (int32_t)strsize(g)));
		emit(g, BI_CALL(BPF_FUNC_probe_read_user_str));
	}
	bind(g, end);
	ring_submit(g);
	jump(g, BI_JA(0), done);
	bind(g, fail);
	count(g, PRB_SC_RING_DROPS);
	bind(g, done);
	g->st.sp--;
}

static void gen_agg(struct gen *g, unsigned ai)
{
	const struct prb_agg *a = &g->prog->aggs[ai];
	const struct prb_bpf_agg_layout *al = &g->lay->aggs[ai];
	size_t nval = a->func == HWT_REP_COUNT ? 0 : 1;
	size_t base = g->st.sp - nval - a->nkeys, v = g->st.sp - 1;
	uint32_t have = new_label(g), after = new_label(g), drop = new_label(g),
		 again = new_label(g);
	int16_t kb = (int16_t)g->keybuf;

	if (al->max_entries == 0) {
		nosup(g, "@%s has values too large for a BPF map", a->name);
		return;
	}
	build_key(g, ai, base);
	/* lookup, or insert zeros and look up again */
	ld_map(g, 1, PRB_MS_AGG0 + ai);
	emit(g, BI_MOV64_REG(2, 7));
	emit(g, BI_ALU64_IMM(BPF_ADD, 2, kb));
	emit(g, BI_CALL(BPF_FUNC_map_lookup_elem));
	jump(g, BI_JMP_IMM(BPF_JNE, 0, 0, 0), have);
	ld_map(g, 1, PRB_MS_AGG0 + ai);
	emit(g, BI_MOV64_REG(2, 7));
	emit(g, BI_ALU64_IMM(BPF_ADD, 2, kb));
	ld_map_value(g, 3, PRB_MS_ZERO, 0);
	emit(g, BI_MOV64_IMM(4, BPF_NOEXIST));
	emit(g, BI_CALL(BPF_FUNC_map_update_elem));
	jump(g, BI_JMP_IMM(BPF_JEQ, 0, 0, 0), again);
	jump(g, BI_JMP_IMM(BPF_JNE, 0, -EEXIST, 0), drop);
	bind(g, again);
	ld_map(g, 1, PRB_MS_AGG0 + ai);
	emit(g, BI_MOV64_REG(2, 7));
	emit(g, BI_ALU64_IMM(BPF_ADD, 2, kb));
	emit(g, BI_CALL(BPF_FUNC_map_lookup_elem));
	jump(g, BI_JMP_IMM(BPF_JNE, 0, 0, 0), have);
	bind(g, drop);
	count(g, PRB_SC_AGG_DROPS + 8 * ai);
	jump(g, BI_JA(0), after);
	bind(g, have);
	emit(g, BI_MOV64_REG(9, 0));
	if (!al->full) {
		emit(g, BI_LDX(BPF_DW, 1, 9, PRB_AV_COUNT));
		emit(g, BI_ALU64_IMM(BPF_ADD, 1, 1));
		emit(g, BI_STX(BPF_DW, 9, 1, PRB_AV_COUNT));
	} else {
		gen_agg_full(g, a, al, v);
	}
	bind(g, after);
	g->st.sp = base;
}

/* ------------------------------------------------------------------------ */
/* Ring buffer records                                                       */

/* Reserves size bytes into r9 (jumps to a drop count on failure). */
static void ring_reserve(struct gen *g, uint32_t size, uint32_t fail)
{
	ld_map(g, 1, PRB_MS_RING);
	emit(g, BI_MOV64_IMM(2, (int32_t)size));
	emit(g, BI_MOV64_IMM(3, 0));
	emit(g, BI_CALL(BPF_FUNC_ringbuf_reserve));
	jump(g, BI_JMP_IMM(BPF_JEQ, 0, 0, 0), fail);
	emit(g, BI_MOV64_REG(9, 0));
}

static void ring_submit(struct gen *g)
{
	emit(g, BI_MOV64_REG(1, 9));
	emit(g, BI_MOV64_IMM(2, 0));
	emit(g, BI_CALL(BPF_FUNC_ringbuf_submit));
}

static void gen_record(struct gen *g, uint32_t kind, uint32_t arg)
{
	uint32_t fail = new_label(g), done = new_label(g);

	ring_reserve(g, sizeof(struct prb_bpf_rec), fail);
	emit(g, BI_ST(BPF_W, 9, 0, (int32_t)kind));
	emit(g, BI_ST(BPF_W, 9, 4, (int32_t)arg));
	ring_submit(g);
	jump(g, BI_JA(0), done);
	bind(g, fail);
	count(g, PRB_SC_RING_DROPS);
	bind(g, done);
}

static void gen_printf(struct gen *g, unsigned fmt, unsigned nargs)
{
	const struct prb_fmt *f = &g->prog->fmts[fmt];
	size_t base = g->st.sp - nargs;
	uint32_t size = sizeof(struct prb_bpf_rec), off, fail = new_label(g), done = new_label(g);

	for (size_t i = 0; i < nargs; i++)
		size += g->st.kind[base + i] == VK_INT	   ? 8
			: g->st.kind[base + i] == VK_STACK ? 16
							   : g->lay->sv_size;
	if (size > 0x7fff) {
		nosup(g, "a printf with arguments over 32 KiB");
		return;
	}
	ring_reserve(g, size, fail);
	emit(g, BI_ST(BPF_W, 9, 0, PRB_RB_PRINTF));
	emit(g, BI_ST(BPF_W, 9, 4, (int32_t)fmt));
	off = sizeof(struct prb_bpf_rec);
	for (size_t i = 0; i < nargs && !g->err; i++) {
		if (g->st.kind[base + i] == VK_INT) {
			load_slot(g, 1, base + i);
			emit(g, BI_STX(BPF_DW, 9, 1, (int16_t)off));
			off += 8;
		} else if (g->st.kind[base + i] == VK_STACK) {
			load_slot(g, 1, base + i);
			emit(g, BI_STX(BPF_DW, 9, 1, (int16_t)off));
			emit(g, BI_LDX(BPF_DW, 1, BPF_REG_10, SHADOW(base + i)));
			emit(g, BI_STX(BPF_DW, 9, 1, (int16_t)(off + 8)));
			off += 16;
		} else {
			write_sv(g, base + i, 9, (int16_t)off);
			off += g->lay->sv_size;
		}
	}
	ring_submit(g);
	jump(g, BI_JA(0), done);
	bind(g, fail);
	count(g, PRB_SC_RING_DROPS);
	bind(g, done);
	g->st.sp = base;
	(void)f;
}

/* ------------------------------------------------------------------------ */
/* Clauses                                                                   */

static bool same_state(const struct vstate *a, const struct vstate *b)
{
	if (a->sp != b->sp)
		return false;
	for (size_t i = 0; i < a->sp; i++)
		if (a->kind[i] != b->kind[i] ||
		    ((a->kind[i] == VK_PROBE || a->kind[i] == VK_PROBEFUNC) &&
		     a->cval[i] != b->cval[i]))
			return false;
	return true;
}

/* Records that a jump brings the state (after popping pop) to pc. */
static void flow_to(struct gen *g, uint32_t pc, size_t pop)
{
	struct vstate s = g->st;
	uint32_t i = pc - g->cl_base;

	s.sp -= pop;
	if (i >= g->cl_len) {
		nosup(g, "a jump out of its clause");
		return;
	}
	if (!g->pc_state[i].live) {
		g->pc_state[i] = s;
		g->pc_state[i].live = true;
	} else if (!same_state(&g->pc_state[i], &s)) {
		nosup(g, "the two sides of ?: give values of different kinds");
	}
}

static int gen_clause(struct gen *g, const struct prb_clause *cl, uint32_t prog_exit)
{
	const struct prb_insn *code = g->prog->code;
	uint32_t end = new_label(g), fault = new_label(g);

	g->cl_base = cl->code;
	g->cl_len = cl->ncode;
	free(g->pc_label);
	free(g->pc_state);
	g->pc_label = malloc(cl->ncode * sizeof(*g->pc_label));
	g->pc_state = calloc(cl->ncode, sizeof(*g->pc_state));
	if (!g->pc_label || !g->pc_state)
		return g->err = -ENOMEM;
	for (uint32_t i = 0; i < cl->ncode; i++)
		g->pc_label[i] = new_label(g);
	g->st.sp = 0;
	g->st.live = true;
	g->fault_used = false;
	for (uint32_t i = 0; i < cl->ncode && !g->err; i++) {
		const struct prb_insn *in = &code[cl->code + i];

		bind(g, g->pc_label[i]);
		if (g->pc_state[i].live) {
			if (g->st.live && !same_state(&g->pc_state[i], &g->st))
				return nosup(g, "the two sides of ?: give values of different "
						"kinds");
			g->st = g->pc_state[i];
		}
		if (!g->st.live)
			continue;
		switch (in->op) {
		case PRB_I_INT:
			if (in->imm >= INT32_MIN && in->imm <= INT32_MAX) {
				push(g, VK_INT, 0);
				emit(g, BI_ST(BPF_DW, BPF_REG_10, SLOT(g->st.sp - 1),
					      (int32_t)in->imm));
			} else {
				ld_imm64(g, 1, (uint64_t)in->imm);
				push_reg(g, 1, VK_INT);
			}
			break;
		case PRB_I_STR: {
			const char *s = g->prog->strs[in->a];
			size_t len = strlen(s);
			uint32_t r = alloc_scratch(g, svsize(g));

			if (len > strsize(g) - 1) {
				nosup(g,
				      "a string of %zu bytes (strings from the kernel are cut at "
				      "%u: raise -x strsize)",
				      len, strsize(g) - 1);
				break;
			}
			emit(g, BI_ST(BPF_DW, 7, (int16_t)r, PRB_SV_BYTES));
			for (uint32_t w = 0; w < strsize(g); w += 8) {
				uint64_t word = 0;

				for (uint32_t b = 0; b < 8; b++)
					if (w + b < len)
						word |= (uint64_t)(uint8_t)s[w + b] << (8 * b);
				if (word) {
					ld_imm64(g, 1, word);
					emit(g, BI_STX(BPF_DW, 7, 1, (int16_t)(r + 8 + w)));
				} else {
					emit(g, BI_ST(BPF_DW, 7, (int16_t)(r + 8 + w), 0));
				}
			}
			push_buf(g, r);
			break;
		}
		case PRB_I_BUILTIN:
			gen_builtin(g, in->a);
			break;
		case PRB_I_FIELD:
			gen_field(g, in->a);
			break;
		case PRB_I_SELF:
			gen_self_load(g, in->a);
			break;
		case PRB_I_THIS:
			gen_this_load(g, in->a);
			break;
		case PRB_I_NEG:
		case PRB_I_NOT:
		case PRB_I_BNOT:
		case PRB_I_BOOL: {
			uint32_t z = new_label(g), d = new_label(g);

			load_slot(g, 1, g->st.sp - 1);
			if (in->op == PRB_I_NEG) {
				emit(g, prb_bpf_insn(BPF_ALU64 | BPF_NEG, 1, 0, 0, 0));
			} else if (in->op == PRB_I_BNOT) {
				emit(g, BI_ALU64_IMM(BPF_XOR, 1, -1));
			} else {
				/* NOT: r1 == 0; BOOL: r1 != 0 */
				jump(g, BI_JMP_IMM(BPF_JEQ, 1, 0, 0), z);
				emit(g, BI_MOV64_IMM(1, in->op == PRB_I_BOOL));
				jump(g, BI_JA(0), d);
				bind(g, z);
				emit(g, BI_MOV64_IMM(1, in->op == PRB_I_NOT));
				bind(g, d);
			}
			emit(g, BI_STX(BPF_DW, BPF_REG_10, 1, SLOT(g->st.sp - 1)));
			break;
		}
		case PRB_I_BIN:
			gen_bin(g, in->a, fault);
			break;
		case PRB_I_JZ:
		case PRB_I_JNZ:
			load_slot(g, 1, g->st.sp - 1);
			flow_to(g, in->b, 1);
			jump(g, BI_JMP_IMM(in->op == PRB_I_JZ ? BPF_JEQ : BPF_JNE, 1, 0, 0),
			     g->pc_label[in->b - cl->code]);
			g->st.sp--;
			break;
		case PRB_I_JMP:
			flow_to(g, in->b, 0);
			jump(g, BI_JA(0), g->pc_label[in->b - cl->code]);
			g->st.live = false;
			break;
		case PRB_I_PRED: {
			uint32_t ok = new_label(g);

			load_slot(g, 1, g->st.sp - 1);
			g->st.sp--;
			jump(g, BI_JMP_IMM(BPF_JNE, 1, 0, 0), ok);
			count(g, PRB_SC_FILTERED);
			jump(g, BI_JA(0), end);
			bind(g, ok);
			break;
		}
		case PRB_I_STORE_SELF:
			gen_self_store(g, in->a);
			break;
		case PRB_I_STORE_THIS:
			gen_this_store(g, in->a);
			break;
		case PRB_I_AGG:
			gen_agg(g, in->a);
			break;
		case PRB_I_PRINTF:
			gen_printf(g, in->a, in->b);
			break;
		case PRB_I_EXIT:
			emit(g, BI_ST(BPF_DW, 8, offsetof(struct prb_bpf_control, exited), 1));
			gen_record(g, PRB_RB_EXIT, 0);
			jump(g, BI_JA(0), prog_exit);
			g->st.live = false;
			break;
		case PRB_I_CLEAR:
			gen_record(g, PRB_RB_CLEAR, in->a);
			break;
		case PRB_I_PRINT:
			gen_record(g, PRB_RB_PRINT,
				   in->a | (in->b < 0xffff ? in->b : 0xffff) << 16);
			break;
		case PRB_I_MAP_LOAD:
			gen_map_load(g, in->a);
			break;
		case PRB_I_MAP_STORE:
			gen_map_store(g, in->a);
			break;
		case PRB_I_MAP_DELETE:
			gen_map_delete(g, in->a);
			break;
		case PRB_I_READ:
			gen_read(g, in->a);
			break;
		case PRB_I_READ_STR:
			gen_read_str(g, in->b);
			break;
		case PRB_I_CAST: {
			unsigned bits = in->a & 127;

			load_slot(g, 1, g->st.sp - 1);
			emit(g, BI_ALU64_IMM(BPF_LSH, 1, 64 - (int)bits));
			emit(g,
			     BI_ALU64_IMM((in->a & 128) ? BPF_ARSH : BPF_RSH, 1, 64 - (int)bits));
			emit(g, BI_STX(BPF_DW, BPF_REG_10, 1, SLOT(g->st.sp - 1)));
			break;
		}
		case PRB_I_BSWAP:
			load_slot(g, 1, g->st.sp - 1);
			if (in->a == 8)
				emit(g, BI_ALU64_IMM(BPF_AND, 1, 255));
			else
				emit(g,
				     prb_bpf_insn(BPF_ALU | BPF_END | BPF_TO_BE, 1, 0, 0, in->a));
			emit(g, BI_STX(BPF_DW, BPF_REG_10, 1, SLOT(g->st.sp - 1)));
			break;
		case PRB_I_NTOP:
			gen_ntop(g, in->a);
			break;
		case PRB_I_SYM:
			g->st.kind[g->st.sp - 1] = VK_FUNCIP;
			break;
		case PRB_I_BUF:
			gen_buf(g);
			break;
		case PRB_I_TIME:
			gen_record(g, PRB_RB_TIME, in->a);
			break;
		case PRB_I_CAT:
			gen_record(g, PRB_RB_CAT, in->a);
			break;
		case PRB_I_JOIN:
			gen_join(g, in->a);
			break;
		case PRB_I_END:
			break;
		default:
			return nosup(g, "byte code %u", in->op);
		}
	}
	/* a division by zero: counted, and the clause run stops (no dead
	 * code: the verifier rejects unreachable instructions) */
	if (g->fault_used) {
		if (g->st.live)
			jump(g, BI_JA(0), end);
		bind(g, fault);
		count(g, PRB_SC_FAULTS);
	}
	bind(g, end);
	return g->err;
}

static enum bpf_prog_type prog_type(enum hwt_probe_kind k)
{
	switch (k) {
	case HWT_PROBE_UPROBE:
	case HWT_PROBE_URETPROBE:
	case HWT_PROBE_KPROBE:
	case HWT_PROBE_KRETPROBE:
		return BPF_PROG_TYPE_KPROBE;
	case HWT_PROBE_TRACEPOINT:
		return BPF_PROG_TYPE_TRACEPOINT;
	case HWT_PROBE_PROFILE:
	case HWT_PROBE_INTERVAL:
	case HWT_PROBE_SOFTWARE:
	case HWT_PROBE_HARDWARE:
		return BPF_PROG_TYPE_PERF_EVENT;
	default:
		return BPF_PROG_TYPE_UNSPEC;
	}
}

void prb_bpf_code_fini(struct prb_bpf_code *code)
{
	free(code->insns);
	free(code->relocs);
	memset(code, 0, sizeof(*code));
}

static void gen_fini(struct gen *g)
{
	free(g->labels);
	free(g->fixes);
	free(g->pc_label);
	free(g->pc_state);
}

/* r6 = ctx, r8 = control; returns at once after exit() or for tasks that
 * are not traced. */
static void prologue(struct gen *g, uint32_t prog_exit)
{
	emit(g, BI_MOV64_REG(6, 1));
	ld_map_value(g, 8, PRB_MS_CONTROL, 0);
	emit(g, BI_LDX(BPF_DW, 1, 8, offsetof(struct prb_bpf_control, exited)));
	jump(g, BI_JMP_IMM(BPF_JNE, 1, 0, 0), prog_exit);
	if (g->filter != PRB_FILTER_NONE) {
		emit(g, BI_CALL(BPF_FUNC_get_current_pid_tgid));
		if (g->filter == PRB_FILTER_TGID)
			emit(g, BI_ALU64_IMM(BPF_RSH, 0, 32));
		emit(g, BI_STX(BPF_W, BPF_REG_10, 0, TMP0));
		ld_map(g, 1, PRB_MS_TARGETS);
		emit(g, BI_MOV64_REG(2, BPF_REG_10));
		emit(g, BI_ALU64_IMM(BPF_ADD, 2, TMP0));
		emit(g, BI_CALL(BPF_FUNC_map_lookup_elem));
		jump(g, BI_JMP_IMM(BPF_JEQ, 0, 0, 0), prog_exit);
	}
}

int prb_bpf_gen(const struct hwt_probe_prog *prog, size_t probe, const struct prb_bpf_layout *lay,
		enum prb_bpf_filter filter, int32_t target, struct prb_bpf_code *out, char *why,
		size_t whylen)
{
	const struct prb_probe *p = &prog->probes[probe];
	struct gen g;
	uint32_t prog_exit;

	memset(out, 0, sizeof(*out));
	memset(&g, 0, sizeof(g));
	g.prog = prog;
	g.p = p;
	g.probe = probe;
	g.lay = lay;
	g.out = out;
	g.why = why;
	g.whylen = whylen;
	g.filter = filter;
	g.target = target;
	if (why && whylen)
		why[0] = '\0';
	out->type = prog_type(p->info.kind);
	if (out->type == BPF_PROG_TYPE_UNSPEC) {
		nosup(&g, "%s has no BPF program", p->text);
		goto out;
	}
	/* the scratch value: counters, this-> variables, the key buffer, then
	 * the strings of each instruction that makes one */
	g.scratch = lay->scratch_header;
	for (size_t v = 0; v < prog->nthis; v++)
		g.this_off[v] =
		    alloc_scratch(&g, prog->this_vars[v].type == PRB_T_STR ? lay->sv_size : 8);
	{
		uint32_t kmax = lay->sv_size;

		for (size_t a = 0; a < lay->naggs; a++)
			if (lay->aggs[a].key_size > kmax)
				kmax = lay->aggs[a].key_size;
		g.keybuf = alloc_scratch(&g, kmax);
	}
	g.stackbuf = alloc_scratch(&g, 8);
	g.valbuf = alloc_scratch(&g, lay->sv_size > 16 ? lay->sv_size : 16);

	prog_exit = new_label(&g);
	prologue(&g, prog_exit);
	emit(&g, BI_ST(BPF_W, BPF_REG_10, TMP0, (int32_t)probe));
	ld_map(&g, 1, PRB_MS_SCRATCH);
	emit(&g, BI_MOV64_REG(2, BPF_REG_10));
	emit(&g, BI_ALU64_IMM(BPF_ADD, 2, TMP0));
	emit(&g, BI_CALL(BPF_FUNC_map_lookup_elem));
	jump(&g, BI_JMP_IMM(BPF_JEQ, 0, 0, 0), prog_exit);
	emit(&g, BI_MOV64_REG(7, 0));
	count(&g, PRB_SC_HITS);
	for (size_t v = 0; v < prog->nthis; v++)
		zero_scratch(&g, g.this_off[v],
			     prog->this_vars[v].type == PRB_T_STR ? svsize(&g) : 8);
	for (size_t c = 0; c < p->nclauses && !g.err; c++)
		gen_clause(&g, &prog->clauses[p->clauses[c]], prog_exit);
	bind(&g, prog_exit);
	emit(&g, BI_MOV64_IMM(0, 0));
	emit(&g, BI_EXIT());
	resolve(&g);
	out->scratch_used = g.scratch;
out:
	gen_fini(&g);
	if (g.err)
		prb_bpf_code_fini(out);
	return g.err;
}

/* ------------------------------------------------------------------------ */
/* Target helpers                                                            */

/* [fp-8] = r0 as u32, [fp-16] = 1; targets[fp-8] = 1. */
static void add_target(struct gen *g)
{
	emit(g, BI_STX(BPF_W, BPF_REG_10, 0, TMP0));
	emit(g, BI_ST(BPF_DW, BPF_REG_10, TMP1, 1));
	ld_map(g, 1, PRB_MS_TARGETS);
	emit(g, BI_MOV64_REG(2, BPF_REG_10));
	emit(g, BI_ALU64_IMM(BPF_ADD, 2, TMP0));
	emit(g, BI_MOV64_REG(3, BPF_REG_10));
	emit(g, BI_ALU64_IMM(BPF_ADD, 3, TMP1));
	emit(g, BI_MOV64_IMM(4, BPF_ANY));
	emit(g, BI_CALL(BPF_FUNC_map_update_elem));
}

static int gen_helper(const struct prb_bpf_layout *lay, struct prb_bpf_code *out, bool exec,
		      uint32_t off)
{
	struct gen g;
	uint32_t done;

	memset(out, 0, sizeof(*out));
	memset(&g, 0, sizeof(g));
	g.lay = lay;
	g.out = out;
	out->type = BPF_PROG_TYPE_TRACEPOINT;
	done = new_label(&g);
	emit(&g, BI_MOV64_REG(6, 1));
	ld_map_value(&g, 8, PRB_MS_CONTROL, 0);
	if (exec) {
		/* the launched command's exec: it is traced from here */
		emit(&g, BI_LDX(BPF_DW, 1, 8, offsetof(struct prb_bpf_control, pending)));
		jump(&g, BI_JMP_IMM(BPF_JEQ, 1, 0, 0), done);
		emit(&g, BI_LDX(BPF_W, 2, 6, (int16_t)off));
		jump(&g, BI_JMP_REG(BPF_JNE, 1, 2, 0), done);
		emit(&g, BI_MOV64_REG(0, 2));
		add_target(&g);
	} else {
		/* a fork by a traced process: the child is traced too */
		emit(&g, BI_CALL(BPF_FUNC_get_current_pid_tgid));
		emit(&g, BI_ALU64_IMM(BPF_RSH, 0, 32));
		emit(&g, BI_STX(BPF_W, BPF_REG_10, 0, TMP0));
		ld_map(&g, 1, PRB_MS_TARGETS);
		emit(&g, BI_MOV64_REG(2, BPF_REG_10));
		emit(&g, BI_ALU64_IMM(BPF_ADD, 2, TMP0));
		emit(&g, BI_CALL(BPF_FUNC_map_lookup_elem));
		jump(&g, BI_JMP_IMM(BPF_JEQ, 0, 0, 0), done);
		emit(&g, BI_LDX(BPF_W, 0, 6, (int16_t)off));
		add_target(&g);
	}
	bind(&g, done);
	emit(&g, BI_MOV64_IMM(0, 0));
	emit(&g, BI_EXIT());
	resolve(&g);
	gen_fini(&g);
	if (g.err)
		prb_bpf_code_fini(out);
	return g.err;
}

int prb_bpf_gen_exec_gate(const struct prb_bpf_layout *lay, uint32_t pid_off,
			  struct prb_bpf_code *out)
{
	return gen_helper(lay, out, true, pid_off);
}

int prb_bpf_gen_fork_follow(const struct prb_bpf_layout *lay, uint32_t child_off,
			    struct prb_bpf_code *out)
{
	return gen_helper(lay, out, false, child_off);
}

/* ------------------------------------------------------------------------ */
/* Layouts                                                                   */

void prb_bpf_limits_defaults(struct prb_bpf_limits *l)
{
	if (!l->aggsize)
		l->aggsize = 4ull << 20;
	if (!l->dynvarsize)
		l->dynvarsize = 1ull << 20;
	if (!l->bufsize)
		l->bufsize = 4ull << 20;
	if (!l->strsize)
		l->strsize = 64;
	if (l->strsize < 16)
		l->strsize = 16; /* comm */
	l->strsize = (l->strsize + 7) & ~7u;
	if (!l->nstacks)
		l->nstacks = 4096;
}

void prb_bpf_layout_fini(struct prb_bpf_layout *lay)
{
	free(lay->aggs);
	memset(lay, 0, sizeof(*lay));
}

int prb_bpf_layout_init(struct prb_bpf_layout *lay, const struct hwt_probe_prog *prog,
			const struct prb_bpf_limits *lim)
{
	memset(lay, 0, sizeof(*lay));
	if (lim)
		lay->lim = *lim;
	prb_bpf_limits_defaults(&lay->lim);
	lay->sv_size = 8 + lay->lim.strsize;
	lay->naggs = prog->naggs;
	lay->aggs = calloc(prog->naggs + 1, sizeof(*lay->aggs));
	if (!lay->aggs)
		return -ENOMEM;
	lay->zero_size = lay->sv_size;
	for (size_t i = 0; i < prog->naggs; i++) {
		const struct prb_agg *a = &prog->aggs[i];
		struct prb_bpf_agg_layout *al = &lay->aggs[i];
		uint64_t per;

		for (size_t k = 0; k < a->nkeys; k++) {
			al->key_off[k] = al->key_size;
			switch (a->key_types[k]) {
			case HWT_REP_STR:
				al->key_kind[k] = PRB_KEY_STR;
				al->key_size += lay->sv_size;
				break;
			case HWT_REP_STACK:
				al->key_kind[k] = PRB_KEY_STACK;
				al->key_size += 16;
				break;
			default:
				al->key_kind[k] = PRB_KEY_INT;
				al->key_size += 8;
			}
		}
		if (!al->key_size)
			al->key_size = 8; /* @x: one key, 0 */
		if (a->plain) {
			/* a plain map: one value, shared by every CPU */
			al->value_size = a->vty.t == PRB_T_STR	   ? lay->sv_size
					 : a->vty.t == PRB_T_STACK ? 16
								   : 8;
			al->max_entries =
			    (uint32_t)(lay->lim.aggsize / (al->key_size + al->value_size));
			if (!al->max_entries)
				al->max_entries = 1;
			if (al->value_size > lay->zero_size)
				lay->zero_size = al->value_size;
			continue;
		}
		al->full = a->func != HWT_REP_COUNT;
		al->value_size = al->full ? PRB_AV_HEADER : 8;
		if (a->func == HWT_REP_STDDEV) {
			al->sumsq_off = al->value_size;
			al->value_size += 16;
		}
		if (a->func == HWT_REP_QUANTIZE || a->func == HWT_REP_LQUANTIZE) {
			al->buckets_off = al->value_size;
			al->nbuckets =
			    a->func == HWT_REP_QUANTIZE
				? HWT_REP_QUANTIZE_BUCKETS
				: (uint32_t)((uint64_t)(a->high - a->low) / (uint64_t)a->step + 2);
			al->value_size += 8 * al->nbuckets;
		}
		/* a per-CPU value must fit the kernel's per-CPU unit */
		if (al->value_size > 32 * 1024 || al->buckets_off + 8ull * al->nbuckets > 0x7fff) {
			al->max_entries = 0;
			continue;
		}
		if (al->value_size > lay->zero_size)
			lay->zero_size = al->value_size;
		per = al->key_size + al->value_size;
		al->max_entries = (uint32_t)(lay->lim.aggsize / per);
		if (al->max_entries < 1)
			al->max_entries = 1;
	}
	lay->self_entries = (uint32_t)(lay->lim.dynvarsize / (8 + lay->sv_size));
	if (lay->self_entries < 64)
		lay->self_entries = 64;
	lay->scratch_header = PRB_SC_AGG_DROPS + 8 * (uint32_t)prog->naggs;
	lay->stack_depth = 127;
	return 0;
}

uint32_t prb_agg_max_keys(const struct prb_bpf_layout *lay, size_t agg)
{
	const struct prb_bpf_agg_layout *al;
	uint64_t n;

	if (agg >= lay->naggs)
		return 0;
	al = &lay->aggs[agg];
	/* values too large for BPF (max_entries 0) keep the same rule */
	n = lay->lim.aggsize / (al->key_size + al->value_size);
	return al->max_entries ? al->max_entries : (uint32_t)(n ? n : 1);
}
