/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/report/test_export.c - the exports: a pprof file decoded back with
 * protobuf-c code generated from pprof's own profile.proto (through zlib's
 * gunzip) holds the right totals, stacks, mappings and labels; the Chrome
 * trace JSON parses in python3 with the right events, order and times.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <zlib.h>

#include "report/pprof/profile.pb-c.h"
#include "tests/lib/testutil.h"
#include "tests/report/report_test.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

static void add(struct hwt_rep_profile *p, const char *const *names, size_t n, int times,
		uint64_t weight, int32_t tid)
{
	struct hwt_rep_frame fr[8];
	struct hwt_rep_sample s;

	for (size_t i = 0; i < n; i++) {
		fr[i] = rt_frame(names[i], strcmp(names[i], "_start") ? "/usr/bin/prog" : LIBC,
				 HWT_REP_KIND_USER);
		fr[i].addr = 0x1000 + 0x10 * (uint64_t)(names[i][0]);
		fr[i].file = "prog.c";
		fr[i].line = (uint32_t)(10 + names[i][0]);
	}
	memset(&s, 0, sizeof(s));
	s.event = "cpu-clock";
	s.comm = "prog";
	s.pid = 100;
	s.tid = tid;
	s.cpu = -1;
	s.weight = weight;
	s.frames = fr;
	s.nframes = n;
	for (int i = 0; i < times; i++)
		assert_int_equal(hwt_rep_profile_add(p, &s), 1);
}

static uint8_t *gunzip(const uint8_t *in, size_t len, size_t *out_len)
{
	size_t cap = len * 8 + 1024;
	uint8_t *out = malloc(cap);
	z_stream zs;

	assert_non_null(out);
	memset(&zs, 0, sizeof(zs));
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	*out_len = zs.total_out;
	inflateEnd(&zs);
	return out;
}

static const char *pstr(const Perftools__Profiles__Profile *pr, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < pr->n_string_table);
	return pr->string_table[i];
}

