/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/syms.c - a small address-space tracker for the probe runtime:
 * which object is mapped where in each process (from MMAP/MMAP2, FORK and
 * exec COMM records, or /proc/PID/maps for live processes we have no
 * sideband for), which command each thread runs, and the function an ip
 * is in (symbolize/, kernel ips through kallsyms). Resolved frames are
 * cached per (process image, ip) as report/ dict frame ids, so a hot probe
 * symbolizes each distinct ip once and then only hashes.
 *
 * This is deliberately self-contained; the project's shared address-space
 * object (symbolize's hwt_sym_aspace, being written on another branch) can
 * replace it behind prb_syms_* later.
 */
#include "probe/probe_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct region {
	uint64_t start, end, pgoff;
	char *path;
	struct hwt_sym_obj *obj;
	int state; /* 0 not opened yet, 1 open, -1 cannot be opened */
};

struct space {
	int32_t pid;
	uint32_t gen;	     /* bumped when the image changes (exec, new maps) */
	struct region *maps; /* sorted by start, not overlapping */
	size_t n, cap;
	bool proc_tried;
};

struct prb_syms {
	struct hwt_rep_dict *dict;
	struct hwt_sym_cache *cache;
	struct space *spaces;
	size_t nspaces, cap;
	struct prb_map by_pid; /* (pid, 0) -> index + 1 */
	struct prb_map comms;  /* (tid, 0) -> dict string id */
	struct prb_map frames; /* (pid | gen << 32, ip << 1 | caller) -> frame id << 1 | known */
	struct hwt_sym_obj *kallsyms;
	int kallsyms_state;
	char proc_root[256];
	bool live;
	struct hwt_logger log;
};

int prb_syms_alloc(struct prb_syms **out, struct hwt_rep_dict *dict, const char *proc_root,
		   const struct hwt_logger *log)
{
	struct hwt_sym_config sc;
	struct prb_syms *s = calloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->dict = dict;
	snprintf(s->proc_root, sizeof(s->proc_root), "%s", proc_root ? proc_root : "/proc");
	if (log)
		s->log = *log;
	hwt_sym_config_init(&sc);
	sc.logger = s->log;
	if ((err = hwt_sym_cache_alloc(&sc, &s->cache)) < 0) {
		free(s);
		return err;
	}
	*out = s;
	return 0;
}

static void space_fini(struct space *sp)
{
	for (size_t i = 0; i < sp->n; i++)
		free(sp->maps[i].path);
	free(sp->maps);
	sp->maps = NULL;
	sp->n = sp->cap = 0;
}

void prb_syms_free(struct prb_syms *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nspaces; i++)
		space_fini(&s->spaces[i]);
	free(s->spaces);
	prb_map_fini(&s->by_pid);
	prb_map_fini(&s->comms);
	prb_map_fini(&s->frames);
	hwt_sym_cache_free(s->cache);
	free(s);
}

void prb_syms_set_live(struct prb_syms *s, bool live)
{
	s->live = live;
}

struct hwt_sym_cache *prb_syms_cache(struct prb_syms *s)
{
	return s->cache;
}

void prb_syms_set_kallsyms(struct prb_syms *s, struct hwt_sym_obj *kallsyms)
{
	s->kallsyms = kallsyms;
	s->kallsyms_state = 1;
}

bool prb_syms_is_kernel(const char *obj)
{
	return !strcmp(obj, "kernel") || !strcmp(obj, "vmlinux") ||
	       !strcmp(obj, "[kernel.kallsyms]");
}

static struct space *space_get(struct prb_syms *s, int32_t pid, bool create)
{
	uint64_t *ix = prb_map_get(&s->by_pid, (uint32_t)pid, 0);

	if (ix)
		return &s->spaces[*ix - 1];
	if (!create)
		return NULL;
	if (s->nspaces == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct space *sp = realloc(s->spaces, cap * sizeof(*sp));

		if (!sp)
			return NULL;
		s->spaces = sp;
		s->cap = cap;
	}
	if (prb_map_put(&s->by_pid, (uint32_t)pid, 0, s->nspaces + 1) < 0)
		return NULL;
	memset(&s->spaces[s->nspaces], 0, sizeof(s->spaces[0]));
	s->spaces[s->nspaces].pid = pid;
	return &s->spaces[s->nspaces++];
}

