"""The queue status view (`GET /apis/status.fedctl.io/v1alpha1/queues`) and the CLI that
reads it: usage charged as the controller charges it, parents counting their subtree."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from federation import clock
from federation.api import queue_status
from federation.cache import snapshot as snap
from federation.cli import main
from federation.queue.pending import PendingStore
from federation.quota.accounting import Usage
from federation.registry import codec, embedded, keys, objects
from federation.registry.memory import MemoryStore
from federation.scheduler import cycle, queue_view
from federation.scheduler import plan as planning
from federation.scheduler.loop import SchedulerLoop
from federation.settings import SchedulerSettings
from policies.models.binding import Binding, WorkloadReference
from policies.models.work import WorkloadStatus
from policies.models.workload import Workload
from tests.integration.test_scheduler_loop import registry_with_member
from tests.serving import api_server
from tests.unit.scheduler import fleet
from tests.waiting import stop as stop_tasks
from tests.waiting import wait_for

pytestmark = pytest.mark.integration


async def test_usage_against_limits_per_queue_and_per_subtree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Cluster a has 32 cores. `held` (2 pods of 10 cores, queue qa) is admitted and its
    Binding stored; `done` (6 cores, qa) finished; `wait` (queue qb) and `typo` (queue qz,
    not defined) are Pending."""
    store, member = await registry_with_member()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    queues = [
        fleet.queue("org", capability={"cpu": "24"}, weight=2),
        fleet.queue("qa", parent="org", guarantee={"cpu": "4"}),
        fleet.queue("qb", parent="org"),
    ]
    for q in queues:
        await objs.put(objects.key_for(q), q)
    held = fleet.workload("held", cpu="10", replicas=2, queue="qa")
    await objs.put(objects.key_for(held), held)
    scheduler = cycle.Scheduler()
    pending = PendingStore()
    pending.add(planning.job_for(held, None, settings=scheduler.settings))
    decided = scheduler.run_cycle(snap.build([member], queues=queues), pending, Usage(), fleet.NOW)
    (admitted,) = decided.bindings
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    await bindings.put(keys.binding_key(objects.workload_ref(held)), admitted)
    # A finished job's Binding stays Scheduled, but it holds nothing, as for the scheduler.
    done = fleet.workload("done", cpu="6", queue="qa")
    await objs.put(objects.key_for(done), done)
    pending = PendingStore()
    pending.add(planning.job_for(done, None, settings=scheduler.settings))
    (finished,) = scheduler.run_cycle(
        snap.build([member], queues=queues), pending, Usage(), fleet.NOW
    ).bindings
    await bindings.put(keys.binding_key(objects.workload_ref(done)), finished)
    await codec.TypedStore(store, codec.Codec(WorkloadStatus)).put(
        keys.workload_status_key(objects.workload_ref(done)),
        WorkloadStatus(workload=finished.spec.workload, phase="Succeeded"),
    )
    for name, queue in (("wait", "qb"), ("typo", "qz")):
        w = fleet.workload(name, queue=queue)
        await objs.put(objects.key_for(w), w)
        waiting = admitted.model_copy(
            update={
                "metadata": admitted.metadata.model_copy(update={"name": name}),
                "spec": admitted.spec.model_copy(update={"queue": queue, "clusters": []}),
                "status": admitted.status.model_copy(update={"phase": "Pending"}),
            }
        )
        await bindings.put(keys.binding_key(objects.workload_ref(w)), waiting)

    async with api_server(store) as server:

        def get() -> dict[str, dict[str, object]]:
            with urllib.request.urlopen(server + "/apis/status.fedctl.io/v1alpha1/queues") as r:
                return {q["name"]: q for q in json.loads(r.read())["items"]}

        items = await asyncio.to_thread(get)
        assert set(items) == {"default", "org", "qa", "qb", "qz"}  # default: implicit
        assert items["qa"]["used"] == {"cpu": "20", "memory": "2Gi"}
        assert (items["qa"]["admitted"], items["qa"]["pending"]) == (1, 0)
        assert items["qa"]["guarantee"] == {"cpu": "4"}
        assert items["org"]["used"] == items["qa"]["used"]  # the subtree's
        assert (items["org"]["admitted"], items["org"]["pending"]) == (1, 1)
        assert items["org"]["children"] == ["qa", "qb"]
        assert items["org"]["share"] == pytest.approx(20 / 32 / 2, abs=1e-6)  # cpu, weight 2
        assert items["qz"]["defined"] is False and items["qz"]["pending"] == 1

        code = await asyncio.to_thread(main.main, ["get", "queues", "--server", server])
        table = [line.split() for line in capsys.readouterr().out.splitlines()]
        assert code == 0
        rows = {row[0]: row[1:] for row in table[1:]}
        assert rows["org"][:6] == ["-", "2", "0", "1", "1", "31.2%"]
        assert rows["qa"][:5] == ["org", "1", "0", "1", "0"]
        assert rows["qz"][-2:] == ["<not", "defined>"]

        code = await asyncio.to_thread(main.main, ["describe", "queue", "org", "--server", server])
        out = capsys.readouterr().out
        assert code == 0
        assert "Children:    qa, qb" in out
        body = out[out.index("Usage:") : out.index("Waiting:")].splitlines()
        usage = {line.split()[0]: line.split()[1:] for line in body[-2:]}
        assert usage["cpu"] == ["20", "-", "24"]
        # A parent lists its subtree's waiting work; qz is none of its queues.
        waiting = out[out.index("Waiting:") :].splitlines()
        assert waiting[0] == "Waiting:     1, in admission order"
        assert waiting[2].split()[:3] == ["1", "qb", "team/wait"]
        assert usage["memory"] == ["2Gi", "-", "-"]

        code = await asyncio.to_thread(main.main, ["describe", "queue", "qz", "--server", server])
        assert code == 1
        assert 'queues "qz": not defined, and 1 workload(s) wait in it' in (capsys.readouterr().err)


