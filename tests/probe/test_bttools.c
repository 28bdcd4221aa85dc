/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tests/probe/test_bttools.c - bpftrace's own tools (Debian's bpftrace
 * package, /usr/sbin/ *.bt) as a test suite for `hwtrace trace`: every
 * tool is checked with -n as it ships (its #! line, #include lines and
 * all), a DTrace script's "#!/usr/sbin/dtrace -s" line is accepted, and
 * tools whose probes exist here run side by side with bpftrace on one
 * workload (tests/progs/bt_work.c; bt_work2.c, openssl and an interactive
 * bash for a second set) and print the same lines about it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/hwt.h"
#include "tests/lib/testutil.h"

#define TOOLS "/usr/sbin/*.bt"

/* Every tool Debian ships parses and checks (-n) as it is. */
static void test_every_tool_checks(void **state)
{
	glob_t g;
	size_t ok = 0;

	(void)state;
	if (glob(TOOLS, 0, NULL, &g)) {
		hwt_test_skip("no bpftrace tools in /usr/sbin (install Debian's bpftrace)");
		return;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct hwt_test_run r;

		hwt_test_run(&r, "%s trace -n -f %s", hwt_test_hwtrace(), g.gl_pathv[i]);
		if (r.status != 0 || !r.out[0]) {
			fprintf(stderr, "%s: exit %d\n%s%s\n", g.gl_pathv[i], r.status, r.out,
				r.err);
			fail();
		}
		/* a kernel without what a tool reads is said, as a warning */
		if (r.err[0])
			fprintf(stderr, "%s: %s", g.gl_pathv[i], r.err);
		ok++;
		hwt_test_run_free(&r);
	}
	fprintf(stderr, "%zu bpftrace tools checked\n", ok);
	/* Debian 12's bpftrace 0.17 ships 38 */
	assert_true(ok >= 38);
	globfree(&g);
}

/* A DTrace script's first line. */
static void test_dtrace_interpreter_line(void **state)
{
	char *dir = hwt_test_tmpdir(), path[512];
	static const char script[] = "#!/usr/sbin/dtrace -s\n"
				     "/* a D script */\n"
				     "syscalls:sys_enter_write /pid == $target/\n"
				     "{\n\t@[execname] = count();\n}\n";
	struct hwt_test_run r;

	(void)state;
	snprintf(path, sizeof(path), "%s/w.d", dir);
	hwt_test_write_file(path, script, sizeof(script) - 1);
	hwt_test_run(&r, "%s trace -n -f %s", hwt_test_hwtrace(), path);
	if (r.status && hwt_test_contains(r.err, "tracefs")) {
		hwt_test_run_free(&r);
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("no tracefs here");
		return;
	}
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "syscalls:sys_enter_write\n");
	hwt_test_run_free(&r);
	hwt_test_tmpdir_remove(dir);
}

/* A tool running: its pid and its stdout. */
struct tool {
	const char *name;
	int time_cols;	  /* leading characters of a time() to strip */
	bool by_comm;	  /* its lines name the workload's command, not a path */
	bool strip_field; /* strip the first field (elapsed ms) */
	bool dedup;	  /* bpftrace 0.17 repeats a join() line once per
			   * argument; hwtrace prints it once */
	pid_t pid[2];	  /* bpftrace, hwtrace */
	char out[2][512];
};

/* Runs cmd with stdout to out and stderr to out.err. */
static pid_t spawn(const char *cmd, const char *out)
{
	pid_t p = fork();

	if (p == 0) {
		char err[600];
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), efd;

		snprintf(err, sizeof(err), "%s.err", out);
		efd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || efd < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(efd, 2);
		setpgid(0, 0);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return p;
}

/* The n lines of v (len bytes with their newlines and the final NUL)
 * sorted, one a line, repeats left out when dedup (the caller frees the
 * result; v is sorted in place). */
static char *sorted_lines(char **v, size_t n, size_t len, bool dedup)
{
	char *res;

	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
			char *x = v[j];

			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	res = calloc(1, len);
	for (size_t i = 0; i < n; i++) {
		if (dedup && i && !strcmp(v[i], v[i - 1]))
			continue;
		strcat(res, v[i]);
		strcat(res, "\n");
	}
	return res;
}

