/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/ptreport.c - what report, flame and branches share for Intel PT
 * recordings: telling a PT recording from one of samples, and decoding it
 * through the PT session (ptsession/) into the exact views of ptflow/ with
 * the command's filters, printing one line for each problem (a recording
 * that cannot be read, decoding that stopped) and a summary that never
 * hides losses.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "cli/cli.h"
#include "format/format.h"
#include "ptsession/ptsession.h"

/* What the quiet open of hwt_cli_is_pt() said: kept, and said once the open
 * succeeded (a failed open is the samples path's to report, in its words). */
static struct hwt_buf quiet; /* lines: a level digit, the text, a NUL */

static void keep_said(void *ctx, enum hwt_log_level level, const char *msg)
{
	char tag = (char)('0' + (int)level);
	size_t at = quiet.len;

	(void)ctx;
	/* Out of memory: the line is lost, nothing else is. */
	if (hwt_buf_append(&quiet, &tag, 1) < 0 || hwt_buf_append(&quiet, msg, strlen(msg) + 1) < 0)
		quiet.len = at;
}

static void say_kept(void)
{
	const struct hwt_logger *log = hwt_cli_logger();

	for (size_t at = 0; at < quiet.len;) {
		const char *line = (const char *)quiet.data + at;

		hwt_log(log, (enum hwt_log_level)(line[0] - '0'), "%s", line + 1);
		at += strlen(line) + 1;
	}
	hwt_buf_fini(&quiet);
}

bool hwt_cli_is_pt(const char *path, struct hwt_fmt_session **session,
		   struct hwt_fmt_session **samples)
{
	struct hwt_fmt_session_config scfg;
	struct hwt_fmt_session *s = NULL;
	uint64_t off = 0;

	*session = NULL;
	if (samples)
		*samples = NULL;
	/* A pipe can be read once: it goes to the samples path, which names
	 * a PT stream when it finds one. */
	if (!path || !strcmp(path, "-"))
		return false;
	hwt_fmt_session_config_init(&scfg);
	scfg.log.fn = keep_said;
	hwt_buf_fini(&quiet);
	if (hwt_fmt_session_open(&s, path, &scfg, &off) < 0) {
		hwt_buf_fini(&quiet);
		return false;
	}
	if (hwt_pts_session_has_pt(s)) {
		/* What the open said; the decoder's path says the rest
		 * (damage, losses) in its own summary. */
		say_kept();
		hwt_fmt_session_set_log(s, &(struct hwt_logger){NULL, NULL});
		*session = s;
		return true;
	}
	/* Samples: read on from this open (the pre-scan of a large file is
	 * not done twice). */
	if (samples) {
		say_kept();
		hwt_fmt_session_set_log(s, hwt_cli_logger());
		*samples = s;
	} else {
		hwt_buf_fini(&quiet);
		hwt_fmt_session_close(s);
	}
	return false;
}

int hwt_cli_not_pt(const char *path, const char *need)
{
	struct hwt_fmt_session *s = NULL;

	/* Say why: unreadable (in the words of every command), or samples. */
	if (hwt_cli_open_recording(path, &s) == HWT_EXIT_OK) {
		hwt_fmt_session_close(s);
		hwt_cli_error("%s holds samples, not an Intel PT trace: %s (record it with "
			      "'hwtrace record --pt' or '--pt=emulate')",
			      path, need);
	}
	return HWT_EXIT_ERROR;
}

int hwt_cli_ptrun(struct hwt_cli_ptrun *r, const char *path, struct hwt_fmt_session *session,
		  struct hwt_ptf_config *cfg, const struct hwt_cli_samples_opts *so)
{
	struct hwt_pts_config pc;
	struct hwt_dec_sink sink;
	uint64_t off = 0;
	int err;

