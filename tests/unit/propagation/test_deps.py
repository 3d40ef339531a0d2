"""`deps.referenced` and `deps.Index`: what a workload's pods need, as Karmada reads it.

A policy with `propagateDeps: true` sends these along with the workload; one missed here
leaves a member's pod in `CreateContainerConfigError`, one invented here sends an object
nothing asked for.
"""

from __future__ import annotations

from typing import Any

import pytest

from federation.propagation import deps
from federation.registry import keys
from policies.models.workload import Workload


def deployment(pod: dict[str, Any], *, kind: str = "Deployment") -> Workload:
    api_version = "batch/v1" if kind == "Job" else "apps/v1"
    return Workload.model_validate(
        {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {"name": "app", "namespace": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}], **pod}}},
        }
    )


def refs(*pairs: tuple[str, str]) -> frozenset[keys.WorkloadRef]:
    return frozenset(keys.WorkloadRef("web", kind, name) for kind, name in pairs)


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(
            {"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "a"}}]}]},
            refs(("ConfigMap", "a")),
            id="envFrom a ConfigMap",
        ),
        pytest.param(
            {
                "initContainers": [
                    {
                        "name": "i",
                        "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "s"}}}],
                    }
                ],
                "containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "t"}}]}],
            },
            refs(("Secret", "s"), ("Secret", "t")),
            id="a Secret read by an init container's env and by envFrom",
        ),
        pytest.param(
            {
                "volumes": [
                    {"name": "v1", "configMap": {"name": "cm"}},
                    {"name": "v2", "secret": {"secretName": "sec"}},
                    {"name": "v3", "persistentVolumeClaim": {"claimName": "data"}},
                    {
                        "name": "v4",
                        "projected": {
                            "sources": [{"configMap": {"name": "p"}}, {"secret": {"name": "q"}}]
                        },
                    },
                    {"name": "v5", "emptyDir": {}},
                ]
            },
            refs(
                ("ConfigMap", "cm"),
                ("Secret", "sec"),
                ("PersistentVolumeClaim", "data"),
                ("ConfigMap", "p"),
                ("Secret", "q"),
            ),
            id="volumes of every kind, an emptyDir needing nothing",
        ),
        pytest.param(
            {"imagePullSecrets": [{"name": "pull"}], "serviceAccountName": "runner"},
            refs(("Secret", "pull"), ("ServiceAccount", "runner")),
            id="an image pull Secret and a ServiceAccount",
        ),
        pytest.param(
            {"serviceAccountName": "default"},
            refs(),
            id="the default ServiceAccount: every namespace has its own",
        ),
        pytest.param(
            {
                "volumes": [
                    {"name": "c", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi"}}},
                    {"name": "a", "azureFile": {"secretName": "azure", "shareName": "s"}},
                    *(
                        {"name": field, field: {"secretRef": {"name": f"{field}-s"}}}
                        for field in (
                            "cephfs",
                            "cinder",
                            "flexVolume",
                            "rbd",
                            "scaleIO",
                            "iscsi",
                            "storageos",
                        )
                    ),
                ]
            },
            refs(
                ("Secret", "csi"),
                ("Secret", "azure"),
                ("Secret", "cephfs-s"),
                ("Secret", "cinder-s"),
                ("Secret", "flexVolume-s"),
                ("Secret", "rbd-s"),
                ("Secret", "scaleIO-s"),
                ("Secret", "iscsi-s"),
                ("Secret", "storageos-s"),
            ),
            id="every Secret a volume source names, as Kubernetes' VisitPodSecretNames",
        ),
    ],
)
def test_what_a_pod_template_references(pod: dict[str, Any], expected: frozenset[Any]) -> None:
    assert deps.referenced(deployment(pod)) == expected


def test_a_kind_without_pods_references_nothing() -> None:
    config = Workload.model_validate(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "web"}}
    )
    assert deps.referenced(config) == frozenset()


def test_a_cronjob_references_what_the_jobs_it_starts_need() -> None:
    """A CronJob has no pods until its schedule fires; each Job it starts then needs its
    ConfigMap there already (it was not sent: the Job's pods waited on a missing volume)."""
    cron = Workload.model_validate(
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "web"},
            "spec": {
                "schedule": "0 2 * * *",
                "jobTemplate": {
                    "spec": {
                        "template": {
                            "spec": {
                                "containers": [{"name": "c", "image": "x"}],
                                "volumes": [{"name": "v", "configMap": {"name": "settings"}}],
                                "serviceAccountName": "reporter",
                            }
                        }
                    }
                },
            },
        }
    )
    assert deps.referenced(cron) == refs(("ConfigMap", "settings"), ("ServiceAccount", "reporter"))


