"""The official Violin data in each form a user has it, and every way it can be wrong.

The datasets are built here (tests/_official_data.py) in the authors' format:
a parquet with their column names and ``{"bytes"}`` image structs, their
metadata CSVs, their converted folder, and a Hugging Face cache snapshot.
"""

from __future__ import annotations

import csv
import sys

import numpy as np
import pytest

pq = pytest.importorskip("pyarrow.parquet")  # the hub extra; the minimum-versions step lacks it

import _official_data as od  # noqa: E402
from pytest_violin import load_suite  # noqa: E402
from pytest_violin.errors import ManifestError, SuiteError  # noqa: E402
from pytest_violin.suite.official import describe_dataset, is_official_source  # noqa: E402

SEED = 2


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VIOLIN_OFFICIAL_CACHE", str(tmp_path / "official-cache"))


@pytest.fixture
def rows():
    return od.make_rows(SEED)


@pytest.fixture
def parquet(tmp_path, rows):
    path = od.write_parquet(tmp_path / "VIOLIN" / "violin-test.parquet", rows, row_group_size=4)
    od.write_metadata(tmp_path / "VIOLIN" / "metadata", rows)
    return path


def _key(samples):
    return [(s.id, s.task, s.variation, s.layout, s.prompt, s.width, s.height) for s in samples]


def _pixels_equal(a, b):
    return all(np.array_equal(x.expected(), y.expected())
               and all(np.array_equal(p, q) for p, q in zip(x.inputs, y.inputs))
               for x, y in zip(a, b))


def test_the_parquet_the_cloned_folder_the_converted_folder_and_the_hub_cache_load_alike(
        tmp_path, rows, parquet, monkeypatch):
    from_file = load_suite(str(parquet))
    from_clone = load_suite(str(parquet.parent))  # `git clone` of the dataset repository
    od.write_converted(tmp_path / "benchmark", rows)
    from_folder = load_suite(str(tmp_path / "benchmark"))
    hub = tmp_path / "hf-home" / "hub"
    commit = od.write_hub_cache(hub, "Perkzi/VIOLIN", parquet, parquet.parent / "metadata")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pytest.importorskip("huggingface_hub")
    from_hub = load_suite("hf:Perkzi/VIOLIN")
    assert len(from_file) == len(rows) == 13
    for other in (from_clone, from_folder, from_hub):
        assert _key(other) == _key(from_file)
        assert _pixels_equal(other, from_file)
    ids = [s.id for s in from_file]
    assert ids[:4] == ["official/color/v1/id_1", "official/color/v1/id_2",
                       "official/color/v2/id_3", "official/color/v2/id_4"]
    assert "official/mask/inpainting/id_1" in ids and "official/mask/random/id_2" in ids
    by_id = {s.id: s for s in from_file}
    for r in rows:  # prompts joined by id, tasks and variations mapped, the split read
        sid = (f"official/mask/{r.mask_type}/id_{r.number}" if r.task == 4 else
               f"official/shape/id_{r.number}" if r.task == 3 else
               f"official/color/v{r.task}/id_{r.number}")
        s = by_id[sid]
        assert s.prompt == r.prompt and np.array_equal(s.expected(), r.gt)
        if r.task == 2:
            assert s.layout == ("vertical" if r.params["vertical"] else "horizontal")
        if r.task == 3:
            assert s.variation == r.params["kind"]
        if r.task == 4:
            assert s.variation == {"inpainting": "inpaint", "outpainting": "outpaint",
                                   "random": "random"}[r.mask_type]
            assert np.array_equal(s.inputs[0], r.photo) and np.array_equal(s.inputs[1], r.mask)
    info = from_hub.dataset
    assert (info["form"], info["repo"], info["revision"]) == ("hub", "Perkzi/VIOLIN", commit)
    assert from_file.dataset["sha256"] == od.hashlib.sha256(parquet.read_bytes()).hexdigest()
    assert from_file.dataset["rows"] == 13 and from_file.dataset["per_task"] == {
        "color/v1": 2, "color/v2": 2, "shape": 3, "mask/inpainting": 2, "mask/outpainting": 2,
        "mask/random": 2}
    line = describe_dataset(from_file.dataset)[0]
    assert "13 rows" in line and "color/v2 2" in line and "mask/random 2" in line


