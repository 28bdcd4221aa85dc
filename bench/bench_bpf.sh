#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench/bench_bpf.sh - live probes at high rates: hwtrace's BPF path (and
# its sampling path, --no-bpf) against bpftrace (Debian's package) on the
# same workload, same run:
#   1. N1 (2,000,000) tracepoint hits aggregated by thread:
#        syscalls:sys_enter_getppid /pid == $target/ { @[tid] = count() }
#   2. N2 (1,000,000) uprobe hits counted by argument:
#        uprobe:bpf_work:bpf_work_call { @[arg1] = count() }
#   3. N3 (200,000) calls timed with a uretprobe into a histogram:
#        entry: self->ts = nsecs   return: @ns = quantize(nsecs - self->ts)
#      (bpftrace: @ts[tid] = nsecs ... hist(nsecs - @ts[tid]); delete)
# The workload (bench/bpf_work.c, built by the project) makes exactly that
# many calls; every tool's count is checked against it ("lost": hits
# missing from the aggregation or reported lost). CPU is user + system
# time of the tool and the workload it launched (GNU time: the kernel's
# probe work is charged to them), the median of R runs; start-up is the
# wall time of a run whose workload makes no call (the tool's set-up and
# tear-down: compiling, loading, attaching, printing).
#   usage: bench/bench_bpf.sh [BUILD_DIR] [R] [N1] [N2] [N3]
set -eu
build=${1:-build}
reps=${2:-3}
n1=${3:-2000000}
n2=${4:-1000000}
n3=${5:-200000}
hw=$(cd "$(dirname "$build/cli/hwtrace")" && pwd)/hwtrace
work=$(cd "$build/bench" 2>/dev/null && pwd)/bpf_work
[ -x "$hw" ] || { echo "build hwtrace first ($hw)"; exit 1; }
[ -x "$work" ] || { echo "build bench/bpf_work first ($work)"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "BPF and uprobes need root"; exit 1; }
command -v bpftrace >/dev/null || { echo "bpftrace is not installed"; exit 1; }

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

out=$(mktemp)
tf=$(mktemp)
trap 'rm -f "$out" "$tf"' EXIT

# run CMD...: sets W (wall s), C (cpu s), medians of reps runs; the last
# run's output stays in $out
run() {
    ws=""
    cs=""
    i=0
    while [ $i -lt "$reps" ]; do
        /usr/bin/time -f '%e %U %S' -o "$tf" "$@" >"$out" 2>&1 ||
            { echo "failed: $*" >&2; cat "$out" >&2; exit 1; }
        ws="$ws $(awk '{print $1}' "$tf")"
        cs="$cs $(awk '{printf "%.2f", $2 + $3}' "$tf")"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    W=$(median $ws)
    # shellcheck disable=SC2086
    C=$(median $cs)
}

# counted: the sum of an aggregation's values in $out, either tool's layout
#   hwtrace:  "@name...: count()" then "  KEY  VALUE" rows (or "  VALUE")
#   bpftrace: "@name[KEY]: VALUE" or "@name: VALUE"
hw_sum() { # name
    awk -v n="@$1" 'index($0, n) == 1 && /: count\(\)$/ {on = 1; next}
        on && NF == 0 {on = 0} on {s += $NF} END {print s + 0}' "$out"
}
bt_sum() { # name
    awk -v n="@$1" 'index($0, n "[") == 1 || index($0, n ":") == 1 {s += $NF}
        END {print s + 0}' "$out"
}
lost_of() { # expected counted
    awk -v e="$1" -v c="$2" 'BEGIN {print e - c}'
}

row() { # label expected-hits counted startup
    printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$W" "$C" "$(lost_of "$2" "$3")" "$4" "$5"
}

echo "hwtrace $("$hw" --version | awk '{print $2}') against $(bpftrace --version), $(nproc) CPUs, median of $reps runs"
echo "workload: $work"
echo

tp_hw='syscalls:sys_enter_getppid /pid == $target/ { @[tid] = count() }'
tp_bt='tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[tid] = count() }'
up_hw="uprobe:$work:bpf_work_call { @[arg1] = count() }"
up_bt="uprobe:$work:bpf_work_call { @[arg1] = count() }"
lat_hw="uprobe:$work:bpf_work_call { self->ts = nsecs } uretprobe:$work:bpf_work_call /self->ts/ { @ns = quantize(nsecs - self->ts); @n = count(); self->ts = 0 }"
lat_bt="uprobe:$work:bpf_work_call { @ts[tid] = nsecs } uretprobe:$work:bpf_work_call /@ts[tid]/ { @ns = hist(nsecs - @ts[tid]); @n = count(); delete(@ts[tid]) }"

echo "| run | wall s | CPU s (tool + workload) | hits lost | start-up s | vs bpftrace (CPU, start-up) |"
echo "|---|---|---|---|---|---|"

bench() { # label n mode hwprog btprog hwname btname
    label=$1 n=$2 mode=$3 hwp=$4 btp=$5 hname=$6 bname=$7
    run "$hw" trace "$hwp" -- "$work" "$mode" 0; hs=$W
    run "$hw" trace --no-bpf "$hwp" -- "$work" "$mode" 0; ss=$W
    run bpftrace -e "$btp" -c "$work $mode 0"; bs=$W

    run "$hw" trace "$hwp" -- "$work" "$mode" "$n"; hw_w=$W hw_c=$C; hc=$(hw_sum "$hname")
    if grep -q "sampling path" "$out"; then echo "hwtrace fell back: $(grep 'sampling path' "$out")"; fi
    run "$hw" trace --no-bpf "$hwp" -- "$work" "$mode" "$n"; sm_w=$W sm_c=$C; sc=$(hw_sum "$hname")
    sl=$(awk '/probe hits were lost/ {print $3}' "$out")
    run bpftrace -e "$btp" -c "$work $mode $n"; bt_w=$W bt_c=$C; bc=$(bt_sum "$bname")

    W=$hw_w C=$hw_c
    row "$label: hwtrace (BPF)" "$n" "$hc" "$hs" \
        "$(awk -v a="$hw_c" -v b="$bt_c" -v c="$hs" -v d="$bs" 'BEGIN {printf "%.2fx, %.2fx", a / b, c / d}')"
    W=$sm_w C=$sm_c
    row "$label: hwtrace --no-bpf" "$n" "$sc" "$ss" \
        "$(awk -v a="$sm_c" -v b="$bt_c" -v c="$ss" -v d="$bs" 'BEGIN {printf "%.2fx, %.2fx", a / b, c / d}')${sl:+ ($sl reported lost)}"
    W=$bt_w C=$bt_c
    row "$label: bpftrace" "$n" "$bc" "$bs" "1.00x, 1.00x"
}

bench "$n1 tracepoint hits by tid" "$n1" getppid "$tp_hw" "$tp_bt" "" ""
bench "$n2 uprobe hits by argument" "$n2" calls "$up_hw" "$up_bt" "" ""
bench "$n3 uretprobe latencies, quantize" "$n3" calls "$lat_hw" "$lat_bt" "n" "n"

echo
echo "hwtrace: $hw trace 'PROGRAM' -- $work MODE N   (--no-bpf: the sampling path)"
echo "bpftrace: bpftrace -e 'PROGRAM' -c '$work MODE N'"
echo "programs:"
echo "  1. $tp_hw"
echo "     $tp_bt"
echo "  2. $up_hw"
echo "  3. $lat_hw"
echo "     $lat_bt"
