/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report/timeline.c - time-ordered views as Chrome trace event JSON (the
 * format chrome://tracing and Perfetto load): per-thread spans as complete
 * ("X") events, instants ("i") and thread names ("M" metadata). The PT
 * decoder feeds call spans here; tests feed synthetic ones.
 */
#include "report/report_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum tl_kind {
	TL_THREAD = 0, /* sorts first: names before events */
	TL_SPAN = 1,
	TL_INSTANT = 2,
};

struct tl_event {
	uint64_t ts, dur;
	int32_t pid, tid;
	uint32_t name; /* string id */
	uint32_t kind;
	uint64_t seq; /* insertion order, the last tie-break */
};

/* A thread's open stack of sampled frames (hwt_rep_timeline_stack()). */
struct tl_thread {
	int32_t pid, tid;
	bool named;
	uint64_t last, period; /* its last sample and what it stood for */
	uint32_t *names;       /* open frames, root first: string ids */
	uint64_t *begins;
	size_t n, cap;
};

struct hwt_rep_timeline {
	struct hwt_rep_dict *dict;
	struct tl_event *ev;
	size_t n, cap;
	/* sampled stacks */
	struct tl_thread *threads;
	size_t nthreads, threads_cap;
	struct hwt_rep_set thread_ix;	   /* keys: {pid, tid} */
	const struct hwt_rep_dict *source; /* the dict of the frame ids */
	uint32_t *labels;		   /* source frame id -> string id + 1 */
	size_t labels_cap;
	uint32_t root[HWT_REP_MAX_DEPTH];
	int64_t dropped;
};

int hwt_rep_timeline_alloc(struct hwt_rep_timeline **tlp)
{
	struct hwt_rep_timeline *tl;
	int err;

	if (!tlp)
		return -HWT_EINVAL;
	*tlp = NULL;
	tl = calloc(1, sizeof(*tl));
	if (!tl)
		return -ENOMEM;
	hwt_rep_set_init(&tl->thread_ix);
	err = hwt_rep_dict_alloc(&tl->dict);
	if (err < 0) {
		hwt_rep_timeline_free(tl);
		return err;
	}
	*tlp = tl;
	return 0;
}

void hwt_rep_timeline_free(struct hwt_rep_timeline *tl)
{
	if (!tl)
		return;
	hwt_rep_dict_free(tl->dict);
	free(tl->ev);
	for (size_t i = 0; i < tl->nthreads; i++) {
		free(tl->threads[i].names);
		free(tl->threads[i].begins);
	}
	free(tl->threads);
	hwt_rep_set_fini(&tl->thread_ix);
	free(tl->labels);
	free(tl);
}

