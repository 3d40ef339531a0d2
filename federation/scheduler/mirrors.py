"""What the scheduling loop reads from the registry: list+watch mirrors of each prefix, the
copy of them a cycle reads (`Seen`), and the workloads, Bindings and phases by workload ref
kept across cycles (`Views`).

Fed by the registry's list and watch streams; feeds the loop (`loop.py`), whose cycles read
`Views` and sort only the refs `Views.update` names again. Why apart from the loop: this
is the bookkeeping of what changed where, with no scheduling in it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from federation.registry import codec, keys
from federation.scheduler import binder as binder_mod
from federation.scheduler import reconcile
from policies.models.binding import Binding, WorkloadReference
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.work import WorkloadStatus
from policies.models.workload import Workload

__all__ = ["Mirror", "Seen", "Views", "ref_of_status", "union"]

M = TypeVar("M", bound=BaseModel)


class Mirror(Generic[M]):
    """Objects under `prefix` by key; `on_change(old, new)` after every change."""

    def __init__(
        self,
        typed: codec.TypedStore[M],
        prefix: str,
        on_change: Callable[[M | None, M | None], None],
    ) -> None:
        self.typed, self.prefix, self._on_change = typed, prefix, on_change
        self.items: dict[str, codec.Stored[M]] = {}
        self._revision = 0
        self.seen = 0
        """The latest registry revision this mirror has read (listed or watched)."""
        self._changed: set[str] | None = None
        """Keys put or deleted since `changes()` was last asked (None: possibly all)."""

    async def load(self) -> None:
        listed = await self.typed.list(self.prefix)
        self.items = {item.key: item for item in listed.items}
        self._revision = listed.revision + 1
        self.seen = listed.revision
        self._changed = None

    def changes(self) -> set[str] | None:
        """The keys changed since the last call (None: the whole mirror may have)."""
        changed, self._changed = self._changed, set()
        return changed

    async def run(self) -> None:
        async for event in self.typed.watch(self.prefix, start_revision=self._revision):
            if isinstance(event, codec.Put):
                old = self.items.get(event.item.key)
                self.items[event.item.key] = event.item
                self.seen = max(self.seen, event.item.revision)
                self._note(event.item.key)
                self._on_change(old.obj if old else None, event.item.obj)
            elif isinstance(event, codec.Deleted):
                gone = self.items.pop(event.key, None)
                self.seen = max(self.seen, event.revision)
                self._note(event.key)
                self._on_change(gone.obj if gone else None, None)
            else:
                self.items = {item.key: item for item in event.items}
                self.seen = max(self.seen, event.revision)
                self._changed = None
                self._on_change(None, None)

    def _note(self, key: str) -> None:
        if self._changed is not None:
            self._changed.add(key)

    def objects(self) -> list[M]:
        return [item.obj for item in self.items.values()]


def ref_of_status(w: WorkloadReference) -> keys.WorkloadRef:
    return keys.WorkloadRef(w.namespace, keys.kind_segment(w.api_version, w.kind), w.name)


@dataclass(frozen=True)
class Seen:
    """The mirrors as they stood when a cycle began (shallow copies, taken on the event
    loop), for the cycle's worker thread to read while the watches go on changing them."""

    workloads: dict[str, codec.Stored[Any]]
    policies: list[Any]
    clusters: list[Cluster]
    statuses: dict[str, codec.Stored[ClusterStatus]]
    bindings: dict[str, codec.Stored[Binding]]
    results: dict[str, codec.Stored[WorkloadStatus]]
    changed: tuple[set[str] | None, set[str] | None, set[str] | None] = (None, None, None)
    """Keys of the workloads, Bindings and workload statuses changed since the last copy
    (None: possibly all)."""
    revision: int = 0
    """The latest registry revision the mirrors had read."""


def union(first: Iterable[str], then: Iterable[str]) -> dict[str, None]:
    """The keys of both, in order, each once."""
    return dict.fromkeys([*first, *then])


