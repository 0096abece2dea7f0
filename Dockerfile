# Build stage: the same install as `make` (pip from pyproject.toml), as wheels.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator ./operator
# The CRDs go into the wheel as data files; the sandbox API server (sandbox/) is not copied:
# the image carries the product only.
COPY crds ./crds
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

# Final stage: wheels only, no build tools, non-root, read-only friendly.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links=/wheels precedent \
    && rm -rf /wheels
WORKDIR /app
COPY data ./data
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["kopf"]
CMD ["run", "-m", "precedent.handlers", "--all-namespaces", "--standalone", "--liveness=http://0.0.0.0:8080/healthz"]
