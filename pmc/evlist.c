/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pmc/evlist.c - the -e parser: splits a spec into items and groups, and
 * turns each item into a perf_event_attr by trying, in order, perf's
 * generic names, raw rNNNN codes, sysfs PMU terms (pmu/a=1,b/), tracepoints
 * and finally libpfm4's tables. A failed add leaves the list unchanged and
 * explains itself, with the closest known names for a typo.
 */
#include "pmc/pmc_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int hwt_pmc_evlist_alloc(struct hwt_pmc_evlist **out, const struct hwt_pmc_config *cfg)
{
	struct hwt_pmc_evlist *list;

	*out = NULL;
	list = calloc(1, sizeof(*list));
	if (!list)
		return -ENOMEM;
	hwt_pmc_config_init(&list->cfg);
	if (cfg && hwt_opts_copy(&list->cfg, sizeof(list->cfg), cfg) < 0) {
		free(list);
		return -HWT_EINVAL;
	}
	*out = list;
	return 0;
}

void hwt_pmc_evlist_free(struct hwt_pmc_evlist *list)
{
	if (!list)
		return;
	while (list->units) {
		struct hwt_pmc_unit *u = list->units;

		list->units = u->next;
		free(u);
	}
	free(list->events);
	free(list);
}

const char *hwt_pmc_evlist_errmsg(const struct hwt_pmc_evlist *list)
{
	return list ? list->errmsg : "";
}

size_t hwt_pmc_evlist_count(const struct hwt_pmc_evlist *list)
{
	return list ? list->count : 0;
}

const struct hwt_pmc_event *hwt_pmc_evlist_event(const struct hwt_pmc_evlist *list, size_t i)
{
	return list && i < list->count ? &list->events[i] : NULL;
}

struct perf_event_attr *hwt_pmc_evlist_attr(struct hwt_pmc_evlist *list, size_t i)
{
	return list && i < list->count ? &list->events[i].attr : NULL;
}

