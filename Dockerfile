# syntax=docker/dockerfile:1
# The operator image: the product only (the sandbox API server is not copied), installed from
# uv.lock with hashes checked, exactly as `make` installs it.
#
# Base image pinned by digest (python:3.11-slim, multi-arch index). To bump it:
#   docker buildx imagetools inspect python:3.11-slim   # prints the index digest
# then replace the digest in both FROM lines (and build and run `make test` against the image).
# The compiled core (native/): Rust with PyO3, crates from native/Cargo.lock (--locked), built into
# a wheel by maturin (tools/maturin.txt, hash-pinned, the release uv.lock holds). The Rust toolchain
# comes from the official rust image; pin its digest as above when bumping the release.
FROM rust:1.95-slim-bookworm AS rust
FROM python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7 AS native
ENV RUSTUP_HOME=/usr/local/rustup \
    CARGO_HOME=/usr/local/cargo \
    PATH=/usr/local/cargo/bin:$PATH \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=rust /usr/local/rustup /usr/local/rustup
COPY --from=rust /usr/local/cargo /usr/local/cargo
# The linker rustc calls.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY tools/maturin.txt tools/maturin.txt
RUN pip install --no-cache-dir --require-hashes --no-deps -r tools/maturin.txt
COPY native ./native
RUN maturin build --release --locked --interpreter python3.11 -m native/Cargo.toml -o /wheels

FROM python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7 AS build
ENV UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PROJECT_ENVIRONMENT=/opt/precedent \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# uv, hash-pinned (tools/uv.txt), the same release make uses.
COPY tools/uv.txt tools/uv.txt
RUN pip install --no-cache-dir --require-hashes --no-deps -r tools/uv.txt
# Dependencies first, from the lockfile alone: a source change does not rebuild this layer.
# The sandbox is a workspace member, so its pyproject.toml is needed to read the lock; it is in
# the `dev` group, which --no-dev leaves out.
COPY pyproject.toml uv.lock ./
COPY sandbox/pyproject.toml sandbox/pyproject.toml
RUN uv sync --frozen --no-dev --no-install-project --no-install-workspace --no-editable
# Then the product itself (the CRDs go into the wheel as data files).
COPY README.md ./
COPY operator ./operator
COPY crds ./crds
RUN uv sync --frozen --no-dev --no-editable
# The compiled core beside it (Precedent computes the same features in Python without it).
COPY --from=native /wheels /wheels
RUN uv pip install --python /opt/precedent/bin/python --no-deps /wheels/*.whl

# Final stage: the venv only, no build tools, non-root, read-only friendly.
FROM python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="precedent" \
      org.opencontainers.image.description="A Kubernetes operator that scores remediation requests against incident history and picks a playbook." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/precedent-dev/precedent" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11-slim"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/precedent/bin:$PATH
COPY --from=build /opt/precedent /opt/precedent
WORKDIR /app
COPY data ./data
USER 65532:65532
EXPOSE 8080 9090
# The health endpoint kopf serves; the Deployment probes the same path.
HEALTHCHECK --interval=20s --timeout=5s CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"]
ENTRYPOINT ["kopf"]
# The same arguments as manifests/deployment.yaml: two replicas meet in the `precedent` peering
# object (crds/clusterkopfpeerings.yaml and manifests/peering.yaml), one active at a time.
CMD ["run", "-m", "precedent.handlers", "--namespace=*", "--peering=precedent", "--liveness=http://0.0.0.0:8080/healthz"]