/* The lines of a tool's output about the workload (holding marker),
 * normalized (time columns cut), sorted, one string. */
static char *lines_about(const char *path, const char *marker, const struct tool *t)
{
	char *text = hwt_test_read_file(path, NULL), *save = NULL, **v = NULL, *res;
	size_t n = 0, len = 1;

	if (!text)
		return strdup("");
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!strstr(l, marker))
			continue;
		if ((int)strlen(l) >= t->time_cols)
			l += t->time_cols;
		if (t->strip_field) {
			l += strspn(l, " ");
			l += strcspn(l, " ");
			l += strspn(l, " ");
		}
		v = realloc(v, (n + 1) * sizeof(*v));
		v[n++] = l;
		len += strlen(l) + 1;
	}
	res = sorted_lines(v, n, len, t->dedup);
	free(v);
	free(text);
	return res;
}

/* The file holds n lines or more. */
static bool has_lines(const char *path, size_t n)
{
	char *text = hwt_test_read_file(path, NULL);
	size_t k = 0;

	for (const char *c = text; c && *c; c++)
		k += *c == '\n';
	free(text);
	return k >= n;
}

/* Ctrl-C to every tool (pids, n of them; 0: none), again each second
 * while one runs: bpftrace 0.17 misses a SIGINT that comes as it enters
 * epoll_wait, and then waits for its next event. Returns true when all
 * stopped within 60 s (the ASan build of hwtrace takes 7 s to detach
 * sslsnoop's uprobes alone, longer beside 20 other tracers); the others
 * are killed. */
static bool stop_tools(pid_t *pids, size_t n)
{
	bool running = true;
	int st;

	for (int round = 0; round < 600 && running; round++) {
		running = false;
		for (size_t i = 0; i < n; i++) {
			if (pids[i] <= 0)
				continue;
			if (waitpid(pids[i], &st, WNOHANG) == pids[i]) {
				pids[i] = 0;
				continue;
			}
			running = true;
			if (round % 10 == 0)
				kill(-pids[i], SIGINT);
		}
		if (running)
			usleep(100000);
	}
	for (size_t i = 0; i < n; i++)
		if (pids[i] > 0) {
			kill(-pids[i], SIGKILL);
			waitpid(pids[i], &st, 0);
		}
	return !running;
}

/* Fails the test after printing what bpftrace and hwtrace printed (their
 * output files) for tool name. */
static void fail_differs(const char *name, const char *bpftrace_out, const char *hwtrace_out)
{
	char *bt = hwt_test_read_file(bpftrace_out, NULL),
	     *ht = hwt_test_read_file(hwtrace_out, NULL);

	fprintf(stderr, "%s differs\nbpftrace:\n%s\nhwtrace:\n%s\n", name, bt ? bt : "",
		ht ? ht : "");
	free(bt);
	free(ht);
	fail();
}

/* Tools whose probes exist here, on one workload, beside bpftrace: the
 * lines about the workload are the same. */
