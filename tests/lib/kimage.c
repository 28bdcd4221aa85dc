/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/kimage.c - a kernel-like image as /proc would show it, and
 * emulated recordings rewritten with kernel trace (see kimage.h).
 */
#include "tests/lib/kimage.h"

#include <errno.h>
#include <intel-pt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hwt.h"
#include "format/format.h"

static int slurp(const char *path, uint8_t **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;

	*data = NULL;
	*len = 0;
	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
		fclose(f);
		return -EIO;
	}
	*data = malloc((size_t)n + 1);
	if (!*data || fread(*data, 1, (size_t)n, f) != (size_t)n) {
		free(*data);
		*data = NULL;
		fclose(f);
		return -EIO;
	}
	fclose(f);
	*len = (size_t)n;
	return 0;
}

int kimage_read(const char *elf, uint8_t **kcore, size_t *kcore_len, char **syms)
{
	uint8_t *e, *k;
	size_t len, nload = 0, total = 64;
	uint64_t phoff, shoff;
	uint16_t phnum, shnum;
	struct hwt_buf s;
	int err = slurp(elf, &e, &len);

	*kcore = NULL;
	*syms = NULL;
	if (err < 0)
		return err;
	if (len < 64 || memcmp(e, "\177ELF", 4) || e[4] != 2) {
		free(e);
		return -HWT_EFORMAT;
	}
	phoff = hwt_le64(e + 32);
	shoff = hwt_le64(e + 40);
	phnum = hwt_le16(e + 56);
	shnum = hwt_le16(e + 60);
	if (phoff + 56ull * phnum > len || shoff + 64ull * shnum > len) {
		free(e);
		return -HWT_EFORMAT;
	}
	/* the executable PT_LOADs, as kcore's segments */
	for (uint16_t i = 0; i < phnum; i++) {
		const uint8_t *ph = e + phoff + 56ull * i;

		if (hwt_le32(ph) == 1 && (hwt_le32(ph + 4) & 1)) {
			nload++;
			total += 56 + (size_t)hwt_le64(ph + 32);
		}
	}
	k = calloc(1, total);
	if (!k) {
		free(e);
		return -ENOMEM;
	}
	memcpy(k, "\177ELF", 4);
	k[4] = 2;
	k[5] = 1;
	k[6] = 1;
	hwt_put_le16(k + 16, 4); /* ET_CORE */
	hwt_put_le16(k + 18, 62);
	hwt_put_le64(k + 32, 64);
	hwt_put_le16(k + 52, 64);
	hwt_put_le16(k + 54, 56);
	hwt_put_le16(k + 56, (uint16_t)nload);
	for (size_t i = 0, n = 0, at = 64 + 56 * nload; i < phnum; i++) {
		const uint8_t *ph = e + phoff + 56ull * i;
		uint8_t *o = k + 64 + 56 * n;
		uint64_t size = hwt_le64(ph + 32), off = hwt_le64(ph + 8);

		if (hwt_le32(ph) != 1 || !(hwt_le32(ph + 4) & 1))
			continue;
		if (off + size > len) {
			free(k);
			free(e);
			return -HWT_EFORMAT;
		}
		hwt_put_le32(o, 1);
		hwt_put_le32(o + 4, 5);
		hwt_put_le64(o + 8, at);
		hwt_put_le64(o + 16, hwt_le64(ph + 16));
		hwt_put_le64(o + 32, size);
		hwt_put_le64(o + 40, size);
		memcpy(k + at, e + off, (size_t)size);
		at += (size_t)size;
		n++;
	}
	/* the symbol table, as kallsyms */
	hwt_buf_init(&s);
	for (uint16_t i = 0; i < shnum; i++) {
		const uint8_t *sh = e + shoff + 64ull * i;
		const uint8_t *strsh;
		uint64_t off = hwt_le64(sh + 24), size = hwt_le64(sh + 32);

		if (hwt_le32(sh + 4) != 2 /* SHT_SYMTAB */ || hwt_le32(sh + 40) >= shnum)
			continue;
		strsh = e + shoff + 64ull * hwt_le32(sh + 40);
		for (uint64_t at = off; at + 24 <= off + size && at + 24 <= len; at += 24) {
			uint64_t name = hwt_le64(strsh + 24) + hwt_le32(e + at);

			if (!hwt_le32(e + at) || name >= len || !hwt_le64(e + at + 8))
				continue;
			if (hwt_buf_printf(&s, "%016llx T %s\n",
					   (unsigned long long)hwt_le64(e + at + 8),
					   (const char *)e + name) < 0) {
				hwt_buf_fini(&s);
				free(k);
				free(e);
				return -ENOMEM;
			}
		}
	}
	free(e);
	if (hwt_buf_append(&s, "", 1) < 0) {
		hwt_buf_fini(&s);
		free(k);
		return -ENOMEM;
	}
	*kcore = k;
	*kcore_len = total;
	*syms = (char *)s.data;
	return 0;
}

