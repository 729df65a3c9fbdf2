"""Tests of pytest_violin.assertions, and of a property test against a biased model."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import pytest_violin
from pytest_violin.assertions import (assert_blocks, assert_masked, assert_obeys,
                                      assert_pure_color, assert_shape, describe_sample,
                                      resolve_limits)
from pytest_violin.suite.builders import block_sample, color_sample, shape_sample
from pytest_violin.suite.drawing import generate_mask
from pytest_violin.suite.drawing import lift_dark
from pytest_violin.thresholds import DEFAULT_LIMITS

YELLOW = (217, 180, 81)


def solid(rgb, w=24, h=16):
    out = np.empty((h, w, 3), np.uint8)
    out[:] = rgb
    return out


def noisy(img, sigma=25, seed=0):
    rng = np.random.default_rng(seed)
    return np.clip(img + rng.normal(0, sigma, img.shape), 0, 255).astype(np.uint8)


def test_assertions_are_exported_from_the_package():
    assert pytest_violin.assert_obeys is assert_obeys
    assert pytest_violin.assert_masked is assert_masked


# ---------------------------------------------------------------- pure color
@pytest.mark.parametrize("color", ["#D9B451", "#d9b451", "rgb(217, 180, 81)", "yellow",
                                   "Yellow", YELLOW, [217, 180, 81], "hsl(43.9, 64.5%, 58.4%)"])
def test_pure_color_accepts_every_notation(color):
    from pytest_violin.suite.colors import parse_color

    image = solid(parse_color(color))
    metrics = assert_pure_color(image, color)
    assert metrics.task == "color" and metrics.mean == 0.0


def _png(img) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG")
    return buf.getvalue()


@pytest.mark.parametrize("convert", [
    lambda a: a, Image.fromarray, _png, lambda a: a.astype(np.float64) / 255.0,
    lambda a: np.dstack([a, np.full(a.shape[:2], 255, np.uint8)]),
], ids=["array", "pil", "png-bytes", "float", "rgba"])
def test_pure_color_accepts_every_image_form(convert):
    assert assert_pure_color(convert(solid(YELLOW)), "#D9B451").mean == 0.0


def test_pure_color_accepts_a_path(tmp_path):
    path = tmp_path / "yellow.png"
    Image.fromarray(solid(YELLOW)).save(path)
    assert assert_pure_color(path, "yellow").mean == 0.0
    assert assert_pure_color(str(path), "yellow").mean == 0.0


def test_failure_message_is_the_metric_table_and_words():
    with pytest.raises(AssertionError) as info:
        assert_pure_color(noisy(solid(YELLOW)), "#D9B451")
    text = str(info.value)
    assert text.startswith("image does not obey: one uniform color #D9B451 (yellow)")
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("metric"))
    assert [c.strip() for c in header.split("|")] == ["metric", "value", "limit", "result"]
    sd_row = next(line for line in lines if line.startswith("sd "))
    cells = [c.strip() for c in sd_row.split("|")]
    assert cells[2] == f"{DEFAULT_LIMITS['color.sd']:.4f}" and cells[3] == "FAIL"
    assert lines[1].startswith("over the limit: ") and "sd" in lines[1]
    assert "array(" not in text and "Metrics[" not in text  # no repr wall


def test_small_errors_pass_the_default_limits_and_fail_tight_ones():
    near = solid((219, 182, 83))
    metrics = assert_pure_color(near, "#D9B451")
    assert 0.0 < metrics["rgb_ed"] < DEFAULT_LIMITS["color.rgb_ed"]
    with pytest.raises(AssertionError) as info:
        assert_pure_color(near, "#D9B451", rgb_ed=0.001)
    row = next(line for line in str(info.value).splitlines() if line.startswith("rgb_ed"))
    assert "0.0010" in row and "FAIL" in row


def test_none_removes_a_limit():
    far = solid((239, 200, 101))
    with pytest.raises(AssertionError):
        assert_pure_color(far, "#D9B451")
    metrics = assert_pure_color(far, "#D9B451", rgb_ed=None, lab_00=None, mean=None)
    assert metrics["rgb_ed"] > DEFAULT_LIMITS["color.rgb_ed"]


def test_unknown_limit_names_list_the_accepted_ones():
    with pytest.raises(TypeError) as info:
        assert_pure_color(solid(YELLOW), "yellow", iou=0.1)
    assert "'iou'" in str(info.value)
    for name in ("rgb_ed", "lab_00", "sd", "ced", "hf", "mean"):
        assert name in str(info.value)
    with pytest.raises(TypeError, match="'foo'"):
        assert_shape(np.zeros((16, 16, 3), np.uint8), "circle", 0.5, "center", foo=1)


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan"), "0.1", True])
def test_bad_limit_values_are_refused(value):
    with pytest.raises(ValueError, match="sd="):
        assert_pure_color(solid(YELLOW), "yellow", sd=value)


def test_resolve_limits_uses_the_plugin_defaults():
    limits = resolve_limits("shape", ("iou", "dist", "size", "shape", "purity"), {"iou": 0.2})
    assert limits["iou"] == 0.2 and limits["dist"] == DEFAULT_LIMITS["shape.dist"]
    assert limits["mean"] == DEFAULT_LIMITS["shape.mean"]


def test_thresholds_mapping_sets_the_base_limits():
    near = solid((219, 182, 83))
    base = dict(DEFAULT_LIMITS, **{"color.rgb_ed": 0.001})
    with pytest.raises(AssertionError, match="over the limit: rgb_ed"):
        assert_pure_color(near, "#D9B451", thresholds=base)
    assert assert_pure_color(near, "#D9B451", thresholds=base, rgb_ed=0.05).mean > 0
    with pytest.raises(TypeError, match="thresholds="):
        assert_pure_color(near, "#D9B451", thresholds=["color.sd=0.1"])


def test_bad_colors_are_refused_with_the_value():
    from pytest_violin.errors import InvalidColorError

    with pytest.raises(InvalidColorError, match="chartreuse-ish"):
        assert_pure_color(solid(YELLOW), "chartreuse-ish")


# ---------------------------------------------------------------- blocks
@pytest.mark.parametrize(("layout", "colors"), [
    ("vertical", ["pink", "#3B74C0"]),
    ("horizontal", ["rgb(120, 66, 197)", "black"]),
    ("quad", ["red", "green", "blue", "white"]),
])
def test_blocks_pass_on_their_ground_truth_and_fail_swapped(layout, colors):
    sample = block_sample(layout, colors, width=32, height=24)
    assert assert_blocks(sample.expected(), layout, colors).mean == 0.0
    swapped = [colors[-1], *colors[1:-1], colors[0]]
    with pytest.raises(AssertionError) as info:
        assert_blocks(sample.expected(), layout, swapped)
    first = {"vertical": "left half", "horizontal": "top half", "quad": "quadrants top-left"}
    assert first[layout] in str(info.value)


def test_blocks_check_layout_and_color_count():
    with pytest.raises(ValueError, match="'diagonal'"):
        assert_blocks(solid(YELLOW), "diagonal", ["red", "blue"])
    with pytest.raises(ValueError, match="needs 4 colors"):
        assert_blocks(solid(YELLOW), "quad", ["red", "blue"])
    with pytest.raises(TypeError, match="'red'"):
        assert_blocks(solid(YELLOW), "vertical", "red")


# ---------------------------------------------------------------- shapes
@pytest.mark.parametrize(("shape", "size", "position"), [
    ("circle", 0.3, "left-center"), ("square", 0.25, "top-right"),
    ("triangle", 0.4, (0.5, 0.5)), ("circle", 0.2, (0.3, 0.7)),
])
def test_shapes_pass_when_exact_and_fail_when_moved(shape, size, position):
    kwargs = {"anchor": position} if isinstance(position, str) else {"center": position}
    exact = shape_sample(shape, size, width=64, height=48, **kwargs).expected()
    assert assert_shape(exact, shape, size, position).mean == 0.0
    moved = np.roll(exact, 8, axis=1)
    with pytest.raises(AssertionError) as info:
        assert_shape(moved, shape, size, position)
    text = str(info.value)
    assert f"white {shape}" in text
    assert any(line.startswith("dist") and "FAIL" in line for line in text.splitlines())


# ---------------------------------------------------------------- masks
def _source(w=48, h=40, seed=1):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (h // 8 + 1, w // 8 + 1, 3), dtype=np.uint8)
    big = np.kron(base, np.ones((8, 8, 1), np.uint8))[:h, :w]
    return lift_dark(big)


@pytest.mark.parametrize("form", ["bool", "01", "0255", "rgb"])
def test_masked_accepts_every_mask_form(form):
    image = _source()
    keep = generate_mask("inpaint", 5, 48, 40)
    out = image.copy()
    out[~keep] = 0
    mask = {"bool": keep, "01": keep.astype(np.uint8), "0255": keep.astype(np.uint8) * 255,
            "rgb": np.repeat(keep[:, :, None].astype(np.uint8) * 255, 3, axis=2)}[form]
    assert assert_masked(out, image, mask).mean == 0.0


def test_masked_fails_when_nothing_is_blacked_out():
    image = _source()
    keep = generate_mask("outpaint", 2, 48, 40)
    with pytest.raises(AssertionError) as info:
        assert_masked(image, image, keep)
    text = str(info.value)
    assert "where the mask is 0 made pure black" in text
    assert any(line.startswith("leak") and "FAIL" in line for line in text.splitlines())
    assert "the exact answer itself scores" not in text


def test_masked_explains_sources_too_dark_to_measure():
    image = _source()
    image[:, :] = (10, 10, 10)  # darker than the black threshold everywhere
    image[:8, :8] = (200, 200, 200)
    keep = generate_mask("inpaint", 5, 48, 40)
    out = image.copy()
    out[~keep] = 0
    with pytest.raises(AssertionError, match="the exact answer itself scores"):
        assert_masked(out, image, keep)


def test_masked_refuses_a_mask_of_another_size():
    from pytest_violin.errors import ImageSizeMismatchError

    with pytest.raises(ImageSizeMismatchError, match="48x40"):
        assert_masked(_source(), _source(), np.ones((10, 10), bool))


# ---------------------------------------------------------------- any sample
def test_obeys_scores_any_sample_and_notes_resizing():
    sample = color_sample("#4F47C6", notation="hex", width=16, height=16)
    big = solid((79, 71, 198), 32, 32)
    metrics = assert_obeys(big, sample)
    assert metrics.info["resized"] and metrics.info["original_size"] == (32, 32)
    with pytest.raises(AssertionError) as info:
        assert_obeys(noisy(big), sample)
    text = str(info.value)
    assert "note: the 32x32 image was resized to 16x16" in text
    assert f"prompt:    {sample.prompt}" in text and f"sample id: {sample.id}" in text


def test_obeys_checks_limit_names_before_scoring():
    sample = shape_sample("circle", 0.5, width=16, height=16)
    with pytest.raises(TypeError, match="iou, dist, size, shape, purity, mean"):
        assert_obeys(object(), sample, sd=0.1)


def test_describe_sample_falls_back_to_the_prompt():
    sample = color_sample("#000000", width=8, height=8)
    assert describe_sample(sample) == "one uniform color #000000 (pure black)"
    from pytest_violin.suite.sample import Sample

    odd = Sample("x/y", "s", "color", "v1", "Draw anything.", 8, 8, layout="single",
                 spec={"kind": "unknown"})
    assert describe_sample(odd) == "Draw anything."


# ---------------------------------------------------------------- pytest output
def test_pytest_shows_the_table_not_the_helper_source(pytester):
    pytester.makepyfile(test_brand="""
        import numpy as np
        from pytest_violin import assert_pure_color

        def test_brand_yellow():
            image = np.zeros((16, 16, 3), np.uint8)
            image[:] = (200, 170, 90)
            assert_pure_color(image, "#D9B451")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*image does not obey: one uniform color #D9B451 (yellow)*",
                                 "*metric | *value | *limit | result*", "*rgb_ed*FAIL*"])
    assert "def assert_blocks" not in out and "def _verdict" not in out


