/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/unwind/test_dwarf.c - call stacks without frame pointers, end to
 * end, on tests/progs/unw_prog (built -O2 -fomit-frame-pointer, with a
 * shared library of its own), whose phases each spend their time in a leaf
 * reached by a known chain:
 *
 *   leaf_chain  main c1 c2 c3 c4            (four calls)
 *   cmp_slow    main run_qsort [libc] cmp  (a comparator called by libc)
 *   leaf_rec    main run_rec rec x5         (recursion)
 *   sig_work    main victim [vdso/libc] __restore_rt on_prof (a signal)
 *   lib_leaf    main unw_lib_outer          (libunw_lib.so)
 *   nocfi_leaf  main, but the assembly has no CFI: the stack ends there
 *               with a "[truncated: no CFI]" frame, never a guess
 *
 * `hwtrace record --call-graph dwarf` then script, report, flame: at least
 * 99% of each leaf's samples have exactly its chain, down to _start. Then
 * perf's own `perf record --call-graph dwarf` of the same program (file,
 * -z, pipe): hwtrace script gives the stacks `perf script` gives, sample by
 * sample (frames of the program and its library compared; perf and hwtrace
 * name libc's local symbols differently). Then damage: an object replaced
 * after recording, stack bytes corrupted, registers missing: stacks end
 * with a marked frame, nothing crashes. The -g recording of the same
 * program prints the hint to use --call-graph dwarf.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/format.h"
#include "report/report.h"
#include "tests/lib/testutil.h"

#define MAXF 64

struct frame {
	char sym[96];
	char obj[256]; /* basename */
};

struct sample {
	struct frame f[MAXF];
	int n;
};

static char *dir;
static char hwt_file[PATH_MAX];

static const char *path_in(const char *name)
{
	static char p[4][PATH_MAX];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

static int setup(void **state)
{
	struct hwt_test_run r;

	(void)state;
	dir = hwt_test_tmpdir();
	snprintf(hwt_file, sizeof(hwt_file), "%s/d.hwt", dir);
	hwt_test_run(&r, "%s record -q -F 2000 --call-graph dwarf -o %s -- %s 0.25",
		     hwt_test_hwtrace(), hwt_file, hwt_test_prog("unw_prog"));
	if (r.status != 0) {
		fprintf(stderr, "record failed (%d): %s\n", r.status, r.err);
		hwt_test_run_free(&r);
		return -1;
	}
	hwt_test_run_free(&r);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hwt_test_tmpdir_remove(dir);
	return 0;
}

/* --- reading script output ------------------------------------------------ */

/* "\t    ADDR SYM+0xOFF (OBJECT)" -> sym, object basename. */
static int parse_frame(const char *line, struct frame *f)
{
	const char *p = line, *open, *close, *plus;
	size_t len;

	while (*p == ' ' || *p == '\t')
		p++;
	while (*p && *p != ' ') /* the address */
		p++;
	while (*p == ' ')
		p++;
	open = strrchr(p, '(');
	close = strrchr(p, ')');
	if (!open || !close || close < open || open == p)
		return -1;
	len = (size_t)(open - 1 - p);
	if (len >= sizeof(f->sym))
		len = sizeof(f->sym) - 1;
	memcpy(f->sym, p, len);
	f->sym[len] = '\0';
	plus = strrchr(f->sym, '+'); /* "+0x1f", or "+0" */
	if (plus && f->sym[0] != '[' && plus[1] >= '0' && plus[1] <= '9')
		f->sym[plus - f->sym] = '\0';
	{
		const char *o = open + 1, *slash;
		char obj[256];

		len = (size_t)(close - o) < sizeof(obj) - 1 ? (size_t)(close - o) : sizeof(obj) - 1;
		memcpy(obj, o, len);
		obj[len] = '\0';
		slash = strrchr(obj, '/');
		snprintf(f->obj, sizeof(f->obj), "%s", slash ? slash + 1 : obj);
	}
	return 0;
}

/* Samples of script output (hwtrace's or perf's: a header line, then one
 * frame a line starting with a tab, then a blank line), user frames only. */
static size_t parse(const char *text, struct sample **out)
{
	size_t n = 0, cap = 1024;
	struct sample *v = calloc(cap, sizeof(*v));
	const char *line = text;
	bool in = false;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[1024];

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = '\0';
		if (!buf[0]) {
			in = false;
		} else if (buf[0] != '\t') {
			if (n == cap) {
				cap *= 2;
				v = realloc(v, cap * sizeof(*v));
			}
			memset(&v[n++], 0, sizeof(*v));
			in = true;
		} else if (in) {
			struct sample *s = &v[n - 1];
			struct frame f;

			if (parse_frame(buf, &f) == 0 && !strstr(f.obj, "kernel.kallsyms") &&
			    s->n < MAXF)
				s->f[s->n++] = f;
		}
		line = nl ? nl + 1 : NULL;
	}
	*out = v;
	return n;
}

/* Runs `hwtrace script ARGS` and parses its samples (and its stderr). */
static size_t run_script(const char *args, struct sample **out, char **err)
{
	struct hwt_test_run r;
	size_t n;

	hwt_test_run(&r, "%s script %s", hwt_test_hwtrace(), args);
	if (r.status != 0)
		fail_msg("'script %s' failed (%d): %s", args, r.status, r.err);
	n = parse(r.out, out);
	if (err)
		*err = strdup(r.err);
	hwt_test_run_free(&r);
	return n;
}

/* --- the expected chains --------------------------------------------------- */

static bool own(const struct frame *f)
{
	return !strcmp(f->obj, "unw_prog") || !strcmp(f->obj, "unw_dbgframe") ||
	       !strcmp(f->obj, "libunw_lib.so");
}

/* The frames of the program and its library, leaf first, joined by ' '. */
static void own_chain(const struct sample *s, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < s->n; i++) {
		/* perf marks no truncated stack: compare without ours */
		if (!own(&s->f[i]) || !strcmp(s->f[i].sym, "_start") ||
		    !strncmp(s->f[i].sym, "[truncated", 10))
			continue;
		len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s",
					len ? " " : "", s->f[i].sym);
	}
}

