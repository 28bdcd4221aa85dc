/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench/bench_flame.c - flame graph and folded-stack speed and size.
 *
 * 1. A profile of 50,000 distinct stacks (generated deterministically:
 *    seeded xorshift, depths 4..40, 2,000 function names, kernel frames
 *    near the leaves) rendered to SVG and HTML: time and output size, and
 *    end to end through `hwtrace flame --folded-in` as a user runs it.
 *    Against FlameGraph's flamegraph.pl when it is installed (Debian 12 has
 *    no package for it, so usually absolute figures only).
 *    The perf-style text and JSON reports of the same profile.
 * 2. Folded generation for 1,000,000 samples: adding the samples (interning,
 *    merging) and writing the folded text.
 *
 * usage: bench_flame [WORKDIR]   (default /tmp); prints a table.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "report/report.h"

#define NSTACKS	 50000
#define NNAMES	 2000
#define NSAMPLES 1000000
#define MAXD	 40

struct stack {
	uint16_t depth;
	uint16_t names[MAXD]; /* leaf first */
	uint8_t kinds[MAXD];
	uint32_t weight;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	uint64_t x = rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* CPU seconds of this process: steadier than wall time on a shared
 * machine. */
static double cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double children_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_CHILDREN, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static char names[NNAMES][32];

/* Stack i is distinct from every other: frame 3 from the root and the leaf
 * together encode i; the frames between are random. */
static void make_stacks(struct stack *st)
{
	for (int i = 0; i < NNAMES; i++)
		snprintf(names[i], sizeof(names[i]), "%s_%d",
			 (const char *[]){"parse", "eval", "hash", "alloc", "sort", "io", "lex",
					  "emit"}[i % 8],
			 i);
	for (int i = 0; i < NSTACKS; i++) {
		struct stack *s = &st[i];
		int d = 4 + (int)(next() % (MAXD - 4));

		s->depth = (uint16_t)d;
		s->weight = 1 + (uint32_t)(next() % 1000);
		for (int k = 0; k < d; k++) {
			/* Shallow frames come from few names so stacks share
			 * prefixes, as real programs do. */
			int spread = k > d - 4 ? 4 : 60 + (d - k) * 40;

			s->names[k] =
			    (uint16_t)(next() % (uint64_t)(spread < NNAMES ? spread : NNAMES));
			s->kinds[k] =
			    k < 2 && next() % 4 == 0 ? HWT_REP_KIND_KERNEL : HWT_REP_KIND_USER;
		}
		s->names[d - 1] = 0; /* main */
		s->names[d - 4] = (uint16_t)(100 + i / NNAMES);
		s->names[0] = (uint16_t)(i % NNAMES);
		s->kinds[0] = HWT_REP_KIND_USER;
	}
}

static void to_sample(const struct stack *s, struct hwt_rep_frame *fr, struct hwt_rep_sample *smp)
{
	memset(smp, 0, sizeof(*smp));
	for (int k = 0; k < s->depth; k++) {
		memset(&fr[k], 0, sizeof(fr[k]));
		fr[k].function = names[s->names[k]];
		fr[k].object =
		    s->kinds[k] == HWT_REP_KIND_KERNEL ? "[kernel.kallsyms]" : "/usr/bin/bench";
		fr[k].kind = s->kinds[k];
	}
	smp->event = "cycles";
	smp->comm = "bench";
	smp->pid = smp->tid = 1;
	smp->cpu = -1;
	smp->frames = fr;
	smp->nframes = s->depth;
}

static double render_ms(const struct hwt_rep_profile *p, enum hwt_rep_format f, size_t *bytes,
			const char *path)
{
	struct hwt_rep_render_config cfg;
	double best = 1e9;

	hwt_rep_render_config_init(&cfg);
	cfg.format = f;
	for (int r = 0; r < 3; r++) {
		struct hwt_buf b;
		double t0;

		hwt_buf_init(&b);
		t0 = cpu();
		if (hwt_rep_render(p, &cfg, &b) < 0) {
			fprintf(stderr, "render failed\n");
			exit(1);
		}
		if (cpu() - t0 < best)
			best = cpu() - t0;
		*bytes = b.len;
		if (path && r == 0) {
			FILE *out = fopen(path, "wb");

			if (!out || fwrite(b.data, 1, b.len, out) != b.len || fclose(out)) {
				fprintf(stderr, "cannot write %s\n", path);
				exit(1);
			}
		}
		hwt_buf_fini(&b);
	}
	return best * 1e3;
}

static double run_ms(const char *cmd)
{
	double best = 1e9;

	for (int r = 0; r < 3; r++) {
		double t0 = children_cpu();

		if (system(cmd) != 0)
			return -1;
		if (children_cpu() - t0 < best)
			best = children_cpu() - t0;
	}
	return best * 1e3;
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	struct stack *st = calloc(NSTACKS, sizeof(*st));
	struct hwt_rep_frame fr[MAXD];
	struct hwt_rep_profile *p, *big;
	struct hwt_rep_sample smp;
	char self[PATH_MAX], hwtrace[PATH_MAX + 32], folded[PATH_MAX], cmd[3 * PATH_MAX];
	size_t svg_bytes, html_bytes, folded_bytes, text_bytes, json_bytes;
	double text_ms, json_ms, svg_ms, html_ms, folded_ms, add_s, ids_s, cli_svg, cli_html,
	    fg_ms = -1;
	struct hwt_rep_profile *fast;
	uint32_t(*ids)[MAXD];
	ssize_t n;

	if (!st)
		return 1;
	make_stacks(st);
	if (hwt_rep_profile_alloc(&p, NULL) < 0)
		return 1;
	for (int i = 0; i < NSTACKS; i++) {
		to_sample(&st[i], fr, &smp);
		smp.weight = st[i].weight;
		if (hwt_rep_profile_add(p, &smp) != 1)
			return 1;
	}
	snprintf(folded, sizeof(folded), "%s/bench_flame.folded", dir);
	render_ms(p, HWT_REP_FMT_FOLDED, &folded_bytes, folded);
	svg_ms = render_ms(p, HWT_REP_FMT_SVG, &svg_bytes, NULL);
	text_ms = render_ms(p, HWT_REP_FMT_TEXT, &text_bytes, NULL);
	json_ms = render_ms(p, HWT_REP_FMT_JSON, &json_bytes, NULL);
	html_ms = render_ms(p, HWT_REP_FMT_HTML, &html_bytes, NULL);

	/* End to end as a user runs it: hwtrace next to this program. */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return 1;
	self[n] = '\0';
	*strrchr(self, '/') = '\0';
	snprintf(hwtrace, sizeof(hwtrace), "%s/../cli/hwtrace", self);
	snprintf(cmd, sizeof(cmd), "%s flame --folded-in %s -o %s/bench_flame.svg 2>/dev/null",
		 hwtrace, folded, dir);
	cli_svg = run_ms(cmd);
	snprintf(cmd, sizeof(cmd), "%s flame --folded-in %s -o %s/bench_flame.html 2>/dev/null",
		 hwtrace, folded, dir);
	cli_html = run_ms(cmd);
	if (system("command -v flamegraph.pl >/dev/null 2>&1") == 0) {
		snprintf(cmd, sizeof(cmd), "flamegraph.pl %s > %s/bench_fg.svg", folded, dir);
		fg_ms = run_ms(cmd);
	}

	/* 1M samples drawn from the 50k stacks, then folded. */
	if (hwt_rep_profile_alloc(&big, NULL) < 0)
		return 1;
	{
		double t0 = cpu();
		uint64_t save = rng;

		for (int i = 0; i < NSAMPLES; i++) {
			const struct stack *s = &st[next() % NSTACKS];

			to_sample(s, fr, &smp);
			smp.weight = 1;
			if (hwt_rep_profile_add(big, &smp) != 1)
				return 1;
		}
		add_s = cpu() - t0;

		/* The decoder's path: frames resolved and interned once,
		 * samples carry frame ids. */
		rng = save;
		if (hwt_rep_profile_alloc(&fast, NULL) < 0)
			return 1;
		ids = calloc(NSTACKS, sizeof(*ids));
		if (!ids)
			return 1;
		for (int i = 0; i < NSTACKS; i++) {
			to_sample(&st[i], fr, &smp);
			for (int k = 0; k < st[i].depth; k++) {
				if (hwt_rep_dict_frame(hwt_rep_profile_dict(fast), &fr[k],
						       &ids[i][k]) < 0)
					return 1;
			}
		}
		t0 = cpu();
		for (int i = 0; i < NSAMPLES; i++) {
			uint64_t k = next() % NSTACKS;

			to_sample(&st[k], fr, &smp);
			smp.frames = NULL;
			smp.frame_ids = ids[k];
			smp.weight = 1;
			if (hwt_rep_profile_add(fast, &smp) != 1)
				return 1;
		}
		ids_s = cpu() - t0;
		free(ids);
		hwt_rep_profile_free(fast);
	}
	folded_ms = render_ms(big, HWT_REP_FMT_FOLDED, &folded_bytes, NULL);

	printf("hwtrace flame graph benchmark (deterministic input; CPU time, best of 3)\n\n");
	printf("%-52s %12s %12s\n", "case", "CPU time", "output");
	printf("%-52s %9.1f ms %9.2f MB\n", "render SVG, 50,000 distinct stacks (library)", svg_ms,
	       (double)svg_bytes / 1e6);
	printf("%-52s %9.1f ms %9.2f MB\n", "render HTML, 50,000 distinct stacks (library)",
	       html_ms, (double)html_bytes / 1e6);
	printf("%-52s %9.1f ms %9.2f MB\n", "perf-style text report with call graphs (library)",
	       text_ms, (double)text_bytes / 1e6);
	printf("%-52s %9.1f ms %9.2f MB\n", "the same report as JSON (library)", json_ms,
	       (double)json_bytes / 1e6);
	printf("%-52s %9.1f ms %9.2f MB\n", "hwtrace flame --folded-in F -o x.svg (end to end)",
	       cli_svg, (double)svg_bytes / 1e6);
	printf("%-52s %9.1f ms %9.2f MB\n", "hwtrace flame --folded-in F -o x.html (end to end)",
	       cli_html, (double)html_bytes / 1e6);
	if (fg_ms >= 0) {
		char fg[PATH_MAX + 32];

		snprintf(fg, sizeof(fg), "%s/bench_fg.svg", dir);
		printf("%-52s %9.1f ms %9.2f MB\n", "flamegraph.pl F > x.svg", fg_ms,
		       (double)file_size(fg) / 1e6);
		printf("%-52s %9.2fx\n", "ratio flamegraph.pl / hwtrace (SVG, end to end)",
		       fg_ms / cli_svg);
	} else {
		printf("%-52s %12s\n", "flamegraph.pl",
		       "not installed (no Debian 12 package): absolute figures only");
	}
	printf("%-52s %9.1f ms %9.2f M samples/s\n", "add 1,000,000 samples, resolved frames",
	       add_s * 1e3, NSAMPLES / add_s / 1e6);
	printf("%-52s %9.1f ms %9.2f M samples/s\n",
	       "add 1,000,000 samples, frame ids (decoder path)", ids_s * 1e3,
	       NSAMPLES / ids_s / 1e6);
	printf("%-52s %9.1f ms %9.2f MB\n", "write folded stacks of those 1,000,000 samples",
	       folded_ms, (double)folded_bytes / 1e6);
	printf("\ncommands: %s flame --folded-in %s -o %s/bench_flame.{svg,html}\n", hwtrace,
	       folded, dir);
	printf("folded input: %lld bytes, 50,000 lines\n", (long long)file_size(folded));
	hwt_rep_profile_free(p);
	hwt_rep_profile_free(big);
	free(st);
	return 0;
}
