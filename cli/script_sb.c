/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/script_sb.c - perf-event sideband for `hwtrace script --pt`: ptxed's
 * --pevent:* options. Reads raw perf records (as `perf record` writes them,
 * one file per sideband stream), builds a code image per process from
 * MMAP/MMAP2, COMM.EXEC and FORK records, and follows context switches, so
 * that a trace recorded without our container decodes from its sideband.
 *
 * It behaves like libipt's sideband library as ptxed uses it, which the
 * conformance tests check: records are applied in time order up to each
 * trace event's time; a context switch waits until the trace is in the
 * kernel (or its location is unknown); --sb:compact prints each record as
 * it is applied, and --sb:warn the warnings. This is file-format code and so
 * lives in the CLI, not in the decoder (which only sees the resulting
 * contexts through its hook). It is a stopgap for raw traces: recordings
 * read through format/ get their sideband from the session.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/script_pt.h"
#include "common/hwt.h"

enum {
	SB_COMPACT = 1 << 0,
	SB_VERBOSE = 1 << 1,
	SB_FILENAME = 1 << 2,
	SB_OFFSET = 1 << 3,
	SB_TIME = 1 << 4,
};

/* Where the trace is, as far as the events tell (libipt-sb's ploc). */
enum loc {
	LOC_UNKNOWN,
	LOC_IN_USER,
	LOC_IN_KERNEL,
	LOC_LIKELY_USER,
	LOC_LIKELY_KERNEL,
};

/* Warnings (positive) and errors (negative) as the error lines name them. */
enum {
	SBW_LOST = 1,	      /* "sideband lost" */
	SBW_TRACE_LOST = 2,   /* "trace lost" */
	SBW_SECTION_LOST = 3, /* "image section lost" */
	SBE_BAD_CONFIG = -10, /* "bad configuration" */
	SBE_BAD_RECORD = -11, /* "unknown payload" */
	SBE_NOMEM = -12,
};

struct sb_cfg {
	uint64_t sample_type;
	uint64_t time_zero;
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t tsc_offset;
	uint64_t kernel_start;
	char *sysroot;
	char *vdso_x64, *vdso_x32, *vdso_ia32;
};

struct sb_ctx {
	uint32_t pid;
	struct hwt_dec_image *image;
	int abi; /* 0 unknown, 1 x64, 2 x32, 3 ia32 */
	struct sb_ctx *next;
};

/* A parsed record. */
struct sb_rec {
	uint32_t type;
	uint16_t misc;
	const uint8_t *body;
	size_t body_len;
	bool has_pid, has_time, has_id, has_cpu, has_stream, has_identifier;
	uint32_t pid, tid, cpu;
	uint64_t time, id, stream_id, identifier;
	uint64_t tsc;
};

struct sb_stream {
	char *path;
	uint8_t *buf;
	size_t len;
	size_t cur, next; /* the current record, the one after it */
	bool primary;
	struct sb_cfg cfg;
	struct sb_rec rec;
	uint64_t tsc; /* the current record's time */
	enum loc loc;
	struct sb_ctx *ctx, *next_ctx;
	struct sb_stream *link;
};

struct script_sb {
	struct hwt_dec_icache *ic;
	const struct script_opts *opts;
	struct sb_cfg cfg; /* for the next --pevent file */
	uint32_t flags;
	bool warn, switch_note;
	struct sb_stream *pending; /* given, not fetched yet */
	struct sb_stream *active;  /* by ascending tsc */
	struct sb_stream *retired; /* at their end */
	struct sb_stream *removed;
	struct sb_ctx *ctxs;
	struct hwt_dec_image **old; /* images of removed contexts */
	size_t nold;
	struct hwt_dec_image *current; /* the primary context's image */
	int32_t cur_pid;
	bool any;
	/* Output: stdout outside decoding; inside the context hook a memory
	 * stream whose text becomes a note, printed when the decoder's
	 * HWT_DEC_REC_NOTE record for it arrives (so the sideband lines
	 * fall into place in the flow even when segments are decoded
	 * ahead of the output). */
	FILE *out;
	FILE *mem;
	char *mem_buf;
	size_t mem_len;
	char **notes;
	size_t nnotes, cap_notes, next_note;
};

/* ------------------------------------------------------------------------ */

int script_sb_alloc(struct script_sb **out, struct hwt_dec_icache *ic, const struct script_opts *o)
{
	struct script_sb *sb = calloc(1, sizeof(*sb));

	if (!sb)
		return -ENOMEM;
	sb->ic = ic;
	sb->opts = o;
	sb->cfg.time_mult = 1;
	sb->cfg.kernel_start = UINT64_MAX;
	sb->cur_pid = -1;
	sb->out = stdout;
	*out = sb;
	return 0;
}

static void cfg_free(struct sb_cfg *c)
{
	free(c->sysroot);
	free(c->vdso_x64);
	free(c->vdso_x32);
	free(c->vdso_ia32);
}

static void streams_free(struct sb_stream *s)
{
	while (s) {
		struct sb_stream *n = s->link;

		free(s->path);
		free(s->buf);
		cfg_free(&s->cfg);
		free(s);
		s = n;
	}
}

