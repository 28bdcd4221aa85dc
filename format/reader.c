/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/reader.c - the container reader. It lists chunks from the index
 * when the trailer and index are intact, and otherwise scans chunk headers
 * from the start (a recorder that was killed leaves no index); a last chunk
 * cut short is reported as truncation, not as an error. Every length is
 * checked against the file before it is used, and nothing is allocated
 * beyond what the file holds or what decompression actually produces.
 * Chunk payloads are read with pread, so reads from several threads are
 * safe.
 */
#include "format/format_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

struct hwt_fmt_reader {
	struct hwt_fmt_reader_config cfg;
	int fd;
	uint64_t data_start; /* first chunk: the file header's size */
	uint64_t index_off;  /* from an intact trailer, else 0 */
	struct hwt_fmt_file_info info;
	struct hwt_fmt_chunk *chunks;
	size_t nchunks, capchunks;
	struct hwt_fmt_stream_desc *streams;
	size_t nstreams;
	struct fmt_meta_store meta;
	struct hwt_fmt_lost *lost;
	size_t nlost;
	/* per listed chunk: 0, or the error its payload gave when read
	 * (written atomically: reads may run on several threads) */
	int *bad;
};

void hwt_fmt_reader_config_init(struct hwt_fmt_reader_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->verify = true;
}

/* pread exactly n bytes at off: -HWT_ETRUNC when the file ends first. */
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

