/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_ptsim.c - Intel PT recording against the simulated
 * intel_pt PMU (HWT_PT_SIM, collector/ptsim*.c), which follows the kernel's
 * rules and is fed with genuine packets by the PT emulator.
 *
 * First the kernel's rules, through perfsys as the recorder calls them:
 * attribute validation, PT's exclusivity, inherit limits, SET_OUTPUT,
 * address filters, the AUX mapping, the locked-memory accounting. Then the
 * findings of issue 14, each a recording of a program with known counts:
 * threads and children traced (per-CPU, inherit, switch records), -a tied
 * to processes, filters refused as the kernel would, sizes that fit an
 * unprivileged user's limits, overruns reported and the trace going on,
 * snapshot mode keeping the sideband, the kernel traced only when its code
 * can be read.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/collector.h"
#include "perfsys/perfsys.h"
#include "tests/lib/testutil.h"

/* The config perf writes for intel_pt// on Skylake: pt, branch, tsc, mtc,
 * mtc_period=3, psb_period=3. */
#define PT_DEFAULT 0x300e601ull

static struct hwt_psys *sim_open(const char *value)
{
	const struct hwt_psys_backend *extra[] = {hwt_coll_ptsim_backend()};
	struct hwt_psys *ps = NULL;
	char msg[256];

	setenv("HWT_PT_SIM", value, 1);
	assert_int_equal(hwt_psys_open_env(&ps, extra, 1, msg, sizeof(msg)), 0);
	unsetenv("HWT_PT_SIM");
	assert_non_null(ps);
	assert_string_equal(hwt_psys_name(ps), "pt-sim");
	return ps;
}

static uint32_t pt_type(struct hwt_psys *ps)
{
	char path[4096];
	unsigned t = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/bus/event_source/devices/intel_pt/type",
		 hwt_psys_sysfs_root(ps));
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%u", &t), 1);
	fclose(f);
	return t;
}

static void pt_attr(struct hwt_psys *ps, struct perf_event_attr *a, uint64_t config)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = pt_type(ps);
	a->config = config;
	a->exclude_kernel = 1;
	a->disabled = 1;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	a->sample_id_all = 1;
}

static void dummy_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	a->exclude_kernel = 1;
	a->sample_period = 1;
}

