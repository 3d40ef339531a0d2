"""Every member call the propagator makes that fails is counted, by cluster, operation and
kind of failure (`fedctl_propagation_errors`). Before, the counter existed and nothing fed
it: a member refusing every apply showed only in each Work's error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import pytest

from clusters import member as member_mod
from federation.propagation import gc
from federation.propagation.applier import Applier
from federation.propagation.controller import Propagator
from federation.propagation.members import Members
from federation.registry import keys
from federation.registry.memory import MemoryStore
from policies.models.cluster import Cluster
from tests.unit.scheduler import fleet

REF = keys.WorkloadRef("web", "Deployment.apps", "shop")


def manifest(name: str = "shop", *, ours: bool = True) -> dict[str, Any]:
    labels = {"fedctl.io/managed-by": "fedctl"} if ours else {}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": "web",
            "labels": labels,
            "annotations": {"fedctl.io/workload-ref": str(REF)} if ours else {},
        },
    }


class Member:
    """A member that answers as `mode` says: `down` (unreachable), `picky` (refuses every
    write), `taken` (holds a `shop` someone else made); with anything else it accepts."""

    def __init__(self, name: str, mode: str) -> None:
        self.name, self.mode = name, mode

    def _fail(self) -> None:
        if self.mode == "down":
            raise member_mod.MemberUnavailable("connection refused", cluster=self.name)
        if self.mode == "picky":
            raise member_mod.MemberRejected("forbidden", cluster=self.name, code=403)

    async def get(self, ref: member_mod.ObjectRef) -> dict[str, Any]:
        if self.mode == "down":
            self._fail()
        if ref.kind == "Namespace":
            return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ref.name}}
        return manifest(ref.name, ours=self.mode != "taken")

    async def apply(self, obj: Mapping[str, Any], *, force: bool = False) -> dict[str, Any]:
        self._fail()
        return dict(obj)

    async def delete(self, ref: member_mod.ObjectRef) -> bool:
        self._fail()
        return True

    async def list(self, api_version: str, kind: str, **_: Any) -> member_mod.ObjectList:
        return member_mod.ObjectList([manifest("orphan")], "1")

    async def close(self) -> None:
        pass


async def connect(cluster: Cluster) -> member_mod.Member:
    return cast(member_mod.Member, Member(cluster.name, cluster.name))


Counted = list[tuple[str, str, str]]


@pytest.fixture
def counted() -> Counted:
    return []


def applier(counted: Counted) -> Applier:
    return Applier(Members(connect, concurrency=2), failed=lambda *labels: counted.append(labels))


async def test_failed_applies_are_counted_by_why(counted: Counted) -> None:
    a = applier(counted)
    for name in ("down", "picky", "taken", "fine"):
        await a.apply(fleet.cluster(name), manifest(), ref=REF, overwrite=False, known_ours=False)
    assert counted == [
        ("down", "apply", "Unavailable"),
        ("picky", "apply", "Rejected"),
        ("taken", "apply", "Refused"),
    ]


async def test_failed_deletes_and_releases_are_counted_and_still_raise(counted: Counted) -> None:
    a = applier(counted)
    with pytest.raises(member_mod.MemberUnavailable):
        await a.delete(fleet.cluster("down"), manifest())
    with pytest.raises(member_mod.MemberRejected):
        await a.delete_if_ours(fleet.cluster("picky"), manifest(), REF)
    with pytest.raises(member_mod.MemberRejected):
        await a.remove(fleet.cluster("picky"), manifest(), REF, release=True)
    assert await a.delete(fleet.cluster("fine"), manifest())
    assert counted == [
        ("down", "delete", "Unavailable"),
        ("picky", "delete", "Rejected"),
        ("picky", "release", "Rejected"),
    ]


async def test_a_delete_garbage_collection_could_not_make_is_counted(counted: Counted) -> None:
    a = applier(counted)
    picky = cast(member_mod.Member, Member("picky", "picky"))
    removed = await gc.collect(
        "picky",
        picky,
        kinds=[("apps/v1", "Deployment")],
        wanted=lambda *_: False,
        failed=a.failed,
    )
    assert removed == 0
    assert counted == [("picky", "delete", "Rejected")]


async def test_the_propagator_hands_its_counter_to_its_applier(counted: Counted) -> None:
    propagator = Propagator(
        MemoryStore(), connect=connect, failed=lambda *labels: counted.append(labels)
    )
    await propagator.applier.apply(
        fleet.cluster("down"), manifest(), ref=REF, overwrite=False, known_ours=True
    )
    assert counted == [("down", "apply", "Unavailable")]
