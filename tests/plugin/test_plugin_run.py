"""End-to-end runs of the plugin with pytester: oracle, python: models, replay, fixtures."""

import json
import re
import xml.etree.ElementTree as ET

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import pytest


def _preload():
    """Import and cache everything generation needs before pytester snapshots sys.modules.

    In-process pytester runs drop modules first imported during the run; some
    extension modules (scikit-image's data loaders) cannot be imported twice.
    """
    from pytest_violin.suite import drawing as photos, load_suite

    for name in photos.SKIMAGE_PHOTOS:
        photos.load_photo("skimage", name)
    for task in ("color", "shape", "mask"):
        for sample in load_suite("violin", tasks=(task,), limit=3):
            sample.score(sample.expected())


_preload()

MODELS = '''
import json, os
import numpy as np

def noisy_color(request):
    img = request.sample.expected().astype(np.int16)
    if request.task == "color":
        rng = np.random.default_rng(request.seed)
        img = img + rng.integers(-70, 71, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)

def shifted_shape(request):
    img = request.sample.expected()
    if request.task == "shape":
        return np.roll(img, request.width // 10, axis=1)
    return img

def flaky(request):
    if request.sample_id == os.environ["VIOLIN_FAIL_ID"]:
        raise RuntimeError("model crashed on purpose")
    return request.sample.expected()

def off_on_repeat_two(request):
    with open("seeds.jsonl", "a") as fh:
        fh.write(json.dumps([request.sample_id, request.repeat, request.seed]) + "\\n")
    img = request.sample.expected().astype(np.int16)
    if request.repeat == 2:
        img = np.where(img > 127, img - 24, img + 24)
    return img.astype(np.uint8)
'''

DUMP_CONFTEST = '''
import json

def pytest_violin_sample_scored(config, sample, images, result):
    result.extra["n_images"] = len(images)
    result.extra["pid_marker"] = "scored"

def pytest_violin_session_results(config, store):
    with open("violin-results.json", "w") as fh:
        json.dump(store.to_dict(), fh, allow_nan=True)
'''


def _ids(pytester, **kw):
    from pytest_violin.suite import load_suite

    return [s.id for s in load_suite("violin", **kw)]


def _junit(path):
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = "failed" if case.find("failure") is not None or case.find("error") is not None else "passed"
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        out[case.get("name")] = (outcome, props)
    return out


def test_limit_50_passes_stratified_sample_with_one_summary(pytester):
    pytester.makeconftest(DUMP_CONFTEST)
    result = pytester.runpytest("--violin-model=oracle", "--violin-limit=50", "-p", "no:randomly",
                                "--junitxml=j.xml")
    result.assert_outcomes(passed=50)
    out = result.stdout.str()
    assert out.count("violin summary") == 1
    data = json.loads((pytester.path / "violin-results.json").read_text())
    tasks = {r["task"] for r in data["results"]}
    assert {"color", "shape", "mask"} <= tasks
    assert all(r["outcome"] == "passed" and r["metrics"]["mean"] <= 0.05 for r in data["results"])
    assert all(r["extra"]["n_images"] == 1 for r in data["results"])
    junit = _junit(pytester.path / "j.xml")
    assert len(junit) == 50
    assert all("violin.mean" in props for _, props in junit.values())
    for task in tasks:
        assert f"violin / {task}" in out