/* A complete stack ends at the program's _start (whose CFI says it has no
 * caller), with no marked frame anywhere. */
static bool complete(const struct sample *s)
{
	for (int i = 0; i < s->n; i++)
		if (!strncmp(s->f[i].sym, "[truncated", 10))
			return false;
	return s->n > 0 && !strcmp(s->f[s->n - 1].sym, "_start") && own(&s->f[s->n - 1]);
}

struct expect {
	const char *leaf;
	const char *chain;   /* own frames */
	const char *between; /* a frame that must lie between leaf and caller */
	size_t min;
	size_t n, good;
};

static bool has(const struct sample *s, const char *sym)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->f[i].sym, sym))
			return true;
	return false;
}

/* min: samples each leaf must have at least (the machine is shared: a
 * phase gets less CPU than it asks for). */
static void check_chains(struct sample *s, size_t n, const char *what, size_t min)
{
	struct expect ex[] = {
	    {"leaf_chain", "leaf_chain c4 c3 c2 c1 main", NULL, min, 0, 0},
	    {"cmp_slow", "cmp_slow run_qsort main", "__GI___qsort_r", min, 0, 0},
	    {"leaf_rec", "leaf_rec rec rec rec rec rec run_rec main", NULL, min, 0, 0},
	    {"sig_work", "sig_work on_prof victim main", "__restore_rt", min / 3, 0, 0},
	    {"lib_leaf", "lib_leaf unw_lib_outer main", NULL, min, 0, 0},
	};
	size_t nocfi = 0, nocfi_good = 0;
	char chain[1024];

	for (size_t i = 0; i < n; i++) {
		const char *leaf = s[i].n ? s[i].f[0].sym : "";

		if (!strcmp(leaf, "nocfi_leaf")) {
			nocfi++;
			nocfi_good += s[i].n == 2 &&
				      !strcmp(s[i].f[1].sym, "[truncated: no CFI]") &&
				      !strcmp(s[i].f[1].obj, "unw_prog");
			continue;
		}
		for (size_t k = 0; k < HWT_ARRAY_SIZE(ex); k++) {
			if (strcmp(leaf, ex[k].leaf))
				continue;
			ex[k].n++;
			own_chain(&s[i], chain, sizeof(chain));
			if (!strcmp(chain, ex[k].chain) && complete(&s[i]) &&
			    (!ex[k].between || has(&s[i], ex[k].between)))
				ex[k].good++;
			else if (ex[k].n - ex[k].good <= 3)
				print_message(
				    "%s: %s: unexpected chain '%s' (%d frames, last %s)\n", what,
				    leaf, chain, s[i].n, s[i].n ? s[i].f[s[i].n - 1].sym : "-");
		}
	}
	for (size_t k = 0; k < HWT_ARRAY_SIZE(ex); k++) {
		print_message("%s: %-10s %4zu samples, %4zu with the exact chain\n", what,
			      ex[k].leaf, ex[k].n, ex[k].good);
		assert_true(ex[k].n >= ex[k].min);
		assert_true(ex[k].good * 100 >= ex[k].n * 99);
	}
	print_message("%s: nocfi_leaf %4zu samples, %4zu marked [truncated: no CFI]\n", what, nocfi,
		      nocfi_good);
	assert_true(nocfi >= min);
	assert_true(nocfi_good * 100 >= nocfi * 99);
}

