/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bench/bench_unwind.c - the unwinding engine, chosen on evidence: every
 * user stack of a --call-graph dwarf recording (perf.data or .hwt) is
 * unwound twice, by hwtrace's own CFI interpreter (unwind/, what report,
 * script, flame and trace use) and by elfutils' unwinder (libdw's
 * dwfl_getthread_frames, what perf uses), and the two are timed (CPU time
 * of the unwinding calls only) and compared frame by frame.
 *
 * libdw is given its best case, not perf's: one Dwfl per process for the
 * whole run (its modules reported from the recording's mappings as they
 * arrive, its CFI cached across samples), where perf 6.1 builds a new Dwfl
 * for every sample. Both read memory from the sample's stack copy only.
 *
 * Usage: bench_unwind FILE   (prints one table)
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "format/format.h"
#include "symbolize/symbolize.h"
#include "unwind/unwind.h"

#define MAXF 256

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- libdw: one Dwfl per process ---------------------------------------- */

struct cur {
	const struct hwt_unw_regs *regs;
	const struct hwt_unw_stack *stack;
	pid_t tid;
};

struct proc {
	uint32_t pid;
	Dwfl *dwfl;
	bool attached;
	struct cur cur;
};

static struct proc *procs;
static size_t nprocs;

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct cur *c = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = arg;
	return c->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	const struct cur *c = arg;
	uint64_t off = addr - c->stack->start;

	(void)dwfl;
	if (addr < c->stack->start || off >= c->stack->size || c->stack->size - off < 8)
		return false;
	*result = hwt_le64(c->stack->data + off);
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct cur *c = arg;
	Dwarf_Word r[17];

	for (int i = 0; i < 17; i++)
		r[i] = c->regs->r[i];
	return dwfl_thread_state_registers(thread, 0, 17, r);
}

static const Dwfl_Thread_Callbacks thread_cbs = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

static char *debuginfo_path;
static const Dwfl_Callbacks offline_cbs = {
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
    .section_address = dwfl_offline_section_address,
    .find_elf = dwfl_build_id_find_elf,
};

static struct proc *proc_get(uint32_t pid)
{
	for (size_t i = 0; i < nprocs; i++)
		if (procs[i].pid == pid)
			return &procs[i];
	procs = realloc(procs, (nprocs + 1) * sizeof(*procs));
	memset(&procs[nprocs], 0, sizeof(*procs));
	procs[nprocs].pid = pid;
	procs[nprocs].dwfl = dwfl_begin(&offline_cbs);
	return &procs[nprocs++];
}

/* The vDSO image (the recording's copy, else this process's: the same
 * kernel), in a file for libdw, in memory for hwtrace. */
static char vdso_path[64];

static void vdso_setup(const struct hwt_fmt_session *s, struct hwt_sym_aspace *as)
{
	const struct hwt_fmt_meta *m = hwt_fmt_session_meta_find(s, HWT_META_VDSO_IMAGE);
	const void *data = NULL;
	size_t size = 0;
	char line[512];
	FILE *f;

	if (m && m->type == HWT_FMT_META_BYTES) {
		data = m->v.bytes;
		size = m->len;
	} else if ((f = fopen("/proc/self/maps", "re"))) {
		while (fgets(line, sizeof(line), f)) {
			unsigned long long a, b;

			if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &a, &b) == 2) {
				data = (const void *)(uintptr_t)a;
				size = (size_t)(b - a);
			}
		}
		fclose(f);
	}
	if (!data)
		return;
	hwt_sym_aspace_image(as, "[vdso]", data, size);
	snprintf(vdso_path, sizeof(vdso_path), "/tmp/bench_unwind_vdso.%d", (int)getpid());
	if ((f = fopen(vdso_path, "wb"))) {
		fwrite(data, 1, size, f);
		fclose(f);
	}
}

