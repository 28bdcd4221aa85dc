/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/format/test_info.c - `hwtrace info` on a container built here with
 * known contents (raw chunks, so every size is predictable): the exact text
 * output, the JSON output (parsed by python3's json module and checked
 * field by field), and the usage errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "tests/format/fmt_testlib.h"
#include "tests/lib/testutil.h"

static char *dir, path[4096];

/* 10 samples, 2 COMM, 1 MMAP2 on CPU 0; 3000 + 1000 AUX bytes in two
 * segments; 7 lost records; emulated PT. Level 0: stored == raw. */
static int setup(void **state)
{
	struct hwt_fmt_writer_config cfg;
	struct hwt_fmt_writer *w;
	struct perf_event_attr attr;
	static uint8_t aux[3000];
	uint64_t id = 7;
	struct rb b;

	(void)state;
	dir = hwt_test_tmpdir();
	snprintf(path, sizeof(path), "%s/info.hwt", dir);
	hwt_fmt_writer_config_init(&cfg);
	cfg.level = 0;
	cfg.flags = HWT_FMT_FLAG_EMULATED_PT;
	if (hwt_fmt_writer_open(&w, path, &cfg))
		return -1;
	fmt_test_attr(&attr);
	hwt_fmt_writer_meta_str(w, HWT_META_HOST, "testbox");
	hwt_fmt_writer_meta_u64(w, HWT_META_PT_EMULATED, 1);
	hwt_fmt_writer_meta_i64(w, "test.delta", -5);
	hwt_fmt_writer_meta_str(w, "test.odd", "tab\there\x01");
	hwt_fmt_writer_meta_u64(w, HWT_META_EVENT_COUNT, 1);
	hwt_fmt_writer_meta_bytes(w, "event.0.attr", &attr, sizeof(attr));
	hwt_fmt_writer_meta_str(w, "event.0.name", "cpu-clock");
	hwt_fmt_writer_meta_bytes(w, "event.0.ids", "\x07\0\0\0\0\0\0\0", 8);
	hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, 0, -1, "sideband.cpu0");
	hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_AUX, 0, -1, "pt.cpu0");
	rb_comm(&b, 10, 10, "prog", 1, id, 0);
	hwt_fmt_writer_records(w, 0, b.buf, b.len);
	rb_mmap2(&b, 10, 10, 0x400000, 0x1000, 0, "/bin/prog", 2, id, 0);
	hwt_fmt_writer_records(w, 0, b.buf, b.len);
	for (int i = 0; i < 10; i++) {
		rb_sample(&b, 0x400100 + (uint64_t)i, 10, 10, 10 + (uint64_t)i, id, 0, 1);
		hwt_fmt_writer_records(w, 0, b.buf, b.len);
	}
	rb_comm(&b, 10, 10, "prog2", 30, id, 0);
	hwt_fmt_writer_records(w, 0, b.buf, b.len);
	for (size_t i = 0; i < sizeof(aux); i++)
		aux[i] = (uint8_t)i;
	hwt_fmt_writer_aux(w, 1, 0, aux, 3000);
	hwt_fmt_writer_aux(w, 1, 8192, aux, 1000);
	hwt_fmt_writer_lost(w, 0, HWT_FMT_LOST_RECORDS, 7);
	return hwt_fmt_writer_close(w) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	hwt_test_tmpdir_remove(dir);
	return 0;
}

