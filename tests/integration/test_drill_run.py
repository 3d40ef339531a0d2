"""`fedctl drill run` from the command line, on a real etcd and, where the fault needs one, a
simulated member.

What an operator relies on: a fault meant to leave the work in place (`slow`, `errors`) is
never quietly swapped for the drill taint, which would evict that work. Without the
member's fault API such a drill is refused before anything is written, and the error names
what is missing and how to supply it. A dead-member fault (`down`) without it falls back to
the taint, and says why without claiming the member is not simulated. The report tells
work that stayed or had finished apart from work that moved, and counts only the latter.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from clusters.sim import profile
from clusters.sim.fleet import SimFleet
from federation.cli import main
from federation.failover import drills, faults
from federation.registry import codec, embedded, keys, objects
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from policies.models.binding import Binding
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.work import WorkloadStatus
from policies.models.workload import Workload
from tests.conftest import etcd_settings
from tests.unit.scheduler import fleet
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

VICTIM = "us-a"
DRILL_TAINT = f"{faults.DRILL_TAINT}:NoExecute"
SHORT = ("--duration", "200ms", "--settle", "0s")


@pytest.fixture
async def registry(
    own_etcd: embedded.EmbeddedEtcd, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[EtcdStore]:
    monkeypatch.delenv("KUBECONFIG", raising=False)  # the default of --kubeconfig
    store = EtcdStore(etcd_settings(own_etcd.url))
    await store.connect()
    yield store
    await store.close()


def bound(w: Workload) -> Binding:
    ref = {"apiVersion": w.api_version, "kind": w.kind, "namespace": w.namespace}
    return Binding.model_validate(
        {
            "metadata": {"name": w.metadata.name, "namespace": w.namespace},
            "spec": {
                "workload": {**ref, "name": w.metadata.name},
                "clusters": [{"name": VICTIM, "replicas": 1, "chip": "amd64"}],
            },
            "status": {"phase": "Scheduled"},
        }
    )


def observed(w: Workload, *, health: str, phase: str | None = None) -> WorkloadStatus:
    ref = {"apiVersion": w.api_version, "kind": w.kind, "namespace": w.namespace}
    return WorkloadStatus.model_validate(
        {
            "workload": {**ref, "name": w.metadata.name},
            "health": health,
            "phase": phase,
            "clusters": [{"cluster": VICTIM, "applied": True, "health": health}],
        }
    )


async def seed(store: EtcdStore) -> None:
    """The victim, a service running there and a job that already finished there."""
    typed = codec.TypedStore(store, objects.ObjectCodec())
    member = fleet.cluster(VICTIM, fleet.flavor(cpu="16", nodes=2))
    assert member.status is not None
    await typed.put(keys.cluster_key(VICTIM), member.model_copy(update={"status": None}))
    await codec.TypedStore(store, codec.Codec(ClusterStatus)).put(
        keys.cluster_status_key(VICTIM), member.status
    )
    cache = fleet.workload("cache", kind="Deployment")
    done = fleet.workload("done", kind="Job")
    results = codec.TypedStore(store, codec.Codec(WorkloadStatus))
    for w, status in (
        (cache, observed(cache, health="Healthy")),
        (done, observed(done, health="Completed", phase="Succeeded")),
    ):
        ref = objects.workload_ref(w)
        await typed.put(objects.key_for(w), w)
        await codec.TypedStore(store, codec.Codec(Binding)).put(keys.binding_key(ref), bound(w))
        await results.put(keys.workload_status_key(ref), status)


async def drill_run(store: EtcdStore, *args: str) -> int:
    argv = ["--etcd", store.endpoint, "drill", "run", "--cluster", VICTIM, *args]
    return await asyncio.to_thread(main.main, argv)


async def taints_of(store: EtcdStore) -> list[str]:
    stored = await codec.TypedStore(store, objects.ObjectCodec()).get(keys.cluster_key(VICTIM))
    assert stored is not None and isinstance(stored.obj, Cluster)
    return [f"{t.key}:{t.effect}" for t in stored.obj.spec.taints]


async def everything(store: EtcdStore) -> list[tuple[str, int]]:
    return [(kv.key, kv.mod_revision) for kv in (await store.list(keys.ROOT + "/")).items]


def no_kubeconfig(tmp_path: Path) -> list[str]:
    return ["--fault", "slow"]


def no_state_file(tmp_path: Path) -> list[str]:
    return ["--fault", "errors", "--kubeconfig", str(tmp_path / "fleet.kubeconfig")]


def another_fleet(tmp_path: Path) -> list[str]:
    """A kubeconfig whose fleet state file names another member, not the victim."""
    kubeconfig = tmp_path / "fleet.kubeconfig"
    members = {"eu-b": {"adminUrl": "http://127.0.0.1:1"}}
    Path(f"{kubeconfig}.fleet.json").write_text(json.dumps({"clusters": members}))
    return ["--fault", "slow", "--kubeconfig", str(kubeconfig)]


@pytest.mark.parametrize(
    ("flags", "missing"),
    [
        pytest.param(
            no_kubeconfig,
            "no kubeconfig was given (--kubeconfig or KUBECONFIG)",
            id="slow without any kubeconfig",
        ),
        pytest.param(
            no_state_file,
            "there is no fleet state file",
            id="errors with a kubeconfig that has no fleet state file beside it",
        ),
        pytest.param(
            another_fleet,
            f"{VICTIM} is not simulated",
            id="slow on a member the fleet state file does not name",
        ),
    ],
)
async def test_a_fault_that_keeps_work_in_place_is_refused_rather_than_turned_into_a_taint(
    registry: EtcdStore,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flags: Callable[[Path], list[str]],
    missing: str,
) -> None:
    await seed(registry)
    before = await everything(registry)

    code = await drill_run(registry, *flags(tmp_path), *SHORT)

    err = capsys.readouterr().err
    assert code == 1, err
    assert missing in err
    assert "--kubeconfig FILE" in err and "no drill was started" in err
    assert await everything(registry) == before, "no taint, no report: nothing written"


async def test_a_dead_member_fault_without_the_fault_api_falls_back_to_the_taint_and_says_why(
    registry: EtcdStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(registry)

    drilling = asyncio.create_task(
        drill_run(registry, "--fault", "down", "--duration", "2s", "--settle", "0s",
                  "--report", str(tmp_path))
    )  # fmt: skip
    await wait_for(lambda: _tainted(registry), timeout=10, message="the drill taint on the member")
    code = await drilling

    out = capsys.readouterr().out
    assert code == 0, out
    assert (
        "fedctl drill: no kubeconfig was given (--kubeconfig or KUBECONFIG), so the fault API"
        f" of {VICTIM} is unknown; using a NoExecute taint instead"
    ) in out
    assert "not simulated" not in out
    assert json.loads((tmp_path / "report.json").read_text())["fault"] == "taint"
    assert await taints_of(registry) == [], "the taint is removed when the drill ends"


async def _tainted(store: EtcdStore) -> bool:
    return DRILL_TAINT in await taints_of(store)


async def _said_until(proc: asyncio.subprocess.Process, line: str) -> bytes:
    """What `proc` wrote on stderr up to and including its first line holding `line`."""
    assert proc.stderr is not None
    said = b""
    while line not in said.decode():
        got = await proc.stderr.readline()
        if not got:
            raise AssertionError(f"the drill ended without saying {line!r}: {said.decode()}")
        said += got
    return said


async def test_a_slow_drill_on_a_simulated_member_slows_it_and_never_taints_it(
    registry: EtcdStore, tmp_path: Path
) -> None:
    await seed(registry)
    sims = SimFleet(
        profile.parse({"clusters": [{"name": VICTIM, "region": "us-east", "nodePools": [
            {"name": "m7i", "count": 1, "arch": "amd64", "cpu": "16", "memory": "64Gi"}
        ]}]}),
        speed=50,
    )  # fmt: skip
    kubeconfig = tmp_path / "fleet.kubeconfig"
    await sims.start(kubeconfig_path=kubeconfig)
    admin = sims[VICTIM].admin_url
    try:
        drilling = asyncio.create_task(
            drill_run(registry, "--fault", "slow", "--duration", "2s", "--settle", "0s",
                      "--kubeconfig", str(kubeconfig), "--report", str(tmp_path))
        )  # fmt: skip
        await wait_for(lambda: _faults(admin), timeout=10, message="the member's slow fault")
        assert await _faults(admin) == ["slow"]
        # It ends by itself past its hold, should the drill die before healing it.
        (fault,) = await _state(admin)
        assert 0 < fault["until"] - fault["since"] <= 2 + faults.BACKSTOP
        assert await taints_of(registry) == []
        code = await drilling
        assert await _faults(admin) == [], "healed"
    finally:
        await sims.stop()
    assert code == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["fault"] == "slow"
    outcomes = {w["workload"]: w["outcome"] for w in report["workloads"]}
    assert outcomes["team/Deployment.apps/cache"] == "stayed (no eviction during the drill)"
    assert await taints_of(registry) == []


async def _faults(admin_url: str) -> list[str]:
    return [f["mode"] for f in await _state(admin_url)]


async def _state(admin_url: str) -> list[dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.get(f"{admin_url}/state") as resp:
        state = await resp.json()
    faults_now: list[dict[str, Any]] = state["faults"]
    return faults_now


async def test_the_report_lists_work_that_stayed_or_had_finished_without_counting_it(
    registry: EtcdStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No controller runs here, so nothing moves: the service stays on the NoExecute member
    (as work that tolerates the fault would) and the finished job was never going to move.
    Neither is "recovered", and neither was affected."""
    await seed(registry)

    code = await drill_run(registry, "--fault", "taint", *SHORT, "--report", str(tmp_path))

    out, err = capsys.readouterr()
    assert code == 0, out
    assert "fedctl drill: no controller leads this federation" in err, err
    # The steps as they came, on stderr: stdout is the report alone.
    assert "fedctl drill: [" in err and "] fault in: taint on " in err, err
    assert "] healed: watching recovery for up to 0s" in err, err
    # The last step gives the report's own count, and why the service that had to move is
    # not in it.
    assert "] done: 0 affected; not counted: 1 stayed (tolerates the fault)\n" in err, err
    assert "fedctl drill:" not in out
    report = json.loads((tmp_path / "report.json").read_text())
    outcomes = {w["workload"]: w["outcome"] for w in report["workloads"]}
    assert outcomes == {
        "team/Deployment.apps/cache": "stayed (tolerates the fault)",
        "team/Job.batch/done": "finished (not moved)",
    }
    assert report["affected"] == 0
    assert "| team/Job.batch/done | - | - | finished (not moved) |" in out
    assert "| workloads affected | 0 |" in out


