/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/recording.c - what every analysis command (script, report, flame)
 * does the same way with its input: the default file (hwtrace.hwt, then
 * perf.data, as perf looks for perf.data), opening it as a session (.hwt,
 * perf.data in file or pipe mode, "-" for a pipe on stdin), and one-line
 * errors that name the cause and the fix.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "format/format.h"
#include "report/report.h"

const char *hwt_cli_default_input(void)
{
	if (access("hwtrace.hwt", F_OK) == 0)
		return "hwtrace.hwt";
	if (access("perf.data", F_OK) == 0)
		return "perf.data";
	return "hwtrace.hwt";
}

int hwt_cli_recording_error(const char *path, int err, uint64_t off)
{
	char line[1024];

	hwt_fmt_open_error_str(path, err, off, line, sizeof(line));
	hwt_cli_error("%s", line);
	return HWT_EXIT_ERROR;
}

void hwt_cli_damage_say(const char *path, const struct hwt_fmt_damage *d, bool error,
			bool nothing_read)
{
	char line[1024];

	hwt_fmt_damage_str(path, d, nothing_read, line, sizeof(line));
	if (error || nothing_read)
		hwt_cli_error("%s", line);
	else
		hwt_cli_warn("%s", line);
}

bool hwt_cli_damage(const char *path, const struct hwt_fmt_session *session, bool nothing_read)
{
	struct hwt_fmt_damage d;

	if (!hwt_fmt_session_damage(session, &d))
		return false;
	hwt_cli_damage_say(path, &d, false, nothing_read);
	return true;
}

int hwt_cli_open_session(const char *path, struct hwt_fmt_session **out)
{
	struct hwt_fmt_session_config cfg;
	uint64_t off = 0;
	int err;

	*out = NULL;
	hwt_fmt_session_config_init(&cfg);
	cfg.log = *hwt_cli_logger();
	err = hwt_fmt_session_open(out, path, &cfg, &off);
	if (err < 0) {
		*out = NULL;
		return hwt_cli_recording_error(path, err, off);
	}
	return HWT_EXIT_OK;
}

int hwt_cli_open_recording(const char *path, struct hwt_fmt_session **out)
{
	int rc = hwt_cli_open_session(path, out);

	if (rc != HWT_EXIT_OK)
		return rc;
	if (hwt_fmt_session_naux(*out)) {
		/* A trace, not samples: the decoder's mode reads it. */
		hwt_cli_error(
		    "%s holds an Intel PT trace (%zu AUX stream(s)), not samples: decode it "
		    "with 'hwtrace script -i %s'",
		    path, hwt_fmt_session_naux(*out), path);
		hwt_fmt_session_close(*out);
		*out = NULL;
		return HWT_EXIT_ERROR;
	}
	return HWT_EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* Sample options shared by report and flame                                 */

void hwt_cli_samples_opts_init(struct hwt_cli_samples_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->callchains = true;
	o->max_stack = 127;
}

void hwt_cli_samples_opts_fini(struct hwt_cli_samples_opts *o)
{
	for (size_t i = 0; i < o->nlists; i++)
		free(o->lists[i]);
	free(o->comms);
	free(o->objects);
	free(o->pids);
	free(o->tids);
	memset(o, 0, sizeof(*o));
}

/* Splits a comma list into o-owned strings appended to *v. */
static int split_strs(struct hwt_cli_samples_opts *o, const char *s, const char ***v, size_t *n)
{
	char *copy = strdup(s), *save = NULL;

	if (!copy || o->nlists == HWT_ARRAY_SIZE(o->lists)) {
		free(copy);
		return -1;
	}
	o->lists[o->nlists++] = copy;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		const char **nv = realloc(*v, (*n + 1) * sizeof(*nv));

		if (!nv)
			return -1;
		*v = nv;
		(*v)[(*n)++] = t;
	}
	return *n ? 0 : -1;
}

/* Seconds with up to nine decimals ("9721.55") to ns; "" is `dflt`. */
static int parse_seconds(const char *s, size_t len, uint64_t dflt, uint64_t *out)
{
	uint64_t sec = 0, ns = 0, scale = 100000000;
	size_t i = 0;

	if (!len) {
		*out = dflt;
		return 0;
	}
	for (; i < len && s[i] != '.'; i++) {
		if (s[i] < '0' || s[i] > '9' || sec > UINT64_MAX / 10 / 1000000000)
			return -1;
		sec = sec * 10 + (uint64_t)(s[i] - '0');
	}
	if (i < len)
		i++;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		ns += (uint64_t)(s[i] - '0') * scale;
		scale /= 10;
	}
	*out = sec * 1000000000 + ns;
	return 0;
}

