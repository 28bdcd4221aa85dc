/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/cli/test_install.c - what a new user meets around the command:
 * every `hwtrace CMD --help` ends with where the full manual is (a page
 * that exists), `cmake --install` installs hwtrace, its PT emulator plugin
 * and the man page (found by man), and the installs are split: the main
 * job's command (scripts/demo.sh) installs what building, recording and
 * reporting need, the test command (scripts/test.sh) everything the tests
 * and benchmarks use.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/testutil.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The last line of text (without its newline). */
static const char *last_line(const char *text, char *buf, size_t len)
{
	size_t n = strlen(text);
	const char *p;

	if (n && text[n - 1] == '\n')
		n--;
	p = text + n;
	while (p > text && p[-1] != '\n')
		p--;
	snprintf(buf, len, "%.*s", (int)(text + n - p), p);
	return buf;
}

static void test_help_ends_with_manual(void **state)
{
	static const char *const cmds[] = {
	    "",	     "list",	 "stat",  "record",  "info",	  "script",	"report",
	    "flame", "branches", "trace", "convert", "addr2line", "script --pt"};
	char page[4096], want[4200];

	(void)state;
	snprintf(page, sizeof(page), "%s/docs/hwtrace.1", hwt_test_binary_dir());
	assert_int_equal(access(page, R_OK), 0);
	snprintf(want, sizeof(want),
		 "The full manual: man %s ('cmake --install' installs it: then man hwtrace)", page);
	for (size_t i = 0; i < NELEM(cmds); i++) {
		struct hwt_test_run r;
		char last[4200];

		hwt_test_run(&r, "%s %s --help", hwt_test_hwtrace(), cmds[i]);
		assert_int_equal(r.status, 0);
		last_line(r.out, last, sizeof(last));
		/* Installed (cmake --install to the configured prefix), the
		 * page is found by its name. */
		if (strcmp(last, want) && strcmp(last, "The full manual: man hwtrace"))
			fail_msg("hwtrace %s --help ends with '%s'", cmds[i], last);
		hwt_test_run_free(&r);
	}
}

static void test_install(void **state)
{
	char *dir = hwt_test_tmpdir();
	struct hwt_test_run r;
	char path[4200];

	(void)state;
	hwt_test_run(&r, "cmake --install %s --prefix %s/usr", hwt_test_binary_dir(), dir);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	snprintf(path, sizeof(path), "%s/usr/bin/hwtrace", dir);
	assert_int_equal(access(path, X_OK), 0);
	snprintf(path, sizeof(path), "%s/usr/share/man/man1/hwtrace.1", dir);
	assert_int_equal(access(path, R_OK), 0);
	hwt_test_run(&r, "find %s/usr -name hwtrace-ptemu.so", dir);
	assert_true(hwt_test_contains(r.out, "/hwtrace/hwtrace-ptemu.so"));
	hwt_test_run_free(&r);
	/* The installed hwtrace runs, and man finds the page by its name. */
	hwt_test_run(&r, "%s/usr/bin/hwtrace --version", dir);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	if (system("man -w man >/dev/null 2>&1") != 0) {
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("man is not installed (Debian package man-db)");
		return;
	}
	hwt_test_run(&r, "MANPATH=%s/usr/share/man man -w hwtrace", dir);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, path));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "MANPATH=%s/usr/share/man MANWIDTH=80 man hwtrace | head -5", dir);
	assert_true(hwt_test_contains(r.out, "hwtrace - hardware-assisted tracer"));
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

/* How many lines of list are line (which ends with its newline). */
static int count_pkg(const char *list, const char *line)
{
	size_t n = strlen(line);
	int k = 0;

	for (const char *p = list; (p = strstr(p, line)); p += n)
		k += p == list || p[-1] == '\n';
	return k;
}

/* scripts/install-deps.sh's two sets, and which command uses which. */
static void test_install_sets(void **state)
{
	/* Test and benchmark tools the main job must not wait for. */
	static const char *const test_only[] = {
	    "chromium",	     "chromium-driver", "bpftrace",   "hyperfine", "valgrind",
	    "libcmocka-dev", "clang-14",	"linux-perf", "gdb",	   "golang-go",
	};
	/* What building, recording and reporting need. */
	static const char *const needed[] = {
	    "build-essential", "cmake",	       "ninja-build",	  "libipt-dev", "libpfm4-dev",
	    "libzstd-dev",     "libdwarf-dev", "libcapstone-dev", "qemu-user",	"man-db",
	};
	struct hwt_test_run m, a;
	char *demo, *test, path[4096], pkg[64];

	(void)state;
	hwt_test_run(&m, "%s/scripts/install-deps.sh --print", hwt_test_source_dir());
	hwt_test_run(&a, "%s/scripts/install-deps.sh --all --print", hwt_test_source_dir());
	assert_int_equal(m.status, 0);
	assert_int_equal(a.status, 0);
	for (size_t i = 0; i < NELEM(test_only); i++) {
		snprintf(pkg, sizeof(pkg), "%s\n", test_only[i]);
		if (count_pkg(m.out, pkg))
			fail_msg("the main job installs %s", test_only[i]);
	}
	for (size_t i = 0; i < NELEM(needed); i++) {
		snprintf(pkg, sizeof(pkg), "%s\n", needed[i]);
		assert_true(count_pkg(m.out, pkg) == 1);
	}
	/* --all: the main set and the rest. */
	for (const char *l = m.out; *l;) {
		const char *e = strchr(l, '\n');

		assert_non_null(e);
		snprintf(pkg, sizeof(pkg), "%.*s\n", (int)(e - l), l);
		assert_true(count_pkg(a.out, pkg) == 1);
		l = e + 1;
	}
	snprintf(pkg, sizeof(pkg), "chromium\n");
	assert_true(count_pkg(a.out, pkg) == 1);
	hwt_test_run_free(&m);
	hwt_test_run_free(&a);
	/* The demo installs the main set and builds no tests; the test
	 * command installs all. */
	snprintf(path, sizeof(path), "%s/scripts/demo.sh", hwt_test_source_dir());
	demo = hwt_test_read_file(path, NULL);
	snprintf(path, sizeof(path), "%s/scripts/test.sh", hwt_test_source_dir());
	test = hwt_test_read_file(path, NULL);
	assert_non_null(demo);
	assert_non_null(test);
	assert_true(hwt_test_contains(demo, "\n./scripts/install-deps.sh\n"));
	assert_true(hwt_test_contains(demo, "-DHWT_TESTS=OFF -DHWT_BENCH=OFF"));
	assert_true(hwt_test_contains(test, "\n./scripts/install-deps.sh --all\n"));
	assert_true(hwt_test_contains(test, "-DHWT_TESTS=ON"));
	free(demo);
	free(test);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_help_ends_with_manual),
	    cmocka_unit_test(test_install),
	    cmocka_unit_test(test_install_sets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
