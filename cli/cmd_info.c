/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/cmd_info.c - `hwtrace info FILE`: what a trace file holds. For a .hwt
 * container: header, metadata, events, each stream with its record counts
 * by type, raw and stored bytes and chunk count, losses, and whether the
 * index was used or the file was scanned (and cut short). For perf.data:
 * kind, metadata translated from its features, events, record counts by
 * type and AUX bytes. Every chunk is read, so a damaged file is caught here
 * (and said in the words every command uses: hwt_cli_damage); what is
 * intact is still shown, with the span of time the records cover, which
 * is what a recording that did not end cleanly still holds. --json prints
 * the same as one JSON object.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "format/format.h"

#define NTYPES 128 /* record types counted one by one; the rest as "other" */

struct stream_info {
	uint64_t chunks, raw, stored, records, bad;
	uint64_t by_type[NTYPES + 1];
	uint64_t aux_lo, aux_hi, aux_segments;
};

struct info {
	const char *path;
	bool json;
	struct hwt_fmt_session *s;
	const struct hwt_fmt_reader *r;
	struct stream_info *streams;  /* .hwt: one per stream position */
	uint64_t by_type[NTYPES + 1]; /* perf.data */
	uint64_t records;
	uint64_t data;			/* records and AUX bytes read */
	uint64_t time_first, time_last; /* of the records (perf clock), 0: none */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: hwtrace info [--json] FILE\n"
		   "\n"
		   "Shows what a trace file holds: a hwtrace container (.hwt) or a perf.data\n"
		   "file (file or pipe mode; '-' reads a perf pipe stream from stdin).\n"
		   "\n"
		   "  --json      print one JSON object instead of text\n"
		   "  -h, --help  show this help\n");
	hwt_cli_help_end(f);
}

/* --- printing helpers ------------------------------------------------------- */

static void json_str(const char *s, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_cstr(const char *s)
{
	json_str(s, strlen(s));
}

/* Text: printable ASCII as is, the rest as \xNN. */
static void text_str(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f)
			putchar(c);
		else
			printf("\\x%02x", c);
	}
}

static void print_meta_value(const struct hwt_fmt_meta *m, bool json)
{
	switch (m->type) {
	case HWT_FMT_META_U64:
		printf("%" PRIu64, m->v.u64);
		break;
	case HWT_FMT_META_I64:
		printf("%" PRId64, m->v.i64);
		break;
	case HWT_FMT_META_STR:
		if (json)
			json_str(m->v.str, m->len);
		else
			text_str(m->v.str, m->len);
		break;
	default:
		/* Bytes: the size, and the first few as hex (build-ids fit). */
		if (json)
			printf("{\"bytes\": %" PRIu32 ", \"hex\": \"", m->len);
		else
			printf("<%" PRIu32 " bytes%s", m->len, m->len ? ": " : "");
		for (uint32_t i = 0; i < m->len && i < 20; i++)
			printf("%02x", m->v.bytes[i]);
		if (m->len > 20)
			printf("...");
		printf(json ? "\"}" : ">");
		break;
	}
}

static const char *const sample_bits[] = {
    "IP",
    "TID",
    "TIME",
    "ADDR",
    "READ",
    "CALLCHAIN",
    "ID",
    "CPU",
    "PERIOD",
    "STREAM_ID",
    "RAW",
    "BRANCH_STACK",
    "REGS_USER",
    "STACK_USER",
    "WEIGHT",
    "DATA_SRC",
    "IDENTIFIER",
    "TRANSACTION",
    "REGS_INTR",
    "PHYS_ADDR",
    "AUX",
    "CGROUP",
    "DATA_PAGE_SIZE",
    "CODE_PAGE_SIZE",
    "WEIGHT_STRUCT",
};

static void sample_type_str(uint64_t t, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < 64; i++) {
		char other[16];
		const char *name = i < HWT_ARRAY_SIZE(sample_bits) ? sample_bits[i] : other;

		if (!(t & (1ull << i)))
			continue;
		if (i >= HWT_ARRAY_SIZE(sample_bits))
			snprintf(other, sizeof(other), "bit%zu", i);
		n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s", n ? "|" : "", name);
	}
	if (n >= cap && cap > 4)
		strcpy(buf + cap - 4, "...");
}

