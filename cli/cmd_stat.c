/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/cmd_stat.c - `hwtrace stat`: count events for a command, running
 * processes (-p) or the whole system (-a), in perf stat's layout (to
 * stderr, or -o FILE), with repeats (-r), interval output (-I) and CSV
 * (-x). Wiring only: collector/ provides the target, pmc/ the events,
 * counters and the output.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "collector/collector.h"
#include "perfsys/perfsys.h"
#include "pmc/pmc.h"

/* perf stat's default events; those the machine lacks show as not
 * supported instead of failing (on a VM: the hardware ones). */
static const char default_events[] =
    "task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,"
    "branches,branch-misses";
static const char default_events_system[] =
    "cpu-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,"
    "branches,branch-misses";

struct stat_opts {
	struct hwt_pmc_evlist *events;
	struct hwt_psys *psys; /* the perf system calls (NULL: the kernel) */
	bool user_events;
	bool group_not_counted; /* a group never ran: the NMI watchdog hint */
	unsigned long long repeat;
	unsigned long long interval_ms;
	const char *sep;
	int *pids;
	size_t npids;
	const char *pid_arg;
	bool system;
	const char *output;
	bool inherit;
	bool big_num;
	char **argv; /* the command, or NULL */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: hwtrace stat [-e EVENTS]... [-r N] [-I MS] [-x SEP] [-o FILE]\n"
		   "                    (-p PID[,PID...] | -a [-- COMMAND...] | [--] COMMAND...)\n"
		   "\n"
		   "Counts events for a command, running processes or the whole system, and\n"
		   "prints them as perf stat does (to stderr unless -o is given).\n"
		   "\n"
		   "  -e, --event EVENTS        events to count, comma-separated; groups as\n"
		   "                            {a,b}; see 'hwtrace list' (default: perf's set)\n"
		   "  -r, --repeat N            run the command N times: mean and +- noise\n"
		   "  -I, --interval-print MS   print the counts every MS milliseconds\n"
		   "  -x, --field-separator SEP CSV output with SEP between fields\n"
		   "  -p, --pid PID[,PID...]    count existing processes (all their threads)\n"
		   "  -a, --all-cpus            count the whole system (every online CPU)\n"
		   "  -o, --output FILE         write the counts to FILE\n"
		   "  -i, --no-inherit          do not count child threads and processes\n"
		   "      --no-big-num          no thousands separators\n"
		   "  -h, --help                show this help\n"
		   "\n"
		   "The exit status is the command's (127: not found, 128+N: killed by\n"
		   "signal N).\n");
	hwt_cli_help_end(f);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "'cmd arg ...'" / "process id '1,2'" / "'system wide'", as perf names it. */
static void describe_target(const struct stat_opts *o, char *buf, size_t len)
{
	size_t used = 0;

	if (o->system) {
		snprintf(buf, len, "'system wide'");
		return;
	}
	if (o->npids) {
		snprintf(buf, len, "process id '%s'", o->pid_arg);
		return;
	}
	used = (size_t)snprintf(buf, len, "'");
	for (char **a = o->argv; *a && used < len; a++)
		used +=
		    (size_t)snprintf(buf + used, len - used, "%s%s", a == o->argv ? "" : " ", *a);
	if (used < len)
		snprintf(buf + used, len - used, "'");
}

static int flush_buf(FILE *out, struct hwt_buf *buf, const char *path)
{
	if (buf->len && fwrite(buf->data, 1, buf->len, out) != buf->len) {
		hwt_cli_error("cannot write to '%s': %s; choose another file with -o",
			      path ? path : "stderr", strerror(errno));
		return -EIO;
	}
	buf->len = 0;
	fflush(out);
	return 0;
}

/* Exit code for a target that could not be set up. */
static int target_error_exit(int err, const char *msg)
{
	hwt_cli_error("%s", msg[0] ? msg : hwt_strerror(err));
	if (err == -ENOENT)
		return 127;
	if (err == -EACCES || err == -ENOEXEC)
		return 126;
	return HWT_EXIT_ERROR;
}

/* One run: set up the target, count, wait, and add to the aggregate. On
 * success returns 0 and *status is the command's (or 0); else an exit
 * code > 0 to return (the message is printed). */
