/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* bt_work MARKER: the workload the bpftrace tools are compared on, each
 * action a known number of times, every path and argument holding MARKER
 * so the tools' lines about it can be picked out of a system-wide trace:
 *   3 open() of /tmp/MARKER.N (missing: opensnoop's ENOENT lines)
 *   2 statx() of /tmp/MARKER.stat (statsnoop)
 *   3 kill(self, 0) (killsnoop)
 *   2 nanosleep() of 20 ms (naptime)
 *   1 setuid(getuid()) (setuids)
 *   1 fork and exec of /bin/true MARKER a b (execsnoop)
 *   1 fsync() of a file (syncsnoop) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "bt_work_marker";
	char path[256];
	struct statx sx;
	struct timespec ts = {0, 20 * 1000 * 1000};
	pid_t child;
	int fd;

	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "/tmp/%s.%d", m, i);
		fd = open(path, O_RDONLY);
		if (fd >= 0)
			close(fd);
	}
	snprintf(path, sizeof(path), "/tmp/%s.stat", m);
	for (int i = 0; i < 2; i++)
		statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &sx);
	for (int i = 0; i < 3; i++)
		kill(getpid(), 0);
	for (int i = 0; i < 2; i++)
		syscall(SYS_nanosleep, &ts, NULL); /* glibc's nanosleep is clock_nanosleep */
	if (setuid(getuid()) != 0)
		return 1;
	child = fork();
	if (child == 0) {
		execl("/bin/true", "/bin/true", m, "a", "b", (char *)NULL);
		_exit(127);
	}
	waitpid(child, NULL, 0);
	snprintf(path, sizeof(path), "/tmp/%s.sync", m);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		if (write(fd, "x", 1) != 1 || fsync(fd) != 0)
			return 1;
		close(fd);
		unlink(path);
	}
	return 0;
}
