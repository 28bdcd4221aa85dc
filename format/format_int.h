/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/format_int.h - what the format module's source files share and
 * nobody else sees: the on-disk layout of the container (header, chunk
 * header, trailer, index entries, metadata entries), the metadata store used
 * by the reader and the session, the evlist's id table, and the perf.data
 * reader that the session drives. docs/container.md describes the same
 * layout for people; keep the two in step.
 */
#ifndef HWT_FORMAT_FORMAT_INT_H
#define HWT_FORMAT_FORMAT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

/* ------------------------------------------------------------------------ */
/* Container layout                                                          */

/* File header, 64 bytes:
 *    0  magic "HWTRACE\0"
 *    8  u16 version_major
 *   10  u16 version_minor
 *   12  u32 flags (HWT_FMT_FLAG_*)
 *   16  u32 header_size (64)
 *   20  u32 chunk_header_size (40)
 *   24  u64 creation time, ns since the epoch (informational)
 *   32  28 reserved bytes, zero
 *   60  u32 CRC-32C of bytes 0..59 */
#define FMT_FH_VERSION_MAJOR	 8
#define FMT_FH_VERSION_MINOR	 10
#define FMT_FH_FLAGS		 12
#define FMT_FH_HEADER_SIZE	 16
#define FMT_FH_CHUNK_HEADER_SIZE 20
#define FMT_FH_CTIME		 24
#define FMT_FH_CRC		 60

/* Chunk header, 40 bytes:
 *    0  u32 magic "HWCK" (0x4b435748 little-endian)
 *    4  u16 type (enum hwt_fmt_chunk_type)
 *    6  u16 flags (FMT_CHUNK_RAW)
 *    8  u32 stream id (UINT32_MAX for file-wide chunks)
 *   12  u32 raw_size (payload bytes after decompression)
 *   16  u32 stored_size (payload bytes in the file)
 *   20  u32 CRC-32C of the stored payload
 *   24  u64 aux_offset (AUX chunks; else 0)
 *   32  u32 reserved, zero
 *   36  u32 CRC-32C of bytes 0..35 */
#define FMT_CHUNK_MAGIC	   0x4b435748u
#define FMT_CH_MAGIC	   0
#define FMT_CH_TYPE	   4
#define FMT_CH_FLAGS	   6
#define FMT_CH_STREAM	   8
#define FMT_CH_RAW_SIZE	   12
#define FMT_CH_STORED_SIZE 16
#define FMT_CH_PAYLOAD_CRC 20
#define FMT_CH_AUX_OFFSET  24
#define FMT_CH_RESERVED	   32
#define FMT_CH_CRC	   36

#define FMT_CHUNK_RAW	      0x1u /* payload is stored, not a zstd frame */
#define FMT_CHUNK_KNOWN_FLAGS FMT_CHUNK_RAW

/* No chunk payload (raw or stored) is larger than this; the reader rejects
 * larger sizes before allocating anything. */
#define FMT_CHUNK_MAX (65u << 20) /* a 64 MiB metadata value fits */
/* zstd cannot expand more than this: its densest block is an RLE block of 4
 * bytes (3-byte header + 1 byte) that stands for at most 128 KiB. A
 * compressed chunk claiming more raw bytes per stored byte is corrupt. */
#define FMT_ZSTD_MAX_RATIO 32768u

/* Trailer, 24 bytes at the very end of a closed file:
 *    0  magic "HWTINDEX"
 *    8  u64 file offset of the index chunk's header
 *   16  u32 reserved, zero
 *   20  u32 CRC-32C of bytes 0..19 */
#define FMT_TRAILER_MAGIC "HWTINDEX"

/* Index chunk payload: u32 entry_size (40), u32 count, then count entries:
 *    0  u64 file offset of the chunk header
 *    8  u16 type, 10 u16 flags
 *   12  u32 stream
 *   16  u32 raw_size
 *   20  u32 stored_size
 *   24  u32 payload CRC-32C
 *   28  u32 reserved
 *   32  u64 aux_offset */
#define FMT_INDEX_ENTRY_SIZE  40u
#define FMT_INDEX_HEADER_SIZE 8u

/* Stream chunk payload: u32 id, u32 kind, i32 cpu, i32 tid, u32 name_len,
 * name bytes (no NUL); later versions may append fields after the name. */
#define FMT_STREAM_FIXED_SIZE 20u

/* Lost chunk payload: entries of u32 stream, u32 kind, u64 amount. The
 * amounts are increments since the previous lost chunk; readers sum them. */
