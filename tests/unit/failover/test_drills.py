"""Drill judgement over made-up timelines, and the report's renderings."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import pytest

from federation.failover import drills
from federation.failover.drills import Sample, WorkloadState
from federation.registry import codec, keys, objects
from federation.registry.memory import MemoryStore
from federation.registry.store import Delete, Put
from policies.models.binding import Binding
from tests.unit.failover import builders
from tests.unit.scheduler import fleet

W = WorkloadState


def report() -> drills.Report:
    return drills.Report(id="d1", cluster="a", fault="down", started="t", duration=10)


def timeline(*samples: tuple[float, bool, dict[str, WorkloadState]]) -> list[Sample]:
    return [Sample(t, down, states) for t, down, states in samples]


HAPPY = timeline(
    (0, False, {"web": W(("a",), ("a",), phase="Scheduled"), "db": W(("b",), ("b",))}),
    (2, True, {"web": W(("a",), (), phase="Scheduled"), "db": W(("b",), ("b",))}),
    (4, True, {"web": W(("b",), (), phase="Scheduled"), "db": W(("b",), ("b",))}),
    (7, True, {"web": W(("b",), ("b",), phase="Scheduled"), "db": W(("b",), ("b",))}),
)


def test_a_clean_failover_measures_detect_replace_and_rto() -> None:
    r = drills.summarise(HAPPY, report=report(), fault_at=1, healed_at=11)
    assert (r.detect, r.replace, r.rto, r.healed_at) == (1, 3, 6, 10)
    assert (r.affected, r.lost, r.double_runs, r.shortfall) == (1, 0, 0, {})
    assert [(w.workload, w.replaced, w.ready, w.outcome) for w in r.workloads] == [
        ("web", 3, 6, "recovered")
    ]


@pytest.mark.parametrize(
    ("end", "field", "expected"),
    [
        pytest.param({}, "lost", 1, id="a Binding that vanished is a lost workload"),
        pytest.param(
            {"web": W((), (), phase="Pending", reason="no cluster has 64 free cpu")},
            "shortfall",
            {"web": "no cluster has 64 free cpu"},
            id="no capacity left: pending with the reason, counted as shortfall not loss",
        ),
        pytest.param(
            {"web": W(("b",), (), phase="Scheduled")},
            "rto",
            None,
            id="re-placed but never ready: no RTO",
        ),
        pytest.param(
            {"web": W(("b",), ("b",), phase="Pending", reason="no room for 2 more (kept b)")},
            "shortfall",
            {"web": "no room for 2 more (kept b)"},
            id="pending with the copies it kept, healthy there: shortfall, not recovered",
        ),
        pytest.param(
            {"web": W(("b",), ("b",), phase="Pending", reason="no room for 2 more (kept b)")},
            "rto",
            None,
            id="healthy copies kept while the rest waits are no recovery: no RTO",
        ),
        pytest.param(
            {"web": W(("b",), ("b",), running=("a", "b"), phase="Scheduled")},
            "double_runs",
            1,
            id="a job running in two members at once is a double-run",
        ),
    ],
)
def test_what_goes_wrong_is_counted(
    end: dict[str, WorkloadState], field: str, expected: object
) -> None:
    samples = [*HAPPY[:2], Sample(9, False, end)]
    r = drills.summarise(samples, report=report(), fault_at=1, healed_at=8)
    assert getattr(r, field) == expected


def test_renderings_carry_the_numbers_and_round_trip() -> None:
    r = drills.summarise(HAPPY, report=report(), fault_at=1, healed_at=11)
    md = drills.markdown(r)
    assert "| RTO (all ready elsewhere) | 6.0s |" in md and "| lost (must be 0) | 0 |" in md
    root = ET.fromstring(drills.svg(r))
    assert root.tag.endswith("svg") and len(root.findall("{*}rect")) == 2
    assert drills.decode(drills.encode(r)) == r


def test_a_cut_off_member_s_last_report_is_not_a_double_run_but_two_observed_ones_are() -> None:
    """While `a` is down its last report still says the job runs there; that copy cannot be
    seen or stopped until `a` returns (and is purged before it takes work). Once `a` is
    reachable and untainted again, a copy seen running there beside the new one counts,
    once per workload however many samples show it."""
    moved = W(("b",), ("b",), running=("a", "b"), phase="Scheduled")
    partitioned = timeline(
        (0, False, {"job": W(("a",), ("a",), running=("a",), phase="Scheduled")}),
        (2, True, {"job": moved}),
        (3, True, {"job": moved}),
        (9, False, {"job": W(("b",), ("b",), running=("b",), phase="Scheduled")}),
    )
    r = drills.summarise(partitioned, report=report(), fault_at=1, healed_at=8)
    assert (r.double_runs, r.lost) == (0, 0)
    back = [*partitioned[:3], Sample(9, False, {"job": moved}), Sample(10, False, {"job": moved})]
    assert drills.summarise(back, report=report(), fault_at=1, healed_at=8).double_runs == 1


def test_work_that_never_left_the_member_is_listed_with_why_and_not_counted_as_affected() -> None:
    """Only work the fault moved (or failed to move) is affected. A namespace that tolerates
    the NoExecute taint and a job that had already finished stay where they are, healthy or
    not: the report says so instead of calling them recovered, and leaves them out of the
    count."""
    done = W(("a",), ("a",), phase="Scheduled", finished=True)
    ns = W(("a", "b"), ("a", "b"), phase="Scheduled")
    samples = [
        Sample(0, False, {"web": W(("a",), ("a",), phase="Scheduled"), "ns": ns, "done": done}),
        Sample(2, True, {"web": W(("a",), (), phase="Scheduled"), "ns": ns, "done": done}),
        Sample(
            4,
            True,
            {"web": W(("b",), ("b",), phase="Scheduled"), "ns": ns, "done": done},
            no_execute=True,
        ),
        Sample(9, False, {"web": W(("b",), ("b",), phase="Scheduled"), "ns": ns, "done": done}),
    ]
    r = drills.summarise(samples, report=report(), fault_at=1, healed_at=8)
    assert [(w.workload, w.replaced, w.ready, w.outcome) for w in r.workloads] == [
        ("done", None, None, "finished (not moved)"),
        ("ns", None, None, "stayed (tolerates the fault)"),
        ("web", 3, 3, "recovered"),
    ]
    assert (r.affected, r.lost, r.rto) == (1, 0, 3)
    assert "| workloads affected | 1 |" in drills.markdown(r)


ON_A = W(("a",), ("a",), phase="Scheduled")


@pytest.mark.parametrize(
    ("middle", "end", "outcome"),
    [
        pytest.param(
            Sample(2, True, {"web": ON_A}, no_execute=True),
            W(("a",), (), phase="Scheduled"),
            "stayed (tolerates the fault)",
            id="still on the NoExecute member, down at the end: stayed, not lost",
        ),
        pytest.param(
            Sample(2, True, {"web": ON_A}),
            ON_A,
            "stayed (no eviction during the drill)",
            id="the member was never NoExecute: nothing was asked to leave",
        ),
        pytest.param(
            Sample(2, True, {"web": ON_A}, no_execute=True),
            W(("a",), (), phase="Scheduled", finished=True),
            "finished (not moved)",
            id="a failed job is finished, not lost",
        ),
        pytest.param(
            Sample(2, True, {"web": ON_A}, no_execute=True),
            W(("b",), (), phase="Scheduled", finished=True),
            "lost: healthy nowhere",
            id="moved off the member and healthy nowhere: lost, finished or not",
        ),
    ],
)
def test_the_outcome_of_one_workload_says_what_happened_to_it(
    middle: Sample, end: WorkloadState, outcome: str
) -> None:
    samples = [Sample(0, False, {"web": ON_A}), middle, Sample(9, False, {"web": end})]
    r = drills.summarise(samples, report=report(), fault_at=1, healed_at=8)
    assert [w.outcome for w in r.workloads] == [outcome]
    assert r.affected == (0 if outcome.startswith(("stayed", "finished")) else 1)


@pytest.mark.parametrize(
    ("end_down", "outcome", "affected"),
    [
        pytest.param(
            True,
            "outcome unknown: member still down at the drill's end",
            1,
            id="healed after detection, the member still down: its eviction may yet come",
        ),
        pytest.param(
            False,
            "stayed (no eviction during the drill)",
            0,
            id="the member back before any NoExecute: nothing was asked to leave",
        ),
    ],
)
def test_work_on_a_member_still_down_at_the_end_is_not_said_to_have_stayed(
    end_down: bool, outcome: str, affected: int
) -> None:
    """A `down` healed after detection: the member stays Ready=False for the success
    threshold (30 s) after its first good probe, its NoSchedule taint turns NoExecute when
    the eviction grace (30 s) runs out, and the work leaves seconds after a short settle
    stopped the drill. It was reported stayed and left out of the count."""
    samples = [
        Sample(0, False, {"web": ON_A}),
        Sample(2, True, {"web": ON_A}),
        Sample(9, end_down, {"web": ON_A}),
    ]
    r = drills.summarise(samples, report=report(), fault_at=1, healed_at=8)
    assert [w.outcome for w in r.workloads] == [outcome]
    assert (r.affected, r.rto) == (affected, None)
    progress = drills.Progress(samples=samples, fault_at=1, healed_at=8, stage="done")
    last = drills.Narrator(report(), settle=1).lines(progress)[-1]
    assert last.endswith(f"; 1 {outcome}") == end_down, last


@pytest.mark.parametrize(
    ("fault", "noted"), [("down", True), ("blackhole", True), ("taint", False)]
)
def test_a_fault_over_before_the_controller_noticed_says_why_nothing_was_measured(
    fault: str, noted: bool
) -> None:
    """A 20 s `down` ends before the 30 s failure threshold: the report explains its dashes
    and names the settings, instead of reading like a failover that never came."""
    quiet = timeline((0, False, {"web": ON_A}), (5, False, {"web": ON_A}))
    r = drills.Report(id="d1", cluster="a", fault=fault, started="t", duration=20)
    r = drills.summarise(quiet, report=r, fault_at=1, healed_at=21)
    md = drills.markdown(r)
    assert r.detect is None
    assert ("**Not detected:**" in md) is noted
    if noted:
        assert "never marked `a` NotReady while the fault lasted (20s)" in md
        assert "FEDCTL_MONITOR__FAILURE_THRESHOLD" in md and "--duration 90s" in md
    detected = drills.summarise(HAPPY, report=report(), fault_at=1, healed_at=11)
    assert "Not detected" not in drills.markdown(detected)


def test_a_running_drill_is_narrated_once_per_step_as_the_samples_come() -> None:
    """`fedctl drill run` holds a fault 90 s and watches as long again; it said nothing
    until the report. Each step is now said once, when the samples first show it."""
    progress = drills.Progress()
    narrator = drills.Narrator(report(), settle=30)
    said: list[str] = []
    progress.samples.append(HAPPY[0])
    said += narrator.lines(progress)
    assert said == []
    progress.fault_at = 1
    for sample in HAPPY[1:]:
        progress.samples.append(sample)
        said += narrator.lines(progress)
        said += narrator.lines(progress)  # nothing new: nothing said again
    progress.healed_at = 11
    progress.samples.append(Sample(12, False, HAPPY[-1].workloads))
    said += narrator.lines(progress)
    assert said == [
        "[   2.0s] fault in: down on a, held 10s",
        "[   2.0s] detected: a marked down after 1.0s",
        "[   4.0s] re-placed 1/1: web after 3.0s",
        "[   7.0s] ready elsewhere 1/1: web after 6.0s",
        "[  12.0s] healed: watching recovery for up to 30s",
        "[  12.0s] not back on a yet: 1 of the services that moved; watching for them until"
        " the settle runs out",
    ]


# The user's drill: `api` needs three regions (spread minGroups 3 by region) and runs on
# `a`, `b` and `c`; the drill kills `a`. Eviction takes `a` out of its Binding at once, and
# the scheduler then finds no third region: the Binding waits, Pending, with the copies it
# kept on `b` and `c`. Nothing went anywhere. `web` moves to `b` as it should; the
# namespaces stay on every member.
SPREAD = "spread by region needs at least 3 regions (still running on b, c)"
EVICTED = "Evicted from a: untolerated taint cluster.fedctl.io/unreachable:NoExecute; re-placing"
NS = W(("a", "b", "c"), ("a", "b", "c"), phase="Scheduled", evictable=False)
NS_DOWN = W(("a", "b", "c"), ("b", "c"), phase="Scheduled", evictable=False)
API = W(("a", "b", "c"), ("a", "b", "c"), phase="Scheduled")
KEPT = W(("b", "c"), ("b", "c"), phase="Pending", reason=SPREAD)
WEB_MOVED = W(("b",), ("b",), phase="Scheduled")


def spread_drill(end: WorkloadState) -> list[Sample]:
    ns = {f"_/Namespace/{n}": NS for n in ("ml", "shop", "web")}
    ns_down = {f"_/Namespace/{n}": NS_DOWN for n in ("ml", "shop", "web")}
    return [
        Sample(0, False, {**ns, "api": API, "web": ON_A}),
        Sample(2, True, {**ns_down, "api": W(("a", "b", "c"), ("b", "c"), phase="Scheduled"),
                         "web": ON_A}),
        Sample(4, True, {**ns_down, "api": W(("b", "c"), ("b", "c"), phase="Pending",
                                              reason=EVICTED), "web": ON_A}, no_execute=True),
        Sample(5, True, {**ns_down, "api": KEPT, "web": W(("b",), (), phase="Scheduled")},
               no_execute=True),
        Sample(7, True, {**ns_down, "api": KEPT, "web": WEB_MOVED}, no_execute=True),
        Sample(9, False, {**ns, "api": end, "web": WEB_MOVED}),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("end", "outcome", "reason"),
    [
        pytest.param(
            W(("a", "b", "c"), ("b", "c"), phase="Scheduled"),
            "pending until the member came back",
            SPREAD,
            id="placed back on the member once it returned: it waited, it was not re-placed",
        ),
        pytest.param(
            W(("a", "b", "c"), ("a", "b", "c"), phase="Scheduled"),
            "pending until the member came back",
            SPREAD,
            id="healthy again on the member: still no recovery by failover",
        ),
        pytest.param(
            KEPT,
            "pending",
            SPREAD,
            id="still waiting at the end",
        ),
    ],
)
def test_a_workload_that_only_dropped_the_dead_member_is_pending_not_re_placed(
    end: WorkloadState, outcome: str, reason: str
) -> None:
    r = drills.summarise(spread_drill(end), report=report(), fault_at=1, healed_at=8)

    lines = {w.workload: (w.replaced, w.ready, w.outcome) for w in r.workloads}
    assert {name: lines[name] for name in ("api", "web")} == {
        "api": (None, None, outcome),
        "web": (4, 6, "recovered"),
    }
    assert r.shortfall == {"api": reason}
    assert (r.affected, r.lost) == (2, 0)
    # Both measures are the moment the last affected workload got there: api never did.
    assert r.replace is None and r.rto is None
    md = drills.markdown(r)
    assert "| capacity shortfall | 1 |" in md and f"- api: {reason}" in md
    assert "| time to re-place | - (1 of 2 affected never re-placed) |" in md
    assert "| RTO (all ready elsewhere) | - (1 of 2 affected never ready elsewhere) |" in md
    assert f"| api | - | - | {outcome} |" in md
    (pending,) = [e for e in drills.events(r) if e.get("workload") == "api"]
    assert (pending["event"], pending["message"]) == ("pending", f"{outcome}: {reason}")


def test_rto_is_given_exactly_when_every_affected_workload_recovered() -> None:
    """The report read `recovered` on every line and `RTO -`: a line may say recovered only
    with the time it was ready elsewhere, and RTO is the last of those times."""
    for end in (KEPT, W(("a", "b", "c"), ("b", "c"), phase="Scheduled"), WEB_MOVED):
        r = drills.summarise(spread_drill(end), report=report(), fault_at=1, healed_at=8)
        affected = [w for w in r.workloads if w.workload in ("api", "web")]
        everyone = all(w.outcome == "recovered" for w in affected)
        assert (r.rto is not None) is everyone, (end, r.rto, affected)
        for w in r.workloads:
            assert (w.outcome == "recovered") <= (w.ready is not None), w


def test_the_running_counters_count_only_work_that_must_move_and_say_what_waits() -> None:
    """The drill said `re-placed 1/6` for a workload that went nowhere, and counted three
    namespaces that are never evicted. Now the counters count the two that must move, only
    web is re-placed, and api's wait is said once, with the scheduler's reason rather than
    the eviction's note."""
    progress = drills.Progress()
    narrator = drills.Narrator(report(), settle=30)
    samples = spread_drill(W(("a", "b", "c"), ("b", "c"), phase="Scheduled"))
    said: list[str] = []
    progress.samples.append(samples[0])
    progress.fault_at = 1
    for sample in samples[1:]:
        progress.samples.append(sample)
        said += narrator.lines(progress)

    steps = [line.split("] ", 1)[1] for line in said]
    assert [s for s in steps if s.startswith(("re-placed", "ready", "not re-placed"))] == [
        f"not re-placed: api is Pending: {SPREAD}",
        "re-placed 1/2: web after 4.0s",
        "ready elsewhere 1/2: web after 6.0s",
    ]
    curve = drills.curve(samples, cluster="a", fault_at=1)
    assert [(c["affected"], c["moved"], c["ready"]) for c in curve][-3:] == [
        (2, 1, 0),
        (2, 1, 1),
        (2, 1, 1),
    ]


