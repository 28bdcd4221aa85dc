/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/parse.c - the one-liner language's lexer and parser: program text
 * to probes, clauses and an AST. The grammar (docs/trace.md):
 *
 *   program   := clause+
 *   clause    := probe (',' probe)* ['/' expr '/'] '{' [stmt (';' stmt)*] [';'] '}'
 *   stmt      := '@'[name]['[' expr (',' expr)* ']'] '=' func '(' [expr (',' expr)*] ')'
 *              | ('self' | 'this') '->' name ('=' | '+=' | '-=') expr
 *              | 'printf' '(' string (',' expr)* ')'
 *              | 'exit' '(' ')' | 'clear' '(' '@'name ')' | 'print' '(' '@'name ')'
 *   expr      := C's operators from ?: down to unary - ! ~, parentheses,
 *                integers, strings, builtins, self->x, this->x, args->f,
 *                $target
 *
 * A probe description is read raw (its own lexical rules: object paths
 * hold '/', C++ names hold "::"); a '/' after it opens the predicate, in
 * which a top-level '/' closes it (write (a / b) to divide). Every error
 * names what was expected, at the byte where it was not found.
 */
#include "probe/probe_int.h"

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum tok_kind {
	TK_EOF = 0,
	TK_INT,
	TK_STR,
	TK_IDENT,
	TK_AGG,	   /* '@' name (name may be empty) */
	TK_DOLLAR, /* '$' name */
	TK_PUNCT,  /* p holds the operator, e.g. "==" */
};

struct tok {
	enum tok_kind kind;
	size_t pos, end;
	int64_t v;
	char p[4];
	char *s; /* TK_STR (unescaped), TK_IDENT, TK_AGG, TK_DOLLAR: owned */
};

struct parser {
	struct hwt_probe_prog *prog;
	struct hwt_probe_diag *diag;
	const char *text;
	size_t len, pos;
	struct tok tok; /* current token */
	int depth;
	int pred; /* > 0 inside a predicate: '/' at paren depth 0 closes it */
	int parens;
	int err;
};

static int fail(struct parser *ps, size_t pos, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct parser *ps, size_t pos, int err, const char *fmt, ...)
{
	char msg[sizeof(ps->diag->msg)];
	va_list ap;

	if (ps->err)
		return ps->err;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ps->diag)
		hwt_probe_diag_at(ps->diag, ps->text, pos, "%s", msg);
	ps->err = err;
	return err;
}

void hwt_probe_diag_at(struct hwt_probe_diag *diag, const char *text, size_t pos, const char *fmt,
		       ...)
{
	va_list ap;
	int line = 1, col = 1;

	if (!diag)
		return;
	for (size_t i = 0; text && i < pos && text[i]; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	diag->line = text ? line : 0;
	diag->column = text ? col : 0;
	va_start(ap, fmt);
	vsnprintf(diag->msg, sizeof(diag->msg), fmt, ap);
	va_end(ap);
}

static const char *tok_desc(const struct tok *t, char *buf, size_t len)
{
	switch (t->kind) {
	case TK_EOF:
		return "the end of the program";
	case TK_INT:
		snprintf(buf, len, "number %lld", (long long)t->v);
		return buf;
	case TK_STR:
		return "a string";
	case TK_IDENT:
		snprintf(buf, len, "'%s'", t->s);
		return buf;
	case TK_AGG:
		snprintf(buf, len, "'@%s'", t->s);
		return buf;
	case TK_DOLLAR:
		snprintf(buf, len, "'$%s'", t->s);
		return buf;
	case TK_PUNCT:
		snprintf(buf, len, "'%s'", t->p);
		return buf;
	}
	return "?";
}

/* Skips blanks and comments ("//" to the end of the line, and C comments). */
static int skip_space(struct parser *ps)
{
	for (;;) {
		while (ps->pos < ps->len && isspace((unsigned char)ps->text[ps->pos]))
			ps->pos++;
		if (ps->pos + 1 < ps->len && ps->text[ps->pos] == '/' &&
		    ps->text[ps->pos + 1] == '/') {
			while (ps->pos < ps->len && ps->text[ps->pos] != '\n')
				ps->pos++;
			continue;
		}
		if (ps->pos + 1 < ps->len && ps->text[ps->pos] == '/' &&
		    ps->text[ps->pos + 1] == '*') {
			const char *e = strstr(ps->text + ps->pos + 2, "*/");

			if (!e)
				return fail(ps, ps->pos, -HWT_EPARSE,
					    "comment not closed: end it with */");
			ps->pos = (size_t)(e - ps->text) + 2;
			continue;
		}
		return 0;
	}
}

static bool ident_start(int c)
{
	return isalpha(c) || c == '_';
}

static bool ident_char(int c)
{
	return isalnum(c) || c == '_';
}

static int lex_string(struct parser *ps, struct tok *t)
{
	struct hwt_buf b;
	size_t i = ps->pos + 1;

	hwt_buf_init(&b);
	while (i < ps->len && ps->text[i] != '"') {
		char c = ps->text[i];

		if (c == '\n')
			break;
		if (c == '\\' && i + 1 < ps->len) {
			char e = ps->text[++i];

			switch (e) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'r':
				c = '\r';
				break;
			case '\\':
				c = '\\';
				break;
			case '"':
				c = '"';
				break;
			case '0':
				c = '\0';
				break;
			case 'x': {
				int v = 0, k = 0;

				while (k < 2 && i + 1 < ps->len &&
				       isxdigit((unsigned char)ps->text[i + 1])) {
					char h = ps->text[++i];

					v = v * 16 + (isdigit((unsigned char)h)
							  ? h - '0'
							  : (tolower((unsigned char)h) - 'a' + 10));
					k++;
				}
				if (!k) {
					hwt_buf_fini(&b);
					return fail(ps, i, -HWT_EPARSE, "\\x wants hex digits");
				}
				c = (char)v;
				break;
			}
			default:
				hwt_buf_fini(&b);
				return fail(ps, i - 1, -HWT_EPARSE,
					    "unknown escape '\\%c' (known: \\n \\t \\r \\\\ \\\" "
					    "\\0 \\xHH)",
					    e);
			}
		}
		if (c == '\0') {
			hwt_buf_fini(&b);
			return fail(ps, i, -HWT_EPARSE, "a string cannot hold a NUL byte");
		}
		if (hwt_buf_append(&b, &c, 1) < 0) {
			hwt_buf_fini(&b);
			return fail(ps, i, -ENOMEM, "out of memory");
		}
		i++;
	}
	if (i >= ps->len || ps->text[i] != '"') {
		hwt_buf_fini(&b);
		return fail(ps, ps->pos, -HWT_EPARSE, "string not closed: end it with \"");
	}
	if (hwt_buf_append(&b, "", 1) < 0) {
		hwt_buf_fini(&b);
		return fail(ps, i, -ENOMEM, "out of memory");
	}
	t->kind = TK_STR;
	t->s = (char *)b.data;
	ps->pos = i + 1;
	return 0;
}

