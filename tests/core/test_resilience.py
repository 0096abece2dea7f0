"""Retry backoff and the circuit breaker, on an injected clock."""

from __future__ import annotations

import pytest

from precedent.core.resilience import BreakerState, CircuitBreaker, RetryPolicy


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_backoff_doubles_up_to_the_cap() -> None:
    policy = RetryPolicy(retries=5, base_delay=0.1, max_delay=0.5, jitter=0.5)
    ceilings = [policy.delay(n, lambda: 0.0) for n in range(1, 6)]
    assert ceilings == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5])


def test_jitter_takes_off_up_to_its_share() -> None:
    policy = RetryPolicy(base_delay=0.4, jitter=0.5)
    assert policy.delay(1, lambda: 0.0) == pytest.approx(0.4)
    assert policy.delay(1, lambda: 0.5) == pytest.approx(0.3)
    assert policy.delay(1, lambda: 0.999999) == pytest.approx(0.2, abs=1e-5)


def test_seed_defaults_are_three_retries() -> None:
    assert RetryPolicy().retries == 3
    assert RetryPolicy().attempts == 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"retries": -1}, "retries"), ({"jitter": 1.5}, "jitter"), ({"base_delay": -1}, "delays")],
)
def test_retry_policy_validates(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_breaker_opens_after_n_consecutive_failures() -> None:
    clock = Clock()
    changes: list[BreakerState] = []
    breaker = CircuitBreaker(
        clock=clock, failure_threshold=3, reset_seconds=30, on_change=changes.append
    )
    for _ in range(2):
        assert breaker.allow()
        breaker.record_failure()
    assert breaker.state is BreakerState.CLOSED
    breaker.record_success()  # a success resets the count
    for _ in range(3):
        assert breaker.allow()
        breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    assert not breaker.allow()
    assert breaker.retry_after() == pytest.approx(30)
    assert changes == [BreakerState.OPEN]


def test_breaker_half_opens_after_the_cool_down_and_closes_on_success() -> None:
    clock = Clock()
    breaker = CircuitBreaker(clock=clock, failure_threshold=1, reset_seconds=30)
    breaker.record_failure()
    clock.now += 29.9
    assert not breaker.allow()
    clock.now += 0.1
    assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.allow()  # the one trial
    assert not breaker.allow()  # nobody else while it is out
    breaker.record_success()
    assert breaker.state is BreakerState.CLOSED
    assert breaker.allow()


def test_failed_trial_reopens_for_another_cool_down() -> None:
    clock = Clock()
    breaker = CircuitBreaker(clock=clock, failure_threshold=2, reset_seconds=10)
    breaker.record_failure()
    breaker.record_failure()
    clock.now += 10
    assert breaker.allow()
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    assert breaker.retry_after() == pytest.approx(10)


def test_an_abandoned_trial_does_not_wedge_the_breaker() -> None:
    clock = Clock()
    breaker = CircuitBreaker(clock=clock, failure_threshold=1, reset_seconds=10)
    breaker.record_failure()
    clock.now += 10
    assert breaker.allow()  # trial goes out and its caller is cancelled: nothing recorded
    assert not breaker.allow()
    clock.now += 10
    assert breaker.allow()


def test_state_levels_for_the_gauge() -> None:
    assert [s.level for s in BreakerState] == [0, 1, 2]


def test_breaker_validates() -> None:
    with pytest.raises(ValueError, match="failure_threshold"):
        CircuitBreaker(clock=Clock(), failure_threshold=0)
