"""Queue cross-checks on the documents given together: work that would wait for ever.

Role: with queues and workloads in the same files, say what the scheduler would only say
later as a Pending reason: a workload from a namespace its queue (or an ancestor) does not
serve, a workload naming a parent queue, and a child queue whose namespaces share none with
its parent's. Fed by `policies.loading.files` (the set-wide step of `fedctl validate` and
`apply`); feeds warnings to the same `LoadResult`.

Why warnings, not errors: the server may hold other queues of the same names, and a
namespace list may be meant to change before the work arrives. Why they matter most when
migrating: Kueue ties a LocalQueue to one namespace, fedctl's Queue is cluster-scoped and
serves the namespaces its `spec.namespaces` lists, so the translated queue is where a
namespace slip happens.
"""

from __future__ import annotations

from collections.abc import Iterable

from policies.loading.documents import Loaded, finding_at, queue_children
from policies.loading.findings import Finding
from policies.models.common import RuleError
from policies.models.queue import Queue
from policies.models.workload import Workload

__all__ = ["queue_findings"]


def queue_findings(objects: Iterable[Loaded]) -> list[Finding]:
    """Warnings for workloads their queue, given alongside, never admits, and for child
    queues that can never take work."""
    objects = list(objects)
    queues = {o.model.metadata.name: o.model for o in objects if isinstance(o.model, Queue)}
    if not queues:
        return []
    children = queue_children((q.name, q.spec.parent) for q in queues.values())
    found = [*_disjoint_children(objects, queues)]
    for obj in objects:
        model = obj.model
        if not isinstance(model, Workload) or model.is_opaque:
            continue
        try:
            name = model.queue
        except RuleError:
            continue  # refused with its own finding
        if name is None or name not in queues:
            continue
        if children.get(name):
            message = (
                f"queue {name!r} is a parent: it takes no work, so the workload waits;"
                f" name one of its children ({', '.join(sorted(children[name]))})"
            )
            found.append(finding_at(obj, model.queue_path, message))
            continue
        refusing = _refusing(name, model.namespace, queues)
        if refusing is not None:
            found.append(finding_at(obj, model.queue_path, _not_served(name, refusing, model)))
    return found


def _chain(name: str, queues: dict[str, Queue]) -> list[Queue]:
    """The queue `name` and its ancestors among `queues`, nearest first (a loop stops it:
    the tree check reports loops)."""
    chain: list[Queue] = []
    current: str | None = name
    while current is not None and current in queues and queues[current] not in chain:
        chain.append(queues[current])
        current = queues[current].spec.parent
    return chain


def _refusing(name: str, namespace: str, queues: dict[str, Queue]) -> Queue | None:
    """The nearest of the queue and its ancestors whose namespaces leave `namespace` out
    (a parent's list holds for its whole subtree), or None."""
    for queue in _chain(name, queues):
        if queue.spec.namespaces and namespace not in queue.spec.namespaces:
            return queue
    return None


def _not_served(name: str, refusing: Queue, model: Workload) -> str:
    listed = ", ".join(refusing.spec.namespaces)
    whose = f"queue {name}" if refusing.name == name else f"queue {name}'s parent {refusing.name}"
    return (
        f"{whose} takes work from namespaces {listed} only, not {model.namespace}: the"
        " workload waits, Pending (a fedctl Queue is cluster-scoped and serves the"
        " namespaces its spec.namespaces lists; add this one there, or name a queue that"
        " serves it)"
    )


def _disjoint_children(objects: list[Loaded], queues: dict[str, Queue]) -> list[Finding]:
    """A child queue listing namespaces none of which its ancestors serve: every workload
    naming it would wait."""
    found: list[Finding] = []
    for obj in objects:
        queue = obj.model
        if not isinstance(queue, Queue) or not queue.spec.namespaces or not queue.spec.parent:
            continue
        for ancestor in _chain(queue.spec.parent, queues):
            allowed = ancestor.spec.namespaces
            if allowed and not set(allowed) & set(queue.spec.namespaces):
                message = (
                    f"namespaces ({', '.join(queue.spec.namespaces)}) share none with"
                    f" {ancestor.name}'s ({', '.join(allowed)}): an ancestor's list holds for"
                    " its whole subtree, so this queue can never take work"
                )
                found.append(finding_at(obj, ("spec", "namespaces"), message))
                break
    return found
