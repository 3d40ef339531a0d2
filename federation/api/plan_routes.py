"""`POST /apis/fedctl.io/v1alpha1/plan`: what-if placement of edited YAML against the live
registry, with a diff against the stored objects. Stores nothing.

Fed by the dashboard's policy editor (and any client) with a YAML body; reads clusters,
cluster statuses, queues, quotas, propagation policies and workloads from the registry and
overlays the body's objects on them. The scheduler's pure `plan` (the same code the
scheduling cycle runs) then places every affected workload twice: as things stand and as
they would stand after `apply`. A workload is affected when the body names it, or when the
policy that claims it is in the body or would change. Feeds the editor's preview and diff,
and notes on the body's policies that claim less than they select (`claims.notes`).

Who may plan what: a plan is the write it previews, authorized as one (Kubernetes judges a
dry run and a diff as the request itself): each document must pass the tenant rules as
`/apply` would (`bodies.admit_each`), else 403 naming it, so no diff shows a stored object
its caller may not read. What the answer says of other stored objects is cut to the
caller's namespaces: the workloads planned, the claim notes, and the admitted work a
placement would preempt (counted, not named, outside them).

Why here and not in the scheduler: the scheduler is pure over a snapshot; reading the
registry and speaking HTTP belong to the API layer.

Why it counts what is admitted: a live plan answers "where would this go now". The
Bindings (Scheduled, or Pending with copies still running) hold capacity the members may
not show yet, and fill queues and namespace quotas; a plan that ignored them would place a
job where the controller then leaves it pending (and `fedctl describe` sends users here for
the reason). A workload that is itself admitted is planned as the cycle places it again:
without its own quota, its running pods holding the room they take. An offline plan
against a profile (`fedctl plan --clusters`) has no admissions to count.
"""

from __future__ import annotations

import asyncio
import difflib
import io
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from aiohttp import web
from ruamel.yaml import YAML

from federation import errors
from federation.api import audit, auth, bodies
from federation.cache import snapshot as snap
from federation.cache.currency import Currency
from federation.propagation import override_counts, overrides
from federation.queue.pending import PendingJob
from federation.quota.accounting import Usage
from federation.registry import codec, keys, objects
from federation.registry import store as st
from federation.scheduler import bound_usage, claims, cycle, explain, reconcile
from federation.scheduler import framework as fw
from federation.scheduler import plan as planning
from federation.settings import SchedulerSettings
from policies import loading
from policies.models.accelerator import AcceleratorProfile
from policies.models.base import KubeObject
from policies.models.binding import CLAIMED_BY, Binding
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.frq import FederatedResourceQuota
from policies.models.override import ClusterOverridePolicy, OverridePolicy
from policies.models.queue import Queue
from policies.models.work import WorkloadStatus
from policies.models.workload import Workload

__all__ = ["PLAN_PATH", "LiveState", "PlanApi", "policy_notes"]

PLAN_PATH = "/apis/fedctl.io/v1alpha1/plan"
_REDACTED = "<redacted>"
_SERVER_META = ("resourceVersion", "uid", "generation", "creationTimestamp")


