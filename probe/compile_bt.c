/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/compile_bt.c - the compiler's half for bpftrace's language, so that
 * bpftrace's scripts run as they are: plain maps (@start[tid] = nsecs, read
 * back, delete()), $variables of a clause, if/else, casts to kernel types
 * and member access through the kernel's BTF ((struct sock *)arg0,
 * $sk->__sk_common.skc_family, curtask->real_parent->pid), *ADDR, str(),
 * ntop(), bswap(), kaddr(), usym(), ksym(), buf(), time(), join(), cat(),
 * and the constants of enums (BTF) and of the few headers the tools
 * include (AF_INET, TASK_RUNNING).
 *
 * What reads the traced task's memory at the hit (member access, *ADDR,
 * str(), buf(), join(), curtask) or needs the kernel's view of the task
 * (uid, gid) has no form on the sampling path, which gets only a sample
 * later: the clause is marked (prb_needs_bpf) and such a probe runs on BPF
 * or not at all, saying why.
 */
#include "probe/compile_int.h"

#include <bpf/btf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void prb_needs_bpf(struct comp *c, size_t pos, const char *what)
{
	if (c->cl && !c->cl->bpf_only) {
		c->cl->bpf_only = what;
		c->cl->bpf_only_pos = pos;
	}
}

/* Something this kernel lacks: an error, or with check_only (-n) a
 * warning, the value then reading as an integer. Returns 0 to go on. */
static int kernel_lacks(struct comp *c, size_t pos, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int kernel_lacks(struct comp *c, size_t pos, int err, const char *fmt, ...)
{
	struct hwt_probe_diag d;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!c->prog->cfg.check_only)
		return FAIL(c, pos, err, "%s", msg);
	hwt_probe_diag_at(&d, c->prog->text, pos, "%s", msg);
	hwt_log(&c->prog->cfg.log, HWT_LOG_WARN,
		"line %d, column %d: %s: this kernel cannot run it", d.line, d.column, msg);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The kernel's types                                                        */

static struct btf *kernel_btf(struct hwt_probe_prog *prog)
{
	char path[512];

	if (prog->btf)
		return prog->btf;
	snprintf(path, sizeof(path), "%s/kernel/btf/vmlinux",
		 prog->cfg.sysfs_root ? prog->cfg.sysfs_root : "/sys");
	prog->btf = btf__parse(path, NULL); /* NULL and errno on failure (libbpf 1.0) */
	return prog->btf;
}

static struct btf *need_btf(struct comp *c, size_t pos)
{
	struct btf *b = kernel_btf(c->prog);

	if (!b)
		FAIL(c, pos, -HWT_ENOTSUP,
		     "this needs the kernel's types (BTF, %s/kernel/btf/vmlinux), which this "
		     "kernel does not have: it needs CONFIG_DEBUG_INFO_BTF",
		     c->prog->cfg.sysfs_root ? c->prog->cfg.sysfs_root : "/sys");
	return b;
}

/* The type under typedefs and qualifiers. */
static const struct btf_type *resolve(const struct btf *b, int32_t *id)
{
	const struct btf_type *t = btf__type_by_id(b, (uint32_t)*id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t))) {
		*id = (int32_t)t->type;
		t = btf__type_by_id(b, (uint32_t)*id);
	}
	return t;
}

/* "struct sock", "union X": the type's id, or 0. */
static int32_t find_record(const struct btf *b, const char *name)
{
	bool u = !strncmp(name, "union ", 6);
	const char *n = strchr(name, ' ');

	return n ? btf__find_by_name_kind(b, n + 1, u ? BTF_KIND_UNION : BTF_KIND_STRUCT) : 0;
}

/* Member name of record id (anonymous members searched too): its type
 * and byte offset. 0, -ENOENT, -HWT_ENOTSUP (a bitfield). */
static int find_member(const struct btf *b, int32_t id, const char *name, int32_t *type,
		       uint32_t *off)
{
	const struct btf_type *t = resolve(b, &id);
	const struct btf_member *m;

	if (!t || !btf_is_composite(t))
		return -ENOENT;
	m = btf_members(t);
	for (uint16_t i = 0; i < btf_vlen(t); i++, m++) {
		const char *mn = btf__name_by_offset(b, m->name_off);
		uint32_t bit = btf_member_bit_offset(t, i);

		if (mn && *mn) {
			if (strcmp(mn, name))
				continue;
			if (btf_member_bitfield_size(t, i) || bit % 8)
				return -HWT_ENOTSUP;
			*type = (int32_t)m->type;
			*off = bit / 8;
			return 0;
		}
		/* an anonymous struct or union: its members are ours */
		if (!find_member(b, (int32_t)m->type, name, type, off)) {
			*off += bit / 8;
			return 0;
		}
	}
	return -ENOENT;
}

