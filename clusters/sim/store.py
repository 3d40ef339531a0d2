"""The object store of one simulated cluster: what etcd plus the apiserver registry are.

The HTTP layer (`server.py`) and the in-process controllers (scheduler, workload
controllers, kubelet, quota) all read and write through an `ObjectStore`, so both see one
resourceVersion sequence, one set of admission hooks and one event history. It feeds
watches (`api_watch.Watch`) and synchronous listeners after each commit.

Why it is shaped this way: one cluster holds 1,000 nodes and 10,000 pods and a process
holds 100 clusters, so committed objects are never mutated (a change replaces the entry)
and carry their JSON once computed; lists and watch fan-out reuse it instead of
deep-copying. `get` returns a private copy; `list(copy=False)`, listeners and watches hand
out the shared committed dicts, which callers must treat as read-only.

Create resets `.status` for kinds with a status subresource (as the apiserver does), except
Node and Namespace; controllers write status with `update(..., subresource="status")`.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from clusters.sim import api_validation, selectors, services
from clusters.sim.api_errors import ApiError, already_exists, conflict, not_found
from clusters.sim.api_watch import Entry, EventLog, Watch
from clusters.sim.clock import Clock
from clusters.sim.resources import RESOURCES, ResourceType, by_kind

__all__ = [
    "AdmissionFn",
    "ApiError",
    "ListenerFn",
    "ObjectStore",
    "ResourceType",
    "Watch",
]

log = logging.getLogger(__name__)

AdmissionFn = Callable[[str, dict[str, Any] | None, dict[str, Any] | None], dict[str, Any] | None]
ListenerFn = Callable[[str, ResourceType, dict[str, Any], dict[str, Any] | None], None]

_NAMESPACES = by_kind("v1", "Namespace")
_SERVICES = by_kind("v1", "Service")


def _strip(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without resourceVersion and managedFields, for no-op detection."""
    meta = {
        k: v for k, v in obj["metadata"].items() if k not in ("resourceVersion", "managedFields")
    }
    return {**obj, "metadata": meta}


