#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench/bench_ptflame.sh - the exact flame graph of an Intel PT trace:
# `hwtrace flame` (every instruction attributed to its call stack) against
# `perf script --itrace=i100ig` (a sample every 100 instructions with a
# synthesized call chain, what perf users fold into flame graphs) on the
# same trace converted to perf.data with `hwtrace convert`. The trace is
# bench/ptflame_work.c recorded with the PT emulator, at two sizes 10x
# apart, to show time and peak RSS as the trace grows.
#
#   usage: bench/bench_ptflame.sh [BUILD_DIR] [ROUNDS]
#     BUILD_DIR  where hwtrace was built (default build)
#     ROUNDS     workload rounds of the large trace, ~1.2x10^6 instructions
#                each (default 100: ~1.2x10^8 instructions; 850: ~10^9);
#                the small trace has ROUNDS/10
#   HWT_CONVERT=/path/to/hwtrace  a hwtrace that has `convert`, when the
#                one under test does not have it yet
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-100}
H=$(cd "$build" && pwd)/cli/hwtrace
[ -x "$H" ] || { echo "no $H: build first (ninja -C $build hwtrace)"; exit 1; }
command -v qemu-x86_64 >/dev/null || { echo "qemu-x86_64 missing: the PT emulator cannot run (scripts/install-deps.sh)"; exit 1; }

tmp=$(mktemp -d /tmp/bench_ptflame.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
gcc -O2 -g -o "$tmp/work" bench/ptflame_work.c

# The converter: ours, else $HWT_CONVERT's; perf for the peer side.
conv=""
if "$H" convert --help >/dev/null 2>&1; then
    conv=$H
elif [ -n "${HWT_CONVERT:-}" ] && "$HWT_CONVERT" convert --help >/dev/null 2>&1; then
    conv=$HWT_CONVERT
fi
peer_reason=""
if [ -z "$conv" ]; then
    peer_reason="hwtrace convert is not in this build (branch 'convert' not merged; set HWT_CONVERT=/path/to/hwtrace with convert)"
elif ! command -v perf >/dev/null; then
    peer_reason="perf is not installed"
fi

# time_rss CMD...: runs CMD (stdout to /dev/null), prints "SECONDS KB".
time_rss() {
    /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || {
        echo "failed: $*" >&2; cat "$tmp/err" >&2; exit 1; }
    cat "$tmp/time"
}

printf '%-6s %12s %10s %10s %9s %9s %11s %11s\n' trace instructions "hwt flame" "perf i100ig" ratio \
    "PT MB" "hwt RSS MB" "perf RSS MB"
for r in $((rounds / 10)) "$rounds"; do
    [ "$r" -ge 1 ] || r=1
    t=$tmp/w$r.hwt
    "$H" record --pt=emulate -o "$t" -- "$tmp/work" "$r" 2>"$tmp/rec" >/dev/null
    insns=$(sed -n 's/.* \([0-9][0-9]*\) instructions.*/\1/p' "$tmp/rec")
    ptmb=$(sed -n 's/.* \([0-9.]*\) MB of PT.*/\1/p' "$tmp/rec")
    set -- $(time_rss "$H" flame -q -i "$t" -o "$tmp/w$r.svg")
    hs=$1 hk=$2
    ps="-" pk="-" ratio="-"
    if [ -z "$peer_reason" ]; then
        "$conv" convert -i "$t" -o "$tmp/w$r.data" >/dev/null 2>"$tmp/conv" || {
            echo "convert failed:"; cat "$tmp/conv"; exit 1; }
        set -- $(time_rss perf script -i "$tmp/w$r.data" --itrace=i100ig)
        ps=$1 pk=$2
        ratio=$(awk -v a="$ps" -v b="$hs" 'BEGIN { printf "%.1fx", (b > 0 ? a / b : 0) }')
    fi
    printf '%-6s %12s %9ss %10s %9s %9s %11s %11s\n' "r$r" "$insns" "$hs" \
        "$( [ "$ps" = - ] && echo - || echo "${ps}s")" "$ratio" "$ptmb" \
        "$(awk -v k="$hk" 'BEGIN { printf "%.1f", k / 1024 }')" \
        "$( [ "$pk" = - ] && echo - || awk -v k="$pk" 'BEGIN { printf "%.1f", k / 1024 }')"
done
echo
echo "ratio: perf script time / hwtrace flame time (higher: hwtrace faster)."
echo "hwtrace counts every instruction; perf --itrace=i100ig samples one in 100."
echo "commands:"
echo "  $H record --pt=emulate -o T.hwt -- bench/ptflame_work ROUNDS"
echo "  $H flame -q -i T.hwt -o T.svg"
if [ -n "$peer_reason" ]; then
    echo "peer not run: $peer_reason"
else
    echo "  $conv convert -i T.hwt -o T.data"
    echo "  perf script -i T.data --itrace=i100ig > /dev/null"
fi
