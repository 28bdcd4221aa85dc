/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/ptsynth.h - a synthetic Intel PT workload with known ground
 * truth, for the decoder's tests, fuzz seeds and benchmark.
 *
 * It lays out a program in memory (functions made of straight-line code,
 * conditional branches, loops, direct and indirect calls, switch-like
 * indirect jumps, returns and system calls, all real x86-64 encodings),
 * runs it with a seeded PRNG choosing every branch outcome, and encodes what
 * the hardware would have written with libipt's encoder: TNT (with return
 * compression as the CPU does it), TIP, FUP, TIP.PGD/PGE around system calls
 * and interrupts (user-only tracing) and at the crossings of an address
 * filter, PSB+ every psb_period bytes, TSC, MTC and TMA, overflows that lose
 * trace, and the shapes of real traces (CBR, MODE.TSX, PIP, VMCS, PSB+ runs
 * while off, kAFL's VM entries). The counts of what ran (and what
 * was traced) are the ground truth a decoder must reproduce.
 */
#ifndef HWT_TESTS_PTSYNTH_H
#define HWT_TESTS_PTSYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ptsynth_config {
	uint64_t seed;
	unsigned int nfuncs;	    /* functions in the program (>= 2) */
	uint64_t insns;		    /* run until at least this many executed */
	uint64_t base;		    /* load address of the code */
	size_t psb_period;	    /* bytes of trace between PSBs */
	bool mtc;		    /* MTC/TMA timing (TSC always, in PSB+) */
	unsigned int mtc_freq;	    /* as IA32_RTIT_CTL.MTCFreq */
	unsigned int syscall_ppm;   /* system calls per million blocks */
	unsigned int interrupt_ppm; /* interrupts per million blocks */
	unsigned int overflow_ppm;  /* overflows per million conditional and
				     * indirect jumps */
	bool no_retcomp;	    /* never compress returns */
	bool biased;		    /* typical code: conditional branches go
				     * one way 98% of the time, loops run a
				     * fixed trip count (else: coin flips
				     * with random odds, the hard case) */
	/* Shapes real CPUs write (tests/data/real-pt; docs/decoder.md): */
	bool cbr;	      /* CBR in every PSB+ */
	bool tsx;	      /* MODE.TSX in every PSB+ */
	bool pip;	      /* PIP (CR3) in every PSB+ */
	bool vmcs;	      /* VMCS in every PSB+, PIP.NR set (a VMX guest) */
	unsigned int psb_off; /* PSB+ after PSB+ while tracing is off, at each
			       * system call and interrupt: no MODE.Exec,
			       * no FUP; MODE.Exec then precedes TIP.PGE */
	bool vmentry;	      /* each return from the kernel is a VM entry
			       * (kAFL): a PSB+ with MODE.Exec and a FUP at
			       * the IP, then TIP.PGE at the same IP (BDM70;
			       * the decoder needs a CPU with that erratum:
			       * struct ptsynth's cpu) */
	/* An address filter (IA32_RTIT_ADDR0): only functions [filter_first,
	 * filter_first + filter_funcs) are traced, with TIP.PGD (the first IP
	 * outside) and TIP.PGE (the first IP inside) at each crossing, as
	 * the SDM's "Filtering by IP" has them. 0: no filter. */
	unsigned int filter_first, filter_funcs;
};

/* Counts of what the program did; "traced" ones exclude what ran while an
 * overflow dropped trace. */
struct ptsynth_truth {
	uint64_t insns;	     /* instructions traced */
	uint64_t insns_lost; /* instructions run but not traced */
	uint64_t calls;	     /* near calls traced (direct + indirect) */
	uint64_t returns;    /* near returns traced */
	uint64_t cond;	     /* conditional branches traced */
	uint64_t cond_taken;
	uint64_t cond_to_target; /* ... that went to the branch target
				  * (taken, or a jcc to the next
				  * instruction, which goes there either
				  * way) */
	uint64_t indirect;	 /* indirect jumps and calls traced */
	uint64_t syscalls;
	uint64_t interrupts;
	uint64_t overflows;	 /* OVF packets (overflows that ended) */
	uint64_t insns_filtered; /* instructions run outside the filter */
	uint64_t filter_exits;	 /* TIP.PGD where execution left it */
	uint64_t filter_entries; /* TIP.PGE where it came back */
	uint64_t psbs;
	uint64_t f0_calls; /* calls of function 0 (the entry) */
	uint64_t max_depth;
};

struct ptsynth {
	uint8_t *code;
	size_t code_size;
	uint64_t base;
	uint8_t *pt;
	size_t pt_len;
	uint64_t *func_addr; /* entry of each function */
	unsigned int nfuncs;
	uint32_t cpuid_0x15_eax, cpuid_0x15_ebx; /* for MTC */
	uint64_t filter_lo, filter_hi;		 /* the filter's range, or 0 */
	/* The CPU the trace is from, for its errata (family 0: none needed;
	 * 6/85/4, a Skylake-SP with BDM70, with vmentry). */
	uint16_t cpu_family;
	uint8_t cpu_model, cpu_stepping;
	struct ptsynth_truth truth;
};

void ptsynth_config_init(struct ptsynth_config *cfg);
/* Turns on the shapes of the real traces: cbr, tsx, pip, vmcs, psb_off = 4,
 * a PSB every 256 bytes, interrupts (5000 ppm unless set). */
void ptsynth_config_real(struct ptsynth_config *cfg);
/* Generates the program and its trace. Returns 0 or -ENOMEM/-EINVAL. */
int ptsynth_generate(const struct ptsynth_config *cfg, struct ptsynth *out);
void ptsynth_free(struct ptsynth *s);

#endif
