/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report/dict.c - interning: the arena, the byte-key set every table of the
 * report module is built on, and the dict of strings, frames and stacks.
 * Interning once and keying on small ids is what lets aggregation and
 * profile updates run without allocating for keys already seen.
 */
#include "report/report_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Arena */

struct hwt_rep_arena_block {
	struct hwt_rep_arena_block *next;
	size_t cap;
	_Alignas(8) uint8_t data[];
};

#define ARENA_BLOCK (64 * 1024)

void hwt_rep_arena_init(struct hwt_rep_arena *arena)
{
	arena->head = NULL;
	arena->used = 0;
	arena->cap = 0;
}

void hwt_rep_arena_fini(struct hwt_rep_arena *arena)
{
	struct hwt_rep_arena_block *b, *next;

	if (!arena)
		return;
	for (b = arena->head; b; b = next) {
		next = b->next;
		free(b);
	}
	hwt_rep_arena_init(arena);
}

void *hwt_rep_arena_alloc(struct hwt_rep_arena *arena, size_t len)
{
	struct hwt_rep_arena_block *b;
	size_t need, cap;
	void *p;

	if (len > SIZE_MAX - 8 - sizeof(*b))
		return NULL;
	need = (len + 7) & ~(size_t)7;
	if (!arena->head || arena->cap - arena->used < need) {
		cap = need > ARENA_BLOCK / 4 ? need : ARENA_BLOCK;
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->cap = cap;
		if (cap == need && arena->head) {
			/* A big item gets its own block behind the current one,
			 * so the current block's free space is not wasted. */
			b->next = arena->head->next;
			arena->head->next = b;
			return b->data;
		}
		b->next = arena->head;
		arena->head = b;
		arena->used = 0;
		arena->cap = cap;
	}
	p = arena->head->data + arena->used;
	arena->used += need;
	return p;
}

/* ------------------------------------------------------------------------ */
/* Hash: 8 bytes at a time with a multiply-xorshift mix (as wyhash/murmur
 * finalisers); keys are short (tuples, frame ids), so the tail matters. */

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ull;
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ull;
	x ^= x >> 32;
	return x;
}

uint64_t hwt_rep_hash(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (len * 0xff51afd7ed558ccdull);

	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		h = (h ^ mix64(w + 0x2545f4914f6cdd1dull)) * 0x9fb21c651e98df25ull;
		h ^= h >> 29;
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t w = 0;

		memcpy(&w, p, len);
		h = (h ^ mix64(w + 0x2545f4914f6cdd1dull + len)) * 0x9fb21c651e98df25ull;
	}
	return mix64(h);
}

/* ------------------------------------------------------------------------ */
/* Set */

void hwt_rep_set_init(struct hwt_rep_set *set)
{
	memset(set, 0, sizeof(*set));
	hwt_rep_arena_init(&set->arena);
}

void hwt_rep_set_fini(struct hwt_rep_set *set)
{
	if (!set)
		return;
	hwt_rep_arena_fini(&set->arena);
	free(set->entries);
	free(set->slots);
	hwt_rep_set_init(set);
}

void hwt_rep_set_clear(struct hwt_rep_set *set)
{
	hwt_rep_arena_fini(&set->arena);
	set->n = 0;
	if (set->slots)
		memset(set->slots, 0, set->nslots * sizeof(*set->slots));
}

static int set_grow_slots(struct hwt_rep_set *set)
{
	size_t nslots = set->nslots ? set->nslots * 2 : 64;
	uint64_t *slots;

	if (nslots > SIZE_MAX / sizeof(*slots))
		return -HWT_ETOOBIG;
	slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < set->n; i++) {
		uint32_t hash = set->entries[i].hash;
		size_t s = hash & (nslots - 1);

		while (slots[s])
			s = (s + 1) & (nslots - 1);
		slots[s] = (uint64_t)hash << 32 | ((uint64_t)i + 1);
	}
	free(set->slots);
	set->slots = slots;
	set->nslots = nslots;
	return 0;
}

static int set_lookup(const struct hwt_rep_set *set, const void *key, size_t len, uint32_t hash,
		      size_t *slot)
{
	size_t s;

	if (!set->nslots) {
		*slot = 0;
		return 0;
	}
	s = hash & (set->nslots - 1);
	while (set->slots[s]) {
		uint64_t v = set->slots[s];

		if ((uint32_t)(v >> 32) == hash) {
			const struct hwt_rep_set_entry *e = &set->entries[(uint32_t)v - 1];

			if (e->len == len && (len == 0 || !memcmp(e->data, key, len))) {
				*slot = s;
				return 1;
			}
		}
		s = (s + 1) & (set->nslots - 1);
	}
	*slot = s;
	return 0;
}

