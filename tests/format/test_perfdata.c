/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/format/test_perfdata.c - perf.data through the session, against
 * perf itself as ground truth: files recorded here by the installed `perf
 * record` (cpu-clock, -g, two events, -z, pipe mode to a file and through
 * stdin) must give the same samples, in the same order, as `perf script`,
 * and the same record counts as `perf report --stats`. The third-party
 * intel_pt recordings must give AUX streams byte-identical to the extracted
 * quipper-*.pt files. The perf.data writer's files must be accepted by perf
 * script. Damaged perf.data gives errors with offsets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/format.h"
#include "tests/format/fmt_testlib.h"
#include "tests/lib/testutil.h"

struct smp {
	uint32_t tid;
	uint64_t ip;
};

struct smps {
	struct smp *v;
	size_t n, cap;
};

static void smps_add(struct smps *s, uint32_t tid, uint64_t ip)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		assert_non_null(s->v);
	}
	s->v[s->n].tid = tid;
	s->v[s->n].ip = ip;
	s->n++;
}

static char *dir;

static int setup(void **state)
{
	(void)state;
	dir = hwt_test_tmpdir();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hwt_test_tmpdir_remove(dir);
	return 0;
}

/* Records fmt_spin with perf, once per file name (tests share the
 * recordings); skips the test when perf cannot record here.
 * --no-bpf-event halves perf record's run time and changes nothing here. */
static void perf_record(const char *opts, const char *out, bool pipe)
{
	struct hwt_test_run run;

	if (access(out, R_OK) == 0)
		return;
	if (pipe)
		hwt_test_run(&run, "perf record -q --no-bpf-event %s -o - -- %s 80 > %s", opts,
			     hwt_test_prog("fmt_spin"), out);
	else
		hwt_test_run(&run, "perf record -q --no-bpf-event %s -o %s -- %s 80", opts, out,
			     hwt_test_prog("fmt_spin"));
	if (run.status != 0) {
		char reason[512];

		snprintf(reason, sizeof(reason), "perf record %s failed (exit %d): %.300s", opts,
			 run.status, run.err);
		hwt_test_run_free(&run);
		hwt_test_skip("%s", reason);
	}
	hwt_test_run_free(&run);
}

/* perf script's samples: "tid ip" per line. */
static void perf_script(const char *file, struct smps *out)
{
	struct hwt_test_run run;
	char *line, *save = NULL;

	/* No symbols needed for raw ips: --symfs to nowhere saves perf
	 * loading kallsyms (0.3 s per run). */
	hwt_test_run(&run, "perf script --symfs=/nonexistent -i %s -F tid,ip --hide-call-graph",
		     file);
	assert_int_equal(run.status, 0);
	for (line = strtok_r(run.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned int tid;
		unsigned long long ip;

		assert_int_equal(sscanf(line, "%u %llx", &tid, &ip), 2);
		smps_add(out, tid, ip);
	}
	hwt_test_run_free(&run);
}

/* perf report --stats: record counts by type name. */
static uint64_t perf_stat(const char *stats, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), " %s events:", name);
	p = strstr(stats, key);
	if (!p)
		return 0;
	return strtoull(p + strlen(key), NULL, 10);
}

struct counts {
	uint64_t by_type[128];
	struct smps samples;
	uint64_t chains, chain_ok, last_time;
	bool time_ordered;
};

static void read_session(const char *path, const struct hwt_fmt_session_config *cfg,
			 struct counts *c)
{
	struct hwt_fmt_session *s;
	struct hwt_fmt_record rec;
	uint64_t off = 0;
	int err;

	memset(c, 0, sizeof(*c));
	c->time_ordered = true;
	err = hwt_fmt_session_open(&s, path, cfg, &off);
	if (err)
		fprintf(stderr, "open %s: %s at %llu\n", path, hwt_strerror(err),
			(unsigned long long)off);
	assert_int_equal(err, 0);
	while ((err = hwt_fmt_session_next(s, &rec, &off)) == 0) {
		assert_true(rec.type < 128);
		c->by_type[rec.type]++;
		if (rec.type != PERF_RECORD_SAMPLE)
			continue;
		smps_add(&c->samples, rec.u.sample.tid, rec.u.sample.ip);
		if (rec.u.sample.time < c->last_time)
			c->time_ordered = false;
		c->last_time = rec.u.sample.time;
		if (rec.u.sample.type & PERF_SAMPLE_CALLCHAIN) {
			c->chains++;
			/* Each chain starts with a context marker, then the ip. */
			if (rec.u.sample.callchain_nr >= 2 &&
			    hwt_le64(&rec.u.sample.callchain[0]) >= (uint64_t)PERF_CONTEXT_MAX &&
			    hwt_le64(&rec.u.sample.callchain[1]) == rec.u.sample.ip)
				c->chain_ok++;
		}
	}
	assert_int_equal(err, -HWT_EEOS);
	hwt_fmt_session_close(s);
}

