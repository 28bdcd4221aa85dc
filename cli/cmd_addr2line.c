/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/cmd_addr2line.c - `hwtrace addr2line`: binutils addr2line's flags and
 * output format on top of the symbolize module, so that it can replace
 * addr2line in scripts and be checked and benchmarked against it. Addresses
 * come from the arguments or, when there are none, from stdin, one per line
 * (hex, or SYMBOL[+OFFSET]). Output is flushed whenever stdin has nothing
 * more to read, so it also works as a coprocess answering one address at a
 * time, without paying a write per address in batch use. Answers are
 * formatted into our own buffer (printf was half the time of a batch).
 */
#include "cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/symbolize.h"

#define MAX_FRAMES 64

/* Output buffer: answers are appended here and written in large pieces. */
struct outbuf {
	size_t len;
	char buf[1 << 16];
};

struct a2l {
	struct hwt_sym_obj *obj;
	struct outbuf *out;
	bool addresses, functions, inlines, pretty, basenames, demangle;
	const char *section;
	uint64_t sec_addr, sec_size;
	unsigned addr_bits;
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: hwtrace addr2line [OPTIONS] [ADDR...]\n"
	    "Convert addresses into file names and line numbers, like binutils addr2line.\n"
	    "With no ADDR, addresses are read from stdin, one per line.\n"
	    "  -a, --addresses          show addresses\n"
	    "  -b, --target=BFDNAME     accepted for compatibility (ELF is detected)\n"
	    "  -e, --exe=FILE           the object (default a.out)\n"
	    "  -i, --inlines            show the functions ADDR was inlined into\n"
	    "  -j, --section=NAME       ADDRs are offsets into section NAME\n"
	    "  -p, --pretty-print       one line per address\n"
	    "  -s, --basenames          strip directory names\n"
	    "  -f, --functions          show function names\n"
	    "  -C, --demangle[=STYLE]   demangle function names (C++, Rust)\n"
	    "  -r, -R                   accepted for compatibility (demangler recursion limit)\n"
	    "      --debug-dir=DIR      look for separate debug files in DIR first\n"
	    "      --kallsyms=FILE      symbolize kernel addresses with FILE (/proc/kallsyms)\n"
	    "      --perf-map=FILE      symbolize JIT addresses with FILE (/tmp/perf-PID.map)\n"
	    "  -h, --help               this help\n"
	    "  -v, --version            version\n");
	hwt_cli_help_end(out);
}

static void out_flush(struct outbuf *o)
{
	if (o->len)
		fwrite(o->buf, 1, o->len, stdout);
	o->len = 0;
	fflush(stdout);
}

