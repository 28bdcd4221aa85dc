/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_symbolize.c - feeds malformed ELF/DWARF images, kallsyms
 * text and perf maps to the symbolizer: open, look up a spread of addresses
 * (which builds the lazy DWARF index of every unit they touch), find names.
 * The first byte selects the input kind: 'K' kallsyms, 'P' perf map, anything
 * else an ELF image (the byte is part of it). ELF images go through the
 * native DWARF reader (units it declines through libdwarf), and relocatable
 * ones (the .o seeds) through the relocation of their debug sections. No
 * crash, no hang, no leak.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolize/symbolize.h"

static void exercise(struct hwt_sym_obj *obj, const uint8_t *data, size_t size)
{
	struct hwt_sym_frame frames[8];
	struct hwt_sym_info info;
	struct hwt_sym_hint hint;
	struct hwt_sym_func fn;
	struct hwt_sym_def defs[2];
	uint64_t addrs[64];
	struct hwt_sym_batch_entry out[64];
	struct hwt_sym_frame bframes[64 * 2];
	size_t n = 0;

	memset(&hint, 0, sizeof(hint));
	/* low addresses (where small PIE code and relocatable objects' code
	 * live) and values from the input */
	for (uint64_t a = 0; a < 0x3000 && n < 48; a += 0x100)
		addrs[n++] = a + 0x40;
	for (uint64_t a = 1; a < 0x100 && n < 56; a += 0x25)
		addrs[n++] = a;
	for (size_t i = 0; i + 8 <= size && n < 64; i += size / 16 + 8) {
		uint64_t v;

		memcpy(&v, data + i, 8);
		addrs[n++] = v;
	}
	for (size_t i = 0; i < n; i++) {
		hwt_sym_lookup(obj, addrs[i], 0, &info, frames, 8);
		hwt_sym_lookup(obj, addrs[i], HWT_SYM_RAW | HWT_SYM_NEAREST, &info, frames, 8);
		hwt_sym_func_at(obj, addrs[i], 0, &hint, &fn);
	}
	hwt_sym_lookup_batch(obj, addrs, n, HWT_SYM_NO_INLINE, out, bframes, 2);
	hwt_sym_find(obj, "main", defs, 2);
	hwt_sym_find(obj, "f(int)", defs, 2);
}

static int open_text(struct hwt_sym_cache *c, int kind, const uint8_t *data, size_t size,
		     struct hwt_sym_obj **obj)
{
	char path[64];
	int fd = memfd_create("fuzz", 0), err;

	if (fd < 0)
		return -1;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = kind == 'K' ? hwt_sym_obj_open_kallsyms(c, path, obj)
			  : hwt_sym_obj_open_perfmap(c, path, obj);
	close(fd);
	return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_sym_config cfg;
	struct hwt_sym_cache *c;
	struct hwt_sym_obj *obj = NULL;
	int err;

	hwt_sym_config_init(&cfg);
	cfg.no_debug_files = true;
	cfg.system_debug_dir = NULL;
	cfg.max_section_size = 16u << 20; /* keep claimed sizes from eating memory */
	if (hwt_sym_cache_alloc(&cfg, &c) < 0)
		return 0;
	if (size > 0 && (data[0] == 'K' || data[0] == 'P'))
		err = open_text(c, data[0], data + 1, size - 1, &obj);
	else
		err = hwt_sym_obj_open_image(c, "fuzz", data, size, &obj);
	if (err == 0 && obj)
		exercise(obj, data, size);
	hwt_sym_cache_free(c);
	return 0;
}
