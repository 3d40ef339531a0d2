"""The only place registry key strings are built and parsed (DESIGN.md, "Objects").

    /fedctl/clusters/<name>                           Cluster spec        (API, user)
    /fedctl/clusterstatus/<name>                      ClusterStatus       (cluster monitor)
    /fedctl/workloads/<ns>/<kind>/<name>              Workload template   (API, user)
    /fedctl/workloadstatus/<ns>/<kind>/<name>         aggregated status   (propagator)
    /fedctl/policies/<kind>/<ns or _>/<name>          policies and queues (API, user)
    /fedctl/policystatus/<kind>/<ns or _>/<name>      policy status       (propagator: FRQ)
    /fedctl/bindings/<ns>/<kind>/<name>               Binding             (scheduler, failover)
    /fedctl/works/<cluster>/<ns>/<kind>/<name>        Work                (propagator)
    /fedctl/events/<ns or _>/<object>/<id>            Event, leased       (any controller)
    /fedctl/drills/<id>                               drill report        (drills)
    /fedctl/drillrun                                  the drill in flight (drills API)
    /fedctl/leader                                    leader lease        (election)

Why workload status has its own key: DESIGN.md keeps spec and status apart so a user's
edit never conflicts with a controller's status write. Workload kinds are spelled
`Kind.group` (`Deployment.apps`, `Job.batch`, `Job.batch.volcano.sh`) because a kind alone
is ambiguous across groups. Every segment is checked: no `/`, no `..`, nothing empty, so a
name from a request can never address another key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from federation import errors

__all__ = [
    "ROOT",
    "WorkloadRef",
    "binding_key",
    "cluster_key",
    "cluster_status_key",
    "drill_key",
    "drill_run_key",
    "event_key",
    "kind_segment",
    "leader_key",
    "namespace_segment",
    "parse_workload_key",
    "policy_key",
    "policy_prefix",
    "policy_status_key",
    "prefix",
    "split",
    "validate_segment",
    "work_key",
    "work_prefix",
    "workload_key",
    "workload_status_key",
]

ROOT = "/fedctl"
CLUSTER_SCOPE = "_"

_SEGMENT = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._:-]{0,251}[A-Za-z0-9])?$")

_PREFIXES = {
    "clusters",
    "clusterstatus",
    "workloads",
    "workloadstatus",
    "policies",
    "policystatus",
    "bindings",
    "works",
    "events",
    "drills",
}


def validate_segment(value: str, *, what: str = "name") -> str:
    """Return `value` if it is safe as one key segment, else raise `Invalid` naming it."""
    if not value or "/" in value or ".." in value or not _SEGMENT.match(value):
        raise errors.Invalid(
            f"invalid {what} {value!r}: use letters, digits, '-', '.', ':' or '_' "
            "(no '/', no '..', at most 253 characters)"
        )
    return value


def prefix(kind: str) -> str:
    """The prefix under which every object of a top-level kind lives, with trailing `/`."""
    if kind not in _PREFIXES:
        raise errors.Invalid(f"unknown registry prefix {kind!r}")
    return f"{ROOT}/{kind}/"


def kind_segment(api_version: str, kind: str) -> str:
    """`Kind.group` for a workload: apps/v1 Deployment → `Deployment.apps`; v1 Pod → `Pod`."""
    group = api_version.rpartition("/")[0]
    return validate_segment(f"{kind}.{group}" if group else kind, what="kind")


@dataclass(frozen=True, slots=True)
class WorkloadRef:
    """Identifies a workload: namespace, `Kind.group`, name."""

    namespace: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.kind}/{self.name}"


def namespace_segment(namespace: str | None) -> str:
    """The key segment of a namespace; cluster-scoped objects (no namespace) use `_`."""
    if not namespace or namespace == CLUSTER_SCOPE:
        return CLUSTER_SCOPE
    return validate_segment(namespace, what="namespace")


_ns = namespace_segment


def cluster_key(name: str) -> str:
    return f"{ROOT}/clusters/{validate_segment(name, what='cluster name')}"


def cluster_status_key(name: str) -> str:
    return f"{ROOT}/clusterstatus/{validate_segment(name, what='cluster name')}"


def _workload_tail(ref: WorkloadRef) -> str:
    """`ns/Kind.group/name`; cluster-scoped workloads (Namespace, …) use `_` as namespace."""
    return "/".join(
        (
            ref.namespace
            if ref.namespace == CLUSTER_SCOPE
            else validate_segment(ref.namespace, what="namespace"),
            validate_segment(ref.kind, what="kind"),
            validate_segment(ref.name),
        )
    )


def workload_key(ref: WorkloadRef) -> str:
    return f"{ROOT}/workloads/{_workload_tail(ref)}"


def workload_status_key(ref: WorkloadRef) -> str:
    return f"{ROOT}/workloadstatus/{_workload_tail(ref)}"


def binding_key(ref: WorkloadRef) -> str:
    return f"{ROOT}/bindings/{_workload_tail(ref)}"


def work_key(cluster: str, ref: WorkloadRef) -> str:
    return f"{work_prefix(cluster)}{_workload_tail(ref)}"


def work_prefix(cluster: str) -> str:
    return f"{ROOT}/works/{validate_segment(cluster, what='cluster name')}/"


def policy_prefix(kind: str) -> str:
    return f"{ROOT}/policies/{validate_segment(kind, what='kind')}/"


def policy_key(kind: str, namespace: str | None, name: str) -> str:
    return f"{policy_prefix(kind)}{_ns(namespace)}/{validate_segment(name)}"


def policy_status_key(kind: str, namespace: str | None, name: str) -> str:
    """Status of a policy (a FederatedResourceQuota's aggregated member quotas)."""
    kind_part = validate_segment(kind, what="kind")
    return f"{ROOT}/policystatus/{kind_part}/{_ns(namespace)}/{validate_segment(name)}"


def event_key(namespace: str | None, obj: str, event_id: str) -> str:
    return f"{ROOT}/events/{_ns(namespace)}/{validate_segment(obj, what='object')}/{event_id}"


def drill_key(drill_id: str) -> str:
    return f"{ROOT}/drills/{validate_segment(drill_id, what='drill id')}"


def drill_run_key() -> str:
    """The one drill asked for or running: one key, so creating it is what keeps one drill
    at a time across every replica (outside `drills/`, whose keys are all reports)."""
    return f"{ROOT}/drillrun"


def leader_key() -> str:
    return f"{ROOT}/leader"


def split(key: str) -> list[str]:
    """The segments of `key` after the root (`/fedctl/clusters/a` → `['clusters', 'a']`)."""
    if not key.startswith(ROOT + "/"):
        raise errors.Invalid(f"not a fedctl key: {key!r}")
    return key[len(ROOT) + 1 :].split("/")


def parse_workload_key(key: str) -> WorkloadRef:
    """The WorkloadRef of a workload, workload-status, binding or work key."""
    parts = split(key)
    if parts[0] == "works" and len(parts) == 5:
        return WorkloadRef(namespace=parts[2], kind=parts[3], name=parts[4])
    if parts[0] not in {"workloads", "workloadstatus", "bindings"} or len(parts) != 4:
        raise errors.Invalid(f"not a workload key: {key!r}")
    return WorkloadRef(namespace=parts[1], kind=parts[2], name=parts[3])
