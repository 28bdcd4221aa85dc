/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/debugfile.c - finds the separate debug file of a stripped object,
 * as gdb and binutils do: first by build-id (DIR/.build-id/xx/rest.debug in
 * the user's debug directory, then the system one), then by .gnu_debuglink
 * (next to the object, in its .debug/ subdirectory, in the user's directory,
 * and under the system directory at the object's own path), accepting a
 * debuglink candidate only when its CRC-32 matches and a build-id candidate
 * only when its build-id matches.
 */
#include "symbolize/sym_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

uint32_t sym_crc32(uint32_t crc, const void *buf, size_t len)
{
	/* .gnu_debuglink uses the zlib CRC-32 (polynomial 0xedb88320). */
	const uint8_t *p = buf;

	while (len) {
		uInt n = len > UINT32_MAX ? UINT32_MAX : (uInt)len;

		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

static int try_build_id(struct hwt_sym_obj *obj, const char *dir)
{
	char path[PATH_MAX];
	size_t n;
	struct sym_elf *e;

	if (!dir || !*dir || obj->build_id_len < 2)
		return -ENOENT;
	n = (size_t)snprintf(path, sizeof(path), "%s/.build-id/%02x/", dir, obj->build_id[0]);
	for (size_t i = 1; i < obj->build_id_len && n + 3 < sizeof(path); i++)
		n += (size_t)snprintf(path + n, sizeof(path) - n, "%02x", obj->build_id[i]);
	if (n + 7 >= sizeof(path))
		return -ENOENT;
	strcat(path, ".debug");
	if (access(path, R_OK) != 0)
		return -ENOENT;
	if (sym_elf_open(path, NULL, 0, obj->cache->cfg.max_section_size, &e) < 0)
		return -ENOENT;
	if (e->build_id_len != obj->build_id_len ||
	    memcmp(e->build_id, obj->build_id, obj->build_id_len) != 0) {
		sym_log(obj, HWT_LOG_WARN, "%s: build-id does not match %s, ignored", path,
			obj->path);
		sym_elf_close(e);
		return -ENOENT;
	}
	obj->dbg = e;
	obj->debug_path = strdup(path);
	return obj->debug_path ? 0 : -ENOMEM;
}

static int try_link(struct hwt_sym_obj *obj, const char *path)
{
	struct sym_elf *e;

	if (access(path, R_OK) != 0 || same_file(path, obj->path))
		return -ENOENT;
	if (sym_elf_open(path, NULL, 0, obj->cache->cfg.max_section_size, &e) < 0)
		return -ENOENT;
	if (sym_crc32(0, e->data, e->size) != obj->elf->debuglink_crc) {
		sym_log(obj, HWT_LOG_WARN, "%s: CRC does not match the debuglink of %s, ignored",
			path, obj->path);
		sym_elf_close(e);
		return -ENOENT;
	}
	obj->dbg = e;
	obj->debug_path = strdup(path);
	return obj->debug_path ? 0 : -ENOMEM;
}

static int try_debuglink(struct hwt_sym_obj *obj)
{
	const char *link = obj->elf->debuglink;
	const char *user = obj->cache->debug_dir, *sys = obj->cache->system_debug_dir;
	char dir[PATH_MAX], path[PATH_MAX];
	char *slash;
	int err;

	if (!link || strchr(link, '/') || !obj->path)
		return -ENOENT;
	if (!realpath(obj->path, dir))
		snprintf(dir, sizeof(dir), "%s", obj->path);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		strcpy(dir, ".");

	const char *const subdirs[] = {"", "/.debug"};
	for (size_t i = 0; i < HWT_ARRAY_SIZE(subdirs); i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s%s/%s", dir, subdirs[i], link) >=
		    sizeof(path))
			continue;
		if ((err = try_link(obj, path)) != -ENOENT)
			return err;
	}
	const char *const roots[] = {user, sys};
	for (size_t i = 0; i < HWT_ARRAY_SIZE(roots); i++) {
		if (!roots[i] || !*roots[i])
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", roots[i], link) < sizeof(path) &&
		    (err = try_link(obj, path)) != -ENOENT)
			return err;
		if ((size_t)snprintf(path, sizeof(path), "%s%s/%s", roots[i], dir, link) <
			sizeof(path) &&
		    (err = try_link(obj, path)) != -ENOENT)
			return err;
	}
	return -ENOENT;
}

int sym_debugfile_find(struct hwt_sym_obj *obj)
{
	int err;

	if (obj->cache->cfg.no_debug_files)
		return -ENOENT;
	err = try_build_id(obj, obj->cache->debug_dir);
	if (err == -ENOENT)
		err = try_build_id(obj, obj->cache->system_debug_dir);
	if (err == -ENOENT)
		err = try_debuglink(obj);
	return err;
}
