"""The vector path of every plugin gives the same answers as its cluster-by-cluster path."""

from __future__ import annotations

import random

import numpy as np
import pytest

from federation.cache import snapshot as snap
from federation.quota.accounting import Usage
from federation.scheduler import framework as fw
from federation.scheduler.plugins import default_registry
from federation.settings import SchedulerSettings
from policies.models.cluster import Cluster, Taint
from tests.unit.scheduler.fleet import cluster, flavor, job, workload

SETTINGS = SchedulerSettings()
CHIPS = [("nvidia-a100-80gb", "amd64"), ("nvidia-h100-80gb", "amd64"), ("ascend-910b", "arm64")]


def random_fleet(rng: random.Random, size: int) -> list[Cluster]:
    fleet = []
    for i in range(size):
        flavors = []
        for _ in range(rng.randint(1, 4)):
            if rng.random() < 0.5:
                chip, arch = rng.choice(CHIPS)
                largest = rng.choice([None, 0, 2, 4, 8])
                flavors.append(
                    flavor(
                        chip=chip,
                        arch=arch,
                        devices=8,
                        cpu="96",
                        memory="1Ti",
                        nodes=rng.randint(1, 4),
                        largest_devices=largest,
                    )
                )
            else:
                flavors.append(
                    flavor(
                        arch=rng.choice(["amd64", "arm64"]),
                        cpu=str(rng.choice([4, 16, 64])),
                        nodes=rng.randint(1, 5),
                    )
                )
        taints = [Taint(key="t", effect="NoSchedule")] if rng.random() < 0.2 else []
        fleet.append(
            cluster(
                f"c{i:02d}",
                *flavors,
                region=rng.choice(["us", "eu"]),
                taints=taints,
                ready=rng.random() > 0.1,
            )
        )
    return fleet


WORKLOADS = [
    workload("cpu", cpu="2", replicas=3),
    workload("big-cpu", cpu="40", kind="Deployment", replicas=2),
    workload("arm", cpu="1", chips="arm64"),
    workload("gpu", gpus=8, chips="nvidia-a100-80gb,nvidia-h100-80gb"),
    workload("any-gpu", gpus=4),
    workload("npu", gpus=2, resource="huawei.com/Ascend910"),
    workload("npu-named", gpus=8, chips="ascend-910b"),
    workload("gang", gpus=2, replicas=5, chips="nvidia-h100-80gb,nvidia-a100-80gb"),
    workload("any-gang", gpus=1, replicas=9),
]


@pytest.mark.parametrize("seed", [pytest.param(s, id=f"random fleet {s}") for s in range(8)])
def test_every_filter_and_score_agrees_on_both_paths(seed: int) -> None:
    rng = random.Random(seed)
    s = snap.build(random_fleet(rng, 30))
    plugins = default_registry().build(SETTINGS)
    rows = np.arange(s.size)
    for w in WORKLOADS:
        placement = (
            {
                "clusterAffinity": {
                    "fieldSelector": {
                        "matchExpressions": [{"key": "region", "operator": "In", "values": ["us"]}]
                    }
                }
            }
            if seed % 2
            else None
        )
        state = fw.CycleState(s, Usage(), SETTINGS)
        request = fw.request_for(
            job(w, placement=placement), settings=SETTINGS, device_resources=s.device_resources
        )
        if w.metadata.name == "any-gang" and seed % 2:  # its pods' chip, chosen for 12
            request = request.with_chip_need(12)
        for _ in range(2):  # before and after some capacity is taken
            for plugin in plugins:
                if isinstance(plugin, fw.FilterPlugin) and hasattr(plugin, "mask"):
                    loop = [plugin.filter(request, c, state).ok for c in s.clusters]
                    assert plugin.mask(request, state, rows).tolist() == loop, (plugin.name, w)
                elif isinstance(plugin, fw.ScorePlugin) and hasattr(plugin, "raw_all"):
                    loop_raw = np.array([plugin.raw(request, c, state) for c in s.clusters])
                    vector_raw = plugin.raw_all(request, state, rows)
                    assert np.allclose(loop_raw, vector_raw, equal_nan=True), (plugin.name, w)
            for r in range(0, s.size, 3):
                state.take(r, 0, 1, request.vector)
