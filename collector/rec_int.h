/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/rec_int.h - internals of the recorder (hwt_coll_rec_*), shared by
 * its source files and its unit tests, never by other modules:
 *
 *   ring.c   reading whole records out of a perf ring buffer (pure: takes
 *            the buffer and the head/tail positions);
 *   aux.c    what to copy out of an AUX area in full-trace and snapshot
 *            mode, and what PERF_RECORD_AUX flags mean for loss (pure);
 *   pt.c     the intel_pt PMU from sysfs (type, format bits, caps), user
 *            terms to perf_event_attr.config, IP filters to the kernel's
 *            filter string;
 *   synth.c  COMM/MMAP2 records for processes that existed before
 *            recording (from /proc), as perf synthesizes them;
 *   sysinfo.c the machine: CPU identity, the vDSO image, the kernel's
 *            build-id;
 *   control.c the control FIFO (snapshot, stop), as perf's --control;
 *   bufsize.c buffer sizes from the caller's privilege and limits (the
 *            kernel's mlock accounting, perf's default sizes);
 *   record.c the session: events, ring buffers, the poll loop, the writer.
 */
#ifndef HWT_COLLECTOR_REC_INT_H
#define HWT_COLLECTOR_REC_INT_H

#include <limits.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/collector.h"
#include "common/hwt.h"

/* The largest perf record (perf_event_header.size is 16 bits). */
#define HWT_COLL_RECORD_MAX 65536u

/* ------------------------------------------------------------------------ */
/* ring.c: the data area of a perf ring buffer                               */

/* Returns the next run of whole records between *pos and head (running
 * byte positions, as data_tail and data_head) of the data area `data` of
 * `size` bytes (a power of two). A run is contiguous in memory: either in
 * place in the ring, or, for the one record that wraps around the end of
 * the area, a copy of it in scratch (HWT_COLL_RECORD_MAX bytes). *out gets
 * the run, *pos moves past it.
 * Returns the run's length, 0 when *pos == head, or -HWT_EFORMAT when a
 * header is impossible (size < 8, or a record ending beyond head: the
 * kernel never writes that, so the area is not a ring or was overwritten),
 * -HWT_EINVAL when head - *pos exceeds size. */
int64_t hwt_coll_ring_next(const uint8_t *data, uint64_t size, uint64_t *pos, uint64_t head,
			   uint8_t *scratch, const uint8_t **out);

/* ------------------------------------------------------------------------ */
/* aux.c: the AUX area (Intel PT bytes)                                      */

/* A contiguous piece of the AUX area to copy, and the AUX offset (position
 * in the stream of trace bytes) its first byte has. */
struct hwt_coll_aux_span {
	uint64_t aux_offset;
	uint64_t buf_off; /* into the AUX area */
	uint64_t len;
};

/* What one read of the AUX area gives: up to two spans (the second when
 * the data wraps), in stream order. */
struct hwt_coll_aux_read {
	struct hwt_coll_aux_span span[2];
	unsigned nspans;
	uint64_t new_tail; /* full mode: the value to store in aux_tail */
	uint64_t lost;	   /* bytes known to be lost before span[0] */
	bool gap;	   /* span[0] does not continue the previous read */
};

/* Full-trace mode: the kernel's aux_head is a running byte count and it
 * never overwrites what we have not released through aux_tail (when full,
 * the PMU stops and a PERF_RECORD_AUX with TRUNCATED says so). The data is
 * [tail, head). A head more than size ahead (which the protocol excludes)
 * keeps the newest size bytes and counts the rest as lost. size is a power
 * of two. Returns 0, or -HWT_EINVAL (size not a power of two, head < tail). */
int hwt_coll_aux_full(uint64_t size, uint64_t tail, uint64_t head, struct hwt_coll_aux_read *out);

/* Snapshot (overwrite) mode: the PMU writes around the area forever and,
 * for Intel PT, the aux_head the kernel shows is only the position inside
 * the area where it stopped. Whether it wrapped since the last snapshot is
 * found from the contents: before the first wrap the area beyond the head
 * is still zero (the kernel hands out zeroed pages); later, from a copy of
 * the bytes just before the previous snapshot's head, which only a wrap
 * overwrites. A snapshot without wrap continues the previous one's stream
 * offsets; one with a wrap is the whole area, after a gap. */
