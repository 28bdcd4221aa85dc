/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/ptsim.c - the simulated intel_pt PMU, kernel side (see
 * ptsim_int.h). It answers the perf system calls for intel_pt events and
 * for the software dummy events that carry the sideband, with the rules of
 * kernel/events/core.c, kernel/events/ring_buffer.c and
 * arch/x86/events/intel/pt.c, and forwards every other event to the handle
 * below it (the kernel, or the simulated core PMU). A command the tool
 * launches runs under the PT emulator (qemu-x86_64 with hwtrace's plugin):
 * that is where the trace comes from, and why only such commands are
 * traced. The machine's sysfs is the real one with an intel_pt PMU added
 * (the emulated Skylake-SP's caps) and the simulated CPUs online.
 *
 * Switched on by HWT_PT_SIM: "1", or options separated by commas: cpus=N
 * (the simulated CPUs, default those of this machine), slice=N (a thread
 * is switched out after N PSB periods even when no other waits for its CPU:
 * threads move from CPU to CPU), wait (the hardware waits for the reader
 * instead of losing trace: for tests of exact decoding), kernel=DIR (the
 * machine's kernel is DIR's kcore, kallsyms and modules, e.g. a test-built
 * kernel-like image's: its procfs is /proc's with those three, so that
 * `record --pt` traces the kernel and copies its code from there; the
 * emulator's trace itself stays user space only).
 */
#include "collector/ptsim_int.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector/ptemu_int.h"
#include "collector/rec_int.h"
#include "pmc/pmc.h"

/* ------------------------------------------------------------------------ */
/* The machine's sysfs                                                       */

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -errno;
}

/* Links every entry of real/ into dir/ except those named in skip
 * (NULL-terminated). */
static int link_all(const char *real, const char *dir, const char *const *skip)
{
	DIR *d = opendir(real);
	struct dirent *de;
	int err = 0;

	if (!d)
		return 0; /* nothing to show */
	while ((de = readdir(d)) && !err) {
		char from[PATH_MAX + 256], to[PATH_MAX + 256];
		bool skipped = de->d_name[0] == '.';

		for (size_t i = 0; skip && skip[i] && !skipped; i++)
			skipped = !strcmp(de->d_name, skip[i]);
		if (skipped)
			continue;
		if ((size_t)snprintf(from, sizeof(from), "%s/%s", real, de->d_name) >=
			sizeof(from) ||
		    (size_t)snprintf(to, sizeof(to), "%s/%s", dir, de->d_name) >= sizeof(to))
			err = -ENAMETOOLONG;
		else if (symlink(from, to) < 0 && errno != EEXIST)
			err = -errno;
	}
	closedir(d);
	return err;
}

static int mkdirs(const char *base, const char *rel)
{
	char path[PATH_MAX + 256];
	size_t n = (size_t)snprintf(path, sizeof(path), "%s/", base);

	for (const char *p = rel; *p && n + 1 < sizeof(path); p++) {
		path[n++] = *p;
		if (p[1] == '/' || !p[1]) {
			path[n] = '\0';
			if (mkdir(path, 0755) < 0 && errno != EEXIST)
				return -errno;
		}
	}
	return 0;
}

/* The type numbers the kernel gave its PMUs: ours must be another. */
static uint32_t free_type(void)
{
	DIR *d = opendir("/sys/bus/event_source/devices");
	struct dirent *de;
	uint32_t max = 9;

	if (!d)
		return max + 1;
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		unsigned t;
		FILE *f;

		snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%.200s/type",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%u", &t) == 1 && t > max)
			max = t;
		fclose(f);
	}
	closedir(d);
	return max + 1;
}

