/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/symbolize/test_aspace.c - the process map (hwt_sym_aspace) and the
 * build-id reader. Synthetic sideband checks every rule of the map: mappings
 * valid from their time, a later mapping hiding an older one, exec starting
 * an empty space, a forked child seeing its parent's mappings as of the
 * fork, pid reuse, data mappings ignored, out-of-order arrival, thread names
 * inherited at FORK, kernel addresses. Real mappings (this test's own
 * /proc/self/maps and its vDSO) check that lookups reach the right function
 * through the symbolizer. Build-ids are compared with readelf's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolize/symbolize.h"
#include "tests/lib/testutil.h"

static struct hwt_sym_aspace *new_as(struct hwt_sym_cache *cache)
{
	struct hwt_sym_aspace_config cfg;
	struct hwt_sym_aspace *as;

	hwt_sym_aspace_config_init(&cfg);
	cfg.cache = cache;
	assert_int_equal(hwt_sym_aspace_alloc(&cfg, &as), 0);
	return as;
}

static void map(struct hwt_sym_aspace *as, uint32_t pid, uint64_t time, uint64_t start,
		uint64_t len, uint64_t pgoff, const char *file)
{
	struct hwt_sym_mmap_event ev = {
	    .pid = pid,
	    .tid = pid,
	    .time = time,
	    .start = start,
	    .len = len,
	    .pgoff = pgoff,
	    .prot = PROT_READ | PROT_EXEC,
	    .filename = file,
	};

	assert_int_equal(hwt_sym_aspace_mmap(as, &ev), 0);
}

static void task(struct hwt_sym_aspace *as, bool fork, uint32_t pid, uint32_t ppid, uint32_t tid,
		 uint32_t ptid, uint64_t time)
{
	struct hwt_sym_task_event ev = {pid, ppid, tid, ptid, time};

	if (fork)
		assert_int_equal(hwt_sym_aspace_fork(as, &ev), 0);
	else
		assert_int_equal(hwt_sym_aspace_exit(as, &ev), 0);
}

static void comm(struct hwt_sym_aspace *as, uint32_t pid, uint32_t tid, uint64_t time,
		 const char *name, bool exec)
{
	struct hwt_sym_comm_event ev = {pid, tid, time, name, exec};

	assert_int_equal(hwt_sym_aspace_comm(as, &ev), 0);
}

/* The path that holds ip in pid at time, or "-" when none. */
static const char *where(struct hwt_sym_aspace *as, uint32_t pid, uint64_t time, uint64_t ip)
{
	struct hwt_sym_loc loc;
	int err = hwt_sym_aspace_lookup(as, pid, time, ip, &loc);

	if (err == -HWT_ENOSYM) {
		assert_null(loc.path);
		return "-";
	}
	assert_int_equal(err, 0);
	assert_non_null(loc.path);
	assert_true(ip >= loc.map_start && ip < loc.map_end);
	return loc.path;
}

