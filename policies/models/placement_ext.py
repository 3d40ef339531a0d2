"""FedctlPlacement: the placement wishes Karmada's vocabulary cannot express.

Role: a `fedctl.io/v1alpha1` PropagationPolicy carries, beside Karmada's placement, a
`spec.fedctl` block: which chips are acceptable (in order of preference), which CPU
architectures, how long the work is expected to run, the most it may cost per hour and
whether spot capacity is acceptable. Fed by policy YAML (embedded by the propagation policy
model) and, for the duration, by the `fedctl.io/expected-duration` workload annotation;
feeds the scheduler's chip/arch filter and its cost filter and score
(cost = requests x expected duration x price).

Also home of `Duration`, the duration type shared by policies and workload annotations, kept
as whole seconds so cost arithmetic stays exact.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Annotated, Any, Literal

from pydantic import Field, GetCoreSchemaHandler, GetJsonSchemaHandler, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from policies.models.accelerator import Arch, ChipModel
from policies.models.base import FrozenModel
from policies.models.common import RuleError

__all__ = [
    "CapacityPreference",
    "Duration",
    "DurationError",
    "FedctlPlacement",
    "format_duration",
    "parse_duration",
]

CapacityPreference = Literal["on-demand", "spot", "any"]

_UNITS: dict[str, Fraction] = {
    "d": Fraction(86400),
    "h": Fraction(3600),
    "m": Fraction(60),
    "s": Fraction(1),
    "ms": Fraction(1, 1000),
}
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?|\.[0-9]+)(ms|d|h|m|s)")
_MAX_SECONDS = 366 * 86400 * 100  # a century: anything longer is a typo


class DurationError(ValueError):
    """A duration that cannot be read; the message names the value."""


def parse_duration(value: str | int) -> int:
    """Whole seconds (rounded up) from `90s`, `45m`, `2h30m`, `1.5h`, `3d` or an int of seconds."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise DurationError(
            f"invalid duration {value!r}: expected a string like 2h30m or whole seconds"
        )
    seconds = value if isinstance(value, int) else _parse_text(value)
    if seconds <= 0:
        raise DurationError(f"invalid duration {value!r}: must be longer than zero")
    if seconds > _MAX_SECONDS:
        raise DurationError(f"invalid duration {value!r}: longer than 100 years")
    return seconds


def _parse_text(value: str) -> int:
    text = value.strip()
    if text.isdigit():
        return int(text)
    parts = _PART.findall(text)
    if not text or "".join(number + unit for number, unit in parts) != text:
        raise DurationError(
            f"invalid duration {value!r}: expected a duration like 90s, 45m, 2h30m or 1.5h"
            " (units d, h, m, s, ms)"
        )
    total = sum((Fraction(number) * _UNITS[unit] for number, unit in parts), Fraction(0))
    return math.ceil(total)


def format_duration(seconds: int) -> str:
    """The canonical spelling: `9000` -> `2h30m`, `90` -> `1m30s`, `0` -> `0s`."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return text + (f"{secs}s" if secs or not text else "")


class _DurationType:
    """Pydantic hook behind `Duration`: parse on the way in, canonical string on the way out."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def validate(value: Any) -> int:
            try:
                return parse_duration(value)
            except DurationError as err:
                raise PydanticCustomError("duration", str(err)) from None

        return core_schema.no_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(
                format_duration, return_schema=core_schema.str_schema()
            ),
        )

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {
            "anyOf": [
                {"type": "string", "pattern": r"^(([0-9]+(\.[0-9]+)?|\.[0-9]+)(ms|d|h|m|s))+$"},
                {"type": "integer", "minimum": 1},
            ],
            "description": "Duration like 90s, 45m, 2h30m, 1.5h, 3d, or whole seconds.",
        }


Duration = Annotated[int, _DurationType()]
"""A positive duration in whole seconds; accepts `2h30m`-style strings, serialises back."""


class FedctlPlacement(FrozenModel):
    """fedctl's placement extension (`spec.fedctl` of a fedctl.io PropagationPolicy)."""

    chips: list[ChipModel] = Field(
        default_factory=list,
        description="Acceptable chip models, most preferred first, e.g. [nvidia-a100-80gb,"
        " ascend-910b]. Each needs an AcceleratorProfile or a Cluster that declares it."
        " Empty: the workload's own requests decide.",
    )
    arches: list[Arch] = Field(
        default_factory=list,
        description="Acceptable CPU architectures, e.g. [amd64, arm64]. Empty: any. With"
        " chips, both hold: a chip is used only on nodes of a listed arch.",
    )
    expected_duration: Duration | None = Field(
        default=None,
        description="How long the work is expected to run (e.g. 6h): `fedctl plan` shows what the"
        " whole run costs over it. The workload annotation fedctl.io/expected-duration takes"
        " precedence.",
    )
    max_hourly_cost: Decimal | None = Field(
        default=None,
        ge=0,
        description="Most the placement may cost per hour, all replicas together, in the"
        " federation's currency (FEDCTL_SCHEDULER__CURRENCY, USD by default). Clusters above it,"
        " and clusters whose prices cannot be converted to it, are filtered out. Under"
        " Duplicated every cluster runs all replicas: the copies' sum must be within it, or"
        " the workload is not placed (its next clusterAffinities group is tried).",
    )
    capacity_type: CapacityPreference = Field(
        default="on-demand",
        description="on-demand (default), spot (priced at spot prices, placed only on"
        " clusters whose prices offer spot), or any (spot preferred when cheaper).",
    )
    failback: Literal["Never", "Automatic"] = Field(
        default="Never",
        description="After a failover moved the work to a less preferred cluster: Never"
        " (default; `fedctl rebalance` moves it back on request) or Automatic (moved back"
        " gracefully once the preferred clusters are healthy again).",
    )

    @model_validator(mode="after")
    def _no_repeats(self) -> FedctlPlacement:
        for field, values in (("chips", self.chips), ("arches", list(self.arches))):
            seen: set[str] = set()
            for index, value in enumerate(values):
                if value in seen:
                    raise RuleError(f"{value!r} is listed twice", at=(field, index))
                seen.add(value)
        return self

    def preference(self, chip: str) -> int | None:
        """Rank of a chip among the acceptable ones (0 = most preferred); None if not listed."""
        return self.chips.index(chip) if chip in self.chips else None
