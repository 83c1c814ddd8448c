"""Every docstring example in numba_tiles runs, and every public name has one (docs/api.md renders them); the
guide pages' and the README's code runs; the performance tables are what benchmarks/report.py makes of
benchmarks/results/ now."""

import ast
import importlib
import importlib.util
import inspect
import itertools
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from numba.cuda.dispatcher import CUDADispatcher

import numba_tiles as tiles
from numba_tiles import _spec, extending
from numba_tiles._operands import Operands

ROOT = Path(__file__).resolve().parents[2]

# ---- docstring examples ---------------------------------------------------------------------------------------

# A paragraph ending in ``Example...::`` introduces an example: the literal block after it. ``Example, continuing
# `Matmul`'s::`` runs that name's example first, in the same namespace (as a method's example uses the class's MM).
EXAMPLE = re.compile(r"^( *)(.*\bExamples?\b.*)::$")
CONTINUING = re.compile(r"continuing `([\w.]+)`'s")
# An example whose first line names a file (``// include/mine.cuh``) is a package's files, each starting so.
FILE = re.compile(r"^(?://|#) ([\w/]+\.(?:py|cuh|h))\n", re.MULTILINE)


def examples_in(doc):
    """``[(introduction, code)]`` of a docstring's examples."""
    lines, found = inspect.cleandoc(doc).splitlines(), []
    for i, line in enumerate(lines):
        match = EXAMPLE.match(line)
        if match:
            block = []
            for following in lines[i + 1 :]:
                if following.strip() and len(following) - len(following.lstrip()) <= len(match[1]):
                    break
                block.append(following)
            found.append((match[2], textwrap.dedent("\n".join(block)).strip("\n") + "\n"))
    return found


def attribute_docs(module):
    """{name: docstring} of a module's documented constants: a string right after the assignment, where Sphinx reads
    it."""
    body = ast.parse(inspect.getsource(module)).body
    return {
        target.id: inspect.cleandoc(after.value.value)
        for node, after in itertools.pairwise(body)
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        and isinstance(after, ast.Expr)
        and isinstance(after.value, ast.Constant)
        and isinstance(after.value.value, str)
        for target in getattr(node, "targets", [getattr(node, "target", None)])
        if isinstance(target, ast.Name)
    }


def docstrings():
    """{qualified name: docstring} of numba_tiles' modules, of what each defines (functions, intrinsics, classes,
    their methods, `Matmul`'s in-kernel methods among them) and of its documented constants."""
    for info in pkgutil.walk_packages(tiles.__path__, "numba_tiles."):
        importlib.import_module(info.name)
    found = {}
    for module in [sys.modules[name] for name in sorted(sys.modules) if name.split(".")[0] == "numba_tiles"]:
        found[module.__name__] = module.__doc__
        found.update({f"{module.__name__}.{name}": doc for name, doc in attribute_docs(module).items()})
        for name, value in vars(module).items():
            if getattr(value, "__module__", None) != module.__name__ or not callable(value):
                continue
            found[f"{module.__name__}.{name}"] = value.__doc__
            for attribute, member in vars(value).items() if inspect.isclass(value) else ():
                member = getattr(member, "__func__", member)  # (a classmethod's, a staticmethod's)
                member = getattr(member, "fget", member)  # (a property's)
                if inspect.isfunction(member) or isinstance(member, _spec.method):
                    found[f"{module.__name__}.{name}.{attribute}"] = member.__doc__
    return {name: doc for name, doc in found.items() if isinstance(doc, str)}


DOCSTRINGS = docstrings()
EXAMPLES = {name: examples for name, doc in DOCSTRINGS.items() for examples in [examples_in(doc)] if examples}


def key_of(value):
    """The `DOCSTRINGS` key of a module, class or function of numba_tiles."""
    if inspect.ismodule(value):
        return value.__name__
    return (
        f"{value.__module__}.{value.__qualname__}"
        if hasattr(value, "__qualname__")
        else f"{value.declaration.__module__}.{value.owner}.{value.name}"
    )  # (a Matmul method)


