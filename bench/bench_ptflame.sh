#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench/bench_ptflame.sh - the PT decode benchmark table: hwtrace against
# the peer tools on the same traces, same run.
#
# Rows:
#   - the real traces of tests/data/real-pt (written by a CPU): the plain
#     libipt block-decoder loop (what ptxed does) against hwtrace's FAST
#     engine (bench_decoder --raw), with ptxed's own instruction count;
#     avscript_32 20 times over as one stream (2 MB of real PT);
#   - emulated traces of bench/ptshape_work.c (a call-heavy and a
#     loop-heavy program) and bench/ptflame_work.c, each in the emulator's
#     default shape and in real-shaped variants (the packets real CPUs
#     write, see SHAPES below and docs/pt-emulator.md): the libipt loop
#     against FAST with a record per call (rec/call) and into the call
#     tree (hwt tree) (bench_decoder --hwt, CPU time), and `hwtrace flame`
#     (every instruction attributed to its stack) against `perf script
#     --itrace=i100ig` on the same trace converted to perf.data (`hwtrace
#     convert`), wall time and peak RSS of each process.
#
#   usage: bench/bench_ptflame.sh [BUILD_DIR] [MILLIONS] [RUNS]
#     BUILD_DIR  where hwtrace and the benchmarks were built (default build)
#     MILLIONS   size of the emulated traces in 10^6 instructions
#                (default 100: 10^8 instructions each)
#     RUNS       best of RUNS for the in-process decoders (default 3)
#   HWT_BENCH_SHAPES="name:terms ..."  the shapes to record (default: all
#                of SHAPES below); terms are `--pt=emulate,TERMS`, where
#                %F stands for the workload's address filter (FILTERS)
#   HWT_BENCH_WORK="calls loops flame"  the workloads (default: all)
#   HWT_BENCH_NOPERF=1  leaves perf out (faster runs while tuning)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
millions=${2:-100}
runs=${3:-3}
H=$(cd "$build" && pwd)/cli/hwtrace
B=$(cd "$build" && pwd)/bench/bench_decoder
[ -x "$H" ] && [ -x "$B" ] || { echo "no $H or $B: build first (ninja -C $build)"; exit 1; }
command -v qemu-x86_64 >/dev/null || { echo "qemu-x86_64 missing: the PT emulator cannot run (scripts/install-deps.sh installs qemu-user)"; exit 1; }

# Shapes: the emulator's default (a PSB+ every 16 KiB, user-only), then
# what the real traces show: MODE.TSX and PIP in every PSB+, PSBs every 256
# bytes, PSB+ runs while tracing is off (real); an IP filter on one hot
# function, with TIP.PGD/PGE at its crossings (filter); and all of it with
# kAFL's VM entries, a PSB+ with FUP then TIP.PGE at each return to user
# space (kafl).
SHAPES=${HWT_BENCH_SHAPES:-"default:- real:real filter:filter=%F kafl:real,vmentry,filter=%F"}
# The filtered function of each workload: recursive, and calling out of
# its range (calls, flame), or a loop entered once per round (loops).
filter_of() {
    case $1 in
    calls) echo "filter deep @ $tmp/shape" ;;
    loops) echo "filter row_sum @ $tmp/shape" ;;
    flame) echo "filter eval @ $tmp/flame" ;;
    esac
}
WORK=${HWT_BENCH_WORK:-"calls loops flame"}
peer_reason=""
if [ -n "${HWT_BENCH_NOPERF:-}" ]; then
    peer_reason="HWT_BENCH_NOPERF is set"
elif ! command -v perf >/dev/null; then
    peer_reason="perf is not installed"
fi

