/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_folded.c - the folded-stack reader (hwtrace flame
 * --folded-in) on arbitrary bytes. Whatever it accepts must render in every
 * profile format; folded output must parse back with the same total, and
 * writing what was read back must be a fixed point. (The first writing
 * may differ in line order or split a stack in two lines: names with a CR
 * or ';' are written with '?' or ':', which can sort differently or meet
 * another name; a reader sums duplicate lines, so no count is lost.)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

static void render(const struct hwt_rep_profile *p, enum hwt_rep_format f, struct hwt_buf *out)
{
	struct hwt_rep_render_config cfg;

	hwt_rep_render_config_init(&cfg);
	cfg.format = f;
	if (hwt_rep_render(p, &cfg, out) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_rep_profile *p = NULL, *q = NULL;
	struct hwt_buf a, b, tmp;
	size_t line;
	int64_t n;

	if (hwt_rep_profile_alloc(&p, NULL) < 0)
		return 0;
	n = hwt_rep_profile_add_folded(p, (const char *)data, size, "ev", &line);
	if (n < 0 && n != -HWT_EFORMAT)
		abort(); /* only malformed input may fail */
	hwt_buf_init(&a);
	hwt_buf_init(&b);
	hwt_buf_init(&tmp);
	render(p, HWT_REP_FMT_FOLDED, &a);
	for (int f = HWT_REP_FMT_TEXT; f <= HWT_REP_FMT_PPROF; f++) {
		tmp.len = 0;
		render(p, (enum hwt_rep_format)f, &tmp);
	}
	for (int round = 0; round < 2; round++) {
		struct hwt_buf *in = round ? &b : &a;
		uint64_t before =
		    round ? hwt_rep_profile_stats(q)->weight : hwt_rep_profile_stats(p)->weight;

		hwt_rep_profile_free(q);
		q = NULL;
		if (hwt_rep_profile_alloc(&q, NULL) < 0)
			abort();
		if (hwt_rep_profile_add_folded(q, (const char *)in->data, in->len, "ev", &line) < 0)
			abort();
		if (hwt_rep_profile_stats(q)->weight != before)
			abort(); /* folded input has no stackless samples to drop */
		tmp.len = 0;
		render(q, HWT_REP_FMT_FOLDED, round ? &tmp : &b);
	}
	if (b.len != tmp.len || (b.len && memcmp(b.data, tmp.data, b.len)))
		abort();
	hwt_buf_fini(&a);
	hwt_buf_fini(&b);
	hwt_buf_fini(&tmp);
	hwt_rep_profile_free(p);
	hwt_rep_profile_free(q);
	return 0;
}
