/*
 * cli/script_samples.c - `hwtrace script` on a recording of samples (.hwt
 * or perf.data, through format's session): one line per sample in perf
 * script's spirit (comm, pid/tid, cpu, time, period, event, ip,
 * symbol+offset, object) with its call chain under it. Addresses are
 * resolved through the process map (symbolize's hwt_sym_aspace), fed with
 * the recording's own sideband, its build-ids and its copy of the vDSO,
 * so a program rebuilt since the recording is not silently misnamed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include "cli/cli.h"
#include "format/format.h"
#include "symbolize/symbolize.h"

struct script_stats {
	uint64_t samples, shown, frames, unmapped, unsymbolized, lost_records, lost_samples;
};

struct script {
	struct hwt_fmt_session *s;
	struct hwt_sym_cache *cache;
	struct hwt_sym_aspace *as;
	struct hwt_sym_hint hint;
	bool no_callchain, show_sideband, inline_frames, ns;
	unsigned max_stack;
	int *pids, *tids;
	size_t npids, ntids;
	const char *comm;
	struct script_stats st;
	const struct hwt_fmt_evlist *ev;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hwtrace script [-i FILE] [-G] [--max-stack N] [--pid PIDS] [--tid TIDS]\n"
		"                      [--comm NAME] [--inline] [--show-sideband] [--ns]\n"
		"                      [--kallsyms FILE] [--debug-dir DIR] [-q]\n"
		"       hwtrace script --pt ...   (raw Intel PT; see 'hwtrace script --pt --help')\n"
		"\n"
		"Prints every sample of a recording (hwtrace's .hwt or perf.data): command,\n"
		"pid/tid, CPU, time, period, event, address with symbol+offset and object,\n"
		"and the call chain under it.\n"
		"\n"
		"  -i, --input FILE     the recording (default hwtrace.hwt)\n"
		"  -G, --hide-call-graph  no call chains\n"
		"      --max-stack N    at most N frames per chain (default 127)\n"
		"      --pid PIDS       only these processes (comma-separated)\n"
		"      --tid TIDS       only these threads\n"
		"      --comm NAME      only threads with this command name\n"
		"      --inline         show inlined functions as frames (DWARF)\n"
		"      --show-sideband  print mmap, comm, fork, exit and lost records too\n"
		"      --ns             times in nanoseconds\n"
		"      --kallsyms FILE  kernel symbols (default /proc/kallsyms when the\n"
		"                       recording is from this kernel)\n"
		"      --debug-dir DIR  look for separate debug files in DIR first\n"
		"  -q, --quiet          no summary line at the end\n"
		"  -h, --help           show this help\n");
}

static int parse_list(const char *s, int **out, size_t *n)
{
	char *copy = strdup(s), *save = NULL;

	*n = 0;
	*out = NULL;
	if (!copy)
		return -ENOMEM;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		long v = strtol(t, &end, 10);
		int *nv;

		if (*end || v < 0) {
			free(copy);
			return -HWT_EINVAL;
		}
		nv = realloc(*out, (*n + 1) * sizeof(int));
		if (!nv) {
			free(copy);
			return -ENOMEM;
		}
		*out = nv;
		(*out)[(*n)++] = (int)v;
	}
	free(copy);
	return *n ? 0 : -HWT_EINVAL;
}

static bool in_list(const int *v, size_t n, uint32_t x)
{
	for (size_t i = 0; i < n; i++) {
		if ((uint32_t)v[i] == x)
			return true;
	}
	return false;
}

/* One line naming the cause and the fix for a file that cannot be read. */
static int file_error(const char *path, int err, uint64_t off)
{
	switch (-err) {
	case ENOENT:
		hwt_cli_error("%s: no such file (record one with 'hwtrace record', or give it "
			      "with -i)",
			      path);
		break;
	case EACCES:
	case EPERM:
		hwt_cli_error("%s: permission denied (check the file's owner and mode)", path);
		break;
	case HWT_EFORMAT:
	case HWT_ETRUNC:
	case HWT_ECHECKSUM:
	case HWT_ECOMPRESS:
	case HWT_ETOOBIG:
		hwt_cli_error("%s: %s at offset %" PRIu64
			      " (not a hwtrace or perf.data recording, or it is damaged)",
			      path, hwt_strerror(err), off);
		break;
	case HWT_EVERSION:
		hwt_cli_error("%s: written by a newer hwtrace; upgrade hwtrace to read it", path);
		break;
	default:
		hwt_cli_error("%s: %s (at offset %" PRIu64 ")", path, hwt_strerror(err), off);
		break;
	}
	return HWT_EXIT_ERROR;
}

