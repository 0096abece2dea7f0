"""The fleet memory on a real OpenSearch with its security plugin on: HTTPS with a CA of our own,
basic auth against the plugin's internal users, and a role that may do what the docs say the
memory needs (search, read the mapping, bulk-write the index) and nothing else.

The node is started once for this module (tests/opensearch_node.py, ``Security``); an admin
installs the index as an administrator would, and the operator's and the CLI's own user works
under the least-privilege role.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from precedent.cli import main
from precedent.settings import Settings
from precedent.wiring import build_service, load_history_files
from tests.opensearch_node import (
    InternalUser,
    OpenSearchCluster,
    OpenSearchError,
    Security,
    opensearch_unavailable,
    start_cluster,
)

pytestmark = [pytest.mark.integration, pytest.mark.opensearch]

REPO = Path(__file__).resolve().parents[2]
INDEX = "precedent-incidents"
WRITER = InternalUser("precedent-east", "East-memory-pw-1", ("precedent_memory",))
READER = InternalUser("precedent-west", "West-memory-pw-2", ("precedent_memory",))
ROLES: dict[str, Any] = {
    # What docs/fleet-memory.md tells an administrator to grant the memory's user.
    "precedent_memory": {
        "cluster_permissions": ["indices:data/write/bulk"],
        "index_permissions": [
            {
                "index_patterns": [f"{INDEX}*"],
                "allowed_actions": ["read", "write", "indices:admin/mappings/get"],
            }
        ],
    }
}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenSearchCluster]:
    """One node with the security plugin on; the index installed by its admin."""
    reason = opensearch_unavailable()
    if reason is not None:
        pytest.skip(reason)
    security = Security(tmp_path_factory.mktemp("opensearch-tls"), [WRITER, READER], ROLES)
    try:
        cluster = start_cluster(1, security=security)
    except OpenSearchError as error:
        pytest.fail(str(error))
    try:
        yield cluster
    finally:
        cluster.stop()


def env(cluster: OpenSearchCluster, user: tuple[str, str], **extra: str) -> dict[str, str]:
    security = cluster.nodes[0].security
    assert security is not None
    return {
        "PRECEDENT_MEMORY_URL": cluster.url,
        "PRECEDENT_MEMORY_INDEX": INDEX,
        "PRECEDENT_MEMORY_AUTH": "basic",
        "PRECEDENT_MEMORY_USERNAME": user[0],
        "PRECEDENT_MEMORY_PASSWORD": user[1],
        "PRECEDENT_MEMORY_CA_BUNDLE": str(security.ca),
        "PRECEDENT_CLUSTER_NAME": "east",
        **extra,
    }


def memory_cli(
    cluster: OpenSearchCluster, user: tuple[str, str], *args: str, **extra: str
) -> Result:
    if args[0] == "init":
        args = (*args, "--manifests", str(cluster.manifests))
    return CliRunner().invoke(main, ["memory", *args], env=env(cluster, user, **extra))


def as_user(user: InternalUser) -> tuple[str, str]:
    return (user.name, user.password)


@pytest.fixture(scope="module")
def installed(secured: OpenSearchCluster) -> OpenSearchCluster:
    security = secured.nodes[0].security
    assert security is not None
    done = memory_cli(secured, security.admin, "init")
    assert done.exit_code == 0, done.output + done.stderr
    assert done.output.strip() == f"index {secured.url}/{INDEX}: created"
    return secured


@pytest.fixture(scope="module")
def pushed(installed: OpenSearchCluster) -> OpenSearchCluster:
    """The bundled history pushed by east's own user, searchable."""
    history = str(REPO / "data" / "incidents")
    done = memory_cli(installed, as_user(WRITER), "push", "--history", history)
    assert done.exit_code == 0, done.output + done.stderr
    written = re.search(r"(\d+) incidents written to ", done.output)
    assert written is not None, done.output
    assert int(written.group(1)) == len(load_history_files([REPO / "data" / "incidents"]))
    with installed.client() as client:
        client.post(f"/{INDEX}/_refresh").raise_for_status()
    return installed


def test_the_memory_s_own_user_pushes_and_searches_over_https(pushed: OpenSearchCluster) -> None:
    found = memory_cli(
        pushed,
        as_user(READER),
        "search",
        "premature scale-down of checkout during sale",
        "--resource-type",
        "Deployment",
    )
    assert found.exit_code == 0, found.output + found.stderr
    assert "INC-2024-3671" in found.output


def test_a_wrong_password_is_one_line_naming_the_credentials(
    installed: OpenSearchCluster,
) -> None:
    done = memory_cli(
        installed,
        (WRITER.name, "not-the-password"),
        "search",
        "checkout",
        "--resource-type",
        "Deployment",
    )
    assert done.exit_code == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: memory {installed.url}/{INDEX}: ")
    assert "401" in line
    assert "credentials" in line


def test_a_role_without_the_right_is_one_line_naming_the_refusal(
    installed: OpenSearchCluster,
) -> None:
    # The memory's role may not install templates: only an administrator can init.
    done = memory_cli(installed, as_user(WRITER), "init")
    assert done.exit_code == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: memory {installed.url}/{INDEX}: ")
    assert "403" in line


def test_the_server_s_certificate_is_checked(installed: OpenSearchCluster) -> None:
    # Without the CA bundle the node's certificate is not trusted: said, with the setting.
    done = memory_cli(
        installed,
        as_user(READER),
        "search",
        "checkout",
        "--resource-type",
        "Deployment",
        PRECEDENT_MEMORY_CA_BUNDLE="",
    )
    assert done.exit_code == 1
    [line] = done.stderr.splitlines()
    assert "PRECEDENT_MEMORY_CA_BUNDLE" in line
    # Told not to verify, it connects (and is still refused a wrong password: auth stands).
    unverified = memory_cli(
        installed,
        (READER.name, "wrong"),
        "search",
        "checkout",
        "--resource-type",
        "Deployment",
        PRECEDENT_MEMORY_CA_BUNDLE="",
        PRECEDENT_MEMORY_VERIFY_TLS="false",
    )
    assert unverified.exit_code == 1
    assert "401" in unverified.stderr


async def test_another_cluster_s_operator_scores_with_the_fleet_s_incidents(
    pushed: OpenSearchCluster,
) -> None:
    # West's operator wired from its settings (as the Deployment sets them from a Secret),
    # no history of its own: what it knows of checkout comes from east, over HTTPS.
    security = pushed.nodes[0].security
    assert security is not None
    config = Settings(
        history_path="",
        catalog="",
        cluster_name="west",
        memory_enabled=True,
        memory_url=pushed.url,
        memory_index=INDEX,
        memory_auth="basic",
        memory_username=READER.name,
        memory_password=READER.password,
        memory_ca_bundle=str(security.ca),
    )
    west = build_service(config, incidents=[], follows_cluster=True)
    try:
        assessment = await west.assess(
            {
                "action": "scale_down",
                "target": {"kind": "Deployment", "name": "checkout", "namespace": "shop"},
                "description": "Premature scale-down of checkout to free capacity during a sale",
            }
        )
        assert assessment.engine.sources == ["memory"]
        listed = {s.id: s for s in assessment.similar_incidents}
        assert listed["INC-2024-3671"].source == "memory"
        assert listed["INC-2024-3671"].cluster == "east"
    finally:
        await west.aclose()
