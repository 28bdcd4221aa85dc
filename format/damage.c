/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/damage.c - what is said of a recording that cannot be read, or
 * only in part: why it could not be opened (empty, not a recording, cut
 * short inside its header, damaged, too new) and how an opened one is
 * incomplete (its recorder was killed, it was cut short) or damaged
 * (chunks or records that fail their checks). Every command prints these
 * lines, so the words are made here once; the CLI adds the program's
 * prefix and the file's name.
 */
#include "format/session_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

bool hwt_fmt_session_damage(const struct hwt_fmt_session *s, struct hwt_fmt_damage *d)
{
	memset(d, 0, sizeof(*d));
	if (!s)
		return false;
	d->bad_records = s->stats.bad_records;
	d->broken_err = s->broken_err;
	d->broken_at = s->broken_at;
	if (s->reader) {
		const struct hwt_fmt_file_info *fi = hwt_fmt_reader_info(s->reader);

		d->unclosed = !fi->closed;
		d->truncated = fi->truncated;
		d->valid_end = fi->valid_end;
		d->cut_bytes = fi->truncated ? fi->file_size - fi->valid_end : 0;
		d->bad_chunks =
		    hwt_fmt_reader_bad_chunks(s->reader, &d->first_bad, &d->first_bad_err);
	} else {
		const struct hwt_fmt_meta *cut = hwt_fmt_session_meta_find(s, "perf.truncated_at");

		d->unclosed = hwt_fmt_session_meta_find(s, "perf.unfinished") != NULL;
		if (cut && cut->type == HWT_FMT_META_U64) {
			d->truncated = true;
			d->valid_end = cut->v.u64;
		}
	}
	return d->unclosed || d->truncated || d->bad_chunks || d->bad_records || d->broken_err;
}

/* snprintf that appends at *n and keeps counting past the end of buf. */
static __attribute__((format(printf, 4, 5))) void put(char *buf, size_t len, size_t *n,
						      const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(*n < len ? buf + *n : NULL, *n < len ? len - *n : 0, fmt, ap);
	va_end(ap);
	if (k > 0)
		*n += (size_t)k;
}

/* What a chunk or header error means, in a few words. */
static const char *damage_kind(int err)
{
	switch (-err) {
	case HWT_ECHECKSUM:
		return "checksum mismatch";
	case HWT_ECOMPRESS:
		return "corrupt compressed data";
	case HWT_ETRUNC:
		return "the file ends inside it";
	case HWT_ETOOBIG:
		return "a size out of range";
	case HWT_EFORMAT:
		return "malformed data";
	default:
		return hwt_strerror(err);
	}
}

int hwt_fmt_damage_str(const char *path, const struct hwt_fmt_damage *d, bool nothing_read,
		       char *buf, size_t len)
{
	bool damaged = d->bad_chunks || d->bad_records || d->broken_err;
	const char *sep = ": ";
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	put(buf, len, &n, "%s", path);
	if (d->unclosed)
		put(buf, len, &n,
		    " did not end cleanly (its recorder was stopped before it "
		    "closed the file: killed, out of memory or a power cut)");
	else if (d->truncated && !damaged)
		put(buf, len, &n, " is cut short");
	else
		put(buf, len, &n, " is damaged");
	if (d->truncated && d->cut_bytes) {
		put(buf, len, &n,
		    "%sit ends inside a chunk at offset %" PRIu64 " (the last %" PRIu64
		    " bytes cannot be read)",
		    sep, d->valid_end, d->cut_bytes);
		sep = "; ";
	} else if (d->truncated) {
		put(buf, len, &n, "%sits record at offset %" PRIu64 " is incomplete", sep,
		    d->valid_end);
		sep = "; ";
	}
	if (d->bad_chunks) {
		put(buf, len, &n,
		    "%s%" PRIu64 " chunk(s) failed their checks and were skipped (the first at "
		    "offset %" PRIu64 ": %s)",
		    sep, d->bad_chunks, d->first_bad, damage_kind(d->first_bad_err));
		sep = "; ";
	}
	if (d->broken_err) {
		put(buf, len, &n, "%s%s at offset %" PRIu64 ", where reading stopped", sep,
		    d->broken_err == -HWT_ETRUNC ? "a record cut short"
						 : damage_kind(d->broken_err),
		    d->broken_at);
		sep = "; ";
	}
	if (d->bad_records) {
		put(buf, len, &n, "%s%" PRIu64 " malformed record(s) were skipped", sep,
		    d->bad_records);
		sep = "; ";
	}
	if (nothing_read)
		put(buf, len, &n, "; nothing in it could be read (record it again)");
	else if (d->truncated || damaged)
		put(buf, len, &n, "; everything else in it is read");
	else
		put(buf, len, &n, "; everything in it is read");
	return (int)n;
}

int hwt_fmt_open_error_str(const char *path, int err, uint64_t off, char *buf, size_t len)
{
	struct stat st;
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	put(buf, len, &n, "%s", path);
	switch (-err) {
	case ENOENT:
		put(buf, len, &n,
		    ": no such file (check the path, or record one with 'hwtrace "
		    "record')");
		break;
	case EACCES:
	case EPERM:
		put(buf, len, &n,
		    ": permission denied (check the file's owner and mode: recordings "
		    "are written mode 0600)");
		break;
	case EISDIR:
		put(buf, len, &n,
		    " is a directory without a 'data' file (give a recording, or the "
		    "directory perf record --kcore wrote)");
		break;
	case HWT_EINVAL:
		put(buf, len, &n,
		    " is not a regular file (give a recording, or - for a perf pipe on "
		    "standard input)");
		break;
	case HWT_EVERSION:
		put(buf, len, &n,
		    " was written by a newer hwtrace (format version at offset %" PRIu64
		    "); upgrade hwtrace to read it",
		    off);
		break;
	case HWT_ENOTSUP:
		put(buf, len, &n,
		    ": unsupported input (big-endian perf.data, or a perf.data in "
		    "file mode or a .hwt on a pipe: give it as a file)");
		break;
	case ENOMEM:
		put(buf, len, &n, ": out of memory");
		break;
	case HWT_EFORMAT:
	case HWT_ETRUNC:
	case HWT_ECHECKSUM:
	case HWT_ECOMPRESS:
	case HWT_ETOOBIG:
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
			put(buf, len, &n,
			    " is empty (0 bytes), not a recording (was its recorder "
			    "stopped before it wrote anything?)");
			break;
		}
		if (off == 0 && -err == HWT_EFORMAT) {
			put(buf, len, &n,
			    " is not a hwtrace or perf.data recording (unknown "
			    "format at offset 0)");
			break;
		}
		if (-err == HWT_ETRUNC)
			put(buf, len, &n,
			    " is cut short: the file ends at offset %" PRIu64 ", inside its "
			    "header; nothing in it could be read (copy or record it again)",
			    off);
		else
			put(buf, len, &n,
			    " is damaged: %s at offset %" PRIu64 "; nothing in it could be read "
			    "(restore it or record it again)",
			    damage_kind(err), off);
		break;
	default:
		if (-err < HWT_EBASE)
			put(buf, len, &n, ": %s", hwt_strerror(err));
		else
			put(buf, len, &n, ": %s at offset %" PRIu64, hwt_strerror(err), off);
		break;
	}
	return (int)n;
}
