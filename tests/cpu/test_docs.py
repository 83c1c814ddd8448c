"""Every public name documents itself with an example that compiles (docs/api.md renders them); the
guide pages' and the README's code runs; the performance tables are what benchmarks/report.py makes of
benchmarks/results/ now."""

import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from numba.cuda.dispatcher import CUDADispatcher

import numba_tiles as tiles

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = [name for name in tiles.__all__ if not name.startswith("__")]


@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_example_compiles(name):
    doc = inspect.cleandoc(getattr(tiles, name).__doc__)
    assert "Example::" in doc, f"tiles.{name} has no example"
    example = inspect.cleandoc(doc.split("Example::", 1)[1])
    namespace = {}
    exec(compile(example, f"<tiles.{name} example>", "exec"), namespace)
    if "cubin" in namespace:  # the example compiles its kernel itself, with its own signature
        assert namespace["cubin"][:4] == b"\x7fELF"
        return
    for kernel in (v for v in namespace.values() if isinstance(v, CUDADispatcher)):
        if kernel.py_func.__name__ != "bad":
            assert tiles.compile(kernel, "void(float32[:], float32[:])", arch="sm_90")[:4] == b"\x7fELF"


COMPILED = "<!-- docs-test: compiled -->"  # a page whose code compiles without a GPU instead of simulating


def python_blocks(page):
    """A page's ```python blocks in order (a ```{code-block} python one is shown, not run)."""
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)


PAGES = [p for p in sorted((ROOT / "docs").rglob("*.md")) if "_build" not in p.parts and python_blocks(p)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT / "docs").as_posix())
def test_guide_page_code_runs(page):
    """A page's code blocks run in order in a fresh process: on Numba's simulator (kernels launch and
    their results are checked against NumPy by the page's asserts), or compiled for sm_90 with no GPU
    on a page marked ``<!-- docs-test: compiled -->``."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if COMPILED not in page.read_text():
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    result = subprocess.run([sys.executable, "-c", "\n".join(python_blocks(page))], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]


def test_the_extending_api_is_documented_with_examples():
    """numba_tiles.extending: each public function of its own has an example; the module's whole example
    (a header and an intrinsic) is docs/guide/extending.md's, which test_guide_page_code_runs compiles;
    the API page lists every name."""
    from numba_tiles import extending

    api = (ROOT / "docs" / "api.md").read_text()
    assert ".. automodule:: numba_tiles.extending" in api
    for name in ("library", "intrinsic", "simulated_block", "simulated_warp"):
        assert re.search(r"Example[^\n]*::", getattr(extending, name).__doc__), name
        assert name in api, name
    namespace = {}
    exec(inspect.cleandoc(extending.library.__doc__.split("Example::", 1)[1]), namespace)
    assert namespace["MINE"].name == "mine"
    assert "block_sum_of_squares" in (ROOT / "docs" / "guide" / "extending.md").read_text()


README = ROOT / "README.md"
# A README block runs where the line above it says: `<!-- readme-test: simulator compiled -->` (in one or
# both of the two processes), or `error` (a ```text block: the message compiling the bad kernel below gives).
README_BLOCK = re.compile(r"^<!-- readme-test: ([a-z ]+) -->\n```(\w+)\n(.*?)^```", re.S | re.M)


def readme_blocks():
    """The README's tested blocks in order: (modes, language, code)."""
    return [(modes.split(), language, code) for modes, language, code in README_BLOCK.findall(README.read_text())]


def test_every_readme_python_block_is_tested():
    untested = len(re.findall(r"^```python\n", README.read_text(), re.M))
    assert untested == sum(language == "python" for _, language, _ in readme_blocks()), \
        "a ```python block of README.md has no <!-- readme-test: simulator|compiled --> line above it"


@pytest.mark.parametrize("mode", ["simulator", "compiled"])
def test_readme_code_runs(mode):
    """The README's python blocks of one mode run in order in a fresh process: on Numba's simulator (the
    first kernel's launch, checked against NumPy), or compiled for sm_90 with no GPU (tiles.compile)."""
    code = "\n".join(c for modes, language, c in readme_blocks() if language == "python" and mode in modes)
    assert code
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if mode == "simulator":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]


