#!/usr/bin/env python3
"""ansi2png.py SRC_DIR DST_DIR [PREFIX]: renders terminal captures (`tmux capture-pane -p -e`, *.ansi)
to PNGs, the way scripts/screenshots.sh draws the TestBackend ones (DejaVu Sans Mono, box drawing by
hand). Needs Pillow (scripts/screenshots.sh's venv has it)."""
import os
import re
import sys

from PIL import Image, ImageDraw, ImageFont

src, dst = sys.argv[1], sys.argv[2]
prefix = sys.argv[3] if len(sys.argv) > 3 else ""
FONT = os.environ.get("BM2_SHOT_FONT", "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")
BOLD = FONT.replace("DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf")
font = ImageFont.truetype(FONT, 15)
bold = ImageFont.truetype(BOLD, 15) if os.path.exists(BOLD) else font
CW, CH = 9, 19
DEF_FG, DEF_BG = "#d0d0d0", "#1b1d23"
BASE = ["#1b1d23", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
        "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"]


def c256(n):
    if n < 16:
        return BASE[n]
    if n < 232:
        n -= 16
        lv = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (lv[n // 36], lv[(n // 6) % 6], lv[n % 6])
    g = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (g, g, g)


def parse(text):
    """Rows of cells (char, fg, bg, bold) from text with SGR sequences."""
    rows = []
    fg, bg, b, rev = DEF_FG, DEF_BG, False, False
    for line in text.split("\n"):
        row = []
        for tok in re.split(r"(\x1b\[[0-9;:]*[A-Za-z])", line):
            if tok.startswith("\x1b["):
                if not tok.endswith("m"):
                    continue
                ps = [int(p) if p else 0 for p in tok[2:-1].replace(":", ";").split(";")] or [0]
                i = 0
                while i < len(ps):
                    p = ps[i]
                    if p == 0:
                        fg, bg, b, rev = DEF_FG, DEF_BG, False, False
                    elif p == 1:
                        b = True
                    elif p == 22:
                        b = False
                    elif p == 7:
                        rev = True
                    elif p == 27:
                        rev = False
                    elif 30 <= p <= 37:
                        fg = BASE[p - 30]
                    elif 90 <= p <= 97:
                        fg = BASE[p - 90 + 8]
                    elif 40 <= p <= 47:
                        bg = BASE[p - 40]
                    elif 100 <= p <= 107:
                        bg = BASE[p - 100 + 8]
                    elif p == 39:
                        fg = DEF_FG
                    elif p == 49:
                        bg = DEF_BG
                    elif p in (38, 48) and i + 1 < len(ps):
                        if ps[i + 1] == 5 and i + 2 < len(ps):
                            col = c256(ps[i + 2])
                            i += 2
                        elif ps[i + 1] == 2 and i + 4 < len(ps):
                            col = "#%02x%02x%02x" % tuple(ps[i + 2:i + 5])
                            i += 4
                        else:
                            col = None
                        if col:
                            if p == 38:
                                fg = col
                            else:
                                bg = col
                    i += 1
            else:
                for ch in tok:
                    if ch >= " ":
                        row.append((ch, bg if rev else fg, fg if rev else bg, b))
        rows.append(row)
    while rows and not rows[-1]:
        rows.pop()
    return rows


def render(rows, out):
    width = max(len(r) for r in rows)
    img = Image.new("RGB", (width * CW + 16, len(rows) * CH + 16), DEF_BG)
    d = ImageDraw.Draw(img)
    for y, row in enumerate(rows):
        for x, (sym, fg, bg, b) in enumerate(row):
            px, py = 8 + x * CW, 8 + y * CH
            if bg != DEF_BG:
                d.rectangle([px, py, px + CW - 1, py + CH - 1], fill=bg)
            if not sym.strip():
                continue
            mx, my = px + CW // 2, py + CH // 2
            lines = {"─": [(px, my, px + CW, my)], "│": [(mx, py, mx, py + CH)],
                     "┌": [(mx, my, px + CW, my), (mx, my, mx, py + CH)], "┐": [(px, my, mx, my), (mx, my, mx, py + CH)],
                     "└": [(mx, py, mx, my), (mx, my, px + CW, my)], "┘": [(mx, py, mx, my), (px, my, mx, my)]}
            if sym == "█":
                d.rectangle([px, py + 2, px + CW - 1, py + CH - 3], fill=fg)
            elif sym in lines:
                for ln in lines[sym]:
                    d.line(ln, fill=fg, width=1)
            else:
                d.text((px, py + 1), sym, font=bold if b else font, fill=fg)
    img.save(out)


os.makedirs(dst, exist_ok=True)
for name in sorted(os.listdir(src)):
    if name.endswith(".ansi"):
        out = os.path.join(dst, prefix + name[:-5] + ".png")
        render(parse(open(os.path.join(src, name), encoding="utf-8", errors="replace").read()), out)
        print(out)
