"""`fedctl cluster ...` end to end: a simulated fleet and a controller, as processes."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from federation.registry import embedded
from tests.integration.test_cli_api import fedctl

pytestmark = pytest.mark.integration

PROFILE = """
clusters:
  - name: x86
    region: us-east
    nodePools: [{name: cpu, count: 3, cpu: "16", memory: 64Gi}]
  - name: arm
    region: eu-west
    nodePools: [{name: c7g, count: 2, arch: arm64, cpu: "16", memory: 32Gi}]
  - name: gpu
    region: us-west
    nodePools:
      - {name: system, count: 1, cpu: "8", memory: 32Gi}
      - name: a100
        count: 2
        cpu: "96"
        memory: 1152Gi
        accelerators:
          - {model: nvidia-a100-80gb, resourceName: nvidia.com/gpu, countPerNode: 8}
"""


def _wait_http(url: str, proc: subprocess.Popen[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{url} never answered")
        time.sleep(0.1)


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def stack(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    yield from _stack(own_etcd, tmp_path)


@pytest.fixture
def quick_graceful_stack(
    own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> Iterator[tuple[str, Path]]:
    """`stack` whose graceful evictions time out after 2 s."""
    yield from _stack(own_etcd, tmp_path, FEDCTL_FAILOVER__GRACEFUL_TIMEOUT="2")


def _stack(
    own_etcd: embedded.EmbeddedEtcd, tmp_path: Path, **settings: str
) -> Iterator[tuple[str, Path]]:
    profile = tmp_path / "fleet.yaml"
    profile.write_text(PROFILE)
    kubeconfig = tmp_path / "fleet.kubeconfig"
    log = (tmp_path / "procs.log").open("w")
    fleet = subprocess.Popen(
        [sys.executable, "-m", "federation.cli.main", "sim", "up", "--profile", str(profile),
         "--kubeconfig", str(kubeconfig)],
        stdout=log, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    state = kubeconfig.with_name(kubeconfig.name + ".fleet.json")
    deadline = time.monotonic() + 30
    while not state.exists():
        assert fleet.poll() is None and time.monotonic() < deadline, "fleet did not start"
        time.sleep(0.1)
    port = embedded.free_port()
    env = {**os.environ, "FEDCTL_MONITOR__PROBE_PERIOD": "0.3",
           "FEDCTL_MONITOR__FAILURE_THRESHOLD": "1", "FEDCTL_MONITOR__SUCCESS_THRESHOLD": "0",
           **settings}  # fmt: skip
    controller = subprocess.Popen(
        [sys.executable, "-m", "federation.cli.main", "--etcd", own_etcd.url, "controller",
         "--listen", f"127.0.0.1:{port}", "--kubeconfig", str(kubeconfig)],
        stdout=log, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    server = f"http://127.0.0.1:{port}"
    try:
        _wait_http(server + "/readyz", controller)
        yield server, kubeconfig
    finally:
        _stop(controller)
        _stop(fleet)
        log.close()


def _join(server: str, kubeconfig: Path, name: str, region: str, *extra: str) -> str:
    result = fedctl("cluster", "join", name, "--kubeconfig", str(kubeconfig), "--context", name,
                    "--region", region, *extra, server=server)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_join_three_members_and_list_capacity_by_chip(stack: tuple[str, Path]) -> None:
    server, kubeconfig = stack
    assert "reachable, Kubernetes v1.32" in _join(server, kubeconfig, "x86", "us-east")
    _join(server, kubeconfig, "arm", "eu-west")
    out = _join(server, kubeconfig, "gpu", "us-west", "--price", "nvidia-a100-80gb=3.1",
                "--price", "cpu=0.04")  # fmt: skip
    assert "cluster gpu joined" in out
    deadline = time.monotonic() + 30
    while True:
        listing = fedctl("cluster", "list", server=server)
        assert listing.returncode == 0, listing.stderr
        rows = {line.split()[0]: line for line in listing.stdout.splitlines()[1:]}
        if len(rows) == 3 and all(" True " in f" {r} " for r in rows.values()):
            break
        assert time.monotonic() < deadline, listing.stdout
        time.sleep(0.3)
    header = listing.stdout.splitlines()[0]
    assert header.split()[:2] == ["NAME", "REGION"]
    assert "nvidia-a100-80gb" in rows["gpu"] and "16/16" in rows["gpu"]
    assert "arm64" in rows["arm"] and "32/32" in rows["arm"]
    assert "amd64" in rows["x86"] and "48/48" in rows["x86"]
    described = fedctl("cluster", "describe", "gpu", server=server)
    assert described.returncode == 0 and "nvidia-a100-80gb" in described.stdout
    assert re.search(r"^Cluster ID:  [0-9a-f-]{36}$", described.stdout, re.M), described.stdout
    assert "Workloads:   <none>" in described.stdout
    # kubectl's word order gives the same view, not a dump of the spec.
    spelled = fedctl("describe", "cluster", "gpu", server=server)
    assert spelled.returncode == 0 and spelled.stdout == described.stdout


def test_join_refuses_an_unreachable_member_with_the_reason(
    stack: tuple[str, Path], tmp_path: Path
) -> None:
    server, kubeconfig = stack
    doc = json.loads(json.dumps(_yaml(kubeconfig)))
    port = embedded.free_port()
    for entry in doc["clusters"]:
        entry["cluster"]["server"] = f"http://127.0.0.1:{port}"
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text(json.dumps(doc))
    result = fedctl("cluster", "join", "x86", "--kubeconfig", str(broken), "--context", "x86",
                    "--region", "us-east", server=server)  # fmt: skip
    assert result.returncode == 1
    assert "not reachable" in result.stderr and f"127.0.0.1:{port}" in result.stderr
    assert "x86" not in fedctl("cluster", "list", server=server).stdout


@pytest.mark.parametrize(
    ("text", "said"),
    [
        pytest.param("apiVersion: v1\nclusters: [\n", ":3:1: not valid YAML", id="not YAML"),
        pytest.param("", " is empty", id="empty"),
    ],
)
def test_join_refuses_a_kubeconfig_that_is_not_one_in_one_line(
    stack: tuple[str, Path], tmp_path: Path, text: str, said: str
) -> None:
    """Such a file printed a PyYAML (or TypeError) traceback; now one line names it."""
    server, _ = stack
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text(text)
    result = fedctl("cluster", "join", "b1", "--kubeconfig", str(broken), "--region", "r",
                    server=server)  # fmt: skip
    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith(f"fedctl: kubeconfig {broken}{said}"), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


UNAUTHORIZED = json.dumps(
    {"kind": "Status", "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized",
     "code": 401}
).encode()  # fmt: skip


@contextlib.contextmanager
def _rejecting(upstream: str) -> Iterator[str]:
    """An endpoint that answers /readyz, /healthz and /version from `upstream` to anyone
    and 401 to everything else: a real API server given a wrong or expired token."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] in ("/readyz", "/healthz", "/version"):
                with urllib.request.urlopen(upstream + self.path, timeout=5) as resp:
                    code, body = resp.status, resp.read()
            else:
                code, body = 401, UNAUTHORIZED
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_join_refuses_credentials_the_member_rejects(
    stack: tuple[str, Path], tmp_path: Path
) -> None:
    """The member answered /readyz and /version to anyone, so join said "reachable ...
    joined" for a token it rejected, and the Cluster sat Ready=True with no APIs or id."""
    server, kubeconfig = stack
    doc = json.loads(json.dumps(_yaml(kubeconfig)))
    (entry,) = [c for c in doc["clusters"] if c["name"] == "x86"]
    with _rejecting(entry["cluster"]["server"]) as url:
        entry["cluster"]["server"] = url
        rejected = tmp_path / "rejected.kubeconfig"
        rejected.write_text(json.dumps(doc))

        result = fedctl("cluster", "join", "badtok", "--kubeconfig", str(rejected),
                        "--context", "x86", "--region", "us-east", server=server)  # fmt: skip

    assert result.returncode == 1
    assert result.stderr == (
        "fedctl: cluster badtok: 401 Unauthorized on /api: the member rejects the credentials"
        " of this Cluster's kubeconfig (Unauthorized): fix the credentials, or join with"
        " --no-verify\n"
    ), result.stderr
    assert "badtok" not in fedctl("cluster", "list", server=server).stdout


