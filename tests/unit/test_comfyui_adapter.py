"""``comfyui:URL`` with ``--violin-workflow`` against a fake that answers like ComfyUI 0.3.64.

The fake (tests/_comfyui_fake.py) answers with bodies recorded from a real
ComfyUI server (see its docstring): validation errors with ``node_errors``,
``/queue``, ``/history/<id>``, one prompt running at a time.
"""

from __future__ import annotations

import io
import json
import re
import threading
from pathlib import Path

import hypothesis  # noqa: F401  imported once, before pytester snapshots sys.modules
import numpy as np
import pytest
import requests  # noqa: F401  same reason

from _comfyui_fake import TEXT_WORKFLOW, FakeComfyUI, quick_polls  # noqa: F401  the fixture applies here
from pytest_violin.errors import (GenerationCancelled, ServerCrashed, GenerationError, GenerationRefused,
                                  GenerationUnjudged, ModelSpecError, SetupError)
from pytest_violin.models.comfyui import Workflow
from pytest_violin.models.registry import AdapterOptions, resolve_model
from pytest_violin.models.request import GenerationRequest
from pytest_violin.suite import load_suite

TASKS = "color,shape,mask"
LIMIT = 20
PASSWORD = "cfy-e2e-plant-8e21b7d4c9"

EDIT_WORKFLOW = {
    **TEXT_WORKFLOW,
    "10": {"class_type": "LoadImage", "inputs": {"image": "{image}"}},
    "11": {"class_type": "LoadImage", "inputs": {"image": "{mask}"}},
}

TWO_OUTPUTS = {**TEXT_WORKFLOW, "12": {"class_type": "PreviewImage", "inputs": {"images": ["8", 0]},
                                       "_meta": {"title": "Preview"}}}


@pytest.fixture(scope="module")
def samples():
    return {s.id: s for s in load_suite("violin", tasks=TASKS.split(","), limit=LIMIT)}


def _adapter(tmp_path, fake, workflow=TEXT_WORKFLOW, query="", **kw):
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(workflow))
    kw.setdefault("timeout", 10.0)
    opts = AdapterOptions(rootdir=tmp_path, extra={"workflow": str(path)}, **kw)
    return resolve_model(f"comfyui:{fake.url}{query}", opts)


def _pick(samples, task, n=0):
    return [s for s in samples.values() if s.task == task][n]


def _run(adapter, sample):
    return adapter.generate(GenerationRequest.from_sample(sample))


def _run_in_thread(adapter, sample):
    """``_run`` in a started thread: ``(thread, raised)``, what it raised handed to the test."""
    raised = []

    def run():
        try:
            _run(adapter, sample)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            raised.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    return worker, raised


def test_edit_workflow_uploads_inputs_queues_polls_views_and_forgets(tmp_path, samples):
    with FakeComfyUI(samples) as fake:
        adapter = _adapter(tmp_path, fake, EDIT_WORKFLOW)
        sample = _pick(samples, "mask")
        image = _run(adapter, sample)
        assert image.shape == sample.expected().shape
        assert len(fake.uploads) == 2 and all(data.startswith(b"\x89PNG") for data in fake.uploads.values())
        sent = fake.queued[0]["prompt"]
        assert sent["6"]["inputs"]["text"] == sample.prompt
        assert isinstance(sent["3"]["inputs"]["seed"], int) and sent["5"]["inputs"]["width"] == sample.width
        assert {sent["10"]["inputs"]["image"], sent["11"]["inputs"]["image"]} == set(fake.uploads)
        assert fake.queued[0]["client_id"] == adapter.client_id
        assert fake.history_deleted == list(fake.prompts) and fake.history == {}


def test_alpha_mask_upload_carries_the_mask_in_alpha(tmp_path, samples):
    from PIL import Image

    with FakeComfyUI(samples) as fake:
        adapter = _adapter(tmp_path, fake, EDIT_WORKFLOW, query="?mask=alpha")
        sample = _pick(samples, "mask")
        _run(adapter, sample)
        name = fake.queued[0]["prompt"]["11"]["inputs"]["image"]
        rgba = np.asarray(Image.open(io.BytesIO(fake.uploads[name])))
        mask = GenerationRequest.from_sample(sample).images[1]
        assert rgba.shape[2] == 4
        # white = keep = opaque: LoadImage's MASK (1 - alpha) is 1 where the sample asks for a change
        np.testing.assert_array_equal(rgba[..., 3], mask.mean(axis=2).round().astype(np.uint8))
        assert "mask=alpha" in adapter.identity


