#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Drives headless Chromium over chromedriver's WebDriver HTTP API (python's
standard library only) to test hwtrace's interactive flame graphs in a real
browser: the page draws the right frames at the right widths, hovering
shows name, samples and percentage, a regex search highlights exactly the
matching frames and reports the exact matched share (also of frames too
narrow to draw), a click zooms (widths change as computed), reset restores,
kinds get their colours, icicle flips, the SVG's prompt-driven search and
the differential graph's red/blue work.

Ground truth is computed here from the folded input, independently of the
C code. Exit 0: pass; 77: skipped (reason on stderr); anything else: fail.

usage: browser_flame.py HWTRACE WORKDIR
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

ELEM = "element-6066-11e4-a52e-4f735466cecf"
WIDTH = 1200
INNER = WIDTH - 20  # the graph spans the width less 10 px padding each side


def skip(reason):
    print("SKIP: " + reason, file=sys.stderr)
    sys.exit(77)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok: " + what)


def near(a, b, eps=0.02):
    return abs(float(a) - float(b)) <= eps


class Driver:
    def __init__(self, workdir):
        chromedriver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
        chromium = shutil.which("chromium") or "/usr/bin/chromium"
        if not os.access(chromedriver, os.X_OK):
            skip("chromedriver is not installed (Debian package chromium-driver)")
        if not os.access(chromium, os.X_OK):
            skip("chromium is not installed (Debian package chromium)")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.log = open(os.path.join(workdir, "chromedriver.log"), "w")
        self.proc = subprocess.Popen([chromedriver, "--port=%d" % self.port],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.base = "http://127.0.0.1:%d" % self.port
        deadline = time.time() + 20
        while True:
            try:
                if self.req("GET", "/status")["ready"]:
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError("chromedriver did not start")
            time.sleep(0.1)
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1300,900",
                "--user-data-dir=" + os.path.join(workdir, "chromium-profile")]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args}}}}
        self.sid = self.req("POST", "/session", caps)["sessionId"]

    def req(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        r = urllib.request.Request(self.base + path, data=data, method=method,
                                   headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=60) as resp:
                return json.loads(resp.read().decode())["value"]
        except urllib.error.HTTPError as e:
            raise RuntimeError("%s %s: %s" % (method, path, e.read().decode()[:500]))

    def s(self, method, path, body=None):
        return self.req(method, "/session/%s%s" % (self.sid, path), body)

    def open(self, path):
        self.s("POST", "/url", {"url": "file://" + os.path.abspath(path)})

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css):
        return self.s("POST", "/element", {"using": "css selector", "value": css})[ELEM]

    def click(self, el):
        self.s("POST", "/element/%s/click" % el, {})

    def type(self, el, text):
        self.s("POST", "/element/%s/value" % el, {"text": text})

    def hover(self, el):
        self.s("POST", "/actions", {"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [{"type": "pointerMove", "duration": 0,
                         "origin": {ELEM: el}, "x": 0, "y": 0}]}]})

    def close(self):
        try:
            self.s("DELETE", "")
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.log.close()


# The frames as the page draws them: path (names from below the root),
# node index, x, width, fill, matched flag.
FRAMES_JS = """
var out=[];document.querySelectorAll('rect.f').forEach(function(r){
  var i=+r.getAttribute('data-i');
  out.push({path:window.hwtFlame.path(i),i:i,x:+r.getAttribute('x'),y:+r.getAttribute('y'),
            w:+r.getAttribute('width'),fill:r.getAttribute('fill'),m:r.getAttribute('data-m')==='1'});
});return out;"""


def frames(d):
    return {"/".join(f["path"]): f for f in d.js(FRAMES_JS)}


def folded_values(text):
    """Value of every path prefix (joined with '/'), '' for the root."""
    vals = {"": 0}
    for line in text.splitlines():
        if not line.strip():
            continue
        stack, count = line.rsplit(" ", 1)
        count = int(count)
        vals[""] += count
        parts = [p[:-4] if p[-4:] in ("_[k]", "_[i]", "_[j]") else p for p in stack.split(";")]
        for k in range(1, len(parts) + 1):
            key = "/".join(parts[:k])
            vals[key] = vals.get(key, 0) + count
    return vals


