/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/cmd_convert.c - `hwtrace convert [-i] FILE.hwt [-o perf.data]`: writes
 * a hwtrace recording as perf.data, so Linux perf reads it (perf report,
 * perf script; for Intel PT, perf's own decoder with --itrace). Parsing and
 * messages only; the conversion is format/'s hwt_fmt_convert().
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "format/format.h"
#include "symbolize/symbolize.h"

/* Build-ids of mapped files the recording has none for, read from the
 * files here (the PT emulator records none). */
static int read_build_id(void *ctx, const char *path, uint8_t *id, size_t cap)
{
	(void)ctx;
	return hwt_sym_build_id_read(path, id, cap);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: hwtrace convert [-i] FILE.hwt [-o OUTPUT]\n"
		   "\n"
		   "Writes a hwtrace recording as a perf.data file that Linux perf reads:\n"
		   "samples for perf report / perf script, and Intel PT recordings (also\n"
		   "emulated ones) for perf's own PT decoder:\n"
		   "  perf script -i OUTPUT --itrace=c     calls\n"
		   "  perf script -i OUTPUT --itrace=b     taken branches\n"
		   "  perf script -i OUTPUT --itrace=i100  an instruction sample every 100\n"
		   "\n"
		   "  -i, --input FILE    the recording (default: hwtrace.hwt)\n"
		   "  -o, --output FILE   the perf.data to write, mode 0600 (default: perf.data;\n"
		   "                      an existing file is replaced)\n"
		   "  -q, --quiet         no summary line\n"
		   "  -h, --help          show this help\n"
		   "\n"
		   "Exit status 1 when the recording is cut short or damaged: the readable\n"
		   "part is still converted and OUTPUT is left in place (a recording that\n"
		   "only did not end cleanly converts whole, with a warning).\n");
	hwt_cli_help_end(f);
}

static int input_error(const char *path, int err, uint64_t off)
{
	switch (-err) {
	case HWT_ENOTSUP:
		hwt_cli_error("%s: is perf.data already (perf reads it as it is; convert takes a "
			      "hwtrace recording, .hwt)",
			      path);
		return HWT_EXIT_ERROR;
	case HWT_ENOEVENT:
		hwt_cli_error("%s: holds AUX trace data but no intel_pt event that it belongs "
			      "to ('hwtrace info %s' shows its events); it cannot be converted",
			      path, path);
		return HWT_EXIT_ERROR;
	default:
		break;
	}
	return hwt_cli_recording_error(path, err, off);
}

static int output_error(const char *path, int err)
{
	switch (-err) {
	case EACCES:
	case EPERM:
	case EROFS:
		hwt_cli_error("cannot write %s: %s (choose a writable path with -o)", path,
			      strerror(-err));
		break;
	case ENOENT:
		hwt_cli_error("cannot write %s: its directory does not exist (create it, or "
			      "choose another path with -o)",
			      path);
		break;
	case EISDIR:
		hwt_cli_error("cannot write %s: is a directory (give a file name with -o)", path);
		break;
	case ENOSPC:
	case EDQUOT:
		hwt_cli_error("cannot write %s: no space left (free some, or write elsewhere "
			      "with -o)",
			      path);
		break;
	default:
		hwt_cli_error("cannot write %s: %s (write to a regular file elsewhere with -o)",
			      path, hwt_strerror(err));
		break;
	}
	return HWT_EXIT_ERROR;
}

int hwt_cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"input", required_argument, NULL, 'i'},
	    {"output", required_argument, NULL, 'o'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct hwt_fmt_convert_config cfg;
	struct hwt_fmt_convert_stats st;
	const char *in = NULL, *out = "perf.data";
	bool quiet = false;
	uint64_t off = 0;
	int opt, err;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "i:o:qh", opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			in = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return HWT_EXIT_OK;
		default:
			return hwt_cli_usage_error(
			    "convert", "unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc) {
		if (in)
			return hwt_cli_usage_error("convert", "give the input once (-i %s or %s)",
						   in, argv[optind]);
		in = argv[optind++];
	}
	if (optind < argc)
		return hwt_cli_usage_error("convert", "unexpected argument '%s'", argv[optind]);
	if (!in)
		in = "hwtrace.hwt";
	if (!*out)
		return hwt_cli_usage_error("convert", "-o needs a file name");

	hwt_fmt_convert_config_init(&cfg);
	cfg.version = "hwtrace " HWT_VERSION;
	cfg.argc = argc;
	cfg.argv = (const char *const *)argv;
	cfg.log = *hwt_cli_logger();
	cfg.build_id = read_build_id;
	err = hwt_fmt_convert(in, out, &cfg, &st, &off);
	if (err < 0)
		return st.output_error ? output_error(out, err) : input_error(in, err, off);
	if (!quiet) {
		if (st.pt)
			hwt_cli_note("%s -> %s: %" PRIu64 " records, %" PRIu64 " bytes of %sIntel "
				     "PT in %" PRIu64 " stream(s); decode with: perf script -i %s "
				     "--itrace=b",
				     in, out, st.records, st.aux_bytes,
				     st.emulated ? "emulated " : "", st.aux_streams, out);
		else
			hwt_cli_note("%s -> %s: %" PRIu64 " records; read with: perf report -i %s",
				     in, out, st.records, out);
	}
	if (st.damaged_input) {
		/* OUTPUT holds the readable part; a copy that is not whole
		 * (cut short or damaged, not only unfinished) fails. */
		bool partial = st.truncated || st.damaged || st.bad_records;

		hwt_cli_damage_say(in, &st.damage, partial, !st.records && !st.aux_bytes);
		if (partial || (!st.records && !st.aux_bytes))
			return HWT_EXIT_ERROR;
	}
	return HWT_EXIT_OK;
}