static void dw_mmap(uint32_t pid, const char *path, uint64_t start, uint64_t pgoff)
{
	struct proc *p;

	if (!strcmp(path, "[vdso]") && vdso_path[0])
		path = vdso_path;
	if (path[0] != '/')
		return;
	p = proc_get(pid);
	dwfl_report_begin_add(p->dwfl);
	/* perf's unwind-libdw.c reports a map the same way. */
	dwfl_report_elf(p->dwfl, path, path, -1, start - pgoff, false);
	dwfl_report_end(p->dwfl, NULL, NULL);
}

struct dw_out {
	uint64_t *ips;
	unsigned n;
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct dw_out *o = arg;
	Dwarf_Addr pc;
	bool act;

	if (!dwfl_frame_pc(state, &pc, &act))
		return DWARF_CB_ABORT;
	o->ips[o->n++] = pc;
	return o->n == MAXF ? DWARF_CB_ABORT : DWARF_CB_OK;
}

static unsigned dw_unwind(uint32_t pid, uint32_t tid, const struct hwt_unw_regs *regs,
			  const struct hwt_unw_stack *st, uint64_t *ips)
{
	struct proc *p = proc_get(pid);
	struct dw_out o = {ips, 0};

	p->cur.regs = regs;
	p->cur.stack = st;
	p->cur.tid = (pid_t)tid;
	if (!p->attached) {
		if (!dwfl_attach_state(p->dwfl, NULL, (pid_t)pid, &thread_cbs, &p->cur))
			return 0;
		p->attached = true;
	}
	dwfl_getthread_frames(p->dwfl, (pid_t)tid, frame_cb, &o);
	return o.n;
}

/* --- hwtrace ------------------------------------------------------------- */

struct hw {
	struct hwt_sym_aspace *as;
	uint32_t pid;
	uint64_t time;
};

static int hw_find(void *ctx, uint64_t ip, struct hwt_unw_module *mod)
{
	struct hw *h = ctx;
	struct hwt_sym_loc loc;
	int err = hwt_sym_aspace_lookup(h->as, h->pid, h->time, ip, &loc);

	if (err < 0)
		return err == -HWT_ENOSYM ? err : 0;
	mod->obj = loc.obj;
	mod->bias = loc.obj ? ip - loc.addr : 0;
	mod->unreadable = !loc.obj;
	return 0;
}

