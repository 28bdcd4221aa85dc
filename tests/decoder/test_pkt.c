/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/decoder/test_pkt.c - the decoder's own packet parser (decoder/pkt.c)
 * against libipt's packet decoder, packet by packet: at every offset of
 * every conformance trace, of synthetic traces and of random bytes, both
 * must accept the same packets with the same sizes and payloads and reject
 * the same bytes; and the packet sequence of every conformance trace must
 * be what libipt's ptdump printed (its .exp files).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hwt.h"
#include "decoder/pkt.h"
#include "tests/lib/ptsynth.h"
#include "tests/lib/testutil.h"

static uint64_t ncompared;

/* Compares one packet. Returns our size (> 0), or 0 when both reject. */
static int compare_at(struct pt_packet_decoder *pd, const uint8_t *buf, size_t len, size_t off,
		      int skz84)
{
	struct pt_packet lp;
	struct hwt_pkt p;
	int lr, r;

	assert_int_equal(pt_pkt_sync_set(pd, off), 0);
	lr = pt_pkt_next(pd, &lp, sizeof(lp));
	r = hwt_pkt_decode(buf + off, len - off, skz84, &p);
	ncompared++;
	if (lr == -pte_eos) {
		if (r != 0)
			fprintf(stderr, "offset %zx: libipt: truncated, ours: %d (type %u)\n", off,
				r, p.type);
		assert_int_equal(r, 0);
		return 0;
	}
	if (lr < 0) {
		if (r != -1)
			fprintf(stderr, "offset %zx (%02x %02x): libipt: %s, ours: %d (type %u)\n",
				off, buf[off], off + 1 < len ? buf[off + 1] : 0,
				pt_errstr(pt_errcode(lr)), r, p.type);
		assert_int_equal(r, -HWT_EFORMAT);
		return 0;
	}
	if (r != lr)
		fprintf(stderr, "offset %zx (%02x %02x): libipt: type %d size %d, ours: %d\n", off,
			buf[off], off + 1 < len ? buf[off + 1] : 0, lp.type, lr, r);
	assert_int_equal(r, lr);
	assert_int_equal(p.size, lp.size);
	switch (lp.type) {
	case ppt_pad:
		assert_int_equal(p.type, HWT_PKT_PAD);
		break;
	case ppt_psb:
		assert_int_equal(p.type, HWT_PKT_PSB);
		break;
	case ppt_psbend:
		assert_int_equal(p.type, HWT_PKT_PSBEND);
		break;
	case ppt_ovf:
		assert_int_equal(p.type, HWT_PKT_OVF);
		break;
	case ppt_stop:
		assert_int_equal(p.type, HWT_PKT_STOP);
		break;
	case ppt_fup:
	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd:
		assert_int_equal(p.type, lp.type == ppt_fup	  ? HWT_PKT_FUP
					 : lp.type == ppt_tip	  ? HWT_PKT_TIP
					 : lp.type == ppt_tip_pge ? HWT_PKT_TIP_PGE
								  : HWT_PKT_TIP_PGD);
		assert_int_equal(p.ipc, lp.payload.ip.ipc);
		assert_int_equal(p.payload, lp.payload.ip.ip);
		break;
	case ppt_tnt_8:
	case ppt_tnt_64:
		assert_int_equal(p.type, lp.type == ppt_tnt_8 ? HWT_PKT_TNT_8 : HWT_PKT_TNT_64);
		assert_int_equal(p.tnt_bits, lp.payload.tnt.bit_size);
		assert_int_equal(p.payload, lp.payload.tnt.payload);
		break;
	case ppt_mode:
		if (lp.payload.mode.leaf == pt_mol_exec) {
			assert_int_equal(p.type, HWT_PKT_MODE_EXEC);
			assert_int_equal(p.mode, lp.payload.mode.bits.exec.csl |
						     lp.payload.mode.bits.exec.csd << 1);
		} else {
			assert_int_equal(p.type, HWT_PKT_MODE_TSX);
			assert_int_equal(p.mode, lp.payload.mode.bits.tsx.intx |
						     lp.payload.mode.bits.tsx.abrt << 1);
		}
		break;
	case ppt_pip:
		assert_int_equal(p.type, HWT_PKT_PIP);
		assert_int_equal((p.payload >> 1) << 5, lp.payload.pip.cr3);
		assert_int_equal(p.payload & 1, lp.payload.pip.nr);
		break;
	case ppt_vmcs:
		assert_int_equal(p.type, HWT_PKT_VMCS);
		assert_int_equal(p.payload, lp.payload.vmcs.base);
		break;
	case ppt_cbr:
		assert_int_equal(p.type, HWT_PKT_CBR);
		assert_int_equal(p.payload, lp.payload.cbr.ratio);
		break;
	case ppt_tsc:
		assert_int_equal(p.type, HWT_PKT_TSC);
		assert_int_equal(p.payload, lp.payload.tsc.tsc);
		break;
	case ppt_tma:
		assert_int_equal(p.type, HWT_PKT_TMA);
		assert_int_equal(p.payload & 0xffff, lp.payload.tma.ctc);
		assert_int_equal(p.payload >> 16, lp.payload.tma.fc);
		break;
	case ppt_mtc:
		assert_int_equal(p.type, HWT_PKT_MTC);
		assert_int_equal(p.payload, lp.payload.mtc.ctc);
		break;
	case ppt_cyc:
		assert_int_equal(p.type, HWT_PKT_CYC);
		assert_int_equal(p.payload, lp.payload.cyc.value);
		break;
	case ppt_mnt:
		assert_int_equal(p.type, HWT_PKT_MNT);
		assert_int_equal(p.payload, lp.payload.mnt.payload);
		break;
	case ppt_exstop:
		assert_int_equal(p.type, HWT_PKT_EXSTOP);
		assert_int_equal(!!(p.mode & 0x80), lp.payload.exstop.ip);
		break;
	case ppt_mwait:
		assert_int_equal(p.type, HWT_PKT_MWAIT);
		assert_int_equal(p.payload, lp.payload.mwait.hints);
		assert_int_equal(p.payload2, lp.payload.mwait.ext);
		break;
	case ppt_pwre:
		assert_int_equal(p.type, HWT_PKT_PWRE);
		assert_int_equal((p.payload >> 12) & 0xf, lp.payload.pwre.state);
		assert_int_equal((p.payload >> 8) & 0xf, lp.payload.pwre.sub_state);
		assert_int_equal(p.payload >> 3 & 1, lp.payload.pwre.hw);
		break;
	case ppt_pwrx:
		assert_int_equal(p.type, HWT_PKT_PWRX);
		assert_int_equal((p.payload >> 4) & 0xf, lp.payload.pwrx.last);
		assert_int_equal(p.payload & 0xf, lp.payload.pwrx.deepest);
		assert_int_equal((p.payload >> 8) & 1, lp.payload.pwrx.interrupt);
		assert_int_equal((p.payload >> 10) & 1, lp.payload.pwrx.store);
		assert_int_equal((p.payload >> 11) & 1, lp.payload.pwrx.autonomous);
		break;
	case ppt_ptw:
		assert_int_equal(p.type, HWT_PKT_PTW);
		assert_int_equal(p.mode & 0x7f, lp.payload.ptw.plc == 0 ? 4 : 8);
		assert_int_equal(!!(p.mode & 0x80), lp.payload.ptw.ip);
		assert_int_equal(p.payload, lp.payload.ptw.payload);
		break;
	case ppt_invalid:
		assert_int_equal(p.type, HWT_PKT_INVALID);
		break;
	default:
		fail_msg("libipt packet type %d", lp.type);
	}
	return r;
}

