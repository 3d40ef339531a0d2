"""Cluster and ClusterStatus: a member cluster as the platform team declares it and as seen.

Role: `Cluster` (`fedctl.io/v1alpha1`) is what a user registers: where the cluster is
(region, zone, provider, labels), what it carries (chips: architectures and accelerator
models with counts), what it costs (prices per resource-hour, on-demand and spot), its
taints and how to reach it (kubeconfig path or inline, and context). `ClusterStatus` is what
the cluster monitor observes: conditions, Kubernetes version, served APIs and capacity
summarised per node flavor. They are stored under different registry keys (spec by the API,
status by the monitor) so a user edit never conflicts with a probe; the API joins them into
`Cluster.status` on read.

Fed by policy YAML, the REST API and the monitor; feeds the scheduler (affinity, taints,
chip match, capacity fit per node flavor, cost), the member connector and failover.
"""

from __future__ import annotations

import difflib
import io
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Literal

from pydantic import AwareDatetime, Field, ValidationInfo, model_validator
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from federation.resources import ResourceList
from policies.models import kubeconfigs
from policies.models.accelerator import Arch, ChipModel, is_arch
from policies.models.base import FrozenModel, KubeObject
from policies.models.common import Notice, RuleError, Toleration
from policies.models.rules import key_value_problems, raise_all, stored

__all__ = [
    "AWAY_TAINTS",
    "FREE_NODE_GROUPS",
    "HEALTH_TAINTS",
    "KARMADA_TAINTS",
    "NOT_READY_TAINT",
    "RECOVERING_TAINT",
    "UNREACHABLE_TAINT",
    "APIEnablement",
    "APIResource",
    "Chip",
    "Cluster",
    "ClusterSpec",
    "ClusterStatus",
    "Condition",
    "Connection",
    "FreeNodes",
    "NodeFlavor",
    "PriceTable",
    "Prices",
    "ProbeFailures",
    "ResourceTotals",
    "Taint",
]

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
CapacityType = Literal["on-demand", "spot"]
_GIB_MILLI = 1000 * 1024**3  # milli-units of memory in one GiB
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")

NOT_READY_TAINT = "cluster.fedctl.io/not-ready"
UNREACHABLE_TAINT = "cluster.fedctl.io/unreachable"
RECOVERING_TAINT = "cluster.fedctl.io/recovering"
UNJOINING_TAINT = "cluster.fedctl.io/unjoining"
"""`fedctl cluster unjoin` drains with this NoExecute taint: work moves away, and failover
also takes finished Jobs' copies off the member (elsewhere they stay where they ran)."""
KARMADA_TAINTS = {
    "cluster.karmada.io/not-ready": NOT_READY_TAINT,
    "cluster.karmada.io/unreachable": UNREACHABLE_TAINT,
}
"""Karmada's health taint keys and fedctl's equal ones: a toleration of Karmada's key
tolerates fedctl's taint. Karmada policies are accepted verbatim, and one riding out a
five-minute outage with `cluster.karmada.io/not-ready` was evicted after the grace period,
since no member carries Karmada's keys here."""
HEALTH_TAINTS = frozenset({NOT_READY_TAINT, UNREACHABLE_TAINT, RECOVERING_TAINT})
"""The taint keys failover writes from a member's health, as against a user's cordon.

Here because failover writes them and the scheduler reads them, and neither may import
the other: a Ready member still carrying one is not back yet for divided services, which
take their share there only once failover lifts it."""
AWAY_TAINTS = frozenset({UNREACHABLE_TAINT, RECOVERING_TAINT})
"""The taint keys of a member that is away: it stopped answering (`unreachable`), or it
answers again but failover has not yet purged what went stale there (`recovering`).

Why apart from `HEALTH_TAINTS`: a member that answers "not ready" can still be told to
delete a copy, one that is away cannot, so what its copies are for (kept, placed back,
deleted) is settled only when it returns (`ClusterStatus.away`)."""


