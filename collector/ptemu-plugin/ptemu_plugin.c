/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/ptemu-plugin/ptemu_plugin.c - hwtrace's TCG plugin for
 * qemu-x86_64: watches the guest program execute, block by block and
 * instruction by instruction, and drives the PT encoder core (ptemu_enc.c)
 * with the exact control flow of every guest thread, writing one PT file
 * per thread and the kernel-format sideband (ptemu_sb.c) into a directory
 * that hwtrace collects afterwards (ptemu_run.c). Protocol: ptemu_int.h.
 *
 * How control flow is recovered. QEMU ends a translation block (TB) at
 * every branch, so only a TB's last instruction can transfer control. At
 * translation the plugin classifies each instruction with capstone (jcc,
 * direct/indirect jmp or call, ret, syscall, trap) and registers an
 * execution callback on every instruction: the first instruction's
 * callback resolves the previous TB against the new PC (taken or not,
 * return target, ...), the others only note that they were reached, which
 * tells exactly where an exception stopped a TB. Syscalls are seen through
 * the syscall callbacks (TIP.PGD before, TIP.PGE at the next PC); signals
 * and faults appear as a PC that is no successor of the last instruction.
 *
 * Address filters (filt= argument, file offsets of inodes) become ranges
 * when their file is mapped executable, as the kernel applies them; each
 * transfer across a range boundary (a branch, or falling through inside a
 * TB that a boundary cuts) is announced to the encoder, which writes
 * TIP.PGD/TIP.PGE.
 *
 * Per-thread state is found through a thread-local pointer: qemu-user runs
 * every guest thread on its own host thread, and a forked guest is a forked
 * qemu. PT bytes go straight into a shared mapping of the thread's file,
 * and the header's `used` is stored after every block, so a process that
 * is killed leaves a file that decodes up to its last block.
 */
#include <capstone/capstone.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "collector/ptemu-plugin/qemu_abi.h"
#include "collector/ptemu_int.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = HWT_QEMU_PLUGIN_VERSION;

/* Class of a TB's last instruction. */
enum cls {
	CLS_NONE, /* falls through */
	CLS_JCC,  /* conditional, direct target */
	CLS_JMP,  /* direct jmp */
	CLS_CALL, /* direct call */
	CLS_JMP_IND,
	CLS_CALL_IND,
	CLS_RET,
	CLS_SYSCALL,
	CLS_TRAP, /* int3, int n, ud2, hlt, far transfers: end in the kernel */
};

struct tb_desc;

struct insn_desc {
	uint64_t ip;
	uint64_t next;	 /* ip + size */
	uint64_t target; /* direct branch target */
	struct tb_desc *tb;
	uint16_t idx;
	uint8_t cls;
	uint8_t may_fault; /* may raise an exception (memory access, trap) */
};

struct tb_desc {
	uint32_t n;
	bool cross; /* an address filter's boundary lies inside */
	struct insn_desc insn[];
};

/* Window of the thread's PT file mapped at a time. */
#define WIN_SIZE (8u << 20)
/* Truth entries buffered per thread: none, so that a process that dies
 * leaves all of them (ground truth is for tests, where speed matters
 * less than completeness). */
#define TRUTH_BUF 1u

struct thr {
	struct thr *next_all;
	uint32_t pid, tid, ppid, ptid;
	int fd;
	struct hwt_ptemu_filehdr *hdr;
	uint8_t *win;
	struct hwt_ptemu_out out;
	struct hwt_ptemu_enc enc;
	const struct insn_desc *last; /* last instruction reached */
	bool in_kernel;		      /* between a kernel entry and the next TB */
	uint32_t tb_done;	      /* instructions of the last TB retired */
	bool broken;		      /* encoding failed: stop */
	bool dead;
	uint64_t blocks;
	int64_t sys_num;
	uint64_t sys_a[6];
	int truth_fd;
	struct hwt_ptemu_filehdr dummy_hdr; /* when the file could not be made */
	size_t ntruth;
	struct hwt_ptemu_truth truth[TRUTH_BUF];
};

/* An address filter: [off, off + size) of the file dev/ino. */
struct filt {
	uint64_t off, size, dev, ino;
	bool stop;
};

/* A filter's range in the address space. */
struct range {
	uint64_t lo, hi;
	bool stop;
};

static __thread struct thr *tls_thr __attribute__((tls_model("initial-exec")));

static struct {
	char dir[PATH_MAX];
	struct hwt_ptemu_terms terms;
	struct hwt_ptemu_cpu cpu;
	bool truth;
	int sb_fd;
	csh cs;
	pthread_mutex_t lock; /* threads list, capstone, clone handoff, maps */
	struct thr *threads;
	bool started;
	uint64_t clone_tsc; /* parent's clock at the last clone */
	uint32_t clone_tid;
	struct filemap *maps;
	size_t nmaps, capmaps;
	/* Address filters (filt= argument): file offsets, and the ranges
	 * they give in this process's mappings, as the kernel applies them
	 * (perf_event_addr_filters_apply). nrange is published after its
	 * entries are written; readers take no lock. */
	struct filt filt[HWT_PTEMU_ADDR_RANGES];
	unsigned int nfilt;
	bool filter_kind; /* some filter is a 'filter' (not only stops) */
	struct range range[HWT_PTEMU_ADDR_RANGES];
	unsigned int nrange;
} g = {.sb_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

/* File-backed guest mappings, to name a region that mprotect makes
 * executable later. */
struct filemap {
	uint64_t addr, len, pgoff, ino;
	uint32_t maj, min;
	char *path;
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "hwtrace-ptemu: ");
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	strncat(buf, "\n", sizeof(buf) - strlen(buf) - 1);
	/* stderr: qemu_plugin_outs() only prints with -d plugin. */
	if (write(2, buf, strlen(buf)) < 0) {
		/* nothing more we can do */
	}
}

