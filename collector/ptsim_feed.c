/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/ptsim_feed.c - the simulated intel_pt PMU's hardware (see
 * ptsim_int.h): a thread that follows the PT emulator's output while the
 * command runs and plays the CPUs, the PT units and the kernel's output code.
 *
 * The emulator writes one PT stream per thread with that thread's own
 * clock (TSC = instructions retired, not advancing in the kernel), and the
 * sideband records in the same clocks. Here the threads run on the
 * simulated CPUs. A stream is cut into pieces at its PSBs (each piece is
 * self-contained: a PSB+ with its TSC, TMA and, mid-stream, the FUP of
 * where the thread is); a thread that gets a CPU keeps it from piece to
 * piece until another thread is ready for one, then it is preempted at the
 * next PSB: its CPU's AUX stream gets FUP (where it stops) and TIP.PGD, and
 * where it runs next, TSC and TIP.PGE before its PSB+ (what a CPU writes
 * when the kernel switches PT off and on around a context switch).
 *
 * A CPU runs one thread at a time, so a thread that waited for one runs
 * later than its clock says: its trace is shifted by a multiple of
 * 2^16 * 84 TSC ticks (84 TSC ticks per crystal tick), which leaves every
 * MTC and TMA payload as it was; only the TSC packets are rewritten, and
 * its sideband records move by the same amount. A new thread starts no
 * earlier than its creator's shifted clock at the clone, so what happened
 * before the clone (a dlopen) stays before.
 *
 * What the kernel does with the output is followed: the trace goes to the
 * AUX area of the intel_pt event that covers the thread on that CPU (the
 * thread's own event, an inherited one, or the CPU's), with aux_head
 * published after the data (release) and aux_tail read with acquire; a
 * PERF_RECORD_AUX per piece; in overwrite mode the area wraps and the
 * record says OVERWRITE; in full mode a piece that does not fit is cut at
 * the space left, flagged TRUNCATED, and the event is disabled until the
 * reader enables it again (perf_aux_output_begin/end); records go to the
 * data areas of the events that ask for them, with each event's sample_id
 * trailer, PERF_RECORD_LOST when there was no room; ITRACE_START when an
 * event first traces; SWITCH / SWITCH_CPU_WIDE when threads come and go.
 *
 * The feeder runs behind the emulator (it polls its files), so before it
 * acts as the hardware would on a full area (truncate) or a disabled event
 * (drop) it waits up to PTSIM_WAIT_MS for the reader to make room or enable
 * it again: what it is late with would have been written earlier. With the
 * "wait" option it never truncates (the hardware waits for room).
 */
#include "collector/ptsim_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <intel-pt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector/ptemu_int.h"
#include "collector/rec_int.h"

#define POLL_US 1000 /* how often the emulator's files are looked at */

struct piece {
	uint64_t off; /* stream offset of its PSB */
	uint64_t end; /* ... of the next piece's PSB, or the stream's end */
	uint64_t tsc; /* its PSB+'s TSC: when it starts, thread clock */
	uint64_t ip;  /* its PSB+'s FUP: where the thread is; 0: tracing was
		       * off (the thread's first PSB+) */
	bool last;    /* the thread's stream ends with it */
};

/* A sideband record of a thread, without its trailer. */
struct sbrec {
	uint64_t time; /* perf ns, thread clock */
	uint32_t tid;
	uint16_t len;
	uint8_t *raw; /* header + body */
};

struct fthread {
	uint32_t pid, tid, ppid, ptid;
	char path[PATH_MAX + 256];
	int fd;
	struct hwt_ptemu_filehdr hdr;
	bool ended; /* no more bytes will come */
	/* stream bytes [base, base + len) */
	uint8_t *buf;
	size_t len, cap;
	uint64_t base;
	uint64_t scan;	     /* PSB search done up to here */
	struct piece cur;    /* the piece being filled */
	bool have_cur;	     /* cur's PSB+ was read */
	struct piece *ready; /* complete, not placed, in order */
	size_t nready, capready;
	struct sbrec *recs; /* records not emitted, by time */
	size_t nrecs, caprecs;
	/* running */
	int cpu;	/* the CPU it holds, -1 */
	int last_cpu;	/* ... or held last */
	uint64_t delta; /* TSC shift of its current stint */
	bool placed_any;
	unsigned stint; /* pieces placed since it got its CPU */
	struct {
		uint64_t from, delta;
	} * hist; /* deltas by thread clock */
	size_t nhist, caphist;
	uint64_t next_tsc; /* start of its first piece not placed */
	bool done;	   /* every piece and record out */
	bool dropped_any;
};

struct fcpu {
	struct fthread *holder;
	uint64_t free_at; /* global TSC when it was given up */
};

struct ptsim_feed {
	pthread_t thr;
	bool running;
	atomic_bool stop;
	struct fthread **th;
	size_t nth, capth;
	struct fcpu *cpus;
	int sb_fd;
	uint64_t sb_off;
	struct sbrec *orphans; /* records of threads not seen yet */
	size_t norphans, caporphans;
	uint64_t q; /* the shift quantum, TSC ticks */
	unsigned scans;
	bool final;
	bool blocked;		/* the last pass waits for a reader */
	struct timespec block0; /* ... since then */
	bool block_timed;
	uint64_t placed, dropped; /* pieces */
};

/* ------------------------------------------------------------------------ */
/* small helpers                                                             */

