/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/symbolize/test_addr2line.c - `hwtrace addr2line` against binutils
 * addr2line on programs the tests compile (-O2 -g: forced and natural
 * inlining, static functions, C++ templates and overloads, PIE and non-PIE,
 * DWARF 4 and 5, a shared library, zlib/zlib-gnu/zstd compressed debug
 * sections, stripped binaries with separate debug files by build-id and by
 * debuglink): the whole output must be byte for byte the same, inline chains
 * included. Also the errors for wrong or missing files.
 *
 * binutils answers the first query for a C++ function without a linkage
 * name from the ELF symbol, and every later one from its cached rule; the
 * tests feed binutils the address list twice and compare with its second
 * (steady) answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "tests/lib/testutil.h"

static char *tmp;

/* Writes the instruction addresses of prog (from objdump -d), plus a few
 * addresses inside instructions and outside any section, to path. */
static void write_addresses(const char *prog, const char *path)
{
	struct hwt_test_run r;
	char *p;
	FILE *f;
	int n = 0;

	hwt_test_run(&r, "objdump -d '%s' | sed -n 's/^ *\\([0-9a-f][0-9a-f]*\\):.*/\\1/p'", prog);
	assert_int_equal(r.status, 0);
	f = fopen(path, "w");
	assert_non_null(f);
	for (p = strtok(r.out, "\n"); p; p = strtok(NULL, "\n")) {
		unsigned long long a = strtoull(p, NULL, 16);

		fprintf(f, "%llx\n", a);
		if (n++ % 7 == 0)
			fprintf(f, "0x%llx\n", a + 1); /* inside an instruction */
	}
	fprintf(f, "0\nffffffffff\n"); /* outside every section */
	fclose(f);
	assert_true(n > 50);
	hwt_test_run_free(&r);
}

/* Runs both tools with the same flags on the same addresses and compares. */
static void compare(const char *prog, const char *flags, const char *extra_ours,
		    const char *ref_prog)
{
	struct hwt_test_run ref, ours, cnt;
	char addrs[4096];
	size_t half;

	snprintf(addrs, sizeof(addrs), "%s/addrs.txt", tmp);
	write_addresses(ref_prog ? ref_prog : prog, addrs);
	hwt_test_run(&ref, "cat '%s' '%s' | addr2line %s -e '%s'", addrs, addrs, flags,
		     ref_prog ? ref_prog : prog);
	assert_int_equal(ref.status, 0);
	hwt_test_run(&ours, "'%s' addr2line %s %s -e '%s' < '%s'", hwt_test_hwtrace(), flags,
		     extra_ours ? extra_ours : "", prog, addrs);
	assert_int_equal(ours.status, 0);
	/* binutils' second pass is the second half of its lines */
	{
		size_t lines = 0, seen = 0;

		for (size_t i = 0; i < ref.out_len; i++)
			lines += ref.out[i] == '\n';
		assert_int_equal(lines % 2, 0);
		for (half = 0; half < ref.out_len && seen < lines / 2; half++)
			seen += ref.out[half] == '\n';
	}
	if (ours.out_len != ref.out_len - half || strcmp(ours.out, ref.out + half) != 0) {
		char a[4096], b[4096];
		struct hwt_test_run d;

		snprintf(a, sizeof(a), "%s/binutils.out", tmp);
		snprintf(b, sizeof(b), "%s/ours.out", tmp);
		hwt_test_write_file(a, ref.out + half, ref.out_len - half);
		hwt_test_write_file(b, ours.out, ours.out_len);
		hwt_test_run(&d, "diff '%s' '%s' | head -40", a, b);
		fprintf(stderr, "addr2line %s -e %s differs from binutils:\n%s\n", flags, prog,
			d.out);
		hwt_test_run_free(&d);
		fail();
	}
	/* the answers are not all "??" */
	hwt_test_run(&cnt, "'%s' addr2line %s -f -e '%s' < '%s' | grep -vc '^[?][?]'",
		     hwt_test_hwtrace(), extra_ours ? extra_ours : "", prog, addrs);
	assert_true(atoi(cnt.out) > 50);
	hwt_test_run_free(&cnt);
	hwt_test_run_free(&ref);
	hwt_test_run_free(&ours);
}

