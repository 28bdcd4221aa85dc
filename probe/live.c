/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/live.c - live probes without BPF: every probe is a perf event
 * (uprobe PMU with config1 = the object's path and config2 = the file
 * offset of FUNC+OFF found through symbolize/; kprobe PMU likewise with the
 * symbol; tracepoints by their tracefs id; profile as cpu-clock at a
 * frequency or period; software and hardware events through pmc/), sampled
 * on every hit with the registers, raw record and callchain its clauses
 * need. Events of one CPU (or, without inheritance, one thread) share one
 * ring buffer (PERF_EVENT_IOC_SET_OUTPUT); the first event of each carries
 * the sideband (mmap, comm, fork, exit) that symbolization needs.
 *
 * Ordering. Events use CLOCK_MONOTONIC (use_clockid), so record times can
 * be compared with our own clock. Each drain copies the new records of
 * every buffer into that buffer's queue and then merges the queues by
 * time, holding back records newer than 1 ms before the drain started: a
 * record carries its time before the kernel commits it, but never that
 * long before, so nothing older can still arrive from another buffer.
 * Thread-local variables (entry in one buffer, return in another after a
 * migration) therefore see their hits in order.
 *
 * Every record's time is found without a full parse: PRB_SAMPLE_BASE puts
 * IDENTIFIER, IP, TID, TIME first in a sample, so its time is the u64 at
 * byte 32; other records end with the sample_id trailer TID, TIME, CPU,
 * IDENTIFIER, so their time is the u64 24 bytes before the end.
 */
#include "probe/probe_bpf_int.h"
#include "probe/probe_live_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector/collector.h"
#include "format/format.h"
#include "pmc/pmc.h"

#define HOLD_BACK_NS 1000000ull

struct pend {
	uint64_t time;
	uint32_t off, len;
};

struct buffer {
	struct prb_ring ring;
	struct hwt_buf arena; /* copied records waiting for the merge */
	struct pend *q;
	size_t qn, qhead, qcap;
};

struct event {
	int fd;
	size_t probe;
	size_t buffer;
	bool counting; /* a counter read at the end, no samples */
};

struct hwt_probe_live {
	struct hwt_probe_rt *rt;
	const struct hwt_probe_prog *prog;
	struct event *evs;
	size_t nevs, evcap;
	struct buffer *bufs;
	size_t nbufs;
	struct pollfd *pfds;
	struct prb_map ids;		 /* (sample id, 0) -> event index */
	struct hwt_fmt_attr_info *infos; /* per probe */
	bool *regs_intr;		 /* per probe: kprobes sample kernel regs */
	size_t pages;
	uint64_t throttled;
	struct buffer *cur; /* the buffer being read */
	bool counted;	    /* counting events were read */
	/* the BPF back end: which path each probe takes */
	struct prb_bpf *bpf;
	enum hwt_probe_path *path;
	bool sideband;		   /* a dummy event carries the sideband */
	bool timers;		   /* interval probes fired by hwtrace */
	uint64_t t_start;	   /* when they started */
	uint64_t *fired;	   /* per probe: the interval ticks fired */
	bool *skipped;		   /* per probe: a missing function of a list */
	struct prb_probe sb_probe; /* its description, for errors */
	size_t npfds;
};

void hwt_probe_live_config_init(struct hwt_probe_live_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int ldiag(struct hwt_probe_diag *diag, const struct hwt_probe_prog *prog, size_t pos,
		 int err, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int ldiag(struct hwt_probe_diag *diag, const struct hwt_probe_prog *prog, size_t pos,
		 int err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (diag)
		hwt_probe_diag_at(diag, prog ? prog->text : NULL, pos, "%s", msg);
	return err;
}

/* ------------------------------------------------------------------------ */
/* PMUs                                                                      */

/* The bit of config that a PMU's format/<term> names ("config:0"), or -1. */
static int pmu_format_bit(const char *sysfs_root, const char *pmu, const char *term)
{
	char path[512], buf[64];
	FILE *f;
	int bit = -1;

	snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s/format/%s",
		 sysfs_root ? sysfs_root : "/sys", pmu, term);
	if (!(f = fopen(path, "re")))
		return -1;
	if (fgets(buf, sizeof(buf), f) && !strncmp(buf, "config:", 7) &&
	    isdigit((unsigned char)buf[7])) {
		bit = atoi(buf + 7);
		if (bit > 63)
			bit = -1;
	}
	fclose(f);
	return bit;
}

static int dyn_pmu(const struct hwt_probe_config *cfg, const char *pmu, bool ret, uint32_t *type,
		   __u64 *config)
{
	struct hwt_pmc_config pc;
	int t, bit;

	hwt_pmc_config_init(&pc);
	pc.sysfs_root = cfg->sysfs_root;
	pc.psys = cfg->psys;
	t = hwt_pmc_pmu_type(&pc, pmu);
	if (t < 0)
		return t == -ENOENT ? -HWT_ENOTSUP : t;
	*type = (uint32_t)t;
	*config = 0;
	if (ret) {
		bit = pmu_format_bit(cfg->sysfs_root, pmu, "retprobe");
		if (bit < 0)
			return -HWT_ENOTSUP;
		*config = 1ull << bit;
	}
	return 0;
}

/* The perf register mask for the registers a probe reads (only those are
 * copied into each sample). */
static uint64_t regs_mask(unsigned regs)
{
	static const int reg_of[HWT_PROBE_NREGS] = {PRB_REG_DI, PRB_REG_SI, PRB_REG_DX, PRB_REG_CX,
						    PRB_REG_R8, PRB_REG_R9, PRB_REG_AX};
	uint64_t m = 0;

	for (int i = 0; i < HWT_PROBE_NREGS; i++)
		if (regs & (1u << i))
			m |= 1ull << reg_of[i];
	return m;
}

/* ------------------------------------------------------------------------ */
/* Objects and functions for uprobes                                         */

static bool is_file(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISREG(st.st_mode);
}

/* An ELF file (libc.so next to libc.so.6 is a linker script). */
static bool is_elf(const char *p)
{
	unsigned char magic[4];
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	bool elf;

	if (fd < 0)
		return false;
	elf = read(fd, magic, 4) == 4 && !memcmp(magic,
						 "\x7f"
						 "ELF",
						 4);
	close(fd);
	return elf;
}

/* Finds the object a uprobe names: a path, a command in PATH, or a library
 * by name ("libc", "c", "libc.so.6") in the usual directories. */
static int find_object(const char *name, char *out, size_t len)
{
	static const char *const dirs[] = {
	    "/lib/x86_64-linux-gnu",
	    "/usr/lib/x86_64-linux-gnu",
	    "/lib64",
	    "/usr/lib64",
	    "/lib",
	    "/usr/lib",
	    "/usr/local/lib",
	};

	if (strchr(name, '/')) {
		if (!is_file(name))
			return -ENOENT;
		if (!realpath(name, out))
			return -errno;
		return 0;
	}
	{
		const char *path = getenv("PATH");
		char *copy = path ? strdup(path) : NULL, *save = NULL;

		for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d;
		     d = strtok_r(NULL, ":", &save)) {
			char p[PATH_MAX];

			snprintf(p, sizeof(p), "%s/%s", *d ? d : ".", name);
			if (is_file(p) && !access(p, X_OK) && realpath(p, out)) {
				free(copy);
				return 0;
			}
		}
		free(copy);
	}
	for (size_t i = 0; i < HWT_ARRAY_SIZE(dirs); i++) {
		const char *pats[] = {"%s/%s", "%s/lib%s.so", "%s/lib%s.so.*", "%s/%s.so*"};

		for (size_t k = 0; k < HWT_ARRAY_SIZE(pats); k++) {
			char pat[PATH_MAX];
			glob_t g;

			if (!strncmp(name, "lib", 3) && (k == 1 || k == 2))
				continue;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
			snprintf(pat, sizeof(pat), pats[k], dirs[i], name);
#pragma GCC diagnostic pop
			if (!glob(pat, 0, NULL, &g)) {
				for (size_t j = 0; j < g.gl_pathc; j++) {
					if (is_file(g.gl_pathv[j]) && is_elf(g.gl_pathv[j]) &&
					    realpath(g.gl_pathv[j], out)) {
						globfree(&g);
						return 0;
					}
				}
			}
			globfree(&g);
		}
	}
	(void)len;
	return -ENOENT;
}

