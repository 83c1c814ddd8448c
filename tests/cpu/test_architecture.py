"""The package's shape: imports point down (no cycles), and numba internals are touched in one module."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "numba_tiles"


def _dotted(path):
    parts = ("numba_tiles",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_dotted(p): p for p in PACKAGE.rglob("*.py")}
ADAPTERS = {name for name in MODULES if name.startswith("numba_tiles._backends.")}  # (the compilers' seam)
# What any module may import of numba: the public kernel API and its type system.
PUBLIC_NUMBA = {("numba", "cuda"), ("numba.cuda", "types")}


def imports(path):
    """(module imported, names taken) of every import statement, module-level or deferred."""
    package = _dotted(path) if path.name == "__init__.py" else _dotted(path).rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    # (imports for the type checker alone, under `if TYPE_CHECKING:`, are no edges at run time)
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"
        for n in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = anchor + (f".{base}" if base else "")
            yield base, tuple(a.name for a in node.names)


def package_edges(name):
    """The package modules ``name`` imports (``from . import cache`` names the module cache)."""
    for module, names in imports(MODULES[name]):
        if module in MODULES and any(f"{module}.{n}" in MODULES for n in names):
            yield from (f"{module}.{n}" if f"{module}.{n}" in MODULES else module for n in names)
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
    # and nothing below the package's face imports the face (but the entry points, which load it: the command
    # line and numba-cuda-mlir's extension hook)
    entry_points = {"numba_tiles.__main__", "numba_tiles._autoload"}
    assert not [n for n, edges in graph.items() if "numba_tiles" in edges and n not in entry_points]


def test_the_cache_and_toolchain_import_nothing_above_them():
    for low in ("numba_tiles.cache", "numba_tiles._toolchain", "numba_tiles._stats", "numba_tiles._target"):
        above = set(package_edges(low)) & {
            "numba_tiles._compile",
            "numba_tiles._programs",
            "numba_tiles._spec",
            "numba_tiles.block",
            "numba_tiles.warp",
            "numba_tiles.__main__",
        }
        assert not above, (low, above)


def test_only_the_adapter_imports_numba_internals():
    offenders = []
    for name, path in MODULES.items():
        if name in ADAPTERS:
            continue
        for module, names in imports(path):
            if module.split(".")[0] not in ("numba", "llvmlite"):
                continue
            if not names or not all((module, n) in PUBLIC_NUMBA for n in names):
                offenders.append(f"{name}: {module} {names}")
    assert not offenders, offenders
