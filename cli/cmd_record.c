/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/cmd_record.c - `hwtrace record`: samples (or Intel PT) of a command,
 * of running processes or of the whole system, into a .hwt container.
 * One option parser serves all three recorders: sampling and real PT
 * (collector's hwt_coll_rec_*) and the PT emulator (hwt_ptemu_record), so
 * -o, -q and -- mean the same everywhere.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "collector/collector.h"
#include "perfsys/perfsys.h"

struct rec_opts {
	struct hwt_psys *psys; /* the perf system calls (NULL: the kernel) */
	const char *output;
	bool quiet;
	char *events; /* -e items joined by commas (owned) */
	unsigned long long period, freq;
	bool freq_max;
	enum hwt_coll_callgraph callgraph;
	uint32_t stack_user; /* --call-graph dwarf,SIZE */
	const char *pids;
	bool all_cpus;
	bool switch_events, per_thread, no_inherit;
	unsigned long long mmap_bytes, aux_bytes;
	int level;
	bool pt; /* --pt or -e intel_pt// */
	const char *pt_spec;
	bool emulate; /* --pt=emulate[,TERMS] */
	const char *emu_terms;
	bool snapshot;
	const char *filter;
	const char *control; /* --control fifo:CTL[,ACK] */
	char **argv;	     /* the command, NULL if none */
	char *cmdline;	     /* hwtrace's own command line (owned) */
	char *target;	     /* the command as one string (owned) */
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: hwtrace record [-e EVENTS] [-c N | -F HZ] [-g] [-o FILE]\n"
	    "                      (-p PID[,PID...] | -a [-- CMD...] | [--] CMD [ARGS...])\n"
	    "       hwtrace record --pt[=TERMS] [-S] [--filter F] [-o FILE] (-p PID | -a | -- "
	    "CMD)\n"
	    "       hwtrace record --pt=emulate[,TERMS] [--filter F] [-o FILE] -- CMD "
	    "[ARGS...]\n"
	    "\n"
	    "Samples a command, running processes or the whole system with perf_event_open\n"
	    "into FILE (default hwtrace.hwt; an existing one becomes hwtrace.hwt.old).\n"
	    "Read it with 'hwtrace script' and 'hwtrace info'. See docs/record.md.\n"
	    "\n"
	    "  -e, --event EVENTS      events to sample (default: cycles, or cpu-clock\n"
	    "                          where there are no hardware counters); see\n"
	    "                          'hwtrace list'\n"
	    "  -c, --count N           one sample every N events\n"
	    "  -F, --freq HZ|max       N samples a second (default 4000; max: the\n"
	    "                          kernel's perf_event_max_sample_rate)\n"
	    "  -g                      call chains (frame pointers, user and kernel)\n"
	    "      --call-graph MODE   fp (as -g: frame pointers), dwarf[,SIZE] (user registers\n"
	    "                          and SIZE bytes of stack, default 8192, unwound from\n"
	    "                          the CFI when read: code without frame pointers) or\n"
	    "                          lbr (Intel LBR call stacks)\n"
	    "  -p, --pid PID[,PID]     attach to processes (all their threads)\n"
	    "  -a, --all-cpus          the whole system, until CMD ends or ^C\n"
	    "  -o, --output FILE       output file (default hwtrace.hwt)\n"
	    "  -m, --mmap-pages N[,AUX] ring buffer per CPU or thread: pages, or a size\n"
	    "                          with a unit (512K, 4M); AUX: the PT area\n"
	    "      --switch-events     record context switches\n"
	    "      --per-thread        one buffer per thread (no inheritance)\n"
	    "  -i, --no-inherit        do not follow new threads and processes\n"
	    "  -z, --compression-level N  zstd level 1-19 (default 3)\n"
	    "      --pt[=TERMS]        Intel PT instead of samples (also -e intel_pt/TERMS/);\n"
	    "                          TERMS: cyc, cyc_thresh=N, mtc, mtc_period=N, tsc,\n"
	    "                          noretcomp, psb_period=N, branch, ptw, pwr_evt,\n"
	    "                          fup_on_ptw, notnt, user, kernel\n"
	    "      --pt=emulate[,TERMS] emulated Intel PT for machines without it\n"
	    "                          (docs/pt-emulator.md)\n"
	    "  -S, --snapshot          PT snapshot mode: keep the last AUX area's worth,\n"
	    "                          saved on SIGUSR2 and at the end\n"
	    "      --filter FILTER     PT IP filters: 'filter FUNC @ /path/bin',\n"
	    "                          tracestop, ADDR/SIZE (comma-separated)\n"
	    "      --control fifo:CTL[,ACK]  commands from a FIFO: snapshot, stop\n"
	    "                          (answered with 'ack' on ACK), as perf's\n"
	    "  -q, --quiet             no summary\n"
	    "  -h, --help              show this help\n");
	hwt_cli_help_end(f);
}