/* Up to 3 function names of the object closest to name, for an error. */
static void closest_symbols(const char *path, const char *name, char *buf, size_t len)
{
	struct {
		char name[128];
		size_t d;
	} best[3];
	size_t nbest = 0;
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	int fd;

	buf[0] = '\0';
	if (elf_version(EV_CURRENT) == EV_NONE)
		return;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	if (!(elf = elf_begin(fd, ELF_C_READ, NULL)))
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		if (!(data = elf_getdata(scn, NULL)) || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *s;
			size_t d, k;

			if (!gelf_getsym(data, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value)
				continue;
			if (!(s = elf_strptr(elf, sh.sh_link, sym.st_name)) || !*s ||
			    strlen(s) >= 128)
				continue;
			d = prb_edit_distance(name, s);
			if (strstr(s, name) && d > 1)
				d = 1; /* "foo" in "foo_impl" */
			for (k = 0; k < nbest; k++)
				if (!strcmp(best[k].name, s))
					break;
			if (k < nbest)
				continue;
			for (k = nbest; k > 0 && best[k - 1].d > d; k--)
				if (k < 3)
					best[k] = best[k - 1];
			if (k < 3) {
				snprintf(best[k].name, sizeof(best[k].name), "%s", s);
				best[k].d = d;
				if (nbest < 3)
					nbest++;
			}
		}
	}
	for (size_t k = 0, used = 0; k < nbest && used < len; k++)
		used +=
		    (size_t)snprintf(buf + used, len - used, "%s%s", k ? ", " : "", best[k].name);
out:
	elf_end(elf);
	close(fd);
}

/* The file offset of FUNC+OFF in object path. */
static int uprobe_offset(struct hwt_sym_cache *cache, const struct hwt_probe_prog *prog,
			 const struct prb_probe *p, const char *path, uint64_t *offset,
			 struct hwt_probe_diag *diag)
{
	struct hwt_sym_def defs[8];
	struct hwt_sym_obj *obj;
	char sugg[512];
	int n, err;

	if ((err = hwt_sym_obj_open(cache, path, NULL, 0, &obj)) < 0)
		return ldiag(diag, prog, p->pos, err,
			     "cannot read %s for probe %s: %s (is it an ELF file?)", path, p->text,
			     hwt_strerror(err));
	n = hwt_sym_find(obj, p->func, defs, HWT_ARRAY_SIZE(defs));
	if (n <= 0) {
		closest_symbols(path, p->func, sugg, sizeof(sugg));
		return ldiag(
		    diag, prog, p->pos, -HWT_ENOSYM,
		    "function '%s' not found in %s%s%s; list its functions with 'nm -C %s' "
		    "or check an address with 'hwtrace addr2line -e %s ADDR'",
		    p->func, path, sugg[0] ? "; closest: " : "", sugg, path, path);
	}
	if (!defs[0].has_offset)
		return ldiag(diag, prog, p->pos, -HWT_ENOSYM,
			     "function '%s' of %s is not in a loaded segment: it cannot be probed",
			     p->func, path);
	if (defs[0].size && p->info.offset >= defs[0].size)
		return ldiag(diag, prog, p->pos, -HWT_EINVAL,
			     "offset %" PRIu64 " is past the end of %s (%" PRIu64 " bytes)",
			     p->info.offset, p->func, defs[0].size);
	if (n > 1)
		hwt_log(&prog->cfg.log, HWT_LOG_WARN,
			"%s: %d functions named '%s' in %s; probing the first, at 0x%" PRIx64,
			p->text, n, p->func, path, defs[0].addr);
	*offset = defs[0].file_offset + p->info.offset;
	return 0;
}

static int build_attr(const struct hwt_probe_prog *prog, size_t i,
		      const struct hwt_probe_config *cfg, struct hwt_sym_cache *cache,
		      struct perf_event_attr *attr, char **str, struct hwt_probe_diag *diag)
{
	const struct prb_probe *p = &prog->probes[i];
	enum hwt_probe_kind k = p->info.kind;
	int err;