def test_taint_cordon_uncordon_and_unjoin(stack: tuple[str, Path]) -> None:
    server, kubeconfig = stack
    _join(server, kubeconfig, "x86", "us-east", "--no-verify")
    added = fedctl("cluster", "taint", "x86", "gpu=none:NoSchedule", server=server)
    assert added.returncode == 0 and added.stdout == "cluster x86 tainted\n", added
    assert fedctl("cluster", "cordon", "x86", server=server).returncode == 0
    got = json.loads(fedctl("get", "cluster", "x86", "-o", "json", server=server).stdout)
    keys = {(t["key"], t["effect"]) for t in got["spec"]["taints"]}
    assert keys == {("gpu", "NoSchedule"), ("cluster.fedctl.io/cordoned", "NoSchedule")}
    assert fedctl("cluster", "uncordon", "x86", server=server).returncode == 0
    removed = fedctl("cluster", "taint", "x86", "gpu-", server=server)
    assert removed.returncode == 0 and removed.stdout == "cluster x86 untainted\n", removed
    got = json.loads(fedctl("get", "cluster", "x86", "-o", "json", server=server).stdout)
    assert got["spec"].get("taints", []) == []
    bad = fedctl("cluster", "taint", "x86", "oops:Sometimes", server=server)
    assert bad.returncode == 1 and "EFFECT one of" in bad.stderr
    bad = fedctl("cluster", "taint", "x86", "gpu type=a:NoSchedule", server=server)
    assert bad.returncode == 1 and "taint key 'gpu type' is not a qualified name" in bad.stderr
    assert fedctl("cluster", "unjoin", "x86", server=server).returncode == 0
    assert fedctl("get", "cluster", "x86", server=server).returncode == 1