static int make_sysfs(struct ptsim *sim)
{
	/* arch/x86/events/intel/pt.c's format, and the caps of the emulated
	 * CPU (ptemu_int.h: Skylake-SP, 2.1 GHz, 25 MHz crystal) limited to
	 * what the emulator writes: no PTWRITE, power events, event trace or
	 * CYC thresholds. */
	static const char *const fmt[][2] = {
	    {"pt", "config:0"},
	    {"cyc", "config:1"},
	    {"mtc", "config:9"},
	    {"tsc", "config:10"},
	    {"noretcomp", "config:11"},
	    {"branch", "config:13"},
	    {"mtc_period", "config:14-17"},
	    {"cyc_thresh", "config:19-22"},
	    {"psb_period", "config:24-27"},
	};
	static const char *const caps[][2] = {
	    {"max_subleaf", "1"},
	    {"cr3_filtering", "1"},
	    {"psb_cyc", "1"},
	    {"ip_filtering", "1"},
	    {"mtc", "1"},
	    {"ptwrite", "0"},
	    {"power_event_trace", "0"},
	    {"event_trace", "0"},
	    {"tnt_disable", "0"},
	    {"topa_output", "1"},
	    {"topa_multiple_entries", "1"},
	    {"single_range_output", "1"},
	    {"output_subsys", "0"},
	    {"payloads_lip", "0"},
	    {"num_address_ranges", "2"},
	    {"mtc_periods", "249"},
	    {"cycle_thresholds", "1"},
	    {"psb_periods", "3f"},
	};
	static const char *const top_skip[] = {"bus", "devices", NULL};
	static const char *const bus_skip[] = {"event_source", NULL};
	static const char *const dev_skip[] = {"system", NULL};
	static const char *const sys_skip[] = {"cpu", NULL};
	static const char *const cpu_skip[] = {"online", "present", "possible", NULL};
	struct hwt_ptemu_cpu cpu;
	char path[PATH_MAX + 64], text[64];
	int err = 0;

	hwt_ptemu_cpu_default(&cpu);
	snprintf(sim->sysfs, sizeof(sim->sysfs), "%s/sys", sim->dir);
	if (mkdir(sim->sysfs, 0755) < 0)
		return -errno;
	err = mkdirs(sim->sysfs, "bus/event_source/devices/intel_pt/format");
	err = err ? err : mkdirs(sim->sysfs, "bus/event_source/devices/intel_pt/caps");
	err = err ? err : mkdirs(sim->sysfs, "devices/system/cpu");
	err = err ? err : link_all("/sys", sim->sysfs, top_skip);
	snprintf(path, sizeof(path), "%s/bus", sim->sysfs);
	err = err ? err : link_all("/sys/bus", path, bus_skip);
	snprintf(path, sizeof(path), "%s/bus/event_source/devices", sim->sysfs);
	err = err ? err : link_all("/sys/bus/event_source/devices", path, NULL);
	snprintf(path, sizeof(path), "%s/devices", sim->sysfs);
	err = err ? err : link_all("/sys/devices", path, dev_skip);
	snprintf(path, sizeof(path), "%s/devices/system", sim->sysfs);
	err = err ? err : link_all("/sys/devices/system", path, sys_skip);
	snprintf(path, sizeof(path), "%s/devices/system/cpu", sim->sysfs);
	err = err ? err : link_all("/sys/devices/system/cpu", path, cpu_skip);
	snprintf(text, sizeof(text), "0-%u\n", sim->ncpus - 1);
	if (sim->ncpus == 1)
		snprintf(text, sizeof(text), "0\n");
	err = err ? err : write_file(path, "online", text);
	err = err ? err : write_file(path, "present", text);
	err = err ? err : write_file(path, "possible", text);
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/intel_pt", sim->sysfs);
	snprintf(text, sizeof(text), "%u\n", sim->pt_type);
	err = err ? err : write_file(path, "type", text);
	snprintf(text, sizeof(text), "%u\n", cpu.nom_freq);
	err = err ? err : write_file(path, "max_nonturbo_ratio", text);
	snprintf(text, sizeof(text), "%u:%u\n", cpu.cpuid15_ebx, cpu.cpuid15_eax);
	err = err ? err : write_file(path, "tsc_art_ratio", text);
	for (size_t i = 0; i < HWT_ARRAY_SIZE(fmt) && !err; i++) {
		snprintf(path, sizeof(path), "%s/bus/event_source/devices/intel_pt/format",
			 sim->sysfs);
		snprintf(text, sizeof(text), "%s\n", fmt[i][1]);
		err = write_file(path, fmt[i][0], text);
	}
	for (size_t i = 0; i < HWT_ARRAY_SIZE(caps) && !err; i++) {
		snprintf(path, sizeof(path), "%s/bus/event_source/devices/intel_pt/caps",
			 sim->sysfs);
		snprintf(text, sizeof(text), "%s\n", caps[i][1]);
		err = write_file(path, caps[i][0], text);
	}
	return err;
}

