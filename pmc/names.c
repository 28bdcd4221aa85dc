/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pmc/names.c - perf's generic event names (hardware, software and hardware
 * cache events, spelled as perf spells them, so perf users type what they
 * know), the "did you mean" suggestions for unknown names, and the small
 * text helpers the module shares.
 */
#include "pmc/pmc_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define HW(n, a, c)                                                                                \
	{                                                                                          \
		n, a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_##c, HWT_PMC_LIST_HARDWARE                 \
	}
#define SW(n, a, c)                                                                                \
	{                                                                                          \
		n, a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_##c, HWT_PMC_LIST_SOFTWARE                 \
	}

const struct hwt_pmc_generic hwt_pmc_generic_events[] = {
    /* perf list's order: alphabetical within each class */
    HW("branch-instructions", "branches", BRANCH_INSTRUCTIONS),
    HW("branch-misses", NULL, BRANCH_MISSES),
    HW("bus-cycles", NULL, BUS_CYCLES),
    HW("cache-misses", NULL, CACHE_MISSES),
    HW("cache-references", NULL, CACHE_REFERENCES),
    HW("cpu-cycles", "cycles", CPU_CYCLES),
    HW("instructions", NULL, INSTRUCTIONS),
    HW("ref-cycles", NULL, REF_CPU_CYCLES),
    HW("stalled-cycles-backend", "idle-cycles-backend", STALLED_CYCLES_BACKEND),
    HW("stalled-cycles-frontend", "idle-cycles-frontend", STALLED_CYCLES_FRONTEND),
    SW("alignment-faults", NULL, ALIGNMENT_FAULTS),
    SW("bpf-output", NULL, BPF_OUTPUT),
    SW("cgroup-switches", NULL, CGROUP_SWITCHES),
    SW("context-switches", "cs", CONTEXT_SWITCHES),
    SW("cpu-clock", NULL, CPU_CLOCK),
    SW("cpu-migrations", "migrations", CPU_MIGRATIONS),
    SW("dummy", NULL, DUMMY),
    SW("emulation-faults", NULL, EMULATION_FAULTS),
    SW("major-faults", NULL, PAGE_FAULTS_MAJ),
    SW("minor-faults", NULL, PAGE_FAULTS_MIN),
    SW("page-faults", "faults", PAGE_FAULTS),
    SW("task-clock", NULL, TASK_CLOCK),
};
const size_t hwt_pmc_generic_count = HWT_ARRAY_SIZE(hwt_pmc_generic_events);

/* Hardware cache events: perf's names and its table of valid operations per
 * cache (evsel__is_cache_op_valid), so we accept exactly what perf does. */
static const struct {
	const char *name;
	uint32_t id;
	uint8_t ops; /* bit per PERF_COUNT_HW_CACHE_OP_* */
} caches[] = {
    {"L1-dcache", PERF_COUNT_HW_CACHE_L1D, 7}, {"L1-icache", PERF_COUNT_HW_CACHE_L1I, 5},
    {"LLC", PERF_COUNT_HW_CACHE_LL, 7},	       {"dTLB", PERF_COUNT_HW_CACHE_DTLB, 7},
    {"iTLB", PERF_COUNT_HW_CACHE_ITLB, 1},     {"branch", PERF_COUNT_HW_CACHE_BPU, 1},
    {"node", PERF_COUNT_HW_CACHE_NODE, 7},
};
static const char *const cache_ops[][2] = {
    {"loads", "load-misses"},
    {"stores", "store-misses"},
    {"prefetches", "prefetch-misses"},
};

int hwt_pmc_cache_next(unsigned *state, char *name, size_t len, uint64_t *config)
{
	/* state = (cache * 3 + op) * 2 + result */
	while (*state < HWT_ARRAY_SIZE(caches) * 6) {
		unsigned s = (*state)++;
		unsigned c = s / 6, op = (s / 2) % 3, res = s % 2;

		if (!(caches[c].ops & (1u << op)))
			continue;
		snprintf(name, len, "%s-%s", caches[c].name, cache_ops[op][res]);
		*config = caches[c].id | ((uint64_t)op << 8) |
			  ((uint64_t)(res ? PERF_COUNT_HW_CACHE_RESULT_MISS
					  : PERF_COUNT_HW_CACHE_RESULT_ACCESS)
			   << 16);
		return 1;
	}
	return 0;
}

bool hwt_pmc_generic_find(const char *name, uint32_t *type, uint64_t *config)
{
	char cname[64];
	unsigned st = 0;
	uint64_t cc;

	for (size_t i = 0; i < hwt_pmc_generic_count; i++) {
		const struct hwt_pmc_generic *g = &hwt_pmc_generic_events[i];

		if (!strcasecmp(name, g->name) || (g->alias && !strcasecmp(name, g->alias))) {
			*type = g->type;
			*config = g->config;
			return true;
		}
	}
	while (hwt_pmc_cache_next(&st, cname, sizeof(cname), &cc)) {
		if (!strcasecmp(name, cname)) {
			*type = PERF_TYPE_HW_CACHE;
			*config = cc;
			return true;
		}
	}
	return false;
}

