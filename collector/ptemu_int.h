/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/ptemu_int.h - internals of the PT emulator, shared by the
 * encoder core (ptemu_enc.c), the qemu plugin that drives it
 * (ptemu-plugin/ptemu_plugin.c, loaded into qemu-x86_64) and the launcher
 * that collects the plugin's output (ptemu_run.c).
 *
 * The encoder core turns control-flow events of one thread (conditional
 * branch taken or not, indirect branch to X, return to X, entry to the
 * kernel, fault at X, return from the kernel to X, instructions retired)
 * into the Intel PT packet stream a CPU tracing user space (OS=0, USR=1)
 * would write, with libipt's packet encoder. It writes into windows of
 * memory that its owner supplies through a callback, so the plugin can
 * write straight into a shared file mapping (which survives the traced
 * process being killed) and tests can write into a growable buffer.
 *
 * The plugin <-> launcher protocol is a directory of files:
 *   pt.<tid>.<n>   one per traced thread: a 4 KiB header (struct
 *                  hwt_ptemu_filehdr, updated while tracing so that a killed
 *                  process leaves a usable file) followed by the PT bytes;
 *   sideband       perf records (kernel layout, sample_id_all trailer as in
 *                  hwt_ptemu_attr()) appended by all threads and processes;
 *   truth.<tid>.<n> optional: one struct hwt_ptemu_truth per branch event
 *                  (ground truth for tests).
 */
#ifndef HWT_COLLECTOR_PTEMU_INT_H
#define HWT_COLLECTOR_PTEMU_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <intel-pt.h>
#include <linux/perf_event.h>

#include "collector/collector.h"

/* The return-compression stack: libipt's decoder keeps the last 64 call
 * return addresses in a ring that drops the oldest entry when full; the
 * emulated CPU must compress exactly the returns the decoder can resolve. */
#define HWT_PTEMU_RETSTACK 64

/* Packets are emitted one at a time (the longest, PSB, has 16 bytes); the
 * encoder asks for a new window when fewer than this many bytes remain. */
#define HWT_PTEMU_MAX_EMIT 128

/* Ground-truth event kinds (struct hwt_ptemu_truth.kind). */
enum hwt_ptemu_truth_kind {
	HWT_PTEMU_T_COND = 1, /* conditional branch at ip; target: 1 taken, 0 not */
	HWT_PTEMU_T_INDIRECT, /* indirect jmp/call at ip to target */
	HWT_PTEMU_T_RET,      /* near return at ip to target */
	HWT_PTEMU_T_SYSCALL,  /* syscall at ip (tracing stops) */
	HWT_PTEMU_T_FAULT,    /* event before ip was executed (FUP ip) */
	HWT_PTEMU_T_ASYNC,    /* event after the previous instruction (FUP ip) */
	HWT_PTEMU_T_ENABLE,   /* tracing (re)starts at target */
	HWT_PTEMU_T_LOST,     /* an event whose IP is unknown: OVF emitted */
	HWT_PTEMU_T_OVF,      /* an injected overflow starts after the branch
			       * before it (whose target a decoder cannot
			       * see: the OVF comes first); ip: next block */
	HWT_PTEMU_T_LEAVE,    /* the branch (or instruction) at ip took
			       * execution out of the filter's ranges to
			       * target: TIP.PGD(target), no TNT/TIP */
	HWT_PTEMU_T_STOP,     /* TraceStop at target: tracing ends */
};

struct hwt_ptemu_truth {
	uint64_t kind; /* enum hwt_ptemu_truth_kind */
	uint64_t ip;
	uint64_t target;
};

/* Where the encoder writes: [pos, end) is free space. When fewer than
 * HWT_PTEMU_MAX_EMIT bytes remain, or at flush, it calls next(), which must
 * keep the bytes before pos and supply a new window (next may return the
 * same window emptied). Returns 0 or a negative error. */