static int push(struct hwt_pmc_evlist *list, const struct hwt_pmc_event *ev)
{
	if (list->count >= HWT_PMC_MAX_EVENTS)
		return -HWT_ETOOBIG;
	if (list->count == list->cap) {
		size_t cap = list->cap ? list->cap * 2 : 16;
		struct hwt_pmc_event *n = realloc(list->events, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		list->events = n;
		list->cap = cap;
	}
	list->events[list->count++] = *ev;
	return 0;
}

static void init_event(struct hwt_pmc_event *ev, const char *name)
{
	memset(ev, 0, sizeof(*ev));
	snprintf(ev->name, sizeof(ev->name), "%s", name);
	snprintf(ev->canon, sizeof(ev->canon), "%s", name);
	ev->attr.size = sizeof(ev->attr);
	ev->unit = "";
	ev->scale = 1.0;
}

/* perf's event modifiers (tools/perf/util/parse-events.l, "modifier_event").
 * Returns 0, or -HWT_EPARSE for a letter we do not know. */
static int apply_perf_mods(struct hwt_pmc_event *ev, const char *mods)
{
	bool u = false, k = false, h = false, H = false, G = false;
	int precise = 0;

	/* perf excludes guests unless G or H say otherwise (a KVM host's
	 * counts are the host's, as with libpfm4's events). */
	if (!strchr(mods, 'G') && !strchr(mods, 'H'))
		ev->attr.exclude_guest = 1;

	for (const char *m = mods; *m; m++) {
		switch (*m) {
		case 'u':
			u = true;
			break;
		case 'k':
			k = true;
			break;
		case 'h':
			h = true;
			break;
		case 'H':
			H = true;
			break;
		case 'G':
			G = true;
			break;
		case 'I':
			ev->attr.exclude_idle = 1;
			break;
		case 'D':
			ev->attr.pinned = 1;
			break;
		case 'p':
			precise++;
			break;
		case 'P':
			/* The highest level that opens (perf's :P). */
			ev->precise_max = true;
			break;
		case 'S':
			ev->sample_read = true;
			break;
		case 'W':
			ev->weak_group = true;
			break;
		case 'e':
			ev->attr.exclusive = 1;
			break;
		case 'b':
			/* perf's BPF-aggregated counter: counts the same here. */
			break;
		default:
			return -HWT_EPARSE;
		}
	}
	if (precise > 3)
		return -HWT_EPARSE;
	if (u || k || h) {
		ev->attr.exclude_user = !u;
		ev->attr.exclude_kernel = !k;
		ev->attr.exclude_hv = !h;
		ev->user_mods = true;
	}
	if (H || G) {
		ev->attr.exclude_host = !H;
		ev->attr.exclude_guest = !G;
	}
	if (precise)
		ev->attr.precise_ip = (unsigned)precise;
	if (ev->precise_max)
		ev->attr.precise_ip = 3;
	return 0;
}

static bool is_clock(const struct perf_event_attr *a)
{
	return a->type == PERF_TYPE_SOFTWARE &&
	       (a->config == PERF_COUNT_SW_CPU_CLOCK || a->config == PERF_COUNT_SW_TASK_CLOCK);
}

/* The parse state of one hwt_pmc_evlist_add: events go to a scratch list
 * first so that a failure leaves the real one untouched. */
struct parse {
	struct hwt_pmc_evlist *list;
	struct hwt_pmc_evlist tmp;
	size_t base; /* index the first new event will have in list */
};

static int fail(struct parse *p, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct parse *p, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->list->errmsg, sizeof(p->list->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

static int add_event(struct parse *p, struct hwt_pmc_event *ev)
{
	int err;

	if (is_clock(&ev->attr)) {
		ev->unit = "msec";
		ev->scale = 1e-6;
	}
	ev->leader = (int)(p->base + p->tmp.count);
	ev->nr_members = 1;
	err = push(&p->tmp, ev);
	if (err == -HWT_ETOOBIG)
		return fail(p, err, "too many events (more than %d)", HWT_PMC_MAX_EVENTS);
	if (err < 0)
		return fail(p, err, "out of memory");
	return 0;
}

static bool all_of(const char *s, const char *set)
{
	for (; *s; s++) {
		if (!strchr(set, *s))
			return false;
	}
	return true;
}

static bool is_ident(const char *s, size_t n, bool glob)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!(islower(c) || isdigit(c) || c == '_' || c == '-' ||
		      (glob && (c == '*' || c == '?'))))
			return false;
	}
	return true;
}

static int tp_add(void *ctx, const char *name, uint64_t id)
{
	struct parse *p = ctx;
	struct hwt_pmc_event ev;

	init_event(&ev, name);
	ev.source = HWT_PMC_SRC_TRACEPOINT;
	ev.attr.type = PERF_TYPE_TRACEPOINT;
	ev.attr.config = id;
	return add_event(p, &ev);
}

/* Deposits value into config word *cfgw at the bits a sysfs format string
 * names ("config:0-7,21", "config1:0-63"). */
static int deposit(const char *fmt, uint64_t value, struct perf_event_attr *attr)
{
	__u64 *word;
	const char *r;

	if (!strncmp(fmt, "config:", 7))
		word = &attr->config, r = fmt + 7;
	else if (!strncmp(fmt, "config1:", 8))
		word = &attr->config1, r = fmt + 8;
	else if (!strncmp(fmt, "config2:", 8))
		word = &attr->config2, r = fmt + 8;
	else
		return -HWT_EFORMAT;
	while (*r) {
		char *end;
		unsigned long lo = strtoul(r, &end, 10), hi = lo;

		if (end == r)
			return -HWT_EFORMAT;
		if (*end == '-') {
			r = end + 1;
			hi = strtoul(r, &end, 10);
			if (end == r)
				return -HWT_EFORMAT;
		}
		if (lo > hi || hi > 63)
			return -HWT_EFORMAT;
		for (unsigned long b = lo; b <= hi; b++) {
			*word &= ~(1ull << b);
			*word |= (value & 1) << b;
			value >>= 1;
		}
		r = end;
		if (*r == ',')
			r++;
		else if (*r)
			return -HWT_EFORMAT;
	}
	return 0;
}

