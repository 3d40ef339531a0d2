"""Converging one FederatedResourceQuota: member ResourceQuotas and the aggregated status.

Fed by the propagator's workers with an FRQ's namespace and name; reads the FRQ from the
policies mirror, the last status it wrote and the member quotas the status watches saw;
feeds the applier (ResourceQuotas created, updated and removed with the policy) and the
registry (`QuotaStatus` under `keys.policy_status_key`). The previous status lists the
clusters that hold a quota, so an assignment removed while the controller was down is
still cleaned up (start-up GC catches the rest). A member quota of the FRQ's name that
fedctl did not make is neither written nor deleted (`_refusal`): the status row says so.
Status writes carry the leader's fence (`guards`), like every registry write of the
propagator.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from federation import errors
from federation.propagation import informer, quota, render
from federation.propagation import status as status_mod
from federation.propagation import works as works_mod
from federation.propagation.applier import Applier, object_ref
from federation.registry import codec, keys
from policies.models.base import KubeObject
from policies.models.cluster import Cluster
from policies.models.frq import FederatedResourceQuota
from policies.models.work import QuotaStatus

__all__ = ["FRQ", "QuotaSync"]

log = logging.getLogger(__name__)

FRQ = "FederatedResourceQuota"


class QuotaSync:
    def __init__(
        self,
        *,
        policies: informer.Informer[KubeObject],
        clusters: informer.Informer[Cluster],
        store: codec.TypedStore[QuotaStatus],
        applier: Applier,
        watches: status_mod.StatusWatches,
        guards: works_mod.Guards = works_mod.unfenced,
        untouchable: Callable[[str], str | None] = lambda _name: None,
    ) -> None:
        self.policies, self.clusters, self.store = policies, clusters, store
        self.untouchable = untouchable
        """Why nothing may be applied to or deleted from a member (`WorkloadSync.untouchable`):
        a second name of a member writes and deletes the first name's quota of that name."""
        self.guards = guards
        self.applier, self.watches = applier, watches
        self.written: dict[str, codec.Stored[QuotaStatus]] = {}
        self._applied: dict[tuple[str, str], str] = {}

    def frq(self, namespace: str, name: str) -> FederatedResourceQuota | None:
        found = self.policies.get(keys.policy_key(FRQ, namespace, name))
        return found if isinstance(found, FederatedResourceQuota) else None

    async def sync(self, namespace: str, name: str) -> float | None:
        key = keys.policy_status_key(FRQ, namespace, name)
        frq = self.frq(namespace, name)
        old = self.written.get(key)
        had = {row.cluster for row in old.obj.aggregated_status} if old else set()
        assignments = {a.cluster_name: a for a in frq.spec.static_assignments} if frq else {}
        problems: dict[str, str] = {}
        delay: float | None = None
        for cluster_name, assignment in sorted(assignments.items()):
            assert frq is not None
            problem = await self._put(cluster_name, quota.manifest(frq, assignment))
            if problem:
                problems[cluster_name] = problem
                delay = 2.0
        for cluster_name in sorted(had - set(assignments)):
            if not await self._remove(cluster_name, namespace, name):
                delay = 2.0
        if frq is None:
            if old is not None and delay is None:
                await self.store.delete(key, guards=self.guards())
                self.written.pop(key, None)
            return delay
        seen = {c: self.watches.quotas.get((c, namespace, name)) for c in assignments}
        new = quota.aggregate(frq, seen, errors=problems)
        if old is None or old.obj != new:
            self.written[key] = await self.store.put(key, new, guards=self.guards())
        return delay

    async def _put(self, cluster_name: str, manifest: dict[str, Any]) -> str:
        cluster = self.clusters.get(keys.cluster_key(cluster_name))
        if cluster is None:
            return f"cluster {cluster_name} is not registered"
        untouchable = self.untouchable(cluster_name)
        if untouchable is not None:
            return f"not applied: {untouchable}"
        self.watches.ensure(cluster_name, "v1", "ResourceQuota")
        digest = render.digest(manifest)
        slot = (cluster_name, str(object_ref(manifest)))
        ns, name = manifest["metadata"]["namespace"], manifest["metadata"]["name"]
        seen = self.watches.quotas.get((cluster_name, ns, name))
        if self._applied.get(slot) == digest and seen is not None:
            if not quota.edited(manifest, seen):
                return ""
            log.info("quota %s/%s: edited in %s, applied again", ns, name, cluster_name)
        try:
            refusal = await self._refusal(cluster, manifest)
        except errors.FedctlError as exc:
            return f"{cluster_name}: {exc}"
        if refusal:
            return refusal
        outcome = await self.applier.apply(
            cluster, manifest, ref=None, overwrite=True, known_ours=True
        )
        if not outcome.ok or outcome.obj is None:
            return outcome.error
        self._applied[slot] = digest
        self.watches.record(cluster_name, outcome.obj)
        return ""

    async def _refusal(self, cluster: Cluster, manifest: Mapping[str, Any]) -> str:
        """Why the member's ResourceQuota of that name is not ours to write: it is there
        and carries no label of fedctl's (a team made it by hand). Empty when it is ours
        or missing.

        Why refused: applied over, the team's limits were replaced by the share and the
        quota relabelled as ours, so deleting the FRQ deleted it. Karmada's Works carry no
        conflict resolution by default, and its execution controller does not overwrite
        an object it did not make either."""
        meta = manifest["metadata"]
        ns, name = meta["namespace"], meta["name"]
        if (cluster.name, ns, name) in self.watches.quotas:
            return ""  # the watch shows it with the FRQ's label
        owner = self.watches.owner(cluster.name, manifest)
        if owner is None:
            current = await self.applier.read(cluster, manifest)
            ours = current is None or render.is_ours(current)
        else:
            ours = not owner[0] or owner[1] is not None
        if ours:
            return ""
        return (
            f"ResourceQuota {ns}/{name} already exists in {cluster.name} and was not made by"
            f" fedctl: FederatedResourceQuota {ns}/{name} does not take it over (delete or"
            " rename that quota there, or give the FederatedResourceQuota another name)"
        )

    async def _remove(self, cluster_name: str, namespace: str, name: str) -> bool:
        cluster = self.clusters.get(keys.cluster_key(cluster_name))
        manifest = {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": name, "namespace": namespace},
        }
        if cluster is not None and self.untouchable(cluster_name) is None:
            try:
                # Only ours: a team's quota of that name, refused above, stays theirs.
                await self.applier.delete_if_ours(cluster, manifest, None)
            except errors.FedctlError as exc:
                log.info(
                    "quota %s/%s: not yet removed from %s: %s", namespace, name, cluster_name, exc
                )
                return False
        self.watches.quotas.pop((cluster_name, namespace, name), None)
        self._applied.pop((cluster_name, str(object_ref(manifest))), None)
        return True