def test_a_drill_keeps_watching_while_a_workload_waits_on_copies_it_kept() -> None:
    """It stopped once every workload had a healthy copy somewhere and the member was back:
    api's kept copies were healthy, so the drill ended before anyone learned whether it
    would ever be placed again."""
    waiting = spread_drill(KEPT)
    assert not drills.recovered(waiting, "a")
    back = spread_drill(W(("a", "b", "c"), ("a", "b", "c"), phase="Scheduled"))
    web_back = Sample(10, False, {**back[-1].workloads, "web": ON_A})
    assert drills.recovered([*back, web_back], "a")


async def test_a_sample_marks_a_namespace_as_work_that_never_moves() -> None:
    store = MemoryStore()
    typed = codec.TypedStore(store, codec.Codec(Binding))
    for b in (
        builders.namespace_binding("shop", clusters={"a": 1, "b": 1}),
        builders.binding("api", clusters={"a": 3}),
    ):
        w = b.spec.workload
        ref = keys.WorkloadRef(w.namespace, keys.kind_segment(w.api_version, w.kind), w.name)
        await typed.put(keys.binding_key(ref), b)

    seen = await drills.sample(store, cluster="a", t=0)

    assert {name: s.evictable for name, s in seen.workloads.items()} == {
        "_/Namespace/shop": False,
        "default/Deployment.apps/api": True,
    }
    assert drills.must_move(seen, "a") == ["default/Deployment.apps/api"]
    await store.close()