struct hwt_ptemu_out {
	uint8_t *begin, *pos, *end;
	int (*next)(struct hwt_ptemu_out *out);
	void *ctx;
	uint64_t flushed; /* bytes handed off in earlier windows */
};

/* Emulated CPU and clock (see docs/pt-emulator.md, "Timing"). */
struct hwt_ptemu_cpu {
	uint16_t family;
	uint8_t model, stepping;
	uint8_t nom_freq;     /* TSC frequency / 100 MHz */
	uint8_t cbr;	      /* core:bus ratio; equal to nom_freq */
	uint32_t cpuid15_eax; /* TSC / ART = ebx / eax */
	uint32_t cpuid15_ebx;
};

/* Counters of one thread's stream; also stored in the file header. */
struct hwt_ptemu_counts {
	uint64_t insns;	    /* instructions retired in user space */
	uint64_t cond;	    /* conditional branches */
	uint64_t taken;	    /* ... of which taken */
	uint64_t indirect;  /* TIP for indirect jmp/call */
	uint64_t ret_comp;  /* compressed returns (TNT bit) */
	uint64_t ret_tip;   /* uncompressed returns (TIP) */
	uint64_t kernel;    /* entries to the kernel (TIP.PGD) */
	uint64_t faults;    /* FUP+TIP.PGD for exceptions and signals */
	uint64_t lost;	    /* events encoded as OVF (position unknown) */
	uint64_t ovf;	    /* injected overflows (term ovf) */
	uint64_t ovf_insns; /* ... instructions they left untraced */
	uint64_t outside;   /* instructions retired with packet generation
			     * off by the address filters (or after a
			     * TraceStop): untraced */
	uint64_t leaves;    /* TIP.PGD at filter crossings */
	uint64_t psb;	    /* PSB+ emitted */
	uint64_t bytes;	    /* PT bytes */
};

struct hwt_ptemu_enc {
	struct hwt_ptemu_terms terms;
	struct hwt_ptemu_cpu cpu;
	struct pt_config ptcfg;
	struct pt_encoder *enc;
	struct hwt_ptemu_out *out;

	uint64_t tsc0;	  /* clock at the thread's start */
	uint64_t last_ip; /* for IP compression */
	bool have_ip;	  /* last_ip valid (not after PSB or OVF) */
	uint64_t tnt;	  /* pending TNT bits, oldest most significant */
	unsigned int ntnt;
	bool enabled;	   /* PacketEn */
	bool mode_sent;	   /* MODE.Exec since the last PSB */
	bool started;	   /* first PSB+ written */
	uint64_t next_psb; /* stream offset at which a PSB is due */
	uint64_t last_cyc; /* clock at the last CYC */
	uint64_t last_mtc; /* CTC >> mtc_period at the last MTC */
	uint64_t next_mtc; /* clock at which the next MTC is due */

	/* Shapes (terms tsx, pip, vmcs, psb_off, ovf). */
	uint64_t cr3;	       /* PIP payload: the process's (made-up) CR3 */
	uint64_t next_ovf;     /* stream offset at which an overflow starts */
	uint64_t ovf_start;    /* n.insns when the overflow started */
	unsigned int ovf_left; /* blocks still lost; 0: not overflowing */
	bool branch_pkt;       /* the last branch wrote a packet */
	uint64_t ovf_outside;  /* n.outside when the overflow started */

	/* Address filters (IA32_RTIT_ADDRn_CFG): the owner knows the
	 * ranges and announces each crossing (hwt_ptemu_enc_filter_*). */
	bool leave;	   /* the next transfer leaves the ranges ... */
	bool leave_stop;   /* ... into a TraceStop range */
	uint64_t leave_to; /* ... to this IP */
	bool stopped;	   /* TraceStop: tracing ended for good */

	uint64_t ret[HWT_PTEMU_RETSTACK + 1];
	uint8_t rtop, rbottom;