	*str = NULL;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->sample_type = PRB_SAMPLE_BASE;
	attr->sample_period = 1;
	attr->sample_id_all = 1;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
	attr->watermark = 1;
	if (p->uses & (PRB_USE_USTACK | PRB_USE_KSTACK)) {
		attr->sample_type |= PERF_SAMPLE_CALLCHAIN;
		attr->exclude_callchain_kernel = !(p->uses & PRB_USE_KSTACK);
		attr->exclude_callchain_user = !(p->uses & PRB_USE_USTACK);
	}
	switch (k) {
	case HWT_PROBE_BEGIN:
	case HWT_PROBE_END:
		return ldiag(diag, prog, p->pos, -HWT_EINVAL, "%s has no perf event", p->text);
	case HWT_PROBE_PT_ENTRY:
	case HWT_PROBE_PT_RETURN:
	case HWT_PROBE_PT_INSN:
		if (prb_syms_is_kernel(p->object))
			return ldiag(diag, prog, p->pos, -HWT_ENOTSUP,
				     "%s fires from Intel PT recordings, not live: record the "
				     "kernel with 'hwtrace record --pt -o FILE -- CMD' as root "
				     "(on a CPU with Intel PT) and run the one-liner with -i FILE; "
				     "live, kprobe:%s counts the same calls",
				     p->text, p->func);
		return ldiag(
		    diag, prog, p->pos, -HWT_ENOTSUP,
		    "%s fires from Intel PT recordings, not live: record with 'hwtrace "
		    "record --pt=emulate -o FILE -- CMD' (or real PT) and run the one-liner "
		    "with -i FILE",
		    p->text);
	case HWT_PROBE_UPROBE:
	case HWT_PROBE_URETPROBE: {
		char path[PATH_MAX];
		uint64_t off = 0;

		if ((err = find_object(p->object, path, sizeof(path))) < 0)
			return ldiag(diag, prog, p->pos, err,
				     "%s: no object '%s' (give a path, a command in PATH, or a "
				     "library name such as libc)",
				     p->text, p->object);
		err = dyn_pmu(cfg, "uprobe", k == HWT_PROBE_URETPROBE, &attr->type, &attr->config);
		if (err < 0)
			return ldiag(
			    diag, prog, p->pos, err,
			    "this kernel has no uprobe PMU (%s/bus/event_source/devices/uprobe "
			    "missing%s); uprobes need CONFIG_UPROBE_EVENTS",
			    cfg->sysfs_root ? cfg->sysfs_root : "/sys",
			    k == HWT_PROBE_URETPROBE ? " or without format/retprobe" : "");
		if ((err = uprobe_offset(cache, prog, p, path, &off, diag)) < 0)
			return err;
		if (!(*str = strdup(path)))
			return -ENOMEM;
		attr->config1 = (uint64_t)(uintptr_t)*str; /* uprobe_path */
		attr->config2 = off;			   /* probe_offset */
		if (p->uses & PRB_USE_REGS) {
			attr->sample_type |= PERF_SAMPLE_REGS_USER;
			attr->sample_regs_user = regs_mask(p->regs);
		}
		if ((p->uses & PRB_USE_USTACK) && k == HWT_PROBE_UPROBE && !p->info.offset) {
			/* at a function's first instruction the caller's frame is
			 * only the return address at [sp]: take those 8 bytes */
			attr->sample_type |= PERF_SAMPLE_STACK_USER;
			attr->sample_stack_user = 8;
		}
		return 0;
	}
	case HWT_PROBE_KPROBE:
	case HWT_PROBE_KRETPROBE:
		err = dyn_pmu(cfg, "kprobe", k == HWT_PROBE_KRETPROBE, &attr->type, &attr->config);
		if (err < 0)
			return ldiag(
			    diag, prog, p->pos, -HWT_ENOTSUP,
			    "this kernel has no kprobe PMU (%s/bus/event_source/devices/kprobe "
			    "missing); kprobes need CONFIG_KPROBE_EVENTS (and CONFIG_KPROBES): "
			    "use tracepoints (hwtrace list tracepoint), uprobes or profile here",
			    cfg->sysfs_root ? cfg->sysfs_root : "/sys");
		if (!(*str = strdup(p->func)))
			return -ENOMEM;
		attr->config1 = (uint64_t)(uintptr_t)*str; /* kprobe_func */
		attr->config2 = p->info.offset;		   /* probe_offset */
		if (p->uses & PRB_USE_REGS) {
			attr->sample_type |= PERF_SAMPLE_REGS_INTR;
			attr->sample_regs_intr = regs_mask(p->regs);
		}
		return 0;
	case HWT_PROBE_TRACEPOINT:
		attr->type = PERF_TYPE_TRACEPOINT;
		attr->config = p->tp->id;
		if (p->uses & PRB_USE_RAW)
			attr->sample_type |= PERF_SAMPLE_RAW;
		return 0;
	case HWT_PROBE_PROFILE:
	case HWT_PROBE_INTERVAL: /* BPF: on one CPU; sampling: a timer of hwtrace's */
		attr->type = PERF_TYPE_SOFTWARE;
		attr->config = PERF_COUNT_SW_CPU_CLOCK;
		attr->freq = p->info.freq;
		attr->sample_period = p->info.period; /* sample_freq when freq */
		return 0;
	case HWT_PROBE_SOFTWARE:
	case HWT_PROBE_HARDWARE: {
		struct hwt_pmc_config pc;
		struct hwt_pmc_evlist *list;

		hwt_pmc_config_init(&pc);
		pc.sysfs_root = cfg->sysfs_root;
		pc.psys = cfg->psys;
		pc.tracefs_root = cfg->tracefs_root;
		if ((err = hwt_pmc_evlist_alloc(&list, &pc)) < 0)
			return err;
		if ((err = hwt_pmc_evlist_add(list, p->event)) < 0) {
			ldiag(diag, prog, p->pos, err, "%s", hwt_pmc_evlist_errmsg(list));
			hwt_pmc_evlist_free(list);
			return err;
		}
		{
			const struct perf_event_attr *ea = &hwt_pmc_evlist_event(list, 0)->attr;

			attr->type = ea->type;
			attr->config = ea->config;
			attr->config1 = ea->config1;
			attr->config2 = ea->config2;
			attr->exclude_user = ea->exclude_user;
			attr->exclude_kernel = ea->exclude_kernel;
			attr->exclude_hv = ea->exclude_hv;
			attr->precise_ip = ea->precise_ip;
		}
		hwt_pmc_evlist_free(list);
		attr->sample_period = p->info.period;
		return 0;
	}
	}
	return -HWT_EINTERNAL;
}

int hwt_probe_live_attr(const struct hwt_probe_prog *prog, size_t i,
			const struct hwt_probe_config *cfg, void *attr, char **path_or_sym,
			struct hwt_probe_diag *diag)
{
	struct hwt_sym_cache *cache = NULL;
	struct hwt_sym_config sc;
	char *str = NULL;
	int err;

	if (!prog || !attr || i >= prog->nprobes)
		return -HWT_EINVAL;
	if (!cfg)
		cfg = &prog->cfg;
	hwt_sym_config_init(&sc);
	if ((err = hwt_sym_cache_alloc(&sc, &cache)) < 0)
		return err;
	err = build_attr(prog, i, cfg, cache, attr, &str, diag);
	hwt_sym_cache_free(cache);
	if (path_or_sym)
		*path_or_sym = str;
	else
		free(str);
	return err;
}

/* ------------------------------------------------------------------------ */
/* Opening                                                                   */

void hwt_probe_live_close(struct hwt_probe_live *live)
{
	if (!live)
		return;
	prb_bpf_free(live->bpf);
	free(live->path);
	free(live->fired);
	free(live->skipped);
	for (size_t i = 0; i < live->nevs; i++)
		if (live->evs[i].fd >= 0)
			hwt_psys_close(live->rt->cfg.psys, live->evs[i].fd);
	for (size_t i = 0; i < live->nbufs; i++) {
		prb_ring_close(&live->bufs[i].ring);
		hwt_buf_fini(&live->bufs[i].arena);
		free(live->bufs[i].q);
	}
	free(live->bufs);
	free(live->evs);
	free(live->pfds);
	free(live->infos);
	free(live->regs_intr);
	prb_map_fini(&live->ids);
	free(live);
}

size_t hwt_probe_live_nevents(const struct hwt_probe_live *live)
{
	return live ? live->nevs + prb_bpf_nevents(live->bpf) : 0;
}

int hwt_probe_live_path(const struct hwt_probe_live *live, size_t i, enum hwt_probe_path *path,
			const char **why, const char **log, size_t *insns)
{
	if (!live || i >= live->prog->nprobes)
		return -HWT_EINVAL;
	if (path)
		*path = live->path[i];
	if (why)
		*why = live->path[i] == HWT_PROBE_PATH_BPF ? NULL : prb_bpf_why(live->bpf, i);
	if (log)
		*log = prb_bpf_log(live->bpf, i);
	if (insns)
		*insns = prb_bpf_insns(live->bpf, i);
	return 0;
}

static int online_cpus(const char *sysfs_root, int **cpus)
{
	char path[512], buf[4096];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "%s/devices/system/cpu/online",
		 sysfs_root ? sysfs_root : "/sys");
	if (!(f = fopen(path, "re")))
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -HWT_EFORMAT;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	n = hwt_coll_cpu_list_parse(buf, cpus);
	return n;
}

static int open_error(struct hwt_probe_live *live, const struct prb_probe *p,
		      const struct perf_event_attr *attr, int err, int pid, int cpu,
		      struct hwt_probe_diag *diag)
{
	struct hwt_pmc_event ev;
	char msg[1024];
	int paranoid = INT_MIN;