/* Every offset of buf. */
static void compare_all(const uint8_t *buf, size_t len, int skz84)
{
	struct pt_config cfg;
	struct pt_packet_decoder *pd;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	cfg.errata.skz84 = skz84 ? 1 : 0;
	pd = pt_pkt_alloc_decoder(&cfg);
	assert_non_null(pd);
	for (size_t off = 0; off < len; off++)
		compare_at(pd, buf, len, off, skz84);
	pt_pkt_free_decoder(pd);
}

static void test_random_bytes(void **state)
{
	uint64_t rng = hwt_test_seed();
	/* Bytes that start packets, to reach deep into payload checks. */
	static const uint8_t opc[] = {0x02, 0x02, 0x02, 0x99, 0x19, 0x59, 0x00, 0x0d, 0x2d,
				      0x4d, 0x6d, 0x8d, 0xcd, 0x11, 0x01, 0x1d, 0x03, 0x07};
	static const uint8_t ext[] = {0x82, 0x23, 0xf3, 0x83, 0xa3, 0x43, 0x03, 0x73,
				      0xc8, 0xc3, 0x62, 0xe2, 0xc2, 0x22, 0xa2, 0x12,
				      0x32, 0x52, 0x72, 0x92, 0xb2, 0xd2, 0xf2};
	uint8_t buf[4096];

	(void)state;
	for (int round = 0; round < 60; round++) {
		for (size_t i = 0; i < sizeof(buf); i++) {
			uint64_t r = hwt_test_rand(&rng);

			switch (r % 4) {
			case 0:
				buf[i] = opc[(r >> 8) % sizeof(opc)];
				break;
			case 1:
				buf[i] = ext[(r >> 8) % sizeof(ext)];
				break;
			case 2:
				buf[i] = (uint8_t)(r >> 8) & (uint8_t)(r >> 16);
				break;
			default:
				buf[i] = (uint8_t)(r >> 8);
				break;
			}
		}
		compare_all(buf, sizeof(buf), round & 1);
	}
	/* Every two-byte prefix, followed by random bytes and truncated. */
	for (unsigned int a = 0; a < 256; a++) {
		for (unsigned int b = 0; b < 256; b++) {
			struct pt_config cfg;
			struct pt_packet_decoder *pd;

			buf[0] = (uint8_t)a;
			buf[1] = (uint8_t)b;
			for (size_t i = 2; i < 16; i++)
				buf[i] = (uint8_t)hwt_test_rand(&rng);
			pt_config_init(&cfg);
			cfg.begin = buf;
			cfg.end = buf + 16;
			pd = pt_pkt_alloc_decoder(&cfg);
			assert_non_null(pd);
			compare_at(pd, buf, 16, 0, 0);
			pt_pkt_free_decoder(pd);
			for (size_t n = 1; n < 16; n += 5) {
				pt_config_init(&cfg);
				cfg.begin = buf;
				cfg.end = buf + n;
				pd = pt_pkt_alloc_decoder(&cfg);
				compare_at(pd, buf, n, 0, 0);
				pt_pkt_free_decoder(pd);
			}
		}
	}
	fprintf(stderr, "random: %" PRIu64 " packet positions compared\n", ncompared);
}

