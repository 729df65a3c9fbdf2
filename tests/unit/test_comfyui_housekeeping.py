"""``comfyui:`` against a fake answering like ComfyUI 0.3.64: what a run leaves on the server,
what it learns from it before the first prompt, and when it stops.

* every prompt this run queued leaves the history when its sample ends, whatever the outcome
  (an image, an execution error, no image from the chosen node, a time-out whose interrupt
  lands late, a prompt lost or stopped by someone else, Ctrl-C);
* the image outputs come from the server's ``/object_info`` (``MaskPreview`` beside
  ``SaveImage`` is a usage error before any prompt), with the core classes and one warning
  when it cannot tell;
* a ``{mask}`` read through ``LoadImage``'s MASK output needs ``?mask=alpha``;
* a server without ``GET /queue`` works, with one warning;
* a workflow that fails at run time on every prompt stops the run early, nothing scored,
  nothing left in the history.
"""

from __future__ import annotations

import json
import re
import threading

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import numpy as np
import pytest
import requests  # noqa: F401  same reason

from _comfyui_fake import FakeComfyUI, quick_polls  # noqa: F401  the fixture applies here
from pytest_violin.errors import (GenerationCancelled, GenerationUnjudged, ModelSpecError, ServerCrashed,
                                  SetupError, ViolinWarning)
from pytest_violin.models.registry import AdapterOptions, resolve_model
from pytest_violin.models.request import GenerationRequest
from pytest_violin.suite import load_suite
from test_comfyui_adapter import EDIT_WORKFLOW, TEXT_WORKFLOW, _run, _run_in_thread

#: The mask workflow that passed 300 of 300 samples on the real server, with a MaskPreview beside it.
MASK_WORKFLOW = {
    "1": {"class_type": "LoadImage", "inputs": {"image": "{image}"}},
    "2": {"class_type": "LoadImage", "inputs": {"image": "{mask}"}},
    "3": {"class_type": "ImageToMask", "inputs": {"image": ["2", 0], "channel": "red"}},
    "4": {"class_type": "InvertMask", "inputs": {"mask": ["3", 0]}},
    "5": {"class_type": "ImageCompositeMasked", "inputs": {
        "destination": ["1", 0], "source": ["1", 0], "x": 0, "y": 0, "resize_source": False, "mask": ["4", 0]}},
    "6": {"class_type": "SaveImage", "inputs": {"images": ["5", 0], "filename_prefix": "violin_{sample_id}"}},
    "7": {"class_type": "CLIPTextEncode", "inputs": {"text": "{prompt}", "clip": ["1", 0]}},
}


@pytest.fixture(scope="module")
def samples():
    return {s.id: s for s in load_suite("violin", tasks=["color", "mask"], limit=12)}


def _adapter(tmp_path, fake, workflow=TEXT_WORKFLOW, query="", **kw):
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(workflow))
    kw.setdefault("timeout", 10.0)
    return resolve_model(f"comfyui:{fake.url}{query}",
                         AdapterOptions(rootdir=tmp_path, extra={"workflow": str(path)}, **kw))


def _pick(samples, task, n=0):
    return [s for s in samples.values() if s.task == task][n]


# -- nothing left in the history -------------------------------------------------------------
@pytest.mark.parametrize("kind, raised", [
    ("fail", ServerCrashed), ("vanish", GenerationUnjudged), ("interrupt", GenerationUnjudged),
    pytest.param("queued", GenerationUnjudged, marks=pytest.mark.slow)])  # slow: 5 s to the wait limit
def test_a_failing_prompt_leaves_no_history_entry(tmp_path, samples, kind, raised):
    sample = _pick(samples, "color")
    with FakeComfyUI(samples, {sample.id: kind}) as fake:
        # queued forever: a 0.5 s timeout (a 5 s wait limit), so the history calls after it keep
        # time to spare on a loaded machine
        adapter = _adapter(tmp_path, fake, timeout=0.5 if kind == "queued" else 10.0)
        with pytest.raises(raised):
            _run(adapter, sample)
        pid = next(iter(fake.prompts))
        assert fake.history == {} and pid in fake.history_deleted
        assert adapter.ledger.pending() == set()


