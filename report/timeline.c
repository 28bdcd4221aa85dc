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
	uint64_t seq;  /* insertion order, the last tie-break */
};

struct hwt_rep_timeline {
	struct hwt_rep_dict *dict;
	struct tl_event *ev;
	size_t n, cap;
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
	free(tl);
}

static int tl_add(struct hwt_rep_timeline *tl, uint32_t kind, int32_t pid, int32_t tid,
		  const char *name, uint64_t ts, uint64_t dur)
{
	struct tl_event *e;
	uint32_t id;
	int err;

	if (!tl)
		return -HWT_EINVAL;
	err = hwt_rep_dict_str(tl->dict, name ? name : "", name ? strlen(name) : 0, &id);
	if (err < 0)
		return err;
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

int hwt_rep_timeline_thread(struct hwt_rep_timeline *tl, int32_t pid, int32_t tid,
			    const char *name)
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

		err = hwt_buf_printf(out, "%s\n{\"pid\":%" PRId32 ",\"tid\":%" PRId32 ",", i ? "," : "",
				     e->pid, e->tid);
		if (err < 0)
			break;
		if (e->kind == TL_THREAD) {
			err = hwt_buf_printf(out, "\"ph\":\"M\",\"name\":\"thread_name\",\"args\":{\"name\":");
			if (err >= 0)
				err = hwt_rep_json_str(out, name);
			if (err >= 0)
				err = hwt_buf_printf(out, "}}");
			continue;
		}
		/* Microseconds with the nanoseconds kept as three decimals. */
		err = hwt_buf_printf(out, "\"ts\":%" PRIu64 ".%03" PRIu64 ",", e->ts / 1000, e->ts % 1000);
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
		err = hwt_buf_printf(out, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":"
				     "\"hwtrace\",\"events\":%zu}}\n", tl->n);
	free(sorted);
	return err;
}