@dataclass
class LiveState:
    """User objects by registry key, the monitor's statuses by cluster name, the
    Bindings naming clusters by their workload's registry key (Scheduled, or Pending with
    copies still running), and how many Pending Bindings each queue has."""

    objects: dict[str, KubeObject]
    statuses: dict[str, ClusterStatus]
    bindings: dict[str, Binding] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)
    """Workload keys whose aggregated status is Succeeded or Failed: they hold nothing."""

    def of(self, kind: type[Any]) -> list[Any]:
        return [o for o in self.objects.values() if isinstance(o, kind)]

    def policies(self) -> list[planning.AnyPolicy]:
        return [o for o in self.objects.values() if isinstance(o, planning.AnyPolicy)]

    def claim(self, workload: Workload) -> planning.AnyPolicy | None:
        """The policy claiming `workload` as the controller sees it: the one its Binding
        records keeps it (`planning.claimant`), so a plan never shows a policy set to
        `preemption: Never` taking over a workload another policy holds."""
        return planning.claim(workload, self.policies(), recorded=self.recorded(workload))

    def recorded(self, workload: Workload) -> str | None:
        """The claim `workload`'s Binding records (`planning.policy_id`), if any."""
        binding = self.bindings.get(objects.key_for(workload))
        return binding.metadata.annotations.get(CLAIMED_BY) if binding else None

    def snapshot(self, currency: Currency | None = None) -> snap.Snapshot:
        """With the Bindings, so a placed workload is planned from where it runs, as the
        scheduler places it again: locality, Steady division and the affinity group it is
        in. Without them, plan --live showed moves the controller never makes."""
        return snap.build(
            self.of(Cluster),
            statuses=self.statuses,
            bindings=list(self.bindings.values()),
            queues=self.of(Queue),
            quotas=self.of(FederatedResourceQuota),
            currency=currency or Currency(),
            profiles=self.of(AcceleratorProfile),
        )

    def usage(self, snapshot: snap.Snapshot) -> Usage:
        """What the Bindings naming clusters hold, charged as the controller charges them: only
        those whose workload still exists and has not finished, on the clusters still known;
        one the controller places again (a target gone, its pods resized, not Scheduled)
        in the pods its copies run."""
        return self.charged(snapshot)[0]

    def charged(self, snapshot: snap.Snapshot) -> tuple[Usage, dict[str, int], dict[str, int]]:
        """`usage`; per queue how many of the Bindings it charged wait to be placed again,
        their running copies holding that usage; and per queue how many wait in all.

        Counted apart from the charge, a Binding it skipped (a workload finished) was taken
        off a queue's admitted count it never added to. A Scheduled Binding the controller
        places again (a target gone, its pods resized) waits as well as a Pending one.
        """
        usage = Usage()
        waiting: dict[str, int] = {}
        pending = dict(self.pending)
        shapes: dict[object, Any] = {}  # pod shapes and charges read once (`admission_of`)
        charges: dict[Any, Any] = {}
        for key, binding in self.bindings.items():
            workload = self.objects.get(key)
            if not isinstance(workload, Workload) or not binding.spec.clusters:
                continue
            if key in self.finished:
                continue
            queue = binding.spec.queue
            running = bound_usage.on_known(binding, snapshot.index)
            # Placed again by the controller: a target gone, or its pods resized. Its copies
            # (None: all gone with their members) are charged as they run until then.
            moving = (
                running is not binding
                or binding.status.phase != "Scheduled"
                or bound_usage.resized(
                    workload, binding, device_resources=snapshot.device_resources, shapes=shapes
                )
            )
            if moving and binding.status.phase == "Scheduled":
                pending[queue] = pending.get(queue, 0) + 1
            if running is None:
                continue
            job = PendingJob(
                ref=keys.parse_workload_key(key),
                workload=workload,
                queue=binding.spec.queue,
                priority=binding.spec.priority,
            )
            usage.admit(
                bound_usage.admission_of(
                    job,
                    running,
                    device_resources=snapshot.device_resources,
                    chip_devices=snapshot.chip_devices,
                    shapes=shapes,
                    charges=charges,
                    as_placed=moving,
                )
            )
            if moving:
                waiting[queue] = waiting.get(queue, 0) + 1
        return usage, waiting, pending


