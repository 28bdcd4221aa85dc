/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/probe/test_bttools.c - bpftrace's own tools (Debian's bpftrace
 * package, /usr/sbin/ *.bt) as a test suite for `hwtrace trace`: every
 * tool is checked with -n as it ships (its #! line, #include lines and
 * all), a DTrace script's "#!/usr/sbin/dtrace -s" line is accepted, and
 * tools whose probes exist here run side by side with bpftrace on one
 * workload (tests/progs/bt_work.c) and print the same lines about it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/hwt.h"
#include "tests/lib/testutil.h"

#define TOOLS "/usr/sbin/*.bt"

/* Every tool Debian ships parses and checks (-n) as it is. */
static void test_every_tool_checks(void **state)
{
	glob_t g;
	size_t ok = 0;

	(void)state;
	if (glob(TOOLS, 0, NULL, &g)) {
		hwt_test_skip("no bpftrace tools in /usr/sbin (install Debian's bpftrace)");
		return;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct hwt_test_run r;

		hwt_test_run(&r, "%s trace -n -f %s", hwt_test_hwtrace(), g.gl_pathv[i]);
		if (r.status != 0 || !r.out[0]) {
			fprintf(stderr, "%s: exit %d\n%s%s\n", g.gl_pathv[i], r.status, r.out,
				r.err);
			fail();
		}
		/* a kernel without what a tool reads is said, as a warning */
		if (r.err[0])
			fprintf(stderr, "%s: %s", g.gl_pathv[i], r.err);
		ok++;
		hwt_test_run_free(&r);
	}
	fprintf(stderr, "%zu bpftrace tools checked\n", ok);
	/* Debian 12's bpftrace 0.17 ships 38 */
	assert_true(ok >= 38);
	globfree(&g);
}

/* A DTrace script's first line. */
static void test_dtrace_interpreter_line(void **state)
{
	char *dir = hwt_test_tmpdir(), path[512];
	static const char script[] = "#!/usr/sbin/dtrace -s\n"
				     "/* a D script */\n"
				     "syscalls:sys_enter_write /pid == $target/\n"
				     "{\n\t@[execname] = count();\n}\n";
	struct hwt_test_run r;

	(void)state;
	snprintf(path, sizeof(path), "%s/w.d", dir);
	hwt_test_write_file(path, script, sizeof(script) - 1);
	hwt_test_run(&r, "%s trace -n -f %s", hwt_test_hwtrace(), path);
	if (r.status && hwt_test_contains(r.err, "tracefs")) {
		hwt_test_run_free(&r);
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("no tracefs here");
		return;
	}
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "syscalls:sys_enter_write\n");
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

/* A tool running: its pid and its stdout. */
struct tool {
	const char *name;
	int time_cols;	  /* leading characters of a time() to strip */
	bool by_comm;	  /* its lines name the workload's command, not a path */
	bool strip_field; /* strip the first field (elapsed ms) */
	bool dedup;	  /* bpftrace 0.17 repeats a join() line once per
			   * argument; hwtrace prints it once */
	pid_t pid[2];	  /* bpftrace, hwtrace */
	char out[2][512];
};

/* Runs cmd with stdout to out and stderr to out.err. */
static pid_t spawn(const char *cmd, const char *out)
{
	pid_t p = fork();

	if (p == 0) {
		char err[600];
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), efd;

		snprintf(err, sizeof(err), "%s.err", out);
		efd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || efd < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(efd, 2);
		setpgid(0, 0);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return p;
}

/* The lines of a tool's output about the workload (holding marker),
 * normalized (time columns cut), sorted, one string. */
static char *lines_about(const char *path, const char *marker, const struct tool *t)
{
	char *text = hwt_test_read_file(path, NULL), *save = NULL, **v = NULL, *res;
	size_t n = 0, len = 1;

	if (!text)
		return strdup("");
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!strstr(l, marker))
			continue;
		if ((int)strlen(l) >= t->time_cols)
			l += t->time_cols;
		if (t->strip_field) {
			l += strspn(l, " ");
			l += strcspn(l, " ");
			l += strspn(l, " ");
		}
		v = realloc(v, (n + 1) * sizeof(*v));
		v[n++] = l;
		len += strlen(l) + 1;
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
			char *x = v[j];

			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	res = calloc(1, len);
	for (size_t i = 0; i < n; i++) {
		if (t->dedup && i && !strcmp(v[i], v[i - 1]))
			continue;
		strcat(res, v[i]);
		strcat(res, "\n");
	}
	free(v);
	free(text);
	return res;
}

