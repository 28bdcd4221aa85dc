/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pmc/stat.c - `stat` aggregation and output in perf stat's layout: one
 * line per event (count, unit, name, a derived metric after '#'), the noise
 * of repeated runs, the multiplexing percentage, the elapsed/user/sys
 * footer, per-interval lines, and perf's -x CSV fields. Column widths and
 * number formats are perf's (tools/perf/util/stat-display.c), so a perf
 * user reads it at a glance and scripts that parse perf's CSV parse ours.
 *
 * Derived metrics, as perf computes them, when both inputs were counted:
 *   task-clock/cpu-clock  CPUs utilized = clock ns / wall ns
 *   cycles                GHz = cycles / clock ns
 *   instructions          insn per cycle = instructions / cycles
 *   branch-misses         % of all branches
 *   cache-misses          % of all cache refs
 *   anything else         rate per second of clock time (K/sec, M/sec...)
 * Repeated runs report the mean and the relative standard error of the
 * mean ("( +- x% )"), as perf does.
 */
#include "pmc/pmc_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Welford's running mean and variance. */
struct stats {
	double n, mean, m2;
};

static void stats_add(struct stats *s, double v)
{
	double delta;

	s->n += 1;
	delta = v - s->mean;
	s->mean += delta / s->n;
	s->m2 += delta * (v - s->mean);
}

/* Standard deviation of the mean (perf's stddev_stats). */
static double stats_stddev_mean(const struct stats *s)
{
	double var;

	if (s->n < 2)
		return 0;
	var = s->m2 / (s->n - 1);
	return sqrt(var / s->n);
}

static double rel_pct(double sd, double mean)
{
	return mean ? 100.0 * sd / mean : 0;
}

struct ev_stats {
	struct stats val, ena, run;
	uint32_t flags_or;
	unsigned counted; /* runs in which it ran at all */
};

struct hwt_pmc_stat {
	const struct hwt_pmc_evlist *list;
	struct hwt_pmc_stat_config cfg;
	size_t nev;
	struct ev_stats *ev;
	struct stats wall, user, sys;
	/* Indexes of the metric inputs (-1: absent). */
	int clock, cycles, instructions, branches, cache_refs;
};

void hwt_pmc_stat_config_init(struct hwt_pmc_stat_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->big_num = true;
	cfg->runs = 1;
}

/* Generic events carry their hybrid PMU's type in config bits 32+. */
static bool match(const struct hwt_pmc_event *ev, uint32_t type, uint64_t config)
{
	uint64_t c = ev->attr.config;

	if (type == PERF_TYPE_HARDWARE || type == PERF_TYPE_HW_CACHE)
		c &= 0xffffffffull;
	return ev->attr.type == type && c == config;
}

/* Metric inputs pair within a privilege context and, on hybrid CPUs,
 * within one core PMU (cpu_core's instructions per cpu_core's cycles). */
static bool same_ctx(const struct hwt_pmc_event *a, const struct hwt_pmc_event *b)
{
	return a->attr.exclude_user == b->attr.exclude_user &&
	       a->attr.exclude_kernel == b->attr.exclude_kernel && !strcmp(a->pmu, b->pmu);
}

/* The first event of (type, config), preferring the privilege context of
 * ev as perf does (cycles:u pairs with instructions:u); -1 if none. */
static int find(const struct hwt_pmc_stat *st, uint32_t type, uint64_t config,
		const struct hwt_pmc_event *ctx)
{
	int any = -1;

	for (size_t i = 0; i < st->nev; i++) {
		const struct hwt_pmc_event *ev = hwt_pmc_evlist_event(st->list, i);

		if (!match(ev, type, config))
			continue;
		if (!ctx || same_ctx(ev, ctx))
			return (int)i;
		if (any < 0)
			any = (int)i;
	}
	return ctx ? -1 : any;
}

