/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/symbolize/test_dwarf_readers.c - the two DWARF readers of the
 * symbolize module against each other and against binutils:
 *
 *   - our own reader (HWT_SYM_DWARF_NATIVE) and libdwarf
 *     (HWT_SYM_DWARF_LIBDWARF) give the same answer, frame by frame (name,
 *     file, line, column, discriminator, depth), for every byte address of
 *     the code of the test programs: DWARF 2, 3, 4 and 5, C and C++, PIE,
 *     non-PIE, a shared library, zlib and .zdebug compressed sections;
 *   - AUTO indexes those programs with the native reader only;
 *   - relocatable objects (ET_REL, as kernel modules): the relocations of
 *     their debug sections are applied and their sections placed as
 *     binutils places them, so that `addr2line -e foo.o` answers match
 *     binutils' (DWARF 4 and 5, -ffunction-sections, .init.text/.exit.text,
 *     compressed debug sections, x86-64 RELA and i386 REL), with both
 *     readers;
 *   - HWT_SYM_FRAMES_ONLY gives the same frames as a full lookup;
 *   - line rows that do not fit the compact layout (line numbers past
 *     2^24) are kept in the wide one, with the same answers;
 *   - batches: a sorted batch (answered by a merge-walk of the units'
 *     tables) and a shuffled one equal one-by-one lookups, frame by frame;
 *   - the per-unit fallback: a program whose hand-written DWARF uses
 *     DW_FORM_indirect (which the native reader declines) in one unit's
 *     function DIE and in another unit's unit DIE is indexed by libdwarf for
 *     those units, answers as binutils addr2line does, and with the native
 *     reader alone those units give no DWARF (symbol table answers).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symbolize.h"
#include "tests/lib/testutil.h"

static char *tmp;

static struct hwt_sym_cache *new_cache(unsigned reader)
{
	struct hwt_sym_config cfg;
	struct hwt_sym_cache *c;

	hwt_sym_config_init(&cfg);
	cfg.system_debug_dir = NULL;
	cfg.dwarf_reader = reader;
	assert_int_equal(hwt_sym_cache_alloc(&cfg, &c), 0);
	return c;
}

static void same_string(const char *what, uint64_t addr, unsigned i, const char *a, const char *b)
{
	if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0)) {
		fprintf(stderr, "0x%llx frame %u %s: native '%s', libdwarf '%s'\n",
			(unsigned long long)addr, i, what, a ? a : "(null)", b ? b : "(null)");
		fail();
	}
}

struct tally {
	unsigned dwarf;	  /* addresses answered from DWARF */
	unsigned inlined; /* ... with at least one inlined frame */
	unsigned columns; /* ... with a column */
};

/* Looks addr up in both objects with flags and compares everything. */
static void compare_addr(struct hwt_sym_obj *nat, struct hwt_sym_obj *lib, uint64_t addr,
			 unsigned flags, struct tally *t)
{
	struct hwt_sym_frame fn[32], fl[32];
	struct hwt_sym_info in, il;
	int rn = hwt_sym_lookup(nat, addr, flags, &in, fn, 32);
	int rl = hwt_sym_lookup(lib, addr, flags, &il, fl, 32);

	if (rn != rl || in.depth != il.depth || in.source != il.source) {
		fprintf(stderr,
			"0x%llx flags %u: native %d frames (depth %u, source %u), "
			"libdwarf %d (depth %u, source %u)\n",
			(unsigned long long)addr, flags, rn, in.depth, in.source, rl, il.depth,
			il.source);
		fail();
	}
	for (int i = 0; i < rn; i++) {
		same_string("function", addr, (unsigned)i, fn[i].func, fl[i].func);
		same_string("file", addr, (unsigned)i, fn[i].file, fl[i].file);
		if (fn[i].line != fl[i].line || fn[i].column != fl[i].column ||
		    fn[i].discriminator != fl[i].discriminator) {
			fprintf(stderr,
				"0x%llx frame %d: native %u:%u (d %u), libdwarf %u:%u (d %u)\n",
				(unsigned long long)addr, i, fn[i].line, fn[i].column,
				fn[i].discriminator, fl[i].line, fl[i].column, fl[i].discriminator);
			fail();
		}
	}
	if (rn > 0 && in.source == HWT_SYM_SRC_DWARF) {
		t->dwarf++;
		t->inlined += rn > 1;
		t->columns += fn[0].column > 0;
	}
}

