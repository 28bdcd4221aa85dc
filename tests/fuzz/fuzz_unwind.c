/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/fuzz/fuzz_unwind.c - the unwinder on any registers, stack bytes and
 * CFI. The input is
 *
 *   u32 valid mask, 17 x u64 registers (DWARF numbering), u64 bias,
 *   u64 eh_frame address, u64 eh_frame_hdr address, u64 debug_frame address,
 *   u16 stack length + stack bytes, u16 .eh_frame length + bytes,
 *   u16 .eh_frame_hdr length + bytes, the rest: .debug_frame
 *
 * (short inputs are zero-padded). The three sections go into an ELF image
 * built here and opened through symbolize/ as an in-memory object, which
 * every address maps to (with the bias). The walk must end, with at most
 * its frames, and walking the same input twice gives the same frames (the
 * second from the cached rules). Seeds in corpus/unwind/ are real samples
 * of tests/progs/unw_prog with its real CFI.
 */
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symbolize.h"
#include "unwind/unwind.h"

struct in {
	const uint8_t *p, *end;
};

static uint64_t take(struct in *in, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)(in->p < in->end ? *in->p++ : 0) << (8 * i);
	return v;
}

static const uint8_t *take_bytes(struct in *in, size_t *len)
{
	const uint8_t *p = in->p;
	size_t n = (size_t)take(in, 2);

	p = in->p;
	if (n > (size_t)(in->end - in->p))
		n = (size_t)(in->end - in->p);
	in->p += n;
	*len = n;
	return p;
}

/* An ELF64 image with .eh_frame, .eh_frame_hdr and .debug_frame at the
 * given addresses (a PT_LOAD over the whole file, at address 0). */
static uint8_t *make_elf(const uint8_t *sec[3], const size_t len[3], const uint64_t addr[3],
			 size_t *size)
{
	static const char names[] = "\0.eh_frame\0.eh_frame_hdr\0.debug_frame\0.shstrtab";
	static const unsigned name_off[4] = {1, 11, 25, 38};
	size_t off = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), data_off[3], str_off, sh_off;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf64_Shdr *sh;
	uint8_t *img;

	for (int i = 0; i < 3; i++) {
		data_off[i] = off;
		off += len[i];
	}
	str_off = off;
	off += sizeof(names);
	off = (off + 7) & ~(size_t)7;
	sh_off = off;
	off += 5 * sizeof(Elf64_Shdr);
	img = calloc(1, off);
	if (!img)
		return NULL;
	eh = (Elf64_Ehdr *)img;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_shoff = sh_off;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 5;
	eh->e_shstrndx = 4;
	ph = (Elf64_Phdr *)(img + sizeof(Elf64_Ehdr));
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_filesz = ph->p_memsz = off;
	ph->p_align = 4096;
	for (int i = 0; i < 3; i++)
		memcpy(img + data_off[i], sec[i], len[i]);
	memcpy(img + str_off, names, sizeof(names));
	sh = (Elf64_Shdr *)(img + sh_off);
	for (int i = 0; i < 3; i++) {
		sh[i + 1].sh_name = name_off[i];
		sh[i + 1].sh_type = SHT_PROGBITS;
		sh[i + 1].sh_flags = i < 2 ? SHF_ALLOC : 0;
		sh[i + 1].sh_addr = i < 2 ? addr[i] : 0;
		sh[i + 1].sh_offset = data_off[i];
		sh[i + 1].sh_size = len[i];
		sh[i + 1].sh_addralign = 1;
	}
	sh[4].sh_name = name_off[3];
	sh[4].sh_type = SHT_STRTAB;
	sh[4].sh_offset = str_off;
	sh[4].sh_size = sizeof(names);
	sh[4].sh_addralign = 1;
	*size = off;
	return img;
}

struct ctx {
	struct hwt_sym_obj *obj;
	uint64_t bias;
};

static int find(void *arg, uint64_t ip, struct hwt_unw_module *mod)
{
	const struct ctx *c = arg;

	if (ip == 0xdead)
		return -HWT_ENOSYM; /* an unmapped address, too */
	mod->obj = c->obj;
	mod->bias = c->bias;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, data + size};
	struct hwt_unw_regs regs;
	struct hwt_unw_stack st;
	struct hwt_unw_frame f1[64], f2[64];
	struct hwt_unw_result r1, r2;
	struct hwt_sym_config scfg;
	struct hwt_sym_cache *cache = NULL;
	struct hwt_unw *u = NULL;
	const uint8_t *sec[3];
	size_t len[3], img_size;
	uint64_t addr[3];
	struct ctx c;
	uint8_t *img;
	int n1, n2;

	memset(&regs, 0, sizeof(regs));
	regs.valid = (uint32_t)take(&in, 4) & ((1u << HWT_UNW_NREGS) - 1);
	for (int i = 0; i < HWT_UNW_NREGS; i++)
		regs.r[i] = take(&in, 8);
	c.bias = take(&in, 8);
	addr[0] = take(&in, 8);
	addr[1] = take(&in, 8);
	addr[2] = take(&in, 8);
	st.start = regs.r[HWT_UNW_RSP];
	st.data = take_bytes(&in, &st.size);
	sec[0] = take_bytes(&in, &len[0]);
	sec[1] = take_bytes(&in, &len[1]);
	sec[2] = in.p;
	len[2] = (size_t)(in.end - in.p);
	img = make_elf(sec, len, addr, &img_size);
	if (!img)
		return 0;
	hwt_sym_config_init(&scfg);
	scfg.no_debug_files = true;
	if (hwt_sym_cache_alloc(&scfg, &cache) < 0 ||
	    hwt_sym_obj_open_image(cache, "fuzz", img, img_size, &c.obj) < 0 ||
	    hwt_unw_alloc(NULL, &u) < 0)
		goto out;
	n1 = hwt_unw_walk(u, &regs, &st, find, &c, f1, 64, &r1);
	n2 = hwt_unw_walk(u, &regs, &st, find, &c, f2, 64, &r2);
	if (n1 != n2 || n1 > 64 || (n1 >= 0 && (unsigned)n1 != r1.nframes))
		abort();
	for (int i = 0; i < n1; i++)
		if (f1[i].ip != f2[i].ip || f1[i].exact != f2[i].exact ||
		    f1[i].signal != f2[i].signal)
			abort();
	if (n1 >= 0 && r1.end != r2.end)
		abort();
	if ((unsigned)r1.end >= HWT_UNW_END_COUNT_)
		abort();
out:
	hwt_unw_free(u);
	hwt_sym_cache_free(cache);
	free(img);
	return 0;
}