static void test_programs_match_binutils(void **state)
{
	static const char *const progs[] = {
	    "sym_inline_pie",  "sym_inline_nopie", "sym_inline_dwarf4",
	    "sym_inline_zlib", "libsym_lib.so",	   "sym_cxx",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		compare(hwt_test_prog(progs[i]), "-a -f -i -C", NULL, NULL);
	/* binutils 2.40 cannot read DWARF 5 range lists from .zdebug sections
	 * ("can't find .debug_rnglists"): compare with the same code built
	 * without compression */
	compare(hwt_test_prog("sym_inline_zdebug"), "-a -f -i -C", NULL,
		hwt_test_prog("sym_inline_pie"));
}

static void test_flag_combinations(void **state)
{
	static const char *const flags[] = {
	    "-f -i -C", "-a -p -f -i -C -s", "-f", "-i", "-a", "-p -f -i", "-f -i",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		compare(hwt_test_prog("sym_cxx"), flags[i], NULL, NULL);
		compare(hwt_test_prog("sym_inline_pie"), flags[i], NULL, NULL);
	}
}

/* The inline chain of leaf_add <- middle <- outer_static, with the call
 * lines taken from the source. */
static void test_inline_chain_ground_truth(void **state)
{
	struct hwt_test_run r, lines;
	char expect[512];
	int l_leaf, l_r, l_ret, l_loop;

	(void)state;
	hwt_test_run(
	    &lines,
	    "grep -n 'sink = a;' '%1$s/tests/progs/sym_inline.c' | cut -d: -f1;"
	    "grep -n 'int r = leaf_add(x, 7);' '%1$s/tests/progs/sym_inline.c' | cut -d: -f1;"
	    "grep -n 'return leaf_add(r, x) + 1;' '%1$s/tests/progs/sym_inline.c' | cut -d: -f1;"
	    "grep -n 's += middle(i)' '%1$s/tests/progs/sym_inline.c' | cut -d: -f1",
	    hwt_test_source_dir());
	assert_int_equal(sscanf(lines.out, "%d %d %d %d", &l_leaf, &l_r, &l_ret, &l_loop), 4);
	hwt_test_run(&r,
		     "objdump -d '%1$s' | sed -n 's/^ *\\([0-9a-f]*\\):.*/\\1/p' | "
		     "'%2$s' addr2line -p -f -i -s -e '%1$s'",
		     hwt_test_prog("sym_inline_pie"), hwt_test_hwtrace());
	assert_int_equal(r.status, 0);
	/* three frames: leaf_add inlined into middle inlined into outer_static */
	snprintf(expect, sizeof(expect),
		 "leaf_add at sym_inline.c:%d\n (inlined by) middle at sym_inline.c:%d\n"
		 " (inlined by) outer_static at sym_inline.c:%d\n",
		 l_leaf, l_r, l_loop);
	if (!hwt_test_contains(r.out, expect)) {
		fprintf(stderr, "missing chain '%s' in:\n%s\n", expect, r.out);
		fail();
	}
	snprintf(expect, sizeof(expect), " (inlined by) middle at sym_inline.c:%d\n", l_ret);
	assert_true(hwt_test_contains(r.out, expect));
	hwt_test_run_free(&r);
	hwt_test_run_free(&lines);
}

static void sh_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh_ok(const char *fmt, ...)
{
	char cmd[8192];
	struct hwt_test_run r;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	hwt_test_run(&r, "%s", cmd);
	if (r.status != 0)
		fprintf(stderr, "command failed: %s\n%s", cmd, r.err);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
}

static void test_debuglink(void **state)
{
	const char *prog = hwt_test_prog("sym_inline_pie");
	char stripped[4096];

	(void)state;
	snprintf(stripped, sizeof(stripped), "%s/linked", tmp);
	sh_ok("cd '%s' && objcopy --only-keep-debug '%s' linked.debug && "
	      "objcopy --strip-all --add-gnu-debuglink=linked.debug '%s' linked",
	      tmp, prog, prog);
	compare(stripped, "-a -f -i -C", NULL, prog);
}

static void test_debuglink_bad_crc(void **state)
{
	const char *prog = hwt_test_prog("sym_inline_pie");
	struct hwt_test_run r;

	(void)state;
	sh_ok("cd '%s' && objcopy --only-keep-debug '%s' bad.debug && "
	      "objcopy --strip-all --add-gnu-debuglink=bad.debug '%s' bad && "
	      "printf x >> bad.debug",
	      tmp, prog, prog);
	hwt_test_run(&r, "'%s' addr2line -f -e '%s/bad' 0x1100 0x1200", hwt_test_hwtrace(), tmp);
	assert_int_equal(r.status, 0);
	assert_true(hwt_test_contains(r.err, "CRC does not match"));
	/* stripped, no usable debug file: said once, answers are unknown */
	assert_true(hwt_test_contains(r.err, "no symbols and no debug information"));
	assert_string_equal(r.out, "??\n??:0\n??\n??:0\n");
	hwt_test_run_free(&r);
}

static void test_build_id_dir(void **state)
{
	const char *prog = hwt_test_prog("sym_inline_pie");
	struct hwt_test_run id;
	char stripped[4096], extra[4096];

	(void)state;
	hwt_test_run(&id, "readelf -n '%s' | sed -n 's/.*Build ID: //p'", prog);
	assert_true(id.out_len > 4);
	id.out[strcspn(id.out, "\n")] = '\0';
	sh_ok("cd '%s' && mkdir -p dbg/.build-id/%.2s && "
	      "objcopy --only-keep-debug '%s' dbg/.build-id/%.2s/%s.debug && "
	      "objcopy --strip-all '%s' byid",
	      tmp, id.out, prog, id.out, id.out + 2, prog);
	snprintf(stripped, sizeof(stripped), "%s/byid", tmp);
	snprintf(extra, sizeof(extra), "--debug-dir='%s/dbg'", tmp);
	compare(stripped, "-a -f -i -C", extra, prog);
	hwt_test_run_free(&id);
}

/* Rewrites every .debug_* section of an ELF64 file as SHF_COMPRESSED with
 * ELFCOMPRESS_ZSTD (2). Debian 12's binutils cannot make such sections, so
 * the test builds them by hand: the compressed bytes are appended to the
 * file and the section headers point at them. */
static void make_zstd(const char *in, const char *out)
{
	size_t len;
	char *data = hwt_test_read_file(in, &len);
	Elf64_Ehdr eh;
	Elf64_Shdr *sh;
	size_t total;
	char *buf;
	int compressed = 0;

	assert_non_null(data);
	memcpy(&eh, data, sizeof(eh));
	assert_int_equal(eh.e_shentsize, sizeof(Elf64_Shdr));
	total = len;
	buf = malloc(len * 4 + 65536);
	assert_non_null(buf);
	memcpy(buf, data, len);
	sh = (Elf64_Shdr *)(buf + eh.e_shoff);
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		const char *name = data + sh[eh.e_shstrndx].sh_offset + sh[i].sh_name;
		Elf64_Chdr ch = {.ch_type = 2, .ch_size = sh[i].sh_size, .ch_addralign = 1};
		size_t c;

		if (strncmp(name, ".debug_", 7) || (sh[i].sh_flags & SHF_COMPRESSED))
			continue;
		total = (total + 7) & ~(size_t)7;
		memcpy(buf + total, &ch, sizeof(ch));
		c = ZSTD_compress(buf + total + sizeof(ch), len * 4 + 65536 - total - sizeof(ch),
				  data + sh[i].sh_offset, sh[i].sh_size, 3);
		assert_false(ZSTD_isError(c));
		sh[i].sh_offset = total;
		sh[i].sh_size = sizeof(ch) + c;
		sh[i].sh_flags |= SHF_COMPRESSED;
		sh[i].sh_addralign = 8;
		total += sizeof(ch) + c;
		compressed++;
	}
	assert_true(compressed >= 4);
	hwt_test_write_file(out, buf, total);
	free(buf);
	free(data);
}