def test_a_second_load_reads_the_cached_index_and_selection_keeps_the_dataset(parquet):
    first = load_suite(str(parquet))
    extracted = sorted(p.name for p in (parquet.parent.parent / "official-cache").rglob("*.json"))
    again = load_suite(str(parquet), tasks=["shape"], limit=2)
    assert [s.task for s in again] == ["shape", "shape"]
    assert again.dataset["sha256"] == first.dataset["sha256"]
    assert sorted(p.name for p in (parquet.parent.parent / "official-cache").rglob("*.json")) == extracted


def test_is_official_source_tells_official_data_from_suites_and_manifests(tmp_path, parquet):
    assert is_official_source(str(parquet)) and is_official_source(str(parquet.parent))
    assert is_official_source("hf:Perkzi/VIOLIN@main")
    assert not is_official_source("violin") and not is_official_source(str(tmp_path / "nope"))
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "manifest.jsonl").write_text("")
    assert not is_official_source(str(tmp_path / "export"))


def test_a_prompt_column_in_the_parquet_wins_and_variation_stands_in_for_task(tmp_path, rows):
    for r in rows:
        r.prompt = "parquet says: " + r.prompt
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows, prompts_in_parquet=True,
                            task_column="variation")
    od.write_metadata(tmp_path / "p" / "metadata", od.make_rows(SEED))
    samples = load_suite(str(path))
    assert len(samples) == 13 and all(s.prompt.startswith("parquet says: ") for s in samples)


def test_metadata_given_elsewhere_is_used(tmp_path, rows):
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows)
    od.write_metadata(tmp_path / "elsewhere", rows)
    with pytest.raises(ManifestError, match="no prompt for id_1"):
        load_suite(str(path))
    assert len(load_suite(str(path), metadata=str(tmp_path / "elsewhere"))) == 13


def test_stored_masks_of_the_other_polarity_are_inverted_and_said(tmp_path):
    rows = od.make_rows(SEED, inverted_masks=True)
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows)
    od.write_metadata(tmp_path / "p" / "metadata", rows)
    samples = load_suite(str(path), tasks=["mask"])
    for s, r in zip(samples, [r for r in rows if r.task == 4]):
        assert np.array_equal(s.inputs[1], 255 - r.mask)  # white = keep, as the plugin sends
        assert s.spec["mask_polarity"] == "black-keep"
    assert samples.dataset["notes"] == {
        "stored mask is black = keep: inverted to the plugin's white = keep": 6}


def test_a_mask_that_contradicts_its_ground_truth_is_reported_apart(tmp_path, rows):
    bad = next(r for r in rows if r.task == 4)
    bad.gt = bad.photo.copy()  # nothing blacked out, though the mask has zeros
    bad.gt[:10] = 0
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows)
    od.write_metadata(tmp_path / "p" / "metadata", rows)
    samples = load_suite(str(path))
    assert len(samples) == 12
    assert samples.dataset["skipped"] == {
        "mask contradicts the ground truth (neither white nor black = keep)": 1,
        "metadata ids without a ground-truth image": 1}
    assert any(line.startswith("  skipped 1: mask contradicts")
               for line in describe_dataset(samples.dataset))


def test_an_ambiguous_var2_ground_truth_is_noted_and_split_as_the_reference_splits(tmp_path, rows):
    v2 = next(r for r in rows if r.task == 2)
    v2.gt = od.solid(v2.params["colors"][0])  # no step: the reference's rule gives top/bottom
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows)
    od.write_metadata(tmp_path / "p" / "metadata", rows)
    samples = load_suite(str(path))
    s = next(s for s in samples if s.id == f"official/color/v2/id_{v2.number}")
    assert s.layout == "horizontal"
    assert v2.params["vertical"]  # its prompt names left and right
    assert samples.dataset["notes"] == {
        "var-2 ground truth has no colour step (ambiguous split): the reference's rule gives "
        "top/bottom": 1,
        "var-2 prompt names the other split than the ground truth shows (the ground truth "
        "decides, as in the reference)": 1}