static int grow(void *pp, size_t *cap, size_t n, size_t elem)
{
	void **p = pp;
	size_t nc;
	void *np;

	if (n <= *cap)
		return 0;
	nc = *cap ? *cap * 2 : 16;
	while (nc < n)
		nc *= 2;
	np = realloc(*p, nc * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

static uint64_t ns_of(uint64_t tsc)
{
	return hwt_ptemu_tsc_to_ns(tsc);
}

/* ------------------------------------------------------------------------ */
/* reading the emulator's output                                            */

static struct fthread *thread_by_tid(struct ptsim_feed *f, uint32_t tid)
{
	for (size_t i = 0; i < f->nth; i++) {
		if (f->th[i]->tid == tid && !f->th[i]->done)
			return f->th[i];
	}
	for (size_t i = 0; i < f->nth; i++) {
		if (f->th[i]->tid == tid)
			return f->th[i];
	}
	return NULL;
}

static int add_rec(struct sbrec **v, size_t *n, size_t *cap, const uint8_t *raw, uint16_t len,
		   uint64_t time, uint32_t tid)
{
	struct sbrec r = {time, tid, len, malloc(len)};
	size_t i;

	if (!r.raw || grow(v, cap, *n + 1, sizeof(**v)) < 0) {
		free(r.raw);
		return -ENOMEM;
	}
	memcpy(r.raw, raw, len);
	/* keep them by time (stable) */
	for (i = *n; i > 0 && (*v)[i - 1].time > time; i--)
		(*v)[i] = (*v)[i - 1];
	(*v)[i] = r;
	(*n)++;
	return 0;
}

static void take_orphans(struct ptsim_feed *f, struct fthread *t)
{
	for (size_t i = 0; i < f->norphans;) {
		struct sbrec *r = &f->orphans[i];

		if (r->tid != t->tid) {
			i++;
			continue;
		}
		if (add_rec(&t->recs, &t->nrecs, &t->caprecs, r->raw, r->len, r->time, r->tid) <
		    0) {
			i++;
			continue;
		}
		free(r->raw);
		memmove(r, r + 1, (f->norphans - i - 1) * sizeof(*r));
		f->norphans--;
	}
}

/* Whole records appended to the sideband file since the last look. The
 * emulator writes the trailer TID, TIME, CPU, IDENTIFIER (32 bytes). */
static int read_sideband(struct ptsim *sim, struct ptsim_feed *f)
{
	uint8_t buf[65536];

	if (f->sb_fd < 0) {
		char path[PATH_MAX + 16];

		snprintf(path, sizeof(path), "%s/sideband", sim->workdir);
		f->sb_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (f->sb_fd < 0)
			return 0;
	}
	for (;;) {
		ssize_t n = pread(f->sb_fd, buf, sizeof(buf), (off_t)f->sb_off);
		size_t off = 0;

		if (n <= 0)
			return 0;
		while (off + 8 <= (size_t)n) {
			uint16_t size = hwt_le16(buf + off + 6);
			uint32_t tid;
			uint64_t time;
			struct fthread *t;
			int err;

			if (size < 8 + 32 || off + size > (size_t)n)
				break;
			tid = hwt_le32(buf + off + size - 32 + 4);
			time = hwt_le64(buf + off + size - 32 + 8);
			t = thread_by_tid(f, tid);
			if (t)
				err = add_rec(&t->recs, &t->nrecs, &t->caprecs, buf + off,
					      (uint16_t)(size - 32), time, tid);
			else
				err = add_rec(&f->orphans, &f->norphans, &f->caporphans, buf + off,
					      (uint16_t)(size - 32), time, tid);
			if (err < 0)
				return err;
			off += size;
		}
		if (!off)
			return 0; /* a torn record: the rest comes later */
		f->sb_off += off;
	}
}

static int add_thread(struct ptsim_feed *f, const char *path)
{
	struct fthread *t;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	t = calloc(1, sizeof(*t));
	if (!t || grow(&f->th, &f->capth, f->nth + 1, sizeof(*f->th)) < 0) {
		free(t);
		close(fd);
		return -ENOMEM;
	}
	if (pread(fd, &t->hdr, sizeof(t->hdr), 0) != (ssize_t)sizeof(t->hdr) ||
	    t->hdr.magic != HWT_PTEMU_FILE_MAGIC) {
		free(t);
		close(fd);
		return 0; /* not started yet: next time */
	}
	snprintf(t->path, sizeof(t->path), "%s", path);
	t->fd = fd;
	t->pid = t->hdr.pid;
	t->tid = t->hdr.tid;
	t->ppid = t->hdr.ppid;
	t->ptid = t->hdr.ptid;
	t->cpu = -1;
	t->next_tsc = t->hdr.tsc_start;
	f->th[f->nth++] = t;
	take_orphans(f, t);
	return 0;
}

static int scan_dir(struct ptsim *sim, struct ptsim_feed *f)
{
	DIR *d = opendir(sim->workdir);
	struct dirent *de;
	int err = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && err >= 0) {
		char path[PATH_MAX + 256];
		bool known = false;

		if (strncmp(de->d_name, "pt.", 3))
			continue;
		snprintf(path, sizeof(path), "%s/%s", sim->workdir, de->d_name);
		for (size_t i = 0; i < f->nth && !known; i++)
			known = !strcmp(f->th[i]->path, path);
		if (!known)
			err = add_thread(f, path);
	}
	closedir(d);
	return err;
}

/* The IP a PSB+ FUP gives (last-IP is reset by the PSB). */
static uint64_t psb_ip(const struct pt_packet_ip *ip)
{
	switch (ip->ipc) {
	case pt_ipc_update_16:
		return ip->ip & 0xffff;
	case pt_ipc_update_32:
		return ip->ip & 0xffffffff;
	case pt_ipc_update_48:
		return ip->ip & 0xffffffffffffull;
	case pt_ipc_sext_48:
		return (uint64_t)((int64_t)(ip->ip << 16) >> 16);
	case pt_ipc_full:
		return ip->ip;
	default:
		return 0;
	}
}

/* Reads the PSB+ at buf[pos]: its TSC and FUP. Returns 1 when complete, 0
 * when its bytes are not all there yet, -HWT_EFORMAT when it does not
 * decode, -ENOMEM. */
static int read_psb(const uint8_t *buf, size_t len, size_t pos, uint64_t *tsc, uint64_t *ip)
{
	struct pt_config cfg;
	struct pt_packet_decoder *dec;
	struct pt_packet pkt;
	int ret = -HWT_EFORMAT, n;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)(uintptr_t)buf;
	cfg.end = (uint8_t *)(uintptr_t)buf + len;
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec)
		return -ENOMEM;
	*tsc = 0;
	*ip = 0;
	if (pt_pkt_sync_set(dec, pos) < 0)
		goto out;
	while ((n = pt_pkt_next(dec, &pkt, sizeof(pkt))) >= 0) {
		if (pkt.type == ppt_tsc)
			*tsc = pkt.payload.tsc.tsc;
		else if (pkt.type == ppt_fup)
			*ip = psb_ip(&pkt.payload.ip);
		else if (pkt.type == ppt_psbend) {
			ret = 1;
			break;
		}
	}
	if (n == -pte_eos)
		ret = 0;
