#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench/bench_stat.sh - `hwtrace stat` against `perf stat` on the same
# workloads in the same run. For each workload both tools run it N times,
# alternating which goes first (both ways, so neither gains from a warm
# cache or CPU frequency), counting the same software events. Reported:
#   target  - the workload's own wall time as each tool prints it
#             ("seconds time elapsed": from release to exit)
#   total   - wall time of the whole tool invocation (start-up, event
#             setup, target, output), measured here
# and the ratios hwtrace/perf (1.00 = same; < 1 = hwtrace faster).
#   usage: bench/bench_stat.sh [BUILD_DIR] [N]
set -eu
build=${1:-build}
n=${2:-10}
hw=$build/cli/hwtrace
progs=$build/progs
events=task-clock,page-faults,context-switches,cpu-migrations
command -v perf >/dev/null || { echo "perf is not installed"; exit 1; }
[ -x "$hw" ] || { echo "build hwtrace first ($hw)"; exit 1; }

now() { date +%s%N; }

# run TOOL CMD...: prints "target_seconds total_seconds"
run() {
    tool=$1; shift
    t0=$(now)
    if [ "$tool" = perf ]; then
        out=$(perf stat -e $events -- "$@" 2>&1 >/dev/null)
    else
        out=$("$hw" stat -e $events -- "$@" 2>&1 >/dev/null)
    fi
    t1=$(now)
    tgt=$(printf '%s\n' "$out" | awk '/seconds time elapsed/ {print $1}')
    echo "$tgt $(( (t1 - t0) / 1000 ))"
}

printf '%-28s %12s %12s %7s %12s %12s %7s\n' workload "perf tgt s" "hwt tgt s" ratio \
    "perf tot ms" "hwt tot ms" ratio
bench() {
    name=$1; shift
    pt=0; ht=0; pT=0; hT=0
    i=0
    while [ $i -lt "$n" ]; do
        if [ $((i % 2)) -eq 0 ]; then
            p=$(run perf "$@"); h=$(run hwtrace "$@")
        else
            h=$(run hwtrace "$@"); p=$(run perf "$@")
        fi
        pt=$(echo "$pt ${p% *}" | awk '{print $1 + $2}')
        ht=$(echo "$ht ${h% *}" | awk '{print $1 + $2}')
        pT=$((pT + ${p#* })); hT=$((hT + ${h#* }))
        i=$((i + 1))
    done
    awk -v name="$name" -v n="$n" -v pt="$pt" -v ht="$ht" -v pT="$pT" -v hT="$hT" 'BEGIN {
        printf "%-28s %12.6f %12.6f %7.3f %12.2f %12.2f %7.3f\n", name, pt / n, ht / n,
               ht / pt, pT / n / 1000, hT / n / 1000, hT / pT }'
}

bench "pmc_touch 20000 (faults)" "$progs/pmc_touch" 20000
bench "pmc_spin 100 (cpu)" "$progs/pmc_spin" 100
bench "pmc_sleeper 100 (switches)" "$progs/pmc_sleeper" 100 500
bench "pmc_family 4 4 2000 (inherit)" "$progs/pmc_family" 4 4 2000
bench "true (start-up)" true
echo
echo "each row: mean of $n runs per tool, alternating order; events: $events"
echo "commands: perf stat -e $events -- CMD   vs   $hw stat -e $events -- CMD"
