/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/sysinfo.c - facts about the recording machine that travel in
 * the file: the CPU's identity (libipt's errata tables key on family, model
 * and stepping), a copy of the vDSO (code that is in no file on disk), and
 * the kernel's build-id (to tell later whether a vmlinux matches).
 */
#include "collector/rec_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "symbolize/symbolize.h"

int hwt_coll_cpuinfo(const char *proc_root, struct hwt_coll_cpuinfo *ci)
{
	char path[PATH_MAX], line[512];
	FILE *f;
	int got = 0;

	memset(ci, 0, sizeof(*ci));
	snprintf(path, sizeof(path), "%s/cpuinfo", proc_root ? proc_root : "/proc");
	f = fopen(path, "r");
	if (!f)
		return -errno;
	/* The first processor's block describes them all. */
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *val;

		if (line[0] == '\n' && got)
			break;
		if (!colon)
			continue;
		val = colon + 1;
		while (*val == ' ' || *val == '\t')
			val++;
		val[strcspn(val, "\n")] = '\0';
		if (!strncmp(line, "vendor_id", 9)) {
			snprintf(ci->vendor, sizeof(ci->vendor), "%s", val);
			got |= 1;
		} else if (!strncmp(line, "cpu family", 10)) {
			ci->family = (uint32_t)strtoul(val, NULL, 10);
			got |= 2;
		} else if (!strncmp(line, "model name", 10)) {
			snprintf(ci->desc, sizeof(ci->desc), "%s", val);
		} else if (!strncmp(line, "model", 5) && (line[5] == '\t' || line[5] == ' ')) {
			ci->model = (uint32_t)strtoul(val, NULL, 10);
			got |= 4;
		} else if (!strncmp(line, "stepping", 8)) {
			ci->stepping = (uint32_t)strtoul(val, NULL, 10);
			got |= 8;
		}
	}
	fclose(f);
	ci->known = got == 15;
	return 0;
}

int64_t hwt_coll_vdso(void **image, uint64_t *start)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	char line[512];
	FILE *f;
	uint64_t lo = 0, hi = 0;

	*image = NULL;
	*start = 0;
	if (!base)
		return 0;
	f = fopen("/proc/self/maps", "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b;

		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &a, &b) == 2 && a == base) {
			lo = a;
			hi = b;
			break;
		}
	}
	fclose(f);
	if (hi <= lo || hi - lo > (64u << 20))
		return 0;
	*image = malloc((size_t)(hi - lo));
	if (!*image)
		return -ENOMEM;
	memcpy(*image, (const void *)(uintptr_t)lo, (size_t)(hi - lo));
	*start = lo;
	return (int64_t)(hi - lo);
}

int hwt_coll_kernel_build_id(const char *sys_root, uint8_t *id, size_t cap)
{
	char path[PATH_MAX];
	uint8_t buf[4096];
	ssize_t n;
	int fd, r;

	snprintf(path, sizeof(path), "%s/kernel/notes", sys_root ? sys_root : "/sys");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0)
		return 0;
	r = hwt_sym_build_id_notes(buf, (size_t)n, id, cap);
	return r > 0 ? r : 0;
}
