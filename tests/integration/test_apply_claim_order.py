"""A template and the placing policies of the same apply are judged together: the policy
that claims it is Karmada's first choice among all of them, as `fedctl plan` says, however
the apply's documents fall into transactions.

An apply is written in transactions of at most 100 objects, and the scheduler may claim a
template between two of them; a claim sticks (`preemption: Never`). Written in document
order, a Deployment, a policy selecting it by label, 98 ConfigMaps and a policy selecting
it by name gave the Deployment to the label policy, which was stored with it, while plan
(and Karmada's order: by name before by label) said the name policy.

Real pieces: etcd, the API, the CLI and the scheduling loop. The API's registry lets the
scheduler decide after each transaction that writes the Deployment, as a busy controller
may, so the outcome does not depend on timing.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

import pytest

from federation import clock
from federation.registry import codec, embedded, keys
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from federation.scheduler.loop import SchedulerLoop
from federation.settings import SchedulerSettings
from policies.models.binding import CLAIMED_BY, Binding
from tests.conftest import etcd_settings
from tests.integration.test_scheduler_loop import with_member
from tests.serving import api_server, fedctl
from tests.waiting import background, wait_for

pytestmark = pytest.mark.integration

WEB1 = keys.workload_key(keys.WorkloadRef("race", "Deployment.apps", "web1"))
BINDING = keys.binding_key(keys.WorkloadRef("race", "Deployment.apps", "web1"))


class Watched(EtcdStore):
    """An EtcdStore that, after each transaction holding `key`, waits for `then`."""

    key = ""
    then: Callable[[], Awaitable[None]] | None = None

    async def commit(
        self, ops: Sequence[st.Op], *, guards: Sequence[st.Guard] = ()
    ) -> st.CommitResult:
        result = await super().commit(ops, guards=guards)
        if self.then is not None and any(op.key == self.key for op in ops):
            await self.then()
        return result


@pytest.fixture
async def registry(own_etcd: embedded.EmbeddedEtcd) -> AsyncIterator[Watched]:
    """The API's registry on an etcd of its own, holding cluster a (2 nodes of 16 cores)."""
    real = Watched(etcd_settings(own_etcd.url))
    await real.connect()
    await with_member(real)
    yield real
    await real.close()


def policy(name: str, selector: str) -> str:
    return f"""\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: {name}, namespace: race}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, {selector}}}]
"""


RACE = "---\n".join(
    [
        """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web1, namespace: race, labels: {app: web1}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web1}}
  template:
    metadata: {labels: {app: web1}}
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: 10m}}}]
""",
        policy("by-label", "labelSelector: {matchLabels: {app: web1}}"),
        *(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: filler-{i}, namespace: race}}\n"
            for i in range(98)
        ),
        policy("by-name", "name: web1"),
    ]
)
"""The Deployment, a policy by label, 98 ConfigMaps, a policy by name: 101 documents."""


async def claimed(registry: st.Store) -> str | None:
    """The policy web1's Binding records as its claimant (None: no Binding yet)."""
    found = await codec.TypedStore(registry, codec.Codec(Binding)).get(BINDING)
    return None if found is None else found.obj.metadata.annotations.get(CLAIMED_BY)


@contextlib.asynccontextmanager
async def scheduling(registry: Watched, url: str) -> AsyncIterator[str]:
    """The scheduling loop (on a client of its own) and the API over `registry`; yields the
    API's URL. Once armed (`arm`), the registry waits for web1's claim after the
    transaction that holds its key."""
    own = EtcdStore(etcd_settings(url))
    await own.connect()
    loop = SchedulerLoop(own, settings=SchedulerSettings(), clock=clock.real, debounce=0.01)
    try:
        async with background(loop.run()), api_server(registry) as server:
            yield server
    finally:
        await own.close()


def arm(registry: Watched, key: str) -> None:
    """Make `registry` wait, after a transaction holding `key`, until web1 is claimed."""

    async def decided() -> None:
        async def probe() -> str:
            return await claimed(registry) or ""

        who: str = await wait_for(probe, message="web1 claimed by some policy")
        assert who.startswith("PropagationPolicy/race/")

    registry.key, registry.then = key, decided


async def test_a_template_is_claimed_by_the_policy_plan_names_whatever_the_batches(
    registry: Watched, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    path = tmp_path / "race.yaml"
    path.write_text(RACE, encoding="utf-8")
    arm(registry, WEB1)
    async with scheduling(registry, own_etcd.url) as server:
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        assert await claimed(registry) == "PropagationPolicy/race/by-name"


async def test_a_stored_template_is_claimed_by_the_strongest_policy_of_a_large_apply(
    registry: Watched, own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    """A template stored with no policy, then 100 policies selecting Deployments by kind
    and one selecting it by name, in that order: more policies than one transaction takes.
    The one by name is written in the first, so a claim made before the second is its."""
    web1, *_ = RACE.split("---\n")
    (tmp_path / "web1.yaml").write_text(web1, encoding="utf-8")
    kinds = [policy(f"by-kind-{i:03d}", "namespace: race") for i in range(100)]
    path = tmp_path / "policies.yaml"
    path.write_text("---\n".join([*kinds, policy("by-name", "name: web1")]), encoding="utf-8")
    async with scheduling(registry, own_etcd.url) as server:
        assert await fedctl(server, "apply", "-f", str(tmp_path / "web1.yaml")) == 0
        arm(registry, keys.policy_key("PropagationPolicy", "race", "by-kind-000"))
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        assert await claimed(registry) == "PropagationPolicy/race/by-name"
