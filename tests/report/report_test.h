/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/report/report_test.h - helpers the report tests share: checking
 * JSON with python3's own parser (the independent judge of "parses") and
 * reading numbers back out of it, and building synthetic samples.
 * Include after cmocka.h and testutil.h.
 */
#ifndef HWT_TESTS_REPORT_TEST_H
#define HWT_TESTS_REPORT_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hwt.h"
#include "report/report.h"

/* Writes text to DIR/name and returns the path (static storage, 4 slots). */
static inline const char *rt_write(const char *dir, const char *name, const void *data, size_t len)
{
	static char paths[4][4096];
	static int next;
	char *p = paths[next++ % 4];

	snprintf(p, 4096, "%s/%s", dir, name);
	hwt_test_write_file(p, data, len);
	return p;
}

/* Fails unless python3 -m json.tool accepts the file. */
static inline void rt_json_valid(const char *path)
{
	struct hwt_test_run run;

	hwt_test_run(&run, "python3 -m json.tool '%s' >/dev/null", path);
	if (run.status != 0)
		fprintf(stderr, "json.tool rejected %s: %s\n", path, run.err);
	assert_int_equal(run.status, 0);
	hwt_test_run_free(&run);
}

/* Evaluates a python expression over the parsed JSON `d` and returns its
 * printed value (without the newline) in buf. */
static inline const char *rt_json_eval(const char *path, const char *expr, char *buf, size_t cap)
{
	struct hwt_test_run run;
	size_t n;

	hwt_test_run(&run,
		     "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(%s)' '%s'",
		     expr, path);
	if (run.status != 0)
		fprintf(stderr, "python3 failed on %s: %s\n", expr, run.err);
	assert_int_equal(run.status, 0);
	n = strlen(run.out);
	while (n && run.out[n - 1] == '\n')
		run.out[--n] = '\0';
	snprintf(buf, cap, "%s", run.out);
	hwt_test_run_free(&run);
	return buf;
}

/* A user frame. */
static inline struct hwt_rep_frame rt_frame(const char *fn, const char *obj, uint32_t kind)
{
	struct hwt_rep_frame f;

	memset(&f, 0, sizeof(f));
	f.function = fn;
	f.object = obj;
	f.kind = kind;
	return f;
}

#endif
