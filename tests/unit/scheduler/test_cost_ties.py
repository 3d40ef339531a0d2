"""Clusters whose rounded scores tie are told apart by the weighted sum the rounding hid:
with every other score equal, the cheaper cluster wins, not the first name."""

from __future__ import annotations

from pathlib import Path

import pytest

from federation import errors, settings
from federation.scheduler import explain, plan
from federation.scheduler.plugins import default_registry
from tests.unit.scheduler import fleet

PROFILE = """
clusters:
  - name: aa-mid
    region: r
    nodePools: [{name: m, count: 2, arch: amd64, cpu: "32", memory: 128Gi}]
    prices: {onDemand: {cpuCoreHour: 0.011, memoryGiBHour: 0.001}}
  - name: mm-dear
    region: r
    nodePools: [{name: m, count: 2, arch: amd64, cpu: "32", memory: 128Gi}]
    prices: {onDemand: {cpuCoreHour: 0.11, memoryGiBHour: 0.001}}
  - name: zz-cheap
    region: r
    nodePools: [{name: m, count: 2, arch: amd64, cpu: "32", memory: 128Gi}]
    prices: {onDemand: {cpuCoreHour: 0.010, memoryGiBHour: 0.001}}
"""
# Cost parts: zz-cheap 100, aa-mid 99 (0.001 dearer of a 0.1 range); with the other parts
# equal both totals round to the same integer.

SERVICE = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: web}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: c
          resources: {requests: {cpu: "1", memory: 1Gi}}
"""

AGGREGATED = """
apiVersion: fedctl.io/v1alpha1
kind: PropagationPolicy
metadata: {name: api, namespace: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: api}]
  placement:
    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}
"""


def files(tmp_path: Path, *docs: str, fleet: str = PROFILE) -> tuple[list[Path], Path]:
    """Each document in a file of its own, and the fleet's profile."""
    paths = []
    for i, doc in enumerate(docs):
        paths.append(tmp_path / f"doc{i}.yaml")
        paths[-1].write_text(doc, encoding="utf-8")
    profile = tmp_path / "fleet.yaml"
    profile.write_text(fleet, encoding="utf-8")
    return paths, profile


@pytest.mark.parametrize("docs", [(SERVICE,), (SERVICE, AGGREGATED)], ids=["whole", "aggregated"])
def test_the_cheaper_of_two_clusters_whose_rounded_totals_tie_wins(
    tmp_path: Path, docs: tuple[str, ...]
) -> None:
    paths, profile = files(tmp_path, *docs)
    (planned,) = plan.plan_files(paths, profile=profile)
    verdicts = {v.cluster: v for v in planned.plan.verdicts}
    assert verdicts["aa-mid"].score == verdicts["zz-cheap"].score  # the rounded totals tie
    assert verdicts["zz-cheap"].scores["cost"] > verdicts["aa-mid"].scores["cost"]
    assert planned.plan.placement == {"zz-cheap": 2}


def test_score_weights_are_read_from_the_environment_over_the_defaults() -> None:
    for given in ("cost=0,affinity=5", '{"cost": 0, "affinity": 5}'):
        read = settings.from_env({"FEDCTL_SCHEDULER__SCORE_WEIGHTS": given})
        assert read.scheduler.score_weights == {
            **settings.SCORE_WEIGHTS,
            "cost": 0,
            "affinity": 5,
        }


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("costs=2", "no score plugin 'costs': the score plugins are cost, binpack"),
        ("cost=-1", "the weight of cost must be 0 or more"),
        ("cost=high", "the weight of cost is not a whole number"),
        ("cost", "expected PLUGIN=WEIGHT"),
    ],
)
def test_a_wrong_score_weight_is_refused_with_the_variable_named(given: str, said: str) -> None:
    with pytest.raises(errors.Invalid) as caught:
        settings.from_env({"FEDCTL_SCHEDULER__SCORE_WEIGHTS": given})
    assert "FEDCTL_SCHEDULER__SCORE_WEIGHTS" in str(caught.value)
    assert said in str(caught.value)


def test_the_settings_name_every_score_plugin_the_registry_builds() -> None:
    built = {n.removeprefix("score:") for n in default_registry().names() if n.startswith("score:")}
    assert built == set(settings.SCORE_WEIGHTS)


def test_weights_change_the_choice_as_set(tmp_path: Path) -> None:
    """With cost weighed 0 the cheap cluster has nothing over the others: name order."""
    paths, profile = files(tmp_path, SERVICE)
    costless = settings.SchedulerSettings(score_weights={"cost": 0})
    (planned,) = plan.plan_files(paths, profile=profile, settings=costless)
    assert planned.plan.placement == {"aa-mid": 2}


CAPPED = """
apiVersion: fedctl.io/v1alpha1
kind: PropagationPolicy
metadata: {name: api, namespace: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: api}]
  placement:
    clusterAffinity: {clusterNames: [aa-mid, mm-dear]}
  fedctl: {maxHourlyCost: "0.0215"}
"""


