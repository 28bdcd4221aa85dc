#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench/bench_report.sh - hwtrace report / flame against perf report / perf
# script on the same perf.data of a million samples or more: CPU time (user
# + system) and peak RSS of each tool, and their ratios, in the same run.
#
# usage: bench/bench_report.sh [BUILD_DIR] [SAMPLES]
#   BUILD_DIR  default ./build (needs cli/hwtrace, progs/rec_load and
#              bench/bench_report_data)
#   SAMPLES    default 1000000
#
# The perf.data: `perf record -g -F 4000` of tests/progs/rec_load (two
# threads through recursions up to 40 frames deep) for a second, grown to
# SAMPLES samples by bench_report_data (format's perf.data writer: every
# sample written K times in place; the processes, mappings, binaries and
# call chains stay the real ones). A real recording of a million samples
# would take minutes of CPU at perf's highest rate on this kind of machine.
# Both tools read the same file; each case runs REPEAT times (default 3),
# the tools interleaved, and the median is shown. Peer for flame: Debian 12
# packages neither FlameGraph's stackcollapse-perf.pl nor inferno, so
# `hwtrace flame` is compared with `perf script` alone (the first half of
# the usual `perf script | stackcollapse-perf.pl | flamegraph.pl`).
set -eu
BUILD=${1:-build}
SAMPLES=${2:-1000000}
REPEAT=${REPEAT:-3}
HWTRACE=$BUILD/cli/hwtrace
WORK=$BUILD/progs/rec_load
GROW=$BUILD/bench/bench_report_data
for f in "$HWTRACE" "$WORK" "$GROW"; do
	[ -x "$f" ] || { echo "build it first: $f (ninja -C $BUILD)" >&2; exit 1; }
done
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

perf record -q -g -F 4000 -o "$TMP/small.data" -- "$WORK" 1 2 >/dev/null 2>&1
grown=$("$GROW" "$TMP/small.data" "$TMP/perf.data" "$SAMPLES")
DATA=$TMP/perf.data

# measure NAME CMD...: CPU seconds and peak RSS (KB) of CMD, appended to
# $TMP/NAME.list; the output is thrown away (perf script writes GBs).
measure() {
	name=$1
	shift
	/usr/bin/time -f "%U %S %M" -o "$TMP/time" "$@" >/dev/null 2>&1 ||
		{ echo "failed: $*" >&2; exit 1; }
	awk '{printf "%.3f %d\n", $1 + $2, $3}' "$TMP/time" >>"$TMP/$name.list"
}

median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

printf 'hwtrace report/flame vs perf report/script, same perf.data, same run (%s CPUs, %s)\n' \
	"$(nproc)" "$(uname -r)"
printf 'perf.data: %s, %s MB (%s)\n' "$grown" "$(($(stat -c %s "$DATA") / 1048576))" \
	"perf record -g -F 4000 -- rec_load 1 2, grown by bench_report_data"
printf 'median of %s runs; cpu = user + system seconds; ratio = perf / hwtrace\n\n' "$REPEAT"
printf '%-28s %9s %9s %7s %9s %9s %7s\n' case perf_cpu hwt_cpu ratio perf_MB hwt_MB ratio

# row NAME "PERF COMMAND" "HWTRACE COMMAND" (word-split; paths have no blanks)
row() {
	rname=$1 pcmd=$2 hcmd=$3
	rm -f "$TMP/p.list" "$TMP/h.list"
	for i in $(seq "$REPEAT"); do
		# shellcheck disable=SC2086
		measure p $pcmd
		# shellcheck disable=SC2086
		measure h $hcmd
	done
	pc=$(cut -d' ' -f1 "$TMP/p.list" | median)
	hc=$(cut -d' ' -f1 "$TMP/h.list" | median)
	pm=$(cut -d' ' -f2 "$TMP/p.list" | median)
	hm=$(cut -d' ' -f2 "$TMP/h.list" | median)
	printf '%-28s %9.2f %9.2f %7.1f %9.0f %9.0f %7.1f\n' "$rname" "$pc" "$hc" \
		"$(echo "$pc / $hc" | bc -l)" "$(echo "$pm / 1024" | bc -l)" \
		"$(echo "$hm / 1024" | bc -l)" "$(echo "$pm / $hm" | bc -l)"
	echo "  perf:    $pcmd" | sed "s|$TMP/||g" >>"$TMP/commands"
	echo "  hwtrace: $hcmd" | sed "s|$TMP/||g" >>"$TMP/commands"
}

row "report (children, graph)" "perf report -i $DATA --stdio" \
	"$HWTRACE report -q -i $DATA --stdio"
row "report --no-children" "perf report -i $DATA --stdio --no-children" \
	"$HWTRACE report -q -i $DATA --stdio --no-children"
row "report -g none" "perf report -i $DATA --stdio --no-children -g none" \
	"$HWTRACE report -q -i $DATA --stdio --no-children -g none"
row "flame .folded / perf script" "perf script -i $DATA -F comm,tid,time,ip,sym,dso" \
	"$HWTRACE flame -q -i $DATA -o $TMP/out.folded"
row "flame .svg / perf script" "perf script -i $DATA -F comm,tid,time,ip,sym,dso" \
	"$HWTRACE flame -q -i $DATA -o $TMP/out.svg"
printf '\ncommands (perf.data is the grown file):\n'
cat "$TMP/commands"
