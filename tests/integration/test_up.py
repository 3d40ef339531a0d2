"""`fedctl up --tour` end to end: the whole federation as `make demo` runs it, as processes.

One `fedctl up` for the module (it takes a while to start on two cores): the tests read its
API and output, run the CLI against it as a person would, and the last one stops it with
SIGINT and checks that every process it started (etcd, the simulated fleet) went with it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from federation.cli import client, tour
from federation.registry import embedded
from policies.loading import load_paths
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXAMPLES = Path(__file__).resolve().parents[2] / "policies" / "examples"
START_SECONDS = 120  # etcd, eight simulated members, the controller, the examples
TOUR_SECONDS = 200  # from the start: placement, the quota wait, a drill of up to 45s
STATUS = "/apis/status.fedctl.io/v1alpha1/workloads"


@dataclass
class Up:
    """A running `fedctl up --tour` and where to reach it."""

    proc: subprocess.Popen[bytes]
    server: str
    data: Path
    log: Path

    @property
    def token(self) -> str:
        doc = YAML(typ="safe", pure=True).load((self.data / "tokens.yaml").read_text())
        return str(doc["tokens"][0]["token"])

    @property
    def etcd(self) -> str:
        for line in self.output().splitlines():
            if "registry (etcd):" in line:
                return line.split()[-1]
        raise AssertionError("fedctl up did not print its etcd URL")

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def fedctl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "FEDCTL_SERVER": self.server, "FEDCTL_TOKEN": self.token}
        return subprocess.run(
            [sys.executable, "-m", "federation.cli.main", "--etcd", self.etcd, *args],
            capture_output=True, text=True, timeout=timeout, env=env, cwd=self.data.parent,
        )  # fmt: skip

    async def workloads(self) -> dict[str, dict[str, Any]]:
        async with client.ApiClient(self.server, token=self.token, timeout=10) as api:
            doc = await api.request("GET", STATUS)
        return {f"{i['namespace']}/{i['name']}": i for i in doc["items"]}


def _descendants(pid: int) -> list[int]:
    """Every live process below `pid`, from /proc's children lists."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found += [child, *_descendants(child)]
    return found


def _commands(pids: list[int]) -> dict[int, bytes]:
    return {pid: Path(f"/proc/{pid}/cmdline").read_bytes() for pid in pids}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/readyz", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    work = tmp_path_factory.mktemp("up")
    log = work / "up.log"
    server = f"http://127.0.0.1:{embedded.free_port()}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "federation.cli.main", "up", "--tour",
             "--data-dir", str(work / ".fedctl"), "--listen", server.removeprefix("http://")],
            stdout=out, stderr=subprocess.STDOUT, cwd=work, start_new_session=True,
        )  # fmt: skip
    running = Up(proc=proc, server=server, data=work / ".fedctl", log=log)
    yield running
    if proc.poll() is None:  # a failed test left it up: stop it, its children with it
        _interrupt(proc)


async def _started(up: Up) -> None:
    await wait_for(
        lambda: _ready(up.server) and "fedctl is up." in up.output(),
        timeout=START_SECONDS, interval=0.5, message="fedctl up to answer /readyz",
    )  # fmt: skip


async def _toured(up: Up) -> str:
    await _started(up)
    await wait_for(
        lambda: "Ctrl-C to stop." in up.output() or up.proc.poll() is not None,
        timeout=TOUR_SECONDS, interval=1, message="the tour to end",
    )  # fmt: skip
    return up.output()


def test_the_tour_files_validate_with_the_examples(tmp_path: Path) -> None:
    for name, text in tour.burst_files().items():
        (tmp_path / name).write_text(text)

    result = load_paths([EXAMPLES, tmp_path])

    assert [str(f) for f in result.findings] == []
    burst = [o for o in result.objects if tour.TOUR_LABEL in (o.model.metadata.labels or {})]
    assert len(burst) == len(tour.PROD_JOBS) + len(tour.RESEARCH_JOBS)


