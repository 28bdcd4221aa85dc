/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/cache.c - the object cache: opens each object once (keyed by
 * build-id, else device + inode + size + mtime), finds its separate debug
 * file, picks its symbol sources, and owns everything until the cache is
 * freed. Opening is serialised by the cache lock (it is rare); lookups never
 * take it.
 */
#include "symbolize/sym_int.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void hwt_sym_config_init(struct hwt_sym_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->system_debug_dir = "/usr/lib/debug";
	cfg->max_section_size = 4ull << 30;
}

void sym_log(const struct hwt_sym_obj *obj, enum hwt_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (!obj || !obj->cache)
		return;
	va_start(ap, fmt);
	hwt_vlog(&obj->cache->cfg.logger, level, fmt, ap);
	va_end(ap);
}

int hwt_sym_cache_alloc(const struct hwt_sym_config *cfg, struct hwt_sym_cache **out)
{
	struct hwt_sym_cache *c;
	struct hwt_sym_config def;

	if (!out)
		return -HWT_EINVAL;
	*out = NULL;
	hwt_sym_config_init(&def);
	if (cfg && hwt_opts_copy(&def, sizeof(def), cfg) < 0)
		return -HWT_EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cfg = def;
	if (!c->cfg.max_section_size)
		c->cfg.max_section_size = 4ull << 30;
	pthread_mutex_init(&c->lock, NULL);
	if (def.debug_dir && *def.debug_dir && !(c->debug_dir = strdup(def.debug_dir)))
		goto error;
	if (def.system_debug_dir && *def.system_debug_dir &&
	    !(c->system_debug_dir = strdup(def.system_debug_dir)))
		goto error;
	c->cfg.debug_dir = c->debug_dir;
	c->cfg.system_debug_dir = c->system_debug_dir;
	*out = c;
	return 0;
error:
	hwt_sym_cache_free(c);
	return -ENOMEM;
}

static void obj_free(struct hwt_sym_obj *obj)
{
	if (!obj)
		return;
	sym_dwarf_free(obj->dw);
	for (size_t i = 0; i < obj->nsyms; i++) {
		const char *d = atomic_load(&obj->syms[i].demangled);

		if (d && d != obj->syms[i].name)
			free((char *)d);
	}
	free(obj->syms);
	sym_keys_fini(&obj->sym_keys);
	free(obj->text);
	free(obj->strtab_copy);
	free(obj->plt_names);
	sym_elf_close(obj->elf);
	sym_elf_close(obj->dbg);
	free(obj->path);
	free(obj->debug_path);
	pthread_mutex_destroy(&obj->lock);
	free(obj);
}

void hwt_sym_cache_free(struct hwt_sym_cache *cache)
{
	if (!cache)
		return;
	while (cache->objs) {
		struct hwt_sym_obj *o = cache->objs;

		cache->objs = o->next;
		obj_free(o);
	}
	free(cache->debug_dir);
	free(cache->system_debug_dir);
	pthread_mutex_destroy(&cache->lock);
	free(cache);
}

static struct hwt_sym_obj *obj_new(struct hwt_sym_cache *cache, enum hwt_sym_obj_kind kind,
				   const char *path)
{
	struct hwt_sym_obj *obj = calloc(1, sizeof(*obj));
	const char *slash;

	if (!obj)
		return NULL;
	obj->cache = cache;
	obj->kind = kind;
	pthread_mutex_init(&obj->lock, NULL);
	obj->path = strdup(path);
	if (!obj->path) {
		obj_free(obj);
		return NULL;
	}
	slash = strrchr(obj->path, '/');
	obj->name = slash && slash[1] ? (char *)slash + 1 : obj->path;
	return obj;
}

static void obj_link(struct hwt_sym_cache *cache, struct hwt_sym_obj *obj)
{
	obj->next = cache->objs;
	cache->objs = obj;
}

