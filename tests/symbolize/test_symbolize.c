/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/symbolize/test_symbolize.c - the symbolize library API: runtime
 * address mapping on the live test process (ASLR bias, a text mapping that
 * does not start at file offset 0), names to addresses and file offsets,
 * the decoder's hint fast path, batches, the object cache, kallsyms, perf
 * maps, the vDSO from a memory copy, build-id mismatch, "no symbols" said
 * once, demangling, and parallel lookups equal to sequential ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "symbolize/symbolize.h"
#include "tests/lib/testutil.h"

static int warnings;

static void count_log(void *ctx, enum hwt_log_level level, const char *msg)
{
	(void)ctx;
	if (level <= HWT_LOG_WARN)
		warnings++;
	if (getenv("HWT_TEST_VERBOSE"))
		fprintf(stderr, "log: %s\n", msg);
}

static struct hwt_sym_cache *new_cache(void)
{
	struct hwt_sym_config cfg;
	struct hwt_sym_cache *c;

	hwt_sym_config_init(&cfg);
	cfg.logger.fn = count_log;
	cfg.system_debug_dir = NULL;
	assert_int_equal(hwt_sym_cache_alloc(&cfg, &c), 0);
	return c;
}

__attribute__((noinline)) int hwt_test_marker_function(int x);
__attribute__((noinline)) int hwt_test_marker_function(int x)
{
	return x * 7 + 3;
}

/* Finds the mapping of /proc/self/exe that holds addr. */
static void self_mapping(uint64_t addr, uint64_t *start, uint64_t *pgoff)
{
	char exe[4096], line[8192];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *f = fopen("/proc/self/maps", "r");

	assert_true(n > 0);
	exe[n] = '\0';
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char path[4096] = "";

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &lo, &hi, &off, path) < 3)
			continue;
		if (addr >= lo && addr < hi && !strcmp(path, exe)) {
			*start = lo;
			*pgoff = off;
			fclose(f);
			return;
		}
	}
	fclose(f);
	fail();
}

static void test_runtime_mapping_self(void **state)
{
	struct hwt_sym_cache *c = new_cache();
	struct hwt_sym_obj *obj;
	struct hwt_sym_frame frames[8];
	struct hwt_sym_info info;
	struct hwt_sym_def def;
	uint64_t rt = (uint64_t)(uintptr_t)&hwt_test_marker_function + 2, start, pgoff, addr, off;
	char *exe;
	size_t len;

	(void)state;
	self_mapping(rt, &start, &pgoff);
	/* a PIE's text is mapped from a non-zero file offset */
	assert_int_equal(hwt_sym_obj_open(c, "/proc/self/exe", NULL, 0, &obj), 0);
	assert_int_equal(hwt_sym_obj_map(obj, start, pgoff, rt, &addr), 0);
	assert_true(hwt_sym_lookup(obj, addr, 0, &info, frames, 8) >= 1);
	assert_string_equal(frames[0].func, "hwt_test_marker_function");
	assert_string_equal(info.symbol, "hwt_test_marker_function");
	assert_int_equal(addr - info.sym_addr, 2);
	assert_true(hwt_test_contains(frames[0].file, "test_symbolize.c"));
	assert_true(frames[0].line > 0);
	/* name -> address and file offset: the bytes at that offset in the
	 * file are the function's code in memory */
	assert_int_equal(hwt_sym_find(obj, "hwt_test_marker_function", &def, 1), 1);
	assert_int_equal(def.addr, info.sym_addr);
	assert_true(def.has_offset);
	assert_int_equal(hwt_sym_obj_file_offset(obj, def.addr, &off), 0);
	assert_int_equal(off, def.file_offset);
	exe = hwt_test_read_file("/proc/self/exe", &len);
	assert_non_null(exe);
	assert_true(def.file_offset + 16 <= len);
	assert_memory_equal(exe + def.file_offset, (const void *)&hwt_test_marker_function, 16);
	free(exe);
	/* outside any mapping of the object */
	assert_int_equal(hwt_sym_obj_map(obj, start, pgoff, start - 1, &addr), -HWT_ENOSYM);
	hwt_sym_cache_free(c);
}

