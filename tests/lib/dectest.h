/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/dectest.h - helpers for the decoder's tests and fuzz harness:
 * decode a PT buffer over a code image in memory with a given engine and
 * thread count, and serialise every record (every field) into text, so
 * that two decodes compare with one strcmp.
 */
#ifndef HWT_TESTS_DECTEST_H
#define HWT_TESTS_DECTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decoder/decoder.h"

/* Sanitizer and unoptimized builds run the tests on smaller workloads
 * (the same code paths, a fraction of the data). */
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
#define DECTEST_SCALE 5
#else
#define DECTEST_SCALE 1
#endif

struct dectest_opts {
	uint32_t engine; /* enum hwt_dec_engine */
	unsigned int threads;
	size_t window;	      /* 0: default */
	size_t segment_bytes; /* 0: default */
	uint32_t flags;	      /* HWT_DEC_F_* */
	struct hwt_dec_cpu cpu;
	uint32_t cpuid_0x15_eax, cpuid_0x15_ebx;
	uint8_t mtc_freq, nom_freq;
	struct hwt_dec_addr_filter filter;
	size_t piece;	/* >0: feed the stream in pieces of this
			 * many bytes (hwt_dec_decode per piece) */
	bool no_text;	/* count only, no serialisation */
	bool no_blocks; /* the sink does not want BLOCK records
			 * (the decoder then logs only what call
			 * stacks and the profile need) */
	bool no_events; /* ... nor EVENT records (the fast engine then
			 * counts PSB+ status updates, not logs them) */
	bool recs;	/* the sink also takes runs of records
			 * (struct hwt_dec_sink.recs) */
	/* NULL: the code in an icache of its own. Else the code is not used
	 * but image, of icache, with whatever was decoded on it before. */
	struct hwt_dec_icache *icache;
	struct hwt_dec_image *image;
	/* A sideband hook (hwt_dec_config.context, with its companion). */
	hwt_dec_context_fn context;
	hwt_dec_context_span_fn context_span;
	void *context_ctx;
};

struct dectest_result {
	int err;    /* hwt_dec_decode's result */
	char *text; /* serialised records (NUL-terminated) */
	size_t len;
	struct hwt_dec_stats stats;
	uint64_t nrec[8];	/* records by type */
	uint64_t block_insns;	/* sum of block records' ninsn */
	uint64_t taken;		/* profile: taken conditional branches */
	uint64_t not_taken;	/* profile: not-taken conditional branches */
	uint64_t profile_insns; /* profile: instructions counted */
	uint64_t max_depth;
	uint64_t unwound;      /* RETURN records with HWT_DEC_RF_UNWOUND */
	uint64_t stray_cpu;    /* records without HWT_DEC_RF_CPU whose cpu is
				* not 0 (the decoder alone sets neither) */
	uint64_t ind_targets;  /* profile: sum of the indirect jump/call
				* target histograms */
	uint64_t ind_distinct; /* ... distinct (from, target) pairs */
	uint64_t profile_hash; /* every block's counts and every target
				* count, independent of block ids */
};

void dectest_opts_init(struct dectest_opts *o);

/* Decodes pt (len bytes) with code (code_size bytes) mapped at base.
 * Returns 0 (result filled; free with dectest_result_free) or a negative
 * error from setting up (not from decoding: that is res->err). */
int dectest_decode(const struct dectest_opts *o, const uint8_t *code, size_t code_size,
		   uint64_t base, const uint8_t *pt, size_t len, struct dectest_result *res);
void dectest_result_free(struct dectest_result *res);

/* Appends one record's text line to a growable buffer. */
struct dectest_buf {
	char *p;
	size_t len, cap;
};
void dectest_rec_text(struct dectest_buf *b, const struct hwt_dec_rec *rec);

#endif