class Taint(FrozenModel):
    """A cluster taint, as on a Karmada Cluster: placements must tolerate it."""

    key: str = Field(min_length=1, max_length=316, description="Taint key.")
    value: str = Field(default="", description="Taint value (may be empty).")
    effect: TaintEffect = Field(
        description="NoSchedule: no new placements. PreferNoSchedule: avoid if possible."
        " NoExecute: also evict placements that do not tolerate it."
    )
    time_added: AwareDatetime | None = Field(
        default=None, description="When the taint was added (NoExecute only; set by failover)."
    )

    @model_validator(mode="after")
    def _label_rules(self, info: ValidationInfo) -> Taint:
        if not stored(info):
            raise_all(key_value_problems("taint", self.key, self.value))
        return self

    def tolerated_by(self, tolerations: Sequence[Toleration]) -> Toleration | None:
        """The toleration matching this taint (Kubernetes rules: key, or an empty key with
        Exists; value unless Exists; effect unless empty), or None. The scheduler and
        failover both judge by it, so placement and eviction never disagree. A key of
        Karmada's health taints matches fedctl's equal one (`KARMADA_TAINTS`)."""
        for tol in tolerations:
            if tol.effect and tol.effect != self.effect:
                continue
            if not tol.key:
                if tol.operator == "Exists":
                    return tol
                continue
            if self.key not in (tol.key, KARMADA_TAINTS.get(tol.key)):
                continue
            if tol.operator == "Exists" or (tol.value or "") == self.value:
                return tol
        return None

    def evicts(self, tolerations: Sequence[Toleration]) -> bool:
        """Whether this taint evicts a workload with `tolerations`, now or once its
        tolerationSeconds run out: failover evicts by it, and the scheduler keeps a leaving
        workload off a cluster only while it holds."""
        if self.effect != "NoExecute":
            return False
        tol = self.tolerated_by(tolerations)
        return tol is None or tol.toleration_seconds is not None

    def refuses(self, tolerations: Sequence[Toleration]) -> bool:
        """Whether this taint keeps out new work with `tolerations` (NoSchedule or
        NoExecute, untolerated): the scheduler's taint filter refuses by it, and a leaving
        workload's pending reason names the taint rather than the eviction it bars."""
        return self.effect != "PreferNoSchedule" and self.tolerated_by(tolerations) is None


class Chip(FrozenModel):
    """One chip model the cluster carries, with how many: the unit placement matches on."""

    model: ChipModel = Field(
        description="`amd64`/`arm64` for plain CPU nodes, or an accelerator model such as"
        " `nvidia-a100-80gb` (see AcceleratorProfile)."
    )
    arch: Arch | None = Field(
        default=None,
        description="CPU architecture of the nodes carrying the chip. Required for"
        " accelerators; for a plain arch it defaults to the model itself.",
    )
    count: int = Field(
        ge=0, description="Accelerators of this model in the cluster; nodes for a plain arch."
    )
    resource_name: str | None = Field(
        default=None,
        min_length=1,
        description="Extended resource name used here, when it differs from the profile's.",
    )

    @model_validator(mode="after")
    def _arch_matches(self) -> Chip:
        if is_arch(self.model):
            if self.arch is not None and self.arch != self.model:
                raise RuleError(
                    f"chip {self.model!r} is a CPU architecture; arch must be {self.model!r}"
                    f" or left out, not {self.arch!r}",
                    at=("arch",),
                )
            if self.resource_name is not None:
                raise RuleError(
                    f"chip {self.model!r} is a CPU architecture and has no device resource;"
                    " remove resourceName",
                    at=("resourceName",),
                )
        elif self.arch is None:
            raise RuleError(
                f"accelerator chip {self.model!r} needs the arch of its nodes"
                " (e.g. arch: amd64 or arch: arm64)",
                at=(),
            )
        return self

    @property
    def host_arch(self) -> str:
        """The CPU architecture of the nodes with this chip."""
        return self.arch or self.model


