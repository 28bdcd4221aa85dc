/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/script_sb.c - ptxed's --pevent:* and --sb:* options of `hwtrace script
 * --pt`: parses them, reads the sideband files and hands them to
 * ptsession's perf-event sideband (hwt_pts_pevent), which applies them
 * while the decoder runs. Option wiring only.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/script_pt.h"
#include "common/hwt.h"
#include "ptsession/ptsession.h"

/* A sideband file, read, with the options in force when it was given. */
struct sb_file {
	char *path;
	uint8_t *buf;
	size_t len;
	bool primary;
	struct hwt_pts_pevent_config cfg; /* its strings point into the
					   * script_sb's copies */
};

struct script_sb {
	struct hwt_dec_icache *ic;
	struct hwt_pts_pevent_config cfg; /* for the next --pevent file */
	char *strs[4];			  /* cfg's sysroot and vDSO files */
	char **old;			  /* strings replaced since (files use them) */
	size_t nold;
	uint32_t flags;
	struct sb_file *files;
	size_t nfiles;
	struct hwt_pts_pevent *pev;
};

int script_sb_alloc(struct script_sb **out, struct hwt_dec_icache *ic)
{
	struct script_sb *sb = calloc(1, sizeof(*sb));

	if (!sb)
		return -ENOMEM;
	sb->ic = ic;
	hwt_pts_pevent_config_init(&sb->cfg);
	*out = sb;
	return 0;
}

void script_sb_free(struct script_sb *sb)
{
	if (!sb)
		return;
	hwt_pts_pevent_free(sb->pev);
	for (size_t i = 0; i < sb->nfiles; i++) {
		free(sb->files[i].path);
		free(sb->files[i].buf);
	}
	free(sb->files);
	for (size_t i = 0; i < HWT_ARRAY_SIZE(sb->strs); i++)
		free(sb->strs[i]);
	for (size_t i = 0; i < sb->nold; i++)
		free(sb->old[i]);
	free(sb->old);
	free(sb);
}

bool script_sb_active(const struct script_sb *sb)
{
	return sb && sb->nfiles;
}

/* Sets string option k (0 sysroot, 1..3 vDSO x64, x32, ia32); files given
 * before keep the old value. */
static int set_str(struct script_sb *sb, int k, const char *arg)
{
	char *c = strdup(arg), **old;

	if (!c)
		return -ENOMEM;
	if (sb->strs[k]) {
		old = realloc(sb->old, (sb->nold + 1) * sizeof(*old));
		if (!old) {
			free(c);
			return -ENOMEM;
		}
		sb->old = old;
		sb->old[sb->nold++] = sb->strs[k];
	}
	sb->strs[k] = c;
	sb->cfg.sysroot = sb->strs[0];
	sb->cfg.vdso_x64 = sb->strs[1];
	sb->cfg.vdso_x32 = sb->strs[2];
	sb->cfg.vdso_ia32 = sb->strs[3];
	return 0;
}

static int num(const char *opt, const char *arg, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!arg || !*arg || *arg == '-') {
		hwt_cli_usage_error("script", "--%s needs a number", opt);
		return -HWT_EINVAL;
	}
	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || *end || v > max) {
		hwt_cli_usage_error("script", "bad value '%s' for --%s", arg, opt);
		return -HWT_EINVAL;
	}
	*out = v;
	return 0;
}

/* Reads FILE[:FROM[-TO]] as a sideband stream with the current options. */
static int add_file(struct script_sb *sb, const char *arg, bool primary)
{
	struct sb_file *f, *files;
	char *colon;
	uint64_t from = 0, to = 0;
	struct stat st;
	int fd, err;

	files = realloc(sb->files, (sb->nfiles + 1) * sizeof(*files));
	if (!files)
		return -ENOMEM;
	sb->files = files;
	f = &sb->files[sb->nfiles];
	memset(f, 0, sizeof(*f));
	f->path = strdup(arg);
	if (!f->path)
		return -ENOMEM;
	colon = strrchr(f->path, ':');
	if (colon && colon[1]) {
		char *rest;
		unsigned long long a;

		errno = 0;
		a = strtoull(colon + 1, &rest, 0);
		if (!errno && rest != colon + 1 && (*rest == '\0' || *rest == '-')) {
			from = a;
			if (*rest == '-')
				to = strtoull(rest + 1, &rest, 0);
			if (!*rest)
				*colon = '\0';
			else
				from = to = 0;
		}
	}
	fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		err = -errno;
		hwt_cli_error("script: cannot read the sideband file '%s': %s; check the path",
			      f->path, strerror(errno));
		goto error;
	}
	if (!to || to > (uint64_t)st.st_size)
		to = (uint64_t)st.st_size;
	if (from > to) {
		hwt_cli_error("script: sideband file '%s': offset 0x%" PRIx64 " beyond its end",
			      f->path, from);
		err = -HWT_EINVAL;
		goto error;
	}
	f->len = (size_t)(to - from);
	f->buf = malloc(f->len ? f->len : 1);
	if (!f->buf || pread(fd, f->buf, f->len, (off_t)from) != (ssize_t)f->len) {
		hwt_cli_error("script: cannot read the sideband file '%s'", f->path);
		err = -EIO;
		goto error;
	}
	close(fd);
	f->primary = primary;
	f->cfg = sb->cfg;
	sb->nfiles++;
	return 0;
error:
	if (fd >= 0)
		close(fd);
	free(f->buf);
	free(f->path);
	return err;
}

int script_sb_option(struct script_sb *sb, const char *name, const char *arg)
{
	static const struct {
		const char *name;
		uint32_t flag;
	} flags[] = {
	    {"sb:filename", HWT_PTS_PEV_FILENAME}, {"sb:offset", HWT_PTS_PEV_OFFSET},
	    {"sb:time", HWT_PTS_PEV_TIME},	   {"sb:switch", HWT_PTS_PEV_SWITCH},
	    {"sb:warn", HWT_PTS_PEV_WARN},
	};
	uint64_t v = 0;
	int err = 0;

	if (!strcmp(name, "pevent:primary"))
		return add_file(sb, arg, true);
	if (!strcmp(name, "pevent:secondary"))
		return add_file(sb, arg, false);
	for (size_t i = 0; i < HWT_ARRAY_SIZE(flags); i++) {
		if (!strcmp(name, flags[i].name)) {
			sb->flags |= flags[i].flag;
			return 0;
		}
	}
	if (!strcmp(name, "pevent:sample-type")) {
		err = num(name, arg, UINT64_MAX, &v);
		sb->cfg.sample_type = v;
	} else if (!strcmp(name, "pevent:time-zero")) {
		err = num(name, arg, UINT64_MAX, &v);
		sb->cfg.time_zero = v;
	} else if (!strcmp(name, "pevent:time-shift")) {
		err = num(name, arg, UINT16_MAX, &v);
		sb->cfg.time_shift = (uint16_t)v;
	} else if (!strcmp(name, "pevent:time-mult")) {
		err = num(name, arg, UINT32_MAX, &v);
		sb->cfg.time_mult = (uint32_t)v;
	} else if (!strcmp(name, "pevent:tsc-offset")) {
		err = num(name, arg, UINT64_MAX, &v);
		sb->cfg.tsc_offset = v;
	} else if (!strcmp(name, "pevent:kernel-start")) {
		err = num(name, arg, UINT64_MAX, &v);
		sb->cfg.kernel_start = v;
	} else if (!strcmp(name, "pevent:sysroot")) {
		err = set_str(sb, 0, arg);
	} else if (!strcmp(name, "pevent:vdso-x64")) {
		err = set_str(sb, 1, arg);
	} else if (!strcmp(name, "pevent:vdso-x32")) {
		err = set_str(sb, 2, arg);
	} else if (!strcmp(name, "pevent:vdso-ia32")) {
		err = set_str(sb, 3, arg);
	} else if (!strcmp(name, "sb:compact") || !strcmp(name, "sb")) {
		sb->flags = (sb->flags & ~HWT_PTS_PEV_VERBOSE) | HWT_PTS_PEV_COMPACT;
	} else if (!strcmp(name, "sb:verbose")) {
		sb->flags = (sb->flags & ~HWT_PTS_PEV_COMPACT) | HWT_PTS_PEV_VERBOSE;
	} else {
		hwt_cli_usage_error("script", "unknown option '--%s'", name);
		return -HWT_EINVAL;
	}
	return err;
}

int script_sb_setup(struct script_sb *sb, struct hwt_dec_config *cfg, bool quiet)
{
	uint32_t flags = sb->flags;
	struct hwt_buf text;
	int err;

	if (!sb->nfiles)
		return 0;
	/* --quiet: no records (errors and warnings still). */
	if (quiet)
		flags &= ~(HWT_PTS_PEV_COMPACT | HWT_PTS_PEV_VERBOSE);
	err = hwt_pts_pevent_alloc(&sb->pev, sb->ic, flags);
	for (size_t i = 0; err == 0 && i < sb->nfiles; i++) {
		const struct sb_file *f = &sb->files[i];

		err = hwt_pts_pevent_add(sb->pev, f->path, f->buf, f->len, f->primary, &f->cfg);
	}
	hwt_buf_init(&text);
	if (err == 0)
		err = hwt_pts_pevent_setup(sb->pev, cfg, &text);
	if (text.len)
		fwrite(text.data, 1, text.len, stdout);
	hwt_buf_fini(&text);
	if (err < 0)
		hwt_cli_error("script: cannot set up the sideband: %s", hwt_strerror(err));
	return err;
}

int script_sb_note_text(struct script_sb *sb, uint64_t cookie, struct hwt_buf *out)
{
	return hwt_pts_pevent_note(sb->pev, cookie, out);
}