static int chunk_push(struct hwt_fmt_reader *r, const struct hwt_fmt_chunk *c)
{
	if (r->nchunks == r->capchunks) {
		size_t cap = r->capchunks ? r->capchunks * 2 : 64;
		struct hwt_fmt_chunk *t = realloc(r->chunks, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		r->chunks = t;
		r->capchunks = cap;
	}
	r->chunks[r->nchunks++] = *c;
	return 0;
}

static void chunk_from_header(struct hwt_fmt_chunk *c, uint64_t off,
			      const struct fmt_chunk_header *h)
{
	c->file_offset = off;
	c->type = h->type;
	c->stream = h->stream;
	c->raw_size = h->raw_size;
	c->comp_size = h->stored_size;
	c->aux_offset = h->aux_offset;
	c->crc = h->payload_crc;
	c->flags = h->flags;
}

/* Reads and checks the header of chunk c against what the list says. */
static int check_header(const struct hwt_fmt_reader *r, const struct hwt_fmt_chunk *c)
{
	uint8_t hb[HWT_FMT_CHUNK_HEADER_SIZE];
	struct fmt_chunk_header h;
	int err;

	if (c->file_offset > r->info.file_size ||
	    r->info.file_size - c->file_offset < HWT_FMT_CHUNK_HEADER_SIZE + (uint64_t)c->comp_size)
		return -HWT_ETRUNC;
	err = pread_full(r->fd, hb, sizeof(hb), c->file_offset);
	if (err)
		return err;
	err = fmt_chunk_header_decode(hb, &h);
	if (err)
		return err;
	if (h.type != c->type || h.flags != c->flags || h.stream != c->stream ||
	    h.raw_size != c->raw_size || h.stored_size != c->comp_size || h.payload_crc != c->crc ||
	    h.aux_offset != c->aux_offset)
		return -HWT_EFORMAT;
	return 0;
}

/* Remembers that listed chunk c failed to read with err (damage, not a
 * caller's mistake or a lack of memory), for hwt_fmt_reader_bad_chunks(). */
static int mark_bad(const struct hwt_fmt_reader *r, const struct hwt_fmt_chunk *c, int err)
{
	size_t lo = 0, hi = r->nchunks;

	if (!err || !r->bad || err == -ENOMEM || err == -HWT_EINVAL || err == -HWT_ETOOBIG)
		return err;
	/* The list is in file order. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->chunks[mid].file_offset < c->file_offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < r->nchunks && r->chunks[lo].file_offset == c->file_offset)
		__atomic_store_n(&r->bad[lo], err, __ATOMIC_RELAXED);
	return err;
}

static int chunk_load(const struct hwt_fmt_reader *r, const struct hwt_fmt_chunk *c,
		      ZSTD_DCtx *dctx, struct hwt_buf *stored, struct hwt_buf *out);

int fmt_reader_chunk_load(const struct hwt_fmt_reader *r, const struct hwt_fmt_chunk *c,
			  ZSTD_DCtx *dctx, struct hwt_buf *stored, struct hwt_buf *out)
{
	if (!r || !c || !stored || !out)
		return -HWT_EINVAL;
	return mark_bad(r, c, chunk_load(r, c, dctx, stored, out));
}

static int chunk_load(const struct hwt_fmt_reader *r, const struct hwt_fmt_chunk *c,
		      ZSTD_DCtx *dctx, struct hwt_buf *stored, struct hwt_buf *out)
{
	ZSTD_DCtx *own = NULL;
	ZSTD_inBuffer in;
	int err;

	err = check_header(r, c);
	if (err)
		return err;
	out->len = 0;
	if (c->flags & FMT_CHUNK_RAW) {
		err = hwt_buf_reserve(out, c->comp_size);
		if (err)
			return err;
		err = pread_full(r->fd, out->data, c->comp_size,
				 c->file_offset + HWT_FMT_CHUNK_HEADER_SIZE);
		if (err)
			return err;
		if (r->cfg.verify && hwt_crc32c(0, out->data, c->comp_size) != c->crc)
			return -HWT_ECHECKSUM;
		out->len = c->comp_size;
		return 0;
	}
	stored->len = 0;
	err = hwt_buf_reserve(stored, c->comp_size);
	if (err)
		return err;
	err = pread_full(r->fd, stored->data, c->comp_size,
			 c->file_offset + HWT_FMT_CHUNK_HEADER_SIZE);
	if (err)
		return err;
	stored->len = c->comp_size;
	if (r->cfg.verify && hwt_crc32c(0, stored->data, c->comp_size) != c->crc)
		return -HWT_ECHECKSUM;
	if (!dctx) {
		own = ZSTD_createDCtx();
		if (!own)
			return -ENOMEM;
		dctx = own;
	} else {
		ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
	}
	in.src = stored->data;
	in.size = stored->len;
	in.pos = 0;
	for (;;) {
		/* One byte beyond raw_size, so a frame that says more is caught. */
		size_t limit = (size_t)c->raw_size + 1;
		ZSTD_outBuffer ob;
		size_t ret;

		if (out->len == out->cap) {
			/* Grow with the output actually produced. */
			size_t want = out->len ? out->len : (size_t)c->comp_size * 4 + 4096;

			if (want > limit - out->len)
				want = limit - out->len;
			err = hwt_buf_reserve(out, want);
			if (err)
				goto out;
		}
		ob.dst = out->data;
		ob.size = out->cap < limit ? out->cap : limit;
		ob.pos = out->len;
		ret = ZSTD_decompressStream(dctx, &ob, &in);
		out->len = ob.pos;
		if (ZSTD_isError(ret) || out->len > c->raw_size) {
			err = -HWT_ECOMPRESS;
			goto out;
		}
		if (ret == 0)
			break; /* frame complete */
		if (in.pos == in.size && ob.pos < ob.size) {
			err = -HWT_ECOMPRESS; /* the frame is cut short */
			goto out;
		}
	}
	if (out->len != c->raw_size || in.pos != in.size)
		err = -HWT_ECOMPRESS;
out:
	ZSTD_freeDCtx(own);
	if (err)
		out->len = 0;
	return err;
}

static int64_t chunk_read(const struct hwt_fmt_reader *r, const struct hwt_fmt_chunk *c, void *dst);

int64_t hwt_fmt_reader_chunk_read(const struct hwt_fmt_reader *r, const struct hwt_fmt_chunk *c,
				  void *dst, size_t cap)
{
	int64_t n;

	if (!r || !c || (!dst && cap))
		return -HWT_EINVAL;
	if (cap < c->raw_size)
		return -HWT_ETOOBIG;
	n = chunk_read(r, c, dst);
	return n < 0 ? mark_bad(r, c, (int)n) : n;
}