def test_joining_a_joined_name_again_changes_only_what_the_flags_give(
    stack: tuple[str, Path],
) -> None:
    """A second `cluster join NAME` replaced the whole spec with one built from its flags:
    the cordon, `cluster taint`'s taints, the prices (spot too), zone, provider and labels
    were gone, and it said only "updated". Now it merges, and names what it changed."""
    server, kubeconfig = stack
    _join(server, kubeconfig, "x86", "us-east", "--zone", "us-east-1b", "--provider", "aws",
          "--label", "tier=web", "--taint", "example.com/dedicated=platform:NoSchedule",
          "--price", "cpu=0.04", "--spot-price", "cpu=0.01", "--currency", "EUR",
          "--no-verify")  # fmt: skip
    assert fedctl("cluster", "cordon", "x86", server=server).returncode == 0

    def spec() -> tuple[dict[str, Any], dict[str, str]]:
        got = json.loads(fedctl("get", "cluster", "x86", "-o", "json", server=server).stdout)
        return got["spec"], dict(got["metadata"].get("labels") or {})

    before, _ = spec()

    out = _join(server, kubeconfig, "x86", "us-east", "--label", "owner=platform",
                "--price", "memory=0.005", "--no-verify")  # fmt: skip

    assert out == "cluster x86 updated: label owner=platform; prices\n", out
    after, labels = spec()
    assert labels == {"tier": "web", "owner": "platform"}
    assert after["taints"] == before["taints"] and len(after["taints"]) == 2, after
    assert (after["zone"], after["provider"]) == ("us-east-1b", "aws")
    assert after["prices"]["currency"] == "EUR"
    assert after["prices"]["spot"]["cpu"] == before["prices"]["spot"]["cpu"]
    assert after["prices"]["onDemand"]["cpu"] == before["prices"]["onDemand"]["cpu"]
    assert after["prices"]["onDemand"]["memory"] != before["prices"]["onDemand"]["memory"]
    # Without --kubeconfig: the stored connection stays; only the region moves.
    moved = fedctl("cluster", "join", "x86", "--region", "eu-west", "--no-verify",
                   server=server)  # fmt: skip
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout == "cluster x86 updated: region us-east -> eu-west\n", moved.stdout
    assert spec()[0]["connection"] == after["connection"]
    again = fedctl("cluster", "join", "x86", "--no-verify", server=server)
    assert again.stdout == "cluster x86 unchanged\n", again


def test_unjoin_refuses_a_negative_timeout_before_tainting(stack: tuple[str, Path]) -> None:
    """`--timeout -1` added the unjoining NoExecute taint, so every workload began to
    leave, then gave up at once and left the cluster tainted."""
    server, kubeconfig = stack
    _join(server, kubeconfig, "x86", "us-east", "--no-verify")

    result = fedctl("cluster", "unjoin", "x86", "--timeout", "-1", server=server)

    assert result.returncode == 1
    assert result.stderr == (
        "fedctl: --timeout -1: expected seconds to wait, 0 or more; nothing done\n"
    ), result.stderr
    got = json.loads(fedctl("get", "cluster", "x86", "-o", "json", server=server).stdout)
    assert got["spec"].get("taints", []) == []


