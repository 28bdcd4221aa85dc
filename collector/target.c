/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/target.c - what a session observes: a command we launch and
 * hold before exec, processes attached by PID, or all online CPUs; and the
 * wait for its end, with SIGINT/SIGTERM/SIGHUP forwarding and exit status.
 *
 * Launch protocol: the child blocks reading a "go" pipe; a second pipe,
 * close-on-exec, carries back an exec errno. The parent opens its counters
 * (enable_on_exec) while the child waits, then writes "go": EOF on the
 * error pipe means exec succeeded. If the parent gives up, closing "go"
 * makes the child exit without running anything.
 *
 * Waiting uses a signalfd for SIGINT/SIGTERM/SIGHUP/SIGCHLD (blocked while the
 * target runs, so no handler and no race) and pidfds for attached
 * processes, all in one poll().
 */
#include "collector/collector.h"

#include "perfsys/perfsys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

struct hwt_coll_target {
	struct hwt_coll_target_config cfg;
	int *tids;
	size_t ntids;
	int *cpus;
	size_t ncpus;
	bool system;
	/* attached processes (not children): pidfds, -1 once gone */
	int *pids;
	int *pidfds;
	size_t npids;
	/* launched child */
	pid_t child;
	int go_fd;  /* write end of the "go" pipe, -1 once released */
	int err_fd; /* read end of the exec-error pipe */
	char *cmd;  /* the command's name, for messages */
	char *path; /* ... its resolved path */
	bool started, exited, interrupted;
	int status; /* shell-style once exited */
	struct rusage ru;
	/* signals */
	int sig_fd;
	sigset_t old_mask;
	bool mask_set;
};

void hwt_coll_target_config_init(struct hwt_coll_target_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
}

static int fail(struct hwt_coll_target *t, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct hwt_coll_target *t, int err, const char *fmt, ...)
{
	va_list ap;

	if (t->cfg.errmsg && t->cfg.errmsg_len) {
		va_start(ap, fmt);
		vsnprintf(t->cfg.errmsg, t->cfg.errmsg_len, fmt, ap);
		va_end(ap);
	}
	return err;
}

int hwt_coll_target_alloc(struct hwt_coll_target **out, const struct hwt_coll_target_config *cfg)
{
	struct hwt_coll_target *t;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	hwt_coll_target_config_init(&t->cfg);
	if (cfg && hwt_opts_copy(&t->cfg, sizeof(t->cfg), cfg) < 0) {
		free(t);
		return -HWT_EINVAL;
	}
	if (t->cfg.errmsg && t->cfg.errmsg_len)
		t->cfg.errmsg[0] = '\0';
	t->child = -1;
	t->go_fd = -1;
	t->err_fd = -1;
	t->sig_fd = -1;
	t->status = -1;
	*out = t;
	return 0;
}

static void reap(struct hwt_coll_target *t, int options)
{
	int st;
	pid_t r;

	if (t->child <= 0 || t->exited)
		return;
	do {
		r = wait4(t->child, &st, options, &t->ru);
	} while (r < 0 && errno == EINTR);
	if (r != t->child)
		return;
	t->exited = true;
	if (WIFEXITED(st))
		t->status = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		t->status = 128 + WTERMSIG(st);
	else
		t->status = 255;
}

void hwt_coll_target_free(struct hwt_coll_target *t)
{
	if (!t)
		return;
	if (t->go_fd >= 0) {
		/* Never released: closing "go" makes it exit without exec. */
		close(t->go_fd);
		reap(t, 0);
	}
	if (t->err_fd >= 0)
		close(t->err_fd);
	for (size_t i = 0; i < t->npids; i++) {
		if (t->pidfds && t->pidfds[i] >= 0)
			close(t->pidfds[i]);
	}
	if (t->sig_fd >= 0)
		close(t->sig_fd);
	if (t->mask_set) {
		/* Drop what arrived for us while blocked (SIGCHLD of the child
		 * we reaped), then restore the caller's mask. */
		sigset_t set;
		struct timespec zero = {0, 0};

		sigemptyset(&set);
		sigaddset(&set, SIGCHLD);
		while (sigtimedwait(&set, NULL, &zero) > 0)
			;
		pthread_sigmask(SIG_SETMASK, &t->old_mask, NULL);
	}
	free(t->tids);
	free(t->cpus);
	free(t->pids);
	free(t->pidfds);
	free(t->cmd);
	free(t->path);
	free(t);
}

