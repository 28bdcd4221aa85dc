/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/cli.h - what the hwtrace subcommands share: the command table, message
 * helpers that format errors for people, and the logger that routes library
 * diagnostics to stderr. The CLI is thin: parse, call the library, print.
 */
#ifndef HWT_CLI_CLI_H
#define HWT_CLI_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/hwt.h"
#include "ptflow/ptflow.h"
#include "ptsession/ptsession.h"
#include "report/report.h"

/* Exit codes of every subcommand. */
enum {
	HWT_EXIT_OK = 0,
	HWT_EXIT_ERROR = 1, /* the work failed: message printed */
	HWT_EXIT_USAGE = 2, /* bad command line: message printed */
};

struct hwt_cli_cmd {
	const char *name;
	int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
	const char *summary;
};

/* Subcommands (one file each: cli/cmd_<name>.c). */
int hwt_cmd_info(int argc, char **argv);
int hwt_cmd_addr2line(int argc, char **argv);
int hwt_cmd_list(int argc, char **argv);
int hwt_cmd_stat(int argc, char **argv);
int hwt_cmd_record(int argc, char **argv);
/* `record --pt=emulate ...`: the PT emulator's part of record. */
int hwt_record_pt_emulate(int argc, char **argv);
int hwt_cmd_flame(int argc, char **argv);
int hwt_cmd_report(int argc, char **argv);
int hwt_cmd_trace(int argc, char **argv);
int hwt_cmd_convert(int argc, char **argv);

/* Reads folded stacks from path ("-" is stdin) into a new profile (cmd_flame.c,
 * shared with report). Prints its own one-line error; returns HWT_EXIT_OK
 * or HWT_EXIT_ERROR. */
struct hwt_rep_profile;
int hwt_cli_load_folded(const char *path, const char *event, struct hwt_rep_profile **out);
int hwt_cmd_script(int argc, char **argv);
/* `hwtrace script` on a recording of samples (cli/script_samples.c). */
int hwt_script_samples(int argc, char **argv);

struct hwt_fmt_session;
/* `hwtrace script` on an Intel PT recording (cli/script_ptrec.c). session:
 * the recording already opened (taken over and closed), or NULL to open
 * -i FILE. */
int hwt_script_ptrec(int argc, char **argv, struct hwt_fmt_session *session);

/* `hwtrace script --pt ...`: raw Intel PT, ptxed-compatible (cli/script_pt.c). */
int hwt_script_pt(int argc, char **argv);

/* Recordings (cli/recording.c). The default input: hwtrace.hwt when it
 * exists, else perf.data when it exists, else hwtrace.hwt (so the error
 * names it). */
const char *hwt_cli_default_input(void);
/* Opens a recording of samples (.hwt, perf.data, "-" for a perf pipe) as a
 * session; refuses a PT trace. Prints its own one-line error; returns
 * HWT_EXIT_OK (*session set) or HWT_EXIT_ERROR. */
struct hwt_fmt_session;
int hwt_cli_open_recording(const char *path, struct hwt_fmt_session **session);
/* The same for any recording, PT included. */
int hwt_cli_open_session(const char *path, struct hwt_fmt_session **session);
/* One line naming the cause and the fix for a recording that cannot be
 * read (err from the format module, off the file offset). Returns
 * HWT_EXIT_ERROR. Every command says it in these words
 * (hwt_fmt_open_error_str). */
int hwt_cli_recording_error(const char *path, int err, uint64_t off);
/* After reading a recording: when it is incomplete or damaged, says so in
 * one line (hwt_fmt_damage_str: the same words in every command), a
 * warning, or the error when nothing_read (no data came out of it), and
 * returns true; returns false (silent) for a whole recording. */
bool hwt_cli_damage(const char *path, const struct hwt_fmt_session *session, bool nothing_read);
/* The same line for a damage description at hand (as error when error or
 * nothing_read, else as a warning). */
struct hwt_fmt_damage;
void hwt_cli_damage_say(const char *path, const struct hwt_fmt_damage *d, bool error,
			bool nothing_read);

/* Options report and flame share for recordings of samples: filters
 * (--comm, --pid, --tid, --dso, --time), --inline, --max-stack,
 * --kallsyms, --debug-dir. */