/* --- sideband ------------------------------------------------------------- */

static void feed(struct script *sc, const struct hwt_fmt_record *rec)
{
	switch (rec->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		struct hwt_sym_mmap_event ev = {
			.pid = rec->u.mmap.pid,
			.tid = rec->u.mmap.tid,
			.time = rec->id.time,
			.start = rec->u.mmap.addr,
			.len = rec->u.mmap.len,
			.pgoff = rec->u.mmap.pgoff,
			.prot = rec->type == PERF_RECORD_MMAP2
					? rec->u.mmap.prot
					: (rec->misc & PERF_RECORD_MISC_MMAP_DATA ? 0 : PROT_EXEC),
			.filename = rec->u.mmap.filename,
			.build_id = rec->u.mmap.has_build_id ? rec->u.mmap.build_id : NULL,
			.build_id_len = rec->u.mmap.has_build_id ? rec->u.mmap.build_id_size : 0,
		};

		if ((rec->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL)
			ev.pid = UINT32_MAX;
		hwt_sym_aspace_mmap(sc->as, &ev);
		break;
	}
	case PERF_RECORD_COMM: {
		struct hwt_sym_comm_event ev = {rec->u.comm.pid, rec->u.comm.tid, rec->id.time,
						rec->u.comm.comm,
						(rec->misc & PERF_RECORD_MISC_COMM_EXEC) != 0};

		hwt_sym_aspace_comm(sc->as, &ev);
		break;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		struct hwt_sym_task_event ev = {rec->u.fork.pid, rec->u.fork.ppid, rec->u.fork.tid,
						rec->u.fork.ptid, rec->u.fork.time};

		if (rec->type == PERF_RECORD_FORK)
			hwt_sym_aspace_fork(sc->as, &ev);
		else
			hwt_sym_aspace_exit(sc->as, &ev);
		break;
	}
	case PERF_RECORD_LOST:
		sc->st.lost_records += rec->u.lost.lost;
		break;
	case PERF_RECORD_LOST_SAMPLES:
		sc->st.lost_samples += rec->u.lost_samples.lost;
		break;
	default:
		break;
	}
}

static void print_time(const struct script *sc, uint64_t t)
{
	if (sc->ns)
		printf("%" PRIu64 ".%09" PRIu64, t / 1000000000u, t % 1000000000u);
	else
		printf("%" PRIu64 ".%06" PRIu64, t / 1000000000u, (t % 1000000000u) / 1000u);
}

static void print_sideband(struct script *sc, const struct hwt_fmt_record *rec)
{
	const char *name = hwt_fmt_record_type_name(rec->type);

	switch (rec->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		break;
	default:
		return;
	}
	printf("%16s %6" PRIu32 "/%-6" PRIu32 " [%03" PRIu32 "] ", "", rec->id.pid, rec->id.tid,
	       rec->id.cpu);
	print_time(sc, rec->id.time);
	printf(": %s", name ? name : "?");
	switch (rec->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		printf(" %" PRIu32 "/%" PRIu32 ": [%#" PRIx64 "(%#" PRIx64 ") @ %#" PRIx64 "]: %s\n",
		       rec->u.mmap.pid, rec->u.mmap.tid, rec->u.mmap.addr, rec->u.mmap.len,
		       rec->u.mmap.pgoff, rec->u.mmap.filename);
		break;
	case PERF_RECORD_COMM:
		printf("%s: %s %" PRIu32 "/%" PRIu32 "\n",
		       rec->misc & PERF_RECORD_MISC_COMM_EXEC ? " EXEC" : "", rec->u.comm.comm,
		       rec->u.comm.pid, rec->u.comm.tid);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		printf(" %" PRIu32 "/%" PRIu32 " <- %" PRIu32 "/%" PRIu32 "\n", rec->u.fork.pid,
		       rec->u.fork.tid, rec->u.fork.ppid, rec->u.fork.ptid);
		break;
	case PERF_RECORD_LOST:
		printf(" %" PRIu64 " records\n", rec->u.lost.lost);
		break;
	case PERF_RECORD_LOST_SAMPLES:
		printf(" %" PRIu64 " samples\n", rec->u.lost_samples.lost);
		break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		printf(" %s%s", rec->misc & PERF_RECORD_MISC_SWITCH_OUT ? "OUT" : "IN",
		       rec->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT ? " preempt" : "");
		if (rec->type == PERF_RECORD_SWITCH_CPU_WIDE)
			printf(" %s %" PRIu32 "/%" PRIu32,
			       rec->misc & PERF_RECORD_MISC_SWITCH_OUT ? "next" : "prev",
			       rec->u.sw.next_prev_pid, rec->u.sw.next_prev_tid);
		putchar('\n');
		break;
	default:
		putchar('\n');
		break;
	}
}

