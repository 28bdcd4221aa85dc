/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pmc/pmc.h - performance counter events: names to perf_event_attr, groups,
 * counting with multiplex scaling, perf-stat style aggregation and output,
 * and event listing. This header is the whole contract of the pmc module.
 *
 * Event specs (the argument of -e) understood by hwt_pmc_evlist_add():
 *
 *   cycles, instructions, branch-misses, task-clock, page-faults, ...
 *                              perf's generic names, with perf's modifiers
 *                              after a colon: u k h H G I D p pp ppp P S W e b
 *                              (on a hybrid machine, one event per core PMU:
 *                              cpu_core/cycles/, cpu_atom/cycles/)
 *   L1-dcache-load-misses      perf's generic cache events
 *   r1a8, r5300c0:u            raw PMU config (hex), with perf's modifiers
 *   INST_RETIRED:ANY_P:c=2:e   a libpfm4 event of the host's PMU(s), with
 *   icx::BR_MISP_RETIRED:ALL_BRANCHES:u   libpfm4's modifiers (u k c= e i ...)
 *   sched:sched_switch         a tracepoint (id read from tracefs)
 *   software/config=3/         a sysfs PMU with terms from its format/ folder;
 *   power/energy-pkg/          a named event of its events/ folder, with its
 *                              .scale and .unit (system PMUs count on their
 *                              cpumask CPUs only)
 *   {cycles,instructions}:u    a group: members are scheduled together; a
 *                              modifier after the brace applies to all
 *
 * Items are separated by commas outside braces. libpfm4 is initialised once
 * per process (thread-safe); LIBPFM_FORCE_PMU (read by libpfm4 at that
 * moment) makes it encode for another CPU model.
 *
 * Usage, counting:
 *
 *   struct hwt_pmc_config cfg;
 *   hwt_pmc_config_init(&cfg);
 *   err = hwt_pmc_evlist_alloc(&list, &cfg);
 *   err = hwt_pmc_evlist_add(list, "task-clock,page-faults");   // or error:
 *       hwt_pmc_evlist_errmsg(list) says why, with the closest known names
 *   struct hwt_pmc_counters_config ccfg;
 *   hwt_pmc_counters_config_init(&ccfg);
 *   err = hwt_pmc_counters_open(&ctr, list, tids, ntids, NULL, 0, &ccfg);
 *   ... the target runs (enable_on_exec) or hwt_pmc_counters_enable() ...
 *   err = hwt_pmc_counters_read(ctr, counts, n);    // scaled, per event
 *   hwt_pmc_counters_close(ctr);
 *   hwt_pmc_evlist_free(list);
 */
#ifndef HWT_PMC_PMC_H
#define HWT_PMC_PMC_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hwt.h"
#include "perfsys/perfsys.h"

#define HWT_PMC_NAME_MAX 256

/* ------------------------------------------------------------------------ */
/* Configuration shared by the event parser and the lister                  */

struct hwt_pmc_config {
	size_t size;		  /* sizeof(struct hwt_pmc_config) */
	struct hwt_logger logger; /* diagnostics; may have no fn */
	/* Root of sysfs (NULL: "/sys"): PMU types, formats, Intel PT caps.
	 * Tests point it at a fake tree. The string must outlive the user. */
	const char *sysfs_root;
	/* tracefs mount point (NULL: /sys/kernel/tracing, then
	 * /sys/kernel/debug/tracing; mounted at the first when neither is and
	 * we may mount). The string must outlive the user. */
	const char *tracefs_root;
	/* The perf system calls (NULL: the kernel); outlives the user. */
	struct hwt_psys *psys;
};

/* Zeroes cfg and sets its size. */
HWT_API void hwt_pmc_config_init(struct hwt_pmc_config *cfg);

/* ------------------------------------------------------------------------ */
/* Events and event lists                                                   */