static int resolve(const char *cmd, char *out, size_t len);

int hwt_coll_command_find(const char *cmd, char *out, size_t len, char *errmsg, size_t errlen)
{
	int err = resolve(cmd, out, len);

	/* The words of every command that runs a program (record, record
	 * --pt=emulate, stat, trace). */
	if (err == -ENOENT && errmsg && errlen)
		snprintf(errmsg, errlen, "command '%s' not found; check its name, or PATH", cmd);
	else if (err < 0 && errmsg && errlen)
		snprintf(errmsg, errlen,
			 "cannot run '%s': it is not an executable file (check its permissions, "
			 "e.g. chmod +x)",
			 cmd);
	return err;
}

/* A shell's PATH search: returns 0 with the path, or -ENOENT / -EACCES. */
static int resolve(const char *cmd, char *out, size_t len)
{
	const char *path, *p;
	struct stat st;
	int saw_eacces = 0;

	if (strchr(cmd, '/')) {
		if (stat(cmd, &st) != 0)
			return -errno == -ENOTDIR ? -ENOENT : -errno;
		if (S_ISDIR(st.st_mode) || access(cmd, X_OK) != 0)
			return -EACCES;
		snprintf(out, len, "%s", cmd);
		return 0;
	}
	path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p++) {
		const char *colon = strchr(p, ':');
		size_t dl = colon ? (size_t)(colon - p) : strlen(p);
		int n;

		/* An empty PATH element means the current directory. */
		n = snprintf(out, len, "%.*s%s%s", (int)dl, dl ? p : ".", "/", cmd);
		if (n > 0 && (size_t)n < len && stat(out, &st) == 0 && !S_ISDIR(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			saw_eacces = 1;
		}
		if (!colon)
			break;
		p = colon;
	}
	return saw_eacces ? -EACCES : -ENOENT;
}

/* The go message: 'g' (run the command), or 'w' and the NUL-terminated
 * words to run it under (at most MAX_PREFIX, in one atomic pipe write). */
#define MAX_PREFIX   16
#define PREFIX_BYTES 4096

int hwt_coll_target_launch(struct hwt_coll_target *t, char *const argv[])
{
	char path[4096];
	char **wrapped;
	size_t argc;
	int go[2], errp[2], err;
	pid_t pid;

	if (!t || !argv || !argv[0] || !argv[0][0] || t->child > 0)
		return -HWT_EINVAL;
	{
		char msg[512];

		err = hwt_coll_command_find(argv[0], path, sizeof(path), msg, sizeof(msg));
		if (err < 0)
			return fail(t, err, "%s", msg);
	}
	/* Room for the words a simulated machine may run the command under
	 * (allocated now: the child may not allocate before exec). */
	for (argc = 0; argv[argc]; argc++)
		;
	wrapped = calloc(argc + MAX_PREFIX + 2, sizeof(*wrapped));
	if (!wrapped)
		return -ENOMEM;
	if (pipe2(go, O_CLOEXEC) < 0) {
		free(wrapped);
		return fail(t, -errno, "cannot create a pipe: %s", strerror(errno));
	}
	if (pipe2(errp, O_CLOEXEC) < 0) {
		err = -errno;
		close(go[0]);
		close(go[1]);
		free(wrapped);
		return fail(t, err, "cannot create a pipe: %s", strerror(-err));
	}
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(go[0]);
		close(go[1]);
		close(errp[0]);
		close(errp[1]);
		free(wrapped);
		return fail(t, err, "cannot fork: %s", strerror(-err));
	}
	if (pid == 0) {
		sigset_t none;
		char go_msg[PREFIX_BYTES];
		ssize_t n;
		int e;

		/* Child: only async-signal-safe calls from here to exec. */
		close(go[1]);
		close(errp[0]);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		do {
			n = read(go[0], go_msg, sizeof(go_msg));
		} while (n < 0 && errno == EINTR);
		if (n < 1)
			_exit(127); /* the parent gave up: run nothing */
		if (go_msg[0] == 'w' && go_msg[n - 1] == '\0') {
			/* Run under what the machine asked for: its words, then
			 * the command's path and arguments. */
			size_t k = 0;

			for (ssize_t i = 1; i < n && k < MAX_PREFIX;
			     i += (ssize_t)strlen(go_msg + i) + 1)
				wrapped[k++] = go_msg + i;
			wrapped[k++] = path;
			for (size_t i = 1; argv[i]; i++)
				wrapped[k++] = argv[i];
			wrapped[k] = NULL;
			execv(wrapped[0], wrapped);
		} else {
			execv(path, argv);
		}
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(e == ENOENT ? 127 : 126);
	}
	free(wrapped); /* the child's copy is the one used */
	close(go[0]);
	close(errp[1]);
	t->child = pid;
	t->go_fd = go[1];
	free(t->cmd);
	t->cmd = strdup(argv[0]);
	free(t->path);
	t->path = strdup(path);
	t->err_fd = errp[0];
	free(t->tids);
	t->tids = malloc(sizeof(int));
	if (!t->tids)
		return -ENOMEM; /* the child is released and reaped by free */
	t->tids[0] = pid;
	t->ntids = 1;
	hwt_log(&t->cfg.logger, HWT_LOG_DEBUG, "launched %s as pid %d (held before exec)", path,
		(int)pid);
	return 0;
}

