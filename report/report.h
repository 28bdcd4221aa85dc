/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report/report.h - hwtrace's reports: the aggregation engine (DTrace-style
 * keyed aggregations with count, sum, min, max, avg, stddev, quantize and
 * lquantize), sample profiles with perf-report-like views (top functions
 * with self and children, caller and callee call graphs, filters), flame
 * graphs (interactive SVG/HTML, differential, folded), pprof export and
 * Chrome trace event export of time-ordered spans.
 *
 * This header is the whole contract of the report module. Input comes in
 * memory: whoever reads a trace (the format session, the PT decoder, a probe
 * front-end) hands samples, spans or aggregation updates to these objects.
 *
 * Three layers:
 *
 *   dict      interns strings, frames and stacks once; everything else keys
 *             on the small integer ids it hands out. Ids are dense, start at
 *             0 (the empty string, the empty stack) and never change.
 *   agg       a named aggregation (DTrace's @name[key] = func(value)): keys
 *             are tuples of typed values (int, string id, stack id).
 *   profile   samples (event, weight, thread, cpu, stack of frames) merged
 *             by identical (stack, thread, cpu, event); rendered by
 *             hwt_rep_render() into text, JSON, folded stacks, SVG, HTML
 *             or pprof.
 *   timeline  per-thread spans and instants, rendered as Chrome trace JSON.
 *
 * Usage, a profile:
 *
 *   struct hwt_rep_profile_config pc;
 *   hwt_rep_profile_config_init(&pc);
 *   err = hwt_rep_profile_alloc(&prof, &pc);
 *   for each sample: err = hwt_rep_profile_add(prof, &sample);
 *   struct hwt_rep_render_config rc;
 *   hwt_rep_render_config_init(&rc);
 *   rc.format = HWT_REP_FMT_TEXT;                 // or hwt_rep_format_from_path()
 *   err = hwt_rep_render(prof, &rc, &buf);         // appends to a hwt_buf
 *   hwt_rep_profile_free(prof);
 *
 * Usage, an aggregation (@lat[comm] = quantize(ns)):
 *
 *   hwt_rep_dict_alloc(&dict);
 *   struct hwt_rep_agg_config ac;
 *   hwt_rep_agg_config_init(&ac);
 *   ac.name = "lat"; ac.func = HWT_REP_QUANTIZE;
 *   ac.nkeys = 1; ac.key_types[0] = HWT_REP_STR; ac.key_names[0] = "comm";
 *   hwt_rep_agg_alloc(&agg, dict, &ac);
 *   hwt_rep_dict_str(dict, comm, strlen(comm), &id);
 *   struct hwt_rep_val key = {HWT_REP_STR, id};
 *   hwt_rep_agg_update(agg, &key, ns, 1);          // allocates only for a new key
 *   hwt_rep_agg_print(agg, HWT_REP_FMT_TEXT, &buf);
 *
 * Nothing here prints or exits; diagnostics go through the logger in the
 * configs. No globals: objects are independent and each is used by one
 * thread at a time.
 */
#ifndef HWT_REPORT_REPORT_H
#define HWT_REPORT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hwt.h"

/* ------------------------------------------------------------------------ */
/* Frames and samples: the input                                             */

/* What kind of code a frame is in; it picks the colour in flame graphs and
 * the [.]/[k] marker in reports. */
enum hwt_rep_kind {
	HWT_REP_KIND_UNKNOWN = 0,
	HWT_REP_KIND_USER = 1,
	HWT_REP_KIND_KERNEL = 2,
	HWT_REP_KIND_INLINED = 3, /* inlined into the next frame (its caller) */
	HWT_REP_KIND_JIT = 4,
	HWT_REP_KIND_COUNT_
};

/* A resolved frame. Strings may be NULL (unknown); they are copied (interned)
 * when the frame is added, so they need only live during the call. A frame
 * without a function name counts as unsymbolized in the stats. */
struct hwt_rep_frame {
	const char *function;
	const char *object; /* shared object or binary path, "[kernel.kallsyms]" */
	const char *file;   /* source file of the frame's line */
	uint32_t line;	    /* 0 when unknown */
	uint32_t kind;	    /* enum hwt_rep_kind */
	uint64_t addr;	    /* instruction address; 0 when unknown */
};

/* One sample. Frames are leaf first (frames[0] is where the sample hit).
 * Either frames or frame_ids (ids from hwt_rep_dict_frame() of the profile's
 * dict, the fast path for decoders that cache resolved frames) is used;
 * frame_ids wins when both are set. Strings need only live during the call. */
struct hwt_rep_sample {
	const char *event; /* event name; NULL is "" */
	uint64_t weight;   /* period (events this sample stands for); 0 is 1 */
	uint64_t time;	   /* perf clock, ns; 0 when unknown */
	int32_t pid, tid;  /* -1 when unknown */
	int32_t cpu;	   /* -1 when unknown */
	const char *comm;  /* NULL when unknown */
	const struct hwt_rep_frame *frames;
	const uint32_t *frame_ids;
	size_t nframes;
};

/* Stacks longer than this are cut (the root side is dropped) and counted in
 * hwt_rep_stats.truncated. */
#define HWT_REP_MAX_DEPTH 1024

/* ------------------------------------------------------------------------ */
/* Dict: interned strings, frames and stacks                                  */

struct hwt_rep_dict;

/* Allocates an empty dict (string 0 is "", stack 0 is the empty stack).
 * Returns 0 or -ENOMEM. */
HWT_API int hwt_rep_dict_alloc(struct hwt_rep_dict **dict);
/* Frees the dict and every string it handed out. Accepts NULL. */
HWT_API void hwt_rep_dict_free(struct hwt_rep_dict *dict);

/* Interns len bytes of s (need not be NUL-terminated; s may be NULL when len
 * is 0) and stores its id. Allocates only for a string not seen before.
 * Returns 0, -HWT_EINVAL (NULL dict or id), -HWT_ETOOBIG (over 4 GiB of
 * strings) or -ENOMEM. */
HWT_API int hwt_rep_dict_str(struct hwt_rep_dict *dict, const char *s, size_t len, uint32_t *id);
/* The NUL-terminated string of an id, valid for the lifetime of the dict;
 * NULL for an id never handed out. */
HWT_API const char *hwt_rep_dict_str_get(const struct hwt_rep_dict *dict, uint32_t id);
/* Number of strings (ids are 0 .. n-1). */
HWT_API size_t hwt_rep_dict_nstr(const struct hwt_rep_dict *dict);

/* Interns a frame (its strings too). Returns 0, -HWT_EINVAL, -ENOMEM. */
HWT_API int hwt_rep_dict_frame(struct hwt_rep_dict *dict, const struct hwt_rep_frame *frame,
			       uint32_t *id);
/* The frame of an id (strings point into the dict; unknown strings are
 * NULL), valid for the lifetime of the dict; NULL for a bad id. */
HWT_API const struct hwt_rep_frame *hwt_rep_dict_frame_get(const struct hwt_rep_dict *dict,
							   uint32_t id);
/* Number of frames (ids are 0 .. n-1). */
HWT_API size_t hwt_rep_dict_nframes(const struct hwt_rep_dict *dict);

/* Interns a stack: n frame ids, leaf first. Returns 0, -HWT_EINVAL (an
 * unknown frame id, n over HWT_REP_MAX_DEPTH), -ENOMEM. */
HWT_API int hwt_rep_dict_stack(struct hwt_rep_dict *dict, const uint32_t *frame_ids, size_t n,
			       uint32_t *id);
/* The frames of a stack (leaf first) through *frame_ids, valid for the
 * lifetime of the dict; returns their number (0 for the empty stack or a
 * bad id). */
HWT_API size_t hwt_rep_dict_stack_get(const struct hwt_rep_dict *dict, uint32_t id,
				      const uint32_t **frame_ids);

/* The name a frame is shown under: its function, else "[object]", else
 * "[unknown]" (flame graphs and folded stacks merge unknown frames so).
 * Valid for the lifetime of the dict. */
HWT_API const char *hwt_rep_frame_label(const struct hwt_rep_dict *dict, uint32_t frame_id);

/* ------------------------------------------------------------------------ */
/* Aggregations                                                              */

/* Types of key values. */
enum hwt_rep_type {
	HWT_REP_INT = 1,   /* int64_t */
	HWT_REP_STR = 2,   /* string id of the agg's dict */
	HWT_REP_STACK = 3, /* stack id of the agg's dict (printed a frame a line) */
};

/* A typed value: v is the integer, or the string/stack id. */
struct hwt_rep_val {
	uint32_t type; /* enum hwt_rep_type */
	int64_t v;
};

/* Aggregating functions, as DTrace's. */
enum hwt_rep_func {
	HWT_REP_COUNT = 1, /* number of updates (each weighs `weight`) */
	HWT_REP_SUM,	   /* sum of value * weight */
	HWT_REP_MIN,
	HWT_REP_MAX,
	HWT_REP_AVG,	   /* sum / count, exact 128-bit sums */
	HWT_REP_STDDEV,	   /* population standard deviation, exact sums */
	HWT_REP_QUANTIZE,  /* power-of-two histogram */
	HWT_REP_LQUANTIZE, /* linear histogram: low, high, step */
};

#define HWT_REP_MAX_KEYS 8

/* Power-of-two buckets as DTrace's (DTRACE_QUANTIZE_NBUCKETS): 63 negative,
 * zero (bucket 63), 63 positive. Bucket 63+k+1 holds [2^k, 2^(k+1)) for
 * k = 0..62 (bucket 126 up to INT64_MAX); bucket 63-k-1 holds
 * (-2^(k+1), -2^k] for k = 0..61 and bucket 0 everything <= -2^62. */
#define HWT_REP_QUANTIZE_BUCKETS 127
/* lquantize allows at most this many steps between low and high. */
#define HWT_REP_LQUANTIZE_MAX_LEVELS 65536

struct hwt_rep_agg_config {
	size_t size;	  /* sizeof(struct hwt_rep_agg_config) */
	const char *name; /* without '@'; "" is DTrace's anonymous @ (copied) */
	enum hwt_rep_func func;
	int64_t low, high, step;		 /* lquantize: buckets [low+k*step, low+(k+1)*step)
						  * plus "< low" and ">= high"; needs step > 0,
						  * high > low, (high-low) a multiple of step */
	size_t nkeys;				 /* 0 .. HWT_REP_MAX_KEYS; 0 is a single value */
	uint32_t key_types[HWT_REP_MAX_KEYS];	 /* enum hwt_rep_type */
	const char *key_names[HWT_REP_MAX_KEYS]; /* for headers and JSON (copied;
						  * NULL: "key<i>") */
	struct hwt_logger log;
};

HWT_API void hwt_rep_agg_config_init(struct hwt_rep_agg_config *cfg);

struct hwt_rep_agg;

/* Allocates an aggregation whose string and stack keys are ids of dict
 * (which must outlive the aggregation). cfg is copied.
 * Returns 0, -HWT_EINVAL (bad function, key types, lquantize range) or
 * -ENOMEM. */
HWT_API int hwt_rep_agg_alloc(struct hwt_rep_agg **agg, struct hwt_rep_dict *dict,
			      const struct hwt_rep_agg_config *cfg);
/* Accepts NULL. */
HWT_API void hwt_rep_agg_free(struct hwt_rep_agg *agg);

/* Adds value with weight (weight 0 is 1: DTrace's quantize(v, incr)) under
 * key (cfg.nkeys values, types as declared). Allocates nothing when the key
 * exists. Returns 0, -HWT_EINVAL (a key of the wrong type, an id the dict
 * never gave) or -ENOMEM. Sums wrap as int64 in `sum` but avg and stddev
 * use exact 128-bit sums. */
HWT_API int hwt_rep_agg_update(struct hwt_rep_agg *agg, const struct hwt_rep_val *key,
			       int64_t value, uint64_t weight);

/* A partial aggregation kept elsewhere (a BPF map, one per CPU): the
 * total weight, the 128-bit sum and (stddev) sum of squared magnitudes in
 * two halves, the extremes (read only when count > 0) and the bucket
 * counts of a histogram (NULL and 0 otherwise). */
struct hwt_rep_agg_part {
	uint64_t count;
	uint64_t sum_lo;
	int64_t sum_hi;
	uint64_t sumsq_lo, sumsq_hi;
	int64_t min, max;
	const uint64_t *buckets;
	size_t nbuckets;
};

/* Adds part under key, as if its updates had been made here. A part with
 * count 0 adds nothing. Returns 0, -HWT_EINVAL (a key of the wrong types,
 * nbuckets other than the aggregation's), -ENOMEM. */
HWT_API int hwt_rep_agg_merge(struct hwt_rep_agg *agg, const struct hwt_rep_val *key,
			      const struct hwt_rep_agg_part *part);
/* Adds every row of src to dst: the same function (and lquantize range),
 * key types and dict. Returns 0, -HWT_EINVAL, -ENOMEM. */
HWT_API int hwt_rep_agg_add(struct hwt_rep_agg *dst, const struct hwt_rep_agg *src);

/* Forgets every key (DTrace's clear + trunc). */
HWT_API void hwt_rep_agg_clear(struct hwt_rep_agg *agg);

/* The result of one key. */
struct hwt_rep_agg_result {
	const struct hwt_rep_val *key; /* nkeys values, valid until the next update */
	uint64_t count;		       /* total weight of updates */
	int64_t sum;		       /* sum of value * weight (wraps) */
	int64_t min, max;
	double avg, stddev;
	int64_t value;	 /* what the function shows: count, sum, min, max,
			  * avg or stddev (truncated toward zero); for
			  * histograms the total count. Rows sort on it. */
	size_t nbuckets; /* histograms: bucket counts; else 0 */
	const uint64_t *buckets;
};

/* Number of keys. */
HWT_API size_t hwt_rep_agg_nrows(const struct hwt_rep_agg *agg);
/* Row i (0 .. nrows-1, in insertion order). Returns 0 or -HWT_EINVAL. */
HWT_API int hwt_rep_agg_row(const struct hwt_rep_agg *agg, size_t i,
			    struct hwt_rep_agg_result *res);
/* Row of key, or -HWT_ENOSYM when the key was never updated. */
HWT_API int hwt_rep_agg_find(const struct hwt_rep_agg *agg, const struct hwt_rep_val *key,
			     struct hwt_rep_agg_result *res);
/* The lowest value bucket i of this aggregation's histogram holds
 * (quantize: 2^k for positive buckets, -(2^(k+1))+1 for negative ones,
 * INT64_MIN for bucket 0; lquantize: INT64_MIN for the "< low" bucket,
 * low + (i-1)*step after it). Returns 0 or -HWT_EINVAL (not a histogram,
 * i out of range). */
HWT_API int hwt_rep_agg_bucket_low(const struct hwt_rep_agg *agg, size_t i, int64_t *low);

/* Bucket of v in a power-of-two histogram (0 .. 126), see above. */
HWT_API size_t hwt_rep_quantize_bucket(int64_t v);
/* The value a quantize bucket is labelled with (its bound nearest zero). */
HWT_API int64_t hwt_rep_quantize_label(size_t bucket);
/* Bucket of v in lquantize(low, high, step): 0 for v < low, levels+1 for
 * v >= high, else 1 + (v - low) / step. No overflow for any int64. */
HWT_API size_t hwt_rep_lquantize_bucket(int64_t v, int64_t low, int64_t high, int64_t step);

enum hwt_rep_format {
	HWT_REP_FMT_TEXT = 1, /* people: perf report / DTrace layouts */
	HWT_REP_FMT_JSON,     /* scripts: the same numbers */
	HWT_REP_FMT_FOLDED,   /* folded stacks (FlameGraph, inferno) */
	HWT_REP_FMT_SVG,      /* interactive flame graph, SVG with script */
	HWT_REP_FMT_HTML,     /* interactive flame graph, one HTML page */
	HWT_REP_FMT_PPROF,    /* pprof profile.proto, gzip-compressed */
	HWT_REP_FMT_CHROME,   /* Chrome trace event JSON (timelines only) */
};

/* Appends the aggregation to out: TEXT in DTrace's layout (rows sorted by
 * value ascending, histograms as "value ---- Distribution ---- count" bars,
 * stacks a frame a line with the value under them), or JSON (one object:
 * name, function, keys, rows). Returns 0, -HWT_EINVAL (other formats) or
 * -ENOMEM. */
HWT_API int hwt_rep_agg_print(const struct hwt_rep_agg *agg, enum hwt_rep_format format,
			      struct hwt_buf *out);

/* ------------------------------------------------------------------------ */
/* Sample fields: keys of aggregations over samples and report sort keys     */

enum hwt_rep_field {
	HWT_REP_F_FUNCTION = 1, /* leaf frame's function label (string) */
	HWT_REP_F_OBJECT,	/* leaf frame's object (string) */
	HWT_REP_F_COMM,		/* string */
	HWT_REP_F_PID,		/* int */
	HWT_REP_F_TID,		/* int */
	HWT_REP_F_CPU,		/* int */
	HWT_REP_F_EVENT,	/* string */
	HWT_REP_F_SRCLINE,	/* leaf frame's "file:line" (string) */
	HWT_REP_F_USTACK,	/* the user frames (stack) */
	HWT_REP_F_KSTACK,	/* the kernel frames (stack) */
	HWT_REP_F_STACK,	/* all frames (stack) */
	HWT_REP_F_WEIGHT,	/* the sample's weight (int) */
	HWT_REP_F_TIME,		/* the sample's time (int) */
	HWT_REP_F_COUNT_
};

/* Field by name ("function"/"sym", "object"/"dso", "comm", "pid", "tid",
 * "cpu", "event", "srcline", "ustack", "kstack", "stack", "weight",
 * "time"). Returns 0 or -HWT_EINVAL. */
HWT_API int hwt_rep_field_parse(const char *name, enum hwt_rep_field *field);
/* The field's name ("function", ...); "?" for a bad value. Static. */
HWT_API const char *hwt_rep_field_name(enum hwt_rep_field field);
/* The key type a field gives (enum hwt_rep_type). */
HWT_API uint32_t hwt_rep_field_type(enum hwt_rep_field field);

/* Builds the key of a sample for the given fields into key[0..n-1],
 * interning strings and stacks in dict. A sample's frame_ids must be ids of
 * this dict. Returns 0, -HWT_EINVAL or -ENOMEM. */
HWT_API int hwt_rep_sample_key(struct hwt_rep_dict *dict, const struct hwt_rep_sample *sample,
			       const enum hwt_rep_field *fields, size_t n, struct hwt_rep_val *key);

/* ------------------------------------------------------------------------ */
/* Profiles                                                                  */

/* What every report counts and prints: nothing is dropped silently. */
struct hwt_rep_stats {
	uint64_t samples;      /* samples accepted */
	uint64_t weight;       /* their total weight */
	uint64_t filtered;     /* samples the filters rejected */
	uint64_t lost;	       /* samples the input says were lost
				* (hwt_rep_profile_lost) */
	uint64_t no_stack;     /* accepted samples without any frame */
	uint64_t frames;       /* frames in accepted samples */
	uint64_t unsymbolized; /* of those, frames without a function */
	uint64_t truncated;    /* stacks cut at HWT_REP_MAX_DEPTH */
	uint64_t bad_input;    /* malformed input rejected (folded lines, ...) */
	bool exact;	       /* the profile is exact (hwt_rep_profile_exact):
				* samples are distinct stacks, weights are
				* every event counted, not sampled */
};

/* Sample filters, as perf report's --comms, --pid, --tid, --dsos, --time.
 * Empty lists match everything. Lists are copied at profile alloc. */
struct hwt_rep_filter {
	const char *const *comms;
	size_t ncomms;
	const int32_t *pids;
	size_t npids;
	const int32_t *tids;
	size_t ntids;
	const char *const *objects; /* the leaf frame's object, by full path
				     * or by basename */
	size_t nobjects;
	uint64_t time_begin; /* keep time_begin <= time < time_end */
	uint64_t time_end;   /* 0 is no upper bound */
};

struct hwt_rep_profile_config {
	size_t size;		   /* sizeof(struct hwt_rep_profile_config) */
	struct hwt_rep_dict *dict; /* shared dict (must outlive the profile);
				    * NULL: the profile owns its own */
	struct hwt_rep_filter filter;
	struct hwt_logger log;
};

HWT_API void hwt_rep_profile_config_init(struct hwt_rep_profile_config *cfg);

struct hwt_rep_profile;

/* Allocates an empty profile. cfg may be NULL (defaults); it is copied, the
 * filter lists too. Returns 0, -HWT_EINVAL (cfg refused by hwt_opts_copy) or
 * -ENOMEM. */
HWT_API int hwt_rep_profile_alloc(struct hwt_rep_profile **profile,
				  const struct hwt_rep_profile_config *cfg);
/* Accepts NULL. */
HWT_API void hwt_rep_profile_free(struct hwt_rep_profile *profile);

/* Adds a sample (copied: interned and merged with identical ones). Returns 1
 * when it was added, 0 when a filter rejected it, or -HWT_EINVAL (a
 * frame_id the dict never gave; counted in bad_input) / -ENOMEM. Allocates
 * nothing for a sample whose stack, thread, cpu and event were seen before.
 * A sample outside the time range is counted as filtered only; one that
 * the comm, pid, tid or object filters reject also adds to its event's
 * rejected totals, which reports include in their percentages' base
 * unless hwt_rep_render_config.relative (as perf's --percentage). */
HWT_API int hwt_rep_profile_add(struct hwt_rep_profile *profile,
				const struct hwt_rep_sample *sample);

/* Parses folded stacks ("root;...;leaf COUNT" lines, as FlameGraph's
 * stackcollapse tools and hwtrace write; frame suffixes _[k], _[i], _[j]
 * give the kind) and adds one sample of weight COUNT per line, with event
 * as its event (NULL: ""). Empty lines are skipped.
 * Returns the number of lines added, or -HWT_EFORMAT with the 1-based line
 * number in *err_line (when not NULL): a line without a count, a count that
 * is not a positive integer (or would take the total past 2^64), an empty
 * frame, a NUL byte. Lines before the bad one are kept. -ENOMEM. */
HWT_API int64_t hwt_rep_profile_add_folded(struct hwt_rep_profile *profile, const char *text,
					   size_t len, const char *event, size_t *err_line);

/* Records samples the input lost (ring-buffer overflow, decode gaps). */
HWT_API void hwt_rep_profile_lost(struct hwt_rep_profile *profile, uint64_t samples);
/* Records malformed input the reader skipped (records that did not parse,
 * damaged chunks): counted in hwt_rep_stats.bad_input. */
HWT_API void hwt_rep_profile_bad_input(struct hwt_rep_profile *profile, uint64_t count);

/* Marks the profile exact: its samples are the distinct stacks of a trace
 * (Intel PT), each weighing every event of it (event: "instructions", ...;
 * copied, at most 31 bytes), counted, not sampled. Reports and flame
 * graphs then name what they count: the event, and stacks, not samples. */
HWT_API void hwt_rep_profile_exact(struct hwt_rep_profile *profile, const char *event);

/* The running counts; valid for the lifetime of the profile. */
HWT_API const struct hwt_rep_stats *hwt_rep_profile_stats(const struct hwt_rep_profile *profile);
/* The dict the profile interns into (its own or the shared one). */
HWT_API struct hwt_rep_dict *hwt_rep_profile_dict(const struct hwt_rep_profile *profile);

/* ------------------------------------------------------------------------ */
/* Rendering a profile                                                       */

enum hwt_rep_order {
	HWT_REP_ORDER_CHILDREN = 1, /* self + callees, perf's default with -g */
	HWT_REP_ORDER_SELF,
	HWT_REP_ORDER_SAMPLES,
};

enum hwt_rep_graph {
	HWT_REP_GRAPH_NONE = 0,
	HWT_REP_GRAPH_CALLER, /* under an entry, its callees (root to leaf) */
	HWT_REP_GRAPH_CALLEE, /* under an entry, its callers (leaf to root) */
	HWT_REP_GRAPH_AUTO,   /* CALLER with children, CALLEE without */
};

struct hwt_rep_render_config {
	size_t size; /* sizeof(struct hwt_rep_render_config) */
	enum hwt_rep_format format;

	/* TEXT and JSON reports */
	enum hwt_rep_field sort[8]; /* entry key, perf's --sort; default
				     * comm, object, function */
	size_t nsort;		    /* 0: the default */
	enum hwt_rep_order order;   /* default CHILDREN (SELF when !children) */
	bool children;		    /* accumulate callees into callers; default true */
	enum hwt_rep_graph graph;   /* default AUTO */
	double percent_limit;	    /* hide entries below this %; default 0 */
	double graph_limit;	    /* hide graph branches below this %; 0.5 */
	size_t max_entries;	    /* 0: all */

	/* flame graphs (SVG, HTML, FOLDED) and pprof */
	const char *title;		    /* default "Flame Graph" / "Differential..." */
	bool icicle;			    /* root at the top */
	bool by_comm;			    /* the command name as the root frame
					     * (stackcollapse-perf's default); true */
	bool annotate;			    /* folded: _[k] _[i] _[j] suffixes; true */
	bool count_samples;		    /* flame graphs and folded stacks count
					     * samples, not their weight (the period:
					     * perf report's event count); default
					     * false */
	unsigned int width;		    /* SVG/HTML width in px; default 1200 */
	double min_width;		    /* px: narrower frames are merged into
					     * their parent in the static layout and
					     * skipped when drawing; default 0.1 */
	const struct hwt_rep_profile *base; /* differential flame graph: the
					     * profile before; same dict not
					     * required */
	bool diff_normalize;		    /* scale base to the same total; true */
	struct hwt_logger log;

	/* TEXT and JSON reports (added later: options grow at the end) */
	bool relative; /* percentages of the samples the comm,
			* pid, tid and object filters kept (perf's
			* --percentage relative); default false:
			* of every sample in the time range, as
			* perf's default (absolute) */
};

HWT_API void hwt_rep_render_config_init(struct hwt_rep_render_config *cfg);

/* Format by file name: .txt TEXT, .folded FOLDED, .svg SVG, .html/.htm
 * HTML, .pb.gz PPROF, .json CHROME (a flame/export command's view: a report
 * command's --json is HWT_REP_FMT_JSON). Returns 0 or -HWT_EINVAL. */
HWT_API int hwt_rep_format_from_path(const char *path, enum hwt_rep_format *format);
/* "text", "json", "folded", "svg", "html", "pprof", "chrome"; "?" else. */
HWT_API const char *hwt_rep_format_name(enum hwt_rep_format format);

/* Renders profile in cfg->format and appends it to out (binary for PPROF).
 * The profile is not changed, except that its dict may gain strings (the
 * root's name, a base profile's names): no id changes, but the dict must
 * not be used by another thread meanwhile.
 * Returns 0, -HWT_EINVAL (bad config, a sort field that cannot key a
 * report), -HWT_ENOTSUP (CHROME: a profile has no time order; use a
 * timeline), -HWT_ELIB (zlib failed), -ENOMEM. */
HWT_API int hwt_rep_render(const struct hwt_rep_profile *profile,
			   const struct hwt_rep_render_config *cfg, struct hwt_buf *out);

/* Renders to a file (created 0644, replaced). Returns as hwt_rep_render(),
 * or -errno from open/write. */
HWT_API int hwt_rep_render_file(const struct hwt_rep_profile *profile,
				const struct hwt_rep_render_config *cfg, const char *path);

/* ------------------------------------------------------------------------ */
/* Timelines: Chrome trace event format (Perfetto, chrome://tracing)         */

struct hwt_rep_timeline;

/* Allocates an empty timeline. Returns 0, -HWT_EINVAL or -ENOMEM. */
HWT_API int hwt_rep_timeline_alloc(struct hwt_rep_timeline **timeline);
/* Accepts NULL. */
HWT_API void hwt_rep_timeline_free(struct hwt_rep_timeline *timeline);

/* Names a thread (the name is copied). Returns 0 or -ENOMEM. */
HWT_API int hwt_rep_timeline_thread(struct hwt_rep_timeline *timeline, int32_t pid, int32_t tid,
				    const char *name);
/* A span [begin_ns, end_ns) on a thread, e.g. one call. Spans of a thread
 * nest by time. name is copied. Returns 0, -HWT_EINVAL (end before begin)
 * or -ENOMEM. */
HWT_API int hwt_rep_timeline_span(struct hwt_rep_timeline *timeline, int32_t pid, int32_t tid,
				  const char *name, uint64_t begin_ns, uint64_t end_ns);
/* An instant event (a sample, a gap in the trace). Returns 0 or -ENOMEM. */
HWT_API int hwt_rep_timeline_instant(struct hwt_rep_timeline *timeline, int32_t pid, int32_t tid,
				     const char *name, uint64_t time_ns);
/* A sampled stack of thread tid at time_ns (frame ids of dict, leaf first),
 * for a chart of samples over time: the frames it shares, from the root,
 * with the thread's previous sample continue that sample's spans; the
 * others end at time_ns and the new ones begin there. A sample stands for
 * period_ns: when the thread's next sample comes more than twice that
 * later (it slept, or ran elsewhere), its spans end at time + period_ns.
 * comm names the thread the first time it is seen (may be NULL). Samples
 * of a thread must come in time order (earlier ones are dropped and
 * counted in the return value of hwt_rep_timeline_flush()). Call
 * hwt_rep_timeline_flush() before rendering. Returns 0, -HWT_EINVAL,
 * -ENOMEM. */
HWT_API int hwt_rep_timeline_stack(struct hwt_rep_timeline *timeline,
				   const struct hwt_rep_dict *dict, int32_t pid, int32_t tid,
				   const char *comm, uint64_t time_ns, uint64_t period_ns,
				   const uint32_t *frame_ids, size_t n);
/* Ends every span still open from hwt_rep_timeline_stack(). Returns the
 * number of samples dropped for coming out of time order, or -ENOMEM. */
HWT_API int64_t hwt_rep_timeline_flush(struct hwt_rep_timeline *timeline);

/* Appends the Chrome trace event JSON ({"traceEvents": [...]}, events in
 * time order, timestamps in microseconds with ns precision) to out.
 * Returns 0 or -ENOMEM. */
HWT_API int hwt_rep_timeline_render(const struct hwt_rep_timeline *timeline, struct hwt_buf *out);

/* ------------------------------------------------------------------------ */
/* Recordings of samples: a session's records to resolved samples           */

/* Reads a recording of samples (a format session over .hwt or perf.data)
 * and turns each PERF_RECORD_SAMPLE into a struct hwt_rep_sample whose
 * frames are dict frame ids: the sideband (MMAP/MMAP2, COMM, FORK, EXIT)
 * feeds a process map (symbolize's hwt_sym_aspace, with the recording's
 * build-ids and vDSO copy), each address of the sampled ip and call chain
 * is found in it, and symbolized. perf's callchain context markers
 * (PERF_CONTEXT_KERNEL, _USER, ...) are not frames: they set the kind of
 * the frames after them. The first frame is where the sample hit; later
 * ones are return addresses, looked up at ip - 1 (the call instruction), so
 * a call that ends its function is named after its caller, not after the
 * next function. LBR call stacks give the user part from branch entries.
 *
 * Every distinct (object, object address) is symbolized once; a second
 * cache over (process, ip) skips even the process-map lookup while no
 * sideband changed a process's mappings. Both are hashed tables: a sample
 * whose addresses were seen before is resolved without allocating.
 *
 * Usage, a profile (what `hwtrace report` and `hwtrace flame` do):
 *
 *   hwt_fmt_session_open(&s, path, &scfg, &off);
 *   struct hwt_rep_samples_config cfg;
 *   hwt_rep_samples_config_init(&cfg);
 *   err = hwt_rep_samples_alloc(&rs, s, hwt_rep_profile_dict(prof), &cfg);
 *   err = hwt_rep_samples_load(rs, prof, NULL, &off);  // the whole session
 *   hwt_rep_samples_free(rs);
 *
 * Usage, record by record (what `hwtrace script` does):
 *
 *   while (hwt_fmt_session_next(s, &rec, &off) == 0) {
 *       struct hwt_rep_sample smp;
 *       if (hwt_rep_samples_record(rs, &rec, &smp) == 1) {
 *           n = hwt_rep_samples_detail(rs, &detail);  // ip, offset per frame
 *           ...
 *       }
 *   }
 */
struct hwt_fmt_session;
struct hwt_fmt_record;
struct hwt_rep_samples;

struct hwt_rep_samples_config {
	size_t size;		/* sizeof(struct hwt_rep_samples_config) */
	bool callchains;	/* the call chain (default true); false: only
				 * the sampled ip (perf report -g none, -G) */
	bool inline_frames;	/* expand inlined functions into frames of kind
				 * INLINED, leafward of the function they are
				 * inlined into (perf --inline). Default false,
				 * as perf report and perf script show them. */
	bool srclines;		/* frames carry file:line (for srcline keys and
				 * pprof lines); default false: frames are
				 * (function, object, kind), so stacks merge
				 * by function as perf's call graphs do */
	unsigned int max_stack; /* frames per sample, leaf side kept; default
				 * 127 (perf's); at most HWT_REP_MAX_DEPTH */
	const char *kallsyms;	/* kernel symbols (kallsyms format); NULL:
				 * /proc/kallsyms when the recording's kernel
				 * release is the running kernel's, else none */
	const char *debug_dir;	/* searched first for separate debug files */
	bool no_cache;		/* resolve every address every time (tests and
				 * benchmarks compare against the caches) */
	struct hwt_logger log;
};

HWT_API void hwt_rep_samples_config_init(struct hwt_rep_samples_config *cfg);

/* Allocates a reader for the samples of session (borrowed: it must outlive
 * the reader; its metadata gives build-ids, the vDSO copy and the kernel
 * release now), interning frames into dict (borrowed, e.g. the profile's).
 * cfg may be NULL; it is copied. Returns 0, -HWT_EINVAL (NULL arguments,
 * cfg refused by hwt_opts_copy, max_stack 0), -ENOMEM. */
HWT_API int hwt_rep_samples_alloc(struct hwt_rep_samples **rs, struct hwt_fmt_session *session,
				  struct hwt_rep_dict *dict,
				  const struct hwt_rep_samples_config *cfg);
/* Accepts NULL. Objects opened stay valid until this call. */
HWT_API void hwt_rep_samples_free(struct hwt_rep_samples *rs);

/* Takes one record of the session (in the session's order). Sideband is
 * fed to the process map, PERF_RECORD_LOST/LOST_SAMPLES counted; a sample
 * is resolved into *sample: event name, weight (the period, or the attr's
 * fixed period), time, pid/tid/cpu, comm (the thread's name at that time;
 * "swapper" for pid 0, NULL when unknown) and frame_ids/nframes, leaf
 * first. Strings and frame ids stay valid until the next call.
 * Returns 1 (a sample in *sample), 0 (anything else), -HWT_EINVAL, -ENOMEM.
 * Allocates only for addresses not seen before. */
HWT_API int hwt_rep_samples_record(struct hwt_rep_samples *rs, const struct hwt_fmt_record *rec,
				   struct hwt_rep_sample *sample);

/* What the last sample's frames were (parallel to its frame_ids). */
struct hwt_rep_sample_frame {
	uint64_t ip;	 /* the address as recorded */
	uint64_t offset; /* ip's offset in its function (sym+offset), when
			  * the frame has a function */
	uint32_t flags;	 /* HWT_REP_SF_* */
};

enum {
	HWT_REP_SF_UNMAPPED = 1u << 0, /* no mapping held ip */
	HWT_REP_SF_NOSYM = 1u << 1,    /* mapped, but no function known */
	HWT_REP_SF_INLINED = 1u << 2,  /* an inlined frame (same ip as the next) */
	/* "[truncated: REASON]": the unwinder stopped before the outermost
	 * frame (code without CFI, the end of the stack copy, ...); ip is
	 * where it stopped */
	HWT_REP_SF_TRUNCATED = 1u << 3,
};

/* The frames of the sample the last hwt_rep_samples_record() returned;
 * valid until the next call. Returns their number. */
HWT_API size_t hwt_rep_samples_detail(const struct hwt_rep_samples *rs,
				      const struct hwt_rep_sample_frame **frames);

struct hwt_rep_samples_stats {
	uint64_t samples;      /* samples resolved */
	uint64_t frames;       /* frames in them */
	uint64_t unmapped;     /* frames no mapping held */
	uint64_t unsymbolized; /* frames mapped, without a function */
	uint64_t lost_records; /* PERF_RECORD_LOST totals */
	uint64_t lost_samples; /* PERF_RECORD_LOST_SAMPLES totals */
	uint64_t bad_records;  /* records the session skipped as malformed */
	uint64_t damaged;      /* chunks skipped as damaged (.hwt) */
	uint64_t resolved;     /* distinct addresses symbolized (cache misses) */
	uint64_t no_callchain; /* samples of events recorded without call chains */
	/* Samples with user registers and stack (--call-graph dwarf) whose
	 * user stack was unwound from the CFI, those that ended before the
	 * outermost frame (with a "[truncated: REASON]" frame), and how many
	 * ended for each reason (enum hwt_unw_end of unwind/unwind.h: 2 no
	 * CFI, 3 end of the stack copy, 4 unmapped, 5 bad CFI, 6 no
	 * registers, 7 object unreadable). */
	uint64_t unwound;
	uint64_t unwind_truncated;
	uint64_t unwind_ends[8];
	/* Samples whose user call chain came from frame pointers, and those
	 * of them with at most two user frames: when most are that short,
	 * the code was built without frame pointers (-O2 omits them) and
	 * --call-graph dwarf is the way to get its stacks. */
	uint64_t fp_user_stacks;
	uint64_t fp_short;
};

HWT_API void hwt_rep_samples_stats(const struct hwt_rep_samples *rs,
				   struct hwt_rep_samples_stats *stats);

/* Reads the rest of the session and adds every sample to profile (whose
 * dict must be the reader's), and, when timeline is not NULL, to it as
 * per-thread stacks over time (hwt_rep_timeline_stack()). Lost samples and
 * records go to hwt_rep_profile_lost(). A damaged .hwt chunk is reported
 * through the logger and skipped.
 * Returns the number of samples read, or -HWT_EFORMAT/-HWT_ETRUNC/...
 * (the session's errors, with the file offset in *err_offset when not
 * NULL), -ENOMEM. */
HWT_API int64_t hwt_rep_samples_load(struct hwt_rep_samples *rs, struct hwt_rep_profile *profile,
				     struct hwt_rep_timeline *timeline, uint64_t *err_offset);

/* Event facts a report needs before reading samples. */
struct hwt_rep_event_info {
	const char *name; /* never NULL */
	bool callchain;	  /* recorded with call chains (-g, LBR or dwarf) */
	bool dwarf;	  /* user registers and stack: --call-graph dwarf */
};

/* Number of events of the session and their facts. Returns the count;
 * fills at most max entries of info. */
HWT_API size_t hwt_rep_samples_events(const struct hwt_rep_samples *rs,
				      struct hwt_rep_event_info *info, size_t max);

#endif /* HWT_REPORT_REPORT_H */
