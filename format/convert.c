/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/convert.c - `hwtrace convert`: a .hwt recording rewritten as the
 * perf.data file `perf record` would have written for the same run, so that
 * Linux perf (and its own Intel PT decoder, independent of libipt) reads it.
 *
 * For a PT recording that means: the intel_pt event, whose attr type must
 * equal the PMU type in PERF_RECORD_AUXTRACE_INFO (perf finds its trace
 * event that way), a dummy:u event carrying the sideband as perf record's
 * tracking event does, the AUXTRACE_INFO record with the priv[] array of
 * tools/perf/util/intel-pt.h, the records in time order with FINISHED_ROUND
 * marks, and each AUX stream's bytes in PERF_RECORD_AUXTRACE records placed
 * after the PERF_RECORD_AUX that announced them. The writer lists those in
 * the HEADER_AUXTRACE index. Recordings of samples are copied record for
 * record with their events. Damaged chunks are skipped and counted; a
 * truncated file converts as far as it reads.
 */
#include "format/format_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* tools/perf/util/intel-pt.h, the priv[] slots of AUXTRACE_INFO. */
enum {
	PT_PMU_TYPE,
	PT_TIME_SHIFT,
	PT_TIME_MULT,
	PT_TIME_ZERO,
	PT_CAP_USER_TIME_ZERO,
	PT_TSC_BIT,
	PT_NORETCOMP_BIT,
	PT_HAVE_SCHED_SWITCH,
	PT_SNAPSHOT_MODE,
	PT_PER_CPU_MMAPS,
	PT_MTC_BIT,
	PT_MTC_FREQ_BITS,
	PT_TSC_CTC_N,
	PT_TSC_CTC_D,
	PT_CYC_BIT,
	PT_MAX_NONTURBO_RATIO,
	PT_FILTER_STR_LEN, /* then the filter string, NUL-padded to 8 bytes */
	PT_PRIV_FIXED,	   /* ... then cap_event_trace */
};

/* The longest filter string we carry (the kernel's own limit on what
 * PERF_EVENT_IOC_SET_FILTER takes is a page). */
#define PT_FILTER_MAX 4096u

/* The intel_pt PMU's config layout (/sys/bus/event_source/devices/
 * intel_pt/format), the same on every CPU with PT; perf reads these masks
 * from AUXTRACE_INFO rather than from the machine it runs on. */
#define PT_CFG_CYC	  (1ull << 1)
#define PT_CFG_MTC	  (1ull << 9)
#define PT_CFG_TSC	  (1ull << 10)
#define PT_CFG_NORETCOMP  (1ull << 11)
#define PT_CFG_MTC_PERIOD (0xfull << 14)

#define DUMMY_ID_BASE 1000000u	 /* above any id we could collide with */
#define ROUND_RECORDS 4096u	 /* records between FINISHED_ROUND marks */
#define AUX_PIECE     (4u << 20) /* bytes per PERF_RECORD_AUXTRACE at most */

/* A stream of AUX bytes and how far it has been written. */
struct cv_aux {
	const struct hwt_fmt_aux_stream *st;
	size_t index; /* session AUX stream position: perf's queue idx */
	size_t seg;   /* current segment */
	uint64_t pos; /* bytes of it written (or skipped) */
};

struct cv {
	const struct hwt_fmt_convert_config *cfg;
	struct hwt_fmt_session *s;
	struct hwt_fmt_perf_writer *w;
	struct hwt_fmt_convert_stats *st;
	struct hwt_fmt_evlist *out_ev;
	int pt_event;	    /* index of the intel_pt event, or -1 */
	bool move_tracking; /* sideband of pt_event goes to the dummy */
	uint64_t dummy_id;
	uint64_t sample_type; /* of pt_event */
	struct cv_aux *aux;
	size_t naux;
	uint8_t *buf; /* AUX copy buffer, AUX_PIECE bytes */
	uint8_t *rec; /* a record being rewritten, 64 KiB */
	uint64_t since_round;
	uint64_t last_time;		/* perf clock of the newest record so far */
	uint32_t time_shift, time_mult; /* TSC conversion, mult 0: none */
	uint64_t time_zero;
	struct hwt_buf seen; /* paths given a build-id, NUL-separated */
};

