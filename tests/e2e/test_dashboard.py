"""The dashboard in headless Chromium against a running stack (real etcd, the simulated
demo fleet, the controller's API and its cluster monitor, the examples applied).

What a platform engineer relies on: every demo cluster is listed in its region with its
chips and capacity; a policy with a mistake shows the mistake at its line while typing;
the fixed policy shows where its workloads would go; applying it changes the placement
the dashboard shows; Bindings written by the scheduler appear live, with their reasons;
a drill started from the page shows its timeline while it runs and its report after.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusters.sim import profile
from federation.failover import drills
from federation.registry import codec, keys
from federation.registry import store as st
from policies import loading
from policies.models.binding import CLAIMED_BY, Binding
from policies.models.cluster import Cluster
from policies.models.work import WorkloadStatus
from tests.e2e.conftest import all_ready, wait_until
from tests.e2e.stack import API, DEMO_PROFILE, EXAMPLES, Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]

expect: Any = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make deps)"
).expect

DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "dashboard.png"
STOREFRONT = "web/Deployment.apps/storefront"
TIMES = "\u00d7"  # the multiplication sign the dashboard writes between name and count

# A PropagationPolicy for the example storefront: two clusters, weights 3:1. The live
# example spreads its 12 replicas 2:1:1 over three regions (6/3/3).
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
      clusterNames: [us-east-cpu, eu-west-arm]
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - targetCluster:
              clusterNames: [us-east-cpu]
            weight: 3
          - targetCluster:
              clusterNames: [eu-west-arm]
            weight: 1
  conflictResolution: Abort
"""


def broken(old: str, new: str) -> str:
    assert old in POLICY
    return POLICY.replace(old, new, 1)


def open_view(page: Any, stack: Stack, view: str) -> None:
    page.goto(f"{stack.url}/#{view}")
    expect(page.locator("body[data-ready=true]")).to_have_count(1)


def type_policy(page: Any, text: str) -> None:
    page.locator("#yaml").fill(text)


def demo_clusters() -> dict[str, Cluster]:
    loaded = loading.load_paths([EXAMPLES / "clusters.yaml"])
    return {o.model.metadata.name: o.model for o in loaded.objects if isinstance(o.model, Cluster)}


def test_the_clusters_view_lists_every_demo_cluster_in_its_region_with_its_chips(
    page: Any, stack: Stack
) -> None:
    open_view(page, stack, "clusters")
    clusters = demo_clusters()
    assert len(clusters) == 8
    for name, cluster in clusters.items():
        card = page.locator(f'section[data-region="{cluster.spec.region}"] [data-cluster="{name}"]')
        expect(card).to_be_visible()
        expect(card.locator(".health")).to_have_text("Ready")
        # The chips as the monitor observed them, counted as `fedctl cluster list` counts
        # them (the spec's declared counts meant something else: every amd64 node).
        observed = observed_chips(name)
        expect(card.locator(".chip")).to_have_count(len(observed))
        for model, text in observed.items():
            expect(card.locator(f'.chip[data-chip="{model}"]')).to_have_text(text)
    # Capacity comes from the monitor's ClusterStatus: all 16 A100s are free.
    a100 = page.locator('[data-cluster="us-east-a100"] [data-capacity="nvidia-a100-80gb"]')
    expect(a100.locator(".bar-text")).to_have_text("16 free / 16")
    # The GPU nodes' cores count too: 2 x 16 on the CPU nodes, 3 x 48 on the L4 nodes.
    l4 = page.locator('[data-cluster="ap-southeast-l4"]')
    expect(l4.locator('[data-capacity="amd64"] .bar-text')).to_have_text("176 free / 176")
    expect(l4.locator('[data-capacity="nvidia-l4"] .bar-text')).to_have_text("12 free / 12")
    # Pod slots, 110 a node: a member full by pod count showed only free cores.
    expect(l4.locator('[data-capacity="pods"] .bar-text')).to_have_text(
        re.compile(r"^\d+ free / 550$")
    )
    expect(page.locator("#live")).to_have_text("live")
    # The view follows what it shows, nothing more (test_dashboard_clusters).
    expect(page.locator("#live")).to_have_attribute("data-resources", "clusters")
    # The whole spot table, as spot jobs there are costed by it (its GPU price most of all).
    prices = page.locator('[data-cluster="us-east-a100"] .price')
    expect(prices.locator('[data-prices="spot"]')).to_have_text(
        "spot 0.019/core·h · 0.0026/GiB·h · nvidia-a100-80gb 1.2/h"
    )


def test_several_tabs_each_show_live_data_and_stay_responsive(page: Any, stack: Stack) -> None:
    """A browser keeps six connections per host for all its tabs, and a watch holds one.
    With a stream per kind (four a tab) a second tab's lists queued behind the streams (it
    showed "live (2)" and every queue at zero) and the first tab's editor stayed at
    "checking…". One stream a tab leaves room for every tab's calls."""
    others = [page.context.new_page() for _ in range(2)]
    try:
        tabs = [page, *others]
        for tab in tabs:
            open_view(tab, stack, "queues")
        for tab in tabs:
            expect(tab.locator('[data-queue="web"] [data-admitted]')).to_have_count(1)
        for tab in tabs:
            tab.locator('#nav a[data-view="policy"]').click()
            type_policy(tab, POLICY)
            expect(tab.locator("#editor-status")).to_have_text("valid: 1 object(s)")
            expect(tab.locator(f'[data-plan="{STOREFRONT}"]')).to_have_count(1)
        for tab in tabs:
            expect(tab.locator("#live")).to_have_text("live")
    finally:
        for other in others:
            other.close()