/* Our session against perf script and perf report --stats. */
static void compare_with_perf(const char *path, struct counts *c)
{
	static const char *const types[] = {"MMAP",
					    "COMM",
					    "EXIT",
					    "FORK",
					    "SAMPLE",
					    "MMAP2",
					    "LOST",
					    "THROTTLE",
					    "UNTHROTTLE",
					    "AUX",
					    "ITRACE_START",
					    "SWITCH",
					    "SWITCH_CPU_WIDE",
					    "KSYMBOL",
					    "BPF_EVENT",
					    "LOST_SAMPLES",
					    "AUXTRACE"};
	struct smps ps = {0};
	struct hwt_test_run run;

	read_session(path, NULL, c);
	perf_script(path, &ps);
	fprintf(stderr, "%s: %zu samples (perf script: %zu)\n", path, c->samples.n, ps.n);
	assert_true(ps.n > 10);
	assert_int_equal(c->samples.n, ps.n);
	for (size_t i = 0; i < ps.n; i++) {
		if (c->samples.v[i].tid != ps.v[i].tid || c->samples.v[i].ip != ps.v[i].ip)
			fprintf(stderr, "sample %zu: ours %u %#llx, perf %u %#llx\n", i,
				c->samples.v[i].tid, (unsigned long long)c->samples.v[i].ip,
				ps.v[i].tid, (unsigned long long)ps.v[i].ip);
		assert_int_equal(c->samples.v[i].tid, ps.v[i].tid);
		assert_int_equal(c->samples.v[i].ip, ps.v[i].ip);
	}
	assert_true(c->time_ordered);
	hwt_test_run(&run, "perf report --stats -i %s", path);
	assert_int_equal(run.status, 0);
	for (size_t i = 0; i < HWT_ARRAY_SIZE(types); i++) {
		uint32_t t;

		for (t = 1; t < 128; t++)
			if (hwt_fmt_record_type_name(t) &&
			    !strcmp(hwt_fmt_record_type_name(t), types[i]))
				break;
		if (perf_stat(run.out, types[i]) != c->by_type[t])
			fprintf(stderr, "%s: perf %llu, ours %llu\n", types[i],
				(unsigned long long)perf_stat(run.out, types[i]),
				(unsigned long long)c->by_type[t]);
		assert_int_equal(perf_stat(run.out, types[i]), c->by_type[t]);
	}
	hwt_test_run_free(&run);
	free(ps.v);
}

static char *path_in(const char *name)
{
	static char buf[4][4096];
	static int next;
	char *p = buf[next++ % 4];

	snprintf(p, 4096, "%s/%s", dir, name);
	return p;
}

static void test_file_mode(void **state)
{
	struct hwt_fmt_session *s;
	struct counts c;
	const char *f = path_in("plain.data");
	uint64_t off;

	(void)state;
	perf_record("-e task-clock -c 100000", f, false);
	compare_with_perf(f, &c);
	assert_int_equal(hwt_fmt_session_open(&s, f, NULL, &off), 0);
	assert_int_equal(hwt_fmt_session_kind(s), HWT_FMT_KIND_PERF_FILE);
	assert_int_equal(hwt_fmt_evlist_count(hwt_fmt_session_evlist(s)), 1);
	assert_string_equal(hwt_fmt_evlist_event(hwt_fmt_session_evlist(s), 0)->name, "task-clock");
	assert_non_null(hwt_fmt_session_meta_find(s, HWT_META_KERNEL));
	assert_non_null(hwt_fmt_session_meta_find(s, HWT_META_HOST));
	assert_true(
	    hwt_test_contains(hwt_fmt_session_meta_find(s, HWT_META_CMDLINE)->v.str, "fmt_spin"));
	assert_int_equal(hwt_fmt_session_meta_find(s, "event.count")->v.u64, 1);
	assert_null(hwt_fmt_session_reader(s));
	hwt_fmt_session_close(s);
	free(c.samples.v);
}

static void test_callgraph(void **state)
{
	struct counts c;
	const char *f = path_in("g.data");

	(void)state;
	perf_record("-g -e cpu-clock -c 100000", f, false);
	compare_with_perf(f, &c);
	assert_int_equal(c.chains, c.samples.n);
	assert_int_equal(c.chain_ok, c.chains);
	free(c.samples.v);
}

static void test_two_events(void **state)
{
	struct hwt_fmt_session *s;
	struct hwt_fmt_record rec;
	const struct hwt_fmt_evlist *ev;
	struct counts c;
	const char *f = path_in("two.data");
	uint64_t off, per_event[2] = {0, 0};

	(void)state;
	perf_record("-e cpu-clock,page-faults -c 100000", f, false);
	compare_with_perf(f, &c);
	free(c.samples.v);
	assert_int_equal(hwt_fmt_session_open(&s, f, NULL, &off), 0);
	ev = hwt_fmt_session_evlist(s);
	assert_int_equal(hwt_fmt_evlist_count(ev), 2);
	assert_string_equal(hwt_fmt_evlist_event(ev, 0)->name, "cpu-clock");
	assert_string_equal(hwt_fmt_evlist_event(ev, 1)->name, "page-faults");
	while (hwt_fmt_session_next(s, &rec, &off) == 0) {
		if (rec.type != PERF_RECORD_SAMPLE)
			continue;
		assert_true(rec.event == 0 || rec.event == 1);
		per_event[rec.event]++;
		/* Attributed by sample id to the event that took it. */
		assert_int_equal(hwt_fmt_evlist_event(ev, (size_t)rec.event)->attr.config,
				 rec.event == 0 ? PERF_COUNT_SW_CPU_CLOCK
						: PERF_COUNT_SW_PAGE_FAULTS);
	}
	assert_true(per_event[0] > 0);
	hwt_fmt_session_close(s);
}

