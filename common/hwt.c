/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * common/hwt.c - error strings, the diagnostics helper, CRC-32C and the
 * growable buffer shared by all modules.
 */
#include "common/hwt.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const hwt_errstr[] = {
    [HWT_EINVAL - HWT_EBASE] = "invalid argument",
    [HWT_EINTERNAL - HWT_EBASE] = "internal error (a bug in hwtrace)",
    [HWT_EFORMAT - HWT_EBASE] = "malformed input",
    [HWT_ETRUNC - HWT_EBASE] = "input is truncated",
    [HWT_EVERSION - HWT_EBASE] = "unsupported format version",
    [HWT_ECHECKSUM - HWT_EBASE] = "checksum mismatch",
    [HWT_ETOOBIG - HWT_EBASE] = "size out of range",
    [HWT_EEOS - HWT_EBASE] = "end of stream",
    [HWT_ENOTSUP - HWT_EBASE] = "not supported",
    [HWT_ENOEVENT - HWT_EBASE] = "unknown event",
    [HWT_ENOSYM - HWT_EBASE] = "no such symbol",
    [HWT_ENODEBUG - HWT_EBASE] = "no debug information",
    [HWT_ENOPT - HWT_EBASE] = "Intel PT is not available",
    [HWT_EPARSE - HWT_EBASE] = "syntax error",
    [HWT_ECOMPRESS - HWT_EBASE] = "compression error",
    [HWT_EDECODE - HWT_EBASE] = "trace decoding error",
    [HWT_ELIB - HWT_EBASE] = "library error",
    [HWT_EDROPPED - HWT_EBASE] = "data dropped",
};

const char *hwt_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err == 0)
		return "success";
	if (err > HWT_EBASE && err < HWT_ELAST) {
		const char *s = hwt_errstr[err - HWT_EBASE];
		return s ? s : "unknown error";
	}
	if (err < HWT_EBASE)
		return strerror(err);
	return "unknown error";
}

void hwt_vlog(const struct hwt_logger *logger, enum hwt_log_level level, const char *fmt,
	      va_list ap)
{
	char msg[1024];

	if (!logger || !logger->fn)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	logger->fn(logger->ctx, level, msg);
}

void hwt_log(const struct hwt_logger *logger, enum hwt_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hwt_vlog(logger, level, fmt, ap);
	va_end(ap);
}

/* Table-driven CRC-32C, reflected polynomial 0x82F63B78; the table is built
 * at compile time so there is no initialisation race and no global state.
 * CRC_B() names its argument twice, not three times: nested eight deep that
 * is 2^8 copies of it per entry, not 3^8 (which took gcc 9 s and 1.2 GB).
 */
#define CRC_POLY   0x82F63B78u
#define CRC_B(c)   (((c) >> 1) ^ (CRC_POLY & (0u - ((c)&1u))))
#define CRC_E(i)   CRC_B(CRC_B(CRC_B(CRC_B(CRC_B(CRC_B(CRC_B(CRC_B((uint32_t)(i)))))))))
#define CRC_R4(i)  CRC_E(i), CRC_E(i + 1), CRC_E(i + 2), CRC_E(i + 3)
#define CRC_R16(i) CRC_R4(i), CRC_R4(i + 4), CRC_R4(i + 8), CRC_R4(i + 12)
#define CRC_R64(i) CRC_R16(i), CRC_R16(i + 16), CRC_R16(i + 32), CRC_R16(i + 48)
static const uint32_t crc32c_table[256] = {
    CRC_R64(0),
    CRC_R64(64),
    CRC_R64(128),
    CRC_R64(192),
};

uint32_t hwt_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
	while (len--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

void hwt_buf_init(struct hwt_buf *buf)
{
	buf->data = NULL;
	buf->len = 0;
	buf->cap = 0;
}

void hwt_buf_fini(struct hwt_buf *buf)
{
	if (!buf)
		return;
	free(buf->data);
	hwt_buf_init(buf);
}

int hwt_buf_reserve(struct hwt_buf *buf, size_t extra)
{
	size_t need, cap;
	uint8_t *data;

	if (hwt_add_size(buf->len, extra, &need) < 0)
		return -HWT_ETOOBIG;
	if (need <= buf->cap)
		return 0;
	cap = buf->cap ? buf->cap : 256;
	while (cap < need) {
		if (hwt_mul_size(cap, 2, &cap) < 0)
			return -HWT_ETOOBIG;
	}
	data = realloc(buf->data, cap);
	if (!data)
		return -ENOMEM;
	buf->data = data;
	buf->cap = cap;
	return 0;
}

int hwt_buf_append(struct hwt_buf *buf, const void *data, size_t len)
{
	int err;

	if (!len)
		return 0;
	err = hwt_buf_reserve(buf, len);
	if (err < 0)
		return err;
	memcpy(buf->data + buf->len, data, len);
	buf->len += len;
	return 0;
}

int hwt_buf_read_file(struct hwt_buf *buf, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		err = hwt_buf_reserve(buf, 65536);
		if (err < 0)
			break;
		n = read(fd, buf->data + buf->len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		if (n <= 0)
			break;
		buf->len += (size_t)n;
	}
	close(fd);
	return err;
}

int hwt_buf_printf(struct hwt_buf *buf, const char *fmt, ...)
{
	va_list ap;
	int n, err;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -HWT_EINVAL;
	err = hwt_buf_reserve(buf, (size_t)n + 1);
	if (err < 0)
		return err;
	va_start(ap, fmt);
	vsnprintf((char *)buf->data + buf->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	buf->len += (size_t)n;
	return 0;
}

int hwt_opts_copy(void *dst, size_t dst_size, const void *src)
{
	const uint8_t *b = src;
	size_t size;

	if (!dst || !src || dst_size < sizeof(size_t))
		return -HWT_EINVAL;
	memcpy(&size, src, sizeof(size));
	if (size < sizeof(size_t))
		return -HWT_EINVAL;
	for (size_t i = dst_size; i < size; i++) {
		if (b[i])
			return -HWT_EINVAL;
	}
	memcpy(dst, src, size < dst_size ? size : dst_size);
	memcpy(dst, &dst_size, sizeof(dst_size));
	return 0;
}

int hwt_dl_load(const char *soname, const char *const *names, void *const *slots, size_t n)
{
	void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return -HWT_ELIB;
	for (size_t i = 0; i < n; i++) {
		void *sym = dlsym(lib, names[i]);

		if (!sym)
			return -HWT_ELIB;
		/* POSIX: dlsym's void * holds the function's address. */
		memcpy(slots[i], &sym, sizeof(sym));
	}
	return 0;
}