async def test_the_examples_reach_ready_across_the_fleet(up: Up) -> None:
    await _started(up)

    async def settled() -> dict[str, dict[str, Any]] | None:
        items = await up.workloads()
        done = all(
            (items.get(ref, {}).get("status") or {}).get("health") in ("Healthy", "Completed")
            for ref in ("web/storefront", "ml-research/llm-finetune", "ml-prod/nightly-eval")
        )
        return items if done else None

    items = await wait_for(settled, timeout=90, interval=1, message="the examples to settle")
    # The members were Ready before the workloads were applied, so they were placed once.
    text = up.output()
    assert text.index("8/8 members ready") < text.index("[5/5] applying the rest"), text

    storefront = items["web/storefront"]["status"]
    assert (storefront["readyReplicas"], storefront["replicas"]) == (12, 12)
    placed = {t["name"] for t in items["web/storefront"]["binding"]["spec"]["clusters"]}
    assert placed == {"us-east-cpu", "eu-west-arm", "ap-southeast-cpu"}
    assert items["ml-research/llm-finetune"]["status"]["phase"] == "Succeeded"
    assert items["ml-prod/nightly-eval"]["status"]["phase"] == "Succeeded"
    # bert-pretrain asks for 8 H100 in one queue capped at 4: it waits, and says why.
    bert = items["ml-research/bert-pretrain"]["binding"]
    assert not bert["spec"].get("clusters") and bert["status"]["reason"]
    # Namespaces are cluster-scoped ("_" in their keys): their events must be readable too.
    described = up.fedctl("describe", "workload", "_/web")
    assert described.returncode == 0 and "Kind:        Namespace" in described.stdout, described


async def test_the_tour_runs_every_step_and_leaves_the_dashboard_up(up: Up) -> None:
    text = await _toured(up)

    assert up.proc.poll() is None, text[-3000:]
    for n in range(1, 6):
        assert f"Tour {n}/5" in text
    assert "$ fedctl apply -f .fedctl/tour" in text
    assert "$ fedctl get workloads -A" in text
    assert "queue ml-research at capability for nvidia-h100-80gb" in text
    assert f"ml-research/{tour.RESEARCH_JOBS[-1]} admitted" in text
    assert "| lost (must be 0) |" in text
    assert "timed out" not in text
    assert "The tour completed every step." in text, text[text.index("Tour 4/5") :]
    assert _ready(up.server)


async def test_a_drill_through_the_cli_loses_nothing(up: Up, tmp_path: Path) -> None:
    await _toured(up)  # one drill at a time: the tour's own has finished

    done = up.fedctl(
        "drill", "run", "--cluster", "eu-west-arm", "--fault", "down",
        "--duration", "5s", "--settle", "20s", "--report", str(tmp_path),
        "--kubeconfig", str(up.data / "fleet.kubeconfig"),
    )  # fmt: skip

    report = json.loads((tmp_path / "report.json").read_text())
    assert done.returncode == 0, done.stdout + done.stderr
    listed = {w["workload"] for w in report["workloads"]}  # every workload on the member
    assert "web/Deployment.apps/storefront" in listed, report
    assert (report["lost"], report["double_runs"]) == (0, 0)
    assert "| lost (must be 0) | 0 |" in (tmp_path / "report.md").read_text()


async def test_sigint_stops_every_process_it_started(up: Up) -> None:
    await _toured(up)
    started = _descendants(up.proc.pid)
    commands = _commands(started)
    assert any(b"etcd" in c for c in commands.values()), commands
    assert any(b"sim\x00up" in c for c in commands.values()), commands

    up.proc.send_signal(signal.SIGINT)

    assert up.proc.wait(timeout=60) == 0
    await wait_for(
        lambda: not [p for p in started if _alive(p)],
        timeout=15, interval=0.2, message="every process fedctl up started to exit",
    )  # fmt: skip
    assert "fedctl up: stopped everything it started" in up.output()


