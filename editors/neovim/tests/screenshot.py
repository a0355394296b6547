#!/usr/bin/env python3
"""Renders a tmux pane capture (`tmux capture-pane -p -e`, ANSI colours) to
a PNG through headless Chromium, so the terminal tests leave a picture of
what the user saw next to the VS Code e2e screenshots.

    screenshot.py CAPTURE.ansi OUT.png [COLUMNS ROWS]

Standard library only; needs `chromium` (or $CHROMIUM) on the machine and
exits 0 with a message when it is missing (a picture is an artifact, not a
check)."""

import html
import os
import re
import shutil
import subprocess
import sys
import tempfile

# xterm's 16 colours, then the 6x6x6 cube and the grey ramp.
BASE = [
    "#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
    "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff",
]
LEVELS = [0, 95, 135, 175, 215, 255]


def palette(n):
    if n < 16:
        return BASE[n]
    if n < 232:
        n -= 16
        r, g, b = LEVELS[n // 36], LEVELS[n // 6 % 6], LEVELS[n % 6]
        return f"#{r:02x}{g:02x}{b:02x}"
    grey = 8 + (n - 232) * 10
    return f"#{grey:02x}{grey:02x}{grey:02x}"


FG, BG = "#d0d0d0", "#1c1c1c"


def apply(codes, style):
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            style.clear()
        elif c == 1:
            style["bold"] = True
        elif c == 3:
            style["italic"] = True
        elif c == 4:
            style["underline"] = True
        elif c == 7:
            style["reverse"] = True
        elif c == 22:
            style.pop("bold", None)
        elif c == 23:
            style.pop("italic", None)
        elif c == 24:
            style.pop("underline", None)
        elif c == 27:
            style.pop("reverse", None)
        elif 30 <= c <= 37 or 90 <= c <= 97:
            style["fg"] = palette(c - 30 if c < 90 else c - 90 + 8)
        elif 40 <= c <= 47 or 100 <= c <= 107:
            style["bg"] = palette(c - 40 if c < 100 else c - 100 + 8)
        elif c == 39:
            style.pop("fg", None)
        elif c == 49:
            style.pop("bg", None)
        elif c in (38, 48) and i + 1 < len(codes):
            key = "fg" if c == 38 else "bg"
            if codes[i + 1] == 5 and i + 2 < len(codes):
                style[key] = palette(codes[i + 2] % 256)
                i += 2
            elif codes[i + 1] == 2 and i + 4 < len(codes):
                r, g, b = (v % 256 for v in codes[i + 2:i + 5])
                style[key] = f"#{r:02x}{g:02x}{b:02x}"
                i += 4
        i += 1


def css(style):
    fg, bg = style.get("fg", FG), style.get("bg", BG)
    if style.get("reverse"):
        fg, bg = bg, fg
    out = [f"color:{fg}", f"background:{bg}"]
    if style.get("bold"):
        out.append("font-weight:bold")
    if style.get("italic"):
        out.append("font-style:italic")
    if style.get("underline"):
        out.append("text-decoration:underline")
    return ";".join(out)


SGR = re.compile(r"\x1b\[([0-9;:]*)m")
OTHER = re.compile(r"\x1b(\[[0-9;?]*[A-Za-ln-z]|\][^\x07]*\x07|[()][A-Z0-9])")


def to_html(text, columns):
    rows = []
    style = {}
    for line in text.rstrip("\n").split("\n"):
        line = OTHER.sub("", line)
        spans, pos, width = [], 0, 0
        for m in SGR.finditer(line):
            chunk = line[pos:m.start()]
            if chunk:
                spans.append(f'<span style="{css(style)}">{html.escape(chunk)}</span>')
                width += len(chunk)
            codes = [int(c) if c else 0 for c in re.split("[;:]", m.group(1))] or [0]
            apply(codes, style)
            pos = m.end()
        chunk = line[pos:]
        if chunk:
            spans.append(f'<span style="{css(style)}">{html.escape(chunk)}</span>')
            width += len(chunk)
        if width < columns:
            spans.append(f'<span style="{css(style)}">{" " * (columns - width)}</span>')
        rows.append("".join(spans))
    body = "\n".join(rows)
    return (
        "<!doctype html><meta charset=utf-8><style>html,body{margin:0;background:%s}"
        "pre{margin:0;padding:6px;font:14px/17px 'DejaVu Sans Mono',monospace;color:%s}</style>"
        "<pre>%s</pre>" % (BG, FG, body)
    )


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    capture, out = sys.argv[1], sys.argv[2]
    columns = int(sys.argv[3]) if len(sys.argv) > 3 else 160
    rows = int(sys.argv[4]) if len(sys.argv) > 4 else 45
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print(f"screenshot: no chromium, {out} not written")
        return
    with open(capture, encoding="utf-8", errors="replace") as f:
        page = to_html(f.read(), columns)
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "pane.html")
        with open(source, "w", encoding="utf-8") as f:
            f.write(page)
        # DejaVu Sans Mono at 14px is 8.43px wide; 17px lines; 6px padding.
        size = f"{int(columns * 8.43) + 14},{rows * 17 + 12}"
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--disable-background-networking", f"--user-data-dir={tmp}/profile",
             f"--window-size={size}", f"--screenshot={os.path.abspath(out)}", f"file://{source}"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
        )
    print(f"screenshot: {out}")


if __name__ == "__main__":
    main()
