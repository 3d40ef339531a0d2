"""Offline fleet: a simulator profile YAML read into Cluster + ClusterStatus, for `fedctl plan`.

Fed by a profile file (format of `clusters/sim/profiles/*.yaml`: explicit `clusters` and
`generate` blocks with node pools and prices); feeds `plan` and the benchmarks. The
controller package must not import the simulator (layering), so the handful of fields the
scheduler needs are parsed here; every cluster is taken as Ready and empty.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from federation import errors
from federation.resources import ResourceList, parse_quantity
from policies.models.base import ObjectMeta
from policies.models.cluster import (
    APIEnablement,
    APIResource,
    Chip,
    Cluster,
    ClusterSpec,
    ClusterStatus,
    Condition,
    NodeFlavor,
    Prices,
    PriceTable,
    Taint,
)

__all__ = ["STANDARD_APIS", "fleet", "load"]

_EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
STANDARD_APIS = (
    ("apps/v1", ("Deployment", "StatefulSet", "ReplicaSet")),
    ("batch/v1", ("Job",)),
    ("v1", ("Pod", "ConfigMap", "Secret", "Service", "Namespace")),
    # Served by every simulated member (clusters/sim controllers), so `plan --clusters`
    # agrees with `plan --live` on the demo fleet.
    ("batch.volcano.sh/v1alpha1", ("Job",)),
    ("kubeflow.org/v1", ("PyTorchJob",)),
)


def load(path: str | Path) -> list[Cluster]:
    """The fleet in a profile file; `errors.Invalid` names the file and the problem."""
    try:
        data = YAML(typ="safe", pure=True).load(Path(path).read_text(encoding="utf-8"))
        return fleet(data)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise errors.Invalid(f"{path}: cannot read cluster profile: {exc}") from exc


def fleet(data: Mapping[str, Any]) -> list[Cluster]:
    """Clusters (status joined) from already-loaded profile data."""
    entries = list(data.get("clusters") or [])
    for gen in data.get("generate") or []:
        entries.extend(_expand(gen))
    return [_cluster(entry) for entry in entries]


def _expand(gen: Mapping[str, Any]) -> list[dict[str, Any]]:
    regions, templates = gen["regions"], gen["templates"]
    out = []
    for index in range(int(gen["count"])):
        template = dict(templates[index % len(templates)])
        where = regions[index % len(regions)]
        zones = where.get("zones") or []
        zone = zones[(index // len(regions)) % len(zones)] if zones else ""
        template.update(name=f"{gen['namePrefix']}-{index:03d}", region=where["region"], zone=zone)
        if where.get("provider"):
            template["provider"] = where["provider"]
        out.append(template)
    return out


def _table(sheet: Mapping[str, Any] | None) -> PriceTable | None:
    if sheet is None:
        return None
    return PriceTable(
        cpu=Decimal(str(sheet.get("cpuCoreHour", 0))),
        memory=Decimal(str(sheet.get("memoryGiBHour", 0))),
        accelerators={k: Decimal(str(v)) for k, v in (sheet.get("acceleratorHour") or {}).items()},
    )


def _flavor(pool: Mapping[str, Any]) -> tuple[NodeFlavor, list[Taint]]:
    count = int(pool.get("count", 0))
    accel = (pool.get("accelerators") or [None])[0]
    resources = {
        "cpu": parse_quantity(str(pool.get("cpu", "8"))),
        "memory": parse_quantity(str(pool.get("memory", "32Gi"))),
        "pods": parse_quantity(str(pool.get("pods", 110))),
    }
    if accel is not None:
        resources[accel["resourceName"]] = parse_quantity(str(accel["countPerNode"]))
    one = ResourceList(resources)
    flavor = NodeFlavor(
        arch=pool.get("arch", "amd64"),
        accelerator_model=accel["model"] if accel else None,
        accelerator_resource=accel["resourceName"] if accel else None,
        allocatable=one,
        node_count=count,
        free=one.scaled(count),
        largest_free=one if count else ResourceList(),
    )
    taints = [
        Taint(key=t["key"], value=t.get("value", ""), effect=t["effect"])
        for t in pool.get("taints") or []
    ]
    return flavor, taints


def _merge(flavors: Sequence[NodeFlavor]) -> list[NodeFlavor]:
    """Pools of the same shape become one flavor (the monitor summarises the same way)."""
    merged: dict[tuple[object, ...], NodeFlavor] = {}
    for f in flavors:
        key = (f.arch, f.accelerator_model, f.allocatable)
        if key in merged:
            old = merged[key]
            merged[key] = old.model_copy(
                update={"node_count": old.node_count + f.node_count, "free": old.free + f.free}
            )
        else:
            merged[key] = f
    return list(merged.values())


def _cluster(entry: Mapping[str, Any]) -> Cluster:
    flavors: list[NodeFlavor] = []
    chips: dict[str, Chip] = {}
    for pool in entry.get("nodePools") or []:
        flavor, _pool_taints = _flavor(pool)  # node taints are the member's business
        flavors.append(flavor)
        model = flavor.accelerator_model or flavor.arch
        resource = flavor.accelerator_resource
        devices = flavor.allocatable.amount(resource) // 1000 if resource else 0
        count = devices * flavor.node_count if flavor.accelerator_model else flavor.node_count
        prev = chips.get(model)
        chips[model] = Chip(
            model=model,
            arch=flavor.arch if flavor.accelerator_model else None,
            count=count + (prev.count if prev else 0),
        )
    prices = entry.get("prices")
    spec = ClusterSpec(
        region=entry["region"],
        zone=entry.get("zone") or None,
        provider=entry.get("provider") or "sim",
        taints=[
            Taint(key=t["key"], value=t.get("value", ""), effect=t["effect"])
            for t in entry.get("taints") or []
        ],
        chips=list(chips.values()),
        prices=Prices(
            currency=prices.get("currency", "USD"),
            on_demand=_table(prices["onDemand"]),
            spot=_table(prices.get("spot")),
        )
        if prices
        else None,
    )
    status = ClusterStatus(
        conditions=[Condition(type="Ready", status="True", last_transition_time=_EPOCH)],
        api_enablements=[
            APIEnablement(
                group_version=gv,
                resources=[APIResource(name=k.lower() + "s", kind=k) for k in kinds],
            )
            for gv, kinds in STANDARD_APIS
        ],
        flavors=_merge(flavors),
    )
    meta = ObjectMeta(name=entry["name"], labels=dict(entry.get("labels") or {}))
    return Cluster(metadata=meta, spec=spec, status=status)