MAX_PRICE = Decimal(1_000_000)
"""The most any price may be per unit-hour: far above any real one, it refuses a slip
(`1e400`) that printed a cost of 400 digits in every view and plan."""


def price_problem(price: Decimal) -> str:
    """Why `price` is not a price (a negative or absurd one), as every price is refused."""
    if price < 0:
        return f"price must not be negative, got {price}"
    return f"price must be at most {MAX_PRICE} an hour, got {price:.6g}"


def _base_price(unit: str) -> Decimal:
    """The field of a table's cpu or memory price: what one left out means is documented
    where it is written."""
    found: Decimal = Field(
        default=Decimal(0),
        ge=0,
        le=MAX_PRICE,
        description=f"Per {unit}-hour. Left out of a spot table: the on-demand table's; left"
        " out of the on-demand table: 0 (free), which is warned about.",
    )
    return found


class PriceTable(FrozenModel):
    """Prices per resource-hour for one capacity type, in the cluster's currency (the
    scheduler converts them to the federation's at
    the rates in `FEDCTL_SCHEDULER__EXCHANGE_RATES`)."""

    cpu: Decimal = _base_price("core")
    memory: Decimal = _base_price("GiB")
    accelerators: dict[ChipModel, Decimal] = Field(
        default_factory=dict,
        description="Per device-hour, by chip model, e.g. {nvidia-a100-80gb: 3.10}.",
    )

    @model_validator(mode="after")
    def _non_negative(self) -> PriceTable:
        for model, price in self.accelerators.items():
            if not 0 <= price <= MAX_PRICE:
                raise RuleError(price_problem(price), at=("accelerators", model))
        return self

    def scaled(self, rate: Decimal) -> PriceTable:
        """Every price times `rate`: this table in another currency (`rate` > 0)."""
        return PriceTable(
            cpu=self.cpu * rate,
            memory=self.memory * rate,
            accelerators={model: price * rate for model, price in self.accelerators.items()},
        )

    def with_device_defaults(self, defaults: Mapping[str, Decimal]) -> PriceTable:
        """This table with `defaults` (chip model -> device-hour) for the models it does
        not price: an AcceleratorProfile's `defaultPricePerHour`."""
        missing = {m: p for m, p in defaults.items() if m not in self.accelerators}
        if not missing:
            return self
        return self.model_copy(update={"accelerators": {**self.accelerators, **missing}})

    def hourly_cost(
        self,
        requests: ResourceList,
        *,
        accelerator_resource: str | None = None,
        accelerator_model: str | None = None,
        fallback_price: Decimal | None = None,
    ) -> Decimal | None:
        """Exact cost of `requests` for one hour; None when the accelerator has no price.

        `requests` counts devices under `accelerator_resource` (e.g. `nvidia.com/gpu`); they
        are priced as `accelerator_model`, or at `fallback_price` (the profile's default)
        when this table lists no price for that model.
        """
        cost = self.cpu * Decimal(requests.amount("cpu")) / 1000
        cost += self.memory * Decimal(requests.amount("memory")) / _GIB_MILLI
        devices = requests.amount(accelerator_resource) if accelerator_resource else 0
        if devices:
            price = self.accelerators.get(accelerator_model or "", fallback_price)
            if price is None:
                return None
            cost += price * Decimal(devices) / 1000
        return cost


