/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pmc/list.c - what can be counted here: perf's generic events, libpfm4's
 * PMUs and events, tracepoints, the uprobe/kprobe PMUs and Intel PT with its
 * capabilities, walked in one order for `hwtrace list`. PMU presence comes
 * from sysfs (cfg->sysfs_root), so tests can fake a machine with PT.
 */
#include "pmc/pmc_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int hwt_pmc_pmu_type(const struct hwt_pmc_config *cfg, const char *pmu)
{
	char path[4096], buf[32], *end;
	long v;
	int n;

	if (!pmu || !*pmu || strchr(pmu, '/') || strstr(pmu, ".."))
		return -ENOENT;
	if (hwt_pmc_sysfs_path(cfg, path, sizeof(path), "bus/event_source/devices/%s/type", pmu))
		return -HWT_ETOOBIG;
	n = hwt_pmc_read_text(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOTDIR ? -ENOENT : n;
	v = strtol(buf, &end, 10);
	if (end == buf || *end || v < 0 || v > 0x7fffffff)
		return -HWT_EFORMAT;
	return (int)v;
}

static int cap_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int hwt_pmc_pt_info(const struct hwt_pmc_config *cfg, struct hwt_pmc_pt_info *info)
{
	char path[4096], val[64];
	char *names[64];
	size_t n = 0, used = 0;
	struct dirent *de;
	DIR *d;
	int type;

	memset(info, 0, sizeof(*info));
	type = hwt_pmc_pmu_type(cfg, "intel_pt");
	if (type < 0)
		return 0;
	info->present = true;
	info->type = (uint32_t)type;
	if (hwt_pmc_sysfs_path(cfg, path, sizeof(path), "bus/event_source/devices/intel_pt/caps"))
		return 0;
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < HWT_ARRAY_SIZE(names)) {
		if (de->d_name[0] == '.')
			continue;
		names[n] = strdup(de->d_name);
		if (names[n])
			n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cap_cmp);
	for (size_t i = 0; i < n; i++) {
		char file[4096 + 256];
		int w;

		snprintf(file, sizeof(file), "%s/%s", path, names[i]);
		if (hwt_pmc_read_text(file, val, sizeof(val)) < 0)
			snprintf(val, sizeof(val), "?");
		w = snprintf(info->caps + used, sizeof(info->caps) - used, "%s%s=%s",
			     used ? " " : "", names[i], val);
		if (w > 0 && (size_t)w < sizeof(info->caps) - used)
			used += (size_t)w;
		free(names[i]);
	}
	return 0;
}

/* Whether this machine opens a generic hardware event: one try with
 * perf_event_open (counting, disabled, this process, user space only, as
 * perf_event_paranoid lets everyone), closed at once. Returns NULL when it
 * opens, else why not. A lack of descriptors or memory says nothing about
 * the machine: the event is taken as there. */
static const char *try_open(const struct hwt_pmc_config *cfg, uint32_t type, uint64_t config)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = type;
	a.config = config;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = hwt_psys_event_open(cfg->psys, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		hwt_psys_close(cfg->psys, fd);
		return NULL;
	}
	switch (-fd) {
	case EMFILE:
	case ENFILE:
	case ENOMEM:
		return NULL;
	case EACCES:
	case EPERM:
		return "not permitted here (kernel.perf_event_paranoid)";
	default:
		return "not supported here";
	}
}

static int emit(hwt_pmc_list_fn fn, void *ctx, uint32_t kind, const char *name, const char *alias,
		const char *desc, bool present)
{
	struct hwt_pmc_list_entry e;

	e.kind = kind;
	e.name = name;
	e.alias = alias;
	e.desc = desc;
	e.present = present;
	return fn(ctx, &e);
}

/* "hardware", "software", "cache" or "tracepoint": a class keyword. */
static bool all_of_kinds(const char *pattern)
{
	return !strcasecmp(pattern, "hardware") || !strcasecmp(pattern, "software") ||
	       !strcasecmp(pattern, "cache") || !strcasecmp(pattern, "tracepoint");
}

