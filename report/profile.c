/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report/profile.c - the sample profile: samples are filtered, their frames
 * and stacks interned, and merged into rows keyed by (stack, comm, pid, tid,
 * cpu, event) with sample counts and weights. Every renderer works from
 * these rows. Also the folded-stack reader and the sample-to-key mapping
 * aggregations over samples use.
 */
#include "report/report_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	const char *alias;
	uint32_t type;
} fields[HWT_REP_F_COUNT_] = {
    [HWT_REP_F_FUNCTION] = {"function", "sym", HWT_REP_STR},
    [HWT_REP_F_OBJECT] = {"object", "dso", HWT_REP_STR},
    [HWT_REP_F_COMM] = {"comm", NULL, HWT_REP_STR},
    [HWT_REP_F_PID] = {"pid", NULL, HWT_REP_INT},
    [HWT_REP_F_TID] = {"tid", NULL, HWT_REP_INT},
    [HWT_REP_F_CPU] = {"cpu", NULL, HWT_REP_INT},
    [HWT_REP_F_EVENT] = {"event", NULL, HWT_REP_STR},
    [HWT_REP_F_SRCLINE] = {"srcline", NULL, HWT_REP_STR},
    [HWT_REP_F_USTACK] = {"ustack", NULL, HWT_REP_STACK},
    [HWT_REP_F_KSTACK] = {"kstack", NULL, HWT_REP_STACK},
    [HWT_REP_F_STACK] = {"stack", NULL, HWT_REP_STACK},
    [HWT_REP_F_WEIGHT] = {"weight", "period", HWT_REP_INT},
    [HWT_REP_F_TIME] = {"time", NULL, HWT_REP_INT},
};

int hwt_rep_field_parse(const char *name, enum hwt_rep_field *field)
{
	if (!name || !field)
		return -HWT_EINVAL;
	for (int f = HWT_REP_F_FUNCTION; f < HWT_REP_F_COUNT_; f++) {
		if (!strcmp(name, fields[f].name) ||
		    (fields[f].alias && !strcmp(name, fields[f].alias))) {
			*field = (enum hwt_rep_field)f;
			return 0;
		}
	}
	return -HWT_EINVAL;
}

const char *hwt_rep_field_name(enum hwt_rep_field field)
{
	if (field < HWT_REP_F_FUNCTION || field >= HWT_REP_F_COUNT_)
		return "?";
	return fields[field].name;
}

uint32_t hwt_rep_field_type(enum hwt_rep_field field)
{
	if (field < HWT_REP_F_FUNCTION || field >= HWT_REP_F_COUNT_)
		return 0;
	return fields[field].type;
}

void hwt_rep_profile_config_init(struct hwt_rep_profile_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
}

static int copy_ints(int32_t **dst, size_t *n, const int32_t *src, size_t count)
{
	if (!count)
		return 0;
	if (!src || count > SIZE_MAX / sizeof(**dst))
		return -HWT_EINVAL;
	*dst = malloc(count * sizeof(**dst));
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, src, count * sizeof(**dst));
	*n = count;
	return 0;
}

int hwt_rep_profile_alloc(struct hwt_rep_profile **profilep,
			  const struct hwt_rep_profile_config *cfg)
{
	struct hwt_rep_profile_config def;
	struct hwt_rep_profile *p;
	const struct hwt_rep_filter *f;
	int err;

	if (!profilep)
		return -HWT_EINVAL;
	*profilep = NULL;
	hwt_rep_profile_config_init(&def);
	if (cfg && hwt_opts_copy(&def, sizeof(def), cfg) < 0)
		return -HWT_EINVAL;
	cfg = &def;
	f = &cfg->filter;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	hwt_rep_set_init(&p->rows);
	p->log = cfg->log;
	if (cfg->dict) {
		p->dict = cfg->dict;
	} else {
		err = hwt_rep_dict_alloc(&p->dict);
		if (err < 0)
			goto error;
		p->own_dict = true;
	}
	if (f->ncomms) {
		err = -HWT_EINVAL;
		if (!f->comms)
			goto error;
		err = -ENOMEM;
		p->f_comms = calloc(f->ncomms, sizeof(*p->f_comms));
		if (!p->f_comms)
			goto error;
		for (size_t i = 0; i < f->ncomms; i++) {
			err = hwt_rep_dict_str(p->dict, f->comms[i], strlen(f->comms[i]),
					       &p->f_comms[i]);
			if (err < 0)
				goto error;
		}
		p->nf_comms = f->ncomms;
	}
	if ((err = copy_ints(&p->f_pids, &p->nf_pids, f->pids, f->npids)) < 0 ||
	    (err = copy_ints(&p->f_tids, &p->nf_tids, f->tids, f->ntids)) < 0)
		goto error;
	if (f->nobjects) {
		err = -HWT_EINVAL;
		if (!f->objects)
			goto error;
		err = -ENOMEM;
		p->f_objects = calloc(f->nobjects, sizeof(*p->f_objects));
		if (!p->f_objects)
			goto error;
		p->nf_objects = f->nobjects;
		for (size_t i = 0; i < f->nobjects; i++) {
			p->f_objects[i] = strdup(f->objects[i]);
			if (!p->f_objects[i])
				goto error;
		}
	}
	p->f_time_begin = f->time_begin;
	p->f_time_end = f->time_end;
	*profilep = p;
	return 0;
error:
	hwt_rep_profile_free(p);
	return err;
}

