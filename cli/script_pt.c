/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/script_pt.c - `hwtrace script --pt FILE ...`: decode a raw Intel PT
 * stream without our container, with the code given as raw binaries or ELF
 * files, or found through perf-event sideband files, taking the options of
 * libipt's `ptxed` so its users (and its test suite) feel at home.
 *
 * Output is either ptxed's (--format=ptxed: instruction addresses and
 * bracketed events, byte for byte what `ptxed --no-inst` prints) or
 * hwtrace's record views (--itrace=ibcre, --flow). The CLI only parses,
 * loads files into decoder images and prints records; decoding is the
 * decoder module's.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/script_pt.h"
#include "decoder/decoder.h"

enum {
	OPT_PT = 1000,
	OPT_RAW,
	OPT_ELF,
	OPT_CPU,
	OPT_MTC_FREQ,
	OPT_NOM_FREQ,
	OPT_CPUID_EAX,
	OPT_CPUID_EBX,
	OPT_FORMAT,
	OPT_ITRACE,
	OPT_FLOW,
	OPT_ENGINE,
	OPT_THREADS,
	OPT_STAT,
	OPT_STAT_INSN,
	OPT_STAT_BLOCKS,
	OPT_NO_INST,
	OPT_QUIET,
	OPT_OFFSET,
	OPT_TIME,
	OPT_RAW_INSN,
	OPT_CHECK,
	OPT_EVENT_TIME,
	OPT_EVENT_IP,
	OPT_EVENT_TICK,
	OPT_BLOCK_DEC,
	OPT_INSN_DEC,
	OPT_SHOW_BLOCKS,
	OPT_END_ON_CALL,
	OPT_END_ON_JUMP,
	OPT_ISCACHE_LIMIT,
	OPT_ATT,
	OPT_HELP,
	OPT_TIME_CONV,
	OPT_FILTER,		      /* OPT_FILTER + 3*n + {0 cfg, 1 a, 2 b} */
	OPT_PEVENT = OPT_FILTER + 12, /* the --pevent:* and --sb:* family */
};

static const char pevent_names[][20] = {
    "pevent:primary",	  "pevent:secondary",
    "pevent:sample-type", "pevent:time-zero",
    "pevent:time-shift",  "pevent:time-mult",
    "pevent:tsc-offset",  "pevent:kernel-start",
    "pevent:sysroot",	  "pevent:vdso-x64",
    "pevent:vdso-x32",	  "pevent:vdso-ia32",
    "sb:compact",	  "sb",
    "sb:verbose",	  "sb:filename",
    "sb:offset",	  "sb:time",
    "sb:switch",	  "sb:warn",
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: hwtrace script --pt FILE[:FROM[-TO]] (--raw FILE[:FROM[-TO]]:BASE | --elf "
	    "FILE[:BASE]\n"
	    "                      | --pevent:primary FILE ...)... [options]\n"
	    "\n"
	    "Decode a raw Intel PT stream (no hwtrace recording needed). Takes the\n"
	    "options of libipt's ptxed.\n"
	    "\n"
	    "code:\n"
	    "  --raw FILE[:FROM[-TO]]:BASE  map bytes FROM..TO of FILE at address BASE\n"
	    "  --elf FILE[:BASE]            map FILE's loadable segments (at BASE)\n"
	    "  --pevent:primary FILE[:FROM[-TO]], --pevent:secondary FILE...\n"
	    "                               perf-event sideband: mmaps, comm/exec, switches\n"
	    "  --pevent:sample-type N, --pevent:time-zero N, --pevent:time-shift N,\n"
	    "  --pevent:time-mult N, --pevent:tsc-offset N, --pevent:kernel-start ADDR,\n"
	    "  --pevent:sysroot DIR, --pevent:vdso-x64 FILE\n"
	    "trace configuration:\n"
	    "  --cpu none|F/M[/S]           CPU the trace was recorded on (errata)\n"
	    "  --mtc-freq N --nom-freq N --cpuid-0x15.eax N --cpuid-0x15.ebx N\n"
	    "  --time-conv SHIFT,MULT,ZERO  TSC to perf clock (perf's time_shift,\n"
	    "                               time_mult, time_zero; default: the primary\n"
	    "                               --pevent stream's)\n"
	    "  --filter:addrN_cfg N --filter:addrN_a ADDR --filter:addrN_b ADDR\n"
	    "output:\n"
	    "  --format=hwtrace|ptxed|records  hwtrace's views (default), ptxed's output,\n"
	    "                               or every record field by field\n"
	    "  --itrace=LETTERS             i instructions, b branches, c calls, r returns,\n"
	    "                               e errors and gaps, v events (default: be)\n"
	    "  --flow                       calls and returns indented by depth, with durations\n"
	    "  --stat                       print instruction and block counts\n"
	    "  --engine=fast|libipt|ptxed   decoding engine (default fast; ptxed for "
	    "--format=ptxed)\n"
	    "  -j, --threads=N              decode PSB segments on N threads\n"
	    "ptxed output options:\n"
	    "  --no-inst --quiet --offset --time --raw-insn --event:ip --event:time --event:tick\n"
	    "  --block:show-blocks --block:end-on-call --block:end-on-jump --stat:insn\n"
	    "  --stat:blocks --insn-decoder --block-decoder --sb:compact --sb:offset --sb:time\n"
	    "  --sb:filename --sb:verbose --sb:switch --sb:warn\n");
	hwt_cli_help_end(out);
}

/* ------------------------------------------------------------------------ */
/* Files                                                                     */

/* ptxed's "FILE[:FROM[-TO]]": splits off a range when one parses, else the
 * ':' belongs to the name. Returns 0 or -HWT_EINVAL (TO <= FROM). */
static int split_range(char *arg, uint64_t *from, uint64_t *size)
{
	char *colon = strrchr(arg, ':'), *rest;
	uint64_t a, b;

	*from = 0;
	*size = 0;
	if (!colon || !colon[1])
		return 0;
	errno = 0;
	a = strtoull(colon + 1, &rest, 0);
	if (errno || rest == colon + 1)
		return 0;
	if (*rest == '\0') {
		*from = a;
		*colon = '\0';
		return 0;
	}
	if (*rest != '-')
		return 0;
	b = strtoull(rest + 1, &rest, 0);
	if (errno || *rest)
		return 0;
	if (b <= a)
		return -HWT_EINVAL;
	*from = a;
	*size = b - a;
	*colon = '\0';
	return 0;
}

