"""Chips a placement policy lists that no arch it accepts carries.

Fed by the loaded documents (`fedctl validate`) and, for `fedctl apply`, the editor and an
offline plan, the AcceleratorProfiles and Clusters of the fleet they are judged against
(`LoadResult.against_fleet`); feeds their findings.

Why: the scheduler takes a listed chip only on nodes whose arch `spec.fedctl.arches`
accepts. `chips: [ascend-910b], arches: [amd64]` therefore never uses the arm64 Ascend
nodes, which is right for an amd64-only image but silent: the workload waits, or runs on
a less preferred chip, and nothing said the two lists cannot both be met. The chip's arch
comes from its AcceleratorProfile or a Cluster that declares it; a chip known from neither
is left to the undefined-chip warning.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping

from policies.loading.documents import Loaded, finding_at
from policies.loading.findings import Finding
from policies.models.accelerator import AcceleratorProfile, is_arch
from policies.models.cluster import Cluster
from policies.models.propagation import FedctlClusterPropagationPolicy, FedctlPropagationPolicy

__all__ = ["arch_conflicts", "chip_arches", "unmet"]


def chip_arches(models: Iterable[object]) -> dict[str, tuple[str, str]]:
    """Chip model -> (the arch of the nodes carrying it, what says so). A profile is the
    chip's own word and wins over a Cluster's declaration."""
    models = list(models)
    found: dict[str, tuple[str, str]] = {}
    for model in models:
        if isinstance(model, AcceleratorProfile):
            found[model.model] = (model.spec.arch, f"AcceleratorProfile {model.model}")
    for model in models:
        if isinstance(model, Cluster):
            for chip in model.spec.chips:
                if chip.arch and chip.model not in found:
                    found[chip.model] = (chip.arch, f"Cluster {model.metadata.name}")
    return found


def unmet(
    chips: Iterable[str], arches: Collection[str], known: Mapping[str, tuple[str, str]]
) -> Iterator[tuple[int, str]]:
    """(index, why) for each of `chips` whose arch `arches` leaves out (none when `arches`
    is empty): `why` says which arch and what says so, to follow `chip 'x' is on`."""
    if not arches:
        return
    for i, chip in enumerate(chips):
        arch, said = (chip, "") if is_arch(chip) else known.get(chip, ("", ""))
        if arch and arch not in arches:
            yield i, f"{arch} nodes" + (f" ({said})" if said else "")


def arch_conflicts(objects: Iterable[Loaded], *, fleet: Iterable[object] = ()) -> list[Finding]:
    """A warning at each chip a fedctl placement policy lists whose arch (its own, for a
    plain arch; else as the documents or `fleet` define it) its `arches` leave out."""
    objects = list(objects)
    known = chip_arches([*fleet, *(o.model for o in objects)])
    found: list[Finding] = []
    for obj in objects:
        model = obj.model
        if not isinstance(model, FedctlPropagationPolicy | FedctlClusterPropagationPolicy):
            continue
        placement = model.spec.fedctl
        if placement is None:
            continue
        accepted = ", ".join(placement.arches)
        found.extend(
            finding_at(
                obj,
                ("spec", "fedctl", "chips", i),
                f"chip {placement.chips[i]!r} is on {why}, and spec.fedctl.arches accepts"
                f" only {accepted}: it is never chosen",
            )
            for i, why in unmet(placement.chips, placement.arches, known)
        )
    return found
