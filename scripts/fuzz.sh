#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Builds the libFuzzer harnesses with clang-14 and runs each over a copy of
# its kept corpus. A crash fails the run and leaves the input in
# build-fuzz/crashes/<target>/: add it to tests/fuzz/corpus/<target>/ once
# fixed, so the replay test keeps it.
#   usage: scripts/fuzz.sh [SECONDS | runs=N] [TARGET...]
# SECONDS explores for that long per target with a random seed (what
# developers run to find new bugs). runs=N runs exactly N mutations per
# target from seed 1: the same inputs every time, so the CI gate
# (scripts/test.sh) passes or fails on the code alone, not on luck.
# A slow harness names its own count in tests/fuzz/TARGET.runs (the
# smaller of the two is run), so that the 120 s cap never cuts it short
# and its gate stays the same inputs on every machine.
# A harness run by hand writes what fails into build-fuzz/crashes/<target>/
# too (tests/fuzz/artifact_prefix.c), unless given -artifact_prefix=.
# HWT_JOBS limits the build's parallel jobs (default: nproc), as in
# scripts/test.sh.
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
case "$secs" in
runs=*) runs=${secs#runs=} ;;
*) runs=""; limit="-max_total_time=$secs"; what="${secs}s" ;;
esac
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHWT_FUZZ=ON -DHWT_TESTS=OFF -DHWT_BENCH=OFF >/dev/null
ninja -C build-fuzz -j "${HWT_JOBS:-$(nproc)}" $(cd build-fuzz && ninja -t targets all | sed -n 's/^\(fuzz_[a-z0-9_]*\): .*/\1/p' | sort -u)
targets="$*"
if [ -z "$targets" ]; then
    targets=$(ls tests/fuzz/fuzz_*.c 2>/dev/null | sed 's|.*/fuzz_||; s|\.c$||')
fi
status=0
for t in $targets; do
    work=build-fuzz/corpus/$t
    crashes=build-fuzz/crashes/$t
    rm -rf "$work"
    mkdir -p "$work" "$crashes"
    if [ -d "tests/fuzz/corpus/$t" ]; then
        cp -r "tests/fuzz/corpus/$t/." "$work/"
    fi
    if [ -n "$runs" ]; then
        n=$runs
        if [ -f "tests/fuzz/$t.runs" ] && [ "$(cat "tests/fuzz/$t.runs")" -lt "$n" ]; then
            n=$(cat "tests/fuzz/$t.runs")
        fi
        limit="-runs=$n -seed=1 -max_total_time=120"
        what="$n runs, seed 1"
    fi
    dict=""
    [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
    echo "fuzz $t: $what"
    if ! ./build-fuzz/tests/fuzz_$t $dict $limit -max_len=65536 \
            -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
            -artifact_prefix="$crashes/" "$work" >build-fuzz/fuzz-$t.log 2>&1; then
        echo "fuzz $t: FAILED, see build-fuzz/fuzz-$t.log and $crashes/"
        tail -40 build-fuzz/fuzz-$t.log
        status=1
    else
        grep -E 'stat::number_of_executed_units|cov:' build-fuzz/fuzz-$t.log | tail -2
    fi
done
exit $status
