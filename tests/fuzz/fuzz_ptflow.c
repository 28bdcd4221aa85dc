/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_ptflow.c - the exact-report consumer (ptflow/) on
 * arbitrary record sequences: bytes become decoder records of three
 * threads (any type, flags, depth jumps, running instruction counts that
 * may go backwards, times). Whatever comes, every view must finish and
 * print, and the profile must hold exactly the instructions attributed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptflow/ptflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_rep_profile *prof = NULL;
	struct hwt_rep_timeline *tl = NULL;
	struct hwt_ptf_config cfg;
	struct hwt_ptf_stats st;
	struct hwt_ptf *ptf = NULL;
	struct hwt_buf out;
	uint64_t insns[3] = {0, 0, 0}, time = 0;

	if (hwt_rep_profile_alloc(&prof, NULL) < 0 || hwt_rep_timeline_alloc(&tl) < 0)
		abort();
	hwt_ptf_config_init(&cfg);
	cfg.views = HWT_PTF_PROFILE | HWT_PTF_CALLS | HWT_PTF_TIMELINE | HWT_PTF_BRANCHES;
	cfg.profile = prof;
	cfg.timeline = tl;
	cfg.timeline_min = size ? data[0] : 0;
	cfg.timeline_max = 64;
	cfg.branch_func = "0x1010";
	if (hwt_ptf_alloc(&ptf, &cfg) < 0)
		abort();
	for (size_t i = 0; i + 8 <= size; i += 8) {
		const uint8_t *b = data + i;
		struct hwt_dec_rec r;
		int t = b[1] % 3;

		memset(&r, 0, sizeof(r));
		r.type = 1 + b[0] % 7;
		r.flags = (uint32_t)b[2] << 2; /* RF_TRUNCATED .. RF_UNWOUND */
		r.pid = 1;
		r.tid = 100 + t;
		r.depth = b[3] == 0xff ? 0xffffffffu : b[3] % 40;
		if (b[4] & 0x80)
			insns[t] -= insns[t] > 3 ? 3 : insns[t];
		else
			insns[t] += b[4];
		r.insns = insns[t];
		time += b[5];
		if (b[5] & 1) {
			r.flags |= HWT_DEC_RF_TIME;
			r.time = time;
		}
		r.u.block.ip = 0x1000 + (uint64_t)(b[6] | b[7] << 8) % 64 * 16;
		r.u.block.ninsn = b[4] & 0x7f;
		r.u.block.end_ip = r.u.block.ip + r.u.block.ninsn;
		r.u.block.branch = b[7] % 8;
		r.u.block.next_ip = r.u.block.ip + 32;
		/* CALL/RETURN share the union's first words: call.to and
		 * ret.to follow from/to layouts; set them explicitly. */
		if (r.type == HWT_DEC_REC_CALL) {
			memset(&r.u, 0, sizeof(r.u));
			r.u.call.to = 0x1000 + (uint64_t)b[6] % 8 * 16;
		} else if (r.type == HWT_DEC_REC_RETURN) {
			memset(&r.u, 0, sizeof(r.u));
			r.u.ret.to = 0x2000 + (uint64_t)b[6] % 8;
		} else if (r.type != HWT_DEC_REC_BLOCK) {
			memset(&r.u, 0, sizeof(r.u));
		}
		if (hwt_ptf_rec(ptf, &r) < 0)
			abort();
	}
	if (hwt_ptf_finish(ptf) < 0)
		abort();
	hwt_ptf_stats(ptf, &st);
	if (hwt_rep_profile_stats(prof)->weight != st.insns)
		abort();
	if (st.spans > 64)
		abort();
	hwt_buf_init(&out);
	if (hwt_ptf_calls_print(ptf, HWT_REP_FMT_TEXT, HWT_PTF_PRINT_HIST | HWT_PTF_PRINT_ALL, 0,
				&out) < 0 ||
	    hwt_ptf_calls_print(ptf, HWT_REP_FMT_JSON, 0, 0, &out) < 0 ||
	    hwt_rep_timeline_render(tl, &out) < 0)
		abort();
	hwt_buf_fini(&out);
	hwt_ptf_free(ptf);
	hwt_rep_timeline_free(tl);
	hwt_rep_profile_free(prof);
	return 0;
}
