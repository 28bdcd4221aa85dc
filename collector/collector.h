/*
 * collector/collector.h - perf_event_open sessions and what they observe.
 * This header is the whole contract of the collector module.
 *
 * Part 1, the target: what to observe. A command launched by us (held
 * before exec so counters can be opened on it with enable_on_exec, then
 * released), running processes attached by PID (all their threads), or the
 * whole system (the online CPUs). The target also waits for the end of the
 * observed work, forwards SIGINT/SIGTERM to a launched command and keeps
 * its exit status, so `stat`, `record` and `trace` share one behaviour.
 *
 * Usage (launch):
 *
 *   struct hwt_coll_target_config cfg;
 *   hwt_coll_target_config_init(&cfg);
 *   cfg.errmsg = msg; cfg.errmsg_len = sizeof(msg);
 *   err = hwt_coll_target_alloc(&t, &cfg);
 *   err = hwt_coll_target_launch(t, argv);   // -ENOENT: command not found
 *   n = hwt_coll_target_threads(t, &tids);     // {child pid}
 *   ... open events on tids with enable_on_exec ...
 *   err = hwt_coll_target_start(t);            // child execs now
 *   while ((r = hwt_coll_target_wait(t, interval_ms)) == HWT_COLL_WAIT_TIMEOUT)
 *           ... per-interval work ...
 *   status = hwt_coll_target_exit_status(t);   // shell style: 0..255
 *   hwt_coll_target_free(t);
 *
 * Attach: hwt_coll_target_attach(t, pids, n) instead of launch (start is
 * then only needed for signal handling); system-wide:
 * hwt_coll_target_system(t), optionally with a command launched as well
 * (`-a -- sleep 1`), whose end then ends the wait.
 */
#ifndef HWT_COLLECTOR_COLLECTOR_H
#define HWT_COLLECTOR_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hwt.h"

/* ------------------------------------------------------------------------ */
/* Targets                                                                  */

struct hwt_coll_target_config {
	size_t size;              /* sizeof(struct hwt_coll_target_config) */
	struct hwt_logger logger;
	const char *sysfs_root;   /* NULL: "/sys" (online CPUs); a test seam */
	const char *proc_root;    /* NULL: "/proc" (threads of a PID); a test seam */
	/* On failure, a one-line explanation with the fix goes here
	 * (optional); the buffer must outlive the target. */
	char *errmsg;
	size_t errmsg_len;
};

/* Zeroes cfg and sets its size. */
HWT_API void hwt_coll_target_config_init(struct hwt_coll_target_config *cfg);

struct hwt_coll_target;

/* Allocates an empty target. cfg (may be NULL) is copied. 0, -ENOMEM,
 * -HWT_EINVAL. */
HWT_API int hwt_coll_target_alloc(struct hwt_coll_target **out,
				  const struct hwt_coll_target_config *cfg);

/* Frees the target. A launched child that was never started is released
 * without exec (it exits at once) and reaped; a running child is left
 * running. Restores the signal mask hwt_coll_target_start() changed. NULL
 * is fine. */
HWT_API void hwt_coll_target_free(struct hwt_coll_target *t);

/* Launches argv (argv[0] looked up in PATH like a shell, argv copied) as a
 * child that waits before exec until hwt_coll_target_start(). The child
 * keeps our stdin/stdout/stderr. Returns 0 or:
 *   -ENOENT      command not found (a shell would exit 127)
 *   -EACCES      found but not executable, or a directory (126)
 *   -HWT_EINVAL  empty argv, or a command was already launched
 *   -errno       pipe/fork failed */
HWT_API int hwt_coll_target_launch(struct hwt_coll_target *t, char *const argv[]);

/* Attaches to processes: every thread listed in /proc/PID/task now (later
 * threads are covered by counters with inherit). Returns 0 or:
 *   -ESRCH       a PID does not exist (errmsg names it)
 *   -HWT_EINVAL  no PIDs, or a PID <= 0
 *   -errno, -ENOMEM */
HWT_API int hwt_coll_target_attach(struct hwt_coll_target *t, const int *pids, size_t npids);

/* Observes the whole system: the CPUs in /sys/devices/system/cpu/online.
 * Returns 0, -errno (sysfs unreadable), -HWT_EFORMAT. */
HWT_API int hwt_coll_target_system(struct hwt_coll_target *t);

/* Parses a CPU list ("0-3,8,10-11") into a sorted, de-duplicated array
 * (caller frees *cpus). Returns the count, -HWT_EPARSE, -ENOMEM. */
HWT_API int hwt_coll_cpu_list_parse(const char *s, int **cpus);

/* Threads to open per-thread events on: the launched child's PID, or every
 * attached thread; 0 when system-wide only. *tids stays valid until the
 * target is freed. */
HWT_API size_t hwt_coll_target_threads(const struct hwt_coll_target *t, const int **tids);
/* CPUs to open per-CPU events on (system-wide); 0 otherwise. */
HWT_API size_t hwt_coll_target_cpus(const struct hwt_coll_target *t, const int **cpus);
/* The launched child's PID, or -1. */
HWT_API int hwt_coll_target_child(const struct hwt_coll_target *t);
/* True when the target is system-wide. */
HWT_API bool hwt_coll_target_is_system(const struct hwt_coll_target *t);

/* Starts observing: blocks SIGINT/SIGTERM/SIGCHLD in this thread (they are
 * handled by hwt_coll_target_wait) and releases a launched child to exec.
 * Returns 0, or for a child whose exec failed (it is reaped):
 *   -ENOENT, -EACCES, -ENOEXEC ... the exec error (errmsg explains)
 * Calling it twice is -HWT_EINVAL. */
HWT_API int hwt_coll_target_start(struct hwt_coll_target *t);

/* Results of hwt_coll_target_wait. */
enum hwt_coll_wait {
	HWT_COLL_WAIT_TIMEOUT = 0,     /* timeout_ms passed, the target runs on */
	HWT_COLL_WAIT_EXITED = 1,      /* the command exited / all PIDs are gone */
	HWT_COLL_WAIT_INTERRUPTED = 2, /* SIGINT/SIGTERM with no command to end */
};

/* Waits up to timeout_ms (-1: no limit) for the target to end. A SIGINT or
 * SIGTERM sent to us is forwarded to a launched command (which then decides
 * to exit); terminal-generated ones already reached it. Without a command
 * (attach, system-wide) such a signal ends the wait with INTERRUPTED.
 * Returns an enum hwt_coll_wait value, or -HWT_EINVAL before start. */
HWT_API int hwt_coll_target_wait(struct hwt_coll_target *t, int timeout_ms);

/* The launched command's status as a shell reports it: its exit code, or
 * 128 + the signal that killed it; -1 if it has not exited (or none). */
HWT_API int hwt_coll_target_exit_status(const struct hwt_coll_target *t);

/* The command's user and system CPU seconds (from wait4; children it
 * waited for included). 0 until it exits. */
HWT_API void hwt_coll_target_rusage(const struct hwt_coll_target *t, double *user_s,
				    double *sys_s);

/* True when a SIGINT/SIGTERM arrived during the waits. */
HWT_API bool hwt_coll_target_interrupted(const struct hwt_coll_target *t);

#endif /* HWT_COLLECTOR_COLLECTOR_H */