/* --- samples -------------------------------------------------------------- */

/* perf's kernel map names ("[kernel.kallsyms]_text") are shown as perf
 * shows them. */
static const char *object_name(const char *path)
{
	return strncmp(path, "[kernel.kallsyms]", 17) ? path : "[kernel.kallsyms]";
}

/* Prints "ADDR sym+0xOFF (object)" for one address; counts what is not
 * known. */
static void print_addr(struct script *sc, uint32_t pid, uint64_t time, uint64_t ip,
		       const char *indent)
{
	struct hwt_sym_loc loc;
	struct hwt_sym_func fn;
	int err = hwt_sym_aspace_lookup(sc->as, pid, time, ip, &loc);

	sc->st.frames++;
	if (err < 0) {
		sc->st.unmapped++;
		printf("%s%16" PRIx64 " [unknown] ([unknown])\n", indent, ip);
		return;
	}
	if (!loc.obj || hwt_sym_func_at(loc.obj, loc.addr, 0, &sc->hint, &fn) < 0) {
		sc->st.unsymbolized++;
		printf("%s%16" PRIx64 " [unknown] (%s)\n", indent, ip, object_name(loc.path));
		return;
	}
	if (sc->inline_frames) {
		struct hwt_sym_frame frames[16];
		struct hwt_sym_info info;
		int n = hwt_sym_lookup(loc.obj, loc.addr, 0, &info, frames, 16);

		/* Inlined callees first (innermost), each on its own line. */
		for (int i = 0; i + 1 < n; i++)
			printf("%s%16" PRIx64 " %s (inlined)\n", indent, ip,
			       frames[i].func ? frames[i].func : "[unknown]");
	}
	printf("%s%16" PRIx64 " %s+%#" PRIx64 " (%s)\n", indent, ip, fn.name, loc.addr - fn.addr,
	       object_name(loc.path));
}

static const char *event_name(const struct script *sc, int ev)
{
	const struct hwt_fmt_event *e;

	if (ev < 0 || (size_t)ev >= hwt_fmt_evlist_count(sc->ev))
		return "event";
	e = hwt_fmt_evlist_event(sc->ev, (size_t)ev);
	return e->name && e->name[0] ? e->name : "event";
}

static bool lbr_callstack(const struct script *sc, int ev)
{
	const struct hwt_fmt_event *e;

	if (ev < 0 || (size_t)ev >= hwt_fmt_evlist_count(sc->ev))
		return false;
	e = hwt_fmt_evlist_event(sc->ev, (size_t)ev);
	return (e->attr.sample_type & PERF_SAMPLE_BRANCH_STACK) &&
	       (e->attr.branch_sample_type & PERF_SAMPLE_BRANCH_CALL_STACK);
}

static void print_sample(struct script *sc, const struct hwt_fmt_record *rec)
{
	const struct hwt_fmt_sample *s = &rec->u.sample;
	const char *comm = hwt_sym_aspace_comm_of(sc->as, s->tid, s->time);
	bool lbr = lbr_callstack(sc, rec->event) && s->branch_nr;
	unsigned shown = 0;
	char pidbuf[16];

	sc->st.samples++;
	if (sc->npids && !in_list(sc->pids, sc->npids, s->pid))
		return;
	if (sc->ntids && !in_list(sc->tids, sc->ntids, s->tid))
		return;
	if (sc->comm && (!comm || strcmp(comm, sc->comm)))
		return;
	sc->st.shown++;
	if (!comm) {
		snprintf(pidbuf, sizeof(pidbuf), ":%" PRIu32, s->pid);
		comm = pidbuf;
	}
	printf("%16s %6" PRIu32 "/%-6" PRIu32 " [%03" PRIu32 "] ", comm, s->pid, s->tid, s->cpu);
	print_time(sc, s->time);
	printf(": %10" PRIu64 " %s: ", s->period, event_name(sc, rec->event));
	print_addr(sc, s->pid, s->time, s->ip, "");
	if (sc->no_callchain || !(s->callchain_nr || lbr))
		return;
	/* The chain: the kernel part and, from frame pointers or the LBR
	 * call stack, the user part; context markers switch between them. */
	{
		bool user = false;

		for (uint64_t i = 0; i < s->callchain_nr && shown < sc->max_stack; i++) {
			uint64_t ip;

			memcpy(&ip, s->callchain + i, sizeof(ip));
			if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
				user = ip == (uint64_t)PERF_CONTEXT_USER;
				continue;
			}
			if (user && lbr)
				break; /* the LBR call stack gives the user part */
			print_addr(sc, s->pid, s->time, ip, "\t");
			shown++;
		}
	}
	if (lbr) {
		/* The call stack: the sampled user address, then each active
		 * call's site (the "from" of the branch entries). */
		if (!(s->ip >> 63) && shown < sc->max_stack) {
			print_addr(sc, s->pid, s->time, s->ip, "\t");
			shown++;
		}
		for (uint64_t i = 0; i < s->branch_nr && shown < sc->max_stack; i++) {
			uint64_t from;

			memcpy(&from, s->branches + i * sizeof(struct perf_branch_entry),
			       sizeof(from));
			print_addr(sc, s->pid, s->time, from, "\t");
			shown++;
		}
	}
	putchar('\n');
}