static void test_tools_print_what_bpftrace_prints(void **state)
{
	struct tool tools[] = {
	    {.name = "opensnoop"},
	    {.name = "statsnoop"},
	    {.name = "killsnoop", .time_cols = 10, .by_comm = true},
	    {.name = "naptime", .time_cols = 9, .by_comm = true},
	    {.name = "setuids", .time_cols = 9, .by_comm = true},
	    {.name = "execsnoop", .strip_field = true, .dedup = true},
	    {.name = "syncsnoop", .time_cols = 10, .by_comm = true},
	};
	char *dir, marker[64], cmd[1024], work[1024];
	struct timespec t0;

	(void)state;
	if (geteuid() != 0 || access("/usr/bin/bpftrace", X_OK) ||
	    access("/usr/sbin/opensnoop.bt", R_OK)) {
		hwt_test_skip("needs root, bpftrace and its tools (Debian's bpftrace)");
		return;
	}
	dir = hwt_test_tmpdir();
	snprintf(marker, sizeof(marker), "bt_work_%d", (int)getpid());
	/* the workload first: a failure after the tools start leaves them
	 * running */
	snprintf(work, sizeof(work), "%s %s", hwt_test_prog("bt_work"), marker);
	for (size_t i = 0; i < HWT_ARRAY_SIZE(tools); i++) {
		struct tool *t = &tools[i];

		for (int k = 0; k < 2; k++) {
			snprintf(t->out[k], sizeof(t->out[k]), "%s/%s.%s", dir, t->name,
				 k ? "hwtrace" : "bpftrace");
			if (k)
				snprintf(cmd, sizeof(cmd), "exec %s trace -f /usr/sbin/%s.bt",
					 hwt_test_hwtrace(), t->name);
			else
				snprintf(cmd, sizeof(cmd), "exec bpftrace /usr/sbin/%s.bt",
					 t->name);
			t->pid[k] = spawn(cmd, t->out[k]);
			assert_true(t->pid[k] > 0);
		}
	}
	/* every tool prints its header from BEGIN once its probes are in
	 * (bpftrace after its "Attaching N probes..." line) */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timespec now;
		bool all = true;

		for (size_t i = 0; i < HWT_ARRAY_SIZE(tools); i++)
			for (int k = 0; k < 2; k++)
				all = all && has_lines(tools[i].out[k], k ? 1 : 2);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (all || now.tv_sec - t0.tv_sec > 60)
			break;
		usleep(100000);
	}
	usleep(300000);
	assert_int_equal(system(work), 0);
	usleep(1000000); /* bpftrace prints what its ring buffer holds */
	{
		pid_t pids[2 * HWT_ARRAY_SIZE(tools)];

		for (size_t i = 0; i < HWT_ARRAY_SIZE(tools); i++)
			for (int k = 0; k < 2; k++)
				pids[2 * i + (size_t)k] = tools[i].pid[k];
		assert_true(stop_tools(pids, HWT_ARRAY_SIZE(pids)));
	}
	for (size_t i = 0; i < HWT_ARRAY_SIZE(tools); i++) {
		const struct tool *t = &tools[i];
		const char *what = t->by_comm ? " bt_work " : marker;
		char *b = lines_about(t->out[0], what, t), *h = lines_about(t->out[1], what, t);

		size_t nl = 0;

		for (const char *c = h; *c; c++)
			nl += *c == '\n';
		fprintf(stderr, "%s: %zu lines about the workload\n", t->name, nl);
		if (!b[0] || strcmp(b, h)) {
			fail_differs(t->name, t->out[0], t->out[1]);
		}
		free(b);
		free(h);
	}
	hwt_test_tmpdir_remove(dir);
}

/* The second set of tools beside bpftrace: how one is compared. */
struct tool2 {
	const char *name;
	const char *marker; /* lines holding it are compared (NULL: shape only) */
	int time_cols;	    /* leading characters of a time() to cut */
	unsigned mask;	    /* fields (bit i: field i after the cut) that time */
	const char *cut;    /* the line is cut where this starts (timing values) */
	bool block;	    /* marker heads a block (a histogram): up to a blank line */
	bool mask_key;	    /* a map's key ("@x[KEY]: ...") is not compared */
	/* run a copy of the tool with from replaced by to (both tools) */
	const char *from, *to;
	/* the structure a tool's output has whatever the timing (NULL: none) */
	bool (*shape)(const char *text, const char *marker);
	const char *skip; /* why this environment cannot run it, or NULL */
	pid_t pid[2];	  /* bpftrace, hwtrace */
	char out[2][512];
};

/* The lines (or blocks) of a tool's output holding its marker, time
 * columns cut and timing fields replaced by "*", sorted, one string. */