static char *dup_range(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static void tok_clear(struct tok *t)
{
	free(t->s);
	memset(t, 0, sizeof(*t));
}

/* Reads the next token into ps->tok. */
static int next(struct parser *ps)
{
	static const char *const puncts[] = {
	    "->", "==", "!=", "<=", ">=", "<<", ">>", "&&", "||", "+=", "-=", "{",
	    "}",  "(",	")",  "[",  "]",  ",",	";",  "=",  "<",  ">",	"+",  "-",
	    "*",  "/",	"%",  "&",  "|",  "^",	"~",  "!",  "?",  ":",	".",
	};
	struct tok *t = &ps->tok;
	int err;

	tok_clear(t);
	if ((err = skip_space(ps)) < 0)
		return err;
	t->pos = ps->pos;
	if (ps->pos >= ps->len) {
		t->kind = TK_EOF;
		t->end = ps->pos;
		return 0;
	}
	const char *p = ps->text + ps->pos;
	if (isdigit((unsigned char)*p)) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(p, &end, 0);
		/* bpftrace's 1e6: an integer with a decimal exponent */
		if (!errno && (*end == 'e' || *end == 'E') && isdigit((unsigned char)end[1]) &&
		    !(p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))) {
			char *e2;
			unsigned long x = strtoul(end + 1, &e2, 10);

			for (unsigned long k = 0; k < x && !errno; k++) {
				if (v > UINT64_MAX / 10)
					errno = ERANGE;
				v *= 10;
			}
			end = e2;
		}
		if (errno || ident_char((unsigned char)*end))
			return fail(ps, ps->pos, -HWT_EPARSE,
				    "bad number: write decimal or 0x hex up to 2^64-1");
		t->kind = TK_INT;
		t->v = (int64_t)v;
		ps->pos += (size_t)(end - p);
	} else if (*p == '"') {
		if ((err = lex_string(ps, t)) < 0)
			return err;
	} else if (ident_start((unsigned char)*p) || ((*p == '@' || *p == '$'))) {
		size_t s = ps->pos + (ident_start((unsigned char)*p) ? 0 : 1), e = s;

		while (e < ps->len && ident_char((unsigned char)ps->text[e]))
			e++;
		t->kind = *p == '@' ? TK_AGG : *p == '$' ? TK_DOLLAR : TK_IDENT;
		if (t->kind == TK_DOLLAR && e == s)
			return fail(ps, ps->pos, -HWT_EPARSE, "'$' wants a name, as in $target");
		if (e > s && isdigit((unsigned char)ps->text[s]))
			return fail(ps, s, -HWT_EPARSE, "a name cannot start with a digit");
		t->s = dup_range(ps->text + s, e - s);
		if (!t->s)
			return fail(ps, ps->pos, -ENOMEM, "out of memory");
		ps->pos = e;
	} else {
		size_t i;

		for (i = 0; i < HWT_ARRAY_SIZE(puncts); i++) {
			size_t n = strlen(puncts[i]);

			if (ps->len - ps->pos >= n && !memcmp(p, puncts[i], n))
				break;
		}
		if (i == HWT_ARRAY_SIZE(puncts)) {
			if (isprint((unsigned char)*p))
				return fail(ps, ps->pos, -HWT_EPARSE, "unexpected character '%c'",
					    *p);
			return fail(ps, ps->pos, -HWT_EPARSE, "unexpected byte 0x%02x",
				    (unsigned char)*p);
		}
		t->kind = TK_PUNCT;
		strcpy(t->p, puncts[i]);
		ps->pos += strlen(puncts[i]);
	}
	t->end = ps->pos;
	return 0;
}

static bool is_punct(const struct parser *ps, const char *p)
{
	return ps->tok.kind == TK_PUNCT && !strcmp(ps->tok.p, p);
}

static bool is_ident(const struct parser *ps, const char *s)
{
	return ps->tok.kind == TK_IDENT && !strcmp(ps->tok.s, s);
}

static int expect(struct parser *ps, const char *p, const char *what)
{
	char buf[64];

	if (!is_punct(ps, p))
		return fail(ps, ps->tok.pos, -HWT_EPARSE, "expected '%s' %s, found %s", p, what,
			    tok_desc(&ps->tok, buf, sizeof(buf)));
	return next(ps);
}

/* ------------------------------------------------------------------------ */
/* AST nodes                                                                 */

static struct prb_node *node(struct parser *ps, enum prb_node_kind kind, size_t pos)
{
	struct prb_node *n = calloc(1, sizeof(*n));

	if (!n) {
		fail(ps, pos, -ENOMEM, "out of memory");
		return NULL;
	}
	n->kind = (uint8_t)kind;
	n->pos = pos;
	n->end = pos;
	n->next_alloc = ps->prog->nodes;
	ps->prog->nodes = n;
	return n;
}

static int add_arg(struct parser *ps, struct prb_node *n, struct prb_node *arg)
{
	struct prb_node **a = realloc(n->args, (n->nargs + 1) * sizeof(*a));

	if (!a)
		return fail(ps, arg->pos, -ENOMEM, "out of memory");
	n->args = a;
	n->args[n->nargs++] = arg;
	return 0;
}

/* Index of name in a growable name table (adding it). */
static int name_index(struct parser *ps, char ***tab, size_t *n, const char *name, size_t pos,
		      size_t max)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*tab)[i], name))
			return (int)i;
	if (*n >= max)
		return fail(ps, pos, -HWT_ETOOBIG, "too many names (the limit is %zu)", max);
	char **t = realloc(*tab, (*n + 1) * sizeof(**tab));
	if (!t)
		return fail(ps, pos, -ENOMEM, "out of memory");
	*tab = t;
	if (!(t[*n] = strdup(name)))
		return fail(ps, pos, -ENOMEM, "out of memory");
	return (int)(*n)++;
}

/* A variable's index; scope: the clause of a $name, -1 for this-> (and
 * self->, which are per thread). */
static int var_index(struct parser *ps, bool self, const char *name, int scope, size_t pos)
{
	struct prb_var **tab = self ? &ps->prog->self_vars : &ps->prog->this_vars;
	size_t *n = self ? &ps->prog->nself : &ps->prog->nthis;

	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*tab)[i].name, name) && (*tab)[i].scope == scope)
			return (int)i;
	if (*n >= PRB_MAX_VARS)
		return fail(ps, pos, -HWT_ETOOBIG, "too many variables (the limit is %d)",
			    PRB_MAX_VARS);
	struct prb_var *t = realloc(*tab, (*n + 1) * sizeof(**tab));
	if (!t)
		return fail(ps, pos, -ENOMEM, "out of memory");
	*tab = t;
	memset(&t[*n], 0, sizeof(t[*n]));
	t[*n].first_read = SIZE_MAX;
	t[*n].scope = scope;
	if (!(t[*n].name = strdup(name)))
		return fail(ps, pos, -ENOMEM, "out of memory");
	return (int)(*n)++;
}

static int agg_index(struct parser *ps, const char *name, size_t pos)
{
	struct hwt_probe_prog *prog = ps->prog;

	for (size_t i = 0; i < prog->naggs; i++)
		if (!strcmp(prog->aggs[i].name, name))
			return (int)i;
	if (prog->naggs >= PRB_MAX_AGGS)
		return fail(ps, pos, -HWT_ETOOBIG, "too many aggregations (the limit is %d)",
			    PRB_MAX_AGGS);
	struct prb_agg *t = realloc(prog->aggs, (prog->naggs + 1) * sizeof(*t));
	if (!t)
		return fail(ps, pos, -ENOMEM, "out of memory");
	prog->aggs = t;
	memset(&t[prog->naggs], 0, sizeof(t[0]));
	t[prog->naggs].pos = pos;
	if (!(t[prog->naggs].name = strdup(name)))
		return fail(ps, pos, -ENOMEM, "out of memory");
	return (int)prog->naggs++;
}

/* ------------------------------------------------------------------------ */
/* Expressions                                                               */

static const struct {
	const char *name;
	enum prb_builtin b;
} builtins[] = {
    {"pid", PRB_B_PID},		{"tid", PRB_B_TID},	    {"cpu", PRB_B_CPU},
    {"nsecs", PRB_B_NSECS},	{"timestamp", PRB_B_NSECS}, {"elapsed", PRB_B_ELAPSED},
    {"comm", PRB_B_COMM},	{"execname", PRB_B_COMM},   {"func", PRB_B_FUNC},
    {"probefunc", PRB_B_FUNC},	{"probe", PRB_B_PROBE},	    {"ustack", PRB_B_USTACK},
    {"kstack", PRB_B_KSTACK},	{"stack", PRB_B_KSTACK},    {"arg0", PRB_B_ARG0},
    {"arg1", PRB_B_ARG0 + 1},	{"arg2", PRB_B_ARG0 + 2},   {"arg3", PRB_B_ARG0 + 3},
    {"arg4", PRB_B_ARG0 + 4},	{"arg5", PRB_B_ARG0 + 5},   {"retval", PRB_B_RETVAL},
    {"ip", PRB_B_IP},		{"uid", PRB_B_UID},	    {"gid", PRB_B_GID},
    {"curtask", PRB_B_CURTASK}, {"cpid", PRB_B_TARGET},
};