def test_up_with_an_existing_etcd_that_does_not_answer_says_so_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """`fedctl up --etcd URL --kubeconfig FILE` is the real-members form: no etcd, no
    simulator of its own, and an etcd that is not there is one clear line, exit 1, after
    waiting a registry call's deadline for it, each wait a WARNING."""
    dead = f"http://127.0.0.1:{embedded.free_port()}"
    quick = {"FEDCTL_ETCD__CONNECT_TIMEOUT": "0.5", "FEDCTL_ETCD__RETRY_DEADLINE": "1.5"}
    done = subprocess.run(
        [sys.executable, "-m", "federation.cli.main", "up", "--etcd", dead,
         "--kubeconfig", str(tmp_path / "members.kubeconfig"), "--data-dir", str(tmp_path / "d")],
        capture_output=True, text=True, timeout=60, env={**os.environ, **quick},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert f"etcd at {dead} did not answer" in done.stderr
    assert "trying again in" in done.stderr
    assert "starting etcd" not in done.stdout and "simulated" not in done.stdout


def _interrupt(proc: subprocess.Popen[bytes]) -> None:
    """Ctrl-C, as a person stops it; SIGKILL to the whole group if that does not end it."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _start(log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "federation.cli.main", "up", *args],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


GHOST = """\
apiVersion: fedctl.io/v1alpha1
kind: Cluster
metadata: {name: ghost}
spec:
  region: nowhere
  prices: {onDemand: {cpu: "0.05", memory: "0.01"}}
  connection: {context: ghost}
---
apiVersion: v1
kind: Namespace
metadata: {name: team}
"""


@pytest.mark.parametrize("members", [True, False], ids=["a-member-never-ready", "no-members"])
async def test_up_names_a_member_not_ready_in_time_and_applies_the_rest(
    own_etcd: embedded.EmbeddedEtcd, tmp_path: Path, members: bool
) -> None:
    """A member whose API never answers: `fedctl up` waits `--join-timeout`, says which
    member and why, and applies the rest anyway rather than hang or give up. With no
    Cluster among the objects there is nothing to wait for, and it says so."""
    (tmp_path / "examples").mkdir()
    text = GHOST if members else GHOST.partition("---\n")[2]
    (tmp_path / "examples" / "fleet.yaml").write_text(text)
    dead = f"https://127.0.0.1:{embedded.free_port()}"
    (tmp_path / "members.kubeconfig").write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: ghost\n"
        f"clusters: [{{name: ghost, cluster: {{server: '{dead}'}}}}]\n"
        "users: [{name: ghost, user: {token: t}}]\n"
        "contexts: [{name: ghost, context: {cluster: ghost, user: ghost}}]\n"
    )
    log = tmp_path / "up.log"
    proc = _start(
        log, "--etcd", own_etcd.url, "--kubeconfig", str(tmp_path / "members.kubeconfig"),
        "--listen", f"127.0.0.1:{embedded.free_port()}", "--examples", str(tmp_path / "examples"),
        "--join-timeout", "2", "--data-dir", str(tmp_path / "d"),
    )  # fmt: skip
    try:
        out = await wait_for(
            lambda: "fedctl is up." in log.read_text() and log.read_text(),
            timeout=START_SECONDS, interval=0.5, message="fedctl up to finish applying",
        )  # fmt: skip
    finally:
        _interrupt(proc)
    assert "[5/5] applying the rest" in out and "      1 created" in out, out
    if not members:
        assert "[4/5] no Cluster in" in out and "not ready" not in out, out
        return
    assert "[4/5] joining 1 member from" in out, out
    assert "not ready after 2s: ghost (Ready=" in out, out
    assert "Applying the rest" in out, out
    assert out.index("not ready after") < out.index("[5/5]"), out
