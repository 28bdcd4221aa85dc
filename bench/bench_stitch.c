/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench/bench_stitch.c - what stitching costs: a one-thread PT recording
 * decoded as recorded (one per-thread stream) against the same trace
 * rewritten as a per-CPU recording in which the thread moves between two
 * CPUs PIECES times (tests/lib/ptsplit.h), decoded with stitching (the
 * CPUs' streams decoded together on a thread each, records merged by time,
 * stacks carried over: the default) and without (each CPU alone, stacks
 * restarting). Same data, same run, best of RUNS: wall and process CPU
 * time of hwt_pts_run with a sink that sees every call and return, the
 * ratios to the per-thread decode, and the checks that all three decode
 * the same instructions and calls and that stitching leaves no more
 * unknown-frame returns than the per-thread decode.
 *
 *   usage: bench_stitch FILE.hwt [PIECES [RUNS]]   (see bench_stitch.sh)
 *   HWT_BENCH_ONLY=K decodes variant K only (0, 1, 2: the rows), to profile.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ptsession/ptsession.h"
#include "tests/lib/ptsplit.h"

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct tally {
	uint64_t calls, returns, unknown;
};

static int tally_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct tally *t = ctx;

	if (rec->type == HWT_DEC_REC_CALL)
		t->calls++;
	else if (rec->type == HWT_DEC_REC_RETURN && (rec->flags & HWT_DEC_RF_UNKNOWN_FRAME))
		t->unknown++;
	else if (rec->type == HWT_DEC_REC_RETURN)
		t->returns++;
	return 0;
}

struct result {
	double wall, cpu;
	uint64_t insns;
	struct tally t;
	bool stitched;
};

static int decode(const char *path, uint32_t stitch, struct result *res)
{
	struct hwt_fmt_session *s = NULL;
	struct hwt_pts *pts = NULL;
	struct hwt_pts_config cfg;
	struct hwt_pts_stats st;
	struct hwt_dec_sink sink;
	double w0, c0;
	int err;

	memset(&res->t, 0, sizeof(res->t));
	err = hwt_fmt_session_open(&s, path, NULL, NULL);
	if (err < 0)
		return err;
	hwt_pts_config_init(&cfg);
	cfg.stitch = stitch;
	err = hwt_pts_open(&pts, s, &cfg, NULL);
	if (err < 0)
		goto out;
	memset(&sink, 0, sizeof(sink));
	sink.size = sizeof(sink);
	sink.want = HWT_DEC_WANT(HWT_DEC_REC_CALL) | HWT_DEC_WANT(HWT_DEC_REC_RETURN);
	sink.rec = tally_rec;
	sink.ctx = &res->t;
	err = hwt_pts_add_sink(pts, &sink);
	if (err < 0)
		goto out;
	w0 = clock_s(CLOCK_MONOTONIC);
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	err = hwt_pts_run(pts);
	res->cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	res->wall = clock_s(CLOCK_MONOTONIC) - w0;
	hwt_pts_stats(pts, &st);
	res->insns = st.dec.insns;
	res->stitched = st.stitched;
out:
	hwt_pts_close(pts);
	hwt_fmt_session_close(s);
	return err;
}

int main(int argc, char **argv)
{
	static const char *const names[] = {
	    "per-thread stream (as recorded)",
	    "per-CPU, stitched (default)",
	    "per-CPU, not stitched",
	};
	static const uint32_t stitch[] = {HWT_PTS_STITCH_AUTO, HWT_PTS_STITCH_AUTO,
					  HWT_PTS_STITCH_OFF};
	char split[] = "/tmp/hwt-bench-split-XXXXXX", why[256];
	unsigned int pieces = argc > 2 ? (unsigned int)atoi(argv[2]) : 64;
	int runs = argc > 3 ? atoi(argv[3]) : 3;
	struct result best[3], r;
	const char *only = getenv("HWT_BENCH_ONLY");
	int fd, ok = 1;

	if (argc < 2) {
		fprintf(stderr, "usage: bench_stitch FILE.hwt [PIECES [RUNS]]\n");
		return 2;
	}
	fd = mkstemp(split);
	if (fd < 0) {
		perror("bench_stitch: mkstemp");
		return 1;
	}
	close(fd);
	if (ptsplit_write(argv[1], split, pieces, 2, why, sizeof(why)) != 0) {
		fprintf(stderr, "bench_stitch: %s\n", why);
		remove(split);
		return 1;
	}
	memset(best, 0, sizeof(best));
	for (int k = 0; k < 3; k++)
		best[k].wall = best[k].cpu = 1e30;
	/* Round robin, so every variant sees the same machine load. */
	for (int i = 0; i < runs; i++) {
		for (int k = 0; k < 3; k++) {
			/* HWT_BENCH_ONLY=k decodes one variant (for profiling). */
			if (only && atoi(only) != k)
				continue;
			if (decode(k ? split : argv[1], stitch[k], &r) < 0) {
				fprintf(stderr, "bench_stitch: %s does not decode\n",
					k ? split : argv[1]);
				remove(split);
				return 1;
			}
			if (r.wall < best[k].wall) {
				double cpu = r.cpu < best[k].cpu ? r.cpu : best[k].cpu;

				best[k] = r;
				best[k].cpu = cpu;
			} else if (r.cpu < best[k].cpu) {
				best[k].cpu = r.cpu;
			}
		}
	}
	printf("trace %s: %" PRIu64 " instructions, %" PRIu64 " calls; per-CPU copy: %u pieces on "
	       "2 CPUs (%u migrations); best of %d\n",
	       argv[1], best[0].insns, best[0].t.calls, pieces, pieces - 1, runs);
	printf("%-34s %8s %8s %11s %9s %9s %s\n", "decode", "wall s", "cpu s", "insns/s",
	       "vs thread", "unknown", "same");
	for (int k = 0; k < 3; k++) {
		bool same = best[k].insns == best[0].insns && best[k].t.calls == best[0].t.calls;

		/* One variant only: nothing to compare with. */
		if (only) {
			if (atoi(only) == k)
				printf("%-34s %8.3f %8.3f %11.3g\n", names[k], best[k].wall,
				       best[k].cpu, (double)best[k].insns / best[k].wall);
			continue;
		}
		if (!same ||
		    (k == 1 && (!best[k].stitched || best[k].t.unknown > best[0].t.unknown)))
			ok = 0;
		printf("%-34s %8.3f %8.3f %11.3g %8.2fx %9" PRIu64 " %s\n", names[k], best[k].wall,
		       best[k].cpu, (double)best[k].insns / best[k].wall,
		       best[0].wall / best[k].wall, best[k].t.unknown, same ? "yes" : "NO");
	}
	printf("(vs thread: wall-time speed relative to the per-thread decode, above 1 is faster; "
	       "unknown: returns into frames the decode did not see)\n");
	remove(split);
	return ok ? 0 : 1;
}