int hwt_cli_samples_option(struct hwt_cli_samples_opts *o, int opt, const char *arg,
			   const char *cmd)
{
	switch (opt) {
	case HWT_CLI_OPT_COMM:
		if (split_strs(o, arg, &o->comms, &o->filter.ncomms) < 0)
			return hwt_cli_usage_error(
			    cmd, "--comm takes command names separated by commas");
		o->filter.comms = o->comms;
		return 0;
	case HWT_CLI_OPT_OBJECT:
		if (split_strs(o, arg, &o->objects, &o->filter.nobjects) < 0)
			return hwt_cli_usage_error(cmd,
						   "--dso takes object paths or names separated by "
						   "commas");
		o->filter.objects = o->objects;
		return 0;
	case HWT_CLI_OPT_PID:
		if (hwt_cli_parse_ids(arg, -1, &o->pids, &o->filter.npids) < 0)
			return hwt_cli_usage_error(cmd, "--pid takes PIDs separated by commas");
		o->filter.pids = o->pids;
		return 0;
	case HWT_CLI_OPT_TID:
		if (hwt_cli_parse_ids(arg, -1, &o->tids, &o->filter.ntids) < 0)
			return hwt_cli_usage_error(cmd, "--tid takes TIDs separated by commas");
		o->filter.tids = o->tids;
		return 0;
	case HWT_CLI_OPT_TIME: {
		const char *comma = strchr(arg, ',');

		if (!comma ||
		    parse_seconds(arg, (size_t)(comma - arg), 0, &o->filter.time_begin) < 0 ||
		    parse_seconds(comma + 1, strlen(comma + 1), 0, &o->filter.time_end) < 0 ||
		    (o->filter.time_end && o->filter.time_end <= o->filter.time_begin))
			return hwt_cli_usage_error(cmd,
						   "--time takes START,END in seconds as 'hwtrace "
						   "script' shows them (either may be empty), "
						   "not '%s'",
						   arg);
		return 0;
	}
	case HWT_CLI_OPT_INLINE:
		o->inline_frames = true;
		return 0;
	case HWT_CLI_OPT_MAXSTACK: {
		unsigned long long v;

		if (hwt_cli_parse_u64(arg, false, &v) < 0 || v < 1 || v > 1024)
			return hwt_cli_usage_error(cmd, "--max-stack takes 1 to 1024, not '%s'",
						   arg);
		o->max_stack = (unsigned int)v;
		return 0;
	}
	case HWT_CLI_OPT_KALLSYMS:
		o->kallsyms = arg;
		return 0;
	case HWT_CLI_OPT_DEBUGDIR:
		o->debug_dir = arg;
		return 0;
	default:
		return hwt_cli_usage_error(cmd, "unknown option");
	}
}

void hwt_cli_stack_notes(const char *path, const struct hwt_rep_samples_stats *st)
{
	static const char *const why[] = {
	    [2] = "code without CFI",	     [3] = "stacks deeper than the copy",
	    [4] = "addresses in no mapping", [5] = "malformed CFI",
	    [6] = "registers missing",	     [7] = "objects that cannot be read",
	};
	size_t top = 2;

	if (st->fp_user_stacks >= 20 && st->fp_short * 2 > st->fp_user_stacks)
		hwt_cli_note("%s: %" PRIu64 "%% of the call stacks stop after one or two frames: "
			     "the code was built without frame pointers (-O2 omits them); "
			     "record with --call-graph dwarf for its whole stacks",
			     path, st->fp_short * 100 / st->fp_user_stacks);
	if (!st->unwind_truncated)
		return;
	for (size_t i = 2; i < HWT_ARRAY_SIZE(why); i++)
		if (st->unwind_ends[i] > st->unwind_ends[top])
			top = i;
	hwt_cli_note("%s: %" PRIu64 " of %" PRIu64 " stacks unwound from the CFI end early "
		     "(marked [truncated: ...]), mostly for %s%s",
		     path, st->unwind_truncated, st->unwound, why[top],
		     top == 3 ? ": record with --call-graph dwarf,SIZE for a larger copy" : "");
}