	if (err == -ESRCH)
		return ldiag(diag, live->prog, p->pos, err,
			     "the target process %d is gone: nothing to probe", pid);
	if ((err == -EACCES || err == -EPERM) &&
	    (p->info.kind == HWT_PROBE_UPROBE || p->info.kind == HWT_PROBE_URETPROBE ||
	     p->info.kind == HWT_PROBE_KPROBE || p->info.kind == HWT_PROBE_KRETPROBE))
		return ldiag(diag, live->prog, p->pos, err,
			     "cannot open %s: the %s PMU takes probes only from root or a process "
			     "with CAP_PERFMON, whatever perf_event_paranoid says; run hwtrace as "
			     "root (sudo)",
			     p->text,
			     p->info.kind == HWT_PROBE_UPROBE || p->info.kind == HWT_PROBE_URETPROBE
				 ? "uprobe"
				 : "kprobe");
	memset(&ev, 0, sizeof(ev));
	snprintf(ev.name, sizeof(ev.name), "%s", p->text);
	snprintf(ev.canon, sizeof(ev.canon), "%s", p->text);
	ev.attr = *attr;
	ev.source =
	    p->info.kind == HWT_PROBE_TRACEPOINT ? HWT_PMC_SRC_TRACEPOINT : HWT_PMC_SRC_SYSFS;
	ev.leader = 0;
	ev.nr_members = 1;
	if (hwt_pmc_paranoid_read(live->rt->cfg.paranoid_path, &paranoid) < 0)
		paranoid = INT_MIN;
	hwt_pmc_explain_open_error(msg, sizeof(msg), err, &ev, pid, cpu, paranoid, live->nevs + 1);
	return ldiag(diag, live->prog, p->pos, err, "%s", msg);
}

static int add_buffer(struct hwt_probe_live *live, int fd, struct hwt_probe_diag *diag)
{
	struct buffer *b = realloc(live->bufs, (live->nbufs + 1) * sizeof(*b));
	int err;

	if (!b)
		return -ENOMEM;
	live->bufs = b;
	b = &live->bufs[live->nbufs];
	memset(b, 0, sizeof(*b));
	hwt_buf_init(&b->arena);
	if ((err = prb_ring_open(&b->ring, live->rt->cfg.psys, fd, live->pages)) < 0) {
		if (err == -EPERM || err == -ENOMEM)
			return ldiag(diag, NULL, 0, err,
				     "cannot map a %zu KiB perf ring buffer (%s): raise "
				     "/proc/sys/kernel/perf_event_mlock_kb or run as root",
				     live->pages * 4, strerror(-err));
		return ldiag(diag, NULL, 0, err, "cannot map a perf ring buffer: %s",
			     strerror(-err));
	}
	live->nbufs++;
	return 0;
}

/* Opens probe p's event on (pid, cpu) into buffer buf (SIZE_MAX: a new
 * buffer of its own). */
static int open_one(struct hwt_probe_live *live, size_t probe, struct perf_event_attr *attr,
		    int pid, int cpu, size_t *buf, bool sideband, struct hwt_probe_diag *diag)
{
	bool counting = probe < live->prog->nprobes && live->prog->probes[probe].count_only;
	const struct prb_probe *p =
	    probe < live->prog->nprobes ? &live->prog->probes[probe] : &live->sb_probe;
	struct event *ev;
	uint64_t id;
	int fd, err;

	attr->mmap = attr->mmap2 = attr->comm = attr->comm_exec = attr->task =
	    sideband && !counting;
	fd = hwt_psys_event_open(live->rt->cfg.psys, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd == -EACCES && !attr->exclude_kernel &&
	    (p->info.kind == HWT_PROBE_PROFILE || p->info.kind == HWT_PROBE_SOFTWARE ||
	     p->info.kind == HWT_PROBE_HARDWARE)) {
		/* perf_event_paranoid 2 forbids kernel samples: user only. */
		attr->exclude_kernel = attr->exclude_hv = 1;
		fd = hwt_psys_event_open(live->rt->cfg.psys, attr, pid, cpu, -1,
					 PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0)
			hwt_log(&live->rt->cfg.log, HWT_LOG_WARN,
				"%s: kernel samples are not allowed (perf_event_paranoid): user "
				"space only",
				p->text);
	}
	if (fd < 0)
		return open_error(live, p, attr, fd, pid, cpu, diag);
	if (live->nevs == live->evcap) {
		size_t cap = live->evcap ? live->evcap * 2 : 16;
		struct event *e = realloc(live->evs, cap * sizeof(*e));

		if (!e) {
			hwt_psys_close(live->rt->cfg.psys, fd);
			return -ENOMEM;
		}
		live->evs = e;
		live->evcap = cap;
	}
	ev = &live->evs[live->nevs++];
	ev->fd = fd;
	ev->probe = probe;
	ev->counting = counting;
	ev->buffer = SIZE_MAX;
	if (counting)
		return 0;
	if (*buf == SIZE_MAX) {
		if ((err = add_buffer(live, fd, diag)) < 0)
			return err;
		*buf = live->nbufs - 1;
	} else if ((err = hwt_psys_set_output(live->rt->cfg.psys, fd, live->bufs[*buf].ring.fd)) <
		   0) {
		return ldiag(
		    diag, live->prog, p->pos, err,
		    "cannot share a ring buffer between events (PERF_EVENT_IOC_SET_OUTPUT): %s",
		    strerror(-err));
	}
	ev->buffer = *buf;
	if ((err = hwt_psys_event_id(live->rt->cfg.psys, fd, &id)) < 0)
		return ldiag(diag, live->prog, p->pos, err, "PERF_EVENT_IOC_ID failed: %s",
			     strerror(-err));
	return prb_map_put(&live->ids, id, 0, live->nevs - 1);
}

/* open_one for a probe's event on (pid, cpu), once per core PMU of a
 * hybrid CPU where a hardware event needs it: on a CPU, the PMU that counts
 * there; for a task on any CPU, every core PMU (the counts add up). */
static int open_hw(struct hwt_probe_live *live, size_t probe, const struct perf_event_attr *attr,
		   int pid, int cpu, size_t *buf, bool sideband, struct hwt_probe_diag *diag)
{
	struct perf_event_attr a = *attr;
	struct hwt_pmc_config pc;
	int n, err;

	if (live->prog->probes[probe].info.kind != HWT_PROBE_HARDWARE)
		return open_one(live, probe, &a, pid, cpu, buf, sideband, diag);
	hwt_pmc_config_init(&pc);
	pc.sysfs_root = live->rt->cfg.sysfs_root;
	n = hwt_pmc_hybrid_bind(&pc, &a, cpu, 0);
	if (n <= 0 || cpu >= 0)
		return open_one(live, probe, &a, pid, cpu, buf, sideband, diag);
	for (int k = 0; k < n; k++) {
		hwt_pmc_hybrid_bind(&pc, &a, -1, k);
		if ((err = open_one(live, probe, &a, pid, cpu, buf, sideband && !k, diag)) < 0)
			return err;
	}
	return 0;
}

static bool is_live_kind(enum hwt_probe_kind k)
{
	return k != HWT_PROBE_BEGIN && k != HWT_PROBE_END;
}

/* Probe i has perf events or a BPF program: not BEGIN/END, not skipped. */
static bool runs_live(const struct hwt_probe_live *live, size_t i)
{
	return is_live_kind(live->prog->probes[i].info.kind) && !live->skipped[i];
}

/* Probe i is one of a list of probes (uprobe:lib:a, uprobe:lib:b { }). */
static bool in_list(const struct hwt_probe_prog *prog, size_t i)
{
	const struct prb_probe *p = &prog->probes[i];

	for (size_t c = 0; c < p->nclauses; c++)
		if (prog->clauses[p->clauses[c]].nprobes > 1)
			return true;
	return false;
}