static void test_zstd_sections(void **state)
{
	const char *prog = hwt_test_prog("sym_inline_pie");
	char out[4096];
	struct hwt_test_run r;

	(void)state;
	snprintf(out, sizeof(out), "%s/zstd", tmp);
	make_zstd(prog, out);
	hwt_test_run(&r, "readelf -S '%s' | grep -c 'debug_info'", out);
	hwt_test_run_free(&r);
	/* binutils 2.40 on Debian reads no zstd: compare with the plain file */
	compare(out, "-a -f -i -C", NULL, prog);
}

static void test_errors(void **state)
{
	struct hwt_test_run r;
	char path[4096];

	(void)state;
	hwt_test_run(&r, "'%s' addr2line -e /nonexistent/prog 0x10", hwt_test_hwtrace());
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "hwtrace: error: '/nonexistent/prog': no such file "
				   "(give the object with -e FILE)\n");
	assert_string_equal(r.out, "");
	hwt_test_run_free(&r);

	snprintf(path, sizeof(path), "%s/notelf", tmp);
	hwt_test_write_file(path, "hello, world\n", 13);
	hwt_test_run(&r, "'%s' addr2line -e '%s' 0x10", hwt_test_hwtrace(), path);
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "not an ELF file"));
	hwt_test_run_free(&r);

	hwt_test_run(&r, "'%s' addr2line -j .nosuch -e '%s' 0x10", hwt_test_hwtrace(),
		     hwt_test_prog("sym_inline_pie"));
	assert_int_equal(r.status, 1);
	assert_true(hwt_test_contains(r.err, "no section named '.nosuch'"));
	hwt_test_run_free(&r);

	hwt_test_run(&r, "'%s' addr2line --bogus", hwt_test_hwtrace());
	assert_int_equal(r.status, 2);
	hwt_test_run_free(&r);

	/* a truncated ELF: headers point past the end */
	snprintf(path, sizeof(path), "%s/trunc", tmp);
	sh_ok("head -c 3000 '%s' > '%s'", hwt_test_prog("sym_inline_pie"), path);
	hwt_test_run(&r, "'%s' addr2line -f -e '%s' 0x1100", hwt_test_hwtrace(), path);
	assert_true(r.status == 0 || r.status == 1);
	assert_true(r.status == 1 ? hwt_test_contains(r.err, "hwtrace: error:")
				  : hwt_test_contains(r.out, "??"));
	hwt_test_run_free(&r);
}

