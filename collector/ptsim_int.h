/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/ptsim_int.h - the simulated intel_pt PMU (HWT_PT_SIM=1), shared
 * by its two halves:
 *
 *   ptsim.c       the kernel's side: perf_event_open, ioctl, mmap, munmap,
 *                 read and close on intel_pt and dummy events, with the
 *                 rules the kernel applies (attribute validation, PT's
 *                 exclusivity, inherit limits, SET_OUTPUT, address filters,
 *                 mlock accounting), the sysfs tree of the simulated
 *                 machine, and the emulator a launched command runs under;
 *   ptsim_feed.c  the hardware: a thread that follows what the PT emulator
 *                 writes (one stream per emulated thread, the sideband),
 *                 runs the threads on the simulated CPUs, and writes their
 *                 trace into the AUX areas and the sideband into the ring
 *                 buffers as the kernel and the CPU would (AUX head and
 *                 tail, wrap, overwrite, overruns that disable the event,
 *                 PERF_RECORD_AUX flags, ITRACE_START, SWITCH).
 *
 * The fds handed out are eventfds; the buffers are memfds laid out as the
 * kernel's (a control page, the data area, the AUX area at aux_offset), so
 * the recorder reads them exactly as it reads the kernel's.
 */
#ifndef HWT_COLLECTOR_PTSIM_INT_H
#define HWT_COLLECTOR_PTSIM_INT_H

#include <linux/perf_event.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/collector.h"
#include "perfsys/perfsys.h"

/* A ring buffer: what one event's fd was mapped as, shared by the events
 * that SET_OUTPUT to it. */
struct ptsim_buf {
	int memfd;
	uint8_t *map; /* the simulator's own mapping: control page, data, AUX */
	size_t map_len;
	size_t page;
	struct perf_event_mmap_page *pg;
	uint8_t *data;
	size_t data_size;
	uint8_t *aux; /* NULL until the AUX area is mapped */
	size_t aux_off, aux_size;
	bool overwrite;	    /* AUX mapped read-only: snapshot mode */
	int cpu;	    /* of the event it was mapped for */
	int wake_fd;	    /* that event's eventfd */
	int refs;	    /* events attached + user mappings */
	int aux_maps;	    /* user mappings of the AUX area */
	uint64_t charged;   /* pages charged to the user's locked memory */
	uint64_t lost;	    /* records that found no room, not yet reported */
	uint64_t lost_id;   /* ... of which event */
	bool written;	    /* data or AUX written since the reader caught up */
	bool stream_on;	    /* the AUX stream's trace is enabled at its end */
	int32_t last_tid;   /* whose trace ends the AUX stream (-1: none) */
	uint64_t aux_head;  /* running AUX position (overwrite: wraps) */
	uint64_t data_head; /* running data position */
	/* "wait": trace that found no room yet, and its AUX record's fields */
	uint8_t *pend;
	size_t npend, cappend;
	struct ptsim_event *pend_ev;
	uint32_t pend_pid, pend_tid;
	int pend_cpu;
	uint64_t pend_time;
};

enum ptsim_kind {
	PTSIM_PT,    /* intel_pt */
	PTSIM_DUMMY, /* software dummy: sideband only */
};

struct ptsim_event {
	int fd; /* an eventfd */
	enum ptsim_kind kind;
	struct perf_event_attr attr;
	int pid, cpu; /* as opened */
	uint64_t id;
	bool enabled;
	bool exec_pending;     /* enable_on_exec, the exec not seen yet */
	bool overrun;	       /* disabled by a full AUX area */
	struct ptsim_buf *buf; /* mapped or SET_OUTPUT; NULL: none */
	bool mapped;	       /* buf is its own mapping */
	char *filter;	       /* the accepted filter string */
	int32_t *started;      /* threads an ITRACE_START was sent for */
	size_t nstarted, capstarted;
	uint64_t opened_time; /* for inherit: threads created later */
	uint64_t overruns;    /* disabled by a full AUX area, times */
	uint64_t truncated;   /* AUX records flagged TRUNCATED */
};

struct ptsim_map {
	void *addr;
	size_t len;
	struct ptsim_buf *buf;
	bool aux;
};

struct ptsim_feed;

struct ptsim {
	struct hwt_psys_ops ops; /* its table (with its sysfs root) */
	pthread_mutex_t lock;
	struct hwt_psys *self; /* the handle it is installed in */
	struct ptsim_event **ev;
	size_t nev, capev;
	struct ptsim_map *maps;
	size_t nmaps, capmaps;
	unsigned ncpus;
	uint32_t pt_type;
	size_t page;
	char dir[PATH_MAX - 64];    /* its temporary folder */
	char sysfs[PATH_MAX];	    /* dir/sys: the machine's sysfs */
	char workdir[PATH_MAX];	    /* dir/emu: what the emulator writes */
	char kernel[PATH_MAX - 64]; /* kernel=DIR: its kcore, kallsyms and
				     * modules are the machine's ("": /proc's) */
	char proc[PATH_MAX];	    /* dir/proc: the machine's procfs then */
	char qemu[PATH_MAX];
	char plugarg[PATH_MAX + 256];
	bool wait;	/* the hardware waits for room (no loss) */
	unsigned slice; /* pieces a thread runs before the scheduler takes its
			 * CPU (0: only when another thread waits) */
	uint64_t next_id;
	int exclusive;		 /* PT events: > 0 per task, < 0 per CPU */
	uint64_t locked, pinned; /* pages charged (kernel: user->locked_vm,
				  * mm->pinned_vm) */
	int child;		 /* the command run under the emulator */
	struct ptsim_feed *feed; /* the hardware, once the command runs */
};

/* Times the feeder waits for a reader to make room or re-enable an event
 * before it acts as the hardware does (truncate, drop). */
#define PTSIM_WAIT_MS 2000

/* ptsim.c, for the feeder (called with lock held). */
struct ptsim_event *ptsim_event_find(struct ptsim *sim, int fd);

/* ptsim_feed.c */
int ptsim_feed_start(struct ptsim *sim);
/* One synchronous pass that also completes the streams of processes that
 * are gone; 1 while trace waits for room, 0 when all is written. */
int ptsim_feed_settle(struct ptsim *sim);
void ptsim_feed_stop(struct ptsim *sim);
/* A pass of the feeder now (lock held): before an event is disabled. */
void ptsim_feed_sync(struct ptsim *sim);

#endif /* HWT_COLLECTOR_PTSIM_INT_H */
