# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench/dwarf_work.py - the workload of bench/bench_dwarf.sh: Debian's
# python3 (built -O2 without frame pointers) interpreting recursion,
# sorting with a key function, dictionaries and string work for SECONDS of
# CPU time, so that its C stacks (the interpreter's eval loop, object
# code, libc) are deep and varied.
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def words(n):
    return ["w%d_%s" % (i, "x" * (i % 7)) for i in range(n)]


def sort_keyed(items):
    return sorted(items, key=lambda s: (len(s), s[::-1]))


def count(items):
    d = {}
    for s in items:
        d[s[:3]] = d.get(s[:3], 0) + 1
    return d


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    end = time.process_time() + secs
    total = 0
    while time.process_time() < end:
        total += fib(18)
        ws = words(3000)
        total += len(sort_keyed(ws))
        total += len(count(ws))
        total += sum(len(s.upper().replace("X", "yy")) for s in ws)
    print(total)


main()
