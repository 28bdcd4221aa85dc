/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptsession/ptsession.h - decoding Intel PT *recordings*: the whole contract
 * of the ptsession module.
 *
 * A recording (hwtrace's .hwt from `record --pt` or `record --pt=emulate`,
 * or a perf.data from `perf record -e intel_pt//`, file or pipe mode) holds
 * PT bytes in AUX streams (one per thread or one per CPU), the kernel's
 * sideband records (MMAP/MMAP2, COMM, FORK, EXIT, SWITCH, AUX,
 * ITRACE_START, ...) and metadata (CPU, TSC conversion, PT settings,
 * build-ids, a copy of the vDSO). A PT session reads all of it and drives
 * the decoder (decoder/decoder.h): the decoder configuration comes from the
 * metadata (hwtrace's pt.config.* keys, or perf's AUXTRACE_INFO), a code
 * image per process over time comes from the sideband (mmaps with their file
 * offsets, exec starting an empty image, fork copying the parent's, the
 * recorded vDSO), and per-CPU streams are split into threads by the context
 * switch records through the decoder's context hook.
 *
 * Records reach the caller's sinks (struct hwt_dec_sink) with pid and tid
 * set; the decoders make only the record types some sink wants (its
 * `want`), so a sink of calls pays for no block records. Order: AUX streams are decoded one after
 * another, by the perf time of their first data (streams without time keep their order in the
 * file); the records of one stream arrive in stream order, which is time order. In a per-thread
 * recording (the emulator, `hwtrace record --pt`) every thread has one stream, so each thread's
 * records are contiguous and in time order. In a per-CPU recording (perf's default) each CPU's
 * records are in time order. When a thread ran on several CPUs, the CPUs' streams are decoded
 * together and their records merged by time (stitching, see hwt_pts_config.stitch), so that each
 * thread's records are in time order and its call stack carries over from CPU to CPU: depths count
 * the frames entered on other CPUs and returns into them are known returns. Without stitching (no
 * timing, or turned off) each CPU's stream is decoded alone and a thread's stack starts afresh on
 * each CPU (returns to frames entered on another CPU are RF_UNKNOWN_FRAME). A record's insns counts
 * the thread's instructions over all its streams so far (each stream's decoder counts from 0; the
 * session continues the count).
 *
 * Losses are records, never silence: AUX data missing between segments (a
 * gap in AUX offsets), AUX records flagged TRUNCATED, PARTIAL or OVERWRITE,
 * and AUX data that cannot be read from a damaged file each become a
 * HWT_DEC_GAP_LOST record at their place in the flow (hwt_dec_lost), and are
 * counted in the stats. A mapped file that is missing, or whose build-id or
 * size differs from the recording's, is named once through the logger and
 * left out of the images: code in it gives decode-error gaps, the rest
 * decodes.
 *
 * Usage:
 *
 *   hwt_fmt_session_open(&s, "trace.hwt", NULL, &off);
 *   if (!hwt_pts_session_has_pt(s)) ... samples, not PT ...
 *   hwt_pts_config_init(&cfg);  cfg.log = *logger;  cfg.threads = 2;
 *   err = hwt_pts_open(&pts, s, &cfg, &off);   // reads the sideband
 *   hwt_pts_add_sink(pts, &sink);
 *   err = hwt_pts_run(pts);                    // decodes, calls the sinks
 *   hwt_pts_symbolize(pts, rec->pid, rec->time, ip, &sym);
 *   hwt_pts_stats(pts, &st);
 *   hwt_pts_close(pts);  hwt_fmt_session_close(s);
 *
 * Threads: one thread uses a session at a time (sinks are called from the
 * thread that calls hwt_pts_run, also when cfg.threads > 1).
 */
#ifndef HWT_PTSESSION_PTSESSION_H
#define HWT_PTSESSION_PTSESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hwt.h"
#include "decoder/decoder.h"
#include "format/format.h"
#include "symbolize/symbolize.h"

struct hwt_pts;

/* True when the session holds Intel PT: AUX streams, an intel_pt event, or
 * PT metadata (for a perf pipe, whose AUX data arrive later, the event or
 * the AUXTRACE_INFO tells). Reads no records. */
HWT_API bool hwt_pts_session_has_pt(const struct hwt_fmt_session *session);

/* The recording's kernel half, for tools that name kernel code before
 * decoding it (pt: probes on kernel functions). Reads no records. */
struct hwt_pts_kernel {
	bool traced;	      /* the PT traced the kernel (pt.config.kernel, or
			       * the intel_pt event's exclude_kernel) */
	const uint8_t *kcore; /* the copy of its code (kernel.kcore, an ELF
			       * core file), NULL: none; owned by the session */
	size_t kcore_len;
	const char *kallsyms; /* its symbols (kernel.kallsyms, /proc/kallsyms
			       * text, not NUL-terminated), NULL: none */
	size_t kallsyms_len;
};

