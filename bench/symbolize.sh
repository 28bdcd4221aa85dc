#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Benchmark of `hwtrace addr2line` against binutils addr2line, elfutils
# eu-addr2line and llvm-symbolizer-14, in the same run, on the same 100,000
# addresses, with inline frames and demangling on, in a large real program:
# GNU objdump 2.40 with libbfd/libopcodes linked in, built -O2 -g from
# Debian's binutils-source by bench/symbolize_target.sh (cached in build/).
#
# Two address sets (fixed seeds, so runs are comparable):
#   random   uniform over .text
#   sampled  hot-skewed like profile samples: Zipf(1.2) over the functions,
#            uniform inside a function, so a few functions get most hits
# Each tool runs REPS times per set (default 3; eu-addr2line once, it is slow),
# the tools' runs interleaved; the table shows the best wall time, the best
# CPU time (user + system) and the peak RSS, and the ratio of each tool's
# time to hwtrace's. On a loaded machine wall time also measures waiting for
# a core: the CPU time ratio is the steadier one (the load average is
# printed).
#   usage: bench/symbolize.sh [BUILD-DIR]     (env: REPS, NADDR)
set -eu
cd "$(dirname "$0")/.."
builddir=${1:-build}
reps=${REPS:-3}
naddr=${NADDR:-100000}
hwtrace=$builddir/cli/hwtrace
[ -x "$hwtrace" ] || { echo "build hwtrace first: ninja -C $builddir" >&2; exit 1; }
target=$(bench/symbolize_target.sh "$builddir")
work=$builddir/bench-symbolize
mkdir -p "$work"

python3 - "$target" "$work" "$naddr" <<'EOF'
import random, subprocess, sys
target, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
secs = subprocess.run(['readelf', '-SW', target], capture_output=True, text=True).stdout
for l in secs.splitlines():
    if ' .text ' in l:
        f = l.split(']')[1].split()
        lo, size = int(f[2], 16), int(f[4], 16)
funcs = []
for l in subprocess.run(['nm', '-S', '--defined-only', target], capture_output=True,
                        text=True).stdout.splitlines():
    f = l.split()
    if len(f) == 4 and f[2] in 'tT' and int(f[1], 16) > 0:
        a = int(f[0], 16)
        if lo <= a < lo + size:
            funcs.append((a, int(f[1], 16)))
rnd = random.Random(1)
with open(work + '/random.txt', 'w') as out:
    for _ in range(n):
        out.write('0x%x\n' % (lo + rnd.randrange(size)))
rnd = random.Random(2)
rnd.shuffle(funcs)
weights = [1.0 / (i + 1) ** 1.2 for i in range(len(funcs))]
with open(work + '/sampled.txt', 'w') as out:
    for a, s in rnd.choices(funcs, weights=weights, k=n):
        out.write('0x%x\n' % (a + rnd.randrange(s)))
print('symbolize bench: %s, .text %d KiB, %d functions, %d addresses per set'
      % (target, size // 1024, len(funcs), n))
EOF

# Runs every tool REPS times per set, interleaved (hwtrace, binutils,
# llvm-symbolizer, hwtrace, ...) so that a burst of load on the shared
# machine hits them alike; eu-addr2line once at the end. Keeps the best
# wall time, the best CPU time (user + system, from each child's own
# rusage: microseconds, not GNU time's 10 ms) and the peak RSS.
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
python3 - "$work" "$reps" "$hwtrace" "$target" <<'PYEOF'
import os, subprocess, sys, time
work, reps, hwtrace, target = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
tools = [
    ('hwtrace', [hwtrace, 'addr2line', '-f', '-i', '-C', '-e', target], reps),
    ('binutils', ['addr2line', '-f', '-i', '-C', '-e', target], reps),
    ('llvm-symbolizer', ['llvm-symbolizer-14', '--obj=' + target, '--inlining', '--demangle'],
     reps),
    ('elfutils', ['eu-addr2line', '-f', '-i', '-C', '-e', target], 1),
]

def run(cmd, inp):
    with open(inp) as fi, open(work + '/out.txt', 'w') as fo:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdin=fi, stdout=fo, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss

for name in ('random', 'sampled'):
    inp = '%s/%s.txt' % (work, name)
    best = {t[0]: [float('inf'), float('inf'), 0] for t in tools}
    for r in range(reps):
        for tool, cmd, n in tools:
            if r < reps - n:
                continue  # a tool run fewer times runs in the last rounds
            w, c, m = run(cmd, inp)
            b = best[tool]
            b[0], b[1], b[2] = min(b[0], w), min(b[1], c), max(b[2], m)
    print()
    print('== %s addresses' % name)
    print('%-16s %8s %8s %12s %10s %10s' % ('tool', 'wall s', 'CPU s', 'peak RSS MB',
                                           'wall / hw', 'CPU / hw'))
    hw = best['hwtrace']
    for tool, _, _ in tools:
        w, c, m = best[tool]
        print('%-16s %8.3f %8.3f %12.1f %9.1fx %9.1fx' % (tool, w, c, m / 1024.0, w / hw[0],
                                                          c / hw[1]))
PYEOF
echo
echo "commands (stdin: the address file, one hex address per line):"
echo "  $hwtrace addr2line -f -i -C -e $target"
echo "  addr2line -f -i -C -e $target"
echo "  llvm-symbolizer-14 --obj=$target --inlining --demangle"
echo "  eu-addr2line -f -i -C -e $target"