/* Whether probe i (nprobes: the sideband event) has perf events of the
 * sampling path: samples, counters or sideband. */
static bool opens_perf(const struct hwt_probe_live *live, size_t i)
{
	if (i == live->prog->nprobes)
		return live->sideband;
	if (live->prog->probes[i].info.kind == HWT_PROBE_INTERVAL)
		return false; /* a timer of hwtrace's (BPF: an event of its own) */
	return live->path[i] == HWT_PROBE_PATH_SAMPLING || live->path[i] == HWT_PROBE_PATH_COUNTER;
}

static bool is_counting(const struct hwt_probe_live *live, size_t i)
{
	return i < live->prog->nprobes && live->prog->probes[i].count_only;
}

/* The self-> variables (bits 0..255) and plain maps (256..511) the
 * clauses of a probe use: state that lives on one path. */
static void self_vars_of(const struct hwt_probe_prog *prog, size_t i, uint64_t set[8])
{
	const struct prb_probe *p = &prog->probes[i];

	memset(set, 0, 8 * sizeof(*set));
	for (size_t c = 0; c < p->nclauses; c++) {
		const struct prb_clause *cl = &prog->clauses[p->clauses[c]];

		for (uint32_t k = cl->code; k < cl->code + cl->ncode; k++) {
			const struct prb_insn *in = &prog->code[k];
			unsigned bit;

			if (in->op == PRB_I_SELF || in->op == PRB_I_STORE_SELF)
				bit = in->a % 256;
			else if (in->op == PRB_I_MAP_LOAD || in->op == PRB_I_MAP_STORE ||
				 in->op == PRB_I_MAP_DELETE ||
				 ((in->op == PRB_I_CLEAR || in->op == PRB_I_PRINT) &&
				  in->a < prog->naggs && prog->aggs[in->a].plain))
				bit = 256 + in->a % 256;
			else
				continue;
			set[bit / 64] |= 1ull << (bit % 64);
		}
	}
}

/* Probes that share self-> variables keep them in one place: when one of
 * them cannot run on BPF, the others leave BPF too. */
static void fall_back_together(struct hwt_probe_live *live)
{
	const struct hwt_probe_prog *prog = live->prog;
	uint64_t(*sets)[8] = calloc(prog->nprobes, sizeof(*sets));
	bool changed = true;

	if (!sets)
		return;
	for (size_t i = 0; i < prog->nprobes; i++)
		self_vars_of(prog, i, sets[i]);
	while (changed) {
		changed = false;
		for (size_t i = 0; i < prog->nprobes; i++) {
			if (!runs_live(live, i) || prb_bpf_loaded(live->bpf, i))
				continue;
			for (size_t j = 0; j < prog->nprobes; j++) {
				char why[512];

				uint64_t shared = 0;

				for (int w = 0; w < 8; w++)
					shared |= sets[i][w] & sets[j][w];
				if (!prb_bpf_loaded(live->bpf, j) || !shared)
					continue;
				snprintf(
				    why, sizeof(why),
				    "it shares self-> variables or maps with %s, which runs on "
				    "the sampling path",
				    prog->probes[i].text);
				prb_bpf_unload(live->bpf, j, why);
				changed = true;
			}
		}
	}
	free(sets);
}

/* Tries the BPF path for every probe that is not a counter; sets the
 * path of each. Returns 0, or -ENOMEM. */
static int open_bpf(struct hwt_probe_live *live, const struct hwt_probe_live_config *cfg,
		    struct perf_event_attr *attrs, const int *online, size_t nonline)
{
	const struct hwt_probe_prog *prog = live->prog;
	struct prb_bpf_target t;
	bool *want = calloc(prog->nprobes + 1, sizeof(*want)), any = false;
	int err = 0;

	if (!want)
		return -ENOMEM;
	for (size_t i = 0; i < prog->nprobes; i++) {
		if (!runs_live(live, i))
			continue;
		live->path[i] =
		    prog->probes[i].count_only ? HWT_PROBE_PATH_COUNTER : HWT_PROBE_PATH_SAMPLING;
		want[i] = cfg->backend == HWT_PROBE_BACKEND_AUTO && !prog->probes[i].count_only;
		any |= want[i];
	}
	if (!any)
		goto out;
	memset(&t, 0, sizeof(t));
	t.tids = cfg->tids;
	t.ntids = cfg->ntids;
	if (!cfg->ntids) {
		t.cpus = cfg->cpus && cfg->ncpus ? cfg->cpus : online;
		t.ncpus = cfg->cpus && cfg->ncpus ? cfg->ncpus : nonline;
	}
	t.online = online;
	t.nonline = nonline;
	t.no_inherit = cfg->no_inherit;
	t.enable_on_exec = cfg->enable_on_exec;
	t.tracefs_root = live->rt->cfg.tracefs_root;
	t.proc_root = live->rt->cfg.proc_root;
	if ((err = prb_bpf_alloc(&live->bpf, live->rt, &t)) < 0)
		goto out;
	if ((err = prb_bpf_load(live->bpf, want, live->rt->target)) < 0)
		goto out;
	fall_back_together(live);
	/* targets and their helper programs first: on a tracepoint they
	 * share (sched_process_exec) they must run before the probes' */
	if ((err = prb_bpf_start(live->bpf)) < 0)
		goto out;
	for (size_t i = 0; i < prog->nprobes; i++) {
		if (!prb_bpf_loaded(live->bpf, i))
			continue;
		if (prb_bpf_attach(live->bpf, i, &attrs[i]) < 0) {
			prb_bpf_unload(live->bpf, i, NULL);
			fall_back_together(live);
		}
	}
	for (size_t i = 0; i < prog->nprobes; i++) {
		if (!prb_bpf_loaded(live->bpf, i))
			continue;
		live->path[i] = HWT_PROBE_PATH_BPF;
		/* user addresses are symbolized when the maps are printed,
		 * maybe after the process exited: keep its mappings */
		if (prog->probes[i].uses & (PRB_USE_USTACK | PRB_USE_FUNC))
			live->sideband = true;
	}
out:
	free(want);
	return err;
}