static uint32_t gettid_now(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static uint64_t now_tsc(const struct thr *t)
{
	return hwt_ptemu_tsc(&t->enc, t->enc.n.insns);
}

static uint64_t now_ns(const struct thr *t)
{
	return hwt_ptemu_tsc_to_ns(now_tsc(t));
}

static void sideband(const void *rec, int len)
{
	if (len <= 0 || g.sb_fd < 0)
		return;
	/* O_APPEND: records of all threads and processes interleave whole. */
	if (write(g.sb_fd, rec, (size_t)len) != len)
		say("sideband write failed: %s", strerror(errno));
}

/* ------------------------------------------------------------------------ */
/* Output: the PT file of a thread                                          */

static int out_next(struct hwt_ptemu_out *o)
{
	struct thr *t = o->ctx;
	uint64_t used = o->flushed + (uint64_t)(o->pos - o->begin);
	uint64_t off = HWT_PTEMU_FILE_HDR + used;
	uint64_t map_off = off & ~(uint64_t)4095;
	void *w;

	t->hdr->used = used;
	if (t->win)
		munmap(t->win, WIN_SIZE);
	t->win = NULL;
	if (ftruncate(t->fd, (off_t)(map_off + WIN_SIZE)) < 0)
		return -errno;
	w = mmap(NULL, WIN_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, (off_t)map_off);
	if (w == MAP_FAILED)
		return -errno;
	t->win = w;
	o->begin = o->pos = t->win + (off - map_off);
	o->end = t->win + WIN_SIZE;
	o->flushed = used;
	return 0;
}

static void store_used(struct thr *t)
{
	t->hdr->used = t->out.flushed + (uint64_t)(t->out.pos - t->out.begin);
}

static void truth_flush(struct thr *t)
{
	size_t len = t->ntruth * sizeof(t->truth[0]);

	if (t->truth_fd >= 0 && len && write(t->truth_fd, t->truth, len) != (ssize_t)len)
		say("truth write failed: %s", strerror(errno));
	t->ntruth = 0;
}

static void truth_cb(void *ctx, const struct hwt_ptemu_truth *tr)
{
	struct thr *t = ctx;

	t->truth[t->ntruth++] = *tr;
	if (t->ntruth == TRUTH_BUF)
		truth_flush(t);
}

static void sync_hdr(struct thr *t)
{
	store_used(t);
	t->hdr->n = t->enc.n;
	t->hdr->tsc_end = now_tsc(t);
}

static void fail(struct thr *t, int err, const char *what)
{
	if (t->broken)
		return;
	t->broken = true;
	say("thread %u: %s failed (error %d); its trace ends here", t->tid, what, err);
}

/* Opens pt.<tid>.<n> (and truth.<tid>.<n>) and starts the encoder. */
static int thr_open(struct thr *t, uint64_t tsc0)
{
	char path[PATH_MAX + 64];
	int err;

	t->fd = -1;
	t->truth_fd = -1;
	for (int n = 0; t->fd < 0 && n < 1000; n++) {
		snprintf(path, sizeof(path), "%s/pt.%u.%d", g.dir, t->tid, n);
		t->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (t->fd < 0 && errno != EEXIST)
			return -errno;
		if (t->fd >= 0 && g.truth) {
			snprintf(path, sizeof(path), "%s/truth.%u.%d", g.dir, t->tid, n);
			t->truth_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		}
	}
	if (t->fd < 0)
		return -EEXIST;
	if (ftruncate(t->fd, HWT_PTEMU_FILE_HDR) < 0)
		return -errno;
	t->hdr = mmap(NULL, HWT_PTEMU_FILE_HDR, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
	if (t->hdr == MAP_FAILED) {
		t->hdr = NULL;
		return -errno;
	}
	t->hdr->pid = t->pid;
	t->hdr->tid = t->tid;
	t->hdr->ppid = t->ppid;
	t->hdr->ptid = t->ptid;
	t->hdr->tsc_start = tsc0;
	t->hdr->tsc_end = tsc0;
	t->hdr->end = HWT_PTEMU_END_RUNNING;
	memset(&t->out, 0, sizeof(t->out));
	t->out.next = out_next;
	t->out.ctx = t;
	err = out_next(&t->out);
	if (err < 0)
		return err;
	err = hwt_ptemu_enc_init(&t->enc, &g.terms, &g.cpu, &t->out, tsc0);
	if (err < 0)
		return err;
	/* One address space per process (term pip). */
	t->enc.cr3 = HWT_PTEMU_CR3 + ((uint64_t)(t->pid & 0xffff) << 12);
	if (g.truth) {
		t->enc.truth = truth_cb;
		t->enc.truth_ctx = t;
	}
	/* The magic last: a file without it was never started. */
	t->hdr->magic = HWT_PTEMU_FILE_MAGIC;
	return 0;
}

static void thr_register(struct thr *t)
{
	pthread_mutex_lock(&g.lock);
	t->next_all = g.threads;
	g.threads = t;
	pthread_mutex_unlock(&g.lock);
}

/* ------------------------------------------------------------------------ */
/* Mappings: the initial image (ELF program headers) and guest mmaps       */

/* An executable mapping of a file: the filters on that file get their
 * range here, the first IP of the mapping at file offset pgoff (the
 * kernel's perf_addr_filter_vma_adjust(), one range per filter). */
static void filters_map(uint64_t addr, uint64_t len, uint64_t pgoff, uint32_t maj, uint32_t min,
			uint64_t ino)
{
	for (unsigned int i = 0; i < g.nfilt; i++) {
		const struct filt *f = &g.filt[i];
		struct range *r = &g.range[i];
		uint64_t lo, hi;

		if (f->dev != makedev(maj, min) || f->ino != ino || f->off >= pgoff + len ||
		    f->off + f->size <= pgoff)
			continue;
		lo = f->off > pgoff ? addr + (f->off - pgoff) : addr;
		hi =
		    f->off + f->size < pgoff + len ? addr + (f->off + f->size - pgoff) : addr + len;
		pthread_mutex_lock(&g.lock);
		r->lo = lo;
		r->hi = hi;
		r->stop = f->stop;
		pthread_mutex_unlock(&g.lock);
	}
	/* Every filter has its slot; ranges not mapped yet are empty. */
	__atomic_store_n(&g.nrange, g.nfilt, __ATOMIC_RELEASE);
}

enum where { TRACED, OUTSIDE, STOPS };

/* Where ip is for the address filters (IA32_RTIT_ADDRn_CFG: 1 filter,
 * 2 TraceStop): with any 'filter', only its ranges are traced. */
static enum where where(uint64_t ip)
{
	unsigned int n = __atomic_load_n(&g.nrange, __ATOMIC_ACQUIRE);
	bool in = !g.filter_kind;

	for (unsigned int i = 0; i < n; i++) {
		if (ip >= g.range[i].lo && ip < g.range[i].hi) {
			if (g.range[i].stop)
				return STOPS;
			in = true;
		}
	}
	return in ? TRACED : OUTSIDE;
}

static void emit_mmap(const struct thr *t, uint64_t addr, uint64_t len, uint64_t pgoff,
		      uint32_t maj, uint32_t min, uint64_t ino, uint32_t prot, uint32_t flags,
		      const char *path)
{
	uint8_t rec[PATH_MAX + 256];

	if (g.nfilt && (prot & PROT_EXEC) && ino)
		filters_map(addr, len, pgoff, maj, min, ino);

	sideband(rec, hwt_ptemu_rec_mmap2(rec, sizeof(rec), t->pid, t->tid, addr, len, pgoff, maj,
					  min, ino, prot, flags, path, now_ns(t)));
}

static void maps_add(uint64_t addr, uint64_t len, uint64_t pgoff, uint32_t maj, uint32_t min,
		     uint64_t ino, const char *path)
{
	pthread_mutex_lock(&g.lock);
	if (g.nmaps == g.capmaps) {
		size_t cap = g.capmaps ? g.capmaps * 2 : 64;
		struct filemap *m = realloc(g.maps, cap * sizeof(*m));

		if (!m) {
			pthread_mutex_unlock(&g.lock);
			return;
		}
		g.maps = m;
		g.capmaps = cap;
	}
	g.maps[g.nmaps].addr = addr;
	g.maps[g.nmaps].len = len;
	g.maps[g.nmaps].pgoff = pgoff;
	g.maps[g.nmaps].maj = maj;
	g.maps[g.nmaps].min = min;
	g.maps[g.nmaps].ino = ino;
	g.maps[g.nmaps].path = strdup(path);
	if (g.maps[g.nmaps].path)
		g.nmaps++;
	pthread_mutex_unlock(&g.lock);
}

/* Announces the executable PT_LOAD segments of an ELF file loaded with
 * bias, as the kernel's MMAP2 records for them. Returns the entry point
 * (unbiased) or 0. */
static uint64_t map_elf(const struct thr *t, const char *path, uint64_t bias, bool emit,
			uint64_t *exec_vaddr, char *interp, size_t interp_cap)
{
	Elf64_Ehdr eh;
	char real[PATH_MAX];
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t lowest_x = UINT64_MAX;

	if (interp && interp_cap)
		interp[0] = '\0';
	if (fd < 0)
		return 0;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    fstat(fd, &st) < 0) {
		close(fd);
		return 0;
	}
	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP && interp && ph.p_filesz < interp_cap) {
			if (pread(fd, interp, ph.p_filesz, (off_t)ph.p_offset) ==
			    (ssize_t)ph.p_filesz)
				interp[ph.p_filesz] = '\0';
		}
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (ph.p_vaddr < lowest_x)
			lowest_x = ph.p_vaddr;
		if (emit) {
			uint64_t start = ph.p_vaddr & ~(uint64_t)4095;
			uint64_t end = (ph.p_vaddr + ph.p_memsz + 4095) & ~(uint64_t)4095;

			emit_mmap(t, bias + start, end - start, ph.p_offset & ~(uint64_t)4095,
				  major(st.st_dev), minor(st.st_dev), st.st_ino,
				  PROT_READ | PROT_EXEC, MAP_PRIVATE, real);
			maps_add(bias + start, end - start, ph.p_offset & ~(uint64_t)4095,
				 major(st.st_dev), minor(st.st_dev), st.st_ino, real);
		}
	}
	close(fd);
	if (exec_vaddr)
		*exec_vaddr = lowest_x;
	return eh.e_entry;
}