/* What a value of BTF type id is once read. */
enum cls { CLS_INT = 1, CLS_PTR, CLS_CHARS, CLS_OBJECT };

static enum cls classify(const struct btf *b, int32_t id, uint32_t *size, bool *sgn,
			 int32_t *target)
{
	const struct btf_type *t = resolve(b, &id);

	*size = 8;
	*sgn = false;
	*target = id;
	if (!t)
		return CLS_OBJECT;
	if (btf_is_int(t)) {
		*size = t->size;
		*sgn = btf_int_encoding(t) & BTF_INT_SIGNED;
		return CLS_INT;
	}
	if (btf_is_any_enum(t)) {
		*size = t->size;
		*sgn = true;
		return CLS_INT;
	}
	if (btf_is_ptr(t)) {
		*target = (int32_t)t->type;
		resolve(b, target);
		return CLS_PTR;
	}
	if (btf_is_array(t)) {
		int32_t e = (int32_t)btf_array(t)->type;
		const struct btf_type *et = resolve(b, &e);

		*size = btf_array(t)->nelems;
		if (et && btf_is_int(et) && et->size == 1 &&
		    (!strcmp(btf__name_by_offset(b, et->name_off), "char") ||
		     (btf_int_encoding(et) & BTF_INT_CHAR)))
			return CLS_CHARS; /* char[N]: a string (u8[N] are bytes) */
		*size = btf_array(t)->nelems * (et ? (et->size ? et->size : 1) : 1);
	}
	return CLS_OBJECT;
}

/* A tracepoint field's type: "struct __kernel_timespec * rqtp" points to a
 * struct member access can follow. */
void prb_field_ty(struct hwt_probe_prog *prog, const struct prb_tp_field *f, struct prb_ty *ty)
{
	char name[160], decl[256];
	const char *s = decl;
	size_t n;

	memset(ty, 0, sizeof(*ty));
	ty->t = f->is_string || f->data_loc ? PRB_T_STR : PRB_T_INT;
	ty->bits = (uint8_t)(f->size < 8 ? 8 * f->size : 64);
	ty->sgn = f->is_signed;
	/* the declaration less the field's name: "struct x *" */
	snprintf(decl, sizeof(decl), "%s", f->type);
	n = strlen(decl);
	if (n > strlen(f->name) && !strcmp(decl + n - strlen(f->name), f->name))
		n -= strlen(f->name);
	while (n && decl[n - 1] == ' ')
		n--;
	decl[n] = '\0';
	if (ty->t != PRB_T_INT || !n || s[n - 1] != '*')
		return;
	ty->t = PRB_T_PTR;
	ty->bits = 64;
	if (!strncmp(s, "const ", 6))
		s += 6;
	if (sscanf(s, "struct %150[A-Za-z0-9_]", name + 7) == 1 && kernel_btf(prog)) {
		memcpy(name, "struct ", 7);
		ty->tid = find_record(prog->btf, name);
	}
}

/* ------------------------------------------------------------------------ */
/* Constants                                                                 */

/* #define constants of the headers bpftrace's tools include (types and
 * enums come from BTF). */
static const struct {
	const char *name;
	int64_t v;
} macros[] = {
    {"AF_UNSPEC", 0},	       {"AF_UNIX", 1},
    {"AF_LOCAL", 1},	       {"AF_INET", 2},
    {"AF_INET6", 10},	       {"AF_NETLINK", 16},
    {"AF_PACKET", 17},	       {"TASK_RUNNING", 0},
    {"TASK_INTERRUPTIBLE", 1}, {"TASK_UNINTERRUPTIBLE", 2},
    {"__TASK_STOPPED", 4},     {"__TASK_TRACED", 8},
    {"EXIT_DEAD", 16},	       {"EXIT_ZOMBIE", 32},
    {"TASK_PARKED", 64},       {"TASK_DEAD", 128},
    {"TASK_WAKEKILL", 256},    {"TASK_WAKING", 512},
    {"TASK_NOLOAD", 1024},     {"TASK_NEW", 2048},
};