/* ptxed's "...:BASE" suffix. Returns 1 and strips it, or 0. */
static int split_base(char *arg, uint64_t *base)
{
	char *colon = strrchr(arg, ':'), *rest;
	uint64_t v;

	if (!colon || !colon[1])
		return 0;
	errno = 0;
	v = strtoull(colon + 1, &rest, 0);
	if (errno || *rest)
		return 0;
	*base = v;
	*colon = '\0';
	return 1;
}

struct pt_file {
	uint8_t *map;
	size_t map_len;
	const uint8_t *data;
	size_t len;
};

static int load_pt(struct pt_file *f, char *arg)
{
	uint64_t from, size;
	struct stat st;
	int fd;

	memset(f, 0, sizeof(*f));
	if (split_range(arg, &from, &size) < 0) {
		hwt_cli_error("script: bad range in --pt '%s': TO must be above FROM", arg);
		return -1;
	}
	fd = open(arg, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		hwt_cli_error("script: cannot read the PT file '%s': %s; check the path", arg,
			      strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if ((uint64_t)st.st_size <= from && !(st.st_size == 0 && from == 0)) {
		hwt_cli_error("script: --pt '%s': offset 0x%" PRIx64 " is beyond its %lld bytes",
			      arg, from, (long long)st.st_size);
		close(fd);
		return -1;
	}
	if (size && from + size > (uint64_t)st.st_size) {
		hwt_cli_error("script: --pt '%s': range ends at 0x%" PRIx64 ", beyond its %lld "
			      "bytes",
			      arg, from + size, (long long)st.st_size);
		close(fd);
		return -1;
	}
	if (st.st_size > 0) {
		f->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (f->map == MAP_FAILED) {
			hwt_cli_error("script: cannot map the PT file '%s': %s", arg,
				      strerror(errno));
			close(fd);
			f->map = NULL;
			return -1;
		}
		f->map_len = (size_t)st.st_size;
	}
	close(fd);
	f->data = f->map ? f->map + from : NULL;
	f->len = size ? (size_t)size : (size_t)((uint64_t)st.st_size - from);
	return 0;
}

/* Returns 0, -1 (the file: message printed) or HWT_EXIT_USAGE (the
 * argument: message printed). */
static int load_raw(struct hwt_dec_image *img, char *arg)
{
	uint64_t base = 0, from, size;
	int err;

	if (!split_base(arg, &base))
		return hwt_cli_usage_error("script",
					   "--raw '%s' needs a load address: use "
					   "FILE:BASE",
					   arg);
	if (split_range(arg, &from, &size) < 0)
		return hwt_cli_usage_error("script",
					   "bad range in --raw '%s': TO must be above "
					   "FROM",
					   arg);
	err = hwt_dec_image_add_file(img, arg, from, size ? size : UINT64_MAX, base);
	if (err == -HWT_EINVAL) {
		hwt_cli_error("script: cannot map --raw '%s' at 0x%" PRIx64 ": the file is empty, "
			      "not a regular file, or shorter than offset 0x%" PRIx64,
			      arg, base, from);
		return -1;
	}
	if (err < 0) {
		hwt_cli_error("script: cannot map --raw '%s' at 0x%" PRIx64 ": %s", arg, base,
			      err > -HWT_EBASE ? strerror(-err) : hwt_strerror(err));
		return -1;
	}
	return 0;
}

/* Maps an ELF file's PT_LOAD segments; with a base, the lowest segment goes
 * there (as ptxed's --elf does). */
int hwt_script_load_elf(struct hwt_dec_image *img, const char *path, uint64_t base, bool has_base)
{
	Elf *elf = NULL;
	GElf_Phdr ph;
	size_t n, i;
	uint64_t low = UINT64_MAX, bias = 0;
	int fd, ret = -1, added = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		hwt_cli_error("script: cannot read the ELF file '%s': %s; check the path", path,
			      strerror(errno));
		return -1;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &n) != 0) {
		hwt_cli_error("script: '%s' is not an ELF file (%s); use --raw FILE:BASE for "
			      "raw code",
			      path, elf_errmsg(-1));
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < low)
			low = ph.p_vaddr;
	}
	if (has_base && low != UINT64_MAX)
		bias = base - low;
	for (i = 0; i < n; i++) {
		int err;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		err =
		    hwt_dec_image_add_file(img, path, ph.p_offset, ph.p_filesz, ph.p_vaddr + bias);
		if (err < 0) {
			hwt_cli_error("script: cannot map segment %zu of '%s': %s", i, path,
				      hwt_strerror(err));
			goto out;
		}
		added++;
	}
	if (!added) {
		hwt_cli_error("script: '%s' has no loadable segments", path);
		goto out;
	}
	ret = 0;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* Printing                                                                  */

struct printer {
	const struct script_opts *o;
	struct hwt_dec *dec;
	FILE *out;
	uint64_t blocks; /* ptxed [block N] numbering */
	struct hwt_dec_stats stats;
	const struct hwt_dec_image *image; /* for PTXED-engine blocks */
	struct script_sb *sb;		   /* sideband (may be NULL) */
};

static const char *mode_name(uint32_t mode)
{
	switch (mode) {
	case HWT_DEC_MODE_16:
		return "16-bit";
	case HWT_DEC_MODE_32:
		return "32-bit";
	case HWT_DEC_MODE_64:
		return "64-bit";
	default:
		return "<unknown>";
	}
}

