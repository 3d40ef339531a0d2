"""Failover drills: break one member on purpose, watch the federation recover, report it.

Fed by the registry (cluster status, Bindings, workload status, sampled while the drill
runs) and by a fault injector (`faults`: the simulator's fault API for simulated members,
a NoExecute taint for real ones); feeds the drill report stored at `keys.drill_key(id)`,
rendered as JSON, Markdown and an SVG timeline by `fedctl drill` and the controller's
drill API, which also reads a running drill's `Progress` to show its timeline live.

Why sampling the registry and not the controller's memory: a drill must measure what the
platform shows (the controller may run in another process, or be replaced mid-drill), and
the same numbers must come out whoever leads. The judgement (`summarise`) is pure over the
samples so its rules are tested with made-up timelines:

    detect      first failover taint on the member (or Ready=False), from the fault
    re-place    the last affected Binding no longer targeting the member
    RTO         the last affected workload healthy on all of its new targets
    affected    workloads on the member at the start that left it, or were lost or left
                Pending; work that stayed there (it tolerates the fault, or the member was
                never NoExecute) or had finished is listed with that outcome, not counted
    lost        affected workloads with no Binding at the end, or neither healthy
                anywhere nor Pending with a reason (must be 0)
    double-run  a batch workload running in two members in the same sample (must be 0)
    shortfall   affected workloads still Pending at the end, with the scheduler's reason
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from federation import clock as clock_mod
from federation import errors
from federation.registry import codec, keys
from federation.registry import store as st
from policies.models.binding import Binding
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.work import FINISHED_PHASES, WorkloadStatus

__all__ = [
    "Progress",
    "Report",
    "Sample",
    "WorkloadState",
    "curve",
    "events",
    "markdown",
    "run",
    "seconds",
    "summarise",
    "svg",
]

Action = Callable[[], Awaitable[None]]
_MAX_SECONDS = 3600.0
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True, slots=True)
class WorkloadState:
    """One workload in one sample."""

    targets: tuple[str, ...] = ()
    healthy: tuple[str, ...] = ()
    running: tuple[str, ...] = ()
    phase: str = "Pending"
    """The Binding's phase (`Pending` with `reason` when the scheduler found no room)."""
    reason: str = ""
    finished: bool = False
    """The workload itself has ended (a Succeeded or Failed job): nothing runs to move."""


@dataclass(frozen=True, slots=True)
class Sample:
    """The registry at `t` seconds into the drill."""

    t: float
    member_down: bool
    workloads: Mapping[str, WorkloadState]
    no_execute: bool = False
    """The member carried a NoExecute taint (failover's or the drill's): work that does not
    tolerate it was due to leave."""


_RECOVERED = "recovered"
_PENDING = "pending"
_STAYED = "stayed (tolerates the fault)"
_NOT_EVICTED = "stayed (no eviction during the drill)"
_FINISHED = "finished (not moved)"
_RETURNED = "back on the member, not healthy yet"
_LOST_BINDING = "lost: Binding gone"
_LOST_HEALTH = "lost: healthy nowhere"
_UNAFFECTED = frozenset({_STAYED, _NOT_EVICTED, _FINISHED})
"""Outcomes of work the fault did not touch: listed in the report, not counted as affected."""


@dataclass
class WorkloadTimeline:
    """One workload that was on the member when the drill began; `outcome` is set by
    `summarise` from what the samples show (one of the constants above)."""

    workload: str
    replaced: float | None = None
    ready: float | None = None
    outcome: str = ""


