"""``diffusers:...?device=auto``: one GPU per pytest-xdist worker, checked with a fake device list.

No GPU (nor torch) is needed: :func:`auto_device` is a pure function of the device count, and
the end-to-end tests put a fake ``torch`` and ``diffusers`` on the path whose CUDA devices are
``FAKE_GPUS`` (cut to ``CUDA_VISIBLE_DEVICES`` as the real driver does); the fake pipeline
writes down which worker moved it to which device.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from pytest_violin.errors import ModelSpecError
from pytest_violin.models._devices import auto_device, xdist_worker


def test_single_process_takes_the_first_gpu_or_the_cpu():
    assert auto_device(cuda_count=0) == ("cpu", ["device=auto: no CUDA device visible; every process "
                                                 "generates on the cpu"])
    device, lines = auto_device(cuda_count=2, visible="5,7")
    assert device == "cuda:0" and "CUDA_VISIBLE_DEVICES entry '5'" in lines[0]


def test_worker_k_takes_gpu_k():
    for k in range(4):
        device, lines = auto_device(cuda_count=4, worker=k, workers=4)
        assert device == f"cuda:{k}"
    assert lines == [f"device=auto: gw{k} -> cuda:{k}" for k in range(4)]
    # the controller (no worker number) sees the whole assignment
    assert auto_device(cuda_count=4, workers=2)[1] == ["device=auto: gw0 -> cuda:0", "device=auto: gw1 -> cuda:1"]


def test_more_workers_than_gpus_are_refused_unless_asked():
    with pytest.raises(ModelSpecError) as info:
        auto_device(cuda_count=2, worker=0, workers=3, visible="2,3")
    text = str(info.value)
    assert "3 xdist workers" in text and "2 CUDA device(s)" in text and "'2,3'" in text
    assert "-n 2 or fewer" in text and "oversubscribe=1" in text
    assert [auto_device(cuda_count=2, worker=k, workers=5, oversubscribe=True)[0] for k in range(5)] == \
        ["cuda:0", "cuda:1", "cuda:0", "cuda:1", "cuda:0"]
    # no GPU at all: every worker on the cpu, nothing to oversubscribe
    assert auto_device(cuda_count=0, worker=3, workers=8)[0] == "cpu"


def test_the_worker_comes_from_the_plugin_or_from_xdist_variables(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    assert xdist_worker(SimpleNamespace(extra={})) == (None, None)
    assert xdist_worker(SimpleNamespace(extra={"xdist": ("gw2", 4)})) == (2, 4)
    assert xdist_worker(SimpleNamespace(extra={"xdist": (None, 3)})) == (None, 3)
    # the plugin's word wins over variables inherited from an outer xdist run
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw5")
    assert xdist_worker(SimpleNamespace(extra={"xdist": None})) == (None, None)
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    assert xdist_worker(SimpleNamespace(extra={})) == (1, 2)


FAKE_TORCH = '''
import contextlib
import os


def _count():
    count = int(os.environ.get("FAKE_GPUS", "0"))
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:  # as the driver: only the listed devices, renumbered from 0
        count = len([e for e in visible.split(",") if e.strip() and int(e) < count])
    return count


class device:
    def __init__(self, spec):
        kind, _, index = str(spec).partition(":")
        if kind not in ("cpu", "cuda", "mps", "meta"):
            raise RuntimeError(f"bad device {spec}")
        self.type, self.index = kind, int(index) if index else None

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


class cuda:
    is_available = staticmethod(lambda: _count() > 0)
    device_count = staticmethod(_count)
    empty_cache = staticmethod(lambda: None)
    device = staticmethod(lambda d: contextlib.nullcontext())


class backends:
    pass


class Generator:
    def __init__(self, device="cpu"):
        self.device = device

    def manual_seed(self, seed):
        self.seed = seed
        return self
'''

FAKE_DIFFUSERS = '''
import os
from types import SimpleNamespace

import numpy as np


class Pipe:
    def to(self, device):
        with open(os.environ["FAKE_PLACEMENTS"], "a") as fh:
            fh.write(f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')} {device}\\n")
        return self

    def __call__(self, prompt, width=64, height=64, generator=None, num_inference_steps=1):
        return SimpleNamespace(images=[np.zeros((height, width, 3), np.uint8)])


class DiffusionPipeline:
    @classmethod
    def from_pretrained(cls, source, **kwargs):
        return Pipe()


class AutoPipelineForText2Image:
    from_pipe = staticmethod(lambda pipe: pipe)


class _Unlinked:
    @staticmethod
    def from_pipe(pipe):
        raise ValueError("no linked pipeline")


AutoPipelineForImage2Image = AutoPipelineForInpainting = _Unlinked
'''


@pytest.fixture
def fake_gpus(pytester, monkeypatch):
    pytester.makepyfile(torch=FAKE_TORCH, diffusers=FAKE_DIFFUSERS)
    (pytester.path / "pipe").mkdir()
    placements = pytester.path / "placements.txt"
    monkeypatch.setenv("FAKE_PLACEMENTS", str(placements))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pytester.path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT"):  # this test's own worker's
        monkeypatch.delenv(name, raising=False)
    pytester.syspathinsert()

    def placed():
        lines = placements.read_text().split("\n") if placements.exists() else []
        placements.unlink(missing_ok=True)
        return sorted(line for line in lines if line)

    return pytester, placed


ARGS = ["--violin-limit=4", "--violin-tasks=color", "-p", "no:cacheprovider", "--violin-no-cache"]


@pytest.mark.slow  # whole sessions in processes: CI's e2e step
def test_each_xdist_worker_loads_onto_its_own_gpu(fake_gpus, monkeypatch):
    pytest.importorskip("xdist")
    pytester, placed = fake_gpus
    monkeypatch.setenv("FAKE_GPUS", "4")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")  # two of the four, renumbered cuda:0, cuda:1
    result = pytester.runpytest_subprocess("--violin-model=diffusers:pipe?device=auto", "-n", "2", *ARGS)
    assert result.ret in (0, 1), result.stderr.str()
    result.stdout.fnmatch_lines(["violin: device=auto: gw0 -> cuda:0 (CUDA_VISIBLE_DEVICES entry '3')",
                                 "violin: device=auto: gw1 -> cuda:1 (CUDA_VISIBLE_DEVICES entry '1')"])
    assert placed() == ["gw0 cuda:0", "gw1 cuda:1", "main cuda:0"]  # main: the controller's check


@pytest.mark.slow  # whole sessions in processes: CI's e2e step
def test_more_workers_than_gpus_is_a_usage_error_naming_both(fake_gpus, monkeypatch):
    pytest.importorskip("xdist")
    pytester, placed = fake_gpus
    monkeypatch.setenv("FAKE_GPUS", "2")
    result = pytester.runpytest_subprocess("--violin-model=diffusers:pipe?device=auto", "-n", "3", *ARGS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "3 xdist workers but 2 CUDA device(s)" in err and "oversubscribe=1" in err
    assert placed() == []  # refused before any worker loaded anything
    shared = pytester.runpytest_subprocess("--violin-model=diffusers:pipe?device=auto&oversubscribe=1",
                                           "-n", "3", *ARGS)
    assert shared.ret in (0, 1), shared.stderr.str()
    assert placed() == ["gw0 cuda:0", "gw1 cuda:1", "gw2 cuda:0", "main cuda:0"]
    shared.stdout.fnmatch_lines(["violin: device=auto: 3 workers share 2 GPU(s) (?oversubscribe=1)"])


@pytest.mark.slow  # whole sessions in processes: CI's e2e step
def test_single_process_auto_on_a_machine_without_gpu(fake_gpus, monkeypatch):
    pytester, placed = fake_gpus
    monkeypatch.setenv("FAKE_GPUS", "0")
    result = pytester.runpytest_subprocess("--violin-model=diffusers:pipe?device=auto", *ARGS)
    assert result.ret in (0, 1), result.stderr.str()
    result.stdout.fnmatch_lines(["violin: device=auto: no CUDA device visible; every process generates on the cpu"])
    assert placed() == ["main cpu"]
    bad = pytester.runpytest_subprocess("--violin-model=diffusers:pipe?device=auto&oversubscribe=maybe", *ARGS)
    assert bad.ret == pytest.ExitCode.USAGE_ERROR and "oversubscribe='maybe'" in bad.stderr.str()