void script_sb_free(struct script_sb *sb)
{
	if (!sb)
		return;
	streams_free(sb->pending);
	streams_free(sb->active);
	streams_free(sb->retired);
	streams_free(sb->removed);
	while (sb->ctxs) {
		struct sb_ctx *n = sb->ctxs->next;

		hwt_dec_image_put(sb->ctxs->image);
		free(sb->ctxs);
		sb->ctxs = n;
	}
	for (size_t i = 0; i < sb->nold; i++)
		hwt_dec_image_put(sb->old[i]);
	free(sb->old);
	for (size_t i = 0; i < sb->nnotes; i++)
		free(sb->notes[i]);
	free(sb->notes);
	if (sb->mem)
		fclose(sb->mem);
	free(sb->mem_buf);
	cfg_free(&sb->cfg);
	free(sb);
}

bool script_sb_active(const struct script_sb *sb)
{
	return sb && sb->any;
}

static int dup_str(char **dst, const char *src)
{
	char *c = strdup(src);

	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
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

/* Loads FILE[:FROM[-TO]] as a sideband stream with the current config. */
static int add_stream(struct script_sb *sb, const char *arg, bool primary)
{
	struct sb_stream *s;
	char *path = strdup(arg), *colon;
	uint64_t from = 0, to = 0;
	struct stat st;
	int fd, err = -ENOMEM;

	if (!path)
		return -ENOMEM;
	colon = strrchr(path, ':');
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
	s = calloc(1, sizeof(*s));
	if (!s)
		goto error;
	s->path = path;
	path = NULL;
	s->primary = primary;
	s->cfg = sb->cfg;
	s->cfg.sysroot = s->cfg.vdso_x64 = s->cfg.vdso_x32 = s->cfg.vdso_ia32 = NULL;
	if ((sb->cfg.sysroot && dup_str(&s->cfg.sysroot, sb->cfg.sysroot) < 0) ||
	    (sb->cfg.vdso_x64 && dup_str(&s->cfg.vdso_x64, sb->cfg.vdso_x64) < 0) ||
	    (sb->cfg.vdso_x32 && dup_str(&s->cfg.vdso_x32, sb->cfg.vdso_x32) < 0) ||
	    (sb->cfg.vdso_ia32 && dup_str(&s->cfg.vdso_ia32, sb->cfg.vdso_ia32) < 0))
		goto error;
	fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		hwt_cli_error("script: cannot read the sideband file '%s': %s; check the path",
			      s->path, strerror(errno));
		if (fd >= 0)
			close(fd);
		err = -errno;
		goto error;
	}
	if (!to || to > (uint64_t)st.st_size)
		to = (uint64_t)st.st_size;
	if (from > to) {
		hwt_cli_error("script: sideband file '%s': offset 0x%" PRIx64 " beyond its end",
			      s->path, from);
		close(fd);
		err = -HWT_EINVAL;
		goto error;
	}
	s->len = (size_t)(to - from);
	s->buf = malloc(s->len ? s->len : 1);
	if (!s->buf || pread(fd, s->buf, s->len, (off_t)from) != (ssize_t)s->len) {
		hwt_cli_error("script: cannot read the sideband file '%s'", s->path);
		close(fd);
		err = -EIO;
		goto error;
	}
	close(fd);
	s->loc = LOC_UNKNOWN;
	s->link = sb->pending;
	sb->pending = s;
	sb->any = true;
	return 0;
error:
	free(path);
	if (s) {
		s->link = NULL;
		streams_free(s);
	}
	return err;
}

int script_sb_option(struct script_sb *sb, const char *name, const char *arg)
{
	uint64_t v = 0;
	int err = 0;

	if (!strcmp(name, "pevent:primary"))
		return add_stream(sb, arg, true);
	if (!strcmp(name, "pevent:secondary"))
		return add_stream(sb, arg, false);
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
		err = dup_str(&sb->cfg.sysroot, arg);
	} else if (!strcmp(name, "pevent:vdso-x64")) {
		err = dup_str(&sb->cfg.vdso_x64, arg);
	} else if (!strcmp(name, "pevent:vdso-x32")) {
		err = dup_str(&sb->cfg.vdso_x32, arg);
	} else if (!strcmp(name, "pevent:vdso-ia32")) {
		err = dup_str(&sb->cfg.vdso_ia32, arg);
	} else if (!strcmp(name, "sb:compact") || !strcmp(name, "sb")) {
		sb->flags = (sb->flags & ~(uint32_t)SB_VERBOSE) | SB_COMPACT;
	} else if (!strcmp(name, "sb:verbose")) {
		sb->flags = (sb->flags & ~(uint32_t)SB_COMPACT) | SB_VERBOSE;
	} else if (!strcmp(name, "sb:filename")) {
		sb->flags |= SB_FILENAME;
	} else if (!strcmp(name, "sb:offset")) {
		sb->flags |= SB_OFFSET;
	} else if (!strcmp(name, "sb:time")) {
		sb->flags |= SB_TIME;
	} else if (!strcmp(name, "sb:switch")) {
		sb->switch_note = true;
	} else if (!strcmp(name, "sb:warn")) {
		sb->warn = true;
	} else {
		hwt_cli_usage_error("script", "unknown option '--%s'", name);
		return -HWT_EINVAL;
	}
	return err;
}