/* The file holds n lines or more. */
static bool has_lines(const char *path, size_t n)
{
	char *text = hwt_test_read_file(path, NULL);
	size_t k = 0;

	for (const char *c = text; c && *c; c++)
		k += *c == '\n';
	free(text);
	return k >= n;
}

/* Tools whose probes exist here, on one workload, beside bpftrace: the
 * lines about the workload are the same. */
static void test_tools_print_what_bpftrace_prints(void **state)
{
	struct tool tools[] = {
	    {.name = "opensnoop"},
	    {.name = "statsnoop"},
	    {.name = "killsnoop", .time_cols = 10, .by_comm = true},
	    {.name = "naptime", .time_cols = 9, .by_comm = true},
	    {.name = "setuids", .time_cols = 9, .by_comm = true},
	    {.name = "execsnoop", .strip_field = true, .dedup = true},
	    {.name = "syncsnoop", .time_cols = 10, .by_comm = true},
	};
	char *dir, marker[64], cmd[1024];
	struct timespec t0;
	int st;

	(void)state;
	if (geteuid() != 0 || access("/usr/bin/bpftrace", X_OK) ||
	    access("/usr/sbin/opensnoop.bt", R_OK)) {
		hwt_test_skip("needs root, bpftrace and its tools (Debian's bpftrace)");
		return;
	}
	dir = hwt_test_tmpdir();
	snprintf(marker, sizeof(marker), "bt_work_%d", (int)getpid());
	for (size_t i = 0; i < HWT_ARRAY_SIZE(tools); i++) {
		struct tool *t = &tools[i];

		for (int k = 0; k < 2; k++) {
			snprintf(t->out[k], sizeof(t->out[k]), "%s/%s.%s", dir, t->name,
				 k ? "hwtrace" : "bpftrace");
			if (k)
				snprintf(cmd, sizeof(cmd), "exec %s trace -f /usr/sbin/%s.bt",
					 hwt_test_hwtrace(), t->name);
			else
				snprintf(cmd, sizeof(cmd), "exec bpftrace /usr/sbin/%s.bt",
					 t->name);
			t->pid[k] = spawn(cmd, t->out[k]);
			assert_true(t->pid[k] > 0);
		}
	}
	/* every tool prints its header from BEGIN once its probes are in
	 * (bpftrace after its "Attaching N probes..." line) */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timespec now;
		bool all = true;

		for (size_t i = 0; i < HWT_ARRAY_SIZE(tools); i++)
			for (int k = 0; k < 2; k++)
				all = all && has_lines(tools[i].out[k], k ? 1 : 2);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (all || now.tv_sec - t0.tv_sec > 60)
			break;
		usleep(100000);
	}
	usleep(300000);
	snprintf(cmd, sizeof(cmd), "%s %s", hwt_test_prog("bt_work"), marker);
	assert_int_equal(system(cmd), 0);
	usleep(1000000); /* bpftrace prints what its ring buffer holds */
	for (size_t i = 0; i < HWT_ARRAY_SIZE(tools); i++)
		for (int k = 0; k < 2; k++)
			kill(-tools[i].pid[k], SIGINT);
	for (size_t i = 0; i < HWT_ARRAY_SIZE(tools); i++)
		for (int k = 0; k < 2; k++)
			waitpid(tools[i].pid[k], &st, 0);
	for (size_t i = 0; i < HWT_ARRAY_SIZE(tools); i++) {
		const struct tool *t = &tools[i];
		const char *what = t->by_comm ? " bt_work " : marker;
		char *b = lines_about(t->out[0], what, t), *h = lines_about(t->out[1], what, t);

		size_t nl = 0;

		for (const char *c = h; *c; c++)
			nl += *c == '\n';
		fprintf(stderr, "%s: %zu lines about the workload\n", t->name, nl);
		if (!b[0] || strcmp(b, h)) {
			char *bt = hwt_test_read_file(t->out[0], NULL),
			     *ht = hwt_test_read_file(t->out[1], NULL);

			fprintf(stderr, "%s differs\nbpftrace:\n%s\nhwtrace:\n%s\n", t->name,
				bt ? bt : "", ht ? ht : "");
			free(bt);
			free(ht);
			fail();
		}
		free(b);
		free(h);
	}
	hwt_test_tmpdir_remove(dir);
}

