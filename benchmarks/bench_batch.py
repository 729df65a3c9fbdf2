"""The sequential gate in batch waves: how much of the suite a clearly worse model costs.

End to end, as a user runs it: a baseline of the oracle on the color and
shape tasks of the built-in suite (2,345 samples), then
``pytest --violin-batch --violin-sequential --violin-baseline=...`` against
the fake OpenAI Batch API of the test suite (tests/_batch_fakes.py, real
sockets), whose model answers a share ``--worse`` of the prompts with a flat
gray image (a failure) and the rest with the expected image. The waves are
the driver's (a tenth of the samples still wanted, at least 20; the gate
looks between waves). Reported: the gate's verdict, the batches created, the
requests submitted and their share of the suite, the exit code and the wall
time. The target (docs/models.md, "Batch"): decided after at most 30% of the
samples and at most 4 batches.

Usage: ``python benchmarks/bench_batch.py [--worse 0.3] [--tasks color,shape] [--json]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the test suite's fakes

from _batch_fakes import FakeOpenAI, b64_answer  # noqa: E402
from _servers import solid  # noqa: E402

from pytest_violin.suite import load_suite  # noqa: E402

KEY = "sk-bench-batch-000"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worse", type=float, default=0.3, help="share of prompts answered wrong (0.3)")
    parser.add_argument("--tasks", default="color,shape")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    tasks = tuple(args.tasks.split(","))
    table = {}
    for sample in load_suite("violin", tasks=tasks):
        table.setdefault(sample.prompt, sample.expected())
    total = sum(1 for _ in load_suite("violin", tasks=tasks))

    def answer(body):
        share = int(hashlib.sha256(body["prompt"].encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        if share < args.worse:
            return 200, b64_answer(solid(64, 64, (128, 128, 128)))
        return 200, b64_answer(table[body["prompt"]])

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    common = ["-p", "no:randomly", "-q", f"--violin-tasks={args.tasks}", "--violin-max-calls=none"]
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(KEY, answer, polls=0) as fake:
        base = subprocess.run([sys.executable, "-m", "pytest", "--violin-model=oracle", *common,
                               "--violin-save-baseline=base.json"], cwd=tmp, env=env, capture_output=True,
                              text=True, check=False)
        if base.returncode != 0:
            sys.stderr.write(base.stdout[-2000:])
            return 1
        env.update(OPENAI_API_KEY=KEY, OPENAI_BASE_URL=fake.url)
        start = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "pytest", "--violin-model=openai:gpt-image-1?seed=off", *common,
                              "--violin-batch", "--violin-sequential", "--violin-baseline=base.json",
                              "--violin-report=report"], cwd=tmp, env=env, capture_output=True, text=True,
                             check=False)
        seconds = time.perf_counter() - start
        submitted = sum(len(lines) for lines in fake.lines.values())
        batches = fake.count("POST /batches")
        verdict = [line for line in run.stdout.splitlines() if "sequential gate" in line.lower()]
        out = {"samples": total, "worse": args.worse, "exit": run.returncode, "batches": batches,
               "submitted": submitted, "share": round(submitted / total, 4), "seconds": round(seconds, 1),
               "sync_image_calls": fake.count("POST /images/generations"),
               "gate": verdict[-1].strip() if verdict else None}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for name, value in out.items():
            print(f"{name:>17}: {value}")
    ok = out["share"] <= 0.30 and batches <= 4 and out["exit"] == 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
