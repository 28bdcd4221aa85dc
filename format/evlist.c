/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/evlist.c - the events of a trace (attrs, names, sample ids) and the
 * mapping from a record to its event, done the way perf does it
 * (evlist__event2evsel): the only event; else the id at the position all
 * events agree on (PERF_SAMPLE_IDENTIFIER first, else the ID field's
 * position in a sample, or its position from the end of a sample_id
 * trailer); id 0 (synthesized records) belongs to the first event. The id
 * table is sorted at add time, so a lookup is a binary search that neither
 * allocates nor locks.
 */
#include "format/format_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct id_ent {
	uint64_t id;
	uint32_t idx;
};

struct hwt_fmt_evlist {
	struct hwt_fmt_event **events; /* individually allocated: stable */
	size_t n, cap;
	struct id_ent *ids; /* sorted by id */
	size_t nids, capids;
	int id_pos;  /* u64 index of the id in a sample after the header, or -1 */
	int is_pos;  /* u64 index of the id counted from a record's end, or -1 */
	bool pos_ok; /* all events agree on id_pos and is_pos */
};

int hwt_fmt_evlist_alloc(struct hwt_fmt_evlist **evlist)
{
	if (!evlist)
		return -HWT_EINVAL;
	*evlist = calloc(1, sizeof(**evlist));
	if (!*evlist)
		return -ENOMEM;
	(*evlist)->pos_ok = true;
	return 0;
}

void hwt_fmt_evlist_free(struct hwt_fmt_evlist *evlist)
{
	if (!evlist)
		return;
	for (size_t i = 0; i < evlist->n; i++) {
		struct hwt_fmt_event *ev = evlist->events[i];

		free((void *)ev->name);
		free((void *)ev->ids);
		free(ev);
	}
	free(evlist->events);
	free(evlist->ids);
	free(evlist);
}

size_t hwt_fmt_evlist_count(const struct hwt_fmt_evlist *evlist)
{
	return evlist ? evlist->n : 0;
}

const struct hwt_fmt_event *hwt_fmt_evlist_event(const struct hwt_fmt_evlist *evlist, size_t i)
{
	if (!evlist || i >= evlist->n)
		return NULL;
	return evlist->events[i];
}

/* perf's __evsel__calc_id_pos / __evsel__calc_is_pos. */
static int calc_id_pos(uint64_t t)
{
	int idx = 0;

	if (t & PERF_SAMPLE_IDENTIFIER)
		return 0;
	if (!(t & PERF_SAMPLE_ID))
		return -1;
	idx += !!(t & PERF_SAMPLE_IP) + !!(t & PERF_SAMPLE_TID) + !!(t & PERF_SAMPLE_TIME) +
	       !!(t & PERF_SAMPLE_ADDR);
	return idx;
}

static int calc_is_pos(uint64_t t)
{
	int idx = 1;

	if (t & PERF_SAMPLE_IDENTIFIER)
		return 1;
	if (!(t & PERF_SAMPLE_ID))
		return -1;
	idx += !!(t & PERF_SAMPLE_CPU) + !!(t & PERF_SAMPLE_STREAM_ID);
	return idx;
}