def test_label_sets_refuses_to_overwrite_unasked_and_removes(stack: tuple[str, Path]) -> None:
    """As `kubectl label`: K=V sets, an existing value is replaced only with --overwrite,
    K- removes (a missing one is named, not an error), and a bad argument is named."""
    server, kubeconfig = stack
    _join(server, kubeconfig, "x86", "us-east", "--no-verify", "--label", "tier=web")

    def labels() -> dict[str, str]:
        got = json.loads(fedctl("get", "cluster", "x86", "-o", "json", server=server).stdout)
        return dict(got["metadata"].get("labels") or {})

    assert fedctl("cluster", "label", "x86", "gpu=none", server=server).returncode == 0
    assert labels() == {"tier": "web", "gpu": "none"}
    refused = fedctl("cluster", "label", "x86", "tier=batch", server=server)
    assert refused.returncode == 1 and "--overwrite" in refused.stderr, refused.stderr
    assert labels()["tier"] == "web"
    done = fedctl("cluster", "label", "x86", "tier=batch", "gpu-", "--overwrite", server=server)
    assert done.returncode == 0 and "labeled" in done.stdout, done
    assert labels() == {"tier": "batch"}
    missing = fedctl("cluster", "label", "x86", "gpu-", server=server)
    assert missing.returncode == 0 and "not found" in missing.stderr, missing
    bad = fedctl("cluster", "label", "x86", "tier", server=server)
    assert bad.returncode == 1 and "KEY=VALUE" in bad.stderr, bad.stderr
    # A label Kubernetes refuses was stored and `labeled` said; now refused, unwritten.
    refused = fedctl("cluster", "label", "x86", "bad key!=x", "gpu=a100", server=server)
    assert refused.returncode == 1, refused
    assert "label 'bad key!=x': label key 'bad key!' is not a qualified name" in refused.stderr
    assert labels() == {"tier": "batch"}


def test_label_taint_and_cordon_take_several_names_a_selector_or_all(
    stack: tuple[str, Path],
) -> None:
    """`cluster label` took one name (`label a b team=web` read `b` as a bad label), and
    neither `-l` nor `--all`, as kubectl's does: a fleet was relabelled one call at a time.
    Now one call changes every cluster chosen, one line each; one cluster's refusal is
    said and the others are still changed (exit status 1)."""
    server, kubeconfig = stack
    _join(server, kubeconfig, "x86", "us-east", "--no-verify", "--label", "shape=cpu")
    _join(server, kubeconfig, "arm", "eu-west", "--no-verify", "--label", "shape=cpu")
    _join(server, kubeconfig, "gpu", "us-west", "--no-verify", "--label", "shape=gpu")

    def got() -> dict[str, tuple[dict[str, str], list[str]]]:
        listed = json.loads(fedctl("get", "clusters", "-o", "json", server=server).stdout)
        return {
            c["metadata"]["name"]: (
                dict(c["metadata"].get("labels") or {}),
                sorted(f"{t['key']}:{t['effect']}" for t in c["spec"].get("taints", [])),
            )
            for c in listed
        }

    named = fedctl("cluster", "label", "x86", "arm", "team=web", server=server)
    assert named.stdout == "cluster x86 labeled\ncluster arm labeled\n", named
    chosen = fedctl("cluster", "label", "-l", "shape=cpu", "tier=batch", server=server)
    assert chosen.stdout == "cluster arm labeled\ncluster x86 labeled\n", chosen
    every = fedctl("cluster", "label", "--all", "owner=platform", server=server)
    assert every.returncode == 0 and every.stdout.count(" labeled\n") == 3, every
    labels = {name: found[0] for name, found in got().items()}
    assert labels == {
        "x86": {"shape": "cpu", "team": "web", "tier": "batch", "owner": "platform"},
        "arm": {"shape": "cpu", "team": "web", "tier": "batch", "owner": "platform"},
        "gpu": {"shape": "gpu", "owner": "platform"},
    }
    partly = fedctl("cluster", "label", "x86", "gpu", "team=ml", server=server)
    assert partly.returncode == 1 and partly.stdout == "cluster gpu labeled\n", partly
    assert "cluster x86: label 'team' already has a value (web)" in partly.stderr
    none = fedctl("cluster", "label", "-l", "shape=tpu", "a=b", server=server)
    assert none.returncode == 1 and "no cluster matches -l 'shape=tpu'" in none.stderr, none
    both = fedctl("cluster", "label", "x86", "--all", "a=b", server=server)
    assert both.returncode == 1 and "not more than one of them" in both.stderr, both

    tainted = fedctl("cluster", "taint", "x86", "arm", "k=v:NoSchedule", server=server)
    assert tainted.stdout == "cluster x86 tainted\ncluster arm tainted\n", tainted
    cordoned = fedctl("cluster", "cordon", "--field-selector", "spec.region=us-west", server=server)
    assert cordoned.stdout == "cluster gpu cordoned\n", cordoned
    cordon = "cluster.fedctl.io/cordoned:NoSchedule"
    assert {name: found[1] for name, found in got().items()} == {
        "x86": ["k:NoSchedule"],
        "arm": ["k:NoSchedule"],
        "gpu": [cordon],
    }
    untainted = fedctl("cluster", "taint", "--all", "k-", server=server)
    assert untainted.returncode == 1, untainted  # gpu has no such taint: said, not fatal
    assert untainted.stdout == "cluster arm untainted\ncluster x86 untainted\n", untainted
    assert "taint 'k' on cluster gpu" in untainted.stderr
    assert fedctl("cluster", "uncordon", "--all", server=server).stdout.count("uncordoned") == 3
    assert all(not found[1] for found in got().values())


