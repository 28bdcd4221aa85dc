#!/bin/sh
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

# time_run N CMD...: ns for the command (median of reps); the output of
# the last run is kept in the file $out (command substitution runs this in
# a subshell, so no variable could carry it back).
out=$(mktemp)
trap 'rm -f "$out"' EXIT
time_run() {
    n=$1; shift
    ts=""
    i=0
    while [ $i -lt "$reps" ]; do
        t0=$(now)
        "$@" >"$out" 2>&1 || { echo "failed: $*" >&2; cat "$out" >&2; exit 1; }
        t1=$(now)
        ts="$ts $((t1 - t0))"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    median $ts
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
hw_cmd() { "$hw" trace "uprobe:$prog:probe_work { @hits = count() }" -- "$prog" "$1"; }
h1=$(time_run $n1 hw_cmd $n1); check hwtrace $n1 "$(awk '/^@hits/ {getline; print $1}' "$out")"
h2=$(time_run $n2 hw_cmd $n2); check hwtrace $n2 "$(awk '/^@hits/ {getline; print $1}' "$out")"
# a predicate on an argument: every hit is a sample (registers) read from
# the ring buffer and run through the predicate in hwtrace
hws_cmd() { "$hw" trace "uprobe:$prog:probe_work /arg1 == 7/ { @hits = count() }" -- "$prog" "$1"; }
s1=$(time_run $n1 hws_cmd $n1); check hwtrace-sampled $n1 "$(awk '/^@hits/ {getline; print $1}' "$out")"
s2=$(time_run $n2 hws_cmd $n2); check hwtrace-sampled $n2 "$(awk '/^@hits/ {getline; print $1}' "$out")"

perf_ok=0
p1=""; p2=""
if command -v perf >/dev/null; then
    perf probe -q -d 'probe_probe_calls:*' >/dev/null 2>&1 || true
    if perf probe -q -x "$prog" probe_work >/dev/null 2>&1; then
        perf_cmd() { perf stat -x, -e probe_probe_calls:probe_work -- "$prog" "$1"; }
        p1=$(time_run $n1 perf_cmd $n1); check perf $n1 "$(awk -F, '/probe_work/ {print $1}' "$out")"
        p2=$(time_run $n2 perf_cmd $n2); check perf $n2 "$(awk -F, '/probe_work/ {print $1}' "$out")"
        perf probe -q -d 'probe_probe_calls:*' >/dev/null 2>&1 || true
        perf_ok=1
    fi
fi

bt_ok=0
b1=""; b2=""
if command -v bpftrace >/dev/null && bpftrace -e 'BEGIN { exit() }' >/dev/null 2>&1; then
    bt_cmd() { bpftrace -e "uprobe:$prog:probe_work { @hits = count() }" -c "$prog $1"; }
    b1=$(time_run $n1 bt_cmd $n1); check bpftrace $n1 "$(awk '/^@hits:/ {print $2}' "$out")"
    b2=$(time_run $n2 bt_cmd $n2); check bpftrace $n2 "$(awk '/^@hits:/ {print $2}' "$out")"
    btp_cmd() { bpftrace -e "uprobe:$prog:probe_work /arg1 == 7/ { @hits = count() }" -c "$prog $1"; }
    c1=$(time_run $n1 btp_cmd $n1); check bpftrace-pred $n1 "$(awk '/^@hits:/ {print $2}' "$out")"
    c2=$(time_run $n2 btp_cmd $n2); check bpftrace-pred $n2 "$(awk '/^@hits:/ {print $2}' "$out")"
    bt_ok=1
fi

dn=$((n2 - n1))
per_hit() { awk -v a="$1" -v b="$2" -v n="$dn" 'BEGIN { printf "%.0f", (b - a) / n }'; }
ms() { awk -v t="$1" 'BEGIN { printf "%.0f", t / 1e6 }'; }

base=$(per_hit "$base1" "$base2")
hwc=$(per_hit "$h1" "$h2")
printf '%-10s %12s %12s %14s %14s %10s\n' tool "run N1 (ms)" "run N2 (ms)" "ns per call" "ns per hit" "vs hwtrace"
printf '%-10s %12s %12s %14s %14s %10s\n' none "$(ms "$base1")" "$(ms "$base2")" "$base" "-" "-"
hwhit=$((hwc - base))
printf '%-10s %12s %12s %14s %14s %10s\n' hwtrace "$(ms "$h1")" "$(ms "$h2")" "$hwc" "$hwhit" "1.00"
swc=$(per_hit "$s1" "$s2"); swhit=$((swc - base))
printf '%-10s %12s %12s %14s %14s %10s\n' "hwtrace /p/" "$(ms "$s1")" "$(ms "$s2")" "$swc" "$swhit" \
    "$(awk -v a="$swhit" -v b="$hwhit" 'BEGIN { printf "%.2f", a / b }')"
if [ $perf_ok = 1 ]; then
    pc=$(per_hit "$p1" "$p2"); ph=$((pc - base))
    printf '%-10s %12s %12s %14s %14s %10s\n' "perf stat" "$(ms "$p1")" "$(ms "$p2")" "$pc" "$ph" \
        "$(awk -v a="$ph" -v b="$hwhit" 'BEGIN { printf "%.2f", a / b }')"
else
    echo "perf stat: perf probe -x does not work here (skipped)"
fi
if [ $bt_ok = 1 ]; then
    bc=$(per_hit "$b1" "$b2"); bh=$((bc - base))
    printf '%-10s %12s %12s %14s %14s %10s\n' bpftrace "$(ms "$b1")" "$(ms "$b2")" "$bc" "$bh" \
        "$(awk -v a="$bh" -v b="$hwhit" 'BEGIN { printf "%.2f", a / b }')"
    cc=$(per_hit "$c1" "$c2"); ch=$((cc - base))
    printf '%-10s %12s %12s %14s %14s %10s\n' "bpftrace /p/" "$(ms "$c1")" "$(ms "$c2")" "$cc" "$ch" \
        "$(awk -v a="$ch" -v b="$swhit" 'BEGIN { printf "%.2f", a / b }')"
else
    echo "bpftrace: not installed or does not run on this kernel (skipped)"
fi
echo
echo "ns per hit = ns per call with the probe - ns per call without; 'vs hwtrace' > 1: the"
echo "peer pays more per hit (the /p/ rows, with the predicate /arg1 == 7/, compare with"
echo "'hwtrace /p/'). Commands:"
echo "  $hw trace 'uprobe:$prog:probe_work { @hits = count() }' -- $prog N"
echo "  $hw trace 'uprobe:$prog:probe_work /arg1 == 7/ { @hits = count() }' -- $prog N"
echo "  perf probe -x $prog probe_work; perf stat -x, -e probe_probe_calls:probe_work -- $prog N"
echo "  bpftrace -e 'uprobe:$prog:probe_work { @hits = count() }' -c '$prog N'"