static int64_t chunk_read(const struct hwt_fmt_reader *r, const struct hwt_fmt_chunk *c, void *dst)
{
	uint8_t *stored;
	size_t n;
	int err;

	err = check_header(r, c);
	if (err)
		return err;
	if (c->flags & FMT_CHUNK_RAW) {
		err = pread_full(r->fd, dst, c->comp_size,
				 c->file_offset + HWT_FMT_CHUNK_HEADER_SIZE);
		if (err)
			return err;
		if (r->cfg.verify && hwt_crc32c(0, dst, c->comp_size) != c->crc)
			return -HWT_ECHECKSUM;
		return c->comp_size;
	}
	/* check_header() proved comp_size bytes exist in the file. */
	stored = malloc(c->comp_size ? c->comp_size : 1);
	if (!stored)
		return -ENOMEM;
	err = pread_full(r->fd, stored, c->comp_size, c->file_offset + HWT_FMT_CHUNK_HEADER_SIZE);
	if (!err && r->cfg.verify && hwt_crc32c(0, stored, c->comp_size) != c->crc)
		err = -HWT_ECHECKSUM;
	if (!err) {
		n = ZSTD_decompress(dst, c->raw_size, stored, c->comp_size);
		if (ZSTD_isError(n) || n != c->raw_size)
			err = -HWT_ECOMPRESS;
	}
	free(stored);
	return err ? err : (int64_t)c->raw_size;
}

int64_t hwt_fmt_reader_chunk_load(const struct hwt_fmt_reader *r, const struct hwt_fmt_chunk *c,
				  struct hwt_buf *out)
{
	struct hwt_buf stored;
	int err;

	hwt_buf_init(&stored);
	err = fmt_reader_chunk_load(r, c, NULL, &stored, out);
	hwt_buf_fini(&stored);
	return err ? err : (int64_t)out->len;
}

/* --- listing chunks --------------------------------------------------------- */

/* Tries the trailer and index. Returns 1 when the index was used, 0 when
 * there is none or it is unusable (then the caller scans), or a hard error. */
