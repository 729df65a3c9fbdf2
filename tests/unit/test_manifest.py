"""Export then import round-trips every field; malformed manifests name file, line, field."""

import json

import numpy as np
import pytest

from pytest_violin.errors import ManifestError
from pytest_violin.suite import (SUITES, export_samples, load_manifest, load_suite, mask_sample, shape_sample)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("export")
    samples = [s for name in SUITES for s in load_suite(name, limit=10, seed=2)]
    rng = np.random.default_rng(0)
    keep = np.ones((32, 48), bool)
    keep[:, :10] = False
    samples.append(mask_sample(rng.integers(0, 256, (32, 48, 3), np.uint8), keep,
                               kind="outpaint"))
    samples.append(shape_sample("triangle", 0.3, anchor="top-right", width=90, height=70))
    export_samples(samples, out, progress=False)
    return out, samples


def test_round_trip_keeps_every_field_and_pixel(exported):
    out, samples = exported
    loaded = load_suite(out)
    assert [s.id for s in loaded] == [s.id for s in samples]
    for a, b in zip(samples, loaded):
        assert a.to_manifest() == b.to_manifest()
        for field in ("id", "suite", "task", "variation", "prompt", "width", "height", "layout",
                      "spec", "control", "metric_names"):
            assert getattr(a, field) == getattr(b, field), field
        assert a == b
        assert np.array_equal(a.expected(), b.expected())
        ia, ib = a.inputs, b.inputs
        assert len(ia) == len(ib) and all(np.array_equal(x, y) for x, y in zip(ia, ib))
    assert load_suite(out / "manifest.jsonl") == loaded


def test_reexport_of_a_loaded_manifest_is_identical(exported, tmp_path):
    out, _ = exported
    export_samples(load_suite(out), tmp_path, progress=False)
    assert (tmp_path / "manifest.jsonl").read_text() == (out / "manifest.jsonl").read_text()


def test_loaded_samples_score_their_own_ground_truth_zero(exported):
    out, _ = exported
    for s in load_suite(out, limit=12):
        assert s.score(s.expected()).mean == 0.0


def test_manifest_lines_hold_relative_paths(exported):
    out, samples = exported
    lines = (out / "manifest.jsonl").read_text().splitlines()
    assert len(lines) == len(samples)
    rec = json.loads(next(ln for ln in lines if '"task":"mask"' in ln))
    assert rec["expected"].startswith("expected/") and rec["expected"].endswith(".png")
    assert [p.rsplit("/", 1)[1] for p in rec["inputs"]] == ["image.png", "mask.png"]
    assert (out / rec["inputs"][0]).is_file()


def _write(tmp_path, records, raw_line=None):
    lines = [json.dumps(r) for r in records]
    if raw_line is not None:
        lines.insert(1, raw_line)
    (tmp_path / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def _good():
    return [s.to_manifest() for s in load_suite("violin-probes", limit=3)]


@pytest.mark.parametrize("mutate, line, field", [
    (lambda r: r[1].pop("id"), 2, "id"),
    (lambda r: r[1].update(id="../escape"), 2, "id"),
    (lambda r: r[1].update(id="Color/V1"), 2, "id"),
    (lambda r: r[2].update(width="512"), 3, "width"),
    (lambda r: r[2].update(height=0), 3, "height"),
    (lambda r: r[0].update(task="poetry"), 1, "task"),
    (lambda r: r[0].update(layout="diagonal"), 1, "layout"),
    (lambda r: r[0].update(prompt=""), 1, "prompt"),
    (lambda r: r[0].update(spec=[1, 2]), 1, "spec"),
    (lambda r: r[1].update(id=r[0]["id"]), 2, "id"),
    (lambda r: r[0].update(expected="expected/missing.png"), 1, "expected"),
    (lambda r: r[0].update(expected="/etc/passwd"), 1, "expected"),
    (lambda r: r[0].update(spec={"kind": "hologram"}), 1, "expected"),
    (lambda r: r[1].update(control="probes/nowhere"), 2, "control"),
    (lambda r: r[0].update(metric_names="iou"), 1, "metric_names"),
])
def test_malformed_manifest_names_file_line_and_field(tmp_path, mutate, line, field):
    records = _good()
    mutate(records)
    folder = _write(tmp_path, records)
    with pytest.raises(ManifestError) as info:
        load_suite(folder)
    err = info.value
    assert (err.line, err.field) == (line, field), str(err)
    assert err.path.endswith("manifest.jsonl")
    assert f"manifest.jsonl:{line}" in str(err)


def test_invalid_json_line(tmp_path):
    folder = _write(tmp_path, _good(), raw_line='{"id": "x", ')
    with pytest.raises(ManifestError, match="invalid JSON") as info:
        load_suite(folder)
    assert info.value.line == 2


def test_empty_or_missing_manifest(tmp_path):
    with pytest.raises(ManifestError, match="no manifest"):
        load_suite(tmp_path)
    (tmp_path / "manifest.jsonl").write_text("\n\n")
    with pytest.raises(ManifestError, match="no sample"):
        load_suite(tmp_path)


def test_hand_written_manifest_without_pngs_renders_from_spec(tmp_path):
    rec = {"id": "team/red-square", "task": "shape", "prompt": "A red... no, a white square.",
           "width": 64, "height": 64, "spec": shape_sample("square", 0.25, width=64,
                                                           height=64).to_manifest()["spec"]}
    folder = _write(tmp_path, [rec])
    (s,) = load_suite(folder)
    assert s.suite == folder.name and s.variation == "default"
    assert s.metric_names == ("iou", "dist", "size", "shape", "purity")
    assert (s.expected() == 255).all(axis=2).sum() == 16 * 16


def test_export_replaces_a_symlink_in_the_output_folder_instead_of_writing_through_it(tmp_path):
    from pytest_violin.suite import load_suite
    from pytest_violin.suite.manifest import export_samples

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.jsonl").symlink_to(victim)
    export_samples(load_suite("violin", tasks=["color"], limit=2), out, progress=False)
    assert victim.read_text() == "keep me"
    assert not (out / "manifest.jsonl").is_symlink()


def test_manifest_that_is_not_utf8_names_file_and_line(tmp_path):
    samples = load_suite("violin-extra", limit=2)
    path = export_samples(samples, tmp_path / "m", progress=False)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1].replace(b'"prompt":"', b'"prompt":"\xff'))
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert info.value.line == 2
    assert f"{path}:2" in str(info.value)


def test_manifest_with_utf8_bom_loads(tmp_path):
    samples = load_suite("violin-extra", limit=2)
    path = export_samples(samples, tmp_path / "m", progress=False)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert [s.id for s in load_manifest(path)] == [s.id for s in samples]
