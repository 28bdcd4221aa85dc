/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/format.h - hwtrace's file formats: the trace container (.hwt), the
 * perf record parser shared by .hwt and perf.data, the perf.data reader, and
 * the session, which opens either kind of file behind one interface.
 *
 * This header is the whole contract of the format module.
 *
 * Container layout (all integers little-endian; see docs/container.md):
 *
 *   file header (64 bytes: magic "HWTRACE\0", version, flags, header crc)
 *   chunk*      (40-byte chunk header + one zstd frame, or raw bytes)
 *   [index chunk + 24-byte trailer]   written at close; absent after a crash
 *
 * Every chunk is independently decompressible and carries a CRC-32C of its
 * payload, so a recorder that is killed leaves every completed chunk readable.
 *
 * Usage, writing:
 *
 *   struct hwt_fmt_writer_config cfg;
 *   hwt_fmt_writer_config_init(&cfg);
 *   err = hwt_fmt_writer_open(&w, "trace.hwt", &cfg);
 *   hwt_fmt_writer_meta_str(w, HWT_META_HOST, "box");
 *   sb = hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, cpu, -1, "sideband");
 *   hwt_fmt_writer_records(w, sb, buf, len);      // whole perf records
 *   hwt_fmt_writer_aux(w, pt, aux_offset, buf, len);
 *   err = hwt_fmt_writer_close(w);                 // index, trailer, free
 *
 * Usage, reading any trace (.hwt or perf.data):
 *
 *   err = hwt_fmt_session_open(&s, path, &cfg);
 *   while ((err = hwt_fmt_session_next(s, &rec)) >= 0) { ... }   // time order
 *   if (err != -HWT_EEOS) ... error, see hwt_fmt_session_error() ...
 *   hwt_fmt_session_close(s);
 */
#ifndef HWT_FORMAT_FORMAT_H
#define HWT_FORMAT_FORMAT_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hwt.h"

/* ------------------------------------------------------------------------ */
/* Container constants                                                       */

#define HWT_FMT_MAGIC		  "HWTRACE\0" /* 8 bytes at offset 0 */
#define HWT_FMT_VERSION_MAJOR	  1	      /* incompatible changes */
#define HWT_FMT_VERSION_MINOR	  0	      /* compatible additions */
#define HWT_FMT_FILE_HEADER_SIZE  64u
#define HWT_FMT_CHUNK_HEADER_SIZE 40u
#define HWT_FMT_TRAILER_SIZE	  24u

/* File header flags. */
#define HWT_FMT_FLAG_EMULATED_PT (1u << 0) /* PT bytes come from the emulator */

enum hwt_fmt_chunk_type {
	HWT_FMT_CHUNK_META = 1,	   /* typed key/value metadata entries */
	HWT_FMT_CHUNK_STREAM = 2,  /* a stream descriptor */
	HWT_FMT_CHUNK_RECORDS = 3, /* perf records (perf_event_header + body) */
	HWT_FMT_CHUNK_AUX = 4,	   /* AUX area bytes (Intel PT) at an AUX offset */
	HWT_FMT_CHUNK_LOST = 5,	   /* entries of struct hwt_fmt_lost */
	HWT_FMT_CHUNK_INDEX = 6,   /* table of all chunks, written at close */
};

enum hwt_fmt_stream_kind {
	HWT_FMT_STREAM_RECORDS = 1, /* sideband and samples, perf record format */
	HWT_FMT_STREAM_AUX = 2,	    /* AUX area bytes, e.g. Intel PT packets */
};

/* A stream: one ring buffer's records, or one AUX area's bytes. cpu is -1 for
 * per-thread streams, tid is -1 for per-CPU streams. */
struct hwt_fmt_stream_desc {
	uint32_t id;
	uint32_t kind; /* enum hwt_fmt_stream_kind */
	int32_t cpu;
	int32_t tid;
	char name[48]; /* NUL-terminated, e.g. "pt.cpu0", "sideband.tid1234" */
};

/* What kind of data was lost, and in which unit. */
enum hwt_fmt_lost_kind {
	HWT_FMT_LOST_RECORDS = 1,  /* kernel ring buffer overflow (PERF_RECORD_LOST), records */
	HWT_FMT_LOST_SAMPLES = 2,  /* PERF_RECORD_LOST_SAMPLES, samples */
	HWT_FMT_LOST_AUX = 3,	   /* AUX area truncated/overwritten, bytes (estimate) */
	HWT_FMT_LOST_WRITER = 4,   /* writer queue was full, bytes dropped by hwtrace */
	HWT_FMT_LOST_AUX_GAPS = 5, /* AUX records with TRUNCATED/PARTIAL flags, count */
};

struct hwt_fmt_lost {
	uint32_t stream; /* stream id, or UINT32_MAX for the whole file */
	uint32_t kind;	 /* enum hwt_fmt_lost_kind */
	uint64_t amount;
};

/* ------------------------------------------------------------------------ */
/* Metadata: typed key/value pairs. Keys are dotted ASCII strings; a later
 * entry with the same key replaces an earlier one. Well-known keys:          */

#define HWT_META_VERSION      "meta.version"   /* u64, currently 1 */
#define HWT_META_HOST	      "host"	       /* str */
#define HWT_META_KERNEL	      "kernel.release" /* str, uname -r */
#define HWT_META_ARCH	      "arch"	       /* str, uname -m */
#define HWT_META_CMDLINE      "cmdline"	       /* str, hwtrace's command line */
#define HWT_META_TARGET	      "target.cmdline" /* str, the traced command */
#define HWT_META_CPU_VENDOR   "cpu.vendor"     /* str, "GenuineIntel" */
#define HWT_META_CPU_FAMILY   "cpu.family"     /* u64 */
#define HWT_META_CPU_MODEL    "cpu.model"      /* u64 */
#define HWT_META_CPU_STEPPING "cpu.stepping"   /* u64 */
#define HWT_META_CPU_DESC     "cpu.desc"       /* str, model name */
#define HWT_META_NR_CPUS      "cpu.count"      /* u64, online CPUs */
#define HWT_META_TIME_SHIFT   "time.shift"     /* u64, perf_event_mmap_page */
#define HWT_META_TIME_MULT    "time.mult"      /* u64 */
#define HWT_META_TIME_ZERO    "time.zero"      /* u64 */
#define HWT_META_TIME_START   "time.start"     /* u64, perf clock ns */
#define HWT_META_TIME_END     "time.end"       /* u64, perf clock ns */
#define HWT_META_PT_EMULATED  "pt.emulated"    /* u64, 1 when emulated */
#define HWT_META_PT_PREFIX    "pt."	       /* pt.caps.*, pt.config.* */
#define HWT_META_EVENT_COUNT  "event.count"    /* u64 number of events */
/* Per event N (0-based): "event.N.attr" (bytes: struct perf_event_attr as
 * the kernel took it, attr.size bytes), "event.N.name" (str), "event.N.ids"
 * (bytes: little-endian u64 sample ids). */
