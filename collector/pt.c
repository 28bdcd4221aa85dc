/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/pt.c - the intel_pt PMU as sysfs describes it, and what a user
 * asks of it: /sys/bus/event_source/devices/intel_pt/{type, format/ *,
 * caps/ *, max_nonturbo_ratio, tsc_art_ratio}; perf's config terms (cyc,
 * mtc_period=N, ...) checked against the CPU's caps and placed at the bits
 * the kernel's format files name; IP filters turned into the string that
 * PERF_EVENT_IOC_SET_FILTER takes; and the metadata a decoder needs.
 *
 * Everything here reads files under a root directory, so the tests run it
 * on copies of real machines' sysfs trees (tests/collector/fixtures/).
 */
#include "collector/rec_int.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/symbolize.h"

#define PT_DIR "bus/event_source/devices/intel_pt"

static int msg(char *buf, size_t len, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int msg(char *buf, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	if (buf && len) {
		va_start(ap, fmt);
		vsnprintf(buf, len, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* Reads a small text file, trimmed. Returns 0 or -errno. */
static int read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return 0;
}

/* "config:14-17", "config1:0", "config:0,2" (only single ranges are used
 * by intel_pt). */
static int parse_fmt(const char *text, struct hwt_coll_pt_fmt *f)
{
	const char *p = text;
	char *end;
	unsigned long lo, hi;

	if (!strncmp(p, "config2:", 8)) {
		f->field = 2;
		p += 8;
	} else if (!strncmp(p, "config1:", 8)) {
		f->field = 1;
		p += 8;
	} else if (!strncmp(p, "config:", 7)) {
		f->field = 0;
		p += 7;
	} else {
		return -HWT_EFORMAT;
	}
	errno = 0;
	lo = strtoul(p, &end, 10);
	if (end == p || errno)
		return -HWT_EFORMAT;
	hi = lo;
	if (*end == '-') {
		p = end + 1;
		hi = strtoul(p, &end, 10);
		if (end == p || errno)
			return -HWT_EFORMAT;
	}
	if (*end || lo > hi || hi > 63)
		return -HWT_EFORMAT;
	f->lo = (uint8_t)lo;
	f->hi = (uint8_t)hi;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

int hwt_coll_pt_pmu_read(const char *root, struct hwt_coll_pt_pmu *pmu, char *errmsg, size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX + 64], text[128];
	struct dirent *de;
	DIR *d;
	char *end;
	int err;

	memset(pmu, 0, sizeof(*pmu));
	snprintf(dir, sizeof(dir), "%s/" PT_DIR, root ? root : "/sys");
	snprintf(path, sizeof(path), "%s/type", dir);
	err = read_text(path, text, sizeof(text));
	if (err == -ENOENT || err == -ENOTDIR)
		return msg(errmsg, errlen, -HWT_ENOPT, "no Intel PT here (%s is missing)", dir);
	if (err)
		return msg(errmsg, errlen, err, "cannot read %s: %s", path, strerror(-err));
	errno = 0;
	pmu->type = (uint32_t)strtoul(text, &end, 10);
	if (end == text || *end || errno)
		return msg(errmsg, errlen, -HWT_EFORMAT, "%s: not a number: '%s'", path, text);

	/* format/: term -> bits */
	snprintf(path, sizeof(path), "%s/format", dir);
	d = opendir(path);
	if (!d)
		return msg(errmsg, errlen, -HWT_EFORMAT, "cannot read %s: %s", path,
			   strerror(errno));
	while ((de = readdir(d)) && pmu->nfmt < HWT_COLL_PT_MAX_FMT) {
		struct hwt_coll_pt_fmt *f = &pmu->fmt[pmu->nfmt];
		char file[PATH_MAX + 64 + 260];

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(f->name))
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		if (read_text(file, text, sizeof(text)) < 0)
			continue;
		if (parse_fmt(text, f) < 0) {
			closedir(d);
			return msg(errmsg, errlen, -HWT_EFORMAT, "%s: cannot parse '%s'", file,
				   text);
		}
		memcpy(f->name, de->d_name, strlen(de->d_name) + 1); /* length checked above */
		pmu->nfmt++;
	}
	closedir(d);
	qsort(pmu->fmt, pmu->nfmt, sizeof(pmu->fmt[0]), name_cmp);

	/* caps/: each file holds a hex number */
	snprintf(path, sizeof(path), "%s/caps", dir);
	d = opendir(path);
	if (d) {
		while ((de = readdir(d)) && pmu->ncaps < HWT_COLL_PT_MAX_CAPS) {
			struct hwt_coll_pt_cap *c = &pmu->caps[pmu->ncaps];
			char file[PATH_MAX + 64 + 260];

			if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(c->name))
				continue;
			snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
			if (read_text(file, text, sizeof(text)) < 0)
				continue;
			errno = 0;
			c->value = strtoull(text, &end, 16);
			if (end == text || *end || errno) {
				closedir(d);
				return msg(errmsg, errlen, -HWT_EFORMAT,
					   "%s: not a hex number: '%s'", file, text);
			}
			memcpy(c->name, de->d_name, strlen(de->d_name) + 1); /* checked above */
			pmu->ncaps++;
		}
		closedir(d);
		qsort(pmu->caps, pmu->ncaps, sizeof(pmu->caps[0]), name_cmp);
	}

	/* Timing facts the decoder needs (absent on old kernels). */
	snprintf(path, sizeof(path), "%s/max_nonturbo_ratio", dir);
	if (read_text(path, text, sizeof(text)) == 0)
		pmu->max_nonturbo_ratio = (uint32_t)strtoul(text, NULL, 10);
	snprintf(path, sizeof(path), "%s/tsc_art_ratio", dir);
	if (read_text(path, text, sizeof(text)) == 0) {
		unsigned num, den;

		if (sscanf(text, "%u:%u", &num, &den) == 2) {
			pmu->tsc_art_num = num;
			pmu->tsc_art_den = den;
		}
	}
	return 0;
}

int64_t hwt_coll_pt_cap(const struct hwt_coll_pt_pmu *pmu, const char *name)
{
	for (size_t i = 0; i < pmu->ncaps; i++) {
		if (!strcmp(pmu->caps[i].name, name))
			return (int64_t)pmu->caps[i].value;
	}
	return -1;
}

const struct hwt_coll_pt_fmt *hwt_coll_pt_fmt(const struct hwt_coll_pt_pmu *pmu, const char *name)
{
	for (size_t i = 0; i < pmu->nfmt; i++) {
		if (!strcmp(pmu->fmt[i].name, name))
			return &pmu->fmt[i];
	}
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* terms                                                                     */

enum term_kind { T_FLAG, T_NUM };

/* Positions in terms[] below. */
enum {
	I_PT,
	I_BRANCH,
	I_TSC,
	I_NORETCOMP,
	I_MTC,
	I_MTC_PERIOD,
	I_CYC,
	I_CYC_THRESH,
	I_PSB_PERIOD,
	I_PTW,
	I_FUP_ON_PTW,
	I_PWR_EVT,
	I_NOTNT,
	I_EVENT,
};

struct term_def {
	const char *name;
	enum term_kind kind;
	const char *cap;   /* cap that must be nonzero, or NULL */
	const char *valid; /* cap holding a bitmap of valid values, or NULL */
};

static const struct term_def terms[] = {
    {"pt", T_FLAG, NULL, NULL},
    {"branch", T_FLAG, NULL, NULL},
    {"tsc", T_FLAG, NULL, NULL},
    {"noretcomp", T_FLAG, NULL, NULL},
    {"mtc", T_FLAG, "mtc", NULL},
    {"mtc_period", T_NUM, "mtc", "mtc_periods"},
    {"cyc", T_FLAG, "psb_cyc", NULL},
    {"cyc_thresh", T_NUM, "psb_cyc", "cycle_thresholds"},
    {"psb_period", T_NUM, "psb_cyc", "psb_periods"},
    {"ptw", T_FLAG, "ptwrite", NULL},
    {"fup_on_ptw", T_FLAG, "ptwrite", NULL},
    {"pwr_evt", T_FLAG, "power_event_trace", NULL},
    {"notnt", T_FLAG, "tnt_disable", NULL},
    {"event", T_FLAG, "event_trace", NULL},
};

#define NTERMS (sizeof(terms) / sizeof(terms[0]))

/* "0,3,6,9" or "0-5" from a bitmap. */
static void valid_list(uint64_t map, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned v = 0; v < 64; v++) {
		unsigned e = v;

		if (!(map & (1ull << v)))
			continue;
		while (e + 1 < 64 && (map & (1ull << (e + 1))))
			e++;
		if (e >= v + 2)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%u-%u",
					      n ? "," : "", v, e);
		else if (e == v + 1)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%u,%u",
					      n ? "," : "", v, e);
		else
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%u", n ? "," : "",
					      v);
		v = e;
	}
	if (!n)
		snprintf(buf, len, "none");
}

