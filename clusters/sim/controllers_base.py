"""Shared plumbing of a simulated cluster's controllers: settings, work queue, indexes, events.

Store listeners only put keys on the `WorkQueue` (de-duplicated, with delayed adds on the
simulated clock); one worker per cluster pops a key and calls the handler for its kind,
which re-reads current state and converges (level-based, so a missed or repeated event
never leaves a Deployment half-rolled). Handlers in `controllers_workloads`,
`controllers_jobs` and `kubelet` all receive one `Context`: the store, the clock, the
indexes the listener keeps (pods by owner and by node, the scheduler's node cache, quota
usage) and the `Recorder` that writes Events the way components do.
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import itertools
import json
import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clusters.sim import quota as quota_mod
from clusters.sim import resources, scheduler
from clusters.sim.clock import Clock
from clusters.sim.resources import ResourceType
from clusters.sim.store import ObjectStore

__all__ = [
    "Context",
    "Key",
    "Recorder",
    "Settings",
    "WorkQueue",
    "back_off",
    "condition",
    "controller_of",
    "create_pod",
    "creation_paused",
    "kind",
    "pod_active",
    "pod_ready",
    "rfc3339",
    "set_condition",
    "short_hash",
    "write_status",
]

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
Key = tuple[str, str, str]  # (handler tag, namespace, name)

_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def kind(api_version: str, kind_name: str) -> ResourceType:
    rt = resources.by_kind(api_version, kind_name)
    if rt is None:  # pragma: no cover - the registry is static
        raise LookupError(f"{api_version} {kind_name} is not served")
    return rt


POD = kind("v1", "Pod")
NODE = kind("v1", "Node")
EVENT = kind("v1", "Event")
QUOTA = kind("v1", "ResourceQuota")
DEPLOYMENT = kind("apps/v1", "Deployment")
REPLICASET = kind("apps/v1", "ReplicaSet")
STATEFULSET = kind("apps/v1", "StatefulSet")
JOB = kind("batch/v1", "Job")
VCJOB = kind("batch.volcano.sh/v1alpha1", "Job")
PYTORCHJOB = kind("kubeflow.org/v1", "PyTorchJob")
CONFIGMAP = kind("v1", "ConfigMap")
SECRET = kind("v1", "Secret")
SERVICEACCOUNT = kind("v1", "ServiceAccount")
CLAIM = kind("v1", "PersistentVolumeClaim")


@dataclass(frozen=True)
class Settings:
    """Timings of the simulated components, all in simulated seconds."""

    pod_startup_seconds: float = 2.0
    """Bound pod to Running and Ready (kwok's pod-ready stage delay)."""
    job_pod_seconds: float = 10.0
    """Run time of a Job-like pod without a `sim.fedctl.io/duration` annotation."""
    heartbeat_seconds: float = 60.0
    """How often Ready nodes refresh `lastHeartbeatTime`; 0 disables heartbeats."""
    toleration_seconds: float = 300.0
    """Default `tolerationSeconds` for not-ready/unreachable NoExecute taints."""
    retry_seconds: float = 10.0
    """Back-off before a controller retries a rejected pod creation."""
    unschedulable_retry_seconds: float = 30.0
    """Periodic retry of Pending pods even without a cluster change."""


def rfc3339(clock: Clock) -> str:
    return clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")


def short_hash(value: str, length: int = 10) -> str:
    """A stable name-safe hash, shaped like upstream `pod-template-hash` values."""
    digest = int.from_bytes(hashlib.sha256(value.encode()).digest()[:8], "big")
    out = []
    for _ in range(length):
        digest, rem = divmod(digest, len(_SAFE))
        out.append(_SAFE[rem])
    return "".join(out)


def controller_of(obj: Obj) -> Obj | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def condition(obj: Obj, ctype: str) -> Obj | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == ctype:
            return cond  # type: ignore[no-any-return]
    return None


class WorkQueue:
    """De-duplicating FIFO of keys plus delayed adds measured on the simulated clock."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._queue: deque[Key] = deque()
        self._queued: set[Key] = set()
        self._ready = asyncio.Event()
        self._timers: list[tuple[float, int, Key]] = []
        self._seq = itertools.count()
        self._timer_changed = asyncio.Event()

    def add(self, key: Key) -> None:
        if key not in self._queued:
            self._queued.add(key)
            self._queue.append(key)
            self._ready.set()

    def add_after(self, key: Key, seconds: float) -> None:
        if seconds <= 0:
            self.add(key)
            return
        due = self._clock.monotonic() + seconds
        if not self._timers or due < self._timers[0][0]:
            self._timer_changed.set()
        heapq.heappush(self._timers, (due, next(self._seq), key))

    def __len__(self) -> int:
        return len(self._queue)

    async def get(self) -> Key:
        while not self._queue:
            self._ready.clear()
            await self._ready.wait()
        key = self._queue.popleft()
        self._queued.discard(key)
        return key

    async def run_timers(self) -> None:
        """Move due keys onto the queue; runs for the life of the cluster."""
        while True:
            now = self._clock.monotonic()
            while self._timers and self._timers[0][0] <= now:
                self.add(heapq.heappop(self._timers)[2])
            self._timer_changed.clear()
            if not self._timers:
                await self._timer_changed.wait()
                continue
            sleeper = asyncio.ensure_future(self._clock.sleep(self._timers[0][0] - now))
            changed = asyncio.ensure_future(self._timer_changed.wait())
            try:
                await asyncio.wait({sleeper, changed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
                changed.cancel()


class Recorder:
    """Writes core/v1 Events, folding repeats into `count` like the client-go recorder."""

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock
        self._seen: dict[tuple[str, str, str], str] = {}

    def event(
        self, obj: Obj, *, reason: str, message: str, etype: str = "Normal", component: str
    ) -> None:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or "default"
        uid = meta.get("uid", "")
        now = rfc3339(self._clock)
        fold = (uid, reason, message)
        name = self._seen.get(fold)
        if name is not None:
            old = self._store.try_get(EVENT, ns, name)
            if old is not None:
                old["count"] = int(old.get("count") or 1) + 1
                old["lastTimestamp"] = now
                self._store.update(EVENT, old)
                return
        name = f"{meta.get('name', 'unknown')}.{short_hash(f'{uid}{reason}{message}{now}', 16)}"
        body = {
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": {
                "kind": obj.get("kind", ""),
                "apiVersion": obj.get("apiVersion", ""),
                "namespace": meta.get("namespace", ""),
                "name": meta.get("name", ""),
                "uid": uid,
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": reason,
            "message": message,
            "type": etype,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": "",
        }
        try:
            self._store.create(EVENT, body)
        except Exception:  # an event must never fail the controller that records it
            log.debug("could not record event %s on %s", reason, meta.get("name"), exc_info=True)
            return
        if len(self._seen) > 50_000:
            self._seen.clear()
        self._seen[fold] = name


@dataclass
class Context:
    """Everything a handler may touch, for one simulated cluster."""

    store: ObjectStore
    clock: Clock
    settings: Settings
    queue: WorkQueue
    recorder: Recorder
    nodes: scheduler.NodeCache = field(default_factory=scheduler.NodeCache)
    quotas: quota_mod.QuotaTracker = field(default_factory=quota_mod.QuotaTracker)
    # owner uid -> pod name -> committed pod (read-only)
    pods_by_owner: dict[str, dict[str, Obj]] = field(default_factory=dict)
    # owner uid -> ReplicaSet name -> committed ReplicaSet
    rs_by_owner: dict[str, dict[str, Obj]] = field(default_factory=dict)
    # node name -> "ns/name" -> committed pod
    pods_by_node: dict[str, dict[str, Obj]] = field(default_factory=dict)
    unschedulable: set[Key] = field(default_factory=set)
    # named deadlines on the simulated monotonic clock (pod start, pod finish, ...)
    deadlines: dict[str, float] = field(default_factory=dict)
    cluster_name: str = "sim"
    # committed objects of the kinds the controllers handle, kept by the listener (read-only)
    objects: dict[tuple[ResourceType, str, str], dict[str, Any]] = field(default_factory=dict)
    # namespace -> pods held back by a missing ConfigMap, Secret or ServiceAccount
    # (`pod_deps`): reconciled again when one of those kinds changes in their namespace
    waiting: dict[str, set[str]] = field(default_factory=dict)

    def peek(self, rt: ResourceType, ns: str | None, name: str) -> dict[str, Any] | None:
        """The committed object, without the copy `store.get` makes: never mutate it."""
        return self.objects.get((rt, ns or "", name))

    def fetch(self, rt: ResourceType, ns: str | None, name: str) -> dict[str, Any]:
        obj = self.peek(rt, ns, name)
        if obj is None:
            raise LookupError(f"{rt.plural} {ns}/{name} vanished")
        return obj

    def owned_pods(self, owner: Obj) -> list[Obj]:
        return list(self.pods_by_owner.get(owner["metadata"]["uid"], {}).values())

    def now(self) -> str:
        return rfc3339(self.clock)


def pod_active(pod: Obj) -> bool:
    """Counts toward a controller's replicas: not finished and not being deleted."""
    return not scheduler.is_terminal(pod) and not pod["metadata"].get("deletionTimestamp")


def pod_ready(pod: Obj) -> bool:
    cond = condition(pod, "Ready")
    return cond is not None and cond.get("status") == "True"


def create_pod(
    ctx: Context,
    owner: Obj,
    template: Obj,
    *,
    name: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Create a pod from `template` owned by `owner`, through admission (quota may refuse).

    Without `name` the pod gets `<owner>-<5 chars>` like ReplicaSet and Job pods.
    """
    meta_t = template.get("metadata") or {}
    om = owner["metadata"]
    meta: dict[str, Any] = {
        "namespace": om.get("namespace", "default"),
        "labels": {**(meta_t.get("labels") or {}), **(labels or {})},
        "annotations": {**(meta_t.get("annotations") or {}), **(annotations or {})},
        "ownerReferences": [
            {
                "apiVersion": owner.get("apiVersion", ""),
                "kind": owner.get("kind", ""),
                "name": om["name"],
                "uid": om["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if not meta["annotations"]:
        del meta["annotations"]
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = f"{om['name']}-"
    body = {"metadata": meta, "spec": json.loads(json.dumps(template.get("spec") or {}))}
    return ctx.store.create(POD, body)


def set_condition(
    conds: list[dict[str, Any]], new: dict[str, Any], *, now: str, progress: bool = True
) -> list[dict[str, Any]]:
    """Replace the condition of the same type, keeping lastTransitionTime if status holds.

    `lastUpdateTime` moves only when the reason changes or `progress` says something moved.
    """
    old = next((c for c in conds if c.get("type") == new["type"]), None)
    cond = dict(new)
    same = old is not None and old.get("status") == new["status"]
    cond["lastTransitionTime"] = (old or {}).get("lastTransitionTime", now) if same else now
    if "lastUpdateTime" in new:
        keep = same and (old or {}).get("reason") == new.get("reason") and not progress
        cond["lastUpdateTime"] = (old or {}).get("lastUpdateTime", now) if keep else now
    if old is None:
        return [*conds, cond]
    return [cond if c is old else c for c in conds]


def write_status(ctx: Context, rt: ResourceType, obj: Obj, status: dict[str, Any]) -> None:
    """Write `.status` through the status subresource unless it is already that."""
    if obj.get("status") == status:
        return
    ctx.store.update(rt, {**obj, "status": status}, subresource="status")


def creation_paused(ctx: Context, owner: Obj, key: Key) -> bool:
    """True while `owner` is backing off after a refused pod creation (re-arms the retry).

    Without this a controller would retry on its own status write and spin on a full quota.
    """
    until = ctx.deadlines.get(f"backoff/{owner['metadata']['uid']}")
    now = ctx.clock.monotonic()
    if until is None or now >= until:
        return False
    ctx.queue.add_after(key, until - now)
    return True


def back_off(ctx: Context, owner: Obj, key: Key) -> None:
    """Record a refused creation: no new attempt for `retry_seconds`."""
    delay = ctx.settings.retry_seconds
    ctx.deadlines[f"backoff/{owner['metadata']['uid']}"] = ctx.clock.monotonic() + delay
    ctx.queue.add_after(key, delay)