static int constant(struct hwt_probe_prog *prog, const char *name, int64_t *v)
{
	const struct btf *b;
	uint32_t n;

	for (size_t i = 0; i < HWT_ARRAY_SIZE(macros); i++) {
		if (!strcmp(macros[i].name, name)) {
			*v = macros[i].v;
			return 0;
		}
	}
	if (!(b = kernel_btf(prog)))
		return -ENOENT;
	n = btf__type_cnt(b);
	for (uint32_t id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(b, id);

		if (btf_is_enum(t)) {
			const struct btf_enum *e = btf_enum(t);

			for (uint16_t k = 0; k < btf_vlen(t); k++)
				if (!strcmp(btf__name_by_offset(b, e[k].name_off), name)) {
					*v = e[k].val;
					return 0;
				}
		} else if (btf_is_enum64(t)) {
			const struct btf_enum64 *e = btf_enum64(t);

			for (uint16_t k = 0; k < btf_vlen(t); k++) {
				const uint32_t *w = (const uint32_t *)&e[k];

				if (!strcmp(btf__name_by_offset(b, w[0]), name)) {
					*v = (int64_t)btf_enum64_value(&e[k]);
					return 0;
				}
			}
		}
	}
	return -ENOENT;
}

/* kaddr("sym"): the kernel symbol's address from kallsyms. */
static int kernel_addr(struct comp *c, const struct prb_node *n, const char *sym, uint64_t *addr)
{
	char path[300], line[512];
	FILE *f;
	int err = -ENOENT;

	snprintf(path, sizeof(path), "%s/kallsyms",
		 c->prog->cfg.proc_root ? c->prog->cfg.proc_root : "/proc");
	if (!(f = fopen(path, "re")))
		return FAIL(c, n->pos, -errno, "kaddr(\"%s\"): cannot read %s: %s", sym, path,
			    strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[256];

		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 && !strcmp(name, sym)) {
			*addr = a;
			err = a ? 0 : -EACCES;
			break;
		}
	}
	fclose(f);
	if (err == -EACCES)
		return FAIL(c, n->pos, -EACCES,
			    "kaddr(\"%s\"): %s shows zero addresses to this user: run as root", sym,
			    path);
	if (err < 0)
		return kernel_lacks(c, n->pos, -HWT_ENOSYM,
				    "kaddr(\"%s\"): no such kernel symbol in %s", sym, path);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Typing without code                                                       */

static int int_cast_bits(const char *name, bool *sgn)
{
	static const struct {
		const char *n;
		int bits;
		bool sgn;
	} types[] = {{"int8", 8, true},	    {"int16", 16, true},  {"int32", 32, true},
		     {"int64", 64, true},   {"uint8", 8, false},  {"uint16", 16, false},
		     {"uint32", 32, false}, {"uint64", 64, false}};

	for (size_t i = 0; i < HWT_ARRAY_SIZE(types); i++)
		if (!strcmp(types[i].n, name)) {
			*sgn = types[i].sgn;
			return types[i].bits;
		}
	return 0;
}

static void set_int(struct prb_ty *ty, int bits, bool sgn)
{
	memset(ty, 0, sizeof(*ty));
	ty->t = PRB_T_INT;
	ty->bits = (uint8_t)bits;
	ty->sgn = sgn;
}

/* The coarse type of a full one: pointers are integers to operators. */
static int coarse(const struct prb_ty *ty)
{
	return ty->t == PRB_T_PTR ? PRB_T_INT : ty->t;
}

/* Member name of the object (or of what a pointer points to) of base. */
static int member_ty(struct hwt_probe_prog *prog, const struct prb_ty *base, const char *name,
		     struct prb_ty *ty, uint32_t *off, enum cls *cls, uint32_t *size)
{
	const struct btf *b = prog->btf;
	int32_t type, target;
	bool sgn;
	int err;

