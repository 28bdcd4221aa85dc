/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * format/layout.c - encoding and checking of the container's fixed-size
 * structures (file header and chunk header), shared by the writer and the
 * reader so that both sides agree byte for byte. The layout is described in
 * format_int.h and docs/container.md.
 */
#include "format/format_int.h"

#include <string.h>

void fmt_chunk_header_encode(uint8_t out[HWT_FMT_CHUNK_HEADER_SIZE],
			     const struct fmt_chunk_header *h)
{
	memset(out, 0, HWT_FMT_CHUNK_HEADER_SIZE);
	hwt_put_le32(out + FMT_CH_MAGIC, FMT_CHUNK_MAGIC);
	hwt_put_le16(out + FMT_CH_TYPE, (uint16_t)h->type);
	hwt_put_le16(out + FMT_CH_FLAGS, (uint16_t)h->flags);
	hwt_put_le32(out + FMT_CH_STREAM, h->stream);
	hwt_put_le32(out + FMT_CH_RAW_SIZE, h->raw_size);
	hwt_put_le32(out + FMT_CH_STORED_SIZE, h->stored_size);
	hwt_put_le32(out + FMT_CH_PAYLOAD_CRC, h->payload_crc);
	hwt_put_le64(out + FMT_CH_AUX_OFFSET, h->aux_offset);
	hwt_put_le32(out + FMT_CH_CRC, hwt_crc32c(0, out, FMT_CH_CRC));
}

int fmt_chunk_header_decode(const uint8_t in[HWT_FMT_CHUNK_HEADER_SIZE], struct fmt_chunk_header *h)
{
	if (hwt_le32(in + FMT_CH_MAGIC) != FMT_CHUNK_MAGIC)
		return -HWT_EFORMAT;
	if (hwt_le32(in + FMT_CH_CRC) != hwt_crc32c(0, in, FMT_CH_CRC))
		return -HWT_ECHECKSUM;
	h->type = hwt_le16(in + FMT_CH_TYPE);
	h->flags = hwt_le16(in + FMT_CH_FLAGS);
	h->stream = hwt_le32(in + FMT_CH_STREAM);
	h->raw_size = hwt_le32(in + FMT_CH_RAW_SIZE);
	h->stored_size = hwt_le32(in + FMT_CH_STORED_SIZE);
	h->payload_crc = hwt_le32(in + FMT_CH_PAYLOAD_CRC);
	h->aux_offset = hwt_le64(in + FMT_CH_AUX_OFFSET);
	/* Unknown flag bits would change how the payload is read: refuse. */
	if (h->flags & ~FMT_CHUNK_KNOWN_FLAGS)
		return -HWT_EFORMAT;
	if (h->raw_size > FMT_CHUNK_MAX || h->stored_size > FMT_CHUNK_MAX)
		return -HWT_ETOOBIG;
	if (h->flags & FMT_CHUNK_RAW) {
		if (h->raw_size != h->stored_size)
			return -HWT_EFORMAT;
	} else if ((uint64_t)h->raw_size > (uint64_t)h->stored_size * FMT_ZSTD_MAX_RATIO) {
		return -HWT_ETOOBIG;
	}
	return 0;
}

void fmt_file_header_encode(uint8_t out[HWT_FMT_FILE_HEADER_SIZE], uint32_t flags,
			    uint64_t ctime_ns)
{
	memset(out, 0, HWT_FMT_FILE_HEADER_SIZE);
	memcpy(out, HWT_FMT_MAGIC, 8);
	hwt_put_le16(out + FMT_FH_VERSION_MAJOR, HWT_FMT_VERSION_MAJOR);
	hwt_put_le16(out + FMT_FH_VERSION_MINOR, HWT_FMT_VERSION_MINOR);
	hwt_put_le32(out + FMT_FH_FLAGS, flags);
	hwt_put_le32(out + FMT_FH_HEADER_SIZE, HWT_FMT_FILE_HEADER_SIZE);
	hwt_put_le32(out + FMT_FH_CHUNK_HEADER_SIZE, HWT_FMT_CHUNK_HEADER_SIZE);
	hwt_put_le64(out + FMT_FH_CTIME, ctime_ns);
	hwt_put_le32(out + FMT_FH_CRC, hwt_crc32c(0, out, FMT_FH_CRC));
}