async def test_a_drill_with_a_controller_leading_does_not_warn_of_none(
    registry: EtcdStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a leader nothing reacts to the fault, and the drill says so first; with
    one (its lease key present), it does not."""
    await seed(registry)
    await st.put(registry, keys.leader_key(), b"replica-1")
    try:
        code = await drill_run(registry, "--fault", "taint", *SHORT, "--report", str(tmp_path))
    finally:
        await registry.commit([st.Delete(keys.leader_key())])
    out, err = capsys.readouterr()
    assert code == 0, out
    assert "no controller leads" not in err, err


RUNNING = fleet.workload("job-3", kind="Job")


@dataclass(frozen=True)
class OwnerDeletes(faults.Injector):
    """The drill's own fault, then the owner's `fedctl delete job job-3` while it is held:
    its template goes, and its Binding after it (as the scheduler removes it)."""

    async def inject(self) -> None:
        await super().inject()
        ref = objects.workload_ref(RUNNING)
        await self.store.commit([st.Delete(keys.workload_key(ref))])
        await self.store.commit([st.Delete(keys.binding_key(ref))])


async def test_a_workload_its_owner_deletes_during_the_drill_is_no_loss(
    registry: EtcdStore,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It read `lost: Binding gone`, `lost (must be 0) | 1`, and the drill exited 1."""
    await seed(registry)
    await registry.commit([st.Put(objects.key_for(RUNNING), objects.ObjectCodec().encode(RUNNING))])
    await codec.TypedStore(registry, codec.Codec(Binding)).put(
        keys.binding_key(objects.workload_ref(RUNNING)), bound(RUNNING)
    )
    real = faults.injector

    def deleting(
        store: st.Store, *, cluster: str, fault: str, kubeconfig: str | None, hold: float
    ) -> faults.Injector:
        i = real(store, cluster=cluster, fault=fault, kubeconfig=kubeconfig, hold=hold)
        return OwnerDeletes(i.store, i.cluster, i.fault, i.requested, i.url, i.hold)

    monkeypatch.setattr(faults, "injector", deleting)

    code = await drill_run(registry, "--fault", "taint", *SHORT, "--report", str(tmp_path))

    out = capsys.readouterr().out
    assert code == 0, out
    assert "| team/Job.batch/job-3 | - | - | deleted during the drill |" in out
    assert "| lost (must be 0) | 0 |" in out
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["lost"], report["affected"]) == (0, 0)


