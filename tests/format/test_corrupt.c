/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/format/test_corrupt.c - damaged containers: truncation at every
 * chunk boundary and inside headers and payloads, a flipped bit in every
 * header byte and in payloads, bad versions, huge or inconsistent lengths
 * (with the CRCs made to match, so the checks behind them are reached),
 * and damaged indexes. Each gives the right error code and file offset from
 * the API, and `hwtrace info` gives exactly one line in the words every
 * command uses (format/damage.c): an error and exit 1 when nothing could be
 * read, else a warning after showing what is intact, and exit 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/format.h"
#include "tests/format/fmt_testlib.h"
#include "tests/lib/testutil.h"

struct ref {
	char *dir, *path, *work;
	uint8_t *bytes;
	size_t size;
	size_t nchunks;
	struct hwt_fmt_chunk chunks[64];
	struct hwt_buf payload[64];
	uint64_t index_off; /* index chunk header */
};

static struct ref R;

/* A closed container with metadata, two record streams, AUX and losses,
 * in small chunks so that there are many boundaries. */
static int setup(void **state)
{
	struct hwt_fmt_writer_config cfg;
	struct hwt_fmt_writer *w;
	struct hwt_fmt_reader *r;
	struct perf_event_attr attr;
	uint8_t aux[3000];
	uint64_t off;
	struct rb b;

	(void)state;
	memset(&R, 0, sizeof(R));
	R.dir = hwt_test_tmpdir();
	R.path = malloc(strlen(R.dir) + 16);
	R.work = malloc(strlen(R.dir) + 16);
	sprintf(R.path, "%s/ref.hwt", R.dir);
	sprintf(R.work, "%s/bad.hwt", R.dir);
	hwt_fmt_writer_config_init(&cfg);
	cfg.chunk_size = 4096;
	if (hwt_fmt_writer_open(&w, R.path, &cfg))
		return -1;
	fmt_test_attr(&attr);
	hwt_fmt_writer_meta_str(w, HWT_META_HOST, "ref");
	hwt_fmt_writer_meta_u64(w, HWT_META_EVENT_COUNT, 1);
	hwt_fmt_writer_meta_bytes(w, "event.0.attr", &attr, sizeof(attr));
	hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, 0, -1, "sb0");
	hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, 1, -1, "sb1");
	hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_AUX, 0, -1, "pt.cpu0");
	for (int i = 0; i < 600; i++) {
		size_t n = rb_sample(&b, 0x400000 + (uint64_t)i * 16, 1, 1, (uint64_t)i * 100, 0,
				     (uint32_t)(i & 1), 1);

		hwt_fmt_writer_records(w, (uint32_t)(i & 1), b.buf, n);
	}
	for (size_t k = 0; k < sizeof(aux); k++)
		aux[k] = (uint8_t)(k * 13);
	hwt_fmt_writer_aux(w, 2, 0, aux, sizeof(aux));
	hwt_fmt_writer_aux(w, 2, 5000, aux, sizeof(aux));
	hwt_fmt_writer_lost(w, 0, HWT_FMT_LOST_RECORDS, 3);
	if (hwt_fmt_writer_close(w))
		return -1;
	R.bytes = (uint8_t *)hwt_test_read_file(R.path, &R.size);
	if (hwt_fmt_reader_open(&r, R.path, NULL, &off))
		return -1;
	R.nchunks = hwt_fmt_reader_nchunks(r);
	if (R.nchunks > 64 || R.nchunks < 10)
		return -1;
	for (size_t i = 0; i < R.nchunks; i++) {
		R.chunks[i] = *hwt_fmt_reader_chunk(r, i);
		hwt_buf_init(&R.payload[i]);
		if (hwt_fmt_reader_chunk_load(r, &R.chunks[i], &R.payload[i]) < 0)
			return -1;
	}
	R.index_off = hwt_le64(R.bytes + R.size - HWT_FMT_TRAILER_SIZE + 8);
	hwt_fmt_reader_close(r);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < R.nchunks; i++)
		hwt_buf_fini(&R.payload[i]);
	free(R.bytes);
	free(R.path);
	free(R.work);
	hwt_test_tmpdir_remove(R.dir);
	return 0;
}

static uint64_t chunk_end(size_t i)
{
	return R.chunks[i].file_offset + HWT_FMT_CHUNK_HEADER_SIZE + R.chunks[i].comp_size;
}