static int space_reserve(struct space *sp, size_t extra)
{
	if (sp->n + extra <= sp->cap)
		return 0;
	size_t cap = sp->cap ? sp->cap * 2 : 16;
	while (cap < sp->n + extra)
		cap *= 2;
	struct region *r = realloc(sp->maps, cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	sp->maps = r;
	sp->cap = cap;
	return 0;
}

/* Inserts [start, end) replacing whatever overlapped it (a new mapping
 * over an old one, as mmap(MAP_FIXED) does). */
static int space_insert(struct space *sp, uint64_t start, uint64_t end, uint64_t pgoff,
			const char *path)
{
	size_t i = 0, at;
	char *p = strdup(path);

	if (!p || space_reserve(sp, 2) < 0) {
		free(p);
		return -ENOMEM;
	}
	while (i < sp->n) {
		struct region *r = &sp->maps[i];

		if (r->end <= start || r->start >= end) {
			i++;
			continue;
		}
		if (r->start < start && r->end > end) {
			/* split: keep both outer parts */
			struct region tail = *r;

			tail.pgoff += end - r->start;
			tail.start = end;
			tail.path = strdup(r->path);
			if (!tail.path) {
				free(p);
				return -ENOMEM;
			}
			r->end = start;
			memmove(&sp->maps[i + 2], &sp->maps[i + 1], (sp->n - i - 1) * sizeof(*r));
			sp->maps[i + 1] = tail;
			sp->n++;
			break;
		}
		if (r->start < start) {
			r->end = start;
			i++;
		} else if (r->end > end) {
			r->pgoff += end - r->start;
			r->start = end;
			i++;
		} else {
			free(r->path);
			memmove(r, r + 1, (sp->n - i - 1) * sizeof(*r));
			sp->n--;
		}
	}
	for (at = 0; at < sp->n && sp->maps[at].start < start; at++)
		;
	memmove(&sp->maps[at + 1], &sp->maps[at], (sp->n - at) * sizeof(sp->maps[0]));
	sp->maps[at] = (struct region){start, end, pgoff, p, NULL, 0};
	sp->n++;
	sp->gen++;
	return 0;
}

int prb_syms_mmap(struct prb_syms *s, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		  const char *path)
{
	struct space *sp;

	if (!len || start + len < start || !path)
		return 0;
	if (!(sp = space_get(s, pid, true)))
		return -ENOMEM;
	return space_insert(sp, start, start + len, pgoff, path);
}

/* Loads /proc/PID/maps (executable file mappings) for a live process that
 * sent no sideband. */
static void load_proc_maps(struct prb_syms *s, struct space *sp)
{
	char path[300], line[4096];
	FILE *f;

	sp->proc_tried = true;
	snprintf(path, sizeof(path), "%s/%d/maps", s->proc_root, (int)sp->pid);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b, off;
		char perms[8];
		int n = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &a, &b, perms, &off, &n) < 4 ||
		    !n)
			continue;
		char *name = line + n;
		name[strcspn(name, "\n")] = '\0';
		if (!strchr(perms, 'x') || name[0] != '/')
			continue;
		if (space_insert(sp, a, b, off, name) < 0)
			break;
	}
	fclose(f);
}

int prb_syms_comm(struct prb_syms *s, int32_t pid, int32_t tid, const char *comm, bool exec)
{
	uint32_t id;
	int err;

	if (exec) {
		struct space *sp = space_get(s, pid, true);

		if (!sp)
			return -ENOMEM;
		/* a new image: the old mappings are gone */
		space_fini(sp);
		sp->gen++;
		sp->proc_tried = true; /* the records that follow describe it */
	}
	if ((err = hwt_rep_dict_str(s->dict, comm, strlen(comm), &id)) < 0)
		return err;
	return prb_map_put(&s->comms, (uint32_t)tid, 0, id);
}