#define HWT_META_EVENT_FMT "event.%u.%s"
/* Build-ids: "buildid.<path>" (bytes, 20 or fewer). */
#define HWT_META_BUILDID_PREFIX "buildid."
/* A copy of the vDSO image: "vdso.image" (bytes), "vdso.start" (u64). */
#define HWT_META_VDSO_IMAGE "vdso.image"
#define HWT_META_VDSO_START "vdso.start"
/* perf.data only: the PERF_RECORD_AUXTRACE_INFO record as perf wrote it
 * (header included; for intel_pt its priv[] holds the PMU type, TSC
 * conversion, caps and filter settings the decoder needs). */
#define HWT_META_PERF_AUXTRACE_INFO "perf.auxtrace_info" /* bytes */
/* perf.data only, informational: "perf.version", "perf.cpuid",
 * "perf.nrcpus_avail", "perf.total_mem_kb", "perf.features" (comma list of
 * the feature sections present), "perf.compressed.level" (perf record -z),
 * "perf.truncated_at" (u64: a pipe recording was cut short there),
 * "perf.unfinished" (u64 1: perf record did not finish the file). */

enum hwt_fmt_meta_type {
	HWT_FMT_META_U64 = 1,
	HWT_FMT_META_I64 = 2,
	HWT_FMT_META_STR = 3, /* value is NUL-terminated; len excludes the NUL */
	HWT_FMT_META_BYTES = 4,
};

/* One metadata entry as the reader presents it. key and the value bytes
 * remain valid for the lifetime of the reader (or session). */
struct hwt_fmt_meta {
	const char *key;
	uint32_t type; /* enum hwt_fmt_meta_type */
	uint32_t len;  /* bytes of value (for U64/I64: 8) */
	union {
		uint64_t u64;
		int64_t i64;
		const char *str;
		const uint8_t *bytes;
	} v;
};

/* ------------------------------------------------------------------------ */
/* Container writer                                                          */

struct hwt_fmt_writer;

struct hwt_fmt_writer_config {
	size_t size;	      /* sizeof(struct hwt_fmt_writer_config) */
	int level;	      /* zstd level; default 3; 0 stores raw chunks */
	size_t chunk_size;    /* uncompressed bytes per chunk; default 1 MiB */
	size_t queue_bytes;   /* bound on bytes waiting for compression;
			       * default 256 MiB */
	unsigned int wait_ms; /* a producer facing a full queue waits this
			       * long for room, then drops and records the
			       * loss; default 1000 */
	unsigned int threads; /* compression threads; default 1 */
	uint32_t flags;	      /* HWT_FMT_FLAG_* for the file header */
	struct hwt_logger log;
	unsigned int flush_ms; /* bounded loss: a chunk is written, though
				* not full, once its first bytes are
				* flush_ms / 2 old (checked every
				* flush_ms / 4), with the metadata and
				* losses pending, and the file is synced to
				* disk (fdatasync) after each such write; so
				* a writer killed at any moment (SIGKILL, an
				* OOM kill, a power cut) loses at most about
				* the last flush_ms of data. Default 1000;
				* 0: chunks are written only when full, at
				* hwt_fmt_writer_flush() and at close */
};

/* Zeroes cfg, sets cfg->size and the defaults above. */
HWT_API void hwt_fmt_writer_config_init(struct hwt_fmt_writer_config *cfg);

/* Creates path (mode 0600, truncating an existing file), writes the file
 * header and starts the compression thread(s). cfg may be NULL for defaults;
 * it is copied.
 * Returns 0 and stores the writer in *writer, or:
 *   -HWT_EINVAL  bad config (refused by hwt_opts_copy, level outside zstd's range,
 *                chunk_size outside 4 KiB..64 MiB, more than 64 threads);
 *   -errno       from open/write (-EACCES, -ENOSPC, -EROFS, ...);
 *   -ENOMEM. */
HWT_API int hwt_fmt_writer_open(struct hwt_fmt_writer **writer, const char *path,
				const struct hwt_fmt_writer_config *cfg);

/* Declares a stream. name is copied (truncated to fit). Returns the stream id
 * (>= 0) or -HWT_EINVAL / -ENOMEM. */
HWT_API int hwt_fmt_writer_add_stream(struct hwt_fmt_writer *writer, enum hwt_fmt_stream_kind kind,
				      int32_t cpu, int32_t tid, const char *name);

/* Adds metadata entries; key and value are copied. Metadata is buffered and
 * written in META chunks (at the next flush and at close). Return 0,
 * -HWT_EINVAL (NULL or over-long key, value over 64 MiB) or -ENOMEM. */
HWT_API int hwt_fmt_writer_meta_u64(struct hwt_fmt_writer *writer, const char *key, uint64_t value);
HWT_API int hwt_fmt_writer_meta_i64(struct hwt_fmt_writer *writer, const char *key, int64_t value);
HWT_API int hwt_fmt_writer_meta_str(struct hwt_fmt_writer *writer, const char *key,
				    const char *value);
HWT_API int hwt_fmt_writer_meta_bytes(struct hwt_fmt_writer *writer, const char *key,
				      const void *value, size_t len);