# The user's drill: `job` left the member and was ready elsewhere at once, then its owner
# deleted it (`fedctl delete job`) while the fault was held; its Binding went with it.
EVERYONE = frozenset({"web", "job"})
ONLY_WEB = frozenset({"web"})


def deleted_drill(*, moved_first: bool) -> list[Sample]:
    job_on_a = W(("a",), ("a",), phase="Scheduled")
    job_now = W(("b",), ("b",), phase="Scheduled") if moved_first else job_on_a
    return [
        Sample(0, False, {"web": ON_A, "job": job_on_a}, templates=EVERYONE),
        Sample(2, False, {"web": ON_A, "job": job_now}, no_execute=True, templates=EVERYONE),
        Sample(3, False, {"web": ON_A, "job": job_now}, no_execute=True, templates=ONLY_WEB),
        Sample(4, False, {"web": WEB_MOVED}, no_execute=True, templates=ONLY_WEB),
        Sample(9, False, {"web": WEB_MOVED}, templates=ONLY_WEB),
    ]


@pytest.mark.parametrize("moved_first", [True, False], ids=["after it moved", "before"])
def test_a_workload_deleted_during_the_drill_is_neither_affected_nor_lost(
    moved_first: bool,
) -> None:
    """It read `lost: Binding gone`, counted among the affected and lost, left RTO `-` and
    made the drill exit 1, though failover lost nothing and web recovered."""
    samples = deleted_drill(moved_first=moved_first)
    r = drills.summarise(samples, report=report(), fault_at=1, healed_at=8)

    lines = {w.workload: (w.replaced, w.outcome) for w in r.workloads}
    assert lines == {
        "job": (1 if moved_first else None, "deleted during the drill"),
        "web": (3, "recovered"),
    }
    assert (r.affected, r.lost, r.replace, r.rto, r.shortfall) == (1, 0, 3, 3, {})
    md = drills.markdown(r)
    assert "| lost (must be 0) | 0 |" in md and "| RTO (all ready elsewhere) | 3.0s |" in md
    assert "| job |" in md and "| deleted during the drill |" in md
    assert not [e for e in drills.events(r) if e["event"] in ("lost", "pending")]
    web_back = Sample(10, False, {"web": ON_A}, templates=ONLY_WEB)
    assert drills.recovered([*samples, web_back], "a"), "nothing left to wait for"


