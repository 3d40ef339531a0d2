"""Kubernetes resource quantities, parsed exactly and printed the way the apiserver does.

The scheduler compares pod requests against node allocatable, quota admission adds pod
usage to `status.used`, and both print values back into messages that clients match
(`Insufficient nvidia.com/gpu`, `requested: requests.memory=2Gi`). Floats would turn
`0.1 + 0.2` CPUs into a rejection, so values are exact `Fraction`s rounded up to nano
units like upstream, and a `Quantity` keeps the format it was written in (binary `Gi`,
decimal `k`/`m`, or exponent) because upstream sums print in the left operand's format.
The simulator stands alone, so this is its own copy rather than the controller's.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["Quantity", "format_milli", "parse", "to_milli"]

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DEC_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BIN_SUFFIX = {power: suffix for suffix, power in _BINARY.items()}
_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$")
_NANO = Fraction(1, 10**9)

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"


@dataclass(frozen=True)
class Quantity:
    """An exact amount plus the notation it prints in."""

    value: Fraction
    fmt: str = DECIMAL_SI

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.value + other.value, self.fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.value - other.value, self.fmt)

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        return self.value <= other.value

    def milli(self) -> int:
        """Milli-units, rounded up (upstream `MilliValue`)."""
        return math.ceil(self.value * 1000)

    def whole(self) -> int:
        """Whole units, rounded up (upstream `Value`)."""
        return math.ceil(self.value)

    def __str__(self) -> str:
        return _canonical(self.value, self.fmt)


@functools.lru_cache(maxsize=4096)
def parse(text: str | int | float) -> Quantity:
    """Parse `500m`, `2Gi`, `1e3`, `8`; ValueError on anything upstream would reject.

    Cached: a cluster sees the same few request strings on thousands of pods.
    """
    if isinstance(text, bool):
        raise ValueError(f"quantities must be strings or numbers, got {text!r}")
    if isinstance(text, int):
        return Quantity(Fraction(text))
    if isinstance(text, float):
        return Quantity(_round_nano(Fraction(str(text))))
    m = _RE.match(text.strip())
    if not m or not text.strip():
        raise ValueError(f"quantities must match the regular expression: {text!r}")
    number, exponent, suffix = m.groups()
    base = Fraction(number)
    if exponent:
        return Quantity(_round_nano(base * Fraction(10) ** int(exponent[1:])), DECIMAL_EXPONENT)
    if suffix in _BINARY:
        return Quantity(_round_nano(base * 1024 ** _BINARY[suffix]), BINARY_SI)
    return Quantity(_round_nano(base * Fraction(10) ** _DECIMAL[suffix or ""]), DECIMAL_SI)


@functools.lru_cache(maxsize=4096)
def to_milli(text: str | int | float) -> int:
    """Shortcut: parse and return milli-units (the scheduler's integer currency)."""
    return parse(text).milli()


def format_milli(milli: int, *, binary: bool = False) -> str:
    """Print a milli-unit amount canonically (BinarySI for memory-like resources)."""
    return _canonical(Fraction(milli, 1000), BINARY_SI if binary else DECIMAL_SI)


def _round_nano(value: Fraction) -> Fraction:
    """Upstream keeps nano precision and rounds anything finer away from zero."""
    scaled = value / _NANO
    if scaled.denominator == 1:
        return value
    rounded = math.ceil(scaled) if value > 0 else math.floor(scaled)
    return rounded * _NANO


def _canonical(value: Fraction, fmt: str) -> str:
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if (
        fmt == BINARY_SI
        and magnitude.denominator == 1
        and magnitude >= 1024
        and (text := _binary(int(magnitude)))
    ):
        return sign + text
    exp = 18
    while exp > -9 and (magnitude / Fraction(10) ** exp).denominator != 1:
        exp -= 3
    mantissa = magnitude / Fraction(10) ** exp
    if mantissa.denominator != 1:  # finer than nano cannot happen after rounding
        mantissa = Fraction(math.ceil(mantissa))
    # The largest exponent whose mantissa is whole wins: upstream never prints 1000k.
    exponent = f"e{exp}" if exp else ""
    suffix = exponent if fmt == DECIMAL_EXPONENT else _DEC_SUFFIX[exp]
    return f"{sign}{int(mantissa)}{suffix}"


def _binary(value: int) -> str:
    power = 0
    while power < 6 and value % 1024 == 0:
        value //= 1024
        power += 1
    if power == 0:
        return ""
    return f"{value}{_BIN_SUFFIX[power]}"
