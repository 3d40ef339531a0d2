"""Eviction: which placements a NoExecute taint removes, when, and how fast.

Fed by a Binding's target clusters, every cluster's effective taints (the user's spec
taints and those failover applied), the workload's `clusterTolerations` and `now`; feeds the
failover controller, which writes the amended Binding (the cluster moved from
`spec.clusters` into `spec.eviction_tasks`, status Pending so the scheduler re-places the
replicas). Pure, apart from the rate limiter's own token count.

Why tolerations decide "now or later": a workload tolerating a NoExecute taint for
`tolerationSeconds` stays that long after the taint's `time_added`, one tolerating it
without seconds stays for good, one not tolerating it leaves at once (Karmada's taint
manager). Why a limiter that slows down: when most of the fleet looks unhealthy at once the
likeliest cause is the controller's own network, and evicting everything would empty the
fleet for a blip; past `unhealthy_threshold` the rate drops to `secondary_eviction_rate`.
When no member is Ready at all, failover's own taints do not evict in the first place
(`taints.fully_disrupted`), whatever this limiter allows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from policies.models.binding import Binding, EvictionTask, hourly_total
from policies.models.cluster import Taint
from policies.models.common import Toleration

__all__ = [
    "RE_PLACING",
    "Decision",
    "RateLimiter",
    "evict",
    "evicts",
    "judge",
    "never_evicted",
    "normalise_purge_mode",
]

RE_PLACING = "; re-placing"
"""How the reason an eviction leaves on a Binding ends, until the scheduler writes its own:
a drill tells the two apart, as only the scheduler's says why the workload is not placed."""


@dataclass(frozen=True, slots=True)
class Decision:
    """One target cluster's fate: evict at `at` (now or later), with the taint that says so."""

    cluster: str
    at: dt.datetime
    reason: str

    def due(self, now: dt.datetime) -> bool:
        return self.at <= now


def _deadline(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], *, now: dt.datetime
) -> tuple[dt.datetime, str] | None:
    """The earliest moment a NoExecute taint evicts, and why; None when none ever does."""
    best: tuple[dt.datetime, str] | None = None
    for taint in taints:
        if taint.effect != "NoExecute":
            continue
        tol = taint.tolerated_by(tolerations)
        shown = f"{taint.key}={taint.value}" if taint.value else taint.key
        if tol is None:
            candidate = (now, f"untolerated taint {shown}:NoExecute")
        elif tol.toleration_seconds is None:
            continue
        else:
            since = taint.time_added or now
            try:
                at = since + dt.timedelta(seconds=max(0, tol.toleration_seconds))
            except OverflowError:
                # Past year 9999 (a "forever" of int64 seconds, as Kubernetes allows, or
                # a taint added in year 9999): tolerated for good, as Kubernetes reads it.
                continue
            candidate = (at, f"taint {shown}:NoExecute tolerated for {tol.toleration_seconds}s")
        if best is None or candidate[0] < best[0]:
            best = candidate
    return best


