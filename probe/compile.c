/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/compile.c - from the AST to what runs: probe descriptions are
 * split into their parts (provider, object, function, offset, tracepoint,
 * rate) and checked, expressions are typed (integers, strings, stacks),
 * each builtin is checked against the probes of its clause (retval only
 * at returns, args->FIELD only where every probe of the clause has the
 * field), aggregations get one function and one key signature, printf
 * formats are split and matched to their arguments, and every clause is
 * emitted as a run of stack-machine byte code (struct prb_insn) that the
 * runtime interprets without allocating.
 */
#include "probe/probe_int.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmc/pmc.h"
#include "probe/compile_int.h"

int cfail(struct hwt_probe_prog *prog, struct hwt_probe_diag *diag, size_t pos, int err,
	  const char *fmt, ...)
{
	char msg[sizeof(diag->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (diag)
		hwt_probe_diag_at(diag, prog->text, pos, "%s", msg);
	return err;
}

/* ------------------------------------------------------------------------ */
/* Probe descriptions                                                        */

static int parse_num(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || !isdigit((unsigned char)*s))
		return -HWT_EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || *end)
		return -HWT_EINVAL;
	return 0;
}

/* Splits "FUNC+OFF" (the last '+' followed by a number). */
static int split_offset(char *func, uint64_t *off, bool *has)
{
	char *plus = strrchr(func, '+');

	*has = false;
	*off = 0;
	if (!plus)
		return 0;
	if (parse_num(plus + 1, off) < 0)
		return -HWT_EINVAL;
	*plus = '\0';
	*has = true;
	return 0;
}

static const char provider_list[] =
    "BEGIN, END, uprobe:PATH:FUNC[+OFF], uretprobe:PATH:FUNC, kprobe:FUNC[+OFF], "
    "kretprobe:FUNC, SUBSYS:EVENT (tracepoint), profile:hz:N, interval:s:N, "
    "software:EVENT[:N], hardware:EVENT[:N], pt:OBJ:FUNC:entry|return, pt:OBJ:FUNC+OFF";

static int set_str(char **dst, const char *s, size_t n)
{
	*dst = malloc(n + 1);
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, s, n);
	(*dst)[n] = '\0';
	return 0;
}

static int load_tracepoint(struct hwt_probe_prog *prog, struct prb_probe *p, size_t pos,
			   struct hwt_probe_diag *diag)
{
	int err = prb_tp_format_load(prog->cfg.tracefs_root, p->subsys, p->event, &p->tp);

	if (err == -ENOENT) {
		struct hwt_pmc_config pc;
		char name[512], sugg[512] = "";

		hwt_pmc_config_init(&pc);
		pc.tracefs_root = prog->cfg.tracefs_root;
		pc.sysfs_root = prog->cfg.sysfs_root;
		pc.psys = prog->cfg.psys;
		snprintf(name, sizeof(name), "%s:%s", p->subsys, p->event);
		if (hwt_pmc_suggest(&pc, name, sugg, sizeof(sugg), 3) > 0)
			return cfail(
			    prog, diag, pos, -HWT_ENOEVENT,
			    "unknown tracepoint '%s'; did you mean: %s? (see 'hwtrace list "
			    "tracepoint')",
			    name, sugg);
		return cfail(
		    prog, diag, pos, -HWT_ENOEVENT,
		    "unknown probe '%s': no such tracepoint, and the known providers are %s", name,
		    provider_list);
	}
	if (err == -HWT_ENOTSUP)
		return cfail(prog, diag, pos, err,
			     "tracepoint '%s:%s' needs tracefs, which is not mounted: mount it "
			     "(mount -t tracefs nodev /sys/kernel/tracing)",
			     p->subsys, p->event);
	if (err == -EACCES || err == -EPERM)
		return cfail(prog, diag, pos, err,
			     "cannot read the format of tracepoint '%s:%s' in tracefs: %s; run as "
			     "root or make tracefs readable",
			     p->subsys, p->event, strerror(-err));
	if (err < 0)
		return cfail(prog, diag, pos, err,
			     "cannot read the format of tracepoint '%s:%s': %s", p->subsys,
			     p->event, hwt_strerror(err));
	return 0;
}

/* One event that a hybrid CPU counts once per core PMU (cpu_core/cycles/,
 * cpu_atom/cycles/): still one probe. */
static bool hybrid_copies(const struct hwt_pmc_evlist *list)
{
	const struct hwt_pmc_event *first = hwt_pmc_evlist_event(list, 0);

	for (size_t i = 0; i < hwt_pmc_evlist_count(list); i++) {
		const struct hwt_pmc_event *ev = hwt_pmc_evlist_event(list, i);

		if (!ev->pmu[0] || ev->source != first->source || ev->nr_members != 1 ||
		    (ev->attr.config & 0xffffffffull) != (first->attr.config & 0xffffffffull))
			return false;
	}
	return true;
}

/* software:/hardware: events: the name must be one pmc/ knows, of the
 * right type. */
static int check_pmc_event(struct hwt_probe_prog *prog, struct prb_probe *p, size_t pos,
			   struct hwt_probe_diag *diag)
{
	struct hwt_pmc_config pc;
	struct hwt_pmc_evlist *list = NULL;
	const struct hwt_pmc_event *ev;
	int err;

	hwt_pmc_config_init(&pc);
	pc.tracefs_root = prog->cfg.tracefs_root;
	pc.sysfs_root = prog->cfg.sysfs_root;
	pc.psys = prog->cfg.psys;
	if ((err = hwt_pmc_evlist_alloc(&list, &pc)) < 0)
		return cfail(prog, diag, pos, err, "%s", hwt_strerror(err));
	err = hwt_pmc_evlist_add(list, p->event);
	if (err < 0) {
		err = cfail(prog, diag, pos, err == -ENOMEM ? err : -HWT_ENOEVENT, "%s",
			    hwt_pmc_evlist_errmsg(list));
		goto out;
	}
	if (err != 1 && !hybrid_copies(list)) {
		err = cfail(prog, diag, pos, -HWT_EINVAL, "'%s' names %d events; a probe takes one",
			    p->event, err);
		goto out;
	}
	ev = hwt_pmc_evlist_event(list, 0);
	if (ev->attr.type == PERF_TYPE_TRACEPOINT) {
		err = cfail(prog, diag, pos, -HWT_EINVAL,
			    "'%s' is a tracepoint: write it as a probe of its own, '%s'", p->event,
			    p->event);
		goto out;
	}
	if (p->info.kind == HWT_PROBE_SOFTWARE && ev->attr.type != PERF_TYPE_SOFTWARE) {
		err =
		    cfail(prog, diag, pos, -HWT_EINVAL,
			  "'%s' is not a software event: write hardware:%s (see 'hwtrace list sw')",
			  p->event, p->event);
		goto out;
	}
	if (p->info.kind == HWT_PROBE_HARDWARE && ev->attr.type == PERF_TYPE_SOFTWARE) {
		err = cfail(prog, diag, pos, -HWT_EINVAL,
			    "'%s' is a software event: write software:%s", p->event, p->event);
		goto out;
	}
	if (!p->info.period) {
		/* Every event, except for clocks (ns) and hardware events,
		 * where every event would be a flood. */
		bool clock = ev->attr.type == PERF_TYPE_SOFTWARE &&
			     (ev->attr.config == PERF_COUNT_SW_CPU_CLOCK ||
			      ev->attr.config == PERF_COUNT_SW_TASK_CLOCK);

		p->info.period = p->info.kind == HWT_PROBE_HARDWARE ? 1000000 : clock ? 1000000 : 1;
	}
	err = 0;
out:
	hwt_pmc_evlist_free(list);
	return err;
}

