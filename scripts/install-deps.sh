#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Installs everything hwtrace needs to build, test and benchmark on Debian 12,
# from Debian's own packages only. Idempotent: packages already present are
# left alone, and nothing is downloaded outside apt.
set -eu

PKGS="build-essential cmake ninja-build pkg-config git
      libpfm4-dev libipt-dev libelf-dev libdwarf-dev libdw-dev libzstd-dev zstd zlib1g-dev
      libcapstone-dev libiberty-dev libbpf-dev libprotobuf-c-dev protobuf-c-compiler
      golang-github-google-pprof-dev golang-go
      libcmocka-dev
      clang-14 clang-format-14 llvm-14 lld-14 libclang-rt-14-dev
      binutils elfutils linux-perf qemu-user
      chromium chromium-driver python3
      hyperfine time valgrind gdb bc
      bpftrace"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
    SUDO="sudo"
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
