/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report/report_int.h - what the report module's files share and nobody
 * else sees: the byte-key interner every table is built on, the dict's
 * layout, the profile's merged rows, the output-format table and small
 * text helpers (JSON escaping, percentages).
 */
#ifndef HWT_REPORT_REPORT_INT_H
#define HWT_REPORT_REPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/report.h"

/* ------------------------------------------------------------------------ */
/* Arena: bump allocation in blocks that never move, so interned bytes keep
 * their address for the lifetime of the owner (strings handed out as
 * const char *, key tuples handed out in results). */
struct hwt_rep_arena_block;

struct hwt_rep_arena {
	struct hwt_rep_arena_block *head;
	size_t used, cap; /* in head */
};

void hwt_rep_arena_init(struct hwt_rep_arena *arena);
void hwt_rep_arena_fini(struct hwt_rep_arena *arena);
/* 8-byte aligned, never NULL unless out of memory. */
void *hwt_rep_arena_alloc(struct hwt_rep_arena *arena, size_t len);

/* ------------------------------------------------------------------------ */
/* Set: interns byte strings to dense ids 0, 1, 2, ... Open addressing with
 * linear probing over a power-of-two slot table kept under 50% load; each
 * entry keeps its hash so probes compare hashes before bytes. A lookup of a
 * known key allocates nothing. */
struct hwt_rep_set_entry {
	const uint8_t *data;
	uint32_t len;
	uint32_t hash;
};

struct hwt_rep_set {
	struct hwt_rep_arena arena;
	struct hwt_rep_set_entry *entries;
	size_t n, entries_cap;
	uint64_t *slots; /* hash << 32 | (id + 1); 0 is empty. The hash in the
			  * slot lets a probe skip other keys without touching
			  * their entries (a cache miss each). */
	size_t nslots;	 /* power of two */
};

void hwt_rep_set_init(struct hwt_rep_set *set);
void hwt_rep_set_fini(struct hwt_rep_set *set);
/* Clears all keys, keeps the memory of the tables. */
void hwt_rep_set_clear(struct hwt_rep_set *set);
/* Finds or adds key; stores the id. Returns 1 when added, 0 when found,
 * -ENOMEM or -HWT_ETOOBIG (over UINT32_MAX-1 keys or 4 GiB keys). The stored
 * copy is NUL-terminated past len (handy for strings). */
int hwt_rep_set_intern(struct hwt_rep_set *set, const void *key, size_t len, uint32_t *id);
/* Finds key without adding. Returns 1 and stores the id, or 0. */
int hwt_rep_set_find(const struct hwt_rep_set *set, const void *key, size_t len, uint32_t *id);

static inline const uint8_t *hwt_rep_set_key(const struct hwt_rep_set *set, uint32_t id,
					     size_t *len)
{
	if (len)
		*len = set->entries[id].len;
	return set->entries[id].data;
}

uint64_t hwt_rep_hash(const void *data, size_t len);

/* ------------------------------------------------------------------------ */
/* Dict layout */

/* The interned form of a frame: what makes two frames the same. */
struct hwt_rep_frame_key {
	uint32_t function, object, file; /* string ids; 0 is unknown */
	uint32_t line;
	uint32_t kind;
	uint32_t pad;
	uint64_t addr;
};

struct hwt_rep_dict {
	struct hwt_rep_set strs;
	struct hwt_rep_set frames;	    /* keys: struct hwt_rep_frame_key */
	struct hwt_rep_frame **frame_views; /* frame id -> resolved frame (arena) */
	uint32_t *frame_labels;		    /* frame id -> label string id */
	size_t frame_views_cap;
	struct hwt_rep_set stacks; /* keys: uint32_t frame ids, leaf first */
};

static inline const struct hwt_rep_frame_key *
hwt_rep_dict_frame_key(const struct hwt_rep_dict *dict, uint32_t id)
{
	return (const struct hwt_rep_frame_key *)dict->frames.entries[id].data;
}

static inline uint32_t hwt_rep_dict_label_id(const struct hwt_rep_dict *dict, uint32_t frame)
{
	return dict->frame_labels[frame];
}

/* ------------------------------------------------------------------------ */
/* Profile layout: samples merged into rows by identical key. */

struct hwt_rep_row_key {
	uint32_t stack; /* dict stack id */
	uint32_t comm;	/* dict string id (0: unknown) */
	uint32_t event; /* dict string id */
	int32_t pid, tid, cpu;
};

