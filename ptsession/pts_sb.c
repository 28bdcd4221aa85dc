/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptsession/pts_sb.c - the sideband pass of a PT session: reads every record
 * of the recording once, in time order, and builds what decoding needs
 * afterwards: a code image per process over time (MMAP/MMAP2 with their file
 * offsets, exec starting an empty image, fork copying the parent's, the
 * recorded vDSO copy), the thread -> process map, the threads that ran on
 * each CPU over time (SWITCH / SWITCH_CPU_WIDE), the places where AUX data
 * was lost (AUX records flagged TRUNCATED or PARTIAL) and the symbolization
 * address space. It also derives the decoder configuration from the
 * metadata: hwtrace's pt.config.* keys, or perf's AUXTRACE_INFO record.
 *
 * Images are built here, before any decoder exists, so they can be changed
 * in place; from the end of the pass on they are immutable, which is what
 * makes the context hook safe on several decoding threads.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "ptsession/pts_int.h"

/* ------------------------------------------------------------------------ */
/* Metadata -> decoder configuration                                         */

static bool meta_u64(const struct hwt_fmt_session *s, const char *key, uint64_t *v)
{
	const struct hwt_fmt_meta *m = hwt_fmt_session_meta_find(s, key);

	if (!m || (m->type != HWT_FMT_META_U64 && m->type != HWT_FMT_META_I64))
		return false;
	*v = m->v.u64;
	return true;
}

/* perf's intel-pt AUXTRACE_INFO priv[] layout (tools/perf/arch/x86/util/
 * intel-pt.c, util/intel-pt.h). */
enum {
	PPT_PMU_TYPE,
	PPT_TIME_SHIFT,
	PPT_TIME_MULT,
	PPT_TIME_ZERO,
	PPT_CAP_USER_TIME_ZERO,
	PPT_TSC_BIT,
	PPT_NORETCOMP_BIT,
	PPT_HAVE_SCHED_SWITCH,
	PPT_SNAPSHOT_MODE,
	PPT_PER_CPU_MMAPS,
	PPT_MTC_BIT,
	PPT_MTC_FREQ_BITS,
	PPT_TSC_CTC_N,
	PPT_TSC_CTC_D,
	PPT_CYC_BIT,
	PPT_MAX_NONTURBO_RATIO,
	PPT_FILTER_STR_LEN,
	PPT_NPRIV,
};

#define PPT_AUXTRACE_TYPE_INTEL_PT 1u

/* Reads priv[] of perf's AUXTRACE_INFO; returns how many entries. */
static size_t auxtrace_priv(const struct hwt_fmt_session *s, uint64_t priv[PPT_NPRIV])
{
	const struct hwt_fmt_meta *m = hwt_fmt_session_meta_find(s, HWT_META_PERF_AUXTRACE_INFO);
	size_t n;

	/* header (8), u32 type, u32 reserved, u64 priv[] */
	if (!m || m->type != HWT_FMT_META_BYTES || m->len < 16 ||
	    hwt_le32(m->v.bytes + 8) != PPT_AUXTRACE_TYPE_INTEL_PT)
		return 0;
	n = (m->len - 16) / 8;
	if (n > PPT_NPRIV)
		n = PPT_NPRIV;
	for (size_t i = 0; i < n; i++)
		priv[i] = hwt_le64(m->v.bytes + 16 + 8 * i);
	return n;
}