static void test_rules(void **state)
{
	struct hwt_sym_aspace *as = new_as(NULL);
	struct hwt_sym_loc loc;

	(void)state;
	comm(as, 100, 100, 10, "prog", true);
	map(as, 100, 11, 0x1000, 0x1000, 0x3000, "/a");
	map(as, 100, 12, 0x5000, 0x1000, 0, "/b");
	/* A data mapping holds no code: ignored. */
	{
		struct hwt_sym_mmap_event ev = {.pid = 100,
						.tid = 100,
						.time = 13,
						.start = 0x9000,
						.len = 0x1000,
						.prot = PROT_READ | PROT_WRITE,
						.filename = "/data"};

		assert_int_equal(hwt_sym_aspace_mmap(as, &ev), 0);
	}
	assert_string_equal(where(as, 100, 20, 0x1800), "/a");
	assert_string_equal(where(as, 100, 20, 0x9010), "-");
	assert_string_equal(where(as, 100, 20, 0x2000), "-"); /* end is exclusive */
	/* Without a cache: the file offset. */
	assert_int_equal(hwt_sym_aspace_lookup(as, 100, 20, 0x1834, &loc), 0);
	assert_int_equal(loc.addr, 0x3834);
	assert_null(loc.obj);
	assert_false(loc.kernel);

	/* A later mapping hides the older one where they overlap, from its time. */
	map(as, 100, 30, 0x1800, 0x100, 0, "/c");
	assert_string_equal(where(as, 100, 25, 0x1850), "/a");
	assert_string_equal(where(as, 100, 35, 0x1850), "/c");
	assert_string_equal(where(as, 100, 35, 0x1900), "/a");
	assert_string_equal(where(as, 100, 35, 0x1000), "/a");

	/* A forked child sees its parent's mappings as of the fork. */
	task(as, true, 200, 100, 200, 100, 40);
	assert_string_equal(where(as, 200, 50, 0x5100), "/b");
	map(as, 200, 60, 0x5000, 0x1000, 0, "/d");
	assert_string_equal(where(as, 200, 70, 0x5100), "/d");
	assert_string_equal(where(as, 100, 70, 0x5100), "/b");
	/* ... but not what the parent mapped after the fork. */
	map(as, 100, 45, 0x7000, 0x1000, 0, "/late");
	assert_string_equal(where(as, 100, 50, 0x7100), "/late");
	assert_string_equal(where(as, 200, 50, 0x7100), "-");
	/* exec starts an empty address space. */
	comm(as, 200, 200, 80, "other", true);
	assert_string_equal(where(as, 200, 90, 0x1800), "-");
	assert_string_equal(where(as, 200, 90, 0x5100), "-");
	assert_string_equal(where(as, 200, 75, 0x5100), "/d"); /* before the exec */
	map(as, 200, 81, 0x1000, 0x2000, 0, "/e");
	assert_string_equal(where(as, 200, 90, 0x1800), "/e");
	assert_string_equal(where(as, 100, 90, 0x1a00), "/a");

	/* Clocks of two CPUs disagree a little: a sample stamped just before
	 * the mapping it ran in still finds it. */
	assert_string_equal(where(as, 100, 11 - 1, 0x1800), "/a");

	/* pid reuse: a new process 100 forked by 1 does not see the old one. */
	task(as, false, 100, 1, 100, 1, 100);
	task(as, true, 100, 1, 100, 1, 110);
	assert_string_equal(where(as, 100, 120, 0x1a00), "-");
	assert_string_equal(where(as, 100, 99, 0x1a00), "/a");

	/* Kernel addresses: every process, labelled even without mappings. */
	assert_int_equal(hwt_sym_aspace_lookup(as, 100, 20, 0xffffffff81000010ull, &loc), 0);
	assert_true(loc.kernel);
	assert_string_equal(loc.path, "[kernel.kallsyms]");
	{
		struct hwt_sym_mmap_event ev = {.pid = UINT32_MAX,
						.tid = 0,
						.time = 0,
						.start = 0xffffffffc0000000ull,
						.len = 0x10000,
						.prot = PROT_EXEC,
						.filename = "/lib/modules/x.ko"};

		assert_int_equal(hwt_sym_aspace_mmap(as, &ev), 0);
		assert_string_equal(where(as, 4242, 5, 0xffffffffc0000100ull), "/lib/modules/x.ko");
	}
	/* Unknown pid. */
	assert_string_equal(where(as, 999, 20, 0x1800), "-");
	assert_int_equal(hwt_sym_aspace_lookup(as, 999, 20, 0x1800, &loc), -HWT_ENOSYM);
	assert_int_equal(loc.addr, 0x1800);

	/* Objects: distinct paths, data mappings not among them. */
	{
		size_t n = hwt_sym_aspace_nobjects(as);
		bool seen_a = false, seen_data = false;
		struct hwt_sym_aspace_object o;

		for (uint32_t i = 0; i < n; i++) {
			assert_int_equal(hwt_sym_aspace_object(as, i, &o), 0);
			seen_a |= !strcmp(o.path, "/a");
			seen_data |= !strcmp(o.path, "/data");
		}
		assert_true(seen_a);
		assert_false(seen_data);
		assert_int_equal(hwt_sym_aspace_object(as, (uint32_t)n, &o), -HWT_EINVAL);
	}
	hwt_sym_aspace_free(as);
}

