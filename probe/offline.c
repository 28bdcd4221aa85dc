/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/offline.c - one-liners over recordings (.hwt or perf.data, through
 * format/'s session): each probe is matched to the recording's events
 * (profile probes take the timed and counting samples, a tracepoint probe
 * the samples of its tracepoint, software/hardware probes those of their
 * event), then the records are walked in time order: sideband feeds the
 * runtime's address spaces and comms, every sample fires its probes.
 * Probes that only exist live (uprobes, kprobes) are refused with the way
 * to get the same answer offline. pt: probes fire from the decoded PT
 * after the records (probe/pt.c).
 */
#include "probe/probe_live_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "pmc/pmc.h"
#include "ptsession/ptsession.h"
#include "unwind/unwind.h"

static int odiag(struct hwt_probe_diag *diag, const struct hwt_probe_prog *prog, size_t pos,
		 int err, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The unwinder's view of the sampled process. */
static int unw_find(void *ctx, uint64_t ip, struct hwt_unw_module *mod)
{
	struct hwt_probe_rt *rt = ctx;
	uint64_t addr = 0;
	bool file = false;
	int err = prb_syms_obj_of(rt->syms, rt->unw_pid, ip, &mod->obj, &addr, &file);

	if (err < 0)
		return err;
	mod->bias = mod->obj ? ip - addr : 0;
	mod->unreadable = !mod->obj && file;
	return 0;
}

/* A sample recorded with --call-graph dwarf: its user stack unwound from
 * the CFI becomes the hit's ustack (the same unwinder as report and
 * script). A stack the unwinder could not finish keeps the frames found. */
static int unwind_hit(struct hwt_probe_rt *rt, const struct hwt_fmt_record *rec,
		      struct hwt_probe_hit *hit)
{
	const struct hwt_fmt_sample *s = &rec->u.sample;
	struct hwt_unw_frame fr[PRB_MAX_FRAMES];
	struct hwt_unw_result res;
	struct hwt_unw_regs regs;
	struct hwt_unw_stack st;
	int n, err;

	if (!(s->type & PERF_SAMPLE_REGS_USER) || !(s->type & PERF_SAMPLE_STACK_USER) ||
	    hwt_unw_regs_from_perf(s->regs_user_abi, s->regs_user_mask, s->regs_user, &regs) < 0)
		return 0;
	if (!rt->unw && (err = hwt_unw_alloc(NULL, &rt->unw)) < 0)
		return err;
	st.start = regs.r[HWT_UNW_RSP];
	st.data = s->stack_user;
	st.size = (size_t)(s->stack_user_dyn_size < s->stack_user_size ? s->stack_user_dyn_size
								       : s->stack_user_size);
	rt->unw_pid = hit->pid;
	n = hwt_unw_walk(rt->unw, &regs, &st, unw_find, rt, fr, PRB_MAX_FRAMES, &res);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		rt->ustack[i] = fr[i].ip;
	hit->stack = rt->ustack;
	hit->stack_nr = (size_t)n;
	return 0;
}

static int odiag(struct hwt_probe_diag *diag, const struct hwt_probe_prog *prog, size_t pos,
		 int err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (diag)
		hwt_probe_diag_at(diag, prog ? prog->text : NULL, pos, "%s", msg);
	return err;
}

/* A sampling event that profile probes take: clocks and counters, not
 * tracepoints, breakpoints or software events that count occurrences. */
static bool is_profile_event(const struct perf_event_attr *a)
{
	if (a->type == PERF_TYPE_SOFTWARE)
		return a->config == PERF_COUNT_SW_CPU_CLOCK ||
		       a->config == PERF_COUNT_SW_TASK_CLOCK;
	if (a->type == PERF_TYPE_TRACEPOINT || a->type == PERF_TYPE_BREAKPOINT)
		return false;
	return a->sample_period != 0 || a->freq;
}

static bool matches(const struct prb_probe *p, const struct hwt_fmt_event *ev,
		    const struct perf_event_attr *want)
{
	const struct perf_event_attr *a = &ev->attr;

	switch (p->info.kind) {
	case HWT_PROBE_PROFILE:
		return is_profile_event(a);
	case HWT_PROBE_TRACEPOINT: {
		char name[512];

		if (a->type != PERF_TYPE_TRACEPOINT)
			return false;
		snprintf(name, sizeof(name), "%s:%s", p->subsys, p->event);
		/* ids differ across kernels: the name decides when there is one */
		if (ev->name[0])
			return !strcmp(ev->name, name);
		return p->tp && a->config == p->tp->id;
	}
	case HWT_PROBE_SOFTWARE:
	case HWT_PROBE_HARDWARE:
		return want && a->type == want->type && a->config == want->config;
	default:
		return false;
	}
}

int hwt_probe_offline_run(struct hwt_probe_rt *rt, struct hwt_fmt_session *session,
			  struct hwt_probe_diag *diag)
{
	const struct hwt_probe_prog *prog;
	const struct hwt_fmt_evlist *evl;
	struct hwt_fmt_session_stats ss;
	struct hwt_fmt_record rec;
	uint8_t *match = NULL; /* nev x nprobes */
	size_t nev, np;
	uint64_t off = 0;
	bool need_pt = false;
	int err = 0;

	if (diag)
		memset(diag, 0, sizeof(*diag));
	if (!rt || !session)
		return -HWT_EINVAL;
	prog = rt->prog;
	evl = hwt_fmt_session_evlist(session);
	nev = hwt_fmt_evlist_count(evl);
	np = prog->nprobes;
	if (nev && np && !(match = calloc(nev * np, 1)))
		return -ENOMEM;

	for (size_t i = 0; i < np; i++) {
		const struct prb_probe *p = &prog->probes[i];
		struct perf_event_attr want;
		bool any = false;

		if (p->bpf_only && p->info.kind != HWT_PROBE_BEGIN &&
		    p->info.kind != HWT_PROBE_END) {
			err = odiag(diag, prog, p->bpf_only_pos, -HWT_ENOTSUP,
				    "%s cannot run over a recording: %s (live BPF only)", p->text,
				    p->bpf_only);
			goto out;
		}
		switch (p->info.kind) {
		case HWT_PROBE_BEGIN:
		case HWT_PROBE_END:
			continue;
		case HWT_PROBE_INTERVAL:
			err = odiag(diag, prog, p->pos, -HWT_ENOTSUP,
				    "%s is a live probe (a timer): drop -i, give -p PID, -a or -- "
				    "CMD",
				    p->text);
			goto out;
		case HWT_PROBE_UPROBE:
		case HWT_PROBE_URETPROBE:
		case HWT_PROBE_KPROBE:
		case HWT_PROBE_KRETPROBE:
			err =
			    odiag(diag, prog, p->pos, -HWT_ENOTSUP,
				  "%s is a live probe (drop -i, give -p PID or -- CMD); over a PT "
				  "recording the same question is pt:OBJ:FUNC:entry / :return",
				  p->text);
			goto out;
		case HWT_PROBE_PT_ENTRY:
		case HWT_PROBE_PT_RETURN:
		case HWT_PROBE_PT_INSN:
			if (!hwt_pts_session_has_pt(session)) {
				err = odiag(
				    diag, prog, p->pos, -HWT_ENOTSUP,
				    "%s needs an Intel PT recording, and this one holds no PT "
				    "data: record with 'hwtrace record --pt=emulate -o FILE -- "
				    "CMD'",
				    p->text);
				goto out;
			}
			need_pt = true;
			continue;
		default:
			break;
		}
		if (p->info.kind == HWT_PROBE_SOFTWARE || p->info.kind == HWT_PROBE_HARDWARE) {
			char *s = NULL;

			if ((err = hwt_probe_live_attr(prog, i, &rt->cfg, &want, &s, diag)) < 0)
				goto out;
			free(s);
		}
		for (size_t e = 0; e < nev; e++) {
			if (matches(p, hwt_fmt_evlist_event(evl, e), &want)) {
				match[e * np + i] = 1;
				any = true;
			}
		}
		if (!any) {
			char names[512] = "";
			size_t used = 0;

			for (size_t e = 0; e < nev && used < sizeof(names); e++) {
				const struct hwt_fmt_event *ev = hwt_fmt_evlist_event(evl, e);

				used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
							 used ? ", " : "",
							 ev->name[0] ? ev->name : "?");
			}
			err = odiag(diag, prog, p->pos, -HWT_ENOEVENT,
				    "%s matches no event of the recording, which holds: %s%s",
				    p->text, names[0] ? names : "(no events)",
				    p->info.kind == HWT_PROBE_PROFILE
					? " (profile probes take cpu-clock, task-clock and counter "
					  "samples: record with perf record -F or -c)"
					: "");
			goto out;
		}
	}

	if ((err = hwt_probe_rt_begin(rt)) < 0)
		goto out;
	while (!rt->exited && (err = hwt_fmt_session_next(session, &rec, &off)) != -HWT_EEOS) {
		struct hwt_probe_hit hit;

		if (err < 0) {
			/* A damaged .hwt chunk is skipped, broken perf.data
			 * framing ends the records: what was read counts, and
			 * the caller says how the recording is damaged
			 * (hwt_fmt_session_damage). */
			if (err == -ENOMEM || hwt_fmt_session_kind(session) != HWT_FMT_KIND_HWT)
				break;
			continue;
		}
		switch (rec.type) {
		case PERF_RECORD_SAMPLE:
			if (rec.event < 0 || (size_t)rec.event >= nev) {
				rt->stats.bad_samples++;
				break;
			}
			for (size_t i = 0; i < np; i++) {
				const struct prb_probe *p = &prog->probes[i];

				if (!match[(size_t)rec.event * np + i])
					continue;
				prb_hit_from_sample(&rec,
						    p->info.kind == HWT_PROBE_KPROBE ||
							p->info.kind == HWT_PROBE_KRETPROBE,
						    &hit);
				if ((err = unwind_hit(rt, &rec, &hit)) < 0 ||
				    (err = hwt_probe_rt_fire(rt, i, &hit)) < 0)
					goto out;
			}
			break;
		case PERF_RECORD_MMAP:
		case PERF_RECORD_MMAP2:
			if (rec.u.mmap.filename &&
			    (err = hwt_probe_rt_mmap(rt, (int32_t)rec.u.mmap.pid, rec.u.mmap.addr,
						     rec.u.mmap.len, rec.u.mmap.pgoff,
						     rec.u.mmap.filename)) < 0)
				goto out;
			break;
		case PERF_RECORD_COMM:
			if ((err = hwt_probe_rt_comm(rt, (int32_t)rec.u.comm.pid,
						     (int32_t)rec.u.comm.tid, rec.u.comm.comm,
						     rec.misc & PERF_RECORD_MISC_COMM_EXEC)) < 0)
				goto out;
			break;
		case PERF_RECORD_FORK:
			if ((err = hwt_probe_rt_fork(rt, (int32_t)rec.u.fork.ppid,
						     (int32_t)rec.u.fork.pid,
						     (int32_t)rec.u.fork.tid)) < 0)
				goto out;
			break;
		case PERF_RECORD_EXIT:
			hwt_probe_rt_exit(rt, (int32_t)rec.u.fork.pid, (int32_t)rec.u.fork.tid);
			break;
		}
	}
	if (err == -HWT_EEOS || rt->exited || (err < 0 && err != -ENOMEM))
		err = 0;
	if (err < 0) {
		err =
		    odiag(diag, NULL, 0, err, "cannot read the recording at offset %" PRIu64 ": %s",
			  off, hwt_strerror(err));
		goto out;
	}
	hwt_fmt_session_stats(session, &ss);
	rt->stats.bad_samples += ss.bad_records;
	rt->stats.lost += ss.lost_samples + ss.lost_records;
	if (need_pt && !rt->exited && (err = prb_pt_offline(rt, session, diag)) < 0)
		goto out;
	err = hwt_probe_rt_end(rt);
out:
	free(match);
	return err;
}
