/*
 * cli/cli.h - what the hwtrace subcommands share: the command table, message
 * helpers that format errors for people, and the logger that routes library
 * diagnostics to stderr. The CLI is thin: parse, call the library, print.
 */
#ifndef HWT_CLI_CLI_H
#define HWT_CLI_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "common/hwt.h"

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

/* Reads folded stacks from path ("-" is stdin) into a new profile (cmd_flame.c,
 * shared with report). Prints its own one-line error; returns HWT_EXIT_OK
 * or HWT_EXIT_ERROR. */
struct hwt_rep_profile;
int hwt_cli_load_folded(const char *path, const char *event, struct hwt_rep_profile **out);
int hwt_cmd_script(int argc, char **argv);
/* `hwtrace script` on a recording of samples (cli/script_samples.c). */
int hwt_script_samples(int argc, char **argv);

/* Recordings (cli/recording.c). The default input: hwtrace.hwt when it
 * exists, else perf.data when it exists, else hwtrace.hwt (so the error
 * names it). */
const char *hwt_cli_default_input(void);
/* Opens a recording of samples (.hwt, perf.data, "-" for a perf pipe) as a
 * session; refuses a PT trace. Prints its own one-line error; returns
 * HWT_EXIT_OK (*session set) or HWT_EXIT_ERROR. */
struct hwt_fmt_session;
int hwt_cli_open_recording(const char *path, struct hwt_fmt_session **session);
/* One line naming the cause and the fix for a recording that cannot be
 * read (err from the format module, off the file offset). Returns
 * HWT_EXIT_ERROR. */
int hwt_cli_recording_error(const char *path, int err, uint64_t off);

/* "hwtrace: error: <message>" on stderr. One line: say the cause and the fix. */
void hwt_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "hwtrace: warning: <message>". */
void hwt_cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "hwtrace: <message>" (notices and summaries). */
void hwt_cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A logger that prints library diagnostics to stderr with the prefixes
 * above; debug messages only with -v (hwt_cli_verbose). */
const struct hwt_logger *hwt_cli_logger(void);
extern int hwt_cli_verbose;

/* Usage error for a subcommand: prints the message and "see 'hwtrace CMD
 * --help'", returns HWT_EXIT_USAGE. */
int hwt_cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Parses an unsigned integer with optional k/M/G suffix (binary units when
 * binary is true). Returns 0 or -HWT_EINVAL. */
int hwt_cli_parse_u64(const char *s, bool binary, unsigned long long *out);

#endif /* HWT_CLI_CLI_H */