void hwt_fmt_convert_config_init(struct hwt_fmt_convert_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
}

static const struct hwt_fmt_meta *meta(const struct cv *c, const char *key)
{
	return hwt_fmt_session_meta_find(c->s, key);
}

static uint64_t meta_u64(const struct cv *c, const char *key, uint64_t dflt)
{
	const struct hwt_fmt_meta *m = meta(c, key);

	return m && (m->type == HWT_FMT_META_U64 || m->type == HWT_FMT_META_I64) ? m->v.u64 : dflt;
}

static const char *meta_str(const struct cv *c, const char *key)
{
	const struct hwt_fmt_meta *m = meta(c, key);

	return m && m->type == HWT_FMT_META_STR ? m->v.str : NULL;
}

/* The event that carries the AUX trace: the one whose type is the PMU type
 * the recorder wrote down, else the one named intel_pt. */
static int find_pt_event(const struct cv *c)
{
	const struct hwt_fmt_evlist *ev = hwt_fmt_session_evlist(c->s);
	const struct hwt_fmt_meta *m = meta(c, "pt.pmu_type");
	size_t n = hwt_fmt_evlist_count(ev);

	for (size_t i = 0; m && i < n; i++)
		if (hwt_fmt_evlist_event(ev, i)->attr.type == m->v.u64)
			return (int)i;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(hwt_fmt_evlist_event(ev, i)->name, "intel_pt", 8))
			return (int)i;
	return -1;
}

static bool is_dummy(const struct perf_event_attr *a)
{
	return a->type == PERF_TYPE_SOFTWARE && a->config == PERF_COUNT_SW_DUMMY;
}

/* The output events: the recording's, and for a PT recording whose trace
 * event also asked for the sideband (the emulator's), a dummy:u event that
 * takes the sideband over, as perf record's tracking event does. */
static int build_events(struct cv *c)
{
	const struct hwt_fmt_evlist *ev = hwt_fmt_session_evlist(c->s);
	size_t n = hwt_fmt_evlist_count(ev);
	uint64_t max_id = 0;
	bool have_dummy = false;
	int err;

	err = hwt_fmt_evlist_alloc(&c->out_ev);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		const struct hwt_fmt_event *e = hwt_fmt_evlist_event(ev, i);

		have_dummy |= is_dummy(&e->attr);
		for (size_t j = 0; j < e->nids; j++)
			max_id = e->ids[j] > max_id ? e->ids[j] : max_id;
	}
	if (c->pt_event >= 0) {
		const struct perf_event_attr *a =
		    &hwt_fmt_evlist_event(ev, (size_t)c->pt_event)->attr;

		c->sample_type = a->sample_type;
		c->move_tracking =
		    !have_dummy && a->sample_id_all && (a->mmap || a->mmap2 || a->comm || a->task);
	}
	for (size_t i = 0; i < n; i++) {
		const struct hwt_fmt_event *e = hwt_fmt_evlist_event(ev, i);
		struct perf_event_attr a = e->attr;

		/* perf script checks its -F fields against every event,
		 * samples or not: perf record's intel_pt and dummy events have
		 * IP. The PT event has no PERF_RECORD_SAMPLE (the trace is its
		 * data) and IP is not in the sample_id trailer, so adding it
		 * changes no record's layout. */
		if ((int)i == c->pt_event)
			a.sample_type |= PERF_SAMPLE_IP;
		if (c->move_tracking && (int)i == c->pt_event) {
			a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 0;
			a.mmap_data = a.context_switch = a.namespaces = 0;
			a.ksymbol = a.bpf_event = a.cgroup = a.text_poke = 0;
		}
		err = hwt_fmt_evlist_add(c->out_ev, &a, sizeof(a), e->name, e->ids, e->nids);
		if (err < 0)
			return err;
	}
	if (c->move_tracking) {
		const struct hwt_fmt_event *e = hwt_fmt_evlist_event(ev, (size_t)c->pt_event);
		struct perf_event_attr a;

		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_DUMMY;
		a.sample_period = 1;
		a.sample_type = e->attr.sample_type | PERF_SAMPLE_IP;
		a.read_format = e->attr.read_format;
		a.sample_id_all = 1;
		a.exclude_kernel = e->attr.exclude_kernel;
		a.exclude_hv = e->attr.exclude_hv;
		a.mmap = e->attr.mmap;
		a.mmap2 = e->attr.mmap2;
		a.comm = e->attr.comm;
		a.comm_exec = e->attr.comm_exec;
		a.task = e->attr.task;
		a.mmap_data = e->attr.mmap_data;
		a.context_switch = e->attr.context_switch;
		a.namespaces = e->attr.namespaces;
		a.ksymbol = e->attr.ksymbol;
		a.bpf_event = e->attr.bpf_event;
		a.cgroup = e->attr.cgroup;
		a.text_poke = e->attr.text_poke;
		c->dummy_id = (max_id > DUMMY_ID_BASE ? max_id : DUMMY_ID_BASE) + 1;
		err = hwt_fmt_evlist_add(c->out_ev, &a, sizeof(a),
					 a.exclude_kernel ? "dummy:u" : "dummy", &c->dummy_id, 1);
		if (err < 0)
			return err;
		c->st->dummy_added = true;
	}
	return 0;
}