static char *normalized(const char *path, const struct tool2 *t)
{
	char *text = hwt_test_read_file(path, NULL), *save = NULL, **v = NULL, *res;
	size_t n = 0, len = 1;
	bool in_block = false;

	if (!text)
		return strdup("");
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char line[512], *f, *fs = NULL;
		size_t ll = 0;
		unsigned k = 0;

		/* strtok_r skips blank lines: a block ends at a new map */
		if (t->block) {
			if (l[0] == '@')
				in_block = strstr(l, t->marker) == l;
			if (!in_block)
				continue;
		} else if (!strstr(l, t->marker)) {
			continue;
		}
		if ((int)strlen(l) >= t->time_cols)
			l += t->time_cols;
		if (t->cut && strstr(l, t->cut))
			*strstr(l, t->cut) = '\0';
		if (t->mask_key && strchr(l, '[') && strchr(l, ']')) {
			char *o = strchr(l, '['), *c = strchr(l, ']');

			memmove(o + 2, c, strlen(c) + 1);
			o[1] = '*';
		}
		line[0] = '\0';
		for (f = strtok_r(l, " ", &fs); f; f = strtok_r(NULL, " ", &fs), k++)
			ll += (size_t)snprintf(line + ll, ll < sizeof(line) ? sizeof(line) - ll : 0,
					       "%s%s", k ? " " : "",
					       k < 32 && (t->mask >> k & 1) ? "*" : f);
		v = realloc(v, (n + 1) * sizeof(*v));
		v[n++] = strdup(line);
		len += strlen(line) + 1;
	}
	res = sorted_lines(v, n, len, false);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	free(text);
	return res;
}

/* pidpersec: "HH:MM:SS PIDs/sec: @: N" a second, the workload's forks
 * in them. */
static bool pidpersec_shape(const char *text, const char *marker)
{
	const char *l = text;
	unsigned long sum = 0;
	size_t n = 0;

	(void)marker;
	while ((l = strstr(l, " PIDs/sec: @: "))) {
		l += strlen(" PIDs/sec: @: ");
		sum += strtoul(l, NULL, 10);
		n++;
	}
	return n >= 1 && sum >= 5;
}

/* cpuwalk: the lhist of CPUs, one bucket [c, c+1) each, c a CPU here. */
static bool cpuwalk_shape(const char *text, const char *marker)
{
	const char *h = strstr(text, "@cpu: \n"), *l;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	size_t n = 0;

	(void)marker;
	if (!h)
		return false;
	for (l = strchr(h, '\n') + 1; *l == '['; l = strchr(l, '\n') + 1) {
		long a, b;

		if (sscanf(l, "[%ld, %ld)", &a, &b) != 2 || b != a + 1 || a < 0 || a >= ncpu)
			return false;
		n++;
		if (!strchr(l, '\n'))
			break;
	}
	return n >= 1;
}

/* syscount: both tables, ten rows each at most. */
static bool syscount_shape(const char *text, const char *marker)
{
	(void)marker;
	return strstr(text, "\nTop 10 syscalls IDs:\n@syscall[") &&
	       strstr(text, "\nTop 10 processes:\n@process[");
}

/* ssllatency: its heading, and a histogram by function. */
static bool ssllatency_shape(const char *text, const char *marker)
{
	(void)marker;
	const char *h = strstr(text, "\n@hist[");

	return strstr(text, "Latency distribution in microsecond:") && h && strchr(h, ']') &&
	       !strncmp(strchr(h, ']'), "]: \n[", 5);
}

/* Starts every tool of tools under bpftrace and hwtrace, waits for their
 * headers, runs workload (a shell command), stops them. */