/* ------------------------------------------------------------------------ */
/* Records                                                                   */

static uint64_t time_to_tsc(const struct sb_cfg *c, uint64_t time)
{
	uint64_t t, quot, rem;

	if (!c->time_mult || c->time_shift >= 64)
		return time;
	t = time - c->time_zero;
	quot = t / c->time_mult;
	rem = t % c->time_mult;
	return (quot << c->time_shift) + (rem << c->time_shift) / c->time_mult;
}

/* Parses the record at s->buf + off. Returns its size, 0 at the end, or a
 * negative error for a record that does not fit. */
static int parse(struct sb_stream *s, size_t off, struct sb_rec *r)
{
	const uint8_t *p = s->buf + off;
	uint64_t st = s->cfg.sample_type;
	size_t size, trail = 0, t;

	memset(r, 0, sizeof(*r));
	if (off >= s->len)
		return 0;
	if (s->len - off < 8)
		return SBE_BAD_RECORD;
	r->type = hwt_le32(p);
	r->misc = hwt_le16(p + 4);
	size = hwt_le16(p + 6);
	if (size < 8 || size > s->len - off)
		return SBE_BAD_RECORD;
	/* The sample_id trailer, by sample_type, from the record's end. */
	if (st & PERF_SAMPLE_TID)
		trail += 8;
	if (st & PERF_SAMPLE_TIME)
		trail += 8;
	if (st & PERF_SAMPLE_ID)
		trail += 8;
	if (st & PERF_SAMPLE_STREAM_ID)
		trail += 8;
	if (st & PERF_SAMPLE_CPU)
		trail += 8;
	if (st & PERF_SAMPLE_IDENTIFIER)
		trail += 8;
	if (trail > size - 8)
		return SBE_BAD_RECORD;
	r->body = p + 8;
	r->body_len = size - 8 - trail;
	t = size - trail;
	if (st & PERF_SAMPLE_TID) {
		r->has_pid = true;
		r->pid = hwt_le32(p + t);
		r->tid = hwt_le32(p + t + 4);
		t += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		r->has_time = true;
		r->time = hwt_le64(p + t);
		t += 8;
	}
	if (st & PERF_SAMPLE_ID) {
		r->has_id = true;
		r->id = hwt_le64(p + t);
		t += 8;
	}
	if (st & PERF_SAMPLE_STREAM_ID) {
		r->has_stream = true;
		r->stream_id = hwt_le64(p + t);
		t += 8;
	}
	if (st & PERF_SAMPLE_CPU) {
		r->has_cpu = true;
		r->cpu = hwt_le32(p + t);
		t += 8;
	}
	if (st & PERF_SAMPLE_IDENTIFIER) {
		r->has_identifier = true;
		r->identifier = hwt_le64(p + t);
	}
	return (int)size;
}

/* A string field of the body at offset off, or NULL when it runs off. */
static const char *body_str(const struct sb_rec *r, size_t off)
{
	if (off >= r->body_len || !memchr(r->body + off, 0, r->body_len - off))
		return NULL;
	return (const char *)r->body + off;
}

static bool body_has(const struct sb_rec *r, size_t n)
{
	return r->body_len >= n;
}

/* ------------------------------------------------------------------------ */
/* Diagnostics and printing, as libipt's ptxed shows them                    */

static void report(struct script_sb *sb, const struct sb_stream *s, int code)
{
	const char *what;

	if (code > 0 && !sb->warn)
		return;
	switch (code) {
	case SBW_LOST:
		what = "sideband lost";
		break;
	case SBW_TRACE_LOST:
		what = "trace lost";
		break;
	case SBW_SECTION_LOST:
		what = "image section lost";
		break;
	case SBE_BAD_CONFIG:
		what = "bad configuration";
		break;
	case SBE_NOMEM:
		what = "out of memory";
		break;
	default:
		what = "unknown payload";
		break;
	}
	fprintf(sb->out, "[%s:%016zx sideband %s: %s]\n", s->path, s->cur,
		code < 0 ? "error" : "warning", what);
}