static int add_features(struct cv *c)
{
	const char *v;
	char cpuid[128];
	uint8_t nr[8];
	int err = 0;
	static const struct {
		unsigned int feat;
		const char *key;
	} strs[] = {
	    {FMT_FEAT_HOSTNAME, HWT_META_HOST},
	    {FMT_FEAT_OSRELEASE, HWT_META_KERNEL},
	    {FMT_FEAT_ARCH, HWT_META_ARCH},
	    {FMT_FEAT_CPUDESC, HWT_META_CPU_DESC},
	};

	for (size_t i = 0; i < HWT_ARRAY_SIZE(strs) && !err; i++)
		if ((v = meta_str(c, strs[i].key)))
			err = hwt_fmt_perf_writer_feature_str(c->w, strs[i].feat, v);
	if (!err && c->cfg->version)
		err = hwt_fmt_perf_writer_feature_str(c->w, FMT_FEAT_VERSION, c->cfg->version);
	/* perf's x86 cpuid string: vendor,family,model,stepping. */
	if (!err && (v = meta_str(c, HWT_META_CPU_VENDOR))) {
		snprintf(cpuid, sizeof(cpuid), "%s,%llu,%llu,%llu", v,
			 (unsigned long long)meta_u64(c, HWT_META_CPU_FAMILY, 0),
			 (unsigned long long)meta_u64(c, HWT_META_CPU_MODEL, 0),
			 (unsigned long long)meta_u64(c, HWT_META_CPU_STEPPING, 0));
		err = hwt_fmt_perf_writer_feature_str(c->w, FMT_FEAT_CPUID, cpuid);
	}
	if (!err && meta(c, HWT_META_NR_CPUS)) {
		uint64_t n = meta_u64(c, HWT_META_NR_CPUS, 1);

		n = n > UINT32_MAX ? UINT32_MAX : n;
		hwt_put_le32(nr, (uint32_t)n);	   /* available */
		hwt_put_le32(nr + 4, (uint32_t)n); /* online */
		err = fmt_perf_writer_feature_raw(c->w, FMT_FEAT_NRCPUS, nr, sizeof(nr));
	}
	if (!err && c->cfg->argc > 0)
		err = hwt_fmt_perf_writer_cmdline(c->w, c->cfg->argc, c->cfg->argv);
	for (size_t i = 0; i < hwt_fmt_session_nmeta(c->s) && !err; i++) {
		const struct hwt_fmt_meta *m = hwt_fmt_session_meta(c->s, i);
		const char *path;

		if (strncmp(m->key, HWT_META_BUILDID_PREFIX, strlen(HWT_META_BUILDID_PREFIX)) ||
		    m->type != HWT_FMT_META_BYTES || m->len == 0 || m->len > 20)
			continue;
		path = m->key + strlen(HWT_META_BUILDID_PREFIX);
		err =
		    hwt_fmt_perf_writer_buildid(c->w, -1, path, m->v.bytes, m->len, path[0] == '[');
	}
	return err;
}

