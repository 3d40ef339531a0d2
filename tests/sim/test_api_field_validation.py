"""Contract: unknown fields meet the `fieldValidation` directive as on a real apiserver.

kubectl sends `fieldValidation=Strict` by default, so a typo such as `spec.replica` is a 400
there; the simulator stored it and answered "created".
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import ClientSession

from tests.sim.conftest import SimServer

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def _typo(name: str = "typo") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replica": 3,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx", "resourcez": {}}]},
            },
        },
    }


async def _send(
    server: SimServer, method: str, path: str, body: Any, *, content_type: str = ""
) -> tuple[int, dict[str, Any], list[str]]:
    headers = {"Content-Type": content_type} if content_type else {}
    async with (
        ClientSession() as http,
        http.request(method, f"{server.url}{path}", json=body, headers=headers) as resp,
    ):
        return resp.status, await resp.json(), resp.headers.getall("Warning", [])


async def _strict_patch(
    server: SimServer, patch: dict[str, Any], kind: str
) -> tuple[int, dict[str, Any], list[str]]:
    """Patch Deployment `web` as kubectl does (`fieldValidation=Strict`)."""
    url = f"{DEPLOYMENTS}/web?fieldValidation=Strict"
    return await _send(server, "PATCH", url, patch, content_type=f"application/{kind}-patch+json")


async def test_strict_refuses_an_unknown_field_and_stores_nothing(sim_server: SimServer) -> None:
    status, body, _ = await _send(
        sim_server, "POST", f"{DEPLOYMENTS}?fieldValidation=Strict", _typo()
    )
    assert (status, body["reason"], body["code"]) == (400, "BadRequest", 400)
    assert body["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error:'
        ' unknown field "spec.replica", unknown field'
        ' "spec.template.spec.containers[0].resourcez"'
    )
    status, _, _ = await _send(sim_server, "GET", f"{DEPLOYMENTS}/typo", None)
    assert status == 404


@pytest.mark.parametrize(
    ("query", "warnings"),
    [
        pytest.param(
            "?fieldValidation=Warn",
            [
                '299 - "unknown field \\"spec.replica\\""',
                '299 - "unknown field \\"spec.template.spec.containers[0].resourcez\\""',
            ],
            id="warn",
        ),
        pytest.param(
            "",
            [
                '299 - "unknown field \\"spec.replica\\""',
                '299 - "unknown field \\"spec.template.spec.containers[0].resourcez\\""',
            ],
            id="no directive warns, as the server's default",
        ),
        pytest.param("?fieldValidation=Ignore", [], id="ignore"),
    ],
)
async def test_warn_and_ignore_store_the_object_without_the_unknown_field(
    sim_server: SimServer, query: str, warnings: list[str]
) -> None:
    status, body, sent = await _send(sim_server, "POST", f"{DEPLOYMENTS}{query}", _typo())
    assert status == 201
    assert sent == warnings
    assert "replica" not in body["spec"]
    assert body["spec"]["replicas"] == 1
    assert "resourcez" not in body["spec"]["template"]["spec"]["containers"][0]


async def test_a_strict_patch_naming_an_unknown_field_is_refused(sim_server: SimServer) -> None:
    status, _, _ = await _send(sim_server, "POST", DEPLOYMENTS, {**_typo("web")})
    assert status == 201
    status, body, _ = await _strict_patch(sim_server, {"spec": {"replicaz": 2}}, "merge")
    assert (status, body["reason"]) == (400, "BadRequest")
    assert body["message"] == 'strict decoding error: unknown field "spec.replicaz"'


async def test_a_strict_patch_of_a_running_deployment_is_accepted(sim_server: SimServer) -> None:
    """Everything the server itself stores (defaults, status) is a known field."""
    await _send(sim_server, "POST", DEPLOYMENTS, _typo("web"))
    status, body, sent = await _strict_patch(
        sim_server, {"spec": {"replicas": 2}}, "strategic-merge"
    )
    assert (status, sent) == (200, [])
    assert body["spec"]["replicas"] == 2