/* Every byte of the program's .text (and .text.* of objects), both readers. */
static void compare_program(const char *name, unsigned min_inlined)
{
	struct hwt_sym_cache *cn = new_cache(HWT_SYM_DWARF_NATIVE);
	struct hwt_sym_cache *cl = new_cache(HWT_SYM_DWARF_LIBDWARF);
	struct hwt_sym_cache *ca = new_cache(HWT_SYM_DWARF_AUTO);
	struct hwt_sym_obj *nat, *lib, *aut;
	struct hwt_sym_obj_info info;
	struct tally t = {0};
	uint64_t lo, size;
	const char *path = hwt_test_prog(name);

	assert_int_equal(hwt_sym_obj_open(cn, path, NULL, 0, &nat), 0);
	assert_int_equal(hwt_sym_obj_open(cl, path, NULL, 0, &lib), 0);
	assert_int_equal(hwt_sym_obj_open(ca, path, NULL, 0, &aut), 0);
	assert_int_equal(hwt_sym_obj_section(nat, ".text", &lo, &size), 0);
	assert_true(size > 64);
	for (uint64_t a = lo - 16; a < lo + size + 16; a++) {
		struct hwt_sym_frame f[4];
		struct hwt_sym_info i;

		compare_addr(nat, lib, a, 0, &t);
		compare_addr(nat, lib, a, HWT_SYM_RAW | HWT_SYM_NEAREST, &t);
		if (a % 7 == 0)
			compare_addr(nat, lib, a, HWT_SYM_NO_INLINE, &t);
		hwt_sym_lookup(aut, a, 0, &i, f, 4);
	}
	fprintf(stderr, "%s: %u DWARF answers, %u with inlined frames, %u with columns\n", name,
		t.dwarf, t.inlined, t.columns);
	/* the comparison covered real DWARF answers, inline chains included */
	assert_true(t.dwarf > size / 2);
	assert_true(t.inlined >= min_inlined);
	/* each reader indexed what it was told to; AUTO needed no libdwarf */
	assert_int_equal(hwt_sym_obj_info(nat, &info), 0);
	assert_true(info.dwarf_units_native >= 1);
	assert_int_equal(info.dwarf_units_libdwarf, 0);
	assert_int_equal(hwt_sym_obj_info(lib, &info), 0);
	assert_int_equal(info.dwarf_units_native, 0);
	assert_true(info.dwarf_units_libdwarf >= 1);
	assert_int_equal(hwt_sym_obj_info(aut, &info), 0);
	assert_true(info.dwarf_units_native >= 1);
	assert_int_equal(info.dwarf_units_libdwarf, 0);
	hwt_sym_cache_free(cn);
	hwt_sym_cache_free(cl);
	hwt_sym_cache_free(ca);
}

static void test_readers_agree_c(void **state)
{
	static const char *const progs[] = {
	    "sym_inline_pie",	/* DWARF 5 */
	    "sym_inline_nopie", /* DWARF 5, non-PIE */
	    "sym_inline_dwarf4", "sym_inline_dwarf3",
	    "sym_inline_dwarf2", "sym_inline_zlib", /* SHF_COMPRESSED */
	    "sym_inline_zdebug",		    /* .zdebug, DWARF 5 range lists */
	};
	(void)state;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		compare_program(progs[i], 50);
	compare_program("libsym_lib.so", 0);
}

static void test_readers_agree_cxx(void **state)
{
	(void)state;
	compare_program("sym_cxx", 20);
	compare_program("sym_cxx_dwarf4", 20);
}

/* ------------------------------------------------------------------------ */
/* Batches                                                                    */

static void batch_equals_single(struct hwt_sym_obj *obj, const uint64_t *addrs, size_t n)
{
	enum { F = 8 };
	struct hwt_sym_batch_entry *out = calloc(n, sizeof(*out));
	struct hwt_sym_frame *frames = calloc(n * F, sizeof(*frames));
	unsigned dwarf = 0;

	assert_non_null(out);
	assert_non_null(frames);
	assert_true(hwt_sym_lookup_batch(obj, addrs, n, 0, out, frames, F) > 0);
	for (size_t i = 0; i < n; i++) {
		struct hwt_sym_frame one[F];
		struct hwt_sym_info info;
		int r = hwt_sym_lookup(obj, addrs[i], 0, &info, one, F);

		assert_int_equal(out[i].status, r);
		assert_int_equal(out[i].info.depth, info.depth);
		dwarf += info.source == HWT_SYM_SRC_DWARF;
		for (int k = 0; k < r; k++) {
			assert_ptr_equal(frames[i * F + k].func, one[k].func);
			assert_ptr_equal(frames[i * F + k].file, one[k].file);
			assert_int_equal(frames[i * F + k].line, one[k].line);
			assert_int_equal(frames[i * F + k].column, one[k].column);
		}
	}
	assert_true(dwarf > n / 2);
	free(out);
	free(frames);
}

