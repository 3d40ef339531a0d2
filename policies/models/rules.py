"""The errors model rules raise, and Kubernetes' spelling rules for labels and annotations.

Role: the lowest layer of `policies.models`, below `base` (whose `ObjectMeta` checks its
labels and annotations here) and `common` (selectors, overriders), so every model refuses
what a member's API server refuses in the same words. Fed by nothing; feeds every model,
and `fedctl cluster label`, which refuses a label before it writes anything.

Why `RuleError.at`: the loader turns a rule's failure into `FILE:LINE:COL: path: message`,
and `at` (relative to the model that raised it) points at the culprit rather than at the
whole mapping; `on_key` puts the column on a mapping key, where a bad label key is.

Why `STORED`: a rule added in a release must not make what an earlier one stored
unreadable. A Cluster stored with a label this release refuses would otherwise vanish from
every list, and from the scheduler, on upgrade, and could not even be read to be mended.
Objects read back (from the registry, or from the API serving it) are validated with this
context, and the rules here that came later than the objects let it pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Final

from pydantic import AfterValidator, ValidationInfo

__all__ = [
    "STORED",
    "Annotations",
    "Labels",
    "PathPart",
    "RuleError",
    "RuleErrors",
    "annotation_key_problems",
    "key_value_problems",
    "label_problems",
    "label_value_problem",
    "qualified_name_problem",
    "raise_all",
    "stored",
]

PathPart = str | int


class RuleError(ValueError):
    """A cross-field rule failed; `at` is the path, relative to the model, of the culprit
    (`on_key`: of its key, not its value)."""

    def __init__(
        self, message: str, *, at: tuple[PathPart, ...] = (), on_key: bool = False
    ) -> None:
        super().__init__(message)
        self.at = at
        self.on_key = on_key


class RuleErrors(ValueError):
    """Several independent rules failed at once: the loader reports each, so a document
    with five bad values takes one round of fixes, not five."""

    def __init__(self, errors: list[RuleError]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors


def raise_all(problems: Sequence[RuleError]) -> None:
    """Raise the one problem as is, several as `RuleErrors`, none not at all."""
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise RuleErrors(list(problems))


STORED: Final[Mapping[str, bool]] = {"fedctl.stored": True}
"""Validation context of an object read back from where it was stored (module doc)."""


def stored(info: ValidationInfo) -> bool:
    """Whether the object being validated is read back (`STORED`), not written."""
    context = info.context
    return isinstance(context, Mapping) and bool(context.get("fedctl.stored"))


# Kubernetes' own spelling rules (apimachinery `IsQualifiedName`, `IsValidLabelValue`): a
# member refuses a label that breaks them, and Karmada's webhook refuses the policy first.
_NAME_PART: Final = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_LABEL: Final = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN: Final = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
_NAME_RULE: Final = "letters, digits, '-', '_' or '.', beginning and ending with a letter or digit"


def qualified_name_problem(value: str) -> str | None:
    """Why `value` is not a Kubernetes qualified name (`[dns.prefix/]name`), or None."""
    parts = value.split("/")
    if len(parts) > 2:
        return "it has more than one '/'"
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return "its prefix before '/' is empty"
        if len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix):
            return (
                f"its prefix {prefix!r} is not a DNS subdomain"
                " (lowercase letters, digits, '-' and '.')"
            )
    if not name:
        return "its name part is empty"
    if len(name) > 63:
        return f"its name part is {len(name)} characters long, more than 63"
    if not _NAME_PART.fullmatch(name):
        return f"its name part must be {_NAME_RULE}"
    return None


def label_value_problem(value: str) -> str | None:
    """Why `value` is not a valid Kubernetes label value (empty is valid), or None."""
    if len(value) > 63:
        return f"it is {len(value)} characters long, more than 63"
    if value and not _NAME_PART.fullmatch(value):
        return f"it must be empty or {_NAME_RULE}"
    return None


def label_problems(labels: Mapping[str, str], *, at: tuple[PathPart, ...] = ()) -> list[RuleError]:
    """What a member's API server would refuse in `labels`, each at its key under `at`."""
    found: list[RuleError] = []
    for key, value in labels.items():
        problem = qualified_name_problem(key)
        if problem:
            message = f"label key {key!r} is not a qualified name: {problem}"
            found.append(RuleError(message, at=(*at, key), on_key=True))
        problem = label_value_problem(value)
        if problem:
            message = f"label value {value!r} of {key!r} is not valid: {problem}"
            found.append(RuleError(message, at=(*at, key)))
    return found


def annotation_key_problems(
    keys: Sequence[str] | Mapping[str, str], *, at: tuple[PathPart, ...] = ()
) -> list[RuleError]:
    """What a member's API server would refuse among annotation keys (their values are
    free); Kubernetes checks them in lower case: only the letters' case is free."""
    found: list[RuleError] = []
    for key in keys:
        problem = qualified_name_problem(key.lower())
        if problem:
            message = f"annotation key {key!r} is not a qualified name: {problem}"
            found.append(RuleError(message, at=(*at, key), on_key=True))
    return found


def key_value_problems(
    what: str, key: str | None, value: str | None, *, key_at: PathPart = "key"
) -> list[RuleError]:
    """A taint's, toleration's or grouping label's key and value, by the label rules: the
    API server refuses a taint or toleration that breaks them (`ValidateTaints`,
    `ValidateTolerations`), and a label key no cluster can carry groups nothing."""
    found: list[RuleError] = []
    problem = qualified_name_problem(key) if key else None
    if key and problem:
        found.append(
            RuleError(f"{what} key {key!r} is not a qualified name: {problem}", at=(key_at,))
        )
    problem = label_value_problem(value) if value else None
    if value and problem:
        found.append(
            RuleError(f"{what} value {value!r} of {key!r} is not valid: {problem}", at=("value",))
        )
    return found


def _labels(value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
    if value and not stored(info):
        raise_all(label_problems(value))
    return value


def _annotations(value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
    if value and not stored(info):
        raise_all(annotation_key_problems(value))
    return value


Labels = Annotated[dict[str, str], AfterValidator(_labels)]
"""Labels as Kubernetes takes them: qualified-name keys, values of at most 63 characters."""

Annotations = Annotated[dict[str, str], AfterValidator(_annotations)]
"""Annotations as Kubernetes takes them: qualified-name keys, any values."""