/* Where a stream synchronizes: at every PSB libipt's packet decoder finds
 * (pt_pkt_sync_forward), also where the packet before a PSB ends in 02 82
 * pairs (a TNT payload), which makes the PSB pattern begin early. */
static void test_psb_sync(void **state)
{
	uint64_t rng = hwt_test_seed();
	static const uint8_t psb[16] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82};
	uint8_t buf[8192];
	size_t npsb = 0, nearly = 0;

	(void)state;
	for (int round = 0; round < 40; round++) {
		struct pt_config cfg;
		struct pt_packet_decoder *pd;
		size_t len = 0, ours;
		uint64_t theirs;

		while (len + 40 < sizeof(buf)) {
			uint64_t r = hwt_test_rand(&rng);
			/* A TNT-64 whose payload ends in 1..3 pairs of 02 82. */
			uint8_t tnt[8] = {0x02, 0xa3, 0x49, 0x92, 0x24, 0x02, 0x02, 0x82};

			switch (r % 5) {
			case 0:
				tnt[4] = (r >> 8) % 3 ? 0x24 : 0x02;
				tnt[5] = (r >> 8) % 3 == 2 ? 0x82 : tnt[5];
				memcpy(buf + len, tnt, 8);
				len += 8;
				if ((r >> 16) & 1)
					break;
				/* A PSB right after it. */
				nearly++;
				/* fall through */
			case 1:
				memcpy(buf + len, psb, 16);
				buf[len + 16] = 0x02;
				buf[len + 17] = 0x23; /* PSBEND */
				len += 18;
				npsb++;
				break;
			case 2:
				buf[len++] = 0x59; /* MTC */
				buf[len++] = (uint8_t)(r >> 8);
				break;
			default:
				buf[len++] = 0x00; /* PAD */
				break;
			}
		}
		pt_config_init(&cfg);
		cfg.begin = buf;
		cfg.end = buf + len;
		pd = pt_pkt_alloc_decoder(&cfg);
		assert_non_null(pd);
		ours = hwt_pkt_find_psb(buf, len, 0);
		while (pt_pkt_sync_forward(pd) >= 0) {
			assert_int_equal(pt_pkt_get_sync_offset(pd, &theirs), 0);
			assert_int_equal(ours, theirs);
			ours = hwt_pkt_find_psb(buf, len, ours + 16);
		}
		assert_int_equal(ours, len);
		pt_pkt_free_decoder(pd);
	}
	assert_true(npsb > 100 && nearly > 50);
}