/* Appends whole perf records (each a perf_event_header and its body; the
 * AUXTRACE convention of trailing data is not used in .hwt) to a RECORDS
 * stream. The bytes are copied; the caller may reuse buf at once. A record is
 * never split across chunks. The framing of all of buf is checked first: a
 * bad header means nothing is taken.
 * Returns 0, -HWT_EINVAL (unknown stream, wrong kind, a record header that
 * does not fit len), -HWT_EDROPPED (the queue stayed full for wait_ms: the
 * records from the first one that no longer fit in the open chunk to the
 * end of buf were dropped and counted as HWT_FMT_LOST_WRITER; those before
 * it are kept), or a stored I/O error from a compression thread (-ENOSPC,
 * ...). */
HWT_API int hwt_fmt_writer_records(struct hwt_fmt_writer *writer, uint32_t stream, const void *buf,
				   size_t len);

/* Appends AUX bytes that start at aux_offset (the kernel's running AUX head
 * offset) to an AUX stream. Contiguous calls share chunks; a discontinuity
 * (aux_offset not equal to the previous end) starts a new chunk, so gaps stay
 * visible. Errors as hwt_fmt_writer_records() (with -HWT_EDROPPED, the bytes
 * that did not fit are dropped, which is itself a gap in AUX offsets). */
HWT_API int hwt_fmt_writer_aux(struct hwt_fmt_writer *writer, uint32_t stream, uint64_t aux_offset,
			       const void *buf, size_t len);

/* Records that data was lost (summed per stream and kind, written at flush
 * and close). Returns 0 or -HWT_EINVAL. */
HWT_API int hwt_fmt_writer_lost(struct hwt_fmt_writer *writer, uint32_t stream,
				enum hwt_fmt_lost_kind kind, uint64_t amount);

/* Queues all partly filled chunks and pending metadata and waits until the
 * compression thread has written them. Returns 0 or a stored error. */
HWT_API int hwt_fmt_writer_flush(struct hwt_fmt_writer *writer);

struct hwt_fmt_writer_stats {
	uint64_t raw_bytes;  /* uncompressed payload bytes written */
	uint64_t file_bytes; /* bytes in the file so far */
	uint64_t chunks;
	uint64_t dropped_bytes;	   /* HWT_FMT_LOST_WRITER total */
	uint64_t queue_high_water; /* most bytes ever waiting for compression */
};

/* Fills *stats (a snapshot; thread-safe). */
HWT_API void hwt_fmt_writer_stats(struct hwt_fmt_writer *writer,
				  struct hwt_fmt_writer_stats *stats);

/* Flushes, writes the index chunk and trailer, closes the file and frees the
 * writer (also on error). Accepts NULL. Returns 0 or the first error met at
 * any time while writing (so a late -ENOSPC is not lost). */
HWT_API int hwt_fmt_writer_close(struct hwt_fmt_writer *writer);

/* The writer's functions are safe to call from several threads at once. */

/* ------------------------------------------------------------------------ */
/* Container reader                                                          */

struct hwt_fmt_reader;

struct hwt_fmt_reader_config {
	size_t size; /* sizeof(struct hwt_fmt_reader_config) */
	bool verify; /* check payload checksums on read; default true */
	bool scan;   /* ignore the index and scan chunks; default false */
	struct hwt_logger log;
};

HWT_API void hwt_fmt_reader_config_init(struct hwt_fmt_reader_config *cfg);

/* A chunk as listed by the index or a scan. */
struct hwt_fmt_chunk {
	uint64_t file_offset; /* of the chunk header */
	uint32_t type;	      /* enum hwt_fmt_chunk_type */
	uint32_t stream;
	uint32_t raw_size;   /* uncompressed payload bytes */
	uint32_t comp_size;  /* stored payload bytes */
	uint64_t aux_offset; /* AUX chunks: AUX offset of the first byte */
	uint32_t crc;	     /* CRC-32C of the stored payload */
	uint32_t flags;	     /* bit 0: payload stored raw (not zstd) */
};

struct hwt_fmt_file_info {
	uint16_t version_major;
	uint16_t version_minor;
	uint32_t flags; /* HWT_FMT_FLAG_* */
	uint64_t file_size;
	bool indexed;	    /* a valid index was found and used */
	bool truncated;	    /* scanning stopped at an incomplete chunk */
	uint64_t valid_end; /* end of the last complete chunk */
	bool closed;	    /* the writer finished the file: its trailer is
			     * there (even if the index proved unusable);
			     * false after a recorder was killed */
};

/* Opens a container and lists its chunks (from the index, or by scanning
 * when there is none: a recorder that was killed; an index that fails any
 * check is ignored, with a warning through cfg->log, and the file scanned).
 * Metadata, stream and lost chunks are loaded now; record and AUX payloads
 * on demand. A truncated last chunk is not an error: info->truncated and
 * info->valid_end tell, and a warning is logged. cfg may be NULL.
 * Returns 0 and stores the reader, or:
 *   -errno         from open/read;
 *   -HWT_EINVAL    path is not a regular file (chunk reads need pread);
 *   -HWT_EFORMAT   not a container (bad magic), or a corrupt header/chunk;
 *   -HWT_EVERSION  a major version this build does not read;
 *   -HWT_ETRUNC    shorter than a file header;
 *   -HWT_ECHECKSUM a metadata/stream chunk fails its checksum;
 *   -ENOMEM.
 * On error, hwt_fmt_last_error_offset() style detail is given through
 * *err_offset when err_offset is not NULL (file offset of the problem). */
HWT_API int hwt_fmt_reader_open(struct hwt_fmt_reader **reader, const char *path,
				const struct hwt_fmt_reader_config *cfg, uint64_t *err_offset);

/* Closes the file and frees the reader. Accepts NULL. */
HWT_API void hwt_fmt_reader_close(struct hwt_fmt_reader *reader);

HWT_API const struct hwt_fmt_file_info *hwt_fmt_reader_info(const struct hwt_fmt_reader *reader);

/* Streams, metadata, loss entries and chunks, by index 0..n-1. Pointers
 * remain valid for the lifetime of the reader. */
HWT_API size_t hwt_fmt_reader_nstreams(const struct hwt_fmt_reader *reader);
HWT_API const struct hwt_fmt_stream_desc *hwt_fmt_reader_stream(const struct hwt_fmt_reader *reader,
								size_t i);
