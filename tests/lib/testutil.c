/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/lib/testutil.c - see testutil.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/lib/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *env_or_fail(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v) {
		fprintf(stderr, "test environment: %s is not set (run through ctest)\n", name);
		fail();
	}
	return v;
}

const char *hwt_test_hwtrace(void)
{
	return env_or_fail("HWTRACE");
}

const char *hwt_test_source_dir(void)
{
	return env_or_fail("HWT_SOURCE_DIR");
}

const char *hwt_test_binary_dir(void)
{
	return env_or_fail("HWT_BINARY_DIR");
}

const char *hwt_test_testdata(void)
{
	return env_or_fail("HWT_TESTDATA");
}

const char *hwt_test_prog(const char *name)
{
	static char paths[16][4096];
	static int next;
	char *p = paths[next++ % 16];

	snprintf(p, 4096, "%s/progs/%s", hwt_test_binary_dir(), name);
	if (access(p, X_OK) != 0) {
		fprintf(stderr, "test program %s is not built\n", p);
		fail();
	}
	return p;
}

static void append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
	if (*len + n + 1 > *cap) {
		*cap = (*len + n + 1) * 2;
		*buf = realloc(*buf, *cap);
		assert_non_null(*buf);
	}
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

void hwt_test_run(struct hwt_test_run *run, const char *fmt, ...)
{
	int outp[2], errp[2], status;
	char cmd[16384];
	va_list ap;
	pid_t pid;
	size_t ocap = 0, ecap = 0;
	struct pollfd pfd[2];

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);

	memset(run, 0, sizeof(*run));
	append(&run->out, &run->out_len, &ocap, "", 0);
	append(&run->err, &run->err_len, &ecap, "", 0);
	assert_int_equal(pipe(outp), 0);
	assert_int_equal(pipe(errp), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		dup2(devnull, 0);
		dup2(outp[1], 1);
		dup2(errp[1], 2);
		close(outp[0]);
		close(errp[0]);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(outp[1]);
	close(errp[1]);
	pfd[0].fd = outp[0];
	pfd[0].events = POLLIN;
	pfd[1].fd = errp[0];
	pfd[1].events = POLLIN;
	while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
		char buf[65536];

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fail();
		}
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(pfd[i].fd, buf, sizeof(buf));
			if (n <= 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				continue;
			}
			if (i == 0)
				append(&run->out, &run->out_len, &ocap, buf, (size_t)n);
			else
				append(&run->err, &run->err_len, &ecap, buf, (size_t)n);
		}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		run->status = WEXITSTATUS(status);
	else
		run->status = 128 + WTERMSIG(status);
}

void hwt_test_run_ok(struct hwt_test_run *run, const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	hwt_test_run(run, "%s", cmd);
	if (run->status != 0) {
		fprintf(stderr, "command failed (%d): %s\nstdout:\n%s\nstderr:\n%s\n", run->status,
			cmd, run->out, run->err);
		fail();
	}
}

void hwt_test_run_free(struct hwt_test_run *run)
{
	free(run->out);
	free(run->err);
	memset(run, 0, sizeof(*run));
}

char *hwt_test_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *dir;

	if (!base || !*base)
		base = "/tmp";
	dir = malloc(strlen(base) + 32);
	assert_non_null(dir);
	sprintf(dir, "%s/hwt-test-XXXXXX", base);
	assert_non_null(mkdtemp(dir));
	return dir;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void hwt_test_tmpdir_remove(char *dir)
{
	if (!dir)
		return;
	if (!getenv("HWT_KEEP_TMP"))
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

/* Cases skipped in this program (cmocka runs them all in one process). */
static unsigned int skipped;

void hwt_test_skip(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "SKIP: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	skipped++;
	skip();
}

int hwt_test_exit_status(int failed)
{
	if (failed)
		return failed;
	if (skipped) {
		fprintf(stderr, "SKIPPED: %u case(s) of this program (reasons above)\n", skipped);
		return HWT_TEST_EXIT_SKIP;
	}
	return 0;
}

bool hwt_test_have_tool(const char *cmd)
{
	char line[512];

	snprintf(line, sizeof(line), "%s >/dev/null 2>&1 </dev/null", cmd);
	return system(line) == 0;
}

bool hwt_test_have_hw_event(uint64_t config)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = config;
	a.disabled = 1;
	a.exclude_kernel = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

bool hwt_test_have_tracefs(void)
{
	struct stat st;

	/* Mounted, or mountable by us (hwtrace mounts it when allowed). */
	if (!stat("/sys/kernel/tracing/events", &st) ||
	    !stat("/sys/kernel/debug/tracing/events", &st))
		return true;
	return geteuid() == 0 && !stat("/sys/kernel/tracing", &st);
}

void hwt_test_need_qemu(void)
{
	if (!hwt_test_have_tool("qemu-x86_64 --version"))
		hwt_test_skip("qemu-x86_64 is not installed (Debian package qemu-user): the PT "
			      "emulator cannot run");
}

bool hwt_test_contains(const char *text, const char *needle)
{
	return text && needle && strstr(text, needle) != NULL;
}

char *hwt_test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t got;

		if (n + 65536 + 1 > cap) {
			cap = (n + 65536 + 1) * 2;
			buf = realloc(buf, cap);
			if (!buf) {
				fclose(f);
				return NULL;
			}
		}
		got = fread(buf + n, 1, 65536, f);
		n += got;
		if (got < 65536)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

void hwt_test_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

uint64_t hwt_test_seed(void)
{
	const char *s = getenv("HWT_SEED");
	uint64_t seed;

	if (s && *s) {
		seed = strtoull(s, NULL, 0);
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed =
		    (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid();
	}
	fprintf(stderr, "seed: HWT_SEED=%llu\n", (unsigned long long)seed);
	return seed ? seed : 1;
}

uint64_t hwt_test_rand(uint64_t *state)
{
	/* xorshift64* */
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}
