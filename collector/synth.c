/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/synth.c - sideband for what existed before recording started.
 * The kernel reports mappings and names only as they happen; a process we
 * attach to (-p) or find running (-a) did its exec and mmaps long ago. As
 * perf does, we read /proc and write the COMM and MMAP2 records the kernel
 * would have written, with time 0 (valid from the start) and the tracking
 * event's sample_id_all trailer, so that readers treat them like the rest.
 */
#include "collector/rec_int.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *proc_root(const struct hwt_coll_synth *s)
{
	return s->proc_root ? s->proc_root : "/proc";
}

/* The sample_id_all trailer for a record of (pid, tid) at time 0. Returns
 * its length. */
static size_t trailer(const struct hwt_coll_synth *s, uint8_t *p, uint32_t pid, uint32_t tid)
{
	size_t n = 0;

	if (s->sample_type & PERF_SAMPLE_TID) {
		hwt_put_le32(p + n, pid);
		hwt_put_le32(p + n + 4, tid);
		n += 8;
	}
	if (s->sample_type & PERF_SAMPLE_TIME) {
		hwt_put_le64(p + n, 0);
		n += 8;
	}
	if (s->sample_type & PERF_SAMPLE_ID) {
		hwt_put_le64(p + n, s->id);
		n += 8;
	}
	if (s->sample_type & PERF_SAMPLE_STREAM_ID) {
		hwt_put_le64(p + n, s->id);
		n += 8;
	}
	if (s->sample_type & PERF_SAMPLE_CPU) {
		hwt_put_le64(p + n, 0);
		n += 8;
	}
	if (s->sample_type & PERF_SAMPLE_IDENTIFIER) {
		hwt_put_le64(p + n, s->id);
		n += 8;
	}
	return n;
}

static void header(uint8_t *p, uint32_t type, uint16_t misc, size_t size)
{
	hwt_put_le32(p, type);
	hwt_put_le16(p + 4, misc);
	hwt_put_le16(p + 6, (uint16_t)size);
}

int hwt_coll_synth_comm(const struct hwt_coll_synth *s, uint8_t *buf, size_t cap, uint32_t pid,
			uint32_t tid, const char *comm)
{
	size_t clen = strlen(comm) + 1, body = 8 + ((clen + 7) & ~(size_t)7), n;

	n = 8 + body + 48;
	if (n > cap || n > 65535)
		return -HWT_ETOOBIG;
	memset(buf, 0, n);
	hwt_put_le32(buf + 8, pid);
	hwt_put_le32(buf + 12, tid);
	memcpy(buf + 16, comm, clen);
	n = 8 + body;
	n += trailer(s, buf + n, pid, tid);
	header(buf, PERF_RECORD_COMM, PERF_RECORD_MISC_USER, n);
	return (int)n;
}

int hwt_coll_synth_mmap2(const struct hwt_coll_synth *s, uint8_t *buf, size_t cap, uint32_t pid,
			 uint64_t start, uint64_t len, uint64_t pgoff, uint32_t maj, uint32_t min,
			 uint64_t ino, uint32_t prot, const char *file)
{
	size_t flen = strlen(file) + 1, fixed = 8 + 8 * 3 + 4 * 2 + 8 * 2 + 4 * 2, n;

	n = 8 + fixed + ((flen + 7) & ~(size_t)7) + 48;
	if (n > cap || n > 65535)
		return -HWT_ETOOBIG;
	memset(buf, 0, n);
	n = 8;
	hwt_put_le32(buf + n, pid);
	hwt_put_le32(buf + n + 4, pid);
	hwt_put_le64(buf + n + 8, start);
	hwt_put_le64(buf + n + 16, len);
	hwt_put_le64(buf + n + 24, pgoff);
	hwt_put_le32(buf + n + 32, maj);
	hwt_put_le32(buf + n + 36, min);
	hwt_put_le64(buf + n + 40, ino);
	hwt_put_le64(buf + n + 48, 0); /* ino_generation */
	hwt_put_le32(buf + n + 56, prot);
	hwt_put_le32(buf + n + 60, MAP_PRIVATE);
	n += fixed;
	memcpy(buf + n, file, flen);
	n += (flen + 7) & ~(size_t)7;
	n += trailer(s, buf + n, pid, pid);
	header(buf, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, n);
	return (int)n;
}

