"""The package's shape: imports point down (no cycles), and numba internals are touched in one module."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "numba_tiles"
MODULES = {f"numba_tiles.{p.stem}" if p.stem != "__init__" else "numba_tiles": p for p in PACKAGE.glob("*.py")}
ADAPTER = "numba_tiles._numba"
# What any module may import of numba: the public kernel API and its type system.
PUBLIC_NUMBA = {("numba", "cuda"), ("numba.cuda", "types")}


def imports(path):
    """(module imported, names taken) of every import statement, module-level or deferred."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = "numba_tiles" + (f".{base}" if base else "")
            yield base, tuple(a.name for a in node.names)


def package_edges(name):
    """The package modules ``name`` imports (``from . import cache`` names the module cache)."""
    for module, names in imports(MODULES[name]):
        if module == "numba_tiles":
            yield from (f"numba_tiles.{n}" if f"numba_tiles.{n}" in MODULES else module for n in names)
        elif module in MODULES:
            yield module


def test_no_import_cycles():
    graph = {name: set(package_edges(name)) - {name} for name in MODULES}
    state = {}

    def visit(node, path):
        if state.get(node) == "done":
            return
        assert state.get(node) != "open", "import cycle: " + " -> ".join(path + [node])
        state[node] = "open"
        for nxt in sorted(graph[node]):
            visit(nxt, path + [node])
        state[node] = "done"

    for name in sorted(graph):
        visit(name, [])
    # and nothing below the package's face imports the face
    assert not [n for n, edges in graph.items() if "numba_tiles" in edges and n != "numba_tiles.__main__"]


def test_the_cache_and_toolchain_import_nothing_above_them():
    for low in ("numba_tiles.cache", "numba_tiles._toolchain", "numba_tiles._stats", "numba_tiles._target"):
        above = set(package_edges(low)) & {"numba_tiles._compile", "numba_tiles._spec", "numba_tiles.block",
                                           "numba_tiles.warp", "numba_tiles.__main__"}
        assert not above, (low, above)


def test_only_the_adapter_imports_numba_internals():
    offenders = []
    for name, path in MODULES.items():
        if name == ADAPTER:
            continue
        for module, names in imports(path):
            if module.split(".")[0] not in ("numba", "llvmlite"):
                continue
            if not names or not all((module, n) in PUBLIC_NUMBA for n in names):
                offenders.append(f"{name}: {module} {names}")
    assert not offenders, offenders
