"""A chip a cluster's prices leave out is priced at its AcceleratorProfile's
`defaultPricePerHour`, as the profile promises; the whole pod was unpriced there, which
scored the cluster 0 on cost and took it out of every cost cap and budget."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from federation.cache import snapshot as snap
from federation.scheduler import plan
from policies.models.accelerator import AcceleratorProfile

PROFILE = """
clusters:
  - name: l4
    region: ap
    nodePools:
      - name: gpu
        count: 1
        arch: amd64
        cpu: "48"
        memory: 192Gi
        accelerators: [{model: nvidia-l4, resourceName: nvidia.com/gpu, countPerNode: 4}]
    prices:
      onDemand: {cpuCoreHour: 0.05, memoryGiBHour: 0.0067}
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: infer
  namespace: ml
  annotations: {fedctl.io/chips: nvidia-l4}
spec:
  template:
    spec:
      containers:
        - name: c
          resources:
            requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"}
            limits: {nvidia.com/gpu: "1"}
"""

L4 = """
apiVersion: fedctl.io/v1alpha1
kind: AcceleratorProfile
metadata: {name: nvidia-l4}
spec:
  arch: amd64
  resourceName: nvidia.com/gpu
  defaultPricePerHour: "0.85"
"""


def _plan(tmp_path: Path, *docs: str) -> plan.Planned:
    profile = tmp_path / "fleet.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    path = tmp_path / "in.yaml"
    path.write_text("\n---\n".join(docs), encoding="utf-8")
    (planned,) = plan.plan_files([path], profile=profile)
    return planned


def test_a_chip_without_a_cluster_price_costs_its_profile_default(tmp_path: Path) -> None:
    planned = _plan(tmp_path, JOB, L4)
    assert planned.plan.placement == {"l4": 1}
    # 1 core x 0.05 + 1 GiB x 0.0067 + 1 device x 0.85
    assert planned.plan.costs["l4"] == Decimal("0.9067")


def test_without_a_default_the_pod_stays_unpriced_there(tmp_path: Path) -> None:
    planned = _plan(tmp_path, JOB)
    assert planned.plan.placement == {"l4": 1}
    assert planned.plan.costs.get("l4") is None


def test_a_cluster_price_wins_over_the_default_and_spot_gets_none() -> None:
    profile = AcceleratorProfile.model_validate(
        {
            "metadata": {"name": "nvidia-l4"},
            "spec": {
                "arch": "amd64",
                "resourceName": "nvidia.com/gpu",
                "defaultPricePerHour": "0.85",
            },
        }
    )
    assert snap.device_defaults([profile, object()]) == {"nvidia-l4": Decimal("0.85")}
    from policies.models.cluster import Prices

    prices = Prices.model_validate(
        {
            "onDemand": {"cpu": "0.05", "accelerators": {"nvidia-a100-80gb": "3.1"}},
            "spot": {"cpu": "0.02"},
        }
    )
    filled = prices.with_device_defaults({"nvidia-a100-80gb": Decimal(9), "nvidia-l4": Decimal(1)})
    assert filled.on_demand.accelerators == {
        "nvidia-a100-80gb": Decimal("3.1"),
        "nvidia-l4": Decimal(1),
    }
    assert filled.spot is not None and filled.spot.accelerators == {}