/* Symbol sources and debug file of a freshly loaded ELF object. */
static int elf_setup(struct hwt_sym_obj *obj)
{
	struct sym_elf *e = obj->elf;
	int ret;

	memcpy(obj->build_id, e->build_id, e->build_id_len);
	obj->build_id_len = e->build_id_len;
	if (!e->has_debug_info) {
		ret = sym_debugfile_find(obj);
		if (ret < 0 && ret != -ENOENT)
			return ret;
	}
	if (e->has_debug_info)
		obj->dwelf = e;
	else if (obj->dbg && obj->dbg->has_debug_info)
		obj->dwelf = obj->dbg;
	ret = sym_symtab_load(obj, e, false);
	if (ret == 0 && obj->dbg) {
		free(obj->syms);
		obj->syms = NULL;
		ret = sym_symtab_load(obj, obj->dbg, false);
	}
	if (ret == 0) {
		free(obj->syms);
		obj->syms = NULL;
		ret = sym_symtab_load(obj, e, true);
	}
	if (ret < 0) {
		sym_log(obj, HWT_LOG_WARN, "%s: unreadable symbol table (%s)", obj->path,
			hwt_strerror(ret));
		free(obj->syms);
		obj->syms = NULL;
		obj->nsyms = 0;
	}
	if (!obj->dwelf && obj->nsyms == 0)
		sym_log(obj, HWT_LOG_WARN,
			"%s: no symbols and no debug information (stripped, and no debug file "
			"found); addresses show as %s+offset",
			obj->path, obj->name);
	/* After the check above: stub names are no symbols of the file. */
	if (sym_symtab_add_plt(obj, e) < 0)
		return -ENOMEM;
	return 0;
}

static struct hwt_sym_obj *find_by_build_id(struct hwt_sym_cache *cache, const uint8_t *id,
					    size_t len)
{
	for (struct hwt_sym_obj *o = cache->objs; o && len; o = o->next) {
		if (o->kind == HWT_SYM_OBJ_ELF && o->build_id_len == len &&
		    !memcmp(o->build_id, id, len))
			return o;
	}
	return NULL;
}