static int append(char **dst, const char *s)
{
	size_t a = *dst ? strlen(*dst) : 0, b = strlen(s);
	char *n = realloc(*dst, a + b + 2);

	if (!n)
		return -ENOMEM;
	if (a)
		n[a++] = ',';
	memcpy(n + a, s, b + 1);
	*dst = n;
	return 0;
}

static char *join(int argc, char **argv)
{
	struct hwt_buf b;

	hwt_buf_init(&b);
	for (int i = 0; i < argc; i++) {
		if (hwt_buf_printf(&b, "%s%s", i ? " " : "", argv[i]) < 0) {
			hwt_buf_fini(&b);
			return NULL;
		}
	}
	if (!b.data)
		return strdup("");
	return (char *)b.data;
}

/* "8" pages, or "512K"/"4M" bytes. */
static int parse_size(const char *s, unsigned long long *bytes)
{
	unsigned long long v;
	size_t n = strlen(s);
	bool unit = n && strchr("kKmMgG", s[n - 1]);

	if (n > 1 && (s[n - 1] == 'B' || s[n - 1] == 'b'))
		unit = true;
	if (hwt_cli_parse_u64(s, true, &v) < 0 || !v)
		return -HWT_EINVAL;
	*bytes = unit ? v : v * 4096;
	return 0;
}

/* "dwarf" or "dwarf,SIZE" (stack bytes per sample), as perf spells it:
 * SIZE is rounded up to a multiple of 8, up to 65528. */
static int parse_dwarf(const char *s, uint32_t *stack_user)
{
	unsigned long long v;

	if (strncmp(s, "dwarf", 5) || (s[5] && s[5] != ','))
		return -HWT_EINVAL;
	*stack_user = HWT_COLL_STACK_USER_DEFAULT;
	if (!s[5])
		return 0;
	if (hwt_cli_parse_u64(s + 6, false, &v) < 0 || !v || v > HWT_COLL_STACK_USER_MAX)
		return -HWT_EINVAL;
	*stack_user = (uint32_t)((v + 7) & ~7ull);
	return 0;
}

static void opts_free(struct rec_opts *o)
{
	free(o->events);
	free(o->cmdline);
	free(o->target);
}

