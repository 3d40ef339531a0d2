"""An orphaned workload keeps its last policy's settings: real etcd, simulated members.

Deleting the policy that claims a workload changes nothing, as Karmada keeps the
ResourceBinding and the settings copied into it: the dependencies it propagated stay in
the members its copies run in, a suspension keeps holding back a template change, and
preserveResourcesOnDeletion still releases the copies when the template is deleted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from federation.registry import embedded, keys
from policies.models.propagation import PropagationPolicy
from policies.models.workload import Workload
from tests.integration.test_propagation_deps import config
from tests.integration.test_propagation_support import (
    Federation,
    deployment,
    ref_of,
    started_federation,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

EAST = "us-east-cpu"


@pytest.fixture
async def fed(own_etcd: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[Federation]:
    async with started_federation(own_etcd.url, tmp_path) as federation:
        yield federation


def policy(**settings: Any) -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "metadata": {"name": "depapp", "namespace": "web"},
            "spec": {
                "resourceSelectors": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "depapp"}
                ],
                "propagateDeps": True,
                "preserveResourcesOnDeletion": True,
                **settings,
            },
        }
    )


def depapp(image: str) -> Workload:
    web = deployment("depapp", 1)
    pod = web.spec["template"]["spec"]
    container = {**pod["containers"][0], "image": image,
                 "envFrom": [{"configMapRef": {"name": "appcfg"}}]}  # fmt: skip
    template = {**web.spec["template"], "spec": {**pod, "containers": [container]}}
    return web.model_copy(update={"spec": {**web.spec, "template": template}})


async def copy(fed: Federation, kind: str, name: str) -> dict[str, Any] | None:
    api_version = "apps/v1" if kind == "Deployment" else "v1"
    return await fed.member_object(EAST, api_version, kind, "web", name)


async def test_a_deleted_policy_s_settings_still_hold_for_the_copies_it_left(
    fed: Federation,
) -> None:
    app = depapp("nginx:1")
    for obj in (config("ConfigMap", "appcfg"), app):
        await fed.put(obj)
    await fed.put(policy(suspension={"dispatching": True}))
    await fed.bind(app, {EAST: (1, None)})
    # Suspended from the start, so nothing is dispatched: lift it once to get the copy.
    await fed.put(policy())
    propagator = fed.start()

    async def image() -> str | None:
        obj = await copy(fed, "Deployment", "depapp")
        return (
            None if obj is None else str(obj["spec"]["template"]["spec"]["containers"][0]["image"])
        )

    await wait_for(image, timeout=15, message="the copy")
    await wait_for(lambda: copy(fed, "ConfigMap", "appcfg"), timeout=15, message="its config")
    epoch = propagator.sync.epoch
    await fed.put(policy(suspension={"dispatching": True}))
    await wait_for(lambda: propagator.sync.epoch > epoch, timeout=10, message="suspension seen")
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="suspended")

    epoch = propagator.sync.epoch
    await fed.delete(policy())
    await fed.put(depapp("nginx:2"))  # the change the suspension holds back
    await wait_for(lambda: propagator.sync.epoch > epoch, timeout=10, message="deletion seen")

    async def recorded() -> bool:  # rendered for the member, held back there
        work = await fed.works.get(keys.work_key(EAST, ref_of(app)))
        manifest = work.obj.spec.manifest if work is not None else {}
        return "nginx:2" in str(manifest)

    await wait_for(recorded, timeout=15, message="the held change recorded in the Work")
    await wait_for(lambda: propagator.pending == 0, timeout=15, message="passes done")
    assert await image() == "nginx:1"
    assert await copy(fed, "ConfigMap", "appcfg") is not None

    await fed.delete(app)

    async def released() -> bool:
        obj = await copy(fed, "Deployment", "depapp")
        labels = (obj or {}).get("metadata", {}).get("labels", {})
        return obj is not None and "fedctl.io/managed-by" not in labels

    await wait_for(released, timeout=15, message="the copy released, not deleted")
