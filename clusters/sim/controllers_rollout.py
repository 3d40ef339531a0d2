"""Revisions of a Deployment's ReplicaSets, the part of rollouts `kubectl rollout` reads.

`kubectl rollout undo` copies an old ReplicaSet's pod template and annotations back into
the Deployment with a JSON patch that replaces `/metadata/annotations`. Upstream's
Deployment controller makes that work: the Deployment always carries
`deployment.kubernetes.io/revision`, each ReplicaSet carries the Deployment's annotations
and its own revision, and a template that equals an old ReplicaSet's (however it is
written: kubectl sends `creationTimestamp: null` and `resources: {}`) hashes to that
ReplicaSet, which becomes the newest revision again. The simulator had none of it, so an
undo failed on a Deployment without annotations, wiped a federation's annotations from
its copy, and made a third ReplicaSet instead of reusing the first.

`controllers_workloads` calls these while converging a Deployment; they only compute
names and write annotations, never pods.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from clusters.sim.controllers_base import DEPLOYMENT, REPLICASET, Context, short_hash

__all__ = ["REVISION", "next_revision", "rs_annotations", "sync", "template_hash"]

Obj = Mapping[str, Any]

REVISION = "deployment.kubernetes.io/revision"
_NOT_COPIED = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        "deployment.kubernetes.io/revision-history",
        "deployment.kubernetes.io/desired-replicas",
        "deployment.kubernetes.io/max-replicas",
        "deprecated.deployment.rollback.to",
    }
)
"""Upstream `skipCopyAnnotation`: annotations a Deployment keeps to itself."""
_POD_DEFAULTS = {
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "schedulerName": "default-scheduler",
}
_CONTAINER_DEFAULTS = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}


def _pruned(value: Any) -> Any:
    """JSON without nulls and empty maps or lists, which decode to the same Go struct."""
    if isinstance(value, dict):
        kept = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _pull_policy(image: str) -> str:
    """Upstream's default: Always for `:latest` or an untagged image, else IfNotPresent."""
    name = image.rsplit("/", 1)[-1]
    if "@" in name:
        return "IfNotPresent"
    tag = name.split(":", 1)[1] if ":" in name else "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def template_hash(template: Obj) -> str:
    """The `pod-template-hash` of a pod template, over its defaulted, pruned form, so two
    writings of one template (an undo's copy, the original) name the same ReplicaSet."""
    body = _pruned(json.loads(json.dumps(template)))
    spec = body.setdefault("spec", {})
    for key, value in _POD_DEFAULTS.items():
        spec.setdefault(key, value)
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or ():
            for key, value in _CONTAINER_DEFAULTS.items():
                container.setdefault(key, value)
            container.setdefault("imagePullPolicy", _pull_policy(str(container.get("image", ""))))
    labels = (body.get("metadata") or {}).get("labels") or {}
    labels.pop("pod-template-hash", None)
    return short_hash(json.dumps(body, sort_keys=True))


def revision_of(obj: Obj) -> int:
    try:
        return int(((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION, 0))
    except ValueError:
        return 0


def next_revision(old: Iterable[Obj]) -> int:
    """Upstream: one more than the highest revision among the old ReplicaSets."""
    return max((revision_of(r) for r in old), default=0) + 1


def rs_annotations(dep: Obj, revision: int, *, desired: int, surge: int) -> dict[str, str]:
    """A ReplicaSet's annotations: the Deployment's own, its revision and its sizes."""
    copied = {
        k: v
        for k, v in ((dep.get("metadata") or {}).get("annotations") or {}).items()
        if k not in _NOT_COPIED
    }
    return {
        **copied,
        REVISION: str(revision),
        "deployment.kubernetes.io/desired-replicas": str(desired),
        "deployment.kubernetes.io/max-replicas": str(desired + surge),
    }


def sync(ctx: Context, dep: Obj, new: Obj, old: Iterable[Obj], *, desired: int, surge: int) -> None:
    """Keep the newest ReplicaSet the newest revision, carrying the Deployment's
    annotations, and the Deployment's revision annotation equal to it."""
    old = list(old)
    revision = revision_of(new)
    if revision <= max((revision_of(r) for r in old), default=0):
        revision = next_revision(old)
    want = rs_annotations(dep, revision, desired=desired, surge=surge)
    have = new["metadata"].get("annotations") or {}
    if any(have.get(k) != v for k, v in want.items()):
        body = json.loads(json.dumps(new))
        body["metadata"]["annotations"] = {**have, **want}
        ctx.store.update(REPLICASET, body)
    annotations = dep["metadata"].get("annotations") or {}
    if annotations.get(REVISION) != str(revision):
        body = json.loads(json.dumps(dep))
        body["metadata"]["annotations"] = {**annotations, REVISION: str(revision)}
        ctx.store.update(DEPLOYMENT, body)
