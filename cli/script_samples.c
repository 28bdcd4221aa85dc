/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/script_samples.c - `hwtrace script` on a recording of samples (.hwt
 * or perf.data, through format's session): one line per sample in perf
 * script's spirit (comm, pid/tid, cpu, time, period, event, ip,
 * symbol+offset, object) with its call chain under it. Addresses are
 * resolved through the process map (symbolize's hwt_sym_aspace), fed with
 * the recording's own sideband, its build-ids and its copy of the vDSO,
 * so a program rebuilt since the recording is not silently misnamed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "format/format.h"
#include "ptsession/ptsession.h"
#include "report/report.h"

struct script_stats {
	uint64_t samples, shown;
};

struct script {
	struct hwt_fmt_session *s;
	struct hwt_rep_dict *dict;
	struct hwt_rep_samples *rs;
	bool no_callchain, show_sideband, inline_frames, ns;
	unsigned max_stack;
	int *pids, *tids;
	size_t npids, ntids;
	const char *comm;
	struct script_stats st;
};

static void usage(FILE *f)
{
	fprintf(
	    f, "usage: hwtrace script [-i FILE] [-G] [--max-stack N] [--pid PIDS] [--tid TIDS]\n"
	       "                      [--comm NAME] [--inline] [--show-sideband] [--ns]\n"
	       "                      [--kallsyms FILE] [--debug-dir DIR] [-q]\n"
	       "       hwtrace script --itrace=LETTERS | --flow ...  (a PT recording; see\n"
	       "                      'hwtrace script --flow --help')\n"
	       "       hwtrace script --pt ...   (raw Intel PT; see 'hwtrace script --pt --help')\n"
	       "\n"
	       "Prints every sample of a recording (hwtrace's .hwt or perf.data): command,\n"
	       "pid/tid, CPU, time, period, event, address with symbol+offset and object,\n"
	       "and the call chain under it.\n"
	       "\n"
	       "  -i, --input FILE     the recording (default hwtrace.hwt, else perf.data;\n"
	       "                       - reads a perf pipe on standard input)\n"
	       "  -G, --hide-call-graph  no call chains\n"
	       "      --max-stack N    at most N frames per chain (default 127)\n"
	       "      --pid PIDS       only these processes (comma-separated)\n"
	       "      --tid TIDS       only these threads\n"
	       "      --comm NAME      only threads with this command name\n"
	       "      --inline         show inlined functions as frames (DWARF)\n"
	       "      --show-sideband  print mmap, comm, fork, exit and lost records too\n"
	       "      --ns             times in nanoseconds\n"
	       "      --kallsyms FILE  kernel symbols (default /proc/kallsyms when the\n"
	       "                       recording is from this kernel)\n"
	       "      --debug-dir DIR  look for separate debug files in DIR first\n"
	       "  -q, --quiet          no summary line at the end\n"
	       "  -h, --help           show this help\n");
	hwt_cli_help_end(f);
}

static bool in_list(const int *v, size_t n, uint32_t x)
{
	for (size_t i = 0; i < n; i++) {
		if ((uint32_t)v[i] == x)
			return true;
	}
	return false;
}

/* --- sideband ------------------------------------------------------------- */

static void print_time(const struct script *sc, uint64_t t)
{
	if (sc->ns)
		printf("%" PRIu64 ".%09" PRIu64, t / 1000000000u, t % 1000000000u);
	else
		printf("%" PRIu64 ".%06" PRIu64, t / 1000000000u, (t % 1000000000u) / 1000u);
}

static void print_sideband(struct script *sc, const struct hwt_fmt_record *rec)
{
	const char *name = hwt_fmt_record_type_name(rec->type);

	switch (rec->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		break;
	default:
		return;
	}
	printf("%16s %6" PRIu32 "/%-6" PRIu32 " [%03" PRIu32 "] ", "", rec->id.pid, rec->id.tid,
	       rec->id.cpu);
	print_time(sc, rec->id.time);
	printf(": %s", name ? name : "?");
	switch (rec->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		printf(" %" PRIu32 "/%" PRIu32 ": [%#" PRIx64 "(%#" PRIx64 ") @ %#" PRIx64
		       "]: %s\n",
		       rec->u.mmap.pid, rec->u.mmap.tid, rec->u.mmap.addr, rec->u.mmap.len,
		       rec->u.mmap.pgoff, rec->u.mmap.filename);
		break;
	case PERF_RECORD_COMM:
		printf("%s: %s %" PRIu32 "/%" PRIu32 "\n",
		       rec->misc & PERF_RECORD_MISC_COMM_EXEC ? " EXEC" : "", rec->u.comm.comm,
		       rec->u.comm.pid, rec->u.comm.tid);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		printf(" %" PRIu32 "/%" PRIu32 " <- %" PRIu32 "/%" PRIu32 "\n", rec->u.fork.pid,
		       rec->u.fork.tid, rec->u.fork.ppid, rec->u.fork.ptid);
		break;
	case PERF_RECORD_LOST:
		printf(" %" PRIu64 " records\n", rec->u.lost.lost);
		break;
	case PERF_RECORD_LOST_SAMPLES:
		printf(" %" PRIu64 " samples\n", rec->u.lost_samples.lost);
		break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		printf(" %s%s", rec->misc & PERF_RECORD_MISC_SWITCH_OUT ? "OUT" : "IN",
		       rec->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT ? " preempt" : "");
		if (rec->type == PERF_RECORD_SWITCH_CPU_WIDE)
			printf(" %s %" PRIu32 "/%" PRIu32,
			       rec->misc & PERF_RECORD_MISC_SWITCH_OUT ? "next" : "prev",
			       rec->u.sw.next_prev_pid, rec->u.sw.next_prev_tid);
		putchar('\n');
		break;
	default:
		putchar('\n');
		break;
	}
}

/* --- samples -------------------------------------------------------------- */

/* Prints "ADDR sym+0xOFF (object)" (or "ADDR func (inlined)") for frame i
 * of the sample the reader resolved last. */
static void print_frame(const struct script *sc, const struct hwt_rep_sample *smp,
			const struct hwt_rep_sample_frame *d, size_t i, const char *indent)
{
	const struct hwt_rep_frame *f = hwt_rep_dict_frame_get(sc->dict, smp->frame_ids[i]);
	const char *obj = f && f->object ? f->object : "[unknown]";

	if (!f || !f->function) {
		printf("%s%16" PRIx64 " [unknown] (%s)\n", indent, d[i].ip, obj);
		return;
	}
	if (d[i].flags & HWT_REP_SF_TRUNCATED)
		printf("%s%16" PRIx64 " %s (%s)\n", indent, d[i].ip, f->function, obj);
	else if (d[i].flags & HWT_REP_SF_INLINED)
		printf("%s%16" PRIx64 " %s (inlined)\n", indent, d[i].ip, f->function);
	else
		printf("%s%16" PRIx64 " %s+%#" PRIx64 " (%s)\n", indent, d[i].ip, f->function,
		       d[i].offset, obj);
}

static void print_sample(struct script *sc, const struct hwt_fmt_record *rec,
			 const struct hwt_rep_sample *smp)
{
	const struct hwt_fmt_sample *s = &rec->u.sample;
	const struct hwt_rep_sample_frame *d;
	size_t n = hwt_rep_samples_detail(sc->rs, &d), leaf = 0;
	const char *comm = smp->comm;
	char pidbuf[16];

	sc->st.samples++;
	if (sc->npids && !in_list(sc->pids, sc->npids, s->pid))
		return;
	if (sc->ntids && !in_list(sc->tids, sc->ntids, s->tid))
		return;
	if (sc->comm && (!comm || strcmp(comm, sc->comm)))
		return;
	sc->st.shown++;
	if (!comm) {
		snprintf(pidbuf, sizeof(pidbuf), ":%" PRIu32, s->pid);
		comm = pidbuf;
	}
	printf("%16s %6" PRIu32 "/%-6" PRIu32 " [%03" PRIu32 "] ", comm, s->pid, s->tid, s->cpu);
	print_time(sc, s->time);
	printf(": %10" PRIu64 " %s: ", smp->weight, smp->event);
	/* The header names the function the sample hit (its inline chain
	 * shows in the call chain below). */
	while (leaf + 1 < n && (d[leaf].flags & HWT_REP_SF_INLINED))
		leaf++;
	if (n)
		print_frame(sc, smp, d, leaf, "");
	else
		printf("%16" PRIx64 " [unknown] ([unknown])\n", s->ip);
	if (sc->no_callchain || !(s->callchain_nr || s->branch_nr || s->regs_user_abi))
		return;
	for (size_t i = 0; i < n; i++)
		print_frame(sc, smp, d, i, "\t");
	putchar('\n');
}

/* --- setup ------------------------------------------------------------------ */

int hwt_script_samples(int argc, char **argv)
{
	enum {
		O_MAXSTACK = 256,
		O_PID,
		O_TID,
		O_COMM,
		O_INLINE,
		O_SIDEBAND,
		O_NS,
		O_KALLSYMS,
		O_DEBUGDIR
	};
	static const struct option opts[] = {
	    {"input", required_argument, NULL, 'i'},
	    {"hide-call-graph", no_argument, NULL, 'G'},
	    {"max-stack", required_argument, NULL, O_MAXSTACK},
	    {"pid", required_argument, NULL, O_PID},
	    {"tid", required_argument, NULL, O_TID},
	    {"comm", required_argument, NULL, O_COMM},
	    {"inline", no_argument, NULL, O_INLINE},
	    {"show-sideband", no_argument, NULL, O_SIDEBAND},
	    {"ns", no_argument, NULL, O_NS},
	    {"kallsyms", required_argument, NULL, O_KALLSYMS},
	    {"debug-dir", required_argument, NULL, O_DEBUGDIR},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct hwt_rep_samples_config rcfg;
	struct hwt_fmt_record rec;
	struct script sc;
	const char *input = NULL, *kallsyms = NULL, *debug_dir = NULL;
	bool quiet = false;
	uint64_t off = 0;
	int c, err, ret = HWT_EXIT_ERROR;
	unsigned long long v;

	memset(&sc, 0, sizeof(sc));
	sc.max_stack = 127;
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:Gqh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case 'G':
			sc.no_callchain = true;
			break;
		case O_MAXSTACK:
			if (hwt_cli_parse_u64(optarg, false, &v) < 0 || v > 100000)
				return hwt_cli_usage_error("script", "--max-stack takes a number");
			sc.max_stack = (unsigned)v;
			break;
		case O_PID:
			if (hwt_cli_parse_ids(optarg, 0, &sc.pids, &sc.npids) < 0)
				return hwt_cli_usage_error("script",
							   "--pid takes PIDs separated by "
							   "commas");
			break;
		case O_TID:
			if (hwt_cli_parse_ids(optarg, 0, &sc.tids, &sc.ntids) < 0)
				return hwt_cli_usage_error("script",
							   "--tid takes TIDs separated by "
							   "commas");
			break;
		case O_COMM:
			sc.comm = optarg;
			break;
		case O_INLINE:
			sc.inline_frames = true;
			break;
		case O_SIDEBAND:
			sc.show_sideband = true;
			break;
		case O_NS:
			sc.ns = true;
			break;
		case O_KALLSYMS:
			kallsyms = optarg;
			break;
		case O_DEBUGDIR:
			debug_dir = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return HWT_EXIT_OK;
		default:
			free(sc.pids);
			free(sc.tids);
			return hwt_cli_usage_error("script", "unknown option");
		}
	}
	if (optind != argc) {
		free(sc.pids);
		free(sc.tids);
		return hwt_cli_usage_error("script",
					   "unexpected argument '%s' (the recording is "
					   "given with -i)",
					   argv[optind]);
	}

	if (!input)
		input = hwt_cli_default_input();
	if (hwt_cli_open_session(input, &sc.s) != HWT_EXIT_OK)
		goto out;
	if (hwt_pts_session_has_pt(sc.s)) {
		/* A PT recording: the decoding mode takes it (and closes it). */
		struct hwt_fmt_session *s = sc.s;

		free(sc.pids);
		free(sc.tids);
		return hwt_script_ptrec(argc, argv, s);
	}
	if (hwt_rep_dict_alloc(&sc.dict) < 0)
		goto oom;
	hwt_rep_samples_config_init(&rcfg);
	rcfg.log = *hwt_cli_logger();
	rcfg.callchains = !sc.no_callchain;
	rcfg.inline_frames = sc.inline_frames;
	rcfg.max_stack = sc.max_stack ? sc.max_stack : 1;
	rcfg.kallsyms = kallsyms;
	rcfg.debug_dir = debug_dir;
	err = hwt_rep_samples_alloc(&sc.rs, sc.s, sc.dict, &rcfg);
	if (err < 0)
		goto oom;

	while ((err = hwt_fmt_session_next(sc.s, &rec, &off)) != -HWT_EEOS) {
		struct hwt_rep_sample smp;

		if (err < 0) {
			/* A damaged chunk of a .hwt: go on with the next one
			 * (said once at the end); broken perf.data framing
			 * ends the records. */
			if (hwt_fmt_session_kind(sc.s) == HWT_FMT_KIND_HWT && err != -ENOMEM)
				continue;
			if (err == -ENOMEM)
				goto oom;
			break;
		}
		err = hwt_rep_samples_record(sc.rs, &rec, &smp);
		if (err < 0)
			goto oom;
		if (err == 1) {
			print_sample(&sc, &rec, &smp);
			continue;
		}
		if (sc.show_sideband)
			print_sideband(&sc, &rec);
	}
	if (fflush(stdout) != 0) {
		hwt_cli_error("cannot write the output: %s", strerror(errno));
		goto out;
	}
	if (hwt_cli_damage(input, sc.s, sc.st.samples == 0) && sc.st.samples == 0)
		goto out;
	if (!quiet) {
		struct hwt_rep_samples_stats rst;

		hwt_rep_samples_stats(sc.rs, &rst);
		hwt_cli_note("script: %" PRIu64 " samples%s, %" PRIu64 " frames (%" PRIu64
			     " unsymbolized, %" PRIu64 " unmapped); lost while recording: %" PRIu64
			     " records, %" PRIu64 " samples%s",
			     sc.st.samples,
			     sc.st.shown != sc.st.samples ? " (some filtered out)" : "", rst.frames,
			     rst.unsymbolized, rst.unmapped, rst.lost_records, rst.lost_samples,
			     rst.bad_records ? "; malformed records skipped" : "");
		hwt_cli_stack_notes(input, &rst);
	}
	ret = HWT_EXIT_OK;
	goto out;
oom:
	hwt_cli_error("out of memory");
out:
	hwt_rep_samples_free(sc.rs);
	hwt_rep_dict_free(sc.dict);
	hwt_fmt_session_close(sc.s);
	free(sc.pids);
	free(sc.tids);
	return ret;
}