int prb_syms_fork(struct prb_syms *s, int32_t ppid, int32_t pid, int32_t tid)
{
	uint64_t *c;
	struct space *parent, *child;

	/* a thread shares its process's comm until it sets its own */
	c = prb_map_get(&s->comms, (uint32_t)ppid, 0);
	if (c && prb_map_put(&s->comms, (uint32_t)tid, 0, *c) < 0)
		return -ENOMEM;
	if (ppid == pid)
		return 0;
	parent = space_get(s, ppid, false);
	if (!parent || !parent->n)
		return 0;
	if (!(child = space_get(s, pid, true)))
		return -ENOMEM;
	parent = space_get(s, ppid, false); /* spaces may have moved */
	space_fini(child);
	if (space_reserve(child, parent->n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < parent->n; i++) {
		child->maps[i] = parent->maps[i];
		child->maps[i].path = strdup(parent->maps[i].path);
		if (!child->maps[i].path) {
			child->n = i;
			return -ENOMEM;
		}
	}
	child->n = parent->n;
	child->gen++;
	child->proc_tried = true;
	return 0;
}

void prb_syms_exit(struct prb_syms *s, int32_t pid, int32_t tid)
{
	/* Samples of a thread can be handled after its EXIT record was read
	 * (they are ordered by time, and may come later from another
	 * buffer), so nothing is forgotten. */
	(void)s;
	(void)pid;
	(void)tid;
}

uint32_t prb_syms_comm_id(struct prb_syms *s, int32_t pid, int32_t tid)
{
	uint64_t *c = prb_map_get(&s->comms, (uint32_t)tid, 0);
	char path[300], comm[64];
	uint32_t id = 0;
	FILE *f;

	if (c)
		return (uint32_t)*c;
	if (!s->live || tid <= 0)
		return 0;
	snprintf(path, sizeof(path), "%s/%d/task/%d/comm", s->proc_root, (int)pid, (int)tid);
	if (!(f = fopen(path, "re"))) {
		snprintf(path, sizeof(path), "%s/%d/comm", s->proc_root, (int)tid);
		f = fopen(path, "re");
	}
	if (f) {
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = '\0';
			if (hwt_rep_dict_str(s->dict, comm, strlen(comm), &id) < 0)
				id = 0;
		}
		fclose(f);
	}
	/* remember misses too: /proc is read once per thread */
	(void)prb_map_put(&s->comms, (uint32_t)tid, 0, id);
	return id;
}

static struct region *find_region(struct prb_syms *s, int32_t pid, uint64_t ip, struct space **spp)
{
	struct space *sp = space_get(s, pid, s->live);
	size_t lo = 0, hi;

	if (!sp)
		return NULL;
	if (!sp->n && s->live && !sp->proc_tried)
		load_proc_maps(s, sp);
	*spp = sp;
	hi = sp->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sp->maps[mid].end <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < sp->n && sp->maps[lo].start <= ip && ip < sp->maps[lo].end)
		return &sp->maps[lo];
	return NULL;
}

int prb_syms_map_of(struct prb_syms *s, int32_t pid, uint64_t ip, const char **path,
		    uint64_t *start, uint64_t *pgoff)
{
	struct space *sp;
	struct region *r = find_region(s, pid, ip, &sp);

	if (!r)
		return -HWT_ENOSYM;
	*path = r->path;
	*start = r->start;
	*pgoff = r->pgoff;
	return 0;
}

int prb_syms_each_map(struct prb_syms *s, const char *obj,
		      int (*fn)(void *ctx, int32_t pid, const char *path, uint64_t start,
				uint64_t end, uint64_t pgoff),
		      void *ctx)
{
	for (size_t i = 0; i < s->nspaces; i++) {
		struct space *sp = &s->spaces[i];

		for (size_t k = 0; k < sp->n; k++) {
			const char *path = sp->maps[k].path;
			const char *base = strrchr(path, '/');
			int err;

			base = base ? base + 1 : path;
			if (strcmp(path, obj) && strcmp(base, obj))
				continue;
			if ((err = fn(ctx, sp->pid, path, sp->maps[k].start, sp->maps[k].end,
				      sp->maps[k].pgoff)) < 0)
				return err;
		}
	}
	return 0;
}