def test_the_index_follows_template_changes_both_ways() -> None:
    index = deps.Index()
    app = keys.WorkloadRef("web", "Deployment.apps", "app")
    uses_a = deployment(
        {"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "a"}}]}]}
    )
    uses_b = deployment({"volumes": [{"name": "v", "configMap": {"name": "b"}}]})
    (a,), (b,) = refs(("ConfigMap", "a")), refs(("ConfigMap", "b"))

    assert index.update(app, uses_a) == {a}
    assert index.needing(a) == {app}
    assert index.update(app, uses_b) == {a, b}  # both looked at again: a lost its needer
    assert index.needing(a) == frozenset() and index.needing(b) == {app}
    assert index.update(app, None) == {b}
    assert index.needing(b) == frozenset() and index.of(app) == frozenset()


def test_an_optional_reference_is_sent_but_not_required() -> None:
    """Kubernetes starts a pod without a ConfigMap or Secret its reference marks
    `optional: true`: sent when the federation has it, never reported missing."""
    optional = {"optional": True}
    pod = {
        "containers": [
            {
                "name": "c",
                "envFrom": [{"configMapRef": {"name": "a", **optional}}],
                "env": [
                    {"name": "P", "valueFrom": {"secretKeyRef": {"name": "s", **optional}}},
                    {"name": "Q", "valueFrom": {"configMapKeyRef": {"name": "both"}}},
                ],
            }
        ],
        "volumes": [
            {"name": "v", "configMap": {"name": "both", **optional}},
            {"name": "w", "secret": {"secretName": "t", **optional}},
            {"name": "x", "projected": {"sources": [{"configMap": {"name": "p", **optional}}]}},
        ],
    }
    index = deps.Index()
    app = keys.WorkloadRef("web", "Deployment.apps", "app")
    index.update(app, deployment(pod))
    assert index.of(app) == refs(
        ("ConfigMap", "a"), ("Secret", "s"), ("ConfigMap", "both"), ("Secret", "t"),
        ("ConfigMap", "p"),
    )  # fmt: skip
    assert index.required(app) == refs(("ConfigMap", "both"))


def test_the_index_keeps_what_a_copy_references_after_its_template_moved_on() -> None:
    """A copy held back from its template (dispatching suspended, a leaving copy) still
    needs what it mounts: the old name keeps a needer until the copy stops naming it."""
    index = deps.Index()
    app = keys.WorkloadRef("web", "Deployment.apps", "app")
    (a,), (b,) = refs(("ConfigMap", "a")), refs(("ConfigMap", "b"))
    index.update(app, deployment({"volumes": [{"name": "v", "configMap": {"name": "a"}}]}))
    assert index.update_copies(app, {"west": frozenset({a})}) == {a}
    index.update(app, deployment({"volumes": [{"name": "v", "configMap": {"name": "b"}}]}))
    assert index.needing(a) == {app} and index.held(app) == {a, b}
    assert index.update_copies(app, {"west": frozenset({a})}) == frozenset()  # unchanged
    assert index.update_copies(app, {"west": frozenset({b})}) == {a, b}
    assert index.needing(a) == frozenset() and index.needing(b) == {app}
    index.update(app, None)
    assert index.needing(b) == {app}  # its copy is still there
    assert index.update_copies(app, {}) == {b}
    assert index.needing(b) == frozenset()


def test_a_manifest_s_references_are_read_from_any_kind_s_pod_specs() -> None:
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "web"},
        "spec": {
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "image": "x"}],
                            "volumes": [
                                {"name": "v", "configMap": {"name": "settings"}},
                                {"name": "o", "secret": {"secretName": "o", "optional": True}},
                            ],
                        }
                    }
                }
            }
        },
    }
    assert deps.in_manifest(manifest) == refs(("ConfigMap", "settings"), ("Secret", "o"))
    assert deps.in_manifest(manifest, required=True) == refs(("ConfigMap", "settings"))