static void test_cache_and_build_id(void **state)
{
	struct hwt_sym_cache *c = new_cache();
	struct hwt_sym_obj *a, *b, *d;
	struct hwt_sym_obj_info info;
	uint8_t wrong[20] = {1, 2, 3};
	const char *prog = hwt_test_prog("sym_inline_pie");

	(void)state;
	assert_int_equal(hwt_sym_obj_open(c, prog, NULL, 0, &a), 0);
	assert_int_equal(hwt_sym_obj_open(c, prog, NULL, 0, &b), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(hwt_sym_obj_info(a, &info), 0);
	assert_int_equal(info.build_id_len, 20);
	assert_true(info.sources & HWT_SYM_SRC_DWARF);
	assert_true(info.sources & HWT_SYM_SRC_SYMTAB);
	assert_string_equal(info.name, "sym_inline_pie");
	/* by build-id: found in the cache without touching the file */
	assert_int_equal(hwt_sym_obj_open(c, "/nonexistent", info.build_id, info.build_id_len, &d),
			 0);
	assert_ptr_equal(d, a);
	/* the file is not the one that ran */
	assert_int_equal(hwt_sym_obj_open(c, prog, wrong, sizeof(wrong), &d), -HWT_EVERSION);
	assert_int_equal(hwt_sym_obj_open(c, "/nonexistent/x", NULL, 0, &d), -ENOENT);
	assert_int_equal(hwt_sym_obj_open(c, "/proc/self/status", NULL, 0, &d), -HWT_EFORMAT);
	hwt_sym_cache_free(c);
	hwt_sym_cache_free(NULL);
}

static void test_hint_and_batch(void **state)
{
	struct hwt_sym_cache *c = new_cache();
	struct hwt_sym_obj *obj;
	struct hwt_sym_def def;
	struct hwt_sym_hint hint;
	struct hwt_sym_func fn;
	uint64_t addrs[64];
	struct hwt_sym_batch_entry out[64];
	struct hwt_sym_frame frames[64 * 4], one[4];
	struct hwt_sym_info info;

	(void)state;
	memset(&hint, 0, sizeof(hint));
	assert_int_equal(hwt_sym_obj_open(c, hwt_test_prog("sym_cxx"), NULL, 0, &obj), 0);
	assert_int_equal(hwt_sym_find(obj, "geo::scale(int)", &def, 1), 1);
	assert_int_equal(hwt_sym_find(obj, "_ZN3geo5scaleEi", &def, 1), 1);
	/* "geo::scale" matches both overloads */
	assert_int_equal(hwt_sym_find(obj, "geo::scale", NULL, 0), 2);
	assert_int_equal(hwt_sym_func_at(obj, def.addr + 1, 0, &hint, &fn), 0);
	assert_string_equal(fn.name, "geo::scale(int)");
	assert_int_equal(fn.addr, def.addr);
	assert_int_equal(hint.lo, def.addr);
	assert_int_equal(hint.hi, def.addr + def.size);
	/* answered from the hint: same pointer, no search */
	assert_int_equal(hwt_sym_func_at(obj, def.addr + def.size - 1, 0, &hint, &fn), 0);
	assert_string_equal(fn.name, "geo::scale(int)");
	assert_int_equal(hwt_sym_func_at(obj, def.addr, HWT_SYM_RAW, &hint, &fn), 0);
	assert_string_equal(fn.name, "_ZN3geo5scaleEi");
	/* batch equals one by one, sorted input with repeats */
	for (int i = 0; i < 64; i++)
		addrs[i] = def.addr + (uint64_t)(i / 2) * 3;
	assert_true(hwt_sym_lookup_batch(obj, addrs, 64, 0, out, frames, 4) > 0);
	for (int i = 0; i < 64; i++) {
		int n = hwt_sym_lookup(obj, addrs[i], 0, &info, one, 4);

		assert_int_equal(out[i].status, n);
		for (int k = 0; k < n; k++) {
			assert_ptr_equal(frames[i * 4 + k].func, one[k].func);
			assert_int_equal(frames[i * 4 + k].line, one[k].line);
		}
	}
	hwt_sym_cache_free(c);
}

static void test_kallsyms_and_perfmap(void **state)
{
	struct hwt_sym_cache *c = new_cache();
	struct hwt_sym_obj *k, *p, *real;
	struct hwt_sym_frame f[2];
	struct hwt_sym_info info;
	struct hwt_sym_def def;
	char *tmp = hwt_test_tmpdir(), path[4096];
	const char *ks = "ffffffff81000000 T _stext\n"
			 "ffffffff81000100 t helper\n"
			 "ffffffff81002000 D some_data\n"
			 "ffffffffc0001000 t mod_fn\t[mymod]\n"
			 "ffffffffc0001080 T mod_other\t[mymod]\n";
	const char *pm = "7f0000001000 40 jit_fn_one\n7f0000001040 20 LazyCompile:*foo x.js:1\n"
			 "garbage\n";

	(void)state;
	snprintf(path, sizeof(path), "%s/kallsyms", tmp);
	hwt_test_write_file(path, ks, strlen(ks));
	assert_int_equal(hwt_sym_obj_open_kallsyms(c, path, &k), 0);
	assert_int_equal(hwt_sym_lookup(k, 0xffffffff81000104ull, 0, &info, f, 2), 1);
	assert_string_equal(f[0].func, "helper");
	assert_int_equal(info.addr - info.sym_addr, 4);
	assert_string_equal(info.module, "[kernel.kallsyms]");
	assert_int_equal(hwt_sym_lookup(k, 0xffffffffc0001010ull, 0, &info, f, 2), 1);
	assert_string_equal(f[0].func, "mod_fn");
	assert_string_equal(info.module, "mymod");
	assert_int_equal(hwt_sym_lookup(k, 0xffffffff80000000ull, 0, &info, f, 2), -HWT_ENOSYM);
	assert_int_equal(hwt_sym_find(k, "mod_other", &def, 1), 1);
	assert_int_equal(def.addr, 0xffffffffc0001080ull);
	/* hidden addresses */
	hwt_test_write_file(path, "0000000000000000 T _stext\n", 26);
	snprintf(path, sizeof(path), "%s/kallsyms0", tmp);
	hwt_test_write_file(path, "0000000000000000 T _stext\n", 26);
	assert_int_equal(hwt_sym_obj_open_kallsyms(c, path, &real), -EACCES);

	snprintf(path, sizeof(path), "%s/perf-123.map", tmp);
	hwt_test_write_file(path, pm, strlen(pm));
	warnings = 0;
	assert_int_equal(hwt_sym_obj_open_perfmap(c, path, &p), 0);
	assert_int_equal(warnings, 1); /* the garbage line, counted once */
	assert_int_equal(hwt_sym_lookup(p, 0x7f0000001050ull, 0, &info, f, 2), 1);
	assert_string_equal(f[0].func, "LazyCompile:*foo x.js:1");
	assert_int_equal(hwt_sym_lookup(p, 0x7f0000001060ull, 0, &info, f, 2), -HWT_ENOSYM);

	/* the running kernel, when its addresses are visible */
	if (hwt_sym_obj_open_kallsyms(c, "/proc/kallsyms", &real) == 0 &&
	    hwt_sym_find(real, "schedule", &def, 1) == 1) {
		assert_int_equal(hwt_sym_lookup(real, def.addr + 1, 0, &info, f, 2), 1);
		assert_string_equal(f[0].func, "schedule");
	}
	hwt_sym_cache_free(c);
	hwt_test_tmpdir_remove(tmp);
}

static void test_vdso_image(void **state)
{
	struct hwt_sym_cache *c = new_cache();
	struct hwt_sym_obj *obj;
	struct hwt_sym_def def;
	struct hwt_sym_frame f[2];
	struct hwt_sym_info info;
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	char line[512];
	uint64_t lo = 0, hi = 0;
	FILE *m;

	(void)state;
	if (!base)
		hwt_test_skip("no vDSO in this process");
	m = fopen("/proc/self/maps", "r");
	while (m && fgets(line, sizeof(line), m)) {
		unsigned long long a, b;

		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &a, &b) == 2) {
			lo = a;
			hi = b;
		}
	}
	if (m)
		fclose(m);
	assert_int_equal(lo, base);
	assert_int_equal(hwt_sym_obj_open_image(c, "[vdso]", (const void *)base, hi - lo, &obj), 0);
	assert_true(hwt_sym_find(obj, "__vdso_clock_gettime", &def, 1) >= 1);
	assert_int_equal(hwt_sym_lookup(obj, def.addr + 1, 0, &info, f, 2), 1);
	assert_string_equal(info.symbol, "__vdso_clock_gettime");
	assert_string_equal(info.module, "[vdso]");
	hwt_sym_cache_free(c);
}

