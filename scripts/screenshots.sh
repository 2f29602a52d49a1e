#!/usr/bin/env bash
# screenshots.sh: renders the wizard's screens (the real app on a TestBackend, driven through a
# rehearsal on the demo sandbox) to screenshots/*.png, with DejaVu Sans Mono and Pillow (PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${BM2_SHOT_VENV:-/tmp/bm2ironic-shot-venv}
[ -x "$VENV/bin/python" ] || { python3 -m venv "$VENV"; "$VENV/bin/pip" install -q --disable-pip-version-check pillow; }
FONT=${BM2_SHOT_FONT:-/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf}
[ -f "$FONT" ] || { . "$(dirname "$0")/lib/apt.sh"; apt_ensure fonts-dejavu-core; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
BM2IRONIC_SCREENSHOT_DIR="$WORK" cargo test --quiet --test it wizard::render_screenshots -- --ignored >/dev/null
mkdir -p screenshots
"$VENV/bin/python" - "$WORK" screenshots "$FONT" <<'PY'
import json, os, sys
from PIL import Image, ImageDraw, ImageFont
src, dst, font_path = sys.argv[1:4]
font = ImageFont.truetype(font_path, 15)
bold = ImageFont.truetype(font_path.replace("DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf"), 15) if os.path.exists(font_path.replace("DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf")) else font
cw, ch = 9, 19
for name in sorted(os.listdir(src)):
    rows = json.load(open(os.path.join(src, name)))
    w, h = len(rows[0]) * cw, len(rows) * ch
    img = Image.new("RGB", (w + 16, h + 16), "#1b1d23")
    d = ImageDraw.Draw(img)
    for y, row in enumerate(rows):
        for x, (sym, fg, bg, b) in enumerate(row):
            px, py = 8 + x * cw, 8 + y * ch
            if bg != "#1b1d23":
                d.rectangle([px, py, px + cw - 1, py + ch - 1], fill=bg)
            if sym.strip():
                if sym in "─│┌┐└┘├┤┬┴┼█":
                    # box drawing by hand: fonts leave gaps between cells
                    mx, my = px + cw // 2, py + ch // 2
                    lines = {"─": [(px, my, px + cw, my)], "│": [(mx, py, mx, py + ch)], "┌": [(mx, my, px + cw, my), (mx, my, mx, py + ch)],
                             "┐": [(px, my, mx, my), (mx, my, mx, py + ch)], "└": [(mx, py, mx, my), (mx, my, px + cw, my)], "┘": [(mx, py, mx, my), (px, my, mx, my)]}
                    if sym == "█":
                        d.rectangle([px, py + 2, px + cw - 1, py + ch - 3], fill=fg)
                    for l in lines.get(sym, []):
                        d.line(l, fill=fg, width=1)
                else:
                    d.text((px, py + 1), sym, font=bold if b else font, fill=fg)
    out = os.path.join(dst, name.replace(".json", ".png"))
    img.save(out)
    print(out)
PY
