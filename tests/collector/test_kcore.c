/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_kcore.c - the kernel's half of a recording
 * (collector/kcore.c): from a /proc made of a kernel-like image
 * (tests/progs/kern_image, linked at kernel addresses; tests/lib/kimage),
 * the capture keeps kallsyms, the module list and a kcore-format copy of
 * exactly the kernel's text [_stext, _etext) with its bytes; a kallsyms
 * without addresses or a missing kcore is an error naming the cause.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/rec_int.h"
#include "tests/lib/kimage.h"
#include "tests/lib/testutil.h"

struct meta {
	char key[8][64];
	uint8_t *val[8];
	size_t len[8];
	size_t n;
};

static int put_bytes(void *ctx, const char *key, const void *v, size_t len)
{
	struct meta *m = ctx;

	assert_true(m->n < 8);
	snprintf(m->key[m->n], sizeof(m->key[0]), "%s", key);
	m->val[m->n] = malloc(len + 1);
	assert_non_null(m->val[m->n]);
	memcpy(m->val[m->n], v, len);
	m->val[m->n][len] = 0;
	m->len[m->n++] = len;
	return 0;
}

static int put_str(void *ctx, const char *key, const char *v)
{
	return put_bytes(ctx, key, v, strlen(v));
}

static const uint8_t *get(const struct meta *m, const char *key, size_t *len)
{
	for (size_t i = 0; i < m->n; i++) {
		if (!strcmp(m->key[i], key)) {
			*len = m->len[i];
			return m->val[i];
		}
	}
	return NULL;
}

static void meta_free(struct meta *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->val[i]);
	m->n = 0;
}

static void test_capture(void **state)
{
	const char *elf = hwt_test_prog("kern_image");
	char *dir = hwt_test_tmpdir(), why[512];
	struct meta m = {0};
	uint8_t *kcore, *text;
	const uint8_t *got;
	size_t klen, glen;
	char *syms;
	uint64_t stext, etext, off;
	int n;

	(void)state;
	assert_int_equal(kimage_proc(elf, dir), 0);
	assert_int_equal(kimage_read(elf, &kcore, &klen, &syms), 0);
	stext = kimage_sym(syms, "_stext");
	etext = kimage_sym(syms, "_etext");
	assert_true(stext >> 63 && etext > stext);
	n = hwt_coll_kernel_capture(dir, NULL, put_bytes, put_str, &m, why, sizeof(why));
	assert_true(n > 0);
	got = get(&m, "kernel.kallsyms", &glen);
	assert_non_null(got);
	assert_true(hwt_test_contains((const char *)got, " T do_syscall_64\n"));
	assert_non_null(get(&m, "kernel.modules", &glen));
	got = get(&m, "kernel.kcore", &glen);
	assert_non_null(got);
	assert_int_equal(glen, (size_t)n);
	/* an ELF core file with one PT_LOAD: [_stext, _etext), the image's
	 * bytes there */
	assert_memory_equal(got, "\177ELF", 4);
	assert_int_equal(hwt_le16(got + 16), 4);
	assert_int_equal(hwt_le16(got + 56), 1);
	assert_int_equal(hwt_le32(got + 64), 1);
	assert_int_equal(hwt_le64(got + 64 + 16), stext);
	assert_int_equal(hwt_le64(got + 64 + 32), etext - stext);
	off = hwt_le64(got + 64 + 8);
	assert_true(off + (etext - stext) <= glen);
	/* the same bytes as the image's own segment at _stext */
	text = kcore + hwt_le64(kcore + 64 + 8) + (stext - hwt_le64(kcore + 64 + 16));
	assert_memory_equal(got + off, text, etext - stext);
	assert_int_equal(got[off], 0xe8); /* call do_syscall_64 */
	meta_free(&m);
	free(kcore);
	free(syms);
	hwt_test_tmpdir_remove(dir);
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	hwt_test_write_file(path, text, strlen(text));
}

/* The module list: each module's core is copied where kcore has it. */
static void test_modules(void **state)
{
	const char *elf = hwt_test_prog("kern_image");
	char *dir = hwt_test_tmpdir(), why[512], line[256];
	struct meta m = {0};
	uint8_t *kcore;
	size_t klen, glen;
	char *syms;
	const uint8_t *got;
	uint64_t stext;

	(void)state;
	assert_int_equal(kimage_proc(elf, dir), 0);
	assert_int_equal(kimage_read(elf, &kcore, &klen, &syms), 0);
	stext = kimage_sym(syms, "_stext");
	/* a "module" at the image's do_syscall_64, 4 bytes (inside kcore),
	 * and one kcore does not have (left out) */
	snprintf(line, sizeof(line),
		 "kmod 4 0 - Live 0x%llx\nghost 4096 0 - Live 0xffffffffc0000000\n",
		 (unsigned long long)kimage_sym(syms, "do_syscall_64"));
	write_text(dir, "modules", line);
	assert_true(hwt_coll_kernel_capture(dir, NULL, put_bytes, put_str, &m, why, sizeof(why)) >
		    0);
	got = get(&m, "kernel.modules", &glen);
	assert_string_equal((const char *)got, line);
	got = get(&m, "kernel.kcore", &glen);
	assert_int_equal(hwt_le16(got + 56), 2);
	assert_int_equal(hwt_le64(got + 64 + 16), stext);
	assert_int_equal(hwt_le64(got + 120 + 16), kimage_sym(syms, "do_syscall_64"));
	assert_int_equal(hwt_le64(got + 120 + 32), 4);
	meta_free(&m);
	free(kcore);
	free(syms);
	hwt_test_tmpdir_remove(dir);
}