BIASED_MODEL_TEST = '''
import numpy as np
from hypothesis import Phase, given, settings
from pytest_violin import assert_obeys
from pytest_violin.strategies import color_samples
from pytest_violin.suite.colors import ISCC_NBS_COLORS

COMMON = np.array([c.rgb for c in ISCC_NBS_COLORS], float)


def semantic_gravity_model(sample):
    """Draws the requested color pulled 70% of the way toward the nearest common color."""
    asked = np.array(sample.spec["colors"][0], float)
    nearest = COMMON[np.argmin(((COMMON - asked) ** 2).sum(axis=1))]
    drawn = np.rint(asked + 0.7 * (nearest - asked)).astype(np.uint8)
    out = np.empty((sample.height, sample.width, 3), np.uint8)
    out[:] = drawn
    return out


@settings(max_examples=30, deadline=None, database=None, derandomize=True,
          phases=[Phase.generate, Phase.shrink])
@given(sample=color_samples(width=8, height=8))
def test_model_draws_the_color_it_is_asked_for(sample):
    assert_obeys(semantic_gravity_model(sample), sample)
'''


def test_biased_model_fails_with_a_minimal_counterexample(pytester):
    pytester.makepyfile(test_gravity=BIASED_MODEL_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    # the failure is our assertion, with the metric table of the shrunk case: the simplest
    # color that is not a common one is pure black, asked in hex ...
    result.stdout.fnmatch_lines(["*ViolinFailure: image does not obey: one uniform color "
                                 "#000000 (pure black)*", "*rgb_ed*FAIL*"])
    # ... and hypothesis reports the falsifying arguments: the test called with that sample
    # (asserted on structure, not on hypothesis's wording, which changes between releases)
    result.stdout.fnmatch_lines(["*test_model_draws_the_color_it_is_asked_for(*",
                                 "*sample=Sample(id='custom/color/000000/8x8',*"])


def test_the_biased_model_obeys_for_common_colors(pytester):
    """The same model passes when only named colors are asked: the failure is the bias."""
    pytester.makepyfile(test_gravity=BIASED_MODEL_TEST.replace(
        "color_samples(width=8, height=8)", "color_samples(notation='name', width=8, height=8)"))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_aesthetic_inertia_shrinks_to_a_split_near_one_half():
    """A model that always splits 50/50 fails; the shrunk ratio is the nearest one it misses."""
    from hypothesis import Phase, find, settings

    from pytest_violin.strategies import ratio_samples
    from pytest_violin.suite.drawing import render_ratio

    def fifty_fifty(sample):
        spec = sample.spec
        extent = sample.width if spec["orientation"] == "vertical" else sample.height
        return render_ratio(spec["orientation"], extent // 2, spec["colors"], sample.width,
                            sample.height)

    def fails(sample):
        try:
            assert_obeys(fifty_fifty(sample), sample)
        except AssertionError:
            return True
        return False

    found = find(ratio_samples(width=200, height=200), fails,
                 settings=settings(database=None, max_examples=200, derandomize=True, deadline=None,
                                   phases=(Phase.generate, Phase.shrink)))  # no explain: reporting only
    ratio = found.spec["ratio"]
    # ratio error = |0.5 - r| / max(r, 1 - r) against the 0.02 limit: 0.51 still
    # passes (0.0196), 0.515 is the first failing grid point; never an extreme split.
    assert 0.01 < abs(ratio - 0.5) <= 0.04
    with pytest.raises(AssertionError) as info:
        assert_obeys(fifty_fifty(found), found)
    assert "over the limit: ratio\n" in str(info.value)


GIVEN_WITH_FIXTURE = '''
from hypothesis import given, settings
from pytest_violin import assert_obeys
from pytest_violin.strategies import color_samples


@settings(max_examples=3, deadline=None, database=None)
@given(sample=color_samples(width=8, height=8))
def test_property(sample, violin_generate, {fixture}):
    assert_obeys(violin_generate(sample), sample, thresholds={fixture})
'''


def test_given_tests_take_the_session_scoped_violin_limits(pytester):
    """docs/writing_tests.md: pass violin_limits to @given tests, not violin_thresholds."""
    pytester.makepyfile(test_given=GIVEN_WITH_FIXTURE.format(fixture="violin_limits"))
    result = pytester.runpytest("-p", "no:cacheprovider", "--violin-no-cache")
    result.assert_outcomes(passed=1)


def test_function_scoped_violin_thresholds_trips_hypothesis_health_check(pytester):
    from hypothesis.errors import FailedHealthCheck

    pytester.makepyfile(test_given=GIVEN_WITH_FIXTURE.format(fixture="violin_thresholds"))
    result = pytester.runpytest("-p", "no:cacheprovider", "--violin-no-cache")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{FailedHealthCheck.__name__}*"])