HWT_API void hwt_pts_session_kernel(const struct hwt_fmt_session *session,
				    struct hwt_pts_kernel *out);

/* Opens the recording's kernel symbols (kernel.kallsyms) in cache.
 * Returns 0, -HWT_ENOSYM (the recording has none), or
 * hwt_sym_obj_open_kallsyms()'s errors. */
HWT_API int hwt_pts_kallsyms_open(const struct hwt_fmt_session *session,
				  struct hwt_sym_cache *cache, struct hwt_sym_obj **out);

/* The code at kernel address addr in a kcore-format copy (kcore, len
 * bytes): a pointer to it and, in *avail, how many bytes of its range
 * follow; NULL when no range holds addr or the copy is damaged. */
HWT_API const uint8_t *hwt_pts_kcore_at(const uint8_t *kcore, size_t len, uint64_t addr,
					size_t *avail);

struct hwt_pts_config {
	size_t size;	      /* sizeof(struct hwt_pts_config) */
	uint32_t engine;      /* enum hwt_dec_engine; default FAST */
	unsigned int threads; /* decode each stream's PSB segments on this
			       * many threads; 0 or 1: the calling thread.
			       * The records are the same either way */
	uint32_t dec_flags;   /* HWT_DEC_F_* for every decoder */
	uint64_t time_start;  /* perf clock ns: only records from here */
	uint64_t time_end;    /* ... up to here (inclusive); 0: no end.
			       * Records without a time inherit the time
			       * of the record before them */
	const int32_t *pids;  /* only these processes (copied); */
	size_t npids;	      /* 0: all */
	const int32_t *tids;  /* only these threads (copied); 0: all */
	size_t ntids;
	/* Symbolization (hwt_pts_aspace, hwt_pts_symbolize): objects are
	 * opened in this cache (borrowed; it must outlive the session).
	 * NULL: the session allocates its own with the defaults. */
	struct hwt_sym_cache *sym_cache;
	const char *kallsyms;  /* kernel symbols file, or NULL (copied) */
	struct hwt_logger log; /* copied */
	uint32_t stitch;       /* enum hwt_pts_stitch */
};

/* Per-CPU recordings: whether the CPUs' streams are decoded together, in
 * time order, so that a thread's call stack carries over when it moves to
 * another CPU (the decoders run on one thread each, the records are
 * merged by time). It needs timing (TSC and its conversion). */
enum hwt_pts_stitch {
	HWT_PTS_STITCH_AUTO = 0, /* when some thread ran on several CPUs */
	HWT_PTS_STITCH_OFF,	 /* never: each CPU's stream alone, a stack
				  * restarts on each CPU */
	HWT_PTS_STITCH_ON,	 /* every per-CPU recording (tests) */
};

/* Zeroes cfg and sets its size and defaults. */
HWT_API void hwt_pts_config_init(struct hwt_pts_config *cfg);

/* Reads a PT recording: the session (borrowed; it must outlive the PT
 * session, and must not have been read yet: its records are read here, all
 * of them, to the end) and its metadata. Builds the decoder configuration,
 * the process images over time, the context-switch timelines of per-CPU
 * streams and the symbolization address space. cfg is copied (NULL: the
 * defaults). Damage is not an error here: a .hwt chunk that cannot be read
 * is skipped, a perf.data whose framing breaks is read up to there; each is
 * counted in stats.read_errors (and known to hwt_fmt_session_damage(), which
 * says it in the words every command uses), logged at debug level, its file
 * offset stored in *err_offset (when not NULL); decoding goes on with what
 * was read. Returns 0 and stores the session, or:
 *   -HWT_EINVAL   bad config;
 *   -HWT_ENOPT    the recording holds no Intel PT;
 *   -ENOMEM, or -HWT_ELIB (libipt could not be set up). */
HWT_API int hwt_pts_open(struct hwt_pts **pts, struct hwt_fmt_session *session,
			 const struct hwt_pts_config *cfg, uint64_t *err_offset);
/* Frees the session, its images and decoders. Accepts NULL. */
HWT_API void hwt_pts_close(struct hwt_pts *pts);

/* Adds a sink (copied) that receives the decoded records (see the order
 * above). When every sink takes batches (struct hwt_dec_sink.batch), the
 * session has no time filter and stitches no stacks, calls and returns go
 * to them in batches, the thread's count base in insns_base; when that
 * sink is the only one and has a call tree (struct hwt_dec_sink.tree),
 * the decoders use it (at->insns with the thread's count base; not for a
 * thread known only by time, nor one the pid/tid filters drop). Returns
 * 0, -HWT_EINVAL (bad sink, or after hwt_pts_run) or -ENOMEM. */