static int write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return -errno;
	if (len && fwrite(data, 1, len, f) != len) {
		fclose(f);
		return -EIO;
	}
	return fclose(f) == 0 ? 0 : -EIO;
}

int kimage_proc(const char *elf, const char *dir)
{
	uint8_t *kcore;
	size_t klen;
	char *syms;
	int err = kimage_read(elf, &kcore, &klen, &syms);

	if (err < 0)
		return err;
	err = write_file(dir, "kcore", kcore, klen);
	if (!err)
		err = write_file(dir, "kallsyms", syms, strlen(syms));
	if (!err)
		err = write_file(dir, "modules", "", 0);
	free(kcore);
	free(syms);
	return err;
}

/* ------------------------------------------------------------------------ */
/* Rewriting a user-space trace as a user + kernel one                      */

static uint64_t full_ip(const struct pt_packet_ip *ip, uint64_t last)
{
	switch (ip->ipc) {
	case pt_ipc_update_16:
		return (last & ~0xffffull) | (ip->ip & 0xffff);
	case pt_ipc_update_32:
		return (last & ~0xffffffffull) | (ip->ip & 0xffffffff);
	case pt_ipc_update_48:
		return (last & ~0xffffffffffffull) | (ip->ip & 0xffffffffffffull);
	case pt_ipc_sext_48:
		return (uint64_t)((int64_t)(ip->ip << 16) >> 16);
	case pt_ipc_full:
		return ip->ip;
	default:
		return last;
	}
}

/* Encodes one packet at *pos of out (grown as needed). */
static int put(struct hwt_buf *out, const struct pt_packet *p)
{
	struct pt_config cfg;
	struct pt_encoder *enc;
	uint8_t tmp[32];
	int n;

	pt_config_init(&cfg);
	cfg.begin = tmp;
	cfg.end = tmp + sizeof(tmp);
	enc = pt_alloc_encoder(&cfg);
	if (!enc)
		return -ENOMEM;
	n = pt_enc_next(enc, p);
	pt_free_encoder(enc);
	if (n < 0)
		return -HWT_EINTERNAL;
	return hwt_buf_append(out, tmp, (size_t)n);
}

static int put_ip(struct hwt_buf *out, enum pt_packet_type type, uint64_t ip)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = ip & 0xffffffffffffull;
	return put(out, &p);
}

/* The trace of one system call through the image (kern_image.S):
 * SYSCALL -> TIP(entry_SYSCALL_64); call do_syscall_64 (direct); its jnz
 * taken, taken, not taken; ret (compressed: taken); sysretq ->
 * TIP(back). */
static int kernel_entry(struct hwt_buf *out, uint64_t entry, uint64_t back)
{
	struct pt_packet p;
	int err = put_ip(out, ppt_tip, entry);

	memset(&p, 0, sizeof(p));
	p.type = ppt_tnt_8;
	p.payload.tnt.bit_size = 4;
	p.payload.tnt.payload = 0xd; /* T T N T, oldest first */
	if (err >= 0)
		err = put(out, &p);
	if (err >= 0)
		err = put_ip(out, ppt_tip, back);
	return err;
}