static const char *type_name(unsigned int t, char *buf, size_t cap)
{
	const char *n = hwt_fmt_record_type_name(t);

	if (n)
		return n;
	snprintf(buf, cap, "TYPE%u", t);
	return buf;
}

static void count_type(uint64_t *by_type, uint32_t type)
{
	by_type[type < NTYPES ? type : NTYPES]++;
}

/* "SAMPLE 1200, MMAP2 2" or {"SAMPLE": 1200, "MMAP2": 2} */
static void print_counts(const uint64_t *by_type, bool json)
{
	bool first = true;
	char nb[32];

	if (json)
		putchar('{');
	for (unsigned int t = 0; t <= NTYPES; t++) {
		const char *name = t < NTYPES ? type_name(t, nb, sizeof(nb)) : "other";

		if (!by_type[t])
			continue;
		if (json) {
			printf("%s", first ? "" : ", ");
			json_cstr(name);
			printf(": %" PRIu64, by_type[t]);
		} else {
			printf("%s%s %" PRIu64, first ? "" : ", ", name, by_type[t]);
		}
		first = false;
	}
	if (json)
		putchar('}');
	else if (first)
		printf("none");
}

static double ratio(uint64_t raw, uint64_t stored)
{
	return stored ? (double)raw / (double)stored : 0.0;
}

static const char *lost_kind(uint32_t kind)
{
	switch (kind) {
	case HWT_FMT_LOST_RECORDS:
		return "records (kernel ring buffer overflow)";
	case HWT_FMT_LOST_SAMPLES:
		return "samples (PERF_RECORD_LOST_SAMPLES)";
	case HWT_FMT_LOST_AUX:
		return "AUX bytes (truncated or overwritten)";
	case HWT_FMT_LOST_WRITER:
		return "bytes dropped by the writer (queue full)";
	case HWT_FMT_LOST_AUX_GAPS:
		return "AUX gaps (TRUNCATED/PARTIAL records)";
	default:
		return "units of an unknown kind";
	}
}

static const char *lost_key(uint32_t kind)
{
	switch (kind) {
	case HWT_FMT_LOST_RECORDS:
		return "records";
	case HWT_FMT_LOST_SAMPLES:
		return "samples";
	case HWT_FMT_LOST_AUX:
		return "aux_bytes";
	case HWT_FMT_LOST_WRITER:
		return "writer_bytes";
	case HWT_FMT_LOST_AUX_GAPS:
		return "aux_gaps";
	default:
		return "unknown";
	}
}

/* --- gathering ----------------------------------------------------------------- */

/* The span of time the records cover: their first and last times. */
static void note_time(struct info *in, const uint8_t *p, size_t size)
{
	const struct hwt_fmt_evlist *ev = hwt_fmt_session_evlist(in->s);
	struct hwt_fmt_record rec;

	if (hwt_fmt_evlist_parse(ev, p, size, &rec) != 0 || !(rec.id.present & PERF_SAMPLE_TIME) ||
	    !rec.id.time)
		return;
	if (!in->time_first || rec.id.time < in->time_first)
		in->time_first = rec.id.time;
	if (rec.id.time > in->time_last)
		in->time_last = rec.id.time;
}