def test_shape_class_comes_from_the_ground_truth_when_the_prompt_names_none(tmp_path, rows):
    for r in rows:
        if r.task == 3:
            r.prompt = "Draw the figure."
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows)
    od.write_metadata(tmp_path / "p" / "metadata", rows)
    samples = load_suite(str(path), tasks=["shape"])
    assert [s.variation for s in samples] == [r.params["kind"] for r in rows if r.task == 3]
    assert samples.dataset["notes"] == {
        "shape class read from the ground truth (the prompt names none)": 3}


# ------------------------------------------------------------------ errors: one line each
def _one_line(exc) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_a_missing_column_names_the_file_and_the_columns_expected(tmp_path, rows):
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows, drop=("ground_truth",))
    od.write_metadata(tmp_path / "p" / "metadata", rows)
    with pytest.raises(ManifestError) as exc:
        load_suite(str(path))
    text = _one_line(exc)
    assert str(path) in text and "'ground_truth'" in text and "missing" in text


def test_an_unknown_task_number_names_the_row(tmp_path, rows):
    rows[3].task = 7
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows)
    od.write_metadata(tmp_path / "p" / "metadata", rows)
    with pytest.raises(ManifestError) as exc:
        load_suite(str(path))
    text = _one_line(exc)
    assert f"{path} row 3" in text and "task" in text and "7" in text and "4 (image mask)" in text


def test_an_id_without_a_prompt_names_the_id_and_the_metadata_file(tmp_path, rows):
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows)
    od.write_metadata(tmp_path / "p" / "metadata", rows, skip_ids={(2, 4)})
    with pytest.raises(ManifestError) as exc:
        load_suite(str(path))
    text = _one_line(exc)
    assert "id_4" in text and "Task_Color_Var2_metadata.csv" in text and "row 3" in text


def test_an_unreadable_image_names_the_file_and_row(tmp_path, rows):
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows)
    od.write_metadata(tmp_path / "p" / "metadata", rows)
    table = pq.read_table(str(path)).to_pylist()
    table[2]["ground_truth"] = {"bytes": b"\x89PNG\r\n\x1a\nnot really", "path": None}
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(table, schema=pq.read_schema(str(path))), str(path))
    with pytest.raises(ManifestError) as exc:
        load_suite(str(path))
    text = _one_line(exc)
    assert f"{path} row 2" in text and "not a usable image" in text


def test_bad_metadata_csvs_name_file_line_and_what_was_expected(tmp_path, rows):
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows)
    meta = od.write_metadata(tmp_path / "p" / "metadata", rows)
    target = meta / "Task_Geometric_metadata.csv"
    lines = target.read_text().splitlines()
    target.write_text("\n".join(lines + [lines[1]]) + "\n")  # the first id again
    with pytest.raises(ManifestError) as exc:
        load_suite(str(path))
    assert f"{target}:{len(lines) + 1}" in _one_line(exc) and "listed twice" in str(exc.value)
    with open(target, "w", newline="") as fh:
        csv.writer(fh).writerows([["number", "text"], [5, "x"]])
    with pytest.raises(ManifestError) as exc:
        load_suite(str(path))
    assert "'id' is missing" in _one_line(exc) and "id, prompt" in str(exc.value)


def test_an_image_id_that_is_a_path_is_refused(tmp_path, rows):
    next(r for r in rows if r.task == 4).image_id = "../../etc/passwd"
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows)
    od.write_metadata(tmp_path / "p" / "metadata", rows)
    with pytest.raises(ManifestError, match="image_id '../../etc/passwd' is not a plain file name"):
        load_suite(str(path))


