/*
 * cli/cmd_script.c - `hwtrace script`: a small dispatcher. A recording of
 * samples (.hwt or perf.data) goes to the sample mode (cli/script_samples.c);
 * --pt selects the raw Intel PT mode, ptxed-compatible (cli/script_pt.c).
 */
#include <stdbool.h>
#include <string.h>

#include "cli/cli.h"

int hwt_cmd_script(int argc, char **argv)
{
	bool pt = false, help = false;

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		pt |= !strcmp(argv[i], "--pt") || !strncmp(argv[i], "--pt=", 5);
		help |= !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help");
	}
	if (pt && help) {
		/* `script --pt --help`: --pt would take --help as its file. */
		char *usage[] = {argv[0], "--help", NULL};

		return hwt_script_pt(2, usage);
	}
	if (pt)
		return hwt_script_pt(argc, argv);
	return hwt_script_samples(argc, argv);
}
