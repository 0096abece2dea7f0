"""Every reference form that names a Service, and every guard against naming one by accident."""

from __future__ import annotations

import pytest

from precedent.core.graph.model import Confidence, EdgeType
from precedent.core.graph.references import (
    HostRef,
    references_in_args,
    references_in_value,
    verb_of_key,
)


@pytest.mark.parametrize(
    ("value", "key", "expected"),
    [
        # fully qualified, anywhere in the value
        ("checkout.shop.svc.cluster.local", None, HostRef("checkout", "shop", Confidence.FQDN)),
        (
            "http://checkout.shop.svc.cluster.local:8080",
            None,
            HostRef("checkout", "shop", Confidence.FQDN),
        ),
        ("checkout.shop.svc", None, HostRef("checkout", "shop", Confidence.FQDN)),
        ("redis.shop.svc:6379", None, HostRef("redis", "shop", Confidence.FQDN)),
        (
            "postgres://user@db.ns.svc.cluster.local:5432/x",
            None,
            HostRef("db", "ns", Confidence.FQDN),
        ),
        (
            "jdbc:postgresql://ledger.shop.svc.cluster.local/ledger",
            None,
            HostRef("ledger", "shop", Confidence.FQDN),
        ),
        ("servers=a.b.svc,other", None, HostRef("a", "b", Confidence.FQDN)),
        # svc.ns as a host
        ("svc.ns:5432", None, HostRef("svc", "ns", Confidence.NAMESPACED)),
        (
            "http://payment-api.payments/score",
            None,
            HostRef("payment-api", "payments", Confidence.NAMESPACED),
        ),
        ("ledger.shop", "DB_HOST", HostRef("ledger", "shop", Confidence.NAMESPACED)),
        # bare name as URL host or host:port
        ("http://svc:8080/path", None, HostRef("svc", None, Confidence.HOST)),
        ("http://payment-api", None, HostRef("payment-api", None, Confidence.HOST)),
        ("amqp://guest:guest@rabbitmq:5672/", None, HostRef("rabbitmq", None, Confidence.HOST)),
        ("redis:6379", None, HostRef("redis", None, Confidence.HOST)),
        ("REDIS", "X", HostRef("redis", None, Confidence.EXACT)),
        # the whole value
        ("cache", "REDIS_HOST", HostRef("cache", None, Confidence.EXACT_HOST_KEY)),
        ("cache", "CACHE_MODE", HostRef("cache", None, Confidence.EXACT)),
        ("  api  ", "UPSTREAM", HostRef("api", None, Confidence.EXACT_HOST_KEY)),
    ],
)
def test_each_form_names_the_service(value: str, key: str | None, expected: HostRef) -> None:
    assert expected in references_in_value(value, key)


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("api-verbose", "api"),  # a longer token
        ("debug,api-verbose", "api"),
        ("disable the cache for tests", "cache"),  # a word in prose
        ("the cache: warm", "cache"),  # "cache:" without a port
        ("http://example.com/cache", "cache"),  # a URL's path
        ("http://example.com/?backend=cache", "cache"),  # a URL's query
        ("my-cache:6379", "cache"),  # a suffix of the host
        ("cache-0:6379", "cache"),
        ("cache_dir=/tmp/cache", "cache"),
        ("/var/lib/cache", "cache"),
        ("api.example.com", "api"),  # an external host: neither svc.ns nor cluster DNS
        ("https://api.stripe.com/v1", "api"),
        ("12:30", "12"),  # not a DNS-1035 name
        ("apix:80", "api"),
        ("xapi:80", "api"),
        ("api.yaml.bak", "api"),
        ("http://api_v2/x", "api"),  # "_" is no host character: api_v2 is not a host
        ("db.ns.svc_old", "db"),
    ],
)
def test_guards_against_false_positives(value: str, name: str) -> None:
    found = [r for r in references_in_value(value, "LOG_LEVEL") if r.name == name]
    assert found == []


def test_external_host_names_no_namespace() -> None:
    # api.stripe.com has three labels and no "svc": no reference at all.
    assert references_in_value("https://api.stripe.com/v1", "STRIPE_URL") == []


def test_two_labels_may_be_svc_ns_and_are_resolved_by_the_graph() -> None:
    # config.yaml parses as Service config in namespace yaml; only an existing Service counts.
    assert references_in_value("config.yaml", "FILE") == [
        HostRef("config", "yaml", Confidence.NAMESPACED)
    ]


def test_several_references_in_one_value_keep_the_strongest_form() -> None:
    refs = references_in_value(
        "redis-0:6379,redis-1:6379 http://redis-0.shop.svc.cluster.local", "SERVERS"
    )
    assert HostRef("redis-0", "shop", Confidence.FQDN) in refs
    assert HostRef("redis-0", None, Confidence.HOST) in refs
    assert HostRef("redis-1", None, Confidence.HOST) in refs
    assert len(refs) == 3


def test_args_split_flags_from_values() -> None:
    found = references_in_args(
        ["--db-host", "ledger", "--cache=redis:6379", "--mode", "fast", "http://checkout:8080"]
    )
    assert ("--db-host ledger", HostRef("ledger", None, Confidence.EXACT_HOST_KEY)) in found
    assert ("--cache redis:6379", HostRef("redis", None, Confidence.HOST)) in found
    assert ("http://checkout:8080", HostRef("checkout", None, Confidence.HOST)) in found
    assert ("--mode fast", HostRef("fast", None, Confidence.EXACT)) in found


@pytest.mark.parametrize(
    ("key", "verb"),
    [
        ("ORDERS_CONSUMER_URL", EdgeType.SUBSCRIBES),
        ("consume-from", EdgeType.SUBSCRIBES),
        ("ORDER_EVENTS_PUBLISHER_URL", EdgeType.PUBLISHES),
        ("DB_REPLICA_HOST", EdgeType.READS_FROM),
        ("LEDGER_WRITER_DSN", EdgeType.WRITES_TO),
        ("PAYMENT_URL", None),
        ("REDISPUBLISHER", None),  # whole words only
        (None, None),
    ],
)
def test_verb_of_key(key: str | None, verb: EdgeType | None) -> None:
    assert verb_of_key(key) == verb