static void print_record(struct script_sb *sb, const struct sb_stream *s)
{
	const struct sb_rec *r = &s->rec;
	uint32_t f = sb->flags;
	bool c = f & SB_COMPACT, v = f & SB_VERBOSE;

	if (!f)
		return;
	if ((f & SB_FILENAME) && (f & SB_OFFSET))
		fprintf(sb->out, "%s:%016zx  ", s->path, s->cur);
	else if (f & SB_FILENAME)
		fprintf(sb->out, "%s  ", s->path);
	else if (f & SB_OFFSET)
		fprintf(sb->out, "%016zx  ", s->cur);
	if ((f & SB_TIME) && r->has_time)
		fprintf(sb->out, "%016" PRIx64 "  ", r->tsc);
	switch (r->type) {
	case PERF_RECORD_MMAP: {
		const char *fn = body_str(r, 32);

		if (!fn)
			break;
		if (c)
			fprintf(sb->out,
				"PERF_RECORD_MMAP  %x/%x, %" PRIx64 ", %" PRIx64 ", %" PRIx64
				", %s",
				hwt_le32(r->body), hwt_le32(r->body + 4), hwt_le64(r->body + 8),
				hwt_le64(r->body + 16), hwt_le64(r->body + 24), fn);
		if (v)
			fprintf(sb->out,
				"PERF_RECORD_MMAP\n  pid: %x\n  tid: %x\n  addr: %" PRIx64
				"\n  len: %" PRIx64 "\n  pgoff: %" PRIx64 "\n  filename: %s",
				hwt_le32(r->body), hwt_le32(r->body + 4), hwt_le64(r->body + 8),
				hwt_le64(r->body + 16), hwt_le64(r->body + 24), fn);
		break;
	}
	case PERF_RECORD_MMAP2: {
		const char *fn = body_str(r, 64);

		if (!fn)
			break;
		if (c)
			fprintf(sb->out,
				"PERF_RECORD_MMAP2  %x/%x, %" PRIx64 ", %" PRIx64 ", %" PRIx64
				", %x, %x, %" PRIx64 ", %" PRIx64 ", %x, %x, %s",
				hwt_le32(r->body), hwt_le32(r->body + 4), hwt_le64(r->body + 8),
				hwt_le64(r->body + 16), hwt_le64(r->body + 24),
				hwt_le32(r->body + 32), hwt_le32(r->body + 36),
				hwt_le64(r->body + 40), hwt_le64(r->body + 48),
				hwt_le32(r->body + 56), hwt_le32(r->body + 60), fn);
		if (v)
			fprintf(sb->out,
				"PERF_RECORD_MMAP2\n  pid: %x\n  tid: %x\n  addr: %" PRIx64
				"\n  len: %" PRIx64 "\n  pgoff: %" PRIx64 "\n  filename: %s",
				hwt_le32(r->body), hwt_le32(r->body + 4), hwt_le64(r->body + 8),
				hwt_le64(r->body + 16), hwt_le64(r->body + 24), fn);
		break;
	}
	case PERF_RECORD_LOST:
		if (body_has(r, 16) && (c || v))
			fprintf(sb->out,
				c ? "PERF_RECORD_LOST  %" PRIx64 ", %" PRIx64
				  : "PERF_RECORD_LOST\n  id: %" PRIx64 "\n  lost: %" PRIx64,
				hwt_le64(r->body), hwt_le64(r->body + 8));
		break;
	case PERF_RECORD_COMM: {
		const char *comm = body_str(r, 8);
		const char *sfx = r->misc & PERF_RECORD_MISC_COMM_EXEC ? ".EXEC" : "";

		if (!comm)
			break;
		if (c)
			fprintf(sb->out, "PERF_RECORD_COMM%s  %x/%x, %s", sfx, hwt_le32(r->body),
				hwt_le32(r->body + 4), comm);
		if (v)
			fprintf(sb->out, "PERF_RECORD_COMM%s\n  pid: %x\n  tid: %x\n  comm: %s",
				sfx, hwt_le32(r->body), hwt_le32(r->body + 4), comm);
		break;
	}
	case PERF_RECORD_EXIT:
	case PERF_RECORD_FORK:
		if (body_has(r, 24) && c)
			fprintf(sb->out, "PERF_RECORD_%s  %x/%x, %x/%x, %" PRIx64,
				r->type == PERF_RECORD_FORK ? "FORK" : "EXIT", hwt_le32(r->body),
				hwt_le32(r->body + 8), hwt_le32(r->body + 4),
				hwt_le32(r->body + 12), hwt_le64(r->body + 16));
		if (body_has(r, 24) && v)
			fprintf(sb->out,
				"PERF_RECORD_%s\n  pid: %x\n  ppid: %x\n  tid: %x\n  ptid: %x\n"
				"  time: %" PRIx64,
				r->type == PERF_RECORD_FORK ? "FORK" : "EXIT", hwt_le32(r->body),
				hwt_le32(r->body + 4), hwt_le32(r->body + 8),
				hwt_le32(r->body + 12), hwt_le64(r->body + 16));
		break;
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		if (body_has(r, 24) && c)
			fprintf(sb->out, "PERF_RECORD_%s  %" PRIx64 ", %" PRIx64 ", %" PRIx64,
				r->type == PERF_RECORD_THROTTLE ? "THROTTLE" : "UNTHROTTLE",
				hwt_le64(r->body), hwt_le64(r->body + 8), hwt_le64(r->body + 16));
		break;
	case PERF_RECORD_AUX:
		if (body_has(r, 24) && c)
			fprintf(sb->out, "PERF_RECORD_AUX%s  %" PRIx64 ", %" PRIx64 ", %" PRIx64,
				hwt_le64(r->body + 16) & PERF_AUX_FLAG_TRUNCATED ? ".TRUNCATED"
										 : "",
				hwt_le64(r->body), hwt_le64(r->body + 8), hwt_le64(r->body + 16));
		break;
	case PERF_RECORD_ITRACE_START:
		if (body_has(r, 8) && c)
			fprintf(sb->out, "PERF_RECORD_ITRACE_START  %x/%x", hwt_le32(r->body),
				hwt_le32(r->body + 4));
		if (body_has(r, 8) && v)
			fprintf(sb->out, "PERF_RECORD_ITRACE_START\n  pid: %x\n  tid: %x",
				hwt_le32(r->body), hwt_le32(r->body + 4));
		break;
	case PERF_RECORD_LOST_SAMPLES:
		if (body_has(r, 8) && c)
			fprintf(sb->out, "PERF_RECORD_LOST_SAMPLES  %" PRIx64, hwt_le64(r->body));
		break;
	case PERF_RECORD_SWITCH:
		fprintf(sb->out, "PERF_RECORD_SWITCH.%s",
			r->misc & PERF_RECORD_MISC_SWITCH_OUT ? "OUT" : "IN");
		break;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (body_has(r, 8) && c)
			fprintf(sb->out, "PERF_RECORD_SWITCH_CPU_WIDE.%s  %x/%x",
				r->misc & PERF_RECORD_MISC_SWITCH_OUT ? "OUT" : "IN",
				hwt_le32(r->body), hwt_le32(r->body + 4));
		break;
	default:
		if (c)
			fprintf(sb->out, "UNKNOWN (%x, %x)", r->type, r->misc);
		if (v)
			fprintf(sb->out, "UNKNOWN\n  type: %x\n  misc: %x", r->type, r->misc);
		break;
	}
	if (c) {
		fprintf(sb->out, "  {");
		if (r->has_pid)
			fprintf(sb->out, " %x/%x", r->pid, r->tid);
		if (r->has_time)
			fprintf(sb->out, " %" PRIx64, r->time);
		if (r->has_id)
			fprintf(sb->out, " %" PRIx64, r->id);
		if (r->has_cpu)
			fprintf(sb->out, " cpu-%x", r->cpu);
		if (r->has_stream)
			fprintf(sb->out, " %" PRIx64, r->stream_id);
		if (r->has_identifier)
			fprintf(sb->out, " %" PRIx64, r->identifier);
		fprintf(sb->out, " }");
	}
	if (v) {
		if (r->has_pid)
			fprintf(sb->out, "\n  pid: %x\n  tid: %x", r->pid, r->tid);
		if (r->has_time)
			fprintf(sb->out, "\n  time: %" PRIx64, r->time);
		if (r->has_id)
			fprintf(sb->out, "\n  id: %" PRIx64, r->id);
		if (r->has_cpu)
			fprintf(sb->out, "\n  cpu: %x", r->cpu);
		if (r->has_stream)
			fprintf(sb->out, "\n  stream id: %" PRIx64, r->stream_id);
		if (r->has_identifier)
			fprintf(sb->out, "\n  identifier: %" PRIx64, r->identifier);
	}
	fputc('\n', sb->out);
}