int hwt_pmc_list(const struct hwt_pmc_config *cfg, const char *pattern, hwt_pmc_list_fn fn,
		 void *ctx)
{
	static const char *const kinds[] = {"hardware", "software", "cache"};
	struct hwt_pmc_config dcfg;
	struct hwt_pmc_pt_info pt;
	char name[64], desc[1200];
	unsigned st = 0;
	uint64_t cc;
	int ret;

	if (!cfg) {
		hwt_pmc_config_init(&dcfg);
		cfg = &dcfg;
	}
	/* A pattern naming a whole class ("software", "hardware", "cache",
	 * "tracepoint", "pmu") selects that class, as with perf list. */
	for (uint32_t k = HWT_PMC_LIST_HARDWARE; k <= HWT_PMC_LIST_SOFTWARE; k++) {
		bool all = pattern && !strcasecmp(pattern, kinds[k - 1]);

		for (size_t i = 0; i < hwt_pmc_generic_count; i++) {
			const struct hwt_pmc_generic *g = &hwt_pmc_generic_events[i];

			if (g->list_kind != k)
				continue;
			const char *why;

			if (!all && !hwt_pmc_match(g->name, pattern) &&
			    !hwt_pmc_match(g->alias, pattern))
				continue;
			why = k == HWT_PMC_LIST_HARDWARE ? try_open(cfg, g->type, g->config) : NULL;
			if ((ret = emit(fn, ctx, k, g->name, g->alias, why, !why)))
				return ret;
		}
	}
	while (hwt_pmc_cache_next(&st, name, sizeof(name), &cc)) {
		bool all = pattern && !strcasecmp(pattern, "cache");
		const char *why;

		if (!all && !hwt_pmc_match(name, pattern))
			continue;
		why = try_open(cfg, PERF_TYPE_HW_CACHE, cc);
		if ((ret = emit(fn, ctx, HWT_PMC_LIST_CACHE, name, NULL, why, !why)))
			return ret;
	}
	if (!pattern || !all_of_kinds(pattern)) {
		ret = hwt_pmc_pmu_events_list(cfg, pattern, fn, ctx);
		if (ret)
			return ret;
	}
	/* A generic class keyword selects that class only. */
	for (size_t k = 0; k < HWT_ARRAY_SIZE(kinds); k++) {
		if (pattern && !strcasecmp(pattern, kinds[k]))
			return 0;
	}
	if (!pattern || strcasecmp(pattern, "tracepoint")) {
		ret = hwt_pmc_pfm_list(pattern && !strcasecmp(pattern, "pmu") ? NULL : pattern, fn,
				       ctx);
		if (ret)
			return ret;
	}
	if (!pattern || strcasecmp(pattern, "pmu")) {
		ret = hwt_pmc_tracepoint_list(
		    cfg, pattern && !strcasecmp(pattern, "tracepoint") ? NULL : pattern, fn, ctx);
		if (ret)
			return ret;
	}
	if (pattern && !strcasecmp(pattern, "tracepoint"))
		return 0;
	for (int i = 0; i < 2; i++) {
		const char *pmu = i ? "kprobe" : "uprobe";
		int type = hwt_pmc_pmu_type(cfg, pmu);

		if (!hwt_pmc_match(pmu, pattern) && !(pattern && !strcasecmp(pattern, "pmu")) &&
		    !hwt_pmc_match("probe", pattern))
			continue;
		if (type >= 0)
			snprintf(desc, sizeof(desc), "available (PMU type %d): dynamic %s probes",
				 type, i ? "kernel" : "user-space");
		else
			snprintf(desc, sizeof(desc), "not available on this kernel");
		if ((ret = emit(fn, ctx, HWT_PMC_LIST_DYNAMIC_PMU, pmu, NULL, desc, type >= 0)))
			return ret;
	}
	if (hwt_pmc_match("intel_pt", pattern) || hwt_pmc_match("pt", pattern) ||
	    (pattern && !strcasecmp(pattern, "pmu"))) {
		hwt_pmc_pt_info(cfg, &pt);
		if (pt.present)
			snprintf(desc, sizeof(desc), "available (PMU type %u); capabilities: %s",
				 pt.type, pt.caps[0] ? pt.caps : "none listed");
		else
			snprintf(
			    desc, sizeof(desc),
			    "not available on this machine (no intel_pt PMU: not an Intel CPU, "
			    "or a VM without PT passthrough)");
		if ((ret = emit(fn, ctx, HWT_PMC_LIST_PT, "intel_pt", NULL, desc, pt.present)))
			return ret;
	}
	return 0;
}
