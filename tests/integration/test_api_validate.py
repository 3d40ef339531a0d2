"""The policy editor's check judges chips and members against the fleet the server holds."""

from __future__ import annotations

import aiohttp
import pytest

from federation.registry import codec, objects
from tests.integration.test_propagation_support import load
from tests.integration.test_scheduler_loop import registry_with_member
from tests.serving import api_server

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