void hwt_rep_profile_free(struct hwt_rep_profile *p)
{
	if (!p)
		return;
	hwt_rep_set_fini(&p->rows);
	free(p->vals);
	free(p->unsym);
	if (p->own_dict)
		hwt_rep_dict_free(p->dict);
	free(p->f_comms);
	free(p->f_pids);
	free(p->f_tids);
	free(p->f_events);
	for (size_t i = 0; i < p->nf_objects; i++)
		free(p->f_objects[i]);
	free(p->f_objects);
	free(p);
}

static bool int_in(const int32_t *list, size_t n, int32_t v)
{
	for (size_t i = 0; i < n; i++) {
		if (list[i] == v)
			return true;
	}
	return false;
}

static bool object_matches(const struct hwt_rep_profile *p, const char *obj)
{
	const char *base;

	if (!obj)
		return false;
	base = strrchr(obj, '/');
	base = base ? base + 1 : obj;
	for (size_t i = 0; i < p->nf_objects; i++) {
		if (!strcmp(p->f_objects[i], obj) || !strcmp(p->f_objects[i], base))
			return true;
	}
	return false;
}

static int str_id(struct hwt_rep_dict *dict, const char *s, uint32_t *id);

/* The time range: samples outside it are not part of the profile at all
 * (perf's --time drops them before any total). */
static bool in_time(const struct hwt_rep_profile *p, const struct hwt_rep_sample *s)
{
	return s->time >= p->f_time_begin && (!p->f_time_end || s->time < p->f_time_end);
}

/* Filters that need no interning; the comm filter compares ids later. */
static bool keep_sample(const struct hwt_rep_profile *p, const struct hwt_rep_sample *s)
{
	if (p->nf_pids && !int_in(p->f_pids, p->nf_pids, s->pid))
		return false;
	if (p->nf_tids && !int_in(p->f_tids, p->nf_tids, s->tid))
		return false;
	return true;
}

/* Counts a sample that the comm/pid/tid/object filters rejected into its
 * event's rejected totals (for absolute percentages). Cold: filtered
 * samples only. */
static int count_rejected(struct hwt_rep_profile *p, const struct hwt_rep_sample *s)
{
	struct hwt_rep_filtered_event *fe;
	uint32_t event;
	size_t i;
	int err;

	if ((err = str_id(p->dict, s->event, &event)) < 0)
		return err;
	for (i = 0; i < p->nf_events && p->f_events[i].event != event; i++)
		;
	if (i == p->nf_events) {
		if (i == p->f_events_cap) {
			size_t cap = p->f_events_cap ? 2 * p->f_events_cap : 4;
			void *n = realloc(p->f_events, cap * sizeof(*p->f_events));

			if (!n)
				return -ENOMEM;
			p->f_events = n;
			p->f_events_cap = cap;
		}
		p->f_events[i].event = event;
		p->f_events[i].samples = 0;
		p->f_events[i].weight = 0;
		p->nf_events++;
	}
	fe = &p->f_events[i];
	fe->samples++;
	fe->weight += s->weight ? s->weight : 1;
	return 0;
}

/* Interns the frames of a sample into out (leaf first, at most
 * HWT_REP_MAX_DEPTH, the root side cut). Returns the count or an error. */
