/*
 * cli/cmd_script.c - `hwtrace script`: a small dispatcher. A recording of
 * samples (.hwt or perf.data) goes to the sample mode (cli/script_samples.c);
 * --pt selects the raw Intel PT mode, ptxed-compatible (cli/script_pt.c).
 */
#include <string.h>

#include "cli/cli.h"

int hwt_cmd_script(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--pt") || !strncmp(argv[i], "--pt=", 5))
			return hwt_script_pt(argc, argv);
	}
	return hwt_script_samples(argc, argv);
}
