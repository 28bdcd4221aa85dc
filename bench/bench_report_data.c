/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench/bench_report_data.c - makes the input of bench/bench_report.sh: a
 * perf.data of at least N samples, grown from a short real recording with
 * format's perf.data writer. Recording a million samples on this kind of
 * machine takes minutes of CPU at the highest rate perf allows (and starves
 * the workload); growing a real recording keeps everything real that a
 * report depends on: the same processes, mappings, binaries and call
 * chains, each sample written K times in place (same time, so every sample
 * still falls between its process's exec and exit, in time order).
 * FINISHED_ROUND records are written every 65536 records, as perf record
 * writes them, so that perf report can flush its queue as it reads.
 *
 * usage: bench_report_data IN.data OUT.data N
 * Prints "samples IN_SAMPLES x K = OUT_SAMPLES" on stdout.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"

#define ROUND_EVERY 65536

/* The perf.data user record perf ends a round of ordered events with. */
#define PERF_RECORD_FINISHED_ROUND 68

static int fail(const char *what, int err)
{
	fprintf(stderr, "bench_report_data: %s: %s\n", what, hwt_strerror(err));
	return 1;
}

/* Counts the samples of a session (and rewinds it). */
static int64_t count_samples(struct hwt_fmt_session *s)
{
	struct hwt_fmt_record rec;
	int64_t n = 0;
	int err;

	while ((err = hwt_fmt_session_next(s, &rec, NULL)) == 0)
		n += rec.type == PERF_RECORD_SAMPLE;
	if (err != -HWT_EEOS)
		return err;
	err = hwt_fmt_session_rewind(s);
	return err < 0 ? err : n;
}

int main(int argc, char **argv)
{
	const struct perf_event_header round = {PERF_RECORD_FINISHED_ROUND, 0, sizeof(round)};
	struct hwt_fmt_perf_writer *w = NULL;
	struct hwt_fmt_session *s = NULL;
	struct hwt_fmt_record rec;
	uint64_t want, k, written = 0, since_round = 0;
	int64_t have;
	int err, rc = 1;

	if (argc != 4 || (want = strtoull(argv[3], NULL, 10)) == 0) {
		fprintf(stderr, "usage: bench_report_data IN.data OUT.data N\n");
		return 2;
	}
	err = hwt_fmt_session_open(&s, argv[1], NULL, NULL);
	if (err < 0)
		return fail(argv[1], err);
	have = count_samples(s);
	if (have <= 0) {
		rc = have < 0 ? fail(argv[1], (int)have) : fail(argv[1], -HWT_EINVAL);
		goto out;
	}
	k = (want + (uint64_t)have - 1) / (uint64_t)have;
	err = hwt_fmt_perf_writer_open(&w, argv[2], hwt_fmt_session_evlist(s));
	if (err < 0) {
		rc = fail(argv[2], err);
		goto out;
	}
	while ((err = hwt_fmt_session_next(s, &rec, NULL)) == 0) {
		uint64_t copies = rec.type == PERF_RECORD_SAMPLE ? k : 1;

		if (rec.type >= 64)
			continue; /* perf.data's own records: the writer makes them */
		for (uint64_t i = 0; i < copies && err >= 0; i++) {
			err = hwt_fmt_perf_writer_record(w, rec.raw, rec.size);
			if (err >= 0 && ++since_round == ROUND_EVERY) {
				err = hwt_fmt_perf_writer_record(w, &round, sizeof(round));
				since_round = 0;
			}
		}
		if (err < 0)
			break;
		written += rec.type == PERF_RECORD_SAMPLE ? copies : 0;
	}
	if (err != -HWT_EEOS) {
		rc = fail("copying records", err);
		goto out;
	}
	if (since_round)
		err = hwt_fmt_perf_writer_record(w, &round, sizeof(round));
	if (err >= 0) {
		err = hwt_fmt_perf_writer_close(w);
		w = NULL;
	}
	if (err < 0) {
		rc = fail(argv[2], err);
		goto out;
	}
	printf("samples %" PRId64 " x %" PRIu64 " = %" PRIu64 "\n", have, k, written);
	rc = 0;
out:
	hwt_fmt_perf_writer_close(w);
	hwt_fmt_session_close(s);
	return rc;
}