static const char builtin_list[] =
    "pid, tid, cpu, nsecs, elapsed, comm, func, probe, ustack, kstack, arg0..arg5, "
    "retval, ip, uid, gid, curtask, $target (cpid), self->NAME, this->NAME, $NAME, "
    "@NAME[KEYS], args->FIELD";

static struct prb_node *parse_expr(struct parser *ps);

int prb_unknown_name(const struct hwt_probe_prog *prog, const char *name, size_t pos,
		     struct hwt_probe_diag *diag)
{
	const char *best = NULL;
	size_t bd = SIZE_MAX;

	for (size_t i = 0; i < HWT_ARRAY_SIZE(builtins); i++) {
		size_t d = prb_edit_distance(name, builtins[i].name);

		if (d < bd) {
			bd = d;
			best = builtins[i].name;
		}
	}
	if (best && bd <= 2)
		hwt_probe_diag_at(diag, prog->text, pos,
				  "unknown variable '%s'; did you mean '%s'?", name, best);
	else
		hwt_probe_diag_at(diag, prog->text, pos, "unknown variable '%s'; known are: %s",
				  name, builtin_list);
	return -HWT_EINVAL;
}

static struct prb_node *parse_var(struct parser *ps, bool self)
{
	size_t pos = ps->tok.pos;
	struct prb_node *n;
	int v;

	if (next(ps) < 0)
		return NULL;
	if (!is_punct(ps, "->")) {
		fail(ps, ps->tok.pos, -HWT_EPARSE, "expected '->' after '%s', as in %s->ts",
		     self ? "self" : "this", self ? "self" : "this");
		return NULL;
	}
	if (next(ps) < 0)
		return NULL;
	if (ps->tok.kind != TK_IDENT) {
		fail(ps, ps->tok.pos, -HWT_EPARSE, "expected a variable name after '->'");
		return NULL;
	}
	if ((v = var_index(ps, self, ps->tok.s, -1, ps->tok.pos)) < 0)
		return NULL;
	if (!(n = node(ps, self ? PRB_N_SELF : PRB_N_THIS, pos)))
		return NULL;
	n->v = v;
	n->end = ps->tok.end;
	if (next(ps) < 0)
		return NULL;
	return n;
}

static int parse_args(struct parser *ps, struct prb_node *n);
static struct prb_node *parse_unary(struct parser *ps);

/* Functions in expressions (the rest are statements). */
static const char *const expr_funcs[] = {"str", "ntop", "bswap", "kaddr", "usym", "ksym", "buf"};

/* Type names a cast may start with. */
static bool is_type_name(const char *s)
{
	static const char *const names[] = {"struct", "union", "int8",	 "int16",  "int32",
					    "int64",  "uint8", "uint16", "uint32", "uint64"};

	for (size_t i = 0; i < HWT_ARRAY_SIZE(names); i++)
		if (!strcmp(s, names[i]))
			return true;
	return false;
}

/* (TYPE)EXPR, after the '(': TYPE is "struct NAME", "union NAME" or an
 * integer type, with '*'s. */
static struct prb_node *parse_cast(struct parser *ps, size_t pos)
{
	struct prb_node *n, *a;
	char type[160];
	int stars = 0;

	if (!strcmp(ps->tok.s, "struct") || !strcmp(ps->tok.s, "union")) {
		char kw[8];

		snprintf(kw, sizeof(kw), "%s", ps->tok.s);
		if (next(ps) < 0)
			return NULL;
		if (ps->tok.kind != TK_IDENT) {
			fail(ps, ps->tok.pos, -HWT_EPARSE, "expected a type name after '%s'", kw);
			return NULL;
		}
		snprintf(type, sizeof(type), "%s %s", kw, ps->tok.s);
	} else {
		snprintf(type, sizeof(type), "%s", ps->tok.s);
	}
	if (next(ps) < 0)
		return NULL;
	while (is_punct(ps, "*")) {
		stars++;
		if (next(ps) < 0)
			return NULL;
	}
	if (!is_punct(ps, ")")) {
		fail(ps, ps->tok.pos, -HWT_EPARSE, "expected ')' to close the cast to '%s'", type);
		return NULL;
	}
	ps->parens--;
	if (next(ps) < 0 || !(a = parse_unary(ps)))
		return NULL;
	if (!(n = node(ps, PRB_N_CAST, pos)) || !(n->name = strdup(type))) {
		fail(ps, pos, -ENOMEM, "out of memory");
		return NULL;
	}
	n->v = stars;
	n->a = a;
	n->end = a->end;
	return n;
}

/* $name: a variable of the clause. */
static struct prb_node *parse_local(struct parser *ps)
{
	char name[128];
	struct prb_node *n;
	int v;

	snprintf(name, sizeof(name), "$%s", ps->tok.s);
	if ((v = var_index(ps, false, name, (int)ps->prog->nclauses - 1, ps->tok.pos)) < 0 ||
	    !(n = node(ps, PRB_N_THIS, ps->tok.pos)))
		return NULL;
	n->v = v;
	n->end = ps->tok.end;
	return next(ps) < 0 ? NULL : n;
}

/* [KEY, ...] after @name, into n->args (none: no brackets). */
/* EXPR (',' EXPR)* up to the closing punctuation close, into n->args (at
 * most max); the opening one was read. */
static int parse_list(struct parser *ps, struct prb_node *n, const char *close, size_t max,
		      const char *what)
{
	int err;

	ps->parens++;
	while (!is_punct(ps, close)) {
		struct prb_node *a = parse_expr(ps);

		if (!a)
			return ps->err;
		if (n->nargs >= max)
			return fail(ps, a->pos, -HWT_ETOOBIG, "a map takes at most %zu keys", max);
		if ((err = add_arg(ps, n, a)) < 0)
			return err;
		if (!is_punct(ps, ","))
			break;
		if ((err = next(ps)) < 0)
			return err;
	}
	ps->parens--;
	n->end = ps->tok.end;
	return expect(ps, close, what);
}

/* [KEY, ...] after @name, into n->args (none: no brackets). */
static int parse_keys(struct parser *ps, struct prb_node *n)
{
	int err;

	if (!is_punct(ps, "["))
		return 0;
	if ((err = next(ps)) < 0)
		return err;
	return parse_list(ps, n, "]", HWT_REP_MAX_KEYS, "to close the keys");
}

static struct prb_node *parse_primary(struct parser *ps);

/* A primary and its member accesses: a->b, a.b. */
static struct prb_node *parse_postfix(struct parser *ps)
{
	struct prb_node *n = parse_primary(ps);

	while (n && (is_punct(ps, "->") || is_punct(ps, "."))) {
		struct prb_node *m;
		char op = ps->tok.p[0] == '-' ? '>' : '.';

		if (next(ps) < 0)
			return NULL;
		if (ps->tok.kind != TK_IDENT) {
			fail(ps, ps->tok.pos, -HWT_EPARSE, "expected a member name after '%s'",
			     op == '>' ? "->" : ".");
			return NULL;
		}
		if (!(m = node(ps, PRB_N_MEMBER, n->pos)))
			return NULL;
		m->op = (uint8_t)op;
		m->a = n;
		m->name = ps->tok.s;
		ps->tok.s = NULL;
		m->end = ps->tok.end;
		m->v = (int64_t)ps->tok.pos;
		if (next(ps) < 0)
			return NULL;
		n = m;
	}
	return n;
}

static struct prb_node *parse_primary(struct parser *ps)
{
	struct prb_node *n = NULL;
	size_t pos = ps->tok.pos;
	char buf[64];