/* Where an event's encoding came from. */
enum hwt_pmc_source {
	HWT_PMC_SRC_GENERIC = 1,    /* perf generic name (hardware/software/cache) */
	HWT_PMC_SRC_RAW = 2,	    /* rNNNN */
	HWT_PMC_SRC_PFM = 3,	    /* libpfm4 event table */
	HWT_PMC_SRC_TRACEPOINT = 4, /* subsys:event */
	HWT_PMC_SRC_SYSFS = 5,	    /* pmu/terms/ through sysfs */
};

struct hwt_pmc_event {
	char name[HWT_PMC_NAME_MAX];  /* as the user wrote it: "cycles:u" */
	char canon[HWT_PMC_NAME_MAX]; /* fully qualified: libpfm4's string with
				       * every modifier, "sched:sched_switch", or
				       * the generic name */
	struct perf_event_attr attr;  /* ready for perf_event_open (size set,
				       * read_format not yet) */
	uint32_t source;	      /* enum hwt_pmc_source */
	int leader;		      /* index of the group leader in the list;
				       * its own index for leaders and singletons */
	uint32_t nr_members;	      /* group size on the leader (1 if alone),
				       * 0 on other members */
	bool user_mods;		      /* the user gave u/k/h modifiers: never
				       * change exclude_* behind their back */
	const char *unit;	      /* "msec" for clock events, sysfs's .unit
				       * ("Joules", "MiB"), "" otherwise; owned
				       * by the list */
	double scale;		      /* display = count * scale (1e-6 for ns) */
	/* The CPUs the event's PMU counts on ("0-7", sysfs cpus or cpumask),
	 * "" for every CPU. */
	char pmu_cpus[64];
	char pmu[32];	  /* the PMU it was bound to ("cpu_core"), or "" */
	bool system_pmu;  /* an uncore/RAPL-like PMU: CPU-wide only, on its
			   * cpumask CPUs (per package) */
	bool precise_max; /* :P: the highest precise level that opens */
	bool sample_read; /* :S on a group: the leader samples, members are
			   * read into its samples */
	bool weak_group;  /* :W: open the members alone if the group fails */
};

/* Whether ev counts on CPU cpu (its PMU's cpus/cpumask; -1: any). */
HWT_API bool hwt_pmc_event_on_cpu(const struct hwt_pmc_event *ev, int cpu);

/* On a hybrid CPU (cfg's sysfs), binds a generic, cache or raw hardware
 * attribute to the core PMU that counts on cpu (cpu >= 0), or to the k-th
 * core PMU (cpu -1). Returns the number of core PMUs, 0 on other machines
 * or for other events (a unchanged), -ENOENT when no PMU covers cpu. */
HWT_API int hwt_pmc_hybrid_bind(const struct hwt_pmc_config *cfg, struct perf_event_attr *a,
				int cpu, int k);

struct hwt_pmc_evlist;

/* Allocates an empty list. cfg may be NULL (defaults); it is copied.
 * Returns 0, -ENOMEM, or -HWT_EINVAL (bad cfg size). */
HWT_API int hwt_pmc_evlist_alloc(struct hwt_pmc_evlist **out, const struct hwt_pmc_config *cfg);
/* Frees the list (NULL is fine). */
HWT_API void hwt_pmc_evlist_free(struct hwt_pmc_evlist *list);

/* Parses spec (see the top of this file) and appends its events. Returns the
 * number of events added, or:
 *   -HWT_EPARSE   syntax error (unbalanced braces, empty item, bad modifier)
 *   -HWT_ENOEVENT an unknown name; the message lists the closest names
 *   -HWT_ENOTSUP  a known kind that cannot be used here (no tracefs, ...)
 *   -HWT_ETOOBIG  more than 4096 events
 *   -ENOMEM
 * On error nothing is appended and hwt_pmc_evlist_errmsg() explains it. */
HWT_API int hwt_pmc_evlist_add(struct hwt_pmc_evlist *list, const char *spec);

/* The message of the last failed hwt_pmc_evlist_add() ("" if none). Valid
 * until the next call on the list. */
