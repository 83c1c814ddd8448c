# Two commands do all set-up on a fresh machine: `make demo` and `make test` (see README).
PYTHON ?= python3
CUDA   ?= cu13
# The other CUDA line's folders carry its name: .venv-cu12, .gpu-wheels-cu12, .gpu-site-cu12.
SUFFIX := $(if $(filter cu13,$(CUDA)),,-$(CUDA))
VENV   ?= .venv$(SUFFIX)
PY     := $(VENV)/bin/python
# The tests of the compile path (typing, C++, NVRTC, linking, SASS, the cache, downstream intrinsics); of them,
# those whose outcome depends on the toolkit (NVRTC, NVVM, nvJitLink, ptxas, the headers) are what
# `make test-compile CUDA=cu12` runs under the other CUDA line, a cuBLASDx GEMM kernel standing for the matmul.
COMPILE_TESTS := tests/cpu/test_compile.py tests/cpu/test_sass.py tests/cpu/test_library.py tests/cpu/test_errors.py \
                 tests/cpu/test_extending.py tests/cpu/test_cache.py tests/cpu/test_line_info.py tests/cpu/test_matmul.py
TOOLKIT_TESTS := tests/cpu/test_compile.py tests/cpu/test_sass.py tests/cpu/test_library.py tests/cpu/test_line_info.py \
                 tests/cpu/test_cache.py::test_cold_then_warm_process \
                 tests/cpu/test_cache.py::test_every_program_after_the_first_takes_the_precompiled_base \
                 tests/cpu/test_cache.py::test_cache_true_kernels_are_invalidated_by_toolchain_libraries_and_options \
                 tests/cpu/test_matmul.py::test_a_gemm_kernel_compiles_to_tensor_cores_without_local_memory \
                 tests/cpu/test_matmul.py::test_the_cuda_12_line_computes_hopper_tiles_without_libmathdx \
                 tests/cpu/test_random.py::test_a_drawing_loop_keeps_its_generator_in_registers

# The GPU machines have no package index and ship numpy 2.5 (which breaks numba-cuda 0.30):
# `make gpu-wheels` (here) downloads the pinned cp312 wheels they lack into .gpu-wheels/ (what the tests
# and benchmarks need, libmathdx included) and .gpu-wheels-extra/ (the notebooks' stack and the peers of
# the benchmarks): each folder fits the GPU machine's 64 MiB carry, both together do not.
# `make gpu-site` (there) installs .gpu-wheels/ with --no-index into .gpu-site/, and .gpu-wheels-extra/
# too when it was carried; `make gpu-site-extra` adds .gpu-wheels-extra/ to a .gpu-site/ made by an
# earlier call (the site stays on the machine between calls). `make gpu-test` runs the GPU tests.
# With CUDA=cu12 they are .gpu-wheels-cu12/ and .gpu-site-cu12/, which add the CUDA 12.9 NVRTC, nvJitLink,
# NVVM and runtime headers (the image has CUDA 13's; its r580 driver runs either line).
GPU_PYTHON  ?= python3
GPU_WHEELS  := .gpu-wheels$(SUFFIX)
GPU_EXTRA   := .gpu-wheels-extra$(SUFFIX)
GPU_SITE    := .gpu-site$(SUFFIX)
GPU_MLIR    := .gpu-wheels-mlir
CU12_PINS   := "cuda-bindings==12.9.*" "nvidia-cuda-nvrtc-cu12==12.9.*" "nvidia-nvjitlink-cu12==12.9.*" \
               "nvidia-cuda-nvcc-cu12==12.9.*" "nvidia-cuda-runtime-cu12==12.9.*"
GPU_PINS    := "numpy>=2.0,<2.5" "cuda-core==1.2.*" "cuda-pathfinder>=1.3" "nvidia-cuda-cccl==13.0.*" \
               "pytest-xdist==3.*" "execnet>=2.1" \
               $(if $(filter cu13,$(CUDA)),"cuda-bindings==13.0.*" "nvidia-libmathdx-cu13==0.4.1.*",$(CU12_PINS))