static void test_pprof_roundtrip(void **state)
{
	static const char *const s1[] = {"leaf", "main", "_start"};
	static const char *const s2[] = {"leaf", "a", "main", "_start"};
	static const char *const s3[] = {"a", "main", "_start"};
	struct hwt_rep_profile *p;
	struct hwt_rep_render_config cfg;
	Perftools__Profiles__Profile *pr;
	char *dir = hwt_test_tmpdir(), path[4096], stacks[8][128], *file;
	int64_t sum0 = 0, sum1 = 0, w[8] = {0};
	size_t nstacks = 0, raw_len, flen;
	uint8_t *raw;
	bool saw_tid_7 = false;

	(void)state;
	assert_int_equal(hwt_rep_profile_alloc(&p, NULL), 0);
	add(p, s1, 3, 6, 10, 100);
	add(p, s2, 4, 3, 10, 100);
	add(p, s3, 3, 1, 10, 7);
	hwt_rep_profile_lost(p, 3);
	hwt_rep_render_config_init(&cfg);
	snprintf(path, sizeof(path), "%s/prof.pb.gz", dir);
	assert_int_equal(hwt_rep_format_from_path(path, &cfg.format), 0);
	assert_int_equal(cfg.format, HWT_REP_FMT_PPROF);
	assert_int_equal(hwt_rep_render_file(p, &cfg, path), 0);

	file = hwt_test_read_file(path, &flen);
	assert_non_null(file);
	assert_true(flen > 18);
	assert_int_equal((uint8_t)file[0], 0x1f); /* gzip magic */
	assert_int_equal((uint8_t)file[1], 0x8b);
	raw = gunzip((uint8_t *)file, flen, &raw_len);
	pr = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	assert_non_null(pr);

	assert_string_equal(pstr(pr, 0), "");
	assert_int_equal(pr->n_sample_type, 2);
	assert_string_equal(pstr(pr, pr->sample_type[0]->type), "samples");
	assert_string_equal(pstr(pr, pr->sample_type[1]->type), "events");
	for (size_t i = 0; i < pr->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pr->sample[i];
		char buf[128] = "";
		size_t k;

		assert_int_equal(s->n_value, 2);
		sum0 += s->value[0];
		sum1 += s->value[1];
		for (size_t l = 0; l < s->n_location_id; l++) {
			const Perftools__Profiles__Location *loc =
			    pr->location[s->location_id[l] - 1];
			const Perftools__Profiles__Function *fn;
			const Perftools__Profiles__Mapping *m;

			assert_int_equal(loc->id, s->location_id[l]);
			assert_int_equal(loc->n_line, 1);
			fn = pr->function[loc->line[0]->function_id - 1];
			assert_int_equal(fn->id, loc->line[0]->function_id);
			m = pr->mapping[loc->mapping_id - 1];
			/* Addresses, lines, files and objects travel too. */
			assert_int_equal(loc->address,
					 0x1000 + 0x10 * (uint64_t)pstr(pr, fn->name)[0]);
			assert_int_equal(loc->line[0]->line, 10 + pstr(pr, fn->name)[0]);
			assert_string_equal(pstr(pr, fn->filename), "prog.c");
			assert_string_equal(pstr(pr, m->filename),
					    strcmp(pstr(pr, fn->name), "_start") ? "/usr/bin/prog"
										 : LIBC);
			strcat(buf, pstr(pr, fn->name));
			strcat(buf, ";");
		}
		for (size_t l = 0; l < s->n_label; l++) {
			if (!strcmp(pstr(pr, s->label[l]->key), "tid") && s->label[l]->num == 7)
				saw_tid_7 = true;
			if (!strcmp(pstr(pr, s->label[l]->key), "comm"))
				assert_string_equal(pstr(pr, s->label[l]->str), "prog");
		}
		for (k = 0; k < nstacks && strcmp(stacks[k], buf); k++)
			;
		if (k == nstacks)
			strcpy(stacks[nstacks++], buf);
		w[k] += s->value[1];
	}
	assert_int_equal(sum0, 10);
	assert_int_equal(sum1, 100);
	assert_true(saw_tid_7);
	assert_int_equal(nstacks, 3);
	for (size_t k = 0; k < nstacks; k++) {
		if (!strcmp(stacks[k], "leaf;main;_start;"))
			assert_int_equal(w[k], 60);
		else if (!strcmp(stacks[k], "leaf;a;main;_start;"))
			assert_int_equal(w[k], 30);
		else if (!strcmp(stacks[k], "a;main;_start;"))
			assert_int_equal(w[k], 10);
		else
			fail_msg("unexpected stack %s", stacks[k]);
	}
	/* The stats travel as comments. */
	assert_int_equal(pr->n_comment, 2);
	assert_true(hwt_test_contains(pstr(pr, pr->comment[0]), "samples: 10 (weight 100)"));
	assert_true(hwt_test_contains(pstr(pr, pr->comment[0]), "lost: 3"));
	perftools__profiles__profile__free_unpacked(pr, NULL);
	free(raw);
	free(file);
	hwt_rep_profile_free(p);
	hwt_test_tmpdir_remove(dir);
}