/* ------------------------------------------------------------------------ */
/* Contexts: one image per process                                           */

static struct sb_ctx *ctx_find(struct script_sb *sb, uint32_t pid)
{
	for (struct sb_ctx *c = sb->ctxs; c; c = c->next) {
		if (c->pid == pid)
			return c;
	}
	return NULL;
}

static struct sb_ctx *ctx_get(struct script_sb *sb, uint32_t pid)
{
	struct sb_ctx *c = ctx_find(sb, pid);
	char name[16];

	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	snprintf(name, sizeof(name), "pid-%x", pid);
	if (hwt_dec_image_alloc(&c->image, sb->ic, name) < 0) {
		free(c);
		return NULL;
	}
	c->pid = pid;
	c->next = sb->ctxs;
	sb->ctxs = c;
	return c;
}

/* Drops the context of pid; its image lives on (the decoder may use it). */
static int ctx_remove(struct script_sb *sb, uint32_t pid)
{
	struct sb_ctx **pp = &sb->ctxs, *c;

	while ((c = *pp) && c->pid != pid)
		pp = &c->next;
	if (!c)
		return 0;
	*pp = c->next;
	for (struct sb_stream *s = sb->active; s; s = s->link) {
		if (s->ctx == c)
			s->ctx = NULL;
		if (s->next_ctx == c)
			s->next_ctx = NULL;
	}
	for (struct sb_stream *s = sb->retired; s; s = s->link) {
		if (s->ctx == c)
			s->ctx = NULL;
		if (s->next_ctx == c)
			s->next_ctx = NULL;
	}
	{
		struct hwt_dec_image **p = realloc(sb->old, (sb->nold + 1) * sizeof(*p));

		if (!p) {
			hwt_dec_image_put(c->image);
			free(c);
			return SBE_NOMEM;
		}
		sb->old = p;
		sb->old[sb->nold++] = c->image;
	}
	free(c);
	return 0;
}