static void test_out_of_order(void **state)
{
	struct hwt_sym_aspace *as = new_as(NULL);

	(void)state;
	/* The same story as above's first part, fed backwards. */
	map(as, 100, 30, 0x1800, 0x100, 0, "/c");
	map(as, 100, 11, 0x1000, 0x1000, 0, "/a");
	comm(as, 100, 100, 10, "prog", true);
	map(as, 100, 5, 0x1000, 0x1000, 0, "/before-exec");
	assert_string_equal(where(as, 100, 25, 0x1850), "/a");
	assert_string_equal(where(as, 100, 35, 0x1850), "/c");
	assert_string_equal(where(as, 100, 8, 0x1850), "/before-exec");
	/* Many mappings: the interval search still finds each. */
	for (uint64_t i = 0; i < 500; i++) {
		char name[32];

		snprintf(name, sizeof(name), "/lib%" PRIu64, i);
		map(as, 300, 1000 - i, 0x100000 + i * 0x10000, 0x8000, 0, name);
	}
	map(as, 300, 1, 0x100000, 0x10000000, 0, "/huge"); /* under all of them */
	for (uint64_t i = 0; i < 500; i += 7) {
		char name[32];

		snprintf(name, sizeof(name), "/lib%" PRIu64, i);
		assert_string_equal(where(as, 300, 2000, 0x100000 + i * 0x10000 + 0x10), name);
		assert_string_equal(where(as, 300, 2000, 0x100000 + i * 0x10000 + 0x8010), "/huge");
	}
	hwt_sym_aspace_free(as);
}

static void test_comm(void **state)
{
	struct hwt_sym_aspace *as = new_as(NULL);

	(void)state;
	comm(as, 100, 100, 10, "prog", true);
	task(as, true, 100, 100, 101, 100, 15); /* a thread */
	comm(as, 100, 101, 17, "worker", false);
	assert_string_equal(hwt_sym_aspace_comm_of(as, 100, 12), "prog");
	assert_string_equal(hwt_sym_aspace_comm_of(as, 101, 16), "prog");
	assert_string_equal(hwt_sym_aspace_comm_of(as, 101, 18), "worker");
	comm(as, 100, 100, 20, "renamed", false);
	assert_string_equal(hwt_sym_aspace_comm_of(as, 101, 16), "prog"); /* inherited then */
	assert_string_equal(hwt_sym_aspace_comm_of(as, 100, 25), "renamed");
	assert_null(hwt_sym_aspace_comm_of(as, 555, 25));
	/* A thread that forked itself (bad input) does not loop. */
	task(as, true, 7, 7, 7, 7, 1);
	assert_null(hwt_sym_aspace_comm_of(as, 7, 2));
	hwt_sym_aspace_free(as);
}

static void test_bad_input(void **state)
{
	struct hwt_sym_aspace *as = new_as(NULL);
	struct hwt_sym_mmap_event ev = {
	    .pid = 1, .start = 0x1000, .len = 0, .prot = PROT_EXEC, .filename = "/x"};
	struct hwt_sym_aspace_config cfg = {.size = 1};
	struct hwt_sym_aspace *bad;

	(void)state;
	assert_int_equal(hwt_sym_aspace_mmap(as, &ev), -HWT_EINVAL);
	ev.len = UINT64_MAX;
	assert_int_equal(hwt_sym_aspace_mmap(as, &ev), -HWT_EINVAL);
	ev.len = 1;
	ev.filename = NULL;
	assert_int_equal(hwt_sym_aspace_mmap(as, &ev), -HWT_EINVAL);
	assert_int_equal(hwt_sym_aspace_comm(as, &(struct hwt_sym_comm_event){1, 1, 0, NULL, 0}),
			 -HWT_EINVAL);
	assert_int_equal(hwt_sym_aspace_alloc(&cfg, &bad), -HWT_EINVAL);
	assert_int_equal(hwt_sym_aspace_lookup(as, 1, 1, 1, NULL), -HWT_EINVAL);
	hwt_sym_aspace_free(as);
	hwt_sym_aspace_free(NULL);
}

__attribute__((noinline)) int aspace_probe_function(int x)
{
	return x * 3 + 1;
}

/* Feeds this process's executable mappings, as perf's synthesized MMAP2
 * records would say them. */
static void feed_self(struct hwt_sym_aspace *as)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8], path[4096] = "";
		int n =
		    sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &lo, &hi, perms, &off, path);

		if (n < 4 || perms[2] != 'x')
			continue;
		map(as, (uint32_t)getpid(), 0, lo, hi - lo, off, path[0] ? path : "//anon");
	}
	fclose(f);
}