	if (ps->tok.kind == TK_INT) {
		if (!(n = node(ps, PRB_N_INT, pos)))
			return NULL;
		n->v = ps->tok.v;
		n->end = ps->tok.end;
		return next(ps) < 0 ? NULL : n;
	}
	if (ps->tok.kind == TK_STR) {
		int i = name_index(ps, &ps->prog->strs, &ps->prog->nstrs, ps->tok.s, pos, 65535);

		if (i < 0 || !(n = node(ps, PRB_N_STR, pos)))
			return NULL;
		n->v = i;
		n->end = ps->tok.end;
		return next(ps) < 0 ? NULL : n;
	}
	if (is_punct(ps, "(")) {
		ps->parens++;
		if (next(ps) < 0)
			return NULL;
		if (ps->tok.kind == TK_IDENT && is_type_name(ps->tok.s))
			return parse_cast(ps, pos);
		if (!(n = parse_expr(ps)))
			return NULL;
		ps->parens--;
		if (!is_punct(ps, ")")) {
			fail(ps, ps->tok.pos, -HWT_EPARSE,
			     "expected ')' to close the '(' at column %d, found %s", (int)(pos + 1),
			     tok_desc(&ps->tok, buf, sizeof(buf)));
			return NULL;
		}
		n->end = ps->tok.end;
		return next(ps) < 0 ? NULL : n;
	}
	if (ps->tok.kind == TK_DOLLAR) {
		if (strcmp(ps->tok.s, "target"))
			return parse_local(ps);
		if (!(n = node(ps, PRB_N_BUILTIN, pos)))
			return NULL;
		n->v = PRB_B_TARGET;
		n->end = ps->tok.end;
		return next(ps) < 0 ? NULL : n;
	}
	if (ps->tok.kind == TK_AGG) {
		int m = agg_index(ps, ps->tok.s, pos);

		if (m < 0 || !(n = node(ps, PRB_N_MAPREF, pos)))
			return NULL;
		n->v = m;
		n->end = ps->tok.end;
		if (next(ps) < 0 || parse_keys(ps, n) < 0)
			return NULL;
		return n;
	}
	if (ps->tok.kind == TK_IDENT) {
		if (!strcmp(ps->tok.s, "self") || !strcmp(ps->tok.s, "this"))
			return parse_var(ps, !strcmp(ps->tok.s, "self"));
		if (!strcmp(ps->tok.s, "args")) {
			int slot;

			if (next(ps) < 0)
				return NULL;
			if (!is_punct(ps, "->") && !is_punct(ps, ".")) {
				fail(ps, ps->tok.pos, -HWT_EPARSE,
				     "expected '->' after 'args', as in args->count");
				return NULL;
			}
			if (next(ps) < 0)
				return NULL;
			if (ps->tok.kind != TK_IDENT) {
				fail(ps, ps->tok.pos, -HWT_EPARSE,
				     "expected a field name after 'args->'");
				return NULL;
			}
			slot = name_index(ps, &ps->prog->fields, &ps->prog->nfields, ps->tok.s,
					  ps->tok.pos, PRB_MAX_VARS);
			if (slot < 0 || !(n = node(ps, PRB_N_FIELD, pos)))
				return NULL;
			n->v = slot;
			n->end = ps->tok.end;
			return next(ps) < 0 ? NULL : n;
		}
		for (size_t i = 0; i < HWT_ARRAY_SIZE(expr_funcs); i++) {
			if (!strcmp(ps->tok.s, expr_funcs[i])) {
				if (!(n = node(ps, PRB_N_FCALL, pos)))
					return NULL;
				n->name = ps->tok.s;
				ps->tok.s = NULL;
				if (next(ps) < 0 || parse_args(ps, n) < 0)
					return NULL;
				return n;
			}
		}
		for (size_t i = 0; i < HWT_ARRAY_SIZE(builtins); i++) {
			if (!strcmp(ps->tok.s, builtins[i].name)) {
				if (!(n = node(ps, PRB_N_BUILTIN, pos)))
					return NULL;
				n->v = builtins[i].b;
				n->end = ps->tok.end;
				if (next(ps) < 0)
					return NULL;
				/* bpftrace writes ustack() and kstack(). */
				if ((n->v == PRB_B_USTACK || n->v == PRB_B_KSTACK) &&
				    is_punct(ps, "(")) {
					if (next(ps) < 0)
						return NULL;
					if (!is_punct(ps, ")")) {
						fail(ps, ps->tok.pos, -HWT_EPARSE,
						     "expected ')': stack depth arguments are not "
						     "supported");
						return NULL;
					}
					n->end = ps->tok.end;
					if (next(ps) < 0)
						return NULL;
				}
				return n;
			}
		}
		/* a constant (an enum's or a header's), resolved when compiled */
		if (!(n = node(ps, PRB_N_IDENT, pos)))
			return NULL;
		n->name = ps->tok.s;
		ps->tok.s = NULL;
		n->end = ps->tok.end;
		return next(ps) < 0 ? NULL : n;
	}
	fail(ps, pos, -HWT_EPARSE, "expected an expression, found %s",
	     tok_desc(&ps->tok, buf, sizeof(buf)));
	return NULL;
}

static struct prb_node *parse_unary(struct parser *ps)
{
	size_t pos = ps->tok.pos;
	struct prb_node *n, *a;
	char op;

	if (++ps->depth > PRB_MAX_DEPTH) {
		fail(ps, pos, -HWT_ETOOBIG, "expression nested too deeply (the limit is %d)",
		     PRB_MAX_DEPTH);
		return NULL;
	}
	if (is_punct(ps, "*")) {
		/* *ADDR: the 8 bytes at a kernel or user address */
		if (next(ps) < 0 || !(a = parse_unary(ps)))
			return NULL;
		ps->depth--;
		if (!(n = node(ps, PRB_N_DEREF, pos)))
			return NULL;
		n->a = a;
		n->end = a->end;
		return n;
	}
	if (is_punct(ps, "-") || is_punct(ps, "!") || is_punct(ps, "~") || is_punct(ps, "+")) {
		op = ps->tok.p[0];
		if (next(ps) < 0 || !(a = parse_unary(ps)))
			return NULL;
		ps->depth--;
		if (op == '+')
			return a;
		if (!(n = node(ps, PRB_N_UNARY, pos)))
			return NULL;
		n->op = (uint8_t)op;
		n->a = a;
		n->end = a->end;
		return n;
	}
	n = parse_postfix(ps);
	ps->depth--;
	return n;
}

static const struct {
	const char *p;
	enum prb_op op;
	int prec;
} binops[] = {
    {"*", PRB_OP_MUL, 10},  {"/", PRB_OP_DIV, 10}, {"%", PRB_OP_MOD, 10}, {"+", PRB_OP_ADD, 9},
    {"-", PRB_OP_SUB, 9},   {"<<", PRB_OP_SHL, 8}, {">>", PRB_OP_SHR, 8}, {"<", PRB_OP_LT, 7},
    {"<=", PRB_OP_LE, 7},   {">", PRB_OP_GT, 7},   {">=", PRB_OP_GE, 7},  {"==", PRB_OP_EQ, 6},
    {"!=", PRB_OP_NE, 6},   {"&", PRB_OP_BAND, 5}, {"^", PRB_OP_BXOR, 4}, {"|", PRB_OP_BOR, 3},
    {"&&", PRB_OP_LAND, 2}, {"||", PRB_OP_LOR, 1},
};

static int binop_of(const struct parser *ps, int *prec)
{
	if (ps->tok.kind != TK_PUNCT)
		return -1;
	/* Inside a predicate a top-level '/' closes it. */
	if (ps->pred && !ps->parens && !strcmp(ps->tok.p, "/"))
		return -1;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(binops); i++) {
		if (!strcmp(ps->tok.p, binops[i].p)) {
			*prec = binops[i].prec;
			return (int)binops[i].op;
		}
	}
	return -1;
}

/* Precedence climbing: operators of precedence >= min. */
static struct prb_node *parse_binary(struct parser *ps, int min)
{
	struct prb_node *lhs = parse_unary(ps);
	int op, prec;

