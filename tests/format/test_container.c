/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/format/test_container.c - container round trips: random and
 * realistic record streams (seeded; the seed is printed), AUX offsets and
 * discontinuities, metadata of every type, losses, the writer's queue bound
 * (drops are counted and written, never silent), concurrent producers, and
 * the time-ordered merge of a session over .hwt streams.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/format.h"
#include "tests/format/fmt_testlib.h"
#include "tests/lib/testutil.h"

struct seg {
	uint64_t off;
	struct hwt_buf data;
};

struct exp_stream {
	bool aux;
	int id;
	struct hwt_buf recs; /* records streams */
	struct seg segs[64]; /* aux streams: contiguous runs */
	size_t nsegs;
	uint64_t next_off;
};

static char *tmpfile_in(const char *dir, const char *name)
{
	char *p = malloc(strlen(dir) + strlen(name) + 2);

	assert_non_null(p);
	sprintf(p, "%s/%s", dir, name);
	return p;
}

/* Random records with valid framing and random contents. */
static size_t random_records(uint64_t *rng, uint8_t *buf, size_t cap, int count)
{
	static const uint32_t types[] = {PERF_RECORD_SAMPLE, PERF_RECORD_MMAP2, PERF_RECORD_COMM,
					 200};
	size_t len = 0;

	for (int i = 0; i < count; i++) {
		size_t size = 8 * (1 + hwt_test_rand(rng) % 128);

		if (len + size > cap)
			break;
		for (size_t k = 8; k < size; k++)
			buf[len + k] = (uint8_t)hwt_test_rand(rng);
		hwt_put_le32(buf + len, types[hwt_test_rand(rng) % 4]);
		hwt_put_le16(buf + len + 4, 0);
		hwt_put_le16(buf + len + 6, (uint16_t)size);
		len += size;
	}
	return len;
}

/* Concatenates the payloads of a stream's chunks of one type, checking
 * that every RECORDS chunk holds whole records. */
static void read_stream(const struct hwt_fmt_reader *r, uint32_t stream, struct hwt_buf *out,
			size_t chunk_size)
{
	struct hwt_buf pay;

	hwt_buf_init(&pay);
	for (size_t i = 0; i < hwt_fmt_reader_nchunks(r); i++) {
		const struct hwt_fmt_chunk *c = hwt_fmt_reader_chunk(r, i);
		size_t pos = 0, nrec = 0;

		if (c->stream != stream || c->type != HWT_FMT_CHUNK_RECORDS)
			continue;
		assert_int_equal(hwt_fmt_reader_chunk_load(r, c, &pay), c->raw_size);
		while (pos < pay.len) {
			size_t size = hwt_le16(pay.data + pos + 6);

			assert_true(size >= 8 && size <= pay.len - pos);
			pos += size;
			nrec++;
		}
		/* Never split; over the chunk size only for one big record. */
		assert_int_equal(pos, pay.len);
		assert_true(pay.len <= chunk_size || nrec == 1);
		assert_int_equal(hwt_buf_append(out, pay.data, pay.len), 0);
	}
	hwt_buf_fini(&pay);
}