/* Every chunk the reader lists reads back what the intact file held. */
static void check_chunks_intact(const struct hwt_fmt_reader *r, size_t expect)
{
	struct hwt_buf pay;

	hwt_buf_init(&pay);
	assert_int_equal(hwt_fmt_reader_nchunks(r), expect);
	for (size_t i = 0; i < hwt_fmt_reader_nchunks(r); i++) {
		const struct hwt_fmt_chunk *c = hwt_fmt_reader_chunk(r, i);

		assert_memory_equal(c, &R.chunks[i], sizeof(*c));
		assert_int_equal(hwt_fmt_reader_chunk_load(r, c, &pay), R.payload[i].len);
		assert_memory_equal(pay.data, R.payload[i].data, pay.len);
	}
	hwt_buf_fini(&pay);
}

/* `hwtrace info` on R.work: exit status, and stderr exactly "hwtrace:
 * LEVEL: R.work" followed by the rest of the line (printf-style). */
static __attribute__((format(printf, 3, 4))) void check_cli(int status, const char *level,
							    const char *fmt, ...)
{
	struct hwt_test_run run;
	char want[1024], rest[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rest, sizeof(rest), fmt, ap);
	va_end(ap);
	snprintf(want, sizeof(want), "hwtrace: %s: %s%s\n", level, R.work, rest);
	hwt_test_run(&run, "%s info %s", hwt_test_hwtrace(), R.work);
	if (run.status != status || strcmp(run.err, want))
		fprintf(stderr, "hwtrace info: exit %d (want %d), stderr:\n%swant:\n%s", run.status,
			status, run.err, want);
	assert_int_equal(run.status, status);
	assert_string_equal(run.err, want);
	hwt_test_run_free(&run);
}

/* The same for a file that cannot be read at all (the error of
 * hwt_fmt_open_error_str for a damaged structure at off). */
static void check_cli_error(uint64_t off, const char *cause)
{
	check_cli(1, "error",
		  " is damaged: %s at offset %llu; nothing in it could be read (restore it or "
		  "record it again)",
		  cause, (unsigned long long)off);
}

#define UNCLOSED                                                                                   \
	" did not end cleanly (its recorder was stopped before it closed the file: killed, out "   \
	"of memory or a power cut)"

static void write_work(const void *bytes, size_t n)
{
	hwt_test_write_file(R.work, bytes, n);
}

static void test_truncation(void **state)
{
	uint64_t cuts[512];
	size_t ncuts = 0;
	int cli_runs = 0;

	(void)state;
	/* Inside the file header, at and around every chunk boundary, inside
	 * every chunk header and payload, in the index and the trailer. */
	for (uint64_t c = 0; c <= 64; c += 8)
		cuts[ncuts++] = c ? c - 1 : 0;
	cuts[ncuts++] = 64;
	for (size_t i = 0; i < R.nchunks; i++) {
		uint64_t o = R.chunks[i].file_offset;

		cuts[ncuts++] = o + 1;
		cuts[ncuts++] = o + HWT_FMT_CHUNK_HEADER_SIZE - 1;
		cuts[ncuts++] = o + HWT_FMT_CHUNK_HEADER_SIZE;
		cuts[ncuts++] = o + HWT_FMT_CHUNK_HEADER_SIZE + R.chunks[i].comp_size / 2;
		cuts[ncuts++] = chunk_end(i) - 1;
		cuts[ncuts++] = chunk_end(i);
	}
	cuts[ncuts++] = R.index_off + 20;
	cuts[ncuts++] = R.size - HWT_FMT_TRAILER_SIZE;
	cuts[ncuts++] = R.size - 1;

	for (size_t k = 0; k < ncuts; k++) {
		uint64_t cut = cuts[k], off = 12345, valid_end = 64;
		struct hwt_fmt_reader *r;
		size_t complete = 0;
		bool boundary = cut == 64, data = false;
		int err;

		write_work(R.bytes, (size_t)cut);
		err = hwt_fmt_reader_open(&r, R.work, NULL, &off);
		if (cut < HWT_FMT_FILE_HEADER_SIZE) {
			assert_int_equal(err, -HWT_ETRUNC);
			assert_int_equal(off, cut);
			if (cut == 0)
				check_cli(1, "error",
					  " is empty (0 bytes), not a recording (was its recorder "
					  "stopped before it wrote anything?)");
			else if (cli_runs++ < 3)
				check_cli(1, "error",
					  " is cut short: the file ends at offset %llu, inside its "
					  "header; nothing in it could be read (copy or record it "
					  "again)",
					  (unsigned long long)cut);
			continue;
		}
		assert_int_equal(err, 0);
		for (size_t i = 0; i < R.nchunks; i++) {
			if (chunk_end(i) <= cut) {
				complete++;
				valid_end = chunk_end(i);
				data |= R.chunks[i].type == HWT_FMT_CHUNK_RECORDS ||
					R.chunks[i].type == HWT_FMT_CHUNK_AUX;
			}
			boundary |= chunk_end(i) == cut;
		}
		/* The index chunk counts as a boundary too (not listed). */
		if (cut >= R.size - HWT_FMT_TRAILER_SIZE) {
			valid_end = R.size - HWT_FMT_TRAILER_SIZE;
			boundary = cut == valid_end;
		}
		assert_false(hwt_fmt_reader_info(r)->indexed);
		assert_int_equal(hwt_fmt_reader_info(r)->truncated, !boundary);
		assert_int_equal(hwt_fmt_reader_info(r)->valid_end, valid_end);
		check_chunks_intact(r, complete);
		hwt_fmt_reader_close(r);
		/* A truncated file is a killed recorder's: info shows what is
		 * intact and says in one line that the recording did not end
		 * cleanly, and where it is cut; exit 0 when some data was
		 * read, else the same line as an error, exit 1. */
		if (k % 7 == 0) {
			char cutp[160] = "";

			if (!boundary)
				snprintf(cutp, sizeof(cutp),
					 ": it ends inside a chunk at offset %llu (the last %llu "
					 "bytes cannot be read)",
					 (unsigned long long)valid_end,
					 (unsigned long long)(cut - valid_end));
			check_cli(data ? 0 : 1, data ? "warning" : "error", UNCLOSED "%s; %s", cutp,
				  !data	     ? "nothing in it could be read (record it again)"
				  : boundary ? "everything in it is read"
					     : "everything else in it is read");
		}
	}
}