def test_without_pyarrow_the_error_names_the_extra(parquet, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # import fails as if not installed
    with pytest.raises(SuiteError) as exc:
        load_suite(str(parquet))
    assert "pip install 'pytest-violin[hub]'" in _one_line(exc)


def test_offline_and_not_cached_is_one_line(tmp_path, monkeypatch):
    pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SuiteError) as exc:
        load_suite("hf:Perkzi/VIOLIN@main")
    text = _one_line(exc)
    assert "HF_HUB_OFFLINE" in text and "not in the Hugging Face cache" in text
    with pytest.raises(SuiteError, match="hf:OWNER/NAME"):
        load_suite("hf:no-slash")


def test_a_converted_folder_without_the_mask_paths_names_the_csv_and_id(tmp_path, rows):
    od.write_converted(tmp_path / "benchmark", rows)
    csv_path = tmp_path / "benchmark" / "metadata" / "Task_Image_Mask_random_metadata.csv"
    lines = csv_path.read_text().splitlines()
    csv_path.write_text("id,prompt\n" + "\n".join(",".join(l.split(",")[:2]) for l in lines[1:]) + "\n")
    with pytest.raises(ManifestError) as exc:
        load_suite(str(tmp_path / "benchmark"))
    text = _one_line(exc)
    assert f"{csv_path} id 1" in text and "no image1_path for this id" in text


# ------------------------------------------------------------------ bounds: bytes read from outside
def test_a_row_group_over_the_encoded_size_cap_is_refused_from_the_footer_before_it_is_read(
        tmp_path, rows, monkeypatch):
    from pytest_violin.suite.official import parquet as official_parquet

    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows, row_group_size=4)
    od.write_metadata(tmp_path / "p" / "metadata", rows)
    footer = pq.ParquetFile(str(path)).metadata
    sizes = [footer.row_group(i).total_byte_size for i in range(footer.num_row_groups)]
    big = sizes.index(max(sizes))
    assert big > 0  # the refusal comes before the smaller row groups ahead of it are read
    monkeypatch.setattr(official_parquet, "MAX_ROW_GROUP_BYTES", sizes[big] - 1)
    with pytest.raises(ManifestError) as exc:
        load_suite(str(path))
    text = _one_line(exc)
    assert str(path) in text and f"row group {big}" in text
    assert f"{sizes[big]:,} bytes" in text and f"{sizes[big] - 1:,}" in text
    assert not list((tmp_path / "official-cache").rglob("*.png"))  # nothing was extracted
    monkeypatch.setattr(official_parquet, "MAX_ROW_GROUP_BYTES", sizes[big])  # at the cap: read
    assert len(load_suite(str(path))) == 13


def test_each_metadata_csv_is_read_once_bounded_and_the_digest_is_of_what_was_read(
        tmp_path, rows, monkeypatch):
    import io
    import os

    from pytest_violin.suite.official import metadata as official_metadata

    folder = od.write_metadata(tmp_path / "metadata", rows)
    names = {p.name for p in folder.iterdir()}
    opened = []
    real_io_open, real_os_open = io.open, os.open

    def io_open(file, *args, **kwargs):
        opened.append(os.path.basename(os.fspath(file)) if not isinstance(file, int) else None)
        return real_io_open(file, *args, **kwargs)

    def os_open(file, *args, **kwargs):
        opened.append(os.path.basename(os.fspath(file)))
        return real_os_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", io_open)
    monkeypatch.setattr(os, "open", os_open)
    meta = official_metadata.read_metadata(folder)
    monkeypatch.undo()
    assert sorted(n for n in opened if n in names) == sorted(names)  # one open each
    expected = od.hashlib.blake2b(digest_size=16)
    for path in sorted(folder.iterdir()):
        expected.update(path.name.encode() + b"\0" + od.hashlib.sha256(path.read_bytes()).digest())
    assert meta.digest == expected.hexdigest()
    target = max(folder.iterdir(), key=lambda p: p.stat().st_size)  # only it is over the cap
    monkeypatch.setattr(official_metadata, "MAX_CSV_BYTES", target.stat().st_size - 1)
    with pytest.raises(ManifestError) as exc:
        official_metadata.read_metadata(folder)
    text = _one_line(exc)
    assert str(target) in text and f"{target.stat().st_size - 1:,}" in text