def _yaml(path: Path) -> dict[str, object]:
    from ruamel.yaml import YAML

    loaded: dict[str, object] = YAML(typ="safe").load(path.read_text())
    return loaded


def _member_items(kubeconfig: Path, context: str, api: str, plural: str) -> list[Any]:
    """The `plural` in the member's default namespace, read from it directly."""
    doc = _yaml(kubeconfig)
    contexts = {c["name"]: c["context"] for c in doc["contexts"]}  # type: ignore[attr-defined]
    servers = {c["name"]: c["cluster"]["server"] for c in doc["clusters"]}  # type: ignore[attr-defined]
    url = f"{servers[contexts[context]['cluster']]}/apis/{api}/namespaces/default/{plural}"
    with urllib.request.urlopen(url, timeout=5) as resp:
        return list(json.loads(resp.read())["items"])


def _member_names(kubeconfig: Path, context: str, api: str, plural: str) -> list[str]:
    """Names of the `plural` in the member's default namespace."""
    return [d["metadata"]["name"] for d in _member_items(kubeconfig, context, api, plural)]


def _member_deployments(kubeconfig: Path, context: str) -> list[str]:
    return _member_names(kubeconfig, context, "apps/v1", "deployments")


def _placed(server: str, name: str) -> list[str]:
    got = fedctl("get", "binding", name, "-n", "default", "-o", "json", server=server)
    if got.returncode != 0:
        return []
    doc = json.loads(got.stdout)
    if doc.get("status", {}).get("phase") != "Scheduled":
        return []
    return [t["name"] for t in doc["spec"].get("clusters", [])]


def _apply_web(server: str, tmp_path: Path) -> None:
    """A one-replica Deployment `web` in the default namespace."""
    web = tmp_path / "web.yaml"
    web.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\n"
        "spec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n"
        "        - {name: c, image: nginx, resources: {requests: {cpu: 500m}}}\n"
    )
    assert fedctl("apply", "-f", str(web), server=server).returncode == 0


def test_unjoin_moves_the_workloads_away_and_leaves_no_copy_on_the_member(
    stack: tuple[str, Path], tmp_path: Path
) -> None:
    """Deleting the Cluster at once took its credentials with it, so fedctl's copies kept
    running on the member while the same workloads were placed elsewhere. Unjoin drains
    first: the workload moves, the member's copy goes, then the Cluster."""
    server, kubeconfig = stack
    for name, region in (("x86", "us-east"), ("gpu", "us-west")):
        _join(server, kubeconfig, name, region)
    _apply_web(server, tmp_path)
    deadline = time.monotonic() + 30
    while not (first := _placed(server, "web")) or "web" not in _member_deployments(
        kubeconfig, first[0]
    ):
        assert time.monotonic() < deadline, "web never ran on a member"
        time.sleep(0.3)
    (gone,) = first
    other = "gpu" if gone == "x86" else "x86"

    result = fedctl("cluster", "unjoin", gone, "--timeout", "45", server=server)

    assert result.returncode == 0, result.stderr
    assert f"cluster {gone} unjoined" in result.stdout
    assert _placed(server, "web") == [other]
    assert "web" not in _member_deployments(kubeconfig, gone)
    assert fedctl("get", "cluster", gone, server=server).returncode == 1