class Prices(FrozenModel):
    """What an hour of this cluster costs: on-demand always, spot when offered."""

    currency: str = Field(
        default="USD", pattern=r"^[A-Z]{3}$", description="ISO 4217 code, e.g. USD, EUR, CNY."
    )
    on_demand: PriceTable = Field(description="On-demand (or reserved, on-premises) prices.")
    spot: PriceTable | None = Field(
        default=None,
        description="Spot or preemptible prices; absent when not offered. A `cpu` or"
        " `memory` it leaves out is the on-demand table's: spot discounts are usually given"
        " for the chips alone.",
    )

    @model_validator(mode="after")
    def _spot_base_from_on_demand(self) -> Prices:
        """Fill the spot table's cpu and memory from the on-demand table where it gives
        none. Why: `cluster join --spot-price CHIP=X` (or a spot table of chips alone) left
        them at 0, so a spot pod's CPU and memory were free there and the cost score sent
        every spot CPU workload to that cluster."""
        spot = self.spot
        if spot is None:
            return self
        missing = {"cpu", "memory"} - spot.model_fields_set
        if missing:
            base = {name: getattr(self.on_demand, name) for name in missing}
            filled = spot.model_copy(update=base)
            object.__setattr__(self, "spot", filled)
        return self

    def with_device_defaults(self, defaults: Mapping[str, Decimal]) -> Prices:
        """These prices with each chip model's default device-hour price where the
        on-demand table lists none (`PriceTable.with_device_defaults`). A default is a list
        price: a spot table without the model stays without it, spot being what a
        provider offers for less, not known from the list price."""
        on_demand = self.on_demand.with_device_defaults(defaults)
        if on_demand is self.on_demand:
            return self
        return self.model_copy(update={"on_demand": on_demand})

    def table(self, capacity_type: CapacityType) -> PriceTable | None:
        """The price table for a capacity type, or None when this cluster does not offer it."""
        return self.on_demand if capacity_type == "on-demand" else self.spot


def free_base(prices: Prices) -> list[Notice]:
    """The on-demand table's cpu or memory left out: each is priced at 0 (free).

    Why a warning: `cluster join --price cpu=0.05` on an unpriced cluster made its memory
    free without a word; a table that means it says `memory: 0`."""
    given = prices.on_demand.model_fields_set
    return [
        Notice(
            ("spec", "prices", "onDemand"),
            f"no {name} price: {name} is priced at 0 (free) here; give {name}: 0 to say so",
        )
        for name in ("cpu", "memory")
        if name not in given
    ]


class Connection(FrozenModel):
    """How the controller reaches the member's Kubernetes API."""

    kubeconfig_path: str | None = Field(
        default=None,
        min_length=1,
        description="Path of a kubeconfig file on the controller host (`~` is expanded).",
    )
    kubeconfig: str | None = Field(
        default=None,
        min_length=1,
        repr=False,
        description="Inline kubeconfig YAML; a secret: stored in the registry, never logged.",
    )
    context: str | None = Field(
        default=None,
        min_length=1,
        description="Kubeconfig context to use; the file's current context when absent.",
    )

    @model_validator(mode="after")
    def _one_source(self, info: ValidationInfo) -> Connection:
        if self.kubeconfig_path is not None and self.kubeconfig is not None:
            raise RuleError(
                "give either kubeconfigPath or an inline kubeconfig, not both",
                at=("kubeconfig",),
            )
        if self.kubeconfig is not None and not stored(info):
            # Refused where it is written, at its line; one read back from the registry
            # (written there directly) is refused by the connector instead, and its
            # Cluster reads Ready=False saying why.
            plugin = kubeconfigs.credential_plugin(_parsed(self.kubeconfig))
            if plugin is not None:
                raise RuleError(f"{plugin} {kubeconfigs.REFUSED}", at=("kubeconfig",))
        return self


def _parsed(text: str) -> object:
    """An inline kubeconfig's YAML, or None when it is not YAML (sealed, or broken: the
    connector says what is wrong with it when it loads it)."""
    try:
        return YAML(typ="safe", pure=True).load(io.StringIO(text))
    except (YAMLError, ValueError, RecursionError):
        return None


