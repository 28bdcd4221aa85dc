/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/format/test_kill.c - crash safety: a child process writes a
 * container (records from a deterministic generator, AUX bytes, flushes)
 * and is killed with SIGKILL at a random moment. The file it leaves must
 * open (by scanning: there is no index), every complete chunk must read
 * back exactly what was written (each stream a prefix of the generated
 * sequence), and `hwtrace info` must work on it (exit 0, says scanned).
 *
 * Bounded loss: writers that never flush (the flusher thread does it by
 * age, format.h flush_ms) are killed at several moments; everything they
 * handed to the writer longer ago than the flush interval is in the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "format/format.h"
#include "tests/format/fmt_testlib.h"
#include "tests/lib/testutil.h"

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* Record i of stream s: a size and contents that depend only on them. */
static size_t gen_record(uint64_t seed, int s, uint64_t i, struct rb *b)
{
	uint64_t h = mix(seed ^ mix((uint64_t)s << 48 ^ i));
	size_t words = 1 + h % 40;

	rb_begin(b, 200, (uint16_t)s);
	rb_u64(b, i);
	for (size_t k = 0; k < words; k++)
		rb_u64(b, mix(h + k));
	return rb_end(b);
}

static uint8_t gen_aux(uint64_t seed, uint64_t off)
{
	return (uint8_t)(mix(seed ^ (off >> 6)) >> (off & 63));
}

/* Iteration i of a child: record i of streams 0 and 1, and the AUX bytes
 * of i (exits with 3 or 4 when the writer refuses them). */
static void write_iteration(struct hwt_fmt_writer *w, uint64_t seed, uint64_t i)
{
	uint8_t aux[1000];
	struct rb b;

	for (int s = 0; s < 2; s++) {
		size_t n = gen_record(seed, s, i, &b);

		if (hwt_fmt_writer_records(w, (uint32_t)s, b.buf, n) != 0)
			_exit(3);
	}
	for (size_t k = 0; k < sizeof(aux); k++)
		aux[k] = gen_aux(seed, i * sizeof(aux) + k);
	if (hwt_fmt_writer_aux(w, 2, i * sizeof(aux), aux, sizeof(aux)) != 0)
		_exit(4);
}

/* The child: writes until killed (or for 20 s at most). */
static void child(const char *path, uint64_t seed, int ready)
{
	struct hwt_fmt_writer_config cfg;
	struct hwt_fmt_writer *w;
	time_t start = time(NULL);

	hwt_fmt_writer_config_init(&cfg);
	cfg.level = 1;
	cfg.chunk_size = 16384;
	cfg.threads = 2;
	if (hwt_fmt_writer_open(&w, path, &cfg) != 0 ||
	    hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, 0, -1, "sb0") != 0 ||
	    hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, 1, -1, "sb1") != 1 ||
	    hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_AUX, 0, -1, "pt.cpu0") != 2 ||
	    hwt_fmt_writer_meta_str(w, HWT_META_HOST, "killed") != 0 ||
	    hwt_fmt_writer_flush(w) != 0)
		_exit(2);
	/* The header, descriptors and metadata are on disk: tell the parent. */
	if (write(ready, "r", 1) != 1)
		_exit(2);
	for (uint64_t i = 0; time(NULL) - start < 20; i++) {
		write_iteration(w, seed, i);
		if (i % 64 == 63 && hwt_fmt_writer_flush(w) != 0)
			_exit(5);
	}
	_exit(6); /* never killed: the parent did not do its part */
}

/* Checks the file a killed child left: every complete chunk reads back a
 * prefix of the generated streams. Returns the records of stream 0 and the
 * AUX bytes found. */
static void check_file(const char *path, uint64_t seed, bool *saw_truncated, uint64_t *records,
		       uint64_t *aux_bytes)
{
	struct hwt_fmt_reader *r;
	struct hwt_fmt_file_info info;
	const struct hwt_fmt_file_info *fi = &info;
	struct hwt_buf pay;
	struct hwt_test_run run;
	uint64_t next[2] = {0, 0}, aux_next = 0, off = 0;
	struct rb b;

	assert_int_equal(hwt_fmt_reader_open(&r, path, NULL, &off), 0);
	info = *hwt_fmt_reader_info(r); /* outlives the reader */
	assert_false(fi->indexed);
	assert_true(fi->valid_end <= fi->file_size);
	assert_int_equal(fi->truncated, fi->valid_end != fi->file_size);
	*saw_truncated |= fi->truncated;
	assert_string_equal(hwt_fmt_reader_meta_find(r, HWT_META_HOST)->v.str, "killed");
	hwt_buf_init(&pay);
	for (size_t i = 0; i < hwt_fmt_reader_nchunks(r); i++) {
		const struct hwt_fmt_chunk *c = hwt_fmt_reader_chunk(r, i);

		assert_true(c->file_offset + HWT_FMT_CHUNK_HEADER_SIZE + c->comp_size <=
			    fi->valid_end);
		assert_int_equal(hwt_fmt_reader_chunk_load(r, c, &pay), c->raw_size);
		if (c->type == HWT_FMT_CHUNK_RECORDS) {
			assert_true(c->stream < 2);
			for (size_t pos = 0; pos < pay.len;) {
				size_t n = gen_record(seed, (int)c->stream, next[c->stream], &b);

				assert_true(pos + n <= pay.len);
				assert_memory_equal(pay.data + pos, b.buf, n);
				pos += n;
				next[c->stream]++;
			}
		} else if (c->type == HWT_FMT_CHUNK_AUX) {
			assert_int_equal(c->aux_offset, aux_next);
			for (size_t k = 0; k < pay.len; k++)
				assert_int_equal(pay.data[k], gen_aux(seed, aux_next + k));
			aux_next += pay.len;
		}
	}
	hwt_buf_fini(&pay);
	hwt_fmt_reader_close(r);

	hwt_test_run(&run, "%s info %s", hwt_test_hwtrace(), path);
	/* The summary of what is intact and one warning: the recording did
	 * not end cleanly (and where it is cut, inside a chunk). */
	assert_int_equal(run.status, 0);
	assert_true(hwt_test_contains(run.out, "scanned"));
	assert_true(hwt_test_contains(run.err, "warning: ") &&
		    hwt_test_contains(run.err, " did not end cleanly ("));
	assert_int_equal(hwt_test_contains(run.err, "it ends inside a chunk at offset"),
			 fi->truncated);
	if (fi->truncated) {
		char want[64];

		snprintf(want, sizeof(want), "truncated at offset %llu",
			 (unsigned long long)fi->valid_end);
		assert_true(hwt_test_contains(run.out, want));
	}
	hwt_test_run_free(&run);
	fprintf(stderr, "killed writer: %llu+%llu records, %llu AUX bytes, %s\n",
		(unsigned long long)next[0], (unsigned long long)next[1],
		(unsigned long long)aux_next, fi->truncated ? "truncated" : "clean chunk boundary");
	if (records)
		*records = next[0];
	if (aux_bytes)
		*aux_bytes = aux_next;
}