HWT_API size_t hwt_fmt_reader_nmeta(const struct hwt_fmt_reader *reader);
HWT_API const struct hwt_fmt_meta *hwt_fmt_reader_meta(const struct hwt_fmt_reader *reader,
						       size_t i);
/* Last entry with key, or NULL. */
HWT_API const struct hwt_fmt_meta *hwt_fmt_reader_meta_find(const struct hwt_fmt_reader *reader,
							    const char *key);
HWT_API size_t hwt_fmt_reader_nlost(const struct hwt_fmt_reader *reader);
HWT_API const struct hwt_fmt_lost *hwt_fmt_reader_lost(const struct hwt_fmt_reader *reader,
						       size_t i);
HWT_API size_t hwt_fmt_reader_nchunks(const struct hwt_fmt_reader *reader);
HWT_API const struct hwt_fmt_chunk *hwt_fmt_reader_chunk(const struct hwt_fmt_reader *reader,
							 size_t i);

/* Chunks whose payload failed a check when it was read (so far: chunks
 * are read on demand): how many, and the first of them in file order (the
 * offset of its header and its error) when the pointers are not NULL.
 * Thread-safe. */
HWT_API uint64_t hwt_fmt_reader_bad_chunks(const struct hwt_fmt_reader *reader,
					   uint64_t *first_offset, int *first_err);

/* Reads and decompresses a chunk's payload into dst (cap bytes; at least
 * chunk->raw_size). The chunk header in the file is checked against *chunk
 * first. Thread-safe: uses pread, no shared buffer.
 * Returns the payload size, or -HWT_ETOOBIG (cap too small), -HWT_ECHECKSUM
 * (header or payload CRC), -HWT_EFORMAT (the header in the file is not the
 * one listed, or its magic is wrong), -HWT_ECOMPRESS (corrupt frame or size
 * mismatch), -HWT_ETRUNC, -errno. The file offset of the problem is
 * chunk->file_offset. */
HWT_API int64_t hwt_fmt_reader_chunk_read(const struct hwt_fmt_reader *reader,
					  const struct hwt_fmt_chunk *chunk, void *dst, size_t cap);

/* Reads a chunk's payload into out (replacing its contents; out is grown as
 * needed and may be reused across calls). Unlike hwt_fmt_reader_chunk_read()
 * the buffer grows only as decompressed bytes actually arrive, so a corrupt
 * raw_size cannot make the caller allocate more than the data holds.
 * Thread-safe as long as each thread has its own out.
 * Returns the payload size, or errors as hwt_fmt_reader_chunk_read(). */
HWT_API int64_t hwt_fmt_reader_chunk_load(const struct hwt_fmt_reader *reader,
					  const struct hwt_fmt_chunk *chunk, struct hwt_buf *out);

/* ------------------------------------------------------------------------ */
/* The perf record parser (records from .hwt and from perf.data)            */

/* What the parser needs to know about an event to parse its records. */
struct hwt_fmt_attr_info {
	uint64_t sample_type;
	uint64_t read_format;
	uint64_t sample_regs_user;
	uint64_t sample_regs_intr;
	uint64_t branch_sample_type;
	bool sample_id_all;
};

HWT_API void hwt_fmt_attr_info_from_attr(struct hwt_fmt_attr_info *info,
					 const struct perf_event_attr *attr);

/* The sample_id trailer of non-sample records (and the same fields of a
 * sample). A field is valid when its PERF_SAMPLE_* bit is in `present`. */
struct hwt_fmt_sample_id {
	uint64_t present; /* PERF_SAMPLE_TID|TIME|ID|STREAM_ID|CPU|IDENTIFIER */
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id;
	uint64_t stream_id;
	uint32_t cpu, res;
};

struct hwt_fmt_read_value {
	uint64_t value;
	uint64_t id;
	uint64_t lost;
};

struct hwt_fmt_read {
	uint64_t time_enabled, time_running; /* valid per read_format */
	uint64_t nr;			     /* values in `values` */
	const uint8_t *values;		     /* raw values, read with
					      * hwt_fmt_read_value_at() */
};

/* A PERF_RECORD_SAMPLE, parsed. Pointers point into the record bytes and
 * stay valid as long as they do. */
struct hwt_fmt_sample {
	uint64_t type; /* the attr's sample_type: which fields are valid */
	uint64_t identifier;
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t addr;
	uint64_t id;
	uint64_t stream_id;
	uint32_t cpu, res;
	uint64_t period;
	struct hwt_fmt_read read;
	uint64_t callchain_nr;
	const uint64_t *callchain; /* may be unaligned: use memcpy or le64 */
	uint32_t raw_size;
	const uint8_t *raw;
	uint64_t branch_nr;
	uint64_t branch_hw_idx;	 /* valid when PERF_SAMPLE_BRANCH_HW_INDEX */
	const uint8_t *branches; /* branch_nr x struct perf_branch_entry */
	uint64_t regs_user_abi;
	uint64_t regs_user_mask;
	const uint8_t *regs_user; /* popcount(mask) x u64 */
	uint64_t stack_user_size;
	const uint8_t *stack_user;
	uint64_t stack_user_dyn_size;
	uint64_t weight; /* PERF_SAMPLE_WEIGHT or WEIGHT_STRUCT raw */
	uint64_t data_src;
	uint64_t transaction;
	uint64_t regs_intr_abi;
	uint64_t regs_intr_mask;
	const uint8_t *regs_intr;
	uint64_t phys_addr;
	uint64_t cgroup;
	uint64_t data_page_size;
	uint64_t code_page_size;
	uint32_t aux_size;
	const uint8_t *aux;
};

/* A record of any type, parsed. Strings point into the record and are
 * checked to be NUL-terminated within it. */
