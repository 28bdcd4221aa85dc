/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * perfsys/perfsys.c - handles and the dispatch of the perf system calls:
 * each call goes to the top backend's function, or down the chain to the
 * first backend that has one, or to the kernel at the bottom.
 */
#include "perfsys/perfsys.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct hwt_psys {
	struct hwt_psys_ops ops; /* a copy: an older caller's table is shorter */
	void *ctx;
	struct hwt_psys *lower;
	char paranoid[PATH_MAX];
};

int hwt_psys_alloc(struct hwt_psys **out, const struct hwt_psys_ops *ops, void *ctx,
		   struct hwt_psys *lower)
{
	struct hwt_psys_ops o = {0};
	struct hwt_psys *ps;

	*out = NULL;
	if (!ops || hwt_opts_copy(&o, sizeof(o), ops) < 0) {
		/* fini only where the caller's table has it */
		if (ops && ops->size >= offsetof(struct hwt_psys_ops, fini) + sizeof(ops->fini) &&
		    ops->fini)
			ops->fini(ctx);
		hwt_psys_free(lower);
		return -HWT_EINVAL;
	}
	ps = calloc(1, sizeof(*ps));
	if (!ps) {
		if (o.fini)
			o.fini(ctx);
		hwt_psys_free(lower);
		return -ENOMEM;
	}
	ps->ops = o;
	ps->ctx = ctx;
	ps->lower = lower;
	if (hwt_psys_procfs_root(ps))
		snprintf(ps->paranoid, sizeof(ps->paranoid), "%s/sys/kernel/perf_event_paranoid",
			 hwt_psys_procfs_root(ps));
	*out = ps;
	return 0;
}

void hwt_psys_free(struct hwt_psys *ps)
{
	while (ps) {
		struct hwt_psys *lower = ps->lower;

		if (ps->ops.fini)
			ps->ops.fini(ps->ctx);
		free(ps);
		ps = lower;
	}
}

void *hwt_psys_ctx(const struct hwt_psys *ps)
{
	return ps ? ps->ctx : NULL;
}

struct hwt_psys *hwt_psys_lower(const struct hwt_psys *ps)
{
	return ps ? ps->lower : NULL;
}

const char *hwt_psys_name(const struct hwt_psys *ps)
{
	return ps && ps->ops.name ? ps->ops.name : "kernel";
}

const char *hwt_psys_sysfs_root(const struct hwt_psys *ps)
{
	for (; ps; ps = ps->lower) {
		if (ps->ops.sysfs_root)
			return ps->ops.sysfs_root;
	}
	return NULL;
}

const char *hwt_psys_procfs_root(const struct hwt_psys *ps)
{
	for (; ps; ps = ps->lower) {
		if (ps->ops.procfs_root)
			return ps->ops.procfs_root;
	}
	return NULL;
}

const char *hwt_psys_paranoid_path(const struct hwt_psys *ps)
{
	return ps && ps->paranoid[0] ? ps->paranoid : NULL;
}

extern const struct hwt_psys_backend hwt_psys_pmu_sim; /* sim.c */

size_t hwt_psys_builtin_backends(const struct hwt_psys_backend *const **out)
{
	static const struct hwt_psys_backend *const own[] = {&hwt_psys_pmu_sim};

	*out = own;
	return sizeof(own) / sizeof(own[0]);
}

static int stack_backend(struct hwt_psys **ps, const struct hwt_psys_backend *b, char *errmsg,
			 size_t len)
{
	struct hwt_psys_backend c = {0};
	const char *v;

	if (!b || hwt_opts_copy(&c, sizeof(c), b) < 0)
		return -HWT_EINVAL;
	b = &c;
	if (!b->env || !b->create)
		return -HWT_EINVAL;
	v = getenv(b->env);
	if (!v || !*v)
		return 0;
	return b->create(ps, v, errmsg, len);
}

int hwt_psys_open_env(struct hwt_psys **out, const struct hwt_psys_backend *const *extra,
		      size_t nextra, char *errmsg, size_t len)
{
	const struct hwt_psys_backend *const *own;
	size_t nown = hwt_psys_builtin_backends(&own);
	struct hwt_psys *ps = NULL;
	int err = 0;

	*out = NULL;
	if (errmsg && len)
		errmsg[0] = '\0';
	for (size_t i = 0; i < nown && err >= 0; i++)
		err = stack_backend(&ps, own[i], errmsg, len);
	for (size_t i = 0; i < nextra && err >= 0; i++)
		err = stack_backend(&ps, extra[i], errmsg, len);
	if (err < 0) {
		hwt_psys_free(ps);
		return err;
	}
	*out = ps;
	return 0;
}

