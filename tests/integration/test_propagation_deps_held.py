"""propagateDeps follows what each member's copy runs, not only the template.

A copy held back from its template (dispatching to its cluster suspended) keeps the
ConfigMap it mounts, and a suspension holds its dependencies back with it: no edit, no
first copy. An OverridePolicy that names another ConfigMap for one cluster sends that
one there. A reference marked `optional: true` that the federation lacks is not reported
as missing. Real etcd, simulated members, one propagator.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from federation.propagation.controller import Propagator
from federation.propagation.members import kube_connect
from federation.registry import embedded, keys
from federation.scheduler import plan
from policies.models.override import OverridePolicy
from policies.models.propagation import PropagationPolicy
from policies.models.workload import Workload
from tests.integration.test_propagation_support import (
    MEMBER,
    PROPAGATION,
    Federation,
    clock_real,
    deployment,
    ref_of,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

EAST, WEST = "us-east-cpu", "eu-west-arm"


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def config(name: str, mode: str = "prod") -> Workload:
    return Workload.model_validate(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "web"},
            "data": {"MODE": mode},
        }
    )


def mounting(cfg: str, *, extra_env: list[dict[str, Any]] | None = None) -> Workload:
    """Deployment `app` mounting ConfigMap `cfg` as a volume and reading it by envFrom."""
    web = deployment("app", 1)
    pod = web.spec["template"]["spec"]
    container = {**pod["containers"][0], "envFrom": [{"configMapRef": {"name": cfg}}]}
    if extra_env:
        container["env"] = extra_env
    volumes = [{"name": "cfg", "configMap": {"name": cfg}}]
    template = {
        **web.spec["template"],
        "spec": {**pod, "containers": [container], "volumes": volumes},
    }
    return web.model_copy(update={"spec": {**web.spec, "template": template}})


def policy(*, suspended_on: list[str] | None = None) -> PropagationPolicy:
    spec: dict[str, Any] = {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"}],
        "propagateDeps": True,
    }
    if suspended_on:
        spec["suspension"] = {"dispatchingOnClusters": {"clusterNames": suspended_on}}
    return PropagationPolicy.model_validate(
        {"metadata": {"name": "app", "namespace": "web"}, "spec": spec}
    )


async def data(fed: Federation, cluster: str, name: str) -> str | None:
    """The MODE a member's copy of ConfigMap `name` holds (None: no copy there)."""
    obj = await fed.member_object(cluster, "v1", "ConfigMap", "web", name)
    return None if obj is None else str((obj.get("data") or {}).get("MODE"))


async def mounted(fed: Federation, cluster: str) -> str | None:
    obj = await fed.member_object(cluster, "apps/v1", "Deployment", "web", "app")
    if obj is None:
        return None
    return str(obj["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"])


async def _suspended_on_west(fed: Federation) -> Any:
    """`app` running on both clusters with cfg-v1, then its dispatching to the west
    suspended; returns the propagator."""
    await fed.put(config("cfg-v1"))
    await fed.put(mounting("cfg-v1"))
    await fed.put(policy())
    await fed.bind(mounting("cfg-v1"), {EAST: (1, None), WEST: (1, None)})
    propagator = fed.start()
    for cluster in (EAST, WEST):
        await wait_for(lambda c=cluster: data(fed, c, "cfg-v1"), timeout=15, message=cluster)
        await wait_for(lambda c=cluster: mounted(fed, c), timeout=15, message=f"app {cluster}")
    epoch = propagator.sync.epoch
    await fed.put(policy(suspended_on=[WEST]))
    await wait_for(lambda: propagator.sync.epoch > epoch, timeout=10, message="suspension seen")
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="suspended")
    return propagator


async def test_a_suspension_holds_back_an_edit_of_a_dependency(fed: Federation) -> None:
    """An edit of the ConfigMap is part of the rollout the suspension holds back."""
    propagator = await _suspended_on_west(fed)
    await fed.put(config("cfg-v1", "debug"))
    await wait_for(
        lambda: _is(data(fed, EAST, "cfg-v1"), "debug"), timeout=15, message="edit reaches east"
    )
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="edit passes done")
    assert await data(fed, WEST, "cfg-v1") == "prod"

    await fed.put(policy())
    await wait_for(
        lambda: _is(data(fed, WEST, "cfg-v1"), "debug"), timeout=15, message="lifted: sent"
    )


