/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptsession/ptsession.c - the PT session: opens a recording's sideband
 * (pts_sb.c), then decodes each AUX stream with its own decoder, feeding the
 * stream's segments in AUX order and reporting every loss (offset gaps,
 * flagged AUX records, data that cannot be read, data announced but never
 * stored) where it happened, so it shows as a counted GAP record. Per-thread
 * streams whose process's code never changes get one image and no hook, so
 * the fast engine and parallel segments apply; per-CPU streams, and
 * processes that exec or map over their code, go through the context hook,
 * which looks up thread and image by time in the tables of the pass. The
 * session's own sink applies the time and pid/tid filters and passes the
 * records on to the caller's sinks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ptsession/pts_int.h"

void hwt_pts_config_init(struct hwt_pts_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->engine = HWT_DEC_ENGINE_FAST;
}

bool hwt_pts_session_has_pt(const struct hwt_fmt_session *s)
{
	const struct hwt_fmt_evlist *ev;

	if (!s)
		return false;
	if (hwt_fmt_session_naux(s) || hwt_fmt_session_meta_find(s, HWT_META_PT_EMULATED) ||
	    hwt_fmt_session_meta_find(s, HWT_META_PERF_AUXTRACE_INFO) ||
	    hwt_fmt_session_meta_find(s, "pt.config.config"))
		return true;
	ev = hwt_fmt_session_evlist(s);
	for (size_t i = 0; ev && i < hwt_fmt_evlist_count(ev); i++) {
		if (!strncmp(hwt_fmt_evlist_event(ev, i)->name, "intel_pt", 8))
			return true;
	}
	return false;
}

static int32_t *copy_ids(const int32_t *v, size_t n)
{
	int32_t *c;

	if (!n)
		return NULL;
	c = malloc(n * sizeof(*c));
	if (c)
		memcpy(c, v, n * sizeof(*c));
	return c;
}

static bool in_ids(const int32_t *v, size_t n, int32_t x)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i] == x)
			return true;
	}
	return false;
}

/* Whether the pid and tid filters leave out thread (pid, tid). */
static inline bool ids_out(const struct hwt_pts *pts, int32_t pid, int32_t tid)
{
	return (pts->cfg.npids && !in_ids(pts->pids, pts->cfg.npids, pid)) ||
	       (pts->cfg.ntids && !in_ids(pts->tids, pts->cfg.ntids, tid));
}

static int load_meta(struct hwt_pts *pts)
{
	const struct hwt_fmt_meta *m;
	size_t plen = strlen(HWT_META_BUILDID_PREFIX);
	int err;

	m = hwt_fmt_session_meta_find(pts->s, HWT_META_VDSO_IMAGE);
	if (m && m->type == HWT_FMT_META_BYTES && m->len) {
		pts->vdso = m->v.bytes;
		pts->vdso_size = m->len;
		err = hwt_sym_aspace_image(pts->aspace, "[vdso]", m->v.bytes, m->len);
		if (err == -ENOMEM)
			return err;
	}
	for (size_t i = 0; i < hwt_fmt_session_nmeta(pts->s); i++) {
		m = hwt_fmt_session_meta(pts->s, i);
		if (!m || m->type != HWT_FMT_META_BYTES ||
		    strncmp(m->key, HWT_META_BUILDID_PREFIX, plen))
			continue;
		err = hwt_sym_aspace_build_id(pts->aspace, m->key + plen, m->v.bytes, m->len);
		if (err == -ENOMEM)
			return err;
	}
	m = hwt_fmt_session_meta_find(pts->s, HWT_META_PT_EMULATED);
	pts->st.emulated = m && m->type == HWT_FMT_META_U64 && m->v.u64;
	return 0;
}

int hwt_pts_open(struct hwt_pts **out, struct hwt_fmt_session *session,
		 const struct hwt_pts_config *cfg, uint64_t *err_offset)
{
	struct hwt_sym_aspace_config acfg;
	struct hwt_pts_config defaults;
	struct hwt_pts *pts;
	int err;

	if (!out)
		return -HWT_EINVAL;
	*out = NULL;
	hwt_pts_config_init(&defaults);
	if (cfg && hwt_opts_copy(&defaults, sizeof(defaults), cfg) < 0)
		return -HWT_EINVAL;
	cfg = &defaults;
	if (!session || cfg->engine > HWT_DEC_ENGINE_PTXED || cfg->stitch > HWT_PTS_STITCH_ON ||
	    (cfg->npids && !cfg->pids) || (cfg->ntids && !cfg->tids))
		return -HWT_EINVAL;
	if (!hwt_pts_session_has_pt(session))
		return -HWT_ENOPT;
	pts = calloc(1, sizeof(*pts));
	if (!pts)
		return -ENOMEM;
	pts->kern_fd = pts->kallsyms_fd = -1;
	pts->cfg = *cfg;
	pts->s = session;
	pts->floor_pid = -1;
	err = -ENOMEM;
	pts->pids = copy_ids(cfg->pids, cfg->npids);
	pts->tids = copy_ids(cfg->tids, cfg->ntids);
	pts->cfg.pids = pts->pids;
	pts->cfg.tids = pts->tids;
	if ((cfg->npids && !pts->pids) || (cfg->ntids && !pts->tids))
		goto error;
	if (cfg->kallsyms) {
		pts->kallsyms = strdup(cfg->kallsyms);
		if (!pts->kallsyms)
			goto error;
	}
	pts->cfg.kallsyms = pts->kallsyms;
	pts_sb_config(pts);
	err = hwt_dec_icache_alloc(&pts->ic, &pts->cfg.log);
	if (err < 0)
		goto error;
	pts->procs.ic = pts->ic;
	err = hwt_dec_image_alloc(&pts->empty, pts->ic, "unknown process");
	if (err == 0)
		err = pts_kern_load(pts);
	if (err < 0)
		goto error;
	pts->sym_cache = cfg->sym_cache;
	if (!pts->sym_cache) {
		struct hwt_sym_config scfg;

		hwt_sym_config_init(&scfg);
		scfg.logger = pts->cfg.log;
		err = hwt_sym_cache_alloc(&scfg, &pts->own_cache);
		if (err < 0)
			goto error;
		pts->sym_cache = pts->own_cache;
	}
	hwt_sym_aspace_config_init(&acfg);
	acfg.logger = pts->cfg.log;
	acfg.cache = pts->sym_cache;
	acfg.kallsyms = pts->kallsyms;
	err = hwt_sym_aspace_alloc(&acfg, &pts->aspace);
	if (err < 0)
		goto error;
	err = load_meta(pts);
	if (err < 0)
		goto error;
	err = pts_sb_read(pts, err_offset);
	if (err < 0)
		goto error;
	*out = pts;
	return 0;
error:
	hwt_pts_close(pts);
	return err;
}