enum region { FILE_HEADER, CHUNK_HEADER, CHUNK_PAYLOAD, INDEX_OR_TRAILER };

static enum region classify(uint64_t pos, size_t *chunk)
{
	if (pos < HWT_FMT_FILE_HEADER_SIZE)
		return FILE_HEADER;
	if (pos >= R.index_off)
		return INDEX_OR_TRAILER;
	for (size_t i = 0; i < R.nchunks; i++) {
		if (pos >= R.chunks[i].file_offset && pos < chunk_end(i)) {
			*chunk = i;
			return pos < R.chunks[i].file_offset + HWT_FMT_CHUNK_HEADER_SIZE
				   ? CHUNK_HEADER
				   : CHUNK_PAYLOAD;
		}
	}
	fail();
	return FILE_HEADER;
}

static bool loaded_at_open(uint32_t type)
{
	return type == HWT_FMT_CHUNK_META || type == HWT_FMT_CHUNK_STREAM ||
	       type == HWT_FMT_CHUNK_LOST;
}

/* Sets one byte of the work file in place (rewriting the whole file for
 * every flip is what would make this test slow). */
static void poke(uint64_t pos, uint8_t v)
{
	int fd = open(R.work, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &v, 1, (off_t)pos), 1);
	close(fd);
}

static void test_bit_flips(void **state)
{
	uint64_t rng = hwt_test_seed();
	uint64_t pos_list[4096];
	size_t npos = 0;
	int cli_runs[4] = {0};

	(void)state;
	for (uint64_t p = 0; p < HWT_FMT_FILE_HEADER_SIZE; p++)
		pos_list[npos++] = p;
	for (size_t i = 0; i < R.nchunks; i++) {
		for (uint64_t p = 0; p < HWT_FMT_CHUNK_HEADER_SIZE; p++)
			pos_list[npos++] = R.chunks[i].file_offset + p;
		for (int k = 0; k < 3; k++)
			pos_list[npos++] = R.chunks[i].file_offset + HWT_FMT_CHUNK_HEADER_SIZE +
					   hwt_test_rand(&rng) % R.chunks[i].comp_size;
	}
	for (uint64_t p = R.index_off; p < R.size; p += 1 + hwt_test_rand(&rng) % 4)
		pos_list[npos++] = p;
	write_work(R.bytes, R.size);

	for (size_t k = 0; k < npos; k++) {
		uint64_t pos = pos_list[k], off = 777;
		struct hwt_fmt_reader *r;
		size_t ci = 0;
		enum region reg = classify(pos, &ci);
		int err, want = 0;
		uint64_t want_off = 0;

		poke(pos, R.bytes[pos] ^ (uint8_t)(1u << (hwt_test_rand(&rng) % 8)));
		err = hwt_fmt_reader_open(&r, R.work, NULL, &off);
		switch (reg) {
		case FILE_HEADER:
			want = pos < 8 ? -HWT_EFORMAT : -HWT_ECHECKSUM;
			want_off = 0;
			break;
		case CHUNK_HEADER:
		case CHUNK_PAYLOAD:
			want = reg == CHUNK_HEADER && pos < R.chunks[ci].file_offset + 4
				   ? -HWT_EFORMAT
				   : -HWT_ECHECKSUM;
			want_off = R.chunks[ci].file_offset;
			break;
		case INDEX_OR_TRAILER:
			break;
		}
		if (reg == INDEX_OR_TRAILER) {
			/* The index is a cache: without it the chunks are
			 * scanned, and everything is still there. */
			assert_int_equal(err, 0);
			assert_false(hwt_fmt_reader_info(r)->indexed);
			check_chunks_intact(r, R.nchunks);
			hwt_fmt_reader_close(r);
			poke(pos, R.bytes[pos]);
			continue;
		}
		if (reg == FILE_HEADER || loaded_at_open(R.chunks[ci].type)) {
			assert_int_equal(err, want);
			assert_int_equal(off, want_off);
		} else {
			/* Data chunks are checked when read. */
			struct hwt_buf pay;

			assert_int_equal(err, 0);
			hwt_buf_init(&pay);
			for (size_t i = 0; i < hwt_fmt_reader_nchunks(r); i++) {
				int64_t n =
				    hwt_fmt_reader_chunk_load(r, hwt_fmt_reader_chunk(r, i), &pay);

				assert_int_equal(n, i == ci ? want : (int64_t)R.payload[i].len);
			}
			hwt_buf_fini(&pay);
			hwt_fmt_reader_close(r);
		}
		if (cli_runs[reg]++ < 2) {
			const char *kind =
			    want == -HWT_EFORMAT ? "malformed data" : "checksum mismatch";

			if (reg == FILE_HEADER && pos < 8)
				check_cli(1, "error",
					  " is not a hwtrace or perf.data recording (unknown "
					  "format at offset 0)");
			else if (reg == FILE_HEADER || loaded_at_open(R.chunks[ci].type))
				check_cli_error(want_off, kind);
			else
				check_cli(0, "warning",
					  " is damaged: 1 chunk(s) failed their checks and were "
					  "skipped (the first at offset %llu: %s); everything else "
					  "in it is read",
					  (unsigned long long)want_off, kind);
		}
		poke(pos, R.bytes[pos]);
	}
}