def matched_share(text, pattern):
    import re
    r = re.compile(pattern)
    total = hit = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        stack, count = line.rsplit(" ", 1)
        total += int(count)
        names = [p[:-4] if p[-4:] in ("_[k]", "_[i]", "_[j]") else p for p in stack.split(";")]
        if any(r.search(n) for n in names):
            hit += int(count)
    return 100.0 * hit / total


def hue(fill):
    check(fill.startswith("hsl("), "fill %s is a kind colour" % fill)
    return int(fill[4:].split(",")[0])


def main():
    hwtrace, workdir = sys.argv[1], sys.argv[2]
    main_stacks = [
        ("prog;_start;main;parse;lex", 30000),
        ("prog;_start;main;parse;lex;read_k_[k]", 10000),
        ("prog;_start;main;parse", 10000),
        ("prog;_start;main;eval;compute", 40000),
        ("prog;_start;main;eval;lex", 5000),
        ("prog;_start;main;eval", 5000),
        ("prog;_start;init", 10000),
    ]
    # A long tail of 20,000 frames far narrower than a pixel.
    tail = [("prog;_start;main;tail;f%d" % i, 1) for i in range(20000)]
    text = "".join("%s %d\n" % s for s in main_stacks + tail)
    folded = os.path.join(workdir, "in.folded")
    with open(folded, "w") as f:
        f.write(text)
    vals = folded_values(text)
    total = vals[""]

    def render(out, *extra):
        r = subprocess.run([hwtrace, "flame", "--folded-in", folded, "-o", out] + list(extra),
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("hwtrace flame failed: " + r.stderr)

    html = os.path.join(workdir, "g.html")
    svg = os.path.join(workdir, "g.svg")
    icicle = os.path.join(workdir, "icicle.html")
    render(html)
    render(svg)
    render(icicle, "--icicle")

    d = Driver(workdir)
    try:
        d.open(html)
        nodes = d.js("return window.hwtFlame.nodes;")
        fr = frames(d)
        check(nodes == 20012, "page holds every frame: %d nodes" % nodes)
        check(len(fr) < 40, "only frames wider than 0.1 px are in the DOM (%d rects)" % len(fr))
        check(near(fr[""]["w"], INNER), "root spans the width")
        for path, f in fr.items():
            want = vals[path] / total * INNER
            if not near(f["w"], want):
                raise AssertionError("%s: width %s, want %.3f" % (path, f["w"], want))
        check(True, "all %d drawn widths match the folded counts" % len(fr))
        check("prog/_start/main/tail/f7" not in fr, "sub-pixel frames are not drawn")
        check(180 <= hue(fr["prog/_start/main/parse/lex/read_k"]["fill"]) <= 205,
              "kernel frame in the aqua range")
        check(0 <= hue(fr["prog/_start/main/parse/lex"]["fill"]) <= 50, "user frame in the warm range")
        root_y = fr[""]["y"]
        check(root_y > fr["prog/_start/main"]["y"], "flame: root at the bottom")

        # Hover shows name, samples and percentage.
        d.hover(d.find('rect[data-n="compute"]'))
        det = d.js("return document.getElementById('details').textContent;")
        check(det == "compute (40,000 samples, %.2f%%)" % (100.0 * 40000 / total),
              "hover details: %s" % det)

        # Search by regex through the input box.
        pattern = "^(lex|f1234)$"
        d.type(d.find("#search"), pattern)
        mtxt = d.js("return document.getElementById('matched').textContent;")
        want = "Matched: %.2f%%" % matched_share(text, pattern)
        check(mtxt == want, "matched share over all frames (drawn or not): %s" % mtxt)
        fr = frames(d)
        hits = sorted(p for p, f in fr.items() if f["m"])
        check(hits == ["prog/_start/main/eval/lex", "prog/_start/main/parse/lex"],
              "search highlights exactly the drawn matches: %s" % hits)
        check(all(fr[p]["fill"] == "rgb(230,0,230)" for p in hits), "matches are highlighted")
        d.type(d.find("#search"), "\ue003" * len(pattern))  # backspaces clear the search
        check(not any(f["m"] for f in frames(d).values()), "clearing the search clears highlights")

        # Click zooms: parse fills the width, its child scales with it.
        d.click(d.find('rect[data-n="parse"]'))
        fr = frames(d)
        check(near(fr["prog/_start/main/parse"]["w"], INNER), "clicked frame fills the width")
        want = vals["prog/_start/main/parse/lex"] / vals["prog/_start/main/parse"] * INNER
        check(near(fr["prog/_start/main/parse/lex"]["w"], want),
              "child width after zoom: %.2f" % fr["prog/_start/main/parse/lex"]["w"])
        check(near(fr["prog/_start/main"]["w"], INNER) and near(fr[""]["w"], INNER),
              "ancestors span the width")
        check("prog/_start/main/eval" not in fr, "frames outside the zoom are gone")
        d.hover(d.find('rect[data-n="lex"]'))
        det = d.js("return document.getElementById('details').textContent;")
        check(det == "lex (40,000 samples, %.2f%%, 80.00%% of zoom)" % (100.0 * 40000 / total),
              "hover in zoom: %s" % det)
        d.click(d.find("#reset"))
        fr = frames(d)
        check("prog/_start/main/eval" in fr and
              near(fr["prog/_start/main/parse"]["w"], 50000 / total * INNER), "reset restores the view")

        # Icicle: the root is at the top.
        d.open(icicle)
        fr = frames(d)
        check(fr[""]["y"] < fr["prog/_start/main"]["y"], "icicle: root at the top")

        # The SVG: search through its prompt, zoom by click.
        d.open(svg)
        fr = frames(d)
        check(near(fr["prog/_start/main/eval"]["w"], 50000 / total * INNER), "SVG draws the same widths")
        d.click(d.find("#search"))
        d.s("POST", "/alert/text", {"text": "^eval$"})
        d.s("POST", "/alert/accept", {})
        mtxt = d.js("return document.getElementById('matched').textContent;")
        check(mtxt == "Matched: %.2f%%" % (100.0 * 50000 / total), "SVG prompt search: %s" % mtxt)
        d.click(d.find('rect[data-n="eval"]'))
        fr = frames(d)
        check(near(fr["prog/_start/main/eval"]["w"], INNER) and
              near(fr["prog/_start/main/eval/compute"]["w"], 0.8 * INNER), "SVG click zooms")

        # Differential: b grew (red), c shrank (blue).
        new = os.path.join(workdir, "new.folded")
        old = os.path.join(workdir, "old.folded")
        with open(new, "w") as f:
            f.write("a;b 100\na;c 100\n")
        with open(old, "w") as f:
            f.write("a;b 50\na;c 150\n")
        diff = os.path.join(workdir, "diff.html")
        r = subprocess.run([hwtrace, "flame", "--folded-in", new, "--diff", old, "-o", diff],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("hwtrace flame --diff failed: " + r.stderr)
        d.open(diff)
        fr = frames(d)
        b, c = fr["a/b"]["fill"], fr["a/c"]["fill"]
        check(b.startswith("rgb(255,") and not b.endswith(",255)"), "grown frame is red: " + b)
        check(c.endswith(",255)") and not c.startswith("rgb(255,"), "shrunk frame is blue: " + c)
        d.hover(d.find('rect[data-n="b"]'))
        det = d.js("return document.getElementById('details').textContent;")
        check(det == "b (100 samples, 50.00%; base 50, +25.00%)", "diff hover: " + det)
    finally:
        d.close()
    print("browser flame graph test: all checks passed")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print("FAIL: %s" % e, file=sys.stderr)
        sys.exit(1)