static void test_batch_merge_walk(void **state)
{
	static const char *const progs[] = {"sym_cxx", "sym_inline_pie", "sym_inline_dwarf2"};
	uint64_t seed = hwt_test_seed();

	(void)state;
	for (size_t p = 0; p < sizeof(progs) / sizeof(progs[0]); p++) {
		struct hwt_sym_cache *c = new_cache(HWT_SYM_DWARF_AUTO);
		struct hwt_sym_obj *obj;
		uint64_t lo, size, *addrs;

		assert_int_equal(hwt_sym_obj_open(c, hwt_test_prog(progs[p]), NULL, 0, &obj), 0);
		assert_int_equal(hwt_sym_obj_section(obj, ".text", &lo, &size), 0);
		addrs = calloc(size, sizeof(*addrs));
		assert_non_null(addrs);
		/* sorted, every byte, some repeated: the merge-walk */
		for (uint64_t i = 0; i < size; i++)
			addrs[i] = lo + i - (i % 5 == 4);
		batch_equals_single(obj, addrs, size);
		/* shuffled: searches */
		for (uint64_t i = size - 1; i > 0; i--) {
			uint64_t j = hwt_test_rand(&seed) % (i + 1), t = addrs[i];

			addrs[i] = addrs[j];
			addrs[j] = t;
		}
		batch_equals_single(obj, addrs, size);
		free(addrs);
		hwt_sym_cache_free(c);
	}
}

/* HWT_SYM_FRAMES_ONLY: the same frames, without the symbol search when
 * DWARF names the function. */
static void test_frames_only(void **state)
{
	static const char *const progs[] = {"sym_cxx", "sym_inline_nopie", "libsym_lib.so"};

	(void)state;
	for (size_t p = 0; p < sizeof(progs) / sizeof(progs[0]); p++) {
		struct hwt_sym_cache *c = new_cache(HWT_SYM_DWARF_AUTO);
		struct hwt_sym_obj *obj;
		uint64_t lo, size;
		unsigned skipped = 0;

		assert_int_equal(hwt_sym_obj_open(c, hwt_test_prog(progs[p]), NULL, 0, &obj), 0);
		assert_int_equal(hwt_sym_obj_section(obj, ".text", &lo, &size), 0);
		for (uint64_t a = lo - 8; a < lo + size + 8; a++) {
			for (unsigned base = 0; base <= HWT_SYM_NEAREST; base += HWT_SYM_NEAREST) {
				struct hwt_sym_frame f1[16], f2[16];
				struct hwt_sym_info i1, i2;
				int n1 = hwt_sym_lookup(obj, a, base, &i1, f1, 16);
				int n2 =
				    hwt_sym_lookup(obj, a, base | HWT_SYM_FRAMES_ONLY, &i2, f2, 16);

				assert_int_equal(n1, n2);
				assert_int_equal(i1.depth, i2.depth);
				assert_int_equal(i1.source, i2.source);
				for (int k = 0; k < n1; k++) {
					assert_ptr_equal(f1[k].func, f2[k].func);
					assert_ptr_equal(f1[k].file, f2[k].file);
					assert_int_equal(f1[k].line, f2[k].line);
				}
				if (i2.symbol == NULL && i1.symbol != NULL)
					skipped++;
				else
					assert_ptr_equal(i1.symbol, i2.symbol);
			}
		}
		fprintf(stderr, "%s: symbol search skipped for %u of %llu lookups\n", progs[p],
			skipped, (unsigned long long)(2 * (size + 16)));
		/* the search was skipped where DWARF named the function */
		assert_true(skipped > 80);
		hwt_sym_cache_free(c);
	}
}

/* A unit whose line rows do not fit the compact row layout (line numbers
 * past 2^24, from a #line directive) is kept in the wide layout, with the
 * same answers as binutils and as libdwarf. */