#define FMT_LOST_ENTRY_SIZE 16u

/* Metadata chunk payload: u16 format version (1), u16 reserved, u32 count,
 * then count entries: u8 type, u8 reserved, u16 key_len, u32 value_len, key
 * bytes (no NUL), value bytes (U64/I64: 8 bytes little-endian; STR: no NUL).
 * Entries of an unknown type are skipped by their length. */
#define FMT_META_FORMAT	     1u
#define FMT_META_HEADER_SIZE 8u
#define FMT_META_ENTRY_SIZE  8u
#define FMT_META_KEY_MAX     1024u
#define FMT_META_VALUE_MAX   (64u << 20)

struct fmt_chunk_header {
	uint32_t type;
	uint32_t flags;
	uint32_t stream;
	uint32_t raw_size;
	uint32_t stored_size;
	uint32_t payload_crc;
	uint64_t aux_offset;
};

void fmt_chunk_header_encode(uint8_t out[HWT_FMT_CHUNK_HEADER_SIZE],
			     const struct fmt_chunk_header *h);
/* Checks magic, header CRC, sizes and flags. Returns 0, -HWT_EFORMAT (bad
 * magic or flags), -HWT_ECHECKSUM (header CRC) or -HWT_ETOOBIG (a size
 * beyond FMT_CHUNK_MAX or an impossible compression ratio). */
int fmt_chunk_header_decode(const uint8_t in[HWT_FMT_CHUNK_HEADER_SIZE],
			    struct fmt_chunk_header *h);

void fmt_file_header_encode(uint8_t out[HWT_FMT_FILE_HEADER_SIZE], uint32_t flags,
			    uint64_t ctime_ns);

/* ------------------------------------------------------------------------ */
/* Metadata                                                                  */

/* Appends one encoded entry to buf (the payload body, without the 8-byte
 * chunk payload header). */
int fmt_meta_encode(struct hwt_buf *buf, uint32_t type, const char *key, const void *value,
		    size_t len);

/* A set of metadata entries with stable addresses: a later set of the same
 * key replaces the value in place. */
struct fmt_meta_store {
	struct hwt_fmt_meta **items;
	size_t n, cap;
	void **old; /* replaced values, freed at fini */
	size_t nold, capold;
};

void fmt_meta_store_init(struct fmt_meta_store *st);
void fmt_meta_store_fini(struct fmt_meta_store *st);
/* Copies key and value (a NUL is added after STR values). Returns 0, -ENOMEM. */
int fmt_meta_store_set(struct fmt_meta_store *st, uint32_t type, const char *key, size_t key_len,
		       const void *value, size_t len);
int fmt_meta_store_set_u64(struct fmt_meta_store *st, const char *key, uint64_t v);
int fmt_meta_store_set_str(struct fmt_meta_store *st, const char *key, const char *v);
const struct hwt_fmt_meta *fmt_meta_store_find(const struct fmt_meta_store *st, const char *key);
/* Decodes a metadata chunk payload into st. Returns 0, -HWT_EFORMAT (an entry
 * runs past the payload), -HWT_EVERSION (unknown payload format), -ENOMEM. */
int fmt_meta_decode(struct fmt_meta_store *st, const uint8_t *p, size_t len);

/* ------------------------------------------------------------------------ */
/* Container reader internals                                                */

struct ZSTD_DCtx_s;

/* Reads a chunk's payload into out (replacing its contents), growing out
 * only as decompressed bytes actually arrive, so a lying raw_size cannot
 * make it allocate more than the data holds. stored is scratch space for
 * compressed bytes; dctx may be NULL (one is made for the call). Both
 * buffers are reusable across calls. Errors as hwt_fmt_reader_chunk_read(). */
int fmt_reader_chunk_load(const struct hwt_fmt_reader *reader, const struct hwt_fmt_chunk *chunk,
			  struct ZSTD_DCtx_s *dctx, struct hwt_buf *stored, struct hwt_buf *out);
/* The reader's metadata store. */
const struct fmt_meta_store *fmt_reader_meta_store(const struct hwt_fmt_reader *reader);
void fmt_reader_set_log(struct hwt_fmt_reader *reader, const struct hwt_logger *log);
/* Position of stream id in the reader's stream list, or -1. */
int fmt_reader_stream_pos(const struct hwt_fmt_reader *reader, uint32_t id);

/* ------------------------------------------------------------------------ */
/* Events                                                                    */

