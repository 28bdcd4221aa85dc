/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* A module may not include another module's internal header. */
#include "decoder/dec_int.h"
#include "ptflow/ptflow.h"

int layering_internal(void);
int layering_internal(void)
{
	return 0;
}