struct hwt_fmt_record {
	uint32_t type; /* PERF_RECORD_* or perf.data's user types (>= 64) */
	uint16_t misc;
	uint16_t size;
	const uint8_t *raw;	     /* the whole record, size bytes */
	int event;		     /* index of the event (attr) this record belongs to,
				      * or -1 when unknown */
	struct hwt_fmt_sample_id id; /* trailer (or the sample's own fields) */
	union {
		struct hwt_fmt_sample sample;
		struct {
			uint32_t pid, tid;
			uint64_t addr, len, pgoff;
			/* MMAP2 only: */
			uint32_t maj, min;
			uint64_t ino, ino_generation;
			uint32_t prot, flags;
			bool has_build_id; /* PERF_RECORD_MISC_MMAP_BUILD_ID */
			uint8_t build_id_size;
			uint8_t build_id[20];
			const char *filename;
		} mmap; /* MMAP and MMAP2 */
		struct {
			uint32_t pid, tid;
			const char *comm;
		} comm;
		struct {
			uint32_t pid, ppid, tid, ptid;
			uint64_t time;
		} fork; /* FORK and EXIT */
		struct {
			uint64_t id, lost;
		} lost;
		struct {
			uint64_t lost;
		} lost_samples;
		struct {
			uint64_t time, id, stream_id;
		} throttle; /* THROTTLE and UNTHROTTLE */
		struct {
			uint32_t next_prev_pid, next_prev_tid; /* CPU_WIDE only */
		} sw; /* SWITCH and SWITCH_CPU_WIDE; misc has SWITCH_OUT(_PREEMPT) */
		struct {
			uint64_t aux_offset, aux_size, flags; /* PERF_AUX_FLAG_* */
		} aux;
		struct {
			uint32_t pid, tid;
		} itrace_start;
		struct {
			uint32_t pid, tid;
			uint64_t nr;
			const uint8_t *entries; /* nr x {u64 dev, u64 ino} */
		} namespaces;
		struct {
			uint64_t addr;
			uint32_t len;
			uint16_t ksym_type, flags;
			const char *name;
		} ksymbol;
		struct {
			uint64_t addr;
			uint16_t old_len, new_len;
			const uint8_t *old_bytes, *new_bytes;
		} text_poke;
		struct {
			uint32_t pid, tid;
			struct hwt_fmt_read values; /* per the attr's read_format */
		} read;				    /* PERF_RECORD_READ */
		struct {
			uint64_t id;
			const char *path;
		} cgroup;
		struct {
			uint16_t type, flags;
			uint32_t id;
			uint8_t tag[8];
		} bpf_event;
		struct {
			uint64_t hw_id;
		} aux_output_hw_id;
		struct {
			/* perf.data PERF_RECORD_AUXTRACE (user type 71): the data
			 * follows the record in the file and is not part of it. */
			uint64_t size, offset, reference;
			uint32_t idx, tid, cpu;
			const uint8_t *data; /* size bytes when loaded, else NULL */
		} auxtrace;
	} u;
};

/* Parses one record of len bytes (at least the header's size) for an event
 * described by info (may be NULL for records that need none: then no
 * sample_id trailer is read). Does not set rec->event.
 * Returns 0, or -HWT_ETRUNC (header size > len or < 8), -HWT_EFORMAT (a field
 * runs past the record, a string is not terminated, a count is impossible),
 * -HWT_ENOTSUP (a record type the parser does not know: rec->type, misc, size
 * and raw are still set so callers can skip it, and a kernel record's
 * sample_id trailer is read into rec->id). */
HWT_API int hwt_fmt_record_parse(const struct hwt_fmt_attr_info *info, const void *buf, size_t len,
				 struct hwt_fmt_record *rec);

/* An MMAP or MMAP2 record as every reader of the sideband takes it (the
 * fields in the order of symbolize's struct hwt_sym_mmap_event). */
struct hwt_fmt_mmap {
	uint32_t pid, tid; /* pid UINT32_MAX: a kernel mapping (cpumode kernel) */
	uint64_t time;	   /* perf clock ns; 0 when the record has no time */
	uint64_t start, len, pgoff;
	uint32_t prot;		 /* PROT_*: MMAP2's; an MMAP's is PROT_EXEC unless
				  * misc has PERF_RECORD_MISC_MMAP_DATA (then 0) */
	const char *filename;	 /* points into the record */
	const uint8_t *build_id; /* MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID, else
				  * NULL (points into rec) */
	size_t build_id_len;
};

/* Normalizes a parsed MMAP or MMAP2 record into *m. Returns 0, or
 * -HWT_EINVAL when rec is another record. */
HWT_API int hwt_fmt_mmap_get(const struct hwt_fmt_record *rec, struct hwt_fmt_mmap *m);

/* Reads value i (0-based) of a PERF_SAMPLE_READ block. */
HWT_API void hwt_fmt_read_value_at(const struct hwt_fmt_read *read, uint64_t read_format,
				   uint64_t i, struct hwt_fmt_read_value *out);

/* Name of a PERF_RECORD_* type ("MMAP2", "SAMPLE", "AUXTRACE", ...), or NULL. */
HWT_API const char *hwt_fmt_record_type_name(uint32_t type);

/* ------------------------------------------------------------------------ */
/* Events: attrs, names and the sample-id -> event mapping                   */

struct hwt_fmt_event {
	struct perf_event_attr attr; /* zero-extended to sizeof(attr) */
	struct hwt_fmt_attr_info info;
	const char *name; /* never NULL ("" when unknown) */
	size_t nids;
	const uint64_t *ids;
};

struct hwt_fmt_evlist;

HWT_API int hwt_fmt_evlist_alloc(struct hwt_fmt_evlist **evlist);
HWT_API void hwt_fmt_evlist_free(struct hwt_fmt_evlist *evlist);

/* Adds an event: attr_size bytes of attr (older/newer sizes accepted), its
 * name (copied) and sample ids (copied). Returns the event index or
 * -HWT_EINVAL/-ENOMEM. */
HWT_API int hwt_fmt_evlist_add(struct hwt_fmt_evlist *evlist, const void *attr, size_t attr_size,
			       const char *name, const uint64_t *ids, size_t nids);
HWT_API size_t hwt_fmt_evlist_count(const struct hwt_fmt_evlist *evlist);
HWT_API const struct hwt_fmt_event *hwt_fmt_evlist_event(const struct hwt_fmt_evlist *evlist,
							 size_t i);

/* Parses a record, finding its event through the sample id (with
 * PERF_SAMPLE_IDENTIFIER, or the ID field position when all events agree on
 * it, or the only event). Sets rec->event. Errors as hwt_fmt_record_parse(),
 * plus -HWT_EFORMAT for an id that names no event. */
