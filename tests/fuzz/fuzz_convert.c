/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_convert.c - `hwtrace convert` over arbitrary bytes taken
 * as a .hwt recording: hwt_fmt_convert() must never crash, and whatever it
 * writes without an error must read back through our perf.data reader with
 * every record and every AUX byte intact (a converted file perf could not
 * read is a finding too).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/format.h"
#include "tests/fuzz/fuzz_memfd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_fmt_convert_stats st;
	struct hwt_fmt_session *s;
	struct hwt_fmt_record rec;
	struct hwt_fmt_session_stats ss;
	char in[64], out[64];
	uint64_t records = 0, aux = 0;
	int fin = fuzz_memfd(data, size, in, sizeof(in));
	int fout = fuzz_memfd(NULL, 0, out, sizeof(out));
	int err;

	if (fin < 0 || fout < 0)
		goto done;
	err = hwt_fmt_convert(in, out, NULL, &st, NULL);
	if (err < 0)
		goto done;
	if (hwt_fmt_session_open(&s, out, NULL, NULL) != 0)
		abort(); /* we wrote a perf.data we cannot read */
	while ((err = hwt_fmt_session_next(s, &rec, NULL)) == 0)
		records += rec.type != 71; /* AUXTRACE records are delivered too */
	if (err != -HWT_EEOS)
		abort();
	hwt_fmt_session_stats(s, &ss);
	if (ss.bad_records || records != st.records)
		abort();
	for (size_t i = 0; i < hwt_fmt_session_naux(s); i++)
		for (size_t g = 0; g < hwt_fmt_session_aux(s, i)->nsegments; g++)
			aux += hwt_fmt_session_aux_segment(s, i, g)->size;
	/* Our reader keeps perf's zero padding at the end of each run. */
	if (aux < st.aux_bytes || aux > st.aux_bytes + 8 * st.aux_records)
		abort();
	hwt_fmt_session_close(s);
done:
	if (fin >= 0)
		close(fin);
	if (fout >= 0)
		close(fout);
	return 0;
}
