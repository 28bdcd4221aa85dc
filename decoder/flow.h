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
/* Trace was lost: stacks of the current thread become uncertain. */
void hwt_dec_flow_gap(struct hwt_dec_flow *flow);
void hwt_dec_flow_stats(const struct hwt_dec_flow *flow, struct hwt_dec_stats *stats);

struct seg;
/* Folds caches into the profile (after each decode call). */
int hwt_dec_flow_finish(struct hwt_dec_flow *flow);
/* Replays a decoded segment into stacks, the profile and records. */
int hwt_dec_flow_replay(struct hwt_dec_flow *flow, struct seg *s);

/* Splits buf at PSBs and decodes the segments with the canonical engines. */
int hwt_dec_run_segments(struct hwt_dec *dec, const uint8_t *buf, size_t len);

#endif
