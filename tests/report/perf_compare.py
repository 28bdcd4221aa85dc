#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""tests/report/perf_compare.py - compares hwtrace's views of a perf.data
with perf's own, for tests/report/test_samples.c.

  perf_compare.py stacks PERF_SCRIPT_OUT HWTRACE_FOLDED
      Folds `perf script -F comm,ip,sym,symoff,dso` output the way
      stackcollapse-perf does (root first, the command as the root frame,
      "_[k]" after kernel frames, "[object]" for a frame without a symbol,
      "[unknown]" for one without an object) and compares the multiset of
      stacks with hwtrace's folded stacks (`hwtrace flame -o x.folded`,
      which counts samples). They must be equal, with one stated
      exception: perf names a return address by the symbol that holds it,
      so when a call is the last instruction of a function, the return
      address is the first byte of the next function and perf prints that
      function at "+0x0". hwtrace looks return addresses up at ip - 1 and
      names the caller. Such frames (a non-leaf frame at +0x0) match any
      name; their number is printed.

  perf_compare.py report PERF_REPORT_OUT HWTRACE_REPORT_OUT MIN_PERCENT
      Parses the entry lines ("  12.34%  comm  object  [.] symbol", or
      with children "  12.34%  10.00%  ...") of `perf report --stdio` and
      `hwtrace report --stdio` and checks that the entries at or above
      MIN_PERCENT are the same, with the same numbers to display rounding
      (0.01 points). One stated exception: addresses without a symbol are
      one entry per address in perf ("[.] 0x000000000000079d") and one
      entry per object in hwtrace ("[.] [vdso]"); such entries are left
      out on both sides and counted.

  perf_compare.py graphs PERF_REPORT_OUT HWTRACE_REPORT_OUT MIN_PERCENT [...]
      Splits both reports into entries (the entry line and the call-graph
      lines under it, trailing blanks removed) and checks that every entry
      at or above MIN_PERCENT has the same graph, line for line: branches,
      percentages, names and the columns they are printed in. Entries
      whose shares tie are listed in an order of their own by each tool,
      so entries are matched by their line (and event), not by position.
      Entries of unresolved addresses are left out as in "report", and a
      graph line where perf prints the bare address of a frame without a
      symbol ("0x7f653106d8a8", or "0" for a zero address) matches
      hwtrace's "[unknown]" or "[object]" on the same columns; so does
      perf's "@plt", its name for a PLT slot whose relocation names no
      symbol (IRELATIVE). More
      triples of arguments compare more pairs in one run; each pair's
      result line starts with its hwtrace file's name.

      With --objects PERF_REPORT_DSO_SYM (the output of `perf report
      --stdio --children -s dso,sym -g none` of the same perf.data, which
      names the object of every function of every call chain), branches
      of equal weight under one node may also come in another order than
      perf's, but only where perf's order is not defined: perf lists equal
      branches by its key, object then symbol start, highest first, and
      compares objects by the addresses of its own structures in memory.
      So two equal branches into one object (or into functions whose object
      is not known) must come in perf's order; two into different objects
      may come in either. Such a graph must otherwise be the same tree,
      branch for branch (names, percentages), and its lines are not
      compared (they follow from the tree, as every other graph shows).

      With --plus0 PERF_SCRIPT_OUT (`perf script -F ip,sym,symoff,dso` of
      the same perf.data), the names perf gives a non-leaf frame at "+0x0"
      somewhere in the recording (a return address right after a
      function's last call, which hwtrace names by its caller: see
      "stacks") match any name on the same columns, as in "stacks". ld.so's
      start-up has one (_start's call of _dl_start returns to
      _dl_start_user+0x0), which reaches 1% in short time windows.