static void test_compressed(void **state)
{
	struct hwt_fmt_session *s;
	struct counts c;
	struct hwt_test_run run;
	const char *f = path_in("z.data");
	uint64_t off;

	(void)state;
	perf_record("-z -e cpu-clock -c 100000", f, false);
	hwt_test_run(&run, "perf report --stats -i %s", f);
	assert_true(perf_stat(run.out, "COMPRESSED") > 0);
	hwt_test_run_free(&run);
	compare_with_perf(f, &c);
	free(c.samples.v);
	assert_int_equal(hwt_fmt_session_open(&s, f, NULL, &off), 0);
	assert_non_null(hwt_fmt_session_meta_find(s, "perf.compressed.level"));
	/* Rewind and read again: the same records. */
	{
		struct hwt_fmt_record rec;
		struct hwt_fmt_session_stats st;
		uint64_t n1 = 0, n2 = 0;

		while (hwt_fmt_session_next(s, &rec, &off) == 0)
			n1++;
		hwt_fmt_session_stats(s, &st);
		assert_int_equal(st.records, n1);
		assert_int_equal(st.bad_records, 0);
		assert_int_equal(hwt_fmt_session_rewind(s), 0);
		while (hwt_fmt_session_next(s, &rec, &off) == 0)
			n2++;
		assert_int_equal(n1, n2);
	}
	hwt_fmt_session_close(s);
}

/* Reads path through fd 0 fed by a pipe: a real, non-seekable stream. */
static void read_via_stdin(const char *path, const struct hwt_fmt_session_config *cfg,
			   struct counts *c, struct hwt_fmt_session **keep)
{
	int fds[2], saved = dup(0), status;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		size_t len;
		char *data = hwt_test_read_file(path, &len);
		size_t done = 0;