static void test_random_round_trip(void **state)
{
	static const int levels[] = {0, 1, 3, 9};
	uint64_t rng = hwt_test_seed();
	char *dir = hwt_test_tmpdir();
	char *path = tmpfile_in(dir, "r.hwt");
	uint8_t *buf = malloc(65536);

	(void)state;
	assert_non_null(buf);
	for (int iter = 0; iter < 4; iter++) {
		struct hwt_fmt_writer_config cfg;
		struct hwt_fmt_reader_config rcfg;
		struct hwt_fmt_writer *w;
		struct hwt_fmt_reader *r, *rs;
		struct hwt_fmt_session *s;
		struct hwt_fmt_writer_stats st;
		struct exp_stream ex[5];
		uint64_t off = 0, raw_total = 0;

		hwt_fmt_writer_config_init(&cfg);
		cfg.level = levels[iter];
		cfg.chunk_size = (size_t)4096 << (hwt_test_rand(&rng) % 5);
		cfg.threads = 1 + (unsigned int)(hwt_test_rand(&rng) % 3);
		assert_int_equal(hwt_fmt_writer_open(&w, path, &cfg), 0);
		memset(ex, 0, sizeof(ex));
		for (int k = 0; k < 5; k++) {
			char name[32];

			ex[k].aux = k >= 3;
			snprintf(name, sizeof(name), "%s.%d", ex[k].aux ? "aux" : "rec", k);
			ex[k].id = hwt_fmt_writer_add_stream(
			    w, ex[k].aux ? HWT_FMT_STREAM_AUX : HWT_FMT_STREAM_RECORDS, k, -1,
			    name);
			assert_int_equal(ex[k].id, k);
			hwt_buf_init(&ex[k].recs);
		}
		for (int op = 0; op < 1500; op++) {
			struct exp_stream *e = &ex[hwt_test_rand(&rng) % 5];

			if (!e->aux) {
				size_t n = random_records(&rng, buf, 65536,
							  1 + (int)(hwt_test_rand(&rng) % 6));

				assert_int_equal(hwt_fmt_writer_records(w, (uint32_t)e->id, buf, n),
						 0);
				assert_int_equal(hwt_buf_append(&e->recs, buf, n), 0);
				raw_total += n;
			} else {
				size_t n = 1 + hwt_test_rand(&rng) % 9000;
				struct seg *sg;

				for (size_t k = 0; k < n; k++)
					buf[k] = (uint8_t)(hwt_test_rand(&rng) & 0x1f);
				/* Now and then a gap in AUX offsets. */
				if (e->nsegs == 0 ||
				    (e->nsegs < 64 && hwt_test_rand(&rng) % 20 == 0)) {
					e->next_off +=
					    hwt_test_rand(&rng) % 100000 + (e->nsegs ? 1 : 0);
					sg = &e->segs[e->nsegs++];
					sg->off = e->next_off;
					hwt_buf_init(&sg->data);
				}
				sg = &e->segs[e->nsegs - 1];
				assert_int_equal(
				    hwt_fmt_writer_aux(w, (uint32_t)e->id, e->next_off, buf, n), 0);
				assert_int_equal(hwt_buf_append(&sg->data, buf, n), 0);
				e->next_off += n;
				raw_total += n;
			}
			if (hwt_test_rand(&rng) % 300 == 0)
				assert_int_equal(hwt_fmt_writer_flush(w), 0);
		}
		assert_int_equal(hwt_fmt_writer_meta_u64(w, "test.iter", (uint64_t)iter), 0);
		assert_int_equal(hwt_fmt_writer_flush(w), 0);
		hwt_fmt_writer_stats(w, &st);
		assert_true(st.raw_bytes >= raw_total); /* plus descriptors and metadata */
		assert_int_equal(st.dropped_bytes, 0);
		assert_int_equal(hwt_fmt_writer_close(w), 0);

		hwt_fmt_reader_config_init(&rcfg);
		assert_int_equal(hwt_fmt_reader_open(&r, path, &rcfg, &off), 0);
		assert_true(hwt_fmt_reader_info(r)->indexed);
		assert_false(hwt_fmt_reader_info(r)->truncated);
		assert_int_equal(hwt_fmt_reader_nstreams(r), 5);
		assert_int_equal(hwt_fmt_reader_meta_find(r, "test.iter")->v.u64, (uint64_t)iter);
		assert_true(hwt_fmt_reader_nchunks(r) > 0);
		for (int k = 0; k < 3; k++) {
			struct hwt_buf got;

			hwt_buf_init(&got);
			read_stream(r, (uint32_t)k, &got, cfg.chunk_size);
			assert_int_equal(got.len, ex[k].recs.len);
			assert_memory_equal(got.data, ex[k].recs.data, got.len);
			assert_string_equal(hwt_fmt_reader_stream(r, (size_t)k)->name,
					    k == 0   ? "rec.0"
					    : k == 1 ? "rec.1"
						     : "rec.2");
			hwt_buf_fini(&got);
		}
		/* A scan lists the same chunks as the index. */
		rcfg.scan = true;
		assert_int_equal(hwt_fmt_reader_open(&rs, path, &rcfg, &off), 0);
		assert_false(hwt_fmt_reader_info(rs)->indexed);
		assert_false(hwt_fmt_reader_info(rs)->truncated);
		assert_int_equal(hwt_fmt_reader_nchunks(rs), hwt_fmt_reader_nchunks(r));
		for (size_t i = 0; i < hwt_fmt_reader_nchunks(r); i++)
			assert_memory_equal(hwt_fmt_reader_chunk(rs, i), hwt_fmt_reader_chunk(r, i),
					    sizeof(struct hwt_fmt_chunk));
		hwt_fmt_reader_close(rs);
		hwt_fmt_reader_close(r);

		/* AUX through the session: one segment per contiguous run. */
		assert_int_equal(hwt_fmt_session_open(&s, path, NULL, &off), 0);
		assert_int_equal(hwt_fmt_session_naux(s), 2);
		for (size_t a = 0; a < 2; a++) {
			const struct hwt_fmt_aux_stream *as = hwt_fmt_session_aux(s, a);
			struct exp_stream *e = &ex[3 + a];

			assert_int_equal(as->idx, 3 + a);
			assert_int_equal(as->cpu, 3 + a);
			assert_int_equal(as->nsegments, e->nsegs);
			for (size_t g = 0; g < e->nsegs; g++) {
				const struct hwt_fmt_aux_segment *sg =
				    hwt_fmt_session_aux_segment(s, a, g);
				uint8_t *got = malloc(e->segs[g].data.len + 1);
				uint64_t from = hwt_test_rand(&rng) % (e->segs[g].data.len + 1);

				assert_int_equal(sg->aux_offset, e->segs[g].off);
				assert_int_equal(sg->size, e->segs[g].data.len);
				assert_int_equal(
				    hwt_fmt_session_aux_read(s, a, g, 0, got, sg->size), sg->size);
				assert_memory_equal(got, e->segs[g].data.data, sg->size);
				/* A random tail, crossing chunk boundaries. */
				assert_int_equal(
				    hwt_fmt_session_aux_read(s, a, g, from, got, sg->size),
				    sg->size - from);
				assert_memory_equal(got, e->segs[g].data.data + from,
						    sg->size - from);
				free(got);
				hwt_buf_fini(&e->segs[g].data);
			}
		}
		hwt_fmt_session_close(s);
		for (int k = 0; k < 5; k++)
			hwt_buf_fini(&ex[k].recs);
	}
	free(buf);
	free(path);
	hwt_test_tmpdir_remove(dir);
}