/* PERF_RECORD_AUXTRACE_INFO for intel_pt, from what the recording wrote
 * down about the trace (docs/convert.md lists the sources). */
static int write_auxtrace_info(struct cv *c)
{
	const struct hwt_fmt_event *e =
	    hwt_fmt_evlist_event(hwt_fmt_session_evlist(c->s), (size_t)c->pt_event);
	const struct hwt_fmt_evlist *ev = hwt_fmt_session_evlist(c->s);
	uint64_t priv[PT_PRIV_FIXED + PT_FILTER_MAX / 8 + 1] = {0};
	const char *filter = meta_str(c, "pt.config.filter");
	size_t flen = filter ? strlen(filter) : 0, n = PT_PRIV_FIXED;
	bool per_cpu = false, switches = false;

	for (size_t i = 0; i < c->naux; i++)
		per_cpu |= c->aux[i].st->cpu >= 0;
	for (size_t i = 0; i < hwt_fmt_evlist_count(ev); i++)
		switches |= hwt_fmt_evlist_event(ev, i)->attr.context_switch;
	priv[PT_PMU_TYPE] = e->attr.type;
	priv[PT_TIME_SHIFT] = meta_u64(c, HWT_META_TIME_SHIFT, 0);
	priv[PT_TIME_MULT] = meta_u64(c, HWT_META_TIME_MULT, 0);
	priv[PT_TIME_ZERO] = meta_u64(c, HWT_META_TIME_ZERO, 0);
	/* perf decodes with timestamps only when it can convert TSC. */
	priv[PT_CAP_USER_TIME_ZERO] = priv[PT_TIME_MULT] != 0;
	priv[PT_TSC_BIT] = PT_CFG_TSC;
	priv[PT_NORETCOMP_BIT] = PT_CFG_NORETCOMP;
	/* 2: switches come as PERF_RECORD_SWITCH (the context_switch attr
	 * bit), which perf then requires of some event. */
	priv[PT_HAVE_SCHED_SWITCH] = switches ? 2 : 0;
	priv[PT_SNAPSHOT_MODE] = meta_u64(c, "pt.config.snapshot", 0) != 0;
	priv[PT_PER_CPU_MMAPS] = per_cpu;
	priv[PT_MTC_BIT] = PT_CFG_MTC;
	priv[PT_MTC_FREQ_BITS] = PT_CFG_MTC_PERIOD;
	/* CPUID 0x15: TSC/ART = EBX/EAX. */
	priv[PT_TSC_CTC_N] = meta_u64(c, "pt.config.cpuid_0x15_ebx", 0);
	priv[PT_TSC_CTC_D] = meta_u64(c, "pt.config.cpuid_0x15_eax", 0);
	priv[PT_CYC_BIT] = PT_CFG_CYC;
	priv[PT_MAX_NONTURBO_RATIO] = meta_u64(c, "pt.config.nom_freq", 0);
	/* The address filters as perf record writes them (its evsel's
	 * filter, the kernel's string: "filter 0xOFF/0xSIZE@FILE,..."): perf's
	 * decoder needs them to tell where a conditional or direct branch left
	 * the traced ranges (its pgd_ip callback); it parses them with its
	 * own filter parser, which takes this syntax. */
	if (flen >= PT_FILTER_MAX) {
		hwt_log(&c->cfg->log, HWT_LOG_WARN,
			"the recording's address filter string is %zu bytes; left out of the "
			"perf.data (perf's decoder may stop where a branch leaves the filter)",
			flen);
		flen = 0;
	}
	priv[PT_FILTER_STR_LEN] = flen;
	if (flen) {
		/* priv[] is little-endian u64s; the string's bytes go in order. */
		uint8_t *str = (uint8_t *)&priv[PT_PRIV_FIXED];
		size_t words = (flen + 1 + 7) / 8;

		memset(str, 0, words * 8);
		memcpy(str, filter, flen);
		for (size_t i = 0; i < words; i++)
			priv[PT_PRIV_FIXED + i] = hwt_le64(str + 8 * i);
		n += words;
	}
	priv[n++] = 0; /* cap_event_trace */
	return hwt_fmt_perf_writer_auxtrace_info(c->w, HWT_FMT_PERF_AUXTRACE_INTEL_PT, priv, n);
}