	memset(r, 0, sizeof(*r));
	r->session = session;
	r->path = path;
	hwt_pts_config_init(&pc);
	pc.log = *hwt_cli_logger();
	if (so) {
		pc.pids = so->filter.pids;
		pc.npids = so->filter.npids;
		pc.tids = so->filter.tids;
		pc.ntids = so->filter.ntids;
		pc.time_start = so->filter.time_begin;
		pc.time_end = so->filter.time_end;
		pc.kallsyms = so->kallsyms;
	}
	pc.dec_flags |= hwt_ptf_dec_flags(cfg);
	err = hwt_pts_open(&r->pts, session, &pc, &off);
	if (err < 0) {
		r->pts = NULL;
		if (err == -ENOMEM) {
			hwt_cli_error("out of memory");
			return HWT_EXIT_ERROR;
		}
		return hwt_cli_recording_error(path, err, off);
	}
	cfg->aspace = hwt_pts_aspace(r->pts);
	cfg->log = *hwt_cli_logger();
	hwt_pts_stats(r->pts, &r->st);
	cfg->emulated = r->st.emulated;
	err = hwt_ptf_alloc(&r->ptf, cfg);
	if (err < 0) {
		hwt_cli_error("cannot set up the PT report: %s", hwt_strerror(err));
		return HWT_EXIT_ERROR;
	}
	hwt_ptf_sink(r->ptf, &sink);
	err = hwt_pts_add_sink(r->pts, &sink);
	if (err >= 0)
		err = hwt_pts_run(r->pts);
	if (err >= 0)
		err = hwt_ptf_finish(r->ptf);
	if (err < 0) {
		hwt_cli_error("%s: decoding stopped: %s", path, hwt_strerror(err));
		return HWT_EXIT_ERROR;
	}
	hwt_pts_stats(r->pts, &r->st);
	{
		struct hwt_ptf_stats fst;

		hwt_ptf_stats(r->ptf, &fst);
		if (hwt_cli_damage(path, session, fst.insns == 0) && fst.insns == 0)
			return HWT_EXIT_ERROR;
	}
	if (r->st.migrated_threads && !r->st.stitched)
		hwt_cli_warn(
		    "%s: %" PRIu64 " thread(s) ran on more than one CPU and the recording "
		    "has no timing to follow them: their call stacks restart on each CPU's "
		    "trace (calls made on another CPU show under [unknown]); instruction and "
		    "call counts are exact",
		    path, r->st.migrated_threads);
	{
		struct hwt_ptf_stats fst;
		char losses[160];

		hwt_ptf_stats(r->ptf, &fst);
		hwt_dec_losses_str(fst.gaps, fst.lost_gaps, fst.lost_bytes, fst.overflows, losses,
				   sizeof(losses));
		if (fst.gaps)
			hwt_cli_warn("%s: %s in the trace: the flow resumes after each gap, and "
				     "calls open across one are not counted as completed",
				     path, losses);
	}
	return HWT_EXIT_OK;
}

void hwt_cli_ptrun_note(const struct hwt_cli_ptrun *r, const char *what)
{
	struct hwt_ptf_stats st;

	char losses[160];

	hwt_ptf_stats(r->ptf, &st);
	hwt_dec_losses_str(st.gaps, st.lost_gaps, st.lost_bytes, st.overflows, losses,
			   sizeof(losses));
	hwt_cli_note("%s: %s%" PRIu64 " instructions, %" PRIu64 " calls, %" PRIu64
		     " thread%s, %" PRIu64 " functions (%" PRIu64 " unsymbolized), %s (exact, "
		     "from Intel PT)",
		     what, r->st.emulated ? "emulated PT: " : "", st.insns, st.calls, st.threads,
		     st.threads == 1 ? "" : "s", st.functions, st.unsymbolized, losses);
}

void hwt_cli_ptrun_fini(struct hwt_cli_ptrun *r)
{
	hwt_ptf_free(r->ptf);
	hwt_pts_close(r->pts);
	hwt_fmt_session_close(r->session);
	memset(r, 0, sizeof(*r));
}