/* Four CPUs' sideband and samples, times increasing per CPU and
 * interleaved across CPUs: the session must merge them in time order and
 * keep each CPU's own order. */
static void test_session_merge(void **state)
{
	uint64_t rng = hwt_test_seed();
	char *dir = hwt_test_tmpdir();
	char *path = tmpfile_in(dir, "m.hwt");
	struct hwt_fmt_writer_config cfg;
	struct hwt_fmt_writer *w;
	struct hwt_fmt_session *s;
	struct hwt_fmt_session_stats st;
	struct hwt_fmt_record rec;
	struct perf_event_attr attr;
	struct hwt_buf exp[4];
	size_t pos[4] = {0}, total = 0;
	uint64_t t[4] = {0}, ids[4] = {100, 101, 102, 103}, off, last = 0;
	uint8_t idb[32];
	struct rb b;

	(void)state;
	hwt_fmt_writer_config_init(&cfg);
	cfg.chunk_size = 8192;
	cfg.threads = 2;
	assert_int_equal(hwt_fmt_writer_open(&w, path, &cfg), 0);
	fmt_test_attr(&attr);
	for (int i = 0; i < 4; i++)
		hwt_put_le64(idb + 8 * i, ids[i]);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, HWT_META_EVENT_COUNT, 1), 0);
	assert_int_equal(hwt_fmt_writer_meta_bytes(w, "event.0.attr", &attr, sizeof(attr)), 0);
	assert_int_equal(hwt_fmt_writer_meta_str(w, "event.0.name", "cpu-clock"), 0);
	assert_int_equal(hwt_fmt_writer_meta_bytes(w, "event.0.ids", idb, sizeof(idb)), 0);
	for (int c = 0; c < 4; c++) {
		assert_int_equal(hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, c, -1, "sb"),
				 c);
		hwt_buf_init(&exp[c]);
	}
	for (int i = 0; i < 20000; i++) {
		int c = (int)(hwt_test_rand(&rng) % 4);
		uint64_t r = hwt_test_rand(&rng) % 100;
		size_t n;

		t[c] += 1 + hwt_test_rand(&rng) % 5000;
		if (r < 2)
			n = rb_comm(&b, 1000 + (uint32_t)c, 1000 + (uint32_t)c, "worker", t[c],
				    ids[c], (uint32_t)c);
		else if (r < 4)
			n = rb_mmap2(&b, 1000, 1000, 0x400000 + (uint64_t)i * 4096, 4096, 0,
				     "/usr/lib/libfoo.so", t[c], ids[c], (uint32_t)c);
		else
			n = rb_sample(&b, 0x401000 + hwt_test_rand(&rng) % 4096, 1000,
				      1000 + (uint32_t)c, t[c], ids[c], (uint32_t)c, 100000);
		assert_int_equal(hwt_fmt_writer_records(w, (uint32_t)c, b.buf, n), 0);
		assert_int_equal(hwt_buf_append(&exp[c], b.buf, n), 0);
		total++;
	}
	assert_int_equal(hwt_fmt_writer_close(w), 0);

	assert_int_equal(hwt_fmt_session_open(&s, path, NULL, &off), 0);
	assert_int_equal(hwt_fmt_session_kind(s), HWT_FMT_KIND_HWT);
	assert_int_equal(hwt_fmt_evlist_count(hwt_fmt_session_evlist(s)), 1);
	assert_string_equal(hwt_fmt_evlist_event(hwt_fmt_session_evlist(s), 0)->name, "cpu-clock");
	for (int pass = 0; pass < 2; pass++) {
		size_t n = 0;
		int err;

		memset(pos, 0, sizeof(pos));
		last = 0;
		while ((err = hwt_fmt_session_next(s, &rec, &off)) == 0) {
			uint32_t c = rec.id.cpu;

			assert_true(c < 4);
			assert_true(rec.id.time >= last);
			last = rec.id.time;
			assert_int_equal(rec.event, 0);
			/* Exactly the next record of that CPU's stream. */
			assert_true(pos[c] + rec.size <= exp[c].len);
			assert_memory_equal(rec.raw, exp[c].data + pos[c], rec.size);
			pos[c] += rec.size;
			n++;
		}
		assert_int_equal(err, -HWT_EEOS);
		assert_int_equal(n, total);
		for (int c = 0; c < 4; c++)
			assert_int_equal(pos[c], exp[c].len);
		hwt_fmt_session_stats(s, &st);
		assert_int_equal(st.records, total);
		assert_int_equal(st.bad_records, 0);
		assert_int_equal(hwt_fmt_session_rewind(s), 0);
	}
	hwt_fmt_session_close(s);
	for (int c = 0; c < 4; c++)
		hwt_buf_fini(&exp[c]);
	free(path);
	hwt_test_tmpdir_remove(dir);
}