	if (!b || !base->tid)
		return -ENOENT;
	if ((err = find_member(b, base->tid, name, &type, off)) < 0)
		return err;
	*cls = classify(b, type, size, &sgn, &target);
	memset(ty, 0, sizeof(*ty));
	switch (*cls) {
	case CLS_INT:
		set_int(ty, (int)(8 * *size), sgn);
		break;
	case CLS_PTR:
		ty->t = PRB_T_PTR;
		ty->bits = 64;
		ty->tid = target;
		break;
	case CLS_CHARS:
		ty->t = PRB_T_STR;
		break;
	case CLS_OBJECT:
		ty->t = PRB_T_LVAL;
		ty->tid = type;
		resolve(b, &ty->tid);
		break;
	}
	return 0;
}

int prb_infer_bt(struct hwt_probe_prog *prog, const struct prb_clause *cl, const struct prb_node *n,
		 struct prb_ty *ty)
{
	struct prb_ty a;
	uint32_t off, size;
	enum cls cls;
	bool sgn;
	int bits;

	memset(ty, 0, sizeof(*ty));
	switch (n->kind) {
	case PRB_N_IDENT:
		set_int(ty, 64, true);
		break;
	case PRB_N_MAPREF:
		*ty = prog->aggs[n->v].vty;
		break;
	case PRB_N_CAST:
		if ((bits = int_cast_bits(n->name, &sgn))) {
			set_int(ty, bits, sgn);
			break;
		}
		ty->t = PRB_T_PTR;
		ty->bits = 64;
		if (kernel_btf(prog)) {
			ty->tid = find_record(prog->btf, n->name);
			if (ty->tid > 0)
				resolve(prog->btf, &ty->tid);
		}
		break;
	case PRB_N_DEREF:
		set_int(ty, 64, false);
		break;
	case PRB_N_MEMBER:
		if (!prb_infer_ty(prog, cl, n->a, &a))
			break;
		if (member_ty(prog, &a, n->name, ty, &off, &cls, &size) < 0)
			memset(ty, 0, sizeof(*ty));
		break;
	case PRB_N_FCALL:
		if (!strcmp(n->name, "bswap") && n->nargs == 1) {
			if (!prb_infer_ty(prog, cl, n->args[0], &a))
				break;
			set_int(ty, a.bits ? a.bits : 64, false);
		} else if (!strcmp(n->name, "kaddr")) {
			set_int(ty, 64, false);
		} else {
			ty->t = PRB_T_STR; /* str, ntop, usym, ksym, buf */
		}
		break;
	case PRB_N_BUILTIN:
		if (n->v == PRB_B_CURTASK) {
			ty->t = PRB_T_PTR;
			ty->bits = 64;
			if (kernel_btf(prog)) {
				ty->tid = find_record(prog->btf, "struct task_struct");
				resolve(prog->btf, &ty->tid);
			}
		}
		break;
	}
	return coarse(ty);
}

/* ------------------------------------------------------------------------ */
/* Code                                                                      */

/* Adds off to the address on the stack. */
static int add_offset(struct comp *c, uint32_t off, size_t pos)
{
	if (!off)
		return 0;
	if (emit(c, PRB_I_INT, 0, 0, off, pos) < 0 || emit(c, PRB_I_BIN, PRB_OP_ADD, 0, 0, pos) < 0)
		return c->err;
	return 0;
}

