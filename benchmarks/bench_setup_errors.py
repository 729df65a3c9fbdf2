"""Setup errors stop a run early; a slow queue does not fail samples (issue 20).

Two measurements against the ComfyUI fake of the test suite
(tests/_comfyui_fake.py: answers recorded from ComfyUI 0.3.64, one prompt at
a time like the real server), or against a real server with ``--url``:

a. **broken workflow, full suite** - ``python -m pytest
   --violin-model=comfyui:URL --violin-workflow=W --violin-no-cache`` on the
   whole ``violin`` suite (7,745 samples) with a workflow whose
   ``CheckpointLoaderSimple`` names a checkpoint the server does not have.
   Measured: wall time of the process (collection included), exit code, the
   requests the server received (the fake counts them; against ``--url`` the
   ``POST /prompt`` count is not known), whether the stop message names the
   checkpoint, and that no sample was scored. Targets: < 15 s, < 20
   requests, exit 2, no sample passed or failed.
b. **slow queue** - ``--samples`` samples (default 6) through the real
   ``Runner`` at ``--concurrency`` 4 with ``--violin-timeout`` 25 (a sample
   budget of 50 s) against a server that runs one prompt at a time for
   ``--seconds`` each (default 15): the last of 4 waits 45 s in the queue.
   Measured with the queue-aware budget (the default) and, for comparison,
   with the queue states ignored (the budget counts from the submit, as
   before issue 20). Target: no sample lost with the queue-aware budget.

Run: ``python benchmarks/bench_setup_errors.py [--only a,b] [--seconds 15] [--samples 6] [--url URL]``
(about 3 minutes at the defaults: the slow queue runs 2 x 90 s of fake work).
Prints a markdown table; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the test suite's ComfyUI fake

from _comfyui_fake import FakeComfyUI  # noqa: E402

from pytest_violin.execution.runner import Runner  # noqa: E402
from pytest_violin.models import AdapterOptions, resolve_model  # noqa: E402
from pytest_violin.suite import load_suite  # noqa: E402

CKPT = "v1-5-pruned-emaonly.safetensors"

#: ComfyUI's own example workflow (script_examples/basic_api_example.py) with placeholders.
WORKFLOW = {
    "3": {"class_type": "KSampler", "inputs": {"cfg": 8, "denoise": 1, "latent_image": ["5", 0],
                                               "model": ["4", 0], "negative": ["7", 0], "positive": ["6", 0],
                                               "sampler_name": "euler", "scheduler": "normal",
                                               "seed": "{seed}", "steps": 20}},
    "4": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": CKPT}},
    "5": {"class_type": "EmptyLatentImage", "inputs": {"batch_size": 1, "height": "{height}", "width": "{width}"}},
    "6": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["4", 1], "text": "{prompt}"}},
    "7": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["4", 1], "text": "bad hands"}},
    "8": {"class_type": "VAEDecode", "inputs": {"samples": ["3", 0], "vae": ["4", 2]}},
    "9": {"class_type": "SaveImage", "inputs": {"filename_prefix": "violin_{sample_id}", "images": ["8", 0]}},
}


def broken_workflow(url: str | None) -> list:
    fake = None if url else FakeComfyUI({}, models={"checkpoints": {}})
    target = url or fake.url
    try:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "workflow.json").write_text(json.dumps(WORKFLOW))
            start = time.monotonic()
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", f"--violin-model=comfyui:{target}",
                 "--violin-workflow=workflow.json", "--violin-no-cache", "-p", "no:cacheprovider",
                 "--violin-report=rep", "-q"], cwd=tmp, capture_output=True, text=True, timeout=600)
            wall = time.monotonic() - start
            results = json.loads((Path(tmp) / "rep" / "results.json").read_text())
    finally:
        if fake is not None:
            fake.stop()
    out = proc.stdout
    stop = re.search(r"Interrupted: (violin: setup error after \d+ samples: .*?); the run stops here", out)
    scored = sum(r["outcome"] in ("passed", "failed", "refused") for r in results["samples"])
    requests = None if fake is None else len(fake.requests)
    prompts = None if fake is None else sum(1 for _, path in fake.requests if path == "/prompt")
    ok_time, ok_req = wall < 15, requests is None or requests < 20
    named = bool(stop) and CKPT in stop.group(1)
    rows = [
        ("a. broken workflow, full suite: wall time", "< 15 s", f"{wall:.1f} s", ok_time),
        ("a. requests to the server (POST /prompt)", "< 20",
         "n/a (real server)" if requests is None else f"{requests} ({prompts})", ok_req),
        ("a. exit code, samples scored", "2, 0", f"{proc.returncode}, {scored} of {len(results['samples'])}",
         proc.returncode == 2 and scored == 0),
        ("a. stop message names the checkpoint", "yes", "yes" if named else "no", named),
    ]
    if stop:
        print(f"stop message: {stop.group(1)[:300]}")
    return rows


def slow_queue(seconds: float, samples: int, concurrency: int, queue_aware: bool) -> tuple:
    picked = load_suite("violin", tasks=["color"], limit=samples)
    fake = FakeComfyUI({s.id: s for s in picked}, job_seconds=seconds)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workflow = dict(WORKFLOW, **{"4": {"class_type": "CheckpointLoaderSimple",
                                               "inputs": {"ckpt_name": "model.safetensors"}}})
            (Path(tmp) / "w.json").write_text(json.dumps(workflow))
            adapter = resolve_model(f"comfyui:{fake.url}", AdapterOptions(
                rootdir=Path(tmp), timeout=25.0, concurrency=concurrency, extra={"workflow": "w.json"}))
            if not queue_aware:  # as before issue 20: the budget counts from the submit
                import pytest_violin.models.comfyui.adapter as comfy
                from dataclasses import replace

                comfy.STATES = replace(comfy.STATES, queued=frozenset())
            runner = Runner(adapter, concurrency=concurrency)
            start = time.monotonic()
            runner.plan(picked)
            gens = [runner.get(s) for s in picked]
            wall = time.monotonic() - start
            runner.close()
            adapter.close()
            if not queue_aware:
                import importlib

                importlib.reload(comfy)
    finally:
        fake.stop()
    lost = [g for g in gens if not g.images]
    return len(lost), wall, [str(g.error)[:160] for g in lost]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="a,b")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--samples", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--url", default=None, help="a real ComfyUI server for (a)")
    args = parser.parse_args()
    rows = []
    if "a" in args.only:
        rows += broken_workflow(args.url)
    if "b" in args.only:
        for aware in (True, False):
            lost, wall, why = slow_queue(args.seconds, args.samples, args.concurrency, aware)
            label = "queue-aware budget" if aware else "budget from the submit (before)"
            rows.append((f"b. {args.seconds:g} s workflow, concurrency {args.concurrency}, timeout 25 s, "
                         f"{label}: samples lost", "0" if aware else "(comparison)",
                         f"{lost} of {args.samples} in {wall:.0f} s", lost == 0 or not aware))
            for text in why[:2]:
                print(f"lost ({label}): {text}")
    print("\n| what | target | measured |\n|---|---|---|")
    for what, target, measured, ok in rows:
        print(f"| {what} | {target} | {measured}{'' if ok else ' **MISSED**'} |")
    return 0 if all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
