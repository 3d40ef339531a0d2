"""What a policy being written will claim, said before it surprises anyone.

Fed by the policies a write or a what-if proposes, the workloads and policies as they
would stand after it, and the claim each workload's Binding records; feeds `fedctl apply`
(as `Warning` headers of the API's apply route), `fedctl plan` (offline and live) and the
dashboard's policy editor with one line per surprise.

Why: a policy that selects a workload does not always place it. Karmada's rules give a
workload to one policy (`plan.claim`), and a claimed workload stays with its policy unless
one allowed to preempt it outranks it (`plan.claimant`). A team that writes a second policy
for a workload another policy already holds, or a policy whose selector matches nothing
(a name misspelt, a namespace left out), sees no error and no change: the live plan had
nothing to show and the editor said no workload was affected. These notes name the
workload, the policy that keeps it and the rule that decides, or say that nothing matches.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import TypeVar

from federation.cache.currency import Currency
from federation.scheduler import plan, spread
from federation.scheduler.plugins import affinity
from policies.loading import LoadResult, arches, node_arches
from policies.loading.documents import Loaded, finding_at
from policies.loading.findings import Finding
from policies.models.base import KubeObject
from policies.models.cluster import Cluster
from policies.models.common import ClusterAffinity
from policies.models.placement_ext import FedctlPlacement
from policies.models.workload import ANNOTATION_CHIPS, Workload

__all__ = [
    "SHOWN",
    "affinity_findings",
    "against",
    "chip_findings",
    "division_findings",
    "members_of",
    "notes",
    "on_delete",
    "policy_label",
    "workload_label",
]

SHOWN = 5
"""Workloads named per policy; the rest are counted (a kind-wide selector over thousands
of Jobs would otherwise bury the first line)."""

_LEVEL = {2: "by name", 1: "by label", 0: "by kind alone"}


def policy_label(policy: plan.AnyPolicy) -> str:
    """`PropagationPolicy web/storefront` or `ClusterPropagationPolicy everything`."""
    if plan.is_namespaced(policy):
        return f"{policy.kind} {policy.metadata.namespace or 'default'}/{policy.metadata.name}"
    return f"{policy.kind} {policy.metadata.name}"


def workload_label(workload: Workload) -> str:
    """`Deployment web/storefront`, or `Namespace web` for a cluster-scoped kind."""
    if workload.namespace:
        return f"{workload.kind} {workload.namespace}/{workload.metadata.name}"
    return f"{workload.kind} {workload.metadata.name}"


def notes(
    proposed: Iterable[plan.AnyPolicy],
    workloads: Iterable[Workload],
    policies: Sequence[plan.AnyPolicy],
    *,
    recorded: Callable[[Workload], str | None] = lambda _: None,
) -> list[str]:
    """One line for each proposed policy that selects no workload, and for each workload a
    proposed policy selects that another policy claims (`recorded`: the claim a workload's
    Binding records, None when it has none). `policies` and `workloads` are the state after
    the write, the proposed policies among them. Policies that claim everything they select
    say nothing."""
    workloads = list(workloads)  # opaque kinds too: a policy claims a Namespace as a Job
    out: list[str] = []
    for policy in proposed:
        selected = [w for w in workloads if plan.specificity_for(policy, w) is not None]
        if not selected:
            out.append(
                f"{policy_label(policy)} selects no workload: it places nothing until one it"
                " selects is created (check its resourceSelectors' kind, name and namespace)"
            )
            continue
        others = []
        for workload in selected:
            held = recorded(workload)
            holder = plan.claim(workload, policies, recorded=held)
            if holder is not None and plan.policy_id(holder) != plan.policy_id(policy):
                others.append((workload, holder, held))
        for workload, holder, held in others[:SHOWN]:
            out.append(_held(policy, workload, holder, held == plan.policy_id(holder)))
        if len(others) > SHOWN:
            out.append(
                f"{policy_label(policy)}: {len(others) - SHOWN} more of the"
                f" {len(selected)} workloads it selects are claimed by other policies"
            )
    return out


def _held(policy: plan.AnyPolicy, workload: Workload, holder: plan.AnyPolicy, kept: bool) -> str:
    """Why `holder`, not `policy`, claims `workload` (`kept`: its Binding records holder)."""
    lead = f"{policy_label(policy)} selects {workload_label(workload)}, but"
    outranks = _outranks(holder, policy, workload)
    if outranks is not None or not kept:
        return f"{lead} {policy_label(holder)} claims it: {outranks or 'it ranks first'}"
    stays = f"{lead} it stays with {policy_label(holder)}, which claimed it first"
    wants = ["`preemption: Always`"]
    if plan.is_namespaced(policy) == plan.is_namespaced(holder):
        wants.append(f"a priority above {holder.spec.priority}")
    return (
        f"{stays}: a policy takes a claimed workload only with {' and '.join(wants)}"
        f" (this one: preemption {policy.spec.preemption}, priority {policy.spec.priority})"
    )


def _outranks(holder: plan.AnyPolicy, policy: plan.AnyPolicy, workload: Workload) -> str | None:
    """Why `holder` comes before `policy` in Karmada's order for `workload`, or None when it
    does not (it holds the workload by an earlier claim)."""
    if plan.is_namespaced(holder) != plan.is_namespaced(policy):
        if plan.is_namespaced(holder):
            return "a PropagationPolicy comes before a ClusterPropagationPolicy"
        return None
    if holder.spec.priority != policy.spec.priority:
        if holder.spec.priority > policy.spec.priority:
            return f"its priority {holder.spec.priority} is above {policy.spec.priority}"
        return None
    mine = plan.specificity_for(policy, workload)
    theirs = plan.specificity_for(holder, workload)
    assert mine is not None and theirs is not None
    if theirs != mine:
        if theirs > mine:
            return f"it selects {_LEVEL[theirs]}, this one {_LEVEL[mine]}"
        return None
    if holder.metadata.name < policy.metadata.name:
        return (
            f"both have priority {holder.spec.priority} and select it {_LEVEL[mine]}:"
            " the name first in alphabetical order claims"
        )
    return None


def on_delete(
    deleted: plan.AnyPolicy,
    workloads: Iterable[Workload],
    policies: Sequence[plan.AnyPolicy],
    *,
    recorded: Callable[[Workload], str | None] = lambda _: None,
) -> list[str]:
    """What deleting a policy does to the workloads it claims (`policies`: those left after
    it): each is claimed by the policy that selects it now and placed again, or, with none,
    stays where it is with its copies running (Karmada keeps the binding), until a policy
    claims it. Nothing is said when it claims nothing."""
    mine = plan.policy_id(deleted)
    before = [*policies, deleted]
    moved: list[tuple[Workload, plan.AnyPolicy]] = []
    kept: list[Workload] = []
    for workload in workloads:
        holder = plan.claim(workload, before, recorded=recorded(workload))
        if holder is None or plan.policy_id(holder) != mine:
            continue
        successor = plan.claim(workload, policies)
        if successor is None:
            kept.append(workload)
        else:
            moved.append((workload, successor))
    out = [
        f"{workload_label(w)}, which {policy_label(deleted)} claimed, is placed again under"
        f" {policy_label(successor)}"
        for w, successor in moved[:SHOWN]
    ]
    if len(moved) > SHOWN:
        out.append(f"{len(moved) - SHOWN} more workloads it claimed are placed again")
    if kept:
        names = ", ".join(workload_label(w) for w in kept[:SHOWN])
        more = f" and {len(kept) - SHOWN} more" if len(kept) > SHOWN else ""
        out.append(
            f"{policy_label(deleted)} claimed {names}{more}, which no other policy selects:"
            " they stay where they are, their copies running, until a policy claims them"
        )
    return out


def members_of(clusters: Iterable[Cluster]) -> list[spread.ScoredCluster]:
    """The joined members a fleet's Cluster objects describe, as affinity and spread match
    them (`affinity.Located`, `ScoredCluster.group_of`), unscored."""
    return [
        spread.ScoredCluster(
            c.name,
            0,
            region=c.spec.region,
            zone=c.spec.zone or "",
            provider=c.spec.provider or "",
            labels=c.metadata.labels,
        )
        for c in clusters
    ]


def against(
    result: LoadResult,
    fleet: Sequence[KubeObject],
    *,
    queues: Mapping[str, Collection[str]] | None = None,
    currency: Currency | None = None,
) -> LoadResult:
    """`result` with every warning a fleet decides (its Clusters and AcceleratorProfiles,
    and the server's queues with their children when given): chips it defines and members
    not joined (`LoadResult.against_fleet`), affinities and spreads no joined member can
    satisfy, workloads' chips their policy's arches leave out (`chip_findings`), jobs a
    policy dividing by weight never divides (`division_findings`), and queues
    that take no work. What `fedctl apply`, the editor's validate route
    and an offline `fedctl plan` all judge, the same way. With the server's `currency`,
    also Clusters priced in a currency it has no rate for (the apply route says so too)."""
    result = result.against_fleet(fleet)
    members = members_of(c for c in fleet if isinstance(c, Cluster))
    result = result.with_findings(affinity_findings(result, members))
    result = result.with_findings(chip_findings(result, fleet))
    result = result.with_findings(division_findings(result))
    if currency is not None:
        result = result.with_findings(
            finding_at(obj, ("spec", "prices", "currency"), problem)
            for obj in result.objects
            if isinstance(obj.model, Cluster)
            and (problem := currency.problem(obj.model.spec.prices))
        )
    if queues is not None and result.names_queues:
        result = result.with_defined_queues(queues)
    return result


def affinity_findings(result: LoadResult, members: Sequence[spread.ScoredCluster]) -> list[Finding]:
    """A warning at each cluster affinity of a placing policy whose label or field selector
    no joined member matches: the workloads it claims stay Pending (or, in an ordered
    group, go on to the next group) until a member matches, and a label typo says nothing
    anywhere else. Affinities by name alone are the unjoined-member check's. Also a spread
    constraint whose `minGroups` the usable members cannot form. None when no member has
    joined yet."""
    if not members:
        return []
    found = []
    for obj in result.objects:
        model = obj.model
        if not isinstance(model, plan.AnyPolicy):
            continue
        placement = model.spec.placement
        terms: list[tuple[tuple[str | int, ...], ClusterAffinity, str]] = []
        if placement.cluster_affinity is not None:
            path: tuple[str | int, ...] = ("spec", "placement", "clusterAffinity")
            outcome = "the workloads it claims stay Pending until one does"
            terms.append((path, placement.cluster_affinity, outcome))
        for i, group in enumerate(placement.cluster_affinities):
            last = i == len(placement.cluster_affinities) - 1
            outcome = (
                "unless an earlier group places them, they stay Pending until one does"
                if last
                else f"group {group.affinity_name} is passed over for the next one"
            )
            terms.append((("spec", "placement", "clusterAffinities", i), group, outcome))
        for at, term, outcome in terms:
            if term.label_selector is None and term.field_selector is None:
                continue
            if any(affinity.matches(term, m) is None for m in members):
                continue
            found.append(
                finding_at(
                    obj,
                    at,
                    f"none of the {len(members)} joined clusters matches this affinity"
                    f" ({_what_there_is(term, members)}): {outcome}",
                )
            )
        found.extend(_spread_findings(obj, model, members))
    return found


def chip_findings(result: LoadResult, fleet: Sequence[KubeObject] = ()) -> list[Finding]:
    """A warning at each workload's `fedctl.io/chips` naming a chip whose arch the
    `spec.fedctl.arches` of the policy claiming it (among the documents) leaves out; an
    error at each pod template's own `kubernetes.io/arch` those arches leave out, which
    nothing could ever place (`node_arches`).

    Why: the workload's chips replace its policy's, but the policy's arches still hold,
    so such a chip is never chosen. CPU pods naming `amd64` under a policy accepting only
    arm64 were placed on amd64 before both were made to hold; now they wait, and this says
    why before they are applied. The chip's arch is read as `arches.arch_conflicts` reads
    it, from the documents and `fleet`.
    """
    known = arches.chip_arches([*fleet, *(o.model for o in result.objects)])
    found: list[Finding] = []
    for obj, workload, read, holder in _claimed(result, _chips_or_pinned):
        chips = read[0] if read is not None else ()
        ext = getattr(holder.spec, "fedctl", None)
        if not isinstance(ext, FedctlPlacement):
            continue
        by = f"{policy_label(holder)}, which claims this workload,"
        found.extend(
            finding_at(obj, at, message, severity="error")
            for at, message in node_arches.conflicts(workload, ext.arches, by=by)
        )
        accepted = ", ".join(ext.arches)
        found.extend(
            finding_at(
                obj,
                ("metadata", "annotations", ANNOTATION_CHIPS),
                f"chip {chips[i]!r} is on {why}, and {policy_label(holder)}, which claims this"
                f" workload, accepts only arches {accepted}: it is never chosen",
            )
            for i, why in arches.unmet(chips, ext.arches, known)
        )
    return found


def division_findings(result: LoadResult) -> list[Finding]:
    """A warning at the `replicaScheduling` of each policy dividing by weight, for each
    workload among the documents it claims that is never divided (`Workload.never_divided`).

    Why: such a job goes whole to one cluster whatever its policy says; a user reading a
    policy that divides would expect shares on several members (and a PyTorchJob divided
    1:1 once gave one member workers with no master).
    """
    places = {id(o.model): o for o in result.objects}
    return [
        finding_at(
            places[id(holder)],
            ("spec", "placement", "replicaScheduling"),
            f"{policy_label(holder)} divides by weight, but {workload_label(workload)} is"
            f" {why}: it is never divided, it goes whole to one cluster",
        )
        for _, workload, why, holder in _claimed(
            result, lambda w: "" if w.is_opaque else w.never_divided
        )
        if _weighted(holder)
    ]


_T = TypeVar("_T")


def _chips_or_pinned(workload: Workload) -> tuple[tuple[str, ...]] | None:
    """Its chips (in a 1-tuple: none is still a value to judge), when it names any or a
    pod template pins an arch (None: neither)."""
    chips = workload.chips
    return (chips,) if chips or workload.node_arches is not None else None


def _claimed(
    result: LoadResult, read: Callable[[Workload], _T]
) -> Iterator[tuple[Loaded, Workload, _T, plan.AnyPolicy]]:
    """Each workload among the documents with what `read` reads of it, when that is not
    empty and a policy among the documents claims it, with that policy. A workload `read`
    cannot read is skipped: the loader reports it already."""
    objects = result.objects
    policies = [o.model for o in objects if isinstance(o.model, plan.AnyPolicy)]
    if not policies:
        return
    for obj in objects:
        workload = obj.model
        if not isinstance(workload, Workload):
            continue
        try:
            value = read(workload)
        except ValueError:
            continue
        holder = plan.claim(workload, policies) if value else None
        if holder is not None:
            yield obj, workload, value, holder


def _weighted(policy: plan.AnyPolicy) -> bool:
    scheduling = policy.spec.placement.scheduling
    return scheduling.replica_scheduling_type == "Divided" and scheduling.division == "Weighted"


def _spread_findings(
    obj: Loaded, policy: plan.AnyPolicy, members: Sequence[spread.ScoredCluster]
) -> list[Finding]:
    """A spread constraint whose `minGroups` the joined clusters the policy may use cannot
    form: Karmada leaves such a workload unscheduled, and only its Pending reason said so.
    None when the scheduler ignores the constraints (`Placement.spread_ignored`): the
    workload is placed anyway, and the loader's notice says they are ignored."""
    placement = policy.spec.placement
    if placement.spread_ignored:
        return []
    terms: list[ClusterAffinity] = (
        [placement.cluster_affinity]
        if placement.cluster_affinity is not None
        else list(placement.cluster_affinities)
    )
    usable = [m for m in members if not terms or any(affinity.matches(t, m) is None for t in terms)]
    found = []
    for i, constraint in enumerate(placement.spread_constraints):
        if constraint.min_groups <= 1:
            continue
        groups = {m.group_of(constraint.grouping) for m in usable} - {""}
        if constraint.min_groups <= len(groups):
            continue
        by = constraint.spread_by_field or "cluster"
        what = (
            f"values of label {constraint.spread_by_label}"
            if constraint.spread_by_label
            else f"{by}s"
        )
        shown = ", ".join(sorted(groups)) or "none"
        found.append(
            finding_at(
                obj,
                ("spec", "placement", "spreadConstraints", i, "minGroups"),
                f"minGroups {constraint.min_groups}, but the joined clusters this policy may use"
                f" span {len(groups)} {what} ({shown}): the workloads it claims stay Pending"
                " until more join",
            )
        )
    return found


def _what_there_is(term: ClusterAffinity, members: Sequence[spread.ScoredCluster]) -> str:
    """What the fleet offers for the selectors the affinity sets, to spot the typo."""
    parts = []
    if term.field_selector is not None:
        for key in sorted({r.key for r in term.field_selector.match_expressions}):
            values = sorted({getattr(m, key) or "(none)" for m in members})
            parts.append(f"{key}s here: {', '.join(values)}")
    if term.label_selector is not None:
        labels = sorted({f"{k}={v}" for m in members for k, v in m.labels.items()})
        shown = ", ".join(labels[:8]) + (", ..." if len(labels) > 8 else "")
        parts.append(f"labels here: {shown or 'none'}")
    return "; ".join(parts)
