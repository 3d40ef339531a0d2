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