void pts_sb_config(struct hwt_pts *pts)
{
	const struct hwt_fmt_session *s = pts->s;
	struct hwt_dec_config *c = &pts->dcfg;
	const struct hwt_fmt_meta *m;
	uint64_t priv[PPT_NPRIV] = {0}, v, sh, mu, ze;
	size_t npriv = auxtrace_priv(s, priv);

	hwt_dec_config_init(c);
	c->engine = pts->cfg.engine;
	c->threads = pts->cfg.threads;
	c->flags = pts->cfg.dec_flags;
	c->log = pts->cfg.log;

	m = hwt_fmt_session_meta_find(s, HWT_META_CPU_VENDOR);
	if (m && m->type == HWT_FMT_META_STR && !strcmp(m->v.str, "GenuineIntel")) {
		c->cpu.vendor = HWT_DEC_CPU_INTEL;
		if (meta_u64(s, "pt.config.cpu.family", &v) || meta_u64(s, HWT_META_CPU_FAMILY, &v))
			c->cpu.family = (uint16_t)v;
		if (meta_u64(s, "pt.config.cpu.model", &v) || meta_u64(s, HWT_META_CPU_MODEL, &v))
			c->cpu.model = (uint8_t)v;
		if (meta_u64(s, "pt.config.cpu.stepping", &v) ||
		    meta_u64(s, HWT_META_CPU_STEPPING, &v))
			c->cpu.stepping = (uint8_t)v;
	}
	if (meta_u64(s, HWT_META_TIME_SHIFT, &sh) && meta_u64(s, HWT_META_TIME_MULT, &mu) &&
	    meta_u64(s, HWT_META_TIME_ZERO, &ze) && mu) {
		c->tconv.valid = true;
		c->tconv.time_shift = (uint16_t)sh;
		c->tconv.time_mult = (uint32_t)mu;
		c->tconv.time_zero = ze;
	} else if (npriv > PPT_TIME_ZERO && priv[PPT_TIME_MULT]) {
		c->tconv.valid = true;
		c->tconv.time_shift = (uint16_t)priv[PPT_TIME_SHIFT];
		c->tconv.time_mult = (uint32_t)priv[PPT_TIME_MULT];
		c->tconv.time_zero = priv[PPT_TIME_ZERO];
	}
	if (meta_u64(s, "pt.config.mtc_freq", &v)) {
		c->mtc_freq = (uint8_t)v;
	} else if (npriv > PPT_MTC_FREQ_BITS) {
		/* The MTC period is a field of the intel_pt event's config. */
		const struct hwt_fmt_evlist *ev = hwt_fmt_session_evlist(s);

		for (size_t i = 0; ev && i < hwt_fmt_evlist_count(ev); i++) {
			const struct hwt_fmt_event *e = hwt_fmt_evlist_event(ev, i);

			if (e->attr.type == priv[PPT_PMU_TYPE] && priv[PPT_MTC_FREQ_BITS] < 64) {
				c->mtc_freq =
				    (uint8_t)((e->attr.config >> priv[PPT_MTC_FREQ_BITS]) & 0xf);
				break;
			}
		}
	}
	if (meta_u64(s, "pt.config.nom_freq", &v))
		c->nom_freq = (uint8_t)v;
	else if (npriv > PPT_MAX_NONTURBO_RATIO)
		c->nom_freq = (uint8_t)priv[PPT_MAX_NONTURBO_RATIO];
	if (meta_u64(s, "pt.config.cpuid_0x15_eax", &v))
		c->cpuid_0x15_eax = (uint32_t)v;
	else if (npriv > PPT_TSC_CTC_D)
		c->cpuid_0x15_eax = (uint32_t)priv[PPT_TSC_CTC_D];
	if (meta_u64(s, "pt.config.cpuid_0x15_ebx", &v))
		c->cpuid_0x15_ebx = (uint32_t)v;
	else if (npriv > PPT_TSC_CTC_N)
		c->cpuid_0x15_ebx = (uint32_t)priv[PPT_TSC_CTC_N];

	/* The time at a TIP.PGE is the last timing packet's: with MTC, at
	 * most one MTC period (2^mtc_freq crystal ticks) behind; otherwise
	 * assume 10 us. Twice that, to be safe. */
	pts->enable_slack = 10000;
	if (c->mtc_freq < 16 && c->cpuid_0x15_eax && c->cpuid_0x15_ebx && c->tconv.valid) {
		uint64_t tsc = ((uint64_t)1 << c->mtc_freq) * c->cpuid_0x15_ebx / c->cpuid_0x15_eax;

		pts->enable_slack = 2 * ((tsc * c->tconv.time_mult) >> c->tconv.time_shift) + 1;
	}
}

/* Whether AUX streams are per CPU: perf says so in AUXTRACE_INFO; hwtrace in
 * pt.config.per_thread and in the streams (cpu -1: per thread). */
static bool streams_per_cpu(const struct hwt_pts *pts, const struct hwt_fmt_aux_stream *a)
{
	uint64_t priv[PPT_NPRIV] = {0}, v;

	if (a->cpu < 0)
		return false;
	if (auxtrace_priv(pts->s, priv) > PPT_PER_CPU_MMAPS)
		return priv[PPT_PER_CPU_MMAPS] != 0;
	if (meta_u64(pts->s, "pt.config.per_thread", &v))
		return v == 0;
	return a->tid < 0;
}

/* ------------------------------------------------------------------------ */
/* Processes and their images                                                */

static struct pts_file *file_get(struct hwt_pts *pts, const char *path)
{
	struct pts_file *f;