@pytest.mark.slow  # two xdist workers start: CI's e2e step and its minimum-versions step
def test_xdist_same_outcomes_and_one_summary(pytester):
    """The xdist smoke test: outcomes, summary, results and baseline as without it.

    (The other multi-process runs: tests/plugin/test_gate_plugin.py and tests/plugin/test_scope.py
    under xdist.)
    """
    pytester.makepyfile(violin_models=MODELS)
    pytester.makeconftest(DUMP_CONFTEST)
    args = ["--violin-model=python:violin_models:shifted_shape", "--violin-tasks=shape,color",
            "--violin-limit=12", "-p", "no:randomly"]
    single = pytester.runpytest(*args, "--junitxml=single.xml", "--violin-save-baseline=single.json")
    single_results = json.loads((pytester.path / "violin-results.json").read_text())
    # the controller in this process (its workers are processes): a subprocess cost seconds more
    dist = pytester.runpytest(*args, "-n", "2", "--junitxml=dist.xml", "--violin-save-baseline=dist.json")
    dist_results = json.loads((pytester.path / "violin-results.json").read_text())
    created = re.compile(r'"created": "[^"]*"')
    baselines = [created.sub("", (pytester.path / name).read_text()) for name in ("single.json", "dist.json")]
    assert baselines[0] == baselines[1]
    assert len(json.loads((pytester.path / "dist.json").read_text())["samples"]) == 12
    a, b = _junit(pytester.path / "single.xml"), _junit(pytester.path / "dist.xml")
    assert {k: v[0] for k, v in a.items()} == {k: v[0] for k, v in b.items()}
    assert any(v[0] == "failed" for v in a.values()) and any(v[0] == "passed" for v in a.values())
    assert dist.stdout.str().count("violin summary") == 1
    assert single.stdout.str().count("violin summary") == 1

    def strip(results):
        return [(r["sample_id"], r["outcome"], r["metrics"], r["extra"]) for r in results["results"]]

    assert strip(single_results) == strip(dist_results)
    assert len(dist_results["results"]) == 12


def test_noisy_model_fails_color_samples_naming_the_metric(pytester):
    pytester.makepyfile(violin_models=MODELS)
    result = pytester.runpytest("--violin-model=python:violin_models:noisy_color", "--violin-limit=10",
                                "--violin-tasks=color,shape", "-p", "no:randomly", "-rf")
    color = set(_ids(pytester, tasks=("color", "shape"), limit=10))
    color = {i for i in color if i.startswith("color/")}
    failed = {line.split("violin::")[1].split(" ")[0] for line in result.stdout.lines
              if line.startswith("FAILED violin::")}
    assert failed == color and color
    out = result.stdout.str()
    assert "over the limit" in out and "| FAIL" in out and "prompt:" in out
    assert "Traceback" not in out


def test_shifted_model_fails_shape_samples(pytester):
    pytester.makepyfile(violin_models=MODELS)
    result = pytester.runpytest("--violin-model=python:violin_models:shifted_shape",
                                "--violin-tasks=shape,color", "--violin-limit=12", "-rf")
    outcomes = result.parseoutcomes()
    shape_ids = [i for i in _ids(pytester, tasks=("shape", "color"), limit=12) if i.startswith("shape/")]
    assert outcomes["failed"] == len(shape_ids) > 0
    assert "dist" in result.stdout.str()


def test_raising_model_fails_only_that_sample(pytester, monkeypatch):
    pytester.makepyfile(violin_models=MODELS)
    target = _ids(pytester, tasks=("shape",), limit=6)[3]
    monkeypatch.setenv("VIOLIN_FAIL_ID", target)
    args = ["--violin-model=python:violin_models:flaky", "--violin-tasks=shape", "--violin-limit=6"]
    result = pytester.runpytest(*args, "-rf")
    result.assert_outcomes(passed=5, failed=1)
    out = result.stdout.str()
    assert f"FAILED violin::{target}" in out and "model crashed on purpose" in out
    # --lf reruns only that sample
    again = pytester.runpytest(*args, "--lf")
    again.assert_outcomes(failed=1, deselected=5)


def test_keyword_and_deselect(pytester):
    ids = _ids(pytester, tasks=("shape",), limit=9)
    sel = ["--violin-model=oracle", "--violin-tasks=shape", "--violin-limit=9"]
    result = pytester.runpytest(*sel, "-k", "circle")
    n_circle = sum("/circle/" in i for i in ids)
    assert 0 < n_circle < 9
    result.assert_outcomes(passed=n_circle, deselected=9 - n_circle)
    result = pytester.runpytest(*sel, f"--deselect=violin::{ids[0]}")
    result.assert_outcomes(passed=8, deselected=1)
    result = pytester.runpytest(*sel, "--collect-only", "-q")
    assert f"violin::{ids[0]}" in result.stdout.str() and "9 tests collected" in result.stdout.str()


