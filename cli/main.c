/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/main.c - the hwtrace command: finds the subcommand and runs it.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct hwt_cli_cmd commands[] = {
    {"list", hwt_cmd_list, "list the events this machine can count"},
    {"stat", hwt_cmd_stat, "count events for a command, processes or the system"},
    {"record", hwt_cmd_record, "sample a command, processes or the system (or Intel PT)"},
    {"info", hwt_cmd_info, "show what a trace file holds"},
    {"script", hwt_cmd_script, "every sample, or the decoded PT flow (--itrace, --flow)"},
    {"report", hwt_cmd_report, "top functions, call graphs, exact PT call counts (--calls)"},
    {"flame", hwt_cmd_flame, "flame graphs (SVG/HTML), folded, pprof, Chrome timeline"},
    {"branches", hwt_cmd_branches, "one function of a PT trace: counts per instruction and branch"},
    {"trace", hwt_cmd_trace, "DTrace-style one-liners: probes, predicates, aggregations"},
    {"convert", hwt_cmd_convert, "write a recording as perf.data for Linux perf"},
    {"addr2line", hwt_cmd_addr2line, "addresses to functions, inline chains and lines"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: hwtrace [-v] COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < HWT_ARRAY_SIZE(commands); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nSee 'hwtrace COMMAND --help'.\n");
	hwt_cli_help_end(out);
}

int main(int argc, char **argv)
{
	int i = 1;

	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			hwt_cli_verbose++;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return HWT_EXIT_OK;
		} else if (!strcmp(argv[i], "--version")) {
			printf("hwtrace %s\n", HWT_VERSION);
			return HWT_EXIT_OK;
		} else {
			fprintf(stderr, "hwtrace: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return HWT_EXIT_USAGE;
		}
		i++;
	}
	if (i >= argc) {
		usage(stderr);
		return HWT_EXIT_USAGE;
	}
	for (size_t c = 0; c < HWT_ARRAY_SIZE(commands); c++) {
		if (!strcmp(argv[i], commands[c].name))
			return commands[c].run(argc - i, argv + i);
	}
	if (!strcmp(argv[i], "help")) {
		usage(stdout);
		return HWT_EXIT_OK;
	}
	fprintf(stderr, "hwtrace: '%s' is not a hwtrace command (see 'hwtrace --help')\n", argv[i]);
	return HWT_EXIT_USAGE;
}