int prb_probe_spec(struct hwt_probe_prog *prog, struct prb_probe *p, const char *spec, size_t pos,
		   struct hwt_probe_diag *diag)
{
	struct hwt_probe_info *in = &p->info;
	char *parts[5] = {0};
	size_t nparts = 0;
	char *buf = NULL, *prov;
	bool has_off = false;
	int err = -ENOMEM;

	p->pos = pos;
	if (!(p->text = strdup(spec)) || !(buf = strdup(spec)))
		goto nomem;
	/* Split on ':' into at most 5 parts; the object of path providers
	 * is one part, and a C++ FUNC keeps its "::". */
	{
		char *s = buf;
		size_t plen = strcspn(s, ":");
		bool path = false;

		prov = s;
		if (s[plen]) {
			s[plen] = '\0';
			s += plen + 1;
			path = !strcmp(prov, "uprobe") || !strcmp(prov, "u") ||
			       !strcmp(prov, "uretprobe") || !strcmp(prov, "ur") ||
			       !strcmp(prov, "pt");
			parts[nparts++] = prov;
			if (path) {
				char *c = strchr(s, ':');

				parts[nparts++] = s;
				if (c) {
					*c = '\0';
					parts[nparts++] = c + 1;
					/* pt:OBJ:FUNC:entry -> the last ":entry"/":return" */
					if (!strcmp(prov, "pt")) {
						char *last = strrchr(c + 1, ':');

						if (last && (!strcmp(last + 1, "entry") ||
							     !strcmp(last + 1, "return"))) {
							*last = '\0';
							parts[nparts++] = last + 1;
						}
					}
				}
			} else {
				while (s && nparts < HWT_ARRAY_SIZE(parts)) {
					char *c = strchr(s, ':');

					parts[nparts++] = s;
					if (c)
						*c = '\0';
					s = c ? c + 1 : NULL;
				}
				if (s)
					nparts++; /* too many: reported below */
			}
		} else {
			parts[nparts++] = prov;
		}
	}
	in->text = p->text;
	in->line = 0;
	{
		struct hwt_probe_diag tmp;

		hwt_probe_diag_at(&tmp, prog->text, pos, " ");
		in->line = tmp.line;
		in->column = tmp.column;
	}

	if (nparts == 1) {
		if (!strcmp(prov, "BEGIN"))
			in->kind = HWT_PROBE_BEGIN;
		else if (!strcmp(prov, "END"))
			in->kind = HWT_PROBE_END;
		else
			goto unknown;
		err = 0;
		goto out;
	}
	if (!strcmp(prov, "uprobe") || !strcmp(prov, "u") || !strcmp(prov, "uretprobe") ||
	    !strcmp(prov, "ur")) {
		bool ret = !strcmp(prov, "uretprobe") || !strcmp(prov, "ur");

		in->kind = ret ? HWT_PROBE_URETPROBE : HWT_PROBE_UPROBE;
		if (nparts != 3 || !*parts[1] || !*parts[2]) {
			err = cfail(prog, diag, pos, -HWT_EPARSE,
				    "'%s' wants %s:PATH:FUNC%s, as in %s:/bin/bash:readline", spec,
				    prov, ret ? "" : "[+OFFSET]", prov);
			goto out;
		}
		if (split_offset(parts[2], &in->offset, &has_off) < 0) {
			err = cfail(
			    prog, diag, pos, -HWT_EPARSE,
			    "bad offset in '%s': write FUNC+OFFSET with a decimal or 0x number",
			    spec);
			goto out;
		}
		if (ret && has_off) {
			err = cfail(prog, diag, pos, -HWT_EPARSE,
				    "'%s': a return probe fires when FUNC returns, so it takes no "
				    "+OFFSET",
				    spec);
			goto out;
		}
		if ((err = set_str(&p->object, parts[1], strlen(parts[1]))) < 0 ||
		    (err = set_str(&p->func, parts[2], strlen(parts[2]))) < 0)
			goto nomem;
	} else if (!strcmp(prov, "kprobe") || !strcmp(prov, "k") || !strcmp(prov, "kretprobe") ||
		   !strcmp(prov, "kr")) {
		bool ret = !strcmp(prov, "kretprobe") || !strcmp(prov, "kr");

		in->kind = ret ? HWT_PROBE_KRETPROBE : HWT_PROBE_KPROBE;
		if (nparts != 2 || !*parts[1]) {
			err = cfail(prog, diag, pos, -HWT_EPARSE,
				    "'%s' wants %s:FUNC%s, as in %s:do_sys_openat2", spec, prov,
				    ret ? "" : "[+OFFSET]", prov);
			goto out;
		}
		if (split_offset(parts[1], &in->offset, &has_off) < 0 || (ret && has_off)) {
			err = cfail(prog, diag, pos, -HWT_EPARSE,
				    ret ? "'%s': a return probe takes no +OFFSET"
					: "bad offset in '%s': write FUNC+OFFSET with a number",
				    spec);
			goto out;
		}
		if ((err = set_str(&p->func, parts[1], strlen(parts[1]))) < 0)
			goto nomem;
	} else if (!strcmp(prov, "profile") || !strcmp(prov, "interval")) {
		const char *unit = nparts == 2 ? "hz" : parts[1];
		const char *num = nparts == 2 ? parts[1] : parts[2];
		uint64_t v;

		in->kind = !strcmp(prov, "profile") ? HWT_PROBE_PROFILE : HWT_PROBE_INTERVAL;
		if ((nparts != 2 && nparts != 3) || parse_num(num, &v) < 0 || !v) {
			err = cfail(prog, diag, pos, -HWT_EPARSE,
				    "'%s' wants profile:hz:N (N samples a second per CPU), or "
				    "profile:ms:N / us:N / s:N",
				    spec);
			goto out;
		}
		if (!strcmp(unit, "hz")) {
			if (v > 100000) {
				err =
				    cfail(prog, diag, pos, -HWT_EINVAL,
					  "'%s': at most 100000 Hz (the kernel caps sampling rates "
					  "through perf_event_max_sample_rate)",
					  spec);
				goto out;
			}
			in->freq = true;
			in->period = v;
			if (in->kind == HWT_PROBE_INTERVAL) {
				/* interval:hz:N is every 1/N s */
				in->freq = false;
				in->period = 1000000000ull / v;
			}
		} else if (!strcmp(unit, "s") || !strcmp(unit, "ms") || !strcmp(unit, "us")) {
			uint64_t mul = unit[0] == 's'	? 1000000000ull
				       : unit[0] == 'm' ? 1000000ull
							: 1000ull;

			if (v > UINT64_MAX / mul || v * mul < 10000) {
				err = cfail(prog, diag, pos, -HWT_EINVAL,
					    "'%s': the period must be from 10 us up", spec);
				goto out;
			}
			in->period = v * mul;
		} else {
			err = cfail(prog, diag, pos, -HWT_EPARSE,
				    "'%s': unknown unit '%s' (hz, s, ms or us)", spec, unit);
			goto out;
		}
	} else if (!strcmp(prov, "software") || !strcmp(prov, "s") || !strcmp(prov, "hardware") ||
		   !strcmp(prov, "h")) {
		in->kind = prov[0] == 's' ? HWT_PROBE_SOFTWARE : HWT_PROBE_HARDWARE;
		if ((nparts != 2 && nparts != 3) || !*parts[1]) {
			err =
			    cfail(prog, diag, pos, -HWT_EPARSE,
				  "'%s' wants %s:EVENT[:PERIOD], as in %s:%s:100", spec, prov, prov,
				  in->kind == HWT_PROBE_SOFTWARE ? "page-faults" : "cache-misses");
			goto out;
		}
		if (nparts == 3 && (parse_num(parts[2], &in->period) < 0 || !in->period)) {
			err =
			    cfail(prog, diag, pos, -HWT_EPARSE,
				  "'%s': the period (every how many events a hit) must be a number "
				  "from 1 up",
				  spec);
			goto out;
		}
		if ((err = set_str(&p->event, parts[1], strlen(parts[1]))) < 0)
			goto nomem;
		in->event = p->event;
		if ((err = check_pmc_event(prog, p, pos, diag)) < 0)
			goto out;
	} else if (!strcmp(prov, "pt")) {
		prog->has_pt = true;
		if (nparts == 4 && !strcmp(parts[3], "entry"))
			in->kind = HWT_PROBE_PT_ENTRY;
		else if (nparts == 4 && !strcmp(parts[3], "return"))
			in->kind = HWT_PROBE_PT_RETURN;
		else if (nparts == 3)
			in->kind = HWT_PROBE_PT_INSN;
		else {
			err = cfail(
			    prog, diag, pos, -HWT_EPARSE,
			    "'%s' wants pt:OBJ:FUNC:entry, pt:OBJ:FUNC:return or pt:OBJ:FUNC+OFF",
			    spec);
			goto out;
		}
		if (!*parts[1] || !*parts[2] || split_offset(parts[2], &in->offset, &has_off) < 0 ||
		    !*parts[2]) {
			err = cfail(
			    prog, diag, pos, -HWT_EPARSE,
			    "'%s' wants pt:OBJ:FUNC:entry, pt:OBJ:FUNC:return or pt:OBJ:FUNC+OFF",
			    spec);
			goto out;
		}
		if (in->kind == HWT_PROBE_PT_INSN && !has_off) {
			err = cfail(
			    prog, diag, pos, -HWT_EPARSE,
			    "'%s': say which probe: pt:%s:%s:entry, :return, or +OFFSET for one "
			    "instruction",
			    spec, parts[1], parts[2]);
			goto out;
		}
		if (in->kind != HWT_PROBE_PT_INSN && has_off) {
			err = cfail(prog, diag, pos, -HWT_EPARSE,
				    "'%s': FUNC+OFF is an instruction probe: drop ':%s'", spec,
				    parts[3]);
			goto out;
		}
		if ((err = set_str(&p->object, parts[1], strlen(parts[1]))) < 0 ||
		    (err = set_str(&p->func, parts[2], strlen(parts[2]))) < 0)
			goto nomem;
	} else if ((!strcmp(prov, "tracepoint") || !strcmp(prov, "t")) && nparts == 3) {
		in->kind = HWT_PROBE_TRACEPOINT;
		if ((err = set_str(&p->subsys, parts[1], strlen(parts[1]))) < 0 ||
		    (err = set_str(&p->event, parts[2], strlen(parts[2]))) < 0)
			goto nomem;
	} else if (nparts == 2 && *parts[0] && *parts[1]) {
		in->kind = HWT_PROBE_TRACEPOINT;
		if ((err = set_str(&p->subsys, parts[0], strlen(parts[0]))) < 0 ||
		    (err = set_str(&p->event, parts[1], strlen(parts[1]))) < 0)
			goto nomem;
	} else {
		goto unknown;
	}
	if (in->kind == HWT_PROBE_TRACEPOINT) {
		in->subsys = p->subsys;
		in->event = p->event;
		if ((err = load_tracepoint(prog, p, pos, diag)) < 0)
			goto out;
	}
	in->object = p->object;
	in->func = p->func;
	err = 0;
	goto out;
unknown:
	err = cfail(prog, diag, pos, -HWT_ENOEVENT, "unknown probe '%s'; probes are: %s", spec,
		    provider_list);
	goto out;
nomem:
	err = cfail(prog, diag, pos, -ENOMEM, "out of memory");
out:
	free(buf);
	return err;
}