class PlanApi:
    """The plan route bound to one Store."""

    def __init__(
        self,
        store: st.Store,
        *,
        settings: SchedulerSettings | None = None,
        admit: bodies.Admit | None = None,
    ) -> None:
        self.store = store
        self.admit = admit
        """The tenant rules each planned document must pass (`auth.Authenticator.admit`)."""
        self.objects = codec.TypedStore(store, objects.ObjectCodec())
        self.statuses = codec.TypedStore(store, codec.Codec(ClusterStatus))
        self.bindings = codec.TypedStore(store, codec.Codec(Binding))
        self.results = codec.TypedStore(store, codec.Codec(WorkloadStatus))
        self.settings = settings or SchedulerSettings()

    def routes(self) -> list[web.RouteDef]:
        return [web.post(PLAN_PATH, self.plan)]

    async def live(self) -> LiveState:
        """The registry as the scheduler would see it now (also read by `queue_status`):
        listed on the event loop, decoded in a worker thread (seconds at tens of thousands
        of workloads, while the event loop serves the API and the leader lease)."""
        return await asyncio.to_thread(self.state_of, await self.read())

    async def read(self) -> dict[str, st.ListResult]:
        """What `live` decodes: each prefix it reads, listed but not decoded."""
        prefixes = ("clusters", "policies", "workloads", "clusterstatus", "bindings")
        return {
            kind: await self.store.list(keys.prefix(kind)) for kind in (*prefixes, "workloadstatus")
        }

    def state_of(self, raw: dict[str, st.ListResult]) -> LiveState:
        """`read`'s lists decoded (pure CPU work, safe in any thread)."""
        found: dict[str, KubeObject] = {}
        for kind in ("clusters", "policies", "workloads"):
            found.update((item.key, item.obj) for item in self.objects.decoded(raw[kind]).items)
        statuses = self.statuses.decoded(raw["clusterstatus"])
        bindings = self.bindings.decoded(raw["bindings"])
        results = self.results.decoded(raw["workloadstatus"])
        finished = {
            keys.workload_key(keys.parse_workload_key(r.key))
            for r in results.items
            if r.obj.phase in reconcile.FINISHED
        }
        pending: dict[str, int] = {}
        for b in bindings.items:
            if b.obj.status.phase != "Scheduled":
                pending[b.obj.spec.queue] = pending.get(b.obj.spec.queue, 0) + 1
        return LiveState(
            found,
            {keys.split(s.key)[-1]: s.obj for s in statuses.items},
            {
                keys.workload_key(keys.parse_workload_key(b.key)): b.obj
                for b in bindings.items
                # Pending ones that name clusters: copies running while the workload
                # waits to be placed again, which the controller counts too.
                if b.obj.status.phase == "Scheduled" or b.obj.spec.clusters
            },
            pending,
            finished,
        )

    async def plan(self, request: web.Request) -> web.Response:
        text = (await request.read()).decode("utf-8", errors="replace")
        filename = request.query.get("filename", "<editor>")
        # A worker thread keeps the loop serving while a large body parses (`ObjectsApi._body`).
        result = await asyncio.to_thread(loading.load_text, text, filename=filename)
        failures = [str(f) for f in result.findings if f.is_error]
        if failures:
            raise errors.Invalid("; ".join(failures), findings=failures)
        audit.attempted(request, [o.model for o in result.objects])
        bodies.admit_each(self.admit, request, (o.model for o in result.objects))
        seen = _visible(request)
        live = await self.live()
        proposed = {
            key: _successor(live.objects.get(key), o.model)
            for key, o in ((objects.key_for(o.model), o) for o in result.objects)
        }
        # Planning is seconds of CPU at hundreds of workloads (40 s for 520 at 144
        # members): on the event loop it starved the leader lease, and a read-only plan
        # deposed the leader. The state is this request's own copy, read above, and the
        # scheduler is built for it, so a worker thread shares nothing with the loop. The
        # answer (megabytes for such a plan) is encoded there too.
        body = await asyncio.to_thread(
            lambda: json.dumps(self._answer(live, proposed, seen), separators=(",", ":"))
        )
        return web.Response(text=body, content_type="application/json")

    def _answer(
        self,
        live: LiveState,
        proposed: dict[str, KubeObject],
        seen: Callable[[str | None], bool],
    ) -> dict[str, Any]:
        """The plan route's answer for the body's objects `proposed` (pure CPU work over
        this request's `live` copy: safe in a worker thread)."""
        # The claims Bindings record hold after the write too: a policy that may not
        # preempt them takes nothing, so the plan after apply must not show it taking.
        after = LiveState({**live.objects, **proposed}, live.statuses, live.bindings)
        scheduler = cycle.Scheduler(self.settings)
        plans = []
        currency = Currency.of(self.settings)
        live_snapshot = live.snapshot(currency)
        held = live.usage(live_snapshot)  # what runs now, whatever the body proposes
        live_state = fw.CycleState(live_snapshot, held, self.settings)
        after_state = fw.CycleState(after.snapshot(currency), held, self.settings)
        for key in _affected(live, after, proposed, default_queue=self.settings.default_queue):
            workload = after.objects[key]
            assert isinstance(workload, Workload)
            if not seen(objects.access_namespace(workload)):
                continue
            entry: dict[str, Any] = {
                "key": key,
                "after": _cut(self._plan(scheduler, workload, after, after_state), seen),
            }
            before = live.objects.get(key)
            if isinstance(before, Workload):
                now = self._plan(scheduler, before, live, live_state)
                bound = live.bindings.get(key)
                if bound is not None and bound.status.phase == "Scheduled":
                    now = _as_bound(now, bound)
                entry["before"] = _cut(now, seen)
            plans.append(entry)
        return {
            "plans": plans,
            "notes": policy_notes(
                proposed.values(),
                [w for w in after.of(Workload) if seen(objects.access_namespace(w))],
                after.policies(),
                after.recorded,
                among=[*after.of(OverridePolicy), *after.of(ClusterOverridePolicy)],
            ),
            "admitted": len(live_state.usage),
            "diff": [_diff(key, live.objects.get(key), proposed[key]) for key in proposed],
        }

    def _plan(
        self,
        scheduler: cycle.Scheduler,
        workload: Workload,
        state: LiveState,
        cycle_state: fw.CycleState,
    ) -> dict[str, Any]:
        policy = state.claim(workload)
        job = planning.job_for(workload, policy, settings=self.settings)
        planned = scheduler.plan_in(job, cycle_state)
        return planned.to_json(policy.metadata.name if policy else None)


