#!/bin/sh
# The main job on a bundled example, from a fresh Debian 12 machine:
# installs the dependencies, builds hwtrace, and records the example
# program examples/hotspots.c (two hot paths) with call chains, then shows
# what the recording holds and its first samples with their stacks.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build hwtrace
HWTRACE=./build/cli/hwtrace
mkdir -p build/demo
gcc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-o build/demo/hotspots examples/hotspots.c
$HWTRACE record -g -o build/demo/hotspots.hwt -- ./build/demo/hotspots 2
$HWTRACE info build/demo/hotspots.hwt
$HWTRACE script -i build/demo/hotspots.hwt | head -40