static void test_wide_rows(void **state)
{
	char dir[2048], src[4096], prog[4096];
	struct hwt_test_run r, ref, ours;
	struct hwt_sym_cache *cn = new_cache(HWT_SYM_DWARF_NATIVE);
	struct hwt_sym_cache *cl = new_cache(HWT_SYM_DWARF_LIBDWARF);
	struct hwt_sym_obj *nat, *lib;
	struct tally t = {0};
	uint64_t lo, size;
	unsigned wide_col = 0;
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/wide", tmp);
	hwt_test_run(&r, "mkdir -p '%s'", dir);
	hwt_test_run_free(&r);
	snprintf(src, sizeof(src), "%s/wide.c", dir);
	snprintf(prog, sizeof(prog), "%s/wide", dir);
	f = fopen(src, "w");
	assert_non_null(f);
	fprintf(f, "static inline int twice(int x) { return 2 * x; }\n"
		   "#line 20000000\n"
		   "__attribute__((noinline)) int far(int n)\n{\n\tint s = 0;\n"
		   "\tfor (int i = 0; i < n; i++)\n\t\ts += twice(i) ^ n;\n\treturn s;\n}\n"
		   "int main(int argc, char **argv) { (void)argv; return far(argc); }\n");
	fclose(f);
	hwt_test_run(&r, "gcc -O2 -g -o '%s' '%s'", prog, src);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);
	hwt_test_run(&ref,
		     "objdump -d '%1$s' | sed -n 's/^ *\\([0-9a-f]*\\):.*/\\1/p' | "
		     "addr2line -a -f -i -e '%1$s'",
		     prog);
	hwt_test_run(&ours,
		     "objdump -d '%1$s' | sed -n 's/^ *\\([0-9a-f]*\\):.*/\\1/p' | "
		     "'%2$s' addr2line -a -f -i -e '%1$s'",
		     prog, hwt_test_hwtrace());
	assert_int_equal(ours.status, 0);
	assert_string_equal(ours.out, ref.out);
	assert_true(hwt_test_contains(ours.out, "\nfar\n"));
	hwt_test_run_free(&ref);
	hwt_test_run_free(&ours);
	assert_int_equal(hwt_sym_obj_open(cn, prog, NULL, 0, &nat), 0);
	assert_int_equal(hwt_sym_obj_open(cl, prog, NULL, 0, &lib), 0);
	assert_int_equal(hwt_sym_obj_section(nat, ".text", &lo, &size), 0);
	for (uint64_t a = lo; a < lo + size; a++) {
		struct hwt_sym_frame fr[4];
		struct hwt_sym_info in;

		compare_addr(nat, lib, a, 0, &t);
		if (hwt_sym_lookup(nat, a, 0, &in, fr, 4) > 0 && fr[0].line > 0xffffff)
			wide_col++;
	}
	/* the rows past line 2^24 are there, and answered */
	assert_true(wide_col > 0);
	assert_true(t.dwarf > 20);
	hwt_sym_cache_free(cn);
	hwt_sym_cache_free(cl);
}

/* ------------------------------------------------------------------------ */
/* Relocatable objects                                                        */

static const char module_c[] =
    "/* a module-like object: static and inline functions, init/exit sections */\n"
    "struct dev { int id; unsigned flags; int count; };\n"
    "static struct dev devs[4];\n"
    "static inline int dev_busy(const struct dev *d) { return (d->flags & 1u) && d->count > 0; }\n"
    "static inline int dev_score(const struct dev *d) { return dev_busy(d) ? d->count * 3 : d->id; "
    "}\n"
    "__attribute__((noinline)) int mod_poll(int n)\n"
    "{\n"
    "	int s = 0;\n"
    "	for (int i = 0; i < n; i++)\n"
    "		s += dev_score(&devs[i & 3]);\n"
    "	return s;\n"
    "}\n"
    "__attribute__((cold, noinline)) int mod_error(int code) { return -code * 7; }\n"
    "__attribute__((section(\".init.text\"))) int mod_init(void)\n"
    "{\n"
    "	for (int i = 0; i < 4; i++) { devs[i].id = i; devs[i].flags = (unsigned)i & 1u; "
    "devs[i].count = i; }\n"
    "	return mod_poll(4) > 100 ? mod_error(22) : 0;\n"
    "}\n"
    "__attribute__((section(\".exit.text\"))) void mod_exit(void) { devs[0].count = "
    "dev_score(&devs[1]); }\n";