# Executing notebooks/ there (nbclient, ipykernel and their dependencies, resolved by pip), and the peers
# the benchmarks compare with: cuda-cccl 1.1.1's cuda.coop and cuda.compute (their dependencies are the image's).
GPU_NOTEBOOK_PINS := "nbclient==0.11.*" "nbformat==5.*" "ipykernel==7.*"
GPU_PEER_PINS := "cuda-cccl==1.1.1"
GPU_MATHDX_PIN := "nvidia-mathdx==25.6.*"
GPU_CURAND_PIN := $(if $(filter cu13,$(CUDA)),"nvidia-curand==10.4.0.*","nvidia-curand-cu12==10.3.10.*")
GPU_IMAGE_HAS := attrs-* packaging-* psutil-* pygments-* python_dateutil-* typing_extensions-* tzdata-*
GPU_PLATFORMS := --python-version 3.12 --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
                 --platform manylinux_2_26_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
                 --platform manylinux_2_12_x86_64
GPU_JOBS    ?= 12
# Two NVRTC workers a test process (a cuBLASDx program takes ~2 GB while it compiles).
# Under cu12 the CUDA 12 libraries are preloaded: cuda.pathfinder looks for CUDA 13's first in every
# site-packages, the image's included, and takes a library that is already loaded before any it finds.
CU12_LIBS   := cuda_nvrtc/lib/libnvrtc.so.12 cuda_nvrtc/lib/libnvrtc-builtins.so.12.9 nvjitlink/lib/libnvJitLink.so.12 \
               cuda_nvcc/nvvm/lib64/libnvvm.so
space       := $() $()
comma       := ,
GPU_ENV     := PYTHONPATH=$(CURDIR)/$(GPU_SITE):$(CURDIR) NUMBA_TILES_COMPILE_JOBS=2 \
               $(if $(filter cu13,$(CUDA)),,LD_PRELOAD=$(subst $(space),:,$(addprefix $(CURDIR)/$(GPU_SITE)/nvidia/,$(CU12_LIBS))))

.PHONY: venv test test-compile lint docs demo gpu-wheels gpu-wheels-mlir gpu-site gpu-site-extra gpu-site-mlir gpu-notebooks \
        gpu-test gpu-test-part gpu-test-mlir gpu-sanitize gpu-sanitize-tools benchmark clean

# The set-up, once, by uv (installed into the environment first): the same versions pip resolves, fetched and
# unpacked in parallel (the cu13 set: 7 s against pip's 39 s on 2 cores). It lists what it fetches, but under CI
# (CI set, as GitHub Actions does), whose log wants only the failures.
PIP_OUTPUT ?= $(if $(CI),--quiet,)
$(PY): pyproject.toml
	@echo "Installing numba_tiles and its $(CUDA) toolchain into $(VENV), once: about 1.4 GB of wheels (numba-cuda," \
	  "numba-cuda-mlir on cu13, NVRTC, nvJitLink, NVVM, CCCL and MathDx headers, libmathdx, the test and docs" \
	  "tools)."
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet "uv==0.*"
	$(VENV)/bin/uv pip install --python $(PY) $(PIP_OUTPUT) -e ".[$(CUDA),test$(if $(filter cu13,$(CUDA)),$(comma)mlir)]"
	touch $(PY)

venv: $(PY)

# Compiled-path tests (GPU ones skip without a GPU), then the simulator's; a worker process a CPU (NVRTC
# compiles one program at a time in a process, so a lone test's compile leaves the other cores idle).
# (worksteal: an idle worker takes tests queued for the other, so the cuBLASDx compiles do not pile up at the end)
# -rfEX: failures, errors and unexpected passes a line each; the skips (without a GPU, every GPU test) one line
# in all, counted by reason (tests/conftest.py). Skips exit 0; no test at all exits 5.
test: $(PY)
	$(PY) -m pytest tests -q -rfEX -n auto --dist worksteal --durations=15
	NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest tests -q -rfEX -n auto --dist worksteal

# The compile path's tests under one CUDA line (CUDA=cu12: in .venv-cu12, the toolkit-sensitive ones without
# those marked heavy, which compile cuBLASDx programs of their own, for sm_90 only where a test takes both
# archs, and the first case of each: `make test` runs every case under CUDA 13), and what doctor says of it.
test-compile: $(PY)
	$(PY) -m numba_tiles doctor | grep -E "^(CUDA line|NVRTC|nvJitLink|CCCL|CUDA headers|cuRAND headers) "
	$(PY) -m pytest $(if $(filter cu12,$(CUDA)),$(TOOLKIT_TESTS) -m "not heavy" -k "not sm_80" --one-case-each,$(COMPILE_TESTS)) \
	  -q -rfEX -n auto --dist worksteal

