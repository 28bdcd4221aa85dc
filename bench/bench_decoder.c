/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench/bench_decoder.c - decoding speed of hwtrace's decoder against a plain
 * libipt block-decoder loop (what ptxed does: sync, drain events,
 * pt_blk_next per block, nothing else), on the same synthetic trace of a
 * program with calls, loops, indirect branches and system calls
 * (tests/lib/ptsynth.c; 10^8 instructions by default).
 *
 * hwtrace runs with full call stacks and per-block execution counts (the
 * profile that per-instruction counts are expanded from), no per-block
 * callbacks. Prints instructions/s, PT MB/s and the ratio to libipt, best of
 * N runs each, and checks every run decoded the instructions the workload
 * executed.
 *
 * With --hwt FILE, decodes a real (or emulated: `hwtrace record
 * --pt=emulate`) recording instead, through ptsession (sideband, images
 * over time), one thread, with each engine: LIBIPT (libipt's block decoder
 * per segment, with the same call stacks and profile: the ratios are to
 * it), FAST, and PTXED (what `script --format=ptxed` costs: libipt over the
 * whole stream plus disassembly of every instruction; not a plain loop).
 * Counted: CPU time of hwt_pts_run (reading the recording is outside). The
 * number of segments the fast engine left to libipt is printed: with a
 * sideband hook (every recording) that is all of them today.
 *
 *   usage: bench_decoder [INSNS [RUNS [THREADS]]]
 *          bench_decoder --hwt FILE [RUNS]
 */
#include <errno.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder/decoder.h"
#include "format/format.h"
#include "ptsession/ptsession.h"
#include "tests/lib/ptsynth.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time of the calling thread: steadier than wall time on a busy
 * machine, for the single-threaded decoders. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The plain libipt loop. Returns instructions decoded. */
static uint64_t libipt_loop(const struct ptsynth *w, const char *code_path)
{
	struct pt_image_section_cache *isc = pt_iscache_alloc(NULL);
	struct pt_image *img = pt_image_alloc(NULL);
	struct pt_block_decoder *dec;
	struct pt_config cfg;
	uint64_t insns = 0;
	int isid;

	pt_config_init(&cfg);
	cfg.begin = w->pt;
	cfg.end = w->pt + w->pt_len;
	isid = pt_iscache_add_file(isc, code_path, 0, w->code_size, w->base);
	pt_image_add_cached(img, isc, isid, NULL);
	dec = pt_blk_alloc_decoder(&cfg);
	pt_blk_set_image(dec, img);
	for (;;) {
		int status = pt_blk_sync_forward(dec);

		if (status < 0)
			break;
		for (;;) {
			struct pt_block block;

			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_blk_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
			}
			if (status < 0 || (status & pts_eos))
				break;
			status = pt_blk_next(dec, &block, sizeof(block));
			insns += block.ninsn;
			if (status < 0)
				break;
		}
		if (status == -pte_eos)
			break;
	}
	pt_blk_free_decoder(dec);
	pt_image_free(img);
	pt_iscache_free(isc);
	return insns;
}

struct count_sink {
	uint64_t calls;
};

static int count_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct count_sink *c = ctx;

	if (rec->type == HWT_DEC_REC_CALL)
		c->calls++;
	return 0;
}

/* hwtrace's decoder. Returns instructions decoded (0 on error). */
static uint64_t hwtrace_run(const struct ptsynth *w, const char *code_path, uint32_t engine,
			    unsigned int threads, uint64_t *calls)
{
	struct hwt_dec_icache *ic = NULL;
	struct hwt_dec_image *img = NULL;
	struct hwt_dec *dec = NULL;
	struct hwt_dec_config cfg;
	struct hwt_dec_stats st;
	struct count_sink cs = {0};
	struct hwt_dec_sink sink;
	uint64_t insns = 0;

	hwt_dec_config_init(&cfg);
	cfg.engine = engine;
	cfg.threads = threads;
	cfg.flags = HWT_DEC_F_PROFILE;
	cfg.mtc_freq = 3;
	cfg.cpuid_0x15_eax = w->cpuid_0x15_eax;
	cfg.cpuid_0x15_ebx = w->cpuid_0x15_ebx;
	if (hwt_dec_icache_alloc(&ic, NULL) < 0 || hwt_dec_image_alloc(&img, ic, "bench") < 0 ||
	    hwt_dec_image_add_file(img, code_path, 0, w->code_size, w->base) < 0 ||
	    hwt_dec_alloc(&dec, &cfg, ic) < 0 || hwt_dec_set_context(dec, 1, 1, img) < 0)
		goto out;
	/* Stacks are kept for every call; a sink that counts calls shows
	 * they are reported, without a callback per block. */
	memset(&sink, 0, sizeof(sink));
	sink.size = sizeof(sink);
	sink.want = HWT_DEC_WANT(HWT_DEC_REC_CALL);
	sink.rec = count_rec;
	sink.ctx = &cs;
	if ((!getenv("HWT_BENCH_NOSINK") && hwt_dec_add_sink(dec, &sink) < 0) ||
	    hwt_dec_decode(dec, w->pt, w->pt_len) < 0)
		goto out;
	hwt_dec_stats(dec, &st);
	insns = st.insns;
	*calls = cs.calls;
out:
	hwt_dec_free(dec);
	hwt_dec_image_put(img);
	hwt_dec_icache_free(ic);
	return insns;
}