/* perf clock ns to TSC, the inverse of the kernel's
 * ns = time_zero + (tsc * time_mult) >> time_shift (perf's
 * perf_time_to_tsc()). */
static uint64_t to_tsc(const struct cv *c, uint64_t ns)
{
	uint64_t t, quot, rem;

	if (!c->time_mult || c->time_shift > 32 || ns < c->time_zero)
		return 0;
	t = ns - c->time_zero;
	quot = t / c->time_mult;
	rem = t % c->time_mult;
	return (quot << c->time_shift) + (rem << c->time_shift) / c->time_mult;
}

/* PERF_RECORD_TIME_CONV, as perf record writes it after AUXTRACE_INFO:
 * time_shift, time_mult, time_zero, time_cycles, time_mask,
 * cap_user_time_zero, cap_user_time_short, 6 reserved bytes. */
static int write_time_conv(struct cv *c)
{
	uint8_t r[56] = {0};

	hwt_put_le32(r, FMT_PERF_TIME_CONV);
	hwt_put_le16(r + 6, sizeof(r));
	hwt_put_le64(r + 8, c->time_shift);
	hwt_put_le64(r + 16, c->time_mult);
	hwt_put_le64(r + 24, c->time_zero);
	r[48] = 1; /* cap_user_time_zero; not cap_user_time_short */
	return hwt_fmt_perf_writer_record(c->w, r, sizeof(r));
}

static int finished_round(struct cv *c)
{
	uint8_t r[8] = {0};

	hwt_put_le32(r, FMT_PERF_FINISHED_ROUND);
	hwt_put_le16(r + 6, sizeof(r));
	c->since_round = 0;
	return hwt_fmt_perf_writer_record(c->w, r, sizeof(r));
}

/* Where to end an AUXTRACE record that the AUX data goes on after: at the
 * last PSB in buf (its run of 02 82 pairs ends the pattern; see
 * decoder/pkt.c), so that no packet spans two records; perf's decoder
 * reported bad packets where one did. All of buf when it has none. */
static size_t cut_at_psb(const uint8_t *buf, size_t len)
{
	/* i: the end of a run of 02 82 pairs, looking back from the end (a
	 * run reaching the end may go on after it). */
	for (size_t i = len - 1; i >= 16; i--) {
		size_t k = i;

		while (k >= 2 && buf[k - 2] == 0x02 && buf[k - 1] == 0x82)
			k -= 2;
		if (i - k >= 16)
			return i - 16 ? i - 16 : len;
		if (k < i)
			i = k + 1;
	}
	return len;
}

/* Writes AUX stream a's bytes up to AUX offset end (all of them for
 * UINT64_MAX) as PERF_RECORD_AUXTRACE records. ref is the TSC when the
 * data was taken (perf record puts rdtsc() there): perf's decoder takes the
 * upper byte of 7-byte TSC packets from it, and with 0 there perf 6.1
 * finds no timestamp before it walks code and crashes. A chunk that fails
 * to read is skipped with a warning: the rest of its segment is lost
 * trace, and perf's decoder resynchronises at the next segment's PSB. */
static int write_aux_until(struct cv *c, struct cv_aux *a, uint64_t end, uint64_t ref)
{
	while (a->seg < a->st->nsegments) {
		const struct hwt_fmt_aux_segment *sg =
		    hwt_fmt_session_aux_segment(c->s, a->index, a->seg);
		uint64_t at = sg->aux_offset + a->pos, lim;
		int64_t got;
		int err;

		if (at >= end)
			return 0;
		lim = sg->aux_offset + sg->size;
		lim = lim < end ? lim : end;
		if (at < lim) {
			uint64_t want = lim - at < AUX_PIECE ? lim - at : AUX_PIECE;

			got = hwt_fmt_session_aux_read(c->s, a->index, a->seg, a->pos, c->buf,
						       (size_t)want);
			if (got <= 0) {
				hwt_log(&c->cfg->log, HWT_LOG_DEBUG,
					"AUX stream %u: %s reading %llu bytes at AUX offset %llu; "
					"that part of the trace is left out",
					a->st->idx, got < 0 ? hwt_strerror((int)got) : "no data",
					(unsigned long long)(sg->size - a->pos),
					(unsigned long long)at);
				c->st->damaged++;
				c->st->aux_skipped += sg->size - a->pos;
				a->seg++;
				a->pos = 0;
				continue;
			}
			bool held = false;

			if (at + (uint64_t)got < sg->aux_offset + sg->size) {
				/* The segment goes on: end the record at a PSB,
				 * the rest waits for the next one. */
				size_t cut = cut_at_psb(c->buf, (size_t)got);

				held = at + (uint64_t)got >= lim;
				got = (int64_t)cut;
			}
			err = hwt_fmt_perf_writer_auxtrace(c->w, at, ref, (uint32_t)a->index,
							   a->st->tid, a->st->cpu, c->buf,
							   (uint64_t)got);
			if (err)
				return err;
			c->st->aux_records++;
			c->st->aux_bytes += (uint64_t)got;
			a->pos += (uint64_t)got;
			if (held && a->pos < sg->size)
				return 0;
		}
		if (a->pos >= sg->size) {
			a->seg++;
			a->pos = 0;
		}
	}
	return 0;
}

