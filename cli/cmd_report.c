/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/cmd_report.c - `hwtrace report`: the perf-report-style view of a
 * recording of samples (.hwt or perf.data, file or pipe) or of folded
 * stacks: top entries with self and children shares, caller and callee
 * call graphs, one section per event, filters, text or JSON. The samples
 * are resolved by the report library (hwt_rep_samples); this file parses
 * options and prints.
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
	fprintf(out,
		"usage: hwtrace report [-i FILE | --folded-in FILE] [options]\n"
		"\n"
		"Top functions with self and children shares and call graphs, laid out\n"
		"as perf report --stdio does, one section per event; --json for scripts.\n"
		"\n"
		"input:\n"
		"  -i, --input FILE        a recording: hwtrace's .hwt or perf.data (file or\n"
		"                          pipe mode, compressed or not; - is standard input).\n"
		"                          Default: hwtrace.hwt, else perf.data\n"
		"  --folded-in FILE        folded stacks (\"a;b;c COUNT\" lines; - is stdin)\n"
		"\n"
		"output:\n"
		"  --stdio                 text (the default)\n"
		"  --json                  JSON instead of text\n"
		"  --children              children and self (default with call chains)\n"
		"  --no-children           self only: sort by self, graphs show callers\n"
		"  -g, --call-graph MODE   caller, callee or none (default: caller with\n"
		"                          children, callee without; none without call chains)\n"
		"  -s, --sort KEYS         entry key, comma-separated: function (sym), object\n"
		"                          (dso), comm, pid, tid, cpu, event, srcline\n"
		"                          (default: comm,object,function; function for\n"
		"                          folded stacks)\n"
		"  --percent-limit PCT     hide entries under PCT percent\n"
		"  --percentage MODE       absolute (default): shares of every sample in the\n"
		"                          --time range, also those --comm/--pid/--tid/--dso\n"
		"                          left out, as perf's; relative: of the kept ones\n"
		"  --graph-limit PCT       hide call-graph branches under PCT (default 0.5)\n"
		"  -n, --max-entries N     show at most N entries per event\n"
		"  -o, --output FILE       write there instead of standard output\n"
		"\n"
		"samples:\n"
		"  --comm NAMES            only these commands (comma-separated)\n"
		"  --pid PIDS, --tid TIDS  only these processes or threads\n"
		"  --dso OBJECTS           only samples that hit these objects (path or name)\n"
		"  --time START,END        only samples in [START, END), seconds as\n"
		"                          'hwtrace script' prints them; either may be empty\n"
		"  --inline                inlined functions as their own frames\n"
		"  --max-stack N           frames per call chain (default 127)\n"
		"  --kallsyms FILE         kernel symbols (default /proc/kallsyms when the\n"
		"                          recording is from the running kernel)\n"
		"  --debug-dir DIR         look for separate debug files in DIR first\n"
		"  --event NAME            (folded stacks) the event the counts stand for\n"
		"  -q, --quiet             no summary line on standard error\n"
		"\n"
		"Intel PT recordings (record --pt, --pt=emulate, perf's intel_pt//) are\n"
		"decoded: the report is exact, every instruction counted under its stack.\n"
		"  --calls                 per function: exact calls, self and inclusive\n"
		"                          instructions, times (with timing), sorted by self\n"
		"                          instructions; -n limits the rows, --json for scripts\n"
		"  --hist                  with --calls: each function's latency histogram\n"
		"                          (power-of-two buckets, DTrace's quantize)\n"
		"  --all                   with --calls: functions never called too (code\n"
		"                          the trace began in)\n");
	hwt_cli_help_end(out);
}

static int write_out(const char *out, const struct hwt_buf *text);

/* An Intel PT recording (session taken over): the exact profile through
 * the usual renderer, or the calls table. */