HIDE = """() => {
  Object.defineProperty(document, "hidden", { configurable: true, get: () => true });
  document.dispatchEvent(new Event("visibilitychange"));
}"""
SHOW = """() => {
  delete document.hidden;  // the page's own again: visible
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def test_a_hidden_tab_closes_its_stream_and_catches_up_when_shown(
    page: Any, stack: Stack, bindings: codec.TypedStore[Binding]
) -> None:
    """A tab in the background holds no connection (six per host are shared by all tabs);
    shown again, it reconnects and lists what changed meanwhile."""
    open_view(page, stack, "workloads")
    card = page.locator('[data-workload="web/storefront"]')
    expect(card.locator(".phase")).to_have_text("not scheduled")
    expect(page.locator("#live")).to_have_text("live")
    with page.expect_event("requestfailed", lambda r: f"{API}/watch?" in r.url):
        page.evaluate(HIDE)  # the stream is aborted, not left open
    expect(page.locator("#live")).to_have_text("paused")
    stack.call(lambda: bindings.put(BINDING_KEY, binding("Pending", reason="while hidden")))
    with page.expect_request(lambda r: f"{API}/watch?" in r.url):
        page.evaluate(SHOW)
    expect(page.locator("#live")).to_have_text("live")
    expect(card.locator(".reason")).to_have_text("while hidden")


def test_a_view_says_it_is_loading_until_the_lists_it_is_drawn_from_answer(
    page: Any, stack: Stack
) -> None:
    """Queues used to be drawn before the Bindings had been read, every count 0 as if
    live; workloads all said "not scheduled"."""
    held: list[Any] = []
    holding = threading.Event()
    holding.set()
    slow = re.compile(r"/apis/fedctl\.io/v1alpha1/bindings$|/status\.fedctl\.io/v1alpha1/queues")
    page.route(slow, lambda route: held.append(route) if holding.is_set() else route.continue_())
    open_view(page, stack, "queues")
    expect(page.locator("#queues [data-loading]")).to_have_text("Loading queues…")
    page.locator('#nav a[data-view="workloads"]').click()
    expect(page.locator("#workloads [data-loading]")).to_have_text("Loading workloads…")
    expect(page.locator("#workloads [data-workload]")).to_have_count(0)
    page.locator('#nav a[data-view="queues"]').click()
    expect(page.locator("#queues [data-queue]")).to_have_count(0)
    assert held, "the lists were asked for"
    holding.clear()
    for route in held:
        route.continue_()
    expect(page.locator('[data-queue="web"] [data-depth]')).to_have_text("0")
    expect(page.locator("#queues [data-loading]")).to_have_count(0)
    page.locator('#nav a[data-view="workloads"]').click()
    expect(page.locator('[data-workload="web/storefront"]')).to_be_visible()


def observed_chips(cluster: str) -> dict[str, str]:
    """What each chip badge of `cluster` reads once the monitor has seen its nodes: devices
    of each accelerator model, nodes without accelerators of each arch."""
    (member,) = [c for c in profile.load(DEMO_PROFILE).clusters if c.name == cluster]
    counts: dict[str, tuple[int, str]] = {}
    for pool in member.node_pools:
        for accel in pool.accelerators:
            n, _ = counts.get(accel.model, (0, ""))
            counts[accel.model] = (n + pool.count * accel.count_per_node, "devices")
        if not pool.accelerators:
            n, _ = counts.get(pool.arch, (0, ""))
            counts[pool.arch] = (n + pool.count, "nodes")
    return {model: f"{model} {TIMES}{n} {unit}" for model, (n, unit) in counts.items()}


def pod(name: str, requests: dict[str, str]) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": requests}
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "app", "resources": resources}]
    }
    if "nvidia.com/gpu" in requests:
        resources["limits"] = {"nvidia.com/gpu": requests["nvidia.com/gpu"]}
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


@pytest.fixture
def busy_members(stack: Stack) -> Iterator[None]:
    """Pods run directly in two members: 6 of 16 A100s and 44.5 of 64 x86 cores in use."""
    gpu = [pod(f"train-{i}", {"cpu": "8", "nvidia.com/gpu": "3"}) for i in range(2)]
    web = [pod(f"web-{i}", {"cpu": "11500m" if i else "10", "memory": "8Gi"}) for i in range(4)]
    stack.call(lambda: stack.in_member("us-east-a100", apply=gpu))
    stack.call(lambda: stack.in_member("us-east-cpu", apply=web))
    yield
    stack.call(lambda: stack.in_member("us-east-a100", delete=gpu))
    stack.call(lambda: stack.in_member("us-east-cpu", delete=web))


def test_capacity_bars_follow_pods_running_in_the_members(
    page: Any, stack: Stack, busy_members: None
) -> None:
    open_view(page, stack, "clusters")
    a100 = page.locator('[data-cluster="us-east-a100"] [data-capacity="nvidia-a100-80gb"]')
    expect(a100.locator(".bar-text")).to_have_text("10 free / 16", timeout=15_000)
    cpu = page.locator('[data-cluster="us-east-cpu"] [data-capacity="amd64"]')
    # 19.5 cores free: never rounded up to a core that is not there ("20 free").
    expect(cpu.locator(".bar-text")).to_have_text("19.5 free / 64", timeout=15_000)
    if os.environ.get("FEDCTL_DASHBOARD_SCREENSHOT"):  # refreshes docs/dashboard.png
        page.set_viewport_size({"width": 1400, "height": 600})
        page.screenshot(path=str(DOCS_SCREENSHOT), full_page=True)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        pytest.param(
            broken("Weighted", "Sideways"),
            16,
            "invalid value 'Sideways'",
            id="an unknown division preference is marked on its own line",
        ),
        pytest.param(
            broken("weight: 3", "weight: -3"),
            21,
            "must be greater than 0",
            id="a negative weight is marked on the weight's line",
        ),
        pytest.param(
            broken("clusterNames: [us-east-cpu, eu-west-arm]", "clusterName: [us-east-cpu]"),
            13,
            "did you mean 'clusterNames'",
            id="a misspelt field is marked with a suggestion",
        ),
        pytest.param(
            broken("clusterNames: [us-east-cpu]", "clusterNames: [us-east-cpu"),
            21,
            "invalid YAML",
            id="broken YAML is marked where the parser stopped",
        ),
    ],
)
def test_a_policy_with_an_error_shows_the_error_at_its_line(
    page: Any, stack: Stack, text: str, line: int, message: str
) -> None:
    open_view(page, stack, "policy")
    type_policy(page, text)
    expect(page.locator(".gutter .ln.err")).to_have_count(1)
    expect(page.locator(f'.gutter .ln.err[data-line="{line}"]')).to_have_count(1)
    expect(page.locator(f'.inline-msg[data-line="{line}"]')).to_contain_text(message)
    expect(page.locator(f'#findings li[data-line="{line}"]')).to_contain_text(f"line {line}")
    expect(page.locator("#apply")).to_be_disabled()
    expect(page.locator("#plan")).to_contain_text("Fix the errors")


def test_the_gutter_keeps_its_background_when_the_text_is_scrolled(page: Any, stack: Stack) -> None:
    """The gutter's grey stopped at line 22 (the editor's height) once scrolled down."""
    open_view(page, stack, "policy")
    type_policy(page, POLICY * 3)
    page.locator("#yaml").evaluate(
        "area => { area.scrollTop = area.scrollHeight; area.dispatchEvent(new Event('scroll')); }"
    )
    last = POLICY.count("\n") * 3
    expect(page.locator(f'.gutter .ln[data-line="{last}"]')).to_be_in_viewport()
    gutter, editor = page.evaluate(
        "() => ['gutter', 'editor'].map((id) => document.getElementById(id)"
        ".getBoundingClientRect().bottom)"
    )
    assert gutter >= editor - 1, f"the gutter ends at {gutter}, the editor at {editor}"


def placement(plan: Any, side: str) -> dict[str, int]:
    """Cluster -> replicas in one column (`before` or `after`) of a plan preview."""
    items = plan.locator(f".{side} [data-target]")
    return {
        items.nth(i).get_attribute("data-target"): int(items.nth(i).get_attribute("data-replicas"))
        for i in range(items.count())
    }


@pytest.fixture
def restore_examples(stack: Stack) -> Iterator[None]:
    yield
    text = (EXAMPLES / "web.yaml").read_text(encoding="utf-8")
    status, body = stack.http("POST", f"{API}/apply", text, ctype="application/yaml")
    assert status == 200, body


def test_fixing_the_policy_shows_the_plan_and_applying_it_changes_the_placement(
    page: Any, stack: Stack, restore_examples: None
) -> None:
    open_view(page, stack, "policy")
    type_policy(page, broken("Weighted", "Sideways"))
    expect(page.locator('.gutter .ln.err[data-line="16"]')).to_have_count(1)

    type_policy(page, POLICY)
    expect(page.locator(".gutter .ln.err")).to_have_count(0)
    expect(page.locator("#editor-status")).to_have_text("valid: 1 object(s)")
    plan = page.locator(f'[data-plan="{STOREFRONT}"]')
    expect(plan.locator(".phase")).to_have_text("placement changes")
    expect(plan.locator(".before [data-target]")).to_have_count(3)
    expect(plan.locator(".after [data-target]")).to_have_count(2)
    assert placement(plan, "before") == {"us-east-cpu": 6, "eu-west-arm": 3, "ap-southeast-cpu": 3}
    assert placement(plan, "after") == {"us-east-cpu": 9, "eu-west-arm": 3}
    # Each cluster that passed shows what one pod costs an hour there (in its verdict row).
    pod = plan.locator('[data-pod-cost="eu-west-arm"]')
    expect(pod).to_have_count(1)
    expect(pod).to_have_text(re.compile(r" pod USD 0\.\d{4}/h"))
    diff = page.locator(".diff-entry")
    expect(diff.locator(".result")).to_have_text(["configured"])
    expect(diff.locator("pre.diff .del", has_text="- ap-southeast-cpu")).not_to_have_count(0)

    page.locator("#apply").click()
    expect(page.locator('[data-applied="storefront"]')).to_have_text(
        "PropagationPolicy storefront configured"
    )
    # The preview is re-planned against the new live state: what was "after" is now "now".
    expect(plan.locator(".phase")).to_have_text("placement unchanged")
    expect(plan.locator(".before [data-target]")).to_have_count(2)
    assert placement(plan, "before") == {"us-east-cpu": 9, "eu-west-arm": 3}
    expect(diff.locator(".result")).to_have_text(["unchanged"])
    status, stored = stack.http("GET", f"{API}/namespaces/web/propagationpolicies/storefront")
    assert status == 200
    assert stored["spec"]["placement"]["clusterAffinity"]["clusterNames"] == [
        "us-east-cpu",
        "eu-west-arm",
    ]


def binding(phase: str, *, reason: str = "") -> Binding:
    scheduled = phase == "Scheduled"
    return Binding.model_validate(
        {
            "metadata": {"name": "storefront", "namespace": "web"},
            "spec": {
                "workload": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "namespace": "web",
                    "name": "storefront",
                },
                "queue": "web",
                "clusters": [
                    {"name": "us-east-cpu", "replicas": 9, "chip": "amd64", "hourlyCost": "0.24"},
                    {"name": "eu-west-arm", "replicas": 3, "chip": "arm64", "hourlyCost": "0.06"},
                ]
                if scheduled
                else [],
                "explanation": [
                    {"cluster": "us-east-cpu", "verdict": "ok", "score": 91, "selected": True},
                    {"cluster": "eu-west-arm", "verdict": "ok", "score": 77, "selected": True},
                    {
                        "cluster": "us-east-a100",
                        "verdict": "unschedulable",
                        "plugin": "ClusterAffinity",
                        "reasons": ["not in clusterNames"],
                    },
                ]
                if scheduled
                else [],
            },
            "status": {"phase": phase, "reason": reason},
        }
    )


@pytest.fixture
def bindings(stack: Stack) -> Iterator[codec.TypedStore[Binding]]:
    assert stack.store is not None
    typed = codec.TypedStore(stack.store, codec.Codec(Binding))
    yield typed
    stack.call(lambda: typed.delete(BINDING_KEY))


BINDING_KEY = keys.binding_key(keys.WorkloadRef("web", "Deployment.apps", "storefront"))


def queued(
    name: str,
    queue: str,
    phase: str,
    reason: str = "",
    *,
    kind: str = "Job",
    placed: bool | None = None,
    cost: str | None = None,
) -> Binding:
    """The Binding of workload team/`name` (a `kind`: see `team_workload`) in `queue`;
    `placed` (default: Scheduled) names a cluster it runs on, for `cost` an hour. A
    ConfigMap's records no pod, as an object that runs none has."""
    pods = kind == "Job"
    placed = phase == "Scheduled" if placed is None else placed
    target: dict[str, Any] = {"name": "us-east-cpu", "replicas": 1}
    if cost is not None:
        target["hourlyCost"] = cost
    return Binding.model_validate(
        {
            "metadata": {"name": name, "namespace": "team"},
            "spec": {
                "workload": {
                    "apiVersion": "batch/v1" if pods else "v1",
                    "kind": kind,
                    "namespace": "team",
                    "name": name,
                },
                "queue": queue,
                "podRequests": {"cpu": "1"} if pods else {},
                "clusters": [target] if placed else [],
                **({"hourlyCost": cost} if cost is not None and placed else {}),
            },
            "status": {"phase": phase, "reason": reason},
        }
    )


