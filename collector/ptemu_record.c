/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/ptemu_record.c - the PT emulator's container sink: writes what
 * hwt_ptemu_run() delivers into a .hwt file through format/'s writer, one
 * RECORDS stream for the sideband and one AUX stream per thread, with the
 * HWT_FMT_FLAG_EMULATED_PT file flag.
 */
#include "collector/collector.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/format.h"

struct rec_sink {
	struct hwt_fmt_writer *w;
	int sideband;
};

static int rs_meta_u64(void *ctx, const char *key, uint64_t v)
{
	return hwt_fmt_writer_meta_u64(((struct rec_sink *)ctx)->w, key, v);
}

static int rs_meta_str(void *ctx, const char *key, const char *v)
{
	return hwt_fmt_writer_meta_str(((struct rec_sink *)ctx)->w, key, v);
}

static int rs_meta_bytes(void *ctx, const char *key, const void *v, size_t len)
{
	return hwt_fmt_writer_meta_bytes(((struct rec_sink *)ctx)->w, key, v, len);
}

static int rs_records(void *ctx, const void *buf, size_t len)
{
	struct rec_sink *s = ctx;

	return hwt_fmt_writer_records(s->w, (uint32_t)s->sideband, buf, len);
}

static int rs_stream(void *ctx, uint32_t pid, uint32_t tid)
{
	struct rec_sink *s = ctx;
	char name[48];

	(void)pid;
	snprintf(name, sizeof(name), "pt.tid%u", tid);
	return hwt_fmt_writer_add_stream(s->w, HWT_FMT_STREAM_AUX, -1, (int32_t)tid, name);
}

static int rs_aux(void *ctx, int stream, uint64_t offset, const void *buf, size_t len)
{
	struct rec_sink *s = ctx;

	return hwt_fmt_writer_aux(s->w, (uint32_t)stream, offset, buf, len);
}

int hwt_ptemu_record(const struct hwt_ptemu_config *cfg, const char *path,
		     struct hwt_ptemu_result *res)
{
	struct hwt_fmt_writer_config wcfg;
	struct rec_sink s = {0};
	struct hwt_ptemu_sink sink = {
	    .ctx = &s,
	    .meta_u64 = rs_meta_u64,
	    .meta_str = rs_meta_str,
	    .meta_bytes = rs_meta_bytes,
	    .records = rs_records,
	    .stream = rs_stream,
	    .aux = rs_aux,
	};
	struct stat st;
	int err, cerr;

	if (res)
		memset(res, 0, sizeof(*res));
	if (!cfg || !path)
		return -HWT_EINVAL;
	hwt_fmt_writer_config_init(&wcfg);
	wcfg.flags = HWT_FMT_FLAG_EMULATED_PT;
	wcfg.log = cfg->log;
	err = hwt_fmt_writer_open(&s.w, path, &wcfg);
	if (err < 0)
		return err;
	err = hwt_fmt_writer_add_stream(s.w, HWT_FMT_STREAM_RECORDS, -1, -1, "sideband");
	if (err >= 0) {
		s.sideband = err;
		err = hwt_fmt_writer_meta_u64(s.w, HWT_META_VERSION, 1);
	}
	if (err >= 0)
		err = hwt_ptemu_run(cfg, &sink, res);
	cerr = hwt_fmt_writer_close(s.w);
	/* Nothing ran: leave no empty trace behind (only a regular file:
	 * "-o /dev/null" must never remove /dev/null). */
	if ((err == -ENOENT || err == -EACCES || err == -HWT_ENOTSUP || err == -HWT_EINVAL) &&
	    stat(path, &st) == 0 && S_ISREG(st.st_mode))
		unlink(path);
	return err < 0 ? err : cerr;
}
