/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/common/test_hwt.c - the shared error contract, CRC-32C and buffers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/hwt.h"
#include "tests/lib/testutil.h"

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(hwt_strerror(0), "success");
	assert_string_equal(hwt_strerror(-ENOENT), strerror(ENOENT));
	assert_string_equal(hwt_strerror(-HWT_ETRUNC), "input is truncated");
	assert_string_equal(hwt_strerror(HWT_ETRUNC), "input is truncated");
	/* every code has its own text */
	for (int e = HWT_EBASE + 1; e < HWT_ELAST; e++)
		assert_string_not_equal(hwt_strerror(-e), "unknown error");
	assert_string_equal(hwt_strerror(-HWT_ELAST), "unknown error");
}

static void test_crc32c(void **state)
{
	(void)state;
	/* The standard check value of CRC-32C. */
	assert_int_equal(hwt_crc32c(0, "123456789", 9), 0xE3069283u);
	/* Incremental equals one-shot. */
	assert_int_equal(hwt_crc32c(hwt_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
	assert_int_equal(hwt_crc32c(0, "", 0), 0);
}

static void test_le(void **state)
{
	uint8_t b[8];

	(void)state;
	hwt_put_le64(b, 0x0102030405060708ull);
	assert_int_equal(b[0], 8);
	assert_int_equal(b[7], 1);
	assert_int_equal(hwt_le64(b), 0x0102030405060708ull);
	assert_int_equal(hwt_le32(b), 0x05060708u);
	assert_int_equal(hwt_le16(b), 0x0708u);
}

static void test_buf(void **state)
{
	struct hwt_buf buf;
	size_t big;

	(void)state;
	hwt_buf_init(&buf);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(hwt_buf_printf(&buf, "%d,", i), 0);
	assert_true(buf.len > 3000);
	assert_memory_equal(buf.data, "0,1,2,", 6);
	assert_int_equal(buf.data[buf.len], '\0');
	assert_int_equal(hwt_buf_append(&buf, "xy", 2), 0);
	assert_memory_equal(buf.data + buf.len - 2, "xy", 2);
	assert_int_equal(hwt_buf_reserve(&buf, SIZE_MAX), -HWT_ETOOBIG);
	hwt_buf_fini(&buf);
	hwt_buf_fini(NULL);
	assert_int_equal(hwt_mul_size(SIZE_MAX / 2 + 1, 2, &big), -HWT_ETOOBIG);
}

/* A whole file appended to a buffer: a file of more than one read, a /proc
 * file (size 0 in stat, read to its end), a missing file's -ENOENT. */
static void test_buf_read_file(void **state)
{
	char *dir = hwt_test_tmpdir(), path[4200];
	struct hwt_buf buf;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/f", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 50000; i++)
		fprintf(f, "%d\n", i);
	assert_int_equal(fclose(f), 0);
	hwt_buf_init(&buf);
	assert_int_equal(hwt_buf_append(&buf, "head:", 5), 0);
	assert_int_equal(hwt_buf_read_file(&buf, path), 0);
	/* 10 one-digit, 90 two-digit, ... numbers, each with its newline */
	assert_int_equal(buf.len, 5 + 10 * 2 + 90 * 3 + 900 * 4 + 9000 * 5 + 40000 * 6);
	assert_memory_equal(buf.data, "head:0\n1\n", 9);
	assert_memory_equal(buf.data + buf.len - 6, "49999\n", 6);
	hwt_buf_fini(&buf);
	assert_int_equal(hwt_buf_read_file(&buf, "/proc/self/status"), 0);
	assert_true(buf.len > 0);
	assert_memory_equal(buf.data, "Name:", 5);
	hwt_buf_fini(&buf);
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(hwt_buf_read_file(&buf, path), -ENOENT);
	assert_int_equal(buf.len, 0);
	hwt_buf_fini(&buf);
	hwt_test_tmpdir_remove(dir);
}

/* libbpf's rule for sized options structs: v1 is an older caller's
 * struct, v2 the library's, v3 a newer caller's (no tail padding: a field
 * added in an older struct's padding would be read from it, see hwt.h). */
struct opts_v1 {
	size_t size;
	long a;
};
struct opts_v2 {
	size_t size;
	long a;
	long b;
};
struct opts_v3 {
	size_t size;
	long a;
	long b;
	long c;
};

static void test_opts_copy(void **state)
{
	struct opts_v1 v1 = {sizeof(v1), 1};
	struct opts_v3 v3 = {sizeof(v3), 1, 2, 0};
	struct opts_v2 d = {sizeof(d), 10, 20};

	(void)state;
	/* Older: its fields copied, the rest keeps the defaults. */
	assert_int_equal(hwt_opts_copy(&d, sizeof(d), &v1), 0);
	assert_int_equal(d.size, sizeof(d));
	assert_int_equal(d.a, 1);
	assert_int_equal(d.b, 20);
	/* Newer with its extra fields zero: accepted. */
	assert_int_equal(hwt_opts_copy(&d, sizeof(d), &v3), 0);
	assert_int_equal(d.size, sizeof(d));
	assert_int_equal(d.a, 1);
	assert_int_equal(d.b, 2);
	/* Newer with an option this library does not know: refused, d kept. */
	v3.c = 3;
	v3.a = 7;
	assert_int_equal(hwt_opts_copy(&d, sizeof(d), &v3), -HWT_EINVAL);
	assert_int_equal(d.a, 1);
	/* A size smaller than the size field, or nothing: refused. */
	v1.size = 4;
	assert_int_equal(hwt_opts_copy(&d, sizeof(d), &v1), -HWT_EINVAL);
	assert_int_equal(hwt_opts_copy(&d, sizeof(d), NULL), -HWT_EINVAL);
	assert_int_equal(hwt_opts_copy(NULL, sizeof(d), &v3), -HWT_EINVAL);
}

/* hwt_dl_load: a library's symbols into function pointers, or
 * -HWT_ELIB for a missing library or symbol. */
static void test_dl_load(void **state)
{
	static const char *const names[] = {"strlen", "abs"};
	static const char *const bad[] = {"strlen", "no_such_symbol_hwt"};
	size_t (*len)(const char *) = NULL;
	int (*absval)(int) = NULL;
	void *const slots[] = {&len, &absval};

	(void)state;
	assert_int_equal(hwt_dl_load("libc.so.6", names, slots, 2), 0);
	assert_non_null(len);
	assert_int_equal(len("hwtrace"), 7);
	assert_int_equal(absval(-3), 3);
	assert_int_equal(hwt_dl_load("libc.so.6", bad, slots, 2), -HWT_ELIB);
	assert_int_equal(hwt_dl_load("libhwt-no-such-library.so.0", names, slots, 2), -HWT_ELIB);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_strerror),  cmocka_unit_test(test_dl_load),
	    cmocka_unit_test(test_crc32c),    cmocka_unit_test(test_le),
	    cmocka_unit_test(test_buf),	      cmocka_unit_test(test_buf_read_file),
	    cmocka_unit_test(test_opts_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