static void test_aux_discontinuity(void **state)
{
	char *dir = hwt_test_tmpdir();
	char *path = tmpfile_in(dir, "a.hwt");
	struct hwt_fmt_writer_config cfg;
	struct hwt_fmt_writer *w;
	struct hwt_fmt_reader *r;
	struct hwt_fmt_session *s;
	static uint8_t data[20000], got[20000];
	static const uint64_t exp_off[] = {0, 4096, 10000, 14096};
	static const uint32_t exp_raw[] = {4096, 1904, 4096, 914};
	size_t k = 0;
	uint64_t off;

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + (i >> 8));
	hwt_fmt_writer_config_init(&cfg);
	cfg.chunk_size = 4096;
	assert_int_equal(hwt_fmt_writer_open(&w, path, &cfg), 0);
	assert_int_equal(hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_AUX, 2, -1, "pt.cpu2"), 0);
	assert_int_equal(hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, 2, -1, "sb"), 1);
	/* Wrong kinds and unknown streams are refused. */
	assert_int_equal(hwt_fmt_writer_aux(w, 1, 0, data, 10), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_writer_records(w, 0, data, 0), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_writer_aux(w, 9, 0, data, 10), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_writer_aux(w, 0, 0, data, 3000), 0);
	assert_int_equal(hwt_fmt_writer_aux(w, 0, 3000, data + 3000, 3000), 0);
	assert_int_equal(hwt_fmt_writer_aux(w, 0, 10000, data + 10000, 5000), 0); /* gap */
	assert_int_equal(hwt_fmt_writer_aux(w, 0, 15000, data + 15000, 10), 0);
	assert_int_equal(hwt_fmt_writer_close(w), 0);

	assert_int_equal(hwt_fmt_reader_open(&r, path, NULL, &off), 0);
	for (size_t i = 0; i < hwt_fmt_reader_nchunks(r); i++) {
		const struct hwt_fmt_chunk *c = hwt_fmt_reader_chunk(r, i);

		if (c->type != HWT_FMT_CHUNK_AUX)
			continue;
		assert_true(k < 4);
		assert_int_equal(c->stream, 0);
		assert_int_equal(c->aux_offset, exp_off[k]);
		assert_int_equal(c->raw_size, exp_raw[k]);
		/* Reading needs room for the whole payload. */
		assert_int_equal(hwt_fmt_reader_chunk_read(r, c, got, c->raw_size - 1),
				 -HWT_ETOOBIG);
		assert_int_equal(hwt_fmt_reader_chunk_read(r, c, got, sizeof(got)), c->raw_size);
		assert_memory_equal(got, data + c->aux_offset, c->raw_size);
		k++;
	}
	assert_int_equal(k, 4);
	hwt_fmt_reader_close(r);

	assert_int_equal(hwt_fmt_session_open(&s, path, NULL, &off), 0);
	assert_int_equal(hwt_fmt_session_naux(s), 1);
	assert_int_equal(hwt_fmt_session_aux(s, 0)->nsegments, 2);
	assert_int_equal(hwt_fmt_session_aux(s, 0)->cpu, 2);
	assert_int_equal(hwt_fmt_session_aux_segment(s, 0, 0)->aux_offset, 0);
	assert_int_equal(hwt_fmt_session_aux_segment(s, 0, 0)->size, 6000);
	assert_int_equal(hwt_fmt_session_aux_segment(s, 0, 1)->aux_offset, 10000);
	assert_int_equal(hwt_fmt_session_aux_segment(s, 0, 1)->size, 5010);
	assert_null(hwt_fmt_session_aux_segment(s, 0, 2));
	/* Across the chunk boundary at 4096, and clamped at the end. */
	assert_int_equal(hwt_fmt_session_aux_read(s, 0, 0, 4000, got, 200), 200);
	assert_memory_equal(got, data + 4000, 200);
	assert_int_equal(hwt_fmt_session_aux_read(s, 0, 1, 4000, got, 5000), 1010);
	assert_memory_equal(got, data + 14000, 1010);
	assert_int_equal(hwt_fmt_session_aux_read(s, 0, 1, 6000, got, 1), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_session_aux_read(s, 1, 0, 0, got, 1), -HWT_EINVAL);
	hwt_fmt_session_close(s);
	free(path);
	hwt_test_tmpdir_remove(dir);
}