/* The PSB search from every position of buffers of 02, 82 and other
 * bytes (runs of 02 82 pairs of every length and parity, at every
 * alignment, at the ends) against its definition byte by byte: the
 * first 16-byte 02 82 pattern at or after pos, moved to the end of its
 * run of pairs. */
static size_t psb_by_bytes(const uint8_t *buf, size_t len, size_t pos)
{
	for (size_t p = pos; p + 16 <= len; p++) {
		size_t k = 0;

		while (k < 16 && buf[p + k] == (k & 1 ? 0x82 : 0x02))
			k++;
		if (k < 16)
			continue;
		while (p + 18 <= len && buf[p + 16] == 0x02 && buf[p + 17] == 0x82)
			p += 2;
		return p;
	}
	return len;
}

static void test_psb_from_anywhere(void **state)
{
	uint64_t rng = hwt_test_seed();
	uint8_t buf[600];
	size_t found = 0;

	(void)state;
	for (int round = 0; round < 300; round++) {
		size_t len = (size_t)(hwt_test_rand(&rng) % sizeof(buf));

		for (size_t i = 0; i < len;) {
			uint64_t r = hwt_test_rand(&rng);
			size_t run = (size_t)(r >> 8) % 24;

			if (r % 3 == 0) {
				/* A run of pairs, maybe a PSB or longer, from
				 * either byte. */
				for (size_t k = 0; k < run && i < len; k++, i++)
					buf[i] = (uint8_t)(((k + (r >> 40)) & 1) ? 0x82 : 0x02);
			} else {
				buf[i++] = (uint8_t)(r % 3 == 1 ? 0x02 : r >> 16);
			}
		}
		for (size_t pos = 0; pos <= len + 1; pos++) {
			size_t want = psb_by_bytes(buf, len, pos);

			assert_int_equal(hwt_pkt_find_psb(buf, len, pos), want);
			found += want < len;
		}
	}
	assert_true(found > 1000);
}

static void test_synthetic_traces(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct ptsynth_config c;
		struct ptsynth w;

		ptsynth_config_init(&c);
		c.seed = seed;
		c.insns = 30000;
		c.syscall_ppm = 20000;
		c.interrupt_ppm = 20000;
		c.overflow_ppm = 20000;
		assert_int_equal(ptsynth_generate(&c, &w), 0);
		compare_all(w.pt, w.pt_len, 0);
		ptsynth_free(&w);
	}
}

/* ------------------------------------------------------------------------ */
/* Conformance traces                                                        */

struct manifest {
	char name[128], opts[512];
};

static size_t read_manifest(struct manifest **out)
{
	char path[512], *text, *line, *save = NULL;
	size_t len, n = 0;
	struct manifest *m = NULL;

	snprintf(path, sizeof(path), "%s/libipt-conformance/MANIFEST.tsv", hwt_test_testdata());
	text = hwt_test_read_file(path, &len);
	if (!text)
		return 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[5] = {0}, *s2 = NULL;
		int k = 0;

		for (char *t = strtok_r(line, "\t", &s2); t && k < 5; t = strtok_r(NULL, "\t", &s2))
			f[k++] = t;
		if (k < 4)
			continue;
		m = realloc(m, (n + 1) * sizeof(*m));
		assert_non_null(m);
		snprintf(m[n].name, sizeof(m[n].name), "%s", f[0]);
		snprintf(m[n].opts, sizeof(m[n].opts), "%s",
			 strncmp(f[3], "ptdump_opts=", 12) ? "" : f[3] + 12);
		n++;
	}
	free(text);
	*out = m;
	return n;
}

static const char *pkt_name(uint8_t type)
{
	static const char *const names[] = {
	    [HWT_PKT_PAD] = "pad",	     [HWT_PKT_PSB] = "psb",
	    [HWT_PKT_PSBEND] = "psbend",     [HWT_PKT_FUP] = "fup",
	    [HWT_PKT_TIP] = "tip",	     [HWT_PKT_TIP_PGE] = "tip.pge",
	    [HWT_PKT_TIP_PGD] = "tip.pgd",   [HWT_PKT_TNT_8] = "tnt.8",
	    [HWT_PKT_TNT_64] = "tnt.64",     [HWT_PKT_MODE_EXEC] = "mode.exec",
	    [HWT_PKT_MODE_TSX] = "mode.tsx", [HWT_PKT_PIP] = "pip",
	    [HWT_PKT_VMCS] = "vmcs",	     [HWT_PKT_CBR] = "cbr",
	    [HWT_PKT_TSC] = "tsc",	     [HWT_PKT_TMA] = "tma",
	    [HWT_PKT_MTC] = "mtc",	     [HWT_PKT_CYC] = "cyc",
	    [HWT_PKT_STOP] = "stop",	     [HWT_PKT_OVF] = "ovf",
	    [HWT_PKT_MNT] = "mnt",	     [HWT_PKT_EXSTOP] = "exstop",
	    [HWT_PKT_MWAIT] = "mwait",	     [HWT_PKT_PWRE] = "pwre",
	    [HWT_PKT_PWRX] = "pwrx",	     [HWT_PKT_PTW] = "ptw",
	    [HWT_PKT_INVALID] = "<invalid>",
	};

	return type < HWT_ARRAY_SIZE(names) && names[type] ? names[type] : "?";
}

