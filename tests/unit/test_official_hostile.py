"""Official datasets built to hurt: links out of the dataset, escape codes, duplicated ids,
bombs that are small on disk and huge decoded, a file swapped under the hash memo.

Each case is the worst input of its kind, built here in the official format
(tests/_official_data.py); each must end in one printable line naming the file,
or load what it should, and never print a byte of a file that is not the
expected kind.
"""

from __future__ import annotations

import os
import re
import shutil
import sys

import numpy as np
import pytest

pq = pytest.importorskip("pyarrow.parquet")  # the hub extra; the minimum-versions step lacks it
pa = pytest.importorskip("pyarrow")

import _official_data as od  # noqa: E402
from pytest_violin import load_suite  # noqa: E402
from pytest_violin.errors import ManifestError, SuiteError  # noqa: E402

SECRET = "sk-hostile-dataset-test-0123456789abcdef"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VIOLIN_OFFICIAL_CACHE", str(tmp_path / "official-cache"))


@pytest.fixture
def rows():
    return od.make_rows(3)


def _line(exc) -> str:
    """The error's text: one line, nothing a terminal would act on."""
    text = str(exc.value)
    assert "\n" not in text and "\r" not in text
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), ascii(text)
    return text


def _converted(tmp_path, rows):
    return od.write_converted(tmp_path / "benchmark", rows)


# ------------------------------------------------------------------ files outside the dataset
@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="needs Linux /proc")
def test_a_metadata_csv_linked_to_the_environment_is_refused_before_a_byte_is_read(
        tmp_path, rows, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    root = _converted(tmp_path, rows)
    link = root / "metadata" / "Task_Color_Var1_metadata.csv"
    link.unlink()
    link.symlink_to("/proc/self/environ")
    with pytest.raises(ManifestError) as exc:
        load_suite(str(root))
    text = _line(exc)
    assert SECRET not in text and "OPENAI_API_KEY" not in text
    assert str(link) in text and "outside" in text


def test_a_metadata_csv_that_is_a_fifo_or_a_link_out_is_refused_and_a_link_inside_is_read(
        tmp_path, rows):
    root = _converted(tmp_path, rows)
    meta = root / "metadata"
    outside = tmp_path / "elsewhere.csv"
    shutil.move(meta / "Task_Geometric_metadata.csv", outside)
    (meta / "Task_Geometric_metadata.csv").symlink_to(outside)
    with pytest.raises(ManifestError, match="outside") as exc:
        load_suite(str(root))
    _line(exc)
    (meta / "Task_Geometric_metadata.csv").unlink()
    shutil.move(outside, root / "kept.csv")  # a link that stays inside the dataset is read
    (meta / "Task_Geometric_metadata.csv").symlink_to(root / "kept.csv")
    assert len(load_suite(str(root))) == len(rows)
    if hasattr(os, "mkfifo"):  # refused by its kind, never opened (opening a FIFO blocks)
        (meta / "Task_Geometric_metadata.csv").unlink()
        os.mkfifo(meta / "Task_Geometric_metadata.csv")
        with pytest.raises(ManifestError, match="not a regular file"):
            load_suite(str(root))


def test_a_dotenv_copied_in_as_a_metadata_csv_is_not_echoed(tmp_path, rows):
    root = _converted(tmp_path, rows)
    (root / "metadata" / "Task_Color_Var1_metadata.csv").write_text(
        f"OPENAI_API_KEY={SECRET}\nHOME=/root\n")
    with pytest.raises(ManifestError) as exc:
        load_suite(str(root))
    text = _line(exc)
    assert "'id' is missing" in text and SECRET not in text and "OPENAI" not in text


def test_a_ground_truth_linked_out_of_the_dataset_is_refused(tmp_path, rows):
    root = _converted(tmp_path, rows)
    gt = root / "data" / "Task_Color_Var1" / "id_1.png"
    outside = tmp_path / "outside.png"
    shutil.move(gt, outside)
    gt.symlink_to(outside)
    with pytest.raises(ManifestError, match="outside") as exc:
        load_suite(str(root))
    assert str(gt) in _line(exc)


# ------------------------------------------------------------------ what reaches the terminal
def test_file_names_and_header_cells_with_escape_codes_are_shown_escaped(tmp_path, rows):
    root = _converted(tmp_path, rows)
    meta = root / "metadata"
    evil = meta / "Task_Color_Var1_metadata\x1b[2J\x1b[32mALL PASSED.csv"
    os.rename(meta / "Task_Color_Var1_metadata.csv", evil)
    evil.write_text("i\x1b[2Jd,prompt\n1,x\n")
    with pytest.raises(ManifestError) as exc:
        load_suite(str(root))
    text = _line(exc)
    assert "\\x1b[2J" in text and "'id' is missing" in text


def test_an_eight_mebibyte_id_cell_makes_a_short_line(tmp_path, rows):
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows)
    od.write_metadata(tmp_path / "p" / "metadata", rows)
    table = pq.read_table(str(path))
    ids = table.column("id").to_pylist()
    ids[2] = "id_" + "\x1b[2J7" * (2 << 20)  # 8 MiB with an escape code every 4 bytes
    table = table.set_column(table.schema.get_field_index("id"), "id", pa.array(ids, pa.string()))
    pq.write_table(table, str(path))
    with pytest.raises(ManifestError) as exc:
        load_suite(str(path))
    text = _line(exc)
    assert len(text) < 1000 and "row 2" in text and "'id'" in text
    csv_path = tmp_path / "p" / "metadata" / "Task_Color_Var2_metadata.csv"
    csv_path.write_text("id,prompt\n" + "7" * (8 << 20) + "x,a prompt\n")  # the CSV's own cap
    with pytest.raises(ManifestError) as exc:
        load_suite(str(tmp_path / "p" / "metadata" / ".." / "violin-test.parquet"))
    assert len(_line(exc)) < 1000


