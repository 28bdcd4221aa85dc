/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/decoder/test_conformance.c - `hwtrace script --pt` against libipt's
 * own conformance suite (tests/data/libipt-conformance): for each of
 * the 185 tests and each ptxed expectation (.exp) it has, run the ptxed
 * command line the suite's MANIFEST.tsv gives, with `--format=ptxed`, and
 * compare with what ptxed printed the way libipt's test harness does (diff
 * ignoring changes in the amount of white space). Once with the default
 * PTXED engine (ptxed's own loop over libipt), once with the FAST engine
 * (the canonical pipeline: our block cache walk, libipt per segment where
 * it declines, call stacks), so both are held to ptxed's output. Also the
 * real hardware trace of drpt2trace/: 8 instructions, found through its
 * ELF binary and through its perf sideband.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hwt.h"
#include "tests/lib/testutil.h"

/* Sanitizer and unoptimized builds check every STRIDE-th expectation:
 * each run is a process of a slow binary (the in-process engine
 * comparison over every trace, in test_decode.c, still covers them all). */
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
#define STRIDE 6
#else
#define STRIDE 1
#endif

static unsigned int seen;

struct test {
	char name[128];
	char org[32];
	char opts[512];
};

static size_t read_manifest(struct test **out)
{
	char path[512], *text, *line, *save = NULL;
	size_t len, n = 0;
	struct test *t = NULL;

	snprintf(path, sizeof(path), "%s/libipt-conformance/MANIFEST.tsv", hwt_test_testdata());
	text = hwt_test_read_file(path, &len);
	if (!text)
		return 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[5] = {0}, *s2 = NULL;
		int k = 0;

		for (char *x = strtok_r(line, "\t", &s2); x && k < 5; x = strtok_r(NULL, "\t", &s2))
			f[k++] = x;
		assert_true(k >= 3);
		t = realloc(t, (n + 1) * sizeof(*t));
		assert_non_null(t);
		snprintf(t[n].name, sizeof(t[n].name), "%s", f[0]);
		assert_int_equal(strncmp(f[1], "org=", 4), 0);
		snprintf(t[n].org, sizeof(t[n].org), "%s", f[1] + 4);
		assert_int_equal(strncmp(f[2], "ptxed_opts=", 11), 0);
		snprintf(t[n].opts, sizeof(t[n].opts), "%s", f[2] + 11);
		n++;
	}
	free(text);
	*out = t;
	return n;
}

/* Text with every run of white space made one space and white space at
 * line ends dropped (diff -b). */
static char *squeeze(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;

	assert_non_null(out);
	while (*s) {
		if (*s == ' ' || *s == '\t') {
			while (*s == ' ' || *s == '\t')
				s++;
			if (*s != '\n' && *s)
				*o++ = ' ';
			continue;
		}
		*o++ = *s++;
	}
	*o = 0;
	return out;
}

/* Drops lines containing needle. */
static void drop_lines(char *s, const char *needle)
{
	char *o = s;

	for (char *l = s; *l;) {
		char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) + 1 : strlen(l);

		if (!memmem(l, len, needle, strlen(needle))) {
			memmove(o, l, len);
			o += len;
		}
		l += len;
	}
	*o = 0;
}

/* The sideband options a pevent test's .sb file names carry:
 * NAME-pevent-PRIO,opt=val,....sb -> --pevent:opt val ... --pevent:PRIO FILE */
static void sideband_opts(const char *dir, const char *name, char *out, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	out[0] = 0;
	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t nl = strlen(name), len = strlen(de->d_name);
		char spec[512], *prio, *rest, *save = NULL;

		if (strncmp(de->d_name, name, nl) || strncmp(de->d_name + nl, "-pevent-", 8) ||
		    len < 3 || strcmp(de->d_name + len - 3, ".sb"))
			continue;
		snprintf(spec, sizeof(spec), "%.*s", (int)(len - 3 - nl - 8), de->d_name + nl + 8);
		prio = strtok_r(spec, ",", &save);
		for (rest = strtok_r(NULL, ",", &save); rest; rest = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(rest, '=');

			assert_non_null(eq);
			*eq = 0;
			n += (size_t)snprintf(out + n, size - n, " --pevent:%s %s", rest, eq + 1);
		}
		n += (size_t)snprintf(out + n, size - n, " --pevent:%s '%s'", prio, de->d_name);
		assert_true(n < size);
	}
	closedir(d);
}