int hwt_sym_obj_open(struct hwt_sym_cache *cache, const char *path, const uint8_t *build_id,
		     size_t build_id_len, struct hwt_sym_obj **out)
{
	struct hwt_sym_obj *obj = NULL, *o;
	struct stat st;
	int ret;

	if (!cache || !path || !out || build_id_len > 64 || (build_id_len && !build_id))
		return -HWT_EINVAL;
	*out = NULL;
	pthread_mutex_lock(&cache->lock);
	if (build_id_len && (o = find_by_build_id(cache, build_id, build_id_len))) {
		*out = o;
		ret = 0;
		goto unlock;
	}
	if (stat(path, &st) < 0) {
		ret = -errno;
		goto unlock;
	}
	for (o = cache->objs; o; o = o->next) {
		if (o->kind == HWT_SYM_OBJ_ELF && o->dev == st.st_dev && o->ino == st.st_ino &&
		    o->fsize == (uint64_t)st.st_size &&
		    o->mtime_ns == (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec) {
			if (build_id_len && (o->build_id_len != build_id_len ||
					     memcmp(o->build_id, build_id, build_id_len))) {
				ret = -HWT_EVERSION;
				goto unlock;
			}
			*out = o;
			ret = 0;
			goto unlock;
		}
	}
	obj = obj_new(cache, HWT_SYM_OBJ_ELF, path);
	if (!obj) {
		ret = -ENOMEM;
		goto unlock;
	}
	obj->dev = st.st_dev;
	obj->ino = st.st_ino;
	obj->fsize = (uint64_t)st.st_size;
	obj->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	ret = sym_elf_open(path, NULL, 0, cache->cfg.max_section_size, &obj->elf);
	if (ret < 0)
		goto error;
	if (build_id_len && (obj->elf->build_id_len != build_id_len ||
			     memcmp(obj->elf->build_id, build_id, build_id_len))) {
		ret = -HWT_EVERSION;
		goto error;
	}
	if ((o = find_by_build_id(cache, obj->elf->build_id, obj->elf->build_id_len))) {
		/* the same object under another path */
		obj_free(obj);
		*out = o;
		ret = 0;
		goto unlock;
	}
	ret = elf_setup(obj);
	if (ret < 0)
		goto error;
	obj_link(cache, obj);
	*out = obj;
	ret = 0;
	goto unlock;
error:
	obj_free(obj);
unlock:
	pthread_mutex_unlock(&cache->lock);
	return ret;
}

int hwt_sym_obj_open_image(struct hwt_sym_cache *cache, const char *name, const void *data,
			   size_t size, struct hwt_sym_obj **out)
{
	struct hwt_sym_obj *obj, *o;
	int ret;

	if (!cache || !name || !data || !out)
		return -HWT_EINVAL;
	*out = NULL;
	pthread_mutex_lock(&cache->lock);
	obj = obj_new(cache, HWT_SYM_OBJ_ELF, name);
	if (!obj) {
		ret = -ENOMEM;
		goto unlock;
	}
	ret = sym_elf_open(NULL, data, size, cache->cfg.max_section_size, &obj->elf);
	if (ret < 0)
		goto error;
	if ((o = find_by_build_id(cache, obj->elf->build_id, obj->elf->build_id_len))) {
		obj_free(obj);
		*out = o;
		ret = 0;
		goto unlock;
	}
	ret = elf_setup(obj);
	if (ret < 0)
		goto error;
	obj_link(cache, obj);
	*out = obj;
	goto unlock;
error:
	obj_free(obj);
unlock:
	pthread_mutex_unlock(&cache->lock);
	return ret;
}

static int open_text(struct hwt_sym_cache *cache, const char *path, enum hwt_sym_obj_kind kind,
		     struct hwt_sym_obj **out)
{
	struct hwt_sym_obj *obj;
	int ret;

	if (!cache || !path || !out)
		return -HWT_EINVAL;
	*out = NULL;
	pthread_mutex_lock(&cache->lock);
	/* Text tables change while a system runs: the path alone is the key,
	 * and a cache sees the table as it was first read. */
	for (obj = cache->objs; obj; obj = obj->next) {
		if (obj->kind == kind && !strcmp(obj->path, path)) {
			*out = obj;
			pthread_mutex_unlock(&cache->lock);
			return 0;
		}
	}
	obj = obj_new(cache, kind, path);
	if (!obj) {
		ret = -ENOMEM;
		goto unlock;
	}
	if (kind == HWT_SYM_OBJ_KALLSYMS) {
		obj->name = "[kernel.kallsyms]";
		ret = sym_kallsyms_load(obj, path);
	} else {
		ret = sym_perfmap_load(obj, path);
	}
	if (ret < 0) {
		obj_free(obj);
		goto unlock;
	}
	obj_link(cache, obj);
	*out = obj;
unlock:
	pthread_mutex_unlock(&cache->lock);
	return ret;
}

int hwt_sym_obj_open_kallsyms(struct hwt_sym_cache *cache, const char *path,
			      struct hwt_sym_obj **out)
{
	return open_text(cache, path, HWT_SYM_OBJ_KALLSYMS, out);
}

int hwt_sym_obj_open_perfmap(struct hwt_sym_cache *cache, const char *path,
			     struct hwt_sym_obj **out)
{
	return open_text(cache, path, HWT_SYM_OBJ_PERFMAP, out);
}

int hwt_sym_obj_info(const struct hwt_sym_obj *obj, struct hwt_sym_obj_info *info)
{
	if (!obj || !info)
		return -HWT_EINVAL;
	memset(info, 0, sizeof(*info));
	info->kind = obj->kind;
	info->path = obj->path;
	info->name = obj->name;
	info->debug_path = obj->debug_path;
	memcpy(info->build_id, obj->build_id, obj->build_id_len);
	info->build_id_len = obj->build_id_len;
	info->sources = obj->sym_source | (obj->dwelf ? HWT_SYM_SRC_DWARF : 0);
	info->elf_type = obj->elf ? obj->elf->type : 0;
	info->nsymbols = obj->nsyms;
	info->addr_bits = obj->elf && !obj->elf->is64 ? 32 : 64;
	sym_dwarf_stats(obj, &info->dwarf_units, &info->dwarf_units_native,
			&info->dwarf_units_libdwarf);
	return 0;
}

int hwt_sym_obj_section(const struct hwt_sym_obj *obj, const char *name, uint64_t *addr,
			uint64_t *size)
{
	if (!obj || !name || !addr || !size)
		return -HWT_EINVAL;
	for (size_t i = 0; obj->elf && i < obj->elf->nsecs; i++) {
		const struct sym_sec *s = &obj->elf->secs[i];

		if (s->name && !strcmp(s->name, name)) {
			*addr = s->addr;
			*size = s->size;
			return 0;
		}
	}
	return -HWT_ENOSYM;
}

int hwt_sym_obj_section_data(struct hwt_sym_obj *obj, const char *name,
			     enum hwt_sym_section_file file, const uint8_t **data, uint64_t *size,
			     uint64_t *addr)
{
	struct sym_elf *e;
	struct sym_sec *s;
	int err;

	if (!obj || !name || !data || !size || !addr)
		return -HWT_EINVAL;
	e = file == HWT_SYM_SECTION_DEBUG ? obj->dbg : obj->elf;
	if (!e || !(s = sym_elf_section(e, name)))
		return -HWT_ENOSYM;
	/* Decompression fills the section's buffer once: under the object's
	 * lock, as the DWARF index reads sections. */
	pthread_mutex_lock(&obj->lock);
	err = sym_elf_section_data(e, s, data, size);
	pthread_mutex_unlock(&obj->lock);
	if (err < 0)
		return err;
	*addr = s->addr;
	return 0;
}

int hwt_sym_obj_map(const struct hwt_sym_obj *obj, uint64_t map_start, uint64_t map_pgoff,
		    uint64_t runtime, uint64_t *addr)
{
	uint64_t off;

	if (!obj || !addr)
		return -HWT_EINVAL;
	if (obj->kind != HWT_SYM_OBJ_ELF) {
		*addr = runtime;
		return 0;
	}
	if (runtime < map_start)
		return -HWT_ENOSYM;
	off = runtime - map_start + map_pgoff;
	/* The file offset lies in a segment's file image; failing that, in
	 * the zero-filled tail the kernel maps right after it (.bss). */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < obj->elf->nsegs; i++) {
			const struct sym_seg *s = &obj->elf->segs[i];
			uint64_t len = pass ? s->memsz : s->filesz;

			if (off >= s->offset && off - s->offset < len) {
				*addr = off - s->offset + s->vaddr;
				return 0;
			}
		}
	}
	if (obj->elf->nsegs == 0) {
		/* ET_REL (a kernel module): offsets within the image */
		*addr = off;
		return 0;
	}
	return -HWT_ENOSYM;
}

int hwt_sym_obj_file_offset(const struct hwt_sym_obj *obj, uint64_t addr, uint64_t *offset)
{
	if (!obj || !offset)
		return -HWT_EINVAL;
	if (obj->kind != HWT_SYM_OBJ_ELF)
		return -HWT_ENOSYM;
	for (size_t i = 0; i < obj->elf->nsegs; i++) {
		const struct sym_seg *s = &obj->elf->segs[i];

		if (addr >= s->vaddr && addr - s->vaddr < s->filesz) {
			*offset = addr - s->vaddr + s->offset;
			return 0;
		}
	}
	return -HWT_ENOSYM;
}
