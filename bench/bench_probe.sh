#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench/bench_probe.sh - the cost of one uprobe hit under `hwtrace trace`
# against `perf stat -e` on the same uprobe (perf probe -x) and bpftrace
# (Debian's package), same workload, same run.
#
# The workload (tests/progs/probe_calls.c, built by the project) calls
# probe_work() N times. Each tool counts the hits of a uprobe on it; each
# run is timed whole (start-up, setup, workload, output). The cost of a hit
# is the slope between a small and a large N, so start-up (bpftrace
# compiling its program, perf creating the probe) drops out:
#   cost = (time(N2) - time(N1)) / (N2 - N1)
# also for the workload alone (no probe), the floor. Each point is the
# median of R runs. Every tool's count is checked against N.
#   usage: bench/bench_probe.sh [BUILD_DIR] [N1] [N2] [R]
set -eu
build=${1:-build}
n1=${2:-20000}
n2=${3:-220000}
reps=${4:-3}
hw=$build/cli/hwtrace
prog=$(cd "$build/progs" 2>/dev/null && pwd)/probe_calls
[ -x "$hw" ] || { echo "build hwtrace first ($hw)"; exit 1; }
[ -x "$prog" ] || { echo "build the test programs first ($prog)"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "uprobes need root"; exit 1; }

now() { date +%s%N; }

# median of the arguments
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# time_run N CMD...: "wall_ns cpu_ns" for the command, each the median of
# reps runs. cpu is user + system time of the tool and everything it
# waited for (the workload, where the kernel's uprobe work is charged), from
# GNU time: unlike wall time it does not grow while a shared machine makes
# the workload wait for a CPU. The output of the last run is kept in the
# file $out (command substitution runs this in a subshell, so no variable
# could carry it back).
out=$(mktemp)
cpuf=$(mktemp)
trap 'rm -f "$out" "$cpuf"' EXIT
time_run() {
    n=$1; shift
    ws=""
    cs=""
    i=0
    while [ $i -lt "$reps" ]; do
        t0=$(now)
        /usr/bin/time -f '%U %S' -o "$cpuf" "$@" >"$out" 2>&1 ||
            { echo "failed: $*" >&2; cat "$out" >&2; exit 1; }
        t1=$(now)
        ws="$ws $((t1 - t0))"
        cs="$cs $(awk '{ printf "%.0f", ($1 + $2) * 1e9 }' "$cpuf")"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    echo "$(median $ws) $(median $cs)"
}

check() { # tool expected got
    if [ "$2" != "$3" ]; then
        echo "$1 counted $3 hits, expected $2"; exit 1
    fi
}

echo "workload: $prog N (probe_work called N times), N1=$n1 N2=$n2, median of $reps"
echo

base1=$(time_run $n1 "$prog" $n1)
base2=$(time_run $n2 "$prog" $n2)

# a plain count is counted in the kernel (no samples), as perf stat does
h1=$(time_run $n1 "$hw" trace "uprobe:$prog:probe_work { @hits = count() }" -- "$prog" $n1); check hwtrace $n1 "$(awk '/^@hits/ {getline; print $1}' "$out")"
h2=$(time_run $n2 "$hw" trace "uprobe:$prog:probe_work { @hits = count() }" -- "$prog" $n2); check hwtrace $n2 "$(awk '/^@hits/ {getline; print $1}' "$out")"
# a predicate on an argument: every hit is a sample (registers) read from
# the ring buffer and run through the predicate in hwtrace
s1=$(time_run $n1 "$hw" trace "uprobe:$prog:probe_work /arg1 == 7/ { @hits = count() }" -- "$prog" $n1); check hwtrace-sampled $n1 "$(awk '/^@hits/ {getline; print $1}' "$out")"
s2=$(time_run $n2 "$hw" trace "uprobe:$prog:probe_work /arg1 == 7/ { @hits = count() }" -- "$prog" $n2); check hwtrace-sampled $n2 "$(awk '/^@hits/ {getline; print $1}' "$out")"

perf_ok=0
p1=""; p2=""
if command -v perf >/dev/null; then
    perf probe -q -d 'probe_probe_calls:*' >/dev/null 2>&1 || true
    if perf probe -q -x "$prog" probe_work >/dev/null 2>&1; then
        p1=$(time_run $n1 perf stat -x, -e probe_probe_calls:probe_work -- "$prog" $n1); check perf $n1 "$(awk -F, '/probe_work/ {print $1}' "$out")"
        p2=$(time_run $n2 perf stat -x, -e probe_probe_calls:probe_work -- "$prog" $n2); check perf $n2 "$(awk -F, '/probe_work/ {print $1}' "$out")"
        perf probe -q -d 'probe_probe_calls:*' >/dev/null 2>&1 || true
        perf_ok=1
    fi