static int tl_add_id(struct hwt_rep_timeline *tl, uint32_t kind, int32_t pid, int32_t tid,
		     uint32_t id, uint64_t ts, uint64_t dur)
{
	struct tl_event *e;

	if (tl->n == tl->cap) {
		size_t cap = tl->cap ? tl->cap * 2 : 256;

		e = realloc(tl->ev, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		tl->ev = e;
		tl->cap = cap;
	}
	e = &tl->ev[tl->n];
	e->ts = ts;
	e->dur = dur;
	e->pid = pid;
	e->tid = tid;
	e->name = id;
	e->kind = kind;
	e->seq = tl->n++;
	return 0;
}

static int tl_add(struct hwt_rep_timeline *tl, uint32_t kind, int32_t pid, int32_t tid,
		  const char *name, uint64_t ts, uint64_t dur)
{
	uint32_t id;
	int err;

	if (!tl)
		return -HWT_EINVAL;
	err = hwt_rep_dict_str(tl->dict, name ? name : "", name ? strlen(name) : 0, &id);
	if (err < 0)
		return err;
	return tl_add_id(tl, kind, pid, tid, id, ts, dur);
}

int hwt_rep_timeline_thread(struct hwt_rep_timeline *tl, int32_t pid, int32_t tid, const char *name)
{
	return tl_add(tl, TL_THREAD, pid, tid, name, 0, 0);
}

int hwt_rep_timeline_span(struct hwt_rep_timeline *tl, int32_t pid, int32_t tid, const char *name,
			  uint64_t begin_ns, uint64_t end_ns)
{
	if (end_ns < begin_ns)
		return -HWT_EINVAL;
	return tl_add(tl, TL_SPAN, pid, tid, name, begin_ns, end_ns - begin_ns);
}

int hwt_rep_timeline_instant(struct hwt_rep_timeline *tl, int32_t pid, int32_t tid,
			     const char *name, uint64_t time_ns)
{
	return tl_add(tl, TL_INSTANT, pid, tid, name, time_ns, 0);
}

/* ------------------------------------------------------------------------ */
/* Sampled stacks: runs of samples that share frames become nested spans.    */

static struct tl_thread *tl_thread_get(struct hwt_rep_timeline *tl, int32_t pid, int32_t tid)
{
	int32_t key[2] = {pid, tid};
	uint32_t id;
	int err;

	if (tl->nthreads == tl->threads_cap) {
		size_t cap = tl->threads_cap ? tl->threads_cap * 2 : 16;
		struct tl_thread *t = realloc(tl->threads, cap * sizeof(*t));

		if (!t)
			return NULL;
		tl->threads = t;
		tl->threads_cap = cap;
	}
	err = hwt_rep_set_intern(&tl->thread_ix, key, sizeof(key), &id);
	if (err < 0)
		return NULL;
	if (err == 1) {
		memset(&tl->threads[id], 0, sizeof(tl->threads[id]));
		tl->threads[id].pid = pid;
		tl->threads[id].tid = tid;
		tl->nthreads++;
	}
	return &tl->threads[id];
}

/* The timeline's string id of a source frame's label. */
static int tl_label(struct hwt_rep_timeline *tl, uint32_t frame, uint32_t *id)
{
	const char *label;
	int err;

	if (frame >= tl->labels_cap) {
		size_t cap = tl->labels_cap ? tl->labels_cap : 1024;
		uint32_t *l;

		while (cap <= frame)
			cap *= 2;
		l = realloc(tl->labels, cap * sizeof(*l));
		if (!l)
			return -ENOMEM;
		memset(l + tl->labels_cap, 0, (cap - tl->labels_cap) * sizeof(*l));
		tl->labels = l;
		tl->labels_cap = cap;
	}
	if (tl->labels[frame]) {
		*id = tl->labels[frame] - 1;
		return 0;
	}
	label = hwt_rep_frame_label(tl->source, frame);
	if (!label)
		return -HWT_EINVAL;
	err = hwt_rep_dict_str(tl->dict, label, strlen(label), id);
	if (err < 0)
		return err;
	tl->labels[frame] = *id + 1;
	return 0;
}

/* Ends the thread's open frames from depth k on (innermost first) at end. */
static int tl_close(struct hwt_rep_timeline *tl, struct tl_thread *t, size_t k, uint64_t end)
{
	while (t->n > k) {
		int err;

		t->n--;
		err = tl_add_id(tl, TL_SPAN, t->pid, t->tid, t->names[t->n], t->begins[t->n],
				end - t->begins[t->n]);
		if (err < 0)
			return err;
	}
	return 0;
}

int hwt_rep_timeline_stack(struct hwt_rep_timeline *tl, const struct hwt_rep_dict *dict,
			   int32_t pid, int32_t tid, const char *comm, uint64_t time,
			   uint64_t period, const uint32_t *frames, size_t n)
{
	struct tl_thread *t;
	size_t k = 0;
	int err;

	if (!tl || !dict || (n && !frames) || n > HWT_REP_MAX_DEPTH)
		return -HWT_EINVAL;
	if (tl->source != dict) {
		/* Labels are cached per source dict. */
		tl->source = dict;
		if (tl->labels)
			memset(tl->labels, 0, tl->labels_cap * sizeof(*tl->labels));
	}
	t = tl_thread_get(tl, pid, tid);
	if (!t)
		return -ENOMEM;
	if (!t->named && comm) {
		if ((err = hwt_rep_timeline_thread(tl, pid, tid, comm)) < 0)
			return err;
		t->named = true;
	}
	if (t->n && time < t->last) {
		tl->dropped++;
		return 0;
	}
	if (t->n && time - t->last > 2 * t->period &&
	    (err = tl_close(tl, t, 0, t->last + t->period)) < 0)
		return err;
	for (size_t i = 0; i < n; i++) {
		if ((err = tl_label(tl, frames[n - 1 - i], &tl->root[i])) < 0)
			return err;
	}
	while (k < t->n && k < n && t->names[k] == tl->root[k])
		k++;
	if ((err = tl_close(tl, t, k, time)) < 0)
		return err;
	if (n > t->cap) {
		uint32_t *nm = realloc(t->names, n * sizeof(*nm));
		uint64_t *bg;

		if (!nm)
			return -ENOMEM;
		t->names = nm;
		bg = realloc(t->begins, n * sizeof(*bg));
		if (!bg)
			return -ENOMEM;
		t->begins = bg;
		t->cap = n;
	}
	for (; k < n; k++) {
		t->names[k] = tl->root[k];
		t->begins[k] = time;
	}
	t->n = n;
	t->last = time;
	t->period = period ? period : 1;
	return 0;
}

int64_t hwt_rep_timeline_flush(struct hwt_rep_timeline *tl)
{
	if (!tl)
		return -HWT_EINVAL;
	for (size_t i = 0; i < tl->nthreads; i++) {
		struct tl_thread *t = &tl->threads[i];
		int err = tl_close(tl, t, 0, t->last + t->period);

		if (err < 0)
			return err;
	}
	return tl->dropped;
}

/* Thread names first, then by time; at equal times the longer span first,
 * so a caller opens before its callee and viewers nest them right. */
static int cmp_event(const void *pa, const void *pb)
{
	const struct tl_event *a = pa, *b = pb;

	if ((a->kind == TL_THREAD) != (b->kind == TL_THREAD))
		return a->kind == TL_THREAD ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->dur != b->dur)
		return a->dur > b->dur ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int hwt_rep_timeline_render(const struct hwt_rep_timeline *tl, struct hwt_buf *out)
{
	struct tl_event *sorted;
	int err;

	if (!tl || !out)
		return -HWT_EINVAL;
	sorted = malloc((tl->n ? tl->n : 1) * sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	if (tl->n)
		memcpy(sorted, tl->ev, tl->n * sizeof(*sorted));
	qsort(sorted, tl->n, sizeof(*sorted), cmp_event);
	err = hwt_buf_printf(out, "{\"traceEvents\":[");
	for (size_t i = 0; i < tl->n && err >= 0; i++) {
		const struct tl_event *e = &sorted[i];
		const char *name = hwt_rep_dict_str_get(tl->dict, e->name);

		err = hwt_buf_printf(out, "%s\n{\"pid\":%" PRId32 ",\"tid\":%" PRId32 ",",
				     i ? "," : "", e->pid, e->tid);
		if (err < 0)
			break;
		if (e->kind == TL_THREAD) {
			err = hwt_buf_printf(
			    out, "\"ph\":\"M\",\"name\":\"thread_name\",\"args\":{\"name\":");
			if (err >= 0)
				err = hwt_rep_json_str(out, name);
			if (err >= 0)
				err = hwt_buf_printf(out, "}}");
			continue;
		}
		/* Microseconds with the nanoseconds kept as three decimals. */
		err = hwt_buf_printf(out, "\"ts\":%" PRIu64 ".%03" PRIu64 ",", e->ts / 1000,
				     e->ts % 1000);
		if (err >= 0 && e->kind == TL_SPAN)
			err = hwt_buf_printf(out, "\"ph\":\"X\",\"dur\":%" PRIu64 ".%03" PRIu64 ",",
					     e->dur / 1000, e->dur % 1000);
		else if (err >= 0)
			err = hwt_buf_printf(out, "\"ph\":\"i\",\"s\":\"t\",");
		if (err >= 0)
			err = hwt_buf_printf(out, "\"name\":");
		if (err >= 0)
			err = hwt_rep_json_str(out, name);
		if (err >= 0)
			err = hwt_buf_printf(out, "}");
	}
	if (err >= 0)
		err = hwt_buf_printf(out,
				     "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":"
				     "\"hwtrace\",\"events\":%zu}}\n",
				     tl->n);
	free(sorted);
	return err;
}
