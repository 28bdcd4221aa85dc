/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/kcore.c - the kernel's half of an Intel PT recording: whether
 * the kernel's code can be read (a trace of kernel code only decodes with
 * it), and where from: /proc/kcore (the running text, alternatives and
 * static keys applied, as `perf record --kcore` copies it), or a vmlinux
 * with its symbols (debuginfo packages, /boot).
 */
#include "collector/rec_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

int hwt_coll_kernel_code(const char *proc_root, char *why, size_t len)
{
	char path[4096];
	struct utsname u;
	int fd;

	snprintf(path, sizeof(path), "%s/kcore", proc_root ? proc_root : "/proc");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	if (uname(&u) == 0) {
		/* where Debian's debug packages and kernel builds put it */
		const char *const dir[] = {"/usr/lib/debug/boot/vmlinux-",
					   "/usr/lib/debug/lib/modules/", "/lib/modules/",
					   "/boot/vmlinux-"};
		const char *const tail[] = {"", "/vmlinux", "/build/vmlinux", ""};

		for (size_t i = 0; i < HWT_ARRAY_SIZE(dir); i++) {
			char v[4096];

			snprintf(v, sizeof(v), "%s%s%s", dir[i], u.release, tail[i]);
			if (access(v, R_OK) == 0)
				return 1;
		}
	}
	if (why && len)
		snprintf(why, len, "%s: %s, and no vmlinux for kernel %s", path,
			 errno == ENOENT ? "not present" : strerror(errno),
			 uname(&u) == 0 ? u.release : "?");
	return 0;
}
