/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/script_ptrec.c - `hwtrace script` on an Intel PT recording (.hwt from
 * `record --pt` or `--pt=emulate`, or perf.data with intel_pt): options,
 * then the PT session (ptsession/) decodes the recording and the printer
 * (ptprint/) prints what perf script's --itrace letters or --flow ask for,
 * symbolized through the session. Losses are always printed: as lines with
 * `e`/--flow, and in the summary.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "format/format.h"
#include "ptprint/ptprint.h"
#include "ptsession/ptsession.h"

struct ptrec {
	struct hwt_pts *pts;
	struct hwt_ptp *ptp;
	struct hwt_cli_samples_opts so;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hwtrace script [-i FILE] [--itrace=LETTERS | --flow] [--pid PIDS]\n"
		"                      [--tid TIDS] [--comm NAMES] [--time START,END]\n"
		"                      [--engine fast|libipt|ptxed] [--threads N] [--ns] [-q]\n"
		"\n"
		"Decodes an Intel PT recording (hwtrace record --pt / --pt=emulate, or perf.data\n"
		"from perf record -e intel_pt//) with its sideband and prints the control flow\n"
		"of every thread, symbolized.\n"
		"\n"
		"  -i, --input FILE     the recording (default hwtrace.hwt, else perf.data;\n"
		"                       - reads a perf pipe on standard input)\n"
		"      --itrace=LETTERS what to print, perf's letters (default ce):\n"
		"                         i instructions, b taken branches, c calls,\n"
		"                         r returns, e errors and trace gaps,\n"
		"                         v trace events and thread switches\n"
		"      --flow           calls and returns indented by depth, with each\n"
		"                       frame's duration and instructions (? without timing)\n"
		"      --pid PIDS       only these processes (comma-separated)\n"
		"      --tid TIDS       only these threads\n"
		"      --comm NAMES     only threads with these command names\n"
		"      --time START,END only this time range, in seconds as printed\n"
		"      --engine NAME    decoder: fast (default), libipt or ptxed\n"
		"      --threads N      decode PSB segments on N threads (same output)\n"
		"      --ns             times in nanoseconds\n"
		"  -q, --quiet          no summary line at the end\n"
		"  -h, --help           show this help\n");
	hwt_cli_help_end(f);
}

/* The printer's callbacks: symbols and thread names from the session,
 * output to stdout. */
static int sym_cb(void *ctx, int32_t pid, uint64_t time, uint64_t ip, struct hwt_ptp_sym *out)
{
	struct ptrec *p = ctx;
	struct hwt_pts_sym sym;
	int err = hwt_pts_symbolize(p->pts, pid, time, ip, &sym);

	out->function = sym.function;
	out->offset = sym.offset;
	out->object = sym.object;
	return err < 0 || !sym.function ? -HWT_ENOSYM : 0;
}

static const char *comm_cb(void *ctx, int32_t tid, uint64_t time)
{
	struct ptrec *p = ctx;

	return hwt_pts_comm(p->pts, tid, time);
}

/* Records of threads that --comm rules out are not printed. */
static int on_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct ptrec *p = ctx;

	if (p->so.filter.ncomms) {
		const char *comm = hwt_pts_comm(p->pts, rec->tid, rec->time);
		bool hit = false;

		for (size_t i = 0; comm && i < p->so.filter.ncomms; i++)
			hit |= !strcmp(comm, p->so.filter.comms[i]);
		if (!hit)
			return 0;
	}
	return hwt_ptp_print(p->ptp, rec);
}

static void summary(struct ptrec *p, const char *input)
{
	struct hwt_pts_stats st;

	char losses[160];

	hwt_pts_stats(p->pts, &st);
	hwt_dec_losses_str(st.dec.gaps, st.lost_gaps, st.lost_bytes, st.dec.overflows, losses,
			   sizeof(losses));
	hwt_cli_note("script: %s%" PRIu64 " PT stream(s) (%s), %" PRIu64 " bytes: %" PRIu64
		     " instructions, %" PRIu64 " calls, %" PRIu64 " returns; %s%s",
		     st.emulated ? "emulated PT, " : "", st.streams_decoded,
		     st.per_cpu ? "per CPU" : "per thread", st.aux_bytes, st.dec.insns,
		     st.dec.calls, st.dec.returns, losses,
		     st.missing_objects ? "; some code could not be read (see above)" : "");
	if (st.migrated_threads && st.stitched)
		hwt_cli_note("script: %" PRIu64 " thread(s) ran on more than one CPU: the CPUs' "
			     "traces were decoded together in time order and their call stacks "
			     "carried across (%" PRIu64
			     " return(s) into frames entered before a switch)",
			     st.migrated_threads, st.stitched_returns);
	else if (st.migrated_threads)
		hwt_cli_note(
		    "script: %" PRIu64 " thread(s) ran on more than one CPU and the "
		    "recording has no timing to follow them: their call depth restarts on "
		    "each CPU's trace (returns to calls made on another CPU are returns from "
		    "unknown frames)",
		    st.migrated_threads);
	(void)input;
}