def test_a_binding_gone_while_its_workload_still_exists_is_still_lost() -> None:
    samples = [
        Sample(0, False, {"web": ON_A}, templates=frozenset({"web"})),
        Sample(9, False, {}, templates=frozenset({"web"})),
    ]
    r = drills.summarise(samples, report=report(), fault_at=1, healed_at=8)
    assert [w.outcome for w in r.workloads] == ["lost: Binding gone"]
    assert (r.affected, r.lost) == (1, 1)
    assert not drills.recovered(samples, "a")


class _DeletedWhileRead(MemoryStore):
    """A registry in which the owner deletes `api` (its template, then, as the scheduler
    does, its Binding) right after the sampler's first list of Bindings or templates."""

    def __init__(self, ref: keys.WorkloadRef) -> None:
        super().__init__()
        self.ref = ref
        self.pending = True

    async def list(self, prefix: str) -> Any:
        listed = await super().list(prefix)
        if self.pending and prefix in (keys.prefix("bindings"), keys.prefix("workloads")):
            self.pending = False
            await self.commit([Delete(keys.workload_key(self.ref))])
            await self.commit([Delete(keys.binding_key(self.ref))])
        return listed


async def test_a_workload_deleted_while_the_sampler_reads_is_deleted_never_lost() -> None:
    """The Bindings are read before the templates: read the other way round, a deletion
    landing between the two reads showed a template with no Binding, a loss."""
    api = builders.binding("api", clusters={"a": 3})
    w = api.spec.workload
    ref = keys.WorkloadRef(w.namespace, keys.kind_segment(w.api_version, w.kind), w.name)
    store = _DeletedWhileRead(ref)
    await store.commit([Put(keys.workload_key(ref), b"{}")])
    await codec.TypedStore(store, codec.Codec(Binding)).put(keys.binding_key(ref), api)
    first = Sample(0, False, {str(ref): ON_A}, templates=frozenset({str(ref)}))

    seen = await drills.sample(store, cluster="a", t=1)

    r = drills.summarise([first, seen], report=report(), fault_at=0.5, healed_at=None)
    assert [w.outcome for w in r.workloads] == ["deleted during the drill"]
    await store.close()