fi

bt_ok=0
b1=""; b2=""
if command -v bpftrace >/dev/null && bpftrace -e 'BEGIN { exit() }' >/dev/null 2>&1; then
    b1=$(time_run $n1 bpftrace -e "uprobe:$prog:probe_work { @hits = count() }" -c "$prog $n1"); check bpftrace $n1 "$(awk '/^@hits:/ {print $2}' "$out")"
    b2=$(time_run $n2 bpftrace -e "uprobe:$prog:probe_work { @hits = count() }" -c "$prog $n2"); check bpftrace $n2 "$(awk '/^@hits:/ {print $2}' "$out")"
    c1=$(time_run $n1 bpftrace -e "uprobe:$prog:probe_work /arg1 == 7/ { @hits = count() }" -c "$prog $n1"); check bpftrace-pred $n1 "$(awk '/^@hits:/ {print $2}' "$out")"
    c2=$(time_run $n2 bpftrace -e "uprobe:$prog:probe_work /arg1 == 7/ { @hits = count() }" -c "$prog $n2"); check bpftrace-pred $n2 "$(awk '/^@hits:/ {print $2}' "$out")"
    bt_ok=1
fi

dn=$((n2 - n1))
# per_hit FIELD A B: ns per call from the two runs' field (1 wall, 2 cpu)
per_hit() { awk -v f="$1" -v a="$2" -v b="$3" -v n="$dn" \
    'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.0f", (y[f] - x[f]) / n }'; }
ms() { awk -v t="$1" 'BEGIN { split(t, x, " "); printf "%.0f", x[1] / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# row NAME A B REF_WALL REF_CPU: wall and cpu ns per hit (minus the bare
# workload's) and the ratios to the reference row's
row() {
    w=$(( $(per_hit 1 "$2" "$3") - basew )); c=$(( $(per_hit 2 "$2" "$3") - basec ))
    printf '%-13s %10s %10s %12s %12s %9s %9s\n' "$1" "$(ms "$2")" "$(ms "$3")" "$w" "$c" \
        "$( [ -n "$4" ] && ratio "$w" "$4" || echo 1.00)" "$( [ -n "$5" ] && ratio "$c" "$5" || echo 1.00)"
}
basew=$(per_hit 1 "$base1" "$base2"); basec=$(per_hit 2 "$base1" "$base2")
printf '%-13s %10s %10s %12s %12s %9s %9s\n' tool "N1 (ms)" "N2 (ms)" "wall ns/hit" "cpu ns/hit" "wall/hw" "cpu/hw"
printf '%-13s %10s %10s %12s %12s %9s %9s\n' none "$(ms "$base1")" "$(ms "$base2")" "($basew/call)" "($basec/call)" - -
hww=$(( $(per_hit 1 "$h1" "$h2") - basew )); hwc=$(( $(per_hit 2 "$h1" "$h2") - basec ))
hsw=$(( $(per_hit 1 "$s1" "$s2") - basew )); hsc=$(( $(per_hit 2 "$s1" "$s2") - basec ))
row hwtrace "$h1" "$h2" "" ""
row "hwtrace /p/" "$s1" "$s2" "" ""
if [ $perf_ok = 1 ]; then
    row "perf stat" "$p1" "$p2" "$hww" "$hwc"
else
    echo "perf stat: perf probe -x does not work here (skipped)"
fi
if [ $bt_ok = 1 ]; then
    row bpftrace "$b1" "$b2" "$hww" "$hwc"
    row "bpftrace /p/" "$c1" "$c2" "$hsw" "$hsc"
else
    echo "bpftrace: not installed or does not run on this kernel (skipped)"
fi
echo
echo "ns/hit = ns per call with the probe - ns per call without (slope between N1 and N2);"
echo "cpu: user+sys of tool and workload; ratios > 1: the peer pays more per hit than"
echo "hwtrace (the /p/ rows, with the predicate /arg1 == 7/, against 'hwtrace /p/')."
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). Commands:"
echo "  $hw trace 'uprobe:$prog:probe_work { @hits = count() }' -- $prog N"
echo "  $hw trace 'uprobe:$prog:probe_work /arg1 == 7/ { @hits = count() }' -- $prog N"
echo "  perf probe -x $prog probe_work; perf stat -x, -e probe_probe_calls:probe_work -- $prog N"
echo "  bpftrace -e 'uprobe:$prog:probe_work { @hits = count() }' -c '$prog N'"