/* ------------------------------------------------------------------------ */
/* Types                                                                     */

const char *prb_type_name(int t)
{
	switch (t) {
	case PRB_T_INT:
		return "an integer";
	case PRB_T_STR:
		return "a string";
	case PRB_T_STACK:
		return "a stack";
	case PRB_T_PTR:
		return "a pointer";
	case PRB_T_LVAL:
		return "a struct or array in memory";
	}
	return "of unknown type";
}

static const char *builtin_name(int64_t b)
{
	static const char *const names[PRB_B_COUNT_] = {
	    [PRB_B_PID] = "pid",	 [PRB_B_TID] = "tid",	      [PRB_B_CPU] = "cpu",
	    [PRB_B_NSECS] = "nsecs",	 [PRB_B_ELAPSED] = "elapsed", [PRB_B_COMM] = "comm",
	    [PRB_B_FUNC] = "func",	 [PRB_B_PROBE] = "probe",     [PRB_B_USTACK] = "ustack",
	    [PRB_B_KSTACK] = "kstack",	 [PRB_B_ARG0] = "arg0",	      [PRB_B_ARG0 + 1] = "arg1",
	    [PRB_B_ARG0 + 2] = "arg2",	 [PRB_B_ARG0 + 3] = "arg3",   [PRB_B_ARG0 + 4] = "arg4",
	    [PRB_B_ARG0 + 5] = "arg5",	 [PRB_B_RETVAL] = "retval",   [PRB_B_TARGET] = "$target",
	    [PRB_B_IP] = "ip",		 [PRB_B_UID] = "uid",	      [PRB_B_GID] = "gid",
	    [PRB_B_CURTASK] = "curtask",
	};

	return b >= 0 && b < PRB_B_COUNT_ && names[b] ? names[b] : "?";
}

static int builtin_type(int64_t b)
{
	switch (b) {
	case PRB_B_COMM:
	case PRB_B_FUNC:
	case PRB_B_PROBE:
		return PRB_T_STR;
	case PRB_B_USTACK:
	case PRB_B_KSTACK:
		return PRB_T_STACK;
	}
	return PRB_T_INT; /* curtask: a pointer, an integer to operators */
}

static int field_type(const struct prb_tp_field *f)
{
	return f->is_string || f->data_loc ? PRB_T_STR : PRB_T_INT;
}

/* The type of a node without complaining (PRB_T_NONE when it depends on
 * a variable not typed yet); used to type variables from assignments. */
static int infer(struct hwt_probe_prog *prog, const struct prb_clause *cl, const struct prb_node *n)
{
	switch (n->kind) {
	case PRB_N_INT:
	case PRB_N_UNARY:
	case PRB_N_BINARY:
		return PRB_T_INT;
	case PRB_N_STR:
		return PRB_T_STR;
	case PRB_N_BUILTIN:
		return builtin_type(n->v);
	case PRB_N_FIELD:
		for (size_t i = 0; i < cl->nprobes; i++) {
			const struct prb_probe *p = &prog->probes[cl->probes[i]];
			const struct prb_tp_field *f;

			if (p->tp && (f = prb_tp_format_field(p->tp, prog->fields[n->v])))
				return field_type(f);
		}
		return PRB_T_NONE;
	case PRB_N_SELF:
		return prog->self_vars[n->v].type;
	case PRB_N_THIS:
		return prog->this_vars[n->v].type;
	case PRB_N_TERNARY: {
		int t = infer(prog, cl, n->b);

		return t ? t : infer(prog, cl, n->c);
	}
	}
	{
		struct prb_ty ty;

		return prb_infer_bt(prog, cl, n, &ty);
	}
}

/* The full type of a value an assignment stores (for variables and maps). */
int prb_infer_ty(struct hwt_probe_prog *prog, const struct prb_clause *cl, const struct prb_node *n,
		 struct prb_ty *ty)
{
	int t;

