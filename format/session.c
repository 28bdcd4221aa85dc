/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/session.c - one interface over any trace: a .hwt container (its
 * record streams merged in time order, k-way, by a heap of per-stream
 * cursors), or perf.data in file or pipe mode (perfdata.c). Also the AUX
 * index both kinds share: streams of segments, each segment a run of bytes
 * contiguous in AUX offset, stored as pieces (file ranges, heap copies, or
 * container chunks) and read with pread, so AUX reads are thread-safe.
 */
#include "format/session_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* A .hwt record stream being merged. */
struct hcur {
	uint32_t stream; /* stream id */
	size_t *chunks;	 /* reader chunk positions, file order */
	size_t nchunks, next_chunk;
	const struct hwt_fmt_chunk *cur_chunk;
	struct hwt_buf data, stored;
	size_t pos;
	ZSTD_DCtx *dctx;
	struct hwt_fmt_record rec; /* current record when has_rec */
	uint64_t key, last_time;
	bool has_rec;
};

struct fmt_hwt {
	struct hcur *cur;
	size_t ncur;
	size_t *heap; /* cursor positions ordered by (key, position) */
	size_t nheap;
	bool primed;
	int64_t advance; /* cursor whose record was returned last, or -1 */
};

void hwt_fmt_session_config_init(struct hwt_fmt_session_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
}

/* --- AUX index ---------------------------------------------------------------- */

