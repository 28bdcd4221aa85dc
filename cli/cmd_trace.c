/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/cmd_trace.c - `hwtrace trace 'PROBE /PRED/ { ACTIONS }'`: DTrace-style
 * one-liners, live on a command (-- CMD), processes (-p) or the whole
 * system (-a, or no target), or offline over a recording (-i FILE).
 * Wiring only: probe/ parses, opens and runs; collector/ owns the target;
 * format/ reads recordings; report/ prints the aggregations.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "perfsys/perfsys.h"
#include "collector/collector.h"
#include "format/format.h"
#include "probe/probe.h"
#include "report/report.h"

struct trace_opts {
	struct hwt_psys *psys; /* the perf system calls (NULL: the kernel) */
	const char *program;
	char *program_buf; /* -f FILE */
	const char *program_file;
	int *pids;
	size_t npids;
	bool system;
	double duration;   /* -d; 0: none */
	const char *input; /* -i */
	const char *output;
	bool json;
	bool dry_run;
	bool no_inherit;
	bool no_bpf;
	bool bpftrace_style; /* a bpftrace script: its output layout */
	unsigned long long pages;
	/* -x limits */
	unsigned long long aggsize, dynvarsize, bufsize, strsize, nstacks;
	char **argv;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hwtrace trace [OPTIONS] 'PROBE[,PROBE] [/PREDICATE/] { ACTIONS }'\n"
		"                     [-p PID[,PID...] | -a | -i FILE | -- COMMAND...]\n"
		"\n"
		"DTrace-style one-liners: probes, an optional predicate, and actions that\n"
		"aggregate (@name[keys] = count(), sum(x), min(x), max(x), avg(x), stddev(x),\n"
		"quantize(x), lquantize(x, lo, hi, step)), print (printf) and keep per-thread\n"
		"variables (self->x). Aggregations print when the command exits, at -d, on\n"
		"Ctrl-C, or at exit().\n"
		"\n"
		"Probes: BEGIN, END, uprobe:PATH:FUNC[+OFF], uretprobe:PATH:FUNC,\n"
		"  kprobe:FUNC[+OFF], kretprobe:FUNC, SUBSYS:EVENT (tracepoint),\n"
		"  profile:hz:N, software:EVENT[:N], hardware:EVENT[:N],\n"
		"  pt:OBJ:FUNC:entry|return, pt:OBJ:FUNC+OFF (PT recordings)\n"
		"Variables: pid tid cpu nsecs elapsed comm func probe ustack kstack\n"
		"  arg0..arg5 retval ip $target args->FIELD self->NAME this->NAME\n"
		"\n"
		"  -p, --pid PID[,PID...]  probe running processes (all their threads)\n"
		"  -a, --all-cpus          probe the whole system (the default with no target)\n"
		"  -d, --duration SECONDS  stop after SECONDS\n"
		"  -i, --input FILE        run over a recording (.hwt or perf.data)\n"
		"  -f, --file FILE         read the program from FILE\n"
		"  -o, --output FILE       write the aggregations to FILE\n"
		"      --json              aggregations as JSON\n"
		"      --no-inherit        do not follow threads and children of the target\n"
		"  -b, --buffer-pages N    ring buffer pages per CPU (power of two; 128)\n"
		"      --no-bpf            run every probe on perf samples aggregated by\n"
		"                          hwtrace (by default probes run as BPF programs\n"
		"                          that aggregate in the kernel, where they can)\n"
		"  -x NAME=VALUE           limits, as DTrace's: aggsize (bytes per\n"
		"                          aggregation, 4m), dynvarsize (self-> variables,\n"
		"                          1m), bufsize (BPF printf buffer, 4m), strsize\n"
		"                          (64), nstacks (BPF stack map entries, 4096)\n"
		"  -v, --verbose           show the path each probe takes (BPF, counter or\n"
		"                          sampling) and the BPF verifier's log on rejection\n"
		"  -n, --dry-run           check the program and show the probes, run nothing\n"
		"  -h, --help              show this help\n"
		"\n"
		"Example: hwtrace trace 'uprobe:./app:work { self->ts = nsecs }\n"
		"           uretprobe:./app:work /self->ts/ { @ns = quantize(nsecs - self->ts);\n"
		"           self->ts = 0 }' -- ./app\n"
		"See docs/trace.md.\n");
	hwt_cli_help_end(f);
}