/* The image qemu's loader mapped before the first guest instruction: the
 * program (its executable segment starts at qemu_plugin_start_code()) and
 * its interpreter, whose entry point is the first PC. */
static void initial_image(const struct thr *t, uint64_t first_pc)
{
	const char *exe = qemu_plugin_path_to_binary();
	char interp[PATH_MAX], comm[16];
	uint8_t rec[256];
	uint64_t xvaddr = 0, entry;

	if (!exe)
		return;
	hwt_ptemu_comm(comm, exe);
	sideband(rec, hwt_ptemu_rec_comm(rec, sizeof(rec), t->pid, t->tid, comm, true, now_ns(t)));
	map_elf(t, exe, 0, false, &xvaddr, interp, sizeof(interp));
	map_elf(t, exe, qemu_plugin_start_code() - xvaddr, true, NULL, NULL, 0);
	if (interp[0]) {
		entry = map_elf(t, interp, 0, false, NULL, NULL, 0);
		map_elf(t, interp, first_pc - entry, true, NULL, NULL, 0);
	}
}

static void guest_mmap(const struct thr *t, uint64_t addr, uint64_t len, uint64_t prot,
		       uint64_t flags, int64_t fd, uint64_t off)
{
	char link[64], path[PATH_MAX];
	struct stat st;
	ssize_t n;

	if ((flags & MAP_ANONYMOUS) || fd < 0) {
		if (prot & PROT_EXEC)
			emit_mmap(t, addr, len, 0, 0, 0, 0, (uint32_t)prot, (uint32_t)flags,
				  "//anon");
		return;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", (int)fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || fstat((int)fd, &st) < 0)
		return;
	path[n] = '\0';
	maps_add(addr, len, off, major(st.st_dev), minor(st.st_dev), st.st_ino, path);
	if (prot & PROT_EXEC)
		emit_mmap(t, addr, len, off, major(st.st_dev), minor(st.st_dev), st.st_ino,
			  (uint32_t)prot, (uint32_t)flags, path);
}

static void guest_mprotect(const struct thr *t, uint64_t addr, uint64_t len, uint64_t prot)
{
	struct filemap m;
	bool found = false;

	if (!(prot & PROT_EXEC))
		return;
	pthread_mutex_lock(&g.lock);
	for (size_t i = g.nmaps; i-- > 0;) {
		if (addr >= g.maps[i].addr && addr < g.maps[i].addr + g.maps[i].len) {
			m = g.maps[i];
			m.path = strdup(g.maps[i].path);
			found = m.path != NULL;
			break;
		}
	}
	pthread_mutex_unlock(&g.lock);
	if (!found) {
		emit_mmap(t, addr, len, 0, 0, 0, 0, (uint32_t)prot, MAP_PRIVATE, "//anon");
		return;
	}
	emit_mmap(t, addr, len, m.pgoff + (addr - m.addr), m.maj, m.min, m.ino, (uint32_t)prot,
		  MAP_PRIVATE, m.path);
	free(m.path);
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                  */

static struct thr *thr_new(uint64_t first_pc)
{
	struct thr *t = calloc(1, sizeof(*t));
	uint8_t rec[256];
	bool first;
	int err;

	if (!t)
		return NULL;
	t->pid = (uint32_t)getpid();
	t->tid = gettid_now();
	pthread_mutex_lock(&g.lock);
	first = !g.started;
	g.started = true;
	uint64_t tsc0 = first ? HWT_PTEMU_TSC0 : g.clone_tsc;
	t->ptid = first ? 0 : g.clone_tid;
	pthread_mutex_unlock(&g.lock);
	t->ppid = first ? 0 : t->pid;
	err = thr_open(t, tsc0);
	if (err < 0) {
		say("cannot create the trace of thread %u: %s", t->tid, strerror(-err));
		t->broken = true;
		if (!t->hdr) {
			t->hdr = &t->dummy_hdr;
			return t; /* stays broken; callbacks check */
		}
	}
	if (first)
		initial_image(t, first_pc);
	else
		sideband(rec, hwt_ptemu_rec_task(rec, sizeof(rec), PERF_RECORD_FORK, t->pid, t->pid,
						 t->tid, t->ptid, now_ns(t)));
	thr_register(t);
	return t;
}

/* In a forked child: the state copied from the parent still points at the
 * parent's files; leave them to the parent and start this process's own. */
static void thr_forked(struct thr *t)
{
	uint64_t tsc = now_tsc(t);
	uint32_t ppid = t->pid, ptid = t->tid;
	uint8_t rec[256];
	int err;

	if (t->win)
		munmap(t->win, WIN_SIZE);
	if (t->hdr && t->hdr != &t->dummy_hdr)
		munmap(t->hdr, HWT_PTEMU_FILE_HDR);
	if (t->fd >= 0)
		close(t->fd);
	if (t->truth_fd >= 0)
		close(t->truth_fd);
	hwt_ptemu_enc_fini(&t->enc);
	memset(t, 0, sizeof(*t));
	t->pid = (uint32_t)getpid();
	t->tid = gettid_now();
	t->ppid = ppid;
	t->ptid = ptid;
	/* Other threads of the parent do not exist here. */
	g.threads = NULL;
	pthread_mutex_init(&g.lock, NULL);
	err = thr_open(t, tsc);
	if (err < 0) {
		say("cannot create the trace of process %u: %s", t->pid, strerror(-err));
		t->broken = true;
		if (!t->hdr)
			t->hdr = &t->dummy_hdr;
		return;
	}
	thr_register(t);
	sideband(rec, hwt_ptemu_rec_task(rec, sizeof(rec), PERF_RECORD_FORK, t->pid, ppid, t->tid,
					 ptid, now_ns(t)));
	/* The child returns from the kernel to the instruction after the
	 * syscall: the next block enables tracing there. */
	t->in_kernel = true;
	t->last = NULL;
}

static void thr_end(struct thr *t, enum hwt_ptemu_end how, int status)
{
	uint8_t rec[256];

	if (t->dead || !t->hdr)
		return;
	if (!t->broken) {
		int err = hwt_ptemu_enc_flush(&t->enc);

		if (err < 0)
			fail(t, err, "flush");
	}
	truth_flush(t);
	sync_hdr(t);
	t->hdr->end = how;
	t->hdr->exit_status = status;
	if (how == HWT_PTEMU_END_EXIT) {
		sideband(rec, hwt_ptemu_rec_task(rec, sizeof(rec), PERF_RECORD_EXIT, t->pid,
						 t->ppid ? t->ppid : t->pid, t->tid,
						 t->ptid ? t->ptid : t->tid, now_ns(t)));
		t->dead = true;
	}
}

/* ------------------------------------------------------------------------ */
/* Execution callbacks: the hot path                                        */

/* Back from the kernel (or starting) at pc: tracing goes on there unless
 * the address filters leave pc out. */
static void enable_at(struct thr *t, uint64_t pc)
{
	enum where w = g.nfilt ? where(pc) : TRACED;
	int err = 0;

	t->in_kernel = false;
	if (t->enc.stopped)
		return;
	if (w == TRACED)
		err = hwt_ptemu_enc_enable(&t->enc, pc);
	else if (w == STOPS)
		err = hwt_ptemu_enc_trace_stop(&t->enc);
	if (err < 0)
		fail(t, err, "encoding");
}

/* Instructions of the TB that t->last belongs to, up to and including
 * number n, have retired (the ones before, counted already, excluded). */
static void retire(struct thr *t, uint32_t n)
{
	hwt_ptemu_enc_retire(&t->enc, n - t->tb_done);
	t->tb_done = n;
}

/* Execution moves from the instruction at ip to target: a crossing of an
 * address filter's boundary writes TIP.PGD (announced now, written at
 * the transfer's event or by filter_flush), TIP.PGE or TraceStop. Returns
 * true when packet generation was off and turned on. */
static int crossing(struct thr *t, uint64_t target, bool *entered)
{
	struct hwt_ptemu_enc *e = &t->enc;
	enum where w = where(target);

	*entered = false;
	if (e->stopped)
		return 0;
	if (e->enabled) {
		if (w != TRACED)
			hwt_ptemu_enc_filter_exit(e, target, w == STOPS);
		return 0;
	}
	if (w == STOPS)
		return hwt_ptemu_enc_trace_stop(e);
	if (w == OUTSIDE)
		return 0;
	*entered = true;
	return hwt_ptemu_enc_filter_enter(e, target);
}

/* A filter boundary inside the TB of l: the instructions before l fell
 * through one to the next, and each step across it writes its packets. */
static int linear_crossings(struct thr *t, const struct insn_desc *l)
{
	const struct tb_desc *tb = l->tb;
	int err = 0;

	for (uint32_t i = 1; i <= l->idx && err >= 0; i++) {
		bool entered;

		retire(t, i);
		err = crossing(t, tb->insn[i].ip, &entered);
		if (err >= 0)
			err = hwt_ptemu_enc_filter_flush(&t->enc, tb->insn[i - 1].ip);
	}
	return err;
}

/* The previous TB ended at t->last; execution continues at pc. */
static void resolve(struct thr *t, uint64_t pc)
{
	const struct insn_desc *l = t->last;
	struct hwt_ptemu_enc *e = &t->enc;
	bool entered = false;
	int err = 0;

	if (t->in_kernel || !l) {
		enable_at(t, pc);
		return;
	}
	if (g.nfilt) {
		if (l->tb->cross)
			err = linear_crossings(t, l);
		if (err < 0) {
			fail(t, err, "encoding");
			return;
		}
		if (e->enabled && !e->stopped && where(pc) != TRACED)
			hwt_ptemu_enc_filter_exit(e, pc, where(pc) == STOPS);
	}
	/* l is usually the TB's last instruction; when it is not, qemu cut
	 * the TB short (an instruction crossing a page starts a new TB) or an
	 * exception stopped it at l: the same rules tell them apart. */
	switch (l->cls) {
	case CLS_NONE:
		if (pc == l->next) {
			retire(t, l->idx + 1u);
			break;
		}
		if (pc == l->ip) {
			/* A REP string instruction iterates: it completes
			 * when execution moves on, and is counted then. */
			retire(t, l->idx);
			break;
		}
		if (l->may_fault) {
			retire(t, l->idx);
			err = hwt_ptemu_enc_event(e, l->ip, true);
		} else {
			retire(t, l->idx + 1u);
			err = hwt_ptemu_enc_event(e, l->next, false);
		}
		goto to_kernel;
	case CLS_JCC:
		retire(t, l->idx + 1u);
		if (pc == l->target || pc == l->next) {
			err = hwt_ptemu_enc_cond(e, l->ip, pc == l->target && pc != l->next);
			break;
		}
		/* A signal arrived after a conditional branch: its outcome is
		 * not known here. */
		err = hwt_ptemu_enc_lost(e, l->ip);
		goto to_kernel;
	case CLS_JMP:
		retire(t, l->idx + 1u);
		if (pc == l->target)
			break;
		err = hwt_ptemu_enc_event(e, l->target, false);
		goto to_kernel;
	case CLS_CALL:
		if (pc == l->target) {
			retire(t, l->idx + 1u);
			if (l->target != l->next)
				hwt_ptemu_enc_call(e, l->next);
			break;
		}
		/* The push faulted (stack overflow). */
		retire(t, l->idx);
		err = hwt_ptemu_enc_event(e, l->ip, true);
		goto to_kernel;
	case CLS_JMP_IND:
		retire(t, l->idx + 1u);
		err = hwt_ptemu_enc_indirect(e, l->ip, pc);
		break;
	case CLS_CALL_IND:
		retire(t, l->idx + 1u);
		/* Pushed first: a call that leaves the filter's ranges is
		 * pushed too (decoders push every call they decode). */
		hwt_ptemu_enc_call(e, l->next);
		err = hwt_ptemu_enc_indirect(e, l->ip, pc);
		break;
	case CLS_RET:
		retire(t, l->idx + 1u);
		err = hwt_ptemu_enc_ret(e, l->ip, pc);
		break;
	case CLS_SYSCALL:
		/* The syscall callback did not run (qemu handled the
		 * instruction itself): still a kernel entry. */
		retire(t, l->idx + 1u);
		err = hwt_ptemu_enc_syscall(e, l->ip);
		goto to_kernel;
	default: /* CLS_TRAP */
		retire(t, l->idx);
		err = hwt_ptemu_enc_event(e, l->ip, true);
		goto to_kernel;
	}
	if (err >= 0 && g.nfilt) {
		/* A direct branch or a fall-through out of the ranges, or
		 * a transfer into them. */
		err = hwt_ptemu_enc_filter_flush(e, l->ip);
		if (err >= 0 && !e->enabled)
			err = crossing(t, pc, &entered);
	}
	if (err >= 0 && e->enabled && !entered)
		err = hwt_ptemu_enc_at(e, pc);
	if (err < 0)
		fail(t, err, "encoding");
	return;
to_kernel:
	if (err < 0) {
		fail(t, err, "encoding");
		return;
	}
	/* The kernel delivers the signal (or returns) to pc. */
	enable_at(t, pc);
}

static void on_tb(unsigned int vcpu, void *ud)
{
	const struct insn_desc *first = ud;
	struct thr *t = tls_thr;

	(void)vcpu;
	if (__builtin_expect(!t, 0)) {
		t = thr_new(first->ip);
		if (!t)
			return;
		tls_thr = t;
	}
	if (__builtin_expect(t->broken || t->dead, 0))
		return;
	resolve(t, first->ip);
	t->last = first;
	t->tb_done = 0;
	store_used(t);
	t->hdr->pend_tnt = t->enc.tnt;
	t->hdr->pend_ntnt = t->enc.ntnt;
	/* Nothing to close while packet generation is off. */
	t->hdr->in_kernel = t->broken || t->in_kernel || !t->enc.enabled;
	t->hdr->insns_tb = t->enc.n.insns;
	t->hdr->cur_ip = first->ip;
	t->hdr->cur_idx = 0;
	/* Counters reach the file now and then, for a process that is
	 * killed without notice. */
	if (!(++t->blocks & 4095))
		sync_hdr(t);
}

static void on_insn(unsigned int vcpu, void *ud)
{
	struct thr *t = tls_thr;

	(void)vcpu;
	if (t) {
		const struct insn_desc *d = ud;

		t->last = d;
		t->hdr->cur_ip = d->ip;
		t->hdr->cur_idx = d->idx;
	}
}

/* ------------------------------------------------------------------------ */
/* Syscalls                                                                 */

static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1,
		       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
		       uint64_t a8)
{
	struct thr *t = tls_thr;
	const struct insn_desc *l;
	int err;

	(void)id;
	(void)vcpu;
	(void)a7;
	(void)a8;
	if (!t || t->dead)
		return;
	t->sys_num = num;
	t->sys_a[0] = a1;
	t->sys_a[1] = a2;
	t->sys_a[2] = a3;
	t->sys_a[3] = a4;
	t->sys_a[4] = a5;
	t->sys_a[5] = a6;
	l = t->last;
	if (!t->broken && l && !t->in_kernel) {
		/* SYSCALL retires and leaves CPL 3: TIP.PGD, IP suppressed. */
		err = g.nfilt && l->tb->cross ? linear_crossings(t, l) : 0;
		retire(t, l->idx + 1u);
		if (err >= 0)
			err = hwt_ptemu_enc_syscall(&t->enc, l->ip);
		if (err < 0)
			fail(t, err, "encoding");
		t->in_kernel = true;
		t->last = NULL;
		store_used(t);
		t->hdr->pend_ntnt = 0;
		t->hdr->insns_tb = t->enc.n.insns;
		t->hdr->in_kernel = 1;
	}
	switch (num) {
	case SYS_exit:
		thr_end(t, HWT_PTEMU_END_EXIT, (int)a1);
		break;
	case SYS_exit_group:
		pthread_mutex_lock(&g.lock);
		for (struct thr *o = g.threads; o; o = o->next_all) {
			if (o != t && o->pid == t->pid && !o->dead) {
				/* Killed by exit_group in the middle of
				 * their work: the launcher closes their
				 * streams from the live header state. */
				truth_flush(o);
			}
		}
		pthread_mutex_unlock(&g.lock);
		thr_end(t, HWT_PTEMU_END_EXIT, (int)a1);
		break;
	case SYS_execve:
	case SYS_execveat:
		/* If it succeeds, this process image is gone and the new
		 * program runs natively (qemu-user does not follow exec). */
		thr_end(t, HWT_PTEMU_END_EXEC, 0);
		break;
	case SYS_clone:
	case SYS_clone3:
	case SYS_fork:
	case SYS_vfork:
		truth_flush(t);
		sync_hdr(t);
		pthread_mutex_lock(&g.lock);
		g.clone_tsc = now_tsc(t);
		g.clone_tid = t->tid;
		pthread_mutex_unlock(&g.lock);
		break;
	default:
		break;
	}
}

static void on_syscall_ret(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, int64_t ret)
{
	struct thr *t = tls_thr;

	(void)id;
	(void)vcpu;
	if (!t)
		return;
	switch (num) {
	case SYS_clone:
	case SYS_clone3:
	case SYS_fork:
	case SYS_vfork:
		if (ret == 0 && (uint32_t)getpid() != t->pid)
			thr_forked(t);
		break;
	case SYS_execve:
	case SYS_execveat:
		if (t->hdr && t->hdr->end == HWT_PTEMU_END_EXEC)
			t->hdr->end = HWT_PTEMU_END_RUNNING; /* it failed */
		break;
	case SYS_mmap:
		if (ret < 0 && ret > -4096)
			break;
		guest_mmap(t, (uint64_t)ret, t->sys_a[1], t->sys_a[2], t->sys_a[3],
			   (int64_t)(int32_t)t->sys_a[4], t->sys_a[5]);
		break;
	case SYS_mprotect:
		if (ret == 0)
			guest_mprotect(t, t->sys_a[0], t->sys_a[1], t->sys_a[2]);
		break;
	default:
		break;
	}
}

static void on_exit_all(qemu_plugin_id_t id, void *ud)
{
	(void)id;
	(void)ud;
	pthread_mutex_lock(&g.lock);
	for (struct thr *o = g.threads; o; o = o->next_all) {
		if (!o->hdr || o->dead)
			continue;
		truth_flush(o);
		sync_hdr(o);
	}
	pthread_mutex_unlock(&g.lock);
}

/* ------------------------------------------------------------------------ */
/* Translation: classify each TB's last instruction                         */

static bool is_jcc(unsigned int id)
{
	switch (id) {
	case X86_INS_JAE:
	case X86_INS_JA:
	case X86_INS_JBE:
	case X86_INS_JB:
	case X86_INS_JCXZ:
	case X86_INS_JECXZ:
	case X86_INS_JRCXZ:
	case X86_INS_JE:
	case X86_INS_JGE:
	case X86_INS_JG:
	case X86_INS_JLE:
	case X86_INS_JL:
	case X86_INS_JNE:
	case X86_INS_JNO:
	case X86_INS_JNP:
	case X86_INS_JNS:
	case X86_INS_JO:
	case X86_INS_JP:
	case X86_INS_JS:
	case X86_INS_LOOP:
	case X86_INS_LOOPE:
	case X86_INS_LOOPNE:
		return true;
	default:
		return false;
	}
}

static void classify(struct insn_desc *d, const void *bytes, size_t size)
{
	cs_insn *ci = NULL;
	const cs_x86 *x;
	bool mem = false, imm = false;
	size_t n;

	d->cls = CLS_NONE;
	d->may_fault = 1;
	pthread_mutex_lock(&g.lock);
	n = cs_disasm(g.cs, bytes, size, d->ip, 1, &ci);
	pthread_mutex_unlock(&g.lock);
	if (n != 1) {
		cs_free(ci, n);
		return;
	}
	x = &ci->detail->x86;
	for (unsigned int i = 0; i < x->op_count; i++) {
		if (x->operands[i].type == X86_OP_MEM)
			mem = true;
		if (x->operands[i].type == X86_OP_IMM && i == 0) {
			imm = true;
			d->target = (uint64_t)x->operands[0].imm;
		}
	}
	switch (ci->id) {
	case X86_INS_JMP:
		d->cls = imm ? CLS_JMP : CLS_JMP_IND;
		break;
	case X86_INS_CALL:
		d->cls = imm ? CLS_CALL : CLS_CALL_IND;
		break;
	case X86_INS_RET:
		d->cls = CLS_RET;
		break;
	case X86_INS_SYSCALL:
	case X86_INS_SYSENTER:
		d->cls = CLS_SYSCALL;
		break;
	case X86_INS_INT:
	case X86_INS_INT1:
	case X86_INS_INT3:
	case X86_INS_INTO:
	case X86_INS_UD2:
	case X86_INS_UD0:
	case X86_INS_HLT:
	case X86_INS_LJMP:
	case X86_INS_LCALL:
	case X86_INS_RETF:
	case X86_INS_RETFQ:
	case X86_INS_IRET:
	case X86_INS_IRETD:
	case X86_INS_IRETQ:
		d->cls = CLS_TRAP;
		break;
	default:
		if (is_jcc(ci->id))
			d->cls = CLS_JCC;
		break;
	}
	switch (ci->id) {
	case X86_INS_PUSH:
	case X86_INS_POP:
	case X86_INS_PUSHFQ:
	case X86_INS_POPFQ:
	case X86_INS_CALL:
	case X86_INS_RET:
	case X86_INS_LEAVE:
	case X86_INS_ENTER:
	case X86_INS_DIV:
	case X86_INS_IDIV:
		d->may_fault = 1;
		break;
	case X86_INS_LEA:
	case X86_INS_NOP:
		d->may_fault = d->cls == CLS_TRAP;
		break;
	default:
		d->may_fault = mem || d->cls == CLS_TRAP;
		break;
	}
	cs_free(ci, n);
}

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	struct tb_desc *d;

	(void)id;
	if (!n || n > UINT16_MAX)
		return;
	/* Kept for the life of the process: a TB's callbacks may run until
	 * qemu flushes it, and we are not told when. */
	d = calloc(1, sizeof(*d) + n * sizeof(d->insn[0]));
	if (!d)
		return;
	d->n = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
		struct insn_desc *x = &d->insn[i];

		x->ip = qemu_plugin_insn_vaddr(in);
		x->next = x->ip + qemu_plugin_insn_size(in);
		x->tb = d;
		x->idx = (uint16_t)i;
		classify(x, qemu_plugin_insn_data(in), qemu_plugin_insn_size(in));
		qemu_plugin_register_vcpu_insn_exec_cb(in, i ? on_insn : on_tb,
						       QEMU_PLUGIN_CB_NO_REGS, x);
		/* Code is mapped (its filter ranges known) before it is
		 * translated. */
		if (i && g.nfilt && where(x->ip) != where(d->insn[i - 1].ip))
			d->cross = true;
	}
}