	while (lhs && (op = binop_of(ps, &prec)) >= 0 && prec >= min) {
		size_t pos = ps->tok.pos;
		struct prb_node *rhs, *n;

		if (++ps->depth > PRB_MAX_DEPTH) {
			fail(ps, pos, -HWT_ETOOBIG,
			     "expression nested too deeply (the limit is %d)", PRB_MAX_DEPTH);
			return NULL;
		}
		if (next(ps) < 0 || !(rhs = parse_binary(ps, prec + 1)))
			return NULL;
		ps->depth--;
		if (!(n = node(ps, PRB_N_BINARY, pos)))
			return NULL;
		n->op = (uint8_t)op;
		n->a = lhs;
		n->b = rhs;
		n->pos = lhs->pos;
		n->v = (int64_t)pos; /* the operator's position, for type errors */
		n->end = rhs->end;
		lhs = n;
	}
	return lhs;
}

static struct prb_node *parse_expr(struct parser *ps)
{
	struct prb_node *c = parse_binary(ps, 1), *a, *b, *n;

	if (!c || !is_punct(ps, "?"))
		return c;
	if (++ps->depth > PRB_MAX_DEPTH) {
		fail(ps, ps->tok.pos, -HWT_ETOOBIG,
		     "expression nested too deeply (the limit is %d)", PRB_MAX_DEPTH);
		return NULL;
	}
	ps->parens++; /* a '/' between ? and : divides */
	if (next(ps) < 0 || !(a = parse_expr(ps)))
		return NULL;
	ps->parens--;
	if (expect(ps, ":", "in a ?: expression") < 0 || !(b = parse_expr(ps)))
		return NULL;
	ps->depth--;
	if (!(n = node(ps, PRB_N_TERNARY, c->pos)))
		return NULL;
	n->a = c;
	n->b = a;
	n->c = b;
	n->end = b->end;
	return n;
}

/* ------------------------------------------------------------------------ */
/* Statements                                                                */

static int add_stmt(struct parser *ps, struct prb_clause *cl, struct prb_node *n)
{
	struct prb_stmt_list *l = &cl->stmts;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct prb_node **v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return fail(ps, n->pos, -ENOMEM, "out of memory");
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = n;
	return 0;
}

/* Arguments of a call: '(' [expr (',' expr)*] ')', into n->args. */
static int parse_args(struct parser *ps, struct prb_node *n)
{
	int err;

	if ((err = expect(ps, "(", "to open the arguments")) < 0)
		return err;
	return parse_list(ps, n, ")", SIZE_MAX, "to close the arguments");
}

static const char *const agg_func_names[] = {"count", "sum",	"min",	    "max",
					     "avg",   "stddev", "quantize", "lquantize",
					     "hist",  "lhist",	"stats"};

static bool is_agg_func(const char *s)
{
	for (size_t i = 0; i < HWT_ARRAY_SIZE(agg_func_names); i++)
		if (!strcmp(s, agg_func_names[i]))
			return true;
	return false;
}

/* @name[keys] = f(...) (an aggregation) or @name[keys] = EXPR (a map). */
static struct prb_node *parse_map_stmt(struct parser *ps)
{
	size_t pos = ps->tok.pos;
	struct prb_node *n, *call;
	char buf[64];
	int a;

	if ((a = agg_index(ps, ps->tok.s, pos)) < 0)
		return NULL;
	if (!(n = node(ps, PRB_N_AGG, pos)))
		return NULL;
	n->v = a;
	if (next(ps) < 0 || parse_keys(ps, n) < 0)
		return NULL;
	if (!is_punct(ps, "=")) {
		fail(ps, ps->tok.pos, -HWT_EPARSE,
		     "expected '=' after a map (as in @x = count() or @x[tid] = nsecs), found %s",
		     tok_desc(&ps->tok, buf, sizeof(buf)));
		return NULL;
	}
	if (next(ps) < 0)
		return NULL;
	if (ps->tok.kind == TK_IDENT && !is_agg_func(ps->tok.s)) {
		/* NAME( that is not a function of expressions: a misspelt
		 * aggregation */
		size_t i = ps->pos;
		bool expr_fn = false;

		while (i < ps->len && isspace((unsigned char)ps->text[i]))
			i++;
		for (size_t k = 0; k < HWT_ARRAY_SIZE(expr_funcs); k++)
			expr_fn |= !strcmp(ps->tok.s, expr_funcs[k]);
		if (i < ps->len && ps->text[i] == '(' && !expr_fn) {
			fail(
			    ps, ps->tok.pos, -HWT_EINVAL,
			    "unknown aggregating function '%s' (count, sum, min, max, avg, stddev, "
			    "quantize, lquantize; bpftrace's hist, lhist, stats)",
			    ps->tok.s);
			return NULL;
		}
	}
	if (ps->tok.kind == TK_IDENT && is_agg_func(ps->tok.s)) {
		if (!(call = node(ps, PRB_N_CALL, ps->tok.pos)))
			return NULL;
		call->name = ps->tok.s;
		ps->tok.s = NULL;
		if (next(ps) < 0 || parse_args(ps, call) < 0)
			return NULL;
		n->a = call;
		n->end = call->end;
		return n;
	}
	/* a plain map: @x[k] = value */
	n->kind = PRB_N_MAPSET;
	if (!(n->b = parse_expr(ps)))
		return NULL;
	n->end = n->b->end;
	return n;
}

/* VAR = EXPR, VAR += EXPR, VAR -= EXPR for self->, this-> and $ names. */
static struct prb_node *parse_assign(struct parser *ps, struct prb_node *var, size_t pos)
{
	struct prb_node *n, *val;
	char buf[64], op;

	if (!is_punct(ps, "=") && !is_punct(ps, "+=") && !is_punct(ps, "-=")) {
		fail(ps, ps->tok.pos, -HWT_EPARSE, "expected '=' to assign the variable, found %s",
		     tok_desc(&ps->tok, buf, sizeof(buf)));
		return NULL;
	}
	op = ps->tok.p[0];
	if (next(ps) < 0 || !(val = parse_expr(ps)))
		return NULL;
	if (op != '=') {
		/* x += e is x = x + e */
		struct prb_node *rd = node(ps, var->kind, var->pos), *sum;

		if (!rd || !(sum = node(ps, PRB_N_BINARY, var->pos)))
			return NULL;
		rd->v = var->v;
		rd->end = var->end;
		sum->op = op == '+' ? PRB_OP_ADD : PRB_OP_SUB;
		sum->a = rd;
		sum->b = val;
		sum->v = (int64_t)val->pos;
		sum->end = val->end;
		val = sum;
	}
	if (!(n = node(ps, PRB_N_ASSIGN, pos)))
		return NULL;
	n->a = var;
	n->b = val;
	n->end = val->end;
	return n;
}

/* One argument that must be a string literal: its index. */
static int string_arg(struct parser *ps, const struct prb_node *n, size_t i, const char *what)
{
	if (i >= n->nargs || n->args[i]->kind != PRB_N_STR)
		return fail(ps, i < n->nargs ? n->args[i]->pos : n->pos, -HWT_EPARSE,
			    "%s wants a string there", what);
	return (int)n->args[i]->v;
}

/* @name as the only argument of print(), clear(), zero(), delete(). */
static int map_arg(struct parser *ps, const char *fn, bool keys, struct prb_node *n)
{
	int a, err;

	if ((err = expect(ps, "(", "to open the arguments")) < 0)
		return err;
	if (ps->tok.kind != TK_AGG)
		return fail(ps, ps->tok.pos, -HWT_EPARSE, "%s() wants a map, as in %s(@x%s)", fn,
			    fn, keys ? "[tid]" : "");
	if ((a = agg_index(ps, ps->tok.s, ps->tok.pos)) < 0)
		return a;
	n->v = a;
	if ((err = next(ps)) < 0)
		return err;
	if (keys && (err = parse_keys(ps, n)) < 0)
		return err;
	return 0;
}

static struct prb_node *parse_stmt_node(struct parser *ps);