int hwt_pmc_edit_distance(const char *a, const char *b, int cap)
{
	/* Two-row Levenshtein, case-insensitive; names are short. */
	size_t la = strlen(a), lb = strlen(b);
	int row0[HWT_PMC_NAME_MAX + 1], row1[HWT_PMC_NAME_MAX + 1];
	int *prev = row0, *cur = row1;

	if (la > HWT_PMC_NAME_MAX || lb > HWT_PMC_NAME_MAX)
		return cap;
	if ((la > lb ? la - lb : lb - la) >= (size_t)cap)
		return cap;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int best;

		cur[0] = (int)i;
		best = cur[0];
		for (size_t j = 1; j <= lb; j++) {
			int cost =
			    tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
			int v = prev[j - 1] + cost;

			if (prev[j] + 1 < v)
				v = prev[j] + 1;
			if (cur[j - 1] + 1 < v)
				v = cur[j - 1] + 1;
			cur[j] = v;
			if (v < best)
				best = v;
		}
		if (best >= cap)
			return cap;
		int *t = prev;
		prev = cur;
		cur = t;
	}
	return prev[lb] < cap ? prev[lb] : cap;
}

#define SUGGEST_MAX 8

struct suggest {
	const char *want;
	int cap;
	int n;
	int dist[SUGGEST_MAX];
	char name[SUGGEST_MAX][HWT_PMC_NAME_MAX];
};

static int suggest_one(void *ctx, const char *name)
{
	struct suggest *s = ctx;
	int d = hwt_pmc_edit_distance(s->want, name, s->cap + 1);
	int pos;

	if (d > s->cap)
		return 0;
	for (int i = 0; i < s->n; i++) {
		if (!strcasecmp(s->name[i], name))
			return 0;
	}
	pos = s->n;
	while (pos > 0 && s->dist[pos - 1] > d)
		pos--;
	if (pos >= SUGGEST_MAX)
		return 0;
	if (s->n < SUGGEST_MAX)
		s->n++;
	memmove(&s->dist[pos + 1], &s->dist[pos], sizeof(int) * (size_t)(s->n - 1 - pos));
	memmove(s->name[pos + 1], s->name[pos], HWT_PMC_NAME_MAX * (size_t)(s->n - 1 - pos));
	s->dist[pos] = d;
	snprintf(s->name[pos], HWT_PMC_NAME_MAX, "%s", name);
	return 0;
}

static int suggest_tp(void *ctx, const char *name, uint64_t id)
{
	(void)id;
	return suggest_one(ctx, name);
}

int hwt_pmc_suggest(const struct hwt_pmc_config *cfg, const char *name, char *buf, size_t len,
		    int max)
{
	struct suggest s;
	char cname[64];
	unsigned st = 0;
	uint64_t cc;
	size_t used = 0;
	int n;

	if (len)
		buf[0] = '\0';
	memset(&s, 0, sizeof(s));
	s.want = name;
	/* Typos of short names are a letter or two; long libpfm4 names get
	 * more slack. */
	s.cap = (int)strlen(name) / 3;
	if (s.cap < 2)
		s.cap = 2;
	for (size_t i = 0; i < hwt_pmc_generic_count; i++) {
		suggest_one(&s, hwt_pmc_generic_events[i].name);
		if (hwt_pmc_generic_events[i].alias)
			suggest_one(&s, hwt_pmc_generic_events[i].alias);
	}
	while (hwt_pmc_cache_next(&st, cname, sizeof(cname), &cc))
		suggest_one(&s, cname);
	if (hwt_pmc_pfm_init() == 0)
		hwt_pmc_pfm_foreach_name(suggest_one, &s);
	/* subsys:event in lower case may be a misspelt tracepoint. */
	if (strchr(name, ':') && !strstr(name, "::") && cfg)
		hwt_pmc_tracepoint_resolve(cfg, "*", "*", suggest_tp, &s);
	n = s.n < max ? s.n : max;
	for (int i = 0; i < n && len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", s.name[i]);

		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
	return n;
}

int hwt_pmc_sysfs_path(const struct hwt_pmc_config *cfg, char *buf, size_t len, const char *fmt,
		       ...)
{
	const char *root = cfg && cfg->sysfs_root ? cfg->sysfs_root : "/sys";
	va_list ap;
	int n, m;

	n = snprintf(buf, len, "%s/", root);
	if (n < 0 || (size_t)n >= len)
		return -HWT_ETOOBIG;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)m >= len - (size_t)n)
		return -HWT_ETOOBIG;
	return 0;
}

int hwt_pmc_read_text(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if (!len)
		return -HWT_EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return (int)n;
}

bool hwt_pmc_match(const char *text, const char *pattern)
{
	size_t lp;

	if (!pattern || !*pattern)
		return true;
	if (!text)
		return false;
	lp = strlen(pattern);
	for (const char *p = text; *p; p++) {
		if (!strncasecmp(p, pattern, lp))
			return true;
	}
	return false;
}

int hwt_pmc_paranoid_read(const char *path, int *level)
{
	char buf[64], *end;
	long v;
	int n;

	n = hwt_pmc_read_text(path ? path : "/proc/sys/kernel/perf_event_paranoid", buf,
			      sizeof(buf));
	if (n < 0)
		return n;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (end == buf || errno || v < -1000 || v > 1000)
		return -HWT_EFORMAT;
	*level = (int)v;
	return 0;
}

void hwt_pmc_config_init(struct hwt_pmc_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
}
