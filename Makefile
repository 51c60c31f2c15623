# Two commands for a newcomer: `make demo` (set up everything, run the demo) and
# `make test` (set up everything, run every C++ and Python test).
VENV ?= .venv
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.requirements-installed
export CCACHE_DIR ?= $(CURDIR)/build/.ccache

.PHONY: demo test bench bench-compile fuzz-compile build system venv test-cpp test-python format lint clean

demo: build
	$(PYTHON) examples/demo.py

test: build
	$(MAKE) test-cpp test-python lint

# Not a test: neuron eager against PyTorch CPU eager, side by side; prints tables, writes JSON.
bench: build
	$(PYTHON) bench/run.py --markdown docs/performance.md

# Not a test: torch.compile on neuron against eager, Inductor on CPU and CPU eager; cold compiles.
bench-compile: build
	$(PYTHON) bench/compile_bench.py

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

format:
	find csrc -name '*.cpp' -o -name '*.h' | xargs $(VENV)/bin/clang-format -i
	$(VENV)/bin/ruff format python tests examples bench

lint:
	$(VENV)/bin/ruff check python tests examples bench

clean:
	rm -rf build python/openneuron/*.so
