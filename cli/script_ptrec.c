/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/script_ptrec.c - `hwtrace script` on an Intel PT recording (.hwt from
 * `record --pt` or `--pt=emulate`, or perf.data with intel_pt): decodes it
 * through the PT session (ptsession/) and prints, per thread, what perf
 * script's --itrace letters ask for (i instructions, b taken branches,
 * c calls, r returns, e errors and gaps), each line with comm, pid/tid and
 * time and symbolized as "symbol+off (object)"; or, with --flow, the calls
 * and returns indented by call depth with each frame's duration and
 * instruction count (perf script --call-trace / magic-trace style). Losses
 * are always printed: as lines with `e`/--flow, and in the summary.
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

enum {
	V_INSN = 1 << 0,
	V_BRANCH = 1 << 1,
	V_CALL = 1 << 2,
	V_RETURN = 1 << 3,
	V_ERROR = 1 << 4,
};

struct ptrec {
	struct hwt_pts *pts;
	const struct hwt_dec_config *dcfg;
	unsigned view;
	bool flow, ns;
	struct hwt_cli_samples_opts so;
	uint64_t *ips;
	size_t nips;
	uint64_t lines;
	FILE *out;
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
		"                         r returns, e errors and trace gaps\n"
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

static void print_time(struct ptrec *p, const struct hwt_dec_rec *rec)
{
	uint64_t t = rec->time;

	if (!(rec->flags & HWT_DEC_RF_TIME)) {
		fprintf(p->out, "%*s", p->ns ? 20 : 17, "?");
		return;
	}
	if (!p->dcfg->tconv.valid)
		t = rec->tsc;
	if (p->ns)
		fprintf(p->out, "%10" PRIu64 ".%09" PRIu64, t / 1000000000u, t % 1000000000u);
	else
		fprintf(p->out, "%10" PRIu64 ".%06" PRIu64, t / 1000000000u,
			(t % 1000000000u) / 1000u);
}

/* The thread's command name, or NULL when --comm rules the record out. */
static const char *comm_of(struct ptrec *p, const struct hwt_dec_rec *rec, bool *skip)
{
	const char *comm = hwt_pts_comm(p->pts, rec->tid, rec->time);

	*skip = false;
	if (p->so.filter.ncomms) {
		bool hit = false;

		for (size_t i = 0; comm && i < p->so.filter.ncomms; i++)
			hit |= !strcmp(comm, p->so.filter.comms[i]);
		*skip = !hit;
	}
	return comm ? comm : "[unknown]";
}

static void prefix(struct ptrec *p, const struct hwt_dec_rec *rec, const char *comm)
{
	fprintf(p->out, "%16s %6" PRId32 "/%-6" PRId32 " ", comm, rec->pid, rec->tid);
	print_time(p, rec);
	fputs(": ", p->out);
}

/* "ADDR sym+0xOFF (object)" */
static void print_addr(struct ptrec *p, const struct hwt_dec_rec *rec, uint64_t ip)
{
	struct hwt_pts_sym sym;
	int err = hwt_pts_symbolize(p->pts, rec->pid, rec->time, ip, &sym);

	fprintf(p->out, "%16" PRIx64 " ", ip);
	if (!err)
		fprintf(p->out, "%s+0x%" PRIx64, sym.function, sym.offset);
	else
		fputs("[unknown]", p->out);
	fprintf(p->out, " (%s)", sym.object ? sym.object : "[unknown]");
}

static const char *gap_kind(uint32_t kind)
{
	switch (kind) {
	case HWT_DEC_GAP_ERROR:
		return "decode error";
	case HWT_DEC_GAP_SYNC:
		return "no sync";
	case HWT_DEC_GAP_OVERFLOW:
		return "overflow";
	case HWT_DEC_GAP_LOST:
		return "trace lost";
	case HWT_DEC_GAP_CONFIG:
		return "configuration";
	default:
		return "gap";
	}
}

static void print_gap(struct ptrec *p, const struct hwt_dec_rec *rec)
{
	fprintf(p->out, "%s: %s", gap_kind(rec->u.gap.kind),
		rec->u.gap.what ? rec->u.gap.what : hwt_strerror(rec->u.gap.err));
	if (rec->u.gap.ip)
		fprintf(p->out, " at %#" PRIx64, rec->u.gap.ip);
	fprintf(p->out, " (offset %#" PRIx64, rec->offset);
	if (rec->u.gap.size)
		fprintf(p->out, ", %" PRIu64 " bytes", rec->u.gap.size);
	fputs(")\n", p->out);
}

static bool taken(const struct hwt_dec_rec *rec)
{
	if (rec->flags & HWT_DEC_RF_PARTIAL)
		return false;
	switch (rec->u.block.branch) {
	case HWT_DEC_BR_COND:
		return (rec->flags & HWT_DEC_RF_TAKEN) != 0;
	case HWT_DEC_BR_JUMP:
	case HWT_DEC_BR_IND_JUMP:
	case HWT_DEC_BR_CALL:
	case HWT_DEC_BR_IND_CALL:
	case HWT_DEC_BR_RETURN:
	case HWT_DEC_BR_FAR_CALL:
	case HWT_DEC_BR_FAR_RETURN:
	case HWT_DEC_BR_FAR_JUMP:
		return true;
	default:
		return false;
	}
}

/* The instruction addresses of a block: the cached basic block's, or (the
 * PTXED engine's libipt blocks) decoded from the image. */
static size_t block_ips(struct ptrec *p, const struct hwt_dec_rec *rec)
{
	uint32_t n = rec->u.block.ninsn;
	uint64_t ip = rec->u.block.ip;

	if (n > p->nips) {
		uint64_t *v = realloc(p->ips, n * sizeof(*v));

		if (!v)
			return 0;
		p->ips = v;
		p->nips = n;
	}
	if (rec->u.block.bb)
		return hwt_dec_bb_insns(rec->u.block.bb, p->ips, n);
	for (uint32_t i = 0; i < n; i++) {
		struct hwt_dec_insn insn;

		p->ips[i] = ip;
		if (i + 1 == n || !rec->u.block.image ||
		    hwt_dec_insn_decode(rec->u.block.image, ip, rec->u.block.mode, &insn) < 0)
			return i + 1;
		ip += insn.size;
	}
	return n;
}

static int on_itrace(struct ptrec *p, const struct hwt_dec_rec *rec, const char *comm)
{
	switch (rec->type) {
	case HWT_DEC_REC_BLOCK:
		if (p->view & V_INSN) {
			size_t n = block_ips(p, rec);

			for (size_t i = 0; i < n; i++) {
				prefix(p, rec, comm);
				fputs("insn: ", p->out);
				print_addr(p, rec, p->ips[i]);
				fputc('\n', p->out);
			}
		}
		if ((p->view & V_BRANCH) && taken(rec) && rec->u.block.next_ip) {
			prefix(p, rec, comm);
			fputs("branch: ", p->out);
			print_addr(p, rec, rec->u.block.end_ip);
			fputs(" => ", p->out);
			print_addr(p, rec, rec->u.block.next_ip);
			fputc('\n', p->out);
		}
		break;
	case HWT_DEC_REC_CALL:
		if (!(p->view & V_CALL))
			break;
		prefix(p, rec, comm);
		fputs((rec->flags & HWT_DEC_RF_ASYNC) ? "interrupt: " : "call: ", p->out);
		print_addr(p, rec, rec->u.call.from);
		fputs(" => ", p->out);
		print_addr(p, rec, rec->u.call.to);
		fputc('\n', p->out);
		break;
	case HWT_DEC_REC_RETURN:
		if (!(p->view & V_RETURN) || (rec->flags & HWT_DEC_RF_UNWOUND))
			break;
		prefix(p, rec, comm);
		fputs("return: ", p->out);
		print_addr(p, rec, rec->u.ret.from);
		fputs(" => ", p->out);
		print_addr(p, rec, rec->u.ret.to);
		fputc('\n', p->out);
		break;
	case HWT_DEC_REC_GAP:
		if (!(p->view & V_ERROR))
			break;
		prefix(p, rec, comm);
		print_gap(p, rec);
		break;
	default:
		break;
	}
	return 0;
}

static void print_func(struct ptrec *p, const struct hwt_dec_rec *rec, uint64_t ip)
{
	struct hwt_pts_sym sym;

	if (hwt_pts_symbolize(p->pts, rec->pid, rec->time, ip, &sym) == 0)
		fprintf(p->out, "%s", sym.function);
	else
		fprintf(p->out, "[unknown %#" PRIx64 "]", ip);
	fprintf(p->out, " (%s)", sym.object ? sym.object : "[unknown]");
}

/* Duration of a frame: "?" without time on both ends. */
static void print_duration(struct ptrec *p, const struct hwt_dec_rec *rec)
{
	const struct hwt_dec_tconv *tc = &p->dcfg->tconv;
	uint64_t a, b;

	if (!(rec->flags & HWT_DEC_RF_TIME) || !rec->u.ret.call_tsc ||
	    (rec->flags & HWT_DEC_RF_UNKNOWN_FRAME)) {
		fputs("?", p->out);
		return;
	}
	a = tc->valid ? hwt_dec_tsc_to_perf(tc, rec->u.ret.call_tsc) : rec->u.ret.call_tsc;
	b = tc->valid ? rec->time : rec->tsc;
	if (b < a) {
		fputs("?", p->out);
		return;
	}
	if (!tc->valid)
		fprintf(p->out, "%" PRIu64 " tsc", b - a);
	else if (b - a < 10000)
		fprintf(p->out, "%" PRIu64 " ns", b - a);
	else
		fprintf(p->out, "%.3f us", (double)(b - a) / 1000.0);
}

static int on_flow(struct ptrec *p, const struct hwt_dec_rec *rec, const char *comm)
{
	uint32_t depth;

	switch (rec->type) {
	case HWT_DEC_REC_CALL:
		depth = rec->depth ? rec->depth - 1 : 0;
		prefix(p, rec, comm);
		fprintf(p->out, "%*s-> ", (int)(2 * depth), "");
		print_func(p, rec, rec->u.call.to);
		if (rec->flags & HWT_DEC_RF_ASYNC)
			fputs(" [interrupt]", p->out);
		fputc('\n', p->out);
		break;
	case HWT_DEC_REC_RETURN:
		prefix(p, rec, comm);
		fprintf(p->out, "%*s<- ", (int)(2 * rec->depth), "");
		if (rec->u.ret.func)
			print_func(p, rec, rec->u.ret.func);
		else
			fputs("[frame from before the trace]", p->out);
		fputs(" ", p->out);
		print_duration(p, rec);
		if (!(rec->flags & HWT_DEC_RF_UNKNOWN_FRAME))
			fprintf(p->out, ", %" PRIu64 " insns", rec->u.ret.insns);
		if (rec->flags & HWT_DEC_RF_UNWOUND)
			fputs(" [unwound]", p->out);
		fputc('\n', p->out);
		break;
	case HWT_DEC_REC_GAP:
		prefix(p, rec, comm);
		fputs("!! ", p->out);
		print_gap(p, rec);
		break;
	default:
		break;
	}
	return 0;
}

static int on_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct ptrec *p = ctx;
	bool skip;
	const char *comm = comm_of(p, rec, &skip);