def test_save_outputs_then_replay(pytester):
    ids = _ids(pytester, tasks=("shape", "mask"), limit=6)
    sel = ["--violin-tasks=shape,mask", "--violin-limit=6"]
    result = pytester.runpytest("--violin-model=oracle", *sel, "--violin-save-outputs=rec")
    result.assert_outcomes(passed=6)
    files = sorted(p.relative_to(pytester.path / "rec").as_posix() for p in (pytester.path / "rec").rglob("*.png"))
    assert files == sorted(f"{i}.png" for i in ids)
    result = pytester.runpytest("--violin-model=dir:rec", *sel)
    result.assert_outcomes(passed=6)
    (pytester.path / "rec" / f"{ids[4]}.png").unlink()
    result = pytester.runpytest("--violin-model=dir:rec", *sel, "-rf")
    result.assert_outcomes(passed=5, failed=1)
    assert f"{ids[4]}.png" in result.stdout.str() and "does not exist" in result.stdout.str()


def test_repeats_mean_and_worst_pass_rules(pytester):
    from pytest_violin.suite import load_suite
    import numpy as np

    pytester.makepyfile(violin_models=MODELS)
    pytester.makeconftest(DUMP_CONFTEST)
    samples = load_suite("violin", tasks=("color",), limit=3)
    dists = []
    for s in samples:
        img = s.expected().astype(np.int16)
        off = np.where(img > 127, img - 24, img + 24).astype(np.uint8)
        dists.append(s.score(off)["rgb_ed"])
    lo, hi = max(dists) / 3, min(dists)
    assert lo < hi
    limit = (lo + hi) / 2
    base = ["--violin-model=python:violin_models:off_on_repeat_two", "--violin-tasks=color",
            "--violin-limit=3", "--violin-repeats=3", f"--violin-threshold=color.rgb_ed={limit:.6f}",
            "--violin-threshold=color.mean=1", "--violin-threshold=color.lab_00=1"]
    result = pytester.runpytest(*base)
    result.assert_outcomes(passed=3)
    data = json.loads((pytester.path / "violin-results.json").read_text())["results"]
    for r in data:
        assert len(r["repeats"]) == 3 and r["worst"]["rgb_ed"] > r["metrics"]["rgb_ed"] > 0
        assert r["spread"]["rgb_ed"] > 0 and r["pass_rule"] == "mean"
    seeds = [json.loads(line) for line in (pytester.path / "seeds.jsonl").read_text().splitlines()]
    assert len({seed for _, _, seed in seeds}) == 9
    result = pytester.runpytest(*base, "--violin-pass-rule=worst", "-rf")
    result.assert_outcomes(failed=3)
    assert "worst repeat" in result.stdout.str()


def test_fixtures_and_marker_without_model(pytester):
    pytester.makepyfile('''
        import numpy as np
        import pytest

        @pytest.mark.violin(tasks="color", limit=3)
        def test_generate_and_check(violin_sample, violin_generate, violin_check):
            image = violin_generate(violin_sample)
            metrics = violin_check(violin_sample, image)
            assert violin_sample.task == "color" and metrics.mean <= 0.01

        def test_model(violin_model):
            assert violin_model.identity == "oracle"

        @pytest.mark.violin(tasks=["shape"], limit=2, thresholds={"shape.iou": 0.5})
        def test_marker_thresholds(violin_sample, violin_check, violin_thresholds):
            assert violin_thresholds["shape.iou"] == 0.5
            black = np.zeros((violin_sample.height, violin_sample.width, 3), np.uint8)
            with pytest.raises(AssertionError, match="iou"):
                violin_check(violin_sample, black)
    ''')
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=6)
    assert "test_generate_and_check[color/" in result.stdout.str()