/* Parses everything; returns HWT_EXIT_OK to go on, or the exit code. */
static int parse(int argc, char **argv, struct rec_opts *o, bool *help)
{
	enum { O_CALLGRAPH = 256, O_SWITCH, O_PERTHREAD, O_PT, O_FILTER, O_CONTROL };
	static const struct option lopts[] = {
	    {"event", required_argument, NULL, 'e'},
	    {"count", required_argument, NULL, 'c'},
	    {"freq", required_argument, NULL, 'F'},
	    {"call-graph", required_argument, NULL, O_CALLGRAPH},
	    {"pid", required_argument, NULL, 'p'},
	    {"all-cpus", no_argument, NULL, 'a'},
	    {"output", required_argument, NULL, 'o'},
	    {"mmap-pages", required_argument, NULL, 'm'},
	    {"switch-events", no_argument, NULL, O_SWITCH},
	    {"per-thread", no_argument, NULL, O_PERTHREAD},
	    {"no-inherit", no_argument, NULL, 'i'},
	    {"compression-level", required_argument, NULL, 'z'},
	    {"pt", optional_argument, NULL, O_PT},
	    {"snapshot", no_argument, NULL, 'S'},
	    {"filter", required_argument, NULL, O_FILTER},
	    {"control", required_argument, NULL, O_CONTROL},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->output = "hwtrace.hwt";
	*help = false;
	o->cmdline = join(argc, argv);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+e:c:F:gp:ao:m:iz:Sqh", lopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (!strncmp(optarg, "intel_pt", 8) && (optarg[8] == '/' || !optarg[8])) {
				o->pt = true;
				o->pt_spec = optarg;
			} else if (append(&o->events, optarg) < 0) {
				return HWT_EXIT_ERROR;
			}
			break;
		case 'c':
			if (hwt_cli_parse_u64(optarg, false, &o->period) < 0 || !o->period)
				return hwt_cli_usage_error(
				    "record", "-c needs a positive count, not '%s'", optarg);
			break;
		case 'F':
			if (!strcmp(optarg, "max")) {
				o->freq_max = true;
			} else if (hwt_cli_parse_u64(optarg, false, &o->freq) < 0 || !o->freq) {
				return hwt_cli_usage_error(
				    "record", "-F needs a positive frequency or 'max', not '%s'",
				    optarg);
			}
			break;
		case 'g':
			o->callgraph = HWT_COLL_CG_FP;
			break;
		case O_CALLGRAPH:
			if (!strcmp(optarg, "fp"))
				o->callgraph = HWT_COLL_CG_FP;
			else if (!strcmp(optarg, "lbr"))
				o->callgraph = HWT_COLL_CG_LBR;
			else if (parse_dwarf(optarg, &o->stack_user) == 0)
				o->callgraph = HWT_COLL_CG_DWARF;
			else
				return hwt_cli_usage_error(
				    "record",
				    "--call-graph takes fp, dwarf[,SIZE] or lbr, not '%s' "
				    "(SIZE: stack bytes per sample, a multiple of 8 up to %u)",
				    optarg, HWT_COLL_STACK_USER_MAX);
			break;
		case 'p':
			o->pids = optarg;
			break;
		case 'a':
			o->all_cpus = true;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'm': {
			char buf[64], *comma;

			snprintf(buf, sizeof(buf), "%s", optarg);
			comma = strchr(buf, ',');
			if (comma)
				*comma++ = '\0';
			if ((buf[0] && parse_size(buf, &o->mmap_bytes) < 0) ||
			    (comma && parse_size(comma, &o->aux_bytes) < 0))
				return hwt_cli_usage_error(
				    "record",
				    "-m takes PAGES or SIZE[,AUX] (e.g. 256, "
				    "1M, 512K,16M), not '%s'",
				    optarg);
			break;
		}
		case O_SWITCH:
			o->switch_events = true;
			break;
		case O_PERTHREAD:
			o->per_thread = true;
			break;
		case 'i':
			o->no_inherit = true;
			break;
		case 'z': {
			unsigned long long lv;

			if (hwt_cli_parse_u64(optarg, false, &lv) < 0 || lv < 1 || lv > 19)
				return hwt_cli_usage_error("record",
							   "-z takes a level from 1 to 19");
			o->level = (int)lv;
			break;
		}
		case O_PT:
			if (optarg && !strncmp(optarg, "emulate", 7) &&
			    (optarg[7] == ',' || !optarg[7])) {
				o->emulate = true;
				o->emu_terms = optarg[7] ? optarg + 8 : NULL;
			} else {
				o->pt = true;
				o->pt_spec = optarg ? optarg : "";
			}
			break;
		case 'S':
			o->snapshot = true;
			break;
		case O_FILTER:
			o->filter = optarg;
			break;
		case O_CONTROL:
			if (strncmp(optarg, "fifo:", 5) || !optarg[5])
				return hwt_cli_usage_error("record",
							   "--control takes fifo:CTL[,ACK] (FIFOs "
							   "made with mkfifo), not '%s'",
							   optarg);
			o->control = optarg + 5;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			*help = true;
			return HWT_EXIT_OK;
		default:
			if (optopt && optopt < 256)
				return hwt_cli_usage_error("record",
							   "unknown option '-%c' or missing "
							   "argument",
							   optopt);
			return hwt_cli_usage_error("record", "unknown option '%s'",
						   argv[optind - 1]);
		}
	}
	if (optind < argc) {
		o->argv = argv + optind;
		o->target = join(argc - optind, argv + optind);
	}
	return HWT_EXIT_OK;
}