static void test_chrome_trace(void **state)
{
	struct hwt_rep_timeline *tl;
	struct hwt_buf b;
	char *dir = hwt_test_tmpdir(), buf[1024];
	const char *path;
	struct hwt_rep_profile *p;
	struct hwt_rep_render_config cfg;

	(void)state;
	assert_int_equal(hwt_rep_timeline_alloc(&tl), 0);
	/* Added out of order; a caller and its callee start together. */
	assert_int_equal(hwt_rep_timeline_span(tl, 1, 2, "callee", 1500, 2500), 0);
	assert_int_equal(hwt_rep_timeline_span(tl, 1, 2, "caller", 1500, 9000), 0);
	assert_int_equal(hwt_rep_timeline_span(tl, 1, 3, "other \"thread\"", 1000, 1001), 0);
	assert_int_equal(hwt_rep_timeline_instant(tl, 1, 2, "gap", 3000), 0);
	assert_int_equal(hwt_rep_timeline_thread(tl, 1, 2, "worker"), 0);
	assert_int_equal(hwt_rep_timeline_span(tl, 1, 2, "bad", 10, 9), -HWT_EINVAL);
	hwt_buf_init(&b);
	assert_int_equal(hwt_rep_timeline_render(tl, &b), 0);
	path = rt_write(dir, "trace.json", b.data, b.len);
	rt_json_valid(path);
	assert_string_equal(
	    rt_json_eval(path,
			 "[(e[\"ph\"], e[\"name\"], e.get(\"ts\"), e.get(\"dur\"), e[\"tid\"]) "
			 "for e in d[\"traceEvents\"]]",
			 buf, sizeof(buf)),
	    "[('M', 'thread_name', None, None, 2), ('X', 'other \"thread\"', 1.0, 0.001, 3), "
	    "('X', 'caller', 1.5, 7.5, 2), ('X', 'callee', 1.5, 1.0, 2), ('i', 'gap', 3.0, None, "
	    "2)]");
	assert_string_equal(
	    rt_json_eval(path, "d[\"traceEvents\"][0][\"args\"][\"name\"], d[\"displayTimeUnit\"]",
			 buf, sizeof(buf)),
	    "worker ns");
	hwt_buf_fini(&b);
	hwt_rep_timeline_free(tl);

	/* A sample profile has no time order: asking for Chrome JSON says so. */
	assert_int_equal(hwt_rep_profile_alloc(&p, NULL), 0);
	hwt_rep_render_config_init(&cfg);
	assert_int_equal(hwt_rep_format_from_path("x.json", &cfg.format), 0);
	hwt_buf_init(&b);
	assert_int_equal(hwt_rep_render(p, &cfg, &b), -HWT_ENOTSUP);
	hwt_buf_fini(&b);
	assert_int_equal(hwt_rep_format_from_path("x.png", &cfg.format), -HWT_EINVAL);
	hwt_rep_profile_free(p);
	hwt_test_tmpdir_remove(dir);
}

/* pprof itself reads the file (go tool pprof: golang-go, which
 * scripts/install-deps.sh installs for this test): flat and cumulative
 * values as hand-computed. */
static void test_pprof_go_tool(void **state)
{
	char *dir = hwt_test_tmpdir();
	struct hwt_test_run run;
	const char *in;

	(void)state;
	hwt_test_run(&run, "command -v go");
	if (run.status != 0) {
		hwt_test_run_free(&run);
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip(
		    "go is not installed (Debian golang-go; scripts/install-deps.sh installs "
		    "it): pprof's own reader not tried");
		return;
	}
	hwt_test_run_free(&run);
	{
		const char *gt =
		    "prog;_start;main;leaf 60\nprog;_start;main;a;leaf 30\nprog;_start;main;a 10\n";

		in = rt_write(dir, "gt.folded", gt, strlen(gt));
	}
	hwt_test_run(
	    &run,
	    "%s flame --folded-in %s -o %s/gt.pb.gz 2>/dev/null && go tool pprof -top %s/gt.pb.gz",
	    hwt_test_hwtrace(), in, dir, dir);
	assert_int_equal(run.status, 0);
	assert_true(
	    hwt_test_contains(run.out, "Showing nodes accounting for 100, 100% of 100 total\n"));
	assert_true(
	    hwt_test_contains(run.out, "        90 90.00% 90.00%         90 90.00%  leaf\n"));
	assert_true(hwt_test_contains(run.out, "        10 10.00%   100%         40 40.00%  a\n"));
	assert_true(
	    hwt_test_contains(run.out, "         0     0%   100%        100   100%  main\n"));
	/* the stats travel as comments */
	assert_true(hwt_test_contains(run.out, "hwtrace: samples: 100 (weight 100)"));
	hwt_test_run_free(&run);
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pprof_roundtrip),
	    cmocka_unit_test(test_chrome_trace),
	    cmocka_unit_test(test_pprof_go_tool),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
