"""The policy editor's check judges chips and members against the fleet the server holds."""

from __future__ import annotations

import aiohttp
import pytest

from federation.registry import codec, objects
from tests.integration.test_propagation_support import load
from tests.integration.test_scheduler_loop import registry_with_member
from tests.serving import api_server
from tests.unit.scheduler import fleet

pytestmark = pytest.mark.integration

API = "/apis/fedctl.io/v1alpha1"
TEXT = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: train, namespace: team}
spec:
  resourceSelectors: [{apiVersion: batch/v1, kind: Job}]
  placement:
    clusterAffinity: {clusterNames: [a, zz]}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team
  annotations: {fedctl.io/chips: "nvidia-l4,nvidia-l40"}
spec:
  template:
    spec:
      containers: [{name: t, image: trainer, resources: {requests: {cpu: "2"}}}]
"""


async def test_the_editor_check_names_unjoined_members_and_counts_the_fleets_chips() -> None:
    store, _ = await registry_with_member()  # cluster a
    typed = codec.TypedStore(store, objects.ObjectCodec())
    for profile in load("accelerators.yaml"):  # nvidia-l4 among them
        await typed.put(objects.key_for(profile), profile)
    async with (
        api_server(store) as server,
        aiohttp.ClientSession() as session,
        session.post(
            f"{server}{API}/validate",
            data=TEXT,
            headers={"Content-Type": "application/yaml"},
        ) as resp,
    ):
        assert resp.status == 200
        body = await resp.json()
    warnings = [f["message"] for f in body["findings"] if f["severity"] == "warning"]
    assert body["valid"]
    assert any(m.startswith("cluster 'zz' is not joined") for m in warnings), warnings
    assert not any("'a' is not joined" in m for m in warnings), warnings
    assert any("chip 'nvidia-l40' is not defined" in m for m in warnings), warnings
    assert not any("chip 'nvidia-l4'" in m for m in warnings), warnings


async def test_the_editor_check_warns_of_a_parent_queue_only_when_the_server_lacks_it() -> None:
    """A parent the server holds was warned about as if apply would refuse the queue."""
    store, _ = await registry_with_member()
    typed = codec.TypedStore(store, objects.ObjectCodec())
    team = fleet.queue("team-a")
    await typed.put(objects.key_for(team), team)
    text = (
        "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: kid}\n"
        "spec: {parent: team-a}\n---\n"
        "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: lost}\n"
        "spec: {parent: nowhere}\n"
    )
    async with (
        api_server(store) as server,
        aiohttp.ClientSession() as session,
        session.post(
            f"{server}{API}/validate", data=text, headers={"Content-Type": "application/yaml"}
        ) as resp,
    ):
        assert resp.status == 200
        body = await resp.json()
    assert body["valid"]
    assert [(f["line"], f["message"]) for f in body["findings"]] == [
        (
            9,
            "parent queue 'nowhere' is not defined on the server or in these files: the"
            " server refuses this queue",
        )
    ]
