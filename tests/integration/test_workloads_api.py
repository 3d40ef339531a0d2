"""The workload views (`fedctl get workloads`, `describe workload`) for objects no policy
propagates: they stay in the federation by design, and say so rather than "not scheduled"."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

import pytest

from federation.cli import main
from federation.registry import codec, objects
from federation.registry.memory import MemoryStore
from policies.models.propagation import ClusterPropagationPolicy
from policies.models.workload import Workload
from tests.serving import api_server

pytestmark = pytest.mark.integration

NAMESPACE = Workload.model_validate(
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "teams"}}
)
POLICY = ClusterPropagationPolicy.model_validate(
    {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "ClusterPropagationPolicy",
        "metadata": {"name": "namespaces"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace"}],
            "placement": {"clusterAffinity": {"clusterNames": ["a"]}},
        },
    }
)


async def test_an_object_no_policy_selects_is_shown_as_kept_in_the_federation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    await objs.put(objects.key_for(NAMESPACE), NAMESPACE)
    async with api_server(store) as server:

        def listed() -> list[dict[str, Any]]:
            url = server + "/apis/status.fedctl.io/v1alpha1/workloads"
            with urllib.request.urlopen(url) as r:
                return list(json.loads(r.read())["items"])

        (item,) = await asyncio.to_thread(listed)
        assert item["federationOnly"] is True
        code = await asyncio.to_thread(main.main, ["get", "workloads", "-A", "--server", server])
        assert code == 0
        assert "no propagation policy selects it" in capsys.readouterr().out

        await objs.put(objects.key_for(POLICY), POLICY)  # selected now: waits for a Binding
        (item,) = await asyncio.to_thread(listed)
        assert item["federationOnly"] is False
        code = await asyncio.to_thread(main.main, ["get", "workloads", "-A", "--server", server])
        assert code == 0
        assert "Pending: not scheduled yet" in capsys.readouterr().out
