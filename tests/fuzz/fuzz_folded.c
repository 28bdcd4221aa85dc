/*
 * tests/fuzz/fuzz_folded.c - the folded-stack reader (hwtrace flame
 * --folded-in) on arbitrary bytes. Whatever it accepts must render in every
 * profile format, and folded output read back must render identically
 * (written folded stacks always parse back to the same stacks).
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
	if (hwt_rep_profile_alloc(&q, NULL) < 0)
		abort();
	if (hwt_rep_profile_add_folded(q, (const char *)a.data, a.len, "ev", &line) < 0)
		abort();
	render(q, HWT_REP_FMT_FOLDED, &b);
	if (a.len != b.len || (a.len && memcmp(a.data, b.data, a.len)))
		abort();
	hwt_buf_fini(&a);
	hwt_buf_fini(&b);
	hwt_buf_fini(&tmp);
	hwt_rep_profile_free(p);
	hwt_rep_profile_free(q);
	return 0;
}