static void remove_tree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *de;

	if (lstat(path, &st) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlink(path);
		return;
	}
	d = opendir(path);
	while (d && (de = readdir(d))) {
		char sub[PATH_MAX + 256];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		remove_tree(sub);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

/* ------------------------------------------------------------------------ */
/* Events                                                                    */

struct ptsim_event *ptsim_event_find(struct ptsim *sim, int fd)
{
	for (size_t i = 0; i < sim->nev; i++) {
		if (sim->ev[i]->fd == fd)
			return sim->ev[i];
	}
	return NULL;
}

static void buf_put(struct ptsim *sim, struct ptsim_buf *b)
{
	if (!b || --b->refs > 0)
		return;
	if (b->aux)
		munmap(b->aux, b->aux_size);
	if (b->map)
		munmap(b->map, b->map_len);
	if (b->memfd >= 0)
		close(b->memfd);
	free(b->pend);
	sim->locked -= b->charged < sim->locked ? b->charged : sim->locked;
	free(b);
}

static void event_free(struct ptsim *sim, struct ptsim_event *e)
{
	if (!e)
		return;
	if (e->kind == PTSIM_PT) {
		if (e->pid == -1)
			sim->exclusive++;
		else
			sim->exclusive--;
	}
	if (e->buf && e->buf->pend_ev == e)
		e->buf->pend_ev = NULL;
	if (e->buf && e->mapped)
		e->buf->wake_fd = -1; /* its eventfd closes now */
	buf_put(sim, e->buf);
	if (e->fd >= 0)
		close(e->fd);
	free(e->filter);
	free(e->started);
	free(e);
}

/* RTIT_CTL bits the driver takes from attr.config (pt.c PT_CONFIG_MASK),
 * and pt_event_valid() for the simulated CPU's caps. */
static bool pt_config_valid(uint64_t config)
{
	const uint64_t mask = 1ull | 1ull << 1 | 0xfull << 14 | 1ull << 9 | 1ull << 10 |
			      1ull << 11 | 1ull << 13 | 0xfull << 19 | 0xfull << 24 | 1ull << 4 |
			      1ull << 5 | 1ull << 12 | 1ull << 31 | 1ull << 55;
	unsigned mtc_period = (unsigned)(config >> 14) & 0xf;
	unsigned psb = (unsigned)(config >> 24) & 0xf;
	unsigned thresh = (unsigned)(config >> 19) & 0xf;

	if ((config & mask) != config)
		return false;
	if ((config & (1ull << 9 | 0xfull << 14)) && !((0x249u >> mtc_period) & 1))
		return false;
	if (psb && !((0x3fu >> psb) & 1))
		return false;
	if (thresh) /* caps/cycle_thresholds: 0 only */
		return false;
	/* No PTWRITE, power events, event trace or TNT disable on this CPU. */
	if (config & (1ull << 4 | 1ull << 5 | 1ull << 12 | 1ull << 31 | 1ull << 55))
		return false;
	/* BRANCH_EN only with the pass-through bit 0. */
	if ((config & (1ull << 13)) && !(config & 1))
		return false;
	return true;
}

static bool have_cap(unsigned cap)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0 || cap / 32 >= _LINUX_CAPABILITY_U32S_3)
		return false;
	return (data[cap / 32].effective >> (cap % 32)) & 1;
}

static int sim_event_open(struct hwt_psys *ps, struct perf_event_attr *attr, int pid, int cpu,
			  int group_fd, unsigned long flags)
{
	struct ptsim *sim = hwt_psys_ctx(ps);
	struct ptsim_event *e;
	enum ptsim_kind kind;
	int level, err = 0;

	if (attr->type == sim->pt_type)
		kind = PTSIM_PT;
	else if (attr->type == PERF_TYPE_SOFTWARE && attr->config == PERF_COUNT_SW_DUMMY)
		kind = PTSIM_DUMMY;
	else
		return hwt_psys_event_open(hwt_psys_lower(ps), attr, pid, cpu, group_fd, flags);
	/* perf_copy_attr, perf_event_open */
	if (attr->size && attr->size < PERF_ATTR_SIZE_VER0)
		return -EINVAL;
	if (pid == -1 && cpu == -1)
		return -EINVAL;
	if (cpu >= (int)sim->ncpus || cpu < -1)
		return -EINVAL;
	if (group_fd != -1 || (flags & ~(unsigned long)PERF_FLAG_FD_CLOEXEC))
		return -EINVAL;
	if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH)
		return -ESRCH;
	/* perf_allow_kernel, perf_allow_cpu */
	if (hwt_pmc_paranoid_read(hwt_psys_paranoid_path(ps), &level) < 0)
		level = 2;
	if (level > hwt_pmc_paranoid_needed(attr, pid, cpu) && !have_cap(38) &&
	    !have_cap(CAP_SYS_ADMIN))
		return -EACCES;
	pthread_mutex_lock(&sim->lock);
	if (kind == PTSIM_PT) {
		if (!pt_config_valid(attr->config)) {
			err = -EINVAL;
			goto out;
		}
		/* PERF_PMU_CAP_EXCLUSIVE: per-task and per-CPU PT events do
		 * not mix, and a task has one per CPU (exclusive_event_init,
		 * exclusive_event_installable). */
		if ((pid == -1 && sim->exclusive > 0) || (pid != -1 && sim->exclusive < 0)) {
			err = -EBUSY;
			goto out;
		}
		for (size_t i = 0; i < sim->nev; i++) {
			const struct ptsim_event *o = sim->ev[i];

			if (o->kind == PTSIM_PT && o->pid == pid &&
			    (o->cpu == cpu || o->cpu == -1 || cpu == -1)) {
				err = -EBUSY;
				goto out;
			}
		}
	}
	if (sim->nev == sim->capev) {
		size_t nc = sim->capev ? sim->capev * 2 : 16;
		struct ptsim_event **n = realloc(sim->ev, nc * sizeof(*n));

		if (!n) {
			err = -ENOMEM;
			goto out;
		}
		sim->ev = n;
		sim->capev = nc;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		err = -ENOMEM;
		goto out;
	}
	e->fd = eventfd(0, EFD_NONBLOCK | ((flags & PERF_FLAG_FD_CLOEXEC) ? EFD_CLOEXEC : 0));
	if (e->fd < 0) {
		err = -errno;
		free(e);
		goto out;
	}
	e->kind = kind;
	memcpy(&e->attr, attr,
	       attr->size && attr->size < sizeof(*attr) ? attr->size : sizeof(*attr));
	e->attr.size = sizeof(e->attr);
	e->pid = pid;
	e->cpu = cpu;
	e->id = sim->next_id++;
	e->enabled = !attr->disabled;
	e->exec_pending = attr->disabled && attr->enable_on_exec;
	if (kind == PTSIM_PT)
		sim->exclusive += pid == -1 ? -1 : 1;
	sim->ev[sim->nev++] = e;
	err = e->fd;