static int load_index(struct hwt_fmt_reader *r)
{
	uint8_t tr[HWT_FMT_TRAILER_SIZE], hb[HWT_FMT_CHUNK_HEADER_SIZE];
	struct hwt_buf stored, out;
	struct fmt_chunk_header h;
	struct hwt_fmt_chunk ic;
	uint64_t size = r->info.file_size, ioff, prev_end;
	uint32_t esize, count;
	int err;

	if (size < r->data_start + HWT_FMT_CHUNK_HEADER_SIZE + HWT_FMT_TRAILER_SIZE)
		return 0;
	err = pread_full(r->fd, tr, sizeof(tr), size - sizeof(tr));
	if (err)
		return err;
	if (memcmp(tr, FMT_TRAILER_MAGIC, 8) != 0)
		return 0; /* no trailer: killed recorder, scan */
	if (hwt_le32(tr + 20) != hwt_crc32c(0, tr, 20)) {
		hwt_log(&r->cfg.log, HWT_LOG_WARN,
			"index trailer at offset %llu is corrupt (checksum); scanning chunks",
			(unsigned long long)(size - sizeof(tr)));
		return 0;
	}
	r->info.closed = true;
	ioff = hwt_le64(tr + 8);
	/* Even if the index itself is damaged, the data ends where it starts. */
	if (ioff >= r->data_start && ioff <= size - HWT_FMT_TRAILER_SIZE)
		r->index_off = ioff;
	if (ioff < r->data_start || ioff > size - HWT_FMT_TRAILER_SIZE - HWT_FMT_CHUNK_HEADER_SIZE)
		goto bad;
	err = pread_full(r->fd, hb, sizeof(hb), ioff);
	if (err)
		return err;
	if (fmt_chunk_header_decode(hb, &h) != 0 || h.type != HWT_FMT_CHUNK_INDEX ||
	    ioff + HWT_FMT_CHUNK_HEADER_SIZE + h.stored_size != size - HWT_FMT_TRAILER_SIZE)
		goto bad;
	chunk_from_header(&ic, ioff, &h);
	hwt_buf_init(&stored);
	hwt_buf_init(&out);
	err = fmt_reader_chunk_load(r, &ic, NULL, &stored, &out);
	hwt_buf_fini(&stored);
	if (err == -ENOMEM) {
		hwt_buf_fini(&out);
		return err;
	}
	if (err || out.len < FMT_INDEX_HEADER_SIZE)
		goto bad_out;
	esize = hwt_le32(out.data);
	count = hwt_le32(out.data + 4);
	if (esize < FMT_INDEX_ENTRY_SIZE || count > (out.len - FMT_INDEX_HEADER_SIZE) / esize)
		goto bad_out;
	prev_end = r->data_start;
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *e = out.data + FMT_INDEX_HEADER_SIZE + (size_t)i * esize;
		struct hwt_fmt_chunk c;

		c.file_offset = hwt_le64(e);
		c.type = hwt_le16(e + 8);
		c.flags = hwt_le16(e + 10);
		c.stream = hwt_le32(e + 12);
		c.raw_size = hwt_le32(e + 16);
		c.comp_size = hwt_le32(e + 20);
		c.crc = hwt_le32(e + 24);
		c.aux_offset = hwt_le64(e + 32);
		/* In order, not overlapping, inside the data area, sane sizes. */
		if (c.file_offset < prev_end || c.file_offset > ioff ||
		    ioff - c.file_offset < HWT_FMT_CHUNK_HEADER_SIZE + (uint64_t)c.comp_size ||
		    c.raw_size > FMT_CHUNK_MAX || c.comp_size > FMT_CHUNK_MAX ||
		    (c.flags & ~FMT_CHUNK_KNOWN_FLAGS) ||
		    ((c.flags & FMT_CHUNK_RAW) && c.raw_size != c.comp_size))
			goto bad_reset;
		prev_end = c.file_offset + HWT_FMT_CHUNK_HEADER_SIZE + c.comp_size;
		err = chunk_push(r, &c);
		if (err) {
			hwt_buf_fini(&out);
			return err;
		}
	}
	hwt_buf_fini(&out);
	r->info.indexed = true;
	r->info.valid_end = ioff;
	return 1;
bad_reset:
	r->nchunks = 0;
bad_out:
	hwt_buf_fini(&out);
bad:
	hwt_log(&r->cfg.log, HWT_LOG_WARN, "index at offset %llu is unusable; scanning chunks",
		(unsigned long long)ioff);
	return 0;
}

static int scan(struct hwt_fmt_reader *r, uint64_t *err_offset)
{
	uint64_t pos = r->data_start, size = r->info.file_size;

	while (pos < size) {
		uint8_t hb[HWT_FMT_CHUNK_HEADER_SIZE];
		struct fmt_chunk_header h;
		struct hwt_fmt_chunk c;
		int err;

		if (r->index_off && pos == r->index_off)
			break; /* the index of a closed file: the data ends here */
		if (size - pos == HWT_FMT_TRAILER_SIZE) {
			uint8_t tr[8];

			err = pread_full(r->fd, tr, sizeof(tr), pos);
			if (err)
				goto fail;
			if (!memcmp(tr, FMT_TRAILER_MAGIC, 8)) {
				r->info.closed = true;
				break; /* the end of a closed file */
			}
		}
		if (size - pos < HWT_FMT_CHUNK_HEADER_SIZE) {
			r->info.truncated = true;
			break;
		}
		err = pread_full(r->fd, hb, sizeof(hb), pos);
		if (err)
			goto fail;
		err = fmt_chunk_header_decode(hb, &h);
		if (err)
			goto fail;
		if (size - pos - HWT_FMT_CHUNK_HEADER_SIZE < h.stored_size) {
			/* A complete header whose payload did not make it. */
			r->info.truncated = true;
			break;
		}
		if (h.type != HWT_FMT_CHUNK_INDEX) {
			chunk_from_header(&c, pos, &h);
			err = chunk_push(r, &c);
			if (err)
				return err;
		}
		pos += HWT_FMT_CHUNK_HEADER_SIZE + h.stored_size;
		continue;
	fail:
		if (err_offset)
			*err_offset = pos;
		return err;
	}
	r->info.valid_end = pos;
	/* Not a warning: a session's user says it once, in the words of
	 * hwt_fmt_damage_str(), after reading what is intact. */
	if (r->info.truncated)
		hwt_log(&r->cfg.log, HWT_LOG_DEBUG,
			"file is truncated: the chunk at offset %llu is incomplete (%llu bytes "
			"follow it); everything before it is intact",
			(unsigned long long)pos, (unsigned long long)(size - pos));
	return 0;
}

