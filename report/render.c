/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report/render.c - the render driver: picks the output format from the
 * table of {name, init, process, finish} entries, feeds it every merged row
 * of the profile (and of the base profile for differential outputs), and
 * writes the result to a buffer or file.
 */
#include "report/report_int.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const struct hwt_rep_format_ops *const formats[] = {
    &hwt_rep_fmt_report_text, &hwt_rep_fmt_report_json, &hwt_rep_fmt_folded,
    &hwt_rep_fmt_svg,	      &hwt_rep_fmt_html,	&hwt_rep_fmt_pprof,
};

static const struct {
	const char *ext;
	enum hwt_rep_format format;
} extensions[] = {
    {".pb.gz", HWT_REP_FMT_PPROF}, {".folded", HWT_REP_FMT_FOLDED}, {".svg", HWT_REP_FMT_SVG},
    {".html", HWT_REP_FMT_HTML},   {".htm", HWT_REP_FMT_HTML},	    {".json", HWT_REP_FMT_CHROME},
    {".txt", HWT_REP_FMT_TEXT},
};

void hwt_rep_render_config_init(struct hwt_rep_render_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->format = HWT_REP_FMT_TEXT;
	cfg->order = HWT_REP_ORDER_CHILDREN;
	cfg->children = true;
	cfg->graph = HWT_REP_GRAPH_AUTO;
	cfg->graph_limit = 0.5;
	cfg->by_comm = true;
	cfg->annotate = true;
	cfg->width = 1200;
	cfg->min_width = 0.1;
	cfg->diff_normalize = true;
}

int hwt_rep_format_from_path(const char *path, enum hwt_rep_format *format)
{
	size_t len;

	if (!path || !format)
		return -HWT_EINVAL;
	len = strlen(path);
	for (size_t i = 0; i < HWT_ARRAY_SIZE(extensions); i++) {
		size_t el = strlen(extensions[i].ext);

		if (len > el && !strcasecmp(path + len - el, extensions[i].ext)) {
			*format = extensions[i].format;
			return 0;
		}
	}
	return -HWT_EINVAL;
}

const char *hwt_rep_format_name(enum hwt_rep_format format)
{
	if (format == HWT_REP_FMT_CHROME)
		return "chrome";
	for (size_t i = 0; i < HWT_ARRAY_SIZE(formats); i++) {
		if (formats[i]->format == format)
			return formats[i]->name;
	}
	return "?";
}

static int feed(struct hwt_rep_render_ctx *ctx, const struct hwt_rep_format_ops *ops, int source,
		const struct hwt_rep_profile *p)
{
	for (size_t r = 0; r < p->rows.n; r++) {
		int err = ops->process(ctx, source, (uint32_t)r,
				       hwt_rep_profile_row(p, (uint32_t)r), &p->vals[r]);

		if (err < 0)
			return err;
	}
	return 0;
}

int hwt_rep_render(const struct hwt_rep_profile *profile, const struct hwt_rep_render_config *cfg,
		   struct hwt_buf *out)
{
	struct hwt_rep_render_config c;
	const struct hwt_rep_format_ops *ops = NULL;
	struct hwt_rep_render_ctx ctx;
	int err;

	hwt_rep_render_config_init(&c);
	if (!profile || !cfg || !out || hwt_opts_copy(&c, sizeof(c), cfg) < 0)
		return -HWT_EINVAL;
	cfg = &c;
	if (cfg->format == HWT_REP_FMT_CHROME) {
		hwt_log(&cfg->log, HWT_LOG_ERROR,
			"a sample profile has no time order for a Chrome trace: render a timeline");
		return -HWT_ENOTSUP;
	}
	for (size_t i = 0; i < HWT_ARRAY_SIZE(formats); i++) {
		if (formats[i]->format == cfg->format)
			ops = formats[i];
	}
	if (!ops || cfg->nsort > HWT_ARRAY_SIZE(cfg->sort))
		return -HWT_EINVAL;
	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg = cfg;
	ctx.profile = profile;
	ctx.base = cfg->base;
	err = ops->init(&ctx);
	if (err >= 0)
		err = feed(&ctx, ops, 0, profile);
	if (err >= 0 && cfg->base)
		err = feed(&ctx, ops, 1, cfg->base);
	return ops->finish(&ctx, err < 0 ? err : 0, out);
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int hwt_rep_render_file(const struct hwt_rep_profile *profile,
			const struct hwt_rep_render_config *cfg, const char *path)
{
	struct hwt_buf buf;
	int fd, err;

	if (!path)
		return -HWT_EINVAL;
	hwt_buf_init(&buf);
	err = hwt_rep_render(profile, cfg, &buf);
	if (err < 0)
		goto out;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	err = write_all(fd, buf.data, buf.len);
	if (close(fd) < 0 && err == 0)
		err = -errno;
out:
	hwt_buf_fini(&buf);
	return err;
}