void hwt_pts_close(struct hwt_pts *pts)
{
	if (!pts)
		return;
	pts_procs_fini(&pts->procs);
	for (size_t i = 0; i < pts->nstreams; i++) {
		free(pts->streams[i].marks);
		free(pts->streams[i].sw);
	}
	free(pts->streams);
	for (size_t i = 0; i < pts->nfiles; i++)
		free(pts->files[i].path);
	free(pts->files);
	free(pts->tidmap);
	free(pts->imgtimes);
	hwt_dec_image_put(pts->empty);
	hwt_dec_icache_free(pts->ic);
	hwt_sym_aspace_free(pts->aspace);
	hwt_sym_cache_free(pts->own_cache);
	free(pts->sinks);
	free(pts->pids);
	free(pts->tids);
	free(pts->kallsyms);
	pts_kern_free(pts);
	for (size_t i = 0; i < pts->captcounts; i++)
		free(pts->tcounts[i].frames);
	free(pts->tcounts);
	free(pts);
}

int hwt_pts_add_sink(struct hwt_pts *pts, const struct hwt_dec_sink *sink)
{
	struct hwt_dec_sink s = {0}, *n;

	if (!pts || !sink || hwt_opts_copy(&s, sizeof(s), sink) < 0 || !s.rec || pts->ran)
		return -HWT_EINVAL;
	sink = &s;
	n = realloc(pts->sinks, (pts->nsinks + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	pts->sinks = n;
	pts->sinks[pts->nsinks] = *sink;
	pts->sinks[pts->nsinks].size = sizeof(*sink);
	if (!pts->sinks[pts->nsinks].want)
		pts->sinks[pts->nsinks].want = HWT_DEC_WANT_ALL;
	pts->nsinks++;
	return 0;
}

const struct hwt_dec_config *hwt_pts_dec_config(const struct hwt_pts *pts)
{
	return &pts->dcfg;
}

/* ------------------------------------------------------------------------ */
/* Decoding                                                                  */

static uint64_t query_time(const struct hwt_pts *pts, const struct hwt_dec_context_query *q)
{
	if (!q->has_tsc)
		return 0;
	return pts->dcfg.tconv.valid ? hwt_dec_tsc_to_perf(&pts->dcfg.tconv, q->tsc) : q->tsc;
}

/* How many of a CPU's switches happened at or before time (grows with
 * time). */
static size_t switches_by(const struct pts_stream *st, uint64_t time)
{
	size_t lo = 0, hi = st->nsw;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->sw[mid].time <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint64_t pts_run_end(const struct pts_stream *st, uint64_t run)
{
	size_t n = switches_by(st, run);

	return n < st->nsw ? st->sw[n].time : UINT64_MAX;
}

/* The thread on a CPU at time: the last switch at or before it. Its run
 * (stitching) is that switch's time, 1 before the first. */
static void thread_at(const struct pts_stream *st, uint64_t time, int32_t *pid, int32_t *tid,
		      uint64_t *run)
{
	size_t n = switches_by(st, time);

	if (!n) {
		*pid = st->first_pid;
		*tid = st->first_tid;
		*run = 1;
	} else {
		*pid = st->sw[n - 1].pid;
		*tid = st->sw[n - 1].tid;
		*run = st->sw[n - 1].time;
	}
}

/* The decoder's context hook: read-only lookups, safe on several threads. */
static int pts_hook(void *ctx, const struct hwt_dec_context_query *q, struct hwt_dec_context *out)
{
	const struct pts_stream *st = ctx;
	const struct hwt_pts *pts = st->pts;
	uint64_t time = query_time(pts, q);
	int32_t pid = st->pid, tid = st->tid;
	uint64_t run = 0;
	struct hwt_dec_image *img;

	/* Tracing resumes after kernel work (a syscall that mapped code, an
	 * exec, a switch to another thread) whose sideband time can be later
	 * than the trace's estimate of now, which lags behind the truth. */
	if (q->event && q->event->type == HWT_DEC_EV_ENABLED && q->has_tsc)
		time += pts->enable_slack;

	if (st->cpu >= 0) {
		thread_at(st, time, &pid, &tid, &run);
		if (tid <= 0 && time != query_time(pts, q)) {
			/* The slack reached past the thread's switch out: trace
			 * is never the idle (or an untraced) task's. */
			int32_t p0, t0;
			uint64_t r0;

			thread_at(st, query_time(pts, q), &p0, &t0, &r0);
			if (t0 > 0) {
				pid = p0;
				tid = t0;
				run = r0;
			}
		}
	}
	img = pid >= 0 ? pts_procs_at(&pts->procs, pid, time) : NULL;
	out->pid = pid;
	out->tid = tid;
	out->image = img ? img : pts->empty;
	out->note = 0;
	/* Stitching: the decoder forgets a thread's frames at each switch
	 * (the session carries its stack over, from whichever CPU). */
	out->run = pts->stitch ? run : 0;
	return 0;
}

/* The hook's span companion: pts_hook's answer is the same for every time
 * in [lo, hi] when no switch and no new code version falls between the
 * times it looks up (an enable looks enable_slack further). */
static int pts_span(void *ctx, uint64_t lo, uint64_t hi, struct hwt_dec_context *out)
{
	const struct pts_stream *st = ctx;
	const struct hwt_pts *pts = st->pts;
	struct hwt_dec_context_query q = {lo, true, NULL, false, false};
	uint64_t t0, t1;
	int32_t pid = st->pid, tid = st->tid;
	uint64_t run;

	t0 = query_time(pts, &q);
	q.tsc = hi;
	t1 = query_time(pts, &q) + pts->enable_slack;
	if (st->cpu >= 0) {
		if (switches_by(st, t0) != switches_by(st, t1))
			return 0;
		thread_at(st, t0, &pid, &tid, &run);
	}
	if (pid >= 0 && !pts_procs_same(&pts->procs, pid, t0, t1))
		return 0;
	q.tsc = lo;
	return pts_hook(ctx, &q, out) < 0 ? 0 : 1;
}

/* tcount_get() of a thread other than the last one asked for. */
static __attribute__((noinline)) struct pts_tcount *tcount_find(struct hwt_pts *pts, int32_t tid)
{
	size_t mask, i;

	if (2 * (pts->ntcounts + 1) > pts->captcounts) {
		size_t cap = pts->captcounts ? 2 * pts->captcounts : 64;
		struct pts_tcount *n = malloc(cap * sizeof(*n)), *old = pts->tcounts;

		if (!n)
			return NULL;
		for (size_t k = 0; k < cap; k++)
			n[k] = (struct pts_tcount){.tid = -1};
		for (size_t k = 0; k < pts->captcounts; k++) {
			if (old[k].tid < 0)
				continue;
			i = ((uint32_t)old[k].tid * 0x9e3779b1u) & (cap - 1);
			while (n[i].tid >= 0)
				i = (i + 1) & (cap - 1);
			n[i] = old[k];
		}
		free(old);
		pts->tcounts = n;
		pts->captcounts = cap;
	}
	mask = pts->captcounts - 1;
	i = ((uint32_t)tid * 0x9e3779b1u) & mask;
	while (pts->tcounts[i].tid >= 0 && pts->tcounts[i].tid != tid)
		i = (i + 1) & mask;
	if (pts->tcounts[i].tid < 0) {
		pts->tcounts[i] = (struct pts_tcount){.tid = tid};
		pts->ntcounts++;
	}
	pts->last_tcount = i;
	return &pts->tcounts[i];
}

/* The entry of tid in the instruction counts (inserted), or NULL when out
 * of memory. */
static inline struct pts_tcount *tcount_get(struct hwt_pts *pts, int32_t tid)
{
	if (pts->last_tcount < pts->captcounts && pts->tcounts[pts->last_tcount].tid == tid)
		return &pts->tcounts[pts->last_tcount];
	return tcount_find(pts, tid);
}

/* Passes a record on to the caller's sinks, unless filtered out. */
static inline int deliver(struct hwt_pts *pts, struct pts_stream *st, const struct hwt_dec_rec *rec)
{
	uint64_t t = st->last_time;

	if (t < pts->cfg.time_start || ids_out(pts, rec->pid, rec->tid)) {
		pts->st.filtered++;
		return 0;
	}
	/* The code of a block is what the decoder had mapped: symbolize by
	 * that mapping, even where the record's time lags behind it. */
	if (rec->type == HWT_DEC_REC_BLOCK && rec->u.block.image != st->last_img) {
		st->last_img = rec->u.block.image;
		st->last_img_time = pts_image_time(pts, st->last_img, &st->last_img_pid);
	}
	pts->floor_pid = st->last_img_pid;
	pts->floor_time = st->last_img_time;
	for (size_t i = 0; i < pts->nsinks; i++) {
		const struct hwt_dec_sink *s = &pts->sinks[i];
		int err;

		if (!(s->want & HWT_DEC_WANT(rec->type)))
			continue;
		err = s->rec(s->ctx, rec);
		if (err < 0)
			return err;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Stitching: a thread's stack across CPUs                                   */

static int frame_push(struct pts_tcount *c, const struct pts_frame *fr)
{
	if (c->nframes == c->capframes) {
		size_t cap = c->capframes ? 2 * c->capframes : 16;
		struct pts_frame *p = realloc(c->frames, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->frames = p;
		c->capframes = cap;
	}
	c->frames[c->nframes++] = *fr;
	return 0;
}

/* The return as a return from frame k of the thread's stack. */
static void known_return(struct hwt_dec_rec *rec, const struct pts_frame *fr, size_t k)
{
	rec->flags &= ~HWT_DEC_RF_UNKNOWN_FRAME;
	if (fr->kind == PTS_FRAME_ASYNC)
		rec->flags |= HWT_DEC_RF_ASYNC;
	rec->u.ret.func = fr->func;
	rec->u.ret.call_tsc = fr->timed ? fr->call_tsc : 0;
	rec->u.ret.insns = rec->insns - fr->insns;
	rec->depth = (uint32_t)k;
}

/* A return out of the decoder's frames (it restarted them at the run's
 * switch): when it goes back to a frame of an earlier run, that frame (and
 * those above it, unwound) closes here, as one decoder would have closed
 * it. Returns the index of the frame it closes, or SIZE_MAX. */
static size_t older_frame(const struct pts_tcount *c, const struct hwt_dec_rec *rec)
{
	for (size_t k = c->below; k > 0; k--) {
		const struct pts_frame *fr = &c->frames[k - 1];

		if (rec->u.ret.branch == HWT_DEC_BR_FAR_RETURN) {
			if (fr->kind != PTS_FRAME_NEAR)
				return k - 1;
			continue;
		}
		if (fr->kind != PTS_FRAME_NEAR)
			break; /* a near return never leaves an interrupt */
		if (fr->ret_addr == rec->u.ret.to)
			return k - 1;
	}
	return SIZE_MAX;
}

/* Rewrites rec (of thread c, from stream st) to the thread's whole stack:
 * depths count the frames of earlier runs, and returns into them are
 * known returns. Unwound frames are delivered first. run_start: rec is the
 * first of a run (of another stream, or after the decoder's NEW_RUN). */
static int stitch(struct hwt_pts *pts, struct pts_stream *st, struct pts_tcount *c,
		  struct hwt_dec_rec *rec, bool run_start)
{
	size_t depth;
	int err;

	/* The decoder's frames start from here. */
	if (run_start)
		c->below = c->nframes;
	switch (rec->type) {
	case HWT_DEC_REC_CALL: {
		struct pts_frame fr = {rec->u.call.to, rec->u.call.ret_addr,
				       rec->tsc,       rec->insns,
				       PTS_FRAME_NEAR, (rec->flags & HWT_DEC_RF_TIME) != 0};

		if (rec->flags & HWT_DEC_RF_ASYNC)
			fr.kind = PTS_FRAME_ASYNC;
		else if (rec->u.call.branch == HWT_DEC_BR_FAR_CALL)
			fr.kind = PTS_FRAME_FAR;
		/* Its depth is the callee's: the frame is below it. */
		while (c->nframes > c->below + (rec->depth ? rec->depth - 1 : 0))
			c->nframes--;
		err = frame_push(c, &fr);
		if (err < 0)
			return err;
		break;
	}
	case HWT_DEC_REC_RETURN:
		if ((rec->flags & HWT_DEC_RF_UNKNOWN_FRAME) && rec->depth == 0 && c->below) {
			size_t k = older_frame(c, rec);

			if (k == SIZE_MAX)
				break;
			pts->st.stitched_returns++;
			while (c->nframes > k + 1) {
				struct hwt_dec_rec un = *rec;

				c->nframes--;
				known_return(&un, &c->frames[c->nframes], c->nframes);
				un.flags |= HWT_DEC_RF_UNWOUND;
				err = deliver(pts, st, &un);
				if (err < 0)
					return err;
			}
			known_return(rec, &c->frames[k], k);
			c->nframes = c->below = k;
			return 0;
		}
		break;
	default:
		break;
	}
	/* The decoder's depth, over the frames of earlier runs. */
	depth = c->below + rec->depth;
	while (c->nframes > depth)
		c->nframes--;
	while (c->nframes < depth) {
		/* Frames the decoder knows and we were not shown. */
		struct pts_frame fr = {0};

		err = frame_push(c, &fr);
		if (err < 0)
			return err;
	}
	rec->depth = depth > UINT32_MAX ? UINT32_MAX : (uint32_t)depth;
	return 0;
}

/* The thread of records before any decoding (a loss at the start of a
 * stream), which have none yet: the stream's, or the CPU's. */
static void stream_thread(const struct pts_stream *st, int32_t *pid, int32_t *tid)
{
	uint64_t run;

	*pid = st->pid;
	*tid = st->tid;
	if (st->cpu >= 0)
		thread_at(st, st->last_time, pid, tid, &run);
}

/* The count of thread tid goes on from its other streams: the decoder
 * counts from 0 in a stream and in each run, so a new one (another stream
 * than the count's last, or new_run) starts at the thread's total. Adds the
 * run's base to *insns and raises the total to *insns + ahead (the last
 * count a batch reaches). Returns the count (NULL: out of memory); *started
 * says whether a run began here. */
static inline struct pts_tcount *thread_count(struct pts_stream *st, int32_t tid, bool new_run,
					      uint64_t *insns, uint64_t ahead, bool *started)
{
	struct pts_tcount *c = tcount_get(st->pts, tid);

	if (!c)
		return NULL;
	*started = c->stream != st->idx + 1 || new_run;
	if (*started) {
		c->stream = (uint32_t)(st->idx + 1);
		c->base = c->total;
	}
	st->run_tid = tid;
	st->run_base = c->base;
	*insns += c->base;
	if (*insns + ahead > c->total)
		c->total = *insns + ahead;
	return c;
}

/* deliver() of rec with the thread's count insns and the stream's CPU. */
static __attribute__((noinline)) int deliver_own(struct pts_stream *st,
						 const struct hwt_dec_rec *rec, uint64_t insns)
{
	struct hwt_dec_rec owned = *rec;

	owned.insns = insns;
	if (st->cpu >= 0) {
		owned.cpu = st->cpu;
		owned.flags |= HWT_DEC_RF_CPU;
	}
	return deliver(st->pts, st, &owned);
}

/* pts_rec() of a call or return of a known thread without stitching (most
 * records of call-heavy code): the same steps, and the record copied only
 * when the thread's count or the CPU changes it. */
static inline int pts_rec_callret(struct pts_stream *st, const struct hwt_dec_rec *rec)
{
	struct hwt_pts *pts = st->pts;
	uint64_t insns = rec->insns;
	bool started;

	if (!thread_count(st, rec->tid, false, &insns, 0, &started))
		return -ENOMEM;
	if (rec->flags & HWT_DEC_RF_TIME)
		st->last_time = pts->dcfg.tconv.valid ? rec->time : rec->tsc;
	if (pts->cfg.time_end && st->last_time > pts->cfg.time_end)
		return -HWT_EEOS;
	if (insns != rec->insns || st->cpu >= 0)
		return deliver_own(st, rec, insns);
	return deliver(pts, st, rec);
}

int pts_rec(struct pts_stream *st, const struct hwt_dec_rec *rec_in)
{
	struct hwt_pts *pts = st->pts;
	struct hwt_dec_rec owned = *rec_in;
	struct pts_tcount *c = NULL;
	bool run_start = false;
	int err;

	if (st->cpu >= 0) {
		owned.cpu = st->cpu;
		owned.flags |= HWT_DEC_RF_CPU;
	}
	if (owned.tid < 0 && owned.pid < 0)
		stream_thread(st, &owned.pid, &owned.tid);
	if (owned.type == HWT_DEC_REC_SWITCH && owned.u.sw.prev_tid >= 0 &&
	    owned.u.sw.prev_tid == st->run_tid) {
		/* The previous thread ran up to here: its count, for its
		 * next record (in another run or stream) to carry. */
		c = tcount_get(pts, owned.u.sw.prev_tid);
		if (!c)
			return -ENOMEM;
		if (st->run_base + owned.u.sw.prev_insns > c->total)
			c->total = st->run_base + owned.u.sw.prev_insns;
	}
	if (owned.tid >= 0) {
		c = thread_count(st, owned.tid,
				 owned.type == HWT_DEC_REC_SWITCH &&
				     (owned.flags & HWT_DEC_RF_NEW_RUN),
				 &owned.insns, 0, &run_start);
		if (!c)
			return -ENOMEM;
	}
	if (owned.flags & HWT_DEC_RF_TIME)
		st->last_time = pts->dcfg.tconv.valid ? owned.time : owned.tsc;
	/* A stream's time only grows: the rest is later still. */
	if (pts->cfg.time_end && st->last_time > pts->cfg.time_end)
		return -HWT_EEOS;
	if (pts->stitch && c) {
		err = stitch(pts, st, c, &owned, run_start);
		if (err < 0)
			return err;
	}
	return deliver(pts, st, &owned);
}

/* The sink of a stream decoded alone. */
static int stream_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct pts_stream *st = ctx;
	int err;

	if ((rec->type == HWT_DEC_REC_CALL || rec->type == HWT_DEC_REC_RETURN) && rec->tid >= 0 &&
	    !st->pts->stitch)
		err = pts_rec_callret(st, rec);
	else
		err = pts_rec(st, rec);

	if (err == -HWT_EEOS)
		st->stop = true;
	return err;
}

/* stream_rec() of n records in a row (struct hwt_dec_sink.recs: calls and
 * returns of one thread; the session gives it to the decoder only without
 * stitching or a time range). The thread's count, its filters and the
 * symbolization floor once for all when they need no copy (the thread's
 * count base is 0, per-thread streams), then each record to the sinks that
 * want it. */
static int stream_recs(void *ctx, const struct hwt_dec_rec *recs, size_t n)
{
	struct pts_stream *st = ctx;
	struct hwt_pts *pts = st->pts;
	const struct hwt_dec_rec *last = &recs[n - 1];
	struct pts_tcount *c;
	int err = 0;

	if (!n)
		return 0;
	c = recs[0].tid >= 0 && st->cpu < 0 ? tcount_get(pts, recs[0].tid) : NULL;
	if (!c || c->stream != st->idx + 1 || c->base || recs[0].tid != last->tid ||
	    recs[0].pid != last->pid) {
		for (size_t i = 0; i < n && err >= 0; i++)
			err = stream_rec(ctx, &recs[i]);
		return err;
	}
	/* As pts_rec_callret() for each, with the count base 0. */
	st->run_tid = last->tid;
	st->run_base = 0;
	if (last->insns > c->total)
		c->total = last->insns;
	for (size_t i = n; i-- > 0;) {
		if (recs[i].flags & HWT_DEC_RF_TIME) {
			st->last_time = pts->dcfg.tconv.valid ? recs[i].time : recs[i].tsc;
			break;
		}
	}
	if (ids_out(pts, last->pid, last->tid)) {
		pts->st.filtered += n;
		return 0;
	}
	pts->floor_pid = st->last_img_pid;
	pts->floor_time = st->last_img_time;
	if (pts->nsinks == 1) {
		const struct hwt_dec_sink *s = &pts->sinks[0];
		const uint32_t cr =
		    HWT_DEC_WANT(HWT_DEC_REC_CALL) | HWT_DEC_WANT(HWT_DEC_REC_RETURN);
		/* The run holds calls and returns of the kinds the decoder
		 * makes (pts->want): when the sink wants those, each record
		 * is its. */
		const bool every = (s->want & pts->want & cr) == (pts->want & cr);
		int (*const rec)(void *, const struct hwt_dec_rec *) = s->rec;
		void *const rctx = s->ctx;

		for (const struct hwt_dec_rec *r = recs, *const end = recs + n; r < end; r++) {
			if (!every && !(s->want & HWT_DEC_WANT(r->type)))
				continue;
			err = rec(rctx, r);
			if (err < 0) {
				if (err == -HWT_EEOS)
					st->stop = true;
				return err;
			}
		}
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct hwt_dec_rec *rec = &recs[i];
		uint32_t bit = HWT_DEC_WANT(rec->type);

		for (size_t k = 0; k < pts->nsinks; k++) {
			const struct hwt_dec_sink *s = &pts->sinks[k];

			if (!(s->want & bit))
				continue;
			err = s->rec(s->ctx, rec);
			if (err < 0) {
				if (err == -HWT_EEOS)
					st->stop = true;
				return err;
			}
		}
	}
	return 0;
}

/* pts_rec() of a batch of calls and returns (every sink takes batches, no
 * stitching, no time filter): the thread's count and the pid/tid filters
 * once for the batch, which goes on with the count's base in insns_base
 * (not copied). */
static int stream_batch(void *ctx, const struct hwt_dec_batch *b)
{
	struct pts_stream *st = ctx;
	struct hwt_pts *pts = st->pts;
	struct hwt_dec_batch own = *b;
	bool started;

	if (!b->n)
		return 0;
	if (own.tid < 0 && own.pid < 0)
		stream_thread(st, &own.pid, &own.tid);
	/* As pts_rec(); within a batch the count only grows. */
	if (own.tid >= 0 &&
	    !thread_count(st, own.tid, false, &own.insns_base, own.e[own.n - 1].insns, &started))
		return -ENOMEM;
	if (own.flags & HWT_DEC_RF_TIME)
		st->last_time = pts->dcfg.tconv.valid ? own.time : own.tsc;
	if (ids_out(pts, own.pid, own.tid)) {
		pts->st.filtered += own.n;
		return 0;
	}
	pts->floor_pid = st->last_img_pid;
	pts->floor_time = st->last_img_time;
	for (size_t i = 0; i < pts->nsinks; i++) {
		int err = pts->sinks[i].batch(pts->sinks[i].ctx, &own);

		if (err < 0)
			return err;
	}
	return 0;
}

/* The tree's calls (struct hwt_dec_tree) of a stream, as stream_batch():
 * the thread's count goes on from its other streams, the pid/tid filters
 * keep a thread out of tree mode (its batches are filtered). The session
 * has one sink then. */
static bool tree_thread(struct pts_stream *st, const struct hwt_dec_tree_at *at,
			struct hwt_dec_tree_at *own, int *err)
{
	struct hwt_pts *pts = st->pts;
	bool started;

	*own = *at;
	*err = 0;
	if (own->tid < 0 && own->pid < 0)
		return false; /* the thread is known by time only: batches */
	if (own->tid >= 0 && !thread_count(st, own->tid, false, &own->insns, 0, &started)) {
		*err = -ENOMEM;
		return false;
	}
	if (own->flags & HWT_DEC_RF_TIME)
		st->last_time = pts->dcfg.tconv.valid ? own->time : own->tsc;
	if (ids_out(pts, own->pid, own->tid))
		return false;
	pts->floor_pid = st->last_img_pid;
	pts->floor_time = st->last_img_time;
	return true;
}

static int stream_top(void *ctx, const struct hwt_dec_tree_at *at, uint32_t *node)
{
	struct pts_stream *st = ctx;
	struct hwt_dec_tree_at own;
	int err;

	*node = HWT_DEC_NODE_NONE;
	if (!tree_thread(st, at, &own, &err))
		return err;
	return st->pts->sinks[0].tree->top(st->pts->sinks[0].ctx, &own, node);
}

static int stream_child(void *ctx, const struct hwt_dec_tree_at *at, uint32_t parent, uint64_t to,
			uint32_t *node)
{
	struct pts_stream *st = ctx;
	struct hwt_pts *pts = st->pts;

	/* Only threads top() let in get here: no count, no filter; the
	 * call's time is not the stream's (a batch's is its last entry's). */
	pts->floor_pid = st->last_img_pid;
	pts->floor_time = st->last_img_time;
	return pts->sinks[0].tree->child(pts->sinks[0].ctx, at, parent, to, node);
}

static int stream_sync(void *ctx, const struct hwt_dec_tree_at *at, uint32_t node)
{
	struct pts_stream *st = ctx;
	struct hwt_dec_tree_at own;
	int err;

	if (!tree_thread(st, at, &own, &err))
		return err < 0 ? err : -HWT_EINTERNAL;
	return st->pts->sinks[0].tree->sync(st->pts->sinks[0].ctx, &own, node);
}

static int stream_counts(void *ctx, const struct hwt_dec_tree_counts *c)
{
	struct pts_stream *st = ctx;

	return st->pts->sinks[0].tree->counts(st->pts->sinks[0].ctx, c);
}

/* A depth-0 block or an unknown-frame return of a thread in tree mode
 * (only threads top() let in get here): a block symbolized by the
 * decoder's mapping, as deliver() does. A return that stitching may
 * close a frame of an earlier run with stays a record (pts_rec()). */
static int stream_base(void *ctx, const struct hwt_dec_rec *rec, struct hwt_dec_tree_base *out)
{
	struct pts_stream *st = ctx;
	struct hwt_pts *pts = st->pts;

	out->node = HWT_DEC_NODE_NONE;
	out->hold = false;
	if (rec->type != HWT_DEC_REC_BLOCK && pts->stitch)
		return 0;
	if (rec->flags & HWT_DEC_RF_TIME)
		st->last_time = pts->dcfg.tconv.valid ? rec->time : rec->tsc;
	if (rec->type == HWT_DEC_REC_BLOCK && rec->u.block.image != st->last_img) {
		st->last_img = rec->u.block.image;
		st->last_img_time = pts_image_time(pts, st->last_img, &st->last_img_pid);
	}
	pts->floor_pid = st->last_img_pid;
	pts->floor_time = st->last_img_time;
	if (!pts->sinks[0].tree->base)
		return 0;
	/* What the sink holds to needs nothing of ours but the time (and
	 * the image: the decoder holds blocks only in the image of the
	 * last block here). */
	return pts->sinks[0].tree->base(pts->sinks[0].ctx, rec, out);
}

static const struct hwt_dec_tree stream_tree = {stream_top, stream_child, stream_sync,
						stream_counts, stream_base};

static int lost(struct pts_stream *st, struct hwt_dec *dec, uint64_t size)
{
	st->lost_gaps++;
	st->lost_bytes += size;
	return hwt_dec_lost(dec, size);
}

static int cmp_mark(const void *a, const void *b)
{
	const struct pts_mark *x = a, *y = b;

	return (x->aux_offset > y->aux_offset) - (x->aux_offset < y->aux_offset);
}

/* Feeds one stream's segments, with its losses in their places. */
static int feed_stream(struct hwt_pts *pts, struct pts_stream *st, struct hwt_dec *dec,
		       uint8_t *buf, size_t buf_size)
{
	const struct hwt_fmt_aux_stream *a = hwt_fmt_session_aux(pts->s, st->idx);
	uint64_t prev_end = 0;
	size_t mark = 0;
	int err;

	if (st->nmarks)
		qsort(st->marks, st->nmarks, sizeof(*st->marks), cmp_mark);
	for (size_t g = 0; g < a->nsegments && !st->stop; g++) {
		const struct hwt_fmt_aux_segment *seg =
		    hwt_fmt_session_aux_segment(pts->s, st->idx, g);
		uint64_t pos = 0;

		if (!seg)
			break;
		if (seg->aux_offset > prev_end) {
			err = lost(st, dec, seg->aux_offset - prev_end);
			if (err < 0)
				return err;
		}
		/* Marks inside data already fed (overlapping segments) or
		 * before this segment were reported or cannot be placed. */
		while (mark < st->nmarks && st->marks[mark].aux_offset <= seg->aux_offset)
			mark++;
		while (pos < seg->size && !st->stop) {
			uint64_t piece = seg->size - pos;
			int64_t n;

			if (piece > buf_size)
				piece = buf_size;
			if (mark < st->nmarks &&
			    st->marks[mark].aux_offset - seg->aux_offset - pos < piece)
				piece = st->marks[mark].aux_offset - seg->aux_offset - pos;
			n = hwt_fmt_session_aux_read(pts->s, st->idx, g, pos, buf, (size_t)piece);
			if (n <= 0) {
				if (n == -ENOMEM)
					return (int)n;
				/* A damaged chunk: its bytes are lost, the rest goes on. */
				st->read_errors++;
				hwt_log(&pts->cfg.log, HWT_LOG_DEBUG,
					"PT data of stream %zu at AUX offset %#" PRIx64
					" cannot be read (%s): %" PRIu64 " bytes lost",
					st->idx, seg->aux_offset + pos,
					n ? hwt_strerror((int)n) : "no data", piece);
				err = lost(st, dec, piece);
				if (err < 0)
					return err;
				pos += piece;
				continue;
			}
			st->aux_bytes += (uint64_t)n;
			err = hwt_dec_feed(dec, buf, (size_t)n);
			if (err < 0)
				return err;
			pos += (uint64_t)n;
			if (mark < st->nmarks &&
			    st->marks[mark].aux_offset == seg->aux_offset + pos) {
				/* The AUX record that ends here was flagged:
				 * the kernel dropped trace after it. */
				mark++;
				err = lost(st, dec, 0);
				if (err < 0)
					return err;
			}
		}
		if (seg->aux_offset + seg->size > prev_end)
			prev_end = seg->aux_offset + seg->size;
	}
	if (st->stop)
		return 0;
	/* Flagged records after the data, or data announced by AUX records but
	 * never stored (a recording cut short). */
	while (mark < st->nmarks && st->marks[mark].aux_offset > prev_end) {
		mark++;
		err = lost(st, dec, 0);
		if (err < 0)
			return err;
	}
	if (st->announced_end > prev_end) {
		err = lost(st, dec, st->announced_end - prev_end);
		if (err < 0)
			return err;
	}
	return hwt_dec_finish(dec);
}

static void add_stats(struct hwt_dec_stats *sum, const struct hwt_dec_stats *s)
{
	uint64_t *d = (uint64_t *)sum;
	const uint64_t *v = (const uint64_t *)s;

	/* struct hwt_dec_stats is all uint64_t counters. */
	for (size_t i = 0; i < sizeof(*s) / sizeof(uint64_t); i++)
		d[i] += v[i];
}

int pts_run_stream(struct hwt_pts *pts, struct pts_stream *st, uint8_t *buf, size_t piece,
		   int (*rec)(void *ctx, const struct hwt_dec_rec *rec),
		   int (*batch)(void *ctx, const struct hwt_dec_batch *batch),
		   const struct hwt_dec_tree *tree,
		   int (*recs)(void *ctx, const struct hwt_dec_rec *recs, size_t n), void *ctx)
{
	const struct pts_proc *p = NULL;
	struct hwt_dec_config cfg = pts->dcfg;
	struct hwt_dec_sink sink = {sizeof(sink), pts->want, rec, ctx, batch, tree, recs};
	struct hwt_dec_image *img;
	struct hwt_dec *dec = NULL;
	int32_t pid = st->pid, tid = st->tid;
	int err;

	if (st->cpu < 0) {
		if (ids_out(pts, st->pid, st->tid))
			return 0;
		p = pts_procs_find(&pts->procs, st->pid);
	}
	st->decoded = true;
	st->last_img_pid = -1;
	st->run_tid = -1;
	if (st->cpu >= 0 || !p || p->changing) {
		cfg.context = pts_hook;
		cfg.context_span = pts_span;
		cfg.context_ctx = st;
	}
	hwt_log(&pts->cfg.log, HWT_LOG_DEBUG, "PT stream %zu (%s %" PRId32 "): %s", st->idx,
		st->cpu >= 0 ? "cpu" : "tid", st->cpu >= 0 ? st->cpu : st->tid,
		cfg.context ? "code and thread by time (context hook)" : "one image");
	err = hwt_dec_alloc(&dec, &cfg, pts->ic);
	if (err < 0)
		return err;
	if (st->cpu >= 0) {
		pid = st->first_pid;
		tid = st->first_tid;
	}
	/* Without the hook: the process's last image is the union of all its
	 * mappings (none replaced another), which decodes it at every time. */
	img = p && p->nvers && !cfg.context
		  ? p->vers[p->nvers - 1].img
		  : (pid >= 0 ? pts_procs_at(&pts->procs, pid, st->first_time) : NULL);
	err = hwt_dec_set_context(dec, pid, tid, img ? img : pts->empty);
	if (err >= 0)
		err = hwt_dec_add_sink(dec, &sink);
	if (err >= 0)
		err = feed_stream(pts, st, dec, buf, piece);
	if (err == -HWT_EEOS && st->stop)
		err = 0;
	hwt_dec_stats(dec, &st->dstats);
	hwt_dec_free(dec);
	return err;
}

/* Adds what decoding st counted to the session's stats. */
static void sum_stream(struct hwt_pts *pts, const struct pts_stream *st)
{
	pts->st.streams_decoded += st->decoded;
	pts->st.aux_bytes += st->aux_bytes;
	pts->st.lost_gaps += st->lost_gaps;
	pts->st.lost_bytes += st->lost_bytes;
	pts->st.read_errors += st->read_errors;
	add_stats(&pts->st.dec, &st->dstats);
}

int hwt_pts_run(struct hwt_pts *pts)
{
	uint8_t *buf;
	int err = 0;

	if (!pts || pts->ran)
		return -HWT_EINVAL;
	pts->ran = true;
	/* The decoders make only the records some sink wants (blocks are
	 * most of them), and those the session itself reads: switches, and
	 * for the stacks it carries over calls, returns and events (whose
	 * counts place a thread's last instructions before it stopped). */
	for (size_t i = 0; i < pts->nsinks; i++)
		pts->want |= pts->sinks[i].want;
	pts->want |= HWT_DEC_WANT(HWT_DEC_REC_SWITCH);
	if (pts->stitch)
		pts->want |= HWT_DEC_WANT(HWT_DEC_REC_CALL) | HWT_DEC_WANT(HWT_DEC_REC_RETURN) |
			     HWT_DEC_WANT(HWT_DEC_REC_EVENT);
	if (pts->stitch) {
		err = pts_merge_run(pts);
	} else {
		/* Calls and returns in batches when every sink takes them
		 * (and no time filter needs their times). */
		bool batch = pts->nsinks && !pts->cfg.time_start && !pts->cfg.time_end;
		uint32_t cr = HWT_DEC_WANT(HWT_DEC_REC_CALL) | HWT_DEC_WANT(HWT_DEC_REC_RETURN);

		for (size_t i = 0; i < pts->nsinks; i++)
			batch = batch && pts->sinks[i].batch && (pts->sinks[i].want & cr) == cr;
		buf = malloc(PTS_PIECE);
		if (!buf)
			return -ENOMEM;
		/* With one sink, its call tree (node numbers are the sink's). */
		bool tree = batch && pts->nsinks == 1 && pts->sinks[0].tree;
		/* Runs of records (not in a time range: each record's time
		 * ends or filters it). */
		bool recs = !pts->cfg.time_start && !pts->cfg.time_end;

		for (size_t i = 0; i < pts->nstreams && err >= 0; i++)
			err =
			    pts_run_stream(pts, &pts->streams[i], buf, PTS_PIECE, stream_rec,
					   batch ? stream_batch : NULL, tree ? &stream_tree : NULL,
					   recs ? stream_recs : NULL, &pts->streams[i]);
		free(buf);
	}
	for (size_t i = 0; i < pts->nstreams; i++)
		sum_stream(pts, &pts->streams[i]);
	/* Returns the decoders counted as unknown that stitching closed. */
	pts->st.dec.unknown_returns -= pts->st.stitched_returns;
	hwt_log(&pts->cfg.log, HWT_LOG_DEBUG,
		"PT decoding: %" PRIu64 " segments, %" PRIu64
		" of them by libipt (the fast engine declined)",
		pts->st.dec.segments, pts->st.dec.segments_fallback);
	pts->floor_pid = -1;
	pts->floor_time = 0;
	return err;
}

void hwt_pts_stats(const struct hwt_pts *pts, struct hwt_pts_stats *stats)
{
	*stats = pts->st;
}

/* ------------------------------------------------------------------------ */
/* Symbols                                                                   */

struct hwt_sym_aspace *hwt_pts_aspace(struct hwt_pts *pts)
{
	return pts->aspace;
}

int hwt_pts_symbolize(struct hwt_pts *pts, int32_t pid, uint64_t time, uint64_t ip,
		      struct hwt_pts_sym *out)
{
	struct hwt_sym_loc loc;
	struct hwt_sym_func fn;
	int err;

	if (!pts || !out)
		return -HWT_EINVAL;
	memset(out, 0, sizeof(*out));
	if (pid == pts->floor_pid && time < pts->floor_time)
		time = pts->floor_time;
	err = hwt_sym_aspace_lookup(pts->aspace, (uint32_t)pid, time, ip, &loc);
	if (err < 0)
		return err;
	out->object = loc.path;
	if (!loc.obj)
		return -HWT_ENOSYM;
	err = hwt_sym_func_at(loc.obj, loc.addr, 0, &pts->hint, &fn);
	if (err < 0)
		return err;
	out->function = fn.name;
	out->offset = loc.addr - fn.addr;
	out->func_ip = ip - out->offset;
	return 0;
}

const char *hwt_pts_comm(struct hwt_pts *pts, int32_t tid, uint64_t time)
{
	return hwt_sym_aspace_comm_of(pts->aspace, (uint32_t)tid, time);
}
