#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Lists what the last ctest run in BUILD_DIR skipped, case by case with the
# reason each test printed ("SKIP: ..."), and how many. A test program that
# skipped a case exits 77 and ctest counts it as skipped (SKIP_RETURN_CODE),
# never as passed; tests skip only for the environment (no Intel PT, no
# hardware counters, no kprobe PMU, a tool missing), never because hwtrace
# failed.
#   scripts/skipped.sh BUILD_DIR
set -eu
log="${1:?usage: scripts/skipped.sh BUILD_DIR}/Testing/Temporary/LastTest.log"
[ -f "$log" ] || { echo "skipped.sh: no ctest log in $1" >&2; exit 1; }
awk '
/^[0-9]+\/[0-9]+ Testing: / { test = $3; next }
/^SKIP: / { reason = substr($0, 7); next }
/^\[  SKIPPED \] / && reason != "" {
	lines[++n] = sprintf("  %s %s: %s", test, $4, reason)
	if (!(test in progs)) { progs[test] = 1; nprogs++ }
	reason = ""
}
END {
	if (!n) { print "skipped: none"; exit }
	printf "skipped: %d case(s) in %d test program(s), for this machine:\n", n, nprogs
	for (i = 1; i <= n; i++) print lines[i]
}' "$log"
