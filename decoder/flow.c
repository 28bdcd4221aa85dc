/* temporary */
#include <stdlib.h>
#include "decoder/flow.h"
struct hwt_dec_flow { int x; };
int hwt_dec_flow_alloc(struct hwt_dec *dec, struct hwt_dec_flow **flow) { (void)dec; *flow = calloc(1, sizeof(**flow)); return *flow ? 0 : -1; }
void hwt_dec_flow_free(struct hwt_dec_flow *flow) { free(flow); }
void hwt_dec_flow_gap(struct hwt_dec_flow *flow) { (void)flow; }
void hwt_dec_flow_stats(const struct hwt_dec_flow *flow, struct hwt_dec_stats *stats) { (void)flow; (void)stats; }
int hwt_dec_run_segments(struct hwt_dec *dec, const uint8_t *buf, size_t len) { return hwt_dec_run_ptxed(dec, buf, len); }
int hwt_dec_profile_next(const struct hwt_dec *dec, size_t *iter, struct hwt_dec_bb_count *out) { (void)dec; (void)iter; (void)out; return 0; }
size_t hwt_dec_profile_targets(const struct hwt_dec *dec, uint64_t from, struct hwt_dec_target_count *out, size_t n) { (void)dec; (void)from; (void)out; (void)n; return 0; }
