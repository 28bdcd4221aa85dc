/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptsession/pts_int.h - what the PT session's files share: the process
 * images over time, the per-CPU thread timelines and the AUX stream plans
 * that the sideband pass (pts_sb.c) builds and the decoding run
 * (ptsession.c) reads. After the sideband pass everything here is read-only,
 * which is what lets the decoder's context hook run on several threads.
 */
#ifndef HWT_PTSESSION_PTS_INT_H
#define HWT_PTSESSION_PTS_INT_H

#include "ptsession/ptsession.h"

/* One version of a process's address space: valid from time on. */
struct pts_ver {
	uint64_t time;
	struct hwt_dec_image *img;
};

struct pts_range {
	uint64_t start, end;
};

struct pts_proc {
	int32_t pid;
	struct pts_ver *vers;
	size_t nvers, capvers;
	/* Executable ranges of the current version, to tell whether one
	 * image (the union of all versions) decodes the process exactly: it
	 * does unless a mapping replaced another or the process exec'd. */
	struct pts_range *ranges;
	size_t nranges, capranges;
	bool changing;
	uint32_t gen; /* bumped when an exec or a fork replaces the process
		       * (the process before it may still be running) */
};

/* Processes' images over time (pts_procs.c), built from the sideband in
 * time order, then sorted by pid for lookups. */
struct pts_procs {
	struct hwt_dec_icache *ic;
	bool hex_names; /* images named "pid-%x" as libipt-sb names them
			 * (ptxed's [context: ...]), else "pid %d" */
	struct pts_proc *procs;
	size_t nprocs, capprocs;
	/* What every new address space starts with (the kernel's code), or
	 * NULL; never handed to a decoder, so it may change (text pokes). */
	struct hwt_dec_image *base;
};

/* A frame of a thread's stack as the session sees it (stitch). */
enum pts_frame_kind {
	PTS_FRAME_NEAR = 0, /* a near call */
	PTS_FRAME_FAR,	    /* SYSCALL, INT n, far CALL, ... */
	PTS_FRAME_ASYNC,    /* an interrupt */
};

struct pts_frame {
	uint64_t func, ret_addr, call_tsc, insns;
	uint8_t kind; /* enum pts_frame_kind */
	bool timed;
};

/* Who ran on a CPU from time on (per-CPU streams). */
struct pts_sw {
	uint64_t time;
	int32_t pid, tid;
};

/* A place in an AUX stream where data was lost (flagged AUX records). */
struct pts_mark {
	uint64_t aux_offset;
};

/* A mapped file, checked once. */
struct pts_file {
	char *path;
	bool checked, usable;
	uint64_t size;
};

struct pts_stream {
	struct hwt_pts *pts;
	size_t idx; /* the session's AUX stream index */
	int32_t cpu, tid, pid;
	uint64_t first_time;
	struct pts_mark *marks;
	size_t nmarks, capmarks;
	struct pts_sw *sw; /* per-CPU: switch timeline, by time */
	size_t nsw, capsw;
	int32_t first_pid, first_tid; /* who ran before the first switch */
	uint64_t announced_end;	      /* end of the data AUX records announced */
	/* per run; the counters are the decoding thread's (pts_merge.c
	 * runs several), summed into the session's stats after it */
	uint64_t aux_bytes, lost_gaps, lost_bytes, read_errors;
	struct hwt_dec_stats dstats;
	bool decoded;
	const struct hwt_dec_image *last_img;
	uint64_t last_img_time;
	int32_t last_img_pid;
	uint64_t last_time;
	int32_t run_tid;   /* the thread of the last record ... */
	uint64_t run_base; /* ... and its count before this stream's
			    * decoder began counting it */
	bool stop;
};

struct hwt_pts {
	struct hwt_pts_config cfg;
	/* the kernel's code (pts_kern.c): memfds of the recording's
	 * copies, -1 */
	int kern_fd, kallsyms_fd;
	int32_t *pids, *tids;
	char *kallsyms;
	struct hwt_fmt_session *s;
	struct hwt_dec_config dcfg;
	/* How far the trace's time can lag behind the true time at a
	 * TIP.PGE (the time of the last timing packet before it): the kernel
	 * work that happened while tracing was off (mmap, exec, a context
	 * switch) is applied up to this much after the PGE's time. */
	uint64_t enable_slack;
	/* Image versions by image, for the symbolization floor. */
	struct pts_imgtime {
		const struct hwt_dec_image *img;
		uint64_t time;
		int32_t pid;
	} * imgtimes;
	size_t nimgtimes;
	int32_t floor_pid;   /* the record being delivered: its process */
	uint64_t floor_time; /* ... and when its code was mapped */
	struct hwt_dec_icache *ic;
	struct hwt_dec_image *empty; /* context of unknown processes */
	struct pts_procs procs;	     /* sorted by pid after the pass */
	struct {
		int32_t tid, pid;
	} * tidmap; /* sorted by tid after the pass */
	size_t ntidmap, captidmap;
	struct pts_file *files;
	size_t nfiles, capfiles;
	struct pts_stream *streams; /* in decoding order after the pass */
	size_t nstreams;
	const uint8_t *vdso;
	size_t vdso_size;
	struct hwt_sym_cache *sym_cache, *own_cache;
	struct hwt_sym_aspace *aspace;
	struct hwt_sym_hint hint;
	struct hwt_dec_sink *sinks;
	size_t nsinks;
	/* Each thread's instructions over all its streams (records' insns;
	 * a decoder counts from 0): open addressing by tid. */
	struct pts_tcount {
		int32_t tid;	 /* -1: free */
		uint32_t stream; /* the stream counting now, + 1 */
		uint64_t base;	 /* instructions before that stream */
		uint64_t total;
		/* stitch: the thread's whole stack; frames below `below`
		 * were entered in earlier runs (other CPUs), those above
		 * are the current decoder's */
		struct pts_frame *frames;
		size_t nframes, capframes, below;
	} * tcounts;
	size_t ntcounts, captcounts;
	size_t last_tcount; /* the entry found last (most records are
			     * the same thread's); valid when < captcounts */
	/* Per-CPU streams are decoded together in time order (pts_merge.c)
	 * and threads' stacks carried from CPU to CPU. */
	bool stitch;
	uint32_t want; /* records the decoders make (HWT_DEC_WANT) */
	bool ran;
	bool warned_kernel, warned_anon;
	struct hwt_pts_stats st;
};

