/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/cli/test_damage.c - a recording that cannot be read, or only in
 * part, is said the same way by every command (format/damage.c makes the
 * line): exact stderr lines and exit statuses of info, report, report
 * --calls, script, flame, branches, trace and convert on an empty file, a
 * file that is not a recording, a sampling recording cut inside its last
 * chunk (read up to there: a warning, exit 0), the same with a damaged
 * chunk (a warning, exit 0), one cut before any data (the error, exit 1),
 * and an emulated PT recording cut inside its last AUX chunk: its complete
 * chunks decode, and its losses are counted in the same words and numbers
 * by script's summary, the calls table's footer and report's warning.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "tests/lib/testutil.h"

static char *dir;
static bool have_pt;
static const char *pt_skip;

#define UNCLOSED                                                                                   \
	" did not end cleanly (its recorder was stopped before it closed the file: killed, out "   \
	"of memory or a power cut)"

/* The commands that read a recording; %s is the file. */
static const char *const sample_cmds[] = {
    "info %s",
    "report -q -i %s --stdio",
    "script -q -i %s",
    "flame -q -i %s -o out.folded",
    "trace -i %s 'profile:hz:99 { @[func] = count() }'",
    "convert -q -i %s -o out.data",
};

static const char *const all_cmds[] = {
    "info %s",
    "report -q -i %s --stdio",
    "report -q -i %s --calls",
    "script -q -i %s",
    "flame -q -i %s -o out.folded",
    "branches -q -i %s main",
    "trace -i %s 'profile:hz:99 { @[func] = count() }'",
    "convert -q -i %s -o out.data",
};

/* Runs hwtrace cmd in dir, its "%s" standing for file. */
static void run_cmd(struct hwt_test_run *r, const char *cmd, const char *file)
{
	const char *at = strstr(cmd, "%s");

	assert_non_null(at);
	hwt_test_run(r, "cd %s && %s %.*s%s%s", dir, hwt_test_hwtrace(), (int)(at - cmd), cmd, file,
		     at + 2);
}

/* How many whole lines of text equal line (with its newline). */
static int count_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	int k = 0;

	for (const char *p = text; (p = strstr(p, line)); p += n)
		k += (p == text || p[-1] == '\n');
	return k;
}

/* Lines of stderr that speak of damage: only the one line may. */
static int damage_lines(const char *err)
{
	static const char *const words[] = {"damaged", "did not end cleanly", "cut short",
					    "truncated", "nothing in it could be read"};
	int n = 0;

	for (const char *l = err; *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		char *s = strndup(l, len);

		for (size_t i = 0; i < HWT_ARRAY_SIZE(words); i++) {
			if (strstr(s, words[i])) {
				n++;
				break;
			}
		}
		free(s);
		l = e ? e + 1 : l + len;
	}
	return n;
}

/* Every command in cmds on file: status, and the line "hwtrace: LEVEL:
 * <line>" said once (LEVEL: warning with exit status 0, else error), no
 * other line about damage. convert fails on a copy that is not whole. */
static void expect_all(const char *const *cmds, size_t n, const char *file, const char *line,
		       int status, int convert_status)
{
	for (size_t i = 0; i < n; i++) {
		struct hwt_test_run r;
		int st = strncmp(cmds[i], "convert", 7) ? status : convert_status;
		char want[1024];

		assert_true((size_t)snprintf(want, sizeof(want), "hwtrace: %s: %s",
					     st ? "error" : "warning", line) < sizeof(want));
		run_cmd(&r, cmds[i], file);
		if (r.status != st || count_line(r.err, want) != 1 || damage_lines(r.err) != 1)
			fail_msg(
			    "hwtrace %s on %s: exit %d (want %d), stderr:\n%swant the line:\n%s",
			    cmds[i], file, r.status, st, r.err, want);
		hwt_test_run_free(&r);
	}
}

/* The offset of the last chunk of type in path, and the end of the last
 * chunk before the first of that type. */
static void chunks_of(const char *file, uint32_t type, const struct hwt_fmt_chunk **last,
		      struct hwt_fmt_chunk *copy, uint64_t *before_first)
{
	char path[4096];
	struct hwt_fmt_reader *rd;
	bool seen = false;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	assert_int_equal(hwt_fmt_reader_open(&rd, path, NULL, NULL), 0);
	*before_first = HWT_FMT_FILE_HEADER_SIZE;
	*last = NULL;
	for (size_t i = 0; i < hwt_fmt_reader_nchunks(rd); i++) {
		const struct hwt_fmt_chunk *c = hwt_fmt_reader_chunk(rd, i);

		if (c->type == type) {
			*copy = *c;
			*last = copy;
			seen = true;
		} else if (!seen) {
			*before_first = c->file_offset + HWT_FMT_CHUNK_HEADER_SIZE + c->comp_size;
		}
	}
	hwt_fmt_reader_close(rd);
	assert_non_null(*last);
}