HWT_API int hwt_fmt_evlist_parse(const struct hwt_fmt_evlist *evlist, const void *buf, size_t len,
				 struct hwt_fmt_record *rec);

/* ------------------------------------------------------------------------ */
/* Session: any trace file (.hwt, perf.data file mode, perf.data pipe mode)  */

enum hwt_fmt_file_kind {
	HWT_FMT_KIND_HWT = 1,
	HWT_FMT_KIND_PERF_FILE = 2,
	HWT_FMT_KIND_PERF_PIPE = 3,
};

struct hwt_fmt_session;

struct hwt_fmt_session_config {
	size_t size;   /* sizeof(struct hwt_fmt_session_config) */
	bool load_aux; /* deliver AUXTRACE data with the records (perf.data);
			* default false: read it through the AUX API */
	struct hwt_logger log;
};

HWT_API void hwt_fmt_session_config_init(struct hwt_fmt_session_config *cfg);

/* Opens a trace, detecting its kind from the first bytes ("-" reads a perf
 * pipe stream from stdin). Reads the attributes, metadata / feature sections
 * (perf.data features are presented under the same metadata keys as .hwt:
 * host, kernel.release, arch, cmdline, cpu.vendor/family/model/stepping,
 * cpu.desc, cpu.count, time.start/end, time.shift/mult/zero (TIME_CONV),
 * buildid.<path>, event.N.*, plus perf.version, perf.cpuid,
 * perf.nrcpus_avail, perf.total_mem_kb, perf.features,
 * perf.compressed.level, perf.auxtrace_info (the AUXTRACE_INFO record's
 * bytes, for the PT decoder) and perf.truncated_at (a pipe recording cut
 * short: readable up to there)). A seekable perf.data is pre-scanned here,
 * so metadata and AUX segments are complete at open; on a real pipe they
 * grow while records are read.
 * Returns 0, or errors as hwt_fmt_reader_open(), plus -HWT_ENOTSUP
 * (big-endian perf.data, file-mode perf.data or a .hwt on a pipe), with the
 * file offset of the problem in *err_offset when not NULL. */
HWT_API int hwt_fmt_session_open(struct hwt_fmt_session **session, const char *path,
				 const struct hwt_fmt_session_config *cfg, uint64_t *err_offset);
HWT_API void hwt_fmt_session_close(struct hwt_fmt_session *session);
/* Where the session's messages go from now on (the one given at open is
 * replaced): for a caller that opened quietly to look at a recording and
 * then reads it. */
HWT_API void hwt_fmt_session_set_log(struct hwt_fmt_session *session, const struct hwt_logger *log);

HWT_API enum hwt_fmt_file_kind hwt_fmt_session_kind(const struct hwt_fmt_session *session);
HWT_API const struct hwt_fmt_evlist *hwt_fmt_session_evlist(const struct hwt_fmt_session *session);
/* Metadata as for the reader (also for perf.data: translated features). */
HWT_API size_t hwt_fmt_session_nmeta(const struct hwt_fmt_session *session);
HWT_API const struct hwt_fmt_meta *hwt_fmt_session_meta(const struct hwt_fmt_session *session,
							size_t i);
HWT_API const struct hwt_fmt_meta *hwt_fmt_session_meta_find(const struct hwt_fmt_session *session,
							     const char *key);
/* The underlying container reader for .hwt sessions, else NULL. */
HWT_API const struct hwt_fmt_reader *hwt_fmt_session_reader(const struct hwt_fmt_session *session);

/* Next record of all RECORDS streams in time order (records without a time
 * keep their stream order; perf.data records are sorted within
 * FINISHED_ROUND windows). rec's pointers remain valid until the next call.
 * perf.data's own records (ATTR, FINISHED_ROUND, ...) are consumed here and
 * not returned, except AUXTRACE, which is returned (with data when
 * cfg.load_aux). Records that fail to parse are counted (see stats) and
 * skipped, never returned half-parsed.
 * Returns 0, -HWT_EEOS at the end, or an error with the offset in
 * *err_offset when not NULL. For .hwt, a chunk that fails to read
 * (-HWT_ECHECKSUM, -HWT_ECOMPRESS, ...) is reported once, at the chunk's
 * offset, and the next call goes on with the chunk after it. For perf.data,
 * broken framing (-HWT_EFORMAT, -HWT_ETRUNC: a record size smaller than a
 * header, data that ends inside a record) ends the session. */
HWT_API int hwt_fmt_session_next(struct hwt_fmt_session *session, struct hwt_fmt_record *rec,
				 uint64_t *err_offset);

/* Restarts hwt_fmt_session_next() from the first record (not for pipes:
 * -HWT_ENOTSUP). */
HWT_API int hwt_fmt_session_rewind(struct hwt_fmt_session *session);
/* (Rewinding also resets the stats.) */

struct hwt_fmt_session_stats {
	uint64_t records;	/* returned so far */
	uint64_t bad_records;	/* failed to parse, skipped */
	uint64_t unknown_types; /* skipped record types */
	uint64_t lost_records;	/* sum of PERF_RECORD_LOST */
	uint64_t lost_samples;	/* sum of PERF_RECORD_LOST_SAMPLES */
};

HWT_API void hwt_fmt_session_stats(const struct hwt_fmt_session *session,
				   struct hwt_fmt_session_stats *stats);

/* AUX data (Intel PT) of a session, as streams of segments. A segment is a
 * run of bytes contiguous in AUX offset; gaps between segments are data
 * loss. Segment lists are built at open (for pipes: while reading). */
struct hwt_fmt_aux_stream {
	int32_t cpu;  /* -1 for per-thread */
	int32_t tid;  /* -1 for per-CPU */
	uint32_t idx; /* perf's AUX index, or the .hwt stream id */
	size_t nsegments;
};

struct hwt_fmt_aux_segment {
	uint64_t aux_offset;
	uint64_t size;
	uint64_t time; /* perf clock of the AUX record that announced it, or 0 */
};