/* ------------------------------------------------------------------------ */

/* filt=KIND:OFF:SIZE:DEV:INO[+...] (hex numbers, KIND f or s): the
 * launcher's filters, already checked by the kernel's rules. */
static int filters_parse(const char *v)
{
	while (*v && g.nfilt < HWT_PTEMU_ADDR_RANGES) {
		struct filt *f = &g.filt[g.nfilt];
		char kind;
		int n = 0;

		if (sscanf(v, "%c:%" SCNx64 ":%" SCNx64 ":%" SCNx64 ":%" SCNx64 "%n", &kind,
			   &f->off, &f->size, &f->dev, &f->ino, &n) != 5 ||
		    (kind != 'f' && kind != 's') || !f->size)
			return -1;
		f->stop = kind == 's';
		g.filter_kind |= !f->stop;
		g.nfilt++;
		v += n;
		if (*v == '+')
			v++;
		else if (*v)
			return -1;
	}
	return *v ? -1 : 0;
}

static const char *arg(const char *a, const char *key)
{
	size_t n = strlen(key);

	return !strncmp(a, key, n) && a[n] == '=' ? a + n + 1 : NULL;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
					   char **argv)
{
	char path[PATH_MAX + 32];
	uint64_t config = hwt_ptemu_terms_config(&(struct hwt_ptemu_terms){0});
	const char *shape = NULL;
	uint32_t tpi = 1;

	if (info->system_emulation || strcmp(info->target_name, "x86_64")) {
		say("the PT emulator needs qemu-x86_64 (user mode)");
		return -1;
	}
	hwt_ptemu_terms_init(&g.terms);
	config = hwt_ptemu_terms_config(&g.terms);
	for (int i = 0; i < argc; i++) {
		const char *v;

		if ((v = arg(argv[i], "dir")))
			snprintf(g.dir, sizeof(g.dir), "%s", v);
		else if ((v = arg(argv[i], "cfg")))
			config = strtoull(v, NULL, 16);
		else if ((v = arg(argv[i], "tpi")))
			tpi = (uint32_t)strtoul(v, NULL, 0);
		else if ((v = arg(argv[i], "truth")))
			g.truth = !strcmp(v, "1");
		else if ((v = arg(argv[i], "shape")))
			shape = v;
		else if ((v = arg(argv[i], "filt")) && filters_parse(v) < 0) {
			say("bad filt= argument %s", v);
			return -1;
		}
	}
	if (!g.dir[0]) {
		say("missing dir= argument");
		return -1;
	}
	hwt_ptemu_terms_from_config(&g.terms, config, tpi);
	if (shape && hwt_ptemu_shape_parse(&g.terms, shape) < 0) {
		say("bad shape= argument %s", shape);
		return -1;
	}
	hwt_ptemu_cpu_default(&g.cpu);
	snprintf(path, sizeof(path), "%s/sideband", g.dir);
	g.sb_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (g.sb_fd < 0) {
		say("cannot create %s: %s", path, strerror(errno));
		return -1;
	}
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &g.cs) != CS_ERR_OK) {
		say("capstone cannot disassemble x86-64");
		return -1;
	}
	cs_option(g.cs, CS_OPT_DETAIL, CS_OPT_ON);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
	qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
	qemu_plugin_register_vcpu_syscall_ret_cb(id, on_syscall_ret);
	qemu_plugin_register_atexit_cb(id, on_exit_all, NULL);
	return 0;
}