struct fmt_aux_stream *fmt_aux_stream_get(struct hwt_fmt_session *s, uint32_t idx, int32_t cpu,
					  int32_t tid)
{
	struct fmt_aux_stream *st;

	for (size_t i = 0; i < s->naux; i++)
		if (s->aux[i]->pub.idx == idx)
			return s->aux[i];
	if (s->naux == s->capaux) {
		size_t cap = s->capaux ? s->capaux * 2 : 8;
		struct fmt_aux_stream **t = realloc(s->aux, cap * sizeof(*t));

		if (!t)
			return NULL;
		s->aux = t;
		s->capaux = cap;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->pub.idx = idx;
	st->pub.cpu = cpu;
	st->pub.tid = tid;
	s->aux[s->naux++] = st;
	return st;
}

int fmt_aux_add(struct fmt_aux_stream *st, uint64_t aux_offset, const struct fmt_aux_piece *piece,
		uint64_t time)
{
	struct fmt_aux_seg *seg = st->pub.nsegments ? &st->segs[st->pub.nsegments - 1] : NULL;
	struct fmt_aux_piece *pc;

	if (seg) {
		uint64_t end = seg->pub.aux_offset + seg->pub.size;
		struct fmt_aux_piece *last = &seg->pieces[seg->npieces - 1];

		/* perf pads each AUXTRACE's data to 8 bytes but starts the next
		 * one at the true AUX offset: drop the padding so the segment
		 * holds the AUX area's bytes exactly. */
		if (aux_offset < end && end - aux_offset < 8 && end - aux_offset <= last->size) {
			uint64_t pad = end - aux_offset;

			last->size -= pad;
			seg->pub.size -= pad;
			end = aux_offset;
		}
		if (aux_offset != end)
			seg = NULL;
	}
	if (!seg) {
		if (st->pub.nsegments == st->cap) {
			size_t cap = st->cap ? st->cap * 2 : 16;
			struct fmt_aux_seg *t = realloc(st->segs, cap * sizeof(*t));

			if (!t)
				return -ENOMEM;
			st->segs = t;
			st->cap = cap;
		}
		seg = &st->segs[st->pub.nsegments++];
		memset(seg, 0, sizeof(*seg));
		seg->pub.aux_offset = aux_offset;
		seg->pub.time = time;
	}
	if (seg->npieces == seg->cap) {
		size_t cap = seg->cap ? seg->cap * 2 : 4;
		struct fmt_aux_piece *t = realloc(seg->pieces, cap * sizeof(*t));

		if (!t) {
			if (seg->npieces == 0)
				st->pub.nsegments--;
			return -ENOMEM;
		}
		seg->pieces = t;
		seg->cap = cap;
	}
	pc = &seg->pieces[seg->npieces++];
	*pc = *piece;
	pc->rel = seg->pub.size;
	seg->pub.size += piece->size;
	return 0;
}

void fmt_aux_note_record(struct hwt_fmt_session *s, const struct hwt_fmt_record *rec)
{
	uint64_t t;

	if (rec->type != PERF_RECORD_AUX || !fmt_record_time(rec, &t))
		return;
	for (size_t i = 0; i < s->naux; i++) {
		struct fmt_aux_stream *st = s->aux[i];

		if (st->pub.cpu >= 0 ? !(rec->id.present & PERF_SAMPLE_CPU) ||
					   (uint32_t)st->pub.cpu != rec->id.cpu
				     : !(rec->id.present & PERF_SAMPLE_TID) ||
					   (uint32_t)st->pub.tid != rec->id.tid)
			continue;
		for (size_t j = 0; j < st->pub.nsegments; j++) {
			struct hwt_fmt_aux_segment *g = &st->segs[j].pub;
			uint64_t a = rec->u.aux.aux_offset;

			if (a >= g->aux_offset && a - g->aux_offset < g->size + (g->size == 0)) {
				if (g->time == 0 || t < g->time)
					g->time = t;
				return;
			}
		}
	}
}

static void aux_free(struct hwt_fmt_session *s)
{
	for (size_t i = 0; i < s->naux; i++) {
		struct fmt_aux_stream *st = s->aux[i];

		for (size_t j = 0; j < st->pub.nsegments; j++) {
			for (size_t k = 0; k < st->segs[j].npieces; k++)
				free(st->segs[j].pieces[k].mem);
			free(st->segs[j].pieces);
		}
		free(st->segs);
		free(st);
	}
	free(s->aux);
	s->aux = NULL;
	s->naux = s->capaux = 0;
}

size_t hwt_fmt_session_naux(const struct hwt_fmt_session *s)
{
	return s ? s->naux : 0;
}

const struct hwt_fmt_aux_stream *hwt_fmt_session_aux(const struct hwt_fmt_session *s, size_t i)
{
	return s && i < s->naux ? &s->aux[i]->pub : NULL;
}

const struct hwt_fmt_aux_segment *hwt_fmt_session_aux_segment(const struct hwt_fmt_session *s,
							      size_t stream, size_t segment)
{
	if (!s || stream >= s->naux || segment >= s->aux[stream]->pub.nsegments)
		return NULL;
	return &s->aux[stream]->segs[segment].pub;
}

static int64_t piece_read(const struct hwt_fmt_session *s, const struct fmt_aux_piece *pc,
			  uint64_t from, uint8_t *dst, size_t n)
{
	if (pc->mem) {
		memcpy(dst, pc->mem + from, n);
		return (int64_t)n;
	}
	if (pc->chunk) {
		const struct hwt_fmt_chunk *c = pc->chunk;
		struct hwt_buf tmp;
		int64_t got;

		/* A whole chunk goes straight into the caller's buffer; a part
		 * goes through one that grows with the data actually there. */
		if (from == 0 && n == c->raw_size)
			return hwt_fmt_reader_chunk_read(s->reader, c, dst, n);
		hwt_buf_init(&tmp);
		got = hwt_fmt_reader_chunk_load(s->reader, c, &tmp);
		if (got >= 0) {
			memcpy(dst, tmp.data + from, n);
			got = (int64_t)n;
		}
		hwt_buf_fini(&tmp);
		return got;
	}
	for (size_t done = 0; done < n;) {
		ssize_t k =
		    pread(s->fd, dst + done, n - done, (off_t)(pc->file_offset + from + done));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -HWT_ETRUNC;
		done += (size_t)k;
	}
	return (int64_t)n;
}

int64_t hwt_fmt_session_aux_read(const struct hwt_fmt_session *s, size_t stream, size_t segment,
				 uint64_t from, void *dst, size_t size)
{
	const struct fmt_aux_seg *seg;
	uint8_t *out = dst;
	size_t lo, hi, done = 0;

	if (!s || stream >= s->naux || segment >= s->aux[stream]->pub.nsegments || (!dst && size))
		return -HWT_EINVAL;
	seg = &s->aux[stream]->segs[segment];
	if (from > seg->pub.size)
		return -HWT_EINVAL;
	if (size > seg->pub.size - from)
		size = (size_t)(seg->pub.size - from);
	/* The piece holding `from`: the last one starting at or before it. */
	lo = 0;
	hi = seg->npieces;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (seg->pieces[mid].rel <= from)
			lo = mid;
		else
			hi = mid;
	}
	for (size_t i = lo; i < seg->npieces && done < size; i++) {
		const struct fmt_aux_piece *pc = &seg->pieces[i];
		uint64_t at = from + done - pc->rel;
		size_t n;
		int64_t got;

		if (at >= pc->size)
			continue;
		n = pc->size - at < size - done ? (size_t)(pc->size - at) : size - done;
		got = piece_read(s, pc, at, out + done, n);
		if (got < 0)
			return got;
		done += n;
	}
	return (int64_t)done;
}