/* The largest valid value <= want in a cap bitmap (0 is always valid). */
static uint32_t nearest_lower(uint64_t map, uint32_t want)
{
	for (uint32_t v = want + 1; v-- > 0;) {
		if (map & (1ull << v))
			return v;
	}
	return 0;
}

int hwt_coll_pt_conf_parse(const struct hwt_coll_pt_pmu *pmu, const char *spec,
			   struct hwt_coll_pt_conf *conf, char *errmsg, size_t errlen)
{
	uint64_t vals[NTERMS] = {0};
	bool given[NTERMS] = {false};
	char buf[1024], *tok, *save = NULL, *mods = NULL;
	int64_t cap;

	memset(conf, 0, sizeof(*conf));
	conf->user = conf->kernel = true;
	if (!spec)
		spec = "";
	if (strlen(spec) >= sizeof(buf))
		return msg(errmsg, errlen, -HWT_EPARSE, "intel_pt terms too long");
	snprintf(buf, sizeof(buf), "%s", spec);
	tok = buf;
	if (!strncmp(buf, "intel_pt/", 9)) {
		char *close = strchr(buf + 9, '/');

		if (!close)
			return msg(errmsg, errlen, -HWT_EPARSE,
				   "'%s': missing the closing '/' (write intel_pt/TERMS/)", spec);
		*close = '\0';
		tok = buf + 9;
		mods = close + 1;
	} else if (!strcmp(buf, "intel_pt")) {
		tok = buf + 8;
	}
	for (char *t = strtok_r(tok, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		uint64_t v = 1;
		size_t i;

		if (eq) {
			char *end;

			*eq = '\0';
			errno = 0;
			v = strtoull(eq + 1, &end, 0);
			if (end == eq + 1 || *end || errno)
				return msg(errmsg, errlen, -HWT_EPARSE,
					   "intel_pt term '%s': '%s' is not a number", t, eq + 1);
		}
		if (!strcmp(t, "user") || !strcmp(t, "u") || !strcmp(t, "kernel") ||
		    !strcmp(t, "k")) {
			if (v > 1)
				return msg(errmsg, errlen, -HWT_EPARSE,
					   "intel_pt term '%s' takes 0 or 1", t);
			if (!conf->user_set) {
				conf->user = conf->kernel = false;
				conf->user_set = true;
			}
			if (t[0] == 'u')
				conf->user = v;
			else
				conf->kernel = v;
			continue;
		}
		for (i = 0; i < NTERMS && strcmp(terms[i].name, t); i++)
			;
		if (i == NTERMS)
			return msg(errmsg, errlen, -HWT_EPARSE,
				   "unknown intel_pt term '%s' (known: pt, branch, tsc, noretcomp, "
				   "mtc, mtc_period, cyc, cyc_thresh, psb_period, ptw, fup_on_ptw, "
				   "pwr_evt, notnt, event, user, kernel)",
				   t);
		if (terms[i].kind == T_FLAG && v > 1)
			return msg(errmsg, errlen, -HWT_EPARSE, "intel_pt term '%s' takes 0 or 1",
				   t);
		vals[i] = v;
		given[i] = true;
	}
	if (mods && *mods) {
		conf->user = conf->kernel = false;
		conf->user_set = true;
		for (const char *m = mods; *m; m++) {
			if (*m == 'u')
				conf->user = true;
			else if (*m == 'k')
				conf->kernel = true;
			else
				return msg(
				    errmsg, errlen, -HWT_EPARSE,
				    "intel_pt modifier '%c' is not supported (use u and/or k)", *m);
		}
	}
	if (!conf->user && !conf->kernel)
		return msg(errmsg, errlen, -HWT_EPARSE,
			   "intel_pt with neither user nor kernel traces nothing");

	/* perf's defaults for what was not given. */
	if (!given[I_PT] && hwt_coll_pt_fmt(pmu, "pt"))
		vals[I_PT] = 1, given[I_PT] = true;
	if (!given[I_BRANCH] && hwt_coll_pt_fmt(pmu, "branch"))
		vals[I_BRANCH] = 1, given[I_BRANCH] = true;
	if (!given[I_TSC] && hwt_coll_pt_fmt(pmu, "tsc"))
		vals[I_TSC] = 1, given[I_TSC] = true;
	if (!given[I_MTC] && hwt_coll_pt_cap(pmu, "mtc") > 0 && hwt_coll_pt_fmt(pmu, "mtc"))
		vals[I_MTC] = 1, given[I_MTC] = true;
	if (!given[I_MTC_PERIOD] && vals[I_MTC] && hwt_coll_pt_fmt(pmu, "mtc_period")) {
		cap = hwt_coll_pt_cap(pmu, "mtc_periods");
		vals[I_MTC_PERIOD] = cap > 0 ? nearest_lower((uint64_t)cap, 3) : 0;
		given[I_MTC_PERIOD] = true;
	}
	if (!given[I_PSB_PERIOD] && vals[I_MTC] && hwt_coll_pt_cap(pmu, "psb_cyc") > 0 &&
	    hwt_coll_pt_fmt(pmu, "psb_period")) {
		cap = hwt_coll_pt_cap(pmu, "psb_periods");
		vals[I_PSB_PERIOD] = cap > 0 ? nearest_lower((uint64_t)cap, 3) : 0;
		given[I_PSB_PERIOD] = true;
	}

	/* Check every term that is set against the kernel and the CPU. */
	for (size_t i = 0; i < NTERMS; i++) {
		const struct term_def *t = &terms[i];
		const struct hwt_coll_pt_fmt *f;
		unsigned width;

		if (!given[i])
			continue;
		f = hwt_coll_pt_fmt(pmu, t->name);
		if (!f) {
			if (!vals[i])
				continue; /* "=0" of a term this kernel lacks: nothing to do */
			return msg(
			    errmsg, errlen, -HWT_ENOTSUP,
			    "intel_pt term '%s' is not supported by this kernel (no format/%s "
			    "in sysfs); drop it or use a newer kernel",
			    t->name, t->name);
		}
		width = (unsigned)(f->hi - f->lo + 1);
		if (width < 64 && vals[i] >> width)
			return msg(errmsg, errlen, -HWT_EPARSE,
				   "intel_pt term '%s=%llu' does not fit its %u bit(s)", t->name,
				   (unsigned long long)vals[i], width);
		if (!vals[i] && t->kind == T_FLAG)
			continue;
		if (t->cap && hwt_coll_pt_cap(pmu, t->cap) <= 0 &&
		    !(t->kind == T_NUM && vals[i] == 0))
			return msg(
			    errmsg, errlen, -HWT_ENOTSUP,
			    "intel_pt term '%s' is not supported by this CPU (caps/%s is %s); "
			    "drop it",
			    t->name, t->cap, hwt_coll_pt_cap(pmu, t->cap) < 0 ? "absent" : "0");
		if (t->valid) {
			int64_t map = hwt_coll_pt_cap(pmu, t->valid);

			if (map < 0)
				map = 1; /* only 0 without the cap */
			if (vals[i] >= 64 || !((uint64_t)map & (1ull << vals[i]))) {
				char list[256];

				valid_list((uint64_t)map, list, sizeof(list));
				return msg(errmsg, errlen, -HWT_ENOTSUP,
					   "invalid %s=%llu for this CPU; valid values: %s "
					   "(caps/%s)",
					   t->name, (unsigned long long)vals[i], list, t->valid);
			}
		}
	}
	/* Combinations the kernel refuses. */
	if (vals[I_FUP_ON_PTW] && !vals[I_PTW])
		return msg(errmsg, errlen, -HWT_ENOTSUP,
			   "intel_pt term 'fup_on_ptw' needs 'ptw' too");
	if (given[I_BRANCH] && !vals[I_BRANCH] &&
	    (hwt_coll_pt_cap(pmu, "psb_cyc") <= 0 || hwt_coll_pt_cap(pmu, "mtc") <= 0))
		return msg(
		    errmsg, errlen, -HWT_ENOTSUP,
		    "intel_pt 'branch=0' is not supported by this CPU (branch tracing cannot "
		    "be turned off before Skylake)");

	for (size_t i = 0; i < NTERMS; i++) {
		const struct hwt_coll_pt_fmt *f = hwt_coll_pt_fmt(pmu, terms[i].name);

		if (given[i] && f && f->field == 0)
			conf->config |= vals[i] << f->lo;
	}
	conf->branch = vals[I_BRANCH];
	conf->tsc = vals[I_TSC];
	conf->noretcomp = vals[I_NORETCOMP];
	conf->mtc = vals[I_MTC];
	conf->mtc_period = (uint32_t)vals[I_MTC_PERIOD];
	conf->cyc = vals[I_CYC];
	conf->cyc_thresh = (uint32_t)vals[I_CYC_THRESH];
	conf->psb_period = (uint32_t)vals[I_PSB_PERIOD];
	conf->ptw = vals[I_PTW];
	conf->fup_on_ptw = vals[I_FUP_ON_PTW];
	conf->pwr_evt = vals[I_PWR_EVT];
	conf->notnt = vals[I_NOTNT];
	conf->event = vals[I_EVENT];
	return 0;
}

void hwt_coll_pt_attr(const struct hwt_coll_pt_pmu *pmu, const struct hwt_coll_pt_conf *conf,
		      struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = pmu->type;
	attr->config = conf->config;
	attr->exclude_user = !conf->user;
	attr->exclude_kernel = !conf->kernel;
	attr->exclude_hv = 1;
	attr->exclude_guest = 1; /* as perf: no 'G' modifier */
	/* No samples: the trace goes to the AUX area; the data area carries
	 * the sideband (AUX, ITRACE_START, MMAP2, ...) with these fields. */
	attr->sample_period = 1;
	attr->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			    PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	attr->sample_id_all = 1;
}

/* ------------------------------------------------------------------------ */
/* filters                                                                   */

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* One filter of perf's syntax, checked by the rules the kernel applies when
 * PERF_EVENT_IOC_SET_FILTER gets it (kernel/events/core.c
 * perf_event_parse_addr_filter, arch/x86/events/intel/pt.c
 * pt_event_addr_filters_validate), so that a refusal comes now, naming the
 * rule, instead of as an errno when the events are opened. */
static int one_filter(char *item, struct hwt_sym_cache *cache, unsigned flags,
		      struct hwt_coll_pt_range *rg, char *out, size_t outlen, size_t *used,
		      char *errmsg, size_t errlen)
{
	char *at = strchr(item, '@'), *act, *target, *slash, *file = NULL, *end;
	const char *kact;
	char real[PATH_MAX];
	uint64_t addr = 0, size = 0;
	bool has_size = false, range;
	int n;

	if (at) {
		*at = '\0';
		file = trim(at + 1);
		if (!*file)
			return msg(errmsg, errlen, -HWT_EPARSE, "filter: nothing after '@'");
	}
	item = trim(item);
	act = item;
	target = act + strcspn(act, " \t");
	if (*target)
		*target++ = '\0';
	target = trim(target);
	if (!strcmp(act, "filter")) {
		kact = "filter";
		range = true;
	} else if (!strcmp(act, "start")) {
		return msg(errmsg, errlen, -HWT_ENOTSUP,
			   "filter 'start %s': Intel PT has no start filters (the kernel refuses "
			   "them: pt_event_addr_filters_validate); trace a range with 'filter %s'",
			   target, *target ? target : "SYM");
	} else if (!strcmp(act, "stop")) {
		kact = "stop";
		range = false;
	} else if (!strcmp(act, "tracestop")) {
		kact = "stop";
		range = true;
	} else {
		return msg(errmsg, errlen, -HWT_EPARSE,
			   "filter '%s': the action must be filter, stop or tracestop", act);
	}
	if (!*target)
		return msg(errmsg, errlen, -HWT_EPARSE, "filter '%s' needs a symbol or an address",
			   act);
	slash = strchr(target, '/');
	if (slash) {
		*slash = '\0';
		errno = 0;
		size = strtoull(slash + 1, &end, 0);
		if (end == slash + 1 || *end || errno || !size)
			return msg(errmsg, errlen, -HWT_EPARSE, "filter: bad size '%s'", slash + 1);
		has_size = true;
	}
	if (!range && !has_size)
		/* A single-address trigger: the parser takes it, PT cannot. */
		return msg(errmsg, errlen, -HWT_ENOTSUP,
			   "filter 'stop %s': Intel PT stops only on ranges (the kernel refuses "
			   "single addresses: pt_event_addr_filters_validate); write 'tracestop "
			   "%s' or 'stop %s/SIZE'",
			   target, target, target);
	if (file && (flags & HWT_COLL_PT_FILTER_CPU_WIDE))
		return msg(errmsg, errlen, -HWT_ENOTSUP,
			   "filter '%s %s @ %s': filters in a file need a traced task (the kernel "
			   "refuses them system-wide: perf_event_parse_addr_filter); record a "
			   "command or -p PID, or give a kernel address range",
			   act, target, file);
	if (file) {
		struct hwt_sym_obj *obj;
		struct stat st;
		int err;

		if (!realpath(file, real))
			return msg(errmsg, errlen, -errno,
				   "filter: '%s': %s (give the object's path)", file,
				   strerror(errno));
		if (stat(real, &st) < 0 || !S_ISREG(st.st_mode))
			return msg(errmsg, errlen, -HWT_EINVAL,
				   "filter: '%s' is not a regular file (the kernel needs one)",
				   real);
		errno = 0;
		addr = strtoull(target, &end, 0);
		if (end != target && !*end && !errno && isdigit((unsigned char)target[0])) {
			/* As perf: a number with a file is a file offset. */
			if (addr >= (uint64_t)st.st_size)
				return msg(errmsg, errlen, -HWT_EINVAL,
					   "filter: offset %s is beyond the end of '%s' (%lld "
					   "bytes; a number with '@ FILE' is a file offset, as in "
					   "perf: give a symbol name or its offset)",
					   target, real, (long long)st.st_size);
		} else {
			struct hwt_sym_def def;
			int nd;

			err = hwt_sym_obj_open(cache, real, NULL, 0, &obj);
			if (err < 0)
				return msg(errmsg, errlen, err, "filter: cannot read '%s': %s",
					   real, hwt_strerror(err));
			nd = hwt_sym_find(obj, target, &def, 1);
			if (nd <= 0)
				return msg(
				    errmsg, errlen, -HWT_ENOSYM,
				    "filter: no symbol '%s' in '%s' (check the name with 'nm')",
				    target, real);
			if (!def.has_offset)
				return msg(errmsg, errlen, -HWT_ENOSYM,
					   "filter: symbol '%s' is not in a loaded segment of '%s'",
					   target, real);
			addr = def.file_offset;
			if (!has_size && range) {
				if (!def.size)
					return msg(errmsg, errlen, -HWT_EPARSE,
						   "filter: symbol '%s' has no size; give it as "
						   "'%s/SIZE'",
						   target, target);
				size = def.size;
				has_size = true;
			}
		}
	} else {
		errno = 0;
		addr = strtoull(target, &end, 0);
		if (end == target || *end || errno)
			return msg(
			    errmsg, errlen, -HWT_EPARSE,
			    "filter: '%s' needs '@ FILE' (symbols and user-space addresses are "
			    "looked up in an object)",
			    target);
		if (!(addr >> 63))
			return msg(errmsg, errlen, -HWT_EPARSE,
				   "filter: user-space address %s needs '@ FILE'", target);
	}
	if (range && !has_size)
		return msg(errmsg, errlen, -HWT_EPARSE, "filter: '%s' needs a size: ADDR/SIZE",
			   target);
	n = snprintf(out + *used, outlen - *used, "%s%s 0x%llx/0x%llx%s%s", *used ? "," : "", kact,
		     (unsigned long long)addr, (unsigned long long)size, file ? "@" : "",
		     file ? real : "");
	if (n < 0 || (size_t)n >= outlen - *used)
		return msg(errmsg, errlen, -HWT_ETOOBIG, "filter string too long");
	*used += (size_t)n;
	if (rg) {
		memset(rg, 0, sizeof(*rg));
		rg->stop = kact[0] == 's';
		rg->addr = addr;
		rg->size = size;
		if (file)
			memcpy(rg->file, real, strlen(real) + 1); /* both PATH_MAX */
	}
	return 0;
}

int hwt_coll_pt_filter(const char *spec, unsigned nranges_max, unsigned flags, char *out,
		       size_t outlen, char *errmsg, size_t errlen)
{
	return hwt_coll_pt_filter_ranges(spec, nranges_max, flags, NULL, out, outlen, errmsg,
					 errlen);
}

int hwt_coll_pt_filter_ranges(const char *spec, unsigned nranges_max, unsigned flags,
			      struct hwt_coll_pt_range *ranges, char *out, size_t outlen,
			      char *errmsg, size_t errlen)
{
	struct hwt_sym_config scfg;
	struct hwt_sym_cache *cache = NULL;
	char *copy, *save = NULL;
	size_t used = 0;
	int count = 0, err;

	if (!spec || !out || !outlen)
		return -HWT_EINVAL;
	out[0] = '\0';
	copy = strdup(spec);
	if (!copy)
		return -ENOMEM;
	hwt_sym_config_init(&scfg);
	scfg.no_debug_files = true;
	err = hwt_sym_cache_alloc(&scfg, &cache);
	if (err < 0)
		goto out;
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		/* The ranges array holds nranges_max: count them all for
		 * the message, keep what fits. */
		struct hwt_coll_pt_range *rg =
		    ranges && (unsigned)count < nranges_max ? &ranges[count] : NULL;

		err = one_filter(item, cache, flags, rg, out, outlen, &used, errmsg, errlen);
		if (err < 0)
			goto out;
		count++;
	}
	err = count;
	if (!count)
		err = msg(errmsg, errlen, -HWT_EPARSE, "empty filter");
	else if ((unsigned)count > nranges_max)
		err = msg(errmsg, errlen, -HWT_ENOTSUP,
			  "%d address filters but this CPU has %u (caps/num_address_ranges)", count,
			  nranges_max);
out:
	hwt_sym_cache_free(cache);
	free(copy);
	return err;
}

