"""Offline fleet: a simulator profile YAML read into Cluster + ClusterStatus, for `fedctl plan`.

Fed by a profile file (format of `clusters/sim/profiles/*.yaml`: explicit `clusters` and
`generate` blocks with node pools and prices); feeds `plan` and the benchmarks. The
controller package must not import the simulator (layering), so the profile schema is
restated here, as strict as the simulator's own: unknown keys are refused, quantities must
parse and be non-negative. Every cluster is taken as Ready and empty.

Why the YAML goes through `policies.loading`: a profile error must read like a policy
error, `FILE:LINE:COL: clusters[0].nodePools: unknown field 'nodePool' (did you mean
'nodePools'?)`; the loader's reader keeps every field's position and its wording turns
pydantic errors into such findings. Bad input raises `errors.Invalid` carrying them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from federation import errors
from federation.resources import Quantity, ResourceList, normalise_name, parse_quantity
from policies.loading import Finding, SourceMap, validation
from policies.loading import source as yaml_source
from policies.models.accelerator import ChipModel
from policies.models.base import FrozenModel, ObjectMeta
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
from policies.models.common import RuleError
from policies.models.rules import Labels

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
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_NOT_A_PROFILE = (
    ": give workload and policy files with -f, and a simulator profile (like"
    " clusters/sim/profiles/demo.yaml) with --clusters"
)
_Price = Annotated[Decimal, Field(ge=0)]


# --------------------------------------------------------------------------- schema


class _Taint(FrozenModel):
    key: str = Field(min_length=1, max_length=316)
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class _Accelerator(FrozenModel):
    model: ChipModel
    resource_name: str
    count_per_node: int = Field(gt=0)
    product: str = ""

    @field_validator("resource_name")
    @classmethod
    def _extended(cls, value: str) -> str:
        if "/" not in value or value.startswith("kubernetes.io/"):
            raise ValueError("an accelerator must be an extended resource like nvidia.com/gpu")
        return normalise_name(value)


class _NodePool(FrozenModel):
    name: str = "pool"
    count: int = Field(ge=0)
    arch: Literal["amd64", "arm64"] = "amd64"
    instance_type: str = ""
    capacity_type: Literal["on-demand", "spot"] = "on-demand"
    cpu: Quantity = parse_quantity("8")
    memory: Quantity = parse_quantity("32Gi")
    pods: int = Field(110, gt=0)
    accelerators: list[_Accelerator] = Field(default_factory=list)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[_Taint] = Field(default_factory=list)


class _PriceSheet(FrozenModel):
    cpu_core_hour: _Price
    memory_gib_hour: _Price = Field(alias="memoryGiBHour")
    accelerator_hour: dict[ChipModel, _Price] = Field(default_factory=dict)

    def table(self) -> PriceTable:
        return PriceTable(
            cpu=self.cpu_core_hour, memory=self.memory_gib_hour, accelerators=self.accelerator_hour
        )


class _Prices(FrozenModel):
    currency: str = "USD"
    on_demand: _PriceSheet
    spot: _PriceSheet | None = None

    @field_validator("currency")
    @classmethod
    def _iso(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Z]{3}", value):
            raise ValueError(f"invalid currency {value!r}: expected a code like USD, EUR, CNY")
        return value


class _Template(FrozenModel):
    """A cluster without name and place (a `generate` template)."""

    provider: str = "sim"
    labels: Labels = Field(default_factory=dict)
    kubernetes_version: str = "v1.32.0"
    node_pools: list[_NodePool] = Field(default_factory=list)
    taints: list[_Taint] = Field(default_factory=list)
    prices: _Prices | None = None

    @field_validator("kubernetes_version")
    @classmethod
    def _version(cls, value: str) -> str:
        if not re.match(r"v\d+\.\d+\.\d+", value):
            raise ValueError(f"invalid kubernetesVersion {value!r}: expected one like v1.32.0")
        return value

    @model_validator(mode="after")
    def _unique_pools(self) -> _Template:
        seen: set[str] = set()
        for index, pool in enumerate(self.node_pools):
            if pool.name in seen:
                raise RuleError(
                    f"node pool {pool.name!r} is defined twice", at=("nodePools", index, "name")
                )
            seen.add(pool.name)
        return self


class _Entry(_Template):
    name: str
    region: str = Field(min_length=1)
    zone: str = ""

    @field_validator("name")
    @classmethod
    def _label(cls, value: str) -> str:
        if not _DNS_LABEL.fullmatch(value):
            raise ValueError(
                f"invalid cluster name {value!r}: use at most 63 lower-case letters, digits"
                " and '-', starting and ending with a letter or digit"
            )
        return value


class _Region(FrozenModel):
    region: str = Field(min_length=1)
    zones: list[str] = Field(default_factory=list)
    provider: str | None = None


class _Generator(FrozenModel):
    name_prefix: str
    count: int = Field(gt=0, le=10_000)
    regions: list[_Region] = Field(min_length=1)
    templates: list[_Template] = Field(min_length=1)

    @field_validator("name_prefix")
    @classmethod
    def _label(cls, value: str) -> str:
        if not _DNS_LABEL.fullmatch(f"{value}-000"):
            raise ValueError(
                f"invalid namePrefix {value!r}: clusters are named <namePrefix>-000, which"
                " must be at most 63 lower-case letters, digits and '-'"
            )
        return value

    def expand(self) -> list[_Entry]:
        out = []
        for index in range(self.count):
            template = self.templates[index % len(self.templates)]
            where = self.regions[index % len(self.regions)]
            zones = where.zones
            zone = zones[(index // len(self.regions)) % len(zones)] if zones else ""
            fields = {**template.model_dump(), "provider": where.provider or template.provider}
            name = f"{self.name_prefix}-{index:03d}"
            out.append(_Entry(**fields, name=name, region=where.region, zone=zone))
        return out


class _Profile(FrozenModel):
    clusters: list[_Entry] = Field(default_factory=list)
    generate: list[_Generator] = Field(default_factory=list)

    @model_validator(mode="after")
    def _names(self) -> _Profile:
        seen: set[str] = set()
        for index, entry in enumerate(self.clusters):
            if entry.name in seen:
                message = f"cluster {entry.name!r} is defined twice"
                raise RuleError(message, at=("clusters", index, "name"))
            seen.add(entry.name)
        for index, gen in enumerate(self.generate):
            names = {f"{gen.name_prefix}-{i:03d}" for i in range(gen.count)}
            if names & seen:
                message = f"generated cluster {min(names & seen)!r} is defined twice"
                raise RuleError(message, at=("generate", index, "namePrefix"))
            seen |= names
        if not seen:
            raise RuleError("a profile needs at least one cluster (clusters or generate)")
        return self


# --------------------------------------------------------------------------- reading


def load(path: str | Path) -> list[Cluster]:
    """The fleet in a profile file. Bad input raises `errors.Invalid` with one finding per
    problem, each naming the file, line and field."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise _invalid(name, [Finding(name, 0, 0, "", f"cannot read: {reason}")]) from exc
    docs, found = yaml_source.parse_documents(text, filename=name)
    if not docs and not found:
        found = [Finding(name, 1, 1, "", "file is empty: no YAML documents")]
    found = found or _not_a_profile(docs, filename=name)
    if found:
        raise _invalid(name, found)
    return fleet(docs[0].data, source=docs[0].source, filename=name)


