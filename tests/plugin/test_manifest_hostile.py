"""Hostile manifests: paths stay inside the folder, files are images.

A manifest folder is untrusted input (a suite downloaded or shared by
another team). A symlink ``expected/x.png -> /proc/self/environ`` must not
put the whole environment into the terminal and the JUnit XML: every
path resolves inside the manifest's folder, special and empty files are
refused, an expected image is checked from its header when the manifest
loads (format, size, limits), and every failure is one line naming the
manifest line, field and file, never the file's bytes.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import numpy as np
import pytest
from PIL import Image

from pytest_violin.errors import InvalidImageError, ManifestError
from pytest_violin.suite import export_samples, load_suite
from pytest_violin.suite.manifest import MAX_LINE_BYTES, MAX_SIDE

SECRET = "violin-planted-secret-4e1d92c7"
EXPECTED = "expected/probes/gravity/purple/control.png"


def _png(width: int, height: int, color=(10, 20, 30), *, text: str | None = None) -> bytes:
    img = Image.new("RGB", (width, height), color)
    buf = io.BytesIO()
    kw = {}
    if text is not None:
        from PIL import PngImagePlugin

        info = PngImagePlugin.PngInfo()
        info.add_text("Comment", text)
        kw["pnginfo"] = info
    img.save(buf, format="PNG", **kw)
    return buf.getvalue()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("exported")
    export_samples(load_suite("violin-probes", limit=4), out, progress=False)
    return out


@pytest.fixture
def suite(exported, tmp_path):
    """A fresh copy of a 4-sample export whose line 1 has ``expected`` = EXPECTED."""
    folder = tmp_path / "suite"
    for src in exported.rglob("*"):
        dst = folder / src.relative_to(exported)
        if src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(src.read_bytes())
    first = json.loads((folder / "manifest.jsonl").read_text().splitlines()[0])
    assert first["expected"] == EXPECTED
    return folder


def _refused(folder, field: str, *fragments, line: int = 1) -> str:
    with pytest.raises(ManifestError) as info:
        load_suite(folder)
    err = info.value
    msg = str(err)
    assert (err.line, err.field) == (line, field), msg
    assert f"manifest.jsonl:{line}" in msg and "\n" not in msg
    for fragment in fragments:
        assert fragment in msg, (fragment, msg)
    assert SECRET not in msg
    assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__)
    return msg


def _replace(path, make):
    path.unlink()
    make(path)


# ------------------------------------------------------------ paths and special files

def test_an_export_still_loads(suite):
    assert len(load_suite(suite)) == 4


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="needs /proc")
def test_symlink_to_proc_environ_is_refused(suite, monkeypatch):
    monkeypatch.setenv("VIOLIN_TEST_SECRET", SECRET)
    _replace(suite / EXPECTED, lambda p: p.symlink_to("/proc/self/environ"))
    _refused(suite, "expected", "outside the manifest folder", EXPECTED)


def test_symlink_to_an_image_outside_the_folder_is_refused(suite, tmp_path):
    outside = tmp_path / "outside.png"
    outside.write_bytes(_png(512, 512))
    _replace(suite / EXPECTED, lambda p: p.symlink_to(outside))
    _refused(suite, "expected", "outside the manifest folder", str(outside))


def test_symlinked_directory_leaving_the_folder_is_refused(suite, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (suite / "expected").rename(elsewhere)
    (suite / "expected").symlink_to(elsewhere, target_is_directory=True)
    _refused(suite, "expected", "outside the manifest folder")


def test_symlinks_inside_the_folder_are_followed(suite):
    target = suite / "expected" / "copy.png"
    target.write_bytes((suite / EXPECTED).read_bytes())
    _replace(suite / EXPECTED, lambda p: p.symlink_to(target))
    samples = load_suite(suite)
    assert samples[0].expected().shape == (512, 512, 3)


def test_a_folder_reached_through_a_symlink_loads(suite, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(suite, target_is_directory=True)
    assert len(load_suite(link)) == 4


def test_input_symlink_leaving_the_folder_names_the_inputs_field(tmp_path):
    from pytest_violin.suite import mask_sample

    keep = np.ones((16, 24), bool)
    keep[:, :5] = False
    sample = mask_sample(np.full((16, 24, 3), 90, np.uint8), keep, kind="outpaint")
    folder = tmp_path / "m"
    export_samples([sample], folder, progress=False)
    rec = json.loads((folder / "manifest.jsonl").read_text())
    outside = tmp_path / "outside.png"
    outside.write_bytes(_png(24, 16))
    _replace(folder / rec["inputs"][1], lambda p: p.symlink_to(outside))
    _refused(folder, "inputs", "outside the manifest folder")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_blocking(suite):
    _replace(suite / EXPECTED, os.mkfifo)
    done, box = threading.Event(), {}

    def load():
        try:
            load_suite(suite)[0].expected()
        except (ManifestError, InvalidImageError) as exc:
            box["error"] = exc
        done.set()

    threading.Thread(target=load, daemon=True).start()
    if not done.wait(10):
        os.close(os.open(suite / EXPECTED, os.O_WRONLY | os.O_NONBLOCK))   # unblock, then fail
        done.wait(10)
        pytest.fail("loading a manifest blocked on a FIFO")
    err = box["error"]
    assert isinstance(err, ManifestError) and (err.line, err.field) == (1, "expected")
    assert "is a FIFO" in str(err)


def test_a_directory_is_refused(suite):
    _replace(suite / EXPECTED, lambda p: p.mkdir())
    _refused(suite, "expected", "is a directory")


def test_an_empty_file_is_refused(suite):
    _replace(suite / EXPECTED, lambda p: p.write_bytes(b""))
    _refused(suite, "expected", "is empty (0 bytes)")


# ------------------------------------------------------------ bad expected images

@pytest.mark.parametrize("content", [
    f"TOKEN={SECRET}\nHOME=/root\n".encode() * 20,
    b"\x89PNG\r\n\x1a\n" + f"TOKEN={SECRET}".encode() * 10,
    b"\xff\xd8\xff" + f"TOKEN={SECRET}".encode() * 10,
], ids=["text", "png-signature", "jpeg-signature"])
def test_a_bad_expected_image_is_one_line_without_its_bytes(suite, content):
    (suite / EXPECTED).write_bytes(content)
    _refused(suite, "expected", "is not a usable image", str((suite / EXPECTED).resolve()))


def test_an_expected_image_of_another_size_is_refused(suite):
    (suite / EXPECTED).write_bytes(_png(64, 48))
    _refused(suite, "expected", "is 64x48, but the sample is 512x512")


def test_a_corrupt_image_body_fails_its_sample_in_one_line(suite):
    """A valid header over corrupt pixel data passes the load; decoding it is one line."""
    data = _png(512, 512, text=f"TOKEN={SECRET}")
    (suite / EXPECTED).write_bytes(data[: len(data) - 40])
    sample = load_suite(suite)[0]
    with pytest.raises(InvalidImageError) as info:
        sample.expected()
    msg = str(info.value)
    assert msg.startswith(f"sample {sample.id!r}: expected image ") and "\n" not in msg
    assert "is not a usable image" in msg and SECRET not in msg
    assert info.value.__cause__ is None and info.value.__suppress_context__


# ------------------------------------------------------------ dimensions and lines

def _hand_written(tmp_path, **fields):
    rec = {"id": "team/blue", "task": "color", "prompt": "A pure blue image.", "width": 64,
           "height": 64, "layout": "single",
           "spec": load_suite("violin", tasks=("color",), limit=1)[0].to_manifest()["spec"]}
    rec.update(fields)
    (tmp_path / "manifest.jsonl").write_text(json.dumps(rec) + "\n")
    return tmp_path


@pytest.mark.parametrize("field, value", [("width", 30000), ("height", 30000),
                                          ("width", MAX_SIDE + 1)])
def test_absurd_dimensions_are_refused_naming_value_and_range(tmp_path, field, value):
    folder = _hand_written(tmp_path, **{field: value})
    _refused(folder, field, f"{field} {value} is out of the accepted range 1..{MAX_SIDE}")


def test_the_largest_accepted_side_loads(tmp_path):
    folder = _hand_written(tmp_path, width=MAX_SIDE, height=8)
    assert load_suite(folder)[0].width == MAX_SIDE == 8192


def test_an_overlong_line_is_refused(tmp_path):
    folder = _hand_written(tmp_path, prompt="x" * (MAX_LINE_BYTES + 10))
    with pytest.raises(ManifestError, match=f"line longer than {MAX_LINE_BYTES} bytes") as info:
        load_suite(folder)
    assert info.value.line == 1


# ------------------------------------------------------------ end to end through pytest

MODELS = '''
import numpy as np

def black(request):
    return np.zeros((request.height, request.width, 3), np.uint8)
'''


def _copy_export(exported, folder):
    for src in exported.rglob("*"):
        if src.is_file():
            dst = folder / src.relative_to(exported)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(src.read_bytes())


def _artifacts(pytester, result) -> str:
    text = result.stdout.str() + result.stderr.str()
    for path in pytester.path.rglob("*.xml"):
        text += path.read_text(errors="replace")
    return text


def _expect_usage_error(pytester, result, *fragments):
    text = _artifacts(pytester, result)
    assert SECRET not in text
    assert "HOME=" not in text and "PATH=" not in text
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    for fragment in fragments:
        assert fragment in out, (fragment, out)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc/self/environ")
@pytest.mark.parametrize("model", [
    "oracle",
    # a second fresh process (the secret must be in its start-up environ): 3-4 s, in the slow step
    pytest.param("python:violin_models:black", marks=pytest.mark.slow),
])
def test_symlinked_environ_never_reaches_output_or_junit(pytester, exported, monkeypatch, model):
    folder = pytester.path / "suite"
    _copy_export(exported, folder)
    (folder / EXPECTED).unlink()
    (folder / EXPECTED).symlink_to("/proc/self/environ")
    pytester.makepyfile(violin_models=MODELS)
    monkeypatch.setenv("VIOLIN_TEST_SECRET", SECRET)   # in the child's /proc/self/environ
    result = pytester.runpytest_subprocess(
        f"--violin-suite={folder}", f"--violin-model={model}", "--junitxml=j.xml",
        "-p", "no:randomly", "-p", "no:cacheprovider", "-rA", "-l")
    _expect_usage_error(pytester, result, "manifest.jsonl:1", "'expected'",
                        "outside the manifest folder")


def test_a_secret_inside_a_bad_expected_file_never_reaches_output_or_junit(pytester, exported):
    folder = pytester.path / "suite"
    _copy_export(exported, folder)
    (folder / EXPECTED).write_bytes(f"TOKEN={SECRET}\nHOME=/root\nPATH=/bin\n".encode())
    pytester.makepyfile(violin_models=MODELS)
    # in process: the secret is in the file, not in the environment
    result = pytester.runpytest(
        f"--violin-suite={folder}", "--violin-model=python:violin_models:black",
        "--junitxml=j.xml", "-p", "no:randomly", "-p", "no:cacheprovider", "-rA", "-l")
    _expect_usage_error(pytester, result, "manifest.jsonl:1", "is not a usable image")


@pytest.mark.parametrize("model", ["oracle", "python:violin_models:black"])
def test_a_corrupt_expected_body_fails_its_sample_without_its_bytes(pytester, exported, model):
    """Header fine, pixels corrupt: the run starts, the sample fails on one line naming the file."""
    folder = pytester.path / "suite"
    _copy_export(exported, folder)
    data = _png(512, 512, text=f"TOKEN={SECRET}")
    (folder / EXPECTED).write_bytes(data[: len(data) - 40])
    pytester.makepyfile(violin_models=MODELS)
    result = pytester.runpytest(
        f"--violin-suite={folder}", f"--violin-model={model}", "--junitxml=j.xml",
        "-p", "no:randomly", "-p", "no:cacheprovider", "-rA", "-l")
    text = _artifacts(pytester, result)
    assert SECRET not in text
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.INTERNAL_ERROR), text
    assert "is not a usable image" in text and "control.png" in text