def test_unjoin_keeps_the_last_copy_of_a_service_with_nowhere_else_to_go(
    quick_graceful_stack: tuple[str, Path], tmp_path: Path
) -> None:
    """Unjoining the only member: the graceful timeout (2 s here) ran out with the service
    placed nowhere else, and its last copy was deleted, taking it to zero. The copy now
    stays, and the unjoin waits on it and names it, as a drain waits on a disruption
    budget."""
    server, kubeconfig = quick_graceful_stack
    _join(server, kubeconfig, "x86", "us-east")
    _apply_web(server, tmp_path)
    deadline = time.monotonic() + 30
    while "web" not in _member_deployments(kubeconfig, "x86"):
        assert time.monotonic() < deadline, "web never ran on x86"
        time.sleep(0.3)

    result = fedctl("cluster", "unjoin", "x86", "--timeout", "8", server=server)

    assert result.returncode != 0
    assert "default/Deployment/web has nowhere else to go (0/1 clusters are available" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr
    assert _member_deployments(kubeconfig, "x86") == ["web"], "the last copy was deleted"
    got = fedctl("get", "events", "-n", "default", server=server)
    assert "NowhereToGo" in got.stdout


def _member_jobs(kubeconfig: Path, context: str) -> list[str]:
    return _member_names(kubeconfig, context, "batch/v1", "jobs")


def test_unjoin_is_not_held_up_by_a_job_that_finished_on_the_member(
    stack: tuple[str, Path], tmp_path: Path
) -> None:
    """A finished Job is never moved (that would run it again), so its Binding named the
    member for good and unjoin waited out its whole timeout, then failed. Its copy is now
    taken off the member, and its status kept."""
    server, kubeconfig = stack
    _join(server, kubeconfig, "x86", "us-east")
    job = tmp_path / "job.yaml"
    job.write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: once, namespace: default}\n"
        "spec:\n  template:\n    metadata:\n      annotations: {sim.fedctl.io/duration: 1s}\n"
        "    spec:\n      restartPolicy: Never\n      containers:\n"
        "        - {name: c, image: busybox, resources: {requests: {cpu: 100m}}}\n"
    )
    assert fedctl("apply", "-f", str(job), server=server).returncode == 0

    def phase() -> str:
        got = fedctl("get", "workload", "once", "-n", "default", "-o", "json", server=server)
        return str(json.loads(got.stdout).get("status", {}).get("phase")) if got.stdout else ""

    deadline = time.monotonic() + 30
    while phase() != "Succeeded":
        assert time.monotonic() < deadline, "the Job never finished"
        time.sleep(0.3)
    assert _member_jobs(kubeconfig, "x86") == ["once"]

    began = time.monotonic()
    result = fedctl("cluster", "unjoin", "x86", "--timeout", "30", server=server)

    assert result.returncode == 0, result.stderr
    assert time.monotonic() - began < 20, "unjoin waited on the finished Job"
    assert _member_jobs(kubeconfig, "x86") == [], "its copy was left on the member"
    assert phase() == "Succeeded"


