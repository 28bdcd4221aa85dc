/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report/pprof.c - pprof export: the profile as perftools.profiles.Profile
 * (profile.proto from Debian's golang-github-google-pprof-dev, compiled
 * with protoc-c at build time), packed by libprotobuf-c and gzip-compressed
 * with zlib, as `go tool pprof`, Pyroscope and Parca read it.
 *
 * Each distinct frame is a Location (address, mapping of its object, one
 * Line with function and line number); each merged row is a Sample with
 * values [samples, weight] and comm/pid/tid/cpu/event labels. The stats
 * travel as comments.
 */
#include "report/report_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "report/pprof/profile.pb-c.h"

struct pprof {
	struct hwt_rep_set strings;   /* string table: index = id */
	struct hwt_rep_set functions; /* keys: {name, file} string table indices */
	struct hwt_rep_set mappings;  /* keys: object string table index */
	uint64_t *loc_of_frame;	      /* dict frame id -> location id (0: none) */
	size_t nframes;
	uint32_t *loc_frames; /* location id - 1 -> dict frame id */
	size_t nlocs, locs_cap;
	Perftools__Profiles__Sample *samples;
	Perftools__Profiles__Sample **sample_ptrs;
	size_t nsamples, samples_cap;
	struct hwt_rep_arena arena; /* per-sample arrays */
};

static int str_index(struct pprof *pp, const char *s, int64_t *idx)
{
	uint32_t id;
	int err = hwt_rep_set_intern(&pp->strings, s ? s : "", s ? strlen(s) : 0, &id);

	if (err < 0)
		return err;
	*idx = id;
	return 0;
}

static int pprof_init(struct hwt_rep_render_ctx *ctx)
{
	struct pprof *pp = calloc(1, sizeof(*pp));
	int64_t idx;

	if (!pp)
		return -ENOMEM;
	ctx->state = pp;
	hwt_rep_set_init(&pp->strings);
	hwt_rep_set_init(&pp->functions);
	hwt_rep_set_init(&pp->mappings);
	hwt_rep_arena_init(&pp->arena);
	pp->nframes = ctx->profile->dict->frames.n;
	pp->loc_of_frame = calloc(pp->nframes + 1, sizeof(*pp->loc_of_frame));
	if (!pp->loc_of_frame)
		return -ENOMEM;
	/* The string table must start with "". */
	return str_index(pp, "", &idx);
}

static int location_of(struct pprof *pp, uint32_t frame, uint64_t *loc)
{
	if (frame >= pp->nframes)
		return -HWT_EINTERNAL;
	if (!pp->loc_of_frame[frame]) {
		if (pp->nlocs == pp->locs_cap) {
			size_t cap = pp->locs_cap ? pp->locs_cap * 2 : 256;
			uint32_t *l = realloc(pp->loc_frames, cap * sizeof(*l));

			if (!l)
				return -ENOMEM;
			pp->loc_frames = l;
			pp->locs_cap = cap;
		}
		pp->loc_frames[pp->nlocs++] = frame;
		pp->loc_of_frame[frame] = pp->nlocs;
	}
	*loc = pp->loc_of_frame[frame];
	return 0;
}

static Perftools__Profiles__Label *add_label(struct pprof *pp, Perftools__Profiles__Label *l,
					     const char *key, const char *str, int64_t num)
{
	perftools__profiles__label__init(l);
	if (str_index(pp, key, &l->key) < 0)
		return NULL;
	if (str && str_index(pp, str, &l->str) < 0)
		return NULL;
	if (!str)
		l->num = num;
	return l;
}