out:
	pt_pkt_free_decoder(dec);
	return ret;
}

static size_t find_psb(const uint8_t *buf, size_t len, size_t from)
{
	static const uint8_t psb[16] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82};

	for (size_t i = from; i + sizeof(psb) <= len; i++) {
		if (buf[i] == 0x02 && !memcmp(buf + i, psb, sizeof(psb)))
			return i;
	}
	return SIZE_MAX;
}

static int push_piece(struct fthread *t, uint64_t end, bool last)
{
	if (grow(&t->ready, &t->capready, t->nready + 1, sizeof(*t->ready)) < 0)
		return -ENOMEM;
	t->cur.end = end;
	t->cur.last = last;
	t->ready[t->nready++] = t->cur;
	t->have_cur = false;
	return 0;
}

/* New bytes of a thread's stream, cut into pieces at its PSBs. */
static int read_thread(struct fthread *t, bool final)
{
	uint64_t used;

	if (t->ended)
		return 0;
	if (pread(t->fd, &t->hdr, sizeof(t->hdr), 0) != (ssize_t)sizeof(t->hdr))
		return 0;
	used = t->hdr.used;
	if (used > t->base + t->len) {
		size_t want = (size_t)(used - (t->base + t->len));
		ssize_t n;

		if (grow(&t->buf, &t->cap, t->len + want, 1) < 0)
			return -ENOMEM;
		n = pread(t->fd, t->buf + t->len, want,
			  (off_t)(HWT_PTEMU_FILE_HDR + t->base + t->len));
		if (n > 0)
			t->len += (size_t)n;
	}
	if (t->hdr.end != HWT_PTEMU_END_RUNNING && t->base + t->len >= t->hdr.used)
		t->ended = true;
	else if (final && kill((pid_t)t->pid, 0) < 0 && errno == ESRCH) {
		/* Killed: close the stream as the emulator's launcher does. */
		uint8_t tail[64];
		int n = hwt_ptemu_close_stream(&t->hdr, tail, sizeof(tail));

		if (n > 0 && t->base + t->len == t->hdr.used &&
		    grow(&t->buf, &t->cap, t->len + (size_t)n, 1) == 0) {
			memcpy(t->buf + t->len, tail, (size_t)n);
			t->len += (size_t)n;
		}
		t->ended = true;
	}
	for (;;) {
		size_t from = (size_t)(t->scan - t->base);
		size_t p = find_psb(t->buf, t->len, from);
		uint64_t tsc, ip;
		int r;

		if (p == SIZE_MAX) {
			if (t->len >= 15)
				t->scan = t->base + t->len - 15; /* a PSB may straddle */
			break;
		}
		r = read_psb(t->buf, t->len, p, &tsc, &ip);
		if (r == 0)
			break; /* its PSB+ is not complete yet */
		t->scan = t->base + p + 16;
		if (r < 0)
			continue;
		if (t->have_cur && push_piece(t, t->base + p, false) < 0)
			return -ENOMEM;
		t->cur.off = t->base + p;
		t->cur.tsc = tsc;
		t->cur.ip = ip;
		t->have_cur = true;
	}
	if (t->ended && t->have_cur)
		return push_piece(t, t->base + t->len, true);
	if (t->ended && !t->have_cur && !t->nready && !t->placed_any)
		t->done = !t->nrecs; /* no trace at all */
	return 0;
}

/* ------------------------------------------------------------------------ */
/* output: the kernel's side                                                 */

static bool covers(const struct ptsim_feed *f, const struct ptsim_event *e, const struct fthread *t)
{
	uint32_t tid;

	if (e->pid == -1)
		return true;
	if ((uint32_t)e->pid == t->tid)
		return true;
	if (!e->attr.inherit)
		return false;
	/* a descendant: creators up to the event's task */
	tid = t->ptid ? t->ptid : t->ppid;
	for (unsigned hops = 0; tid && hops < 4096; hops++) {
		const struct fthread *c;

		if ((uint32_t)e->pid == tid)
			return true;
		c = NULL;
		for (size_t i = 0; i < f->nth && !c; i++) {
			if (f->th[i]->tid == tid)
				c = f->th[i];
		}
		if (!c)
			return false;
		tid = c->ptid ? c->ptid : c->ppid;
	}
	return false;
}

static bool live(struct ptsim_event *e, struct fthread *t)
{
	(void)t;
	if (e->exec_pending) {
		/* enable_on_exec: the command's start under the emulator */
		e->exec_pending = false;
		e->enabled = true;
	}
	return e->enabled;
}

static void wake(struct ptsim_buf *b)
{
	b->written = true;
}

/* Writes one record into b's data area (kernel layout), or counts it
 * lost. */
