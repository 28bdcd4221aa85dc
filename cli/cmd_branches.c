/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/cmd_branches.c - `hwtrace branches -i F FUNC[+OFF]`: one function of
 * an Intel PT recording instruction by instruction, FreeBSD DTrace's kinst
 * view without probe effect: how often each instruction ran, each
 * conditional branch taken / not taken, each indirect branch's targets,
 * with disassembly and file:line; --stacks names one instruction and lists
 * the distinct call stacks that reached it with their counts (DTrace's
 * @[stack()] = count() at a kinst probe). The work is ptflow's BRANCHES
 * view; this file parses and prints.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "ptflow/ptflow.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: hwtrace branches [-i FILE] FUNC[+OFF] [--stacks ADDR|+OFF] [options]\n"
		     "\n"
		     "Shows one function of an Intel PT recording instruction by instruction:\n"
		     "exact execution counts, conditional branches taken / not taken, the\n"
		     "targets of indirect jumps and calls, disassembly and source lines.\n"
		     "FUNC+OFF shows only the instruction at byte offset OFF.\n"
		     "\n"
		     "  -i, --input FILE     the recording (default hwtrace.hwt, else perf.data)\n"
		     "  --stacks ADDR|+OFF   the call stacks that reached the instruction at\n"
		     "                       ADDR (as the table prints it) or at FUNC+OFF, with\n"
		     "                       how often each did\n"
		     "  --json               JSON instead of text\n"
		     "  -o, --output FILE    write there instead of standard output\n"
		     "  --pid PIDS, --tid TIDS, --time START,END, --kallsyms FILE\n"
		     "                       as for 'hwtrace report'\n"
		     "  -q, --quiet          no summary line on standard error\n");
	hwt_cli_help_end(out);
}

/* "FUNC" or "FUNC+OFF" (OFF decimal or 0x-hex): the last '+' followed by a
 * number splits them, so C++ operator+ names stay whole. */
static int parse_target(char *spec, int64_t *off)
{
	char *plus = strrchr(spec, '+');
	unsigned long long v;

	*off = -1;
	if (plus && plus != spec && plus[1] && hwt_cli_parse_u64(plus + 1, false, &v) == 0 &&
	    v <= INT64_MAX) {
		*plus = '\0';
		*off = (int64_t)v;
	}
	return *spec ? 0 : -HWT_EINVAL;
}

