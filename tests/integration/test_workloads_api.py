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


def _job(name: str, spec: dict[str, Any]) -> Workload:
    pod = {"containers": [{"name": "t", "image": "busybox"}], "restartPolicy": "Never"}
    return Workload.model_validate(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "hb"},
            "spec": {**spec, "template": {"spec": pod}},
        }
    )


async def test_get_jobs_reads_completions_and_suspension_from_the_template(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`fedctl get jobs` shows COMPLETIONS as kubectl does (of the template's completions)
    and a suspended Job as Suspended; the view carries what the table needs of each."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    for job in (
        _job("sweep", {"parallelism": 2, "completions": 4}),
        _job("held", {"parallelism": 2, "completions": 8, "suspend": True}),
    ):
        await objs.put(objects.key_for(job), job)
    async with api_server(store) as server:

        def listed() -> dict[str, dict[str, Any]]:
            url = server + "/apis/status.fedctl.io/v1alpha1/workloads"
            with urllib.request.urlopen(url) as r:
                return {i["name"]: i for i in json.loads(r.read())["items"]}

        items = await asyncio.to_thread(listed)
        picked = ("completions", "parallelism", "suspended")
        assert {k: items["sweep"].get(k) for k in picked} == {
            "completions": 4,
            "parallelism": 2,
            "suspended": None,
        }
        assert {k: items["held"].get(k) for k in picked} == {
            "completions": 8,
            "parallelism": 2,
            "suspended": True,
        }
        args = ["get", "jobs", "-n", "hb", "--server", server]
        assert await asyncio.to_thread(main.main, args) == 0
        header, *rows = capsys.readouterr().out.splitlines()
        assert header.split()[3:5] == ["HEALTH", "COMPLETIONS"]
        assert {r.split()[1]: r.split()[3:5] for r in rows} == {
            "held": ["Suspended", "0/8"],
            "sweep": ["-", "0/4"],
        }
