/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_tpformat.c - the tracefs format parser (probe/) on
 * arbitrary bytes: it must accept or refuse without reading past the
 * input, and every field it accepts must lie inside a 64 KiB raw record.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prb_tp_format *f = NULL;

	if (prb_tp_format_parse((const char *)data, size, &f) == 0) {
		if (!f || !f->name)
			abort();
		for (size_t i = 0; i < f->nfields; i++) {
			const struct prb_tp_field *fl = &f->fields[i];

			if (!fl->name[0] || !fl->size || fl->offset + fl->size > 65536)
				abort();
			if (prb_tp_format_field(f, fl->name) == NULL)
				abort();
		}
		prb_tp_format_free(f);
	} else if (f) {
		abort();
	}
	return 0;
}
