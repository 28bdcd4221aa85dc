/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * probe/tpformat.c - tracepoint formats from tracefs
 * (events/SUBSYS/EVENT/format): the event's id and the name, offset, size,
 * signedness and kind (integer, inline char array, __data_loc string) of
 * each field, so that args->NAME reads the right bytes of a
 * PERF_SAMPLE_RAW record. The text comes from the kernel but is parsed as
 * untrusted (a fuzz target replays odd inputs): every number is bounded.
 */
#include "probe/probe_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void prb_tp_format_free(struct prb_tp_format *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nfields; i++) {
		free(f->fields[i].name);
		free(f->fields[i].type);
	}
	free(f->fields);
	free(f->name);
	free(f);
}

const struct prb_tp_field *prb_tp_format_field(const struct prb_tp_format *f, const char *name)
{
	for (size_t i = 0; f && i < f->nfields; i++)
		if (!strcmp(f->fields[i].name, name))
			return &f->fields[i];
	return NULL;
}

/* The value after "key:" up to ';' in [s, e), as an unsigned number. */
static int kv_num(const char *s, const char *e, const char *key, unsigned long *v)
{
	size_t kl = strlen(key);

	for (const char *p = s; p + kl < e; p++) {
		if (memcmp(p, key, kl) || (p > s && !isspace((unsigned char)p[-1]) && p[-1] != ';'))
			continue;
		p += kl;
		if (!isdigit((unsigned char)*p))
			return -HWT_EFORMAT;
		*v = 0;
		while (p < e && isdigit((unsigned char)*p)) {
			*v = *v * 10 + (unsigned long)(*p - '0');
			if (*v > 0xffffffful)
				return -HWT_EFORMAT;
			p++;
		}
		return 0;
	}
	return -HWT_EFORMAT;
}

/* "field:DECL;" -> name, type, string kind. */
static int parse_decl(const char *d, size_t n, struct prb_tp_field *f)
{
	size_t e = n, ne, ns;
	bool array = false;

	while (e && isspace((unsigned char)d[e - 1]))
		e--;
	if (e && d[e - 1] == ']') {
		/* NAME[N] or TYPE[] NAME (data_loc) */
		while (e && d[e - 1] != '[')
			e--;
		if (!e)
			return -HWT_EFORMAT;
		e--;
		array = true;
	}
	ne = e;
	while (ne && isspace((unsigned char)d[ne - 1]))
		ne--;
	ns = ne;
	while (ns && (isalnum((unsigned char)d[ns - 1]) || d[ns - 1] == '_'))
		ns--;
	if (ns == ne)
		return -HWT_EFORMAT;
	f->name = strndup(d + ns, ne - ns);
	f->type = strndup(d, n);
	if (!f->name || !f->type)
		return -ENOMEM;
	f->data_loc = !strncmp(d, "__data_loc", 10);
	if (!f->data_loc && array) {
		const char *t = d;

		while (t < d + ns && isspace((unsigned char)*t))
			t++;
		if (!strncmp(t, "const ", 6))
			t += 6;
		f->is_string = !strncmp(t, "char ", 5) || !strncmp(t, "unsigned char ", 14);
	}
	return 0;
}