out:
	pthread_mutex_unlock(&sim->lock);
	return err;
}

/* perf_event_set_output: the ring buffer of target receives e's records. */
static int set_output(struct ptsim *sim, struct ptsim_event *e, int target_fd)
{
	struct ptsim_event *t;

	if (target_fd == -1) {
		if (e->mapped)
			return -EBUSY;
		buf_put(sim, e->buf);
		e->buf = NULL;
		return 0;
	}
	t = ptsim_event_find(sim, target_fd);
	if (!t)
		return -EBADF; /* not a perf event of this machine */
	if (t == e)
		return -EINVAL;
	if (t->cpu != e->cpu)
		return -EINVAL;
	if (t->cpu == -1 && t->pid != e->pid)
		return -EINVAL;
	if (e->mapped)
		return -EBUSY;
	if (!t->buf)
		return -EINVAL;
	buf_put(sim, e->buf);
	e->buf = t->buf;
	e->buf->refs++;
	return 0;
}

/* perf_event_parse_addr_filter and pt_event_addr_filters_validate. */
static int set_filter(struct ptsim_event *e, const char *s)
{
	char *copy, *tok, *save = NULL;
	unsigned ranges = 0;
	int err = 0;

	if (e->kind != PTSIM_PT)
		return -EINVAL; /* no address filters on a dummy event */
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",\n", &save); tok && !err; tok = strtok_r(NULL, ",\n", &save)) {
		char act[16], rest[PATH_MAX + 64];
		unsigned long long a, sz = 0;
		char *at, *slash, *end;

		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		if (sscanf(tok, "%15s %4159[^\n]", act, rest) != 2) {
			err = -EINVAL;
			break;
		}
		at = strchr(rest, '@');
		if (at)
			*at++ = '\0';
		slash = strchr(rest, '/');
		if (slash)
			*slash++ = '\0';
		errno = 0;
		a = strtoull(rest, &end, 0);
		if (end == rest || errno || (slash && (sz = strtoull(slash, &end, 0), *end))) {
			err = -EINVAL;
			break;
		}
		(void)a;
		if (strcmp(act, "filter") && strcmp(act, "start") && strcmp(act, "stop")) {
			err = -EINVAL;
		} else if (!strcmp(act, "filter") && !sz) {
			err = -EINVAL; /* "filter" must have a non-zero length */
		} else if (at && e->pid == -1) {
			err = -EOPNOTSUPP; /* file filters need a task */
		} else if (at) {
			struct stat st;

			if (stat(at, &st) < 0)
				err = -errno;
			else if (!S_ISREG(st.st_mode))
				err = -EINVAL;
		}
		/* pt_event_addr_filters_validate */
		if (!err && (!sz || !strcmp(act, "start") || ++ranges > 2))
			err = -EOPNOTSUPP;
	}
	free(copy);
	if (!err) {
		free(e->filter);
		e->filter = strdup(s);
		if (!e->filter)
			err = -ENOMEM;
	}
	return err;
}