def fleet(
    data: Any, *, source: SourceMap | None = None, filename: str = "<profile>"
) -> list[Cluster]:
    """Clusters (status joined) from already-loaded profile data; `source` places findings
    on lines (without it they name only the field)."""
    try:
        profile = _Profile.model_validate(data)
    except ValidationError as exc:
        found = validation.findings_from_error(
            exc, model=_Profile, data=data, source=source or SourceMap(), filename=filename
        )
        raise _invalid(filename, found) from None
    entries = [*profile.clusters, *(e for gen in profile.generate for e in gen.expand())]
    return [_cluster(entry) for entry in entries]


def _not_a_profile(docs: Sequence[yaml_source.ParsedDocument], *, filename: str) -> list[Finding]:
    """A workload or policy file given as the profile: say so, not what its fields lack."""
    if len(docs) > 1:
        message = f"a cluster profile is one YAML document, this file has {len(docs)}"
        return [Finding(filename, docs[1].line, 1, "", message + _NOT_A_PROFILE)]
    data = docs[0].data
    if isinstance(data, Mapping) and "kind" in data:
        line, col = docs[0].source.locate(("kind",))
        message = f"a {data['kind']} document is not a cluster profile"
        return [Finding(filename, line, col, "kind", message + _NOT_A_PROFILE)]
    return []


def _invalid(filename: str, found: Sequence[Finding]) -> errors.Invalid:
    return errors.Invalid(f"{filename}: invalid cluster profile", findings=[str(f) for f in found])


# --------------------------------------------------------------------------- building


def _flavor(pool: _NodePool) -> NodeFlavor:
    """One node of the pool (its first accelerator, if any) times its count."""
    accel = pool.accelerators[0] if pool.accelerators else None
    resources = {"cpu": pool.cpu, "memory": pool.memory, "pods": parse_quantity(pool.pods)}
    if accel is not None:
        resources[accel.resource_name] = parse_quantity(accel.count_per_node)
    one = ResourceList(resources)
    return NodeFlavor(
        arch=pool.arch,
        accelerator_model=accel.model if accel else None,
        accelerator_resource=accel.resource_name if accel else None,
        allocatable=one,
        node_count=pool.count,
        free=one.scaled(pool.count),
        largest_free=one if pool.count else ResourceList(),
    )


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


def _cluster(entry: _Entry) -> Cluster:
    flavors: list[NodeFlavor] = []
    chips: dict[str, Chip] = {}
    for pool in entry.node_pools:  # node taints are the member's business
        flavor = _flavor(pool)
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
    prices = entry.prices
    spec = ClusterSpec(
        region=entry.region,
        zone=entry.zone or None,
        provider=entry.provider,
        taints=[Taint(key=t.key, value=t.value, effect=t.effect) for t in entry.taints],
        chips=list(chips.values()),
        prices=Prices(
            currency=prices.currency,
            on_demand=prices.on_demand.table(),
            spot=prices.spot.table() if prices.spot else None,
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
    meta = ObjectMeta(name=entry.name, labels=dict(entry.labels))
    return Cluster(metadata=meta, spec=spec, status=status)
