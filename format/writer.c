/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/writer.c - the container writer. Producers (the collector's ring
 * buffer readers) copy records and AUX bytes into a per-stream open chunk
 * under one mutex and return; sealed chunks go to a bounded queue that
 * compression threads drain. Threads compress in parallel but write in
 * queue order (a sequence number), so a stream's chunks stay in file order.
 * When the queue stays full for wait_ms the incoming bytes are dropped and
 * counted as HWT_FMT_LOST_WRITER, which is written into the file: loss is
 * never silent. The first I/O error is kept and returned by every later call
 * and by close.
 *
 * Bounded loss. A flusher thread writes partly filled chunks by age (see
 * flush_ms in format.h) and syncs the file, so that what a killed writer
 * leaves is at most about flush_ms behind. And an AUX chunk is never queued
 * before the records (sideband) that arrived before it: a file cut short
 * after any AUX chunk still holds the mappings needed to decode it.
 */
#include "format/format_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define MAX_STREAMS (1u << 20)
#define MIN_CHUNK   (4u << 10)
#define MAX_CHUNK   (64u << 20)

/* A sealed or open chunk: its raw payload and where it goes. */
struct wjob {
	struct wjob *next;
	uint64_t seq;
	uint64_t born_ms; /* when its first bytes arrived (monotonic) */
	uint32_t type, stream;
	uint64_t aux_offset;
	uint8_t *data;
	size_t len, cap;
};

struct wstream {
	struct hwt_fmt_stream_desc desc;
	struct wjob *open; /* partly filled chunk, or NULL */
};

struct wthread;

struct wlost {
	uint32_t stream, kind;
	uint64_t amount;
};

struct hwt_fmt_writer {
	struct hwt_fmt_writer_config cfg;
	int fd;

	pthread_mutex_t lock;	     /* everything below */
	pthread_cond_t cond_work;    /* a job was queued, or stop */
	pthread_cond_t cond_room;    /* queued_bytes went down */
	pthread_cond_t cond_written; /* write_seq advanced */
	pthread_cond_t cond_stop;    /* stop: wakes the flusher */

	struct wstream *streams;
	size_t nstreams, capstreams;
	struct hwt_buf meta; /* pending encoded metadata entries */
	uint32_t meta_count;
	struct wlost *lost; /* pending loss increments */
	size_t nlost, caplost;
	uint64_t pending_ms; /* when the oldest pending metadata or loss came */

	struct wjob *qhead, *qtail;
	size_t queued_bytes;
	uint64_t next_seq;  /* given to the next queued job */
	uint64_t write_seq; /* the job whose turn it is to be written */
	struct wjob *free_jobs;
	size_t nfree;
	bool stop;
	int err;

	uint64_t file_off;
	uint64_t synced_off; /* file_off at the flusher's last fdatasync */
	struct hwt_fmt_chunk *index;
	size_t nindex, capindex;
	struct hwt_fmt_writer_stats stats;

	pthread_t *threads;
	struct wthread *thread_state; /* one per configured thread */
	unsigned int nthreads;
	pthread_t flusher;
	bool flusher_ok;
	bool lock_ok, conds_ok;
};

