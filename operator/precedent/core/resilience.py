"""Retry and circuit-breaker policies for remote calls: pure, clock and randomness injected.

``RetryPolicy``: after a failed attempt, retry up to ``retries`` times, waiting
``min(max_delay, base_delay × 2^(n-1))`` before retry n, less a random share of up to
``jitter`` of it, so clients that failed together do not retry together.

``CircuitBreaker``: closed → open after ``failure_threshold`` consecutive failed calls; while
open, calls are refused without trying; after ``reset_seconds`` it is half-open and lets one
trial call through: success closes it, failure opens it for another cool-down.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["BreakerState", "CircuitBreaker", "RetryPolicy"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times to retry and how long to wait before each retry."""

    retries: int = 3
    """Retries after the first attempt (seed 004: 3)."""
    base_delay: float = 0.1
    """Seconds before the first retry; doubles for each later one."""
    max_delay: float = 1.0
    """Longest wait between two attempts, in seconds."""
    jitter: float = 0.5
    """Largest share of a delay taken off at random, 0–1."""

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError("retries must be ≥ 0")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("delays must be ≥ 0")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("jitter must be in [0, 1]")

    @property
    def attempts(self) -> int:
        """The first attempt plus the retries."""
        return self.retries + 1

    def delay(self, retry: int, random: Callable[[], float]) -> float:
        """Seconds to wait before retry number ``retry`` (1-based); ``random()`` is in [0, 1)."""
        if retry < 1:
            raise ValueError("retry numbers start at 1")
        ceiling: float = min(self.max_delay, self.base_delay * 2.0 ** (retry - 1))
        return ceiling * (1.0 - self.jitter * random())


class BreakerState(StrEnum):
    """Circuit-breaker state; ``level`` is what the state gauge shows."""

    CLOSED = "closed"
    HALF_OPEN = "half_open"
    OPEN = "open"

    @property
    def level(self) -> int:
        """0 closed, 1 half-open, 2 open."""
        return {"closed": 0, "half_open": 1, "open": 2}[self.value]


class CircuitBreaker:
    """Consecutive-failure circuit breaker with a cool-down and a single half-open trial."""

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        failure_threshold: int = 5,
        reset_seconds: float = 30.0,
        on_change: Callable[[BreakerState], None] | None = None,
    ) -> None:
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be ≥ 1")
        if reset_seconds < 0:
            raise ValueError("reset_seconds must be ≥ 0")
        self._clock = clock
        self.failure_threshold = failure_threshold
        self.reset_seconds = reset_seconds
        self._on_change = on_change
        self._state = BreakerState.CLOSED
        self._failures = 0
        self._opened_at = 0.0
        self._trial_started: float | None = None

    def _set(self, state: BreakerState) -> None:
        if state is not self._state:
            self._state = state
            if self._on_change is not None:
                self._on_change(state)

    @property
    def state(self) -> BreakerState:
        """The current state; an open breaker whose cool-down is over reads as half-open."""
        if (
            self._state is BreakerState.OPEN
            and self._clock() - self._opened_at >= self.reset_seconds
        ):
            self._set(BreakerState.HALF_OPEN)
        return self._state

    @property
    def consecutive_failures(self) -> int:
        """Failed calls since the last success."""
        return self._failures

    def retry_after(self) -> float:
        """Seconds left in the cool-down (0 unless open)."""
        if self.state is not BreakerState.OPEN:
            return 0.0
        return max(0.0, self.reset_seconds - (self._clock() - self._opened_at))

    def allow(self) -> bool:
        """Whether a call may go out now; in half-open, only one trial at a time."""
        state = self.state
        if state is BreakerState.CLOSED:
            return True
        if state is BreakerState.OPEN:
            return False
        now = self._clock()
        # A trial whose caller vanished (cancelled) must not wedge the breaker half-open.
        if self._trial_started is not None and now - self._trial_started < self.reset_seconds:
            return False
        self._trial_started = now
        return True

    def record_success(self) -> None:
        """A call succeeded: close the breaker."""
        self._failures = 0
        self._trial_started = None
        self._set(BreakerState.CLOSED)

    def record_failure(self) -> None:
        """A call failed: count it; open the breaker at the threshold or after a failed trial."""
        self._failures += 1
        trial_failed = self._state is BreakerState.HALF_OPEN
        self._trial_started = None
        if trial_failed or self._failures >= self.failure_threshold:
            self._opened_at = self._clock()
            if self._state is BreakerState.OPEN:
                return
            self._set(BreakerState.OPEN)
