/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * report/text.c - text helpers every renderer shares: JSON and XML string
 * escaping (names come from binaries and may hold any bytes), the stats
 * block each report prints, and folded-stack frame names.
 */
#include "report/report_int.h"

#include <inttypes.h>
#include <string.h>

/* Length of a valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if (s[0] == 0xe0 && s[1] < 0xa0)
			return 0; /* overlong */
		if (s[0] == 0xed && s[1] >= 0xa0)
			return 0; /* surrogate */
		return 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		if ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
			return 0;
		return 4;
	}
	return 0;
}

int hwt_rep_json_str(struct hwt_buf *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	int err = hwt_buf_append(out, "\"", 1);

	while (*s && err >= 0) {
		size_t n;

		switch (*s) {
		case '"':
			err = hwt_buf_append(out, "\\\"", 2);
			s++;
			continue;
		case '\\':
			err = hwt_buf_append(out, "\\\\", 2);
			s++;
			continue;
		case '\n':
			err = hwt_buf_append(out, "\\n", 2);
			s++;
			continue;
		case '\t':
			err = hwt_buf_append(out, "\\t", 2);
			s++;
			continue;
		default:
			break;
		}
		if (*s < 0x20 || *s == 0x7f) {
			err = hwt_buf_printf(out, "\\u%04x", *s);
			s++;
			continue;
		}
		/* "</script>" must not end an HTML script block that embeds
		 * JSON, so '<' and '>' are escaped too. */
		if (*s == '<' || *s == '>') {
			err = hwt_buf_printf(out, "\\u%04x", *s);
			s++;
			continue;
		}
		n = utf8_len(s);
		if (!n) {
			err = hwt_buf_append(out, "\\ufffd", 6);
			s++;
			continue;
		}
		err = hwt_buf_append(out, s, n);
		s += n;
	}
	if (err >= 0)
		err = hwt_buf_append(out, "\"", 1);
	return err;
}

int hwt_rep_xml_str(struct hwt_buf *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	int err = 0;

	while (*s && err >= 0) {
		size_t n;

		switch (*s) {
		case '&':
			err = hwt_buf_append(out, "&amp;", 5);
			s++;
			continue;
		case '<':
			err = hwt_buf_append(out, "&lt;", 4);
			s++;
			continue;
		case '>':
			err = hwt_buf_append(out, "&gt;", 4);
			s++;
			continue;
		case '"':
			err = hwt_buf_append(out, "&quot;", 6);
			s++;
			continue;
		case '\'':
			err = hwt_buf_append(out, "&#39;", 5);
			s++;
			continue;
		default:
			break;
		}
		/* XML 1.0 forbids most control characters even as references. */
		if (*s < 0x20 && *s != '\t' && *s != '\n') {
			err = hwt_buf_append(out, "?", 1);
			s++;
			continue;
		}
		n = utf8_len(s);
		if (!n) {
			err = hwt_buf_append(out, "\xef\xbf\xbd", 3);
			s++;
			continue;
		}
		err = hwt_buf_append(out, s, n);
		s += n;
	}
	return err;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

int hwt_rep_buf_u64(struct hwt_buf *out, uint64_t v)
{
	char tmp[24];
	size_t n = sizeof(tmp);

	do {
		tmp[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return hwt_buf_append(out, tmp + n, sizeof(tmp) - n);
}

int hwt_rep_stats_text(struct hwt_buf *out, const struct hwt_rep_stats *st, const char *prefix)
{
	/* An exact profile's samples are distinct stacks, not samples. */
	int err = hwt_buf_printf(out,
				 st->exact ? "%sdistinct stacks: %" PRIu64 " (weight %" PRIu64
					     ", exact: every event counted, not sampled)"
					   : "%ssamples: %" PRIu64 " (weight %" PRIu64 ")",
				 prefix, st->samples, st->weight);

	if (err < 0)
		return err;
	return hwt_buf_printf(
	    out,
	    ", filtered out: %" PRIu64 ", lost: %" PRIu64 ", without stack: %" PRIu64 "\n"
	    "%sframes: %" PRIu64 ", unsymbolized: %" PRIu64 " (%.2f%%), truncated "
	    "stacks: %" PRIu64 ", bad input: %" PRIu64 "\n",
	    st->filtered, st->lost, st->no_stack, prefix, st->frames, st->unsymbolized,
	    pct(st->unsymbolized, st->frames), st->truncated, st->bad_input);
}

int hwt_rep_stats_json(struct hwt_buf *out, const struct hwt_rep_stats *st)
{
	return hwt_buf_printf(out,
			      "{\"samples\":%" PRIu64 ",\"weight\":%" PRIu64
			      ",\"filtered\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"no_stack\":%" PRIu64
			      ",\"frames\":%" PRIu64 ",\"unsymbolized\":%" PRIu64
			      ",\"truncated\":%" PRIu64 ",\"bad_input\":%" PRIu64 ",\"exact\":%s}",
			      st->samples, st->weight, st->filtered, st->lost, st->no_stack,
			      st->frames, st->unsymbolized, st->truncated, st->bad_input,
			      st->exact ? "true" : "false");
}

int hwt_rep_folded_frame(struct hwt_buf *out, const char *label, uint32_t kind, bool annotate)
{
	static const char *const suffix[] = {
	    [HWT_REP_KIND_KERNEL] = "_[k]",
	    [HWT_REP_KIND_INLINED] = "_[i]",
	    [HWT_REP_KIND_JIT] = "_[j]",
	};
	int err = 0;

	/* ';' separates frames and newlines end lines: both are replaced
	 * inside names so a line always parses back to the same frames (the
	 * count is after the last blank, so blanks in names are fine; a CR
	 * becomes '?', not a blank a reader would trim at the line's start). */
	for (const char *p = label; *p && err >= 0; p++) {
		char c = *p == ';' ? ':' : (*p == '\n' || *p == '\r') ? '?' : *p;

		err = hwt_buf_append(out, &c, 1);
	}
	if (err >= 0 && annotate && kind < HWT_ARRAY_SIZE(suffix) && suffix[kind]) {
		err = hwt_buf_printf(out, "%s", suffix[kind]);
	} else if (err >= 0 && annotate) {
		/* A user frame whose name itself ends like a kind suffix gets
		 * an explicit _[u], or a reader would take the name's end for
		 * its kind. */
		size_t len = strlen(label);

		if (len >= 4 && label[len - 4] == '_' && label[len - 3] == '[' &&
		    label[len - 1] == ']' && strchr("kiju", label[len - 2]))
			err = hwt_buf_printf(out, "_[u]");
	}
	return err;
}