/* --- loading metadata, streams, losses ------------------------------------ */

static int load_stream(struct hwt_fmt_reader *r, const struct hwt_fmt_chunk *c, const uint8_t *p,
		       size_t len)
{
	struct hwt_fmt_stream_desc d, *t;
	uint32_t nlen;

	if (len < FMT_STREAM_FIXED_SIZE)
		return -HWT_EFORMAT;
	memset(&d, 0, sizeof(d));
	d.id = hwt_le32(p);
	d.kind = hwt_le32(p + 4);
	d.cpu = (int32_t)hwt_le32(p + 8);
	d.tid = (int32_t)hwt_le32(p + 12);
	nlen = hwt_le32(p + 16);
	if (d.id != c->stream || nlen > len - FMT_STREAM_FIXED_SIZE)
		return -HWT_EFORMAT;
	if (d.kind != HWT_FMT_STREAM_RECORDS && d.kind != HWT_FMT_STREAM_AUX)
		return 0; /* a kind from a newer version: its chunks are skipped */
	if (nlen >= sizeof(d.name))
		nlen = sizeof(d.name) - 1;
	memcpy(d.name, p + FMT_STREAM_FIXED_SIZE, nlen);
	d.name[strnlen(d.name, sizeof(d.name))] = '\0';
	if (fmt_reader_stream_pos(r, d.id) >= 0)
		return -HWT_EFORMAT; /* declared twice */
	t = realloc(r->streams, (r->nstreams + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	r->streams = t;
	r->streams[r->nstreams++] = d;
	return 0;
}

static int load_lost(struct hwt_fmt_reader *r, const uint8_t *p, size_t len)
{
	if (len % FMT_LOST_ENTRY_SIZE)
		return -HWT_EFORMAT;
	for (size_t off = 0; off < len; off += FMT_LOST_ENTRY_SIZE) {
		uint32_t stream = hwt_le32(p + off), kind = hwt_le32(p + off + 4);
		uint64_t amount = hwt_le64(p + off + 8);
		struct hwt_fmt_lost *t;
		size_t i;

		/* Entries are increments: sum them per stream and kind. */
		for (i = 0; i < r->nlost; i++) {
			if (r->lost[i].stream == stream && r->lost[i].kind == kind) {
				r->lost[i].amount += amount;
				break;
			}
		}
		if (i < r->nlost)
			continue;
		t = realloc(r->lost, (r->nlost + 1) * sizeof(*t));
		if (!t)
			return -ENOMEM;
		r->lost = t;
		r->lost[r->nlost].stream = stream;
		r->lost[r->nlost].kind = kind;
		r->lost[r->nlost].amount = amount;
		r->nlost++;
	}
	return 0;
}

static int load_descriptors(struct hwt_fmt_reader *r, uint64_t *err_offset)
{
	struct hwt_buf stored, out;
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	int err = 0;

	if (!dctx)
		return -ENOMEM;
	hwt_buf_init(&stored);
	hwt_buf_init(&out);
	for (size_t i = 0; i < r->nchunks && !err; i++) {
		const struct hwt_fmt_chunk *c = &r->chunks[i];

		if (c->type != HWT_FMT_CHUNK_META && c->type != HWT_FMT_CHUNK_STREAM &&
		    c->type != HWT_FMT_CHUNK_LOST)
			continue;
		err = fmt_reader_chunk_load(r, c, dctx, &stored, &out);
		if (!err) {
			if (c->type == HWT_FMT_CHUNK_META)
				err = fmt_meta_decode(&r->meta, out.data, out.len);
			else if (c->type == HWT_FMT_CHUNK_STREAM)
				err = load_stream(r, c, out.data, out.len);
			else
				err = load_lost(r, out.data, out.len);
		}
		if (err && err_offset)
			*err_offset = c->file_offset;
	}
	hwt_buf_fini(&stored);
	hwt_buf_fini(&out);
	ZSTD_freeDCtx(dctx);
	return err;
}

int hwt_fmt_reader_open(struct hwt_fmt_reader **reader, const char *path,
			const struct hwt_fmt_reader_config *cfg, uint64_t *err_offset)
{
	uint8_t fh[HWT_FMT_FILE_HEADER_SIZE];
	struct hwt_fmt_reader_config c;
	struct hwt_fmt_reader *r;
	uint64_t where = 0;
	struct stat st;
	int err;

	if (err_offset)
		*err_offset = 0;
	if (!reader || !path)
		return -HWT_EINVAL;
	*reader = NULL;
	hwt_fmt_reader_config_init(&c);
	if (cfg && hwt_opts_copy(&c, sizeof(c), cfg) < 0)
		return -HWT_EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->cfg = c;
	fmt_meta_store_init(&r->meta);
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		err = -errno;
		goto error;
	}
	if (fstat(r->fd, &st) < 0) {
		err = -errno;
		goto error;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -HWT_EINVAL; /* chunk reads need pread */
		goto error;
	}
	r->info.file_size = (uint64_t)st.st_size;
	if (r->info.file_size < HWT_FMT_FILE_HEADER_SIZE) {
		/* Magic first: a short file that is not ours is "not a container". */
		size_t n = r->info.file_size < 8 ? (size_t)r->info.file_size : 8;

		err = pread_full(r->fd, fh, n, 0);
		if (!err && memcmp(fh, HWT_FMT_MAGIC, n) != 0)
			err = -HWT_EFORMAT;
		else if (!err)
			err = -HWT_ETRUNC;
		where = err == -HWT_ETRUNC ? r->info.file_size : 0;
		goto error;
	}
	err = pread_full(r->fd, fh, sizeof(fh), 0);
	if (err)
		goto error;
	err = -HWT_EFORMAT;
	if (memcmp(fh, HWT_FMT_MAGIC, 8) != 0)
		goto error;
	err = -HWT_ECHECKSUM;
	if (hwt_le32(fh + FMT_FH_CRC) != hwt_crc32c(0, fh, FMT_FH_CRC))
		goto error;
	r->info.version_major = hwt_le16(fh + FMT_FH_VERSION_MAJOR);
	r->info.version_minor = hwt_le16(fh + FMT_FH_VERSION_MINOR);
	r->info.flags = hwt_le32(fh + FMT_FH_FLAGS);
	/* Minor versions only add things an older reader may skip. */
	err = -HWT_EVERSION;
	where = FMT_FH_VERSION_MAJOR;
	if (r->info.version_major != HWT_FMT_VERSION_MAJOR)
		goto error;
	err = -HWT_EFORMAT;
	where = FMT_FH_HEADER_SIZE;
	r->data_start = hwt_le32(fh + FMT_FH_HEADER_SIZE);
	if (r->data_start < HWT_FMT_FILE_HEADER_SIZE || r->data_start > r->info.file_size)
		goto error;
	where = FMT_FH_CHUNK_HEADER_SIZE;
	if (hwt_le32(fh + FMT_FH_CHUNK_HEADER_SIZE) != HWT_FMT_CHUNK_HEADER_SIZE)
		goto error;
	where = 0;

	err = r->cfg.scan ? 0 : load_index(r);
	if (err < 0)
		goto error;
	if (err == 0) {
		err = scan(r, &where);
		if (err)
			goto error;
	}
	err = -ENOMEM;
	r->bad = calloc(r->nchunks ? r->nchunks : 1, sizeof(*r->bad));
	if (!r->bad)
		goto error;
	err = load_descriptors(r, &where);
	if (err)
		goto error;
	*reader = r;
	return 0;
error:
	if (err_offset)
		*err_offset = where;
	hwt_fmt_reader_close(r);
	return err;
}

void hwt_fmt_reader_close(struct hwt_fmt_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r->chunks);
	free(r->bad);
	free(r->streams);
	free(r->lost);
	fmt_meta_store_fini(&r->meta);
	free(r);
}