static int cmp_id(const void *a, const void *b)
{
	const struct id_ent *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int fmt_evlist_find_id(const struct hwt_fmt_evlist *evlist, uint64_t id)
{
	size_t lo = 0, hi = evlist->nids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (evlist->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < evlist->nids && evlist->ids[lo].id == id)
		return (int)evlist->ids[lo].idx;
	return -1;
}

int fmt_evlist_add_ids(struct hwt_fmt_evlist *evlist, size_t idx, const uint64_t *ids, size_t nids)
{
	struct hwt_fmt_event *ev;
	uint64_t *evids;
	size_t total, n = 0;

	if (!evlist || idx >= evlist->n || (nids && !ids))
		return -HWT_EINVAL;
	if (!nids)
		return 0;
	ev = evlist->events[idx];
	if (hwt_add_size(ev->nids, nids, &total) < 0 || total > SIZE_MAX / 8)
		return -HWT_ETOOBIG;
	evids = realloc((void *)ev->ids, total * sizeof(*evids));
	if (!evids)
		return -ENOMEM;
	ev->ids = evids;
	if (evlist->nids + nids > evlist->capids) {
		size_t cap = evlist->capids ? evlist->capids : 16;
		struct id_ent *t;

		while (cap < evlist->nids + nids)
			cap *= 2;
		t = realloc(evlist->ids, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		evlist->ids = t;
		evlist->capids = cap;
	}
	for (size_t i = 0; i < nids; i++) {
		/* An id already owned (by this or another event) keeps its
		 * first owner, as the first attr that announced it wins in perf. */
		if (fmt_evlist_find_id(evlist, ids[i]) >= 0)
			continue;
		evids[ev->nids + n] = ids[i];
		evlist->ids[evlist->nids].id = ids[i];
		evlist->ids[evlist->nids].idx = (uint32_t)idx;
		evlist->nids++;
		n++;
		/* Keep sorted as we go so find_id above sees the new ids. */
		qsort(evlist->ids, evlist->nids, sizeof(*evlist->ids), cmp_id);
	}
	ev->nids += n;
	return 0;
}

int fmt_evlist_set_name(struct hwt_fmt_evlist *evlist, size_t idx, const char *name)
{
	char *copy;

	if (!evlist || idx >= evlist->n || !name)
		return -HWT_EINVAL;
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	free((void *)evlist->events[idx]->name);
	evlist->events[idx]->name = copy;
	return 0;
}

int hwt_fmt_evlist_add(struct hwt_fmt_evlist *evlist, const void *attr, size_t attr_size,
		       const char *name, const uint64_t *ids, size_t nids)
{
	struct hwt_fmt_event *ev;
	size_t idx;
	int err;

	if (!evlist || !attr || attr_size < PERF_ATTR_SIZE_VER0 || (nids && !ids) ||
	    evlist->n >= INT32_MAX)
		return -HWT_EINVAL;
	if (evlist->n == evlist->cap) {
		size_t cap = evlist->cap ? evlist->cap * 2 : 4;
		struct hwt_fmt_event **t = realloc(evlist->events, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		evlist->events = t;
		evlist->cap = cap;
	}
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	/* Older (smaller) attrs are zero-extended; newer fields we do not
	 * know are dropped, as the kernel would treat them as zero. */
	memcpy(&ev->attr, attr, attr_size < sizeof(ev->attr) ? attr_size : sizeof(ev->attr));
	hwt_fmt_attr_info_from_attr(&ev->info, &ev->attr);
	ev->name = strdup(name ? name : "");
	if (!ev->name) {
		free(ev);
		return -ENOMEM;
	}
	idx = evlist->n;
	evlist->events[evlist->n++] = ev;

	if (idx == 0) {
		evlist->id_pos = calc_id_pos(ev->info.sample_type);
		evlist->is_pos = calc_is_pos(ev->info.sample_type);
	} else if (evlist->id_pos != calc_id_pos(ev->info.sample_type) ||
		   evlist->is_pos != calc_is_pos(ev->info.sample_type)) {
		evlist->pos_ok = false;
	}
	err = fmt_evlist_add_ids(evlist, idx, ids, nids);
	if (err < 0)
		return err;
	return (int)idx;
}

/* Which event a record belongs to; -1 for perf.data's own records. */
static int record_event(const struct hwt_fmt_evlist *evlist, const uint8_t *p, uint32_t type,
			size_t size)
{
	uint64_t id;
	int idx;

	if (type >= FMT_PERF_HEADER_ATTR)
		return -1;
	if (evlist->n == 0)
		return type == PERF_RECORD_SAMPLE ? -HWT_EFORMAT : -1;
	if (evlist->n == 1)
		return 0;
	if (type != PERF_RECORD_SAMPLE && !evlist->events[0]->info.sample_id_all)
		return 0;
	if (!evlist->pos_ok)
		return -HWT_EFORMAT;
	if (type == PERF_RECORD_SAMPLE) {
		if (evlist->id_pos < 0 || (size - 8) / 8 <= (size_t)evlist->id_pos)
			return -HWT_EFORMAT;
		id = hwt_le64(p + 8 + 8 * (size_t)evlist->id_pos);
	} else {
		if (evlist->is_pos < 0 || (size - 8) / 8 < (size_t)evlist->is_pos)
			return -HWT_EFORMAT;
		id = hwt_le64(p + size - 8 * (size_t)evlist->is_pos);
	}
	/* Records perf synthesizes (mmaps of running processes) carry id 0. */
	if (id == 0)
		return 0;
	idx = fmt_evlist_find_id(evlist, id);
	return idx >= 0 ? idx : -HWT_EFORMAT;
}

int hwt_fmt_evlist_parse(const struct hwt_fmt_evlist *evlist, const void *buf, size_t len,
			 struct hwt_fmt_record *rec)
{
	const uint8_t *p = buf;
	uint32_t type;
	size_t size;
	int idx, err;

	if (!evlist || !buf || !rec)
		return -HWT_EINVAL;
	if (len < sizeof(struct perf_event_header))
		return hwt_fmt_record_parse(NULL, buf, len, rec);
	type = hwt_le32(p);
	size = hwt_le16(p + 6);
	if (size > len || size < sizeof(struct perf_event_header))
		return hwt_fmt_record_parse(NULL, buf, len, rec);
	idx = record_event(evlist, p, type, size);
	if (idx < -1) {
		/* Still fill in what can be known, for the caller's report. */
		hwt_fmt_record_parse(NULL, buf, len, rec);
		return idx;
	}
	err = hwt_fmt_record_parse(idx >= 0 ? &evlist->events[idx]->info : NULL, buf, len, rec);
	rec->event = idx;
	return err;
}

int fmt_evlist_to_meta(const struct hwt_fmt_evlist *evlist, struct fmt_meta_store *st)
{
	char key[64];
	int err;

	err = fmt_meta_store_set_u64(st, HWT_META_EVENT_COUNT, evlist->n);
	for (size_t i = 0; !err && i < evlist->n; i++) {
		const struct hwt_fmt_event *ev = evlist->events[i];
		uint8_t *ids;
		size_t attr_size = ev->attr.size ? ev->attr.size : sizeof(ev->attr);

		if (attr_size > sizeof(ev->attr))
			attr_size = sizeof(ev->attr);
		snprintf(key, sizeof(key), HWT_META_EVENT_FMT, (unsigned)i, "attr");
		err = fmt_meta_store_set(st, HWT_FMT_META_BYTES, key, strlen(key), &ev->attr,
					 attr_size);
		if (err)
			break;
		snprintf(key, sizeof(key), HWT_META_EVENT_FMT, (unsigned)i, "name");
		err = fmt_meta_store_set_str(st, key, ev->name);
		if (err)
			break;
		ids = malloc(ev->nids * 8 + 1);
		if (!ids)
			return -ENOMEM;
		for (size_t j = 0; j < ev->nids; j++)
			hwt_put_le64(ids + 8 * j, ev->ids[j]);
		snprintf(key, sizeof(key), HWT_META_EVENT_FMT, (unsigned)i, "ids");
		err =
		    fmt_meta_store_set(st, HWT_FMT_META_BYTES, key, strlen(key), ids, ev->nids * 8);
		free(ids);
	}
	return err;
}

int fmt_evlist_from_meta(struct hwt_fmt_evlist *evlist, const struct fmt_meta_store *st)
{
	const struct hwt_fmt_meta *m = fmt_meta_store_find(st, HWT_META_EVENT_COUNT);
	char key[64];

	if (!m)
		return 0;
	if (m->type != HWT_FMT_META_U64 || m->v.u64 > 65536)
		return -HWT_EFORMAT;
	for (uint64_t i = 0; i < m->v.u64; i++) {
		const struct hwt_fmt_meta *attr, *name, *ids;
		uint64_t *idv = NULL;
		size_t nids = 0;
		int err;

		snprintf(key, sizeof(key), HWT_META_EVENT_FMT, (unsigned)i, "attr");
		attr = fmt_meta_store_find(st, key);
		snprintf(key, sizeof(key), HWT_META_EVENT_FMT, (unsigned)i, "name");
		name = fmt_meta_store_find(st, key);
		snprintf(key, sizeof(key), HWT_META_EVENT_FMT, (unsigned)i, "ids");
		ids = fmt_meta_store_find(st, key);
		if (!attr || attr->type != HWT_FMT_META_BYTES || attr->len < PERF_ATTR_SIZE_VER0)
			return -HWT_EFORMAT;
		if (name && name->type != HWT_FMT_META_STR)
			return -HWT_EFORMAT;
		if (ids) {
			if (ids->type != HWT_FMT_META_BYTES || ids->len % 8)
				return -HWT_EFORMAT;
			nids = ids->len / 8;
			idv = malloc(nids * sizeof(*idv) + 1);
			if (!idv)
				return -ENOMEM;
			for (size_t j = 0; j < nids; j++)
				idv[j] = hwt_le64(ids->v.bytes + 8 * j);
		}
		err = hwt_fmt_evlist_add(evlist, attr->v.bytes, attr->len,
					 name ? name->v.str : NULL, idv, nids);
		free(idv);
		if (err < 0)
			return err;
	}
	return 0;
}