struct hwt_rep_row_val {
	uint64_t samples;
	uint64_t weight;
};

struct hwt_rep_profile {
	struct hwt_rep_dict *dict;
	bool own_dict;
	struct hwt_rep_set rows;      /* keys: struct hwt_rep_row_key */
	struct hwt_rep_row_val *vals; /* row id -> totals */
	size_t vals_cap;
	struct hwt_rep_stats stats;
	char exact_event[32]; /* hwt_rep_profile_exact(); "" when sampled */
	uint32_t *unsym;      /* dict stack id -> unsymbolized frames
			       * in it, UINT32_MAX until computed */
	size_t unsym_cap;
	/* filter, copied */
	uint32_t *f_comms; /* string ids */
	size_t nf_comms;
	int32_t *f_pids, *f_tids;
	size_t nf_pids, nf_tids;
	char **f_objects;
	size_t nf_objects;
	uint64_t f_time_begin, f_time_end;
	/* Per event, what the comm/pid/tid/object filters rejected: perf's
	 * default percentages are of everything in the time range, kept or
	 * not (--percentage absolute). Few events: a plain array. */
	struct hwt_rep_filtered_event {
		uint32_t event; /* string id */
		uint64_t samples, weight;
	} * f_events;
	size_t nf_events, f_events_cap;
	struct hwt_logger log;
	uint32_t work[HWT_REP_MAX_DEPTH]; /* frame ids of the sample being added */
};

static inline const struct hwt_rep_row_key *hwt_rep_profile_row(const struct hwt_rep_profile *p,
								uint32_t i)
{
	return (const struct hwt_rep_row_key *)p->rows.entries[i].data;
}

/* ------------------------------------------------------------------------ */
/* Output formats: a table of {name, init, process, finish}. The driver
 * (hwt_rep_render) calls init once, process for every merged row of the
 * profile (source 0) and, for differential outputs, of the base profile
 * (source 1), then finish, which writes the output and always releases the
 * format's state (also after an error, when err < 0). */
struct hwt_rep_render_ctx {
	const struct hwt_rep_render_config *cfg;
	const struct hwt_rep_profile *profile;
	const struct hwt_rep_profile *base;
	void *state;
};

struct hwt_rep_format_ops {
	const char *name;
	enum hwt_rep_format format;
	int (*init)(struct hwt_rep_render_ctx *ctx);
	int (*process)(struct hwt_rep_render_ctx *ctx, int source, uint32_t row,
		       const struct hwt_rep_row_key *key, const struct hwt_rep_row_val *val);
	int (*finish)(struct hwt_rep_render_ctx *ctx, int err, struct hwt_buf *out);
};

extern const struct hwt_rep_format_ops hwt_rep_fmt_report_text;
extern const struct hwt_rep_format_ops hwt_rep_fmt_report_json;
extern const struct hwt_rep_format_ops hwt_rep_fmt_folded;
extern const struct hwt_rep_format_ops hwt_rep_fmt_svg;
extern const struct hwt_rep_format_ops hwt_rep_fmt_html;
extern const struct hwt_rep_format_ops hwt_rep_fmt_pprof;

/* ------------------------------------------------------------------------ */
/* Text helpers */

/* Appends s as a JSON string literal (quotes, escapes, invalid UTF-8 bytes
 * replaced by U+FFFD). */
int hwt_rep_json_str(struct hwt_buf *out, const char *s);
/* Appends s with &<>"' escaped for XML/HTML. */
int hwt_rep_xml_str(struct hwt_buf *out, const char *s);
/* Appends v in decimal (the hot path of graph data: no printf). */
int hwt_rep_buf_u64(struct hwt_buf *out, uint64_t v);

/* Appends the stats as "# ..." comment lines (text) or a JSON object. */
int hwt_rep_stats_text(struct hwt_buf *out, const struct hwt_rep_stats *st, const char *prefix);
int hwt_rep_stats_json(struct hwt_buf *out, const struct hwt_rep_stats *st);

/* Folded-stack frame name with its kind suffix (_[k], _[i], _[j]) when
 * annotate is set. Appends to out. */
int hwt_rep_folded_frame(struct hwt_buf *out, const char *label, uint32_t kind, bool annotate);

#endif /* HWT_REPORT_REPORT_INT_H */