HWT_API const char *hwt_pmc_evlist_errmsg(const struct hwt_pmc_evlist *list);

HWT_API size_t hwt_pmc_evlist_count(const struct hwt_pmc_evlist *list);
/* Event i (< count), owned by the list; NULL when out of range. */
HWT_API const struct hwt_pmc_event *hwt_pmc_evlist_event(const struct hwt_pmc_evlist *list,
							 size_t i);
/* The attribute of event i for callers that tune it before opening
 * (sample_period, sample_type, ...). NULL when out of range. */
HWT_API struct perf_event_attr *hwt_pmc_evlist_attr(struct hwt_pmc_evlist *list, size_t i);

/* Up to max known event names closest to name (edit distance), best first,
 * joined by ", " into buf (always NUL-terminated). Tracepoints are
 * considered when name has a single colon and cfg is not NULL (tracefs).
 * Returns how many. */
HWT_API int hwt_pmc_suggest(const struct hwt_pmc_config *cfg, const char *name, char *buf,
			    size_t len, int max);

/* ------------------------------------------------------------------------ */
/* Sampling attributes (perf record's)                                      */

/* Event i of a group with :S: the leader's samples read every member
 * (PERF_SAMPLE_READ, PERF_FORMAT_GROUP|ID), members do not sample, and
 * nothing inherits (the kernel refuses PERF_SAMPLE_READ with inherit).
 * Leaves other events' a unchanged. */
HWT_API void hwt_pmc_sample_group_attr(const struct hwt_pmc_evlist *list, size_t i,
				       struct perf_event_attr *a);
/* LBR call stacks as perf asks for them (user, call stack, no cycles, no
 * flags, hw index). Returns false, a unchanged, for an event that excludes
 * user space: LBR call stacks are user-space only, use frame pointers. */
HWT_API bool hwt_pmc_lbr_attr(struct perf_event_attr *a);
/* Drops the branch flags older kernels lack (no cycles, no flags, hw
 * index). Returns false when there was nothing to drop. */
HWT_API bool hwt_pmc_lbr_attr_older(struct perf_event_attr *a);

/* ------------------------------------------------------------------------ */
/* perf_event_paranoid and open errors                                      */

/* Reads the perf_event_paranoid level from path (NULL:
 * /proc/sys/kernel/perf_event_paranoid) into *level. Returns 0, -errno, or
 * -HWT_EFORMAT when the file holds no number. */
HWT_API int hwt_pmc_paranoid_read(const char *path, int *level);

/* What perf_event_open needs from perf_event_paranoid for attr on
 * (pid, cpu): -1 for raw tracepoint samples on CPUs, 0 for CPU-wide events,
 * 1 for kernel-space counting, 2 for user-space-only per-process events. */
HWT_API int hwt_pmc_paranoid_needed(const struct perf_event_attr *attr, int pid, int cpu);

/* Formats a one-line explanation, with the fix, of a perf_event_open
 * failure (err: negative errno) for event ev on (pid, cpu), given the
 * paranoid level (INT_MIN when unknown) and the number of descriptors
 * needed (0 when unknown). Always NUL-terminates buf. */
HWT_API void hwt_pmc_explain_open_error(char *buf, size_t len, int err,
					const struct hwt_pmc_event *ev, int pid, int cpu,
					int paranoid, size_t fds_needed);

/* The same with what the explanation can use besides: the attribute as it
 * was last tried (after fallbacks), the machine's sysfs and procfs (a
 * simulated one's; NULL: the real ones) to tell a VM without a virtual PMU
 * from bare metal, a hybrid CPU, system PMUs and AMD IBS apart, and what
 * the caller does ("count", "sample", "trace"). */
