/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pmc/pmus.c - the PMUs of the machine as sysfs describes them, where that
 * changes how events are opened: the core PMUs of a hybrid CPU (cpu_core,
 * cpu_atom: each with a cpus file, each counting on its own CPUs only),
 * and CPU lists ("0-3,8").
 */
#include "pmc/pmc_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool hwt_pmc_cpulist_has(const char *list, int cpu)
{
	const char *p = list;

	if (!list || !*list || cpu < 0)
		return true;
	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b;

		if (end == p)
			return false;
		b = a;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			p = end;
		}
		if (cpu >= a && cpu <= b)
			return true;
		if (*p != ',')
			break;
		p++;
	}
	return false;
}

bool hwt_pmc_event_on_cpu(const struct hwt_pmc_event *ev, int cpu)
{
	return !ev || hwt_pmc_cpulist_has(ev->pmu_cpus, cpu);
}

int hwt_pmc_hybrid_pmus(const struct hwt_pmc_config *cfg, char (*names)[32], uint32_t *types,
			char (*cpus)[64], int max)
{
	char dir[4096], path[4096 + 300], text[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	if (hwt_pmc_sysfs_path(cfg, dir, sizeof(dir), "bus/event_source/devices") < 0 ||
	    !(d = opendir(dir)))
		return 0;
	while ((e = readdir(d)) && n < max) {
		int type;

		/* Core PMUs of hybrid CPUs are cpu_<kind> with a cpus file
		 * (system PMUs have a cpumask instead). */
		if (strncmp(e->d_name, "cpu_", 4) != 0 || strlen(e->d_name) >= 32)
			continue;
		snprintf(path, sizeof(path), "%s/%s/cpus", dir, e->d_name);
		if (hwt_pmc_read_text(path, text, sizeof(text)) <= 0)
			continue;
		type = hwt_pmc_pmu_type(cfg, e->d_name);
		if (type < 0)
			continue;
		snprintf(names[n], 32, "%.31s", e->d_name);
		snprintf(cpus[n], 64, "%.63s", text);
		types[n] = (uint32_t)type;
		n++;
	}
	closedir(d);
	/* By type, as the kernel registered them (cpu_core is type 4). */
	for (int i = 1; i < n; i++) {
		for (int j = i; j > 0 && types[j] < types[j - 1]; j--) {
			char tn[32], tc[64];
			uint32_t tt = types[j];

			memcpy(tn, names[j], 32);
			memcpy(tc, cpus[j], 64);
			memcpy(names[j], names[j - 1], 32);
			memcpy(cpus[j], cpus[j - 1], 64);
			memcpy(names[j - 1], tn, 32);
			memcpy(cpus[j - 1], tc, 64);
			types[j] = types[j - 1];
			types[j - 1] = tt;
		}
	}
	return n >= 2 ? n : 0;
}

int hwt_pmc_hybrid_bind(const struct hwt_pmc_config *cfg, struct perf_event_attr *a, int cpu, int k)
{
	char names[8][32], cpus[8][64];
	uint32_t types[8];
	int n = hwt_pmc_hybrid_pmus(cfg, names, types, cpus, 8), pick = -1;

	if (n < 2 ||
	    !(a->type == PERF_TYPE_HARDWARE || a->type == PERF_TYPE_HW_CACHE ||
	      a->type == PERF_TYPE_RAW || (a->type >= types[0] && a->type <= types[n - 1])))
		return 0;
	if (cpu >= 0) {
		for (int i = 0; i < n && pick < 0; i++)
			if (hwt_pmc_cpulist_has(cpus[i], cpu))
				pick = i;
	} else if (k >= 0 && k < n) {
		pick = k;
	}
	if (pick < 0)
		return -ENOENT;
	if (a->type == PERF_TYPE_HARDWARE || a->type == PERF_TYPE_HW_CACHE)
		a->config = (a->config & 0xffffffffull) | ((uint64_t)types[pick] << 32);
	else
		a->type = types[pick];
	return n;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Names of the entries of folder dir, sorted (freed by the caller). */
static int sorted_dir(const char *dir, char ***out)
{
	struct dirent *e;
	char **v = NULL;
	int n = 0, cap = 0;
	DIR *d = opendir(dir);

	*out = NULL;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nv = realloc(v, (size_t)(cap = cap ? cap * 2 : 32) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		if (!(v[n] = strdup(e->d_name)))
			break;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, (size_t)n, sizeof(*v), name_cmp);
	*out = v;
	return n;
}

int hwt_pmc_pmu_events_list(const struct hwt_pmc_config *cfg, const char *pattern,
			    hwt_pmc_list_fn fn, void *ctx)
{
	static const char *const skip[] = {"software", "tracepoint", "breakpoint", "uprobe",
					   "kprobe",   "intel_pt",   "intel_bts"};
	char dir[4096], path[8192], text[256], name[600], desc[600];
	char **pmus;
	int npmus, ret = 0;

	if (hwt_pmc_sysfs_path(cfg, dir, sizeof(dir), "bus/event_source/devices") < 0)
		return 0;
	npmus = sorted_dir(dir, &pmus);
	for (int i = 0; i < npmus && !ret; i++) {
		char **evs = NULL, where[200] = "";
		bool skipped = false;
		int nevs;

		for (size_t k = 0; k < sizeof(skip) / sizeof(skip[0]); k++)
			skipped |= !strcmp(pmus[i], skip[k]);
		snprintf(path, sizeof(path), "%s/%s/events", dir, pmus[i]);
		nevs = skipped ? 0 : sorted_dir(path, &evs);
		snprintf(path, sizeof(path), "%s/%s/cpumask", dir, pmus[i]);
		if (hwt_pmc_read_text(path, text, sizeof(text)) > 0) {
			snprintf(where, sizeof(where),
				 "system PMU: CPU %.64s counts for its package", text);
		} else {
			snprintf(path, sizeof(path), "%s/%s/cpus", dir, pmus[i]);
			if (hwt_pmc_read_text(path, text, sizeof(text)) > 0)
				snprintf(where, sizeof(where), "core PMU of CPUs %.64s", text);
		}
		for (int k = 0; k < nevs && !ret; k++) {
			struct hwt_pmc_list_entry en;
			size_t l = strlen(evs[k]);

			if ((l > 6 && !strcmp(evs[k] + l - 6, ".scale")) ||
			    (l > 5 && !strcmp(evs[k] + l - 5, ".unit")) ||
			    (l > 9 && !strcmp(evs[k] + l - 9, ".snapshot")) ||
			    (l > 8 && !strcmp(evs[k] + l - 8, ".per-pkg")))
				continue;
			snprintf(name, sizeof(name), "%s/%s/", pmus[i], evs[k]);
			if (!hwt_pmc_match(name, pattern) &&
			    !(pattern && !strcasecmp(pattern, "pmu")))
				continue;
			snprintf(path, sizeof(path), "%s/%s/events/%s.unit", dir, pmus[i], evs[k]);
			if (hwt_pmc_read_text(path, text, sizeof(text)) > 0)
				snprintf(desc, sizeof(desc), "%s%sin %s", where,
					 where[0] ? "; " : "", text);
			else
				snprintf(desc, sizeof(desc), "%s", where);
			memset(&en, 0, sizeof(en));
			en.kind = HWT_PMC_LIST_KERNEL_PMU;
			en.name = name;
			en.desc = desc[0] ? desc : NULL;
			en.present = true;
			ret = fn(ctx, &en);
		}
		for (int k = 0; k < nevs; k++)
			free(evs[k]);
		free(evs);
	}
	for (int i = 0; i < npmus; i++)
		free(pmus[i]);
	free(pmus);
	return ret;
}