# ------------------------------------------------------------------ one id, one sample
@pytest.mark.parametrize("twin", ["id_05.png", "id_5.jpg", "id_5.PNG", "id_000005.webp"])
def test_two_ground_truths_of_one_id_are_refused_naming_both(tmp_path, rows, twin):
    root = _converted(tmp_path, rows)
    folder = root / "data" / "Task_Geometric"
    first = sorted(folder.iterdir())[0]
    number = int(first.stem.split("_")[1])
    twin = twin.replace("5", str(number))
    shutil.copy(first, folder / twin)
    with pytest.raises(ManifestError) as exc:
        load_suite(str(root))
    text = _line(exc)
    assert str(first) in text and str(folder / twin) in text and "two ground truths" in text


def test_one_id_in_two_parquet_files_is_refused_naming_both(tmp_path, rows):
    folder = tmp_path / "clone"
    od.write_parquet(folder / "part-0.parquet", rows[:5])
    od.write_parquet(folder / "part-1.parquet", [rows[0]])  # id_1 of color/v1 again
    od.write_metadata(folder / "metadata", rows)
    with pytest.raises(ManifestError) as exc:
        load_suite(str(folder))
    text = _line(exc)
    assert "part-0.parquet row 0" in text and "part-1.parquet row 0" in text


