#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""How the interactive flame graph of 50,000 distinct stacks behaves in a
real browser (headless Chromium through chromedriver): time to load and
draw, DOM size against the frames it holds, and the time of a regex search
over every frame, a zoom and a reset. Run bench_flame first: it writes the
graphs this opens.

usage: bench/bench_flame_browser.py [WORKDIR]   (default /tmp)
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "report"))
import browser_flame  # noqa: E402  (the test's WebDriver client)


def main():
    workdir = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = browser_flame.Driver(tmp)
        try:
            for ext in ("html", "svg"):
                path = os.path.join(workdir, "bench_flame." + ext)
                if not os.path.exists(path):
                    sys.exit("%s is missing: run build/bench/bench_flame %s first" % (path, workdir))
                t0 = time.time()
                d.open(path)  # returns when the page has loaded and the script ran
                load = time.time() - t0
                nodes = d.js("return window.hwtFlame.nodes;")
                script = int(d.js("return document.getElementById('hwt-flame').getAttribute('data-ms');"))
                dom = d.js("return document.getElementsByTagName('*').length;")
                t = d.js("var t=performance.now();window.hwtFlame.search('^parse_1[0-9]*$');"
                         "return performance.now()-t;")
                matched = d.js("return document.getElementById('matched').textContent;")
                z = d.js("var t=performance.now();window.hwtFlame.zoom(5);return performance.now()-t;")
                r = d.js("var t=performance.now();window.hwtFlame.reset();return performance.now()-t;")
                rows.append((ext, os.path.getsize(path), nodes, dom, load * 1e3, script, t, z, r, matched))
        finally:
            d.close()
    print("interactive flame graph of 50,000 distinct stacks in headless Chromium\n")
    print("%-5s %7s %8s %9s %8s %9s %9s %8s %8s  %s" % ("file", "MB", "frames", "DOM nodes", "load ms",
                                                      "script ms", "search ms", "zoom ms", "reset ms",
                                                      "search result"))
    for ext, size, nodes, dom, load, script, t, z, r, m in rows:
        print("%-5s %7.2f %8d %9d %8.0f %9d %9.1f %8.1f %8.1f  %s" % (ext, size / 1e6, nodes, dom, load, script,
                                                                   t, z, r, m))
    print("\n(load: navigation until the page has loaded and drawn; script: of that, the page's script\n"
          " parsing the data and drawing; search: a regex over every frame)")


if __name__ == "__main__":
    main()