/* perf's generic hardware and cache names inside a core PMU's slashes
 * (cpu_core/cycles/, cpu/branch-misses/): the generic event, bound to that
 * PMU on a hybrid CPU (its type in config bits 32+). */
static bool generic_on_core_pmu(struct parse *p, const char *pmu, const char *term,
				struct perf_event_attr *attr)
{
	char path[4096], text[64];
	uint32_t type;
	uint64_t config;
	int pt;

	if (!hwt_pmc_generic_find(term, &type, &config) ||
	    (type != PERF_TYPE_HARDWARE && type != PERF_TYPE_HW_CACHE))
		return false;
	pt = hwt_pmc_pmu_type(&p->list->cfg, pmu);
	if (strcmp(pmu, "cpu") != 0 &&
	    !(hwt_pmc_sysfs_path(&p->list->cfg, path, sizeof(path),
				 "bus/event_source/devices/%s/cpus", pmu) == 0 &&
	      hwt_pmc_read_text(path, text, sizeof(text)) > 0))
		return false;
	attr->type = type;
	attr->config = config;
	if (strcmp(pmu, "cpu") != 0 && pt > 0)
		attr->config |= (uint64_t)pt << 32;
	return true;
}

/* Applies "a=1,b,c=0x3" terms of sysfs PMU pmu to attr; aliases from the
 * PMU's events/ folder expand once (depth limits recursion). */
static int apply_terms(struct parse *p, const char *pmu, const char *terms,
		       struct perf_event_attr *attr, int depth)
{
	char buf[1024], path[4096], fmt[256];
	char *save = NULL, *term;

	snprintf(buf, sizeof(buf), "%s", terms);
	for (term = strtok_r(buf, ",", &save); term; term = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(term, '=');
		uint64_t value = 1;

		while (*term == ' ')
			term++;
		if (eq) {
			char *end;

			*eq = '\0';
			errno = 0;
			value = strtoull(eq + 1, &end, 0);
			if (errno || end == eq + 1 || *end)
				return fail(p, -HWT_EPARSE,
					    "bad value '%s' for term '%s' of PMU %s", eq + 1, term,
					    pmu);
		}
		if (!strcmp(term, "config")) {
			attr->config = value;
		} else if (!strcmp(term, "config1")) {
			attr->config1 = value;
		} else if (!strcmp(term, "config2")) {
			attr->config2 = value;
		} else if (!strcmp(term, "period")) {
			attr->sample_period = value;
		} else if (hwt_pmc_sysfs_path(&p->list->cfg, path, sizeof(path),
					      "bus/event_source/devices/%s/format/%s", pmu,
					      term) == 0 &&
			   hwt_pmc_read_text(path, fmt, sizeof(fmt)) > 0) {
			if (deposit(fmt, value, attr) < 0)
				return fail(p, -HWT_EFORMAT,
					    "PMU %s: cannot use format '%s' of '%s'", pmu, fmt,
					    term);
		} else if (!eq && depth < 2 &&
			   hwt_pmc_sysfs_path(&p->list->cfg, path, sizeof(path),
					      "bus/event_source/devices/%s/events/%s", pmu,
					      term) == 0 &&
			   hwt_pmc_read_text(path, fmt, sizeof(fmt)) > 0) {
			int err = apply_terms(p, pmu, fmt, attr, depth + 1);

			if (err < 0)
				return err;
		} else if (!eq && generic_on_core_pmu(p, pmu, term, attr)) {
			/* cpu_core/cycles/: perf's generic name on that PMU */
		} else {
			return fail(p, -HWT_ENOEVENT,
				    "PMU %s has no term or event '%s' (see "
				    "%s/bus/event_source/devices/%s/format)",
				    pmu, term,
				    p->list->cfg.sysfs_root ? p->list->cfg.sysfs_root : "/sys",
				    pmu);
		}
	}
	return 0;
}

