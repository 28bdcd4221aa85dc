/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/perfwriter.c - writes perf.data in file mode, for `hwtrace
 * convert` and for round-trip tests: header, attribute section with sample
 * ids, data section, then the feature table and the features perf report
 * and perf script use (event names, build-ids, host, kernel, command line).
 * The layout follows tools/perf/util/header.c: the feature table must sit
 * right after the data section, one {offset, size} per bit set. For AUX
 * area traces it also writes the PERF_RECORD_AUXTRACE_INFO record and keeps
 * the file offset of every PERF_RECORD_AUXTRACE, which become the
 * HEADER_AUXTRACE index perf record writes (tools/perf/util/auxtrace.c:
 * u64 count, then {u64 file_offset, u64 size} per record; perf checks
 * that size against the record's header size, the data not counted), so
 * perf queues the trace without reading the whole data section first.
 */
#include "format/format_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME_ALIGN	   64
#define OUT_FLUSH	   (1u << 20)
#define MISC_BUILD_ID_SIZE (1u << 15)

struct hwt_fmt_perf_writer {
	int fd;
	int err;
	uint64_t data_start, data_size;
	struct hwt_buf out;		   /* data bytes not yet written */
	char *str[FMT_FEAT_BITS];	   /* string features */
	struct hwt_buf buildids;	   /* encoded build-id entries */
	struct hwt_buf cmdline;		   /* encoded HEADER_CMDLINE */
	struct hwt_buf event_desc;	   /* encoded HEADER_EVENT_DESC */
	struct hwt_buf raw[FMT_FEAT_BITS]; /* features given encoded */
	bool has_raw[FMT_FEAT_BITS];
	struct hwt_buf auxindex; /* HEADER_AUXTRACE entries */
	uint64_t nauxindex;
	bool has_cmdline;
};

static int write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t k = pwrite(fd, p, n, (off_t)off);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* perf's do_write_string: u32 length (NUL and padding to 64 included),
 * then the string padded with zeros. */
static int put_string(struct hwt_buf *b, const char *s)
{
	size_t len = strlen(s) + 1, padded = (len + NAME_ALIGN - 1) / NAME_ALIGN * NAME_ALIGN;
	uint8_t l[4];
	int err;

	hwt_put_le32(l, (uint32_t)padded);
	err = hwt_buf_reserve(b, 4 + padded);
	if (err)
		return err;
	hwt_buf_append(b, l, 4);
	hwt_buf_append(b, s, len);
	memset(b->data + b->len, 0, padded - len);
	b->len += padded - len;
	return 0;
}

static int put_u32(struct hwt_buf *b, uint32_t v)
{
	uint8_t x[4];

	hwt_put_le32(x, v);
	return hwt_buf_append(b, x, 4);
}

static int put_u64(struct hwt_buf *b, uint64_t v)
{
	uint8_t x[8];

	hwt_put_le64(x, v);
	return hwt_buf_append(b, x, 8);
}

static int flush_out(struct hwt_fmt_perf_writer *w)
{
	int err;

	if (w->err || !w->out.len)
		return w->err;
	err = write_all(w->fd, w->out.data, w->out.len);
	if (err)
		w->err = err;
	w->out.len = 0;
	return err;
}

static int append(struct hwt_fmt_perf_writer *w, const void *data, size_t len)
{
	int err;

	if (w->err)
		return w->err;
	err = hwt_buf_append(&w->out, data, len);
	if (err)
		return err;
	w->data_size += len;
	return w->out.len >= OUT_FLUSH ? flush_out(w) : 0;
}

static void writer_free(struct hwt_fmt_perf_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	hwt_buf_fini(&w->out);
	hwt_buf_fini(&w->buildids);
	hwt_buf_fini(&w->cmdline);
	hwt_buf_fini(&w->event_desc);
	hwt_buf_fini(&w->auxindex);
	for (size_t i = 0; i < FMT_FEAT_BITS; i++) {
		free(w->str[i]);
		hwt_buf_fini(&w->raw[i]);
	}
	free(w);
}

int hwt_fmt_perf_writer_open(struct hwt_fmt_perf_writer **writer, const char *path,
			     const struct hwt_fmt_evlist *evlist)
{
	struct hwt_fmt_perf_writer *w;
	size_t n = hwt_fmt_evlist_count(evlist);
	const size_t asz = sizeof(struct perf_event_attr), fasz = asz + 16;
	struct hwt_buf head;
	uint64_t off;
	int err;

	if (!writer || !path || !evlist || n == 0)
		return -HWT_EINVAL;
	*writer = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	hwt_buf_init(&head);
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		err = -errno;
		goto error;
	}
	/* An existing file keeps its mode through O_CREAT; make it private
	 * too. Never chmod a device ("-o /dev/null"). */
	{
		struct stat st;

		if (fstat(w->fd, &st) < 0 || (S_ISREG(st.st_mode) && fchmod(w->fd, 0600) < 0)) {
			err = -errno;
			goto error;
		}
	}

	/* [header][ids of every attr][attr entries][data ...] */
	err = hwt_buf_reserve(&head, FMT_PERF_FILE_HEADER_SIZE);
	if (err)
		goto error;
	memset(head.data, 0, FMT_PERF_FILE_HEADER_SIZE);
	head.len = FMT_PERF_FILE_HEADER_SIZE;
	off = FMT_PERF_FILE_HEADER_SIZE;
	for (size_t i = 0; i < n; i++) {
		const struct hwt_fmt_event *ev = hwt_fmt_evlist_event(evlist, i);

		for (size_t j = 0; j < ev->nids && !err; j++)
			err = put_u64(&head, ev->ids[j]);
	}
	if (err)
		goto error;
	{
		uint64_t ids_off = off, aoff = head.len;

		for (size_t i = 0; i < n && !err; i++) {
			const struct hwt_fmt_event *ev = hwt_fmt_evlist_event(evlist, i);
			struct perf_event_attr attr = ev->attr;

			attr.size = (uint32_t)asz;
			err = hwt_buf_append(&head, &attr, asz);
			if (!err)
				err = put_u64(&head, ids_off);
			if (!err)
				err = put_u64(&head, ev->nids * 8);
			ids_off += ev->nids * 8;
		}
		if (err)
			goto error;
		memcpy(head.data, FMT_PERF_MAGIC, 8);
		hwt_put_le64(head.data + 8, FMT_PERF_FILE_HEADER_SIZE);
		hwt_put_le64(head.data + 16, fasz);
		hwt_put_le64(head.data + 24, aoff);
		hwt_put_le64(head.data + 32, n * fasz);
		w->data_start = head.len;
		hwt_put_le64(head.data + 40, w->data_start);
	}
	err = write_all(w->fd, head.data, head.len);
	if (err)
		goto error;

	/* Event names travel in HEADER_EVENT_DESC. */
	err = put_u32(&w->event_desc, (uint32_t)n);
	if (!err)
		err = put_u32(&w->event_desc, (uint32_t)asz);
	for (size_t i = 0; i < n && !err; i++) {
		const struct hwt_fmt_event *ev = hwt_fmt_evlist_event(evlist, i);
		struct perf_event_attr attr = ev->attr;

		attr.size = (uint32_t)asz;
		err = hwt_buf_append(&w->event_desc, &attr, asz);
		if (!err)
			err = put_u32(&w->event_desc, (uint32_t)ev->nids);
		if (!err)
			err = put_string(&w->event_desc, ev->name);
		for (size_t j = 0; j < ev->nids && !err; j++)
			err = put_u64(&w->event_desc, ev->ids[j]);
	}
	if (err)
		goto error;
	hwt_buf_fini(&head);
	*writer = w;
	return 0;
error:
	hwt_buf_fini(&head);
	writer_free(w);
	return err;
}

