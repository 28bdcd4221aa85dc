/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_pt_terms.c - the Intel PT term parser (`--pt=TERMS`,
 * `-e intel_pt/TERMS/MODS`) against an Ice Lake-like PMU built in memory:
 * any input either fails with a message, or gives a configuration whose
 * every set bit belongs to a format term, with privilege levels that trace
 * something.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/rec_int.h"

static void fmt(struct hwt_coll_pt_pmu *p, const char *name, unsigned lo, unsigned hi)
{
	struct hwt_coll_pt_fmt *f = &p->fmt[p->nfmt++];

	strcpy(f->name, name);
	f->field = 0;
	f->lo = (uint8_t)lo;
	f->hi = (uint8_t)hi;
}

static void cap(struct hwt_coll_pt_pmu *p, const char *name, uint64_t v)
{
	struct hwt_coll_pt_cap *c = &p->caps[p->ncaps++];

	strcpy(c->name, name);
	c->value = v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hwt_coll_pt_pmu pmu;
	struct hwt_coll_pt_conf conf;
	uint64_t allowed = 0;
	char msg[512], *s;
	int err;

	if (!pmu.nfmt) {
		pmu.type = 11;
		fmt(&pmu, "branch", 13, 13);
		fmt(&pmu, "cyc", 1, 1);
		fmt(&pmu, "cyc_thresh", 19, 22);
		fmt(&pmu, "event", 31, 31);
		fmt(&pmu, "fup_on_ptw", 5, 5);
		fmt(&pmu, "mtc", 9, 9);
		fmt(&pmu, "mtc_period", 14, 17);
		fmt(&pmu, "noretcomp", 11, 11);
		fmt(&pmu, "notnt", 55, 55);
		fmt(&pmu, "psb_period", 24, 27);
		fmt(&pmu, "pt", 0, 0);
		fmt(&pmu, "ptw", 12, 12);
		fmt(&pmu, "pwr_evt", 4, 4);
		fmt(&pmu, "tsc", 10, 10);
		cap(&pmu, "cycle_thresholds", 0x3fff);
		cap(&pmu, "event_trace", 0);
		cap(&pmu, "mtc", 1);
		cap(&pmu, "mtc_periods", 0x249);
		cap(&pmu, "power_event_trace", 1);
		cap(&pmu, "psb_cyc", 1);
		cap(&pmu, "psb_periods", 0x3f);
		cap(&pmu, "ptwrite", 1);
		cap(&pmu, "tnt_disable", 0);
	}
	for (size_t i = 0; i < pmu.nfmt; i++)
		for (unsigned b = pmu.fmt[i].lo; b <= pmu.fmt[i].hi; b++)
			allowed |= 1ull << b;
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	msg[0] = '\0';
	err = hwt_coll_pt_conf_parse(&pmu, s, &conf, msg, sizeof(msg));
	if (err < 0) {
		if (!msg[0] || (err != -HWT_EPARSE && err != -HWT_ENOTSUP))
			abort();
	} else if ((conf.config & ~allowed) || (!conf.user && !conf.kernel)) {
		abort();
	}
	free(s);
	return 0;
}