/* The AUX stream a PERF_RECORD_AUX belongs to: by thread for per-thread
 * buffers, by CPU for per-CPU ones. */
static struct cv_aux *aux_of(struct cv *c, const struct hwt_fmt_record *rec)
{
	for (size_t i = 0; i < c->naux; i++) {
		const struct hwt_fmt_aux_stream *st = c->aux[i].st;

		if (st->cpu < 0 && (rec->id.present & PERF_SAMPLE_TID) &&
		    (int32_t)rec->id.tid == st->tid)
			return &c->aux[i];
		if (st->cpu >= 0 && (rec->id.present & PERF_SAMPLE_CPU) &&
		    (int32_t)rec->id.cpu == st->cpu)
			return &c->aux[i];
	}
	return NULL;
}

/* HEADER_BUILD_ID entry for a mapped file, once per path: the recorded
 * build-id (buildid.<path> metadata, already listed, or the MMAP2 record's
 * own), else the one cfg->build_id reads from the file. */
static int note_build_id(struct cv *c, const struct hwt_fmt_record *rec)
{
	const char *path = rec->u.mmap.filename;
	char key[4096 + sizeof(HWT_META_BUILDID_PREFIX)];
	uint8_t id[20];
	int n;

	if (!path || path[0] != '/')
		return 0; /* //anon, [vdso], [heap]: no file */
	for (size_t i = 0; i < c->seen.len; i += strlen((const char *)c->seen.data + i) + 1)
		if (!strcmp((const char *)c->seen.data + i, path))
			return 0;
	n = hwt_buf_append(&c->seen, path, strlen(path) + 1);
	if (n)
		return n;
	snprintf(key, sizeof(key), HWT_META_BUILDID_PREFIX "%s", path);
	if (meta(c, key))
		return 0;
	if (rec->type == PERF_RECORD_MMAP2 && rec->u.mmap.has_build_id && rec->u.mmap.build_id_size)
		return hwt_fmt_perf_writer_buildid(c->w, -1, path, rec->u.mmap.build_id,
						   rec->u.mmap.build_id_size, false);
	if (!c->cfg->build_id)
		return 0;
	n = c->cfg->build_id(c->cfg->build_id_ctx, path, id, sizeof(id));
	if (n <= 0 || n > (int)sizeof(id))
		return 0; /* unreadable now: perf goes by the path */
	return hwt_fmt_perf_writer_buildid(c->w, -1, path, id, (size_t)n, false);
}

static bool is_tracking(uint32_t type)
{
	switch (type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_COMM:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_FORK:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
	case PERF_RECORD_NAMESPACES:
	case PERF_RECORD_KSYMBOL:
	case PERF_RECORD_BPF_EVENT:
	case PERF_RECORD_CGROUP:
	case PERF_RECORD_TEXT_POKE:
		return true;
	default:
		return false;
	}
}

/* Rewrites the ID and IDENTIFIER fields of a sideband record's sample_id
 * trailer (the trailer ends the record: TID, TIME, ID, STREAM_ID, CPU,
 * IDENTIFIER in that order) to the dummy event's id. */