def test_no_image_from_the_chosen_node_leaves_no_history_entry(tmp_path, samples):
    with FakeComfyUI(samples) as fake:
        adapter = _adapter(tmp_path, fake, query="?output=4")  # the checkpoint loader shows no image
        with pytest.raises(SetupError, match="output node 4 produced no image"):
            _run(adapter, _pick(samples, "color"))
        assert len(fake.prompts) == 1 and fake.history == {}


def test_a_timed_out_prompt_is_deleted_once_its_interrupt_lands(tmp_path, samples):
    # on a CPU server the interrupt lands at the next sampler step: the entry appears later
    sample = _pick(samples, "color")
    with FakeComfyUI(samples, {sample.id: "hang"}, interrupt_seconds=0.5) as fake:
        adapter = _adapter(tmp_path, fake, timeout=0.2)
        with pytest.raises(GenerationUnjudged, match="timed out"):
            _run(adapter, sample)
        pid = next(iter(fake.prompts))
        assert fake.interrupted == [pid] and fake.running is None
        assert fake.history == {} and pid in fake.history_deleted


def test_a_prompt_still_running_after_its_samples_end_is_deleted_by_a_later_one_or_the_run_end(
        tmp_path, samples, monkeypatch):
    from pytest_violin.models.comfyui import adapter as comfyui_adapter

    monkeypatch.setattr(comfyui_adapter, "FORGET_DEADLINE", 0.0)  # the sample's end does not wait
    slow, quick = _pick(samples, "color", 0), _pick(samples, "color", 1)
    # the interrupt lands when the test says so, after the check that the entry is still to come
    lands = threading.Event()
    with FakeComfyUI(samples, {slow.id: "hang"}, interrupt_lands=lands) as fake:
        adapter = _adapter(tmp_path, fake, timeout=0.2)
        with pytest.raises(GenerationUnjudged, match="timed out"):
            adapter.generate(GenerationRequest.from_sample(slow))
        first = next(iter(fake.prompts))
        assert adapter.ledger.pending() == {first}  # still running: no entry to delete yet
        lands.set()
        for _ in range(1000):  # the interrupt lands: the entry exists
            if first in fake.history:
                break
            threading.Event().wait(0.02)
        _run(adapter, quick)  # the next sample's end deletes it too
        assert fake.history == {} and adapter.ledger.pending() == set()


def test_ctrl_c_leaves_nothing_once_the_adapter_closes(tmp_path, samples, monkeypatch):
    # the cancel and the run's end wait on the server's answers; their deadlines (seconds, the
    # product's bound for a dead server) are lifted so a loaded machine cannot outrun them here
    from pytest_violin.models.comfyui import _server, adapter as adapter_module

    monkeypatch.setattr(adapter_module, "CANCEL_DEADLINE", 60.0)
    monkeypatch.setattr(adapter_module, "FORGET_DEADLINE", 60.0)
    monkeypatch.setattr(_server, "CLOSE_DEADLINE", 60.0)
    sample = _pick(samples, "color")
    cancel = threading.Event()
    with FakeComfyUI(samples, {sample.id: "hang"}, interrupt_seconds=0.5) as fake:
        adapter = _adapter(tmp_path, fake, cancel=cancel)
        worker, raised = _run_in_thread(adapter, sample)
        for _ in range(500):
            if fake.running:
                break
            threading.Event().wait(0.02)
        cancel.set()
        worker.join(10)
        assert isinstance(raised[0], GenerationCancelled)
        adapter.close()  # the run's end waits (bounded) for the interrupt to land
        pid = next(iter(fake.prompts))
        assert fake.history == {} and pid in fake.history_deleted and fake.running is None


def test_history_keep_leaves_the_entries(tmp_path, samples):
    with FakeComfyUI(samples, {_pick(samples, "color").id: "fail"}) as fake:
        adapter = _adapter(tmp_path, fake, query="?history=keep")
        with pytest.raises(ServerCrashed):
            _run(adapter, _pick(samples, "color"))
        _run(adapter, _pick(samples, "color", 1))
        adapter.close()
        assert len(fake.history) == 2 and fake.history_deleted == []


