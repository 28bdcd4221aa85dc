#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench/bench_stitch.sh - what stitching per-CPU streams costs: records
# bench/ptflame_work.c with the PT emulator (one thread), then bench_stitch
# decodes it as recorded and as a per-CPU recording in which the thread
# moves between two CPUs PIECES times, with and without stitching.
#
#   usage: bench/bench_stitch.sh [BUILD_DIR] [ROUNDS] [PIECES]
#     BUILD_DIR  where hwtrace and the benchmarks were built (default build)
#     ROUNDS     workload rounds, ~1.2x10^6 instructions each (default 100)
#     PIECES     pieces the trace is cut into (default 64)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-100}
pieces=${3:-64}
H=$(cd "$build" && pwd)/cli/hwtrace
B=$(cd "$build" && pwd)/bench/bench_stitch
[ -x "$H" ] && [ -x "$B" ] || { echo "no $H or $B: build first (ninja -C $build)"; exit 1; }
command -v qemu-x86_64 >/dev/null || { echo "qemu-x86_64 missing: the PT emulator cannot run (scripts/install-deps.sh installs qemu-user)"; exit 1; }

tmp=$(mktemp -d /tmp/bench_stitch.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
gcc -O2 -g -o "$tmp/work" bench/ptflame_work.c
"$H" record --pt=emulate -o "$tmp/t.hwt" -- "$tmp/work" "$rounds" 2>"$tmp/rec" >/dev/null ||
    { cat "$tmp/rec"; exit 1; }
"$B" "$tmp/t.hwt" "$pieces" 3
