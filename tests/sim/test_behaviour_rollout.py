"""Deployment revisions: what `kubectl rollout undo` and `rollout history` rely on."""

from __future__ import annotations

from clusters.sim import controllers_rollout
from tests.sim.behaviour_support import DEPLOYMENT, REPLICASET, ManualCluster, deployment_body
from tests.sim.test_behaviour_workloads import CPU


def test_a_template_hashes_the_same_however_kubectl_writes_it_back() -> None:
    """`rollout undo` sends the old ReplicaSet's template as Go serialises it."""
    template = deployment_body("web", 1)["spec"]["template"]
    written_back = {
        "metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
        "spec": {
            **template["spec"],
            "containers": [
                {
                    **template["spec"]["containers"][0],
                    "resources": {},
                    "imagePullPolicy": "IfNotPresent",
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                }
            ],
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "securityContext": {},
        },
    }
    assert controllers_rollout.template_hash(written_back) == controllers_rollout.template_hash(
        template
    )
    other = deployment_body("web", 1, image="nginx:2")["spec"]["template"]
    assert controllers_rollout.template_hash(other) != controllers_rollout.template_hash(template)


async def test_replicasets_carry_the_deployments_annotations_and_revision() -> None:
    async with ManualCluster(CPU) as sim:
        body = deployment_body("web", 2)
        body["metadata"]["annotations"] = {
            "team": "storefront",
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
        }
        sim.store.create(DEPLOYMENT, body)
        await sim.advance(3)
        [rs] = sim.store.list(REPLICASET, "default")[0]
        assert rs["metadata"]["annotations"] == {
            "team": "storefront",
            "deployment.kubernetes.io/revision": "1",
            "deployment.kubernetes.io/desired-replicas": "2",
            "deployment.kubernetes.io/max-replicas": "3",
        }
        annotations = sim.get(DEPLOYMENT, "web")["metadata"]["annotations"]
        assert annotations["deployment.kubernetes.io/revision"] == "1"
