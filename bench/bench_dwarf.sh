#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench/bench_dwarf.sh - call stacks without frame pointers (--call-graph
# dwarf), hwtrace against perf on the same files, in the same run:
#
#   1. Debian's python3 (built -O2, no frame pointers) runs
#      bench/dwarf_work.py for SECONDS of CPU time under
#      `perf record --call-graph dwarf -F FREQ` (perf.data) and under
#      `hwtrace record --call-graph dwarf -F FREQ` (.hwt): sizes, samples;
#   2. on perf's perf.data: `perf report --stdio` against `hwtrace report
#      --stdio` (children and call graphs, perf's defaults, and
#      --no-children), and `perf script | fold` against `hwtrace flame -o
#      x.folded` / `-o x.svg`: wall and CPU time, peak RSS;
#   3. bench_unwind on perf.data: hwtrace's CFI unwinder against elfutils'
#      libdw unwinder (what perf uses), unwinding time only, and how many
#      stacks the two give identically.
#
# Debian 12 has neither FlameGraph's stackcollapse-perf.pl nor inferno, so
# the fold is done by the perl below, which does what stackcollapse-perf.pl
# does with its default options (comm as root, function names without
# offsets, callers first, identical stacks counted).
#
# Usage: bench/bench_dwarf.sh [BUILD_DIR] [SECONDS] [FREQ] [REPS]
set -eu

BUILD=${1:-build}
SECS=${2:-12}
FREQ=${3:-10000}
REPS=${4:-1}
SRC=$(cd "$(dirname "$0")/.." && pwd)
HWT=$BUILD/cli/hwtrace
OUT=$BUILD/bench-dwarf
PY=/usr/bin/python3
WORK="$SRC/bench/dwarf_work.py"
mkdir -p "$OUT"

for t in perf "$PY" /usr/bin/time perl "$HWT"; do
    command -v "$t" >/dev/null || { echo "bench_dwarf: $t is missing (scripts/install-deps.sh)"; exit 1; }
done

fold() {
    perl -ne '
        if (/^\S/) { $comm = (split)[0]; @s = (); next }
        if (/^\s+[0-9a-f]+ (.+?)(\+0x[0-9a-f]+)? \(/) { unshift @s, $1; next }
        if (/^$/) { $c{join(";", $comm, @s)}++ if defined $comm; undef $comm; next }
        END { $c{join(";", $comm, @s)}++ if defined $comm;
              print "$_ $c{$_}\n" for sort keys %c }'
}

# Runs a command REPS times; prints the median "wall user+sys rss_kb".
measure() {
    local i f res=()
    for ((i = 0; i < REPS; i++)); do
        f=$(mktemp)
        /usr/bin/time -f "%e %U %S %M" -o "$f" bash -c "$1" >/dev/null 2>&1 || true
        res+=("$(awk '{printf "%.2f %.2f %d\n", $1, $2 + $3, $4}' "$f")")
        rm -f "$f"
    done
    printf '%s\n' "${res[@]}" | sort -n -k2 | sed -n "$(((REPS + 1) / 2))p"
}

echo "# bench_dwarf: $($PY --version) running dwarf_work.py for ${SECS}s of CPU, -F $FREQ"
echo "# $(perf --version), hwtrace $($HWT --version 2>/dev/null | head -1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
rm -f "$OUT/perf.data" "$OUT/py.hwt"
perf record -q --call-graph dwarf -F "$FREQ" -o "$OUT/perf.data" -- "$PY" "$WORK" "$SECS" >/dev/null
"$HWT" record -q --call-graph dwarf -F "$FREQ" -o "$OUT/py.hwt" -- "$PY" "$WORK" "$SECS" >/dev/null

psize=$(stat -c %s "$OUT/perf.data")
hsize=$(stat -c %s "$OUT/py.hwt")
psamples=$("$HWT" report -i "$OUT/perf.data" --stdio -g none --no-children 2>&1 >/dev/null |
           sed -n 's/.*report: \([0-9]*\) samples.*/\1/p')
hsamples=$("$HWT" report -i "$OUT/py.hwt" --stdio -g none --no-children 2>&1 >/dev/null |
           sed -n 's/.*report: \([0-9]*\) samples.*/\1/p')
echo
echo "## Recording (8 KiB of stack per sample)"
echo
echo "| recorder | samples | file MB | bytes/sample | vs perf.data |"
echo "|---|---|---|---|---|"
awk -v s="$psamples" -v b="$psize" 'BEGIN { printf "| perf record --call-graph dwarf | %d | %.1f | %.0f | 1.00 |\n", s, b / 1e6, b / s }'
awk -v s="$hsamples" -v b="$hsize" -v ps="$psamples" -v pb="$psize" 'BEGIN {
    printf "| hwtrace record --call-graph dwarf | %d | %.1f | %.0f | %.3f (1/%.0f per sample) |\n",
           s, b / 1e6, b / s, b / pb, (pb / ps) / (b / s) }'

P="$OUT/perf.data"
names=("report (children, call graphs)" "report --no-children"
       "flame -o x.folded vs perf script + fold" "flame -o x.svg vs perf script + fold")
pcmds=("perf report --stdio -i $P" "perf report --stdio --no-children -i $P"
       "perf script -i $P 2>/dev/null | fold > $OUT/perf.folded"
       "perf script -i $P 2>/dev/null | fold > $OUT/perf.folded")
hcmds=("$HWT report -q --stdio -i $P" "$HWT report -q --stdio --no-children -i $P"
       "$HWT flame -q -i $P -o $OUT/hwt.folded" "$HWT flame -q -i $P -o $OUT/hwt.svg")
export -f fold
echo
echo "## Analysis of perf's perf.data ($psamples samples; median of $REPS)"
echo
echo "| case | perf wall s | perf CPU s | hwtrace wall s | hwtrace CPU s | CPU ratio | perf RSS MB | hwtrace RSS MB | RSS ratio |"
echo "|---|---|---|---|---|---|---|---|---|"
for i in "${!names[@]}"; do
    read -r pw pc pr <<<"$(measure "${pcmds[$i]}")"
    read -r hw hc hr <<<"$(measure "${hcmds[$i]}")"
    awk -v n="${names[$i]}" -v pw="$pw" -v pc="$pc" -v pr="$pr" -v hw="$hw" -v hc="$hc" -v hr="$hr" 'BEGIN {
        printf "| %s | %.2f | %.2f | %.2f | %.2f | %.1fx | %.0f | %.0f | %.1fx |\n",
               n, pw, pc, hw, hc, pc / (hc > 0 ? hc : 0.01), pr / 1024, hr / 1024, pr / (hr > 0 ? hr : 1) }'
done
echo
echo "Commands: perf report --stdio [--no-children] -i perf.data; hwtrace report --stdio [--no-children] -i perf.data;"
echo "perf script -i perf.data | fold (stackcollapse-perf.pl's rules, in perl); hwtrace flame -i perf.data -o x.folded|x.svg"

if [ -x "$BUILD/bench/bench_unwind" ]; then
    echo
    echo "## Unwinding engines on the same perf.data"
    echo
    "$BUILD/bench/bench_unwind" "$P" 2>/dev/null
fi
