/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/progs/ptsim_forks.c - FORKS children, one after the other, each
 * running ptemu_loop(200) and exiting 0: a known number of FORK, COMM-less
 * and EXIT sideband records, spread over the run (for snapshots taken
 * while it runs).
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptemu_common.h"

#define FORKS 40

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : FORKS;

	for (int i = 0; i < n; i++) {
		int status = 1;
		pid_t pid = fork();

		if (pid == 0)
			_exit(ptemu_loop(200) == 200 ? 0 : 1);
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			return 1;
		ptemu_loop(5000);
	}
	return 0;
}
