"""Contract: objects a real apiserver refuses are refused with its code, reason and words.

A simulated member that stores `cpu: abc`, a selector that picks none of its pods or a pod
whose requests grew after quota admission shows a federation a member that a real cluster
is not; these tables pin the upstream answer for each.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from clusters.sim import quota
from clusters.sim.resources import by_kind
from tests.sim.conftest import SimServer

CONTAINER = {"name": "c", "image": "nginx"}
LABELS = {"app": "web"}
DEPLOYMENTS = by_kind("apps/v1", "Deployment")
assert DEPLOYMENTS is not None


def _deployment(container: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": LABELS},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {"containers": [container or CONTAINER]},
            },
            **spec,
        },
    }


def _status(err: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(err.body)
    return body


@pytest.mark.parametrize(
    ("body", "code", "message", "field"),
    [
        pytest.param(
            _deployment({**CONTAINER, "resources": {"requests": {"cpu": "abc"}}}),
            400,
            'Deployment in version "v1" cannot be handled as a Deployment: quantities must'
            " match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            None,
            id="a quantity that does not parse fails decoding",
        ),
        pytest.param(
            _deployment({**CONTAINER, "resources": {"limits": {"memory": "-1Gi"}}}),
            422,
            'Deployment.apps "web" is invalid: spec.template.spec.containers[0].resources'
            '.limits[memory]: Invalid value: "-1Gi": must be greater than or equal to 0',
            "spec.template.spec.containers[0].resources.limits[memory]",
            id="a negative quantity",
        ),
        pytest.param(
            _deployment({**CONTAINER, "imagePullPolicy": "Sometimes"}),
            422,
            'Deployment.apps "web" is invalid: spec.template.spec.containers[0].imagePullPolicy:'
            ' Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"',
            "spec.template.spec.containers[0].imagePullPolicy",
            id="an image pull policy outside the enum",
        ),
        pytest.param(
            _deployment(selector={"matchLabels": {"app": "other"}}),
            422,
            'Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value:'
            ' map[string]string{"app":"web"}: `selector` does not match template `labels`',
            "spec.template.metadata.labels",
            id="a selector that misses the template",
        ),
        pytest.param(
            _deployment(
                selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]}
            ),
            422,
            "`selector` does not match template `labels`",
            "spec.template.metadata.labels",
            id="a selector expression that misses the template",
        ),
        pytest.param(
            {
                "metadata": {"name": "web"},
                "spec": {
                    "selector": {"matchLabels": LABELS},
                    "template": {"metadata": {"labels": LABELS}, "spec": {"containers": []}},
                },
            },
            422,
            'Deployment.apps "web" is invalid: spec.template.spec.containers: Required value',
            "spec.template.spec.containers",
            id="no containers",
        ),
    ],
)
async def test_deployments_upstream_refuses_are_refused(
    sim_server: SimServer, body: dict[str, Any], code: int, message: str, field: str | None
) -> None:
    with pytest.raises(ApiException) as err:
        await sim_server.apps.create_namespaced_deployment("default", body)
    status = _status(err.value)
    assert (err.value.status, status["code"]) == (code, code)
    assert status["reason"] == ("BadRequest" if code == 400 else "Invalid")
    assert message in status["message"]
    if field is not None:
        assert [c["field"] for c in status["details"]["causes"]] == [field]
    assert sim_server.store.try_get(DEPLOYMENTS, "default", "web") is None


@pytest.mark.parametrize("kind", ["ReplicaSet", "StatefulSet"])
async def test_every_apps_workload_checks_its_selector(sim_server: SimServer, kind: str) -> None:
    body = _deployment(selector={"matchLabels": {"app": "other"}}, serviceName="web")
    create = {
        "ReplicaSet": sim_server.apps.create_namespaced_replica_set,
        "StatefulSet": sim_server.apps.create_namespaced_stateful_set,
    }[kind]
    with pytest.raises(ApiException) as err:
        await create("default", body)
    assert err.value.status == 422
    assert "`selector` does not match template `labels`" in _status(err.value)["message"]


async def test_a_manual_job_selector_must_match_its_template(sim_server: SimServer) -> None:
    job = {
        "metadata": {"name": "j"},
        "spec": {
            "manualSelector": True,
            "selector": {"matchLabels": {"app": "other"}},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {"containers": [CONTAINER], "restartPolicy": "Never"},
            },
        },
    }
    with pytest.raises(ApiException) as err:
        await sim_server.batch.create_namespaced_job("default", job)
    assert err.value.status == 422
    assert _status(err.value)["message"] == (
        'Job.batch "j" is invalid: spec.template.metadata.labels: Invalid value:'
        ' map[string]string{"app":"web"}: `selector` does not match template `labels`'
    )


async def test_a_deployment_selector_is_immutable(sim_server: SimServer) -> None:
    await sim_server.apps.create_namespaced_deployment("default", _deployment())
    both = {"app": "web", "tier": "x"}
    changed = {
        "spec": {"selector": {"matchLabels": both}, "template": {"metadata": {"labels": both}}}
    }
    with pytest.raises(ApiException) as err:
        await sim_server.apps.patch_namespaced_deployment("web", "default", changed)
    status = _status(err.value)
    assert (err.value.status, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        'Deployment.apps "web" is invalid: spec.selector: Invalid value: v1.LabelSelector{'
        'MatchLabels:map[string]string{"app":"web", "tier":"x"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
    )


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        pytest.param(
            {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "other"}]}}}},
            "spec.template",
            id="template",
        ),
        pytest.param(
            {"spec": {"selector": {"matchLabels": {"x": "y"}}}}, "spec.selector", id="selector"
        ),
    ],
)
async def test_a_job_template_and_selector_are_immutable(
    sim_server: SimServer, patch: dict[str, Any], field: str
) -> None:
    job = {
        "metadata": {"name": "j"},
        "spec": {
            "template": {"spec": {"containers": [CONTAINER], "restartPolicy": "Never"}},
        },
    }
    await sim_server.batch.create_namespaced_job("default", job)
    with pytest.raises(ApiException) as err:
        await sim_server.batch.patch_namespaced_job("j", "default", patch)
    status = _status(err.value)
    assert err.value.status == 422
    assert [c["field"] for c in status["details"]["causes"]] == [field]
    assert status["message"].endswith(": field is immutable")


async def test_a_pod_may_change_its_image_but_not_its_resources(sim_server: SimServer) -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{**CONTAINER, "resources": {"requests": {"cpu": "1"}}}]},
    }
    await sim_server.core.create_namespaced_pod("default", pod)
    grown = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100"}}}]}}
    with pytest.raises(ApiException) as err:
        await sim_server.core.patch_namespaced_pod("p", "default", grown)
    status = _status(err.value)
    assert (err.value.status, status["reason"]) == (422, "Invalid")
    assert status["message"].startswith(
        'Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than'
        " `spec.containers[*].image`,"
    )
    assert status["details"]["causes"][0]["reason"] == "FieldValueForbidden"
    image = {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}
    patched = await sim_server.core.patch_namespaced_pod("p", "default", image)
    assert patched.spec.containers[0].image == "nginx:2"
    assert patched.spec.containers[0].resources.requests == {"cpu": "1"}


@pytest.mark.parametrize(
    ("hard", "causes"),
    [
        pytest.param(
            {"foo": "3"},
            [
                'spec.hard[foo]: Invalid value: "foo": must be a standard resource type or'
                " fully qualified",
                'spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota',
            ],
            id="an unqualified name that is no resource",
        ),
        pytest.param(
            {"storage": "3"},
            ['spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota'],
            id="a standard resource quota does not take",
        ),
    ],
)
async def test_quota_resource_names_upstream_refuses_are_refused(
    sim_server: SimServer, hard: dict[str, str], causes: list[str]
) -> None:
    body = {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "4", **hard}}}
    with pytest.raises(ApiException) as err:
        await sim_server.core.create_namespaced_resource_quota("default", body)
    status = _status(err.value)
    assert err.value.status == 422
    assert [f"{c['field']}: {c['message']}" for c in status["details"]["causes"]] == causes


async def test_qualified_quota_names_are_accepted_as_upstream_does(sim_server: SimServer) -> None:
    """Upstream takes `nvidia.com/gpu` and `limits.nvidia.com/gpu` (qualified names) and
    then limits nothing by them: only `requests.<extended>` is enforced."""
    hard = {"nvidia.com/gpu": "1", "limits.nvidia.com/gpu": "1", "count/deployments.apps": "2"}
    body = {"metadata": {"name": "q"}, "spec": {"hard": hard}}
    created = await sim_server.core.create_namespaced_resource_quota("default", body)
    assert created.spec.hard == hard


def test_quota_usage_skips_a_stored_quantity_that_does_not_parse() -> None:
    """A bad quantity that reached the store (written before admission checked it) must
    not stop the quota controller from counting every other pod."""
    pod = {"spec": {"containers": [{"resources": {"requests": {"cpu": "abc", "memory": "1Gi"}}}]}}
    usage = quota.pod_usage(pod)
    assert "requests.cpu" not in usage
    assert str(usage["requests.memory"]) == "1Gi"