/* { STATEMENTS } into a BLOCK node. */
static struct prb_node *parse_block(struct parser *ps)
{
	struct prb_node *b = node(ps, PRB_N_BLOCK, ps->tok.pos);
	char buf[64];

	if (!b || expect(ps, "{", "to open a block") < 0)
		return NULL;
	while (!is_punct(ps, "}")) {
		struct prb_node *st;

		if (ps->tok.kind == TK_EOF) {
			fail(ps, ps->tok.pos, -HWT_EPARSE,
			     "expected '}' to close the block, found the end of the program");
			return NULL;
		}
		if (is_punct(ps, ";")) {
			if (next(ps) < 0)
				return NULL;
			continue;
		}
		if (!(st = parse_stmt_node(ps)) || add_arg(ps, b, st) < 0)
			return NULL;
		if (st->kind != PRB_N_IF && !is_punct(ps, ";") && !is_punct(ps, "}")) {
			fail(ps, ps->tok.pos, -HWT_EPARSE,
			     "expected ';' or '}' after a statement, found %s",
			     tok_desc(&ps->tok, buf, sizeof(buf)));
			return NULL;
		}
	}
	b->end = ps->tok.end;
	return next(ps) < 0 ? NULL : b;
}

static struct prb_node *parse_if(struct parser *ps)
{
	struct prb_node *n = node(ps, PRB_N_IF, ps->tok.pos);

	if (!n || next(ps) < 0 || expect(ps, "(", "after if") < 0)
		return NULL;
	ps->parens++;
	if (!(n->a = parse_expr(ps)))
		return NULL;
	ps->parens--;
	if (expect(ps, ")", "to close the condition") < 0 || !(n->b = parse_block(ps)))
		return NULL;
	n->end = n->b->end;
	if (!is_ident(ps, "else"))
		return n;
	if (next(ps) < 0)
		return NULL;
	n->c = is_ident(ps, "if") ? parse_if(ps) : parse_block(ps);
	if (!n->c)
		return NULL;
	n->end = n->c->end;
	return n;
}

static struct prb_node *parse_stmt_node(struct parser *ps)
{
	size_t pos = ps->tok.pos;
	struct prb_node *n;
	char buf[64];

	if (ps->tok.kind == TK_AGG)
		return parse_map_stmt(ps);
	if (is_ident(ps, "self") || is_ident(ps, "this")) {
		struct prb_node *var = parse_var(ps, is_ident(ps, "self"));

		return var ? parse_assign(ps, var, pos) : NULL;
	}
	if (ps->tok.kind == TK_DOLLAR && strcmp(ps->tok.s, "target")) {
		struct prb_node *var = parse_local(ps);

		return var ? parse_assign(ps, var, pos) : NULL;
	}
	if (is_ident(ps, "if"))
		return parse_if(ps);
	if (is_ident(ps, "printf")) {
		if (!(n = node(ps, PRB_N_PRINTF, pos)))
			return NULL;
		if (next(ps) < 0 || parse_args(ps, n) < 0)
			return NULL;
		if (!n->nargs || n->args[0]->kind != PRB_N_STR) {
			fail(ps, n->nargs ? n->args[0]->pos : pos, -HWT_EPARSE,
			     "printf wants a format string first, as in printf(\"%%d\\n\", pid)");
			return NULL;
		}
		return n;
	}
	if (is_ident(ps, "exit")) {
		if (!(n = node(ps, PRB_N_EXIT, pos)))
			return NULL;
		if (next(ps) < 0 || parse_args(ps, n) < 0)
			return NULL;
		if (n->nargs) {
			fail(ps, n->args[0]->pos, -HWT_EPARSE, "exit() takes no arguments");
			return NULL;
		}
		return n;
	}
	if (is_ident(ps, "clear") || is_ident(ps, "zero") || is_ident(ps, "print") ||
	    is_ident(ps, "delete")) {
		char fn[8];
		bool del = is_ident(ps, "delete"), print = is_ident(ps, "print");

		snprintf(fn, sizeof(fn), "%s", ps->tok.s);
		if (!(n = node(ps, del ? PRB_N_MAPDEL : print ? PRB_N_PRINT : PRB_N_CLEAR, pos)))
			return NULL;
		if (next(ps) < 0 || map_arg(ps, fn, del, n) < 0)
			return NULL;
		if (print && is_punct(ps, ",")) {
			/* print(@x, TOP[, DIV]) */
			if (next(ps) < 0 || !(n->c = parse_expr(ps)))
				return NULL;
			if (n->c->kind != PRB_N_INT) {
				fail(ps, n->c->pos, -HWT_EPARSE,
				     "print(@x, N) wants a number of rows");
				return NULL;
			}
			if (is_punct(ps, ",")) {
				fail(ps, ps->tok.pos, -HWT_EPARSE,
				     "print(@x, N, DIV): a divisor is not supported; divide the "
				     "values where they are aggregated");
				return NULL;
			}
		}
		n->end = ps->tok.end;
		return expect(ps, ")", "to close the arguments") < 0 ? NULL : n;
	}
	if (is_ident(ps, "time") || is_ident(ps, "join") || is_ident(ps, "cat")) {
		enum prb_node_kind k = is_ident(ps, "time")   ? PRB_N_TIME
				       : is_ident(ps, "join") ? PRB_N_JOIN
							      : PRB_N_CAT;

		if (!(n = node(ps, k, pos)))
			return NULL;
		if (next(ps) < 0 || parse_args(ps, n) < 0)
			return NULL;
		n->v = -1;
		if (k == PRB_N_TIME && n->nargs > 1) {
			fail(ps, n->args[1]->pos, -HWT_EPARSE, "time() takes one format at most");
			return NULL;
		}
		if (k == PRB_N_TIME && n->nargs && (n->v = string_arg(ps, n, 0, "time()")) < 0)
			return NULL;
		if (k == PRB_N_JOIN && (n->nargs < 1 || n->nargs > 2)) {
			fail(ps, pos, -HWT_EPARSE, "join() takes an array and a separator");
			return NULL;
		}
		if (k == PRB_N_JOIN && n->nargs == 2 &&
		    (n->v = string_arg(ps, n, 1, "join()'s separator")) < 0)
			return NULL;
		if (k == PRB_N_CAT &&
		    (n->nargs != 1 || (n->v = string_arg(ps, n, 0, "cat()")) < 0)) {
			fail(ps, pos, -HWT_EPARSE, "cat() wants a file name");
			return NULL;
		}
		return n;
	}
	fail(ps, pos, -HWT_EPARSE,
	     "expected a statement (@agg = f(...), @map[k] = v, $x = ..., self->x = ..., "
	     "if (...) { }, printf(...), exit()), found %s",
	     tok_desc(&ps->tok, buf, sizeof(buf)));
	return NULL;
}

static int parse_stmt(struct parser *ps, struct prb_clause *cl)
{
	struct prb_node *n = parse_stmt_node(ps);

	return n ? add_stmt(ps, cl, n) : ps->err;
}

/* ------------------------------------------------------------------------ */
/* Probes and clauses                                                        */

static bool path_provider(const char *s, size_t n)
{
	static const char *const names[] = {"uprobe", "uretprobe", "u", "ur", "pt"};

	for (size_t i = 0; i < HWT_ARRAY_SIZE(names); i++)
		if (strlen(names[i]) == n && !memcmp(s, names[i], n))
			return true;
	return false;
}

