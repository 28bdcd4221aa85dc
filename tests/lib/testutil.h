/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/testutil.h - helpers for hwtrace's cmocka tests: locating the
 * built binary and test programs, running commands with captured output,
 * temporary directories, and skipping with a printed reason.
 *
 * Include after <setjmp.h>, <stdarg.h>, <stddef.h> and <cmocka.h>.
 */
#ifndef HWT_TESTS_TESTUTIL_H
#define HWT_TESTS_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Captured result of a command. */
struct hwt_test_run {
	int status; /* exit code, or 128+signal when killed by a signal */
	char *out;  /* stdout, NUL-terminated (never NULL) */
	char *err;  /* stderr, NUL-terminated (never NULL) */
	size_t out_len, err_len;
};

/* Runs cmd through /bin/sh -c, capturing stdout and stderr. stdin is
 * /dev/null. Fails the test if the command cannot be started. */
void hwt_test_run(struct hwt_test_run *run, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* hwt_test_run, and fails the test (printing the command, its exit code
 * and output) unless it exits 0. */
void hwt_test_run_ok(struct hwt_test_run *run, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void hwt_test_run_free(struct hwt_test_run *run);

/* Path of the hwtrace binary under test ($HWTRACE). */
const char *hwt_test_hwtrace(void);
/* Path of a test program built by hwt_test_prog() (in $HWT_BINARY_DIR/progs). */
const char *hwt_test_prog(const char *name);
/* $HWT_SOURCE_DIR, $HWT_BINARY_DIR, $HWT_TESTDATA (tests/data). */
const char *hwt_test_source_dir(void);
const char *hwt_test_binary_dir(void);
const char *hwt_test_testdata(void);

/* A fresh temporary directory (removed with everything in it by
 * hwt_test_tmpdir_remove, which also frees the string: the caller owns it
 * until then). */
char *hwt_test_tmpdir(void);
void hwt_test_tmpdir_remove(char *dir);

/* Skips the current cmocka case for a reason of the environment (no PT,
 * no hardware counters, no kprobe PMU, a tool Debian lacks), never because
 * hwtrace failed: prints "SKIP: <reason>" to stderr and counts the case.
 * A program that skipped a case and failed none exits 77, which ctest
 * (SKIP_RETURN_CODE) shows as skipped, not passed. */
void hwt_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The program's exit status from cmocka's count of failed cases: that
 * count, or HWT_TEST_EXIT_SKIP when cases were skipped, or 0. Every test's
 * main returns it: cmocka_run_group_tests() below does so. */
#define HWT_TEST_EXIT_SKIP 77
int hwt_test_exit_status(int failed);
#undef cmocka_run_group_tests
#define cmocka_run_group_tests(group_tests, group_setup, group_teardown)                           \
	hwt_test_exit_status(_cmocka_run_group_tests(                                              \
	    #group_tests, group_tests, sizeof(group_tests) / sizeof((group_tests)[0]),             \
	    group_setup, group_teardown))

/* True when the shell command cmd (output discarded) succeeds: a tool of
 * the environment is there ("perf --version"). */
bool hwt_test_have_tool(const char *cmd);
/* True when the kernel opens this PERF_TYPE_HARDWARE counter for us, asked
 * directly (not through hwtrace, whose failure must not decide a skip). */
bool hwt_test_have_hw_event(uint64_t config);
/* True when tracefs is mounted, or mountable by this (root) process. */
bool hwt_test_have_tracefs(void);
/* Skips the case when qemu-x86_64, which the PT emulator runs, is missing. */
void hwt_test_need_qemu(void);

/* True when the text contains needle. */
bool hwt_test_contains(const char *text, const char *needle);

/* Reads a whole file (NUL-terminated; *len without the NUL). NULL on error. */
char *hwt_test_read_file(const char *path, size_t *len);
/* Writes a whole file. Fails the test on error. */
void hwt_test_write_file(const char *path, const void *data, size_t len);

/* A seeded PRNG for randomised tests: the seed is taken from $HWT_SEED or the
 * clock, and printed so a failure can be replayed. */
uint64_t hwt_test_seed(void);
uint64_t hwt_test_rand(uint64_t *state);

#endif