def _untimed(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """managedFields without their times: a write that moves only a time is a no-op upstream.

    The apiserver keeps the old times when nothing else changed, so a controller's
    periodic re-apply neither bumps resourceVersion nor wakes watchers.
    """
    return [
        {k: v for k, v in entry.items() if k != "time"}
        for entry in obj["metadata"].get("managedFields") or []
    ]


def _loads(raw: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = json.loads(raw)
    return obj


def _clone(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of JSON data (faster than copy.deepcopy for plain dicts and lists)."""
    return _loads(json.dumps(obj).encode())


def _spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


class ObjectStore:
    """Objects of every kind for one cluster, a global resourceVersion and event history."""

    def __init__(self, *, clock: Clock, history_limit: int = 10_000) -> None:
        self.clock = clock
        self._rv = 0
        self._log = EventLog(history_limit=history_limit, current_rv=lambda: self._rv)
        self._objects: dict[ResourceType, dict[str, dict[str, Entry]]] = {
            rt: {} for rt in RESOURCES
        }
        self._owners: dict[str, set[tuple[ResourceType, str, str]]] = {}
        self._admission: dict[ResourceType, list[AdmissionFn]] = {}
        self._listeners: list[ListenerFn] = []
        self._pending: deque[tuple[str, ResourceType, dict[str, Any], dict[str, Any] | None]]
        self._pending = deque()
        self._dispatching = False

    # -- reads ----------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def oldest_resource_version(self) -> int:
        """Watches may start from this resourceVersion or later; older ones get 410."""
        return self._log.floor

    def _entry(self, rt: ResourceType, namespace: str | None, name: str) -> Entry | None:
        ns = (namespace or "") if rt.namespaced else ""
        return self._objects[rt].get(ns, {}).get(name)

    def try_get(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any] | None:
        entry = self._entry(rt, namespace, name)
        return None if entry is None else _loads(entry.raw())

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self.try_get(rt, namespace, name)
        if obj is None:
            raise not_found(rt, name)
        return obj

    def entries(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        after: tuple[str, str] | None = None,
    ) -> Iterator[tuple[tuple[str, str], Entry]]:
        """Matching committed entries in (namespace, name) order, strictly after `after`."""
        labels = selectors.label_selector(label_selector)
        fields = selectors.field_selector(field_selector, api_version=rt.api_version, kind=rt.kind)
        selective = bool(labels) or bool(fields)
        by_ns = self._objects[rt]
        if rt.namespaced and namespace:
            namespaces = [namespace] if namespace in by_ns else []
        else:
            namespaces = sorted(by_ns)
        for ns in namespaces:
            if after is not None and ns < after[0]:
                continue
            bucket = by_ns[ns]
            for name in sorted(bucket):
                if after is not None and (ns, name) <= after:
                    continue
                entry = bucket[name]
                if not selective or (labels.matches(entry.obj) and fields.matches(entry.obj)):
                    yield (ns, name), entry

    def list(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        copy: bool = True,
    ) -> tuple[list[dict[str, Any]], int]:
        """Matching objects and the store's resourceVersion (`copy=False`: read-only dicts)."""
        found = self.entries(
            rt, namespace, label_selector=label_selector, field_selector=field_selector
        )
        if copy:
            return [_loads(e.raw()) for _, e in found], self._rv
        return [e.obj for _, e in found], self._rv

    def _all(self, rt: ResourceType) -> Iterator[dict[str, Any]]:
        """Every committed object of `rt` (read-only), in no particular order."""
        for bucket in self._objects[rt].values():
            for entry in bucket.values():
                yield entry.obj

    def count(self, rt: ResourceType, namespace: str | None = None) -> int:
        if rt.namespaced and namespace:
            return len(self._objects[rt].get(namespace, {}))
        return sum(len(b) for b in self._objects[rt].values())

    # -- hooks ----------------------------------------------------------------------------

    def add_admission(self, rt: ResourceType, fn: AdmissionFn) -> None:
        self._admission.setdefault(rt, []).append(fn)

    def add_listener(self, fn: ListenerFn) -> None:
        self._listeners.append(fn)

    def _admit(
        self, rt: ResourceType, op: str, new: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        for fn in self._admission.get(rt, ()):
            replaced = fn(op, new, old)
            if replaced is not None:
                new = replaced
        return new

    # -- writes ---------------------------------------------------------------------------

    def _timestamp(self) -> str:
        return self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")

    def create(
        self, rt: ResourceType, obj: dict[str, Any], *, dry_run: bool = False
    ) -> dict[str, Any]:
        """Store a new object; 409 AlreadyExists, 404 for a missing namespace, 422 Invalid.

        `dry_run` validates and returns the result without admission hooks or a commit.
        """
        obj = api_validation.prepare_create(rt, _clone(obj), now=self._timestamp())
        meta = obj["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        if rt.namespaced:
            assert _NAMESPACES is not None
            namespace = self._entry(_NAMESPACES, None, ns)
            api_validation.check_namespace(
                rt, name, ns, None if namespace is None else namespace.obj
            )
        if self._entry(rt, ns, name) is not None:
            raise already_exists(rt, name)
        api_validation.default(rt, obj)
        if rt is _SERVICES:
            services.prepare(rt, obj, None, self._all(rt))
        api_validation.validate_spec(rt, obj)
        if dry_run:
            return _clone(obj)
        admitted = self._admit(rt, "CREATE", obj, None)
        assert admitted is not None
        return self._commit(rt, "ADDED", admitted, None)

    def update(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Replace an object; 409 Conflict when its resourceVersion is set and stale."""
        meta_in = obj.get("metadata") or {}
        name = meta_in.get("name") or ""
        entry = self._entry(rt, meta_in.get("namespace"), name)
        if entry is None:
            raise not_found(rt, name)
        old = entry.obj
        want_rv = meta_in.get("resourceVersion")
        if want_rv and str(want_rv) != old["metadata"]["resourceVersion"]:
            raise conflict(rt, name)
        if subresource == "status":
            new = {**old, "metadata": old["metadata"]}
            if "status" in obj:
                new["status"] = _clone(obj["status"])
            else:
                new.pop("status", None)
        else:
            new = {"apiVersion": rt.api_version, "kind": rt.kind, **_clone(obj)}
            new["apiVersion"], new["kind"] = rt.api_version, rt.kind
            meta = new.setdefault("metadata", {})
            for key in ("uid", "creationTimestamp", "namespace", "generation", "deletionTimestamp"):
                if key in old["metadata"]:
                    meta[key] = old["metadata"][key]
                else:
                    meta.pop(key, None)
            if rt.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            if "generation" in meta and _spec_of(new) != _spec_of(old):
                meta["generation"] = int(meta["generation"]) + 1
        if _strip(new) == _strip(old) and _untimed(new) == _untimed(old):
            return _loads(entry.raw())
        if subresource != "status":
            api_validation.validate_metadata(rt, new)
            api_validation.default(rt, new)
            if rt is _SERVICES:
                services.prepare(rt, new, old, self._all(rt))
            api_validation.validate_spec(rt, new)
            api_validation.validate_update(rt, new, old)
        if dry_run:
            return _clone(new)
        admitted = self._admit(rt, "UPDATE", new, old)
        assert admitted is not None
        if admitted["metadata"].get("deletionTimestamp") and not admitted["metadata"].get(
            "finalizers"
        ):
            return self._remove(rt, admitted, old)
        return self._commit(rt, "MODIFIED", admitted, old)

    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        *,
        propagation: str = "Background",
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Remove an object (or mark it deleting while finalizers remain) and its dependents."""
        entry = self._entry(rt, namespace, name)
        if entry is None:
            raise not_found(rt, name)
        old = entry.obj
        pre = preconditions or {}
        if (pre.get("uid") and pre["uid"] != old["metadata"]["uid"]) or (
            pre.get("resourceVersion")
            and pre["resourceVersion"] != old["metadata"]["resourceVersion"]
        ):
            raise conflict(rt, name)
        if dry_run:
            return _loads(entry.raw())
        self._admit(rt, "DELETE", None, old)
        if old["metadata"].get("finalizers"):
            if old["metadata"].get("deletionTimestamp"):
                return _loads(entry.raw())
            new = {**old, "metadata": {**old["metadata"], "deletionTimestamp": self._timestamp()}}
            return self._commit(rt, "MODIFIED", new, old)
        if propagation == "Orphan":
            self._orphan(old["metadata"]["uid"])
            return self._remove(rt, old, old)
        if propagation == "Foreground" and self._owners.get(old["metadata"]["uid"]):
            return self._delete_foreground(rt, old)
        gone = self._remove(rt, old, old)
        self._cascade(rt, old)
        return gone

    def _orphan(self, uid: str) -> None:
        """The garbage collector's `orphan` finalizer: dependents lose their references to
        the owner before it goes, so a new owner may adopt them."""
        for child_rt, ns, child in self._dependents(uid):
            entry = self._entry(child_rt, ns, child)
            if entry is None:
                continue
            child_obj = entry.obj
            refs = [
                r for r in child_obj["metadata"].get("ownerReferences") or () if r.get("uid") != uid
            ]
            meta = {k: v for k, v in child_obj["metadata"].items() if k != "ownerReferences"}
            if refs:
                meta["ownerReferences"] = refs
            self._commit(child_rt, "MODIFIED", {**child_obj, "metadata": meta}, child_obj)

    def _delete_foreground(self, rt: ResourceType, old: dict[str, Any]) -> dict[str, Any]:
        """Foreground deletion: the owner is marked deleting, with the `foregroundDeletion`
        finalizer, its dependents go (each in the foreground too), and then the owner."""
        meta = {
            **old["metadata"],
            "deletionTimestamp": self._timestamp(),
            "finalizers": [*(old["metadata"].get("finalizers") or ()), "foregroundDeletion"],
        }
        marked = self._commit(rt, "MODIFIED", {**old, "metadata": meta}, old)
        for child_rt, ns, child in self._dependents(old["metadata"]["uid"]):
            if self._entry(child_rt, ns, child) is not None:
                self.delete(child_rt, ns, child, propagation="Foreground")
        current = self._entry(rt, old["metadata"].get("namespace"), old["metadata"]["name"])
        if current is not None:
            final = current.obj
            done = {k: v for k, v in final["metadata"].items() if k != "finalizers"}
            self._remove(rt, {**final, "metadata": done}, final)
        return marked

    def _dependents(self, uid: str) -> tuple[tuple[ResourceType, str, str], ...]:
        """The objects whose ownerReferences name `uid`, in a stable order."""
        return tuple(sorted(self._owners.get(uid, ()), key=lambda t: (t[0].plural, t[1], t[2])))

    def _cascade(self, rt: ResourceType, old: dict[str, Any]) -> None:
        if rt is _NAMESPACES:
            ns = old["metadata"]["name"]
            for child_rt, by_ns in self._objects.items():
                for child in list(by_ns.get(ns, {})):
                    if self._entry(child_rt, ns, child) is not None:
                        self.delete(child_rt, ns, child)
        for child_rt, ns, child in self._dependents(old["metadata"]["uid"]):
            entry = self._entry(child_rt, ns, child)
            if entry is not None:
                self.delete(child_rt, ns, child)
        self._owners.pop(old["metadata"]["uid"], None)

    def _remove(self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        ns = meta.get("namespace", "") if rt.namespaced else ""
        bucket = self._objects[rt].get(ns, {})
        bucket.pop(meta["name"], None)
        if not bucket:
            self._objects[rt].pop(ns, None)
        self._index_owners(rt, old, add=False)
        self._rv += 1
        final = {**obj, "metadata": {**meta, "resourceVersion": str(self._rv)}}
        entry = Entry(final)
        self._publish(rt, "DELETED", entry, old)
        return _loads(entry.raw())

    def _index_owners(self, rt: ResourceType, obj: dict[str, Any], *, add: bool) -> None:
        meta = obj["metadata"]
        key = (rt, meta.get("namespace", "") if rt.namespaced else "", meta["name"])
        for ref in meta.get("ownerReferences") or ():
            uid = ref.get("uid")
            if not uid:
                continue
            if add:
                self._owners.setdefault(uid, set()).add(key)
            elif uid in self._owners:
                self._owners[uid].discard(key)

    def _commit(
        self, rt: ResourceType, etype: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> dict[str, Any]:
        self._rv += 1
        meta = obj["metadata"] = {**obj["metadata"], "resourceVersion": str(self._rv)}
        ns = meta.get("namespace", "") if rt.namespaced else ""
        entry = Entry(obj)
        self._objects[rt].setdefault(ns, {})[meta["name"]] = entry
        if old is not None:
            self._index_owners(rt, old, add=False)
        self._index_owners(rt, obj, add=True)
        self._publish(rt, etype, entry, old)
        return _loads(entry.raw())

    def _publish(
        self, rt: ResourceType, etype: str, entry: Entry, old: dict[str, Any] | None
    ) -> None:
        self._log.publish(rt, etype, entry, old, rv=self._rv)
        self._pending.append((etype, rt, entry.obj, old))
        if self._dispatching:
            return
        self._dispatching = True
        try:
            while self._pending:
                args = self._pending.popleft()
                for fn in tuple(self._listeners):
                    try:
                        fn(*args)
                    except Exception:
                        log.exception("store listener %r failed on %s", fn, args[0])
        finally:
            self._dispatching = False

    # -- watch ----------------------------------------------------------------------------

    def watch(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        initial_events_end: bool = False,
    ) -> Watch:
        """Changes after `resource_version`; unset or "0" first replays current objects.

        410 Expired (as an ApiError) when `resource_version` is older than kept history.
        """
        labels = selectors.label_selector(label_selector)
        fields = selectors.field_selector(field_selector, api_version=rt.api_version, kind=rt.kind)
        try:
            since = int(resource_version) if resource_version else 0
        except ValueError:
            raise ApiError(
                400, "BadRequest", f"invalid resource version: {resource_version}"
            ) from None
        floor = self._log.floor
        if since and since < floor:
            raise ApiError(410, "Expired", f"too old resource version: {since} ({floor})")
        ns = namespace if rt.namespaced and namespace else None
        return self._log.open(
            rt,
            ns,
            since=since,
            labels=labels,
            fields=fields,
            current=(
                e
                for _, e in self.entries(rt, ns)
                if labels.matches(e.obj) and fields.matches(e.obj)
            ),
            initial_events_end=initial_events_end,
        )

    def watching(self, rt: ResourceType) -> int:
        """How many watches are open on `rt` (tests wait on this)."""
        return self._log.watching(rt)

    def compact(self) -> None:
        """Forget all history: open watches get a 410 ERROR event and end."""
        self._log.compact()

    def close_watches(self) -> None:
        """End every open watch cleanly (the stream just stops, as on a dropped link)."""
        self._log.close_all()