static int gen_member(struct comp *c, struct prb_node *n)
{
	struct prb_ty base;
	uint32_t off, size;
	enum cls cls;
	int t, err;

	if ((t = gen_expr(c, n->a)) < 0)
		return t;
	base = n->a->ty;
	if (!base.t)
		base.t = (uint8_t)t;
	if (n->op == '>' && base.t != PRB_T_PTR) {
		FAIL(c, n->pos, -HWT_EINVAL,
		     "'->%s' wants a pointer to a struct: cast it first, as in ((struct sock "
		     "*)arg0)->%s",
		     n->name, n->name);
		return c->err;
	}
	if (n->op == '.' && base.t != PRB_T_LVAL && base.t != PRB_T_PTR) {
		FAIL(c, n->pos, -HWT_EINVAL, "'.%s' wants a struct", n->name);
		return c->err;
	}
	if (!need_btf(c, n->pos))
		return c->err;
	if (!base.tid) {
		if (kernel_lacks(c, n->pos, -HWT_EINVAL,
				 "'%s' of a pointer without a type: cast it, as in ((struct sock "
				 "*)arg0)->%s",
				 n->name, n->name) < 0)
			return c->err;
		set_int(&n->ty, 64, false);
		if (emit(c, PRB_I_READ, 8, 0, 0, n->pos) < 0)
			return c->err;
		return n->type = PRB_T_INT;
	}
	err = member_ty(c->prog, &base, n->name, &n->ty, &off, &cls, &size);
	if (err == -HWT_ENOTSUP) {
		FAIL(c, (size_t)n->v, -HWT_ENOTSUP, "'%s' is a bitfield, which hwtrace cannot read",
		     n->name);
		return c->err;
	}
	if (err < 0) {
		const struct btf_type *bt = btf__type_by_id(c->prog->btf, (uint32_t)base.tid);

		if (kernel_lacks(c, (size_t)n->v, -HWT_EINVAL, "'%s %s' has no member '%s'",
				 bt && btf_kind(bt) == BTF_KIND_UNION ? "union" : "struct",
				 bt ? btf__name_by_offset(c->prog->btf, bt->name_off) : "?",
				 n->name) < 0)
			return c->err;
		set_int(&n->ty, 64, false);
		if (emit(c, PRB_I_READ, 8, 0, 0, n->pos) < 0)
			return c->err;
		prb_needs_bpf(c, n->pos, "member access reads the kernel's (or the task's) memory");
		return n->type = PRB_T_INT;
	}
	if ((err = add_offset(c, off, n->pos)) < 0)
		return err;
	switch (cls) {
	case CLS_INT:
	case CLS_PTR:
		if (size != 1 && size != 2 && size != 4 && size != 8) {
			FAIL(c, (size_t)n->v, -HWT_ENOTSUP, "'%s' has %u bytes: not an integer",
			     n->name, size);
			return c->err;
		}
		if (emit(c, PRB_I_READ, (uint16_t)(size | (n->ty.sgn ? 16 : 0)), 0, 0, n->pos) < 0)
			return c->err;
		break;
	case CLS_CHARS:
		if (emit(c, PRB_I_READ_STR, 0, size, 0, n->pos) < 0)
			return c->err;
		break;
	case CLS_OBJECT:
		break;
	}
	prb_needs_bpf(c, n->pos, "member access reads the kernel's (or the task's) memory");
	return n->type = (uint8_t)coarse(&n->ty);
}

static int gen_cast(struct comp *c, struct prb_node *n)
{
	int t = gen_expr(c, n->a), bits;
	bool sgn;

	if (t < 0)
		return t;
	if (t != PRB_T_INT) {
		FAIL(c, n->pos, -HWT_EINVAL, "a cast wants an integer or a pointer, and this is %s",
		     prb_type_name(t));
		return c->err;
	}
	if ((bits = int_cast_bits(n->name, &sgn))) {
		if (n->v) {
			FAIL(c, n->pos, -HWT_ENOTSUP,
			     "casts to integer pointers are not supported");
			return c->err;
		}
		set_int(&n->ty, bits, sgn);
		if (bits < 64 &&
		    emit(c, PRB_I_CAST, (uint16_t)(bits | (sgn ? 128 : 0)), 0, 0, n->pos) < 0)
			return c->err;
		return n->type = PRB_T_INT;
	}
	if (n->v != 1) {
		FAIL(c, n->pos, -HWT_ENOTSUP, "a cast to '%s' wants one '*': (%s *)", n->name,
		     n->name);
		return c->err;
	}
	if (!need_btf(c, n->pos))
		return c->err;
	memset(&n->ty, 0, sizeof(n->ty));
	n->ty.t = PRB_T_PTR;
	n->ty.bits = 64;
	n->ty.tid = find_record(c->prog->btf, n->name);
	if (n->ty.tid <= 0) {
		n->ty.tid = 0;
		if (kernel_lacks(c, n->pos, -HWT_EINVAL, "no type '%s' in the kernel's BTF",
				 n->name) < 0)
			return c->err;
		return n->type = PRB_T_INT;
	}
	resolve(c->prog->btf, &n->ty.tid);
	return n->type = PRB_T_INT;
}