# A drill in which the work on the member that had to move goes four ways: `web` moves and
# recovers; `job3` is deleted by its owner and `quick` finishes before either moves;
# `patient` tolerates the fault and never leaves. `ns` and `done` were never going to move.
ALL = frozenset({"done", "job3", "ns", "patient", "quick", "web"})
NS_A = W(("a", "b"), ("a", "b"), phase="Scheduled", evictable=False)
DONE_A = W(("a",), ("a",), phase="Scheduled", finished=True)
STILL = {"ns": NS_A, "done": DONE_A, "patient": ON_A}


def four_ways() -> list[Sample]:
    evicted = W((), (), phase="Pending", reason=EVICTED)
    quick_done = W(("a",), ("a",), phase="Scheduled", finished=True)
    gone = ALL - {"job3"}
    return [
        Sample(0, False, {**STILL, "web": ON_A, "job3": ON_A, "quick": ON_A}, templates=ALL),
        Sample(2, True, {**STILL, "web": evicted, "job3": ON_A, "quick": ON_A},
               no_execute=True, templates=ALL),
        Sample(3, True, {**STILL, "web": W(("b",), (), phase="Scheduled"), "job3": ON_A,
                         "quick": quick_done}, no_execute=True, templates=gone),
        Sample(4, True, {**STILL, "web": WEB_MOVED, "quick": quick_done}, no_execute=True,
               templates=gone),
        Sample(9, False, {**STILL, "web": WEB_MOVED, "quick": quick_done}, templates=gone),
    ]  # fmt: skip


def narrate(samples: list[Sample]) -> Iterator[tuple[drills.Progress, list[str]]]:
    """The drill so far and the narrator's new lines, as each sample after the first
    comes; the fault at 1 s, the heal at 8 s, the drill done with the last sample."""
    progress = drills.Progress(samples=samples[:1], fault_at=1)
    narrator = drills.Narrator(report(), settle=30)
    for sample in samples[1:]:
        progress.samples.append(sample)
        if sample is samples[-1]:
            progress.healed_at, progress.stage = 8, "done"
        yield progress, narrator.lines(progress)


def test_the_running_counters_the_live_curve_and_the_report_count_the_same_workloads() -> None:
    """The counters said `re-placed 1/4` to the end while the report said 1 affected: they
    counted what had to move at the start, the report what it judged at the end. Now both
    count what the running report counts, the counters say each workload that drops out,
    and the last line gives the report's own totals."""
    samples = four_ways()
    said: list[str] = []
    progress = drills.Progress()
    for progress, now in narrate(samples):
        said += now
        t = progress.samples[-1].t
        running = progress.partial(report())
        live = drills.curve(progress.samples, cluster="a", fault_at=1)[-1]
        assert running.affected == live["affected"], (t, running.affected, live)
        # Every k/n said, and every "n to move", is the running report's count.
        totals = {int(a or b) for a, b in re.findall(r"\d+/(\d+):|(\d+) to move", " ".join(now))}
        assert totals <= {running.affected}, (t, now, running.affected)

    final = drills.summarise(samples, report=report(), fault_at=1, healed_at=8)
    assert [s.split("] ", 1)[1] for s in said] == [
        "fault in: down on a, held 10s",
        "detected: a marked down after 1.0s",
        "job3: deleted during the drill; not counted, 2 to move",
        "quick: finished (not moved); not counted, 2 to move",
        "re-placed 1/2: web after 2.0s",
        "ready elsewhere 1/2: web after 3.0s",
        "healed: watching recovery for up to 30s",
        "done: 1 affected, re-placed 1/1, ready elsewhere 1/1; not counted: 1 deleted during"
        " the drill, 1 finished (not moved), 1 stayed (tolerates the fault); not back on a: 1",
    ]
    assert final.affected == final.to_json()["affected"] == 1
    assert "| workloads affected | 1 |" in drills.markdown(final)
    assert progress.partial(report(), final=True) == final


# A taint drill on `a`: web, divided over a and b, moves to b and stays there once the taint
# is lifted (lifting a user's taint moves nothing back); dup, Duplicated, gets its copy on
# a back; job, a batch job, moves to b and runs on there.
BOTH = W(("a", "b"), ("a", "b"), phase="Scheduled")
ON_B = W(("b",), ("b",), phase="Scheduled")
JOB_ON_B = W(("b",), ("b",), running=("b",), phase="Scheduled", batch=True)


