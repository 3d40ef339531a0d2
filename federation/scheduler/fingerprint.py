"""What a workload's placement depends on, as one digest: the fingerprint.

Fed by the scheduling loop's pending entries (`plan.job_for`) and the Ready members of the
snapshot (`placeable`); feeds `reconcile`, which compares it with the one a Scheduled
Binding was admitted under (`recorded.admitted_as`), and the loop, which stamps it on each
Binding it writes (annotation `fedctl.io/fingerprint`).

Why a digest rather than comparing objects: the one it is compared with must survive a
restart or a change of leader, so it travels on the Binding; and a workload's metadata
(resource version, managed fields) changes on writes that do not move it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from federation.cache import snapshot as snap
from federation.queue.pending import PendingJob
from federation.resources import device_names
from federation.scheduler import framework as fw
from federation.scheduler.plugins import affinity
from policies.models.cluster import HEALTH_TAINTS
from policies.models.common import ClusterAffinity
from policies.models.propagation import Placement

__all__ = ["fingerprint", "placeable"]

_ATTRS = "\x1e"
"""Between a `placeable` entry's name and taints and its labels and fields (JSON escapes
this character, so the entry splits back unambiguously)."""
_APIS = "\x1f"
"""Before a `placeable` entry's digest of the APIs the cluster serves (none: not reported)."""
_NODES = "\x1d"
"""Before a `placeable` entry's kinds of node, as JSON: [arch, chip, device resource] of
each node flavor (none at all: no node counts, all NotReady or cordoned)."""
_LIMIT = 4096
"""Entries kept per cache below: API sets by object, digests read back, placements."""


def placeable(clusters: Iterable[snap.ClusterInfo]) -> list[str]:
    """The Ready clusters as a service's placement depends on them (`fingerprint`): each
    name with the taints that keep work off it, its labels, its region, zone and provider,
    and a digest of the APIs it serves.

    Why the taints: a member that came back Ready is tainted until its stale copies are
    purged; a Duplicated service placed in that window skipped it, and with the Ready set
    unchanged when the taint went, it never got its copy there (Karmada schedules a
    Duplicated binding again on every cluster change). A member that joins is Ready a
    moment before failover lifts its `not-ready` taint; a divided service placed then
    missed its share there the same way. Why the labels and fields: a member relabelled
    into a service's cluster affinity gets its share, one relabelled out of it loses it
    (Karmada schedules again the bindings a cluster's label or spec change concerns). Why
    the APIs: a member that starts serving a kind (a CRD installed after the service was
    placed) gets its copy. Why the kinds of node: a member whose nodes were all NotReady
    (or whose Arm or GPU nodes were) when a service was placed has its share once they
    are back, though it stayed Ready and untainted all along.
    """
    out = []
    served: dict[str, frozenset[tuple[str, str]]] = {}
    for c in clusters:
        if not c.ready:
            continue
        digest = _digest(c.apis)
        if digest:
            served[digest] = c.apis
        marks = sorted(
            f"{t.key}={t.value or ''}:{t.effect}"
            for t in c.taints
            if t.effect != "PreferNoSchedule"
        )
        attrs, nodes = _attrs_of(c)
        out.append(f"{c.name}|{','.join(marks)}{_ATTRS}{attrs}{_APIS}{digest}{_NODES}{nodes}")
    _remember(served)
    return out


_attrs: dict[int, tuple[snap.ClusterInfo, str, str]] = {}
"""Per cluster (by identity, the object kept alongside): its labels and fields, and its
kinds of node, as JSON. A snapshot keeps the very object while the cluster's spec and
status stand, and writing the JSON anew for every cluster made `placeable` ten times as
slow."""
_ATTRS_LIMIT = 65536


def _attrs_of(c: snap.ClusterInfo) -> tuple[str, str]:
    hit = _attrs.get(id(c))
    if hit is not None and hit[0] is c:
        return hit[1], hit[2]
    text = json.dumps(
        [c.region, c.zone, c.provider, sorted(c.labels.items())], separators=(",", ":")
    )
    kinds = {(f.arch, f.accelerator_model, f.accelerator_resource) for f in c.flavors}
    nodes = json.dumps(sorted(kinds, key=repr), separators=(",", ":"))
    if len(_attrs) >= _ATTRS_LIMIT:
        _attrs.clear()
    _attrs[id(c)] = (c, text, nodes)
    return text, nodes


