"""Status back: watch what we applied in each member and fold it into Works and workloads.

Fed by member watches (`follow` of each kind we applied, per member, started on first
apply) and by apply responses; feeds the work queue (the workload's key, so a worker folds
the change into its Work and the workload status) and the workers, which read `seen`.
`aggregate` turns every Work of a workload into a `WorkloadStatus`: per-cluster ready
replicas or phase, overall health, and for jobs running/succeeded/failed, using the
kind's interpreter. The totals count the placement only: a copy the Binding is leaving
and the last report of a member that is not Ready are listed, never counted (why: see
`aggregate`).

Why watches only feed the queue: several events for one workload collapse into a single
registry write by the worker that next converges it (STYLE.md §7), which keeps etcd
writes proportional to real change, not to member chatter. A watch that fails is re-opened
after a capped backoff; `follow` re-lists on 410 and the re-list marks objects that
vanished meanwhile as gone, so a deleted copy is re-applied. A Work read at start-up,
whose copy no watch has shown yet, counts as there until its kind's list says otherwise
(`expect`), and every pass starts the watch of each copy it keeps, not only of those it
applies: after a restart that applies nothing, status and deletions still come back.

Why a watch is restarted when its member's connector is dropped (`Members.on_retire`):
closing a connector does not end a stream already open on it, so a watch left reading it
would wait forever and `ensure` would keep believing it runs; status from that member
would freeze. The fresh watch re-lists through the new connector, or ends at once when the
member left. A watch that ends for any reason gives up its slot, so the next `ensure`
starts it again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import (
    Callable,
    Collection,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import Any

from clusters import member as member_mod
from federation import clock as clock_mod
from federation import errors
from federation.propagation import deps, interpreter, quota, render
from federation.propagation.members import Members
from federation.registry import keys
from policies.models.binding import WorkloadReference
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.work import (
    FINISHED_PHASES,
    ClusterWorkloadStatus,
    Observed,
    Work,
    WorkloadStatus,
    WorkStatus,
)

__all__ = [
    "Seen",
    "StatusWatches",
    "aggregate",
    "generation_of",
    "mark_keys",
    "marks_of",
    "not_ready",
    "quota_item",
    "spec_digest",
    "ungenerated_spec",
    "workload_item",
]

log = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, None], str], None]
WatchKey = tuple[str, str, str]
"""(cluster, apiVersion, kind)"""


def workload_item(ref: keys.WorkloadRef) -> str:
    return f"w|{ref}"


def quota_item(namespace: str, name: str) -> str:
    return f"q|{namespace}/{name}"


@dataclass(frozen=True)
class Seen:
    """The last state of one applied object in one member."""

    observed: Observed
    resource_version: str = ""
    gone: bool = False
    generation: int = 0
    """metadata.generation (0: not known yet): it moves only when the spec is written."""
    marks: frozenset[tuple[str, str, str]] | None = None
    """Its labels and annotations (and a ConfigMap's or Secret's data), as `marks_of`
    gives them (None: not seen yet)."""
    stripped: bool = False
    """It still names the workload but no longer carries fedctl's labels (removed there)."""
    spec: Any = None
    """Its spec, for a kind that keeps no generation (`ungenerated_spec`)."""
    references: frozenset[keys.WorkloadRef] = frozenset()
    """The ConfigMaps, Secrets and others its pods reference (`deps.in_manifest`): what
    the copy there runs needs, whatever its template says now (dispatching suspended)."""


def _older(version: str, than: str) -> bool:
    """Whether resourceVersion `version` is older than `than`, when both are the numbers
    every Kubernetes API server backed by etcd gives (else not known: taken as newer).

    Why: an apply's response is recorded when the apply returns, and the watch may have
    brought the object's later states meanwhile (its controller scaling it down); recorded
    over them, the older state stood, quietly, until the next change: a Deployment read
    `7/3` ready for good, and a graceful move waiting on it never ended. Only an apply's
    response is held to it: a watch's events come in order, and a member whose store was
    reset numbers its objects afresh."""
    return version.isdigit() and than.isdigit() and int(version) < int(than)


_DATA_KINDS = frozenset({"ConfigMap", "Secret"})
"""Kinds Kubernetes keeps no generation for whose content is their data maps."""