def taint_drill(*, down: bool = False, no_execute: bool = False) -> list[Sample]:
    job_on_a = W(("a",), ("a",), running=("a",), phase="Scheduled", batch=True)
    return [
        Sample(0, False, {"web": BOTH, "dup": BOTH, "job": job_on_a}),
        Sample(2, False, {"web": ON_B, "dup": ON_B, "job": JOB_ON_B}, no_execute=True),
        Sample(9, down, {"web": ON_B, "dup": BOTH, "job": JOB_ON_B}, no_execute=no_execute),
    ]


def taint_report() -> drills.Report:
    return drills.Report(id="d1", cluster="a", fault="taint", started="t", duration=5)


def test_services_the_member_did_not_get_back_after_the_fault_are_named() -> None:
    """After a taint drill the member stayed empty while every line read `recovered`, and
    nothing said so or what would move the work back."""
    r = drills.summarise(taint_drill(), report=taint_report(), fault_at=1, healed_at=8)

    assert [(w.workload, w.outcome) for w in r.workloads] == [
        ("dup", "recovered"),
        ("job", "recovered"),
        ("web", "recovered"),
    ]
    assert r.not_back == ["web"], "the job runs where it went, dup has its copy back"
    assert (r.affected, r.lost, r.rto) == (3, 0, 1)
    assert drills.decode(drills.encode(r)).not_back == r.to_json()["not_back"] == ["web"]
    md = drills.markdown(r)
    assert "| services not back on the member | 1 |" in md
    assert "## Not back on the member" in md and "\n- web\n" in md
    assert "1 service was moved off `a` and not placed on it again" in md
    assert "Lifting a taint moves no divided service back" in md
    assert "`fedctl rebalance --all --dry-run` shows what would move back" in md
    (event,) = [e for e in drills.events(r) if e["event"] == "not-back"]
    assert event["workload"] == "web" and "fedctl rebalance" in event["message"]
    assert not drills.recovered(taint_drill(), "a"), "the drill watches for web to come back"


@pytest.mark.parametrize(
    ("samples", "healed_at"),
    [
        pytest.param(taint_drill(), None, id="the fault was never lifted"),
        pytest.param(taint_drill(no_execute=True), 8, id="the member still NoExecute"),
        pytest.param(taint_drill(down=True), 8, id="the member not back yet"),
    ],
)
def test_nothing_is_called_not_back_before_the_member_is(
    samples: list[Sample], healed_at: float | None
) -> None:
    r = drills.summarise(samples, report=taint_report(), fault_at=1, healed_at=healed_at)
    assert r.not_back == []
    assert "Not back" not in drills.markdown(r)


def test_a_member_back_from_a_failure_that_lacks_its_share_says_failover_brings_it() -> None:
    r = drills.Report(id="d1", cluster="a", fault="down", started="t", duration=5)
    r = drills.summarise(taint_drill(), report=r, fault_at=1, healed_at=8)
    md = drills.markdown(r)
    assert r.not_back == ["web"]
    assert "Failover places services on a member again once it lifts its own taints" in md
    assert "Lifting a taint" not in md


def test_a_report_stored_before_services_were_named_still_reads() -> None:
    doc = drills.summarise(HAPPY, report=report(), fault_at=1, healed_at=11).to_json()
    del doc["not_back"]
    assert drills.Report.from_json(doc).not_back == []


async def test_a_sample_knows_a_batch_job_from_a_service_by_its_template() -> None:
    store = MemoryStore()
    typed = codec.TypedStore(store, objects.ObjectCodec())
    for w in (fleet.workload("train", kind="Job"), fleet.workload("api", kind="Deployment")):
        ref = objects.workload_ref(w)
        await typed.put(objects.key_for(w), w)
        await codec.TypedStore(store, codec.Codec(Binding)).put(
            keys.binding_key(ref), builders.binding(ref.name, clusters={"a": 1})
        )

    seen = await drills.sample(store, cluster="a", t=0)

    assert {name: s.batch for name, s in seen.workloads.items()} == {
        "team/Job.batch/train": True,
        "team/Deployment.apps/api": False,
    }
    assert seen.templates == {"team/Job.batch/train", "team/Deployment.apps/api"}
    await store.close()


async def test_an_interrupted_drill_heals_stores_its_report_marked_so_and_still_stops() -> None:
    """Ctrl-C or SIGTERM mid-fault: the member was healed, but nothing more was said and
    no report was stored. The drill now keeps what it measured, marked interrupted, and
    the cancellation still goes on (the CLI exits 130 or 143)."""
    import asyncio

    from federation.clock import FakeClock

    clock = FakeClock()
    store = MemoryStore(clock=clock)
    injected = asyncio.Event()
    healed: list[bool] = []

    async def inject() -> None:
        injected.set()

    async def heal() -> None:
        healed.append(True)

    progress = drills.Progress()
    running = asyncio.create_task(
        drills.run(store, report=report(), inject=inject, heal=heal, clock=clock, progress=progress)
    )
    await asyncio.wait_for(injected.wait(), timeout=2)
    await clock.advance(3)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert healed == [True]
    assert progress.stage == "interrupted"
    kept = progress.report
    assert kept is not None and kept.error == (
        "interrupted 3.0s into the 10s fault; the fault was lifted then, recovery was not watched"
    )
    stored = await store.get(keys.drill_key("d1"))
    assert stored is not None and drills.decode(stored.value).error == kept.error
    assert "**Stopped early:** interrupted" in drills.markdown(kept)
    await store.close()