static const char *summary_size(uint64_t b, char *buf, size_t len)
{
	if (b >= 10u << 20)
		snprintf(buf, len, "%.1f MB", (double)b / 1e6);
	else if (b >= 10000)
		snprintf(buf, len, "%.1f KB", (double)b / 1e3);
	else
		snprintf(buf, len, "%" PRIu64 " bytes", b);
	return buf;
}

/* The container writer makes its file private (mode 0600) even when it
 * exists: an output that is a device (-o /dev/null, as root) would have its
 * mode changed and a failed run would remove it. Only regular files (new
 * or existing) are outputs. */
static int check_output(const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		hwt_cli_error("'%s' is not a regular file: give the path of a trace file to write "
			      "with -o",
			      path);
		return HWT_EXIT_ERROR;
	}
	return HWT_EXIT_OK;
}

/* --- the PT emulator ------------------------------------------------------ */

static int run_emulate(const struct rec_opts *o)
{
	struct hwt_ptemu_config cfg;
	struct hwt_ptemu_result res;
	const char *bad = NULL;
	int err;

	if (o->events || o->period || o->freq || o->freq_max || o->callgraph || o->pids ||
	    o->all_cpus || o->per_thread || o->snapshot || o->pt || o->mmap_bytes || o->aux_bytes ||
	    o->switch_events)
		return hwt_cli_usage_error("record", "--pt=emulate takes only TERMS, --filter, -o "
						     "and -q besides the command");
	hwt_ptemu_config_init(&cfg);
	cfg.log = *hwt_cli_logger();
	if (o->emu_terms && hwt_ptemu_terms_parse(&cfg.terms, o->emu_terms, &bad) < 0)
		return hwt_cli_usage_error("record", "bad PT term '%s' in --pt", bad);
	if (o->filter && cfg.terms.filter)
		return hwt_cli_usage_error("record", "give the filters once: --filter or "
						     "--pt=emulate,...,filter=");
	if (o->filter)
		cfg.terms.filter = o->filter;
	if (!o->argv)
		return hwt_cli_usage_error("record", "no command to record: give it after '--'");
	if (check_output(o->output) != HWT_EXIT_OK)
		return HWT_EXIT_ERROR;
	cfg.argv = (const char *const *)o->argv;
	err = hwt_ptemu_record(&cfg, o->output, &res);
	if (err < 0) {
		/* The library said what is missing, or that the command cannot
		 * run (exit status as a shell's: 127 not found, 126 not
		 * executable, as without --pt). */
		if (err == -HWT_ENOTSUP || err == -HWT_EINVAL)
			return HWT_EXIT_ERROR;
		if (err == -ENOENT || err == -EACCES) {
			char path[4096];

			if (hwt_coll_command_find(o->argv[0], path, sizeof(path), NULL, 0) < 0)
				return err == -ENOENT ? 127 : 126;
		}
		hwt_cli_error("record: %s: %s (check the command and the output path)", o->output,
			      hwt_strerror(err));
		hwt_ptemu_result_fini(&res);
		return HWT_EXIT_ERROR;
	}
	if (!o->quiet) {
		hwt_cli_note("emulated Intel PT (no PT hardware used): %zu thread%s, %llu "
			     "instructions, %.1f MB of PT in %.2f s -> %s",
			     res.nthreads, res.nthreads == 1 ? "" : "s",
			     (unsigned long long)res.insns, (double)res.bytes / 1e6, res.seconds,
			     o->output);
		if (res.exit_status)
			hwt_cli_note("the command exited with status %d", res.exit_status);
	}
	hwt_ptemu_result_fini(&res);
	return HWT_EXIT_OK;
}

int hwt_record_pt_emulate(int argc, char **argv)
{
	struct rec_opts o;
	bool help;
	int ret = parse(argc, argv, &o, &help);

	if (ret == HWT_EXIT_OK && help)
		usage(stdout);
	else if (ret == HWT_EXIT_OK)
		ret = run_emulate(&o);
	opts_free(&o);
	return ret;
}

/* --- sampling and Intel PT ------------------------------------------------ */

