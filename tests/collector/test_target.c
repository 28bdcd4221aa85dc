/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/collector/test_target.c - targets: a launched command is held
 * before exec until started (counters opened meanwhile count only from its
 * exec), exit codes and signals come back shell-style, a missing command is
 * found before anything runs, attach lists every thread of a PID, a gone
 * PID is a clear error, CPU lists parse, system-wide reads the online CPUs
 * (from a fake sysfs too), SIGTERM is forwarded, SIGINT ends an attach.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/collector.h"
#include "pmc/pmc.h"
#include "tests/lib/testutil.h"

static char msg[512];

static struct hwt_coll_target *new_target(const char *sysfs)
{
	struct hwt_coll_target_config cfg;
	struct hwt_coll_target *t;

	hwt_coll_target_config_init(&cfg);
	cfg.errmsg = msg;
	cfg.errmsg_len = sizeof(msg);
	cfg.sysfs_root = sysfs;
	assert_int_equal(hwt_coll_target_alloc(&t, &cfg), 0);
	return t;
}

static void test_launch_held_until_start(void **state)
{
	struct hwt_coll_target *t = new_target(NULL);
	char *argv[] = {(char *)hwt_test_prog("pmc_touch"), "500", NULL};
	struct hwt_pmc_evlist *l;
	struct hwt_pmc_counters_config cc;
	struct hwt_pmc_counters *c;
	struct hwt_pmc_count cnt;
	const int *tids;
	char comm[64], path[64];
	size_t n;

	(void)state;
	assert_int_equal(hwt_coll_target_launch(t, argv), 0);
	n = hwt_coll_target_threads(t, &tids);
	assert_int_equal(n, 1);
	assert_int_equal(tids[0], hwt_coll_target_child(t));
	assert_false(hwt_coll_target_is_system(t));
	/* held: still our fork, not yet the program */
	usleep(20000);
	snprintf(path, sizeof(path), "/proc/%d/comm", tids[0]);
	{
		FILE *f = fopen(path, "r");

		assert_non_null(f);
		assert_non_null(fgets(comm, sizeof(comm), f));
		fclose(f);
	}
	assert_false(hwt_test_contains(comm, "pmc_touch"));
	assert_int_equal(hwt_pmc_evlist_alloc(&l, NULL), 0);
	assert_int_equal(hwt_pmc_evlist_add(l, "page-faults"), 1);
	hwt_pmc_counters_config_init(&cc);
	cc.enable_on_exec = true;
	assert_int_equal(hwt_pmc_counters_open(&c, l, tids, n, NULL, 0, &cc), 0);
	assert_int_equal(hwt_coll_target_wait(t, 0), -HWT_EINVAL); /* not started */
	assert_int_equal(hwt_coll_target_start(t), 0);
	assert_int_equal(hwt_coll_target_wait(t, -1), HWT_COLL_WAIT_EXITED);
	assert_int_equal(hwt_coll_target_exit_status(t), 0);
	assert_int_equal(hwt_pmc_counters_read(c, &cnt, 1), 0);
	assert_true(cnt.value >= 500 && cnt.value < 500 + 300);
	hwt_pmc_counters_close(c);
	hwt_pmc_evlist_free(l);
	hwt_coll_target_free(t);
}

static int run_status(char **argv)
{
	struct hwt_coll_target *t = new_target(NULL);
	int st;

	assert_int_equal(hwt_coll_target_launch(t, argv), 0);
	assert_int_equal(hwt_coll_target_start(t), 0);
	assert_int_equal(hwt_coll_target_wait(t, 5000), HWT_COLL_WAIT_EXITED);
	st = hwt_coll_target_exit_status(t);
	hwt_coll_target_free(t);
	return st;
}