int prb_tp_format_parse(const char *text, size_t len, struct prb_tp_format **out)
{
	struct prb_tp_format *f = calloc(1, sizeof(*f));
	const char *p = text, *end = text + len;
	bool have_id = false;
	int err = -HWT_EFORMAT;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *s = p;

		while (s < le && isspace((unsigned char)*s))
			s++;
		if ((size_t)(le - s) > 5 && !memcmp(s, "name:", 5) && !f->name) {
			s += 5;
			while (s < le && isspace((unsigned char)*s))
				s++;
			if (!(f->name = strndup(s, (size_t)(le - s)))) {
				err = -ENOMEM;
				goto error;
			}
		} else if ((size_t)(le - s) > 3 && !memcmp(s, "ID:", 3)) {
			unsigned long v;

			if (kv_num(s, le, "ID:", &v) < 0 && kv_num(s, le, "ID: ", &v) < 0)
				goto error;
			f->id = (uint32_t)v;
			have_id = true;
		} else if ((size_t)(le - s) > 6 && !memcmp(s, "field:", 6)) {
			const char *semi = memchr(s, ';', (size_t)(le - s));
			struct prb_tp_field fld = {0}, *nf;
			unsigned long off, size, sgn = 0;

			if (!semi)
				goto error;
			if (kv_num(semi, le, "offset:", &off) < 0 ||
			    kv_num(semi, le, "size:", &size) < 0)
				goto error;
			(void)kv_num(semi, le, "signed:", &sgn);
			/* A raw record is at most 64 KiB (u16 sizes in perf). */
			if (off > 65535 || size > 65535 || off + size > 65536 || !size)
				goto error;
			if ((err = parse_decl(s + 6, (size_t)(semi - s - 6), &fld)) < 0) {
				free(fld.name);
				free(fld.type);
				goto error;
			}
			err = -HWT_EFORMAT;
			fld.offset = (uint32_t)off;
			fld.size = (uint32_t)size;
			fld.is_signed = sgn != 0;
			if (!fld.is_string && !fld.data_loc && size != 1 && size != 2 &&
			    size != 4 && size != 8) {
				/* arrays of numbers etc.: kept, but not readable as one value */
				fld.is_string = false;
			}
			if (f->nfields >= 1024) {
				free(fld.name);
				free(fld.type);
				goto error;
			}
			nf = realloc(f->fields, (f->nfields + 1) * sizeof(*nf));
			if (!nf) {
				free(fld.name);
				free(fld.type);
				err = -ENOMEM;
				goto error;
			}
			f->fields = nf;
			f->fields[f->nfields++] = fld;
		}
		p = nl ? nl + 1 : end;
	}
	if (!have_id)
		goto error;
	if (!f->name && !(f->name = strdup(""))) {
		err = -ENOMEM;
		goto error;
	}
	*out = f;
	return 0;
error:
	prb_tp_format_free(f);
	return err;
}

const char *prb_tracefs_dir(const char *tracefs_root)
{
	static const char *const dirs[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
	struct stat st;
	char path[512];

	if (tracefs_root)
		return tracefs_root;
	for (size_t i = 0; i < HWT_ARRAY_SIZE(dirs); i++) {
		snprintf(path, sizeof(path), "%s/events", dirs[i]);
		if (!stat(path, &st) && S_ISDIR(st.st_mode))
			return dirs[i];
	}
	return NULL;
}

int prb_tp_format_load(const char *tracefs_root, const char *subsys, const char *event,
		       struct prb_tp_format **out)
{
	const char *dir = prb_tracefs_dir(tracefs_root);
	char path[1024];
	struct hwt_buf buf;
	int fd, err;

	*out = NULL;
	if (!dir)
		return -HWT_ENOTSUP;
	if (strchr(subsys, '/') || strchr(event, '/') || !strcmp(subsys, "..") ||
	    !strcmp(event, ".."))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/events/%s/%s/format", dir, subsys, event);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOTDIR ? -ENOENT : -errno;
	hwt_buf_init(&buf);
	for (;;) {
		ssize_t n;

		if ((err = hwt_buf_reserve(&buf, 4096)) < 0)
			goto out;
		n = read(fd, buf.data + buf.len, 4096);
		if (n < 0) {
			err = -errno;
			goto out;
		}
		if (!n)
			break;
		buf.len += (size_t)n;
		if (buf.len > (1u << 20)) {
			err = -HWT_EFORMAT;
			goto out;
		}
	}
	err = prb_tp_format_parse((const char *)buf.data, buf.len, out);
out:
	close(fd);
	hwt_buf_fini(&buf);
	return err;
}