static void test_relocatable_object(void **state)
{
	static const char *const variants[] = {
	    "-g",
	    "-gdwarf-4",
	    "-g -ffunction-sections",
	    "-gdwarf-4 -ffunction-sections -gz",
	    /* ELFCLASS32, SHT_REL: addends in place */
	    "-m32 -g",
	    "-m32 -gdwarf-4 -ffunction-sections",
	};
	char dir[2048], src[4096], obj[4096], addrs[4096];
	struct hwt_test_run r, ref, ours;
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/mod", tmp);
	hwt_test_run(&r, "mkdir -p '%s'", dir);
	hwt_test_run_free(&r);
	snprintf(src, sizeof(src), "%s/mod.c", dir);
	snprintf(obj, sizeof(obj), "%s/mod.o", dir);
	snprintf(addrs, sizeof(addrs), "%s/addrs", dir);
	hwt_test_write_file(src, module_c, strlen(module_c));
	/* Every byte of the code. (Address 0 can be the start of .bss when
	 * .text is empty; binutils then reports the variable there, a data
	 * lookup we do not do.) */
	f = fopen(addrs, "w");
	assert_non_null(f);
	for (unsigned a = 1; a < 0x190; a++)
		fprintf(f, "%x\n", a);
	fclose(f);
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		struct hwt_sym_cache *cn = new_cache(HWT_SYM_DWARF_NATIVE);
		struct hwt_sym_cache *cl = new_cache(HWT_SYM_DWARF_LIBDWARF);
		struct hwt_sym_obj *nat, *lib;
		struct hwt_sym_obj_info info;
		struct tally t = {0};

		hwt_test_run(&r, "cd '%s' && gcc -c -O2 %s mod.c -o mod.o", dir, variants[v]);
		if (r.status != 0 && strstr(variants[v], "-m32")) {
			/* the compiler cannot target i386 here: say so, go on */
			fprintf(stderr, "skipped: gcc -c %s failed: %s", variants[v], r.err);
			hwt_test_run_free(&r);
			hwt_sym_cache_free(cn);
			hwt_sym_cache_free(cl);
			continue;
		}
		assert_int_equal(r.status, 0);
		hwt_test_run_free(&r);
		hwt_test_run(&ref, "addr2line -a -f -i -e '%s' < '%s'", obj, addrs);
		hwt_test_run(&ours, "'%s' addr2line -a -f -i -e '%s' < '%s'", hwt_test_hwtrace(),
			     obj, addrs);
		assert_int_equal(ref.status, 0);
		assert_int_equal(ours.status, 0);
		if (strcmp(ref.out, ours.out) != 0) {
			char a[4096], b[4096];
			struct hwt_test_run d;

			snprintf(a, sizeof(a), "%s/ref.out", dir);
			snprintf(b, sizeof(b), "%s/ours.out", dir);
			hwt_test_write_file(a, ref.out, ref.out_len);
			hwt_test_write_file(b, ours.out, ours.out_len);
			hwt_test_run(&d, "diff '%s' '%s' | head -30", a, b);
			fprintf(stderr, "gcc -c %s: differs from binutils:\n%s\n", variants[v],
				d.out);
			hwt_test_run_free(&d);
			fail();
		}
		/* real answers from several sections (an address finds the
		 * first section, in order, that holds it and answers: .exit.text
		 * is behind the others), with inline chains */
		assert_true(hwt_test_contains(ours.out, "\nmod_poll\n"));
		assert_true(hwt_test_contains(ours.out, "\nmod_init\n"));
		assert_true(hwt_test_contains(ours.out, "\ndev_busy\n"));
		assert_true(hwt_test_contains(ours.out, "/mod.c:10\n"));
		hwt_test_run_free(&ref);
		hwt_test_run_free(&ours);

		assert_int_equal(hwt_sym_obj_open(cn, obj, NULL, 0, &nat), 0);
		assert_int_equal(hwt_sym_obj_open(cl, obj, NULL, 0, &lib), 0);
		assert_int_equal(hwt_sym_obj_info(nat, &info), 0);
		assert_int_equal(info.elf_type, 1 /* ET_REL */);
		for (uint64_t a = 1; a < 0x190; a++) {
			compare_addr(nat, lib, a, 0, &t);
			compare_addr(nat, lib, a, HWT_SYM_RAW | HWT_SYM_NEAREST, &t);
		}
		assert_true(t.dwarf > 100);
		assert_true(t.inlined > 10);
		hwt_sym_cache_free(cn);
		hwt_sym_cache_free(cl);
	}
}