static int gen_fcall(struct comp *c, struct prb_node *n)
{
	const char *f = n->name;
	int t;

	if (!strcmp(f, "kaddr")) {
		uint64_t addr;

		if (n->nargs != 1 || n->args[0]->kind != PRB_N_STR) {
			FAIL(c, n->pos, -HWT_EINVAL,
			     "kaddr() wants a symbol's name, as in "
			     "kaddr(\"avenrun\")");
			return c->err;
		}
		addr = 0;
		if (kernel_addr(c, n, c->prog->strs[n->args[0]->v], &addr) < 0)
			return c->err;
		if (emit(c, PRB_I_INT, 0, 0, (int64_t)addr, n->pos) < 0)
			return c->err;
		push(c, 1);
		set_int(&n->ty, 64, false);
		return n->type = PRB_T_INT;
	}
	if (!strcmp(f, "str")) {
		uint32_t max = 0;

		if (n->nargs < 1 || n->nargs > 2 ||
		    (n->nargs == 2 && n->args[1]->kind != PRB_N_INT)) {
			FAIL(c, n->pos, -HWT_EINVAL,
			     "str() wants an address and a constant length");
			return c->err;
		}
		if (n->nargs == 2)
			max = n->args[1]->v > 0 && n->args[1]->v < 65536 ? (uint32_t)n->args[1]->v
									 : 65535;
		if ((t = gen_expr(c, n->args[0])) < 0)
			return t;
		n->ty.t = PRB_T_STR;
		if (t == PRB_T_STR)
			return n->type = PRB_T_STR; /* a string already */
		if (t != PRB_T_INT) {
			FAIL(c, n->args[0]->pos, -HWT_EINVAL,
			     "str() wants an address, and this is %s", prb_type_name(t));
			return c->err;
		}
		if (emit(c, PRB_I_READ_STR, 0, max, 0, n->pos) < 0)
			return c->err;
		prb_needs_bpf(c, n->pos, "str() reads the traced task's memory at the hit");
		return n->type = PRB_T_STR;
	}
	if (!strcmp(f, "ntop")) {
		struct prb_node *x = n->args[n->nargs - 1];
		int64_t af = 0;
		int mode;

		if (n->nargs < 1 || n->nargs > 2) {
			FAIL(c, n->pos, -HWT_EINVAL,
			     "ntop() wants an address, or a family and one");
			return c->err;
		}
		if (n->nargs == 2) {
			const struct prb_node *a = n->args[0];

			if (a->kind == PRB_N_INT)
				af = a->v;
			else if (a->kind != PRB_N_IDENT || constant(c->prog, a->name, &af) < 0) {
				FAIL(c, a->pos, -HWT_EINVAL,
				     "ntop()'s family must be a constant (AF_INET, AF_INET6)");
				return c->err;
			}
		}
		if ((t = gen_expr(c, x)) < 0)
			return t;
		if (t == PRB_T_INT && af != 10) {
			mode = 0;
		} else if (t == PRB_T_LVAL && (af == 10 || !af)) {
			mode = af == 10 ? 1 : 2;
			if (!af) {
				uint32_t size;
				bool sgn;
				int32_t target;

				classify(c->prog->btf, x->ty.tid, &size, &sgn, &target);
				mode = size == 16 ? 1 : 2;
			}
			prb_needs_bpf(c, n->pos,
				      "ntop() of an address in memory reads it at the hit");
		} else {
			FAIL(
			    c, x->pos, -HWT_EINVAL,
			    "ntop() wants an IPv4 address (an integer) or an IPv6 one (16 bytes in "
			    "memory)");
			return c->err;
		}
		if (emit(c, PRB_I_NTOP, (uint16_t)mode, 0, 0, n->pos) < 0)
			return c->err;
		n->ty.t = PRB_T_STR;
		return n->type = PRB_T_STR;
	}
	if (!strcmp(f, "bswap") || !strcmp(f, "usym") || !strcmp(f, "ksym")) {
		if (n->nargs != 1) {
			FAIL(c, n->pos, -HWT_EINVAL, "%s() takes one integer", f);
			return c->err;
		}
		if ((t = gen_expr(c, n->args[0])) < 0)
			return t;
		if (t != PRB_T_INT) {
			FAIL(c, n->args[0]->pos, -HWT_EINVAL,
			     "%s() wants an integer, and this is %s", f, prb_type_name(t));
			return c->err;
		}
		if (f[0] == 'b') {
			int bits = n->args[0]->ty.bits ? n->args[0]->ty.bits : 64;

			if (emit(c, PRB_I_BSWAP, (uint16_t)bits, 0, 0, n->pos) < 0)
				return c->err;
			set_int(&n->ty, bits, false);
			return n->type = PRB_T_INT;
		}
		if (emit(c, PRB_I_SYM, f[0] == 'k', 0, 0, n->pos) < 0)
			return c->err;
		n->ty.t = PRB_T_STR;
		return n->type = PRB_T_STR;
	}
	if (!strcmp(f, "buf")) {
		if (n->nargs != 2) {
			FAIL(c, n->pos, -HWT_EINVAL, "buf() wants an address and a length");
			return c->err;
		}
		if ((t = gen_expr(c, n->args[0])) < 0 || (t != PRB_T_INT && t != PRB_T_LVAL)) {
			FAIL(c, n->args[0]->pos, -HWT_EINVAL, "buf() wants an address");
			return c->err;
		}
		if ((t = gen_expr(c, n->args[1])) < 0 || t != PRB_T_INT) {
			FAIL(c, n->args[1]->pos, -HWT_EINVAL, "buf() wants a length");
			return c->err;
		}
		if (emit(c, PRB_I_BUF, 0, 0, 0, n->pos) < 0)
			return c->err;
		push(c, -1);
		prb_needs_bpf(c, n->pos, "buf() reads memory at the hit");
		n->ty.t = PRB_T_STR;
		return n->type = PRB_T_STR;
	}
	FAIL(c, n->pos, -HWT_EINVAL, "unknown function '%s'", f);
	return c->err;
}

