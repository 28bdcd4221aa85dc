/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* bt_work2: the second workload of the bpftrace tools' comparison, for
 * the tools that name a process by its command (bt_work2), each action a
 * known number of times:
 *   3 pthread_create() of bt_work2_thread (threadsnoop)
 *   2 getaddrinfo("localhost") (gethostlatency)
 *   5 fork()s of children that exit at once (pidpersec)
 *   300,000 getppid() (syscount: the busiest command of its run)
 *   64 KiB written to PATH (argv[1]) and fsync()ed, then sync()
 *     (bitesize: a block request of its own; writeback: a "sync")
 *   a busy loop of 300 ms (cpuwalk) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void *bt_work2_thread(void *arg)
{
	return arg;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static char buf[65536];
	volatile unsigned long spin = 0;
	double t0;
	int fd;

	for (int i = 0; i < 3; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, bt_work2_thread, NULL) != 0)
			return 1;
		pthread_join(t, NULL);
	}
	for (int i = 0; i < 2; i++) {
		struct addrinfo *ai = NULL, hints = {.ai_family = AF_INET};

		if (getaddrinfo("localhost", NULL, &hints, &ai) == 0)
			freeaddrinfo(ai);
	}
	for (int i = 0; i < 5; i++) {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		waitpid(p, NULL, 0);
	}
	for (int i = 0; i < 300000; i++)
		syscall(SYS_getppid);
	if (argc > 1) {
		memset(buf, 'x', sizeof(buf));
		fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fsync(fd))
			return 1;
		close(fd);
		unlink(argv[1]);
		sync();
	}
	t0 = now();
	while (now() - t0 < 0.3)
		spin++;
	return 0;
}
