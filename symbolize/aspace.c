/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * symbolize/aspace.c - address spaces over time: the process map that turns
 * (pid, time, ip) into (object, object address), rebuilt from a recording's
 * sideband (mappings, command names, forks, exits), for sample scripts,
 * reports, the decoder and the recorder.
 *
 * Layout. Each pid has one record holding every mapping it ever had, sorted
 * by start address, with a running maximum of the mappings' ends so that a
 * lookup can stop scanning backwards as soon as no earlier mapping can reach
 * ip (the classic interval search over a sorted array). Mappings are never
 * removed; instead each carries its time and the pid's "generations" (exec,
 * and creation by fork, which also marks where pid reuse starts over) decide
 * which are valid at a given time. Among the valid mappings that hold ip the
 * newest wins, which is what a later mmap over an older one means. A process
 * created by fork falls back to its parent's mappings as of the fork.
 *
 * Threads have a short list of events (COMM names, and the FORK that created
 * them, whose name is inherited from the creating thread at that time).
 * Objects are distinct paths; they are opened lazily in the caller's cache on
 * the first lookup that hits them, and an open failure is reported once.
 */
#include "symbolize/symbolize.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define KERNEL_PID     UINT32_MAX
#define MAX_FORK_DEPTH 32

struct as_map {
	uint64_t start, end, pgoff, time;
	uint32_t object;
};

enum { GEN_EXEC = 1, GEN_FORK = 2 };

struct as_gen {
	uint64_t time;
	uint32_t kind;
	uint32_t parent; /* GEN_FORK: the creating process */
};

struct as_proc {
	uint32_t pid;
	struct as_map *maps; /* sorted by start */
	uint64_t *maxend;    /* maxend[i] = max(maps[0..i].end) */
	size_t nmaps, capmaps;
	struct as_gen *gens; /* sorted by time */
	size_t ngens, capgens;
};

enum { TEV_COMM = 1, TEV_FORK = 2 };

struct as_tevent {
	uint64_t time;
	uint32_t kind;
	uint32_t ptid;	  /* TEV_FORK */
	const char *comm; /* TEV_COMM, interned */
};

struct as_thread {
	uint32_t tid;
	struct as_tevent *ev; /* sorted by time */
	size_t nev, capev;
};

struct as_object {
	char *path;
	uint8_t build_id[64];
	size_t build_id_len;
	bool kernel;
	bool tried;
	int status;
	struct hwt_sym_obj *obj;
	uint32_t image; /* index + 1 into images, 0: a file */
};

struct as_image {
	char *name;
	void *data;
	size_t size;
};

/* Open-addressing table from a 32-bit key (or a string hash) to an index. */
struct as_hash {
	uint32_t *keys;
	uint32_t *vals; /* index + 1; 0 = empty */
	size_t cap, n;
};

struct hwt_sym_aspace {
	struct hwt_sym_aspace_config cfg;
	char *kallsyms;
	struct as_proc *procs;
	size_t nprocs, capprocs;
	struct as_hash proc_ix;
	struct as_thread *threads;
	size_t nthreads, capthreads;
	struct as_hash thread_ix;
	struct as_object *objs;
	size_t nobjs, capobjs;
	struct as_hash obj_ix; /* key: string hash; collisions resolved by path */
	struct as_image *images;
	size_t nimages;
	char **strs; /* interned command names */
	size_t nstrs, capstrs;
	struct as_hash str_ix;
	struct as_map *kmaps; /* kernel mappings, sorted by start */
	uint64_t *kmaxend;
	size_t nkmaps, capkmaps;
	uint32_t kernel_obj; /* object index + 1 of "[kernel.kallsyms]", 0 none */
	struct hwt_sym_obj *kobj;
	bool ktried;
};

