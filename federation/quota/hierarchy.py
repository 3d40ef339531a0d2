"""The queue hierarchy at admission: which queues take work, and every ancestor's cap.

Fed by the snapshot's queues (`spec.parent` links, checked for unknown parents and loops
when they are applied) and admitted usage; feeds the cycle (a workload whose queue takes no
work is held before placement), the quota filter and admission (a capability anywhere up
the tree caps the whole subtree below it).

The rules, as in Volcano's hierarchical queues:
 - Only a queue without children takes work. A workload naming a parent stays Pending and
   says which children to use; so does one naming a queue that is not defined, except the
   default queue, which without a Queue object of its name admits with no capability and
   no guarantee (a fresh federation works before anyone writes a Queue; it borrows only
   what no queue is guaranteed, and namespace quota still applies).
 - A queue's capability caps what its whole subtree holds: the queue itself (work admitted
   before it had children) and every descendant. The children's own capabilities may add
   up to more than the parent's; the parent's cap is what binds then.
 - Fair share, borrowing and reclaim act between the queues that take work. A parent's
   guarantee covers its children's (checked when applied) and, in the federation, is kept
   for its whole subtree (`accounting`: never lent outside it). Under every capped
   ancestor the same unused guarantees are kept: a sibling's unused guarantee is not
   room under the parent's cap either, so a child can always reach its guarantee without
   reclaim across the subtree. Preemption inside a queue also makes room under its
   ancestors' capabilities, from that queue's own lower-priority work only.

Why a tree object per queue set: a cycle asks for each decision, and the queue set changes
only when a Queue is written, so the links are resolved once and kept with the set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from federation.quota import accounting
from federation.resources import ResourceList
from policies.models.queue import Queue

__all__ = ["QueueTree", "ancestor_limits", "ancestor_problem", "refusal", "tree_of"]


@dataclass(frozen=True, slots=True)
class QueueTree:
    """The links of one queue set, resolved: parents that are not defined and loops (which
    validation rejects, but a registry written by hand may hold) end a chain."""

    queues: Mapping[str, Queue]
    children: Mapping[str, tuple[str, ...]]
    """Queue -> its children in name order (only queues that have any)."""
    ancestors: Mapping[str, tuple[str, ...]]
    """Queue -> its defined ancestors, nearest first (only queues that have any)."""
    members: Mapping[str, tuple[str, ...]]
    """Parent -> itself and every queue below it: whose usage its capability counts."""


_LAST: list[QueueTree] = []


def tree_of(queues: Mapping[str, Queue]) -> QueueTree:
    """The tree of `queues`, kept while the same mapping object is asked about."""
    last = _LAST[0] if _LAST else None  # read once: another thread may replace it
    if last is not None and last.queues is queues:
        return last
    children: dict[str, list[str]] = {}
    ancestors: dict[str, tuple[str, ...]] = {}
    for name in sorted(queues):
        chain: list[str] = []
        parent = queues[name].spec.parent
        while parent is not None and parent in queues and parent != name and parent not in chain:
            chain.append(parent)
            parent = queues[parent].spec.parent
        if chain:
            ancestors[name] = tuple(chain)
            children.setdefault(chain[0], []).append(name)
    members: dict[str, list[str]] = {}
    for name, line in ancestors.items():
        for above in line:
            members.setdefault(above, [above]).append(name)
    tree = QueueTree(
        queues=queues,
        children={k: tuple(v) for k, v in children.items()},
        ancestors=ancestors,
        members={k: tuple(v) for k, v in members.items()},
    )
    _LAST[:] = [tree]
    return tree


def refusal(
    name: str, queues: Mapping[str, Queue], *, default: str, named_by: str = "fedctl.io/queue"
) -> str | None:
    """Why queue `name` takes no work, or None when it does; `named_by` is the field the
    workload names it in (`Workload.queue_field`: a Volcano Job's `spec.queue`), which a
    queue not defined is to be corrected in."""
    if name not in queues:
        if name == default:
            return None
        known = ", ".join(sorted(q for q in queues if q not in tree_of(queues).children))
        return (
            f"queue {name} is not defined (queues that take work: {known or 'none'}):"
            f" create it or correct the workload's {named_by}"
        )
    tree = tree_of(queues)
    below = tree.children.get(name)
    if below:
        # The queues below it that take work (leaves): a child that is a parent too would
        # refuse the workload in turn.
        leaves = [m for m in tree.members[name] if m != name and m not in tree.children]
        return (
            f"queue {name} has child queues ({', '.join(below)}) and takes no work itself:"
            f" submit to one that takes work ({', '.join(sorted(leaves)) or 'none'})"
        )
    return None


def _capped_above(
    name: str, queues: Mapping[str, Queue], usage: accounting.Usage
) -> list[tuple[Queue, dict[str, int], dict[str, int]]]:
    """Each ancestor of `name` with a capability, nearest first, with what its subtree
    holds and what it keeps for guarantees below it that are not `name`'s to use."""
    tree = tree_of(queues)
    out: list[tuple[Queue, dict[str, int], dict[str, int]]] = []
    for above in tree.ancestors.get(name, ()):
        parent = queues[above]
        if parent.spec.capability is None:
            continue
        members = tree.members[above]
        used = usage.totals_of(members)
        guaranteed = {r for m in members for r, a in queues[m].spec.guarantee.items() if a > 0}
        reserved = {
            resource: kept
            for resource in sorted(guaranteed)
            if (
                kept := accounting.reserved_against(
                    name, resource, queues=queues, usage=usage, within=above
                )
            )
            > 0
        }
        out.append((parent, used, reserved))
    return out


def ancestor_problem(
    name: str, queues: Mapping[str, Queue], usage: accounting.Usage, charge: ResourceList
) -> str | None:
    """Why `charge` would take an ancestor of queue `name` over its capability, or None."""
    for parent, used, reserved in _capped_above(name, queues, usage):
        found = accounting.capability_problem(parent, used, charge, child=name, reserved=reserved)
        if found is not None:
            return found
    return None


def ancestor_limits(
    name: str, queues: Mapping[str, Queue], usage: accounting.Usage
) -> list[tuple[ResourceList, ResourceList]]:
    """(subtree usage with its siblings' unused guarantees, capability) of each capped
    ancestor: what preemption inside queue `name` must also make room under
    (`accounting.preemption_victims`)."""
    return [
        (ResourceList(used) + ResourceList(reserved), parent.spec.capability)
        for parent, used, reserved in _capped_above(name, queues, usage)
        if parent.spec.capability is not None
    ]
