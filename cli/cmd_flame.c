/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/cmd_flame.c - `hwtrace flame`: flame graphs and exports of a
 * recording of samples (.hwt or perf.data, file or pipe) or of folded
 * stacks (--folded-in, which makes hwtrace a drop-in for FlameGraph's
 * flamegraph.pl and difffolded.pl): interactive SVG/HTML, differential
 * graphs of two recordings, folded stacks, pprof, or, for a recording,
 * a Chrome trace of the sampled stacks over time per thread; the output
 * file's extension picks the format. An Intel PT recording gives the exact
 * graph instead: every instruction attributed to its call stack (ptflow/),
 * and its .json is every call on its thread's timeline.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "ptflow/ptflow.h"
#include "report/report.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: hwtrace flame [-i FILE | --folded-in FILE] -o OUT [options]\n"
		     "\n"
		     "Renders a flame graph; the format follows OUT's extension:\n"
		     "  .svg .html   interactive flame graph (hover, click to zoom, search)\n"
		     "  .folded      folded stacks (FlameGraph, inferno, speedscope)\n"
		     "  .pb.gz       pprof profile (go tool pprof, Pyroscope, Parca)\n"
		     "  .json        Chrome trace (Perfetto): each thread's sampled stacks over\n"
		     "               time (recordings only); for Intel PT, every call\n"
		     "\n"
		     "options:\n"
		     "  -i, --input FILE   a recording: .hwt or perf.data (file or pipe mode,\n"
		     "                     compressed or not; - is standard input). Default:\n"
		     "                     hwtrace.hwt, else perf.data\n"
		     "  --folded-in FILE   read folded stacks (\"a;b;c COUNT\" lines; - is stdin)\n"
		     "  -o, --output OUT   output file (- writes to stdout; needs --format)\n"
		     "  --format FMT       svg, html, folded, pprof or chrome, overriding the\n"
		     "                     extension\n"
		     "  --diff BASE        differential graph against BASE (a recording, or\n"
		     "                     folded stacks with --folded-in): red frames grew,\n"
		     "                     blue frames shrank\n"
		     "  --no-normalize     with --diff, compare raw counts (default: scale BASE\n"
		     "                     to the same total)\n"
		     "  --title TEXT       title (default \"Flame Graph\")\n"
		     "  --icicle           root at the top (an icicle graph)\n"
		     "  --width PX         image width (default 1200)\n"
		     "  --min-width PX     do not draw frames narrower than this (default 0.1);\n"
		     "                     search and zoom still see every frame\n"
		     "  --count WHAT       samples or events: what widths and folded counts\n"
		     "                     measure (default: samples for .folded, events, the\n"
		     "                     sum of the samples' periods, for graphs)\n"
		     "  --event NAME       (folded stacks) the event the counts stand for\n"
		     "  --comm, --pid, --tid, --dso, --time, --inline, --max-stack, --kallsyms,\n"
		     "  --debug-dir        as for 'hwtrace report'\n"
		     "  -q, --quiet        no summary line on standard error\n"
		     "\n"
		     "Intel PT recordings (record --pt, --pt=emulate, perf's intel_pt//) are\n"
		     "decoded: the graph is exact, not sampled; widths are instructions.\n"
		     "  --weight WHAT      insns (default) or time: perf-clock time between\n"
		     "                     records (coarse without CYC packets)\n"
		     "  --min-call NS      (.json) calls shorter than NS merge into one span\n"
		     "                     per run of calls to the same function\n"
		     "  --max-spans N      (.json) at most N spans (default 1000000)\n");
	hwt_cli_help_end(out);
}

/* The exact profile (or call timeline) of a PT recording (session taken
 * over). */
static int load_pt(const char *path, struct hwt_fmt_session *session,
		   const struct hwt_cli_samples_opts *so, enum hwt_ptf_weight weight,
		   const struct hwt_ptf_config *tlopts, struct hwt_rep_profile **profile,
		   struct hwt_rep_timeline *tl, bool quiet)
{
	struct hwt_rep_profile_config pc;
	struct hwt_ptf_config cfg;
	struct hwt_cli_ptrun run;
	int rc;