static void out_mem_slow(struct outbuf *o, const char *s, size_t n)
{
	if (n > sizeof(o->buf) - o->len) {
		fwrite(o->buf, 1, o->len, stdout);
		o->len = 0;
		if (n > sizeof(o->buf)) {
			fwrite(s, 1, n, stdout);
			return;
		}
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static inline void out_mem(struct outbuf *o, const char *s, size_t n)
{
	if (n <= sizeof(o->buf) - o->len) {
		memcpy(o->buf + o->len, s, n);
		o->len += n;
		return;
	}
	out_mem_slow(o, s, n);
}

static inline void out_str(struct outbuf *o, const char *s)
{
	out_mem(o, s, strlen(s));
}

static void out_u32(struct outbuf *o, uint32_t v)
{
	char tmp[10];
	size_t n = sizeof(tmp);

	do {
		tmp[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	out_mem(o, tmp + n, sizeof(tmp) - n);
}

/* "0x" and digits hex digits, zero-padded (binutils' -a). */
static void out_addr(struct outbuf *o, uint64_t v, unsigned digits)
{
	char tmp[18];

	tmp[0] = '0';
	tmp[1] = 'x';
	for (unsigned i = 0; i < digits; i++)
		tmp[2 + digits - 1 - i] = "0123456789abcdef"[(v >> (4 * i)) & 0xf];
	out_mem(o, tmp, 2 + digits);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static char *put_u32(char *p, uint32_t v)
{
	char tmp[10];
	size_t n = sizeof(tmp);

	do {
		tmp[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	memcpy(p, tmp + n, sizeof(tmp) - n);
	return p + sizeof(tmp) - n;
}

/* One frame: "FUNC\nFILE:LINE\n", or its -p form, written in one piece
 * (one room check for all its parts). binutils keeps the first row's
 * discriminator for every frame. */
static void out_frame(struct a2l *a, const struct hwt_sym_frame *f, bool inlined,
		      uint32_t discriminator)
{
	static const char by[] = " (inlined by) ", dis[] = " (discriminator ";
	struct outbuf *o = a->out;
	const char *func = f->func && *f->func ? f->func : "??";
	const char *file = f->file ? f->file : "??";
	size_t lfunc, lfile, need;
	char *p;

	if (f->file && a->basenames)
		file = base_name(file);
	lfunc = a->functions ? strlen(func) : 0;
	lfile = strlen(file);
	need = lfunc + lfile + sizeof(by) + sizeof(dis) + 32;
	if (need > sizeof(o->buf) - o->len) {
		fwrite(o->buf, 1, o->len, stdout);
		o->len = 0;
		if (need > sizeof(o->buf)) {
			/* a name longer than the buffer: piece by piece */
			if (inlined && a->pretty)
				out_str(o, by);
			if (a->functions) {
				out_mem(o, func, lfunc);
				out_str(o, a->pretty ? " at " : "\n");
			}
			out_mem(o, file, lfile);
			out_mem(o, ":", 1);
			if (f->line == 0) {
				out_mem(o, "?\n", 2);
				return;
			}
			out_u32(o, f->line);
			if (discriminator) {
				out_str(o, dis);
				out_u32(o, discriminator);
				out_mem(o, ")", 1);
			}
			out_mem(o, "\n", 1);
			return;
		}
	}
	p = o->buf + o->len;
	if (inlined && a->pretty) {
		memcpy(p, by, sizeof(by) - 1);
		p += sizeof(by) - 1;
	}
	if (a->functions) {
		memcpy(p, func, lfunc);
		p += lfunc;
		if (a->pretty) {
			memcpy(p, " at ", 4);
			p += 4;
		} else {
			*p++ = '\n';
		}
	}
	memcpy(p, file, lfile);
	p += lfile;
	*p++ = ':';
	if (f->line == 0) {
		*p++ = '?';
	} else {
		p = put_u32(p, f->line);
		if (discriminator) {
			memcpy(p, dis, sizeof(dis) - 1);
			p += sizeof(dis) - 1;
			p = put_u32(p, discriminator);
			*p++ = ')';
		}
	}
	*p++ = '\n';
	o->len = (size_t)(p - o->buf);
}

/* Parses SYMBOL[+OFFSET] or a hex address as binutils does. */
static uint64_t parse_addr(struct a2l *a, char *s)
{
	char *p = s, *end;
	uint64_t v = 0;

	while (isspace((unsigned char)*p))
		p++;
	if (*p && !isdigit((unsigned char)*p) &&
	    !(toupper((unsigned char)*p) >= 'A' && toupper((unsigned char)*p) <= 'F' &&
	      !strchr(p, '+'))) {
		/* SYMBOL[+OFFSET] */
		struct hwt_sym_def def;
		unsigned long off = 0;
		char *sym = p;

		while (*p && !isspace((unsigned char)*p) && *p != '+')
			p++;
		end = p;
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '+')
			off = strtoul(p + 1, NULL, 0);
		*end = '\0';
		if (hwt_sym_find(a->obj, sym, &def, 1) > 0)
			return def.addr + off;
		return 0;
	}
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	for (;; p++) {
		unsigned c = (unsigned char)*p, d;

		if (c - '0' < 10)
			d = c - '0';
		else if ((c | 0x20) - 'a' < 6)
			d = (c | 0x20) - 'a' + 10;
		else
			break;
		v = (v << 4) | d;
	}
	if (a->addr_bits == 32)
		v &= 0xffffffffull;
	return v;
}

static void translate(struct a2l *a, char *text)
{
	struct hwt_sym_frame frames[MAX_FRAMES];
	struct hwt_sym_info info;
	struct outbuf *o = a->out;
	uint64_t pc = parse_addr(a, text), addr = pc;
	unsigned flags = HWT_SYM_NEAREST | HWT_SYM_FRAMES_ONLY | (a->demangle ? 0 : HWT_SYM_RAW);
	int n;

	if (a->addresses) {
		out_addr(o, pc, a->addr_bits == 32 ? 8 : 16);
		out_str(o, a->pretty ? ": " : "\n");
	}
	if (a->section) {
		addr = a->sec_addr + pc;
		n = pc < a->sec_size
			? hwt_sym_lookup(a->obj, addr, flags, &info, frames, MAX_FRAMES)
			: -HWT_ENOSYM;
	} else {
		n = hwt_sym_lookup(a->obj, addr, flags, &info, frames, MAX_FRAMES);
	}
	if (n <= 0) {
		if (a->functions)
			out_str(o, a->pretty ? "?? " : "??\n");
		out_str(o, "??:0\n");
		return;
	}
	if (!a->inlines)
		n = 1;
	for (int i = 0; i < n; i++)
		out_frame(a, &frames[i], i > 0, frames[0].discriminator);
}

static void translate_stdin(struct a2l *a)
{
	static char buf[1 << 16];
	size_t len = 0, start = 0;
	bool eof = false;

	for (;;) {
		char *nl = memchr(buf + start, '\n', len - start);

		if (nl) {
			*nl = '\0';
			translate(a, buf + start);
			start = (size_t)(nl - buf) + 1;
			continue;
		}
		if (eof) {
			if (start < len) {
				buf[len] = '\0';
				translate(a, buf + start);
			}
			break;
		}
		memmove(buf, buf + start, len - start);
		len -= start;
		start = 0;
		if (len >= sizeof(buf) - 1) {
			/* an absurdly long line: treat what we have as one */
			buf[len] = '\0';
			translate(a, buf);
			len = 0;
		}
		out_flush(a->out);
		ssize_t got = read(0, buf + len, sizeof(buf) - 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			eof = true;
		else
			len += (size_t)got;
	}
	out_flush(a->out);
}

int hwt_cmd_addr2line(int argc, char **argv)
{
	enum { OPT_DEBUG_DIR = 256, OPT_KALLSYMS, OPT_PERFMAP };
	static const struct option opts[] = {
	    {"addresses", no_argument, NULL, 'a'},
	    {"basenames", no_argument, NULL, 's'},
	    {"demangle", optional_argument, NULL, 'C'},
	    {"exe", required_argument, NULL, 'e'},
	    {"functions", no_argument, NULL, 'f'},
	    {"inlines", no_argument, NULL, 'i'},
	    {"pretty-print", no_argument, NULL, 'p'},
	    {"recurse-limit", no_argument, NULL, 'R'},
	    {"recursion-limit", no_argument, NULL, 'R'},
	    {"no-recurse-limit", no_argument, NULL, 'r'},
	    {"no-recursion-limit", no_argument, NULL, 'r'},
	    {"section", required_argument, NULL, 'j'},
	    {"target", required_argument, NULL, 'b'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'v'},
	    {"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
	    {"kallsyms", required_argument, NULL, OPT_KALLSYMS},
	    {"perf-map", required_argument, NULL, OPT_PERFMAP},
	    {NULL, 0, NULL, 0},
	};
	struct a2l a = {0};
	struct hwt_sym_config cfg;
	struct hwt_sym_cache *cache = NULL;
	struct hwt_sym_obj_info info;
	const char *exe = "a.out", *kallsyms = NULL, *perfmap = NULL;
	int c, err, status = HWT_EXIT_OK;

	hwt_sym_config_init(&cfg);
	cfg.logger = *hwt_cli_logger();
	optind = 1;
	while ((c = getopt_long(argc, argv, "ab:C::e:fhHij:prRsvV", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			a.addresses = true;
			break;
		case 'b':
			break; /* the format is detected from the file */
		case 'C':
			if (optarg && strcmp(optarg, "auto") && strcmp(optarg, "gnu-v3") &&
			    strcmp(optarg, "rust") && strcmp(optarg, "gnu"))
				return hwt_cli_usage_error("addr2line",
							   "unknown demangling style '%s'", optarg);
			a.demangle = true;
			break;
		case 'e':
			exe = optarg;
			break;
		case 'f':
			a.functions = true;
			break;
		case 'i':
			a.inlines = true;
			break;
		case 'j':
			a.section = optarg;
			break;
		case 'p':
			a.pretty = true;
			break;
		case 's':
			a.basenames = true;
			break;
		case 'r':
		case 'R':
			break;
		case 'h':
		case 'H':
			usage(stdout);
			return HWT_EXIT_OK;
		case 'v':
		case 'V':
			printf("hwtrace addr2line %s\n", HWT_VERSION);
			return HWT_EXIT_OK;
		case OPT_DEBUG_DIR:
			cfg.debug_dir = optarg;
			break;
		case OPT_KALLSYMS:
			kallsyms = optarg;
			break;
		case OPT_PERFMAP:
			perfmap = optarg;
			break;
		default:
			return hwt_cli_usage_error("addr2line", "unknown option");
		}
	}
	err = hwt_sym_cache_alloc(&cfg, &cache);
	if (err < 0) {
		hwt_cli_error("addr2line: %s", hwt_strerror(err));
		return HWT_EXIT_ERROR;
	}
	if (kallsyms) {
		err = hwt_sym_obj_open_kallsyms(cache, kallsyms, &a.obj);
		exe = kallsyms;
	} else if (perfmap) {
		err = hwt_sym_obj_open_perfmap(cache, perfmap, &a.obj);
		exe = perfmap;
	} else {
		err = hwt_sym_obj_open(cache, exe, NULL, 0, &a.obj);
	}
	if (err < 0) {
		if (err == -ENOENT)
			hwt_cli_error("'%s': no such file (give the object with -e FILE)", exe);
		else if (err == -HWT_EFORMAT)
			hwt_cli_error("'%s': not an ELF file, or its headers are malformed", exe);
		else if (err == -EACCES && kallsyms)
			hwt_cli_error(
			    "'%s': addresses are hidden (set kernel.kptr_restrict=0 or run "
			    "as root)",
			    exe);
		else
			hwt_cli_error("'%s': %s", exe, hwt_strerror(err));
		status = HWT_EXIT_ERROR;
		goto out;
	}
	hwt_sym_obj_info(a.obj, &info);
	a.addr_bits = info.addr_bits;
	if (a.section && hwt_sym_obj_section(a.obj, a.section, &a.sec_addr, &a.sec_size) < 0) {
		hwt_cli_error("'%s': no section named '%s' (list them with readelf -S)", exe,
			      a.section);
		status = HWT_EXIT_ERROR;
		goto out;
	}
	a.out = malloc(sizeof(*a.out));
	if (!a.out) {
		hwt_cli_error("addr2line: %s", hwt_strerror(-ENOMEM));
		status = HWT_EXIT_ERROR;
		goto out;
	}
	a.out->len = 0;
	if (optind < argc) {
		for (int i = optind; i < argc; i++)
			translate(&a, argv[i]);
		out_flush(a.out);
	} else {
		translate_stdin(&a);
	}
out:
	free(a.out);
	hwt_sym_cache_free(cache);
	return status;
}