static int rewrite(const uint8_t *in, size_t len, uint64_t entry, struct hwt_buf *out,
		   uint64_t *syscalls)
{
	struct pt_config cfg;
	struct pt_packet_decoder *dec;
	struct pt_packet p;
	enum pt_packet_type prev = ppt_invalid;
	uint64_t last = 0, off;
	bool in_kernel = false;
	int err = 0;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)(uintptr_t)in;
	cfg.end = (uint8_t *)(uintptr_t)in + len;
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec)
		return -ENOMEM;
	if (pt_pkt_sync_set(dec, 0) < 0) {
		pt_pkt_free_decoder(dec);
		return -HWT_EFORMAT;
	}
	while (err >= 0 && pt_pkt_get_offset(dec, &off) == 0) {
		int n = pt_pkt_next(dec, &p, sizeof(p));

		if (n == -pte_eos)
			break;
		if (n < 0) {
			err = -HWT_EFORMAT;
			break;
		}
		switch (p.type) {
		case ppt_psb:
			last = 0;
			err = hwt_buf_append(out, in + off, (size_t)n);
			break;
		case ppt_fup:
		case ppt_tip:
		case ppt_tip_pge:
		case ppt_tip_pgd: {
			bool suppressed = p.payload.ip.ipc == pt_ipc_suppressed;
			uint64_t ip = full_ip(&p.payload.ip, last);

			if (!suppressed)
				last = ip;
			if (p.type == ppt_tip_pgd && suppressed && prev != ppt_fup && !in_kernel) {
				in_kernel = true; /* a system call: its return tells where */
				break;
			}
			if (in_kernel && p.type == ppt_tip_pge) {
				in_kernel = false;
				(*syscalls)++;
				err = kernel_entry(out, entry, ip);
				break;
			}
			if (suppressed)
				err = hwt_buf_append(out, in + off, (size_t)n);
			else
				err = put_ip(out, p.type, ip);
			break;
		}
		case ppt_mode:
			if (!in_kernel)
				err = hwt_buf_append(out, in + off, (size_t)n);
			break;
		default:
			err = hwt_buf_append(out, in + off, (size_t)n);
			break;
		}
		prev = p.type;
	}
	if (in_kernel && err >= 0) {
		/* the last system call did not come back (exit): tracing
		 * stops there, as before */
		static const uint8_t pgd = 0x01;

		err = hwt_buf_append(out, &pgd, 1);
	}
	pt_pkt_free_decoder(dec);
	return err;
}

uint64_t kimage_sym(const char *syms, const char *name)
{
	for (const char *p = syms; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		unsigned long long a;
		char type, sym[128];

		if (sscanf(p, "%llx %c %127s", &a, &type, sym) == 3 && !strcmp(sym, name))
			return a;
	}
	return 0;
}

int kinject_write(const char *in, const char *out, const char *elf, int with_kernel,
		  struct kinject_result *res, char *why, size_t whylen)
{
	struct hwt_fmt_session *s = NULL;
	struct hwt_fmt_writer *w = NULL;
	struct hwt_fmt_record rec;
	uint8_t *kcore = NULL;
	size_t klen;
	char *syms = NULL;
	uint64_t off = 0, entry;
	int sb, err;

