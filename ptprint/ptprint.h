/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptprint/ptprint.h - decoded Intel PT records as text: the whole contract of
 * the ptprint module. `hwtrace script` prints a recording's flow (through
 * ptsession) and a raw trace's (`script --pt`, straight from the decoder)
 * with it, so both read the same.
 *
 * Formats:
 *   VIEWS    perf script's: --itrace letters (i instructions, b taken
 *            branches, c calls, r returns, e errors and gaps, v trace
 *            events and thread switches), one line per item,
 *              COMM PID/TID TIME: insn: ADDR SYM
 *              COMM PID/TID TIME: branch: ADDR SYM => ADDR SYM jcc
 *            or, with flow, the calls and returns indented by call depth
 *            with each frame's duration and instructions (perf script
 *            --call-trace, magic-trace). SYM is "func+0xOFF (object)" when
 *            the caller symbolizes, and left out when it does not (a raw
 *            trace); COMM when the caller names threads.
 *   PTXED    libipt's ptxed, byte for byte (its options as HWT_PTP_X_*).
 *   RECORDS  every record with every field, one line each (comparing
 *            engines, tests).
 *
 * Every engine's blocks print the same instructions: blocks are expanded
 * with hwt_dec_block_insns(). Times are the perf clock with a valid TSC
 * conversion (seconds.microseconds, or .nanoseconds), TSC values without;
 * durations likewise ("12 ns", "1.250 us", ..., or "N tsc").
 *
 * Usage:
 *
 *   hwt_ptp_config_init(&cfg);
 *   cfg.views = HWT_PTP_CALL | HWT_PTP_ERROR;  cfg.tconv = ...;
 *   cfg.write = my_write;  cfg.symbolize = my_sym;  cfg.ctx = me;
 *   hwt_ptp_alloc(&ptp, &cfg);
 *   hwt_ptp_sink(ptp, &sink);  hwt_dec_add_sink(dec, &sink);
 *   ... decode ...               // or call hwt_ptp_print() per record
 *   err = hwt_ptp_flush(ptp);
 *   hwt_ptp_free(ptp);
 *
 * Output goes through the caller's write callback in pieces of up to 64 KiB
 * (the library prints nothing itself). One object is used by one thread at
 * a time, in record order. No globals.
 */
#ifndef HWT_PTPRINT_PTPRINT_H
#define HWT_PTPRINT_PTPRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hwt.h"
#include "decoder/decoder.h"

enum hwt_ptp_format {
	HWT_PTP_VIEWS = 0,
	HWT_PTP_PTXED = 1,
	HWT_PTP_RECORDS = 2,
};

/* Views (VIEWS format): perf's --itrace letters. */
#define HWT_PTP_INSN   (1u << 0) /* i */
#define HWT_PTP_BRANCH (1u << 1) /* b: taken branches */
#define HWT_PTP_CALL   (1u << 2) /* c */
#define HWT_PTP_RETURN (1u << 3) /* r */
#define HWT_PTP_ERROR  (1u << 4) /* e: decode errors and trace gaps */
#define HWT_PTP_EVENT  (1u << 5) /* v: trace events, thread switches */

/* ptxed's output options (PTXED format). */
#define HWT_PTP_X_NO_INST     (1u << 0) /* --no-inst: addresses only */
#define HWT_PTP_X_QUIET	      (1u << 1) /* --quiet: sideband notes only */
#define HWT_PTP_X_OFFSET      (1u << 2) /* --offset */
#define HWT_PTP_X_TIME	      (1u << 3) /* --time */
#define HWT_PTP_X_RAW_INSN    (1u << 4) /* --raw-insn */
#define HWT_PTP_X_EVENT_TIME  (1u << 5) /* --event:time */
#define HWT_PTP_X_EVENT_IP    (1u << 6) /* --event:ip */
#define HWT_PTP_X_SHOW_BLOCKS (1u << 7) /* --block:show-blocks */
#define HWT_PTP_X_BLOCK_NUM   (1u << 8) /* number the [block] lines (--stat) */

/* A symbol as the caller's symbolizer gives it. */
struct hwt_ptp_sym {
	const char *function; /* never NULL on success */
	uint64_t offset;      /* ip - function's start */
	const char *object;   /* may be NULL */
};

struct hwt_ptp_config {
	size_t size;	 /* sizeof(struct hwt_ptp_config) */
	uint32_t format; /* enum hwt_ptp_format */
	uint32_t views;	 /* VIEWS: HWT_PTP_* bits */
	bool flow;	 /* VIEWS: calls and returns by depth instead */
	bool ns;	 /* VIEWS: times with nanoseconds */
	uint32_t ptxed;	 /* PTXED: HWT_PTP_X_* bits */
	struct hwt_dec_tconv tconv;
	/* Output (required): returns 0 or a negative error, which stops
	 * printing and is returned by the call that flushed. */
	int (*write)(void *ctx, const char *text, size_t len);
	/* Optional. Symbolizes ip of process pid at time: 0, or negative
	 * when unknown (the object may still be set). NULL: addresses only. */
	int (*symbolize)(void *ctx, int32_t pid, uint64_t time, uint64_t ip,
			 struct hwt_ptp_sym *sym);
	/* Optional. The command name of thread tid at time (NULL: unknown).
	 * When set, VIEWS lines begin with it. */
	const char *(*comm)(void *ctx, int32_t tid, uint64_t time);
	/* Optional. Appends the text of the sideband note with this cookie
	 * (a HWT_DEC_REC_NOTE record) to out; every format prints it in
	 * place. Returns 0 or a negative error. */
	int (*note)(void *ctx, uint64_t cookie, struct hwt_buf *out);
	void *ctx; /* passed to the callbacks */
};

struct hwt_ptp;

/* Zeroes cfg and sets its size. */
HWT_API void hwt_ptp_config_init(struct hwt_ptp_config *cfg);

/* Parses perf's --itrace letters (any of "ibcrev") into HWT_PTP_* bits.
 * Returns 0, or -HWT_EINVAL for another letter. */
HWT_API int hwt_ptp_parse_itrace(const char *letters, uint32_t *views);

/* Allocates a printer. cfg is copied (an older, smaller config is
 * accepted; bytes of a newer, larger one beyond ours must be zero).
 * Returns 0, -HWT_EINVAL (no write callback, unknown format or bits, a
 * config too small or with unknown non-zero bytes) or -ENOMEM. */
HWT_API int hwt_ptp_alloc(struct hwt_ptp **ptp, const struct hwt_ptp_config *cfg);
/* Frees the printer (without flushing). Accepts NULL. */
HWT_API void hwt_ptp_free(struct hwt_ptp *ptp);

/* Fills *sink with the printer as a decoder sink, wanting only the records
 * its format and views print. */
HWT_API void hwt_ptp_sink(struct hwt_ptp *ptp, struct hwt_dec_sink *sink);
/* The records the printer wants (HWT_DEC_WANT bits). */
HWT_API uint32_t hwt_ptp_want(const struct hwt_ptp *ptp);
/* Prints one record (the sink's callback; for callers that filter
 * records first). Returns 0 or the write callback's or a note's error, or
 * -ENOMEM. */
HWT_API int hwt_ptp_print(struct hwt_ptp *ptp, const struct hwt_dec_rec *rec);
/* Hands what is buffered to the write callback. Returns 0 or its error. */
HWT_API int hwt_ptp_flush(struct hwt_ptp *ptp);

#endif /* HWT_PTPRINT_PTPRINT_H */