int hwt_fmt_perf_writer_record(struct hwt_fmt_perf_writer *w, const void *rec, size_t len)
{
	if (!w || !rec || len < sizeof(struct perf_event_header) ||
	    hwt_le16((const uint8_t *)rec + 6) != len)
		return -HWT_EINVAL;
	return append(w, rec, len);
}

int hwt_fmt_perf_writer_auxtrace(struct hwt_fmt_perf_writer *w, uint64_t offset, uint64_t reference,
				 uint32_t idx, int32_t tid, int32_t cpu, const void *data,
				 uint64_t size)
{
	uint8_t r[FMT_PERF_AUXTRACE_SIZE] = {0}, zero[8] = {0};
	uint64_t pad = (8 - (size & 7)) & 7;
	int err;

	if (!w || (size && !data) || size > UINT64_MAX - 8)
		return -HWT_EINVAL;
	/* As perf does: the data is padded to 8 bytes and the size says so;
	 * the next record's offset is the true AUX offset. */
	hwt_put_le32(r, FMT_PERF_AUXTRACE);
	hwt_put_le16(r + 6, FMT_PERF_AUXTRACE_SIZE);
	hwt_put_le64(r + 8, size + pad);
	hwt_put_le64(r + 16, offset);
	hwt_put_le64(r + 24, reference);
	hwt_put_le32(r + 32, idx);
	hwt_put_le32(r + 36, (uint32_t)tid);
	hwt_put_le32(r + 40, (uint32_t)cpu);
	/* The index entry: where the record starts, and its header size. */
	err = put_u64(&w->auxindex, w->data_start + w->data_size);
	if (!err)
		err = put_u64(&w->auxindex, sizeof(r));
	if (err)
		return err;
	w->nauxindex++;
	err = append(w, r, sizeof(r));
	if (!err && size) {
		err = flush_out(w);
		if (!err) {
			err = write_all(w->fd, data, (size_t)size);
			if (err)
				w->err = err;
			else
				w->data_size += size;
		}
	}
	if (!err && pad)
		err = append(w, zero, (size_t)pad);
	return err;
}