static void test_stripped_said_once(void **state)
{
	struct hwt_sym_cache *c = new_cache();
	struct hwt_sym_obj *obj;
	struct hwt_sym_frame f[2];
	struct hwt_sym_info info;
	char *tmp = hwt_test_tmpdir(), path[4096];
	struct hwt_test_run r;

	(void)state;
	snprintf(path, sizeof(path), "%s/stripped", tmp);
	hwt_test_run(&r, "objcopy --strip-all --remove-section=.gnu_debuglink '%s' '%s'",
		     hwt_test_prog("sym_inline_pie"), path);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	warnings = 0;
	assert_int_equal(hwt_sym_obj_open(c, path, NULL, 0, &obj), 0);
	for (uint64_t a = 0x1000; a < 0x1400; a += 0x10) {
		int n = hwt_sym_lookup(obj, a, 0, &info, f, 2);

		/* .dynsym still names exported functions; nothing else is known */
		if (n < 0) {
			assert_int_equal(n, -HWT_ENOSYM);
			assert_string_equal(info.module, "stripped");
			assert_int_equal(info.addr, a);
		}
	}
	assert_true(warnings <= 1);
	hwt_sym_cache_free(c);
	hwt_test_tmpdir_remove(tmp);
}

static void test_demangle(void **state)
{
	char *d;

	(void)state;
	d = hwt_sym_demangle("_ZN3geo5scaleEi");
	assert_string_equal(d, "geo::scale(int)");
	free(d);
	d = hwt_sym_demangle("_ZN4test3foo17h0123456789abcdefE"); /* Rust legacy */
	assert_string_equal(d, "test::foo");
	free(d);
	d = hwt_sym_demangle("_RNvCs1234_4test3foo"); /* Rust v0 */
	assert_string_equal(d, "test::foo");
	free(d);
	d = hwt_sym_demangle("_ZN3geo5scaleEi@@V1");
	assert_string_equal(d, "geo::scale(int)@@V1");
	free(d);
	assert_null(hwt_sym_demangle("main"));
}