def test_a_steadily_divided_service_a_lost_member_did_not_get_back_is_said_to_stay_away() -> None:
    """An aggregated or dynamic-weight service keeps what stands (Karmada's Steady
    division): failover never places it back. Listed as "not back" with the wrong causes
    (an earlier affinity group, too short a --settle), the drill also waited out the whole
    --settle for it."""
    away = W(("b",), ("b",), phase="Scheduled", stays_away=True)
    samples = [
        Sample(0, False, {"agg": BOTH, "web": BOTH}),
        Sample(2, True, {"agg": away, "web": ON_B}, no_execute=True),
        Sample(9, False, {"agg": away, "web": BOTH}),
    ]
    r = drills.Report(id="d1", cluster="a", fault="down", started="t", duration=5)
    r = drills.summarise(samples, report=r, fault_at=1, healed_at=8)
    assert (r.not_back, r.kept_away) == ([], ["agg"])
    assert drills.recovered(samples, "a"), "nothing left to wait for"
    md = drills.markdown(r)
    assert "Not back on the member" not in md
    assert "## Kept where they went" in md and md.endswith("\n- agg\n")
    assert "aggregated or by dynamic weights" in md and "fedctl rebalance" in md
    assert drills.decode(drills.encode(r)).kept_away == ["agg"]