const struct hwt_fmt_file_info *hwt_fmt_reader_info(const struct hwt_fmt_reader *r)
{
	return r ? &r->info : NULL;
}

size_t hwt_fmt_reader_nstreams(const struct hwt_fmt_reader *r)
{
	return r ? r->nstreams : 0;
}

const struct hwt_fmt_stream_desc *hwt_fmt_reader_stream(const struct hwt_fmt_reader *r, size_t i)
{
	return r && i < r->nstreams ? &r->streams[i] : NULL;
}

int fmt_reader_stream_pos(const struct hwt_fmt_reader *r, uint32_t id)
{
	/* Writers number streams 0..n-1 in order: try the direct slot first. */
	if (id < r->nstreams && r->streams[id].id == id)
		return (int)id;
	for (size_t i = 0; i < r->nstreams; i++)
		if (r->streams[i].id == id)
			return (int)i;
	return -1;
}

const struct fmt_meta_store *fmt_reader_meta_store(const struct hwt_fmt_reader *r)
{
	return &r->meta;
}

void fmt_reader_set_log(struct hwt_fmt_reader *r, const struct hwt_logger *log)
{
	r->cfg.log = *log;
}

size_t hwt_fmt_reader_nmeta(const struct hwt_fmt_reader *r)
{
	return r ? r->meta.n : 0;
}

