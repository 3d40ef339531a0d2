"""Members the propagator must neither apply to nor delete from, and what it says of them.

A Cluster removed from the registry took its credentials along, so its copies stay where
they run: the event must say they were left, not "removed". A Cluster the monitor found
to be a Kubernetes cluster joined first under another name (`status.duplicateOf`) reaches
that name's copies: deleting through it deleted them, and each was applied again from
the start. Real etcd and simulated members, Bindings and statuses written as the
scheduler and the monitor would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from federation.registry import codec, embedded, events, keys
from policies.models.cluster import Cluster, ClusterStatus, Condition
from policies.models.work import Event
from policies.models.workload import Workload
from tests.integration.test_propagation_support import (
    Federation,
    deployment,
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
    again = Cluster.model_validate(
        {
            "metadata": {"name": "us-east-again"},
            "spec": {
                "region": "us-east",
                "connection": {"kubeconfigPath": str(fed.kubeconfig), "context": "us-east-cpu"},
            },
        }
    )
    await fed.put(again)
    await fed.bind(cart, {"us-east-cpu": (2, None), "us-east-again": (2, None)})
    await wait_for(
        lambda: fed.works.get(keys.work_key("us-east-again", ref_of(cart))),
        timeout=15,
        message="a Work for the second name",
    )
    statuses = codec.TypedStore(fed.store, codec.Codec(ClusterStatus))
    judged = ClusterStatus(
        conditions=[
            Condition(
                type="Ready",
                status="False",
                reason="DuplicateCluster",
                last_transition_time="2026-01-01T00:00:00Z",  # type: ignore[arg-type]
            )
        ],
        duplicate_of="us-east-cpu",
    )
    await statuses.put(keys.cluster_status_key("us-east-again"), judged)
    # Unjoining drains the second name: failover takes it out of the Binding.
    await fed.bind(cart, {"us-east-cpu": (2, None)})

    await wait_for(
        lambda: _work_gone(fed, "us-east-again", cart), timeout=15, message="its Work dropped"
    )
    assert await _uid(fed, "us-east-cpu", "cart") == first, "the first name's copy was deleted"
    (left,) = await _events(fed, cart, "Left")
    assert left.cluster == "us-east-again"
    assert "is the Kubernetes cluster joined as us-east-cpu, whose copy it is" in left.message

    # A restart collects garbage in every member: the second name shows the first's
    # copy, which no Work of its own records; it is not an orphan.
    await fed.stop()
    propagator = fed.start()
    await wait_for(propagator.ready.is_set, timeout=15, message="propagator started")
    assert await _uid(fed, "us-east-cpu", "cart") == first, "collected as an orphan"