/* Rewrites the CRC of the chunk header at off after a change. */
static void fix_chunk_crc(uint8_t *b, uint64_t off)
{
	hwt_put_le32(b + off + 36, hwt_crc32c(0, b + off, 36));
}

static void test_versions_and_lengths(void **state)
{
	uint8_t *bad = malloc(R.size);
	struct hwt_fmt_reader *r;
	uint64_t off, data_end = R.index_off, c;
	size_t k;

	(void)state;
	/* A major version we do not know; a newer minor is fine. */
	memcpy(bad, R.bytes, R.size);
	hwt_put_le16(bad + 8, HWT_FMT_VERSION_MAJOR + 1);
	hwt_put_le32(bad + 60, hwt_crc32c(0, bad, 60));
	write_work(bad, R.size);
	assert_int_equal(hwt_fmt_reader_open(&r, R.work, NULL, &off), -HWT_EVERSION);
	assert_int_equal(off, 8);
	check_cli(1, "error",
		  " was written by a newer hwtrace (format version at offset 8); upgrade "
		  "hwtrace to read it");
	hwt_put_le16(bad + 8, 0);
	hwt_put_le32(bad + 60, hwt_crc32c(0, bad, 60));
	write_work(bad, R.size);
	assert_int_equal(hwt_fmt_reader_open(&r, R.work, NULL, &off), -HWT_EVERSION);
	memcpy(bad, R.bytes, R.size);
	hwt_put_le16(bad + 10, 77);
	hwt_put_le32(bad + 60, hwt_crc32c(0, bad, 60));
	write_work(bad, R.size);
	assert_int_equal(hwt_fmt_reader_open(&r, R.work, NULL, &off), 0);
	assert_int_equal(hwt_fmt_reader_info(r)->version_minor, 77);
	check_chunks_intact(r, R.nchunks);
	hwt_fmt_reader_close(r);

	/* Lengths, on a file without index (a killed recorder's), so the
	 * scanner meets them: CRCs are fixed so the size checks are reached. */
	for (k = 0; k < R.nchunks && R.chunks[k].type != HWT_FMT_CHUNK_RECORDS; k++)
		;
	assert_true(k < R.nchunks);
	c = R.chunks[k].file_offset;
	{
		static const struct {
			uint32_t raw, stored, flags;
			int err;
		} cases[] = {
		    {100, 0xfffffff0u, 0, -HWT_ETOOBIG},  /* stored beyond any chunk */
		    {0xffffffffu, 100, 0, -HWT_ETOOBIG},  /* raw beyond any chunk */
		    {100 * 40000u, 100, 0, -HWT_ETOOBIG}, /* more than zstd can expand */
		    {100, 100, 0x8000, -HWT_EFORMAT},	  /* unknown flag */
		    {100, 99, 1, -HWT_EFORMAT},		  /* raw chunk, sizes differ */
		};

		for (size_t i = 0; i < HWT_ARRAY_SIZE(cases); i++) {
			memcpy(bad, R.bytes, R.size);
			hwt_put_le32(bad + c + 12, cases[i].raw);
			hwt_put_le32(bad + c + 16, cases[i].stored);
			hwt_put_le16(bad + c + 6, (uint16_t)cases[i].flags);
			fix_chunk_crc(bad, c);
			write_work(bad, (size_t)data_end);
			off = 0;
			assert_int_equal(hwt_fmt_reader_open(&r, R.work, NULL, &off), cases[i].err);
			assert_int_equal(off, c);
			if (i == 0)
				check_cli_error(c, "a size out of range");
		}
	}
	/* A raw_size that lies about what the frame holds, by a lot (but
	 * within what zstd could expand to). */
	if (!(R.chunks[k].flags & 1)) {
		struct hwt_buf pay;

		memcpy(bad, R.bytes, R.size);
		hwt_put_le32(bad + c + 12, R.chunks[k].comp_size * 30000u);
		fix_chunk_crc(bad, c);
		write_work(bad, (size_t)data_end);
		assert_int_equal(hwt_fmt_reader_open(&r, R.work, NULL, &off), 0);
		hwt_buf_init(&pay);
		assert_int_equal(hwt_fmt_reader_chunk_load(r, hwt_fmt_reader_chunk(r, k), &pay),
				 -HWT_ECOMPRESS);
		/* The buffer grew with the data (4 KiB), not with the claim. */
		assert_true(pay.cap < 64 * 1024);
		hwt_buf_fini(&pay);
		hwt_fmt_reader_close(r);
		check_cli(0, "warning",
			  UNCLOSED
			  ": 1 chunk(s) failed their checks and were skipped (the first "
			  "at offset %llu: corrupt compressed data); everything else in it "
			  "is read",
			  (unsigned long long)c);
	}
	free(bad);
}