static int sim_ioctl(struct hwt_psys *ps, int fd, unsigned long req, unsigned long arg)
{
	struct ptsim *sim = hwt_psys_ctx(ps);
	struct ptsim_event *e;
	int err = 0;

	pthread_mutex_lock(&sim->lock);
	e = ptsim_event_find(sim, fd);
	if (!e) {
		pthread_mutex_unlock(&sim->lock);
		return hwt_psys_ioctl(hwt_psys_lower(ps), fd, req, arg);
	}
	switch (req) {
	case PERF_EVENT_IOC_ENABLE:
		e->enabled = true;
		e->overrun = false;
		e->exec_pending = false;
		break;
	case PERF_EVENT_IOC_DISABLE:
		/* The hardware stops now: what the feeder is late with was
		 * made before, and goes in first. */
		if (sim->feed && e->kind == PTSIM_PT)
			ptsim_feed_sync(sim);
		e->enabled = false;
		e->exec_pending = false;
		break;
	case PERF_EVENT_IOC_RESET:
		break;
	case PERF_EVENT_IOC_ID:
		memcpy((void *)(uintptr_t)arg, &e->id, sizeof(e->id));
		break;
	case PERF_EVENT_IOC_SET_OUTPUT:
		err = set_output(sim, e, (int)arg);
		break;
	case PERF_EVENT_IOC_SET_FILTER:
		err = set_filter(e, (const char *)(uintptr_t)arg);
		break;
	default:
		err = -ENOTTY;
		break;
	}
	pthread_mutex_unlock(&sim->lock);
	return err;
}

static ssize_t sim_read(struct hwt_psys *ps, int fd, void *buf, size_t len)
{
	struct ptsim *sim = hwt_psys_ctx(ps);
	bool ours;

	pthread_mutex_lock(&sim->lock);
	ours = ptsim_event_find(sim, fd) != NULL;
	pthread_mutex_unlock(&sim->lock);
	if (!ours)
		return hwt_psys_read(hwt_psys_lower(ps), fd, buf, len);
	if (len < sizeof(uint64_t))
		return -ENOSPC;
	memset(buf, 0, sizeof(uint64_t)); /* a dummy or PT event counts nothing */
	return sizeof(uint64_t);
}

/* perf_mmap's accounting: pages up to perf_event_mlock_kb per CPU are the
 * user's locked_vm, the rest the process's pinned_vm, checked against
 * RLIMIT_MEMLOCK unless CAP_IPC_LOCK or perf_event_paranoid -1. */
static int charge(struct hwt_psys *ps, struct ptsim *sim, uint64_t pages, uint64_t *charged)
{
	struct hwt_coll_memlock ml;
	uint64_t limit, user_locked, extra = 0, lock_limit;

	hwt_coll_memlock_read(hwt_psys_paranoid_path(ps), NULL, sim->ncpus, &ml);
	limit = ml.mlock_kb / (sim->page / 1024) * sim->ncpus;
	user_locked = (sim->locked > limit ? limit : sim->locked) + pages;
	if (user_locked > limit)
		extra = user_locked - limit;
	lock_limit = ml.memlock == UINT64_MAX ? UINT64_MAX : ml.memlock / sim->page;
	if (sim->pinned + extra > lock_limit && !ml.unlimited)
		return -EPERM;
	sim->locked += pages - extra;
	sim->pinned += extra;
	*charged += pages;
	return 0;
}