def _successor(stored: KubeObject | None, proposed: KubeObject) -> KubeObject:
    """`proposed` with the uid of the object it would replace, as `apply` keeps it.

    Why: a file carries no uid, and the uid seeds the tie-break of replica division
    (Karmada's): planned without it, an unchanged file of a workload whose uid sends ties
    to the larger name showed a move of one replica the controller never makes."""
    if stored is None or not stored.metadata.uid or proposed.metadata.uid == stored.metadata.uid:
        return proposed
    meta = proposed.metadata.model_copy(update={"uid": stored.metadata.uid})
    return proposed.model_copy(update={"metadata": meta})


def _visible(request: web.Request) -> Callable[[str | None], bool]:
    """Whether the caller may read what a namespace holds: every one for an admin (or a
    server without authentication), a tenant's own only (`auth.py`)."""
    owned = auth.readable(request.get(auth.PRINCIPAL))
    return lambda ns: owned is None or ns in owned


def _cut(planned: dict[str, Any], seen: Callable[[str | None], bool]) -> dict[str, Any]:
    """A plan whose preemptions (`NS/KIND/NAME: why`) name only workloads the caller may
    read; the others are counted, so the plan still says that it preempts."""
    victims = planned.get("preempts") or []
    shown = [v for v in victims if seen(str(v).split("/", 1)[0])]
    if len(shown) == len(victims):
        return planned
    hidden = len(victims) - len(shown)
    return {**planned, "preempts": [*shown, f"{hidden} workload(s) of other namespaces"]}


def _as_bound(planned: dict[str, Any], binding: Binding) -> dict[str, Any]:
    """A placed workload's "before" as its Binding has it: where it runs and what that
    costs. Planned afresh, it read "pending: queue web has a budget …" for a service
    running 12/12, since a fresh placement of it did not fit what its own spend left."""
    targets = [t for t in binding.spec.clusters if t.replicas > 0]
    costs = {t.name: (str(t.hourly_cost) if t.hourly_cost is not None else None) for t in targets}
    known = [Decimal(c) for c in costs.values() if c is not None]
    total = sum(known, Decimal(0)) if len(known) == len(costs) and known else None
    hours = planned.get("expectedHours")
    return {
        **planned,
        "scheduled": bool(targets),
        "placement": {t.name: t.replicas for t in targets},
        "chips": {t.name: t.chip for t in targets},
        "costs": costs,
        "totalCost": str(total) if total is not None else None,
        "expectedCost": explain.money(
            total * Decimal(str(hours)) if total is not None and hours else None
        ),
        "reason": "",
        "preempts": [],
        "verdicts": [
            v.model_dump(mode="json", by_alias=True, exclude_none=True)
            for v in binding.spec.explanation
        ],
    }