async def test_an_answer_is_kept_until_the_registry_changes_and_it_is_old() -> None:
    """A dashboard polling a busy federation must not recompute every admitted workload's
    charge on each call: a kept answer is served while nothing changed, or while it is
    younger than the refresh period, and says how old it is."""
    store, _ = await registry_with_member()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    await objs.put(objects.key_for(fleet.queue("qa")), fleet.queue("qa"))
    fake = clock.FakeClock()
    api = queue_status.QueueStatusApi(store, clock=fake, refresh=2.0)
    app = web.Application()
    app.add_routes(api.routes())
    runner = web.AppRunner(app)
    await runner.setup()
    port = embedded.free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with aiohttp.ClientSession() as session:

            async def names() -> tuple[list[str], float, bool]:
                async with session.get(f"http://127.0.0.1:{port}{queue_status.QUEUES_PATH}") as r:
                    doc = await r.json()
                return [q["name"] for q in doc["items"]], doc["ageSeconds"], doc["stale"]

            assert await names() == (["default", "qa"], 0.0, False)
            await fake.advance(5)
            assert await names() == (
                ["default", "qa"],
                5.0,
                False,
            )  # nothing changed: the same answer
            assert api.computed == 1
            await objs.put(objects.key_for(fleet.queue("qb")), fleet.queue("qb"))
            assert await names() == (["default", "qa", "qb"], 0.0, False)  # changed, and it was old
            await objs.put(objects.key_for(fleet.queue("qc")), fleet.queue("qc"))
            await fake.advance(1)
            assert await names() == (
                ["default", "qa", "qb"],
                1.0,
                True,
            )  # changed, but only 1 s old
            await fake.advance(1.5)
            assert await names() == (["default", "qa", "qb", "qc"], 0.0, False)
            assert api.computed == 3
    finally:
        await runner.cleanup()