	memset(res, 0, sizeof(*res));
	why[0] = '\0';
	err = kimage_read(elf, &kcore, &klen, &syms);
	if (err < 0) {
		snprintf(why, whylen, "%s: cannot read the image: %s", elf, hwt_strerror(err));
		return err;
	}
	entry = kimage_sym(syms, "entry_SYSCALL_64");
	err = hwt_fmt_session_open(&s, in, NULL, &off);
	if (err == 0)
		err = hwt_fmt_writer_open(&w, out, NULL);
	if (err < 0 || !entry) {
		snprintf(why, whylen, "%s -> %s: %s", in, out,
			 entry ? hwt_strerror(err) : "no entry_SYSCALL_64 in the image");
		err = err < 0 ? err : -HWT_EINVAL;
		goto out;
	}
	for (size_t i = 0; err == 0 && i < hwt_fmt_session_nmeta(s); i++) {
		const struct hwt_fmt_meta *m = hwt_fmt_session_meta(s, i);

		if (!strcmp(m->key, "pt.config.kernel"))
			continue; /* below */
		if (m->type == HWT_FMT_META_U64)
			err = hwt_fmt_writer_meta_u64(w, m->key, m->v.u64);
		else if (m->type == HWT_FMT_META_STR)
			err = hwt_fmt_writer_meta_str(w, m->key, m->v.str);
		else if (m->type == HWT_FMT_META_BYTES)
			err = hwt_fmt_writer_meta_bytes(w, m->key, m->v.bytes, m->len);
	}
	if (err == 0)
		err = hwt_fmt_writer_meta_u64(w, "pt.config.kernel", 1);
	if (err == 0 && (with_kernel & KINJECT_MODULE)) {
		char *m = malloc(strlen(syms) + 16), *line = strstr(syms, " do_syscall_64\n");

		if (!m || !line) {
			free(m);
			err = m ? -HWT_EINVAL : -ENOMEM;
		} else {
			line += strlen(" do_syscall_64");
			snprintf(m, strlen(syms) + 16, "%.*s [kern_mod]%s", (int)(line - syms),
				 syms, line);
			free(syms);
			syms = m;
		}
	}
	if (err == 0 && (with_kernel & KINJECT_CODE)) {
		err = hwt_fmt_writer_meta_bytes(w, "kernel.kcore", kcore, klen);
		if (err == 0)
			err = hwt_fmt_writer_meta_bytes(w, "kernel.kallsyms", syms, strlen(syms));
	}
	sb = err == 0 ? hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_RECORDS, -1, -1, "sideband")
		      : -1;
	if (sb < 0)
		err = err < 0 ? err : sb;
	/* every record, but the AUX ones: their offsets were the old stream's */
	while (err == 0 && hwt_fmt_session_next(s, &rec, &off) == 0) {
		if (rec.type != PERF_RECORD_AUX)
			err = hwt_fmt_writer_records(w, (uint32_t)sb, rec.raw, rec.size);
	}
	for (size_t i = 0; err == 0 && i < hwt_fmt_session_naux(s); i++) {
		const struct hwt_fmt_aux_stream *a = hwt_fmt_session_aux(s, i);
		struct hwt_buf bytes, outb;
		int st;

		hwt_buf_init(&bytes);
		hwt_buf_init(&outb);
		for (size_t g = 0; err == 0 && g < a->nsegments; g++) {
			const struct hwt_fmt_aux_segment *seg =
			    hwt_fmt_session_aux_segment(s, i, g);

			err = seg ? hwt_buf_reserve(&bytes, (size_t)seg->size) : -HWT_EFORMAT;
			for (uint64_t from = 0; err == 0 && from < seg->size;) {
				int64_t got =
				    hwt_fmt_session_aux_read(s, i, g, from, bytes.data + bytes.len,
							     (size_t)(seg->size - from));

				if (got <= 0) {
					err = -HWT_EFORMAT;
					break;
				}
				bytes.len += (size_t)got;
				from += (uint64_t)got;
			}
		}
		if (err == 0)
			err = rewrite(bytes.data, bytes.len, entry, &outb, &res->syscalls);
		st = err == 0
			 ? hwt_fmt_writer_add_stream(w, HWT_FMT_STREAM_AUX, a->cpu, a->tid, "pt")
			 : -1;
		if (err == 0 && st < 0)
			err = st;
		if (err == 0 && outb.len)
			err = hwt_fmt_writer_aux(w, (uint32_t)st, 0, outb.data, outb.len);
		res->streams += err == 0;
		hwt_buf_fini(&bytes);
		hwt_buf_fini(&outb);
	}
	if (err < 0 && !why[0])
		snprintf(why, whylen, "%s -> %s: %s", in, out, hwt_strerror(err));
out:
	if (w) {
		int cerr = hwt_fmt_writer_close(w);

		if (err == 0)
			err = cerr;
	}
	hwt_fmt_session_close(s);
	free(kcore);
	free(syms);
	return err;
}