static int pprof_process(struct hwt_rep_render_ctx *ctx, int source, uint32_t row_index,
			 const struct hwt_rep_row_key *row, const struct hwt_rep_row_val *val)
{
	struct pprof *pp = ctx->state;
	const struct hwt_rep_dict *dict = ctx->profile->dict;
	const uint32_t *frames;
	size_t n = hwt_rep_dict_stack_get(dict, row->stack, &frames), nl = 0;
	Perftools__Profiles__Sample *s;
	Perftools__Profiles__Label *labels, **lptrs;
	const char *event = hwt_rep_dict_str_get(dict, row->event);
	int err;

	(void)row_index;
	if (source)
		return 0;
	if (pp->nsamples == pp->samples_cap) {
		size_t cap = pp->samples_cap ? pp->samples_cap * 2 : 256;
		Perftools__Profiles__Sample *ns = realloc(pp->samples, cap * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		pp->samples = ns;
		pp->samples_cap = cap;
	}
	s = &pp->samples[pp->nsamples++];
	perftools__profiles__sample__init(s);
	s->location_id = hwt_rep_arena_alloc(&pp->arena, (n ? n : 1) * sizeof(uint64_t));
	s->value = hwt_rep_arena_alloc(&pp->arena, 2 * sizeof(int64_t));
	labels = hwt_rep_arena_alloc(&pp->arena, 5 * sizeof(*labels));
	lptrs = hwt_rep_arena_alloc(&pp->arena, 5 * sizeof(*lptrs));
	if (!s->location_id || !s->value || !labels || !lptrs)
		return -ENOMEM;
	/* pprof's locations are leaf first, as our stacks. */
	for (size_t i = 0; i < n; i++) {
		err = location_of(pp, frames[i], &s->location_id[i]);
		if (err < 0)
			return err;
	}
	s->n_location_id = n;
	s->value[0] = (int64_t)val->samples;
	s->value[1] = (int64_t)val->weight;
	s->n_value = 2;
	if (row->comm)
		lptrs[nl] =
		    add_label(pp, &labels[nl], "comm", hwt_rep_dict_str_get(dict, row->comm), 0),
		nl++;
	if (row->pid >= 0)
		lptrs[nl] = add_label(pp, &labels[nl], "pid", NULL, row->pid), nl++;
	if (row->tid >= 0)
		lptrs[nl] = add_label(pp, &labels[nl], "tid", NULL, row->tid), nl++;
	if (row->cpu >= 0)
		lptrs[nl] = add_label(pp, &labels[nl], "cpu", NULL, row->cpu), nl++;
	if (*event)
		lptrs[nl] = add_label(pp, &labels[nl], "event", event, 0), nl++;
	for (size_t i = 0; i < nl; i++) {
		if (!lptrs[i])
			return -ENOMEM;
	}
	s->label = lptrs;
	s->n_label = nl;
	return 0;
}

static int gzip_into(const uint8_t *data, size_t len, struct hwt_buf *out)
{
	z_stream zs;
	int zerr, err;

	memset(&zs, 0, sizeof(zs));
	/* windowBits 15 + 16: a gzip wrapper, as pprof expects. */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -HWT_ELIB;
	err = hwt_buf_reserve(out, deflateBound(&zs, len));
	if (err < 0) {
		deflateEnd(&zs);
		return err;
	}
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)len;
	zs.next_out = out->data + out->len;
	zs.avail_out = (uInt)(out->cap - out->len);
	zerr = deflate(&zs, Z_FINISH);
	if (zerr == Z_STREAM_END)
		out->len += zs.total_out;
	deflateEnd(&zs);
	return zerr == Z_STREAM_END ? 0 : -HWT_ELIB;
}

