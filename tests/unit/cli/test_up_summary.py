"""What `fedctl up` prints: the fleet it started, short at any size, and members ready
only once this run has probed them."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import pytest

from clusters.sim import kubeconfig as sim_kubeconfig
from federation.cli import up_cmd
from policies.models.cluster import ClusterStatus, Condition


def test_the_registry_summary_is_one_line_of_counts_however_many_members() -> None:
    """A key per line was one `/fedctl/clusters/NAME` line per member: 144 at 144."""
    names = [f"/fedctl/clusters/m-{i:03d}" for i in range(144)]
    names += [f"/fedctl/clusterstatus/m-{i:03d}" for i in range(144)]
    names += ["/fedctl/workloads/web/Deployment.apps/storefront", "/fedctl/leader"]
    assert up_cmd._by_prefix(names) == ("144 clusters, 144 clusterstatus, 1 leader, 1 workloads")


def test_an_empty_registry_says_so() -> None:
    assert up_cmd._by_prefix([]) == "empty"


def test_the_kubectl_hint_names_a_context_of_the_fleet_started(tmp_path: Path) -> None:
    """The hint named `us-east-a100`, which a custom profile's fleet lacks."""
    path = sim_kubeconfig.write_kubeconfig(
        tmp_path / "fleet.kubeconfig",
        {"cn-a": "https://127.0.0.1:1", "cn-b": "https://127.0.0.1:2"},
    )
    assert up_cmd._a_context(path) == "cn-a"


def test_no_kubectl_hint_without_a_readable_kubeconfig(tmp_path: Path) -> None:
    assert up_cmd._a_context(tmp_path / "missing.kubeconfig") is None


STARTED = _dt.datetime(2026, 12, 7, 19, 0, tzinfo=_dt.UTC)


def _status(probed: _dt.datetime | None, *, ready: str = "True") -> ClusterStatus:
    return ClusterStatus(
        conditions=[
            Condition(
                type="Ready",
                status=ready,  # type: ignore[arg-type]
                reason="ClusterReady",
                last_transition_time=STARTED - _dt.timedelta(days=3),
                last_probe_time=probed,
            )
        ]
    )


@pytest.mark.parametrize(
    ("status", "why"),
    [
        pytest.param(
            _status(STARTED - _dt.timedelta(hours=2)),
            "not probed yet by this controller",
            id="Ready from a restored registry, probed before this start: not ready",
        ),
        pytest.param(_status(None), "not probed yet by this controller", id="Ready never probed"),
        pytest.param(
            _status(STARTED + _dt.timedelta(seconds=2), ready="False"),
            "Ready=False: ClusterReady",
            id="probed since, not Ready",
        ),
        pytest.param(_status(STARTED + _dt.timedelta(seconds=2)), None, id="probed since, Ready"),
        pytest.param(None, "no status yet", id="no status"),
    ],
)
def test_a_member_counts_as_ready_only_as_probed_since_this_start(
    status: ClusterStatus | None, why: str | None
) -> None:
    """With a registry from elsewhere `fedctl up` said "8/8 members ready (0.0s)" from
    Ready conditions written for another fleet, before probing any of its own."""
    assert up_cmd._why_not_ready(status, since=STARTED) == why
