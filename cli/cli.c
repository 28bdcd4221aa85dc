/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/cli.c - message helpers and the stderr logger shared by subcommands.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/decoder.h"

int hwt_cli_verbose;

static __attribute__((format(printf, 2, 0))) void vmsg(const char *prefix, const char *fmt,
						       va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "hwtrace: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int hwt_cli_write_stdout(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	if (fwrite(text, 1, len, stdout) != len)
		return errno == EPIPE ? -EPIPE : -EIO;
	return 0;
}

void hwt_cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("error: ", fmt, ap);
	va_end(ap);
}

void hwt_cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void hwt_cli_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void hwt_cli_help_end(FILE *f)
{
	/* The paths cmake knows (cli/CMakeLists.txt): where cmake --install
	 * puts the page, and where the build made it. */
	if (access(HWT_MAN_INSTALL, R_OK) == 0)
		fprintf(f, "\nThe full manual: man hwtrace\n");
	else if (access(HWT_MAN_BUILD, R_OK) == 0)
		fprintf(f,
			"\nThe full manual: man %s ('cmake --install' installs it: then man "
			"hwtrace)\n",
			HWT_MAN_BUILD);
	else
		fprintf(f, "\nThe full manual: man hwtrace (docs/man/ in the sources)\n");
}

int hwt_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "hwtrace %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'hwtrace %s --help')\n", cmd);
	return HWT_EXIT_USAGE;
}

static void log_stderr(void *ctx, enum hwt_log_level level, const char *msg)
{
	(void)ctx;
	switch (level) {
	case HWT_LOG_ERROR:
		hwt_cli_error("%s", msg);
		break;
	case HWT_LOG_WARN:
		hwt_cli_warn("%s", msg);
		break;
	case HWT_LOG_INFO:
		hwt_cli_note("%s", msg);
		break;
	case HWT_LOG_DEBUG:
		if (hwt_cli_verbose)
			hwt_cli_note("debug: %s", msg);
		break;
	}
}

const struct hwt_logger *hwt_cli_logger(void)
{
	static const struct hwt_logger logger = {log_stderr, NULL};

	return &logger;
}

int hwt_cli_parse_engine(const char *cmd, const char *s, uint32_t *engine)
{
	static const struct {
		const char *name;
		enum hwt_dec_engine engine;
	} names[] = {
	    {"fast", HWT_DEC_ENGINE_FAST},
	    {"libipt", HWT_DEC_ENGINE_LIBIPT},
	    {"ptxed", HWT_DEC_ENGINE_PTXED},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(s, names[i].name)) {
			*engine = names[i].engine;
			return 0;
		}
	}
	return hwt_cli_usage_error(cmd, "unknown --engine '%s' (use fast, libipt or ptxed)", s);
}

int hwt_cli_parse_u64(const char *s, bool binary, unsigned long long *out)
{
	unsigned long long v, mul = 1, base = binary ? 1024 : 1000;
	char *end;

	if (!s || !*s || *s == '-')
		return -HWT_EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -HWT_EINVAL;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		mul = base;
		end++;
		break;
	case 'm':
	case 'M':
		mul = base * base;
		end++;
		break;
	case 'g':
	case 'G':
		mul = base * base * base;
		end++;
		break;
	default:
		return -HWT_EINVAL;
	}
	if (*end != '\0' && !(binary && (*end == 'B' || *end == 'b') && end[1] == '\0'))
		return -HWT_EINVAL;
	if (__builtin_mul_overflow(v, mul, out))
		return -HWT_EINVAL;
	return 0;
}

int hwt_cli_parse_ids(const char *s, long min, int32_t **ids, size_t *n)
{
	size_t before = *n;

	while (*s) {
		char *end;
		long v;
		int32_t *nv;

		if (*s == ',') {
			s++;
			continue;
		}
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || end == s || v < min || v > INT32_MAX || (*end && *end != ','))
			return -HWT_EINVAL;
		if (!(nv = realloc(*ids, (*n + 1) * sizeof(*nv))))
			return -ENOMEM;
		*ids = nv;
		(*ids)[(*n)++] = (int32_t)v;
		s = end;
	}
	return *n > before ? 0 : -HWT_EINVAL;
}