/* ptdump's packet lines ("OFFSET  NAME ...") and decode errors
 * ("[OFFSET: error decoding packet: ...]"), as "OFFSET NAME" lines. */
static char *ptdump_sequence(const char *exp)
{
	size_t cap = strlen(exp) + 1, n = 0;
	char *out = malloc(cap);

	assert_non_null(out);
	for (const char *text = exp; *text;) {
		const char *nl = strchr(text, '\n');
		size_t ll = nl ? (size_t)(nl - text) : strlen(text);
		char name[32], l[256];
		uint64_t off;
		int k;

		/* sscanf on the line alone (on the whole text it would
		 * measure the rest each time). */
		snprintf(l, sizeof(l), "%.*s", (int)(ll < sizeof(l) ? ll : sizeof(l) - 1), text);
		ll = strlen(l);
		/* Sideband lines (--sb:*) name PERF_RECORDs, after a time
		 * with --sb:time, or are indented continuation lines. */
		if (sscanf(l, "%16" SCNx64 "%n", &off, &k) == 1 && k == 16 &&
		    sscanf(l + k, " %31s", name) == 1 && !memmem(l, ll, "PERF_RECORD", 11) &&
		    strspn(name, "0123456789abcdef") != 16)
			n += (size_t)sprintf(out + n, "%" PRIx64 " %s\n", off, name);
		else if (l[0] == '[' &&
			 sscanf(l, "[%" SCNx64 ": error decoding packet", &off) == 1 &&
			 memmem(l, ll, "error decoding packet", 21))
			n += (size_t)sprintf(out + n, "%" PRIx64 " error\n", off);
		text = nl ? nl + 1 : text + strlen(text);
	}
	out[n] = 0;
	return out;
}

/* What ptdump shows, from our parser: sync to the first PSB (unless
 * no_sync), then packet after packet (no CYC with no_cyc); after an
 * error, the next PSB. */
static char *our_sequence(const uint8_t *buf, size_t len, int skz84, bool no_sync, bool no_cyc)
{
	size_t cap = 64 + len * 24, n = 0, off = no_sync ? 0 : hwt_pkt_find_psb(buf, len, 0);
	char *out = malloc(cap);

	assert_non_null(out);
	while (off < len) {
		struct hwt_pkt p;
		int r = hwt_pkt_decode(buf + off, len - off, skz84, &p);

		if (r <= 0) {
			n += (size_t)sprintf(out + n, "%zx error\n", off);
			off = hwt_pkt_find_psb(buf, len, off + 1);
			continue;
		}
		if (!(no_cyc && p.type == HWT_PKT_CYC))
			n += (size_t)sprintf(out + n, "%zx %s\n", off, pkt_name(p.type));
		off += (size_t)r;
	}
	out[n] = 0;
	return out;
}

static int cpu_skz84(const char *exp_name)
{
	const char *c = strstr(exp_name, "-cpu_");
	struct pt_cpu cpu;
	struct pt_errata errata;
	unsigned int fam, mod;

	if (!c || sscanf(c, "-cpu_%u_%u", &fam, &mod) != 2)
		return 0;
	memset(&cpu, 0, sizeof(cpu));
	cpu.vendor = pcv_intel;
	cpu.family = (uint16_t)fam;
	cpu.model = (uint8_t)mod;
	memset(&errata, 0, sizeof(errata));
	if (pt_cpu_errata(&errata, &cpu) < 0)
		return 0;
	return errata.skz84;
}