/* Moves ps down to the first handle whose table has fn (NULL: the kernel). */
#define FIND(ps, fn)                                                                               \
	do {                                                                                       \
		while ((ps) && !(ps)->ops.fn)                                                      \
			(ps) = (ps)->lower;                                                        \
	} while (0)

int hwt_psys_event_open(struct hwt_psys *ps, struct perf_event_attr *attr, int pid, int cpu,
			int group_fd, unsigned long flags)
{
	int fd;

	FIND(ps, event_open);
	if (ps)
		return ps->ops.event_open(ps, attr, pid, cpu, group_fd, flags);
	fd = (int)syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
	return fd >= 0 ? fd : -errno;
}

int hwt_psys_ioctl(struct hwt_psys *ps, int fd, unsigned long req, unsigned long arg)
{
	int r;

	FIND(ps, ioctl);
	if (ps)
		return ps->ops.ioctl(ps, fd, req, arg);
	r = ioctl(fd, req, arg);
	return r >= 0 ? r : -errno;
}

int hwt_psys_event_id(struct hwt_psys *ps, int fd, uint64_t *id)
{
	return hwt_psys_ioctl(ps, fd, PERF_EVENT_IOC_ID, (unsigned long)(uintptr_t)id);
}

int hwt_psys_set_output(struct hwt_psys *ps, int fd, int target_fd)
{
	return hwt_psys_ioctl(ps, fd, PERF_EVENT_IOC_SET_OUTPUT, (unsigned long)target_fd);
}

int hwt_psys_set_filter(struct hwt_psys *ps, int fd, const char *filter)
{
	return hwt_psys_ioctl(ps, fd, PERF_EVENT_IOC_SET_FILTER, (unsigned long)(uintptr_t)filter);
}

ssize_t hwt_psys_read(struct hwt_psys *ps, int fd, void *buf, size_t len)
{
	ssize_t n;

	FIND(ps, read);
	if (ps)
		return ps->ops.read(ps, fd, buf, len);
	n = read(fd, buf, len);
	return n >= 0 ? n : -errno;
}

int hwt_psys_mmap(struct hwt_psys *ps, int fd, size_t len, int prot, uint64_t offset, void **addr)
{
	void *p;

	*addr = NULL;
	FIND(ps, mmap);
	if (ps)
		return ps->ops.mmap(ps, fd, len, prot, offset, addr);
	if (offset > (uint64_t)INT64_MAX)
		return -EINVAL;
	p = mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)offset);
	if (p == MAP_FAILED)
		return -errno;
	*addr = p;
	return 0;
}

int hwt_psys_munmap(struct hwt_psys *ps, void *addr, size_t len)
{
	FIND(ps, munmap);
	if (ps)
		return ps->ops.munmap(ps, addr, len);
	return munmap(addr, len) == 0 ? 0 : -errno;
}

int hwt_psys_poll(struct hwt_psys *ps, struct pollfd *fds, size_t n, int timeout_ms)
{
	int r;

	FIND(ps, poll);
	if (ps)
		return ps->ops.poll(ps, fds, n, timeout_ms);
	r = poll(fds, (nfds_t)n, timeout_ms);
	return r >= 0 ? r : -errno;
}

int hwt_psys_close(struct hwt_psys *ps, int fd)
{
	FIND(ps, close);
	if (ps)
		return ps->ops.close(ps, fd);
	return close(fd) == 0 ? 0 : -errno;
}

int hwt_psys_exec_prefix(struct hwt_psys *ps, int pid, const char *path, const char **prefix,
			 size_t max)
{
	FIND(ps, exec_prefix);
	if (ps)
		return ps->ops.exec_prefix(ps, pid, path, prefix, max);
	return 0;
}

int hwt_psys_settle(struct hwt_psys *ps)
{
	FIND(ps, settle);
	if (ps)
		return ps->ops.settle(ps);
	return 0;
}
