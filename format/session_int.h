/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/session_int.h - the session's insides, shared by session.c (the
 * public session API, .hwt record merging, AUX segment index and reads) and
 * perfdata.c (the perf.data source: file and pipe mode, compressed records,
 * round ordering, feature sections).
 */
#ifndef HWT_FORMAT_SESSION_INT_H
#define HWT_FORMAT_SESSION_INT_H

#include "format/format_int.h"

/* One contiguous run of AUX bytes that is stored in one place: a range of a
 * perf.data file, a heap copy (perf pipes), or one .hwt AUX chunk. */
struct fmt_aux_piece {
	uint64_t rel; /* offset inside the segment */
	uint64_t size;
	uint64_t file_offset;		   /* perf.data file */
	uint8_t *mem;			   /* perf pipe: owned copy */
	const struct hwt_fmt_chunk *chunk; /* .hwt */
};

struct fmt_aux_seg {
	struct hwt_fmt_aux_segment pub;
	struct fmt_aux_piece *pieces;
	size_t npieces, cap;
};

struct fmt_aux_stream {
	struct hwt_fmt_aux_stream pub;
	struct fmt_aux_seg *segs;
	size_t cap;
};

struct fmt_perf;
struct fmt_hwt;

struct hwt_fmt_session {
	struct hwt_fmt_session_config cfg;
	enum hwt_fmt_file_kind kind;
	struct hwt_fmt_evlist *evlist;
	struct fmt_meta_store meta;    /* perf.data: translated features */
	struct hwt_fmt_reader *reader; /* .hwt */
	struct fmt_hwt *hwt;	       /* .hwt record merge */
	struct fmt_perf *perf;	       /* perf.data source */
	int fd;			       /* perf.data: for AUX reads (pread) */
	struct hwt_fmt_session_stats stats;
	int broken_err;	    /* perf.data: the error that ended reading, or 0 */
	uint64_t broken_at; /* ... and its file offset */
	struct fmt_aux_stream **aux;
	size_t naux, capaux;
};

/* AUX index (session.c). */
struct fmt_aux_stream *fmt_aux_stream_get(struct hwt_fmt_session *s, uint32_t idx, int32_t cpu,
					  int32_t tid);
/* Appends a piece at aux_offset; a piece that continues the last segment
 * (same AUX offset as its end, or overlapping it by perf's alignment
 * padding, which is then dropped) extends it, anything else starts a new
 * segment. The piece is copied; mem ownership moves to the index. */
int fmt_aux_add(struct fmt_aux_stream *st, uint64_t aux_offset, const struct fmt_aux_piece *piece,
		uint64_t time);
/* Sets segment times from a PERF_RECORD_AUX (earliest record wins). */
void fmt_aux_note_record(struct hwt_fmt_session *s, const struct hwt_fmt_record *rec);

/* perf.data source (perfdata.c). fd is owned by the session. */
int fmt_perf_open(struct hwt_fmt_session *s, uint64_t *err_offset);
int fmt_perf_next(struct hwt_fmt_session *s, struct hwt_fmt_record *rec, uint64_t *err_offset);
int fmt_perf_rewind(struct hwt_fmt_session *s);
void fmt_perf_close(struct fmt_perf *p);

#endif /* HWT_FORMAT_SESSION_INT_H */
