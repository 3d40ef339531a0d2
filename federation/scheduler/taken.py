"""Where an admitted placement's pods go on each cluster: the node flavors charged to the
cycle state (`take`), and the chip or arch its Binding records there (`kept_chips`,
`kept_arches` for the replicas a placement keeps).

Fed by admission (`Admitter._commit`) with a placement and the cycle state; feeds the
admission record (`accounting.Admission.flavors`, `.chips`) and the Binding's targets.
Why apart from admission: the rules here are about nodes (which flavors, one chip per
cluster, the replicas kept where they run), not about queues and quotas.
"""

from __future__ import annotations

import numpy as np

from federation.scheduler import framework as fw
from federation.scheduler.plugins import capacity
from policies.models.accelerator import is_arch

__all__ = ["Hint", "Taken", "kept_arches", "kept_chips", "take"]

Taken = tuple[tuple[str, int, int], ...]
"""(cluster, flavor, pods) an admission took (`accounting.Admission.flavors`)."""

Hint = tuple[int, int, list[int] | None]
"""What the placement knew of one cluster's flavors (the incremental path): the flavor
`capacity.chosen_flavor` names, the replicas it holds, and when that is fewer than those
placed, every flavor's free replicas (`capacity.flavor_available`'s row; else None)."""


def take(
    state: fw.CycleState,
    request: fw.JobRequest,
    row: int,
    replicas: int,
    hint: Hint | None = None,
) -> tuple[tuple[int, int], ...]:
    """Charge the job's pods on one cluster to its flavors; returns (flavor, pods) taken."""
    if hint is not None and hint[1] >= replicas:  # the flavor and its room, known already
        state.take(row, hint[0], replicas, request.vector)
        return ((hint[0], replicas),)
    kept = capacity.kept_chip(request, state, state.snapshot.clusters[row].name)
    # The hint names the flavor `chosen_flavor` would (the incremental path keeps that
    # answer current), which asked afresh re-reads every cluster charged since the shape's
    # view was last brought up to date.
    first = hint[0] if hint is not None else capacity.chosen_flavor(request, state, row)
    known = hint[2] if hint is not None else None
    if (
        known is None
        and kept is None
        and capacity.one_flavor_available(request, state, row, first) >= replicas
    ):
        state.take(row, first, replicas, request.vector)  # the common case: one flavor
        return ((first, replicas),)
    if known is not None:
        # Counted already: the vectorised count of one row first writes back every flavor
        # charged since it last ran, well over 100 us a time in a long cycle.
        avail = np.array(known, dtype=np.int64)
    else:
        avail = capacity.flavor_available(request, state, np.array([row], dtype=np.int64))[0]
    if request.devices:  # all on one chip: the kept replicas' or the chosen flavor's
        chip_of = state.snapshot.flavor_chip[row]
        chip = chip_of[first] if kept is None else kept
        avail = np.where(chip_of == chip, avail, 0)
        if kept is not None and chip_of[first] != kept:
            ranked = [int(f) for f in np.argsort(-avail, kind="stable")]
            first = next((f for f in ranked if chip_of[f] == kept), first)
    order = [first] + [int(f) for f in np.argsort(-avail) if int(f) != first]
    left = replicas
    taken: list[tuple[int, int]] = []
    for flavor in order:
        if left <= 0:
            break
        n = min(left, int(avail[flavor])) if avail[flavor] > 0 else 0
        if n:
            state.take(row, flavor, n, request.vector)
            taken.append((flavor, n))
            left -= n
    if left > 0:  # duplicated or over-estimated: charge the rest to the first flavor
        state.take(row, first, left, request.vector)
        taken.append((first, left))
    return tuple(taken)


def kept_chips(
    chips: dict[str, str | None], request: fw.JobRequest, state: fw.CycleState
) -> dict[str, str | None]:
    """Device pods where a placement keeps replicas it runs: on the chip those run on (the
    added ones join them, `take`), not the chip a fresh pod would get there, which names
    none when the cluster has no room left for one."""
    out = dict(chips)
    names = state.snapshot.chips
    for name in out:
        kept = capacity.kept_chip(request, state, name)
        if kept is not None:
            out[name] = names[kept]
    return out


def kept_arches(
    kinds: dict[str, str | None], request: fw.JobRequest, taken: Taken
) -> dict[str, str | None]:
    """The arch CPU pods are pinned to where a placement keeps replicas it runs: the one
    their Binding records (where the copies were counted, `held`), and where more were
    added, that one only when the added pods took its nodes too, else none (either).

    Why: scaling up keeps the running replicas where they are and places only the added
    ones, and one arch recorded for all of them from the added pods alone pinned the kept
    replicas, counted on the other arch's nodes (or on either), to nodes without room.
    """
    grew = {name for name, _, _ in taken}
    out = dict(kinds)
    for name, was in request.copies_chips.items():
        if name not in out or not request.previous.get(name) or (was and not is_arch(was)):
            continue
        out[name] = (was if out[name] == was else None) if name in grew else was
    return out