static void test_killed_writer(void **state)
{
	uint64_t rng = hwt_test_seed();
	char *dir = hwt_test_tmpdir();
	char path[4096];
	bool saw_truncated = false;

	(void)state;
	for (int iter = 0; iter < 6; iter++) {
		uint64_t seed = hwt_test_rand(&rng);
		struct timespec ts;
		int status, fds[2];
		pid_t pid;
		char c;

		snprintf(path, sizeof(path), "%s/k%d.hwt", dir, iter);
		assert_int_equal(pipe(fds), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			child(path, seed, fds[1]);
		}
		close(fds[1]);
		assert_int_equal(read(fds[0], &c, 1), 1);
		close(fds[0]);
		ts.tv_sec = 0;
		ts.tv_nsec = (long)(30 + hwt_test_rand(&rng) % 150) * 1000000L;
		nanosleep(&ts, NULL);
		assert_int_equal(kill(pid, SIGKILL), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		/* Killed, not exited on its own: an exit code means it failed. */
		assert_true(WIFSIGNALED(status));
		check_file(path, seed, &saw_truncated, NULL, NULL);
	}
	fprintf(stderr, "saw a truncated chunk: %s\n", saw_truncated ? "yes" : "no");
	hwt_test_tmpdir_remove(dir);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A writer with the default flush interval that never flushes: iteration
 * i writes record i of streams 0 and 1 and 1000 AUX bytes, then tells the
 * parent when it was done (8 bytes on times), every 2 ms. */
static void paced_child(const char *path, uint64_t seed, int times)
{
	struct hwt_fmt_writer *w;

	if (hwt_fmt_writer_open(&w, path, NULL) != 0 ||
	    hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, 0, -1, "sb0") != 0 ||
	    hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, 1, -1, "sb1") != 1 ||
	    hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_AUX, 0, -1, "pt.cpu0") != 2 ||
	    hwt_fmt_writer_meta_str(w, HWT_META_HOST, "killed") != 0)
		_exit(2);
	for (uint64_t i = 0; i < 20000; i++) {
		uint64_t t;

		write_iteration(w, seed, i);
		t = now_ns();
		if (write(times, &t, sizeof(t)) != (ssize_t)sizeof(t))
			_exit(5);
		usleep(2000);
	}
	_exit(6); /* never killed: the parent did not do its part */
}

static void test_bounded_loss(void **state)
{
	static const unsigned kill_ms[] = {1500, 2500, 3500};
	enum { N = 3 };
	uint64_t rng = hwt_test_seed(), seed[N], t0, killed_at[N];
	char *dir = hwt_test_tmpdir();
	char path[N][4096];
	bool saw_truncated = false;
	int times[N];
	pid_t pid[N];

	(void)state;
	t0 = now_ns();
	for (int i = 0; i < N; i++) {
		int fds[2];

		seed[i] = hwt_test_rand(&rng);
		snprintf(path[i], sizeof(path[i]), "%s/b%d.hwt", dir, i);
		assert_int_equal(pipe(fds), 0);
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			close(fds[0]);
			paced_child(path[i], seed[i], fds[1]);
		}
		close(fds[1]);
		times[i] = fds[0];
	}
	for (int i = 0; i < N; i++) {
		uint64_t at = t0 + (uint64_t)kill_ms[i] * 1000000ull, now = now_ns();
		int status;

		if (at > now)
			usleep((useconds_t)((at - now) / 1000));
		killed_at[i] = now_ns();
		assert_int_equal(kill(pid[i], SIGKILL), 0);
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		assert_true(WIFSIGNALED(status));
	}
	for (int i = 0; i < N; i++) {
		uint64_t records = 0, aux_bytes = 0, t, due = 0;

		/* The iterations the writer had taken a flush interval (1 s)
		 * before the kill. */
		while (read(times[i], &t, sizeof(t)) == (ssize_t)sizeof(t))
			due += t + 1000000000ull <= killed_at[i];
		close(times[i]);
		check_file(path[i], seed[i], &saw_truncated, &records, &aux_bytes);
		fprintf(stderr, "killed after %u ms: %llu iterations were older than 1 s\n",
			kill_ms[i], (unsigned long long)due);
		assert_true(due > 0);
		assert_true(records >= due);
		assert_true(aux_bytes >= due * 1000);
	}
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_killed_writer),
	    cmocka_unit_test(test_bounded_loss),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