def evicts(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    """Whether a cluster with `taints` evicts a workload with `tolerations`, now or later."""
    return any(t.evicts(tolerations) for t in taints)


def never_evicted(binding: Binding) -> bool:
    """Whether the workload is a Namespace, which no taint evicts.

    Deleting a namespace on a member deletes everything in it: the copies of workloads
    that tolerate the taint and stay, and whatever other teams keep there. A taint drill
    on the demo deleted `web` on its member and created it again seconds later. Karmada
    sends namespaces to every member whatever its taints, and a namespace holds no pods,
    so moving it gains nothing. It leaves a member that is unjoined (failover's
    `_off_leaving`)."""
    workload = binding.spec.workload
    return workload.kind == "Namespace" and workload.api_version == "v1"


def judge(
    binding: Binding,
    taints: Mapping[str, Sequence[Taint]],
    tolerations: Sequence[Toleration],
    *,
    now: dt.datetime,
) -> list[Decision]:
    """For each target cluster under a NoExecute taint it does not tolerate for good."""
    if never_evicted(binding):
        return []
    out = []
    for target in binding.spec.clusters:
        found = _deadline(taints.get(target.name, ()), tolerations, now=now)
        if found is not None:
            out.append(Decision(target.name, found[0], found[1]))
    return out


_PURGE_MODES = {"Immediately": "Directly", "Graciously": "Gracefully"}


def normalise_purge_mode(mode: str) -> str:
    """Karmada's old spellings to the new ones (Immediately → Directly, Graciously →
    Gracefully); the rest unchanged."""
    return _PURGE_MODES.get(mode, mode)


def evict(
    binding: Binding,
    cluster: str,
    *,
    now: dt.datetime,
    reason: str,
    purge_mode: str = "Gracefully",
    application: bool = False,
    grace_period_seconds: int | None = None,
) -> Binding:
    """`binding` with `cluster` moved from its targets into an eviction task.

    The Binding turns Pending with a reason naming the eviction, which is what the
    scheduler re-places; the task stays until `graceful.judge` drops it, and while it
    exists the scheduler must not place replicas back onto `cluster`.
    """
    target = next((t for t in binding.spec.clusters if t.name == cluster), None)
    if target is None:
        return binding
    task = EvictionTask(
        cluster=cluster,
        reason=reason,
        creation_time=now,
        replicas=target.replicas,
        purge_mode=normalise_purge_mode(purge_mode),
        producer="ApplicationFailover" if application else "",
        grace_period_seconds=grace_period_seconds,
    )
    tasks = [t for t in binding.spec.eviction_tasks if t.cluster != cluster]
    left = [t for t in binding.spec.clusters if t.name != cluster]
    spec = binding.spec.model_copy(
        update={
            "clusters": left,
            "eviction_tasks": [*tasks, task],
            "hourly_cost": hourly_total(left),
        }
    )
    status = binding.status.model_copy(
        update={"phase": "Pending", "reason": f"Evicted from {cluster}: {reason}{RE_PLACING}"}
    )
    return binding.model_copy(update={"spec": spec, "status": status})


class RateLimiter:
    """A token bucket whose rate drops when a large share of the fleet is unhealthy.

    Time comes in as `now` (monotonic seconds) so tests drive it; one token per eviction.
    A healthy fleet may spend a burst of `burst` tokens at once (one member's workloads
    move together); at the secondary rate the bucket holds a single token, so a blip that
    makes most of the fleet look down cannot spend a stored burst.
    """

    def __init__(
        self,
        *,
        rate: float,
        secondary_rate: float,
        unhealthy_threshold: float,
        now: float,
        burst: float | None = None,
    ) -> None:
        self.rate = rate
        self.secondary_rate = secondary_rate
        self.unhealthy_threshold = unhealthy_threshold
        self.burst = max(1.0, burst if burst is not None else rate)
        self._tokens = self.burst
        self._last = now
        self.current_rate = rate

    def set_health(self, *, unhealthy: int, total: int) -> float:
        """Pick the rate for this fleet health; returns it."""
        fraction = unhealthy / total if total else 0.0
        slow = total > 0 and fraction > self.unhealthy_threshold
        self.current_rate = self.secondary_rate if slow else self.rate
        if slow:
            self._tokens = min(self._tokens, 1.0)
        return self.current_rate

    @property
    def _cap(self) -> float:
        return self.burst if self.current_rate == self.rate else 1.0

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._tokens = min(self._cap, self._tokens + elapsed * self.current_rate)

    def try_acquire(self, now: float) -> bool:
        """Take a token if one is there."""
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def wait_time(self, now: float) -> float:
        """Seconds until a token will be there (inf when the rate is zero)."""
        self._refill(now)
        if self._tokens >= 1.0:
            return 0.0
        if self.current_rate <= 0:
            return float("inf")
        return (1.0 - self._tokens) / self.current_rate