/* ------------------------------------------------------------------------ */
/* Per-unit fallback                                                          */

/* Two units of hand-written DWARF 4 around gas-generated line tables. Unit
 * 1 names its abstract inline function with DW_FORM_indirect (the native
 * reader declines it when it builds the unit); unit 2 names itself with
 * DW_FORM_indirect (declined when units are listed). */
static const char fallback_s[] =
    "	.file 1 \"fb.c\"\n"
    "	.text\n"
    "	.globl fb_outer1\n"
    "	.type fb_outer1, @function\n"
    "fb_outer1:\n"
    ".Lo1:\n"
    "	.loc 1 10 3\n"
    "	movl %edi, %eax\n"
    ".Li1:\n"
    "	.loc 1 3 5\n"
    "	addl $1, %eax\n"
    "	.loc 1 4 5\n"
    "	imull %eax, %eax\n"
    ".Li1e:\n"
    "	.loc 1 11 3\n"
    "	addl %edi, %eax\n"
    "	ret\n"
    ".Lo1e:\n"
    "	.size fb_outer1, .-fb_outer1\n"
    "	.globl fb_outer2\n"
    "	.type fb_outer2, @function\n"
    "fb_outer2:\n"
    ".Lo2:\n"
    "	.loc 1 20 3\n"
    "	movl %edi, %eax\n"
    "	.loc 1 21 3\n"
    "	subl $2, %eax\n"
    "	ret\n"
    ".Lo2e:\n"
    "	.size fb_outer2, .-fb_outer2\n"
    "	.section .debug_abbrev,\"\",@progbits\n"
    ".Labbrev:\n"
    /* 1: unit: name string, comp_dir string, language, low_pc, high_pc, stmt_list */
    "	.uleb128 1\n	.uleb128 0x11\n	.byte 1\n"
    "	.uleb128 0x3\n	.uleb128 0x8\n	.uleb128 0x1b\n	.uleb128 0x8\n"
    "	.uleb128 0x13\n	.uleb128 0xb\n	.uleb128 0x11\n	.uleb128 0x1\n"
    "	.uleb128 0x12\n	.uleb128 0x7\n	.uleb128 0x10\n	.uleb128 0x17\n"
    "	.uleb128 0\n	.uleb128 0\n"
    /* 2: abstract subprogram: name indirect, inline data1 */
    "	.uleb128 2\n	.uleb128 0x2e\n	.byte 0\n"
    "	.uleb128 0x3\n	.uleb128 0x16\n	.uleb128 0x20\n	.uleb128 0xb\n"
    "	.uleb128 0\n	.uleb128 0\n"
    /* 3: subprogram: name string, low_pc, high_pc data8 */
    "	.uleb128 3\n	.uleb128 0x2e\n	.byte 1\n"
    "	.uleb128 0x3\n	.uleb128 0x8\n	.uleb128 0x11\n	.uleb128 0x1\n"
    "	.uleb128 0x12\n	.uleb128 0x7\n"
    "	.uleb128 0\n	.uleb128 0\n"
    /* 4: inlined subroutine: abstract_origin ref4, low_pc, high_pc, call file/line/column */
    "	.uleb128 4\n	.uleb128 0x1d\n	.byte 0\n"
    "	.uleb128 0x31\n	.uleb128 0x13\n	.uleb128 0x11\n	.uleb128 0x1\n"
    "	.uleb128 0x12\n	.uleb128 0x7\n	.uleb128 0x58\n	.uleb128 0xb\n"
    "	.uleb128 0x59\n	.uleb128 0xb\n	.uleb128 0x57\n	.uleb128 0xb\n"
    "	.uleb128 0\n	.uleb128 0\n"
    /* 5: unit named with DW_FORM_indirect */
    "	.uleb128 5\n	.uleb128 0x11\n	.byte 1\n"
    "	.uleb128 0x3\n	.uleb128 0x16\n	.uleb128 0x1b\n	.uleb128 0x8\n"
    "	.uleb128 0x13\n	.uleb128 0xb\n	.uleb128 0x11\n	.uleb128 0x1\n"
    "	.uleb128 0x12\n	.uleb128 0x7\n	.uleb128 0x10\n	.uleb128 0x17\n"
    "	.uleb128 0\n	.uleb128 0\n"
    "	.uleb128 0\n"
    "	.section .debug_info,\"\",@progbits\n"
    ".Lcu1:\n"
    "	.long .Lcu1e - .Lcu1 - 4\n	.value 4\n	.long .Labbrev\n	.byte 8\n"
    "	.uleb128 1\n	.string \"fb.c\"\n	.string \"/fb\"\n	.byte 0xc\n"
    "	.quad .Lo1\n	.quad .Lo1e - .Lo1\n	.long .Ldebug_line0\n"
    ".Linner:\n"
    "	.uleb128 2\n	.uleb128 0x8\n	.string \"fb_inner1\"\n	.byte 3\n"
    "	.uleb128 3\n	.string \"fb_outer1\"\n	.quad .Lo1\n	.quad .Lo1e - .Lo1\n"
    "	.uleb128 4\n	.long .Linner - .Lcu1\n	.quad .Li1\n	.quad .Li1e - .Li1\n"
    "	.byte 1\n	.byte 10\n	.byte 7\n"
    "	.byte 0\n" /* end of fb_outer1's children */
    "	.byte 0\n" /* end of the unit */
    ".Lcu1e:\n"
    ".Lcu2:\n"
    "	.long .Lcu2e - .Lcu2 - 4\n	.value 4\n	.long .Labbrev\n	.byte 8\n"
    "	.uleb128 5\n	.uleb128 0x8\n	.string \"fb2.c\"\n	.string \"/fb\"\n	.byte 0xc\n"
    "	.quad .Lo2\n	.quad .Lo2e - .Lo2\n	.long .Ldebug_line0\n"
    "	.uleb128 3\n	.string \"fb_outer2\"\n	.quad .Lo2\n	.quad .Lo2e - .Lo2\n"
    "	.byte 0\n"
    "	.byte 0\n"
    ".Lcu2e:\n"
    "	.section .debug_line,\"\",@progbits\n"
    ".Ldebug_line0:\n"
    "	.section .note.GNU-stack,\"\",@progbits\n";

