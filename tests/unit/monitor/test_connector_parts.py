"""The connector's pure parts: error translation, the retry wait, discovery paths, work queue."""

from __future__ import annotations

import json
from typing import Any

import pytest
import tenacity

from clusters import member
from clusters.kube import discovery, transport
from federation import errors
from federation.settings import MemberSettings
from federation.workqueue import WorkQueue


def status_body(code: int, reason: str, message: str) -> bytes:
    return json.dumps(
        {"kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message}
    ).encode()


@pytest.mark.parametrize(
    ("code", "kind", "retryable"),
    [
        pytest.param(404, member.MemberNotFound, False, id="404 is NotFound, permanent"),
        pytest.param(409, member.MemberConflict, False, id="409 is a conflict, permanent"),
        pytest.param(410, member.WatchExpired, False, id="410 tells the watch to re-list"),
        pytest.param(422, member.MemberRejected, False, id="422 invalid, permanent"),
        pytest.param(429, member.MemberUnavailable, True, id="429 is retryable"),
        pytest.param(503, member.MemberUnavailable, True, id="503 is retryable"),
    ],
)
def test_rejection_keeps_the_members_words(
    code: int, kind: type[member.MemberError], retryable: bool
) -> None:
    exc = transport.rejection(
        code, status_body(code, "Why", 'pods "x" is forbidden: quota'), cluster="c1"
    )
    assert type(exc) is kind
    assert isinstance(exc, errors.RetryableError) is retryable
    assert isinstance(exc, errors.PermanentError) is not retryable
    assert 'pods "x" is forbidden: quota' in str(exc)
    assert str(exc).startswith("c1: ")


def test_rejection_without_a_status_body_uses_the_text() -> None:
    exc = transport.rejection(400, b"bad request\n", cluster="c1")
    assert isinstance(exc, member.MemberRejected)
    assert (exc.code, exc.detail) == (400, "bad request")


def _state(exc: BaseException, attempt: int = 1) -> tenacity.RetryCallState:
    state = tenacity.RetryCallState(
        retry_object=tenacity.AsyncRetrying(), fn=None, args=(), kwargs={}
    )
    state.attempt_number = attempt
    state.set_exception((type(exc), exc, None))
    return state


@pytest.mark.parametrize(
    ("retry_after", "expected"),
    [
        pytest.param(2.0, 2.0, id="Retry-After is honoured"),
        pytest.param(600.0, 5.0, id="a huge Retry-After is capped at retry_max"),
        pytest.param(0.0, 0.0, id="Retry-After zero retries at once"),
    ],
)
def test_retry_wait_honours_retry_after(retry_after: float, expected: float) -> None:
    wait = transport.retry_wait(MemberSettings(retry_max=5.0))
    exc = member.MemberUnavailable("busy", code=429, retry_after=retry_after)
    assert wait(_state(exc)) == expected


def test_retry_wait_backs_off_with_jitter_otherwise() -> None:
    wait = transport.retry_wait(MemberSettings(retry_initial=0.1, retry_max=5.0))
    exc = member.MemberUnavailable("refused", reason="ConnectionRefused")
    first = wait(_state(exc, 1))
    fourth = wait(_state(exc, 4))
    assert 0.05 <= first <= 0.1
    assert 0.4 <= fourth <= 0.8
    assert wait(_state(exc, 20)) <= 5.0


NODES = member.ResourceInfo(name="nodes", kind="Node", namespaced=False)
DEPLOYS = member.ResourceInfo(name="deployments", kind="Deployment", namespaced=True)


@pytest.mark.parametrize(
    ("api_version", "resource", "kwargs", "expected"),
    [
        pytest.param("v1", NODES, {}, "/api/v1/nodes", id="core cluster-scoped collection"),
        pytest.param(
            "v1", NODES, {"namespace": "x", "name": "n1"}, "/api/v1/nodes/n1",
            id="a namespace is ignored for a cluster-scoped kind",
        ),
        pytest.param(
            "apps/v1", DEPLOYS, {"namespace": "team-a", "name": "web"},
            "/apis/apps/v1/namespaces/team-a/deployments/web", id="namespaced object in a group",
        ),
        pytest.param(
            "apps/v1", DEPLOYS, {}, "/apis/apps/v1/deployments",
            id="namespaced kind across all namespaces",
        ),
    ],
)  # fmt: skip
def test_paths(
    api_version: str, resource: member.ResourceInfo, kwargs: dict[str, Any], expected: str
) -> None:
    assert discovery.path(api_version, resource, **kwargs) == expected


def test_resource_list_drops_subresources() -> None:
    doc = {
        "resources": [
            {"name": "pods", "kind": "Pod", "namespaced": True, "verbs": ["get", "list"]},
            {"name": "pods/status", "kind": "Pod", "namespaced": True, "verbs": ["get"]},
        ]
    }
    parsed = discovery.parse_resource_list("v1", doc)
    assert [r.name for r in parsed.resources] == ["pods"]
    assert discovery.group_versions(
        {"versions": ["v1"]}, {"groups": [{"versions": [{"groupVersion": "apps/v1"}]}]}
    ) == ["v1", "apps/v1"]


async def test_work_queue_deduplicates_and_requeues_a_key_added_while_worked_on() -> None:
    queue = WorkQueue()
    for key in ("a", "b", "a", "a"):
        queue.add(key)
    assert len(queue) == 2
    first = await queue.get()
    assert first == "a"
    queue.add("a")  # changed while a worker holds it
    assert await queue.get() == "b"
    queue.done("b")
    queue.done("a")
    assert await queue.get() == "a"  # worked on again, once
    queue.done("a")
    assert len(queue) == 0
