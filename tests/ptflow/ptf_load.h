/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/ptflow/ptf_load.h - decoding an emulated PT recording for the
 * ptflow tests without the session layer: the recording's sideband (MMAP2,
 * COMM, FORK) builds one code image and the symbolization address space,
 * its metadata the decoder configuration, and each AUX stream is decoded
 * with its thread as the context. Enough for single-process test programs
 * whose flow the tests know; header-only so each test stays one file.
 */
#ifndef HWT_TESTS_PTF_LOAD_H
#define HWT_TESTS_PTF_LOAD_H

#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "decoder/decoder.h"
#include "format/format.h"
#include "ptflow/ptflow.h"
#include "symbolize/symbolize.h"
#include "tests/lib/testutil.h"

struct ptl {
	struct hwt_fmt_session *s;
	struct hwt_sym_cache *cache;
	struct hwt_sym_aspace *as;
	struct hwt_dec_icache *ic;
	struct hwt_dec_image *img;
	struct hwt_dec_config cfg;
	int32_t pid;
	size_t nmmap;
};

/* Records prog (argv in args, may be "") with the emulator into
 * dir/name.hwt; fails the test when recording fails. */
static inline void ptl_record(const char *dir, const char *name, const char *terms,
			      const char *prog, const char *args, char *path, size_t size)
{
	struct hwt_test_run r;

	snprintf(path, size, "%s/%s.hwt", dir, name);
	hwt_test_run(&r, "%s record --pt=emulate%s%s -o %s -- %s %s", hwt_test_hwtrace(),
		     terms && *terms ? "," : "", terms ? terms : "", path, prog, args);
	if (r.status != 0)
		fprintf(stderr, "record failed (%d): %s\n", r.status, r.err);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
}

static inline uint64_t ptl_meta_u64(const struct ptl *l, const char *key, uint64_t def)
{
	const struct hwt_fmt_meta *m = hwt_fmt_session_meta_find(l->s, key);

	return m && m->type == HWT_FMT_META_U64 ? m->v.u64 : def;
}

static inline void ptl_open(struct ptl *l, const char *path)
{
	struct hwt_sym_aspace_config ac;
	struct hwt_fmt_record rec;
	uint64_t off = 0;
	int err;

	memset(l, 0, sizeof(*l));
	l->pid = -1;
	assert_int_equal(hwt_fmt_session_open(&l->s, path, NULL, &off), 0);
	assert_int_equal(hwt_sym_cache_alloc(NULL, &l->cache), 0);
	hwt_sym_aspace_config_init(&ac);
	ac.cache = l->cache;
	assert_int_equal(hwt_sym_aspace_alloc(&ac, &l->as), 0);
	assert_int_equal(hwt_dec_icache_alloc(&l->ic, NULL), 0);
	assert_int_equal(hwt_dec_image_alloc(&l->img, l->ic, "test"), 0);
	while ((err = hwt_fmt_session_next(l->s, &rec, &off)) == 0) {
		uint64_t t = (rec.id.present & PERF_SAMPLE_TIME) ? rec.id.time : 0;

		if (rec.type == PERF_RECORD_MMAP2) {
			struct hwt_fmt_mmap m;

			assert_int_equal(hwt_fmt_mmap_get(&rec, &m), 0);
			assert_int_equal(hwt_sym_aspace_mmap(l->as,
							     &(struct hwt_sym_mmap_event){
								 m.pid, m.tid, m.time, m.start,
								 m.len, m.pgoff, m.prot, m.filename,
								 m.build_id, m.build_id_len}),
					 0);
			if ((m.prot & PROT_EXEC) && m.filename[0] == '/' &&
			    hwt_dec_image_add_file(l->img, m.filename, m.pgoff, m.len, m.start) ==
				0)
				l->nmmap++;
			l->pid = (int32_t)m.pid;
		} else if (rec.type == PERF_RECORD_COMM) {
			struct hwt_sym_comm_event ev = {
			    .pid = rec.u.comm.pid,
			    .tid = rec.u.comm.tid,
			    .time = t,
			    .comm = rec.u.comm.comm,
			    .exec = (rec.misc & PERF_RECORD_MISC_COMM_EXEC) != 0,
			};

			assert_int_equal(hwt_sym_aspace_comm(l->as, &ev), 0);
			l->pid = (int32_t)rec.u.comm.pid;
		} else if (rec.type == PERF_RECORD_FORK) {
			struct hwt_sym_task_event ev = {
			    .pid = rec.u.fork.pid,
			    .ppid = rec.u.fork.ppid,
			    .tid = rec.u.fork.tid,
			    .ptid = rec.u.fork.ptid,
			    .time = t,
			};

			assert_int_equal(hwt_sym_aspace_fork(l->as, &ev), 0);
		}
	}
	assert_int_equal(err, -HWT_EEOS);
	assert_true(l->nmmap > 0);
	hwt_dec_config_init(&l->cfg);
	l->cfg.cpu.vendor = HWT_DEC_CPU_INTEL;
	l->cfg.cpu.family = (uint16_t)ptl_meta_u64(l, "pt.config.cpu.family", 6);
	l->cfg.cpu.model = (uint8_t)ptl_meta_u64(l, "pt.config.cpu.model", 0);
	l->cfg.cpu.stepping = (uint8_t)ptl_meta_u64(l, "pt.config.cpu.stepping", 0);
	l->cfg.cpuid_0x15_eax = (uint32_t)ptl_meta_u64(l, "pt.config.cpuid_0x15_eax", 0);
	l->cfg.cpuid_0x15_ebx = (uint32_t)ptl_meta_u64(l, "pt.config.cpuid_0x15_ebx", 0);
	l->cfg.mtc_freq = (uint8_t)ptl_meta_u64(l, "pt.config.mtc_freq", 0);
	l->cfg.nom_freq = (uint8_t)ptl_meta_u64(l, "pt.config.nom_freq", 0);
	if (ptl_meta_u64(l, "time.mult", 0)) {
		l->cfg.tconv.valid = true;
		l->cfg.tconv.time_shift = (uint16_t)ptl_meta_u64(l, "time.shift", 0);
		l->cfg.tconv.time_mult = (uint32_t)ptl_meta_u64(l, "time.mult", 0);
		l->cfg.tconv.time_zero = ptl_meta_u64(l, "time.zero", 0);
	}
}

