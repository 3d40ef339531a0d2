"""`status.aggregate`: a workload's totals count the copies of its placement, nothing more.

During a failover a workload has copies it is leaving (a graceful eviction keeps the old
one running until the new placement is ready) and copies on members that stopped
answering, whose last report stays in their Work. Summed with the rest, a 4-replica
Deployment read `8/8` while it moved, and a dead member's share read Healthy for as long
as it stayed dead. Every copy is still listed, so `describe` can show it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Collection

import pytest

from federation.propagation import status as status_mod
from federation.propagation import works as works_mod
from federation.propagation.controller import Propagator
from federation.registry import codec, keys
from federation.registry.memory import MemoryStore
from policies.models.binding import WorkloadReference
from policies.models.cluster import ClusterStatus, Condition
from policies.models.work import Observed, Work, WorkCondition, WorkloadStatus, WorkStatus
from tests.unit.scheduler.fleet import workload
from tests.waiting import stop, wait_for

REF = keys.WorkloadRef("shop", "Deployment.apps", "fb")
DEPLOYMENT = WorkloadReference(
    api_version="apps/v1", kind="Deployment", namespace="shop", name="fb"
)
JOB = WorkloadReference(api_version="batch/v1", kind="Job", namespace="shop", name="fb")
IMMUTABLE = 'Job.batch "fb" is invalid: spec.template: Invalid value: field is immutable'


def ready(n: int, of: int | None = None) -> Observed:
    desired = n if of is None else of
    health = "Healthy" if n >= desired else "Progressing"
    return Observed(health=health, replicas=desired, ready_replicas=n)


def copy_on(cluster: str, observed: Observed, workload: WorkloadReference = DEPLOYMENT) -> Work:
    """The Work of `workload`'s copy on `cluster`, applied, the member saying `observed`."""
    return works_mod.new_work(
        ref=REF,
        cluster=cluster,
        old=None,
        manifest={"apiVersion": workload.api_version, "kind": workload.kind},
        revision=3,
        status=WorkStatus(applied=True, observed=observed),
        uid=None,
    )


def aggregate(
    copies: dict[str, Observed],
    *,
    placed: Collection[str] | None,
    unready: Collection[str] = (),
    workload: WorkloadReference = DEPLOYMENT,
    refused: Collection[str] = (),
    desired: int | None = None,
    asked: dict[str, int] | None = None,
) -> WorkloadStatus:
    """`refused`: members that refused the last copy sent (not applied, with an error);
    what they observe is of the copy they kept."""
    works = [
        copy_on(cluster, observed, workload)
        if cluster not in refused
        else works_mod.new_work(
            ref=REF,
            cluster=cluster,
            old=None,
            manifest={"apiVersion": workload.api_version, "kind": workload.kind},
            revision=3,
            status=WorkStatus(applied=False, error=IMMUTABLE, observed=observed),
            uid=None,
        )
        for cluster, observed in copies.items()
    ]
    return status_mod.aggregate(
        REF,
        workload,
        works,
        binding_revision=3,
        placed=placed,
        unready=unready,
        desired=desired,
        asked=asked,
    )


def totals(status: WorkloadStatus) -> tuple[str, int | None, int | None]:
    return status.health, status.ready_replicas, status.replicas


@pytest.mark.parametrize(
    ("copies", "placed", "expected"),
    [
        pytest.param(
            {"eu-west-arm": ready(4), "cn-north-cpu": ready(4)},
            {"cn-north-cpu"},
            ("Healthy", 4, 4),
            id="moved whole: the old copy kept by a graceful eviction is not counted again",
        ),
        pytest.param(
            {"ap-southeast-cpu": ready(3), "us-east-cpu": ready(8), "eu-west-arm": ready(4)},
            {"us-east-cpu", "eu-west-arm"},
            ("Healthy", 12, 12),
            id="a static 2:1:1 division of 12 re-divided over two members reads 12/12",
        ),
        pytest.param(
            {"eu-west-arm": ready(4), "cn-north-cpu": ready(1, of=4)},
            {"cn-north-cpu"},
            ("Progressing", 1, 4),
            id="the new placement still starting: progressing, however ready the old copy",
        ),
        pytest.param(
            {"eu-west-arm": Observed(health="Unhealthy", replicas=4), "b": ready(4)},
            {"b"},
            ("Healthy", 4, 4),
            id="an unhealthy copy being left does not make the new placement unhealthy",
        ),
        pytest.param(
            {"eu-west-arm": ready(4), "cn-north-cpu": ready(4)},
            None,
            ("Healthy", 8, 8),
            id="no Binding known: every copy counts, as before",
        ),
    ],
)
def test_copies_being_left_are_listed_but_not_counted(
    copies: dict[str, Observed],
    placed: set[str] | None,
    expected: tuple[str, int, int],
) -> None:
    status = aggregate(copies, placed=placed)

    assert totals(status) == expected
    assert [r.cluster for r in status.clusters] == sorted(copies), "every copy is listed"
    leaving = {r.cluster for r in status.clusters if r.leaving}
    assert leaving == (set() if placed is None else set(copies) - placed)