struct hwt_pmc_open_error {
	size_t size; /* sizeof(struct hwt_pmc_open_error) */
	int err;     /* negative errno of perf_event_open */
	const struct hwt_pmc_event *ev;
	const struct perf_event_attr *attr; /* NULL: ev's */
	int pid, cpu;
	int paranoid;	   /* INT_MIN: unknown */
	size_t fds_needed; /* 0: unknown */
	const char *sysfs_root, *procfs_root;
	const char *verb; /* NULL: "count" */
};
HWT_API void hwt_pmc_explain(char *buf, size_t len, const struct hwt_pmc_open_error *oe);

/* The NMI watchdog's state from procfs_root (NULL: /proc): 1 on (it holds
 * a counter on every CPU), 0 off, or -errno. */
HWT_API int hwt_pmc_nmi_watchdog(const char *procfs_root);

/* ------------------------------------------------------------------------ */
/* Counting                                                                 */

struct hwt_pmc_counters_config {
	size_t size; /* sizeof(struct hwt_pmc_counters_config) */
	struct hwt_logger logger;
	bool inherit;	       /* count threads/processes the target creates */
	bool enable_on_exec;   /* start at the target's next exec (launch) */
	bool start_disabled;   /* open disabled; hwt_pmc_counters_enable() */
	bool skip_unsupported; /* an event that cannot be opened (EINVAL,
				* ENOENT, EOPNOTSUPP, ENXIO, ENODEV, or a
				* system PMU asked for a task) is reported as
				* not supported, with its reason
				* (hwt_pmc_counters_why), and the others count,
				* as perf stat does; else the open fails */
	/* perf_event_paranoid file (NULL: the real one); a test seam. */
	const char *paranoid_path;
	/* The perf system calls (NULL: the kernel); outlives the counters. */
	struct hwt_psys *psys;
	/* On failure a one-line explanation with the fix goes here (optional). */
	char *errmsg;
	size_t errmsg_len;
};

/* Zeroes cfg, sets its size, inherit = true. */
HWT_API void hwt_pmc_counters_config_init(struct hwt_pmc_counters_config *cfg);

/* Count status flags. */
#define HWT_PMC_COUNT_NOT_SUPPORTED (1u << 0) /* the event could not be opened */
#define HWT_PMC_COUNT_NOT_COUNTED   (1u << 1) /* opened but never ran */
#define HWT_PMC_COUNT_USER_ONLY	    (1u << 2) /* kernel excluded by paranoid */
#define HWT_PMC_COUNT_SCALED	    (1u << 3) /* ran part of the time: scaled */

/* One event's count, summed over the CPUs and threads it was opened on. */
struct hwt_pmc_count {
	uint64_t value;	  /* raw count */
	uint64_t enabled; /* ns the event was enabled (time_enabled) */
	uint64_t running; /* ns it was on the PMU (time_running) */
	double scaled;	  /* value * enabled / running: the estimate for the
			   * whole enabled time; value when running == enabled */
	uint32_t flags;	  /* HWT_PMC_COUNT_* */
};

/* Fills scaled and the SCALED/NOT_COUNTED flags from value, enabled and
 * running (pure; perf stat's rule). */
HWT_API void hwt_pmc_count_scale(struct hwt_pmc_count *c);

/* out = now - prev (value, enabled, running), then scaled. For interval
 * output. Flags other than SCALED/NOT_COUNTED are taken from now. */
HWT_API void hwt_pmc_count_delta(const struct hwt_pmc_count *now, const struct hwt_pmc_count *prev,
				 struct hwt_pmc_count *out);

struct hwt_pmc_counters;

/* Opens every event of list on every (cpu, thread) pair: cpus == NULL (or
 * ncpus == 0) means any CPU (-1), tids == NULL means all tasks (-1); at least
 * one of them must be given. Groups are opened with their leader per pair.
 * The list must outlive the counters.
 * A thread that exits while we open is skipped (only if some remain).
 * Returns 0 or, with cfg->errmsg filled:
 *   -EACCES/-EPERM  perf_event_paranoid or capabilities forbid it
 *   -HWT_ENOTSUP    an event is not supported here (unless skip_unsupported)
 *   -ESRCH          every target thread is gone
 *   -EMFILE         too many open files (after raising the soft limit)
 *   -HWT_EINVAL     no targets, or a bad cfg
 *   other -errno    from perf_event_open, -ENOMEM */