/* Folded stacks (flame): each phase's leaf under its whole chain, from the
 * program's _start, for at least 99% of the leaf's samples. folded lines
 * are "comm;root;...;leaf COUNT". */
static void check_folded(const char *recording, const char *what)
{
	static const struct {
		const char *leaf;
		const char *tail; /* own frames from main to the leaf */
		const char *mid;  /* what lies between, or NULL */
	} ex[] = {
	    {"leaf_chain", ";main;c1;c2;c3;c4;leaf_chain", NULL},
	    {"cmp_slow", ";cmp_slow", ";main;run_qsort;__GI___qsort_r;"},
	    {"leaf_rec", ";main;run_rec;rec;rec;rec;rec;rec;leaf_rec", NULL},
	    {"sig_work", ";__restore_rt;on_prof;sig_work", ";main;victim;"},
	    {"lib_leaf", ";main;unw_lib_outer;lib_leaf", NULL},
	};
	const char *folded = path_in("check.folded");
	unsigned long n[HWT_ARRAY_SIZE(ex)] = {0}, good[HWT_ARRAY_SIZE(ex)] = {0};
	struct hwt_test_run r;
	char *text;

	hwt_test_run(&r, "%s flame -q -i %s -o %s", hwt_test_hwtrace(), recording, folded);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	text = hwt_test_read_file(folded, NULL);
	assert_non_null(text);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strrchr(line, ' ');
		unsigned long c = sp ? strtoul(sp + 1, NULL, 10) : 0;

		if (!sp)
			continue;
		*sp = '\0';
		for (size_t k = 0; k < HWT_ARRAY_SIZE(ex); k++) {
			size_t ll = strlen(line), tl = strlen(ex[k].tail);
			const char *leaf = strrchr(line, ';');

			if (!leaf || strcmp(leaf + 1, ex[k].leaf))
				continue;
			n[k] += c;
			if (ll >= tl && !strcmp(line + ll - tl, ex[k].tail) &&
			    strstr(line, ";_start;") && !strstr(line, "[truncated") &&
			    (!ex[k].mid || strstr(line, ex[k].mid)))
				good[k] += c;
			else if (n[k] - good[k] <= 3 * c)
				print_message("%s: %s: unexpected stack %s\n", what, ex[k].leaf,
					      line);
		}
	}
	free(text);
	for (size_t k = 0; k < HWT_ARRAY_SIZE(ex); k++) {
		print_message("%s: folded %-10s %4lu samples, %4lu with the whole chain\n", what,
			      ex[k].leaf, n[k], good[k]);
		assert_true(n[k] >= 10);
		assert_true(good[k] * 100 >= n[k] * 99);
	}
}

