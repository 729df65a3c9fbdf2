"""Diagnoses: answers with one known defect, built from the sample's own ground
truth, get the right kind first and its numbers within the stated tolerances
(15% or 2 px); the exact answers of a stratified sample of
every built-in suite get no finding."""

from __future__ import annotations

import json
from functools import lru_cache

import cv2
import numpy as np
import pytest

from pytest_violin.diagnosis import Diagnosis, diagnose
from pytest_violin.suite import load_suite
from pytest_violin.suite.drawing import render_border, render_dots, render_ratio, render_shape

REL = 0.15  # relative tolerance of a measured number
PX = 2.0    # tolerance of a length in pixels


@lru_cache(maxsize=None)
def _suite(name):
    return tuple(load_suite(name))


def _pick(suite, **where):
    for sample in _suite(suite):
        values = {**dict(sample.spec), "task": sample.task, "layout": sample.layout,
                  "variation": sample.variation}
        if all(values.get(k) == v for k, v in where.items()):
            return sample
    raise AssertionError(f"no sample of {suite} with {where}")


def _first(diagnosis: Diagnosis, kind: str):
    assert diagnosis.kinds, "no finding"
    assert diagnosis.kinds[0] == kind, diagnosis.texts()
    return diagnosis.first.numbers


def _close(value, want, rel=REL):
    assert abs(value - want) <= rel * abs(want), (value, want)


def _signed_distance(keep):
    inside = cv2.distanceTransform(keep.astype(np.uint8), cv2.DIST_L2, 5)
    outside = cv2.distanceTransform((~keep).astype(np.uint8), cv2.DIST_L2, 5)
    return np.where(keep, inside - 0.5, 0.5 - outside)


# colour ---------------------------------------------------------------------
def test_vertical_gradient_of_16_levels():
    sample = _pick("violin", task="color", layout="single")
    exp = sample.expected().astype(np.int16)
    ramp = np.rint(np.linspace(-8, 8, sample.height)).astype(np.int16)[:, None, None]
    d = diagnose(sample, np.clip(exp + ramp, 0, 255).astype(np.uint8))
    n = _first(d, "gradient")
    assert n["orientation"] == "vertical" and n["toward"] == "bottom"
    _close(n["levels"], 16.0)


def test_color_eight_levels_lighter():
    sample = _pick("violin", task="color", layout="single")
    d = diagnose(sample, np.clip(sample.expected().astype(np.int16) + 8, 0, 255).astype(np.uint8))
    n = _first(d, "wrong_color")
    assert n["dL"] > 0 and "lighter" in d.first.text
    _close(n["levels"], 8.0)
    assert n["requested"] == "#%02X%02X%02X" % tuple(sample.spec["colors"][0])
    assert n["ciede2000"] > 1.0 and len(d) == 1


def test_text_on_a_pure_color_is_objects_with_its_box():
    sample = _pick("violin", task="color", layout="single")
    exp = sample.expected()
    img = exp.copy()
    cv2.putText(img, "SALE", (150, 300), cv2.FONT_HERSHEY_SIMPLEX, 2.0, (20, 20, 20), 4)
    ys, xs = np.nonzero((img != exp).any(axis=2))  # the ink drawn
    ink = [xs.min(), ys.min(), xs.max() - xs.min() + 1, ys.max() - ys.min() + 1]
    n = _first(diagnose(sample, img), "objects")
    assert all(abs(a - b) <= PX for a, b in zip(n["bbox"], ink)), (n["bbox"], ink)
    _close(n["share"], xs.size / exp.shape[0] / exp.shape[1])


def test_noise_amplitude():
    sample = _pick("violin", task="color", layout="single")
    noise = np.random.default_rng(0).normal(0.0, 6.0, (sample.height, sample.width, 1))
    img = np.clip(sample.expected() + noise, 0, 255).astype(np.uint8)  # gray noise: same on R, G, B
    n = _first(diagnose(sample, img), "noise")
    _close(n["amplitude"], 6.0)