	if (skip)
		return 0;
	if (p->flow)
		return on_flow(p, rec, comm);
	return on_itrace(p, rec, comm);
}

static int parse_itrace(const char *s, unsigned *view)
{
	*view = 0;
	for (; *s; s++) {
		switch (*s) {
		case 'i':
			*view |= V_INSN;
			break;
		case 'b':
			*view |= V_BRANCH;
			break;
		case 'c':
			*view |= V_CALL;
			break;
		case 'r':
			*view |= V_RETURN;
			break;
		case 'e':
			*view |= V_ERROR;
			break;
		default:
			return -HWT_EINVAL;
		}
	}
	return 0;
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
	struct hwt_dec_sink sink;
	struct hwt_pts_stats st;
	struct ptrec p;
	const char *input = NULL;
	bool quiet = false;
	unsigned long long v;
	uint64_t off = 0;
	int c, err, ret = HWT_EXIT_ERROR;

	memset(&p, 0, sizeof(p));
	p.out = stdout;
	p.view = V_CALL | V_ERROR;
	hwt_cli_samples_opts_init(&p.so);
	hwt_pts_config_init(&cfg);
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case O_ITRACE:
			if (parse_itrace(optarg, &p.view) < 0 || !p.view) {
				ret = hwt_cli_usage_error("script",
							  "--itrace takes letters among "
							  "i, b, c, r, e, not '%s'",
							  optarg);
				goto out;
			}
			break;
		case O_FLOW:
			p.flow = true;
			break;
		case O_ENGINE:
			if (!strcmp(optarg, "fast")) {
				cfg.engine = HWT_DEC_ENGINE_FAST;
			} else if (!strcmp(optarg, "libipt")) {
				cfg.engine = HWT_DEC_ENGINE_LIBIPT;
			} else if (!strcmp(optarg, "ptxed")) {
				cfg.engine = HWT_DEC_ENGINE_PTXED;
			} else {
				ret = hwt_cli_usage_error("script",
							  "--engine is fast, libipt or "
							  "ptxed, not '%s'",
							  optarg);
				goto out;
			}
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
			p.ns = true;
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
	p.dcfg = hwt_pts_dec_config(p.pts);
	sink.size = sizeof(sink);
	sink.want = HWT_DEC_WANT(HWT_DEC_REC_BLOCK) | HWT_DEC_WANT(HWT_DEC_REC_CALL) |
		    HWT_DEC_WANT(HWT_DEC_REC_RETURN) | HWT_DEC_WANT(HWT_DEC_REC_GAP);
	if (p.flow)
		sink.want &= ~HWT_DEC_WANT(HWT_DEC_REC_BLOCK);
	sink.rec = on_rec;
	sink.ctx = &p;
	err = hwt_pts_add_sink(p.pts, &sink);
	if (err >= 0)
		err = hwt_pts_run(p.pts);
	if (fflush(stdout) != 0) {
		hwt_cli_error("cannot write the output: %s", strerror(errno));
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
	hwt_pts_close(p.pts);
	hwt_fmt_session_close(session);
	hwt_cli_samples_opts_fini(&p.so);
	free(p.ips);
	return ret;
}
