/*
 * cli/cmd_script.c - `hwtrace script`: a small dispatcher. A recording of
 * samples (.hwt or perf.data) goes to the sample mode (cli/script_samples.c).
 * The raw Intel PT mode (--pt, ptxed-compatible) is the decoder's
 * (cli/script_pt.c, hwt_script_pt) and is dispatched here once it is merged:
 *
 *   if (an argument is --pt or --pt=...) return hwt_script_pt(argc, argv);
 */
#include <string.h>

#include "cli/cli.h"

int hwt_cmd_script(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--pt") || !strncmp(argv[i], "--pt=", 5)) {
			/* Placeholder until the decoder's raw-PT mode is merged. */
			hwt_cli_error("script: raw Intel PT decoding (--pt) is not in this build");
			return HWT_EXIT_ERROR;
		}
	}
	return hwt_script_samples(argc, argv);
}
