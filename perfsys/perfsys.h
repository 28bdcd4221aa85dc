/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * perfsys/perfsys.h - the one place where hwtrace makes perf_event_open and
 * the system calls done on its descriptors (ioctl, read, mmap, munmap,
 * poll, close), and where the sysfs and procfs roots that describe the PMUs
 * come from. This header is the whole contract of the perfsys module.
 *
 * A backend is a table of functions (struct hwt_psys_ops). The default, a
 * NULL handle, is the real kernel. Simulators are handles built around
 * their own table; each may forward what is not its own to the handle
 * below it (hwt_psys_lower()), so a simulated intel_pt PMU can sit on top
 * of a simulated core PMU, which replaces the kernel's. Descriptors a
 * simulator hands out are real descriptors (eventfd, memfd or a real
 * software event), so poll, epoll and close work on them unchanged.
 *
 * Usage (a tool):
 *
 *   struct hwt_psys *ps = NULL;      // NULL: the real kernel
 *   err = hwt_psys_open_env(&ps, backends, nbackends, msg, sizeof(msg));
 *   ... hand ps to pmc/, collector/, probe/ through their config structs
 *       (a field named psys), together with hwt_psys_sysfs_root(ps) and
 *       hwt_psys_paranoid_path(ps) where the caller gave none ...
 *   hwt_psys_free(ps);               // after everything using it is closed
 *
 * Usage (a library):
 *
 *   fd = hwt_psys_event_open(ps, &attr, pid, cpu, group_fd, flags);
 *   err = hwt_psys_ioctl(ps, fd, PERF_EVENT_IOC_ENABLE, 0);
 *   n = hwt_psys_read(ps, fd, buf, len);
 *   err = hwt_psys_mmap(ps, fd, len, prot, offset, &addr);
 *   hwt_psys_munmap(ps, addr, len);
 *   hwt_psys_close(ps, fd);
 *
 * Errors: every call returns a negative errno as the kernel (or the
 * simulated kernel) gave it; nothing is printed. A handle is used by one
 * thread at a time (as the tools here use it).
 */
#ifndef HWT_PERFSYS_PERFSYS_H
#define HWT_PERFSYS_PERFSYS_H

#include <linux/perf_event.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/hwt.h"

struct hwt_psys;

/* A backend's table. Every function gets the handle it was installed in
 * (hwt_psys_ctx() gives its state, hwt_psys_lower() the handle below).
 * A NULL entry forwards the call to the handle below. Return values are
 * those of the hwt_psys_ function of the same name. */
struct hwt_psys_ops {
	size_t size;	  /* sizeof(struct hwt_psys_ops) */
	const char *name; /* "pmu-sim:skl", "pt-sim", ... */
	int (*event_open)(struct hwt_psys *ps, struct perf_event_attr *attr, int pid, int cpu,
			  int group_fd, unsigned long flags);
	int (*ioctl)(struct hwt_psys *ps, int fd, unsigned long req, unsigned long arg);
	ssize_t (*read)(struct hwt_psys *ps, int fd, void *buf, size_t len);
	int (*mmap)(struct hwt_psys *ps, int fd, size_t len, int prot, uint64_t offset,
		    void **addr);
	int (*munmap)(struct hwt_psys *ps, void *addr, size_t len);
	int (*poll)(struct hwt_psys *ps, struct pollfd *fds, size_t n, int timeout_ms);
	int (*close)(struct hwt_psys *ps, int fd);
	/* Frees the backend's state (at hwt_psys_free; may be NULL). */
	void (*fini)(void *ctx);
	/* Roots the simulated machine shows ("<dir>" holding
	 * bus/event_source/devices/..., "<dir>" holding sys/kernel/...), or
	 * NULL for those of the handle below. Valid for the handle's life. */
	const char *sysfs_root;
	const char *procfs_root;
	/* How the machine runs a command the tool launches (see
	 * hwt_psys_exec_prefix). NULL: as it is (or as the handle below). */
	int (*exec_prefix)(struct hwt_psys *ps, int pid, const char *path, const char **prefix,
			   size_t max);
	/* Whether trace is still on its way into the buffers (see
	 * hwt_psys_settle). NULL: never (or as the handle below). */
	int (*settle)(struct hwt_psys *ps);
};

/* Wraps a backend: *out gets a handle whose calls go to ops (copied: a
 * smaller table from an older caller is accepted, the entries it lacks are
 * NULL; a larger one only when what this library does not know is zero)
 * with state ctx, forwarding to lower (NULL: the kernel). The handle owns
 * ctx (ops->fini) and lower from then on, also when this fails. Returns
 * 0, -HWT_EINVAL (bad ops size) or -ENOMEM. */
HWT_API int hwt_psys_alloc(struct hwt_psys **out, const struct hwt_psys_ops *ops, void *ctx,
			   struct hwt_psys *lower);
/* Frees the handle and those below it (NULL is fine). Descriptors and
 * mappings still open on it must be closed first. */
HWT_API void hwt_psys_free(struct hwt_psys *ps);