static int tid_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static int add_tid(struct hwt_coll_target *t, int tid, size_t *cap)
{
	if (t->ntids == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		int *n = realloc(t->tids, nc * sizeof(int));

		if (!n)
			return -ENOMEM;
		t->tids = n;
		*cap = nc;
	}
	t->tids[t->ntids++] = tid;
	return 0;
}

int hwt_coll_target_attach(struct hwt_coll_target *t, const int *pids, size_t npids)
{
	const char *proc = t && t->cfg.proc_root ? t->cfg.proc_root : "/proc";
	size_t cap = t ? t->ntids : 0;
	char path[4096];

	if (!t || !pids || !npids)
		return -HWT_EINVAL;
	{
		int *np = realloc(t->pids, (t->npids + npids) * sizeof(int)), *nf;

		if (!np)
			return -ENOMEM;
		t->pids = np;
		nf = realloc(t->pidfds, (t->npids + npids) * sizeof(int));
		if (!nf)
			return -ENOMEM;
		t->pidfds = nf;
	}
	for (size_t i = 0; i < npids; i++) {
		struct dirent *de;
		DIR *d;
		size_t before = t->ntids;

		if (pids[i] <= 0)
			return fail(t, -HWT_EINVAL, "invalid PID %d", pids[i]);
		snprintf(path, sizeof(path), "%s/%d/task", proc, pids[i]);
		d = opendir(path);
		if (!d && (errno == ENOENT || errno == ENOTDIR))
			return fail(t, -ESRCH,
				    "no process with PID %d (it exited or never existed); check "
				    "the PID with 'ps'",
				    pids[i]);
		if (!d)
			return fail(t, -errno, "cannot read %s: %s", path, strerror(errno));
		while ((de = readdir(d))) {
			char *end;
			long tid = strtol(de->d_name, &end, 10);

			if (de->d_name[0] == '.' || *end || tid <= 0)
				continue;
			if (add_tid(t, (int)tid, &cap) < 0) {
				closedir(d);
				return -ENOMEM;
			}
		}
		closedir(d);
		if (t->ntids == before)
			return fail(t, -ESRCH, "process %d has no threads left (it is exiting)",
				    pids[i]);
		qsort(t->tids + before, t->ntids - before, sizeof(int), tid_cmp);
		t->pids[t->npids] = pids[i];
		/* A pidfd tells us when it exits; without one we poll. */
		t->pidfds[t->npids] = (int)syscall(SYS_pidfd_open, pids[i], 0);
		t->npids++;
	}
	return 0;
}

int hwt_coll_cpu_list_parse(const char *s, int **cpus)
{
	int *v = NULL;
	size_t n = 0, cap = 0;
	const char *p = s;

	*cpus = NULL;
	if (!s)
		return -HWT_EPARSE;
	while (*p && *p != '\n') {
		char *end;
		long lo, hi;

		lo = strtol(p, &end, 10);
		if (end == p || lo < 0 || lo > 65535)
			goto parse_error;
		hi = lo;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			if (end == p + 1 || hi < lo || hi > 65535)
				goto parse_error;
			p = end;
		}
		for (long c = lo; c <= hi; c++) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 16;
				int *nv = realloc(v, nc * sizeof(int));

				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
				cap = nc;
			}
			v[n++] = (int)c;
		}
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			goto parse_error;
	}
	if (!n)
		goto parse_error;
	qsort(v, n, sizeof(int), tid_cmp);
	{
		size_t w = 1;

		for (size_t r = 1; r < n; r++) {
			if (v[r] != v[w - 1])
				v[w++] = v[r];
		}
		n = w;
	}
	*cpus = v;
	return (int)n;