/* pt_event_valid() and the CPU's caps; PERF_PMU_CAP_EXCLUSIVE. */
static void test_rules_open(void **state)
{
	struct hwt_psys *ps = sim_open("cpus=2");
	struct perf_event_attr a;
	int fd, fd2, self = getpid();

	(void)state;
	pt_attr(ps, &a, PT_DEFAULT | (1ull << 19)); /* cyc_thresh=1: caps allow 0 only */
	assert_int_equal(hwt_psys_event_open(ps, &a, self, 0, -1, 0), -EINVAL);
	pt_attr(ps, &a, (PT_DEFAULT & ~1ull)); /* BRANCH_EN without the pass-through bit */
	assert_int_equal(hwt_psys_event_open(ps, &a, self, 0, -1, 0), -EINVAL);
	pt_attr(ps, &a, (PT_DEFAULT & ~(0xfull << 14)) | (4ull << 14)); /* mtc_period=4 */
	assert_int_equal(hwt_psys_event_open(ps, &a, self, 0, -1, 0), -EINVAL);
	pt_attr(ps, &a, PT_DEFAULT);
	assert_int_equal(hwt_psys_event_open(ps, &a, self, 2, -1, 0), -EINVAL); /* no CPU 2 */
	assert_int_equal(hwt_psys_event_open(ps, &a, -1, -1, -1, 0), -EINVAL);
	fd = hwt_psys_event_open(ps, &a, self, 0, -1, 0);
	assert_true(fd >= 0);
	/* one PT event per task and CPU; per-task and per-CPU do not mix */
	assert_int_equal(hwt_psys_event_open(ps, &a, self, 0, -1, 0), -EBUSY);
	assert_int_equal(hwt_psys_event_open(ps, &a, self, -1, -1, 0), -EBUSY);
	if (geteuid() == 0)
		assert_int_equal(hwt_psys_event_open(ps, &a, -1, 1, -1, 0), -EBUSY);
	fd2 = hwt_psys_event_open(ps, &a, self, 1, -1, 0);
	assert_true(fd2 >= 0);
	assert_int_equal(hwt_psys_close(ps, fd), 0);
	assert_int_equal(hwt_psys_close(ps, fd2), 0);
	if (geteuid() == 0) {
		fd = hwt_psys_event_open(ps, &a, -1, 1, -1, 0);
		assert_true(fd >= 0);
		assert_int_equal(hwt_psys_event_open(ps, &a, self, 0, -1, 0), -EBUSY);
		assert_int_equal(hwt_psys_close(ps, fd), 0);
	}
	/* other events go to the machine below (the kernel here) */
	dummy_attr(&a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	fd = hwt_psys_event_open(ps, &a, 0, -1, -1, 0);
	assert_true(fd >= 0);
	assert_int_equal(hwt_psys_close(ps, fd), 0);
	hwt_psys_free(ps);
}

/* perf_mmap's rules for the data and AUX areas, SET_OUTPUT's. */
static void test_rules_mmap(void **state)
{
	struct hwt_psys *ps = sim_open("cpus=2");
	struct perf_event_attr a;
	struct perf_event_mmap_page *pg;
	long page = sysconf(_SC_PAGESIZE);
	void *data, *aux, *p;
	int fd, fd1, fdd, self = getpid();

	(void)state;
	pt_attr(ps, &a, PT_DEFAULT);
	a.inherit = 1;
	fd = hwt_psys_event_open(ps, &a, self, -1, -1, 0);
	assert_true(fd >= 0);
	/* no buffer for an inherited per-thread event */
	assert_int_equal(hwt_psys_mmap(ps, fd, (size_t)page * 9, PROT_READ | PROT_WRITE, 0, &p),
			 -EINVAL);
	hwt_psys_close(ps, fd);
	fd = hwt_psys_event_open(ps, &a, self, 0, -1, 0);
	assert_true(fd >= 0);
	assert_int_equal(hwt_psys_mmap(ps, fd, (size_t)page * 10, PROT_READ | PROT_WRITE, 0, &p),
			 -EINVAL); /* not 1 + 2^n pages */
	/* the AUX area before the data area is refused */
	assert_int_equal(
	    hwt_psys_mmap(ps, fd, (size_t)page * 8, PROT_READ | PROT_WRITE, (uint64_t)page * 9, &p),
	    -EINVAL);
	assert_int_equal(hwt_psys_mmap(ps, fd, (size_t)page * 9, PROT_READ | PROT_WRITE, 0, &data),
			 0);
	pg = data;
	assert_int_equal(pg->data_offset, (uint64_t)page);
	assert_int_equal(pg->data_size, (uint64_t)page * 8);
	assert_true(pg->cap_user_time_zero);
	/* AUX: where the control page says, a power of two pages */
	pg->aux_offset = (uint64_t)page * 9;
	pg->aux_size = (uint64_t)page * 3;
	assert_int_equal(hwt_psys_mmap(ps, fd, (size_t)page * 3, PROT_READ, (uint64_t)page * 9, &p),
			 -EINVAL);
	pg->aux_size = (uint64_t)page * 4;
	assert_int_equal(
	    hwt_psys_mmap(ps, fd, (size_t)page * 4, PROT_READ, (uint64_t)page * 10, &p), -EINVAL);
	assert_int_equal(
	    hwt_psys_mmap(ps, fd, (size_t)page * 4, PROT_READ, (uint64_t)page * 9, &aux), 0);
	/* SET_OUTPUT: same CPU only, not into itself, not once mapped */
	fd1 = hwt_psys_event_open(ps, &a, self + 0, 1, -1, 0);
	assert_true(fd1 >= 0);
	assert_int_equal(hwt_psys_set_output(ps, fd1, fd), -EINVAL);
	dummy_attr(&a);
	fdd = hwt_psys_event_open(ps, &a, self, 0, -1, 0);
	assert_true(fdd >= 0);
	assert_int_equal(hwt_psys_set_output(ps, fdd, fdd), -EINVAL);
	assert_int_equal(hwt_psys_set_output(ps, fdd, fd), 0);
	assert_int_equal(hwt_psys_set_output(ps, fd, fdd), -EBUSY);
	hwt_psys_close(ps, fdd);
	/* no AUX area on a dummy event */
	fdd = hwt_psys_event_open(ps, &a, self, 1, -1, 0);
	assert_int_equal(hwt_psys_mmap(ps, fdd, (size_t)page * 9, PROT_READ | PROT_WRITE, 0, &p),
			 0);
	pg = p;
	pg->aux_offset = (uint64_t)page * 9;
	pg->aux_size = (uint64_t)page * 4;
	assert_int_equal(
	    hwt_psys_mmap(ps, fdd, (size_t)page * 4, PROT_READ, (uint64_t)page * 9, &aux),
	    -EOPNOTSUPP);
	assert_int_equal(hwt_psys_munmap(ps, p, (size_t)page * 9), 0);
	hwt_psys_close(ps, fdd);
	hwt_psys_close(ps, fd1);
	assert_int_equal(hwt_psys_munmap(ps, data, (size_t)page * 9), 0);
	hwt_psys_close(ps, fd);
	hwt_psys_free(ps); /* the AUX mapping still open is the simulator's to drop */
}

/* perf_event_parse_addr_filter + pt_event_addr_filters_validate. */
static void test_rules_filter(void **state)
{
	struct hwt_psys *ps = sim_open("cpus=1");
	struct perf_event_attr a;
	int fd, fdd, self = getpid();

	(void)state;
	pt_attr(ps, &a, PT_DEFAULT);
	fd = hwt_psys_event_open(ps, &a, self, 0, -1, 0);
	assert_true(fd >= 0);
	assert_int_equal(hwt_psys_set_filter(ps, fd, "start 0x1000@/bin/true"), -EOPNOTSUPP);
	assert_int_equal(hwt_psys_set_filter(ps, fd, "stop 0x1000@/bin/true"), -EOPNOTSUPP);
	assert_int_equal(hwt_psys_set_filter(ps, fd, "filter 0x1000@/bin/true"), -EINVAL);
	assert_int_equal(hwt_psys_set_filter(ps, fd, "filter 0x1000/0x10@/dev"), -EINVAL);
	assert_int_equal(hwt_psys_set_filter(ps, fd, "filter 0x1000/0x10@/no/such/file"), -ENOENT);
	assert_int_equal(hwt_psys_set_filter(ps, fd,
					     "filter 0x1000/0x10@/bin/true,filter "
					     "0x2000/0x10@/bin/true,stop 0x3000/0x8@/bin/true"),
			 -EOPNOTSUPP); /* caps/num_address_ranges is 2 */
	assert_int_equal(
	    hwt_psys_set_filter(ps, fd, "filter 0x1000/0x10@/bin/true,stop 0x3000/0x8@/bin/true"),
	    0);
	dummy_attr(&a);
	fdd = hwt_psys_event_open(ps, &a, self, 0, -1, 0);
	assert_int_equal(hwt_psys_set_filter(ps, fdd, "filter 0x1000/0x10@/bin/true"), -EINVAL);
	hwt_psys_close(ps, fdd);
	hwt_psys_close(ps, fd);
	if (geteuid() == 0) {
		pt_attr(ps, &a, PT_DEFAULT);
		fd = hwt_psys_event_open(ps, &a, -1, 0, -1, 0);
		assert_true(fd >= 0);
		assert_int_equal(hwt_psys_set_filter(ps, fd, "filter 0x1000/0x10@/bin/true"),
				 -EOPNOTSUPP); /* file filters need a task */
		assert_int_equal(hwt_psys_set_filter(ps, fd, "filter 0xffffffff81000000/0x1000"),
				 0);
		hwt_psys_close(ps, fd);
	}
	hwt_psys_free(ps);
}

/* perf_mmap's locked-memory accounting, for a caller without
 * CAP_IPC_LOCK: perf_event_mlock_kb per CPU, then RLIMIT_MEMLOCK. Run in a
 * child that drops its capabilities. */
static int mlock_child(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	struct rlimit rl = {0, 0};
	struct hwt_psys *ps;
	struct perf_event_attr a;
	int ret;
	struct perf_event_mmap_page *pg;
	long page = sysconf(_SC_PAGESIZE);
	unsigned long long kb = 0;
	void *data, *aux;
	FILE *f;
	int fd;

	memset(caps, 0, sizeof(caps));
	if (syscall(SYS_capset, &hdr, caps) < 0 || setrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		return 10;
	f = fopen("/proc/sys/kernel/perf_event_mlock_kb", "r");
	if (!f || fscanf(f, "%llu", &kb) != 1 || kb != 516)
		return 77; /* the numbers below are for the default */
	fclose(f);
	ps = sim_open("cpus=1");
	pt_attr(ps, &a, PT_DEFAULT);
	fd = hwt_psys_event_open(ps, &a, getpid(), 0, -1, 0);
	ret = fd < 0 ? 11 : 0;
	/* 1 MiB of data: 257 pages, 129 allowed */
	if (!ret &&
	    hwt_psys_mmap(ps, fd, (size_t)page * 257, PROT_READ | PROT_WRITE, 0, &data) != -EPERM)
		ret = 12;
	if (!ret && hwt_psys_mmap(ps, fd, (size_t)page * 65, PROT_READ | PROT_WRITE, 0, &data) != 0)
		ret = 13;
	if (!ret) {
		pg = data;
		pg->aux_offset = (uint64_t)page * 65;
		pg->aux_size = (uint64_t)page * 128;
		if (hwt_psys_mmap(ps, fd, (size_t)page * 128, PROT_READ, (uint64_t)page * 65,
				  &aux) != -EPERM)
			ret = 14;
	}
	/* 65 + 64 = 129: exactly the allowance */
	if (!ret) {
		pg->aux_size = (uint64_t)page * 64;
		if (hwt_psys_mmap(ps, fd, (size_t)page * 64, PROT_READ, (uint64_t)page * 65,
				  &aux) != 0)
			ret = 15;
	}
	/* the simulated machine's folder goes with it */
	hwt_psys_free(ps);
	return ret;
}

static void test_rules_mlock(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		hwt_test_skip("dropping CAP_IPC_LOCK to check the accounting needs root here");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(mlock_child());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		hwt_test_skip("kernel.perf_event_mlock_kb is not the default 516 on this machine");
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ------------------------------------------------------------------------ */
/* recordings                                                                */

static bool have_qemu(void)
{
	return system("qemu-x86_64 --version >/dev/null 2>&1") == 0;
}

static void need_emulator(void)
{
	if (!have_qemu())
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user): the "
			      "simulated PMU's trace comes from the PT emulator");
}

/* The self instructions of each completed ptemu_loop call in `script
 * --flow` output ("<- ptemu_loop (...) T, N insns"), sorted. */
static size_t loop_insns(const char *flow, unsigned long long *v, size_t max)
{
	size_t n = 0;

	for (const char *p = flow; (p = strstr(p, "<- ptemu_loop ")) && n < max; p++) {
		const char *e = strchr(p, '\n');
		const char *q = strstr(p, " insns");

		if (!q || (e && q > e))
			continue;
		while (q > p && q[-1] != ' ')
			q--;
		v[n++] = strtoull(q, NULL, 10);
	}
	for (size_t i = 1; i < n; i++) {
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			unsigned long long t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	}
	return n;
}

/* The line of `report --calls` for func: calls and self instructions. */
static bool calls_of(const char *report, const char *func, unsigned long long *calls,
		     unsigned long long *self)
{
	for (const char *p = report; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		char name[128];

		if (sscanf(p, "%llu %llu %*u %*s %*s %*s %*s %127s", calls, self, name) == 3 &&
		    !strcmp(name, func))
			return true;
	}
	return false;
}

/* ptsim_family's ground truth: ptemu_loop(20000), (20001), (20002) in the
 * parent's three threads and (30000) in the child (3n + 2 instructions
 * each), pts_dl_mul() of the dlopen'd library 10 + 11 + 12 + 33 times
 * (3 instructions each). */
/* The ptxed engine on the stitched CPUs' streams: the instructions of the
 * FAST engine (in another order: its times are libipt's blocks'), and the
 * same output every time (its lanes shared libipt's images and sections
 * at once: 3 of 40 decodes lost or changed blocks). */
static void check_ptxed_engine(const char *file)
{
	const char *sorted = "awk '{$3 = \"\"; print $4 \" \" $5 \" \" $2}' | sort";
	struct hwt_test_run r, again;

	hwt_test_run(&r,
		     "%s script -q -i %s --itrace=i --engine=fast | %s > %s.fast && "
		     "%s script -q -i %s --itrace=i --engine=ptxed | %s > %s.ptxed && "
		     "cmp %s.fast %s.ptxed && wc -l < %s.fast",
		     hwt_test_hwtrace(), file, sorted, file, hwt_test_hwtrace(), file, sorted, file,
		     file, file, file);
	if (r.status)
		fail_msg("ptxed engine: other instructions than fast's: %s%s", r.out, r.err);
	assert_true(strtoull(r.out, NULL, 10) > 300000);
	hwt_test_run_free(&r);
	hwt_test_run_ok(&r, "%s script -q -i %s --itrace=be --engine=ptxed", hwt_test_hwtrace(),
			file);
	assert_true(hwt_test_contains(r.out, "branch: "));
	for (int i = 0; i < 12; i++) {
		hwt_test_run_ok(&again, "%s script -q -i %s --itrace=be --engine=ptxed",
				hwt_test_hwtrace(), file);
		if (strcmp(again.out, r.out))
			fail_msg("ptxed engine: decode %d of the same recording differs", i + 2);
		hwt_test_run_free(&again);
	}
	hwt_test_run_free(&r);
}

static void check_family(const char *file, const char *what)
{
	static const unsigned long long want[4] = {60002, 60005, 60008, 90002};
	unsigned long long v[8], calls = 0, self = 0;
	struct hwt_test_run r;

	hwt_test_run(&r, "%s script -i %s --flow", hwt_test_hwtrace(), file);
	assert_int_equal(r.status, 0);
	if (loop_insns(r.out, v, 8) != 4)
		fail_msg("%s: %zu ptemu_loop returns, want 4:\n%s", what, loop_insns(r.out, v, 8),
			 r.err);
	for (int i = 0; i < 4; i++) {
		if (v[i] != want[i])
			fail_msg("%s: ptemu_loop ran %llu instructions, want %llu", what, v[i],
				 want[i]);
	}
	/* The CPUs' streams are decoded at once (stitching), libipt's
	 * segments too: decoding again gives the same output, every time
	 * (their decoders shared libipt's sections at once: a read of mapped
	 * code failed in about one decode in 30). */
	for (int i = 0; i < 6; i++) {
		struct hwt_test_run again;

		hwt_test_run(&again, "%s script -i %s --flow", hwt_test_hwtrace(), file);
		assert_int_equal(again.status, 0);
		if (strcmp(again.out, r.out) || strcmp(again.err, r.err))
			fail_msg("%s: decode %d of the same recording differs:\n%s", what, i + 2,
				 again.err);
		hwt_test_run_free(&again);
	}
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s report -i %s --calls", hwt_test_hwtrace(), file);
	assert_int_equal(r.status, 0);
	assert_true(calls_of(r.out, "ptemu_loop", &calls, &self));
	assert_int_equal(calls, 4);
	assert_int_equal(self, 270017);
	assert_true(calls_of(r.out, "pts_dl_mul", &calls, &self));
	assert_int_equal(calls, 66);
	assert_int_equal(self, 198);
	if (!hwt_test_contains(r.err, " 0 gaps (0 from lost trace, 0 bytes lost), 0 overflows "
				      "(exact, from Intel PT)"))
		fail_msg("%s: gaps in the trace:\n%s", what, r.err);
	/* user space only, or the kernel's code recorded: no kernel gaps to
	 * warn of (-a has the kernel's MMAP record) */
	assert_false(hwt_test_contains(r.err, "kernel code is not decoded"));
	hwt_test_run_free(&r);
}

/* pt: probes on a per-CPU recording of the simulated 2-CPU machine: `cpu` is
 * the CPU whose stream ran the code (the threads move between both), never
 * -1; each of pts_dl_mul's 66 calls is counted once. */
static void check_probe_cpus(const char *file)
{
	struct hwt_test_run r;
	unsigned long long n[2] = {0, 0}, v;
	const char *p;
	int cpu, used;

	hwt_test_run(&r, "%s trace -i %s 'pt:libpts_lib.so:pts_dl_mul:entry { @[cpu] = count() }'",
		     hwt_test_hwtrace(), file);
	assert_int_equal(r.status, 0);
	p = strstr(r.out, "@[cpu]: count()\n");
	assert_non_null(p);
	p += strlen("@[cpu]: count()\n");
	while (sscanf(p, " %d %llu%n", &cpu, &v, &used) == 2) {
		if (cpu < 0 || cpu > 1)
			fail_msg("pt: probe hit on cpu %d, want 0 or 1:\n%s", cpu, r.out);
		n[cpu] += v;
		p += used;
	}
	assert_int_equal(n[0] + n[1], 66);
	assert_true(n[0] > 0 && n[1] > 0);
	hwt_test_run_free(&r);
}

/* Finding 1: threads and children started after the start are traced:
 * per-CPU buffers with inherit and switch records; the threads move
 * between the CPUs (slice=1) and their stacks are carried. Full mode. */
static void test_family(void **state)
{
	char *dir = hwt_test_tmpdir(), file[4096];
	struct hwt_test_run r;

	(void)state;
	need_emulator();
	snprintf(file, sizeof(file), "%s/family.hwt", dir);
	hwt_test_run(&r,
		     "HWT_PT_SIM=wait,cpus=2,slice=1 %s record --pt=psb_period=0 -o %s -- %s %s",
		     hwt_test_hwtrace(), file, hwt_test_prog("ptsim_family"),
		     hwt_test_prog("libpts_lib.so"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	check_family(file, "full");
	check_ptxed_engine(file);
	hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
	assert_true(hwt_test_contains(r.out, "record.buffers         = per-cpu"));
	assert_true(hwt_test_contains(r.out, "SWITCH"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s script -i %s --itrace=e", hwt_test_hwtrace(), file);
	assert_true(hwt_test_contains(r.err, "ran on more than one CPU"));
	hwt_test_run_free(&r);
	check_probe_cpus(file);
	hwt_test_tmpdir_remove(dir);
}

/* The same in snapshot mode: one snapshot at the end holds it all. */
static void test_family_snapshot(void **state)
{
	char *dir = hwt_test_tmpdir(), file[4096];
	struct hwt_test_run r;

	(void)state;
	need_emulator();
	snprintf(file, sizeof(file), "%s/snap.hwt", dir);
	hwt_test_run(&r,
		     "HWT_PT_SIM=wait,cpus=2,slice=1 %s record --pt=psb_period=0 -S -o %s -- %s %s",
		     hwt_test_hwtrace(), file, hwt_test_prog("ptsim_family"),
		     hwt_test_prog("libpts_lib.so"));
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "(snapshots)"));
	hwt_test_run_free(&r);
	check_family(file, "snapshot");
	hwt_test_tmpdir_remove(dir);
}

/* Finding 2: -a ties the CPUs' traces to processes (SWITCH_CPU_WIDE). */
static void test_system_wide(void **state)
{
	char *dir = hwt_test_tmpdir(), file[4096];
	struct hwt_test_run r;

	(void)state;
	need_emulator();
	if (geteuid() != 0) {
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("-a needs root (or perf_event_paranoid <= 0)");
	}
	snprintf(file, sizeof(file), "%s/all.hwt", dir);
	hwt_test_run(&r,
		     "HWT_PT_SIM=wait,cpus=2,slice=1 %s record --pt=psb_period=0 -a -o %s -- %s %s",
		     hwt_test_hwtrace(), file, hwt_test_prog("ptsim_family"),
		     hwt_test_prog("libpts_lib.so"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	check_family(file, "-a");
	hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
	assert_true(hwt_test_contains(r.out, "SWITCH_CPU_WIDE"));
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

/* Finding 3: filters the kernel refuses are refused before anything runs. */
static void test_filters(void **state)
{
	char *dir = hwt_test_tmpdir(), file[4096], mark[4096];
	const char *prog = hwt_test_prog("ptsim_forks");
	struct hwt_test_run r;

	(void)state;
	snprintf(file, sizeof(file), "%s/f.hwt", dir);
	snprintf(mark, sizeof(mark), "%s/ran", dir);
	hwt_test_run(&r, "HWT_PT_SIM=1 %s record --pt --filter 'start main @ %s' -o %s -- touch %s",
		     hwt_test_hwtrace(), prog, file, mark);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "Intel PT has no start filters (the kernel refuses "
					     "them: pt_event_addr_filters_validate)"));
	assert_int_equal(strchr(r.err, '\n') - r.err + 1, (long)strlen(r.err));
	assert_int_equal(access(mark, F_OK), -1);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "HWT_PT_SIM=1 %s record --pt --filter 'stop main @ %s' -o %s -- touch %s",
		     hwt_test_hwtrace(), prog, file, mark);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "Intel PT stops only on ranges"));
	hwt_test_run_free(&r);
	hwt_test_run(&r,
		     "HWT_PT_SIM=1 %s record --pt --filter 'filter main @ %s' -a -o %s -- touch %s",
		     hwt_test_hwtrace(), prog, file, mark);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "filters in a file need a traced task"));
	assert_int_equal(access(mark, F_OK), -1);
	hwt_test_run_free(&r);
	if (have_qemu()) {
		/* one the kernel takes: the simulated kernel takes it too */
		hwt_test_run(
		    &r, "HWT_PT_SIM=wait %s record --pt --filter 'filter main @ %s' -o %s -- %s 2",
		    hwt_test_hwtrace(), prog, file, prog);
		assert_int_equal(r.status, 0);
		hwt_test_run_free(&r);
		hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
		assert_true(hwt_test_contains(r.out, "pt.config.filter       = filter 0x"));
		hwt_test_run_free(&r);
	}
	hwt_test_tmpdir_remove(dir);
}

