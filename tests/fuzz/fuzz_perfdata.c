/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_perfdata.c - a session over arbitrary perf.data bytes
 * (file mode, pipe mode, compressed records, AUXTRACE): open, every record,
 * every AUX segment read, a rewind and a second pass. The last input byte's
 * low bit picks load_aux, so both AUX delivery paths are exercised.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/format.h"
#include "tests/fuzz/fuzz_memfd.h"

static volatile uint8_t sink;

static void drain(struct hwt_fmt_session *s)
{
	struct hwt_fmt_record rec;
	uint64_t off;
	int n = 0;

	while (hwt_fmt_session_next(s, &rec, &off) == 0 && n++ < 200000) {
		if (rec.type == 71 && rec.u.auxtrace.data) {
			for (uint64_t i = 0; i < rec.u.auxtrace.size; i++)
				sink ^= rec.u.auxtrace.data[i];
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_fmt_session_config cfg;
	struct hwt_fmt_session *s;
	char path[64];
	uint64_t off;
	int fd;

	if (size < 1)
		return 0;
	fd = fuzz_memfd(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	hwt_fmt_session_config_init(&cfg);
	cfg.load_aux = data[size - 1] & 1;
	if (hwt_fmt_session_open(&s, path, &cfg, &off) == 0) {
		uint8_t tmp[4096];

		drain(s);
		for (size_t a = 0; a < hwt_fmt_session_naux(s); a++) {
			for (size_t g = 0; g < hwt_fmt_session_aux(s, a)->nsegments; g++) {
				const struct hwt_fmt_aux_segment *sg =
				    hwt_fmt_session_aux_segment(s, a, g);

				hwt_fmt_session_aux_read(s, a, g, 0, tmp, sizeof(tmp));
				if (sg->size > 16)
					hwt_fmt_session_aux_read(s, a, g, sg->size - 16, tmp, 64);
			}
		}
		for (size_t i = 0; i < hwt_fmt_session_nmeta(s); i++)
			if (!hwt_fmt_session_meta(s, i)->key)
				abort();
		if (hwt_fmt_session_rewind(s) == 0)
			drain(s);
		hwt_fmt_session_close(s);
	} else if (off > size) {
		abort();
	}
	close(fd);
	return 0;
}
