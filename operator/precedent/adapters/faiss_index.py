"""The FAISS incident index: exact inner product by default, IVF above a configurable size.

- Exact (seed 002): ``IndexIDMap2(IndexFlatIP)`` over L2-normalised vectors, so the inner
  product is the cosine. Incidents are added and removed by id, one at a time or in bulk.
- Approximate: once the index holds ``approximate_threshold`` vectors it is rebuilt once as
  ``IndexIVFScalarQuantizer`` (inner product, ``nlist ≈ 4·√n`` lists, trained on a sample)
  with 16-bit float codes (``fp16``, 1 KiB per 512-dimension vector, the default) or 8-bit
  codes (``sq8``, 512 bytes): near-duplicate incidents differ by less than the 8-bit
  quantisation error, so ``sq8`` lost about a tenth of the true top 10 at 1M in the
  benchmark. IVF, unlike HNSW, supports removing ids, so incremental updates keep working;
  ``nprobe`` trades latency for recall (the benchmark reports recall@10 against exact search).
- The IVF index's lists and training sample are set by the threshold (``_ivf_plan``): the
  sample is drawn from the first half of the vectors, so that a build from the history
  (``filling``) trains on another thread while the second half is still being embedded.
- From 256 lists up the lists' centroids come from a two-level k-means (``Coarse``): √nlist
  groups first, then each group's share of the lists within it. One k-means over every list
  compares each sample point with every centroid, ``nlist``² × 40 comparisons; two levels take
  about ``2 · nlist^1.5`` × 40. At 100k incidents (1,024 lists) training took 3.0 s instead of
  15.6 on one thread, for recall@10 0.4–0.8 points lower at nprobe 16
  (``FaissIncidentIndex(coarse="flat")`` keeps the single k-means; ``bench_index`` prints both).
- ``save(dir)`` writes ``index.faiss`` and ``index.json`` (ids, labels, domains, content
  fingerprints); ``FaissIncidentIndex.load(dir)`` reads them back without re-embedding.
- A single query runs on one OpenMP thread: one-at-a-time searches were measured about 2×
  slower with two threads. Bulk adds and training use every core.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import queue
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from precedent.core.ports import IndexStats
from precedent.errors import DependencyError, InputError

# faiss's loader logs at INFO every CPU-specific build it tries while it imports (with the
# ModuleNotFoundError of each one this machine lacks): noise in every log, so only its
# warnings show. Set before the import, which is when it logs.
logging.getLogger("faiss.loader").setLevel(logging.WARNING)
import faiss  # noqa: E402

__all__ = ["ApproximateCodes", "Coarse", "FaissIncidentIndex", "IndexKind"]

IndexKind = Literal["exact", "approximate"]
ApproximateCodes = Literal["fp16", "sq8"]
Coarse = Literal["two-level", "flat"]

# Lists from which the coarse centroids come from two levels of k-means (below this one
# k-means over all of them takes well under a second), and the iterations of each k-means:
# 40 points per list and 10 iterations moved recall@10 by less than a point in the benchmark.
TWO_LEVEL_FROM = 256
KMEANS_ITERATIONS = 10
_SEED = 1234

_QUANTIZERS: dict[str, int] = {
    "fp16": faiss.ScalarQuantizer.QT_fp16,
    "sq8": faiss.ScalarQuantizer.QT_8bit,
}

_FORMAT = 1
_INDEX_FILE = "index.faiss"
_META_FILE = "index.json"


@contextmanager
def _threads(count: int) -> Iterator[None]:
    previous = faiss.omp_get_max_threads()
    if previous == count:
        yield
        return
    faiss.omp_set_num_threads(count)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous)


def _use_threads(count: int) -> None:
    # Searches leave the setting in place: switching the OpenMP pool size on every query
    # costs more than the search itself at 10k vectors. Bulk work raises it temporarily.
    if faiss.omp_get_max_threads() != count:
        faiss.omp_set_num_threads(count)


def _as_matrix(vectors: npt.NDArray[np.float32], dimension: int) -> npt.NDArray[np.float32]:
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    if matrix.ndim != 2 or matrix.shape[1] != dimension:
        raise InputError(f"expected vectors of dimension {dimension}, got shape {matrix.shape}")
    return matrix


class FaissIncidentIndex:
    """Incident vectors in FAISS, keyed by incident id (implements ``IncidentIndex``)."""

    def __init__(
        self,
        dimension: int,
        *,
        approximate_threshold: int = 100_000,
        nprobe: int = 48,
        domain_overfetch: int = 3,
        search_threads: int = 1,
        approximate_codes: ApproximateCodes = "fp16",
        coarse: Coarse = "two-level",
    ) -> None:
        if dimension < 1:
            raise ValueError("dimension must be positive")
        if approximate_codes not in _QUANTIZERS:
            raise ValueError(f"approximate_codes must be one of {sorted(_QUANTIZERS)}")
        if coarse not in ("two-level", "flat"):
            raise ValueError("coarse must be 'two-level' or 'flat'")
        self.approximate_codes: ApproximateCodes = approximate_codes
        self.coarse: Coarse = coarse
        self._dimension = dimension
        self.approximate_threshold = approximate_threshold
        self.nprobe = nprobe
        self.domain_overfetch = domain_overfetch
        self.search_threads = search_threads
        self._index: Any = faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))
        self._kind: IndexKind = "exact"
        self._label_of: dict[str, int] = {}
        # By label (labels count up from 0; a removed one's places hold None): lists, where
        # three dictionaries keyed by label took about 15 MiB at 100k incidents, these 2.4.
        self._id_of: list[str | None] = []
        self._domain_of: list[str | None] = []
        self._fingerprint_of: list[str | None] = []
        self._next_label = 0
        # Vectors added inside ``filling`` and not yet in any faiss index (see there).
        self._held: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]] | None = None
        # The IVF index being trained on the first half of what ``filling`` holds (see there).
        self._training: _Training | None = None

    # -- queries ------------------------------------------------------------------------------

    @property
    def dimension(self) -> int:
        """Vector length."""
        return self._dimension

    @property
    def kind(self) -> IndexKind:
        """``exact`` (flat inner product) or ``approximate`` (IVF, ``approximate_codes``)."""
        return self._kind

    def __len__(self) -> int:
        return len(self._label_of)

    def __contains__(self, incident_id: object) -> bool:
        return incident_id in self._label_of

    def ids(self) -> list[str]:
        """Every incident id in the index, in insertion order."""
        return list(self._label_of)

    def fingerprint(self, incident_id: str) -> str | None:
        """The content fingerprint stored with an incident, or None if it is absent."""
        label = self._label_of.get(incident_id)
        return None if label is None else self._fingerprint_of[label]

    def search(
        self, vector: npt.NDArray[np.float32], k: int, *, domain: str | None = None
    ) -> list[tuple[str, float]]:
        """Up to ``k`` ``(incident id, inner product)`` pairs, best first.

        With ``domain``, ``k × domain_overfetch`` neighbours are fetched and those of other
        domains dropped (seed 002), so fewer than ``k`` may come back.
        """
        if k < 1 or not self._label_of:
            return []
        self._put_held()
        query = _as_matrix(vector, self._dimension)
        fetch = min(len(self), k * self.domain_overfetch if domain is not None else k)
        _use_threads(self.search_threads)
        scores, labels = self._index.search(query, fetch)
        found: list[tuple[str, float]] = []
        for score, label in zip(scores[0].tolist(), labels[0].tolist(), strict=True):
            if label < 0:
                continue
            if domain is not None and self._domain_of[label] != domain:
                continue
            incident_id = self._id_of[label]
            if incident_id is None:  # removed (faiss does not return removed labels)
                continue
            found.append((incident_id, float(score)))
            if len(found) == k:
                break
        return found

    def stats(self) -> IndexStats:
        """Vectors, dimension, kind and per-domain counts (no domain counts as ``""``)."""
        domains = Counter(self._domain_of[label] or "" for label in self._label_of.values())
        return IndexStats(
            total_vectors=len(self),
            dimension=self._dimension,
            kind=self._kind,
            domain_distribution=dict(sorted(domains.items())),
        )

    # -- updates ------------------------------------------------------------------------------

    def add(
        self,
        ids: Sequence[str],
        vectors: npt.NDArray[np.float32],
        *,
        domains: Sequence[str | None] | None = None,
        fingerprints: Sequence[str] | None = None,
    ) -> None:
        """Add incidents; an id already present is replaced."""
        matrix = _as_matrix(vectors, self._dimension)
        if len(ids) != len(matrix):
            raise InputError(f"{len(ids)} ids for {len(matrix)} vectors")
        if len(set(ids)) != len(ids):
            raise InputError("duplicate incident ids in one add")
        domains = list(domains) if domains is not None else [None] * len(ids)
        fingerprints = list(fingerprints) if fingerprints is not None else [""] * len(ids)
        self.remove([i for i in ids if i in self._label_of])
        labels = np.arange(self._next_label, self._next_label + len(ids), dtype=np.int64)
        self._next_label += len(ids)
        for incident_id, label in zip(ids, labels.tolist(), strict=True):
            self._label_of[incident_id] = label
        self._id_of.extend(ids)
        self._domain_of.extend(domains)
        self._fingerprint_of.extend(fingerprints)
        if self._held is not None and self._kind == "exact":
            self._held.append((matrix, labels))
            if self._training is not None and not self._index.ntotal:
                self._training.feed(matrix, labels)  # added while the next batch is embedded
            if len(self) >= self.approximate_threshold:
                self._index = self._ivf_from_held()
                self._kind = "approximate"
            elif (
                self._training is None
                and 2 * len(self) >= self.approximate_threshold
                and not self._index.ntotal
            ):
                self._start_training()
            return
        if self._kind == "exact" and len(self) >= self.approximate_threshold:
            self._index = self._ivf_after_exact(matrix, labels)
            self._kind = "approximate"
            return
        with _threads(os.cpu_count() or 1):
            self._index.add_with_ids(matrix, labels)

    @contextmanager
    def filling(self, expected: int) -> Iterator[None]:
        """Add ``expected`` vectors into this empty exact index (a build from the history).

        When they reach the threshold, the vectors added inside are held back and the IVF
        index is built from them as they cross it, without filling the exact index first, then
        copying every vector out of it and stacking them with the last batch (at 100k
        incidents the in-process build 18.3 → 17.1 s, and two copies of every vector fewer).
        Its training starts on another thread as soon as the first half of the threshold's
        vectors is held (``_ivf_plan`` draws the sample from there; faiss releases the
        interpreter lock while it trains), which then adds that half and each batch added
        after, so the caller embeds the second half meanwhile.
        The index built is the same (the same vectors, in the same order, the same sample).
        Anything else leaves this a no-op; a search inside puts what is held into the exact
        index first (a training under way is then waited for and not used)."""
        if self._held is not None or len(self) or expected < self.approximate_threshold:
            yield
            return
        self._held = []
        try:
            yield
        finally:
            self._put_held()
            self._held = None
            training, self._training = self._training, None
            if training is not None:  # the fill fell short: its result is not used
                training.wait()

    def _take_held(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """The vectors and labels held back by ``filling``, in one matrix and one array; the
        list is emptied (``filling`` goes on holding until it ends)."""
        held, self._held = self._held or [], []
        return np.vstack([m for m, _ in held]), np.concatenate([n for _, n in held])

    def _put_held(self) -> None:
        """Vectors held back by ``filling`` (fewer than the threshold) into the exact index."""
        if not self._held:
            return
        with _threads(os.cpu_count() or 1):
            self._index.add_with_ids(*self._take_held())

    def remove(self, ids: Iterable[str]) -> int:
        """Remove incidents by id; returns how many were present."""
        labels = [self._label_of.pop(i) for i in ids if i in self._label_of]
        if not labels:
            return 0
        self._put_held()  # a held vector is in no faiss index to remove it from yet
        for label in labels:
            self._id_of[label] = self._domain_of[label] = self._fingerprint_of[label] = None
        selector = faiss.IDSelectorBatch(np.asarray(labels, dtype=np.int64))
        self._index.remove_ids(selector)
        return len(labels)

    def _exact_vectors(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        flat: Any = faiss.downcast_index(self._index.index)
        n = flat.ntotal
        vectors = (
            faiss.rev_swig_ptr(flat.get_xb(), n * self._dimension)
            .reshape(n, self._dimension)
            .copy()
        )
        labels = faiss.vector_to_array(self._index.id_map).astype(np.int64)
        return vectors, labels

    def _ivf_plan(self) -> tuple[int, npt.NDArray[np.int64]]:
        """The IVF index's number of lists and the positions of its training sample among the
        vectors in the order they came, both set by the threshold: ``nlist ≈ 4·√threshold``
        as a power of two, and up to 40 points per list (at least 39) drawn from the first
        half of the threshold's vectors, where a build from the history (``filling``) has them
        while it embeds the second half."""
        threshold = max(1, self.approximate_threshold)
        basis = (threshold + 1) // 2
        nlist = 1 << round(math.log2(4 * math.sqrt(threshold)))
        nlist = max(1, min(nlist, 65536, 1 << int(math.log2(max(1, basis // 39)))))
        rng = np.random.default_rng(0)
        positions = np.sort(rng.choice(basis, size=min(basis, nlist * 40), replace=False))
        return nlist, positions

    def _new_ivf(self, nlist: int) -> Any:
        quantizer = faiss.IndexFlatIP(self._dimension)
        index = faiss.IndexIVFScalarQuantizer(
            quantizer,
            self._dimension,
            nlist,
            _QUANTIZERS[self.approximate_codes],
            faiss.METRIC_INNER_PRODUCT,
        )
        index.cp.niter = KMEANS_ITERATIONS
        index.nprobe = self.nprobe
        return index

    def _train(self, index: Any, sample: npt.NDArray[np.float32]) -> None:
        """Train ``index`` on ``sample``: its lists' centroids (two-level from
        TWO_LEVEL_FROM lists unless ``coarse="flat"``), then its codes."""
        if self.coarse == "two-level" and index.nlist >= TWO_LEVEL_FROM:
            # An IVF index whose quantizer holds nlist centroids trains its codes only.
            index.quantizer.add(two_level_centroids(sample, index.nlist))
        index.train(sample)

    def _ivf_after_exact(
        self, vectors: npt.NDArray[np.float32], labels: npt.NDArray[np.int64]
    ) -> Any:
        """The IVF index of the exact index's vectors followed by ``vectors``."""
        existing = self._exact_vectors()
        return self._build_ivf(
            np.vstack([existing[0], vectors]), np.concatenate([existing[1], labels])
        )

    def _build_ivf(self, vectors: npt.NDArray[np.float32], labels: npt.NDArray[np.int64]) -> Any:
        nlist, positions = self._ivf_plan()
        index = self._new_ivf(nlist)
        with _threads(os.cpu_count() or 1):
            self._train(index, vectors[positions])
            index.add_with_ids(vectors, labels)
        return index

    def _start_training(self) -> None:
        """Inside ``filling``, once the held vectors hold the training sample: train the IVF
        index on another thread."""
        nlist, positions = self._ivf_plan()
        held = self._held or []
        if sum(len(m) for m, _ in held) <= positions[-1]:
            return
        # The sample's rows, taken from the held batches (``positions`` ascend).
        sample = np.empty((len(positions), self._dimension), dtype=np.float32)
        start = 0
        for matrix, _ in held:
            end = start + len(matrix)
            low, high = np.searchsorted(positions, [start, end])
            sample[low:high] = matrix[positions[low:high] - start]
            start = end
        self._training = _Training(self._new_ivf(nlist), self._train, sample, list(held))

    def _ivf_from_held(self) -> Any:
        """The IVF index of the vectors held by ``filling`` (and of those a search put into
        the exact index meanwhile), trained on another thread when it could be."""
        training, self._training = self._training, None
        if self._index.ntotal:  # a search or a removal put held vectors into the exact index
            if training is not None:
                training.wait()
            return self._ivf_after_exact(*self._take_held())
        if training is None:
            return self._build_ivf(*self._take_held())
        index = training.result()
        # The batches held when the training started, and those fed to it since, are in it.
        left, self._held = (self._held or [])[training.added :], []
        with _threads(os.cpu_count() or 1):
            for vectors, labels in left:  # batch by batch: no copy of them all at once
                index.add_with_ids(vectors, labels)
        return index

    def set_nprobe(self, nprobe: int) -> None:
        """Lists probed per query by the approximate index (ignored by the exact one)."""
        self.nprobe = nprobe
        if self._kind == "approximate":
            self._index.nprobe = nprobe

    # -- persistence --------------------------------------------------------------------------

    def save(self, directory: str | Path) -> None:
        """Write ``index.faiss`` and ``index.json`` into ``directory`` (created if needed)."""
        path = Path(directory)
        try:
            path.mkdir(parents=True, exist_ok=True)
            self._write(path)
        except OSError as exc:
            raise DependencyError(f"index directory {path}: cannot write: {exc.strerror}") from None

    def _write(self, path: Path) -> None:
        self._put_held()
        labels = list(self._label_of.values())
        meta: dict[str, Any] = {
            "format": _FORMAT,
            "dimension": self._dimension,
            "kind": self._kind,
            "nprobe": self.nprobe,
            "next_label": self._next_label,
            "labels": labels,
            "ids": [self._id_of[x] for x in labels],
            "domains": [self._domain_of[x] for x in labels],
            "fingerprints": [self._fingerprint_of[x] or "" for x in labels],
        }
        tmp_index, tmp_meta = path / f"{_INDEX_FILE}.tmp", path / f"{_META_FILE}.tmp"
        faiss.write_index(self._index, str(tmp_index))
        # The vectors' checksum: a file cut short, overwritten or paired with another index's
        # metadata is refused on load (and rebuilt), never searched.
        meta["sha256"] = _file_digest(tmp_index)
        tmp_meta.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(tmp_index, path / _INDEX_FILE)
        os.replace(tmp_meta, path / _META_FILE)

    @classmethod
    def load(
        cls,
        directory: str | Path,
        *,
        approximate_threshold: int = 100_000,
        domain_overfetch: int = 3,
        search_threads: int = 1,
    ) -> FaissIncidentIndex:
        """Read an index written by :meth:`save`; DependencyError if it is missing or broken."""
        path = Path(directory)
        index_file, meta_file = path / _INDEX_FILE, path / _META_FILE
        if not index_file.is_file() or not meta_file.is_file():
            raise DependencyError(f"no vector index at {path} (expected {_INDEX_FILE})")
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
            if not isinstance(meta, dict):
                raise ValueError("metadata is not a JSON object")
            if meta.get("format") != _FORMAT:
                raise DependencyError(f"{meta_file}: unsupported index format {meta.get('format')}")
            if meta.get("sha256") != _file_digest(index_file):
                raise DependencyError(
                    f"{index_file}: checksum differs from {meta_file} (cut short or replaced)"
                )
            raw = faiss.read_index(str(index_file))
        except (OSError, ValueError, RuntimeError) as exc:
            raise DependencyError(f"cannot read vector index at {path}: {exc}") from None
        try:
            return cls._restore(
                meta,
                raw,
                path,
                approximate_threshold=approximate_threshold,
                domain_overfetch=domain_overfetch,
                search_threads=search_threads,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DependencyError(f"{meta_file}: malformed metadata ({exc!r})") from None

    @classmethod
    def _restore(
        cls,
        meta: dict[str, Any],
        raw: Any,
        path: Path,
        *,
        approximate_threshold: int,
        domain_overfetch: int,
        search_threads: int,
    ) -> FaissIncidentIndex:
        self = cls(
            int(meta["dimension"]),
            approximate_threshold=approximate_threshold,
            nprobe=int(meta.get("nprobe", 48)),
            domain_overfetch=domain_overfetch,
            search_threads=search_threads,
        )
        self._kind = meta["kind"]
        self._index = raw
        if self._kind == "approximate":
            self._index.nprobe = self.nprobe
        if self._index.ntotal != len(meta["ids"]):
            raise DependencyError(
                f"{path}: index holds {self._index.ntotal} vectors, metadata {len(meta['ids'])}"
            )
        self._next_label = int(meta["next_label"])
        self._id_of = [None] * self._next_label
        self._domain_of = [None] * self._next_label
        self._fingerprint_of = [None] * self._next_label
        for label, incident_id, domain, fp in zip(
            meta["labels"], meta["ids"], meta["domains"], meta["fingerprints"], strict=True
        ):
            if not 0 <= label < self._next_label:
                raise DependencyError(f"{path}: label {label} outside 0–{self._next_label - 1}")
            self._label_of[incident_id] = label
            self._id_of[label] = incident_id
            self._domain_of[label] = domain
            self._fingerprint_of[label] = fp
        return self


def list_shares(sizes: npt.NDArray[np.int64], lists: int) -> npt.NDArray[np.int64]:
    """How many of ``lists`` each group of ``sizes`` points gets: in proportion to its points
    (the largest remainders rounded up), never more than its points. ``lists`` must not
    exceed the points in all."""
    total = int(sizes.sum())
    if lists > total:
        raise ValueError(f"{lists} lists for {total} points")
    if not lists:
        return np.zeros(len(sizes), dtype=np.int64)
    product = sizes.astype(np.int64) * lists
    shares: npt.NDArray[np.int64] = product // total
    # The largest remainders take one more each: a group with a remainder is below its
    # points, and there are at least as many of them as lists left.
    left = lists - int(shares.sum())
    shares[np.argsort(-(product % total), kind="stable")[:left]] += 1
    return shares


def two_level_centroids(sample: npt.NDArray[np.float32], lists: int) -> npt.NDArray[np.float32]:
    """``lists`` unit centroids of ``sample`` (unit vectors, inner product): a spherical k-means
    into about √lists groups, then one within each group for its share of the lists
    (:func:`list_shares`); a group with no more points than its share keeps its points."""
    points, dimension = sample.shape
    groups = max(2, 1 << round(math.log2(math.sqrt(lists))))

    def kmeans(data: npt.NDArray[np.float32], k: int) -> Any:
        # Every point is used (the sample is drawn already) and no size warning is printed:
        # a group's share of the lists is what its points allow.
        found = faiss.Kmeans(
            dimension,
            k,
            niter=KMEANS_ITERATIONS,
            spherical=True,
            seed=_SEED,
            max_points_per_centroid=points,
            min_points_per_centroid=1,
        )
        found.train(data)
        return found

    first = kmeans(sample, groups)
    _, assigned = first.index.search(sample, 1)
    assigned = assigned.ravel()
    shares = list_shares(np.bincount(assigned, minlength=groups), lists)
    parts: list[npt.NDArray[np.float32]] = []
    for group in np.flatnonzero(shares):
        members = sample[assigned == group]
        share = int(shares[group])
        parts.append(members if share == len(members) else kmeans(members, share).centroids)
    centroids = np.ascontiguousarray(np.vstack(parts), dtype=np.float32)
    faiss.normalize_L2(centroids)
    return centroids


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_Batch = tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]


