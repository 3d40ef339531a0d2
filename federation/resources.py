"""Kubernetes resource quantities and resource lists, in exact integer milli-units.

Role: the one place where `100m`, `16Gi`, `1e3` or `requests.nvidia.com/gpu` are understood.
Policy YAML, cluster capacity reports, workload pod specs and quota objects all feed their
quantity strings in here; the scheduler, quota accounting, fair share and the renderer of
member ResourceQuotas consume the resulting `ResourceList` values and formatted strings.

Why integers: admission decisions compare sums of requests against capacities, and a float
that is off by one ulp admits a job that does not fit (or refuses one that does). Every
amount is therefore an `int` of milli-units (1 CPU = 1000, 1 byte of memory = 1000), exact
for every quantity Kubernetes accepts down to the milli; finer values are rounded up, away
from zero, exactly as Kubernetes does when it takes a `MilliValue()`. Shares are
`fractions.Fraction`, never float.

This module is the lowest layer of fedctl: it imports nothing from `federation` or
`policies`, so the offline policy validator can use it without the controller.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from fractions import Fraction
from typing import Annotated, Any, TypeVar, overload

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

__all__ = [
    "Quantity",
    "QuantityError",
    "ResourceList",
    "SignedQuantity",
    "device_names",
    "format_like",
    "format_quantity",
    "normalise_name",
    "parse_quantity",
    "to_quota_name",
]

MILLI = 1000
"""Milli-units per unit: `parse_quantity("1") == MILLI`."""

_MAX_TEXT = 64
_MAX_EXPONENT = 40
_MAX_MAGNITUDE = 10**27  # milli-units: 10^24 units, a million times the largest suffix (E)

_DECIMAL_SUFFIXES: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: dict[str, int] = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_KNOWN_SUFFIXES = "n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent like e3"

_NUMBER = re.compile(r"(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?(?P<suffix>.*)", re.S)
_EXPONENT = re.compile(r"[eE](?P<exp>[+-]?[0-9]+)")
_RESOURCE_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?")

# Resource names whose amounts are bytes: formatted with binary suffixes (`16Gi`).
_BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})
# Compute resources that a ResourceQuota may also spell `requests.<name>`.
_QUOTA_COMPUTE = frozenset({"cpu", "memory", "ephemeral-storage"})


class QuantityError(ValueError):
    """A quantity or resource name that Kubernetes would not accept; the message names it."""


# --------------------------------------------------------------------------- parsing


def parse_quantity(text: str | int | float) -> int:
    """Parse a Kubernetes quantity into milli-units, exactly.

    Accepts what the Kubernetes API server accepts: an optional sign, a decimal number and one
    decimal (`m`, `k`, `M`, …), binary (`Ki`, `Mi`, …) or exponent (`e3`, `E-2`) suffix. Plain
    YAML numbers (`2`, `1.5`) are accepted too. Values finer than a milli round up, away from
    zero. Negative values are returned as such; callers that need a non-negative amount use
    `Quantity` or `ResourceList.from_wire`, which refuse them.
    """
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise QuantityError(f"invalid quantity {text!r}: expected a string or a number")
    if isinstance(text, int):
        _check_magnitude(repr(text), text * MILLI)
        return text * MILLI
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"invalid quantity {text!r}: not a finite number")
        return _parse_text(repr(text), shown=repr(text))
    stripped = text.strip()
    if not stripped:
        raise QuantityError(f"invalid quantity {text!r}: empty")
    if len(stripped) > _MAX_TEXT:
        raise QuantityError(
            f"invalid quantity {_shorten(stripped)!r}: longer than {_MAX_TEXT} characters"
        )
    known = _PARSED.get(stripped)
    if known is not None:
        return known
    value = _parse_text(stripped, shown=repr(text))
    if len(_PARSED) < _PARSED_LIMIT:
        _PARSED[stripped] = value
    return value


_PARSED: dict[str, int] = {}
"""Quantities parsed before: exact Fraction arithmetic is slow, and a registry of many
workloads spells the same few ("500m", "16Gi") over and over. Only successes are kept, so
every error is still reported with the text as given."""
_PARSED_LIMIT = 65536


def _parse_text(text: str, *, shown: str) -> int:
    match = _NUMBER.fullmatch(text)
    assert match is not None  # the pattern matches every string
    digits_int, digits_frac = str(match["int"]), str(match["frac"] or "")
    if not digits_int and not digits_frac:
        raise QuantityError(
            f"invalid quantity {shown}: expected a number with an optional suffix,"
            " e.g. 500m, 2, 1.5, 16Gi"
        )
    scale = 10 ** len(digits_frac)
    mantissa = Fraction(int(digits_int or "0") * scale + int(digits_frac or "0"), scale)
    value = mantissa * _suffix_multiplier(str(match["suffix"]), number=text, shown=shown)
    magnitude: int = math.ceil(value * MILLI)  # finer than a milli rounds up, like Kubernetes
    result = -magnitude if match["sign"] == "-" else magnitude
    _check_magnitude(shown, result)
    return result


def _suffix_multiplier(suffix: str, *, number: str, shown: str) -> Fraction:
    if suffix in _DECIMAL_SUFFIXES:
        return Fraction(10) ** _DECIMAL_SUFFIXES[suffix]
    if suffix in _BINARY_SUFFIXES:
        return Fraction(1024 ** _BINARY_SUFFIXES[suffix])
    exponent = _EXPONENT.fullmatch(suffix)
    if exponent is not None:
        power = int(exponent["exp"])
        if abs(power) > _MAX_EXPONENT:
            raise QuantityError(
                f"invalid quantity {shown}: exponent {power} is out of range"
                f" (-{_MAX_EXPONENT}..{_MAX_EXPONENT})"
            )
        return Fraction(10) ** power
    if suffix[:1].isdigit() or "." in suffix:
        raise QuantityError(
            f"invalid quantity {shown}: malformed number (expected digits with at most one '.')"
        )
    hint = _suffix_hint(suffix, number=number[: len(number) - len(suffix)])
    help_text = hint or f"expected {_KNOWN_SUFFIXES}"
    raise QuantityError(f"invalid quantity {shown}: unknown suffix {suffix!r} ({help_text})")


def _suffix_hint(suffix: str, *, number: str) -> str:
    """A 'did you mean' for the usual slips: `GB`, `gi`, `K`, `MiB`."""
    if not suffix:
        return ""
    stem = suffix.strip()
    stem = stem[:-1] if stem[-1:] in ("B", "b") and len(stem) > 1 else stem
    decimal = [s for s in _DECIMAL_SUFFIXES if s and s.upper() == stem.upper() and s != "m"]
    if stem.upper() == "K":
        decimal = ["k"]
    binary = [s for s in _BINARY_SUFFIXES if s.upper() in (stem.upper(), stem.upper() + "I")]
    options = [f"{number}{s}" for s in decimal + binary if s != suffix]
    if not options:
        return ""
    return "did you mean " + " or ".join(repr(o) for o in options) + "?"


def _check_magnitude(shown: str, milli: int) -> None:
    if abs(milli) > _MAX_MAGNITUDE:
        raise QuantityError(f"invalid quantity {shown}: too large (at most 1e24)")


def _shorten(text: str) -> str:
    return text if len(text) <= 24 else text[:20] + "..."


# --------------------------------------------------------------------------- formatting


def format_quantity(milli: int, *, binary: bool | None = None) -> str:
    """The canonical Kubernetes spelling of an amount given in milli-units.

    Decimal form uses the largest suffix that keeps the number whole (`1500m`, `2`, `2k`);
    binary form (`1Gi`) is used only for whole multiples of 1024 that are at least 1Ki.
    `binary=None` picks the shorter of the two (ties go to decimal), so `1073741824000`
    milli-units read `1Gi` and `2000000` read `2k`. `binary=True` falls back to decimal when
    the amount has no exact binary spelling, as Kubernetes does.
    """
    if milli < 0:
        return "-" + format_quantity(-milli, binary=binary)
    decimal = _format_decimal(milli)
    if binary is False:
        return decimal
    in_binary = _format_binary(milli)
    if in_binary is None:
        return decimal
    if binary is True or len(in_binary) < len(decimal):
        return in_binary
    return decimal


def format_like(milli: int, like: int, *, binary: bool | None = None) -> str:
    """`milli` in the unit `format_quantity(like)` is written in, to a tenth, rounded down.

    Why: a free amount beside its total (`38500m/40`, `162304Mi/160Gi`) made the reader
    convert units to compare them; in the total's unit it reads `38.5/40`, `158.5Gi/160Gi`,
    and rounding down never shows more free than there is.
    """
    if milli < 0:
        return "-" + format_like(-milli, like, binary=binary)
    text = format_quantity(like, binary=binary)
    suffix = text.lstrip("-0123456789")
    if suffix in _BINARY_SUFFIXES:
        scale = Fraction(1024) ** _BINARY_SUFFIXES[suffix] * MILLI
    elif suffix in _DECIMAL_SUFFIXES:
        scale = Fraction(10) ** _DECIMAL_SUFFIXES[suffix] * MILLI
    else:
        return format_quantity(milli, binary=binary)
    whole, tenth = divmod(math.floor(Fraction(milli) * 10 / scale), 10)
    return f"{whole}{f'.{tenth}' if tenth else ''}{suffix}"


def _format_decimal(milli: int) -> str:
    if milli % MILLI:
        return f"{milli}m"
    units = milli // MILLI
    if units == 0:
        return "0"
    best = ""
    for suffix, power in _DECIMAL_SUFFIXES.items():
        if power > 0 and units % 10**power == 0:
            best = suffix
    return f"{units // 10 ** _DECIMAL_SUFFIXES[best]}{best}"


def _format_binary(milli: int) -> str | None:
    if milli % MILLI:
        return None
    units = milli // MILLI
    best = None
    for suffix, power in _BINARY_SUFFIXES.items():
        if units >= 1024**power and units % 1024**power == 0:
            best = suffix
    if best is None:
        return None
    return f"{units // 1024 ** _BINARY_SUFFIXES[best]}{best}"


# --------------------------------------------------------------------------- resource names


def device_names(requests: Iterable[str], known: Collection[str]) -> frozenset[str]:
    """The accelerator resources among a pod's request names: any the fleet exposes as a
    device (`known`), and any other domain-qualified extended name but hugepages, so a
    device no member exposes yet still counts as one (and fits nowhere) rather than vanish."""
    return frozenset(
        n for n in requests if n in known or ("/" in n and not n.startswith("hugepages"))
    )


def normalise_name(name: str) -> str:
    """The plain spelling of a resource name: `requests.nvidia.com/gpu` -> `nvidia.com/gpu`.

    ResourceQuota spells requests with a `requests.` prefix; pods, capacities and queues use
    the bare name. `limits.*` names are kept as they are: a limit is a different resource.
    Storage is the exception: what PVCs request has no bare name in a ResourceQuota (the API
    server refuses `storage` there), so `storage` and `requests.storage` both read as
    `requests.storage`, the name a quota is shown and warned about under.
    """
    if not isinstance(name, str) or not name:
        raise QuantityError(f"invalid resource name {name!r}: empty")
    bare = name.removeprefix("requests.")
    if len(bare) > 253 or not _RESOURCE_NAME.fullmatch(bare):
        raise QuantityError(
            f"invalid resource name {name!r}: use letters, digits, '-', '_', '.' and '/',"
            " e.g. cpu, memory, nvidia.com/gpu"
        )
    return _STORAGE if bare == "storage" else bare


_STORAGE = "requests.storage"


def to_quota_name(name: str) -> str:
    """The spelling a member ResourceQuota needs: `nvidia.com/gpu` -> `requests.nvidia.com/gpu`.

    Kubernetes accepts extended resources in a ResourceQuota only with the `requests.`
    prefix; compute resources (cpu, memory, ephemeral-storage, hugepages-*) get it too, for
    symmetry, and storage has no other name (`normalise_name`). Object counts (`pods`,
    `count/jobs.batch`) and `limits.*` are unchanged.
    """
    bare = normalise_name(name)
    if bare.startswith(("limits.", "count/")):
        return bare
    if bare in _QUOTA_COMPUTE or bare.startswith("hugepages-") or _is_extended(bare):
        return "requests." + bare
    return bare


def _is_extended(name: str) -> bool:
    if "/" not in name:
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def _is_bytes(name: str) -> bool:
    bare = name.removeprefix("limits.").removeprefix("requests.")
    return bare in _BYTE_RESOURCES or bare.startswith("hugepages-")


# --------------------------------------------------------------------------- resource lists

_T = TypeVar("_T")


class ResourceList(Mapping[str, int]):
    """An immutable map of resource name -> amount in milli-units, with exact arithmetic.

    Names are normalised on the way in (`requests.cpu` is `cpu`). A missing resource is an
    amount of zero for arithmetic and fit checks; an explicit zero is kept, because in a quota
    or capability `nvidia.com/gpu: 0` (none allowed) differs from no entry (no limit).
    """

    __slots__ = ("_items",)
    _items: dict[str, int]

    def __init__(self, items: Mapping[str, int] | Iterable[tuple[str, int]] = ()) -> None:
        pairs = items.items() if isinstance(items, Mapping) else items
        merged: dict[str, int] = {}
        for name, amount in pairs:
            if isinstance(amount, bool) or not isinstance(amount, int):
                raise QuantityError(
                    f"invalid amount {amount!r} for {name!r}: ResourceList holds integer"
                    " milli-units; use ResourceList.from_wire for quantity strings"
                )
            key = normalise_name(name)
            if key in merged:
                raise QuantityError(f"resource {key!r} is given twice (as {name!r} too)")
            merged[key] = amount
        object.__setattr__(self, "_items", dict(sorted(merged.items())))

    @classmethod
    def _of(cls, items: dict[str, int]) -> ResourceList:
        """From names and integer amounts taken from other ResourceLists: already checked
        and normalised, so arithmetic (a cycle does a great deal) skips the name checks."""
        made = object.__new__(cls)
        object.__setattr__(made, "_items", dict(sorted(items.items())))
        return made

    # -- construction and wire form

    @classmethod
    def from_wire(
        cls, data: Mapping[str, str | int | float], *, allow_negative: bool = False
    ) -> ResourceList:
        """Parse `{"cpu": "500m", "requests.nvidia.com/gpu": 2}` as found in YAML or JSON."""
        if not isinstance(data, Mapping):
            raise QuantityError(
                f"invalid resource list {data!r}: expected a mapping of name to quantity"
            )
        parsed: list[tuple[str, int]] = []
        for name, text in data.items():
            try:
                amount = parse_quantity(text)
            except QuantityError as err:
                raise QuantityError(f"{name}: {err}") from None
            if amount < 0 and not allow_negative:
                raise QuantityError(f"{name}: invalid quantity {text!r}: must not be negative")
            parsed.append((name, amount))
        return cls(parsed)

    def to_wire(self) -> dict[str, str]:
        """Canonical strings, names sorted; byte resources use binary suffixes (`16Gi`)."""
        return {
            name: format_quantity(amount, binary=_is_bytes(name))
            for name, amount in self._items.items()
        }

    normalise_name = staticmethod(normalise_name)
    to_quota_name = staticmethod(to_quota_name)

    def to_quota(self) -> dict[str, str]:
        """The wire form with ResourceQuota spellings (`requests.nvidia.com/gpu`)."""
        return {to_quota_name(name): text for name, text in self.to_wire().items()}

    # -- mapping protocol

    def __getitem__(self, name: str) -> int:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    # Mapping's own `__contains__`, `get` and views go through `__getitem__` and `__iter__`
    # one key at a time, catching KeyError for a miss; the checks of every decision (quota,
    # capability, lending) ask these a great many times, so they read the dict directly.

    def __contains__(self, name: object) -> bool:
        return name in self._items

    @overload
    def get(self, name: str, /) -> int | None: ...
    @overload
    def get(self, name: str, /, default: int | _T) -> int | _T: ...
    def get(self, name: str, /, default: object = None) -> object:
        return self._items.get(name, default)

    def keys(self) -> KeysView[str]:
        return self._items.keys()

    def items(self) -> ItemsView[str, int]:
        return self._items.items()

    def values(self) -> ValuesView[int]:
        return self._items.values()

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ResourceList):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other.items())
        return NotImplemented

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("ResourceList is immutable")

    def __reduce__(self) -> tuple[type[ResourceList], tuple[dict[str, int]]]:
        return (ResourceList, (dict(self._items),))

    def __copy__(self) -> ResourceList:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> ResourceList:
        return self

    def __repr__(self) -> str:
        return f"ResourceList({self.to_wire()!r})"

    def __str__(self) -> str:
        return ", ".join(f"{name}={text}" for name, text in self.to_wire().items()) or "(none)"

    def amount(self, name: str) -> int:
        """The amount of one resource (any spelling), zero when absent."""
        found = self._items.get(name)  # keys are plain spellings: most lookups end here
        if found is not None:
            return found
        return self._items.get(normalise_name(name), 0)

    # -- arithmetic

    def __add__(self, other: Mapping[str, int]) -> ResourceList:
        return self._combine(other, lambda a, b: a + b)

    def __sub__(self, other: Mapping[str, int]) -> ResourceList:
        """Exact difference; may be negative (overcommit shows as a negative free amount)."""
        return self._combine(other, lambda a, b: a - b)

    def max_with(self, other: Mapping[str, int]) -> ResourceList:
        """Component-wise maximum (effective pod requests: max of init and app containers)."""
        return self._combine(other, max)

    def min_with(self, other: Mapping[str, int]) -> ResourceList:
        """Component-wise minimum, an amount listed on one side only being 0 on the other
        (what every node of a group has free, `FreeNodes`)."""
        return self._combine(other, min)

    def scaled(self, factor: int) -> ResourceList:
        """Every amount times a whole `factor` (per-pod requests times replicas)."""
        if isinstance(factor, bool) or not isinstance(factor, int):
            raise TypeError(f"scale factor must be an int, got {factor!r}")
        return ResourceList._of({name: amount * factor for name, amount in self._items.items()})

    def nonnegative(self) -> ResourceList:
        """Negative amounts raised to zero (free capacity of an overcommitted cluster)."""
        return ResourceList._of({name: max(amount, 0) for name, amount in self._items.items()})

    def only(self, names: Iterable[str]) -> ResourceList:
        """The entries for the given resource names (any spelling), others dropped."""
        wanted = {normalise_name(name) for name in names}
        return ResourceList._of({n: a for n, a in self._items.items() if n in wanted})

    def _combine(self, other: Mapping[str, int], op: Any) -> ResourceList:
        right = other if isinstance(other, ResourceList) else ResourceList(other)
        names = self._items.keys() | right._items.keys()
        return ResourceList._of(
            {name: op(self._items.get(name, 0), right._items.get(name, 0)) for name in names}
        )

    # -- comparisons

    def is_zero(self) -> bool:
        """True when every amount is zero (an empty list is zero)."""
        return all(amount == 0 for amount in self._items.values())

    def fits_within(self, limit: Mapping[str, int], *, unlisted_unlimited: bool = False) -> bool:
        """Whether every positive amount here is at most the same resource in `limit`.

        A resource missing from `limit` counts as zero, as for node capacity; pass
        `unlisted_unlimited=True` for quotas and capabilities, where no entry means no limit.
        """
        return not self.exceeding(limit, unlisted_unlimited=unlisted_unlimited)

    def exceeding(
        self, limit: Mapping[str, int], *, unlisted_unlimited: bool = False
    ) -> ResourceList:
        """By how much each resource exceeds `limit` (empty when everything fits)."""
        right = limit if isinstance(limit, ResourceList) else ResourceList(limit)
        over: dict[str, int] = {}
        for name, amount in self._items.items():
            if amount <= 0 or (unlisted_unlimited and name not in right._items):
                continue
            cap = right._items.get(name, 0)
            if amount > cap:
                over[name] = amount - cap
        return ResourceList(over)

    def dominant_share(self, capacity: Mapping[str, int]) -> Fraction:
        """The largest `used / capacity` over the resources used here, as an exact Fraction.

        Resources with no or zero capacity are left out (their share is undefined; use
        `fits_within` to reject them). An empty or all-zero list has share 0.
        """
        right = capacity if isinstance(capacity, ResourceList) else ResourceList(capacity)
        share = Fraction(0)
        for name, amount in self._items.items():
            cap = right._items.get(name, 0)
            if amount > 0 and cap > 0:
                share = max(share, Fraction(amount, cap))
        return share

    # -- pydantic integration

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        entries = core_schema.dict_schema(
            keys_schema=core_schema.str_schema(),
            values_schema=_quantity_schema(signed=False),
        )
        return core_schema.no_info_before_validator_function(
            _unwrap_resource_list,
            core_schema.no_info_after_validator_function(_build_resource_list, entries),
            serialization=core_schema.plain_serializer_function_ser_schema(
                _resource_list_to_wire, return_schema=core_schema.dict_schema()
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {
            "type": "object",
            "additionalProperties": _quantity_json_schema(signed=False),
            "description": "Resource name to Kubernetes quantity, e.g. {cpu: 4, memory: 16Gi,"
            " nvidia.com/gpu: 8}.",
        }


def _unwrap_resource_list(value: Any) -> Any:
    return value.to_wire() if isinstance(value, ResourceList) else value


def _build_resource_list(entries: dict[str, int]) -> ResourceList:
    try:
        return ResourceList(entries)
    except QuantityError as err:
        raise PydanticCustomError("resource_list", str(err)) from None


def _resource_list_to_wire(value: ResourceList) -> dict[str, str]:
    return value.to_wire()


# --------------------------------------------------------------------------- pydantic types


class _QuantityType:
    """Pydantic hook behind `Quantity` / `SignedQuantity`: validate, then serialise canonically."""

    def __init__(self, *, signed: bool) -> None:
        self.signed = signed

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return _quantity_schema(signed=self.signed)

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return _quantity_json_schema(signed=self.signed)


def _quantity_schema(*, signed: bool) -> core_schema.CoreSchema:
    def validate(value: Any) -> int:
        try:
            amount = parse_quantity(value)
        except QuantityError as err:
            raise PydanticCustomError("quantity", str(err)) from None
        if amount < 0 and not signed:
            raise PydanticCustomError(
                "quantity", "invalid quantity {value}: must not be negative", {"value": repr(value)}
            )
        return amount

    return core_schema.no_info_plain_validator_function(
        validate,
        serialization=core_schema.plain_serializer_function_ser_schema(
            format_quantity, return_schema=core_schema.str_schema()
        ),
    )


def _quantity_json_schema(*, signed: bool) -> JsonSchemaValue:
    sign = "[+-]?" if signed else "[+]?"
    pattern = f"^{sign}([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+|[numkMGTPE]|[KMGTPE]i)?$"
    number: dict[str, Any] = {"type": "number"} if signed else {"type": "number", "minimum": 0}
    return {
        "anyOf": [{"type": "string", "pattern": pattern}, number],
        "description": "Kubernetes quantity, e.g. 500m, 2, 1.5, 16Gi, 1e3.",
    }


Quantity = Annotated[int, _QuantityType(signed=False)]
"""A non-negative Kubernetes quantity: accepts `"500m"`, `2`, `"16Gi"`; holds milli-units;
serialises back to the canonical string."""

SignedQuantity = Annotated[int, _QuantityType(signed=True)]
"""Like `Quantity`, but negative amounts (`"-2"`) are allowed (adjustments, deltas)."""
