"""AcceleratorProfile: what one chip model means on a member cluster.

Role: a fleet mixes x86 and Arm nodes, two NVIDIA generations and Ascend NPUs, and the same
training job needs a different extended-resource name, node selector and image on each. A
profile, named after the chip model (`nvidia-a100-80gb`, `ascend-910b`, or a plain arch such
as `arm64`), says how to translate a workload for that chip. Fed by policy YAML and the REST
API; feeds the scheduler's chip filter and cost score (default price) and the propagator,
which rewrites requests, node selectors and images when it renders a Work for a cluster.

Also home of the chip vocabulary shared by Cluster, placement and workload models: `Arch`,
`ChipModel` (a validated chip name) and `ARCHES`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from federation.resources import Quantity, ResourceList, normalise_name
from policies.models.base import FrozenModel, KubeObject
from policies.models.common import RuleError

__all__ = [
    "ARCHES",
    "DEVICE_RESOURCES",
    "NO_DEVICE_RENAMES",
    "AcceleratorProfile",
    "AcceleratorProfileSpec",
    "Arch",
    "ChipDevices",
    "ChipModel",
    "ImageRewrite",
    "PrefixRewrite",
    "is_arch",
]

Arch = Literal["amd64", "arm64", "ppc64le", "s390x"]
"""A node CPU architecture, spelled as the `kubernetes.io/arch` node label spells it."""

ARCHES: tuple[str, ...] = ("amd64", "arm64", "ppc64le", "s390x")

DEVICE_RESOURCES: tuple[str, ...] = (
    "nvidia.com/gpu",
    "amd.com/gpu",
    "huawei.com/Ascend910",
    "huawei.com/Ascend910B",
    "huawei.com/Ascend310",
    "huawei.com/Ascend310P",
    "habana.ai/gaudi",
    "aws.amazon.com/neuroncore",
    "aws.amazon.com/neurondevice",
    "aws.amazon.com/neuron",
    "google.com/tpu",
    "intel.com/gpu",
    "cambricon.com/mlu",
)
"""The device resources accelerators are exposed as: what the monitor looks for on a
node, and the names a queue's limits are checked against for typos."""

_CHIP = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


def is_arch(chip: str) -> bool:
    """Whether a chip model is a plain CPU architecture (`amd64`) rather than an accelerator."""
    return chip in ARCHES


def _check_chip(value: str) -> str:
    if len(value) > 63 or not _CHIP.fullmatch(value):
        raise ValueError(
            f"invalid chip model {value!r}: use lower-case letters, digits, '-' and '.',"
            " e.g. nvidia-a100-80gb, ascend-910b, arm64"
        )
    return value


ChipModel = Annotated[
    str,
    AfterValidator(_check_chip),
    Field(description="Chip model, e.g. `nvidia-a100-80gb`, `ascend-910b`, or an arch `arm64`."),
]
"""A chip model name: lower-case, digits, '-' and '.'; at most 63 characters."""


class PrefixRewrite(FrozenModel):
    """Replace a leading registry or repository prefix of an image reference."""

    from_: str = Field(
        alias="from",
        min_length=1,
        description="Prefix to match at a path boundary, e.g. `docker.io/pytorch` or `nvcr.io`.",
    )
    to: str = Field(
        min_length=1, description="Replacement prefix, e.g. `swr.cn-north-4.myhuaweicloud.com`."
    )


class ImageRewrite(FrozenModel):
    """How container images change on this chip: a whole image, or prefix and tag edits.

    Applied to the containers that request the chip's device (a plain-arch profile's to
    every container): a launcher task or a sidecar has no build for the chip, and a tag
    suffix added to `busybox:1.36` names an image that does not exist."""

    image: str | None = Field(
        default=None,
        min_length=1,
        description="Replace the image of each container the rewrite applies to with this"
        " one (exclusive with the others).",
    )
    replace: list[PrefixRewrite] = Field(
        default_factory=list,
        description="Prefix rewrites, tried in order; the first that matches is applied.",
    )
    tag_suffix: str | None = Field(
        default=None,
        min_length=1,
        description="Appended to the image tag: `-cann8` turns `app:2.1` into `app:2.1-cann8`.",
    )

    @model_validator(mode="after")
    def _image_alone(self) -> ImageRewrite:
        if self.image is not None and (self.replace or self.tag_suffix is not None):
            raise RuleError(
                "image replaces the whole reference; do not combine it with replace or tagSuffix",
                at=("image",),
            )
        return self

    def apply(self, image: str) -> str:
        """The image reference to use on this chip (digest-pinned images keep their digest)."""
        if self.image is not None:
            return self.image
        for rule in self.replace:
            prefix = rule.from_.rstrip("/")
            if image == prefix or image.startswith(prefix + "/"):
                image = rule.to.rstrip("/") + image[len(prefix) :]
                break
        if self.tag_suffix is None or "@" in image:
            return image
        name, tag = _split_tag(image)
        return f"{name}:{tag}{self.tag_suffix}"


def _split_tag(image: str) -> tuple[str, str]:
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = image.rsplit(":", 1)
        return name, tag
    return image, "latest"