/* report with call graphs: a caller's children are its callee leaf's
 * samples (99% of them or more: the leaf's stacks all pass through it),
 * and each leaf's callee graph starts with its chain. */
static void check_report(const char *recording, const char *what)
{
	static const struct {
		const char *leaf, *caller;
		const char *graph; /* the leaf's callers, nearest first */
	} ex[] = {
	    {"leaf_chain", "c1", "c4 c3 c2 c1 main"},
	    {"cmp_slow", "run_qsort", NULL}, /* libc's merge sort: any depth */
	    {"leaf_rec", "run_rec", "rec rec rec rec rec run_rec main"},
	    {"sig_work", "victim", "on_prof __restore_rt"},
	    {"lib_leaf", "unw_lib_outer", "unw_lib_outer main"},
	};
	struct hwt_test_run r;

	hwt_test_run(&r, "%s report -q -i %s --stdio --children -s function -g none",
		     hwt_test_hwtrace(), recording);
	assert_int_equal(r.status, 0);
	for (size_t k = 0; k < HWT_ARRAY_SIZE(ex); k++) {
		double caller = -1, leaf = -1, ch, self;
		char name[128];

		for (const char *l = r.out; l && *l;
		     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
			if (sscanf(l, " %lf%% %lf%% [.] %127s", &ch, &self, name) != 3)
				continue;
			if (!strcmp(name, ex[k].caller))
				caller = ch;
			else if (!strcmp(name, ex[k].leaf))
				leaf = self;
		}
		print_message("%s: report: %s children %.2f%%, %s self %.2f%%\n", what,
			      ex[k].caller, caller, ex[k].leaf, leaf);
		assert_true(leaf > 1);
		/* victim's children hold its own samples too; run_qsort's
		 * the array's fill, libc's merge sort and the kernel's page
		 * faults for its buffer (up to 2.5 points more than cmp_slow
		 * under load: a fresh-memory fault costs 12-24 us here) */
		assert_true(caller >= leaf * 0.99);
		if (strcmp(ex[k].caller, "victim") && strcmp(ex[k].caller, "run_qsort"))
			assert_true(caller <= leaf + 1.0);
	}
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s report -q -i %s --stdio --no-children -s function -g callee",
		     hwt_test_hwtrace(), recording);
	assert_int_equal(r.status, 0);
	for (size_t k = 0; k < HWT_ARRAY_SIZE(ex); k++) {
		char head[64], chain[512] = "";
		const char *l;
		size_t len = 0;

		if (!ex[k].graph)
			continue;
		/* the entry "  P%  [.] leaf", then "|", then "---caller" and
		 * one caller a line: the chain of most of its samples */
		snprintf(head, sizeof(head), "[.] %s\n", ex[k].leaf);
		l = strstr(r.out, head);
		assert_non_null(l);
		l = strstr(l, "---");
		assert_non_null(l);
		for (l += 3; *l && len < sizeof(chain) - 128;) {
			size_t w = strcspn(l, " \n");

			if (!w)
				break;
			len += (size_t)snprintf(chain + len, sizeof(chain) - len, "%s%.*s",
						len ? " " : "", (int)w, l);
			l += strcspn(l, "\n");
			l += *l == '\n';
			l += strspn(l, " |");
			if (!strncmp(l, "--", 2))
				break; /* a branch: rarer chains */
		}
		print_message("%s: report -g callee: %s <- %s\n", what, ex[k].leaf, chain);
		assert_true(!strncmp(chain, ex[k].graph, strlen(ex[k].graph)));
	}
	hwt_test_run_free(&r);
}

/* --- hwtrace's own recording ------------------------------------------------ */

