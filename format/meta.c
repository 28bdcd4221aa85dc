/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/meta.c - typed key/value metadata: the entry encoding of META
 * chunks, and the store that the reader and the session present through
 * hwt_fmt_*_meta*(). Entries live at stable addresses so that the pointers
 * handed out stay valid while a pipe session keeps adding entries.
 */
#include "format/format_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int fmt_meta_encode(struct hwt_buf *buf, uint32_t type, const char *key, const void *value,
		    size_t len)
{
	size_t klen = strlen(key);
	uint8_t eh[FMT_META_ENTRY_SIZE];
	int err;

	if (klen == 0 || klen > FMT_META_KEY_MAX || len > FMT_META_VALUE_MAX)
		return -HWT_EINVAL;
	eh[0] = (uint8_t)type;
	eh[1] = 0;
	hwt_put_le16(eh + 2, (uint16_t)klen);
	hwt_put_le32(eh + 4, (uint32_t)len);
	err = hwt_buf_reserve(buf, sizeof(eh) + klen + len);
	if (err < 0)
		return err;
	hwt_buf_append(buf, eh, sizeof(eh));
	hwt_buf_append(buf, key, klen);
	hwt_buf_append(buf, value, len);
	return 0;
}

void fmt_meta_store_init(struct fmt_meta_store *st)
{
	memset(st, 0, sizeof(*st));
}

static void meta_free(struct hwt_fmt_meta *m)
{
	if (!m)
		return;
	free((void *)m->key);
	if (m->type == HWT_FMT_META_STR || m->type == HWT_FMT_META_BYTES)
		free((void *)m->v.bytes);
	free(m);
}

void fmt_meta_store_fini(struct fmt_meta_store *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++)
		meta_free(st->items[i]);
	free(st->items);
	for (size_t i = 0; i < st->nold; i++)
		free(st->old[i]);
	free(st->old);
	fmt_meta_store_init(st);
}

static struct hwt_fmt_meta *store_lookup(const struct fmt_meta_store *st, const char *key,
					 size_t key_len)
{
	for (size_t i = st->n; i-- > 0;) {
		const char *k = st->items[i]->key;

		if (strlen(k) == key_len && !memcmp(k, key, key_len))
			return st->items[i];
	}
	return NULL;
}

int fmt_meta_store_set(struct fmt_meta_store *st, uint32_t type, const char *key, size_t key_len,
		       const void *value, size_t len)
{
	struct hwt_fmt_meta *m = store_lookup(st, key, key_len);
	uint8_t *val = NULL;
	bool fresh = false;

	if (type == HWT_FMT_META_U64 || type == HWT_FMT_META_I64) {
		if (len != 8)
			return -HWT_EFORMAT;
	} else {
		/* +1: STR values get a NUL; BYTES too, harmlessly. */
		val = malloc(len + 1);
		if (!val)
			return -ENOMEM;
		if (len)
			memcpy(val, value, len);
		val[len] = '\0';
	}
	if (!m) {
		if (st->n == st->cap) {
			size_t cap = st->cap ? st->cap * 2 : 32;
			struct hwt_fmt_meta **items = realloc(st->items, cap * sizeof(*items));

			if (!items)
				goto nomem;
			st->items = items;
			st->cap = cap;
		}
		m = calloc(1, sizeof(*m));
		if (!m)
			goto nomem;
		m->key = strndup(key, key_len);
		if (!m->key) {
			free(m);
			goto nomem;
		}
		fresh = true;
	} else if (m->type == HWT_FMT_META_STR || m->type == HWT_FMT_META_BYTES) {
		/* Replaced: keep the old value alive until fini, since callers
		 * were promised that value pointers live as long as the object. */
		if (st->nold == st->capold) {
			size_t cap = st->capold ? st->capold * 2 : 8;
			void **old = realloc(st->old, cap * sizeof(*old));

			if (!old)
				goto nomem;
			st->old = old;
			st->capold = cap;
		}
		st->old[st->nold++] = (void *)m->v.bytes;
	}
	m->type = type;
	m->len = (uint32_t)len;
	if (type == HWT_FMT_META_U64)
		m->v.u64 = hwt_le64(value);
	else if (type == HWT_FMT_META_I64)
		m->v.i64 = (int64_t)hwt_le64(value);
	else
		m->v.bytes = val;
	if (fresh)
		st->items[st->n++] = m;
	return 0;
nomem:
	free(val);
	return -ENOMEM;
}

int fmt_meta_store_set_u64(struct fmt_meta_store *st, const char *key, uint64_t v)
{
	uint8_t b[8];

	hwt_put_le64(b, v);
	return fmt_meta_store_set(st, HWT_FMT_META_U64, key, strlen(key), b, 8);
}

int fmt_meta_store_set_str(struct fmt_meta_store *st, const char *key, const char *v)
{
	return fmt_meta_store_set(st, HWT_FMT_META_STR, key, strlen(key), v, strlen(v));
}

const struct hwt_fmt_meta *fmt_meta_store_find(const struct fmt_meta_store *st, const char *key)
{
	if (!key)
		return NULL;
	return store_lookup(st, key, strlen(key));
}

int fmt_meta_decode(struct fmt_meta_store *st, const uint8_t *p, size_t len)
{
	uint32_t count;
	size_t pos = FMT_META_HEADER_SIZE;

	if (len < FMT_META_HEADER_SIZE)
		return -HWT_EFORMAT;
	/* A new payload format would be a new major version of the file: an
	 * older reader must not misread it. */
	if (hwt_le16(p) != FMT_META_FORMAT)
		return -HWT_EVERSION;
	count = hwt_le32(p + 4);
	for (uint32_t i = 0; i < count; i++) {
		uint32_t type, klen, vlen;
		const uint8_t *key;
		int err;

		if (len - pos < FMT_META_ENTRY_SIZE)
			return -HWT_EFORMAT;
		type = p[pos];
		klen = hwt_le16(p + pos + 2);
		vlen = hwt_le32(p + pos + 4);
		pos += FMT_META_ENTRY_SIZE;
		if (klen == 0 || klen > len - pos || vlen > len - pos - klen)
			return -HWT_EFORMAT;
		key = p + pos;
		pos += klen;
		if (memchr(key, '\0', klen))
			return -HWT_EFORMAT;
		switch (type) {
		case HWT_FMT_META_U64:
		case HWT_FMT_META_I64:
			if (vlen != 8)
				return -HWT_EFORMAT;
			/* fallthrough */
		case HWT_FMT_META_STR:
		case HWT_FMT_META_BYTES:
			err = fmt_meta_store_set(st, type, (const char *)key, klen, p + pos, vlen);
			if (err < 0)
				return err;
			break;
		default:
			/* A type from a newer minor version: skip it. */
			break;
		}
		pos += vlen;
	}
	return 0;
}