	memset(ty, 0, sizeof(*ty));
	switch (n->kind) {
	case PRB_N_SELF:
	case PRB_N_THIS: {
		const struct prb_var *v =
		    n->kind == PRB_N_SELF ? &prog->self_vars[n->v] : &prog->this_vars[n->v];

		*ty = v->ty;
		return v->type;
	}
	case PRB_N_FIELD:
		for (size_t i = 0; i < cl->nprobes; i++) {
			const struct prb_probe *p = &prog->probes[cl->probes[i]];
			const struct prb_tp_field *f;

			if (p->tp && (f = prb_tp_format_field(p->tp, prog->fields[n->v]))) {
				prb_field_ty(prog, f, ty);
				return field_type(f);
			}
		}
		return PRB_T_NONE;
	case PRB_N_TERNARY:
		if ((t = prb_infer_ty(prog, cl, n->b, ty)))
			return t;
		return prb_infer_ty(prog, cl, n->c, ty);
	case PRB_N_IDENT:
	case PRB_N_MAPREF:
	case PRB_N_CAST:
	case PRB_N_DEREF:
	case PRB_N_MEMBER:
	case PRB_N_FCALL:
	case PRB_N_BUILTIN:
		if ((t = prb_infer_bt(prog, cl, n, ty)) != PRB_T_NONE)
			return t;
		break;
	}
	if ((t = infer(prog, cl, n)) != PRB_T_NONE) {
		ty->t = (uint8_t)t;
		ty->bits = 64;
		ty->sgn = true;
	}
	return t;
}

static const char *kind_name(enum hwt_probe_kind k)
{
	switch (k) {
	case HWT_PROBE_BEGIN:
		return "BEGIN";
	case HWT_PROBE_END:
		return "END";
	case HWT_PROBE_UPROBE:
		return "a uprobe";
	case HWT_PROBE_URETPROBE:
		return "a uretprobe";
	case HWT_PROBE_KPROBE:
		return "a kprobe";
	case HWT_PROBE_KRETPROBE:
		return "a kretprobe";
	case HWT_PROBE_TRACEPOINT:
		return "a tracepoint";
	case HWT_PROBE_PROFILE:
		return "a profile probe";
	case HWT_PROBE_SOFTWARE:
		return "a software event";
	case HWT_PROBE_HARDWARE:
		return "a hardware event";
	case HWT_PROBE_PT_ENTRY:
		return "a PT entry probe";
	case HWT_PROBE_PT_RETURN:
		return "a PT return probe";
	case HWT_PROBE_PT_INSN:
		return "a PT instruction probe";
	case HWT_PROBE_INTERVAL:
		return "an interval probe";
	}
	return "a probe";
}

/* Checks that every probe of the clause can give builtin b. */
static int check_builtin(struct comp *c, const struct prb_node *n)
{
	const struct hwt_probe_prog *prog = c->prog;

	for (size_t i = 0; i < c->cl->nprobes; i++) {
		const struct prb_probe *p = &prog->probes[c->cl->probes[i]];
		enum hwt_probe_kind k = p->info.kind;
		bool pt =
		    k == HWT_PROBE_PT_ENTRY || k == HWT_PROBE_PT_RETURN || k == HWT_PROBE_PT_INSN;
		bool ok = true;
		const char *why = "";

		if (n->v >= PRB_B_ARG0 && n->v < PRB_B_ARG0 + 6) {
			ok = k == HWT_PROBE_UPROBE || k == HWT_PROBE_KPROBE;
			why = pt ? ": PT records control flow, not registers"
			      : k == HWT_PROBE_TRACEPOINT
				  ? ": a tracepoint's data are its fields, args->NAME"
				  : ": arguments are in registers at a function's entry (uprobe, "
				    "kprobe)";
		} else if (n->v == PRB_B_RETVAL) {
			ok = k == HWT_PROBE_URETPROBE || k == HWT_PROBE_KRETPROBE;
			why = pt ? ": PT records control flow, not registers"
				 : ": a return value exists at a function's return (uretprobe, "
				   "kretprobe)";
		}
		if (!ok) {
			FAIL(c, n->pos, -HWT_EINVAL, "'%s' is not available at %s (%s)%s",
			     builtin_name(n->v), kind_name(k), p->text, why);
			return c->err;
		}
	}
	if (n->v >= PRB_B_ARG0 && n->v <= PRB_B_RETVAL) {
		c->cl->uses |= PRB_USE_REGS;
		c->cl->regs |= 1u << (n->v - PRB_B_ARG0);
	}
	if (n->v == PRB_B_USTACK)
		c->cl->uses |= PRB_USE_USTACK;
	if (n->v == PRB_B_KSTACK)
		c->cl->uses |= PRB_USE_KSTACK;
	if (n->v == PRB_B_FUNC)
		c->cl->uses |= PRB_USE_FUNC;
	if (n->v == PRB_B_UID || n->v == PRB_B_GID)
		prb_needs_bpf(c, n->pos, "uid and gid are the task's at the hit");
	if (n->v == PRB_B_CURTASK)
		prb_needs_bpf(c, n->pos, "curtask is the kernel's task at the hit");
	return 0;
}

static int check_field(struct comp *c, const struct prb_node *n, int *type)
{
	struct hwt_probe_prog *prog = c->prog;
	const char *name = prog->fields[n->v];

	*type = PRB_T_NONE;
	for (size_t i = 0; i < c->cl->nprobes; i++) {
		struct prb_probe *p = &prog->probes[c->cl->probes[i]];
		const struct prb_tp_field *f;

		if (!p->tp) {
			FAIL(c, n->pos, -HWT_EINVAL,
			     "'args->%s' needs a tracepoint, and %s is %s; use arg0..arg5 at "
			     "uprobes and "
			     "kprobes",
			     name, p->text, kind_name(p->info.kind));
			return c->err;
		}
		if (!(f = prb_tp_format_field(p->tp, name))) {
			char list[512] = "";
			size_t used = 0;

			for (size_t k = 0; k < p->tp->nfields && used < sizeof(list); k++) {
				if (!strncmp(p->tp->fields[k].name, "common_", 7))
					continue;
				used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
							 used ? ", " : "", p->tp->fields[k].name);
			}
			FAIL(c, n->pos, -HWT_EINVAL,
			     "tracepoint %s has no field '%s'; its fields are: %s", p->text, name,
			     list[0] ? list : "(none)");
			return c->err;
		}
		if (*type && field_type(f) != *type) {
			FAIL(c, n->pos, -HWT_EINVAL,
			     "'args->%s' is a string in one probe of this clause and an integer in "
			     "another: split the clause",
			     name);
			return c->err;
		}
		*type = field_type(f);
		p->field_map[n->v] = (int32_t)(f - p->tp->fields);
	}
	c->cl->uses |= PRB_USE_RAW;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Code                                                                      */

int emit(struct comp *c, uint16_t op, uint16_t a, uint32_t b, int64_t imm, size_t pos)
{
	struct hwt_probe_prog *prog = c->prog;

	if (prog->ncode >= PRB_MAX_CODE) {
		FAIL(c, pos, -HWT_ETOOBIG, "program too large (over %d instructions)",
		     PRB_MAX_CODE);
		return c->err;
	}
	if (prog->ncode == prog->code_cap) {
		size_t cap = prog->code_cap ? prog->code_cap * 2 : 64;
		struct prb_insn *code = realloc(prog->code, cap * sizeof(*code));

		if (!code) {
			FAIL(c, pos, -ENOMEM, "out of memory");
			return c->err;
		}
		prog->code = code;
		prog->code_cap = cap;
	}
	prog->code[prog->ncode] = (struct prb_insn){op, a, b, imm};
	return (int)prog->ncode++;
}

void push(struct comp *c, int n)
{
	c->depth += n;
	if (c->depth > c->max_depth)
		c->max_depth = c->depth;
}

/* Emits code that leaves the node's value on the stack; returns its type
 * (> 0) or an error. */
static int gen_expr0(struct comp *c, struct prb_node *n);