static int report_pt(const char *input, struct hwt_fmt_session *session,
		     struct hwt_cli_samples_opts *so, struct hwt_rep_render_config *cfg, bool calls,
		     unsigned int cflags, size_t max_rows, const char *out, bool quiet)
{
	struct hwt_rep_profile_config pc;
	struct hwt_rep_profile *p = NULL;
	struct hwt_ptf_config pcfg;
	struct hwt_cli_ptrun run;
	struct hwt_buf text;
	int err, rc;

	hwt_rep_profile_config_init(&pc);
	pc.filter = so->filter;
	pc.log = *hwt_cli_logger();
	if (!calls && hwt_rep_profile_alloc(&p, &pc) < 0) {
		hwt_fmt_session_close(session);
		hwt_cli_error("out of memory");
		return HWT_EXIT_ERROR;
	}
	hwt_ptf_config_init(&pcfg);
	pcfg.views = calls ? HWT_PTF_CALLS : HWT_PTF_PROFILE;
	pcfg.profile = p;
	rc = hwt_cli_ptrun(&run, input, session, &pcfg, so);
	if (rc != HWT_EXIT_OK)
		goto out;
	hwt_buf_init(&text);
	if (calls)
		err = hwt_ptf_calls_print(
		    run.ptf, cfg->format == HWT_REP_FMT_JSON ? HWT_REP_FMT_JSON : HWT_REP_FMT_TEXT,
		    cflags, max_rows, &text);
	else
		err = hwt_rep_render(p, cfg, &text);
	if (err >= 0)
		rc = write_out(out, &text);
	else
		rc = (hwt_cli_error("cannot render the report: %s", hwt_strerror(err)),
		      HWT_EXIT_ERROR);
	hwt_buf_fini(&text);
	if (rc == HWT_EXIT_OK && !quiet)
		hwt_cli_ptrun_note(&run, "report");
out:
	hwt_cli_ptrun_fini(&run);
	hwt_rep_profile_free(p);
	return rc;
}

static int parse_pct(const char *s, double *out)
{
	char *end;

	*out = strtod(s, &end);
	return *end || end == s || *out < 0 || *out > 100 ? -1 : 0;
}

static int parse_sort(const char *s, struct hwt_rep_render_config *cfg)
{
	char buf[256], *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	cfg->nsort = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		enum hwt_rep_field f;

		if (cfg->nsort == HWT_ARRAY_SIZE(cfg->sort) || hwt_rep_field_parse(tok, &f) < 0)
			return -1;
		/* Stacks, weights and times are aggregation keys, not entries. */
		if (hwt_rep_field_type(f) == HWT_REP_STACK || f == HWT_REP_F_WEIGHT ||
		    f == HWT_REP_F_TIME)
			return -1;
		cfg->sort[cfg->nsort++] = f;
	}
	return cfg->nsort ? 0 : -1;
}

static bool has_srcline(const struct hwt_rep_render_config *cfg)
{
	for (size_t i = 0; i < cfg->nsort; i++) {
		if (cfg->sort[i] == HWT_REP_F_SRCLINE)
			return true;
	}
	return false;
}

static int write_out(const char *out, const struct hwt_buf *text)
{
	FILE *o = out ? fopen(out, "w") : stdout;
	int rc = HWT_EXIT_ERROR;

	if (!o) {
		hwt_cli_error("cannot write %s: %s (choose a writable path with -o)", out,
			      strerror(errno));
		return rc;
	}
	if (fwrite(text->data, 1, text->len, o) != text->len || fflush(o) != 0 ||
	    (o != stdout && fclose(o) != 0))
		hwt_cli_error("cannot write %s: %s", out ? out : "standard output",
			      strerror(errno));
	else
		rc = HWT_EXIT_OK;
	return rc;
}

