/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/perfsys/test_perfsys.c - the system-call layer: the kernel path
 * (a NULL handle) counts a software event of this thread; a backend stacked
 * on it sees the calls it implements and forwards the rest; the
 * environment picks backends in order; roots come from the top backend
 * that has them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "perfsys/perfsys.h"

static void sw_attr(struct perf_event_attr *a, uint64_t config)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = config;
	a->disabled = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
}

static void touch_pages(int n)
{
	long psz = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, (size_t)(n * psz), PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	madvise((void *)p, (size_t)(n * psz), MADV_NOHUGEPAGE);
	for (int i = 0; i < n; i++)
		p[i * psz] = 1;
	munmap((void *)p, (size_t)(n * psz));
}

static void test_kernel_counts(void **state)
{
	struct perf_event_attr a;
	uint64_t v = 0, id = 0;
	void *map;
	int fd;

	(void)state;
	sw_attr(&a, PERF_COUNT_SW_PAGE_FAULTS);
	fd = hwt_psys_event_open(NULL, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(hwt_psys_ioctl(NULL, fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	touch_pages(64);
	assert_int_equal(hwt_psys_ioctl(NULL, fd, PERF_EVENT_IOC_DISABLE, 0), 0);
	assert_int_equal(hwt_psys_read(NULL, fd, &v, sizeof(v)), (ssize_t)sizeof(v));
	assert_true(v >= 64);
	assert_int_equal(hwt_psys_event_id(NULL, fd, &id), 0);
	assert_true(id != 0);
	/* One metadata page plus one data page: a ring buffer maps. */
	assert_int_equal(hwt_psys_mmap(NULL, fd, 2 * (size_t)sysconf(_SC_PAGESIZE),
				       PROT_READ | PROT_WRITE, 0, &map),
			 0);
	assert_non_null(map);
	assert_int_equal(hwt_psys_munmap(NULL, map, 2 * (size_t)sysconf(_SC_PAGESIZE)), 0);
	assert_int_equal(hwt_psys_close(NULL, fd), 0);
	/* Errors come back as -errno. */
	assert_int_equal(hwt_psys_read(NULL, fd, &v, sizeof(v)), -EBADF);
	a.type = 0x7fffffff;
	assert_true(hwt_psys_event_open(NULL, &a, 0, -1, -1, 0) < 0);
	assert_int_equal(hwt_psys_mmap(NULL, -1, 4096, PROT_READ, 0, &map), -EBADF);
	assert_null(map);
}

/* A backend that answers event_open and read itself (every read is 42)
 * and leaves the rest to the kernel below. */
struct fake {
	int opens, reads, finis;
	int *finis_out;
};

static int fake_open(struct hwt_psys *ps, struct perf_event_attr *attr, int pid, int cpu,
		     int group_fd, unsigned long flags)
{
	struct fake *f = hwt_psys_ctx(ps);

	f->opens++;
	return hwt_psys_event_open(hwt_psys_lower(ps), attr, pid, cpu, group_fd, flags);
}

static ssize_t fake_read(struct hwt_psys *ps, int fd, void *buf, size_t len)
{
	struct fake *f = hwt_psys_ctx(ps);
	uint64_t v = 42;

	(void)fd;
	f->reads++;
	if (len < sizeof(v))
		return -ENOSPC;
	memcpy(buf, &v, sizeof(v));
	return sizeof(v);
}

static void fake_fini(void *ctx)
{
	struct fake *f = ctx;

	if (!f)
		return;
	(*f->finis_out)++;
	free(f);
}

static const struct hwt_psys_ops fake_ops = {
    .size = sizeof(struct hwt_psys_ops),
    .name = "fake",
    .event_open = fake_open,
    .read = fake_read,
    .fini = fake_fini,
    .sysfs_root = "/fake/sys",
    .procfs_root = "/fake/proc",
};

static int fake_prefix(struct hwt_psys *ps, int pid, const char *path, const char **prefix,
		       size_t max)
{
	(void)ps;
	(void)path;
	if (max < 2)
		return -ENOSPC;
	prefix[0] = "/usr/bin/env";
	prefix[1] = pid == 7 ? "A=7" : "A=0";
	return 2;
}

static int fake_settle(struct hwt_psys *ps)
{
	struct fake *f = hwt_psys_ctx(ps);

	return f->reads < 2; /* in flight until read twice */
}

static const struct hwt_psys_ops top_ops = {
    .size = sizeof(struct hwt_psys_ops),
    .name = "top",
};

static void test_stacked_backend(void **state)
{
	struct hwt_psys *ps, *top;
	struct perf_event_attr a;
	struct fake *f = calloc(1, sizeof(*f));
	int finis = 0, fd;
	uint64_t v = 0;

	(void)state;
	assert_non_null(f);
	f->finis_out = &finis;
	assert_int_equal(hwt_psys_alloc(&ps, &fake_ops, f, NULL), 0);
	assert_string_equal(hwt_psys_name(ps), "fake");
	assert_string_equal(hwt_psys_name(NULL), "kernel");
	/* A table with no functions forwards everything, roots included. */
	assert_int_equal(hwt_psys_alloc(&top, &top_ops, NULL, ps), 0);
	assert_ptr_equal(hwt_psys_lower(top), ps);
	assert_string_equal(hwt_psys_sysfs_root(top), "/fake/sys");
	assert_string_equal(hwt_psys_paranoid_path(top),
			    "/fake/proc/sys/kernel/perf_event_paranoid");
	assert_null(hwt_psys_sysfs_root(NULL));
	assert_null(hwt_psys_paranoid_path(NULL));

	sw_attr(&a, PERF_COUNT_SW_TASK_CLOCK);
	fd = hwt_psys_event_open(top, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(f->opens, 1);
	assert_int_equal(hwt_psys_read(top, fd, &v, sizeof(v)), (ssize_t)sizeof(v));
	assert_int_equal(v, 42);
	assert_int_equal(f->reads, 1);
	/* ioctl and close have no entry: the kernel does them. */
	assert_int_equal(hwt_psys_ioctl(top, fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	assert_int_equal(hwt_psys_close(top, fd), 0);
	assert_int_equal(hwt_psys_close(top, fd), -EBADF);
	hwt_psys_free(top);
	assert_int_equal(finis, 1);
}

static const struct hwt_psys_ops sim_ops = {
    .size = sizeof(struct hwt_psys_ops),
    .name = "sim",
    .read = fake_read,
    .fini = fake_fini,
    .exec_prefix = fake_prefix,
    .settle = fake_settle,
};

/* What a simulated machine adds: how it runs a command, and whether its
 * trace is still on its way. The kernel: as it is, never. */
static void test_machine(void **state)
{
	struct hwt_psys *ps, *top;
	struct fake *f = calloc(1, sizeof(*f));
	const char *prefix[4] = {NULL};
	int finis = 0;
	uint64_t v;

	(void)state;
	assert_int_equal(hwt_psys_exec_prefix(NULL, 7, "/bin/true", prefix, 4), 0);
	assert_int_equal(hwt_psys_settle(NULL), 0);
	assert_non_null(f);
	f->finis_out = &finis;
	assert_int_equal(hwt_psys_alloc(&ps, &sim_ops, f, NULL), 0);
	assert_int_equal(hwt_psys_alloc(&top, &top_ops, NULL, ps), 0);
	assert_int_equal(hwt_psys_exec_prefix(top, 7, "/bin/true", prefix, 4), 2);
	assert_string_equal(prefix[0], "/usr/bin/env");
	assert_string_equal(prefix[1], "A=7");
	assert_int_equal(hwt_psys_exec_prefix(top, 7, "/bin/true", prefix, 1), -ENOSPC);
	assert_int_equal(hwt_psys_settle(top), 1);
	assert_int_equal(hwt_psys_read(top, 3, &v, sizeof(v)), (ssize_t)sizeof(v));
	assert_int_equal(hwt_psys_read(top, 3, &v, sizeof(v)), (ssize_t)sizeof(v));
	assert_int_equal(hwt_psys_settle(top), 0);
	hwt_psys_free(top);
	assert_int_equal(finis, 1);
}

/* libbpf's rule for the sized table: an older caller's shorter table is
 * accepted (what it lacks is NULL: forwarded below), a newer caller's
 * longer one only when what this library does not know is zero. */
static void count_fini(void *ctx)
{
	(*(int *)ctx)++;
}

static void test_bad_ops(void **state)
{
	struct {
		struct hwt_psys_ops ops;
		void *newer; /* an entry of a newer hwtrace */
	} big = {{.size = sizeof(big), .name = "big"}, NULL};
	struct hwt_psys_ops tiny = {.size = 4}, old = {.name = "old", .sysfs_root = "/old/sys"};
	struct hwt_psys *ps = (struct hwt_psys *)1;
	int finis = 0;

	(void)state;
	assert_int_equal(hwt_psys_alloc(&ps, &tiny, NULL, NULL), -HWT_EINVAL);
	assert_null(ps);
	/* An older table ending at name: sysfs_root, beyond it, is not read. */
	old.size = offsetof(struct hwt_psys_ops, name) + sizeof(old.name);
	assert_int_equal(hwt_psys_alloc(&ps, &old, NULL, NULL), 0);
	assert_string_equal(hwt_psys_name(ps), "old");
	assert_null(hwt_psys_sysfs_root(ps));
	hwt_psys_free(ps);
	assert_int_equal(hwt_psys_alloc(&ps, &big.ops, NULL, NULL), 0);
	assert_string_equal(hwt_psys_name(ps), "big");
	hwt_psys_free(ps);
	/* Refused, the handle still owns ctx: fini runs, but only from a
	 * table long enough to have it. */
	big.newer = &big;
	big.ops.fini = count_fini;
	assert_int_equal(hwt_psys_alloc(&ps, &big.ops, &finis, NULL), -HWT_EINVAL);
	assert_null(ps);
	assert_int_equal(finis, 1);
	tiny.fini = count_fini;
	assert_int_equal(hwt_psys_alloc(&ps, &tiny, &finis, NULL), -HWT_EINVAL);
	assert_int_equal(finis, 1);
	hwt_psys_free(NULL);
}

/* Backends from the environment: each whose variable is set wraps the
 * handle built so far, in table order; a failing one fails the whole. */
static int env_a(struct hwt_psys **inout, const char *value, char *errmsg, size_t len)
{
	(void)errmsg;
	(void)len;
	assert_string_equal(value, "one");
	return hwt_psys_alloc(inout, &fake_ops, NULL, *inout) < 0 ? -ENOMEM : 0;
}

static int env_b(struct hwt_psys **inout, const char *value, char *errmsg, size_t len)
{
	if (strcmp(value, "1") != 0) {
		snprintf(errmsg, len, "bad value '%s'", value);
		return -HWT_EINVAL;
	}
	return hwt_psys_alloc(inout, &top_ops, NULL, *inout);
}

static void test_open_env(void **state)
{
	static const struct hwt_psys_backend a = {sizeof(a), "HWT_TEST_PSYS_A", env_a};
	static const struct hwt_psys_backend b = {sizeof(b), "HWT_TEST_PSYS_B", env_b};
	const struct hwt_psys_backend *const both[] = {&a, &b};
	struct hwt_psys *ps;
	char msg[128];

	(void)state;
	unsetenv("HWT_TEST_PSYS_A");
	unsetenv("HWT_TEST_PSYS_B");
	assert_int_equal(hwt_psys_open_env(&ps, both, 2, msg, sizeof(msg)), 0);
	assert_null(ps);
	setenv("HWT_TEST_PSYS_B", "1", 1);
	assert_int_equal(hwt_psys_open_env(&ps, both, 2, msg, sizeof(msg)), 0);
	assert_string_equal(hwt_psys_name(ps), "top");
	assert_null(hwt_psys_lower(ps));
	hwt_psys_free(ps);
	setenv("HWT_TEST_PSYS_A", "one", 1);
	assert_int_equal(hwt_psys_open_env(&ps, both, 2, msg, sizeof(msg)), 0);
	assert_string_equal(hwt_psys_name(ps), "top");
	assert_string_equal(hwt_psys_name(hwt_psys_lower(ps)), "fake");
	hwt_psys_free(ps);
	setenv("HWT_TEST_PSYS_B", "2", 1);
	assert_int_equal(hwt_psys_open_env(&ps, both, 2, msg, sizeof(msg)), -HWT_EINVAL);
	assert_null(ps);
	assert_string_equal(msg, "bad value '2'");
	unsetenv("HWT_TEST_PSYS_A");
	unsetenv("HWT_TEST_PSYS_B");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kernel_counts), cmocka_unit_test(test_stacked_backend),
	    cmocka_unit_test(test_machine),	  cmocka_unit_test(test_bad_ops),
	    cmocka_unit_test(test_open_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