async def test_a_suspended_copy_keeps_the_configmap_it_mounts(fed: Federation) -> None:
    """Renamed in the template: the frozen copy on the west still mounts cfg-v1, which
    stays there; cfg-v2 is not created there before the copy needing it is."""
    propagator = await _suspended_on_west(fed)
    await fed.put(config("cfg-v2"))
    await fed.put(mounting("cfg-v2"))
    await wait_for(lambda: _is(mounted(fed, EAST), "cfg-v2"), timeout=15, message="east moves")
    await wait_for(
        lambda: _is(data(fed, EAST, "cfg-v1"), None), timeout=15, message="cfg-v1 leaves east"
    )
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="rename passes done")
    assert await mounted(fed, WEST) == "cfg-v1"
    assert await data(fed, WEST, "cfg-v1") == "prod"
    assert await data(fed, WEST, "cfg-v2") is None

    # Lifted: the west copy catches up, gets cfg-v2, and cfg-v1 goes once nothing mounts it.
    await fed.put(policy())
    await wait_for(lambda: _is(mounted(fed, WEST), "cfg-v2"), timeout=15, message="west moves")
    await wait_for(lambda: data(fed, WEST, "cfg-v2"), timeout=15, message="cfg-v2 on west")
    await wait_for(
        lambda: _is(data(fed, WEST, "cfg-v1"), None), timeout=15, message="cfg-v1 leaves west"
    )


async def test_a_restart_does_not_take_a_suspended_copy_s_configmap(fed: Federation) -> None:
    """After a restart the west's Work holds the renamed manifest, not what runs there:
    until the member's copy is read again, what it mounts is not known, and its
    ConfigMap is not taken away meanwhile."""
    await _suspended_on_west(fed)
    await fed.stop()
    await fed.put(config("cfg-v2"))
    await fed.put(mounting("cfg-v2"))

    # Started, no watch has listed yet: cfg-v1 is not to leave the west meanwhile.
    probe = Propagator(
        fed.store,
        settings=PROPAGATION,
        connect=kube_connect(MEMBER, clock_real()),
        claim=plan.claim,
        workers=1,
    )
    await probe._start()
    try:
        assert probe.sync._unread(ref_of(config("cfg-v1")), [EAST, WEST]) == [WEST]
    finally:
        await probe.members.close()

    propagator = fed.start()
    await wait_for(lambda: _is(mounted(fed, EAST), "cfg-v2"), timeout=15, message="east moves")
    await wait_for(
        lambda: _is(data(fed, EAST, "cfg-v1"), None), timeout=15, message="cfg-v1 leaves east"
    )
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="passes done")
    assert await mounted(fed, WEST) == "cfg-v1"
    assert await data(fed, WEST, "cfg-v1") == "prod"


async def test_a_leaving_copy_keeps_the_configmap_it_mounts(fed: Federation) -> None:
    """A graceful eviction's old copy is not updated any more: renaming the ConfigMap in
    the template leaves it the one it mounts until it goes."""
    app = mounting("cfg-v1")
    await fed.put(config("cfg-v1"))
    await fed.put(app)
    await fed.put(policy())
    await fed.bind(app, {EAST: (1, None)})
    propagator = fed.start()
    await wait_for(lambda: data(fed, EAST, "cfg-v1"), timeout=15, message="cfg-v1 east")
    await wait_for(lambda: mounted(fed, EAST), timeout=15, message="app east")

    ref = ref_of(app)
    stored = await fed.bindings.get(keys.binding_key(ref))
    assert stored is not None
    task = {"cluster": EAST, "creationTime": "2026-01-01T00:00:00Z", "replicas": 1}
    moved = stored.obj.model_validate(
        {
            **stored.obj.model_dump(by_alias=True, mode="json"),
            "spec": {
                **stored.obj.spec.model_dump(by_alias=True, mode="json"),
                "clusters": [{"name": WEST, "replicas": 1}],
                "evictionTasks": [task],
            },
        }
    )
    await fed.bindings.put(keys.binding_key(ref), moved)
    await wait_for(lambda: data(fed, WEST, "cfg-v1"), timeout=15, message="cfg-v1 west")

    await fed.put(config("cfg-v2"))
    await fed.put(mounting("cfg-v2"))
    await wait_for(lambda: _is(mounted(fed, WEST), "cfg-v2"), timeout=15, message="west moves")
    await wait_for(
        lambda: _is(data(fed, WEST, "cfg-v1"), None), timeout=15, message="cfg-v1 leaves west"
    )
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="rename passes done")
    assert await mounted(fed, EAST) == "cfg-v1"
    assert await data(fed, EAST, "cfg-v1") == "prod"
    assert await data(fed, EAST, "cfg-v2") is None

    # The eviction over, the old copy goes, and its ConfigMap with it.
    await fed.bind(mounting("cfg-v2"), {WEST: (1, None)})
    await wait_for(lambda: _is(mounted(fed, EAST), None), timeout=15, message="old copy goes")
    await wait_for(
        lambda: _is(data(fed, EAST, "cfg-v1"), None), timeout=15, message="cfg-v1 leaves east"
    )