struct hwt_coll_aux_snap {
	uint64_t size;	     /* area size, a power of two */
	uint64_t old;	     /* position of the previous snapshot's head */
	uint64_t stream_end; /* AUX offset after the last byte taken so far */
	bool taken;	     /* a snapshot was taken before */
	uint8_t ref[64];     /* the bytes before `old` when it was taken */
	uint32_t ref_len;
};

void hwt_coll_aux_snap_init(struct hwt_coll_aux_snap *st, uint64_t size);

/* Takes a snapshot of buf (st->size bytes) whose PMU stopped at position
 * head (0 <= head < size; head == size is read as 0). Fills out (new_tail
 * is unused) and updates st. Returns 0, or -HWT_EINVAL. */
int hwt_coll_aux_snapshot(struct hwt_coll_aux_snap *st, const uint8_t *buf, uint64_t head,
			  struct hwt_coll_aux_read *out);

/* Counters of what PERF_RECORD_AUX records said. */
struct hwt_coll_aux_stats {
	uint64_t records;   /* AUX records */
	uint64_t bytes;	    /* aux_size summed */
	uint64_t truncated; /* TRUNCATED: the area was full, trace stopped */
	uint64_t partial;   /* PARTIAL: a snapshot of a partial record */
	uint64_t collision; /* COLLISION: sample collided with another */
	uint64_t overwrite; /* OVERWRITE: snapshot-mode data */
	uint64_t gaps;	    /* records that mean a gap in the trace */
};

/* Accounts one PERF_RECORD_AUX (its flags are PERF_AUX_FLAG_*). Returns
 * true when it is a gap (TRUNCATED, PARTIAL or COLLISION). */
bool hwt_coll_aux_account(struct hwt_coll_aux_stats *st, uint64_t aux_offset, uint64_t aux_size,
			  uint64_t flags);

/* ------------------------------------------------------------------------ */
/* pt.c: the intel_pt PMU                                                    */

#define HWT_COLL_PT_MAX_FMT  32
#define HWT_COLL_PT_MAX_CAPS 32

/* A format term: bits lo..hi of config (0), config1 (1) or config2 (2). */
struct hwt_coll_pt_fmt {
	char name[32];
	uint8_t field, lo, hi;
};

struct hwt_coll_pt_cap {
	char name[32];
	uint64_t value; /* the file's hex number */
};

/* /sys/bus/event_source/devices/intel_pt/ */
struct hwt_coll_pt_pmu {
	uint32_t type;
	struct hwt_coll_pt_fmt fmt[HWT_COLL_PT_MAX_FMT];
	size_t nfmt;
	struct hwt_coll_pt_cap caps[HWT_COLL_PT_MAX_CAPS];
	size_t ncaps;
	uint32_t max_nonturbo_ratio;	   /* 0 when absent */
	uint32_t tsc_art_num, tsc_art_den; /* CPUID.15H EBX, EAX; 0 when absent */
};

/* Reads the PMU from root (NULL: "/sys"). Returns 0, -HWT_ENOPT (no
 * intel_pt PMU: not an Intel CPU with PT, or a VM that hides it),
 * -HWT_EFORMAT (a file that does not parse; errmsg says which), -errno. */
int hwt_coll_pt_pmu_read(const char *root, struct hwt_coll_pt_pmu *pmu, char *errmsg,
			 size_t errlen);

/* A cap's value, or -1 when the file is absent. */
int64_t hwt_coll_pt_cap(const struct hwt_coll_pt_pmu *pmu, const char *name);
const struct hwt_coll_pt_fmt *hwt_coll_pt_fmt(const struct hwt_coll_pt_pmu *pmu, const char *name);

