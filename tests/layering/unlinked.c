/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* A module sees only the public headers of the modules it links: the
 * decoder is pure and does not link format. */
#include "decoder/dec_int.h"
#include "format/format.h"

int layering_unlinked(void);
int layering_unlinked(void)
{
	return 0;
}
