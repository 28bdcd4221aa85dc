/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * perfsys/sim_model.c - the simulated machines: the hardware facts sysfs
 * does not show (counters per PMU, which CPUs a hybrid PMU covers, event
 * rates), and the machine's folder built from the fixture tree in
 * perfsys/sim/<model>: its sysfs PMUs, the CPUs of the hybrid PMUs, this
 * machine's own software/tracepoint/probe PMUs, the online CPUs, and a
 * procfs with perf_event_paranoid and nmi_watchdog.
 */
#include "perfsys/sim_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* RAPL counts in units of 2^-32 J (the scale in sysfs): W -> counts/ns. */
#define RAPL_PER_NS(watts) ((watts)*4294967296.0 / 1e9)
/* IMC counts 64-byte lines (scale 6.103515625e-5 MiB): MiB/s -> per ns. */
#define IMC_PER_NS(mib_s) ((mib_s) / 6.103515625e-5 / 1e9)

const struct sim_model hwt_sim_models[] = {
    {"skl",
     "Skylake client: cpu (4 general + 3 fixed counters), uncore_imc, RAPL",
     true,
     {
	 {"cpu", SIM_CORE, SIM_CPUS_ALL, 4, 3, 3, true, 3.0, 2.0, {{0}}},
	 {"uncore_imc",
	  SIM_SYSTEM,
	  SIM_CPUS_ALL,
	  2,
	  0,
	  0,
	  false,
	  0,
	  0,
	  {{0x01, IMC_PER_NS(4096.0)}, {0x02, IMC_PER_NS(1024.0)}}},
	 {"power",
	  SIM_SYSTEM,
	  SIM_CPUS_ALL,
	  3,
	  0,
	  0,
	  false,
	  0,
	  0,
	  {{0x01, RAPL_PER_NS(8.0)}, {0x02, RAPL_PER_NS(15.0)}, {0x03, RAPL_PER_NS(2.0)}}},
     }},
    {"adl",
     "Alder Lake hybrid: cpu_core (8 general + 4 fixed) on the first half of the CPUs, "
     "cpu_atom (6 general + 3 fixed) on the rest, RAPL",
     true,
     {
	 {"cpu_core", SIM_CORE, SIM_CPUS_FIRST_HALF, 8, 4, 3, true, 4.0, 2.0, {{0}}},
	 {"cpu_atom", SIM_CORE, SIM_CPUS_SECOND_HALF, 6, 3, 3, true, 2.5, 1.0, {{0}}},
	 {"power",
	  SIM_SYSTEM,
	  SIM_CPUS_ALL,
	  2,
	  0,
	  0,
	  false,
	  0,
	  0,
	  {{0x01, RAPL_PER_NS(12.0)}, {0x02, RAPL_PER_NS(28.0)}}},
     }},
    {"amd",
     "Zen 3: cpu (6 general counters, no fixed ones), IBS for precise cycles, RAPL",
     false,
     {
	 {"cpu", SIM_CORE, SIM_CPUS_ALL, 6, 0, 0, false, 3.5, 1.5, {{0}}},
	 {"ibs_op", SIM_IBS, SIM_CPUS_ALL, 1, 0, 2, false, 3.5, 1.5, {{0}}},
	 {"ibs_fetch", SIM_IBS, SIM_CPUS_ALL, 1, 0, 0, false, 3.5, 1.5, {{0}}},
	 {"power", SIM_SYSTEM, SIM_CPUS_ALL, 1, 0, 0, false, 0, 0, {{0x02, RAPL_PER_NS(35.0)}}},
     }},
    {NULL, NULL, false, {{0}}},
};

static int fail(int err, char *errmsg, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Writes "<what>: <errno text>" into errmsg and returns err. */
static int fail(int err, char *errmsg, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (errmsg && len) {
		int n;

		va_start(ap, fmt);
		n = vsnprintf(errmsg, len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < len)
			snprintf(errmsg + n, len - (size_t)n, ": %s", strerror(-err));
	}
	return err;
}

static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int err = 0;

	if (!f)
		return -errno;
	if (fputs(text, f) < 0)
		err = -EIO;
	if (fclose(f) != 0 && !err)
		err = -errno;
	return err;
}