/* --- setup ------------------------------------------------------------------ */

static void load_metadata(struct script *sc)
{
	const struct hwt_fmt_meta *m;
	size_t plen = strlen(HWT_META_BUILDID_PREFIX);

	m = hwt_fmt_session_meta_find(sc->s, HWT_META_VDSO_IMAGE);
	if (m && m->type == HWT_FMT_META_BYTES && m->len)
		hwt_sym_aspace_image(sc->as, "[vdso]", m->v.bytes, m->len);
	for (size_t i = 0; i < hwt_fmt_session_nmeta(sc->s); i++) {
		m = hwt_fmt_session_meta(sc->s, i);
		if (strncmp(m->key, HWT_META_BUILDID_PREFIX, plen) || m->type != HWT_FMT_META_BYTES ||
		    !m->len || m->len > 64)
			continue;
		hwt_sym_aspace_build_id(sc->as, m->key + plen, m->v.bytes, m->len);
	}
}

/* /proc/kallsyms names this machine's kernel: use it only for recordings
 * made under the same kernel release. */
static const char *default_kallsyms(const struct hwt_fmt_session *s)
{
	const struct hwt_fmt_meta *m = hwt_fmt_session_meta_find(s, HWT_META_KERNEL);
	struct utsname u;

	if (!m || m->type != HWT_FMT_META_STR || uname(&u) != 0 || strcmp(m->v.str, u.release))
		return NULL;
	return "/proc/kallsyms";
}