	for (size_t i = 0; i < pts->nfiles; i++) {
		if (!strcmp(pts->files[i].path, path))
			return &pts->files[i];
	}
	if (pts_grow(&pts->files, &pts->capfiles, pts->nfiles + 1, sizeof(*pts->files)) < 0)
		return NULL;
	f = &pts->files[pts->nfiles];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	pts->nfiles++;
	return f;
}

static void hex(char *out, const uint8_t *id, size_t n)
{
	for (size_t i = 0; i < n && i < 32; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * (n < 32 ? n : 32)] = 0;
}

/* Checks a mapped file once: present, same build-id as recorded, large
 * enough for the mapping. A file that fails is named once and not used: its
 * code would be the wrong code. */
static bool file_usable(struct hwt_pts *pts, const char *path, const uint8_t *bid, size_t bidlen,
			uint64_t pgoff)
{
	struct pts_file *f = file_get(pts, path);
	char key[4096 + 16], want[65], have[65];
	uint8_t id[64];
	struct stat st;
	int n, serr;

	if (!f)
		return false;
	if (!f->checked) {
		f->checked = true;
		if (!bid) {
			const struct hwt_fmt_meta *m;

			snprintf(key, sizeof(key), HWT_META_BUILDID_PREFIX "%s", path);
			m = hwt_fmt_session_meta_find(pts->s, key);
			if (m && m->type == HWT_FMT_META_BYTES && m->len && m->len <= 64) {
				bid = m->v.bytes;
				bidlen = m->len;
			}
		}
		serr = stat(path, &st) < 0 ? errno : 0;
		if (serr || !S_ISREG(st.st_mode)) {
			hwt_log(&pts->cfg.log, HWT_LOG_WARN,
				"%s: %s: the trace in its code cannot be decoded (gaps); put the "
				"recorded file back at this path",
				path, serr ? strerror(serr) : "not a regular file");
			pts->st.missing_objects++;
			return false;
		}
		f->size = (uint64_t)st.st_size;
		n = bid ? hwt_sym_build_id_read(path, id, sizeof(id)) : -1;
		if (bid && n >= 0 && ((size_t)n != bidlen || memcmp(id, bid, bidlen))) {
			hex(want, bid, bidlen);
			hex(have, id, (size_t)n);
			hwt_log(
			    &pts->cfg.log, HWT_LOG_WARN,
			    "%s changed since the recording (build-id %s, recorded %s): the trace "
			    "in its code is not decoded (gaps); use the recorded binary",
			    path, n ? have : "none", want);
			pts->st.missing_objects++;
			return false;
		}
		f->usable = true;
	}
	if (f->usable && pgoff >= f->size) {
		hwt_log(&pts->cfg.log, HWT_LOG_WARN,
			"%s changed since the recording (%" PRIu64 " bytes, but mapped from offset "
			"%#" PRIx64 "): the trace in its code is not decoded (gaps)",
			path, f->size, pgoff);
		pts->st.missing_objects++;
		f->usable = false;
	}
	return f->usable;
}

