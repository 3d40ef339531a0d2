"""`fedctl apply` of what a team moving from Kueue or Volcano writes, to a real controller.

From a migration audit: a Job labelled with Kueue's queue was applied without a word and
ran in the uncapped default queue; Kueue's cluster-scoped objects were stored in
namespace `default`; a Volcano Queue, which a member's Volcano needs before it takes any
Volcano Job naming it, was refused outright; and a job from a namespace its queue does not
serve was applied silently and then waited. The API is the real one over a real etcd; the
CLI is `main.main`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from federation.api import app as api_app
from federation.registry import embedded, keys
from federation.registry.etcd import EtcdStore
from tests.conftest import etcd_settings
from tests.integration.test_api import wipe
from tests.serving import fedctl, serving

pytestmark = pytest.mark.integration

QUEUES = """\
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata: {name: platform}
spec:
  capability: {cpu: "16"}
---
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata: {name: team-b}
spec:
  parent: platform
  namespaces: [team-b]
---
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: NAME
  namespace: team-a
META
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
---
"""

FOREIGN = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a-cq}
spec: {cohort: ml}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: team-a-lq, namespace: team-a}
spec: {clusterQueue: team-a-cq}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec:
  capability: {cpu: "32"}
  guarantee: {resource: {cpu: "8"}}
"""


def job(name: str, meta: str) -> str:
    return JOB.replace("NAME", name).replace("META", meta)


@pytest.fixture
async def server(etcd_server: embedded.EmbeddedEtcd) -> AsyncIterator[tuple[str, EtcdStore]]:
    """The controller's API over a wiped etcd."""
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    async with serving(api_app.build_app(store)) as url:
        yield url, store
    await wipe(store)
    await store.close()


async def test_apply_warns_of_kueue_labels_and_of_queues_that_never_take_the_job(
    server: tuple[str, EtcdStore], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = server
    path = tmp_path / "jobs.yaml"
    path.write_text(
        QUEUES
        + job("kjob", "  labels: {kueue.x-k8s.io/queue-name: team-a-lq}")
        + job("wrongns", "  annotations: {fedctl.io/queue: team-b}")
        + job("parentq", "  annotations: {fedctl.io/queue: platform}")
    )
    capsys.readouterr()

    assert await fedctl(url, "apply", "-f", str(path)) == 0

    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning:" in line]
    assert [line.partition(": warning: ")[0] for line in warnings] == [
        f'{path}:19:39: metadata.labels["kueue.x-k8s.io/queue-name"]',
        f'{path}:31:34: metadata.annotations["fedctl.io/queue"]',
        f'{path}:43:34: metadata.annotations["fedctl.io/queue"]',
    ]
    assert "set the fedctl.io/queue annotation" in warnings[0]
    assert "queue team-b takes work from namespaces team-b only, not team-a" in warnings[1]
    assert "queue 'platform' is a parent" in warnings[2]  # once, though apply asks the server


async def test_kueue_and_volcano_objects_are_stored_in_their_own_scope(
    server: tuple[str, EtcdStore], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, store = server
    path = tmp_path / "foreign.yaml"
    path.write_text(FOREIGN)
    capsys.readouterr()

    assert await fedctl(url, "apply", "-f", str(path)) == 0

    err = capsys.readouterr().err
    assert "is not read by fedctl's scheduler" in err and "did you mean" not in err
    stored = sorted(
        str(keys.parse_workload_key(kv.key))
        for kv in (await store.list(keys.prefix("workloads"))).items
    )
    assert stored == [
        "_/ClusterQueue.kueue.x-k8s.io/team-a-cq",
        "_/Queue.scheduling.volcano.sh/research",
        "team-a/LocalQueue.kueue.x-k8s.io/team-a-lq",
    ]