static void test_exit_status(void **state)
{
	char *exit3[] = {"sh", "-c", "exit 3", NULL};
	char *killed[] = {"sh", "-c", "kill -KILL $$", NULL};
	char *spin[] = {(char *)hwt_test_prog("pmc_spin"), "20", NULL};

	(void)state;
	assert_int_equal(run_status(exit3), 3);
	assert_int_equal(run_status(killed), 128 + SIGKILL);
	{
		struct hwt_coll_target *t = new_target(NULL);
		double u, s;

		assert_int_equal(hwt_coll_target_launch(t, spin), 0);
		assert_int_equal(hwt_coll_target_start(t), 0);
		assert_int_equal(hwt_coll_target_wait(t, -1), HWT_COLL_WAIT_EXITED);
		hwt_coll_target_rusage(t, &u, &s);
		assert_true(u + s >= 0.015);
		hwt_coll_target_free(t);
	}
}

static void test_not_found(void **state)
{
	struct hwt_coll_target *t = new_target(NULL);
	char *argv[] = {"no-such-command-hwt", NULL};
	char *dir = hwt_test_tmpdir(), path[4096];
	char *argv2[] = {path, NULL};
	char *argv3[] = {dir, NULL};

	(void)state;
	assert_int_equal(hwt_coll_target_launch(t, argv), -ENOENT);
	assert_string_equal(msg,
			    "command 'no-such-command-hwt' not found; check its name, or PATH");
	assert_int_equal(hwt_coll_target_child(t), -1);
	snprintf(path, sizeof(path), "%s/nope", dir);
	assert_int_equal(hwt_coll_target_launch(t, argv2), -ENOENT);
	assert_int_equal(hwt_coll_target_launch(t, argv3), -EACCES); /* a directory */
	assert_true(hwt_test_contains(msg, "not an executable file"));
	hwt_coll_target_free(t);
	hwt_test_tmpdir_remove(dir);
}

static void test_never_started_runs_nothing(void **state)
{
	struct hwt_coll_target *t = new_target(NULL);
	char *dir = hwt_test_tmpdir(), marker[4096];
	char *argv[] = {"touch", marker, NULL};

	(void)state;
	snprintf(marker, sizeof(marker), "%s/ran", dir);
	assert_int_equal(hwt_coll_target_launch(t, argv), 0);
	hwt_coll_target_free(t); /* e.g. the counters failed to open */
	usleep(20000);
	assert_int_equal(access(marker, F_OK), -1);
	hwt_test_tmpdir_remove(dir);
}

/* Threads of process pid (entries of /proc/PID/task). */
static int task_count(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_attach_threads(void **state)
{
	struct hwt_coll_target *t = new_target(NULL);
	const int *tids;
	pid_t pid;
	size_t n;
	int gone;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(hwt_test_prog("pmc_family"), "pmc_family", "3", "0", "1", "hold", "600",
		      (char *)NULL);
		_exit(127);
	}
	/* Until its 3 threads exist (a fixed wait was too short for an ASan
	 * binary on a loaded machine). */
	for (int i = 0; i < 1000 && task_count(pid) < 4; i++)
		usleep(10000);
	assert_int_equal(hwt_coll_target_attach(t, &pid, 1), 0);
	n = hwt_coll_target_threads(t, &tids);
	assert_int_equal(n, 4); /* main + 3 threads */
	assert_int_equal(tids[0], pid);
	assert_int_equal(hwt_coll_target_child(t), -1);
	assert_int_equal(hwt_coll_target_start(t), 0);
	assert_int_equal(hwt_coll_target_wait(t, 10), HWT_COLL_WAIT_TIMEOUT);
	/* not our child: it ends when the process is gone (we reap it here) */
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(hwt_coll_target_wait(t, 5000), HWT_COLL_WAIT_EXITED);
	hwt_coll_target_free(t);
	/* now it is gone */
	t = new_target(NULL);
	gone = (int)pid;
	assert_int_equal(hwt_coll_target_attach(t, &gone, 1), -ESRCH);
	{
		char want[128];

		snprintf(
		    want, sizeof(want),
		    "no process with PID %d (it exited or never existed); check the PID with 'ps'",
		    gone);
		assert_string_equal(msg, want);
	}
	gone = 0;
	assert_int_equal(hwt_coll_target_attach(t, &gone, 1), -HWT_EINVAL);
	hwt_coll_target_free(t);
}

