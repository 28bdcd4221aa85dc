/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/map.c - the one hash map of the probe module: a pair of u64 to a
 * u64, open addressing with linear probing and backward-shift deletion (no
 * tombstones, so a table that sees many inserts and deletes, as
 * thread-local variables do, never degrades). Lookups allocate nothing;
 * inserts allocate only when the table doubles.
 */
#include "probe/probe_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t slot_of(uint64_t a, uint64_t b, size_t cap)
{
	/* splitmix64's finaliser over both words */
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return (size_t)h & (cap - 1);
}

void prb_map_fini(struct prb_map *m)
{
	free(m->ents);
	memset(m, 0, sizeof(*m));
}

uint64_t *prb_map_get(const struct prb_map *m, uint64_t a, uint64_t b)
{
	if (!m->cap)
		return NULL;
	for (size_t i = slot_of(a, b, m->cap);; i = (i + 1) & (m->cap - 1)) {
		struct prb_map_ent *e = &m->ents[i];

		if (!e->used)
			return NULL;
		if (e->a == a && e->b == b)
			return &e->v;
	}
}

static int grow(struct prb_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct prb_map_ent *old = m->ents, *ents;
	size_t ocap = m->cap;

	if (cap > SIZE_MAX / sizeof(*ents))
		return -ENOMEM;
	ents = calloc(cap, sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	m->ents = ents;
	m->cap = cap;
	for (size_t i = 0; i < ocap; i++) {
		if (!old[i].used)
			continue;
		for (size_t j = slot_of(old[i].a, old[i].b, cap);; j = (j + 1) & (cap - 1)) {
			if (!ents[j].used) {
				ents[j] = old[i];
				break;
			}
		}
	}
	free(old);
	return 0;
}

int prb_map_put(struct prb_map *m, uint64_t a, uint64_t b, uint64_t v)
{
	uint64_t *p = prb_map_get(m, a, b);

	if (p) {
		*p = v;
		return 0;
	}
	if ((m->n + 1) * 2 > m->cap) {
		int err = grow(m);

		if (err < 0)
			return err;
	}
	for (size_t i = slot_of(a, b, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->ents[i].used) {
			m->ents[i] = (struct prb_map_ent){a, b, v, true};
			m->n++;
			return 0;
		}
	}
}

void prb_map_del(struct prb_map *m, uint64_t a, uint64_t b)
{
	size_t i, j, mask = m->cap - 1;

	if (!m->cap)
		return;
	for (i = slot_of(a, b, m->cap);; i = (i + 1) & mask) {
		if (!m->ents[i].used)
			return;
		if (m->ents[i].a == a && m->ents[i].b == b)
			break;
	}
	/* Backward shift: move later entries of the run into the hole when
	 * their home slot does not lie cyclically in (hole, their slot]. */
	m->ents[i].used = false;
	m->n--;
	for (j = (i + 1) & mask; m->ents[j].used; j = (j + 1) & mask) {
		size_t home = slot_of(m->ents[j].a, m->ents[j].b, m->cap);
		bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);

		if (stays)
			continue;
		m->ents[i] = m->ents[j];
		m->ents[j].used = false;
		i = j;
	}
}

/* ------------------------------------------------------------------------ */
/* Maps keyed by tuples: bpftrace's plain maps (@start[tid] = nsecs) on the
 * sampling path. Keys are typed values (integers, dict ids), compared
 * whole; the same open addressing and backward-shift deletion. */

static size_t tuple_slot(const struct hwt_rep_val *k, size_t n, size_t cap)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (uint64_t)k[i].v + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
		h *= 0xbf58476d1ce4e5b9ull;
		h ^= h >> 29;
	}
	return (size_t)h & (cap - 1);
}

static bool tuple_eq(const struct hwt_rep_val *a, const struct hwt_rep_val *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].v != b[i].v)
			return false;
	return true;
}

void prb_tmap_fini(struct prb_tmap *m)
{
	free(m->ents);
	m->ents = NULL;
	m->cap = m->n = 0;
}

void prb_tmap_clear(struct prb_tmap *m)
{
	if (m->ents)
		memset(m->ents, 0, m->cap * sizeof(*m->ents));
	m->n = 0;
}

struct prb_tmap_ent *prb_tmap_get(const struct prb_tmap *m, const struct hwt_rep_val *key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = tuple_slot(key, m->nkeys, m->cap);; i = (i + 1) & (m->cap - 1)) {
		struct prb_tmap_ent *e = &m->ents[i];

		if (!e->used)
			return NULL;
		if (tuple_eq(e->key, key, m->nkeys))
			return e;
	}
}

int prb_tmap_put(struct prb_tmap *m, const struct hwt_rep_val *key, int64_t v)
{
	struct prb_tmap_ent *e = prb_tmap_get(m, key);

	if (e) {
		e->v = v;
		return 0;
	}
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64, ocap = m->cap;
		struct prb_tmap_ent *old = m->ents, *ents;

		if (cap > SIZE_MAX / sizeof(*ents) || !(ents = calloc(cap, sizeof(*ents))))
			return -ENOMEM;
		for (size_t i = 0; i < ocap; i++) {
			if (!old[i].used)
				continue;
			for (size_t j = tuple_slot(old[i].key, m->nkeys, cap);;
			     j = (j + 1) & (cap - 1))
				if (!ents[j].used) {
					ents[j] = old[i];
					break;
				}
		}
		free(old);
		m->ents = ents;
		m->cap = cap;
	}
	for (size_t i = tuple_slot(key, m->nkeys, m->cap);; i = (i + 1) & (m->cap - 1)) {
		e = &m->ents[i];
		if (!e->used) {
			memset(e, 0, sizeof(*e));
			memcpy(e->key, key, m->nkeys * sizeof(*key));
			e->v = v;
			e->used = true;
			m->n++;
			return 0;
		}
	}
}

void prb_tmap_del(struct prb_tmap *m, const struct hwt_rep_val *key)
{
	size_t i, j, mask = m->cap - 1;
	struct prb_tmap_ent *e = prb_tmap_get(m, key);

	if (!e)
		return;
	i = (size_t)(e - m->ents);
	m->ents[i].used = false;
	m->n--;
	for (j = (i + 1) & mask; m->ents[j].used; j = (j + 1) & mask) {
		size_t home = tuple_slot(m->ents[j].key, m->nkeys, m->cap);
		bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);

		if (stays)
			continue;
		m->ents[i] = m->ents[j];
		m->ents[j].used = false;
		i = j;
	}
}