@dataclass
class Report:
    """What a drill measured; times in seconds from the fault."""

    id: str
    cluster: str
    fault: str
    started: str
    duration: float
    detect: float | None = None
    replace: float | None = None
    rto: float | None = None
    affected: int = 0
    lost: int = 0
    double_runs: int = 0
    shortfall: dict[str, str] = field(default_factory=dict)
    healed_at: float | None = None
    workloads: list[WorkloadTimeline] = field(default_factory=list)
    error: str = ""
    """Why the drill stopped early (the fault could not be injected, say); empty if not."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Report:
        data = dict(doc)
        data["workloads"] = [WorkloadTimeline(**w) for w in data.get("workloads", [])]
        return cls(**data)

    def blank(self) -> Report:
        """The same drill before judgement: what `summarise` starts from."""
        return Report(self.id, self.cluster, self.fault, self.started, self.duration)


@dataclass
class Progress:
    """What a running drill has seen so far, for a caller that shows it while it runs.

    `run` appends every sample as it is taken and stamps the fault and heal times, so
    `summarise(progress.samples, ...)` gives the partial report at any moment.
    """

    samples: list[Sample] = field(default_factory=list)
    fault_at: float | None = None
    healed_at: float | None = None
    stage: str = "starting"
    """starting → fault (held) → settling (healed, watching recovery) → done."""

    def partial(self, report: Report) -> Report:
        return summarise(
            self.samples,
            report=report.blank(),
            fault_at=self.fault_at or 0.0,
            healed_at=self.healed_at,
        )


def _healthy_elsewhere(state: WorkloadState, cluster: str) -> bool:
    return (
        bool(state.targets)
        and cluster not in state.targets
        and all(t in state.healthy for t in state.targets)
    )


def summarise(
    samples: list[Sample], *, report: Report, fault_at: float, healed_at: float | None
) -> Report:
    """Fill `report` from the samples (pure)."""
    if not samples:
        return report
    cluster = report.cluster
    first, last = samples[0], samples[-1]
    on_member = sorted(w for w, s in first.workloads.items() if cluster in s.targets)
    report.healed_at = None if healed_at is None else healed_at - fault_at
    report.detect = next(
        (s.t - fault_at for s in samples if s.member_down and s.t >= fault_at), None
    )
    lines = {w: WorkloadTimeline(w) for w in on_member}
    doubled: set[str] = set()
    evicting = any(s.no_execute for s in samples if s.t >= fault_at)
    for sample in samples:
        for name, line in lines.items():
            state = sample.workloads.get(name)
            if state is None:
                continue
            if line.replaced is None and state.targets and cluster not in state.targets:
                line.replaced = sample.t - fault_at
            if line.ready is None and _healthy_elsewhere(state, cluster):
                line.ready = sample.t - fault_at
        # While the member is cut off its last report is all we have: its copies may or may
        # not still run and nothing can stop them until it returns (then they are purged
        # before it takes new work). A double run is one seen in two observable members.
        unseen = {cluster} if sample.member_down else set()
        doubled.update(n for n, s in sample.workloads.items() if len(set(s.running) - unseen) > 1)
    report.double_runs = len(doubled)
    for name, line in lines.items():
        end = last.workloads.get(name)
        line.outcome = _outcome(line, end=end, cluster=cluster, evicting=evicting)
        if line.outcome == _PENDING:
            report.shortfall[name] = last.workloads[name].reason
    report.affected = sum(1 for line in lines.values() if line.outcome not in _UNAFFECTED)
    report.lost = sum(1 for line in lines.values() if line.outcome.startswith("lost"))
    report.workloads = list(lines.values())
    replaced = [line.replaced for line in lines.values() if line.replaced is not None]
    moved = [line for line in lines.values() if line.replaced is not None]
    report.replace = max(replaced) if replaced else None
    if moved and all(line.ready is not None for line in moved):
        report.rto = max(line.ready for line in moved if line.ready is not None)
    return report


def _outcome(
    line: WorkloadTimeline, *, end: WorkloadState | None, cluster: str, evicting: bool
) -> str:
    """What happened to one workload that was on the member, judged at the last sample.

    Work that never left the member was not moved by the fault: a finished job (moving it
    would only run it again), work that tolerates the fault (it stayed while the member was
    NoExecute, `evicting`), or work nothing asked to leave (the member never became
    NoExecute: degraded but Ready, or healed within the eviction grace). Only work that
    left, or should have and could not, is recovered, pending or lost; work targeting the
    member again at the end (failed back) is not lost, only not healthy yet."""
    if end is None:
        return _LOST_BINDING
    if end.phase == "Pending" and end.reason and not end.targets:
        return _PENDING
    if line.replaced is None and end.finished:
        return _FINISHED
    if line.replaced is None and cluster in end.targets:
        return _STAYED if evicting else _NOT_EVICTED
    if end.healthy:
        return _RECOVERED
    return _RETURNED if cluster in end.targets else _LOST_HEALTH


def seconds(name: str, value: Any, *, minimum: float = 0.0) -> float:
    """A drill duration as a number of seconds or a string with a unit (`500ms`, `5s`, `2m`),
    at most an hour; `Invalid` names `name` (the CLI flag or the API field)."""
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        unit = next((u for u in ("ms", "s", "m", "h") if text.endswith(u)), "")
        try:
            seconds = float(text[: len(text) - len(unit)]) * _UNITS.get(unit, 1.0)
        except ValueError:
            seconds = None
    if seconds is None or not math.isfinite(seconds):
        raise errors.Invalid(f"{name}: {value!r} is not a duration (seconds, or e.g. '30s')")
    if not minimum <= seconds <= _MAX_SECONDS:
        low = "more than 0s" if minimum > 0 else "at least 0s"
        raise errors.Invalid(f"{name}: {seconds:g}s is out of range ({low}, at most 1h)")
    return seconds


# -- running ----------------------------------------------------------------------------------


async def sample(store: st.Store, *, cluster: str, t: float) -> Sample:
    """Read the registry once."""
    statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
    status = await statuses.get(keys.cluster_status_key(cluster))
    down = status is not None and (
        not status.obj.ready()
        or any(x.key.startswith("cluster.fedctl.io/") for x in status.obj.taints)
    )
    member = await codec.TypedStore(store, codec.Codec(Cluster)).get(keys.cluster_key(cluster))
    taints = [
        *(member.obj.spec.taints if member is not None else []),
        *(status.obj.taints if status is not None else []),
    ]
    bindings = await codec.TypedStore(store, codec.Codec(Binding)).list(keys.prefix("bindings"))
    ws = await codec.TypedStore(store, codec.Codec(WorkloadStatus)).list(
        keys.prefix("workloadstatus")
    )
    by_ref = {str(keys.parse_workload_key(i.key)): i.obj for i in ws.items}
    out: dict[str, WorkloadState] = {}
    for item in bindings.items:
        ref = str(keys.parse_workload_key(item.key))
        b, w = item.obj, by_ref.get(ref)
        cl = w.clusters if w is not None else []
        out[ref] = WorkloadState(
            targets=tuple(t.name for t in b.spec.clusters if t.replicas > 0),
            healthy=tuple(c.cluster for c in cl if c.up),
            running=tuple(c.cluster for c in cl if c.running > 0),
            phase=b.status.phase,
            reason=b.status.reason,
            finished=w is not None and w.phase in FINISHED_PHASES,
        )
    return Sample(t, down, out, no_execute=any(x.effect == "NoExecute" for x in taints))


async def run(
    store: st.Store,
    *,
    report: Report,
    inject: Action,
    heal: Action,
    settle: float = 30.0,
    poll: float = 0.5,
    clock: clock_mod.Clock = clock_mod.real,
    progress: Progress | None = None,
) -> Report:
    """Sample, inject, keep the fault for `report.duration`, heal, sample `settle` more
    seconds (or until every affected workload is ready elsewhere), then judge.

    Healing is attempted whatever happens once injection has begun (a failed or cancelled
    injection may have half happened); `progress`, when given, is filled as samples come."""
    progress = progress if progress is not None else Progress()
    samples = progress.samples
    start = clock.monotonic()
    samples.append(await sample(store, cluster=report.cluster, t=0.0))
    try:
        await inject()
        fault_at = progress.fault_at = clock.monotonic() - start
        progress.stage = "fault"
        while clock.monotonic() - start < fault_at + report.duration:
            await clock.sleep(poll)
            samples.append(await sample(store, cluster=report.cluster, t=clock.monotonic() - start))
    finally:
        await heal()
        healed_at = progress.healed_at = clock.monotonic() - start
        progress.stage = "settling"
    end = healed_at + settle
    while clock.monotonic() - start < end:
        await clock.sleep(poll)
        samples.append(await sample(store, cluster=report.cluster, t=clock.monotonic() - start))
        if not samples[-1].member_down and _recovered(samples, report.cluster):
            break
    report = summarise(samples, report=report, fault_at=fault_at, healed_at=healed_at)
    await store.commit([st.Put(keys.drill_key(report.id), encode(report))])
    progress.stage = "done"
    return report


def curve(samples: list[Sample], *, cluster: str, fault_at: float) -> list[dict[str, Any]]:
    """Per sample, how many affected workloads have left the member and how many are ready
    elsewhere: the live view of a drill before it is judged. `t` is from the fault."""
    if not samples:
        return []
    affected = [w for w, s in samples[0].workloads.items() if cluster in s.targets]
    out = []
    for s in samples:
        states = [s.workloads.get(w) for w in affected]
        out.append(
            {
                "t": round(s.t - fault_at, 3),
                "memberDown": s.member_down,
                "affected": len(affected),
                "moved": sum(1 for x in states if x and x.targets and cluster not in x.targets),
                "ready": sum(1 for x in states if x and _healthy_elsewhere(x, cluster)),
            }
        )
    return out


def _recovered(samples: list[Sample], cluster: str) -> bool:
    first, last = samples[0], samples[-1]
    affected = [w for w, s in first.workloads.items() if cluster in s.targets]
    return all((s := last.workloads.get(w)) is not None and bool(s.healthy) for w in affected)


def encode(report: Report) -> bytes:
    return json.dumps({"schemaVersion": 1, "object": report.to_json()}).encode()


def decode(data: bytes) -> Report:
    return Report.from_json(json.loads(data)["object"])


def new_id(now: dt.datetime, cluster: str) -> str:
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{cluster}"


# -- rendering --------------------------------------------------------------------------------


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def events(report: Report) -> list[dict[str, Any]]:
    """The report as a timeline of moments, earliest first: the fault, its detection, each
    workload re-placed and ready elsewhere, the heal, recovery, and what did not recover.
    Times are seconds from the fault, as everywhere in the report."""
    out: list[dict[str, Any]] = [
        {"t": 0.0, "event": "fault", "message": f"{report.fault} on {report.cluster}"}
    ]
    if report.detect is not None:
        out.append(
            {"t": report.detect, "event": "detected", "message": f"{report.cluster} tainted"}
        )
    for w in report.workloads:
        if w.replaced is not None:
            out.append({"t": w.replaced, "event": "re-placed", "workload": w.workload})
        if w.ready is not None:
            out.append({"t": w.ready, "event": "ready", "workload": w.workload})
    if report.healed_at is not None:
        out.append({"t": report.healed_at, "event": "healed", "message": "fault removed"})
    if report.rto is not None:
        out.append(
            {"t": report.rto, "event": "recovered", "message": "all affected ready elsewhere"}
        )
    out.sort(key=lambda e: float(e["t"]))
    end = max([float(e["t"]) for e in out])
    for w in report.workloads:
        if w.outcome.startswith("lost") or w.outcome == "pending":
            reason = report.shortfall.get(w.workload, "")
            message = f"{w.outcome}: {reason}" if reason else w.outcome
            event = w.outcome.split(":")[0]
            out.append({"t": end, "event": event, "workload": w.workload, "message": message})
    if report.error:
        out.append({"t": end, "event": "failed", "message": report.error})
    return out


def markdown(report: Report) -> str:
    """The report for people: headline numbers, then one line per affected workload."""
    lines = [
        f"# Drill {report.id}: `{report.fault}` on `{report.cluster}`",
        "",
        f"Started {report.started}; fault held {report.duration:g}s, healed at "
        f"{_s(report.healed_at)}.",
        "",
        *([f"**Stopped early:** {report.error}", ""] if report.error else []),
        "| measure | value |",
        "|---|---|",
        f"| time to detect | {_s(report.detect)} |",
        f"| time to re-place | {_s(report.replace)} |",
        f"| RTO (all ready elsewhere) | {_s(report.rto)} |",
        f"| workloads affected | {report.affected} |",
        f"| lost (must be 0) | {report.lost} |",
        f"| double-runs (must be 0) | {report.double_runs} |",
        f"| capacity shortfall | {len(report.shortfall)} |",
        "",
        "| workload | re-placed | ready | outcome |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {w.workload} | {_s(w.replaced)} | {_s(w.ready)} | {w.outcome} |"
        for w in report.workloads
    ]
    if report.shortfall:
        lines += ["", "## Not placed", ""]
        lines += [f"- {name}: {reason}" for name, reason in sorted(report.shortfall.items())]
    return "\n".join(lines) + "\n"


def svg(report: Report, *, width: int = 800, row: int = 14) -> str:
    """A timeline: one bar per workload from the fault to re-placement (amber) and on to
    ready (green); vertical marks for detection and heal."""
    span = max(
        [1.0, report.healed_at or 0.0, report.rto or 0.0, report.replace or 0.0]
        + [w.ready or w.replaced or 0.0 for w in report.workloads]
    )
    left, top = 220, 30
    scale = (width - left - 40) / span  # room for the last mark's label
    height = top + row * max(1, len(report.workloads)) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}"'
        ' font-family="sans-serif" font-size="10">',
        f'<text x="4" y="14" font-size="12">Drill {_esc(report.id)}: {_esc(report.fault)}'
        f" on {_esc(report.cluster)} (RTO {_s(report.rto)})</text>",
    ]
    for i, w in enumerate(report.workloads):
        y = top + i * row
        parts.append(f'<text x="4" y="{y + 10}">{_esc(w.workload[-36:])}</text>')
        if w.replaced is not None:
            parts.append(_bar(left, y, w.replaced * scale, "#f0a030"))
        if w.replaced is not None and w.ready is not None:
            parts.append(
                _bar(left + w.replaced * scale, y, (w.ready - w.replaced) * scale, "#40a040")
            )
    for label, at, colour in (
        ("detect", report.detect, "#c03030"),
        ("heal", report.healed_at, "#3050c0"),
    ):
        if at is not None:
            x = left + at * scale
            parts.append(
                f'<line x1="{x:.1f}" y1="{top - 8}" x2="{x:.1f}" y2="{height - 20}"'
                f' stroke="{colour}"/><text x="{x + 2:.1f}" y="{top - 10}">{label}</text>'
            )
    parts.append(f'<text x="{left}" y="{height - 6}">0s = fault; axis {span:.1f}s</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _bar(x: float, y: int, w: float, colour: str) -> str:
    return f'<rect x="{x:.1f}" y="{y}" width="{max(1.0, w):.1f}" height="{10}" fill="{colour}"/>'


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