static const uint8_t *retarget(struct cv *c, const struct hwt_fmt_record *rec)
{
	uint64_t t = c->sample_type;
	size_t from_end = 0;

	memcpy(c->rec, rec->raw, rec->size);
	if (t & PERF_SAMPLE_IDENTIFIER) {
		from_end += 8;
		hwt_put_le64(c->rec + rec->size - from_end, c->dummy_id);
	}
	if (t & PERF_SAMPLE_ID) {
		from_end += (t & PERF_SAMPLE_CPU ? 8 : 0) + (t & PERF_SAMPLE_STREAM_ID ? 8 : 0) + 8;
		if (from_end <= rec->size - sizeof(struct perf_event_header))
			hwt_put_le64(c->rec + rec->size - from_end, c->dummy_id);
	}
	return c->rec;
}

static int copy_records(struct cv *c)
{
	struct hwt_fmt_record rec;
	uint64_t off;
	int err;

	for (;;) {
		const uint8_t *raw;

		err = hwt_fmt_session_next(c->s, &rec, &off);
		if (err == -HWT_EEOS)
			break;
		if (err == -ENOMEM)
			return err;
		if (err < 0) {
			c->st->damaged++;
			if (err == -HWT_ECHECKSUM || err == -HWT_ECOMPRESS || err == -HWT_EFORMAT ||
			    err == -HWT_ETRUNC || err == -HWT_ETOOBIG) {
				/* A damaged chunk: reported once, the session goes
				 * on with the next one. */
				hwt_log(&c->cfg->log, HWT_LOG_DEBUG,
					"records at offset %llu: %s; that chunk is left out",
					(unsigned long long)off, hwt_strerror(err));
				continue;
			}
			/* Reading failed (-EIO, ...): keep what was read. */
			hwt_log(&c->cfg->log, HWT_LOG_DEBUG,
				"reading records at offset %llu: %s; the records after it are "
				"left out",
				(unsigned long long)off, hwt_strerror(err));
			break;
		}
		if (rec.type >= FMT_PERF_HEADER_ATTR)
			continue; /* perf.data's own records: the writer makes them */
		raw = rec.raw;
		if (c->move_tracking && rec.event == c->pt_event && is_tracking(rec.type) &&
		    rec.size >= sizeof(struct perf_event_header) + 8)
			raw = retarget(c, &rec);
		err = hwt_fmt_perf_writer_record(c->w, raw, rec.size);
		if (err)
			return err;
		c->st->records++;
		if (rec.type == PERF_RECORD_MMAP || rec.type == PERF_RECORD_MMAP2) {
			err = note_build_id(c, &rec);
			if (err)
				return err;
		}
		if ((rec.id.present & PERF_SAMPLE_TIME) && rec.id.time > c->last_time)
			c->last_time = rec.id.time;
		if (rec.type == PERF_RECORD_AUX && c->naux) {
			struct cv_aux *a = aux_of(c, &rec);

			if (a) {
				err =
				    write_aux_until(c, a, rec.u.aux.aux_offset + rec.u.aux.aux_size,
						    to_tsc(c, c->last_time));
				if (err)
					return err;
			}
		}
		if (++c->since_round >= ROUND_RECORDS) {
			err = finished_round(c);
			if (err)
				return err;
		}
	}
	/* AUX bytes no AUX record announced (a recorder killed before its
	 * last AUX record, or a recording without them) go at the end. */
	for (size_t i = 0; i < c->naux; i++) {
		err = write_aux_until(c, &c->aux[i], UINT64_MAX, to_tsc(c, c->last_time));
		if (err)
			return err;
	}
	return finished_round(c);
}

int hwt_fmt_convert(const char *in, const char *out, const struct hwt_fmt_convert_config *cfg,
		    struct hwt_fmt_convert_stats *stats, uint64_t *err_offset)
{
	struct hwt_fmt_convert_config dcfg, ccfg;
	struct hwt_fmt_convert_stats dstats;
	struct hwt_fmt_session_config scfg;
	struct cv c;
	struct stat sb;
	bool created = false;
	int err;