/* Keeps a unit string for the list's lifetime. */
static const char *intern_unit(struct hwt_pmc_evlist *list, const char *unit)
{
	struct hwt_pmc_unit *u;

	for (u = list->units; u; u = u->next)
		if (!strcmp(u->name, unit))
			return u->name;
	if (!(u = calloc(1, sizeof(*u))))
		return NULL;
	snprintf(u->name, sizeof(u->name), "%.31s", unit);
	u->next = list->units;
	list->units = u;
	return u->name;
}

/* What sysfs says of a PMU's event beyond its encoding: a named event's
 * .scale and .unit (RAPL in Joules, IMC in MiB), and the CPUs the PMU
 * counts on (a system PMU's cpumask: one CPU per package; a hybrid core
 * PMU's cpus). */
static int pmu_props(struct parse *p, const char *pmu, const char *terms, struct hwt_pmc_event *ev)
{
	char path[4096], text[128];

	snprintf(ev->pmu, sizeof(ev->pmu), "%.31s", pmu);
	if (!strchr(terms, '=') && !strchr(terms, ',') && *terms) {
		if (hwt_pmc_sysfs_path(&p->list->cfg, path, sizeof(path),
				       "bus/event_source/devices/%s/events/%s.scale", pmu,
				       terms) == 0 &&
		    hwt_pmc_read_text(path, text, sizeof(text)) > 0) {
			char *end;
			double sc = strtod(text, &end);

			if (end != text && sc > 0)
				ev->scale = sc;
		}
		if (hwt_pmc_sysfs_path(&p->list->cfg, path, sizeof(path),
				       "bus/event_source/devices/%s/events/%s.unit", pmu,
				       terms) == 0 &&
		    hwt_pmc_read_text(path, text, sizeof(text)) > 0 &&
		    !(ev->unit = intern_unit(p->list, text)))
			return fail(p, -ENOMEM, "out of memory");
	}
	if (hwt_pmc_sysfs_path(&p->list->cfg, path, sizeof(path),
			       "bus/event_source/devices/%s/cpumask", pmu) == 0 &&
	    hwt_pmc_read_text(path, text, sizeof(text)) > 0) {
		ev->system_pmu = true;
		snprintf(ev->pmu_cpus, sizeof(ev->pmu_cpus), "%.63s", text);
	} else if (hwt_pmc_sysfs_path(&p->list->cfg, path, sizeof(path),
				      "bus/event_source/devices/%s/cpus", pmu) == 0 &&
		   hwt_pmc_read_text(path, text, sizeof(text)) > 0) {
		snprintf(ev->pmu_cpus, sizeof(ev->pmu_cpus), "%.63s", text);
	}
	return 0;
}

static int parse_sysfs(struct parse *p, const char *item)
{
	const char *slash = strchr(item, '/'), *end;
	char pmu[128], terms[1024];
	struct hwt_pmc_event ev;
	int type, err;

	end = strchr(slash + 1, '/');
	if (!end || (size_t)(slash - item) >= sizeof(pmu) ||
	    (size_t)(end - slash - 1) >= sizeof(terms))
		return fail(p, -HWT_EPARSE, "'%s': expected pmu/terms/ (like software/config=1/)",
			    item);
	memcpy(pmu, item, (size_t)(slash - item));
	pmu[slash - item] = '\0';
	memcpy(terms, slash + 1, (size_t)(end - slash - 1));
	terms[end - slash - 1] = '\0';
	type = hwt_pmc_pmu_type(&p->list->cfg, pmu);
	if (type < 0)
		return fail(p, -HWT_ENOEVENT,
			    "no PMU named '%s' on this machine (see 'hwtrace list' or "
			    "/sys/bus/event_source/devices)",
			    pmu);
	init_event(&ev, item);
	ev.source = HWT_PMC_SRC_SYSFS;
	ev.attr.type = (uint32_t)type;
	err = apply_terms(p, pmu, terms, &ev.attr, 0);
	if (err < 0)
		return err;
	if ((err = pmu_props(p, pmu, terms, &ev)) < 0)
		return err;
	if ((err = apply_perf_mods(&ev, end + 1)) < 0)
		return fail(
		    p, err,
		    "unknown modifier in '%s' (perf's modifiers: u k h H G I D p P S W e b)", item);
	return add_event(p, &ev);
}

