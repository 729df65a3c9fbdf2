"""Failing ``violin::`` items carry their images into pytest-html and Allure reports.

A real run (in this process as pytester runs it, the plugins as installed; a
subprocess cost 10 s more) of a model that fails the
color and mask samples and passes the shape ones, with ``--html=... --self-contained-html``
and ``--alluredir``: the HTML report's data blob holds, for every failing item, the
expected, generated and difference images as embedded data URIs that decode to
images (and the source image and mask for the mask task), and no image for a
passing item; every failing Allure result lists the same attachments, each a
file in the results folder. Without ``--html`` / ``--alluredir`` the
attachments plugin is not registered at all.
"""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser

import numpy as np
import pytest

pytest.importorskip("pytest_html")
pytest.importorskip("allure_pytest")
cv2 = pytest.importorskip("cv2")

MODEL = '''
import numpy as np


def generate(request):
    """Shapes exactly right; colors and masks with noise (sigma 40): those fail."""
    image = request.sample.expected()
    if request.sample.task == "shape":
        return image
    rng = np.random.default_rng(request.seed)
    return np.clip(image + rng.normal(0.0, 40.0, image.shape), 0, 255).astype(np.uint8)
'''

CONFTEST = '''
def pytest_configure(config):
    print("attachments registered:", config.pluginmanager.has_plugin("violin-attachments"))
'''

IMAGES = ("expected", "generated", "difference |generated - expected|")


class _Blob(HTMLParser):
    """pytest-html 4 keeps its results in the ``data-jsonblob`` attribute of one element."""

    blob = None

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "data-jsonblob":
                self.blob = value


def _decode_data_uri(uri: str) -> np.ndarray:
    head, _, payload = uri.partition(",")
    assert head in ("data:image/png;base64", "data:image/jpeg;base64"), head[:40]
    image = cv2.imdecode(np.frombuffer(base64.b64decode(payload), np.uint8), cv2.IMREAD_COLOR)
    assert image is not None and image.ndim == 3
    return image


def _run(pytester, *args, inprocess=False):
    pytester.makepyfile(noisy_model=MODEL)
    pytester.makeconftest(CONFTEST)
    run = pytester.runpytest_inprocess if inprocess else pytester.runpytest_subprocess
    return run("-p", "no:cacheprovider", "-p", "no:randomly", "--violin-model=python:noisy_model:generate",
               "--violin-limit=6", "--violin-tasks=color,shape,mask", *args,
               **({} if inprocess else {"timeout": 300}))


def test_failing_items_embed_their_images_in_pytest_html_and_allure(pytester):
    result = _run(pytester, "--html=report.html", "--self-contained-html", "--alluredir=allure",
                  inprocess=True)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 2 and outcomes.get("passed", 0) >= 1, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["*attachments registered: True*"])

    parser = _Blob()
    parser.feed((pytester.path / "report.html").read_text(encoding="utf-8"))
    tests = json.loads(parser.blob)["tests"]
    violin = {tid: runs[-1] for tid, runs in tests.items() if tid.startswith("violin::")}
    failed = {tid: t for tid, t in violin.items() if t["result"] == "Failed"}
    passed = {tid: t for tid, t in violin.items() if t["result"] == "Passed"}
    assert failed and passed
    for tid, test in failed.items():
        extras = {e["name"]: e for e in test["extras"]}
        expect = (("source (input)", "mask (input)") if "::mask/" in tid else ()) + IMAGES
        assert tuple(extras) == expect, tid
        sizes = {name: _decode_data_uri(e["content"]).shape for name, e in extras.items()}
        assert sizes["expected"] == sizes["generated"] == sizes["difference |generated - expected|"]
    assert all(not t["extras"] for t in passed.values())

    results = [json.loads(p.read_text()) for p in (pytester.path / "allure").glob("*-result.json")]
    by_name = {r["name"]: r for r in results}
    for tid in failed:
        record = by_name[tid.split("::", 1)[1]]
        names = [a["name"] for a in record["attachments"]]
        assert names[-3:] == list(IMAGES), tid
        for att in record["attachments"]:
            data = (pytester.path / "allure" / att["source"]).read_bytes()
            assert cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR) is not None
            assert att["type"] in ("image/png", "image/jpg")
    for tid in passed:
        assert not by_name[tid.split("::", 1)[1]].get("attachments")


@pytest.mark.slow
def test_past_the_budget_a_failing_item_says_its_images_were_left_out(pytester):
    pytester.makepyfile(budget_plugin='''
import pytest

@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    plugin = config.pluginmanager.get_plugin("violin-attachments")
    plugin.budget = 1  # the first failing sample spends it
''')
    result = _run(pytester, "--html=report.html", "--self-contained-html", "-p", "budget_plugin")
    parser = _Blob()
    parser.feed((pytester.path / "report.html").read_text(encoding="utf-8"))
    failed = [runs[-1] for tid, runs in json.loads(parser.blob)["tests"].items()
              if tid.startswith("violin::") and runs[-1]["result"] == "Failed"]
    assert len(failed) >= 2, result.stdout.str()[-2000:]
    notes = [t for t in failed if [e["name"] for e in t["extras"]] == ["violin images"]]
    assert len(notes) == len(failed)  # nothing was attached: one byte is less than any image


def test_nothing_is_registered_without_an_active_report_plugin(pytester):
    # in this process: registration happens at configure time, as in a subprocess
    result = _run(pytester, "--collect-only", "-q", inprocess=True)
    result.stdout.fnmatch_lines(["*attachments registered: False*"])
    result = _run(pytester, "--collect-only", "-q", "--alluredir=allure", inprocess=True)
    result.stdout.fnmatch_lines(["*attachments registered: True*"])
