"""Files named by options are bounded: regular files only, a byte cap, a JSON depth cap.

One reader (:func:`pytest_violin._fs.read_option_file` / ``read_option_json``)
serves the request template, the ComfyUI workflow, ``--violin-replicate-input``
and the baseline. A FIFO must not block (each such test runs under a guard
that fails instead of hanging), ``/dev/zero`` must not be read, a 3 GB sparse
file is refused by its size, and 100,000-deep JSON is refused with one line;
through pytest each refusal is a usage error (exit 4) naming the option, the
path and the limit. Option values echoed in messages are cut.
"""

from __future__ import annotations

import os
import threading

import pytest

from pytest_violin._fs import json_depth, read_option_bytes, read_option_file, read_option_json
from pytest_violin.errors import BaselineError, InvalidArgumentError

posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")

#: Seconds a read of a FIFO may take before the test calls it a hang.
GUARD_S = 20


def _guarded(fn, *args, **kwargs):
    """Run ``fn`` in a daemon thread; fail (not hang) when it does not return within GUARD_S."""
    done = threading.Event()
    box = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the test
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, daemon=True).start()
    assert done.wait(GUARD_S), f"{getattr(fn, '__name__', fn)} blocked for {GUARD_S} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


@pytest.fixture
def fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs FIFOs (POSIX)")
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


@pytest.fixture
def sparse(tmp_path):
    """A 3 GB file that costs no disk (a hole)."""
    path = tmp_path / "huge.json"
    with open(path, "wb") as fh:
        fh.truncate(3 * 2**30)
    return path


