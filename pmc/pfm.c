/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pmc/pfm.c - the only file that talks to libpfm4: one-time initialisation,
 * event strings to perf_event_attr (PFM_OS_PERF_EVENT_EXT, which also
 * handles libpfm4's modifiers u, k, c=, e, i, ...), and walking its PMU and
 * event tables for listing and suggestions. PFM_ERR_* codes stop here.
 */
#include <linux/perf_event.h> /* first: perfmon/perf_event.h then defers to it */

#include "pmc/pmc_int.h"

#include <perfmon/pfmlib_perf_event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* libpfm4 is loaded on first use (dlopen), not linked: its 41,000
 * relocations cost every hwtrace process about 5 ms of CPU and 290 page
 * faults at start, and only the commands that name events call it.
 * HWT_PFM_SONAME is the build's libpfm4 (cmake/deps.cmake). */
static struct {
	pfm_err_t (*initialize)(void);
	const char *(*strerror)(int code);
	pfm_err_t (*get_pmu_info)(pfm_pmu_t pmu, pfm_pmu_info_t *output);
	int (*get_event_next)(int idx);
	int (*find_event)(const char *str);
	pfm_err_t (*get_event_info)(int idx, pfm_os_t os, pfm_event_info_t *output);
	pfm_err_t (*get_os_event_encoding)(const char *str, int dfl_plm, pfm_os_t os, void *args);
	pfm_err_t (*get_event_attr_info)(int eidx, int aidx, pfm_os_t os,
					 pfm_event_attr_info_t *output);
} pfm;
static pthread_once_t pfm_once = PTHREAD_ONCE_INIT;
static bool pfm_loaded;
static int pfm_status;

static void pfm_init_once(void)
{
	static const char *const names[] = {"pfm_initialize",
					    "pfm_strerror",
					    "pfm_get_pmu_info",
					    "pfm_get_event_next",
					    "pfm_find_event",
					    "pfm_get_event_info",
					    "pfm_get_os_event_encoding",
					    "pfm_get_event_attr_info"};
	void *const slots[] = {&pfm.initialize,
			       &pfm.strerror,
			       &pfm.get_pmu_info,
			       &pfm.get_event_next,
			       &pfm.find_event,
			       &pfm.get_event_info,
			       &pfm.get_os_event_encoding,
			       &pfm.get_event_attr_info};

	/* Each pointer has the type of libpfm4's prototype: comparing
	 * distinct pointer types does not compile, and sizeof evaluates
	 * nothing (nothing links libpfm4). */
	(void)sizeof(
	    pfm.initialize == &pfm_initialize && pfm.strerror == &pfm_strerror &&
	    pfm.get_pmu_info == &pfm_get_pmu_info && pfm.get_event_next == &pfm_get_event_next &&
	    pfm.find_event == &pfm_find_event && pfm.get_event_info == &pfm_get_event_info &&
	    pfm.get_os_event_encoding == &pfm_get_os_event_encoding &&
	    pfm.get_event_attr_info == &pfm_get_event_attr_info);
	pfm_status = PFM_ERR_NOINIT;
	if (hwt_dl_load(HWT_PFM_SONAME, names, slots, sizeof(names) / sizeof(names[0])) < 0)
		return;
	pfm_loaded = true;
	pfm_status = pfm.initialize();
}

int hwt_pmc_pfm_init(void)
{
	pthread_once(&pfm_once, pfm_init_once);
	return pfm_status == PFM_SUCCESS ? 0 : -HWT_ELIB;
}

/* Lists the attribute (umask/modifier) names of libpfm4 event idx. */
static void umask_names(int idx, char *buf, size_t len)
{
	pfm_event_info_t info;
	size_t used = 0;

	buf[0] = '\0';
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	if (pfm.get_event_info(idx, PFM_OS_PERF_EVENT_EXT, &info) != PFM_SUCCESS)
		return;
	for (int a = 0; a < info.nattrs; a++) {
		pfm_event_attr_info_t ai;
		int w;

		memset(&ai, 0, sizeof(ai));
		ai.size = sizeof(ai);
		if (pfm.get_event_attr_info(idx, a, PFM_OS_PERF_EVENT_EXT, &ai) != PFM_SUCCESS)
			continue;
		if (ai.type != PFM_ATTR_UMASK)
			continue;
		w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", ai.name);
		if (w < 0 || (size_t)w >= len - used) {
			if (len > 4)
				strcpy(buf + len - 4, "...");
			return;
		}
		used += (size_t)w;
	}
}

int hwt_pmc_pfm_encode(const char *str, struct perf_event_attr *attr, char *canon, size_t canon_len,
		       char *why, size_t why_len)
{
	pfm_perf_encode_arg_t arg;
	struct perf_event_attr pattr;
	char *fstr = NULL;
	int ret;

	if (hwt_pmc_pfm_init() < 0) {
		if (!pfm_loaded)
			snprintf(why, why_len,
				 "libpfm4 (%s) cannot be loaded: install libpfm4 "
				 "(scripts/install-deps.sh)",
				 HWT_PFM_SONAME);
		else
			snprintf(why, why_len, "libpfm4 failed to initialise: %s",
				 pfm.strerror(pfm_status));
		return -HWT_ELIB;
	}
	memset(&arg, 0, sizeof(arg));
	memset(&pattr, 0, sizeof(pattr));
	/* libpfm4 copies back attr->size bytes, and only the first 64 (the
	 * first ABI version, without config2) when it is 0. */
	pattr.size = sizeof(pattr);
	arg.attr = &pattr;
	arg.fstr = &fstr;
	arg.size = sizeof(arg);
	/* Default privilege levels as perf's: user and kernel (PLM0|PLM3);
	 * the caller's :u / :k modifiers narrow it. */
	ret = pfm.get_os_event_encoding(str, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
	if (ret != PFM_SUCCESS) {
		int err;

		switch (ret) {
		case PFM_ERR_NOTFOUND:
			err = -HWT_ENOEVENT;
			snprintf(why, why_len, "unknown event");
			break;
		case PFM_ERR_UMASK:
		case PFM_ERR_ATTR:
		case PFM_ERR_ATTR_VAL:
		case PFM_ERR_ATTR_SET:
		case PFM_ERR_FEATCOMB: {
			/* The event exists; say which unit masks it has. */
			char base[HWT_PMC_NAME_MAX], names[512];
			const char *colon;
			int idx;

			snprintf(base, sizeof(base), "%s", str);
			colon = strstr(base, "::");
			colon = strchr(colon ? colon + 2 : base, ':');
			if (colon)
				base[colon - base] = '\0';
			idx = pfm.find_event(base);
			names[0] = '\0';
			if (idx >= 0)
				umask_names(idx, names, sizeof(names));
			err = -HWT_EPARSE;
			if (names[0])
				snprintf(why, why_len, "%s (libpfm4); %s takes: %s",
					 pfm.strerror(ret), base, names);
			else
				snprintf(why, why_len, "%s (libpfm4)", pfm.strerror(ret));
			break;
		}
		case PFM_ERR_NOTSUPP:
			err = -HWT_ENOTSUP;
			snprintf(why, why_len, "%s (libpfm4)", pfm.strerror(ret));
			break;
		default:
			err = -HWT_ELIB;
			snprintf(why, why_len, "%s (libpfm4)", pfm.strerror(ret));
			break;
		}
		free(fstr);
		return err;
	}
	/* libpfm4 fills the fields it knows; keep the kernel ABI size we were
	 * built with. */
	memcpy(attr, &pattr, sizeof(*attr));
	attr->size = sizeof(*attr);
	snprintf(canon, canon_len, "%s", fstr ? fstr : str);
	free(fstr);
	return 0;
}

static bool pmu_info(pfm_pmu_t p, pfm_pmu_info_t *pinfo)
{
	memset(pinfo, 0, sizeof(*pinfo));
	pinfo->size = sizeof(*pinfo);
	return pfm.get_pmu_info(p, pinfo) == PFM_SUCCESS && pinfo->is_present;
}

int hwt_pmc_pfm_foreach_name(int (*fn)(void *ctx, const char *name), void *ctx)
{
	char full[HWT_PMC_NAME_MAX];

	if (hwt_pmc_pfm_init() < 0)
		return 0;
	for (int p = PFM_PMU_NONE + 1; p < PFM_PMU_MAX; p++) {
		pfm_pmu_info_t pinfo;

		if (!pmu_info((pfm_pmu_t)p, &pinfo))
			continue;
		for (int idx = pinfo.first_event; idx != -1; idx = pfm.get_event_next(idx)) {
			pfm_event_info_t info;
			int ret;

			memset(&info, 0, sizeof(info));
			info.size = sizeof(info);
			if (pfm.get_event_info(idx, PFM_OS_PERF_EVENT_EXT, &info) != PFM_SUCCESS)
				continue;
			ret = fn(ctx, info.name);
			if (ret)
				return ret;
			snprintf(full, sizeof(full), "%s::%s", pinfo.name, info.name);
			ret = fn(ctx, full);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int hwt_pmc_pfm_list(const char *pattern, hwt_pmc_list_fn fn, void *ctx)
{
	char full[HWT_PMC_NAME_MAX], umask[HWT_PMC_NAME_MAX];

	if (hwt_pmc_pfm_init() < 0)
		return -HWT_ELIB;
	for (int p = PFM_PMU_NONE + 1; p < PFM_PMU_MAX; p++) {
		pfm_pmu_info_t pinfo;
		bool pmu_shown = false, pmu_match;

		if (!pmu_info((pfm_pmu_t)p, &pinfo))
			continue;
		/* perf's own generic events are listed from our table, in
		 * perf's spelling; libpfm4's copies of them add nothing. */
		if (!strcmp(pinfo.name, "perf") || !strcmp(pinfo.name, "perf_raw"))
			continue;
		pmu_match = hwt_pmc_match(pinfo.name, pattern);
		for (int idx = pinfo.first_event; idx != -1; idx = pfm.get_event_next(idx)) {
			pfm_event_info_t info;
			struct hwt_pmc_list_entry e;
			int ret;

			memset(&info, 0, sizeof(info));
			info.size = sizeof(info);
			if (pfm.get_event_info(idx, PFM_OS_PERF_EVENT_EXT, &info) != PFM_SUCCESS)
				continue;
			snprintf(full, sizeof(full), "%s::%s", pinfo.name, info.name);
			if (!pmu_match && !hwt_pmc_match(full, pattern) &&
			    !hwt_pmc_match(info.desc, pattern))
				continue;
			if (!pmu_shown) {
				/* Modifiers are the same for every event of a PMU:
				 * name them once, with the PMU. */
				char desc[1024];
				size_t used;

				used = (size_t)snprintf(desc, sizeof(desc),
							"%s; modifiers:", pinfo.desc);
				for (int a = 0; a < info.nattrs && used < sizeof(desc); a++) {
					pfm_event_attr_info_t ai;

					memset(&ai, 0, sizeof(ai));
					ai.size = sizeof(ai);
					if (pfm.get_event_attr_info(idx, a, PFM_OS_PERF_EVENT_EXT,
								    &ai) != PFM_SUCCESS ||
					    ai.type == PFM_ATTR_UMASK)
						continue;
					used += (size_t)snprintf(
					    desc + used, sizeof(desc) - used, " :%s%s", ai.name,
					    ai.type == PFM_ATTR_MOD_INTEGER ? "=N" : "");
				}
				memset(&e, 0, sizeof(e));
				e.kind = HWT_PMC_LIST_PMU;
				e.name = pinfo.name;
				e.desc = desc;
				e.present = true;
				ret = fn(ctx, &e);
				if (ret)
					return ret;
				pmu_shown = true;
			}
			memset(&e, 0, sizeof(e));
			e.kind = HWT_PMC_LIST_PFM;
			e.name = full;
			e.desc = info.desc;
			e.present = true;
			ret = fn(ctx, &e);
			if (ret)
				return ret;
			for (int a = 0; a < info.nattrs; a++) {
				pfm_event_attr_info_t ai;

				memset(&ai, 0, sizeof(ai));
				ai.size = sizeof(ai);
				if (pfm.get_event_attr_info(idx, a, PFM_OS_PERF_EVENT_EXT, &ai) !=
					PFM_SUCCESS ||
				    ai.type != PFM_ATTR_UMASK)
					continue;
				snprintf(umask, sizeof(umask), "%s%s", ai.name,
					 ai.is_dfl ? " (default)" : "");
				memset(&e, 0, sizeof(e));
				e.kind = HWT_PMC_LIST_PFM_UMASK;
				e.name = umask;
				e.desc = ai.desc;
				e.present = true;
				ret = fn(ctx, &e);
				if (ret)
					return ret;
			}
		}
	}
	return 0;
}