static int elf_abi(const char *path)
{
	uint8_t id[20];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return 0;
	n = fread(id, 1, sizeof(id), f);
	fclose(f);
	if (n < 20 ||
	    memcmp(id,
		   "\x7f"
		   "ELF",
		   4) ||
	    id[6] != 1)
		return 0;
	if (id[4] == 2)
		return 1;
	if (id[4] == 1)
		return hwt_le16(id + 18) == 62 ? 2 : hwt_le16(id + 18) == 3 ? 3 : 0;
	return 0;
}

static int do_map(struct script_sb *sb, struct sb_stream *s, uint32_t pid, const char *fn,
		  uint64_t pgoff, uint64_t len, uint64_t addr)
{
	struct sb_ctx *c = ctx_get(sb, pid);
	char path[4096];
	const char *file = fn;

	if (!c)
		return SBE_NOMEM;
	if (fn[0] == '[') {
		if (strcmp(fn, "[vdso]") != 0) {
			report(sb, s, SBW_SECTION_LOST);
			return 0;
		}
		file = c->abi == 1   ? s->cfg.vdso_x64
		       : c->abi == 2 ? s->cfg.vdso_x32
		       : c->abi == 3 ? s->cfg.vdso_ia32
				     : NULL;
		if (!file) {
			report(sb, s, SBE_BAD_CONFIG);
			return 0;
		}
	} else if (!strcmp(fn, "//anon") || strstr(fn, " (deleted)")) {
		report(sb, s, SBW_SECTION_LOST);
		return 0;
	} else if (s->cfg.sysroot) {
		snprintf(path, sizeof(path), "%s%s", s->cfg.sysroot, fn);
		file = path;
	}
	if (!c->abi)
		c->abi = elf_abi(file);
	if (hwt_dec_image_add_file(c->image, file, pgoff, len, addr) < 0) {
		/* As libipt: a file it cannot map is an error of the stream. */
		report(sb, s, SBE_BAD_RECORD);
		return SBE_BAD_RECORD;
	}
	return 0;
}

static int prepare_switch(struct script_sb *sb, struct sb_stream *s, uint32_t pid)
{
	struct sb_ctx *c = ctx_get(sb, pid);

	if (!c)
		return SBE_NOMEM;
	if (s->next_ctx == c)
		return 0;
	s->next_ctx = NULL;
	if (s->ctx == c)
		return 0;
	s->next_ctx = c;
	return 0;
}

static void do_switch(struct script_sb *sb, struct sb_stream *s)
{
	s->ctx = s->next_ctx;
	s->next_ctx = NULL;
	sb->current = s->ctx->image;
	sb->cur_pid = (int32_t)s->ctx->pid;
	if (sb->switch_note)
		fprintf(sb->out, "[context: %s]\n", hwt_dec_image_name(sb->current));
}