static int unknown(struct parse *p, const char *item, const char *why)
{
	char sugg[512];
	char base[HWT_PMC_NAME_MAX];
	const char *colon;

	/* Suggest for the name without its modifiers. */
	snprintf(base, sizeof(base), "%s", item);
	colon = strstr(base, "::");
	colon = strchr(colon ? colon + 2 : base, ':');
	if (colon && !strchr(colon + 1, ':') && all_of(colon + 1, "ukhHGIDpPSWeb"))
		base[colon - base] = '\0';
	/* A libpfm4 EVENT:UMASK: suggest for the event name alone. */
	if (hwt_pmc_suggest(&p->list->cfg, base, sugg, sizeof(sugg), 3) == 0 && colon &&
	    !islower((unsigned char)base[0])) {
		base[colon - base] = '\0';
	}
	if (hwt_pmc_suggest(&p->list->cfg, base, sugg, sizeof(sugg), 3) > 0)
		return fail(p, -HWT_ENOEVENT,
			    "unknown event '%s'%s%s; did you mean: %s? ('hwtrace list' shows all)",
			    item, why ? ": " : "", why ? why : "", sugg);
	return fail(p, -HWT_ENOEVENT,
		    "unknown event '%s'%s%s; 'hwtrace list' shows the events "
		    "of this machine",
		    item, why ? ": " : "", why ? why : "");
}

static int parse_item(struct parse *p, const char *item)
{
	struct hwt_pmc_event ev;
	char base[HWT_PMC_NAME_MAX], why[768];
	const char *mods = "", *colon;
	uint32_t type;
	uint64_t config;
	int err;

	if (!*item)
		return fail(p, -HWT_EPARSE, "empty event name in the event list");
	if (strlen(item) >= HWT_PMC_NAME_MAX)
		return fail(p, -HWT_EPARSE, "event name too long: '%.40s...'", item);
	if (strchr(item, '/'))
		return parse_sysfs(p, item);

	snprintf(base, sizeof(base), "%s", item);
	colon = strchr(base, ':');
	if (colon) {
		mods = item + (colon - base) + 1;
		base[colon - base] = '\0';
	}

	/* 1. perf's generic names, with perf's modifiers. */
	if (hwt_pmc_generic_find(base, &type, &config) && !strchr(mods, ':')) {
		init_event(&ev, item);
		ev.source = HWT_PMC_SRC_GENERIC;
		ev.attr.type = type;
		ev.attr.config = config;
		snprintf(ev.canon, sizeof(ev.canon), "%s", base);
		if ((err = apply_perf_mods(&ev, mods)) < 0)
			return fail(p, err,
				    "unknown modifier ':%s' in '%s' (perf's modifiers: u k h H G I "
				    "D p P S W e b)",
				    mods, item);
		return add_event(p, &ev);
	}

	/* 2. rNNNN: a raw PMU config in hex. */
	if (base[0] == 'r' && base[1] && all_of(base + 1, "0123456789abcdefABCDEF") &&
	    strlen(base + 1) <= 16 && !strchr(mods, ':')) {
		init_event(&ev, item);
		ev.source = HWT_PMC_SRC_RAW;
		ev.attr.type = PERF_TYPE_RAW;
		ev.attr.config = strtoull(base + 1, NULL, 16);
		if ((err = apply_perf_mods(&ev, mods)) < 0)
			return fail(p, err,
				    "unknown modifier ':%s' in '%s' (perf's modifiers: u k h H G I "
				    "D p P S W e b)",
				    mods, item);
		return add_event(p, &ev);
	}

	/* 3. subsys:event, a tracepoint (lower case, globs allowed). */
	if (colon && is_ident(base, strlen(base), true) && is_ident(mods, strlen(mods), true)) {
		err = hwt_pmc_tracepoint_resolve(&p->list->cfg, base, mods, tp_add, p);
		if (err > 0)
			return 0;
		if (err < 0 && err != -HWT_ENOEVENT && err != -ENOENT) {
			if (p->list->errmsg[0])
				return err;
			return fail(p, err, "cannot read tracepoint '%s': %s", item,
				    hwt_strerror(err));
		}
		if (err == -ENOENT)
			return fail(p, -HWT_ENOTSUP,
				    "tracepoint '%s': tracefs is not mounted; mount it with "
				    "'mount -t tracefs nodev /sys/kernel/tracing' (as root)",
				    item);
		if (strchr(item, '*') || strchr(item, '?'))
			return fail(p, -HWT_ENOEVENT,
				    "no tracepoint matches '%s' ('hwtrace list "
				    "tracepoint' shows them)",
				    item);
		/* Not a tracepoint: libpfm4 may still know it. */
	}

	/* 4. libpfm4 (the host's PMUs, or LIBPFM_FORCE_PMU's). */
	init_event(&ev, item);
	ev.source = HWT_PMC_SRC_PFM;
	err = hwt_pmc_pfm_encode(item, &ev.attr, ev.canon, sizeof(ev.canon), why, sizeof(why));
	if (err == -HWT_ENOEVENT)
		return unknown(p, item, NULL);
	if (err < 0)
		return fail(p, err, "event '%s': %s", item, why);
	/* Did the user pick privilege levels? libpfm4 spells them u, k, h
	 * (or u=1 ...) after the event's colons. */
	for (const char *m = strchr(item, ':'); m; m = strchr(m + 1, ':')) {
		if ((m[1] == 'u' || m[1] == 'k' || m[1] == 'h') &&
		    (m[2] == '\0' || m[2] == ':' || m[2] == '='))
			ev.user_mods = true;
	}
	return add_event(p, &ev);
}