static void ptxed_event(struct printer *p, const struct hwt_dec_rec *rec)
{
	const struct script_opts *o = p->o;
	const struct hwt_dec_event *ev = &rec->u.event;
	bool ipok = o->event_ip && !(rec->flags & HWT_DEC_RF_IP_SUPPRESSED);
	FILE *out = p->out;

	if (ev->type == HWT_DEC_EV_END) {
		fprintf(out, "[end of trace]\n");
		return;
	}
	fputc('[', out);
	if (o->offset)
		fprintf(out, "%016" PRIx64 "  ", rec->offset);
	if (o->event_time && (rec->flags & HWT_DEC_RF_TIME))
		fprintf(out, "%016" PRIx64 "  ", rec->tsc);
	switch (ev->type) {
	case HWT_DEC_EV_ENABLED:
		fprintf(out, "%s", ev->resumed ? "resumed" : "enabled");
		if (o->event_ip)
			fprintf(out, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_DISABLED:
		fprintf(out, "disabled");
		if (ipok)
			fprintf(out, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_ASYNC_DISABLED:
		fprintf(out, "disabled");
		if (o->event_ip) {
			fprintf(out, ", at: %016" PRIx64, ev->at);
			if (!(rec->flags & HWT_DEC_RF_IP_SUPPRESSED))
				fprintf(out, ", ip: %016" PRIx64, ev->ip);
		}
		break;
	case HWT_DEC_EV_ASYNC_BRANCH:
		fprintf(out, "interrupt");
		if (o->event_ip) {
			fprintf(out, ", from: %016" PRIx64, ev->at);
			if (!(rec->flags & HWT_DEC_RF_IP_SUPPRESSED))
				fprintf(out, ", to: %016" PRIx64, ev->ip);
		}
		break;
	case HWT_DEC_EV_PAGING:
		fprintf(out, "paging, cr3: %016" PRIx64 "%s", ev->payload,
			ev->non_root ? ", nr" : "");
		break;
	case HWT_DEC_EV_ASYNC_PAGING:
		fprintf(out, "paging, cr3: %016" PRIx64 "%s", ev->payload,
			ev->non_root ? ", nr" : "");
		if (o->event_ip)
			fprintf(out, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_OVERFLOW:
		fprintf(out, "overflow");
		if (ipok)
			fprintf(out, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_EXEC_MODE:
		fprintf(out, "exec mode: %s", mode_name(ev->mode));
		if (ipok)
			fprintf(out, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_TSX:
		fprintf(out, "%s",
			ev->tsx == 2   ? "aborted"
			: ev->tsx == 1 ? "begin transaction"
				       : "committed");
		if (ipok)
			fprintf(out, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_STOP:
		fprintf(out, "stopped");
		break;
	case HWT_DEC_EV_VMCS:
		fprintf(out, "vmcs, base: %016" PRIx64, ev->payload);
		break;
	case HWT_DEC_EV_ASYNC_VMCS:
		fprintf(out, "vmcs, base: %016" PRIx64, ev->payload);
		if (o->event_ip)
			fprintf(out, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_EXSTOP:
		fprintf(out, "exstop");
		if (ipok)
			fprintf(out, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_MWAIT:
		fprintf(out, "mwait %" PRIx32 " %" PRIx32, ev->mwait_hints, ev->mwait_ext);
		if (ipok)
			fprintf(out, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_PWRE:
		fprintf(out, "pwre c%u.%u", (ev->pwr_state + 1u) & 0xf,
			(ev->pwr_sub_state + 1u) & 0xf);
		if (ev->pwr_hw)
			fprintf(out, " hw");
		break;
	case HWT_DEC_EV_PWRX:
		fprintf(out, "pwrx ");
		if (ev->pwrx_why & 1)
			fprintf(out, "int: ");
		if (ev->pwrx_why & 2)
			fprintf(out, "st: ");
		if (ev->pwrx_why & 4)
			fprintf(out, "hw: ");
		fprintf(out, "c%u (c%u)", (ev->pwrx_last + 1u) & 0xf,
			(ev->pwrx_deepest + 1u) & 0xf);
		break;
	case HWT_DEC_EV_PTWRITE:
		fprintf(out, "ptwrite: %" PRIx64, ev->payload);
		if (ipok)
			fprintf(out, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_TICK:
		fprintf(out, "tick");
		if (ipok)
			fprintf(out, ", ip: %016" PRIx64, ev->ip);
		break;
	case HWT_DEC_EV_CBR:
		fprintf(out, "cbr: %" PRIx64, ev->payload);
		break;
	case HWT_DEC_EV_MNT:
		fprintf(out, "mnt: %" PRIx64, ev->payload);
		break;
	default:
		fprintf(out, "event %u", ev->type);
		break;
	}
	fprintf(out, "]\n");
}

static void print_raw_bytes(FILE *out, const struct hwt_dec_insn *insn)
{
	unsigned int i;

	for (i = 0; i < insn->size; i++)
		fprintf(out, " %02x", insn->raw[i]);
	for (; i < 15; i++)
		fprintf(out, "   ");
}

/* Prints one instruction line as ptxed does. */
static void ptxed_insn_line(struct printer *p, const struct hwt_dec_rec *rec, uint64_t ip,
			    const struct hwt_dec_insn *insn)
{
	const struct script_opts *o = p->o;

	if (o->offset)
		fprintf(p->out, "%016" PRIx64 "  ", rec->offset);
	if (o->time)
		fprintf(p->out, "%016" PRIx64 "  ", rec->tsc);
	if (rec->flags & HWT_DEC_RF_SPECULATIVE)
		fprintf(p->out, "? ");
	fprintf(p->out, "%016" PRIx64, ip);
	if (insn && !o->no_inst) {
		char text[160];

		if (o->raw_insn)
			print_raw_bytes(p->out, insn);
		if (hwt_dec_insn_format(insn, text, sizeof(text)) >= 0)
			fprintf(p->out, "  %s", text);
	}
}

/* Decodes the instruction at ip of a block (the truncated last one from the
 * record's bytes). */
static int block_insn(const struct hwt_dec_rec *rec, uint64_t ip, struct hwt_dec_insn *insn)
{
	const struct hwt_dec_image *img = rec->u.block.image;

	if (!img)
		return -HWT_ENOSYM;
	/* Reads across sections, so a truncated last instruction comes out
	 * as the bytes the block carries. */
	return hwt_dec_insn_decode(img, ip, (enum hwt_dec_mode)rec->u.block.mode, insn);
}

static void ptxed_block(struct printer *p, const struct hwt_dec_rec *rec)
{
	const struct script_opts *o = p->o;
	uint64_t ip = rec->u.block.ip;
	uint32_t left = rec->u.block.ninsn;

	p->blocks++;
	if (o->show_blocks) {
		fprintf(p->out, "[block");
		if (o->stat)
			fprintf(p->out, " %" PRIx64, p->blocks);
		fprintf(p->out, "]\n");
	}
	if (!left)
		return;
	if (rec->u.block.bb) {
		/* Canonical blocks know their instructions. */
		uint64_t *ips = malloc(left * sizeof(*ips));

		if (!ips)
			return;
		left = (uint32_t)hwt_dec_bb_insns(rec->u.block.bb, ips, left);
		for (uint32_t k = 0; k < left; k++) {
			struct hwt_dec_insn insn;
			bool ok = !o->no_inst && block_insn(rec, ips[k], &insn) == 0;

			ptxed_insn_line(p, rec, ips[k], ok ? &insn : NULL);
			fputc('\n', p->out);
		}
		free(ips);
		return;
	}
	for (;;) {
		struct hwt_dec_insn insn;
		int err;

		ptxed_insn_line(p, rec, ip, NULL);
		err = block_insn(rec, ip, &insn);
		if (err < 0) {
			if (err == -HWT_ENOSYM)
				fprintf(p->out,
					" [fetch error: no memory mapped at this address]\n");
			else
				fprintf(p->out, " [xed decode error: invalid instruction]\n");
			break;
		}
		if (!o->no_inst) {
			char text[160];

			if (o->raw_insn)
				print_raw_bytes(p->out, &insn);
			if (hwt_dec_insn_format(&insn, text, sizeof(text)) >= 0)
				fprintf(p->out, "  %s", text);
		}
		fputc('\n', p->out);
		if (--left == 0)
			break;
		ip = insn.has_target ? insn.target : ip + insn.size;
	}
	if (ip != rec->u.block.end_ip)
		fprintf(p->out,
			"[%" PRIx64 ", %" PRIx64 ": reconstruct error: decoder out of sync]\n",
			rec->offset, ip);
}

static void ptxed_gap(struct printer *p, const struct hwt_dec_rec *rec)
{
	if (rec->u.gap.kind == HWT_DEC_GAP_CONFIG) {
		fprintf(p->out, "[0, 0: config error: %s]\n", rec->u.gap.what);
		return;
	}
	if (rec->u.gap.kind == HWT_DEC_GAP_LOST) {
		fprintf(p->out, "[%" PRIx64 ", 0: error: trace data lost]\n", rec->offset);
		return;
	}
	if (rec->u.gap.kind == HWT_DEC_GAP_OVERFLOW)
		return; /* ptxed shows the [overflow] event */
	if (rec->flags & HWT_DEC_RF_IP_SUPPRESSED)
		fprintf(p->out, "[?, %" PRIx64 ": %s: %s]\n", rec->u.gap.ip,
			rec->u.gap.sync ? "sync error" : "error", rec->u.gap.what);
	else
		fprintf(p->out, "[%" PRIx64 ", %" PRIx64 ": %s: %s]\n", rec->offset, rec->u.gap.ip,
			rec->u.gap.sync ? "sync error" : "error", rec->u.gap.what);
}

static int ptxed_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct printer *p = ctx;

	if (rec->type == HWT_DEC_REC_NOTE) {
		if (p->sb)
			script_sb_note(p->sb, rec, p->out);
		return ferror(p->out) ? -EIO : 0;
	}
	if (p->o->quiet)
		goto after;
	switch (rec->type) {
	case HWT_DEC_REC_BLOCK:
		ptxed_block(p, rec);
		break;
	case HWT_DEC_REC_EVENT:
		if (!(rec->flags & HWT_DEC_RF_STATUS))
			ptxed_event(p, rec);
		break;
	case HWT_DEC_REC_GAP:
		ptxed_gap(p, rec);
		break;
	default:
		break;
	}
after:
	return ferror(p->out) ? -EIO : 0;
}

/* --format=records: every record with every field, one line each: for
 * comparing engines and for tests. */
static int records_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct printer *p = ctx;
	FILE *out = p->out;

	fprintf(out, "%u f=%x tid=%d d=%u n=%" PRIu64 " t=%" PRIx64 " off=%" PRIx64, rec->type,
		rec->flags, rec->tid, rec->depth, rec->insns, rec->tsc, rec->offset);
	switch (rec->type) {
	case HWT_DEC_REC_BLOCK:
		fprintf(out, " block %" PRIx64 "-%" PRIx64 " n=%u next=%" PRIx64 " br=%u m=%u\n",
			rec->u.block.ip, rec->u.block.end_ip, rec->u.block.ninsn,
			rec->u.block.next_ip, rec->u.block.branch, rec->u.block.mode);
		break;
	case HWT_DEC_REC_CALL:
		fprintf(out, " call %" PRIx64 "->%" PRIx64 " ret=%" PRIx64 "\n", rec->u.call.from,
			rec->u.call.to, rec->u.call.ret_addr);
		break;
	case HWT_DEC_REC_RETURN:
		fprintf(out,
			" ret %" PRIx64 "->%" PRIx64 " func=%" PRIx64 " ct=%" PRIx64 " n=%" PRIu64
			"\n",
			rec->u.ret.from, rec->u.ret.to, rec->u.ret.func, rec->u.ret.call_tsc,
			rec->u.ret.insns);
		break;
	case HWT_DEC_REC_EVENT:
		fprintf(out, " event %u ip=%" PRIx64 " at=%" PRIx64 " p=%" PRIx64 " m=%u r=%u\n",
			rec->u.event.type, rec->u.event.ip, rec->u.event.at, rec->u.event.payload,
			rec->u.event.mode, rec->u.event.resumed);
		break;
	case HWT_DEC_REC_GAP:
		fprintf(out, " gap %u %s ip=%" PRIx64 " size=%" PRIu64 "\n", rec->u.gap.kind,
			rec->u.gap.what, rec->u.gap.ip, rec->u.gap.size);
		break;
	case HWT_DEC_REC_SWITCH:
		fprintf(out, " switch %d/%d\n", rec->u.sw.prev_pid, rec->u.sw.prev_tid);
		break;
	case HWT_DEC_REC_NOTE:
		fputs(" note\n", out);
		if (p->sb)
			script_sb_note(p->sb, rec, out);
		break;
	default:
		fputc('\n', out);
		break;
	}
	return ferror(out) ? -EIO : 0;
}

/* hwtrace's views. */

static void print_time(struct printer *p, const struct hwt_dec_rec *rec)
{
	if (!(rec->flags & HWT_DEC_RF_TIME))
		fprintf(p->out, "%20s ", "-");
	else if (p->o->cfg.tconv.valid)
		fprintf(p->out, "%10" PRIu64 ".%09" PRIu64 " ", rec->time / 1000000000u,
			rec->time % 1000000000u);
	else
		fprintf(p->out, "%20" PRIu64 " ", rec->tsc);
}

static void print_tid(struct printer *p, const struct hwt_dec_rec *rec)
{
	char buf[32];

	if (rec->tid < 0)
		snprintf(buf, sizeof(buf), "-");
	else
		snprintf(buf, sizeof(buf), "%d/%d", rec->pid, rec->tid);
	fprintf(p->out, "%-13s ", buf);
}

static const char *branch_name(uint8_t br, bool taken)
{
	switch (br) {
	case HWT_DEC_BR_COND:
		return taken ? "jcc" : "jcc-not-taken";
	case HWT_DEC_BR_JUMP:
		return "jmp";
	case HWT_DEC_BR_IND_JUMP:
		return "jmp-indirect";
	case HWT_DEC_BR_CALL:
		return "call";
	case HWT_DEC_BR_IND_CALL:
		return "call-indirect";
	case HWT_DEC_BR_RETURN:
		return "ret";
	case HWT_DEC_BR_FAR_CALL:
		return "far-call";
	case HWT_DEC_BR_FAR_RETURN:
		return "far-ret";
	case HWT_DEC_BR_FAR_JUMP:
		return "far-jmp";
	default:
		return "none";
	}
}

static const char *event_name(uint32_t type)
{
	static const char *names[] = {
	    [HWT_DEC_EV_ENABLED] = "enabled",
	    [HWT_DEC_EV_DISABLED] = "disabled",
	    [HWT_DEC_EV_ASYNC_DISABLED] = "disabled",
	    [HWT_DEC_EV_ASYNC_BRANCH] = "interrupt",
	    [HWT_DEC_EV_PAGING] = "paging",
	    [HWT_DEC_EV_ASYNC_PAGING] = "paging",
	    [HWT_DEC_EV_OVERFLOW] = "overflow",
	    [HWT_DEC_EV_EXEC_MODE] = "exec-mode",
	    [HWT_DEC_EV_TSX] = "tsx",
	    [HWT_DEC_EV_STOP] = "stopped",
	    [HWT_DEC_EV_VMCS] = "vmcs",
	    [HWT_DEC_EV_ASYNC_VMCS] = "vmcs",
	    [HWT_DEC_EV_EXSTOP] = "exstop",
	    [HWT_DEC_EV_MWAIT] = "mwait",
	    [HWT_DEC_EV_PWRE] = "pwre",
	    [HWT_DEC_EV_PWRX] = "pwrx",
	    [HWT_DEC_EV_PTWRITE] = "ptwrite",
	    [HWT_DEC_EV_TICK] = "tick",
	    [HWT_DEC_EV_CBR] = "cbr",
	    [HWT_DEC_EV_MNT] = "mnt",
	    [HWT_DEC_EV_END] = "end-of-trace",
	};

	if (type < HWT_ARRAY_SIZE(names) && names[type])
		return names[type];
	return "event";
}

static void print_duration(struct printer *p, uint64_t ns)
{
	if (ns >= 1000000000u)
		fprintf(p->out, "%.3f s", (double)ns / 1e9);
	else if (ns >= 1000000u)
		fprintf(p->out, "%.3f ms", (double)ns / 1e6);
	else if (ns >= 1000u)
		fprintf(p->out, "%.3f us", (double)ns / 1e3);
	else
		fprintf(p->out, "%" PRIu64 " ns", ns);
}

static int view_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct printer *p = ctx;
	const struct script_opts *o = p->o;

	switch (rec->type) {
	case HWT_DEC_REC_NOTE:
		if (p->sb)
			script_sb_note(p->sb, rec, p->out);
		break;
	case HWT_DEC_REC_BLOCK:
		if (o->view_insn && rec->u.block.ninsn) {
			uint64_t *ips = NULL;
			size_t n = rec->u.block.ninsn;

			if (rec->u.block.bb) {
				ips = malloc(n * sizeof(*ips));
				if (!ips)
					return -ENOMEM;
				hwt_dec_bb_insns(rec->u.block.bb, ips, n);
			}
			for (size_t k = 0; k < n; k++) {
				print_time(p, rec);
				print_tid(p, rec);
				fprintf(p->out, "insn   %016" PRIx64 "\n",
					ips ? ips[k] : rec->u.block.ip);
				if (!ips)
					break;
			}
			free(ips);
		}
		if (o->view_branch && rec->u.block.branch != HWT_DEC_BR_NONE &&
		    rec->u.block.branch != HWT_DEC_BR_OTHER && rec->u.block.ninsn &&
		    !(rec->flags & HWT_DEC_RF_PARTIAL)) {
			bool taken = rec->flags & HWT_DEC_RF_TAKEN;

			print_time(p, rec);
			print_tid(p, rec);
			fprintf(p->out, "branch %016" PRIx64 " -> ", rec->u.block.end_ip);
			if (rec->u.block.next_ip)
				fprintf(p->out, "%016" PRIx64, rec->u.block.next_ip);
			else
				fprintf(p->out, "%16s", "?");
			fprintf(p->out, " %s\n", branch_name(rec->u.block.branch, taken));
		}
		break;
	case HWT_DEC_REC_CALL:
		if (o->flow) {
			print_time(p, rec);
			print_tid(p, rec);
			fprintf(p->out, "%*s-> %016" PRIx64 "%s\n",
				(int)(2 * (rec->depth ? rec->depth - 1 : 0)), "", rec->u.call.to,
				(rec->flags & HWT_DEC_RF_ASYNC) ? " (interrupt)" : "");
		} else if (o->view_call) {
			print_time(p, rec);
			print_tid(p, rec);
			fprintf(p->out, "call   %016" PRIx64 " -> %016" PRIx64 " depth %u%s\n",
				rec->u.call.from, rec->u.call.to, rec->depth,
				(rec->flags & HWT_DEC_RF_ASYNC) ? " interrupt" : "");
		}
		break;
	case HWT_DEC_REC_RETURN:
		if (o->flow) {
			print_time(p, rec);
			print_tid(p, rec);
			fprintf(p->out, "%*s<- ", (int)(2 * rec->depth), "");
			if (rec->flags & HWT_DEC_RF_UNKNOWN_FRAME)
				fprintf(p->out, "%16s", "?");
			else
				fprintf(p->out, "%016" PRIx64, rec->u.ret.func);
			fprintf(p->out, " to %016" PRIx64 "  ", rec->u.ret.to);
			if ((rec->flags & HWT_DEC_RF_TIME) &&
			    !(rec->flags & HWT_DEC_RF_UNKNOWN_FRAME) && rec->u.ret.call_tsc &&
			    rec->tsc >= rec->u.ret.call_tsc) {
				const struct hwt_dec_tconv *tc = &o->cfg.tconv;
				uint64_t d = tc->valid
						 ? hwt_dec_tsc_to_perf(tc, rec->tsc) -
						       hwt_dec_tsc_to_perf(tc, rec->u.ret.call_tsc)
						 : rec->tsc - rec->u.ret.call_tsc;

				if (tc->valid)
					print_duration(p, d);
				else
					fprintf(p->out, "%" PRIu64 " ticks", d);
			} else {
				fprintf(p->out, "duration unavailable");
			}
			if (!(rec->flags & HWT_DEC_RF_UNKNOWN_FRAME))
				fprintf(p->out, ", %" PRIu64 " insns", rec->u.ret.insns);
			if (rec->flags & HWT_DEC_RF_UNWOUND)
				fprintf(p->out, " (unwound)");
			fputc('\n', p->out);
		} else if (o->view_return) {
			print_time(p, rec);
			print_tid(p, rec);
			fprintf(p->out, "return %016" PRIx64 " -> %016" PRIx64 " depth %u%s%s\n",
				rec->u.ret.from, rec->u.ret.to, rec->depth,
				(rec->flags & HWT_DEC_RF_UNKNOWN_FRAME) ? " unknown-frame" : "",
				(rec->flags & HWT_DEC_RF_UNWOUND) ? " unwound" : "");
		}
		break;
	case HWT_DEC_REC_EVENT:
		if (o->view_events && !(rec->flags & HWT_DEC_RF_STATUS)) {
			print_time(p, rec);
			print_tid(p, rec);
			fprintf(p->out, "event  %s", event_name(rec->u.event.type));
			if (rec->u.event.ip && !(rec->flags & HWT_DEC_RF_IP_SUPPRESSED))
				fprintf(p->out, " ip %016" PRIx64, rec->u.event.ip);
			fputc('\n', p->out);
		}
		break;
	case HWT_DEC_REC_GAP:
		if (o->view_error) {
			print_time(p, rec);
			print_tid(p, rec);
			if (rec->u.gap.kind == HWT_DEC_GAP_CONFIG)
				fprintf(p->out, "error  configuration: %s\n", rec->u.gap.what);
			else if (rec->u.gap.kind == HWT_DEC_GAP_OVERFLOW)
				fprintf(p->out,
					"gap    offset 0x%" PRIx64
					" overflow, resumed at %016" PRIx64 ": trace lost\n",
					rec->offset, rec->u.gap.ip);
			else
				fprintf(p->out,
					"gap    offset 0x%" PRIx64 " size %" PRIu64
					" ip %016" PRIx64 ": %s\n",
					rec->offset, rec->u.gap.size, rec->u.gap.ip,
					rec->u.gap.what);
		}
		break;
	case HWT_DEC_REC_SWITCH:
		if (o->flow || o->view_events) {
			print_time(p, rec);
			print_tid(p, rec);
			fprintf(p->out, "switch from %d/%d\n", rec->u.sw.prev_pid,
				rec->u.sw.prev_tid);
		}
		break;
	}
	return ferror(p->out) ? -EIO : 0;
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

static int parse_u64(const char *opt, const char *arg, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!arg || !*arg) {
		hwt_cli_usage_error("script", "%s needs a value", opt);
		return -1;
	}
	errno = 0;
	v = strtoull(arg, &end, 0);
	if (errno || *end || *arg == '-' || v > max) {
		hwt_cli_usage_error("script", "bad value '%s' for %s", arg, opt);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_itrace(struct script_opts *o, const char *s)
{
	o->view_insn = o->view_branch = o->view_call = o->view_return = o->view_error = false;
	o->view_events = false;
	for (; *s; s++) {
		switch (*s) {
		case 'i':
			o->view_insn = true;
			break;
		case 'b':
			o->view_branch = true;
			break;
		case 'c':
			o->view_call = true;
			break;
		case 'r':
			o->view_return = true;
			break;
		case 'e':
			o->view_error = true;
			break;
		case 'v':
			o->view_events = true;
			break;
		default:
			return -1;
		}
	}
	return 0;
}

static struct option *build_options(void)
{
	static const struct option base[] = {
	    {"pt", required_argument, NULL, OPT_PT},
	    {"raw", required_argument, NULL, OPT_RAW},
	    {"elf", required_argument, NULL, OPT_ELF},
	    {"cpu", required_argument, NULL, OPT_CPU},
	    {"time-conv", required_argument, NULL, OPT_TIME_CONV},
	    {"mtc-freq", required_argument, NULL, OPT_MTC_FREQ},
	    {"nom-freq", required_argument, NULL, OPT_NOM_FREQ},
	    {"cpuid-0x15.eax", required_argument, NULL, OPT_CPUID_EAX},
	    {"cpuid-0x15.ebx", required_argument, NULL, OPT_CPUID_EBX},
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"itrace", required_argument, NULL, OPT_ITRACE},
	    {"flow", no_argument, NULL, OPT_FLOW},
	    {"engine", required_argument, NULL, OPT_ENGINE},
	    {"threads", required_argument, NULL, OPT_THREADS},
	    {"stat", no_argument, NULL, OPT_STAT},
	    {"stat:insn", no_argument, NULL, OPT_STAT_INSN},
	    {"stat:blocks", no_argument, NULL, OPT_STAT_BLOCKS},
	    {"no-inst", no_argument, NULL, OPT_NO_INST},
	    {"quiet", no_argument, NULL, OPT_QUIET},
	    {"offset", no_argument, NULL, OPT_OFFSET},
	    {"time", no_argument, NULL, OPT_TIME},
	    {"raw-insn", no_argument, NULL, OPT_RAW_INSN},
	    {"check", no_argument, NULL, OPT_CHECK},
	    {"event:time", no_argument, NULL, OPT_EVENT_TIME},
	    {"event:ip", no_argument, NULL, OPT_EVENT_IP},
	    {"event:tick", no_argument, NULL, OPT_EVENT_TICK},
	    {"block-decoder", no_argument, NULL, OPT_BLOCK_DEC},
	    {"insn-decoder", no_argument, NULL, OPT_INSN_DEC},
	    {"block:show-blocks", no_argument, NULL, OPT_SHOW_BLOCKS},
	    {"block:end-on-call", no_argument, NULL, OPT_END_ON_CALL},
	    {"block:end-on-jump", no_argument, NULL, OPT_END_ON_JUMP},
	    {"iscache-limit", required_argument, NULL, OPT_ISCACHE_LIMIT},
	    {"att", no_argument, NULL, OPT_ATT},
	    {"help", no_argument, NULL, OPT_HELP},
	};
	static char filter_names[12][24];
	size_t nbase = HWT_ARRAY_SIZE(base), n = nbase + 12 + HWT_ARRAY_SIZE(pevent_names) + 1;
	struct option *opts = calloc(n, sizeof(*opts));
	size_t k = 0;

	if (!opts)
		return NULL;
	for (size_t i = 0; i < nbase; i++)
		opts[k++] = base[i];
	for (int f = 0; f < 4; f++) {
		static const char *sfx[] = {"cfg", "a", "b"};

		for (int j = 0; j < 3; j++) {
			snprintf(filter_names[f * 3 + j], sizeof(filter_names[0]),
				 "filter:addr%d_%s", f, sfx[j]);
			opts[k++] = (struct option){filter_names[f * 3 + j], required_argument,
						    NULL, OPT_FILTER + f * 3 + j};
		}
	}
	for (size_t i = 0; i < HWT_ARRAY_SIZE(pevent_names); i++) {
		bool arg = !strncmp(pevent_names[i], "pevent:", 7);

		opts[k++] = (struct option){pevent_names[i], arg ? required_argument : no_argument,
					    NULL, OPT_PEVENT + (int)i};
	}
	return opts;
}

int hwt_script_pt(int argc, char **argv)
{
	struct script_opts o;
	struct option *longopts;
	struct hwt_dec_icache *ic = NULL;
	struct hwt_dec_image *img = NULL;
	struct hwt_dec *dec = NULL;
	struct pt_file pt;
	struct printer pr;
	struct hwt_dec_sink sink;
	bool have_code = false, engine_set = false, itrace_set = false;
	char *pt_arg = NULL;
	int c, err, ret = HWT_EXIT_ERROR;

	memset(&o, 0, sizeof(o));
	memset(&pt, 0, sizeof(pt));
	hwt_dec_config_init(&o.cfg);
	o.cfg.log = *hwt_cli_logger();
	o.view_branch = o.view_error = true;
	longopts = build_options();
	if (!longopts)
		return HWT_EXIT_ERROR;
	err = hwt_dec_icache_alloc(&ic, hwt_cli_logger());
	if (err == 0)
		err = hwt_dec_image_alloc(&img, ic, NULL);
	if (err < 0) {
		hwt_cli_error("script: cannot set up the decoder: %s", hwt_strerror(err));
		goto out;
	}
	err = script_sb_alloc(&o.sb, ic, &o);
	if (err < 0)
		goto out;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hqj:", longopts, NULL)) != -1) {
		uint64_t v;

		switch (c) {
		case 'h':
		case OPT_HELP:
			usage(stdout);
			ret = HWT_EXIT_OK;
			goto out;
		case OPT_PT:
			if (pt_arg) {
				ret = hwt_cli_usage_error("script", "give exactly one --pt file");
				goto out;
			}
			pt_arg = optarg;
			break;
		case OPT_RAW:
			v = (uint64_t)load_raw(img, optarg);
			if ((int)v == HWT_EXIT_USAGE) {
				ret = HWT_EXIT_USAGE;
				goto out;
			}
			if ((int)v < 0)
				goto out;
			have_code = true;
			break;
		case OPT_ELF: {
			uint64_t base = 0;
			int has = split_base(optarg, &base);

			if (hwt_script_load_elf(img, optarg, base, has) < 0)
				goto out;
			have_code = true;
			break;
		}
		case OPT_CPU:
			if (hwt_dec_cpu_parse(&o.cfg.cpu, optarg) < 0) {
				ret = hwt_cli_usage_error("script",
							  "--cpu must be 'none' or F/M[/S], "
							  "not '%s'",
							  optarg);
				goto out;
			}
			break;
		case OPT_TIME_CONV: {
			unsigned int shift;
			uint32_t mult;
			uint64_t zero;
			int n = -1;

			if (sscanf(optarg, "%u,%" SCNu32 ",%" SCNu64 "%n", &shift, &mult, &zero,
				   &n) != 3 ||
			    n < 0 || optarg[n] || shift > 63 || !mult) {
				ret = hwt_cli_usage_error("script",
							  "--time-conv must be SHIFT,MULT,ZERO "
							  "(decimal), not '%s'",
							  optarg);
				goto out;
			}
			o.cfg.tconv.valid = true;
			o.cfg.tconv.time_shift = (uint16_t)shift;
			o.cfg.tconv.time_mult = mult;
			o.cfg.tconv.time_zero = zero;
			break;
		}
		case OPT_MTC_FREQ:
			if (parse_u64("--mtc-freq", optarg, UINT8_MAX, &v) < 0)
				goto usage;
			o.cfg.mtc_freq = (uint8_t)v;
			break;
		case OPT_NOM_FREQ:
			if (parse_u64("--nom-freq", optarg, UINT8_MAX, &v) < 0)
				goto usage;
			o.cfg.nom_freq = (uint8_t)v;
			break;
		case OPT_CPUID_EAX:
			if (parse_u64("--cpuid-0x15.eax", optarg, UINT32_MAX, &v) < 0)
				goto usage;
			o.cfg.cpuid_0x15_eax = (uint32_t)v;
			break;
		case OPT_CPUID_EBX:
			if (parse_u64("--cpuid-0x15.ebx", optarg, UINT32_MAX, &v) < 0)
				goto usage;
			o.cfg.cpuid_0x15_ebx = (uint32_t)v;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "ptxed")) {
				o.ptxed = true;
			} else if (!strcmp(optarg, "records")) {
				o.records = true;
			} else if (!strcmp(optarg, "hwtrace")) {
				o.ptxed = false;
			} else {
				ret = hwt_cli_usage_error("script",
							  "unknown --format '%s' (use "
							  "hwtrace or ptxed)",
							  optarg);
				goto out;
			}
			break;
		case OPT_ITRACE:
			itrace_set = true;
			if (parse_itrace(&o, optarg) < 0) {
				ret = hwt_cli_usage_error("script",
							  "unknown letter in --itrace=%s "
							  "(use i, b, c, r, e, v)",
							  optarg);
				goto out;
			}
			break;
		case OPT_FLOW:
			o.flow = true;
			if (!itrace_set)
				o.view_branch = o.view_error = false;
			break;
		case OPT_ENGINE:
			engine_set = true;
			if (!strcmp(optarg, "fast"))
				o.cfg.engine = HWT_DEC_ENGINE_FAST;
			else if (!strcmp(optarg, "libipt"))
				o.cfg.engine = HWT_DEC_ENGINE_LIBIPT;
			else if (!strcmp(optarg, "ptxed"))
				o.cfg.engine = HWT_DEC_ENGINE_PTXED;
			else {
				ret = hwt_cli_usage_error("script",
							  "unknown --engine '%s' (use fast, "
							  "libipt or ptxed)",
							  optarg);
				goto out;
			}
			break;
		case 'j':
		case OPT_THREADS:
			if (parse_u64("--threads", optarg, 256, &v) < 0)
				goto usage;
			o.cfg.threads = (unsigned int)v;
			break;
		case OPT_STAT:
			o.stat = true;
			break;
		case OPT_STAT_INSN:
			o.stat = true;
			o.stat_flags |= 1;
			break;
		case OPT_STAT_BLOCKS:
			o.stat = true;
			o.stat_flags |= 2;
			break;
		case OPT_NO_INST:
			o.no_inst = true;
			break;
		case 'q':
		case OPT_QUIET:
			o.quiet = true;
			break;
		case OPT_OFFSET:
			o.offset = true;
			break;
		case OPT_TIME:
			o.time = true;
			break;
		case OPT_RAW_INSN:
			o.raw_insn = true;
			break;
		case OPT_CHECK:
		case OPT_ATT:
		case OPT_BLOCK_DEC:
			break;
		case OPT_ISCACHE_LIMIT:
			if (parse_u64("--iscache-limit", optarg, UINT64_MAX, &v) < 0)
				goto usage;
			break;
		case OPT_INSN_DEC:
			o.insn_decoder = true;
			break;
		case OPT_EVENT_TIME:
			o.event_time = true;
			break;
		case OPT_EVENT_IP:
			o.event_ip = true;
			break;
		case OPT_EVENT_TICK:
			o.cfg.flags |= HWT_DEC_F_TICK;
			break;
		case OPT_SHOW_BLOCKS:
			o.show_blocks = true;
			break;
		case OPT_END_ON_CALL:
			o.cfg.flags |= HWT_DEC_F_END_ON_CALL;
			break;
		case OPT_END_ON_JUMP:
			o.cfg.flags |= HWT_DEC_F_END_ON_JUMP;
			break;
		case '?':
			ret = hwt_cli_usage_error("script", "unknown or incomplete option '%s'",
						  argv[optind - 1]);
			goto out;
		default:
			if (c >= OPT_FILTER && c < OPT_FILTER + 12) {
				int f = (c - OPT_FILTER) / 3, j = (c - OPT_FILTER) % 3;

				if (parse_u64(longopts[0].name, optarg, j == 0 ? 15 : UINT64_MAX,
					      &v) < 0)
					goto usage;
				if (j == 0)
					o.cfg.filter.addr_cfg |= v << (4 * f);
				else if (j == 1)
					o.cfg.filter.addr_a[f] = v;
				else
					o.cfg.filter.addr_b[f] = v;
				break;
			}
			if (c >= OPT_PEVENT && c < OPT_PEVENT + (int)HWT_ARRAY_SIZE(pevent_names)) {
				err = script_sb_option(o.sb, pevent_names[c - OPT_PEVENT], optarg);
				if (err < 0) {
					ret = err == -HWT_EINVAL ? HWT_EXIT_USAGE : HWT_EXIT_ERROR;
					goto out;
				}
				if (!strncmp(pevent_names[c - OPT_PEVENT], "pevent:primary", 14) ||
				    !strncmp(pevent_names[c - OPT_PEVENT], "pevent:secondary", 16))
					have_code = true;
				break;
			}
			ret = hwt_cli_usage_error("script", "unexpected option");
			goto out;
		}
	}
	if (optind < argc) {
		ret = hwt_cli_usage_error("script", "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (!pt_arg) {
		ret = hwt_cli_usage_error("script", "give the trace with --pt FILE");
		goto out;
	}
	if (!have_code) {
		ret = hwt_cli_usage_error("script", "give the traced code with --raw FILE:BASE, "
						    "--elf FILE or --pevent:primary FILE");
		goto out;
	}
	if (o.ptxed && !engine_set)
		o.cfg.engine = HWT_DEC_ENGINE_PTXED;
	if (o.stat && !o.stat_flags)
		o.stat_flags = o.insn_decoder ? 1 : 3;
	if (load_pt(&pt, pt_arg) < 0)
		goto out;
	err = script_sb_setup(o.sb, img, &o.cfg);
	if (err < 0)
		goto out;
	err = hwt_dec_alloc(&dec, &o.cfg, ic);
	if (err < 0) {
		hwt_cli_error("script: cannot create the decoder: %s", hwt_strerror(err));
		goto out;
	}
	hwt_dec_set_context(dec, -1, -1, img);
	memset(&pr, 0, sizeof(pr));
	pr.o = &o;
	pr.dec = dec;
	pr.out = stdout;
	pr.sb = script_sb_active(o.sb) ? o.sb : NULL;
	memset(&sink, 0, sizeof(sink));
	sink.size = sizeof(sink);
	sink.rec = o.ptxed ? ptxed_rec : o.records ? records_rec : view_rec;
	sink.ctx = &pr;
	if (!o.ptxed && !o.records) {
		sink.want = HWT_DEC_WANT(HWT_DEC_REC_GAP) | HWT_DEC_WANT(HWT_DEC_REC_EVENT);
		if (o.view_insn || o.view_branch)
			sink.want |= HWT_DEC_WANT(HWT_DEC_REC_BLOCK);
		if (o.view_call || o.flow)
			sink.want |= HWT_DEC_WANT(HWT_DEC_REC_CALL);
		if (o.view_return || o.flow)
			sink.want |= HWT_DEC_WANT(HWT_DEC_REC_RETURN);
		if (o.flow || o.view_events)
			sink.want |= HWT_DEC_WANT(HWT_DEC_REC_SWITCH);
		if (pr.sb)
			sink.want |= HWT_DEC_WANT(HWT_DEC_REC_NOTE);
	}
	err = hwt_dec_add_sink(dec, &sink);
	if (err == 0)
		err = hwt_dec_decode(dec, pt.data, pt.len);
	if (pr.sb)
		script_sb_finish(pr.sb);
	fflush(stdout);
	if (err < 0) {
		if (err == -EIO || err == -EPIPE)
			hwt_cli_error("script: cannot write the output: %s", strerror(-err));
		else
			hwt_cli_error("script: decoding failed: %s", hwt_strerror(err));
		goto out;
	}
	hwt_dec_stats(dec, &pr.stats);
	if (o.stat) {
		if (o.ptxed) {
			if (o.stat_flags & 1)
				printf("insn: %" PRIu64 ".\n", pr.stats.insns);
			if (o.stat_flags & 2)
				printf("blocks:\t%" PRIu64 ".\n", pr.stats.blocks);
		} else {
			printf("insns: %" PRIu64 "  blocks: %" PRIu64 "  segments: %" PRIu64
			       " (libipt: %" PRIu64 ")  gaps: %" PRIu64 " (%" PRIu64 " bytes)  "
			       "overflows: %" PRIu64 "  calls: %" PRIu64 "  returns: %" PRIu64
			       " (unknown frame: %" PRIu64 ", unwound: %" PRIu64 ")\n",
			       pr.stats.insns, pr.stats.blocks, pr.stats.segments,
			       pr.stats.segments_fallback, pr.stats.gaps, pr.stats.gap_bytes,
			       pr.stats.overflows, pr.stats.calls, pr.stats.returns,
			       pr.stats.unknown_returns, pr.stats.unwound);
		}
	}
	fflush(stdout);
	ret = ferror(stdout) ? HWT_EXIT_ERROR : HWT_EXIT_OK;
	goto out;
usage:
	ret = HWT_EXIT_USAGE;
out:
	hwt_dec_free(dec);
	script_sb_free(o.sb);
	hwt_dec_image_put(img);
	hwt_dec_icache_free(ic);
	if (pt.map)
		munmap(pt.map, pt.map_len);
	free(longopts);
	return ret;
}
