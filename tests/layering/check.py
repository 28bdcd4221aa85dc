#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Compiles each layering probe with the exact command the build would use
# (from compile_commands.json; the probes' targets are not built by
# default) and checks the compiler's verdict: a forbidden header must be
# missing for the module, an allowed one found.
#   check.py COMPILE_COMMANDS_JSON
import json
import shlex
import subprocess
import sys

# probe file -> the error it must end with ("" : it must compile)
EXPECT = {
    "internal.c": "decoder/dec_int.h: No such file",
    "unlinked.c": "format/format.h: No such file",
    "public.c": "",
}

db = json.load(open(sys.argv[1]))
failed = 0
for name, want in EXPECT.items():
    entry = [e for e in db if e["file"].endswith("/tests/layering/" + name)]
    if len(entry) != 1:
        print(f"{name}: not in the compile database")
        failed += 1
        continue
    argv = shlex.split(entry[0]["command"])
    # syntax only, no object file
    out = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "-o":
            skip = True
            continue
        out.append("-fsyntax-only" if a == "-c" else a)
    r = subprocess.run(out, cwd=entry[0]["directory"], capture_output=True, text=True)
    if want:
        ok = r.returncode != 0 and want in r.stderr
    else:
        ok = r.returncode == 0
    print(f"{name}: {'ok' if ok else 'WRONG'}: expected "
          f"{('the error ' + repr(want)) if want else 'to compile'}; got exit {r.returncode}"
          f"{': ' + r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}")
    failed += not ok
sys.exit(1 if failed else 0)
