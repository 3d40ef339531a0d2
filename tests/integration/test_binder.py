"""The binder against a real etcd: batched CAS writes, lost races retried, unchanged skipped."""

from __future__ import annotations

import uuid
from typing import cast

import pytest

from federation import errors
from federation.registry import codec, keys
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from federation.scheduler import binder
from policies.models.binding import Binding, BindingStatus, ClusterVerdict, TargetCluster
from policies.models.work import WorkloadStatus
from tests.unit.scheduler.fleet import NOW, FailingCommits, evicted
from tests.unit.scheduler.fleet import bound as binding

pytestmark = pytest.mark.integration


@pytest.fixture
def namespace() -> str:
    return f"ns-{uuid.uuid4().hex[:10]}"


async def test_many_bindings_are_written_in_few_transactions(
    etcd_store: EtcdStore, namespace: str
) -> None:
    writer = binder.Binder(etcd_store, batch=100)
    report = await writer.write([binding(namespace, f"job-{i}") for i in range(250)])
    assert (report.written, report.transactions, report.retried) == (250, 3, 0)
    typed = codec.TypedStore(etcd_store, binder.CODEC)
    listed = await typed.list(keys.prefix("bindings") + namespace + "/")
    assert len(listed.items) == 250
    assert listed.items[0].obj.spec.clusters[0].name == "a"


async def test_bindings_of_services_on_hundreds_of_members_fit_etcds_request_limit(
    etcd_store: EtcdStore, namespace: str
) -> None:
    """A service duplicated on 200 members has a Binding of some 37 KB (a target and a
    verdict per member). Sixty of them in one transaction of 100 Bindings passed etcd's
    1.5 MiB request limit: the write was refused whole, and so was every cycle after."""
    members = [TargetCluster(name=f"member-{i:04d}", replicas=2) for i in range(200)]
    scores = {"cost": 40, "binpack": 10, "locality": 100, "affinity": 100}
    verdicts = [
        ClusterVerdict(cluster=m.name, verdict="ok", score=63, scores=scores, selected=True)
        for m in members
    ]
    wide = []
    for i in range(60):
        one = binding(namespace, f"agent-{i}")
        spec = one.spec.model_copy(update={"clusters": members, "explanation": verdicts})
        wide.append(one.model_copy(update={"spec": spec}))
    writer = binder.Binder(etcd_store, batch=100)

    report = await writer.write(wide)

    assert report.written == 60 and report.transactions > 1
    typed = codec.TypedStore(etcd_store, binder.CODEC)
    listed = await typed.list(keys.prefix("bindings") + namespace + "/")
    assert len(listed.items) == 60 and len(listed.items[0].obj.spec.clusters) == 200


async def test_only_changed_bindings_are_rewritten(etcd_store: EtcdStore, namespace: str) -> None:
    writer = binder.Binder(etcd_store)
    await writer.write([binding(namespace, f"job-{i}") for i in range(5)])
    before = await etcd_store.current_revision()
    later = NOW.replace(hour=13)
    unchanged = [
        binding(namespace, f"job-{i}").model_copy(
            update={"status": BindingStatus(phase="Scheduled", last_scheduled_time=later)}
        )
        for i in range(4)
    ]
    report = await writer.write([*unchanged, binding(namespace, "job-4", cluster="b")])
    assert (report.written, report.unchanged) == (1, 4)
    assert await etcd_store.current_revision() == before + 1
    key = keys.binding_key(keys.WorkloadRef(namespace, "Job.batch", "job-4"))
    stored = await codec.TypedStore(etcd_store, binder.CODEC).get(key)
    assert stored is not None and stored.obj.spec.clusters[0].name == "b"


async def test_a_lost_race_is_reread_and_keeps_failovers_eviction_tasks(
    etcd_store: EtcdStore, namespace: str
) -> None:
    from policies.models.binding import EvictionTask

    writer = binder.Binder(etcd_store)
    await writer.write([binding(namespace, "job"), binding(namespace, "other")])
    key = keys.binding_key(keys.WorkloadRef(namespace, "Job.batch", "job"))
    typed = codec.TypedStore(etcd_store, binder.CODEC)
    # Failover amends the binding behind the binder's back.
    task = EvictionTask(cluster="a", reason="cluster unreachable", creation_time=NOW, replicas=1)

    def add_task(current: Binding | None) -> Binding:
        assert current is not None
        return current.model_copy(
            update={"spec": current.spec.model_copy(update={"eviction_tasks": [task]})}
        )

    await typed.mutate(key, add_task)
    report = await writer.write(
        [binding(namespace, "job", cluster="c"), binding(namespace, "other", cluster="c")]
    )
    assert report.retried == 2 and report.written == 2  # the whole batch failed its compare
    stored = await typed.get(key)
    assert stored is not None
    assert stored.obj.spec.clusters[0].name == "c"
    assert stored.obj.spec.eviction_tasks == [task]