static void test_script_chains(void **state)
{
	struct sample *s, *si;
	size_t n, ni;
	char *err = NULL;
	char args[PATH_MAX + 32];

	(void)state;
	snprintf(args, sizeof(args), "-i %s", hwt_file);
	n = run_script(args, &s, &err);
	check_chains(s, n, "script", 50);
	/* The closing note says how many stacks ended early, and why. */
	assert_true(hwt_test_contains(err, "stacks unwound from the CFI end early"));
	assert_true(hwt_test_contains(err, "mostly for code without CFI"));
	free(err);
	/* --inline: the same frames (nothing is inlined in unw_prog). */
	snprintf(args, sizeof(args), "-q --inline -i %s", hwt_file);
	ni = run_script(args, &si, NULL);
	assert_int_equal(ni, n);
	for (size_t i = 0; i < n; i++) {
		char a[1024], b[1024];

		own_chain(&s[i], a, sizeof(a));
		own_chain(&si[i], b, sizeof(b));
		assert_string_equal(a, b);
	}
	free(s);
	free(si);
}

/* Folded stacks: each leaf's chain from the root, with its samples. */
static void test_flame_and_report(void **state)
{
	const char *folded = path_in("d.folded");
	struct hwt_test_run r;
	char *text;
	size_t len, chain = 0, total = 0;

	(void)state;
	hwt_test_run(&r, "%s flame -q -i %s -o %s", hwt_test_hwtrace(), hwt_file, folded);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	text = hwt_test_read_file(folded, &len);
	assert_non_null(text);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strrchr(line, ' ');
		unsigned long c = sp ? strtoul(sp + 1, NULL, 10) : 0;

		total += c;
		if (sp && strstr(line, ";_start;__libc_start_main") &&
		    !strncmp(sp - strlen(";main;c1;c2;c3;c4;leaf_chain"),
			     ";main;c1;c2;c3;c4;leaf_chain",
			     strlen(";main;c1;c2;c3;c4;leaf_chain")))
			chain += c;
	}
	free(text);
	print_message("folded: %zu of %zu samples on _start ... main;c1;c2;c3;c4;leaf_chain\n",
		      chain, total);
	assert_true(chain * 100 >= total * 10); /* one phase of six */
	check_folded(hwt_file, "hwtrace");

	/* report: c1's children are its callees' samples (leaf_chain's). */
	hwt_test_run(&r, "%s report -q -i %s --stdio --children -s function -g none",
		     hwt_test_hwtrace(), hwt_file);
	assert_int_equal(r.status, 0);
	{
		double c1 = -1, leaf = -1, ch, self;
		char name[128];

		for (const char *l = r.out; l && *l;
		     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
			if (sscanf(l, " %lf%% %lf%% [.] %127s", &ch, &self, name) != 3)
				continue;
			if (!strcmp(name, "c1"))
				c1 = ch;
			else if (!strcmp(name, "leaf_chain"))
				leaf = self;
		}
		print_message("report: c1 children %.2f%%, leaf_chain self %.2f%%\n", c1, leaf);
		assert_true(leaf > 5);
		assert_true(c1 >= leaf - 0.2 && c1 <= leaf + 1.0);
	}
	hwt_test_run_free(&r);
}

/* Offline `trace`: ustack keys come from the same unwinder. */
static void test_trace_ustack(void **state)
{
	static const char *const want[] = {"unw_prog`leaf_chain", "unw_prog`c4", "unw_prog`c3",
					   "unw_prog`c2",	  "unw_prog`c1", "unw_prog`main"};
	struct hwt_test_run r;
	const char *p;
	size_t k = 0;

	(void)state;
	hwt_test_run(
	    &r, "%s trace -i %s 'profile:hz:99 /comm == \"unw_prog\"/ { @[ustack] = count() }'",
	    hwt_test_hwtrace(), hwt_file);
	assert_int_equal(r.status, 0);
	p = strstr(r.out, want[0]);
	assert_non_null(p);
	/* The key's frames, one a line, then (after the start frames) the
	 * count. */
	while (p && k < HWT_ARRAY_SIZE(want)) {
		char line[128];
		size_t len = strcspn(p, "\n");

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		assert_string_equal(line, want[k]);
		k++;
		p = p[len] ? p + len + 1 : NULL;
		while (p && *p == ' ')
			p++;
	}
	assert_int_equal(k, HWT_ARRAY_SIZE(want));
	hwt_test_run_free(&r);
}

/* --- perf's recordings -------------------------------------------------------- */