/* Opens the region's object once. Returns whether it is open. */
static bool region_open(struct prb_syms *s, struct region *r)
{
	if (!r->state) {
		int err = hwt_sym_obj_open(s->cache, r->path, NULL, 0, &r->obj);

		r->state = err < 0 ? -1 : 1;
		if (err < 0 && r->path[0] == '/')
			hwt_log(&s->log, HWT_LOG_DEBUG, "cannot open %s for symbols: %s", r->path,
				hwt_strerror(err));
	}
	return r->state > 0;
}

int prb_syms_obj_of(struct prb_syms *s, int32_t pid, uint64_t ip, struct hwt_sym_obj **obj,
		    uint64_t *addr, bool *file)
{
	struct space *sp;
	struct region *r = ip >= PRB_KERNEL_START ? NULL : find_region(s, pid, ip, &sp);

	*obj = NULL;
	if (!r)
		return -HWT_ENOSYM;
	*file = r->path[0] == '/' || !strcmp(r->path, "[vdso]");
	if (region_open(s, r) && hwt_sym_obj_map(r->obj, r->start, r->pgoff, ip, addr) == 0)
		*obj = r->obj;
	return 0;
}

/* The function at ip, or NULL. *object is the object's path. */
static const char *resolve(struct prb_syms *s, int32_t pid, uint64_t ip, const char **object)
{
	struct hwt_sym_func fn;
	struct space *sp;
	struct region *r;
	uint64_t addr;

	*object = NULL;
	if (ip >= PRB_KERNEL_START) {
		if (!s->kallsyms_state) {
			char path[300];

			snprintf(path, sizeof(path), "%s/kallsyms", s->proc_root);
			s->kallsyms_state =
			    hwt_sym_obj_open_kallsyms(s->cache, path, &s->kallsyms) < 0 ? -1 : 1;
			if (s->kallsyms_state < 0)
				hwt_log(
				    &s->log, HWT_LOG_WARN,
				    "kernel symbols unavailable (%s): kernel frames stay addresses",
				    path);
		}
		*object = "[kernel.kallsyms]";
		if (s->kallsyms_state > 0 && !hwt_sym_func_at(s->kallsyms, ip, 0, NULL, &fn))
			return fn.name;
		return NULL;
	}
	if (!(r = find_region(s, pid, ip, &sp)))
		return NULL;
	*object = r->path;
	if (!region_open(s, r))
		return NULL;
	if (hwt_sym_obj_map(r->obj, r->start, r->pgoff, ip, &addr) < 0)
		return NULL;
	if (hwt_sym_func_at(r->obj, addr, 0, NULL, &fn) < 0)
		return NULL;
	return fn.name;
}

int prb_syms_frame(struct prb_syms *s, int32_t pid, uint64_t ip, bool caller, uint32_t *id,
		   bool *known)
{
	struct space *sp = ip >= PRB_KERNEL_START ? NULL : space_get(s, pid, false);
	uint64_t ka = (uint32_t)(ip >= PRB_KERNEL_START ? -1 : pid) | (uint64_t)(sp ? sp->gen : 0)
									  << 32;
	uint64_t kb = ip << 1 | caller;
	uint64_t *hit = prb_map_get(&s->frames, ka, kb);
	struct hwt_rep_frame f = {0};
	const char *obj;
	int err;

	if (hit) {
		*id = (uint32_t)(*hit >> 1);
		*known = *hit & 1;
		return 0;
	}
	/* A return address may be the first byte after the call's function
	 * (a noreturn call at its end): look up the call instruction. */
	f.function = resolve(s, pid, caller ? ip - 1 : ip, &obj);
	f.kind = ip >= PRB_KERNEL_START ? HWT_REP_KIND_KERNEL : HWT_REP_KIND_USER;
	if (f.function) {
		f.object = obj;
	} else {
		f.addr = ip;
	}
	if ((err = hwt_rep_dict_frame(s->dict, &f, id)) < 0)
		return err;
	*known = f.function != NULL;
	/* the image may have been created by the lookup (/proc): key again */
	sp = ip >= PRB_KERNEL_START ? NULL : space_get(s, pid, false);
	ka = (uint32_t)(ip >= PRB_KERNEL_START ? -1 : pid) | (uint64_t)(sp ? sp->gen : 0) << 32;
	return prb_map_put(&s->frames, ka, kb, (uint64_t)*id << 1 | *known);
}
