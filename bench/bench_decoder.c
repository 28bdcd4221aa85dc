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
 * --pt=emulate`) recording instead: the plain libipt loop over its first
 * PT stream with the code its MMAP2 records name (the ratios are to it),
 * and through ptsession (sideband, images over time), one thread, each
 * engine: FAST, LIBIPT (libipt's block decoder per segment, with the same
 * call stacks and profile) and PTXED (what `script --format=ptxed` costs:
 * libipt over the whole stream plus disassembly of every instruction),
 * every call a record to the sink; and FAST into ptflow's profile view as
 * `hwtrace flame` reads a recording (the decoder's call tree: no record
 * per call or return).
 * Counted: CPU time of the decoding (reading the recording is outside).
 * The number of segments the fast engine left to libipt is printed.
 *
 * With --raw DIR..., decodes real traces (tests/data/real-pt/NAME: trace.pt
 * and the code pages ptxed's --raw options name) with the plain libipt loop
 * and hwtrace's FAST and LIBIPT engines, and prints the instructions
 * ptxed's own output lists beside them.
 *
 * Every table ends with a "result" line (times, instructions, segments
 * left to libipt) that bench/bench_ptflame.sh gathers into one table; a
 * decoder HWT_BENCH_ONLY left out has "-" there.
 *
 * The record rows' sink wants calls only (a record per call; returns pop
 * the stacks); HWT_BENCH_RETURNS=1 adds a record per return.
 *
 * Environment: HWT_BENCH_SHAPE=real, HWT_BENCH_PSB=BYTES and
 * HWT_BENCH_PSB_OFF=N shape the synthetic trace; HWT_BENCH_SEGMENT=BYTES
 * sets the decoder's segment_bytes (synthetic and --raw). With --raw,
 * HWT_BENCH_CONCAT=N decodes the trace N times over as one stream (larger
 * real PT: 20 times avscript_32 is 2 MB), HWT_BENCH_REPS=N makes every
 * measurement N decodes without calibrating (N = 1 with one run and
 * HWT_BENCH_ONLY=k: a cold decode, the process's first), and a line gives
 * each decoder's minor page faults per decode.
 *
 * The process keeps its heap between decodes (mallopt: no trimming, no
 * mmap()ed chunks below 32 MiB), for every decoder alike. glibc gives the
 * top of the heap back when a free() leaves more than its trim threshold
 * there, and whether one does depended on where a decode's last
 * allocations landed: a change of allocation order elsewhere took dyn_test's
 * fast decode from 0 to 9-18 page faults and 2-3 times the time, by the
 * heap given back at each decode's end and taken again at the next's
 * (a single `hwtrace script` decodes once: it takes its pages once either
 * way). Setting the trim threshold turns off glibc's raising of the mmap
 * threshold too, hence both.
 *
 * Both sides are timed in the same state: each decode makes everything
 * afresh (libipt: section cache, image, decoder; hwtrace: icache, image,
 * decoder and its workers' scratch), opens and reads the code files
 * itself, and frees it all; what is warm for one is warm for the other
 * (the heap kept as above, CPU caches, the kernel's page and dentry
 * caches of the code files). Nothing of a decode is kept for the next:
 * the fast engine's pool of scratches kept across decoders in the process
 * (until 2026-11-28) made its repeated decodes cheaper than its first,
 * which the loop's are not; it is gone (decoder/eng_fast.c). The first
 * decode of a process (HWT_BENCH_REPS=1, HWT_BENCH_ONLY=k) is colder for
 * both (page faults of the heap and of their own code and tables).
 *
 *   usage: bench_decoder [INSNS [RUNS [THREADS]]]
 *          bench_decoder --hwt FILE [RUNS]
 *          bench_decoder --raw DIR... [RUNS]
 */
#include <errno.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "decoder/decoder.h"
#include "format/format.h"
#include "ptflow/ptflow.h"
#include "ptsession/ptsession.h"
#include "report/report.h"
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

/* Minor page faults of the process so far: a decode that touches fresh
 * memory (heap grown and given back, large blocks mapped and unmapped)
 * pays the kernel for every page, which instruction counts do not show. */
static uint64_t minor_faults(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (uint64_t)ru.ru_minflt;
}

/* Code files of a trace, for both decoders: what ptxed's --raw and
 * --pevent options load. */
struct section {
	char path[4096];
	uint64_t offset, size, vaddr;
};

struct sections {
	struct section *v;
	size_t n, cap;
};

static int sections_add(struct sections *s, const char *path, uint64_t offset, uint64_t size,
			uint64_t vaddr)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct section *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	snprintf(s->v[s->n].path, sizeof(s->v[s->n].path), "%s", path);
	s->v[s->n].offset = offset;
	s->v[s->n].size = size;
	s->v[s->n].vaddr = vaddr;
	s->n++;
	return 0;
}

/* The plain libipt loop, as ptxed runs it: sync, drain events, pt_blk_next
 * per block, nothing else; images as sections in a shared cache. cpu may
 * be NULL (no errata). Returns instructions decoded. */
static uint64_t libipt_loop(const uint8_t *pt, size_t len, const struct sections *secs,
			    const struct pt_config *base)
{
	struct pt_image_section_cache *isc = pt_iscache_alloc(NULL);
	struct pt_image *img = pt_image_alloc(NULL);
	struct pt_block_decoder *dec;
	struct pt_config cfg;
	uint64_t insns = 0;

	if (base)
		cfg = *base;
	else
		pt_config_init(&cfg);
	cfg.begin = (uint8_t *)(uintptr_t)pt;
	cfg.end = (uint8_t *)(uintptr_t)pt + len;
	for (size_t i = 0; i < secs->n; i++) {
		int isid = pt_iscache_add_file(isc, secs->v[i].path, secs->v[i].offset,
					       secs->v[i].size, secs->v[i].vaddr);

		if (isid >= 0)
			pt_image_add_cached(img, isc, isid, NULL);
	}
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

/* HWT_BENCH_SEGMENT and HWT_BENCH_NOSINK, read once (main()): a
 * getenv() per decode was most of a microsecond of hwtrace_run()'s time
 * on the smallest trace. */
static const char *env_segment, *env_nosink;

/* hwtrace's decoder with cfg (engine, threads, timing) over the code of
 * secs: call stacks and per-block counts, a sink that counts calls. Returns
 * instructions decoded (0 on error); calls, segments and those left to
 * libipt in the others. */
static uint64_t hwtrace_run(const uint8_t *pt, size_t len, const struct sections *secs,
			    const struct hwt_dec_config *cfg, uint64_t *calls, uint64_t *segs,
			    uint64_t *fallback)
{
	struct hwt_dec_icache *ic = NULL;
	struct hwt_dec_image *img = NULL;
	struct hwt_dec *dec = NULL;
	struct hwt_dec_stats st;
	struct count_sink cs = {0};
	struct hwt_dec_sink sink;
	uint64_t insns = 0;

	if (hwt_dec_icache_alloc(&ic, NULL) < 0 || hwt_dec_image_alloc(&img, ic, "bench") < 0)
		goto out;
	for (size_t i = 0; i < secs->n; i++) {
		if (hwt_dec_image_add_file(img, secs->v[i].path, secs->v[i].offset, secs->v[i].size,
					   secs->v[i].vaddr) < 0)
			goto out;
	}
	{
		/* HWT_BENCH_SEGMENT=BYTES: cfg.segment_bytes (PSBs inside a
		 * segment decoded on, not a segment each). */
		struct hwt_dec_config c = *cfg;

		if (env_segment)
			c.segment_bytes = (size_t)strtoul(env_segment, NULL, 0);
		if (hwt_dec_alloc(&dec, &c, ic) < 0 || hwt_dec_set_context(dec, 1, 1, img) < 0)
			goto out;
	}
	/* Stacks are kept for every call; a sink that counts calls shows
	 * they are reported, without a callback per block. */
	memset(&sink, 0, sizeof(sink));
	sink.size = sizeof(sink);
	sink.want = HWT_DEC_WANT(HWT_DEC_REC_CALL);
	sink.rec = count_rec;
	sink.ctx = &cs;
	if ((!env_nosink && hwt_dec_add_sink(dec, &sink) < 0) || hwt_dec_decode(dec, pt, len) < 0)
		goto out;
	hwt_dec_stats(dec, &st);
	insns = st.insns;
	*calls = cs.calls;
	*segs = st.segments;
	*fallback = st.segments_fallback;
out:
	hwt_dec_free(dec);
	hwt_dec_image_put(img);
	hwt_dec_icache_free(ic);
	return insns;
}

/* A time not measured: the decoder did not run (HWT_BENCH_ONLY). */
#define NOT_RUN 1e29

/* The "vs libipt" column: base / t, or "-" where either was not measured
 * (HWT_BENCH_ONLY=k with k != 0: no libipt loop). */
static void print_ratio(double base, double t)
{
	if (base >= NOT_RUN || t >= NOT_RUN)
		printf("%10s", "-");
	else
		printf("%9.2fx", base / t);
}

/* The decoder configuration of the synthetic workload. */
static void synth_config(struct hwt_dec_config *cfg, const struct ptsynth *w, uint32_t engine,
			 unsigned int threads)
{
	hwt_dec_config_init(cfg);
	cfg->engine = engine;
	cfg->threads = threads;
	cfg->flags = HWT_DEC_F_PROFILE;
	cfg->mtc_freq = 3;
	cfg->cpuid_0x15_eax = w->cpuid_0x15_eax;
	cfg->cpuid_0x15_ebx = w->cpuid_0x15_ebx;
}

static int bench_workload(const char *label, bool biased, uint64_t ninsns, int runs,
			  unsigned int threads)
{
	static const char *names[] = {"libipt pt_blk_next loop", "hwtrace fast, 1 thread",
				      "hwtrace libipt engine, 1 thread", "hwtrace fast, N threads",
				      "hwtrace libipt engine, N threads"};
	struct ptsynth_config wc;
	struct ptsynth w;
	struct sections secs = {0};
	char code_path[] = "/tmp/hwt-bench-code-XXXXXX";
	double wall[5], cpu[5];
	uint64_t got[5], calls = 0, nsegs[5] = {0}, nfallback[5] = {0};
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
	/* The trace's shape: HWT_BENCH_SHAPE=real (ptsynth_config_real: the
	 * packets of the real traces), HWT_BENCH_PSB=BYTES (PSB period),
	 * HWT_BENCH_PSB_OFF=N (PSB+ runs while tracing is off). */
	if (getenv("HWT_BENCH_SHAPE") && !strcmp(getenv("HWT_BENCH_SHAPE"), "real"))
		ptsynth_config_real(&wc);
	if (getenv("HWT_BENCH_PSB"))
		wc.psb_period = (size_t)strtoul(getenv("HWT_BENCH_PSB"), NULL, 0);
	if (getenv("HWT_BENCH_PSB_OFF"))
		wc.psb_off = (unsigned int)strtoul(getenv("HWT_BENCH_PSB_OFF"), NULL, 0);
	if (ptsynth_generate(&wc, &w) < 0) {
		fprintf(stderr, "bench_decoder: cannot generate the workload\n");
		return 1;
	}
	fd = mkstemp(code_path);
	f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (!f || fwrite(w.code, 1, w.code_size, f) != w.code_size || fclose(f) != 0 ||
	    sections_add(&secs, code_path, 0, w.code_size, w.base) < 0) {
		fprintf(stderr, "bench_decoder: cannot write %s\n", code_path);
		return 1;
	}
	printf("workload %s: ptsynth seed %" PRIu64 "%s, %" PRIu64 " instructions traced, "
	       "%.1f MB of PT (%zu bytes, %" PRIu64 " PSBs), %" PRIu64 " calls, %" PRIu64
	       " conditional branches, %" PRIu64 " indirect, %" PRIu64 " system calls\n",
	       label, wc.seed, biased ? " biased" : "", w.truth.insns, (double)w.pt_len / 1e6,
	       w.pt_len, w.truth.psbs, w.truth.calls, w.truth.cond, w.truth.indirect,
	       w.truth.syscalls);
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
			if (k == 0) {
				got[k] = libipt_loop(w.pt, w.pt_len, &secs, NULL);
			} else {
				struct hwt_dec_config dc;
				uint64_t segs, fallback;

				/* 1, 3: fast; 2, 4: libipt; 3, 4: N threads. */
				synth_config(&dc, &w,
					     k % 2 ? HWT_DEC_ENGINE_FAST : HWT_DEC_ENGINE_LIBIPT,
					     k >= 3 ? threads : 1);
				got[k] = hwtrace_run(w.pt, w.pt_len, &secs, &dc, &calls, &segs,
						     &fallback);
				nsegs[k] = segs;
				nfallback[k] = fallback;
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
	       "PT MB/s", "vs libipt", "insns ok, segments (left to libipt)");
	for (int k = 0; k < 5; k++) {
		/* Single-threaded decoders are compared by CPU time, parallel
		 * ones by wall time. */
		double t = k == 3 || k == 4 ? wall[k] : cpu[k];
		double base = cpu[0];

		if (got[k] != w.truth.insns)
			ok = 0;
		if (only && atoi(only) != k)
			continue;
		printf("%-34s %9.3f %9.3f %12.3g %9.1f ", names[k], wall[k],
		       k == 3 || k == 4 ? 0.0 : cpu[k], (double)got[k] / t,
		       (double)w.pt_len / 1e6 / t);
		print_ratio(base, t);
		printf(" %s", got[k] == w.truth.insns ? "yes" : "NO");
		if (k)
			printf(", %" PRIu64 " (%" PRIu64 ")", nsegs[k], nfallback[k]);
		printf("\n");
	}
	printf("(N = %u threads; hwtrace keeps call stacks and per-block counts and reports "
	       "every call: %" PRIu64 ")\n\n",
	       threads, calls);
	remove(code_path);
	free(secs.v);
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
	/* HWT_BENCH_RETURNS=1: a record per return too (script --flow's
	 * and pt: probes' cost). */
	sink.want = HWT_DEC_WANT(HWT_DEC_REC_CALL) |
		    (getenv("HWT_BENCH_RETURNS") && atoi(getenv("HWT_BENCH_RETURNS"))
			 ? HWT_DEC_WANT(HWT_DEC_REC_RETURN)
			 : 0);
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

/* One decode of a recording as `hwtrace flame` reads it: the fast engine
 * through ptsession into ptflow's profile view (the decoder's call tree,
 * no record per call or return) and the profile filled from it; returns
 * 0, the instructions decoded and the CPU time of the decoding and the
 * profile (symbolization included: flame pays it too). */
static int hwt_file_run_flame(const char *path, double *cpu, uint64_t *insns, uint64_t *segs,
			      uint64_t *fallback)
{
	struct hwt_fmt_session *fs = NULL;
	struct hwt_pts *pts = NULL;
	struct hwt_ptf *ptf = NULL;
	struct hwt_rep_profile *prof = NULL;
	struct hwt_rep_profile_config rc;
	struct hwt_ptf_config fc;
	struct hwt_pts_config cfg;
	struct hwt_pts_stats st;
	struct hwt_dec_sink sink;
	double c0;
	int err;

	hwt_rep_profile_config_init(&rc);
	err = hwt_rep_profile_alloc(&prof, &rc);
	if (err < 0)
		return err;
	err = hwt_fmt_session_open(&fs, path, NULL, NULL);
	if (err < 0)
		goto out;
	hwt_ptf_config_init(&fc);
	fc.views = HWT_PTF_PROFILE;
	fc.profile = prof;
	hwt_pts_config_init(&cfg);
	cfg.engine = HWT_DEC_ENGINE_FAST;
	cfg.threads = 1;
	cfg.dec_flags |= hwt_ptf_dec_flags(&fc);
	err = hwt_pts_open(&pts, fs, &cfg, NULL);
	if (err < 0)
		goto out;
	fc.aspace = hwt_pts_aspace(pts);
	err = hwt_ptf_alloc(&ptf, &fc);
	if (err < 0)
		goto out;
	hwt_ptf_sink(ptf, &sink);
	err = hwt_pts_add_sink(pts, &sink);
	if (err < 0)
		goto out;
	c0 = cpu_now();
	err = hwt_pts_run(pts);
	if (err >= 0)
		err = hwt_ptf_finish(ptf);
	*cpu = cpu_now() - c0;
	hwt_pts_stats(pts, &st);
	*insns = st.dec.insns;
	*segs = st.dec.segments;
	*fallback = st.dec.segments_fallback;
out:
	hwt_ptf_free(ptf);
	hwt_pts_close(pts);
	hwt_fmt_session_close(fs);
	hwt_rep_profile_free(prof);
	return err;
}

/* The recording's PT (its first AUX stream, segments concatenated), the
 * code its MMAP2 records name, and the libipt config of its CPU: what the
 * plain libipt loop decodes (ptxed with --pevent sideband does the same). */
struct hwt_trace {
	uint8_t *pt;
	size_t len;
	struct sections secs;
	struct pt_config cfg;
};

static uint64_t meta_u64(struct hwt_fmt_session *fs, const char *key)
{
	const struct hwt_fmt_meta *m = hwt_fmt_session_meta_find(fs, key);

	return m && m->type == HWT_FMT_META_U64 ? m->v.u64 : 0;
}

static int hwt_trace_load(const char *path, struct hwt_trace *t)
{
	struct hwt_fmt_session *fs = NULL;
	struct hwt_fmt_record rec;
	const struct hwt_fmt_aux_stream *as;
	int err;

	memset(t, 0, sizeof(*t));
	err = hwt_fmt_session_open(&fs, path, NULL, NULL);
	if (err < 0)
		return err;
	pt_config_init(&t->cfg);
	t->cfg.cpu.vendor = meta_u64(fs, "pt.config.cpu.family") ? pcv_intel : pcv_unknown;
	t->cfg.cpu.family = (uint16_t)meta_u64(fs, "pt.config.cpu.family");
	t->cfg.cpu.model = (uint8_t)meta_u64(fs, "pt.config.cpu.model");
	t->cfg.cpu.stepping = (uint8_t)meta_u64(fs, "pt.config.cpu.stepping");
	if (t->cfg.cpu.vendor == pcv_intel)
		pt_cpu_errata(&t->cfg.errata, &t->cfg.cpu);
	t->cfg.mtc_freq = (uint8_t)meta_u64(fs, "pt.config.mtc_freq");
	t->cfg.nom_freq = (uint8_t)meta_u64(fs, "pt.config.nom_freq");
	t->cfg.cpuid_0x15_eax = (uint32_t)meta_u64(fs, "pt.config.cpuid_0x15_eax");
	t->cfg.cpuid_0x15_ebx = (uint32_t)meta_u64(fs, "pt.config.cpuid_0x15_ebx");
	while ((err = hwt_fmt_session_next(fs, &rec, NULL)) == 0) {
		if (rec.type == PERF_RECORD_MMAP2 && rec.u.mmap.filename[0] == '/') {
			err = sections_add(&t->secs, rec.u.mmap.filename, rec.u.mmap.pgoff,
					   rec.u.mmap.len, rec.u.mmap.addr);
			if (err < 0)
				goto out;
		}
	}
	if (err != -HWT_EEOS)
		goto out;
	err = -HWT_EINVAL;
	if (hwt_fmt_session_naux(fs) < 1)
		goto out;
	as = hwt_fmt_session_aux(fs, 0);
	for (size_t i = 0; i < as->nsegments; i++) {
		const struct hwt_fmt_aux_segment *seg = hwt_fmt_session_aux_segment(fs, 0, i);
		uint8_t *p = realloc(t->pt, t->len + seg->size);
		int64_t n;

		err = -ENOMEM;
		if (!p)
			goto out;
		t->pt = p;
		n = hwt_fmt_session_aux_read(fs, 0, i, 0, t->pt + t->len, seg->size);
		err = n < 0 ? (int)n : 0;
		if (err < 0)
			goto out;
		t->len += (size_t)n;
	}
	err = 0;
out:
	hwt_fmt_session_close(fs);
	return err;
}

/* A NAME=VALUE field of the result line: the decoder's CPU time, or a
 * count it gave; "-" for a decoder that did not run (HWT_BENCH_ONLY: its
 * CPU time is NOT_RUN). */
static void result_secs(const char *name, double cpu)
{
	if (cpu >= NOT_RUN)
		printf(" %s=-", name);
	else
		printf(" %s=%.9f", name, cpu);
}

static void result_count(const char *name, double cpu, uint64_t v)
{
	if (cpu >= NOT_RUN)
		printf(" %s=-", name);
	else
		printf(" %s=%" PRIu64, name, v);
}

/* Prints the rows of a table of decoders against the libipt loop (row 0)
 * and the machine-readable line bench_ptflame.sh reads. */
static void print_rows(const char *label, const char *const *names, size_t n, const double *cpu,
		       const uint64_t *insns, const uint64_t *segs, const uint64_t *fallback,
		       double ptmb)
{
	printf("%-34s %9s %12s %9s %10s %s\n", "decoder", "cpu s", "insns/s", "PT MB/s",
	       "vs libipt", "insns, segments (left to libipt)");
	for (size_t k = 0; k < n; k++) {
		if (cpu[k] >= NOT_RUN)
			continue;
		printf("%-34s %9.3g %12.3g %9.1f ", names[k], cpu[k], (double)insns[k] / cpu[k],
		       ptmb / cpu[k]);
		print_ratio(cpu[0], cpu[k]);
		printf(" %" PRIu64, insns[k]);
		if (segs[k])
			printf(", %" PRIu64 " (%" PRIu64 ")", segs[k], fallback[k]);
		printf("\n");
	}
	/* Nanoseconds: a real trace's decode can take a few microseconds
	 * (the ratios bench_ptflame.sh takes from these were once of
	 * 0.000005 and 0.000007). */
	printf("result %s", label);
	result_secs("libipt_loop", cpu[0]);
	result_secs("fast", cpu[1]);
	result_secs("libipt_engine", cpu[2]);
	if (n > 3)
		result_secs("fast_tree", cpu[3]);
	result_count("insns", cpu[0], insns[0]);
	result_count("fast_insns", cpu[1], insns[1]);
	result_count("segments", cpu[1], segs[1]);
	result_count("fallback", cpu[1], fallback[1]);
	printf("\n");
}

static int bench_hwt_file(const char *path, int runs)
{
	static const char *names[] = {"libipt pt_blk_next loop", "hwtrace fast, record per call",
				      "hwtrace libipt, record per call",
				      "hwtrace fast, call tree (flame)",
				      "hwtrace ptxed engine (+ disasm)"};
	static const uint32_t engines[] = {0, HWT_DEC_ENGINE_FAST, HWT_DEC_ENGINE_LIBIPT, 0,
					   HWT_DEC_ENGINE_PTXED};
	struct hwt_trace t;
	/* The ptxed engine disassembles every instruction: 40 s for 10^8
	 * of them; only with HWT_BENCH_PTXED=1. */
	const char *with_ptxed = getenv("HWT_BENCH_PTXED");
	int nk = with_ptxed && atoi(with_ptxed) ? 5 : 4;
	double cpu[5];
	uint64_t insns[5] = {0}, calls[5] = {0}, segs[5] = {0}, fallback[5] = {0};
	const char *only = getenv("HWT_BENCH_ONLY");
	int err;

	err = hwt_trace_load(path, &t);
	if (err < 0) {
		fprintf(stderr, "bench_decoder: %s: %s\n", path, hwt_strerror(err));
		return 1;
	}
	printf("command: bench_decoder --hwt %s %d   (best of %d runs, decoders interleaved, "
	       "CPU time of the decoding; %.1f MB of PT, %zu code sections)\n\n",
	       path, runs, runs, (double)t.len / 1e6, t.secs.n);
	for (int k = 0; k < 5; k++)
		cpu[k] = 1e30;
	for (int r = 0; r < runs; r++) {
		for (int k = 0; k < nk; k++) {
			double c = cpu_now();

			/* HWT_BENCH_ONLY=k runs one decoder (for profiling). */
			if (only && atoi(only) != k)
				continue;
			if (k == 0) {
				insns[k] = libipt_loop(t.pt, t.len, &t.secs, &t.cfg);
				c = cpu_now() - c;
			} else if (k == 3) {
				err =
				    hwt_file_run_flame(path, &c, &insns[k], &segs[k], &fallback[k]);
				if (err < 0) {
					fprintf(stderr, "bench_decoder: %s: %s\n", path,
						hwt_strerror(err));
					return 1;
				}
			} else {
				err = hwt_file_run(path, engines[k], &c, &insns[k], &calls[k],
						   &segs[k], &fallback[k]);
				if (err < 0) {
					fprintf(stderr, "bench_decoder: %s: %s\n", path,
						hwt_strerror(err));
					return 1;
				}
			}
			if (c < cpu[k])
				cpu[k] = c;
		}
	}
	print_rows(path, names, (size_t)nk, cpu, insns, segs, fallback, (double)t.len / 1e6);
	printf("(libipt loop: ptxed's block loop over the recording's PT and MMAP2 code; "
	       "libipt and fast engines: sideband, call stacks, per-block counts, every call "
	       "reported (%" PRIu64
	       "); call tree: the fast engine into ptflow's profile as `hwtrace flame` reads "
	       "(no record per call or return; symbols included); ptxed: libipt blocks, every "
	       "instruction disassembled, with HWT_BENCH_PTXED=1)\n",
	       calls[1]);
	free(t.pt);
	free(t.secs.v);
	/* The canonical engines decode the same instructions and calls, and
	 * the call tree the same instructions. */
	return only || (insns[1] == insns[2] && calls[1] == calls[2] && insns[3] == insns[1]) ? 0
											      : 1;
}

/* A real-pt directory (tests/data/real-pt/NAME): trace.pt, raw.args
 * ("--raw FILE:ADDR ..." as given to ptxed) and ptxed-insn.txt.zst. The
 * traces are small: each measurement repeats the decode until the libipt
 * loop has run for about 0.2 s, and times are per decode. */
static int bench_raw(const char *dir, int runs)
{
	static const char *names[] = {"libipt pt_blk_next loop", "hwtrace fast, 1 thread",
				      "hwtrace libipt engine, 1 thread"};
	static const uint32_t engines[] = {0, HWT_DEC_ENGINE_FAST, HWT_DEC_ENGINE_LIBIPT};
	struct sections secs = {0};
	char path[4200], word[4200];
	uint8_t *pt = NULL;
	size_t len = 0;
	double cpu[3], faults[3];
	uint64_t insns[3] = {0}, segs[3] = {0}, fallback[3] = {0}, ptxed = 0, calls = 0;
	struct hwt_dec_config dc[3];
	int reps = 1;
	size_t concat = 1;
	const char *only = getenv("HWT_BENCH_ONLY");
	FILE *f;

	snprintf(path, sizeof(path), "%s/raw.args", dir);
	f = fopen(path, "r");
	while (f && fscanf(f, "%4199s", word) == 1) {
		char *colon = strrchr(word, ':');
		char file[4300];
		FILE *cf;
		long size;

		if (!strcmp(word, "--raw") || !colon)
			continue;
		*colon = '\0';
		snprintf(file, sizeof(file), "%s/%s", dir, word);
		cf = fopen(file, "rb");
		if (!cf || fseek(cf, 0, SEEK_END) != 0 || (size = ftell(cf)) < 0) {
			fprintf(stderr, "bench_decoder: cannot read %s\n", file);
			return 1;
		}
		fclose(cf);
		if (sections_add(&secs, file, 0, (uint64_t)size, strtoull(colon + 1, NULL, 0)) < 0)
			return 1;
	}
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "%s/trace.pt", dir);
	f = fopen(path, "rb");
	if (!f || !secs.n) {
		fprintf(stderr, "bench_decoder: %s has no trace.pt or raw.args\n", dir);
		return 1;
	}
	for (;;) {
		uint8_t *p = realloc(pt, len + 65536);
		size_t n;

		if (!p)
			return 1;
		pt = p;
		n = fread(pt + len, 1, 65536, f);
		len += n;
		if (n < 65536)
			break;
	}
	fclose(f);
	/* HWT_BENCH_CONCAT=N: the trace N times over, as one stream (a PSB
	 * at each join resynchronizes; each join is a discontinuity every
	 * decoder handles as libipt does, one more instruction each). */
	if (getenv("HWT_BENCH_CONCAT") && atoi(getenv("HWT_BENCH_CONCAT")) > 1) {
		size_t times = (size_t)atoi(getenv("HWT_BENCH_CONCAT"));
		uint8_t *p = len && times <= SIZE_MAX / len ? realloc(pt, len * times) : NULL;

		if (!p)
			return 1;
		pt = p;
		for (size_t i = 1; i < times; i++)
			memcpy(pt + i * len, pt, len);
		len *= times;
		concat = times;
	}
	snprintf(path, sizeof(path),
		 "zstdcat %s/ptxed-insn.txt.zst 2>/dev/null | grep -c '^[0-9a-f]\\{8,16\\}'", dir);
	f = popen(path, "r");
	if (f) {
		if (fscanf(f, "%" SCNu64, &ptxed) != 1)
			ptxed = 0;
		pclose(f);
	}
	/* Repetitions: enough for 0.2 s of the libipt loop. HWT_BENCH_REPS=N:
	 * that many, with no calibration (callgrind counts per decode then
	 * do not depend on the machine's speed; with N = 1, 1 run and
	 * HWT_BENCH_ONLY=k, the decode is the process's first: a cold
	 * decode, as `hwtrace script` runs one). */
	if (getenv("HWT_BENCH_REPS") && atoi(getenv("HWT_BENCH_REPS")) > 0) {
		reps = atoi(getenv("HWT_BENCH_REPS"));
	} else {
		/* Warm decodes for 20 ms (one cold decode took 20 times a
		 * warm one: small traces were timed for 10 ms, not 0.2 s). */
		double c0 = cpu_now(), c;
		int n = 0;

		do {
			libipt_loop(pt, len, &secs, NULL);
			n++;
		} while ((c = cpu_now() - c0) < 0.02);
		reps = (int)(0.2 / (c / n)) + 1;
	}
	for (int k = 0; k < 3; k++) {
		cpu[k] = 1e30;
		faults[k] = 0;
		hwt_dec_config_init(&dc[k]);
		dc[k].engine = engines[k];
		dc[k].flags = HWT_DEC_F_PROFILE;
	}
	for (int r = 0; r < runs; r++) {
		for (int k = 0; k < 3; k++) {
			double c = cpu_now();
			uint64_t pf = minor_faults();

			/* HWT_BENCH_ONLY=k runs one decoder (for profiling). */
			if (only && atoi(only) != k)
				continue;
			for (int i = 0; i < reps; i++) {
				if (k == 0)
					insns[k] = libipt_loop(pt, len, &secs, NULL);
				else
					insns[k] = hwtrace_run(pt, len, &secs, &dc[k], &calls,
							       &segs[k], &fallback[k]);
			}
			c = (cpu_now() - c) / reps;
			if (c < cpu[k])
				cpu[k] = c;
			/* The last round's: the first may still grow the
			 * process's heap for good. */
			faults[k] = (double)(minor_faults() - pf) / reps;
		}
	}
	printf("command: %sbench_decoder --raw %s %d   (best of %d runs of %d decodes each, "
	       "CPU time per decode; %zu bytes of PT; ptxed's own output lists %" PRIu64
	       " instructions%s)\n\n",
	       concat > 1 ? "HWT_BENCH_CONCAT=N " : "", dir, runs, runs, reps, len, ptxed,
	       concat > 1 ? ", once: the trace is N times over" : "");
	if (concat > 1)
		printf("N = %zu\n", concat);
	print_rows(dir, names, 3, cpu, insns, segs, fallback, (double)len / 1e6);
	printf("minor page faults per decode: libipt loop %.1f, fast %.1f, libipt engine %.1f\n\n",
	       faults[0], faults[1], faults[2]);
	free(pt);
	free(secs.v);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t ninsns = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000000ull;
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	unsigned int threads = argc > 3 ? (unsigned int)atoi(argv[3]) : 2;
	int err = 0;

	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	env_segment = getenv("HWT_BENCH_SEGMENT");
	env_nosink = getenv("HWT_BENCH_NOSINK");
	if (argc > 2 && !strcmp(argv[1], "--hwt"))
		return bench_hwt_file(argv[2], argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : 3);
	if (argc > 2 && !strcmp(argv[1], "--raw")) {
		/* bench_decoder --raw DIR... [RUNS]: real-pt directories. */
		int n = argc, r = 3;

		if (atoi(argv[argc - 1]) > 0) {
			r = atoi(argv[argc - 1]);
			n--;
		}
		for (int i = 2; i < n; i++)
			err |= bench_raw(argv[i], r);
		return err;
	}
	if (runs < 1)
		runs = 1;
	printf("command: bench_decoder %" PRIu64 " %d %u   (best of %d runs, decoders "
	       "interleaved)\n\n",
	       ninsns, runs, threads, runs);
	err |= bench_workload("typical", true, ninsns, runs, threads);
	err |= bench_workload("branchy", false, ninsns, runs, threads);
	return err;
}
