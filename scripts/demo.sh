#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The main job on a bundled example, from a fresh Debian 12 machine:
# installs what building, recording and reporting need (not what the tests
# and benchmarks use: scripts/test.sh adds those), builds hwtrace alone (no
# tests, no benchmarks), records the example program
# examples/hotspots.c (two hot paths) with call chains, and reads the
# recording four ways: what it holds (hwtrace info), the top functions
# (hwtrace report), the first samples with their stacks (hwtrace script)
# and a flame graph (hwtrace flame -> build/demo/hotspots.svg, open it in a
# browser). Then the Intel PT leg: the same program recorded as an
# emulated Intel PT trace (exact control flow, no PT hardware needed),
# decoded into exact call counts, a kinst-style view of the hottest
# function, the call flow, and an exact flame graph
# (build/demo/hotspots-pt.svg).
#
# It prints within seconds of the build and takes a few more. It reads
# nothing from standard input and draws no progress bars, so it runs the
# same under CI=true, in a pipe or from cron.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHWT_TESTS=OFF -DHWT_BENCH=OFF \
	>/dev/null
ninja -C build hwtrace manpage
HWTRACE=./build/cli/hwtrace
OUT=build/demo
mkdir -p "$OUT"
exec </dev/null

# step TITLE: a heading, so that each command's output is easy to find.
step() { printf '\n== %s\n' "$*"; }

gcc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-o "$OUT/hotspots" examples/hotspots.c

step "hwtrace record -g -o $OUT/hotspots.hwt -- $OUT/hotspots 1"
$HWTRACE record -g -o "$OUT/hotspots.hwt" -- "$OUT/hotspots" 1

step "hwtrace info $OUT/hotspots.hwt"
$HWTRACE info "$OUT/hotspots.hwt"

# The top of perf report's layout: functions by self time, then with
# children and call graphs (head closes the pipe early: hwtrace stops
# quietly, as any filter does).
step "hwtrace report -i $OUT/hotspots.hwt --stdio --no-children -g none -n 6"
$HWTRACE report -q -i "$OUT/hotspots.hwt" --stdio --no-children -g none -n 6
step "hwtrace report -i $OUT/hotspots.hwt --stdio | head -40"
$HWTRACE report -q -i "$OUT/hotspots.hwt" --stdio | head -40

step "hwtrace script -i $OUT/hotspots.hwt | head -20"
$HWTRACE script -i "$OUT/hotspots.hwt" | head -20

step "hwtrace flame -i $OUT/hotspots.hwt -o $OUT/hotspots.svg"
$HWTRACE flame -i "$OUT/hotspots.hwt" -o "$OUT/hotspots.svg"
echo "flame graph: $(pwd)/$OUT/hotspots.svg (open it in a browser: hover, click to zoom, search)"

# The Intel PT leg. The emulator runs the program under its control and
# writes the packets real PT hardware would (docs/pt-emulator.md); a short
# run, since it traces every instruction.
step "hwtrace record --pt=emulate -o $OUT/hotspots-pt.hwt -- $OUT/hotspots 0.2"
$HWTRACE record --pt=emulate -o "$OUT/hotspots-pt.hwt" -- "$OUT/hotspots" 0.2
step "hwtrace info $OUT/hotspots-pt.hwt"
$HWTRACE info "$OUT/hotspots-pt.hwt"

# Every call was traced: exact counts and instructions, not samples.
step "hwtrace report -i $OUT/hotspots-pt.hwt --calls -n 8"
$HWTRACE report -i "$OUT/hotspots-pt.hwt" --calls -n 8
step "hwtrace branches -i $OUT/hotspots-pt.hwt checksum.constprop.0"
$HWTRACE branches -i "$OUT/hotspots-pt.hwt" checksum.constprop.0 ||
	echo "(gcc named it differently here: see 'hwtrace report -i $OUT/hotspots-pt.hwt --calls')"
step "hwtrace script -i $OUT/hotspots-pt.hwt --flow | grep -m 1 -A 12 ' -> main '"
$HWTRACE script -q -i "$OUT/hotspots-pt.hwt" --flow | grep -m 1 -A 12 ' -> main ' || true
step "hwtrace flame -i $OUT/hotspots-pt.hwt -o $OUT/hotspots-pt.svg"
$HWTRACE flame -i "$OUT/hotspots-pt.hwt" -o "$OUT/hotspots-pt.svg"

printf '\ndone: recordings in %s/, flame graphs %s/hotspots.svg (sampled) and %s/hotspots-pt.svg (exact, from PT)\n' \
	"$(pwd)/$OUT" "$(pwd)/$OUT" "$(pwd)/$OUT"
printf 'the manual: man ./build/docs/hwtrace.1 (sudo cmake --install build installs hwtrace and its page: then man hwtrace)\n'