/* --- .hwt sessions -------------------------------------------------------------- */

static int hwt_build(struct hwt_fmt_session *s)
{
	const struct hwt_fmt_reader *r = s->reader;
	size_t nstreams = hwt_fmt_reader_nstreams(r), nchunks = hwt_fmt_reader_nchunks(r);
	struct fmt_hwt *h;
	int err;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	s->hwt = h;
	h->advance = -1;
	h->cur = calloc(nstreams ? nstreams : 1, sizeof(*h->cur));
	h->heap = calloc(nstreams ? nstreams : 1, sizeof(*h->heap));
	if (!h->cur || !h->heap)
		return -ENOMEM;
	for (size_t i = 0; i < nstreams; i++) {
		const struct hwt_fmt_stream_desc *d = hwt_fmt_reader_stream(r, i);

		if (d->kind == HWT_FMT_STREAM_AUX) {
			if (!fmt_aux_stream_get(s, d->id, d->cpu, d->tid))
				return -ENOMEM;
			continue;
		}
		h->cur[h->ncur].stream = d->id;
		hwt_buf_init(&h->cur[h->ncur].data);
		hwt_buf_init(&h->cur[h->ncur].stored);
		h->ncur++;
	}
	for (size_t i = 0; i < nchunks; i++) {
		const struct hwt_fmt_chunk *c = hwt_fmt_reader_chunk(r, i);
		int pos = fmt_reader_stream_pos(r, c->stream);

		if (pos < 0)
			continue; /* no descriptor: a stream we cannot place */
		if (c->type == HWT_FMT_CHUNK_AUX &&
		    hwt_fmt_reader_stream(r, (size_t)pos)->kind == HWT_FMT_STREAM_AUX) {
			struct fmt_aux_piece pc = {.size = c->raw_size, .chunk = c};
			struct fmt_aux_stream *st = fmt_aux_stream_get(s, c->stream, 0, 0);

			err = st ? fmt_aux_add(st, c->aux_offset, &pc, 0) : -ENOMEM;
			if (err)
				return err;
		} else if (c->type == HWT_FMT_CHUNK_RECORDS) {
			for (size_t k = 0; k < h->ncur; k++) {
				struct hcur *cu = &h->cur[k];
				size_t *t;

				if (cu->stream != c->stream)
					continue;
				t = realloc(cu->chunks, (cu->nchunks + 1) * sizeof(*t));
				if (!t)
					return -ENOMEM;
				cu->chunks = t;
				cu->chunks[cu->nchunks++] = i;
				break;
			}
		}
	}
	for (size_t k = 0; k < h->ncur; k++) {
		h->cur[k].dctx = ZSTD_createDCtx();
		if (!h->cur[k].dctx)
			return -ENOMEM;
	}
	return 0;
}

static void hwt_free(struct fmt_hwt *h)
{
	if (!h)
		return;
	for (size_t k = 0; h->cur && k < h->ncur; k++) {
		free(h->cur[k].chunks);
		hwt_buf_fini(&h->cur[k].data);
		hwt_buf_fini(&h->cur[k].stored);
		ZSTD_freeDCtx(h->cur[k].dctx);
	}
	free(h->cur);
	free(h->heap);
	free(h);
}

/* Moves cursor c to its next parseable record. Returns 1 with a record, 0
 * when the stream is done, or a chunk error (the chunk is then skipped). */