parse_error:
	free(v);
	return -HWT_EPARSE;
}

int hwt_coll_target_system(struct hwt_coll_target *t)
{
	const char *root = t && t->cfg.sysfs_root ? t->cfg.sysfs_root : "/sys";
	char path[4096], buf[4096];
	ssize_t n;
	int fd, cnt, *cpus;

	if (!t)
		return -HWT_EINVAL;
	snprintf(path, sizeof(path), "%s/devices/system/cpu/online", root);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(t, -errno, "cannot read the online CPUs from %s: %s", path,
			    strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return fail(t, -HWT_EFORMAT, "%s is empty", path);
	buf[n] = '\0';
	cnt = hwt_coll_cpu_list_parse(buf, &cpus);
	if (cnt < 0)
		return fail(t, cnt == -ENOMEM ? cnt : -HWT_EFORMAT, "cannot parse %s: '%s'", path,
			    buf);
	free(t->cpus);
	t->cpus = cpus;
	t->ncpus = (size_t)cnt;
	t->system = true;
	return 0;
}

size_t hwt_coll_target_threads(const struct hwt_coll_target *t, const int **tids)
{
	*tids = t ? t->tids : NULL;
	return t ? t->ntids : 0;
}

size_t hwt_coll_target_cpus(const struct hwt_coll_target *t, const int **cpus)
{
	*cpus = t ? t->cpus : NULL;
	return t ? t->ncpus : 0;
}

int hwt_coll_target_child(const struct hwt_coll_target *t)
{
	return t && t->child > 0 ? (int)t->child : -1;
}

bool hwt_coll_target_is_system(const struct hwt_coll_target *t)
{
	return t && t->system;
}

int hwt_coll_target_start(struct hwt_coll_target *t)
{
	sigset_t set;
	int e = 0;
	ssize_t n;

	if (!t || t->started)
		return -HWT_EINVAL;
	t->started = true;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	if (pthread_sigmask(SIG_BLOCK, &set, &t->old_mask) == 0)
		t->mask_set = true;
	t->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (t->child <= 0)
		return 0;
	{
		const char *prefix[MAX_PREFIX];
		char msg[PREFIX_BYTES];
		size_t len = 1;
		int np = hwt_psys_exec_prefix(t->cfg.psys, t->child, t->path ? t->path : "", prefix,
					      MAX_PREFIX);

		msg[0] = np > 0 ? 'w' : 'g';
		for (int i = 0; i < np; i++) {
			size_t l = strlen(prefix[i]) + 1;

			if (len + l > sizeof(msg)) {
				np = -E2BIG;
				break;
			}
			memcpy(msg + len, prefix[i], l);
			len += l;
		}
		if (np < 0) {
			close(t->go_fd);
			t->go_fd = -1;
			reap(t, 0);
			return fail(t, np, "cannot run '%s' on this machine: %s",
				    t->cmd ? t->cmd : "the command", strerror(-np));
		}
		n = write(t->go_fd, msg, len);
	}
	if (n < 1) {
		e = errno;
		close(t->go_fd);
		t->go_fd = -1;
		reap(t, 0);
		return fail(t, -e, "cannot release the command: %s", strerror(e));
	}
	close(t->go_fd);
	t->go_fd = -1;
	do {
		n = read(t->err_fd, &e, sizeof(e));
	} while (n < 0 && errno == EINTR);
	close(t->err_fd);
	t->err_fd = -1;
	if (n == (ssize_t)sizeof(e)) {
		reap(t, 0);
		if (e == ENOEXEC)
			return fail(t, -e,
				    "cannot execute '%s': it is not a program this machine "
				    "can run (%s)",
				    t->cmd ? t->cmd : "the command", strerror(e));
		return fail(t, -e, "cannot execute '%s': %s", t->cmd ? t->cmd : "the command",
			    strerror(e));
	}
	return 0;
}

static bool attached_alive(struct hwt_coll_target *t)
{
	bool any = false;

	for (size_t i = 0; i < t->npids; i++) {
		if (t->pidfds[i] >= 0) {
			struct pollfd p = {t->pidfds[i], POLLIN, 0};

			if (poll(&p, 1, 0) == 1) {
				close(t->pidfds[i]);
				t->pidfds[i] = -1;
				t->pids[i] = -1;
				continue;
			}
			any = true;
		} else if (t->pids[i] > 0) {
			if (kill(t->pids[i], 0) < 0 && errno == ESRCH) {
				t->pids[i] = -1;
				continue;
			}
			any = true;
		}
	}
	return any;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int hwt_coll_target_wait(struct hwt_coll_target *t, int timeout_ms)
{
	int64_t deadline;
	bool polled = false;

	if (!t || !t->started)
		return -HWT_EINVAL;
	deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
	for (;;) {
		struct pollfd pfd[1 + 256];
		nfds_t nfd = 0;
		int left = -1, r;
		bool poll_pids = false;

		/* What ends the wait: our command when there is one, else
		 * the attached processes; system-wide alone runs until a
		 * signal. */
		if (t->child > 0) {
			reap(t, WNOHANG);
			if (t->exited)
				return HWT_COLL_WAIT_EXITED;
		} else if (t->npids) {
			if (!attached_alive(t))
				return HWT_COLL_WAIT_EXITED;
			poll_pids = true;
		}
		if (t->sig_fd >= 0) {
			pfd[nfd].fd = t->sig_fd;
			pfd[nfd].events = POLLIN;
			nfd++;
		}
		if (poll_pids) {
			for (size_t i = 0; i < t->npids && nfd < HWT_ARRAY_SIZE(pfd); i++) {
				if (t->pidfds[i] >= 0) {
					pfd[nfd].fd = t->pidfds[i];
					pfd[nfd].events = POLLIN;
					nfd++;
				}
			}
		}
		if (deadline >= 0) {
			int64_t d = deadline - now_ms();

			/* Past the deadline, still look once (poll with 0): a
			 * caller that polls with timeout 0 must see signals. */
			if (d <= 0 && polled)
				return HWT_COLL_WAIT_TIMEOUT;
			left = d <= 0 ? 0 : (int)(d > 1000000 ? 1000000 : d);
		}
		/* Without pidfds (old kernels) or signalfd, look again soon. */
		if ((poll_pids && nfd < 2) || t->sig_fd < 0)
			left = left < 0 || left > 100 ? 100 : left;
		r = poll(pfd, nfd, left);
		polled = true;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (t->sig_fd >= 0) {
			struct signalfd_siginfo si;

			while (read(t->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGCHLD)
					continue; /* SIGCHLD: the loop reaps */
				t->interrupted = true;
				if (t->child > 0 && !t->exited) {
					/* A terminal's ^C reached the whole process
					 * group already; forward only what was sent
					 * to us alone. */
					if (si.ssi_code == SI_USER || si.ssi_code == SI_QUEUE)
						kill(t->child, (int)si.ssi_signo);
					continue;
				}
				return HWT_COLL_WAIT_INTERRUPTED;
			}
		}
	}
}

int hwt_coll_target_exit_status(const struct hwt_coll_target *t)
{
	return t && t->exited ? t->status : -1;
}

void hwt_coll_target_rusage(const struct hwt_coll_target *t, double *user_s, double *sys_s)
{
	*user_s = 0;
	*sys_s = 0;
	if (!t || !t->exited)
		return;
	*user_s = (double)t->ru.ru_utime.tv_sec + (double)t->ru.ru_utime.tv_usec / 1e6;
	*sys_s = (double)t->ru.ru_stime.tv_sec + (double)t->ru.ru_stime.tv_usec / 1e6;
}

bool hwt_coll_target_interrupted(const struct hwt_coll_target *t)
{
	return t && t->interrupted;
}

size_t hwt_coll_target_pollfds(const struct hwt_coll_target *t, int *fds, size_t max)
{
	size_t n = 0;

	if (!t)
		return 0;
	if (t->sig_fd >= 0 && n < max)
		fds[n++] = t->sig_fd;
	for (size_t i = 0; i < t->npids && n < max; i++) {
		if (t->pidfds[i] >= 0)
			fds[n++] = t->pidfds[i];
	}
	return n;
}
