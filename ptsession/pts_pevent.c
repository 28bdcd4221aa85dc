/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptsession/pts_pevent.c - the perf-event sideband of a raw trace (libipt's
 * ptxed --pevent:* options, `hwtrace script --pt`): streams of perf records
 * as `perf record` writes them, one per sideband file, applied while the
 * decoder runs so that a trace recorded without our container decodes with
 * its processes' code and context switches.
 *
 * It behaves as libipt's sideband library does under ptxed, which the
 * conformance tests check: records are applied in time order over all
 * streams up to each query's time; a context switch of the primary stream
 * waits until the trace is in the kernel (or its location is unknown);
 * with HWT_PTS_PEV_COMPACT / VERBOSE each record is printed as it is
 * applied, with HWT_PTS_PEV_WARN the warnings. Records are parsed by
 * format's record parser, times converted by the decoder's TSC conversion,
 * and the processes' images built by pts_procs.c, as for recordings.
 *
 * The text the hook makes becomes a note: a HWT_DEC_REC_NOTE record in the
 * flow whose text hwt_pts_pevent_note() hands out, so that the sideband
 * lines fall into place even when segments are decoded ahead of output.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptsession/pts_int.h"

/* Where the trace is, as far as the events tell (libipt-sb's ploc). */
enum loc {
	LOC_UNKNOWN,
	LOC_IN_USER,
	LOC_IN_KERNEL,
	LOC_LIKELY_USER,
	LOC_LIKELY_KERNEL,
};

/* What ptxed's sideband diagnostics name. */
enum diag {
	DIAG_LOST,	   /* warning: "sideband lost" */
	DIAG_TRACE_LOST,   /* warning: "trace lost" */
	DIAG_SECTION_LOST, /* warning: "image section lost" */
	DIAG_BAD_CONFIG,   /* error: "bad configuration" */
	DIAG_BAD_RECORD,   /* error: "unknown payload" */
	DIAG_NOMEM,	   /* error: "out of memory" */
};

/* A context: a process's image generation (an exec or a fork replaces the
 * process; the one before may still run until the trace reaches the
 * kernel). */
struct pev_ctx {
	int32_t pid; /* -1: none */
	uint32_t gen;
};

/* A process's code ABI, for its vDSO (0 unknown, 1 x64, 2 x32, 3 ia32). */
struct pev_abi {
	int32_t pid;
	uint32_t gen;
	int abi;
};

struct pev_stream {
	char *name;
	const uint8_t *buf;
	size_t len;
	size_t cur, next; /* the current record, the one after it */
	bool primary;
	struct hwt_pts_pevent_config cfg;
	struct hwt_fmt_attr_info info;
	struct hwt_fmt_record rec;
	bool has_time;
	uint64_t tsc; /* the current record's time */
	enum loc loc;
	struct pev_ctx ctx, next_ctx;
	struct pev_stream *link;
};

struct hwt_pts_pevent {
	uint32_t flags;
	struct pts_procs procs;
	struct pev_abi *abis;
	size_t nabis, capabis;
	struct pev_stream *pending; /* added, not fetched yet */
	struct pev_stream *active;  /* by ascending tsc */
	struct pev_stream *retired; /* at their end */
	struct pev_stream *removed;
	/* The primary context: a process's generation, and its image at the
	 * last switch (what runs once that generation is replaced). */
	struct pev_ctx cur;
	struct hwt_dec_image *cur_img;
	struct hwt_buf *out; /* where text goes now */
	struct hwt_buf text; /* the hook's text, until it becomes a note */
	char **notes;
	size_t nnotes, cap_notes;
};

