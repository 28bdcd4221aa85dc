/*
 * cli/cmd_info.c - `hwtrace info FILE`: what a trace file holds.
 * (Placeholder until the container lands: reports that it cannot read yet.)
 */
#include "cli/cli.h"

int hwt_cmd_info(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	hwt_cli_error("info: not implemented yet");
	return HWT_EXIT_ERROR;
}