const struct hwt_fmt_meta *hwt_fmt_reader_meta(const struct hwt_fmt_reader *r, size_t i)
{
	return r && i < r->meta.n ? r->meta.items[i] : NULL;
}

const struct hwt_fmt_meta *hwt_fmt_reader_meta_find(const struct hwt_fmt_reader *r, const char *key)
{
	return r ? fmt_meta_store_find(&r->meta, key) : NULL;
}

size_t hwt_fmt_reader_nlost(const struct hwt_fmt_reader *r)
{
	return r ? r->nlost : 0;
}

const struct hwt_fmt_lost *hwt_fmt_reader_lost(const struct hwt_fmt_reader *r, size_t i)
{
	return r && i < r->nlost ? &r->lost[i] : NULL;
}

size_t hwt_fmt_reader_nchunks(const struct hwt_fmt_reader *r)
{
	return r ? r->nchunks : 0;
}

const struct hwt_fmt_chunk *hwt_fmt_reader_chunk(const struct hwt_fmt_reader *r, size_t i)
{
	return r && i < r->nchunks ? &r->chunks[i] : NULL;
}

uint64_t hwt_fmt_reader_bad_chunks(const struct hwt_fmt_reader *r, uint64_t *first_offset,
				   int *first_err)
{
	uint64_t n = 0;

	for (size_t i = 0; r && r->bad && i < r->nchunks; i++) {
		int err = __atomic_load_n(&r->bad[i], __ATOMIC_RELAXED);

		if (!err)
			continue;
		if (!n++) {
			if (first_offset)
				*first_offset = r->chunks[i].file_offset;
			if (first_err)
				*first_err = err;
		}
	}
	return n;
}