def test_an_empty_hub_ref_with_two_cached_revisions_is_refused_offline(tmp_path, rows,
                                                                      monkeypatch):
    pytest.importorskip("huggingface_hub")
    parquet = od.write_parquet(tmp_path / "src" / "violin-test.parquet", rows)
    meta = od.write_metadata(tmp_path / "src" / "metadata", rows)
    cache = tmp_path / "hub"
    first = od.write_hub_cache(cache, "Perkzi/VIOLIN", parquet, meta, commit="a" * 40)
    od.write_hub_cache(cache, "Perkzi/VIOLIN", parquet, meta, commit="b" * 40)
    ref = cache / "datasets--Perkzi--VIOLIN" / "refs" / "main"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for said in ("", "../../.."):
        ref.write_text(said)
        with pytest.raises(SuiteError) as exc:
            load_suite("hf:Perkzi/VIOLIN")
        text = _line(exc)
        assert "aaaaaaaaaaaa" in text and "bbbbbbbbbbbb" in text and "@<commit>" in text
    ref.write_text(first)
    assert load_suite("hf:Perkzi/VIOLIN").dataset["revision"] == first
    assert load_suite(f"hf:Perkzi/VIOLIN@{'b' * 40}").dataset["revision"] == "b" * 40


# ------------------------------------------------------------------ decoded bytes, not encoded
def _noise_png(side: int) -> bytes:
    y, x = np.mgrid[0:side, 0:side]
    img = ((x * 7919 + y * 104729 + (x * y) % 251) % 256).astype(np.uint8)
    return od.png(np.dstack([img, img[::-1], img.T]))


def _bomb(path, n: int, *, gt: bytes, prompt: str | None = None):
    """``n`` color var-1 rows whose cells repeat one value: a dictionary page holds it once."""
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    cols = {"task": pa.array([1] * n, pa.int64()),
            "id": pa.array([f"id_{i + 1}" for i in range(n)], pa.string()),
            "ground_truth": pa.array([{"bytes": gt, "path": None}] * n, image)}
    if prompt is not None:
        cols["prompt"] = pa.array([prompt] * n, pa.string())
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(cols), str(path), dictionary_pagesize_limit=64 << 20,
                   compression="zstd")
    return path


def _cache_bytes(tmp_path) -> int:
    return sum(p.stat().st_size for p in (tmp_path / "official-cache").rglob("*") if p.is_file())


def test_a_small_parquet_of_repeated_images_is_refused_by_its_decoded_size(tmp_path):
    from pytest_violin.suite.official import parquet as official_parquet

    gt = _noise_png(700)
    path = _bomb(tmp_path / "bomb" / "violin-test.parquet", 400, gt=gt,
                 prompt="Generate a solid image.")
    size = path.stat().st_size
    assert size < 2 * len(gt) and 400 * len(gt) > 100 * size  # the shape of the bomb
    with pytest.raises(ManifestError) as exc:
        load_suite(str(path))
    text = _line(exc)
    assert "decodes to over" in text and str(path) in text
    cap = official_parquet.MAX_EXPANSION * size + official_parquet.EXPANSION_SLACK
    assert _cache_bytes(tmp_path) <= cap + len(gt)  # the official cache holds at most the cap


def test_a_prompt_column_of_one_huge_repeated_prompt_is_refused_at_its_first_cell(tmp_path):
    from pytest_violin.suite.official.schema import MAX_PROMPT_CHARS

    path = _bomb(tmp_path / "p" / "violin-test.parquet", 200, gt=od.png(od.solid((1, 2, 3))),
                 prompt="Generate a solid image. " * 40000)
    assert path.stat().st_size < 200_000
    with pytest.raises(ManifestError) as exc:
        load_suite(str(path))
    text = _line(exc)
    assert "row 0" in text and "'prompt'" in text and f"{4 * MAX_PROMPT_CHARS:,}" in text
    assert not list((tmp_path / "official-cache").rglob("*.png"))  # refused before extracting


def test_a_metadata_prompt_over_the_limit_is_refused(tmp_path, rows):
    root = _converted(tmp_path, rows)
    (root / "metadata" / "Task_Color_Var1_metadata.csv").write_text(
        "id,prompt\n1," + "x" * 100_000 + "\n")
    with pytest.raises(ManifestError, match="100,000 characters") as exc:
        load_suite(str(root))
    _line(exc)