static void print_summary(const struct rec_opts *o, const struct hwt_coll_rec_stats *st)
{
	char raw[32], file[32];
	double ratio = st->file_bytes ? (double)st->raw_bytes / (double)st->file_bytes : 0;

	summary_size(st->raw_bytes, raw, sizeof(raw));
	summary_size(st->file_bytes, file, sizeof(file));
	if (o->pt)
		hwt_cli_note("%" PRIu64 " bytes of Intel PT%s in %.2f s, %" PRIu64
			     " gap(s), %" PRIu64 " bytes lost; %s -> %s (%.1fx) in %s",
			     st->aux_bytes, o->snapshot ? " (snapshots)" : "", st->seconds,
			     st->aux_gaps, st->aux_lost, raw, file, ratio, o->output);
	else
		hwt_cli_note("%" PRIu64 " samples of %s in %.2f s, %" PRIu64 " lost; %s -> %s "
			     "(%.1fx) in %s",
			     st->samples, st->event, st->seconds,
			     st->lost_records + st->lost_samples, raw, file, ratio, o->output);
	if (st->lost_records || st->lost_samples)
		hwt_cli_warn("%" PRIu64 " records and %" PRIu64
			     " samples were lost (the ring buffers overflowed): record with a "
			     "larger buffer (-m) or a lower frequency (-F)",
			     st->lost_records, st->lost_samples);
	if (st->aux_overruns) {
		/* Each with its time from the first record, as perf users
		 * read them in 'perf script' (seconds). */
		char times[256];
		size_t n = 0;

		times[0] = '\0';
		for (uint64_t i = 0; i < st->aux_overruns && i < 8 && n < sizeof(times); i++)
			n += (size_t)snprintf(
			    times + n, sizeof(times) - n, "%s%.6f", i ? ", " : "",
			    st->overrun_times[i] >= st->first_time
				? (double)(st->overrun_times[i] - st->first_time) / 1e9
				: 0.0);
		hwt_cli_warn(
		    "the Intel PT AUX area was full %" PRIu64 " time(s), at %s%s s after "
		    "the start: the kernel stopped the trace each time and it went on "
		    "once the area was read (the trace in between is lost, shown as gaps); "
		    "record with a larger AUX area (-m ,SIZE)",
		    st->aux_overruns, times, st->aux_overruns > 8 ? ", ..." : "");
	}
	if (st->writer_dropped)
		hwt_cli_warn("%" PRIu64 " bytes were dropped because the disk could not keep up",
			     st->writer_dropped);
	if (st->throttled)
		hwt_cli_note("the kernel throttled sampling %" PRIu64 " time(s) (see "
			     "kernel.perf_cpu_time_max_percent)",
			     st->throttled);
}