def test_a_member_that_is_not_ready_keeps_its_share_wanted_but_nothing_counted_ready() -> None:
    """`api` waits to be placed again with copies on two regions, one of them unreachable,
    while the copy it left behind still reports: 2 of the 5 placed replicas are known to be
    ready, and nobody knows how the unreachable share is doing."""
    status = aggregate(
        {"ap-southeast-cpu": ready(2), "eu-west-arm": ready(3), "us-east-cpu": ready(4)},
        placed={"ap-southeast-cpu", "eu-west-arm"},
        unready={"eu-west-arm", "us-east-cpu"},
    )

    assert totals(status) == ("Unknown", 2, 5)
    rows = {r.cluster: r for r in status.clusters}
    dead = rows["eu-west-arm"]
    assert (dead.stale, dead.health, dead.replicas, dead.ready_replicas) == (
        True,
        "Unknown",
        3,
        None,
    )
    assert "its last report (Healthy, 3/3 ready) is not counted" in dead.message
    assert not dead.up, "failover must not take a dead member's copy for a ready one"
    assert rows["ap-southeast-cpu"].up and not rows["ap-southeast-cpu"].stale
    assert rows["us-east-cpu"].leaving and rows["us-east-cpu"].stale


def test_a_job_on_a_member_that_is_not_ready_is_not_counted_running() -> None:
    running = Observed(health="Progressing", phase="Running", running=2, replicas=2)
    status = aggregate({"a": running, "b": running}, placed={"a", "b"}, unready={"b"}, workload=JOB)

    assert (status.phase, status.running) == ("Running", 2)
    rows = {r.cluster: r for r in status.clusters}
    assert rows["b"].stale and not rows["b"].up and rows["a"].up


@pytest.mark.parametrize(
    ("placed", "unready"),
    [
        pytest.param(set(), set(), id="its Binding no longer targets the member"),
        pytest.param({"a"}, {"a"}, id="its member is not Ready"),
        pytest.param(set(), {"a"}, id="both"),
    ],
)
def test_a_finished_job_stays_finished_wherever_its_copy_is(
    placed: set[str], unready: set[str]
) -> None:
    """A job that succeeded ran to the end: read as unfinished, it would be placed and run
    again."""
    done = Observed(health="Completed", phase="Succeeded", succeeded=2, replicas=2)

    status = aggregate({"a": done}, placed=placed, unready=unready, workload=JOB)

    assert (status.phase, status.succeeded, status.health) == ("Succeeded", 2, "Completed")
    assert not status.clusters[0].stale


def test_ready_never_exceeds_desired_while_a_member_scales_down() -> None:
    """Kubernetes counts the surplus pods ready for a moment after a scale-down."""
    status = aggregate({"a": Observed(health="Progressing", replicas=3, ready_replicas=6)},
                       placed={"a"})  # fmt: skip

    assert (status.ready_replicas, status.replicas) == (3, 3)


def member_status(ready: bool, *, beat: int = 0) -> ClusterStatus:
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    return ClusterStatus(
        conditions=[
            Condition(type="Ready", status="True" if ready else "False", last_transition_time=when)
        ],
        last_heartbeat=when + dt.timedelta(seconds=beat),
    )