def _hub_info(repo, sha, siblings):
    """``GET /api/datasets/REPO/revision/REV?blobs=true`` as the hub answers it (files with sizes;
    an LFS file's ``size`` is its content's, with the ``lfs`` block beside it)."""
    return {"_id": "6650c0ffee0000000000abcd", "id": repo, "author": repo.split("/")[0], "sha": sha,
            "lastModified": "2025-05-20T08:00:00.000Z", "private": False, "gated": False,
            "disabled": False, "tags": [], "downloads": 0, "likes": 0,
            "createdAt": "2025-05-01T08:00:00.000Z", "usedStorage": 0, "siblings": siblings}


def _lfs(name, size):
    return {"rfilename": name, "blobId": "b" * 40, "size": size,
            "lfs": {"sha256": "c" * 64, "size": size, "pointerSize": 134}}


def test_a_hub_download_over_the_byte_cap_is_refused_from_the_hub_metadata_before_a_byte_of_it(
        tmp_path, monkeypatch):
    pytest.importorskip("huggingface_hub")
    from _servers import FaultServer, Reply
    from pytest_violin.suite.official import hub

    sha = "89abcdef0123456789abcdef0123456789abcdef"
    big = hub.MAX_HUB_BYTES  # the parquet alone is at the cap; the CSV puts the sum over it
    siblings = [{"rfilename": ".gitattributes", "blobId": "a" * 40, "size": 2400},
                {"rfilename": "README.md", "blobId": "d" * 40, "size": 10 ** 12},  # not fetched
                _lfs("violin-test.parquet", big),
                {"rfilename": "metadata/Task_Geometric_metadata.csv", "blobId": "e" * 40,
                 "size": 1234}]
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    hf = pytest.importorskip("huggingface_hub.constants")  # read once, at its import (an
    monkeypatch.setattr(hf, "HF_HUB_OFFLINE", False)       # earlier test may have set it)
    routes = {"/api/datasets/Perkzi/VIOLIN/revision/main":
              Reply.json(_hub_info("Perkzi/VIOLIN", sha, siblings))}
    missing = Reply(status=404, body={"error": "not here"})
    with FaultServer(routes=routes, default=missing) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        with pytest.raises(SuiteError) as exc:
            load_suite("hf:Perkzi/VIOLIN@main")
        text = _one_line(exc)
        assert "hf:Perkzi/VIOLIN@main" in text and f"{big + 1234:,} bytes" in text
        assert f"{hub.MAX_HUB_BYTES:,}" in text and "2 files" in text
        assert [r.path.split("?")[0] for r in server.requests] == [
            "/api/datasets/Perkzi/VIOLIN/revision/main"]  # the metadata only, nothing downloaded
        assert "blobs=true" in server.requests[0].path
        siblings[2] = _lfs("violin-test.parquet", 5000)  # under the cap: the download goes on,
        with pytest.raises(SuiteError, match="download failed"):  # pinned to the commit checked
            load_suite("hf:Perkzi/VIOLIN@main")
        later = [r.path for r in server.requests[2:]]
        assert later and all(sha in p for p in later), later
        siblings[2] = {"rfilename": "violin-test.parquet", "blobId": "f" * 40}  # no size: refused
        with pytest.raises(SuiteError) as exc:
            load_suite("hf:Perkzi/VIOLIN@main")
        assert "violin-test.parquet" in _one_line(exc) and "size" in str(exc.value)


def test_a_cached_hub_snapshot_over_the_byte_cap_is_refused_offline(tmp_path, parquet, monkeypatch):
    pytest.importorskip("huggingface_hub")
    from pytest_violin.suite.official import hub

    cache = tmp_path / "hf-home" / "hub"
    od.write_hub_cache(cache, "Perkzi/VIOLIN", parquet, parquet.parent / "metadata")
    total = parquet.stat().st_size + sum(p.stat().st_size
                                         for p in (parquet.parent / "metadata").iterdir())
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "MAX_HUB_BYTES", total - 1)
    with pytest.raises(SuiteError) as exc:
        load_suite("hf:Perkzi/VIOLIN")
    text = _one_line(exc)
    assert "hf:Perkzi/VIOLIN" in text and f"{total:,} bytes" in text and f"{total - 1:,}" in text
    monkeypatch.setattr(hub, "MAX_HUB_BYTES", total)
    assert len(load_suite("hf:Perkzi/VIOLIN")) == 13


