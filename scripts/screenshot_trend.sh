#!/usr/bin/env bash
# Evaluate five "checkpoints" of a model whose error shrinks as it trains
# (evaluate() on a stratified limit, as in docs/evaluate.md), draw their trend
# page, and screenshot it with headless Chromium into docs/trend_screenshot.png.
#
# Needs Debian's `chromium` package (apt-get install chromium). Not part of the
# test run or CI: it is how the screenshot in docs/ was made.
#
#   scripts/screenshot_trend.sh [OUT.png]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$repo/docs/trend_screenshot.png}"
work="$(mktemp -d)"
profile="$(mktemp -d)"
trap 'rm -rf "$work" "$profile"' EXIT

cd "$work"
PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" python - <<'PY'
import numpy as np

from pytest_violin import evaluate, trend


def checkpoint(error):
    """The expected image, lightened by ``error`` grey levels and with that much noise."""
    def generate(request):
        image = request.sample.expected().astype(np.float32)
        noise = np.random.default_rng(request.seed).normal(0, error / 2, image.shape)
        return np.clip(image + error + noise, 0, 255).astype(np.uint8)
    return generate


runs = []
for step, error in zip(range(1000, 6000, 1000), (48, 30, 18, 9, 3)):
    run = evaluate(checkpoint(error), tasks=["color", "shape"], limit=60, progress=False, label=f"step {step}")
    run.save(f"ckpt-{step}")
    runs.append(run)
trend(runs).write_html("trend.html")
PY

chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
    --hide-scrollbars --screenshot="$out" --window-size=${VIOLIN_SHOT_SIZE:-1240,1000} "file://$work/trend.html" \
    2>/dev/null
echo "wrote $out"