async def test_a_binding_with_tasks_of_its_own_keeps_failovers_on_other_clusters(
    etcd_store: EtcdStore, namespace: str
) -> None:
    """A move's handover (the copy on b runs until c's is ready) is written beside the task
    failover has for a: replacing it, the copy a graceful eviction kept on a was never
    purged, and a member application failover barred the workload from was open again."""
    from policies.models.binding import EvictionTask

    writer = binder.Binder(etcd_store)
    await writer.write([binding(namespace, "job", cluster="b")])
    key = keys.binding_key(keys.WorkloadRef(namespace, "Job.batch", "job"))
    typed = codec.TypedStore(etcd_store, binder.CODEC)
    failover = EvictionTask(cluster="a", reason="cluster unreachable", creation_time=NOW)
    await typed.mutate(
        key,
        lambda current: cast(Binding, current).model_copy(
            update={"spec": cast(Binding, current).spec.model_copy(
                update={"eviction_tasks": [failover]}
            )}
        ),
    )  # fmt: skip
    handover = EvictionTask(cluster="b", reason="Rescheduled: b:1 -> c:1", creation_time=NOW)
    moved = binding(namespace, "job", cluster="c")
    moved = moved.model_copy(
        update={"spec": moved.spec.model_copy(update={"eviction_tasks": [handover]})}
    )

    await writer.write([moved])

    stored = await typed.get(key)
    assert stored is not None and stored.obj.placement() == {"c": 1}
    assert stored.obj.spec.eviction_tasks == [handover, failover]


async def test_two_bindings_for_one_key_write_the_later(
    etcd_store: EtcdStore, namespace: str
) -> None:
    """etcd refuses a transaction naming a key twice, and with it every other Binding."""
    writer = binder.Binder(etcd_store)
    given = [
        binding(namespace, "job"),
        binding(namespace, "other"),
        binding(namespace, "job", cluster="b"),
    ]

    report = await writer.write(given)

    assert report.written == 2
    key = keys.binding_key(keys.WorkloadRef(namespace, "Job.batch", "job"))
    stored = await codec.TypedStore(etcd_store, binder.CODEC).get(key)
    assert stored is not None and stored.obj.spec.clusters[0].name == "b"


async def test_load_learns_existing_revisions(etcd_store: EtcdStore, namespace: str) -> None:
    await binder.Binder(etcd_store).write([binding(namespace, "job")])
    fresh = binder.Binder(etcd_store)
    assert await fresh.load() >= 1
    report = await fresh.write([binding(namespace, "job")])
    assert (report.written, report.unchanged) == (0, 1)


async def test_a_lost_race_merges_with_the_stored_tasks_not_the_ones_last_seen(
    etcd_store: EtcdStore, namespace: str
) -> None:
    from policies.models.binding import EvictionTask

    typed = codec.TypedStore(etcd_store, binder.CODEC)
    key = keys.binding_key(keys.WorkloadRef(namespace, "Job.batch", "job"))
    task = EvictionTask(cluster="a", reason="cluster unreachable", creation_time=NOW, replicas=1)
    writer = binder.Binder(etcd_store)
    moved = binding(namespace, "job", cluster="b")
    with_task = moved.model_copy(
        update={"spec": moved.spec.model_copy(update={"eviction_tasks": [task]})}
    )
    await writer.write([with_task])  # the binder last saw the task

    def end_task(current: Binding | None) -> Binding:
        assert current is not None  # failover ends it behind the binder's back
        return current.model_copy(
            update={"spec": current.spec.model_copy(update={"eviction_tasks": []})}
        )

    await typed.mutate(key, end_task)
    report = await writer.write([binding(namespace, "job", cluster="c")])
    assert report.retried == 1
    stored = await typed.get(key)
    assert stored is not None and stored.obj.spec.clusters[0].name == "c"
    assert stored.obj.spec.eviction_tasks == []  # not the ended task brought back


async def test_placed_again_where_it_is_keeps_the_stored_reason(
    etcd_store: EtcdStore, namespace: str
) -> None:
    typed = codec.TypedStore(etcd_store, binder.CODEC)
    key = keys.binding_key(keys.WorkloadRef(namespace, "Job.batch", "job"))
    rebalanced = binding(namespace, "job", cluster="home").model_copy(
        update={
            "status": BindingStatus(
                phase="Scheduled", reason="Rebalanced: back home", last_scheduled_time=NOW
            )
        }
    )
    await binder.Binder(etcd_store).write([rebalanced])
    later = NOW.replace(hour=13)
    again = binding(namespace, "job", cluster="home", replicas=1).model_copy(
        update={"status": BindingStatus(phase="Scheduled", last_scheduled_time=later)}
    )
    again.metadata.annotations[binder.FINGERPRINT] = "edited"  # a change worth writing
    await binder.Binder(etcd_store).write([again])
    stored = await typed.get(key)
    assert stored is not None
    assert stored.obj.metadata.annotations[binder.FINGERPRINT] == "edited"
    assert (stored.obj.status.reason, stored.obj.status.last_scheduled_time) == (
        "Rebalanced: back home",
        NOW,
    )
    moved = binding(namespace, "job", cluster="away")
    await binder.Binder(etcd_store).write([moved])
    stored = await typed.get(key)
    assert stored is not None and stored.obj.status.reason == ""  # a real move tells its own