def test_swapped_halves():
    sample = _pick("violin", task="color", layout="vertical")
    exp = sample.expected()
    half = sample.width // 2
    _first(diagnose(sample, np.concatenate([exp[:, half:], exp[:, :half]], axis=1)), "swapped_blocks")


def test_ratio_at_fifty_percent_instead_of_thirteen():
    sample = _pick("violin-extra", task="ratio", orientation="vertical", ratio=0.13)
    img = render_ratio("vertical", sample.width // 2, sample.spec["colors"], sample.width, sample.height)
    n = _first(diagnose(sample, img), "wrong_split")
    assert n["orientation"] == "vertical"
    assert abs(n["position_pct"] - 50.0) <= 0.5 and abs(n["requested_pct"] - 13.1) <= 0.5


# shape ----------------------------------------------------------------------
def test_circle_moved_and_scaled():
    sample = _pick("violin", task="shape", shape="circle", size=0.3, anchor="center")
    x0, y0, bw, bh = sample.spec["bbox"]
    side = round(bw * 1.3)
    cx, cy = x0 + bw / 2 + 40, y0 + bh / 2 - 10
    img = render_shape("circle", (round(cx - side / 2), round(cy - side / 2), side, side),
                       sample.width, sample.height)
    d = diagnose(sample, img)
    assert d.kinds[0] in ("offset", "scale") and {"offset", "scale"} <= set(d.kinds), d.texts()
    offset = next(f.numbers for f in d if f.kind == "offset")
    scale = next(f.numbers for f in d if f.kind == "scale")
    assert abs(offset["dx"] - 40) <= PX and abs(offset["dy"] + 10) <= PX
    _close(offset["dx_pct"], 100 * 40 / sample.width)
    _close(scale["scale"], 1.3)


def test_square_instead_of_triangle():
    sample = _pick("violin", task="shape", shape="triangle", size=0.3, anchor="center")
    x0, y0, bw, bh = sample.spec["bbox"]
    img = render_shape("square", (x0, round(y0 + bh / 2 - bw / 2), bw, bw), sample.width, sample.height)
    n = _first(diagnose(sample, img), "wrong_shape")
    assert n == {"found": "square", "requested": "triangle"}


def test_a_shape_of_no_class_reads_another_shape():
    sample = _pick("violin", task="shape", shape="circle", size=0.3, anchor="center")
    x0, y0, bw, _ = sample.spec["bbox"]
    img = np.zeros_like(sample.expected())  # a cross: neither circle, square nor triangle
    img[y0 + bw // 3: y0 + 2 * bw // 3, x0: x0 + bw] = 255
    img[y0: y0 + bw, x0 + bw // 3: x0 + 2 * bw // 3] = 255
    d = diagnose(sample, img)
    first = d.first
    assert first.kind == "wrong_shape" and first.numbers == {"found": "other", "requested": "circle"}
    assert first.text == "another shape instead of a circle"


def test_missing_and_extra_shapes():
    sample = _pick("violin", task="shape", shape="square", size=0.2, anchor="center")
    _first(diagnose(sample, np.zeros_like(sample.expected())), "missing_shape")
    img = sample.expected()
    img[10:40, 10:40] = 255
    n = _first(diagnose(sample, img), "extra_shapes")
    assert n["count"] == 1


# mask -----------------------------------------------------------------------
@lru_cache(maxsize=1)
def _mask_case():
    sample = _pick("violin", task="mask", mask_kind="inpaint")
    source, mask = sample.inputs
    return sample, source, mask[:, :, 0] >= 128, sample.expected()


def test_feathered_edge_of_six_pixels():
    sample, source, keep, _ = _mask_case()
    alpha = np.clip((_signed_distance(keep) + 3.0) / 6.0, 0.0, 1.0)[..., None]
    n = _first(diagnose(sample, np.rint(source * alpha).astype(np.uint8)), "feathered_edge")
    assert abs(n["width_px"] - 6.0) <= PX


def test_masked_pixels_at_gray_60():
    sample, _, keep, exp = _mask_case()
    img = exp.copy()
    img[~keep] = 60
    n = _first(diagnose(sample, img), "gray_fill")
    assert abs(n["gray"] - 60) <= PX


@pytest.mark.parametrize("level", [6, 12, 20, 30])
@pytest.mark.parametrize("sid", ["mask/random/astronaut/n148", "mask/random/coins/n102",
                                 "mask/random/colorwheel/n003", "mask/outpaint/coins/n086"])
def test_a_dark_gray_fill_is_named_with_its_level(sid, level):
    """Gray 6-30 is black for the regions (gray <= 30) but fails leak and edge: the fill is named,
    with its level, and nothing else (the first three read as a feathered edge before)."""
    sample = next(s for s in _suite("violin") if s.id == sid)
    keep = sample.inputs[1][:, :, 0] >= 128
    img = sample.expected()
    img[~keep] = level
    metrics = sample.score(img)
    assert metrics["leak"] > 0.02 and metrics["iou"] == 0.0
    d = diagnose(sample, img)
    assert d.kinds == ("gray_fill",), d.texts()
    assert d.first.numbers["gray"] == level and f"gray {level}" in d.first.text


def test_a_dark_masked_area_that_is_not_one_gray_is_a_leak():
    sample, source, keep, exp = _mask_case()
    img = exp.copy()
    rng = np.random.default_rng(3)
    img[~keep] = rng.integers(0, 31, size=(int((~keep).sum()), 1), dtype=np.uint8)  # dark noise, mean 15
    n = _first(diagnose(sample, img), "leak")
    assert abs(n["mean_gray"] - 15) <= PX and n["share"] > 0.7


def test_an_exact_mask_answer_with_pure_black_keeps_no_dark_finding():
    from pytest_violin.diagnosis.mask import DARK_FILL_MIN_GRAY

    sample, _, keep, exp = _mask_case()
    img = exp.copy()
    img[~keep] = DARK_FILL_MIN_GRAY - 1  # passes the default leak limit (5/255 < 0.02)
    assert sample.score(img)["leak"] <= 0.02 and not diagnose(sample, img)


def test_inverted_mask():
    sample, source, keep, _ = _mask_case()
    img = source.copy()
    img[keep] = 0
    _first(diagnose(sample, img), "inverted_mask")


def test_mask_moved():
    sample, source, keep, _ = _mask_case()
    moved = cv2.warpAffine(keep.astype(np.uint8), np.float64([[1, 0, 20], [0, 1, 10]]),
                           keep.shape[::-1], flags=cv2.INTER_NEAREST,
                           borderMode=cv2.BORDER_REPLICATE).astype(bool)
    img = source.copy()
    img[~moved] = 0
    n = _first(diagnose(sample, img), "mask_offset")
    assert abs(n["dx"] - 20) <= PX and abs(n["dy"] - 10) <= PX


def test_leak_and_altered_kept():
    sample, source, keep, exp = _mask_case()
    img = source.copy()
    img[~keep] = source[~keep] // 2
    n = _first(diagnose(sample, img), "leak")
    assert n["share"] > 0.5 and n["mean_gray"] > 30
    img = exp.copy()
    img[keep] = np.clip(exp[keep].astype(np.int16) + 30, 0, 255).astype(np.uint8)
    n = _first(diagnose(sample, img), "altered_kept")
    assert n["psnr_db"] < 35


# ratio / border / count -----------------------------------------------------
def test_border_twice_as_thick():
    sample = _pick("violin-extra", task="border", thickness=8)
    img = render_border(16, sample.width, sample.height, sample.spec["fg"], sample.spec["bg"])
    n = _first(diagnose(sample, img), "wrong_thickness")
    assert n["requested"] == 8 and all(abs(n[s] - 16) <= PX for s in ("left", "right", "top", "bottom"))


def test_dots_missing():
    sample = _pick("violin-extra", task="count", count=10)
    spec = sample.spec
    img = render_dots(spec["positions"][:-2], spec["dot"], sample.width, sample.height, spec["fg"], spec["bg"])
    n = _first(diagnose(sample, img), "wrong_count")
    assert n == {"found": 8, "requested": 10}


# perfect answers and the record ---------------------------------------------
def _stratified():
    groups = {}
    for suite in ("violin", "violin-extra", "violin-probes", "violin-absolute"):
        for sample in _suite(suite):
            key = (suite, sample.task, sample.variation, sample.layout, sample.spec.get("shape"))
            groups.setdefault(key, sample)
    return list(groups.values())


@pytest.mark.parametrize("sample", _stratified(), ids=lambda s: s.id)
def test_exact_answer_gets_no_finding(sample):
    d = diagnose(sample, sample.expected())
    assert d.supported and not d and d.to_json() == []


def test_findings_are_json_and_ordered():
    sample = _pick("violin", task="color", layout="single")
    img = sample.expected()
    cv2.putText(img, "SALE", (150, 300), cv2.FONT_HERSHEY_SIMPLEX, 2.0, (20, 20, 20), 4)
    ramp = np.rint(np.linspace(-8, 8, sample.height)).astype(np.int16)[:, None, None]
    img = np.clip(img.astype(np.int16) + ramp, 0, 255).astype(np.uint8)
    d = diagnose(sample, img)
    weights = [f.weight for f in d]
    assert weights == sorted(weights, reverse=True) and {"objects", "gradient"} <= set(d.kinds)
    data = json.loads(json.dumps(d.to_json()))
    assert [set(f) for f in data] == [{"kind", "text", "numbers"}] * len(d)


def test_an_answer_of_another_size_is_resized_first():
    sample = _pick("violin", task="color", layout="single")
    small = cv2.resize(sample.expected(), (128, 128), interpolation=cv2.INTER_AREA)
    assert not diagnose(sample, small)


def test_one_level_rounding_noise_is_no_finding():
    """Thresholds sit above the noise of an answer one code off here and there."""
    sample = _pick("violin-absolute", task="color", layout="quad")
    jitter = np.random.default_rng(5).integers(-1, 2, (sample.height, sample.width, 3))
    img = np.clip(sample.expected().astype(np.int16) + jitter, 0, 255).astype(np.uint8)
    assert not diagnose(sample, img)


# wiring: the failure message and the result --------------------------------
def _scored(sample, image):
    from pytest_violin.execution.runner import Generation
    from pytest_violin.pytest_plugin._options import ViolinSettings
    from pytest_violin.results import score_generation
    from pytest_violin.tasks import default_limits

    result, _ = score_generation(sample, Generation(images=[image]), ViolinSettings(), default_limits())
    return result


def test_a_failing_sample_carries_its_diagnosis():
    sample = _pick("violin", task="color", layout="single")
    img = np.clip(sample.expected().astype(np.int16) + 24, 0, 255).astype(np.uint8)
    result = _scored(sample, img)
    assert result.outcome == "failed"
    kinds = [f["kind"] for f in result.diagnosis]
    assert kinds[0] == "wrong_color"
    message = result.message
    block = message.split("diagnosis:\n", 1)[1]
    assert block.splitlines()[0] == "  - " + result.diagnosis[0]["text"]
    assert message.index("metric |") < message.index("diagnosis:")
    json.loads(result.to_json())


def test_a_passing_sample_is_not_diagnosed(monkeypatch):
    import pytest_violin.diagnosis as diagnosis

    def boom(*args, **kwargs):
        raise AssertionError("diagnosed a passing sample")

    monkeypatch.setattr(diagnosis, "diagnose", boom)
    sample = _pick("violin", task="color", layout="single")
    result = _scored(sample, sample.expected())
    assert result.outcome == "passed" and "diagnosis" not in result.extra


def test_a_diagnosis_error_never_turns_the_failure_into_an_error(monkeypatch):
    import pytest_violin.diagnosis as diagnosis

    def broken(*args, **kwargs):
        raise ValueError("broken diagnoser")

    monkeypatch.setattr(diagnosis, "diagnose", broken)
    sample = _pick("violin", task="color", layout="single")
    result = _scored(sample, np.zeros_like(sample.expected()))
    assert result.outcome == "failed" and result.error is None
    assert result.diagnosis_error.startswith("ValueError")
    assert "diagnosis:" not in result.message


def test_a_uniform_answer_to_two_halves_has_no_split_but_two_wrong_colors():
    sample = _pick("violin", task="color", layout="vertical")
    d = diagnose(sample, np.full_like(sample.expected(), 128))
    assert d.kinds == ("wrong_color", "wrong_color"), d.texts()
    assert {f.numbers["where"] for f in d} == {"left half", "right half"}


def test_vignette_with_an_exact_centre():
    sample = _pick("violin", task="color", layout="single")
    yy, xx = np.mgrid[0:sample.height, 0:sample.width]
    r2 = ((xx + 0.5 - sample.width / 2) ** 2 + (yy + 0.5 - sample.height / 2) ** 2) / (sample.width ** 2 / 2)
    img = np.clip(np.rint(sample.expected() - 20.0 * r2[..., None]), 0, 255).astype(np.uint8)
    d = diagnose(sample, img)
    assert d.kinds == ("vignette",), d.texts()
    _close(-d.first.numbers["corner_levels"], 20.0)


# failure modes per task -----------------------------------------------------
def _record(task, outcome, *kinds, dL=1.0):
    findings = [{"kind": k, "text": k, "numbers": {"dL": dL} if k == "wrong_color" else {}} for k in kinds]
    return {"task": task, "outcome": outcome, "extra": {"diagnosis": findings} if kinds else {}}


def test_failure_modes_count_first_findings_of_failing_samples():
    from pytest_violin.diagnosis.summary import failure_mode_lines, failure_modes

    records = [_record("color", "failed", "gradient", "wrong_color")] * 3 \
        + [_record("color", "failed", "wrong_color", dL=2.0)] * 2 \
        + [_record("color", "failed", "wrong_color", dL=-2.0)] \
        + [_record("color", "passed", "objects"), _record("color", "failed")] \
        + [_record("mask", "failed", "leak")]
    color, mask = failure_modes(records)
    assert (color.task, color.failing, color.recorded, color.diagnosed) == ("color", 7, 6, 6)
    assert (mask.task, mask.failing, mask.diagnosed) == ("mask", 1, 1)
    assert color.modes == [("gradient", 0.5, None), ("wrong_color", 0.5, "lighter")]
    assert failure_mode_lines(records) == [
        "color (7 failing, 6 with a finding): 50% gradient, 50% wrong_color (mostly lighter)",
        "mask (1 failing): 100% leak"]


def test_every_failing_sample_is_counted_with_or_without_a_finding():
    """37 failing mask samples, one with a finding: the line says 37, and a task whose failing
    samples have no finding still gets its line."""
    from pytest_violin.diagnosis.summary import failure_mode_lines

    no_finding = {"task": "mask", "outcome": "failed", "extra": {"diagnosis": []}}
    records = [_record("mask", "failed", "feathered_edge")] + [no_finding] * 36
    assert failure_mode_lines(records) == ["mask (37 failing, 1 with a finding): 100% feathered_edge"]
    assert failure_mode_lines([no_finding] * 36 + [_record("color", "failed", "gradient")]) == [
        "mask (36 failing, none with a finding)", "color (1 failing): 100% gradient"]
    # nothing diagnosed at all (an error on every one): no section, rather than a line of zeros
    assert failure_mode_lines([_record("mask", "failed")] * 3) == []


def test_summary_md_lists_failure_modes_only_when_diagnosed():
    from pytest_violin.report.markdown import render_markdown
    from pytest_violin.results import SampleResult

    sample = _pick("violin", task="color", layout="single")
    failing = _scored(sample, np.full_like(sample.expected(), 128))
    text = render_markdown([failing])
    assert "### Failure modes" in text and "100% wrong\\_color" in text
    assert "### Failure modes" not in render_markdown([_scored(sample, sample.expected())])
    assert isinstance(failing, SampleResult)


def test_report_html_shows_the_diagnosis_and_filters_by_kind():
    from html import escape

    from pytest_violin.report.html import render_html

    sample = _pick("violin", task="color", layout="single")
    failing = _scored(sample, np.full_like(sample.expected(), 128))
    text = failing.diagnosis[0]["text"]
    page = render_html([failing, _scored(sample, sample.expected())])
    assert '<select id="f-kind"><option value="">all</option><option value="wrong_color">' in page
    assert 'data-outcome="failed" data-kinds="wrong_color"' in page
    assert 'data-outcome="passed" data-kinds=""' in page
    assert escape(text) in page and "<th>diagnosis</th>" in page
    assert '<select id="f-kind"' not in render_html([_scored(sample, sample.expected())])


def test_a_dark_gray_mask_answer_is_counted_by_its_fill():
    from pytest_violin.report.markdown import render_markdown
    from pytest_violin.report.terminal import format_summary
    from pytest_violin.results import ResultsStore

    sample, _, keep, exp = _mask_case()
    img = exp.copy()
    img[~keep] = 12
    store = ResultsStore()
    store.add(_scored(sample, img))
    lines = format_summary(store)
    assert lines[lines.index("failure modes:") + 1] == "  mask (1 failing): 100% gray_fill"
    assert "- mask (1 failing): 100% gray\\_fill" in render_markdown(store.results)


def test_terminal_summary_lists_failure_modes():
    from pytest_violin.report.terminal import format_summary
    from pytest_violin.results import ResultsStore

    sample = _pick("violin", task="color", layout="single")
    store = ResultsStore()
    store.add(_scored(sample, np.full_like(sample.expected(), 128)))
    lines = format_summary(store)
    at = lines.index("failure modes:")
    assert lines[at + 1] == "  color (1 failing): 100% wrong_color (mostly darker)"
    passing = ResultsStore()
    passing.add(_scored(sample, sample.expected()))
    assert "failure modes:" not in format_summary(passing)


# the held-out set: many samples, random defects -------------------------------
def _held_out_cases():
    """``(name, sample, answer, kind, check(numbers))``: known defects on samples drawn with a fixed seed."""
    rng = np.random.default_rng(7)
    pool = _suite("violin") + _suite("violin-absolute")
    colors = [s for s in pool if s.task == "color" and s.spec.get("kind") == "blocks" and s.layout == "single"]
    for s in (colors[i] for i in rng.choice(len(colors), 30, replace=False)):
        exp = s.expected().astype(np.int16)
        ramp = np.rint(np.linspace(-8, 8, s.height)).astype(np.int16)[:, None, None]
        yield ("gradient", s, np.clip(exp + ramp, 0, 255).astype(np.uint8), "gradient",
               lambda n: abs(n["levels"] - 16) <= 16 * REL and n["orientation"] == "vertical")
        sign = 1 if exp.max() <= 240 else -1
        yield ("8 levels", s, np.clip(exp + 8 * sign, 0, 255).astype(np.uint8), "wrong_color",
               lambda n, sign=sign: abs(n["levels"] - 8 * sign) <= 8 * REL)
        img = s.expected()
        cv2.putText(img, "SALE 50%", (60, 280), cv2.FONT_HERSHEY_SIMPLEX, 1.5,
                    (0, 0, 0) if exp.mean() > 100 else (255, 255, 255), 3)
        yield "text", s, img, "objects", lambda n: 0 < n["share"] < 0.1
    shapes = [s for s in _suite("violin") if s.task == "shape"]
    for s in (shapes[i] for i in rng.choice(len(shapes), 40, replace=False)):
        x0, y0, bw, bh = s.spec["bbox"]
        dx, dy = (int(v) for v in rng.integers(-30, 31, 2))
        if max(abs(dx), abs(dy)) >= 3 and 0 <= x0 + dx <= s.width - bw and 0 <= y0 + dy <= s.height - bh:
            yield ("offset", s, render_shape(s.spec["shape"], (x0 + dx, y0 + dy, bw, bh), s.width, s.height),
                   "offset", lambda n, dx=dx, dy=dy: abs(n["dx"] - dx) <= PX and abs(n["dy"] - dy) <= PX)
        other = {"circle": "square", "square": "triangle", "triangle": "circle"}[s.spec["shape"]]
        nh = round(bw * 3 ** 0.5 / 2) if other == "triangle" else bw
        box = (x0, min(max(0, y0 + bh // 2 - nh // 2), s.height - nh), bw, nh)
        yield ("wrong shape", s, render_shape(other, box, s.width, s.height), "wrong_shape",
               lambda n, other=other: n["found"] == other)
    masks = [s for s in _suite("violin") if s.task == "mask"]
    for s in (masks[i] for i in rng.choice(len(masks), 20, replace=False)):
        source, mask = s.inputs
        keep = mask[:, :, 0] >= 128
        alpha = np.clip((_signed_distance(keep) + 3.0) / 6.0, 0.0, 1.0)[..., None]
        yield ("feather", s, np.rint(source * alpha).astype(np.uint8), "feathered_edge",
               lambda n: abs(n["width_px"] - 6) <= PX)
        img = s.expected()
        img[~keep] = 60
        yield "gray 60", s, img, "gray_fill", lambda n: abs(n["gray"] - 60) <= PX
        img = s.expected()
        img[~keep] = 12
        yield "dark gray 12", s, img, "gray_fill", lambda n: abs(n["gray"] - 12) <= PX
        img = source.copy()
        img[keep] = 0
        yield "inverted", s, img, "inverted_mask", lambda n: True
        mx, my = (int(v) for v in rng.integers(-15, 16, 2))
        moved = cv2.warpAffine(keep.astype(np.uint8), np.float64([[1, 0, mx], [0, 1, my]]), keep.shape[::-1],
                               flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE).astype(bool)
        if (moved != keep).mean() > 0.005:
            img = source.copy()
            img[~moved] = 0
            # a strip along the frame moved along itself does not change: the axis that shows counts
            yield ("mask moved", s, img, "mask_offset",
                   lambda n, mx=mx, my=my: abs(n["dx"] - mx) <= PX or abs(n["dy"] - my) <= PX)


@pytest.mark.slow
def test_held_out_defects_get_their_kind_first_and_numbers():
    wrong = []
    for name, sample, image, kind, check in _held_out_cases():
        d = diagnose(sample, image)
        if not d or d.kinds[0] != kind or not check(d.first.numbers):
            wrong.append((name, sample.id, d.texts()[:2]))
    assert not wrong, wrong


def test_a_block_one_pixel_wide_is_fitted_without_its_singular_column(monkeypatch):
    """u is 0 on every pixel of a one-column block: the fit falls back to lstsq."""
    from pytest_violin.diagnosis.color import block_findings

    calls = []
    lstsq = np.linalg.lstsq
    monkeypatch.setattr(np.linalg, "lstsq", lambda *a, **k: calls.append(1) or lstsq(*a, **k))

    ramp = np.rint(np.linspace(-10, 10, 512)).astype(np.int16)
    block = np.clip(120 + ramp, 0, 255).astype(np.uint8)[:, None, None].repeat(3, axis=2)
    findings, _ = block_findings(block, (120, 120, 120), where="strip")
    gradient = next(f for f in findings if f.kind == "gradient")
    assert gradient.numbers["orientation"] == "vertical"
    _close(gradient.numbers["levels"], 20.0)
    assert calls  # the normal equations were singular


# weak spots -------------------------------------------------------------------
@pytest.mark.parametrize("shape", ["circle", "square", "triangle"])
def test_a_uniform_gray_answer_to_a_shape_task_is_no_shape(shape):
    sample = _pick("violin", task="shape", shape=shape, size=0.3, anchor="center")
    d = diagnose(sample, np.full_like(sample.expected(), 128))
    n = _first(d, "missing_shape")
    assert n["uniform"] == "#808080" and n["found"] == 0
    assert d.kinds == ("missing_shape", "wrong_colors")  # not "a square 3.3x the size": the frame
    assert d.findings[1].numbers["part"] == "background"
    plain = diagnose(sample, np.zeros_like(sample.expected()))  # the background colour itself
    assert plain.kinds == ("missing_shape",) and plain.first.numbers["uniform"] == "#000000"


@pytest.mark.parametrize("blur, width", [("box 9", 9.0), ("gaussian 4", 3.204 * 4)])
def test_a_blurred_block_boundary_is_a_blurred_edge_not_objects(blur, width):
    sample = _pick("violin-absolute", task="color", layout="quad")
    exp = sample.expected()
    img = cv2.blur(exp, (9, 9)) if blur.startswith("box") else cv2.GaussianBlur(exp, (0, 0), 4)
    d = diagnose(sample, img)
    assert set(d.kinds) == {"blurred_edge"} and len(d) == 4, d.texts()
    for f in d:
        _close(f.numbers["width_px"], width)
    assert {f.numbers["orientation"] for f in d} == {"vertical", "horizontal"}


def test_a_blurred_ratio_split_is_a_blurred_edge():
    sample = _pick("violin-extra", task="ratio", orientation="horizontal", ratio=0.13)
    d = diagnose(sample, cv2.blur(sample.expected(), (7, 7)))
    n = _first(d, "blurred_edge")
    assert n["orientation"] == "horizontal" and n["position_px"] == sample.spec["split"]
    _close(n["width_px"], 7.0)


def test_an_all_black_mask_answer_is_blacked_out():
    sample, source, keep, expected = _mask_case()
    d = diagnose(sample, np.zeros_like(expected))
    n = _first(d, "blacked_out")
    assert n["share"] == 1.0 and d.kinds == ("blacked_out",)  # nothing else is left to be altered
    assert "whole image is black" in d.first.text
    half = expected.copy()
    half[: half.shape[0] * 3 // 4] = 0  # three quarters of the image black
    d = diagnose(sample, half)
    n = _first(d, "blacked_out")
    lit = keep & (cv2.cvtColor(source, cv2.COLOR_RGB2GRAY) > 30)
    _close(n["share"], float(lit[: half.shape[0] * 3 // 4].sum()) / lit.sum())


def test_text_across_two_halves_is_objects_not_a_wrong_split():
    sample = _pick("violin", task="color", layout="vertical")
    img = sample.expected()
    cv2.putText(img, "SAMPLE", (100, 256), cv2.FONT_HERSHEY_SIMPLEX, 3, (255, 255, 255), 8)
    d = diagnose(sample, img)
    assert "objects" in d.kinds and "wrong_split" not in d.kinds, d.texts()
    # a split really moved is still found, at its place
    moved = render_ratio("vertical", 300, [img[0, 0].tolist(), img[0, -1].tolist()], 512, 512)
    n = _first(diagnose(sample, moved), "wrong_split")
    _close(n["position_pct"], 100 * 300 / 512)