int hwt_pmc_stat_alloc(struct hwt_pmc_stat **out, const struct hwt_pmc_evlist *list,
		       const struct hwt_pmc_stat_config *cfg)
{
	struct hwt_pmc_stat *st;

	*out = NULL;
	if (!list)
		return -HWT_EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->list = list;
	hwt_pmc_stat_config_init(&st->cfg);
	if (cfg && hwt_opts_copy(&st->cfg, sizeof(st->cfg), cfg) < 0) {
		free(st);
		return -HWT_EINVAL;
	}
	st->nev = hwt_pmc_evlist_count(list);
	st->ev = calloc(st->nev ? st->nev : 1, sizeof(*st->ev));
	if (!st->ev) {
		hwt_pmc_stat_free(st);
		return -ENOMEM;
	}
	st->clock = find(st, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, NULL);
	if (st->clock < 0)
		st->clock = find(st, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, NULL);
	*out = st;
	return 0;
}

void hwt_pmc_stat_free(struct hwt_pmc_stat *st)
{
	if (!st)
		return;
	free(st->ev);
	free(st);
}

int hwt_pmc_stat_add_run(struct hwt_pmc_stat *st, const struct hwt_pmc_count *counts, size_t n,
			 double wall_s, double user_s, double sys_s)
{
	if (!st || n < st->nev)
		return -HWT_EINVAL;
	for (size_t i = 0; i < st->nev; i++) {
		struct ev_stats *e = &st->ev[i];

		stats_add(&e->val, counts[i].scaled);
		stats_add(&e->ena, (double)counts[i].enabled);
		stats_add(&e->run, (double)counts[i].running);
		e->flags_or |= counts[i].flags;
		if (!(counts[i].flags & (HWT_PMC_COUNT_NOT_COUNTED | HWT_PMC_COUNT_NOT_SUPPORTED)))
			e->counted++;
	}
	stats_add(&st->wall, wall_s);
	stats_add(&st->user, user_s);
	stats_add(&st->sys, sys_s);
	return 0;
}

/* One event's figures as a line needs them, from a summary or an interval. */
struct line {
	const struct hwt_pmc_event *ev;
	double val; /* scaled, mean over runs */
	double ena, run;
	double noise; /* relative stddev of the mean, % (0: none) */
	bool supported, counted, user_only;
};

/* Formats v with fmt-like precision (2 decimals for scaled units, else 0)
 * and thousands separators in the integer part when sep is not 0. */
static void fmt_num(char *buf, size_t len, double v, int decimals, char sep)
{
	char tmp[64];
	const char *dot, *p;
	size_t intlen, out = 0, lead;

	snprintf(tmp, sizeof(tmp), "%.*f", decimals, v);
	if (!sep) {
		snprintf(buf, len, "%s", tmp);
		return;
	}
	p = tmp;
	if (*p == '-') {
		if (out + 1 < len)
			buf[out++] = '-';
		p++;
	}
	dot = strchr(p, '.');
	intlen = dot ? (size_t)(dot - p) : strlen(p);
	lead = intlen % 3 ? intlen % 3 : 3;
	for (size_t i = 0; i < intlen && out + 1 < len; i++) {
		if (i && (i - lead) % 3 == 0 && i >= lead && out + 2 < len)
			buf[out++] = sep;
		buf[out++] = p[i];
	}
	for (const char *q = p + intlen; *q && out + 1 < len; q++)
		buf[out++] = *q;
	buf[out] = '\0';
}

struct metric {
	char val[32]; /* formatted as perf formats it in the table */
	char unit[32];
	bool present; /* this event has a metric (possibly empty) */
	bool valid;   /* the value was computed */
};

/* perf's rate units (convert_unit_double). */
static double rate_unit(double v, char *unit, size_t len)
{
	if (v > 1e9) {
		snprintf(unit, len, "G/sec");
		return v / 1e9;
	}
	if (v > 1e6) {
		snprintf(unit, len, "M/sec");
		return v / 1e6;
	}
	if (v > 1e3) {
		snprintf(unit, len, "K/sec");
		return v / 1e3;
	}
	snprintf(unit, len, "/sec");
	return v;
}

