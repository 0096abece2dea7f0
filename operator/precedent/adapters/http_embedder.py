"""An OpenAI-compatible embeddings endpoint over httpx.

``POST {url}/embeddings`` with ``{"model": …, "input": [texts]}`` and, when an API key is set,
``Authorization: Bearer <key>``; the answer's ``data[i].embedding`` vectors are put back in
input order by ``data[i].index`` and L2-normalised. A request that times out, cannot connect,
or gets 429 or 5xx is retried with the shared ``RetryPolicy`` (exponential backoff with jitter);
anything else, or running out of retries, raises ``DependencyError`` naming the endpoint.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt

from precedent.core.embedding import l2_normalize
from precedent.core.resilience import RetryPolicy
from precedent.errors import DependencyError

__all__ = ["HttpEmbedder"]

_RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class HttpEmbedder:
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (implements ``Embedder``)."""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 2.0,
        retries: int = 3,
        backoff: float = 0.2,
        batch_size: int = 64,
        dimension: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not url:
            raise DependencyError("embedding endpoint URL is not set (PRECEDENT_EMBEDDING_URL)")
        if not model:
            raise DependencyError("embedding model is not set (PRECEDENT_EMBEDDING_MODEL)")
        self.url = url.rstrip("/") + "/embeddings"
        self.model = model
        self.retry = RetryPolicy(
            retries=retries, base_delay=backoff, max_delay=max(backoff * 8, 1.0)
        )
        self.batch_size = batch_size
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)
        self._dimension = dimension

    @property
    def name(self) -> str:
        """``http-<model>``."""
        return f"http-{self.model}"

    @property
    def dimension(self) -> int:
        """Vector length (asked of the endpoint once, with one short text, if not given)."""
        if self._dimension is None:
            self._dimension = int(self._request(["dimension probe"]).shape[1])
        return self._dimension

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit vectors, one row per text, in batches of ``batch_size``."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self._request(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        matrix = np.vstack(parts)
        if self._dimension is None:
            self._dimension = int(matrix.shape[1])
        elif matrix.shape[1] != self._dimension:
            raise DependencyError(
                f"{self.url}: returned vectors of dimension {matrix.shape[1]}, "
                f"expected {self._dimension}"
            )
        return l2_normalize(matrix)

    def _request(self, texts: list[str]) -> npt.NDArray[np.float32]:
        body = {"model": self.model, "input": texts}
        problem = ""
        for attempt in range(self.retry.attempts):
            if attempt:
                time.sleep(self.retry.delay(attempt, random.random))
            try:
                response = self._client.post(self.url, json=body)
            except httpx.TimeoutException:
                problem = "timed out"
                continue
            except httpx.TransportError as exc:
                problem = f"cannot connect: {exc}"
                continue
            if response.status_code in _RETRY_STATUS:
                problem = f"HTTP {response.status_code}"
                continue
            if response.status_code != 200:
                raise DependencyError(
                    f"{self.url}: HTTP {response.status_code}: {response.text[:200]}"
                )
            return self._parse(response, len(texts))
        raise DependencyError(f"{self.url}: {problem} (after {self.retry.attempts} attempts)")

    def _parse(self, response: httpx.Response, count: int) -> npt.NDArray[np.float32]:
        try:
            payload: Any = response.json()
            data = sorted(payload["data"], key=lambda item: int(item.get("index", 0)))
            rows = [item["embedding"] for item in data]
            matrix = np.asarray(rows, dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DependencyError(f"{self.url}: malformed embeddings response: {exc}") from None
        if matrix.ndim != 2 or len(matrix) != count:
            raise DependencyError(
                f"{self.url}: expected {count} embeddings, got shape {matrix.shape}"
            )
        return matrix