tmp=$(mktemp -d /tmp/bench_ptflame.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
gcc -O2 -g -o "$tmp/shape" bench/ptshape_work.c
gcc -O2 -g -o "$tmp/flame" bench/ptflame_work.c

# time_rss CMD...: runs CMD (stdout to /dev/null), prints "SECONDS KB
# CPU_SECONDS" (wall time, peak RSS, user + system time).
time_rss() {
    /usr/bin/time -f "%e %M %U %S" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || {
        echo "failed: $*" >&2; cat "$tmp/err" >&2; exit 1; }
    awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }' "$tmp/time"
}
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
# A time or count of "-" (a decoder bench_decoder did not run, under
# HWT_BENCH_ONLY) stays "-", and so does a ratio with it.
ratio() {
    case "$1$2" in
    *-*) printf -- - ;;
    *) awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else printf "-" }' ;;
    esac
}
# secs T: T seconds, in microseconds below a millisecond; s3 T: to 1 ms.
secs() {
    case $1 in
    -) printf -- - ;;
    *) awk -v t="$1" 'BEGIN { if (t < 0.001) printf "%.1fus", t * 1e6; else printf "%.4fs", t }' ;;
    esac
}
s3() {
    case $1 in
    -) printf -- - ;;
    *) awk -v t="$1" 'BEGIN { printf "%.3fs", t }' ;;
    esac
}
# field NAME FILE: the value of NAME=... on bench_decoder's result line.
field() { sed -n "s/^result .* $1=\([^ ]*\).*/\1/p" "$2"; }

rows=$tmp/rows
: >"$rows"

# Real traces: no sideband, so no perf.data for perf script. real_row DIR
# LABEL N: the trace N times over as one stream (HWT_BENCH_CONCAT; ptxed's
# count is then N times its own plus one instruction per join).
real_row() {
    d=$1 n=$2 k=$3
    HWT_BENCH_CONCAT=$k "$B" --raw "$d" "$runs" >"$tmp/raw.$n" || { cat "$tmp/raw.$n"; exit 1; }
    cat "$tmp/raw.$n" >>"$tmp/log"
    ptxed=$(sed -n 's/.*ptxed.s own output lists \([0-9]*\) instructions.*/\1/p' "$tmp/raw.$n")
    ptxed=$((ptxed * k + k - 1))
    lib=$(field libipt_loop "$tmp/raw.$n")
    fast=$(field fast "$tmp/raw.$n")
    printf '%-22s %-8s %15s %8s %10s %10s %7s %9s %7s %10s %8s %8s %7s %8s %8s %7s %8s %8s\n' \
        "real-pt/$n" real "$(field fast_insns "$tmp/raw.$n")/$ptxed" \
        "$(awk -v b="$(stat -c %s "$d/trace.pt")" -v k="$k" 'BEGIN { printf "%.2f", b * k / 1e6 }')" \
        "$(secs "$lib")" "$(secs "$fast")" "$(ratio "$lib" "$fast")" - - \
        "$(field segments "$tmp/raw.$n")/$(field fallback "$tmp/raw.$n")" - - - - - - - - >>"$rows"
}
for d in tests/data/real-pt/*/; do
    [ -f "$d/trace.pt" ] || continue
    real_row "$d" "$(basename "$d")" 1
done
# 2 MB of real PT: avscript_32 20 times over (its trace ends on a packet
# boundary; dyn_test's ends inside a PSB+ and does not join soundly).
if [ -f tests/data/real-pt/avscript_32/trace.pt ]; then
    real_row tests/data/real-pt/avscript_32/ avscript_32x20 20
fi

for w in $WORK; do
    case $w in
    calls | loops) prog="$tmp/shape $w $millions" ;;
    flame) prog="$tmp/flame $(( millions * 10 / 12 > 0 ? millions * 10 / 12 : 1 ))" ;;
    *) echo "unknown workload $w"; exit 1 ;;
    esac
    for s in $SHAPES; do
        name=${s%%:*} terms=${s#*:}
        terms=$(printf '%s' "$terms" | sed "s|%F|$(filter_of "$w")|")
        pt=emulate
        [ "$terms" = - ] || pt="emulate,$terms"
        t=$tmp/$w.$name.hwt
        # shellcheck disable=SC2086
        "$H" record --pt="$pt" -o "$t" -- $prog 2>"$tmp/rec" >/dev/null ||
            { cat "$tmp/rec"; exit 1; }
        ptmb=$(sed -n 's/.* \([0-9.]*\) MB of PT.*/\1/p' "$tmp/rec")
        "$B" --hwt "$t" "$runs" >"$tmp/dec" || { cat "$tmp/dec"; exit 1; }
        cat "$tmp/dec" >>"$tmp/log"
        lib=$(field libipt_loop "$tmp/dec")
        fast=$(field fast "$tmp/dec")
        tree=$(field fast_tree "$tmp/dec")
        set -- $(time_rss "$H" flame -q -i "$t" -o "$tmp/f.svg")
        hs=$1 hk=$2 hc=$3
        ps=- pk=- pr=- pc=- pcr=-
        if [ -z "$peer_reason" ]; then
            "$H" convert -i "$t" -o "$tmp/t.data" >/dev/null 2>"$tmp/conv" || {
                echo "convert failed:"; cat "$tmp/conv"; exit 1; }
            set -- $(time_rss perf script -i "$tmp/t.data" --itrace=i100ig)
            ps=$1 pk=$2 pc=$3
            pr=$(ratio "$ps" "$hs")
            pcr=$(ratio "$pc" "$hc")
        fi
        printf '%-22s %-8s %15s %8s %10s %10s %7s %9s %7s %10s %8s %8s %7s %8s %8s %7s %8s %8s\n' \
            "$w" "$name" "$(field insns "$tmp/dec")" "$ptmb" \
            "$(s3 "$lib")" "$(s3 "$fast")" "$(ratio "$lib" "$fast")" \
            "$(s3 "$tree")" "$(ratio "$lib" "$tree")" \
            "$(field segments "$tmp/dec")/$(field fallback "$tmp/dec")" "${hs}s" \
            "$( [ "$ps" = - ] && echo - || echo "${ps}s")" "$pr" "$(mb "$hk")" \
            "$( [ "$pk" = - ] && echo - || mb "$pk")" "${hc}s" \
            "$( [ "$pc" = - ] && echo - || echo "${pc}s")" "$pcr" >>"$rows"
        rm -f "$t" "$tmp/t.data"
    done