static void test_conformance_traces(void **state)
{
	struct manifest *m = NULL;
	size_t n = read_manifest(&m);
	unsigned int traces = 0, dumps = 0, matched = 0;

	(void)state;
	if (!n)
		fail_msg("no conformance suite in %s (tests/data is part of the tree)",
			 hwt_test_testdata());
	for (size_t i = 0; i < n; i++) {
		char dir[512], path[1024];
		uint8_t *pt;
		size_t len;
		DIR *d;
		struct dirent *de;

		snprintf(dir, sizeof(dir), "%s/libipt-conformance/gen-pevent", hwt_test_testdata());
		snprintf(path, sizeof(path), "%s/%s.pt", dir, m[i].name);
		pt = (uint8_t *)hwt_test_read_file(path, &len);
		if (!pt) {
			snprintf(dir, sizeof(dir), "%s/libipt-conformance/gen",
				 hwt_test_testdata());
			snprintf(path, sizeof(path), "%s/%s.pt", dir, m[i].name);
			pt = (uint8_t *)hwt_test_read_file(path, &len);
		}
		assert_non_null(pt);
		traces++;
		compare_all(pt, len, 0);
		compare_all(pt, len, 1);

		/* ptdump's expectations for this trace (one per CPU). */
		d = opendir(dir);
		assert_non_null(d);
		while ((de = readdir(d))) {
			size_t nl = strlen(m[i].name);
			char *exp, *want, *got;

			if (strncmp(de->d_name, m[i].name, nl) ||
			    strncmp(de->d_name + nl, "-ptdump", 7) || !strstr(de->d_name, ".exp"))
				continue;
			if (strstr(m[i].opts, "--no-offset"))
				continue; /* nothing to compare offsets with */
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			exp = hwt_test_read_file(path, NULL);
			assert_non_null(exp);
			want = ptdump_sequence(exp);
			got = our_sequence(pt, len, cpu_skz84(de->d_name),
					   strstr(m[i].opts, "--no-sync") != NULL,
					   strstr(m[i].opts, "--no-cyc") != NULL);
			dumps++;
			if (strcmp(want, got))
				fprintf(stderr, "%s: packets differ from ptdump's:\n%s---\n%s",
					de->d_name, want, got);
			else
				matched++;
			free(exp);
			free(want);
			free(got);
		}
		closedir(d);
		free(pt);
	}
	fprintf(stderr,
		"conformance: %u traces compared with libipt at every offset; packet "
		"sequence of %u/%u ptdump outputs matched\n",
		traces, matched, dumps);
	assert_int_equal(traces, n);
	assert_true(dumps > 300);
	assert_int_equal(matched, dumps);
	free(m);
}

/* Real hardware traces (perf record -e intel_pt// on Linux 4.14, the AUX
 * data of two CPUs from two recordings): every offset against libipt, and
 * the packet sequence against libipt's ptdump of them. */
static void test_real_traces(void **state)
{
	static const char *const names[] = {"quipper-file-cpu0", "quipper-file-cpu3",
					    "quipper-piped-cpu0", "quipper-piped-cpu3"};
	unsigned int checked = 0;

	(void)state;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(names); i++) {
		char path[1024];
		uint8_t *pt;
		size_t len;
		struct hwt_test_run run;
		char *want, *got;

		snprintf(path, sizeof(path), "%s/perf-intel-pt/%s.pt", hwt_test_testdata(),
			 names[i]);
		pt = (uint8_t *)hwt_test_read_file(path, &len);
		if (!pt)
			fail_msg(
			    "no real traces in %s/perf-intel-pt (tests/data is part of the tree)",
			    hwt_test_testdata());
		compare_all(pt, len, 0);
		hwt_test_run(&run, "zstd -dc '%s.ptdump.zst'", path);
		if (run.status != 0) {
			hwt_test_run_free(&run);
			free(pt);
			fail_msg("zstd cannot unpack %s.ptdump.zst (scripts/install-deps.sh "
				 "installs zstd)",
				 path);
		}
		want = ptdump_sequence(run.out);
		got = our_sequence(pt, len, 0, false, false);
		assert_true(strlen(want) > 1000);
		if (strcmp(want, got))
			fprintf(stderr, "%s: packets differ from ptdump's\n", names[i]);
		assert_string_equal(want, got);
		checked++;
		free(want);
		free(got);
		hwt_test_run_free(&run);
		free(pt);
	}
	fprintf(stderr, "real traces: %u streams match libipt and ptdump packet by packet\n",
		checked);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_bytes),       cmocka_unit_test(test_psb_sync),
	    cmocka_unit_test(test_psb_from_anywhere),  cmocka_unit_test(test_synthetic_traces),
	    cmocka_unit_test(test_conformance_traces), cmocka_unit_test(test_real_traces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