def continued(name):
    """The name whose example the examples of ``name`` continue, or None."""
    references = {m[1] for intro, _ in EXAMPLES[name] for m in [CONTINUING.search(intro)] if m}
    if not references:
        return None
    (reference,) = references
    scopes = [name.rsplit(".", n)[0] for n in range(1, name.count(".") + 1)]  # (numba_tiles.matmul.Matmul, ...)
    found = next((f"{scope}.{reference}" for scope in scopes if f"{scope}.{reference}" in EXAMPLES), None)
    if found is None:  # (a public name: Matmul for numba_tiles.Matmul)
        value = tiles
        for part in reference.removeprefix("numba_tiles").split(".")[int(reference.startswith("numba_tiles")) :]:
            value = getattr(value, part)
        found = key_of(value)
    assert found in EXAMPLES, f"{name}'s example continues {reference}'s, which has none"
    return found


def run_examples(name, namespace, folder):
    """Run the examples of ``name`` in ``namespace``; a package's files are written under ``folder`` and its Python
    files run, each with its ``__file__``."""
    for _, code in EXAMPLES[name]:
        parts = FILE.split(code)
        if parts[0].strip():
            exec(compile(code, f"<{name} example>", "exec"), namespace)
            continue
        for path, text in zip(parts[1::2], parts[2::2]):
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text)
            if path.endswith(".py"):
                namespace["__file__"] = str(folder / path)
                exec(compile(text, str(folder / path), "exec"), namespace)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_docstring_example_runs(name, tmp_path, monkeypatch):
    """Each example of a docstring in numba_tiles runs with no GPU (a launch waits under ``if cuda.is_available():``),
    after the one it continues: the kernel it compiles itself (``cubin = tiles.compile(...)``) is ELF, and the kernels
    it only defines compile for sm_90 with float32 arrays (but a kernel named ``bad``, a misuse). The cache's examples
    run on a cache of their own."""
    assert all(code.strip() for _, code in EXAMPLES[name]), f"{name}: an Example:: paragraph with no code after it"
    if name.split(".")[:2] == ["numba_tiles", "cache"]:
        monkeypatch.setenv("NUMBA_TILES_CACHE_DIR", str(tmp_path / "cache"))
    chain, earlier, namespace = [], continued(name), {"__name__": "example"}
    while earlier:
        chain.append(earlier)
        earlier = continued(earlier)
    for earlier in reversed(chain):
        run_examples(earlier, namespace, tmp_path)
    before = dict(namespace)
    run_examples(name, namespace, tmp_path)
    made = {key: value for key, value in namespace.items() if before.get(key) is not value}
    if "cubin" in made:  # the example compiles its kernel itself, with its own signature
        assert made["cubin"][:4] == b"\x7fELF"
        return
    for kernel in (v for v in made.values() if isinstance(v, CUDADispatcher)):
        if kernel.py_func.__name__ != "bad":
            assert tiles.compile(kernel, "void(float32[:], float32[:])", arch="sm_90")[:4] == b"\x7fELF"


def public():
    """{public name: its `DOCSTRINGS` key}: ``numba_tiles``' and ``numba_tiles.extending``'s ``__all__``, the functions
    of ``numba_tiles.cache``, the `Operands` that ``Matmul.operands`` makes, and the methods and properties of these
    classes."""
    names = {f"numba_tiles.{n}": getattr(tiles, n) for n in tiles.__all__}
    names.update({f"numba_tiles.extending.{n}": getattr(extending, n) for n in extending.__all__})
    names.update(
        {
            f"numba_tiles.cache.{n}": f
            for n, f in vars(tiles.cache).items()
            if inspect.isfunction(f) and f.__module__ == "numba_tiles.cache" and not n.startswith("_")
        }
    )
    names["numba_tiles.matmul.Operands"] = Operands
    for name, value in list(names.items()):
        if inspect.isclass(value):
            names.update(
                {
                    f"{name}.{n}": member
                    for n, member in vars(value).items()
                    if not n.startswith("_")
                    and (
                        inspect.isfunction(member)
                        or isinstance(member, (classmethod, staticmethod, property, _spec.method))
                    )
                }
            )
    keys = {}
    for name, value in names.items():
        value = getattr(value, "__func__", value)  # (a classmethod's)
        value = getattr(value, "fget", value)  # (a property's)
        if (
            inspect.ismodule(value)
            or inspect.isfunction(value)
            or inspect.isclass(value)
            or isinstance(value, _spec.method)
        ):
            keys[name] = key_of(value)
        else:  # a constant: documented where it is assigned
            short = name.rsplit(".", 1)[1]
            keys[name] = next(
                (
                    k
                    for k in DOCSTRINGS
                    if k.endswith(f".{short}") and vars(sys.modules[k.rsplit(".", 1)[0]]).get(short) is value
                ),
                name,
            )
    return keys