static int record(struct rec_opts *o)
{
	struct hwt_coll_target_config tcfg;
	struct hwt_coll_rec_config cfg;
	struct hwt_coll_target *t = NULL;
	struct hwt_coll_rec *rec = NULL;
	struct hwt_coll_rec_stats st;
	char tmsg[512] = "", rmsg[1024] = "", ctl[4096];
	int *pids = NULL, err, ret = HWT_EXIT_ERROR;
	size_t npids = 0;

	if (o->pids && o->all_cpus)
		return hwt_cli_usage_error("record", "-p and -a exclude each other");
	if (o->pids && o->argv)
		return hwt_cli_usage_error("record", "give either -p or a command, not both");
	if (!o->pids && !o->all_cpus && !o->argv)
		return hwt_cli_usage_error("record",
					   "nothing to record: give a command after '--', -p PID "
					   "or -a");
	if (o->period && (o->freq || o->freq_max))
		return hwt_cli_usage_error("record", "give either -c or -F, not both");
	if (o->pt && o->events)
		return hwt_cli_usage_error("record", "Intel PT records no other events: drop -e "
						     "or --pt");
	if ((o->snapshot || o->filter) && !o->pt)
		return hwt_cli_usage_error("record", "-S and --filter are for Intel PT (--pt)");
	if (o->pids && hwt_cli_parse_ids(o->pids, 1, &pids, &npids) < 0)
		return hwt_cli_usage_error("record", "-p takes PIDs separated by commas, not '%s'",
					   o->pids);
	if (check_output(o->output) != HWT_EXIT_OK) {
		free(pids);
		return HWT_EXIT_ERROR;
	}

	/* The target first: a command that cannot run or a PID that is gone
	 * is the one error to give, before the recorder says which event it
	 * samples. */
	hwt_coll_target_config_init(&tcfg);
	tcfg.logger = *hwt_cli_logger();
	tcfg.sysfs_root = hwt_cli_sysfs_root(o->psys);
	tcfg.psys = o->psys;
	tcfg.errmsg = tmsg;
	tcfg.errmsg_len = sizeof(tmsg);
	err = hwt_coll_target_alloc(&t, &tcfg);
	if (err == 0 && o->all_cpus)
		err = hwt_coll_target_system(t);
	if (err == 0 && o->pids)
		err = hwt_coll_target_attach(t, pids, npids);
	if (err == 0 && o->argv)
		err = hwt_coll_target_launch(t, o->argv);
	if (err < 0) {
		hwt_cli_error("%s", tmsg[0] ? tmsg : hwt_strerror(err));
		ret = err == -ENOENT ? 127 : err == -EACCES ? 126 : HWT_EXIT_ERROR;
		goto out;
	}
	hwt_coll_rec_config_init(&cfg);
	cfg.logger = *hwt_cli_logger();
	cfg.output = o->output;
	cfg.rename_old = true;
	cfg.events = o->events;
	cfg.period = o->period;
	cfg.freq = o->freq_max ? UINT64_MAX : o->freq;
	cfg.callgraph = o->callgraph;
	cfg.stack_user = o->stack_user;
	cfg.switch_events = o->switch_events;
	cfg.per_thread = o->per_thread;
	cfg.no_inherit = o->no_inherit;
	cfg.mmap_bytes = (size_t)o->mmap_bytes;
	cfg.aux_bytes = (size_t)o->aux_bytes;
	cfg.level = o->level;
	cfg.cmdline = o->cmdline;
	cfg.target_cmdline = o->target;
	cfg.pt = o->pt;
	cfg.pt_spec = o->pt_spec;
	cfg.pt_snapshot = o->snapshot;
	cfg.pt_filter = o->filter;
	if (o->control) {
		char *comma;

		snprintf(ctl, sizeof(ctl), "%s", o->control);
		comma = strchr(ctl, ',');
		if (comma)
			*comma++ = '\0';
		cfg.control_fifo = ctl;
		cfg.ack_fifo = comma;
	}
	cfg.sysfs_root = hwt_cli_sysfs_root(o->psys);
	cfg.paranoid_path = hwt_cli_paranoid_path(o->psys);
	cfg.psys = o->psys;
	cfg.errmsg = rmsg;
	cfg.errmsg_len = sizeof(rmsg);
	err = hwt_coll_rec_alloc(&rec, &cfg);
	if (err < 0) {
		hwt_cli_error("%s", rmsg[0] ? rmsg : hwt_strerror(err));
		goto out;
	}

	err = hwt_coll_rec_open(rec, t);
	if (err < 0) {
		hwt_cli_error("%s", rmsg[0] ? rmsg : hwt_strerror(err));
		goto out;
	}
	err = hwt_coll_rec_run(rec);
	if (err < 0) {
		if (tmsg[0])
			hwt_cli_error("%s", tmsg);
		else
			hwt_cli_error("%s", rmsg[0] ? rmsg : hwt_strerror(err));
		ret = err == -ENOENT ? 127 : err == -EACCES ? 126 : HWT_EXIT_ERROR;
		goto out;
	}
	hwt_coll_rec_stats(rec, &st);
	if (!o->quiet)
		print_summary(o, &st);
	/* As perf record: the command's exit status is ours. */
	ret = st.exit_status > 0 ? st.exit_status : HWT_EXIT_OK;
out:
	/* The target first: it restores the signal mask it changed, then the
	 * recorder restores the one before it. */
	hwt_coll_target_free(t);
	hwt_coll_rec_free(rec);
	free(pids);
	return ret;
}

int hwt_cmd_record(int argc, char **argv)
{
	struct rec_opts o;
	bool help;
	int ret = parse(argc, argv, &o, &help);

	if (ret == HWT_EXIT_OK && help)
		usage(stdout);
	else if (ret == HWT_EXIT_OK && o.emulate)
		ret = run_emulate(&o);
	else if (ret == HWT_EXIT_OK && (ret = hwt_cli_psys_open(&o.psys)) == HWT_EXIT_OK)
		ret = record(&o);
	hwt_psys_free(o.psys);
	opts_free(&o);
	return ret;
}