	struct hwt_ptemu_counts n;

	/* Optional ground truth: called for every event; NULL = off. */
	void (*truth)(void *ctx, const struct hwt_ptemu_truth *t);
	void *truth_ctx;
};

/* The emulated CPU (family 6 model 85 stepping 4, Skylake-SP, 2.1 GHz) */
void hwt_ptemu_cpu_default(struct hwt_ptemu_cpu *cpu);

/* Fills a libipt config for decoding what the encoder writes with these
 * terms and CPU (buffer left NULL). */
void hwt_ptemu_ptconfig(struct pt_config *cfg, const struct hwt_ptemu_terms *terms,
			const struct hwt_ptemu_cpu *cpu);

/* Clock of the emulated CPU: TSC ticks at `insns` retired instructions. */
static inline uint64_t hwt_ptemu_tsc(const struct hwt_ptemu_enc *e, uint64_t insns)
{
	return e->tsc0 + insns * e->terms.tsc_per_insn;
}

/* Initialises an encoder writing to out, clock starting at tsc0. Returns 0,
 * -ENOMEM or -HWT_EINVAL (bad terms). */
int hwt_ptemu_enc_init(struct hwt_ptemu_enc *e, const struct hwt_ptemu_terms *terms,
		       const struct hwt_ptemu_cpu *cpu, struct hwt_ptemu_out *out, uint64_t tsc0);
void hwt_ptemu_enc_fini(struct hwt_ptemu_enc *e);

/* Events, in program order. All return 0 or a negative error from the
 * output window callback or libipt (-HWT_EINTERNAL). */

/* n more instructions retired (before the event that follows); while
 * packet generation is off they are untraced (n.outside). */
static inline void hwt_ptemu_enc_retire(struct hwt_ptemu_enc *e, uint64_t n)
{
	e->n.insns += n;
	if (!e->enabled)
		e->n.outside += n;
}

/* Tracing (re)starts at ip: on a return from the kernel to user space, at
 * a thread's first instruction. Also the point where PSB+ is inserted. */
int hwt_ptemu_enc_enable(struct hwt_ptemu_enc *e, uint64_t ip);
/* Execution continues at ip (called at every basic-block boundary while
 * enabled): emits timing packets and PSB+ when due. */
int hwt_ptemu_enc_at(struct hwt_ptemu_enc *e, uint64_t ip);
int hwt_ptemu_enc_cond(struct hwt_ptemu_enc *e, uint64_t ip, bool taken);
/* Near call at ip whose return address is ret_ip (not for call next-insn). */
void hwt_ptemu_enc_call(struct hwt_ptemu_enc *e, uint64_t ret_ip);
int hwt_ptemu_enc_indirect(struct hwt_ptemu_enc *e, uint64_t ip, uint64_t target);
int hwt_ptemu_enc_ret(struct hwt_ptemu_enc *e, uint64_t ip, uint64_t target);
/* SYSCALL/INT at ip: control passes to the kernel (TIP.PGD, IP suppressed). */
int hwt_ptemu_enc_syscall(struct hwt_ptemu_enc *e, uint64_t ip);
/* An exception (fault = true: before ip executed) or an asynchronous event
 * (signal; ip is the next instruction) takes control to the kernel:
 * FUP(ip), TIP.PGD. */
int hwt_ptemu_enc_event(struct hwt_ptemu_enc *e, uint64_t ip, bool fault);
/* Control went to the kernel at a point that cannot be told (e.g. after a
 * conditional branch whose outcome is unknown): OVF, tracing disabled. */