HWT_API size_t hwt_fmt_session_naux(const struct hwt_fmt_session *session);
HWT_API const struct hwt_fmt_aux_stream *hwt_fmt_session_aux(const struct hwt_fmt_session *session,
							     size_t i);
HWT_API const struct hwt_fmt_aux_segment *
hwt_fmt_session_aux_segment(const struct hwt_fmt_session *session, size_t stream, size_t segment);
/* Reads size bytes of a segment from offset `from` (relative to the
 * segment's start) into dst; a read past the segment's end is cut short.
 * Thread-safe (for perf pipes read from stdin: not while
 * hwt_fmt_session_next() is adding segments). Returns bytes read, or
 * -HWT_EINVAL (no such stream or segment, from > size), -errno, -HWT_ETRUNC,
 * -HWT_ECHECKSUM, -HWT_ECOMPRESS. For perf.data, a segment holds the
 * AUXTRACE data as perf wrote it, minus perf's 8-byte alignment padding
 * where the next record's AUX offset shows it; a run's last padding stays
 * (zero bytes, PT PAD packets). */
HWT_API int64_t hwt_fmt_session_aux_read(const struct hwt_fmt_session *session, size_t stream,
					 size_t segment, uint64_t from, void *dst, size_t size);

/* ------------------------------------------------------------------------ */
/* Recordings that cannot be read, or only in part: what is said to people   */
/*
 * Every command says these things in the same words, so they are made in
 * one place: why a recording cannot be opened at all, and how a recording
 * that was opened is incomplete or damaged.
 *
 * A recording is incomplete when its writer did not finish it (a recorder
 * killed, out of memory, a power cut: a .hwt without its index, which may
 * also end inside its last chunk) or when it was cut short (a copy that
 * stopped, a full disk: it ends inside a chunk, or a perf.data inside a
 * record); it is damaged when parts of it fail their checks as they are
 * read. What the complete, intact parts hold is still read.
 */
struct hwt_fmt_damage {
	bool unclosed;	      /* .hwt: no trailer: the writer did not finish it */
	bool truncated;	      /* ends inside a chunk (.hwt) or a record (perf.data) */
	uint64_t valid_end;   /* when truncated: bytes read from the start */
	uint64_t cut_bytes;   /* ... and the unreadable bytes after them */
	uint64_t bad_chunks;  /* .hwt chunks that failed their checks when read */
	uint64_t first_bad;   /* ... the file offset of the first */
	int first_bad_err;    /* ... and its error (-HWT_ECHECKSUM, ...) */
	uint64_t bad_records; /* records that did not parse, skipped */
	int broken_err;	      /* perf.data: the framing error that ended
			       * reading (-HWT_EFORMAT, ...), or 0 */
	uint64_t broken_at;   /* ... at this file offset */
};

/* Fills *damage with what is known of session's recording so far (chunks
 * are read on demand: call it after reading). Returns true when the
 * recording is incomplete or damaged. */
HWT_API bool hwt_fmt_session_damage(const struct hwt_fmt_session *session,
				    struct hwt_fmt_damage *damage);

/* The one line said of the incomplete or damaged recording at path,
 * without a newline, e.g. "f.hwt: the recording did not end cleanly (its
 * recorder was stopped before it closed the file: killed, out of memory or
 * a power cut): what it holds before that is read". nothing_read: no data
 * came out of it, and the line says so (also of a recording that is whole
 * but holds no data). Writes at most len bytes (NUL-terminated when len >
 * 0) and returns the length the whole line needs (as snprintf). */
HWT_API int hwt_fmt_damage_str(const char *path, const struct hwt_fmt_damage *damage,
			       bool nothing_read, char *buf, size_t len);

/* Why the recording at path could not be opened (err and err_offset as
 * hwt_fmt_session_open() returned them) and what to do, as one line
 * beginning with path, without a newline: "f is empty (0 bytes), not a
 * recording ...", "f is not a hwtrace or perf.data recording ...", "f: the
 * recording is damaged: checksum mismatch at offset 4096 ...". path is
 * looked at (an empty file is called empty). Returns as
 * hwt_fmt_damage_str(). */
HWT_API int hwt_fmt_open_error_str(const char *path, int err, uint64_t err_offset, char *buf,
				   size_t len);

/* ------------------------------------------------------------------------ */
/* perf.data writing (for `hwtrace convert`, and for tests: round trips).    */

struct hwt_fmt_perf_writer;

/* Creates a perf.data file (file mode, mode 0600) with the given events
 * (attrs, names for HEADER_EVENT_DESC, sample ids). evlist is read here
 * and not kept. Records written must match the events' sample layout.
 * Returns 0, -errno, -HWT_EINVAL (no events), -ENOMEM. */
HWT_API int hwt_fmt_perf_writer_open(struct hwt_fmt_perf_writer **writer, const char *path,
				     const struct hwt_fmt_evlist *evlist);
/* Appends one record (header + body) to the data section; its header size
 * must equal len. Returns 0, -HWT_EINVAL, -ENOMEM, or a stored -errno. */
HWT_API int hwt_fmt_perf_writer_record(struct hwt_fmt_perf_writer *writer, const void *rec,
				       size_t len);
/* Appends a PERF_RECORD_AUXTRACE record followed by its data, padded with
 * zeros to a multiple of 8 bytes as perf does (the record's size field
 * counts the padding; the next call's offset is the true AUX offset).
 * reference is the TSC when the data was read (perf record's rdtsc(); perf's
 * PT decoder takes the upper byte of 7-byte TSC packets from it), 0 when
 * unknown. perf report refuses AUXTRACE without an AUXTRACE_INFO record
 * (hwt_fmt_perf_writer_auxtrace_info()). Each record is listed in the
 * HEADER_AUXTRACE index written at close. Returns 0, -HWT_EINVAL, -ENOMEM
 * or a stored -errno. */
HWT_API int hwt_fmt_perf_writer_auxtrace(struct hwt_fmt_perf_writer *writer, uint64_t offset,
					 uint64_t reference, uint32_t idx, int32_t tid, int32_t cpu,
					 const void *data, uint64_t size);
