"""A fleet of simulated member clusters in one process, started from a profile.

`fedctl sim up`, `make demo`, the integration tests and the benchmark all start members
through `SimFleet`: one `SimCluster` per profile entry, all on one simulated clock (so
`--speed` compresses time fleet-wide), each on its own loopback ports. After start it
writes one kubeconfig with a context per member and the fleet state file next to it
(`kubeconfig.py`), which is how everything else finds the members: nothing outside the
process reaches a member except over HTTP.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

from clusters.sim import kubeconfig, quantity
from clusters.sim.clock import Clock, SimClock
from clusters.sim.cluster import SimCluster
from clusters.sim.controllers_base import Settings
from clusters.sim.profile import ClusterProfile, Profile

__all__ = ["SimFleet", "capacity"]


def capacity(cluster: ClusterProfile) -> dict[str, Any]:
    """Totals of a cluster's node pools: nodes, cpu, memory and accelerators by model."""
    cpu = Fraction(0)
    memory = Fraction(0)
    chips: dict[str, int] = {}
    for pool in cluster.node_pools:
        cpu += quantity.parse(pool.cpu).value * pool.count
        memory += quantity.parse(pool.memory).value * pool.count
        for acc in pool.accelerators:
            chips[acc.model] = chips.get(acc.model, 0) + acc.count_per_node * pool.count
    return {
        "nodes": cluster.node_count,
        "cpu": str(quantity.Quantity(cpu)),
        "memory": str(quantity.Quantity(memory, quantity.BINARY_SI)),
        "accelerators": chips,
    }


class SimFleet:
    """Every member of a profile, started and stopped together."""

    def __init__(
        self,
        profile: Profile,
        *,
        speed: float = 1.0,
        clock: Clock | None = None,
        settings: Settings | None = None,
        history_limit: int = 10_000,
    ) -> None:
        self.profile = profile
        self.speed = speed
        self.clock = clock or SimClock(speed=speed)
        self.clusters: dict[str, SimCluster] = {
            c.name: SimCluster(c, clock=self.clock, settings=settings, history_limit=history_limit)
            for c in profile.expanded()
        }
        self.kubeconfig: Path | None = None

    def __iter__(self) -> Iterator[SimCluster]:
        return iter(self.clusters.values())

    def __getitem__(self, name: str) -> SimCluster:
        return self.clusters[name]

    async def start(self, *, kubeconfig_path: str | Path | None = None) -> None:
        """Start every member (in small batches, so a 100-cluster fleet starts quickly)."""
        members = list(self.clusters.values())
        for i in range(0, len(members), 16):
            await asyncio.gather(*(m.start() for m in members[i : i + 16]))
        if kubeconfig_path is not None:
            self.write(kubeconfig_path)

    async def stop(self) -> None:
        await asyncio.gather(*(m.stop() for m in self.clusters.values()), return_exceptions=True)

    def write(self, path: str | Path, *, profile_path: str | None = None) -> Path:
        """Write the kubeconfig and the fleet state file; returns the state file's path."""
        self.kubeconfig = kubeconfig.write_kubeconfig(
            path, {name: m.url for name, m in self.clusters.items()}
        )
        return kubeconfig.write_state(path, self.state(profile_path=profile_path))

    def state(self, *, profile_path: str | None = None) -> dict[str, Any]:
        clusters = {}
        for name, member in self.clusters.items():
            p = member.profile
            clusters[name] = {
                "context": name,
                "url": member.url,
                "adminUrl": member.admin_url,
                "region": p.region,
                "zone": p.zone,
                "provider": p.provider,
                "labels": p.labels,
                "kubernetesVersion": p.kubernetes_version,
                "taints": [t.model_dump() for t in p.taints],
                "prices": p.prices.model_dump(by_alias=True) if p.prices else None,
                "capacity": capacity(p),
            }
        return {
            "pid": os.getpid(),
            "speed": self.speed,
            "profile": profile_path,
            "kubeconfig": str(self.kubeconfig) if self.kubeconfig else None,
            "clusters": clusters,
        }