struct tally {
	unsigned int outputs, matched, exact, tests, tests_matched;
};

/* Runs one test's ptxed expectations with the given extra options. */
static void run_one(const struct test *t, const char *extra, struct tally *tl, bool fast)
{
	char dir[512], pt[1024], sb[2048];
	DIR *d;
	struct dirent *de;
	bool pevent, any = false, all = true;

	snprintf(dir, sizeof(dir), "%s/libipt-conformance/gen-pevent", hwt_test_testdata());
	snprintf(pt, sizeof(pt), "%s/%s.pt", dir, t->name);
	pevent = access(pt, R_OK) == 0;
	if (!pevent)
		snprintf(dir, sizeof(dir), "%s/libipt-conformance/gen", hwt_test_testdata());
	sb[0] = 0;
	if (pevent)
		sideband_opts(dir, t->name, sb, sizeof(sb));
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t nl = strlen(t->name);
		char cpu[64] = "", path[1024], *exp, *want, *got;
		const char *c;
		struct hwt_test_run run;
		unsigned int fam, mod;

		if (strncmp(de->d_name, t->name, nl) || strncmp(de->d_name + nl, "-ptxed", 6) ||
		    !strstr(de->d_name, ".exp"))
			continue;
		c = de->d_name + nl + 6;
		if (sscanf(c, "-cpu_%u_%u.exp", &fam, &mod) == 2)
			snprintf(cpu, sizeof(cpu), "--cpu %u/%u", fam, mod);
		else if (strcmp(c, ".exp"))
			continue;
		if (seen++ % STRIDE)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		exp = hwt_test_read_file(path, NULL);
		assert_non_null(exp);
		hwt_test_run(&run,
			     "cd '%s' && exec '%s' script --format=ptxed %s --raw %s.bin:%s %s %s "
			     "--no-inst --pt %s.pt %s",
			     dir, hwt_test_hwtrace(), extra, t->name, t->org, cpu, t->opts, t->name,
			     sb);
		assert_true(run.status == 0 || run.status == 1);
		tl->outputs++;
		any = true;
		if (!strcmp(exp, run.out))
			tl->exact++;
		want = squeeze(exp);
		got = squeeze(run.out);
		if (fast && !strcmp(t->name, "ptxed-tick")) {
			/* Canonical engines place tick events at block
			 * ends: compare everything else. */
			drop_lines(want, "tick]");
			drop_lines(got, "tick]");
		}
		if (!strcmp(want, got)) {
			tl->matched++;
		} else {
			all = false;
			fprintf(stderr, "MISMATCH %s (%s):\n--- expected\n%s--- got\n%s%s",
				de->d_name, extra, exp, run.out, run.err);
		}
		free(want);
		free(got);
		free(exp);
		hwt_test_run_free(&run);
	}
	closedir(d);
	if (any) {
		tl->tests++;
		tl->tests_matched += all;
	}
}

static void conformance(const char *extra, bool fast)
{
	struct test *t = NULL;
	size_t n = read_manifest(&t);
	struct tally tl = {0};

	if (!n)
		fail_msg("no conformance suite in %s (tests/data is part of the tree)",
			 hwt_test_testdata());
	assert_int_equal(n, 185);
	for (size_t i = 0; i < n; i++)
		run_one(&t[i], extra, &tl, fast);
	fprintf(stderr,
		"conformance (%s): %u of %zu tests have ptxed expectations, %u match; "
		"%u/%u outputs match (%u byte for byte)\n",
		extra, tl.tests, n, tl.tests_matched, tl.matched, tl.outputs, tl.exact);
	/* The other tests have only ptdump expectations (packet and timing
	 * level): test_pkt.c checks those. */
	if (STRIDE == 1) {
		assert_int_equal(tl.tests, 144);
		assert_int_equal(tl.outputs, 332);
	}
	assert_true(tl.outputs >= 332 / STRIDE);
	assert_int_equal(tl.matched, tl.outputs);
	free(t);
}

static void test_ptxed_engine(void **state)
{
	(void)state;
	conformance("", false);
}

static void test_fast_engine(void **state)
{
	(void)state;
	conformance("--engine=fast", true);
}