@pytest.mark.parametrize(
    ("stop", "code"),
    [
        pytest.param(signal.SIGTERM, 143, id="SIGTERM (a CI job cancelled, timeout)"),
        pytest.param(signal.SIGINT, 130, id="Ctrl-C"),
    ],
)
async def test_a_drill_stopped_by_a_signal_heals_its_member_and_keeps_its_report(
    registry: EtcdStore, tmp_path: Path, stop: signal.Signals, code: int
) -> None:
    """`kill -TERM` left the drill taint on the member for good; only Ctrl-C healed. Both
    heal now, and then the drill went silent: no word after the fault went in, no report
    in `fedctl drill list`. It now says it was interrupted and healed, prints and stores
    its report marked so, and still exits as a stopped command does."""
    await seed(registry)
    out = tmp_path / "report"
    argv = ["--etcd", registry.endpoint, "drill", "run", "--cluster", VICTIM, "--fault", "taint",
            "--duration", "60s", "--settle", "0s", "--report", str(out)]  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "federation.cli.main", *argv,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        # The drill's own word that the fault is in, not the taint in the registry: the
        # taint is there before the drill's write returns, and a signal in between is
        # rightly "interrupted before the fault went in".
        before = await asyncio.wait_for(_said_until(proc, "s] fault in: taint on "), 30)
        assert await _tainted(registry)
        proc.send_signal(stop)
        stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=30)
        stderr = before + stderr
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == code
    assert not await _tainted(registry), "healed before it exited"
    said = stderr.decode()
    assert "fedctl drill: interrupted " in said and "the fault was lifted then" in said
    assert "Traceback" not in said
    assert "**Stopped early:** interrupted" in stdout.decode()
    written = json.loads((out / "report.json").read_text())
    assert written["error"].startswith("interrupted ")
    stored = await registry.get(keys.drill_key(written["id"]))
    assert stored is not None and drills.decode(stored.value).error == written["error"]


@pytest.mark.parametrize("fault", ["down", "slow", "taint"])
async def test_a_drill_on_a_cluster_that_is_not_joined_says_so_and_writes_nothing(
    registry: EtcdStore, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    """It said `nope is not simulated ...; using a NoExecute taint instead` and then `not
    found: /fedctl/clusters/nope`, a registry key; `drill plan` says `no cluster 'nope'`."""
    await seed(registry)
    before = await everything(registry)
    argv = ["--etcd", registry.endpoint, "drill", "run", "--cluster", "nope", "--fault", fault]

    code = await asyncio.to_thread(main.main, [*argv, *SHORT])

    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err.splitlines() == ["fedctl drill: no cluster 'nope'"]
    assert await everything(registry) == before, "no taint, no report: nothing written"