static int build_and_pack(struct hwt_rep_render_ctx *ctx, struct pprof *pp, struct hwt_buf *out)
{
	const struct hwt_rep_dict *dict = ctx->profile->dict;
	const struct hwt_rep_stats *st = &ctx->profile->stats;
	Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType types[2], period_type;
	Perftools__Profiles__ValueType *type_ptrs[2] = {&types[0], &types[1]};
	Perftools__Profiles__Location *locs = NULL, **loc_ptrs = NULL;
	Perftools__Profiles__Line *lines = NULL, **line_ptrs = NULL;
	Perftools__Profiles__Function *funcs = NULL, **func_ptrs = NULL;
	Perftools__Profiles__Mapping *maps = NULL, **map_ptrs = NULL;
	int64_t *map_names = NULL;
	uint64_t *map_ids = NULL;
	char **strs = NULL;
	int64_t comments[2];
	struct hwt_buf text;
	uint8_t *packed = NULL;
	size_t size, nmaps_cap;
	int err = -ENOMEM;

	hwt_buf_init(&text);
	for (size_t i = 0; i < 2; i++)
		perftools__profiles__value_type__init(&types[i]);
	perftools__profiles__value_type__init(&period_type);
	if ((err = str_index(pp, "samples", &types[0].type)) < 0 ||
	    (err = str_index(pp, "count", &types[0].unit)) < 0 ||
	    (err = str_index(pp, "events", &types[1].type)) < 0 ||
	    (err = str_index(pp, "count", &types[1].unit)) < 0 ||
	    (err = str_index(pp, "events", &period_type.type)) < 0 ||
	    (err = str_index(pp, "count", &period_type.unit)) < 0)
		goto out;
	err = -ENOMEM;
	nmaps_cap = pp->nlocs + 1;
	locs = calloc(pp->nlocs + 1, sizeof(*locs));
	loc_ptrs = calloc(pp->nlocs + 1, sizeof(*loc_ptrs));
	lines = calloc(pp->nlocs + 1, sizeof(*lines));
	line_ptrs = calloc(pp->nlocs + 1, sizeof(*line_ptrs));
	funcs = calloc(pp->nlocs + 1, sizeof(*funcs));
	func_ptrs = calloc(pp->nlocs + 1, sizeof(*func_ptrs));
	maps = calloc(nmaps_cap, sizeof(*maps));
	map_ptrs = calloc(nmaps_cap, sizeof(*map_ptrs));
	map_names = calloc(nmaps_cap, sizeof(*map_names));
	map_ids = calloc(nmaps_cap, sizeof(*map_ids));
	if (!locs || !loc_ptrs || !lines || !line_ptrs || !funcs || !func_ptrs || !maps ||
	    !map_ptrs || !map_names || !map_ids)
		goto out;
	for (size_t i = 0; i < pp->nlocs; i++) {
		const struct hwt_rep_frame_key *fk =
		    hwt_rep_dict_frame_key(dict, pp->loc_frames[i]);
		const char *name = hwt_rep_frame_label(dict, pp->loc_frames[i]);
		int64_t key[2];
		uint32_t fid, mid;

		perftools__profiles__location__init(&locs[i]);
		perftools__profiles__line__init(&lines[i]);
		locs[i].id = i + 1;
		locs[i].address = fk->addr;
		if ((err = str_index(pp, name, &key[0])) < 0 ||
		    (err = str_index(pp, fk->file ? hwt_rep_dict_str_get(dict, fk->file) : "",
				     &key[1])) < 0)
			goto out;
		err = hwt_rep_set_intern(&pp->functions, key, sizeof(key), &fid);
		if (err < 0)
			goto out;
		if (err == 1) {
			Perftools__Profiles__Function *fn = &funcs[fid];

			perftools__profiles__function__init(fn);
			fn->id = fid + 1;
			fn->name = key[0];
			fn->system_name = key[0];
			fn->filename = key[1];
			func_ptrs[fid] = fn;
		}
		lines[i].function_id = fid + 1;
		lines[i].line = fk->line;
		line_ptrs[i] = &lines[i];
		locs[i].line = &line_ptrs[i];
		locs[i].n_line = 1;
		if (fk->object) {
			int64_t obj;

			if ((err = str_index(pp, hwt_rep_dict_str_get(dict, fk->object), &obj)) < 0)
				goto out;
			err = hwt_rep_set_intern(&pp->mappings, &obj, sizeof(obj), &mid);
			if (err < 0)
				goto out;
			if (err == 1) {
				Perftools__Profiles__Mapping *m = &maps[mid];

				perftools__profiles__mapping__init(m);
				m->id = mid + 1;
				m->filename = obj;
				m->has_functions = true;
				m->has_filenames = true;
				m->has_line_numbers = true;
				map_ptrs[mid] = m;
			}
			locs[i].mapping_id = mid + 1;
		}
		loc_ptrs[i] = &locs[i];
	}
	err = hwt_rep_stats_text(&text, st, "hwtrace: ");
	if (err < 0)
		goto out;
	{
		/* The two stats lines become two comments. */
		char *nl = memchr(text.data, '\n', text.len);
		int64_t c0, c1;

		*nl = '\0';
		text.data[text.len - 1] = '\0';
		if ((err = str_index(pp, (const char *)text.data, &c0)) < 0 ||
		    (err = str_index(pp, nl + 1, &c1)) < 0)
			goto out;
		comments[0] = c0;
		comments[1] = c1;
	}
	err = -ENOMEM;
	strs = calloc(pp->strings.n, sizeof(*strs));
	if (!strs)
		goto out;
	for (size_t i = 0; i < pp->strings.n; i++)
		strs[i] = (char *)hwt_rep_set_key(&pp->strings, (uint32_t)i, NULL);
	pp->sample_ptrs = malloc((pp->nsamples + 1) * sizeof(*pp->sample_ptrs));
	if (!pp->sample_ptrs)
		goto out;
	for (size_t i = 0; i < pp->nsamples; i++)
		pp->sample_ptrs[i] = &pp->samples[i];
	prof.sample_type = type_ptrs;
	prof.n_sample_type = 2;
	prof.sample = pp->sample_ptrs;
	prof.n_sample = pp->nsamples;
	prof.mapping = map_ptrs;
	prof.n_mapping = pp->mappings.n;
	prof.location = loc_ptrs;
	prof.n_location = pp->nlocs;
	prof.function = func_ptrs;
	prof.n_function = pp->functions.n;
	prof.string_table = strs;
	prof.n_string_table = pp->strings.n;
	prof.period_type = &period_type;
	prof.period = 1;
	prof.comment = comments;
	prof.n_comment = 2;
	prof.default_sample_type = types[1].type;
	size = perftools__profiles__profile__get_packed_size(&prof);
	packed = malloc(size ? size : 1);
	if (!packed)
		goto out;
	if (perftools__profiles__profile__pack(&prof, packed) != size) {
		err = -HWT_EINTERNAL;
		goto out;
	}
	err = gzip_into(packed, size, out);
out:
	hwt_buf_fini(&text);
	free(packed);
	free(strs);
	free(locs);
	free(loc_ptrs);
	free(lines);
	free(line_ptrs);
	free(funcs);
	free(func_ptrs);
	free(maps);
	free(map_ptrs);
	free(map_names);
	free(map_ids);
	return err;
}

static int pprof_finish(struct hwt_rep_render_ctx *ctx, int err, struct hwt_buf *out)
{
	struct pprof *pp = ctx->state;

	if (err >= 0 && pp)
		err = build_and_pack(ctx, pp, out);
	if (pp) {
		hwt_rep_set_fini(&pp->strings);
		hwt_rep_set_fini(&pp->functions);
		hwt_rep_set_fini(&pp->mappings);
		hwt_rep_arena_fini(&pp->arena);
		free(pp->loc_of_frame);
		free(pp->loc_frames);
		free(pp->samples);
		free(pp->sample_ptrs);
		free(pp);
	}
	ctx->state = NULL;
	return err;
}

const struct hwt_rep_format_ops hwt_rep_fmt_pprof = {
    .name = "pprof",
    .format = HWT_REP_FMT_PPROF,
    .init = pprof_init,
    .process = pprof_process,
    .finish = pprof_finish,
};
