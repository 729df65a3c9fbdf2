"""The import direction is one way: a module imports only its own layer or those below it.

Read from the source (every import, module-level or inside a function), so
the layering stays true as the code grows. A new module must find its layer
here: an unknown module fails the test. Within a layer the imports form no
circle (the strongly connected components of the import graph), and no
module of the package is over :data:`MAX_LINES` lines.
"""

from __future__ import annotations

import ast
import functools
import itertools
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
    # 5: limits, the one verdict, and the diagnoses of failing answers
    ("pytest_violin.thresholds", "pytest_violin.verdict", "pytest_violin.diagnosis"),
    # 6: models and their transport
    ("pytest_violin.models",),
    # 7: running generations
    ("pytest_violin.execution",),
    # 8: results and their one aggregation
    ("pytest_violin.results", "pytest_violin.judging"),
    # 9: baselines and the gate's statistics
    ("pytest_violin.gating",),
    # 10: reporters
    ("pytest_violin.report", "pytest_violin.compare"),
    # 11: evaluating a model from Python (notebooks, training loops): the plugin's code path, without pytest
    ("pytest_violin.evaluation",),
    # 12: the pytest plugin
    ("pytest_violin.pytest_plugin", "pytest_violin.hypothesis_profiles"),
    # 13: writing your own tests, the command line, the public facade
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
    """``(line, imported name)`` of every import in ``path``; each file is parsed once per run."""
    return _parsed_imports(path, module)


@functools.lru_cache(maxsize=None)
def _parsed_imports(path: Path, module: str) -> tuple:
    return tuple(_walk_imports(path, module))


def _walk_imports(path: Path, module: str):
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


# ---------------------------------------------------------------- circles and sizes
#: Import circles known and being removed, each the set of its modules. The
#: check fails when one of them is gone, so the list never outlives them.
#: (transport/client.py <-> transport/decode.py is gone: issue 23's transport split.)
KNOWN_CIRCLES = []

#: The longest a module of the package may be.
MAX_LINES = 500

#: Modules over MAX_LINES being split now. The check fails when one of
#: them is back under the limit, so the list never outlives them.
#: (issue 23 split the transport client and imaging.py, now the imaging/ package.)
KNOWN_OVERSIZED = set()


def import_graph() -> dict:
    """``module -> set of package modules it imports`` (module level and in functions)."""
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {_module_name(p) for p in paths}
    graph = {m: set() for m in modules}
    for path in paths:
        importer = _module_name(path)
        for _line, name in _imports(path, importer):
            target = _known(name, modules)
            # the root facade resolves its names lazily, on attribute access
            if target is not None and target not in (importer, "pytest_violin"):
                graph[importer].add(target)
    return graph


def circles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan), each a sorted list."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = itertools.count()

    def visit(start):
        # iterative: a deep package must not hit the recursion limit
        index[start] = low[start] = next(counter)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(graph[start])))]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = next(counter)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_circles_finds_every_strongly_connected_component():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}, "g": set()}
    assert circles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    found = [set(c) for c in circles(import_graph())]
    new = [sorted(c) for c in found if c not in KNOWN_CIRCLES]
    gone = [sorted(c) for c in KNOWN_CIRCLES if c not in found]
    # strict on purpose: ``from . import name`` counts as importing the package's __init__ too
    # (write ``from .name import x``), so any stricter reading of "circle" finds none either
    assert not new, (f"import circles (break each so one module depends on the other only; "
                     f"'from . import name' imports the package __init__ too): {new}")
    assert not gone, f"these known circles are gone: remove them from KNOWN_CIRCLES: {gone}"


def test_no_module_over_the_line_limit():
    sizes = {path.relative_to(PACKAGE.parent).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
             for path in PACKAGE.rglob("*.py")}
    over = {path: n for path, n in sizes.items() if n > MAX_LINES}
    new = sorted(f"{path} ({n} lines)" for path, n in over.items() if path not in KNOWN_OVERSIZED)
    gone = sorted(path for path in KNOWN_OVERSIZED if path not in over)
    assert not new, f"modules over {MAX_LINES} lines (split them into cohesive modules): {new}"
    assert not gone, f"back under {MAX_LINES} lines or removed: take them out of KNOWN_OVERSIZED: {gone}"
