/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ptsession/pts_merge.c - stitching: the streams of a per-CPU recording
 * decoded together, each on its own thread (a lane), and their records
 * delivered from the calling thread merged by time, so that a thread that
 * moved from CPU to CPU has its records in time order and the session can
 * carry its call stack over (ptsession.c's stitch()).
 *
 * A lane's records are copied into batches; a lane holds at most
 * LANE_QUEUE full batches (memory stays bounded however long the trace):
 * its decoder waits while the consumer is behind. The consumer takes the
 * record with the smallest key among the lanes' next ones, which needs a
 * record (or the end) from every lane. A record's key is its stream's
 * time so far (records without a time have the time of the one before),
 * kept within the run of its thread on that CPU: raised to the run's start
 * (its switch in), and below the run's end (the CPU's next switch; a
 * decoder can stamp the last blocks before tracing stopped with a time read
 * after). Keys are doubled times so that "below the end" stays before a
 * run that starts at that same time on another CPU: a thread's records on
 * the CPU it left come before its records on the next one.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ptsession/pts_int.h"

#define LANE_BATCH 1024 /* records per batch */
#define LANE_QUEUE 4	/* full batches a lane may hold */

struct mrec {
	struct hwt_dec_rec rec;
	uint64_t key;
	uint8_t raw[16]; /* a truncated block's last bytes */
};

struct batch {
	size_t n;
	struct mrec r[LANE_BATCH];
};

struct merge;

struct lane {
	struct merge *m;
	struct pts_stream *st;
	pthread_t thread;
	/* producer's */
	struct batch *fill;
	uint64_t key; /* the stream's key so far */
	uint64_t end; /* when the current run ended (UINT64_MAX: open) */
	/* shared, under m->lock */
	struct batch *queue[LANE_QUEUE];
	size_t qhead, qlen;
	bool done, stop;
	bool waiting; /* the producer waits for room */
	pthread_cond_t room;
	struct batch *spare[LANE_QUEUE + 2]; /* used batches, for reuse
					      * (fresh ones cost page
					      * faults) */
	size_t nspare;
	int err;
	/* consumer's */
	struct batch *cur;
	size_t pos;
	bool ended;
};

struct merge {
	struct hwt_pts *pts;
	pthread_mutex_t lock;
	pthread_cond_t cv; /* the consumer waits for a batch */
	bool waiting;	   /* ... and does */
	bool abort;
	struct lane *lanes;
	size_t nlanes;
};

/* Hands the producer's batch to the consumer; waits for room. Returns 0,
 * or -HWT_EEOS when the lane is to stop (the consumer is done with it). */
static int lane_hand(struct lane *l)
{
	struct merge *m = l->m;
	int err = 0;

	pthread_mutex_lock(&m->lock);
	while (l->qlen == LANE_QUEUE && !l->stop && !m->abort) {
		l->waiting = true;
		pthread_cond_wait(&l->room, &m->lock);
		l->waiting = false;
	}
	if (l->stop || m->abort) {
		err = -HWT_EEOS;
	} else {
		l->queue[(l->qhead + l->qlen) % LANE_QUEUE] = l->fill;
		l->qlen++;
		l->fill = NULL;
		/* Wake-ups cost system calls: only when someone waits. */
		if (m->waiting)
			pthread_cond_signal(&m->cv);
	}
	pthread_mutex_unlock(&m->lock);
	return err;
}

/* The decoder's sink on a lane: copies the record into the batch. */
static int lane_rec(void *ctx, const struct hwt_dec_rec *rec)
{
	struct lane *l = ctx;
	struct hwt_pts *pts = l->m->pts;
	struct mrec *r;

	if (!l->fill) {
		pthread_mutex_lock(&l->m->lock);
		if (l->nspare)
			l->fill = l->spare[--l->nspare];
		pthread_mutex_unlock(&l->m->lock);
		if (!l->fill)
			l->fill = malloc(sizeof(*l->fill));
		if (!l->fill)
			return -ENOMEM;
		l->fill->n = 0;
	}
	if (rec->type == HWT_DEC_REC_SWITCH && (rec->flags & HWT_DEC_RF_NEW_RUN)) {
		l->end = pts_run_end(l->st, rec->u.sw.run);
		if (2 * rec->u.sw.run > l->key)
			l->key = 2 * rec->u.sw.run;
	}
	r = &l->fill->r[l->fill->n++];
	/* The header and this type's part only: the batches go from core
	 * to core, and calls and returns are most records. */
	memcpy(&r->rec, rec, offsetof(struct hwt_dec_rec, u));
	switch (rec->type) {
	case HWT_DEC_REC_CALL:
		r->rec.u.call = rec->u.call;
		break;
	case HWT_DEC_REC_RETURN:
		r->rec.u.ret = rec->u.ret;
		break;
	default:
		r->rec.u = rec->u;
		break;
	}
	/* Stitching requires the time conversion: times are perf times. */
	if ((rec->flags & HWT_DEC_RF_TIME) && rec->time > l->end) {
		/* Read after the thread left the CPU (libipt reads timing
		 * packets ahead of the last blocks before a disable): it ran
		 * until its switch at the latest. */
		r->rec.time = l->end;
		r->rec.tsc = hwt_dec_perf_to_tsc(&pts->dcfg.tconv, l->end);
	}
	if ((rec->flags & HWT_DEC_RF_TIME) && 2 * r->rec.time > l->key)
		l->key = 2 * r->rec.time;
	r->key = l->end < UINT64_MAX / 2 && l->key >= 2 * l->end ? 2 * l->end - 1 : l->key;
	if (rec->type == HWT_DEC_REC_BLOCK && rec->u.block.raw) {
		size_t n =
		    rec->u.block.raw_size < sizeof(r->raw) ? rec->u.block.raw_size : sizeof(r->raw);

		memcpy(r->raw, rec->u.block.raw, n);
		r->rec.u.block.raw_size = (uint8_t)n;
	}
	if (l->fill->n < LANE_BATCH)
		return 0;
	return lane_hand(l);
}