static void test_real_process(void **state)
{
	struct hwt_sym_cache *cache;
	struct hwt_sym_aspace *as;
	struct hwt_sym_loc loc;
	struct hwt_sym_func fn;
	char exe[4096];
	ssize_t n;

	(void)state;
	assert_int_equal(hwt_sym_cache_alloc(NULL, &cache), 0);
	as = new_as(cache);
	feed_self(as);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(hwt_sym_aspace_lookup(as, (uint32_t)getpid(), 1,
					       (uint64_t)(uintptr_t)aspace_probe_function + 2,
					       &loc),
			 0);
	assert_string_equal(loc.path, exe);
	assert_non_null(loc.obj);
	assert_int_equal(hwt_sym_func_at(loc.obj, loc.addr, 0, NULL, &fn), 0);
	assert_string_equal(fn.name, "aspace_probe_function");
	assert_int_equal(loc.addr - fn.addr, 2);
	/* A libc function, through its dynamic symbols. */
	assert_int_equal(
	    hwt_sym_aspace_lookup(as, (uint32_t)getpid(), 1, (uint64_t)(uintptr_t)&getpid, &loc),
	    0);
	assert_non_null(strstr(loc.path, "libc"));
	assert_non_null(loc.obj);
	assert_int_equal(hwt_sym_func_at(loc.obj, loc.addr, 0, NULL, &fn), 0);
	assert_non_null(strstr(fn.name, "getpid"));

	/* The vDSO, from a copy of its image (as a recording carries it). */
	{
		uint64_t base = getauxval(AT_SYSINFO_EHDR);
		struct hwt_sym_aspace *as2;
		struct hwt_sym_obj *img;
		struct hwt_sym_def def;
		size_t size = 0;
		FILE *f = fopen("/proc/self/maps", "r");
		char line[4096];

		if (!base) {
			fclose(f);
			hwt_test_skip("no vDSO in this process");
		}
		while (fgets(line, sizeof(line), f)) {
			unsigned long long lo, hi;

			if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &lo, &hi) == 2)
				size = (size_t)(hi - lo);
		}
		fclose(f);
		assert_true(size > 0);
		as2 = new_as(cache);
		assert_int_equal(hwt_sym_aspace_image(as2, "[vdso]", (void *)(uintptr_t)base, size),
				 0);
		map(as2, 77, 0, base, size, 0, "[vdso]");
		assert_int_equal(
		    hwt_sym_obj_open_image(cache, "vdso-copy", (void *)(uintptr_t)base, size, &img),
		    0);
		assert_true(hwt_sym_find(img, "__vdso_clock_gettime", &def, 1) >= 1);
		assert_int_equal(hwt_sym_aspace_lookup(as2, 77, 5, base + def.addr + 1, &loc), 0);
		assert_string_equal(loc.path, "[vdso]");
		assert_non_null(loc.obj);
		assert_int_equal(hwt_sym_func_at(loc.obj, loc.addr, 0, NULL, &fn), 0);
		assert_non_null(strstr(fn.name, "clock_gettime"));
		hwt_sym_aspace_free(as2);
	}
	hwt_sym_aspace_free(as);
	hwt_sym_cache_free(cache);
}

static void test_changed_object(void **state)
{
	struct hwt_sym_cache *cache;
	struct hwt_sym_aspace *as;
	struct hwt_sym_loc loc;
	const char *prog = hwt_test_prog("sym_inline_pie");
	const uint8_t wrong[20] = {1, 2, 3};

	(void)state;
	assert_int_equal(hwt_sym_cache_alloc(NULL, &cache), 0);
	as = new_as(cache);
	assert_int_equal(hwt_sym_aspace_build_id(as, prog, wrong, sizeof(wrong)), 0);
	map(as, 5, 0, 0x555555554000ull, 0x10000, 0, prog);
	assert_int_equal(hwt_sym_aspace_lookup(as, 5, 1, 0x555555555100ull, &loc), 0);
	assert_string_equal(loc.path, prog);
	assert_null(loc.obj); /* another file than the one recorded */
	{
		struct hwt_sym_aspace_object o;

		assert_int_equal(hwt_sym_aspace_object(as, loc.object, &o), 0);
		assert_int_equal(o.open_status, -HWT_EVERSION);
		assert_int_equal(o.build_id_len, 20);
	}
	hwt_sym_aspace_free(as);
	hwt_sym_cache_free(cache);
}

