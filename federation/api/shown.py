"""What lists and watches show of stored objects (kubeconfigs redacted), and the status a
Cluster or a FederatedResourceQuota is shown with, in its watch events as in its list and
GET (`objects.ObjectsApi._present`). The per-kind watch (`objects`) and the multiplexed
one (`watch`) both send these, so they can never disagree on what a client sees.

Their status lives under keys of its own, written by the monitor and the quota
controller, so a user's edit never conflicts with a status write. A watch of the spec
keys alone sent objects without `status`, and nothing when only the status changed: a
cluster going NotReady reached no informer-style client (list, then watch), which lost
`status` at its first event and never learnt that a member was down.

So a watch of these kinds follows both key ranges in one registry watch (in revision
order) and sends what a GET would show: a spec change with the current status, and a
status change as MODIFIED of the object. The object's `resourceVersion` stays its spec's
revision, which an update must give (a status change does not make it stale); a client
resuming from it may see a change again, never miss one.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from federation import errors, secrets
from federation.api import selectors
from federation.registry import codec, keys, objects
from federation.registry import store as st
from policies.models import secret_data
from policies.models.cluster import ClusterStatus
from policies.models.work import QuotaStatus

__all__ = ["Statused", "raw_wire", "watch_event"]

Event = tuple[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class _Pair:
    """Where a kind's specs and statuses are stored: the same tail under both roots."""

    spec: str
    status: str
    codec: codec.Codec[Any]


_PAIRS = {
    "clusters": _Pair(
        keys.prefix("clusters"), keys.prefix("clusterstatus"), codec.Codec(ClusterStatus)
    ),
    "federatedresourcequotas": _Pair(
        keys.policy_prefix("FederatedResourceQuota"),
        keys.prefix("policystatus") + "FederatedResourceQuota/",
        codec.Codec(QuotaStatus),
    ),
}


def _common(a: str, b: str) -> str:
    """The longest prefix `a` and `b` share (of keys: character by character)."""
    same = itertools.takewhile(lambda pair: pair[0] == pair[1], zip(a, b, strict=False))
    return "".join(char for char, _ in same)


class Statused:
    """One watch's view of `res` under `prefix` (a spec prefix, `objects.list_prefix`)."""

    def __init__(self, store: st.Store, res: objects.Resource, prefix: str) -> None:
        self.store = store
        self.prefix = prefix
        self.pair = _PAIRS.get(res.plural)
        self.status_prefix = ""
        self.watched = prefix
        """The registry range to watch: both ranges, when the kind has a status."""
        if self.pair is not None and prefix.startswith(self.pair.spec):
            self.status_prefix = self.pair.status + prefix[len(self.pair.spec) :]
            self.watched = _common(prefix, self.status_prefix)

    async def shown(self, kv: st.KeyValue) -> dict[str, Any]:
        """A stored spec as a list shows it: with its current status."""
        obj = raw_wire(kv)
        if self.status_prefix:
            status = await self.store.get(self._status_key(kv.key))
            self._merge(obj, status.value if status else None)
        return obj

    async def events(self, event: st.WatchEvent, chosen: selectors.Filter) -> list[Event]:
        """What one change in `watched` is sent as: nothing, or one event."""
        if self.status_prefix and event.key.startswith(self.status_prefix):
            return await self._status_changed(event, chosen)
        if not event.key.startswith(self.prefix):
            return []  # another kind's key in the shared range
        sent = watch_event(event, chosen)
        if sent is None:
            return []
        if self.status_prefix and sent[0] != "DELETED":
            status = await self.store.get(self._status_key(event.key))
            self._merge(sent[1], status.value if status else None)
        return [sent]

    async def _status_changed(self, event: st.WatchEvent, chosen: selectors.Filter) -> list[Event]:
        assert self.pair is not None
        spec = await self.store.get(self.pair.spec + event.key[len(self.pair.status) :])
        if spec is None:
            return []  # the object is gone; its DELETED said so
        obj = raw_wire(spec)
        self._merge(obj, event.value if event.type == "put" else None)
        sent = chosen.event("MODIFIED", obj, obj)
        return [] if sent is None else [(sent, obj)]

    def spec_key(self, key: str) -> str:
        """The spec key a watched key is about (itself, or the spec a status key is of):
        what a caller's right to see the object is judged by (`visible.readable_key`)."""
        if self.status_prefix and self.pair is not None and key.startswith(self.status_prefix):
            return self.pair.spec + key[len(self.pair.status) :]
        return key

    def _status_key(self, spec_key: str) -> str:
        assert self.pair is not None
        return self.pair.status + spec_key[len(self.pair.spec) :]

    def _merge(self, obj: dict[str, Any], value: bytes | None) -> None:
        """`obj` with the status stored as `value` (none: without); one that no longer
        reads is left out, as `_present` leaves it."""
        assert self.pair is not None
        obj.pop("status", None)
        if not value:
            return
        try:
            status = self.pair.codec.decode(self.status_prefix, value)
        except errors.Invalid:
            return
        obj["status"] = status.model_dump(mode="json", by_alias=True, exclude_none=True)


def watch_event(
    event: st.WatchEvent, chosen: selectors.Filter = selectors.EVERYTHING
) -> tuple[str, dict[str, Any]] | None:
    """The watch event type and object for one registry change (kubeconfigs redacted),
    or None when the watch's selectors (`chosen`) keep it from the client: the per-kind
    watch and the multiplexed one (`api.watch`) both send these, so they can never
    disagree on what a client sees."""
    before = None
    if event.type == "delete":
        kind, obj = (
            "DELETED",
            {
                "metadata": {"resourceVersion": str(event.mod_revision)},
                "key": event.key,
            },
        )
        if event.prev_value:
            obj = raw_wire(st.KeyValue(event.key, event.prev_value, event.mod_revision, 0, 0))
    else:
        kind = "ADDED" if event.create_revision == event.mod_revision else "MODIFIED"
        kv = st.KeyValue(event.key, event.value, event.mod_revision, event.create_revision, 0)
        obj = raw_wire(kv)
        if chosen and event.prev_value:
            before = raw_wire(st.KeyValue(event.key, event.prev_value, 0, 0, 0))
    sent = chosen.event(kind, obj, before)
    return None if sent is None else (sent, obj)


def raw_wire(kv: st.KeyValue) -> dict[str, Any]:
    """A stored value as a watch or list shows it, kubeconfigs redacted, a Secret's
    `stringData` folded into its `data` (`secret_data.fold`)."""
    try:
        doc = json.loads(kv.value)
    except ValueError:
        return {"key": kv.key, "error": "not JSON"}
    body = doc.get("object", doc) if isinstance(doc, dict) else {"value": doc}
    if isinstance(body, dict):
        meta = body.setdefault("metadata", {})
        if isinstance(meta, dict):
            meta["resourceVersion"] = str(kv.mod_revision)
            if isinstance(meta.get("connection"), dict):
                meta["connection"].pop("kubeconfig", None)
        spec = body.get("spec")
        conn = spec.get("connection") if isinstance(spec, dict) else None
        if isinstance(conn, dict) and conn.get("kubeconfig"):
            conn["kubeconfig"] = secrets.REDACTED
        body = secret_data.fold(body)  # stored before writes folded it: still never shown
    return body if isinstance(body, dict) else {"value": body}
