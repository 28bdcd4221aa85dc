/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/perfdata.c - perf.data as a session source. Reads file mode (a
 * header with attr, data and feature sections) and pipe mode (attributes,
 * features and build-ids arrive as records), expands PERF_RECORD_COMPRESSED
 * (one zstd stream across records, decompressed incrementally so memory
 * stays bounded by a record, not by the stream), orders records by time the
 * way perf does (each FINISHED_ROUND releases what is older than the
 * previous round's newest record), and indexes AUXTRACE data (which follows
 * its record and is not counted in the record's size) as AUX segments.
 *
 * A seekable input is pre-scanned at open, so metadata and the AUX index are
 * complete before the first record is returned; a real pipe is read once,
 * and its metadata and AUX index grow while it is read.
 *
 * Every length read from the file is checked against what remains before it
 * is used; framing errors carry the file offset of the record (for records
 * inside a COMPRESSED record, the offset of that record).
 */
#include "format/session_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define RBUF_SIZE	   (1u << 20)	/* read buffer: more than any record */
#define RBUF_MIN	   (128u << 10) /* ... for small files: still > 64 KiB + 8 */
#define BLOCK_SIZE	   (1u << 20)	/* queue arena block, when busy */
#define BLOCK_MIN	   (64u << 10)	/* the first blocks: small files stay small */
#define QUEUE_MAX	   (256u << 20) /* queued bytes that force delivery */
#define DSTEP		   (64u << 10)	/* decompression step */
#define MAX_ATTRS	   65536u
#define MISC_BUILD_ID_SIZE (1u << 15) /* PERF_RECORD_MISC_BUILD_ID_SIZE */
#define EVENT_UPDATE_NAME  2u

/* A record waiting in the ordering queue. */
struct qent {
	uint64_t time, seq, file_off;
	size_t off, len, data_len;
	uint32_t block;
};

struct block {
	uint8_t *data;
	size_t len, cap, live;
};

struct fmt_perf {
	bool seekable;	 /* pread/lseek work: pre-scan, AUX by file offset */
	bool pipe_fmt;	 /* the 16-byte pipe header */
	bool prescanned; /* metadata and AUX index were built at open */
	bool eof;
	bool lenient_end; /* a cut-short last record is a warning, not an error */
	uint64_t data_start, data_end, file_size;
	struct hwt_buf event_desc; /* EVENT_DESC seen before the attrs (pipes) */

	/* sequential reader */
	uint8_t *rbuf;
	size_t rcap;
	size_t rstart, rend;
	uint64_t roff; /* file offset of rbuf[rstart] */

	/* COMPRESSED records: compressed input, decompressed output */
	ZSTD_DCtx *dctx;
	struct hwt_buf cin, dout;
	size_t cin_pos, dpos;
	bool zmore;	   /* the last step filled its output: more may come */
	uint64_t zsrc_off; /* offset of the COMPRESSED record being expanded */

	/* ordering queue: a binary heap on (time, seq) */
	struct qent *heap;
	size_t nheap, capheap;
	struct block *blocks;
	size_t nblocks;
	uint32_t cur;
	size_t queued_bytes;
	uint64_t seq, last_time, limit;
	uint64_t round_max, round_max_prev; /* newest time this / last round */
	int64_t release;		    /* block of the record returned last, or -1 */
};

static void perf_warn(struct hwt_fmt_session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void perf_warn(struct hwt_fmt_session *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hwt_vlog(&s->cfg.log, HWT_LOG_WARN, fmt, ap);
	va_end(ap);
}

static int pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t k = pread(fd, p, n, (off_t)off);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -HWT_ETRUNC;
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* --- sequential reader ----------------------------------------------------- */

/* Makes n bytes available at the read position. Returns 0, 1 at a clean end
 * (nothing left), -HWT_ETRUNC (something, but fewer than n), -errno. */
static int src_fill(struct fmt_perf *p, int fd, size_t n)
{
	while (p->rend - p->rstart < n) {
		uint64_t at;
		size_t want;
		ssize_t k;

		if (p->rstart) {
			memmove(p->rbuf, p->rbuf + p->rstart, p->rend - p->rstart);
			p->rend -= p->rstart;
			p->rstart = 0;
		}
		at = p->roff + p->rend; /* file offset of rbuf[rend] */
		if (at >= p->data_end)
			break;
		want = p->rcap - p->rend;
		if (want > p->data_end - at)
			want = (size_t)(p->data_end - at);
		k = read(fd, p->rbuf + p->rend, want);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		p->rend += (size_t)k;
	}
	if (p->rend - p->rstart >= n)
		return 0;
	return p->rend == p->rstart ? 1 : -HWT_ETRUNC;
}

static void src_consume(struct fmt_perf *p, size_t n)
{
	p->rstart += n;
	p->roff += n;
}

/* Skips n bytes that follow a record (AUXTRACE or tracing data). */
static int src_skip(struct fmt_perf *p, int fd, uint64_t n)
{
	size_t avail = p->rend - p->rstart;

	if (n <= avail) {
		src_consume(p, (size_t)n);
		return 0;
	}
	n -= avail;
	src_consume(p, avail);
	p->rstart = p->rend = 0;
	if (p->seekable) {
		if (n > p->data_end - p->roff)
			return -HWT_ETRUNC;
		if (lseek(fd, (off_t)(p->roff + n), SEEK_SET) < 0)
			return -errno;
		p->roff += n;
		return 0;
	}
	while (n) {
		size_t step = n < p->rcap ? (size_t)n : p->rcap;
		int err = src_fill(p, fd, step);

		if (err)
			return err == 1 ? -HWT_ETRUNC : err;
		src_consume(p, step);
		p->rstart = p->rend = 0;
		n -= step;
	}
	return 0;
}

/* Copies n bytes at the read position into out (appending), reading as the
 * bytes arrive so a lying size cannot make it allocate ahead of the data. */
static int src_read(struct fmt_perf *p, int fd, uint64_t n, struct hwt_buf *out)
{
	while (n) {
		size_t step = n < p->rcap ? (size_t)n : p->rcap;
		int err = src_fill(p, fd, step);

		if (err)
			return err == 1 ? -HWT_ETRUNC : err;
		err = hwt_buf_append(out, p->rbuf + p->rstart, step);
		if (err)
			return err;
		src_consume(p, step);
		n -= step;
	}
	return 0;
}

/* The next top-level record. Returns 0 (rec points into the read buffer,
 * valid until the next reader call), 1 at the end, or an error with *off
 * set to the record's offset. */
static int src_next(struct fmt_perf *p, int fd, const uint8_t **rec, size_t *size, uint64_t *off)
{
	int err;

	*off = p->roff;
	if (p->roff >= p->data_end)
		return 1;
	err = src_fill(p, fd, sizeof(struct perf_event_header));
	if (err)
		return err;
	*size = hwt_le16(p->rbuf + p->rstart + 6);
	if (*size < sizeof(struct perf_event_header))
		return -HWT_EFORMAT;
	if (*size > p->data_end - p->roff)
		return -HWT_ETRUNC;
	err = src_fill(p, fd, *size);
	if (err)
		return err == 1 ? -HWT_ETRUNC : err;
	*rec = p->rbuf + p->rstart;
	src_consume(p, *size);
	return 0;
}

static int src_seek(struct fmt_perf *p, int fd, uint64_t off)
{
	if (lseek(fd, (off_t)off, SEEK_SET) < 0)
		return -errno;
	p->rstart = p->rend = 0;
	p->roff = off;
	return 0;
}

/* --- metadata from perf's records and feature sections ---------------------- */

/* A perf header string: u32 len, then len bytes holding a NUL-terminated
 * string. Returns bytes consumed or -HWT_EFORMAT. */
static int64_t get_string(const uint8_t *p, size_t len, const char **out)
{
	uint32_t n;

	if (len < 4)
		return -HWT_EFORMAT;
	n = hwt_le32(p);
	if (n > len - 4 || !memchr(p + 4, '\0', n))
		return -HWT_EFORMAT;
	*out = (const char *)(p + 4);
	return 4 + (int64_t)n;
}

static int set_str(struct hwt_fmt_session *s, const char *key, const uint8_t *p, size_t len)
{
	const char *str;

	if (get_string(p, len, &str) < 0)
		return -HWT_EFORMAT;
	return fmt_meta_store_set_str(&s->meta, key, str);
}

static int publish_events(struct hwt_fmt_session *s)
{
	return fmt_evlist_to_meta(s->evlist, &s->meta);
}

/* perf's build-id record (HEADER_BUILD_ID, or an entry of the feature). */
static int build_id_entry(struct hwt_fmt_session *s, const uint8_t *p, size_t size)
{
	const size_t fixed = 8 + 4 + 24;
	size_t idlen = 20, flen;
	char key[1100];

	if (size < fixed + 1)
		return -HWT_EFORMAT;
	flen = strnlen((const char *)p + fixed, size - fixed);
	if (flen == size - fixed)
		return -HWT_EFORMAT;
	if (hwt_le16(p + 4) & MISC_BUILD_ID_SIZE) {
		idlen = p[12 + 20];
		if (idlen > 20)
			return -HWT_EFORMAT;
	}
	if (flen == 0 || flen > FMT_META_KEY_MAX - sizeof(HWT_META_BUILDID_PREFIX))
		return 0;
	snprintf(key, sizeof(key), "%s%s", HWT_META_BUILDID_PREFIX, (const char *)p + fixed);
	return fmt_meta_store_set(&s->meta, HWT_FMT_META_BYTES, key, strlen(key), p + 12, idlen);
}

static int feat_build_ids(struct hwt_fmt_session *s, const uint8_t *p, size_t len)
{
	size_t pos = 0;

	while (len - pos >= sizeof(struct perf_event_header)) {
		size_t size = hwt_le16(p + pos + 6);
		int err;

		if (size < sizeof(struct perf_event_header) || size > len - pos)
			return -HWT_EFORMAT;
		err = build_id_entry(s, p + pos, size);
		if (err)
			return err;
		pos += size;
	}
	return 0;
}

static int feat_cmdline(struct hwt_fmt_session *s, const uint8_t *p, size_t len)
{
	struct hwt_buf line;
	size_t pos = 4;
	uint32_t nr;
	int err = 0;

	if (len < 4)
		return -HWT_EFORMAT;
	nr = hwt_le32(p);
	hwt_buf_init(&line);
	for (uint32_t i = 0; i < nr && !err; i++) {
		const char *arg;
		int64_t n = get_string(p + pos, len - pos, &arg);

		if (n < 0) {
			err = (int)n;
			break;
		}
		pos += (size_t)n;
		err = hwt_buf_printf(&line, "%s%s", i ? " " : "", arg);
	}
	if (!err)
		err = fmt_meta_store_set(&s->meta, HWT_FMT_META_STR, HWT_META_CMDLINE,
					 strlen(HWT_META_CMDLINE),
					 line.data ? (char *)line.data : "", line.len);
	hwt_buf_fini(&line);
	return err;
}

static int feat_event_desc(struct hwt_fmt_session *s, const uint8_t *p, size_t len)
{
	uint32_t nre, sz;
	size_t pos = 8;
	int err = 0;

	if (len < 8)
		return -HWT_EFORMAT;
	nre = hwt_le32(p);
	sz = hwt_le32(p + 4);
	if (sz < PERF_ATTR_SIZE_VER0)
		return -HWT_EFORMAT;
	for (uint32_t i = 0; i < nre; i++) {
		const char *name;
		uint32_t nr_ids;
		int64_t n;
		int idx = -1;

		if (len - pos < (size_t)sz + 4)
			return -HWT_EFORMAT;
		pos += sz;
		nr_ids = hwt_le32(p + pos);
		pos += 4;
		n = get_string(p + pos, len - pos, &name);
		if (n < 0)
			return (int)n;
		pos += (size_t)n;
		if (nr_ids > (len - pos) / 8)
			return -HWT_EFORMAT;
		/* Match by sample id; events without ids match by position. */
		for (uint32_t j = 0; j < nr_ids && idx < 0; j++)
			idx = fmt_evlist_find_id(s->evlist, hwt_le64(p + pos + 8 * j));
		if (idx < 0 && i < hwt_fmt_evlist_count(s->evlist))
			idx = (int)i;
		pos += (size_t)nr_ids * 8;
		if (idx >= 0)
			err = fmt_evlist_set_name(s->evlist, (size_t)idx, name);
		if (err)
			return err;
	}
	return publish_events(s);
}

/* "GenuineIntel,6,85,4" on x86: vendor, family, model, stepping. */
static int feat_cpuid(struct hwt_fmt_session *s, const uint8_t *p, size_t len)
{
	const char *str;
	char vendor[64];
	unsigned int fam, model, step;
	int err;

	if (get_string(p, len, &str) < 0)
		return -HWT_EFORMAT;
	err = fmt_meta_store_set_str(&s->meta, "perf.cpuid", str);
	if (!err && sscanf(str, "%63[^,],%u,%u,%u", vendor, &fam, &model, &step) == 4) {
		err = fmt_meta_store_set_str(&s->meta, HWT_META_CPU_VENDOR, vendor);
		if (!err)
			err = fmt_meta_store_set_u64(&s->meta, HWT_META_CPU_FAMILY, fam);
		if (!err)
			err = fmt_meta_store_set_u64(&s->meta, HWT_META_CPU_MODEL, model);
		if (!err)
			err = fmt_meta_store_set_u64(&s->meta, HWT_META_CPU_STEPPING, step);
	}
	return err;
}

static const char *const feat_names[] = {
    [1] = "tracing_data",   [2] = "build_id",	    [3] = "hostname",
    [4] = "osrelease",	    [5] = "version",	    [6] = "arch",
    [7] = "nrcpus",	    [8] = "cpudesc",	    [9] = "cpuid",
    [10] = "total_mem",	    [11] = "cmdline",	    [12] = "event_desc",
    [13] = "cpu_topology",  [14] = "numa_topology", [15] = "branch_stack",
    [16] = "pmu_mappings",  [17] = "group_desc",    [18] = "auxtrace",
    [19] = "stat",	    [20] = "cache",	    [21] = "sample_time",
    [22] = "mem_topology",  [23] = "clockid",	    [24] = "dir_format",
    [25] = "bpf_prog_info", [26] = "bpf_btf",	    [27] = "compressed",
    [28] = "cpu_pmu_caps",  [29] = "clock_data",    [30] = "hybrid_topology",
    [31] = "pmu_caps",
};

const char *fmt_perf_feature_name(unsigned int feat)
{
	return feat < HWT_ARRAY_SIZE(feat_names) ? feat_names[feat] : NULL;
}

static int note_feature(struct hwt_fmt_session *s, unsigned int feat)
{
	const struct hwt_fmt_meta *m = fmt_meta_store_find(&s->meta, "perf.features");
	const char *name = fmt_perf_feature_name(feat);
	char buf[1024], one[32];

	if (!name) {
		snprintf(one, sizeof(one), "feature%u", feat);
		name = one;
	}
	snprintf(buf, sizeof(buf), "%s%s%s", m ? m->v.str : "", m ? "," : "", name);
	return fmt_meta_store_set_str(&s->meta, "perf.features", buf);
}

/* Translates one feature section into metadata. Content errors are
 * warnings: perf itself carries on without a broken optional feature. */
static int process_feature(struct hwt_fmt_session *s, unsigned int feat, const uint8_t *p,
			   size_t len, uint64_t off)
{
	int err = 0;

	switch (feat) {
	case FMT_FEAT_BUILD_ID:
		err = feat_build_ids(s, p, len);
		break;
	case FMT_FEAT_HOSTNAME:
		err = set_str(s, HWT_META_HOST, p, len);
		break;
	case FMT_FEAT_OSRELEASE:
		err = set_str(s, HWT_META_KERNEL, p, len);
		break;
	case FMT_FEAT_VERSION:
		err = set_str(s, "perf.version", p, len);
		break;
	case FMT_FEAT_ARCH:
		err = set_str(s, HWT_META_ARCH, p, len);
		break;
	case FMT_FEAT_CPUDESC:
		err = set_str(s, HWT_META_CPU_DESC, p, len);
		break;
	case FMT_FEAT_CPUID:
		err = feat_cpuid(s, p, len);
		break;
	case FMT_FEAT_NRCPUS:
		if (len < 8) {
			err = -HWT_EFORMAT;
			break;
		}
		err = fmt_meta_store_set_u64(&s->meta, HWT_META_NR_CPUS, hwt_le32(p + 4));
		if (!err)
			err = fmt_meta_store_set_u64(&s->meta, "perf.nrcpus_avail", hwt_le32(p));
		break;
	case FMT_FEAT_TOTAL_MEM:
		if (len < 8) {
			err = -HWT_EFORMAT;
			break;
		}
		err = fmt_meta_store_set_u64(&s->meta, "perf.total_mem_kb", hwt_le64(p));
		break;
	case FMT_FEAT_CMDLINE:
		err = feat_cmdline(s, p, len);
		break;
	case FMT_FEAT_EVENT_DESC:
		/* In a pipe it may come before the attributes it names: keep it
		 * and apply it again as they arrive. */
		s->perf->event_desc.len = 0;
		err = hwt_buf_append(&s->perf->event_desc, p, len);
		if (!err)
			err = feat_event_desc(s, p, len);
		break;
	case FMT_FEAT_SAMPLE_TIME:
		if (len < 16) {
			err = -HWT_EFORMAT;
			break;
		}
		if (!hwt_le64(p) && !hwt_le64(p + 8))
			break; /* pipe mode writes it before it knows */
		err = fmt_meta_store_set_u64(&s->meta, HWT_META_TIME_START, hwt_le64(p));
		if (!err)
			err = fmt_meta_store_set_u64(&s->meta, HWT_META_TIME_END, hwt_le64(p + 8));
		break;
	case FMT_FEAT_COMPRESSED:
		if (len < 20) {
			err = -HWT_EFORMAT;
			break;
		}
		err = fmt_meta_store_set_u64(&s->meta, "perf.compressed.level", hwt_le32(p + 8));
		break;
	default:
		break;
	}
	if (!err)
		err = note_feature(s, feat);
	if (err == -HWT_EFORMAT) {
		perf_warn(s, "perf.data feature '%s' at offset %llu is malformed; ignored",
			  fmt_perf_feature_name(feat) ? fmt_perf_feature_name(feat) : "?",
			  (unsigned long long)off);
		err = 0;
	}
	return err;
}

static int add_attr(struct hwt_fmt_session *s, const uint8_t *attr, size_t attr_size,
		    const uint8_t *ids, size_t nids)
{
	uint64_t *idv = NULL;
	int err;

	if (hwt_fmt_evlist_count(s->evlist) >= MAX_ATTRS)
		return -HWT_ETOOBIG;
	if (nids) {
		idv = malloc(nids * sizeof(*idv));
		if (!idv)
			return -ENOMEM;
		for (size_t i = 0; i < nids; i++)
			idv[i] = hwt_le64(ids + 8 * i);
	}
	err = hwt_fmt_evlist_add(s->evlist, attr, attr_size, NULL, idv, nids);
	free(idv);
	if (err < 0)
		return err;
	if (s->perf->event_desc.len)
		feat_event_desc(s, s->perf->event_desc.data, s->perf->event_desc.len);
	return publish_events(s);
}

/* perf.data's metadata records (pipe mode, and a few in file mode too). */
static int process_user(struct hwt_fmt_session *s, const uint8_t *r, size_t size, uint64_t off)
{
	uint32_t type = hwt_le32(r);
	int err = 0;

	switch (type) {
	case FMT_PERF_HEADER_ATTR: {
		uint32_t asz;

		if (size < 8 + PERF_ATTR_SIZE_VER0)
			return -HWT_EFORMAT;
		asz = hwt_le32(r + 8 + 4);
		if (asz == 0)
			asz = PERF_ATTR_SIZE_VER0;
		if (asz < PERF_ATTR_SIZE_VER0 || asz > size - 8)
			return -HWT_EFORMAT;
		return add_attr(s, r + 8, asz, r + 8 + asz, (size - 8 - asz) / 8);
	}
	case FMT_PERF_HEADER_BUILD_ID:
		return build_id_entry(s, r, size);
	case FMT_PERF_ID_INDEX:
		/* Maps known ids to mmap index, CPU and thread; the id -> event
		 * mapping itself comes with the attributes. */
		return size < 16 || hwt_le64(r + 8) > (size - 16) / 32 ? -HWT_EFORMAT : 0;
	case FMT_PERF_EVENT_UPDATE: {
		int idx;

		if (size < 24)
			return -HWT_EFORMAT;
		if (hwt_le64(r + 8) != EVENT_UPDATE_NAME)
			return 0;
		if (!memchr(r + 24, '\0', size - 24))
			return -HWT_EFORMAT;
		idx = fmt_evlist_find_id(s->evlist, hwt_le64(r + 16));
		if (idx < 0)
			return 0;
		err = fmt_evlist_set_name(s->evlist, (size_t)idx, (const char *)r + 24);
		return err ? err : publish_events(s);
	}
	case FMT_PERF_HEADER_FEATURE:
		if (size < 16)
			return -HWT_EFORMAT;
		if (hwt_le64(r + 8) >= FMT_FEAT_BITS)
			return 0;
		return process_feature(s, (unsigned int)hwt_le64(r + 8), r + 16, size - 16, off);
	case FMT_PERF_TIME_CONV:
		if (size < 32)
			return -HWT_EFORMAT;
		err = fmt_meta_store_set_u64(&s->meta, HWT_META_TIME_SHIFT, hwt_le64(r + 8));
		if (!err)
			err =
			    fmt_meta_store_set_u64(&s->meta, HWT_META_TIME_MULT, hwt_le64(r + 16));
		if (!err)
			err =
			    fmt_meta_store_set_u64(&s->meta, HWT_META_TIME_ZERO, hwt_le64(r + 24));
		return err;
	case FMT_PERF_AUXTRACE_INFO:
		/* The decoder reads the PMU's private data (intel_pt's caps,
		 * TSC ratio, filters) from the record as perf wrote it. */
		return fmt_meta_store_set(&s->meta, HWT_FMT_META_BYTES, HWT_META_PERF_AUXTRACE_INFO,
					  strlen(HWT_META_PERF_AUXTRACE_INFO), r, size);
	default:
		return 0;
	}
}

/* --- the ordering queue ----------------------------------------------------- */

static bool qless(const struct qent *a, const struct qent *b)
{
	return a->time != b->time ? a->time < b->time : a->seq < b->seq;
}

static void heap_up(struct qent *h, size_t i)
{
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		struct qent t;

		if (!qless(&h[i], &h[parent]))
			break;
		t = h[i];
		h[i] = h[parent];
		h[parent] = t;
		i = parent;
	}
}

static void heap_down(struct qent *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct qent t;

		if (l < n && qless(&h[l], &h[m]))
			m = l;
		if (r < n && qless(&h[r], &h[m]))
			m = r;
		if (m == i)
			break;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* Room for need bytes in an arena block; returns the block index. */
static int block_for(struct fmt_perf *p, size_t need, uint32_t *out)
{
	struct block *b;

	if (p->nblocks && p->blocks[p->cur].cap - p->blocks[p->cur].len >= need) {
		*out = p->cur;
		return 0;
	}
	/* Reuse an empty block, else make one. */
	for (size_t i = 0; i < p->nblocks; i++) {
		b = &p->blocks[i];
		if (b->live == 0 && (int64_t)i != p->release && b->cap >= need) {
			b->len = 0;
			p->cur = (uint32_t)i;
			*out = p->cur;
			return 0;
		}
	}
	b = realloc(p->blocks, (p->nblocks + 1) * sizeof(*b));
	if (!b)
		return -ENOMEM;
	p->blocks = b;
	b = &p->blocks[p->nblocks];
	memset(b, 0, sizeof(*b));
	/* Small blocks first, so that a small file stays cheap to read. */
	b->cap = p->nblocks < 4 ? (size_t)BLOCK_MIN << p->nblocks : BLOCK_SIZE;
	if (b->cap < need)
		b->cap = need;
	b->data = malloc(b->cap);
	if (!b->data)
		return -ENOMEM;
	p->cur = (uint32_t)p->nblocks++;
	*out = p->cur;
	return 0;
}

static int queue_push(struct fmt_perf *p, const uint8_t *rec, size_t len, const void *data,
		      size_t dlen, uint64_t time, uint64_t file_off)
{
	struct qent e;
	struct block *b;
	int err;

	err = block_for(p, len + dlen, &e.block);
	if (err)
		return err;
	if (p->nheap == p->capheap) {
		size_t cap = p->capheap ? p->capheap * 2 : 1024;
		struct qent *h = realloc(p->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		p->heap = h;
		p->capheap = cap;
	}
	b = &p->blocks[e.block];
	e.off = b->len;
	memcpy(b->data + b->len, rec, len);
	if (dlen)
		memcpy(b->data + b->len + len, data, dlen);
	b->len += len + dlen;
	b->live++;
	e.len = len;
	e.data_len = dlen;
	e.time = time;
	e.seq = p->seq++;
	e.file_off = file_off;
	p->queued_bytes += len + dlen;
	p->heap[p->nheap] = e;
	heap_up(p->heap, p->nheap++);
	return 0;
}

static bool deliverable(const struct fmt_perf *p)
{
	return p->nheap && (p->eof || p->heap[0].time <= p->limit || p->queued_bytes > QUEUE_MAX);
}

/* --- handling records ------------------------------------------------------- */

/* Sort key of a record: its time, or the last time seen (a record without a
 * time stays after the records read before it). */
static uint64_t record_key(struct fmt_perf *p, const struct hwt_fmt_record *rec)
{
	uint64_t t;

	if (fmt_record_time(rec, &t) && t != 0) {
		p->last_time = t;
		if (t > p->round_max)
			p->round_max = t;
		return t;
	}
	return p->last_time;
}

/* Indexes (index true) or skips the data that follows an AUXTRACE record
 * (hdr, already copied out of the read buffer). On a real pipe the bytes
 * are kept in memory, and *mem points at them (owned by the AUX index). */
static int handle_auxtrace(struct hwt_fmt_session *s, const uint8_t *hdr, size_t size, bool index,
			   const uint8_t **mem)
{
	struct fmt_perf *p = s->perf;
	struct fmt_aux_piece piece = {0};
	struct fmt_aux_stream *st;
	struct hwt_fmt_record rec;
	struct hwt_buf data;
	int err;

	*mem = NULL;
	err = hwt_fmt_record_parse(NULL, hdr, size, &rec);
	if (err)
		return err == -HWT_ETRUNC ? -HWT_EFORMAT : err;
	piece.size = rec.u.auxtrace.size;
	if (p->seekable) {
		piece.file_offset = p->roff;
		err = src_skip(p, s->fd, piece.size);
		if (err || !index)
			return err;
	} else {
		/* A real pipe: keep the bytes, there is no going back. */
		hwt_buf_init(&data);
		err = src_read(p, s->fd, piece.size, &data);
		if (!err && !data.data)
			err = hwt_buf_reserve(&data, 1);
		if (err) {
			hwt_buf_fini(&data);
			return err;
		}
		piece.mem = data.data;
	}
	st = fmt_aux_stream_get(s, rec.u.auxtrace.idx, (int32_t)rec.u.auxtrace.cpu,
				(int32_t)rec.u.auxtrace.tid);
	err = st ? fmt_aux_add(st, rec.u.auxtrace.offset, &piece, 0) : -ENOMEM;
	if (err) {
		free(piece.mem);
		return err;
	}
	*mem = piece.mem;
	return 0;
}

/* Queues an AUXTRACE record for delivery, with its data when the session
 * was asked to load AUX data. */
static int queue_auxtrace(struct hwt_fmt_session *s, const uint8_t *hdr, size_t size,
			  uint64_t data_off, const uint8_t *mem, uint64_t off)
{
	struct fmt_perf *p = s->perf;
	uint64_t dsize = hwt_le64(hdr + 8);
	uint8_t *data = NULL;
	int err;

	if (s->cfg.load_aux && dsize) {
		if (dsize > QUEUE_MAX)
			return -HWT_ETOOBIG;
		if (!mem) {
			data = malloc((size_t)dsize);
			if (!data)
				return -ENOMEM;
			err = pread_full(s->fd, data, (size_t)dsize, data_off);
			if (err) {
				free(data);
				return err;
			}
			mem = data;
		}
	} else {
		mem = NULL;
	}
	err = queue_push(p, hdr, size, mem, mem ? (size_t)dsize : 0, p->last_time, off);
	free(data);
	return err;
}

static int handle_record(struct hwt_fmt_session *s, const uint8_t *r, size_t size, uint64_t off,
			 bool top)
{
	struct fmt_perf *p = s->perf;
	uint32_t type = hwt_le32(r);
	struct hwt_fmt_record rec;
	int err;

	if (type < FMT_PERF_HEADER_ATTR) {
		err = hwt_fmt_evlist_parse(s->evlist, r, size, &rec);
		if (err == -HWT_ENOTSUP) {
			s->stats.unknown_types++;
			return 0;
		}
		if (err) {
			s->stats.bad_records++;
			hwt_log(&s->cfg.log, HWT_LOG_DEBUG, "bad %s record at offset %llu: %s",
				hwt_fmt_record_type_name(type) ? hwt_fmt_record_type_name(type)
							       : "?",
				(unsigned long long)off, hwt_strerror(err));
			return 0;
		}
		return queue_push(p, r, size, NULL, 0, record_key(p, &rec), off);
	}
	switch (type) {
	case FMT_PERF_FINISHED_ROUND:
		/* perf's OE_FLUSH__ROUND: release what is not newer than the
		 * newest record of the previous round. */
		p->limit = p->round_max_prev;
		p->round_max_prev = p->round_max;
		return 0;
	case FMT_PERF_COMPRESSED:
	case FMT_PERF_COMPRESSED2: {
		size_t start = 8, n = size - 8;

		if (!top)
			return -HWT_EFORMAT; /* compressed records do not nest */
		if (type == FMT_PERF_COMPRESSED2) {
			if (size < 16 || hwt_le64(r + 8) > size - 16)
				return -HWT_EFORMAT;
			start = 16;
			n = (size_t)hwt_le64(r + 8);
		}
		p->cin.len = 0;
		p->cin_pos = 0;
		p->zsrc_off = off;
		return hwt_buf_append(&p->cin, r + start, n);
	}
	case FMT_PERF_HEADER_TRACING_DATA:
		if (!top || size < 12)
			return -HWT_EFORMAT;
		/* The tracing data follows the record, like AUXTRACE's. */
		return src_skip(p, s->fd, hwt_le32(r + 8));
	case FMT_PERF_AUXTRACE: {
		uint8_t hdr[FMT_PERF_AUXTRACE_SIZE];
		uint64_t data_off = p->roff;
		const uint8_t *mem;

		if (!top || size != FMT_PERF_AUXTRACE_SIZE)
			return -HWT_EFORMAT;
		memcpy(hdr, r, size); /* r dies when the reader moves on */
		err = handle_auxtrace(s, hdr, size, !p->prescanned, &mem);
		if (err)
			return err;
		return queue_auxtrace(s, hdr, size, data_off, mem, off);
	}
	default:
		if (p->prescanned)
			return 0;
		err = process_user(s, r, size, off);
		if (err == -HWT_EFORMAT) {
			s->stats.bad_records++;
			perf_warn(s, "malformed %s record at offset %llu; skipped",
				  hwt_fmt_record_type_name(type) ? hwt_fmt_record_type_name(type)
								 : "?",
				  (unsigned long long)off);
			err = 0;
		}
		return err;
	}
}

/* Reads and handles one record: from the COMPRESSED expansion when it has
 * one, else from the file. Sets p->eof at the end. */
static int pump(struct hwt_fmt_session *s, uint64_t *err_offset)
{
	struct fmt_perf *p = s->perf;
	const uint8_t *r = NULL;
	size_t size = 0;
	uint64_t off;
	int err;

	for (;;) {
		size_t avail = p->dout.len - p->dpos;

		if (avail >= sizeof(struct perf_event_header)) {
			size = hwt_le16(p->dout.data + p->dpos + 6);
			if (size < sizeof(struct perf_event_header)) {
				*err_offset = p->zsrc_off;
				return -HWT_EFORMAT;
			}
			if (avail >= size) {
				/* Records from inside never touch dout while
				 * handled (nested framing records are refused). */
				const uint8_t *rec = p->dout.data + p->dpos;

				p->dpos += size;
				err = handle_record(s, rec, size, p->zsrc_off, false);
				if (err)
					*err_offset = p->zsrc_off;
				return err;
			}
		}
		if (p->cin_pos < p->cin.len || p->zmore) {
			ZSTD_inBuffer in = {p->cin.data, p->cin.len, p->cin_pos};
			ZSTD_outBuffer out;
			size_t ret;

			/* Drop what was consumed, then expand one more step. */
			if (avail && p->dpos)
				memmove(p->dout.data, p->dout.data + p->dpos, avail);
			p->dout.len = avail;
			p->dpos = 0;
			err = hwt_buf_reserve(&p->dout, DSTEP);
			if (err)
				return err;
			out.dst = p->dout.data;
			out.size = p->dout.len + DSTEP;
			out.pos = p->dout.len;
			ret = ZSTD_decompressStream(p->dctx, &out, &in);
			if (ZSTD_isError(ret)) {
				*err_offset = p->zsrc_off;
				return -HWT_ECOMPRESS;
			}
			p->zmore = out.pos == out.size;
			p->dout.len = out.pos;
			p->cin_pos = in.pos;
			continue;
		}
		break;
	}
	err = src_next(p, s->fd, &r, &size, &off);
	if (err == 1) {
		p->eof = true;
		if (p->dout.len - p->dpos) {
			s->stats.bad_records++;
			perf_warn(s, "compressed data ends inside a record (%zu bytes left)",
				  p->dout.len - p->dpos);
		}
		return 0;
	}
	if (err < 0) {
		*err_offset = off;
		return err;
	}
	err = handle_record(s, r, size, off, true);
	if (err)
		*err_offset = off;
	return err;
}

/* --- open, pre-scan, next ---------------------------------------------------- */

static int read_file_header(struct hwt_fmt_session *s, uint64_t *where)
{
	struct fmt_perf *p = s->perf;
	uint8_t h[FMT_PERF_FILE_HEADER_SIZE];
	uint64_t hsize, attr_size, aoff, asize, doff, dsize, nattrs, ftab, nfeat = 0;
	uint8_t *buf = NULL;
	int err;

	*where = 0;
	if (p->file_size < sizeof(h))
		return -HWT_ETRUNC;
	err = pread_full(s->fd, h, sizeof(h), 0);
	if (err)
		return err;
	hsize = hwt_le64(h + 8);
	attr_size = hwt_le64(h + 16);
	aoff = hwt_le64(h + 24);
	asize = hwt_le64(h + 32);
	doff = hwt_le64(h + 40);
	dsize = hwt_le64(h + 48);
	*where = 8;
	if (hsize < sizeof(h) || hsize > p->file_size)
		return -HWT_EFORMAT;
	*where = 16;
	if (attr_size < 16 + PERF_ATTR_SIZE_VER0 || attr_size > 16 + 4096)
		return -HWT_EFORMAT;
	*where = 24;
	if (aoff > p->file_size || asize > p->file_size - aoff || asize % attr_size)
		return -HWT_EFORMAT;
	*where = 40;
	if (doff < sizeof(h) || doff > p->file_size)
		return -HWT_EFORMAT;
	if (dsize > p->file_size - doff) {
		*where = p->file_size;
		return -HWT_ETRUNC;
	}
	if (dsize == 0) {
		/* perf record was killed before it wrote the header back:
		 * said by the session's user (hwt_fmt_damage_str). */
		hwt_log(&s->cfg.log, HWT_LOG_DEBUG,
			"perf.data header says the data section is empty (perf record "
			"did not finish?); reading to the end of the file");
		fmt_meta_store_set_u64(&s->meta, "perf.unfinished", 1);
		dsize = p->file_size - doff;
		p->lenient_end = true;
	}
	p->data_start = doff;
	p->data_end = doff + dsize;

	/* Attributes and their ids. */
	nattrs = asize / attr_size;
	if (nattrs > MAX_ATTRS)
		return -HWT_ETOOBIG;
	buf = malloc((size_t)attr_size);
	if (!buf)
		return -ENOMEM;
	for (uint64_t i = 0; i < nattrs; i++) {
		uint64_t eoff = aoff + i * attr_size, ioff, isize;
		uint8_t *ids = NULL;
		uint32_t asz;

		*where = eoff;
		err = pread_full(s->fd, buf, (size_t)attr_size, eoff);
		if (err)
			goto out;
		ioff = hwt_le64(buf + attr_size - 16);
		isize = hwt_le64(buf + attr_size - 8);
		asz = (uint32_t)(attr_size - 16);
		err = -HWT_EFORMAT;
		if (ioff > p->file_size || isize > p->file_size - ioff || isize % 8)
			goto out;
		if (isize) {
			ids = malloc((size_t)isize);
			err = -ENOMEM;
			if (!ids)
				goto out;
			err = pread_full(s->fd, ids, (size_t)isize, ioff);
		} else {
			err = 0;
		}
		if (!err)
			err = add_attr(s, buf, asz, ids, (size_t)(isize / 8));
		free(ids);
		if (err)
			goto out;
	}

	/* Feature sections: a table of {offset, size} right after the data,
	 * one entry per bit set in the header's bitmap. */
	ftab = hwt_le64(h + 48) ? p->data_end : 0;
	for (unsigned int bit = 1; bit < FMT_FEAT_BITS; bit++)
		nfeat += (hwt_le64(h + 72 + 8 * (bit / 64)) >> (bit % 64)) & 1;
	if (ftab && nfeat) {
		unsigned int k = 0;

		*where = ftab;
		if (nfeat * 16 > p->file_size - ftab) {
			err = -HWT_ETRUNC;
			goto out;
		}
		for (unsigned int bit = 1; bit < FMT_FEAT_BITS; bit++) {
			uint8_t sec[16];
			uint64_t foff, fsize;
			uint8_t *fdata;

			if (!((hwt_le64(h + 72 + 8 * (bit / 64)) >> (bit % 64)) & 1))
				continue;
			*where = ftab + 16 * k++;
			err = pread_full(s->fd, sec, sizeof(sec), *where);
			if (err)
				goto out;
			foff = hwt_le64(sec);
			fsize = hwt_le64(sec + 8);
			if (foff > p->file_size || fsize > p->file_size - foff) {
				err = -HWT_EFORMAT;
				goto out;
			}
			fdata = malloc(fsize ? (size_t)fsize : 1);
			if (!fdata) {
				err = -ENOMEM;
				goto out;
			}
			err = pread_full(s->fd, fdata, (size_t)fsize, foff);
			if (!err)
				err = process_feature(s, bit, fdata, (size_t)fsize, foff);
			free(fdata);
			if (err)
				goto out;
		}
	}
	err = 0;
out:
	free(buf);
	return err;
}

/* The pre-scan's reader. The pre-scan needs AUX, AUXTRACE and tracing-data
 * records and perf's own (types 64 and up), not samples nor the kernel's
 * other records. A file of large samples (--call-graph dwarf: 8 KiB of
 * stack each) is mostly bytes the pre-scan does not need: once a skipped
 * record runs past the read buffer, the reader goes "sparse": it reads each
 * record's 8-byte header where it is (pread) and steps over what it skips,
 * reading only the records it returns; it goes back to reading the file in
 * order after a run of small records, where a header read per record would
 * cost more than the bytes. */
#define SCAN_SPARSE_MIN	  4096u /* a skipped record this large starts it */
#define SCAN_SPARSE_SMALL 16	/* this many small records in a row end it */

struct prescan_reader {
	bool sparse;
	unsigned int small_run; /* records below SCAN_SPARSE_MIN in a row */
	struct hwt_buf rec;	/* a record read while sparse */
};

static bool prescan_skips(uint32_t type)
{
	return type < FMT_PERF_HEADER_ATTR && type != PERF_RECORD_AUX;
}

/* As src_next, returning only the records the pre-scan needs. */
static int prescan_next(struct fmt_perf *p, int fd, struct prescan_reader *rd, const uint8_t **rec,
			size_t *size, uint64_t *off)
{
	uint8_t h[sizeof(struct perf_event_header)];
	uint32_t type;
	int err;

	for (;;) {
		*off = p->roff;
		if (p->roff >= p->data_end)
			return 1;
		if (!rd->sparse) {
			err = src_fill(p, fd, sizeof(h));
			if (err)
				return err;
			type = hwt_le32(p->rbuf + p->rstart);
			*size = hwt_le16(p->rbuf + p->rstart + 6);
			if (*size >= sizeof(h) && *size <= p->data_end - p->roff &&
			    prescan_skips(type) && *size >= SCAN_SPARSE_MIN &&
			    *size > p->rend - p->rstart) {
				err = src_skip(p, fd, *size);
				if (err)
					return err;
				rd->sparse = true;
				rd->small_run = 0;
				continue;
			}
			err = src_next(p, fd, rec, size, off);
			if (err || !prescan_skips(type))
				return err;
			continue;
		}
		if (p->data_end - p->roff < sizeof(h))
			return -HWT_ETRUNC;
		err = pread_full(fd, h, sizeof(h), p->roff);
		if (err)
			return err;
		type = hwt_le32(h);
		*size = hwt_le16(h + 6);
		if (*size < sizeof(h))
			return -HWT_EFORMAT;
		if (*size > p->data_end - p->roff)
			return -HWT_ETRUNC;
		rd->small_run = *size < SCAN_SPARSE_MIN ? rd->small_run + 1 : 0;
		if (rd->small_run >= SCAN_SPARSE_SMALL) {
			/* Back to reading in order, from this record. */
			rd->sparse = false;
			err = src_seek(p, fd, p->roff);
			if (err)
				return err;
			continue;
		}
		if (prescan_skips(type)) {
			p->roff += *size;
			continue;
		}
		rd->rec.len = 0;
		err = hwt_buf_reserve(&rd->rec, *size);
		if (err)
			return err;
		err = pread_full(fd, rd->rec.data, *size, p->roff);
		if (err)
			return err;
		rd->rec.len = *size;
		*rec = rd->rec.data;
		/* What follows the record (AUXTRACE data) is read or skipped
		 * from here: src_skip seeks when the buffer is empty. */
		err = src_seek(p, fd, p->roff + *size);
		if (err)
			return err;
		return 0;
	}
}

/* Pre-scan of a seekable input: metadata records and the AUX index. */
static int prescan(struct hwt_fmt_session *s, uint64_t *err_offset)
{
	struct fmt_perf *p = s->perf;
	struct hwt_fmt_record *notes = NULL;
	size_t nnotes = 0, capnotes = 0;
	struct prescan_reader rd = {0};
	int err;

	hwt_buf_init(&rd.rec);
	for (;;) {
		const uint8_t *r = NULL;
		size_t size = 0;
		uint64_t off;
		uint32_t type;

		err = prescan_next(p, s->fd, &rd, &r, &size, &off);
		if (err == 1) {
			err = 0;
			break;
		}
		if (err == -HWT_ETRUNC && p->lenient_end) {
			/* A pipe recording cut short (perf record killed):
			 * everything before the last record is good. */
			/* Said by the session's user (hwt_fmt_damage_str). */
			hwt_log(&s->cfg.log, HWT_LOG_DEBUG,
				"perf.data stream is truncated: the record at offset %llu is "
				"incomplete; reading up to it",
				(unsigned long long)off);
			fmt_meta_store_set_u64(&s->meta, "perf.truncated_at", off);
			p->data_end = off;
			err = 0;
			break;
		}
		if (err < 0) {
			*err_offset = off;
			break;
		}
		type = hwt_le32(r);
		if (type == FMT_PERF_AUXTRACE) {
			uint8_t hdr[FMT_PERF_AUXTRACE_SIZE];

			const uint8_t *mem;

			if (size != FMT_PERF_AUXTRACE_SIZE) {
				err = -HWT_EFORMAT;
			} else {
				memcpy(hdr, r, size);
				err = handle_auxtrace(s, hdr, size, true, &mem);
			}
		} else if (type == FMT_PERF_HEADER_TRACING_DATA) {
			err = size < 12 ? -HWT_EFORMAT : src_skip(p, s->fd, hwt_le32(r + 8));
		} else if (type == PERF_RECORD_AUX) {
			struct hwt_fmt_record rec;

			/* Segment times, once all segments are known. */
			if (hwt_fmt_evlist_parse(s->evlist, r, size, &rec) == 0) {
				if (nnotes == capnotes) {
					size_t cap = capnotes ? capnotes * 2 : 64;
					struct hwt_fmt_record *t = realloc(notes, cap * sizeof(*t));

					if (!t) {
						err = -ENOMEM;
						break;
					}
					notes = t;
					capnotes = cap;
				}
				rec.raw = NULL; /* points into the read buffer */
				notes[nnotes++] = rec;
			}
		} else if (type >= FMT_PERF_HEADER_ATTR) {
			err = process_user(s, r, size, off);
			if (err == -HWT_EFORMAT) {
				perf_warn(s, "malformed %s record at offset %llu; skipped",
					  hwt_fmt_record_type_name(type)
					      ? hwt_fmt_record_type_name(type)
					      : "?",
					  (unsigned long long)off);
				err = 0;
			}
		}
		if (err) {
			*err_offset = off;
			break;
		}
	}
	for (size_t i = 0; !err && i < nnotes; i++)
		fmt_aux_note_record(s, &notes[i]);
	free(notes);
	hwt_buf_fini(&rd.rec);
	return err;
}

static void queue_reset(struct fmt_perf *p)
{
	p->nheap = 0;
	for (size_t i = 0; i < p->nblocks; i++) {
		p->blocks[i].len = 0;
		p->blocks[i].live = 0;
	}
	p->queued_bytes = 0;
	p->seq = 0;
	p->last_time = 0;
	p->round_max = 0;
	p->round_max_prev = 0;
	p->limit = 0;
	p->release = -1;
	p->eof = false;
	p->cin.len = p->cin_pos = 0;
	p->dout.len = p->dpos = 0;
	p->zmore = false;
	ZSTD_DCtx_reset(p->dctx, ZSTD_reset_session_only);
}

int fmt_perf_open(struct hwt_fmt_session *s, uint64_t *err_offset)
{
	struct fmt_perf *p;
	uint8_t h[16];
	struct stat st;
	ssize_t k;
	size_t got = 0;
	int err;

	*err_offset = 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->perf = p;
	p->release = -1;
	hwt_buf_init(&p->cin);
	hwt_buf_init(&p->dout);
	hwt_buf_init(&p->event_desc);
	if (fstat(s->fd, &st) < 0)
		return -errno;
	p->seekable = S_ISREG(st.st_mode) && lseek(s->fd, 0, SEEK_SET) == 0;
	p->file_size = p->seekable ? (uint64_t)st.st_size : UINT64_MAX;
	p->rcap = RBUF_SIZE;
	if (p->seekable && p->file_size < RBUF_SIZE - RBUF_MIN)
		p->rcap = RBUF_MIN + (size_t)p->file_size;
	p->rbuf = malloc(p->rcap);
	p->dctx = ZSTD_createDCtx();
	if (!p->rbuf || !p->dctx)
		return -ENOMEM;

	/* The magic and the header size tell file mode from pipe mode. */
	while (got < sizeof(h)) {
		k = read(s->fd, h + got, sizeof(h) - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	if (got >= 8 && !memcmp(h, FMT_PERF_MAGIC_SWAPPED, 8))
		return -HWT_ENOTSUP; /* written on a big-endian machine */
	if (got >= 8 && !memcmp(h, HWT_FMT_MAGIC, 8))
		return -HWT_ENOTSUP; /* a container on stdin: it needs seeking */
	if (got < 8 || memcmp(h, FMT_PERF_MAGIC, 8) != 0)
		return got < 8 ? -HWT_ETRUNC : -HWT_EFORMAT;
	if (got < 16) {
		*err_offset = got;
		return -HWT_ETRUNC;
	}
	if (hwt_le64(h + 8) == FMT_PERF_PIPE_HEADER_SIZE) {
		p->pipe_fmt = true;
		p->lenient_end = true;
		s->kind = HWT_FMT_KIND_PERF_PIPE;
		p->data_start = FMT_PERF_PIPE_HEADER_SIZE;
		p->data_end = p->file_size;
		p->roff = FMT_PERF_PIPE_HEADER_SIZE;
	} else {
		if (!p->seekable)
			return -HWT_ENOTSUP; /* file mode needs a file */
		s->kind = HWT_FMT_KIND_PERF_FILE;
		err = read_file_header(s, err_offset);
		if (err)
			return err;
		err = src_seek(p, s->fd, p->data_start);
		if (err)
			return err;
	}
	if (p->seekable) {
		err = prescan(s, err_offset);
		if (err)
			return err;
		p->prescanned = true;
		err = src_seek(p, s->fd, p->data_start);
		if (err)
			return err;
	} else {
		/* A real pipe: read the header records now (attributes come
		 * first), up to the end of perf's initial synthesis or the
		 * first round; records met on the way wait in the queue. */
		while (!p->eof) {
			uint64_t before = p->seq;
			uint32_t type;

			err = src_fill(p, s->fd, 8);
			if (err == 1)
				break;
			if (err < 0) {
				*err_offset = p->roff;
				return err;
			}
			type = hwt_le32(p->rbuf + p->rstart);
			err = pump(s, err_offset);
			if (err)
				return err;
			if (type == FMT_PERF_FINISHED_INIT || type == FMT_PERF_FINISHED_ROUND ||
			    (type == PERF_RECORD_SAMPLE && p->seq > before))
				break;
		}
	}
	return fmt_evlist_to_meta(s->evlist, &s->meta);
}

int fmt_perf_next(struct hwt_fmt_session *s, struct hwt_fmt_record *rec, uint64_t *err_offset)
{
	struct fmt_perf *p = s->perf;
	int err;

	*err_offset = 0;
	for (;;) {
		/* The record returned last (or just found bad) frees its slot. */
		if (p->release >= 0) {
			struct block *b = &p->blocks[p->release];

			if (b->live && --b->live == 0 && (uint32_t)p->release != p->cur)
				b->len = 0;
			p->release = -1;
		}
		if (deliverable(p)) {
			struct qent e = p->heap[0];
			const uint8_t *r = p->blocks[e.block].data + e.off;

			p->heap[0] = p->heap[--p->nheap];
			heap_down(p->heap, p->nheap, 0);
			p->queued_bytes -= e.len + e.data_len;
			p->release = e.block;
			err = hwt_fmt_evlist_parse(s->evlist, r, e.len, rec);
			if (err) {
				/* Parsed once already when queued; an evlist
				 * that grew since (pipe) may disagree. */
				s->stats.bad_records++;
				continue;
			}
			if (rec->type == FMT_PERF_AUXTRACE) {
				if (e.data_len)
					rec->u.auxtrace.data = r + e.len;
			} else if (rec->type == PERF_RECORD_LOST) {
				s->stats.lost_records += rec->u.lost.lost;
			} else if (rec->type == PERF_RECORD_LOST_SAMPLES) {
				s->stats.lost_samples += rec->u.lost_samples.lost;
			} else if (rec->type == PERF_RECORD_AUX) {
				fmt_aux_note_record(s, rec);
			}
			s->stats.records++;
			return 0;
		}
		if (p->eof)
			return -HWT_EEOS;
		err = pump(s, err_offset);
		if (err)
			return err;
	}
}

int fmt_perf_rewind(struct hwt_fmt_session *s)
{
	struct fmt_perf *p = s->perf;

	if (!p->seekable)
		return -HWT_ENOTSUP;
	queue_reset(p);
	memset(&s->stats, 0, sizeof(s->stats));
	return src_seek(p, s->fd, p->data_start);
}

void fmt_perf_close(struct fmt_perf *p)
{
	if (!p)
		return;
	free(p->rbuf);
	ZSTD_freeDCtx(p->dctx);
	hwt_buf_fini(&p->cin);
	hwt_buf_fini(&p->dout);
	hwt_buf_fini(&p->event_desc);
	free(p->heap);
	for (size_t i = 0; i < p->nblocks; i++)
		free(p->blocks[i].data);
	free(p->blocks);
	free(p);
}