int hwt_fmt_perf_writer_auxtrace_info(struct hwt_fmt_perf_writer *w, uint32_t type,
				      const uint64_t *priv, size_t npriv)
{
	uint8_t r[FMT_PERF_AUXTRACE_INFO_MAX];
	size_t size = 16 + npriv * 8;

	if (!w || (npriv && !priv) || npriv > (sizeof(r) - 16) / 8)
		return -HWT_EINVAL;
	memset(r, 0, 16);
	hwt_put_le32(r, FMT_PERF_AUXTRACE_INFO);
	hwt_put_le16(r + 6, (uint16_t)size);
	hwt_put_le32(r + 8, type); /* then u32 reserved */
	for (size_t i = 0; i < npriv; i++)
		hwt_put_le64(r + 16 + 8 * i, priv[i]);
	return append(w, r, size);
}

int fmt_perf_writer_feature_raw(struct hwt_fmt_perf_writer *w, unsigned int feature,
				const void *data, size_t len)
{
	if (!w || feature >= FMT_FEAT_BITS || (len && !data))
		return -HWT_EINVAL;
	w->raw[feature].len = 0;
	w->has_raw[feature] = true;
	return len ? hwt_buf_append(&w->raw[feature], data, len) : 0;
}

int hwt_fmt_perf_writer_feature_str(struct hwt_fmt_perf_writer *w, unsigned int feature,
				    const char *value)
{
	char *copy;

	if (!w || !value)
		return -HWT_EINVAL;
	switch (feature) {
	case FMT_FEAT_HOSTNAME:
	case FMT_FEAT_OSRELEASE:
	case FMT_FEAT_VERSION:
	case FMT_FEAT_ARCH:
	case FMT_FEAT_CPUDESC:
	case FMT_FEAT_CPUID:
		break;
	default:
		return -HWT_EINVAL;
	}
	copy = strdup(value);
	if (!copy)
		return -ENOMEM;
	free(w->str[feature]);
	w->str[feature] = copy;
	return 0;
}

int hwt_fmt_perf_writer_buildid(struct hwt_fmt_perf_writer *w, int32_t pid, const char *path,
				const uint8_t *build_id, size_t len, bool kernel)
{
	uint8_t h[8 + 4 + 24] = {0};
	size_t plen, padded;
	int err;

	if (!w || !path || !build_id || len == 0 || len > 20)
		return -HWT_EINVAL;
	plen = strlen(path) + 1;
	padded = (plen + NAME_ALIGN - 1) / NAME_ALIGN * NAME_ALIGN;
	if (sizeof(h) + padded > UINT16_MAX)
		return -HWT_EINVAL;
	hwt_put_le16(h + 4, (uint16_t)((kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER) |
				       MISC_BUILD_ID_SIZE));
	hwt_put_le16(h + 6, (uint16_t)(sizeof(h) + padded));
	hwt_put_le32(h + 8, (uint32_t)pid);
	memcpy(h + 12, build_id, len);
	h[12 + 20] = (uint8_t)len;
	err = hwt_buf_reserve(&w->buildids, sizeof(h) + padded);
	if (err)
		return err;
	hwt_buf_append(&w->buildids, h, sizeof(h));
	hwt_buf_append(&w->buildids, path, plen);
	memset(w->buildids.data + w->buildids.len, 0, padded - plen);
	w->buildids.len += padded - plen;
	return 0;
}