/* Decodes one stream, delivering its records to rec(ctx, ...) from the
 * calling thread (calls and returns to batch(ctx, ...) when it is not
 * NULL: struct hwt_dec_sink.batch; to the session's one sink's call tree
 * through tree when it is not NULL: struct hwt_dec_sink.tree; runs of
 * records to recs when it is not NULL: struct hwt_dec_sink.recs); AUX data
 * is read and fed piece bytes at a time into buf (piece bytes). */
#define PTS_PIECE (4u * 1024u * 1024u) /* one stream at a time */
#define PTS_LANE_PIECE                                                                             \
	(1024u * 1024u) /* each CPU's stream at once                                               \
			 * (stitching): memory per CPU */
int pts_run_stream(struct hwt_pts *pts, struct pts_stream *st, uint8_t *buf, size_t piece,
		   int (*rec)(void *ctx, const struct hwt_dec_rec *rec),
		   int (*batch)(void *ctx, const struct hwt_dec_batch *batch),
		   const struct hwt_dec_tree *tree,
		   int (*recs)(void *ctx, const struct hwt_dec_rec *recs, size_t n), void *ctx);
/* The session's sink for a record of stream st (filters, stitches,
 * delivers). Returns 0, -HWT_EEOS when the stream passed the end time, or
 * a sink's error. */
int pts_rec(struct pts_stream *st, const struct hwt_dec_rec *rec);
/* When the run of a per-CPU stream that began at run (the switch time
 * that the hook gives as hwt_dec_context.run) ended: the CPU's next switch,
 * or UINT64_MAX. */
uint64_t pts_run_end(const struct pts_stream *st, uint64_t run);
/* Decodes every stream on its own thread and delivers the records merged
 * by time (pts_merge.c). */
int pts_merge_run(struct hwt_pts *pts);

/* The sideband pass: reads every record of the session. Returns 0 or a
 * negative error (see hwt_pts_open). */
int pts_sb_read(struct hwt_pts *pts, uint64_t *err_offset);
/* Decoder configuration from the metadata. */
void pts_sb_config(struct hwt_pts *pts);

/* The kernel's code (pts_kern.c): loads the recording's copy of it
 * (metadata kernel.kcore) as the image every new address space starts
 * with (procs.base), and its kallsyms; a text poke changes that image
 * from its time on; frees. */
int pts_kern_load(struct hwt_pts *pts);
int pts_kern_poke(struct hwt_pts *pts, const struct hwt_fmt_record *rec);
void pts_kern_free(struct hwt_pts *pts);

/* The process of thread tid (tid itself when unknown). */
int32_t pts_pid_of(const struct hwt_pts *pts, int32_t tid);
/* When image (a version of process *pid) was mapped; 0 and *pid -1 when
 * it is none of them. */
uint64_t pts_image_time(const struct hwt_pts *pts, const struct hwt_dec_image *img, int32_t *pid);

/* Grows *p (of *cap elements of size elem) to hold n elements. Returns 0
 * or -ENOMEM. */
int pts_grow(void *p, size_t *cap, size_t n, size_t elem);

/* Processes' images (pts_procs.c). While building: */
/* The process pid (added when new), or NULL (no memory). Pointers into the
 * table move when it grows. */
struct pts_proc *pts_procs_get(struct pts_procs *ps, int32_t pid);
/* The version of p to change at time: the last one when it has this time,
 * else a new one, a copy of the last (empty: a new empty one). NULL: no
 * memory. */
struct hwt_dec_image *pts_proc_edit(struct pts_procs *ps, struct pts_proc *p, uint64_t time,
				    bool empty);
/* exec of pid at time: an empty image from then on. 0 or -ENOMEM. */
int pts_procs_exec(struct pts_procs *ps, int32_t pid, uint64_t time);
/* fork of pid from ppid at time: a copy of the parent's latest image. 0 or
 * -ENOMEM. */
int pts_procs_fork(struct pts_procs *ps, int32_t ppid, int32_t pid, uint64_t time);
/* pid's latest image (NULL: none). */
struct hwt_dec_image *pts_procs_latest(const struct pts_procs *ps, int32_t pid);
/* Done building: sorts by pid for the lookups below. */
void pts_procs_sort(struct pts_procs *ps);
const struct pts_proc *pts_procs_find(const struct pts_procs *ps, int32_t pid);
/* The image of process pid at time (NULL: none known). */
struct hwt_dec_image *pts_procs_at(const struct pts_procs *ps, int32_t pid, uint64_t time);
/* Whether pid has the same image at every time in [t0, t1]. */
bool pts_procs_same(const struct pts_procs *ps, int32_t pid, uint64_t t0, uint64_t t1);
/* Drops every image. */
void pts_procs_fini(struct pts_procs *ps);

#endif /* HWT_PTSESSION_PTS_INT_H */