static int add_map(struct ptsim *sim, void *addr, size_t len, struct ptsim_buf *b, bool aux)
{
	if (sim->nmaps == sim->capmaps) {
		size_t nc = sim->capmaps ? sim->capmaps * 2 : 16;
		struct ptsim_map *n = realloc(sim->maps, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		sim->maps = n;
		sim->capmaps = nc;
	}
	sim->maps[sim->nmaps++] = (struct ptsim_map){addr, len, b, aux};
	return 0;
}

static int map_data(struct hwt_psys *ps, struct ptsim *sim, struct ptsim_event *e, size_t len,
		    int prot, void **addr)
{
	struct ptsim_buf *b;
	size_t pages = len / sim->page;
	void *p;
	int err;

	/* perf_mmap: 1 + 2^n pages; no buffer for inherited per-thread
	 * events; a redirected event has none of its own. */
	if (len % sim->page || pages < 2 || (pages - 1) & (pages - 2))
		return -EINVAL;
	if (e->attr.inherit && e->cpu == -1)
		return -EINVAL;
	if (e->buf && !e->mapped)
		return -EINVAL;
	if (e->buf) {
		if (len != sim->page + e->buf->data_size)
			return -EINVAL;
		b = e->buf;
	} else {
		b = calloc(1, sizeof(*b));
		if (!b)
			return -ENOMEM;
		b->memfd = -1;
		b->page = sim->page;
		b->data_size = len - sim->page;
		b->cpu = e->cpu;
		b->wake_fd = e->fd;
		b->last_tid = -1;
		b->refs = 1;
		err = charge(ps, sim, pages, &b->charged);
		if (err == 0) {
			b->memfd = memfd_create("hwtrace-ptsim", MFD_CLOEXEC);
			err = b->memfd < 0 || ftruncate(b->memfd, (off_t)len) < 0 ? -errno : 0;
		}
		if (err == 0) {
			b->map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, b->memfd, 0);
			if (b->map == MAP_FAILED) {
				b->map = NULL;
				err = -errno;
			}
		}
		if (err < 0) {
			buf_put(sim, b);
			return err;
		}
		b->map_len = len;
		b->pg = (struct perf_event_mmap_page *)b->map;
		b->data = b->map + sim->page;
		/* perf_mmap_page: what the reader needs, the emulated clock */
		{
			uint32_t shift, mult;
			uint64_t zero;

			hwt_ptemu_time_conv(&shift, &mult, &zero);
			b->pg->version = 0;
			b->pg->compat_version = 0;
			b->pg->cap_user_time = 1;
			b->pg->cap_user_time_zero = 1;
			b->pg->time_shift = (uint16_t)shift;
			b->pg->time_mult = mult;
			b->pg->time_zero = zero;
			b->pg->data_offset = sim->page;
			b->pg->data_size = b->data_size;
		}
		e->buf = b;
		e->mapped = true;
	}
	p = mmap(NULL, len, prot, MAP_SHARED, b->memfd, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (add_map(sim, p, len, b, false) < 0) {
		munmap(p, len);
		return -ENOMEM;
	}
	b->refs++;
	*addr = p;
	return 0;
}

static int map_aux(struct hwt_psys *ps, struct ptsim *sim, struct ptsim_event *e, size_t len,
		   int prot, uint64_t offset, void **addr)
{
	struct ptsim_buf *b = e->buf;
	size_t pages = len / sim->page;
	uint64_t aoff, asize;
	void *p;
	int err;

	/* perf_mmap for the AUX area: after the data area, as the control
	 * page announces, a power of two pages, on an event with AUX. */
	if (!b || !e->mapped)
		return -EINVAL;
	aoff = __atomic_load_n(&b->pg->aux_offset, __ATOMIC_ACQUIRE);
	asize = __atomic_load_n(&b->pg->aux_size, __ATOMIC_ACQUIRE);
	if (aoff != offset || asize != len || aoff < sim->page + b->data_size || len % sim->page ||
	    !pages || (pages & (pages - 1)))
		return -EINVAL;
	if (e->kind != PTSIM_PT)
		return -EOPNOTSUPP;
	if (b->aux) {
		if (len != b->aux_size || offset != b->aux_off)
			return -EINVAL;
	} else {
		err = charge(ps, sim, pages, &b->charged);
		if (err < 0)
			return err;
		if (ftruncate(b->memfd, (off_t)(offset + len)) < 0)
			return -errno;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, b->memfd, (off_t)offset);
		if (p == MAP_FAILED)
			return -errno;
		b->aux = p;
		b->aux_off = offset;
		b->aux_size = len;
		b->overwrite = !(prot & PROT_WRITE); /* rb_alloc_aux */
		b->aux_head = 0;
		b->stream_on = false;
	}
	p = mmap(NULL, len, prot, MAP_SHARED, b->memfd, (off_t)offset);
	if (p == MAP_FAILED)
		return -errno;
	if (add_map(sim, p, len, b, true) < 0) {
		munmap(p, len);
		return -ENOMEM;
	}
	b->refs++;
	b->aux_maps++;
	*addr = p;
	return 0;
}

static int sim_mmap(struct hwt_psys *ps, int fd, size_t len, int prot, uint64_t offset, void **addr)
{
	struct ptsim *sim = hwt_psys_ctx(ps);
	struct ptsim_event *e;
	int err;

	pthread_mutex_lock(&sim->lock);
	e = ptsim_event_find(sim, fd);
	if (!e) {
		pthread_mutex_unlock(&sim->lock);
		return hwt_psys_mmap(hwt_psys_lower(ps), fd, len, prot, offset, addr);
	}
	err = offset ? map_aux(ps, sim, e, len, prot, offset, addr)
		     : map_data(ps, sim, e, len, prot, addr);
	pthread_mutex_unlock(&sim->lock);
	return err;
}

static int sim_munmap(struct hwt_psys *ps, void *addr, size_t len)
{
	struct ptsim *sim = hwt_psys_ctx(ps);

	pthread_mutex_lock(&sim->lock);
	for (size_t i = 0; i < sim->nmaps; i++) {
		struct ptsim_map m = sim->maps[i];

		if (m.addr != addr)
			continue;
		sim->maps[i] = sim->maps[--sim->nmaps];
		munmap(addr, m.len);
		if (m.aux && --m.buf->aux_maps == 0) {
			/* The AUX area goes with its last mapping. */
			munmap(m.buf->aux, m.buf->aux_size);
			m.buf->aux = NULL;
		}
		buf_put(sim, m.buf);
		pthread_mutex_unlock(&sim->lock);
		return 0;
	}
	pthread_mutex_unlock(&sim->lock);
	return hwt_psys_munmap(hwt_psys_lower(ps), addr, len);
}

