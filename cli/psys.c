/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cli/psys.c - the perf system-call backend of a run: the real kernel, or
 * the simulated machines the environment asks for (HWT_PMU_SIM=MODEL and
 * the other backends modules offer), and the sysfs and perf_event_paranoid
 * paths that go with it.
 */
#include "cli/cli.h"

#include <stdlib.h>

#include "collector/collector.h"
#include "perfsys/perfsys.h"

int hwt_cli_psys_open(struct hwt_psys **ps)
{
	const struct hwt_psys_backend *extra[] = {hwt_coll_ptsim_backend()};
	char msg[512];
	int err = hwt_psys_open_env(ps, extra, HWT_ARRAY_SIZE(extra), msg, sizeof(msg));

	if (err < 0) {
		hwt_cli_error("%s", msg[0] ? msg : hwt_strerror(err));
		return HWT_EXIT_ERROR;
	}
	return HWT_EXIT_OK;
}

const char *hwt_cli_sysfs_root(const struct hwt_psys *ps)
{
	const char *env = getenv("HWT_SYSFS_ROOT");

	return env ? env : hwt_psys_sysfs_root(ps);
}

const char *hwt_cli_paranoid_path(const struct hwt_psys *ps)
{
	const char *env = getenv("HWT_PERF_PARANOID_FILE");

	return env ? env : hwt_psys_paranoid_path(ps);
}