/* Finding 4: an ordinary user gets sizes that fit the limits, or the limits
 * named with their numbers. 'ulimit -l 64': 2 CPUs x 129 pages + 16 pages
 * may be locked; hwtrace's former 4 MiB + 1 MiB buffer did not fit. */
static void test_unprivileged(void **state)
{
	char *dir = hwt_test_tmpdir(), file[4096];
	struct hwt_test_run r;
	int paranoid = 2;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");

	(void)state;
	if (f) {
		if (fscanf(f, "%d", &paranoid) != 1)
			paranoid = 2;
		fclose(f);
	}
	if (geteuid() != 0 || paranoid > 2 || system("setpriv --version >/dev/null 2>&1")) {
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("running as an ordinary user needs root, setpriv and "
			      "perf_event_paranoid <= 2");
	}
	need_emulator();
	snprintf(file, sizeof(file), "%s/user.hwt", dir);
	hwt_test_run(&r, "chmod 0777 %s", dir);
	hwt_test_run_free(&r);
	hwt_test_run(&r,
		     "ulimit -l 64 && HWT_PT_SIM=wait,cpus=2 setpriv --reuid=65534 --regid=65534 "
		     "--clear-groups %s record --pt -o %s -- %s 3",
		     hwt_test_hwtrace(), file, hwt_test_prog("ptsim_forks"));
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
	assert_true(hwt_test_contains(r.out, "pt.config.aux_size     = 131072"));
	hwt_test_run_free(&r);
	hwt_test_run(&r,
		     "ulimit -l 64 && HWT_PT_SIM=wait,cpus=2 setpriv --reuid=65534 --regid=65534 "
		     "--clear-groups %s record --pt -m ,16M -o %s -- %s 3",
		     hwt_test_hwtrace(), file, hwt_test_prog("ptsim_forks"));
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "kernel.perf_event_mlock_kb is "));
	assert_true(hwt_test_contains(r.err, " per CPU x 2 CPUs, then 'ulimit -l' 64 KiB"));
	assert_true(hwt_test_contains(r.err, "CAP_IPC_LOCK"));
	assert_true(hwt_test_contains(r.err, "16 MiB AUX"));
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