# ruff's checks over the repository (pyproject.toml: pyflakes, pycodestyle, import order; 120 columns) and mypy
# over the extension API's typed modules.
lint: $(PY)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

# The documentation site (docs/, Sphinx + MyST), warnings as errors: docs/_build/html/index.html.
docs: $(PY)
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

# The demo's last lines say how to use the environment it made (a plain `python` is not the one with numba).
demo: $(PY)
	$(PY) examples/segmented_sum.py
	@echo
	@echo "numba_tiles is installed in $(VENV), not in the python on your PATH. To use it, activate it in this"
	@echo "shell with  . $(VENV)/bin/activate  (then python first.py), or run $(PY) first.py"

benchmark: $(PY)
	$(PY) benchmarks/compile_latency.py

gpu-wheels:
	rm -rf $(GPU_WHEELS) $(GPU_EXTRA)
	$(PYTHON) -m pip download --quiet --only-binary=:all: --no-deps $(GPU_PLATFORMS) --dest $(GPU_WHEELS) $(GPU_PINS)
	$(PYTHON) -m pip download --quiet --only-binary=:all: --no-deps $(GPU_PLATFORMS) --dest $(GPU_EXTRA) \
	  $(GPU_PEER_PINS)
	$(PYTHON) -m pip download --quiet --only-binary=:all: $(GPU_PLATFORMS) --dest $(GPU_EXTRA) $(GPU_NOTEBOOK_PINS)
	cd $(GPU_EXTRA) && rm -f $(GPU_IMAGE_HAS)  # (the carry to the GPU machine is 64 MiB at most)
	# MathDx's wheel is 23 MB (121 MB unpacked): cuBLASDx, cuFFTDx (94 MB of it, mostly its database's PTX text),
	# cuRANDDx, commondx, CUTLASS and its metadata travel as 6.6 MB of xz (-9: a zip does not shrink, the text does),
	# not cuSOLVERDx or nvCOMPDx, which no intrinsic uses yet.
	$(PYTHON) -m pip download --quiet --only-binary=:all: --no-deps --dest $(GPU_WHEELS)/mathdx $(GPU_MATHDX_PIN)
	cd $(GPU_WHEELS)/mathdx && unzip -q nvidia_mathdx-*.whl 'nvidia/mathdx/include/cublasdx*' \
	  'nvidia/mathdx/include/cufftdx*' 'nvidia/mathdx/include/curanddx*' 'nvidia/mathdx/include/commondx/*' \
	  'nvidia/mathdx/external/*' \
	  'nvidia_mathdx-*.dist-info/*' && \
	  XZ_OPT=-9 tar cJf ../nvidia_mathdx-headers.tar.xz nvidia nvidia_mathdx-*.dist-info
	rm -rf $(GPU_WHEELS)/mathdx
	# cuRAND's wheel is 77 MB (its library); cuRANDDx needs only its device headers (2 MB), which travel as xz.
	$(PYTHON) -m pip download --quiet --only-binary=:all: --no-deps $(GPU_PLATFORMS) --dest $(GPU_WHEELS)/curand \
	  $(GPU_CURAND_PIN)
	cd $(GPU_WHEELS)/curand && unzip -q nvidia_curand*.whl 'nvidia/*/curand*.h' 'nvidia_curand*.dist-info/*' && \
	  XZ_OPT=-9 tar cJf ../nvidia_curand-headers.tar.xz nvidia nvidia_curand*.dist-info
	rm -rf $(GPU_WHEELS)/curand