int gen_expr(struct comp *c, struct prb_node *n)
{
	int t;

	memset(&n->ty, 0, sizeof(n->ty));
	t = gen_expr0(c, n);
	if (t > 0 && !n->ty.t) {
		/* a plain value: a 64-bit integer, a string or a stack */
		n->ty.t = (uint8_t)t;
		n->ty.bits = 64;
		n->ty.sgn = true;
	}
	return t;
}

static int gen_expr0(struct comp *c, struct prb_node *n)
{
	struct hwt_probe_prog *prog = c->prog;
	int ta, tb, tc, j1, j2;

	switch (n->kind) {
	case PRB_N_INT:
		if (emit(c, PRB_I_INT, 0, 0, n->v, n->pos) < 0)
			return c->err;
		push(c, 1);
		return n->type = PRB_T_INT;
	case PRB_N_STR:
		if (emit(c, PRB_I_STR, (uint16_t)n->v, 0, 0, n->pos) < 0)
			return c->err;
		push(c, 1);
		return n->type = PRB_T_STR;
	case PRB_N_BUILTIN:
		if (check_builtin(c, n) < 0 ||
		    emit(c, PRB_I_BUILTIN, (uint16_t)n->v, 0, 0, n->pos) < 0)
			return c->err;
		push(c, 1);
		return n->type = (uint8_t)builtin_type(n->v);
	case PRB_N_FIELD: {
		int t;

		if (check_field(c, n, &t) < 0 ||
		    emit(c, PRB_I_FIELD, (uint16_t)n->v, 0, 0, n->pos) < 0)
			return c->err;
		push(c, 1);
		/* the first probe's field gives the full type (a pointer's) */
		for (size_t i = 0; i < c->cl->nprobes; i++) {
			const struct prb_probe *p = &prog->probes[c->cl->probes[i]];

			if (p->tp && p->field_map && p->field_map[n->v] >= 0) {
				prb_field_ty(prog, &p->tp->fields[p->field_map[n->v]], &n->ty);
				break;
			}
		}
		return n->type = (uint8_t)t;
	}
	case PRB_N_SELF:
	case PRB_N_THIS: {
		struct prb_var *v =
		    n->kind == PRB_N_SELF ? &prog->self_vars[n->v] : &prog->this_vars[n->v];

		if (!v->assigned && v->name[0] == '$') {
			FAIL(c, n->pos, -HWT_EINVAL,
			     "unknown variable '%s': nothing in this clause assigns it (as in %s = "
			     "1)%s",
			     v->name, v->name,
			     !strcmp(v->name, "$pid") ? "; the builtin is pid" : "");
			return c->err;
		}
		if (!v->assigned) {
			FAIL(c, n->pos, -HWT_EINVAL,
			     "unknown variable '%s->%s': no clause assigns it (as in %s->%s = "
			     "nsecs)",
			     n->kind == PRB_N_SELF ? "self" : "this", v->name,
			     n->kind == PRB_N_SELF ? "self" : "this", v->name);
			return c->err;
		}
		if (emit(c, n->kind == PRB_N_SELF ? PRB_I_SELF : PRB_I_THIS, (uint16_t)n->v, 0, 0,
			 n->pos) < 0)
			return c->err;
		push(c, 1);
		n->ty = v->ty;
		return n->type = v->type;
	}
	case PRB_N_UNARY:
		if ((ta = gen_expr(c, n->a)) < 0)
			return ta;
		if (ta != PRB_T_INT) {
			FAIL(c, n->pos, -HWT_EINVAL, "'%c' wants an integer, and this is %s", n->op,
			     prb_type_name(ta));
			return c->err;
		}
		if (emit(c,
			 n->op == '-'	? PRB_I_NEG
			 : n->op == '!' ? PRB_I_NOT
					: PRB_I_BNOT,
			 0, 0, 0, n->pos) < 0)
			return c->err;
		return n->type = PRB_T_INT;
	case PRB_N_BINARY:
		if (n->op == PRB_OP_LAND || n->op == PRB_OP_LOR) {
			/* a && b: a; JZ f; b; BOOL; JMP e; f: INT 0; e: */
			if ((ta = gen_expr(c, n->a)) < 0)
				return ta;
			if ((j1 = emit(c, n->op == PRB_OP_LAND ? PRB_I_JZ : PRB_I_JNZ, 0, 0, 0,
				       n->pos)) < 0)
				return c->err;
			push(c, -1);
			if ((tb = gen_expr(c, n->b)) < 0)
				return tb;
			if (ta != PRB_T_INT || tb != PRB_T_INT) {
				FAIL(c, (size_t)n->v, -HWT_EINVAL,
				     "'%s' wants integers (conditions)",
				     n->op == PRB_OP_LAND ? "&&" : "||");
				return c->err;
			}
			if (emit(c, PRB_I_BOOL, 0, 0, 0, n->pos) < 0 ||
			    (j2 = emit(c, PRB_I_JMP, 0, 0, 0, n->pos)) < 0)
				return c->err;
			prog->code[j1].b = (uint32_t)prog->ncode;
			if (emit(c, PRB_I_INT, 0, 0, n->op == PRB_OP_LAND ? 0 : 1, n->pos) < 0)
				return c->err;
			prog->code[j2].b = (uint32_t)prog->ncode;
			return n->type = PRB_T_INT;
		}
		if ((ta = gen_expr(c, n->a)) < 0 || (tb = gen_expr(c, n->b)) < 0)
			return c->err;
		if ((n->op == PRB_OP_EQ || n->op == PRB_OP_NE) && ta == tb && ta != PRB_T_STACK) {
			/* strings are interned: equal strings have equal ids */
		} else if (ta != PRB_T_INT || tb != PRB_T_INT) {
			FAIL(c, (size_t)n->v, -HWT_EINVAL,
			     "operands of this operator must be integers%s, and they are %s and %s",
			     n->op == PRB_OP_EQ || n->op == PRB_OP_NE ? " (or two strings)" : "",
			     prb_type_name(ta), prb_type_name(tb));
			return c->err;
		}
		if (emit(c, PRB_I_BIN, n->op, 0, 0, (size_t)n->v) < 0)
			return c->err;
		push(c, -1);
		return n->type = PRB_T_INT;
	case PRB_N_TERNARY:
		if ((ta = gen_expr(c, n->a)) < 0)
			return ta;
		if (ta != PRB_T_INT) {
			FAIL(c, n->a->pos, -HWT_EINVAL,
			     "the condition of ?: must be an integer, not %s", prb_type_name(ta));
			return c->err;
		}
		if ((j1 = emit(c, PRB_I_JZ, 0, 0, 0, n->pos)) < 0)
			return c->err;
		push(c, -1);
		if ((tb = gen_expr(c, n->b)) < 0 || (j2 = emit(c, PRB_I_JMP, 0, 0, 0, n->pos)) < 0)
			return c->err;
		push(c, -1);
		prog->code[j1].b = (uint32_t)prog->ncode;
		if ((tc = gen_expr(c, n->c)) < 0)
			return tc;
		prog->code[j2].b = (uint32_t)prog->ncode;
		if (tb != tc) {
			FAIL(c, n->c->pos, -HWT_EINVAL,
			     "both sides of ?: must have one type: %s and %s", prb_type_name(tb),
			     prb_type_name(tc));
			return c->err;
		}
		return n->type = (uint8_t)tb;
	}
	return prb_gen_bt(c, n);
}

/* A constant integer expression (lquantize bounds). */
static int const_eval(const struct prb_node *n, int64_t *v)
{
	int64_t a, b;

	if (n->kind == PRB_N_INT) {
		*v = n->v;
		return 0;
	}
	if (n->kind == PRB_N_UNARY && n->op == '-' && !const_eval(n->a, &a)) {
		*v = (int64_t)(0 - (uint64_t)a);
		return 0;
	}
	if (n->kind == PRB_N_BINARY && !const_eval(n->a, &a) && !const_eval(n->b, &b)) {
		switch (n->op) {
		case PRB_OP_ADD:
			*v = (int64_t)((uint64_t)a + (uint64_t)b);
			return 0;
		case PRB_OP_SUB:
			*v = (int64_t)((uint64_t)a - (uint64_t)b);
			return 0;
		case PRB_OP_MUL:
			*v = (int64_t)((uint64_t)a * (uint64_t)b);
			return 0;
		}
	}
	return -1;
}