enum {
	HWT_CLI_OPT_COMM = 1000,
	HWT_CLI_OPT_PID,
	HWT_CLI_OPT_TID,
	HWT_CLI_OPT_OBJECT,
	HWT_CLI_OPT_TIME,
	HWT_CLI_OPT_INLINE,
	HWT_CLI_OPT_MAXSTACK,
	HWT_CLI_OPT_KALLSYMS,
	HWT_CLI_OPT_DEBUGDIR,
};

#define HWT_CLI_SAMPLES_LONGOPTS                                                                   \
	{"comm", required_argument, NULL, HWT_CLI_OPT_COMM},                                       \
	    {"comms", required_argument, NULL, HWT_CLI_OPT_COMM},                                  \
	    {"pid", required_argument, NULL, HWT_CLI_OPT_PID},                                     \
	    {"tid", required_argument, NULL, HWT_CLI_OPT_TID},                                     \
	    {"dso", required_argument, NULL, HWT_CLI_OPT_OBJECT},                                  \
	    {"dsos", required_argument, NULL, HWT_CLI_OPT_OBJECT},                                 \
	    {"object", required_argument, NULL, HWT_CLI_OPT_OBJECT},                               \
	    {"time", required_argument, NULL, HWT_CLI_OPT_TIME},                                   \
	    {"inline", no_argument, NULL, HWT_CLI_OPT_INLINE},                                     \
	    {"max-stack", required_argument, NULL, HWT_CLI_OPT_MAXSTACK},                          \
	    {"kallsyms", required_argument, NULL, HWT_CLI_OPT_KALLSYMS},                           \
	{                                                                                          \
		"debug-dir", required_argument, NULL, HWT_CLI_OPT_DEBUGDIR                         \
	}

struct hwt_cli_samples_opts {
	struct hwt_rep_filter filter;
	bool callchains, inline_frames, srclines;
	bool need_callchains; /* a call graph was asked for explicitly */
	unsigned int max_stack;
	const char *kallsyms, *debug_dir;
	/* storage of the filter lists */
	const char **comms, **objects;
	int32_t *pids, *tids;
	char *lists[16];
	size_t nlists;
	/* set by hwt_cli_load_samples() */
	size_t nevents;
	bool any_callchain;
	const char *no_callchain_event; /* an event without call chains */
	char no_callchain_name[64];
	uint64_t unmapped;
	struct hwt_rep_samples_stats stats; /* of the samples read */
	bool quiet;			    /* no notes (hwt_cli_stack_notes()) */
};

void hwt_cli_samples_opts_init(struct hwt_cli_samples_opts *o);
void hwt_cli_samples_opts_fini(struct hwt_cli_samples_opts *o);
/* Handles one of the HWT_CLI_OPT_* options: returns 0, or the usage exit
 * code after printing the error. */
int hwt_cli_samples_option(struct hwt_cli_samples_opts *o, int opt, const char *arg,
			   const char *cmd);
/* Reads the samples of the recording at path into a new profile (and into
 * timeline when not NULL). Prints its own one-line errors (missing or
 * damaged file, no samples, a call graph asked of an event without call
 * chains) and warnings (losses, everything filtered out); returns
 * HWT_EXIT_OK or HWT_EXIT_ERROR. session is the recording already open (from
 * hwt_cli_is_pt(); closed here) or NULL to open path. */
int hwt_cli_load_samples(struct hwt_cli_samples_opts *o, const char *path,
			 struct hwt_fmt_session *session, struct hwt_rep_profile **profile,
			 struct hwt_rep_timeline *timeline);

/* One note when most frame-pointer stacks are one or two frames deep
 * (suggesting --call-graph dwarf), and one when stacks unwound from the CFI
 * ended early (how many, and the main reason). */
void hwt_cli_stack_notes(const char *path, const struct hwt_rep_samples_stats *st);

/* Intel PT recordings in report, flame and branches (cli/ptreport.c). */
int hwt_cmd_branches(int argc, char **argv);
/* True when path is a PT recording; *session is then the opened recording
 * (the caller's to close or hand on). False for anything else, including
 * files that cannot be read and "-" (the samples path reports those); when
 * samples is not NULL, *samples is then the opened recording of samples, or
 * NULL (hand it to hwt_cli_load_samples(), which opens the file itself when
 * it is NULL). */
