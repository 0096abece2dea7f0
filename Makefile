# Two set-up commands: `make demo` and `make test`. Everything installs into .venv from pyproject.toml.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python

.PHONY: demo test lint typecheck unit bench clean install install-dev

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: install
	$(BIN)/precedent demo

lint: install-dev
	$(BIN)/ruff check operator tests
	$(BIN)/ruff format --check operator tests
	$(BIN)/lint-imports

typecheck: install-dev
	$(BIN)/mypy

unit: install-dev
	$(BIN)/pytest -q tests/unit

test: lint typecheck
	$(BIN)/pytest -q

bench: install-dev
	$(PY) -m tests.bench

clean:
	rm -rf $(VENV) build *.egg-info operator/*.egg-info .pytest_cache .mypy_cache .ruff_cache