@pytest.mark.parametrize(
    ("scheduling", "failback", "stays_away"),
    [
        pytest.param(
            {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"},
            None,
            True,
            id="aggregated",
        ),
        pytest.param(
            {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"},
            },
            None,
            True,
            id="dynamic weights",
        ),
        pytest.param(
            {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"},
            "Automatic",
            False,
            id="aggregated, failback Automatic",
        ),
        pytest.param(
            {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"},
            None,
            False,
            id="static weights: divided again when the member returns",
        ),
        pytest.param({"replicaSchedulingType": "Duplicated"}, None, False, id="duplicated"),
    ],
)
async def test_a_sample_knows_a_service_failover_never_brings_back(
    scheduling: dict[str, Any], failback: str | None, stays_away: bool
) -> None:
    from policies.models.binding import CLAIMED_BY
    from policies.models.propagation import FedctlPropagationPolicy

    store = MemoryStore()
    api = fleet.workload("api", kind="Deployment")
    spec: dict[str, Any] = {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
        "placement": {"replicaScheduling": scheduling},
    }
    if failback is not None:
        spec["fedctl"] = {"failback": failback}
    pp = FedctlPropagationPolicy.model_validate(
        {"metadata": {"name": "pp", "namespace": "team"}, "spec": spec}
    )
    typed = codec.TypedStore(store, objects.ObjectCodec())
    await typed.put(objects.key_for(api), api)
    await typed.put(objects.key_for(pp), pp)
    bound = builders.binding("api", clusters={"a": 1})
    meta = bound.metadata.model_copy(
        update={"annotations": {CLAIMED_BY: "PropagationPolicy/team/pp"}}
    )
    await codec.TypedStore(store, codec.Codec(Binding)).put(
        keys.binding_key(objects.workload_ref(api)), bound.model_copy(update={"metadata": meta})
    )

    seen = await drills.sample(store, cluster="a", t=0)

    assert seen.workloads["team/Deployment.apps/api"].stays_away is stays_away
    await store.close()


# The user's drill on a busy fleet: `dep` ran on `a` when the drill began; its owner deleted
# it and applied it again under the same name while the fault was held, and the new object
# was placed on `a` again. The narration said `dep: deleted during the drill` twice, its
# "to move" total rose on a deletion, and the report then listed dep as stayed.
DEP_FIRST = W(("a",), ("a",), phase="Scheduled", uid="dep-1")
DEP_AGAIN = W(("a",), ("a",), phase="Scheduled", uid="dep-2")
WEB_ON_A = W(("a",), ("a",), phase="Scheduled", uid="web-1")
WEB_AWAY = W(("b",), ("b",), phase="Scheduled", uid="web-1")
WEB_AND_DEP = frozenset({"web", "dep"})


def recreated_drill(*, deletion_seen: bool) -> list[Sample]:
    gone = [Sample(3, False, {"web": WEB_ON_A}, no_execute=True, templates=ONLY_WEB)]
    return [
        Sample(0, False, {"web": WEB_ON_A, "dep": DEP_FIRST}, templates=WEB_AND_DEP),
        Sample(
            2, False, {"web": WEB_ON_A, "dep": DEP_FIRST}, no_execute=True, templates=WEB_AND_DEP
        ),
        *(gone if deletion_seen else []),
        Sample(
            4, False, {"web": WEB_ON_A, "dep": DEP_AGAIN}, no_execute=True, templates=WEB_AND_DEP
        ),
        Sample(
            5, False, {"web": WEB_AWAY, "dep": DEP_AGAIN}, no_execute=True, templates=WEB_AND_DEP
        ),
        Sample(
            6, False, {"web": WEB_AWAY, "dep": DEP_AGAIN}, no_execute=True, templates=WEB_AND_DEP
        ),
        Sample(9, False, {"web": WEB_AWAY, "dep": DEP_AGAIN}, templates=WEB_AND_DEP),
    ]


@pytest.mark.parametrize(
    "deletion_seen",
    [
        pytest.param(True, id="a sample saw it deleted"),
        pytest.param(False, id="deleted and created again between two samples"),
    ],
)
def test_a_workload_created_again_under_its_name_is_said_deleted_once_and_reported_so(
    deletion_seen: bool,
) -> None:
    samples = recreated_drill(deletion_seen=deletion_seen)
    said = [line.split("] ", 1)[1] for _, now in narrate(samples) for line in now]
    dropped = [line for line in said if line.startswith("dep:")]
    assert dropped == ["dep: deleted during the drill; not counted, 1 to move"]
    final = drills.summarise(samples, report=report(), fault_at=1, healed_at=8)
    assert {w.workload: w.outcome for w in final.workloads} == {
        "dep": "deleted during the drill",
        "web": "recovered",
    }
    assert final.affected == 1
    assert said[-1].startswith("done: 1 affected, re-placed 1/1, ready elsewhere 1/1;")
    assert "1 deleted during the drill" in said[-1]
    assert drills.recovered(samples, "a") is False  # web is not back on a
    web_back = Sample(10, False, {"web": WEB_ON_A, "dep": DEP_AGAIN}, templates=WEB_AND_DEP)
    assert drills.recovered([*samples, web_back], "a"), "the new dep is no concern of it"


async def test_a_sample_knows_each_workload_by_its_templates_uid() -> None:
    """What tells a workload created again under its name from the one the drill followed."""
    store = MemoryStore()
    typed = codec.TypedStore(store, objects.ObjectCodec())
    w = fleet.workload("api", kind="Deployment")
    w = w.model_copy(update={"metadata": w.metadata.model_copy(update={"uid": "uid-1"})})
    ref = objects.workload_ref(w)
    await typed.put(objects.key_for(w), w)
    await codec.TypedStore(store, codec.Codec(Binding)).put(
        keys.binding_key(ref), builders.binding(ref.name, clusters={"a": 1})
    )

    seen = await drills.sample(store, cluster="a", t=0)

    assert {name: s.uid for name, s in seen.workloads.items()} == {str(ref): "uid-1"}
    await store.close()


def busy_member(moved: int, ready: int, *, t: float, pending: int = 0) -> Sample:
    """30 one-member services on `a`: the first `moved` Scheduled on b (the first `ready`
    of them healthy there), the next `pending` waiting for the scheduler's verdict."""
    states = {}
    for i in range(30):
        if i < moved:
            states[f"svc-{i:02d}"] = W(("b",), ("b",) if i < ready else (), phase="Scheduled")
        elif i < moved + pending:
            states[f"svc-{i:02d}"] = W((), (), phase="Pending", reason=SPREAD)
        else:
            states[f"svc-{i:02d}"] = W(("a",), (), phase="Scheduled")
    return Sample(t, t > 0, states)


def narrate_busy(narrator: drills.Narrator, samples: list[Sample]) -> list[str]:
    progress = drills.Progress()
    said: list[str] = []
    progress.samples.append(
        Sample(
            0,
            False,
            {n: W(("a",), ("a",), phase="Scheduled") for n in (f"svc-{i:02d}" for i in range(30))},
        )
    )
    progress.fault_at = 1
    for sample in samples:
        progress.samples.append(sample)
        said += narrator.lines(progress)
    return [line.split("] ", 1)[1] for line in said]


BUSY = [
    busy_member(0, 0, t=2),
    busy_member(10, 0, t=4, pending=5),
    busy_member(20, 0, t=5),  # under 5 s since the last count: not said yet
    busy_member(30, 10, t=9),
    busy_member(30, 30, t=10),  # all ready elsewhere: said at once
]


def test_a_busy_member_s_drill_counts_in_one_line_every_few_seconds() -> None:
    """A member holding 220 workloads printed two lines per workload, 440 in all; above
    20 the moves are counted in one line, said every few seconds while it changes, and a
    Pending wait is said once by one example."""
    steps = narrate_busy(drills.Narrator(report(), settle=30), BUSY)
    assert [s for s in steps if s.startswith(("re-placed", "ready", "not re-placed"))] == [
        f"not re-placed: svc-10 is Pending: {SPREAD} (5 Pending now; -v names each)",
        "re-placed 10/30, ready elsewhere 0/30, 5 Pending",
        "re-placed 30/30, ready elsewhere 10/30",
        "re-placed 30/30, ready elsewhere 30/30",
    ]


def test_a_busy_member_s_drill_names_each_workload_when_verbose() -> None:
    steps = narrate_busy(drills.Narrator(report(), settle=30, verbose=True), BUSY)
    assert sum(s.startswith("re-placed ") for s in steps) == 30
    assert sum(s.startswith("ready elsewhere ") for s in steps) == 30
    assert "re-placed 30/30: svc-29 after 8.0s" in steps


def test_the_report_without_its_table_says_where_the_table_is() -> None:
    r = drills.summarise(HAPPY, report=report(), fault_at=1, healed_at=11)
    short = drills.markdown(r, table=False)
    assert "| web |" in drills.markdown(r) and "| web |" not in short
    assert "| time to detect | 1.0s |" in short
    assert "The 1 workloads one by one: `fedctl drill show d1`, or report.md" in short


async def test_a_drill_whose_samples_are_slow_samples_at_most_a_third_of_its_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sample reads the whole registry: half a second at 520 workloads, taken twice a
    second, kept a core of a 2-core machine busy beside the controller it measured. A
    slow sample now waits twice its own time before the next; a fast one, the poll."""
    import asyncio
    import itertools

    from federation.clock import FakeClock

    clock = FakeClock()
    store = MemoryStore(clock=clock)
    began: list[float] = []

    async def slow_sample(_: Any, *, cluster: str, t: float) -> Sample:
        began.append(clock.monotonic())
        await clock.sleep(1.0)  # a sample that takes a second
        return Sample(t, False, {})

    async def nothing() -> None:
        return None

    monkeypatch.setattr(drills, "sample", slow_sample)
    running = asyncio.create_task(
        drills.run(store, report=report(), inject=nothing, heal=nothing, settle=0, clock=clock)
    )
    while not running.done():
        await clock.advance(0.25)
        await asyncio.sleep(0)  # the store's own awaits
    await running
    gaps = [b - a for a, b in itertools.pairwise(began)]
    assert gaps and min(gaps) >= 3.0  # 1 s sampling, then 2 s waiting
    await store.close()
