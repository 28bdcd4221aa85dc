#!/bin/sh
# The main job on a bundled example, from a fresh Debian 12 machine:
# installs the dependencies, builds hwtrace, and runs it on the bundled
# workload (grows as features land).
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build hwtrace
./build/cli/hwtrace --help