/* hwtrace script and perf script on the same perf.data (or pipe): the same
 * samples in the same order with the same frames of the program. */
static void compare_with_perf(const char *file, bool pipe, bool all_phases)
{
	struct hwt_test_run r;
	struct sample *h, *p;
	size_t nh, np, same = 0;
	char cmd[PATH_MAX * 2];

	snprintf(cmd, sizeof(cmd), pipe ? "-q -i - < %s" : "-q -i %s", file);
	nh = run_script(cmd, &h, NULL);
	hwt_test_run(&r,
		     pipe ? "perf script -i - --no-inline < %s 2>/dev/null"
			  : "perf script -i %s --no-inline 2>/dev/null",
		     file);
	assert_int_equal(r.status, 0);
	np = parse(r.out, &p);
	hwt_test_run_free(&r);
	print_message("%s: hwtrace %zu samples, perf %zu\n", file, nh, np);
	assert_int_equal(nh, np);
	for (size_t i = 0; i < nh; i++) {
		char a[1024], b[1024];

		own_chain(&h[i], a, sizeof(a));
		own_chain(&p[i], b, sizeof(b));
		if (!strcmp(a, b))
			same++;
		else if (i - same < 3)
			print_message("sample %zu: hwtrace '%s', perf '%s'\n", i, a, b);
	}
	print_message("%s: %zu of %zu samples with the same stack\n", file, same, nh);
	assert_true(nh >= 100);
	assert_true(same * 100 >= nh * 99);
	if (all_phases)
		check_chains(h, nh, pipe ? "perf pipe" : file, 20);
	free(h);
	free(p);
}

static void test_perf_recordings(void **state)
{
	const char *file = path_in("perf.data"), *zfile = path_in("perf-z.data"),
		   *pfile = path_in("perf.pipe"), *some = "chain qsort signal";
	struct hwt_test_run r;

	(void)state;
	hwt_test_run(&r, "perf record -q -F 2000 --call-graph dwarf -o %s -- %s 0.15", file,
		     hwt_test_prog("unw_prog"));
	if (r.status != 0) {
		hwt_test_run_free(&r);
		hwt_test_skip("perf record --call-graph dwarf does not work here");
	}
	hwt_test_run_free(&r);
	compare_with_perf(file, false, true);
	/* flame and report read the same stacks */
	check_folded(file, "perf.data");
	check_report(file, "perf.data");
	/* -z and the pipe: the same reader underneath; fewer phases. */
	hwt_test_run(&r, "perf record -q -z -F 2000 --call-graph dwarf -o %s -- %s 0.1 %s", zfile,
		     hwt_test_prog("unw_prog"), some);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	compare_with_perf(zfile, false, false);
	hwt_test_run(&r, "perf record -q -F 2000 --call-graph dwarf -o - -- %s 0.1 %s > %s",
		     hwt_test_prog("unw_prog"), some, pfile);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	compare_with_perf(pfile, true, false);
}

/* --- damage ----------------------------------------------------------------- */

/* The library replaced (then removed) after recording: its frames cannot be
 * unwound, the stacks end there, marked. */
