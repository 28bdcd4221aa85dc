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
#include "ptprint/ptprint.h"

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
	    "  -q, --quiet                  print nothing but errors (and --stat's line)\n"
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
	/* The decoder checks its files when it first reads code: a file the
	 * user named is checked here, for a clear error before decoding. */
	size = size ? size : UINT64_MAX;
	err = hwt_dec_file_check(arg, from, &size);
	if (err == 0)
		err = hwt_dec_image_add_file(img, arg, from, size, base);
	if (err == -HWT_EINVAL) {
		hwt_cli_error("script: cannot map --raw '%s' at 0x%" PRIx64 ": the file is empty, "
			      "not a regular file, or shorter than offset 0x%" PRIx64
			      "; check the path and the range",
			      arg, base, from);
		return -1;
	}
	if (err < 0) {
		hwt_cli_error("script: cannot map --raw '%s' at 0x%" PRIx64 ": %s; check the path",
			      arg, base, err > -HWT_EBASE ? strerror(-err) : hwt_strerror(err));
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
		uint64_t size;
		int err;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		/* checked here (the decoder checks when it first reads code) */
		size = ph.p_filesz;
		err = hwt_dec_file_check(path, ph.p_offset, &size);
		if (err == 0)
			err =
			    hwt_dec_image_add_file(img, path, ph.p_offset, size, ph.p_vaddr + bias);
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

/* The printer's sideband notes (what the --pevent sideband printed where
 * the decoder asked for a context). */
static int note_cb(void *ctx, uint64_t cookie, struct hwt_buf *out)
{
	return script_sb_note_text(ctx, cookie, out);
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
	struct hwt_ptp *ptp = NULL;
	struct hwt_ptp_config pcfg;
	struct hwt_dec_stats stats;
	struct pt_file pt;
	struct hwt_dec_sink sink;
	bool have_code = false, engine_set = false, itrace_set = false;
	char *pt_arg = NULL;
	int c, err, ret = HWT_EXIT_ERROR;

	memset(&o, 0, sizeof(o));
	memset(&pt, 0, sizeof(pt));
	hwt_dec_config_init(&o.cfg);
	o.cfg.log = *hwt_cli_logger();
	hwt_ptp_config_init(&pcfg);
	pcfg.views = HWT_PTP_BRANCH | HWT_PTP_ERROR;
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
	err = script_sb_alloc(&o.sb, ic);
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
			if (hwt_ptp_parse_itrace(optarg, &pcfg.views) < 0) {
				ret = hwt_cli_usage_error("script",
							  "unknown letter in --itrace=%s "
							  "(use i, b, c, r, e, v)",
							  optarg);
				goto out;
			}
			break;
		case OPT_FLOW:
			pcfg.flow = true;
			if (!itrace_set)
				pcfg.views = 0;
			break;
		case OPT_ENGINE:
			engine_set = true;
			if ((ret = hwt_cli_parse_engine("script", optarg, &o.cfg.engine)) != 0)
				goto out;
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
	if (!o.ptxed && !o.records && o.cfg.engine == HWT_DEC_ENGINE_PTXED &&
	    (pcfg.flow || (pcfg.views & (HWT_PTP_CALL | HWT_PTP_RETURN)))) {
		ret = hwt_cli_usage_error("script", "the ptxed engine decodes libipt's blocks "
						    "without call stacks: --flow and --itrace=c/r "
						    "need --engine fast or libipt");
		goto out;
	}
	if (o.stat && !o.stat_flags)
		o.stat_flags = o.insn_decoder ? 1 : 3;
	/* --quiet is ptxed's "print nothing except errors": in hwtrace's views
	 * too, so that `--stat --quiet` prints the errors and the summary. */
	if (o.quiet && !o.ptxed && !o.records) {
		pcfg.views &= HWT_PTP_ERROR;
		pcfg.flow = false;
	}
	if (load_pt(&pt, pt_arg) < 0)
		goto out;
	err = script_sb_setup(o.sb, &o.cfg, o.quiet);
	if (err < 0)
		goto out;
	err = hwt_dec_alloc(&dec, &o.cfg, ic);
	if (err < 0) {
		hwt_cli_error("script: cannot create the decoder: %s", hwt_strerror(err));
		goto out;
	}
	hwt_dec_set_context(dec, -1, -1, img);
	pcfg.format = o.ptxed ? HWT_PTP_PTXED : o.records ? HWT_PTP_RECORDS : HWT_PTP_VIEWS;
	pcfg.ptxed =
	    (o.no_inst ? HWT_PTP_X_NO_INST : 0) | (o.quiet ? HWT_PTP_X_QUIET : 0) |
	    (o.offset ? HWT_PTP_X_OFFSET : 0) | (o.time ? HWT_PTP_X_TIME : 0) |
	    (o.raw_insn ? HWT_PTP_X_RAW_INSN : 0) | (o.event_time ? HWT_PTP_X_EVENT_TIME : 0) |
	    (o.event_ip ? HWT_PTP_X_EVENT_IP : 0) | (o.show_blocks ? HWT_PTP_X_SHOW_BLOCKS : 0) |
	    (o.stat ? HWT_PTP_X_BLOCK_NUM : 0);
	pcfg.tconv = o.cfg.tconv;
	pcfg.write = hwt_cli_write_stdout;
	if (script_sb_active(o.sb)) {
		pcfg.note = note_cb;
		pcfg.ctx = o.sb;
	}
	err = hwt_ptp_alloc(&ptp, &pcfg);
	if (err < 0) {
		hwt_cli_error("script: %s", hwt_strerror(err));
		goto out;
	}
	hwt_ptp_sink(ptp, &sink);
	err = hwt_dec_add_sink(dec, &sink);
	if (err == 0)
		err = hwt_dec_decode(dec, pt.data, pt.len);
	if (err == 0)
		err = hwt_ptp_flush(ptp);
	fflush(stdout);
	if (err < 0) {
		if (err == -EIO || err == -EPIPE)
			hwt_cli_error("script: cannot write the output: %s", strerror(-err));
		else
			hwt_cli_error("script: decoding failed: %s", hwt_strerror(err));
		goto out;
	}
	hwt_dec_stats(dec, &stats);
	if (o.stat) {
		if (o.ptxed) {
			if (o.stat_flags & 1)
				printf("insn: %" PRIu64 ".\n", stats.insns);
			if (o.stat_flags & 2)
				printf("blocks:\t%" PRIu64 ".\n", stats.blocks);
		} else {
			printf("insns: %" PRIu64 "  blocks: %" PRIu64 "  segments: %" PRIu64
			       " (libipt: %" PRIu64 ")  gaps: %" PRIu64 " (%" PRIu64 " bytes)  "
			       "overflows: %" PRIu64 "  calls: %" PRIu64 "  returns: %" PRIu64
			       " (unknown frame: %" PRIu64 ", unwound: %" PRIu64 ")\n",
			       stats.insns, stats.blocks, stats.segments, stats.segments_fallback,
			       stats.gaps, stats.gap_bytes, stats.overflows, stats.calls,
			       stats.returns, stats.unknown_returns, stats.unwound);
		}
	}
	fflush(stdout);
	ret = ferror(stdout) ? HWT_EXIT_ERROR : HWT_EXIT_OK;
	goto out;
usage:
	ret = HWT_EXIT_USAGE;
out:
	hwt_ptp_free(ptp);
	hwt_dec_free(dec);
	script_sb_free(o.sb);
	hwt_dec_image_put(img);
	hwt_dec_icache_free(ic);
	if (pt.map)
		munmap(pt.map, pt.map_len);
	free(longopts);
	return ret;
}