static void test_metadata_types(void **state)
{
	char *dir = hwt_test_tmpdir();
	char *path = tmpfile_in(dir, "meta.hwt");
	char longkey[1100];
	struct hwt_fmt_writer *w;
	struct hwt_fmt_reader *r;
	const struct hwt_fmt_meta *m;
	uint8_t *big = malloc(1 << 20);
	uint64_t off;

	(void)state;
	assert_non_null(big);
	for (size_t i = 0; i < (1 << 20); i++)
		big[i] = (uint8_t)(i % 251);
	assert_int_equal(hwt_fmt_writer_open(&w, path, NULL), 0);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, HWT_META_CPU_FAMILY, 6), 0);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, "u64.max", UINT64_MAX), 0);
	assert_int_equal(hwt_fmt_writer_meta_i64(w, "i64.neg", -1234567890123ll), 0);
	assert_int_equal(hwt_fmt_writer_meta_str(w, HWT_META_HOST, "box"), 0);
	assert_int_equal(hwt_fmt_writer_meta_str(w, "str.empty", ""), 0);
	assert_int_equal(hwt_fmt_writer_meta_str(w, "str.utf8", "caf\xc3\xa9 \xe2\x9c\x93"), 0);
	assert_int_equal(hwt_fmt_writer_meta_bytes(w, "bytes.empty", NULL, 0), 0);
	assert_int_equal(hwt_fmt_writer_meta_bytes(w, HWT_META_VDSO_IMAGE, big, 1 << 20), 0);
	assert_int_equal(hwt_fmt_writer_meta_str(w, HWT_META_HOST, "box2"), 0); /* replaces */
	assert_int_equal(hwt_fmt_writer_flush(w), 0);
	/* Written after a flush: a second META chunk. */
	assert_int_equal(hwt_fmt_writer_meta_u64(w, HWT_META_CPU_FAMILY, 25), 0);
	/* Refused: no key, an over-long key, a NULL string, over 64 MiB. */
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	assert_int_equal(hwt_fmt_writer_meta_u64(w, NULL, 1), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, "", 1), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_writer_meta_u64(w, longkey, 1), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_writer_meta_str(w, "x", NULL), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_writer_meta_bytes(w, "x", big, (64u << 20) + 1), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_writer_close(w), 0);

	assert_int_equal(hwt_fmt_reader_open(&r, path, NULL, &off), 0);
	assert_int_equal(hwt_fmt_reader_nmeta(r), 8); /* distinct keys */
	m = hwt_fmt_reader_meta_find(r, HWT_META_CPU_FAMILY);
	assert_int_equal(m->type, HWT_FMT_META_U64);
	assert_int_equal(m->len, 8);
	assert_int_equal(m->v.u64, 25);
	assert_int_equal(hwt_fmt_reader_meta_find(r, "u64.max")->v.u64, UINT64_MAX);
	m = hwt_fmt_reader_meta_find(r, "i64.neg");
	assert_int_equal(m->type, HWT_FMT_META_I64);
	assert_true(m->v.i64 == -1234567890123ll);
	m = hwt_fmt_reader_meta_find(r, HWT_META_HOST);
	assert_int_equal(m->type, HWT_FMT_META_STR);
	assert_string_equal(m->v.str, "box2");
	assert_int_equal(m->len, 4);
	assert_string_equal(hwt_fmt_reader_meta_find(r, "str.empty")->v.str, "");
	assert_string_equal(hwt_fmt_reader_meta_find(r, "str.utf8")->v.str,
			    "caf\xc3\xa9 \xe2\x9c\x93");
	m = hwt_fmt_reader_meta_find(r, "bytes.empty");
	assert_int_equal(m->type, HWT_FMT_META_BYTES);
	assert_int_equal(m->len, 0);
	m = hwt_fmt_reader_meta_find(r, HWT_META_VDSO_IMAGE);
	assert_int_equal(m->len, 1 << 20);
	assert_memory_equal(m->v.bytes, big, 1 << 20);
	assert_null(hwt_fmt_reader_meta_find(r, "nope"));
	assert_null(hwt_fmt_reader_meta_find(r, NULL));
	assert_null(hwt_fmt_reader_meta(r, 8));
	assert_string_equal(hwt_fmt_reader_meta(r, 0)->key, HWT_META_CPU_FAMILY);
	hwt_fmt_reader_close(r);
	free(big);
	free(path);
	hwt_test_tmpdir_remove(dir);
}