static const struct {
	const char *name;
	enum hwt_rep_func func;
	int nargs; /* values the call takes (lquantize: 4) */
} agg_funcs[] = {
    {"count", HWT_REP_COUNT, 0},
    {"sum", HWT_REP_SUM, 1},
    {"min", HWT_REP_MIN, 1},
    {"max", HWT_REP_MAX, 1},
    {"avg", HWT_REP_AVG, 1},
    {"stddev", HWT_REP_STDDEV, 1},
    {"quantize", HWT_REP_QUANTIZE, 1},
    {"hist", HWT_REP_QUANTIZE, 1},
    {"lquantize", HWT_REP_LQUANTIZE, 4},
    {"lhist", HWT_REP_LQUANTIZE, 4},
    {"stats", HWT_REP_AVG, 1}, /* bpftrace's: count, average, total */
};

static int key_name(struct hwt_probe_prog *prog, const struct prb_node *k, char **out)
{
	size_t s = k->pos, e = k->end;

	while (s < e && isspace((unsigned char)prog->text[s]))
		s++;
	while (e > s && isspace((unsigned char)prog->text[e - 1]))
		e--;
	if (e - s > 48)
		e = s + 48;
	/* "args->count" reads as "count" in a header */
	if (e - s > 6 && !memcmp(prog->text + s, "args->", 6))
		s += 6;
	else if (e - s > 5 && !memcmp(prog->text + s, "args.", 5))
		s += 5;
	*out = malloc(e - s + 1);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, prog->text + s, e - s);
	(*out)[e - s] = '\0';
	return 0;
}

int prb_gen_key(struct comp *c, struct prb_agg *agg, size_t k, struct prb_node *arg)
{
	int t = gen_expr(c, arg);
	uint32_t rt;

	if (t < 0)
		return t;
	if (t == PRB_T_LVAL) {
		FAIL(c, arg->pos, -HWT_EINVAL, "a struct cannot be a key: take one of its members");
		return c->err;
	}
	rt = t == PRB_T_INT ? HWT_REP_INT : t == PRB_T_STR ? HWT_REP_STR : HWT_REP_STACK;
	if (agg->typed && agg->key_types[k] != rt) {
		FAIL(c, arg->pos, -HWT_EINVAL,
		     "key %zu of @%s has another type where @%s is used elsewhere", k + 1,
		     agg->name, agg->name);
		return c->err;
	}
	if (!agg->typed) {
		agg->key_types[k] = rt;
		free(agg->key_names[k]);
		if (key_name(c->prog, arg, &agg->key_names[k]) < 0) {
			FAIL(c, arg->pos, -ENOMEM, "out of memory");
			return c->err;
		}
	}
	return 0;
}

static int gen_agg(struct comp *c, struct prb_node *n)
{
	struct hwt_probe_prog *prog = c->prog;
	struct prb_agg *agg = &prog->aggs[n->v];
	struct prb_node *call = n->a;
	size_t f;
	int64_t lo = 0, hi = 0, step = 0;

	for (f = 0; f < HWT_ARRAY_SIZE(agg_funcs); f++)
		if (!strcmp(agg_funcs[f].name, call->name))
			break;
	if (f == HWT_ARRAY_SIZE(agg_funcs)) {
		FAIL(c, call->pos, -HWT_EINVAL,
		     "unknown aggregating function '%s' (count, sum, min, max, avg, stddev, "
		     "quantize, "
		     "lquantize)",
		     call->name);
		return c->err;
	}
	if ((int)call->nargs != agg_funcs[f].nargs) {
		FAIL(c, call->pos, -HWT_EINVAL, "%s() takes %s", call->name,
		     agg_funcs[f].nargs == 0 ? "no arguments"
		     : agg_funcs[f].nargs == 1
			 ? "one value, as in sum(arg2)"
			 : "a value and low, high, step: lquantize(x, 0, 100, 10)");
		return c->err;
	}
	if (agg_funcs[f].func == HWT_REP_LQUANTIZE) {
		if (const_eval(call->args[1], &lo) < 0 || const_eval(call->args[2], &hi) < 0 ||
		    const_eval(call->args[3], &step) < 0) {
			FAIL(c, call->args[1]->pos, -HWT_EINVAL,
			     "lquantize's low, high and step must be constant integers");
			return c->err;
		}
		if (step <= 0 || hi <= lo || (uint64_t)(hi - lo) % (uint64_t)step ||
		    (uint64_t)(hi - lo) / (uint64_t)step > HWT_REP_LQUANTIZE_MAX_LEVELS) {
			FAIL(c, call->args[1]->pos, -HWT_EINVAL,
			     "lquantize wants low < high, step > 0 dividing high - low, and at "
			     "most %d "
			     "steps",
			     HWT_REP_LQUANTIZE_MAX_LEVELS);
			return c->err;
		}
	}
	if (agg->typed) {
		if (agg->func != agg_funcs[f].func ||
		    (agg->func == HWT_REP_LQUANTIZE &&
		     (agg->low != lo || agg->high != hi || agg->step != step))) {
			FAIL(c, call->pos, -HWT_EINVAL,
			     "@%s is used with two functions; an aggregation keeps one (as first "
			     "used)",
			     agg->name);
			return c->err;
		}
		if (agg->nkeys != n->nargs) {
			FAIL(c, n->pos, -HWT_EINVAL, "@%s is used with %zu keys and with %zu",
			     agg->name, agg->nkeys, n->nargs);
			return c->err;
		}
	}
	for (size_t k = 0; k < n->nargs; k++) {
		int err = prb_gen_key(c, agg, k, n->args[k]);

		if (err < 0)
			return err;
	}
	if (agg_funcs[f].nargs) {
		int t = gen_expr(c, call->args[0]);

		if (t < 0)
			return t;
		if (t != PRB_T_INT) {
			FAIL(c, call->args[0]->pos, -HWT_EINVAL,
			     "%s() wants an integer, and this is %s", call->name, prb_type_name(t));
			return c->err;
		}
	}
	if (!agg->typed) {
		agg->typed = true;
		agg->stats = !strcmp(agg_funcs[f].name, "stats");
		agg->func = agg_funcs[f].func;
		agg->nkeys = n->nargs;
		agg->low = lo;
		agg->high = hi;
		agg->step = step;
	}
	if (emit(c, PRB_I_AGG, (uint16_t)n->v, 0, 0, n->pos) < 0)
		return c->err;
	push(c, -(int)(n->nargs + (agg_funcs[f].nargs ? 1 : 0)));
	return 0;
}

/* printf formats: each conversion is rebuilt as a spec for one int64
 * ("%-8lld") or one string ("%5s"), so no user text reaches printf's
 * argument handling unchecked. */
