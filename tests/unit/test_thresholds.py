import math

import pytest
from hypothesis import given, settings, strategies as st

from pytest_violin.errors import ThresholdError
from pytest_violin.metrics import Metrics
from pytest_violin.thresholds import (
    DEFAULT_EXTRA_LIMIT, DEFAULT_LIMITS, KNOWN_METRICS, build_limits, limits_for_task, parse_threshold,
    parse_thresholds,
)
from pytest_violin.verdict import evaluate, failure_message, format_table


def test_every_builtin_metric_and_mean_has_a_default():
    for task, names in KNOWN_METRICS.items():
        for name in (*names, "mean"):
            assert 0 < DEFAULT_LIMITS[f"{task}.{name}"] < 1


def test_parse_threshold_normalizes():
    assert parse_threshold(" Color.SD = 0.02 ", KNOWN_METRICS) == ("color.sd", 0.02)
    assert parse_threshold("shape.mean=0.1", KNOWN_METRICS) == ("shape.mean", 0.1)


@pytest.mark.parametrize("text, fragment", [
    ("color.sd", "no '='"),
    ("colorsd=0.1", "malformed"),
    ("color.sd=abc", "not a number"),
    ("color.sd=1.5", "outside [0, 1]"),
    ("color.sd=-0.1", "outside [0, 1]"),
    ("color.sd=nan", "outside [0, 1]"),
    ("color.nope=0.1", "unknown metric 'nope'"),
    ("paint.sd=0.1", "unknown task 'paint'"),
])
def test_bad_thresholds_are_refused_with_accepted_forms(text, fragment):
    with pytest.raises(ThresholdError) as info:
        parse_threshold(text, KNOWN_METRICS)
    assert fragment in str(info.value)
    assert text.split("=")[0].strip() in str(info.value)


def test_parse_thresholds_mapping_lines_and_comments():
    got = parse_thresholds(["# comment", "", "color.sd=0.1", "color.sd=0.2"], KNOWN_METRICS)
    assert got == {"color.sd": 0.2}
    assert parse_thresholds({"mask.leak": 0.5}, KNOWN_METRICS) == {"mask.leak": 0.5}
    with pytest.raises(ThresholdError):
        parse_thresholds({"mask.leak": "x"}, KNOWN_METRICS)


def test_build_limits_later_sets_win_and_defaults_untouched():
    limits = build_limits({"color.sd": 0.5}, {"color.sd": 0.25})
    assert limits["color.sd"] == 0.25
    assert DEFAULT_LIMITS["color.sd"] != 0.25
    assert limits["shape.iou"] == DEFAULT_LIMITS["shape.iou"]


def test_limits_for_unknown_task_use_extra_default():
    got = limits_for_task({}, "ratio", ["err"])
    assert got == {"err": DEFAULT_EXTRA_LIMIT, "mean": DEFAULT_EXTRA_LIMIT}
    got = limits_for_task({"color.sd": 0.1, "color.mean": 0.2}, "color", ["sd", "hf"])
    assert got == {"sd": 0.1, "mean": 0.2}


@settings(max_examples=60, deadline=None)
@given(values=st.dictionaries(st.sampled_from(["a", "b", "c"]), st.floats(0, 1), min_size=1),
       limit=st.floats(0, 1))
def test_evaluate_fails_exactly_the_metrics_over_their_limit(values, limit):
    rows = evaluate(values, {k: limit for k in [*values, "mean"]})
    mean = sum(values.values()) / len(values)
    assert [r.metric for r in rows][-1] == "mean"
    for r in rows:
        expected = mean if r.metric == "mean" else values[r.metric]
        assert math.isclose(r.value, expected)
        assert r.ok == (expected <= limit)


def test_evaluate_uses_metrics_mean_and_task_keys():
    m = Metrics({"sd": 0.3, "hf": 0.1}, task="color")
    rows = {r.metric: r for r in evaluate(m, {"color.sd": 0.2, "color.mean": 0.25})}
    assert not rows["sd"].ok and rows["hf"].ok and rows["hf"].limit is None
    assert rows["mean"].value == pytest.approx(0.2) and rows["mean"].ok