static int hcur_advance(struct hwt_fmt_session *s, struct hcur *c, uint64_t *err_offset)
{
	for (;;) {
		while (c->pos < c->data.len) {
			const uint8_t *p = c->data.data + c->pos;
			size_t left = c->data.len - c->pos, size;
			uint64_t t;
			int err;

			size = left >= 8 ? hwt_le16(p + 6) : 0;
			if (size < 8 || size > left) {
				/* Broken framing inside a chunk that passed its
				 * checksum: a writer bug. Drop the rest of it. */
				s->stats.bad_records++;
				hwt_log(&s->cfg.log, HWT_LOG_WARN,
					"bad record framing in chunk at offset %llu; rest of chunk "
					"skipped",
					(unsigned long long)c->cur_chunk->file_offset);
				c->pos = c->data.len;
				break;
			}
			c->pos += size;
			err = hwt_fmt_evlist_parse(s->evlist, p, size, &c->rec);
			if (err == -HWT_ENOTSUP) {
				s->stats.unknown_types++;
				continue;
			}
			if (err) {
				s->stats.bad_records++;
				continue;
			}
			if (fmt_record_time(&c->rec, &t) && t != 0)
				c->last_time = t;
			c->key = c->last_time;
			c->has_rec = true;
			return 1;
		}
		if (c->next_chunk >= c->nchunks)
			return 0;
		c->cur_chunk = hwt_fmt_reader_chunk(s->reader, c->chunks[c->next_chunk++]);
		c->pos = 0;
		c->data.len = 0;
		{
			int err = fmt_reader_chunk_load(s->reader, c->cur_chunk, c->dctx,
							&c->stored, &c->data);

			if (err) {
				c->data.len = 0;
				*err_offset = c->cur_chunk->file_offset;
				return err;
			}
		}
	}
}

static bool hless(const struct fmt_hwt *h, size_t a, size_t b)
{
	const struct hcur *x = &h->cur[a], *y = &h->cur[b];

	return x->key != y->key ? x->key < y->key : a < b;
}

static void hheap_push(struct fmt_hwt *h, size_t c)
{
	size_t i = h->nheap++;

	h->heap[i] = c;
	while (i > 0 && hless(h, h->heap[i], h->heap[(i - 1) / 2])) {
		size_t p = (i - 1) / 2, t = h->heap[i];

		h->heap[i] = h->heap[p];
		h->heap[p] = t;
		i = p;
	}
}

static size_t hheap_pop(struct fmt_hwt *h)
{
	size_t top = h->heap[0], i = 0;

	h->heap[0] = h->heap[--h->nheap];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i, t;

		if (l < h->nheap && hless(h, h->heap[l], h->heap[m]))
			m = l;
		if (r < h->nheap && hless(h, h->heap[r], h->heap[m]))
			m = r;
		if (m == i)
			break;
		t = h->heap[i];
		h->heap[i] = h->heap[m];
		h->heap[m] = t;
		i = m;
	}
	return top;
}

static int hwt_next(struct hwt_fmt_session *s, struct hwt_fmt_record *rec, uint64_t *err_offset)
{
	struct fmt_hwt *h = s->hwt;
	size_t c;
	int err;

	if (!h->primed) {
		/* Cursors enter the heap one by one; a chunk error leaves the
		 * cursor where it is, and the next call resumes with it. */
		while (h->advance < (int64_t)h->ncur) {
			if (h->advance >= 0) {
				struct hcur *cu = &h->cur[h->advance];

				err = cu->has_rec ? 1 : hcur_advance(s, cu, err_offset);
				if (err < 0)
					return err;
				if (err == 1)
					hheap_push(h, (size_t)h->advance);
			}
			h->advance++;
		}
		h->primed = true;
		h->advance = -1;
	} else if (h->advance >= 0) {
		struct hcur *cu = &h->cur[h->advance];

		cu->has_rec = false;
		err = hcur_advance(s, cu, err_offset);
		if (err < 0)
			return err; /* advance stays: the next call goes on */
		h->advance = -1;
		if (err == 1)
			hheap_push(h, (size_t)(cu - h->cur));
	}
	if (!h->nheap)
		return -HWT_EEOS;
	c = hheap_pop(h);
	*rec = h->cur[c].rec;
	h->advance = (int64_t)c;
	if (rec->type == PERF_RECORD_LOST)
		s->stats.lost_records += rec->u.lost.lost;
	else if (rec->type == PERF_RECORD_LOST_SAMPLES)
		s->stats.lost_samples += rec->u.lost_samples.lost;
	else if (rec->type == PERF_RECORD_AUX)
		fmt_aux_note_record(s, rec);
	s->stats.records++;
	return 0;
}

static void hwt_rewind(struct hwt_fmt_session *s)
{
	struct fmt_hwt *h = s->hwt;

	for (size_t k = 0; k < h->ncur; k++) {
		h->cur[k].next_chunk = 0;
		h->cur[k].pos = 0;
		h->cur[k].data.len = 0;
		h->cur[k].has_rec = false;
		h->cur[k].last_time = 0;
	}
	h->nheap = 0;
	h->primed = false;
	h->advance = -1;
	memset(&s->stats, 0, sizeof(s->stats));
}