HWT_API int hwt_pmc_counters_open(struct hwt_pmc_counters **out, const struct hwt_pmc_evlist *list,
				  const int *tids, size_t ntids, const int *cpus, size_t ncpus,
				  const struct hwt_pmc_counters_config *cfg);
/* Closes every descriptor and frees (NULL is fine). */
HWT_API void hwt_pmc_counters_close(struct hwt_pmc_counters *ctr);

/* Enable / disable all counters (ioctl on every group leader). 0 or -errno. */
HWT_API int hwt_pmc_counters_enable(struct hwt_pmc_counters *ctr);
HWT_API int hwt_pmc_counters_disable(struct hwt_pmc_counters *ctr);

/* Reads every event into counts[0..n) (n must be the list's count),
 * summed over its CPUs and threads, then scaled. Allocates nothing.
 * Returns 0, -HWT_EINVAL (n too small), or -errno from read(). */
HWT_API int hwt_pmc_counters_read(struct hwt_pmc_counters *ctr, struct hwt_pmc_count *counts,
				  size_t n);

/* The descriptor of event ev on (cpu index, thread index), or -1 when that
 * one is not open (not supported, thread gone). Owned by the counters. */
HWT_API int hwt_pmc_counters_fd(const struct hwt_pmc_counters *ctr, size_t ev, size_t cpu_idx,
				size_t thread_idx);
/* Number of descriptors open. */
HWT_API size_t hwt_pmc_counters_nr_fds(const struct hwt_pmc_counters *ctr);

/* Why event ev is not supported (one line naming the cause and the fix),
 * or "" when it is. Owned by the counters. */
HWT_API const char *hwt_pmc_counters_why(const struct hwt_pmc_counters *ctr, size_t ev);

/* ------------------------------------------------------------------------ */
/* perf-stat style aggregation and output                                   */

struct hwt_pmc_stat_config {
	size_t size;	     /* sizeof(struct hwt_pmc_stat_config) */
	const char *csv_sep; /* NULL: the aligned table; else CSV with this
			      * separator (perf's -x), fields as perf prints */
	bool big_num;	     /* thousands separators in the table */
	char thousands_sep;  /* the separator (0: ',') */
	bool show_user_sys;  /* print user/sys seconds (a launched command) */
	const char *target;  /* "'cmd args'", "process id '12'", "'system wide'" */
	unsigned runs;	     /* planned runs (-r), for the header */
};

HWT_API void hwt_pmc_stat_config_init(struct hwt_pmc_stat_config *cfg);

struct hwt_pmc_stat;

/* Allocates an aggregator for the events of list (which must outlive it).
 * cfg is copied, its strings must outlive the aggregator. 0, -ENOMEM,
 * -HWT_EINVAL. */
HWT_API int hwt_pmc_stat_alloc(struct hwt_pmc_stat **out, const struct hwt_pmc_evlist *list,
			       const struct hwt_pmc_stat_config *cfg);
HWT_API void hwt_pmc_stat_free(struct hwt_pmc_stat *st);

/* Adds one run's counts (n = the list's count) with its wall, user and sys
 * seconds. Mean and standard deviation are kept per event. 0 or -HWT_EINVAL. */
HWT_API int hwt_pmc_stat_add_run(struct hwt_pmc_stat *st, const struct hwt_pmc_count *counts,
				 size_t n, double wall_s, double user_s, double sys_s);

/* Appends the summary (perf stat's layout: header, one line per event with
 * unit, derived metric after '#', noise with -r, multiplexing percentage,
 * elapsed/user/sys) to out. 0 or -ENOMEM. */
HWT_API int hwt_pmc_stat_print(const struct hwt_pmc_stat *st, struct hwt_buf *out);