/* ------------------------------------------------------------------------ */
/* drpt2trace: a real trace of a static hello world (two system calls).    */

static const char *const hello_insns[] = {
    "0000000000401000", "0000000000401005", "000000000040100a", "0000000000401014",
    "0000000000401019", "000000000040101b", "0000000000401020", "0000000000401025",
};

#define DRPT_CFG                                                                                   \
	"--cpu 6/85/4 --mtc-freq 3 --nom-freq 37 --cpuid-0x15.eax 2 "                              \
	"--cpuid-0x15.ebx 308"
#define DRPT_SB                                                                                    \
	"--pevent:sample-type 0x10086 --pevent:time-zero 18444502336406842448 "                    \
	"--pevent:time-shift 31 --pevent:time-mult 581029125"

/* The eight instructions, in order, and no other of hello's: as ptxed
 * prints them (view false), or as script's insn view does ("insn:" and the
 * address right aligned in 16 columns). */
static void check_hello(const char *out, bool view)
{
	const char *p = out;
	char want[64];

	for (size_t i = 0; i < HWT_ARRAY_SIZE(hello_insns); i++) {
		if (view)
			snprintf(want, sizeof(want), "insn: %16llx\n",
				 strtoull(hello_insns[i], NULL, 16));
		else
			snprintf(want, sizeof(want), "%s", hello_insns[i]);
		p = strstr(p, want);
		assert_non_null(p);
		p += strlen(want);
	}
	assert_null(strstr(p, view ? "insn:" : "00000000004010"));
}

static void test_drpt2trace(void **state)
{
	char dir[512];
	const char *engines[] = {"ptxed", "libipt", "fast"};
	struct hwt_test_run run;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/drpt2trace", hwt_test_testdata());
	if (access(dir, R_OK) != 0)
		fail_msg("no drpt2trace data in %s (tests/data is part of the tree)",
			 hwt_test_testdata());
	for (size_t e = 0; e < HWT_ARRAY_SIZE(engines); e++) {
		/* With the binary. */
		hwt_test_run(&run,
			     "cd '%s' && '%s' script --pt pt.bin --elf hello " DRPT_CFG
			     " --engine=%s --format=ptxed --stat",
			     dir, hwt_test_hwtrace(), engines[e]);
		assert_int_equal(run.status, 0);
		check_hello(run.out, false);
		assert_non_null(strstr(run.out, "insn: 8."));
		assert_non_null(strstr(run.out, "[disabled]"));
		hwt_test_run_free(&run);

		/* Through the sideband's MMAP2 of /hello. */
		hwt_test_run(&run,
			     "cd '%s' && '%s' script --pt pt.bin " DRPT_CFG " " DRPT_SB
			     " --pevent:sysroot . --pevent:primary primary.sideband.pevent "
			     "--pevent:secondary secondary.sideband.pevent --engine=%s "
			     "--format=ptxed --sb:compact --stat",
			     dir, hwt_test_hwtrace(), engines[e]);
		assert_int_equal(run.status, 0);
		check_hello(run.out, false);
		assert_non_null(strstr(run.out, "insn: 8."));
		assert_non_null(
		    strstr(run.out, "PERF_RECORD_MMAP2  36af7/36af7, 401000, 1000, 1000"));
		/* The record comes before the instructions it maps. */
		assert_true(strstr(run.out, "PERF_RECORD_MMAP2") < strstr(run.out, hello_insns[0]));
		hwt_test_run_free(&run);
	}

	/* hwtrace's view, with every engine: the perf time from the
	 * sideband's conversion, thread 223991, the instructions of the two
	 * system calls. */
	for (size_t e = 0; e < HWT_ARRAY_SIZE(engines); e++) {
		hwt_test_run(&run,
			     "cd '%s' && '%s' script --pt pt.bin " DRPT_CFG " " DRPT_SB
			     " --pevent:sysroot . --pevent:primary primary.sideband.pevent "
			     "--itrace=i --engine=%s",
			     dir, hwt_test_hwtrace(), engines[e]);
		assert_int_equal(run.status, 0);
		check_hello(run.out, true);
		assert_non_null(strstr(run.out, "223991/223991    1385530.5640"));
		hwt_test_run_free(&run);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ptxed_engine),
	    cmocka_unit_test(test_fast_engine),
	    cmocka_unit_test(test_drpt2trace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