class ClusterSpec(FrozenModel):
    """What the platform team declares about a member cluster."""

    region: str = Field(min_length=1, description="Region, e.g. us-east, eu-west, cn-north.")
    zone: str | None = Field(default=None, min_length=1, description="Zone within the region.")
    provider: str | None = Field(
        default=None, min_length=1, description="Provider, e.g. aws, gcp, huawei, on-prem."
    )
    taints: list[Taint] = Field(default_factory=list, description="Cluster taints.")
    chips: list[Chip] = Field(
        default_factory=list, description="Chips the cluster carries, with counts."
    )
    prices: Prices | None = Field(default=None, description="Prices per resource-hour.")
    eviction_grace_seconds: int | None = Field(
        default=None,
        ge=0,
        description="Override of the failover grace before NoExecute eviction, in seconds.",
    )
    connection: Connection = Field(
        default_factory=Connection, description="How to reach the member's API."
    )

    @model_validator(mode="after")
    def _chips_unique(self) -> ClusterSpec:
        seen: set[str] = set()
        for index, chip in enumerate(self.chips):
            if chip.model in seen:
                raise RuleError(
                    f"chip {chip.model!r} is listed twice; give one entry with the total count",
                    at=("chips", index, "model"),
                )
            seen.add(chip.model)
        return self


class Condition(FrozenModel):
    """A Kubernetes-style condition: the latest observation of one aspect of the cluster."""

    type: str = Field(min_length=1, description="Condition type, e.g. Ready.")
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str = Field(default="", description="CamelCase reason, e.g. ProbeTimeout.")
    message: str = Field(default="", description="Human-readable detail.")
    last_transition_time: AwareDatetime = Field(description="When status last changed.")
    last_probe_time: AwareDatetime | None = Field(
        default=None, description="When this condition was last checked."
    )


class ProbeFailures(FrozenModel):
    """The member's current run of failed probes, written at its first failure.

    Why it is stored: the failure threshold counts from the run's first failure, and a
    run kept only in the leading controller's memory started again at every leader
    change, so a member failing through a handover was judged down up to a whole
    threshold late. A new leader resumes the count from here once a probe of its own has
    failed too (`federation.monitor.probe.observe`)."""

    since: AwareDatetime = Field(description="When the first failed probe of the run ended.")
    reason: str = Field(default="", description="Its reason, e.g. ConnectionRefused.")
    message: str = Field(default="", description="Its message.")


class APIResource(FrozenModel):
    """One resource served in a group-version, e.g. deployments/Deployment."""

    name: str = Field(min_length=1, description="Plural resource name, e.g. deployments.")
    kind: str = Field(min_length=1, description="Kind, e.g. Deployment.")


class APIEnablement(FrozenModel):
    """The resources one group-version serves in the member (Karmada's apiEnablements)."""

    group_version: str = Field(min_length=1, description="e.g. apps/v1, batch.volcano.sh/v1alpha1.")
    resources: list[APIResource] = Field(default_factory=list)


FREE_NODE_GROUPS = 8
"""Most groups one flavor's `free_nodes` holds: a status stays small however many nodes."""


class FreeNodes(FrozenModel):
    """Nodes of one flavor with the same free amounts: how the flavor's free room is split.

    Why: a flavor's free sum overstates what fits when the room is spread thin (3 CPU free
    on each of two nodes hold no 4-CPU pod). Nodes with different free amounts share a
    group only when the flavor has more than `FREE_NODE_GROUPS` kinds of node; the group
    then shows the least of each amount, so what it says fits does fit.
    """

    free: ResourceList = Field(
        description="Free amounts of EACH node of the group (the least over its nodes)."
    )
    count: int = Field(ge=1, description="How many nodes are in the group.")