/* Reads every chunk of a container: counts, sizes, and integrity. */
static int gather_hwt(struct info *in, uint64_t *err_off)
{
	const struct hwt_fmt_reader *r = in->r;
	size_t ns = hwt_fmt_reader_nstreams(r);
	struct hwt_buf buf;
	int err = 0;

	in->streams = calloc(ns ? ns : 1, sizeof(*in->streams));
	if (!in->streams)
		return -ENOMEM;
	for (size_t i = 0; i < ns; i++)
		in->streams[i].aux_lo = UINT64_MAX;
	hwt_buf_init(&buf);
	for (size_t i = 0; i < hwt_fmt_reader_nchunks(r) && !err; i++) {
		const struct hwt_fmt_chunk *c = hwt_fmt_reader_chunk(r, i);
		struct stream_info *si = NULL;
		int64_t n;

		for (size_t k = 0; k < ns; k++)
			if (hwt_fmt_reader_stream(r, k)->id == c->stream)
				si = &in->streams[k];
		/* Every chunk is read: that is what checks the whole file. A
		 * damaged one is counted by the reader (said at the end). */
		n = hwt_fmt_reader_chunk_load(r, c, &buf);
		if (n == -ENOMEM) {
			err = (int)n;
			*err_off = c->file_offset;
			break;
		}
		if (n < 0)
			continue;
		if (!si || (c->type != HWT_FMT_CHUNK_RECORDS && c->type != HWT_FMT_CHUNK_AUX))
			continue;
		si->chunks++;
		si->raw += c->raw_size;
		si->stored += c->comp_size;
		in->data += c->raw_size;
		if (c->type == HWT_FMT_CHUNK_AUX) {
			if (c->aux_offset != si->aux_hi || si->aux_lo == UINT64_MAX)
				si->aux_segments++;
			if (c->aux_offset < si->aux_lo)
				si->aux_lo = c->aux_offset;
			si->aux_hi = c->aux_offset + c->raw_size;
			continue;
		}
		for (size_t pos = 0; pos < buf.len;) {
			size_t size = buf.len - pos >= 8 ? hwt_le16(buf.data + pos + 6) : 0;

			if (size < 8 || size > buf.len - pos) {
				si->bad++;
				break;
			}
			count_type(si->by_type, hwt_le32(buf.data + pos));
			si->records++;
			note_time(in, buf.data + pos, size);
			pos += size;
		}
	}
	hwt_buf_fini(&buf);
	return err;
}

/* Reads every record of a perf.data session. */
static int gather_perf(struct info *in, uint64_t *err_off)
{
	struct hwt_fmt_record rec;
	int err;

	while ((err = hwt_fmt_session_next(in->s, &rec, err_off)) == 0) {
		count_type(in->by_type, rec.type);
		in->records++;
		if ((rec.id.present & PERF_SAMPLE_TIME) && rec.id.time) {
			if (!in->time_first || rec.id.time < in->time_first)
				in->time_first = rec.id.time;
			if (rec.id.time > in->time_last)
				in->time_last = rec.id.time;
		}
	}
	in->data = in->records;
	/* Broken framing ends the records: the session keeps it as damage,
	 * said at the end with what was read before it. */
	return err == -HWT_EEOS || err != -ENOMEM ? 0 : err;
}

/* --- printing -------------------------------------------------------------------- */

/* "span       1234.567890 to 1246.913568 (12.35 s: the first and last
 * records' times)", in seconds as 'hwtrace script' shows them. */
static void print_span(const struct info *in)
{
	uint64_t a = in->time_first, b = in->time_last;

	if (in->json) {
		printf(",\n  \"time_first\": %" PRIu64 ",\n  \"time_last\": %" PRIu64, a, b);
		return;
	}
	if (!a) {
		printf("span       unknown (no record carries a time)\n");
		return;
	}
	printf("span       %" PRIu64 ".%06" PRIu64 " to %" PRIu64 ".%06" PRIu64
	       " (%.2f s: the first and last records' times)\n",
	       a / 1000000000, a % 1000000000 / 1000, b / 1000000000, b % 1000000000 / 1000,
	       (double)(b - a) / 1e9);
}

static void print_meta(const struct info *in)
{
	size_t n = hwt_fmt_session_nmeta(in->s);

	if (in->json) {
		printf(",\n  \"metadata\": {");
		for (size_t i = 0; i < n; i++) {
			const struct hwt_fmt_meta *m = hwt_fmt_session_meta(in->s, i);

			printf("%s\n    ", i ? "," : "");
			json_cstr(m->key);
			printf(": ");
			print_meta_value(m, true);
		}
		printf("%s}", n ? "\n  " : "");
		return;
	}
	printf("metadata   %zu entries\n", n);
	for (size_t i = 0; i < n; i++) {
		const struct hwt_fmt_meta *m = hwt_fmt_session_meta(in->s, i);

		printf("  %-22s = ", m->key);
		print_meta_value(m, false);
		putchar('\n');
	}
}