# -- image outputs from the server's own node list --------------------------------------------
def test_save_image_beside_mask_preview_is_a_usage_error_before_any_prompt(tmp_path, samples, pytester):
    workflow = {**MASK_WORKFLOW, "8": {"class_type": "MaskPreview", "inputs": {"mask": ["4", 0]}}}
    with FakeComfyUI(samples) as fake:
        with pytest.raises(ModelSpecError, match=r"2 image outputs: 6 \(SaveImage\), 8 \(MaskPreview\)"):
            _adapter(tmp_path, fake, workflow)
        assert any(path == "/object_info/MaskPreview" for _, path in fake.requests)
        sample = _pick(samples, "mask")
        adapter = _adapter(tmp_path, fake, workflow, query="?output=6")
        assert _run(adapter, sample).shape == sample.expected().shape
        pytester.makefile(".json", workflow=json.dumps(workflow))
        result = pytester.runpytest(f"--violin-model=comfyui:{fake.url}", "--violin-workflow=workflow.json",
                                    "--violin-tasks=mask", "--violin-limit=2", "-p", "no:cacheprovider")
        assert len(fake.queued) == 1  # the one of the adapter above; the run sent none
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "MaskPreview" in result.stderr.str()


def test_a_server_without_a_node_list_leaves_the_core_classes_with_one_warning(tmp_path, samples):
    workflow = {**MASK_WORKFLOW, "8": {"class_type": "MaskPreview", "inputs": {"mask": ["4", 0]}}}
    with FakeComfyUI(samples, missing=("/object_info",)) as fake:
        with pytest.warns(ViolinWarning, match=r"node list could not be read \(GET /object_info/\w+ answered "
                                               r"HTTP 404\).*core ones") as caught:
            with pytest.raises(ModelSpecError, match="2 image outputs"):  # MaskPreview is a core one
                _adapter(tmp_path, fake, workflow)
        assert len(caught) == 1
        with pytest.warns(ViolinWarning):
            adapter = _adapter(tmp_path, fake, MASK_WORKFLOW)
        assert adapter.workflow.outputs == ["6"]


def test_a_custom_image_output_the_server_describes_is_counted(tmp_path, samples, monkeypatch):
    import _comfyui_fake

    custom = dict(_comfyui_fake.NODES["PreviewImage"], python_module="custom_nodes.fancy",
                  display_name="Fancy preview")
    monkeypatch.setitem(_comfyui_fake.NODES, "FancyPreview", custom)
    monkeypatch.setitem(_comfyui_fake.NODES, "PreviewText", _comfyui_fake.NODES["PreviewAny"])
    workflow = {**TEXT_WORKFLOW, "20": {"class_type": "FancyPreview", "inputs": {"images": ["8", 0]}},
                "21": {"class_type": "PreviewText", "inputs": {"source": ["6", 0]}}}
    with FakeComfyUI(samples) as fake:
        with pytest.raises(ModelSpecError, match=r"2 image outputs: 9 \(SaveImage.*20 \(FancyPreview\)"):
            _adapter(tmp_path, fake, workflow)


# -- the mask's polarity -------------------------------------------------------------------------
def test_a_mask_read_through_load_images_mask_output_needs_mask_alpha(tmp_path, samples):
    workflow = json.loads(json.dumps(MASK_WORKFLOW))
    del workflow["3"]
    workflow["4"]["inputs"]["mask"] = ["2", 1]  # LoadImage's MASK output: 1 - alpha
    with FakeComfyUI(samples) as fake:
        with pytest.raises(ModelSpecError, match=r"MASK output of LoadImage node 2.*mask=rgb.*\?mask=alpha"):
            _adapter(tmp_path, fake, workflow)
        sample = _pick(samples, "mask")
        assert _run(_adapter(tmp_path, fake, workflow, query="?mask=alpha"), sample).shape == \
            sample.expected().shape
        # its IMAGE output (through ImageToMask) reads an RGB upload: no complaint
        assert _adapter(tmp_path, fake, MASK_WORKFLOW).workflow.masks_read_from_alpha() == []


# -- a server without GET /queue ------------------------------------------------------------------
def test_a_server_without_get_queue_works_with_one_warning(tmp_path, samples):
    picked = [_pick(samples, "color", n) for n in range(3)]
    with FakeComfyUI(samples, missing=("/queue",), job_seconds=0.3) as fake:  # polled while it runs
        adapter = _adapter(tmp_path, fake)
        images = [_run(adapter, s) for s in picked]
        assert all(isinstance(image, np.ndarray) for image in images)
        notices = adapter.take_notices()
        assert len(notices) == 1 and "has no GET /queue (HTTP 404)" in notices[0]
        assert adapter.take_notices() == []  # said once
        assert fake.history == {}
        assert sum(1 for method, path in fake.requests if path == "/queue") == 1  # asked once