/* Applies a group's trailing modifiers to its members. */
static int apply_group_mods(struct parse *p, size_t first, const char *mods)
{
	for (size_t i = first; i < p->tmp.count; i++) {
		struct hwt_pmc_event *ev = &p->tmp.events[i];
		size_t l = strlen(ev->name);

		if (apply_perf_mods(ev, mods) < 0)
			return fail(p, -HWT_EPARSE,
				    "unknown group modifier ':%s' (perf's modifiers: u k h H G I D "
				    "p P S W e b)",
				    mods);
		if (i != first) {
			/* Only a group leader can be pinned or exclusive
			 * (the kernel refuses members that are: EINVAL). */
			ev->attr.pinned = 0;
			ev->attr.exclusive = 0;
			ev->sample_read = false;
			ev->weak_group = false;
		}
		snprintf(ev->name + l, sizeof(ev->name) - l, ":%s", mods);
	}
	return 0;
}

/* Whether a hybrid machine needs ev once per core PMU: perf's generic
 * hardware and cache events and raw codes name no PMU. */
static bool per_core_pmu(const struct hwt_pmc_event *ev)
{
	return (ev->source == HWT_PMC_SRC_GENERIC &&
		(ev->attr.type == PERF_TYPE_HARDWARE || ev->attr.type == PERF_TYPE_HW_CACHE)) ||
	       ev->source == HWT_PMC_SRC_RAW;
}

/* Binds ev to core PMU (name, type, cpus) as perf does on hybrid CPUs:
 * the PMU type in config bits 32+ of generic events (the kernel's
 * PERF_PMU_TYPE_SHIFT), the PMU's own type for raw ones, and perf's name
 * "cpu_core/cycles/u". */
static void bind_core_pmu(struct hwt_pmc_event *ev, const char *pmu, uint32_t type,
			  const char *cpus)
{
	char base[HWT_PMC_NAME_MAX], mods[HWT_PMC_NAME_MAX], name[HWT_PMC_NAME_MAX * 2 + 40];
	const char *colon = strchr(ev->name, ':');

	snprintf(base, sizeof(base), "%.*s",
		 (int)(colon ? colon - ev->name : (long)strlen(ev->name)), ev->name);
	snprintf(mods, sizeof(mods), "%s", colon ? colon + 1 : "");
	if (ev->attr.type == PERF_TYPE_RAW)
		ev->attr.type = type;
	else
		ev->attr.config = (ev->attr.config & 0xffffffffull) | ((uint64_t)type << 32);
	snprintf(name, sizeof(name), "%s/%s/%s", pmu, base, mods);
	snprintf(ev->name, sizeof(ev->name), "%.*s", (int)sizeof(ev->name) - 1, name);
	snprintf(ev->pmu, sizeof(ev->pmu), "%.31s", pmu);
	snprintf(ev->pmu_cpus, sizeof(ev->pmu_cpus), "%s", cpus);
}