/* Finding 5: a full AUX area (here smaller than what a CPU writes between
 * two PSBs) disables the event; each overrun is reported with its time,
 * the event enabled again, and the trace goes on after it. */
static void test_overruns(void **state)
{
	char *dir = hwt_test_tmpdir(), file[4096];
	struct hwt_test_run r;
	const char *gap, *after;

	(void)state;
	need_emulator();
	snprintf(file, sizeof(file), "%s/ov.hwt", dir);
	hwt_test_run(&r, "HWT_PT_SIM=cpus=1 %s record --pt=psb_period=1 -m 64K,4K -o %s -- %s %s",
		     hwt_test_hwtrace(), file, hwt_test_prog("ptsim_family"),
		     hwt_test_prog("libpts_lib.so"));
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "the Intel PT AUX area was full "));
	assert_true(hwt_test_contains(r.err, " time(s), at 0."));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
	assert_true(hwt_test_contains(r.out, "pt.overruns            = "));
	assert_true(hwt_test_contains(r.out, "pt.overrun_times"));
	hwt_test_run_free(&r);
	/* calls decoded after the first loss: tracing went on */
	hwt_test_run(&r, "%s script -i %s --itrace=ce", hwt_test_hwtrace(), file);
	assert_int_equal(r.status, 0);
	gap = strstr(r.out, "trace lost");
	assert_non_null(gap);
	after = strstr(gap, "pts_dl_mul");
	assert_non_null(after);
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