/* Adds sample ids to event idx. Returns 0, -HWT_EINVAL, -ENOMEM. */
int fmt_evlist_add_ids(struct hwt_fmt_evlist *evlist, size_t idx, const uint64_t *ids, size_t nids);
/* Sets the name of event idx (copied). Returns 0, -HWT_EINVAL, -ENOMEM. */
int fmt_evlist_set_name(struct hwt_fmt_evlist *evlist, size_t idx, const char *name);
/* Index of the event that owns sample id, or -1. */
int fmt_evlist_find_id(const struct hwt_fmt_evlist *evlist, uint64_t id);
/* Publishes the evlist as event.count / event.N.* metadata into st. */
int fmt_evlist_to_meta(const struct hwt_fmt_evlist *evlist, struct fmt_meta_store *st);
/* Builds an evlist from event.count / event.N.* metadata. */
int fmt_evlist_from_meta(struct hwt_fmt_evlist *evlist, const struct fmt_meta_store *st);

/* Time of a parsed record when it has one (sample TIME or sample_id TIME). */
static inline bool fmt_record_time(const struct hwt_fmt_record *rec, uint64_t *time)
{
	if (!(rec->id.present & PERF_SAMPLE_TIME))
		return false;
	*time = rec->id.time;
	return true;
}

/* perf.data's user record types (tools/perf/util/event.h). */
enum {
	FMT_PERF_HEADER_ATTR = 64,
	FMT_PERF_HEADER_EVENT_TYPE = 65,
	FMT_PERF_HEADER_TRACING_DATA = 66,
	FMT_PERF_HEADER_BUILD_ID = 67,
	FMT_PERF_FINISHED_ROUND = 68,
	FMT_PERF_ID_INDEX = 69,
	FMT_PERF_AUXTRACE_INFO = 70,
	FMT_PERF_AUXTRACE = 71,
	FMT_PERF_AUXTRACE_ERROR = 72,
	FMT_PERF_THREAD_MAP = 73,
	FMT_PERF_CPU_MAP = 74,
	FMT_PERF_STAT_CONFIG = 75,
	FMT_PERF_STAT = 76,
	FMT_PERF_STAT_ROUND = 77,
	FMT_PERF_EVENT_UPDATE = 78,
	FMT_PERF_TIME_CONV = 79,
	FMT_PERF_HEADER_FEATURE = 80,
	FMT_PERF_COMPRESSED = 81,
	FMT_PERF_FINISHED_INIT = 82,
	FMT_PERF_COMPRESSED2 = 83,
	FMT_PERF_USER_MAX = 84,
};

/* perf.data feature bits (tools/perf/util/header.h). */
enum {
	FMT_FEAT_TRACING_DATA = 1,
	FMT_FEAT_BUILD_ID = 2,
	FMT_FEAT_HOSTNAME = 3,
	FMT_FEAT_OSRELEASE = 4,
	FMT_FEAT_VERSION = 5,
	FMT_FEAT_ARCH = 6,
	FMT_FEAT_NRCPUS = 7,
	FMT_FEAT_CPUDESC = 8,
	FMT_FEAT_CPUID = 9,
	FMT_FEAT_TOTAL_MEM = 10,
	FMT_FEAT_CMDLINE = 11,
	FMT_FEAT_EVENT_DESC = 12,
	FMT_FEAT_AUXTRACE = 18,
	FMT_FEAT_SAMPLE_TIME = 21,
	FMT_FEAT_COMPRESSED = 27,
	FMT_FEAT_BITS = 256,
};

#define FMT_PERF_MAGIC		   "PERFILE2"
#define FMT_PERF_MAGIC_SWAPPED	   "2ELIFREP"
#define FMT_PERF_FILE_HEADER_SIZE  104u
#define FMT_PERF_PIPE_HEADER_SIZE  16u
#define FMT_PERF_AUXTRACE_SIZE	   48u	 /* header + size, offset, reference, idx, tid, cpu, pad */
#define FMT_PERF_AUXTRACE_INFO_MAX 4096u /* header, type, reserved, priv[] */

/* Sets a perf.data feature section from bytes already encoded as perf
 * encodes that feature (NRCPUS: u32 available, u32 online; ...); copied.
 * Replaces what the typed setters gave for the same feature. Returns 0,
 * -HWT_EINVAL or -ENOMEM. */
struct hwt_fmt_perf_writer;
int fmt_perf_writer_feature_raw(struct hwt_fmt_perf_writer *w, unsigned int feature,
				const void *data, size_t len);

/* Name of perf.data feature bit, or NULL. */
const char *fmt_perf_feature_name(unsigned int feat);

#endif /* HWT_FORMAT_FORMAT_INT_H */