static int sample_frames(struct hwt_rep_dict *dict, const struct hwt_rep_sample *s, uint32_t *out,
			 bool *truncated)
{
	size_t n = s->nframes;
	int err;

	*truncated = false;
	if (n > HWT_REP_MAX_DEPTH) {
		n = HWT_REP_MAX_DEPTH;
		*truncated = true;
	}
	if (n && !s->frame_ids && !s->frames)
		return -HWT_EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s->frame_ids) {
			if (s->frame_ids[i] >= dict->frames.n ||
			    !dict->frame_views[s->frame_ids[i]])
				return -HWT_EINVAL;
			out[i] = s->frame_ids[i];
		} else {
			err = hwt_rep_dict_frame(dict, &s->frames[i], &out[i]);
			if (err < 0)
				return err;
		}
	}
	return (int)n;
}

static int str_id(struct hwt_rep_dict *dict, const char *s, uint32_t *id)
{
	if (!s) {
		*id = 0;
		return 0;
	}
	return hwt_rep_dict_str(dict, s, strlen(s), id);
}

/* Adds `samples` samples of total `weight` for interned frames. */
static int add_row(struct hwt_rep_profile *p, const uint32_t *frames, size_t n, bool truncated,
		   uint32_t comm, uint32_t event, int32_t pid, int32_t tid, int32_t cpu,
		   uint64_t samples, uint64_t weight)
{
	struct hwt_rep_row_key key;
	uint32_t row;
	int err;

	memset(&key, 0, sizeof(key));
	err = hwt_rep_dict_stack(p->dict, frames, n, &key.stack);
	if (err < 0)
		return err;
	/* Counted once per distinct stack: walking every frame of every
	 * sample costs a cache miss a frame. */
	if (key.stack >= p->unsym_cap) {
		size_t cap = p->unsym_cap ? p->unsym_cap : 256;
		uint32_t *u;

		while (cap <= key.stack)
			cap *= 2;
		u = realloc(p->unsym, cap * sizeof(*u));
		if (!u)
			return -ENOMEM;
		memset(u + p->unsym_cap, 0xff, (cap - p->unsym_cap) * sizeof(*u));
		p->unsym = u;
		p->unsym_cap = cap;
	}
	if (p->unsym[key.stack] == UINT32_MAX) {
		uint32_t u = 0;

		for (size_t i = 0; i < n; i++)
			u += !hwt_rep_dict_frame_key(p->dict, frames[i])->function;
		p->unsym[key.stack] = u;
	}
	key.comm = comm;
	key.event = event;
	key.pid = pid;
	key.tid = tid;
	key.cpu = cpu;
	if (p->rows.n + 1 > p->vals_cap) {
		size_t cap = p->vals_cap ? p->vals_cap * 2 : 256;
		struct hwt_rep_row_val *v = realloc(p->vals, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->vals = v;
		p->vals_cap = cap;
	}
	err = hwt_rep_set_intern(&p->rows, &key, sizeof(key), &row);
	if (err < 0)
		return err;
	if (err == 1) {
		p->vals[row].samples = 0;
		p->vals[row].weight = 0;
	}
	p->vals[row].samples += samples;
	p->vals[row].weight += weight;
	p->stats.samples += samples;
	p->stats.weight += weight;
	if (!n)
		p->stats.no_stack += samples;
	if (truncated)
		p->stats.truncated += samples;
	p->stats.frames += n * samples;
	p->stats.unsymbolized += (uint64_t)p->unsym[key.stack] * samples;
	return 1;
}

int hwt_rep_profile_add(struct hwt_rep_profile *p, const struct hwt_rep_sample *s)
{
	uint32_t comm, event;
	bool truncated;
	int n, err;

	if (!p || !s)
		return -HWT_EINVAL;
	if (!in_time(p, s)) {
		p->stats.filtered++;
		return 0;
	}
	if (!keep_sample(p, s))
		goto filtered;
	if ((err = str_id(p->dict, s->comm, &comm)) < 0 ||
	    (err = str_id(p->dict, s->event, &event)) < 0)
		return err;
	if (p->nf_comms) {
		size_t i;

		for (i = 0; i < p->nf_comms && p->f_comms[i] != comm; i++)
			;
		if (i == p->nf_comms)
			goto filtered;
	}
	n = sample_frames(p->dict, s, p->work, &truncated);
	if (n < 0) {
		if (n == -HWT_EINVAL)
			p->stats.bad_input++;
		return n;
	}
	if (p->nf_objects &&
	    !object_matches(p, n ? hwt_rep_dict_frame_get(p->dict, p->work[0])->object : NULL))
		goto filtered;
	return add_row(p, p->work, (size_t)n, truncated, comm, event, s->pid, s->tid, s->cpu, 1,
		       s->weight ? s->weight : 1);
filtered:
	p->stats.filtered++;
	return count_rejected(p, s);
}

void hwt_rep_profile_lost(struct hwt_rep_profile *p, uint64_t samples)
{
	if (p)
		p->stats.lost += samples;
}

void hwt_rep_profile_bad_input(struct hwt_rep_profile *p, uint64_t count)
{
	if (p)
		p->stats.bad_input += count;
}

void hwt_rep_profile_exact(struct hwt_rep_profile *p, const char *event)
{
	if (!p || !event)
		return;
	p->stats.exact = true;
	snprintf(p->exact_event, sizeof(p->exact_event), "%s", event);
}

const struct hwt_rep_stats *hwt_rep_profile_stats(const struct hwt_rep_profile *p)
{
	return p ? &p->stats : NULL;
}

struct hwt_rep_dict *hwt_rep_profile_dict(const struct hwt_rep_profile *p)
{
	return p ? p->dict : NULL;
}

/* ------------------------------------------------------------------------ */
/* Folded stacks */

static const struct {
	const char *suffix;
	uint32_t kind;
} folded_kinds[] = {
    {"_[k]", HWT_REP_KIND_KERNEL},
    {"_[i]", HWT_REP_KIND_INLINED},
    {"_[j]", HWT_REP_KIND_JIT},
    {"_[u]", HWT_REP_KIND_USER},
};

/* Interns one folded frame name (not NUL-terminated). */
static int folded_frame(struct hwt_rep_dict *dict, const char *s, size_t len, uint32_t *id)
{
	struct hwt_rep_frame f;
	char name[4096];

	memset(&f, 0, sizeof(f));
	f.kind = HWT_REP_KIND_USER;
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	for (size_t k = 0; k < HWT_ARRAY_SIZE(folded_kinds); k++) {
		size_t sl = strlen(folded_kinds[k].suffix);

		if (len > sl && !memcmp(s + len - sl, folded_kinds[k].suffix, sl)) {
			f.kind = folded_kinds[k].kind;
			len -= sl;
			break;
		}
	}
	/* Blanks before a suffix would not survive a round trip (a writer
	 * puts the count after the name), so they are not part of it. */
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (len >= sizeof(name))
		len = sizeof(name) - 1;
	memcpy(name, s, len);
	name[len] = '\0';
	/* "[unknown]" is what we and stackcollapse write for a frame without
	 * a symbol: read it back as one, so the stats count it. */
	if (strcmp(name, "[unknown]") != 0)
		f.function = name;
	return hwt_rep_dict_frame(dict, &f, id);
}

static int folded_line(struct hwt_rep_profile *p, const char *line, size_t len, uint32_t event)
{
	const char *sp, *end = line + len;
	uint64_t count = 0;
	size_t nf = 0;
	bool truncated = false;
	int err;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	while (len && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	end = line + len;
	for (sp = end; sp > line && sp[-1] != ' ' && sp[-1] != '\t'; sp--)
		;
	if (sp == line || sp == end)
		return -HWT_EFORMAT;
	for (const char *c = sp; c < end; c++) {
		if (*c < '0' || *c > '9' || count > (UINT64_MAX - 9) / 10)
			return -HWT_EFORMAT;
		count = count * 10 + (uint64_t)(*c - '0');
	}
	/* Zero counts say nothing; a total past 2^64 could not be summed. */
	if (!count || count > UINT64_MAX - p->stats.weight)
		return -HWT_EFORMAT;
	end = sp - 1;
	while (end > line && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (end == line)
		return -HWT_EFORMAT;
	/* Frames are root first; the stack is leaf first, so walk backwards
	 * and keep the leaf side when it is too deep. */
	for (const char *stop = end;;) {
		const char *start = stop;

		while (start > line && start[-1] != ';')
			start--;
		if (start == stop)
			return -HWT_EFORMAT; /* empty frame */
		if (nf == HWT_REP_MAX_DEPTH) {
			truncated = true;
			break;
		}
		err = folded_frame(p->dict, start, (size_t)(stop - start), &p->work[nf++]);
		if (err < 0)
			return err;
		if (start == line)
			break;
		stop = start - 1;
	}
	err = add_row(p, p->work, nf, truncated, 0, event, -1, -1, -1, count, count);
	return err < 0 ? err : 0;
}

int64_t hwt_rep_profile_add_folded(struct hwt_rep_profile *p, const char *text, size_t len,
				   const char *event, size_t *err_line)
{
	size_t lineno = 0, pos = 0;
	int64_t added = 0;
	uint32_t ev;
	int err;

	if (err_line)
		*err_line = 0;
	if (!p || (!text && len))
		return -HWT_EINVAL;
	err = str_id(p->dict, event, &ev);
	if (err < 0)
		return err;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (text + pos)) : len - pos;
		bool blank = true;

		lineno++;
		for (size_t i = 0; i < l; i++) {
			if (text[pos + i] != ' ' && text[pos + i] != '\t' &&
			    text[pos + i] != '\r') {
				blank = false;
				break;
			}
		}
		if (!blank) {
			if (memchr(text + pos, '\0', l)) {
				err = -HWT_EFORMAT;
			} else {
				err = folded_line(p, text + pos, l, ev);
			}
			if (err < 0) {
				if (err == -HWT_EFORMAT) {
					p->stats.bad_input++;
					if (err_line)
						*err_line = lineno;
				}
				return err;
			}
			added++;
		}
		pos += l + (nl ? 1 : 0);
	}
	return added;
}

/* ------------------------------------------------------------------------ */
/* Sample keys */

int hwt_rep_sample_key(struct hwt_rep_dict *dict, const struct hwt_rep_sample *s,
		       const enum hwt_rep_field *flist, size_t n, struct hwt_rep_val *key)
{
	uint32_t frames[HWT_REP_MAX_DEPTH], sub[HWT_REP_MAX_DEPTH];
	bool truncated;
	int nf, err;

	if (!dict || !s || (n && (!flist || !key)))
		return -HWT_EINVAL;
	nf = sample_frames(dict, s, frames, &truncated);
	if (nf < 0)
		return nf;
	for (size_t i = 0; i < n; i++) {
		const struct hwt_rep_frame *leaf =
		    nf ? hwt_rep_dict_frame_get(dict, frames[0]) : NULL;
		uint32_t id = 0;
		size_t ns = 0;

		key[i].type = hwt_rep_field_type(flist[i]);
		key[i].v = 0;
		switch (flist[i]) {
		case HWT_REP_F_FUNCTION:
			id = nf ? hwt_rep_dict_label_id(dict, frames[0]) : 0;
			break;
		case HWT_REP_F_OBJECT:
			err = str_id(dict, leaf ? leaf->object : NULL, &id);
			if (err < 0)
				return err;
			break;
		case HWT_REP_F_COMM:
			err = str_id(dict, s->comm, &id);
			if (err < 0)
				return err;
			break;
		case HWT_REP_F_EVENT:
			err = str_id(dict, s->event, &id);
			if (err < 0)
				return err;
			break;
		case HWT_REP_F_SRCLINE: {
			char buf[4200];
			int l = 0;

			if (leaf && leaf->file)
				l = snprintf(buf, sizeof(buf), "%s:%u", leaf->file, leaf->line);
			if (l < 0 || (size_t)l >= sizeof(buf))
				l = 0;
			err = hwt_rep_dict_str(dict, buf, (size_t)l, &id);
			if (err < 0)
				return err;
			break;
		}
		case HWT_REP_F_PID:
			key[i].v = s->pid;
			continue;
		case HWT_REP_F_TID:
			key[i].v = s->tid;
			continue;
		case HWT_REP_F_CPU:
			key[i].v = s->cpu;
			continue;
		case HWT_REP_F_WEIGHT:
			key[i].v = (int64_t)(s->weight ? s->weight : 1);
			continue;
		case HWT_REP_F_TIME:
			key[i].v = (int64_t)s->time;
			continue;
		case HWT_REP_F_USTACK:
		case HWT_REP_F_KSTACK:
		case HWT_REP_F_STACK:
			for (int f = 0; f < nf; f++) {
				uint32_t kind = hwt_rep_dict_frame_key(dict, frames[f])->kind;
				bool kernel = kind == HWT_REP_KIND_KERNEL;

				if (flist[i] == HWT_REP_F_STACK ||
				    (flist[i] == HWT_REP_F_KSTACK) == kernel)
					sub[ns++] = frames[f];
			}
			err = hwt_rep_dict_stack(dict, sub, ns, &id);
			if (err < 0)
				return err;
			break;
		default:
			return -HWT_EINVAL;
		}
		key[i].v = id;
	}
	return 0;
}