class NodeFlavor(FrozenModel):
    """Nodes of one shape: same arch, accelerator and allocatable. Fit is judged per flavor."""

    arch: Arch = Field(description="CPU architecture of these nodes.")
    accelerator_model: ChipModel | None = Field(
        default=None, description="Accelerator model on these nodes, if any."
    )
    accelerator_resource: str | None = Field(
        default=None, description="Extended resource the accelerator is exposed as."
    )
    allocatable: ResourceList = Field(description="Allocatable of ONE node of this flavor.")
    node_count: int = Field(ge=0, description="How many ready nodes have this flavor.")
    requested: ResourceList = Field(
        default_factory=ResourceList, description="Sum of pod requests on these nodes."
    )
    free: ResourceList = Field(
        default_factory=ResourceList, description="Sum of free amounts on these nodes."
    )
    largest_free: ResourceList = Field(
        default_factory=ResourceList,
        description="Free amounts of the emptiest single node; a pod fits only if it fits here.",
    )
    free_nodes: list[FreeNodes] = Field(
        default_factory=list,
        max_length=FREE_NODE_GROUPS,
        description="The nodes grouped by free amounts, emptiest first: pods of one shape"
        " that fit are counted node by node from these. Empty (a status written before"
        " they were reported): free replicas are estimated from `free` and `largestFree`.",
    )

    def fits(self, pod: ResourceList) -> bool:
        """Whether one pod with these requests fits on some node of this flavor."""
        return self.node_count > 0 and pod.fits_within(self.largest_free)


class ResourceTotals(FrozenModel):
    """Cluster-wide sums over every ready node."""

    allocatable: ResourceList = Field(default_factory=ResourceList)
    requested: ResourceList = Field(default_factory=ResourceList)
    free: ResourceList = Field(default_factory=ResourceList)


class ClusterStatus(FrozenModel):
    """What the cluster monitor last observed about a member (written by the monitor only)."""

    conditions: list[Condition] = Field(default_factory=list)
    kubernetes_version: str | None = Field(default=None, description="e.g. v1.30.2.")
    cluster_id: str | None = Field(
        default=None,
        description="The member's kube-system namespace uid, which names the Kubernetes"
        " cluster itself (as Karmada's cluster ID): joining it twice is refused.",
    )
    duplicate_of: str | None = Field(
        default=None,
        description="The Cluster joined earlier that reaches the same Kubernetes cluster (the"
        " same clusterId). While set this one is not Ready: nothing is placed on it, and"
        " nothing is applied or deleted through it, since every copy there is the other's.",
    )
    api_enablements: list[APIEnablement] = Field(default_factory=list)
    flavors: list[NodeFlavor] = Field(
        default_factory=list, description="Capacity summarised by node flavor."
    )
    totals: ResourceTotals = Field(default_factory=ResourceTotals)
    taints: list[Taint] = Field(
        default_factory=list,
        description="Taints the controller applied (e.g. cluster.fedctl.io/unreachable), kept"
        " apart from the user's spec.taints so neither write conflicts with the other.",
    )
    last_heartbeat: AwareDatetime | None = Field(
        default=None, description="Time of the last successful probe."
    )
    probe_failures: ProbeFailures | None = Field(
        default=None,
        description="The run of failed probes the member is in (none while its probes"
        " succeed): when it began and why, so that a new leading controller judges the"
        " member down when the failure threshold has passed since then, not since it took"
        " over.",
    )
    default_prices: dict[ChipModel, Decimal] | None = Field(
        default=None,
        description="Filled by the API on read, never stored: the AcceleratorProfile"
        " defaultPricePerHour, in this cluster's currency, of each chip it carries that its"
        " on-demand prices list none for: what the scheduler charges for that chip here.",
    )

    def condition(self, type_: str) -> Condition | None:
        """The condition of the given type, or None when never reported."""
        return next((c for c in self.conditions if c.type == type_), None)

    def ready(self) -> bool:
        """Whether the Ready condition is True."""
        ready = self.condition("Ready")
        return ready is not None and ready.status == "True"

    def away(self) -> bool:
        """Whether the member is away (`AWAY_TAINTS`): what the copies left there are for
        (kept, given back, purged) is settled once failover has seen it back."""
        return any(t.key in AWAY_TAINTS for t in self.taints)

    def api_enabled(self, api_version: str, kind: str) -> bool:
        """Whether the member serves `kind` in `api_version` (e.g. apps/v1, Deployment)."""
        return any(
            e.group_version == api_version and any(r.kind == kind for r in e.resources)
            for e in self.api_enablements
        )

    def flavors_for(self, chip: str) -> list[NodeFlavor]:
        """Node flavors carrying a chip: an accelerator model, or a plain arch (no accelerator)."""
        if is_arch(chip):
            return [f for f in self.flavors if f.arch == chip and f.accelerator_model is None]
        return [f for f in self.flavors if f.accelerator_model == chip]


