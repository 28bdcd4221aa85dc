/*
 * cli/recording.c - what every analysis command (script, report, flame)
 * does the same way with its input: the default file (hwtrace.hwt, then
 * perf.data, as perf looks for perf.data), opening it as a session (.hwt,
 * perf.data in file or pipe mode, "-" for a pipe on stdin), and one-line
 * errors that name the cause and the fix.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "format/format.h"

const char *hwt_cli_default_input(void)
{
	if (access("hwtrace.hwt", F_OK) == 0)
		return "hwtrace.hwt";
	if (access("perf.data", F_OK) == 0)
		return "perf.data";
	return "hwtrace.hwt";
}

int hwt_cli_recording_error(const char *path, int err, uint64_t off)
{
	switch (-err) {
	case ENOENT:
		hwt_cli_error("%s: no such file (record one with 'hwtrace record', or give it "
			      "with -i)",
			      path);
		break;
	case EACCES:
	case EPERM:
		hwt_cli_error("%s: permission denied (check the file's owner and mode)", path);
		break;
	case EISDIR:
		hwt_cli_error("%s: is a directory (give a recording with -i)", path);
		break;
	case HWT_EFORMAT:
	case HWT_ETRUNC:
	case HWT_ECHECKSUM:
	case HWT_ECOMPRESS:
	case HWT_ETOOBIG:
		hwt_cli_error("%s: %s at offset %" PRIu64
			      " (not a hwtrace or perf.data recording, or it is damaged)",
			      path, hwt_strerror(err), off);
		break;
	case HWT_EVERSION:
		hwt_cli_error("%s: written by a newer hwtrace; upgrade hwtrace to read it", path);
		break;
	case HWT_EINVAL:
		hwt_cli_error("%s: not a regular file (give a recording, or - for a perf pipe on "
			      "standard input)",
			      path);
		break;
	case ENOMEM:
		hwt_cli_error("%s: out of memory", path);
		break;
	default:
		hwt_cli_error("%s: %s (at offset %" PRIu64 ")", path, hwt_strerror(err), off);
		break;
	}
	return HWT_EXIT_ERROR;
}

int hwt_cli_open_recording(const char *path, struct hwt_fmt_session **out)
{
	struct hwt_fmt_session_config cfg;
	struct stat st;
	uint64_t off = 0;
	int err;

	*out = NULL;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return hwt_cli_recording_error(path, -EISDIR, 0);
	hwt_fmt_session_config_init(&cfg);
	cfg.log = *hwt_cli_logger();
	err = hwt_fmt_session_open(out, path, &cfg, &off);
	if (err < 0) {
		*out = NULL;
		return hwt_cli_recording_error(path, err, off);
	}
	if (hwt_fmt_session_naux(*out)) {
		/* A trace, not samples: the decoder's mode reads it. */
		hwt_cli_error("%s holds an Intel PT trace (%zu AUX stream(s)), not samples: decode it "
			      "with 'hwtrace script --pt'",
			      path, hwt_fmt_session_naux(*out));
		hwt_fmt_session_close(*out);
		*out = NULL;
		return HWT_EXIT_ERROR;
	}
	return HWT_EXIT_OK;
}