/* Reads one raw probe description at ps->pos (after blanks). */
static int lex_probe(struct parser *ps, size_t *start, size_t *end)
{
	size_t i;
	int err;

	if ((err = skip_space(ps)) < 0)
		return err;
	i = *start = ps->pos;
	while (i < ps->len &&
	       (isalnum((unsigned char)ps->text[i]) || ps->text[i] == '_' || ps->text[i] == '-'))
		i++;
	if (i < ps->len && ps->text[i] == ':' && path_provider(ps->text + *start, i - *start)) {
		/* PATH: everything up to the next ':' */
		i++;
		while (i < ps->len && ps->text[i] != ':' && !isspace((unsigned char)ps->text[i]))
			i++;
	}
	while (i < ps->len && !isspace((unsigned char)ps->text[i]) && ps->text[i] != ',' &&
	       ps->text[i] != '{' && ps->text[i] != '/' && ps->text[i] != '}' && ps->text[i] != ';')
		i++;
	if (i == *start) {
		if (ps->pos >= ps->len)
			return fail(ps, ps->pos, -HWT_EPARSE,
				    "expected a probe (as in uprobe:/bin/ls:main or "
				    "syscalls:sys_enter_write), found the end of the program");
		return fail(
		    ps, ps->pos, -HWT_EPARSE,
		    "expected a probe (as in uprobe:/bin/ls:main or syscalls:sys_enter_write), "
		    "found '%c'",
		    ps->text[ps->pos]);
	}
	*end = ps->pos = i;
	return 0;
}

static int add_spec(struct parser *ps, struct prb_clause *cl, char *spec, size_t start);

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A tracepoint with wildcards (syscalls:sys_enter_exec*): one probe per
 * tracepoint it matches, named in full. Returns 1 when spec was one. */
static int expand_tracepoints(struct parser *ps, struct prb_clause *cl, const char *spec,
			      size_t start)
{
	static const char *const others[] = {"uprobe",	  "uretprobe", "u",  "ur",	"kprobe",
					     "kretprobe", "k",	       "kr", "profile", "software",
					     "s",	  "hardware",  "h",  "pt",	"interval"};
	const char *dir = prb_tracefs_dir(ps->prog->cfg.tracefs_root);
	char prefix[16] = "", sub[256], ev[256], **names = NULL;
	size_t n = 0, cap = 0, plen = strcspn(spec, ":");
	int err = 0;
	glob_t g;

	if (!strpbrk(spec, "*?["))
		return 0;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(others); i++)
		if (strlen(others[i]) == plen && !strncmp(spec, others[i], plen))
			return 0; /* not a tracepoint */
	if ((plen == 10 && !strncmp(spec, "tracepoint", 10)) || (plen == 1 && spec[0] == 't')) {
		snprintf(prefix, sizeof(prefix), "tracepoint:");
		spec += plen + 1;
	}
	if (sscanf(spec, "%255[^:]:%255s", sub, ev) != 2)
		return 0;
	if (!dir)
		return fail(ps, start, -HWT_ENOTSUP,
			    "tracepoints need tracefs, which is not mounted: mount it (mount -t "
			    "tracefs nodev /sys/kernel/tracing)");
	{
		char pat[1024];

		snprintf(pat, sizeof(pat), "%s/events/%s/%s/format", dir, sub, ev);
		if (glob(pat, 0, NULL, &g))
			return fail(ps, start, -HWT_ENOEVENT,
				    "no tracepoint matches '%s:%s' (see 'hwtrace list tracepoint')",
				    sub, ev);
	}
	for (size_t i = 0; i < g.gl_pathc && !err; i++) {
		/* DIR/events/SUB/EV/format */
		char *p = g.gl_pathv[i] + strlen(dir) + strlen("/events/"), *name;
		size_t l = strlen(p) - strlen("/format");

		if (n == cap) {
			char **v = realloc(names, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!v) {
				err = fail(ps, start, -ENOMEM, "out of memory");
				break;
			}
			names = v;
		}
		if (!(name = malloc(strlen(prefix) + l + 1))) {
			err = fail(ps, start, -ENOMEM, "out of memory");
			break;
		}
		sprintf(name, "%s%.*s", prefix, (int)l, p);
		name[strlen(prefix) + strcspn(name + strlen(prefix), "/")] = ':';
		names[n++] = name;
	}
	globfree(&g);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (!err)
			err = add_spec(ps, cl, names[i], start);
		else
			free(names[i]);
	}
	free(names);
	return err < 0 ? err : 1;
}

static int add_probe(struct parser *ps, struct prb_clause *cl, size_t start, size_t end)
{
	char *spec = dup_range(ps->text + start, end - start);
	int err;

	if (!spec)
		return fail(ps, start, -ENOMEM, "out of memory");
	if ((err = expand_tracepoints(ps, cl, spec, start)) != 0) {
		free(spec);
		return err < 0 ? err : 0;
	}
	return add_spec(ps, cl, spec, start);
}

/* Adds the probe spec (freed here) to the clause. */
static int add_spec(struct parser *ps, struct prb_clause *cl, char *spec, size_t start)
{
	struct hwt_probe_prog *prog = ps->prog;
	size_t idx;
	int err;

	for (idx = 0; idx < prog->nprobes; idx++)
		if (!strcmp(prog->probes[idx].text, spec))
			break;
	if (idx == prog->nprobes) {
		if (prog->nprobes >= PRB_MAX_PROBES) {
			free(spec);
			return fail(ps, start, -HWT_ETOOBIG, "too many probes (the limit is %d)",
				    PRB_MAX_PROBES);
		}
		if (prog->nprobes == prog->probes_cap) {
			size_t cap = prog->probes_cap ? prog->probes_cap * 2 : 8;
			struct prb_probe *p = realloc(prog->probes, cap * sizeof(*p));

			if (!p) {
				free(spec);
				return fail(ps, start, -ENOMEM, "out of memory");
			}
			prog->probes = p;
			prog->probes_cap = cap;
		}
		memset(&prog->probes[idx], 0, sizeof(prog->probes[idx]));
		prog->nprobes++;
		err = prb_probe_spec(prog, &prog->probes[idx], spec, start, ps->diag);
		if (err < 0) {
			free(spec);
			ps->err = err;
			return err;
		}
	}
	free(spec);
	for (size_t i = 0; i < cl->nprobes; i++)
		if (cl->probes[i] == idx)
			return 0; /* "a,a { }" runs once */
	size_t *p = realloc(cl->probes, (cl->nprobes + 1) * sizeof(*p));
	if (!p)
		return fail(ps, start, -ENOMEM, "out of memory");
	cl->probes = p;
	cl->probes[cl->nprobes++] = idx;
	return 0;
}

static int parse_clause(struct parser *ps)
{
	struct hwt_probe_prog *prog = ps->prog;
	struct prb_clause *cl;
	size_t start = 0, end = 0;
	char buf[64];
	int err;

	if (prog->nclauses == prog->clauses_cap) {
		size_t cap = prog->clauses_cap ? prog->clauses_cap * 2 : 4;
		struct prb_clause *c = realloc(prog->clauses, cap * sizeof(*c));

		if (!c)
			return fail(ps, ps->pos, -ENOMEM, "out of memory");
		prog->clauses = c;
		prog->clauses_cap = cap;
	}
	cl = &prog->clauses[prog->nclauses++];
	memset(cl, 0, sizeof(*cl));
	for (;;) {
		if ((err = lex_probe(ps, &start, &end)) < 0)
			return err;
		if (!cl->nprobes)
			cl->pos = start;
		if ((err = add_probe(ps, cl, start, end)) < 0)
			return err;
		if ((err = skip_space(ps)) < 0)
			return err;
		if (ps->pos < ps->len && ps->text[ps->pos] == ',') {
			ps->pos++;
			continue;
		}
		break;
	}
	if ((err = next(ps)) < 0)
		return err;
	if (is_punct(ps, "/")) {
		size_t ppos = ps->tok.pos;

		ps->pred = 1;
		if ((err = next(ps)) < 0)
			return err;
		if (!(cl->pred = parse_expr(ps)))
			return ps->err;
		ps->pred = 0;
		if (!is_punct(ps, "/"))
			return fail(
			    ps, ps->tok.pos, -HWT_EPARSE,
			    "expected '/' to close the predicate opened at column %d, found %s",
			    (int)(ppos + 1), tok_desc(&ps->tok, buf, sizeof(buf)));
		if ((err = next(ps)) < 0)
			return err;
	}
	if (!is_punct(ps, "{"))
		return fail(ps, ps->tok.pos, -HWT_EPARSE,
			    "expected '{' to open the actions (or ',' for another probe, '/' for a "
			    "predicate), found %s",
			    tok_desc(&ps->tok, buf, sizeof(buf)));
	if ((err = next(ps)) < 0)
		return err;
	while (!is_punct(ps, "}")) {
		if (ps->tok.kind == TK_EOF)
			return fail(
			    ps, ps->tok.pos, -HWT_EPARSE,
			    "expected '}' to close the actions, found the end of the program");
		if (is_punct(ps, ";")) {
			if ((err = next(ps)) < 0)
				return err;
			continue;
		}
		if ((err = parse_stmt(ps, cl)) < 0)
			return err;
		if (ps->tok.kind == TK_EOF)
			return fail(
			    ps, ps->tok.pos, -HWT_EPARSE,
			    "expected '}' to close the actions, found the end of the program");
		if (cl->stmts.v[cl->stmts.n - 1]->kind != PRB_N_IF && !is_punct(ps, ";") &&
		    !is_punct(ps, "}"))
			return fail(ps, ps->tok.pos, -HWT_EPARSE,
				    "expected ';' or '}' after a statement, found %s",
				    tok_desc(&ps->tok, buf, sizeof(buf)));
	}
	/* The '}' is consumed by the caller's look at the next clause: the
	 * lexer's position is already past it. */
	return 0;
}