static int on_mmap(struct hwt_pts *pts, const struct hwt_fmt_record *rec)
{
	struct hwt_fmt_mmap m;
	struct hwt_sym_mmap_event ev;
	struct hwt_dec_image *img;
	struct pts_proc *p;
	const char *name;
	uint64_t addr, len, pgoff, time;
	int32_t pid;
	bool exec;
	int err;

	hwt_fmt_mmap_get(rec, &m);
	ev = (struct hwt_sym_mmap_event){m.pid,	  m.tid,  m.time,     m.start,	  m.len,
					 m.pgoff, m.prot, m.filename, m.build_id, m.build_id_len};
	name = m.filename;
	addr = m.start;
	len = m.len;
	pgoff = m.pgoff;
	time = m.time;
	pid = (int32_t)m.pid;
	exec = (m.prot & PROT_EXEC) != 0;
	err = hwt_sym_aspace_mmap(pts->aspace, &ev);
	if (err == -ENOMEM)
		return err;
	if (!exec || !len || addr + len < addr)
		return 0;
	if (pid == -1 || (addr >> 63)) {
		uint64_t traced = 1;

		/* Kernel code: its image is the recording's copy (every
		 * process has it), when there is one; a user-only trace
		 * (pt.config.kernel 0) has no kernel trace to lose. */
		meta_u64(pts->s, "pt.config.kernel", &traced);
		if (!pts->warned_kernel && !pts->procs.base && traced)
			hwt_log(
			    &pts->cfg.log, HWT_LOG_INFO,
			    "kernel code is not decoded (no kernel image): its trace gives gaps");
		pts->warned_kernel = true;
		return 0;
	}
	p = pts_procs_get(&pts->procs, pid);
	if (!p)
		return -ENOMEM;
	/* Replacing (part of) an executable mapping makes the process's code
	 * depend on time: its streams then go through the context hook. */
	for (size_t i = 0; i < p->nranges; i++) {
		if (addr < p->ranges[i].end && p->ranges[i].start < addr + len)
			p->changing = true;
	}
	if (pts_grow(&p->ranges, &p->capranges, p->nranges + 1, sizeof(*p->ranges)) < 0)
		return -ENOMEM;
	p->ranges[p->nranges].start = addr;
	p->ranges[p->nranges].end = addr + len;
	p->nranges++;

	if (!strcmp(name, "[vdso]")) {
		if (!pts->vdso)
			return 0;
		img = pts_proc_edit(&pts->procs, p, time, false);
		if (!img)
			return -ENOMEM;
		err = hwt_dec_image_add_mem(
		    img, pts->vdso, len < pts->vdso_size ? len : pts->vdso_size, addr, "[vdso]");
		return err == -ENOMEM ? err : 0;
	}
	if (name[0] != '/') {
		/* //anon, [stack], JIT code: nothing to read the code from. */
		if (!pts->warned_anon)
			hwt_log(&pts->cfg.log, HWT_LOG_INFO,
				"%s: executable memory without a file (JIT?): its trace gives gaps",
				name);
		pts->warned_anon = true;
		return 0;
	}
	if (!file_usable(pts, name, ev.build_id, ev.build_id_len, pgoff))
		return 0;
	img = pts_proc_edit(&pts->procs, p, time, false);
	if (!img)
		return -ENOMEM;
	err = hwt_dec_image_add_file(img, name, pgoff, len, addr);
	if (err == -ENOMEM)
		return err;
	if (err < 0)
		hwt_log(&pts->cfg.log, HWT_LOG_WARN, "%s: cannot map it at %#" PRIx64 ": %s", name,
			addr, hwt_strerror(err));
	return 0;
}

/* The kernel changed its text (static keys, ftrace, kprobes, BPF): every
 * address space has the new bytes from then on. */
static int on_text_poke(struct hwt_pts *pts, const struct hwt_fmt_record *rec)
{
	uint64_t time = (rec->id.present & PERF_SAMPLE_TIME) ? rec->id.time : 0;
	int err;

	if (!pts->procs.base || !rec->u.text_poke.new_len)
		return 0;
	/* new address spaces from now on */
	err = pts_kern_poke(pts, rec);
	for (size_t i = 0; i < pts->procs.nprocs && err >= 0; i++) {
		struct pts_proc *p = &pts->procs.procs[i];
		struct hwt_dec_image *img;

		if (!p->nvers)
			continue;
		img = pts_proc_edit(&pts->procs, p, time, false);
		if (!img)
			return -ENOMEM;
		p->changing = true;
		err =
		    hwt_dec_image_add_mem(img, rec->u.text_poke.new_bytes, rec->u.text_poke.new_len,
					  rec->u.text_poke.addr, "[kernel text_poke]");
		if (err != -ENOMEM)
			err = 0;
	}
	return err;
}

static int tid_set(struct hwt_pts *pts, int32_t tid, int32_t pid)
{
	if (tid <= 0 || pid < 0)
		return 0;
	if (pts_grow(&pts->tidmap, &pts->captidmap, pts->ntidmap + 1, sizeof(*pts->tidmap)) < 0)
		return -ENOMEM;
	pts->tidmap[pts->ntidmap].tid = tid;
	pts->tidmap[pts->ntidmap].pid = pid;
	pts->ntidmap++;
	return 0;
}

