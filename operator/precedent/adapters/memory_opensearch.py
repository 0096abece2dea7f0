"""The fleet memory in OpenSearch, through opensearch-py's ``AsyncOpenSearch`` (seed 001).

:class:`OpenSearchMemory` implements the core's ``IncidentMemory`` port. The client is a seam:
the operator builds one from settings (:func:`build_client`), tests pass openmock's
``AsyncFakeOpenSearch`` or a real client over a recorded connection. Every client error
becomes a :class:`MemoryFailure` whose message is one line naming what is wrong (auth,
unreachable, index missing, throttled, mapping mismatch) and never carries the secret.

The client itself never retries (``max_retries=0``): the per-request deadline and the circuit
breaker live in the service, and background writes have their own bounded retries.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from opensearchpy import AsyncOpenSearch
from opensearchpy.exceptions import (
    AuthenticationException,
    AuthorizationException,
    ConnectionError,
    ConnectionTimeout,
    NotFoundError,
    SSLError,
    TransportError,
)

from precedent.core.memory_query import (
    MemoryQuery,
    ParsedHits,
    VectorField,
    parse_hits,
    vector_field_of,
)
from precedent.core.memory_query import search_body as seed_search_body
from precedent.core.ports import MemoryFailure

__all__ = [
    "MANIFEST_DIR",
    "OpenSearchMemory",
    "build_client",
    "describe_failure",
    "load_index_manifests",
]

MANIFEST_DIR = Path(__file__).resolve().parents[3] / "manifests" / "opensearch"
"""The index mapping and index template shipped in the repository."""

_UNSET: Any = object()


def describe_failure(exc: BaseException, where: str) -> MemoryFailure:
    """The one-line failure for a client error raised while talking to ``where``."""
    if isinstance(exc, MemoryFailure):
        return exc
    if isinstance(exc, AuthenticationException):
        return MemoryFailure("auth", f"{where}: authentication failed (401): check the credentials")
    if isinstance(exc, AuthorizationException):
        return MemoryFailure("auth", f"{where}: permission denied (403): {_reason(exc)}")
    if isinstance(exc, NotFoundError):
        return MemoryFailure(
            "not_found",
            f"{where}: {_reason(exc)} (404): create it with `precedent memory init`",
        )
    if isinstance(exc, ConnectionTimeout):
        return MemoryFailure("timeout", f"{where}: timed out")
    if isinstance(exc, SSLError):
        return MemoryFailure("unreachable", f"{where}: TLS failed: {_first_line(exc)}")
    if isinstance(exc, ConnectionError):
        if "CERTIFICATE_VERIFY_FAILED" in str(exc):  # aiohttp's, raised as a ConnectionError
            return MemoryFailure(
                "unreachable",
                f"{where}: TLS failed: the server's certificate is not trusted: set "
                "PRECEDENT_MEMORY_CA_BUNDLE to the CA that signed it",
            )
        return MemoryFailure("unreachable", f"{where}: unreachable: {_first_line(exc)}")
    if isinstance(exc, TransportError):
        status = exc.status_code
        if status == 429:
            return MemoryFailure("throttled", f"{where}: too many requests (429): try again later")
        if status == 400 and "mapper_parsing" in str(exc.error) + str(exc.info):
            return MemoryFailure("mapping", f"{where}: mapping mismatch: {_reason(exc)}")
        return MemoryFailure("error", f"{where}: HTTP {status}: {_reason(exc)}")
    return MemoryFailure("error", f"{where}: {type(exc).__name__}: {_first_line(exc)}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


def _reason(exc: TransportError) -> str:
    """OpenSearch's ``error.type``/``error.reason`` when the body has them (a failed search's
    first root cause)."""
    info = exc.info
    if isinstance(info, str):
        try:
            info = json.loads(info)
        except ValueError:
            return str(exc.error)
    if isinstance(info, Mapping):
        error = info.get("error")
        causes = error.get("root_cause") if isinstance(error, Mapping) else None
        if (
            isinstance(error, Mapping)
            and error.get("type") == "search_phase_execution_exception"
            and isinstance(causes, list)
            and causes
            and isinstance(causes[0], Mapping)
        ):
            # "all shards failed" says nothing: the shards' own reason does (a query the
            # mapping refuses, e.g. a vector of another dimension).
            error = causes[0]
        if isinstance(error, Mapping):
            kind, reason = error.get("type"), error.get("reason")
            return f"{kind}: {reason}" if kind and reason else str(kind or reason)
        if isinstance(error, str):
            return error
    return str(exc.error)


def build_client(
    url: str,
    *,
    auth: str = "none",
    api_key: str | None = None,
    username: str = "",
    password: str | None = None,
    aws_region: str = "",
    aws_service: str = "es",
    timeout_seconds: float = 2.0,
    verify_tls: bool = True,
    ca_bundle: Path | None = None,
    connection_class: Any = _UNSET,
) -> AsyncOpenSearch:
    """An ``AsyncOpenSearch`` for ``url`` with the configured auth and TLS; no retries.

    ``connection_class`` replaces the HTTP connection (tests: recorded responses).
    """
    options: dict[str, Any] = {
        "hosts": [url],
        "timeout": timeout_seconds,
        "max_retries": 0,
        "retry_on_timeout": False,
        "verify_certs": verify_tls,
        "ssl_show_warn": False,
    }
    if url.startswith("https://"):
        options["use_ssl"] = True
        if ca_bundle is not None:
            if not ca_bundle.is_file():
                raise MemoryFailure(
                    "error", f"PRECEDENT_MEMORY_CA_BUNDLE: no such file {ca_bundle}"
                )
            context = ssl.create_default_context(cafile=str(ca_bundle))
            if not verify_tls:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            # With a context, opensearch-py ignores verify_certs (and warns at every client
            # it builds): the context alone says how to verify.
            options["ssl_context"] = context
            del options["verify_certs"], options["ssl_show_warn"]
    if auth == "api_key" and api_key:
        options["headers"] = {"Authorization": f"ApiKey {api_key}"}
    elif auth == "basic":
        options["http_auth"] = (username, password or "")
    elif auth == "aws_sigv4":
        options["http_auth"] = _sigv4(aws_region, aws_service)
    if connection_class is not _UNSET:
        options["connection_class"] = connection_class
    return AsyncOpenSearch(**options)


def _sigv4(region: str, service: str) -> Any:
    try:
        import boto3  # type: ignore[import-not-found, unused-ignore]
        from opensearchpy import AWSV4SignerAsyncAuth
    except ImportError:
        raise MemoryFailure(
            "auth", "PRECEDENT_MEMORY_AUTH=aws_sigv4 needs boto3: pip install boto3"
        ) from None
    credentials = boto3.Session().get_credentials()
    if credentials is None:
        raise MemoryFailure("auth", "aws_sigv4: no AWS credentials found (IRSA, env or profile)")
    return AWSV4SignerAsyncAuth(credentials, region, service)


def load_index_manifests(directory: Path = MANIFEST_DIR) -> tuple[dict[str, Any], dict[str, Any]]:
    """The index body (settings + mappings) and the index template shipped in ``directory``."""
    bodies = []
    for name in ("index.json", "index-template.json"):
        path = directory / name
        try:
            bodies.append(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            raise MemoryFailure("mapping", f"{path}: no such file") from None
        except ValueError as exc:
            raise MemoryFailure("mapping", f"{path}: not JSON: {exc}") from None
    return bodies[0], bodies[1]


class OpenSearchMemory:
    """``IncidentMemory`` over one OpenSearch index."""

    def __init__(
        self,
        client: AsyncOpenSearch,
        *,
        index: str,
        url: str = "",
        detect_vector: bool = True,
    ) -> None:
        self.client = client
        self.index = index
        self.url = url
        # None until detected; detection happens once (a failed detection is retried).
        self._detect = detect_vector
        self._vector: VectorField | object | None = _UNSET if detect_vector else None

    @property
    def location(self) -> str:
        """``URL/index`` (no credentials: they never go in the URL)."""
        return f"{self.url.rstrip('/')}/{self.index}" if self.url else self.index

    async def vector_field(self) -> VectorField | None:
        """The index's ``knn_vector`` field, read from its mapping the first time (and again
        after :meth:`forget_mapping`)."""
        if self._vector is _UNSET:
            try:
                mapping = await self.client.indices.get_mapping(index=self.index)
            except Exception as exc:  # the client raises many types; one line each
                raise describe_failure(exc, f"memory {self.location}") from None
            self._vector = vector_field_of(mapping)
        return self._vector if isinstance(self._vector, VectorField) else None

    def forget_mapping(self) -> None:
        """Read the mapping again at the next :meth:`vector_field` (it may have changed)."""
        if self._detect:
            self._vector = _UNSET

    def _forget_mapping_after(self, exc: BaseException) -> None:
        # 400 (a query or document the mapping refuses, e.g. a vector of another dimension)
        # and 404 (the index deleted, perhaps re-created otherwise): the mapping read once
        # may no longer be the index's.
        if isinstance(exc, TransportError) and exc.status_code in (400, 404):
            self.forget_mapping()

    async def search(self, query: MemoryQuery) -> ParsedHits:
        """Seed 001's search; the knn clause only when the mapping has a vector field."""
        body = seed_search_body(query)
        try:
            response = await self.client.search(index=self.index, body=body)
        except Exception as exc:
            self._forget_mapping_after(exc)
            raise describe_failure(exc, f"memory {self.location}") from None
        if not isinstance(response, Mapping):
            raise MemoryFailure("error", f"memory {self.location}: answer is not a JSON object")
        return parse_hits(response)

    async def upsert(self, documents: Sequence[tuple[str, Mapping[str, Any]]]) -> int:
        """Bulk ``index`` by id (replacing: idempotent); a rejected document fails the call."""
        if not documents:
            return 0
        lines: list[Mapping[str, Any]] = []
        for doc_id, document in documents:
            lines.append({"index": {"_index": self.index, "_id": doc_id}})
            lines.append(document)
        try:
            response = await self.client.bulk(body=lines)
        except Exception as exc:
            self._forget_mapping_after(exc)
            raise describe_failure(exc, f"memory {self.location}") from None
        if response.get("errors"):
            self.forget_mapping()  # a rejected document: the mapping may have changed
            for item in response.get("items") or []:
                result: Mapping[str, Any] = (
                    next(iter(item.values()), {}) if isinstance(item, Mapping) else {}
                )
                error = result.get("error")
                if error:
                    kind = error.get("type", "") if isinstance(error, Mapping) else str(error)
                    reason = error.get("reason", "") if isinstance(error, Mapping) else ""
                    category = "mapping" if "mapper_parsing" in kind else "error"
                    if result.get("status") == 429:
                        category = "throttled"
                    raise MemoryFailure(
                        category,  # type: ignore[arg-type]
                        f"memory {self.location}: document {result.get('_id')}: {kind}: {reason}",
                    )
        return len(documents)

    async def create_index(self, directory: Path = MANIFEST_DIR) -> str:
        """Create the index template and the index from the shipped manifests.

        Returns ``created`` or ``exists``; an existing index whose mapping lacks a field the
        manifests declare is a mapping mismatch.
        """
        index_body, template = load_index_manifests(directory)
        template = {**template, "index_patterns": [f"{self.index}*"]}
        where = f"memory {self.location}"
        try:
            await self.client.indices.put_index_template(name=self.index, body=template)
            exists = await self.client.indices.exists(index=self.index)
            if not exists:
                await self.client.indices.create(index=self.index, body=index_body)
                return "created"
            mapping = await self.client.indices.get_mapping(index=self.index)
        except Exception as exc:
            raise describe_failure(exc, where) from None
        wanted = index_body.get("mappings", {}).get("properties", {})
        have: dict[str, Any] = {}
        for body in mapping.values():
            have.update(((body or {}).get("mappings") or {}).get("properties") or {})
        for name, spec in sorted(wanted.items()):
            if name not in have:
                raise MemoryFailure("mapping", f"{where}: mapping mismatch: field {name} missing")
            if have[name].get("type") != spec.get("type"):
                raise MemoryFailure(
                    "mapping",
                    f"{where}: mapping mismatch: field {name} is {have[name].get('type')}, "
                    f"expected {spec.get('type')}",
                )
        return "exists"

    async def aclose(self) -> None:
        """Close the client's connections."""
        await self.client.close()
