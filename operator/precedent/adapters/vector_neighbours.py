"""Semantic neighbours from an embedder and a vector index, kept in step with the history.

``VectorNeighbours`` implements the core's ``SemanticNeighbours`` port. The index is keyed by
incident id and stores a fingerprint of each incident's embedded text, so ``sync(history)``
embeds only incidents that are new or changed and removes the ones that are gone; a saved
index (``index_dir``) is reloaded on start without re-embedding anything that did not change.

For an embedder that weights queries by the history's idf (``LexicalEmbedder.embed_queries``)
it also keeps the history's document frequencies: added incidents are counted one by one;
when an incident is removed or changed (rare: the operator mostly adds) or the index was
loaded from disk, the table is recounted from the history. Stored vectors never depend on the
table, so it changes only how a request is weighted.

Requests that reach the index with the same query vector and the same known BM25 terms get
the same neighbours until the index changes (alerts repeat: the same template with another
number in it weighs the same), so the last ``recent`` answers are kept, keyed by exactly
those inputs, and forgotten whenever ``sync`` changes the history. A kept answer is small: the
vector's 128-bit BLAKE2b digest in its key (not its 2 KB of bytes), the incidents' ids (the
index's own strings) and their similarities as one array of doubles — about 1 KB, where
the vector and a tuple of pairs took 6.5 KB (27 MiB for 4,096 answers).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from precedent.adapters.faiss_index import FaissIncidentIndex
from precedent.core import semantic
from precedent.core.embedding import (
    Bm25Document,
    Bm25Match,
    DocumentFrequencies,
    Frequencies,
    LexicalEmbedder,
)
from precedent.core.normalize import ProposedAction
from precedent.core.ports import Embedder, IndexStats
from precedent.core.semantic import (
    TITLE_WEIGHT,
    SemanticCalibration,
    calibration_for,
    embed_incidents,
    incident_text,
    request_text,
)
from precedent.core.snapshot import History
from precedent.errors import DependencyError
from precedent.models import Incident

__all__ = ["SyncReport", "VectorNeighbours"]

logger = logging.getLogger(__name__)

# Bumped whenever what an embedder sees of an incident changes (v2: the concept vocabulary;
# v3: its noun concepts), so that a saved index is re-embedded instead of mixing two
# versions' vectors.
_TEXT_VERSION = "3"
_COUNTS_FILE = "counts.npz"
_COUNTS_META = "counts.json"


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


Answer = tuple[tuple[str, float], ...]
"""Calibrated (incident id, similarity) pairs, best first."""

# A kept answer: the incidents' ids and their similarities, in the answer's order.
_Kept = tuple[tuple[str, ...], "array[float]"]


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What ``sync`` changed in the index."""

    embedded: int
    removed: int
    kept: int


