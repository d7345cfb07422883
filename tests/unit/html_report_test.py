"""`gapwatch report --html`: one self-contained page (no script, nothing fetched), every recorded
string escaped, the same verdicts as the text and JSON reports, and, where Debian's chromium is
installed (scripts/setup.sh installs it), a page that renders headless with no console error
whose screenshot is not blank and shows its plots in their colours. Where chromium is absent the
render test is skipped and says so (exit 77).

    html_report_test.py page GAPWATCH GOLDEN_DIR              the page itself
    html_report_test.py render GAPWATCH GOLDEN_DIR [SHOTS]    rendered by chromium

GOLDEN_DIR holds the nccl-bound two-rank recordings (tests/golden). SCREENSHOT_DIR, when given,
receives the screenshots (scripts/regenerate-screenshots.sh uses it for docs/images/)."""
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
HANG = 180
# Okabe-Ito colours the page uses for causes (report_html.cpp): at least the nccl_host blue and
# the launch_overhead sky blue are drawn for nccl-bound.
NCCL_BLUE = (0x00, 0x72, 0xB2)
SKY_BLUE = (0x56, 0xB4, 0xE9)


def png_pixels(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA, non-interlaced PNG, as
    chromium writes its screenshots."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + predictor) & 0xFF
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, channels)])
        previous = line
    return width, height, rows


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def render(browser, page, png, width, height, workdir):
    """Screenshot of `page` at width x height; returns chromium's log (console messages included)."""
    r = subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--no-first-run", "--user-data-dir=" + os.path.join(workdir, "profile"),
                        "--enable-logging=stderr", "--v=0", "--window-size=%d,%d" % (width, height),
                        "--screenshot=" + png, "file://" + page],
                       capture_output=True, text=True, timeout=HANG)
    if r.returncode != 0 or not os.path.exists(png):
        raise AssertionError("chromium failed (%d): %s" % (r.returncode, r.stderr[-2000:]))
    return r.stderr