def test_text_workflow_on_mask_samples_is_a_setup_error_naming_the_placeholders(tmp_path, samples):
    with FakeComfyUI(samples) as fake:
        adapter = _adapter(tmp_path, fake, TEXT_WORKFLOW)
        with pytest.raises(SetupError, match=r"2 input image.*no \{image\} and no \{mask\} placeholder"):
            _run(adapter, _pick(samples, "mask"))
        assert fake.queued == [] and fake.uploads == {}


def test_edit_workflow_on_a_sample_without_inputs_says_why(tmp_path, samples):
    with FakeComfyUI(samples) as fake:
        adapter = _adapter(tmp_path, fake, EDIT_WORKFLOW)
        with pytest.raises(SetupError, match=r"\{image\}.*text-to-image workflow"):
            _run(adapter, _pick(samples, "color"))
        assert fake.queued == []


def test_execution_error_is_a_crash_naming_the_node_its_class_and_the_exception(tmp_path, samples):
    # an exception inside a node (here CUDA out of memory) is the server's fault, not the image's
    fail = _pick(samples, "shape", 0)
    with FakeComfyUI(samples, {fail.id: "fail"}) as fake:
        adapter = _adapter(tmp_path, fake)
        with pytest.raises(ServerCrashed) as info:
            _run(adapter, fail)
        assert fake.history == {} and fake.history_deleted == list(fake.prompts)  # no entry left behind
    text = str(info.value)
    recorded = fake.prompts[next(iter(fake.prompts))]
    assert recorded["kind"] == "fail"
    # the node, its class, the exception's type and message, on one line
    assert "node 3 (KSampler): torch.OutOfMemoryError: CUDA out of memory" in text and "\n" not in text, text
    assert info.value.unjudged and not isinstance(info.value, GenerationRefused)


CKPT = "v1-5-pruned-emaonly.safetensors"


@pytest.mark.parametrize("change, needles", [
    ({"4": {"ckpt_name": CKPT}}, ["node 4 (CheckpointLoaderSimple) input ckpt_name", "Value not in list",
                                  f"'{CKPT}' not in ['model.safetensors']"]),
    ({"3": {"seed": "abc"}}, ["node 3 (KSampler) input seed", "Failed to convert an input value to a INT value"]),
    ({"5": {"width": None}}, ["node 5 (EmptyLatentImage) input width", "Required input is missing"]),
    ({"5": {"width": 10**6}}, ["node 5 (EmptyLatentImage) input width", "Value 1000000 bigger than max of 16384"]),
    ({"12": "LoadImage"}, ["node 12 (LoadImage) input image", "Invalid image file: absent.png"]),
])
def test_validation_errors_are_setup_errors_with_every_node_error(tmp_path, samples, change, needles):
    workflow = json.loads(json.dumps(TEXT_WORKFLOW))
    for node, inputs in change.items():
        if inputs == "LoadImage":
            workflow[node] = {"class_type": "LoadImage", "inputs": {"image": "absent.png"}}
            continue
        for name, value in inputs.items():
            if value is None:
                del workflow[node]["inputs"][name]
            else:
                workflow[node]["inputs"][name] = value
    with FakeComfyUI(samples) as fake:
        adapter = _adapter(tmp_path, fake, workflow)
        with pytest.raises(SetupError) as info:
            _run(adapter, _pick(samples, "color"))
    text = str(info.value)
    assert info.value.status == 400 and info.value.unjudged
    assert "Prompt outputs failed validation" in text and all(n in text for n in needles), text


def test_several_validation_errors_are_all_named(tmp_path, samples):
    workflow = json.loads(json.dumps(TEXT_WORKFLOW))
    workflow["4"]["inputs"]["ckpt_name"] = CKPT
    workflow["3"]["inputs"]["seed"] = "abc"
    with FakeComfyUI(samples) as fake:
        with pytest.raises(SetupError) as info:
            _run(_adapter(tmp_path, fake, workflow), _pick(samples, "color"))
    assert re.search(r"node 4 .*ckpt_name.*; node 3 .*seed", str(info.value))