static const char fallback_main_c[] =
    "int fb_outer1(int), fb_outer2(int);\n"
    "int main(int argc, char **argv) { (void)argv; return fb_outer1(argc) + fb_outer2(argc); }\n";

static void test_fallback_per_unit(void **state)
{
	char dir[2048], prog[4096], path[4096];
	struct hwt_test_run r, ref, ours;
	struct hwt_sym_cache *ca, *cn, *cl;
	struct hwt_sym_obj *aut, *nat, *lib;
	struct hwt_sym_obj_info info;
	struct hwt_sym_frame f[8];
	struct hwt_sym_info in;
	uint64_t o1, o2;
	int n;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/fb", tmp);
	snprintf(prog, sizeof(prog), "%s/fb", dir);
	hwt_test_run(&r, "mkdir -p '%s'", dir);
	hwt_test_run_free(&r);
	snprintf(path, sizeof(path), "%s/fb.s", dir);
	hwt_test_write_file(path, fallback_s, strlen(fallback_s));
	snprintf(path, sizeof(path), "%s/main.c", dir);
	hwt_test_write_file(path, fallback_main_c, strlen(fallback_main_c));
	hwt_test_run(&r, "cd '%s' && gcc -O2 -o fb main.c fb.s", dir);
	if (r.status != 0)
		fprintf(stderr, "%s", r.err);
	assert_int_equal(r.status, 0);
	hwt_test_run_free(&r);

	/* binutils reads DW_FORM_indirect: the whole output must match */
	hwt_test_run(&r, "nm '%s' | sed -n 's/^\\([0-9a-f]*\\) T fb_outer[12]$/\\1/p'", prog);
	assert_int_equal(
	    sscanf(r.out, "%llx %llx", (unsigned long long *)&o1, (unsigned long long *)&o2), 2);
	hwt_test_run_free(&r);
	snprintf(path, sizeof(path), "%s/addrs", dir);
	{
		FILE *fa = fopen(path, "w");

		assert_non_null(fa);
		for (uint64_t a = o1; a < o2 + 12; a++)
			fprintf(fa, "%llx\n", (unsigned long long)a);
		fclose(fa);
	}
	hwt_test_run(&ref, "addr2line -a -f -i -e '%s' < '%s'", prog, path);
	hwt_test_run(&ours, "'%s' addr2line -a -f -i -e '%s' < '%s'", hwt_test_hwtrace(), prog,
		     path);
	assert_int_equal(ref.status, 0);
	assert_int_equal(ours.status, 0);
	if (strcmp(ref.out, ours.out) != 0)
		fprintf(stderr, "binutils:\n%s\nhwtrace:\n%s\n", ref.out, ours.out);
	assert_string_equal(ours.out, ref.out);
	/* and the answer has the inline chain from the declined unit */
	assert_true(hwt_test_contains(ours.out, "fb_inner1\n/fb/fb.c:4\nfb_outer1\n/fb/fb.c:10\n"));
	hwt_test_run_free(&ref);
	hwt_test_run_free(&ours);

	/* AUTO: both units indexed by libdwarf */
	ca = new_cache(HWT_SYM_DWARF_AUTO);
	assert_int_equal(hwt_sym_obj_open(ca, prog, NULL, 0, &aut), 0);
	n = hwt_sym_lookup(aut, o1 + 3, 0, &in, f, 8); /* addl: inside fb_inner1 */
	assert_int_equal(n, 2);
	assert_string_equal(f[0].func, "fb_inner1");
	assert_int_equal(f[0].line, 3);
	assert_int_equal(f[0].column, 5);
	assert_string_equal(f[1].func, "fb_outer1");
	assert_int_equal(f[1].line, 10);
	assert_int_equal(f[1].column, 7);
	n = hwt_sym_lookup(aut, o2 + 2, 0, &in, f, 8);
	assert_int_equal(n, 1);
	assert_int_equal(in.source, HWT_SYM_SRC_DWARF);
	assert_string_equal(f[0].func, "fb_outer2");
	assert_int_equal(f[0].line, 21);
	assert_int_equal(hwt_sym_obj_info(aut, &info), 0);
	assert_int_equal(info.dwarf_units, 2);
	assert_int_equal(info.dwarf_units_native, 0);
	assert_int_equal(info.dwarf_units_libdwarf, 2);

	/* NATIVE alone: unit 2 is not listed, unit 1 cannot be built: the
	 * symbol table answers */
	cn = new_cache(HWT_SYM_DWARF_NATIVE);
	assert_int_equal(hwt_sym_obj_open(cn, prog, NULL, 0, &nat), 0);
	n = hwt_sym_lookup(nat, o1 + 3, 0, &in, f, 8);
	assert_int_equal(n, 1);
	assert_int_equal(in.source, HWT_SYM_SRC_SYMTAB);
	assert_string_equal(f[0].func, "fb_outer1");
	n = hwt_sym_lookup(nat, o2 + 2, 0, &in, f, 8);
	assert_int_equal(n, 1);
	assert_int_equal(in.source, HWT_SYM_SRC_SYMTAB);
	assert_int_equal(hwt_sym_obj_info(nat, &info), 0);
	assert_int_equal(info.dwarf_units, 1);
	assert_int_equal(info.dwarf_units_native, 0);
	assert_int_equal(info.dwarf_units_libdwarf, 0);

	/* LIBDWARF alone answers as AUTO did */
	cl = new_cache(HWT_SYM_DWARF_LIBDWARF);
	assert_int_equal(hwt_sym_obj_open(cl, prog, NULL, 0, &lib), 0);
	for (uint64_t a = o1; a < o2 + 12; a++) {
		struct hwt_sym_frame fa[8], fl[8];
		struct hwt_sym_info ia, il;
		int na = hwt_sym_lookup(aut, a, 0, &ia, fa, 8);
		int nl = hwt_sym_lookup(lib, a, 0, &il, fl, 8);

		assert_int_equal(na, nl);
		for (int i = 0; i < na; i++) {
			assert_string_equal(fa[i].func ? fa[i].func : "-",
					    fl[i].func ? fl[i].func : "-");
			assert_int_equal(fa[i].line, fl[i].line);
		}
	}
	hwt_sym_cache_free(ca);
	hwt_sym_cache_free(cn);
	hwt_sym_cache_free(cl);
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
	    cmocka_unit_test(test_readers_agree_c),   cmocka_unit_test(test_readers_agree_cxx),
	    cmocka_unit_test(test_batch_merge_walk),  cmocka_unit_test(test_frames_only),
	    cmocka_unit_test(test_wide_rows),	      cmocka_unit_test(test_relocatable_object),
	    cmocka_unit_test(test_fallback_per_unit),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