static int on_comm(struct hwt_pts *pts, const struct hwt_fmt_record *rec)
{
	struct hwt_sym_comm_event ev = {0};
	uint64_t time = (rec->id.present & PERF_SAMPLE_TIME) ? rec->id.time : 0;
	int err;

	ev.pid = rec->u.comm.pid;
	ev.tid = rec->u.comm.tid;
	ev.time = time;
	ev.comm = rec->u.comm.comm;
	ev.exec = (rec->misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
	err = hwt_sym_aspace_comm(pts->aspace, &ev);
	if (err == -ENOMEM)
		return err;
	if (tid_set(pts, (int32_t)ev.tid, (int32_t)ev.pid) < 0)
		return -ENOMEM;
	if (ev.exec)
		return pts_procs_exec(&pts->procs, (int32_t)ev.pid, time);
	return 0;
}

static int on_fork(struct hwt_pts *pts, const struct hwt_fmt_record *rec)
{
	struct hwt_sym_task_event ev = {0};
	uint64_t time = (rec->id.present & PERF_SAMPLE_TIME) ? rec->id.time : rec->u.fork.time;
	int err;

	ev.pid = rec->u.fork.pid;
	ev.ppid = rec->u.fork.ppid;
	ev.tid = rec->u.fork.tid;
	ev.ptid = rec->u.fork.ptid;
	ev.time = time;
	if (rec->type == PERF_RECORD_EXIT) {
		err = hwt_sym_aspace_exit(pts->aspace, &ev);
		return err == -ENOMEM ? err : 0;
	}
	err = hwt_sym_aspace_fork(pts->aspace, &ev);
	if (err == -ENOMEM)
		return err;
	if (tid_set(pts, (int32_t)ev.tid, (int32_t)ev.pid) < 0)
		return -ENOMEM;
	if (ev.pid != ev.ppid)
		return pts_procs_fork(&pts->procs, (int32_t)ev.ppid, (int32_t)ev.pid, time);
	return 0;
}

/* Switch and AUX records, kept with their CPU/thread until the streams are
 * known (a perf pipe announces its AUX streams while it is read). */
struct pending {
	struct pts_sw *sw; /* who runs from time on, on CPU sw_cpu[i] */
	int32_t *sw_cpu;
	int32_t *sw_prev_pid, *sw_prev_tid;
	size_t nsw, capsw, capcpu, capppid, capptid;
	struct {
		int32_t cpu, tid;
		uint64_t end; /* aux_offset + aux_size */
		uint64_t flags;
	} * aux;
	size_t naux, capaux;
	struct {
		int32_t tid;
		uint64_t time;
	} * starts; /* ITRACE_START: when a thread's trace began */
	size_t nstarts, capstarts;
};

static int on_switch(struct pending *pd, const struct hwt_fmt_record *rec)
{
	bool out = (rec->misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
	int32_t pid, tid, ppid, ptid;

	if (!(rec->id.present & PERF_SAMPLE_CPU) || !(rec->id.present & PERF_SAMPLE_TIME) ||
	    !(rec->id.present & PERF_SAMPLE_TID))
		return 0;
	if (rec->type == PERF_RECORD_SWITCH_CPU_WIDE) {
		if (out) {
			pid = (int32_t)rec->u.sw.next_prev_pid;
			tid = (int32_t)rec->u.sw.next_prev_tid;
			ppid = (int32_t)rec->id.pid;
			ptid = (int32_t)rec->id.tid;
		} else {
			pid = (int32_t)rec->id.pid;
			tid = (int32_t)rec->id.tid;
			ppid = (int32_t)rec->u.sw.next_prev_pid;
			ptid = (int32_t)rec->u.sw.next_prev_tid;
		}
	} else if (out) {
		/* A task event's switch: after it leaves, a task the event
		 * does not follow runs (no trace) until a traced one comes
		 * in, on this CPU or another: the thread's run here ends. */
		pid = tid = 0;
		ppid = (int32_t)rec->id.pid;
		ptid = (int32_t)rec->id.tid;
	} else {
		pid = (int32_t)rec->id.pid;
		tid = (int32_t)rec->id.tid;
		ppid = ptid = -1;
	}
	if (pts_grow(&pd->sw, &pd->capsw, pd->nsw + 1, sizeof(*pd->sw)) < 0 ||
	    pts_grow(&pd->sw_cpu, &pd->capcpu, pd->nsw + 1, sizeof(*pd->sw_cpu)) < 0 ||
	    pts_grow(&pd->sw_prev_pid, &pd->capppid, pd->nsw + 1, sizeof(int32_t)) < 0 ||
	    pts_grow(&pd->sw_prev_tid, &pd->capptid, pd->nsw + 1, sizeof(int32_t)) < 0)
		return -ENOMEM;
	pd->sw[pd->nsw].time = rec->id.time;
	pd->sw[pd->nsw].pid = pid;
	pd->sw[pd->nsw].tid = tid;
	pd->sw_cpu[pd->nsw] = (int32_t)rec->id.cpu;
	pd->sw_prev_pid[pd->nsw] = ppid;
	pd->sw_prev_tid[pd->nsw] = ptid;
	pd->nsw++;
	return 0;
}

static int on_aux(struct pending *pd, const struct hwt_fmt_record *rec)
{
	uint64_t end;

	if (__builtin_add_overflow(rec->u.aux.aux_offset, rec->u.aux.aux_size, &end))
		return 0;
	if (pts_grow(&pd->aux, &pd->capaux, pd->naux + 1, sizeof(*pd->aux)) < 0)
		return -ENOMEM;
	pd->aux[pd->naux].cpu = (rec->id.present & PERF_SAMPLE_CPU) ? (int32_t)rec->id.cpu : -1;
	pd->aux[pd->naux].tid = (rec->id.present & PERF_SAMPLE_TID) ? (int32_t)rec->id.tid : -1;
	pd->aux[pd->naux].end = end;
	pd->aux[pd->naux].flags = rec->u.aux.flags;
	pd->naux++;
	return 0;
}

static void pending_free(struct pending *pd)
{
	free(pd->sw);
	free(pd->sw_cpu);
	free(pd->sw_prev_pid);
	free(pd->sw_prev_tid);
	free(pd->aux);
	free(pd->starts);
}

/* ------------------------------------------------------------------------ */
/* After the pass: streams, sorted tables                                    */

static int cmp_tid(const void *a, const void *b)
{
	const int32_t *x = a, *y = b; /* {tid, pid}: by tid only (stable below) */

	return (x[0] > y[0]) - (x[0] < y[0]);
}

static int cmp_stream(const void *a, const void *b)
{
	const struct pts_stream *x = a, *y = b;

	if (x->first_time != y->first_time)
		return x->first_time < y->first_time ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static int cmp_tid_cpu(const void *a, const void *b)
{
	const int32_t *x = a, *y = b;

	if (x[0] != y[0])
		return (x[0] > y[0]) - (x[0] < y[0]);
	return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Per CPU: the threads that ran on more than one CPU, by the switch
 * timelines (their call stacks restart on each CPU; counted so that the
 * reports can say so). */
static int count_migrated(struct hwt_pts *pts)
{
	size_t n = 0, k = 0;
	int32_t *pairs;

	for (size_t i = 0; i < pts->nstreams; i++)
		n += pts->streams[i].cpu >= 0 ? pts->streams[i].nsw + 1 : 0;
	if (!n)
		return 0;
	pairs = malloc(2 * n * sizeof(*pairs));
	if (!pairs)
		return -ENOMEM;
	for (size_t i = 0; i < pts->nstreams; i++) {
		const struct pts_stream *st = &pts->streams[i];

		if (st->cpu < 0)
			continue;
		for (size_t j = 0; j <= st->nsw; j++) {
			int32_t tid = j ? st->sw[j - 1].tid : st->first_tid;

			if (tid <= 0)
				continue; /* unknown, or the idle task */
			pairs[2 * k] = tid;
			pairs[2 * k + 1] = st->cpu;
			k++;
		}
	}
	qsort(pairs, k, 2 * sizeof(*pairs), cmp_tid_cpu);
	for (size_t j = 0; j < k;) {
		size_t e = j;
		bool several = false;

		/* One thread's (tid, cpu) pairs, sorted by CPU. */
		while (e < k && pairs[2 * e] == pairs[2 * j]) {
			several |= pairs[2 * e + 1] != pairs[2 * j + 1];
			e++;
		}
		pts->st.migrated_threads += several;
		j = e;
	}
	free(pairs);
	return 0;
}

static int build_streams(struct hwt_pts *pts, struct pending *pd)
{
	size_t n = hwt_fmt_session_naux(pts->s);
	int err;

	pts->streams = calloc(n ? n : 1, sizeof(*pts->streams));
	if (!pts->streams)
		return -ENOMEM;
	pts->nstreams = n;
	for (size_t i = 0; i < n; i++) {
		const struct hwt_fmt_aux_stream *a = hwt_fmt_session_aux(pts->s, i);
		struct pts_stream *st = &pts->streams[i];
		bool per_cpu = streams_per_cpu(pts, a);

		st->pts = pts;
		st->idx = i;
		st->cpu = per_cpu ? a->cpu : -1;
		st->tid = per_cpu ? -1 : a->tid;
		st->pid = st->tid >= 0 ? pts_pid_of(pts, st->tid) : -1;
		st->first_pid = st->first_tid = -1;
		st->first_time = UINT64_MAX;
		if (a->nsegments) {
			const struct hwt_fmt_aux_segment *g =
			    hwt_fmt_session_aux_segment(pts->s, i, 0);

			if (g && g->time)
				st->first_time = g->time;
		}
		/* A thread's stream starts when its trace started (its AUX
		 * records are written later, as the buffer fills). */
		for (size_t k = 0; k < pd->nstarts && !per_cpu; k++) {
			if (pd->starts[k].tid == st->tid && pd->starts[k].time < st->first_time)
				st->first_time = pd->starts[k].time;
		}
		if (per_cpu)
			pts->st.per_cpu = true;
		for (size_t k = 0; k < pd->nsw && per_cpu; k++) {
			if (pd->sw_cpu[k] != st->cpu)
				continue;
			if (!st->nsw) {
				st->first_pid = pd->sw_prev_pid[k];
				st->first_tid = pd->sw_prev_tid[k];
			}
			if (pts_grow(&st->sw, &st->capsw, st->nsw + 1, sizeof(*st->sw)) < 0)
				return -ENOMEM;
			st->sw[st->nsw++] = pd->sw[k];
		}
		if (per_cpu && !st->nsw && a->tid >= 0) {
			/* No switch records: the stream's own thread. */
			st->first_tid = a->tid;
			st->first_pid = pts_pid_of(pts, a->tid);
		}
		for (size_t k = 0; k < pd->naux; k++) {
			if (per_cpu ? pd->aux[k].cpu != st->cpu : pd->aux[k].tid != st->tid)
				continue;
			/* In overwrite (snapshot) mode an AUX record gives the
			 * PMU's position in its area, not stream offsets: what
			 * was saved is in the snapshots. */
			if (pd->aux[k].flags & PERF_AUX_FLAG_OVERWRITE)
				continue;
			if (pd->aux[k].end > st->announced_end)
				st->announced_end = pd->aux[k].end;
			if (!(pd->aux[k].flags & (PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL)))
				continue;
			if (pts_grow(&st->marks, &st->capmarks, st->nmarks + 1,
				     sizeof(*st->marks)) < 0)
				return -ENOMEM;
			st->marks[st->nmarks++].aux_offset = pd->aux[k].end;
		}
	}
	qsort(pts->streams, n, sizeof(*pts->streams), cmp_stream);
	pts->st.streams = n;
	err = count_migrated(pts);
	if (err < 0)
		return err;
	/* Stitching merges the CPUs' records by time, which needs it. */
	pts->stitch = pts->st.per_cpu && pts->dcfg.tconv.valid &&
		      (pts->cfg.stitch == HWT_PTS_STITCH_ON ||
		       (pts->cfg.stitch == HWT_PTS_STITCH_AUTO && pts->st.migrated_threads));
	pts->st.stitched = pts->stitch;
	return 0;
}

static int cmp_imgtime(const void *a, const void *b)
{
	const struct pts_imgtime *x = a, *y = b;
	uintptr_t p = (uintptr_t)x->img, q = (uintptr_t)y->img;

	return (p > q) - (p < q);
}

static int build_imgtimes(struct hwt_pts *pts)
{
	size_t n = 0;

	for (size_t i = 0; i < pts->procs.nprocs; i++)
		n += pts->procs.procs[i].nvers;
	pts->imgtimes = calloc(n ? n : 1, sizeof(*pts->imgtimes));
	if (!pts->imgtimes)
		return -ENOMEM;
	for (size_t i = 0; i < pts->procs.nprocs; i++) {
		const struct pts_proc *p = &pts->procs.procs[i];

		for (size_t k = 0; k < p->nvers; k++) {
			pts->imgtimes[pts->nimgtimes].img = p->vers[k].img;
			pts->imgtimes[pts->nimgtimes].time = p->vers[k].time;
			pts->imgtimes[pts->nimgtimes].pid = p->pid;
			pts->nimgtimes++;
		}
	}
	qsort(pts->imgtimes, pts->nimgtimes, sizeof(*pts->imgtimes), cmp_imgtime);
	return 0;
}

uint64_t pts_image_time(const struct hwt_pts *pts, const struct hwt_dec_image *img, int32_t *pid)
{
	size_t lo = 0, hi = pts->nimgtimes;

	*pid = -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pts->imgtimes[mid].img == img) {
			*pid = pts->imgtimes[mid].pid;
			return pts->imgtimes[mid].time;
		}
		if ((uintptr_t)pts->imgtimes[mid].img < (uintptr_t)img)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

int pts_sb_read(struct hwt_pts *pts, uint64_t *err_offset)
{
	struct pending pd;
	struct hwt_fmt_record rec;
	uint64_t off = 0;
	int err;

	memset(&pd, 0, sizeof(pd));
	for (;;) {
		err = hwt_fmt_session_next(pts->s, &rec, &off);
		if (err == -HWT_EEOS)
			break;
		if (err == -ENOMEM)
			goto out;
		if (err < 0) {
			pts->st.read_errors++;
			if (err_offset)
				*err_offset = off;
			hwt_log(&pts->cfg.log, HWT_LOG_DEBUG,
				"sideband at offset %" PRIu64 " is damaged (%s): %s", off,
				hwt_strerror(err),
				hwt_fmt_session_kind(pts->s) == HWT_FMT_KIND_HWT
				    ? "its records are skipped"
				    : "the records after it are not read");
			if (hwt_fmt_session_kind(pts->s) == HWT_FMT_KIND_HWT)
				continue;
			break;
		}
		pts->st.sideband++;
		switch (rec.type) {
		case PERF_RECORD_MMAP:
		case PERF_RECORD_MMAP2:
			err = on_mmap(pts, &rec);
			break;
		case PERF_RECORD_COMM:
			err = on_comm(pts, &rec);
			break;
		case PERF_RECORD_FORK:
		case PERF_RECORD_EXIT:
			err = on_fork(pts, &rec);
			break;
		case PERF_RECORD_ITRACE_START:
			err = tid_set(pts, (int32_t)rec.u.itrace_start.tid,
				      (int32_t)rec.u.itrace_start.pid);
			if (err >= 0 && (rec.id.present & PERF_SAMPLE_TIME)) {
				err = pts_grow(&pd.starts, &pd.capstarts, pd.nstarts + 1,
					       sizeof(*pd.starts));
				if (err < 0)
					break;
				pd.starts[pd.nstarts].tid = (int32_t)rec.u.itrace_start.tid;
				pd.starts[pd.nstarts].time = rec.id.time;
				pd.nstarts++;
			}
			break;
		case PERF_RECORD_SWITCH:
		case PERF_RECORD_SWITCH_CPU_WIDE:
			err = on_switch(&pd, &rec);
			break;
		case PERF_RECORD_AUX:
			err = on_aux(&pd, &rec);
			break;
		case PERF_RECORD_TEXT_POKE:
			err = on_text_poke(pts, &rec);
			break;
		default:
			err = 0;
			break;
		}
		if (err < 0)
			goto out;
	}
	pts_procs_sort(&pts->procs);
	if (pts->ntidmap) {
		/* Keep the last pid given for each tid (a tid can be reused):
		 * qsort is not stable, so sort copies tagged with their order. */
		struct {
			int32_t tid, pid;
			size_t order;
		} *tmp = malloc(pts->ntidmap * sizeof(*tmp));
		size_t n = 0;

		if (!tmp) {
			err = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < pts->ntidmap; i++) {
			tmp[i].tid = pts->tidmap[i].tid;
			tmp[i].pid = pts->tidmap[i].pid;
			tmp[i].order = i;
		}
		qsort(tmp, pts->ntidmap, sizeof(*tmp), cmp_tid);
		for (size_t i = 0; i < pts->ntidmap; i++) {
			size_t best = i;

			while (i + 1 < pts->ntidmap && tmp[i + 1].tid == tmp[best].tid) {
				i++;
				if (tmp[i].order > tmp[best].order)
					best = i;
			}
			pts->tidmap[n].tid = tmp[best].tid;
			pts->tidmap[n].pid = tmp[best].pid;
			n++;
		}
		pts->ntidmap = n;
		free(tmp);
	}
	pts->st.processes = pts->procs.nprocs;
	err = build_imgtimes(pts);
	if (err < 0)
		goto out;
	err = build_streams(pts, &pd);
out:
	pending_free(&pd);
	return err;
}

/* ------------------------------------------------------------------------ */
/* Lookups (read-only after the pass)                                        */

int32_t pts_pid_of(const struct hwt_pts *pts, int32_t tid)
{
	size_t lo = 0, hi = pts->ntidmap;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pts->tidmap[mid].tid == tid)
			return pts->tidmap[mid].pid;
		if (pts->tidmap[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return tid;
}