Prints "ok: ..." lines and exits 0, or prints "FAIL: ..." and exits 1.
"""
import collections
import re
import sys


def fold_perf_script(path):
    stacks = collections.Counter()
    wild = 0
    comm, frames = None, []

    def flush():
        nonlocal comm, frames
        if comm is not None:
            # frames are leaf first; a non-leaf "+0x0" frame is a wildcard
            names = []
            for i, (name, off0) in enumerate(frames):
                names.append('*' if (i > 0 and off0) else name)
            stacks[(comm,) + tuple(reversed(names))] += 1
        comm, frames = None, []

    for line in open(path, errors='replace'):
        line = line.rstrip('\n')
        if not line.strip():
            flush()
            continue
        if not line[0].isspace():
            flush()
            # "comm  ip sym+off (dso)" header: with -F comm,ip,... and a
            # call chain, the frames follow on their own lines; the comm
            # is everything before the first run of blanks.
            comm = line.split()[0]
            continue
        m = re.match(r'\s*([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$', line)
        if not m:
            raise SystemExit('FAIL: cannot parse perf script line: %r' % line)
        sym, dso = m.group(2), m.group(3)
        off0 = False
        sm = re.match(r'(.*)\+0x([0-9a-f]+)$', sym)
        if sm:
            sym, off0 = sm.group(1), int(sm.group(2), 16) == 0
        if sym == '[unknown]':
            if dso == '[unknown]':
                name = '[unknown]'
            elif dso.startswith('['):
                name = dso
            else:
                name = '[' + dso.rsplit('/', 1)[-1] + ']'
        else:
            name = sym
        if dso.startswith('[kernel.kallsyms]') or dso.endswith('.ko'):
            name += '_[k]'
        frames.append((name, off0))
    flush()
    return stacks


def read_folded(path):
    stacks = collections.Counter()
    for line in open(path):
        line = line.rstrip('\n')
        if not line:
            continue
        stack, count = line.rsplit(' ', 1)
        stacks[tuple(stack.split(';'))] += int(count)
    return stacks


def cmd_stacks(perf_out, folded):
    perf = fold_perf_script(perf_out)
    ours = read_folded(folded)
    total_perf, total_ours = sum(perf.values()), sum(ours.values())
    if total_perf != total_ours:
        print('FAIL: %d samples in perf script, %d in hwtrace folded stacks' %
              (total_perf, total_ours))
        return 1
    wild = 0
    rest = collections.Counter(ours)
    exact = [(s, n) for s, n in perf.items() if '*' not in s]
    pattern = [(s, n) for s, n in perf.items() if '*' in s]
    bad = []
    for s, n in exact:
        if rest[s] < n:
            bad.append((s, n, rest[s]))
        rest[s] -= n
    for s, n in pattern:
        wild += n
        for _ in range(n):
            match = None
            for o, k in rest.items():
                if k > 0 and len(o) == len(s) and all(a == '*' or a == b for a, b in zip(s, o)):
                    match = o
                    break
            if match is None:
                bad.append((s, 1, 0))
                break
            rest[match] -= 1
    if bad:
        for s, want, got in bad[:10]:
            print('FAIL: perf stack x%d, hwtrace x%d: %s' % (want, got, ';'.join(s)))
        left = [(o, k) for o, k in rest.items() if k > 0]
        for o, k in left[:10]:
            print('  hwtrace has x%d: %s' % (k, ';'.join(o)))
        return 1
    print('ok: %d samples, %d distinct stacks, identical multisets (%d samples had a '
          'caller frame at +0x0 matched by position)' % (total_perf, len(perf), wild))
    return 0


def parse_report(path):
    rows = {}
    for line in open(path, errors='replace'):
        m = re.match(r'^\s+(\d+\.\d+)%\s+(?:(\d+\.\d+)%\s+)?(\S+)\s+(\S+)\s+(\[.\])\s+(.*?)\s*$',
                     line)
        if not m:
            continue
        first, second = float(m.group(1)), m.group(2)
        key = (m.group(3), m.group(4), m.group(5) + ' ' + m.group(6))
        rows[key] = (first, float(second)) if second is not None else (first,)
    return rows


def unresolved(key):
    sym = key[2].split(' ', 1)[1]
    return (bool(re.match(r'^0x[0-9a-f]+$', sym)) or (sym.startswith('[') and sym.endswith(']'))
            or sym == '@plt')


def cmd_report(perf_out, ours_out, min_pct):
    min_pct = float(min_pct)
    perf, ours = parse_report(perf_out), parse_report(ours_out)
    skipped = sum(1 for k in perf if unresolved(k)) + sum(1 for k in ours if unresolved(k))
    perf = {k: v for k, v in perf.items() if not unresolved(k)}
    ours = {k: v for k, v in ours.items() if not unresolved(k)}
    want = {k: v for k, v in perf.items() if v[0] >= min_pct}
    got = {k: v for k, v in ours.items() if v[0] >= min_pct}
    if not want:
        print('FAIL: perf report shows no entry at or above %.2f%%' % min_pct)
        return 1
    ok = True
    for k, v in sorted(want.items(), key=lambda kv: -kv[1][0]):
        g = ours.get(k)
        if g is None or len(g) != len(v) or any(abs(a - b) > 0.011 for a, b in zip(v, g)):
            print('FAIL: %s: perf %s, hwtrace %s' % (' '.join(k), v, g))
            ok = False
    for k in got:
        if k not in want:
            print('FAIL: hwtrace shows %s %s, perf does not reach %.2f%%' % (k, got[k], min_pct))
            ok = False
    if ok:
        print('ok: %d entries at or above %.2f%% agree (%d unresolved-address entries '
              'left out): %s' % (
            len(want), min_pct, skipped,
            ', '.join('%s %s' % (k[2], '/'.join('%.2f' % x for x in v))
                      for k, v in sorted(want.items(), key=lambda kv: -kv[1][0]))))
    return 0 if ok else 1


ENTRY = re.compile(r'^\s+(\d+\.\d+)%\s+(?:(\d+\.\d+)%\s+)?(.*?)\s*$')


def parse_graphs(path):
    """Entry line -> its graph lines, for the entries of a report."""
    blocks, cur, event = {}, None, ''
    for line in open(path, errors='replace'):
        line = line.rstrip()
        ev = re.match(r"^# Samples: \S+\s+of event '([^']*)'", line)
        if ev:
            event = ev.group(1)
        if not line or line.startswith('#'):
            cur = None
            continue
        m = ENTRY.match(line)
        if m and not line.startswith('            '):
            key = re.sub(r'\s+', ' ', line.strip())
            if event:
                key = '%s: %s' % (event, key)
            cur = blocks.setdefault(key, [])
            continue
        if cur is not None:
            cur.append(line)
    return blocks


GRAPH_LINE = re.compile(r'^([\s|]*(?:---|--\d+\.\d+%--)?)(.*)$')


def same_graph(perf, ours):
    """Line for line, with the unresolved-address exception."""
    if len(perf) != len(ours):
        return False
    for a, b in zip(perf, ours):
        if a == b:
            continue
        ma, mb = GRAPH_LINE.match(a), GRAPH_LINE.match(b)
        if ma.group(1) != mb.group(1):
            return False
        if ma.group(2) in PLUS0:
            continue
        if not (re.match(r'^(0x[0-9a-f]+|0|@plt)$', ma.group(2)) and
                re.match(r'^\[.*\]$', mb.group(2))):
            return False
    return True


def unresolved_entry(key):
    """An entry of addresses without a symbol (perf: one per address,
    "0x..." or "0000000000000000"; hwtrace: one per object, "[object]")."""
    sym = key.rsplit('] ', 1)[-1] if '] ' in key else ''
    # "@plt": perf's name for a PLT slot whose relocation names no symbol
    # (IRELATIVE), an address without a symbol to hwtrace.
    return bool(re.match(r'^(0x)?[0-9a-f]+$', sym) or re.match(r'^\[.*\]$', sym) or sym == '@plt')


def pct_of(key):
    return float(key.split(': ', 1)[-1].split('%', 1)[0])


# function name -> the objects perf names for it (graphs --objects)
OBJECTS = {}
PLUS0 = set()


def read_plus0(path):
    """The names perf gives non-leaf frames at +0x0 in perf script output."""
    names, depth = set(), 0
    for line in open(path, errors='replace'):
        if not line.strip() or not line[0].isspace():
            depth = 0
            continue
        m = re.match(r'\s*[0-9a-f]+\s+(.*?)\+0x0\s+\(', line)
        if m and depth > 0:
            names.add(m.group(1))
        depth += 1
    return names


def read_objects(path):
    objs = collections.defaultdict(set)
    for line in open(path, errors='replace'):
        m = re.match(r'^\s+\d+\.\d+%\s+\d+\.\d+%\s+(\S+)\s+\[.\]\s+(.*?)\s*$', line)
        if m:
            objs[m.group(2)].add(m.group(1))
    return objs


class Node:
    def __init__(self, pct, name, col):
        self.pct, self.names, self.kids, self.col = pct, [name], [], col


BRANCH = re.compile(r'^--(\d+\.\d+%)--(.*)$')


def parse_tree(graph):
    """A graph's lines as a tree of Nodes (a chain of names each, then the
    branches under it), or None when the lines do not parse."""
    root = Node(None, None, -1)
    root.names = []
    stack = [root]
    for line in graph:
        i = len(line) - len(line.lstrip(' |'))
        rest = line[i:]
        if not rest:
            continue
        m = BRANCH.match(rest)
        if rest.startswith('---'):
            stack = [root]
            node = Node(None, rest[3:], i + 3)
        elif m:
            while len(stack) > 1 and stack[-1].col != i - 1:
                stack.pop()
            if stack[-1].col != i - 1 and stack[-1] is not root:
                return None
            # its lines and branches: 11 columns right of its parent's
            node = Node(m.group(1), m.group(2), i - 1 + 11)
        else:
            while len(stack) > 1 and stack[-1].col != i:
                stack.pop()
            if stack[-1].col != i or stack[-1].kids:
                return None
            stack[-1].names.append(rest)
            continue
        stack[-1].kids.append(node)
        stack.append(node)
    return root


def same_name(a, b):
    return a == b or a in PLUS0 or (re.match(r'^(0x[0-9a-f]+|0|@plt)$', a) and
                                    re.match(r'^\[.*\]$', b))


def objects_of(name):
    return OBJECTS.get(name, set())


def same_tree(a, b):
    """Node a (perf's) and b (hwtrace's) are the same branch for branch,
    equal siblings into different objects perhaps in another order: returns
    the number of such groups moved, or None when they differ."""
    if a.pct != b.pct or len(a.names) != len(b.names) or len(a.kids) != len(b.kids):
        return None
    if not all(same_name(x, y) for x, y in zip(a.names, b.names)):
        return None
    moved, i = 0, 0
    while i < len(a.kids):
        j = i
        while j < len(a.kids) and a.kids[j].pct == a.kids[i].pct:
            j += 1
        mine, theirs = a.kids[i:j], b.kids[i:j]
        if any(k.pct != a.kids[i].pct for k in theirs):
            return None
        where = []
        for k in mine:
            for n, t in enumerate(theirs):
                sub = None if n in where else same_tree(k, t)
                if sub is not None:
                    where.append(n)
                    moved += sub
                    break
            else:
                return None
        if where != sorted(where):
            # only branches into different (known) objects may swap
            for x in range(len(mine)):
                for y in range(x + 1, len(mine)):
                    ox, oy = objects_of(mine[x].names[0]), objects_of(mine[y].names[0])
                    if where[x] > where[y] and (not ox or not oy or ox & oy):
                        return None
            moved += 1
        i = j
    return moved


def ties_reordered(perf, ours):
    """The two graphs are the same tree with equal branches into different
    objects in another order (at least one such group moved)."""
    a, b = parse_tree(perf), parse_tree(ours)
    moved = same_tree(a, b) if a is not None and b is not None else None
    return bool(moved)


def cmd_graphs(perf_out, ours_out, min_pct):
    min_pct = float(min_pct)
    perf, ours = parse_graphs(perf_out), parse_graphs(ours_out)
    checked, lines, bad, reordered = 0, 0, 0, 0
    for key, graph in perf.items():
        if pct_of(key) < min_pct:
            continue
        if unresolved_entry(key):
            continue
        got = ours.get(key)
        if got is not None and not same_graph(graph, got) and OBJECTS and \
                ties_reordered(graph, got):
            reordered += 1
            checked += 1
            lines += len(graph)
            continue
        if got is None or not same_graph(graph, got):
            bad += 1
            print('FAIL: the graph of "%s" differs' % key)
            if got is None:
                print('  hwtrace has no such entry')
            else:
                import difflib
                for d in list(difflib.unified_diff(graph, got, 'perf', 'hwtrace',
                                                   lineterm=''))[:40]:
                    print('  ' + d)
            continue
        checked += 1
        lines += len(graph)
    for key in ours:
        if pct_of(key) >= min_pct and key not in perf and not unresolved_entry(key):
            bad += 1
            print('FAIL: hwtrace shows "%s", perf has no such entry' % key)
    if not checked and not bad:
        print('FAIL: perf report shows no entry at or above %.2f%%' % min_pct)
        return 1
    if bad:
        return 1
    print('ok: %d entries at or above %.2f%% have the same call graphs (%d lines; %d with '
          'equal branches into different objects in another order)' %
          (checked, min_pct, lines, reordered))
    return 0


if __name__ == '__main__':
    while len(sys.argv) >= 4 and sys.argv[1] == 'graphs' and sys.argv[2] in ('--objects',
                                                                               '--plus0'):
        if sys.argv[2] == '--objects':
            OBJECTS.update(read_objects(sys.argv[3]))
        else:
            PLUS0.update(read_plus0(sys.argv[3]))
        del sys.argv[2:4]
    if len(sys.argv) >= 5 and (len(sys.argv) - 2) % 3 == 0 and sys.argv[1] == 'graphs':
        rc = 0
        for i in range(2, len(sys.argv), 3):
            if len(sys.argv) > 5:
                print('%s: ' % sys.argv[i + 1].rsplit('/', 1)[-1], end='')
            rc |= cmd_graphs(sys.argv[i], sys.argv[i + 1], sys.argv[i + 2])
        sys.exit(rc)
    if len(sys.argv) == 4 and sys.argv[1] == 'stacks':
        sys.exit(cmd_stacks(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 5 and sys.argv[1] == 'report':
        sys.exit(cmd_report(sys.argv[2], sys.argv[3], sys.argv[4]))
    print(__doc__)
    sys.exit(2)