/* No kcore (CONFIG_PROC_KCORE off, lockdown): the kernel's text from its
 * vmlinux, moved to where kallsyms says the running kernel has it (KASLR);
 * the modules are not in it. */
static void test_vmlinux(void **state)
{
	const char *elf = hwt_test_prog("kern_image");
	char *dir = hwt_test_tmpdir(), why[512], path[4096], line[256], ks[1024];
	const uint64_t slide = 0x2a00000; /* a KASLR offset (2 MiB aligned) */
	struct meta m = {0};
	uint8_t *kcore, *text;
	const uint8_t *got;
	size_t klen, glen;
	char *syms;
	uint64_t stext, etext, dsys, off;
	int n;

	(void)state;
	assert_int_equal(kimage_proc(elf, dir), 0);
	assert_int_equal(kimage_read(elf, &kcore, &klen, &syms), 0);
	stext = kimage_sym(syms, "_stext");
	etext = kimage_sym(syms, "_etext");
	dsys = kimage_sym(syms, "do_syscall_64");
	snprintf(path, sizeof(path), "%s/kcore", dir);
	assert_int_equal(unlink(path), 0);
	snprintf(ks, sizeof(ks), "%016llx T _stext\n%016llx T do_syscall_64\n%016llx T _etext\n",
		 (unsigned long long)(stext + slide), (unsigned long long)(dsys + slide),
		 (unsigned long long)(etext + slide));
	write_text(dir, "kallsyms", ks);
	snprintf(line, sizeof(line), "kmod 4 0 - Live 0xffffffffc0001000\n");
	write_text(dir, "modules", line);
	n = hwt_coll_kernel_capture(dir, elf, put_bytes, put_str, &m, why, sizeof(why));
	assert_int_equal(n, 64 + 56 + (int)(etext - stext));
	assert_string_equal(why, elf);
	got = get(&m, "kernel.kcore", &glen);
	assert_non_null(got);
	/* one PT_LOAD, the kernel's text where it runs, the vmlinux's bytes */
	assert_int_equal(hwt_le16(got + 56), 1);
	assert_int_equal(hwt_le64(got + 64 + 16), stext + slide);
	assert_int_equal(hwt_le64(got + 64 + 32), etext - stext);
	off = hwt_le64(got + 64 + 8);
	text = kcore + hwt_le64(kcore + 64 + 8) + (stext - hwt_le64(kcore + 64 + 16));
	assert_memory_equal(got + off, text, etext - stext);
	assert_string_equal((const char *)get(&m, "kernel.kallsyms", &glen), ks);
	meta_free(&m);
	free(kcore);
	free(syms);
	hwt_test_tmpdir_remove(dir);
}

/* What keeps the kernel's code out, each named. */
static void test_refusals(void **state)
{
	char *dir = hwt_test_tmpdir(), why[512], path[4096];
	struct meta m = {0};

	(void)state;
	assert_int_equal(kimage_proc(hwt_test_prog("kern_image"), dir), 0);
	/* kernel.kptr_restrict: kallsyms shows zeros */
	write_text(dir, "kallsyms",
		   "0000000000000000 T _stext\n0000000000000000 T do_syscall_64\n"
		   "0000000000000000 T _etext\n");
	assert_int_equal(
	    hwt_coll_kernel_capture(dir, NULL, put_bytes, put_str, &m, why, sizeof(why)), -EACCES);
	assert_true(hwt_test_contains(why, "shows no addresses (kernel.kptr_restrict)"));
	meta_free(&m);
	assert_int_equal(kimage_proc(hwt_test_prog("kern_image"), dir), 0);
	snprintf(path, sizeof(path), "%s/kcore", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(hwt_coll_kernel_capture(dir, "/nonexistent/vmlinux", put_bytes, put_str,
						 &m, why, sizeof(why)),
			 -ENOENT);
	assert_true(hwt_test_contains(why, "/kcore: "));
	assert_true(hwt_test_contains(why, "; /nonexistent/vmlinux: "));
	meta_free(&m);
	/* a vmlinux without the symbol that places it */
	assert_int_equal(hwt_coll_kernel_capture(dir, hwt_test_prog("kern_user"), put_bytes,
						 put_str, &m, why, sizeof(why)),
			 -ENOENT);
	assert_true(hwt_test_contains(why, "kern_user: no _stext symbol"));
	meta_free(&m);
	/* kcore that is no ELF core file */
	write_text(dir, "kcore", "not an ELF file at all, but long enough to read a header......");
	assert_int_equal(
	    hwt_coll_kernel_capture(dir, NULL, put_bytes, put_str, &m, why, sizeof(why)),
	    -HWT_EFORMAT);
	assert_true(hwt_test_contains(why, "not an ELF core file"));
	meta_free(&m);
	/* what decides the default: kernel code readable or not */
	assert_int_equal(hwt_coll_kernel_code(dir, why, sizeof(why)), 1);
	assert_int_equal(unlink(path), 0);
	if (!hwt_coll_kernel_code(dir, why, sizeof(why)))
		assert_true(hwt_test_contains(why, "not present"));
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_capture),
	    cmocka_unit_test(test_modules),
	    cmocka_unit_test(test_vmlinux),
	    cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