static int write_stdout(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	if (fwrite(text, 1, len, stdout) != len)
		return -EPIPE;
	return 0;
}

/* The error message, and for a place in the program the line with a caret
 * under the column. */
static void print_diag(const struct hwt_probe_diag *d, const char *text, int err)
{
	hwt_cli_error("%s", d->msg[0] ? d->msg : hwt_strerror(err));
	if (d->column > 0 && text) {
		const char *line = text;
		int width = 0;

		for (int l = 1; l < d->line && line; l++) {
			line = strchr(line, '\n');
			if (line)
				line++;
		}
		if (!line)
			return;
		width = (int)strcspn(line, "\n");
		fprintf(stderr, "    %.*s\n    %*s^\n", width, line, d->column - 1, "");
	}
}

static int diag_exit(int err)
{
	return err == -HWT_EPARSE ? HWT_EXIT_USAGE : HWT_EXIT_ERROR;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int print_results(struct hwt_probe_rt *rt, const struct trace_opts *o)
{
	struct hwt_probe_stats st;
	struct hwt_buf buf;
	FILE *out = stdout;
	int err;

	hwt_buf_init(&buf);
	err = hwt_probe_rt_print(rt, o->json ? HWT_REP_FMT_JSON : HWT_REP_FMT_TEXT, &buf);
	if (err < 0) {
		hwt_cli_error("cannot print the aggregations: %s", hwt_strerror(err));
		hwt_buf_fini(&buf);
		return HWT_EXIT_ERROR;
	}
	fflush(stdout);
	if (o->output && !(out = fopen(o->output, "w"))) {
		hwt_cli_error("cannot write '%s': %s; choose a writable path with -o", o->output,
			      strerror(errno));
		hwt_buf_fini(&buf);
		return HWT_EXIT_ERROR;
	}
	/* DTrace separates the aggregations from the probe output with a
	 * blank line. */
	if (buf.len && !o->json && out == stdout && !o->bpftrace_style)
		fputc('\n', out);
	if ((buf.len && fwrite(buf.data, 1, buf.len, out) != buf.len) ||
	    (out != stdout ? fclose(out) : fflush(out)) != 0) {
		hwt_cli_error("cannot write the aggregations to '%s': %s",
			      o->output ? o->output : "stdout", strerror(errno));
		hwt_buf_fini(&buf);
		return HWT_EXIT_ERROR;
	}
	hwt_buf_fini(&buf);
	hwt_probe_rt_stats(rt, &st);
	for (size_t i = 0; st.agg_drops; i++) {
		const char *name;
		uint64_t drops, max;

		if (hwt_probe_rt_agg_drops(rt, i, &name, &drops, &max) < 0)
			break;
		if (drops)
			hwt_cli_warn("@%s: %llu updates dropped: it holds at most %llu keys; raise "
				     "-x aggsize",
				     name, (unsigned long long)drops, (unsigned long long)max);
	}
	if (st.self_drops)
		hwt_cli_warn("%llu self-> assignments dropped: the thread variables are full; "
			     "raise -x dynvarsize",
			     (unsigned long long)st.self_drops);
	if (st.ring_drops)
		hwt_cli_warn("%llu printf/exit/print records dropped: the BPF ring buffer was "
			     "full; raise -x bufsize",
			     (unsigned long long)st.ring_drops);
	if (st.stack_errors)
		hwt_cli_warn("%llu stacks could not be taken (the BPF stack map is full or two "
			     "stacks collided): they show as empty; raise -x nstacks",
			     (unsigned long long)st.stack_errors);
	if (st.lost)
		hwt_cli_warn(
		    "%llu probe hits were lost (ring buffer overflow): raise -b (pages per "
		    "CPU) or narrow the probes",
		    (unsigned long long)st.lost);
	if (st.faults)
		hwt_cli_warn("%llu clause runs stopped on a fault (division by zero)",
			     (unsigned long long)st.faults);
	if (st.bad_samples)
		hwt_cli_warn("%llu records could not be parsed and were skipped",
			     (unsigned long long)st.bad_samples);
	if (st.trace_gaps) {
		char losses[160];

		hwt_dec_losses_str(st.trace_gaps, st.trace_lost_gaps, st.trace_lost_bytes,
				   st.trace_overflows, losses, sizeof(losses));
		hwt_cli_warn("%s in the Intel PT trace: pt: probe hits inside the gaps are "
			     "missing; 'hwtrace script -i FILE --itrace=e' lists them",
			     losses);
	}
	return HWT_EXIT_OK;
}

static int run_offline(struct hwt_probe_rt *rt, const struct trace_opts *o)
{
	struct hwt_fmt_session_config scfg;
	struct hwt_fmt_session *s = NULL;
	struct hwt_probe_diag diag;
	uint64_t off = 0;
	int err, rc;

	hwt_fmt_session_config_init(&scfg);
	scfg.log = *hwt_cli_logger();
	if ((err = hwt_fmt_session_open(&s, o->input, &scfg, &off)) < 0)
		return hwt_cli_recording_error(o->input, err, off);
	err = hwt_probe_offline_run(rt, s, &diag);
	fflush(stdout);
	if (err < 0) {
		hwt_fmt_session_close(s);
		print_diag(&diag, o->program, err);
		return HWT_EXIT_ERROR;
	}
	{
		struct hwt_fmt_session_stats ss;

		hwt_fmt_session_stats(s, &ss);
		if (hwt_cli_damage(o->input, s, ss.records == 0) && ss.records == 0) {
			hwt_fmt_session_close(s);
			return HWT_EXIT_ERROR;
		}
	}
	hwt_fmt_session_close(s);
	rc = print_results(rt, o);
	return rc;
}

static int target_error_exit(int err, const char *msg)
{
	hwt_cli_error("%s", msg[0] ? msg : hwt_strerror(err));
	if (err == -ENOENT)
		return 127;
	if (err == -EACCES || err == -ENOEXEC)
		return 126;
	return HWT_EXIT_ERROR;
}

static bool has_live_probes(const struct hwt_probe_prog *prog)
{
	for (size_t i = 0; i < hwt_probe_prog_nprobes(prog); i++) {
		struct hwt_probe_info in;

		hwt_probe_prog_probe(prog, i, &in);
		if (in.kind != HWT_PROBE_BEGIN && in.kind != HWT_PROBE_END)
			return true;
	}
	return false;
}

/* The path each probe takes: with -v every probe (and the verifier's log
 * of a refused program); otherwise one line for each probe that could not
 * run on BPF, with the reason. */
static void say_paths(const struct hwt_probe_prog *prog, const struct hwt_probe_live *live)
{
	for (size_t i = 0; i < hwt_probe_prog_nprobes(prog); i++) {
		struct hwt_probe_info in;
		enum hwt_probe_path path;
		const char *why, *log;
		size_t insns;

		hwt_probe_prog_probe(prog, i, &in);
		if (hwt_probe_live_path(live, i, &path, &why, &log, &insns) < 0)
			continue;
		switch (path) {
		case HWT_PROBE_PATH_NONE:
			break;
		case HWT_PROBE_PATH_BPF:
			if (hwt_cli_verbose)
				hwt_cli_note("%s: BPF (a program of %zu instructions aggregates in "
					     "the kernel)",
					     in.text, insns);
			break;
		case HWT_PROBE_PATH_COUNTER:
			if (hwt_cli_verbose)
				hwt_cli_note("%s: counter (its clauses only count: a perf counter "
					     "in the kernel)",
					     in.text);
			break;
		case HWT_PROBE_PATH_SAMPLING:
			if (why)
				hwt_cli_note("%s runs on the sampling path: %s", in.text, why);
			else if (hwt_cli_verbose)
				hwt_cli_note("%s: sampling (--no-bpf: perf samples aggregated by "
					     "hwtrace)",
					     in.text);
			if (log && hwt_cli_verbose)
				fprintf(stderr, "hwtrace: the BPF verifier's log for %s:\n%s\n",
					in.text, log);
			break;
		}
	}
}

static int run_live(const struct hwt_probe_prog *prog, struct hwt_probe_rt *rt,
		    const struct trace_opts *o)
{
	struct hwt_coll_target_config tcfg;
	struct hwt_probe_live_config lcfg;
	struct hwt_coll_target *t = NULL;
	struct hwt_probe_live *live = NULL;
	struct hwt_probe_diag diag;
	const int *tids = NULL, *cpus = NULL;
	size_t ntids = 0, ncpus = 0;
	bool system = o->system || (!o->npids && !o->argv);
	char msg[1024] = "";
	double t0, deadline;
	int err, rc = HWT_EXIT_ERROR, status = 0;

	hwt_coll_target_config_init(&tcfg);
	tcfg.logger = *hwt_cli_logger();
	tcfg.errmsg = msg;
	tcfg.errmsg_len = sizeof(msg);
	tcfg.sysfs_root = hwt_cli_sysfs_root(o->psys);
	if ((err = hwt_coll_target_alloc(&t, &tcfg)) < 0) {
		hwt_cli_error("%s", hwt_strerror(err));
		goto out;
	}
	if (system && (err = hwt_coll_target_system(t)) < 0) {
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
	if (hwt_coll_target_child(t) > 0)
		hwt_probe_rt_set_target(rt, hwt_coll_target_child(t));
	else if (o->npids)
		hwt_probe_rt_set_target(rt, o->pids[0]);

	if (has_live_probes(prog)) {
		hwt_probe_live_config_init(&lcfg);
		if (system) {
			ncpus = hwt_coll_target_cpus(t, &cpus);
			lcfg.cpus = cpus;
			lcfg.ncpus = ncpus;
		} else {
			ntids = hwt_coll_target_threads(t, &tids);
			lcfg.tids = tids;
			lcfg.ntids = ntids;
			lcfg.enable_on_exec = o->argv != NULL;
			lcfg.no_inherit = o->no_inherit;
		}
		lcfg.pages = (size_t)o->pages;
		lcfg.backend = o->no_bpf ? HWT_PROBE_BACKEND_SAMPLING : HWT_PROBE_BACKEND_AUTO;
		if ((err = hwt_probe_live_open(&live, rt, &lcfg, &diag)) < 0) {
			print_diag(&diag, o->program, err);
			rc = diag_exit(err);
			goto out;
		}
		say_paths(prog, live);
		if (isatty(STDERR_FILENO))
			hwt_cli_note(
			    "tracing %zu probe%s (%zu perf events)%s", hwt_probe_prog_nprobes(prog),
			    hwt_probe_prog_nprobes(prog) == 1 ? "" : "s",
			    hwt_probe_live_nevents(live), o->argv ? "" : "; Ctrl-C to end");
	}
	if ((err = hwt_probe_rt_begin(rt)) < 0) {
		hwt_cli_error("cannot write the output: %s", hwt_strerror(err));
		goto out;
	}
	fflush(stdout);
	if ((err = hwt_coll_target_start(t)) < 0) {
		rc = target_error_exit(err, msg);
		goto out;
	}
	t0 = now_s();
	deadline = o->duration > 0 ? t0 + o->duration : 0;
	while (!hwt_probe_rt_exited(rt)) {
		int w, wait_ms = 1;

		if (live) {
			err = hwt_probe_live_poll(live, 100);
			if (err < 0) {
				hwt_cli_error("probe processing failed: %s", hwt_strerror(err));
				goto out;
			}
			fflush(stdout);
		} else {
			wait_ms = 100;
		}
		if (hwt_probe_rt_exited(rt))
			break;
		if (deadline && now_s() >= deadline)
			break;
		w = hwt_coll_target_wait(t, wait_ms);
		if (w < 0) {
			hwt_cli_error("waiting for the target failed: %s", hwt_strerror(w));
			goto out;
		}
		if (w != HWT_COLL_WAIT_TIMEOUT)
			break;
	}
	if (live && (err = hwt_probe_live_drain(live)) < 0) {
		hwt_cli_error("probe processing failed: %s", hwt_strerror(err));
		goto out;
	}
	if ((err = hwt_probe_rt_end(rt)) < 0) {
		hwt_cli_error("cannot write the output: %s", hwt_strerror(err));
		goto out;
	}
	fflush(stdout);
	if ((rc = print_results(rt, o)) != HWT_EXIT_OK)
		goto out;
	if (hwt_coll_target_exit_status(t) >= 0)
		status = hwt_coll_target_exit_status(t);
	rc = status;
out:
	hwt_probe_live_close(live);
	hwt_coll_target_free(t);
	return rc;
}

/* -x NAME=VALUE: DTrace's way of setting limits. */
static int parse_x(struct trace_opts *o, const char *arg)
{
	static const struct {
		const char *name;
		size_t off;
		unsigned long long min, max;
	} xs[] = {
	    {"aggsize", offsetof(struct trace_opts, aggsize), 1024, 1ull << 40},
	    {"dynvarsize", offsetof(struct trace_opts, dynvarsize), 1024, 1ull << 40},
	    {"bufsize", offsetof(struct trace_opts, bufsize), 4096, 1ull << 30},
	    {"strsize", offsetof(struct trace_opts, strsize), 8, 4096},
	    {"nstacks", offsetof(struct trace_opts, nstacks), 16, 1u << 24},
	};
	const char *eq = strchr(arg, '=');
	unsigned long long v;

	if (!eq)
		return -HWT_EINVAL;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(xs); i++) {
		if (strlen(xs[i].name) != (size_t)(eq - arg) || strncmp(arg, xs[i].name, eq - arg))
			continue;
		if (hwt_cli_parse_u64(eq + 1, true, &v) < 0 || v < xs[i].min || v > xs[i].max)
			return -HWT_EINVAL;
		if (!strcmp(xs[i].name, "strsize"))
			v = (v + 7) & ~7ull; /* whole words, as the BPF maps hold them */
		*(unsigned long long *)((char *)o + xs[i].off) = v;
		return 0;
	}
	return -HWT_EINVAL;
}

static int read_program(struct trace_opts *o, const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	struct hwt_buf b;
	char chunk[4096];
	size_t n;

	if (!f) {
		hwt_cli_error("cannot read the program '%s': %s", path, strerror(errno));
		return -errno;
	}
	hwt_buf_init(&b);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (hwt_buf_append(&b, chunk, n) < 0)
			break;
	if (f != stdin)
		fclose(f);
	if (hwt_buf_append(&b, "", 1) < 0) {
		hwt_buf_fini(&b);
		hwt_cli_error("out of memory");
		return -ENOMEM;
	}
	free(o->program_buf);
	o->program_buf = (char *)b.data;
	o->program = o->program_buf;
	return 0;
}

int hwt_cmd_trace(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"pid", required_argument, NULL, 'p'},
	    {"all-cpus", no_argument, NULL, 'a'},
	    {"duration", required_argument, NULL, 'd'},
	    {"input", required_argument, NULL, 'i'},
	    {"file", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"json", no_argument, NULL, 'J'},
	    {"no-inherit", no_argument, NULL, 'I'},
	    {"buffer-pages", required_argument, NULL, 'b'},
	    {"dry-run", no_argument, NULL, 'n'},
	    {"no-bpf", no_argument, NULL, 'B'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct trace_opts o;
	struct hwt_probe_config cfg;
	struct hwt_probe_prog *prog = NULL;
	struct hwt_probe_rt *rt = NULL;
	struct hwt_probe_diag diag;
	int c, err, rc = HWT_EXIT_ERROR;

	memset(&o, 0, sizeof(o));
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:ad:i:f:o:b:x:nvh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (hwt_cli_parse_ids(optarg, 1, &o.pids, &o.npids) < 0) {
				rc = hwt_cli_usage_error("trace", "-p wants PID[,PID...], not '%s'",
							 optarg);
				goto out;
			}
			break;
		case 'a':
			o.system = true;
			break;
		case 'd': {
			char *end;

			errno = 0;
			o.duration = strtod(optarg, &end);
			if (errno || *end || !(o.duration > 0) || o.duration > 1e7 ||
			    isnan(o.duration)) {
				rc = hwt_cli_usage_error(
				    "trace", "-d wants seconds above 0, not '%s'", optarg);
				goto out;
			}
			break;
		}
		case 'i':
			o.input = optarg;
			break;
		case 'f':
			if (read_program(&o, optarg) < 0)
				goto out;
			o.program_file = optarg;
			break;
		case 'o':
			o.output = optarg;
			break;
		case 'J':
			o.json = true;
			break;
		case 'I':
			o.no_inherit = true;
			break;
		case 'b':
			if (hwt_cli_parse_u64(optarg, false, &o.pages) < 0 || !o.pages ||
			    (o.pages & (o.pages - 1)) || o.pages > 65536) {
				rc = hwt_cli_usage_error(
				    "trace", "-b wants a power of two from 1 to 65536, not '%s'",
				    optarg);
				goto out;
			}
			break;
		case 'n':
			o.dry_run = true;
			break;
		case 'B':
			o.no_bpf = true;
			break;
		case 'v':
			hwt_cli_verbose++;
			break;
		case 'x':
			if (parse_x(&o, optarg) < 0) {
				rc = hwt_cli_usage_error(
				    "trace",
				    "-x wants NAME=VALUE with NAME one of aggsize, dynvarsize, "
				    "bufsize, strsize (8 to 4096), nstacks, and a number (k, m, g "
				    "suffixes), not '%s'",
				    optarg);
				goto out;
			}
			break;
		case 'h':
			usage(stdout);
			rc = HWT_EXIT_OK;
			goto out;
		default:
			rc = hwt_cli_usage_error("trace", "unknown option");
			goto out;
		}
	}
	if (!o.program) {
		if (optind >= argc) {
			rc = hwt_cli_usage_error("trace",
						 "give a program, as in 'profile:hz:99 { @[func] "
						 "= count() }'");
			goto out;
		}
		o.program = argv[optind++];
	}
	if (optind < argc)
		o.argv = argv + optind;
	if (o.input && (o.system || o.npids || o.argv)) {
		rc = hwt_cli_usage_error("trace",
					 "-i runs over a recording: no -p, -a or command with it");
		goto out;
	}
	if (o.npids && o.argv) {
		rc = hwt_cli_usage_error("trace", "give either -p or a command, not both");
		goto out;
	}
	if (o.system && o.npids) {
		rc = hwt_cli_usage_error("trace", "-a and -p exclude each other");
		goto out;
	}

	if (hwt_cli_psys_open(&o.psys) != HWT_EXIT_OK)
		goto out;
	hwt_probe_config_init(&cfg);
	cfg.log = *hwt_cli_logger();
	cfg.output = write_stdout;
	cfg.sysfs_root = hwt_cli_sysfs_root(o.psys);
	cfg.tracefs_root = getenv("HWT_TRACEFS_ROOT");
	cfg.paranoid_path = hwt_cli_paranoid_path(o.psys);
	cfg.psys = o.psys;
	cfg.check_only = o.dry_run;
	/* a bpftrace script (*.bt) prints as bpftrace does */
	cfg.bpftrace_style = o.program_file && strlen(o.program_file) > 3 &&
			     !strcmp(o.program_file + strlen(o.program_file) - 3, ".bt");
	cfg.aggsize = o.aggsize;
	cfg.dynvarsize = o.dynvarsize;
	cfg.bufsize = o.bufsize;
	cfg.strsize = (uint32_t)o.strsize;
	cfg.nstacks = (uint32_t)o.nstacks;
	if ((err = hwt_probe_prog_alloc(&prog, o.program, &cfg, &diag)) < 0) {
		print_diag(&diag, o.program, err);
		rc = diag_exit(err);
		goto out;
	}
	if (o.dry_run) {
		for (size_t i = 0; i < hwt_probe_prog_nprobes(prog); i++) {
			struct hwt_probe_info in;

			hwt_probe_prog_probe(prog, i, &in);
			printf("%s\n", in.text);
		}
		rc = HWT_EXIT_OK;
		goto out;
	}
	o.bpftrace_style = hwt_probe_prog_bpftrace_style(prog);
	if ((err = hwt_probe_rt_alloc(&rt, prog, &cfg)) < 0) {
		hwt_cli_error("%s", hwt_strerror(err));
		goto out;
	}
	if (o.input) {
		rc = run_offline(rt, &o);
	} else {
		hwt_probe_rt_set_live(rt, true);
		rc = run_live(prog, rt, &o);
	}
out:
	hwt_probe_rt_free(rt);
	hwt_probe_prog_free(prog);
	hwt_psys_free(o.psys);
	free(o.pids);
	free(o.program_buf);
	return rc;
}