class _Training:
    """An IVF index trained on a thread of its own, on one OpenMP thread, which then adds the
    batches held when it started and each batch given to it after (``feed``) as it comes:
    the thread that started it goes on embedding on the other core (faiss releases the
    interpreter lock), and little is left to add once the last batch is embedded. What is
    left when the result is taken is not added here: the caller adds it on every core."""

    def __init__(
        self,
        index: Any,
        train: Callable[[Any, npt.NDArray[np.float32]], None],
        sample: npt.NDArray[np.float32],
        batches: list[_Batch],
    ) -> None:
        self._index = index
        self._train_on = train
        self._error: BaseException | None = None
        self._sample: npt.NDArray[np.float32] | None = sample  # freed once trained
        self._batches: queue.SimpleQueue[_Batch | None] = queue.SimpleQueue()
        for batch in batches:
            self._batches.put(batch)
        self.added = 0
        """How many batches (the first ones given) the index got; read once it ended."""
        self._taken = threading.Event()  # the result is wanted: the caller adds the rest
        self._thread = threading.Thread(
            target=self._train, name="precedent-ivf-training", daemon=True
        )
        self._thread.start()

    def feed(self, vectors: npt.NDArray[np.float32], labels: npt.NDArray[np.int64]) -> None:
        """One more batch for the index, after those given before it."""
        self._batches.put((vectors, labels))

    def _train(self) -> None:
        try:
            with _threads(1):
                sample, self._sample = self._sample, None
                if sample is not None:
                    self._train_on(self._index, sample)
                del sample  # freed before the adds
                while (batch := self._batches.get()) is not None and not self._taken.is_set():
                    self._index.add_with_ids(*batch)
                    self.added += 1
        except BaseException as exc:  # raised where the result is taken
            self._error = exc

    def _end(self) -> None:
        # The batches not yet added are left to the caller, who adds them on every core.
        self._taken.set()
        self._batches.put(None)  # wakes the thread if it waits for a batch
        self._thread.join()

    def wait(self) -> None:
        """Until the training and the add under way end (the result unused)."""
        self._end()

    def result(self) -> Any:
        """The trained index, with the first ``added`` batches given in it; what the thread
        raised, if it did."""
        self._end()
        if self._error is not None:
            raise self._error
        return self._index