int hwt_script_samples(int argc, char **argv)
{
	enum { O_MAXSTACK = 256, O_PID, O_TID, O_COMM, O_INLINE, O_SIDEBAND, O_NS, O_KALLSYMS,
	       O_DEBUGDIR };
	static const struct option opts[] = {
		{"input", required_argument, NULL, 'i'},
		{"hide-call-graph", no_argument, NULL, 'G'},
		{"max-stack", required_argument, NULL, O_MAXSTACK},
		{"pid", required_argument, NULL, O_PID},
		{"tid", required_argument, NULL, O_TID},
		{"comm", required_argument, NULL, O_COMM},
		{"inline", no_argument, NULL, O_INLINE},
		{"show-sideband", no_argument, NULL, O_SIDEBAND},
		{"ns", no_argument, NULL, O_NS},
		{"kallsyms", required_argument, NULL, O_KALLSYMS},
		{"debug-dir", required_argument, NULL, O_DEBUGDIR},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct hwt_fmt_session_config scfg;
	struct hwt_sym_aspace_config acfg;
	struct hwt_sym_config ycfg;
	struct hwt_fmt_record rec;
	struct script sc;
	const char *input = "hwtrace.hwt", *kallsyms = NULL, *debug_dir = NULL;
	bool quiet = false;
	uint64_t off = 0;
	int c, err, ret = HWT_EXIT_ERROR;
	unsigned long long v;

	memset(&sc, 0, sizeof(sc));
	sc.max_stack = 127;
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:Gqh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case 'G':
			sc.no_callchain = true;
			break;
		case O_MAXSTACK:
			if (hwt_cli_parse_u64(optarg, false, &v) < 0 || v > 100000)
				return hwt_cli_usage_error("script", "--max-stack takes a number");
			sc.max_stack = (unsigned)v;
			break;
		case O_PID:
			if (parse_list(optarg, &sc.pids, &sc.npids) < 0)
				return hwt_cli_usage_error("script", "--pid takes PIDs separated by "
								     "commas");
			break;
		case O_TID:
			if (parse_list(optarg, &sc.tids, &sc.ntids) < 0)
				return hwt_cli_usage_error("script", "--tid takes TIDs separated by "
								     "commas");
			break;
		case O_COMM:
			sc.comm = optarg;
			break;
		case O_INLINE:
			sc.inline_frames = true;
			break;
		case O_SIDEBAND:
			sc.show_sideband = true;
			break;
		case O_NS:
			sc.ns = true;
			break;
		case O_KALLSYMS:
			kallsyms = optarg;
			break;
		case O_DEBUGDIR:
			debug_dir = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return HWT_EXIT_OK;
		default:
			free(sc.pids);
			free(sc.tids);
			return hwt_cli_usage_error("script", "unknown option");
		}
	}
	if (optind != argc) {
		free(sc.pids);
		free(sc.tids);
		return hwt_cli_usage_error("script", "unexpected argument '%s' (the recording is "
						     "given with -i)",
					   argv[optind]);
	}

	hwt_fmt_session_config_init(&scfg);
	scfg.log = *hwt_cli_logger();
	err = hwt_fmt_session_open(&sc.s, input, &scfg, &off);
	if (err < 0) {
		ret = file_error(input, err, off);
		goto out;
	}
	sc.ev = hwt_fmt_session_evlist(sc.s);
	if (hwt_fmt_session_naux(sc.s)) {
		/* A trace, not samples: the decoder's mode reads it. */
		hwt_cli_error("%s holds an Intel PT trace (%zu AUX stream(s)), not samples: decode it "
			      "with 'hwtrace script --pt'",
			      input, hwt_fmt_session_naux(sc.s));
		goto out;
	}
	hwt_sym_config_init(&ycfg);
	ycfg.logger = *hwt_cli_logger();
	ycfg.debug_dir = debug_dir;
	err = hwt_sym_cache_alloc(&ycfg, &sc.cache);
	if (err < 0)
		goto oom;
	hwt_sym_aspace_config_init(&acfg);
	acfg.logger = *hwt_cli_logger();
	acfg.cache = sc.cache;
	acfg.kallsyms = kallsyms ? kallsyms : default_kallsyms(sc.s);
	err = hwt_sym_aspace_alloc(&acfg, &sc.as);
	if (err < 0)
		goto oom;
	load_metadata(&sc);

	while ((err = hwt_fmt_session_next(sc.s, &rec, &off)) != -HWT_EEOS) {
		if (err < 0) {
			/* A damaged chunk: say where, go on with the next one. */
			if (err == -HWT_ECHECKSUM || err == -HWT_ECOMPRESS || err == -HWT_ETRUNC) {
				hwt_cli_warn("%s: %s at offset %" PRIu64 ": records there are skipped",
					     input, hwt_strerror(err), off);
				if (hwt_fmt_session_kind(sc.s) == HWT_FMT_KIND_HWT)
					continue;
			}
			fflush(stdout);
			ret = file_error(input, err, off);
			goto out;
		}
		if (rec.type == PERF_RECORD_SAMPLE) {
			print_sample(&sc, &rec);
			continue;
		}
		feed(&sc, &rec);
		if (sc.show_sideband)
			print_sideband(&sc, &rec);
	}
	if (fflush(stdout) != 0) {
		hwt_cli_error("cannot write the output: %s", strerror(errno));
		goto out;
	}
	if (!quiet) {
		struct hwt_fmt_session_stats ss;

		hwt_fmt_session_stats(sc.s, &ss);
		hwt_cli_note("script: %" PRIu64 " samples%s, %" PRIu64 " frames (%" PRIu64
			     " unsymbolized, %" PRIu64 " unmapped); lost while recording: %" PRIu64
			     " records, %" PRIu64 " samples%s",
			     sc.st.samples, sc.st.shown != sc.st.samples ? " (some filtered out)" : "",
			     sc.st.frames, sc.st.unsymbolized, sc.st.unmapped, sc.st.lost_records,
			     sc.st.lost_samples, ss.bad_records ? "; malformed records skipped" : "");
	}
	ret = HWT_EXIT_OK;
	goto out;
oom:
	hwt_cli_error("out of memory");
out:
	hwt_sym_aspace_free(sc.as);
	hwt_sym_cache_free(sc.cache);
	hwt_fmt_session_close(sc.s);
	free(sc.pids);
	free(sc.tids);
	return ret;
}