/* Writes the first n bytes of src as dst (both in dir). */
static void cut(const char *src, const char *dst, uint64_t n)
{
	struct hwt_test_run r;

	hwt_test_run(&r, "cd %s && head -c %" PRIu64 " %s > %s", dir, n, src, dst);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
}

static int setup(void **state)
{
	struct hwt_test_run r;

	(void)state;
	dir = hwt_test_tmpdir();
	/* 1.5 s of CPU: the writer closes chunks by time, so there are
	 * several of samples. */
	hwt_test_run(&r, "cd %s && %s record -q -F 999 -g -o s.hwt -- %s 1.5", dir,
		     hwt_test_hwtrace(), hwt_test_prog("rec_hot"));
	if (r.status != 0) {
		fprintf(stderr, "record: %s", r.err);
		return -1;
	}
	hwt_test_run_free(&r);
	if (system("qemu-x86_64 --version >/dev/null 2>&1") != 0) {
		pt_skip = "qemu-x86_64 is not installed (Debian package qemu-user)";
		return 0;
	}
	/* About 1.3 MB of PT: two AUX chunks (1 MiB each at most). */
	hwt_test_run(&r, "cd %s && %s record --pt=emulate -o p.hwt -- %s 6", dir,
		     hwt_test_hwtrace(), hwt_test_prog("conv_long"));
	/* hwtrace failing is a failure, not a reason to skip. */
	if (r.status != 0) {
		fprintf(stderr, "record --pt=emulate: %s", r.err);
		return -1;
	}
	have_pt = true;
	hwt_test_run_free(&r);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hwt_test_tmpdir_remove(dir);
	return 0;
}

/* Files that are not recordings: one error line, the same in every
 * command (report --calls too, which once called them samples). */
static void test_not_recordings(void **state)
{
	char want[512];

	(void)state;
	{
		char path[4096];

		snprintf(path, sizeof(path), "%s/empty.hwt", dir);
		hwt_test_write_file(path, "", 0);
		snprintf(path, sizeof(path), "%s/notes.txt", dir);
		hwt_test_write_file(path, "these are notes, not a trace\n", 29);
	}
	snprintf(want, sizeof(want),
		 "hwtrace: error: empty.hwt is empty (0 bytes), not a recording (was its recorder "
		 "stopped before it wrote anything?)\n");
	for (size_t i = 0; i < HWT_ARRAY_SIZE(all_cmds); i++) {
		struct hwt_test_run r;

		run_cmd(&r, all_cmds[i], "empty.hwt");
		if (r.status != 1 || strcmp(r.err, want))
			fail_msg("hwtrace %s: exit %d, stderr: %s", all_cmds[i], r.status, r.err);
		hwt_test_run_free(&r);
		run_cmd(&r, all_cmds[i], "notes.txt");
		if (r.status != 1 || strcmp(r.err, "hwtrace: error: notes.txt is not a hwtrace or "
						   "perf.data recording (unknown format at "
						   "offset 0)\n"))
			fail_msg("hwtrace %s: exit %d, stderr: %s", all_cmds[i], r.status, r.err);
		hwt_test_run_free(&r);
		run_cmd(&r, all_cmds[i], "missing.hwt");
		if (r.status != 1 || strcmp(r.err, "hwtrace: error: missing.hwt: no such file "
						   "(check the path, or record one with "
						   "'hwtrace record')\n"))
			fail_msg("hwtrace %s: exit %d, stderr: %s", all_cmds[i], r.status, r.err);
		hwt_test_run_free(&r);
	}
}

/* A sampling recording killed while it wrote its last chunk, one with a
 * damaged chunk, one cut before its first samples. */
static void test_samples(void **state)
{
	const struct hwt_fmt_chunk *last;
	struct hwt_fmt_chunk copy;
	uint64_t before, at;
	char want[1024];
	struct hwt_test_run r;

	(void)state;
	chunks_of("s.hwt", HWT_FMT_CHUNK_RECORDS, &last, &copy, &before);
	/* Cut inside the last chunk of samples. */
	at = last->file_offset + HWT_FMT_CHUNK_HEADER_SIZE + last->comp_size / 2;
	cut("s.hwt", "s-cut.hwt", at);
	snprintf(want, sizeof(want),
		 "s-cut.hwt" UNCLOSED ": it ends inside a chunk at offset %" PRIu64
		 " (the last %" PRIu64 " bytes cannot be read); everything else in it is read\n",
		 last->file_offset, at - last->file_offset);
	/* convert: a copy that is not whole fails (the same line, an error). */
	expect_all(sample_cmds, HWT_ARRAY_SIZE(sample_cmds), "s-cut.hwt", want, 0, 1);
	/* ... and what it holds is there. */
	hwt_test_run(&r, "cd %s && %s report -q -i s-cut.hwt --stdio -g none --no-children", dir,
		     hwt_test_hwtrace());
	assert_true(hwt_test_contains(r.out, "hot_a"));
	hwt_test_run_free(&r);

	/* A damaged chunk in a closed file: the rest is read. */
	hwt_test_run(&r,
		     "cd %s && cp s.hwt s-bad.hwt && printf 'XXXXXXXX' | dd of=s-bad.hwt bs=1 "
		     "seek=%" PRIu64 " conv=notrunc 2>/dev/null",
		     dir, last->file_offset + HWT_FMT_CHUNK_HEADER_SIZE + last->comp_size / 2);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	snprintf(want, sizeof(want),
		 "s-bad.hwt is damaged: 1 chunk(s) failed their checks and were "
		 "skipped (the first at offset %" PRIu64
		 ": checksum mismatch); everything else in it is read\n",
		 last->file_offset);
	expect_all(sample_cmds, HWT_ARRAY_SIZE(sample_cmds), "s-bad.hwt", want, 0, 1);

	/* Cut before the first chunk of samples: nothing to read. */
	cut("s.hwt", "s-head.hwt", before);
	snprintf(want, sizeof(want),
		 "s-head.hwt" UNCLOSED "; nothing in it could be read (record it again)\n");
	expect_all(sample_cmds, HWT_ARRAY_SIZE(sample_cmds), "s-head.hwt", want, 1, 1);
}