static void put_record(struct ptsim_buf *b, const uint8_t *rec, size_t len, uint64_t id)
{
	uint64_t tail = __atomic_load_n(&b->pg->data_tail, __ATOMIC_ACQUIRE);
	uint64_t size = b->data_size;

	if (b->lost) {
		/* PERF_RECORD_LOST first, once there is room for both */
		uint8_t lost[24];

		hwt_put_le32(lost, PERF_RECORD_LOST);
		hwt_put_le16(lost + 4, 0);
		hwt_put_le16(lost + 6, sizeof(lost));
		hwt_put_le64(lost + 8, b->lost_id);
		hwt_put_le64(lost + 16, b->lost);
		if (b->data_head - tail + sizeof(lost) + len <= size) {
			b->lost = 0;
			put_record(b, lost, sizeof(lost), id);
		}
	}
	if (b->data_head - tail + len > size) {
		b->lost++;
		b->lost_id = id;
		return;
	}
	for (size_t i = 0; i < len;) {
		size_t at = (size_t)((b->data_head + i) % size);
		size_t n = size - at < len - i ? size - at : len - i;

		memcpy(b->data + at, rec + i, n);
		i += n;
	}
	b->data_head += len;
	__atomic_store_n(&b->pg->data_head, b->data_head, __ATOMIC_RELEASE);
	wake(b);
}

/* Appends e's sample_id trailer (attr.sample_type) to r at *n. */
static void put_sample_id(const struct ptsim_event *e, uint8_t *r, size_t *n, uint32_t pid,
			  uint32_t tid, uint64_t time, int cpu)
{
	uint64_t st = e->attr.sample_type;

	if (!e->attr.sample_id_all)
		return;
	if (st & PERF_SAMPLE_TID) {
		hwt_put_le32(r + *n, pid);
		hwt_put_le32(r + *n + 4, tid);
		*n += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		hwt_put_le64(r + *n, time);
		*n += 8;
	}
	if (st & PERF_SAMPLE_ID) {
		hwt_put_le64(r + *n, e->id);
		*n += 8;
	}
	if (st & PERF_SAMPLE_STREAM_ID) {
		hwt_put_le64(r + *n, e->id);
		*n += 8;
	}
	if (st & PERF_SAMPLE_CPU) {
		hwt_put_le32(r + *n, (uint32_t)cpu);
		hwt_put_le32(r + *n + 4, 0);
		*n += 8;
	}
	if (st & PERF_SAMPLE_IDENTIFIER) {
		hwt_put_le64(r + *n, e->id);
		*n += 8;
	}
}

/* Whether e asks for records of this type (kernel: perf_event_*_match). */
static bool wants(const struct ptsim_event *e, uint32_t type)
{
	switch (type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return e->attr.mmap;
	case PERF_RECORD_COMM:
		return e->attr.comm;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		return e->attr.task;
	case PERF_RECORD_SWITCH:
		return e->attr.context_switch && e->pid != -1;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		return e->attr.context_switch && e->pid == -1;
	default:
		return false;
	}
}

/* A record body (header + fields) for every event that wants it: those
 * covering t on cpu, enabled, with a data area. */
static void emit(struct ptsim *sim, struct ptsim_feed *f, struct fthread *t, int cpu,
		 const uint8_t *body, uint16_t len, uint64_t time)
{
	uint32_t type = hwt_le32(body);

	for (size_t i = 0; i < sim->nev; i++) {
		struct ptsim_event *e = sim->ev[i];
		uint8_t r[HWT_COLL_RECORD_MAX];
		size_t n = len;

		if (!e->buf || !wants(e, type) || (e->cpu != -1 && e->cpu != cpu) ||
		    !covers(f, e, t) || !live(e, t) || (size_t)len + 48 > sizeof(r))
			continue;
		memcpy(r, body, len);
		if (type == PERF_RECORD_MMAP2 && !e->attr.mmap2) {
			/* PERF_RECORD_MMAP: pid, tid, addr, len, pgoff, filename */
			size_t name = 8 + 8 + 24 + 24 + 8;

			if (len < name)
				continue;
			memmove(r + 8 + 32, body + name, len - name);
			n = 8 + 32 + (len - name);
			hwt_put_le32(r, PERF_RECORD_MMAP);
		}
		if (type == PERF_RECORD_COMM && !e->attr.comm_exec)
			hwt_put_le16(r + 4, hwt_le16(r + 4) & ~PERF_RECORD_MISC_COMM_EXEC);
		put_sample_id(e, r, &n, t->pid, t->tid, time, cpu);
		hwt_put_le16(r + 6, (uint16_t)n);
		put_record(e->buf, r, n, e->id);
	}
}

static void emit_switch(struct ptsim *sim, struct ptsim_feed *f, struct fthread *t, int cpu,
			bool out, bool preempt, uint64_t time)
{
	uint8_t r[16];

	memset(r, 0, sizeof(r));
	hwt_put_le32(r, PERF_RECORD_SWITCH);
	hwt_put_le16(r + 4, (uint16_t)(out ? PERF_RECORD_MISC_SWITCH_OUT |
						 (preempt ? PERF_RECORD_MISC_SWITCH_OUT_PREEMPT : 0)
					   : 0));
	hwt_put_le16(r + 6, 8);
	emit(sim, f, t, cpu, r, 8, time);
	/* CPU-wide: next_prev is the idle task either way */
	hwt_put_le32(r, PERF_RECORD_SWITCH_CPU_WIDE);
	hwt_put_le16(r + 6, 16);
	emit(sim, f, t, cpu, r, 16, time);
}

/* Records of t up to thread time `until` (all when last), at their time
 * shifted by t's delta, no earlier than floor. */
static void emit_records(struct ptsim *sim, struct ptsim_feed *f, struct fthread *t, int cpu,
			 uint64_t until, bool all, uint64_t floor)
{
	uint64_t shift = ns_of(t->delta);
	size_t k = 0;

	for (; k < t->nrecs && (all || t->recs[k].time < until); k++) {
		uint64_t time = t->recs[k].time + shift;

		emit(sim, f, t, cpu, t->recs[k].raw, t->recs[k].len, time < floor ? floor : time);
		free(t->recs[k].raw);
	}
	memmove(t->recs, t->recs + k, (t->nrecs - k) * sizeof(*t->recs));
	t->nrecs -= k;
}