def marks_of(obj: Mapping[str, Any]) -> frozenset[tuple[str, str, str]]:
    """An object's labels and annotations, and a ConfigMap's or Secret's `data` and
    `binaryData` entries (each value by digest: a ConfigMap may hold 1 MiB), as (field,
    key, value): what an edit in a member changes where no generation tells it."""
    return frozenset(
        (field, key, _digest(value) if field in _DATA_FIELDS else str(value))
        for field, key, value in _entries(obj)
    )


def mark_keys(obj: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The (field, key) pairs of `marks_of(obj)`, without digesting any value."""
    return {(field, key) for field, key, _ in _entries(obj)}


_DATA_FIELDS = ("data", "binaryData")


def _entries(obj: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    meta = obj.get("metadata") or {}
    for field in ("labels", "annotations"):
        for key, value in (meta.get(field) or {}).items():
            yield field, str(key), value
    if obj.get("kind") in _DATA_KINDS:
        for field in _DATA_FIELDS:
            for key, value in (obj.get(field) or {}).items():
                yield field, str(key), value


def _digest(value: Any) -> str:
    return hashlib.sha256(str(value).encode()).hexdigest()[:16]


def ungenerated_spec(obj: Mapping[str, Any]) -> Any:
    """The spec of an object whose kind keeps no generation (a Service, a Pod), which is
    then the only way to tell its spec edited; None for the others."""
    meta = obj.get("metadata") or {}
    return obj.get("spec") if "spec" in obj and not _generation(meta) else None


def spec_digest(observed: Any, wanted: Any) -> str:
    """A digest of the parts of `observed` that `wanted` (our manifest's spec) sets:
    fields the member or its controllers fill in afterwards (a Pod's nodeName, a
    Service port's targetPort) are left out, so only an edit of what we set counts."""
    return _digest(json.dumps(_restrict(observed, wanted), sort_keys=True, default=str))


def _restrict(observed: Any, wanted: Any) -> Any:
    if isinstance(wanted, Mapping) and isinstance(observed, Mapping):
        return {k: _restrict(observed.get(k), v) for k, v in wanted.items()}
    if isinstance(wanted, list) and isinstance(observed, list):
        # Index by index; the observed length counts, extra observed items do not.
        pairs = zip(observed, wanted, strict=False)
        return [len(observed), *(_restrict(o, w) for o, w in pairs)]
    return observed


@dataclass
class _Watch:
    """One started watch; `task` is known once it runs (`Spawn` hands back no task)."""

    task: asyncio.Task[Any] | None = None

    @property
    def alive(self) -> bool:
        return self.task is None or not self.task.done()


def _ref_of(obj: Mapping[str, Any]) -> keys.WorkloadRef | None:
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(render.REF_ANNOTATION)
    if not raw:
        return None
    try:
        return keys.parse_workload_key(f"{keys.ROOT}/workloads/{raw}")
    except errors.Invalid:
        return None


def _generation(meta: Mapping[str, Any]) -> int:
    try:
        return int(meta.get("generation") or 0)
    except (TypeError, ValueError):
        return 0


def generation_of(obj: Mapping[str, Any]) -> int:
    """A member object's metadata.generation, 0 when it has none."""
    return _generation(obj.get("metadata") or {})


class StatusWatches:
    """Per member and kind, one watch on everything we applied there."""

    def __init__(
        self,
        members: Members,
        *,
        cluster: Callable[[str], Cluster | None],
        notify: Callable[[str], None],
        spawn: Spawn,
        clock: clock_mod.Clock,
        backoff_max: float = 5.0,
    ) -> None:
        self._members = members
        self._cluster = cluster
        self._notify = notify
        self._spawn = spawn
        self._clock = clock
        self._backoff_max = backoff_max
        self._watches: dict[WatchKey, _Watch] = {}
        self.seen: dict[tuple[str, str], Seen] = {}
        self._copies: dict[str, dict[str, dict[str, Any]]] = {}
        """Workload ref → cluster → the copy of ours a watch shows there (its identity)."""
        self.quotas: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._synced: set[WatchKey] = set()
        self._owners: dict[tuple[str, str, str, str, str], str | None] = {}
        self._failing: dict[WatchKey, int] = {}
        """Watches whose reads fail → how many times in a row (`_fails`): kept across a
        restart of the watch, so a new connector to a member still down says nothing."""
        members.on_retire(self._retired)

    def ensure(self, cluster: str, api_version: str, kind: str) -> None:
        """Start watching `kind` in `cluster` unless a watch of it is running."""
        key = (cluster, api_version, kind)
        watch = self._watches.get(key)
        if watch is None or not watch.alive:
            self._start(key)

    def _start(self, key: WatchKey) -> None:
        watch = self._watches[key] = _Watch()
        self._synced.discard(key)
        self._spawn(self._follow(key, watch), f"status-{key[0]}-{key[2]}")

    def _retired(self, cluster: str) -> None:
        """`cluster`'s connector was dropped: restart every watch that may still read it.

        Spared: a watch not running yet (it will get the new connector), and the one whose
        own `Members.get` is replacing the connector right now (it gets the new one too).
        """
        current = asyncio.current_task()
        for key, watch in list(self._watches.items()):
            if key[0] != cluster or watch.task is None or watch.task is current:
                continue
            watch.task.cancel()
            self._start(key)

    def forget(self, cluster: str, ref: keys.WorkloadRef) -> None:
        self.seen.pop((cluster, str(ref)), None)
        self._drop(cluster, str(ref))

    def copies(self, ref: keys.WorkloadRef) -> Mapping[str, Mapping[str, Any]]:
        """Cluster → identity (apiVersion, kind, name, namespace) of each copy of `ref`
        the watches show: the propagator's own, and any it did not make (a deposed
        leader's late apply) that it then removes."""
        return self._copies.get(str(ref), {})

    def _drop(self, cluster: str, ref_text: str) -> None:
        where = self._copies.get(ref_text)
        if where is not None:
            where.pop(cluster, None)
            if not where:
                del self._copies[ref_text]

    def synced(self, cluster: str, api_version: str, kind: str) -> bool:
        """A watch of `kind` in `cluster` has listed it and follows it: every copy of ours
        there reaches `copies`."""
        return (cluster, api_version, kind) in self._synced

    def owner(self, cluster: str, manifest: Mapping[str, Any]) -> tuple[bool, str | None] | None:
        """(exists, our workload ref or None) from the watch; None before its first list."""
        api_version, kind = str(manifest.get("apiVersion")), str(manifest.get("kind"))
        if (cluster, api_version, kind) not in self._synced:
            return None
        meta = manifest.get("metadata") or {}
        slot = (cluster, api_version, kind, meta.get("namespace") or "", meta.get("name"))
        if slot not in self._owners:
            return (False, None)
        return (True, self._owners[slot])

    def expect(
        self, cluster: str, ref: keys.WorkloadRef, manifest: Mapping[str, Any], work: WorkStatus
    ) -> Seen:
        """A Work says our copy is in `cluster` and no watch has shown it yet (the Works of
        an earlier run, read at start): what is known of it.

        Why: a restarted propagator applies nothing whose Work is current, so without this
        no event of that copy would ever reach it, and a copy deleted while it was down (by
        hand, or by a deposed leader's late call) would never be applied again. A watch
        that has listed the kind answers at once; otherwise the copy is taken as there,
        with the Work's observation, and the watch's list marks it gone if it is not.
        """
        slot = (cluster, str(ref))
        if slot in self.seen:
            return self.seen[slot]
        presence = self.owner(cluster, manifest)
        seen = Seen(
            work.observed,
            work.resource_version or "",
            gone=presence is not None and not presence[0],
        )
        self.seen[slot] = seen
        return seen

    def _slot(
        self, cluster: str, api_version: str, kind: str, obj: Mapping[str, Any]
    ) -> tuple[str, str, str, str, str]:
        meta = obj.get("metadata") or {}
        return (cluster, api_version, kind, meta.get("namespace") or "", str(meta.get("name")))

    def record(
        self,
        cluster: str,
        obj: Mapping[str, Any],
        *,
        api_version: str | None = None,
        kind: str | None = None,
        quiet: bool = False,
    ) -> None:
        """Take in one member object (from a watch event or an apply response).

        `quiet`: the caller is converging this workload right now; no need to queue it.
        """
        api_version = api_version or str(obj.get("apiVersion"))
        kind = kind or str(obj.get("kind"))
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        ref = _ref_of(obj)
        ours = ref is not None and render.is_ours(obj, ref)
        owner = str(ref) if ours else (render.PLACEHOLDER if render.is_placeholder(obj) else None)
        slot = self._slot(cluster, api_version, kind, obj)
        before = self._owners.get(slot)
        if (
            ref is None
            and isinstance(before, str)
            and before != render.PLACEHOLDER
            and render.is_ours(obj)
            and (cluster, before) in self.seen
        ):
            # Our labels stand, the annotation naming the workload was taken off there
            # (`kubectl annotate ... fedctl.io/workload-ref-`; a `rollout undo` in some
            # members drops every annotation). Still our copy: the copy was no longer
            # followed at all (edits stayed, its status froze), and an Abort policy
            # refused to take back what it had made. A release takes off both.
            owner = before
            last = self.seen[(cluster, before)]
            self.seen[(cluster, before)] = Seen(last.observed, stripped=True)
            self._notify(workload_item(keys.WorkloadRef(*before.split("/", 2))))
        elif before is not None and before != owner:
            self._drop(cluster, before)  # no longer our copy of that workload (released)
            if ref is not None and str(ref) == before and (cluster, before) in self.seen:
                # Our labels were taken off there, the workload still named: the next
                # pass of a workload still placed there puts them back.
                last = self.seen[(cluster, before)]
                self.seen[(cluster, before)] = Seen(last.observed, stripped=True)
                self._notify(workload_item(ref))
        self._owners[slot] = owner
        if kind == "ResourceQuota" and labels.get(quota.LABEL_FRQ):
            ns = meta.get("namespace", "")
            self.quotas[(cluster, ns, meta["name"])] = dict(obj)
            self._notify(quota_item(ns, labels[quota.LABEL_FRQ]))
            return
        if kind == "ResourceQuota":
            self._unquota(cluster, meta)
        if ref is None or not ours:
            return
        self._copies.setdefault(str(ref), {})[cluster] = {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        }
        plugin = interpreter.for_kind(api_version, kind)
        seen = Seen(
            plugin.observe(obj),
            str(meta.get("resourceVersion") or ""),
            generation=_generation(meta),
            marks=marks_of(obj),
            spec=ungenerated_spec(obj),
            references=deps.in_manifest(obj),
        )
        known = self.seen.get((cluster, str(ref)))
        if quiet and known is not None and _older(seen.resource_version, known.resource_version):
            return  # an apply's response read after the watch's newer events: keep those
        if known != seen:
            self.seen[(cluster, str(ref))] = seen
            if not quiet:
                self._notify(workload_item(ref))

    def _unquota(self, cluster: str, meta: Mapping[str, Any]) -> None:
        """A member ResourceQuota that was an FRQ's and no longer carries its label (taken
        off by hand, or the quota replaced by another's): no longer the FRQ's copy, which
        its worker puts back. Kept, the copy still counted as applied and was never put
        back, even once the quota was deleted there, for a quota is known by that label."""
        key = (cluster, str(meta.get("namespace") or ""), str(meta.get("name")))
        was = self.quotas.pop(key, None)
        if was is not None:
            frq = ((was.get("metadata") or {}).get("labels") or {}).get(quota.LABEL_FRQ)
            self._notify(quota_item(key[1], str(frq)))

    def _gone(self, cluster: str, api_version: str, kind: str, obj: Mapping[str, Any]) -> None:
        self._owners.pop(self._slot(cluster, api_version, kind, obj), None)
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        if kind == "ResourceQuota" and labels.get(quota.LABEL_FRQ):
            self.quotas.pop((cluster, meta.get("namespace", ""), meta["name"]), None)
            self._notify(quota_item(meta.get("namespace", ""), labels[quota.LABEL_FRQ]))
            return
        if kind == "ResourceQuota":
            self._unquota(cluster, meta)
        ref = _ref_of(obj)
        if ref is not None and (cluster, str(ref)) in self.seen:
            # The deleted object's last state: a Job deleted the moment it finished
            # (`ttlSecondsAfterFinished: 0`) is known finished, not only gone.
            last = interpreter.for_kind(api_version, kind).observe(obj)
            self.seen[(cluster, str(ref))] = Seen(last, gone=True)
            self._drop(cluster, str(ref))
            self._notify(workload_item(ref))

    def _relisted(
        self, cluster: str, api_version: str, kind: str, items: Iterable[Mapping[str, Any]]
    ) -> None:
        for slot in [s for s in self._owners if s[:3] == (cluster, api_version, kind)]:
            del self._owners[slot]
        present = set()
        for obj in items:
            ref = _ref_of(obj)
            if ref is not None:
                present.add(str(ref))
            self.record(cluster, obj, api_version=api_version, kind=kind)
        self._synced.add((cluster, api_version, kind))
        segment = keys.kind_segment(api_version, kind)
        for (name, ref_text), seen in list(self.seen.items()):
            if name != cluster or ref_text in present or seen.gone:
                continue
            if ref_text.split("/")[1] == segment:
                self.seen[(name, ref_text)] = Seen(seen.observed, gone=True)
                self._drop(name, ref_text)
                self._notify(f"w|{ref_text}")

    async def _follow(self, key: WatchKey, watch: _Watch) -> None:
        watch.task = asyncio.current_task()
        try:
            await self._read(*key)
        finally:
            if self._watches.get(key) is watch:  # not already replaced by a fresh watch
                del self._watches[key]
                self._synced.discard(key)

    async def _read(self, cluster: str, api_version: str, kind: str) -> None:
        delay = 0.1
        key = (cluster, api_version, kind)
        while True:
            spec = self._cluster(cluster)
            if spec is None:
                self._failing.pop(key, None)  # it left: nothing more to say of it
                return
            try:
                conn = await self._members.get(spec)
                async for event in conn.follow(api_version, kind):
                    delay = 0.1
                    self._answers(key)
                    if isinstance(event, member_mod.Relisted):
                        self._relisted(cluster, api_version, kind, event.items)
                    elif event.type == "DELETED":
                        self._gone(cluster, api_version, kind, event.object)
                    else:
                        self.record(cluster, event.object, api_version=api_version, kind=kind)
            except member_mod.MemberNotFound as exc:
                log.warning("%s %s is not served by %s: %s", api_version, kind, cluster, exc)
                return
            except errors.FedctlError as exc:
                self._synced.discard(key)
                self._fails(key, exc)
            await self._clock.sleep(delay)
            delay = min(delay * 2, self._backoff_max)

    def _fails(self, key: WatchKey, exc: errors.FedctlError) -> None:
        """Say once that a watch fails, then count its retries quietly: a member down for
        a minute logged `connection refused` every few seconds for each kind watched
        there, most of the log, of what the monitor already says (it is not Ready)."""
        cluster, api_version, kind = key
        failures = self._failing.get(key, 0)
        self._failing[key] = failures + 1
        if failures:
            log.debug("status watch %s %s in %s: %s", api_version, kind, cluster, exc)
            return
        log.info(
            "status watch %s %s in %s: %s; retrying, quietly until it answers",
            api_version,
            kind,
            cluster,
            exc,
        )

    def _answers(self, key: WatchKey) -> None:
        """Say that a watch that failed reads again, and after how many failures."""
        failures = self._failing.pop(key, 0)
        if failures:
            cluster, api_version, kind = key
            log.info(
                "status watch %s %s in %s answers again after %d failure%s",
                api_version,
                kind,
                cluster,
                failures,
                "" if failures == 1 else "s",
            )


def not_ready(status: ClusterStatus | None) -> bool:
    """Whether the monitor's last word on a member is that it is not Ready, so its copies'
    last reports go unconfirmed. A member without a status yet is not judged: nothing is
    known against it, and it is the scheduler's job not to place work there."""
    return status is not None and not status.ready()


def aggregate(
    ref: keys.WorkloadRef,
    workload: WorkloadReference,
    works: Iterable[Work],
    *,
    binding_revision: int,
    placed: Collection[str] | None = None,
    unready: Collection[str] = (),
    desired: int | None = None,
    asked: Mapping[str, int] | None = None,
) -> WorkloadStatus:
    """The workload's status from its Works (each carrying the member's observation).

    `placed`: the clusters its Binding targets (None: no Binding is known, every copy
    counts); `unready`: members whose Ready condition is not True; `desired`: the replicas
    its template asks for (None: not a count, as for a ConfigMap); `asked`: the replicas
    the Binding asks of each cluster it targets (`_out_of_asked`).

    Every Work gets a row, but the totals (health, ready and desired counts, a job's
    progress) count only the copies that make up the placement, the way Karmada's
    graceful eviction judges a workload by its scheduled clusters alone:

    - a copy on a cluster the Binding left (`leaving`) runs only until the new placement
      is ready. Counted, a Deployment of 4 moving to a new member read 8/8 while both
      copies ran, and a workload waiting to be placed again read as whole.
    - a copy on a member that is not Ready (`stale`) keeps only its desired count; its
      last report, frozen when the member went away, is not evidence that anything runs
      there. Counted, a dead member's share read Healthy for as long as it stayed dead,
      and failover, which waits on this status before it drops a graceful eviction's old
      copy, could take a dead new target for a ready one.

    A finished job's outcome is kept either way: it ran to the end wherever its copy is
    now, and a job read as unfinished would be placed and run again.
    """
    plugin = interpreter.for_kind(workload.api_version, workload.kind)
    rows = []
    for work in sorted(works, key=lambda w: w.spec.cluster):
        observed = work.status.observed
        cluster = work.spec.cluster
        row = ClusterWorkloadStatus(
            cluster=cluster,
            applied=work.status.applied,
            error=work.status.error,
            leaving=placed is not None and cluster not in placed,
            suspended=work.spec.suspend_dispatching,
            **observed.model_dump(),
        )
        if cluster in unready and row.phase not in FINISHED_PHASES:
            row = _unconfirmed(row)
        rows.append(row)
    counted = [r for r in rows if not r.leaving or r.phase in FINISHED_PHASES]
    live = [r for r in counted if r.applied or r.phase in FINISHED_PHASES]
    total = plugin.aggregate(live or counted)
    # A copy its member refused to update is not what was asked, unless it has finished:
    # it ran to the end as it was (a Job's pod template edited while it ran), and a
    # finished job read Progressing for good.
    refused = any(r.error and not r.applied and r.phase not in FINISHED_PHASES for r in counted)
    if refused and total.health in ("Healthy", "Completed"):
        total = total.model_copy(update={"health": "Progressing"})
    if desired is not None:
        total = _out_of_asked(total, plugin.aggregate(live), counted, live, asked or {})
    total = _short_of(total, desired)
    return WorkloadStatus(
        workload=workload,
        binding_revision=binding_revision,
        clusters=rows,
        **total.model_dump(exclude={"message"}),
    )


def _out_of_asked(
    total: Observed,
    applied: Observed,
    counted: Sequence[ClusterWorkloadStatus],
    live: Sequence[ClusterWorkloadStatus],
    asked: Mapping[str, int],
) -> Observed:
    """`total` with READY out of what the Binding asks of every cluster it targets: the
    applied copies' own counts, and for each target without one (refused by `Abort`,
    rejected, not rendered, not written yet) the replicas it is asked for, none ready.

    Why: a copy that is not what was asked was left out of the count when another copy
    was applied, and counted with its old copy's ready replicas when none was, so a
    Duplicated 1 on two members, one refusing it, read 1/1, and a workload whose copies
    could not be rendered read 4/7 or 1/1 by how many there were. Karmada's READY sums
    the members' status of every scheduled cluster the same way. Health and a job's
    phase are judged as before: a copy that ran to the end ran, whatever was refused."""
    have = {r.cluster for r in live}
    wanted = {r.cluster: r.replicas or 0 for r in counted if r.cluster not in have}
    wanted.update({name: n for name, n in asked.items() if name not in have})
    replicas = (applied.replicas or 0) + sum(wanted.values())
    if applied.replicas is None and not replicas:
        return total  # nothing counted anywhere: the kind's own zero or none stands
    short = any(wanted.values()) and total.health == "Healthy"
    return total.model_copy(
        update={
            "replicas": replicas,
            "ready_replicas": applied.ready_replicas or 0,
            "health": "Progressing" if short else total.health,
        }
    )


def _short_of(total: Observed, desired: int | None) -> Observed:
    """`total` out of the `desired` replicas when its members are asked for fewer.

    Why: a scale-up the fleet cannot hold keeps the replicas placed so far, and summed over
    the members a Deployment of 30 running 4 read `Healthy 4/4`. kubectl's READY divides by
    the template's `spec.replicas`, and Karmada sums member status into the template, so
    both read 4/30 and the Deployment is not available. Members asked for more (copies of
    a Duplicated workload, or a scale-down on its way) keep their own sum.
    """
    if desired is None or desired <= (total.replicas or 0) or total.phase in FINISHED_PHASES:
        return total
    health = "Progressing" if total.health == "Healthy" else total.health
    return total.model_copy(update={"replicas": desired, "health": health})


def _unconfirmed(row: ClusterWorkloadStatus) -> ClusterWorkloadStatus:
    """`row` of a member that is not Ready: its desired count and phase stay, what it last
    said of readiness is only mentioned."""
    if row.phase:
        last = f"{row.phase}, {row.running} running"
    else:
        last = f"{row.health}, {row.ready_replicas or 0}/{row.replicas or 0} ready"
    return row.model_copy(
        update={
            "stale": True,
            "health": "Unknown",
            "ready_replicas": None,
            "running": 0,
            "message": f"{row.cluster} is not Ready; its last report ({last}) is not counted",
        }
    )