/* fmt is one of the literal formats above (perf's, per metric). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void set_metric(struct metric *m, const char *fmt, double v, const char *unit)
{
	m->present = true;
	snprintf(m->unit, sizeof(m->unit), "%s", unit);
	if (fmt) {
		snprintf(m->val, sizeof(m->val), fmt, v);
		m->valid = true;
	}
}
#pragma GCC diagnostic pop

/* vals[i] are the displayed (scaled) values of all events for this line's
 * run or interval; wall_ns is the elapsed time it covers. */
static void compute_metric(const struct hwt_pmc_stat *st, size_t i, const double *vals,
			   const bool *ok, double wall_ns, struct metric *m)
{
	const struct hwt_pmc_event *ev = hwt_pmc_evlist_event(st->list, i);
	double v = vals[i];
	int j;

	memset(m, 0, sizeof(*m));
	if (match(ev, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS)) {
		j = find(st, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, ev);
		set_metric(m, j >= 0 && ok[j] && vals[j] ? "%7.2f " : NULL,
			   j >= 0 && vals[j] ? v / vals[j] : 0, "insn per cycle");
		return;
	}
	if (match(ev, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES)) {
		j = find(st, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, ev);
		set_metric(m, j >= 0 && ok[j] && vals[j] ? "%7.2f%%" : NULL,
			   j >= 0 && vals[j] ? 100.0 * v / vals[j] : 0, "of all branches");
		return;
	}
	if (match(ev, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES)) {
		j = find(st, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, ev);
		set_metric(m, j >= 0 && ok[j] && vals[j] ? "%8.3f %%" : NULL,
			   j >= 0 && vals[j] ? 100.0 * v / vals[j] : 0, "of all cache refs");
		return;
	}
	if (match(ev, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK) ||
	    match(ev, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK)) {
		set_metric(m, wall_ns > 0 ? "%8.3f" : NULL, wall_ns > 0 ? v / wall_ns : 0,
			   "CPUs utilized");
		return;
	}
	j = st->clock;
	if (match(ev, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES)) {
		set_metric(m, j >= 0 && ok[j] && vals[j] ? "%8.3f" : NULL,
			   j >= 0 && vals[j] ? v / vals[j] : 0, "GHz");
		return;
	}
	if (j >= 0 && ok[j] && vals[j] > 0) {
		char unit[16];
		double r = rate_unit(1e9 * v / vals[j], unit, sizeof(unit));

		set_metric(m, "%8.3f", r, unit);
	}
}