static char *dup_opt(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void cfg_fini(struct hwt_pts_pevent_config *c)
{
	free((char *)c->sysroot);
	free((char *)c->vdso_x64);
	free((char *)c->vdso_x32);
	free((char *)c->vdso_ia32);
}

static void streams_free(struct pev_stream *s)
{
	while (s) {
		struct pev_stream *n = s->link;

		free(s->name);
		cfg_fini(&s->cfg);
		free(s);
		s = n;
	}
}

void hwt_pts_pevent_config_init(struct hwt_pts_pevent_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->time_mult = 1;
	cfg->kernel_start = UINT64_MAX;
}

int hwt_pts_pevent_alloc(struct hwt_pts_pevent **out, struct hwt_dec_icache *ic, uint32_t flags)
{
	struct hwt_pts_pevent *pev;

	if (!out || !ic || (flags & ~(uint32_t)0x7f))
		return -HWT_EINVAL;
	pev = calloc(1, sizeof(*pev));
	if (!pev)
		return -ENOMEM;
	pev->flags = flags;
	pev->procs.ic = ic;
	pev->procs.hex_names = true;
	pev->cur.pid = -1;
	hwt_buf_init(&pev->text);
	*out = pev;
	return 0;
}

void hwt_pts_pevent_free(struct hwt_pts_pevent *pev)
{
	if (!pev)
		return;
	streams_free(pev->pending);
	streams_free(pev->active);
	streams_free(pev->retired);
	streams_free(pev->removed);
	hwt_dec_image_put(pev->cur_img);
	pts_procs_fini(&pev->procs);
	free(pev->abis);
	for (size_t i = 0; i < pev->nnotes; i++)
		free(pev->notes[i]);
	free(pev->notes);
	hwt_buf_fini(&pev->text);
	free(pev);
}

int hwt_pts_pevent_add(struct hwt_pts_pevent *pev, const char *name, const void *buf, size_t len,
		       bool primary, const struct hwt_pts_pevent_config *cfg)
{
	struct pev_stream *s;
	int err;

	if (!pev || !name || (!buf && len) || !cfg)
		return -HWT_EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	hwt_pts_pevent_config_init(&s->cfg);
	err = hwt_opts_copy(&s->cfg, sizeof(s->cfg), cfg);
	if (err < 0) {
		free(s);
		return err;
	}
	{
		/* The strings are copied. */
		const char *str[] = {s->cfg.sysroot, s->cfg.vdso_x64, s->cfg.vdso_x32,
				     s->cfg.vdso_ia32};

		s->cfg.sysroot = dup_opt(str[0]);
		s->cfg.vdso_x64 = dup_opt(str[1]);
		s->cfg.vdso_x32 = dup_opt(str[2]);
		s->cfg.vdso_ia32 = dup_opt(str[3]);
		s->name = strdup(name);
		if (!s->name || (str[0] && !s->cfg.sysroot) || (str[1] && !s->cfg.vdso_x64) ||
		    (str[2] && !s->cfg.vdso_x32) || (str[3] && !s->cfg.vdso_ia32)) {
			streams_free(s);
			return -ENOMEM;
		}
	}
	s->buf = buf;
	s->len = len;
	s->primary = primary;
	s->info.sample_type = s->cfg.sample_type;
	s->info.sample_id_all = true;
	s->loc = LOC_UNKNOWN;
	s->ctx.pid = s->next_ctx.pid = -1;
	s->link = pev->pending;
	pev->pending = s;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Diagnostics and printing, as ptxed shows them                             */

static void put(struct hwt_pts_pevent *pev, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Text goes to the current buffer (a note being made, or the caller's). */
static void put(struct hwt_pts_pevent *pev, const char *fmt, ...)
{
	char line[4200];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		hwt_buf_append(pev->out, line,
			       (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void report(struct hwt_pts_pevent *pev, const struct pev_stream *s, enum diag d)
{
	static const char *const what[] = {
	    [DIAG_LOST] = "sideband lost",
	    [DIAG_TRACE_LOST] = "trace lost",
	    [DIAG_SECTION_LOST] = "image section lost",
	    [DIAG_BAD_CONFIG] = "bad configuration",
	    [DIAG_BAD_RECORD] = "unknown payload",
	    [DIAG_NOMEM] = "out of memory",
	};
	bool warning = d <= DIAG_SECTION_LOST;

	if (warning && !(pev->flags & HWT_PTS_PEV_WARN))
		return;
	put(pev, "[%s:%016zx sideband %s: %s]\n", s->name, s->cur, warning ? "warning" : "error",
	    what[d]);
}

/* One record, as ptxed's --sb:compact or --sb:verbose prints it. */
static void print_record(struct hwt_pts_pevent *pev, const struct pev_stream *s)
{
	const struct hwt_fmt_record *r = &s->rec;
	const struct hwt_fmt_sample_id *id = &r->id;
	uint32_t f = pev->flags;
	bool c = f & HWT_PTS_PEV_COMPACT, v = f & HWT_PTS_PEV_VERBOSE;
	const char *sfx;

	if (!c && !v)
		return;
	if ((f & HWT_PTS_PEV_FILENAME) && (f & HWT_PTS_PEV_OFFSET))
		put(pev, "%s:%016zx  ", s->name, s->cur);
	else if (f & HWT_PTS_PEV_FILENAME)
		put(pev, "%s  ", s->name);
	else if (f & HWT_PTS_PEV_OFFSET)
		put(pev, "%016zx  ", s->cur);
	if ((f & HWT_PTS_PEV_TIME) && s->has_time)
		put(pev, "%016" PRIx64 "  ", s->tsc);
	switch (r->type) {
	case PERF_RECORD_MMAP:
		if (c)
			put(pev,
			    "PERF_RECORD_MMAP  %x/%x, %" PRIx64 ", %" PRIx64 ", %" PRIx64 ", %s",
			    r->u.mmap.pid, r->u.mmap.tid, r->u.mmap.addr, r->u.mmap.len,
			    r->u.mmap.pgoff, r->u.mmap.filename);
		if (v)
			put(pev,
			    "PERF_RECORD_MMAP\n  pid: %x\n  tid: %x\n  addr: %" PRIx64
			    "\n  len: %" PRIx64 "\n  pgoff: %" PRIx64 "\n  filename: %s",
			    r->u.mmap.pid, r->u.mmap.tid, r->u.mmap.addr, r->u.mmap.len,
			    r->u.mmap.pgoff, r->u.mmap.filename);
		break;
	case PERF_RECORD_MMAP2:
		if (c)
			put(pev,
			    "PERF_RECORD_MMAP2  %x/%x, %" PRIx64 ", %" PRIx64 ", %" PRIx64
			    ", %x, %x, %" PRIx64 ", %" PRIx64 ", %x, %x, %s",
			    r->u.mmap.pid, r->u.mmap.tid, r->u.mmap.addr, r->u.mmap.len,
			    r->u.mmap.pgoff, r->u.mmap.maj, r->u.mmap.min, r->u.mmap.ino,
			    r->u.mmap.ino_generation, r->u.mmap.prot, r->u.mmap.flags,
			    r->u.mmap.filename);
		if (v)
			put(pev,
			    "PERF_RECORD_MMAP2\n  pid: %x\n  tid: %x\n  addr: %" PRIx64
			    "\n  len: %" PRIx64 "\n  pgoff: %" PRIx64 "\n  filename: %s",
			    r->u.mmap.pid, r->u.mmap.tid, r->u.mmap.addr, r->u.mmap.len,
			    r->u.mmap.pgoff, r->u.mmap.filename);
		break;
	case PERF_RECORD_LOST:
		put(pev,
		    c ? "PERF_RECORD_LOST  %" PRIx64 ", %" PRIx64
		      : "PERF_RECORD_LOST\n  id: %" PRIx64 "\n  lost: %" PRIx64,
		    r->u.lost.id, r->u.lost.lost);
		break;
	case PERF_RECORD_COMM:
		sfx = r->misc & PERF_RECORD_MISC_COMM_EXEC ? ".EXEC" : "";
		if (c)
			put(pev, "PERF_RECORD_COMM%s  %x/%x, %s", sfx, r->u.comm.pid, r->u.comm.tid,
			    r->u.comm.comm);
		if (v)
			put(pev, "PERF_RECORD_COMM%s\n  pid: %x\n  tid: %x\n  comm: %s", sfx,
			    r->u.comm.pid, r->u.comm.tid, r->u.comm.comm);
		break;
	case PERF_RECORD_EXIT:
	case PERF_RECORD_FORK:
		sfx = r->type == PERF_RECORD_FORK ? "FORK" : "EXIT";
		if (c)
			put(pev, "PERF_RECORD_%s  %x/%x, %x/%x, %" PRIx64, sfx, r->u.fork.pid,
			    r->u.fork.tid, r->u.fork.ppid, r->u.fork.ptid, r->u.fork.time);
		if (v)
			put(pev,
			    "PERF_RECORD_%s\n  pid: %x\n  ppid: %x\n  tid: %x\n  ptid: %x\n"
			    "  time: %" PRIx64,
			    sfx, r->u.fork.pid, r->u.fork.ppid, r->u.fork.tid, r->u.fork.ptid,
			    r->u.fork.time);
		break;
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		if (c)
			put(pev, "PERF_RECORD_%s  %" PRIx64 ", %" PRIx64 ", %" PRIx64,
			    r->type == PERF_RECORD_THROTTLE ? "THROTTLE" : "UNTHROTTLE",
			    r->u.throttle.time, r->u.throttle.id, r->u.throttle.stream_id);
		break;
	case PERF_RECORD_AUX:
		if (c)
			put(pev, "PERF_RECORD_AUX%s  %" PRIx64 ", %" PRIx64 ", %" PRIx64,
			    r->u.aux.flags & PERF_AUX_FLAG_TRUNCATED ? ".TRUNCATED" : "",
			    r->u.aux.aux_offset, r->u.aux.aux_size, r->u.aux.flags);
		break;
	case PERF_RECORD_ITRACE_START:
		if (c)
			put(pev, "PERF_RECORD_ITRACE_START  %x/%x", r->u.itrace_start.pid,
			    r->u.itrace_start.tid);
		if (v)
			put(pev, "PERF_RECORD_ITRACE_START\n  pid: %x\n  tid: %x",
			    r->u.itrace_start.pid, r->u.itrace_start.tid);
		break;
	case PERF_RECORD_LOST_SAMPLES:
		if (c)
			put(pev, "PERF_RECORD_LOST_SAMPLES  %" PRIx64, r->u.lost_samples.lost);
		break;
	case PERF_RECORD_SWITCH:
		put(pev, "PERF_RECORD_SWITCH.%s",
		    r->misc & PERF_RECORD_MISC_SWITCH_OUT ? "OUT" : "IN");
		break;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (c)
			put(pev, "PERF_RECORD_SWITCH_CPU_WIDE.%s  %x/%x",
			    r->misc & PERF_RECORD_MISC_SWITCH_OUT ? "OUT" : "IN",
			    r->u.sw.next_prev_pid, r->u.sw.next_prev_tid);
		break;
	default:
		if (c)
			put(pev, "UNKNOWN (%x, %x)", r->type, r->misc);
		if (v)
			put(pev, "UNKNOWN\n  type: %x\n  misc: %x", r->type, r->misc);
		break;
	}
	if (c) {
		put(pev, "  {");
		if (id->present & PERF_SAMPLE_TID)
			put(pev, " %x/%x", id->pid, id->tid);
		if (id->present & PERF_SAMPLE_TIME)
			put(pev, " %" PRIx64, id->time);
		if (id->present & PERF_SAMPLE_ID)
			put(pev, " %" PRIx64, id->id);
		if (id->present & PERF_SAMPLE_CPU)
			put(pev, " cpu-%x", id->cpu);
		if (id->present & PERF_SAMPLE_STREAM_ID)
			put(pev, " %" PRIx64, id->stream_id);
		if (id->present & PERF_SAMPLE_IDENTIFIER)
			put(pev, " %" PRIx64, id->id);
		put(pev, " }");
	}
	if (v) {
		if (id->present & PERF_SAMPLE_TID)
			put(pev, "\n  pid: %x\n  tid: %x", id->pid, id->tid);
		if (id->present & PERF_SAMPLE_TIME)
			put(pev, "\n  time: %" PRIx64, id->time);
		if (id->present & PERF_SAMPLE_ID)
			put(pev, "\n  id: %" PRIx64, id->id);
		if (id->present & PERF_SAMPLE_CPU)
			put(pev, "\n  cpu: %x", id->cpu);
		if (id->present & PERF_SAMPLE_STREAM_ID)
			put(pev, "\n  stream id: %" PRIx64, id->stream_id);
		if (id->present & PERF_SAMPLE_IDENTIFIER)
			put(pev, "\n  identifier: %" PRIx64, id->id);
	}
	put(pev, "\n");
}

/* ------------------------------------------------------------------------ */
/* Contexts: the processes' images (pts_procs.c)                             */

/* Makes sure pid has an image (a new process starts empty). */
static int ctx_get(struct hwt_pts_pevent *pev, int32_t pid, uint64_t time, struct pev_ctx *ctx)
{
	struct pts_proc *p = pts_procs_get(&pev->procs, pid);

	if (!p || (!p->nvers && !pts_proc_edit(&pev->procs, p, time, true)))
		return -ENOMEM;
	ctx->pid = pid;
	ctx->gen = p->gen;
	return 0;
}

static bool ctx_same(struct pev_ctx a, struct pev_ctx b)
{
	return a.pid == b.pid && a.gen == b.gen;
}

/* Whether ctx is still its process's current generation. */
static bool ctx_live(const struct hwt_pts_pevent *pev, struct pev_ctx ctx)
{
	const struct pts_proc *p = NULL;

	for (size_t i = 0; i < pev->procs.nprocs && !p; i++)
		p = pev->procs.procs[i].pid == ctx.pid ? &pev->procs.procs[i] : NULL;
	return p && p->gen == ctx.gen;
}

/* Process pid is replaced (exec, or a fork reusing its pid): when it is
 * the current context, its image as it is now stays current until the next
 * switch; its contexts are gone from the streams (libipt-sb removes the
 * context; a switch to the pid then finds the new one). */
static int replace_process(struct hwt_pts_pevent *pev, int32_t pid, int32_t ppid, bool fork,
			   uint64_t time)
{
	if (pev->cur.pid == pid && ctx_live(pev, pev->cur)) {
		struct hwt_dec_image *img = pts_procs_latest(&pev->procs, pid);

		hwt_dec_image_put(pev->cur_img);
		pev->cur_img = img ? hwt_dec_image_get(img) : NULL;
	}
	/* A fork copies the parent's image; without one (and on exec) the
	 * process starts empty. */
	if (fork && pts_procs_latest(&pev->procs, ppid)) {
		if (pts_procs_fork(&pev->procs, ppid, pid, time) < 0)
			return -ENOMEM;
	} else if (pts_procs_exec(&pev->procs, pid, time) < 0) {
		return -ENOMEM;
	}
	return 0;
}

static void ctx_forget(struct hwt_pts_pevent *pev, int32_t pid)
{
	struct pev_stream *lists[] = {pev->active, pev->retired};

	for (size_t i = 0; i < HWT_ARRAY_SIZE(lists); i++) {
		for (struct pev_stream *s = lists[i]; s; s = s->link) {
			if (s->ctx.pid == pid && !ctx_live(pev, s->ctx))
				s->ctx.pid = -1;
			if (s->next_ctx.pid == pid && !ctx_live(pev, s->next_ctx))
				s->next_ctx.pid = -1;
		}
	}
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

/* The ABI of process pid's current generation (from its first mapped
 * file), set from path when not known yet. */
static int abi_of(struct hwt_pts_pevent *pev, struct pev_ctx ctx, const char *path)
{
	struct pev_abi *a = NULL;

	for (size_t i = 0; i < pev->nabis && !a; i++)
		a = pev->abis[i].pid == ctx.pid ? &pev->abis[i] : NULL;
	if (!a) {
		if (pts_grow(&pev->abis, &pev->capabis, pev->nabis + 1, sizeof(*pev->abis)) < 0)
			return 0;
		a = &pev->abis[pev->nabis++];
		a->pid = ctx.pid;
		a->gen = ctx.gen;
		a->abi = 0;
	}
	if (a->gen != ctx.gen) {
		a->gen = ctx.gen;
		a->abi = 0;
	}
	if (!a->abi && path)
		a->abi = elf_abi(path);
	return a->abi;
}

static int do_map(struct hwt_pts_pevent *pev, struct pev_stream *s, const struct hwt_fmt_mmap *m)
{
	const char *fn = m->filename, *file = fn;
	int32_t pid = (int32_t)m->pid;
	struct hwt_dec_image *img;
	struct pev_ctx ctx;
	char path[4096];
	uint64_t len;
	int abi;

	if (ctx_get(pev, pid, s->tsc, &ctx) < 0)
		return -ENOMEM;
	if (fn[0] == '[') {
		if (strcmp(fn, "[vdso]") != 0) {
			report(pev, s, DIAG_SECTION_LOST);
			return 0;
		}
		abi = abi_of(pev, ctx, NULL);
		file = abi == 1	  ? s->cfg.vdso_x64
		       : abi == 2 ? s->cfg.vdso_x32
		       : abi == 3 ? s->cfg.vdso_ia32
				  : NULL;
		if (!file) {
			report(pev, s, DIAG_BAD_CONFIG);
			return 0;
		}
	} else if (!strcmp(fn, "//anon") || strstr(fn, " (deleted)")) {
		report(pev, s, DIAG_SECTION_LOST);
		return 0;
	} else if (s->cfg.sysroot) {
		snprintf(path, sizeof(path), "%s%s", s->cfg.sysroot, fn);
		file = path;
	}
	abi_of(pev, ctx, file);
	img = pts_proc_edit(&pev->procs, pts_procs_get(&pev->procs, pid), s->tsc, false);
	if (!img)
		return -ENOMEM;
	/* As libipt: a file it cannot map is an error of the stream (checked
	 * here: the decoder checks its files when it first reads code). */
	len = m->len;
	if (hwt_dec_file_check(file, m->pgoff, &len) < 0 ||
	    hwt_dec_image_add_file(img, file, m->pgoff, len, m->start) < 0) {
		report(pev, s, DIAG_BAD_RECORD);
		return -HWT_EFORMAT;
	}
	return 0;
}

static int prepare_switch(struct hwt_pts_pevent *pev, struct pev_stream *s, int32_t pid)
{
	struct pev_ctx c;

	if (ctx_get(pev, pid, s->tsc, &c) < 0)
		return -ENOMEM;
	if (s->next_ctx.pid >= 0 && ctx_same(s->next_ctx, c))
		return 0;
	s->next_ctx.pid = -1;
	if (s->ctx.pid >= 0 && ctx_same(s->ctx, c))
		return 0;
	s->next_ctx = c;
	return 0;
}

static void do_switch(struct hwt_pts_pevent *pev, struct pev_stream *s)
{
	struct hwt_dec_image *img;

	s->ctx = s->next_ctx;
	s->next_ctx.pid = -1;
	img = pts_procs_latest(&pev->procs, s->ctx.pid);
	hwt_dec_image_put(pev->cur_img);
	pev->cur_img = img ? hwt_dec_image_get(img) : NULL;
	pev->cur = s->ctx;
	if (pev->flags & HWT_PTS_PEV_SWITCH)
		put(pev, "[context: %s]\n", img ? hwt_dec_image_name(img) : "");
}

/* Applies the current record of s (primary: it may switch contexts).
 * Returns 0, or a negative error that retires the stream. */
static int apply_record(struct hwt_pts_pevent *pev, struct pev_stream *s)
{
	const struct hwt_fmt_record *r = &s->rec;
	struct hwt_fmt_mmap m;
	struct pev_ctx c;
	int32_t pid;

	switch (r->type) {
	case PERF_RECORD_ITRACE_START:
		if (!s->primary)
			return 0;
		if (prepare_switch(pev, s, (int32_t)r->u.itrace_start.pid) < 0)
			return -ENOMEM;
		/* Tracing just started: no need to wait for the kernel. */
		if (s->next_ctx.pid >= 0)
			do_switch(pev, s);
		return 0;
	case PERF_RECORD_FORK:
		if (r->u.fork.pid == r->u.fork.ppid)
			return 0; /* a new thread */
		pid = (int32_t)r->u.fork.pid;
		if (replace_process(pev, pid, (int32_t)r->u.fork.ppid, true, s->tsc) < 0)
			return -ENOMEM;
		ctx_forget(pev, pid);
		return ctx_get(pev, pid, s->tsc, &c);
	case PERF_RECORD_COMM:
		if (!(r->misc & PERF_RECORD_MISC_COMM_EXEC))
			return 0;
		/* exec: a new context replaces the old (which may still be
		 * running until the trace reaches the kernel). */
		pid = (int32_t)r->u.comm.pid;
		if (replace_process(pev, pid, -1, false, s->tsc) < 0)
			return -ENOMEM;
		ctx_forget(pev, pid);
		if (ctx_get(pev, pid, s->tsc, &c) < 0)
			return -ENOMEM;
		return s->primary ? prepare_switch(pev, s, pid) : 0;
	case PERF_RECORD_SWITCH:
		if (!s->primary || (r->misc & PERF_RECORD_MISC_SWITCH_OUT))
			return 0;
		if (!(r->id.present & PERF_SAMPLE_TID))
			return -HWT_EINVAL;
		return prepare_switch(pev, s, (int32_t)r->id.pid);
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (!s->primary)
			return 0;
		if (!(r->misc & PERF_RECORD_MISC_SWITCH_OUT)) {
			if (!(r->id.present & PERF_SAMPLE_TID))
				return 0;
			return prepare_switch(pev, s, (int32_t)r->id.pid);
		}
		return prepare_switch(pev, s, (int32_t)r->u.sw.next_prev_pid);
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		/* Kernel code comes from a core dump, not from files. */
		hwt_fmt_mmap_get(r, &m);
		return m.pid == UINT32_MAX ? 0 : do_map(pev, s, &m);
	case PERF_RECORD_LOST:
		report(pev, s, DIAG_LOST);
		return 0;
	case PERF_RECORD_AUX:
		if (s->primary && (r->u.aux.flags & PERF_AUX_FLAG_TRUNCATED))
			report(pev, s, DIAG_TRACE_LOST);
		return 0;
	default:
		return 0;
	}
}

/* Fetches the next record of s. Returns 0, 1 at the end, or < 0 (reported:
 * the stream is removed). */
static int fetch(struct hwt_pts_pevent *pev, struct pev_stream *s)
{
	int err;

	s->cur = s->next;
	if (s->next >= s->len)
		return 1;
	err = hwt_fmt_record_parse(&s->info, s->buf + s->next, s->len - s->next, &s->rec);
	if (err < 0 && err != -HWT_ENOTSUP) {
		report(pev, s, DIAG_BAD_RECORD);
		return err;
	}
	s->next += s->rec.size;
	s->has_time = (s->rec.id.present & PERF_SAMPLE_TIME) != 0;
	s->tsc = 0;
	if (s->has_time) {
		struct hwt_dec_tconv tc = {
		    .valid = true,
		    .time_shift = s->cfg.time_shift,
		    .time_mult = s->cfg.time_mult,
		    .time_zero = s->cfg.time_zero,
		};
		uint64_t tsc = hwt_dec_perf_to_tsc(&tc, s->rec.id.time);

		s->tsc = s->cfg.tsc_offset <= tsc ? tsc - s->cfg.tsc_offset : 0;
	}
	return 0;
}

static void add_active(struct hwt_pts_pevent *pev, struct pev_stream *s)
{
	struct pev_stream **pp = &pev->active;

	while (*pp && (*pp)->tsc < s->tsc)
		pp = &(*pp)->link;
	s->link = *pp;
	*pp = s;
}

/* Moves s (unlinked) to the list its fetch result says. */
static void after_fetch(struct hwt_pts_pevent *pev, struct pev_stream *s, int err)
{
	if (!err) {
		add_active(pev, s);
	} else if (err > 0) {
		s->link = pev->retired;
		pev->retired = s;
	} else {
		s->link = pev->removed;
		pev->removed = s;
	}
}

static enum loc loc_of(const struct pev_stream *s, uint64_t ip)
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
static enum loc loc_from_event(const struct pev_stream *s, const struct hwt_dec_context_query *q)
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
static void present(struct hwt_pts_pevent *pev, struct pev_stream *s,
		    const struct hwt_dec_context_query *q)
{
	enum loc old = s->loc;

	if (!s->primary)
		return;
	s->loc = loc_from_event(s, q);
	if (s->next_ctx.pid < 0)
		return;
	if (old == LOC_LIKELY_KERNEL || old == LOC_IN_KERNEL || old == LOC_UNKNOWN ||
	    s->loc == LOC_LIKELY_KERNEL || s->loc == LOC_IN_KERNEL || s->loc == LOC_UNKNOWN)
		do_switch(pev, s);
}

/* Turns the hook's text into a note. Notes are numbered from 1 in the
 * order the hook made them. */
static int take_note(struct hwt_pts_pevent *pev, uint64_t *note)
{
	char *text;

	*note = 0;
	if (!pev->text.len)
		return 0;
	if (pts_grow(&pev->notes, &pev->cap_notes, pev->nnotes + 1, sizeof(*pev->notes)) < 0)
		return -ENOMEM;
	text = malloc(pev->text.len + 1);
	if (!text)
		return -ENOMEM;
	memcpy(text, pev->text.data, pev->text.len);
	text[pev->text.len] = 0;
	pev->text.len = 0;
	pev->notes[pev->nnotes++] = text;
	*note = pev->nnotes;
	return 0;
}

int hwt_pts_pevent_note(struct hwt_pts_pevent *pev, uint64_t i, struct hwt_buf *out)
{
	int err;

	if (!pev || !out)
		return -HWT_EINVAL;
	if (!i || i > pev->nnotes || !pev->notes[i - 1])
		return 0;
	err = hwt_buf_append(out, pev->notes[i - 1], strlen(pev->notes[i - 1]));
	free(pev->notes[i - 1]);
	pev->notes[i - 1] = NULL;
	return err;
}

static int hook(void *ctx, const struct hwt_dec_context_query *q, struct hwt_dec_context *out)
{
	struct hwt_pts_pevent *pev = ctx;
	struct hwt_dec_image *img;

	pev->out = &pev->text;
	/* Records due by the query's time, in time order over all streams
	 * (libipt-sb ignores has_tsc: relative time works too). */
	while (pev->active && pev->active->tsc <= q->tsc) {
		struct pev_stream *s = pev->active;
		int err;

		pev->active = s->link;
		s->link = NULL;
		print_record(pev, s);
		err = apply_record(pev, s);
		if (err == -ENOMEM)
			return err;
		if (err < 0) {
			s->link = pev->removed;
			pev->removed = s;
			continue;
		}
		/* As libipt-sb: a due record is only applied; the event is
		 * presented to all streams afterwards. */
		after_fetch(pev, s, fetch(pev, s));
	}
	if (q->event) {
		for (struct pev_stream *s = pev->active; s; s = s->link)
			present(pev, s, q);
		for (struct pev_stream *s = pev->retired; s; s = s->link)
			present(pev, s, q);
	}
	/* The current process's latest image, with what was mapped since the
	 * switch; once that process is replaced, the image it had. */
	img = pev->cur.pid >= 0 && ctx_live(pev, pev->cur)
		  ? pts_procs_latest(&pev->procs, pev->cur.pid)
		  : pev->cur_img;
	out->image = img;
	out->pid = pev->cur.pid;
	out->tid = pev->cur.pid;
	return take_note(pev, &out->note);
}

int hwt_pts_pevent_setup(struct hwt_pts_pevent *pev, struct hwt_dec_config *cfg,
			 struct hwt_buf *out)
{
	if (!pev || !cfg || !out)
		return -HWT_EINVAL;
	/* Each stream's first record (an error drops the stream). */
	pev->out = out;
	while (pev->pending) {
		struct pev_stream *s = pev->pending;

		pev->pending = s->link;
		s->link = NULL;
		after_fetch(pev, s, fetch(pev, s));
	}
	/* Times in the views: the primary stream's conversion, unless given. */
	if (!cfg->tconv.valid) {
		for (struct pev_stream *s = pev->active; s; s = s->link) {
			if (!s->primary || s->cfg.time_mult <= 1)
				continue;
			cfg->tconv.valid = true;
			cfg->tconv.time_shift = s->cfg.time_shift;
			cfg->tconv.time_mult = s->cfg.time_mult;
			cfg->tconv.time_zero = s->cfg.time_zero;
			break;
		}
	}
	cfg->context = hook;
	cfg->context_ctx = pev;
	/* The hook keeps state: decode on one thread. */
	cfg->threads = 0;
	return 0;
}