static void test_sigint_ends_attach(void **state)
{
	struct hwt_coll_target *t = new_target(NULL);
	pid_t pid = fork(), killer;

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0) {
		execlp("sleep", "sleep", "5", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(hwt_coll_target_attach(t, &pid, 1), 0);
	assert_int_equal(hwt_coll_target_start(t), 0);
	killer = fork();
	if (killer == 0) {
		usleep(50000);
		kill(getppid(), SIGINT);
		_exit(0);
	}
	assert_int_equal(hwt_coll_target_wait(t, 5000), HWT_COLL_WAIT_INTERRUPTED);
	assert_true(hwt_coll_target_interrupted(t));
	hwt_coll_target_free(t);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	waitpid(killer, NULL, 0);
}

static void test_sigterm_forwarded(void **state)
{
	struct hwt_coll_target *t = new_target(NULL);
	char *argv[] = {"sleep", "5", NULL};
	pid_t killer;

	(void)state;
	assert_int_equal(hwt_coll_target_launch(t, argv), 0);
	assert_int_equal(hwt_coll_target_start(t), 0);
	killer = fork();
	if (killer == 0) {
		usleep(50000);
		kill(getppid(), SIGTERM);
		_exit(0);
	}
	/* forwarded to sleep, which dies of it; we report its status */
	assert_int_equal(hwt_coll_target_wait(t, 5000), HWT_COLL_WAIT_EXITED);
	assert_int_equal(hwt_coll_target_exit_status(t), 128 + SIGTERM);
	assert_true(hwt_coll_target_interrupted(t));
	hwt_coll_target_free(t);
	waitpid(killer, NULL, 0);
}

static void test_cpu_lists(void **state)
{
	int *cpus;
	char *dir, p[4096];
	struct hwt_coll_target *t;
	const int *tc;

	(void)state;
	assert_int_equal(hwt_coll_cpu_list_parse("0-3,8,10-11\n", &cpus), 7);
	assert_int_equal(cpus[4], 8);
	assert_int_equal(cpus[6], 11);
	free(cpus);
	assert_int_equal(hwt_coll_cpu_list_parse("5,1-2,2", &cpus), 3);
	assert_int_equal(cpus[0], 1);
	free(cpus);
	assert_int_equal(hwt_coll_cpu_list_parse("", &cpus), -HWT_EPARSE);
	assert_int_equal(hwt_coll_cpu_list_parse("3-1", &cpus), -HWT_EPARSE);
	assert_int_equal(hwt_coll_cpu_list_parse("1,x", &cpus), -HWT_EPARSE);
	/* the real machine */
	t = new_target(NULL);
	assert_int_equal(hwt_coll_target_system(t), 0);
	assert_int_equal(hwt_coll_target_cpus(t, &tc), (size_t)sysconf(_SC_NPROCESSORS_ONLN));
	assert_true(hwt_coll_target_is_system(t));
	hwt_coll_target_free(t);
	/* a large machine from a fake sysfs */
	dir = hwt_test_tmpdir();
	snprintf(p, sizeof(p), "%s/devices", dir);
	mkdir(p, 0755);
	strcat(p, "/system");
	mkdir(p, 0755);
	strcat(p, "/cpu");
	mkdir(p, 0755);
	strcat(p, "/online");
	hwt_test_write_file(p, "0-255\n", 6);
	t = new_target(dir);
	assert_int_equal(hwt_coll_target_system(t), 0);
	assert_int_equal(hwt_coll_target_cpus(t, &tc), 256);
	assert_int_equal(tc[255], 255);
	hwt_coll_target_free(t);
	hwt_test_write_file(p, "garbage\n", 8);
	t = new_target(dir);
	assert_int_equal(hwt_coll_target_system(t), -HWT_EFORMAT);
	hwt_coll_target_free(t);
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_launch_held_until_start),
	    cmocka_unit_test(test_exit_status),
	    cmocka_unit_test(test_not_found),
	    cmocka_unit_test(test_never_started_runs_nothing),
	    cmocka_unit_test(test_attach_threads),
	    cmocka_unit_test(test_sigint_ends_attach),
	    cmocka_unit_test(test_sigterm_forwarded),
	    cmocka_unit_test(test_cpu_lists),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
