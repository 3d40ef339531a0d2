"""Failover drills: break one member on purpose, watch the federation recover, report it.

Fed by the registry (cluster status, Bindings, workload status, sampled while the drill
runs) and by a fault injector (`faults`: the simulator's fault API for simulated members,
a NoExecute taint for real ones); feeds the drill report stored at `keys.drill_key(id)`,
rendered as JSON, Markdown and an SVG timeline by `fedctl drill` and the controller's
drill API, which also reads a running drill's `Progress` to show its timeline live.

Why sampling the registry and not the controller's memory: a drill must measure what the
platform shows (the controller may run in another process, or be replaced mid-drill), and
the same numbers must come out whoever leads. What the samples mean (detect, re-place, RTO,
affected, lost, double-run, shortfall) is judged in `drill_report`, pure over the samples,
and rendered in `drill_render`; this module is the drill's one face for its callers, so
the report's types, judgement and renderings are named here too.
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
from federation.failover.drill_render import events, markdown, svg
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
from policies.models.binding import CLAIMED_BY, Binding
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.common import ReplicaSchedulingStrategy
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


async def _steady_policies(store: st.Store) -> set[str]:
    """The claiming policies (as a Binding records them, `CLAIMED_BY`) whose services
    failover never brings back to a member: Steady division, fail-back not Automatic."""
    listed = await codec.TypedStore(store, objects.ObjectCodec()).list(keys.prefix("policies"))
    out = set()
    for item in listed.items:
        spec = getattr(item.obj, "spec", None)
        placement = getattr(spec, "placement", None)
        scheduling = getattr(placement, "scheduling", None)
        if not isinstance(scheduling, ReplicaSchedulingStrategy) or not scheduling.steady:
            continue
        if getattr(getattr(spec, "fedctl", None), "failback", None) == "Automatic":
            continue
        meta = item.obj.metadata
        scope = [meta.namespace or "default"] if item.obj.kind == "PropagationPolicy" else []
        out.add("/".join([item.obj.kind, *scope, meta.name]))
    return out


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
    staying = await _steady_policies(store)
    batch = {
        str(keys.parse_workload_key(i.key))
        for i in templates.items
        if isinstance(i.obj, Workload) and i.obj.is_batch
    }
    by_ref = {str(keys.parse_workload_key(i.key)): i.obj for i in ws.items}
    uids = {str(keys.parse_workload_key(i.key)): i.obj.metadata.uid or "" for i in templates.items}
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
            stays_away=b.metadata.annotations.get(CLAIMED_BY, "") in staying,
            uid=uids.get(ref, ""),
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


_BUSY_SHARE = 3
"""The drill samples at most one part in this many of its time (`_Pacer`)."""


class _Pacer:
    """Samples the registry, and says how long to wait before the next sample.

    At most `_BUSY_SHARE` of the time goes to sampling: each sample reads every Binding,
    workload status and template, about 50 ms at 80 workloads but half a second at 520,
    and at twice a second a drill of a busy fleet spent most of a core decoding them, on
    the same machine as the controller whose failover it measured."""

    def __init__(self, store: st.Store, *, cluster: str, poll: float, clock: clock_mod.Clock):
        self.store, self.cluster, self.poll, self.clock = store, cluster, poll, clock
        self.took = 0.0

    async def sample(self, t: float) -> Sample:
        began = self.clock.monotonic()
        taken = await sample(self.store, cluster=self.cluster, t=t)
        self.took = self.clock.monotonic() - began
        return taken

    async def wait(self) -> None:
        await self.clock.sleep(max(self.poll, self.took * (_BUSY_SHARE - 1)))


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
    pacer = _Pacer(store, cluster=report.cluster, poll=poll, clock=clock)
    samples.append(await pacer.sample(0.0))
    try:
        await inject()
        fault_at = progress.fault_at = clock.monotonic() - start
        progress.stage = "fault"
        while clock.monotonic() - start < fault_at + report.duration:
            await pacer.wait()
            samples.append(await pacer.sample(clock.monotonic() - start))
    finally:
        await heal()
        healed_at = progress.healed_at = clock.monotonic() - start
        progress.stage = "settling"
    end = healed_at + settle
    while clock.monotonic() - start < end:
        await pacer.wait()
        samples.append(await pacer.sample(clock.monotonic() - start))
        if not samples[-1].member_down and recovered(samples, report.cluster):
            break
    report = summarise(samples, report=report, fault_at=fault_at, healed_at=healed_at)
    await store.commit([st.Put(keys.drill_key(report.id), encode(report))])
    progress.stage = "done"
    return report