def test_each_decoded_cap_is_read_from_the_cells_not_the_footer(tmp_path, rows, monkeypatch):
    from pytest_violin.suite.official import parquet as official_parquet

    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows, row_group_size=4)
    od.write_metadata(tmp_path / "p" / "metadata", rows)
    table = pq.read_table(str(path))
    per_group = [sum(len(c["bytes"]) for c in table.column("ground_truth")[i:i + 4].to_pylist()
                     if c) for i in range(0, len(rows), 4)]
    assert len(load_suite(str(path))) == len(rows)
    monkeypatch.setenv("VIOLIN_OFFICIAL_CACHE", str(tmp_path / "cache-2"))
    monkeypatch.setattr(official_parquet, "MAX_COLUMN_DECODED",
                        {"image": sum(per_group) - 1, "text": 1 << 20})
    with pytest.raises(ManifestError, match="column 'ground_truth' decodes to over"):
        load_suite(str(path))
    monkeypatch.setattr(official_parquet, "MAX_COLUMN_DECODED", {"image": 1 << 40, "text": 1 << 20})
    monkeypatch.setattr(official_parquet, "MAX_ROW_GROUP_DECODED", max(per_group))
    with pytest.raises(ManifestError, match=r"row group \d decodes to over"):
        load_suite(str(path))  # the other image columns count too


# ------------------------------------------------------------------ the hash memo
def test_a_parquet_rewritten_with_its_size_and_mtime_restored_is_hashed_again(tmp_path, rows):
    path = tmp_path / "p" / "violin-test.parquet"
    od.write_parquet(path, rows, prompts_in_parquet=True)
    table = pq.read_table(str(path))
    pq.write_table(table, str(path), compression="NONE")
    od.write_metadata(tmp_path / "p" / "metadata", rows)
    before = load_suite(str(path))
    info = os.stat(path)
    data = path.read_bytes()
    assert data.count(b"Generate a solid") >= 1
    with open(path, "r+b") as fh:  # in place: the same inode, the same size
        fh.write(data.replace(b"Generate a solid", b"GENERATE A SOLID"))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    after_info = os.stat(path)
    assert (after_info.st_size, after_info.st_mtime_ns) == (info.st_size, info.st_mtime_ns)
    after = load_suite(str(path))
    assert after.dataset["sha256"] != before.dataset["sha256"]
    assert any(s.prompt.startswith("GENERATE A SOLID") for s in after)


# ------------------------------------------------------------------ the file each error wanted
def test_a_missing_parquet_is_file_not_found(tmp_path):
    with pytest.raises(SuiteError) as exc:
        load_suite(str(tmp_path / "missing.parquet"))
    text = _line(exc)
    assert "file not found" in text and "unknown suite" not in text
    assert "missing.parquet" in text


def test_a_missing_metadata_csv_is_named_by_the_file_looked_for(tmp_path, rows):
    path = od.write_parquet(tmp_path / "p" / "violin-test.parquet", rows)
    meta = od.write_metadata(tmp_path / "p" / "metadata", rows)
    (meta / "Task_Image_Mask_inpainting_metadata.csv").unlink()
    with pytest.raises(ManifestError) as exc:
        load_suite(str(path))
    text = _line(exc)
    assert str(meta / "Task_Image_Mask_inpainting_metadata.csv") in text
    shutil.rmtree(meta)
    with pytest.raises(ManifestError) as exc:
        load_suite(str(path))
    text = _line(exc)
    assert "metadata/Task_Color_Var1_metadata.csv" in text and "None" not in text
    assert "--violin-metadata" in text


@pytest.mark.skipif(sys.platform == "win32", reason="file names with escape codes")
def test_the_boundary_makes_any_loader_message_printable(tmp_path, rows):
    folder = tmp_path / "data\x1b]0;pwned\x07set"
    path = od.write_parquet(folder / "violin-test.parquet", rows, drop=("ground_truth",))
    with pytest.raises(ManifestError) as exc:
        load_suite(str(path))
    assert "\\x1b]0;pwned\\x07" in _line(exc)