/* readelf's "Build ID: ..." as bytes. */
static int readelf_build_id(const char *path, uint8_t *id)
{
	struct hwt_test_run r;
	const char *p;
	int n = 0;

	hwt_test_run(&r, "readelf -n '%s'", path);
	p = strstr(r.out, "Build ID: ");
	if (p) {
		p += 10;
		while (n < 64 && isxdigit((unsigned char)p[0]) && isxdigit((unsigned char)p[1]) &&
		       sscanf(p, "%2hhx", &id[n]) == 1) {
			n++;
			p += 2;
		}
	}
	hwt_test_run_free(&r);
	return n;
}

static void test_build_id(void **state)
{
	const char *progs[] = {"sym_inline_pie", "sym_inline_nopie", "libsym_lib.so", "sym_cxx"};
	uint8_t id[64], want[64];
	char *dir = hwt_test_tmpdir(), path[4096];
	struct hwt_test_run r;
	int n;

	(void)state;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(progs); i++) {
		const char *p = hwt_test_prog(progs[i]);

		n = readelf_build_id(p, want);
		assert_true(n >= 8);
		assert_int_equal(hwt_sym_build_id_read(p, id, sizeof(id)), n);
		assert_memory_equal(id, want, (size_t)n);
		assert_int_equal(hwt_sym_build_id_read(p, id, 4), -HWT_ETOOBIG);
	}
	/* This test program too (readelf must be given its real path: its
	 * own /proc/self/exe is readelf). */
	{
		char exe[4096];
		ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		assert_true(len > 0);
		exe[len] = '\0';
		n = readelf_build_id(exe, want);
		assert_true(n >= 8);
		assert_int_equal(hwt_sym_build_id_read(exe, id, sizeof(id)), n);
		assert_memory_equal(id, want, (size_t)n);
	}
	/* Without the note: 0. */
	snprintf(path, sizeof(path), "%s/noid", dir);
	hwt_test_run(&r, "objcopy --remove-section .note.gnu.build-id '%s' '%s'",
		     hwt_test_prog("sym_inline_pie"), path);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	assert_int_equal(hwt_sym_build_id_read(path, id, sizeof(id)), 0);
	/* Not ELF, missing, truncated. */
	snprintf(path, sizeof(path), "%s/text", dir);
	hwt_test_write_file(path, "hello, this is not an ELF file at all, no, no, no, no.\n", 56);
	assert_int_equal(hwt_sym_build_id_read(path, id, sizeof(id)), -HWT_EFORMAT);
	assert_int_equal(hwt_sym_build_id_read("/nonexistent/x", id, sizeof(id)), -ENOENT);
	{
		size_t len;
		char *data = hwt_test_read_file(hwt_test_prog("sym_inline_pie"), &len);

		assert_non_null(data);
		snprintf(path, sizeof(path), "%s/short", dir);
		hwt_test_write_file(path, data, 200);
		free(data);
		n = hwt_sym_build_id_read(path, id, sizeof(id));
		assert_true(n == -HWT_EFORMAT || n == 0);
	}
	/* A notes buffer: a foreign note first, then GNU's. */
	{
		uint8_t notes[64] = {0};
		uint32_t w[] = {4,	    4, 1, 0x00585858 /* "XXX" */,
				0xdeadbeef, 4, 8, 3 /* NT_GNU_BUILD_ID */,
				0x00554e47 /* "GNU" */};

		memcpy(notes, w, sizeof(w));
		memcpy(notes + sizeof(w), "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
		assert_int_equal(hwt_sym_build_id_notes(notes, sizeof(w) + 8, id, sizeof(id)), 8);
		assert_memory_equal(id, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
		/* cut inside the descriptor: not found, no overread */
		assert_int_equal(hwt_sym_build_id_notes(notes, sizeof(w) + 4, id, sizeof(id)), 0);
	}
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rules),	 cmocka_unit_test(test_out_of_order),
	    cmocka_unit_test(test_comm),	 cmocka_unit_test(test_bad_input),
	    cmocka_unit_test(test_real_process), cmocka_unit_test(test_changed_object),
	    cmocka_unit_test(test_build_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