def test_join_refuses_a_member_already_joined_under_another_name(
    stack: tuple[str, Path],
) -> None:
    """Two Clusters reaching one member each got their share of a workload and applied it
    under the same names, overwriting each other. The monitor records the member's
    kube-system uid; a join reaching a member already known by it is refused."""
    server, kubeconfig = stack
    _join(server, kubeconfig, "x86", "us-east")

    def recorded() -> str | None:
        got = json.loads(fedctl("get", "cluster", "x86", "-o", "json", server=server).stdout)
        return (got.get("status") or {}).get("clusterId")

    deadline = time.monotonic() + 30
    while not (uid := recorded()):
        assert time.monotonic() < deadline, "the monitor never recorded the cluster id"
        time.sleep(0.3)

    again = fedctl("cluster", "join", "x86-again", "--kubeconfig", str(kubeconfig),
                   "--context", "x86", "--region", "us-east", server=server)  # fmt: skip

    assert again.returncode == 1
    assert f"is the Kubernetes cluster already joined as x86 (kube-system uid {uid})" in (
        again.stderr
    ), again.stderr
    assert fedctl("get", "cluster", "x86-again", server=server).returncode == 1
    other = _join(server, kubeconfig, "gpu", "us-west")  # another member joins as before
    assert "reachable" in other
    same = fedctl("cluster", "join", "x86", "--kubeconfig", str(kubeconfig),
                  "--context", "x86", "--region", "eu-west", server=server)  # fmt: skip
    assert same.returncode == 0 and "cluster x86 updated" in same.stdout, same  # its own name
    # Its name pointed at another member: the copies on the first would be left behind.
    moved = fedctl("cluster", "join", "x86", "--kubeconfig", str(kubeconfig),
                   "--context", "arm", "--region", "eu-west", server=server)  # fmt: skip
    assert moved.returncode == 1
    assert (
        f"cluster x86 is joined and reaches another Kubernetes cluster (kube-system uid {uid};"
        in (moved.stderr)
    ), moved.stderr


def _member_uid(kubeconfig: Path, context: str, name: str) -> str | None:
    """The uid of Deployment `name` in the member's default namespace (None: not there)."""
    items = _member_items(kubeconfig, context, "apps/v1", "deployments")
    return next((str(d["metadata"]["uid"]) for d in items if d["metadata"]["name"] == name), None)


def test_a_member_joined_again_unverified_is_kept_unusable_and_unjoins_harmlessly(
    stack: tuple[str, Path], tmp_path: Path
) -> None:
    """`--no-verify` let a joined member join again under a second name: it was Ready, got
    its share of every workload, and unjoining it deleted the first name's copies, which
    were then applied again from the start. The same connection is refused; one that
    reaches the member by another URL is kept not Ready, and unjoins without a trace."""
    server, kubeconfig = stack
    _join(server, kubeconfig, "x86", "us-east")
    unverified = ("--context", "x86", "--region", "us-east", "--no-verify")
    same = fedctl("cluster", "join", "x86-again", "--kubeconfig", str(kubeconfig), *unverified,
                  server=server)  # fmt: skip
    assert same.returncode == 1
    assert (
        "Cluster x86-again: spec.connection: reaches the same Kubernetes API as cluster x86"
        in same.stderr
    ), same.stderr
    _apply_web(server, tmp_path)
    deadline = time.monotonic() + 30
    while not (uid := _member_uid(kubeconfig, "x86", "web")):
        assert time.monotonic() < deadline, "web never ran on x86"
        time.sleep(0.3)
    alias = tmp_path / "alias.kubeconfig"  # the same members, by another host name
    alias.write_text(kubeconfig.read_text().replace("127.0.0.1", "localhost"))

    joined = fedctl("cluster", "join", "x86-again", "--kubeconfig", str(alias), *unverified,
                    server=server)  # fmt: skip

    assert joined.returncode == 0, joined.stderr
    deadline = time.monotonic() + 30
    while "False (DuplicateCluster)" not in (
        listing := fedctl("cluster", "list", server=server).stdout
    ):
        assert time.monotonic() < deadline, listing
        time.sleep(0.3)
    described = fedctl("cluster", "describe", "x86-again", server=server).stdout
    assert "(also joined as x86: see Ready)" in described, described
    assert "the Kubernetes cluster already joined as x86" in described
    assert _placed(server, "web") == ["x86"]

    result = fedctl("cluster", "unjoin", "x86-again", "--timeout", "30", server=server)

    assert result.returncode == 0, result.stderr
    assert _member_uid(kubeconfig, "x86", "web") == uid, "the first name's copy was replaced"
    # The generic delete does not drain: it says what it would leave running.
    dry = fedctl("delete", "cluster", "x86", "--dry-run", server=server)
    assert dry.returncode == 0, dry.stderr
    assert "Warning: cluster x86 would be removed without a drain: what fedctl runs there" in (
        dry.stderr
    ), dry.stderr
    assert "(1 workload(s) placed there (default/web); " in dry.stderr
