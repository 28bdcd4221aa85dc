/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * decoder/pkt.h - our Intel PT packet parser (internal). It decodes what
 * libipt's packet decoder decodes (SDM vol. 3, "Intel Processor Trace":
 * packet formats) with the same sizes and payloads, which a test checks on
 * every conformance trace and the fuzzer on random bytes; it exists because
 * the fast engine and the timeline need packets without libipt's per-packet
 * call overhead.
 */
#ifndef HWT_DECODER_PKT_H
#define HWT_DECODER_PKT_H

#include <stddef.h>
#include <stdint.h>

enum hwt_pkt_type {
	HWT_PKT_BAD = 0, /* unknown opcode or bad payload */
	HWT_PKT_PAD,
	HWT_PKT_PSB,
	HWT_PKT_PSBEND,
	HWT_PKT_FUP,
	HWT_PKT_TIP,
	HWT_PKT_TIP_PGE,
	HWT_PKT_TIP_PGD,
	HWT_PKT_TNT_8,
	HWT_PKT_TNT_64,
	HWT_PKT_MODE_EXEC,
	HWT_PKT_MODE_TSX,
	HWT_PKT_PIP,
	HWT_PKT_VMCS,
	HWT_PKT_CBR,
	HWT_PKT_TSC,
	HWT_PKT_TMA,
	HWT_PKT_MTC,
	HWT_PKT_CYC,
	HWT_PKT_STOP,
	HWT_PKT_OVF,
	HWT_PKT_MNT,
	HWT_PKT_EXSTOP,
	HWT_PKT_MWAIT,
	HWT_PKT_PWRE,
	HWT_PKT_PWRX,
	HWT_PKT_PTW,
	HWT_PKT_INVALID, /* skz84: a corrupted TMA, skipped (8 bytes) */
};

/* IP compression of TIP/FUP packets (bits 7:5 of the opcode). */
enum hwt_pkt_ipc {
	HWT_IPC_SUPPRESSED = 0,
	HWT_IPC_UPDATE_16 = 1,
	HWT_IPC_UPDATE_32 = 2,
	HWT_IPC_SEXT_48 = 3,
	HWT_IPC_UPDATE_48 = 4,
	HWT_IPC_FULL = 6,
};

struct hwt_pkt {
	uint8_t type;	   /* enum hwt_pkt_type */
	uint8_t size;	   /* bytes */
	uint8_t ipc;	   /* TIP/FUP: enum hwt_pkt_ipc */
	uint8_t tnt_bits;  /* TNT: number of bits */
	uint8_t mode;	   /* MODE.Exec: bit 0 CS.L, bit 1 CS.D;
			    * MODE.TSX: bit 0 InTX, bit 1 TXAbort;
			    * PTW: payload bytes; EXSTOP/PTW: bit 7 IP */
	uint64_t payload;  /* TIP/FUP: raw IP bytes; TNT: bits, oldest in the
			    * most significant position; TSC/MTC/CBR/...: the
			    * value; TMA: ctc | fc << 16 */
	uint64_t payload2; /* MWAIT ext, PWRX/PWRE details */
};

/* Decodes the packet at p (n bytes left). skz84: the CPU erratum that
 * corrupts TMA packets (a TMA with reserved bits set is then an INVALID
 * packet of 8 bytes, as libipt has it; that size may exceed n). Returns the
 * packet size (> 0), 0 for a truncated packet at the end (pkt->type
 * HWT_PKT_BAD), or -HWT_EFORMAT for a bad opcode or payload (pkt->type
 * HWT_PKT_BAD, size 0). */
int hwt_pkt_decode(const uint8_t *p, size_t n, int skz84, struct hwt_pkt *pkt);

/* Last-IP decompression (SDM): applies a TIP/FUP payload to *last_ip.
 * Returns 0, 1 when the IP is suppressed (*last_ip unchanged), or
 * -HWT_EFORMAT for a reserved compression. */
int hwt_pkt_ip(const struct hwt_pkt *pkt, uint64_t *last_ip);

/* Offset of the first PSB at or after pos in buf, or len if none. Where
 * more 02 82 pairs come before it (the end of the packet before), the PSB
 * is the last 16 bytes of the run, as in libipt. */
size_t hwt_pkt_find_psb(const uint8_t *buf, size_t len, size_t pos);

#define HWT_PKT_PSB_SIZE 16
/* A PSB's bytes: 02 82, eight times. */
extern const uint8_t hwt_pkt_psb[HWT_PKT_PSB_SIZE];

#endif