static int read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return (int)n;
}

static int mkdirs(const char *path)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Copies the regular files and folders under src into dst. */
static int copy_tree(const char *src, const char *dst)
{
	DIR *d = opendir(src);
	struct dirent *e;
	int err;

	if (!d)
		return -errno;
	if ((err = mkdirs(dst)) < 0) {
		closedir(d);
		return err;
	}
	while (!err && (e = readdir(d))) {
		char s[PATH_MAX], t[PATH_MAX], buf[4096];
		struct stat st;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md"))
			continue;
		if (snprintf(s, sizeof(s), "%s/%s", src, e->d_name) >= (int)sizeof(s) ||
		    snprintf(t, sizeof(t), "%s/%s", dst, e->d_name) >= (int)sizeof(t)) {
			err = -ENAMETOOLONG;
			break;
		}
		if (stat(s, &st) < 0) {
			err = -errno;
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			err = copy_tree(s, t);
		} else if (read_text(s, buf, sizeof(buf)) >= 0) {
			size_t n = strlen(buf);

			if (n + 1 < sizeof(buf)) {
				buf[n] = '\n';
				buf[n + 1] = '\0';
			}
			err = write_text(t, buf);
		}
	}
	closedir(d);
	return err;
}

static int parse_online(const char *text, int *cpus, int max)
{
	int n = 0;
	const char *p = text;

	while (*p && n < max) {
		char *end;
		long a = strtol(p, &end, 10), b;

		if (end == p)
			return -EINVAL;
		b = a;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			p = end;
		}
		for (long c = a; c <= b && n < max; c++)
			cpus[n++] = (int)c;
		if (*p == ',')
			p++;
		else
			break;
	}
	return n;
}

