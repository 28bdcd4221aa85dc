/* placeholder for the fast engine */
#include <stdlib.h>
#include "decoder/seg.h"
int hwt_dec_seg_fast(struct hwt_dec *dec, struct seg *s, void *scratch) { (void)dec; (void)s; (void)scratch; return -HWT_ENOTSUP; }
int hwt_dec_fast_scratch_alloc(void **scratch) { *scratch = malloc(1); return *scratch ? 0 : -1; }
void hwt_dec_fast_scratch_free(void *scratch) { free(scratch); }
