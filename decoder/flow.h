/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/flow.h - phase 2 of decoding (internal): segment logs from the
 * engines are replayed in stream order into per-thread call stacks, the
 * profile and records for the sinks.
 */
#ifndef HWT_DECODER_FLOW_H
#define HWT_DECODER_FLOW_H

#include "decoder/dec_int.h"

int hwt_dec_flow_alloc(struct hwt_dec *dec, struct hwt_dec_flow **flow);
void hwt_dec_flow_free(struct hwt_dec_flow *flow);
/* A record goes to the sinks from outside a segment's replay: the thread
 * in tree mode leaves it (the sink may change its stack). */
void hwt_dec_flow_leave_tree(struct hwt_dec_flow *flow);
/* Trace was lost: stacks of the current thread become uncertain. */
void hwt_dec_flow_gap(struct hwt_dec_flow *flow);
void hwt_dec_flow_stats(const struct hwt_dec_flow *flow, struct hwt_dec_stats *stats);

struct seg;
/* Folds caches into the profile (after each decode call). */
int hwt_dec_flow_finish(struct hwt_dec_flow *flow);
/* Adds a block's counts to the profile (a run's, eng_fast.c: kept across
 * segments, folded on the replaying thread). */
int hwt_dec_flow_add_counts(struct hwt_dec_flow *flow, uint32_t id, uint64_t count, uint64_t taken);
/* Replays a decoded segment into stacks, the profile and records. */
int hwt_dec_flow_replay(struct hwt_dec_flow *flow, struct seg *s);
/* Whether the replay of a segment whose log is only the context ctx (with
 * no note) would change nothing but the statistics ... */
bool hwt_dec_flow_in_ctx(const struct hwt_dec_flow *flow, const struct hwt_dec_context *ctx);
/* ... which this counts, as that replay would. */
void hwt_dec_flow_count(struct hwt_dec_flow *flow, const struct seg *s);
/* ... for n PSB+ repeats like s (run.c psb_again(): no instructions,
 * blocks, gaps or fallback). */
void hwt_dec_flow_count_psb_again(struct hwt_dec_flow *flow, const struct seg *s, uint64_t n);

/* Splits buf (at stream offset dec->base_pos) at PSBs and decodes the
 * segments with the canonical engines: all of them when final; else those
 * whose end and following PSB+ are in buf, and *keep receives where the
 * rest begins (a PSB, or len - 15 when no PSB was found: a PSB may begin
 * in its last bytes). Bytes before the first PSB are reported as a gap. */
int hwt_dec_run_segments(struct hwt_dec *dec, const uint8_t *buf, size_t len, bool final,
			 size_t *keep);

#endif