struct par {
	struct hwt_sym_obj *obj;
	const uint64_t *addrs;
	size_t n;
	const char **names;
	unsigned *lines;
};

static void *par_run(void *arg)
{
	struct par *p = arg;

	for (size_t i = 0; i < p->n; i++) {
		struct hwt_sym_frame f[8];
		struct hwt_sym_info info;
		int n = hwt_sym_lookup(p->obj, p->addrs[i], 0, &info, f, 8);

		p->names[i] = n > 0 ? f[n - 1].func : NULL;
		p->lines[i] = n > 0 ? f[0].line : 0;
	}
	return NULL;
}

static void test_parallel_equals_sequential(void **state)
{
	enum { N = 3000, T = 4 };
	static uint64_t addrs[N];
	static const char *names[T + 1][N];
	static unsigned lines[T + 1][N];
	struct hwt_sym_cache *c1 = new_cache(), *c2 = new_cache();
	struct hwt_sym_obj *o1, *o2;
	struct par p[T + 1];
	pthread_t th[T];
	uint64_t seed = hwt_test_seed();

	(void)state;
	assert_int_equal(hwt_sym_obj_open(c1, hwt_test_prog("sym_cxx"), NULL, 0, &o1), 0);
	assert_int_equal(hwt_sym_obj_open(c2, hwt_test_prog("sym_cxx"), NULL, 0, &o2), 0);
	for (int i = 0; i < N; i++)
		addrs[i] = 0x1000 + hwt_test_rand(&seed) % 0x1800;
	p[T] = (struct par){o1, addrs, N, names[T], lines[T]};
	par_run(&p[T]);
	/* fresh cache: threads race to build the same units */
	for (int t = 0; t < T; t++) {
		p[t] = (struct par){o2, addrs, N, names[t], lines[t]};
		assert_int_equal(pthread_create(&th[t], NULL, par_run, &p[t]), 0);
	}
	for (int t = 0; t < T; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < T; t++) {
		for (int i = 0; i < N; i++) {
			assert_int_equal(lines[t][i], lines[T][i]);
			if (names[T][i])
				assert_string_equal(names[t][i], names[T][i]);
			else
				assert_null(names[t][i]);
		}
	}
	hwt_sym_cache_free(c1);
	hwt_sym_cache_free(c2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_runtime_mapping_self),
	    cmocka_unit_test(test_cache_and_build_id),
	    cmocka_unit_test(test_hint_and_batch),
	    cmocka_unit_test(test_kallsyms_and_perfmap),
	    cmocka_unit_test(test_vdso_image),
	    cmocka_unit_test(test_stripped_said_once),
	    cmocka_unit_test(test_demangle),
	    cmocka_unit_test(test_parallel_equals_sequential),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