	hwt_rep_profile_config_init(&pc);
	pc.filter = so->filter;
	pc.log = *hwt_cli_logger();
	if (hwt_rep_profile_alloc(profile, &pc) < 0) {
		hwt_fmt_session_close(session);
		hwt_cli_error("out of memory");
		return HWT_EXIT_ERROR;
	}
	hwt_ptf_config_init(&cfg);
	cfg.views = tl ? HWT_PTF_TIMELINE : HWT_PTF_PROFILE;
	cfg.profile = *profile;
	cfg.weight = weight;
	cfg.timeline = tl;
	cfg.timeline_min = tlopts->timeline_min;
	cfg.timeline_max = tlopts->timeline_max;
	rc = hwt_cli_ptrun(&run, path, session, &cfg, so);
	if (rc == HWT_EXIT_OK && !quiet)
		hwt_cli_ptrun_note(&run, path);
	if (rc == HWT_EXIT_OK && tl) {
		struct hwt_ptf_stats st;

		hwt_ptf_stats(run.ptf, &st);
		if (st.spans_dropped)
			hwt_cli_warn("%s: %" PRIu64 " calls beyond --max-spans %" PRIu64
				     " are not in the timeline: raise --max-spans, or merge short "
				     "calls with --min-call NS",
				     path, st.spans_dropped, tlopts->timeline_max);
		if (!st.timed)
			hwt_cli_warn("%s has no timing: the timeline counts instructions as "
				     "nanoseconds",
				     path);
	}
	hwt_cli_ptrun_fini(&run);
	return rc;
}

static char *read_input(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t got;

		if (cap - n < 65536) {
			char *nb;

			cap = cap ? cap * 2 : 1 << 20;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				buf = NULL;
				errno = ENOMEM;
				break;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f)) {
				free(buf);
				buf = NULL;
				errno = EIO;
			}
			break;
		}
	}
	if (f != stdin)
		fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

int hwt_cli_load_folded(const char *path, const char *event, struct hwt_rep_profile **out)
{
	struct hwt_rep_profile_config pc;
	struct hwt_rep_profile *p;
	size_t len, line;
	int64_t n;
	char *text = read_input(path, &len);

	if (!text) {
		hwt_cli_error("cannot read %s: %s", path, strerror(errno));
		return HWT_EXIT_ERROR;
	}
	hwt_rep_profile_config_init(&pc);
	pc.log = *hwt_cli_logger();
	if (hwt_rep_profile_alloc(&p, &pc) < 0) {
		free(text);
		hwt_cli_error("out of memory");
		return HWT_EXIT_ERROR;
	}
	n = hwt_rep_profile_add_folded(p, text, len, event, &line);
	free(text);
	if (n == -HWT_EFORMAT) {
		hwt_cli_error("%s:%zu: not a folded stack line (expected \"frame;frame;... COUNT\" "
			      "with a positive integer COUNT): fix or remove that line",
			      path, line);
		hwt_rep_profile_free(p);
		return HWT_EXIT_ERROR;
	}
	if (n < 0) {
		hwt_cli_error("%s: %s", path, hwt_strerror((int)n));
		hwt_rep_profile_free(p);
		return HWT_EXIT_ERROR;
	}
	if (n == 0)
		hwt_cli_warn("%s holds no stacks: the graph is empty", path);
	*out = p;
	return HWT_EXIT_OK;
}

static int parse_format(const char *s, enum hwt_rep_format *f)
{
	static const struct {
		const char *name;
		enum hwt_rep_format f;
	} names[] = {{"svg", HWT_REP_FMT_SVG},
		     {"html", HWT_REP_FMT_HTML},
		     {"folded", HWT_REP_FMT_FOLDED},
		     {"pprof", HWT_REP_FMT_PPROF},
		     {"chrome", HWT_REP_FMT_CHROME}};

	for (size_t i = 0; i < HWT_ARRAY_SIZE(names); i++) {
		if (!strcmp(s, names[i].name)) {
			*f = names[i].f;
			return 0;
		}
	}
	return -HWT_EINVAL;
}

/* Writes buf to path ("-": standard output). */
static int write_buf(const char *path, const struct hwt_buf *buf)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "wb") : stdout;
	int err = 0;

	if (!f)
		return -errno;
	if (fwrite(buf->data, 1, buf->len, f) != buf->len || fflush(f) != 0)
		err = -errno ? -errno : -EIO;
	if (f != stdout && fclose(f) != 0 && !err)
		err = -errno;
	return err;
}

