"""Whether a new ClusterStatus is worth a registry write, and what the write keeps.

Fed by the monitor's worker with the status it last wrote and the one it would write now;
feeds the decision to write. Pure. Why it exists: a probe every 10 s for every member would
be a write per member every 10 s, waking every scheduler, failover and dashboard watch;
the issue's goal is far below one write per member per minute when nothing changes. So
only a Ready flip or a new reason, the start or end of a run of failed probes (what a
new leader resumes the failure threshold from), a new version or API set, a different set of node
flavors or node counts, or a free amount moving by more than `capacity_change_fraction`
of that flavor's allocatable is news; everything else waits for the slow heartbeat.
"""

from __future__ import annotations

from policies.models.cluster import ClusterStatus, NodeFlavor

__all__ = ["merge_owned", "news"]


def _flavor_key(f: NodeFlavor) -> tuple[object, ...]:
    return (f.arch, f.accelerator_model, f.accelerator_resource, f.allocatable)


def _capacity_news(old: ClusterStatus, new: ClusterStatus, *, fraction: float) -> str | None:
    before = {_flavor_key(f): f for f in old.flavors}
    after = {_flavor_key(f): f for f in new.flavors}
    if before.keys() != after.keys():
        return "node flavors changed"
    for key, flavor in after.items():
        prior = before[key]
        if prior.node_count != flavor.node_count:
            name = f"{flavor.arch}/{flavor.accelerator_model or '-'}"
            return f"{name} nodes {prior.node_count} -> {flavor.node_count}"
        if flavor.free_nodes and not prior.free_nodes:  # stored before they were reported
            return "free nodes reported"
        for name in flavor.allocatable:
            total = flavor.allocatable[name] * flavor.node_count
            moved = abs(flavor.free.amount(name) - prior.free.amount(name))
            if moved and moved > fraction * total:
                return f"free {name} moved by {moved / 1000:g} of {total / 1000:g}"
    return None


def _run(status: ClusterStatus) -> object:
    failures = status.probe_failures
    return None if failures is None else failures.since


def news(old: ClusterStatus | None, new: ClusterStatus, *, fraction: float) -> str | None:
    """Why `new` must be written now (a short phrase), or None when it can wait."""
    if old is None:
        return "first status"
    before, after = old.condition("Ready"), new.condition("Ready")
    if after is not None and (
        before is None or (before.status, before.reason) != (after.status, after.reason)
    ):
        return f"Ready={after.status} ({after.reason})"
    if _run(old) != _run(new):
        # Stored at once: a new leader resumes the failure threshold from it.
        return "probes failing" if new.probe_failures else "probes succeed again"
    for cond in new.conditions:
        prior = old.condition(cond.type)
        if prior is None or (prior.status, prior.reason) != (cond.status, cond.reason):
            return f"{cond.type}={cond.status} ({cond.reason})"
    if old.kubernetes_version != new.kubernetes_version:
        return "kubernetes version changed"
    if old.cluster_id != new.cluster_id:
        return "cluster id changed"
    if old.duplicate_of != new.duplicate_of:
        return "duplicate of another member changed"
    if old.api_enablements != new.api_enablements:
        return "served APIs changed"
    return _capacity_news(old, new, fraction=fraction)


def merge_owned(current: ClusterStatus | None, observed: ClusterStatus) -> ClusterStatus:
    """The status to store: the monitor's observation, keeping fields other owners write
    (the taints failover applies) as they are in the registry now."""
    if current is None:
        return observed
    return observed.model_copy(update={"taints": current.taints})