done

printf '%-22s %-8s %15s %8s %10s %10s %7s %9s %7s %10s %8s %8s %7s %8s %8s %7s %8s %8s\n' trace shape \
    instructions "PT MB" "libipt" "rec/call" ratio "hwt tree" ratio "segs/lib" "hwt flame" \
    "perf" ratio \
    "flame MB" "perf MB" "flame" "perf" "ratio"
cat "$rows"
echo
echo "libipt: the plain libipt block-decoder loop (pt_blk_next, as ptxed), CPU time;"
echo "rec/call: hwtrace's default engine (FAST) with call stacks and per-block counts, a"
echo "  record to ptsession's sink for every call (bench_decoder's record row: what script"
echo "  --flow and trace pt: probes pay), CPU time; ratio = libipt / rec/call (higher:"
echo "  hwtrace faster); hwt tree: the same engine into the call tree flame uses (no"
echo "  record per call or return; bench_decoder's call tree row), CPU time, and"
echo "  libipt / hwt tree; segs/lib: PSB segments, and"
echo "  those the fast engine left to libipt; real-pt instructions: hwtrace/ptxed's count."
echo "hwt flame vs perf: wall time and peak RSS of \`hwtrace flame\` and of"
echo "  \`perf script --itrace=i100ig\` on the converted perf.data; ratio = perf / flame;"
echo "  the last three columns: their CPU time (user + system) and perf / flame in CPU"
echo "  time (on a loaded machine wall time also counts the waits for a CPU)."
echo "shapes: $SHAPES"
echo "  %F: filter deep @ shape (calls), filter row_sum @ shape (loops), filter eval @ flame"
echo "commands:"
echo "  $B --raw tests/data/real-pt/NAME $runs"
echo "  HWT_BENCH_CONCAT=20 $B --raw tests/data/real-pt/avscript_32 $runs   (avscript_32x20)"
echo "  $H record --pt=emulate[,TERMS] -o T.hwt -- bench/ptshape_work calls|loops $millions"
echo "  $H record --pt=emulate[,TERMS] -o T.hwt -- bench/ptflame_work ROUNDS"
echo "  $B --hwt T.hwt $runs"
echo "  $H flame -q -i T.hwt -o T.svg"
if [ -n "$peer_reason" ]; then
    echo "perf not run: $peer_reason"
else
    echo "  $H convert -i T.hwt -o T.data"
    echo "  perf script -i T.data --itrace=i100ig > /dev/null"
fi
echo "(each decoder's full table: HWT_BENCH_LOG=FILE keeps them)"
[ -z "${HWT_BENCH_LOG:-}" ] || cp "$tmp/log" "$HWT_BENCH_LOG"