/* COMM of every thread of pid. */
static int synth_threads(const struct hwt_coll_synth *s, int pid, uint8_t *buf, size_t cap)
{
	char path[PATH_MAX], comm[64];
	struct dirent *de;
	DIR *d;
	int err = 0;

	snprintf(path, sizeof(path), "%s/%d/task", proc_root(s), pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d)) && err >= 0) {
		char file[PATH_MAX + 300], *end;
		long tid = strtol(de->d_name, &end, 10);
		FILE *f;
		int n;

		if (de->d_name[0] == '.' || *end || tid <= 0)
			continue;
		snprintf(file, sizeof(file), "%s/%s/comm", path, de->d_name);
		f = fopen(file, "r");
		if (!f)
			continue; /* exited meanwhile */
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
		comm[strcspn(comm, "\n")] = '\0';
		n = hwt_coll_synth_comm(s, buf, cap, (uint32_t)pid, (uint32_t)tid, comm);
		err = n < 0 ? n : s->emit(s->ctx, buf, (size_t)n);
	}
	closedir(d);
	return err < 0 ? err : 0;
}

/* MMAP2 of every executable mapping of pid. */
static int synth_maps(const struct hwt_coll_synth *s, int pid, uint8_t *buf, size_t cap)
{
	char path[PATH_MAX], line[PATH_MAX + 256];
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "%s/%d/maps", proc_root(s), pid);
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (err >= 0 && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off, ino;
		unsigned maj, min;
		char perms[8];
		int pos = 0, n;
		const char *file;
		uint32_t prot = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, perms, &off, &maj,
			   &min, &ino, &pos) < 7 ||
		    hi <= lo)
			continue;
		if (perms[2] != 'x')
			continue; /* only code matters to samples and traces */
		line[strcspn(line, "\n")] = '\0';
		file = pos > 0 && line[pos] ? line + pos : "//anon";
		prot |= perms[0] == 'r' ? PROT_READ : 0;
		prot |= perms[1] == 'w' ? PROT_WRITE : 0;
		prot |= PROT_EXEC;
		n = hwt_coll_synth_mmap2(s, buf, cap, (uint32_t)pid, lo, hi - lo, off, maj, min,
					 ino, prot, file);
		err = n < 0 ? n : s->emit(s->ctx, buf, (size_t)n);
	}
	fclose(f);
	return err < 0 ? err : 0;
}

int hwt_coll_synth_process(const struct hwt_coll_synth *s, int pid)
{
	uint8_t *buf = malloc(HWT_COLL_RECORD_MAX);
	int err;

	if (!buf)
		return -ENOMEM;
	err = synth_threads(s, pid, buf, HWT_COLL_RECORD_MAX);
	if (err >= 0)
		err = synth_maps(s, pid, buf, HWT_COLL_RECORD_MAX);
	free(buf);
	return err;
}

int hwt_coll_synth_all(const struct hwt_coll_synth *s)
{
	struct dirent *de;
	DIR *d = opendir(proc_root(s));
	int err = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)) && err >= 0) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (!isdigit((unsigned char)de->d_name[0]) || *end || pid <= 0 ||
		    (s->skip_pid > 0 && pid == s->skip_pid))
			continue;
		err = hwt_coll_synth_process(s, (int)pid);
		if (err == -ESRCH || err == -EACCES || err == -ENOENT)
			err = 0; /* it exited, or a kernel thread without maps */
	}
	closedir(d);
	return err;
}