/* --- public session API ---------------------------------------------------------- */

/* A file of a perf data directory as metadata bytes (the whole file). A file
 * that is not there is left out; one that cannot be read is said. */
static int dir_file_meta(struct hwt_fmt_session *s, const char *dir, const char *name,
			 const char *key)
{
	char path[4096];
	struct hwt_buf b;
	int err;

	if (fmt_meta_store_find(&s->meta, key))
		return 0;
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return 0;
	hwt_buf_init(&b);
	err = hwt_buf_read_file(&b, path);
	if (err < 0 && err != -ENOENT && err != -ENOMEM)
		hwt_log(&s->cfg.log, HWT_LOG_WARN, "%s: %s: kernel code from it is not decoded",
			path, strerror(-err));
	if (err == 0 && b.len)
		err = fmt_meta_store_set(&s->meta, HWT_FMT_META_BYTES, key, strlen(key), b.data,
					 b.len);
	hwt_buf_fini(&b);
	return err == -ENOMEM ? err : 0;
}

/* perf's directory layout (perf record --kcore, --threads): the header and
 * the data in DIR/data, the kernel's code (kcore, kallsyms) in
 * DIR/kcore_dir, which hwtrace's own recordings carry as metadata. The data
 * of --threads (DIR/data.N) is not read: said. */
static int dir_extras(struct hwt_fmt_session *s, const char *dir)
{
	char path[4096];
	DIR *d;
	struct dirent *e;
	unsigned int nthreads = 0;
	int err;

	if (snprintf(path, sizeof(path), "%s/kcore_dir", dir) < (int)sizeof(path)) {
		err = dir_file_meta(s, path, "kcore", "kernel.kcore");
		if (!err)
			err = dir_file_meta(s, path, "kallsyms", "kernel.kallsyms");
		if (err < 0)
			return err;
	}
	d = opendir(dir);
	while (d && (e = readdir(d)) != NULL)
		nthreads += !strncmp(e->d_name, "data.", 5);
	if (d)
		closedir(d);
	if (nthreads)
		hwt_log(&s->cfg.log, HWT_LOG_WARN,
			"%s: the %u data.N files of perf record --threads are not read (only "
			"%s/data): record without --threads",
			dir, nthreads, dir);
	return 0;
}

int hwt_fmt_session_open(struct hwt_fmt_session **session, const char *path,
			 const struct hwt_fmt_session_config *cfg, uint64_t *err_offset)
{
	struct hwt_fmt_session_config c;
	struct hwt_fmt_session *s;
	uint8_t magic[8];
	uint64_t where = 0;
	size_t got = 0;
	char data[4096];
	const char *dir = NULL;
	struct stat st;
	int err;

	if (err_offset)
		*err_offset = 0;
	if (!session || !path)
		return -HWT_EINVAL;
	*session = NULL;
	hwt_fmt_session_config_init(&c);
	if (cfg && hwt_opts_copy(&c, sizeof(c), cfg) < 0)
		return -HWT_EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = -1;
	s->cfg = c;
	fmt_meta_store_init(&s->meta);
	err = hwt_fmt_evlist_alloc(&s->evlist);
	if (err)
		goto error;

	if (!strcmp(path, "-")) {
		s->fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
	} else {
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			/* perf's data directory, or a mistake */
			if (snprintf(data, sizeof(data), "%s/data", path) >= (int)sizeof(data) ||
			    access(data, F_OK) != 0) {
				err = -EISDIR;
				goto error;
			}
			dir = path;
			path = data;
		}
		s->fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (s->fd < 0) {
		err = -errno;
		goto error;
	}
	if (strcmp(path, "-") != 0) {
		while (got < sizeof(magic)) {
			ssize_t k = pread(s->fd, magic + got, sizeof(magic) - got, (off_t)got);

			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				err = -errno;
				goto error;
			}
			if (k == 0)
				break;
			got += (size_t)k;
		}
		if (got == sizeof(magic) && !memcmp(magic, HWT_FMT_MAGIC, 8)) {
			struct hwt_fmt_reader_config rcfg;

			close(s->fd);
			s->fd = -1;
			s->kind = HWT_FMT_KIND_HWT;
			hwt_fmt_reader_config_init(&rcfg);
			rcfg.log = s->cfg.log;
			err = hwt_fmt_reader_open(&s->reader, path, &rcfg, &where);
			if (err)
				goto error;
			/* Events come from the event.N.* metadata. */
			err = hwt_build(s);
			if (!err)
				err = fmt_evlist_from_meta(s->evlist,
							   fmt_reader_meta_store(s->reader));
			if (err)
				goto error;
			*session = s;
			return 0;
		}
		if (got < sizeof(magic)) {
			/* Too short to tell: truncated if it starts like a trace. */
			err = (!memcmp(magic, HWT_FMT_MAGIC, got) ||
			       !memcmp(magic, FMT_PERF_MAGIC, got))
				  ? -HWT_ETRUNC
				  : -HWT_EFORMAT;
			where = got;
			goto error;
		}
		if (memcmp(magic, FMT_PERF_MAGIC, 8) != 0 &&
		    memcmp(magic, FMT_PERF_MAGIC_SWAPPED, 8) != 0) {
			err = -HWT_EFORMAT;
			goto error;
		}
	}
	err = fmt_perf_open(s, &where);
	if (!err && dir)
		err = dir_extras(s, dir);
	if (err)
		goto error;
	*session = s;
	return 0;