/* Finding 6: in snapshot mode the sideband is on a tracking event that
 * stays enabled while snapshots are taken: every FORK and EXIT is there,
 * however many snapshots the run had. */
static void test_snapshot_sideband(void **state)
{
	char *dir = hwt_test_tmpdir(), file[4096];
	struct hwt_test_run r;
	unsigned long forks = 0, exits = 0;

	(void)state;
	need_emulator();
	snprintf(file, sizeof(file), "%s/sb.hwt", dir);
	hwt_test_run(&r,
		     "HWT_PT_SIM=wait,cpus=2 %s record --pt -S -o %s -- %s 40 & pid=$!; "
		     "while [ ! -e %s ] && kill -0 $pid 2>/dev/null; do sleep 0.001; done; "
		     "while kill -0 $pid 2>/dev/null; do kill -USR2 $pid 2>/dev/null; "
		     "sleep 0.002; done; wait $pid",
		     hwt_test_hwtrace(), file, hwt_test_prog("ptsim_forks"), file);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
	for (const char *p = r.out; (p = strstr(p, "FORK ")); p++)
		forks += strtoul(p + 5, NULL, 10);
	for (const char *p = r.out; (p = strstr(p, "EXIT ")); p++)
		exits += strtoul(p + 5, NULL, 10);
	assert_int_equal(forks, 40);
	assert_int_equal(exits, 41);
	assert_true(hwt_test_contains(r.out, "pt.config.snapshot     = 1"));
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

/* Finding 7 (the default): without the kernel's code, user space only,
 * said once, and written as traced. */
static void test_kernel_default(void **state)
{
	char *dir = hwt_test_tmpdir(), file[4096];
	struct hwt_test_run r;

	(void)state;
	need_emulator();
	if (access("/proc/kcore", R_OK) == 0) {
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("/proc/kcore is readable here: the kernel would be traced");
	}
	snprintf(file, sizeof(file), "%s/k.hwt", dir);
	hwt_test_run(&r, "HWT_PT_SIM=wait %s record --pt -o %s -- %s 1", hwt_test_hwtrace(), file,
		     hwt_test_prog("ptsim_forks"));
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "recording user space only: the kernel's code "
					     "cannot be read to decode its trace"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "%s info %s", hwt_test_hwtrace(), file);
	assert_true(hwt_test_contains(r.out, "pt.config.kernel       = 0"));
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

/* `hwtrace list` shows the simulated PMU as intel_pt. */
static void test_list(void **state)
{
	struct hwt_test_run r;

	(void)state;
	hwt_test_run(&r, "HWT_PT_SIM=1 %s list intel_pt", hwt_test_hwtrace());
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.out, "intel_pt"));
	assert_true(hwt_test_contains(r.out, "num_address_ranges=2"));
	hwt_test_run_free(&r);
	hwt_test_run(&r, "HWT_PT_SIM=cpus=0 %s list intel_pt", hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "HWT_PT_SIM: cpus=0 is not a number from 1 to 256"));
	hwt_test_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rules_open),
	    cmocka_unit_test(test_rules_mmap),
	    cmocka_unit_test(test_rules_filter),
	    cmocka_unit_test(test_rules_mlock),
	    cmocka_unit_test(test_list),
	    cmocka_unit_test(test_family),
	    cmocka_unit_test(test_family_snapshot),
	    cmocka_unit_test(test_system_wide),
	    cmocka_unit_test(test_filters),
	    cmocka_unit_test(test_unprivileged),
	    cmocka_unit_test(test_overruns),
	    cmocka_unit_test(test_snapshot_sideband),
	    cmocka_unit_test(test_kernel_default),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
