/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_evspec.c - the -e parser (hwt_pmc_evlist_add) on
 * arbitrary bytes: braces, commas, modifiers, sysfs terms, long names.
 * Sysfs and tracefs point at a missing folder so the harness stays
 * deterministic and fast; libpfm4 is the host's. The list must stay
 * consistent: every event's leader is a valid earlier index.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pmc/pmc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_pmc_config cfg;
	struct hwt_pmc_evlist *l;
	char *spec;
	int n;

	if (size > 4096)
		return 0;
	spec = malloc(size + 1);
	if (!spec)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	hwt_pmc_config_init(&cfg);
	cfg.sysfs_root = "/nonexistent-hwt-fuzz";
	cfg.tracefs_root = "/nonexistent-hwt-fuzz";
	if (hwt_pmc_evlist_alloc(&l, &cfg) == 0) {
		n = hwt_pmc_evlist_add(l, spec);
		if (n >= 0 && (size_t)n != hwt_pmc_evlist_count(l))
			abort();
		if (n < 0 && (hwt_pmc_evlist_count(l) != 0 || !hwt_pmc_evlist_errmsg(l)[0]))
			abort();
		for (size_t i = 0; i < hwt_pmc_evlist_count(l); i++) {
			const struct hwt_pmc_event *e = hwt_pmc_evlist_event(l, i);

			if (e->leader < 0 || (size_t)e->leader > i ||
			    hwt_pmc_evlist_event(l, (size_t)e->leader)->nr_members == 0)
				abort();
		}
		hwt_pmc_evlist_free(l);
	}
	free(spec);
	return 0;
}