/* Decodes every AUX stream of l into sink (engine: enum hwt_dec_engine;
 * flags: the decoder's, with l's). */
static inline void ptl_decode_sink(struct ptl *l, const struct hwt_dec_sink *sink, uint32_t engine,
				   uint32_t flags)
{
	for (size_t i = 0; i < hwt_fmt_session_naux(l->s); i++) {
		const struct hwt_fmt_aux_stream *as = hwt_fmt_session_aux(l->s, i);
		struct hwt_dec_config cfg = l->cfg;
		struct hwt_dec *dec;

		cfg.engine = engine;
		cfg.flags |= flags;
		assert_int_equal(hwt_dec_alloc(&dec, &cfg, l->ic), 0);
		assert_int_equal(hwt_dec_set_context(dec, l->pid, as->tid, l->img), 0);
		assert_int_equal(hwt_dec_add_sink(dec, sink), 0);
		for (size_t k = 0; k < as->nsegments; k++) {
			const struct hwt_fmt_aux_segment *seg =
			    hwt_fmt_session_aux_segment(l->s, i, k);
			uint8_t *buf = malloc(seg->size ? seg->size : 1);

			assert_non_null(buf);
			assert_int_equal(hwt_fmt_session_aux_read(l->s, i, k, 0, buf, seg->size),
					 (int64_t)seg->size);
			if (k)
				assert_int_equal(hwt_dec_lost(dec, 0), 0);
			assert_int_equal(hwt_dec_feed(dec, buf, seg->size), 0);
			free(buf);
		}
		assert_int_equal(hwt_dec_finish(dec), 0);
		hwt_dec_free(dec);
	}
}

/* Decodes the recording into ptf; with no_tree, the sink takes batches but
 * not the decoder's call tree (struct hwt_dec_sink.tree). */
static inline void ptl_decode_opt(struct ptl *l, struct hwt_ptf *ptf, uint32_t engine, bool no_tree)
{
	struct hwt_dec_sink sink;

	hwt_ptf_sink(ptf, &sink);
	if (no_tree)
		sink.tree = NULL;
	ptl_decode_sink(l, &sink, engine, 0);
}

static inline void ptl_decode(struct ptl *l, struct hwt_ptf *ptf, uint32_t engine)
{
	ptl_decode_opt(l, ptf, engine, false);
}

static inline void ptl_close(struct ptl *l)
{
	hwt_dec_image_put(l->img);
	hwt_dec_icache_free(l->ic);
	hwt_sym_aspace_free(l->as);
	hwt_sym_cache_free(l->cache);
	hwt_fmt_session_close(l->s);
}

#endif