static int run_once(struct stat_opts *o, struct hwt_pmc_stat *st, FILE *out, struct hwt_buf *buf,
		    int *status)
{
	struct hwt_coll_target_config tcfg;
	struct hwt_pmc_counters_config ccfg;
	struct hwt_coll_target *t = NULL;
	struct hwt_pmc_counters *ctr = NULL;
	struct hwt_pmc_count *counts = NULL, *prev = NULL, *delta = NULL;
	size_t nev = hwt_pmc_evlist_count(o->events);
	char msg[1024] = "";
	const int *tids = NULL, *cpus = NULL;
	size_t ntids = 0, ncpus = 0;
	double t0, tprev, tend, user_s, sys_s;
	unsigned interval_index = 0;
	int err, rc = HWT_EXIT_ERROR, w;

	*status = 0;
	counts = calloc(nev, sizeof(*counts));
	prev = calloc(nev, sizeof(*prev));
	delta = calloc(nev, sizeof(*delta));
	if (!counts || !prev || !delta) {
		hwt_cli_error("out of memory");
		goto out;
	}
	hwt_coll_target_config_init(&tcfg);
	tcfg.logger = *hwt_cli_logger();
	tcfg.errmsg = msg;
	tcfg.errmsg_len = sizeof(msg);
	tcfg.sysfs_root = hwt_cli_sysfs_root(o->psys);
	if ((err = hwt_coll_target_alloc(&t, &tcfg)) < 0) {
		hwt_cli_error("%s", hwt_strerror(err));
		goto out;
	}
	if (o->system && (err = hwt_coll_target_system(t)) < 0) {
		rc = target_error_exit(err, msg);
		goto out;
	}
	if (o->npids && (err = hwt_coll_target_attach(t, o->pids, o->npids)) < 0) {
		rc = target_error_exit(err, msg);
		goto out;
	}
	if (o->argv && (err = hwt_coll_target_launch(t, o->argv)) < 0) {
		rc = target_error_exit(err, msg);
		goto out;
	}

	hwt_pmc_counters_config_init(&ccfg);
	ccfg.logger = *hwt_cli_logger();
	ccfg.inherit = o->inherit;
	/* As perf stat: an event that cannot be opened is <not supported>,
	 * with its reason, and the others count. */
	ccfg.skip_unsupported = true;
	/* Test seam: the perf_event_paranoid file the explanations quote. */
	ccfg.paranoid_path = hwt_cli_paranoid_path(o->psys);
	ccfg.psys = o->psys;
	ccfg.errmsg = msg;
	ccfg.errmsg_len = sizeof(msg);
	if (o->system) {
		ncpus = hwt_coll_target_cpus(t, &cpus);
		/* -a -- cmd: count from the moment the command is released. */
		ccfg.start_disabled = true;
	} else {
		ntids = hwt_coll_target_threads(t, &tids);
		/* A launched command counts from its exec on, not our setup. */
		ccfg.enable_on_exec = o->argv != NULL;
	}
	err = hwt_pmc_counters_open(&ctr, o->events, tids, ntids, cpus, ncpus, &ccfg);
	if (err < 0) {
		hwt_cli_error("%s", msg[0] ? msg : hwt_strerror(err));
		goto out;
	}
	if (o->user_events) {
		for (size_t i = 0; i < nev; i++) {
			const char *why = hwt_pmc_counters_why(ctr, i);

			if (why[0])
				hwt_cli_warn("%s: <not supported>: %s",
					     hwt_pmc_evlist_event(o->events, i)->name, why);
		}
	}
	if (o->system && (err = hwt_pmc_counters_enable(ctr)) < 0) {
		hwt_cli_error("cannot enable the counters: %s", hwt_strerror(err));
		goto out;
	}
	t0 = now_s();
	if ((err = hwt_coll_target_start(t)) < 0) {
		rc = target_error_exit(err, msg);
		goto out;
	}
	tprev = t0;
	for (;;) {
		int timeout = -1;

		if (o->interval_ms) {
			double next =
			    t0 + (double)(interval_index + 1) * (double)o->interval_ms / 1e3;
			double left = next - now_s();

			timeout = left > 0 ? (int)(left * 1e3 + 0.5) : 0;
		}
		w = hwt_coll_target_wait(t, timeout);
		if (w < 0) {
			hwt_cli_error("waiting for the target failed: %s", hwt_strerror(w));
			goto out;
		}
		if (w != HWT_COLL_WAIT_TIMEOUT && !o->interval_ms)
			break;
		if (o->interval_ms) {
			double tnow = now_s();

			/* The last, partial interval is printed too, as perf does. */
			if ((err = hwt_pmc_counters_read(ctr, counts, nev)) < 0) {
				hwt_cli_error("cannot read the counters: %s", hwt_strerror(err));
				goto out;
			}
			for (size_t i = 0; i < nev; i++)
				hwt_pmc_count_delta(&counts[i], &prev[i], &delta[i]);
			if (w == HWT_COLL_WAIT_TIMEOUT || tnow - tprev > 1e-4) {
				err = hwt_pmc_stat_print_interval(
				    st, delta, nev, tnow - t0, tnow - tprev, interval_index, buf);
				if (err < 0 || flush_buf(out, buf, o->output) < 0)
					goto out;
			}
			memcpy(prev, counts, nev * sizeof(*counts));
			tprev = tnow;
			interval_index++;
			if (w != HWT_COLL_WAIT_TIMEOUT)
				break;
		}
	}
	/* The elapsed time ends before the counters are read, as it starts
	 * after they are enabled (as perf's): what they counted covers it
	 * however long this process waits for a CPU in between (-a on a
	 * loaded machine: every CPU's cpu-clock is at least the time). */
	tend = now_s();
	if ((err = hwt_pmc_counters_read(ctr, counts, nev)) < 0) {
		hwt_cli_error("cannot read the counters: %s", hwt_strerror(err));
		goto out;
	}
	for (size_t i = 0; i < nev; i++) {
		const struct hwt_pmc_event *ev = hwt_pmc_evlist_event(o->events, i);
		const struct hwt_pmc_event *l = hwt_pmc_evlist_event(o->events, (size_t)ev->leader);

		if ((counts[i].flags & HWT_PMC_COUNT_NOT_COUNTED) && l->nr_members > 1)
			o->group_not_counted = true;
	}
	hwt_coll_target_rusage(t, &user_s, &sys_s);
	hwt_pmc_stat_add_run(st, counts, nev, tend - t0, user_s, sys_s);
	if (hwt_coll_target_exit_status(t) >= 0)
		*status = hwt_coll_target_exit_status(t);
	rc = 0;
out:
	hwt_pmc_counters_close(ctr);
	hwt_coll_target_free(t);
	free(counts);
	free(prev);
	free(delta);
	return rc;
}