HWT_API void *hwt_psys_ctx(const struct hwt_psys *ps);
HWT_API struct hwt_psys *hwt_psys_lower(const struct hwt_psys *ps);
/* The name of the top backend ("kernel" for NULL). */
HWT_API const char *hwt_psys_name(const struct hwt_psys *ps);

/* A backend a tool may switch on from the environment: when the variable
 * env is set (and not empty), create() wraps *inout (the handle built so
 * far, NULL for the kernel) with the backend, given the variable's value.
 * create() returns 0, or a negative error with a one-line reason in
 * errmsg; on error *inout is left as it was. */
struct hwt_psys_backend {
	size_t size;	 /* sizeof(struct hwt_psys_backend) */
	const char *env; /* "HWT_PMU_SIM", "HWT_PT_SIM" */
	int (*create)(struct hwt_psys **inout, const char *value, char *errmsg, size_t len);
};

/* perfsys's own backends, in stacking order (the simulated PMU). */
HWT_API size_t hwt_psys_builtin_backends(const struct hwt_psys_backend *const **out);

/* Builds the handle the environment asks for: perfsys's backends first
 * (HWT_PMU_SIM=MODEL), then extra[0..nextra) in order (a module's own,
 * e.g. collector's simulated intel_pt PMU), each stacked on the one
 * before. *out is NULL (the kernel) when no variable is set. Returns 0,
 * or the failing create()'s error with errmsg filled (*out NULL). */
HWT_API int hwt_psys_open_env(struct hwt_psys **out, const struct hwt_psys_backend *const *extra,
			      size_t nextra, char *errmsg, size_t len);

/* Where the machine's sysfs and procfs are: NULL for the real ones ("/sys",
 * "/proc"), else a folder of the simulated machine. */
HWT_API const char *hwt_psys_sysfs_root(const struct hwt_psys *ps);
HWT_API const char *hwt_psys_procfs_root(const struct hwt_psys *ps);
/* perf_event_paranoid's file on the machine (NULL: the real one). The
 * string lives as long as the handle. */
HWT_API const char *hwt_psys_paranoid_path(const struct hwt_psys *ps);

/* ------------------------------------------------------------------------ */
/* The system calls. ps NULL: the kernel.                                    */

/* perf_event_open(2). Returns the descriptor or -errno (attr->size may be
 * rewritten on -E2BIG, as the kernel does). */
HWT_API int hwt_psys_event_open(struct hwt_psys *ps, struct perf_event_attr *attr, int pid, int cpu,
				int group_fd, unsigned long flags);
/* ioctl(2) on an event descriptor; arg is the integer or the pointer the
 * request takes. Returns 0 (or the ioctl's non-negative result) or -errno. */
HWT_API int hwt_psys_ioctl(struct hwt_psys *ps, int fd, unsigned long req, unsigned long arg);
/* Typed forms of the ioctls the tools use. */
HWT_API int hwt_psys_event_id(struct hwt_psys *ps, int fd, uint64_t *id);
HWT_API int hwt_psys_set_output(struct hwt_psys *ps, int fd, int target_fd);
HWT_API int hwt_psys_set_filter(struct hwt_psys *ps, int fd, const char *filter);
/* read(2): bytes read (0 for an event in error state) or -errno. */
HWT_API ssize_t hwt_psys_read(struct hwt_psys *ps, int fd, void *buf, size_t len);
/* mmap(2) of len bytes at offset, MAP_SHARED: 0 with *addr set, or -errno
 * (*addr NULL). The mapping is released with hwt_psys_munmap(). */
HWT_API int hwt_psys_mmap(struct hwt_psys *ps, int fd, size_t len, int prot, uint64_t offset,
			  void **addr);
HWT_API int hwt_psys_munmap(struct hwt_psys *ps, void *addr, size_t len);
/* poll(2): the number of ready descriptors or -errno (EINTR included). */
HWT_API int hwt_psys_poll(struct hwt_psys *ps, struct pollfd *fds, size_t n, int timeout_ms);
/* close(2) of an event descriptor: 0 or -errno. */
HWT_API int hwt_psys_close(struct hwt_psys *ps, int fd);

/* ------------------------------------------------------------------------ */
/* What a simulated machine adds (the kernel: nothing).                      */

/* The words to run before the command at path (the program the tool
 * launched as pid, held before its exec): a machine that traces by
 * emulation runs the command under its emulator. Called when the command
 * is released, after its events were opened. Writes at most max words
 * (valid until the handle is freed; the first is the program to exec,
 * path and the command's arguments follow them) and returns how many: 0
 * (the kernel) runs the command as it is; or -errno. */
HWT_API int hwt_psys_exec_prefix(struct hwt_psys *ps, int pid, const char *path,
				 const char **prefix, size_t max);

/* For a machine whose trace reaches the buffers after the work that made
 * it (an emulator writes it, a simulated PMU copies it): moves what is
 * ready into the buffers now and returns 1 while some could not be moved
 * (a buffer is full: read it, then call again), 0 when everything the
 * ended work made is in the buffers. The kernel writes trace as it is made:
 * always 0. A tool calls it after its target ended, before it disables the
 * events. Returns 0, 1 or -errno. */
HWT_API int hwt_psys_settle(struct hwt_psys *ps);

#endif /* HWT_PERFSYS_PERFSYS_H */
