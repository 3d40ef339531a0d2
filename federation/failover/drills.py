"""Failover drills: break one member on purpose, watch the federation recover, report it.

Fed by the registry (cluster status, Bindings, workload status, sampled while the drill
runs) and by a fault injector (`faults`: the simulator's fault API for simulated members,
a NoExecute taint for real ones); feeds the drill report stored at `keys.drill_key(id)`,
rendered as JSON, Markdown and an SVG timeline by `fedctl drill` and the controller's
drill API, which also reads a running drill's `Progress` to show its timeline live.

Why sampling the registry and not the controller's memory: a drill must measure what the
platform shows (the controller may run in another process, or be replaced mid-drill), and
the same numbers must come out whoever leads. What the samples mean (detect, re-place, RTO,
affected, lost, double-run, shortfall) is judged in `drill_report`, pure over the samples;
this module is the drill's one face for its callers, so the report's types and judgement
are named here too.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

from federation import clock as clock_mod
from federation import errors
from federation.failover import eviction
from federation.failover.drill_report import (
    UNREADABLE,
    Narrator,
    Progress,
    Report,
    Sample,
    WorkloadState,
    WorkloadTimeline,
    curve,
    decode,
    encode,
    must_move,
    new_id,
    recovered,
    summarise,
)
from federation.registry import codec, keys, objects
from federation.registry import store as st
from policies.models.binding import Binding
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.work import FINISHED_PHASES, WorkloadStatus
from policies.models.workload import Workload

__all__ = [
    "UNREADABLE",
    "Narrator",
    "Progress",
    "Report",
    "Sample",
    "WorkloadState",
    "WorkloadTimeline",
    "curve",
    "decode",
    "encode",
    "events",
    "markdown",
    "must_move",
    "new_id",
    "recovered",
    "run",
    "sample",
    "seconds",
    "summarise",
    "svg",
]

log = logging.getLogger(__name__)

Action = Callable[[], Awaitable[None]]
_LOSES_MEMBER = frozenset({"down", "blackhole"})
"""Faults the controller must notice by itself; the taint is its own detection."""
_MAX_SECONDS = 3600.0
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


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
    """Read the registry once: the member, every Binding with its workload's status, and
    which workloads still exist (one deleted by its owner is no loss of failover's)."""
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
    # Read after the Bindings: a workload deleted meanwhile then shows a Binding and no
    # template (deleted), never no Binding and a template (which reads as lost).
    templates = await codec.TypedStore(store, objects.ObjectCodec()).list(keys.prefix("workloads"))
    batch = {
        str(keys.parse_workload_key(i.key))
        for i in templates.items
        if isinstance(i.obj, Workload) and i.obj.is_batch
    }
    by_ref = {str(keys.parse_workload_key(i.key)): i.obj for i in ws.items}
    out: dict[str, WorkloadState] = {}
    for item in bindings.items:
        ref = str(keys.parse_workload_key(item.key))
        b, w = item.obj, by_ref.get(ref)
        cl = w.clusters if w is not None else []
        out[ref] = WorkloadState(
            targets=tuple(t.name for t in b.spec.clusters),
            healthy=tuple(c.cluster for c in cl if c.up),
            running=tuple(c.cluster for c in cl if c.running > 0),
            phase=b.status.phase,
            reason=b.status.reason,
            finished=w is not None and w.phase in FINISHED_PHASES,
            evictable=not eviction.never_evicted(b),
            batch=ref in batch,
        )
    return Sample(
        t,
        down,
        out,
        no_execute=any(x.effect == "NoExecute" for x in taints),
        templates=frozenset(
            str(keys.parse_workload_key(key))
            for key in [*(i.key for i in templates.items), *(x.key for x in templates.skipped)]
        ),
    )


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
    seconds (or until the member is back with every workload that was on it whole again,
    its services placed on it again: `recovered`), then judge.

    Healing is attempted whatever happens once injection has begun (a failed or cancelled
    injection may have half happened); `progress`, when given, is filled as samples come."""
    progress = progress if progress is not None else Progress()
    start = clock.monotonic()
    try:
        return await _drive(
            store, report=report, inject=inject, heal=heal, settle=settle, poll=poll,
            clock=clock, progress=progress, start=start,
        )  # fmt: skip
    except asyncio.CancelledError:
        # Ctrl-C, SIGTERM, a controller stopping: healed already (`_drive`'s finally);
        # what was measured is kept, marked, and the cancellation goes on.
        progress.report = await _interrupted(store, report, progress, at=clock.monotonic() - start)
        progress.stage = "interrupted"
        raise


async def _interrupted(store: st.Store, report: Report, progress: Progress, *, at: float) -> Report:
    """The report of a drill stopped at `at` seconds from its start, stored if the
    registry still takes it (a controller shutting down may have closed it)."""
    fault_at, healed_at = progress.fault_at, progress.healed_at
    if fault_at is None or healed_at is None:
        why = "interrupted before the fault went in (healed in case it had half gone in)"
    elif healed_at - fault_at < report.duration:
        why = (
            f"interrupted {healed_at - fault_at:.1f}s into the {report.duration:g}s fault;"
            " the fault was lifted then, recovery was not watched"
        )
    else:
        why = f"interrupted {at - healed_at:.1f}s after the heal, while recovery was watched"
    done = progress.partial(report, final=True)
    done.error = why
    try:
        await store.commit([st.Put(keys.drill_key(done.id), encode(done))])
    except errors.FedctlError as exc:
        log.warning("drill %s: interrupted, and its report could not be stored: %s", done.id, exc)
    return done


async def _drive(
    store: st.Store,
    *,
    report: Report,
    inject: Action,
    heal: Action,
    settle: float,
    poll: float,
    clock: clock_mod.Clock,
    progress: Progress,
    start: float,
) -> Report:
    samples = progress.samples
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
        if not samples[-1].member_down and recovered(samples, report.cluster):
            break
    report = summarise(samples, report=report, fault_at=fault_at, healed_at=healed_at)
    await store.commit([st.Put(keys.drill_key(report.id), encode(report))])
    progress.stage = "done"
    return report


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
        if w.outcome.startswith(("lost", "pending")):
            reason = report.shortfall.get(w.workload, "")
            message = f"{w.outcome}: {reason}" if reason else w.outcome
            event = "lost" if w.outcome.startswith("lost") else "pending"
            out.append({"t": end, "event": event, "workload": w.workload, "message": message})
    for name in report.not_back:
        message = "not placed on the member again; fedctl rebalance --all --dry-run"
        out.append({"t": end, "event": "not-back", "workload": name, "message": message})
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
        *_undetected(report),
        "| measure | value |",
        "|---|---|",
        f"| time to detect | {_s(report.detect)} |",
        f"| time to re-place | {_last(report, report.replace, 'replaced', 're-placed')} |",
        f"| RTO (all ready elsewhere) | {_last(report, report.rto, 'ready', 'ready elsewhere')} |",
        f"| workloads affected | {report.affected} |",
        f"| lost (must be 0) | {report.lost} |",
        f"| double-runs (must be 0) | {report.double_runs} |",
        f"| capacity shortfall | {len(report.shortfall)} |",
        *(
            [f"| services not back on the member | {len(report.not_back)} |"]
            if report.not_back
            else []
        ),
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
    lines += _not_back(report)
    return "\n".join(lines) + "\n"


def _not_back(report: Report) -> list[str]:
    """The services the member did not get back after the fault was lifted, why, and what
    moves them: after a taint drill the member stayed empty while every line said
    `recovered`, and nothing said so."""
    if not report.not_back:
        return []
    n = len(report.not_back)
    services = "service was" if n == 1 else "services were"
    if report.fault in _LOSES_MEMBER:
        why = (
            "Failover places services on a member again once it lifts its own taints from"
            " it, where their policy wants them there: these were not back when the drill"
            " stopped watching, because their placement now leaves the member out (coming"
            " back to an earlier affinity group is a rebalance's move) or because they"
            " needed longer than `--settle`."
        )
    else:
        why = (
            "Lifting a taint moves no divided service back, as `kubectl uncordon` moves no"
            " pod back: the member gets only what is placed anew."
        )
    return [
        "",
        "## Not back on the member",
        "",
        f"{n} {services} moved off `{report.cluster}` and not placed on it again after the"
        f" fault was lifted. {why} `fedctl rebalance --all --dry-run` shows what would move"
        " back; without `--dry-run` it moves it, starting each new copy before the old one"
        " goes.",
        "",
        *(f"- {name}" for name in report.not_back),
    ]


def _last(report: Report, value: float | None, field: str, what: str) -> str:
    """A measure taken when the last affected workload got somewhere, or `-` saying how
    many never did: a bare dash beside a line that moved read as nothing having moved."""
    if value is not None:
        return _s(value)
    affected = [w for w in report.workloads if w.affected]
    short = sum(1 for w in affected if getattr(w, field) is None)
    return f"- ({short} of {len(affected)} affected never {what})" if short else "-"


def _undetected(report: Report) -> list[str]:
    """Why a dead member's drill measured nothing, when the fault ended before the
    controller could notice: a `down` drill of 30 s reports only dashes otherwise, which
    reads like failover not working."""
    if report.detect is not None or report.error or report.fault not in _LOSES_MEMBER:
        return []
    return [
        f"**Not detected:** the controller never marked `{report.cluster}` NotReady while"
        f" the fault lasted ({report.duration:g}s). It does so after"
        " FEDCTL_MONITOR__FAILURE_THRESHOLD seconds of uninterrupted failure (30 by"
        " default, plus up to a probe period) and moves work after a further"
        " FEDCTL_FAILOVER__EVICTION_GRACE (30): hold the fault longer than both, for"
        " example `--duration 90s`.",
        "",
    ]


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