class Views:
    """Workloads, Bindings and workload phases by workload ref, as the cycles read them,
    kept across cycles and changed only at the keys a mirror changed since the last cycle
    (and the Bindings this loop wrote that its watch has not delivered yet).

    Why: rebuilding them from the whole mirrors walked every stored workload, Binding and
    status each cycle, most of a cycle that had little to decide once tens of thousands
    were admitted. `update` also names the refs whose view changed, which is what the
    ledger sorts again. Built afresh (every key) for a new term, after a mirror was listed
    again, and after a cycle that failed (the changes it took are gone).
    """

    def __init__(self) -> None:
        self.entries: dict[str, reconcile.Entry] = {}
        self.bindings: dict[str, Binding] = {}
        self.phases: dict[str, str | None] = {}
        self.redo: set[str] = set()
        """Refs to sort again next cycle though nothing stored changed: the loop's own
        memory of their fingerprint did (an admission or an eviction it decided)."""
        self._entry_of: dict[str, tuple[object, str]] = {}
        self._phase_of: dict[str, tuple[object, str]] = {}
        self._binding_of: dict[str, str] = {}
        self._built = False

    def update(self, seen: Seen, written: dict[str, tuple[int, Binding | None]]) -> set[str] | None:
        """Bring the views up to `seen`; the refs whose inputs changed (None: all may)."""
        changed = seen.changed
        dirty, self.redo = self.redo, set()
        everything = not self._built or None in changed
        workloads: Iterable[str] = changed[0] or ()
        bindings: Iterable[str] = changed[1] or ()
        results: Iterable[str] = changed[2] or ()
        if everything:  # in the mirrors' order, then whatever they no longer hold
            workloads = union(seen.workloads, self._entry_of)
            bindings = union(seen.bindings, self._binding_of)
            results = union(seen.results, self._phase_of)
            self._built = True
        for key in workloads:
            self._workload(key, seen.workloads.get(key), dirty)
        for key in results:
            self._phase(key, seen.results.get(key), dirty)
        for key in union(bindings, written):
            self._binding(key, seen.bindings.get(key), written, dirty)
        return None if everything else dirty

    def _workload(self, key: str, item: codec.Stored[Any] | None, dirty: set[str]) -> None:
        known = self._entry_of.get(key)
        if known is not None and known[0] is item:
            return
        if known is not None:
            del self._entry_of[key]
            self.entries.pop(known[1], None)
            dirty.add(known[1])
        if item is None or not isinstance(item.obj, Workload):
            return
        identity = reconcile.ref_of(item.obj)
        ref = str(identity)
        self._entry_of[key] = (item, ref)
        self.entries[ref] = reconcile.Entry(item.obj, item.create_revision, identity)
        dirty.add(ref)

    def _phase(self, key: str, item: codec.Stored[WorkloadStatus] | None, dirty: set[str]) -> None:
        known = self._phase_of.get(key)
        if known is not None and known[0] is item:
            return
        if known is not None:
            del self._phase_of[key]
            self.phases.pop(known[1], None)
            dirty.add(known[1])
        if item is None:
            return
        ref = str(ref_of_status(item.obj.workload))
        self._phase_of[key] = (item, ref)
        self.phases[ref] = item.obj.phase
        dirty.add(ref)

    def _binding(
        self,
        key: str,
        item: codec.Stored[Binding] | None,
        written: dict[str, tuple[int, Binding | None]],
        dirty: set[str],
    ) -> None:
        """The mirror's Binding, overlaid with this loop's write until the watch has it."""
        binding = item.obj if item is not None else None
        mine = written.get(key)
        if mine is not None:
            if item is not None and item.revision >= mine[0]:
                del written[key]  # the watch caught up
            elif item is None and mine[1] is None:
                del written[key]  # deleted, and the mirror agrees
            else:
                binding = mine[1]
        ref = self._binding_of.get(key)
        if ref is not None and self.bindings.get(ref) is binding:
            return
        if ref is not None:
            del self._binding_of[key]
            self.bindings.pop(ref, None)
            dirty.add(ref)
        if binding is None:
            return
        ref = str(binder_mod.binding_ref(binding))
        self._binding_of[key] = ref
        self.bindings[ref] = binding
        dirty.add(ref)
