"""The health of one member as a pure state machine over probe results.

Fed by the monitor with each probe's `Readiness` and the time it finished; feeds the
Ready condition in ClusterStatus (and through it failover's taints). Pure: time comes in
as arguments (`now` monotonic seconds for durations, `wall` for the condition's
timestamps), so the thresholds are tested without waiting.

Why count from the first failure: a member failing every probe must turn NotReady after
`failure_threshold` seconds however slow or fast each failing probe is, and a single good
probe in between starts the count again (kueue's `connectionState`). Turning Ready again
takes `success_threshold` seconds of good probes, from the first, and a failure in between
starts that count again too, so a flapping member is not trusted on its first good answer
(Karmada's `--cluster-success-threshold`): each return would lift its taints and move its
share of services back, only to move it away at the next outage. A member never judged
(Unknown) is Ready at its first good probe, as Karmada takes a new cluster's first
condition: it holds no work to move. Before any verdict the condition is Unknown; once a
probe has failed, its reason and message are the last failure's (still Unknown until the
threshold), because "no probe has finished yet" on a member refused for 20 s told
whoever had just joined it that the controller had not looked.

Why the run's start is kept as `failing` (stored in ClusterStatus as `probeFailures`): a
new leader (or a new connection to the member) starts with the stored one and, at its
own first failed probe, counts from it, so a handover does not restart the threshold. It
trusts the record only that far: a first probe that succeeds drops it, and one older than
`RESUMABLE` thresholds when the first failure comes (a controller down for long, a run
that ended unwritten) starts a new run, as it tells nothing of the time between.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, replace
from typing import Literal

from clusters.member import Readiness
from federation.settings import MonitorSettings
from policies.models.cluster import Condition, ProbeFailures

__all__ = ["RESUMABLE", "Health", "observe"]

RESUMABLE = 2.0
"""How many failure thresholds old a stored run may be, at the first failed probe after a
resume, to be counted from: a run under the threshold when the leader went, plus a
handover (the lease TTL, 15 s by default) and a probe period, fits within two."""

Status = Literal["True", "False", "Unknown"]


@dataclass(frozen=True, slots=True)
class Health:
    """What we believe about one member, and the evidence that may change it."""

    status: Status = "Unknown"
    reason: str = "NotProbed"
    message: str = "no probe has finished yet"
    since: _dt.datetime | None = None
    first_failure: float | None = None
    failures: int = 0
    successes: int = 0
    first_success: float | None = None
    last_probe: _dt.datetime | None = None
    last_success: _dt.datetime | None = None
    last_error: str = ""
    failing: ProbeFailures | None = None
    """The current run of failed probes (wall time of its first failure, why), or one
    resumed from the stored status and not yet confirmed by a failed probe."""

    def condition(self, *, created: _dt.datetime) -> Condition:
        """The Ready condition for ClusterStatus."""
        return Condition(
            type="Ready",
            status=self.status,
            reason=self.reason,
            message=self.message,
            last_transition_time=self.since or created,
            last_probe_time=self.last_probe,
        )

    def failing_for(self, now: float) -> float:
        """Seconds since the first failure of the current run (0 when healthy)."""
        return 0.0 if self.first_failure is None else max(0.0, now - self.first_failure)


def _flip(health: Health, status: Status, reason: str, message: str, wall: _dt.datetime) -> Health:
    since = wall if status != health.status else health.since
    return replace(health, status=status, reason=reason, message=message, since=since)


def observe(
    health: Health,
    result: Readiness,
    *,
    now: float,
    wall: _dt.datetime,
    settings: MonitorSettings,
) -> Health:
    """The health after one probe that finished at `now` (monotonic) / `wall` (UTC)."""
    if result.ok:
        good_since = health.first_success if health.first_success is not None else now
        health = replace(
            health,
            first_failure=None,
            failing=None,
            failures=0,
            successes=health.successes + 1,
            first_success=good_since,
            last_probe=wall,
            last_success=wall,
        )
        trusted = health.status == "Unknown" or now - good_since >= settings.success_threshold
        if health.status != "True" and trusted:
            return _flip(health, "True", "ClusterReady", f"member answers: {result.message}", wall)
        return health
    first, failing = health.first_failure, health.failing
    if first is None:
        first, failing = _start(failing, result, now=now, wall=wall, settings=settings)
    health = replace(
        health,
        first_failure=first,
        failing=failing,
        failures=health.failures + 1,
        successes=0,
        first_success=None,
        last_probe=wall,
        last_error=result.message,
    )
    if now - first < settings.failure_threshold:
        if health.status == "Unknown":
            message = f"probes failing, not Ready yet: {result.message}"
            return replace(health, reason=result.reason, message=message)
        return health
    if health.status == "False" and health.reason == result.reason:
        return health  # still down for the same reason: keep the message stable (no writes)
    return _flip(health, "False", result.reason, result.message, wall)


def _start(
    resumed: ProbeFailures | None,
    result: Readiness,
    *,
    now: float,
    wall: _dt.datetime,
    settings: MonitorSettings,
) -> tuple[float, ProbeFailures]:
    """Where a run that this failure begins or continues starts: at the `resumed` one's
    first failure when it is recent enough to be the same run, else now."""
    if resumed is not None:
        age = (wall - resumed.since).total_seconds()
        if 0 <= age <= RESUMABLE * settings.failure_threshold:
            return now - age, resumed
    return now, ProbeFailures(since=wall, reason=result.reason, message=result.message)
