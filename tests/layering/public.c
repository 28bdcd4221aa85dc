/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* A module sees its own internal headers and the public headers of the
 * modules it links. */
#include "decoder/decoder.h"
#include "ptflow/ptf_int.h"
#include "ptflow/ptflow.h"
#include "report/report.h"

int layering_public(void);
int layering_public(void)
{
	return 0;
}
