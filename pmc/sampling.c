/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pmc/sampling.c - what perf record gives an event's attribute beyond its
 * encoding: leader sampling for groups (:S), LBR call stacks with perf's
 * branch flags, and the precise level of the default event.
 */
#include "pmc/pmc_int.h"

#include <string.h>

void hwt_pmc_sample_group_attr(const struct hwt_pmc_evlist *list, size_t i,
			       struct perf_event_attr *a)
{
	const struct hwt_pmc_event *ev = hwt_pmc_evlist_event(list, i);
	const struct hwt_pmc_event *l = ev ? hwt_pmc_evlist_event(list, (size_t)ev->leader) : NULL;

	if (!l || !l->sample_read || l->nr_members < 2)
		return;
	/* perf's evsel__config for sample_read: the leader's samples carry
	 * every member's count (PERF_SAMPLE_READ, group format with ids);
	 * members do not sample; no inheritance (the kernel refuses
	 * PERF_SAMPLE_READ with inherit). */
	a->sample_type |= PERF_SAMPLE_READ;
	a->read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
	a->inherit = 0;
	if (ev != l) {
		a->freq = 0;
		a->sample_period = 0;
		a->sample_type &= ~(uint64_t)PERF_SAMPLE_PERIOD;
	}
}

bool hwt_pmc_lbr_attr(struct perf_event_attr *a)
{
	/* LBR call stacks are user-space only (the kernel's call stack mode
	 * records ring 3): an event that excludes user space gets frame
	 * pointers instead, as perf does. */
	if (a->exclude_user)
		return false;
	a->sample_type |= PERF_SAMPLE_BRANCH_STACK;
	a->branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_CALL_STACK |
				PERF_SAMPLE_BRANCH_NO_CYCLES | PERF_SAMPLE_BRANCH_NO_FLAGS |
				PERF_SAMPLE_BRANCH_HW_INDEX;
	return true;
}

bool hwt_pmc_lbr_attr_older(struct perf_event_attr *a)
{
	const uint64_t newer = PERF_SAMPLE_BRANCH_NO_CYCLES | PERF_SAMPLE_BRANCH_NO_FLAGS |
			       PERF_SAMPLE_BRANCH_HW_INDEX;

	if (!(a->branch_sample_type & newer))
		return false;
	a->branch_sample_type &= ~newer;
	return true;
}
