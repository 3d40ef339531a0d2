"""Converging one workload: Binding + template → Works in the registry → objects in members.

Fed by the propagator's workers with a workload key; reads the registry mirrors (template,
Binding, Clusters, override policies, AcceleratorProfiles, the claiming policy), the Works
this process wrote and what the status watches saw; feeds the applier (apply and delete in
members) and the registry (Works and the aggregated workload status, both written only by
the propagator, fenced by the leader's `guards`). Level-based: every pass recomputes the
wanted state from scratch, so a pass interrupted by a crash is finished by the next one
after a restart.

    wanted = Binding targets (one with 0 replicas too: a workload scaled to zero keeps
             its copy in each member, running no pods, as with Karmada)
           + clusters still under a graceful-eviction task (left untouched)
    each wanted cluster:  a finished job's copy? left as it ran, never rendered again
                          render → unchanged digest, still present, not edited there?
                                     nothing to do (a finished job's deleted copy: nothing)
                                   otherwise apply (Abort/Overwrite), record the outcome
                          render fails (an override)? the Work says why, not applied
    each other Work:      delete the member copy (release it, when the template went
                          under preserveResourcesOnDeletion), then the Work; a
                          Namespace's only once no workload in it has a Work there
                          and no FederatedResourceQuota of it a quota;
                          kept while a wanted cluster's render fails (`_held`)

Where no policy claims the workload any more, the settings its Works recorded when one
last did stand in for that policy's spec (`orphan.recorded`).
    each other copy a watch shows (no Work records it: a deposed leader's late apply):
                          delete it, if still ours

Where the claiming policy suspends dispatching (`spec.suspension`), a wanted cluster's
Work is rendered and recorded, marked `suspendDispatching`, but nothing is applied; a copy
on a cluster no longer targeted stays with its Work, until the suspension is lifted and
the next pass brings each up to date. A deleted template's copies still go: Karmada's
execution controller deletes a deleted Work's copy before it looks at the suspension.
A dependency (propagateDeps) sent to a cluster only for workloads whose dispatching
there is suspended is suspended there too (`_needers_hold`): a ConfigMap is part of the
rollout the suspension freezes.

Why a Namespace leaves a member last: deleting it there deletes every copy in it, and
each of those whose template is still here would be applied again, a Job from the start.
So its copy stays while a workload of the namespace has a Work on that member, or a
FederatedResourceQuota of it a quota; once each is removed (a deleted Namespace's
templates go with it, `ObjectsApi._delete_namespace`), the Namespace is looked at again
and goes.

Why the Work is written after the apply: a crash between the two leaves an object in the
member without a Work, which the next pass re-applies (it carries our labels, so `Abort`
recognises it) or start-up garbage collection removes; never a Work for an object that
was not attempted.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from federation import errors
from federation.propagation import deps as deps_mod
from federation.propagation import informer, orphan, overrides, render, suspension
from federation.propagation import status as status_mod
from federation.propagation import works as works_mod
from federation.propagation.applier import Applier, Outcome, object_ref
from federation.registry import codec, events, keys, objects
from policies.models.accelerator import AcceleratorProfile
from policies.models.base import KubeObject
from policies.models.binding import CLAIMED_BY, Binding, TargetCluster
from policies.models.cluster import Cluster, ClusterStatus
from policies.models.frq import FederatedResourceQuota
from policies.models.override import ClusterOverridePolicy, OverridePolicy
from policies.models.work import (
    FINISHED_PHASES,
    Event,
    Work,
    WorkCondition,
    WorkloadStatus,
    WorkStatus,
)
from policies.models.workload import Workload

__all__ = ["Claim", "WorkloadSync"]

log = logging.getLogger(__name__)

Claim = Callable[..., Any]
"""`(workload, candidate policies, *, recorded=None)`: `scheduler.plan.claim`."""
"""Picks the PropagationPolicy that claims a workload (the scheduler's rule, passed in)."""

_RETRY = 2.0
RENDER_FAILED = "ApplyOverridePolicyFailed"
"""The Work condition reason and Warning event of a copy its overrides cannot render."""
_DEPENDENCY_KINDS = frozenset(
    keys.kind_segment("v1", kind)
    for kind in ("ConfigMap", "Secret", "PersistentVolumeClaim", "ServiceAccount")
)
"""The kinds propagateDeps sends (`deps`): one of these may be mounted by another copy."""
_AGAIN = 0.05
"""Seconds before creating the new object's copy where an earlier object's was removed."""


def _others(existing: Mapping[str, codec.Stored[Work]], uid: str | None) -> set[str]:
    """The clusters whose Work is a copy of another object of the same name (both uids
    known and different; Works written before they recorded one are taken as this one's)."""
    if uid is None:
        return set()
    return {
        name
        for name, work in existing.items()
        if work.obj.spec.workload.uid is not None and work.obj.spec.workload.uid != uid
    }


Marks = frozenset[tuple[str, str, str]]


def _ours(marks: Marks, manifest: Mapping[str, Any]) -> Marks:
    """The labels and annotations of `marks` that the manifest sets (by key)."""
    keys = status_mod.mark_keys(manifest)
    return frozenset(m for m in marks if (m[0], m[1]) in keys)


def _state(marks: Marks, spec: Any, manifest: Mapping[str, Any]) -> str:
    """What a copy shows of what our manifest gives it, as `marks/spec` digests: the
    labels, annotations and data entries the manifest sets (`_ours`), and for a kind that
    keeps no generation the spec fields it sets (`status.spec_digest`; `-` otherwise).
    Recorded in the Work after each apply (`appliedState`), so an edit is told apart
    after a restart too."""
    ours = json.dumps(sorted(_ours(marks, manifest)))
    wanted = manifest.get("spec")
    fields = "-" if spec is None or wanted is None else status_mod.spec_digest(spec, wanted)
    return f"{hashlib.sha256(ours.encode()).hexdigest()[:16]}/{fields}"


def _drifted(
    previous: WorkStatus, seen: status_mod.Seen | None, manifest: Mapping[str, Any]
) -> str:
    """How the member's copy was changed there since we applied it, or "" when it was
    not: its spec written (`kubectl edit`, `scale`; its generation moved past the one our
    apply left), or labels, annotations or data entries we set changed or taken off, or
    for a kind without a generation the spec fields we set. All are judged against what
    our apply left (`appliedState`), so a member webhook that rewrites a field as we apply
    is not fought. Karmada's execution controller restores such a copy the same way, by
    the version it recorded and its labels and annotations. Ones added there stay: our
    apply does not own them."""
    if seen is None or seen.gone or not previous.applied:
        return ""
    if seen.stripped:
        # Not said to be taken off: fedctl's own bare namespace, applied over its Namespace
        # template's copy, once stripped them too (`Applier._ensure_namespace`).
        return "fedctl's labels or annotation were missing from its copy there"
    applied = previous.applied_generation
    if applied is not None and seen.generation > applied:
        return f"its copy was edited there (generation {seen.generation}, applied as {applied})"
    if applied is not None and 0 < seen.generation < applied:
        # A generation never goes back: the copy was deleted and created again there
        # (`kubectl replace --force`), as the member's, with whatever spec it was given.
        return (
            f"its copy was created again there (generation {seen.generation}, applied as {applied})"
        )
    if previous.applied_state is None or seen.marks is None:
        return ""
    now = _state(seen.marks, seen.spec, manifest)
    if now == previous.applied_state:
        return ""
    if now.split("/")[0] != previous.applied_state.split("/")[0]:
        return "labels, annotations or data it was given were changed there"
    return "its spec was edited there"


def _why(
    cluster: str,
    previous: WorkStatus,
    digest: str,
    *,
    gone: bool,
    drifted: str,
) -> str:
    """The Applied event's message: what made this apply necessary."""
    if previous.applied_hash is None:
        return f"applied to {cluster}"
    if previous.applied and previous.applied_hash == digest:
        if gone:
            return f"applied again to {cluster}: its copy there was deleted"
        if drifted:
            return f"restored in {cluster}: {drifted}"
    return f"updated in {cluster}"


class WorkloadSync:
    """Everything one workload pass needs; one instance shared by all workers."""

    def __init__(
        self,
        *,
        workloads: informer.Informer[KubeObject],
        bindings: informer.Informer[Binding],
        policies: informer.Informer[KubeObject],
        clusters: informer.Informer[Cluster],
        works: codec.TypedStore[Work],
        statuses: codec.TypedStore[WorkloadStatus],
        applier: Applier,
        watches: status_mod.StatusWatches,
        claim: Claim | None,
        now: Callable[[], Any],
        recorder: events.Recorder | None = None,
        guards: works_mod.Guards = works_mod.unfenced,
        cluster_statuses: informer.Informer[ClusterStatus] | None = None,
        deps: deps_mod.Index | None = None,
    ) -> None:
        """`deps`: which templates reference which dependencies (None: none followed)."""
        self.workloads, self.bindings = workloads, bindings
        self.deps = deps
        self.cluster_statuses = cluster_statuses
        self.policies, self.clusters = policies, clusters
        self.records = works_mod.WorkRecords(works, statuses, guards=guards)
        self.guards = guards
        self.works_store, self.status_store = works, statuses
        self.applier, self.watches = applier, watches
        self.claim, self.now = claim, now
        self.recorder = recorder
        self.works = self.records.works
        self.written = self.records.written
        self.epoch = 0
        """Bumped on every policy change: rendered manifests older than it are stale."""
        self.holding: set[str] = set()
        """Namespaces whose Namespace keeps a copy on a member only for the copies of
        workloads in it still there (`occupied`): looked at again after each of theirs."""
        self._rendered: dict[str, dict[str, tuple[Any, dict[str, Any], str]]] = {}
        """Workload ref → cluster → (inputs, manifest, digest) of its last render there.
        Kept only while that copy has a Work (`_forget_rendered`): a batch user's uniquely
        named Jobs otherwise left a manifest each per member for the leader's whole term."""
        self._passing: collections.Counter[tuple[str, str]] = collections.Counter()
        """(namespace, cluster) → passes under way of workloads placed there (`sync`)."""
        self._newer_policies: dict[str, codec.Stored[KubeObject]] = {}
        """Policies read from the registry ahead of their mirror (`_claiming_spec_now`)."""
        self._policy_read_at: dict[str, int] = {}
        """Template key → its revision for which the claiming policy was last read."""

    # -- inputs ------------------------------------------------------------------------------

    def _policy_objects(self) -> list[KubeObject]:
        return [item.obj for item in self.policies.items.values()]

    def _overrides(self) -> list[overrides.AnyOverride]:
        return [
            p
            for p in self._policy_objects()
            if isinstance(p, OverridePolicy | ClusterOverridePolicy)
        ]

    def _profiles(self) -> dict[str, AcceleratorProfile]:
        return {
            p.metadata.name: p for p in self._policy_objects() if isinstance(p, AcceleratorProfile)
        }

    def _claiming_policy(self, workload: Workload, binding: Binding) -> KubeObject | None:
        """The PropagationPolicy that claims `workload` (None: none does)."""
        if self.claim is None:
            return None
        candidates = [p for p in self._policy_objects() if p.kind.endswith("PropagationPolicy")]
        recorded = binding.metadata.annotations.get(CLAIMED_BY)
        policy = self.claim(workload, candidates, recorded=recorded)
        return policy if isinstance(policy, KubeObject) else None

    def template_gone(self, ref: keys.WorkloadRef) -> None:
        """`ref`'s template was deleted: forget when its policy was last read for it."""
        self._policy_read_at.pop(keys.workload_key(ref), None)

    def policy_gone(self, key: str) -> None:
        """The policy at `key` was deleted: a newer copy read ahead of its mirror
        (`_claiming_spec_now`) is dropped, as no workload it claimed would ask for it."""
        self._newer_policies.pop(key, None)

    def remembered(self) -> dict[str, int]:
        """How many entries each of this pass's per-workload memories holds. Each must
        come back down as workloads go: the propagator runs for a leader's whole term,
        through any number of uniquely named Jobs."""
        return {
            "works": len(self.works),
            "statuses": len(self.written),
            "rendered": sum(len(per_cluster) for per_cluster in self._rendered.values()),
            "passing": len(self._passing),
            "newer_policies": len(self._newer_policies),
            "policy_read_at": len(self._policy_read_at),
            "holding": len(self.holding),
        }

    def _claiming_spec(self, workload: Workload, binding: Binding) -> Any:
        """The spec of the PropagationPolicy that claims `workload`; where none does, the
        settings its Works recorded when one last did (`orphan.recorded`)."""
        policy = self._claiming_policy(workload, binding)
        return self._recorded(workload) if policy is None else getattr(policy, "spec", None)

    def _recorded(self, workload: Workload) -> orphan.Recorded:
        """An orphan's settings: those of its claiming policy when its Works were written."""
        ref = objects.workload_ref(workload)
        return orphan.recorded(w.obj for w in self.works.get(str(ref), {}).values())

    async def _claiming_spec_now(
        self, workload: Workload, stored: codec.Stored[Binding] | None, wl_key: str
    ) -> Any:
        """`_claiming_spec`, sure to be no older than the template it is applied with.

        Why: templates and policies are mirrored by separate watches, so a template
        change and a policy edit written together (`fedctl apply -f` of both, such as a
        suspension meant to hold that very change back) can reach this pass in either
        order. So once per template revision newer than the mirrored policy, the policy
        is read from the registry; a newer one read so is used until the mirror has it.
        """
        if stored is None:
            return None  # a dependency wanted only by its needers: their settings hold
        policy = self._claiming_policy(workload, stored.obj)
        if policy is None:
            return self._recorded(workload)
        key = objects.key_for(policy)
        mirrored = self.policies.items.get(key)
        newer = self._newer_policies.get(key)
        if newer is not None and (mirrored is None or mirrored.revision >= newer.revision):
            self._newer_policies.pop(key, None)
            newer = None
        template = self.workloads.items[wl_key].revision
        stale = mirrored is not None and mirrored.revision < template and newer is None
        if stale and self._policy_read_at.get(wl_key) != template:
            self._policy_read_at[wl_key] = template
            fresh = await self.policies.typed.get(key)
            if fresh is not None and mirrored is not None and fresh.revision > mirrored.revision:
                self._newer_policies[key] = newer = fresh
        return getattr(newer.obj if newer is not None else policy, "spec", None)

    def wanted(
        self, ref: keys.WorkloadRef
    ) -> tuple[Workload | None, codec.Stored[Binding] | None, dict[str, TargetCluster], set[str]]:
        """The template, its Binding, the targets by cluster and the clusters being evicted.

        A dependency of workloads whose policy sets `propagateDeps` is also wanted where
        they run (`needed_on`), with or without a Binding of its own: Karmada's attached
        binding, whose clusters are its own placement's and its needers' together."""
        workload, stored, targets, evicting = self._placed(ref)
        needed = self.needed_on(ref)
        template = self.workloads.get(keys.workload_key(ref))
        if not needed or not isinstance(template, Workload):
            return workload, stored, targets, evicting
        for name in needed:
            targets.setdefault(name, TargetCluster(name=name, replicas=0))
        return template, stored, targets, evicting - set(targets)

    def needed_on(self, ref: keys.WorkloadRef) -> dict[str, set[keys.WorkloadRef]]:
        """cluster → the workloads that need `ref` there (none: not a dependency)."""
        if self.deps is None:
            return {}
        return deps_mod.clusters_needing(ref, index=self.deps, carrying=self._carrying)

    def _carrying(self, ref: keys.WorkloadRef) -> dict[str, frozenset[keys.WorkloadRef]]:
        """cluster → the dependencies `ref` takes there, when its claiming policy sets
        `propagateDeps`: where it is placed, what its template and its copy there
        reference (an override may name another object for one cluster); where it is
        being left or still has a copy, only what that copy references.

        Why the copy's own references: a copy whose template moved on (dispatching there
        suspended, a graceful eviction's old copy, one drained with nowhere to go) still
        mounts what it mounted, and taking that away breaks the copy its suspension or
        eviction means to keep running."""
        workload, stored, targets, evicting = self._placed(ref)
        if workload is None or stored is None or self.deps is None:
            return {}
        if not getattr(self._claiming_spec(workload, stored.obj), "propagate_deps", False):
            return {}
        copies = self.copy_references(ref)
        carried = {name: copies.get(name, frozenset()) for name in {*evicting, *copies}}
        template = self.deps.of(ref)
        for name in targets:
            carried[name] = template | copies.get(name, frozenset())
        return carried

    def copy_references(self, ref: keys.WorkloadRef) -> dict[str, frozenset[keys.WorkloadRef]]:
        """cluster → what `ref`'s copy there references: the member's copy as its watch
        last showed it, and the manifest its Work records once one was applied there (a
        Work never applied, dispatching suspended from the start, sends nothing)."""
        found: dict[str, frozenset[keys.WorkloadRef]] = {}
        for name, stored in self.works.get(str(ref), {}).items():
            work = stored.obj
            refs = frozenset[keys.WorkloadRef]()
            if work.status.applied_hash is not None:
                refs = deps_mod.in_manifest(work.spec.manifest)
            seen = self.watches.seen.get((name, str(ref)))
            if seen is not None and not seen.gone:
                refs |= seen.references
            found[name] = refs
        return found

    def _read_first(
        self, ref: keys.WorkloadRef, names: list[str], delays: list[float | None], *, deleted: bool
    ) -> list[str]:
        """`names` without those where a copy may still mount dependency `ref` (`_unread`),
        which are looked at again after a delay. A deleted template's copies still go."""
        unread = [] if deleted else self._unread(ref, names)
        if not unread:
            return names
        log.info("%s: kept on %s until the copies there are read", ref, unread)
        delays.append(_RETRY)
        return [name for name in names if name not in unread]

    def _unread(self, ref: keys.WorkloadRef, names: Iterable[str]) -> list[str]:
        """Those of `names` where dependency `ref` may still be mounted by a copy no watch
        has shown yet (after a restart) whose Work's manifest may not be what runs there:
        dispatching to it is suspended, so the Work holds the newer manifest held back.
        Its references are read from the member's copy once its watch lists it
        (`copy_references`); removing the dependency before that took a renamed
        ConfigMap from under the copy still mounting it."""
        if ref.kind not in _DEPENDENCY_KINDS or ref.namespace == keys.CLUSTER_SCOPE:
            return []
        mine = f"{ref.namespace}/"
        out = []
        for name in names:
            for ref_text, per_cluster in self.works.items():
                stored = per_cluster.get(name) if ref_text.startswith(mine) else None
                if (
                    stored is not None
                    and stored.obj.spec.propagate_deps
                    and stored.obj.spec.suspend_dispatching
                    and stored.obj.status.applied_hash is not None
                    and (name, ref_text) not in self.watches.seen
                ):
                    out.append(name)
                    break
        return out

    def _needers_hold(self, ref: keys.WorkloadRef) -> frozenset[str]:
        """The clusters dependency `ref` goes to only for needers whose dispatching there
        is suspended: nothing is dispatched there either (no first copy, no edit), until
        one of them resumes. A suspension freezes what its workload's copy runs, and the
        ConfigMap it reads is part of that; the dependency's own placement still
        dispatches where it places it."""
        needed = self.needed_on(ref)
        if not needed:
            return frozenset()  # not a dependency: most workloads
        _, _, own, _ = self._placed(ref)
        held = set()
        for name, needers in needed.items():
            if name not in own and all(
                name in suspension.clusters(self._needer_spec(needer), [name]) for needer in needers
            ):
                held.add(name)
        return frozenset(held)

    def _conflict_and_preserve(
        self, ref: keys.WorkloadRef, spec: Any, *, own: bool
    ) -> tuple[bool, bool]:
        """`conflictResolution: Overwrite` and `preserveResourcesOnDeletion` for `ref`'s
        copies: its claiming policy's, or (`own` False: a dependency without a Binding
        of its own) its needers' policies', as Karmada's attached binding copies them
        from the binding that needs it (any needer's Overwrite or preservation holds)."""
        specs = [spec]
        if not own:
            specs = [self._needer_spec(needer) for needer in self._needers(ref)]
        return (
            any(getattr(s, "conflict_resolution", "Abort") == "Overwrite" for s in specs),
            any(bool(getattr(s, "preserve_resources_on_deletion", False)) for s in specs),
        )

    def _needers(self, ref: keys.WorkloadRef) -> set[keys.WorkloadRef]:
        return {needer for names in self.needed_on(ref).values() for needer in names}

    def _needer_spec(self, ref: keys.WorkloadRef) -> Any:
        workload = self.workloads.get(keys.workload_key(ref))
        stored = self.bindings.items.get(keys.binding_key(ref))
        if not isinstance(workload, Workload) or stored is None:
            return None
        return self._claiming_spec(workload, stored.obj)

    def _with_dependencies(
        self, ref: keys.WorkloadRef, status: WorkloadStatus, spec: Any
    ) -> WorkloadStatus:
        """`status` naming the workloads `ref` is a dependency of and the dependencies
        its policy would propagate that the federation lacks."""
        needers = sorted(str(needer) for needer in self._needers(ref))
        missing = self._missing(ref, spec)
        return status.model_copy(update={"required_by": needers, "missing_dependencies": missing})

    def _missing(self, ref: keys.WorkloadRef, spec: Any) -> list[str]:
        """The dependencies `ref`'s policy would propagate that the federation lacks and
        its pods need: its template's (not those only `optional: true`, which its pods
        start without) and those an override names in a copy's manifest."""
        if self.deps is None or not getattr(spec, "propagate_deps", False):
            return []
        wanted = set(self.deps.required(ref))
        for stored in self.works.get(str(ref), {}).values():
            wanted |= deps_mod.in_manifest(stored.obj.spec.manifest, required=True)
        return sorted(
            str(dep) for dep in wanted if self.workloads.get(keys.workload_key(dep)) is None
        )

    def _placed(
        self, ref: keys.WorkloadRef
    ) -> tuple[Workload | None, codec.Stored[Binding] | None, dict[str, TargetCluster], set[str]]:
        """`wanted` by the workload's own Binding alone."""
        workload = self.workloads.get(keys.workload_key(ref))
        stored = self.bindings.items.get(keys.binding_key(ref))
        if isinstance(workload, Workload) and stored is None:
            return None, None, {}, self._unbound(ref, workload)
        if not isinstance(workload, Workload) or stored is None:
            return None, stored, {}, set()
        binding = stored.obj
        placed, uid = binding.spec.workload.uid, workload.metadata.uid
        if placed is not None and uid is not None and placed != uid:
            # The Binding places an earlier object of this name (deleted and created again
            # since): nothing of it runs on, and this one waits for its own placement.
            return workload, stored, {}, set()
        targets = {t.name: t for t in binding.spec.clusters}
        for task in binding.spec.eviction_tasks:
            kept = targets.get(task.cluster)
            if kept is not None and task.keeps(kept.replicas):
                # A share that shrank in a move keeps what it ran until the replicas moved
                # elsewhere are ready: scaled down at once, the workload ran short meanwhile.
                targets[task.cluster] = kept.model_copy(update={"replicas": task.replicas})
        # Directly-purged copies go at once; graceful tasks keep theirs meanwhile.
        evicting = {task.cluster for task in binding.spec.eviction_tasks if not task.at_once} - set(
            targets
        )
        return workload, stored, targets, evicting

    def _unbound(self, ref: keys.WorkloadRef, workload: Workload) -> set[str]:
        """The clusters whose copies of `workload` stay while it has no Binding at all: those
        its Works record for this very object (its uid) and a Binding of its own (a revision:
        a dependency's copies, sent only where its needers run, go as they always did).

        Why: a workload is never left without a Binding but by damage to the registry (a
        key deleted by hand, a partial restore); its Works still say where it runs, and the
        scheduler places it again there (`reconcile.located`). Removed meanwhile, a running
        Job was started again from scratch, on the same member or another."""
        uid = workload.metadata.uid
        return {
            name
            for name, work in self.works.get(str(ref), {}).items()
            if work.obj.spec.binding_revision > 0
            and (uid is None or work.obj.spec.workload.uid in (None, uid))
        }

    def occupied(self, namespace: str, cluster: str) -> bool:
        """Whether fedctl still keeps something in `namespace` on `cluster`: a workload's
        Work (a copy there, or one being removed: its Work goes once the copy has), or a
        FederatedResourceQuota's quota (`_quota_in`). Its Namespace's copy, or the
        namespace the applier created there (`gc.collect_namespaces`), stays meanwhile."""
        if self._passing[(namespace, cluster)] > 0:
            return True  # a pass of a workload placed there is under way (`sync`)
        mine = f"{namespace}/"  # a string test over what this process wrote: cheap
        return any(
            cluster in per_cluster
            for ref_text, per_cluster in self.works.items()
            if ref_text.startswith(mine)
        ) or self._quota_in(namespace, cluster)

    def _quota_in(self, namespace: str, cluster: str) -> bool:
        """Whether a FederatedResourceQuota of `namespace` assigns `cluster` a share, or
        its quota is still seen there (being removed). Why it counts: the namespace
        deleted under it took the quota along, and putting the quota back created the
        namespace again bare, without its labels or the member's own objects."""
        if any((c, ns) == (cluster, namespace) for c, ns, _ in self.watches.quotas):
            return True
        return any(
            isinstance(p, FederatedResourceQuota)
            and (p.metadata.namespace or "default") == namespace
            and any(a.cluster_name == cluster for a in p.spec.static_assignments)
            for p in self._policy_objects()
        )

    def _unready(self, names: Iterable[str]) -> set[str]:
        """Those of `names` that are not Ready (`status.not_ready`)."""
        if self.cluster_statuses is None:
            return set()
        statuses = self.cluster_statuses
        return {n for n in names if status_mod.not_ready(statuses.get(keys.cluster_status_key(n)))}

    # -- one pass ----------------------------------------------------------------------------

    async def sync(self, ref: keys.WorkloadRef) -> float | None:
        """Converge one workload; returns a delay to try again after, or None when done.

        Meanwhile its namespace counts as occupied on the clusters it is placed on
        (`occupied`): a copy is applied before its Work is written, and its Namespace's
        copy deleted in between took the new copy along (a running Job, started again)."""
        slots: list[tuple[str, str]] = []
        if ref.namespace != keys.CLUSTER_SCOPE:
            _, _, targets, evicting = self._placed(ref)
            slots = [(ref.namespace, name) for name in {*targets, *evicting}]
        self._passing.update(slots)
        try:
            return await self._sync(ref)
        finally:
            self._passing.subtract(slots)
            for slot in slots:
                if self._passing[slot] <= 0:
                    del self._passing[slot]
            self._forget_rendered(str(ref))

    def _forget_rendered(self, ref_text: str) -> None:
        """Drop the renders of `ref_text`'s copies that no longer have a Work (removed,
        moved away, the template deleted). A pass cut short keeps fewer: the next one
        only renders them again."""
        rendered = self._rendered.get(ref_text)
        if rendered is None:
            return
        kept = self.works.get(ref_text, {})
        for cluster in [name for name in rendered if name not in kept]:
            del rendered[cluster]
        if not rendered:
            del self._rendered[ref_text]

    async def _sync(self, ref: keys.WorkloadRef) -> float | None:
        workload, stored, targets, evicting = self.wanted(ref)
        existing = self.works.setdefault(str(ref), {})
        namespace = objects.namespace_of(ref)
        delays: list[float | None] = []
        writes: list[tuple[str, codec.Stored[Work] | None, Work]] = []
        said: list[Callable[[], Event]] = []
        replaced: set[str] = set()
        spec: Any = None
        if workload is not None:
            # Without a Binding of its own, a dependency wanted only by its needers.
            wl_key = keys.workload_key(ref)
            spec = await self._claiming_spec_now(workload, stored, wl_key)
            revision = 0 if stored is None else stored.revision
            suspended = suspension.clusters(spec, {*targets, *existing}) | self._needers_hold(ref)
            overwrite, preserve = self._conflict_and_preserve(ref, spec, own=stored is not None)
            shared = {
                "template": workload.to_wire(),
                "policies": self._overrides(),
                "profiles": self._profiles(),
                "overwrite": overwrite,
                "preserve": preserve,
                "deps": bool(getattr(spec, "propagate_deps", False)),
                "total": sum(t.replicas for t in targets.values()),
                "before": _ahead(targets.values()),
                "revision": revision,
                "signature": (self.workloads.items[wl_key].revision, revision, self.epoch),
                "events": said,
                "uid": workload.metadata.uid,
                "suspended": suspended,
            }
            # A Namespace is not replaced but applied over: removing its copy would take
            # every copy in it along, and a Namespace, unlike a Job, can be updated.
            others = set() if namespace else _others(existing, workload.metadata.uid)
            replaced = {n for n in targets.keys() & others if self.untouchable(n) is None}
            for name in sorted(replaced):
                # A copy of an object deleted and created again under this name (a Job
                # is immutable and finished there: applying over it would run nothing):
                # removed first, the new object's copy created on the next pass.
                delay, foreign = await self._remove(ref, name, existing)
                delays.append(delay if delay is not None else _AGAIN)
                if delay is None and foreign is not None:
                    why = f"removed from {name}: a copy of an earlier object of this name"
                    said.append(self._removed(ref, name, foreign, "Removed", why))
            targets = {n: t for n, t in targets.items() if n not in replaced}
            results = await asyncio.gather(
                *(self._sync_one(ref, t, existing.get(t.name), shared) for t in targets.values())
            )
            for target, (work, delay) in zip(targets.values(), results, strict=True):
                delays.append(delay)
                old = existing.get(target.name)
                if work is not None and (old is None or old.obj != work):
                    writes.append((target.name, old, work))
            # A copy on a cluster that left the fleet (unjoined `--now`) is not frozen:
            # nothing can be dispatched there again, and its Work must go.
            frozen = {
                name
                for name in (set(existing) - set(targets) - evicting - replaced) & suspended
                if self.clusters.get(keys.cluster_key(name)) is not None
            }
            writes += self._frozen(ref, sorted(frozen), existing)
            evicting |= frozen | self._held(
                ref, results, existing.keys() - targets.keys() - replaced
            )
            said += [
                self._event(ref, reason, why, cluster=name)
                for name, reason, why in suspension.changes(writes, needers=self._needers(ref))
            ]
        gone = sorted(set(existing) - set(targets) - evicting - replaced)
        gone = self._read_first(ref, gone, delays, deleted=workload is None)
        delays += await self._leave(ref, gone, existing, said, deleted=workload is None)
        kept = set(existing) | set(targets) | evicting | replaced
        for name, copy in sorted(self.watches.copies(ref).items()):
            # A namespace is left, as garbage collection leaves it: others' objects may
            # live in it, and it runs nothing.
            if name not in kept and copy["kind"] != "Namespace":
                removed, delay = await self._remove_stray(ref, name, copy)
                delays.append(delay)
                if removed:
                    why = f"removed from {name}: a copy no Work records (a late apply)"
                    said.append(self._event(ref, "Removed", why, cluster=name))
        extra = await self.recorder.ops(ref, said) if self.recorder is not None else []
        status = self.records.status(
            ref,
            workload,
            stored,
            writes,
            placed=(
                None
                if stored is None and workload is None
                else {name: t.replicas for name, t in targets.items()}
            ),
            unready=self._unready([*existing, *(cluster for cluster, _, _ in writes)]),
        )
        if status is not None and workload is not None:
            status = self._with_dependencies(ref, status, spec)
        await self.records.commit(ref, writes, status, extra)
        if not self.works.get(str(ref)):
            self.works.pop(str(ref), None)
        pending = [d for d in delays if d is not None]
        return min(pending) if pending else None

    def _held(
        self,
        ref: keys.WorkloadRef,
        results: Iterable[tuple[Work | None, float | None]],
        leaving: set[str],
    ) -> set[str]:
        """The copies on clusters the placement left, kept while a new target's copy
        cannot be rendered: the move would otherwise end in no copy anywhere (the old one
        removed, the new one never created) until the override is fixed. They go on the
        first pass that renders every target."""
        failed = sorted(
            work.spec.cluster
            for work, _ in results
            if work is not None
            and work.status.conditions
            and work.status.conditions[0].reason == RENDER_FAILED
        )
        # A copy on a cluster that left the fleet is not kept: nothing can reach it again.
        kept = {n for n in leaving if self.clusters.get(keys.cluster_key(n)) is not None}
        if failed and kept:
            log.info("%s: kept on %s while %s cannot be rendered", ref, sorted(kept), failed)
            return kept
        return set()

    def _frozen(
        self,
        ref: keys.WorkloadRef,
        names: Iterable[str],
        existing: Mapping[str, codec.Stored[Work]],
    ) -> list[works_mod.Write]:
        """The Works of copies on clusters the placement left while dispatching there is
        suspended: kept, as the copies are (their status still read), until the
        suspension is lifted and the next pass removes them."""
        writes: list[works_mod.Write] = []
        for name in names:
            old = existing[name]
            status = self._observed(ref, name, old.obj.spec.manifest, old.obj.status)
            work = suspension.frozen(old.obj, status)
            if work != old.obj:
                writes.append((name, old, work))
        return writes

    async def _leave(
        self,
        ref: keys.WorkloadRef,
        names: Iterable[str],
        existing: dict[str, codec.Stored[Work]],
        said: list[Callable[[], Event]],
        *,
        deleted: bool,
    ) -> list[float | None]:
        """Take the copies on the members `names` no longer targeted off them (`deleted`:
        the template is gone); a delay to try again after for each."""
        namespace = objects.namespace_of(ref)
        delays: list[float | None] = []
        held: list[str] = []
        for name in names:
            untouchable = self.untouchable(name)
            if untouchable is not None:
                # No member call is made: say what stays there, never "removed".
                _, foreign = await self._remove(ref, name, existing)
                if foreign is not None:
                    why = f"left running on {name}, no longer managed: {untouchable}"
                    said.append(self._event(ref, "Left", why, cluster=name))
                delays.append(None)
                continue
            if deleted and existing[name].obj.spec.preserve_on_deletion:
                # The template was deleted under a policy that preserves its copies
                # (Karmada's preserveResourcesOnDeletion): the copy stays, released.
                delay, foreign = await self._remove(ref, name, existing, release=True)
                if delay is None and foreign is not None:
                    why = f"released on {name}: kept there without fedctl's labels"
                    said.append(self._removed(ref, name, foreign, "Released", why))
            elif namespace is not None and self.occupied(namespace, name):
                # Deleting it there would delete the copies still in it, and their
                # templates, still here, would be applied again: a Job would run from the
                # start. It goes once they have (a cut-off cascade, a policy that no
                # longer sends the namespace there while it sends its workloads).
                held.append(name)
                delay = _RETRY
            else:
                delay, foreign = await self._remove(ref, name, existing)
                if delay is None and foreign is not None:
                    why = f"removed from {name}"
                    said.append(self._removed(ref, name, foreign, "Removed", why))
            delays.append(delay)
        if namespace is not None:
            if held:
                log.info("%s: kept on %s while workloads in it have copies there", ref, held)
                self.holding.add(namespace)
            else:
                self.holding.discard(namespace)
        return delays

    def _render(
        self,
        ref: keys.WorkloadRef,
        target: TargetCluster,
        cluster: Cluster,
        shared: Mapping[str, Any],
    ) -> tuple[dict[str, Any], str]:
        """The manifest and its digest; re-rendered only when an input changed."""
        cluster_rev = self.clusters.items[keys.cluster_key(target.name)].revision
        signature = (*shared["signature"], cluster_rev, target)
        cached = self._rendered.get(str(ref), {}).get(target.name)
        if cached is not None and cached[0] == signature:
            return cached[1], cached[2]
        manifest = render.render(
            template=shared["template"],
            ref=ref,
            target=target,
            total=shared["total"],
            cluster=cluster,
            policies=shared["policies"],
            profiles=shared["profiles"],
            before=shared["before"].get(target.name, 0),
        )
        digest = render.digest(manifest)
        self._rendered.setdefault(str(ref), {})[target.name] = (signature, manifest, digest)
        return manifest, digest

    async def _sync_one(
        self,
        ref: keys.WorkloadRef,
        target: TargetCluster,
        old: codec.Stored[Work] | None,
        shared: Mapping[str, Any],
    ) -> tuple[Work | None, float | None]:
        cluster = self.clusters.get(keys.cluster_key(target.name))
        if cluster is None or self.untouchable(target.name) is not None:
            return None, _RETRY * 5
        previous = old.obj.status if old else WorkStatus()
        suspended = target.name in shared["suspended"]
        delay = None
        if old is not None and self._finished(ref, cluster.name, old.obj):
            # A finished job's copy is left as it is: the member refuses a new pod
            # template for it, and run again it would run a second time (Karmada leaves a
            # finished Job's copy too). Its Work keeps the manifest it ran with.
            manifest = dict(old.obj.spec.manifest)
            status = self._observed(ref, cluster.name, manifest, previous)
            suspended = old.obj.spec.suspend_dispatching
        else:
            try:
                rendered = self._render(ref, target, cluster, shared)
            except errors.Invalid as exc:
                manifest = dict(old.obj.spec.manifest) if old else dict(shared["template"])
                status = self._unrenderable(ref, cluster.name, previous, str(exc), shared)
            else:
                manifest = rendered[0]
                status, delay = await self._dispatch(
                    ref, cluster, rendered, previous, shared, suspended=suspended
                )
        return works_mod.new_work(
            ref=ref,
            cluster=target.name,
            old=old,
            manifest=manifest,
            revision=shared["revision"],
            status=status,
            uid=shared["uid"],
            preserve=shared["preserve"],
            suspended=suspended,
            deps=shared["deps"],
        ), delay

    def _finished(self, ref: keys.WorkloadRef, cluster: str, work: Work) -> bool:
        """Whether the copy `work` records ran to the end there, by the member's last word."""
        if not work.status.applied_hash:
            return False
        seen = self.watches.seen.get((cluster, str(ref)))
        phase = seen.observed.phase if seen is not None and not seen.gone else None
        return (phase or work.status.observed.phase) in FINISHED_PHASES

    def _unrenderable(
        self,
        ref: keys.WorkloadRef,
        cluster: str,
        previous: WorkStatus,
        why: str,
        shared: Mapping[str, Any],
    ) -> WorkStatus:
        """The Work status of a copy its overrides cannot render: not applied (what runs
        there, if anything, is an older manifest, and the workload's health says so), the
        error naming the policy, rule and path, told once as a Warning event, as
        Karmada's ApplyOverridePolicyFailed is."""
        error = f"cannot render: {why}"
        if error != previous.error:
            shared["events"].append(
                self._event(ref, RENDER_FAILED, error, cluster=cluster, warning=True)
            )
        return previous.model_copy(
            update={
                "applied": False,
                "error": error,
                "conditions": [self._condition("False", RENDER_FAILED, error)],
            }
        )

    async def _dispatch(
        self,
        ref: keys.WorkloadRef,
        cluster: Cluster,
        rendered: tuple[dict[str, Any], str],
        previous: WorkStatus,
        shared: Mapping[str, Any],
        *,
        suspended: bool,
    ) -> tuple[WorkStatus, float | None]:
        """Apply a rendered manifest, or only follow the copy where dispatching is
        suspended."""
        manifest, digest = rendered
        if suspended:
            # Karmada's suspended Work: the manifest is kept for when the suspension
            # is lifted; the member's copy is left as it is, its status still read.
            self.watches.ensure(cluster.name, str(manifest["apiVersion"]), manifest["kind"])
            return self._observed(ref, cluster.name, manifest, previous), None
        return await self._apply_if_needed(
            ref=ref,
            cluster=cluster,
            manifest=manifest,
            digest=digest,
            previous=previous,
            shared=shared,
        )

    async def _apply_if_needed(
        self,
        *,
        ref: keys.WorkloadRef,
        cluster: Cluster,
        manifest: dict[str, Any],
        digest: str,
        previous: WorkStatus,
        shared: Mapping[str, Any],
    ) -> tuple[WorkStatus, float | None]:
        api_version, kind = str(manifest["apiVersion"]), str(manifest["kind"])
        self.watches.ensure(cluster.name, api_version, kind)
        seen = self.watches.seen.get((cluster.name, str(ref)))
        if seen is None and previous.applied:
            seen = self.watches.expect(cluster.name, ref, manifest, previous)
        gone = seen is not None and seen.gone
        if seen is not None and gone and previous.applied:
            last = seen.observed if seen.observed.phase in FINISHED_PHASES else previous.observed
            if last.phase in FINISHED_PHASES:
                # A job that finished there, its copy since deleted (the member's TTL
                # controller, a clean-up): applied again it would run a second time. Its
                # Work keeps what the member last said, so the workload stays finished.
                return previous.model_copy(update={"observed": last}), None
        drifted = _drifted(previous, seen, manifest)
        delay = None
        status = previous
        if not previous.applied or previous.applied_hash != digest or gone or drifted:
            held = self._frq_quota(cluster.name, manifest)
            outcome = (
                Outcome(ok=False, error=held, refused=True)
                if held
                else await self.applier.apply(
                    cluster,
                    manifest,
                    ref=ref,
                    overwrite=shared["overwrite"],
                    known_ours=previous.applied_hash is not None,
                    owner=self.watches.owner(cluster.name, manifest),
                    restore=drifted.startswith("its copy was edited there"),
                )
            )
            if outcome.ok and outcome.obj is not None:
                why = _why(cluster.name, previous, digest, gone=gone, drifted=drifted)
                shared["events"].append(self._event(ref, "Applied", why, cluster=cluster.name))
                self.watches.record(cluster.name, outcome.obj, quiet=True)
                left = _state(
                    status_mod.marks_of(outcome.obj),
                    status_mod.ungenerated_spec(outcome.obj),
                    manifest,
                )
                status = status.model_copy(
                    update={
                        "applied": True,
                        "applied_hash": digest,
                        "applied_state": left,
                        "applied_generation": status_mod.generation_of(outcome.obj) or None,
                        "applied_revision": shared["revision"],
                        "error": "",
                        "conditions": [self._condition("True", "Applied", "")],
                    }
                )
            else:
                reason = "Refused" if outcome.refused else "ApplyFailed"
                outcome = self._shaped(outcome, cluster, shared)
                told = self._event(ref, reason, outcome.error, cluster=cluster.name, warning=True)
                # The same failure again is counted on its event (`events.Again`): told
                # once, it read as a one-off from minutes ago while it went on.
                again = outcome.error == previous.error
                shared["events"].append(events.Again(told) if again else told)
                status = status.model_copy(
                    update={
                        "applied": False,
                        "error": outcome.error,
                        "conditions": [self._condition("False", reason, outcome.error)],
                    }
                )
                delay = _RETRY if outcome.retryable else _RETRY * 5
        return self._observed(ref, cluster.name, manifest, status), delay

    def _shaped(self, outcome: Outcome, cluster: Cluster, shared: Mapping[str, Any]) -> Outcome:
        """`outcome` of a copy the member rejected, naming the override rules that made
        its manifest what it is: the member's error names a field
        (`spec.template.spec.containers[0].imagePullPolicy: Unsupported value`), which the
        template may not hold at all, and the policy to fix was nowhere said."""
        if outcome.refused or outcome.retryable:
            return outcome
        rules = overrides.shaping(shared["policies"], template=shared["template"], cluster=cluster)
        if not rules:
            return outcome
        edited = f"{outcome.error} (its manifest as edited by {', '.join(rules)})"
        return dataclasses.replace(outcome, error=edited)

    def _frq_quota(self, cluster: str, manifest: Mapping[str, Any]) -> str:
        """Why a template's copy may not be applied: it is the member ResourceQuota a
        FederatedResourceQuota assigns there (the same name and namespace), which the
        template's would replace, and the FRQ's worker put back, each in turn. The FRQ's
        is the namespace's quota; the template is refused, as Karmada refuses a template
        over an object it does not own. Empty when nothing stands in the way."""
        meta = manifest.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name"))
        if (
            manifest.get("kind") != "ResourceQuota"
            or (cluster, ns, name) not in self.watches.quotas
        ):
            return ""
        return (
            f"ResourceQuota {ns}/{name} in {cluster} is FederatedResourceQuota {ns}/{name}'s"
            " static assignment: a template of that name would replace it; rename the"
            " template, or change the FederatedResourceQuota instead"
        )

    def _observed(
        self, ref: keys.WorkloadRef, cluster: str, manifest: Mapping[str, Any], status: WorkStatus
    ) -> WorkStatus:
        """`status` with what the member's watch last showed of the copy in `cluster`."""
        seen = self.watches.seen.get((cluster, str(ref)))
        if seen is not None and not seen.gone:
            update: dict[str, Any] = {
                "observed": seen.observed,
                "resource_version": seen.resource_version,
            }
            # Applied before these were recorded: what the member shows now is the
            # baseline that later edits there are told apart from.
            if status.applied and status.applied_generation is None and seen.generation:
                update["applied_generation"] = seen.generation
            if status.applied and status.applied_state is None and seen.marks is not None:
                update["applied_state"] = _state(seen.marks, seen.spec, manifest)
            status = status.model_copy(update=update)
        return status

    def _event(
        self,
        ref: keys.WorkloadRef,
        reason: str,
        message: str,
        *,
        cluster: str,
        warning: bool = False,
    ) -> Callable[[], Event]:
        return lambda: Event(
            type="Warning" if warning else "Normal",
            reason=reason,
            message=message,
            cluster=cluster,
            object=str(ref),
            time=self.now(),
        )

    def _condition(
        self, value: Literal["True", "False"], reason: str, message: str
    ) -> WorkCondition:
        return WorkCondition(
            type="Applied",
            status=value,
            reason=reason,
            message=message,
            last_transition_time=self.now(),
        )

    async def _remove_stray(
        self, ref: keys.WorkloadRef, name: str, copy: Mapping[str, Any]
    ) -> tuple[bool, float | None]:
        """Delete a copy of ours that no Work records and nothing wants where it is: a
        deposed leader's apply that landed after this leader started (member calls carry
        no fence), which would otherwise run beside the real one for good. Returns
        whether there was one (a late event of a copy just removed shows one that is
        already gone) and a delay to try again after."""
        cluster = self.clusters.get(keys.cluster_key(name))
        removed = False
        if cluster is not None and self.untouchable(name) is None:
            try:
                removed = await self.applier.delete_if_ours(cluster, copy, ref)
            except errors.FedctlError as exc:
                log.info("%s: stray copy not yet removed from %s: %s", ref, name, exc)
                return False, _RETRY
        self.watches.forget(name, ref)
        if removed:
            log.warning("%s: removed a copy from %s that no Work records", ref, name)
        return removed, None

    def untouchable(self, name: str) -> str | None:
        """Why nothing may be applied to or deleted from member `name`, or None when both
        may be: it left the federation (its credentials went with it), or the monitor
        found it is a Kubernetes cluster joined first under another name (`duplicateOf`),
        whose copies are the ones there: deleting through this name deleted them, and
        their templates were applied again, each Job from the start."""
        if self.clusters.get(keys.cluster_key(name)) is None:
            return f"{name} is no longer joined"
        if self.cluster_statuses is not None:
            status = self.cluster_statuses.get(keys.cluster_status_key(name))
            if status is not None and status.duplicate_of is not None:
                return (
                    f"{name} is the Kubernetes cluster joined as {status.duplicate_of},"
                    " whose copy it is"
                )
        return None

    async def _remove(
        self,
        ref: keys.WorkloadRef,
        name: str,
        existing: dict[str, codec.Stored[Work]],
        *,
        release: bool = False,
    ) -> tuple[float | None, str | None]:
        """Delete our copy in `name` (or, `release`, leave it there without our labels and
        annotation, so no collection takes it later), then its Work. Returns a delay to try
        again after (None: done) and, when the member's object of that name is not ours
        (`Applier.remove`: one `Abort` refused), what was left there as it is ("" else;
        None when the Work was gone already, removed by a pass that said so)."""
        stored = existing[name]
        cluster = self.clusters.get(keys.cluster_key(name))
        foreign = ""
        if cluster is not None and self.untouchable(name) is None:
            manifest = stored.obj.spec.manifest
            try:
                found = await self.applier.remove(cluster, manifest, ref, release=release)
            except errors.FedctlError as exc:
                log.info("%s: not yet removed from %s: %s", ref, name, exc)
                return _RETRY, ""
            if found == "foreign":
                foreign = f"{object_ref(manifest)} there is not managed by fedctl"
        gone = await self.works_store.delete(keys.work_key(name, ref), guards=self.guards())
        existing.pop(name, None)
        self.watches.forget(name, ref)
        if not gone:
            # Another pass, reading the Work before this one's delete reached it, took
            # the copy off and said so: told twice, a copy read as left there twice.
            return None, None
        if foreign:
            log.info("%s: left on %s: %s", ref, name, foreign)
        else:
            log.info("%s: removed from %s", ref, name)
        return None, foreign

    def _removed(
        self, ref: keys.WorkloadRef, name: str, foreign: str, reason: str, why: str
    ) -> Callable[[], Event]:
        """The event of a copy taken off `name`: `reason`/`why`, or, where the object there
        was not ours (`_remove`), that it was left as it is."""
        if foreign:
            return self._event(ref, "Left", f"left on {name} as it is: {foreign}", cluster=name)
        return self._event(ref, reason, why, cluster=name)


def _ahead(targets: Iterable[TargetCluster]) -> dict[str, int]:
    """Per target, the replicas of the targets before it in the Binding's order."""
    out, seen = {}, 0
    for target in targets:
        out[target.name] = seen
        seen += target.replicas
    return out
