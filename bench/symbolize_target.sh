#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Builds the "large real program" that bench/symbolize.sh symbolizes:
# GNU objdump 2.40 (with its libbfd and libopcodes linked in statically),
# compiled with gcc -O2 -g from the Debian package binutils-source, which
# ships the upstream tarball in /usr/src/binutils. Nothing is downloaded but
# that Debian package. The build is cached: a second run only prints the path.
#   usage: bench/symbolize_target.sh [BUILD-DIR]   (default: build)
# Prints the path of the built objdump on stdout.
set -eu
cd "$(dirname "$0")/.."
builddir=${1:-build}
work=$builddir/bench-target
out=$work/objdump-O2g
if [ -x "$out" ]; then
    echo "$out"
    exit 0
fi
if [ ! -f /usr/src/binutils/binutils-2.40.tar.xz ]; then
    echo "symbolize_target: installing Debian's binutils-source" >&2
    export DEBIAN_FRONTEND=noninteractive
    SUDO=""
    [ "$(id -u)" != 0 ] && SUDO=sudo
    $SUDO apt-get install -y -qq --no-install-recommends binutils-source >&2
fi
rm -rf "$work"
mkdir -p "$work"
echo "symbolize_target: building objdump 2.40 with -O2 -g (a few minutes, once)" >&2
tar -C "$work" -xJf /usr/src/binutils/binutils-2.40.tar.xz
mkdir -p "$work/obj"
(
    cd "$work/obj"
    ../binutils-2.40/configure --disable-nls --disable-werror --disable-gdb \
        --disable-gdbserver --disable-sim --disable-gprofng --disable-gold \
        --disable-ld --disable-gas --disable-libctf --without-debuginfod \
        --disable-shared CFLAGS="-O2 -g" CXXFLAGS="-O2 -g" >config.log.out 2>&1
    # only what objdump needs (the rest of binutils wants flex and bison)
    make -j"$(nproc)" all-libiberty all-zlib all-bfd all-opcodes all-libsframe >make.log 2>&1
    make -j"$(nproc)" -C binutils objdump >>make.log 2>&1
)
cp "$work/obj/binutils/objdump" "$out"
rm -rf "$work/binutils-2.40"
echo "$out"