int hwt_cmd_report(int argc, char **argv)
{
	enum {
		OPT_FOLDED = 256,
		OPT_JSON,
		OPT_NOCHILD,
		OPT_CHILD,
		OPT_PCT,
		OPT_GPCT,
		OPT_EVENT,
		OPT_STDIO,
		OPT_CALLS,
		OPT_HIST,
		OPT_ALL,
		OPT_PERCENTAGE
	};
	static const struct option opts[] = {
	    {"input", required_argument, NULL, 'i'},
	    {"folded-in", required_argument, NULL, OPT_FOLDED},
	    {"stdio", no_argument, NULL, OPT_STDIO},
	    {"json", no_argument, NULL, OPT_JSON},
	    {"calls", no_argument, NULL, OPT_CALLS},
	    {"hist", no_argument, NULL, OPT_HIST},
	    {"all", no_argument, NULL, OPT_ALL},
	    {"no-children", no_argument, NULL, OPT_NOCHILD},
	    {"children", no_argument, NULL, OPT_CHILD},
	    {"call-graph", required_argument, NULL, 'g'},
	    {"sort", required_argument, NULL, 's'},
	    {"percent-limit", required_argument, NULL, OPT_PCT},
	    {"percentage", required_argument, NULL, OPT_PERCENTAGE},
	    {"graph-limit", required_argument, NULL, OPT_GPCT},
	    {"max-entries", required_argument, NULL, 'n'},
	    {"event", required_argument, NULL, OPT_EVENT},
	    {"output", required_argument, NULL, 'o'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    HWT_CLI_SAMPLES_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	const char *folded = NULL, *input = NULL, *out = NULL, *event = NULL;
	struct hwt_cli_samples_opts so;
	struct hwt_rep_render_config cfg;
	struct hwt_rep_profile *p = NULL;
	struct hwt_buf text;
	int children = -1, graph = -1; /* -1: not given */
	bool quiet = false, sort_given = false, calls = false;
	struct hwt_fmt_session *ptsess = NULL, *samples = NULL;
	unsigned int cflags = 0;
	int c, err, rc = HWT_EXIT_ERROR;

	hwt_rep_render_config_init(&cfg);
	cfg.log = *hwt_cli_logger();
	hwt_cli_samples_opts_init(&so);
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:g:s:n:o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case OPT_FOLDED:
			folded = optarg;
			break;
		case OPT_CALLS:
			calls = true;
			break;
		case OPT_HIST:
			cflags |= HWT_PTF_PRINT_HIST;
			break;
		case OPT_ALL:
			cflags |= HWT_PTF_PRINT_ALL;
			break;
		case OPT_STDIO:
			break;
		case OPT_JSON:
			cfg.format = HWT_REP_FMT_JSON;
			break;
		case OPT_NOCHILD:
			children = 0;
			break;
		case OPT_CHILD:
			children = 1;
			break;
		case 'g':
			if (!strcmp(optarg, "caller"))
				graph = HWT_REP_GRAPH_CALLER;
			else if (!strcmp(optarg, "callee"))
				graph = HWT_REP_GRAPH_CALLEE;
			else if (!strcmp(optarg, "none"))
				graph = HWT_REP_GRAPH_NONE;
			else {
				rc = hwt_cli_usage_error("report",
							 "-g takes caller, callee or none, "
							 "not '%s'",
							 optarg);
				goto out;
			}
			break;
		case 's':
			if (parse_sort(optarg, &cfg) < 0) {
				rc = hwt_cli_usage_error("report",
							 "bad --sort '%s': use keys from "
							 "function, object, comm, pid, tid, "
							 "cpu, event, srcline",
							 optarg);
				goto out;
			}
			sort_given = true;
			break;
		case OPT_PCT:
			if (parse_pct(optarg, &cfg.percent_limit) < 0) {
				rc = hwt_cli_usage_error("report",
							 "--percent-limit takes 0 to 100, "
							 "not '%s'",
							 optarg);
				goto out;
			}
			break;
		case OPT_PERCENTAGE:
			if (!strcmp(optarg, "absolute") || !strcmp(optarg, "relative")) {
				cfg.relative = optarg[0] == 'r';
				break;
			}
			rc = hwt_cli_usage_error("report",
						 "--percentage takes absolute or relative, "
						 "not '%s'",
						 optarg);
			goto out;
		case OPT_GPCT:
			if (parse_pct(optarg, &cfg.graph_limit) < 0) {
				rc = hwt_cli_usage_error("report",
							 "--graph-limit takes 0 to 100, not "
							 "'%s'",
							 optarg);
				goto out;
			}
			break;
		case 'n': {
			unsigned long long v;

			if (hwt_cli_parse_u64(optarg, false, &v) < 0) {
				rc = hwt_cli_usage_error("report", "-n takes a count, not '%s'",
							 optarg);
				goto out;
			}
			cfg.max_entries = (size_t)v;
			break;
		}
		case OPT_EVENT:
			event = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			rc = HWT_EXIT_OK;
			goto out;
		case '?':
			rc = hwt_cli_usage_error("report", "unknown option");
			goto out;
		default:
			if ((rc = hwt_cli_samples_option(&so, c, optarg, "report")) != 0)
				goto out;
			rc = HWT_EXIT_ERROR;
			break;
		}
	}
	if (optind < argc) {
		rc = hwt_cli_usage_error("report",
					 "unexpected argument '%s' (the recording is given "
					 "with -i)",
					 argv[optind]);
		goto out;
	}
	if (folded && input) {
		rc = hwt_cli_usage_error("report",
					 "give either -i FILE or --folded-in FILE, not both");
		goto out;
	}
	if ((cflags && !calls) || (calls && folded)) {
		rc = hwt_cli_usage_error("report", "%s",
					 calls ? "--calls needs an Intel PT recording "
						 "(-i), not folded stacks"
					       : "--hist and --all go with --calls");
		goto out;
	}
	if (!folded) {
		if (!input)
			input = hwt_cli_default_input();
		if (hwt_cli_is_pt(input, &ptsess, &samples)) {
			if (children >= 0)
				cfg.children = children;
			if (graph >= 0)
				cfg.graph = (enum hwt_rep_graph)graph;
			rc = report_pt(input, ptsess, &so, &cfg, calls, cflags, cfg.max_entries,
				       out, quiet);
			goto out;
		}
		if (calls) {
			hwt_fmt_session_close(samples);
			rc = hwt_cli_not_pt(input, "--calls counts calls exactly from one");
			goto out;
		}
	}
	if (folded) {
		if (!sort_given) {
			cfg.nsort = 1;
			cfg.sort[0] = HWT_REP_F_FUNCTION;
		}
		if (hwt_cli_load_folded(folded, event, &p) != HWT_EXIT_OK)
			goto out;
	} else {
		if (!input)
			input = hwt_cli_default_input();
		so.srclines = has_srcline(&cfg);
		/* A graph asked for by name needs call chains; the defaults
		 * adapt to a recording without them, as perf's do. */
		so.need_callchains =
		    graph == HWT_REP_GRAPH_CALLER || graph == HWT_REP_GRAPH_CALLEE || children == 1;
		so.callchains = graph != HWT_REP_GRAPH_NONE || children != 0;
		so.quiet = quiet || folded;
		if (hwt_cli_load_samples(&so, input, samples, &p, NULL) != HWT_EXIT_OK)
			goto out;
		if (!so.any_callchain) {
			if (children < 0)
				children = 0;
			if (graph < 0)
				graph = HWT_REP_GRAPH_NONE;
		}
	}
	if (children >= 0)
		cfg.children = children;
	if (graph >= 0)
		cfg.graph = (enum hwt_rep_graph)graph;
	hwt_buf_init(&text);
	err = hwt_rep_render(p, &cfg, &text);
	if (err >= 0)
		rc = write_out(out, &text);
	else
		hwt_cli_error("cannot render the report: %s", hwt_strerror(err));
	hwt_buf_fini(&text);
	if (rc == HWT_EXIT_OK && !quiet && !folded) {
		const struct hwt_rep_stats *st = hwt_rep_profile_stats(p);

		hwt_cli_note(
		    "report: %" PRIu64 " samples (%" PRIu64 " filtered out, %" PRIu64
		    " lost), %" PRIu64 " frames (%" PRIu64 " unsymbolized, %" PRIu64 " unmapped)",
		    st->samples, st->filtered, st->lost, st->frames, st->unsymbolized, so.unmapped);
	}
out:
	hwt_rep_profile_free(p);
	hwt_cli_samples_opts_fini(&so);
	return rc;
}
