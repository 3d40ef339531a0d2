"""What `fedctl up` prints once up names the fleet it started and stays short at any size."""

from __future__ import annotations

from pathlib import Path

from clusters.sim import kubeconfig as sim_kubeconfig
from federation.cli import up_cmd


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
