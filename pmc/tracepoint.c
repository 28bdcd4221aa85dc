/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pmc/tracepoint.c - tracepoints from tracefs: "subsys:event" names (globs
 * allowed) to the ids perf_event_attr.config wants, and listing them. On a
 * fresh boot tracefs may not be mounted; like perf we mount it at
 * /sys/kernel/tracing when we are allowed to.
 */
#include "pmc/pmc_int.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static bool has_events(const char *root)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/events", root);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int hwt_pmc_tracefs_events(const struct hwt_pmc_config *cfg, char *buf, size_t len)
{
	static const char *const roots[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
	const char *root = NULL;
	int n;

	if (cfg && cfg->tracefs_root) {
		if (has_events(cfg->tracefs_root))
			root = cfg->tracefs_root;
	} else {
		for (size_t i = 0; i < HWT_ARRAY_SIZE(roots) && !root; i++) {
			if (has_events(roots[i]))
				root = roots[i];
		}
		/* Not mounted: mount it as perf does (needs CAP_SYS_ADMIN;
		 * failure just means "no tracepoints"). */
		if (!root && mount("nodev", roots[0], "tracefs", 0, NULL) == 0 &&
		    has_events(roots[0]))
			root = roots[0];
	}
	if (!root)
		return -ENOENT;
	n = snprintf(buf, len, "%s/events", root);
	if (n < 0 || (size_t)n >= len)
		return -HWT_ETOOBIG;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the sub-folders of dir that match glob (or all). */
static int list_dirs(const char *dir, const char *glob, char ***out, size_t *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = NULL;
	size_t n = 0, cap = 0;

	*out = NULL;
	*count = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (glob && fnmatch(glob, de->d_name, 0) != 0)
			continue;
		if (n == cap) {
			char **nv;

			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				goto nomem;
			v = nv;
		}
		v[n] = strdup(de->d_name);
		if (!v[n])
			goto nomem;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), name_cmp);
	*out = v;
	*count = n;
	return 0;
nomem:
	closedir(d);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return -ENOMEM;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int hwt_pmc_tracepoint_resolve(const struct hwt_pmc_config *cfg, const char *subsys,
			       const char *event,
			       int (*fn)(void *ctx, const char *name, uint64_t id), void *ctx)
{
	char root[4096], path[4096 + 512], idbuf[32], name[HWT_PMC_NAME_MAX];
	char **subs = NULL;
	size_t nsubs = 0;
	int err, matches = 0;

	err = hwt_pmc_tracefs_events(cfg, root, sizeof(root));
	if (err < 0)
		return err;
	err = list_dirs(root, subsys, &subs, &nsubs);
	if (err < 0)
		return err;
	for (size_t s = 0; s < nsubs && err >= 0; s++) {
		char **evs = NULL;
		size_t nevs = 0;

		snprintf(path, sizeof(path), "%s/%s", root, subs[s]);
		if (list_dirs(path, event, &evs, &nevs) < 0)
			continue;
		for (size_t e = 0; e < nevs && err >= 0; e++) {
			char *end;
			unsigned long long id;

			snprintf(path, sizeof(path), "%s/%s/%s/id", root, subs[s], evs[e]);
			if (hwt_pmc_read_text(path, idbuf, sizeof(idbuf)) <= 0)
				continue;
			id = strtoull(idbuf, &end, 10);
			if (*end)
				continue;
			snprintf(name, sizeof(name), "%s:%s", subs[s], evs[e]);
			err = fn(ctx, name, id);
			if (err >= 0)
				matches++;
		}
		free_names(evs, nevs);
	}
	free_names(subs, nsubs);
	if (err < 0)
		return err;
	return matches ? matches : -HWT_ENOEVENT;
}

struct list_ctx {
	const char *pattern;
	hwt_pmc_list_fn fn;
	void *ctx;
};

static int list_one(void *vctx, const char *name, uint64_t id)
{
	struct list_ctx *lc = vctx;
	struct hwt_pmc_list_entry e;
	int ret;

	(void)id;
	if (!hwt_pmc_match(name, lc->pattern))
		return 0;
	memset(&e, 0, sizeof(e));
	e.kind = HWT_PMC_LIST_TRACEPOINT;
	e.name = name;
	e.present = true;
	ret = lc->fn(lc->ctx, &e);
	/* A non-zero return from the user stops the walk; carry it as a
	 * positive value through the negative-is-error resolver. */
	return ret ? -(HWT_ELAST + ret) : 0;
}

int hwt_pmc_tracepoint_list(const struct hwt_pmc_config *cfg, const char *pattern,
			    hwt_pmc_list_fn fn, void *ctx)
{
	struct list_ctx lc = {pattern, fn, ctx};
	int ret = hwt_pmc_tracepoint_resolve(cfg, "*", "*", list_one, &lc);

	if (ret <= -HWT_ELAST)
		return -ret - HWT_ELAST;
	if (ret == -ENOENT || ret == -HWT_ENOEVENT || ret == -EACCES)
		return 0; /* no tracefs: nothing to list */
	return ret < 0 ? ret : 0;
}