static void run_beside_bpftrace(struct tool2 *tools, size_t n, const char *dir,
				const char *workload)
{
	struct timespec t0;
	char cmd[1024];
	int st;

	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 2 && !tools[i].skip; k++) {
			struct tool2 *t = &tools[i];

			char script[512];

			snprintf(t->out[k], sizeof(t->out[k]), "%s/%s.%s", dir, t->name,
				 k ? "hwtrace" : "bpftrace");
			snprintf(script, sizeof(script), "/usr/sbin/%s.bt", t->name);
			if (t->from) {
				char *text = hwt_test_read_file(script, NULL), *at;
				struct hwt_buf b;

				assert_non_null(text);
				assert_non_null(at = strstr(text, t->from));
				hwt_buf_init(&b);
				assert_true(hwt_buf_append(&b, text, (size_t)(at - text)) >= 0);
				assert_true(
				    hwt_buf_printf(&b, "%s%s", t->to, at + strlen(t->from)) >= 0);
				snprintf(script, sizeof(script), "%s/%s.bt", dir, t->name);
				hwt_test_write_file(script, (const char *)b.data, b.len);
				hwt_buf_fini(&b);
				free(text);
			}
			if (k)
				snprintf(cmd, sizeof(cmd), "exec %s trace -f %s",
					 hwt_test_hwtrace(), script);
			else
				snprintf(cmd, sizeof(cmd), "exec bpftrace %s", script);
			t->pid[k] = spawn(cmd, t->out[k]);
			assert_true(t->pid[k] > 0);
		}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timespec now;
		bool all = true;

		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < 2 && !tools[i].skip; k++)
				all = all && has_lines(tools[i].out[k], k ? 1 : 2);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (all || now.tv_sec - t0.tv_sec > 90)
			break;
		usleep(100000);
	}
	usleep(300000);
	st = system(workload);
	if (st != 0)
		fprintf(stderr, "the workload failed (%d): %s\n", st, workload);
	assert_int_equal(st, 0);
	/* pidpersec prints a second after; bpftrace prints what its ring
	 * buffer holds */
	usleep(1500000);
	{
		pid_t pids[2 * 16] = {0};

		assert_true(n <= 16);
		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < 2 && !tools[i].skip; k++)
				pids[2 * i + (size_t)k] = tools[i].pid[k];
		if (!stop_tools(pids, 2 * n)) {
			for (size_t i = 0; i < 2 * n; i++)
				if (pids[i] > 0)
					fprintf(stderr, "%s (%s) did not stop on SIGINT\n",
						tools[i / 2].name, i % 2 ? "hwtrace" : "bpftrace");
			fail();
		}
	}
}

/* The tools of the second set whose probes exist here, on workloads that
 * name themselves (bt_work2, openssl, an interactive bash), beside
 * bpftrace: the lines about the workloads are the same, timing fields
 * aside; tools that only time or sample print the same structure. */
