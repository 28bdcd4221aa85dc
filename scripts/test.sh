#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The whole test suite, from a fresh Debian 12 machine: installs the
# dependencies of the tests and benchmarks too (install-deps.sh --all),
# builds, runs every test, then again under ASan+UBSan, then
# each fuzz harness for a bounded time. .ci/run runs exactly this.
#   HWT_FUZZ_RUNS     fuzz mutations per target, from a fixed seed so that
#                     the gate is deterministic (default 5000; 0 skips);
#                     explore longer with scripts/fuzz.sh SECONDS
#   HWT_JOBS          parallel build/test jobs (default: nproc)
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
jobs=${HWT_JOBS:-$(nproc)}

./scripts/install-deps.sh --all

echo "== source formatting (.clang-format)"
./scripts/check-format.sh

echo "== build (RelWithDebInfo) and test"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHWT_TESTS=ON -DHWT_BENCH=ON \
      >/dev/null
ninja -C build -j "$jobs"
(cd build && ctest --output-on-failure -j "$jobs")
./scripts/skipped.sh build

echo "== build with ASan+UBSan and test"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHWT_SANITIZE=ON \
      -DHWT_TESTS=ON -DHWT_BENCH=OFF >/dev/null
ninja -C build-asan -j "$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure -j "$jobs" -LE "no-asan|slow")
./scripts/skipped.sh build-asan

runs=${HWT_FUZZ_RUNS:-5000}
if [ "$runs" != 0 ]; then
    echo "== fuzz harnesses ($runs runs each, fixed seed)"
    "$top/scripts/fuzz.sh" "runs=$runs"
fi
echo "== all tests passed"