def test_a_cap_no_cluster_meets_names_the_nearest_miss_to_four_places(tmp_path: Path) -> None:
    """2 pods of 1 core and 1 GiB: aa-mid 0.0240/h, mm-dear 0.2220/h; the cap 0.0215 read
    as 0.02 at two places, and the reason quoted the first cluster by name, unnamed."""
    dear_first = PROFILE.replace("mm-dear", "ab-dear")
    paths, profile = files(
        tmp_path, SERVICE, CAPPED.replace("mm-dear", "ab-dear"), fleet=dear_first
    )
    (planned,) = plan.plan_files(paths, profile=profile)
    assert planned.plan.placement == {}
    assert planned.plan.reason == (
        "the cheapest of the 2 clusters left, aa-mid, its copy costs 0.0240/h,"
        " above maxHourlyCost 0.0215"
    )


TRAINING = """
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: ml
  annotations: {fedctl.io/expected-duration: 2h30m}
spec:
  parallelism: 2
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: c
          resources: {requests: {cpu: "2", memory: 1Gi}}
"""


def test_a_plan_says_what_the_whole_run_is_expected_to_cost(tmp_path: Path) -> None:
    """The duration ranks nothing (it scales every cluster alike), so it showed nowhere:
    a plan now gives the run's expected cost beside the hourly one; services none."""
    paths, profile = files(tmp_path, TRAINING, SERVICE)
    job, service = plan.plan_files(paths, profile=profile)
    # zz-cheap: 2 pods x (2 x 0.010 + 1 x 0.001) = 0.042/h, over 2.5 h
    assert job.plan.to_json()["expectedHours"] == 2.5
    assert job.plan.to_json()["expectedCost"] == "0.1050"
    assert "total cost 0.0420 USD/h, 0.1050 USD over 2.5h expected" in plan.render(job)
    assert service.plan.to_json()["expectedCost"] is None
    assert "expected" not in plan.render(service)


ROOMY_DEAR = """
clusters:
  - name: cheap
    region: r
    nodePools: [{name: m, count: 1, arch: amd64, cpu: "4", memory: 16Gi}]
    prices: {onDemand: {cpuCoreHour: 0.01, memoryGiBHour: 0.001}}
  - name: dear
    region: r
    nodePools: [{name: m, count: 4, arch: amd64, cpu: "32", memory: 128Gi}]
    prices: {onDemand: {cpuCoreHour: 0.05, memoryGiBHour: 0.001}}
"""


@pytest.mark.parametrize(
    ("policy", "why"),
    [
        pytest.param(AGGREGATED, explain.AGGREGATED, id="aggregated"),
        pytest.param(
            AGGREGATED.replace(
                "replicaDivisionPreference: Aggregated",
                "replicaDivisionPreference: Weighted,"
                " weightPreference: {dynamicWeight: AvailableReplicas}",
            ),
            explain.DYNAMIC,
            id="dynamic weights",
        ),
        pytest.param(None, None, id="no policy: the scores choose"),
    ],
)
def test_a_division_by_free_replicas_says_so_on_the_clusters_it_chose(
    tmp_path: Path, policy: str | None, why: str | None
) -> None:
    """Aggregated chose the dearer cluster with more room over the cheaper, higher-scored
    one, as Karmada's does, and nothing said why: the explanation read as a mistake."""
    paths, profile = files(tmp_path, SERVICE, *([policy] if policy else []), fleet=ROOMY_DEAR)
    (planned,) = plan.plan_files(paths, profile=profile)
    verdicts = {v.cluster: v for v in planned.plan.verdicts}
    assert verdicts["cheap"].score > verdicts["dear"].score
    chosen = [v for v in planned.plan.verdicts if v.selected]
    assert chosen and all((why in v.reasons) == (why is not None) for v in chosen)
    if why is None:
        assert all(not v.reasons for v in chosen)
    assert all(why not in v.reasons for v in planned.plan.verdicts if not v.selected)
    if policy is AGGREGATED:
        assert planned.plan.placement == {"dear": 2}


def test_the_binding_of_an_aggregated_service_says_why_its_cluster_was_chosen() -> None:
    aggregated = {
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Aggregated",
        }
    }
    clusters = [
        fleet.cluster("cheap", fleet.flavor(cpu="4", nodes=1), cpu_price="0.01"),
        fleet.cluster("dear", fleet.flavor(cpu="32", nodes=4), cpu_price="0.05"),
    ]
    service = fleet.job(fleet.workload("api", kind="Deployment", replicas=2), placement=aggregated)
    result = fleet.run(clusters, [service])
    (binding,) = result.bindings
    assert binding.placement() == {"dear": 2}
    verdicts = {v.cluster: v for v in binding.spec.explanation}
    assert verdicts["dear"].selected and verdicts["dear"].reasons == [explain.AGGREGATED]
    assert verdicts["cheap"].score > verdicts["dear"].score and not verdicts["cheap"].reasons
