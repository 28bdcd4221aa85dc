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
# the table shows the best wall time and the peak RSS (GNU time), and the
# ratio of each tool's time to hwtrace's.
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

# best-of-N wall seconds and peak RSS (KiB) of a command reading $1
measure() {
    input=$1; n=$2; shift 2
    best=""; rss=0
    i=0
    while [ "$i" -lt "$n" ]; do
        /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" < "$input" > "$work/out.txt" 2>/dev/null
        read -r t m < "$work/time.txt"
        if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
        [ "$m" -gt "$rss" ] && rss=$m
        i=$((i + 1))
    done
    echo "$best $rss"
}

for set in random sampled; do
    input=$work/$set.txt
    echo
    echo "== $set addresses ($naddr)"
    printf '%-16s %10s %12s %14s\n' tool seconds "peak RSS MB" "time / hwtrace"
    ours=$(measure "$input" "$reps" "$hwtrace" addr2line -f -i -C -e "$target")
    ours_t=${ours% *}
    for tool in hwtrace binutils llvm-symbolizer elfutils; do
        case $tool in
        hwtrace) r=$ours ;;
        binutils) r=$(measure "$input" "$reps" addr2line -f -i -C -e "$target") ;;
        llvm-symbolizer) r=$(measure "$input" "$reps" llvm-symbolizer-14 --obj="$target" --inlining --demangle) ;;
        elfutils) r=$(measure "$input" 1 eu-addr2line -f -i -C -e "$target") ;;
        esac
        t=${r% *}; m=${r#* }
        printf '%-16s %10s %12.1f %13.1fx\n' "$tool" "$t" "$(echo "$m / 1024" | bc -l)" \
            "$(echo "$t / $ours_t" | bc -l)"
    done
done
echo
echo "commands (stdin: the address file, one hex address per line):"
echo "  $hwtrace addr2line -f -i -C -e $target"
echo "  addr2line -f -i -C -e $target"
echo "  llvm-symbolizer-14 --obj=$target --inlining --demangle"
echo "  eu-addr2line -f -i -C -e $target"