static void print_events(const struct info *in)
{
	const struct hwt_fmt_evlist *ev = hwt_fmt_session_evlist(in->s);
	size_t n = hwt_fmt_evlist_count(ev);
	char st[512];

	if (in->json)
		printf(",\n  \"events\": [");
	else
		printf("events     %zu\n", n);
	for (size_t i = 0; i < n; i++) {
		const struct hwt_fmt_event *e = hwt_fmt_evlist_event(ev, i);

		sample_type_str(e->attr.sample_type, st, sizeof(st));
		if (in->json) {
			printf("%s\n    {\"name\": ", i ? "," : "");
			json_cstr(e->name);
			printf(", \"type\": %" PRIu32 ", \"config\": %llu, \"sample_type\": ",
			       e->attr.type, (unsigned long long)e->attr.config);
			json_cstr(st);
			printf(", \"ids\": %zu}", e->nids);
		} else {
			printf("  %-3zu %-20s type %" PRIu32
			       " config %#llx sample_type %s ids %zu\n",
			       i, e->name[0] ? e->name : "(unnamed)", e->attr.type,
			       (unsigned long long)e->attr.config, st[0] ? st : "0", e->nids);
		}
	}
	if (in->json)
		printf("%s]", n ? "\n  " : "");
}

static void print_hwt(const struct info *in)
{
	const struct hwt_fmt_reader *r = in->r;
	const struct hwt_fmt_file_info *fi = hwt_fmt_reader_info(r);
	size_t ns = hwt_fmt_reader_nstreams(r), nl = hwt_fmt_reader_nlost(r);
	uint64_t raw = 0, stored = 0;

	for (size_t i = 0; i < ns; i++) {
		raw += in->streams[i].raw;
		stored += in->streams[i].stored;
	}
	if (in->json) {
		printf("{\n  \"file\": ");
		json_cstr(in->path);
		printf(",\n  \"kind\": \"hwt\",\n  \"version\": \"%u.%u\",\n  \"flags\": %" PRIu32
		       ",\n  \"emulated\": %s,\n  \"size\": %" PRIu64 ",\n  \"chunks\": %zu"
		       ",\n  \"index\": %s,\n  \"closed\": %s,\n  \"truncated\": %s,"
		       "\n  \"valid_end\": %" PRIu64,
		       fi->version_major, fi->version_minor, fi->flags,
		       fi->flags & HWT_FMT_FLAG_EMULATED_PT ? "true" : "false", fi->file_size,
		       hwt_fmt_reader_nchunks(r), fi->indexed ? "true" : "false",
		       fi->closed ? "true" : "false", fi->truncated ? "true" : "false",
		       fi->valid_end);
	} else {
		printf("file       %s\n", in->path);
		printf("format     hwtrace container %u.%u\n", fi->version_major,
		       fi->version_minor);
		printf("flags      %s\n", fi->flags & HWT_FMT_FLAG_EMULATED_PT
					      ? "emulated-pt (PT bytes from the emulator)"
					      : "none");
		printf("size       %" PRIu64 " bytes, %zu chunks\n", fi->file_size,
		       hwt_fmt_reader_nchunks(r));
		if (fi->indexed)
			printf("index      present\n");
		else if (fi->truncated)
			printf("index      absent: scanned; truncated at offset %" PRIu64
			       " (incomplete last chunk, %" PRIu64 " bytes dropped)\n",
			       fi->valid_end, fi->file_size - fi->valid_end);
		else if (fi->closed)
			printf("index      unusable: scanned\n");
		else
			printf(
			    "index      absent: scanned (the recorder did not close the file)\n");
		printf("ended      %s\n",
		       fi->closed ? "cleanly (the recorder closed the file)"
				  : "not cleanly: the recorder did not close the file (killed, out "
				    "of memory or a power cut)");
	}
	print_span(in);
	print_meta(in);
	print_events(in);
	if (in->json)
		printf(",\n  \"streams\": [");
	else
		printf("streams    %zu\n  %-3s %-8s %4s %7s  %-16s %6s %9s %12s %12s %6s\n", ns,
		       "id", "kind", "cpu", "tid", "name", "chunks", "records", "raw", "stored",
		       "ratio");
	for (size_t i = 0; i < ns; i++) {
		const struct hwt_fmt_stream_desc *d = hwt_fmt_reader_stream(r, i);
		const struct stream_info *si = &in->streams[i];
		bool aux = d->kind == HWT_FMT_STREAM_AUX;

		if (in->json) {
			printf("%s\n    {\"id\": %" PRIu32 ", \"kind\": \"%s\", \"cpu\": %" PRId32
			       ", \"tid\": %" PRId32 ", \"name\": ",
			       i ? "," : "", d->id, aux ? "aux" : "records", d->cpu, d->tid);
			json_cstr(d->name);
			printf(", \"chunks\": %" PRIu64 ", \"raw\": %" PRIu64
			       ", \"stored\": %" PRIu64 ", \"ratio\": %.2f",
			       si->chunks, si->raw, si->stored, ratio(si->raw, si->stored));
			if (aux) {
				printf(", \"aux_segments\": %" PRIu64, si->aux_segments);
			} else {
				printf(", \"records\": %" PRIu64 ", \"bad\": %" PRIu64
				       ", \"by_type\": ",
				       si->records, si->bad);
				print_counts(si->by_type, true);
			}
			putchar('}');
			continue;
		}
		printf("  %-3" PRIu32 " %-8s %4" PRId32 " %7" PRId32 "  %-16s %6" PRIu64, d->id,
		       aux ? "aux" : "records", d->cpu, d->tid, d->name, si->chunks);
		if (aux)
			printf(" %9s", "-");
		else
			printf(" %9" PRIu64, si->records);
		printf(" %12" PRIu64 " %12" PRIu64 " %6.2f\n", si->raw, si->stored,
		       ratio(si->raw, si->stored));
		if (aux) {
			if (si->aux_segments)
				printf("      AUX offsets %" PRIu64 "..%" PRIu64 " in %" PRIu64
				       " segment(s)\n",
				       si->aux_lo, si->aux_hi, si->aux_segments);
		} else {
			printf("      ");
			print_counts(si->by_type, false);
			if (si->bad)
				printf(" (%" PRIu64 " chunk(s) with bad record framing)", si->bad);
			putchar('\n');
		}
	}
	if (in->json) {
		printf("%s],\n  \"raw\": %" PRIu64 ",\n  \"stored\": %" PRIu64
		       ",\n  \"ratio\": %.2f,\n  \"lost\": [",
		       ns ? "\n  " : "", raw, stored, ratio(raw, stored));
		for (size_t i = 0; i < nl; i++) {
			const struct hwt_fmt_lost *l = hwt_fmt_reader_lost(r, i);

			printf("%s\n    {\"stream\": %" PRId64
			       ", \"kind\": \"%s\", \"amount\": %" PRIu64 "}",
			       i ? "," : "", l->stream == UINT32_MAX ? -1 : (int64_t)l->stream,
			       lost_key(l->kind), l->amount);
		}
		printf("%s]\n}\n", nl ? "\n  " : "");
		return;
	}
	printf("total      raw %" PRIu64 " bytes, stored %" PRIu64 " bytes, ratio %.2f\n", raw,
	       stored, ratio(raw, stored));
	if (!nl)
		printf("lost       nothing\n");
	for (size_t i = 0; i < nl; i++) {
		const struct hwt_fmt_lost *l = hwt_fmt_reader_lost(r, i);

		if (l->stream == UINT32_MAX)
			printf("lost       whole file: %" PRIu64 " %s\n", l->amount,
			       lost_kind(l->kind));
		else
			printf("lost       stream %" PRIu32 ": %" PRIu64 " %s\n", l->stream,
			       l->amount, lost_kind(l->kind));
	}
}