/* The configuration that terms gave (after defaults and checks). */
struct hwt_coll_pt_conf {
	uint64_t config; /* attr.config */
	bool tsc, mtc, cyc, noretcomp, branch, ptw, fup_on_ptw, pwr_evt, notnt, event;
	uint32_t mtc_period, cyc_thresh, psb_period;
	bool user, kernel; /* privilege levels traced */
	bool user_set;	   /* the user named u/k explicitly */
};

/* Builds the intel_pt configuration from spec, which is either
 * "intel_pt/TERMS/MODS" (perf's -e syntax) or bare "TERMS" (--pt=TERMS).
 * TERMS: comma-separated cyc, cyc_thresh=N, mtc, mtc_period=N, tsc,
 * noretcomp, psb_period=N, branch, ptw, pwr_evt, fup_on_ptw, notnt, event,
 * pt, each optionally =0/=1 for the flags, plus user / kernel (also as the
 * MODS u and k). Defaults as perf's: pt, branch, tsc, mtc with mtc_period 3
 * (or the nearest lower valid) when the CPU has MTC, psb_period 3 (or the
 * nearest lower valid) when it has configurable PSB, user and kernel.
 * Returns 0, -HWT_EPARSE (syntax: errmsg names the term), -HWT_ENOTSUP (a
 * term this CPU's caps or this kernel's format does not support: errmsg
 * says which cap and what values are valid). */
int hwt_coll_pt_conf_parse(const struct hwt_coll_pt_pmu *pmu, const char *spec,
			   struct hwt_coll_pt_conf *conf, char *errmsg, size_t errlen);

/* Fills attr for the intel_pt event of conf (type, config, exclude_*). */
void hwt_coll_pt_attr(const struct hwt_coll_pt_pmu *pmu, const struct hwt_coll_pt_conf *conf,
		      struct perf_event_attr *attr);

/* Translates a filter spec into the string PERF_EVENT_IOC_SET_FILTER takes,
 * refusing what the kernel would refuse for Intel PT (perf_event_parse_
 * addr_filter, pt_event_addr_filters_validate), each with one line naming
 * the rule. spec is perf's syntax, filters separated by commas:
 *   filter|stop|tracestop SYM|ADDR[/SIZE] [@ FILE]
 * A symbol is looked up in FILE (which is required for symbols and for user
 * addresses) with the symbolizer and becomes its file offset and size; a
 * number with FILE is a file offset, as in perf; without FILE the address is
 * a kernel address. Refused: 'start' (PT has none), 'stop' without a size
 * (PT takes ranges only), a FILE with HWT_COLL_PT_FILTER_CPU_WIDE (the
 * kernel takes file filters on task events only), more than nranges_max
 * (caps/num_address_ranges) filters.
 * Returns the number of filters, -HWT_EPARSE (syntax), -HWT_ENOSYM (no such
 * symbol), -HWT_ENOTSUP (a kernel rule), -HWT_EINVAL (FILE is not a regular
 * file, an offset beyond it), -errno (FILE), with errmsg set. */
enum hwt_coll_pt_filter_flags {
	HWT_COLL_PT_FILTER_CPU_WIDE = 1u << 0, /* events opened with pid -1 (-a) */
};
int hwt_coll_pt_filter(const char *spec, unsigned nranges_max, unsigned flags, char *out,
		       size_t outlen, char *errmsg, size_t errlen);

/* One filter as the kernel gets it: what the PT emulator applies as the
 * kernel would (perf_event_addr_filters_apply: a file offset becomes an
 * address in each mapping of the file). */
struct hwt_coll_pt_range {
	bool stop;	     /* TraceStop (stop, tracestop); else filter */
	uint64_t addr, size; /* file offset with a file, else kernel address */
	char file[PATH_MAX]; /* the object's real path; "" for none */
};

/* hwt_coll_pt_filter() that also fills ranges[0 .. return value) (ranges
 * holds nranges_max entries; NULL: the string only). */
int hwt_coll_pt_filter_ranges(const char *spec, unsigned nranges_max, unsigned flags,
			      struct hwt_coll_pt_range *ranges, char *out, size_t outlen,
			      char *errmsg, size_t errlen);

/* Writes the pt.* metadata keys of a real PT recording through fn (the
 * emulator's keys, docs/pt-emulator.md, plus pt.caps.*). */