def test_failure_table_is_aligned_and_names_the_failing_metric():
    rows = evaluate({"sd": 0.3, "hf": 0.01}, {"sd": 0.02, "hf": 0.02, "mean": 0.5})
    text = failure_message(rows, sample_id="color/v1/x/t01", prompt="a pure red image")
    assert "over the limit: sd" in text
    assert "color/v1/x/t01" in text and "a pure red image" in text
    table = format_table(rows).splitlines()
    assert len({line.index("|") for line in table if "|" in line}) == 1
    assert any(line.startswith("sd") and line.endswith("FAIL") for line in table)
    assert any(line.startswith("hf") and line.endswith("pass") for line in table)


# ---- the documented justification, checked with the real metrics (docs/thresholds.md)
def _verdict(sample, image):
    m = sample.score(image)
    rows = evaluate(m, limits_for_task(DEFAULT_LIMITS, sample.task, list(m)))
    return {r.metric for r in rows if not r.ok}


@pytest.fixture(scope="module")
def suite_samples():
    from pytest_violin.suite import load_suite

    color = [s for s in load_suite("violin", tasks=("color",), limit=40) if s.layout == "single"][:5]
    shape = {s.variation: s for s in load_suite("violin", tasks=("shape",), limit=30)}
    mask = {s.variation: s for s in load_suite("violin", tasks=("mask",), limit=12)}
    return color, list(shape.values()), list(mask.values())


def _jnd_offset(rgb):
    """An RGB offset of the expected color whose CIEDE2000 is just above 2.3."""
    import numpy as np
    from skimage.color import rgb2lab

    from pytest_violin.metrics import ciede2000

    ref = rgb2lab(np.array([[rgb]], float) / 255).reshape(1, 3)
    sign = np.where(np.array(rgb) > 127, -1, 1)
    for d in range(1, 40):
        cand = tuple(int(c) for c in np.array(rgb) + sign * d)
        de = float(np.ravel(ciede2000(ref, rgb2lab(np.array([[cand]], float) / 255).reshape(1, 3)))[0])
        if de >= 2.3:
            return cand, de
    raise AssertionError("no offset found")


def test_just_noticeable_color_difference_passes(suite_samples):
    import numpy as np

    for sample in suite_samples[0]:
        exp = sample.expected()
        rgb = tuple(int(c) for c in exp[0, 0])
        cand, de = _jnd_offset(rgb)
        assert 2.3 <= de < 3.0
        img = np.empty_like(exp)
        img[:] = cand
        assert _verdict(sample, img) == set(), (sample.id, cand, de)


def test_visible_gradient_fails_and_sensor_noise_passes(suite_samples):
    import numpy as np

    sample = suite_samples[0][0]
    exp = sample.expected().astype(float)
    ramp = np.linspace(-8, 8, sample.width)[None, :, None]
    assert "sd" in _verdict(sample, np.clip(exp + ramp, 0, 255).astype(np.uint8))
    noise = np.random.default_rng(1).normal(0, 2, exp.shape)
    assert _verdict(sample, np.clip(exp + noise, 0, 255).astype(np.uint8)) == set()


def test_shape_off_by_5_percent_fails_and_2_percent_offset_of_dist_passes(suite_samples):
    import numpy as np

    for sample in suite_samples[1]:
        exp = sample.expected()
        bad = _verdict(sample, np.roll(exp, round(0.05 * sample.width), axis=1))
        assert {"dist", "iou", "mean"} <= bad, sample.id
        assert "dist" not in _verdict(sample, np.roll(exp, round(0.02 * sample.width), axis=1))


def test_mask_jpeg_passes_and_gray_masked_area_fails(suite_samples):
    import cv2

    for sample in suite_samples[2]:
        exp = sample.expected()
        ok, buf = cv2.imencode(".jpg", exp[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, 90])
        assert _verdict(sample, cv2.imdecode(buf, 1)[:, :, ::-1].copy()) == set(), sample.id
        gray = exp.copy()
        gray[sample.inputs[1][..., 0] < 128] = 12
        assert "leak" in _verdict(sample, gray), sample.id