def team_workload(name: str, queue: str, *, kind: str = "Job") -> dict[str, Any]:
    """A one-pod Job (one core) in namespace team and `queue`, or a ConfigMap (no pods)."""
    meta = {"name": name, "namespace": "team", "labels": {"fedctl.io/queue": queue}}
    if kind == "ConfigMap":
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}
    container = {"name": "main", "image": "app", "resources": {"requests": {"cpu": "1"}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {"template": {"spec": {"containers": [container], "restartPolicy": "Never"}}},
    }


class Team:
    """Workloads in namespace team with their Bindings, written as the scheduler would
    (the stack runs none): the queue status view counts a Binding only while its workload
    exists, as `fedctl get queues` does. Removed again when the test ends."""

    def __init__(self, stack: Stack, bindings: codec.TypedStore[Binding]) -> None:
        self.stack, self.bindings = stack, bindings
        self.refs: list[keys.WorkloadRef] = []

    def add(self, name: str, queue: str, *, kind: str = "Job") -> keys.WorkloadRef:
        body = json.dumps(team_workload(name, queue, kind=kind))
        status, created = self.stack.http("POST", f"{API}/namespaces/team/workloads", body)
        assert status == 201, created
        ref = keys.WorkloadRef("team", "Job.batch" if kind == "Job" else kind, name)
        self.refs.append(ref)
        return ref

    def bind(self, ref: keys.WorkloadRef, binding: Binding) -> None:
        self.stack.call(lambda: self.bindings.put(keys.binding_key(ref), binding))

    def finish(self, ref: keys.WorkloadRef, phase: str = "Succeeded") -> None:
        """The propagator's aggregated status of a job that ended."""
        self.report(
            ref,
            phase=phase,
            succeeded=1 if phase == "Succeeded" else 0,
            failed=1 if phase == "Failed" else 0,
        )

    def report(self, ref: keys.WorkloadRef, **fields: Any) -> None:
        """The propagator's aggregated status of a Job, with `fields` (wire names)."""
        typed = codec.TypedStore(self.stack.store, codec.Codec(WorkloadStatus))
        status = WorkloadStatus.model_validate(
            {
                "workload": {"apiVersion": "batch/v1", "kind": "Job", "namespace": ref.namespace,
                             "name": ref.name},
                **fields,
            }
        )  # fmt: skip
        self.stack.call(lambda: typed.put(keys.workload_status_key(ref), status))

    def remove(self) -> None:
        assert self.stack.store is not None
        for ref in self.refs:
            for key in (keys.binding_key(ref), keys.workload_status_key(ref)):
                self.stack.call(lambda k=key: self.stack.store.commit([st.Delete(k)]))
            path = f"{API}/namespaces/team/workloads/{ref.kind}/{ref.name}"
            status, body = self.stack.http("DELETE", path)
            assert status == 200, body


@pytest.fixture
def team(stack: Stack, bindings: codec.TypedStore[Binding]) -> Iterator[Team]:
    made = Team(stack, bindings)
    try:
        yield made
    finally:
        made.remove()


def test_a_second_policy_for_a_claimed_workload_says_who_keeps_it(
    page: Any, stack: Stack, bindings: codec.TypedStore[Binding]
) -> None:
    # Storefront's Binding records the live example policy as its claimant. Named to sort
    # first, a-storefront would claim storefront on a fresh start; it may not preempt, so
    # the editor says who keeps it instead of planning it under the new policy.
    scheduled = binding("Scheduled")
    claimed = scheduled.model_copy(
        update={
            "metadata": scheduled.metadata.model_copy(
                update={"annotations": {CLAIMED_BY: "PropagationPolicy/web/storefront"}}
            )
        }
    )
    stack.call(lambda: bindings.put(BINDING_KEY, claimed))
    open_view(page, stack, "policy")
    type_policy(page, POLICY.replace("name: storefront\n", "name: a-storefront\n", 1))
    expect(page.locator("#editor-status")).to_have_text("valid: 1 object(s)")
    expect(page.locator("#plan [data-note]")).to_contain_text(
        "it stays with PropagationPolicy web/storefront, which claimed it first"
    )
    expect(page.locator("#plan [data-plan]")).to_have_count(0)
    # Applied anyway, the API's warning is shown with the outcome.
    page.locator("#apply").click()
    try:
        expect(page.locator('[data-applied="a-storefront"]')).to_have_text(
            "PropagationPolicy a-storefront created"
        )
        expect(page.locator("#apply-result [data-note]")).to_contain_text(
            "it stays with PropagationPolicy web/storefront"
        )
    finally:
        stack.http("DELETE", f"{API}/namespaces/web/propagationpolicies/a-storefront")
    # The workload's card names the policy its Binding records.
    open_view(page, stack, "workloads")
    expect(page.locator('[data-workload="web/storefront"] [data-policy]')).to_have_text(
        "policy: PropagationPolicy web/storefront"
    )


def test_a_parent_queue_row_counts_its_subtree_and_an_undefined_queue_is_listed(
    page: Any, stack: Stack, team: Team
) -> None:
    typo = "queue mlprod is not defined (queues that take work: ml-prod, ml-research, web)"
    settings = team.add("settings", "ml-prod", kind="ConfigMap")
    team.bind(settings, queued("settings", "ml-prod", "Scheduled", kind="ConfigMap"))
    prod = team.add("prod-a", "ml-prod")
    team.bind(prod, queued("prod-a", "ml-prod", "Scheduled"))
    research = team.add("research-a", "ml-research")
    team.bind(research, queued("research-a", "ml-research", "Pending", "waiting"))
    mistyped = team.add("typo", "mlprod")
    team.bind(mistyped, queued("typo", "mlprod", "Pending", typo))
    open_view(page, stack, "queues")
    ml = page.locator('[data-queue="ml"]')
    expect(ml).to_have_attribute("data-counted-by", "view")
    expect(ml.locator("[data-admitted]")).to_have_text("1")  # the ConfigMap runs nothing
    expect(ml.locator("[data-depth]")).to_have_text("1")
    expect(ml).to_contain_text("in its child queues")
    row = page.locator('[data-queue="ml-research"]')
    expect(row.locator("[data-depth]")).to_have_text("1")
    expect(row.locator(".reasons")).to_contain_text("waiting")
    missing = page.locator('[data-queue="mlprod"]')
    expect(missing).to_contain_text("(not defined)")
    expect(missing.locator(".reasons")).to_contain_text(typo)


def test_queue_counts_are_the_status_view_s_finished_jobs_are_not_admitted(
    page: Any, stack: Stack, team: Team
) -> None:
    """Counting Bindings, the page said ml 2 admitted where `fedctl get queues` said 0:
    both jobs had Succeeded. The counts are now the queue status view's."""
    done = team.add("nightly-eval", "ml-prod")
    team.bind(done, queued("nightly-eval", "ml-prod", "Scheduled"))
    running = team.add("train", "ml-research")
    team.bind(running, queued("train", "ml-research", "Scheduled"))
    open_view(page, stack, "queues")
    ml = page.locator('[data-queue="ml"]')
    expect(ml.locator("[data-admitted]")).to_have_text("2")
    team.finish(done)
    # A finished job's status is no watched object: the view is asked again on a period.
    expect(ml.locator("[data-admitted]")).to_have_text("1", timeout=15_000)
    expect(page.locator('[data-queue="ml-prod"] [data-admitted]')).to_have_text("0")
    expect(page.locator('[data-queue="ml-research"] [data-admitted]')).to_have_text("1")


def test_depth_counts_workloads_the_scheduler_has_not_bound_yet(page: Any, stack: Stack) -> None:
    """The scheduler's queue view counts a workload waiting for its first Binding as
    pending; the page showed only the Bindings (1 where the CLI said 3, for ~25 s). The
    view's answer is stood in for here: the stack runs no scheduler."""
    view = {
        "items": [
            {"name": "web", "defined": True, "implicit": False, "parent": None,
             "children": [], "weight": 2, "admitted": 0, "pending": 3, "used": {},
             "share": 0.0},
        ],
        "revision": 1, "ageSeconds": 0.0, "stale": False, "source": "scheduler",
    }  # fmt: skip
    page.route(
        re.compile(r"/apis/status\.fedctl\.io/v1alpha1/queues$"),
        lambda route: route.fulfill(json=view),
    )
    open_view(page, stack, "queues")
    row = page.locator('[data-queue="web"]')
    expect(row.locator("[data-depth]")).to_have_text("3")
    expect(row.locator("[data-unbound]")).to_have_text(
        "3 with no Binding yet: waiting for the scheduler"
    )


def test_queues_and_workloads_follow_the_scheduler_s_bindings_live(
    page: Any, stack: Stack, bindings: codec.TypedStore[Binding]
) -> None:
    open_view(page, stack, "workloads")
    card = page.locator('[data-workload="web/storefront"]')
    expect(card.locator(".phase")).to_have_text("not scheduled")

    waiting = "queue web: nvidia.com/gpu capability exhausted"
    stack.call(lambda: bindings.put(BINDING_KEY, binding("Pending", reason=waiting)))
    expect(card.locator(".phase")).to_have_text("Pending")
    expect(card.locator(".reason")).to_have_text(waiting)
    page.locator('#nav a[data-view="queues"]').click()
    row = page.locator('[data-queue="web"]')
    expect(row.locator("[data-depth]")).to_have_text("1")
    expect(row.locator("[data-admitted]")).to_have_text("0")
    expect(row.locator(".reasons")).to_contain_text(waiting)

    stack.call(lambda: bindings.put(BINDING_KEY, binding("Scheduled")))
    expect(row.locator("[data-admitted]")).to_have_text("1")
    expect(row.locator("[data-depth]")).to_have_text("0")
    # What its placed replicas cost an hour, as `fedctl cost` sums them (0.24 + 0.06).
    expect(row.locator("[data-cost]")).to_have_text("USD 0.3000/h")
    # With a budget, the budget beside it; over it (lowered below what runs), marked.
    queues = (EXAMPLES / "queues.yaml").read_text(encoding="utf-8")

    def budget(amount: str) -> None:
        text = queues.replace(
            "name: web\nspec:\n", f"name: web\nspec:\n  maxHourlyCost: '{amount}'\n"
        )
        assert text != queues
        status, body = stack.http("POST", f"{API}/apply", text, ctype="application/yaml")
        assert status == 200, body

    budget("2")
    try:
        expect(row.locator("[data-budget]")).to_have_text("of USD 2.0000/h")
        expect(row.locator("[data-over-budget]")).to_have_count(0)
        budget("0.25")
        expect(row.locator("[data-budget]")).to_have_text("of USD 0.2500/h")
        expect(row.locator("[data-over-budget]")).to_have_text("over budget")
        expect(row).to_have_class(re.compile(r"\bover-budget\b"))
    finally:
        status, body = stack.http("POST", f"{API}/apply", queues, ctype="application/yaml")
        assert status == 200, body
    expect(row.locator("[data-over-budget]")).to_have_count(0)
    # What it holds comes from the queue status view: web alone holds anything at the top.
    expect(row.locator(".bar-row.small").first).to_contain_text("100%")
    # Which is not the CLI's SHARE, and the column says so.
    header = page.locator("#queues th", has_text="Holds vs weight")
    expect(header).to_have_attribute("title", re.compile("Not the SHARE column of fedctl get"))
    # At 820 px no bar label is cut and no cost wraps.
    page.set_viewport_size({"width": 820, "height": 1000})
    expect(row.locator(".bar-label")).to_have_text(["holds", "weight"])
    cut = page.eval_on_selector_all(
        "#queues .bar-label, #queues td.cost > div",
        """els => els.filter((e) => {
          const lines = document.createRange();
          lines.selectNodeContents(e);
          return e.scrollWidth > e.clientWidth || lines.getClientRects().length > 1;
        }).map((e) => e.textContent)""",
    )
    assert cut == [], f"cut or wrapped at 820 px: {cut}"
    expect(row.locator("td[title]").first).to_have_attribute(
        "title", re.compile(r"cpu \d+(\.\d+)?/400")
    )
    page.locator('#nav a[data-view="workloads"]').click()
    expect(card.locator(".phase")).to_have_text("Scheduled")
    expect(card.locator("[data-policy]")).to_have_text(
        "policy: none (placed whole on the best cluster)"
    )
    expect(card.locator(".placement [data-target]")).to_have_text(
        [
            re.compile(rf"us-east-cpu {TIMES} 9\s*amd64"),
            re.compile(rf"eu-west-arm {TIMES} 3\s*arm64"),
        ]
    )
    expect(card.locator('[data-verdict-cluster="us-east-a100"]')).to_contain_text(
        "ClusterAffinity: not in clusterNames"
    )


def test_workloads_follow_a_binding_while_others_change_without_pause(
    page: Any, stack: Stack, bindings: codec.TypedStore[Binding]
) -> None:
    """A sweep keeps the scheduler writing Bindings without a pause. The view re-lists at
    most a few times a second while that lasts, instead of waiting for a quiet moment that
    never comes (each event used to put the re-list off again)."""
    open_view(page, stack, "workloads")
    card = page.locator('[data-workload="web/storefront"]')
    expect(card.locator(".phase")).to_have_text("not scheduled")
    busy = keys.binding_key(keys.WorkloadRef("team", "Job.batch", "busy"))
    stop = threading.Event()

    def churn() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            stack.call(lambda n=n: bindings.put(busy, queued("busy", "web", "Pending", f"{n}")))
            stop.wait(0.04)

    writer = threading.Thread(target=churn, daemon=True)
    writer.start()
    try:
        stack.call(lambda: bindings.put(BINDING_KEY, binding("Pending", reason="mid-sweep")))
        expect(card.locator(".reason")).to_have_text("mid-sweep", timeout=4000)
        assert writer.is_alive(), "the writes stopped before the view was checked"
    finally:
        stop.set()
        writer.join(10)
        stack.call(lambda: bindings.delete(busy))


def test_a_namespace_s_card_shows_the_binding_keyed_under_the_cluster_scope(
    page: Any, stack: Stack, bindings: codec.TypedStore[Binding]
) -> None:
    """A cluster-scoped workload's Binding is keyed under `_`; the card looked it up under
    "default" and said "No Binding yet" while the Namespace was placed everywhere."""
    ref = keys.WorkloadRef(keys.CLUSTER_SCOPE, "Namespace", "ml-prod")
    placed = Binding.model_validate(
        {
            "metadata": {"name": "ml-prod", "namespace": keys.CLUSTER_SCOPE},
            "spec": {
                "workload": {"apiVersion": "v1", "kind": "Namespace",
                             "namespace": keys.CLUSTER_SCOPE, "name": "ml-prod"},
                "clusters": [{"name": "us-east-a100", "replicas": 1}],
            },
            "status": {"phase": "Scheduled"},
        }
    )  # fmt: skip
    stack.call(lambda: bindings.put(keys.binding_key(ref), placed))
    try:
        open_view(page, stack, "workloads")
        card = page.locator('[data-workload="ml-prod"]')
        expect(card.locator(".phase")).to_have_text("Scheduled")
        expect(card.locator('.placement [data-target="us-east-a100"]')).to_have_count(1)
        expect(card).not_to_contain_text("No Binding yet")
    finally:
        stack.call(lambda: bindings.delete(keys.binding_key(ref)))


def test_a_finished_job_shows_how_it_ended_and_costs_nothing_more(
    page: Any, stack: Stack, team: Team
) -> None:
    """A job that Succeeded kept the green "Scheduled" of its Binding and "total 2.78/h",
    where `fedctl get workloads` says Succeeded and `fedctl cost` charges it nothing. The
    amounts shown carry the currency, as the Queues view's do."""
    done = team.add("nightly-eval", "ml-prod")
    team.bind(done, queued("nightly-eval", "ml-prod", "Scheduled", cost="2.78"))
    running = team.add("train", "ml-research")
    team.bind(running, queued("train", "ml-research", "Scheduled", cost="0.24"))
    gpus = team.add("finetune", "ml-research")
    team.bind(gpus, queued("finetune", "ml-research", "Scheduled", cost="2.3144"))
    team.finish(done)
    open_view(page, stack, "workloads")
    # Four places above 1/h too, as the CLI shows costs: it read 2.31.
    expect(page.locator('[data-workload="team/finetune"] [data-cost]')).to_have_text(
        "total USD 2.3144/h"
    )
    card = page.locator('[data-workload="team/nightly-eval"]')
    expect(card.locator(".phase")).to_have_text("Succeeded")
    expect(card.locator("[data-cost]")).to_have_text("finished: costs nothing more")
    expect(card.locator("[data-target-cost]")).to_have_count(0)
    expect(card.locator('.placement [data-target="us-east-cpu"]')).to_have_count(1)
    other = page.locator('[data-workload="team/train"]')
    expect(other.locator(".phase")).to_have_text("Scheduled")
    expect(other.locator("[data-cost]")).to_have_text("total USD 0.2400/h")
    expect(other.locator("[data-target-cost]")).to_have_text(" USD 0.2400/h")
    # A job that ends while the page is open: its status is asked for again on a period.
    team.finish(running, "Failed")
    expect(other.locator(".phase")).to_have_text("Failed", timeout=15_000)
    expect(other.locator("[data-cost]")).to_have_text("failed: costs nothing more")


def test_work_placed_where_no_price_is_known_reads_unpriced_not_free(
    page: Any, stack: Stack, team: Team
) -> None:
    """The Queues view showed "USD 0.0000/h" for a queue whose work has no price, and the
    workload card no cost at all, while `fedctl cost` said unpriced."""
    unknown = team.add("train", "ml-research")
    team.bind(unknown, queued("train", "ml-research", "Scheduled"))  # no cost recorded
    open_view(page, stack, "workloads")
    card = page.locator('[data-workload="team/train"]')
    expect(card.locator("[data-target-cost]")).to_have_text(" unpriced")
    expect(card.locator("[data-cost]")).to_have_text("total unpriced")
    page.locator('#nav a[data-view="queues"]').click()
    expect(page.locator('[data-queue="ml-research"] [data-cost]')).to_have_text("unpriced")


def test_a_card_names_missing_dependencies_and_members_whose_dispatching_is_suspended(
    page: Any, stack: Stack, team: Team
) -> None:
    """`fedctl describe` said both; the dashboard's card showed a workload whose pods wait
    for a ConfigMap no member has, and one whose copies its policy holds back, as running
    like any other."""
    held = team.add("report", "ml-prod")
    team.bind(held, queued("report", "ml-prod", "Scheduled", cost="0.24"))
    team.report(
        held,
        phase="Running",
        running=1,
        missingDependencies=["team/ConfigMap/settings"],
        clusters=[{"cluster": "us-east-cpu", "applied": True, "suspended": True}],
    )
    plain = team.add("plain", "ml-prod")
    team.bind(plain, queued("plain", "ml-prod", "Scheduled", cost="0.24"))
    open_view(page, stack, "workloads")
    card = page.locator('[data-workload="team/report"]')
    expect(card.locator("[data-missing]")).to_contain_text(
        "missing dependencies: team/ConfigMap/settings (not in the federation"
    )
    target = card.locator('.placement [data-target="us-east-cpu"]')
    expect(target.locator("[data-suspended]")).to_have_text(" (dispatching suspended)")
    other = page.locator('[data-workload="team/plain"]')
    expect(other.locator(".placement [data-target]")).to_have_count(1)
    expect(other.locator("[data-missing]")).to_have_count(0)
    expect(other.locator("[data-suspended]")).to_have_count(0)


def test_an_object_no_policy_selects_says_it_stays_in_the_federation(
    page: Any, stack: Stack, team: Team
) -> None:
    """Its card said "No Binding yet: the scheduler has not placed this workload", as if
    it waited, where `fedctl get workloads` says it is kept in the federation only."""
    team.add("settings", "ml-prod", kind="ConfigMap")
    open_view(page, stack, "workloads")
    card = page.locator('[data-workload="team/settings"]')
    expect(card.locator("[data-unbound]")).to_have_text(
        "No propagation policy selects it: kept in the federation only.", timeout=15_000
    )


@pytest.fixture
def member_restored(stack: Stack) -> Iterator[None]:
    """The drilled member is Ready again before the next test (the stack is shared)."""
    yield
    wait_until(lambda: all_ready(stack), timeout=30, message="every demo cluster Ready again")


def test_a_drill_s_timeline_renders(page: Any, stack: Stack, member_restored: None) -> None:
    open_view(page, stack, "drills")
    page.locator("#drill-cluster").select_option("eu-west-arm")
    page.locator("#drill-fault").select_option("down")
    page.locator("#drill-duration").fill("4s")
    page.locator("#drill-settle").fill("10s")
    page.locator("#drill-start").click()
    detail = page.locator("#drill-timeline")
    # While it runs: the fault is on the timeline and the samples chart grows.
    expect(detail.locator("[data-phase]")).to_have_text("Running")
    expect(detail.locator('.step[data-event="fault"]')).to_contain_text("down on eu-west-arm")
    expect(detail.locator(".live-chart")).to_be_visible()
    # The cluster monitor notices the member down, then the fault is healed.
    expect(detail.locator('.step[data-event="detected"]')).to_be_visible(timeout=15_000)
    expect(detail.locator("[data-phase]")).to_have_text("Completed", timeout=30_000)
    expect(detail.locator(".step").first).to_be_visible()
    expect(detail.locator('.step[data-event="healed"]')).to_be_visible()
    expect(detail.locator('[data-measure="detect"]')).to_have_text(re.compile(r"^\d+\.\ds$"))
    expect(detail.locator('[data-measure="lost"]')).to_have_text("0")
    expect(detail.locator('[data-measure="double-runs"]')).to_have_text("0")
    expect(detail.locator("img.drill-chart")).to_be_visible()
    assert page.locator("img.drill-chart").evaluate("img => img.naturalWidth") > 0
    # The report is listed as a past drill, and stored where `fedctl drill show` reads it.
    drill_id = detail.locator("h2").inner_text().removeprefix("Drill ")
    expect(page.locator(f'#drill-list [data-drill="{drill_id}"] .phase')).to_have_text("Completed")
    status, report = stack.http("GET", f"{API}/drills/{drill_id}")
    assert status == 200 and report["detect"] is not None and report["lost"] == 0


@pytest.fixture
def stored_drills(stack: Stack) -> Iterator[tuple[str, str]]:
    """A stored drill report, and one a newer release wrote that this one cannot read."""
    assert stack.store is not None
    good, newer = "20261206T230000Z-eu-west-arm", "20261206T231000Z-us-east-cpu"
    report = drills.Report(
        id=good, cluster="eu-west-arm", fault="down", started="2026-12-06T23:00:00+00:00",
        duration=90.0, detect=40.0, replace=70.0, rto=72.0, affected=1, healed_at=90.0,
        workloads=[drills.WorkloadTimeline(STOREFRONT, replaced=70.0, ready=72.0,
                                           outcome="recovered")],
    )  # fmt: skip
    unread = json.loads(drills.encode(report))
    unread["object"]["id"] = newer
    unread["object"]["workloads"][0]["movedBy"] = "eviction"
    writes = [
        st.Put(keys.drill_key(good), drills.encode(report)),
        st.Put(keys.drill_key(newer), json.dumps(unread).encode()),
    ]
    stack.call(lambda: stack.store.commit(writes))
    yield good, newer
    gone = [st.Delete(keys.drill_key(good)), st.Delete(keys.drill_key(newer))]
    stack.call(lambda: stack.store.commit(gone))


def test_the_drill_form_holds_long_enough_to_move_work_and_says_why(
    page: Any, stack: Stack, stored_drills: tuple[str, str]
) -> None:
    """Its default hold of 60 s ended before a plain `fedctl up` had evicted anything
    (detection ~40 s, then a 30 s grace): it is 90 s, as `fedctl drill run`'s, and the form
    says what the hold must outlast on this controller. At 820 px the report's timeline
    was shrunk to unreadable; a report a newer release wrote made the list empty."""
    good, newer = stored_drills
    page.set_viewport_size({"width": 820, "height": 1000})
    open_view(page, stack, "drills")
    expect(page.locator("#drill-duration")).to_have_value("90s")
    # The stack's monitor: 2 s of failures plus a 0.5 s probe; the default 30 s grace.
    timing = page.locator("#drill-timing")
    expect(timing).to_contain_text("marks a member down about 3 s after it stops answering")
    expect(timing).to_contain_text("evicts its work 30 s later")
    expect(timing).to_have_attribute("data-short", "false")
    page.locator("#drill-duration").fill("10s")
    expect(timing).to_have_attribute("data-short", "true")
    expect(timing).to_contain_text("Held 10s, it would measure detection only.")
    page.locator("#drill-fault").select_option("taint")
    expect(timing).to_have_attribute("data-short", "false")
    # Every readable report is listed, and the unreadable one is named with why.
    expect(page.locator(f'#drill-list [data-unreadable="{newer}"]')).to_contain_text("movedBy")
    page.locator(f'#drill-list [data-drill="{good}"]').click()
    chart = page.locator("#drill-timeline img.drill-chart")
    expect(chart).to_be_visible()
    # At its own width (the view re-draws the report every few seconds: ask the one shown).
    page.wait_for_function(
        """() => {
          const img = document.querySelector("#drill-timeline img.drill-chart");
          return img && img.naturalWidth > 0
            && img.getBoundingClientRect().width >= img.naturalWidth - 1;
        }""",
        timeout=5_000,
    )


def test_a_pasted_token_is_kept_and_sent_with_every_api_call(page: Any, stack: Stack) -> None:
    sent: list[str | None] = []
    page.on(
        "request",
        lambda req: sent.append(req.headers.get("authorization")) if API in req.url else None,
    )
    open_view(page, stack, "clusters")
    page.locator("#token-button").click()
    page.locator("#token-input").fill("e2e-token")
    page.locator("#token-dialog button[value=save]").click()
    expect(page.locator("#token-dialog")).not_to_be_visible()
    assert page.evaluate("localStorage.getItem('fedctl.token')") == "e2e-token"
    sent.clear()
    page.reload()
    expect(page.locator('[data-cluster="us-east-cpu"]')).to_be_visible()
    assert sent
    assert set(sent) == {"Bearer e2e-token"}, "every list and watch carries the token"
    page.evaluate("localStorage.removeItem('fedctl.token')")


def test_a_401_asks_for_a_token(page: Any, stack: Stack) -> None:
    page.route(
        f"**{API}/clusters",
        lambda route: route.fulfill(
            status=401, content_type="application/json", body='{"message": "token required"}'
        ),
    )
    open_view(page, stack, "clusters")
    expect(page.locator("#token-dialog")).to_be_visible()
    expect(page.locator("#token-why")).to_contain_text("401")