async def test_a_member_turning_ready_or_not_reaggregates_the_workloads_with_a_copy_there() -> None:
    """A dead member sends no watch event, and one that comes back with the same pods
    relists what was already seen: only its Ready condition says its copies' reports stop
    or start counting. A heartbeat that changes nothing queues nothing."""
    store = MemoryStore()
    propagator = Propagator(store)
    work = works_mod.new_work(
        ref=REF,
        cluster="a",
        old=None,
        manifest={"apiVersion": "apps/v1", "kind": "Deployment"},
        revision=1,
        status=WorkStatus(),
        uid=None,
    )
    for ref, cluster in ((REF, "a"), (keys.WorkloadRef("shop", "Deployment.apps", "x"), "b")):
        stored = codec.Stored(keys.work_key(cluster, ref), work, 1)
        propagator.sync.works[str(ref)] = {cluster: stored}
    statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
    await statuses.put(keys.cluster_status_key("a"), member_status(True))
    await propagator.cluster_statuses.load()
    following = asyncio.create_task(propagator.cluster_statuses.run())
    try:
        steps: list[tuple[ClusterStatus, list[str]]] = [
            (member_status(True, beat=10), []),
            (member_status(False, beat=20), [status_mod.workload_item(REF)]),
            (member_status(False, beat=30), []),
            (member_status(True, beat=40), [status_mod.workload_item(REF)]),
        ]
        for status, queued in steps:
            await statuses.put(keys.cluster_status_key("a"), status)

            def mirrored(wanted: ClusterStatus = status) -> bool:
                return propagator.cluster_statuses.get(keys.cluster_status_key("a")) == wanted

            await wait_for(mirrored, timeout=5, message="the status mirrored")
            assert [await propagator.queue.get() for _ in range(propagator.queue.pending)] == (
                queued
            )
            for item in queued:
                propagator.queue.done(item)
    finally:
        await stop([following])
        await store.close()


@pytest.mark.parametrize(
    ("observed", "expected"),
    [
        pytest.param(
            Observed(health="Completed", phase="Succeeded", succeeded=1, replicas=1),
            ("Completed", "Succeeded"),
            id="finished: completed, whatever it refused on the way",
        ),
        pytest.param(
            Observed(health="Progressing", phase="Running", running=1, replicas=1),
            ("Progressing", "Running"),
            id="still running: progressing, the refusal shown on its row",
        ),
    ],
)
def test_a_job_whose_member_refused_an_edit_reads_what_its_copy_did(
    observed: Observed, expected: tuple[str, str]
) -> None:
    """A member refused an edit of a running Job's pod template; the copy it kept ran to
    the end. The workload read Progressing for good after its copy had Completed."""
    status = aggregate({"a": observed}, placed={"a"}, workload=JOB, refused={"a"})

    assert (status.health, status.phase) == expected
    (row,) = status.clusters
    assert (row.applied, row.error) == (False, IMMUTABLE)


@pytest.mark.parametrize(
    ("copies", "desired", "expected"),
    [
        pytest.param(
            {"a": ready(4)},
            30,
            ("Progressing", 4, 30),
            id="scaled to 30 with 4 placed: 4/30, not Healthy (kubectl's READY)",
        ),
        pytest.param({"a": ready(4)}, 4, ("Healthy", 4, 4), id="all placed and ready"),
        pytest.param(
            {"a": ready(4), "b": ready(4)},
            4,
            ("Healthy", 8, 8),
            id="duplicated: each member runs the template's 4",
        ),
        pytest.param(
            {"a": ready(2, of=4)},
            30,
            ("Progressing", 2, 30),
            id="placed part still starting: its own health stays",
        ),
        pytest.param({"a": ready(6)}, 4, ("Healthy", 6, 6), id="scaling down: members lead"),
    ],
)
def test_the_desired_count_is_the_template_s_when_not_all_of_it_is_placed(
    copies: dict[str, Observed], desired: int, expected: tuple[str, int, int]
) -> None:
    """A scale-up the fleet cannot hold leaves its Binding Pending with the replicas it
    had: summed over the members, READY read 4/4 and Healthy for a Deployment of 30."""
    status = aggregate(copies, placed=set(copies), desired=desired)

    assert totals(status) == expected


NOT_THERE = Observed()
"""What a Work refused by Abort observes: the object there is not ours, nothing is read."""