int hwt_ptemu_enc_lost(struct hwt_ptemu_enc *e, uint64_t ip);
/* Address filters, as the SDM's "Filtering by IP" section has them: packet
 * generation is on only while the IP is in a filter range; leaving writes
 * TIP.PGD with the first IP outside (instead of the TNT bit or TIP of the
 * branch that left, which a decoder binds the TIP.PGD to), entering
 * writes TIP.PGE with the first IP inside; entering a TraceStop range ends
 * tracing with TIP.PGD and TraceStop (only TraceStop while off). Kernel
 * entries while inside are unchanged (TIP.PGD, or FUP + TIP.PGD), and
 * while outside write nothing. All event functions above write nothing
 * while packet generation is off.
 *
 * filter_exit announces that the transfer being reported leaves the
 * ranges for target (stop: into a TraceStop range): the next cond,
 * indirect or ret call writes TIP.PGD(target) instead of its packet; a
 * transfer with no packet of its own (direct jmp or call, falling through
 * to the next instruction) completes it with filter_flush(ip of the
 * instruction). A kernel entry cancels it. */
void hwt_ptemu_enc_filter_exit(struct hwt_ptemu_enc *e, uint64_t target, bool stop);
int hwt_ptemu_enc_filter_flush(struct hwt_ptemu_enc *e, uint64_t ip);
/* Execution enters the ranges at ip (packet generation off until now, not
 * in the kernel): TIP.PGE(ip), MODE.Exec before it when needed. */
int hwt_ptemu_enc_filter_enter(struct hwt_ptemu_enc *e, uint64_t ip);
/* Execution reaches a TraceStop range while packet generation is off:
 * TraceStop; tracing ends. */
int hwt_ptemu_enc_trace_stop(struct hwt_ptemu_enc *e);

/* Flushes pending TNT bits and hands the window to out->next. */
int hwt_ptemu_enc_flush(struct hwt_ptemu_enc *e);

/* Stream offset of the next byte. */
static inline uint64_t hwt_ptemu_enc_offset(const struct hwt_ptemu_enc *e)
{
	return e->out->flushed + (uint64_t)(e->out->pos - e->out->begin);
}

/* ------------------------------------------------------------------------ */
/* The plugin's per-thread file header.                                     */

#define HWT_PTEMU_FILE_MAGIC 0x31554d4554505748ull /* "HWPTEMU1" */
#define HWT_PTEMU_FILE_HDR   4096u

enum hwt_ptemu_end {
	HWT_PTEMU_END_RUNNING = 0, /* never finished: killed or crashed */
	HWT_PTEMU_END_EXIT = 1,	   /* thread or process exited */
	HWT_PTEMU_END_EXEC = 2,	   /* execve: the new program is not traced */
	HWT_PTEMU_END_SIGNAL = 3,  /* killed by a signal qemu saw */
};

struct hwt_ptemu_filehdr {
	uint64_t magic;
	uint64_t used; /* PT bytes after the header */
	uint32_t pid, tid;
	uint32_t ppid, ptid; /* creator; 0 for the first thread */
	uint64_t tsc_start, tsc_end;
	uint32_t end; /* enum hwt_ptemu_end */
	int32_t exit_status;
	struct hwt_ptemu_counts n;
	/* Live state, stored at every block (and instruction) so that the
	 * launcher can close the stream of a thread that died without notice:
	 * pending TNT bits, then FUP(cur_ip), TIP.PGD. */
	uint64_t pend_tnt;
	uint32_t pend_ntnt;
	uint32_t in_kernel; /* tracing disabled: nothing to close */
	uint64_t cur_ip;    /* last instruction reached (not completed) */
	uint64_t cur_idx;   /* ... its index in its block */
	uint64_t insns_tb;  /* instructions retired before that block */
};

/* Bytes that close a stream ended without notice (see above) into buf
 * (>= 64 bytes). Returns their length or a negative error. */
int hwt_ptemu_close_stream(const struct hwt_ptemu_filehdr *hdr, uint8_t *buf, size_t cap);

/* Inverse of hwt_ptemu_terms_config(), with the clock's tsc_per_insn. */
void hwt_ptemu_terms_from_config(struct hwt_ptemu_terms *terms, uint64_t config,
				 uint32_t tsc_per_insn);

