"""A namespace created in a member for a workload never strips the labels its Namespace
template was applied with.

The applier read the namespace, found it missing and applied a bare one under the same
field manager; a Namespace template's apply landing between the read and that apply had
its labels (`pod-security.kubernetes.io/enforce` among them) taken off again by it, as
server-side apply drops what a manager no longer sends. The workload's pods were created
meanwhile without the namespace's pod security, and the restore's event blamed someone
else. Now the two are never interleaved.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any, cast

from clusters import member as member_mod
from federation.propagation import render
from federation.propagation.applier import Applier
from federation.propagation.members import Members
from federation.registry import keys
from policies.models.cluster import Cluster
from tests.unit.scheduler import fleet

WORKLOAD = keys.WorkloadRef("dept-g", "Deployment.apps", "g1")
NAMESPACE = keys.WorkloadRef(keys.CLUSTER_SCOPE, "Namespace", "dept-g")
LABELS = {"dept": "true", "pod-security.kubernetes.io/enforce": "restricted"}


class Racing:
    """A member whose first read of a Namespace, made while it is missing, answers so only
    once the Namespace template's apply has reached it (or after a second, when that apply
    waits for the read): the interleaving that lost the labels. Server-side apply as one
    field manager does: the labels are those the last apply sent."""

    name = "racing"

    def __init__(self) -> None:
        self.labels: dict[str, dict[str, str]] = {}
        self.template_arrived = asyncio.Event()
        self.reads = 0

    async def get(self, ref: member_mod.ObjectRef) -> dict[str, Any]:
        if ref.kind == "Namespace":
            self.reads += 1
            missing = ref.name not in self.labels
            if self.reads == 1:
                # The template's apply waits for this read where the fix holds: answer then.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.template_arrived.wait(), timeout=1.0)
            if missing:
                raise member_mod.MemberNotFound("not found", cluster=self.name, code=404)
        return {"metadata": {"name": ref.name}}

    async def apply(self, obj: Mapping[str, Any], *, force: bool = False) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        if obj.get("kind") == "Namespace":
            if meta.get("annotations"):
                self.template_arrived.set()
            self.labels[str(meta["name"])] = dict(meta.get("labels") or {})
        return dict(obj)


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "g1", "namespace": "dept-g"},
    }


def namespace_template() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "dept-g",
            "labels": {**LABELS, render.LABEL_MANAGED_BY: render.MANAGED_BY},
            "annotations": {render.REF_ANNOTATION: str(NAMESPACE)},
        },
    }


async def test_a_namespace_templates_labels_survive_its_namespace_created_for_a_workload() -> None:
    racing = Racing()

    async def connect(cluster: Cluster) -> member_mod.Member:
        return cast(member_mod.Member, racing)

    applier = Applier(Members(connect, concurrency=8))
    cluster = fleet.cluster("racing")
    workload = asyncio.create_task(
        applier.apply(cluster, deployment(), ref=WORKLOAD, overwrite=False, known_ours=True)
    )
    template = asyncio.create_task(
        applier.apply(
            cluster, namespace_template(), ref=NAMESPACE, overwrite=False, known_ours=True
        )
    )
    outcomes = await asyncio.gather(workload, template)
    assert all(o.ok for o in outcomes), outcomes
    assert LABELS.items() <= racing.labels["dept-g"].items()


async def test_the_namespace_locks_go_once_their_applies_are_done() -> None:
    """A lock per (member, namespace) was kept for good: a controller running for months
    over namespaces made and deleted by the thousand kept one for each it ever saw."""
    racing = Racing()

    async def connect(cluster: Cluster) -> member_mod.Member:
        return cast(member_mod.Member, racing)

    applier = Applier(Members(connect, concurrency=8))
    cluster = fleet.cluster("racing")
    racing.template_arrived.set()
    manifests = []
    for i in range(30):
        d = deployment()
        d["metadata"]["namespace"] = f"ns-{i}"
        manifests.append(d)
    outcomes = await asyncio.gather(
        *(
            applier.apply(cluster, m, ref=WORKLOAD, overwrite=False, known_ours=True)
            for m in [*manifests, namespace_template()]
        )
    )
    assert all(o.ok for o in outcomes), outcomes
    assert {f"ns-{i}" for i in range(30)} <= set(racing.labels)
    assert applier.namespace_locks() == 0