/* ------------------------------------------------------------------------ */
/* What is not the program                                                   */

static void blank(char *t, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (t[i] != '\n')
			t[i] = ' ';
}

/* Blanks (keeping newlines, so positions hold) what scripts carry besides
 * the program: the #! line (bpftrace's or DTrace's interpreter), and the C
 * preprocessor's lines with the branches they leave out. Types come from
 * the kernel's BTF, so BPFTRACE_HAVE_BTF is defined and #include adds
 * nothing. */
static int preprocess(struct parser *ps, char *t)
{
	struct {
		bool active, taken;
	} stack[16];
	size_t depth = 0, i = 0, len = ps->len;
	bool comment = false;
	char defined[8][64] = {"BPFTRACE_HAVE_BTF"};
	size_t ndefined = 1;

	if (len >= 2 && t[0] == '#' && t[1] == '!') {
		size_t e = strcspn(t, "\n");
		bool dtrace = false;

		for (size_t k = 2; k + 6 <= e; k++)
			dtrace |= !strncmp(t + k, "dtrace", 6);
		ps->prog->bpftrace_style = !dtrace;
		blank(t, 0, e);
	}
	while (i < len) {
		size_t eol = i + strcspn(t + i, "\n"), j = i;
		bool active = !depth || stack[depth - 1].active;

		while (j < eol && (t[j] == ' ' || t[j] == '\t'))
			j++;
		if (!comment && j < eol && t[j] == '#') {
			char word[16] = "", arg[64] = "";

			sscanf(t + j + 1, " %15[a-z] %63[A-Za-z0-9_]", word, arg);
			if (!strcmp(word, "ifdef") || !strcmp(word, "ifndef") ||
			    !strcmp(word, "if")) {
				bool def = false;

				for (size_t k = 0; k < ndefined; k++)
					def |= !strcmp(defined[k], arg);
				if (depth == HWT_ARRAY_SIZE(stack))
					return fail(ps, j, -HWT_EPARSE, "#if nested too deeply");
				stack[depth].active =
				    active && (!strcmp(word, "ifdef")	 ? def
					       : !strcmp(word, "ifndef") ? !def
									 : !strcmp(arg, "1"));
				stack[depth].taken = stack[depth].active;
				depth++;
			} else if (!strcmp(word, "else") || !strcmp(word, "elif")) {
				bool outer = depth < 2 || stack[depth - 2].active;

				if (!depth)
					return fail(ps, j, -HWT_EPARSE, "#%s without #if", word);
				stack[depth - 1].active =
				    outer && !stack[depth - 1].taken && !strcmp(word, "else");
				stack[depth - 1].taken |= stack[depth - 1].active;
			} else if (!strcmp(word, "endif")) {
				if (!depth)
					return fail(ps, j, -HWT_EPARSE, "#endif without #if");
				depth--;
			} else if (!strcmp(word, "define") && active && arg[0] &&
				   ndefined < HWT_ARRAY_SIZE(defined)) {
				snprintf(defined[ndefined++], sizeof(defined[0]), "%s", arg);
			} else if (strcmp(word, "include") && strcmp(word, "define") &&
				   strcmp(word, "undef") && strcmp(word, "pragma")) {
				return fail(
				    ps, j, -HWT_EPARSE,
				    "unknown preprocessor line '#%s': hwtrace knows #include, "
				    "#define, #if[n]def, #else, #endif",
				    word);
			}
			blank(t, i, eol);
		} else if (!active) {
			blank(t, i, eol);
		} else {
			/* follow block comments, so a '#' inside one is text */
			for (size_t k = i; k + 1 < eol; k++) {
				if (!comment && t[k] == '/' && t[k + 1] == '/')
					break;
				if (!comment && t[k] == '/' && t[k + 1] == '*') {
					comment = true;
					k++;
				} else if (comment && t[k] == '*' && t[k + 1] == '/') {
					comment = false;
					k++;
				}
			}
		}
		i = eol + 1;
	}
	if (depth)
		return fail(ps, len, -HWT_EPARSE, "#if without #endif");
	return 0;
}

/* struct NAME { ... }; at the top level: a declaration, for the headers a
 * script would include (hwtrace takes types from BTF). */
static int skip_struct(struct parser *ps)
{
	const char *t = ps->text + ps->pos;
	size_t i = 0, d = 0;

	if (strncmp(t, "struct", 6) || !isspace((unsigned char)t[6]))
		return 0;
	i = 6;
	while (ps->pos + i < ps->len && t[i] != '{' && t[i] != ';' && t[i] != '(')
		i++;
	if (ps->pos + i >= ps->len || t[i] != '{')
		return 0;
	for (; ps->pos + i < ps->len; i++) {
		if (t[i] == '{')
			d++;
		else if (t[i] == '}' && !--d)
			break;
	}
	if (ps->pos + i >= ps->len)
		return fail(ps, ps->pos, -HWT_EPARSE, "struct definition not closed");
	i++;
	while (ps->pos + i < ps->len && isspace((unsigned char)t[i]))
		i++;
	if (ps->pos + i < ps->len && t[i] == ';')
		i++;
	ps->pos += i;
	return 1;
}

int prb_parse(struct hwt_probe_prog *prog, struct hwt_probe_diag *diag)
{
	struct parser ps;
	char *text;
	int err = 0;

	memset(&ps, 0, sizeof(ps));
	ps.prog = prog;
	ps.diag = diag;
	ps.len = prog->len;
	if (!(text = strdup(prog->text)))
		return -ENOMEM;
	ps.text = prog->text; /* for messages */
	prog->bpftrace_style = prog->cfg.bpftrace_style;
	if ((err = preprocess(&ps, text)) < 0) {
		free(text);
		return err;
	}
	ps.text = text;
	for (;;) {
		if ((err = skip_space(&ps)) < 0)
			break;
		if ((err = skip_struct(&ps)) < 0)
			break;
		if (err > 0)
			continue;
		if (ps.pos >= ps.len) {
			if (!prog->nclauses)
				err = fail(&ps, ps.pos, -HWT_EPARSE,
					   "empty program: write PROBE { ACTIONS }, as in "
					   "'profile:hz:99 { @[func] = count() }'");
			break;
		}
		if ((err = parse_clause(&ps)) < 0)
			break;
		/* ps.tok is the closing '}': the raw probe lexer goes on
		 * from ps.pos, which is just past it. */
	}
	tok_clear(&ps.tok);
	free(text);
	return err;
}

size_t prb_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[129];

	if (la > 128 || lb > 128)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t prev = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cur = row[j];
			size_t sub = prev + (a[i - 1] != b[j - 1]);
			size_t del = row[j] + 1, ins = row[j - 1] + 1;

			row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
			prev = cur;
		}
	}
	return row[lb];
}