_digests: dict[int, tuple[frozenset[tuple[str, str]], str]] = {}
"""Per API set (by identity, the set kept alongside): its digest. A cluster's set is
rebuilt only when its status changes, and hashing hundreds of APIs per cluster per cycle
would cost more than the rest of `placeable`."""
_served: dict[str, frozenset[tuple[str, str]]] = {}
"""Per digest: the APIs, for `_site` to read an entry's back. Holds at least every digest
of the latest `placeable` (see `_remember`)."""


def _digest(apis: frozenset[tuple[str, str]]) -> str:
    if not apis:
        return ""
    hit = _digests.get(id(apis))
    if hit is not None and hit[0] is apis:
        return hit[1]
    text = "\n".join(sorted(f"{version} {kind}" for version, kind in apis))
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    if len(_digests) >= _LIMIT:
        _digests.clear()
    _digests[id(apis)] = (apis, digest)
    return digest


def _remember(served: dict[str, frozenset[tuple[str, str]]]) -> None:
    """Add a pass's digests to `_served`; past the limit, replace it whole by them, so
    the entries `placeable` just returned always read back (an older list may not: its
    clusters are then taken to serve every kind, as when they report none)."""
    global _served
    if len(_served) + len(served) > _LIMIT:
        _served = dict(served)
    else:
        _served.update(served)


def fingerprint(job: PendingJob, *, ready: Iterable[str] = ()) -> str:
    """What a placement depends on from the workload and its policy (not its metadata).

    A service (not a batch gang) also depends on the Ready clusters its cluster affinity
    takes in (any of its ordered groups) that serve its kind: as in Karmada, a member
    joining, recovering or relabelled into it gets its share and a lost one's share
    moves; beyond Karmada, so does a member that starts serving its kind (a CRD installed
    after the service was placed). A change to a cluster outside it moves nothing. One
    that goes to every cluster (Duplicated, or scaled to zero) depends on their taints too
    (`placeable`): a member losing its taint gets its copy. A divided service depends
    only on failover's health taints (`HEALTH_TAINTS`): a Ready member carrying one is not
    back yet, and it gets its share when the taint goes. A user's cordon or taint leaves
    divided work alone: Steady division would place it as it is. Clusters with no kind of
    node its pods may use (none Ready, or none of its chip or arch) are left out, as the
    chip filter leaves them out: one whose nodes come back gets its share.
    """
    w = job.workload
    placement = job.placement.model_dump_json() if job.placement is not None else ""
    fleet = ""
    if job.placement is not None and not w.is_batch:
        everywhere = job.placement.scheduling.replica_scheduling_type == "Duplicated"
        scaled_out = bool(w.pod_sets) and w.replicas == 0
        api = (w.api_version, w.kind)
        fleet = _fleet(
            ready, job.placement, placement, api, _need(job), everywhere=everywhere or scaled_out
        )
    parts = [
        w.model_dump_json(exclude={"metadata", "status"}),
        repr(sorted(w.metadata.labels.items())),
        repr(sorted(w.metadata.annotations.items())),
        placement,
        getattr(job.fedctl, "model_dump_json", lambda: "")(),
        job.queue,
        str(job.priority),
        fleet,
    ]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class _Site:
    """A `placeable` entry read back: what cluster affinity matches on, and the entry with
    its taints (`marked`) and without (`bare`)."""

    name: str
    region: str
    zone: str
    provider: str
    labels: Mapping[str, str]
    known: bool
    """False for an entry that is a bare name (its labels and fields not given): it is
    taken to be in every affinity."""
    sick: bool
    marked: str
    bare: str
    marked_name: str
    """`marked` without the labels and fields, for a placement that does not read them."""
    apis: frozenset[tuple[str, str]] | None
    """What it serves; None when not reported (taken to serve every kind, as the API
    enablement filter does)."""
    nodes: tuple[tuple[str, str | None, str | None], ...] | None = None
    """Its kinds of node (arch, chip, device resource); None when the entry does not say
    (taken to host every workload)."""


_Need = tuple[tuple[str, ...], tuple[str, ...], frozenset[str], frozenset[str]]
"""What the chip filter reads of a workload: its chips and arches, the names of all its
pods request, and of what they request a positive amount of (`_need`)."""


def _need(job: PendingJob) -> _Need:
    """As `framework.request_for` reads them (device resources sorted out per fleet)."""
    chips, arches = fw.accepted_chips(job)
    pod = job.workload.pod_requests()
    return chips, arches, frozenset(pod), frozenset(n for n in pod if pod.amount(n) > 0)