static void test_replaced_object(void **state)
{
	const char *libdir = path_in("lib"), *file = path_in("lib.hwt");
	struct hwt_test_run r;
	struct sample *s;
	size_t n, inlib = 0, marked = 0;
	char *err = NULL;

	(void)state;
	hwt_test_run(&r,
		     "mkdir -p %s && cp %s %s/ && LD_LIBRARY_PATH=%s %s record -q -F 2000 "
		     "--call-graph dwarf -o %s -- %s 0.2 lib",
		     libdir, hwt_test_prog("libunw_lib.so"), libdir, libdir, hwt_test_hwtrace(),
		     file, hwt_test_prog("unw_prog"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	/* Another library under the same name: a different build-id. */
	hwt_test_run(&r, "cp %s %s/libunw_lib.so", hwt_test_prog("libsym_lib.so"), libdir);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	for (int round = 0; round < 2; round++) {
		char args[PATH_MAX + 8];

		snprintf(args, sizeof(args), "-i %s", file);
		n = run_script(args, &s, &err);
		inlib = marked = 0;
		for (size_t i = 0; i < n; i++) {
			if (!s[i].n || strcmp(s[i].f[0].obj, "libunw_lib.so"))
				continue;
			inlib++;
			marked +=
			    s[i].n == 2 && !strcmp(s[i].f[1].sym, "[truncated: object unreadable]");
		}
		print_message("round %d: %zu samples in the library, %zu marked\n", round, inlib,
			      marked);
		assert_true(inlib >= 50);
		assert_true(marked == inlib);
		assert_true(hwt_test_contains(err, "objects that cannot be read"));
		free(err);
		free(s);
		/* Then removed altogether. */
		hwt_test_run(&r, "rm -f %s/libunw_lib.so", libdir);
		hwt_test_run_free(&r);
	}
}

/* The recording's samples with their stack bytes corrupted and registers
 * removed, through the samples reader: every stack ends complete or with
 * a marked frame, never a crash (the ASan build runs this too). */
static void test_corrupt_samples(void **state)
{
	struct hwt_fmt_session *s;
	struct hwt_rep_dict *dict;
	struct hwt_rep_samples *rs;
	struct hwt_fmt_record rec;
	uint64_t seed = hwt_test_seed(), rng = seed, off;
	size_t samples = 0, marked = 0, noregs = 0;
	uint8_t *stack = malloc(65536);
	int err;

	(void)state;
	assert_int_equal(hwt_fmt_session_open(&s, hwt_file, NULL, &off), 0);
	assert_int_equal(hwt_rep_dict_alloc(&dict), 0);
	assert_int_equal(hwt_rep_samples_alloc(&rs, s, dict, NULL), 0);
	while ((err = hwt_fmt_session_next(s, &rec, &off)) == 0) {
		struct hwt_fmt_sample *smp = &rec.u.sample;
		struct hwt_rep_sample out;
		const struct hwt_rep_sample_frame *d;
		size_t nd;
		unsigned mode = (unsigned)(hwt_test_rand(&rng) % 4);

		if (rec.type == PERF_RECORD_SAMPLE && smp->stack_user && smp->stack_user_size) {
			size_t size = (size_t)smp->stack_user_size;

			memcpy(stack, smp->stack_user, size);
			if (mode == 1) { /* random bytes over the saved frames */
				for (size_t i = 0; i < size; i++)
					stack[i] = (uint8_t)hwt_test_rand(&rng);
			} else if (mode == 2) { /* a few flipped bytes */
				for (int k = 0; k < 16; k++)
					stack[hwt_test_rand(&rng) % size] ^= 0xff;
			} else if (mode == 3) { /* sp and ip missing */
				smp->regs_user_mask &= ~((1ull << 7) | (1ull << 8));
			}
			smp->stack_user = stack;
		}
		err = hwt_rep_samples_record(rs, &rec, &out);
		assert_true(err >= 0);
		if (err != 1 || !smp->stack_user)
			continue;
		samples++;
		nd = hwt_rep_samples_detail(rs, &d);
		assert_true(nd >= 1);
		if (d[nd - 1].flags & HWT_REP_SF_TRUNCATED)
			marked++;
		if (mode == 3) {
			const struct hwt_rep_frame *f =
			    hwt_rep_dict_frame_get(dict, out.frame_ids[nd - 1]);

			noregs++;
			assert_non_null(f);
			assert_string_equal(f->function, "[truncated: no registers]");
		}
	}
	assert_int_equal(err, -HWT_EEOS);
	print_message("seed %llu: %zu samples (%zu without registers), %zu ending marked\n",
		      (unsigned long long)seed, samples, noregs, marked);
	assert_true(samples >= 300);
	assert_true(marked >= noregs);
	hwt_rep_samples_free(rs);
	hwt_rep_dict_free(dict);
	hwt_fmt_session_close(s);
	free(stack);
}

/* CFI only in .debug_frame (built -fno-asynchronous-unwind-tables), moved
 * to a separate debug file found by build-id: with --debug-dir the stacks
 * are whole; without it they end, marked, at the first frame. */
static void test_debug_frame_by_build_id(void **state)
{
	const char *bin = path_in("unw_dbgframe"), *file = path_in("dbg.hwt"),
		   *dbgdir = path_in("debug");
	struct hwt_test_run r;
	struct sample *s;
	size_t n, k, good, marked;
	char args[3 * PATH_MAX];

	(void)state;
	hwt_test_run(&r,
		     "cp %s %s && id=$(readelf -n %s | sed -n 's/.*Build ID: //p') && "
		     "mkdir -p %s/.build-id/${id%%${id#??}} && "
		     "objcopy --only-keep-debug %s %s/.build-id/${id%%${id#??}}/${id#??}.debug && "
		     "strip --strip-debug %s && readelf -S %s | grep -c debug_frame",
		     hwt_test_prog("unw_dbgframe"), bin, bin, dbgdir, bin, dbgdir, bin, bin);
	/* grep found no .debug_frame left in the binary */
	if (r.status != 1 || strcmp(r.out, "0\n"))
		fail_msg("preparing the stripped binary: %d: %s %s", r.status, r.out, r.err);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s record -q -F 2000 --call-graph dwarf -o %s -- %s 0.2 chain",
		     hwt_test_hwtrace(), file, bin);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	for (int with = 1; with >= 0; with--) {
		snprintf(args, sizeof(args), "-q -i %s %s%s", file, with ? "--debug-dir " : "",
			 with ? dbgdir : "");
		n = run_script(args, &s, NULL);
		for (k = good = marked = 0; k < n; k++) {
			char chain[1024];

			if (!s[k].n || strcmp(s[k].f[0].sym, "leaf_chain"))
				continue;
			good += (own_chain(&s[k], chain, sizeof(chain)),
				 !strcmp(chain, "leaf_chain c4 c3 c2 c1 main") && complete(&s[k]));
			marked += s[k].n == 2 && !strcmp(s[k].f[1].sym, "[truncated: no CFI]");
		}
		print_message("%s --debug-dir: %zu good, %zu marked\n", with ? "with" : "without",
			      good, marked);
		if (with)
			assert_true(good >= 50);
		else
			assert_true(marked >= 50 && good == 0);
		free(s);
	}
}

/* --- the hint ------------------------------------------------------------------ */

static void test_short_stack_hint(void **state)
{
	const char *file = path_in("fp.hwt");
	struct hwt_test_run r;

	(void)state;
	hwt_test_run(&r, "%s record -q -F 2000 -g -o %s -- %s 0.15 chain lib", hwt_test_hwtrace(),
		     file, hwt_test_prog("unw_prog"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s report -i %s --stdio", hwt_test_hwtrace(), file);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "of the call stacks stop after one or two frames"));
	assert_true(hwt_test_contains(r.err, "record with --call-graph dwarf"));
	hwt_test_run_free(&r);
	/* script and flame say it too (the same note, once) */
	hwt_test_run(&r, "%s script -i %s > /dev/null", hwt_test_hwtrace(), file);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "of the call stacks stop after one or two frames"));
	assert_true(hwt_test_contains(r.err, "record with --call-graph dwarf"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s flame -i %s -o %s", hwt_test_hwtrace(), file, path_in("fp.folded"));
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "of the call stacks stop after one or two frames"));
	assert_true(hwt_test_contains(r.err, "record with --call-graph dwarf"));
	hwt_test_run_free(&r);
	/* Not for the dwarf recording. */
	hwt_test_run(&r, "%s report -i %s --stdio", hwt_test_hwtrace(), hwt_file);
	assert_int_equal(r.status, 0);
	assert_false(hwt_test_contains(r.err, "stop after one or two frames"));
	hwt_test_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_script_chains),    cmocka_unit_test(test_flame_and_report),
	    cmocka_unit_test(test_trace_ustack),     cmocka_unit_test(test_perf_recordings),
	    cmocka_unit_test(test_replaced_object),  cmocka_unit_test(test_corrupt_samples),
	    cmocka_unit_test(test_short_stack_hint), cmocka_unit_test(test_debug_frame_by_build_id),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