int hwt_cli_load_samples(struct hwt_cli_samples_opts *o, const char *path,
			 struct hwt_fmt_session *session, struct hwt_rep_profile **out,
			 struct hwt_rep_timeline *timeline)
{
	struct hwt_rep_samples_config rcfg;
	struct hwt_rep_profile_config pc;
	struct hwt_rep_samples_stats st;
	struct hwt_rep_event_info ev[64];
	struct hwt_fmt_session *s = session;
	struct hwt_rep_samples *rs = NULL;
	struct hwt_rep_profile *p = NULL;
	size_t nev;
	uint64_t off = 0;
	int64_t n;
	int rc = HWT_EXIT_ERROR;

	*out = NULL;
	if (!s && hwt_cli_open_recording(path, &s) != HWT_EXIT_OK)
		return HWT_EXIT_ERROR;
	hwt_rep_profile_config_init(&pc);
	pc.log = *hwt_cli_logger();
	pc.filter = o->filter;
	if (hwt_rep_profile_alloc(&p, &pc) < 0)
		goto oom;
	hwt_rep_samples_config_init(&rcfg);
	rcfg.log = *hwt_cli_logger();
	rcfg.callchains = o->callchains;
	rcfg.inline_frames = o->inline_frames;
	rcfg.srclines = o->srclines;
	rcfg.max_stack = o->max_stack;
	rcfg.kallsyms = o->kallsyms;
	rcfg.debug_dir = o->debug_dir;
	if (hwt_rep_samples_alloc(&rs, s, hwt_rep_profile_dict(p), &rcfg) < 0)
		goto oom;
	nev = hwt_rep_samples_events(rs, ev, HWT_ARRAY_SIZE(ev));
	o->nevents = nev;
	o->any_callchain = false;
	o->no_callchain_event = NULL;
	for (size_t i = 0; i < nev && i < HWT_ARRAY_SIZE(ev); i++) {
		if (ev[i].callchain)
			o->any_callchain = true;
		else if (!o->no_callchain_event) {
			snprintf(o->no_callchain_name, sizeof(o->no_callchain_name), "%s",
				 ev[i].name);
			o->no_callchain_event = o->no_callchain_name;
		}
	}
	if (o->need_callchains && o->no_callchain_event) {
		hwt_cli_error("%s: event '%s' was recorded without call chains, so it has no call "
			      "graph: record with -g, or report with -g none (or --no-children)",
			      path, o->no_callchain_event);
		goto out;
	}
	n = hwt_rep_samples_load(rs, p, timeline, &off);
	if (n < 0) {
		if (n == -ENOMEM)
			goto oom;
		if (n == -HWT_EINTERNAL) {
			hwt_cli_error(
			    "%s: internal error while resolving samples (please report it)", path);
			goto out;
		}
		rc = hwt_cli_recording_error(path, (int)n, off);
		goto out;
	}
	hwt_rep_samples_stats(rs, &st);
	o->unmapped = st.unmapped;
	o->stats = st;
	if (hwt_cli_damage(path, s, n == 0) && n == 0)
		goto out;
	if (n == 0) {
		hwt_cli_error("%s holds no samples (%s): record some with 'hwtrace record -g -- "
			      "COMMAND'",
			      path,
			      st.lost_records || st.lost_samples ? "all of them were lost"
			      : nev ? "the command ran too briefly, or the event never fired"
				    : "no events were recorded");
		goto out;
	}
	if (o->filter.ncomms || o->filter.npids || o->filter.ntids || o->filter.nobjects ||
	    o->filter.time_begin || o->filter.time_end) {
		const struct hwt_rep_stats *ps = hwt_rep_profile_stats(p);

		if (!ps->samples)
			hwt_cli_warn("%s: the filters rejected all %" PRIu64
				     " samples: loosen --comm/--pid/--tid/--dso/--time",
				     path, ps->filtered);
	}
	if (!o->quiet)
		hwt_cli_stack_notes(path, &st);
	if (st.lost_records || st.lost_samples)
		hwt_cli_warn("%s: %" PRIu64 " records and %" PRIu64
			     " samples were lost while recording (the shares are of what was "
			     "kept): record with a larger buffer (-m) or a lower frequency (-F)",
			     path, st.lost_records, st.lost_samples);
	*out = p;
	p = NULL;
	rc = HWT_EXIT_OK;
	goto out;
oom:
	hwt_cli_error("out of memory");
out:
	hwt_rep_samples_free(rs);
	hwt_rep_profile_free(p);
	hwt_fmt_session_close(s);
	return rc;
}