# There: the carried wheels into .gpu-site/ (then PYTHONPATH=$PWD/.gpu-site:$PWD runs anything under cu13).
# Both folders' wheels in one pip call: `pip install --target` installs into a temporary folder, then moves
# each top-level entry of it into the target, skipping one that is there already (replacing it with
# --upgrade). The namespace package cuda/ is in both (cuda.bindings and cuda.core; cuda-cccl's cuda.coop and
# cuda.compute), as is bin/: a second call into the site would leave out its own, or with --upgrade drop the
# first's.
gpu-site:
	rm -rf $(GPU_SITE)
	$(GPU_PYTHON) -m pip install --quiet --no-index --no-deps --target $(GPU_SITE) $(GPU_WHEELS)/*.whl \
	  $(if $(wildcard $(GPU_EXTRA)/*.whl),$(GPU_EXTRA)/*.whl)
	tar xJf $(GPU_WHEELS)/nvidia_mathdx-headers.tar.xz -C $(GPU_SITE)
	tar xJf $(GPU_WHEELS)/nvidia_curand-headers.tar.xz -C $(GPU_SITE)

# Into a site made earlier: installed apart, then merged folder by folder (cp), for the reason above.
gpu-site-extra:
	extra=$$(mktemp -d) && \
	  $(GPU_PYTHON) -m pip install --quiet --no-index --no-deps --target $$extra $(GPU_EXTRA)/*.whl && \
	  cp -a $$extra/. $(GPU_SITE)/; status=$$?; rm -rf $$extra; exit $$status

# numba-cuda-mlir's cp312 wheel (68 MiB, over the 64 MiB carry) unpacked and packed again as tar.xz (47 MiB;
# the wheel itself is a zip that xz does not shrink) in .gpu-wheels-mlir/, carried in a call of its own;
# `make gpu-site-mlir` (there) unpacks it into a .gpu-site/ made by an earlier call (its dependencies, numpy,
# cuda-bindings and cuda-core, are there), and `make gpu-test-mlir` runs the GPU tests of the collectives and
# reductions (their sanitizer subset: every intrinsic and algorithm, each block shape, temp= sharing,
# back-to-back calls) and of tiles.Random with their kernels compiled by numba-cuda-mlir, and its Matmul kernels
# by mm.launch.
gpu-wheels-mlir:
	rm -rf $(GPU_MLIR) && mkdir -p $(GPU_MLIR)/unpacked
	$(PYTHON) -m pip download --quiet --only-binary=:all: --no-deps $(GPU_PLATFORMS) --dest $(GPU_MLIR) \
	  "numba-cuda-mlir==0.6.*"
	cd $(GPU_MLIR) && unzip -q numba_cuda_mlir-*.whl -d unpacked && \
	  tar cJf numba_cuda_mlir.tar.xz -C unpacked . && rm -rf unpacked numba_cuda_mlir-*.whl

gpu-site-mlir:
	tar xJf $(GPU_MLIR)/numba_cuda_mlir.tar.xz -C $(GPU_SITE)

gpu-test-mlir:
	$(GPU_ENV) NUMBA_TILES_TEST_COMPILER=mlir $(GPU_PYTHON) -c "import numba_cuda_mlir, numba_tiles._backends.mlir as m; \
	  print('numba-cuda-mlir', numba_cuda_mlir.__version__, 'adapter', m.available())"
	$(GPU_ENV) NUMBA_TILES_TEST_COMPILER=mlir $(GPU_PYTHON) -m pytest tests/gpu/test_collectives.py \
	  tests/gpu/test_reductions.py tests/gpu/test_random.py tests/gpu/test_solver.py \
	  tests/gpu/test_matmul.py::test_numba_cuda_mlir_kernels_launch_through_mm_launch \
	  --sanitize-subset -q -ra -p no:cacheprovider -n $(GPU_JOBS) $(GPU_TESTS)

# There, on a site with .gpu-wheels-extra/ (the notebooks' stack): both notebooks run in a Jupyter kernel on
# the GPU and are stored with their outputs, commit, device, date and code digest
# (tests/cpu/test_notebook_outputs.py checks them). The tree there has no .git: pass COMMIT=<short hash>;
# NOTEBOOKS_OUT=<dir> writes them there instead of in place.
gpu-notebooks:
	$(GPU_ENV) $(GPU_PYTHON) notebooks/refresh.py $(if $(COMMIT),--commit $(COMMIT)) $(if $(NOTEBOOKS_OUT),--out $(NOTEBOOKS_OUT))

gpu-test: gpu-site
	$(GPU_ENV) $(GPU_PYTHON) -c "import numpy, numba, numba.cuda, cuda.core; from numba_tiles import _toolchain as t; \
	  print('numpy', numpy.__version__, 'numba', numba.__version__, 'cuda.core', cuda.core.__version__, t.versions())"
	$(GPU_ENV) $(GPU_PYTHON) -m pytest tests/gpu -q -ra -p no:cacheprovider -n $(GPU_JOBS) \
	  --ignore=tests/gpu/test_notebooks_gpu.py $(GPU_TESTS)
	$(GPU_ENV) NUMBA_TILES_NOTEBOOK_OUT=$(CURDIR)/.gpu-notebooks $(GPU_PYTHON) -m pytest \
	  tests/gpu/test_notebooks_gpu.py -q -ra -p no:cacheprovider
	$(GPU_ENV) $(GPU_PYTHON) examples/segmented_sum.py
	$(GPU_ENV) $(GPU_PYTHON) examples/segmented_reduction.py
	$(GPU_ENV) $(GPU_PYTHON) examples/gemm.py
	$(GPU_ENV) $(GPU_PYTHON) examples/fft_convolution.py
	$(GPU_ENV) $(GPU_PYTHON) examples/monte_carlo.py
	$(GPU_ENV) $(GPU_PYTHON) examples/batched_cholesky.py

# There: one part of tests/gpu, PART=I/N (every N-th test from the I-th), with the slowest tests listed: a call
# of the GPU machine lasts at most 10 minutes, and the whole suite over an empty LTO-IR cache takes longer.
PART ?= 0/1
gpu-test-part:
	$(GPU_ENV) $(GPU_PYTHON) -m pytest tests/gpu -q -ra -p no:cacheprovider -n $(GPU_JOBS) \
	  --ignore=tests/gpu/test_notebooks_gpu.py --shard $(PART) --durations=10 $(GPU_TESTS)

# There: a representative subset of the GPU tests (tests/gpu/conftest.py: every intrinsic and algorithm,
# each block shape, temp= sharing, back-to-back calls) under compute-sanitizer's memcheck, racecheck and
# synccheck, one tool after the other (SANITIZE_TOOLS=memcheck for one); a finding fails the target.
# The subset first runs without the sanitizer, in parallel, to fill the LTO-IR cache the tools share.
# Under a tool it runs as SANITIZE_SHARDS processes at once, each a plain pytest over its share
# (--shard), each under its own compute-sanitizer: 14 xdist workers under one compute-sanitizer
# (--target-processes all) had not started a test after 150 s on the H200. Logs: .gpu-sanitize-logs/.
# SANITIZE_TESTS picks files, e.g. "tests/gpu/test_matmul.py tests/gpu/test_pipeline.py" for the matmul kernels.
SANITIZER       ?= compute-sanitizer
SANITIZE_TESTS  ?= tests/gpu
SANITIZE_TOOLS  ?= memcheck racecheck synccheck
SANITIZE_SHARDS ?= 8
SANITIZE_RUN    := -m pytest $(SANITIZE_TESTS) -q -p no:cacheprovider --sanitize-subset \
                   --ignore=tests/gpu/test_notebooks_gpu.py --ignore=tests/gpu/test_randomized.py \
                   --ignore=tests/gpu/test_kernel_cache.py
SANITIZE_ENV    := $(GPU_ENV) NUMBA_TILES_CACHE_DIR=$(CURDIR)/.gpu-sanitize-cache NUMBA_TILES_PREPARE=0
gpu-sanitize: gpu-site
	$(SANITIZE_ENV) $(GPU_PYTHON) $(SANITIZE_RUN) -n $(GPU_JOBS)
	$(MAKE) gpu-sanitize-tools

# The tools alone, over the cache that gpu-sanitize's first pass filled (one tool a call, where calls are short).
gpu-sanitize-tools:
	rm -rf .gpu-sanitize-logs && mkdir .gpu-sanitize-logs
	status=0; for tool in $(SANITIZE_TOOLS); do \
	  pids=""; for i in $$(seq 0 $$(($(SANITIZE_SHARDS) - 1))); do \
	    $(SANITIZE_ENV) $(SANITIZER) --tool $$tool --error-exitcode 99 $(GPU_PYTHON) $(SANITIZE_RUN) -p no:xdist \
	      --shard $$i/$(SANITIZE_SHARDS) > .gpu-sanitize-logs/$$tool-$$i.log 2>&1 & pids="$$pids $$!"; \
	  done; \
	  for pid in $$pids; do wait $$pid || status=1; done; \
	  echo "== $$tool: $$(grep -h -E '(ERROR|RACECHECK) SUMMARY' .gpu-sanitize-logs/$$tool-*.log | sort | uniq -c | xargs)"; \
	  grep -h -E '^[0-9]+ (passed|failed)|(passed|failed).* in [0-9.]+s' .gpu-sanitize-logs/$$tool-*.log; \
	done; exit $$status

clean:
	rm -rf .venv .venv-cu12 .gpu-wheels .gpu-wheels-cu12 .gpu-wheels-extra .gpu-wheels-extra-cu12 .gpu-site .gpu-site-cu12 .gpu-notebooks .gpu-sanitize-cache .gpu-sanitize-logs docs/_build