bool hwt_cli_is_pt(const char *path, struct hwt_fmt_session **session,
		   struct hwt_fmt_session **samples);
/* For a recording that hwt_cli_is_pt() turned down: one line saying why
 * (it cannot be read, or it holds samples: then "need" says what needs PT).
 * Returns HWT_EXIT_ERROR. */
int hwt_cli_not_pt(const char *path, const char *need);
struct hwt_ptf_config;
/* A decoded PT recording and its exact views. */
struct hwt_cli_ptrun {
	const char *path;
	struct hwt_fmt_session *session;
	struct hwt_pts *pts;
	struct hwt_ptf *ptf; /* finished: views ready */
	struct hwt_pts_stats st;
};
/* Decodes session (taken over: closed by hwt_cli_ptrun_fini) into a new
 * ptf made from cfg (its aspace and logger are set here), with the pid,
 * tid and time filters and kallsyms of so (may be NULL). Prints its own
 * one-line errors and warnings (losses, damage); returns HWT_EXIT_OK or
 * HWT_EXIT_ERROR. Call hwt_cli_ptrun_fini() either way. */
int hwt_cli_ptrun(struct hwt_cli_ptrun *r, const char *path, struct hwt_fmt_session *session,
		  struct hwt_ptf_config *cfg, const struct hwt_cli_samples_opts *so);
/* "WHAT: emulated PT: N instructions, ... gaps" on stderr. */
void hwt_cli_ptrun_note(const struct hwt_cli_ptrun *r, const char *what);
void hwt_cli_ptrun_fini(struct hwt_cli_ptrun *r);

/* "hwtrace: error: <message>" on stderr. One line: say the cause and the fix. */
/* A library's text output (a write callback): to stdout. Returns 0 or
 * -EIO / -EPIPE. */
int hwt_cli_write_stdout(void *ctx, const char *text, size_t len);
void hwt_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "hwtrace: warning: <message>". */
void hwt_cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "hwtrace: <message>" (notices and summaries). */
void hwt_cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A logger that prints library diagnostics to stderr with the prefixes
 * above; debug messages only with -v (hwt_cli_verbose). */
const struct hwt_logger *hwt_cli_logger(void);

/* The perf system calls of this run (cli/psys.c): *ps NULL for the kernel,
 * or the simulated machine the environment asks for (HWT_PMU_SIM=MODEL).
 * Prints its own error; returns HWT_EXIT_OK or HWT_EXIT_ERROR. Free with
 * hwt_psys_free() after everything using it. */
struct hwt_psys;
int hwt_cli_psys_open(struct hwt_psys **ps);
/* HWT_SYSFS_ROOT (a test seam), else the simulated machine's sysfs, else
 * NULL (the real one). */
const char *hwt_cli_sysfs_root(const struct hwt_psys *ps);
/* HWT_PERF_PARANOID_FILE (a test seam), else the simulated machine's, else
 * NULL (the real one). */
const char *hwt_cli_paranoid_path(const struct hwt_psys *ps);
extern int hwt_cli_verbose;

/* The last line of every --help: where the full manual is ("man hwtrace"
 * when it is installed, else the page in the build tree). */
void hwt_cli_help_end(FILE *f);

/* Usage error for a subcommand: prints the message and "see 'hwtrace CMD
 * --help'", returns HWT_EXIT_USAGE. */
int hwt_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parses an unsigned integer with optional k/M/G suffix (binary units when
 * binary is true). Returns 0 or -HWT_EINVAL. */
int hwt_cli_parse_u64(const char *s, bool binary, unsigned long long *out);

/* Parses --engine's name (fast, libipt, ptxed) into *engine (enum
 * hwt_dec_engine). Returns 0, or prints one usage error for cmd and returns
 * HWT_EXIT_USAGE. */
int hwt_cli_parse_engine(const char *cmd, const char *s, uint32_t *engine);

/* Parses a comma-separated list of integers, each at least min (pids,
 * tids: "12,34"), and appends them to *ids (realloc'd; the caller frees)
 * and *n. Empty items are skipped. Returns 0, -HWT_EINVAL (not an integer,
 * out of range, or no item at all) or -ENOMEM; on error *ids and *n hold
 * what was appended before it. */
int hwt_cli_parse_ids(const char *s, long min, int32_t **ids, size_t *n);

#endif /* HWT_CLI_CLI_H */