/* Appends a PERF_RECORD_AUXTRACE_INFO record: type (PERF_AUXTRACE_INTEL_PT
 * is 1) and npriv u64 of its priv[] array (for intel_pt the layout of
 * tools/perf/util/intel-pt.h: PMU type, time_shift, time_mult, time_zero,
 * cap_user_time_zero, tsc bit, noretcomp bit, have_sched_switch, snapshot
 * mode, per-cpu mmaps, mtc bit, mtc freq bits, TSC:CTC numerator and
 * denominator, cyc bit, max non-turbo ratio, filter length, then the filter
 * string padded to 8 bytes and cap_event_trace). perf processes it before
 * any AUXTRACE record, so write it first. Returns 0, -HWT_EINVAL (more than
 * 510 u64), -ENOMEM or a stored -errno. */
HWT_API int hwt_fmt_perf_writer_auxtrace_info(struct hwt_fmt_perf_writer *writer, uint32_t type,
					      const uint64_t *priv, size_t npriv);
/* Sets a string feature (HEADER_HOSTNAME, OSRELEASE, ARCH, CPUDESC,
 * VERSION) by its HEADER_* number, or the build-id table / cmdline via the
 * functions below. */
HWT_API int hwt_fmt_perf_writer_feature_str(struct hwt_fmt_perf_writer *writer,
					    unsigned int feature, const char *value);
HWT_API int hwt_fmt_perf_writer_buildid(struct hwt_fmt_perf_writer *writer, int32_t pid,
					const char *path, const uint8_t *build_id, size_t len,
					bool kernel);
HWT_API int hwt_fmt_perf_writer_cmdline(struct hwt_fmt_perf_writer *writer, int argc,
					const char *const *argv);
/* Writes the header and feature sections, closes and frees. Accepts NULL. */
HWT_API int hwt_fmt_perf_writer_close(struct hwt_fmt_perf_writer *writer);

/* ------------------------------------------------------------------------ */
/* Conversion: a .hwt recording to perf.data (`hwtrace convert`)             */

/* What the converted file says about the Intel PT trace it carries, for
 * perf's decoder (see docs/convert.md). */
#define HWT_FMT_PERF_AUXTRACE_INTEL_PT 1u /* PERF_AUXTRACE_INTEL_PT */

struct hwt_fmt_convert_config {
	size_t size;	     /* sizeof(struct hwt_fmt_convert_config) */
	const char *version; /* HEADER_VERSION text, e.g. "hwtrace 0.1"; may
			      * be NULL */
	int argc;	     /* HEADER_CMDLINE: the converting command line */
	const char *const *argv;
	struct hwt_logger log; /* warnings: damaged chunks, skipped data */
	/* Reads the build-id of the file at path into id (at most cap bytes)
	 * and returns its length, or a negative error: asked for each mapped
	 * file the recording has no build-id for, so HEADER_BUILD_ID lists
	 * them as perf record's does. NULL: only recorded build-ids. */
	int (*build_id)(void *ctx, const char *path, uint8_t *id, size_t cap);
	void *build_id_ctx;
};

/* Zeroes cfg and sets cfg->size (no version, no command line, no logger,
 * no build-id reader). */
HWT_API void hwt_fmt_convert_config_init(struct hwt_fmt_convert_config *cfg);

struct hwt_fmt_convert_stats {
	bool pt;	      /* an AUX area trace was converted */
	bool emulated;	      /* ... from the PT emulator */
	bool truncated;	      /* the input ends inside a chunk: converted up
			       * to the last complete one */
	bool dummy_added;     /* sideband moved to a new dummy:u event */
	uint64_t records;     /* records written (sideband, samples) */
	uint64_t aux_records; /* PERF_RECORD_AUXTRACE records written */
	uint64_t aux_bytes;   /* AUX (PT) bytes written, padding excluded */
	uint64_t aux_streams;
	uint64_t damaged;	      /* chunks that failed to read, skipped */
	uint64_t aux_skipped;	      /* AUX bytes in damaged chunks, not written */
	uint64_t bad_records;	      /* records that failed to parse, skipped */
	uint64_t out_bytes;	      /* size of the perf.data file */
	bool output_error;	      /* the error returned came from writing out */
	struct hwt_fmt_damage damage; /* how the input is incomplete or
				       * damaged (hwt_fmt_session_damage) */
	bool damaged_input;	      /* ... and whether it is */
};

/* Writes the recording at in (.hwt) to out as perf.data in file mode (mode
 * 0600), as `perf record` would have written it: the events (for a PT
 * recording: the intel_pt event, plus a dummy:u event that carries the
 * sideband when the recording had none), HEADER_* features (hostname,
 * osrelease, arch, nrcpus, cpudesc, cpuid, version, cmdline, event desc,
 * build-ids, AUX index), then in the data section PERF_RECORD_AUXTRACE_INFO
 * (intel_pt: PMU type, TSC conversion, config bits, per-thread or per-CPU
 * buffers), PERF_RECORD_TIME_CONV when the TSC conversion is known, the
 * records in time order with FINISHED_ROUND marks, and the
 * AUX bytes of each stream as PERF_RECORD_AUXTRACE records (offset, tid,
 * cpu, and the TSC of that AUX record as reference) after the
 * PERF_RECORD_AUX that announced them. cfg and stats may be NULL; cfg is
 * read during the call only; stats is zeroed first and filled also when an
 * error is returned. Damaged chunks are skipped and counted (stats->damage
 * says it all; cfg->log gets each at debug level); a truncated input is
 * converted as far as it is readable (stats->truncated).
 * Returns 0, or:
 *   errors of hwt_fmt_session_open() for in (-ENOENT, -HWT_EFORMAT: not a
 *   trace, ...), with the offset in *err_offset when not NULL;
 *   -HWT_ENOTSUP  in is perf.data already (nothing to convert);
 *   -HWT_ENOEVENT AUX data but no intel_pt event to carry it;
 *   -errno        creating or writing out (-EACCES, -ENOSPC, -EISDIR, ...),
 *                 after which out is removed;
 *   -ENOMEM. */
HWT_API int hwt_fmt_convert(const char *in, const char *out,
			    const struct hwt_fmt_convert_config *cfg,
			    struct hwt_fmt_convert_stats *stats, uint64_t *err_offset);

#endif /* HWT_FORMAT_FORMAT_H */
