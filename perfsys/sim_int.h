/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * perfsys/sim_int.h - the simulated PMU (HWT_PMU_SIM=MODEL): the models'
 * hardware facts that sysfs does not show, and the simulator's state.
 * Nothing outside perfsys/ sees it.
 */
#ifndef HWT_PERFSYS_SIM_INT_H
#define HWT_PERFSYS_SIM_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "perfsys/perfsys.h"

#define SIM_MAX_PMUS 6
#define SIM_MAX_CPUS 256

enum sim_kind {
	SIM_CORE = 1, /* a CPU's own counters (cpu, cpu_core, cpu_atom) */
	SIM_SYSTEM,   /* one per package, bound to its cpumask CPU */
	SIM_IBS,      /* AMD IBS: where precise cycles go */
};

/* Which CPUs a core PMU covers. */
enum sim_cpus {
	SIM_CPUS_ALL = 0,
	SIM_CPUS_FIRST_HALF, /* cpu_core */
	SIM_CPUS_SECOND_HALF /* cpu_atom */
};

struct sim_event_rate {
	uint64_t config; /* the PMU's own encoding (event | umask << 8) */
	double per_ns;	 /* counts per nanosecond of wall time */
};

struct sim_pmu_model {
	const char *name; /* as in sysfs */
	enum sim_kind kind;
	enum sim_cpus cpus;
	int ngp, nfixed; /* general and fixed counters per CPU */
	int max_precise; /* 0: no PEBS */
	bool lbr;	 /* branch stacks */
	double ghz, ipc; /* cycles per ns; instructions per cycle */
	/* System PMUs: their events' rates (the events are in sysfs). */
	struct sim_event_rate rates[4];
};

struct sim_model {
	const char *name; /* HWT_PMU_SIM value */
	const char *desc;
	bool intel; /* fixed counters, PEBS; else AMD (IBS) */
	struct sim_pmu_model pmus[SIM_MAX_PMUS];
};

/* The models, ended by a zeroed entry. */
extern const struct sim_model hwt_sim_models[];

/* One PMU of the running simulator. */
struct sim_pmu {
	const struct sim_pmu_model *m;
	uint32_t type;
	int first, last; /* core: the CPUs it covers; system: first = cpumask */
};

#define SIM_MAX_BACK 8

/* An event opened on a simulated PMU: the real software events behind it
 * (task-clock per task, cpu-clock per CPU) give its time and samples. */
struct sim_event {
	int fd; /* what the caller holds: back[0] */
	int back[SIM_MAX_BACK];
	int back_cpu[SIM_MAX_BACK];
	int nback;
	struct sim_pmu *pmu;
	int pid, cpu; /* cpu after the kernel moved it (system PMUs) */
	int leader;   /* fd of the group leader (its own for leaders) */
	int fixed;    /* fixed counter it uses (-1: a general one) */
	bool fixed_only;
	bool pinned, sampling;
	uint64_t read_format;
	double rate; /* counts per ns of running time */
	double priv; /* share of the counts in the levels asked for */
	uint64_t seq;
};

struct sim {
	const struct sim_model *model;
	struct hwt_psys_ops ops;
	char root[PATH_MAX]; /* temporary folder, removed at the end */
	char sysfs[PATH_MAX + 8], procfs[PATH_MAX + 8];
	struct sim_pmu pmus[SIM_MAX_PMUS];
	int npmus;
	int cpus[SIM_MAX_CPUS]; /* online CPUs */
	int ncpus;
	int paranoid;	   /* the level the simulated user meets */
	bool unprivileged; /* HWT_PMU_SIM_PARANOID set: not root */
	bool watchdog;	   /* the NMI watchdog holds a counter per CPU */
	struct sim_event *ev;
	size_t nev, cap;
	uint64_t seq;
};

/* Builds the machine's folder (sysfs and procfs) under s->root from the
 * fixture tree dir/<model>. 0 or -errno with a reason in errmsg. */
int hwt_sim_tree_build(struct sim *s, const char *dir, char *errmsg, size_t len);
/* Removes s->root and what is in it. */
void hwt_sim_tree_remove(struct sim *s);

#endif /* HWT_PERFSYS_SIM_INT_H */