HWT_API int hwt_pts_add_sink(struct hwt_pts *pts, const struct hwt_dec_sink *sink);

/* Decodes every AUX stream and delivers the records. Once per session.
 * Corrupt or lost trace is not an error (GAP records). Returns 0, a sink's
 * negative return (decoding stops there), -HWT_EINVAL (called twice),
 * -ENOMEM or -HWT_EINTERNAL. */
HWT_API int hwt_pts_run(struct hwt_pts *pts);

/* The decoder configuration derived from the recording (CPU, timing, TSC
 * conversion; engine, threads and flags from cfg). Valid for the session's
 * lifetime. */
HWT_API const struct hwt_dec_config *hwt_pts_dec_config(const struct hwt_pts *pts);

struct hwt_pts_stats {
	struct hwt_dec_stats dec;  /* summed over the streams decoded */
	uint64_t streams;	   /* AUX streams in the recording */
	uint64_t streams_decoded;  /* ... decoded (not filtered out) */
	uint64_t aux_bytes;	   /* PT bytes read */
	uint64_t lost_gaps;	   /* losses reported as GAP records: offset
				    * gaps, flagged AUX records, unreadable
				    * data */
	uint64_t lost_bytes;	   /* PT bytes known to be missing (offset
				    * gaps and unreadable data) */
	uint64_t filtered;	   /* records not delivered (time/pid/tid) */
	uint64_t sideband;	   /* sideband records read */
	uint64_t bad_records;	   /* sideband records skipped as malformed */
	uint64_t read_errors;	   /* damaged chunks skipped */
	uint64_t missing_objects;  /* mapped files missing or changed */
	uint64_t migrated_threads; /* per CPU: threads that ran on more than
				    * one CPU */
	bool stitched;		   /* per CPU: streams decoded together in
				    * time order, stacks carried from CPU to
				    * CPU (hwt_pts_config.stitch) */
	uint64_t stitched_returns; /* returns into frames entered on another
				    * CPU (or before a switch), closed by
				    * stitching */
	uint64_t processes;	   /* processes seen in the sideband */
	bool emulated;		   /* the PT comes from hwtrace's emulator */
	bool per_cpu;		   /* streams are per CPU (else per thread) */
};

/* Fills *stats (cumulative; complete after hwt_pts_run). */
HWT_API void hwt_pts_stats(const struct hwt_pts *pts, struct hwt_pts_stats *stats);

/* The recording's process map for symbolizing, fed with all its sideband,
 * its build-ids and its vDSO copy (symbolize/symbolize.h: lookups by pid,
 * time and ip). Owned by the session; one thread at a time. */
HWT_API struct hwt_sym_aspace *hwt_pts_aspace(struct hwt_pts *pts);

/* What an address was, for printing "func+0xoff (object)". */
struct hwt_pts_sym {
	const char *function; /* NULL when unknown; owned by the session */
	uint64_t offset;      /* ip - function start (when function) */
	uint64_t func_ip;     /* the function's runtime start (when function) */
	const char *object;   /* mapped object path, NULL when unmapped */
};

/* Symbolizes ip of process pid at perf time (the record's time, or 0).
 * Called from a sink during hwt_pts_run for the record being delivered, it
 * uses the mappings the decoder used for that record's code (the trace's
 * time can lag a little behind the sideband's at a return from the kernel).
 * Returns 0 (function found), -HWT_ENOSYM (mapped but no symbol, or not
 * mapped: object tells which), -HWT_EINVAL. Allocates only when an object
 * is opened for the first time. */
HWT_API int hwt_pts_symbolize(struct hwt_pts *pts, int32_t pid, uint64_t time, uint64_t ip,
			      struct hwt_pts_sym *out);

/* The command name of thread tid at perf time (its last COMM, or its
 * creator's), or NULL. Owned by the session. */
HWT_API const char *hwt_pts_comm(struct hwt_pts *pts, int32_t tid, uint64_t time);

/* ------------------------------------------------------------------------ */
/* A raw trace's perf-event sideband (libipt's ptxed --pevent:*)             */