static void *lane_main(void *arg)
{
	struct lane *l = arg;
	struct merge *m = l->m;
	uint8_t *buf = malloc(PTS_LANE_PIECE);
	int err = -ENOMEM;

	if (buf) {
		err = pts_run_stream(m->pts, l->st, buf, PTS_LANE_PIECE, lane_rec, NULL, NULL, NULL,
				     l);
		if (err >= 0 && l->fill && l->fill->n)
			err = lane_hand(l);
	}
	free(buf);
	free(l->fill);
	l->fill = NULL;
	pthread_mutex_lock(&m->lock);
	/* Stopped by the consumer: not an error. */
	if (err == -HWT_EEOS && (l->stop || m->abort))
		err = 0;
	l->err = err;
	l->done = true;
	pthread_cond_signal(&m->cv);
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* Makes l->cur hold a record, waiting for its producer; false when the
 * lane has no more. */
static bool lane_next(struct lane *l)
{
	struct merge *m = l->m;

	if (l->ended)
		return false;
	if (l->cur && l->pos < l->cur->n)
		return true;
	pthread_mutex_lock(&m->lock);
	if (l->cur && l->nspare < HWT_ARRAY_SIZE(l->spare))
		l->spare[l->nspare++] = l->cur;
	else
		free(l->cur);
	l->cur = NULL;
	while (!l->qlen && !l->done) {
		m->waiting = true;
		pthread_cond_wait(&m->cv, &m->lock);
		m->waiting = false;
	}
	if (l->qlen) {
		l->cur = l->queue[l->qhead];
		l->qhead = (l->qhead + 1) % LANE_QUEUE;
		l->qlen--;
		l->pos = 0;
		if (l->waiting)
			pthread_cond_signal(&l->room);
	} else {
		l->ended = true;
	}
	pthread_mutex_unlock(&m->lock);
	return !l->ended;
}

/* The consumer is done with the lane (the stream passed the end time):
 * its decoder stops. */
static void lane_stop(struct lane *l)
{
	struct merge *m = l->m;

	pthread_mutex_lock(&m->lock);
	l->stop = true;
	pthread_cond_signal(&l->room);
	pthread_mutex_unlock(&m->lock);
	l->ended = true;
}

/* Delivers the lanes' records by key (ties: the stream decoded first). */
static int merge_loop(struct merge *m)
{
	for (;;) {
		struct lane *best = NULL;
		uint64_t next = UINT64_MAX;

		for (size_t i = 0; i < m->nlanes; i++) {
			struct lane *l = &m->lanes[i];
			uint64_t key;

			if (!lane_next(l))
				continue;
			key = l->cur->r[l->pos].key;
			if (!best || key < best->cur->r[best->pos].key) {
				if (best)
					next = best->cur->r[best->pos].key;
				best = l;
			} else if (key < next) {
				next = key;
			}
		}
		if (!best)
			return 0;
		/* The best lane's records up to the next lane's key. */
		do {
			struct mrec *r = &best->cur->r[best->pos++];
			int err;

			if (r->rec.type == HWT_DEC_REC_BLOCK && r->rec.u.block.raw)
				r->rec.u.block.raw = r->raw;
			err = pts_rec(best->st, &r->rec);
			if (err == -HWT_EEOS) {
				lane_stop(best);
				break;
			}
			if (err < 0)
				return err;
		} while (best->pos < best->cur->n && best->cur->r[best->pos].key <= next);
	}
}

int pts_merge_run(struct hwt_pts *pts)
{
	struct merge m = {.pts = pts};
	int err = 0;

	hwt_log(&pts->cfg.log, HWT_LOG_DEBUG,
		"PT streams of %zu CPUs decoded together in time order: call stacks carried from "
		"CPU to CPU",
		pts->nstreams);
	m.lanes = calloc(pts->nstreams ? pts->nstreams : 1, sizeof(*m.lanes));
	if (!m.lanes)
		return -ENOMEM;
	pthread_mutex_init(&m.lock, NULL);
	pthread_cond_init(&m.cv, NULL);
	for (size_t i = 0; i < pts->nstreams; i++) {
		struct lane *l = &m.lanes[m.nlanes];

		l->m = &m;
		l->st = &pts->streams[i];
		l->end = UINT64_MAX;
		pthread_cond_init(&l->room, NULL);
		if (pthread_create(&l->thread, NULL, lane_main, l)) {
			pthread_cond_destroy(&l->room);
			err = -HWT_EINTERNAL;
			break;
		}
		m.nlanes++;
	}
	if (err >= 0)
		err = merge_loop(&m);
	/* Stop what is still decoding (an error, or a lane left). */
	pthread_mutex_lock(&m.lock);
	m.abort = true;
	for (size_t i = 0; i < m.nlanes; i++)
		pthread_cond_signal(&m.lanes[i].room);
	pthread_mutex_unlock(&m.lock);
	for (size_t i = 0; i < m.nlanes; i++) {
		struct lane *l = &m.lanes[i];

		pthread_join(l->thread, NULL);
		if (err >= 0 && l->err < 0)
			err = l->err;
		free(l->cur);
		for (size_t k = 0; k < l->qlen; k++)
			free(l->queue[(l->qhead + k) % LANE_QUEUE]);
		for (size_t k = 0; k < l->nspare; k++)
			free(l->spare[k]);
		pthread_cond_destroy(&l->room);
	}
	pthread_cond_destroy(&m.cv);
	pthread_mutex_destroy(&m.lock);
	free(m.lanes);
	return err;
}
