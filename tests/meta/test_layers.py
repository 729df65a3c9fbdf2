"""The import direction is one way: a module imports only its own layer or those below it.

Read from the source (every import, module-level or inside a function), so
the layering stays true as the code grows. A new module must find its layer
here: an unknown module fails the test. Within a layer the imports form no
circle (the strongly connected components of the import graph), no module
of the package is over :data:`MAX_LINES` lines and no function is above
McCabe complexity :data:`MAX_COMPLEXITY` (modules sized by their idea, not by
a cap that splits them; a function a reader can follow).
"""

from __future__ import annotations

import ast
import functools
import itertools
from pathlib import Path

import mccabe

import pytest_violin

PACKAGE = Path(pytest_violin.__file__).parent

#: Bottom to top. A module belongs to the longest prefix that names it.
LAYERS = [
    # 0: foundations, no knowledge of Violin
    ("pytest_violin.errors", "pytest_violin._fs", "pytest_violin._lazy", "pytest_violin._threads",
     "pytest_violin.redaction", "pytest_violin.imaging", "pytest_violin.report.text"),
    # 1: pure metrics (arrays in, Metrics out)
    ("pytest_violin.metrics",),
    # 2: ground-truth pixels (geometry, photos, masks, drawing) and color tables the task families render with
    ("pytest_violin.suite.colors", "pytest_violin.suite.drawing", "pytest_violin.suite.ids"),
    # 3: task families (metric names, limits, render, score, describe)
    ("pytest_violin.tasks",),
    # 4: suites and samples
    ("pytest_violin.suite",),
    # 5: limits, the one verdict, and the diagnoses of failing answers
    ("pytest_violin.thresholds", "pytest_violin.verdict", "pytest_violin.diagnosis"),
    # 6: models and their internal transport (models._transport)
    ("pytest_violin.models",),
    # 7: running generations
    ("pytest_violin.execution",),
    # 8: results and their one aggregation, and a generation judged (the outcome rules)
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
    ("pytest_violin.assertions", "pytest_violin.strategies",
     "pytest_violin.__main__", "pytest_violin"),
]


def _layer(module: str) -> int:
    best, length = None, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length:
                best, length = index, len(prefix)
    assert best is not None, f"module {module} has no layer in tests/meta/test_layers.py"
    return best


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str):
    """``(line, imported name)`` of every import in ``path``; each file is parsed once per run."""
    return _parsed_imports(path, module)


@functools.cache
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


# ---------------------------------------------------------------- circles, sizes, complexity
#: Import circles known and being removed, each the set of its modules. The
#: check fails when one of them is gone, so the list never outlives them.
KNOWN_CIRCLES = []

#: The longest a module of the package may be.
MAX_LINES = 800

#: The highest McCabe complexity a function of the package may have (ruff's C901 at the same
#: bound finds the same functions; the mccabe package counts a little higher, never lower).
MAX_COMPLEXITY = 15

#: Functions above MAX_COMPLEXITY being simplified now, as ``path:qualified name``. The check
#: fails when one of them is back at or under the bound, so the list never outlives them.
KNOWN_COMPLEX: set = set()


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
    assert not over, f"modules over {MAX_LINES} lines (split them by idea): {sorted(over.items())}"


def complexities(path: Path) -> dict:
    """``qualified name -> McCabe complexity`` of every function in ``path`` (a closure counts in its function)."""
    tree = compile(path.read_text(encoding="utf-8"), str(path), "exec", ast.PyCF_ONLY_AST)
    visitor = mccabe.PathGraphingAstVisitor()
    visitor.preorder(tree, visitor)
    return {graph.entity: graph.complexity() for graph in visitor.graphs.values()}


def test_complexities_count_branches(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(
        "def flat(x):\n    return x\n"
        "class C:\n"
        "    def branchy(self, x):\n"
        "        for i in x:\n            if i:\n                return i\n"
        "        while x:\n            x = x[1:]\n"
        "        return None\n", encoding="utf-8")
    assert complexities(path) == {"flat": 1, "C.branchy": 4}


def test_no_function_above_the_complexity_bound():
    found = {f"{path.relative_to(PACKAGE.parent).as_posix()}:{name}": n
             for path in sorted(PACKAGE.rglob("*.py")) for name, n in complexities(path).items()}
    over = {name: n for name, n in found.items() if n > MAX_COMPLEXITY}
    new = sorted(f"{name} ({n})" for name, n in over.items() if name not in KNOWN_COMPLEX)
    gone = sorted(name for name in KNOWN_COMPLEX if name not in over)
    assert not new, (f"functions above McCabe complexity {MAX_COMPLEXITY} (split them into steps a reader "
                     f"can follow): {new}")
    assert not gone, (f"at or under complexity {MAX_COMPLEXITY} now, or gone: remove them from "
                      f"KNOWN_COMPLEX in {Path(__file__).name}: {gone}")