/* A plain map's keys: typed at the first use, checked at the others. */
static int gen_map_keys(struct comp *c, struct prb_node *n, struct prb_agg *m)
{
	if (m->typed && m->nkeys != n->nargs) {
		FAIL(c, n->pos, -HWT_EINVAL, "@%s is used with %zu keys and with %zu", m->name,
		     m->nkeys, n->nargs);
		return c->err;
	}
	for (size_t k = 0; k < n->nargs; k++) {
		int err = prb_gen_key(c, m, k, n->args[k]);

		if (err < 0)
			return err;
	}
	if (!m->typed) {
		m->typed = true;
		m->nkeys = n->nargs;
		m->func = HWT_REP_COUNT; /* unused by plain maps */
	}
	return 0;
}

static int gen_mapref(struct comp *c, struct prb_node *n)
{
	struct prb_agg *m = &c->prog->aggs[n->v];
	int err;

	if (!m->plain) {
		FAIL(c, n->pos, -HWT_EINVAL,
		     "@%s is an aggregation: its value is printed, not read (a map assigned with "
		     "@%s[k] = v can be read)",
		     m->name, m->name);
		return c->err;
	}
	if (!m->vty.t) {
		FAIL(c, n->pos, -HWT_EINVAL, "@%s is read but never assigned", m->name);
		return c->err;
	}
	if ((err = gen_map_keys(c, n, m)) < 0)
		return err;
	if (emit(c, PRB_I_MAP_LOAD, (uint16_t)n->v, 0, 0, n->pos) < 0)
		return c->err;
	push(c, 1 - (int)n->nargs);
	n->ty = m->vty;
	return n->type = (uint8_t)coarse(&m->vty);
}

static int gen_mapset(struct comp *c, struct prb_node *n)
{
	struct prb_agg *m = &c->prog->aggs[n->v];
	int t, err;

	if ((err = gen_map_keys(c, n, m)) < 0)
		return err;
	if ((t = gen_expr(c, n->b)) < 0)
		return t;
	if (t == PRB_T_LVAL) {
		FAIL(c, n->b->pos, -HWT_EINVAL, "a struct cannot be a map's value: take a member");
		return c->err;
	}
	if (t != coarse(&m->vty)) {
		FAIL(c, n->b->pos, -HWT_EINVAL, "@%s holds %s elsewhere, and this is %s", m->name,
		     prb_type_name(coarse(&m->vty)), prb_type_name(t));
		return c->err;
	}
	if (emit(c, PRB_I_MAP_STORE, (uint16_t)n->v, 0, 0, n->pos) < 0)
		return c->err;
	push(c, -(int)n->nargs - 1);
	return 0;
}