static int gen_printf(struct comp *c, struct prb_node *n)
{
	struct hwt_probe_prog *prog = c->prog;
	const char *fmt = prog->strs[n->args[0]->v];
	struct prb_fmt f = {0};
	struct prb_fmt *fmts;
	size_t argi = 1;
	const char *p = fmt;

	while (*p) {
		struct prb_fmt_piece piece = {0};
		char spec[64];
		size_t sl = 0;

		if (*p != '%' || p[1] == '%') {
			const char *e = p;
			struct hwt_buf lit;

			hwt_buf_init(&lit);
			while (*e && (*e != '%' || e[1] == '%')) {
				if (hwt_buf_append(&lit, e, 1) < 0)
					goto nomem_lit;
				e += *e == '%' ? 2 : 1;
			}
			if (hwt_buf_append(&lit, "", 1) < 0)
				goto nomem_lit;
			piece.spec = (char *)lit.data;
			p = e;
			goto add;
		nomem_lit:
			hwt_buf_fini(&lit);
			goto nomem;
		}
		/* %[flags][width][.prec][length]conv */
		spec[sl++] = *p++;
		while (*p && strchr("-+ #0", *p) && sl < 20)
			spec[sl++] = *p++;
		while (isdigit((unsigned char)*p) && sl < 30)
			spec[sl++] = *p++;
		if (*p == '.') {
			spec[sl++] = *p++;
			while (isdigit((unsigned char)*p) && sl < 40)
				spec[sl++] = *p++;
		}
		/* lengths: every integer is 64-bit, except in bpftrace's
		 * scripts, where bpftrace formats with C's printf */
		piece.bits = 64;
		if (prog->bpftrace_style && !strchr("hlLqjzt", *p))
			piece.bits = 32;
		else if (prog->bpftrace_style && *p == 'h')
			piece.bits = p[1] == 'h' ? 8 : 16;
		while (*p && strchr("hlLqjzt", *p))
			p++;
		if (!*p || !strchr("diuxXocspr", *p) || sl >= 40) {
			FAIL(c, n->args[0]->pos, -HWT_EINVAL,
			     "printf: bad conversion in \"%s\" (known: %%d %%i %%u %%x %%X %%o %%c "
			     "%%s %%p %%r, "
			     "with flags, width and precision)",
			     fmt);
			goto fail;
		}
		piece.conv = *p == 'i' ? 'd' : *p;
		if (piece.conv == 'p')
			piece.bits = 64;
		if (piece.conv == 's' || piece.conv == 'c' || piece.conv == 'r') {
			spec[sl++] = piece.conv == 'r' ? 's' : piece.conv;
		} else if (piece.conv == 'p') {
			memcpy(spec + sl, "#llx", 4);
			sl += 4;
		} else {
			spec[sl++] = 'l';
			spec[sl++] = 'l';
			spec[sl++] = piece.conv;
		}
		spec[sl] = '\0';
		p++;
		if (argi >= n->nargs) {
			FAIL(c, n->args[0]->pos, -HWT_EINVAL,
			     "printf: the format wants more arguments than the %zu given",
			     n->nargs - 1);
			goto fail;
		}
		{
			int t = gen_expr(c, n->args[argi]);

			if (t < 0)
				goto fail;
			bool str = piece.conv == 's' || piece.conv == 'r';

			/* %s takes strings and stacks (a frame a line) */
			if (str != (t == PRB_T_STR || (t == PRB_T_STACK && piece.conv == 's')) ||
			    t == PRB_T_LVAL) {
				FAIL(c, n->args[argi]->pos, -HWT_EINVAL,
				     "printf: argument %zu is %s, and its conversion %%%c wants %s",
				     argi, prb_type_name(t), piece.conv,
				     str ? "a string" : "an integer");
				goto fail;
			}
			piece.stack = t == PRB_T_STACK;
		}
		argi++;
		if (!(piece.spec = strdup(spec)))
			goto nomem;
	add : {
		struct prb_fmt_piece *np = realloc(f.pieces, (f.npieces + 1) * sizeof(*np));

		if (!np) {
			free(piece.spec);
			goto nomem;
		}
		f.pieces = np;
		f.pieces[f.npieces++] = piece;
	}
	}
	if (argi != n->nargs) {
		FAIL(c, n->args[argi]->pos, -HWT_EINVAL,
		     "printf: %zu arguments, and the format uses %zu", n->nargs - 1, argi - 1);
		goto fail;
	}
	if (n->nargs - 1 > PRB_MAX_PRINTF_ARGS) {
		FAIL(c, n->pos, -HWT_ETOOBIG, "printf takes at most %d arguments",
		     PRB_MAX_PRINTF_ARGS);
		goto fail;
	}
	f.nargs = n->nargs - 1;
	fmts = realloc(prog->fmts, (prog->nfmts + 1) * sizeof(*fmts));
	if (!fmts)
		goto nomem;
	prog->fmts = fmts;
	prog->fmts[prog->nfmts] = f;
	if (emit(c, PRB_I_PRINTF, (uint16_t)prog->nfmts++, (uint32_t)f.nargs, 0, n->pos) < 0)
		return c->err;
	push(c, -(int)f.nargs);
	return 0;
nomem:
	FAIL(c, n->pos, -ENOMEM, "out of memory");
fail:
	for (size_t i = 0; i < f.npieces; i++)
		free(f.pieces[i].spec);
	free(f.pieces);
	return c->err;
}

int gen_stmt(struct comp *c, struct prb_node *n)
{
	struct hwt_probe_prog *prog = c->prog;

	switch (n->kind) {
	case PRB_N_AGG:
		return gen_agg(c, n);
	case PRB_N_ASSIGN: {
		bool self = n->a->kind == PRB_N_SELF;
		struct prb_var *v = self ? &prog->self_vars[n->a->v] : &prog->this_vars[n->a->v];
		int t = gen_expr(c, n->b);

		if (t < 0)
			return t;
		if (t == PRB_T_STACK) {
			FAIL(c, n->b->pos, -HWT_EINVAL,
			     "a stack can only key an aggregation (as in @[ustack] = count())");
			return c->err;
		}
		if (t == PRB_T_LVAL) {
			FAIL(c, n->b->pos, -HWT_EINVAL,
			     "a struct cannot be stored: take one of its members");
			return c->err;
		}
		if (t != v->type) {
			FAIL(c, n->b->pos, -HWT_EINVAL, "%s%s holds %s elsewhere, and this is %s",
			     v->name[0] == '$' ? ""
			     : self	       ? "self->"
					       : "this->",
			     v->name, prb_type_name(v->type), prb_type_name(t));
			return c->err;
		}
		if (emit(c, self ? PRB_I_STORE_SELF : PRB_I_STORE_THIS, (uint16_t)n->a->v, 0, 0,
			 n->pos) < 0)
			return c->err;
		push(c, -1);
		return 0;
	}
	case PRB_N_PRINTF:
		return gen_printf(c, n);
	case PRB_N_EXIT:
		return emit(c, PRB_I_EXIT, 0, 0, 0, n->pos) < 0 ? c->err : 0;
	case PRB_N_CLEAR:
	case PRB_N_PRINT:
		return emit(c, n->kind == PRB_N_CLEAR ? PRB_I_CLEAR : PRB_I_PRINT, (uint16_t)n->v,
			    n->c ? (uint32_t)n->c->v : 0, 0, n->pos) < 0
			   ? c->err
			   : 0;
	}
	return prb_gen_bt(c, n);
}

/* Types variables from their assignments, to a fixed point (a clause may
 * read a variable that a later clause assigns). */
/* Types the variable or map a statement assigns (and those of its
 * blocks); *changed when one gets a type. */
static void type_stmt(struct hwt_probe_prog *prog, const struct prb_clause *cl,
		      const struct prb_node *n, bool *changed)
{
	struct prb_ty ty;
	int t;

	if (!n)
		return;
	switch (n->kind) {
	case PRB_N_ASSIGN: {
		struct prb_var *v = n->a->kind == PRB_N_SELF ? &prog->self_vars[n->a->v]
							     : &prog->this_vars[n->a->v];

		v->assigned = true;
		if (v->type)
			return;
		if ((t = prb_infer_ty(prog, cl, n->b, &ty)) != PRB_T_NONE) {
			v->type = (uint8_t)t;
			v->ty = ty;
			*changed = true;
		}
		return;
	}
	case PRB_N_MAPSET: {
		struct prb_agg *m = &prog->aggs[n->v];

		if (m->vty.t)
			return;
		if ((t = prb_infer_ty(prog, cl, n->b, &ty)) != PRB_T_NONE) {
			m->vty = ty;
			m->vty.t = (uint8_t)(ty.t == PRB_T_PTR ? PRB_T_PTR : t);
			*changed = true;
		}
		return;
	}
	case PRB_N_IF:
		type_stmt(prog, cl, n->b, changed);
		type_stmt(prog, cl, n->c, changed);
		return;
	case PRB_N_BLOCK:
		for (size_t i = 0; i < n->nargs; i++)
			type_stmt(prog, cl, n->args[i], changed);
		return;
	}
}

