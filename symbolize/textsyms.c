/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/textsyms.c - symbol tables that come as text: the kernel's
 * /proc/kallsyms ("ffffffff81000000 T _stext", module symbols with a
 * trailing "[module]") and JIT perf maps (/tmp/perf-PID.map: "START SIZE
 * NAME", hex). The whole text is kept and the names point into it; entries
 * are sorted like an ELF symbol table. kallsyms has no sizes: a symbol
 * reaches up to the next one.
 */
#include "symbolize/sym_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads a whole text file, NUL-terminated. /proc files report size 0, so
 * read until EOF. */
static int read_text(const char *path, char **out, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return -errno;
	for (;;) {
		size_t got;

		if (cap - n < 65536 + 1) {
			char *nb;

			cap = cap ? cap * 2 : 1 << 20;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		int err = -EIO;

		free(buf);
		fclose(f);
		return err;
	}
	fclose(f);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static size_t count_lines(const char *t, size_t len)
{
	size_t n = 1;

	for (size_t i = 0; i < len; i++)
		n += t[i] == '\n';
	return n;
}

/* Parses a hex number without prefix; returns the end or NULL. */
static char *parse_hex(char *p, uint64_t *v)
{
	uint64_t x = 0;
	char *start;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	start = p;
	while (isxdigit((unsigned char)*p)) {
		unsigned d = (unsigned)(isdigit((unsigned char)*p)
					    ? *p - '0'
					    : (tolower((unsigned char)*p) - 'a' + 10));
		if (p - start >= 16)
			return NULL;
		x = (x << 4) | d;
		p++;
	}
	if (p == start)
		return NULL;
	*v = x;
	return p;
}

int sym_kallsyms_load(struct hwt_sym_obj *obj, const char *path)
{
	size_t len, nlines, bad = 0;
	bool any_nonzero = false;
	char *t, *line, *next;
	int err;

	err = read_text(path, &obj->text, &len);
	if (err < 0)
		return err;
	t = obj->text;
	nlines = count_lines(t, len);
	obj->syms = calloc(nlines, sizeof(*obj->syms));
	if (!obj->syms)
		return -ENOMEM;
	for (line = t; line && *line; line = next) {
		uint64_t addr;
		char *p, type, *name, *mod = NULL;
		struct sym_entry *s;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		p = parse_hex(line, &addr);
		if (!p || *p != ' ' || !p[1] || p[2] != ' ' || !p[3]) {
			bad++;
			continue;
		}
		type = p[1];
		name = p + 3;
		p = strchr(name, '\t');
		if (!p)
			p = strchr(name, ' ');
		if (p) {
			*p++ = '\0';
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p == '[') {
				char *end = strchr(p, ']');

				mod = p + 1;
				if (end)
					*end = '\0';
			}
		}
		if (addr)
			any_nonzero = true;
		/* text symbols only: an IP is never in data */
		if (!strchr("tTwW", type))
			continue;
		s = &obj->syms[obj->nsyms++];
		s->addr = addr;
		s->name = name;
		s->module = mod;
		s->index = (uint32_t)(obj->nsyms - 1);
		s->local = type == 't';
		s->weak = type == 'w' || type == 'W';
		s->type = 2; /* STT_FUNC */
	}
	if (!any_nonzero && obj->nsyms)
		return -EACCES; /* kptr_restrict hid the addresses */
	if (obj->nsyms == 0)
		return -HWT_EFORMAT;
	if (bad)
		sym_log(obj, HWT_LOG_WARN, "%s: skipped %zu malformed lines", path, bad);
	sym_symtab_sort(obj);
	obj->sym_source = HWT_SYM_SRC_KALLSYMS;
	return 0;
}

int sym_perfmap_load(struct hwt_sym_obj *obj, const char *path)
{
	size_t len, nlines, bad = 0;
	char *line, *next;
	int err;

	err = read_text(path, &obj->text, &len);
	if (err < 0)
		return err;
	nlines = count_lines(obj->text, len);
	obj->syms = calloc(nlines, sizeof(*obj->syms));
	if (!obj->syms)
		return -ENOMEM;
	for (line = obj->text; line && *line; line = next) {
		uint64_t start, size;
		char *p, *end;
		struct sym_entry *s;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		p = parse_hex(line, &start);
		if (!p || *p != ' ') {
			bad++;
			continue;
		}
		p = parse_hex(p + 1, &size);
		if (!p || *p != ' ' || !p[1]) {
			bad++;
			continue;
		}
		end = p + 1 + strlen(p + 1);
		while (end > p + 1 && (end[-1] == '\r' || end[-1] == ' '))
			*--end = '\0';
		s = &obj->syms[obj->nsyms++];
		s->addr = start;
		s->size = size;
		s->name = p + 1;
		s->index = (uint32_t)(obj->nsyms - 1);
		s->type = 2;
	}
	if (bad)
		sym_log(obj, HWT_LOG_WARN, "%s: skipped %zu malformed lines", path, bad);
	if (obj->nsyms == 0)
		return -HWT_EFORMAT;
	sym_symtab_sort(obj);
	obj->sym_source = HWT_SYM_SRC_PERFMAP;
	return 0;
}