/* libpfm4 encodes every hybrid model's events for PERF_TYPE_RAW (the
 * first core PMU); its atom models (adl_grt, ...) belong on the other. */
static int pfm_core_pmu(const struct hwt_pmc_event *ev, char (*names)[32], int n)
{
	static const char *const atoms[] = {
	    "_grt::", "_cmt::", "_skt::", "_crestmont::", "_gracemont::"};

	for (size_t i = 0; i < sizeof(atoms) / sizeof(atoms[0]); i++) {
		if (strstr(ev->canon, atoms[i])) {
			for (int k = 0; k < n; k++)
				if (!strcmp(names[k], "cpu_atom"))
					return k;
		}
	}
	return 0;
}

/* On a hybrid machine, each group (or event) that names no PMU becomes one
 * copy per core PMU, in PMU order, as perf opens them; libpfm4 events go to
 * the PMU of their model. */
static int hybrid_expand(struct parse *p)
{
	char names[8][32], cpus[8][64];
	uint32_t types[8];
	int n = hwt_pmc_hybrid_pmus(&p->list->cfg, names, types, cpus, 8);
	struct hwt_pmc_evlist out;
	int err = 0;

	if (n < 2)
		return 0;
	memset(&out, 0, sizeof(out));
	for (size_t i = 0; i < p->tmp.count && err >= 0;) {
		const struct hwt_pmc_event *g = &p->tmp.events[i];
		size_t nm = g->nr_members ? g->nr_members : 1;
		bool expand = false;

		for (size_t k = 0; k < nm; k++)
			expand |= per_core_pmu(&p->tmp.events[i + k]);
		for (int c = 0; c < (expand ? n : 1) && err >= 0; c++) {
			size_t first = out.count;

			for (size_t k = 0; k < nm && err >= 0; k++) {
				struct hwt_pmc_event ev = p->tmp.events[i + k];

				if (expand && per_core_pmu(&ev)) {
					bind_core_pmu(&ev, names[c], types[c], cpus[c]);
				} else if (ev.source == HWT_PMC_SRC_PFM &&
					   ev.attr.type == PERF_TYPE_RAW) {
					int pc = pfm_core_pmu(&ev, names, n);

					ev.attr.type = types[pc];
					snprintf(ev.pmu, sizeof(ev.pmu), "%.31s", names[pc]);
					snprintf(ev.pmu_cpus, sizeof(ev.pmu_cpus), "%.63s",
						 cpus[pc]);
				}
				ev.leader = (int)(p->base + first);
				ev.nr_members = k ? 0 : (uint32_t)nm;
				err = push(&out, &ev);
			}
		}
		i += nm;
	}
	if (err < 0) {
		free(out.events);
		return fail(p, err, err == -HWT_ETOOBIG ? "too many events" : "out of memory");
	}
	free(p->tmp.events);
	p->tmp.events = out.events;
	p->tmp.count = out.count;
	p->tmp.cap = out.cap;
	return 0;
}