int hwt_cmd_flame(int argc, char **argv)
{
	enum {
		OPT_FOLDED = 256,
		OPT_DIFF,
		OPT_TITLE,
		OPT_ICICLE,
		OPT_WIDTH,
		OPT_MINW,
		OPT_EVENT,
		OPT_FORMAT,
		OPT_NONORM,
		OPT_COUNT,
		OPT_WEIGHT,
		OPT_MINCALL,
		OPT_MAXSPANS
	};
	static const struct option opts[] = {
	    {"input", required_argument, NULL, 'i'},
	    {"folded-in", required_argument, NULL, OPT_FOLDED},
	    {"output", required_argument, NULL, 'o'},
	    {"diff", required_argument, NULL, OPT_DIFF},
	    {"title", required_argument, NULL, OPT_TITLE},
	    {"icicle", no_argument, NULL, OPT_ICICLE},
	    {"width", required_argument, NULL, OPT_WIDTH},
	    {"min-width", required_argument, NULL, OPT_MINW},
	    {"event", required_argument, NULL, OPT_EVENT},
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"no-normalize", no_argument, NULL, OPT_NONORM},
	    {"count", required_argument, NULL, OPT_COUNT},
	    {"weight", required_argument, NULL, OPT_WEIGHT},
	    {"min-call", required_argument, NULL, OPT_MINCALL},
	    {"max-spans", required_argument, NULL, OPT_MAXSPANS},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    HWT_CLI_SAMPLES_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	const char *folded = NULL, *input = NULL, *out = NULL, *diff = NULL, *event = NULL,
		   *format = NULL;
	struct hwt_cli_samples_opts so;
	struct hwt_rep_render_config cfg;
	struct hwt_rep_profile *p = NULL, *base = NULL;
	struct hwt_rep_timeline *tl = NULL;
	const struct hwt_rep_stats *st;
	struct hwt_fmt_session *ptsess = NULL, *samples = NULL;
	enum hwt_ptf_weight weight = HWT_PTF_WEIGHT_INSNS;
	struct hwt_ptf_config tlopts;
	bool quiet = false, pt = false;
	unsigned long long v;
	int count = -1; /* 1: samples, 0: events, -1: the format's default */
	int c, err, rc = HWT_EXIT_ERROR;

	hwt_rep_render_config_init(&cfg);
	cfg.log = *hwt_cli_logger();
	hwt_cli_samples_opts_init(&so);
	hwt_ptf_config_init(&tlopts);
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case OPT_FOLDED:
			folded = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case OPT_DIFF:
			diff = optarg;
			break;
		case OPT_TITLE:
			cfg.title = optarg;
			break;
		case OPT_ICICLE:
			cfg.icicle = true;
			break;
		case OPT_WIDTH: {
			unsigned long long w;

			if (hwt_cli_parse_u64(optarg, false, &w) < 0 || w < 100 || w > 100000) {
				rc = hwt_cli_usage_error("flame",
							 "--width takes pixels from 100 to "
							 "100000, not '%s'",
							 optarg);
				goto out;
			}
			cfg.width = (unsigned int)w;
			break;
		}
		case OPT_MINW: {
			char *end;

			cfg.min_width = strtod(optarg, &end);
			if (*end || end == optarg || cfg.min_width < 0 || cfg.min_width > 1000) {
				rc = hwt_cli_usage_error("flame",
							 "--min-width takes pixels (0 to "
							 "1000), not '%s'",
							 optarg);
				goto out;
			}
			break;
		}
		case OPT_EVENT:
			event = optarg;
			break;
		case OPT_FORMAT:
			format = optarg;
			break;
		case OPT_NONORM:
			cfg.diff_normalize = false;
			break;
		case OPT_COUNT:
			if (!strcmp(optarg, "samples"))
				count = 1;
			else if (!strcmp(optarg, "events"))
				count = 0;
			else {
				rc = hwt_cli_usage_error("flame",
							 "--count takes samples or events, "
							 "not '%s'",
							 optarg);
				goto out;
			}
			break;
		case OPT_WEIGHT:
			if (!strcmp(optarg, "insns") || !strcmp(optarg, "instructions"))
				weight = HWT_PTF_WEIGHT_INSNS;
			else if (!strcmp(optarg, "time"))
				weight = HWT_PTF_WEIGHT_TIME;
			else {
				rc = hwt_cli_usage_error("flame",
							 "--weight takes insns or time, not "
							 "'%s'",
							 optarg);
				goto out;
			}
			break;
		case OPT_MINCALL:
		case OPT_MAXSPANS:
			if (hwt_cli_parse_u64(optarg, false, &v) < 0 || (c == OPT_MAXSPANS && !v)) {
				rc = hwt_cli_usage_error(
				    "flame", "%s takes a positive count, not '%s'",
				    c == OPT_MINCALL ? "--min-call" : "--max-spans", optarg);
				goto out;
			}
			if (c == OPT_MINCALL)
				tlopts.timeline_min = v;
			else
				tlopts.timeline_max = v;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			rc = HWT_EXIT_OK;
			goto out;
		case '?':
			rc = hwt_cli_usage_error("flame", "unknown option");
			goto out;
		default:
			if ((rc = hwt_cli_samples_option(&so, c, optarg, "flame")) != 0)
				goto out;
			rc = HWT_EXIT_ERROR;
			break;
		}
	}
	if (optind < argc) {
		rc = hwt_cli_usage_error("flame",
					 "unexpected argument '%s' (the recording is given "
					 "with -i)",
					 argv[optind]);
		goto out;
	}
	if (folded && input) {
		rc = hwt_cli_usage_error("flame",
					 "give either -i FILE or --folded-in FILE, not both");
		goto out;
	}
	if (!out) {
		rc = hwt_cli_usage_error("flame", "no output: give -o FILE.svg, .html, .folded, "
						  ".pb.gz or .json");
		goto out;
	}
	if (format) {
		if (parse_format(format, &cfg.format) < 0) {
			rc = hwt_cli_usage_error("flame",
						 "unknown --format '%s' (svg, html, folded, "
						 "pprof, chrome)",
						 format);
			goto out;
		}
	} else if (!strcmp(out, "-")) {
		rc = hwt_cli_usage_error("flame", "-o - needs --format (svg, html, folded, pprof, "
						  "chrome)");
		goto out;
	} else if (hwt_rep_format_from_path(out, &cfg.format) < 0 ||
		   cfg.format == HWT_REP_FMT_TEXT) {
		rc = hwt_cli_usage_error("flame",
					 "cannot tell the format of '%s': name it .svg, "
					 ".html, .folded, .pb.gz or .json, or give "
					 "--format",
					 out);
		goto out;
	}
	if (cfg.format == HWT_REP_FMT_CHROME && folded) {
		hwt_cli_error("%s: a Chrome trace (.json) needs samples in time order, and folded "
			      "stacks have no time: write .svg, .html, .folded or .pb.gz, or read "
			      "a recording with -i",
			      out);
		goto out;
	}
	if (diff && cfg.format != HWT_REP_FMT_SVG && cfg.format != HWT_REP_FMT_HTML) {
		rc = hwt_cli_usage_error("flame", "--diff draws a differential flame graph: write "
						  ".svg or .html");
		goto out;
	}
	if (folded) {
		if (hwt_cli_load_folded(folded, event, &p) != HWT_EXIT_OK)
			goto out;
		if (diff && hwt_cli_load_folded(diff, event, &base) != HWT_EXIT_OK)
			goto out;
	} else {
		if (!input)
			input = hwt_cli_default_input();
		if (cfg.format == HWT_REP_FMT_CHROME && hwt_rep_timeline_alloc(&tl) < 0) {
			hwt_cli_error("out of memory");
			goto out;
		}
		pt = hwt_cli_is_pt(input, &ptsess, &samples);
		so.quiet = quiet;
		if (pt) {
			if (load_pt(input, ptsess, &so, weight, &tlopts, &p, tl, quiet) !=
			    HWT_EXIT_OK)
				goto out;
		} else if (hwt_cli_load_samples(&so, input, samples, &p, tl) != HWT_EXIT_OK) {
			goto out;
		}
		so.quiet = true; /* the base's notes would only repeat */
		if (diff && hwt_cli_is_pt(diff, &ptsess, &samples)) {
			if (load_pt(diff, ptsess, &so, weight, &tlopts, &base, NULL, true) !=
			    HWT_EXIT_OK)
				goto out;
		} else if (diff &&
			   hwt_cli_load_samples(&so, diff, samples, &base, NULL) != HWT_EXIT_OK) {
			goto out;
		}
	}
	cfg.base = base;
	/* Folded stacks count samples, as stackcollapse-perf's do (tools
	 * that read them say "samples"); graphs and pprof weigh samples by
	 * their period, as perf report's percentages do. */
	cfg.count_samples = count >= 0 ? count == 1 : cfg.format == HWT_REP_FMT_FOLDED;
	/* A PT profile's "samples" are distinct stacks: its counts are its
	 * instructions (or time). */
	if (pt)
		cfg.count_samples = false;
	if (tl) {
		struct hwt_buf buf;

		hwt_buf_init(&buf);
		err = hwt_rep_timeline_render(tl, &buf);
		if (err >= 0)
			err = write_buf(out, &buf);
		hwt_buf_fini(&buf);
	} else if (!strcmp(out, "-")) {
		struct hwt_buf buf;

		hwt_buf_init(&buf);
		err = hwt_rep_render(p, &cfg, &buf);
		if (err >= 0)
			err = write_buf(out, &buf);
		hwt_buf_fini(&buf);
	} else {
		err = hwt_rep_render_file(p, &cfg, out);
	}
	if (err < 0) {
		hwt_cli_error("cannot write %s: %s", out, hwt_strerror(err));
		goto out;
	}
	st = hwt_rep_profile_stats(p);
	if (strcmp(out, "-") && !quiet && !pt)
		hwt_cli_note("%s: %" PRIu64 " samples (%" PRIu64 " filtered out, %" PRIu64
			     " lost), %" PRIu64 " frames (%" PRIu64 " unsymbolized)",
			     out, st->samples, st->filtered, st->lost, st->frames,
			     st->unsymbolized);
	rc = HWT_EXIT_OK;
out:
	hwt_rep_profile_free(p);
	hwt_rep_profile_free(base);
	hwt_rep_timeline_free(tl);
	hwt_cli_samples_opts_fini(&so);
	return rc;
}