PUBLIC = public()


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_public_name_has_an_example(name):
    assert PUBLIC[name] in EXAMPLES, f"{name} ({PUBLIC[name]}) has no docstring example"


def test_matmuls_attributes_are_in_its_docstring():
    """What a `Matmul` holds is in its docstring, which the API page shows."""
    mm = tiles.Matmul((64, 64, 32), "float16")
    attributes = {name for name, value in vars(mm).items() if not name.startswith("_") and not callable(value)}
    assert {name for name in attributes if f"``{name}``" not in tiles.Matmul.__doc__} == set()


def test_the_defaults_docstrings_name_are_the_signatures():
    """A parameter's docstring line that names its default (``- ``op``: ``"-"`` (default), ...``) names the one in
    the signature, which the API page shows."""
    checked = 0
    for name in PUBLIC:
        value = getattr(tiles, name.removeprefix("numba_tiles."), None)
        if not callable(value) or not value.__doc__:
            continue
        for param, default in re.findall(r"^\s*- ``(\w+)``: [^`]*``([^`]+)`` \(default", value.__doc__, re.MULTILINE):
            assert inspect.signature(value).parameters[param].default == ast.literal_eval(default), (name, param)
            checked += 1
    assert checked >= 5


API = ROOT / "docs" / "api.md"


@pytest.fixture(scope="module")
def api_html(tmp_path_factory):
    """docs/api.md as Sphinx renders it (the whole of docs/, warnings as errors, as `make docs`)."""
    out = tmp_path_factory.mktemp("html")
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "docs", str(out)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return (out / "api.html").read_text()


def test_the_api_page_documents_every_public_name(api_html):
    """Each public name (one of its names, for an object public under two) has its entry on the API page, generated
    from its docstring, and a row in one of the page's tables at its top (modules and classes: their own)."""
    anchors = set(re.findall(r'<dt class="sig sig-object py" id="([^"]+)"', api_html))
    anchors |= set(re.findall(r'id="module-([\w.]+)"', api_html))
    names = {}
    for name, key in PUBLIC.items():
        names.setdefault(key, []).append(name)
    assert [found for found in names.values() if not anchors & set(found)] == []
    tabled = set(re.findall(r"^   (numba_tiles[\w.]*)$", API.read_text(), re.MULTILINE))
    top = {f"numba_tiles.{n}" for n in tiles.__all__} | {"numba_tiles.extending"}
    assert top - tabled == set()


def test_the_api_pages_conventions_are_what_the_code_accepts():
    """docs/api.md's conventions list the dtypes, the ops' names, the most threads a block has and each family's
    algorithms that the intrinsics accept."""
    from numba_tiles import _dtypes, _params, block, ops

    def bullet(name):
        return re.search(rf"^- \*\*{name}\*\*: (.*?)(?=^- |^$)", API.read_text(), re.DOTALL | re.MULTILINE)[1]

    assert re.findall(r"`(\w+)`", bullet("dtypes")) == [d.name for d in _dtypes.SCALARS]
    assert set(re.findall(r'`"([^"`]+)"`', bullet("ops"))) == {s for s in ops._SPELLINGS if isinstance(s, str)}
    assert f"at most {_params.MAX_THREADS} threads" in bullet("block_dim")
    families = {
        "reductions": block._REDUCE_ALGORITHMS,
        "scans": block._SCAN_ALGORITHMS,
        "loads and stores": block._LOAD_ALGORITHMS | block._STORE_ALGORITHMS,
        "histograms": block._HISTOGRAM_ALGORITHMS,
    }
    listed = {}
    for part in " ".join(bullet("algorithm").split()).split(";"):
        family, names = re.match(r"\s*(?:CUB's, per intrinsic: )?([a-z ]+?) (`.*)", part, re.DOTALL).groups()
        listed[family] = set(re.findall(r'`"(\w+)"`', names))
    assert listed == {family: set(names) for family, names in families.items()}


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
    result = subprocess.run(
        [sys.executable, "-c", "\n".join(python_blocks(page))],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]


