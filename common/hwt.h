/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * common/hwt.h - what every hwtrace module shares: the error contract, the
 * diagnostics callback, the export macro and a few checked-arithmetic helpers.
 *
 * Error contract: functions return int; negative is an error, non-negative a
 * count or status bits. Errors are either a negated errno value passed through
 * from the kernel or libc (-ENOENT, -EACCES, ...), or a negated HWT_E* code,
 * which all lie above any errno value. hwt_strerror() explains both.
 * Foreign codes (pte_*, PFM_ERR_*, ZSTD errors, libdwarf/libelf errors) are
 * converted at the module boundary and never leak out of a module.
 */
#ifndef HWT_COMMON_HWT_H
#define HWT_COMMON_HWT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define HWT_API __attribute__((visibility("default")))

#define HWT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* hwtrace's own error codes; negate them to return. They start above any
 * errno value so that both spaces can travel in one int. */
enum hwt_error {
	HWT_EBASE = 1000,
	HWT_EINVAL,    /* caller mistake: bad argument or option */
	HWT_EINTERNAL, /* our own bug: an invariant does not hold */
	HWT_EFORMAT,   /* input file or stream is malformed */
	HWT_ETRUNC,    /* input ends before a structure is complete */
	HWT_EVERSION,  /* file format version we do not understand */
	HWT_ECHECKSUM, /* stored checksum does not match the data */
	HWT_ETOOBIG,   /* a size exceeds what the input or a limit allows */
	HWT_EEOS,      /* end of stream: nothing more to read (not a failure) */
	HWT_ENOTSUP,   /* valid but not supported here (CPU, kernel, build) */
	HWT_ENOEVENT,  /* unknown event or probe name */
	HWT_ENOSYM,    /* no symbol for an address or name */
	HWT_ENODEBUG,  /* no debug information for an object */
	HWT_ENOPT,     /* no Intel PT on this machine */
	HWT_EPARSE,    /* syntax error in a user expression or spec */
	HWT_ECOMPRESS, /* zstd failed to compress or decompress */
	HWT_EDECODE,   /* trace decoding failed (libipt error) */
	HWT_ELIB,      /* a third-party library failed for another reason */
	HWT_EDROPPED,  /* data was dropped (queue full, buffer overflow) */
	HWT_ELAST
};

/* Explains an error code (negative or positive) in a short phrase. The string
 * is static; never NULL. */
HWT_API const char *hwt_strerror(int err);

/* Diagnostics levels for the print callback. */
enum hwt_log_level {
	HWT_LOG_ERROR,
	HWT_LOG_WARN,
	HWT_LOG_INFO,
	HWT_LOG_DEBUG,
};

/* Libraries never print: they report through this callback, which the CLI
 * sets in each object's config. msg is a complete line without the newline;
 * it is only valid during the call. A NULL callback discards messages. */
typedef void (*hwt_log_fn)(void *ctx, enum hwt_log_level level, const char *msg);

struct hwt_logger {
	hwt_log_fn fn;
	void *ctx;
};

/* Formats and sends a message to logger (which may be NULL or have no fn). */
HWT_API void hwt_log(const struct hwt_logger *logger, enum hwt_log_level level, const char *fmt,
		     ...) __attribute__((format(printf, 3, 4)));
HWT_API void hwt_vlog(const struct hwt_logger *logger, enum hwt_log_level level, const char *fmt,
		      va_list ap) __attribute__((format(printf, 3, 0)));

/* Checked arithmetic on sizes and counts from files: returns 0 and stores the
 * result, or -HWT_ETOOBIG on overflow. */
static inline int hwt_add_size(size_t a, size_t b, size_t *out)
{
	if (__builtin_add_overflow(a, b, out))
		return -HWT_ETOOBIG;
	return 0;
}

static inline int hwt_mul_size(size_t a, size_t b, size_t *out)
{
	if (__builtin_mul_overflow(a, b, out))
		return -HWT_ETOOBIG;
	return 0;
}

/* Little-endian loads and stores for on-disk structures (hwtrace files are
 * little-endian; perf.data files are read in the writer's byte order, which
 * on x86 is the same). */
static inline uint16_t hwt_le16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] | (b[1] << 8));
}

static inline uint32_t hwt_le32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) |
	       ((uint32_t)b[3] << 24);
}

static inline uint64_t hwt_le64(const void *p)
{
	const uint8_t *b = p;
	return (uint64_t)hwt_le32(b) | ((uint64_t)hwt_le32(b + 4) << 32);
}

static inline void hwt_put_le16(void *p, uint16_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

static inline void hwt_put_le32(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

static inline void hwt_put_le64(void *p, uint64_t v)
{
	hwt_put_le32(p, (uint32_t)v);
	hwt_put_le32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

/* CRC-32C (Castagnoli) of len bytes, continuing from crc (start with 0). */
HWT_API uint32_t hwt_crc32c(uint32_t crc, const void *buf, size_t len);

/* Sized options structs (libbpf's rule). Every public config struct begins
 * with `size_t size`, which its _init() sets to the sizeof the caller was
 * built with. A library copies the caller's struct into its own with
 * hwt_opts_copy(): dst (dst_size bytes) holds the library's defaults and
 * is overwritten with the caller's first min(size, dst_size) bytes, so a
 * smaller struct from an older caller is accepted (the fields it does not
 * know keep their defaults), and a larger one from a newer caller is
 * accepted only when every byte beyond dst_size is zero (options this
 * library does not know must not be silently ignored). dst's size becomes
 * dst_size. Returns 0, or -HWT_EINVAL (src NULL, a size smaller than the
 * size field, or a non-zero byte beyond dst_size). A new field goes at the
 * end; one that starts in the old struct's tail padding is read from that
 * padding (zeroed by the old _init()), so its default there must be 0. */
HWT_API int hwt_opts_copy(void *dst, size_t dst_size, const void *src);

/* Loads the shared library soname on first use (dlopen, RTLD_NOW |
 * RTLD_LOCAL: for libraries that cost every process at start when linked)
 * and stores the address of each symbol names[i] in the function pointer
 * that slots[i] points to. Returns 0, or -HWT_ELIB when the library or a
 * symbol is missing (the slots are then unusable). The library stays
 * loaded. */
HWT_API int hwt_dl_load(const char *soname, const char *const *names, void *const *slots, size_t n);

/* Growable byte buffer for cold paths (metadata, text building). */
struct hwt_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

HWT_API void hwt_buf_init(struct hwt_buf *buf);
HWT_API void hwt_buf_fini(struct hwt_buf *buf);
/* Makes room for at least extra more bytes. Returns 0 or -ENOMEM/-HWT_ETOOBIG. */
HWT_API int hwt_buf_reserve(struct hwt_buf *buf, size_t extra);
/* Appends len bytes. Returns 0 or -ENOMEM/-HWT_ETOOBIG. */
HWT_API int hwt_buf_append(struct hwt_buf *buf, const void *data, size_t len);
/* Appends the whole file at path (read to its end: /proc files say size 0).
 * Returns 0 or -errno/-ENOMEM; on error buf holds what was read before. */
HWT_API int hwt_buf_read_file(struct hwt_buf *buf, const char *path);
/* Appends printf-formatted text (not NUL-counted in len, but NUL-terminated). */
HWT_API int hwt_buf_printf(struct hwt_buf *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* HWT_COMMON_HWT_H */