static void test_more_tools_print_what_bpftrace_prints(void **state)
{
	char marker[64], echo[80], work[4096], alone[1024];
	struct tool2 tools[] = {
	    /* TIME(ms) PID COMM FUNC; glibc 2.34 moved pthread_create from
	     * libpthread (a stub now) to libc: as it ships, bpftrace attaches
	     * it to nothing and hwtrace says the function is not there.
	     * FUNC: bpftrace 0.17 symbolizes usym() when it prints, after
	     * bt_work2 exited, and prints the address; hwtrace keeps the
	     * mappings and prints bt_work2_thread */
	    {.name = "threadsnoop",
	     .marker = " bt_work2 ",
	     .mask = 1u << 0 | 1u << 3,
	     .from = "uprobe:libpthread:pthread_create",
	     .to = "uprobe:libc:pthread_create"},
	    /* TIME PID COMM LATms HOST */
	    {.name = "gethostlatency", .marker = " bt_work2 ", .time_cols = 10, .mask = 1u << 2},
	    /* @process[bt_work2]: N, its syscalls from exec to exit */
	    {.name = "syscount", .marker = "@process[bt_work2]", .shape = syscount_shape},
	    /* its block requests: the histogram of sizes */
	    {.name = "bitesize", .marker = "@[bt_work2]:", .block = true},
	    /* TIME DEVICE PAGES REASON ms: the writebacks sync() asks */
	    {.name = "writeback", .marker = " sync ", .time_cols = 10, .mask = 1u << 3},
	    {.name = "pidpersec", .shape = pidpersec_shape},
	    {.name = "cpuwalk", .shape = cpuwalk_shape},
	    /* TIME(us) TID COMM LAT(us) RET FUNC: bpftrace 0.17 prints a func
	     * kept in a map as an address after its first hit, so FUNC is
	     * not compared */
	    {.name = "sslsnoop", .marker = " openssl ", .mask = 1u << 0 | 1u << 3 | 1u << 5},
	    /* @stat[FUNC]: count N, average A, total T: the counts (FUNC: an
	     * address in bpftrace 0.17's output, as sslsnoop's) */
	    {.name = "ssllatency",
	     .marker = "@stat",
	     .cut = ", average",
	     .mask_key = true,
	     .shape = ssllatency_shape},
	    /* TIME PID COMMAND */
	    {.name = "bashreadline", .time_cols = 10},
	};
	const size_t n = HWT_ARRAY_SIZE(tools);
	struct tool2 *ssl[2] = {&tools[7], &tools[8]}, *bash = &tools[9];
	char *dir;
	size_t wl;

	(void)state;
	if (geteuid() != 0 || access("/usr/bin/bpftrace", X_OK) ||
	    access("/usr/sbin/threadsnoop.bt", R_OK)) {
		hwt_test_skip("needs root, bpftrace and its tools (Debian's bpftrace)");
		return;
	}
	dir = hwt_test_tmpdir();
	snprintf(marker, sizeof(marker), "bt_work2_%d", (int)getpid());
	snprintf(echo, sizeof(echo), "echo %s", marker);
	bash->marker = echo;
	if (access("/usr/bin/openssl", X_OK))
		ssl[0]->skip = ssl[1]->skip = "no openssl command (Debian's openssl)";
	if (access("/usr/bin/script", X_OK) || access("/bin/bash", X_OK))
		bash->skip = "no script(1) or bash to run an interactive bash (Debian's "
			     "bsdutils, bash)";
	/* bt_work2 writes on the disk of /var/tmp (a block device here) */
	wl = (size_t)snprintf(work, sizeof(work), "%s /var/tmp/%s.io", hwt_test_prog("bt_work2"),
			      marker);
	snprintf(alone, sizeof(alone), "%s", hwt_test_prog("bt_work2"));
	if (!ssl[0]->skip) {
		/* a TLS session of openssl's on localhost, a key made first */
		int port = 20000 + (int)getpid() % 20000;
		char cmd[1024];
		struct hwt_test_run r;

		snprintf(cmd, sizeof(cmd),
			 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
			 "-subj /CN=localhost -days 1 -keyout %s/k.pem -out %s/c.pem",
			 dir, dir);
		hwt_test_run(&r, "%s", cmd);
		assert_int_equal(r.status, 0);
		hwt_test_run_free(&r);
		wl += (size_t)snprintf(
		    work + wl, sizeof(work) - wl,
		    " && { openssl s_server -accept 127.0.0.1:%d -cert %s/c.pem -key %s/k.pem "
		    "-naccept 1 -www -quiet >/dev/null 2>&1 & sleep 0.5; "
		    "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | timeout 10 openssl s_client "
		    "-connect 127.0.0.1:%d -quiet >/dev/null 2>&1; wait; }",
		    port, dir, dir, port);
	}
	if (!bash->skip)
		wl += (size_t)snprintf(work + wl, sizeof(work) - wl,
				       " && printf '%s\\nexit\\n' | timeout 10 script -qc "
				       "'bash --norc --noprofile -i' /dev/null >/dev/null",
				       echo);
	assert_true(wl < sizeof(work));
	run_beside_bpftrace(tools + 1, n - 1, dir, work);
	/* threadsnoop on its own: beside the others, bpftrace's uprobe on
	 * pthread_create once saw nothing after its start while hwtrace's
	 * saw bt_work2's threads (not understood yet; alone it sees every
	 * one) */
	run_beside_bpftrace(tools, 1, dir, alone);
	for (size_t i = 0; i < n; i++) {
		const struct tool2 *t = &tools[i];
		char *b, *h;
		bool ok = true;

		if (t->skip) {
			fprintf(stderr, "%s: not run: %s\n", t->name, t->skip);
			continue;
		}
		b = t->marker ? normalized(t->out[0], t) : strdup("");
		h = t->marker ? normalized(t->out[1], t) : strdup("");
		if (t->marker && (!b[0] || strcmp(b, h)))
			ok = false;
		if (t->shape) {
			char *bt = hwt_test_read_file(t->out[0], NULL),
			     *ht = hwt_test_read_file(t->out[1], NULL);

			ok = ok && bt && ht && t->shape(bt, marker) && t->shape(ht, marker);
			free(bt);
			free(ht);
		}
		fprintf(stderr, "%s: %s\n%s", t->name,
			t->marker ? "the lines about the workload:" : "the structure", h);
		if (!ok) {
			fail_differs(t->name, t->out[0], t->out[1]);
		}
		free(b);
		free(h);
	}
	hwt_test_tmpdir_remove(dir);
}

