"""The routes behind the dashboard, over HTTP against the running stack: the page and its
assets (served under a strict Content-Security-Policy, nothing else reachable through
them) and the what-if plan the policy editor calls. No browser needed.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.stack import API, EXAMPLES, Stack

pytestmark = pytest.mark.integration

WEB_EXAMPLE = (EXAMPLES / "web.yaml").read_text(encoding="utf-8")
STOREFRONT_KEY = "/fedctl/workloads/web/Deployment.apps/storefront"

POLICY = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: storefront
  namespace: web
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: storefront
  placement:
    clusterAffinity:
      clusterNames: [eu-west-arm]
"""

NEW_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: checkout
  namespace: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: checkout}
  template:
    metadata:
      labels: {app: checkout}
    spec:
      containers:
        - name: checkout
          image: registry.example.com/web/checkout:1.0
          resources:
            requests: {cpu: 250m, memory: 256Mi}
"""

QUEUE = """\
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata:
  name: batch-experiments
spec:
  weight: 1
"""

CLUSTER_WITH_SECRET = """\
apiVersion: fedctl.io/v1alpha1
kind: Cluster
metadata:
  name: eu-west-arm
spec:
  region: eu-west
  chips:
    - model: arm64
      count: 3
  connection:
    kubeconfig: "apiVersion: v1\\nusers: [{name: x, user: {token: hunter2-secret}}]\\n"
"""


def plan(stack: Stack, text: str) -> tuple[int, Any]:
    return stack.http("POST", f"{API}/plan", text, ctype="application/yaml")


@pytest.mark.parametrize(
    ("path", "status", "ctype"),
    [
        pytest.param("/", 200, "text/html", id="the page is served at the root"),
        pytest.param("/ui/app.js", 200, "text/javascript", id="its script"),
        pytest.param("/ui/app.css", 200, "text/css", id="its style sheet"),
        pytest.param("/ui/routes.py", 404, None, id="no other file next to the assets"),
        pytest.param("/ui/..%2Froutes.py", 404, None, id="no way out of the asset folder"),
    ],
)
def test_the_dashboard_serves_only_its_own_assets(
    stack: Stack, path: str, status: int, ctype: str | None
) -> None:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(stack.url + path, timeout=10) as resp:
            got, headers, body = resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        got, headers, body = err.code, err.headers, err.read()
    assert got == status
    if ctype is not None:
        assert headers.get_content_type() == ctype
        assert "default-src 'self'" in headers["Content-Security-Policy"]
        assert body
    else:
        assert b"import" not in body


def test_a_policy_in_the_editor_is_planned_before_and_after_for_the_workload_it_claims(
    stack: Stack,
) -> None:
    status, body = plan(stack, POLICY)
    assert status == 200, body
    (entry,) = body["plans"]
    assert entry["key"] == STOREFRONT_KEY
    assert entry["before"]["policy"] == "storefront"
    assert entry["before"]["placement"] == {
        "us-east-cpu": 6,
        "eu-west-arm": 3,
        "ap-southeast-cpu": 3,
    }
    assert entry["after"]["placement"] == {"eu-west-arm": 12}
    assert entry["after"]["chips"] == {"eu-west-arm": "arm64"}
    assert entry["after"]["totalCost"] is not None
    verdicts = {v["cluster"]: v for v in entry["after"]["verdicts"]}
    assert verdicts["eu-west-arm"]["selected"] is True
    (diff,) = body["diff"]
    assert diff["result"] == "configured"
    assert "-      - us-east-cpu" in diff["diff"]
    # Nothing was stored: the live policy still spreads over three clusters.
    status, live = stack.http("GET", f"{API}/namespaces/web/propagationpolicies/storefront")
    assert len(live["spec"]["placement"]["clusterAffinity"]["clusterNames"]) == 3


@pytest.mark.parametrize(
    ("text", "plans", "results"),
    [
        pytest.param(
            NEW_DEPLOYMENT,
            ["/fedctl/workloads/web/Deployment.apps/checkout"],
            ["created"],
            id="a new workload is planned with no 'before'",
        ),
        pytest.param(QUEUE, [], ["created"], id="a queue alone affects no workload"),
        pytest.param(
            WEB_EXAMPLE.split("\n---\n")[2],
            [],
            ["unchanged"],
            id="the live override policy, unchanged, affects no placement",
        ),
    ],
)
def test_what_the_plan_covers(
    stack: Stack, text: str, plans: list[str], results: list[str]
) -> None:
    status, body = plan(stack, text)
    assert status == 200, body
    assert [p["key"] for p in body["plans"]] == plans
    assert all("before" not in p for p in body["plans"])
    assert all(p["after"]["placement"] for p in body["plans"])
    assert [d["result"] for d in body["diff"]] == results


def test_invalid_yaml_gets_400_with_the_finding_at_its_line(stack: Stack) -> None:
    status, body = plan(stack, POLICY.replace("clusterNames:", "clusterName:"))
    assert status == 400
    (finding,) = body["details"]["findings"]
    assert finding.startswith("<editor>:13:")
    assert "did you mean 'clusterNames'" in finding


def test_the_diff_never_shows_a_member_credential(stack: Stack) -> None:
    status, body = plan(stack, CLUSTER_WITH_SECRET)
    assert status == 200, body
    (diff,) = body["diff"]
    assert diff["result"] == "configured"
    assert "hunter2" not in diff["diff"]
    assert "+    kubeconfig: <redacted>" in diff["diff"]


def test_a_queue_edit_plans_the_workloads_waiting_under_it(stack: Stack) -> None:
    """bert-pretrain (8 H100 GPUs) waits on ml-research's H100 capability of 4; a what-if
    raising it to 8 plans bert-pretrain before (pending on the capability) and after
    (its two pods placed on the H100 member). Workloads of other queues are not planned."""
    queues = (EXAMPLES / "queues.yaml").read_text(encoding="utf-8")
    (research,) = [doc for doc in queues.split("\n---\n") if "name: ml-research" in doc]
    raised = research.replace(
        'accelerator/nvidia-h100-80gb: "4"', 'accelerator/nvidia-h100-80gb: "8"'
    )
    status, body = plan(stack, raised)
    assert status == 200, body
    planned = {p["key"].rpartition("/")[2]: p for p in body["plans"]}
    assert "bert-pretrain" in planned
    assert "storefront" not in planned  # another queue's
    bert = planned["bert-pretrain"]
    assert "capability for nvidia-h100-80gb" in bert["before"]["reason"]
    assert bert["after"]["placement"] == {"eu-west-h100": 2}  # master and worker