static int sim_close(struct hwt_psys *ps, int fd)
{
	struct ptsim *sim = hwt_psys_ctx(ps);

	pthread_mutex_lock(&sim->lock);
	for (size_t i = 0; i < sim->nev; i++) {
		struct ptsim_event *e = sim->ev[i];

		if (e->fd != fd)
			continue;
		sim->ev[i] = sim->ev[--sim->nev];
		event_free(sim, e);
		pthread_mutex_unlock(&sim->lock);
		return 0;
	}
	pthread_mutex_unlock(&sim->lock);
	return hwt_psys_close(hwt_psys_lower(ps), fd);
}

/* ------------------------------------------------------------------------ */
/* The emulator a launched command runs under                                */

static int find_program(const char *name, char *out, size_t cap)
{
	const char *path = getenv("PATH");

	if (strchr(name, '/'))
		return snprintf(out, cap, "%s", name), access(out, X_OK) == 0 ? 0 : -ENOENT;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);

		if (len && (size_t)snprintf(out, cap, "%.*s/%s", (int)len, path, name) < cap &&
		    access(out, X_OK) == 0)
			return 0;
		path += len;
		if (*path == ':')
			path++;
	}
	return -ENOENT;
}

static int sim_exec_prefix(struct hwt_psys *ps, int pid, const char *path, const char **prefix,
			   size_t max)
{
	struct ptsim *sim = hwt_psys_ctx(ps);
	struct hwt_ptemu_terms terms;
	const struct ptsim_event *pt = NULL;
	const char *plugin;
	int err;

	(void)path;
	pthread_mutex_lock(&sim->lock);
	for (size_t i = 0; i < sim->nev && !pt; i++) {
		if (sim->ev[i]->kind == PTSIM_PT)
			pt = sim->ev[i];
	}
	if (!pt) {
		/* Nothing traces it: the command runs as it is. */
		pthread_mutex_unlock(&sim->lock);
		return hwt_psys_exec_prefix(hwt_psys_lower(ps), pid, path, prefix, max);
	}
	hwt_ptemu_terms_init(&terms);
	hwt_ptemu_terms_from_config(&terms, pt->attr.config, 1);
	pthread_mutex_unlock(&sim->lock);
	if (max < 3)
		return -ENOSPC;
	err = find_program("qemu-x86_64", sim->qemu, sizeof(sim->qemu));
	if (err < 0)
		return -ENOEXEC;
	plugin = hwt_ptemu_plugin_path();
	if (!plugin)
		return -ENOEXEC;
	snprintf(sim->plugarg, sizeof(sim->plugarg), "%s,dir=%s,cfg=%llx,tpi=1,truth=0", plugin,
		 sim->workdir, (unsigned long long)hwt_ptemu_terms_config(&terms));
	prefix[0] = sim->qemu;
	prefix[1] = "-plugin";
	prefix[2] = sim->plugarg;
	pthread_mutex_lock(&sim->lock);
	sim->child = pid;
	pthread_mutex_unlock(&sim->lock);
	err = ptsim_feed_start(sim);
	return err < 0 ? err : 3;
}

static int sim_settle(struct hwt_psys *ps)
{
	struct ptsim *sim = hwt_psys_ctx(ps);

	return sim->feed ? ptsim_feed_settle(sim) : hwt_psys_settle(hwt_psys_lower(ps));
}

static void sim_fini(void *ctx)
{
	struct ptsim *sim = ctx;

	if (!sim)
		return;
	ptsim_feed_stop(sim);
	for (size_t i = 0; i < sim->nmaps; i++) {
		munmap(sim->maps[i].addr, sim->maps[i].len);
		buf_put(sim, sim->maps[i].buf);
	}
	for (size_t i = 0; i < sim->nev; i++)
		event_free(sim, sim->ev[i]);
	free(sim->ev);
	free(sim->maps);
	if (sim->dir[0])
		remove_tree(sim->dir);
	pthread_mutex_destroy(&sim->lock);
	free(sim);
}

static const struct hwt_psys_ops sim_ops = {
    .size = sizeof(struct hwt_psys_ops),
    .name = "pt-sim",
    .event_open = sim_event_open,
    .ioctl = sim_ioctl,
    .read = sim_read,
    .mmap = sim_mmap,
    .munmap = sim_munmap,
    .close = sim_close,
    .fini = sim_fini,
    .exec_prefix = sim_exec_prefix,
    .settle = sim_settle,
};

