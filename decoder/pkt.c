/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/pkt.c - Intel PT packet decoding: opcodes and payloads as the SDM
 * (vol. 3, chapter "Intel Processor Trace", section "Packet Definitions")
 * lays them out, mirroring libipt's pt_packet.c in what is accepted.
 */
#include <string.h>

#include "common/hwt.h"
#include "decoder/pkt.h"

/* n (<= 8, a constant where inlined: one or two loads) little-endian
 * bytes. */
static inline uint64_t le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	memcpy(&v, p, n);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* n (variable) little-endian bytes. */
static uint64_t le_var(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* TNT payload with a stop bit: the number of bits below the highest set
 * bit. */
static int tnt_bits(uint64_t v)
{
	if (!v)
		return -HWT_EFORMAT;
	return 63 - __builtin_clzll(v);
}

static int ip_packet(const uint8_t *p, size_t n, uint8_t type, struct hwt_pkt *pkt)
{
	static const uint8_t sizes[8] = {0, 2, 4, 6, 6, 0, 8, 0};
	static const uint64_t masks[8] = {
	    0, 0xffffull, 0xffffffffull, 0xffffffffffffull, 0xffffffffffffull, 0, ~0ull, 0};
	uint8_t ipc = p[0] >> 5;

	if (ipc == 5 || ipc == 7)
		return -HWT_EFORMAT;
	if (n < 1u + sizes[ipc])
		return 0;
	pkt->type = type;
	pkt->ipc = ipc;
	pkt->size = (uint8_t)(1 + sizes[ipc]);
	/* With 8 bytes after the opcode at hand, one load. */
	pkt->payload = n >= 9 ? le(p + 1, 8) & masks[ipc] : le_var(p + 1, sizes[ipc]);
	return pkt->size;
}

static int fixed(size_t n, size_t size, uint8_t type, struct hwt_pkt *pkt)
{
	if (n < size)
		return 0;
	pkt->type = type;
	pkt->size = (uint8_t)size;
	return (int)size;
}

static inline int ext_packet(const uint8_t *p, size_t n, int skz84, struct hwt_pkt *pkt)
{
	uint8_t ext;
	int bits;

	if (n < 2)
		return 0;
	ext = p[1];
	switch (ext) {
	case 0x82: /* PSB: 02 82 repeated 8 times */
		if (n < HWT_PKT_PSB_SIZE)
			return 0;
		for (int i = 2; i < HWT_PKT_PSB_SIZE; i += 2) {
			if (p[i] != 0x02 || p[i + 1] != 0x82)
				return -HWT_EFORMAT;
		}
		return fixed(n, HWT_PKT_PSB_SIZE, HWT_PKT_PSB, pkt);
	case 0x23:
		return fixed(n, 2, HWT_PKT_PSBEND, pkt);
	case 0xf3:
		return fixed(n, 2, HWT_PKT_OVF, pkt);
	case 0x83:
		return fixed(n, 2, HWT_PKT_STOP, pkt);
	case 0xa3: /* TNT-64 */
		if (n < 8)
			return 0;
		pkt->payload = le(p + 2, 6);
		bits = tnt_bits(pkt->payload);
		if (bits < 0)
			return -HWT_EFORMAT;
		pkt->tnt_bits = (uint8_t)bits;
		pkt->payload &= ~(1ull << bits);
		return fixed(n, 8, HWT_PKT_TNT_64, pkt);
	case 0x43: /* PIP */
		if (n < 8)
			return 0;
		pkt->payload = le(p + 2, 6);
		return fixed(n, 8, HWT_PKT_PIP, pkt);
	case 0x03: /* CBR */
		if (n < 4)
			return 0;
		pkt->payload = p[2];
		return fixed(n, 4, HWT_PKT_CBR, pkt);
	case 0x73: /* TMA */
		if (n < 7)
			return 0;
		/* libipt rejects a reserved byte that is not zero and
		 * FastCounter bits above bit 8; with SKZ84
		 * such a TMA is a corrupted packet one byte longer, skipped
		 * (its size is not checked against the end, as libipt). */
		if ((le(p + 5, 2) & ~0x1ffull) || p[4]) {
			if (!skz84)
				return -HWT_EFORMAT;
			pkt->type = HWT_PKT_INVALID;
			pkt->size = 8;
			return 8;
		}
		pkt->payload = le(p + 2, 2) | le(p + 5, 2) << 16;
		return fixed(n, 7, HWT_PKT_TMA, pkt);
	case 0xc8: /* VMCS */
		if (n < 7)
			return 0;
		pkt->payload = le(p + 2, 5) << 12;
		return fixed(n, 7, HWT_PKT_VMCS, pkt);
	case 0xc3: /* MNT: 02 C3 88 + 8 bytes */
		if (n < 3)
			return 0;
		if (p[2] != 0x88)
			return -HWT_EFORMAT;
		if (n < 11)
			return 0;
		pkt->payload = le(p + 3, 8);
		return fixed(n, 11, HWT_PKT_MNT, pkt);
	case 0x62:
	case 0xe2:
		pkt->mode = ext & 0x80;
		return fixed(n, 2, HWT_PKT_EXSTOP, pkt);
	case 0xc2: /* MWAIT */
		if (n < 10)
			return 0;
		pkt->payload = le(p + 2, 4);
		pkt->payload2 = le(p + 6, 4);
		return fixed(n, 10, HWT_PKT_MWAIT, pkt);
	case 0x22: /* PWRE */
		if (n < 4)
			return 0;
		pkt->payload = le(p + 2, 2);
		return fixed(n, 4, HWT_PKT_PWRE, pkt);
	case 0xa2: /* PWRX */
		if (n < 7)
			return 0;
		pkt->payload = le(p + 2, 5);
		return fixed(n, 7, HWT_PKT_PWRX, pkt);
	default:
		if ((ext & 0x1f) == 0x12) { /* PTW */
			unsigned int plc = (ext >> 5) & 3;
			unsigned int bytes = plc == 0 ? 4 : plc == 1 ? 8 : 0;

			if (!bytes)
				return -HWT_EFORMAT;
			if (n < 2 + bytes)
				return 0;
			pkt->payload = le_var(p + 2, bytes);
			pkt->mode = (uint8_t)(bytes | (ext & 0x80));
			return fixed(n, 2 + bytes, HWT_PKT_PTW, pkt);
		}
		return -HWT_EFORMAT;
	}
}

int hwt_pkt_decode(const uint8_t *p, size_t n, int skz84, struct hwt_pkt *pkt)
{
	uint8_t opc;
	int r, bits;

	memset(pkt, 0, sizeof(*pkt));
	if (!n)
		return 0;
	opc = p[0];
	switch (opc) {
	case 0x00:
		return fixed(n, 1, HWT_PKT_PAD, pkt);
	case 0x02:
		r = ext_packet(p, n, skz84, pkt);
		break;
	case 0x99: /* MODE */
		if (n < 2)
			return 0;
		switch (p[1] >> 5) {
		case 0:
			pkt->mode = p[1] & 3;
			r = fixed(n, 2, HWT_PKT_MODE_EXEC, pkt);
			break;
		case 1:
			pkt->mode = p[1] & 3;
			r = fixed(n, 2, HWT_PKT_MODE_TSX, pkt);
			break;
		default:
			r = -HWT_EFORMAT;
			break;
		}
		break;
	case 0x19: /* TSC */
		if (n < 8)
			return 0;
		pkt->payload = le(p + 1, 7);
		r = fixed(n, 8, HWT_PKT_TSC, pkt);
		break;
	case 0x59: /* MTC */
		if (n < 2)
			return 0;
		pkt->payload = p[1];
		r = fixed(n, 2, HWT_PKT_MTC, pkt);
		break;
	default:
		if (!(opc & 1)) { /* TNT-8 */
			bits = tnt_bits(opc >> 1);
			if (bits < 0)
				return -HWT_EFORMAT;
			pkt->tnt_bits = (uint8_t)bits;
			pkt->payload = (opc >> 1) & ~(1u << bits);
			return fixed(n, 1, HWT_PKT_TNT_8, pkt);
		}
		if ((opc & 3) == 3) { /* CYC */
			uint64_t v = opc >> 3;
			size_t i = 1;
			unsigned int shl = 5;

			if (opc & 4) {
				/* As libipt: payload bits beyond 64 (a ninth
				 * extension byte) make a bad packet. */
				for (;;) {
					uint8_t b;
					uint64_t x;

					if (i >= n)
						return 0;
					b = p[i++];
					x = (uint64_t)(b >> 1) << shl;
					shl += 7;
					if (shl > 64)
						return -HWT_EFORMAT;
					v |= x;
					if (!(b & 1))
						break;
				}
			}
			pkt->payload = v;
			return fixed(n, i, HWT_PKT_CYC, pkt);
		}
		switch (opc & 0x1f) {
		case 0x0d:
			return ip_packet(p, n, HWT_PKT_TIP, pkt);
		case 0x11:
			return ip_packet(p, n, HWT_PKT_TIP_PGE, pkt);
		case 0x01:
			return ip_packet(p, n, HWT_PKT_TIP_PGD, pkt);
		case 0x1d:
			return ip_packet(p, n, HWT_PKT_FUP, pkt);
		default:
			return -HWT_EFORMAT;
		}
	}
	if (r < 0)
		memset(pkt, 0, sizeof(*pkt));
	return r;
}

int hwt_pkt_ip(const struct hwt_pkt *pkt, uint64_t *last_ip)
{
	uint64_t ip = *last_ip, v = pkt->payload;

	switch (pkt->ipc) {
	case HWT_IPC_UPDATE_16:
		ip = (ip & ~0xffffull) | (v & 0xffffull);
		break;
	case HWT_IPC_UPDATE_32:
		ip = (ip & ~0xffffffffull) | (v & 0xffffffffull);
		break;
	case HWT_IPC_SEXT_48:
		ip = v & 0xffffffffffffull;
		if (ip & (1ull << 47))
			ip |= 0xffff000000000000ull;
		break;
	case HWT_IPC_UPDATE_48:
		ip = (ip & ~0xffffffffffffull) | (v & 0xffffffffffffull);
		break;
	case HWT_IPC_FULL:
		ip = v;
		break;
	case HWT_IPC_SUPPRESSED:
		return 1;
	default:
		return -HWT_EFORMAT;
	}
	*last_ip = ip;
	return 0;
}

const uint8_t hwt_pkt_psb[HWT_PKT_PSB_SIZE] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					       0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82};

