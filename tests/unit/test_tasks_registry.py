"""The task registry: one family per task, everything else a view of it."""

import numpy as np
import pytest

from pytest_violin import tasks
from pytest_violin.assertions import assert_obeys, describe_sample
from pytest_violin.errors import InvalidArgumentError, SuiteError
from pytest_violin.metrics import Metrics
from pytest_violin.suite import SUITES, Sample, load_suite
from pytest_violin.tasks import TaskFamily

BUILTIN = ("color", "shape", "mask", "ratio", "border", "count")


@pytest.mark.parametrize("name", BUILTIN)
def test_every_builtin_family_is_registered_with_metrics_and_limits(name):
    from pytest_violin.thresholds import DEFAULT_LIMITS, limits_for_task

    family = tasks.family(name)
    assert family.name == name and family.kinds and family.metric_names
    limits = limits_for_task(DEFAULT_LIMITS, name, family.metric_names)
    assert list(limits) == [*family.metric_names, "mean"]
    assert all(0.0 < v < 1.0 for v in limits.values())


def test_builtin_families_are_the_registry_lines_in_order():
    assert tuple(tasks.BUILTIN_FAMILIES) == BUILTIN
    assert tuple(f.name for f in tasks.builtin_families()) == BUILTIN


def test_every_spec_kind_of_every_suite_sample_has_its_tasks_family():
    seen = set()
    for suite in SUITES:
        seen |= {(s.task, s.spec.get("kind"), s.metric_names) for s in load_suite(suite)}
    assert {task for task, _, _ in seen} == set(BUILTIN)
    for task, kind, names in seen:
        assert tasks.family_for_kind(kind) is tasks.family(task), (task, kind)
        assert names == tasks.family(task).metric_names


def test_the_threshold_tables_and_suite_constants_are_views_of_the_registry():
    from pytest_violin import thresholds
    from pytest_violin.suite import manifest, sample
    from pytest_violin.tasks import color, geometric

    fams = tasks.builtin_families()
    assert manifest.RENDERABLE_KINDS == tuple(k for f in fams for k in f.kinds)
    assert sample.TASKS == BUILTIN
    assert sample.LAYOUTS == color.LAYOUTS == ("single", "vertical", "horizontal", "quad")
    for name in BUILTIN:
        assert sample.default_metric_names(name) == tasks.family(name).metric_names
    assert thresholds.KNOWN_METRICS == {f.name: f.metric_names for f in fams if f.strict_thresholds}
    assert list(thresholds.KNOWN_METRICS) == ["color", "shape", "mask"]
    assert thresholds.DEFAULT_LIMITS == {f"{f.name}.{k}": v for f in fams
                                         for k, v in f.default_limits.items()}
    assert thresholds.DEFAULT_EXTRA_LIMIT == tasks.DEFAULT_EXTRA_LIMIT
    assert geometric.RATIO_LIMITS == {"ratio": 0.02, **color.LIMITS}


def test_builtin_metric_names_match_what_the_scorers_return():
    for suite in SUITES:
        firsts = {}
        for s in load_suite(suite):
            firsts.setdefault((s.task, s.spec.get("kind")), s)
        for sample in firsts.values():
            assert tuple(sample.score(sample.expected())) == tasks.family(sample.task).metric_names


# ---------------------------------------------------------------- a throwaway family
def _render_gray(spec, width, height):
    return np.full((height, width, 3), spec["level"], np.uint8)


def _score_gray(sample, image, profile):
    off = abs(float(image.mean()) - sample.spec["level"]) / 255.0
    return Metrics({"off": off}, task=sample.task, profile=profile)


def _describe_gray(sample):
    return f"solid gray {sample.spec['level']}" if sample.spec.get("kind") == "gray" else None


@pytest.fixture
def gray_family():
    family = tasks.register(TaskFamily(name="gray", metric_names=("off",), kinds=("gray",),
                                       render=_render_gray, score=_score_gray,
                                       describe=_describe_gray))
    try:
        yield family
    finally:
        tasks.unregister("gray")
    assert tasks.find_family("gray") is None and tasks.family_for_kind("gray") is None


def _gray_sample():
    return Sample(id="gray/v1/t0", suite="custom", task="gray", variation="v1",
                  prompt="A solid mid-gray image.", width=8, height=6,
                  spec={"kind": "gray", "level": 128})


def test_a_registered_family_renders_scores_and_describes_through_the_usual_names(gray_family):
    sample = _gray_sample()
    assert sample.metric_names == ("off",)
    expected = sample.expected()
    assert expected.shape == (6, 8, 3) and (expected == 128).all()
    assert (tasks.render(sample.spec, 8, 6) == expected).all()
    assert tasks.render_inputs(sample.spec, 8, 6) == () and sample.inputs == ()
    assert tasks.score(sample, expected, "violin")["off"] == 0.0
    assert sample.score(np.zeros((12, 16, 3), np.uint8))["off"] == pytest.approx(128 / 255)
    assert describe_sample(sample) == "solid gray 128"
    assert_obeys(expected, sample)  # a non-strict family: every metric gets DEFAULT_EXTRA_LIMIT
    with pytest.raises(AssertionError, match="solid gray 128"):
        assert_obeys(np.zeros((6, 8, 3), np.uint8), sample)


def test_an_unregistered_family_is_refused_everywhere():
    with pytest.raises(SuiteError, match="'gray'"):
        _gray_sample()
    with pytest.raises(SuiteError, match="'gray'.*blocks"):
        tasks.render({"kind": "gray", "level": 1}, 4, 4)


def test_register_refuses_a_taken_name_or_kind_and_builtins_stay(gray_family):
    with pytest.raises(InvalidArgumentError, match="'gray'"):
        tasks.register(gray_family)
    clash = TaskFamily(name="grey", metric_names=("off",), kinds=("blocks",),
                       render=_render_gray, score=_score_gray)
    with pytest.raises(InvalidArgumentError, match="'blocks'.*'color'"):
        tasks.register(clash)
    with pytest.raises(InvalidArgumentError, match="'color'"):
        tasks.unregister("color")
    assert tasks.family_for_kind("blocks") is tasks.family("color")


@pytest.mark.parametrize("bad, match", [
    (dict(name="Gray"), "'Gray'"),
    (dict(metric_names=()), "metric_names"),
    (dict(metric_names=("mean",)), "'mean'"),
    (dict(default_limits={"nope": 0.1}), "'nope'"),
    (dict(default_limits={"off": 2.0}), "off=2.0"),
    (dict(score_kinds=("other",)), "'other'"),
    (dict(score=None), "score None"),
])
def test_a_malformed_family_is_refused_naming_the_value(bad, match):
    fields = dict(name="gray", metric_names=("off",), kinds=("gray",), render=_render_gray,
                  score=_score_gray)
    with pytest.raises(InvalidArgumentError, match=match):
        TaskFamily(**{**fields, **bad})


def test_tasks_is_light_to_import():
    import subprocess
    import sys

    code = ("import sys, pytest_violin.tasks, pytest_violin.thresholds; "
            "heavy = [m for m in ('numpy', 'cv2', 'pytest_violin.suite', 'pytest_violin.metrics') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