/* The phrase "N gap(s) (M from lost trace, X bytes lost), O overflow(s)"
 * in text after marker, copied into out. */
static void losses_after(const char *text, const char *marker, char *out, size_t len)
{
	const char *p = strstr(text, marker), *e;

	assert_non_null(p);
	p += strlen(marker);
	e = strstr(p, " overflow");
	assert_non_null(e);
	e += strlen(" overflow");
	if (*e == 's')
		e++;
	snprintf(out, len, "%.*s", (int)(e - p), p);
}

/* An emulated PT recording cut inside its last AUX chunk: the complete
 * chunks decode (the sideband precedes them in the file), the same line
 * everywhere, the losses counted alike. */
static void test_pt(void **state)
{
	const struct hwt_fmt_chunk *last;
	struct hwt_fmt_chunk copy;
	uint64_t before, at, insns = 0;
	char want[1024], a[160], b[160], c[160];
	struct hwt_test_run r;
	const char *p;

	(void)state;
	if (!have_pt) {
		hwt_test_skip("%s", pt_skip);
		return;
	}
	chunks_of("p.hwt", HWT_FMT_CHUNK_AUX, &last, &copy, &before);
	at = last->file_offset + HWT_FMT_CHUNK_HEADER_SIZE + last->comp_size / 2;
	cut("p.hwt", "p-cut.hwt", at);
	snprintf(want, sizeof(want),
		 "p-cut.hwt" UNCLOSED ": it ends inside a chunk at offset %" PRIu64
		 " (the last %" PRIu64 " bytes cannot be read); everything else in it is read\n",
		 last->file_offset, at - last->file_offset);
	expect_all(all_cmds, HWT_ARRAY_SIZE(all_cmds), "p-cut.hwt", want, 0, 1);

	/* What the complete chunks hold is decoded. */
	hwt_test_run(&r, "cd %s && %s report -i p-cut.hwt --calls", dir, hwt_test_hwtrace());
	assert_int_equal(r.status, 0);
	p = strstr(r.out, "# Calls, exact (from the decoded trace): ");
	assert_non_null(p);
	insns = strtoull(p + strlen("# Calls, exact (from the decoded trace): "), NULL, 10);
	assert_true(insns > 100000);
	/* The same losses in the footer and in the warning. */
	losses_after(r.out, "\n# ", a, sizeof(a));
	losses_after(r.err, "warning: p-cut.hwt: ", b, sizeof(b));
	assert_string_equal(a, b);
	assert_true(hwt_test_contains(a, " from lost trace, ") && strncmp(a, "0 gaps", 6));
	hwt_test_run_free(&r);
	/* ... and in script's summary. */
	hwt_test_run(&r, "cd %s && %s script -i p-cut.hwt --itrace=c >/dev/null", dir,
		     hwt_test_hwtrace());
	assert_int_equal(r.status, 0);
	losses_after(r.err, " returns; ", c, sizeof(c));
	assert_string_equal(a, c);
	hwt_test_run_free(&r);

	/* Cut before any trace: nothing decodes, so the same line is an
	 * error, exit 1, in the PT commands. */
	cut("p.hwt", "p-head.hwt", before);
	snprintf(want, sizeof(want),
		 "p-head.hwt" UNCLOSED "; nothing in it could be read (record it again)\n");
	{
		static const char *const pt_cmds[] = {
		    "report -q -i %s --calls",
		    "script -q -i %s --itrace=c",
		};

		expect_all(pt_cmds, HWT_ARRAY_SIZE(pt_cmds), "p-head.hwt", want, 1, 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_not_recordings),
	    cmocka_unit_test(test_samples),
	    cmocka_unit_test(test_pt),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