class VectorNeighbours:
    """``SemanticNeighbours`` over an ``Embedder`` and a ``FaissIncidentIndex``."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        index: FaissIncidentIndex | None = None,
        calibration: SemanticCalibration | None = None,
        index_dir: Path | None = None,
        approximate_threshold: int = 100_000,
        batch_size: int = 256,
        title_weight: float = TITLE_WEIGHT,
        fusion_weight: float | None = None,
        recent: int = 4096,
    ) -> None:
        self.embedder = embedder
        # (query vector, known BM25 terms, k, domain) → calibrated (incident id, similarity)
        # pairs, valid for the history ``sync`` last saw; the oldest goes first when full.
        self.recent = recent
        self._answers: OrderedDict[tuple[bytes, tuple[str, ...], int, str | None], _Kept] = (
            OrderedDict()
        )
        self.fusion_weight = semantic.FUSION_WEIGHT if fusion_weight is None else fusion_weight
        if not 0.0 <= self.fusion_weight <= 1.0:
            raise ValueError("fusion_weight must be in [0, 1]")
        # BM25 over the same incidents, kept in step by ``sync``; it re-scores the vector
        # index's candidates (sparse + dense fusion, see ``fuse``).
        self.bm25 = Bm25Match()
        self.calibration = calibration or calibration_for(embedder.name)
        self.index_dir = index_dir
        self.batch_size = batch_size
        self.title_weight = title_weight
        self.loaded = 0
        if index is None and index_dir is not None and (index_dir / "index.faiss").exists():
            index = self._load(index_dir, approximate_threshold)
            if index is not None and index.dimension != embedder.dimension:
                # Built by another embedder: start again rather than mix vector spaces.
                logger.warning(
                    "vector index at %s has dimension %d, not %s's %d: rebuilding it",
                    index_dir,
                    index.dimension,
                    embedder.name,
                    embedder.dimension,
                )
                index = None
            self.loaded = len(index) if index is not None else 0
        self.index = index or FaissIncidentIndex(
            embedder.dimension, approximate_threshold=approximate_threshold
        )
        if self.index.dimension != embedder.dimension:
            raise DependencyError(
                f"index dimension {self.index.dimension} != embedder {embedder.name} "
                f"dimension {embedder.dimension}"
            )
        self._synced: str | None = None
        # The incidents of the last sync and their fingerprints, position for position: an
        # incident object seen then (a history changes by replacing incidents, never by
        # changing one) keeps its fingerprint without its text being read again.
        self._fingerprinted: tuple[Sequence[Incident], list[str]] = ((), [])
        self._save_failed = False
        # Only embedders that can weight a query by idf need the table.
        self.frequencies: DocumentFrequencies | None = (
            DocumentFrequencies() if isinstance(embedder, LexicalEmbedder) else None
        )
        # Counts the directory lacks or that could not be used: written again on the next sync.
        self._counts_unsaved = False
        if self.loaded and index_dir is not None:
            self._restore_counts(index_dir)

    @staticmethod
    def _load(index_dir: Path, approximate_threshold: int) -> FaissIncidentIndex | None:
        """The saved index, or None when it cannot be trusted (unreadable, cut short, its
        checksum or metadata wrong): it is then rebuilt from the history and saved again."""
        try:
            return FaissIncidentIndex.load(index_dir, approximate_threshold=approximate_threshold)
        except DependencyError as exc:
            logger.warning("%s: rebuilding the vector index", exc)
            return None

    @property
    def name(self) -> str:
        """The embedder's name."""
        return self.embedder.name

    @property
    def synced(self) -> str | None:
        """The fingerprint of the history the index was last brought in line with."""
        return self._synced

    def _fingerprint(self, incident: Incident, text: str | None = None) -> str:
        """What the incident's vector and terms are made from; ``text``: its
        ``incident_text``, when already made."""
        digest = hashlib.sha256(
            f"{self.embedder.name}\0{self.title_weight}\0{_TEXT_VERSION}\0".encode()
        )
        digest.update(incident.title.encode())
        digest.update(b"\0")
        digest.update((incident_text(incident) if text is None else text).encode())
        return digest.hexdigest()[:24]

    def _fingerprints(self, incidents: Sequence[Incident]) -> dict[str, str]:
        """Each incident's fingerprint by id, reusing the last sync's for the same objects.

        Working them out reads every incident's text (and unpacks it): 1.5 s at 100k incidents,
        on every change of the history. The last sync's incidents are kept alive by
        ``_fingerprinted``, so an ``id()`` found among them is that very object.
        """
        before, prints = self._fingerprinted
        at = {id(incident): k for k, incident in enumerate(before)}
        out: dict[str, str] = {}
        for incident in incidents:
            k = at.get(id(incident))
            out[incident.id] = prints[k] if k is not None else self._fingerprint(incident)
        self._keep_fingerprints(incidents, out)
        return out

    def _keep_fingerprints(self, incidents: Sequence[Incident], by_id: dict[str, str]) -> None:
        """Keep this sync's incidents (alive, so that their ``id()`` stays theirs) and their
        fingerprints, for the next sync to reuse."""
        self._fingerprinted = (tuple(incidents), [by_id[i.id] for i in incidents])

    def sync(
        self, history: History, *, progress: Callable[[int], None] | None = None
    ) -> SyncReport:
        """Bring the index in line with ``history``: embed new or changed incidents only.

        ``progress`` is told how many incidents each embedded batch held (a CLI progress bar).
        """
        if self._synced == history.fingerprint:
            return SyncReport(embedded=0, removed=0, kept=len(self.index))
        self._answers.clear()
        # One fingerprint per incident, worked out once and kept by both the vector index and
        # BM25 (one string each, not two: 7 MiB at 100k incidents). Into an empty index every
        # incident goes: each one's is then made below from the text its vector is made of,
        # which is read (and unpacked) once instead of twice.
        empty = len(self.index) == 0
        fingerprints: dict[str, str] = {}
        removed = 0
        if empty:
            todo = list(history.incidents)
        else:
            fingerprints = self._fingerprints(history.incidents)
            gone = [i for i in self.index.ids() if i not in fingerprints]
            removed = self.index.remove(gone)
            todo = [
                incident
                for incident in history.incidents
                if self.index.fingerprint(incident.id) != fingerprints[incident.id]
            ]
        counting = self._count(
            history, todo, recount=removed > 0 or any(i.id in self.index for i in todo)
        )
        # Into an empty index the IVF index, when the history reaches its size, is built from
        # the vectors as they come (``filling``), not from an exact index filled first.
        with self.index.filling(len(todo)):
            embedder = self.embedder
            for start in range(0, len(todo), self.batch_size):
                batch = todo[start : start + self.batch_size]
                # Each incident's text is made once, for its vector, its counts and BM25.
                texts = [incident_text(incident) for incident in batch]
                if empty:
                    for incident, text in zip(batch, texts, strict=True):
                        fingerprints[incident.id] = self._fingerprint(incident, text)
                if isinstance(embedder, LexicalEmbedder):
                    # The batch's texts are read once for their vectors, counts and BM25 terms.
                    with embedder.remembering():
                        vectors = embed_incidents(embedder, batch, self.title_weight, texts)
                        if counting:
                            for text in texts:
                                self._add_count_of(text)
                        self._add_bm25(batch, texts, fingerprints, embedder)
                else:
                    vectors = embed_incidents(embedder, batch, self.title_weight, texts)
                    self._add_bm25(batch, texts, fingerprints, None)
                self.index.add(
                    [i.id for i in batch],
                    vectors,
                    domains=[i.domain for i in batch],
                    fingerprints=[fingerprints[i.id] for i in batch],
                )
                if progress is not None:
                    progress(len(batch))
        if empty:
            self._keep_fingerprints(history.incidents, fingerprints)
        self._sync_bm25(history, fingerprints)
        if self.fusion_weight > 0:
            self.bm25.frequencies()  # now, not at the first request (see there)
        self._synced = history.fingerprint
        if (todo or removed or self._counts_unsaved) and self.index_dir is not None:
            try:
                self.index.save(self.index_dir)
                self._save_counts(self.index_dir)
                self._counts_unsaved = False
            except DependencyError as exc:
                # The saved index is a cache: scoring goes on from memory; say so once.
                if not self._save_failed:
                    logger.warning("%s; the index stays in memory only", exc)
                self._save_failed = True
        return SyncReport(embedded=len(todo), removed=removed, kept=len(fingerprints) - len(todo))

    # -- the counts saved beside the index ---------------------------------------------------
    # The document frequencies and BM25's terms cover the same incidents as the vectors; with
    # them saved, a restart reads no incident's text again. They are used only when their
    # checksum holds and they cover exactly the loaded index's incidents (ids and
    # fingerprints); otherwise they are counted again from the history.

    def _covers(self) -> str:
        index = self.index
        digest = hashlib.sha256()
        for incident_id in sorted(index.ids()):
            digest.update(f"{incident_id}\0{index.fingerprint(incident_id)}\n".encode())
        return digest.hexdigest()

    def _save_counts(self, directory: Path) -> None:
        arrays: dict[str, npt.NDArray[Any]] = {}
        frequencies = self.frequencies
        if frequencies is not None and frequencies.documents == len(self.index):
            arrays["df"] = frequencies.counts
        if self.fusion_weight > 0 and len(self.bm25) == len(self.index):
            state = self.bm25.export()
            arrays.update(
                {
                    f"bm25_{key}": np.array(value) if isinstance(value, list) else value
                    for key, value in state.items()
                }
            )
        data, meta = directory / _COUNTS_FILE, directory / _COUNTS_META
        try:
            with (directory / f"{_COUNTS_FILE}.tmp").open("wb") as handle:
                np.savez(handle, **arrays)  # type: ignore[arg-type]
            summary = {
                "format": 1,
                "embedder": self.embedder.name,
                "text": _TEXT_VERSION,
                "covers": self._covers(),
                "documents": (
                    frequencies.documents if frequencies is not None and "df" in arrays else None
                ),
                "sha256": _digest(directory / f"{_COUNTS_FILE}.tmp"),
            }
            (directory / f"{_COUNTS_META}.tmp").write_text(json.dumps(summary), encoding="utf-8")
            os.replace(directory / f"{_COUNTS_FILE}.tmp", data)
            os.replace(directory / f"{_COUNTS_META}.tmp", meta)
        except OSError as exc:
            raise DependencyError(
                f"index directory {directory}: cannot write: {exc.strerror}"
            ) from None

    def _restore_counts(self, directory: Path) -> None:
        data, meta = directory / _COUNTS_FILE, directory / _COUNTS_META
        try:
            summary = json.loads(meta.read_text(encoding="utf-8"))
            if not isinstance(summary, dict) or summary.get("format") != 1:
                raise ValueError("unknown format")
            if (summary.get("embedder"), summary.get("text")) != (
                self.embedder.name,
                _TEXT_VERSION,
            ):
                raise ValueError(f"written for {summary.get('embedder')}")
            if summary.get("sha256") != _digest(data):
                raise ValueError(f"{data.name}: checksum differs")
            if summary.get("covers") != self._covers():
                raise ValueError("written for other incidents than the index holds")
            with np.load(data, allow_pickle=False) as arrays:
                found = {key: arrays[key] for key in arrays.files}
            frequencies = self.frequencies
            if frequencies is not None and "df" in found:
                counts = found["df"]
                if counts.shape != frequencies.counts.shape or counts.dtype != np.int32:
                    raise ValueError("document frequencies of another size")
                frequencies.counts[:] = counts
                frequencies.documents = int(summary["documents"])
            if self.fusion_weight > 0 and "bm25_ids" in found:
                self.bm25.restore(
                    {key.removeprefix("bm25_"): v for key, v in found.items() if key != "df"}
                )
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            # Counted again from the history on the first sync: slower, never wrong.
            if self.frequencies is not None:
                self.frequencies.clear()
            self.bm25 = Bm25Match()
            self._counts_unsaved = True
            logger.warning("counts beside the vector index not used (%s): recounting them", exc)

    def _sync_bm25(self, history: History, fingerprints: Mapping[str, str]) -> None:
        if self.fusion_weight <= 0:
            return
        for gone in [i for i in self.bm25.ids() if i not in fingerprints]:
            self.bm25.remove(gone)
        # The same fingerprint as the vector's: only new or changed incidents are counted, a
        # changed one's old row removed first, so that each batch holds new documents only.
        todo = [i for i in history.incidents if self.bm25.fingerprint(i.id) != fingerprints[i.id]]
        for incident in todo:
            self.bm25.remove(incident.id)
        for start in range(0, len(todo), self.batch_size):
            self.bm25.add_many(
                [
                    Bm25Document(i.id, incident_text(i), fingerprints[i.id])
                    for i in todo[start : start + self.batch_size]
                ]
            )

    def _count(self, history: History, todo: list[Incident], *, recount: bool) -> bool:
        """Count every incident not in ``todo`` that is not counted yet; True when the
        caller is to count ``todo``'s (as it embeds them, :meth:`_add_count`)."""
        frequencies, embedder = self.frequencies, self.embedder
        if frequencies is None or not isinstance(embedder, LexicalEmbedder):
            return False
        # Everything not in ``todo`` must already be counted, else the table is rebuilt.
        if recount or frequencies.documents != len(history) - len(todo):
            frequencies.clear()
            pending = {i.id for i in todo}
            for incident in history.incidents:
                if incident.id not in pending:
                    self._add_count(incident)
        return True

    def _add_bm25(
        self,
        batch: Sequence[Incident],
        texts: Sequence[str],
        fingerprints: Mapping[str, str],
        embedder: LexicalEmbedder | None,
    ) -> None:
        if self.fusion_weight <= 0:
            return
        self.bm25.add_many(
            [
                Bm25Document(
                    incident.id,
                    text,
                    fingerprints[incident.id],
                    embedder.tokens(text) if embedder is not None else None,
                )
                for incident, text in zip(batch, texts, strict=True)
            ]
        )

    def _add_count(self, incident: Incident) -> None:
        self._add_count_of(incident_text(incident))

    def _add_count_of(self, text: str) -> None:
        frequencies, embedder = self.frequencies, self.embedder
        if frequencies is not None and isinstance(embedder, LexicalEmbedder):
            frequencies.add(embedder.document_keys(text, frequencies))

    def cosines(self, text: str, k: int, *, domain: str | None = None) -> list[tuple[str, float]]:
        """Up to ``k`` ``(incident id, cosine)`` pairs for a text, best first."""
        return self.index.search(self._query_vector(text), k, domain=domain)

    def _query_vector(
        self, text: str, frequencies: Frequencies | None = None
    ) -> npt.NDArray[np.float32]:
        embedder = self.embedder
        frequencies = frequencies if frequencies is not None else self.frequencies
        if (
            isinstance(embedder, LexicalEmbedder)
            and frequencies is not None
            and frequencies.documents
        ):
            vector = embedder.embed_queries([text], frequencies)
        else:
            vector = (
                embedder.embed_documents([text])
                if isinstance(embedder, LexicalEmbedder)
                else embedder.embed([text])
            )
        return np.asarray(vector[0], dtype=np.float32)

    def neighbours(self, action: ProposedAction, history: History, k: int) -> Mapping[int, float]:
        """Up to ``k`` incident positions with calibrated semantic similarity above 0."""
        self.sync(history)
        text = request_text(action)
        vector = self._query_vector(text)
        terms = self.bm25.known_terms(text) if self.fusion_weight > 0 else ()
        digest = hashlib.blake2b(vector.tobytes(), digest_size=16).digest()
        key = (digest, terms, k, action.domain)
        kept = self._answers.get(key)
        if kept is None:
            answer = self._answer(vector, terms, k, action.domain)
            pairs: Iterable[tuple[str, float]] = answer
            if self.recent > 0:
                ids = tuple(incident_id for incident_id, _ in answer)
                self._answers[key] = (ids, array("d", [similarity for _, similarity in answer]))
                if len(self._answers) > self.recent:
                    self._answers.popitem(last=False)
        else:
            self._answers.move_to_end(key)
            pairs = zip(*kept, strict=True)
        found: dict[int, float] = {}
        for incident_id, similarity in pairs:
            pos = history.position(incident_id)
            if pos is not None and similarity > 0:
                found[pos] = similarity
        return found

    def _answer(
        self, vector: npt.NDArray[np.float32], terms: tuple[str, ...], k: int, domain: str | None
    ) -> Answer:
        pairs = self.index.search(vector, k, domain=domain)
        scores = [cosine for _, cosine in pairs]
        if self.fusion_weight > 0 and pairs:
            lexical = self.bm25.match_terms(terms, [incident_id for incident_id, _ in pairs])
            scores = semantic.fuse(scores, lexical.tolist(), self.fusion_weight)
        return tuple(
            (incident_id, self.calibration(score))
            for (incident_id, _), score in zip(pairs, scores, strict=True)
        )

    def score_incidents(self, action: ProposedAction, incidents: Sequence[Incident]) -> list[float]:
        """Calibrated semantic similarity of incidents outside the index (the fleet memory's)
        to the request: embedded as the index's incidents are, fused with BM25 over the
        history's statistics and calibrated as :meth:`neighbours` does; 0 for another domain."""
        if not incidents:
            return []
        text = request_text(action)
        frequencies, embedder = self.frequencies, self.embedder
        view: Frequencies | None = None
        if frequencies is not None and isinstance(embedder, LexicalEmbedder):
            # The query's idf counts the memory's incidents for this request, as the history
            # would once they joined it: a word only they have would otherwise weigh nothing.
            # A view over the table, never a change to it: requests at the same time each see
            # the history's counts (plus their own incidents), whatever lock they hold.
            view = frequencies.with_documents(
                [embedder.feature_keys(incident_text(i), frequencies) for i in incidents]
            )
        query = self._query_vector(text, view)
        cosines = (embed_incidents(self.embedder, incidents, self.title_weight) @ query).tolist()
        scores = [float(c) for c in cosines]
        if self.fusion_weight > 0:
            lexical = self.bm25.match_texts(text, [incident_text(i) for i in incidents])
            scores = semantic.fuse(scores, lexical.tolist(), self.fusion_weight)
        return [
            0.0
            if action.domain is not None and incident.domain != action.domain
            else max(0.0, self.calibration(score))
            for incident, score in zip(incidents, scores, strict=True)
        ]

    def stats(self) -> IndexStats:
        """The index's stats."""
        return self.index.stats()