typedef int (*hwt_coll_meta_u64_fn)(void *ctx, const char *key, uint64_t v);
int hwt_coll_pt_meta(const struct hwt_coll_pt_pmu *pmu, const struct hwt_coll_pt_conf *conf,
		     hwt_coll_meta_u64_fn fn, void *ctx);

/* ------------------------------------------------------------------------ */
/* bufsize.c: buffer sizes from the caller's privilege and limits           */

/* What the kernel's mlock accounting of perf buffers depends on. */
struct hwt_coll_memlock {
	size_t page;
	unsigned ncpus;	   /* online CPUs: the allowance is per CPU */
	uint64_t mlock_kb; /* kernel.perf_event_mlock_kb */
	uint64_t memlock;  /* RLIMIT_MEMLOCK in bytes; UINT64_MAX: none */
	int paranoid;	   /* kernel.perf_event_paranoid */
	bool privileged;   /* CAP_PERFMON, CAP_SYS_ADMIN or paranoid -1:
			      perf's sizes for the privileged */
	bool unlimited;	   /* CAP_IPC_LOCK or paranoid -1: the kernel lets
			      this caller lock any amount */
};

/* Fills *ml for this process (paths NULL: the real /proc files; ncpus:
 * online CPUs). Returns 0. */
int hwt_coll_memlock_read(const char *paranoid_path, const char *mlock_path, unsigned ncpus,
			  struct hwt_coll_memlock *ml);

struct hwt_coll_bufplan {
	size_t data; /* data area per buffer (bytes, a power of two pages) */
	size_t aux;  /* AUX area per buffer (0 without PT) */
	bool shrunk; /* default sizes were lowered to fit the limits */
};

/* Sizes for nbuf buffers (with an AUX area each when pt): the sizes asked
 * for (0: the default, perf's for Intel PT: 4 MiB AUX when privileged,
 * else 128 KiB AUX and 256 KiB data; 1 MiB data otherwise), rounded up to
 * powers of two pages; defaults are halved while they need more locked
 * memory than the kernel allows this caller. Returns 0, or -EPERM with a
 * one-line message naming the numbers and the fixes when even that does not
 * fit, or the sizes asked for do not. */
int hwt_coll_buf_plan(const struct hwt_coll_memlock *ml, size_t nbuf, bool pt, size_t data_req,
		      size_t aux_req, struct hwt_coll_bufplan *plan, char *errmsg, size_t errlen);

/* The message hwt_coll_buf_plan gives for these sizes (for an mmap the
 * kernel refused with EPERM). Returns -EPERM. */
int hwt_coll_buf_explain(const struct hwt_coll_memlock *ml, size_t nbuf, size_t data, size_t aux,
			 char *errmsg, size_t errlen);

/* ------------------------------------------------------------------------ */
/* kcore.c: the kernel's code                                                */

/* 1 when the kernel's code can be read for decoding (proc_root/kcore is
 * readable, or a vmlinux of the running kernel is installed), else 0 with
 * the reason in why. */
int hwt_coll_kernel_code(const char *proc_root, char *why, size_t len);

/* Captures what decoding kernel code needs, as `perf record --kcore` does,
 * from proc_root (NULL: "/proc"): kallsyms (metadata "kernel.kallsyms",
 * bytes), /proc/modules ("kernel.modules", text), and a kcore-format copy
 * (an ELF core file with a PT_LOAD per range) of the kernel's text
 * [_stext, _etext) and each module's core, from kcore ("kernel.kcore");
 * where kcore cannot be opened, the kernel's text from vmlinux (NULL: the
 * running kernel's in the usual places), moved to where kallsyms puts
 * _stext (KASLR), without modules. Returns the copy's size with where it
 * came from in why, or a negative error with the reason in why (-EACCES:
 * kallsyms shows no addresses; -errno from kcore; -HWT_EFORMAT: kcore is
 * no ELF core file), or the writer's error. */
