"""The import direction is one way: a module imports only its own layer or those below it.

Read from the source (every import, module-level or inside a function), so
the layering stays true as the code grows. A new module must find its layer
here: an unknown module fails the test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_violin

PACKAGE = Path(pytest_violin.__file__).parent

#: Bottom to top. A module belongs to the longest prefix that names it.
LAYERS = [
    # 0: foundations, no knowledge of Violin
    ("pytest_violin.errors", "pytest_violin._fs", "pytest_violin.redaction", "pytest_violin.imaging",
     "pytest_violin.report.text"),
    # 1: pure metrics (arrays in, Metrics out)
    ("pytest_violin.metrics",),
    # 2: drawing primitives and color tables the task families render with
    ("pytest_violin.suite.colors", "pytest_violin.suite.geometry", "pytest_violin.suite.drawing",
     "pytest_violin.suite.masks", "pytest_violin.suite.photos", "pytest_violin.suite.frozen",
     "pytest_violin.suite.ids", "pytest_violin.suite.progress"),
    # 3: task families (metric names, limits, render, score, describe)
    ("pytest_violin.tasks",),
    # 4: suites and samples
    ("pytest_violin.suite",),
    # 5: limits and the one verdict
    ("pytest_violin.thresholds", "pytest_violin.verdict"),
    # 6: models and their transport
    ("pytest_violin.models",),
    # 7: running generations
    ("pytest_violin.execution",),
    # 8: results and their one aggregation
    ("pytest_violin.results",),
    # 9: baselines and the gate's statistics
    ("pytest_violin.gating",),
    # 10: reporters
    ("pytest_violin.report", "pytest_violin.compare"),
    # 11: the pytest plugin
    ("pytest_violin.pytest_plugin", "pytest_violin.hypothesis_profiles"),
    # 12: writing your own tests, the command line, the public facade
    ("pytest_violin.testing", "pytest_violin.assertions", "pytest_violin.strategies",
     "pytest_violin.__main__", "pytest_violin"),
]


def _layer(module: str) -> int:
    best, length = None, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length:
                best, length = index, len(prefix)
    assert best is not None, f"module {module} has no layer in tests/test_layers.py"
    return best


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target
            for alias in node.names:  # "from . import x" may name a module
                yield node.lineno, f"{target}.{alias.name}"


def _known(module: str, modules: set) -> str | None:
    while module:
        if module in modules:
            return module
        module = module.rpartition(".")[0]
    return None


def test_imports_point_down_the_layers():
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {_module_name(p) for p in paths}
    wrong = []
    for path in paths:
        importer = _module_name(path)
        for line, name in _imports(path, importer):
            target = _known(name, modules)
            if target is None or target == "pytest_violin" or target == importer:
                continue
            if _layer(target) > _layer(importer):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {importer} (layer "
                             f"{_layer(importer)}) imports {target} (layer {_layer(target)})")
    assert not wrong, "imports that point up:\n" + "\n".join(sorted(set(wrong)))


def test_every_module_has_a_layer():
    for path in PACKAGE.rglob("*.py"):
        _layer(_module_name(path))