static void test_section_relative(void **state)
{
	(void)state;
	/* -j .text: offsets into .text */
	struct hwt_test_run ref, ours;

	hwt_test_run(&ref, "addr2line -f -i -j .text -e '%s' 0x10 0x40 0x80",
		     hwt_test_prog("sym_inline_pie"));
	hwt_test_run(&ours, "'%s' addr2line -f -i -j .text -e '%s' 0x10 0x40 0x80",
		     hwt_test_hwtrace(), hwt_test_prog("sym_inline_pie"));
	assert_int_equal(ours.status, 0);
	assert_string_equal(ours.out, ref.out);
	hwt_test_run_free(&ref);
	hwt_test_run_free(&ours);
	/* SYMBOL+OFFSET addresses */
	hwt_test_run(&ref, "addr2line -f -e '%s' main main+4 recurse+0x10",
		     hwt_test_prog("sym_inline_pie"));
	hwt_test_run(&ours, "'%s' addr2line -f -e '%s' main main+4 recurse+0x10",
		     hwt_test_hwtrace(), hwt_test_prog("sym_inline_pie"));
	assert_string_equal(ours.out, ref.out);
	hwt_test_run_free(&ref);
	hwt_test_run_free(&ours);
}

static int setup(void **state)
{
	(void)state;
	tmp = hwt_test_tmpdir();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hwt_test_tmpdir_remove(tmp);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_programs_match_binutils),
	    cmocka_unit_test(test_flag_combinations),
	    cmocka_unit_test(test_inline_chain_ground_truth),
	    cmocka_unit_test(test_debuglink),
	    cmocka_unit_test(test_debuglink_bad_crc),
	    cmocka_unit_test(test_build_id_dir),
	    cmocka_unit_test(test_zstd_sections),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_section_relative),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
