/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pmc/pmus.c - the PMUs of the machine as sysfs describes them, where that
 * changes how events are opened: the core PMUs of a hybrid CPU (cpu_core,
 * cpu_atom: each with a cpus file, each counting on its own CPUs only),
 * and CPU lists ("0-3,8").
 */
#include "pmc/pmc_int.h"

#include <dirent.h>
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
	char dir[4096], path[4096 + 64], text[64];
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
		snprintf(names[n], 32, "%s", e->d_name);
		snprintf(cpus[n], 64, "%s", text);
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