def test_the_missing_queue_is_one_warning_in_pytests_summary(pytester, samples):
    workflow = json.loads(json.dumps(MASK_WORKFLOW))
    with FakeComfyUI(samples, missing=("/queue",), job_seconds=0.25) as fake:
        pytester.makefile(".json", workflow=json.dumps(workflow))
        result = pytester.runpytest(f"--violin-model=comfyui:{fake.url}", "--violin-workflow=workflow.json",
                                    "--violin-tasks=mask", "--violin-limit=4", "--violin-no-cache",
                                    "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, warnings=1)
    assert result.stdout.str().count("has no GET /queue (HTTP 404)") == 1


def test_without_get_queue_a_hung_prompt_times_out_from_its_submit(tmp_path, samples):
    sample = _pick(samples, "color")
    with FakeComfyUI(samples, {sample.id: "hang"}, missing=("/queue",)) as fake:
        adapter = _adapter(tmp_path, fake, timeout=0.2)
        with pytest.raises(GenerationUnjudged, match="within 0.4 s of running"):
            _run(adapter, sample)
        assert len(adapter.take_notices()) == 1
        adapter.close()
        assert fake.deleted == list(fake.prompts)


# -- a workflow failing at run time on every prompt ------------------------------------------------
def test_a_workflow_failing_at_run_time_on_every_prompt_stops_early(pytester, samples, monkeypatch):
    # the run's end waits on the server's answers to clean the history; its deadlines (seconds, the
    # product's bound for a dead server) are lifted so a loaded machine cannot outrun them here
    from pytest_violin.models.comfyui import _server, adapter as adapter_module

    monkeypatch.setattr(adapter_module, "CANCEL_DEADLINE", 60.0)
    monkeypatch.setattr(_server, "FORGET_DEADLINE", 60.0)
    monkeypatch.setattr(_server, "CLOSE_DEADLINE", 60.0)
    with FakeComfyUI(samples, default="fail") as fake:
        pytester.makefile(".json", workflow=json.dumps(EDIT_WORKFLOW))
        result = pytester.runpytest(f"--violin-model=comfyui:{fake.url}", "--violin-workflow=workflow.json",
                                    "--violin-tasks=mask", "--violin-no-cache", "-p", "no:cacheprovider",
                                    "--violin-report=rep", "--violin-concurrency=4")
        prompts = sum(1 for method, path in fake.requests if path == "/prompt")
        left = dict(fake.history)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert re.search(r"Interrupted: violin: the same error in the first 5 samples, before any image: ComfyUI "
                     r"prompt error: node 3 \(KSampler\): torch\.OutOfMemoryError: ", out), out[-2000:]
    outcomes = result.parseoutcomes()
    assert "passed" not in outcomes and "failed" not in outcomes
    assert prompts <= 10 and left == {}
    meta = json.loads((pytester.path / "rep" / "results.json").read_text())
    assert all(r["outcome"] == "error" and not r.get("metrics") for r in meta["samples"])
    summary = (pytester.path / "rep" / "summary.md").read_text()
    assert re.search(r"\d+ samples · 0 passed · 0 failed · \d+ errors \(not judged", summary), summary[:400]


def test_generations_count_only_requests_that_reached_the_server(pytester, samples):
    # an {image} workflow on colour samples: refused before any request
    with FakeComfyUI(samples) as fake:
        pytester.makefile(".json", workflow=json.dumps(EDIT_WORKFLOW))
        result = pytester.runpytest(f"--violin-model=comfyui:{fake.url}", "--violin-workflow=workflow.json",
                                    "--violin-tasks=color", "--violin-no-cache", "-p", "no:cacheprovider",
                                    "--violin-report=rep")
        assert fake.queued == [] and fake.uploads == {}
    assert result.ret == pytest.ExitCode.INTERRUPTED
    meta = json.loads((pytester.path / "rep" / "results.json").read_text())["metadata"]
    assert meta["generations"] == 0, meta
    assert not re.search(r"[1-9]\d* generations made", result.stdout.str() + (pytester.path / "rep" /
                                                                              "summary.md").read_text())
