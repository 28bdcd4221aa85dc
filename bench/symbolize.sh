#!/bin/sh
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
# Each tool runs REPS times per set (default 3; eu-addr2line once, it is slow);
# the table shows the best wall time, the best CPU time (user + system) and
# the peak RSS (GNU time), and the ratio of each tool's time to hwtrace's.
# On a shared machine wall time mostly measures waiting for a core: the CPU
# time ratio is the one to trust there (the load average is printed).
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

# best-of-N wall seconds, best-of-N CPU seconds (user + system, from the
# child's own rusage: microseconds, not GNU time's 10 ms) and peak RSS (KiB)
# of a command reading $1
measure() {
    python3 - "$work/out.txt" "$@" <<'PYEOF'
import os, subprocess, sys, time
out, inp, n, cmd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
best_w = best_c = None
rss = 0
for _ in range(n):
    with open(inp) as fi, open(out, 'w') as fo:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdin=fi, stdout=fo, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        w = time.perf_counter() - t0
    c = ru.ru_utime + ru.ru_stime
    best_w = w if best_w is None else min(best_w, w)
    best_c = c if best_c is None else min(best_c, c)
    rss = max(rss, ru.ru_maxrss)
print('%.3f %.3f %d' % (best_w, best_c, rss))
PYEOF
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
for set in random sampled; do
    input=$work/$set.txt
    echo
    echo "== $set addresses ($naddr)"
    printf '%-16s %8s %8s %12s %10s %10s\n' tool "wall s" "CPU s" "peak RSS MB" \
        "wall / hw" "CPU / hw"
    ours=$(measure "$input" "$reps" "$hwtrace" addr2line -f -i -C -e "$target")
    ours_t=${ours%% *}
    ours_c=$(echo "$ours" | cut -d' ' -f2)
    for tool in hwtrace binutils llvm-symbolizer elfutils; do
        case $tool in
        hwtrace) r=$ours ;;
        binutils) r=$(measure "$input" "$reps" addr2line -f -i -C -e "$target") ;;
        llvm-symbolizer) r=$(measure "$input" "$reps" llvm-symbolizer-14 --obj="$target" --inlining --demangle) ;;
        elfutils) r=$(measure "$input" 1 eu-addr2line -f -i -C -e "$target") ;;
        esac
        t=$(echo "$r" | cut -d' ' -f1); c=$(echo "$r" | cut -d' ' -f2)
        m=$(echo "$r" | cut -d' ' -f3)
        printf '%-16s %8s %8s %12.1f %9.1fx %9.1fx\n' "$tool" "$t" "$c" \
            "$(echo "$m / 1024" | bc -l)" "$(echo "$t / $ours_t" | bc -l)" \
            "$(echo "$c / $ours_c" | bc -l)"
    done
done
echo
echo "commands (stdin: the address file, one hex address per line):"
echo "  $hwtrace addr2line -f -i -C -e $target"
echo "  addr2line -f -i -C -e $target"
echo "  llvm-symbolizer-14 --obj=$target --inlining --demangle"
echo "  eu-addr2line -f -i -C -e $target"