static void print_perf(const struct info *in)
{
	struct hwt_fmt_session_stats st;
	size_t na = hwt_fmt_session_naux(in->s);
	bool pipe = hwt_fmt_session_kind(in->s) == HWT_FMT_KIND_PERF_PIPE;
	uint64_t aux_total = 0;

	hwt_fmt_session_stats(in->s, &st);
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < hwt_fmt_session_aux(in->s, i)->nsegments; j++)
			aux_total += hwt_fmt_session_aux_segment(in->s, i, j)->size;
	if (in->json) {
		printf("{\n  \"file\": ");
		json_cstr(in->path);
		printf(",\n  \"kind\": \"%s\"", pipe ? "perf-pipe" : "perf-file");
	} else {
		const struct hwt_fmt_meta *cut =
		    hwt_fmt_session_meta_find(in->s, "perf.truncated_at");

		printf("file       %s\n", in->path);
		printf("format     perf.data, %s mode\n", pipe ? "pipe" : "file");
		if (cut && cut->type == HWT_FMT_META_U64)
			printf("truncated  at offset %" PRIu64
			       " (the recording was cut short; read up to there)\n",
			       cut->v.u64);
		if (hwt_fmt_session_meta_find(in->s, "perf.unfinished"))
			printf("ended      not cleanly: perf record did not finish the file "
			       "(killed?); read to its end\n");
	}
	print_span(in);
	print_meta(in);
	print_events(in);
	if (in->json) {
		printf(",\n  \"records\": %" PRIu64 ",\n  \"by_type\": ", in->records);
		print_counts(in->by_type, true);
		printf(",\n  \"aux_bytes\": %" PRIu64 ",\n  \"aux\": [", aux_total);
	} else {
		printf("records    %" PRIu64 "\n      ", in->records);
		print_counts(in->by_type, false);
		printf("\naux        %" PRIu64 " bytes in %zu stream(s)\n", aux_total, na);
	}
	for (size_t i = 0; i < na; i++) {
		const struct hwt_fmt_aux_stream *a = hwt_fmt_session_aux(in->s, i);
		uint64_t bytes = 0;

		for (size_t j = 0; j < a->nsegments; j++)
			bytes += hwt_fmt_session_aux_segment(in->s, i, j)->size;
		if (in->json)
			printf("%s\n    {\"idx\": %" PRIu32 ", \"cpu\": %" PRId32
			       ", \"tid\": %" PRId32 ", \"segments\": %zu, \"bytes\": %" PRIu64 "}",
			       i ? "," : "", a->idx, a->cpu, a->tid, a->nsegments, bytes);
		else
			printf("  idx %-3" PRIu32 " cpu %-3" PRId32 " tid %-7" PRId32
			       " %zu segment(s), %" PRIu64 " bytes\n",
			       a->idx, a->cpu, a->tid, a->nsegments, bytes);
	}
	if (in->json) {
		printf("%s],\n  \"bad_records\": %" PRIu64 ",\n  \"unknown_types\": %" PRIu64
		       ",\n  \"lost_records\": %" PRIu64 ",\n  \"lost_samples\": %" PRIu64 "\n}\n",
		       na ? "\n  " : "", st.bad_records, st.unknown_types, st.lost_records,
		       st.lost_samples);
		return;
	}
	printf("skipped    %" PRIu64 " malformed, %" PRIu64 " of unknown type\n", st.bad_records,
	       st.unknown_types);
	printf("lost       %" PRIu64 " records, %" PRIu64 " samples\n", st.lost_records,
	       st.lost_samples);
}

