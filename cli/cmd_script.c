/*
 * cli/cmd_script.c - `hwtrace script`: print what a trace did. Dispatches to
 * the raw-PT mode (--pt, ptxed-compatible, cli/script_pt.c); the sample mode
 * that reads recordings is not available yet.
 */
#include <string.h>

#include "cli/cli.h"

int hwt_cmd_script(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--pt") || !strncmp(argv[i], "--pt=", 5))
			return hwt_script_pt(argc, argv);
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return hwt_script_pt(argc, argv);
	}
	hwt_cli_error("script: sample-mode script (reading a recording) is not available yet; "
		      "decode raw Intel PT with 'hwtrace script --pt FILE --raw FILE:BASE'");
	return HWT_EXIT_ERROR;
}