static void test_lost_and_errors(void **state)
{
	char *dir = hwt_test_tmpdir();
	char *path = tmpfile_in(dir, "l.hwt");
	struct hwt_fmt_writer_config cfg;
	struct hwt_fmt_writer *w;
	struct hwt_fmt_reader *r;
	uint64_t off, sum_rec = 0, sum_file = 0;
	struct stat st;
	struct rb b;

	(void)state;
	/* Bad configs. */
	hwt_fmt_writer_config_init(&cfg);
	cfg.level = 100;
	assert_int_equal(hwt_fmt_writer_open(&w, path, &cfg), -HWT_EINVAL);
	hwt_fmt_writer_config_init(&cfg);
	cfg.chunk_size = 100;
	assert_int_equal(hwt_fmt_writer_open(&w, path, &cfg), -HWT_EINVAL);
	cfg.size = 4;
	assert_int_equal(hwt_fmt_writer_open(&w, path, &cfg), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_writer_open(&w, "/nonexistent-dir/x.hwt", NULL), -ENOENT);
	assert_int_equal(hwt_fmt_writer_close(NULL), 0);

	/* An existing world-readable file becomes private. */
	hwt_test_write_file(path, "old", 3);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(hwt_fmt_writer_open(&w, path, NULL), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, 0, -1, "s"), 0);
	assert_int_equal(hwt_fmt_writer_add_stream(w, 7, 0, -1, "s"), -HWT_EINVAL);
	/* Broken framing is refused whole. */
	rb_sample(&b, 1, 2, 3, 4, 5, 0, 6);
	assert_int_equal(hwt_fmt_writer_records(w, 0, b.buf, b.len - 1), -HWT_EINVAL);
	hwt_put_le16(b.buf + 6, 4);
	assert_int_equal(hwt_fmt_writer_records(w, 0, b.buf, b.len), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_writer_records(w, 3, b.buf, 0), -HWT_EINVAL);
	for (int i = 1; i <= 5; i++) {
		assert_int_equal(hwt_fmt_writer_lost(w, 0, HWT_FMT_LOST_RECORDS, (uint64_t)i), 0);
		sum_rec += (uint64_t)i;
		if (i == 3)
			assert_int_equal(hwt_fmt_writer_flush(w), 0); /* two LOST chunks */
	}
	assert_int_equal(hwt_fmt_writer_lost(w, UINT32_MAX, HWT_FMT_LOST_AUX, 4096), 0);
	sum_file += 4096;
	assert_int_equal(hwt_fmt_writer_lost(w, 0, 99, 1), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_writer_lost(w, 5, HWT_FMT_LOST_RECORDS, 1), -HWT_EINVAL);
	assert_int_equal(hwt_fmt_writer_close(w), 0);

	assert_int_equal(hwt_fmt_reader_open(&r, path, NULL, &off), 0);
	assert_int_equal(hwt_fmt_reader_nlost(r), 2);
	for (size_t i = 0; i < 2; i++) {
		const struct hwt_fmt_lost *l = hwt_fmt_reader_lost(r, i);

		if (l->stream == 0) {
			assert_int_equal(l->kind, HWT_FMT_LOST_RECORDS);
			assert_int_equal(l->amount, sum_rec);
		} else {
			assert_int_equal(l->stream, UINT32_MAX);
			assert_int_equal(l->kind, HWT_FMT_LOST_AUX);
			assert_int_equal(l->amount, sum_file);
		}
	}
	hwt_fmt_reader_close(r);
	assert_int_equal(hwt_fmt_reader_open(&r, "/nonexistent", NULL, &off), -ENOENT);
	assert_int_equal(hwt_fmt_reader_open(&r, dir, NULL, &off), -HWT_EINVAL);
	free(path);
	hwt_test_tmpdir_remove(dir);
}

