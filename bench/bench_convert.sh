#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench/bench_convert.sh - `hwtrace convert` throughput on an emulated Intel
# PT trace of a real program, against the cost of what the user does next
# with the file: perf's own PT decoder building call-graph samples for a
# flame graph (`perf script --itrace=i100ig`), measured in the same run.
#
# usage: bench/bench_convert.sh [BUILD_DIR] [MB]
#        bench/bench_convert.sh --perf-script FILE.perf.data [OUT]
#   BUILD_DIR  default ./build (needs build/cli/hwtrace and the PT emulator's
#              plugin, build/lib/hwtrace-ptemu.so)
#   MB         megabytes of generated text gzip compresses under the
#              emulator (default 1: about 2x10^8 instructions)
#   --perf-script FILE [OUT]: only runs and times the perf command below on
#              FILE (output to OUT, default /dev/null), so another benchmark
#              (hwtrace flame from PT) can compare with it on the same file.
#
# The perf command, for the record:
#   perf script -i FILE --itrace=i100ig -F comm,tid,ip,sym
# an instruction sample every 100 instructions, each with its call chain
# (perf's decoder keeps the stack), which is what stackcollapse-perf.pl
# turns into a flame graph.
# Each timing is the median of REPEAT runs (default 3), wall clock; perf's
# decode, which takes half a minute per MB of gzip input here, runs
# PERF_REPEAT times (default 1).
set -eu

# perf_flame_script FILE OUT: the reusable perf command.
perf_flame_script() {
	perf script -i "$1" --itrace=i100ig -F comm,tid,ip,sym >"$2" 2>/dev/null
}

# median_time N CMD...: median wall seconds of N runs of CMD.
median_time() {
	n=$1
	shift
	i=0
	: >"$TMP/times"
	while [ "$i" -lt "$n" ]; do
		s=$(date +%s.%N)
		"$@"
		e=$(date +%s.%N)
		echo "$e - $s" | bc -l >>"$TMP/times"
		i=$((i + 1))
	done
	sort -n "$TMP/times" | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'
}

REPEAT=${REPEAT:-3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if [ "${1:-}" = "--perf-script" ]; then
	[ -n "${2:-}" ] || { echo "usage: $0 --perf-script FILE.perf.data [OUT]" >&2; exit 2; }
	out=${3:-/dev/null}
	t=$(median_time "$REPEAT" perf_flame_script "$2" "$out")
	echo "perf script -i $2 --itrace=i100ig -F comm,tid,ip,sym: ${t} s (median of $REPEAT)"
	exit 0
fi

BUILD=${1:-build}
MB=${2:-1}
HWTRACE=$BUILD/cli/hwtrace
[ -x "$HWTRACE" ] || { echo "build hwtrace first: $HWTRACE" >&2; exit 1; }
command -v perf >/dev/null || { echo "perf is not installed (Debian package linux-perf)" >&2; exit 1; }
command -v qemu-x86_64 >/dev/null || { echo "qemu-x86_64 is not installed (qemu-user)" >&2; exit 1; }
GZIP=$(command -v gzip)

# Text that compresses like prose: words from a fixed list, seeded.
awk -v mb="$MB" 'BEGIN {
	srand(42); n = split("the of and to in is that for it as was with be by on not he this are or his from at which but have an they you were her she there been one all we their has would when if so no", w, " ");
	bytes = mb * 1048576;
	while (bytes > 0) { line = ""; for (i = 0; i < 12; i++) line = line w[int(rand() * n) + 1] " "; print line; bytes -= length(line) + 1 }
}' >"$TMP/text"

echo "workload: $GZIP -c over $MB MB of text, under the PT emulator"
"$HWTRACE" record --pt=emulate -o "$TMP/t.hwt" -- "$GZIP" -c "$TMP/text" >/dev/null 2>"$TMP/rec.err" ||
	{ cat "$TMP/rec.err" >&2; exit 1; }
insns=$(sed -n 's/.* \([0-9]*\) instructions.*/\1/p' "$TMP/rec.err")
"$HWTRACE" convert -q "$TMP/t.hwt" -o "$TMP/t.perf.data"
pt=$("$HWTRACE" info "$TMP/t.hwt" | awk '/AUX offsets/ {split($3, a, "\\.\\."); s += a[2] - a[1]} END {print s + 0}')
hwt_size=$(stat -c %s "$TMP/t.hwt")
out_size=$(stat -c %s "$TMP/t.perf.data")

t_conv=$(median_time "$REPEAT" "$HWTRACE" convert -q "$TMP/t.hwt" -o "$TMP/t.perf.data")
t_cp=$(median_time "$REPEAT" cp "$TMP/t.perf.data" "$TMP/copy")
t_perf=$(median_time "${PERF_REPEAT:-1}" perf_flame_script "$TMP/t.perf.data" "$TMP/perf.out")
samples=$(grep -c '^ *[^ ]' "$TMP/perf.out" || true)

mbs() { echo "$1 / 1048576 / $2" | bc -l | awk '{printf "%.1f", $1}'; }
ratio() { echo "$1 / $2" | bc -l | awk '{printf "%.1f", $1}'; }

echo "trace:    $insns instructions, $pt bytes of PT; .hwt $hwt_size bytes, perf.data $out_size bytes"
echo
printf "%-58s %9s %12s %10s\n" "step" "seconds" "PT MB/s" "vs convert"
printf "%-58s %9s %12s %10s\n" "hwtrace convert -q t.hwt -o t.perf.data" "$t_conv" "$(mbs "$pt" "$t_conv")" "1.0"
printf "%-58s %9s %12s %10s\n" "cp t.perf.data copy (I/O floor)" "$t_cp" "$(mbs "$pt" "$t_cp")" "$(ratio "$t_cp" "$t_conv")"
printf "%-58s %9s %12s %10s\n" "perf script -i t.perf.data --itrace=i100ig -F comm,tid,ip,sym" "$t_perf" "$(mbs "$pt" "$t_perf")" "$(ratio "$t_perf" "$t_conv")"
echo
echo "perf script made $samples lines (samples and their call chains)."
echo "median of $REPEAT runs each (perf script: ${PERF_REPEAT:-1}); rerun: $0 $BUILD $MB"
echo "the perf command alone, on any file: $0 --perf-script FILE.perf.data"