int hwt_fmt_perf_writer_cmdline(struct hwt_fmt_perf_writer *w, int argc, const char *const *argv)
{
	int err;

	if (!w || argc < 0 || (argc && !argv))
		return -HWT_EINVAL;
	w->cmdline.len = 0;
	err = put_u32(&w->cmdline, (uint32_t)argc);
	for (int i = 0; i < argc && !err; i++)
		err = put_string(&w->cmdline, argv[i] ? argv[i] : "");
	w->has_cmdline = !err;
	return err;
}

int hwt_fmt_perf_writer_close(struct hwt_fmt_perf_writer *w)
{
	uint64_t bitmap[FMT_FEAT_BITS / 64] = {0};
	struct hwt_buf table, body, auxidx;
	const struct hwt_buf *sec[FMT_FEAT_BITS] = {0};
	struct hwt_buf strs[FMT_FEAT_BITS];
	uint64_t foff;
	size_t nfeat = 0;
	uint8_t h[FMT_PERF_FILE_HEADER_SIZE - 48]; /* data.size .. end of bitmap */
	int err;

	if (!w)
		return 0;
	err = flush_out(w);
	hwt_buf_init(&table);
	hwt_buf_init(&body);
	hwt_buf_init(&auxidx);
	for (size_t i = 0; i < FMT_FEAT_BITS; i++)
		hwt_buf_init(&strs[i]);
	/* Features in bit order: build-ids, strings, cmdline, event desc. */
	sec[FMT_FEAT_BUILD_ID] = &w->buildids;
	for (size_t i = 0; i < FMT_FEAT_BITS && !err; i++) {
		if (!w->str[i])
			continue;
		err = put_string(&strs[i], w->str[i]);
		sec[i] = &strs[i];
	}
	if (w->has_cmdline)
		sec[FMT_FEAT_CMDLINE] = &w->cmdline;
	sec[FMT_FEAT_EVENT_DESC] = &w->event_desc;
	if (w->nauxindex && !err) {
		err = put_u64(&auxidx, w->nauxindex);
		if (!err)
			err = hwt_buf_append(&auxidx, w->auxindex.data, w->auxindex.len);
		sec[FMT_FEAT_AUXTRACE] = &auxidx;
	}
	for (size_t i = 0; i < FMT_FEAT_BITS; i++)
		if (w->has_raw[i])
			sec[i] = &w->raw[i];
	for (size_t i = 0; i < FMT_FEAT_BITS; i++)
		nfeat += sec[i] != NULL;
	foff = w->data_start + w->data_size + nfeat * 16;
	for (size_t i = 0; i < FMT_FEAT_BITS && !err; i++) {
		if (!sec[i])
			continue;
		bitmap[i / 64] |= 1ull << (i % 64);
		err = put_u64(&table, foff);
		if (!err)
			err = put_u64(&table, sec[i]->len);
		if (!err && sec[i]->len)
			err = hwt_buf_append(&body, sec[i]->data, sec[i]->len);
		foff += sec[i]->len;
	}
	if (!err)
		err = write_all(w->fd, table.data, table.len);
	if (!err && body.len)
		err = write_all(w->fd, body.data, body.len);
	if (!err) {
		/* Now the header knows the data size and the features. */
		memset(h, 0, sizeof(h));
		hwt_put_le64(h, w->data_size);
		for (size_t i = 0; i < FMT_FEAT_BITS / 64; i++)
			hwt_put_le64(h + 24 + 8 * i, bitmap[i]);
		err = pwrite_all(w->fd, h, sizeof(h), 48);
	}
	hwt_buf_fini(&table);
	hwt_buf_fini(&body);
	hwt_buf_fini(&auxidx);
	for (size_t i = 0; i < FMT_FEAT_BITS; i++)
		hwt_buf_fini(&strs[i]);
	if (!err && close(w->fd) < 0)
		err = -errno;
	else if (err)
		close(w->fd);
	w->fd = -1;
	if (!err)
		err = w->err;
	writer_free(w);
	return err;
}
