# Two commands for a newcomer: `make demo` (set up everything, run the demo) and
# `make test` (set up everything, run every C++ and Python test).
VENV ?= .venv
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.requirements-installed
export CCACHE_DIR ?= $(CURDIR)/build/.ccache

.PHONY: demo test test-upstream test-upstream-large test-upstream-dynamo test-openreg conformance test-avx2 test-sanitize test-tsan test-wheel wheel bench bench-avx2 bench-compile bench-adaptive fuzz-compile build system venv test-cpp test-python format lint clean

demo: build
	$(PYTHON) examples/demo.py

test: build
	$(MAKE) test-cpp test-python test-wheel lint

# Every test as an AVX2-only CPU would run it: our kernels, oneDNN and OpenBLAS capped at
# AVX2 (and torch's own CPU kernels, MKL and oneDNN likewise, for the comparisons).
AVX2_CAP := OPENNEURON_MAX_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell \
	ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2
test-avx2: build
	$(AVX2_CAP) $(MAKE) test-cpp test-python

# The C++ suites under ASan+UBSan, then the Python tests that exercise the runtime against a
# bridge built the same way (in build-asan/python; torch itself is not instrumented); and the
# runtime and kernel suites under TSan (build-tsan, no bridge). Suppressions, each with its
# reason, are in scripts/sanitizers/.
# -O1 with line tables only: sanitized builds of the kernel templates at -O2 -g take hours on
# 2 cores; -O1 keeps reports exact and stack traces readable.
SANITIZER_CMAKE = cmake -S . -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1"
JOBS ?= 2
SANITIZE_PYTHON_TESTS := tests/test_device.py tests/test_memory.py tests/test_streams_events.py \
	tests/test_errors.py tests/test_fallback.py tests/test_adaptive_eager.py tests/test_rng.py \
	tests/test_workloads.py
test-sanitize: venv
	$(SANITIZER_CMAKE) -B build-asan -DOPENNEURON_SANITIZE=address,undefined -DOPENNEURON_BUILD_BRIDGE=ON \
		-DPython3_EXECUTABLE=$(CURDIR)/$(PYTHON) \
		-DOPENNEURON_MODULE_OUTPUT_DIR=$(CURDIR)/build-asan/python/openneuron
	cmake --build build-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/sanitizers/lsan.supp \
	ctest --test-dir build-asan --output-on-failure -j 2
	bash scripts/sanitizers/run_python_tests.sh $(PYTHON) $(CURDIR)/build-asan $(SANITIZE_PYTHON_TESTS)

test-tsan: venv
	$(SANITIZER_CMAKE) -B build-tsan -DOPENNEURON_SANITIZE=thread -DOPENNEURON_BUILD_BRIDGE=OFF
	cmake --build build-tsan -j $(JOBS)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/scripts/sanitizers/tsan.supp \
	ctest --test-dir build-tsan --output-on-failure -j 2

# A wheel in dist/ (pip wheel --no-build-isolation, reusing build/), and a test that installs
# it into a fresh virtual environment beside torch 2.13.0 and runs a smoke test there.
wheel: venv
	$(PYTHON) -m pip wheel --no-build-isolation --no-deps -w dist .

test-wheel: wheel
	$(PYTHON) -m pytest tests/wheel_install_check.py -q

# Not a test: neuron eager against PyTorch CPU eager, side by side; prints tables, writes JSON.
bench: build
	$(PYTHON) bench/run.py --markdown docs/performance.md

# The same under the AVX2 cap on both sides (AVX2_CAP above), as on a CPU without AVX-512.
bench-avx2: build
	$(PYTHON) bench/run.py --max-cpu-isa avx2 --markdown docs/performance.md

# Not a test: torch.compile on neuron against eager, Inductor on CPU and CPU eager; cold compiles.
bench-compile: build
	$(PYTHON) bench/compile_bench.py

# Not a test: plain eager against adaptive eager on the training workloads and a 1-element op.
bench-adaptive: build
	$(PYTHON) bench/adaptive_eager_bench.py

# The compile fuzzer's soak run (make test runs a fixed slice of it).
fuzz-compile: build
	$(PYTHON) -m tests.compile_fuzz --graphs 10000

system:
	bash scripts/install_system_packages.sh

$(STAMP): requirements.txt
	$(MAKE) system
	test -x $(PYTHON) || python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip setuptools wheel
	$(PYTHON) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

venv: $(STAMP)

# Installs the package in editable mode; its build runs CMake for the C++ libraries,
# their GoogleTest suites and the torch bridge.
build: $(STAMP)
	$(PYTHON) -m pip install --quiet --no-build-isolation --no-deps -e .

test-cpp:
	ctest --test-dir build --output-on-failure -j 2

test-python:
	$(PYTHON) -m pytest tests -q

# Not in make test: PyTorch's own device-generic test files from a PyTorch checkout
# (PYTORCH_SRC=/path/to/pytorch), on neuron and on cpu; see tests/upstream/README.md.
test-upstream: build
	$(PYTHON) -m tests.upstream.run --pytorch-src "$(PYTORCH_SRC)"

# Not in make test: PyTorch's largest device-generic files (test_torch.py, test_autograd.py,
# test_ops.py), each on its selection within a time budget; see tests/upstream/README.md.
test-upstream-large: build
	$(PYTHON) -m tests.upstream.run --pytorch-src "$(PYTORCH_SRC)" --large --budget 1800 \
		--json build/upstream-large/results.json

# Not in make test: PyTorch's own test/dynamo files on neuron (default device, our backend)
# and on cpu; see tests/upstream/README.md.
test-upstream-dynamo: build
	$(PYTHON) -m tests.upstream.run_dynamo --pytorch-src "$(PYTORCH_SRC)"

# Not in make test: the test suite of OpenReg (PyTorch's reference PrivateUse1 backend) from a
# PyTorch checkout, ported to neuron at run time; see tests/upstream/README.md.
test-openreg: build
	$(PYTHON) -m tests.upstream.run_openreg --pytorch-src "$(PYTORCH_SRC)"

# Not in make test: the full OpInfo/ModuleInfo sweep; writes docs/op_coverage.md and .json.
conformance: build
	nice -n 10 $(PYTHON) -m tests.conformance.report

format:
	find csrc -name '*.cpp' -o -name '*.h' | xargs $(VENV)/bin/clang-format -i
	$(VENV)/bin/ruff format python tests examples bench

lint:
	$(VENV)/bin/ruff check python tests examples bench

clean:
	rm -rf build python/openneuron/*.so