def policy_notes(
    proposed: Iterable[KubeObject],
    workloads: list[Workload],
    policies: Sequence[planning.AnyPolicy],
    recorded: Callable[[Workload], str | None],
    *,
    among: Sequence[overrides.AnyOverride] = (),
) -> list[str]:
    """The notes on the proposed policies, judged on the state after the write
    (`workloads`, `policies`, the claims Bindings record, every override policy `among`
    them): placing policies that claim less than they select (`claims.notes`), override
    policies that would do nothing or fail (`overrides.unselected`) or make copies run
    more than admission counted (`override_counts`). The plan route and the apply route
    say the same."""
    proposed = list(proposed)
    placing = [m for m in proposed if isinstance(m, planning.AnyPolicy)]
    overriding = [m for m in proposed if isinstance(m, overrides.AnyOverride)]
    templates = [w.to_wire() for w in workloads] if overriding else []
    return [
        *claims.notes(placing, workloads, policies, recorded=recorded),
        *overrides.unselected(overriding, templates, among=among),
        *override_counts.notes(overriding, workloads, templates),
    ]


def _claims(state: LiveState, workload: Workload) -> str | None:
    policy = state.claim(workload)
    return objects.key_for(policy) if policy is not None else None


def _affected(
    live: LiveState, after: LiveState, proposed: dict[str, KubeObject], *, default_queue: str
) -> list[str]:
    """Keys of workloads whose placement the proposed objects may change, sorted: those
    named, those whose claiming policy is proposed or changes, and those waiting to be
    admitted under a proposed Queue (or one above theirs) or their namespace's proposed
    FederatedResourceQuota, whose limits decide whether they wait. Admitted ones stay
    admitted whatever the limits become, so a queue edit plans only what waits."""
    queues = {m.metadata.name for m in proposed.values() if isinstance(m, Queue)}
    quotas = {
        m.metadata.namespace for m in proposed.values() if isinstance(m, FederatedResourceQuota)
    }
    parents = {q.metadata.name: q.spec.parent for q in after.of(Queue)}
    out = []
    for key, obj in after.objects.items():
        if not isinstance(obj, Workload) or obj.is_opaque:
            continue
        claimed = _claims(after, obj)
        before = live.objects.get(key)
        was = _claims(live, before) if isinstance(before, Workload) else None
        limits = obj.namespace in quotas or _under(obj.queue or default_queue, queues, parents)
        changed = key in proposed or claimed in proposed or claimed != was
        if changed or (limits and _waiting(live, key)):
            out.append(key)
    return sorted(out)


def _waiting(live: LiveState, key: str) -> bool:
    """Whether a workload waits to be admitted (no Scheduled Binding, not finished)."""
    binding = live.bindings.get(key)
    placed = binding is not None and binding.status.phase == "Scheduled"
    return not placed and key not in live.finished


def _under(queue: str, proposed: set[str], parents: dict[str, str | None]) -> bool:
    """Whether `queue` or a queue above it is among `proposed`."""
    seen: set[str] = set()
    current: str | None = queue
    while current is not None and current not in seen:
        if current in proposed:
            return True
        seen.add(current)
        current = parents.get(current)
    return False


def _comparable(obj: KubeObject | None) -> list[str]:
    """The user-controlled content as YAML lines: no server metadata, status or secrets."""
    if obj is None:
        return []
    wire = json.loads(json.dumps(obj.to_wire()))
    meta = wire.get("metadata", {})
    for name in _SERVER_META:
        meta.pop(name, None)
    wire.pop("status", None)
    conn = wire.get("spec", {}).get("connection") if isinstance(wire.get("spec"), dict) else None
    if isinstance(conn, dict) and conn.get("kubeconfig"):
        conn["kubeconfig"] = _REDACTED
    out = io.StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.dump(wire, out)
    return out.getvalue().splitlines()


def _diff(key: str, live: KubeObject | None, proposed: KubeObject) -> dict[str, Any]:
    old, new = _comparable(live), _comparable(proposed)
    state = "created" if live is None else ("unchanged" if old == new else "configured")
    lines = difflib.unified_diff(
        old, new, fromfile=f"live{key}", tofile=f"proposed{key}", lineterm=""
    )
    return {
        "key": key,
        "kind": proposed.kind,
        "namespace": proposed.metadata.namespace,
        "name": proposed.metadata.name,
        "result": state,
        "diff": "\n".join(lines),
    }