async def test_a_decision_on_a_placement_moved_meanwhile_is_dropped(
    etcd_store: EtcdStore, namespace: str
) -> None:
    typed = codec.TypedStore(etcd_store, binder.CODEC)
    key = keys.binding_key(keys.WorkloadRef(namespace, "Job.batch", "job"))
    writer = binder.Binder(etcd_store)
    await writer.write([binding(namespace, "job", cluster="fallback")])

    def fail_back(current: Binding | None) -> Binding:
        assert current is not None  # fail-back moves it home behind the binder's back
        home = binding(namespace, "job", cluster="home")
        return current.model_copy(update={"spec": home.spec})

    await typed.mutate(key, fail_back)
    report = await writer.write([binding(namespace, "job", cluster="fallback", replicas=2)])
    assert (report.superseded, report.written) == (1, 0)
    stored = await typed.get(key)
    assert stored is not None and stored.obj.placement() == {"home": 1}
    assert writer.stored(key) == (stored.revision, stored.obj)  # the next cycle starts there


async def test_an_eviction_that_fails_to_commit_writes_no_placement(
    etcd_store: EtcdStore, namespace: str
) -> None:
    """One Binding per transaction, several at once: the victim's eviction is decided
    before its preemptor's admission but would be sent alongside it, and a preemptor
    committed without its victim's eviction leaves the queue holding both. Evictions go
    first and alone, so when theirs fails nothing else is written."""
    typed = codec.TypedStore(etcd_store, binder.CODEC)
    victim = binding(namespace, "victim")
    await binder.Binder(etcd_store).write([victim])
    eviction = evicted(victim)
    urgent, other = binding(namespace, "urgent"), binding(namespace, "other", cluster="b")
    refs = [keys.binding_key(binder.binding_ref(b)) for b in (eviction, urgent, other)]
    flaky = FailingCommits(etcd_store, lambda ops: any(op.key == refs[0] for op in ops))
    writer = binder.Binder(cast(st.Store, flaky), batch=1, in_flight=4)
    await writer.load()
    with pytest.raises(errors.Unavailable):
        await writer.write([other, eviction, urgent], freeing={refs[0]}, placing={refs[1], refs[2]})
    assert flaky.refused == 1
    listed = await typed.list(keys.prefix("bindings") + namespace + "/")
    assert {i.obj.metadata.name: i.obj.status.phase for i in listed.items} == {
        "victim": "Scheduled"
    }
    flaky.fails = lambda _: False  # etcd is back: the next cycle's write goes through
    report = await writer.write(
        [other, eviction, urgent], freeing={refs[0]}, placing={refs[1], refs[2]}
    )
    assert (report.written, report.held_back) == (3, [])
    listed = await typed.list(keys.prefix("bindings") + namespace + "/")
    assert {i.obj.metadata.name: i.obj.placement() for i in listed.items} == {
        "victim": {},
        "urgent": {"a": 1},
        "other": {"b": 1},
    }


async def test_placements_decided_after_a_superseded_eviction_are_held_back(
    etcd_store: EtcdStore, namespace: str
) -> None:
    """The victim was moved by another writer before its eviction was written: the
    eviction is dropped, and so is every admission decided after it (they may use its
    room); one decided before it is written, as is a Pending Binding."""
    typed = codec.TypedStore(etcd_store, binder.CODEC)
    victim = binding(namespace, "victim", cluster="a")
    writer = binder.Binder(etcd_store)
    await writer.write([victim])
    key = keys.binding_key(binder.binding_ref(victim))
    await typed.mutate(
        key,
        lambda b: (
            b and b.model_copy(update={"spec": binding(namespace, "victim", cluster="b").spec})
        ),
    )
    before, urgent = binding(namespace, "before"), binding(namespace, "urgent")
    queued = evicted(binding(namespace, "queued"), reason="queue qa at capability")
    ref = {b.metadata.name: keys.binding_key(binder.binding_ref(b)) for b in (before, urgent)}
    report = await writer.write(
        [before, evicted(victim), urgent, queued],
        freeing={key},
        placing={ref["before"], ref["urgent"]},
    )
    assert (report.superseded, report.dropped, report.held_back) == (1, [key], [ref["urgent"]])
    listed = await typed.list(keys.prefix("bindings") + namespace + "/")
    assert {i.obj.metadata.name: (i.obj.status.phase, i.obj.placement()) for i in listed.items} == {
        "victim": ("Scheduled", {"b": 1}),
        "before": ("Scheduled", {"a": 1}),
        "queued": ("Pending", {}),
    }


