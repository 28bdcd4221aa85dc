/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_ptemu_terms.c - the PT emulator's term parser
 * (`--pt=emulate,TERMS`): any input either fails with -HWT_EPARSE and a
 * pointer into the input, or gives terms in range whose perf config word
 * and plugin shape argument round-trip, and whose filters (filter=) are
 * the rest of the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/collector.h"
#include "collector/ptemu_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_ptemu_terms t, u;
	const char *bad = NULL;
	char *s = malloc(size + 1);
	int err;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	hwt_ptemu_terms_init(&t);
	err = hwt_ptemu_terms_parse(&t, s, &bad);
	if (err < 0) {
		if (err != -HWT_EPARSE || !bad || bad < s || bad > s + strlen(s))
			abort();
	} else {
		if (t.mtc_period > 15 || t.psb_period > 15 || !t.tsc_per_insn)
			abort();
		hwt_ptemu_terms_from_config(&u, hwt_ptemu_terms_config(&t), t.tsc_per_insn);
		if (u.tsc != t.tsc || u.mtc != t.mtc || u.cyc != t.cyc ||
		    u.noretcomp != t.noretcomp || u.mtc_period != t.mtc_period ||
		    u.psb_period != t.psb_period)
			abort();
		/* filter= is the rest of the input, never empty. */
		if (t.filter && (t.filter <= s || t.filter >= s + strlen(s) ||
				 strncmp(t.filter - 7, "filter=", 7)))
			abort();
		/* The shape terms reach the plugin and come back whole. */
		{
			char arg[64];

			hwt_ptemu_terms_init(&u);
			if (hwt_ptemu_shape_arg(&t, arg, sizeof(arg)) <= 0 ||
			    hwt_ptemu_shape_parse(&u, arg) < 0 || u.tsx != t.tsx ||
			    u.pip != t.pip || u.vmcs != t.vmcs || u.vmentry != t.vmentry ||
			    u.psb_bytes != t.psb_bytes || u.psb_off != t.psb_off || u.ovf != t.ovf)
				abort();
		}
	}
	free(s);
	return 0;
}