static int print_line(const struct hwt_pmc_stat *st, const struct line *l, const struct metric *m,
		      const char *ts, struct hwt_buf *out)
{
	const char *sep = st->cfg.csv_sep;
	char name[HWT_PMC_NAME_MAX + 4];
	char num[64];
	int err = 0;
	bool bad = !l->supported || !l->counted;
	int decimals = l->ev->scale != 1.0 ? 2 : 0;

	snprintf(name, sizeof(name), "%s%s", l->ev->name, l->user_only ? ":u" : "");
	if (sep) {
		char mval[32];
		const char *p;
		size_t k = 0;

		if (ts)
			err |= hwt_buf_printf(out, "%s%s", ts, sep);
		if (bad)
			snprintf(num, sizeof(num), "%s",
				 l->supported ? "<not counted>" : "<not supported>");
		else
			fmt_num(num, sizeof(num), l->val * l->ev->scale, decimals, 0);
		err |= hwt_buf_printf(out, "%s%s%s%s%s", num, sep, l->ev->unit, sep, name);
		if (st->cfg.runs > 1)
			err |= hwt_buf_printf(out, "%s%.2f%%", sep, l->noise);
		/* perf: the share of the time counted; 0.00 for an event that
		 * never ran, 100.00 for one not supported. */
		err |= hwt_buf_printf(out, "%s%.0f%s%.2f", sep, l->run, sep,
				      l->ena > 0 && l->run > 0 ? 100.0 * l->run / l->ena
				      : l->supported	       ? 0.0
							       : 100.0);
		/* perf keeps only the number of the metric and trims the unit */
		mval[0] = '\0';
		if (m->valid) {
			for (p = m->val; *p == ' '; p++)
				;
			while ((p[k] >= '0' && p[k] <= '9') || p[k] == '.' || p[k] == '-')
				k++;
			snprintf(mval, sizeof(mval), "%.*s", (int)k, p);
		}
		err |= hwt_buf_printf(out, "%s%s%s%s\n", sep, mval, sep, m->valid ? m->unit : "");
		return err ? -ENOMEM : 0;
	}

	if (ts)
		err |= hwt_buf_printf(out, "%s ", ts);
	if (bad)
		err |= hwt_buf_printf(out, "%18s ",
				      l->supported ? "<not counted>" : "<not supported>");
	else {
		fmt_num(num, sizeof(num), l->val * l->ev->scale, decimals,
			st->cfg.big_num ? (st->cfg.thousands_sep ? st->cfg.thousands_sep : ',')
					: 0);
		err |= hwt_buf_printf(out, "%18s ", num);
	}
	err |= hwt_buf_printf(out, "%-4s %-32s", l->ev->unit, name);
	if (bad)
		err |= hwt_buf_printf(out, "%-28s", "");
	else if (m->valid)
		/* perf pads the unit so that value and unit take 31 columns */
		err |=
		    hwt_buf_printf(out, " # %s %-*s", m->val,
				   (int)(strlen(m->val) < 31 ? 31 - strlen(m->val) : 0), m->unit);
	else
		err |= hwt_buf_printf(out, "%-35s", "");
	if (!bad && l->noise)
		err |= hwt_buf_printf(out, "  ( +-%6.2f%% )", l->noise);
	if (!bad && l->run < l->ena)
		err |= hwt_buf_printf(out, "  (%.2f%%)", 100.0 * l->run / l->ena);
	else if (bad && l->supported && l->ena > 0)
		err |= hwt_buf_printf(out, "  (0.00%%)");
	err |= hwt_buf_printf(out, "\n");
	return err ? -ENOMEM : 0;
}

/* Metric inputs must be the whole list's values; small lists use the stack,
 * large ones the heap (printing is a cold path). */
static int print_all(const struct hwt_pmc_stat *st, const struct line *lines, double wall_ns,
		     const char *ts, struct hwt_buf *out)
{
	double *vals = calloc(st->nev ? st->nev : 1, sizeof(double));
	bool *ok = calloc(st->nev ? st->nev : 1, sizeof(bool));
	int err = 0;

	if (!vals || !ok) {
		free(vals);
		free(ok);
		return -ENOMEM;
	}
	for (size_t i = 0; i < st->nev; i++) {
		vals[i] = lines[i].val;
		ok[i] = lines[i].supported && lines[i].counted;
	}
	for (size_t i = 0; i < st->nev && !err; i++) {
		struct metric m;

		memset(&m, 0, sizeof(m));
		if (ok[i])
			compute_metric(st, i, vals, ok, wall_ns, &m);
		err = print_line(st, &lines[i], &m, ts, out);
	}
	free(vals);
	free(ok);
	return err;
}