error:
	if (err_offset)
		*err_offset = where;
	hwt_fmt_session_close(s);
	return err;
}

void hwt_fmt_session_set_log(struct hwt_fmt_session *s, const struct hwt_logger *log)
{
	if (!s || !log)
		return;
	s->cfg.log = *log;
	if (s->reader)
		fmt_reader_set_log(s->reader, log);
}

void hwt_fmt_session_close(struct hwt_fmt_session *s)
{
	if (!s)
		return;
	fmt_perf_close(s->perf);
	hwt_free(s->hwt);
	hwt_fmt_reader_close(s->reader);
	aux_free(s);
	if (s->fd >= 0)
		close(s->fd);
	hwt_fmt_evlist_free(s->evlist);
	fmt_meta_store_fini(&s->meta);
	free(s);
}

enum hwt_fmt_file_kind hwt_fmt_session_kind(const struct hwt_fmt_session *s)
{
	return s ? s->kind : 0;
}

const struct hwt_fmt_evlist *hwt_fmt_session_evlist(const struct hwt_fmt_session *s)
{
	return s ? s->evlist : NULL;
}

static const struct fmt_meta_store *session_meta(const struct hwt_fmt_session *s)
{
	return s->reader ? fmt_reader_meta_store(s->reader) : &s->meta;
}

size_t hwt_fmt_session_nmeta(const struct hwt_fmt_session *s)
{
	return s ? session_meta(s)->n : 0;
}

const struct hwt_fmt_meta *hwt_fmt_session_meta(const struct hwt_fmt_session *s, size_t i)
{
	if (!s || i >= session_meta(s)->n)
		return NULL;
	return session_meta(s)->items[i];
}

const struct hwt_fmt_meta *hwt_fmt_session_meta_find(const struct hwt_fmt_session *s,
						     const char *key)
{
	return s ? fmt_meta_store_find(session_meta(s), key) : NULL;
}

const struct hwt_fmt_reader *hwt_fmt_session_reader(const struct hwt_fmt_session *s)
{
	return s ? s->reader : NULL;
}

int hwt_fmt_session_next(struct hwt_fmt_session *s, struct hwt_fmt_record *rec,
			 uint64_t *err_offset)
{
	uint64_t where = 0;
	int err;

	if (!s || !rec)
		return -HWT_EINVAL;
	err = s->hwt ? hwt_next(s, rec, &where) : fmt_perf_next(s, rec, &where);
	if (err && err != -HWT_EEOS && !s->hwt && err != -ENOMEM && !s->broken_err) {
		/* perf.data framing broke: the rest is not read (damage). */
		s->broken_err = err;
		s->broken_at = where;
	}
	if (err_offset && err && err != -HWT_EEOS)
		*err_offset = where;
	return err;
}

int hwt_fmt_session_rewind(struct hwt_fmt_session *s)
{
	if (!s)
		return -HWT_EINVAL;
	if (s->hwt) {
		hwt_rewind(s);
		return 0;
	}
	return fmt_perf_rewind(s);
}

void hwt_fmt_session_stats(const struct hwt_fmt_session *s, struct hwt_fmt_session_stats *stats)
{
	if (!s || !stats)
		return;
	*stats = s->stats;
}
