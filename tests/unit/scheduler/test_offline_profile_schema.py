"""`fedctl plan --clusters PROFILE` reads simulator profiles with a schema of its own
(`scheduler.offline`: the layering keeps `federation` from importing `clusters.sim`). These
tests hold the two schemas to the same fields and defaults, and every shipped profile to
the same fleet, so a field added to one and not the other fails here rather than in a
user's plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from clusters.sim import profile as sim
from federation.scheduler import offline

PAIRS: list[tuple[type[BaseModel], type[BaseModel]]] = [
    (offline._Taint, sim.Taint),
    (offline._Accelerator, sim.Accelerator),
    (offline._NodePool, sim.NodePool),
    (offline._PriceSheet, sim.PriceSheet),
    (offline._Prices, sim.Prices),
    (offline._Template, sim.ClusterTemplate),
    (offline._Entry, sim.ClusterProfile),
    (offline._Region, sim.RegionSpec),
    (offline._Generator, sim.Generator),
    (offline._Profile, sim.Profile),
]
PROFILES = sorted((Path(__file__).resolve().parents[3] / "clusters/sim/profiles").glob("*.yaml"))


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """Wire name -> default as a plain value (None when required)."""
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        wire = info.alias or (model.model_config.get("alias_generator") or (lambda n: n))(name)
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        out[str(wire)] = str(default) if default is not None else None
    return out


@pytest.mark.parametrize(("ours", "theirs"), PAIRS, ids=lambda m: m.__name__)
def test_the_offline_schema_has_the_simulators_fields_and_defaults(
    ours: type[BaseModel], theirs: type[BaseModel]
) -> None:
    mine, sims = _fields(ours), _fields(theirs)
    assert sorted(mine) == sorted(sims)
    # Collections differ in type (list here, tuple there); scalars must agree, quantities
    # by value (parsed here, kept as text there).
    for key, value in sims.items():
        if value is None or value.startswith(("(", "[", "{")):
            continue
        assert mine[key] == value or mine[key] == str(offline.parse_quantity(value)), key


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_every_shipped_profile_is_the_same_fleet_offline(path: Path) -> None:
    simulated = sim.load(path).expanded()
    planned = offline.load(path)
    assert [(c.name, c.region, c.zone) for c in simulated] == [
        (c.name, c.spec.region, c.spec.zone) for c in planned
    ]
    for member, cluster in zip(simulated, planned, strict=True):
        assert cluster.status is not None
        assert sum(f.node_count for f in cluster.status.flavors) == member.node_count, member.name
