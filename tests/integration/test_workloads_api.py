"""The workload views (`fedctl get workloads`, `describe workload`) for objects no policy
propagates: they stay in the federation by design, and say so rather than "not scheduled"."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from federation.cli import main
from federation.registry import codec, keys, objects
from federation.registry.memory import MemoryStore
from policies.models.binding import Binding, BindingSpec, BindingStatus, WorkloadReference
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


async def test_the_view_leaves_each_binding_out_when_asked() -> None:
    """The dashboard reads only each workload's status from this view and lists the
    Bindings itself: with them embedded, the view was 3.5 MB at 1,500 workloads, asked
    for every few seconds by each open tab. `binding=false` leaves them out; the CLI's
    tables get them by default."""
    store = MemoryStore()
    objs = codec.TypedStore(store, objects.ObjectCodec())
    sweep = _job("sweep", {"completions": 2})
    await objs.put(objects.key_for(sweep), sweep)
    ref = keys.WorkloadRef("hb", "Job.batch", "sweep")
    placed = Binding(
        spec=BindingSpec(workload=WorkloadReference(
            api_version="batch/v1", kind="Job", namespace="hb", name="sweep")),
        status=BindingStatus(phase="Pending", reason="waiting for quota"),
        metadata={"name": "sweep", "namespace": "hb"},
    )  # fmt: skip
    await codec.TypedStore(store, codec.Codec(Binding)).put(keys.binding_key(ref), placed)
    async with api_server(store) as server:

        def listed(query: str) -> tuple[int, dict[str, Any]]:
            url = f"{server}/apis/status.fedctl.io/v1alpha1/workloads{query}"
            try:
                with urllib.request.urlopen(url) as r:
                    return r.status, json.loads(r.read())
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read())

        _, full = await asyncio.to_thread(listed, "")
        _, light = await asyncio.to_thread(listed, "?binding=false")
        (item,) = full["items"]
        assert item["binding"]["status"]["reason"] == "waiting for quota"
        (lean,) = light["items"]
        assert "binding" not in lean
        assert lean == {k: v for k, v in item.items() if k != "binding"}
        assert len(json.dumps(light)) < len(json.dumps(full))
        code, refused = await asyncio.to_thread(listed, "?binding=maybe")
        assert code == 400
        assert refused["message"].startswith('binding: Invalid value: "maybe"')