int hwt_rep_set_find(const struct hwt_rep_set *set, const void *key, size_t len, uint32_t *id)
{
	size_t slot;

	if (len > UINT32_MAX)
		return 0;
	if (set_lookup(set, key, len, (uint32_t)hwt_rep_hash(key, len), &slot)) {
		*id = (uint32_t)set->slots[slot] - 1;
		return 1;
	}
	return 0;
}

int hwt_rep_set_intern(struct hwt_rep_set *set, const void *key, size_t len, uint32_t *id)
{
	uint32_t hash;
	size_t slot;
	uint8_t *copy;
	int err;

	if (len > UINT32_MAX - 8)
		return -HWT_ETOOBIG;
	hash = (uint32_t)hwt_rep_hash(key, len);
	if (set_lookup(set, key, len, hash, &slot)) {
		*id = (uint32_t)set->slots[slot] - 1;
		return 0;
	}
	if (set->n >= UINT32_MAX - 1)
		return -HWT_ETOOBIG;
	if ((set->n + 1) * 2 > set->nslots) {
		err = set_grow_slots(set);
		if (err < 0)
			return err;
		set_lookup(set, key, len, hash, &slot);
	}
	if (set->n == set->entries_cap) {
		size_t cap = set->entries_cap ? set->entries_cap * 2 : 64;
		struct hwt_rep_set_entry *e;

		if (cap > SIZE_MAX / sizeof(*e))
			return -HWT_ETOOBIG;
		e = realloc(set->entries, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		set->entries = e;
		set->entries_cap = cap;
	}
	copy = hwt_rep_arena_alloc(&set->arena, len + 1);
	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, key, len);
	copy[len] = 0;
	set->entries[set->n].data = copy;
	set->entries[set->n].len = (uint32_t)len;
	set->entries[set->n].hash = hash;
	set->slots[slot] = (uint64_t)hash << 32 | ((uint64_t)set->n + 1);
	*id = (uint32_t)set->n++;
	return 1;
}

/* ------------------------------------------------------------------------ */
/* Dict */

int hwt_rep_dict_alloc(struct hwt_rep_dict **dictp)
{
	struct hwt_rep_dict *dict;
	uint32_t id;

	if (!dictp)
		return -HWT_EINVAL;
	*dictp = NULL;
	dict = calloc(1, sizeof(*dict));
	if (!dict)
		return -ENOMEM;
	hwt_rep_set_init(&dict->strs);
	hwt_rep_set_init(&dict->frames);
	hwt_rep_set_init(&dict->stacks);
	/* Id 0 of both is the empty one, so that 0 can mean "unknown". */
	if (hwt_rep_set_intern(&dict->strs, "", 0, &id) < 0 ||
	    hwt_rep_set_intern(&dict->stacks, NULL, 0, &id) < 0)
		goto error;
	*dictp = dict;
	return 0;
error:
	hwt_rep_dict_free(dict);
	return -ENOMEM;
}

void hwt_rep_dict_free(struct hwt_rep_dict *dict)
{
	if (!dict)
		return;
	hwt_rep_set_fini(&dict->strs);
	hwt_rep_set_fini(&dict->frames);
	hwt_rep_set_fini(&dict->stacks);
	free(dict->frame_views);
	free(dict->frame_labels);
	free(dict);
}

int hwt_rep_dict_str(struct hwt_rep_dict *dict, const char *s, size_t len, uint32_t *id)
{
	int err;

	if (!dict || !id || (!s && len))
		return -HWT_EINVAL;
	err = hwt_rep_set_intern(&dict->strs, s, len, id);
	return err < 0 ? err : 0;
}

const char *hwt_rep_dict_str_get(const struct hwt_rep_dict *dict, uint32_t id)
{
	if (!dict || id >= dict->strs.n)
		return NULL;
	return (const char *)dict->strs.entries[id].data;
}

size_t hwt_rep_dict_nstr(const struct hwt_rep_dict *dict)
{
	return dict ? dict->strs.n : 0;
}

static int str_or_zero(struct hwt_rep_dict *dict, const char *s, uint32_t *id)
{
	if (!s) {
		*id = 0;
		return 0;
	}
	return hwt_rep_dict_str(dict, s, strlen(s), id);
}