async def test_a_watch_takes_back_its_own_writes_and_decodes_everyone_elses(
    etcd_store: EtcdStore, namespace: str
) -> None:
    """Bindings written in batches several at a time come back through a watch sharing the
    binder's echoes as the very objects written; another writer's change is decoded."""
    echoes: codec.Echoes[Binding] = codec.Echoes()
    watched = codec.TypedStore(etcd_store, binder.CODEC, echoes=echoes)
    start = await etcd_store.current_revision() + 1
    writer = binder.Binder(etcd_store, batch=10, in_flight=3, echoes=echoes)
    ours = [binding(namespace, f"job-{i}") for i in range(45)]
    report = await writer.write(ours)
    assert (report.written, report.transactions) == (45, 5)
    theirs = binding(namespace, "job-0", cluster="b")  # e.g. rebalance moving one
    await codec.TypedStore(etcd_store, binder.CODEC).put(
        keys.binding_key(binder.binding_ref(theirs)), theirs
    )
    seen: list[Binding] = []
    prefix = keys.prefix("bindings") + namespace + "/"
    async for event in watched.watch(prefix, start_revision=start):
        assert isinstance(event, codec.Put)
        seen.append(event.item.obj)
        if len(seen) == 46:
            break
    by_name = {b.metadata.name: b for b in ours}
    assert all(b is by_name[b.metadata.name] for b in seen[:45])
    assert seen[45] is not theirs and seen[45].spec.clusters[0].name == "b"
    assert len(echoes) == 0


def test_echoes_match_bytes_exactly_and_forget_failed_writes() -> None:
    echoes: codec.Echoes[str] = codec.Echoes(limit=2)
    echoes.wrote("k", b"v1", "one")
    assert echoes.take("k", b"v2") is None  # another value: decode it
    assert echoes.take("k", b"v1") is None  # taken (or refused) once only
    echoes.wrote("k", b"v1", "one")
    echoes.forget("k")
    assert echoes.take("k", b"v1") is None
    for i in range(3):
        echoes.wrote(f"k{i}", b"v", str(i))
    assert len(echoes) <= 2


@pytest.mark.parametrize("batch", [100, 2])
async def test_a_move_is_written_only_while_the_status_it_read_holds(
    etcd_store: EtcdStore, namespace: str, batch: int
) -> None:
    """Five jobs on a moved to b, each decided on its status's revision. job-2's status
    changes before the write (its member reports it finished): its move is dropped and
    named restated, while the others move, job-3's too after another writer amended its
    Binding in between (the retry keeps the check)."""
    jobs = [binding(namespace, f"job-{i}") for i in range(5)]
    await binder.Binder(etcd_store).write(jobs)
    statuses = codec.TypedStore(etcd_store, codec.Codec(WorkloadStatus))
    read: dict[str, int] = {}
    for b in jobs:
        ref = binder.binding_ref(b)
        status = WorkloadStatus(workload=b.spec.workload, phase="Running")
        written = await statuses.put(keys.workload_status_key(ref), status)
        read[keys.binding_key(ref)] = written.revision
    writer = binder.Binder(etcd_store, batch=batch)
    await writer.load()
    moves = [binding(namespace, b.metadata.name, cluster="b") for b in jobs]
    finished = WorkloadStatus(workload=jobs[2].spec.workload, phase="Succeeded")
    await statuses.put(keys.workload_status_key(binder.binding_ref(jobs[2])), finished)
    typed = codec.TypedStore(etcd_store, binder.CODEC)
    key3 = keys.binding_key(binder.binding_ref(jobs[3]))
    await typed.mutate(key3, lambda b: b and b.model_copy(
        update={"status": BindingStatus(phase="Scheduled", reason="amended")}))  # fmt: skip

    report = await writer.write(moves, checks=read)

    key2 = keys.binding_key(binder.binding_ref(jobs[2]))
    assert report.restated == [key2] and report.dropped == [key2]
    listed = (await typed.list(keys.prefix("bindings"))).items
    placed = {
        i.obj.metadata.name: i.obj.placement()
        for i in listed
        if i.obj.metadata.namespace == namespace
    }
    assert placed == {f"job-{i}": {"a" if i == 2 else "b": 1} for i in range(5)}
    stored = writer.stored(key2)
    assert stored is not None and stored[1].placement() == {"a": 1}
