"""Prometheus metrics. ``METRICS`` lives on the default registry; tests build their own.

Playbook catalog (seed 004):

* ``ai_playbook_selections_total{incident_type, playbook_id, selection_method}`` — every
  selection; ``playbook_id`` is ``manual_investigation`` when no playbook qualified, and
  ``selection_method`` is ``data_driven``, ``fallback`` or ``none`` (no catalog could answer).
  The two labels that come from input are bounded (:class:`BoundedLabel`): ``incident_type``
  is one the in-process catalog's playbooks declare (or ``unknown``), ``playbook_id`` one a
  catalog answered with; anything else, and anything past the first
  :data:`MAX_LABEL_VALUES` distinct values, is ``other``.
* ``ai_success_rate_queries_total{status}`` — queries actually sent to a remote catalog,
  ``success`` or ``error`` (cache hits, in-process answers and circuit-breaker refusals do
  not count).
* ``precedent_catalog_request_duration_seconds{catalog, outcome}`` — latency of one catalog
  query as the selector sees it (``catalog`` is ``http`` or ``in_process``; retries included).
* ``precedent_catalog_retries_total{catalog}`` — retries made after a failed attempt.
* ``precedent_catalog_cache_total{result}`` — ``hit``, ``miss`` and ``stale`` (a last good
  answer served during an outage).
* ``precedent_catalog_circuit_state{catalog}`` — 0 closed, 1 half-open, 2 open.
* ``precedent_context_api_request_duration_seconds{endpoint, status}`` — the Context API
  server's own request latency.

Assessments (recorded once per reconciliation by ``services.observability``):

* ``precedent_decisions_total{band, decision}`` — answered requests by risk band (``low``,
  ``medium``, ``high``) and the policy's decision (``Approved``, ``Escalated``, ``Denied``).
* ``precedent_assessment_duration_seconds{outcome}`` — one reconciliation, from the spec to the
  status (history, policy and playbook selection); ``outcome`` is ``assessed``, ``invalid`` or
  ``waiting``.
* ``precedent_top_incident_matches_total{incident}`` — answered requests whose most relevant
  past incident was ``incident`` (an id from the history: bounded by the incidents the platform
  team keeps, never by what a requester writes).
* ``precedent_stalled_requests{reason}`` — requests this process holds Stalled now (an invalid
  spec, ``InvalidSpec``); back to 0 when the request is answered or deleted.
* ``precedent_history_incidents`` — incidents in the history snapshot requests are scored against.
* ``precedent_vector_index_info{kind}`` — 1 for the vector index in use (``exact``,
  ``approximate``, or ``none`` in rules-only mode).

Reported outcomes:

* ``precedent_outcomes_total{result}`` — outcomes the operator handled (``succeeded``,
  ``failed``, ``partial``), once per handling: a restart before the handling was recorded in the
  request's status may count one again in the new process.

The guard (direct changes to namespaces labelled ``precedent.dev/guard``):

* ``precedent_guard_decisions_total{mode, outcome}`` — admission requests answered: ``mode``
  ``enforce`` or ``warn``, ``outcome`` ``covered`` (an approved request for exactly the change),
  ``break-glass``, ``warned`` or ``refused``.
* ``precedent_guard_duration_seconds{outcome}`` — the time to answer one.

Fleet memory (seed 001):

* ``precedent_memory_queries_total{status}`` — one per request that asked the memory:
  ``success``, ``timeout``, ``circuit_open`` or the failure's kind (``auth``, ``unreachable``,
  ``not_found``, ``throttled``, ``mapping``, ``error``).
* ``precedent_memory_query_duration_seconds{status}`` — their latency.
* ``precedent_memory_circuit_state`` — 0 closed, 1 half-open, 2 open.
* ``precedent_memory_writes_total{status}`` — background writes: ``success`` (documents),
  ``retry``, ``dropped``.
"""

from __future__ import annotations

import threading

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

__all__ = [
    "INDEX_KINDS",
    "LATENCY_BUCKETS",
    "MAX_LABEL_VALUES",
    "METRICS",
    "OTHER",
    "BoundedLabel",
    "Metrics",
]

OTHER = "other"
"""The label value that stands for every value a bounded label does not admit."""
MAX_LABEL_VALUES = 100
"""Most distinct values one bounded label admits in a process, whatever its input."""


class BoundedLabel:
    """A metric label fed from input, kept to a bounded set of series.

    A value is admitted when the caller knows it (declared by a playbook, answered by a
    catalog) and either was admitted before or fewer than ``limit`` values have been; every
    other value is :data:`OTHER`. So 10,000 made-up incident types make one series, not 10,000.
    """

    def __init__(self, limit: int = MAX_LABEL_VALUES, *, always: frozenset[str] = frozenset()):
        self.limit = limit
        self.always = always
        self._admitted: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str, *, known: bool) -> str:
        """``value`` if it may be a label value, else ``other``."""
        if value in self.always:
            return value
        if not known:
            return OTHER
        with self._lock:
            if value in self._admitted:
                return value
            if len(self._admitted) >= self.limit:
                return OTHER
            self._admitted.add(value)
            return value


LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

INDEX_KINDS = ("exact", "approximate", "none")
"""Every value of ``precedent_vector_index_info{kind}`` (all are exported, one of them is 1)."""


class Metrics:
    """Every Precedent metric, registered on one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.playbook_selections = Counter(
            "ai_playbook_selections_total",
            "Playbook selections by incident type, playbook and method.",
            ["incident_type", "playbook_id", "selection_method"],
            registry=registry,
        )
        self.success_rate_queries = Counter(
            "ai_success_rate_queries_total",
            "Playbook catalog queries sent, by status (success or error).",
            ["status"],
            registry=registry,
        )
        self.catalog_latency = Histogram(
            "precedent_catalog_request_duration_seconds",
            "Latency of one playbook catalog query, retries included.",
            ["catalog", "outcome"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.catalog_retries = Counter(
            "precedent_catalog_retries_total",
            "Retries after a failed attempt to reach a remote playbook catalog.",
            ["catalog"],
            registry=registry,
        )
        self.catalog_cache = Counter(
            "precedent_catalog_cache_total",
            "Remote catalog cache lookups: hit, miss, or stale (last good answer in an outage).",
            ["result"],
            registry=registry,
        )
        self.circuit_state = Gauge(
            "precedent_catalog_circuit_state",
            "Circuit breaker in front of a remote catalog: 0 closed, 1 half-open, 2 open.",
            ["catalog"],
            registry=registry,
        )
        self.context_api_latency = Histogram(
            "precedent_context_api_request_duration_seconds",
            "Context API server request latency by endpoint and status code.",
            ["endpoint", "status"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.guard_decisions = Counter(
            "precedent_guard_decisions_total",
            "Direct changes the guard answered, by the namespace's mode (enforce or warn) and "
            "outcome (covered, break-glass, warned, refused).",
            ["mode", "outcome"],
            registry=registry,
        )
        self.guard_latency = Histogram(
            "precedent_guard_duration_seconds",
            "Time to answer one admission request of the guard.",
            ["outcome"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.outcomes = Counter(
            "precedent_outcomes_total",
            "Reported outcomes of remediation requests handled by the operator, by result.",
            ["result"],
            registry=registry,
        )
        self.decisions = Counter(
            "precedent_decisions_total",
            "Answered remediation requests by risk band and the policy's decision.",
            ["band", "decision"],
            registry=registry,
        )
        self.assessment_duration = Histogram(
            "precedent_assessment_duration_seconds",
            "Time to reconcile one remediation request (history, policy, playbook selection).",
            ["outcome"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.top_incident = Counter(
            "precedent_top_incident_matches_total",
            "Answered remediation requests by their most relevant past incident.",
            ["incident"],
            registry=registry,
        )
        self.stalled_requests = Gauge(
            "precedent_stalled_requests",
            "Remediation requests held Stalled by this operator process, by reason.",
            ["reason"],
            registry=registry,
        )
        self.history_incidents = Gauge(
            "precedent_history_incidents",
            "Incidents in the history snapshot requests are scored against.",
            registry=registry,
        )
        self.vector_index = Gauge(
            "precedent_vector_index_info",
            "The vector index in use: 1 for its kind (exact, approximate, none), else 0.",
            ["kind"],
            registry=registry,
        )
        self.approvals_pending = Gauge(
            "precedent_approvals_pending",
            "Escalated requests waiting for a human approval (enforce mode).",
            registry=registry,
        )
        self.approval_wait = Histogram(
            "precedent_approval_wait_seconds",
            "From a request's creation to the human decision (approve or reject) on it.",
            buckets=(60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 72 * 3600),
            registry=registry,
        )
        # -- fleet memory (seed 001) --------------------------------------------------------
        self.memory_queries = Counter(
            "precedent_memory_queries_total",
            "Fleet memory queries by status: success, timeout, circuit_open, auth, "
            "unreachable, not_found, throttled, mapping or error.",
            ["status"],
            registry=registry,
        )
        self.memory_latency = Histogram(
            "precedent_memory_query_duration_seconds",
            "Latency of one fleet memory query (deadline included), by status.",
            ["status"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.memory_circuit_state = Gauge(
            "precedent_memory_circuit_state",
            "Circuit breaker in front of the fleet memory: 0 closed, 1 half-open, 2 open.",
            registry=registry,
        )
        self.memory_writes = Counter(
            "precedent_memory_writes_total",
            "Incidents written to the fleet memory in the background: success, retry "
            "(attempts after a failure) or dropped (retries exhausted).",
            ["status"],
            registry=registry,
        )


METRICS = Metrics(REGISTRY)
"""The process-wide metrics on prometheus-client's default registry."""