/* Appends one interval's lines: counts are the deltas for the interval that
 * ends ts seconds after the start and lasted len_s seconds. index is the
 * interval number (0-based): the column header is printed every 25. */
HWT_API int hwt_pmc_stat_print_interval(const struct hwt_pmc_stat *st,
					const struct hwt_pmc_count *counts, size_t n, double ts,
					double len_s, unsigned index, struct hwt_buf *out);

/* ------------------------------------------------------------------------ */
/* Listing                                                                  */

enum hwt_pmc_list_kind {
	HWT_PMC_LIST_HARDWARE = 1, /* generic hardware events */
	HWT_PMC_LIST_SOFTWARE,	   /* generic software events */
	HWT_PMC_LIST_CACHE,	   /* generic hardware cache events */
	HWT_PMC_LIST_PMU,	   /* a libpfm4 PMU (name, desc) before its events */
	HWT_PMC_LIST_PFM,	   /* a libpfm4 event */
	HWT_PMC_LIST_PFM_UMASK,	   /* a unit mask or modifier of the event above */
	HWT_PMC_LIST_TRACEPOINT,   /* subsys:event */
	HWT_PMC_LIST_DYNAMIC_PMU,  /* uprobe / kprobe PMU (desc says present or not) */
	HWT_PMC_LIST_PT,	   /* Intel PT: present or not, and capabilities */
	HWT_PMC_LIST_KERNEL_PMU,   /* pmu/event/ of a sysfs PMU's events folder
				    * (cpu_core/cpu-cycles/, power/energy-pkg/);
				    * desc: its CPUs and unit */
};

struct hwt_pmc_list_entry {
	uint32_t kind;	   /* enum hwt_pmc_list_kind */
	const char *name;  /* "cycles", "icx::INST_RETIRED", "sched:sched_switch" */
	const char *alias; /* another name ("cpu-cycles"), or NULL */
	const char *desc;  /* description, or NULL; for a generic hardware
			    * or cache event that is not present, why */
	bool present;	   /* exists on this machine: for PMU kinds, from
			    * sysfs; a generic hardware or cache event was
			    * opened once with perf_event_open (user space,
			    * counting) */
};

/* Calls fn for every known event whose name (or alias, or PMU name) contains
 * pattern (case-insensitive substring; NULL: all), in this order: hardware,
 * software, cache, libpfm4 PMUs with their events and umasks, tracepoints,
 * uprobe/kprobe PMUs, Intel PT. Each generic hardware and cache event is
 * opened once (through cfg->psys) to tell whether this machine has it.
 * Entry strings are valid during the call
 * only. Stops when fn returns non-zero and returns that value; else 0, or
 * a negative error (-ENOMEM, -HWT_ELIB). cfg may be NULL. */
typedef int (*hwt_pmc_list_fn)(void *ctx, const struct hwt_pmc_list_entry *entry);
HWT_API int hwt_pmc_list(const struct hwt_pmc_config *cfg, const char *pattern, hwt_pmc_list_fn fn,
			 void *ctx);

/* Intel PT on this machine, from sysfs (cfg->sysfs_root):
 * /sys/bus/event_source/devices/intel_pt/{type,caps/ *}. */
struct hwt_pmc_pt_info {
	bool present;
	uint32_t type;	 /* PMU type for perf_event_attr.type */
	char caps[1024]; /* "name=value" pairs joined by spaces */
};
/* Fills info. Returns 0 (also when PT is absent: present = false). */
HWT_API int hwt_pmc_pt_info(const struct hwt_pmc_config *cfg, struct hwt_pmc_pt_info *info);

/* The perf_event_attr.type of a sysfs PMU ("software", "uprobe", ...).
 * Returns the type (>= 0), -ENOENT when absent, -HWT_EFORMAT. */
HWT_API int hwt_pmc_pmu_type(const struct hwt_pmc_config *cfg, const char *pmu);

#endif /* HWT_PMC_PMC_H */