int hwt_probe_live_open(struct hwt_probe_live **out, struct hwt_probe_rt *rt,
			const struct hwt_probe_live_config *cfg, struct hwt_probe_diag *diag)
{
	struct hwt_probe_live_config lcfg;
	const struct hwt_probe_prog *prog;
	struct hwt_probe_live *live = NULL;
	struct perf_event_attr *attrs = NULL;
	struct hwt_probe_diag d;
	char **strs = NULL;
	int *cpus = NULL, *online = NULL;
	int ncpus = 0, nonline = 0, err;
	size_t nlive = 0, np;

	if (diag)
		memset(diag, 0, sizeof(*diag));
	hwt_probe_live_config_init(&lcfg);
	if (!out || !rt || !cfg || hwt_opts_copy(&lcfg, sizeof(lcfg), cfg) < 0)
		return ldiag(diag, NULL, 0, -HWT_EINVAL, "bad arguments");
	cfg = &lcfg;
	*out = NULL;
	prog = rt->prog;
	np = prog->nprobes;
	for (size_t i = 0; i < np; i++)
		nlive += is_live_kind(prog->probes[i].info.kind);
	if (!nlive)
		return ldiag(diag, prog, 0, -HWT_EINVAL, "the program has no live probe");
	if (!(live = calloc(1, sizeof(*live))))
		return -ENOMEM;
	live->rt = rt;
	live->prog = prog;
	live->pages = cfg->pages ? cfg->pages : 128;
	live->sb_probe.text = (char *)"the sideband event (software:dummy)";
	live->sb_probe.info.kind = HWT_PROBE_SOFTWARE;
	live->sb_probe.info.text = live->sb_probe.text;
	if (live->pages & (live->pages - 1)) {
		err = ldiag(diag, NULL, 0, -HWT_EINVAL, "ring buffer pages must be a power of two");
		goto error;
	}
	err = -ENOMEM;
	/* one more than the probes: the sideband event */
	live->infos = calloc(np + 1, sizeof(*live->infos));
	live->regs_intr = calloc(np + 1, sizeof(*live->regs_intr));
	live->path = calloc(np + 1, sizeof(*live->path));
	live->fired = calloc(np + 1, sizeof(*live->fired));
	live->skipped = calloc(np + 1, sizeof(*live->skipped));
	attrs = calloc(np + 1, sizeof(*attrs));
	strs = calloc(np + 1, sizeof(*strs));
	if (!live->infos || !live->regs_intr || !live->path || !live->fired || !live->skipped ||
	    !attrs || !strs)
		goto error;

	/* Attributes first: every symbol and PMU problem is reported before
	 * anything is opened. */
	for (size_t i = 0; i < np; i++) {
		if (!is_live_kind(prog->probes[i].info.kind))
			continue;
		memset(&d, 0, sizeof(d));
		err = build_attr(prog, i, &rt->cfg, prb_syms_cache(rt->syms), &attrs[i], &strs[i],
				 &d);
		if (err == -HWT_ENOSYM && in_list(prog, i)) {
			/* as bpftrace: a function missing from a list of
			 * probes (sslsnoop.bt's libcrypto functions that only
			 * debug symbols name) is left out, the others run */
			hwt_log(&rt->cfg.log, HWT_LOG_WARN,
				"%s is left out: %s has no such function (the rest of its "
				"list runs)",
				prog->probes[i].text, prog->probes[i].object);
			live->skipped[i] = true;
			continue;
		}
		if (err < 0) {
			if (diag)
				*diag = d;
			goto error;
		}
		if (prog->probes[i].count_only) {
			/* counted in the kernel: no sample, no buffer */
			attrs[i].sample_type = 0;
			attrs[i].sample_period = 0;
			attrs[i].freq = 0;
			attrs[i].watermark = 0;
		}
		attrs[i].disabled = cfg->enable_on_exec;
		attrs[i].enable_on_exec = cfg->enable_on_exec;
		/* wake us at an eighth full: room for bursts while we run */
		attrs[i].wakeup_watermark = (uint32_t)(live->pages * 4096 / 8);
		hwt_fmt_attr_info_from_attr(&live->infos[i], &attrs[i]);
		live->infos[i].sample_id_all = true;
		live->regs_intr[i] = prog->probes[i].info.kind == HWT_PROBE_KPROBE ||
				     prog->probes[i].info.kind == HWT_PROBE_KRETPROBE;
	}
	/* a list none of whose functions exists is an error, as one probe */
	for (size_t c = 0; c < prog->nclauses; c++) {
		const struct prb_clause *cl = &prog->clauses[c];
		size_t left = 0;

		for (size_t k = 0; k < cl->nprobes; k++)
			left += live->skipped[cl->probes[k]];
		if (cl->nprobes && left == cl->nprobes) {
			err = ldiag(diag, prog, cl->pos, -HWT_ENOSYM,
				    "none of the %zu functions of this probe list exists", left);
			goto error;
		}
	}
	{
		/* the sideband event, when only BPF programs run */
		struct perf_event_attr *a = &attrs[np];

		a->size = sizeof(*a);
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_DUMMY;
		a->sample_type = PRB_SAMPLE_BASE;
		a->sample_id_all = 1;
		a->use_clockid = 1;
		a->clockid = CLOCK_MONOTONIC;
		a->watermark = 1;
		a->wakeup_watermark = (uint32_t)(live->pages * 4096 / 8);
		a->disabled = a->enable_on_exec = cfg->enable_on_exec;
		hwt_fmt_attr_info_from_attr(&live->infos[np], a);
		live->infos[np].sample_id_all = true;
	}

	if ((nonline = online_cpus(rt->cfg.sysfs_root, &online)) <= 0) {
		err = ldiag(diag, NULL, 0, nonline < 0 ? nonline : -HWT_EFORMAT,
			    "cannot read the online CPUs from sysfs: %s",
			    hwt_strerror(nonline < 0 ? nonline : -HWT_EFORMAT));
		goto error;
	}
	if (cfg->cpus && cfg->ncpus) {
		if (!(cpus = malloc(cfg->ncpus * sizeof(*cpus))))
			goto error;
		memcpy(cpus, cfg->cpus, cfg->ncpus * sizeof(*cpus));
		ncpus = (int)cfg->ncpus;
	} else {
		if (!(cpus = malloc((size_t)nonline * sizeof(*cpus))))
			goto error;
		memcpy(cpus, online, (size_t)nonline * sizeof(*cpus));
		ncpus = nonline;
	}
	if ((err = open_bpf(live, cfg, attrs, online, (size_t)nonline)) < 0) {
		err = ldiag(diag, NULL, 0, err, "cannot set up the BPF programs: %s",
			    hwt_strerror(err));
		goto error;
	}
	/* what only BPF programs can do has no sampling path to fall to */
	for (size_t i = 0; i < np; i++) {
		const struct prb_probe *p = &prog->probes[i];
		const char *why = prb_bpf_why(live->bpf, i);

		if (!p->bpf_only || live->path[i] == HWT_PROBE_PATH_BPF || !runs_live(live, i))
			continue;
		if (cfg->backend == HWT_PROBE_BACKEND_SAMPLING)
			err = ldiag(diag, prog, p->bpf_only_pos, -HWT_ENOTSUP,
				    "%s needs the BPF path (%s): --no-bpf cannot run it", p->text,
				    p->bpf_only);
		else
			err = ldiag(diag, prog, p->bpf_only_pos, -HWT_ENOTSUP,
				    "%s needs the BPF path (%s), and BPF cannot run it here: %s",
				    p->text, p->bpf_only, why ? why : "unknown reason");
		goto error;
	}
	/* intervals on the sampling path: hwtrace's timers */
	for (size_t i = 0; i < np; i++)
		if (prog->probes[i].info.kind == HWT_PROBE_INTERVAL &&
		    live->path[i] != HWT_PROBE_PATH_BPF)
			live->timers = true;
	live->t_start = mono_ns();

	if (cfg->ntids && cfg->no_inherit) {
		/* per thread: one buffer each (cpu -1) */
		for (size_t t = 0; t < cfg->ntids; t++) {
			size_t buf = SIZE_MAX;
			bool first = true;

			for (size_t i = 0; i <= np; i++) {
				if (!opens_perf(live, i))
					continue;
				attrs[i].inherit = 0;
				if ((err = open_hw(live, i, &attrs[i], cfg->tids[t], -1, &buf,
						   first, diag)) < 0)
					goto error;
				first = first && is_counting(live, i);
			}
		}
	} else {
		/* per CPU: one buffer per CPU for every thread (inherited
		 * per-thread events cannot be mapped, so perf record opens
		 * them per CPU too) */
		for (int c = 0; c < ncpus; c++) {
			size_t buf = SIZE_MAX;
			size_t nt = cfg->ntids ? cfg->ntids : 1;

			for (size_t t = 0; t < nt; t++) {
				bool first = true;
				int pid = cfg->ntids ? cfg->tids[t] : -1;

				for (size_t i = 0; i <= np; i++) {
					int cpu = cpus[c];

					if (!opens_perf(live, i))
						continue;
					attrs[i].inherit = cfg->ntids && !cfg->no_inherit;
					/* a counter of threads needs no buffer, so it
					 * can follow them on any CPU: one event, as
					 * perf stat opens */
					if (cfg->ntids && is_counting(live, i)) {
						if (c)
							continue;
						cpu = -1;
					}
					err = open_hw(live, i, &attrs[i], pid, cpu, &buf, first,
						      diag);
					if (err < 0)
						goto error;
					first = first && is_counting(live, i);
				}
			}
		}
	}
	if (!(live->pfds = calloc(live->nbufs + 2, sizeof(*live->pfds)))) {
		err = -ENOMEM;
		goto error;
	}
	for (size_t b = 0; b < live->nbufs; b++) {
		live->pfds[b].fd = live->bufs[b].ring.fd;
		live->pfds[b].events = POLLIN;
	}
	live->npfds = live->nbufs;
	if (prb_bpf_poll_fd(live->bpf) >= 0) {
		live->pfds[live->npfds].fd = prb_bpf_poll_fd(live->bpf);
		live->pfds[live->npfds++].events = POLLIN;
	}
	for (size_t i = 0; i <= np; i++)
		free(strs[i]);
	free(strs);
	free(attrs);
	free(cpus);
	free(online);
	*out = live;
	return 0;
error:
	if (strs)
		for (size_t i = 0; i <= np; i++)
			free(strs[i]);
	free(strs);
	free(attrs);
	free(cpus);
	free(online);
	hwt_probe_live_close(live);
	return err;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

void prb_regs_to_hit(const uint8_t *regs, uint64_t mask, struct hwt_probe_hit *hit)
{
	size_t k = 0;

	/* values come in register-number order, one per bit of the mask */
	for (uint64_t m = mask; m; m &= m - 1) {
		uint64_t v = hwt_le64(regs + 8 * k++);

		switch (__builtin_ctzll(m)) {
		case PRB_REG_DI:
			hit->regs[0] = v;
			break;
		case PRB_REG_SI:
			hit->regs[1] = v;
			break;
		case PRB_REG_DX:
			hit->regs[2] = v;
			break;
		case PRB_REG_CX:
			hit->regs[3] = v;
			break;
		case PRB_REG_R8:
			hit->regs[4] = v;
			break;
		case PRB_REG_R9:
			hit->regs[5] = v;
			break;
		case PRB_REG_AX:
			hit->regs[HWT_PROBE_REG_RETVAL] = v;
			break;
		}
	}
	hit->has_regs = true;
}

void prb_hit_from_sample(const struct hwt_fmt_record *rec, bool regs_intr,
			 struct hwt_probe_hit *hit)
{
	const struct hwt_fmt_sample *s = &rec->u.sample;

	memset(hit, 0, sizeof(*hit));
	hit->pid = s->type & PERF_SAMPLE_TID ? (int32_t)s->pid : -1;
	hit->tid = s->type & PERF_SAMPLE_TID ? (int32_t)s->tid : -1;
	hit->cpu = s->type & PERF_SAMPLE_CPU ? (int32_t)s->cpu : -1;
	hit->time = s->time;
	hit->ip = s->ip;
	hit->raw = s->raw;
	hit->raw_size = s->raw_size;
	if (s->type & PERF_SAMPLE_CALLCHAIN) {
		hit->callchain = s->callchain;
		hit->callchain_nr = s->callchain_nr;
	}
	if ((s->type & PERF_SAMPLE_STACK_USER) && s->stack_user && s->stack_user_dyn_size >= 8 &&
	    s->stack_user_size >= 8)
		hit->entry_ret = hwt_le64(s->stack_user);
	if (!regs_intr && (s->type & PERF_SAMPLE_REGS_USER) && s->regs_user_abi && s->regs_user)
		prb_regs_to_hit(s->regs_user, s->regs_user_mask, hit);
	if (regs_intr && (s->type & PERF_SAMPLE_REGS_INTR) && s->regs_intr_abi && s->regs_intr)
		prb_regs_to_hit(s->regs_intr, s->regs_intr_mask, hit);
}

/* The event a record belongs to, from its identifier. */
static const struct event *record_event(const struct hwt_probe_live *live, const uint8_t *rec,
					size_t len)
{
	const struct perf_event_header *h = (const void *)rec;
	uint64_t id, *ix;

	if (h->type == PERF_RECORD_SAMPLE) {
		if (len < 16)
			return NULL;
		id = hwt_le64(rec + 8);
	} else {
		if (len < 16)
			return NULL;
		id = hwt_le64(rec + len - 8);
	}
	ix = prb_map_get(&live->ids, id, 0);
	return ix ? &live->evs[*ix] : NULL;
}

static uint64_t record_time(const uint8_t *rec, size_t len)
{
	const struct perf_event_header *h = (const void *)rec;

	if (h->type == PERF_RECORD_SAMPLE)
		return len >= 40 ? hwt_le64(rec + 32) : 0;
	return len >= 8 + 32 ? hwt_le64(rec + len - 24) : 0;
}

static int process(struct hwt_probe_live *live, const uint8_t *buf, size_t len)
{
	const struct event *ev = record_event(live, buf, len);
	struct hwt_fmt_record rec;
	struct hwt_probe_hit hit;
	int err;

	if (!ev) {
		live->rt->stats.bad_samples++;
		return 0;
	}
	err = hwt_fmt_record_parse(&live->infos[ev->probe], buf, len, &rec);
	if (err < 0) {
		if (err != -HWT_ENOTSUP)
			live->rt->stats.bad_samples++;
		return 0;
	}
	switch (rec.type) {
	case PERF_RECORD_SAMPLE:
		prb_hit_from_sample(&rec, live->regs_intr[ev->probe], &hit);
		return hwt_probe_rt_fire(live->rt, ev->probe, &hit);
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		if (rec.u.mmap.filename)
			return hwt_probe_rt_mmap(live->rt, (int32_t)rec.u.mmap.pid, rec.u.mmap.addr,
						 rec.u.mmap.len, rec.u.mmap.pgoff,
						 rec.u.mmap.filename);
		return 0;
	case PERF_RECORD_COMM:
		return hwt_probe_rt_comm(live->rt, (int32_t)rec.u.comm.pid, (int32_t)rec.u.comm.tid,
					 rec.u.comm.comm, rec.misc & PERF_RECORD_MISC_COMM_EXEC);
	case PERF_RECORD_FORK:
		return hwt_probe_rt_fork(live->rt, (int32_t)rec.u.fork.ppid,
					 (int32_t)rec.u.fork.pid, (int32_t)rec.u.fork.tid);
	case PERF_RECORD_EXIT:
		hwt_probe_rt_exit(live->rt, (int32_t)rec.u.fork.pid, (int32_t)rec.u.fork.tid);
		return 0;
	case PERF_RECORD_LOST:
		hwt_probe_rt_lost(live->rt, rec.u.lost.lost);
		return 0;
	case PERF_RECORD_THROTTLE:
		if (!live->throttled++)
			hwt_log(&live->rt->cfg.log, HWT_LOG_WARN,
				"the kernel throttled sampling (perf_event_max_sample_rate): some "
				"profile hits were not taken");
		return 0;
	}
	return 0;
}

/* Copies one record into the current buffer's queue. */
static int enqueue(void *ctx, const void *rec, size_t len)
{
	struct hwt_probe_live *live = ctx;
	struct buffer *b = live->cur;
	int err;

	if (b->qn == b->qcap) {
		size_t cap = b->qcap ? b->qcap * 2 : 1024;
		struct pend *q = realloc(b->q, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		b->q = q;
		b->qcap = cap;
	}
	if (b->arena.len + len > UINT32_MAX)
		return -HWT_ETOOBIG;
	b->q[b->qn].time = record_time(rec, len);
	b->q[b->qn].off = (uint32_t)b->arena.len;
	b->q[b->qn].len = (uint32_t)len;
	if ((err = hwt_buf_append(&b->arena, rec, len)) < 0)
		return err;
	b->qn++;
	return 0;
}

/* Direct processing when there is one buffer: no merge needed. */
static int process_cb(void *ctx, const void *rec, size_t len)
{
	return process(ctx, rec, len);
}

static void compact(struct buffer *b)
{
	if (b->qhead == b->qn) {
		b->qhead = b->qn = 0;
		b->arena.len = 0;
		return;
	}
	if (b->qhead * 2 < b->qn)
		return;
	uint32_t base = b->q[b->qhead].off;
	memmove(b->arena.data, b->arena.data + base, b->arena.len - base);
	b->arena.len -= base;
	memmove(b->q, b->q + b->qhead, (b->qn - b->qhead) * sizeof(*b->q));
	b->qn -= b->qhead;
	b->qhead = 0;
	for (size_t i = 0; i < b->qn; i++)
		b->q[i].off -= base;
}

/* interval probes on the sampling path: each fires once per period
 * since the start, in hwtrace (its pid, no CPU). */
static int fire_timers(struct hwt_probe_live *live)
{
	const struct hwt_probe_prog *prog = live->prog;
	uint64_t now = mono_ns();
	int err;

	for (size_t i = 0; i < prog->nprobes && !live->rt->exited; i++) {
		const struct prb_probe *p = &prog->probes[i];
		struct hwt_probe_hit hit;

		if (p->info.kind != HWT_PROBE_INTERVAL || live->path[i] == HWT_PROBE_PATH_BPF ||
		    !p->info.period)
			continue;
		while ((live->fired[i] + 1) * p->info.period <= now - live->t_start &&
		       !live->rt->exited) {
			live->fired[i]++;
			memset(&hit, 0, sizeof(hit));
			hit.pid = hit.tid = (int32_t)getpid();
			hit.cpu = -1;
			hit.time = now;
			hit.comm = "hwtrace";
			if ((err = hwt_probe_rt_fire(live->rt, i, &hit)) < 0)
				return err;
		}
	}
	return 0;
}

static int read_all(struct hwt_probe_live *live, bool final)
{
	uint64_t limit = final ? UINT64_MAX : mono_ns() - HOLD_BACK_NS;
	int hits0 = (int)live->rt->stats.hits, err;

	/* BPF's ring buffer first: printf output and exit() */
	if ((err = prb_bpf_poll(live->bpf)) < 0)
		return err;
	if (live->timers && !final && (err = fire_timers(live)) < 0)
		return err;
	if (live->rt->exited)
		return 0;
	if (!live->nbufs)
		return 0;

	if (live->nbufs == 1) {
		err = prb_ring_read(&live->bufs[0].ring, process_cb, live);
		return err < 0 ? err : (int)live->rt->stats.hits - hits0;
	}
	for (size_t i = 0; i < live->nbufs; i++) {
		live->cur = &live->bufs[i];
		if ((err = prb_ring_read(&live->bufs[i].ring, enqueue, live)) < 0)
			return err;
	}
	/* merge: the oldest front record of any queue, until the limit */
	for (;;) {
		struct buffer *best = NULL;

		for (size_t i = 0; i < live->nbufs; i++) {
			struct buffer *b = &live->bufs[i];

			if (b->qhead < b->qn &&
			    (!best || b->q[b->qhead].time < best->q[best->qhead].time))
				best = b;
		}
		if (!best || best->q[best->qhead].time > limit)
			break;
		{
			const struct pend *pd = &best->q[best->qhead++];

			if ((err = process(live, best->arena.data + pd->off, pd->len)) < 0)
				return err;
		}
		if (live->rt->exited)
			break;
	}
	for (size_t i = 0; i < live->nbufs; i++)
		compact(&live->bufs[i]);
	return (int)live->rt->stats.hits - hits0;
}

int hwt_probe_live_poll(struct hwt_probe_live *live, int timeout_ms)
{
	if (!live)
		return -HWT_EINVAL;
	if (live->timers) {
		/* wake for the next interval */
		const struct hwt_probe_prog *prog = live->prog;
		uint64_t now = mono_ns();

		for (size_t i = 0; i < prog->nprobes; i++) {
			const struct prb_probe *p = &prog->probes[i];
			uint64_t due;

			if (p->info.kind != HWT_PROBE_INTERVAL || !p->info.period)
				continue;
			due = live->t_start + (live->fired[i] + 1) * p->info.period;
			if (due <= now)
				timeout_ms = 0;
			else if ((due - now) / 1000000 + 1 < (uint64_t)timeout_ms)
				timeout_ms = (int)((due - now) / 1000000 + 1);
		}
	}
	if (timeout_ms > 10 && !live->npfds)
		timeout_ms = 10; /* nothing to wait on: look at the target often */
	if (timeout_ms > 0) {
		/* nothing to wait on (BPF maps only): sleep the timeout */
		int r = hwt_psys_poll(live->rt->cfg.psys, live->npfds ? live->pfds : NULL,
				      live->npfds, timeout_ms);

		if (r < 0 && r != -EINTR)
			return r;
	}
	return read_all(live, false);
}

/* Adds the counting events' totals to their probes' count() aggregations
 * (once, at the end). */
static int read_counters(struct hwt_probe_live *live)
{
	const struct hwt_probe_prog *prog = live->prog;
	struct hwt_probe_rt *rt = live->rt;
	uint64_t *tot;
	int err = 0;

	if (live->counted)
		return 0;
	live->counted = true;
	if (!(tot = calloc(prog->nprobes, sizeof(*tot))))
		return -ENOMEM;
	for (size_t e = 0; e < live->nevs; e++) {
		uint64_t v;

		if (!live->evs[e].counting)
			continue;
		if (hwt_psys_read(live->rt->cfg.psys, live->evs[e].fd, &v, sizeof(v)) ==
		    (ssize_t)sizeof(v))
			tot[live->evs[e].probe] += v;
	}
	for (size_t i = 0; i < prog->nprobes && err >= 0; i++) {
		const struct prb_probe *p = &prog->probes[i];

		if (!p->count_only || !tot[i])
			continue;
		rt->stats.hits += tot[i];
		for (size_t c = 0; c < p->nclauses && err >= 0; c++) {
			const struct prb_clause *cl = &prog->clauses[p->clauses[c]];

			for (size_t st = 0; st < cl->stmts.n && err >= 0; st++)
				err = hwt_rep_agg_update(rt->aggs[cl->stmts.v[st]->v], NULL, 0,
							 tot[i]);
		}
	}
	free(tot);
	return err;
}

int hwt_probe_live_drain(struct hwt_probe_live *live)
{
	int n, err;

	if (!live)
		return -HWT_EINVAL;
	if ((n = read_all(live, true)) < 0)
		return n;
	if ((err = read_counters(live)) < 0)
		return err;
	if ((err = prb_bpf_finish(live->bpf)) < 0)
		return err;
	return n;
}