def test_a_hub_that_does_not_answer_the_file_list_leaves_the_cached_snapshot_usable(
        tmp_path, parquet, monkeypatch):
    pytest.importorskip("huggingface_hub")
    from _servers import FaultServer, Reply

    cache = tmp_path / "hf-home" / "hub"
    od.write_hub_cache(cache, "Perkzi/VIOLIN", parquet, parquet.parent / "metadata")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    hf = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setattr(hf, "HF_HUB_OFFLINE", False)
    with FaultServer(default=Reply(status=503, body={"error": "down"})) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        assert len(load_suite("hf:Perkzi/VIOLIN")) == 13
        assert server.requests and all("/resolve/" not in r.path for r in server.requests)
        with pytest.raises(SuiteError) as exc:  # not cached: the hub's answer is the error
            load_suite("hf:Perkzi/OTHER")
        assert "hf:Perkzi/OTHER" in _one_line(exc) and "download failed" in str(exc.value)


def test_a_download_pinned_to_the_checked_commit_keeps_the_branch_ref_for_offline_loads(
        tmp_path, parquet, monkeypatch):
    hh = pytest.importorskip("huggingface_hub")
    from _servers import FaultServer, Reply

    sha = "fedcba9876543210fedcba9876543210fedcba98"
    cache = tmp_path / "hub"
    calls = []

    def snapshot_download(**kw):  # what the client leaves in the cache for a commit hash
        calls.append(kw["revision"])
        od.write_hub_cache(cache, kw["repo_id"], parquet, parquet.parent / "metadata", commit=sha)
        (cache / "datasets--Perkzi--VIOLIN" / "refs" / "main").unlink()  # no ref for a hash
        return str(cache / "datasets--Perkzi--VIOLIN" / "snapshots" / sha)

    real = hh.snapshot_download
    monkeypatch.setattr(hh, "snapshot_download", snapshot_download)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    hf = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setattr(hf, "HF_HUB_OFFLINE", False)
    files = [_lfs("violin-test.parquet", parquet.stat().st_size)]
    routes = {"/api/datasets/Perkzi/VIOLIN": Reply.json(_hub_info("Perkzi/VIOLIN", sha, files))}
    with FaultServer(routes=routes) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        online = load_suite("hf:Perkzi/VIOLIN")
    assert calls == [sha] and online.dataset["revision"] == sha
    assert (cache / "datasets--Perkzi--VIOLIN" / "refs" / "main").read_text() == sha
    monkeypatch.setattr(hh, "snapshot_download", real)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the client's own cache look-up finds the branch
    offline = load_suite("hf:Perkzi/VIOLIN")
    assert offline.dataset["revision"] == sha and _key(offline) == _key(online)


def test_a_ground_truth_file_over_the_cell_cap_is_refused_before_it_is_hashed(tmp_path, rows,
                                                                            monkeypatch):
    from pytest_violin.suite.official import loader

    od.write_converted(tmp_path / "benchmark", rows)
    gt = tmp_path / "benchmark" / "data" / "Task_Color_Var1" / "id_1.png"  # only probed, hashed
    cap = max(p.stat().st_size for p in (tmp_path / "benchmark" / "data").rglob("*.png"))
    monkeypatch.setattr(loader, "MAX_CELL_BYTES", cap)
    with open(gt, "ab") as fh:  # a valid header, then bytes no decoder reads, up to the cap
        fh.write(b"\0" * (cap - gt.stat().st_size))
    assert len(load_suite(str(tmp_path / "benchmark"))) == 13  # at the cap: read
    with open(gt, "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(ManifestError) as exc:
        load_suite(str(tmp_path / "benchmark"))
    text = _one_line(exc)
    assert str(gt) in text and f"{cap + 1:,}" in text and f"{cap:,}" in text
