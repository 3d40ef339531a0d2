"""The fleet profile: which simulated clusters exist and what hardware and prices each has.

A profile YAML (see `profiles/demo.yaml`) is read by the fleet runner, which starts one
simulated cluster per entry and seeds its nodes from the node pools. The same file is the
source of truth for the fleet state file (region, zone, provider, prices), so a demo can
register the members with the controller without repeating itself. Models are frozen and
reject unknown keys, so a typo in a profile fails loudly instead of silently simulating
a different fleet. A compact `generate:` form expands into many similar clusters for
benchmarks without a 5,000-line file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel
from ruamel.yaml import YAML

from clusters.sim import quantity

__all__ = [
    "Accelerator",
    "ClusterProfile",
    "ClusterTemplate",
    "Generator",
    "NodePool",
    "PriceSheet",
    "Prices",
    "Profile",
    "RegionSpec",
    "Taint",
    "load",
    "parse",
]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class _Model(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )


class Taint(_Model):
    """A node or cluster taint, as in `spec.taints`."""

    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Accelerator(_Model):
    """Chips on every node of a pool, exposed as an extended resource."""

    model: str = Field(description="e.g. nvidia-a100-80gb, ascend-910b")
    resource_name: str = Field(description="extended resource, e.g. nvidia.com/gpu")
    count_per_node: int = Field(gt=0)
    product: str = Field("", description="nvidia.com/gpu.product label; empty: none")

    @field_validator("resource_name")
    @classmethod
    def _qualified(cls, value: str) -> str:
        if "/" not in value or value.startswith("kubernetes.io/"):
            raise ValueError("an accelerator must be an extended resource like nvidia.com/gpu")
        return value


class NodePool(_Model):
    """`count` identical nodes."""

    name: str = "pool"
    count: int = Field(ge=0)
    arch: Literal["amd64", "arm64"] = "amd64"
    instance_type: str = ""
    capacity_type: Literal["on-demand", "spot"] = "on-demand"
    cpu: str = "8"
    memory: str = "32Gi"
    pods: int = Field(110, gt=0)
    accelerators: tuple[Accelerator, ...] = ()
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[Taint, ...] = ()

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def _quantity(cls, value: Any) -> str:
        text = str(value)
        quantity.parse(text)
        return text

    @field_validator("name")
    @classmethod
    def _dns(cls, value: str) -> str:
        if not _DNS_LABEL.match(value):
            raise ValueError(f"pool name {value!r} is not a DNS label")
        return value


class PriceSheet(_Model):
    """Hourly prices in the profile's currency."""

    cpu_core_hour: float = Field(ge=0)
    memory_gib_hour: float = Field(ge=0, alias="memoryGiBHour")
    accelerator_hour: dict[str, float] = Field(
        default_factory=dict, description="per accelerator model"
    )


class Prices(_Model):
    currency: str = "USD"
    on_demand: PriceSheet
    spot: PriceSheet | None = None


class ClusterTemplate(_Model):
    """Everything about a cluster except where it is and what it is called."""

    provider: str = "sim"
    labels: dict[str, str] = Field(default_factory=dict)
    kubernetes_version: str = "v1.32.0"
    node_pools: tuple[NodePool, ...] = ()
    taints: tuple[Taint, ...] = ()
    prices: Prices | None = None

    @field_validator("kubernetes_version")
    @classmethod
    def _version(cls, value: str) -> str:
        if not re.match(r"^v\d+\.\d+\.\d+", value):
            raise ValueError(f"kubernetesVersion {value!r} must look like v1.32.0")
        return value

    @model_validator(mode="after")
    def _unique_pools(self) -> ClusterTemplate:
        names = [p.name for p in self.node_pools]
        if len(names) != len(set(names)):
            raise ValueError(f"node pool names must be unique, got {names}")
        return self


class ClusterProfile(ClusterTemplate):
    """One simulated member cluster."""

    name: str
    region: str
    zone: str = ""

    @field_validator("name")
    @classmethod
    def _dns(cls, value: str) -> str:
        if not _DNS_LABEL.match(value):
            raise ValueError(f"cluster name {value!r} is not a DNS label")
        return value

    @property
    def node_count(self) -> int:
        return sum(p.count for p in self.node_pools)


class RegionSpec(_Model):
    region: str
    zones: tuple[str, ...] = ()
    provider: str | None = None


class Generator(_Model):
    """`count` clusters named `<namePrefix>-000`…, cycling through regions and templates."""

    name_prefix: str
    count: int = Field(gt=0, le=10_000)
    regions: tuple[RegionSpec, ...] = Field(min_length=1)
    templates: tuple[ClusterTemplate, ...] = Field(min_length=1)

    def expand(self) -> list[ClusterProfile]:
        out = []
        for index in range(self.count):
            template = self.templates[index % len(self.templates)]
            where = self.regions[index % len(self.regions)]
            zone = (
                where.zones[(index // len(self.regions)) % len(where.zones)] if where.zones else ""
            )
            fields = template.model_dump()
            if where.provider:
                fields["provider"] = where.provider
            out.append(
                ClusterProfile(
                    name=f"{self.name_prefix}-{index:03d}", region=where.region, zone=zone, **fields
                )
            )
        return out


class Profile(_Model):
    """A whole fleet: explicit clusters plus generated ones."""

    clusters: tuple[ClusterProfile, ...] = ()
    generate: tuple[Generator, ...] = ()

    @model_validator(mode="after")
    def _unique_names(self) -> Profile:
        names = [c.name for c in self.expanded()]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"cluster names must be unique, repeated: {dupes}")
        if not names:
            raise ValueError("a profile needs at least one cluster")
        return self

    def expanded(self) -> tuple[ClusterProfile, ...]:
        """Explicit clusters first, then generated ones, in file order."""
        generated = [c for g in self.generate for c in g.expand()]
        return (*self.clusters, *generated)


def parse(data: Any) -> Profile:
    """Validate already-loaded YAML or JSON data."""
    return Profile.model_validate(data)


def load(path: str | Path) -> Profile:
    """Read and validate a profile file."""
    yaml = YAML(typ="safe", pure=True)
    with Path(path).open(encoding="utf-8") as fh:
        return parse(yaml.load(fh))