async def test_the_leading_loop_answers_as_a_registry_read_would_without_charging_again() -> None:
    """While this process's scheduling loop leads, the view answers from its latest cycle:
    the very items a read of the registry gives (a capped parent, admitted and pending work,
    a finished job, a queue nobody defined), without charging any workload again. When the
    loop stops leading, the registry is read again."""
    store, _ = await registry_with_member()  # cluster a: 32 cores
    objs = codec.TypedStore(store, objects.ObjectCodec())
    for q in (
        fleet.queue("org", capability={"cpu": "24"}, weight=2),
        fleet.queue("qa", parent="org", guarantee={"cpu": "4"}),
        fleet.queue("qb", parent="org"),
    ):
        await objs.put(objects.key_for(q), q)
    for w in (
        fleet.workload("big-1", cpu="10", replicas=2, queue="qa"),
        fleet.workload("big-2", cpu="10", queue="qb"),
        fleet.workload("small", cpu="2", queue="qb"),
        fleet.workload("typo", cpu="1", queue="qz"),
        fleet.workload("done", cpu="1", queue="qa"),
    ):
        await objs.put(objects.key_for(w), w)
    done = fleet.workload("done", cpu="1", queue="qa")
    await codec.TypedStore(store, codec.Codec(WorkloadStatus)).put(
        keys.workload_status_key(objects.workload_ref(done)),
        WorkloadStatus(
            workload=WorkloadReference(
                api_version=done.api_version,
                kind=done.kind,
                namespace=done.metadata.namespace or "default",
                name="done",
            ),
            phase="Succeeded",
        ),
    )
    published = queue_view.Published()
    api = queue_status.QueueStatusApi(store, source=published)
    loop = SchedulerLoop(
        store, settings=SchedulerSettings(), clock=clock.real, debounce=0.01, queue_view=published
    )
    app = web.Application()
    app.add_routes(api.routes())
    runner = web.AppRunner(app)
    await runner.setup()
    port = embedded.free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    task = asyncio.create_task(loop.run())
    try:
        async with aiohttp.ClientSession() as session:

            async def doc() -> dict[str, Any]:
                async with session.get(f"http://127.0.0.1:{port}{queue_status.QUEUES_PATH}") as r:
                    return dict(await r.json())

            def settled() -> bool:
                latest = published.latest()
                return latest is not None and not latest[1] and loop.last is not None

            await wait_for(settled, message="a cycle published with nothing left waiting")
            served = await doc()
            registry = queue_status.summarise(await api.plan.live(), default="default")
            assert served["source"] == "scheduler" and served["stale"] is False
            assert served["items"] == registry
            assert api.computed == 0  # nothing was read from the registry for it
            items = {q["name"]: q for q in served["items"]}
            assert set(items) == {"default", "org", "qa", "qb", "qz"}  # default: implicit
            assert items["org"]["admitted"] == items["qa"]["admitted"] + items["qb"]["admitted"]
            assert items["org"]["admitted"] >= 2 and items["org"]["pending"] == 1  # cap 24
            assert items["qz"]["defined"] is False and items["qz"]["pending"] == 1
            assert served["revision"] >= 1

            await stop_tasks([task])
            assert published.latest() is None  # withdrawn with the term
            fallback = await doc()
            assert fallback["source"] == "registry" and fallback["items"] == registry
            assert api.computed == 1
    finally:
        await stop_tasks([task])
        await runner.cleanup()


