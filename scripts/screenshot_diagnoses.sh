#!/usr/bin/env bash
# Build a demo report of a model with one known defect per sample (a gradient, a
# lighter colour, text on a pure colour, a shape moved or scaled, a gray-filled
# mask) and screenshot the samples table of report.html, with its "diagnosis"
# column and filter, with headless Chromium into docs/report_diagnoses.png.
#
# Needs Debian's `chromium` package (apt-get install chromium) and the package's
# Python (PYTHON, default python). Not part of the test run or CI: it is how the
# picture in docs/diagnoses.md was made.
#
#   scripts/screenshot_diagnoses.sh [OUT.png]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$repo/docs/report_diagnoses.png}"
python="${PYTHON:-python}"
width="${VIOLIN_SHOT_WIDTH:-1280}"
height="${VIOLIN_SHOT_HEIGHT:-1160}"
work="$(mktemp -d)"  # the demo run; Chromium's profile in work/profile
trap 'rm -rf "$work"' EXIT
profile="$work/profile"
mkdir "$profile"
cd "$work"

cat > demo_models.py <<'PY'
import cv2
import numpy as np


def defects(request):
    """The exact answer with one defect, chosen by task and seed."""
    img = request.sample.expected().astype(np.int16)
    h, w = img.shape[:2]
    pick = request.seed % 3
    if request.task == "color":
        if pick == 0:  # a 24-level vertical gradient
            img += np.linspace(-12, 12, h).astype(np.int16)[:, None, None]
        elif pick == 1:  # 10 levels lighter
            img += 10
        else:  # a caption drawn on the pure colour
            out = np.clip(img, 0, 255).astype(np.uint8)
            cv2.putText(out, "SAMPLE", (w // 5, h // 2), cv2.FONT_HERSHEY_SIMPLEX, 3, (255, 255, 255), 8)
            return out
    elif request.task == "shape" and pick != 2:
        # moved 40 px (x) and 10 px (y) toward the centre, or 1.3x larger about its own centre
        exp = request.sample.expected()
        bg = tuple(int(v) for v in exp[0, 0])
        ys, xs = np.nonzero(np.any(exp != exp[0, 0], axis=2))
        cx, cy = xs.mean(), ys.mean()
        if pick == 0:
            m = np.float32([[1, 0, 40 * np.sign(w / 2 - cx)], [0, 1, 10 * np.sign(h / 2 - cy)]])
        else:  # about the corner of its box nearest the image's corner: it touches the same edges
            x0, x1 = xs.min(), xs.max() + 1
            y0, y1 = ys.min(), ys.max() + 1
            fixed = (float(x1 if cx > w / 2 else x0), float(y1 if cy > h / 2 else y0))
            m = cv2.getRotationMatrix2D(fixed, 0.0, 1.3)
        img = cv2.warpAffine(exp, m, (w, h), flags=cv2.INTER_NEAREST, borderValue=bg).astype(np.int16)
    elif request.task == "mask" and pick != 2:
        black = np.all(request.sample.expected() == 0, axis=2)
        img[black] = 60  # the masked area gray 60 instead of black
    return np.clip(img, 0, 255).astype(np.uint8)
PY

"$python" -m pytest -q -p no:cacheprovider -o addopts= --violin-limit=12 --violin-no-cache \
    --violin-model=python:demo_models:defects --violin-report=report violin >/dev/null || true

# The whole page, tall, and the same page cut before its samples table: how far
# the cut page draws is where the samples table starts on the whole one.
"$python" - report/report.html head.html <<'PY'
import sys

page = open(sys.argv[1], encoding="utf-8").read()
open(sys.argv[2], "w", encoding="utf-8").write(page[:page.index('<h2 id="samples">')] + "</body></html>")
PY
shot() {  # shot PAGE PNG HEIGHT
    timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
        --hide-scrollbars --screenshot="$2" --window-size="$width,$3" "file://$work/$1" 2>/dev/null
}
shot head.html head.png 4000
shot report/report.html full.png 6000
"$python" - head.png full.png "$out" "$height" <<'PY'
import sys

import cv2
import numpy as np

head, full = cv2.imread(sys.argv[1]), cv2.imread(sys.argv[2])
drawn = np.flatnonzero((head < 250).any(axis=(1, 2)))
top = int(drawn[-1]) + 1 if drawn.size else 0
cv2.imwrite(sys.argv[3], full[top:top + int(sys.argv[4])], [cv2.IMWRITE_PNG_COMPRESSION, 9])
PY
echo "wrote $out"