/* A raw PT trace (no recording) with its sideband as `perf record` writes
 * it, one stream of perf records per file: ptxed's --pevent:primary (the
 * traced CPU's, whose context switches say what runs) and
 * --pevent:secondary streams. Hooked into a decoder, it applies the
 * records as libipt's sideband library does under ptxed: in time order up
 * to each query, MMAP/MMAP2 into the processes' images (exec starts an
 * empty one, fork copies the parent's), a context switch postponed until
 * the trace is in the kernel. What ptxed prints of the sideband (records
 * with --sb:compact, warnings with --sb:warn) comes back as notes, in
 * place in the flow.
 *
 * Usage:
 *
 *   hwt_pts_pevent_alloc(&pev, icache, HWT_PTS_PEV_COMPACT);
 *   hwt_pts_pevent_config_init(&sc);  sc.sample_type = ...;  sc.time_mult = ...;
 *   hwt_pts_pevent_add(pev, "primary.pevent", bytes, len, true, &sc);
 *   hwt_pts_pevent_setup(pev, &dec_cfg, &text);   // then print text
 *   hwt_dec_alloc(&dec, &dec_cfg, icache);  ... decode ...
 *   at each HWT_DEC_REC_NOTE: hwt_pts_pevent_note(pev, rec->u.note.cookie, &out);
 *   hwt_pts_pevent_free(pev);                     // after the decoder
 */
struct hwt_pts_pevent;

/* How one sideband stream was recorded (libipt-sb's pev configuration). */
struct hwt_pts_pevent_config {
	size_t size;	      /* sizeof(struct hwt_pts_pevent_config) */
	uint64_t sample_type; /* the events' sample_type: their sample_id
			       * trailer */
	uint64_t time_zero;   /* perf time -> TSC (perf_event_mmap_page) */
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t tsc_offset;   /* subtracted from the converted times */
	uint64_t kernel_start; /* addresses from here up are the kernel's */
	const char *sysroot;   /* prefix of mapped file names (copied; NULL) */
	const char *vdso_x64;  /* files holding the vDSO, per ABI (copied; */
	const char *vdso_x32;  /* NULL: a [vdso] mapping is an error of the */
	const char *vdso_ia32; /* stream) */
};

/* Zeroes cfg, sets its size and the defaults (time_mult 1: times are TSC
 * already; kernel_start UINT64_MAX). */
HWT_API void hwt_pts_pevent_config_init(struct hwt_pts_pevent_config *cfg);

/* What the sideband prints (ptxed's --sb:* options). */
#define HWT_PTS_PEV_COMPACT  (1u << 0) /* each record as applied, a line */
#define HWT_PTS_PEV_VERBOSE  (1u << 1) /* each record, field by field */
#define HWT_PTS_PEV_FILENAME (1u << 2) /* ... prefixed with its file */
#define HWT_PTS_PEV_OFFSET   (1u << 3) /* ... and offset in it */
#define HWT_PTS_PEV_TIME     (1u << 4) /* ... and its TSC */
#define HWT_PTS_PEV_WARN     (1u << 5) /* warnings too (errors always) */
#define HWT_PTS_PEV_SWITCH   (1u << 6) /* [context: NAME] at each switch */

/* Allocates an empty sideband whose images live in icache (borrowed: it
 * must outlive the sideband). Returns 0, -HWT_EINVAL or -ENOMEM. */
HWT_API int hwt_pts_pevent_alloc(struct hwt_pts_pevent **pev, struct hwt_dec_icache *icache,
				 uint32_t flags);
/* Frees it (after the decoder that uses it). Accepts NULL. */
HWT_API void hwt_pts_pevent_free(struct hwt_pts_pevent *pev);
/* Adds a stream: len bytes of perf records (borrowed: they must stay valid
 * while the sideband lives), named name in messages (copied); cfg is
 * copied (sized struct). Returns 0, -HWT_EINVAL or -ENOMEM. */
HWT_API int hwt_pts_pevent_add(struct hwt_pts_pevent *pev, const char *name, const void *buf,
			       size_t len, bool primary, const struct hwt_pts_pevent_config *cfg);
/* Reads each stream's first record (a stream whose record is malformed is
 * dropped, its error appended to out as ptxed prints it), installs the
 * context hook into cfg (one decoding thread: the hook keeps state) and,
 * when cfg has no time conversion, the primary stream's. Returns 0 or
 * -HWT_EINVAL. */
HWT_API int hwt_pts_pevent_setup(struct hwt_pts_pevent *pev, struct hwt_dec_config *cfg,
				 struct hwt_buf *out);
/* Appends the text of the note with this cookie (a HWT_DEC_REC_NOTE
 * record of a decoder using the sideband) to out, once. Returns 0,
 * -HWT_EINVAL or -ENOMEM. */
HWT_API int hwt_pts_pevent_note(struct hwt_pts_pevent *pev, uint64_t cookie, struct hwt_buf *out);

#endif /* HWT_PTSESSION_PTSESSION_H */