/* bpftrace's layout of every kind of map, against bpftrace itself on a
 * program whose values are known (probe_work(i, 7) for i = 0..299; no two
 * rows of a map tie: bpftrace orders ties as its hash map iterates). */
static void test_layout_is_bpftrace_s(void **state)
{
	const char *p;
	char *dir, path[512], copy[512], script[2048];
	struct hwt_test_run b, h;
	const char *bo;

	(void)state;
	if (geteuid() != 0 || access("/usr/bin/bpftrace", X_OK)) {
		hwt_test_skip("needs root and bpftrace");
		return;
	}
	dir = hwt_test_tmpdir();
	/* A copy of its own: bpftrace's uprobe fires in every process that
	 * runs the binary (-c does not filter uprobes), and other tests run
	 * probe_calls at the same time under ctest -j. */
	snprintf(copy, sizeof(copy), "%s/probe_calls", dir);
	{
		struct hwt_test_run c;

		hwt_test_run(&c, "cp '%s' '%s'", hwt_test_prog("probe_calls"), copy);
		assert_int_equal(c.status, 0);
		hwt_test_run_free(&c);
	}
	p = copy;
	snprintf(script, sizeof(script),
		 "#!/usr/bin/env bpftrace\n"
		 "BEGIN { printf(\"start\\n\"); @names[1] = \"one\"; @names[2] = \"two\"; }\n"
		 "uprobe:%s:probe_work {\n"
		 "\t@calls = count(); @sum = sum(arg0); @min = min(arg0); @max = max(arg0);\n"
		 "\t@avg = avg(arg0); @stats = stats(arg0); @hist = hist(arg0);\n"
		 "\t@lhist = lhist(arg0, 0, 200, 50); @bykey[arg0 %% 3] = sum(arg0);\n"
		 "\t@last[arg0 %% 4] = arg0; @hk[arg0 %% 3 == 0] = hist(arg0 * 1000);\n"
		 "\tif (arg0 == 17) { delete(@names[2]); }\n"
		 "}\n"
		 "END { print(@bykey, 2); }\n",
		 p);
	snprintf(path, sizeof(path), "%s/layout.bt", dir);
	hwt_test_write_file(path, script, strlen(script));
	hwt_test_run(&b, "bpftrace %s -c '%s 300' 2>/dev/null", path, p);
	hwt_test_run(&h, "%s trace -f %s -- %s 300", hwt_test_hwtrace(), path, p);
	assert_int_equal(h.status, 0);
	if (b.status != 0) {
		hwt_test_run_free(&b);
		hwt_test_run_free(&h);
		hwt_test_tmpdir_remove(dir);
		hwt_test_skip("bpftrace cannot run here");
		return;
	}
	/* bpftrace's "Attaching N probes..." line is its own */
	bo = strstr(b.out, "probe...\n")    ? strstr(b.out, "probe...\n") + 9
	     : strstr(b.out, "probes...\n") ? strstr(b.out, "probes...\n") + 10
					    : b.out;
	if (strcmp(bo, h.out)) {
		fprintf(stderr, "bpftrace:\n%s\nhwtrace:\n%s\n", bo, h.out);
		fail();
	}
	hwt_test_run_free(&b);
	hwt_test_run_free(&h);
	hwt_test_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_tool_checks),
	    cmocka_unit_test(test_dtrace_interpreter_line),
	    cmocka_unit_test(test_tools_print_what_bpftrace_prints),
	    cmocka_unit_test(test_more_tools_print_what_bpftrace_prints),
	    cmocka_unit_test(test_layout_is_bpftrace_s),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
