/*
 * cli/cmd_report.c - `hwtrace report`: the perf-report-style view of a
 * profile (self and children, call graphs, text or JSON). Until the trace
 * reader lands it reads folded stacks (--folded-in); the options are the
 * ones trace files will use.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "report/report.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hwtrace report --folded-in FILE [options]\n"
		"\n"
		"Top functions with self and children shares and call graphs, laid out\n"
		"as perf report --stdio does; --json for scripts.\n"
		"\n"
		"options:\n"
		"  --folded-in FILE        read folded stacks (\"a;b;c COUNT\" lines; - is stdin)\n"
		"  --json                  JSON instead of text\n"
		"  --no-children           self only: sort by self, graphs show callers\n"
		"  -g, --call-graph MODE   caller, callee or none (default: caller with\n"
		"                          children, callee without)\n"
		"  -s, --sort KEYS         entry key, comma-separated: function, object,\n"
		"                          comm, pid, tid, cpu, event, srcline\n"
		"                          (default: function for folded stacks)\n"
		"  --percent-limit PCT     hide entries under PCT percent\n"
		"  --graph-limit PCT       hide call-graph branches under PCT (default 0.5)\n"
		"  -n, --max-entries N     show at most N entries\n"
		"  --event NAME            the event the counts stand for\n"
		"  -o, --output FILE       write there instead of standard output\n");
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
		if (hwt_rep_field_type(f) == HWT_REP_STACK || f == HWT_REP_F_WEIGHT || f == HWT_REP_F_TIME)
			return -1;
		cfg->sort[cfg->nsort++] = f;
	}
	return cfg->nsort ? 0 : -1;
}

int hwt_cmd_report(int argc, char **argv)
{
	enum { OPT_FOLDED = 256, OPT_JSON, OPT_NOCHILD, OPT_PCT, OPT_GPCT, OPT_EVENT };
	static const struct option opts[] = {
		{"folded-in", required_argument, NULL, OPT_FOLDED},
		{"json", no_argument, NULL, OPT_JSON},
		{"no-children", no_argument, NULL, OPT_NOCHILD},
		{"call-graph", required_argument, NULL, 'g'},
		{"sort", required_argument, NULL, 's'},
		{"percent-limit", required_argument, NULL, OPT_PCT},
		{"graph-limit", required_argument, NULL, OPT_GPCT},
		{"max-entries", required_argument, NULL, 'n'},
		{"event", required_argument, NULL, OPT_EVENT},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *in = NULL, *out = NULL, *event = NULL;
	struct hwt_rep_render_config cfg;
	struct hwt_rep_profile *p = NULL;
	struct hwt_buf text;
	int c, err, rc = HWT_EXIT_ERROR;

	hwt_rep_render_config_init(&cfg);
	cfg.log = *hwt_cli_logger();
	cfg.nsort = 1;
	cfg.sort[0] = HWT_REP_F_FUNCTION;
	optind = 1;
	while ((c = getopt_long(argc, argv, "g:s:n:o:h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_FOLDED:
			in = optarg;
			break;
		case OPT_JSON:
			cfg.format = HWT_REP_FMT_JSON;
			break;
		case OPT_NOCHILD:
			cfg.children = false;
			break;
		case 'g':
			if (!strcmp(optarg, "caller"))
				cfg.graph = HWT_REP_GRAPH_CALLER;
			else if (!strcmp(optarg, "callee"))
				cfg.graph = HWT_REP_GRAPH_CALLEE;
			else if (!strcmp(optarg, "none"))
				cfg.graph = HWT_REP_GRAPH_NONE;
			else
				return hwt_cli_usage_error("report", "-g takes caller, callee or none, not '%s'",
							   optarg);
			break;
		case 's':
			if (parse_sort(optarg, &cfg) < 0)
				return hwt_cli_usage_error("report", "bad --sort '%s': use keys from function, "
							   "object, comm, pid, tid, cpu, event, srcline", optarg);
			break;
		case OPT_PCT:
			if (parse_pct(optarg, &cfg.percent_limit) < 0)
				return hwt_cli_usage_error("report", "--percent-limit takes 0 to 100, not '%s'", optarg);
			break;
		case OPT_GPCT:
			if (parse_pct(optarg, &cfg.graph_limit) < 0)
				return hwt_cli_usage_error("report", "--graph-limit takes 0 to 100, not '%s'", optarg);
			break;
		case 'n': {
			unsigned long long v;

			if (hwt_cli_parse_u64(optarg, false, &v) < 0)
				return hwt_cli_usage_error("report", "-n takes a count, not '%s'", optarg);
			cfg.max_entries = (size_t)v;
			break;
		}
		case OPT_EVENT:
			event = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			usage(stdout);
			return HWT_EXIT_OK;
		default:
			return hwt_cli_usage_error("report", "unknown option");
		}
	}
	if (optind < argc)
		return hwt_cli_usage_error("report", "unexpected argument '%s' (reading trace files "
					   "is not wired yet: use --folded-in FILE)", argv[optind]);
	if (!in)
		return hwt_cli_usage_error("report", "no input: give --folded-in FILE");

	if (hwt_cli_load_folded(in, event, &p) != HWT_EXIT_OK)
		goto out;
	hwt_buf_init(&text);
	err = hwt_rep_render(p, &cfg, &text);
	if (err >= 0) {
		FILE *o = out ? fopen(out, "w") : stdout;

		if (!o) {
			hwt_cli_error("cannot write %s: %s", out, strerror(errno));
		} else {
			if (fwrite(text.data, 1, text.len, o) != text.len || (o != stdout && fclose(o) != 0))
				hwt_cli_error("cannot write %s: %s", out ? out : "standard output",
					      strerror(errno));
			else
				rc = HWT_EXIT_OK;
			if (o == stdout)
				fflush(stdout);
		}
	} else {
		hwt_cli_error("cannot render the report: %s", hwt_strerror(err));
	}
	hwt_buf_fini(&text);
out:
	hwt_rep_profile_free(p);
	return rc;
}