class Cluster(KubeObject):
    """`fedctl.io/v1alpha1` Cluster: a member registered in the federation."""

    api_version: Literal["fedctl.io/v1alpha1"] = Field(
        default="fedctl.io/v1alpha1", description="Always `fedctl.io/v1alpha1`."
    )
    kind: Literal["Cluster"] = "Cluster"
    spec: ClusterSpec
    status: ClusterStatus | None = Field(
        default=None,
        description="Filled by the API from the monitor's record on read; ignored on apply.",
    )

    @model_validator(mode="after")
    def _name_is_a_label(self) -> Cluster:
        name = self.metadata.name
        if len(name) > 63 or not _DNS_LABEL.fullmatch(name):
            raise RuleError(
                f"invalid cluster name {name!r}: use at most 63 lower-case letters, digits and"
                " '-', starting and ending with a letter or digit (e.g. us-east-a100)",
                at=("metadata", "name"),
            )
        return self

    @property
    def name(self) -> str:
        """The cluster name (metadata.name)."""
        return self.metadata.name

    def warnings(self) -> list[Notice]:
        """An on-demand table without a cpu or memory price (`free_base`), and a device
        price for a chip model this cluster does not list.

        Why: any chip model is a valid key, so `nvidia-a100: 0.5` for a cluster of
        `nvidia-a100-80gb` loaded and priced nothing: the scheduler billed the chip at its
        AcceleratorProfile's default, while the cluster's own price showed 0.5. Judged only
        when `chips` lists what the cluster carries."""
        prices, carried = self.spec.prices, [chip.model for chip in self.spec.chips]
        if prices is None:
            return []
        if not carried:
            return free_base(prices)
        found = free_base(prices)
        for field, table in (("onDemand", prices.on_demand), ("spot", prices.spot)):
            for model in table.accelerators if table is not None else ():
                if model in carried:
                    continue
                close = difflib.get_close_matches(model, carried, n=1, cutoff=0.6)
                meant = f" (did you mean {close[0]!r}?)" if close else ""
                found.append(
                    Notice(
                        ("spec", "prices", field, "accelerators", model),
                        f"this cluster lists no chip {model!r}{meant}, so this price is never"
                        f" used; its chips: {', '.join(carried)}",
                    )
                )
        return found

    def ready(self) -> bool:
        """Whether the monitor last saw this cluster Ready (False with no status yet)."""
        return self.status is not None and self.status.ready()

    def effective_taints(self) -> list[Taint]:
        """The user's taints followed by those the controller applied (scheduling sees both)."""
        applied = self.status.taints if self.status is not None else []
        return [*self.spec.taints, *applied]

    def chip(self, model: str) -> Chip | None:
        """The declared chip entry for a model, or None."""
        return next((c for c in self.spec.chips if c.model == model), None)

    def chip_models(self) -> list[str]:
        """Every chip model declared, accelerators and arches alike, in declaration order."""
        return [c.model for c in self.spec.chips]

    def arches(self) -> set[str]:
        """Every CPU architecture present (plain arch entries and accelerator hosts)."""
        return {c.host_arch for c in self.spec.chips}

    def with_status(self, status: ClusterStatus | None) -> Cluster:
        """A copy joined with the monitor's status (the API does this on read)."""
        return self.model_copy(update={"status": status})