/* bpftrace's layout of every kind of map, against bpftrace itself on a
 * program whose values are known (probe_work(i, 7) for i = 0..299; no two
 * rows of a map tie: bpftrace orders ties as its hash map iterates). */
static void test_layout_is_bpftrace_s(void **state)
{
	const char *p;
	char *dir, path[512], copy[512], script[2048];
	struct hwt_test_run b, h;
	const char *bo;

	(void)state;
	if (geteuid() != 0 || access("/usr/bin/bpftrace", X_OK)) {
		hwt_test_skip("needs root and bpftrace");
		return;
	}
	dir = hwt_test_tmpdir();
	/* A copy of its own: bpftrace's uprobe fires in every process that
	 * runs the binary (-c does not filter uprobes), and other tests run
	 * probe_calls at the same time under ctest -j. */
	snprintf(copy, sizeof(copy), "%s/probe_calls", dir);
	{
		struct hwt_test_run c;

		hwt_test_run(&c, "cp '%s' '%s'", hwt_test_prog("probe_calls"), copy);
		assert_int_equal(c.status, 0);
		hwt_test_run_free(&c);
	}
	p = copy;
	snprintf(script, sizeof(script),
		 "#!/usr/bin/env bpftrace\n"
		 "BEGIN { printf(\"start\\n\"); @names[1] = \"one\"; @names[2] = \"two\"; }\n"
		 "uprobe:%s:probe_work {\n"
		 "\t@calls = count(); @sum = sum(arg0); @min = min(arg0); @max = max(arg0);\n"
		 "\t@avg = avg(arg0); @stats = stats(arg0); @hist = hist(arg0);\n"
		 "\t@lhist = lhist(arg0, 0, 200, 50); @bykey[arg0 %% 3] = sum(arg0);\n"
		 "\t@last[arg0 %% 4] = arg0; @hk[arg0 %% 3 == 0] = hist(arg0 * 1000);\n"
		 "\tif (arg0 == 17) { delete(@names[2]); }\n"
		 "}\n"
		 "END { print(@bykey, 2); }\n",
		 p);
	snprintf(path, sizeof(path), "%s/layout.bt", dir);
	hwt_test_write_file(path, script, strlen(script));
	hwt_test_run(&b, "bpftrace %s -c '%s 300' 2>/dev/null", path, p);
	hwt_test_run(&h, "%s trace -f %s -- %s 300", hwt_test_hwtrace(), path, p);
	assert_int_equal(h.status, 0);
	if (b.status != 0) {
		hwt_test_run_free(&b);
		hwt_test_run_free(&h);
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("bpftrace cannot run here");
		return;
	}
	/* bpftrace's "Attaching N probes..." line is its own */
	bo = strstr(b.out, "probe...\n")    ? strstr(b.out, "probe...\n") + 9
	     : strstr(b.out, "probes...\n") ? strstr(b.out, "probes...\n") + 10
					    : b.out;
	if (strcmp(bo, h.out)) {
		fprintf(stderr, "bpftrace:\n%s\nhwtrace:\n%s\n", bo, h.out);
		fail();
	}
	hwt_test_run_free(&b);
	hwt_test_run_free(&h);
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_tool_checks),
	    cmocka_unit_test(test_dtrace_interpreter_line),
	    cmocka_unit_test(test_tools_print_what_bpftrace_prints),
	    cmocka_unit_test(test_layout_is_bpftrace_s),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