int hwt_cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct hwt_fmt_session_config cfg;
	struct info in;
	uint64_t off = 0;
	int c, err, ret;

	memset(&in, 0, sizeof(in));
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			in.json = true;
			break;
		case 'h':
			usage(stdout);
			return HWT_EXIT_OK;
		default:
			return hwt_cli_usage_error("info", "unknown option");
		}
	}
	if (optind != argc - 1)
		return hwt_cli_usage_error("info", "expected one FILE");
	in.path = argv[optind];

	hwt_fmt_session_config_init(&cfg);
	cfg.log = *hwt_cli_logger();
	err = hwt_fmt_session_open(&in.s, in.path, &cfg, &off);
	if (err)
		return hwt_cli_recording_error(in.path, err, off);
	in.r = hwt_fmt_session_reader(in.s);
	err = in.r ? gather_hwt(&in, &off) : gather_perf(&in, &off);
	if (err) {
		ret = hwt_cli_recording_error(in.path, err, off);
	} else {
		if (in.r)
			print_hwt(&in);
		else
			print_perf(&in);
		ret = fflush(stdout) == 0 ? HWT_EXIT_OK : HWT_EXIT_ERROR;
		/* What is intact was shown; a damaged or unfinished file is
		 * said in one line, an error when nothing in it was read. */
		if (hwt_cli_damage(in.path, in.s, in.data == 0) && in.data == 0)
			ret = HWT_EXIT_ERROR;
	}
	free(in.streams);
	hwt_fmt_session_close(in.s);
	return ret;
}