int hwt_pmc_evlist_add(struct hwt_pmc_evlist *list, const char *spec)
{
	struct parse p;
	const char *s;
	char item[HWT_PMC_NAME_MAX * 4];
	int err = 0;

	if (!list || !spec)
		return -HWT_EINVAL;
	list->errmsg[0] = '\0';
	memset(&p, 0, sizeof(p));
	p.list = list;
	p.base = list->count;
	s = spec;
	if (!*s) {
		err = fail(&p, -HWT_EPARSE, "empty event list");
		goto out;
	}
	while (*s && err >= 0) {
		if (*s == '{') {
			const char *close = strchr(s, '}'), *q, *next;
			size_t first = p.tmp.count;

			if (!close) {
				err = fail(&p, -HWT_EPARSE, "'%s': missing '}'", s);
				break;
			}
			if (memchr(s + 1, '{', (size_t)(close - s - 1))) {
				err = fail(&p, -HWT_EPARSE, "'%s': groups cannot nest", s);
				break;
			}
			/* members */
			for (q = s + 1; q < close && err >= 0; q = next) {
				const char *comma = memchr(q, ',', (size_t)(close - q));
				const char *slash = memchr(q, '/', (size_t)(close - q));
				size_t n;

				/* pmu/a=1,b=2/ keeps its commas */
				if (slash && (!comma || slash < comma)) {
					const char *end =
					    memchr(slash + 1, '/', (size_t)(close - slash - 1));

					comma =
					    end ? memchr(end, ',', (size_t)(close - end)) : NULL;
				}

				next = comma ? comma + 1 : close;
				n = (size_t)((comma ? comma : close) - q);
				if (n >= sizeof(item)) {
					err = fail(&p, -HWT_EPARSE, "event name too long");
					break;
				}
				memcpy(item, q, n);
				item[n] = '\0';
				err = parse_item(&p, item);
			}
			if (err < 0)
				break;
			if (p.tmp.count == first) {
				err = fail(&p, -HWT_EPARSE, "empty group '{}'");
				break;
			}
			/* the first member leads the others */
			for (size_t i = first; i < p.tmp.count; i++) {
				p.tmp.events[i].leader = (int)(p.base + first);
				p.tmp.events[i].nr_members = 0;
			}
			p.tmp.events[first].nr_members = (uint32_t)(p.tmp.count - first);
			s = close + 1;
			if (*s == ':') {
				const char *e = strchr(s, ',');
				size_t n = e ? (size_t)(e - s - 1) : strlen(s + 1);

				if (n >= sizeof(item)) {
					err = fail(&p, -HWT_EPARSE, "group modifier too long");
					break;
				}
				memcpy(item, s + 1, n);
				item[n] = '\0';
				err = apply_group_mods(&p, first, item);
				s += n + 1;
			}
			if (*s == ',') {
				s++;
				if (!*s)
					err = fail(&p, -HWT_EPARSE, "event list ends with ','");
			} else if (*s && err >= 0) {
				err = fail(&p, -HWT_EPARSE, "unexpected '%s' after a group", s);
			}
		} else {
			const char *e = s;
			size_t n;

			/* A sysfs item's terms may hold commas: pmu/a=1,b=2/ */
			if (strchr(s, '/') &&
			    (!strchr(s, ',') || strchr(s, '/') < strchr(s, ','))) {
				const char *sl = strchr(strchr(s, '/') + 1, '/');

				e = sl ? sl : s + strlen(s);
			}
			while (*e && *e != ',' && *e != '{' && *e != '}')
				e++;
			if (*e == '{' || *e == '}') {
				err = fail(&p, -HWT_EPARSE, "unexpected '%c' in '%s'", *e, spec);
				break;
			}
			n = (size_t)(e - s);
			if (n >= sizeof(item)) {
				err = fail(&p, -HWT_EPARSE, "event name too long");
				break;
			}
			memcpy(item, s, n);
			item[n] = '\0';
			err = parse_item(&p, item);
			s = e;
			if (*s == ',') {
				s++;
				if (!*s)
					err = err < 0 ? err
						      : fail(&p, -HWT_EPARSE,
							     "event list ends with ','");
			}
		}
	}
	if (err >= 0)
		err = hybrid_expand(&p);
	if (err >= 0 && list->count + p.tmp.count > HWT_PMC_MAX_EVENTS)
		err = fail(&p, -HWT_ETOOBIG, "too many events (more than %d)", HWT_PMC_MAX_EVENTS);
	if (err >= 0) {
		for (size_t i = 0; i < p.tmp.count && err >= 0; i++)
			err = push(list, &p.tmp.events[i]);
		if (err < 0) {
			list->count = p.base;
			fail(&p, err, "out of memory");
		}
	}
out:
	free(p.tmp.events);
	return err < 0 ? err : (int)p.tmp.count;
}