def _hosting(need: _Need, known: frozenset[str]) -> Callable[[_Site], bool]:
    """Whether some kind of node a site has suits the workload (the chip filter's rule);
    a site that does not say is taken to host it."""
    chips, arches, names, asked = need
    devices = device_names(names, known)
    accelerated = bool(device_names(asked, known))

    def hosts(site: _Site) -> bool:
        return site.nodes is None or any(
            fw.chip_suits(chips, arches, accelerated, devices, chip=c, arch=a, resource=r)
            for a, c, r in site.nodes
        )

    return hosts


def _site(entry: str) -> _Site:
    entry, kinds, nodes_text = entry.partition(_NODES)
    nodes = tuple((a, c, r) for a, c, r in json.loads(nodes_text)) if kinds else None
    rest, _, digest = entry.partition(_APIS)
    head, _, attrs = rest.partition(_ATTRS)
    name, _, marks = head.partition("|")
    sick = bool(marks) and any(m.partition("=")[0] in HEALTH_TAINTS for m in marks.split(","))
    bare = f"{name}{_ATTRS}{attrs}" if attrs else name
    marked = f"{head}{_ATTRS}{attrs}" if attrs else head
    marked_name = head if marks else name
    apis = _served.get(digest) if digest else None
    if not attrs:
        return _Site(name, "", "", "", {}, False, sick, marked, bare, marked_name, apis, nodes)
    region, zone, provider, labels = json.loads(attrs)
    return _Site(
        name,
        region,
        zone,
        provider,
        dict(labels),
        True,
        sick,
        marked,
        bare,
        marked_name,
        apis,
        nodes,
    )


@dataclass(frozen=True, slots=True)
class _Fleet:
    ready: object
    sites: list[_Site]
    by_placement: dict[tuple[str, tuple[str, str], _Need], tuple[str, str]] = field(
        default_factory=dict
    )
    """Per placement (its JSON), kind and need: the sites its affinity takes in that serve
    the kind and have nodes for it, joined with their taints and without those carrying a
    health taint."""
    known: frozenset[str] = frozenset()
    """The device resources the sites' nodes expose (the snapshot's `device_resources`)."""


_last_fleet = _Fleet((), [])
"""The last `ready` given to `fingerprint`, read back, and what each placement takes of
it: a pass gives every workload the same list and a few placements, and working this out
per workload cost as much as the rest of the digest at hundreds of clusters. Replaced
whole, so a reader in another thread sees one consistent entry."""


def _fleet(
    ready: Iterable[str],
    placement: Placement,
    key: str,
    api: tuple[str, str],
    need: _Need,
    *,
    everywhere: bool,
) -> str:
    global _last_fleet
    last = _last_fleet
    if last.ready is not ready or len(last.by_placement) >= _LIMIT:
        sites = sorted((_site(e) for e in ready), key=lambda s: s.name)
        known = frozenset(r for s in sites for _, _, r in s.nodes or () if r)
        last = _last_fleet = _Fleet(ready, sites, known=known)
    hit = last.by_placement.get((key, api, need))
    if hit is None:
        terms = placement.affinity_terms
        hosts = _hosting(need, last.known)
        taken = [
            s
            for s in last.sites
            if (s.apis is None or api in s.apis)
            and (not s.known or any(affinity.matches(t, s) is None for t in terms))
            and hosts(s)
        ]
        if _reads_places(placement):
            hit = (
                ",".join(s.marked for s in taken),
                ",".join(s.bare for s in taken if not s.sick),
            )
        else:  # names alone: a relabelled member concerns it only by entering or leaving
            hit = (
                ",".join(s.marked_name for s in taken),
                ",".join(s.name for s in taken if not s.sick),
            )
        last.by_placement[key, api, need] = hit
    return hit[0] if everywhere else hit[1]


def _reads_places(placement: Placement) -> bool:
    """Whether any part of the placement matches or groups clusters by their labels or
    fields (affinity, static weight targets, spread by region, zone, provider or label)."""
    terms: list[ClusterAffinity] = list(placement.affinity_terms)
    scheduling = placement.replica_scheduling
    if scheduling is not None and scheduling.weight_preference is not None:
        terms += [w.target_cluster for w in scheduling.weight_preference.static_weight_list]
    if any(t.label_selector is not None or t.field_selector is not None for t in terms):
        return True
    return any(
        c.spread_by_label or c.spread_by_field not in (None, "cluster")
        for c in placement.spread_constraints
    )