static int bench_workload(const char *label, bool biased, uint64_t ninsns, int runs,
			  unsigned int threads)
{
	static const char *names[] = {"libipt pt_blk_next loop", "hwtrace fast, 1 thread",
				      "hwtrace libipt engine, 1 thread", "hwtrace fast, N threads",
				      "hwtrace libipt engine, N threads"};
	struct ptsynth_config wc;
	struct ptsynth w;
	char code_path[] = "/tmp/hwt-bench-code-XXXXXX";
	double wall[5], cpu[5];
	uint64_t got[5], calls = 0;
	const char *only = getenv("HWT_BENCH_ONLY");
	FILE *f;
	int fd, ok = 1;

	ptsynth_config_init(&wc);
	wc.insns = ninsns;
	wc.seed = 42;
	wc.biased = biased;
	wc.syscall_ppm = getenv("HWT_BENCH_SYSCALL_PPM")
			     ? (unsigned int)atoi(getenv("HWT_BENCH_SYSCALL_PPM"))
			     : 200;
	if (ptsynth_generate(&wc, &w) < 0) {
		fprintf(stderr, "bench_decoder: cannot generate the workload\n");
		return 1;
	}
	fd = mkstemp(code_path);
	f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (!f || fwrite(w.code, 1, w.code_size, f) != w.code_size || fclose(f) != 0) {
		fprintf(stderr, "bench_decoder: cannot write %s\n", code_path);
		return 1;
	}
	printf("workload %s: ptsynth seed %" PRIu64 "%s, %" PRIu64 " instructions traced, "
	       "%.1f MB of PT, %" PRIu64 " calls, %" PRIu64 " conditional branches, %" PRIu64
	       " indirect, %" PRIu64 " system calls\n",
	       label, wc.seed, biased ? " biased" : "", w.truth.insns, (double)w.pt_len / 1e6,
	       w.truth.calls, w.truth.cond, w.truth.indirect, w.truth.syscalls);
	for (int k = 0; k < 5; k++) {
		wall[k] = cpu[k] = 1e30;
		got[k] = w.truth.insns;
	}
	/* Round robin, so every decoder sees the same machine load. */
	for (int r = 0; r < runs; r++) {
		for (int k = 0; k < 5; k++) {
			double t0, c0, t, c;

			/* HWT_BENCH_ONLY=k runs one decoder (for profiling). */
			if (only && atoi(only) != k)
				continue;
			t0 = now();
			c0 = cpu_now();
			switch (k) {
			case 0:
				got[k] = libipt_loop(&w, code_path);
				break;
			case 1:
				got[k] = hwtrace_run(&w, code_path, HWT_DEC_ENGINE_FAST, 1, &calls);
				break;
			case 2:
				got[k] =
				    hwtrace_run(&w, code_path, HWT_DEC_ENGINE_LIBIPT, 1, &calls);
				break;
			case 3:
				got[k] = hwtrace_run(&w, code_path, HWT_DEC_ENGINE_FAST, threads,
						     &calls);
				break;
			case 4:
				got[k] = hwtrace_run(&w, code_path, HWT_DEC_ENGINE_LIBIPT, threads,
						     &calls);
				break;
			}
			t = now() - t0;
			c = cpu_now() - c0;
			if (t < wall[k])
				wall[k] = t;
			if (c < cpu[k])
				cpu[k] = c;
		}
	}
	printf("%-34s %9s %9s %12s %9s %10s %s\n", "decoder", "wall s", "cpu s", "insns/s",
	       "PT MB/s", "vs libipt", "insns ok");
	for (int k = 0; k < 5; k++) {
		/* Single-threaded decoders are compared by CPU time, parallel
		 * ones by wall time. */
		double t = k == 3 || k == 4 ? wall[k] : cpu[k];
		double base = cpu[0];

		if (got[k] != w.truth.insns)
			ok = 0;
		if (only && atoi(only) != k)
			continue;
		printf("%-34s %9.3f %9.3f %12.3g %9.1f %9.2fx %s\n", names[k], wall[k],
		       k == 3 || k == 4 ? 0.0 : cpu[k], (double)got[k] / t,
		       (double)w.pt_len / 1e6 / t, base / t,
		       got[k] == w.truth.insns ? "yes" : "NO");
	}
	printf("(N = %u threads; hwtrace keeps call stacks and per-block counts and reports "
	       "every call: %" PRIu64 ")\n\n",
	       threads, calls);
	remove(code_path);
	ptsynth_free(&w);
	return ok ? 0 : 1;
}