def test_two_outputs_without_a_choice_is_a_usage_error_listing_them(tmp_path, samples, pytester):
    with FakeComfyUI(samples) as fake:
        with pytest.raises(ModelSpecError, match=r"2 image outputs: 9 \(SaveImage, title 'Save Image'\), "
                                                 r"12 \(PreviewImage, title 'Preview'\).*\?output=NODE_ID"):
            _adapter(tmp_path, fake, TWO_OUTPUTS)
        for query, node in (("?output=12", "12"), ("?output=Save%20Image", "9")):
            adapter = _adapter(tmp_path, fake, TWO_OUTPUTS, query=query)
            sample = _pick(samples, "color")
            assert _run(adapter, sample).shape == sample.expected().shape
            assert adapter.workflow.output == node and f"output={node}" in adapter.identity
        with pytest.raises(ModelSpecError, match="no node id or title.*9 \\(SaveImage"):
            _adapter(tmp_path, fake, TWO_OUTPUTS, query="?output=99")
    pytester.makefile(".json", workflow=json.dumps(TWO_OUTPUTS))
    result = pytester.runpytest("--violin-model=comfyui:http://127.0.0.1:9", "--violin-limit=1",
                                "--violin-workflow=workflow.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "2 image outputs" in result.stderr.str()


def test_images_from_several_or_no_nodes_at_run_time_are_setup_errors(tmp_path, samples):
    with FakeComfyUI(samples) as fake:
        adapter = _adapter(tmp_path, fake)
        image = {"filename": "a.png", "subfolder": "", "type": "output"}
        with pytest.raises(SetupError, match=r"images in 2 output nodes \(20, 9\).*\?output=NODE_ID"):
            adapter.pick_output({"outputs": {"9": {"images": [image]}, "20": {"images": [image]}}})
        with pytest.raises(SetupError, match="without an image output"):
            adapter.pick_output({"outputs": {"9": {"text": ["hello"]}}})
        no_output = {k: v for k, v in TEXT_WORKFLOW.items() if k != "9"}
        no_output["6"]["inputs"]["text"] = "{prompt}"
        with pytest.raises(SetupError, match="Prompt has no outputs"):
            _run(_adapter(tmp_path, fake, no_output), _pick(samples, "color"))


@pytest.mark.slow  # a queue longer than a budget: seconds
def test_a_slow_queue_does_not_spend_the_samples_budget(tmp_path, samples):
    # one prompt at a time, 0.4 s each, 10 or more at once: the last waits 3.6 s or more in the
    # queue, longer than the budget of 2 x 1.5 s, and still passes; its running part (0.4 s and
    # the image's download) keeps seconds to spare on a loaded machine
    picked = [s for s in samples.values() if s.task in ("color", "shape")][:12]
    assert len(picked) >= 10
    with FakeComfyUI(samples, job_seconds=0.4) as fake:
        adapter = _adapter(tmp_path, fake, timeout=1.5, concurrency=len(picked))
        results, threads = {}, []
        for sample in picked:
            def work(sample=sample):
                try:
                    results[sample.id] = _run(adapter, sample)
                except GenerationError as exc:
                    results[sample.id] = exc
            threads.append(threading.Thread(target=work))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    lost = [str(r) for r in results.values() if not isinstance(r, np.ndarray)]
    assert not lost, lost
    assert len(results) == len(picked) and max(p["number"] for p in fake.prompts.values()) == len(picked)


def test_a_prompt_running_past_its_budget_is_an_error_and_is_interrupted(tmp_path, samples):
    sample = _pick(samples, "color")
    with FakeComfyUI(samples, {sample.id: "hang"}) as fake:
        # a 1 s timeout, so the submit and the first polls keep time to spare on a loaded machine
        adapter = _adapter(tmp_path, fake, timeout=1.0)
        with pytest.raises(GenerationUnjudged, match=r"timed out: it did not finish within 2(\.0)? s of running"):
            _run(adapter, sample)
        assert fake.interrupt_seen.wait(5)
        assert fake.deleted == list(fake.prompts)


@pytest.mark.slow  # 5 s to the wait limit
def test_a_prompt_that_never_leaves_the_queue_hits_the_overall_wait_limit(tmp_path, samples):
    sample = _pick(samples, "color")
    with FakeComfyUI(samples, {sample.id: "queued"}) as fake:
        # a 0.5 s timeout (the wait limit is ten of them): the submit keeps time to spare under load
        adapter = _adapter(tmp_path, fake, timeout=0.5)
        with pytest.raises(GenerationUnjudged, match=r"overall wait limit of 5 s, after \d s in the server's queue"):
            _run(adapter, sample)
        assert fake.deleted == list(fake.prompts) and fake.interrupted == []


@pytest.mark.parametrize("kind, needle", [("vanish", "vanished: the server no longer knows it"),
                                          ("interrupt", "interrupted at SaveImage")])
def test_a_prompt_lost_or_stopped_by_someone_else_is_an_error(tmp_path, samples, kind, needle):
    sample = _pick(samples, "color")
    with FakeComfyUI(samples, {sample.id: kind}) as fake:
        adapter = _adapter(tmp_path, fake)
        with pytest.raises(GenerationUnjudged, match=needle) as info:
            _run(adapter, sample)
        polls = sum(1 for method, path in fake.requests if path.startswith("/history/"))
    assert info.value.unjudged and (kind != "vanish" or polls <= 4)


@pytest.mark.parametrize("kind", ["hang", "queued"])
def test_interrupt_deletes_the_prompt_and_interrupts_it_only_while_it_runs(tmp_path, samples, kind):
    sample = _pick(samples, "color")
    cancel = threading.Event()
    with FakeComfyUI(samples, {sample.id: kind}) as fake:
        adapter = _adapter(tmp_path, fake, cancel=cancel)
        worker, raised = _run_in_thread(adapter, sample)
        assert fake.polled.wait(10)
        if kind == "hang":  # wait until the server runs it
            for _ in range(200):
                if fake.running:
                    break
                threading.Event().wait(0.02)
        cancel.set()
        worker.join(10)
        assert not worker.is_alive() and isinstance(raised[0], GenerationCancelled)
        pid = next(iter(fake.prompts))  # the cancel requests are made before generate() raises
        assert fake.deleted == [pid] and fake.interrupted == ([pid] if kind == "hang" else [])


@pytest.mark.parametrize("stall", ["silent", "trickle"])
def test_the_cancel_requests_end_at_one_deadline_when_the_server_never_answers_them(
        tmp_path, samples, stall, monkeypatch):
    from pytest_violin.models.comfyui import adapter as comfyui_adapter

    monkeypatch.setattr(comfyui_adapter, "CANCEL_DEADLINE", 0.5)
    sample = _pick(samples, "color")
    cancel = threading.Event()
    with FakeComfyUI(samples, {sample.id: "hang"}, stall_cancel=stall) as fake:
        adapter = _adapter(tmp_path, fake, cancel=cancel)
        raised, ended = [], threading.Event()

        def run():
            try:
                _run(adapter, sample)
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                raised.append(exc)
            finally:
                ended.set()

        threading.Thread(target=run, daemon=True).start()
        assert fake.polled.wait(10)
        cancel.set()
        assert fake.stalled.wait(10)  # the delete went out and is never answered in full
        # the whole cancel ends at its deadline (a per-request time-out of 3 s would let a
        # silent server hold it 3 s per request, a trickling one for ever)
        assert ended.wait(comfyui_adapter.CANCEL_DEADLINE + 1.5)
        assert isinstance(raised[0], GenerationCancelled)
        assert fake.requests.count(("POST", "/queue")) == 1  # tried once, not retried


def test_cache_identity_follows_the_servers_models_and_version(tmp_path, samples):
    with FakeComfyUI(samples) as fake:
        first = _adapter(tmp_path, fake).cache_identity()
        assert first.startswith(_adapter(tmp_path, fake).identity + " server=")
        assert _adapter(tmp_path, fake).cache_identity() == first  # stable
        # the same file name, swapped (another size and time): a cache miss
        fake.models["checkpoints"]["model.safetensors"] = (6938078334, 1764633600.0)
        swapped = _adapter(tmp_path, fake).cache_identity()
        # another checkpoint beside it changes nothing: the workflow does not load it
        fake.models["checkpoints"]["other.safetensors"] = (1, 1.0)
        assert _adapter(tmp_path, fake).cache_identity() == swapped != first
        url = fake.url
    dead = _adapter(tmp_path, type("Gone", (), {"url": url})(), timeout=0.5, retries=0)
    assert dead.cache_identity() is None  # no cache rather than a stale one


@pytest.mark.parametrize("body, needle", [
    ({"nodes": [], "links": []}, "UI format"),
    ([1, 2], "API format"),
    ({"1": {"inputs": {}}}, "API format"),
    ({"1": {"class_type": "X", "inputs": {"t": "{colour}"}}}, "colour"),
    ({"1": {"class_type": "X", "inputs": {"t": "fixed"}}}, r"\{prompt\}"),
])
def test_bad_workflows(body, needle):
    with pytest.raises(ModelSpecError, match=needle):
        Workflow(body)


def test_literal_braces_and_typed_placeholders():
    wf = Workflow({"1": {"class_type": "X", "inputs": {"t": "{{a|b}} {prompt}", "s": "{seed}"}}})
    request = GenerationRequest(prompt="p", width=8, height=8, seed=7, sample_id="s", task="color")
    assert wf.render(request, []) == {"1": {"class_type": "X", "inputs": {"t": "{a|b} p", "s": 7}}}


def test_spec_errors(tmp_path):
    with pytest.raises(ModelSpecError, match="--violin-workflow"):
        resolve_model("comfyui:http://127.0.0.1:8188", AdapterOptions(rootdir=tmp_path))
    with pytest.raises(ModelSpecError, match="does not exist"):
        resolve_model("comfyui:127.0.0.1:8188", AdapterOptions(rootdir=tmp_path, extra={"workflow": "no.json"}))
    with pytest.raises(ModelSpecError, match="URL"):
        resolve_model("comfyui:", AdapterOptions(rootdir=tmp_path))
    (tmp_path / "w.json").write_text(json.dumps(TEXT_WORKFLOW))
    opts = AdapterOptions(rootdir=tmp_path, extra={"workflow": "w.json"})
    with pytest.raises(ModelSpecError, match="mask='luma'.*mask=rgb, mask=alpha"):
        resolve_model("comfyui:http://127.0.0.1:8188?mask=luma", opts)
    with pytest.raises(ModelSpecError, match="unknown parameter 'steps'"):
        resolve_model("comfyui:http://127.0.0.1:8188?steps=4", opts)


def test_end_to_end_twenty_samples(pytester, samples):
    ids = sorted(samples)
    by_task = {t: [i for i in ids if samples[i].task == t] for t in ("color", "shape", "mask")}
    plan = {by_task["shape"][0]: "interrupt", by_task["color"][0]: "fail", by_task["color"][1]: "rate"}
    with FakeComfyUI(samples, plan, auth="Basic dmlvbGluOmNmeS1lMmUtcGxhbnQtOGUyMWI3ZDRjOQ==",
                     job_seconds=0.01) as fake:
        pytester.makefile(".json", workflow=json.dumps(EDIT_WORKFLOW))
        pytester.makefile(".json", text=json.dumps(TEXT_WORKFLOW))
        url = fake.url.replace("://", f"://violin:{PASSWORD}@")
        # a text workflow on mask samples: those end in errors, the others are judged
        result = pytester.runpytest(
            f"--violin-model=comfyui:{url}", f"--violin-tasks={TASKS}", f"--violin-limit={LIMIT}",
            "--violin-workflow=text.json", "--violin-report=rep", "--junitxml=j.xml",
            "--violin-no-cache", "-p", "no:randomly", "-rA")
        results = json.loads((pytester.path / "rep" / "results.json").read_text())
        outcome = {r["sample_id"]: r["outcome"] for r in results["samples"]}
        assert len(outcome) == LIMIT and set(outcome) == set(ids)
        kinds = {kind: sid for sid, kind in plan.items()}
        # an execution error (the server broke) and an interrupt by someone else: errors, not scores
        assert outcome[kinds["fail"]] == "error" and outcome[kinds["interrupt"]] == "error"
        assert outcome[kinds["rate"]] == "passed" and len(fake.rated) == 1
        assert all(outcome[sid] == "error" for sid in by_task["mask"])
        assert sum(v == "passed" for v in outcome.values()) == LIMIT - 2 - len(by_task["mask"])
        assert "self-hosted: no call limit by default" in result.stdout.str()
        texts = [result.stdout.str(), result.stderr.str(), (pytester.path / "j.xml").read_text()]
        texts += [p.read_text(errors="replace") for p in Path(pytester.path / "rep").rglob("*") if p.is_file()]
        assert all(PASSWORD not in text for text in texts)


def test_a_missing_checkpoint_stops_the_full_suite_early(pytester, samples):
    # a fake server with no checkpoint at all, ComfyUI's own example workflow shape
    with FakeComfyUI(samples, models={"checkpoints": {}}) as fake:
        workflow = json.loads(json.dumps(TEXT_WORKFLOW))
        workflow["4"]["inputs"]["ckpt_name"] = CKPT
        pytester.makefile(".json", workflow=json.dumps(workflow))
        result = pytester.runpytest(f"--violin-model=comfyui:{fake.url}", "--violin-workflow=workflow.json",
                                    "--violin-no-cache", "-p", "no:cacheprovider", "--violin-report=rep")
        prompts = sum(1 for method, path in fake.requests if path == "/prompt")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    # one's own server: the full suite is not refused by the default --violin-max-calls
    result.stdout.fnmatch_lines(["violin plan: adapter comfyui:* (self-hosted: no call limit by default), "
                                 "suite violin, 7745 samples *"])
    assert re.search(r"Interrupted: violin: setup error after 5 samples: comfyui: the server refused the "
                     rf"workflow \(HTTP 400\): .*ckpt_name: '{re.escape(CKPT)}' not in \[\]", out), out[-2000:]
    outcomes = result.parseoutcomes()
    assert "passed" not in outcomes and "failed" not in outcomes and outcomes["errors"] <= 8
    assert prompts < 20
    meta = json.loads((pytester.path / "rep" / "results.json").read_text())
    assert "setup error after 5 samples" in meta["metadata"]["stop_reason"]
    assert all(r["outcome"] == "error" and not r.get("metrics") for r in meta["samples"])


def test_a_text_workflow_on_the_mask_task_stops_early_without_queueing(pytester, samples):
    with FakeComfyUI(samples) as fake:
        pytester.makefile(".json", workflow=json.dumps(TEXT_WORKFLOW))
        result = pytester.runpytest(f"--violin-model=comfyui:{fake.url}", "--violin-workflow=workflow.json",
                                    "--violin-tasks=mask", "--violin-no-cache", "-p", "no:cacheprovider")
        assert fake.queued == [] and fake.uploads == {}
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert re.search(r"Interrupted: violin: setup error after 5 samples: comfyui: mask samples have 2 input "
                     r"image\(s\) but .* has no \{image\} and no \{mask\} placeholder", result.stdout.str())
    assert "passed" not in result.parseoutcomes() and "failed" not in result.parseoutcomes()


@pytest.mark.slow  # 240 prompts through the fake server: about 9 s
def test_a_gated_comfyui_run_says_what_each_group_ruled_out(pytester):
    """The release gate over a ComfyUI server: 120 colour samples (60 a variation) recorded as the baseline,
    then the same workflow again: every group shown within, each with its "ruled out" line."""
    chosen = {s.id: s for s in load_suite("violin", tasks=("color",), limit=120)}
    with FakeComfyUI(chosen, job_seconds=0.0) as fake:
        pytester.makefile(".json", text=json.dumps(TEXT_WORKFLOW))
        args = (f"--violin-model=comfyui:{fake.url}", "--violin-tasks=color", "--violin-limit=120",
                "--violin-workflow=text.json", "--violin-no-cache", "-p", "no:randomly", "-p", "no:cacheprovider")
        assert pytester.runpytest(*args, "--violin-save-baseline=base.json").ret == 0
        gated = pytester.runpytest(*args, "--violin-baseline=base.json")
    assert gated.ret == 0
    gated.stdout.fnmatch_lines(["PASSED: every task and variation shown within its margins against baseline*",
                                "*within*color/v1 n=60: mean +0.0000, ruled out above +0.0000; pass rate*"])