int hwt_cmd_branches(int argc, char **argv)
{
	enum { OPT_STACKS = 256, OPT_JSON };
	static const struct option opts[] = {
	    {"input", required_argument, NULL, 'i'},
	    {"stacks", required_argument, NULL, OPT_STACKS},
	    {"json", no_argument, NULL, OPT_JSON},
	    {"output", required_argument, NULL, 'o'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    HWT_CLI_SAMPLES_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	const char *input = NULL, *outpath = NULL, *stacks = NULL;
	struct hwt_fmt_session *session = NULL;
	struct hwt_cli_samples_opts so;
	struct hwt_ptf_branch_info info;
	struct hwt_ptf_config cfg;
	struct hwt_cli_ptrun run;
	struct hwt_buf text;
	enum hwt_rep_format fmt = HWT_REP_FMT_TEXT;
	bool quiet = false;
	char *func = NULL;
	FILE *out = stdout;
	int c, err, rc = HWT_EXIT_ERROR;

	hwt_cli_samples_opts_init(&so);
	hwt_ptf_config_init(&cfg);
	hwt_buf_init(&text);
	memset(&run, 0, sizeof(run));
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case 'o':
			outpath = optarg;
			break;
		case OPT_STACKS:
			stacks = optarg;
			break;
		case OPT_JSON:
			fmt = HWT_REP_FMT_JSON;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			rc = HWT_EXIT_OK;
			goto out;
		case HWT_CLI_OPT_PID:
		case HWT_CLI_OPT_TID:
		case HWT_CLI_OPT_TIME:
		case HWT_CLI_OPT_KALLSYMS:
			if ((rc = hwt_cli_samples_option(&so, c, optarg, "branches")) != 0)
				goto out;
			rc = HWT_EXIT_ERROR;
			break;
		default:
			rc = hwt_cli_usage_error("branches", "unknown option");
			goto out;
		}
	}
	if (optind + 1 != argc) {
		if (optind == argc)
			rc = hwt_cli_usage_error("branches", "name the function: hwtrace branches "
							     "-i FILE FUNC[+OFF]");
		else
			rc = hwt_cli_usage_error("branches",
						 "one function at a time (unexpected "
						 "'%s')",
						 argv[optind + 1]);
		goto out;
	}
	func = strdup(argv[optind]);
	if (!func) {
		hwt_cli_error("out of memory");
		goto out;
	}
	if (parse_target(func, &cfg.branch_off) < 0) {
		rc = hwt_cli_usage_error("branches", "'%s' names no function (FUNC or FUNC+OFF)",
					 argv[optind]);
		goto out;
	}
	if (stacks) {
		unsigned long long v;

		if (stacks[0] == '+' && hwt_cli_parse_u64(stacks + 1, false, &v) == 0 &&
		    v <= INT64_MAX) {
			cfg.stacks_off = (int64_t)v;
		} else if (hwt_cli_parse_u64(stacks, false, &v) == 0 && v) {
			cfg.stacks_addr = v;
		} else {
			rc = hwt_cli_usage_error("branches",
						 "--stacks takes an address (0x...) or "
						 "+OFF within %s, not '%s'",
						 func, stacks);
			goto out;
		}
	}
	if (!input)
		input = hwt_cli_default_input();
	if (!hwt_cli_is_pt(input, &session, NULL)) {
		rc = hwt_cli_not_pt(input, "per-instruction counts need one");
		goto out;
	}
	cfg.views = HWT_PTF_BRANCHES | HWT_PTF_CALLS;
	cfg.branch_func = func;
	rc = hwt_cli_ptrun(&run, input, session, &cfg, &so);
	if (rc != HWT_EXIT_OK)
		goto out;
	rc = HWT_EXIT_ERROR;
	if (hwt_ptf_branches_info(run.ptf, &info) < 0 || !info.found) {
		hwt_cli_error("%s did not run in %s (or is not a function of a traced program): "
			      "'hwtrace report --calls -i %s --all' lists the functions that ran",
			      func, input, input);
		goto out;
	}
	if (cfg.branch_off >= 0 && !info.ninsns) {
		hwt_cli_error("%s+0x%" PRIx64 " is not the start of an instruction of %s (%" PRIu64
			      " bytes): take an offset from 'hwtrace branches -i %s %s'",
			      func, (uint64_t)cfg.branch_off, func, info.size, input, func);
		goto out;
	}
	if (fmt == HWT_REP_FMT_JSON) {
		err = hwt_buf_printf(&text, "{\"branches\":");
		if (err >= 0)
			err = hwt_ptf_branches_print(run.ptf, fmt, &text);
		if (err >= 0 && stacks) {
			err = hwt_buf_printf(&text, ",\"stacks\":");
			if (err >= 0)
				err = hwt_ptf_stacks_print(run.ptf, fmt, &text);
		}
		if (err >= 0)
			err = hwt_buf_printf(&text, "}\n");
	} else {
		err = hwt_ptf_branches_print(run.ptf, fmt, &text);
		if (err >= 0 && stacks) {
			err = hwt_buf_printf(&text, "\n");
			if (err >= 0)
				err = hwt_ptf_stacks_print(run.ptf, fmt, &text);
		}
	}
	if (err < 0) {
		hwt_cli_error("cannot print the report: %s", hwt_strerror(err));
		goto out;
	}
	if (outpath && !(out = fopen(outpath, "w"))) {
		out = stdout;
		hwt_cli_error("cannot write %s: %s (choose a writable path with -o)", outpath,
			      strerror(errno));
		goto out;
	}
	if (fwrite(text.data, 1, text.len, out) != text.len || fflush(out) != 0) {
		hwt_cli_error("cannot write %s: %s", outpath ? outpath : "standard output",
			      strerror(errno));
		goto out;
	}
	if (stacks) {
		size_t n = 0;
		uint64_t total = 0;

		hwt_ptf_stacks_count(run.ptf, &n, &total);
		if (!total)
			hwt_cli_warn("no execution reached the --stacks instruction (%s): it never "
				     "ran, or is not the start of an instruction of %s",
				     stacks, func);
	}
	if (!quiet)
		hwt_cli_ptrun_note(&run, "branches");
	rc = HWT_EXIT_OK;
out:
	if (out != stdout && fclose(out) != 0 && rc == HWT_EXIT_OK) {
		hwt_cli_error("cannot write %s: %s", outpath, strerror(errno));
		rc = HWT_EXIT_ERROR;
	}
	hwt_buf_fini(&text);
	if (run.ptf || run.pts)
		hwt_cli_ptrun_fini(&run);
	else
		hwt_fmt_session_close(session);
	hwt_cli_samples_opts_fini(&so);
	free(func);
	return rc;
}
