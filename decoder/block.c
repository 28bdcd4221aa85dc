/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/block.c - the instructions of a block record, whatever engine
 * made it: the one place that turns a block into instruction addresses, so
 * that every consumer (script's views, the ptxed printer, ptflow's
 * per-instruction statistics, pt: probes on instructions) sees the same
 * instructions.
 *
 * The canonical engines (FAST, LIBIPT) deliver cached basic blocks, which
 * know their instructions. The PTXED engine delivers libipt's blocks, which
 * run on across direct calls and jumps (intel-pt.h: "Users are expected to
 * follow direct branches"): a libipt block ends at every instruction whose
 * successor needs trace (a conditional or indirect branch, a return, a far
 * transfer), so within it each instruction's successor is the target of a
 * direct near call or jump, and the next instruction otherwise. That is
 * ptxed's own rule for printing a block.
 */
#include <limits.h>

#include "decoder/decoder.h"

int hwt_dec_block_insns(const struct hwt_dec_rec *rec, uint64_t *ips, size_t n)
{
	size_t want, k;
	uint64_t ip;

	if (!rec || rec->type != HWT_DEC_REC_BLOCK || (!ips && n))
		return -HWT_EINVAL;
	want = rec->u.block.ninsn < n ? rec->u.block.ninsn : n;
	if (want > INT_MAX)
		want = INT_MAX;
	if (rec->u.block.bb)
		return (int)hwt_dec_bb_insns(rec->u.block.bb, ips, want);
	ip = rec->u.block.ip;
	for (k = 0; k < want; k++) {
		struct hwt_dec_insn insn;

		ips[k] = ip;
		if (k + 1 == want)
			break;
		/* The code is gone or not an instruction: the walk stops
		 * at the instruction it cannot read. */
		if (!rec->u.block.image ||
		    hwt_dec_insn_decode(rec->u.block.image, ip,
					(enum hwt_dec_mode)rec->u.block.mode, &insn) < 0)
			return (int)(k + 1);
		if ((insn.branch == HWT_DEC_BR_CALL || insn.branch == HWT_DEC_BR_JUMP) &&
		    insn.has_target)
			ip = insn.target;
		else
			ip += insn.size;
	}
	return (int)want;
}
