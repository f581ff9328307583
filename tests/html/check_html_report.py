#!/usr/bin/env python3
"""The HTML report (`audit --html`, `mpaudit html`) in a real headless browser (Chromium from Debian):

- `audit --html` and `mpaudit html` of its JSON write the same page;
- the page loads with no console message (a script error, or a request the page's Content-Security-Policy
  refused, would print one) and no network request (Chromium's net log holds no URL but the file's);
- its screenshot is not blank (many colours, little background);
- a 10,000-node report (bench/ui_synthetic_report.cpp) opens, and then sorts and filters, in the times
  printed (figures for the record, not assertions: timings do not gate tests).

The browser is kept off the network: its background services are disabled, every host name resolves to
nothing and the proxy is a closed local port, so no traffic leaves the machine whatever a page asks for.

Usage: check_html_report.py --mpaudit build/mpaudit --synthetic build/bench/mpaudit_ui_synthetic_report [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from checklist import Checklist  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "models" / "demo"
OFFLINE = ["--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
           "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
           "--no-first-run", "--no-default-browser-check", "--disable-client-side-phishing-detection",
           "--disable-domain-reliability", "--no-pings", "--metrics-recording-only",
           "--disable-features=Translate,OptimizationHints,MediaRouter,SpellCheck,AutofillServerCommunication",
           "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9"]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def page_requests(netlog: Path) -> set[str]:
    """The URLs the page asked for, from Chromium's net log: requests whose network isolation key is the
    page's file:// origin (the browser's own background requests carry none, and are kept off the network
    by OFFLINE)."""
    text = netlog.read_text()
    try:
        log = json.loads(text)
    except json.JSONDecodeError:  # the log of a browser that did not close it
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    urls = set()
    for event in log.get("events", []):
        params = event.get("params", {})
        if "url" in params and "file://" in str(params.get("network_isolation_key", "")):
            urls.add(params["url"])
    return urls


def browse(browser: str, page: Path, work: Path, extra: list[str], url_suffix: str = "") -> tuple[str, str, set[str]]:
    """Runs the browser on the page; returns its stdout, its console lines and the URLs the page requested."""
    netlog = work / "net.json"
    netlog.unlink(missing_ok=True)
    r = subprocess.run([browser, *OFFLINE, f"--user-data-dir={work / 'profile'}", f"--log-net-log={netlog}", *extra,
                        page.as_uri() + url_suffix], capture_output=True, text=True, timeout=120)
    console = [line for line in r.stderr.splitlines() if ":CONSOLE" in line]
    return r.stdout, "\n".join(console), page_requests(netlog)


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Decodes an 8-bit RGB/RGBA PNG (as Chromium writes screenshots) into rows of pixels."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), f"unexpected PNG format {depth}/{colour}"
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, previous = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = previous[i], previous[i - channels] if i >= channels else 0
            p = a + b - c
            pred = a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c) else c
            line[i] = (line[i] + (0, a, b, (a + b) // 2, pred)[kind]) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, channels, rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpaudit", type=Path, required=True)
    parser.add_argument("--synthetic", type=Path, required=True)
    parser.add_argument("--keep", type=Path, help="copy the pages and the screenshot here")
    args = parser.parse_args()
    browser = chromium()
    if not browser:
        print("html_report: no chromium on this machine (scripts/install-deps.sh installs it): skipped")
        return 77
    check = Checklist("html_report")

    with tempfile.TemporaryDirectory(prefix="mpaudit-html-") as tmp:
        work = Path(tmp)
        page, report = work / "attention.html", work / "attention.json"
        subprocess.run([args.mpaudit, "audit", DEMO / "tiny_attention.onnx", f"--input=hidden={DEMO / 'attention_hidden.npy'}",
                        f"--input=attention_mask={DEMO / 'attention_mask.npy'}", "--target=fp16", "--target=bf16",
                        "--quiet", "--json", report, "--html", page], check=False, capture_output=True)
        again = work / "again.html"
        subprocess.run([args.mpaudit, "html", report, "-o", again], check=True)
        check(page.is_file() and page.read_bytes() == again.read_bytes(), "audit --html and mpaudit html write the same page")

        # The checks can fail: a page with a script error and an image from the network is caught by both.
        bad = work / "bad.html"
        bad.write_text('<html><body><script>undefined_function()</script><img src="http://example.invalid/x.png"></body></html>')
        _, console, urls = browse(browser, bad, work, ["--dump-dom"])
        check("undefined_function" in console and "http://example.invalid/x.png" in urls,
              "a page with a script error and a network image fails both checks")

        shot = work / "attention.png"
        _, console, urls = browse(browser, page, work, ["--window-size=1400,1000", f"--screenshot={shot}"])
        check(console == "", "no console message while the page loads" + ("" if console == "" else ":\n" + console))
        check(urls <= {page.as_uri()}, f"no network request (net log URLs: {sorted(urls - {page.as_uri()})})")
        width, channels, rows = png_pixels(shot)
        background = rows[-1][:channels]
        pixels = [row[i:i + channels] for row in rows[::4] for i in range(0, len(row), channels * 4)]
        colours = len(set(pixels))
        share = sum(p != background for p in pixels) / len(pixels)
        check(colours > 50 and share > 0.2, f"the screenshot is not blank ({colours} colours, {share:.0%} not background)")
        dom, _, _ = browse(browser, page, work, ["--dump-dom"])
        check("tiny_attention.onnx" in dom and "mask/scale" in dom and 'class="fail"' in dom,
              "the page shows the model, its nodes and the failing verdict")

        big_report, big_page = work / "synthetic.json", work / "synthetic.html"
        subprocess.run([args.synthetic, "10000", big_report], check=True, capture_output=True)
        subprocess.run([args.mpaudit, "html", big_report, "-o", big_page], check=True)
        dom, console, urls = browse(browser, big_page, work, ["--dump-dom"], "#bench")
        figures = dict(re.findall(r'data-(render-ms|sort-ms|filter-ms)="([0-9.]+)"', dom))
        check(console == "" and urls <= {big_page.as_uri()} and len(figures) == 3,
              "a 10,000-node report loads, sorts and filters without an error or a request")
        print(f"html_report: 10,000-node page {big_page.stat().st_size / 1e6:.1f} MB: opened in {figures.get('render-ms')} ms, "
              f"sorted by verdict in {figures.get('sort-ms')} ms, filtered in {figures.get('filter-ms')} ms")
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for f in (page, shot, big_page):
                shutil.copy(f, args.keep / f.name)

    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
