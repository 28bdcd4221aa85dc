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

/* Prints "SKIP: <reason>" to stderr and skips the current cmocka test. */
void hwt_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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