/* The PT events whose AUX area receives t's trace on cpu. */
static size_t targets(struct ptsim *sim, struct ptsim_feed *f, struct fthread *t, int cpu,
		      struct ptsim_event **out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < sim->nev && n < max; i++) {
		struct ptsim_event *e = sim->ev[i];

		if (e->kind == PTSIM_PT && e->buf && e->buf->aux &&
		    (e->cpu == -1 || e->cpu == cpu) && covers(f, e, t))
			out[n++] = e;
	}
	return n;
}

static void aux_record(struct ptsim_event *e, uint32_t pid, uint32_t tid, int cpu, uint64_t offset,
		       uint64_t size, uint64_t flags, uint64_t time)
{
	uint8_t r[80];
	size_t n = 32;

	hwt_put_le32(r, PERF_RECORD_AUX);
	hwt_put_le16(r + 4, 0);
	hwt_put_le64(r + 8, offset);
	hwt_put_le64(r + 16, size);
	hwt_put_le64(r + 24, flags);
	put_sample_id(e, r, &n, pid, tid, time, cpu);
	hwt_put_le16(r + 6, (uint16_t)n);
	put_record(e->buf, r, n, e->id);
	if (flags & PERF_AUX_FLAG_TRUNCATED)
		e->truncated++;
}

static void itrace_start(struct ptsim_event *e, struct fthread *t, int cpu, uint64_t time)
{
	uint8_t r[64];
	size_t n = 16;

	/* perf_log_itrace_start: once per event (its inherited copies
	 * included), for the task that starts it. */
	if (e->nstarted)
		return;
	if (grow(&e->started, &e->capstarted, 1, sizeof(*e->started)) < 0)
		return;
	e->started[e->nstarted++] = (int32_t)t->tid;
	hwt_put_le32(r, PERF_RECORD_ITRACE_START);
	hwt_put_le16(r + 4, 0);
	hwt_put_le32(r + 8, t->pid);
	hwt_put_le32(r + 12, t->tid);
	put_sample_id(e, r, &n, t->pid, t->tid, time, cpu);
	hwt_put_le16(r + 6, (uint16_t)n);
	put_record(e->buf, r, n, e->id);
}

static uint64_t aux_free(const struct ptsim_buf *b)
{
	uint64_t tail = __atomic_load_n(&b->pg->aux_tail, __ATOMIC_ACQUIRE);

	return b->aux_size - (b->aux_head - tail);
}

/* Copies bytes into b's AUX area at its head (wrapping). */
static void aux_copy(struct ptsim_buf *b, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len;) {
		size_t at = (size_t)((b->aux_head + i) % b->aux_size);
		size_t n = b->aux_size - at < len - i ? b->aux_size - at : len - i;

		memcpy(b->aux + at, p + i, n);
		i += n;
	}
	b->aux_head += len;
}

static void publish_aux(struct ptsim_buf *b)
{
	/* The data is visible before the head (pt_config_stop's wmb()). */
	uint64_t head = b->overwrite ? b->aux_head % b->aux_size : b->aux_head;

	__atomic_store_n(&b->pg->aux_head, head, __ATOMIC_RELEASE);
	wake(b);
}