int hwt_cmd_stat(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"event", required_argument, NULL, 'e'},
	    {"repeat", required_argument, NULL, 'r'},
	    {"interval-print", required_argument, NULL, 'I'},
	    {"field-separator", required_argument, NULL, 'x'},
	    {"pid", required_argument, NULL, 'p'},
	    {"all-cpus", no_argument, NULL, 'a'},
	    {"output", required_argument, NULL, 'o'},
	    {"no-inherit", no_argument, NULL, 'i'},
	    {"no-big-num", no_argument, NULL, 'B'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct stat_opts o;
	struct hwt_pmc_config pcfg;
	struct hwt_pmc_stat_config scfg;
	struct hwt_pmc_stat *st = NULL;
	struct hwt_buf buf;
	char target[1024];
	FILE *out = stderr;
	int c, err, rc = HWT_EXIT_ERROR, status = 0;

	memset(&o, 0, sizeof(o));
	o.repeat = 1;
	o.inherit = true;
	o.big_num = true;
	hwt_buf_init(&buf);
	if (hwt_cli_psys_open(&o.psys) != HWT_EXIT_OK)
		return HWT_EXIT_ERROR;
	hwt_pmc_config_init(&pcfg);
	pcfg.logger = *hwt_cli_logger();
	pcfg.sysfs_root = hwt_cli_sysfs_root(o.psys);
	pcfg.psys = o.psys;
	pcfg.tracefs_root = getenv("HWT_TRACEFS_ROOT");
	if ((err = hwt_pmc_evlist_alloc(&o.events, &pcfg)) < 0) {
		hwt_cli_error("%s", hwt_strerror(err));
		hwt_psys_free(o.psys);
		return HWT_EXIT_ERROR;
	}

	optind = 1;
	/* '+': options end at the command's name, as with perf. */
	while ((c = getopt_long(argc, argv, "+e:r:I:x:p:ao:ih", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			err = hwt_pmc_evlist_add(o.events, optarg);
			if (err < 0) {
				hwt_cli_error("%s", hwt_pmc_evlist_errmsg(o.events));
				goto out;
			}
			o.user_events = true;
			break;
		case 'r':
			if (hwt_cli_parse_u64(optarg, false, &o.repeat) < 0 || !o.repeat ||
			    o.repeat > 100000) {
				rc = hwt_cli_usage_error(
				    "stat", "-r wants a count from 1 to 100000, not '%s'", optarg);
				goto out;
			}
			break;
		case 'I':
			if (hwt_cli_parse_u64(optarg, false, &o.interval_ms) < 0 ||
			    o.interval_ms < 10 || o.interval_ms > 86400000) {
				rc = hwt_cli_usage_error(
				    "stat", "-I wants milliseconds from 10 up, not '%s'", optarg);
				goto out;
			}
			break;
		case 'x':
			if (!*optarg) {
				rc = hwt_cli_usage_error("stat", "-x wants a separator");
				goto out;
			}
			o.sep = optarg;
			break;
		case 'p':
			if (hwt_cli_parse_ids(optarg, 1, &o.pids, &o.npids) < 0) {
				rc = hwt_cli_usage_error("stat", "-p wants PID[,PID...], not '%s'",
							 optarg);
				goto out;
			}
			o.pid_arg = optarg;
			break;
		case 'a':
			o.system = true;
			break;
		case 'o':
			o.output = optarg;
			break;
		case 'i':
			o.inherit = false;
			break;
		case 'B':
			o.big_num = false;
			break;
		case 'h':
			usage(stdout);
			rc = HWT_EXIT_OK;
			goto out;
		default:
			rc = hwt_cli_usage_error("stat", "unknown option");
			goto out;
		}
	}
	if (optind < argc)
		o.argv = argv + optind;
	if (o.system && o.npids) {
		rc = hwt_cli_usage_error("stat", "-a and -p exclude each other");
		goto out;
	}
	if (o.npids && o.argv) {
		rc = hwt_cli_usage_error("stat", "give either -p or a command, not both");
		goto out;
	}
	if (!o.system && !o.npids && !o.argv) {
		rc = hwt_cli_usage_error("stat", "nothing to count: give a command, -p PID or -a");
		goto out;
	}
	if (o.repeat > 1 && !o.argv) {
		rc = hwt_cli_usage_error("stat", "-r repeats a command: give one");
		goto out;
	}
	if (o.repeat > 1 && o.interval_ms) {
		rc = hwt_cli_usage_error("stat", "-r and -I exclude each other");
		goto out;
	}
	if (!o.user_events) {
		err =
		    hwt_pmc_evlist_add(o.events, o.system ? default_events_system : default_events);
		if (err < 0) {
			hwt_cli_error("%s", hwt_pmc_evlist_errmsg(o.events));
			goto out;
		}
	}
	/* Open the output first: a bad path fails before anything runs. */
	if (o.output) {
		out = fopen(o.output, "w");
		if (!out) {
			hwt_cli_error("cannot write '%s': %s; choose a writable path with -o",
				      o.output, strerror(errno));
			out = stderr;
			goto out;
		}
	}
	describe_target(&o, target, sizeof(target));
	hwt_pmc_stat_config_init(&scfg);
	scfg.csv_sep = o.sep;
	scfg.big_num = o.big_num;
	scfg.show_user_sys = o.argv && !o.system && o.repeat == 1;
	scfg.target = target;
	scfg.runs = (unsigned)o.repeat;
	if ((err = hwt_pmc_stat_alloc(&st, o.events, &scfg)) < 0) {
		hwt_cli_error("%s", hwt_strerror(err));
		goto out;
	}
	for (unsigned long long r = 0; r < o.repeat; r++) {
		rc = run_once(&o, st, out, &buf, &status);
		if (rc)
			goto out;
	}
	if (!o.interval_ms) {
		if (hwt_pmc_stat_print(st, &buf) < 0) {
			hwt_cli_error("out of memory");
			rc = HWT_EXIT_ERROR;
			goto out;
		}
		if (flush_buf(out, &buf, o.output) < 0) {
			rc = HWT_EXIT_ERROR;
			goto out;
		}
	}
	/* perf's hint: the watchdog's pinned cycles event holds a counter on
	 * every CPU, which a full group then lacks. */
	if (o.group_not_counted && !o.sep &&
	    hwt_pmc_nmi_watchdog(hwt_psys_procfs_root(o.psys)) == 1)
		fprintf(out, "Some events weren't counted. Try disabling the NMI watchdog:\n"
			     "\techo 0 > /proc/sys/kernel/nmi_watchdog\n"
			     "\thwtrace stat ...\n"
			     "\techo 1 > /proc/sys/kernel/nmi_watchdog\n");
	rc = status;
out:
	if (out != stderr && fclose(out) != 0 && rc == 0) {
		hwt_cli_error("cannot write '%s': %s; choose a writable path with -o", o.output,
			      strerror(errno));
		rc = HWT_EXIT_ERROR;
	}
	hwt_buf_fini(&buf);
	hwt_pmc_stat_free(st);
	hwt_pmc_evlist_free(o.events);
	hwt_psys_free(o.psys);
	free(o.pids);
	return rc;
}
