#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Installs what hwtrace needs on Debian 12, from Debian's own packages only.
# Idempotent: packages already present are left alone, and nothing is
# downloaded outside apt.
#
#   scripts/install-deps.sh           what building, recording and reporting
#                                     need (the main job: scripts/demo.sh):
#                                     the compiler, the libraries, qemu-user
#                                     for --pt=emulate, man to read the manual
#   scripts/install-deps.sh --all     also everything the tests and benchmarks
#                                     use (scripts/test.sh): cmocka, clang and
#                                     the sanitizers, perf, chromium, bpftrace,
#                                     hyperfine, valgrind, ...
#   scripts/install-deps.sh [--all] --print
#                                     print the packages, one a line; install
#                                     nothing
set -eu

# Building hwtrace (cmake/deps.cmake: every library it links; pprof's
# profile.proto and protoc-c generate its pprof writer), running it (qemu-user
# runs the PT emulator) and reading its manual.
MAIN="build-essential cmake ninja-build pkg-config
      libpfm4-dev libipt-dev libelf-dev libdwarf-dev libzstd-dev zlib1g-dev
      libcapstone-dev libiberty-dev libbpf-dev libprotobuf-c-dev protobuf-c-compiler
      golang-github-google-pprof-dev
      qemu-user man-db"

# The tests, the ASan/UBSan and fuzzing builds, the format check and the
# benchmarks against peer tools (perf, zstd, addr2line, bpftrace, chromium
# for the flame graph's browser benchmark, hyperfine, valgrind, elfutils'
# unwinder for bench_unwind, Go's pprof reading what flame writes; openssl
# and bsdutils' script(1) drive sslsnoop.bt and bashreadline.bt's workloads).
TEST="git zstd libcmocka-dev libdw-dev golang-go
      clang-14 clang-format-14 llvm-14 lld-14 libclang-rt-14-dev
      binutils elfutils linux-perf
      chromium chromium-driver python3
      hyperfine time valgrind gdb bc
      bpftrace openssl bsdutils"

all=false
print=false
for arg in "$@"; do
    case $arg in
    --all) all=true ;;
    --print) print=true ;;
    *)
        echo "usage: scripts/install-deps.sh [--all] [--print]" >&2
        exit 2
        ;;
    esac
done
PKGS=$MAIN
if $all; then
    PKGS="$MAIN $TEST"
fi
if $print; then
    for p in $PKGS; do
        echo "$p"
    done
    exit 0
fi

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