int prb_gen_bt(struct comp *c, struct prb_node *n)
{
	struct hwt_probe_prog *prog = c->prog;
	int t, err;

	switch (n->kind) {
	case PRB_N_IDENT: {
		int64_t v;

		if (constant(prog, n->name, &v) < 0)
			return c->err = prb_unknown_name(prog, n->name, n->pos, c->diag);
		if (emit(c, PRB_I_INT, 0, 0, v, n->pos) < 0)
			return c->err;
		push(c, 1);
		set_int(&n->ty, 64, true);
		return n->type = PRB_T_INT;
	}
	case PRB_N_MAPREF:
		return gen_mapref(c, n);
	case PRB_N_MEMBER:
		return gen_member(c, n);
	case PRB_N_CAST:
		return gen_cast(c, n);
	case PRB_N_DEREF:
		if ((t = gen_expr(c, n->a)) < 0)
			return t;
		if (t != PRB_T_INT) {
			FAIL(c, n->pos, -HWT_EINVAL, "'*' wants an address, and this is %s",
			     prb_type_name(t));
			return c->err;
		}
		if (emit(c, PRB_I_READ, 8, 0, 0, n->pos) < 0)
			return c->err;
		prb_needs_bpf(c, n->pos, "'*' reads memory at the hit");
		set_int(&n->ty, 64, false);
		return n->type = PRB_T_INT;
	case PRB_N_FCALL:
		return gen_fcall(c, n);
	case PRB_N_MAPSET:
		return gen_mapset(c, n);
	case PRB_N_MAPDEL: {
		struct prb_agg *m = &prog->aggs[n->v];

		if (!m->plain) {
			FAIL(c, n->pos, -HWT_EINVAL,
			     "delete() takes a key of a map (@x[k] = v); clear(@%s) empties an "
			     "aggregation",
			     m->name);
			return c->err;
		}
		if ((err = gen_map_keys(c, n, m)) < 0)
			return err;
		if (emit(c, PRB_I_MAP_DELETE, (uint16_t)n->v, 0, 0, n->pos) < 0)
			return c->err;
		push(c, -(int)n->nargs);
		return 0;
	}
	case PRB_N_BLOCK:
		for (size_t i = 0; i < n->nargs; i++)
			if ((err = gen_stmt(c, n->args[i])) < 0)
				return err;
		return 0;
	case PRB_N_IF: {
		int jz, jmp;

		if ((t = gen_expr(c, n->a)) < 0)
			return t;
		if (t != PRB_T_INT) {
			FAIL(c, n->a->pos, -HWT_EINVAL,
			     "the condition of if must be an integer, and this is %s",
			     prb_type_name(t));
			return c->err;
		}
		if ((jz = emit(c, PRB_I_JZ, 0, 0, 0, n->pos)) < 0)
			return c->err;
		push(c, -1);
		if ((err = prb_gen_bt(c, n->b)) < 0)
			return err;
		if (!n->c) {
			prog->code[jz].b = (uint32_t)prog->ncode;
			return 0;
		}
		if ((jmp = emit(c, PRB_I_JMP, 0, 0, 0, n->pos)) < 0)
			return c->err;
		prog->code[jz].b = (uint32_t)prog->ncode;
		if ((err = prb_gen_bt(c, n->c)) < 0)
			return err;
		prog->code[jmp].b = (uint32_t)prog->ncode;
		return 0;
	}
	case PRB_N_TIME:
		return emit(c, PRB_I_TIME, n->v < 0 ? 0xffff : (uint16_t)n->v, 0, 0, n->pos) < 0
			   ? c->err
			   : 0;
	case PRB_N_CAT:
		return emit(c, PRB_I_CAT, (uint16_t)n->v, 0, 0, n->pos) < 0 ? c->err : 0;
	case PRB_N_JOIN:
		if ((t = gen_expr(c, n->args[0])) < 0)
			return t;
		if (t != PRB_T_INT) {
			FAIL(c, n->args[0]->pos, -HWT_EINVAL,
			     "join() wants the address of an array of strings (as args->argv)");
			return c->err;
		}
		if (emit(c, PRB_I_JOIN, n->v < 0 ? 0xffff : (uint16_t)n->v, 0, 0, n->pos) < 0)
			return c->err;
		push(c, -1);
		prb_needs_bpf(c, n->pos, "join() reads the traced task's memory at the hit");
		return 0;
	}
	FAIL(c, n->pos, -HWT_EINTERNAL, "unexpected node %d", n->kind);
	return c->err;
}
