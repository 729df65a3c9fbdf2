"""No ``ast.parse`` runs in a generation thread (CPython 3.11.0-3.11.7, gh-106905).

Those Pythons share the AST constructor's recursion counter between threads:
a lazy import that parses source in a generation thread, while pytest parses
source in the main thread to show a failure, ends in an INTERNALERROR. The
runner imports what generation needs in the main thread first.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CONFTEST = '''
import ast, threading

_parse = ast.parse


def parse(*args, **kwargs):
    if threading.current_thread() is not threading.main_thread():
        import traceback
        with open("off-main-parse.txt", "a") as fh:
            fh.write(threading.current_thread().name + "\\\\n" + "".join(traceback.format_stack(limit=12)) + "\\\\n")
    return _parse(*args, **kwargs)


ast.parse = parse
'''

MODEL = '''
import numpy as np


def noisy(request):
    img = request.sample.expected().astype(np.int16)
    noise = np.random.default_rng(request.seed).integers(-60, 60, img.shape)
    return np.clip(img + noise, 0, 255).astype(np.uint8)
'''


@pytest.mark.slow  # a fresh pytest process over 12 samples: seconds
def test_generation_threads_parse_no_source(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "noisy_model.py").write_text(MODEL)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--violin-model=python:noisy_model:noisy",
         "--violin-suite=violin", "--violin-limit=12", "--violin-concurrency=4"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]  # the noisy model fails
    assert "INTERNALERROR" not in result.stdout + result.stderr
    marker = tmp_path / "off-main-parse.txt"
    assert not marker.exists(), marker.read_text()[:4000]