int main(int argc, char **argv)
{
	struct hwt_fmt_session *s;
	struct hwt_fmt_record rec;
	struct hwt_sym_cache *cache;
	struct hwt_sym_aspace_config acfg;
	struct hwt_unw *u;
	struct hw h;
	uint64_t off, samples = 0, same = 0, frames_hw = 0, frames_dw = 0, shown = 0;
	double t_hw = 0, t_dw = 0;
	static uint64_t ips[MAXF];
	static struct hwt_unw_frame fr[MAXF];
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: bench_unwind FILE\n");
		return 2;
	}
	if ((err = hwt_fmt_session_open(&s, argv[1], NULL, &off)) < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], hwt_strerror(err));
		return 1;
	}
	hwt_sym_cache_alloc(NULL, &cache);
	hwt_sym_aspace_config_init(&acfg);
	acfg.cache = cache;
	hwt_sym_aspace_alloc(&acfg, &h.as);
	hwt_unw_alloc(NULL, &u);
	vdso_setup(s, h.as);
	while ((err = hwt_fmt_session_next(s, &rec, &off)) == 0) {
		const struct hwt_fmt_sample *smp = &rec.u.sample;
		struct hwt_unw_regs regs;
		struct hwt_unw_stack st;
		struct hwt_unw_result res;
		unsigned ndw;
		int nhw;
		double t0;

		if (rec.type == PERF_RECORD_MMAP2 || rec.type == PERF_RECORD_MMAP) {
			struct hwt_sym_mmap_event ev = {
			    .pid = rec.u.mmap.pid,
			    .tid = rec.u.mmap.tid,
			    .time = rec.id.time,
			    .start = rec.u.mmap.addr,
			    .len = rec.u.mmap.len,
			    .pgoff = rec.u.mmap.pgoff,
			    .prot = rec.type == PERF_RECORD_MMAP2 ? rec.u.mmap.prot : 4,
			    .filename = rec.u.mmap.filename,
			};

			if (!(ev.prot & 4) || !ev.filename)
				continue;
			hwt_sym_aspace_mmap(h.as, &ev);
			dw_mmap(ev.pid, ev.filename, ev.start, ev.pgoff);
			continue;
		}
		if (rec.type == PERF_RECORD_COMM) {
			struct hwt_sym_comm_event ev = {
			    rec.u.comm.pid, rec.u.comm.tid, rec.id.time, rec.u.comm.comm,
			    (rec.misc & PERF_RECORD_MISC_COMM_EXEC) != 0};

			hwt_sym_aspace_comm(h.as, &ev);
			continue;
		}
		if (rec.type != PERF_RECORD_SAMPLE || !smp->stack_user ||
		    hwt_unw_regs_from_perf(smp->regs_user_abi, smp->regs_user_mask, smp->regs_user,
					   &regs) < 0)
			continue;
		st.start = regs.r[HWT_UNW_RSP];
		st.data = smp->stack_user;
		st.size = (size_t)smp->stack_user_dyn_size;
		h.pid = smp->pid;
		h.time = smp->time;
		samples++;
		t0 = cpu_now();
		nhw = hwt_unw_walk(u, &regs, &st, hw_find, &h, fr, MAXF, &res);
		t_hw += cpu_now() - t0;
		t0 = cpu_now();
		ndw = dw_unwind(smp->pid, smp->tid, &regs, &st, ips);
		t_dw += cpu_now() - t0;
		frames_hw += nhw > 0 ? (uint64_t)nhw : 0;
		frames_dw += ndw;
		{
			bool eq = nhw >= 0 && (unsigned)nhw == ndw;

			for (unsigned i = 0; eq && i < ndw; i++)
				eq = fr[i].ip == ips[i];
			same += eq;
			if (!eq && shown++ < 3) {
				fprintf(stderr,
					"differ: sample %" PRIu64
					": hwtrace %d frames (%s), libdw %u:",
					samples, nhw, hwt_unw_end_name(res.end), ndw);
				for (unsigned i = 0; i < 12 && (i < ndw || (int)i < nhw); i++)
					fprintf(stderr, " %" PRIx64 "/%" PRIx64,
						(int)i < nhw ? fr[i].ip : 0, i < ndw ? ips[i] : 0);
				fputc('\n', stderr);
			}
		}
	}
	printf("| engine | samples | frames | CPU s (unwinding only) | us/sample | vs hwtrace |\n");
	printf("|---|---|---|---|---|---|\n");
	printf("| hwtrace unwind/ (CFI interpreter, rules cached per address) | %" PRIu64
	       " | %" PRIu64 " | %.3f | %.2f | 1.0x |\n",
	       samples, frames_hw, t_hw, samples ? t_hw * 1e6 / (double)samples : 0);
	printf("| elfutils libdw dwfl_getthread_frames (one Dwfl per process) | %" PRIu64
	       " | %" PRIu64 " | %.3f | %.2f | %.1fx |\n",
	       samples, frames_dw, t_dw, samples ? t_dw * 1e6 / (double)samples : 0,
	       t_hw > 0 ? t_dw / t_hw : 0);
	printf("\nidentical stacks (every frame's address): %" PRIu64 " of %" PRIu64 " (%.2f%%)\n",
	       same, samples, samples ? 100.0 * (double)same / (double)samples : 0);
	for (size_t i = 0; i < nprocs; i++)
		dwfl_end(procs[i].dwfl);
	free(procs);
	hwt_unw_free(u);
	hwt_sym_aspace_free(h.as);
	hwt_sym_cache_free(cache);
	hwt_fmt_session_close(s);
	if (vdso_path[0])
		unlink(vdso_path);
	return 0;
}