	if (err_offset)
		*err_offset = 0;
	if (!cfg) {
		hwt_fmt_convert_config_init(&dcfg);
		cfg = &dcfg;
	}
	memset(&c, 0, sizeof(c));
	c.st = stats ? stats : &dstats;
	memset(c.st, 0, sizeof(*c.st));
	hwt_fmt_convert_config_init(&ccfg);
	if (!in || !out || hwt_opts_copy(&ccfg, sizeof(ccfg), cfg) < 0)
		return -HWT_EINVAL;
	cfg = &ccfg;
	c.cfg = cfg;
	c.pt_event = -1;
	/* perf.data is refused by its magic, before anything else can fail
	 * on it (an empty one, a pipe stream). */
	{
		FILE *f = fopen(in, "rb");
		char magic[8];

		if (f && fread(magic, 1, 8, f) == 8 &&
		    (!memcmp(magic, FMT_PERF_MAGIC, 8) ||
		     !memcmp(magic, FMT_PERF_MAGIC_SWAPPED, 8))) {
			fclose(f);
			return -HWT_ENOTSUP;
		}
		if (f)
			fclose(f);
	}
	hwt_fmt_session_config_init(&scfg);
	scfg.log = cfg->log;
	err = hwt_fmt_session_open(&c.s, in, &scfg, err_offset);
	if (err)
		return err;
	if (hwt_fmt_session_kind(c.s) != HWT_FMT_KIND_HWT) {
		err = -HWT_ENOTSUP;
		goto out;
	}
	c.st->truncated = hwt_fmt_reader_info(hwt_fmt_session_reader(c.s))->truncated;
	c.st->emulated = meta_u64(&c, HWT_META_PT_EMULATED, 0) != 0;
	c.time_shift = (uint32_t)meta_u64(&c, HWT_META_TIME_SHIFT, 0);
	c.time_mult = (uint32_t)meta_u64(&c, HWT_META_TIME_MULT, 0);
	c.time_zero = meta_u64(&c, HWT_META_TIME_ZERO, 0);
	c.naux = hwt_fmt_session_naux(c.s);
	c.st->aux_streams = c.naux;
	c.pt_event = find_pt_event(&c);
	if (c.naux && c.pt_event < 0) {
		err = -HWT_ENOEVENT;
		goto out;
	}
	c.st->pt = c.pt_event >= 0;
	c.rec = malloc(65536);
	if (!c.rec) {
		err = -ENOMEM;
		goto out;
	}
	if (c.naux) {
		c.aux = calloc(c.naux, sizeof(*c.aux));
		c.buf = malloc(AUX_PIECE);
		if (!c.aux || !c.buf) {
			err = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < c.naux; i++) {
			c.aux[i].st = hwt_fmt_session_aux(c.s, i);
			c.aux[i].index = i;
		}
	}
	err = build_events(&c);
	if (err)
		goto out;
	err = hwt_fmt_perf_writer_open(&c.w, out, c.out_ev);
	if (err) {
		c.st->output_error = err != -ENOMEM;
		goto out;
	}
	created = true;
	err = add_features(&c);
	if (!err && c.st->pt)
		err = write_auxtrace_info(&c);
	if (!err && c.time_mult)
		err = write_time_conv(&c);
	if (!err)
		err = copy_records(&c);
	{
		struct hwt_fmt_session_stats ss;

		hwt_fmt_session_stats(c.s, &ss);
		c.st->bad_records = ss.bad_records;
		c.st->damaged_input = hwt_fmt_session_damage(c.s, &c.st->damage);
	}
out : {
	int cerr = hwt_fmt_perf_writer_close(c.w);

	err = err ? err : cerr;
}
	/* Past the open, input damage is skipped, not returned: a system
	 * error is the output's. */
	if (created && err < 0 && -err < HWT_EBASE && err != -ENOMEM)
		c.st->output_error = true;
	if (err && created && stat(out, &sb) == 0 && S_ISREG(sb.st_mode))
		unlink(out);
	else if (!err && stat(out, &sb) == 0)
		c.st->out_bytes = (uint64_t)sb.st_size;
	hwt_fmt_evlist_free(c.out_ev);
	hwt_fmt_session_close(c.s);
	free(c.aux);
	free(c.buf);
	free(c.rec);
	hwt_buf_fini(&c.seen);
	return err;
}
