#!/usr/bin/env bash
# Build a demo report (the oracle's baseline, then a degraded model compared
# with it) and screenshot report.html with headless Chromium into
# docs/report_screenshot.png.
#
# Needs Debian's `chromium` package (apt-get install chromium). Not part of the
# test run or CI: it is how the screenshot in docs/ was made and how a
# developer checks the page renders.
#
#   scripts/screenshot_report.sh [OUT.png]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$repo/docs/report_screenshot.png}"
work="$(mktemp -d)"
profile="$(mktemp -d)"
trap 'rm -rf "$work" "$profile"' EXIT

cat > "$work/demo_models.py" <<'EOF'
import numpy as np


def degraded(request):
    """A model that is good at shapes and masks but lightens colours by 12 levels,
    and draws one shape in three a little too large."""
    img = request.sample.expected()
    if request.task == "color":
        return np.clip(img.astype(np.int16) + 12, 0, 255).astype(np.uint8)
    if request.task == "shape" and request.seed % 3 == 0:
        h, w = img.shape[:2]
        big = np.asarray(img)[h // 20: h - h // 20, w // 20: w - w // 20]
        import cv2
        return cv2.resize(big, (w, h), interpolation=cv2.INTER_NEAREST)
    return img
EOF

cd "$work"
common=(-q -p no:cacheprovider -o addopts= --violin-limit=36 --violin-no-cache)
python -m pytest "${common[@]}" --violin-model=oracle --violin-save-baseline=base.json >/dev/null
python -m pytest "${common[@]}" --violin-model=python:demo_models:degraded \
    --violin-baseline=base.json --violin-report=report >/dev/null || true

chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
    --hide-scrollbars --screenshot="$out" --window-size=${VIOLIN_SHOT_SIZE:-1280,2000} "file://$work/report/report.html" \
    2>/dev/null
echo "wrote $out"
