"""Members the propagator must neither apply to nor delete from, and what it says of them.

A Cluster removed from the registry took its credentials along, so its copies stay where
they run: the event must say they were left, not "removed". A Cluster the monitor found
to be a Kubernetes cluster joined first under another name (`status.duplicateOf`) reaches
that name's copies: deleting through it deleted them, and each was applied again from
the start. Real etcd and simulated members, Bindings and statuses written as the
scheduler and the monitor would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest

from federation.registry import codec, embedded, events, keys
from federation.resources import ResourceList
from policies.models.cluster import Cluster, ClusterStatus, Condition
from policies.models.work import Event
from policies.models.workload import Workload
from tests.integration.test_propagation_support import (
    Federation,
    deployment,
    frq_for_test,
    ref_of,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


async def _uid(fed: Federation, cluster: str, name: str) -> str | None:
    obj = await fed.member_object(cluster, "apps/v1", "Deployment", "web", name)
    return str(obj["metadata"]["uid"]) if obj else None


async def _events(fed: Federation, workload: Workload, reason: str) -> list[Event]:
    listed = await codec.TypedStore(fed.store, events.EVENTS).list(
        events.event_prefix(ref_of(workload))
    )
    return [e.obj for e in listed.items if e.obj.reason == reason]


async def _work_gone(fed: Federation, cluster: str, workload: Workload) -> bool:
    return await fed.works.get(keys.work_key(cluster, ref_of(workload))) is None


async def _join_again(fed: Federation, name: str, member: str) -> None:
    """Register `name`, reaching the member joined as `member`."""
    again = Cluster.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "region": "us-east",
                "connection": {"kubeconfigPath": str(fed.kubeconfig), "context": member},
            },
        }
    )
    await fed.put(again)


async def _judge(fed: Federation, name: str, *, duplicate_of: str) -> None:
    """Write the status the monitor writes for a second name of `duplicate_of`."""
    judged = ClusterStatus(
        conditions=[
            Condition(
                type="Ready",
                status="False",
                reason="DuplicateCluster",
                last_transition_time="2026-01-01T00:00:00Z",  # type: ignore[arg-type]
            )
        ],
        duplicate_of=duplicate_of,
    )
    statuses = codec.TypedStore(fed.store, codec.Codec(ClusterStatus))
    await statuses.put(keys.cluster_status_key(name), judged)


async def test_a_copy_on_a_cluster_no_longer_joined_is_said_to_be_left_running(
    fed: Federation,
) -> None:
    cart = deployment("cart", 2)
    await fed.put(cart)
    await fed.bind(cart, {"us-east-cpu": (1, None), "eu-west-arm": (1, None)})
    fed.start()
    await wait_for(lambda: _uid(fed, "eu-west-arm", "cart"), timeout=15, message="cart there")
    await fed.objects.delete(keys.cluster_key("eu-west-arm"))  # `fedctl delete cluster`
    await fed.bind(cart, {"us-east-cpu": (2, None)})

    left = await wait_for(lambda: _events(fed, cart, "Left"), timeout=15, message="Left event")
    assert [(e.cluster, e.message) for e in left] == [
        (
            "eu-west-arm",
            "left running on eu-west-arm, no longer managed: eu-west-arm is no longer joined",
        )
    ]
    assert not [e for e in await _events(fed, cart, "Removed") if e.cluster == "eu-west-arm"]
    assert await _uid(fed, "eu-west-arm", "cart"), "no member call was to be made"
    assert await _work_gone(fed, "eu-west-arm", cart)


async def test_nothing_is_applied_or_deleted_through_a_second_name_of_a_member(
    fed: Federation,
) -> None:
    cart = deployment("cart", 2)
    await fed.put(cart)
    await fed.bind(cart, {"us-east-cpu": (2, None)})
    fed.start()
    first = await wait_for(lambda: _uid(fed, "us-east-cpu", "cart"), timeout=15, message="cart")
    # A second name for us-east-cpu, placed on before the monitor told them apart.
    await _join_again(fed, "us-east-again", "us-east-cpu")
    await fed.bind(cart, {"us-east-cpu": (2, None), "us-east-again": (2, None)})
    await wait_for(
        lambda: fed.works.get(keys.work_key("us-east-again", ref_of(cart))),
        timeout=15,
        message="a Work for the second name",
    )
    await _judge(fed, "us-east-again", duplicate_of="us-east-cpu")
    # Unjoining drains the second name: failover takes it out of the Binding.
    await fed.bind(cart, {"us-east-cpu": (2, None)})

    (left,) = await wait_for(lambda: _events(fed, cart, "Left"), timeout=15, message="Left")
    assert await _work_gone(fed, "us-east-again", cart)
    assert await _uid(fed, "us-east-cpu", "cart") == first, "the first name's copy was deleted"
    assert left.cluster == "us-east-again"
    assert "is the Kubernetes cluster joined as us-east-cpu, whose copy it is" in left.message

    # A restart collects garbage in every member: the second name shows the first's
    # copy, which no Work of its own records; it is not an orphan.
    await fed.stop()
    propagator = fed.start()
    await wait_for(propagator.ready.is_set, timeout=15, message="propagator started")
    assert await _uid(fed, "us-east-cpu", "cart") == first, "collected as an orphan"


async def test_a_quota_is_neither_applied_nor_deleted_through_a_second_name(
    fed: Federation,
) -> None:
    """A FederatedResourceQuota assigning both names of one member wrote one member quota
    under both, and dropping the second name's assignment deleted the first's."""
    await _join_again(fed, "a100-again", "us-east-a100")
    await _judge(fed, "a100-again", duplicate_of="us-east-a100")
    frq = frq_for_test()
    both = [
        frq.spec.static_assignments[0],
        frq.spec.static_assignments[0].model_copy(update={"cluster_name": "a100-again"}),
    ]
    both[1] = both[1].model_copy(update={"hard": ResourceList.from_wire({"cpu": "1"})})
    await fed.put(
        frq.model_copy(update={"spec": frq.spec.model_copy(update={"static_assignments": both})})
    )
    fed.start()
    key = keys.policy_status_key("FederatedResourceQuota", "ml-research", "ml-research")

    async def rows() -> dict[str, Any]:
        stored = await fed.quota_statuses.get(key)
        return {r.cluster: r for r in stored.obj.aggregated_status} if stored else {}

    async def quota() -> dict[str, Any] | None:
        return await fed.member_object(
            "us-east-a100", "v1", "ResourceQuota", "ml-research", "ml-research"
        )

    async def judged() -> dict[str, Any]:
        now = await rows()
        applied = "us-east-a100" in now and now["us-east-a100"].applied
        return now if applied and "a100-again" in now else {}

    found = await wait_for(judged, timeout=15, message="the FRQ status of both names")
    assert not found["a100-again"].applied
    assert (
        "a100-again is the Kubernetes cluster joined as us-east-a100" in found["a100-again"].error
    )
    first = await quota()
    assert first is not None and first["spec"]["hard"]["requests.cpu"] == "128"

    await fed.put(
        frq.model_copy(
            update={"spec": frq.spec.model_copy(update={"static_assignments": both[:1]})}
        )
    )
    await wait_for(
        lambda: _one_row(rows()), timeout=15, message="the second name's assignment dropped"
    )
    now = await quota()
    assert now is not None and now["metadata"]["uid"] == first["metadata"]["uid"]


async def _one_row(rows: Awaitable[dict[str, Any]]) -> bool:
    return list(await rows) == ["us-east-a100"]