static void test_text(void **state)
{
	struct hwt_test_run run;
	const char *body;
	/* Record sizes: COMM 24 + 32 (trailer), MMAP2 88 + 32, SAMPLE 56:
	 * 2*56 + 120 + 10*56 = 792 bytes in one chunk; AUX 3000 + 1000 in two.
	 * Chunks: META, 2 STREAM, RECORDS, 2 AUX, LOST (the index is not
	 * listed). Metadata: 8 keys. */
	static const char expect[] =
	    "format     hwtrace container 1.0\n"
	    "flags      emulated-pt (PT bytes from the emulator)\n"
	    "size       %s bytes, 7 chunks\n"
	    "index      present\n"
	    "ended      cleanly (the recorder closed the file)\n"
	    "span       0.000000 to 0.000000 (0.00 s: the first and last records' times)\n"
	    "metadata   8 entries\n"
	    "  host                   = testbox\n"
	    "  pt.emulated            = 1\n"
	    "  test.delta             = -5\n"
	    "  test.odd               = tab\\x09here\\x01\n"
	    "  event.count            = 1\n"
	    "  event.0.attr           = <%zu bytes: %s...>\n"
	    "  event.0.name           = cpu-clock\n"
	    "  event.0.ids            = <8 bytes: 0700000000000000>\n"
	    "events     1\n"
	    "  0   cpu-clock            type 1 config 0 sample_type IP|TID|TIME|ID|CPU|PERIOD ids "
	    "1\n"
	    "streams    2\n"
	    "  id  kind      cpu     tid  name             chunks   records          raw       "
	    "stored  ratio\n"
	    "  0   records     0      -1  sideband.cpu0         1        13          792          "
	    "792   1.00\n"
	    "      COMM 2, SAMPLE 10, MMAP2 1\n"
	    "  1   aux         0      -1  pt.cpu0               2         -         4000         "
	    "4000   1.00\n"
	    "      AUX offsets 0..9192 in 2 segment(s)\n"
	    "total      raw 4792 bytes, stored 4792 bytes, ratio 1.00\n"
	    "lost       stream 0: 7 records (kernel ring buffer overflow)\n";
	char want[4096], size[32], attrhex[64];
	size_t flen;
	char *file = hwt_test_read_file(path, &flen);
	struct perf_event_attr attr;

	(void)state;
	fmt_test_attr(&attr);
	for (int i = 0; i < 20; i++)
		sprintf(attrhex + 2 * i, "%02x", ((const uint8_t *)&attr)[i]);
	snprintf(size, sizeof(size), "%zu", flen);
	snprintf(want, sizeof(want), expect, size, sizeof(attr), attrhex);
	free(file);
	hwt_test_run(&run, "%s info %s", hwt_test_hwtrace(), path);
	assert_int_equal(run.status, 0);
	assert_string_equal(run.err, "");
	/* The first line names the file; the rest is exact. */
	assert_true(!strncmp(run.out, "file       ", 11) && hwt_test_contains(run.out, path));
	body = strchr(run.out, '\n') + 1;
	if (strcmp(body, want))
		fprintf(stderr, "got:\n%s\nwant:\n%s\n", body, want);
	assert_string_equal(body, want);
	hwt_test_run_free(&run);
}

static void test_json(void **state)
{
	struct hwt_test_run run;
	static const char check[] =
	    "import json,sys\n"
	    "d=json.load(sys.stdin)\n"
	    "assert d['kind']=='hwt' and d['version']=='1.0' and d['emulated'] is True\n"
	    "assert d['index'] is True and d['truncated'] is False and d['chunks']==7\n"
	    "assert d['closed'] is True and d['time_first']==1 and d['time_last']==30\n"
	    "assert d['metadata']['host']=='testbox' and d['metadata']['test.delta']==-5\n"
	    "assert d['metadata']['test.odd']=='tab\\there\\x01'\n"
	    "assert d['metadata']['event.0.ids']=={'bytes':8,'hex':'0700000000000000'}\n"
	    "assert d['events'][0]['name']=='cpu-clock' and d['events'][0]['ids']==1\n"
	    "s=d['streams']\n"
	    "assert s[0]['kind']=='records' and s[0]['records']==13 and s[0]['raw']==792\n"
	    "assert s[0]['by_type']=={'COMM':2,'SAMPLE':10,'MMAP2':1}\n"
	    "assert s[1]['kind']=='aux' and s[1]['aux_segments']==2 and s[1]['raw']==4000\n"
	    "assert d['raw']==4792 and d['stored']==4792\n"
	    "assert d['lost']==[{'stream':0,'kind':'records','amount':7}]\n"
	    "print('ok')\n";
	char script[4096];

	(void)state;
	snprintf(script, sizeof(script), "%s/check.py", dir);
	hwt_test_write_file(script, check, strlen(check));
	hwt_test_run(&run, "%s info --json %s | python3 %s", hwt_test_hwtrace(), path, script);
	if (run.status)
		fprintf(stderr, "%s%s", run.out, run.err);
	assert_int_equal(run.status, 0);
	assert_string_equal(run.out, "ok\n");
	hwt_test_run_free(&run);
}

static void test_usage(void **state)
{
	struct hwt_test_run run;

	(void)state;
	hwt_test_run(&run, "%s info", hwt_test_hwtrace());
	assert_int_equal(run.status, 2);
	assert_true(hwt_test_contains(run.err, "expected one FILE"));
	hwt_test_run_free(&run);
	hwt_test_run(&run, "%s info --bogus %s", hwt_test_hwtrace(), path);
	assert_int_equal(run.status, 2);
	assert_true(hwt_test_contains(run.err, "hwtrace info --help"));
	hwt_test_run_free(&run);
	hwt_test_run(&run, "%s info a b", hwt_test_hwtrace());
	assert_int_equal(run.status, 2);
	hwt_test_run_free(&run);
	hwt_test_run(&run, "%s info --help", hwt_test_hwtrace());
	assert_int_equal(run.status, 0);
	assert_true(hwt_test_contains(run.out, "usage: hwtrace info [--json] FILE"));
	hwt_test_run_free(&run);
	/* A .hwt cannot come through stdin (it needs seeking). */
	hwt_test_run(&run, "cat %s | %s info -", path, hwt_test_hwtrace());
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "error:"));
	hwt_test_run_free(&run);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text),
	    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_usage),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