/* Makes room for frame id `n` in the per-frame arrays. */
static int frame_reserve(struct hwt_rep_dict *dict, size_t n)
{
	size_t cap;
	struct hwt_rep_frame **v;
	uint32_t *l;

	if (n < dict->frame_views_cap)
		return 0;
	cap = dict->frame_views_cap ? dict->frame_views_cap * 2 : 256;
	v = realloc(dict->frame_views, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	dict->frame_views = v;
	l = realloc(dict->frame_labels, cap * sizeof(*l));
	if (!l)
		return -ENOMEM;
	dict->frame_labels = l;
	dict->frame_views_cap = cap;
	return 0;
}

/* Builds the resolved view and the label of a new frame. On failure the
 * view stays NULL and the next lookup of the frame tries again. */
static int frame_view(struct hwt_rep_dict *dict, uint32_t id, const struct hwt_rep_frame_key *k)
{
	struct hwt_rep_frame *f;
	uint32_t label;
	int err;

	dict->frame_views[id] = NULL;
	if (k->function) {
		label = k->function;
	} else if (k->object) {
		/* "[libc.so.6]": the basename reads better in a flame graph. */
		const char *obj = hwt_rep_dict_str_get(dict, k->object), *slash = strrchr(obj, '/');
		char buf[512];
		int n;

		if (obj[0] == '[') {
			label = k->object;
		} else {
			n = snprintf(buf, sizeof(buf), "[%s]", slash ? slash + 1 : obj);
			if (n < 0 || (size_t)n >= sizeof(buf))
				n = (int)sizeof(buf) - 1;
			err = hwt_rep_dict_str(dict, buf, (size_t)n, &label);
			if (err < 0)
				return err;
		}
	} else {
		err = hwt_rep_dict_str(dict, "[unknown]", 9, &label);
		if (err < 0)
			return err;
	}
	f = hwt_rep_arena_alloc(&dict->frames.arena, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->function = k->function ? hwt_rep_dict_str_get(dict, k->function) : NULL;
	f->object = k->object ? hwt_rep_dict_str_get(dict, k->object) : NULL;
	f->file = k->file ? hwt_rep_dict_str_get(dict, k->file) : NULL;
	f->line = k->line;
	f->kind = k->kind;
	f->addr = k->addr;
	dict->frame_labels[id] = label;
	dict->frame_views[id] = f;
	return 0;
}

int hwt_rep_dict_frame(struct hwt_rep_dict *dict, const struct hwt_rep_frame *frame, uint32_t *id)
{
	struct hwt_rep_frame_key k;
	int err;

	if (!dict || !frame || !id)
		return -HWT_EINVAL;
	memset(&k, 0, sizeof(k));
	if ((err = str_or_zero(dict, frame->function, &k.function)) < 0 ||
	    (err = str_or_zero(dict, frame->object, &k.object)) < 0 ||
	    (err = str_or_zero(dict, frame->file, &k.file)) < 0)
		return err;
	k.line = frame->line;
	k.kind = frame->kind < HWT_REP_KIND_COUNT_ ? frame->kind : HWT_REP_KIND_UNKNOWN;
	k.addr = frame->addr;
	err = frame_reserve(dict, dict->frames.n);
	if (err < 0)
		return err;
	err = hwt_rep_set_intern(&dict->frames, &k, sizeof(k), id);
	if (err < 0)
		return err;
	if (err == 1 || !dict->frame_views[*id])
		return frame_view(dict, *id, &k);
	return 0;
}

const struct hwt_rep_frame *hwt_rep_dict_frame_get(const struct hwt_rep_dict *dict, uint32_t id)
{
	if (!dict || id >= dict->frames.n)
		return NULL;
	return dict->frame_views[id];
}

size_t hwt_rep_dict_nframes(const struct hwt_rep_dict *dict)
{
	return dict ? dict->frames.n : 0;
}

const char *hwt_rep_frame_label(const struct hwt_rep_dict *dict, uint32_t frame_id)
{
	if (!dict || frame_id >= dict->frames.n)
		return NULL;
	return hwt_rep_dict_str_get(dict, dict->frame_labels[frame_id]);
}

int hwt_rep_dict_stack(struct hwt_rep_dict *dict, const uint32_t *frame_ids, size_t n, uint32_t *id)
{
	int err;

	if (!dict || !id || (n && !frame_ids) || n > HWT_REP_MAX_DEPTH)
		return -HWT_EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (frame_ids[i] >= dict->frames.n)
			return -HWT_EINVAL;
	}
	err = hwt_rep_set_intern(&dict->stacks, frame_ids, n * sizeof(*frame_ids), id);
	return err < 0 ? err : 0;
}

size_t hwt_rep_dict_stack_get(const struct hwt_rep_dict *dict, uint32_t id,
			      const uint32_t **frame_ids)
{
	size_t len;

	if (!dict || id >= dict->stacks.n) {
		if (frame_ids)
			*frame_ids = NULL;
		return 0;
	}
	if (frame_ids)
		*frame_ids = (const uint32_t *)hwt_rep_set_key(&dict->stacks, id, &len);
	else
		hwt_rep_set_key(&dict->stacks, id, &len);
	return len / sizeof(uint32_t);
}