/* Indexes that are intact (CRC) but lie: the reader falls back to a scan,
 * or reports the mismatch when a chunk is read. */
static void test_lying_index(void **state)
{
	struct hwt_buf f;
	struct hwt_fmt_reader *r;
	uint8_t h[HWT_FMT_CHUNK_HEADER_SIZE], tr[HWT_FMT_TRAILER_SIZE], e[40];
	uint64_t off;

	(void)state;
	for (int variant = 0; variant < 4; variant++) {
		uint32_t count = (uint32_t)R.nchunks;
		uint8_t *payload;
		size_t plen;

		hwt_buf_init(&f);
		assert_int_equal(hwt_buf_append(&f, R.bytes, (size_t)R.index_off), 0);
		/* A raw index chunk, entries copied from the real chunks. */
		plen = 8 + 40 * R.nchunks;
		payload = calloc(1, plen);
		if (variant == 1)
			count = 0x7fffffff; /* more entries than the payload holds */
		hwt_put_le32(payload, 40);
		hwt_put_le32(payload + 4, count);
		for (size_t i = 0; i < R.nchunks; i++) {
			const struct hwt_fmt_chunk *c = &R.chunks[i];

			memset(e, 0, sizeof(e));
			hwt_put_le64(e, c->file_offset);
			hwt_put_le16(e + 8, (uint16_t)c->type);
			hwt_put_le16(e + 10, (uint16_t)c->flags);
			hwt_put_le32(e + 12, c->stream);
			hwt_put_le32(e + 16, c->raw_size);
			hwt_put_le32(e + 20, c->comp_size);
			hwt_put_le32(e + 24, c->crc);
			hwt_put_le64(e + 32, c->aux_offset);
			if (variant == 2 && i == 3)
				hwt_put_le32(e + 20, 0x7ffffff0u); /* huge stored size */
			if (variant == 3 && i == R.nchunks - 1)
				hwt_put_le32(e + 12, 99); /* disagrees with the chunk */
			memcpy(payload + 8 + 40 * i, e, 40);
		}
		memset(h, 0, sizeof(h));
		hwt_put_le32(h, 0x4b435748u);
		hwt_put_le16(h + 4, HWT_FMT_CHUNK_INDEX);
		hwt_put_le16(h + 6, 1);
		hwt_put_le32(h + 8, UINT32_MAX);
		hwt_put_le32(h + 12, (uint32_t)plen);
		hwt_put_le32(h + 16, (uint32_t)plen);
		hwt_put_le32(h + 20, hwt_crc32c(0, payload, plen));
		hwt_put_le32(h + 36, hwt_crc32c(0, h, 36));
		hwt_buf_append(&f, h, sizeof(h));
		hwt_buf_append(&f, payload, plen);
		memset(tr, 0, sizeof(tr));
		memcpy(tr, "HWTINDEX", 8);
		hwt_put_le64(tr + 8, R.index_off);
		hwt_put_le32(tr + 20, hwt_crc32c(0, tr, 20));
		hwt_buf_append(&f, tr, sizeof(tr));
		write_work(f.data, f.len);
		free(payload);
		hwt_buf_fini(&f);

		assert_int_equal(hwt_fmt_reader_open(&r, R.work, NULL, &off), 0);
		if (variant == 0) {
			/* Our hand-made index is as good as the writer's. */
			assert_true(hwt_fmt_reader_info(r)->indexed);
			check_chunks_intact(r, R.nchunks);
		} else if (variant == 3) {
			struct hwt_buf pay;

			assert_true(hwt_fmt_reader_info(r)->indexed);
			hwt_buf_init(&pay);
			assert_int_equal(hwt_fmt_reader_chunk_load(
					     r, hwt_fmt_reader_chunk(r, R.nchunks - 1), &pay),
					 -HWT_EFORMAT);
			hwt_buf_fini(&pay);
		} else {
			assert_false(hwt_fmt_reader_info(r)->indexed);
			assert_false(hwt_fmt_reader_info(r)->truncated);
			check_chunks_intact(r, R.nchunks);
		}
		hwt_fmt_reader_close(r);
	}
}