README = ROOT / "README.md"
# A README block runs where the line above it says: `<!-- readme-test: simulator compiled -->` (in one or
# both of the two processes), or `error` (a ```text block: the message compiling the bad kernel below gives).
README_BLOCK = re.compile(r"^<!-- readme-test: ([a-z ]+) -->\n```(\w+)\n(.*?)^```", re.S | re.M)


def readme_blocks():
    """The README's tested blocks in order: (modes, language, code)."""
    return [(modes.split(), language, code) for modes, language, code in README_BLOCK.findall(README.read_text())]


def test_every_readme_python_block_is_tested():
    untested = len(re.findall(r"^```python\n", README.read_text(), re.M))
    assert untested == sum(language == "python" for _, language, _ in readme_blocks()), (
        "a ```python block of README.md has no <!-- readme-test: simulator|compiled --> line above it"
    )


@pytest.mark.parametrize("mode", ["simulator", "compiled"])
def test_readme_code_runs(mode):
    """The README's python blocks of one mode run in order in a fresh process: on Numba's simulator (the
    first kernel's launch, checked against NumPy), or compiled for sm_90 with no GPU (tiles.compile)."""
    code = "\n".join(c for modes, language, c in readme_blocks() if language == "python" and mode in modes)
    assert code
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if mode == "simulator":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=900
    )
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
    out = subprocess.run(
        ["make", "-s", "demo", f"PY={python}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
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
        assert report.render(text, found) == text, (
            f"{path.relative_to(ROOT)} differs from benchmarks/results/: run python benchmarks/report.py"
        )
    assert names == set(report.BLOCKS), "every generated block appears in one of report.TARGETS"
    assert report.compile_times_module(found) == report.COMPILE_TIMES.read_text(), (
        "numba_tiles/_compile_times.py differs from benchmarks/results/: run python benchmarks/report.py"
    )


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
    record = {
        "benchmark": "matmul",
        "device": "NVIDIA H200",
        "date": "2026-01-01",
        "commit": "5223dd2",
        "rows": [{"case": "x", "commit": "5223dd2-dirty"}],
    }
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
    files = [
        README,
        *sorted((ROOT / "docs").rglob("*.md")),
        *sorted((ROOT / "numba_tiles").rglob("*.py")),
        *sorted((ROOT / "lto_libs").rglob("*")),
        *sorted((ROOT / "benchmarks").glob("*.py")),
    ]
    for path in (p for p in files if p.is_file() and "_build" not in p.parts):
        for name in re.findall(r"notes/([\w.-]+?)(?:\.md)?(?=[)#\s`]|$)", path.read_text(errors="ignore"), re.M):
            assert name == "index" or name in notes, f"{path.relative_to(ROOT)} links to notes/{name}"


@pytest.mark.parametrize(
    "example, page", [("byte_histogram", "histogram"), ("segmented_scan", "scans"), ("segmented_sort", "sorts")]
)
def test_a_guide_shows_its_examples_kernel_as_the_example_has_it(example, page):
    """The pattern a guide teaches is the example's (which benchmarks/primitives.py times): its kernel and the
    module constants the kernel reads appear in the guide word for word."""
    import ast

    source = (ROOT / "examples" / f"{example}.py").read_text()
    text = (ROOT / "docs" / "guide" / f"{page}.md").read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    kernels = [
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.decorator_list and ast.unparse(n.decorator_list[0]) == "cuda.jit"
    ]
    assert len(kernels) == 1, f"examples/{example}.py: expected one @cuda.jit kernel"
    kernel = kernels[0]
    body = "\n".join(lines[kernel.decorator_list[0].lineno - 1 : kernel.end_lineno])
    assert body in text, f"docs/guide/{page}.md does not show examples/{example}.py's {kernel.name} as it is"
    read = {n.id for n in ast.walk(kernel) if isinstance(n, ast.Name)}
    for node in tree.body:
        if isinstance(node, ast.Assign) and {t.id for t in node.targets if isinstance(t, ast.Name)} & read:
            assert lines[node.lineno - 1] in text, f"docs/guide/{page}.md lacks {lines[node.lineno - 1]!r}"