/* The shape terms (tsx, pip, vmcs, psb_bytes, psb_off, ovf), which the
 * perf config word does not hold, as the plugin's shape= argument
 * ("FLAGS.PSB_BYTES.PSB_OFF.OVF": no commas, which qemu splits on) and
 * back. Return the length written / 0 or -HWT_EINVAL. */
int hwt_ptemu_shape_arg(const struct hwt_ptemu_terms *terms, char *buf, size_t cap);
int hwt_ptemu_shape_parse(struct hwt_ptemu_terms *terms, const char *arg);

/* Name of the thread's COMM, from argv[0]'s basename (as the kernel's
 * 16-byte comm). */
void hwt_ptemu_comm(char comm[16], const char *path);

/* ------------------------------------------------------------------------ */
/* Sideband records in the kernel's layout.                                 */

/* The sample_id trailer we write: TID, TIME, CPU, IDENTIFIER (32 bytes). */
#define HWT_PTEMU_SAMPLE_TYPE                                                                      \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)
#define HWT_PTEMU_SAMPLE_ID 1u /* the event's sample id */

/* Builds a record into buf (cap bytes). Return the record size, or
 * -HWT_ETOOBIG when it does not fit. time is perf clock ns. */
int hwt_ptemu_rec_mmap2(void *buf, size_t cap, uint32_t pid, uint32_t tid, uint64_t addr,
			uint64_t len, uint64_t pgoff, uint32_t maj, uint32_t min, uint64_t ino,
			uint32_t prot, uint32_t flags, const char *file, uint64_t time);
int hwt_ptemu_rec_comm(void *buf, size_t cap, uint32_t pid, uint32_t tid, const char *comm,
		       bool exec, uint64_t time);
/* type is PERF_RECORD_FORK or PERF_RECORD_EXIT. */
int hwt_ptemu_rec_task(void *buf, size_t cap, uint32_t type, uint32_t pid, uint32_t ppid,
		       uint32_t tid, uint32_t ptid, uint64_t time);
int hwt_ptemu_rec_itrace_start(void *buf, size_t cap, uint32_t pid, uint32_t tid, uint64_t time);
int hwt_ptemu_rec_aux(void *buf, size_t cap, uint32_t pid, uint32_t tid, uint64_t offset,
		      uint64_t size, uint64_t flags, uint64_t time);

/* perf clock ns of a TSC value, with the time.* conversion we store. */
uint64_t hwt_ptemu_tsc_to_ns(uint64_t tsc);
/* That conversion as perf_event_mmap_page's time_shift/mult/zero. */
void hwt_ptemu_time_conv(uint32_t *shift, uint32_t *mult, uint64_t *zero);

/* PIP and VMCS payloads of the emulated CPU (terms pip, vmcs): any
 * page-aligned values; one address space, one guest. */
#define HWT_PTEMU_CR3  0x1fa2c000ull
#define HWT_PTEMU_VMCS 0x38e0ed000ull

/* The emulated TSC when the traced command starts (any fixed value: the
 * clock is deterministic; this one is 1 s of TSC after zero). */
#define HWT_PTEMU_TSC0 2100000000ull

/* Address ranges of the emulated CPU (caps/num_address_ranges of a
 * Skylake-SP). */
#define HWT_PTEMU_ADDR_RANGES 2

/* Plugin arguments (qemu -plugin FILE,key=value,...): dir=WORKDIR,
 * cfg=<hwt_ptemu_terms_config() in hex>, tpi=<tsc_per_insn>, truth=0|1,
 * shape=<hwt_ptemu_shape_arg()>, filt=<the address filters:
 * KIND:OFF:SIZE:DEV:INO joined by '+', hex, KIND f (filter) or s
 * (TraceStop), a range of file DEV/INO (st_dev, st_ino)>. */

#endif /* HWT_COLLECTOR_PTEMU_INT_H */