async def test_deleting_a_queue_that_work_still_names_warns_what_it_leaves(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The warning counts as `get queues` does: a Job running with requests is admitted,
    one waiting is pending. A finished Job, a workload that requests nothing and one with
    no pods (a ConfigMap) hold nothing of the queue: the view leaves them out, and so
    must the warning (it said 3 admitted where `get queues` said 1)."""
    store, _ = await registry_with_member()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    for name in ("qa", "qb"):
        await objs.put(objects.key_for(fleet.queue(name)), fleet.queue(name))
    bare = fleet.workload("bare", queue="qa").to_wire()
    bare["spec"]["template"]["spec"]["containers"][0].pop("resources")
    settings = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"},
                "metadata": {"name": "settings", "namespace": "team",
                             "annotations": {"fedctl.io/queue": "qa"}}}  # fmt: skip
    workloads = [
        fleet.workload("running", queue="qa"),
        fleet.workload("waiting", queue="qa"),
        fleet.workload("done", queue="qa"),
        Workload.model_validate(bare),
        Workload.model_validate(settings),
    ]
    bindings = codec.TypedStore(store, codec.Codec(Binding))
    for workload in workloads:
        await objs.put(objects.key_for(workload), workload)
        ref = objects.workload_ref(workload)
        scheduled = workload.metadata.name != "waiting"
        binding = Binding.model_validate(
            {
                "metadata": {"name": ref.name, "namespace": ref.namespace},
                "spec": {
                    "workload": {"apiVersion": workload.api_version, "kind": workload.kind,
                                 "namespace": ref.namespace, "name": ref.name},
                    "queue": "qa",
                    "clusters": [{"name": "a", "replicas": 1}] if scheduled else [],
                },
                "status": {"phase": "Scheduled" if scheduled else "Pending"},
            }
        )  # fmt: skip
        await bindings.put(keys.binding_key(ref), binding)
    # A finished Job keeps its Scheduled Binding, but holds nothing: not "admitted".
    done = WorkloadStatus(workload=binding.spec.workload, phase="Succeeded", succeeded=1)
    done = done.model_copy(update={"workload": done.workload.model_copy(update={"name": "done"})})
    await codec.TypedStore(store, codec.Codec(WorkloadStatus)).put(
        keys.workload_status_key(objects.workload_ref(workloads[2])), done
    )
    async with api_server(store) as server:
        async with (
            aiohttp.ClientSession() as session,
            session.get(server + queue_status.QUEUES_PATH) as answer,
        ):
            shown = {q["name"]: q for q in (await answer.json())["items"]}["qa"]
        assert (shown["admitted"], shown["pending"]) == (1, 1)
        code = await asyncio.to_thread(main.main, ["delete", "queue", "qa", "--server", server])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        assert (
            "Warning: queue qa still has 1 admitted and 1 pending workload(s): the admitted"
            " keep running" in captured.err
        )
        code = await asyncio.to_thread(main.main, ["delete", "queue", "qb", "--server", server])
        assert code == 0 and "Warning" not in capsys.readouterr().err


async def test_a_capability_lowered_below_what_a_queue_holds_is_warned_and_described(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The write stands and nothing is evicted, but the user lowering a limit is told it
    bites only as admitted work finishes: `apply` warns, `describe` says it."""
    store, member = await registry_with_member()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    qa = fleet.queue("qa", capability={"cpu": "32"})
    await objs.put(objects.key_for(qa), qa)
    held = fleet.workload("held", cpu="10", replicas=2, queue="qa")
    await objs.put(objects.key_for(held), held)
    pending = PendingStore()
    scheduler = cycle.Scheduler()
    pending.add(planning.job_for(held, None, settings=scheduler.settings))
    (admitted,) = scheduler.run_cycle(
        snap.build([member], queues=[qa]), pending, Usage(), fleet.NOW
    ).bindings
    await codec.TypedStore(store, codec.Codec(Binding)).put(
        keys.binding_key(objects.workload_ref(held)), admitted
    )
    lowered = tmp_path / "qa.yaml"
    queue_yaml = "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: qa}\n"
    async with api_server(store) as server:

        async def fedctl(*args: str) -> tuple[int, str, str]:
            code = await asyncio.to_thread(main.main, [*args, "--server", server])
            out, err = capsys.readouterr()
            return code, out, err

        lowered.write_text(queue_yaml + "spec: {capability: {cpu: '12'}}\n")
        code, out, err = await fedctl("apply", "-f", str(lowered))
        assert (code, out) == (0, "queue.fedctl.io/qa configured\n")
        assert err == (
            "Warning: queue qa holds more than its capability (cpu 20 of 12): admitted work"
            " keeps running; nothing more is admitted to it until its usage falls below the"
            " capability\n"
        )
        code, out, err = await fedctl("describe", "queue", "qa")
        assert "Over:        cpu 20 of 12: admitted work keeps running" in out
        # Unchanged, or raised above what it holds: nothing to say.
        assert (await fedctl("apply", "-f", str(lowered)))[2] == ""
        lowered.write_text(queue_yaml + "spec: {capability: {cpu: '20'}}\n")
        assert (await fedctl("apply", "-f", str(lowered)))[2] == ""
        assert "Over:" not in (await fedctl("describe", "queue", "qa"))[1]
        # A first child for qa, which holds work: qa takes no more work from then on.
        kid = tmp_path / "kid.yaml"
        kid.write_text(
            "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: kid}\n"
            "spec: {parent: qa}\n"
        )
        code, out, err = await fedctl("apply", "-f", str(kid))
        assert (code, out) == (0, "queue.fedctl.io/kid created\n")
        assert err == (
            "Warning: queue qa holds 1 admitted and 0 waiting workload(s) and now has child"
            " queues (kid): a parent takes no work itself: its admitted workloads keep"
            " running, and the waiting ones wait until their fedctl.io/queue names one of"
            " its leaf queues\n"
        )
        assert (await fedctl("apply", "-f", str(kid)))[2] == ""  # unchanged: said once
        # qa is a parent now: changing its child, or giving it another, adopts nothing,
        # and its counts (its child's) are not work it holds itself.
        kid.write_text(
            "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: kid}\n"
            "spec: {parent: qa, capability: {cpu: '8'}}\n---\n"
            "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: kid2}\n"
            "spec: {parent: qa}\n"
        )
        code, out, err = await fedctl("apply", "-f", str(kid))
        assert (code, err) == (0, "")
        assert out == "queue.fedctl.io/kid configured\nqueue.fedctl.io/kid2 created\n"


async def test_apply_warns_of_a_workload_naming_a_queue_that_takes_no_work(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Judged against the server's queues: a misspelt one, and a parent."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    for q in (fleet.queue("ml"), fleet.queue("ml-prod", parent="ml")):
        await objs.put(objects.key_for(q), q)
    job = (
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  namespace: t\n"
        "  annotations: {fedctl.io/queue: QUEUE}\n"
        "spec: {template: {spec: {containers: [{name: c, image: x}]}}}\n"
    )
    path = tmp_path / "j.yaml"
    async with api_server(store) as server:

        async def apply(queue: str) -> str:
            path.write_text(job.replace("QUEUE", queue))
            assert (
                await asyncio.to_thread(main.main, ["apply", "-f", str(path), "--server", server])
                == 0
            )
            return capsys.readouterr().err

        assert "queue 'mlprod' is not defined on the server" in await apply("mlprod")
        assert "(did you mean 'ml-prod'?)" in await apply("mlprod")
        assert "queue 'ml' is a parent: it takes no work" in await apply("ml")
        assert await apply("ml-prod") == ""
        assert await apply("default") == ""  # the implicit default queue takes work


async def test_apply_judges_a_parent_queue_by_the_servers_queues_and_delete_not_at_all(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """`apply -f kid.yaml` and `delete -f kid.yaml` both warned that apply refuses kid
    unless the server holds its parent team-a, which the server held. Now apply warns only
    of a parent held nowhere (the server then refuses the queue), and delete says nothing;
    `validate`, with no server to ask, keeps its note."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    team = fleet.queue("team-a")
    await objs.put(objects.key_for(team), team)
    kid = tmp_path / "kid.yaml"
    kid.write_text(
        "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata:\n  name: kid\nspec:\n"
        "  parent: team-a\n"
    )
    async with api_server(store) as server:

        async def fedctl(*args: str) -> tuple[int, str, str]:
            code = await asyncio.to_thread(main.main, [*args, "--server", server])
            out, err = capsys.readouterr()
            return code, out, err

        assert await fedctl("apply", "-f", str(kid)) == (0, "queue.fedctl.io/kid created\n", "")
        assert await fedctl("delete", "-f", str(kid)) == (0, "queue.fedctl.io/kid deleted\n", "")
        kid.write_text(kid.read_text().replace("team-a", "teama"))
        code, out, err = await fedctl("apply", "-f", str(kid))
        assert (code, out) == (1, "")
        assert err.splitlines()[0] == (
            f"{kid}:6:11: spec.parent: warning: parent queue 'teama' is not defined on the"
            " server or in these files (did you mean 'team-a'?): the server refuses this queue"
        )
    assert main.main(["validate", "-f", str(kid)]) == 0
    assert "apply refuses this queue unless the server already holds it" in capsys.readouterr().out


async def test_apply_warns_of_a_priority_class_the_servers_queue_does_not_define(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fedctl.io/priority: hgih` passed apply without a word; the scheduler then held the
    job with `priority class 'hgih' is not defined in queue team-a`. Apply says so first,
    at the annotation, as it says of a misspelt queue."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    team = fleet.queue("team-a", priority_classes={"high": 500, "low": 1})
    await objs.put(objects.key_for(team), team)
    path = tmp_path / "j.yaml"
    job = (
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  namespace: t\n"
        "  annotations:\n    fedctl.io/queue: team-a\n    fedctl.io/priority: PRIORITY\n"
        "spec: {template: {spec: {containers: [{name: c, image: x}]}}}\n"
    )
    async with api_server(store) as server:

        async def apply(priority: str) -> str:
            path.write_text(job.replace("PRIORITY", priority))
            argv = ["apply", "-f", str(path), "--server", server]
            assert await asyncio.to_thread(main.main, argv) == 0
            return capsys.readouterr().err

        assert await apply("hgih") == (
            f'{path}:8:25: metadata.annotations["fedctl.io/priority"]: warning: priority class'
            " 'hgih' is not defined in queue team-a on the server (its priorityClasses: high"
            " (500), low (1)) (did you mean 'high'?): the workload waits, Pending, until it is"
            " defined there or fedctl.io/priority names one that is\n"
        )
        assert await apply("high") == ""
        assert await apply("'9'") == ""


async def test_describe_shows_what_waits_in_a_queue_in_admission_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A Kueue user asks "what is ahead of my job?"; `describe queue` gave counts only and
    `describe workload` no queue or priority. Queue sq (cpu 8, StrictFIFO) runs the first
    the two of priority 200; of those waiting, `late-high` (priority 100) goes before the
    earlier `early`."""
    store, _ = await registry_with_member()  # cluster a: 32 cores
    objs = codec.TypedStore(store, objects.ObjectCodec())
    sq = fleet.queue("sq", capability={"cpu": "8"}, dequeue_strategy="StrictFIFO")
    await objs.put(objects.key_for(sq), sq)
    names = ["run-1", "run-2", "early", "late-high"]
    for name in names:
        priority = {"run-1": 200, "run-2": 200, "late-high": 100}.get(name)
        w = fleet.workload(name, cpu="4", queue="sq", priority=priority)
        await objs.put(objects.key_for(w), w)
    loop = SchedulerLoop(store, settings=SchedulerSettings(), clock=clock.real, debounce=0.01)
    task = asyncio.create_task(loop.run())
    bindings = codec.TypedStore(store, codec.Codec(Binding))

    async def phases() -> dict[str, str]:
        listed = await bindings.list(keys.prefix("bindings"))
        return {b.obj.spec.workload.name: b.obj.status.phase for b in listed.items}

    try:
        want = {"run-1": "Scheduled", "run-2": "Scheduled", "early": "Pending"}
        want["late-high"] = "Pending"

        async def settled() -> bool:
            return await phases() == want

        await wait_for(settled, message="two admitted, two waiting")
    finally:
        await stop_tasks([task])
    async with api_server(store) as server:
        code = await asyncio.to_thread(main.main, ["describe", "queue", "sq", "--server", server])
        out = capsys.readouterr().out
        assert code == 0
        assert "Admitted:    2" in out
        shown = out[out.index("Waiting:") :].splitlines()
        assert shown[0] == "Waiting:     2, in admission order"
        rows = [line.split()[:5] for line in shown[2:]]
        assert rows == [
            ["1", "sq", "team/late-high", "Job.batch", "100"],
            ["2", "sq", "team/early", "Job.batch", "0"],
        ]
        assert "queue sq at capability for cpu" in shown[2]

        code = await asyncio.to_thread(
            main.main, ["describe", "workload", "team/late-high", "--server", server]
        )
        out = capsys.readouterr().out
        assert "Queue:       sq (waiting in it)" in out and "Priority:    100\n" in out
        code = await asyncio.to_thread(
            main.main, ["describe", "workload", "team/run-1", "--server", server]
        )
        assert "Queue:       sq (admitted under it)" in capsys.readouterr().out

        code = await asyncio.to_thread(
            main.main, ["get", "queues", "sq", "-o", "wide", "--server", server]
        )
        header, row = capsys.readouterr().out.splitlines()
        assert header.split()[8] == "STRATEGY" and row.split()[8] == "StrictFIFO"


async def test_a_parents_priority_classes_serve_its_childrens_workloads_at_apply(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Kueue WorkloadPriorityClass is cluster-wide, so a migrating team writes its classes
    once, on the department's parent queue: its children inherit them, so a workload in a
    child naming one is applied without a word, the queues held by the server."""
    queues = tmp_path / "inherit.yaml"
    queues.write_text(
        "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: ihp}\nspec:\n"
        "  capability: {cpu: '8'}\n  priorityClasses: {prod: 1000, batch: 0}\n---\n"
        "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: ihc}\n"
        "spec: {parent: ihp}\n"
    )
    job = tmp_path / "job.yaml"
    job.write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: t\n"
        "  annotations: {fedctl.io/queue: ihc, fedctl.io/priority: prod}\n"
        "spec: {template: {spec: {containers: [{name: c, image: x}]}}}\n".replace("{name}", "train")
    )
    async with api_server(MemoryStore()) as server:

        async def apply(path: Any) -> tuple[int, str]:
            code = await asyncio.to_thread(
                main.main, ["apply", "-f", str(path), "--server", server]
            )
            return code, capsys.readouterr().err

        assert await apply(queues) == (0, "")
        assert await apply(job) == (0, "")
        job.write_text(job.read_text().replace("priority: prod", "priority: prdo"))
        code, said = await apply(job)
        assert code == 0 and "priority class 'prdo' is not defined in queue ihc" in said
