"""What `fedctl apply`, `fedctl plan` and the policy editor say about a policy that claims
less than it selects: each case names the workload, the policy keeping it and the rule that
decides; a policy that claims everything it selects says nothing."""

from __future__ import annotations

import pytest

from federation.scheduler import claims, plan, spread
from policies.loading import load_text
from policies.models.common import ResourceSelector
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import workload
from tests.unit.scheduler.test_claim_preemption import LOW, LOW_ID, WEB, cpp, pp

BY_NAME = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]
BY_LABEL = [{"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {}}}]


def notes(
    proposed: plan.AnyPolicy, *others: plan.AnyPolicy, recorded: str | None = None
) -> list[str]:
    return claims.notes([proposed], [WEB], [proposed, *others], recorded=lambda _: recorded)


def test_a_policy_that_claims_what_it_selects_says_nothing() -> None:
    assert notes(LOW) == []
    # It outranks the policy holding the workload and may preempt it.
    taker = pp("taker", priority=5, preemption="Always")
    assert notes(taker, LOW, recorded=LOW_ID) == []


def test_a_policy_that_selects_nothing_says_so() -> None:
    elsewhere = pp(
        "typo", selectors=[{"apiVersion": "apps/v1", "kind": "Deployment", "name": "wbe"}]
    )
    other_ns = pp("lost", namespace="default")
    for policy, name in ((elsewhere, "team/typo"), (other_ns, "default/lost")):
        (line,) = notes(policy)
        assert line.startswith(f"PropagationPolicy {name} selects no workload")


@pytest.mark.parametrize(
    ("proposed", "holder", "recorded", "rule"),
    [
        pytest.param(
            pp("a-first"),
            LOW,
            LOW_ID,
            "it stays with PropagationPolicy team/low, which claimed it first: a policy takes"
            " a claimed workload only with `preemption: Always` and a priority above 0"
            " (this one: preemption Never, priority 0)",
            id="held by an earlier claim: preemption and a higher priority needed",
        ),
        pytest.param(
            pp("a-first", priority=3, preemption="Never"),
            LOW,
            LOW_ID,
            "which claimed it first: a policy takes a claimed workload only with"
            " `preemption: Always` and a priority above 0 (this one: preemption Never,"
            " priority 3)",
            id="a higher priority alone does not take it",
        ),
        pytest.param(
            cpp("wide", priority=9, preemption="Always"),
            LOW,
            LOW_ID,
            "claims it: a PropagationPolicy comes before a ClusterPropagationPolicy",
            id="a cluster policy never takes from a namespaced one",
        ),
        pytest.param(
            pp("a-first", priority=-5),
            cpp("wide", priority=9),
            "ClusterPropagationPolicy/wide",
            "it stays with ClusterPropagationPolicy wide, which claimed it first: a policy"
            " takes a claimed workload only with `preemption: Always` (this one: preemption"
            " Never, priority -5)",
            id="a namespaced policy takes from a cluster one only with preemption",
        ),
        pytest.param(
            pp("z-last"),
            LOW,
            None,
            "PropagationPolicy team/low claims it: both have priority 0 and select it by"
            " kind alone: the name first in alphabetical order claims",
            id="unclaimed: the name decides a tie",
        ),
        pytest.param(
            pp("a-first"),
            pp("z-byname", selectors=BY_NAME),
            None,
            "PropagationPolicy team/z-byname claims it: it selects by name, this one by kind alone",
            id="unclaimed: the closer selector wins",
        ),
        pytest.param(
            pp("a-first", selectors=BY_LABEL),
            pp("z-high", priority=2),
            None,
            "claims it: its priority 2 is above 0",
            id="unclaimed: the higher priority wins",
        ),
        pytest.param(
            cpp("a-wide", priority=9),
            LOW,
            None,
            "claims it: a PropagationPolicy comes before a ClusterPropagationPolicy",
            id="unclaimed: a namespaced policy before a cluster one",
        ),
    ],
)
def test_a_policy_outranked_or_held_back_names_the_keeper_and_the_rule(
    proposed: plan.AnyPolicy, holder: plan.AnyPolicy, recorded: str | None, rule: str
) -> None:
    (line,) = notes(proposed, holder, recorded=recorded)
    assert line.startswith(f"{claims.policy_label(proposed)} selects Deployment team/web, but")
    assert rule in line
    assert claims.policy_label(holder) in line


def test_many_held_workloads_are_counted_past_the_first_few() -> None:
    many = [workload(f"web-{i:02d}", kind="Deployment", replicas=1) for i in range(12)]
    proposed = pp("z-last")
    lines = claims.notes([proposed], many, [proposed, LOW])
    assert len(lines) == claims.SHOWN + 1
    assert lines[-1] == (
        "PropagationPolicy team/z-last: 7 more of the 12 workloads it selects are claimed"
        " by other policies"
    )
    assert "Deployment team/web-00" in lines[0]


def test_a_policy_selecting_only_namespaces_or_config_maps_selects_something() -> None:
    namespace = Workload.model_validate(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    )
    everywhere = cpp("namespaces")
    everywhere = everywhere.model_copy(
        update={
            "spec": everywhere.spec.model_copy(
                update={
                    "resource_selectors": [ResourceSelector(api_version="v1", kind="Namespace")]
                }
            )
        }
    )
    assert claims.notes([everywhere], [namespace], [everywhere]) == []


def test_deleting_a_policy_says_where_its_workloads_go() -> None:
    other = workload("other", kind="Deployment", replicas=1)
    # LOW claimed both (recorded); HIGH selects only web by name.
    high = pp("high", selectors=BY_NAME)
    lines = claims.on_delete(LOW, [WEB, other], [high], recorded=lambda _: LOW_ID)
    assert lines == [
        "Deployment team/web, which PropagationPolicy team/low claimed, is placed again"
        " under PropagationPolicy team/high",
        "PropagationPolicy team/low claimed Deployment team/other, which no other policy"
        " selects: they stay where they are, their copies running, until a policy claims"
        " them",
    ]
    # A policy that claims nothing (HIGH holds web by record) says nothing when deleted.
    assert (
        claims.on_delete(LOW, [WEB], [high], recorded=lambda _: "PropagationPolicy/team/high") == []
    )


def test_an_affinity_no_joined_cluster_matches_is_warned_at_its_place() -> None:
    text = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: p, namespace: team}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement:
    clusterAffinities:
      - affinityName: east
        fieldSelector:
          matchExpressions: [{key: region, operator: In, values: [us-east1]}]
      - affinityName: gold
        labelSelector: {matchLabels: {tier: gold}}
      - affinityName: named
        clusterNames: [a]
      - affinityName: fine
        labelSelector: {matchLabels: {tier: silver}}
"""
    loaded = load_text(text, filename="p.yaml")
    members = [
        spread.ScoredCluster("a", 0, region="us-east", labels={"tier": "silver"}),
        spread.ScoredCluster("b", 0, region="eu-west", labels={"tier": "bronze"}),
    ]
    found = claims.affinity_findings(loaded, members)
    assert [(f.line, f.path) for f in found] == [
        (8, "spec.placement.clusterAffinities[0]"),
        (11, "spec.placement.clusterAffinities[1]"),
    ]
    assert "(regions here: eu-west, us-east): group east is passed over" in found[0].message
    assert "(labels here: tier=bronze, tier=silver)" in found[1].message
    assert claims.affinity_findings(loaded, []) == []  # nothing joined yet: nothing to judge


def test_a_spread_the_usable_clusters_cannot_form_is_warned() -> None:
    text = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: p, namespace: team}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement:
    clusterAffinity: {labelSelector: {matchLabels: {tier: silver}}}
    spreadConstraints:
      - {spreadByField: region, minGroups: 2}
      - {spreadByLabel: zone-label, minGroups: 1}
      - {spreadByField: cluster, minGroups: 2}
"""
    members = [
        spread.ScoredCluster("a", 0, region="us-east", labels={"tier": "silver"}),
        spread.ScoredCluster("b", 0, region="us-east", labels={"tier": "silver"}),
        spread.ScoredCluster("c", 0, region="eu-west", labels={"tier": "bronze"}),  # not usable
    ]
    found = claims.affinity_findings(load_text(text, filename="p.yaml"), members)
    assert [(f.line, f.path) for f in found] == [
        (9, "spec.placement.spreadConstraints[0].minGroups")
    ]
    assert "span 1 regions (us-east)" in found[0].message


@pytest.mark.parametrize(
    ("scheduling", "warned"),
    [
        pytest.param("{replicaSchedulingType: Divided}", False, id="divided, no weights"),
        pytest.param(
            "{replicaSchedulingType: Divided, weightPreference: {staticWeightList:"
            " [{targetCluster: {clusterNames: [a]}, weight: 1}]}}",
            False,
            id="static weights",
        ),
        pytest.param(
            "{replicaSchedulingType: Divided, weightPreference:"
            " {dynamicWeight: AvailableReplicas}}",
            True,
            id="dynamic weight",
        ),
        pytest.param("{replicaSchedulingType: Duplicated}", True, id="duplicated"),
    ],
)
def test_a_spread_the_scheduler_ignores_is_not_warned_as_leaving_work_pending(
    scheduling: str, warned: bool
) -> None:
    """Divided by static weights (none given counts as equal ones) places the workload
    whatever the spread says, as in Karmada; the loader's notice says the constraints are
    ignored, so a `minGroups` finding that it stays Pending contradicted it."""
    text = f"""\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: p, namespace: team}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment}}]
  placement:
    replicaScheduling: {scheduling}
    spreadConstraints:
      - {{spreadByField: region, minGroups: 2}}
      - {{spreadByField: cluster, minGroups: 5}}
"""
    members = [
        spread.ScoredCluster("a", 0, region="us-east"),
        spread.ScoredCluster("b", 0, region="us-east"),
    ]
    loaded = load_text(text, filename="p.yaml")
    found = claims.affinity_findings(loaded, members)
    paths = [f.path for f in found]
    assert paths == (
        [
            "spec.placement.spreadConstraints[0].minGroups",
            "spec.placement.spreadConstraints[1].minGroups",
        ]
        if warned
        else []
    )
    ignored = [f for f in loaded.warnings if f.path == "spec.placement.spreadConstraints"]
    assert bool(ignored) is not warned  # one or the other, never both