int hwt_script_ptrec(int argc, char **argv, struct hwt_fmt_session *session)
{
	enum { O_ITRACE = 300, O_FLOW, O_ENGINE, O_THREADS, O_NS };
	static const struct option opts[] = {
	    {"input", required_argument, NULL, 'i'},
	    {"itrace", required_argument, NULL, O_ITRACE},
	    {"flow", no_argument, NULL, O_FLOW},
	    {"call-trace", no_argument, NULL, O_FLOW},
	    {"engine", required_argument, NULL, O_ENGINE},
	    {"threads", required_argument, NULL, O_THREADS},
	    {"ns", no_argument, NULL, O_NS},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    HWT_CLI_SAMPLES_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	struct hwt_pts_config cfg;
	struct hwt_ptp_config pcfg;
	struct hwt_dec_sink sink;
	struct hwt_pts_stats st;
	struct ptrec p;
	const char *input = NULL;
	bool quiet = false;
	unsigned long long v;
	uint64_t off = 0;
	int c, err, ret = HWT_EXIT_ERROR;

	memset(&p, 0, sizeof(p));
	hwt_ptp_config_init(&pcfg);
	pcfg.views = HWT_PTP_CALL | HWT_PTP_ERROR;
	hwt_cli_samples_opts_init(&p.so);
	hwt_pts_config_init(&cfg);
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case O_ITRACE:
			if (hwt_ptp_parse_itrace(optarg, &pcfg.views) < 0 || !pcfg.views) {
				ret = hwt_cli_usage_error("script",
							  "--itrace takes letters among "
							  "i, b, c, r, e, v, not '%s'",
							  optarg);
				goto out;
			}
			break;
		case O_FLOW:
			pcfg.flow = true;
			break;
		case O_ENGINE:
			if ((ret = hwt_cli_parse_engine("script", optarg, &cfg.engine)) != 0)
				goto out;
			break;
		case O_THREADS:
			if (hwt_cli_parse_u64(optarg, false, &v) < 0 || v > 256) {
				ret =
				    hwt_cli_usage_error("script", "--threads takes a number up to "
								  "256");
				goto out;
			}
			cfg.threads = (unsigned)v;
			break;
		case O_NS:
			pcfg.ns = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			ret = HWT_EXIT_OK;
			goto out;
		case HWT_CLI_OPT_COMM:
		case HWT_CLI_OPT_PID:
		case HWT_CLI_OPT_TID:
		case HWT_CLI_OPT_TIME:
			err = hwt_cli_samples_option(&p.so, c, optarg, "script");
			if (err) {
				ret = err;
				goto out;
			}
			break;
		default:
			ret = hwt_cli_usage_error("script", "unknown option for a PT recording");
			goto out;
		}
	}
	if (optind != argc) {
		ret = hwt_cli_usage_error("script",
					  "unexpected argument '%s' (the recording is "
					  "given with -i)",
					  argv[optind]);
		goto out;
	}
	if (cfg.engine == HWT_DEC_ENGINE_PTXED &&
	    (pcfg.flow || (pcfg.views & (HWT_PTP_CALL | HWT_PTP_RETURN)))) {
		ret = hwt_cli_usage_error("script", "the ptxed engine decodes libipt's blocks "
						    "without call stacks: --flow and --itrace=c/r "
						    "need --engine fast or libipt");
		goto out;
	}
	if (!input)
		input = hwt_cli_default_input();
	if (!session) {
		struct hwt_fmt_session_config scfg;

		hwt_fmt_session_config_init(&scfg);
		scfg.log = *hwt_cli_logger();
		err = hwt_fmt_session_open(&session, input, &scfg, &off);
		if (err < 0) {
			session = NULL;
			ret = hwt_cli_recording_error(input, err, off);
			goto out;
		}
	}
	cfg.log = *hwt_cli_logger();
	cfg.pids = p.so.filter.pids;
	cfg.npids = p.so.filter.npids;
	cfg.tids = p.so.filter.tids;
	cfg.ntids = p.so.filter.ntids;
	cfg.time_start = p.so.filter.time_begin;
	cfg.time_end = p.so.filter.time_end;
	cfg.kallsyms = p.so.kallsyms;
	err = hwt_pts_open(&p.pts, session, &cfg, &off);
	if (err == -HWT_ENOPT) {
		hwt_cli_error("%s holds samples, not an Intel PT trace: --itrace and --flow need "
			      "one (record it with 'hwtrace record --pt' or '--pt=emulate')",
			      input);
		goto out;
	}
	if (err < 0) {
		ret = err == -ENOMEM ? (hwt_cli_error("out of memory"), HWT_EXIT_ERROR)
				     : hwt_cli_recording_error(input, err, off);
		goto out;
	}
	pcfg.tconv = hwt_pts_dec_config(p.pts)->tconv;
	pcfg.write = hwt_cli_write_stdout;
	pcfg.symbolize = sym_cb;
	pcfg.comm = comm_cb;
	pcfg.ctx = &p;
	err = hwt_ptp_alloc(&p.ptp, &pcfg);
	if (err < 0) {
		hwt_cli_error("script: %s", hwt_strerror(err));
		goto out;
	}
	hwt_ptp_sink(p.ptp, &sink);
	sink.rec = on_rec;
	sink.ctx = &p;
	err = hwt_pts_add_sink(p.pts, &sink);
	if (err >= 0)
		err = hwt_pts_run(p.pts);
	if (err >= 0)
		err = hwt_ptp_flush(p.ptp);
	if ((err == -EIO || err == -EPIPE) || fflush(stdout) != 0) {
		hwt_cli_error("cannot write the output: %s", strerror(err < 0 ? -err : errno));
		goto out;
	}
	if (err < 0) {
		hwt_cli_error("%s: decoding stopped: %s", input, hwt_strerror(err));
		goto out;
	}
	if (!quiet)
		summary(&p, input);
	hwt_pts_stats(p.pts, &st);
	if (hwt_cli_damage(input, session, st.dec.insns == 0) && st.dec.insns == 0)
		goto out;
	ret = HWT_EXIT_OK;
out:
	hwt_ptp_free(p.ptp);
	hwt_pts_close(p.pts);
	hwt_fmt_session_close(session);
	hwt_cli_samples_opts_fini(&p.so);
	return ret;
}
