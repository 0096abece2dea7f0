"""``precedent demo`` as a newcomer runs it: at most ~80 lines, and every ``$ kubectl`` line it
shows is a command it ran with the real output. With ``--keep`` the sandbox stays up, so each
shown command is run again here (real kubectl, the printed KUBECONFIG) and compared."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.backends import fresh_control_plane

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl on PATH"),
]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
KEEP_PROMPT = "press Ctrl-C here to stop them."


def blocks(lines: list[str]) -> list[tuple[list[str], list[str]]]:
    """Each ``$ kubectl …`` line (split as a shell would) with the lines printed under it, up
    to the next blank line."""
    found = []
    for i, line in enumerate(lines):
        if line.startswith("$ kubectl "):
            output = []
            for after in lines[i + 1 :]:
                if not after.strip():
                    break
                output.append(after)
            found.append((shlex.split(line[2:]), output))
    return found


def without_age(lines: list[str]) -> list[list[str]]:
    header = lines[0].split()
    age = header.index("AGE")
    return [[c for j, c in enumerate(line.split()) if j != age] for line in lines]


def _start_demo() -> subprocess.Popen[str]:
    """``precedent demo --keep`` in its own process group, with Ctrl-C's default meaning (a
    shell that ran these tests in the background would hand it SIGINT ignored)."""
    return subprocess.Popen(
        [str(BIN / "precedent"), "demo", "--keep"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _read_until_kept(demo: subprocess.Popen[str]) -> list[str]:
    assert demo.stdout is not None
    lines: list[str] = []
    for line in demo.stdout:
        lines.append(line.rstrip("\n"))
        if line.strip() == KEEP_PROMPT:
            break
    return lines


def _stop_demo(demo: subprocess.Popen[str], signum: int) -> str:
    """Send ``signum``; the demo's remaining output once it exited. A demo that does not
    exit is killed with its children (the sandbox, the operator), then the test fails."""
    demo.send_signal(signum)
    try:
        rest, _ = demo.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(demo.pid, signal.SIGKILL)
        demo.communicate()
        raise
    return rest


def _assert_stopped_cleanly(demo: subprocess.Popen[str], rest: str, url: str) -> None:
    """The demo exited 0, said so, and its sandbox API server no longer answers."""
    assert demo.returncode == 0, rest
    assert "stopped the operator and the sandbox" in rest
    with pytest.raises(httpx.TransportError):
        httpx.get(url, timeout=5)


def test_demo_output_is_short_and_every_kubectl_line_was_run() -> None:
    demo = _start_demo()
    lines: list[str] = []
    try:
        lines = _read_until_kept(demo)
        assert lines, "the demo printed nothing"
        assert lines[-1] == KEEP_PROMPT, "\n".join(lines)
        keep_block = lines.index(next(x for x in lines if "keep running (--keep)" in x))
        shown = lines[: keep_block - 1]
        assert len(shown) + 1 <= 80, f"{len(shown)} lines:\n" + "\n".join(shown)
        export = next(x for x in lines[keep_block:] if x.strip().startswith("export KUBECONFIG="))
        kubeconfig = export.split("=", 1)[1]
        url = next(x for x in lines if x.startswith("sandbox API server: ")).split(": ", 1)[1]
        env = {
            **os.environ,
            "KUBECONFIG": kubeconfig,
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        }

        def kubectl(*args: str) -> list[str]:
            done = subprocess.run(
                ["kubectl", *args], env=env, capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, done.stderr
            return (done.stdout + done.stderr).rstrip().splitlines()

        commands = blocks(shown)
        approved = next(a[3] for a, _ in commands if a[1:3] == ["precedent", "approve"])
        approved = approved.split("/")[1]
        verbs = [
            args[1] if args[1] != "precedent" else f"precedent {args[2]}" for args, _ in commands
        ]
        # Approved first: an outcome counts only for an approved action.
        assert verbs == ["get", "precedent explain", "precedent approve", "wait", "patch"]
        for args, output in commands:
            assert args[0] == "kubectl"
            assert not any("…" in a for a in args), args  # nothing elided: runnable as shown
            assert output, f"{shlex.join(args)} printed nothing"
            verb = args[1]
            if verb == "get":
                # The same table now, but for the request the demo approved since.
                again, before = without_age(kubectl(*args[1:])), without_age(output)
                changed = [row for row in again if row not in before]
                assert [row[1] for row in changed] == [approved], changed
                assert changed[0][-1] == "Approved"
                assert len(again) == len(before)
            elif verb == "wait":
                assert kubectl(*args[1:]) == output
            elif verb == "patch":
                # Run once only (an outcome is set once): the request holds the shown payload.
                name, namespace = args[3], args[args.index("-n") + 1]
                payload = json.loads(args[args.index("-p") + 1])
                live = json.loads(
                    "\n".join(kubectl("get", "rr", name, "-n", namespace, "-o", "json"))
                )
                assert live["spec"]["outcome"] == payload["spec"]["outcome"]
                assert output == [f"remediationrequest.precedent.dev/{name} patched"]
            elif args[2] == "explain":
                assert kubectl(*args[1:]) == output
            else:  # approve: the approval it printed exists, with the shown reason
                created = output[0].split()[0]
                namespace = args[args.index("-n") + 1]
                spec = json.loads(
                    "\n".join(kubectl("get", created, "-n", namespace, "-o", "json"))
                )["spec"]
                assert spec["reason"] == args[args.index("--reason") + 1]
                assert spec["requestRef"]["name"] == args[3].split("/")[1]
    finally:
        rest = _stop_demo(demo, signal.SIGINT)
    _assert_stopped_cleanly(demo, rest, url)


def test_sigterm_stops_the_demo_with_its_sandbox_and_operator() -> None:
    # A ``kill``, ``timeout`` or a cancelled job sends SIGTERM: the children stop too.
    demo = _start_demo()
    try:
        lines = _read_until_kept(demo)
        assert lines[-1:] == [KEEP_PROMPT], "\n".join(lines)
        url = next(x for x in lines if x.startswith("sandbox API server: ")).split(": ", 1)[1]
        assert httpx.get(url + "/version", timeout=5).status_code == 200
    finally:
        rest = _stop_demo(demo, signal.SIGTERM)
    _assert_stopped_cleanly(demo, rest, url)
    # No process of the demo's group is left (the operator and the sandbox were its children).
    with pytest.raises(ProcessLookupError):
        os.killpg(demo.pid, 0)


def test_the_demo_runs_against_a_real_cluster_from_its_kubeconfig(
    real_etcd: object, tmp_path: Path
) -> None:
    """``precedent demo --kubeconfig`` on a real kube-apiserver with nothing installed: the CRDs
    are created, every request is answered, and the objects stay."""
    server = fresh_control_plane(real_etcd, {}, tmp_path / "control-plane")  # type: ignore[arg-type]
    try:
        kubeconfig = server.write_kubeconfig(tmp_path / "admin")
        done = subprocess.run(
            [str(BIN / "precedent"), "demo", "--kubeconfig", str(kubeconfig)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            env={
                **os.environ,
                "PATH": f"{BIN}{os.pathsep}{server.kubectl.parent}{os.pathsep}"
                f"{os.environ.get('PATH', '')}",
            },
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "18/18 Ready" in done.stdout
        assert done.stdout.rstrip().endswith("what the demo created stays in the cluster")
        with httpx.Client(
            base_url=server.url,
            verify=server.ssl_context(),
            headers={"Authorization": f"Bearer {server.admin_token}"},
        ) as admin:
            listed = admin.get("/apis/precedent.dev/v1alpha1/remediationrequests").json()
        assert len(listed["items"]) == 18
    finally:
        server.stop()
