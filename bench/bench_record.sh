#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench/bench_record.sh - hwtrace record -g against perf record -g, in the
# same run, on the same workload, at the same frequency: how much each slows
# the target down, how much CPU the recorder itself uses, how big the file
# is, how many samples each got and lost.
#
# usage: bench/bench_record.sh [BUILD_DIR] [ITERATIONS] [FREQS...]
#   BUILD_DIR   default ./build (needs build/cli/hwtrace and build/progs/rec_load)
#   ITERATIONS  work per thread of rec_load (default 2000000, ~5 s here)
#   FREQS       default "999 4000 20000" (-F max on a VM whose only sampling
#               event is the cpu-clock hrtimer starves the workload for both
#               tools; the load test covers it)
#
# The workload (tests/progs/rec_load.c -n N 2) is two threads doing a fixed
# amount of work through recursions up to 40 frames deep, so that samples
# carry long call chains. It prints its own CPU time, so the recorder's CPU
# time is the whole tree's (bash `time`: hwtrace or perf and the workload,
# including perf's end-of-run build-id pass) minus the workload's.
# Each configuration runs REPEAT times (default 3); the median is shown.
set -eu
BUILD=${1:-build}
ITERS=${2:-2000000}
shift 2 2>/dev/null || shift $#
FREQS=${*:-999 4000 20000}
REPEAT=${REPEAT:-3}
HWTRACE=$BUILD/cli/hwtrace
WORK=$BUILD/progs/rec_load
[ -x "$HWTRACE" ] && [ -x "$WORK" ] || { echo "build hwtrace first: $HWTRACE, $WORK" >&2; exit 1; }
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# run NAME CMD...: runs CMD, leaves "wall total_cpu work_cpu" in $TMP/NAME.t
run() {
	name=$1
	shift
	/usr/bin/env bash -c 'TIMEFORMAT="%R %U %S"; { time "$@" 2>"'"$TMP"'/err" >/dev/null; } 2>"'"$TMP"'/time"' _ "$@"
	read -r wall u s <"$TMP/time"
	wu=$(awk '/^cpu /{print $2+$3}' "$TMP/err")
	echo "$wall $(echo "$u + $s" | bc -l) ${wu:-0}" >"$TMP/$name.t"
}

median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

printf '%s\n' "hwtrace record vs perf record, same workload, same run ($(nproc) CPUs, $(uname -r))"
printf 'workload: %s -n %s 2\n' "$WORK" "$ITERS"
printf 'commands: perf record -g -F F -o P.data -- W   |   perf record -z -g -F F ...   |   hwtrace record -g -F F -o H.hwt -- W\n\n'
printf '%-5s %-14s %8s %9s %10s %9s %9s %11s %8s %9s\n' F tool wall_s slowdown rec_cpu_s cpu_ratio samples lost size_KB size_ratio
for F in $FREQS; do
	rm -f "$TMP"/*.list
	for i in $(seq "$REPEAT"); do
		run base "$WORK" -n "$ITERS" 2
		cat "$TMP/base.t" >>"$TMP/base.list"
		rm -f "$TMP/p.data" "$TMP/h.hwt" "$TMP/z.data"
		run perf perf record -q -g -F "$F" -o "$TMP/p.data" -- "$WORK" -n "$ITERS" 2
		cat "$TMP/perf.t" >>"$TMP/perf.list"
		ps=$(perf report -i "$TMP/p.data" --stats 2>/dev/null | awk '/SAMPLE events:/{print $3; exit}')
		pl=$(perf report -i "$TMP/p.data" --stats 2>/dev/null | awk '/LOST events:/{print $3; exit}')
		echo "${ps:-0} ${pl:-0} $(stat -c %s "$TMP/p.data")" >>"$TMP/perfx.list"
		run perfz perf record -q -z -g -F "$F" -o "$TMP/z.data" -- "$WORK" -n "$ITERS" 2
		cat "$TMP/perfz.t" >>"$TMP/perfz.list"
		zs=$(perf report -i "$TMP/z.data" --stats 2>/dev/null | awk '/SAMPLE events:/{print $3; exit}')
		zl=$(perf report -i "$TMP/z.data" --stats 2>/dev/null | awk '/LOST events:/{print $3; exit}')
		echo "${zs:-0} ${zl:-0} $(stat -c %s "$TMP/z.data")" >>"$TMP/perfzx.list"
		run hwt "$HWTRACE" record -g -F "$F" -o "$TMP/h.hwt" -- "$WORK" -n "$ITERS" 2
		cat "$TMP/hwt.t" >>"$TMP/hwt.list"
		line=$(grep ' samples of ' "$TMP/err")
		hs=$(echo "$line" | sed 's/^hwtrace: \([0-9]*\) samples.*/\1/')
		hl=$(echo "$line" | sed 's/.* s, \([0-9]*\) lost;.*/\1/')
		echo "$hs $hl $(stat -c %s "$TMP/h.hwt")" >>"$TMP/hwtx.list"
	done
	bw=$(cut -d' ' -f1 "$TMP/base.list" | median)
	pfsize=$(cut -d' ' -f3 "$TMP/perfx.list" | median)
	pfcpu=""
	for t in perf perfz hwt; do
		w=$(cut -d' ' -f1 "$TMP/$t.list" | median)
		# recorder CPU = tree CPU - the workload's own CPU
		rc=$(awk '{print $2 - $3}' "$TMP/$t.list" | median)
		s=$(cut -d' ' -f1 "$TMP/${t}x.list" | median)
		l=$(cut -d' ' -f2 "$TMP/${t}x.list" | median)
		sz=$(cut -d' ' -f3 "$TMP/${t}x.list" | median)
		[ -z "$pfcpu" ] && pfcpu=$rc
		case $t in perf) name="perf record" ;; perfz) name="perf record -z" ;; hwt) name="hwtrace record" ;; esac
		printf '%-5s %-14s %8.2f %8.2fx %10.2f %8.2fx %11s %8s %9.0f %9.2fx\n' "$F" "$name" "$w" \
			"$(echo "$w / $bw" | bc -l)" "$rc" "$(echo "$rc / $pfcpu" | bc -l)" "$s" "$l" \
			"$(echo "$sz / 1024" | bc -l)" "$(echo "$sz / $pfsize" | bc -l)"
	done
	printf '%-5s %-14s %8.2f %8.2fx\n' "$F" "(no recorder)" "$bw" 1
done
printf '\nslowdown: wall time / wall time without a recorder; cpu_ratio and size_ratio: against plain perf record.\n'
printf 'Targets: hwtrace recorder CPU <= perf'"'"'s, file <= 1/3 of perf.data, no more samples lost than perf.\n'