@pytest.mark.parametrize(
    ("copies", "refused", "asked", "expected", "template"),
    [
        pytest.param(
            {"cn-north-cpu": NOT_THERE, "us-east-cpu": ready(1)},
            {"cn-north-cpu"},
            {"cn-north-cpu": 1, "us-east-cpu": 1},
            ("Progressing", 1, 2),
            1,
            id="duplicated 1 on two members, one refused by Abort: 1/2, not 1/1",
        ),
        pytest.param(
            {"a": ready(3), "b": ready(2), "c": ready(2)},
            {"b", "c"},
            {"a": 3, "b": 2, "c": 2},
            ("Progressing", 3, 7),
            7,
            id="two of three copies not rendered, their old copies running: 3/7",
        ),
        pytest.param(
            {"a": ready(1)},
            {"a"},
            {"a": 1},
            ("Progressing", 0, 1),
            1,
            id="the only copy not rendered, its old copy running: 0/1, as with others",
        ),
        pytest.param(
            {"a": ready(2)},
            set(),
            {"a": 2, "b": 2},
            ("Progressing", 2, 4),
            4,
            id="a target with no copy yet counts what it is asked for",
        ),
        pytest.param(
            {"a": ready(2), "b": ready(2)},
            set(),
            {"a": 2, "b": 2},
            ("Healthy", 4, 4),
            2,
            id="every copy applied and ready",
        ),
    ],
)
def test_ready_counts_what_every_target_is_asked_for_a_copy_not_applied_none_ready(
    copies: dict[str, Observed],
    refused: set[str],
    asked: dict[str, int],
    expected: tuple[str, int, int],
    template: int,
) -> None:
    """READY is out of the replicas the Binding asks of every cluster it targets, and a
    copy that is not what was asked (refused, rejected, not rendered) has none ready. A
    refused copy was left out of the count when another was applied, and counted (its old
    copy's ready replicas too) when none was: 1/1 for a Duplicated 1 on two members."""
    status = aggregate(copies, placed=set(asked), refused=refused, desired=template, asked=asked)

    assert totals(status) == expected


def test_a_workload_s_status_counts_its_template_s_replicas_as_desired() -> None:
    """The propagator's status of a Deployment scaled to 30 with 4 running reads 4/30."""
    records = works_mod.WorkRecords(
        codec.TypedStore(MemoryStore(), codec.Codec(Work)),
        codec.TypedStore(MemoryStore(), codec.Codec(WorkloadStatus)),
    )
    template = workload("fb", kind="Deployment", namespace="shop", replicas=30)
    copy = copy_on("a", ready(4))

    status = records.status(REF, template, None, [("a", None, copy)], placed={"a": 4})

    assert status is not None
    assert totals(status) == ("Progressing", 4, 30)


def test_a_job_s_status_carries_its_times_and_finishing_condition() -> None:
    """The workload status of a Job divided over two members keeps Kubernetes' fields, as
    Karmada aggregates them onto the template: the earliest start, the latest completion
    once both copies completed, and one Complete condition."""
    complete = WorkCondition(
        type="Complete",
        status="True",
        reason="CompletionsReached",
        last_transition_time=dt.datetime(2026, 1, 1, 10, 30, tzinfo=dt.UTC),
    )

    def done(start: int, end: int) -> Observed:
        return Observed(
            health="Completed",
            phase="Succeeded",
            replicas=1,
            succeeded=2,
            start_time=dt.datetime(2026, 1, 1, 10, start, tzinfo=dt.UTC),
            completion_time=dt.datetime(2026, 1, 1, 10, end, tzinfo=dt.UTC),
            conditions=(complete,),
        )

    total = aggregate({"a": done(5, 30), "b": done(0, 20)}, placed={"a", "b"}, workload=JOB)
    assert (total.phase, total.succeeded) == ("Succeeded", 4)
    assert total.start_time == dt.datetime(2026, 1, 1, 10, 0, tzinfo=dt.UTC)
    assert total.completion_time == dt.datetime(2026, 1, 1, 10, 30, tzinfo=dt.UTC)
    assert [(c.type, c.reason) for c in total.conditions] == [("Complete", "CompletionsReached")]
    wire = total.to_wire()
    assert (wire["startTime"], wire["completionTime"]) == (
        "2026-01-01T10:00:00Z",
        "2026-01-01T10:30:00Z",
    )
