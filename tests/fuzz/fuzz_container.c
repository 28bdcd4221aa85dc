/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_container.c - the container reader over arbitrary bytes:
 * open (index and scan), every chunk read both ways, then a session over
 * the same bytes (record merge and AUX reads). Any crash, leak, overflow or
 * sanitizer report is a finding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/format.h"
#include "tests/fuzz/fuzz_memfd.h"

static void read_all(const struct hwt_fmt_reader *r, size_t input_size)
{
	struct hwt_buf buf;

	hwt_buf_init(&buf);
	for (size_t i = 0; i < hwt_fmt_reader_nchunks(r); i++) {
		const struct hwt_fmt_chunk *c = hwt_fmt_reader_chunk(r, i);
		int64_t n = hwt_fmt_reader_chunk_load(r, c, &buf);

		/* The caller-buffer API too, when the claim is modest (the
		 * harness, not the reader, decides what to allocate here). */
		if (n >= 0 && c->raw_size <= 4 * input_size + 4096) {
			uint8_t *dst = malloc(c->raw_size + 1);

			if (dst) {
				int64_t m = hwt_fmt_reader_chunk_read(r, c, dst, c->raw_size);

				if (m != n || (m > 0 && memcmp(dst, buf.data, (size_t)m)))
					abort(); /* the two read paths disagree */
				free(dst);
			}
		}
	}
	for (size_t i = 0; i < hwt_fmt_reader_nmeta(r); i++) {
		const struct hwt_fmt_meta *m = hwt_fmt_reader_meta(r, i);

		if (m->type == HWT_FMT_META_STR && strlen(m->v.str) > m->len)
			abort();
	}
	hwt_buf_fini(&buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_fmt_reader_config cfg;
	struct hwt_fmt_reader *r;
	struct hwt_fmt_session *s;
	struct hwt_fmt_record rec;
	char path[64];
	uint64_t off;
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	hwt_fmt_reader_config_init(&cfg);
	for (int scan = 0; scan < 2; scan++) {
		cfg.scan = scan;
		if (hwt_fmt_reader_open(&r, path, &cfg, &off) == 0) {
			if (off != 0)
				abort();
			read_all(r, size);
			hwt_fmt_reader_close(r);
		} else if (off > size) {
			abort(); /* an error offset past the end of the input */
		}
	}
	if (hwt_fmt_session_open(&s, path, NULL, &off) == 0) {
		uint8_t tmp[4096];
		int err, n = 0;

		/* Chunk errors are reported once and skipped: keep going. */
		while ((err = hwt_fmt_session_next(s, &rec, &off)) != -HWT_EEOS && n++ < 100000)
			;
		for (size_t a = 0; a < hwt_fmt_session_naux(s); a++)
			for (size_t g = 0; g < hwt_fmt_session_aux(s, a)->nsegments; g++)
				hwt_fmt_session_aux_read(s, a, g, 0, tmp, sizeof(tmp));
		hwt_fmt_session_close(s);
	}
	close(fd);
	return 0;
}