void hwt_fmt_writer_config_init(struct hwt_fmt_writer_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->level = 3;
	cfg->chunk_size = 1u << 20;
	cfg->queue_bytes = 256u << 20;
	cfg->wait_ms = 1000;
	cfg->threads = 1;
	cfg->flush_ms = 1000;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Something is about to be pending: metadata or a loss (lock held). */
static void note_pending(struct hwt_fmt_writer *w)
{
	if (!w->meta_count && !w->nlost)
		w->pending_ms = now_ms();
}

static void set_err(struct hwt_fmt_writer *w, int err)
{
	if (!w->err)
		w->err = err;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -EIO;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* --- jobs -------------------------------------------------------------- */

static struct wjob *job_get(struct hwt_fmt_writer *w, size_t cap)
{
	struct wjob *j = NULL;

	if (cap <= w->cfg.chunk_size && w->free_jobs) {
		j = w->free_jobs;
		w->free_jobs = j->next;
		w->nfree--;
	} else {
		if (cap < w->cfg.chunk_size)
			cap = w->cfg.chunk_size;
		j = calloc(1, sizeof(*j));
		if (!j)
			return NULL;
		j->data = malloc(cap);
		if (!j->data) {
			free(j);
			return NULL;
		}
		j->cap = cap;
	}
	j->next = NULL;
	j->len = 0;
	j->aux_offset = 0;
	j->born_ms = now_ms();
	return j;
}

static void job_free(struct wjob *j)
{
	if (!j)
		return;
	free(j->data);
	free(j);
}

static void job_put(struct hwt_fmt_writer *w, struct wjob *j)
{
	/* Keep chunk buffers for reuse, so that steady-state writing allocates
	 * nothing and touches no fresh pages (page faults, not compression,
	 * are what limits a producer on a VM). Up to 16 chunks, or the queue
	 * bound when that is smaller. */
	if (j->cap == w->cfg.chunk_size && w->nfree < 16 &&
	    (w->nfree + 1) * w->cfg.chunk_size <= w->cfg.queue_bytes) {
		j->next = w->free_jobs;
		w->free_jobs = j;
		w->nfree++;
		return;
	}
	job_free(j);
}

/* Appends j to the queue (lock held). No bound: callers check room. */
static void enqueue(struct hwt_fmt_writer *w, struct wjob *j)
{
	j->seq = w->next_seq++;
	j->next = NULL;
	if (w->qtail)
		w->qtail->next = j;
	else
		w->qhead = j;
	w->qtail = j;
	w->queued_bytes += j->len;
	if (w->queued_bytes > w->stats.queue_high_water)
		w->stats.queue_high_water = w->queued_bytes;
	pthread_cond_signal(&w->cond_work);
}

/* Queues a file-wide or descriptor chunk built from bytes (lock held). */
static int enqueue_bytes(struct hwt_fmt_writer *w, uint32_t type, uint32_t stream, const void *data,
			 size_t len)
{
	struct wjob *j = job_get(w, len);

	if (!j)
		return -ENOMEM;
	memcpy(j->data, data, len);
	j->len = len;
	j->type = type;
	j->stream = stream;
	enqueue(w, j);
	return 0;
}

/* Queues pending metadata and loss entries (lock held), so that they
 * precede the data chunks queued after them. */
static int enqueue_pending(struct hwt_fmt_writer *w)
{
	int err;

	if (w->meta_count) {
		uint8_t *p = w->meta.data;

		/* The entries were appended after room for the payload header. */
		hwt_put_le16(p, FMT_META_FORMAT);
		hwt_put_le16(p + 2, 0);
		hwt_put_le32(p + 4, w->meta_count);
		err = enqueue_bytes(w, HWT_FMT_CHUNK_META, UINT32_MAX, w->meta.data, w->meta.len);
		if (err)
			return err;
		w->meta.len = FMT_META_HEADER_SIZE;
		w->meta_count = 0;
	}
	if (w->nlost) {
		uint8_t buf[FMT_LOST_ENTRY_SIZE * 64];
		size_t i = 0;

		while (i < w->nlost) {
			size_t n = 0;

			for (; i < w->nlost && n < 64; i++, n++) {
				uint8_t *e = buf + n * FMT_LOST_ENTRY_SIZE;

				hwt_put_le32(e, w->lost[i].stream);
				hwt_put_le32(e + 4, w->lost[i].kind);
				hwt_put_le64(e + 8, w->lost[i].amount);
			}
			err = enqueue_bytes(w, HWT_FMT_CHUNK_LOST, UINT32_MAX, buf,
					    n * FMT_LOST_ENTRY_SIZE);
			if (err)
				return err;
		}
		w->nlost = 0;
	}
	return 0;
}

static int add_lost(struct hwt_fmt_writer *w, uint32_t stream, uint32_t kind, uint64_t amount)
{
	note_pending(w);
	for (size_t i = 0; i < w->nlost; i++) {
		if (w->lost[i].stream == stream && w->lost[i].kind == kind) {
			w->lost[i].amount += amount;
			return 0;
		}
	}
	if (w->nlost == w->caplost) {
		size_t cap = w->caplost ? w->caplost * 2 : 8;
		struct wlost *t = realloc(w->lost, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		w->lost = t;
		w->caplost = cap;
	}
	w->lost[w->nlost].stream = stream;
	w->lost[w->nlost].kind = kind;
	w->lost[w->nlost].amount = amount;
	w->nlost++;
	return 0;
}

static void deadline_after(struct timespec *ts, unsigned int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

enum seal_mode {
	SEAL_FORCE, /* flush and close: ignore the bound */
	SEAL_WAIT,  /* wait up to wait_ms for room */
	SEAL_TRY,   /* only if there is room now */
};

/* Moves a stream's open chunk to the queue (lock held). Returns 0, or
 * -HWT_EDROPPED when the queue has no room (the chunk stays open). */
static int seal(struct hwt_fmt_writer *w, struct wstream *s, enum seal_mode mode)
{
	struct wjob *j = s->open;
	struct timespec deadline;
	bool timed_out = false;
	int err;

	if (!j || j->len == 0)
		return 0;
	if (mode != SEAL_FORCE && w->queued_bytes &&
	    w->queued_bytes + j->len > w->cfg.queue_bytes) {
		if (mode == SEAL_TRY)
			return -HWT_EDROPPED;
		deadline_after(&deadline, w->cfg.wait_ms);
		while (!w->err && w->queued_bytes &&
		       w->queued_bytes + j->len > w->cfg.queue_bytes && !timed_out)
			timed_out =
			    pthread_cond_timedwait(&w->cond_room, &w->lock, &deadline) == ETIMEDOUT;
		if (w->err)
			return w->err;
		if (w->queued_bytes && w->queued_bytes + j->len > w->cfg.queue_bytes)
			return -HWT_EDROPPED;
	}
	err = enqueue_pending(w);
	if (err)
		return err;
	if (j->type == HWT_FMT_CHUNK_AUX) {
		/* The records that came before these bytes (the sideband that
		 * maps their code) go first, whatever their size: a file cut
		 * short after this chunk can then still be decoded. */
		for (size_t i = 0; i < w->nstreams; i++) {
			struct wstream *o = &w->streams[i];

			if (o->open && o->open->len && o->open->type == HWT_FMT_CHUNK_RECORDS) {
				enqueue(w, o->open);
				o->open = NULL;
			}
		}
	}
	s->open = NULL;
	enqueue(w, j);
	return 0;
}

/* --- the flusher: bounded loss ------------------------------------------- */

/* Queues every chunk, and the pending metadata and losses, that has waited
 * since before cutoff (lock held). A queue without room leaves a chunk open
 * (it is written when room comes); only a hard error is returned. */
static int seal_old(struct hwt_fmt_writer *w, uint64_t cutoff)
{
	int err = 0;

	for (size_t i = 0; i < w->nstreams && !err; i++) {
		struct wstream *s = &w->streams[i];

		if (s->open && s->open->len && s->open->born_ms <= cutoff) {
			err = seal(w, s, SEAL_TRY);
			if (err == -HWT_EDROPPED)
				err = 0;
		}
	}
	if (!err && (w->meta_count || w->nlost) && w->pending_ms <= cutoff)
		err = enqueue_pending(w);
	return err;
}

/* Every flush_ms / 4: writes what is flush_ms / 2 old, and syncs what the
 * compression threads wrote since the last look. */
static void *flusher(void *arg)
{
	struct hwt_fmt_writer *w = arg;
	unsigned int tick = w->cfg.flush_ms / 4 ? w->cfg.flush_ms / 4 : 1;
	struct timespec deadline;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		uint64_t off, now;
		int err;

		deadline_after(&deadline, tick);
		while (!w->stop &&
		       pthread_cond_timedwait(&w->cond_stop, &w->lock, &deadline) != ETIMEDOUT)
			;
		if (w->stop || w->err)
			break;
		now = now_ms();
		err = seal_old(w, now > w->cfg.flush_ms / 2 ? now - w->cfg.flush_ms / 2 : 0);
		if (err)
			set_err(w, err);
		off = w->file_off;
		if (off == w->synced_off)
			continue;
		pthread_mutex_unlock(&w->lock);
		/* Outside the lock: producers and writes go on meanwhile. A
		 * device or pipe given as output cannot be synced (EINVAL). */
		err = fdatasync(w->fd) < 0 && errno != EINVAL && errno != EROFS ? -errno : 0;
		pthread_mutex_lock(&w->lock);
		if (err)
			set_err(w, err);
		w->synced_off = off;
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static int drop(struct hwt_fmt_writer *w, uint32_t stream, size_t bytes)
{
	int err = add_lost(w, stream, HWT_FMT_LOST_WRITER, bytes);

	w->stats.dropped_bytes += bytes;
	return err ? err : -HWT_EDROPPED;
}

/* --- compression threads ------------------------------------------------ */

struct wthread {
	struct hwt_fmt_writer *w;
	ZSTD_CCtx *cctx;
	uint8_t *out;
	size_t outcap;
};

/* Compresses j into t->out after a chunk header. Returns the total chunk
 * size, or a negative error. */
static int64_t build_chunk(struct hwt_fmt_writer *w, struct wthread *t, const struct wjob *j,
			   struct fmt_chunk_header *h)
{
	size_t need = HWT_FMT_CHUNK_HEADER_SIZE + ZSTD_compressBound(j->len);
	size_t stored = j->len;
	bool raw = true;

	if (need > t->outcap) {
		uint8_t *p = realloc(t->out, need);

		if (!p)
			return -ENOMEM;
		t->out = p;
		t->outcap = need;
	}
	if (w->cfg.level != 0 && j->len > 0) {
		size_t n = ZSTD_compressCCtx(t->cctx, t->out + HWT_FMT_CHUNK_HEADER_SIZE,
					     t->outcap - HWT_FMT_CHUNK_HEADER_SIZE, j->data, j->len,
					     w->cfg.level);

		if (ZSTD_isError(n))
			return -HWT_ECOMPRESS;
		/* Keep the frame only when it saves space. */
		if (n < j->len) {
			stored = n;
			raw = false;
		}
	}
	if (raw)
		memcpy(t->out + HWT_FMT_CHUNK_HEADER_SIZE, j->data, j->len);
	memset(h, 0, sizeof(*h));
	h->type = j->type;
	h->flags = raw ? FMT_CHUNK_RAW : 0;
	h->stream = j->stream;
	h->raw_size = (uint32_t)j->len;
	h->stored_size = (uint32_t)stored;
	h->payload_crc = hwt_crc32c(0, t->out + HWT_FMT_CHUNK_HEADER_SIZE, stored);
	h->aux_offset = j->aux_offset;
	fmt_chunk_header_encode(t->out, h);
	return (int64_t)(HWT_FMT_CHUNK_HEADER_SIZE + stored);
}

static int index_add(struct hwt_fmt_writer *w, uint64_t off, const struct fmt_chunk_header *h)
{
	struct hwt_fmt_chunk *c;

	if (w->nindex == w->capindex) {
		size_t cap = w->capindex ? w->capindex * 2 : 256;
		struct hwt_fmt_chunk *t = realloc(w->index, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		w->index = t;
		w->capindex = cap;
	}
	c = &w->index[w->nindex++];
	c->file_offset = off;
	c->type = h->type;
	c->stream = h->stream;
	c->raw_size = h->raw_size;
	c->comp_size = h->stored_size;
	c->aux_offset = h->aux_offset;
	c->crc = h->payload_crc;
	c->flags = h->flags;
	return 0;
}

static void *worker(void *arg)
{
	struct wthread *t = arg;
	struct hwt_fmt_writer *w = t->w;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct fmt_chunk_header h;
		struct wjob *j;
		int64_t n = 0;
		bool failed;
		int err = 0;

		while (!w->qhead && !w->stop)
			pthread_cond_wait(&w->cond_work, &w->lock);
		if (!w->qhead)
			break;
		j = w->qhead;
		w->qhead = j->next;
		if (!w->qhead)
			w->qtail = NULL;
		/* After an error nothing more is written: skip the work. */
		failed = w->err != 0;
		pthread_mutex_unlock(&w->lock);

		if (!failed)
			n = build_chunk(w, t, j, &h);

		pthread_mutex_lock(&w->lock);
		while (w->write_seq != j->seq)
			pthread_cond_wait(&w->cond_written, &w->lock);
		if (n < 0)
			set_err(w, (int)n);
		if (!w->err && n > 0) {
			/* Only the thread whose turn it is writes, so the file
			 * offset is ours while the lock is dropped. */
			uint64_t off = w->file_off;

			pthread_mutex_unlock(&w->lock);
			err = write_all(w->fd, t->out, (size_t)n);
			pthread_mutex_lock(&w->lock);
			if (err) {
				set_err(w, err);
			} else {
				w->file_off += (uint64_t)n;
				w->stats.file_bytes = w->file_off;
				w->stats.raw_bytes += j->len;
				w->stats.chunks++;
				err = index_add(w, off, &h);
				if (err)
					set_err(w, err);
			}
		}
		w->write_seq++;
		w->queued_bytes -= j->len;
		job_put(w, j);
		pthread_cond_broadcast(&w->cond_written);
		pthread_cond_broadcast(&w->cond_room);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* --- public API ---------------------------------------------------------- */

static int start_threads(struct hwt_fmt_writer *w)
{
	struct wthread *ts;

	w->threads = calloc(w->cfg.threads, sizeof(*w->threads));
	ts = calloc(w->cfg.threads, sizeof(*ts));
	if (!w->threads || !ts) {
		free(ts);
		return -ENOMEM;
	}
	/* The per-thread states are owned by the threads' argument array,
	 * which lives until close (stored after the pthread_t array). */
	for (unsigned int i = 0; i < w->cfg.threads; i++) {
		ts[i].w = w;
		ts[i].cctx = ZSTD_createCCtx();
		if (!ts[i].cctx)
			goto nomem;
	}
	for (unsigned int i = 0; i < w->cfg.threads; i++) {
		if (pthread_create(&w->threads[i], NULL, worker, &ts[i]) != 0) {
			/* Threads already started are stopped by close. */
			w->thread_state = ts;
			return -EAGAIN;
		}
		w->nthreads++;
	}
	w->thread_state = ts;
	if (w->cfg.flush_ms) {
		if (pthread_create(&w->flusher, NULL, flusher, w) != 0)
			return -EAGAIN;
		w->flusher_ok = true;
	}
	return 0;
nomem:
	for (unsigned int i = 0; i < w->cfg.threads; i++)
		ZSTD_freeCCtx(ts[i].cctx);
	free(ts);
	return -ENOMEM;
}

int hwt_fmt_writer_open(struct hwt_fmt_writer **writer, const char *path,
			const struct hwt_fmt_writer_config *cfg)
{
	struct hwt_fmt_writer_config c;
	struct hwt_fmt_writer *w;
	uint8_t fh[HWT_FMT_FILE_HEADER_SIZE];
	struct timespec now;
	pthread_condattr_t ca;
	int err;

	if (!writer || !path)
		return -HWT_EINVAL;
	*writer = NULL;
	hwt_fmt_writer_config_init(&c);
	if (cfg && hwt_opts_copy(&c, sizeof(c), cfg) < 0)
		return -HWT_EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->cfg = c;
	if (w->cfg.threads == 0)
		w->cfg.threads = 1;
	err = -HWT_EINVAL;
	if (w->cfg.level < ZSTD_minCLevel() || w->cfg.level > ZSTD_maxCLevel() ||
	    w->cfg.chunk_size < MIN_CHUNK || w->cfg.chunk_size > MAX_CHUNK || w->cfg.threads > 64)
		goto error;

	hwt_buf_init(&w->meta);
	err = -ENOMEM;
	if (hwt_buf_reserve(&w->meta, FMT_META_HEADER_SIZE) < 0)
		goto error;
	w->meta.len = FMT_META_HEADER_SIZE;

	if (pthread_mutex_init(&w->lock, NULL) != 0)
		goto error;
	w->lock_ok = true;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_cond_init(&w->cond_work, NULL) != 0 ||
	    pthread_cond_init(&w->cond_room, &ca) != 0 ||
	    pthread_cond_init(&w->cond_written, NULL) != 0 ||
	    pthread_cond_init(&w->cond_stop, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		goto error;
	}
	pthread_condattr_destroy(&ca);
	w->conds_ok = true;

	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		err = -errno;
		goto error;
	}
	/* An existing file keeps its mode through O_TRUNC; traces hold
	 * command lines and code, so make it private either way. Only a
	 * regular file: a device or FIFO given as output (/dev/null, a pipe)
	 * is not ours to change. */
	{
		struct stat st;

		if (fstat(w->fd, &st) < 0) {
			err = -errno;
			goto error;
		}
		if (S_ISREG(st.st_mode) && fchmod(w->fd, 0600) < 0) {
			err = -errno;
			goto error;
		}
	}
	clock_gettime(CLOCK_REALTIME, &now);
	fmt_file_header_encode(fh, w->cfg.flags,
			       (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec);
	err = write_all(w->fd, fh, sizeof(fh));
	if (err)
		goto error;
	w->file_off = sizeof(fh);
	w->stats.file_bytes = w->file_off;

	err = start_threads(w);
	if (err)
		goto error;
	*writer = w;
	return 0;
error:
	w->err = err;
	hwt_fmt_writer_close(w);
	return err;
}

int hwt_fmt_writer_add_stream(struct hwt_fmt_writer *w, enum hwt_fmt_stream_kind kind, int32_t cpu,
			      int32_t tid, const char *name)
{
	uint8_t buf[FMT_STREAM_FIXED_SIZE + sizeof(((struct hwt_fmt_stream_desc *)0)->name)];
	struct wstream *s;
	size_t nlen;
	int err, id;

	if (!w || (kind != HWT_FMT_STREAM_RECORDS && kind != HWT_FMT_STREAM_AUX))
		return -HWT_EINVAL;
	pthread_mutex_lock(&w->lock);
	if (w->err) {
		err = w->err;
		goto out;
	}
	err = -HWT_EINVAL;
	if (w->nstreams >= MAX_STREAMS)
		goto out;
	if (w->nstreams == w->capstreams) {
		size_t cap = w->capstreams ? w->capstreams * 2 : 16;
		struct wstream *t = realloc(w->streams, cap * sizeof(*t));

		err = -ENOMEM;
		if (!t)
			goto out;
		w->streams = t;
		w->capstreams = cap;
	}
	s = &w->streams[w->nstreams];
	memset(s, 0, sizeof(*s));
	s->desc.id = (uint32_t)w->nstreams;
	s->desc.kind = kind;
	s->desc.cpu = cpu;
	s->desc.tid = tid;
	if (name) {
		nlen = strnlen(name, sizeof(s->desc.name) - 1);
		memcpy(s->desc.name, name, nlen);
	}
	nlen = strlen(s->desc.name);
	hwt_put_le32(buf, s->desc.id);
	hwt_put_le32(buf + 4, s->desc.kind);
	hwt_put_le32(buf + 8, (uint32_t)cpu);
	hwt_put_le32(buf + 12, (uint32_t)tid);
	hwt_put_le32(buf + 16, (uint32_t)nlen);
	memcpy(buf + FMT_STREAM_FIXED_SIZE, s->desc.name, nlen);
	/* Descriptors precede the stream's data and are never dropped. */
	err = enqueue_pending(w);
	if (!err)
		err = enqueue_bytes(w, HWT_FMT_CHUNK_STREAM, s->desc.id, buf,
				    FMT_STREAM_FIXED_SIZE + nlen);
	if (err)
		goto out;
	id = (int)w->nstreams++;
	pthread_mutex_unlock(&w->lock);
	return id;
out:
	pthread_mutex_unlock(&w->lock);
	return err;
}

static int meta_add(struct hwt_fmt_writer *w, uint32_t type, const char *key, const void *v,
		    size_t len)
{
	size_t klen;
	int err;

	if (!w || !key || (len && !v))
		return -HWT_EINVAL;
	klen = strlen(key);
	if (klen == 0 || klen > FMT_META_KEY_MAX || len > FMT_META_VALUE_MAX)
		return -HWT_EINVAL;
	pthread_mutex_lock(&w->lock);
	err = w->err;
	/* Keep every META chunk under the chunk size limit. */
	if (!err && w->meta_count && w->meta.len + FMT_META_ENTRY_SIZE + klen + len > FMT_CHUNK_MAX)
		err = enqueue_pending(w);
	if (!err) {
		note_pending(w);
		err = fmt_meta_encode(&w->meta, type, key, v, len);
		if (!err)
			w->meta_count++;
	}
	pthread_mutex_unlock(&w->lock);
	return err;
}

int hwt_fmt_writer_meta_u64(struct hwt_fmt_writer *w, const char *key, uint64_t value)
{
	uint8_t b[8];

	hwt_put_le64(b, value);
	return meta_add(w, HWT_FMT_META_U64, key, b, 8);
}

int hwt_fmt_writer_meta_i64(struct hwt_fmt_writer *w, const char *key, int64_t value)
{
	uint8_t b[8];

	hwt_put_le64(b, (uint64_t)value);
	return meta_add(w, HWT_FMT_META_I64, key, b, 8);
}

int hwt_fmt_writer_meta_str(struct hwt_fmt_writer *w, const char *key, const char *value)
{
	if (!value)
		return -HWT_EINVAL;
	return meta_add(w, HWT_FMT_META_STR, key, value, strlen(value));
}

int hwt_fmt_writer_meta_bytes(struct hwt_fmt_writer *w, const char *key, const void *value,
			      size_t len)
{
	return meta_add(w, HWT_FMT_META_BYTES, key, value, len);
}

static struct wstream *get_stream(struct hwt_fmt_writer *w, uint32_t stream, uint32_t kind)
{
	if (stream >= w->nstreams || w->streams[stream].desc.kind != kind)
		return NULL;
	return &w->streams[stream];
}

int hwt_fmt_writer_records(struct hwt_fmt_writer *w, uint32_t stream, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	struct wstream *s;
	size_t pos = 0;
	int err = 0;

	if (!w || (len && !buf))
		return -HWT_EINVAL;
	/* Check the framing before taking anything: all records or none. */
	while (pos < len) {
		size_t size;

		if (len - pos < sizeof(struct perf_event_header))
			return -HWT_EINVAL;
		size = hwt_le16(p + pos + 6);
		if (size < sizeof(struct perf_event_header) || size > len - pos)
			return -HWT_EINVAL;
		pos += size;
	}
	pthread_mutex_lock(&w->lock);
	if (w->err) {
		err = w->err;
		goto out;
	}
	s = get_stream(w, stream, HWT_FMT_STREAM_RECORDS);
	if (!s) {
		err = -HWT_EINVAL;
		goto out;
	}
	pos = 0;
	while (pos < len) {
		size_t rsize = hwt_le16(p + pos + 6), room, take = 0;

		if (s->open && s->open->cap - s->open->len < rsize) {
			if (s->open->len == 0) {
				/* An empty chunk too small for a big record. */
				job_put(w, s->open);
				s->open = NULL;
			} else {
				/* Records are never split: seal and go on
				 * in a fresh chunk. */
				err = seal(w, s, SEAL_WAIT);
				if (err == -HWT_EDROPPED)
					err = drop(w, stream, len - pos);
				if (err)
					goto out;
				continue;
			}
		}
		if (!s->open) {
			s->open = job_get(w, rsize);
			if (!s->open) {
				err = -ENOMEM;
				goto out;
			}
			s->open->type = HWT_FMT_CHUNK_RECORDS;
			s->open->stream = stream;
		}
		/* Take as many whole records as fit. */
		room = s->open->cap - s->open->len;
		while (pos + take < len && hwt_le16(p + pos + take + 6) <= room - take)
			take += hwt_le16(p + pos + take + 6);
		memcpy(s->open->data + s->open->len, p + pos, take);
		s->open->len += take;
		pos += take;
	}
	/* A full chunk goes now if there is room; else it waits for the next
	 * call: what this call stored is accepted either way. */
	if (s->open && s->open->len == s->open->cap) {
		int e = seal(w, s, SEAL_TRY);

		if (e != -HWT_EDROPPED)
			err = e;
	}
out:
	pthread_mutex_unlock(&w->lock);
	return err;
}

int hwt_fmt_writer_aux(struct hwt_fmt_writer *w, uint32_t stream, uint64_t aux_offset,
		       const void *buf, size_t len)
{
	const uint8_t *p = buf;
	struct wstream *s;
	int err = 0;

	if (!w || (len && !buf) || aux_offset + len < aux_offset)
		return -HWT_EINVAL;
	pthread_mutex_lock(&w->lock);
	if (w->err) {
		err = w->err;
		goto out;
	}
	s = get_stream(w, stream, HWT_FMT_STREAM_AUX);
	if (!s) {
		err = -HWT_EINVAL;
		goto out;
	}
	/* A discontinuity starts a new chunk, so the gap stays visible. */
	if (s->open && s->open->aux_offset + s->open->len != aux_offset) {
		err = seal(w, s, SEAL_WAIT);
		if (err == -HWT_EDROPPED) {
			err = drop(w, stream, len);
			goto out;
		}
		if (err)
			goto out;
	}
	while (len) {
		size_t n;

		if (!s->open) {
			s->open = job_get(w, w->cfg.chunk_size);
			if (!s->open) {
				err = -ENOMEM;
				goto out;
			}
			s->open->type = HWT_FMT_CHUNK_AUX;
			s->open->stream = stream;
			s->open->aux_offset = aux_offset;
		}
		n = s->open->cap - s->open->len;
		if (n > len)
			n = len;
		memcpy(s->open->data + s->open->len, p, n);
		s->open->len += n;
		p += n;
		len -= n;
		aux_offset += n;
		if (s->open->len == s->open->cap) {
			/* With bytes left, wait for room; with none, the full
			 * chunk may as well wait for the next call. */
			err = seal(w, s, len ? SEAL_WAIT : SEAL_TRY);
			if (err == -HWT_EDROPPED)
				err = len ? drop(w, stream, len) : 0;
			if (err)
				goto out;
		}
	}
out:
	pthread_mutex_unlock(&w->lock);
	return err;
}

int hwt_fmt_writer_lost(struct hwt_fmt_writer *w, uint32_t stream, enum hwt_fmt_lost_kind kind,
			uint64_t amount)
{
	int err;

	if (!w || kind < HWT_FMT_LOST_RECORDS || kind > HWT_FMT_LOST_AUX_GAPS)
		return -HWT_EINVAL;
	pthread_mutex_lock(&w->lock);
	if (stream != UINT32_MAX && stream >= w->nstreams)
		err = -HWT_EINVAL;
	else
		err = add_lost(w, stream, kind, amount);
	pthread_mutex_unlock(&w->lock);
	return err;
}

/* Queues everything pending and waits until it is written (lock held). */
static int flush_locked(struct hwt_fmt_writer *w)
{
	uint64_t target;
	int err = 0;

	for (size_t i = 0; i < w->nstreams && !err; i++)
		err = seal(w, &w->streams[i], SEAL_FORCE);
	if (!err)
		err = enqueue_pending(w);
	if (err)
		set_err(w, err);
	target = w->next_seq;
	while (w->write_seq < target && w->nthreads)
		pthread_cond_wait(&w->cond_written, &w->lock);
	return w->err;
}

int hwt_fmt_writer_flush(struct hwt_fmt_writer *w)
{
	int err;

	if (!w)
		return -HWT_EINVAL;
	pthread_mutex_lock(&w->lock);
	err = flush_locked(w);
	pthread_mutex_unlock(&w->lock);
	return err;
}

void hwt_fmt_writer_stats(struct hwt_fmt_writer *w, struct hwt_fmt_writer_stats *stats)
{
	if (!w || !stats)
		return;
	pthread_mutex_lock(&w->lock);
	*stats = w->stats;
	pthread_mutex_unlock(&w->lock);
}

/* Writes the index chunk and trailer (threads stopped). */
static int write_index(struct hwt_fmt_writer *w)
{
	struct wthread t = {.w = w};
	struct fmt_chunk_header h;
	struct wjob j = {0};
	uint8_t trailer[HWT_FMT_TRAILER_SIZE];
	uint64_t index_off = w->file_off;
	int64_t n;
	int err;

	j.len = FMT_INDEX_HEADER_SIZE + w->nindex * FMT_INDEX_ENTRY_SIZE;
	if (j.len > FMT_CHUNK_MAX)
		return 0; /* too many chunks to index: readers will scan */
	j.data = malloc(j.len);
	t.cctx = ZSTD_createCCtx();
	if (!j.data || !t.cctx) {
		err = -ENOMEM;
		goto out;
	}
	j.type = HWT_FMT_CHUNK_INDEX;
	j.stream = UINT32_MAX;
	hwt_put_le32(j.data, FMT_INDEX_ENTRY_SIZE);
	hwt_put_le32(j.data + 4, (uint32_t)w->nindex);
	for (size_t i = 0; i < w->nindex; i++) {
		uint8_t *e = j.data + FMT_INDEX_HEADER_SIZE + i * FMT_INDEX_ENTRY_SIZE;
		const struct hwt_fmt_chunk *c = &w->index[i];

		memset(e, 0, FMT_INDEX_ENTRY_SIZE);
		hwt_put_le64(e, c->file_offset);
		hwt_put_le16(e + 8, (uint16_t)c->type);
		hwt_put_le16(e + 10, (uint16_t)c->flags);
		hwt_put_le32(e + 12, c->stream);
		hwt_put_le32(e + 16, c->raw_size);
		hwt_put_le32(e + 20, c->comp_size);
		hwt_put_le32(e + 24, c->crc);
		hwt_put_le64(e + 32, c->aux_offset);
	}
	n = build_chunk(w, &t, &j, &h);
	if (n < 0) {
		err = (int)n;
		goto out;
	}
	err = write_all(w->fd, t.out, (size_t)n);
	if (err)
		goto out;
	w->file_off += (uint64_t)n;
	memset(trailer, 0, sizeof(trailer));
	memcpy(trailer, FMT_TRAILER_MAGIC, 8);
	hwt_put_le64(trailer + 8, index_off);
	hwt_put_le32(trailer + 20, hwt_crc32c(0, trailer, 20));
	err = write_all(w->fd, trailer, sizeof(trailer));
	if (!err) {
		w->file_off += sizeof(trailer);
		w->stats.file_bytes = w->file_off;
	}
out:
	free(j.data);
	free(t.out);
	ZSTD_freeCCtx(t.cctx);
	return err;
}

int hwt_fmt_writer_close(struct hwt_fmt_writer *w)
{
	int err;

	if (!w)
		return 0;
	if (w->lock_ok && w->conds_ok) {
		pthread_mutex_lock(&w->lock);
		if (w->nthreads)
			flush_locked(w);
		w->stop = true;
		pthread_cond_broadcast(&w->cond_work);
		pthread_cond_broadcast(&w->cond_stop);
		pthread_mutex_unlock(&w->lock);
	}
	if (w->flusher_ok)
		pthread_join(w->flusher, NULL);
	for (unsigned int i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i], NULL);
	if (w->thread_state) {
		for (unsigned int i = 0; i < w->cfg.threads; i++) {
			ZSTD_freeCCtx(w->thread_state[i].cctx);
			free(w->thread_state[i].out);
		}
	}
	if (w->fd >= 0 && !w->err && w->nthreads)
		set_err(w, write_index(w));
	if (w->fd >= 0 && close(w->fd) < 0)
		set_err(w, -errno);
	err = w->err;

	for (size_t i = 0; i < w->nstreams; i++)
		job_free(w->streams[i].open);
	while (w->qhead) {
		struct wjob *j = w->qhead;

		w->qhead = j->next;
		job_free(j);
	}
	while (w->free_jobs) {
		struct wjob *j = w->free_jobs;

		w->free_jobs = j->next;
		job_free(j);
	}
	free(w->streams);
	free(w->lost);
	free(w->index);
	free(w->threads);
	free(w->thread_state);
	hwt_buf_fini(&w->meta);
	if (w->conds_ok) {
		pthread_cond_destroy(&w->cond_work);
		pthread_cond_destroy(&w->cond_room);
		pthread_cond_destroy(&w->cond_written);
		pthread_cond_destroy(&w->cond_stop);
	}
	if (w->lock_ok)
		pthread_mutex_destroy(&w->lock);
	free(w);
	return err;
}