size_t hwt_pkt_find_psb(const uint8_t *buf, size_t len, size_t pos)
{
	uint64_t even, odd;

	if (len < HWT_PKT_PSB_SIZE || pos > len - HWT_PKT_PSB_SIZE)
		return len;
	/* The 8 bytes from each q in [p, p + 8] are inside a PSB at p
	 * (02 82 ... from an even q - p, 82 02 ... from an odd one): one
	 * load every 8 bytes finds it at the first such q, where the PSB
	 * is at one of q - 7 .. q, which no earlier probe looked at. 02
	 * alone is too common in PT (memchr() stopped every 6 bytes). */
	memcpy(&even, hwt_pkt_psb, sizeof(even));
	memcpy(&odd, hwt_pkt_psb + 1, sizeof(odd));
	for (size_t q = pos; q + sizeof(even) <= len; q += sizeof(even)) {
		uint64_t v;

		memcpy(&v, buf + q, sizeof(v));
		if (__builtin_expect(v != even && v != odd, 1))
			continue;
		for (size_t p = q - pos >= 7 ? q - 7 : pos; p <= q && p + HWT_PKT_PSB_SIZE <= len;
		     p++) {
			if (memcmp(buf + p, hwt_pkt_psb, HWT_PKT_PSB_SIZE))
				continue;
			/* The pattern may begin inside the packet before
			 * the PSB (a TNT payload ending in 02 82): the PSB
			 * is the run's last 16 bytes, as libipt's
			 * pt_find_psb has it. */
			while (p + HWT_PKT_PSB_SIZE + 2 <= len &&
			       buf[p + HWT_PKT_PSB_SIZE] == 0x02 &&
			       buf[p + HWT_PKT_PSB_SIZE + 1] == 0x82)
				p += 2;
			return p;
		}
	}
	return len;
}