def main(argv):
    mode, gapwatch, golden = argv[1], argv[2], argv[3]
    shots = argv[4] if len(argv) > 4 else None
    browser = chromium()
    if mode == "render" and not browser:
        print("skipped: no chromium on PATH (scripts/setup.sh installs Debian's chromium)")
        return SKIP
    failures = []
    work = tempfile.mkdtemp(prefix="gw-html-")
    try:
        # Names a browser would take for markup, to show they are escaped (the file name is printed);
        # the rendered page, which docs/images shows, has the plain names.
        recordings = []
        for rank in (0, 1):
            name = os.path.join(work, ("<b>rank%d<i>&'\".gwt" if mode == "page" else "nccl-bound.rank%d.gwt") % rank)
            shutil.copy(os.path.join(golden, "nccl-bound.rank%d.gwt" % rank), name)
            recordings.append(name)
        page = os.path.join(work, "report.html")
        r = subprocess.run([gapwatch, "report", "--html", page] + recordings, capture_output=True, text=True,
                           timeout=HANG)
        if r.returncode != 0:
            return print("FAIL: report --html exited %d: %s" % (r.returncode, r.stderr)) or 1
        j = subprocess.run([gapwatch, "report", "--json"] + recordings, capture_output=True, text=True, timeout=HANG)
        report = json.loads(j.stdout)
        with open(page, encoding="utf-8") as f:
            text = f.read()

        if not text.startswith("<!DOCTYPE html>") or not text.rstrip().endswith("</html>"):
            failures.append("not one whole HTML document")
        for pattern in (r"<script", r"\bsrc\s*=", r"<link\b", r"https?://", r"@import", r"url\("):
            if re.search(pattern, text, re.I):
                failures.append("the page fetches or runs something: %s" % pattern)
        if mode == "page" and ("<b>rank0<i>" in text or "&'\"" in text):
            failures.append("a recorded file name is not escaped")
        if mode == "page" and html.escape("<b>rank0<i>&'\".gwt", quote=True).replace("&#x27;", "&#39;") not in text:
            failures.append("the escaped file name is missing")
        for p in report["processes"]:
            if html.escape(p["verdict"], quote=True).replace("&#x27;", "&#39;") not in text:
                failures.append("rank %s's verdict is not the report's: %r" % (p["rank"], p["verdict"]))
        if text.count("<svg") < 8:  # per rank: cause bar, histogram, gap strip, step plot
            failures.append("expected at least 8 plots, found %d" % text.count("<svg"))
        if "Ranks" not in text:
            failures.append("no rank table for a two-rank run")

        # The same two ranks given twice are two jobs (rank 0 twice): each job's ranks get a table
        # of their own, and nothing but rows sits inside a table.
        twice = os.path.join(work, "twice.html")
        r = subprocess.run([gapwatch, "report", "--html", twice] + recordings + recordings, capture_output=True,
                           text=True, timeout=HANG)
        if r.returncode != 0:
            failures.append("report --html of two jobs exited %d: %s" % (r.returncode, r.stderr))
        else:
            with open(twice, encoding="utf-8") as f:
                two = f.read()
            for heading in ("<h3>Job 1 of 2: 2 ranks</h3>", "<h3>Job 2 of 2: 2 ranks</h3>"):
                if heading not in two:
                    failures.append("two jobs' page lacks %r" % heading)
            if two.count("<tr><td><a href=") != 4:
                failures.append("two jobs' rank tables have %d rows, not 4" % two.count("<tr><td><a href="))
            for table in re.findall(r"<table>(.*?)</table>", two, re.S):
                if re.search(r"<(p|h[1-6]|div)\b", table):
                    failures.append("a block inside a rank table: %r" % table[:200])

        # gapwatch diff --html: the same page rules, its verdict and what changed as `diff --json` says.
        diff_page = os.path.join(work, "diff.html")
        runs = [os.path.join(golden, "data-bound.gwt"), os.path.join(golden, "healthy.gwt")]
        d = subprocess.run([gapwatch, "diff", "--html", diff_page] + runs, capture_output=True, text=True, timeout=HANG)
        dj = subprocess.run([gapwatch, "diff", "--json"] + runs, capture_output=True, text=True, timeout=HANG)
        if d.returncode != 0 or dj.returncode != 0:
            failures.append("diff --html exited %d: %s" % (d.returncode, d.stderr))
        else:
            with open(diff_page, encoding="utf-8") as f:
                diff_text = f.read()
            document = json.loads(dj.stdout)
            for pattern in (r"<script", r"\bsrc\s*=", r"<link\b", r"https?://"):
                if re.search(pattern, diff_text, re.I):
                    failures.append("the diff page fetches or runs something: %s" % pattern)
            for line in [document["verdict"]] + document["changes"][1:]:
                if html.escape(line, quote=True).replace("&#x27;", "&#39;") not in diff_text:
                    failures.append("the diff page lacks %r" % line)
            if "<svg" not in diff_text:
                failures.append("the diff page has no chart")

        # An unwritable destination: one line, exit 4, nothing half-written.
        bad = subprocess.run([gapwatch, "report", "--html", os.path.join(work, "missing", "r.html"), recordings[0]],
                             capture_output=True, text=True, timeout=HANG)
        if bad.returncode != 4 or len(bad.stderr.strip().splitlines()) != 1 or "--html" not in bad.stderr:
            failures.append("an unwritable --html: exit %d, %r" % (bad.returncode, bad.stderr))

        if mode == "render":
            for width, height, label in ((1280, 2200, "desktop"), (390, 2600, "phone")):
                png = os.path.join(work, "report-%s.png" % label)
                log = render(browser, page, png, width, height, work)
                console = [l for l in log.splitlines() if "CONSOLE" in l or "Uncaught" in l]
                if console:
                    failures.append("%s: console messages: %s" % (label, console[:3]))
                w, h, rows = png_pixels(png)
                pixels = [px for row in rows[::4] for px in row[::4]]
                ink = sum(1 for px in pixels if px != (255, 255, 255)) / len(pixels)
                if ink < 0.05:
                    failures.append("%s: the screenshot is blank (%.1f%% ink)" % (label, 100 * ink))
                for colour, what in ((NCCL_BLUE, "nccl_host"), (SKY_BLUE, "launch_overhead")):
                    near = sum(1 for px in pixels if all(abs(a - b) <= 6 for a, b in zip(px, colour)))
                    if near < 20:
                        failures.append("%s: the %s colour is hardly drawn (%d samples): no plot?" % (label, what, near))
                if shots:
                    os.makedirs(shots, exist_ok=True)
                    shutil.copy(png, os.path.join(shots, "report-nccl-bound-%s.png" % label))
                print("%s: %dx%d, %.0f%% ink" % (label, w, h, 100 * ink))
            if os.path.exists(diff_page):
                png = os.path.join(work, "diff.png")
                log = render(browser, diff_page, png, 1280, 1800, work)
                if [l for l in log.splitlines() if "CONSOLE" in l]:
                    failures.append("diff page: console messages")
                _, _, rows = png_pixels(png)
                pixels = [px for row in rows[::4] for px in row[::4]]
                if sum(1 for px in pixels if all(abs(a - b) <= 6 for a, b in zip(px, NCCL_BLUE))) < 20:
                    failures.append("diff page: run B's bars are not drawn")
                if shots:
                    shutil.copy(png, os.path.join(shots, "diff-data-bound-vs-healthy.png"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL: " + f)
    print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