/* The machine's own PMUs that are not hardware: they stay as they are. */
static bool keep_real_pmu(const char *name)
{
	static const char *const keep[] = {"software", "tracepoint", "breakpoint", "uprobe",
					   "kprobe"};

	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (!strcmp(name, keep[i]))
			return true;
	return false;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void hwt_sim_tree_remove(struct sim *s)
{
	if (s->root[0])
		nftw(s->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	s->root[0] = '\0';
}

int hwt_sim_tree_build(struct sim *s, const char *dir, char *errmsg, size_t len)
{
	char src[PATH_MAX], path[PATH_MAX + 512], text[4096];
	uint32_t used[64];
	size_t nused = 0;
	DIR *d;
	struct dirent *e;
	int err;

	snprintf(s->root, sizeof(s->root), "%s/hwt-pmusim-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(s->root)) {
		err = -errno;
		s->root[0] = '\0';
		return fail(err, errmsg, len, "cannot create the simulated machine's folder in %s",
			    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	}
	snprintf(s->sysfs, sizeof(s->sysfs), "%s/sys", s->root);
	snprintf(s->procfs, sizeof(s->procfs), "%s/proc", s->root);
	if (snprintf(src, sizeof(src), "%s/%s", dir, s->model->name) >= (int)sizeof(src))
		return fail(-ENAMETOOLONG, errmsg, len, "bad folder '%s'", dir);
	if ((err = copy_tree(src, s->sysfs)) < 0)
		return fail(
		    err, errmsg, len,
		    "cannot read the simulated machine's sysfs tree %s (set HWT_PMU_SIM_DIR "
		    "to hwtrace's perfsys/sim folder)",
		    src);

	/* The online CPUs are this machine's. */
	if (read_text("/sys/devices/system/cpu/online", text, sizeof(text)) < 0)
		snprintf(text, sizeof(text), "0");
	s->ncpus = parse_online(text, s->cpus, SIM_MAX_CPUS);
	if (s->ncpus <= 0)
		return fail(-EINVAL, errmsg, len, "cannot parse the online CPUs '%s'", text);
	snprintf(path, sizeof(path), "%s/devices/system/cpu", s->sysfs);
	if ((err = mkdirs(path)) < 0)
		return fail(err, errmsg, len, "cannot create %s", path);
	snprintf(path, sizeof(path), "%s/devices/system/cpu/online", s->sysfs);
	strcat(text, "\n");
	if ((err = write_text(path, text)) < 0)
		return fail(err, errmsg, len, "cannot write %s", path);
	/* tracefs, kernel notes: the real ones. */
	snprintf(path, sizeof(path), "%s/kernel", s->sysfs);
	if (symlink("/sys/kernel", path) < 0)
		return fail(-errno, errmsg, len, "cannot link %s", path);

	/* The machine's own non-hardware PMUs, and their types. */
	d = opendir("/sys/bus/event_source/devices");
	while (d && (e = readdir(d))) {
		char real[512];
		long t;

		if (e->d_name[0] == '.' || !keep_real_pmu(e->d_name))
			continue;
		snprintf(real, sizeof(real), "/sys/bus/event_source/devices/%s", e->d_name);
		snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s", s->sysfs, e->d_name);
		if (symlink(real, path) < 0) {
			err = -errno;
			closedir(d);
			return fail(err, errmsg, len, "cannot link %s", path);
		}
		strcat(real, "/type");
		if (read_text(real, text, sizeof(text)) > 0 && (t = strtol(text, NULL, 10)) > 0 &&
		    nused < 64)
			used[nused++] = (uint32_t)t;
	}
	if (d)
		closedir(d);

	/* The simulated PMUs: types (moved off the machine's own), CPUs. */
	s->npmus = 0;
	for (int i = 0; i < SIM_MAX_PMUS && s->model->pmus[i].name; i++) {
		const struct sim_pmu_model *m = &s->model->pmus[i];
		struct sim_pmu *p = &s->pmus[s->npmus++];
		long t;

		p->m = m;
		snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s/type", s->sysfs,
			 m->name);
		if (read_text(path, text, sizeof(text)) <= 0 || (t = strtol(text, NULL, 10)) <= 0)
			return fail(-EINVAL, errmsg, len, "no type in %s", path);
		for (size_t k = 0; k < nused; k++) {
			if (used[k] == (uint32_t)t) {
				t = 32 + i; /* the machine uses it: take a free one */
				snprintf(text, sizeof(text), "%ld\n", t);
				if ((err = write_text(path, text)) < 0)
					return fail(err, errmsg, len, "cannot write %s", path);
				break;
			}
		}
		p->type = (uint32_t)t;
		p->first = s->cpus[0];
		p->last = s->cpus[s->ncpus - 1];
		if (m->kind == SIM_CORE && m->cpus != SIM_CPUS_ALL) {
			int half = s->ncpus > 1 ? s->ncpus / 2 : 1;

			if (m->cpus == SIM_CPUS_FIRST_HALF) {
				p->last = s->cpus[half - 1];
			} else {
				p->first = s->cpus[half < s->ncpus ? half : s->ncpus - 1];
			}
			snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s/cpus",
				 s->sysfs, m->name);
			if (p->first == p->last)
				snprintf(text, sizeof(text), "%d\n", p->first);
			else
				snprintf(text, sizeof(text), "%d-%d\n", p->first, p->last);
			if ((err = write_text(path, text)) < 0)
				return fail(err, errmsg, len, "cannot write %s", path);
		} else if (m->kind == SIM_SYSTEM) {
			snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s/cpumask",
				 s->sysfs, m->name);
			if (read_text(path, text, sizeof(text)) > 0)
				p->first = p->last = (int)strtol(text, NULL, 10);
		}
	}

	/* procfs: what the simulated user meets. */
	snprintf(path, sizeof(path), "%s/sys/kernel", s->procfs);
	if ((err = mkdirs(path)) < 0)
		return fail(err, errmsg, len, "cannot create %s", path);
	snprintf(path, sizeof(path), "%s/sys/kernel/perf_event_paranoid", s->procfs);
	snprintf(text, sizeof(text), "%d\n", s->paranoid);
	if ((err = write_text(path, text)) < 0)
		return fail(err, errmsg, len, "cannot write %s", path);
	snprintf(path, sizeof(path), "%s/sys/kernel/nmi_watchdog", s->procfs);
	if ((err = write_text(path, s->watchdog ? "1\n" : "0\n")) < 0)
		return fail(err, errmsg, len, "cannot write %s", path);
	return 0;
}
