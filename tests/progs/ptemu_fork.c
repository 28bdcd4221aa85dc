/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/ptemu_fork.c - forks: the child runs ptemu_loop(700) and
 * exits 0, the parent waits and runs ptemu_loop(500).
 */
#include <sys/wait.h>
#include <unistd.h>

#include "ptemu_common.h"

int main(void)
{
	int status = 1;
	pid_t pid = fork();

	if (pid == 0)
		_exit(ptemu_loop(700) == 700 ? 0 : 1);
	waitpid(pid, &status, 0);
	return ptemu_loop(500) == 500 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