		close(fds[0]);
		while (data && done < len) {
			ssize_t k = write(fds[1], data + done, len - done);

			if (k <= 0)
				_exit(1);
			done += (size_t)k;
		}
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(dup2(fds[0], 0), 0);
	close(fds[0]);
	if (keep) {
		uint64_t off;

		assert_int_equal(hwt_fmt_session_open(keep, "-", cfg, &off), 0);
		/* The session holds its own dup of fd 0. */
	} else {
		read_session("-", cfg, c);
	}
	dup2(saved, 0);
	close(saved);
	if (keep) {
		struct hwt_fmt_record rec;
		uint64_t off;

		assert_int_equal(hwt_fmt_session_kind(*keep), HWT_FMT_KIND_PERF_PIPE);
		assert_int_equal(hwt_fmt_session_rewind(*keep), -HWT_ENOTSUP);
		while (hwt_fmt_session_next(*keep, &rec, &off) == 0)
			;
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

static void test_pipe_mode(void **state)
{
	struct counts c, cs;
	const char *f = path_in("pipe.data");
	struct hwt_test_run a, b, d;
	struct hwt_fmt_session *s;
	uint64_t off;

	(void)state;
	perf_record("-e cpu-clock,page-faults -c 100000", f, true);
	compare_with_perf(f, &c);
	assert_int_equal(hwt_fmt_session_open(&s, f, NULL, &off), 0);
	assert_int_equal(hwt_fmt_session_kind(s), HWT_FMT_KIND_PERF_PIPE);
	/* Names arrive as EVENT_UPDATE / HEADER_FEATURE records in pipes. */
	assert_string_equal(hwt_fmt_evlist_event(hwt_fmt_session_evlist(s), 1)->name,
			    "page-faults");
	hwt_fmt_session_close(s);

	/* The same stream through stdin, non-seekable: the same samples. */
	read_via_stdin(f, NULL, &cs, NULL);
	assert_int_equal(cs.samples.n, c.samples.n);
	for (size_t i = 0; i < c.samples.n; i++) {
		assert_int_equal(cs.samples.v[i].tid, c.samples.v[i].tid);
		assert_int_equal(cs.samples.v[i].ip, c.samples.v[i].ip);
	}
	assert_memory_equal(cs.by_type, c.by_type, sizeof(c.by_type));
	free(c.samples.v);
	free(cs.samples.v);

	/* And through the CLI: a redirected file and a real pipe agree. */
	hwt_test_run(&a, "%s info %s", hwt_test_hwtrace(), f);
	hwt_test_run(&b, "%s info - < %s", hwt_test_hwtrace(), f);
	hwt_test_run(&d, "cat %s | %s info -", f, hwt_test_hwtrace());
	assert_int_equal(a.status, 0);
	assert_int_equal(b.status, 0);
	assert_int_equal(d.status, 0);
	assert_non_null(strstr(a.out, "records"));
	assert_string_equal(strstr(a.out, "records"), strstr(b.out, "records"));
	assert_string_equal(strstr(a.out, "records"), strstr(d.out, "records"));
	assert_true(hwt_test_contains(a.out, "perf.data, pipe mode"));
	hwt_test_run_free(&a);
	hwt_test_run_free(&b);
	hwt_test_run_free(&d);
}

/* Concatenated segments of the AUX stream for cpu must equal the file. */
static void check_aux_equals(struct hwt_fmt_session *s, int32_t cpu, const char *expect_path)
{
	size_t elen, i;
	char *expect = hwt_test_read_file(expect_path, &elen);
	struct hwt_buf got;

	assert_non_null(expect);
	hwt_buf_init(&got);
	for (i = 0; i < hwt_fmt_session_naux(s); i++)
		if (hwt_fmt_session_aux(s, i)->cpu == cpu)
			break;
	assert_true(i < hwt_fmt_session_naux(s));
	for (size_t g = 0; g < hwt_fmt_session_aux(s, i)->nsegments; g++) {
		const struct hwt_fmt_aux_segment *sg = hwt_fmt_session_aux_segment(s, i, g);

		assert_int_equal(hwt_buf_reserve(&got, sg->size), 0);
		assert_int_equal(hwt_fmt_session_aux_read(s, i, g, 0, got.data + got.len, sg->size),
				 sg->size);
		got.len += sg->size;
	}
	assert_int_equal(got.len, elen);
	assert_memory_equal(got.data, expect, elen);
	hwt_buf_fini(&got);
	free(expect);
}

static void test_intel_pt_testdata(void **state)
{
	static const char *const modes[] = {"file", "piped"};
	char path[4096], pt[4096];
	struct hwt_fmt_session_config cfg;

	(void)state;
	for (int m = 0; m < 2; m++) {
		struct hwt_fmt_session *s;
		const struct hwt_fmt_meta *info;
		struct hwt_fmt_record rec;
		uint64_t off, auxtrace = 0, with_data = 0;
		struct counts c;
		struct hwt_test_run run;

		snprintf(path, sizeof(path), "%s/perf-intel-pt/perf.data%s.intel_pt-4.14",
			 hwt_test_testdata(), m ? ".piped" : "");
		if (access(path, R_OK) != 0)
			fail_msg("testdata %s is missing (tests/data is part of the tree)", path);
		hwt_fmt_session_config_init(&cfg);
		cfg.load_aux = true;
		assert_int_equal(hwt_fmt_session_open(&s, path, &cfg, &off), 0);
		assert_int_equal(hwt_fmt_session_naux(s), 2);
		for (int32_t cpu = 0; cpu <= 3; cpu += 3) {
			snprintf(pt, sizeof(pt), "%s/perf-intel-pt/quipper-%s-cpu%d.pt",
				 hwt_test_testdata(), modes[m], cpu);
			check_aux_equals(s, cpu, pt);
		}
		/* intel_pt's private data travels for the decoder. */
		info = hwt_fmt_session_meta_find(s, HWT_META_PERF_AUXTRACE_INFO);
		assert_non_null(info);
		assert_int_equal(hwt_le32(info->v.bytes), 70);
		assert_int_equal(hwt_le16(info->v.bytes + 6), info->len);
		assert_int_equal(hwt_fmt_session_meta_find(s, HWT_META_TIME_SHIFT)->v.u64, 31);
		if (m == 0) {
			assert_int_equal(hwt_fmt_session_meta_find(s, HWT_META_CPU_FAMILY)->v.u64,
					 6);
			assert_int_equal(hwt_fmt_session_meta_find(s, HWT_META_CPU_MODEL)->v.u64,
					 78);
			assert_string_equal(
			    hwt_fmt_session_meta_find(s, HWT_META_CPU_VENDOR)->v.str,
			    "GenuineIntel");
		}
		/* In the pipe, the names (EVENT_DESC) come before the attrs. */
		assert_string_equal(hwt_fmt_evlist_event(hwt_fmt_session_evlist(s), 0)->name,
				    "intel_pt//");
		assert_string_equal(hwt_fmt_evlist_event(hwt_fmt_session_evlist(s), 1)->name,
				    "cycles");
		/* AUXTRACE records come with their data when asked. */
		while (hwt_fmt_session_next(s, &rec, &off) == 0) {
			if (rec.type != 71)
				continue;
			auxtrace++;
			if (rec.u.auxtrace.data)
				with_data++;
		}
		assert_int_equal(auxtrace, 2);
		assert_int_equal(with_data, 2);
		/* Each AUX stream's segments got the time of its AUX record. */
		for (size_t i = 0; i < 2; i++)
			assert_true(hwt_fmt_session_aux_segment(s, i, 0)->time > 0);
		hwt_fmt_session_close(s);

		/* Record counts as perf counts them. (perf 6.1 itself fails on
		 * the 4.14 pipe recording after its first AUXTRACE: "bad event
		 * header size"; there the quipper extraction is the reference.) */
		read_session(path, NULL, &c);
		hwt_test_run(&run, "perf report --stats -i %s", path);
		if (m == 0) {
			assert_int_equal(run.status, 0);
			assert_true(hwt_test_contains(run.out, "TOTAL events"));
			assert_int_equal(c.by_type[PERF_RECORD_SAMPLE],
					 perf_stat(run.out, "SAMPLE"));
			assert_int_equal(c.by_type[PERF_RECORD_MMAP], perf_stat(run.out, "MMAP"));
			assert_int_equal(c.by_type[PERF_RECORD_AUX], perf_stat(run.out, "AUX"));
			assert_int_equal(c.by_type[PERF_RECORD_SWITCH_CPU_WIDE],
					 perf_stat(run.out, "SWITCH_CPU_WIDE"));
		}
		hwt_test_run_free(&run);
		free(c.samples.v);
	}

	/* The piped recording through a real pipe: AUX kept in memory. */
	{
		struct hwt_fmt_session *s = NULL;

		snprintf(path, sizeof(path), "%s/perf-intel-pt/perf.data.piped.intel_pt-4.14",
			 hwt_test_testdata());
		read_via_stdin(path, NULL, NULL, &s);
		for (int32_t cpu = 0; cpu <= 3; cpu += 3) {
			snprintf(pt, sizeof(pt), "%s/perf-intel-pt/quipper-piped-cpu%d.pt",
				 hwt_test_testdata(), cpu);
			check_aux_equals(s, cpu, pt);
		}
		hwt_fmt_session_close(s);
	}
}

/* The writer's perf.data: perf script and perf report accept it. */
static void test_perf_writer(void **state)
{
	const char *f = path_in("written.data");
	struct hwt_fmt_perf_writer *w;
	struct hwt_fmt_evlist *ev;
	struct perf_event_attr attr;
	struct hwt_test_run run;
	struct smps ps = {0};
	struct counts c;
	uint8_t bid[20], aux[1000];
	uint64_t id = 42;
	struct rb b;
	const char *argv[] = {"hwtrace", "record", "--", "./prog"};

	(void)state;
	assert_int_equal(hwt_fmt_evlist_alloc(&ev), 0);
	fmt_test_attr(&attr);
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD;
	assert_int_equal(hwt_fmt_evlist_add(ev, &attr, sizeof(attr), "cpu-clock", &id, 1), 0);
	assert_int_equal(hwt_fmt_perf_writer_open(&w, f, ev), 0);
	assert_int_equal(hwt_fmt_perf_writer_feature_str(w, 3, "fmt-test-host"), 0);
	assert_int_equal(hwt_fmt_perf_writer_feature_str(w, 4, "6.1.0-test"), 0);
	assert_int_equal(hwt_fmt_perf_writer_feature_str(w, 6, "x86_64"), 0);
	assert_int_equal(hwt_fmt_perf_writer_feature_str(w, 11, "nope"), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_perf_writer_cmdline(w, 4, argv), 0);
	for (int i = 0; i < 20; i++)
		bid[i] = (uint8_t)(0x10 + i);
	assert_int_equal(hwt_fmt_perf_writer_buildid(w, 4242, "/opt/fmt/prog", bid, 20, false), 0);

	/* COMM and MMAP2 with a sample_id (TID|TIME), then samples. */
	rb_begin(&b, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
	rb_u32(&b, 4242);
	rb_u32(&b, 4242);
	rb_str(&b, "fmtprog");
	rb_sample_id(&b, attr.sample_type, 4242, 4242, 1000000000, 0, 0);
	assert_int_equal(hwt_fmt_perf_writer_record(w, b.buf, rb_end(&b)), 0);
	rb_begin(&b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
	rb_u32(&b, 4242);
	rb_u32(&b, 4242);
	rb_u64(&b, 0x400000);
	rb_u64(&b, 0x10000);
	rb_u64(&b, 0);
	rb_u32(&b, 0);
	rb_u32(&b, 0);
	rb_u64(&b, 0);
	rb_u64(&b, 0);
	rb_u32(&b, 5);
	rb_u32(&b, 2);
	rb_str(&b, "/opt/fmt/prog");
	rb_sample_id(&b, attr.sample_type, 4242, 4242, 1000000001, 0, 0);
	assert_int_equal(hwt_fmt_perf_writer_record(w, b.buf, rb_end(&b)), 0);
	for (int i = 0; i < 50; i++) {
		rb_begin(&b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
		rb_u64(&b, 0x401000 + (uint64_t)i * 16);
		rb_u32(&b, 4242);
		rb_u32(&b, 4242);
		rb_u64(&b, 1000001000 + (uint64_t)i * 1000);
		rb_u64(&b, 100000);
		assert_int_equal(hwt_fmt_perf_writer_record(w, b.buf, rb_end(&b)), 0);
	}
	assert_int_equal(hwt_fmt_perf_writer_record(w, b.buf, b.len - 1), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_perf_writer_close(w), 0);

	perf_script(f, &ps);
	assert_int_equal(ps.n, 50);
	for (size_t i = 0; i < ps.n; i++) {
		assert_int_equal(ps.v[i].tid, 4242);
		assert_int_equal(ps.v[i].ip, 0x401000 + i * 16);
	}
	hwt_test_run(&run, "perf report --header-only -i %s", f);
	assert_int_equal(run.status, 0);
	assert_true(hwt_test_contains(run.out, "hostname : fmt-test-host"));
	assert_true(hwt_test_contains(run.out, "os release : 6.1.0-test"));
	assert_true(hwt_test_contains(run.out, "cmdline : hwtrace record -- ./prog"));
	assert_true(hwt_test_contains(run.out, "name = cpu-clock"));
	hwt_test_run_free(&run);
	hwt_test_run(&run, "perf buildid-list -i %s", f);
	assert_int_equal(run.status, 0);
	assert_true(
	    hwt_test_contains(run.out, "101112131415161718191a1b1c1d1e1f20212223 /opt/fmt/prog"));
	hwt_test_run_free(&run);
	hwt_test_run(&run, "perf report -D -i %s", f);
	assert_int_equal(run.status, 0);
	hwt_test_run_free(&run);

	/* And it reads back: samples, names, build-id. */
	read_session(f, NULL, &c);
	assert_int_equal(c.samples.n, 50);
	assert_int_equal(c.by_type[PERF_RECORD_COMM], 1);
	assert_int_equal(c.by_type[PERF_RECORD_MMAP2], 1);
	{
		struct hwt_fmt_session *s;
		uint64_t off;
		uint8_t got[1000];
		const struct hwt_fmt_meta *m;

		assert_int_equal(hwt_fmt_session_open(&s, f, NULL, &off), 0);
		m = hwt_fmt_session_meta_find(s, "buildid./opt/fmt/prog");
		assert_non_null(m);
		assert_memory_equal(m->v.bytes, bid, 20);
		assert_string_equal(hwt_fmt_session_meta_find(s, HWT_META_HOST)->v.str,
				    "fmt-test-host");
		assert_string_equal(hwt_fmt_session_meta_find(s, HWT_META_CMDLINE)->v.str,
				    "hwtrace record -- ./prog");
		hwt_fmt_session_close(s);

		/* AUXTRACE (perf itself wants an AUXTRACE_INFO with it, which
		 * only a PT recording has; this one is for our reader). Data is
		 * padded to 8 bytes as perf does; the next record's offset
		 * overlaps the padding, which the AUX index drops. */
		for (size_t k = 0; k < sizeof(aux); k++)
			aux[k] = (uint8_t)(k * 7);
		assert_int_equal(hwt_fmt_perf_writer_open(&w, f, ev), 0);
		assert_int_equal(hwt_fmt_perf_writer_auxtrace(w, 0, 0, 0, 4242, 0, aux, 601), 0);
		assert_int_equal(
		    hwt_fmt_perf_writer_auxtrace(w, 601, 0, 0, 4242, 0, aux + 601, 399), 0);
		assert_int_equal(hwt_fmt_perf_writer_auxtrace(w, 5000, 0, 0, 4242, 0, aux, 16), 0);
		assert_int_equal(hwt_fmt_perf_writer_close(w), 0);
		assert_int_equal(hwt_fmt_session_open(&s, f, NULL, &off), 0);
		assert_int_equal(hwt_fmt_session_naux(s), 1);
		assert_int_equal(hwt_fmt_session_aux(s, 0)->tid, 4242);
		assert_int_equal(hwt_fmt_session_aux(s, 0)->nsegments, 2);
		/* 601 + 399, then the last record's padding (1 byte) stays. */
		assert_int_equal(hwt_fmt_session_aux_segment(s, 0, 0)->size, 1000 + 1);
		assert_int_equal(hwt_fmt_session_aux_read(s, 0, 0, 0, got, 1000), 1000);
		assert_memory_equal(got, aux, 1000);
		assert_int_equal(hwt_fmt_session_aux_segment(s, 0, 1)->aux_offset, 5000);
		assert_int_equal(hwt_fmt_session_aux_segment(s, 0, 1)->size, 16);
		hwt_fmt_session_close(s);
	}
	hwt_fmt_evlist_free(ev);
	free(c.samples.v);
	free(ps.v);
}

/* The pre-scan steps over large samples (--call-graph dwarf's 8 KiB stack
 * copies) by their headers and reads only what it needs: AUX data announced
 * between them, perf's own records, a run of small records in the middle (back
 * to reading in order) and a last AUXTRACE after more large samples. The
 * session must give every record and every AUX byte as written. */
static void test_prescan_sparse(void **state)
{
	const char *f = path_in("sparse.data");
	struct hwt_fmt_perf_writer *w;
	struct hwt_fmt_evlist *ev;
	struct perf_event_attr attr;
	struct hwt_fmt_session *s;
	struct counts c;
	static uint8_t raw[8188], aux[4096], got[4096];
	uint64_t id = 7, off, aux_off = 0, t = 1000000;
	size_t nsamples = 0, naux = 0, big = 0, lens[16];
	struct rb b;

	(void)state;
	for (size_t k = 0; k < sizeof(raw); k++)
		raw[k] = (uint8_t)(k * 13);
	for (size_t k = 0; k < sizeof(aux); k++)
		aux[k] = (uint8_t)(k * 7 + 1);
	assert_int_equal(hwt_fmt_evlist_alloc(&ev), 0);
	fmt_test_attr(&attr);
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
	assert_int_equal(hwt_fmt_evlist_add(ev, &attr, sizeof(attr), "cpu-clock", &id, 1), 0);
	assert_int_equal(hwt_fmt_perf_writer_open(&w, f, ev), 0);
	for (int i = 0; i < 400; i++) {
		/* Samples 150-169 are small (no raw data): a run that sends
		 * the pre-scan back to reading in order. */
		size_t n = i >= 150 && i < 170 ? 4 : sizeof(raw);

		rb_begin(&b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
		rb_u64(&b, 0x401000 + (uint64_t)i * 4);
		rb_u32(&b, 4242);
		rb_u32(&b, 4242);
		rb_u64(&b, t++);
		rb_u32(&b, (uint32_t)n);
		rb_bytes(&b, raw, n);
		assert_int_equal(hwt_fmt_perf_writer_record(w, b.buf, rb_end(&b)), 0);
		nsamples++;
		big += n == sizeof(raw);
		if (i == 200) {
			rb_begin(&b, PERF_RECORD_COMM, 0);
			rb_u32(&b, 4242);
			rb_u32(&b, 4242);
			rb_str(&b, "sparse");
			rb_sample_id(&b, attr.sample_type, 4242, 4242, t++, 0, 0);
			assert_int_equal(hwt_fmt_perf_writer_record(w, b.buf, rb_end(&b)), 0);
		}
		if (i % 37 == 36 || i == 399) {
			size_t len = 512 + (size_t)i * 7 % 3000;

			/* A hole after each piece keeps the pieces apart. */
			assert_int_equal(
			    hwt_fmt_perf_writer_auxtrace(w, aux_off, 0, 0, 4242, 0, aux, len), 0);
			aux_off += len + 4096;
			assert_true(naux < HWT_ARRAY_SIZE(lens));
			lens[naux++] = len;
		}
	}
	assert_int_equal(hwt_fmt_perf_writer_close(w), 0);
	/* Larger than the read buffer, so the pre-scan goes sparse. */
	assert_true(big * sizeof(raw) > (2u << 20));

	read_session(f, NULL, &c);
	assert_int_equal(c.samples.n, nsamples);
	for (size_t i = 0; i < c.samples.n; i++)
		assert_int_equal(c.samples.v[i].ip, 0x401000 + i * 4);
	assert_int_equal(c.by_type[PERF_RECORD_COMM], 1);
	assert_int_equal(hwt_fmt_session_open(&s, f, NULL, &off), 0);
	assert_int_equal(hwt_fmt_session_naux(s), 1);
	assert_int_equal(hwt_fmt_session_aux(s, 0)->nsegments, naux);
	for (size_t k = 0; k < naux; k++) {
		const struct hwt_fmt_aux_segment *seg = hwt_fmt_session_aux_segment(s, 0, k);

		/* Each piece: its bytes, then perf's padding to 8. */
		assert_int_equal(seg->size, (lens[k] + 7) / 8 * 8);
		assert_int_equal(hwt_fmt_session_aux_read(s, 0, k, 0, got, lens[k]), lens[k]);
		assert_memory_equal(got, aux, lens[k]);
	}
	hwt_fmt_session_close(s);
	hwt_fmt_evlist_free(ev);
	free(c.samples.v);
}

/* Damaged perf.data: errors with offsets, one CLI line, no crash. */
static void test_perf_corrupt(void **state)
{
	const char *f = path_in("two.data"), *bad = path_in("bad.data"), *pf = path_in("pipe.data");
	struct hwt_fmt_session *s;
	struct hwt_test_run run;
	uint64_t off, data_off, data_size;
	size_t len;
	uint8_t *orig, *b;

	(void)state;
	perf_record("-e cpu-clock,page-faults -c 100000", f, false);
	orig = (uint8_t *)hwt_test_read_file(f, &len);
	b = malloc(len);
	data_off = hwt_le64(orig + 40);
	data_size = hwt_le64(orig + 48);

	/* Cut inside the header, the attrs, the data, the features. */
	{
		const size_t cuts[] = {
		    4,	     60, 103, (size_t)data_off + 12, (size_t)(data_off + data_size / 2),
		    len - 10};

		for (size_t i = 0; i < HWT_ARRAY_SIZE(cuts); i++) {
			int err;

			hwt_test_write_file(bad, orig, cuts[i]);
			err = hwt_fmt_session_open(&s, bad, NULL, &off);
			if (cuts[i] == len - 10) {
				/* Only a feature section is cut: perf warns and so do we. */
				if (err == 0)
					hwt_fmt_session_close(s);
				else
					assert_true(err == -HWT_EFORMAT || err == -HWT_ETRUNC);
				continue;
			}
			assert_true(err == -HWT_ETRUNC || err == -HWT_EFORMAT);
			if (cuts[i] > data_off)
				assert_int_equal(off, cuts[i]); /* where the file ends */
			hwt_test_run(&run, "%s info %s", hwt_test_hwtrace(), bad);
			assert_int_equal(run.status, 1);
			assert_true(hwt_test_contains(run.err, "error:"));
			assert_true(hwt_test_contains(run.err, "offset"));
			hwt_test_run_free(&run);
		}
	}
	/* Header fields that lie. */
	memcpy(b, orig, len);
	hwt_put_le64(b + 16, 3); /* attr_size */
	hwt_test_write_file(bad, b, len);
	assert_int_equal(hwt_fmt_session_open(&s, bad, NULL, &off), -HWT_EFORMAT);
	assert_int_equal(off, 16);
	memcpy(b, orig, len);
	hwt_put_le64(b + 48, UINT64_MAX - 100); /* data size */
	hwt_test_write_file(bad, b, len);
	assert_int_equal(hwt_fmt_session_open(&s, bad, NULL, &off), -HWT_ETRUNC);
	memcpy(b, orig, len);
	hwt_put_le64(b + data_off + data_size, UINT64_MAX / 2); /* first feature's offset */
	hwt_test_write_file(bad, b, len);
	assert_int_equal(hwt_fmt_session_open(&s, bad, NULL, &off), -HWT_EFORMAT);
	assert_int_equal(off, data_off + data_size);
	/* A record whose size is smaller than a header breaks the framing. */
	memcpy(b, orig, len);
	hwt_put_le16(b + data_off + 6, 4);
	hwt_test_write_file(bad, b, len);
	assert_int_equal(hwt_fmt_session_open(&s, bad, NULL, &off), -HWT_EFORMAT);
	assert_int_equal(off, data_off);
	hwt_test_run(&run, "%s info %s", hwt_test_hwtrace(), bad);
	assert_int_equal(run.status, 1);
	{
		char want[64];

		snprintf(want, sizeof(want), "malformed data at offset %llu",
			 (unsigned long long)data_off);
		assert_true(hwt_test_contains(run.err, want));
	}
	hwt_test_run_free(&run);
	/* Big-endian perf.data is refused by name. */
	memcpy(b, orig, len);
	memcpy(b, "2ELIFREP", 8);
	hwt_test_write_file(bad, b, len);
	assert_int_equal(hwt_fmt_session_open(&s, bad, NULL, &off), -HWT_ENOTSUP);
	free(orig);

	/* A pipe recording cut short: readable up to the cut, said so. */
	perf_record("-e cpu-clock,page-faults -c 100000", pf, true);
	orig = (uint8_t *)hwt_test_read_file(pf, &len);
	hwt_test_write_file(bad, orig, len - 5);
	assert_int_equal(hwt_fmt_session_open(&s, bad, NULL, &off), 0);
	assert_non_null(hwt_fmt_session_meta_find(s, "perf.truncated_at"));
	hwt_fmt_session_close(s);
	hwt_test_run(&run, "%s info %s", hwt_test_hwtrace(), bad);
	/* info shows what is intact, then says in one warning (the words of
	 * every command) that the file is cut short; it was read: exit 0. */
	assert_int_equal(run.status, 0);
	assert_true(hwt_test_contains(run.out, "truncated"));
	{
		char want[512];
		const struct hwt_fmt_meta *m;

		assert_int_equal(hwt_fmt_session_open(&s, bad, NULL, &off), 0);
		m = hwt_fmt_session_meta_find(s, "perf.truncated_at");
		snprintf(want, sizeof(want),
			 "hwtrace: warning: %s is cut short: its record at offset %llu is "
			 "incomplete; everything else in it is read\n",
			 bad, (unsigned long long)m->v.u64);
		hwt_fmt_session_close(s);
		assert_string_equal(run.err, want);
	}
	hwt_test_run_free(&run);
	free(orig);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_file_mode),	   cmocka_unit_test(test_callgraph),
	    cmocka_unit_test(test_two_events),	   cmocka_unit_test(test_compressed),
	    cmocka_unit_test(test_pipe_mode),	   cmocka_unit_test(test_intel_pt_testdata),
	    cmocka_unit_test(test_perf_writer),	   cmocka_unit_test(test_perf_corrupt),
	    cmocka_unit_test(test_prescan_sparse),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