/* A big record gets a chunk of its own; records and a flush from several
 * threads at once all arrive, each stream in its own order. */
struct prod {
	struct hwt_fmt_writer *w;
	int stream;
	int n;
};

static void *producer(void *arg)
{
	struct prod *p = arg;
	struct rb b;

	for (int i = 0; i < p->n; i++) {
		size_t n = rb_sample(&b, (uint64_t)i, 1, (uint32_t)p->stream, (uint64_t)i, 0,
				     (uint32_t)p->stream, 1);

		if (hwt_fmt_writer_records(p->w, (uint32_t)p->stream, b.buf, n) != 0)
			return (void *)1;
		if (i % 5000 == 0 && hwt_fmt_writer_flush(p->w) != 0)
			return (void *)1;
	}
	return NULL;
}

static void test_threads_and_big_records(void **state)
{
	char *dir = hwt_test_tmpdir();
	char *path = tmpfile_in(dir, "t.hwt");
	struct hwt_fmt_writer_config cfg;
	struct hwt_fmt_writer *w;
	struct hwt_fmt_reader *r;
	struct hwt_fmt_writer_stats st;
	struct prod pr[4];
	pthread_t th[4];
	struct rb big;
	struct hwt_buf got;
	uint64_t off;

	(void)state;
	hwt_fmt_writer_config_init(&cfg);
	cfg.chunk_size = 4096;
	cfg.threads = 3;
	assert_int_equal(hwt_fmt_writer_open(&w, path, &cfg), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, i, -1, "p"),
				 i);
	/* 60 KiB record into 4 KiB chunks. */
	rb_begin(&big, 200, 0);
	for (int i = 0; i < 7600; i++)
		rb_u64(&big, (uint64_t)i);
	rb_end(&big);
	assert_int_equal(hwt_fmt_writer_records(w, 4, big.buf, big.len), 0);
	for (int i = 0; i < 4; i++) {
		pr[i].w = w;
		pr[i].stream = i;
		pr[i].n = 20000;
		assert_int_equal(pthread_create(&th[i], NULL, producer, &pr[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		void *ret;

		assert_int_equal(pthread_join(th[i], &ret), 0);
		assert_null(ret);
	}
	hwt_fmt_writer_stats(w, &st);
	assert_true(st.queue_high_water > 0);
	assert_int_equal(hwt_fmt_writer_close(w), 0);

	assert_int_equal(hwt_fmt_reader_open(&r, path, NULL, &off), 0);
	for (int s = 0; s < 4; s++) {
		size_t pos = 0;
		uint64_t i = 0;

		hwt_buf_init(&got);
		read_stream(r, (uint32_t)s, &got, cfg.chunk_size);
		for (; pos < got.len; i++) {
			struct hwt_fmt_attr_info info = {.sample_type = FMT_TEST_SAMPLE_TYPE};
			struct hwt_fmt_record rec;

			assert_int_equal(
			    hwt_fmt_record_parse(&info, got.data + pos, got.len - pos, &rec), 0);
			assert_int_equal(rec.u.sample.ip, i);
			assert_int_equal(rec.u.sample.tid, (uint32_t)s);
			pos += rec.size;
		}
		assert_int_equal(i, 20000);
		hwt_buf_fini(&got);
	}
	hwt_buf_init(&got);
	read_stream(r, 4, &got, cfg.chunk_size);
	assert_int_equal(got.len, big.len);
	assert_memory_equal(got.data, big.buf, big.len);
	hwt_buf_fini(&got);
	hwt_fmt_reader_close(r);
	free(path);
	hwt_test_tmpdir_remove(dir);
}

/* A queue too small for the producer: the writer drops instead of
 * blocking, says so, and writes the loss into the file. What each call
 * accepted arrives, in order. */
static void test_queue_full_drops(void **state)
{
	char *dir = hwt_test_tmpdir();
	char *path = tmpfile_in(dir, "d.hwt");
	struct hwt_fmt_writer_config cfg;
	struct hwt_fmt_writer *w;
	struct hwt_fmt_reader *r;
	struct hwt_fmt_writer_stats st;
	struct hwt_buf accepted, got;
	uint64_t rng = 12345, dropped = 0, off;
	struct rb b;
	int ndrop = 0;

	(void)state;
	hwt_fmt_writer_config_init(&cfg);
	cfg.level = 12;		    /* slow compression ... */
	cfg.chunk_size = 4u << 20;  /* ... of big chunks ... */
	cfg.queue_bytes = 4u << 20; /* ... behind a one-chunk queue ... */
	cfg.wait_ms = 0;	    /* ... and no patience */
	assert_int_equal(hwt_fmt_writer_open(&w, path, &cfg), 0);
	assert_int_equal(hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, 0, -1, "s"), 0);
	hwt_buf_init(&accepted);
	for (int i = 0; i < 4 * 4096; i++) {
		int err;

		/* 1 KiB records, compressible but not trivially. */
		rb_begin(&b, 200, 0);
		for (int k = 0; k < 127; k++)
			rb_u64(&b, hwt_test_rand(&rng) % 16);
		rb_end(&b);
		err = hwt_fmt_writer_records(w, 0, b.buf, b.len);
		if (err == 0) {
			assert_int_equal(hwt_buf_append(&accepted, b.buf, b.len), 0);
		} else {
			assert_int_equal(err, -HWT_EDROPPED);
			dropped += b.len;
			ndrop++;
		}
	}
	hwt_fmt_writer_stats(w, &st);
	assert_true(ndrop > 0);
	assert_int_equal(st.dropped_bytes, dropped);
	assert_int_equal(hwt_fmt_writer_close(w), 0);

	assert_int_equal(hwt_fmt_reader_open(&r, path, NULL, &off), 0);
	assert_int_equal(hwt_fmt_reader_nlost(r), 1);
	assert_int_equal(hwt_fmt_reader_lost(r, 0)->kind, HWT_FMT_LOST_WRITER);
	assert_int_equal(hwt_fmt_reader_lost(r, 0)->stream, 0);
	assert_int_equal(hwt_fmt_reader_lost(r, 0)->amount, dropped);
	hwt_buf_init(&got);
	read_stream(r, 0, &got, cfg.chunk_size);
	assert_int_equal(got.len, accepted.len);
	assert_memory_equal(got.data, accepted.data, got.len);
	hwt_buf_fini(&got);
	hwt_buf_fini(&accepted);
	hwt_fmt_reader_close(r);
	free(path);
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_round_trip),
	    cmocka_unit_test(test_session_merge),
	    cmocka_unit_test(test_aux_discontinuity),
	    cmocka_unit_test(test_metadata_types),
	    cmocka_unit_test(test_lost_and_errors),
	    cmocka_unit_test(test_threads_and_big_records),
	    cmocka_unit_test(test_queue_full_drops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