def test_readme_error_is_the_one_raised():
    """The README's error message is what a float32 '&' reduction gives, as a tiles.TilesError."""
    (message,) = [code.strip() for modes, _, code in readme_blocks() if "error" in modes]

    def bad(x, out):
        out[0] = tiles.block_reduce(x[cuda.grid(1)], "&", block_dim=128)

    from numba import cuda
    with pytest.raises(tiles.TilesError) as raised:
        tiles.compile(cuda.jit(bad), "void(float32[::1], float32[::1])")
    assert message in str(raised.value)


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_demo_ends_by_saying_how_to_use_its_environment(tmp_path):
    """`make demo` installs into .venv, not into the python on PATH: its last lines say how to use it, as the
    README and the quickstart do above each `python first.py` (a plain python stops at No module named 'numba')."""
    python = tmp_path / "python"  # (stands for .venv's: the target's own steps only)
    python.write_text("#!/bin/sh\necho demo ran: $*\n")
    python.chmod(0o755)
    out = subprocess.run(["make", "-s", "demo", f"PY={python}"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert out.splitlines()[0] == "demo ran: examples/segmented_sum.py", out
    assert ". .venv/bin/activate" in out and f"run {python} first.py" in out, out
    for page in (README, ROOT / "docs" / "quickstart.md"):
        text = page.read_text()
        runs = list(re.finditer(r"python first\.py", text))
        assert runs, page
        for run in runs:  # (said in the same code block, or in the same paragraph)
            start = max(text.rfind("```", 0, run.start()), text.rfind("\n\n", 0, run.start()))
            end = min(i for i in (text.find("```", run.end()), text.find("\n\n", run.end()), len(text)) if i >= 0)
            assert ". .venv/bin/activate" in text[start:end], f"{page.name}: {text[start:end]}"


def load_report():
    spec = importlib.util.spec_from_file_location("report", ROOT / "benchmarks" / "report.py")
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    return report


def test_generated_tables_are_fresh():
    """README.md's and docs/performance.md's tables, the guides' compile-time figures and the notices'
    (numba_tiles/_compile_times.py) are what benchmarks/report.py makes of the result files now: after a
    benchmark run, or an edit of a block by hand, `python benchmarks/report.py` rewrites them."""
    report = load_report()
    found, names = report.results(), set()
    for path in report.TARGETS:
        text = path.read_text()
        names |= set(report.BEGIN.findall(text))
        assert report.render(text, found) == text, \
            f"{path.relative_to(ROOT)} differs from benchmarks/results/: run python benchmarks/report.py"
    assert names == set(report.BLOCKS), "every generated block appears in one of report.TARGETS"
    assert report.compile_times_module(found) == report.COMPILE_TIMES.read_text(), \
        "numba_tiles/_compile_times.py differs from benchmarks/results/: run python benchmarks/report.py"


def test_report_results_are_one_committed_file_a_benchmark_and_device():
    """benchmarks/results/ holds one file a benchmark and device, named BENCHMARK-DEVICE.json, each entry with
    the commit of a committed tree (no draft, no "-dirty" commit): report.results() refuses any other."""
    report = load_report()
    found = report.results()
    assert sorted(p.name for p in report.RESULTS.iterdir()) == sorted(r.name for r in found), "only JSON files"
    pairs = [(r.benchmark, r.label) for r in found]
    assert len(pairs) == len(set(pairs))
    for r in found:
        assert r.refused() is None, r.name
        assert all(re.fullmatch(r"[0-9a-f]{7,40}", r.run(e)[2]) for e in [None, *r.entries()]), r.name


def test_report_refuses_a_draft_or_a_dirty_result(tmp_path, monkeypatch):
    report = load_report()
    record = {"benchmark": "matmul", "device": "NVIDIA H200", "date": "2026-01-01", "commit": "5223dd2",
              "rows": [{"case": "x", "commit": "5223dd2-dirty"}]}
    (tmp_path / "matmul-h200.json").write_text(json.dumps(record))
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    with pytest.raises(SystemExit, match="no commit"):
        report.results()
    (tmp_path / "matmul-h200.json").write_text(json.dumps({**record, "rows": [], "draft": True}))
    with pytest.raises(SystemExit, match="draft"):
        report.results()
    (tmp_path / "matmul-h200.json").rename(tmp_path / "matmul-2026-01-01.json")
    with pytest.raises(SystemExit, match="named other than matmul-h200.json"):
        report.results()


NOTES = ROOT / "docs" / "notes"


def test_notes_are_undated_topic_pages_all_linked():
    """docs/notes/ holds topic pages (no date in a name), each in the notes' index; a link to a note from
    anywhere in the docs, the README, the code or the benchmarks names one that exists."""
    notes = {p.stem for p in NOTES.glob("*.md")} - {"index"}
    assert notes
    assert not [n for n in notes if re.match(r"\d{4}-\d{2}", n)], "a note's name starts with a date"
    index = (NOTES / "index.md").read_text()
    assert all(re.search(rf"^{re.escape(n)}$", index, re.M) for n in notes), "a note missing from the toctree"
    files = [README, *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "numba_tiles").rglob("*.py")),
             *sorted((ROOT / "lto_libs").rglob("*")), *sorted((ROOT / "benchmarks").glob("*.py"))]
    for path in (p for p in files if p.is_file() and "_build" not in p.parts):
        for name in re.findall(r"notes/([\w.-]+?)(?:\.md)?(?=[)#\s`]|$)", path.read_text(errors="ignore"), re.M):
            assert name == "index" or name in notes, f"{path.relative_to(ROOT)} links to notes/{name}"


@pytest.mark.parametrize("example, page", [("byte_histogram", "histogram"), ("segmented_scan", "scans"),
                                           ("segmented_sort", "sorts")])
def test_a_guide_shows_its_examples_kernel_as_the_example_has_it(example, page):
    """The pattern a guide teaches is the example's (which benchmarks/primitives.py times): its kernel and the
    module constants the kernel reads appear in the guide word for word."""
    import ast

    source = (ROOT / "examples" / f"{example}.py").read_text()
    text = (ROOT / "docs" / "guide" / f"{page}.md").read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    kernels = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.decorator_list
               and ast.unparse(n.decorator_list[0]) == "cuda.jit"]
    assert len(kernels) == 1, f"examples/{example}.py: expected one @cuda.jit kernel"
    kernel = kernels[0]
    body = "\n".join(lines[kernel.decorator_list[0].lineno - 1:kernel.end_lineno])
    assert body in text, f"docs/guide/{page}.md does not show examples/{example}.py's {kernel.name} as it is"
    read = {n.id for n in ast.walk(kernel) if isinstance(n, ast.Name)}
    for node in tree.body:
        if isinstance(node, ast.Assign) and {t.id for t in node.targets if isinstance(t, ast.Name)} & read:
            assert lines[node.lineno - 1] in text, f"docs/guide/{page}.md lacks {lines[node.lineno - 1]!r}"