/* dir/proc: /proc with the kernel=DIR's kcore, kallsyms and modules. */
static int make_procfs(struct ptsim *sim)
{
	static const char *const kern[] = {"kcore", "kallsyms", "modules", NULL};
	int err;

	snprintf(sim->proc, sizeof(sim->proc), "%s/proc", sim->dir);
	if (mkdir(sim->proc, 0755) < 0)
		return -errno;
	if ((err = link_all("/proc", sim->proc, kern)) < 0)
		return err;
	for (size_t i = 0; kern[i]; i++) {
		char from[PATH_MAX + 64], to[PATH_MAX + 64];

		snprintf(from, sizeof(from), "%s/%s", sim->kernel, kern[i]);
		snprintf(to, sizeof(to), "%s/%s", sim->proc, kern[i]);
		if (symlink(from, to) < 0)
			return -errno;
	}
	return 0;
}

static int parse_options(struct ptsim *sim, const char *value, char *errmsg, size_t len)
{
	char buf[256], *tok, *save = NULL;

	if (!strcmp(value, "1"))
		return 0;
	snprintf(buf, sizeof(buf), "%s", value);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;

		if (!strcmp(tok, "1"))
			continue;
		if (!strcmp(tok, "wait")) {
			sim->wait = true;
		} else if (!strncmp(tok, "slice=", 6)) {
			unsigned long n = strtoul(tok + 6, &end, 10);

			if (end == tok + 6 || *end || n > 1000000) {
				snprintf(errmsg, len,
					 "HWT_PT_SIM: slice=%s is not a number of PSB periods",
					 tok + 6);
				return -HWT_EINVAL;
			}
			sim->slice = (unsigned)n;
		} else if (!strncmp(tok, "kernel=", 7)) {
			if (!tok[7] || strlen(tok + 7) >= sizeof(sim->kernel)) {
				snprintf(
				    errmsg, len,
				    "HWT_PT_SIM: kernel= needs a folder with kcore, kallsyms and "
				    "modules");
				return -HWT_EINVAL;
			}
			snprintf(sim->kernel, sizeof(sim->kernel), "%s", tok + 7);
		} else if (!strncmp(tok, "cpus=", 5)) {
			unsigned long n = strtoul(tok + 5, &end, 10);

			if (end == tok + 5 || *end || !n || n > 256) {
				snprintf(errmsg, len,
					 "HWT_PT_SIM: cpus=%s is not a number from 1 to 256",
					 tok + 5);
				return -HWT_EINVAL;
			}
			sim->ncpus = (unsigned)n;
		} else {
			snprintf(
			    errmsg, len,
			    "HWT_PT_SIM: unknown option '%s' (give 1, or cpus=N, slice=N, wait, "
			    "kernel=DIR)",
			    tok);
			return -HWT_EINVAL;
		}
	}
	return 0;
}

static int create(struct hwt_psys **inout, const char *value, char *errmsg, size_t len)
{
	struct ptsim *sim = calloc(1, sizeof(*sim));
	const char *tmp = getenv("TMPDIR");
	long n;
	int err;

	if (!sim)
		return -ENOMEM;
	pthread_mutex_init(&sim->lock, NULL);
	sim->page = (size_t)sysconf(_SC_PAGESIZE);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	sim->ncpus = n > 0 ? (unsigned)n : 1;
	sim->next_id = 1000;
	sim->child = -1;
	err = parse_options(sim, value, errmsg, len);
	if (err < 0) {
		sim_fini(sim);
		return err;
	}
	sim->pt_type = free_type();
	snprintf(sim->dir, sizeof(sim->dir), "%s/hwtrace-ptsim-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(sim->dir)) {
		err = -errno;
		snprintf(errmsg, len, "HWT_PT_SIM: cannot create a folder in %s: %s",
			 tmp && *tmp ? tmp : "/tmp", strerror(-err));
		sim->dir[0] = '\0';
		sim_fini(sim);
		return err;
	}
	snprintf(sim->workdir, sizeof(sim->workdir), "%s/emu", sim->dir);
	err = mkdir(sim->workdir, 0700) < 0 ? -errno : make_sysfs(sim);
	if (err == 0 && sim->kernel[0])
		err = make_procfs(sim);
	if (err < 0) {
		snprintf(errmsg, len, "HWT_PT_SIM: cannot build the simulated machine in %s: %s",
			 sim->dir, strerror(-err));
		sim_fini(sim);
		return err;
	}
	/* The table holds this machine's sysfs root: one per handle, freed
	 * with it. */
	sim->ops = sim_ops;
	sim->ops.sysfs_root = sim->sysfs;
	sim->ops.procfs_root = sim->proc[0] ? sim->proc : NULL;
	err = hwt_psys_alloc(inout, &sim->ops, sim, *inout);
	if (err == 0)
		sim->self = *inout;
	return err;
}

static const struct hwt_psys_backend backend = {
    .size = sizeof(struct hwt_psys_backend),
    .env = "HWT_PT_SIM",
    .create = create,
};

const struct hwt_psys_backend *hwt_coll_ptsim_backend(void)
{
	return &backend;
}