@pytest.fixture
def deep(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    return path


def _message(info) -> str:
    return str(info.value)


# --------------------------------------------------------------------------- the reader


def test_a_fifo_is_refused_without_blocking(fifo):
    with pytest.raises(InvalidArgumentError) as info:
        _guarded(read_option_file, fifo, what="--violin-x", limit=1000)
    assert "--violin-x" in _message(info) and str(fifo) in _message(info)
    assert "FIFO" in _message(info) and "1,000" in _message(info)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_dev_zero_is_refused_not_read():
    with pytest.raises(InvalidArgumentError) as info:
        _guarded(read_option_bytes, "/dev/zero", what="--violin-x", limit=1000)
    assert "/dev/zero" in _message(info) and "character device" in _message(info)


def test_a_directory_and_a_missing_file_are_refused(tmp_path):
    for path, word in ((tmp_path, "directory"), (tmp_path / "missing.json", "does not exist")):
        with pytest.raises(InvalidArgumentError, match=word):
            read_option_file(path, what="--violin-x", limit=10)


def test_a_3_gb_sparse_file_is_refused_by_its_size(sparse, monkeypatch):
    reads = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    with pytest.raises(InvalidArgumentError) as info:
        read_option_file(sparse, what="--violin-x", limit=4 * 2**20)
    assert "3,221,225,472 bytes" in _message(info) and "4,194,304" in _message(info)
    assert reads == []  # not a byte read


def test_at_most_limit_plus_one_bytes_are_read(tmp_path, monkeypatch):
    path = tmp_path / "grows.json"
    path.write_bytes(b"x" * 10)
    real_fstat = os.fstat

    class Shrunk:  # the size stat() reports before the file grew
        def __init__(self, st):
            self.st_mode, self.st_size = st.st_mode, 5

    monkeypatch.setattr(os, "fstat", lambda fd: Shrunk(real_fstat(fd)))
    reads = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    with pytest.raises(InvalidArgumentError, match="grew over the limit"):
        read_option_bytes(path, what="--violin-x", limit=5)
    assert sum(reads) <= 6


def test_a_file_within_the_limit_is_read_whole(tmp_path):
    path = tmp_path / "ok.json"
    path.write_text('\ufeff{"a": ["[", {"b": "}}"}]}', encoding="utf-8")
    assert read_option_json(path, what="--violin-x", limit=100) == {"a": ["[", {"b": "}}"}]}
    with pytest.raises(InvalidArgumentError, match="larger than the limit of 10 bytes"):
        read_option_file(path, what="--violin-x", limit=10)


def test_deep_json_is_refused_with_one_line(deep):
    with pytest.raises(InvalidArgumentError) as info:
        read_option_json(deep, what="--violin-x", limit=2**20)
    assert "100,000 levels" in _message(info) and "64" in _message(info)


def test_json_depth_ignores_brackets_in_strings():
    assert json_depth('{"a": "[[[[{{{{", "b": [1, {"c": "\\"]]]"}]}') == 3
    assert json_depth("[" * 65 + "]" * 65) == 65
    assert json_depth("42") == 0


def test_not_utf8_and_not_json_are_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe{")
    with pytest.raises(InvalidArgumentError, match="not UTF-8"):
        read_option_json(bad, what="--violin-x", limit=100)
    bad.write_text("{nope", encoding="utf-8")
    with pytest.raises(InvalidArgumentError, match=r"not valid JSON \(line 1"):
        read_option_json(bad, what="--violin-x", limit=100)


def test_the_error_type_is_the_callers(fifo):
    with pytest.raises(BaselineError):
        _guarded(read_option_file, fifo, what="baseline", limit=10, error=BaselineError)


# --------------------------------------------------------------------------- every option


def _run(pytester, *args, timeout=120):
    """A pytest run in a subprocess with a time limit: a read that blocks fails the test."""
    return pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider", timeout=timeout)


OPTION_CASES = [
    # (option, extra args, limit text in the message)
    ("--violin-baseline", ["--violin-model=oracle"], "67,108,864"),
    ("--violin-workflow", ["--violin-model=comfyui:http://127.0.0.1:9"], "4,194,304"),
    ("--violin-replicate-input", ["--violin-model=replicate:owner/name"], "4,194,304"),
    ("--violin-request-template", ["--violin-model=http://127.0.0.1:9/generate"], "4,194,304"),
]


@pytest.mark.slow  # two subprocess runs (a hang must not hang the test process): 5 s; the FIFO refusal itself is tested above
@posix_only
def test_a_fifo_baseline_or_workflow_is_a_usage_error_not_a_hang(pytester, fifo, monkeypatch):
    monkeypatch.setenv("REPLICATE_API_TOKEN", "r8_test")
    for option, extra in (("--violin-baseline", ["--violin-model=oracle"]),
                          ("--violin-workflow", ["--violin-model=comfyui:http://127.0.0.1:9"])):
        result = _run(pytester, f"{option}={fifo}", *extra, "--violin-limit=2")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stderr.str()[-2000:]
        err = result.stderr.str()
        assert option in err and str(fifo) in err and "FIFO" in err


@pytest.mark.parametrize("option, extra, limit_text", OPTION_CASES, ids=[c[0] for c in OPTION_CASES])
def test_oversized_and_deep_option_files_are_usage_errors(pytester, option, extra, limit_text,
                                                          sparse, deep, monkeypatch):
    monkeypatch.setenv("REPLICATE_API_TOKEN", "r8_test")
    for path, text in ((sparse, limit_text), (deep, "64")):
        result = pytester.runpytest(f"{option}={path}", *extra, "--violin-limit=2",
                                    "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        err = result.stderr.str()
        assert option in err and str(path) in err and text in err, err[-2000:]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("option, extra, limit_text", OPTION_CASES, ids=[c[0] for c in OPTION_CASES])
def test_dev_zero_as_an_option_file_is_a_usage_error(pytester, option, extra, limit_text, monkeypatch):
    monkeypatch.setenv("REPLICATE_API_TOKEN", "r8_test")
    result = pytester.runpytest(f"{option}=/dev/zero", *extra, "--violin-limit=2",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert option in err and "/dev/zero" in err, err[-2000:]


# --------------------------------------------------------------------------- echoed values


@pytest.mark.parametrize("args", [
    ["--violin-limit=" + "9" * 100_000],
    ["--violin-limit=" + "x" * 100_000],
    ["--violin-profile=" + "p" * 100_000],
    ["--violin-timeout=" + "t" * 100_000],
    ["--violin-threshold=" + "a" * 100_000],
    ["--violin-rate=" + "r" * 100_000],
    ["--violin-header=" + "H" * 100_000],
], ids=["limit-digits", "limit", "profile", "timeout", "threshold", "rate", "header"])
def test_a_100k_character_value_is_cut_in_the_message(pytester, args):
    result = pytester.runpytest("--violin-model=oracle", *args, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert len(err) < 5000, f"{len(err)} characters of error output"
    assert "--violin-" in err


def test_a_100k_character_ini_value_is_cut_too(pytester):
    pytester.makeini("[pytest]\nviolin_limit = " + "x" * 100_000 + "\n")
    result = pytester.runpytest("--violin-model=oracle", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert len(result.stderr.str()) < 5000


def test_a_100k_character_path_is_cut_in_the_settings_message(pytester):
    result = pytester.runpytest("--violin-model=http://127.0.0.1:9/g",
                                "--violin-request-template=" + "d" * 100_000,
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert len(result.stderr.str()) < 5000