class AcceleratorProfileSpec(FrozenModel):
    """The translation of a workload for one chip model (the profile's metadata.name)."""

    arch: Arch = Field(description="CPU architecture of the nodes that carry this chip.")
    resource_name: str | None = Field(
        default=None,
        min_length=1,
        description="Extended resource a pod requests for one device, e.g. `nvidia.com/gpu`,"
        " `huawei.com/Ascend910`. Required for accelerators; absent for a plain arch. A"
        " container that requests a device without a limit reaches the members with a limit"
        " equal to the request, as Kubernetes requires for a device.",
    )
    vendor: str | None = Field(default=None, description="Chip vendor, e.g. nvidia, huawei.")
    device_memory: Quantity | None = Field(
        default=None, description="Memory of one device, informational, e.g. `80Gi`."
    )
    node_selector: dict[str, str] = Field(
        default_factory=dict,
        description="Node labels added to the nodeSelector of each pod template that"
        " requests the device (every template, for a plain arch), so it lands on this chip."
        " An accelerator's labels also keep the pods that request no device off its nodes.",
    )
    image: ImageRewrite | None = Field(
        default=None,
        description="Image changes for this chip (registry, tag or whole image), made to the"
        " containers that request the device; for a plain arch, to every container.",
    )
    default_price_per_hour: Decimal | None = Field(
        default=None,
        ge=0,
        description="Price of one device-hour when a cluster lists no price for this chip.",
    )


class AcceleratorProfile(KubeObject):
    """`fedctl.io/v1alpha1` AcceleratorProfile; metadata.name is the chip model it describes."""

    api_version: Literal["fedctl.io/v1alpha1"] = Field(
        default="fedctl.io/v1alpha1", description="Always `fedctl.io/v1alpha1`."
    )
    kind: Literal["AcceleratorProfile"] = "AcceleratorProfile"
    spec: AcceleratorProfileSpec

    @model_validator(mode="after")
    def _name_and_resource(self) -> AcceleratorProfile:
        try:
            _check_chip(self.metadata.name)
        except ValueError as err:
            raise RuleError(str(err), at=("metadata", "name")) from None
        if is_arch(self.model):
            if self.model != self.spec.arch:
                raise RuleError(
                    f"profile {self.model!r} is a plain architecture; spec.arch must be"
                    f" {self.model!r}, not {self.spec.arch!r}",
                    at=("spec", "arch"),
                )
            if self.spec.resource_name is not None:
                raise RuleError(
                    f"profile {self.model!r} is a plain architecture and has no device"
                    " resource; remove resourceName",
                    at=("spec", "resourceName"),
                )
        elif self.spec.resource_name is None:
            raise RuleError(
                f"accelerator {self.model!r} needs the extended resource a pod requests,"
                " e.g. resourceName: nvidia.com/gpu",
                at=("spec",),
            )
        return self

    @property
    def model(self) -> str:
        """The chip model this profile describes (its metadata.name)."""
        return self.metadata.name

    @property
    def is_accelerator(self) -> bool:
        """False for a plain-architecture profile such as `arm64`."""
        return not is_arch(self.model)

    def translate_requests(
        self, requests: ResourceList, *, device_resources: Iterable[str]
    ) -> ResourceList:
        """Requests as they must read on this chip: devices under any of `device_resources`
        (e.g. `nvidia.com/gpu` in a template written for NVIDIA) move to this profile's
        resource name (`huawei.com/Ascend910`). A plain-arch profile changes nothing.
        """
        target = self.spec.resource_name
        if target is None:
            return requests
        return _renamed(requests, {normalise_name(name) for name in device_resources}, target)


def _renamed(requests: ResourceList, devices: Iterable[str], target: str) -> ResourceList:
    """`requests` with the amounts of `devices` moved to `target`."""
    moved = set(devices) - {target}
    amount = sum(requests.amount(name) for name in moved)
    kept = ResourceList({n: a for n, a in requests.items() if n not in moved})
    return kept + ResourceList({target: amount}) if amount else kept


@dataclass(frozen=True, slots=True)
class ChipDevices:
    """The device resource each chip's AcceleratorProfile names (`pairs`: chip model,
    resource name), for charging a pod as the member runs it.

    Why: the propagator renders a pod for the chip its Binding chose, moving the devices
    of any profile's resource (`nvidia.com/gpu`) to that chip's (`huawei.com/Ascend910`).
    Charged under the template's name, a job written for NVIDIA and placed on Ascend used
    up its queue's NVIDIA capability, borrowing and guarantees, and no Ascend cap ever
    held it. Equal values compare equal, so a reader may keep what it charged while the
    profiles stand.
    """

    pairs: tuple[tuple[str, str], ...] = ()
    _by_chip: Mapping[str, str] = field(init=False, compare=False, repr=False)
    _names: frozenset[str] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_chip", dict(self.pairs))
        object.__setattr__(self, "_names", frozenset(r for _, r in self.pairs))

    @classmethod
    def of(cls, profiles: Iterable[object]) -> ChipDevices:
        """From the AcceleratorProfiles among `profiles` that name a device resource."""
        return cls(
            tuple(
                sorted(
                    (p.model, p.spec.resource_name)
                    for p in profiles
                    if isinstance(p, AcceleratorProfile) and p.spec.resource_name
                )
            )
        )

    def on(self, pod: ResourceList, chip: str | None) -> ResourceList:
        """One pod's requests as the member runs them on `chip` (the pod itself when the
        chip has no profile, or its devices are named as the profile names them)."""
        target = self._by_chip.get(chip) if chip else None
        if target is None or not any(n in self._names and n != target for n in pod):
            return pod
        return _renamed(pod, self._names, target)


NO_DEVICE_RENAMES = ChipDevices()
"""No profile names a device resource: every pod is charged as its template reads."""
