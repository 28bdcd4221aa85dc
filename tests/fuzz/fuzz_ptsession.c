/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_ptsession.c - a PT session over arbitrary recording bytes
 * (.hwt or perf.data: sideband records, metadata, AUX streams): open (the
 * sideband pass: images, forks, execs, switch timelines, AUX flags), decode
 * every stream with a sink that looks at every record, symbolize what the
 * records name, then close. The last input byte picks the engine,
 * whether segments are decoded on two threads and whether per-CPU streams
 * are stitched (decoded together, merged by time) even when no thread
 * moved. No crash, no leak, no unbounded work.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptsession/ptsession.h"
#include "tests/fuzz/fuzz_memfd.h"

struct fuzz_ctx {
	struct hwt_pts *pts;
	uint64_t n;
};

static int on_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct fuzz_ctx *c = ctx;
	struct hwt_pts_sym sym;

	/* Bounded work per input: symbolize the first records only. */
	if (c->n++ < 64) {
		uint64_t ip = rec->type == HWT_DEC_REC_BLOCK  ? rec->u.block.ip
			      : rec->type == HWT_DEC_REC_CALL ? rec->u.call.to
							      : rec->u.gap.ip;

		hwt_pts_symbolize(c->pts, rec->pid, rec->time, ip, &sym);
		hwt_pts_comm(c->pts, rec->tid, rec->time);
	}
	return c->n > 200000 ? -HWT_EINVAL : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_fmt_session *s;
	struct hwt_pts_config cfg;
	struct hwt_pts_stats st;
	struct fuzz_ctx c = {0};
	struct hwt_dec_sink sink = {sizeof(sink), 0, on_rec, &c, NULL, NULL, NULL};
	char path[64];
	uint64_t off;
	int fd;

	if (size < 1)
		return 0;
	fd = fuzz_memfd(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	if (hwt_fmt_session_open(&s, path, NULL, &off) == 0) {
		hwt_pts_config_init(&cfg);
		cfg.engine = data[size - 1] % 3;
		cfg.threads = (data[size - 1] & 4) ? 2 : 1;
		cfg.stitch = (data[size - 1] & 8) ? HWT_PTS_STITCH_ON : HWT_PTS_STITCH_AUTO;
		if (hwt_pts_open(&c.pts, s, &cfg, &off) == 0) {
			hwt_pts_add_sink(c.pts, &sink);
			hwt_pts_run(c.pts);
			hwt_pts_stats(c.pts, &st);
			hwt_pts_close(c.pts);
		}
		hwt_fmt_session_close(s);
	}
	close(fd);
	return 0;
}