static void test_not_a_trace(void **state)
{
	struct hwt_test_run run;
	struct hwt_fmt_session *s;
	uint64_t off;
	char garbage[4096];

	(void)state;
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (char)(i * 31 + 7);
	write_work(garbage, sizeof(garbage));
	assert_int_equal(hwt_fmt_session_open(&s, R.work, NULL, &off), -HWT_EFORMAT);
	check_cli(1, "error",
		  " is not a hwtrace or perf.data recording (unknown format at offset 0)");
	write_work("", 0);
	assert_int_equal(hwt_fmt_session_open(&s, R.work, NULL, &off), -HWT_ETRUNC);
	check_cli(1, "error",
		  " is empty (0 bytes), not a recording (was its recorder stopped before it wrote "
		  "anything?)");
	write_work("HWTRA", 5);
	assert_int_equal(hwt_fmt_session_open(&s, R.work, NULL, &off), -HWT_ETRUNC);
	assert_int_equal(off, 5);
	hwt_test_run(&run, "%s info %s", hwt_test_hwtrace(), R.dir);
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "error:"));
	hwt_test_run_free(&run);
	hwt_test_run(&run, "%s info %s/missing.hwt", hwt_test_hwtrace(), R.dir);
	assert_int_equal(run.status, 1);
	assert_true(hwt_test_contains(run.err, "no such file"));
	hwt_test_run_free(&run);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_truncation),		 cmocka_unit_test(test_bit_flips),
	    cmocka_unit_test(test_versions_and_lengths), cmocka_unit_test(test_lying_index),
	    cmocka_unit_test(test_not_a_trace),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