/* Types variables and maps from their assignments, to a fixed point (a
 * clause may read a variable that a later clause assigns). */
static int type_vars(struct comp *c)
{
	struct hwt_probe_prog *prog = c->prog;
	bool changed = true;

	while (changed) {
		changed = false;
		for (size_t i = 0; i < prog->nclauses; i++) {
			struct prb_clause *cl = &prog->clauses[i];

			for (size_t s = 0; s < cl->stmts.n; s++)
				type_stmt(prog, cl, cl->stmts.v[s], &changed);
		}
	}
	return 0;
}

/* Which @names are plain maps (assigned values) and which aggregations. */
static int mark_maps(struct comp *c, const struct prb_node *n)
{
	if (!n)
		return 0;
	if (n->kind == PRB_N_MAPSET || n->kind == PRB_N_AGG) {
		struct prb_agg *m = &c->prog->aggs[n->v];
		bool plain = n->kind == PRB_N_MAPSET;

		if (m->plain_pos && m->plain != plain)
			return FAIL(c, n->pos, -HWT_EINVAL,
				    "@%s is assigned values and aggregated: use two names",
				    m->name);
		m->plain = plain;
		if (!m->plain_pos)
			m->plain_pos = n->pos + 1;
	}
	if (n->kind == PRB_N_IF) {
		if (mark_maps(c, n->b) < 0 || mark_maps(c, n->c) < 0)
			return c->err;
	}
	if (n->kind == PRB_N_BLOCK)
		for (size_t i = 0; i < n->nargs; i++)
			if (mark_maps(c, n->args[i]) < 0)
				return c->err;
	return 0;
}

/* Probes whose every clause is `@x = count()` statements, with no
 * predicate and no key, in a program without exit(), print() or clear()
 * (which would observe counts mid-run): their hits need no sample at all,
 * so live runs count them in the kernel, as perf stat does. */
static bool observes_counts(const struct prb_node *n)
{
	if (!n)
		return false;
	if (n->kind == PRB_N_EXIT || n->kind == PRB_N_PRINT || n->kind == PRB_N_CLEAR)
		return true;
	if (n->kind == PRB_N_IF)
		return observes_counts(n->b) || observes_counts(n->c);
	for (size_t i = 0; n->kind == PRB_N_BLOCK && i < n->nargs; i++)
		if (observes_counts(n->args[i]))
			return true;
	return false;
}

static void mark_count_only(struct hwt_probe_prog *prog)
{
	for (size_t c = 0; c < prog->nclauses; c++) {
		const struct prb_clause *cl = &prog->clauses[c];

		for (size_t s = 0; s < cl->stmts.n; s++)
			if (observes_counts(cl->stmts.v[s]))
				return;
	}
	for (size_t i = 0; i < prog->nprobes; i++) {
		struct prb_probe *p = &prog->probes[i];
		bool only = p->nclauses > 0;

		for (size_t c = 0; c < p->nclauses && only; c++) {
			const struct prb_clause *cl = &prog->clauses[p->clauses[c]];

			only = !cl->pred && cl->stmts.n > 0;
			for (size_t s = 0; s < cl->stmts.n && only; s++) {
				const struct prb_node *n = cl->stmts.v[s];

				only = n->kind == PRB_N_AGG && !n->nargs &&
				       prog->aggs[n->v].func == HWT_REP_COUNT;
			}
		}
		p->count_only = only;
	}
}

int prb_compile(struct hwt_probe_prog *prog, struct hwt_probe_diag *diag)
{
	struct comp c = {.prog = prog, .diag = diag};
	int err;

	for (size_t i = 0; i < prog->nprobes; i++) {
		struct prb_probe *p = &prog->probes[i];

		if (prog->nfields) {
			p->field_map = malloc(prog->nfields * sizeof(*p->field_map));
			if (!p->field_map)
				return cfail(prog, diag, p->pos, -ENOMEM, "out of memory");
			for (size_t f = 0; f < prog->nfields; f++)
				p->field_map[f] = -1;
		}
	}
	for (size_t i = 0; i < prog->nclauses; i++)
		for (size_t k = 0; k < prog->clauses[i].stmts.n; k++)
			if ((err = mark_maps(&c, prog->clauses[i].stmts.v[k])) < 0)
				return err;
	if ((err = type_vars(&c)) < 0)
		return err;
	for (size_t i = 0; i < prog->nclauses; i++) {
		struct prb_clause *cl = &prog->clauses[i];

		c.cl = cl;
		c.depth = c.max_depth = 0;
		cl->code = (uint32_t)prog->ncode;
		if (cl->pred) {
			int t = gen_expr(&c, cl->pred);

			if (t < 0)
				return t;
			if (t != PRB_T_INT)
				return cfail(
				    prog, diag, cl->pred->pos, -HWT_EINVAL,
				    "a predicate must be an integer (a condition), and this is %s",
				    prb_type_name(t));
			if (emit(&c, PRB_I_PRED, 0, 0, 0, cl->pred->pos) < 0)
				return c.err;
			push(&c, -1);
		}
		for (size_t s = 0; s < cl->stmts.n; s++)
			if ((err = gen_stmt(&c, cl->stmts.v[s])) < 0)
				return err;
		if (emit(&c, PRB_I_END, 0, 0, 0, cl->pos) < 0)
			return c.err;
		cl->ncode = (uint32_t)(prog->ncode - cl->code);
		if (c.max_depth > PRB_STACK)
			return cfail(prog, diag, cl->pos, -HWT_ETOOBIG,
				     "a clause needs more than %d values at once: simplify it",
				     PRB_STACK);
		for (size_t k = 0; k < cl->nprobes; k++) {
			struct prb_probe *p = &prog->probes[cl->probes[k]];
			size_t *pc = realloc(p->clauses, (p->nclauses + 1) * sizeof(*pc));

			if (!pc)
				return cfail(prog, diag, cl->pos, -ENOMEM, "out of memory");
			p->clauses = pc;
			p->clauses[p->nclauses++] = i;
			p->uses |= cl->uses;
			p->regs |= cl->regs;
			if (cl->bpf_only && !p->bpf_only) {
				p->bpf_only = cl->bpf_only;
				p->bpf_only_pos = cl->bpf_only_pos;
			}
		}
	}
	/* BEGIN and END run in hwtrace, not in the kernel */
	for (size_t i = 0; i < prog->nprobes; i++) {
		const struct prb_probe *p = &prog->probes[i];

		if (p->bpf_only &&
		    (p->info.kind == HWT_PROBE_BEGIN || p->info.kind == HWT_PROBE_END))
			return cfail(prog, diag, p->bpf_only_pos, -HWT_EINVAL,
				     "%s runs in hwtrace, not at a hit: %s", p->text, p->bpf_only);
	}
	mark_count_only(prog);
	for (size_t i = 0; i < prog->naggs; i++) {
		if (!prog->aggs[i].typed)
			return cfail(
			    prog, diag, prog->aggs[i].pos, -HWT_EINVAL,
			    "@%s is printed or cleared but never assigned (as in @%s = count())",
			    prog->aggs[i].name, prog->aggs[i].name);
	}
	return 0;
}