/* ------------------------------------------------------------------------ */
/* metadata                                                                  */

int hwt_coll_pt_meta(const struct hwt_coll_pt_pmu *pmu, const struct hwt_coll_pt_conf *conf,
		     hwt_coll_meta_u64_fn fn, void *ctx)
{
	struct {
		const char *key;
		uint64_t v;
	} u[] = {
	    {"pt.pmu_type", pmu->type},
	    {"pt.config.config", conf->config},
	    {"pt.config.tsc", conf->tsc},
	    {"pt.config.mtc", conf->mtc},
	    {"pt.config.cyc", conf->cyc},
	    {"pt.config.noretcomp", conf->noretcomp},
	    {"pt.config.branch", conf->branch},
	    {"pt.config.mtc_freq", conf->mtc_period},
	    {"pt.config.cyc_thresh", conf->cyc_thresh},
	    {"pt.config.psb_period", conf->psb_period},
	    {"pt.config.psb_bytes", 2048ull << conf->psb_period},
	    {"pt.config.ptw", conf->ptw},
	    {"pt.config.fup_on_ptw", conf->fup_on_ptw},
	    {"pt.config.pwr_evt", conf->pwr_evt},
	    {"pt.config.notnt", conf->notnt},
	    {"pt.config.event", conf->event},
	    {"pt.config.user", conf->user},
	    {"pt.config.kernel", conf->kernel},
	    {"pt.config.nom_freq", pmu->max_nonturbo_ratio},
	    {"pt.config.cpuid_0x15_eax", pmu->tsc_art_den},
	    {"pt.config.cpuid_0x15_ebx", pmu->tsc_art_num},
	};
	char key[96];
	int err;

	for (size_t i = 0; i < HWT_ARRAY_SIZE(u); i++) {
		err = fn(ctx, u[i].key, u[i].v);
		if (err < 0)
			return err;
	}
	for (size_t i = 0; i < pmu->ncaps; i++) {
		snprintf(key, sizeof(key), "pt.caps.%s", pmu->caps[i].name);
		err = fn(ctx, key, pmu->caps[i].value);
		if (err < 0)
			return err;
	}
	return 0;
}
