/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_record.c - the perf record parser with fuzzed attr
 * information: the first 41 bytes choose sample_type, read_format, register
 * masks, branch_sample_type and sample_id_all; the rest is the record. On
 * success every pointer the parser hands out is read to its full length,
 * so a field that runs past the record is caught by the sanitizers. The
 * same bytes also go through an evlist of two events.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"

static volatile uint8_t sink;

static void touch(const void *p, uint64_t n)
{
	const uint8_t *b = p;

	for (uint64_t i = 0; b && i < n; i++)
		sink ^= b[i];
}

static void touch_record(const struct hwt_fmt_attr_info *info, const struct hwt_fmt_record *rec)
{
	const struct hwt_fmt_sample *s = &rec->u.sample;

	touch(rec->raw, rec->size);
	switch (rec->type) {
	case PERF_RECORD_SAMPLE:
		touch(s->callchain, s->callchain_nr * 8);
		touch(s->raw, s->raw_size);
		touch(s->branches, s->branch_nr * sizeof(struct perf_branch_entry));
		if (s->regs_user)
			touch(s->regs_user, 8u * (uint64_t)__builtin_popcountll(s->regs_user_mask));
		if (s->regs_intr)
			touch(s->regs_intr, 8u * (uint64_t)__builtin_popcountll(s->regs_intr_mask));
		touch(s->stack_user, s->stack_user_size);
		touch(s->aux, s->aux_size);
		for (uint64_t i = 0; i < s->read.nr && i < 4096; i++) {
			struct hwt_fmt_read_value v;

			hwt_fmt_read_value_at(&s->read, info->read_format, i, &v);
			sink ^= (uint8_t)v.value;
		}
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		touch(rec->u.mmap.filename, strlen(rec->u.mmap.filename));
		break;
	case PERF_RECORD_COMM:
		touch(rec->u.comm.comm, strlen(rec->u.comm.comm));
		break;
	case PERF_RECORD_KSYMBOL:
		touch(rec->u.ksymbol.name, strlen(rec->u.ksymbol.name));
		break;
	case PERF_RECORD_CGROUP:
		touch(rec->u.cgroup.path, strlen(rec->u.cgroup.path));
		break;
	case PERF_RECORD_NAMESPACES:
		touch(rec->u.namespaces.entries, rec->u.namespaces.nr * 16);
		break;
	case PERF_RECORD_TEXT_POKE:
		touch(rec->u.text_poke.old_bytes, rec->u.text_poke.old_len);
		touch(rec->u.text_poke.new_bytes, rec->u.text_poke.new_len);
		break;
	case PERF_RECORD_READ:
		for (uint64_t i = 0; i < rec->u.read.values.nr && i < 4096; i++) {
			struct hwt_fmt_read_value v;

			hwt_fmt_read_value_at(&rec->u.read.values, info->read_format, i, &v);
			sink ^= (uint8_t)v.value;
		}
		break;
	default:
		break;
	}
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_fmt_attr_info info;
	struct hwt_fmt_record rec;
	struct hwt_fmt_evlist *ev;
	struct perf_event_attr attr;
	uint8_t *copy;
	size_t len;

	if (size < 41)
		return 0;
	memset(&info, 0, sizeof(info));
	info.sample_type = get64(data) & (PERF_SAMPLE_MAX - 1);
	info.read_format = get64(data + 8) & (PERF_FORMAT_MAX - 1);
	info.sample_regs_user = get64(data + 16);
	info.sample_regs_intr = get64(data + 24);
	info.branch_sample_type = get64(data + 32);
	info.sample_id_all = data[40] & 1;
	len = size - 41;
	/* An exact-size heap copy, so reading one byte past it is caught. */
	copy = malloc(len ? len : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 41, len);
	if (hwt_fmt_record_parse(&info, copy, len, &rec) == 0) {
		if (rec.size > len)
			abort();
		touch_record(&info, &rec);
	}
	hwt_fmt_record_parse(NULL, copy, len, &rec);

	/* Two events that share the id layout, ids 1 and 2. */
	if (hwt_fmt_evlist_alloc(&ev) == 0) {
		uint64_t id1 = 1, id2 = 2;

		memset(&attr, 0, sizeof(attr));
		attr.size = sizeof(attr);
		attr.sample_type = info.sample_type;
		attr.read_format = info.read_format;
		attr.sample_regs_user = info.sample_regs_user;
		attr.sample_regs_intr = info.sample_regs_intr;
		attr.branch_sample_type = info.branch_sample_type;
		attr.sample_id_all = info.sample_id_all;
		hwt_fmt_evlist_add(ev, &attr, sizeof(attr), "a", &id1, 1);
		hwt_fmt_evlist_add(ev, &attr, sizeof(attr), "b", &id2, 1);
		if (hwt_fmt_evlist_parse(ev, copy, len, &rec) == 0) {
			if (rec.event < -1 || rec.event > 1)
				abort();
			touch_record(&info, &rec);
		}
		hwt_fmt_evlist_free(ev);
	}
	free(copy);
	return 0;
}
