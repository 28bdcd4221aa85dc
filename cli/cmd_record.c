/*
 * cli/cmd_record.c - `hwtrace record`. For now only the PT emulator path:
 * `hwtrace record --pt=emulate[,TERMS] [-o FILE] -- CMD [ARGS]`, which runs
 * CMD under the emulator (collector/ptemu.h) and writes a .hwt container
 * labelled as emulated. Its option parsing lives in hwt_record_pt_emulate()
 * so that the full record command can call it when --pt=emulate is given.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "collector/collector.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hwtrace record --pt=emulate[,TERMS] [-o FILE] -- CMD [ARGS]\n"
		"\n"
		"Runs CMD and records the Intel PT packet stream a CPU with PT would write\n"
		"for its user-space execution, emulated (qemu-x86_64 with hwtrace's plugin),\n"
		"with the kernel's sideband, into FILE. Every thread and forked process\n"
		"gets its own stream. The file and every report say it was emulated.\n"
		"\n"
		"  --pt=emulate[,TERMS]  TERMS as perf's intel_pt//: tsc, mtc, cyc, noretcomp\n"
		"                        (each =0/=1), mtc_period=N, psb_period=N, and\n"
		"                        tsc_per_insn=N for the emulated clock\n"
		"  -o, --output FILE     output file (default hwtrace.hwt)\n"
		"  -q, --quiet           no summary\n"
		"  -h, --help            show this help\n");
}

int hwt_record_pt_emulate(int argc, char **argv)
{
	static const struct option opts[] = {
		{"pt", required_argument, NULL, 'P'},
		{"output", required_argument, NULL, 'o'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct hwt_ptemu_config cfg;
	struct hwt_ptemu_result res;
	const char *out = "hwtrace.hwt", *bad = NULL, *pt = NULL;
	bool quiet = false;
	int c, err;

	hwt_ptemu_config_init(&cfg);
	cfg.log = *hwt_cli_logger();
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'P':
			pt = optarg;
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
			return hwt_cli_usage_error("record", "unknown option");
		}
	}
	if (!pt || strncmp(pt, "emulate", 7) || (pt[7] && pt[7] != ','))
		return hwt_cli_usage_error("record", "only --pt=emulate is supported by this "
						     "build");
	if (pt[7] == ',' && hwt_ptemu_terms_parse(&cfg.terms, pt + 8, &bad) < 0)
		return hwt_cli_usage_error("record", "bad PT term '%s' in --pt", bad);
	if (optind >= argc)
		return hwt_cli_usage_error("record", "no command to record: give it after '--'");
	cfg.argv = (const char *const *)(argv + optind);
	err = hwt_ptemu_record(&cfg, out, &res);
	if (err < 0) {
		if (err == -HWT_ENOTSUP)
			return HWT_EXIT_ERROR; /* the library said what is missing */
		hwt_cli_error("record: %s: %s (check the command and the output path)", out,
			      hwt_strerror(err));
		hwt_ptemu_result_fini(&res);
		return HWT_EXIT_ERROR;
	}
	if (!quiet) {
		hwt_cli_note("emulated Intel PT (no PT hardware used): %zu thread%s, %llu "
			     "instructions, %.1f MB of PT in %.2f s -> %s",
			     res.nthreads, res.nthreads == 1 ? "" : "s",
			     (unsigned long long)res.insns, (double)res.bytes / 1e6, res.seconds,
			     out);
		if (res.exit_status)
			hwt_cli_note("the command exited with status %d", res.exit_status);
	}
	hwt_ptemu_result_fini(&res);
	return HWT_EXIT_OK;
}

int hwt_cmd_record(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return HWT_EXIT_OK;
		}
		if (!strncmp(argv[i], "--pt=", 5) || !strcmp(argv[i], "--pt"))
			return hwt_record_pt_emulate(argc, argv);
	}
	hwt_cli_error("record: only 'record --pt=emulate -- CMD' is available in this build "
		      "(see 'hwtrace record --help')");
	return HWT_EXIT_ERROR;
}