static bool ignore_mmap(uint16_t misc)
{
	/* Kernel code is taken from a core dump, not from files. */
	return (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
}

/* Applies the current record of s. primary: it may switch contexts. */
static int apply_record(struct script_sb *sb, struct sb_stream *s)
{
	const struct sb_rec *r = &s->rec;

	switch (r->type) {
	case PERF_RECORD_ITRACE_START:
		if (!s->primary || !body_has(r, 8))
			return 0;
		if (prepare_switch(sb, s, hwt_le32(r->body)) < 0)
			return SBE_NOMEM;
		/* Tracing just started: no need to wait for the kernel. */
		if (s->next_ctx)
			do_switch(sb, s);
		return 0;
	case PERF_RECORD_FORK: {
		uint32_t pid, ppid;
		struct sb_ctx *c, *parent;

		if (!body_has(r, 16))
			return SBE_BAD_RECORD;
		pid = hwt_le32(r->body);
		ppid = hwt_le32(r->body + 4);
		if (pid == ppid)
			return 0; /* a new thread */
		if (ctx_remove(sb, pid) < 0 || !(c = ctx_get(sb, pid)))
			return SBE_NOMEM;
		parent = ctx_find(sb, ppid);
		if (parent && hwt_dec_image_copy(c->image, parent->image) < 0)
			return SBE_NOMEM;
		return 0;
	}
	case PERF_RECORD_COMM: {
		uint32_t pid;
		struct sb_ctx *c;

		if (!(r->misc & PERF_RECORD_MISC_COMM_EXEC))
			return 0;
		if (!body_has(r, 8))
			return SBE_BAD_RECORD;
		pid = hwt_le32(r->body);
		/* exec: a new context replaces the old (which may still be
		 * running until the trace reaches the kernel). */
		if (ctx_remove(sb, pid) < 0 || !(c = ctx_get(sb, pid)))
			return SBE_NOMEM;
		if (!s->primary)
			return 0;
		return prepare_switch(sb, s, pid);
	}
	case PERF_RECORD_SWITCH:
		if (!s->primary || (r->misc & PERF_RECORD_MISC_SWITCH_OUT))
			return 0;
		if (!r->has_pid)
			return SBE_BAD_CONFIG;
		return prepare_switch(sb, s, r->pid);
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (!s->primary)
			return 0;
		if (!(r->misc & PERF_RECORD_MISC_SWITCH_OUT)) {
			if (!r->has_pid)
				return 0;
			return prepare_switch(sb, s, r->pid);
		}
		if (!body_has(r, 8))
			return SBE_BAD_RECORD;
		return prepare_switch(sb, s, hwt_le32(r->body));
	case PERF_RECORD_MMAP: {
		const char *fn = body_str(r, 32);

		if (ignore_mmap(r->misc))
			return 0;
		if (!fn)
			return SBE_BAD_RECORD;
		return do_map(sb, s, hwt_le32(r->body), fn, hwt_le64(r->body + 24),
			      hwt_le64(r->body + 16), hwt_le64(r->body + 8));
	}
	case PERF_RECORD_MMAP2: {
		const char *fn = body_str(r, 64);

		if (ignore_mmap(r->misc))
			return 0;
		if (!fn)
			return SBE_BAD_RECORD;
		return do_map(sb, s, hwt_le32(r->body), fn, hwt_le64(r->body + 24),
			      hwt_le64(r->body + 16), hwt_le64(r->body + 8));
	}
	case PERF_RECORD_LOST:
		report(sb, s, SBW_LOST);
		return 0;
	case PERF_RECORD_AUX:
		if (!s->primary || !body_has(r, 24))
			return 0;
		if (hwt_le64(r->body + 16) & PERF_AUX_FLAG_TRUNCATED)
			report(sb, s, SBW_TRACE_LOST);
		return 0;
	default:
		return 0;
	}
}

/* Fetches the next record of s. Returns 0, 1 at the end, or < 0. */
static int fetch(struct script_sb *sb, struct sb_stream *s)
{
	int n;

	s->cur = s->next;
	n = parse(s, s->next, &s->rec);
	if (n == 0)
		return 1;
	if (n < 0) {
		report(sb, s, n);
		return n;
	}
	s->next += (size_t)n;
	if (!s->rec.has_time) {
		s->tsc = 0;
		return 0;
	}
	s->rec.tsc = time_to_tsc(&s->cfg, s->rec.time);
	if (s->cfg.tsc_offset <= s->rec.tsc)
		s->rec.tsc -= s->cfg.tsc_offset;
	else
		s->rec.tsc = 0;
	s->tsc = s->rec.tsc;
	return 0;
}

static void add_active(struct script_sb *sb, struct sb_stream *s)
{
	struct sb_stream **pp = &sb->active;

	while (*pp && (*pp)->tsc < s->tsc)
		pp = &(*pp)->link;
	s->link = *pp;
	*pp = s;
}

static enum loc loc_of(const struct sb_stream *s, uint64_t ip)
{
	return ip < s->cfg.kernel_start ? LOC_IN_USER : LOC_IN_KERNEL;
}

static enum loc loc_suppressed(enum loc from)
{
	switch (from) {
	case LOC_LIKELY_KERNEL:
	case LOC_IN_KERNEL:
		return LOC_LIKELY_USER;
	case LOC_LIKELY_USER:
	case LOC_IN_USER:
		return LOC_LIKELY_KERNEL;
	default:
		return LOC_UNKNOWN;
	}
}

/* libipt-sb's ploc_from_event(). */
static enum loc loc_from_event(const struct sb_stream *s, const struct hwt_dec_context_query *q)
{
	const struct hwt_dec_event *e = q->event;

	switch (e->type) {
	case HWT_DEC_EV_ENABLED:
	case HWT_DEC_EV_ASYNC_BRANCH:
		return loc_of(s, e->ip);
	case HWT_DEC_EV_DISABLED:
		return q->ip_suppressed ? loc_suppressed(s->loc) : loc_of(s, e->ip);
	case HWT_DEC_EV_ASYNC_DISABLED:
		return q->ip_suppressed ? loc_suppressed(loc_of(s, e->at)) : loc_of(s, e->ip);
	case HWT_DEC_EV_ASYNC_PAGING:
		if (!q->ip_suppressed)
			return loc_of(s, e->ip);
		return LOC_LIKELY_KERNEL;
	case HWT_DEC_EV_PAGING:
		return LOC_LIKELY_KERNEL;
	case HWT_DEC_EV_OVERFLOW:
	case HWT_DEC_EV_EXEC_MODE:
	case HWT_DEC_EV_TSX:
	case HWT_DEC_EV_EXSTOP:
	case HWT_DEC_EV_MWAIT:
	case HWT_DEC_EV_PTWRITE:
	case HWT_DEC_EV_TICK:
		return q->ip_suppressed ? LOC_UNKNOWN : loc_of(s, e->ip);
	default:
		return LOC_UNKNOWN;
	}
}

/* The event part of libipt-sb's apply: track the location and place a
 * postponed context switch in the kernel (or where we do not know). */
static void present(struct script_sb *sb, struct sb_stream *s,
		    const struct hwt_dec_context_query *q)
{
	enum loc old = s->loc;

	if (!s->primary)
		return;
	s->loc = loc_from_event(s, q);
	if (!s->next_ctx)
		return;
	if (old == LOC_LIKELY_KERNEL || old == LOC_IN_KERNEL || old == LOC_UNKNOWN ||
	    s->loc == LOC_LIKELY_KERNEL || s->loc == LOC_IN_KERNEL || s->loc == LOC_UNKNOWN)
		do_switch(sb, s);
}

/* Turns what the hook printed into a note. Notes are numbered from 1 in
 * the order the hook made them; the decoder hands them back in the same
 * order (one decoding thread), so the array is a queue. */
static int take_note(struct script_sb *sb, uint64_t *note)
{
	char *text;

	*note = 0;
	if (fflush(sb->mem) != 0)
		return -ENOMEM;
	if (!sb->mem_len)
		return 0;
	text = malloc(sb->mem_len + 1);
	if (!text)
		return -ENOMEM;
	memcpy(text, sb->mem_buf, sb->mem_len);
	text[sb->mem_len] = 0;
	/* Reuse the stream: its size follows the write position. */
	rewind(sb->mem);
	sb->mem_len = 0;
	if (sb->nnotes == sb->cap_notes) {
		size_t cap = sb->cap_notes ? 2 * sb->cap_notes : 16;
		char **n = realloc(sb->notes, cap * sizeof(*n));

		if (!n) {
			free(text);
			return -ENOMEM;
		}
		sb->notes = n;
		sb->cap_notes = cap;
	}
	sb->notes[sb->nnotes++] = text;
	*note = sb->nnotes;
	return 0;
}

void script_sb_note(struct script_sb *sb, const struct hwt_dec_rec *rec, FILE *out)
{
	uint64_t i = rec->u.note.cookie;

	if (rec->type != HWT_DEC_REC_NOTE || !i || i > sb->nnotes || !sb->notes[i - 1])
		return;
	fputs(sb->notes[i - 1], out);
	free(sb->notes[i - 1]);
	sb->notes[i - 1] = NULL;
}

static int sb_hook_body(struct script_sb *sb, const struct hwt_dec_context_query *q,
			struct hwt_dec_context *out);

static int sb_hook(void *ctx, const struct hwt_dec_context_query *q, struct hwt_dec_context *out)
{
	struct script_sb *sb = ctx;
	int err;

	sb->out = sb->mem;
	err = sb_hook_body(sb, q, out);
	sb->out = stdout;
	if (err < 0)
		return err;
	return take_note(sb, &out->note);
}

static int sb_hook_body(struct script_sb *sb, const struct hwt_dec_context_query *q,
			struct hwt_dec_context *out)
{

	/* Records due by the event's time, in time order over all
	 * streams (libipt-sb ignores has_tsc: relative time works too). */
	while (sb->active && sb->active->tsc <= q->tsc) {
		struct sb_stream *s = sb->active;
		int err;

		sb->active = s->link;
		s->link = NULL;
		if (!sb->opts->quiet)
			print_record(sb, s);
		err = apply_record(sb, s);
		if (err < 0) {
			s->link = sb->removed;
			sb->removed = s;
			continue;
		}
		/* As libipt-sb: a due record is only applied; the event is
		 * presented to all streams afterwards. */
		err = fetch(sb, s);
		if (err) {
			if (err > 0) {
				s->link = sb->retired;
				sb->retired = s;
			} else {
				s->link = sb->removed;
				sb->removed = s;
			}
			continue;
		}
		add_active(sb, s);
	}
	if (q->event) {
		for (struct sb_stream *s = sb->active; s; s = s->link)
			present(sb, s, q);
		for (struct sb_stream *s = sb->retired; s; s = s->link)
			present(sb, s, q);
	}
	out->image = sb->current;
	out->pid = sb->cur_pid;
	out->tid = sb->cur_pid;
	return 0;
}

int script_sb_setup(struct script_sb *sb, struct hwt_dec_image *img, struct hwt_dec_config *cfg)
{
	(void)img;
	if (!sb->any)
		return 0;
	/* Fetch each stream's first record (errors drop the stream). */
	while (sb->pending) {
		struct sb_stream *s = sb->pending;
		int err;

		sb->pending = s->link;
		s->link = NULL;
		err = fetch(sb, s);
		if (err) {
			s->link = err > 0 ? sb->retired : sb->removed;
			if (err > 0)
				sb->retired = s;
			else
				sb->removed = s;
			continue;
		}
		add_active(sb, s);
	}
	/* Times in the views: the primary stream's conversion, unless given. */
	if (!cfg->tconv.valid) {
		for (struct sb_stream *s = sb->active; s; s = s->link) {
			if (!s->primary || s->cfg.time_mult <= 1)
				continue;
			cfg->tconv.valid = true;
			cfg->tconv.time_shift = s->cfg.time_shift;
			cfg->tconv.time_mult = s->cfg.time_mult;
			cfg->tconv.time_zero = s->cfg.time_zero;
			break;
		}
	}
	sb->mem = open_memstream(&sb->mem_buf, &sb->mem_len);
	if (!sb->mem)
		return -ENOMEM;
	cfg->context = sb_hook;
	cfg->context_ctx = sb;
	/* The hook keeps state: decode in one thread. */
	cfg->threads = 0;
	return 0;
}

void script_sb_finish(struct script_sb *sb)
{
	(void)sb;
	fflush(stdout);
}
