"""The health state machine: thresholds count from the first failure, recovery from the
first good probe, and a probe of the other kind in between starts either count again."""

from __future__ import annotations

import datetime as _dt

import pytest

from clusters.member import Readiness
from federation.monitor import probe
from federation.settings import MonitorSettings
from policies.models.cluster import ProbeFailures

T0 = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
OK = Readiness(True, "ProbeSucceeded", "readyz ok")
REFUSED = Readiness(False, "ConnectionRefused", "connection refused by http://127.0.0.1:1")
ERROR500 = Readiness(False, "ReadyzFailed", "readyz returned 500")
SETTINGS = MonitorSettings(probe_period=10, failure_threshold=30, success_threshold=20)


def run(
    results: list[tuple[float, Readiness]],
    start: probe.Health | None = None,
    *,
    settings: MonitorSettings = SETTINGS,
) -> probe.Health:
    health = start or probe.Health()
    for at, result in results:
        health = probe.observe(
            health,
            result,
            now=at,
            wall=T0 + _dt.timedelta(seconds=at),
            settings=settings,
        )
    return health


@pytest.mark.parametrize(
    ("results", "status", "reason"),
    [
        pytest.param([], "Unknown", "NotProbed", id="nothing probed yet"),
        pytest.param(
            [(0, OK)], "True", "ClusterReady", id="a member never judged: Ready at its first answer"
        ),
        pytest.param(
            [(0, OK), (10, OK), (20, REFUSED), (40, REFUSED)],
            "True",
            "ClusterReady",
            id="failing for 20s of a 30s threshold: still Ready",
        ),
        pytest.param(
            [(0, OK), (10, OK), (20, REFUSED), (50, REFUSED)],
            "False",
            "ConnectionRefused",
            id="failing for 30s from the first failure: NotReady",
        ),
        pytest.param(
            [(0, OK), (10, OK), (20, REFUSED), (40, OK), (45, REFUSED), (70, REFUSED)],
            "True",
            "ClusterReady",
            id="a success in between restarts the count",
        ),
        pytest.param(
            [(0, REFUSED), (30, REFUSED)],
            "False",
            "ConnectionRefused",
            id="never seen healthy: Unknown becomes False",
        ),
    ],
)
def test_transitions(results: list[tuple[float, Readiness]], status: str, reason: str) -> None:
    health = run(results)
    assert (health.status, health.reason) == (status, reason)


def test_not_ready_carries_the_message_and_when_it_turned() -> None:
    health = run([(0, OK), (10, OK), (20, REFUSED), (50, REFUSED)])
    cond = health.condition(created=T0)
    assert cond.status == "False"
    assert cond.message == "connection refused by http://127.0.0.1:1"
    assert cond.last_transition_time == T0 + _dt.timedelta(seconds=50)
    assert health.failing_for(55) == 35


def test_recovery_needs_the_success_threshold_of_good_probes() -> None:
    down = run([(0, REFUSED), (30, REFUSED)])
    answering = run([(40, OK), (42, OK), (50, OK), (58, OK)], start=down)
    assert (answering.status, answering.reason, answering.since) == (
        "False",
        "ConnectionRefused",
        down.since,
    ), "18 s of good probes of a 20 s threshold: not trusted yet"
    back = run([(60, OK)], start=answering)
    assert (back.status, back.reason) == ("True", "ClusterReady")
    assert back.since == T0 + _dt.timedelta(seconds=60)


def test_a_failure_while_coming_back_starts_the_count_again_and_keeps_it_not_ready() -> None:
    """A flapping member: 15 s up, a refused probe, 15 s up again. Trusted on its first
    answer, it had its taints lifted and its work moved back at every return."""
    down = run([(0, REFUSED), (30, REFUSED)])
    flapped = run([(40, OK), (55, OK), (56, REFUSED), (60, OK), (75, OK)], start=down)
    assert (flapped.status, flapped.reason, flapped.message, flapped.since) == (
        "False",
        "ConnectionRefused",
        down.message,
        down.since,
    ), "still NotReady since the first outage: the eviction grace is not restarted"
    back = run([(80, OK)], start=flapped)
    assert (back.status, back.since) == ("True", T0 + _dt.timedelta(seconds=80))