/* ------------------------------------------------------------------------ */
/* small helpers                                                             */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t nc;
	void *np;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap * 2 : 16;
	while (nc < need)
		nc *= 2;
	if (hwt_mul_size(nc, elem, &(size_t){0}) < 0)
		return -HWT_ETOOBIG;
	np = realloc(*p, nc * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

static uint32_t mix(uint32_t k)
{
	k ^= k >> 16;
	k *= 0x7feb352du;
	k ^= k >> 15;
	k *= 0x846ca68bu;
	return k ^ (k >> 16);
}

/* Calls match(ctx, index) for entries with key until it returns true;
 * returns that index + 1, or 0. */
static uint32_t hash_find(const struct as_hash *h, uint32_t key,
			  bool (*match)(const void *ctx, uint32_t idx), const void *ctx)
{
	if (!h->cap)
		return 0;
	for (size_t i = mix(key) & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
		if (!h->vals[i])
			return 0;
		if (h->keys[i] == key && (!match || match(ctx, h->vals[i] - 1)))
			return h->vals[i];
	}
}

static int hash_put(struct as_hash *h, uint32_t key, uint32_t idx)
{
	if ((h->n + 1) * 2 > h->cap) {
		struct as_hash nh;
		size_t nc = h->cap ? h->cap * 2 : 64;

		nh.keys = calloc(nc, sizeof(uint32_t));
		nh.vals = calloc(nc, sizeof(uint32_t));
		nh.cap = nc;
		nh.n = 0;
		if (!nh.keys || !nh.vals) {
			free(nh.keys);
			free(nh.vals);
			return -ENOMEM;
		}
		for (size_t i = 0; i < h->cap; i++) {
			if (h->vals[i]) {
				size_t j = mix(h->keys[i]) & (nc - 1);

				while (nh.vals[j])
					j = (j + 1) & (nc - 1);
				nh.keys[j] = h->keys[i];
				nh.vals[j] = h->vals[i];
				nh.n++;
			}
		}
		free(h->keys);
		free(h->vals);
		*h = nh;
	}
	for (size_t i = mix(key) & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
		if (!h->vals[i]) {
			h->keys[i] = key;
			h->vals[i] = idx + 1;
			h->n++;
			return 0;
		}
	}
}

static void hash_fini(struct as_hash *h)
{
	free(h->keys);
	free(h->vals);
}

/* ------------------------------------------------------------------------ */
/* lifetime                                                                  */

void hwt_sym_aspace_config_init(struct hwt_sym_aspace_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
}

int hwt_sym_aspace_alloc(const struct hwt_sym_aspace_config *cfg, struct hwt_sym_aspace **out)
{
	struct hwt_sym_aspace_config c;
	struct hwt_sym_aspace *as;

	if (!out)
		return -HWT_EINVAL;
	*out = NULL;
	hwt_sym_aspace_config_init(&c);
	if (cfg && hwt_opts_copy(&c, sizeof(c), cfg) < 0)
		return -HWT_EINVAL;
	as = calloc(1, sizeof(*as));
	if (!as)
		return -ENOMEM;
	as->cfg = c;
	if (as->cfg.kallsyms) {
		as->kallsyms = strdup(as->cfg.kallsyms);
		if (!as->kallsyms)
			goto error;
	}
	as->cfg.kallsyms = as->kallsyms;
	*out = as;
	return 0;
error:
	hwt_sym_aspace_free(as);
	return -ENOMEM;
}

void hwt_sym_aspace_free(struct hwt_sym_aspace *as)
{
	if (!as)
		return;
	for (size_t i = 0; i < as->nprocs; i++) {
		free(as->procs[i].maps);
		free(as->procs[i].maxend);
		free(as->procs[i].gens);
	}
	free(as->procs);
	hash_fini(&as->proc_ix);
	for (size_t i = 0; i < as->nthreads; i++)
		free(as->threads[i].ev);
	free(as->threads);
	hash_fini(&as->thread_ix);
	for (size_t i = 0; i < as->nobjs; i++)
		free(as->objs[i].path);
	free(as->objs);
	hash_fini(&as->obj_ix);
	for (size_t i = 0; i < as->nimages; i++) {
		free(as->images[i].name);
		free(as->images[i].data);
	}
	free(as->images);
	for (size_t i = 0; i < as->nstrs; i++)
		free(as->strs[i]);
	free(as->strs);
	hash_fini(&as->str_ix);
	free(as->kmaps);
	free(as->kmaxend);
	free(as->kallsyms);
	free(as);
}

/* ------------------------------------------------------------------------ */
/* interning                                                                 */

static bool obj_match(const void *ctx, uint32_t idx)
{
	const struct {
		const struct hwt_sym_aspace *as;
		const char *path;
	} *c = ctx;

	return !strcmp(c->as->objs[idx].path, c->path);
}

static bool is_kernel_name(const char *path)
{
	/* perf's kernel maps: "[kernel.kallsyms]_text", "[kernel.kallsyms]",
	 * and modules as paths ending in .ko (or "[module]"). */
	return !strncmp(path, "[kernel.kallsyms]", 17) || !strcmp(path, "[guest.kernel.kallsyms]");
}

/* Finds or adds the object for path. Returns its index or -ENOMEM. */
static int64_t object_get(struct hwt_sym_aspace *as, const char *path, bool kernel)
{
	struct {
		const struct hwt_sym_aspace *as;
		const char *path;
	} c = {as, path};
	uint32_t h = str_hash(path);
	uint32_t ix = hash_find(&as->obj_ix, h, obj_match, &c);
	struct as_object *o;
	int err;

	if (ix)
		return ix - 1;
	if (as->nobjs >= UINT32_MAX - 1)
		return -HWT_ETOOBIG;
	err = grow((void **)&as->objs, &as->capobjs, as->nobjs + 1, sizeof(*as->objs));
	if (err)
		return err;
	o = &as->objs[as->nobjs];
	memset(o, 0, sizeof(*o));
	o->path = strdup(path);
	if (!o->path)
		return -ENOMEM;
	o->kernel = kernel;
	err = hash_put(&as->obj_ix, h, (uint32_t)as->nobjs);
	if (err) {
		free(o->path);
		return err;
	}
	for (size_t i = 0; i < as->nimages; i++) {
		if (!strcmp(as->images[i].name, path))
			o->image = (uint32_t)i + 1;
	}
	return (int64_t)as->nobjs++;
}

static bool str_match(const void *ctx, uint32_t idx)
{
	const struct {
		const struct hwt_sym_aspace *as;
		const char *s;
	} *c = ctx;

	return !strcmp(c->as->strs[idx], c->s);
}

static const char *intern(struct hwt_sym_aspace *as, const char *s)
{
	struct {
		const struct hwt_sym_aspace *as;
		const char *s;
	} c = {as, s};
	uint32_t h = str_hash(s);
	uint32_t ix = hash_find(&as->str_ix, h, str_match, &c);
	char *copy;

	if (ix)
		return as->strs[ix - 1];
	if (grow((void **)&as->strs, &as->capstrs, as->nstrs + 1, sizeof(char *)))
		return NULL;
	copy = strdup(s);
	if (!copy)
		return NULL;
	if (hash_put(&as->str_ix, h, (uint32_t)as->nstrs)) {
		free(copy);
		return NULL;
	}
	as->strs[as->nstrs++] = copy;
	return copy;
}

static struct as_proc *proc_find(const struct hwt_sym_aspace *as, uint32_t pid)
{
	uint32_t ix = hash_find(&as->proc_ix, pid, NULL, NULL);

	return ix ? &as->procs[ix - 1] : NULL;
}

static struct as_proc *proc_get(struct hwt_sym_aspace *as, uint32_t pid)
{
	struct as_proc *p = proc_find(as, pid);

	if (p)
		return p;
	if (grow((void **)&as->procs, &as->capprocs, as->nprocs + 1, sizeof(*as->procs)))
		return NULL;
	if (hash_put(&as->proc_ix, pid, (uint32_t)as->nprocs))
		return NULL;
	p = &as->procs[as->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	return p;
}

static struct as_thread *thread_find(const struct hwt_sym_aspace *as, uint32_t tid)
{
	uint32_t ix = hash_find(&as->thread_ix, tid, NULL, NULL);

	return ix ? &as->threads[ix - 1] : NULL;
}

static struct as_thread *thread_get(struct hwt_sym_aspace *as, uint32_t tid)
{
	struct as_thread *t = thread_find(as, tid);

	if (t)
		return t;
	if (grow((void **)&as->threads, &as->capthreads, as->nthreads + 1, sizeof(*as->threads)))
		return NULL;
	if (hash_put(&as->thread_ix, tid, (uint32_t)as->nthreads))
		return NULL;
	t = &as->threads[as->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	return t;
}

/* ------------------------------------------------------------------------ */
/* feeding                                                                   */

/* Inserts m into a start-sorted array with its running maximum of ends
 * (both arrays have *cap entries). */
static int map_insert(struct as_map **maps, uint64_t **maxend, size_t *n, size_t *cap,
		      const struct as_map *m)
{
	size_t lo = 0, hi = *n;

	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct as_map *nm = realloc(*maps, nc * sizeof(**maps));
		uint64_t *ne;

		if (!nm)
			return -ENOMEM;
		*maps = nm;
		ne = realloc(*maxend, nc * sizeof(**maxend));
		if (!ne)
			return -ENOMEM;
		*maxend = ne;
		*cap = nc;
	}
	/* After the last entry with the same start, so newer ones sit later. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((*maps)[mid].start <= m->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(*maps + lo + 1, *maps + lo, (*n - lo) * sizeof(**maps));
	(*maps)[lo] = *m;
	(*n)++;
	for (size_t i = lo; i < *n; i++) {
		uint64_t prev = i ? (*maxend)[i - 1] : 0;

		(*maxend)[i] = (*maps)[i].end > prev ? (*maps)[i].end : prev;
	}
	return 0;
}

int hwt_sym_aspace_mmap(struct hwt_sym_aspace *as, const struct hwt_sym_mmap_event *ev)
{
	struct as_map m;
	bool kernel;
	int64_t obj;

	if (!as || !ev || !ev->filename || !ev->len || ev->start + ev->len < ev->start)
		return -HWT_EINVAL;
	if (!(ev->prot & PROT_EXEC))
		return 0; /* data mappings hold no code */
	kernel = ev->pid == KERNEL_PID || is_kernel_name(ev->filename);
	obj = object_get(as, ev->filename, kernel);
	if (obj < 0)
		return (int)obj;
	if (ev->build_id && ev->build_id_len && !as->objs[obj].build_id_len &&
	    ev->build_id_len <= sizeof(as->objs[obj].build_id)) {
		memcpy(as->objs[obj].build_id, ev->build_id, ev->build_id_len);
		as->objs[obj].build_id_len = ev->build_id_len;
	}
	m.start = ev->start;
	m.end = ev->start + ev->len;
	m.pgoff = ev->pgoff;
	m.time = ev->time;
	m.object = (uint32_t)obj;
	if (kernel)
		return map_insert(&as->kmaps, &as->kmaxend, &as->nkmaps, &as->capkmaps, &m);
	{
		struct as_proc *p = proc_get(as, ev->pid);

		if (!p)
			return -ENOMEM;
		return map_insert(&p->maps, &p->maxend, &p->nmaps, &p->capmaps, &m);
	}
}

static int gen_insert(struct as_proc *p, const struct as_gen *g)
{
	size_t i;
	int err = grow((void **)&p->gens, &p->capgens, p->ngens + 1, sizeof(*p->gens));

	if (err)
		return err;
	for (i = p->ngens; i > 0 && p->gens[i - 1].time > g->time; i--)
		p->gens[i] = p->gens[i - 1];
	p->gens[i] = *g;
	p->ngens++;
	return 0;
}

static int tevent_insert(struct as_thread *t, const struct as_tevent *e)
{
	size_t i;
	int err = grow((void **)&t->ev, &t->capev, t->nev + 1, sizeof(*t->ev));

	if (err)
		return err;
	for (i = t->nev; i > 0 && t->ev[i - 1].time > e->time; i--)
		t->ev[i] = t->ev[i - 1];
	t->ev[i] = *e;
	t->nev++;
	return 0;
}

int hwt_sym_aspace_comm(struct hwt_sym_aspace *as, const struct hwt_sym_comm_event *ev)
{
	struct as_tevent te = {0};
	struct as_thread *t;

	if (!as || !ev || !ev->comm)
		return -HWT_EINVAL;
	if (ev->exec) {
		struct as_proc *p = proc_get(as, ev->pid);
		struct as_gen g = {ev->time, GEN_EXEC, 0};
		int err;

		if (!p)
			return -ENOMEM;
		err = gen_insert(p, &g);
		if (err)
			return err;
	}
	t = thread_get(as, ev->tid);
	if (!t)
		return -ENOMEM;
	te.time = ev->time;
	te.kind = TEV_COMM;
	te.comm = intern(as, ev->comm);
	if (!te.comm)
		return -ENOMEM;
	return tevent_insert(t, &te);
}

int hwt_sym_aspace_fork(struct hwt_sym_aspace *as, const struct hwt_sym_task_event *ev)
{
	struct as_tevent te = {0};
	struct as_thread *t;

	if (!as || !ev)
		return -HWT_EINVAL;
	if (ev->pid != ev->ppid) {
		/* A new process (also where a reused pid starts over). */
		struct as_proc *p = proc_get(as, ev->pid);
		struct as_gen g = {ev->time, GEN_FORK, ev->ppid};
		int err;

		if (!p)
			return -ENOMEM;
		err = gen_insert(p, &g);
		if (err)
			return err;
	}
	t = thread_get(as, ev->tid);
	if (!t)
		return -ENOMEM;
	te.time = ev->time;
	te.kind = TEV_FORK;
	te.ptid = ev->ptid;
	return tevent_insert(t, &te);
}

int hwt_sym_aspace_exit(struct hwt_sym_aspace *as, const struct hwt_sym_task_event *ev)
{
	/* Nothing ends at exit: samples of the exiting task may still follow
	 * (they carry earlier times), and a reused pid starts a new
	 * generation at its FORK. */
	return as && ev ? 0 : -HWT_EINVAL;
}

int hwt_sym_aspace_build_id(struct hwt_sym_aspace *as, const char *path, const uint8_t *id,
			    size_t len)
{
	int64_t obj;

	if (!as || !path || !id || !len || len > sizeof(as->objs[0].build_id))
		return -HWT_EINVAL;
	obj = object_get(as, path, is_kernel_name(path));
	if (obj < 0)
		return (int)obj;
	memcpy(as->objs[obj].build_id, id, len);
	as->objs[obj].build_id_len = len;
	return 0;
}

int hwt_sym_aspace_image(struct hwt_sym_aspace *as, const char *name, const void *data, size_t size)
{
	struct as_image *im;
	void *copy;
	char *n;

	if (!as || !name || !data || !size)
		return -HWT_EINVAL;
	copy = malloc(size);
	n = strdup(name);
	im = realloc(as->images, (as->nimages + 1) * sizeof(*im));
	if (!copy || !n || !im) {
		free(copy);
		free(n);
		if (im)
			as->images = im;
		return -ENOMEM;
	}
	as->images = im;
	memcpy(copy, data, size);
	im = &as->images[as->nimages++];
	im->name = n;
	im->data = copy;
	im->size = size;
	for (size_t i = 0; i < as->nobjs; i++) {
		if (!strcmp(as->objs[i].path, name)) {
			as->objs[i].image = (uint32_t)as->nimages;
			as->objs[i].tried = false;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* lookups                                                                   */

/* The generation of p in force at time (NULL: from the beginning). */
static const struct as_gen *gen_at(const struct as_proc *p, uint64_t time)
{
	size_t lo = 0, hi = p->ngens;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->gens[mid].time <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &p->gens[lo - 1] : NULL;
}

/* The mapping holding ip among maps[0..n) that is valid from `from` up to
 * (not including) `until`: the newest at or before time; *late gets the
 * earliest one after time (when not NULL). */
static const struct as_map *map_search(const struct as_map *maps, const uint64_t *maxend, size_t n,
				       uint64_t ip, uint64_t from, uint64_t until, uint64_t time,
				       const struct as_map **late)
{
	const struct as_map *best = NULL;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (maps[mid].start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0;) {
		const struct as_map *m = &maps[i];

		if (maxend[i] <= ip)
			break; /* nothing at or before i reaches ip */
		if (m->end <= ip || m->time < from || m->time >= until)
			continue;
		if (m->time <= time) {
			if (!best || m->time > best->time)
				best = m;
		} else if (late && (!*late || m->time < (*late)->time)) {
			*late = m;
		}
	}
	return best;
}

static bool ip_is_kernel(uint64_t ip)
{
	return ip >> 63; /* x86-64 and arm64: the kernel owns the upper half */
}

static void obj_open(struct hwt_sym_aspace *as, struct as_object *o)
{
	const char *p = o->path;
	int err;

	o->tried = true;
	if (!as->cfg.cache)
		return;
	if (o->image) {
		const struct as_image *im = &as->images[o->image - 1];

		err = hwt_sym_obj_open_image(as->cfg.cache, o->path, im->data, im->size, &o->obj);
	} else if (p[0] != '/' || !strncmp(p, "//anon", 6) || !strncmp(p, "/memfd:", 7) ||
		   !strncmp(p, "/dev/", 5) || !strncmp(p, "/SYSV", 5)) {
		o->status = -HWT_ENOSYM; /* anonymous or special: nothing to open */
		return;
	} else {
		err = hwt_sym_obj_open(as->cfg.cache, p, o->build_id_len ? o->build_id : NULL,
				       o->build_id_len, &o->obj);
	}
	if (err < 0) {
		o->obj = NULL;
		o->status = err;
		if (err == -HWT_EVERSION)
			hwt_log(&as->cfg.logger, HWT_LOG_WARN,
				"%s has changed since the recording (its build-id differs): its "
				"addresses are not symbolized",
				p);
		else if (err == -ENOENT)
			hwt_log(&as->cfg.logger, HWT_LOG_WARN,
				"%s: not found on this machine: its addresses are not symbolized",
				p);
		else
			hwt_log(&as->cfg.logger, HWT_LOG_WARN, "%s: cannot read symbols: %s", p,
				hwt_strerror(err));
	}
}

static int kernel_lookup(struct hwt_sym_aspace *as, uint64_t ip, struct hwt_sym_loc *loc)
{
	const struct as_map *m =
	    map_search(as->kmaps, as->kmaxend, as->nkmaps, ip, 0, UINT64_MAX, UINT64_MAX, NULL);
	int64_t oi;

	loc->kernel = true;
	loc->addr = ip;
	if (m) {
		loc->map_start = m->start;
		loc->map_end = m->end;
		loc->map_pgoff = m->pgoff;
		loc->map_time = m->time;
		loc->object = m->object;
		loc->path = as->objs[m->object].path;
	} else {
		if (!as->kernel_obj) {
			oi = object_get(as, "[kernel.kallsyms]", true);
			if (oi < 0)
				return (int)oi;
			as->kernel_obj = (uint32_t)oi + 1;
		}
		loc->object = as->kernel_obj - 1;
		loc->path = as->objs[loc->object].path;
	}
	/* All kernel text, modules included, is symbolized by kallsyms. */
	if (!as->ktried && as->cfg.cache && as->kallsyms) {
		int err;

		as->ktried = true;
		err = hwt_sym_obj_open_kallsyms(as->cfg.cache, as->kallsyms, &as->kobj);
		if (err < 0) {
			as->kobj = NULL;
			hwt_log(&as->cfg.logger, HWT_LOG_WARN,
				"%s: %s: kernel addresses are not symbolized", as->kallsyms,
				err == -EACCES ? "addresses hidden (kptr_restrict); read it as root"
					       : hwt_strerror(err));
		}
	}
	loc->obj = as->kobj;
	return 0;
}

int hwt_sym_aspace_lookup(struct hwt_sym_aspace *as, uint32_t pid, uint64_t time, uint64_t ip,
			  struct hwt_sym_loc *loc)
{
	const struct as_map *m = NULL, *late = NULL;
	uint32_t cur = pid;
	uint64_t t = time, until = UINT64_MAX;

	if (!as || !loc)
		return -HWT_EINVAL;
	memset(loc, 0, sizeof(*loc));
	loc->addr = ip;
	if (ip_is_kernel(ip))
		return kernel_lookup(as, ip, loc);
	for (int depth = 0; depth < MAX_FORK_DEPTH; depth++) {
		const struct as_proc *p = proc_find(as, cur);
		const struct as_gen *g;
		uint64_t from;

		if (!p)
			break;
		g = gen_at(p, t);
		from = g ? g->time : 0;
		if (!g && p->ngens && until == UINT64_MAX)
			until = p->gens[0].time; /* before the first generation */
		/* Only the process asked about may answer with a mapping from
		 * slightly later (clock skew); its parents answer as of the fork. */
		m = map_search(p->maps, p->maxend, p->nmaps, ip, from, until, t,
			       depth ? NULL : &late);
		if (m || !g || g->kind != GEN_FORK || g->parent == cur)
			break;
		/* Not mapped since the fork: the parent's mapping as of then. */
		cur = g->parent;
		t = g->time;
		until = UINT64_MAX;
	}
	if (!m)
		m = late;
	if (!m)
		return -HWT_ENOSYM;
	loc->map_start = m->start;
	loc->map_end = m->end;
	loc->map_pgoff = m->pgoff;
	loc->map_time = m->time;
	loc->object = m->object;
	loc->path = as->objs[m->object].path;
	loc->addr = ip - m->start + m->pgoff;
	{
		struct as_object *o = &as->objs[m->object];

		if (!o->tried)
			obj_open(as, o);
		if (o->obj && hwt_sym_obj_map(o->obj, m->start, m->pgoff, ip, &loc->addr) == 0)
			loc->obj = o->obj;
		else
			loc->addr = ip - m->start + m->pgoff;
	}
	return 0;
}

const char *hwt_sym_aspace_comm_of(struct hwt_sym_aspace *as, uint32_t tid, uint64_t time)
{
	uint64_t t = time;

	if (!as)
		return NULL;
	for (int depth = 0; depth < MAX_FORK_DEPTH; depth++) {
		const struct as_thread *th = thread_find(as, tid);
		const struct as_tevent *e = NULL;

		if (!th || !th->nev)
			return NULL;
		for (size_t i = th->nev; i-- > 0;) {
			if (th->ev[i].time <= t) {
				e = &th->ev[i];
				break;
			}
		}
		if (!e)
			e = &th->ev[0]; /* clocks of CPUs disagree a little */
		if (e->kind == TEV_COMM)
			return e->comm;
		if (e->ptid == tid)
			return NULL;
		tid = e->ptid;
		t = e->time;
	}
	return NULL;
}

size_t hwt_sym_aspace_nobjects(const struct hwt_sym_aspace *as)
{
	return as ? as->nobjs : 0;
}

int hwt_sym_aspace_object(const struct hwt_sym_aspace *as, uint32_t i,
			  struct hwt_sym_aspace_object *out)
{
	const struct as_object *o;

	if (!as || !out || i >= as->nobjs)
		return -HWT_EINVAL;
	o = &as->objs[i];
	out->path = o->path;
	out->build_id = o->build_id_len ? o->build_id : NULL;
	out->build_id_len = o->build_id_len;
	out->kernel = o->kernel;
	out->open_status = o->status;
	return 0;
}