static void put_le48(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 6; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* ------------------------------------------------------------------------ */
/* placing trace                                                             */

/* The piece's bytes with every TSC packet moved by delta, plus what the
 * AUX stream needs around it: TSC and TIP.PGE before it when tracing is
 * off at the stream's end, FUP and TIP.PGD after it when the thread is
 * preempted (next_ip: where it goes on). Returns the length, -ENOMEM. */
static int64_t build(const struct fthread *t, const struct piece *p, uint64_t delta, bool pge,
		     bool pgd, uint64_t next_ip, uint8_t **out)
{
	size_t plen = (size_t)(p->end - p->off), n = 0;
	uint8_t *b = malloc(plen + 32);
	struct pt_config cfg;
	struct pt_packet_decoder *dec;
	struct pt_packet pkt;
	size_t at;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	if (pge) {
		uint64_t tsc = (p->tsc + delta) & ((1ull << 56) - 1);

		b[n++] = 0x19; /* TSC */
		for (int i = 0; i < 7; i++)
			b[n++] = (uint8_t)(tsc >> (8 * i));
		b[n++] = 0x71; /* TIP.PGE, 6 bytes sign-extended */
		put_le48(b + n, p->ip);
		n += 6;
	}
	at = n;
	memcpy(b + n, t->buf + (p->off - t->base), plen);
	n += plen;
	pt_config_init(&cfg);
	cfg.begin = b + at;
	cfg.end = b + at + plen;
	dec = pt_pkt_alloc_decoder(&cfg);
	if (dec && pt_pkt_sync_set(dec, 0) == 0) {
		uint64_t off;

		while (pt_pkt_get_offset(dec, &off) == 0 &&
		       pt_pkt_next(dec, &pkt, sizeof(pkt)) >= 0) {
			if (pkt.type == ppt_tsc && delta) {
				uint64_t v = (pkt.payload.tsc.tsc + delta) & ((1ull << 56) - 1);

				for (int i = 0; i < 7; i++)
					b[at + off + 1 + (size_t)i] = (uint8_t)(v >> (8 * i));
			}
		}
	}
	pt_pkt_free_decoder(dec);
	if (pgd && next_ip) {
		b[n++] = 0x7d; /* FUP, 6 bytes sign-extended */
		put_le48(b + n, next_ip);
		n += 6;
		b[n++] = 0x01; /* TIP.PGD, ip suppressed */
	}
	*out = b;
	return (int64_t)n;
}

static bool timed_out(struct ptsim_feed *f)
{
	struct timespec ts;

	if (!f->blocked) {
		f->blocked = true;
		clock_gettime(CLOCK_MONOTONIC, &f->block0);
		return false;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)(ts.tv_sec - f->block0.tv_sec) * 1000 +
		   (uint64_t)((ts.tv_nsec - f->block0.tv_nsec) / 1000000) >=
	       PTSIM_WAIT_MS;
}

/* With "wait", trace that found no room waits in the buffer's queue:
 * writes what fits now, with its PERF_RECORD_AUX. */
static void flush_pending(struct ptsim_buf *b)
{
	size_t put;
	uint64_t head0 = b->aux_head;

	if (!b->npend || !b->aux)
		return;
	put = (size_t)aux_free(b) < b->npend ? (size_t)aux_free(b) : b->npend;
	if (!put)
		return;
	aux_copy(b, b->pend, put);
	memmove(b->pend, b->pend + put, b->npend - put);
	b->npend -= put;
	publish_aux(b);
	if (b->pend_ev)
		aux_record(b->pend_ev, b->pend_pid, b->pend_tid, b->pend_cpu, head0, put, 0,
			   b->pend_time);
}

/* Whether the targets can take len bytes now (or the feeder waited long
 * enough and acts as the hardware does: *give_up). */
static bool ready_for(struct ptsim *sim, struct ptsim_feed *f, struct ptsim_event **ev, size_t n,
		      size_t len, bool *give_up)
{
	bool ok = true;

	*give_up = false;
	for (size_t i = 0; i < n; i++) {
		struct ptsim_buf *b = ev[i]->buf;
		uint64_t need = len < b->aux_size ? len : b->aux_size;

		if (b->overwrite)
			continue;
		if (sim->wait) {
			flush_pending(b);
			ok = ok && !b->npend;
			continue;
		}
		if (!ev[i]->enabled && !ev[i]->exec_pending) {
			/* after an overrun, wait for the reader to enable it */
			ok = ok && !ev[i]->overrun;
			continue;
		}
		ok = ok && aux_free(b) >= need;
	}
	if (ok) {
		f->blocked = false;
		return true;
	}
	*give_up = !sim->wait && timed_out(f);
	return *give_up;
}

/* Writes one piece's bytes into e's AUX area (full, overwrite or
 * waiting), with its PERF_RECORD_AUX; an overrun disables e. Returns 0 or
 * -ENOMEM. */
static int write_piece(struct ptsim *sim, struct ptsim_event *e, struct fthread *t, int cpu,
		       const uint8_t *bytes, size_t len, bool pgd, bool last, uint64_t time)
{
	struct ptsim_buf *b = e->buf;
	uint64_t head0 = b->aux_head, flags = 0;
	size_t put = len;

	if (b->overwrite) {
		aux_copy(b, bytes, len);
		publish_aux(b);
		aux_record(e, t->pid, t->tid, cpu, b->aux_head % b->aux_size, b->aux_size,
			   PERF_AUX_FLAG_OVERWRITE, time);
	} else if (sim->wait) {
		if (grow(&b->pend, &b->cappend, b->npend + len, 1) < 0)
			return -ENOMEM;
		memcpy(b->pend + b->npend, bytes, len);
		b->npend += len;
		b->pend_ev = e;
		b->pend_pid = t->pid;
		b->pend_tid = t->tid;
		b->pend_cpu = cpu;
		b->pend_time = time;
		flush_pending(b);
	} else {
		if (aux_free(b) < len) {
			/* perf_aux_output_begin/end: the area is full; the event
			 * stops until the reader enables it again */
			put = (size_t)aux_free(b);
			flags = PERF_AUX_FLAG_TRUNCATED;
		}
		aux_copy(b, bytes, put);
		publish_aux(b);
		aux_record(e, t->pid, t->tid, cpu, head0, put, flags, time);
		if (flags) {
			e->enabled = false;
			e->overrun = true;
			e->overruns++;
		}
	}
	b->stream_on = !flags && !pgd && !last;
	b->last_tid = (int32_t)t->tid;
	return 0;
}

/* Places t's next piece on cpu (t holds it). Returns 1 when placed, 0
 * when it waits for a reader, -ENOMEM. */
static int place(struct ptsim *sim, struct ptsim_feed *f, struct fthread *t, int cpu,
		 bool release_after)
{
	struct piece *p = &t->ready[0];
	struct ptsim_event *ev[8];
	size_t n = targets(sim, f, t, cpu, ev, HWT_ARRAY_SIZE(ev));
	uint64_t next_ip = t->nready > 1 ? t->ready[1].ip : t->have_cur ? t->cur.ip : 0;
	uint64_t end_tsc = t->nready > 1 ? t->ready[1].tsc : t->have_cur ? t->cur.tsc : p->tsc;
	bool pgd = release_after && !p->last, give_up;
	uint64_t gs, ge;

	if (p->last)
		end_tsc = t->hdr.tsc_end > p->tsc ? t->hdr.tsc_end : p->tsc;
	gs = ns_of(p->tsc + t->delta);
	ge = ns_of(end_tsc + t->delta);
	if (!ready_for(sim, f, ev, n, (size_t)(p->end - p->off) + 32, &give_up))
		return 0;
	/* The data areas, in time order: the switch in, ITRACE_START, what
	 * the thread did during the piece, then the AUX records. */
	if (!t->stint)
		emit_switch(sim, f, t, cpu, false, false, gs);
	for (size_t i = 0; i < n; i++) {
		if (live(ev[i], t))
			itrace_start(ev[i], t, cpu, gs);
	}
	emit_records(sim, f, t, cpu, ns_of(end_tsc), p->last, gs);
	for (size_t i = 0; i < n; i++) {
		struct ptsim_event *e = ev[i];
		bool pge = p->ip && !e->buf->stream_on && e->buf->aux_head > 0;
		uint8_t *bytes;
		int64_t len;
		int err;

		if (!live(e, t)) {
			t->dropped_any = true;
			f->dropped++;
			continue;
		}
		len = build(t, p, t->delta, pge, pgd, next_ip, &bytes);
		if (len < 0)
			return (int)len;
		err = write_piece(sim, e, t, cpu, bytes, (size_t)len, pgd, p->last, ge);
		free(bytes);
		if (err < 0)
			return err;
	}
	f->placed++;
	t->placed_any = true;
	t->stint++;
	t->next_tsc = end_tsc;
	if (p->last) {
		emit_switch(sim, f, t, cpu, true, false, ge);
		t->done = true;
	} else if (release_after) {
		emit_switch(sim, f, t, cpu, true, true, ge);
	}
	memmove(t->ready, t->ready + 1, (t->nready - 1) * sizeof(*t->ready));
	t->nready--;
	return 1;
}

/* The shift t's creator had at thread time when (its clone of t), or
 * false when not known yet. */
static bool creator_delta(struct ptsim_feed *f, const struct fthread *t, uint64_t when,
			  uint64_t *delta)
{
	uint32_t ctid = t->ptid ? t->ptid : t->ppid;
	const struct fthread *c = NULL;

	*delta = 0;
	if (!ctid || ctid == t->tid)
		return true;
	for (size_t i = 0; i < f->nth && !c; i++) {
		if (f->th[i]->tid == ctid && f->th[i] != t && f->th[i]->hdr.tsc_start <= when)
			c = f->th[i];
	}
	if (!c)
		return true; /* not traced by the emulator */
	if (c->cpu < 0 && !c->done && c->next_tsc <= when)
		return false; /* its piece with the clone is not placed */
	for (size_t i = 0; i < c->nhist; i++) {
		if (c->hist[i].from <= when)
			*delta = c->hist[i].delta;
	}
	if (!c->nhist)
		return c->done;
	return true;
}

static bool can_start(struct ptsim_feed *f, struct fthread *t, uint64_t *min_delta)
{
	*min_delta = t->delta;
	if (!t->nready)
		return false;
	if (!t->placed_any) {
		uint64_t d;

		if (!creator_delta(f, t, t->hdr.tsc_start, &d))
			return false;
		if (d > *min_delta)
			*min_delta = d;
	}
	return true;
}

static void acquire(struct ptsim_feed *f, struct fthread *t, int cpu, uint64_t min_delta)
{
	struct fcpu *c = &f->cpus[cpu];
	uint64_t want = t->ready[0].tsc + min_delta;

	t->delta = min_delta;
	if (c->free_at > want)
		t->delta += (c->free_at - want + f->q - 1) / f->q * f->q;
	if (grow(&t->hist, &t->caphist, t->nhist + 1, sizeof(*t->hist)) == 0) {
		t->hist[t->nhist].from = t->ready[0].tsc;
		t->hist[t->nhist].delta = t->delta;
		t->nhist++;
	}
	t->cpu = cpu;
	t->stint = 0;
	c->holder = t;
}

static void release(struct ptsim_feed *f, struct fthread *t)
{
	struct fcpu *c = &f->cpus[t->cpu];

	t->last_cpu = t->cpu;
	c->free_at = t->next_tsc + t->delta;
	c->holder = NULL;
	t->cpu = -1;
}

static bool someone_waits(struct ptsim *sim, struct ptsim_feed *f, const struct fthread *self)
{
	for (unsigned c = 0; c < sim->ncpus; c++) {
		if (!f->cpus[c].holder)
			return false; /* it can have that one */
	}
	for (size_t i = 0; i < f->nth; i++) {
		struct fthread *t = f->th[i];
		uint64_t d;

		if (t != self && t->cpu < 0 && !t->done && can_start(f, t, &d))
			return true;
	}
	return false;
}

/* One pass: every piece that can be placed is. Returns 1 when a reader
 * must make room first, 0, or -ENOMEM. */
static int schedule(struct ptsim *sim, struct ptsim_feed *f)
{
	bool progress = true;

	while (progress) {
		progress = false;
		for (unsigned c = 0; c < sim->ncpus; c++) {
			struct fthread *t = f->cpus[c].holder;

			while (t && t->nready) {
				bool rel = !t->ready[0].last &&
					   ((sim->slice && t->stint + 1 >= sim->slice) ||
					    (t->stint >= 1 && someone_waits(sim, f, t)));
				int r = place(sim, f, t, (int)c, rel);

				if (r < 0)
					return r;
				if (r == 0)
					return 1;
				progress = true;
				if (t->done || rel) {
					release(f, t);
					break;
				}
			}
			if (t && t->done && f->cpus[c].holder == t)
				release(f, t);
		}
		for (;;) {
			struct fthread *best = NULL;
			uint64_t best_at = UINT64_MAX, best_d = 0;
			int cpu = -1;

			for (unsigned c = 0; c < sim->ncpus; c++) {
				if (!f->cpus[c].holder &&
				    (cpu < 0 || f->cpus[c].free_at < f->cpus[cpu].free_at))
					cpu = (int)c;
			}
			if (cpu < 0)
				break;
			for (size_t i = 0; i < f->nth; i++) {
				struct fthread *t = f->th[i];
				uint64_t d;

				if (t->cpu >= 0 || t->done || !can_start(f, t, &d))
					continue;
				if (t->ready[0].tsc + d < best_at) {
					best = t;
					best_at = t->ready[0].tsc + d;
					best_d = d;
				}
			}
			if (!best)
				break;
			acquire(f, best, cpu, best_d);
			progress = true;
		}
	}
	return 0;
}

/* Wakes the readers of the buffers written to, and stops waking those
 * that caught up (an eventfd stays readable until read). */
static void wakeups(struct ptsim *sim)
{
	for (size_t i = 0; i < sim->nev; i++) {
		struct ptsim_buf *b = sim->ev[i]->buf;
		uint64_t v = 1;

		if (!b || !sim->ev[i]->mapped || b->wake_fd < 0)
			continue;
		if (b->written) {
			b->written = false;
			if (write(b->wake_fd, &v, sizeof(v)) < 0)
				continue;
		} else if (__atomic_load_n(&b->pg->data_tail, __ATOMIC_ACQUIRE) == b->data_head &&
			   (!b->aux || b->overwrite ||
			    __atomic_load_n(&b->pg->aux_tail, __ATOMIC_ACQUIRE) == b->aux_head)) {
			if (read(b->wake_fd, &v, sizeof(v)) < 0)
				continue;
		}
	}
}

/* Reads what is new and places what can be. Called with the lock held. */
static int pass(struct ptsim *sim, struct ptsim_feed *f, bool final)
{
	int err = 0;

	if (final || !(f->scans++ % 8))
		err = scan_dir(sim, f);
	/* threads first, then the sideband: a record written before a PSB
	 * is then seen no later than the PSB */
	for (size_t i = 0; i < f->nth && err >= 0; i++)
		err = read_thread(f->th[i], final);
	if (err >= 0)
		err = read_sideband(sim, f);
	for (size_t i = 0; i < f->nth && err >= 0; i++) {
		struct fthread *t = f->th[i];

		take_orphans(f, t);
		/* A record written after the thread's last trace (its EXIT):
		 * out on the CPU it ran on last, at its time. */
		if (t->done && t->nrecs)
			emit_records(sim, f, t, t->last_cpu, 0, true, 0);
	}
	for (size_t i = 0; i < sim->nev; i++) {
		if (sim->ev[i]->mapped && sim->ev[i]->buf)
			flush_pending(sim->ev[i]->buf);
	}
	if (err >= 0)
		err = schedule(sim, f);
	wakeups(sim);
	return err;
}

static void *feeder(void *arg)
{
	struct ptsim *sim = arg;
	struct ptsim_feed *f = sim->feed;

	while (!atomic_load(&f->stop)) {
		struct timespec ts = {0, POLL_US * 1000};

		pthread_mutex_lock(&sim->lock);
		pass(sim, f, false);
		pthread_mutex_unlock(&sim->lock);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int ptsim_feed_start(struct ptsim *sim)
{
	struct ptsim_feed *f;
	struct hwt_ptemu_terms terms;
	unsigned bits;

	if (sim->feed)
		return 0;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->cpus = calloc(sim->ncpus, sizeof(*f->cpus));
	if (!f->cpus) {
		free(f);
		return -ENOMEM;
	}
	f->sb_fd = -1;
	hwt_ptemu_terms_init(&terms);
	for (size_t i = 0; i < sim->nev; i++) {
		if (sim->ev[i]->kind == PTSIM_PT)
			hwt_ptemu_terms_from_config(&terms, sim->ev[i]->attr.config, 1);
	}
	/* MTC payloads are CTC bits mtc_period..mtc_period+7, TMA's CTC bits
	 * 0..15: a shift of 2^bits crystal ticks changes neither. */
	bits = terms.mtc_period + 8u > 16u ? terms.mtc_period + 8u : 16u;
	f->q = 84ull << bits;
	atomic_init(&f->stop, false);
	sim->feed = f;
	if (pthread_create(&f->thr, NULL, feeder, sim) != 0) {
		sim->feed = NULL;
		free(f->cpus);
		free(f);
		return -EAGAIN;
	}
	f->running = true;
	return 0;
}

void ptsim_feed_sync(struct ptsim *sim)
{
	if (sim->feed)
		pass(sim, sim->feed, false);
}

int ptsim_feed_settle(struct ptsim *sim)
{
	struct ptsim_feed *f = sim->feed;
	int r;

	if (!f)
		return 0;
	pthread_mutex_lock(&sim->lock);
	r = pass(sim, f, true);
	/* The recording ends: a thread still running (a process that outlives
	 * the command, or a recording stopped early) has its trace so far
	 * in the buffers, as the hardware would. */
	for (size_t i = 0; i < f->nth && r == 0; i++) {
		struct fthread *t = f->th[i];

		if (t->ended || t->done)
			continue;
		if (t->have_cur && t->base + t->len > t->cur.off)
			r = push_piece(t, t->base + t->len, true);
		t->ended = true;
	}
	if (r == 0)
		r = schedule(sim, f);
	wakeups(sim);
	for (size_t i = 0; i < sim->nev && !r; i++) {
		if (sim->ev[i]->mapped && sim->ev[i]->buf && sim->ev[i]->buf->npend)
			r = 1;
	}
	if (r == 0) {
		for (size_t i = 0; i < f->nth && !r; i++) {
			const struct fthread *t = f->th[i];

			/* a stream still growing belongs to a process that
			 * outlives the command: what it wrote so far is out */
			if (!t->done && (t->nready || (t->ended && t->have_cur)))
				r = 1;
		}
	}
	pthread_mutex_unlock(&sim->lock);
	return r < 0 ? r : r > 0;
}

void ptsim_feed_stop(struct ptsim *sim)
{
	struct ptsim_feed *f = sim->feed;

	if (!f)
		return;
	atomic_store(&f->stop, true);
	if (f->running)
		pthread_join(f->thr, NULL);
	for (size_t i = 0; i < f->nth; i++) {
		struct fthread *t = f->th[i];

		close(t->fd);
		free(t->buf);
		free(t->ready);
		for (size_t k = 0; k < t->nrecs; k++)
			free(t->recs[k].raw);
		free(t->recs);
		free(t->hist);
		free(t);
	}
	for (size_t k = 0; k < f->norphans; k++)
		free(f->orphans[k].raw);
	free(f->orphans);
	free(f->th);
	free(f->cpus);
	if (f->sb_fd >= 0)
		close(f->sb_fd);
	free(f);
	sim->feed = NULL;
}
