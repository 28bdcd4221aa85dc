/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/ptsplit.c - per-CPU recordings made from per-thread ones (see
 * ptsplit.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hwt.h"
#include "decoder/decoder.h"
#include "decoder/pkt.h"
#include "tests/lib/ptsplit.h"

int ptsplit_copy(const char *in, const char *out, struct hwt_fmt_session **s,
		 struct hwt_fmt_writer **w, int *swst, uint32_t *pid, uint64_t *start, uint32_t n,
		 uint64_t *last, uint32_t *nstart)
{
	struct hwt_fmt_record rec;
	uint64_t off = 0;
	int sb, err;

	*s = NULL;
	*w = NULL;
	*nstart = 0;
	*last = 0;
	err = hwt_fmt_session_open(s, in, NULL, &off);
	if (err == 0)
		err = hwt_fmt_writer_open(w, out, NULL);
	for (size_t i = 0; err == 0 && i < hwt_fmt_session_nmeta(*s); i++) {
		const struct hwt_fmt_meta *m = hwt_fmt_session_meta(*s, i);

		if (!strcmp(m->key, "pt.config.per_thread"))
			err = hwt_fmt_writer_meta_u64(*w, m->key, 0);
		else if (m->type == HWT_FMT_META_U64)
			err = hwt_fmt_writer_meta_u64(*w, m->key, m->v.u64);
		else if (m->type == HWT_FMT_META_STR)
			err = hwt_fmt_writer_meta_str(*w, m->key, m->v.str);
		else if (m->type == HWT_FMT_META_BYTES)
			err = hwt_fmt_writer_meta_bytes(*w, m->key, m->v.bytes, m->len);
	}
	if (err)
		goto fail;
	sb = hwt_fmt_writer_add_stream(*w, HWT_FMT_STREAM_RECORDS, -1, -1, "sideband");
	*swst = hwt_fmt_writer_add_stream(*w, HWT_FMT_STREAM_RECORDS, -1, -1, "switch");
	if (sb < 0 || *swst < 0) {
		err = sb < 0 ? sb : *swst;
		goto fail;
	}
	while (hwt_fmt_session_next(*s, &rec, &off) == 0) {
		if (rec.type == PERF_RECORD_AUX)
			continue;
		if (rec.type == PERF_RECORD_ITRACE_START && *nstart < n) {
			pid[*nstart] = rec.u.itrace_start.pid;
			start[(*nstart)++] = rec.id.time;
		}
		if (rec.id.time > *last)
			*last = rec.id.time;
		err = hwt_fmt_writer_records(*w, (uint32_t)sb, rec.raw, rec.size);
		if (err)
			goto fail;
	}
	return 0;
fail:
	if (*w)
		hwt_fmt_writer_close(*w);
	hwt_fmt_session_close(*s);
	*s = NULL;
	*w = NULL;
	return err < 0 ? err : -HWT_EINVAL;
}

int ptsplit_switch_in(struct hwt_fmt_writer *w, int swst, uint32_t pid, uint64_t time, uint32_t cpu)
{
	uint8_t r[8 + 8 + 32] = {0};

	/* Header, next_prev pid/tid (the idle task), then the sample_id
	 * trailer: pid, tid, time, cpu, res, id. */
	hwt_put_le32(r, PERF_RECORD_SWITCH_CPU_WIDE);
	hwt_put_le16(r + 6, sizeof(r));
	hwt_put_le32(r + 16, pid);
	hwt_put_le32(r + 20, pid);
	hwt_put_le64(r + 24, time);
	hwt_put_le32(r + 32, cpu);
	hwt_put_le64(r + 40, 1);
	return hwt_fmt_writer_records(w, (uint32_t)swst, r, sizeof(r));
}

static void put_le48(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 6; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The TSC and the FUP's ip (where the thread goes on) of the PSB+ at psb.
 * Returns false when it lacks either. */
static bool psb_plus(const uint8_t *buf, size_t len, size_t psb, uint64_t *tsc, uint64_t *ip)
{
	bool have_tsc = false;
	uint64_t last_ip = 0;

	for (size_t pos = psb; pos < len;) {
		struct hwt_pkt pkt;
		int n = hwt_pkt_decode(buf + pos, len - pos, 0, &pkt);

		if (n <= 0 || pkt.type == HWT_PKT_PSBEND)
			return false;
		if (pkt.type == HWT_PKT_TSC) {
			*tsc = pkt.payload;
			have_tsc = true;
		} else if (pkt.type == HWT_PKT_FUP) {
			*ip = hwt_pkt_ip(&pkt, &last_ip) == 0 ? last_ip : 0;
			return have_tsc && *ip;
		}
		pos += (size_t)n;
	}
	return false;
}

/* FUP(ip), TIP.PGD: tracing stopped asynchronously at ip. */
static size_t preempted(uint8_t *p, uint64_t ip)
{
	p[0] = 0x7d; /* FUP, 6 bytes sign-extended */
	put_le48(p + 1, ip);
	p[7] = 0x01; /* TIP.PGD, ip suppressed */
	return 8;
}

/* TSC, TIP.PGE(ip): tracing goes on at ip, at that time. */
static size_t resumed(uint8_t *p, uint64_t tsc, uint64_t ip)
{
	p[0] = 0x19;
	for (int i = 0; i < 7; i++)
		p[1 + i] = (uint8_t)(tsc >> (8 * i));
	p[8] = 0x71; /* TIP.PGE, 6 bytes sign-extended */
	put_le48(p + 9, ip);
	return 15;
}

static uint64_t meta_u64(const struct hwt_fmt_session *s, const char *key)
{
	const struct hwt_fmt_meta *m = hwt_fmt_session_meta_find(s, key);

	return m && m->type == HWT_FMT_META_U64 ? m->v.u64 : 0;
}

int ptsplit_write(const char *in, const char *out, unsigned int pieces, unsigned int ncpu,
		  char *why, size_t whylen)
{
	struct hwt_fmt_session *s;
	struct hwt_fmt_writer *w;
	struct hwt_dec_tconv tc = {true, 0, 0, 0};
	uint64_t start = 0, last, *tsc = NULL, *ip = NULL, *off = NULL;
	uint32_t pid = 0, nstart;
	size_t len = 0, *cut = NULL;
	uint8_t *buf = NULL;
	int swst, *aux = NULL, err;

	why[0] = 0;
	if (pieces < 2 || ncpu < 2) {
		snprintf(why, whylen, "need at least 2 pieces and 2 CPUs");
		return -HWT_EINVAL;
	}
	err = ptsplit_copy(in, out, &s, &w, &swst, &pid, &start, 1, &last, &nstart);
	if (err) {
		snprintf(why, whylen, "%s: cannot copy to %s: %s", in, out, hwt_strerror(err));
		return err;
	}
	err = -HWT_EINVAL;
	tc.time_shift = (uint16_t)meta_u64(s, "time.shift");
	tc.time_mult = (uint32_t)meta_u64(s, "time.mult");
	tc.time_zero = meta_u64(s, "time.zero");
	if (nstart != 1 || !pid || !tc.time_mult || hwt_fmt_session_naux(s) != 1) {
		snprintf(why, whylen, "%s: not a one-thread recording with time", in);
		goto out;
	}
	for (size_t g = 0; g < hwt_fmt_session_aux(s, 0)->nsegments; g++) {
		const struct hwt_fmt_aux_segment *seg = hwt_fmt_session_aux_segment(s, 0, g);

		if (!seg || seg->aux_offset != len) {
			snprintf(why, whylen, "%s: its PT has holes", in);
			goto out;
		}
		len += (size_t)seg->size;
	}
	buf = malloc(len ? len : 1);
	cut = calloc(pieces + 1, sizeof(*cut));
	tsc = calloc(pieces, sizeof(*tsc));
	ip = calloc(pieces, sizeof(*ip));
	off = calloc(ncpu, sizeof(*off));
	aux = calloc(ncpu, sizeof(*aux));
	if (!buf || !cut || !tsc || !ip || !off || !aux) {
		err = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	for (size_t g = 0, at = 0; g < hwt_fmt_session_aux(s, 0)->nsegments; g++) {
		size_t n = (size_t)hwt_fmt_session_aux_segment(s, 0, g)->size;

		for (size_t from = 0; from < n;) {
			int64_t got =
			    hwt_fmt_session_aux_read(s, 0, g, from, buf + at + from, n - from);

			if (got <= 0) {
				snprintf(why, whylen, "%s: cannot read its PT", in);
				goto out;
			}
			from += (size_t)got;
		}
		at += n;
	}
	cut[pieces] = len;
	for (unsigned int k = 1; k < pieces; k++) {
		cut[k] = hwt_pkt_find_psb(buf, len, (size_t)((uint64_t)len * k / pieces));
		if (cut[k] <= cut[k - 1] || cut[k] >= len ||
		    !psb_plus(buf, len, cut[k], &tsc[k], &ip[k])) {
			snprintf(why, whylen, "%s: no PSB+ with a TSC and a FUP to cut at near %zu",
				 in, (size_t)((uint64_t)len * k / pieces));
			goto out;
		}
	}
	/* Who runs where: the thread from its start, then at each cut the
	 * idle task on the CPU it leaves and the thread on the next. */
	err = ptsplit_switch_in(w, swst, pid, start, 0);
	for (unsigned int k = 1; k < pieces && !err; k++) {
		uint64_t t = hwt_dec_tsc_to_perf(&tc, tsc[k]);

		err = ptsplit_switch_in(w, swst, 0, t, (k - 1) % ncpu);
		if (!err)
			err = ptsplit_switch_in(w, swst, pid, t, k % ncpu);
	}
	for (unsigned int c = 0; c < ncpu && c < pieces && !err; c++) {
		aux[c] = hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_AUX, (int32_t)c, -1, "pt.cpu");
		if (aux[c] < 0)
			err = aux[c];
	}
	for (unsigned int k = 0; k < pieces && !err; k++) {
		unsigned int c = k % ncpu;
		uint8_t pkt[16];
		size_t n;

		if (k >= ncpu) {
			/* Back on this CPU. */
			n = resumed(pkt, tsc[k], ip[k]);
			err = hwt_fmt_writer_aux(w, (uint32_t)aux[c], off[c], pkt, n);
			off[c] += n;
		}
		if (!err)
			err = hwt_fmt_writer_aux(w, (uint32_t)aux[c], off[c], buf + cut[k],
						 cut[k + 1] - cut[k]);
		off[c] += cut[k + 1] - cut[k];
		if (!err && k + 1 < pieces) {
			n = preempted(pkt, ip[k + 1]);
			err = hwt_fmt_writer_aux(w, (uint32_t)aux[c], off[c], pkt, n);
			off[c] += n;
		}
	}
	if (err)
		snprintf(why, whylen, "%s: cannot write: %s", out, hwt_strerror(err));
out:
	if (hwt_fmt_writer_close(w) && !err) {
		err = -EIO;
		snprintf(why, whylen, "%s: cannot write", out);
	}
	hwt_fmt_session_close(s);
	free(buf);
	free(cut);
	free(tsc);
	free(ip);
	free(off);
	free(aux);
	return err;
}