def test_a_zero_success_threshold_trusts_the_first_good_probe() -> None:
    at_once = SETTINGS.model_copy(update={"success_threshold": 0})
    back = run([(0, REFUSED), (30, REFUSED), (40, OK)], settings=at_once)
    assert (back.status, back.since) == ("True", T0 + _dt.timedelta(seconds=40))


def test_new_reason_while_down_is_reported_but_same_reason_keeps_the_message() -> None:
    down = run([(0, REFUSED), (30, REFUSED)])
    same = run([(40, REFUSED)], start=down)
    assert same == probe.observe(
        down, REFUSED, now=40, wall=T0 + _dt.timedelta(seconds=40), settings=SETTINGS
    )
    assert (same.reason, same.since) == (down.reason, down.since)
    other = run([(50, ERROR500)], start=same)
    assert (other.status, other.reason, other.message) == (
        "False",
        "ReadyzFailed",
        "readyz returned 500",
    )
    assert other.since == down.since  # still False: the transition time does not move


def test_a_new_member_failing_its_probes_says_why_while_still_unknown() -> None:
    """A member refused from the start said "NotProbed: no probe has finished yet" for
    the whole failure threshold, as if the controller had not looked."""
    health = run([(0, REFUSED), (10, REFUSED)])
    assert (health.status, health.reason) == ("Unknown", "ConnectionRefused")
    assert health.message == f"probes failing, not Ready yet: {REFUSED.message}"
    assert health.since is None, "still Unknown since the start"
    ready = run([(0, OK), (20, REFUSED)])
    assert (ready.status, ready.reason) == ("True", "ClusterReady"), "Ready holds its reason"


def resumed(failing_since: float) -> probe.Health:
    """What a new leader starts from: Ready, in a run of failures stored by its predecessor."""
    since = T0 + _dt.timedelta(seconds=failing_since)
    stored = ProbeFailures(since=since, reason=REFUSED.reason, message=REFUSED.message)
    return probe.Health(status="True", reason="ClusterReady", message="ok", failing=stored)


@pytest.mark.parametrize(
    ("results", "status"),
    [
        pytest.param([], "True", id="nothing acts before a probe of its own"),
        pytest.param(
            [(100, REFUSED)], "False", id="its own first failure, 30 s after the stored one"
        ),
        pytest.param([(90, REFUSED)], "True", id="20 s after the stored one: not yet"),
        pytest.param(
            [(90, REFUSED), (100, REFUSED)], "False", id="the stored deadline, not its own"
        ),
        pytest.param(
            [(90, OK), (100, REFUSED), (125, REFUSED)],
            "True",
            id="a first probe that succeeds drops the stored run",
        ),
        pytest.param([(200, REFUSED)], "True", id="a run stored long before is not resumed"),
        pytest.param([(200, REFUSED), (230, REFUSED)], "False", id="its own run counts instead"),
    ],
)
def test_a_stored_run_of_failures_is_resumed_only_once_a_probe_fails_and_while_recent(
    results: list[tuple[float, Readiness]], status: str
) -> None:
    """A new leader started the failure threshold again, so a member failing through a
    handover was judged down up to a threshold late."""
    assert run(results, start=resumed(70)).status == status


def test_the_run_of_failures_is_kept_until_a_probe_succeeds() -> None:
    down = run([(0, OK), (10, OK), (20, REFUSED), (30, ERROR500), (60, REFUSED)])
    assert down.failing == ProbeFailures(
        since=T0 + _dt.timedelta(seconds=20), reason=REFUSED.reason, message=REFUSED.message
    )
    assert run([(70, OK)], start=down).failing is None