async def test_a_suspended_first_placement_sends_no_dependency(fed: Federation) -> None:
    await fed.put(config("cfg-v1"))
    await fed.put(mounting("cfg-v1"))
    await fed.put(policy(suspended_on=[WEST]))
    await fed.bind(mounting("cfg-v1"), {EAST: (1, None), WEST: (1, None)})
    propagator = fed.start()
    await wait_for(lambda: data(fed, EAST, "cfg-v1"), timeout=15, message="east gets it")
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="passes done")
    assert await mounted(fed, WEST) is None
    assert await data(fed, WEST, "cfg-v1") is None


async def test_an_override_s_configmap_goes_where_it_is_named(fed: Federation) -> None:
    """The rendered manifest is what runs there: the name an OverridePolicy puts in for
    the west is sent there, and one the federation lacks is reported missing."""
    app = mounting("cfg-v1")
    await fed.put(config("cfg-v1"))
    await fed.put(config("cfg-west"))
    await fed.put(app)
    await fed.put(policy())
    await fed.put(_renaming("cfg-west"))
    await fed.bind(app, {EAST: (1, None), WEST: (1, None)})
    fed.start()
    await wait_for(lambda: _is(mounted(fed, WEST), "cfg-west"), timeout=15, message="override")
    await wait_for(lambda: data(fed, WEST, "cfg-west"), timeout=15, message="cfg-west sent")
    await wait_for(lambda: data(fed, EAST, "cfg-v1"), timeout=15, message="cfg-v1 east")

    await fed.put(_renaming("cfg-nowhere"))

    async def missing() -> list[str] | None:
        status = await fed.status(app)
        return None if status is None else status.missing_dependencies

    await wait_for(
        lambda: _is(missing(), ["web/ConfigMap/cfg-nowhere"]), timeout=15, message="missing"
    )
    await wait_for(
        lambda: _is(data(fed, WEST, "cfg-west"), None), timeout=15, message="cfg-west leaves"
    )


async def test_an_optional_reference_the_federation_lacks_is_not_missing(
    fed: Federation,
) -> None:
    optional = [
        {
            "name": "OPT",
            "valueFrom": {"configMapKeyRef": {"name": "opt", "key": "x", "optional": True}},
        }
    ]
    app = mounting("cfg-v1", extra_env=optional)
    await fed.put(config("cfg-v1"))
    await fed.put(app)
    await fed.put(policy())
    await fed.bind(app, {EAST: (1, None)})
    propagator = fed.start()
    await wait_for(lambda: data(fed, EAST, "cfg-v1"), timeout=15, message="cfg-v1 sent")
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="passes done")
    status = await fed.status(app)
    assert status is not None and status.missing_dependencies == []

    # Sent once it exists, as Karmada sends it.
    await fed.put(config("opt"))
    await wait_for(lambda: data(fed, EAST, "opt"), timeout=15, message="opt sent")


def _renaming(name: str) -> OverridePolicy:
    path = "/spec/template/spec/volumes/0/configMap/name"
    return OverridePolicy.model_validate(
        {
            "metadata": {"name": "west-config", "namespace": "web"},
            "spec": {
                "resourceSelectors": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"}
                ],
                "overrideRules": [
                    {
                        "targetCluster": {"clusterNames": [WEST]},
                        "overriders": {
                            "plaintext": [{"path": path, "operator": "replace", "value": name}]
                        },
                    }
                ],
            },
        }
    )


async def _is(value: Any, expected: Any) -> bool:
    return bool(await value == expected)
