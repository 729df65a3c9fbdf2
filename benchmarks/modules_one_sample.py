"""Count the package's modules that run for one HTTP sample through the plugin.

A local ``http.server`` (in this process, on a real socket) answers the plugin's HTTP protocol
(docs/models.md: ``POST`` JSON in, raw ``image/png`` out) with the requested sample's
expected image, so the sample passes. One ``pytest --violin-model=http://...`` run of that one
sample happens in a subprocess whose every thread is traced (``sys.setprofile`` and
``threading.setprofile``, call events): each ``frame.f_globals['__name__']`` under
``pytest_violin`` is recorded, module bodies (the import) included.

Prints the number of distinct ``pytest_violin`` modules that executed code, and of those whose
functions were called (module bodies left out); ``--list`` prints them.

Usage::

    python benchmarks/modules_one_sample.py [--list] [--sample-task color]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The traced child: records the module of every Python call in every thread, then runs pytest.
CHILD = r"""
import json, sys, threading

seen, functions = set(), set()

def profile(frame, event, arg):
    if event == "call":
        name = frame.f_globals.get("__name__") or ""
        if name == "pytest_violin" or name.startswith("pytest_violin."):
            seen.add(name)
            if frame.f_code.co_name != "<module>":
                functions.add(name)

threading.setprofile(profile)
sys.setprofile(profile)
import pytest
code = pytest.main(sys.argv[2:])
sys.setprofile(None)
threading.setprofile(None)
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump({"exit": int(code), "modules": sorted(seen), "functions": sorted(functions)}, out)
"""


def _png(image) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG")
    return buffer.getvalue()


def _server(samples):
    """A fake of the plugin's HTTP protocol: the requested sample's expected image as PNG."""
    by_id = {s.id: s for s in samples}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            sample = by_id.get(str(body.get("sample_id")))
            if sample is None:
                self.send_error(404, "unknown sample")
                return
            png = _png(sample.expected())
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(png)))
            self.end_headers()
            self.wfile.write(png)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the modules")
    parser.add_argument("--sample-task", default="color", help="the task of the one sample (default color)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from pytest_violin.suite import load_suite

    samples = load_suite("violin", tasks=[args.sample_task], limit=1, seed=0)
    server = _server(samples)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "modules.json"
            env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
            cmd = [sys.executable, "-c", CHILD, str(out), "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                   f"--violin-model=http://127.0.0.1:{server.server_address[1]}/generate",
                   f"--violin-tasks={args.sample_task}", "--violin-limit=1", "--violin-no-cache"]
            proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=600, check=False)
            if not out.is_file():
                sys.stderr.write(proc.stdout + proc.stderr)
                return 1
            found = json.loads(out.read_text(encoding="utf-8"))
    finally:
        server.shutdown()
    if found["exit"] != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        print(f"the run did not pass (exit {found['exit']})")
        return 1
    print(f"pytest_violin modules that executed code for one HTTP sample: {len(found['modules'])}")
    print(f"  of which functions were called (module bodies left out): {len(found['functions'])}")
    if args.list:
        for name in found["modules"]:
            print(f"  {name}{'' if name in found['functions'] else '  (module body only)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
