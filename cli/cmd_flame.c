/*
 * cli/cmd_flame.c - `hwtrace flame`: flame graphs and exports. Until the
 * trace reader lands it renders from folded stacks (--folded-in), which
 * also makes hwtrace a drop-in for FlameGraph's flamegraph.pl and
 * difffolded.pl: interactive SVG/HTML, differential graphs, folded
 * stacks again, or pprof, picked by the output file's extension.
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
		"usage: hwtrace flame --folded-in FILE -o OUT [options]\n"
		"\n"
		"Renders a flame graph; the format follows OUT's extension:\n"
		"  .svg .html   interactive flame graph (hover, click to zoom, search)\n"
		"  .folded      folded stacks (FlameGraph, inferno)\n"
		"  .pb.gz       pprof profile (go tool pprof, Pyroscope, Parca)\n"
		"\n"
		"options:\n"
		"  --folded-in FILE   read folded stacks (\"a;b;c COUNT\" lines; - is stdin)\n"
		"  -o, --output OUT   output file (- writes to stdout; needs --format)\n"
		"  --format FMT       svg, html, folded or pprof, overriding the extension\n"
		"  --diff BASE        differential graph against folded stacks BASE:\n"
		"                     red frames grew, blue frames shrank\n"
		"  --no-normalize     with --diff, compare raw counts (default: scale BASE\n"
		"                     to the same total)\n"
		"  --title TEXT       title (default \"Flame Graph\")\n"
		"  --icicle           root at the top (an icicle graph)\n"
		"  --width PX         image width (default 1200)\n"
		"  --min-width PX     do not draw frames narrower than this (default 0.1);\n"
		"                     search and zoom still see every frame\n"
		"  --event NAME       event name the counts stand for\n");
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
		     {"pprof", HWT_REP_FMT_PPROF}};

	for (size_t i = 0; i < HWT_ARRAY_SIZE(names); i++) {
		if (!strcmp(s, names[i].name)) {
			*f = names[i].f;
			return 0;
		}
	}
	return -HWT_EINVAL;
}

int hwt_cmd_flame(int argc, char **argv)
{
	enum { OPT_FOLDED = 256, OPT_DIFF, OPT_TITLE, OPT_ICICLE, OPT_WIDTH, OPT_MINW, OPT_EVENT,
	       OPT_FORMAT, OPT_NONORM };
	static const struct option opts[] = {
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
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *in = NULL, *out = NULL, *diff = NULL, *event = NULL, *format = NULL;
	struct hwt_rep_render_config cfg;
	struct hwt_rep_profile *p = NULL, *base = NULL;
	const struct hwt_rep_stats *st;
	int c, err, rc = HWT_EXIT_ERROR;

	hwt_rep_render_config_init(&cfg);
	cfg.log = *hwt_cli_logger();
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_FOLDED:
			in = optarg;
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

			if (hwt_cli_parse_u64(optarg, false, &w) < 0 || w < 100 || w > 100000)
				return hwt_cli_usage_error("flame", "--width takes pixels from 100 to 100000, not '%s'",
							   optarg);
			cfg.width = (unsigned int)w;
			break;
		}
		case OPT_MINW: {
			char *end;

			cfg.min_width = strtod(optarg, &end);
			if (*end || end == optarg || cfg.min_width < 0 || cfg.min_width > 1000)
				return hwt_cli_usage_error("flame", "--min-width takes pixels (0 to 1000), not '%s'",
							   optarg);
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
		case 'h':
			usage(stdout);
			return HWT_EXIT_OK;
		default:
			return hwt_cli_usage_error("flame", "unknown option");
		}
	}
	if (optind < argc)
		return hwt_cli_usage_error("flame", "unexpected argument '%s' (reading trace files "
					   "is not wired yet: use --folded-in FILE)", argv[optind]);
	if (!in)
		return hwt_cli_usage_error("flame", "no input: give --folded-in FILE");
	if (!out)
		return hwt_cli_usage_error("flame", "no output: give -o FILE.svg, .html, .folded or .pb.gz");
	if (format) {
		if (parse_format(format, &cfg.format) < 0)
			return hwt_cli_usage_error("flame", "unknown --format '%s' (svg, html, folded, pprof)",
						   format);
	} else if (!strcmp(out, "-")) {
		return hwt_cli_usage_error("flame", "-o - needs --format (svg, html, folded, pprof)");
	} else if (hwt_rep_format_from_path(out, &cfg.format) < 0 || cfg.format == HWT_REP_FMT_TEXT) {
		return hwt_cli_usage_error("flame", "cannot tell the format of '%s': name it .svg, .html, "
					   ".folded or .pb.gz, or give --format", out);
	} else if (cfg.format == HWT_REP_FMT_CHROME) {
		hwt_cli_error("%s: a Chrome trace (.json) needs a time-ordered trace, and folded stacks "
			      "have no time: write .svg, .html, .folded or .pb.gz", out);
		return HWT_EXIT_ERROR;
	}
	if (diff && cfg.format != HWT_REP_FMT_SVG && cfg.format != HWT_REP_FMT_HTML)
		return hwt_cli_usage_error("flame", "--diff draws a differential flame graph: write .svg or .html");
	if (hwt_cli_load_folded(in, event, &p) != HWT_EXIT_OK)
		goto out;
	if (diff) {
		if (hwt_cli_load_folded(diff, event, &base) != HWT_EXIT_OK)
			goto out;
		cfg.base = base;
	}
	if (!strcmp(out, "-")) {
		struct hwt_buf buf;

		hwt_buf_init(&buf);
		err = hwt_rep_render(p, &cfg, &buf);
		if (err >= 0 && fwrite(buf.data, 1, buf.len, stdout) != buf.len)
			err = -EIO;
		hwt_buf_fini(&buf);
	} else {
		err = hwt_rep_render_file(p, &cfg, out);
	}
	if (err < 0) {
		hwt_cli_error("cannot write %s: %s", out, hwt_strerror(err));
		goto out;
	}
	st = hwt_rep_profile_stats(p);
	if (strcmp(out, "-"))
		hwt_cli_note("%s: %llu samples, %llu frames (%llu unsymbolized)", out,
			     (unsigned long long)st->samples, (unsigned long long)st->frames,
			     (unsigned long long)st->unsymbolized);
	rc = HWT_EXIT_OK;
out:
	hwt_rep_profile_free(p);
	hwt_rep_profile_free(base);
	return rc;
}