/* One decode of a recording with engine; returns 0 and the instructions
 * and calls decoded, and the CPU time of the decoding. */
static int hwt_file_run(const char *path, uint32_t engine, double *cpu, uint64_t *insns,
			uint64_t *calls, uint64_t *segs, uint64_t *fallback)
{
	struct hwt_fmt_session *fs = NULL;
	struct hwt_pts *pts = NULL;
	struct hwt_pts_config cfg;
	struct hwt_pts_stats st;
	struct count_sink cs = {0};
	struct hwt_dec_sink sink;
	double c0;
	int err;

	err = hwt_fmt_session_open(&fs, path, NULL, NULL);
	if (err < 0)
		goto out;
	hwt_pts_config_init(&cfg);
	cfg.engine = engine;
	cfg.threads = 1;
	cfg.dec_flags = engine == HWT_DEC_ENGINE_PTXED ? 0 : HWT_DEC_F_PROFILE;
	err = hwt_pts_open(&pts, fs, &cfg, NULL);
	if (err < 0)
		goto out;
	memset(&sink, 0, sizeof(sink));
	sink.size = sizeof(sink);
	sink.want = HWT_DEC_WANT(HWT_DEC_REC_CALL);
	sink.rec = count_rec;
	sink.ctx = &cs;
	err = hwt_pts_add_sink(pts, &sink);
	if (err < 0)
		goto out;
	c0 = cpu_now();
	err = hwt_pts_run(pts);
	*cpu = cpu_now() - c0;
	hwt_pts_stats(pts, &st);
	*insns = st.dec.insns;
	*calls = cs.calls;
	*segs = st.dec.segments;
	*fallback = st.dec.segments_fallback;
out:
	hwt_pts_close(pts);
	hwt_fmt_session_close(fs);
	return err;
}

static int bench_hwt_file(const char *path, int runs)
{
	static const char *names[] = {"hwtrace libipt engine, 1 thread", "hwtrace fast, 1 thread",
				      "hwtrace ptxed engine (+ disasm)"};
	static const uint32_t engines[] = {HWT_DEC_ENGINE_LIBIPT, HWT_DEC_ENGINE_FAST,
					   HWT_DEC_ENGINE_PTXED};
	double cpu[3];
	uint64_t insns[3] = {0}, calls[3] = {0}, segs[3] = {0}, fallback[3] = {0};

	printf("command: bench_decoder --hwt %s %d   (best of %d runs, engines interleaved, "
	       "CPU time of the decoding)\n\n",
	       path, runs, runs);
	for (int k = 0; k < 3; k++)
		cpu[k] = 1e30;
	for (int r = 0; r < runs; r++) {
		for (int k = 0; k < 3; k++) {
			const char *only = getenv("HWT_BENCH_ONLY");
			double c;
			int err;

			/* HWT_BENCH_ONLY=k runs one engine (for profiling). */
			if (only && atoi(only) != k)
				continue;
			err = hwt_file_run(path, engines[k], &c, &insns[k], &calls[k], &segs[k],
					   &fallback[k]);

			if (err < 0) {
				fprintf(stderr, "bench_decoder: %s: %s\n", path, hwt_strerror(err));
				return 1;
			}
			if (c < cpu[k])
				cpu[k] = c;
		}
	}
	printf("%-34s %9s %12s %10s %s\n", "decoder", "cpu s", "insns/s", "vs libipt",
	       "insns (calls), segments (left to libipt)");
	for (int k = 0; k < 3; k++)
		printf("%-34s %9.3f %12.3g %9.2fx %" PRIu64 " (%" PRIu64 "), %" PRIu64 " (%" PRIu64
		       ")\n",
		       names[k], cpu[k], (double)insns[k] / cpu[k], cpu[0] / cpu[k], insns[k],
		       calls[k], segs[k], k == 1 ? fallback[k] : segs[k]);
	printf("(libipt and fast: call stacks, per-block counts, every call reported; ptxed: "
	       "libipt blocks, every instruction disassembled, no stacks)\n");
	/* The canonical engines decode the same instructions. */
	return insns[0] == insns[1] && calls[0] == calls[1] ? 0 : 1;
}

int main(int argc, char **argv)
{
	uint64_t ninsns = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000000ull;
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	unsigned int threads = argc > 3 ? (unsigned int)atoi(argv[3]) : 2;
	int err = 0;

	if (argc > 2 && !strcmp(argv[1], "--hwt"))
		return bench_hwt_file(argv[2], argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : 3);
	if (runs < 1)
		runs = 1;
	printf("command: bench_decoder %" PRIu64 " %d %u   (best of %d runs, decoders "
	       "interleaved)\n\n",
	       ninsns, runs, threads, runs);
	err |= bench_workload("typical", true, ninsns, runs, threads);
	err |= bench_workload("branchy", false, ninsns, runs, threads);
	return err;
}