typedef int (*hwt_coll_meta_bytes_fn)(void *ctx, const char *key, const void *v, size_t len);
typedef int (*hwt_coll_meta_str_fn)(void *ctx, const char *key, const char *v);
int hwt_coll_kernel_capture(const char *proc_root, const char *vmlinux,
			    hwt_coll_meta_bytes_fn bytes, hwt_coll_meta_str_fn str, void *ctx,
			    char *why, size_t len);

/* ------------------------------------------------------------------------ */
/* control.c: the control FIFO                                              */

enum hwt_coll_ctl_cmd {
	HWT_COLL_CTL_NONE = 0, /* nothing (more) to read now */
	HWT_COLL_CTL_SNAPSHOT,
	HWT_COLL_CTL_STOP,
	HWT_COLL_CTL_PING,
	HWT_COLL_CTL_UNKNOWN,
};

struct hwt_coll_ctl {
	int fd, ack_fd; /* -1: none */
	char buf[256];
	size_t len;
};

/* Opens the FIFO ctl (and ack, may be NULL) for reading commands. Returns
 * 0, or -errno with a one-line message naming the fix. */
int hwt_coll_ctl_open(struct hwt_coll_ctl *c, const char *ctl, const char *ack, char *errmsg,
		      size_t len);
/* The next whole command read from the FIFO (answered with "ack" on the
 * ack FIFO), or HWT_COLL_CTL_NONE. */
int hwt_coll_ctl_next(struct hwt_coll_ctl *c);
void hwt_coll_ctl_close(struct hwt_coll_ctl *c);

/* ------------------------------------------------------------------------ */
/* synth.c: records for what existed before recording                       */

/* How synthesized records end: the sample_id_all trailer of the event they
 * are attributed to. */
struct hwt_coll_synth {
	uint64_t sample_type;  /* of the tracking event */
	uint64_t id;	       /* its sample id (PERF_EVENT_IOC_ID) */
	const char *proc_root; /* NULL: "/proc" */
	int skip_pid;	       /* all: not this one (a launched command held
				  before its exec: its exec tells what it runs) */
	/* Called with each record (whole, kernel layout). */
	int (*emit)(void *ctx, const void *rec, size_t len);
	void *ctx;
};

/* COMM for each thread and MMAP2 for each executable mapping of process
 * pid, from /proc/pid/{task,maps}. Returns 0, -ESRCH (gone), -errno, or
 * emit's error. */
int hwt_coll_synth_process(const struct hwt_coll_synth *s, int pid);
/* The same for every process in /proc (system-wide recording). */
int hwt_coll_synth_all(const struct hwt_coll_synth *s);

/* Builds one record into buf (cap bytes): header, body, trailer. Returns
 * its length or -HWT_ETOOBIG. */
int hwt_coll_synth_comm(const struct hwt_coll_synth *s, uint8_t *buf, size_t cap, uint32_t pid,
			uint32_t tid, const char *comm);
int hwt_coll_synth_mmap2(const struct hwt_coll_synth *s, uint8_t *buf, size_t cap, uint32_t pid,
			 uint64_t start, uint64_t len, uint64_t pgoff, uint32_t maj, uint32_t min,
			 uint64_t ino, uint32_t prot, const char *file);

/* ------------------------------------------------------------------------ */
/* sysinfo.c                                                                 */

struct hwt_coll_cpuinfo {
	char vendor[32];
	char desc[128];
	uint32_t family, model, stepping;
	bool known;
};

/* From /proc/cpuinfo (root NULL: "/proc"). Returns 0 or -errno. */
int hwt_coll_cpuinfo(const char *proc_root, struct hwt_coll_cpuinfo *ci);

/* A copy of this process's vDSO (the same image every process of this
 * kernel maps). *image is malloc'd. Returns its size, 0 when there is no
 * vDSO, -errno. */
int64_t hwt_coll_vdso(void **image, uint64_t *start);

/* The running kernel's build-id from /sys/kernel/notes (root NULL: "/sys").
 * Returns its length, 0 when unknown. */
int hwt_coll_kernel_build_id(const char *sys_root, uint8_t *id, size_t cap);

#endif /* HWT_COLLECTOR_REC_INT_H */
