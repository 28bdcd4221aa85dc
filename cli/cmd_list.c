/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/cmd_list.c - `hwtrace list [PATTERN]`: the events this machine can
 * count, in perf list's layout: generic hardware, software and cache
 * events, libpfm4 PMUs with their events and unit masks, tracepoints, the
 * uprobe/kprobe PMUs and Intel PT with its capabilities.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "perfsys/perfsys.h"
#include "pmc/pmc.h"

struct list_out {
	FILE *f;
	uint32_t last_kind;
	bool any;
	bool desc;
};

static const char *kind_label(uint32_t kind)
{
	switch (kind) {
	case HWT_PMC_LIST_HARDWARE:
		return "Hardware event";
	case HWT_PMC_LIST_SOFTWARE:
		return "Software event";
	case HWT_PMC_LIST_CACHE:
		return "Hardware cache event";
	case HWT_PMC_LIST_TRACEPOINT:
		return "Tracepoint event";
	default:
		return "";
	}
}

static int print_entry(void *ctx, const struct hwt_pmc_list_entry *e)
{
	struct list_out *o = ctx;
	char name[600];

	if (!o->any)
		fprintf(o->f, "\nList of pre-defined events (to be used in -e):\n\n");
	/* A blank line between classes, as perf list separates them. */
	if (o->any && e->kind != o->last_kind && e->kind != HWT_PMC_LIST_PFM &&
	    e->kind != HWT_PMC_LIST_PFM_UMASK &&
	    !(e->kind == HWT_PMC_LIST_PT && o->last_kind == HWT_PMC_LIST_DYNAMIC_PMU))
		fputc('\n', o->f);
	o->any = true;
	o->last_kind = e->kind;
	switch (e->kind) {
	case HWT_PMC_LIST_HARDWARE:
	case HWT_PMC_LIST_SOFTWARE:
	case HWT_PMC_LIST_CACHE:
	case HWT_PMC_LIST_TRACEPOINT:
		if (e->alias)
			snprintf(name, sizeof(name), "%s OR %s", e->name, e->alias);
		else
			snprintf(name, sizeof(name), "%s", e->name);
		/* What this machine cannot open is marked, with why. */
		if (!e->present && e->desc)
			fprintf(o->f, "  %-50s [%s: %s]\n", name, kind_label(e->kind), e->desc);
		else
			fprintf(o->f, "  %-50s [%s]\n", name, kind_label(e->kind));
		break;
	case HWT_PMC_LIST_PMU:
		fprintf(o->f,
			"%s: %s\n  (libpfm4 events: %s::EVENT:UMASK:MODIFIER..., or EVENT:UMASK)\n",
			e->name, e->desc ? e->desc : "", e->name);
		break;
	case HWT_PMC_LIST_PFM:
		fprintf(o->f, "  %s\n", e->name);
		if (o->desc && e->desc)
			fprintf(o->f, "       [%s]\n", e->desc);
		break;
	case HWT_PMC_LIST_PFM_UMASK:
		if (o->desc && e->desc)
			fprintf(o->f, "       :%-30s %s\n", e->name, e->desc);
		else
			fprintf(o->f, "       :%s\n", e->name);
		break;
	case HWT_PMC_LIST_DYNAMIC_PMU:
		fprintf(o->f, "  %-50s [Dynamic probe PMU: %s]\n", e->name, e->desc ? e->desc : "");
		break;
	case HWT_PMC_LIST_PT:
		fprintf(o->f, "  %-50s [Intel PT: %s]\n", e->name, e->desc ? e->desc : "");
		break;
	case HWT_PMC_LIST_KERNEL_PMU:
		fprintf(o->f, "  %-50s [Kernel PMU event%s%s]\n", e->name, e->desc ? ": " : "",
			e->desc ? e->desc : "");
		break;
	default:
		break;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: hwtrace list [--no-desc] [PATTERN]\n"
		   "\n"
		   "Lists the events that -e accepts: generic hardware, software and cache\n"
		   "events, this CPU's PMU events (libpfm4), tracepoints, the uprobe/kprobe\n"
		   "PMUs and Intel PT. PATTERN keeps names containing it (case-insensitive);\n"
		   "'hardware', 'software', 'cache', 'tracepoint' or 'pmu' select a class.\n"
		   "\n"
		   "  --no-desc   omit event descriptions\n"
		   "  -h, --help  show this help\n");
	hwt_cli_help_end(f);
}

int hwt_cmd_list(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"no-desc", no_argument, NULL, 'D'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct hwt_pmc_config cfg;
	struct hwt_psys *psys = NULL;
	struct list_out o = {stdout, 0, false, true};
	const char *pattern = NULL;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'D':
			o.desc = false;
			break;
		case 'h':
			usage(stdout);
			return HWT_EXIT_OK;
		default:
			return hwt_cli_usage_error("list", "unknown option");
		}
	}
	if (optind < argc)
		pattern = argv[optind++];
	if (optind < argc)
		return hwt_cli_usage_error("list", "one PATTERN at most");
	if (hwt_cli_psys_open(&psys) != HWT_EXIT_OK)
		return HWT_EXIT_ERROR;
	hwt_pmc_config_init(&cfg);
	cfg.logger = *hwt_cli_logger();
	/* Test seam: a fake sysfs tree (PMUs, Intel PT capabilities). */
	cfg.sysfs_root = hwt_cli_sysfs_root(psys);
	cfg.tracefs_root = getenv("HWT_TRACEFS_ROOT");
	cfg.psys = psys;
	ret = hwt_pmc_list(&cfg, pattern, print_entry, &o);
	hwt_psys_free(psys);
	if (ret < 0) {
		hwt_cli_error("cannot list events: %s", hwt_strerror(ret));
		return HWT_EXIT_ERROR;
	}
	if (!o.any) {
		hwt_cli_error("no event matches '%s'; try 'hwtrace list' without a pattern",
			      pattern ? pattern : "");
		return HWT_EXIT_ERROR;
	}
	if (fflush(stdout) != 0)
		return HWT_EXIT_ERROR;
	return HWT_EXIT_OK;
}