int hwt_pmc_stat_print(const struct hwt_pmc_stat *st, struct hwt_buf *out)
{
	struct line *lines;
	int err = 0;
	unsigned runs;

	if (!st || !out)
		return -HWT_EINVAL;
	runs = (unsigned)st->wall.n;
	lines = calloc(st->nev ? st->nev : 1, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	for (size_t i = 0; i < st->nev; i++) {
		const struct ev_stats *e = &st->ev[i];
		struct line *l = &lines[i];

		l->ev = hwt_pmc_evlist_event(st->list, i);
		l->val = e->val.mean;
		l->ena = e->ena.mean;
		l->run = e->run.mean;
		l->supported = !(e->flags_or & HWT_PMC_COUNT_NOT_SUPPORTED);
		l->counted = e->counted > 0;
		l->user_only = e->flags_or & HWT_PMC_COUNT_USER_ONLY;
		l->noise = runs > 1 ? rel_pct(stats_stddev_mean(&e->val), e->val.mean) : 0;
	}
	if (!st->cfg.csv_sep) {
		err |= hwt_buf_printf(out, "\n Performance counter stats for %s",
				      st->cfg.target ? st->cfg.target : "'unknown'");
		if (runs > 1)
			err |= hwt_buf_printf(out, " (%u runs)", runs);
		err |= hwt_buf_printf(out, ":\n\n");
	}
	if (!err)
		err = print_all(st, lines, st->wall.mean * 1e9, NULL, out);
	if (!err && !st->cfg.csv_sep) {
		if (runs > 1) {
			double sd = stats_stddev_mean(&st->wall);
			/* perf's precision: two digits past the first of sd */
			int prec = sd > 1 ? 2 : sd > 0 ? (int)lround(ceil(-log10(sd))) + 2 : 6;
			double pct = rel_pct(sd, st->wall.mean);

			err |= hwt_buf_printf(out, "\n %17.*f +- %.*f seconds time elapsed", prec,
					      st->wall.mean, prec, sd);
			if (pct)
				err |= hwt_buf_printf(out, "  ( +-%6.2f%% )", pct);
			err |= hwt_buf_printf(out, "\n\n");
		} else {
			err |= hwt_buf_printf(out, "\n %17.9f seconds time elapsed\n\n",
					      st->wall.mean);
			if (st->cfg.show_user_sys)
				err |= hwt_buf_printf(
				    out, " %17.9f seconds user\n %17.9f seconds sys\n\n",
				    st->user.mean, st->sys.mean);
		}
	}
	free(lines);
	return err ? -ENOMEM : 0;
}

int hwt_pmc_stat_print_interval(const struct hwt_pmc_stat *st, const struct hwt_pmc_count *counts,
				size_t n, double ts, double len_s, unsigned index,
				struct hwt_buf *out)
{
	struct line *lines;
	char tsbuf[48];
	int err = 0;

	if (!st || !out || n < st->nev || ts < 0)
		return -HWT_EINVAL;
	lines = calloc(st->nev ? st->nev : 1, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	for (size_t i = 0; i < st->nev; i++) {
		struct line *l = &lines[i];

		l->ev = hwt_pmc_evlist_event(st->list, i);
		l->val = counts[i].scaled;
		l->ena = (double)counts[i].enabled;
		l->run = (double)counts[i].running;
		l->supported = !(counts[i].flags & HWT_PMC_COUNT_NOT_SUPPORTED);
		l->counted = !(counts[i].flags & HWT_PMC_COUNT_NOT_COUNTED);
		l->user_only = counts[i].flags & HWT_PMC_COUNT_USER_ONLY;
	}
	{
		unsigned long long sec = (unsigned long long)ts;
		unsigned long long nsec = (unsigned long long)llround((ts - (double)sec) * 1e9);

		if (nsec >= 1000000000ull) {
			sec++;
			nsec -= 1000000000ull;
		}
		snprintf(tsbuf, sizeof(tsbuf), "%6llu.%09llu", sec, nsec);
	}
	if (!st->cfg.csv_sep && index % 25 == 0)
		err |= hwt_buf_printf(out, "#           time             counts unit events\n");
	if (!err)
		err = print_all(st, lines, len_s * 1e9, tsbuf, out);
	free(lines);
	return err ? -ENOMEM : 0;
}
