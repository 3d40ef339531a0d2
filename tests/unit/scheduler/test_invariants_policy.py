"""What no placement may do under the rest of a Karmada placement, over random fleets and
policies: go to a cluster its affinity leaves out (names, label and field selectors,
exclude, ordered `clusterAffinities` groups), to a tainted cluster it does not tolerate or
one that is down, or past its spread constraints (by cluster, region, zone, provider or
label, as Karmada reads them); divide replicas other than as its replica scheduling says;
place pods beyond a flavor's room; or lose a workload. Three cycles a seed, each adding
services and Jobs at several priorities, so later ones meet clusters the earlier ones
filled and preempt some of them.
"""

from __future__ import annotations

import random

import pytest

from federation.cache import snapshot as snap
from federation.queue.pending import PendingJob, PendingStore
from federation.quota.accounting import Usage
from federation.scheduler import cycle
from federation.settings import SchedulerSettings
from policies.models.cluster import Cluster, Taint
from policies.models.common import ClusterAffinity, Toleration
from tests.unit.scheduler.fleet import NOW, cluster, flavor, job, workload
from tests.unit.scheduler.test_invariants import A100, H100, _check_room, replica_scheduling

REGIONS = ("us", "eu", "ap")
ZONES = ("a", "b")
PROVIDERS = ("aws", "gcp")
TIERS = ("gold", "silver")
TAINT = Taint(key="k", effect="NoSchedule")
EVICT = Taint(key="e", value="x", effect="NoExecute")


def _fleet(rng: random.Random) -> list[Cluster]:
    out = []
    for i in range(rng.randint(3, 7)):
        flavors = [flavor(cpu=str(rng.choice([8, 16])), nodes=rng.randint(1, 3))]
        if rng.random() < 0.4:
            flavors.append(flavor(chip=A100, devices=4, cpu="64", nodes=rng.randint(1, 2)))
        if rng.random() < 0.3:
            flavors.append(flavor(chip=H100, devices=8, cpu="96", nodes=1))
        taints = [t for t in (TAINT, EVICT) if rng.random() < 0.15]
        out.append(
            cluster(
                f"c{i}",
                *flavors,
                region=rng.choice(REGIONS),
                zone=rng.choice(ZONES),
                provider=rng.choice(PROVIDERS),
                labels={"tier": rng.choice(TIERS)} if rng.random() < 0.8 else {},
                taints=taints,
                ready=rng.random() > 0.1,
                cpu_price=str(rng.choice(["0.04", "0.05", "0.06"])),
                gpu_prices={A100: rng.choice(["2", "3"]), H100: rng.choice(["4", "5"])},
            )
        )
    return out


def _affinity(rng: random.Random, names: list[str]) -> dict[str, object]:
    """One random cluster filter, of every part the model knows."""
    term: dict[str, object] = {}
    if rng.random() < 0.3:
        term["clusterNames"] = sorted(rng.sample(names, rng.randint(1, len(names))))
    if rng.random() < 0.3:
        term["labelSelector"] = rng.choice(
            [
                {"matchLabels": {"tier": rng.choice(TIERS)}},
                {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
                {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]},
            ]
        )
    if rng.random() < 0.3:
        key, values = rng.choice([("region", REGIONS), ("zone", ZONES), ("provider", PROVIDERS)])
        term["fieldSelector"] = {
            "matchExpressions": [
                {
                    "key": key,
                    "operator": rng.choice(["In", "NotIn"]),
                    "values": rng.sample(values, rng.randint(1, len(values) - 1)),
                }
            ]
        }
    if rng.random() < 0.2:
        term["exclude"] = rng.sample(names, 1)
    return term


def _policy(rng: random.Random, names: list[str]) -> tuple[dict[str, object], str]:
    """A random placement and its replica scheduling's kind (`replica_scheduling`; under
    "static" weights neither capacity nor spread constraints bound it, as in Karmada)."""
    kind, scheduling = replica_scheduling(rng, names)
    placement: dict[str, object] = {"replicaScheduling": scheduling}
    roll = rng.random()
    if roll < 0.4:
        placement["clusterAffinity"] = _affinity(rng, names)
    elif roll < 0.6:
        placement["clusterAffinities"] = [
            {"affinityName": f"group-{i}", **_affinity(rng, names)}
            for i in range(rng.randint(2, 3))
        ]
    if rng.random() < 0.3:
        placement["clusterTolerations"] = rng.choice(
            [
                [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
                [{"key": "e", "operator": "Equal", "value": "x", "effect": "NoExecute"}],
                [{"operator": "Exists"}],
            ]
        )
    if rng.random() < 0.5:
        constraints = []
        for by in rng.sample(["cluster", "region", "zone", "provider", "label"], 2):
            if rng.random() < 0.5:
                low = rng.randint(1, 2)
                entry: dict[str, object] = {"minGroups": low, "maxGroups": low + rng.randint(0, 1)}
                if by == "label":
                    entry["spreadByLabel"] = "tier"
                else:
                    entry["spreadByField"] = by
                constraints.append(entry)
        if constraints:
            placement["spreadConstraints"] = constraints
    return placement, kind


def _division(kind: str, scheduling: str) -> str:
    """How the replicas go: "single" (whole to one cluster: a Job unless its policy divides
    it by weight), "duplicated", "static" or "divided"."""
    if kind == "Job" and scheduling in ("duplicated", "aggregated"):
        return "single"
    return {"dynamic": "divided", "aggregated": "divided"}.get(scheduling, scheduling)


def _matches(term: ClusterAffinity, c: Cluster) -> bool:
    name, spec = c.metadata.name, c.spec
    if term.cluster_names and name not in term.cluster_names:
        return False
    if name in term.exclude:
        return False
    if term.label_selector is not None:
        labels = c.metadata.labels
        if any(labels.get(k) != v for k, v in term.label_selector.match_labels.items()):
            return False
        for e in term.label_selector.match_expressions:
            has, value = e.key in labels, labels.get(e.key)
            ok = {
                "In": has and value in e.values,
                "NotIn": not has or value not in e.values,
                "Exists": has,
                "DoesNotExist": not has,
            }[e.operator]
            if not ok:
                return False
    if term.field_selector is not None:
        for f in term.field_selector.match_expressions:
            value = getattr(spec, f.key)
            if (value in f.values) != (f.operator == "In"):
                return False
    return True


def _tolerated(taint: Taint, tolerations: list[Toleration]) -> bool:
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.key is None and t.operator == "Exists":
            return True
        if t.key == taint.key and (t.operator == "Exists" or t.value == taint.value):
            return True
    return False


def _group(c: Cluster, grouping: str) -> str:
    if grouping == "cluster":
        return c.metadata.name
    if grouping.startswith("label:"):
        return c.metadata.labels.get(grouping.removeprefix("label:"), "")
    return str(getattr(c.spec, grouping))


def _check(
    result: cycle.CycleResult,
    jobs: dict[str, tuple[PendingJob, str]],
    fleet: dict[str, Cluster],
) -> None:
    for a in result.admitted:
        pending, how = jobs[str(a.ref)]
        where, replicas = dict(a.placement), pending.workload.replicas
        assert where and all(n > 0 for n in where.values()), f"{a.ref}: {where}"
        placement = pending.placement
        if placement is None or how == "single":  # whole to the single best cluster
            assert len(where) == 1 and sum(where.values()) == replicas, f"{a.ref}: {where}"
            if placement is None:
                continue
        elif how == "duplicated":
            assert set(where.values()) == {replicas}, f"{a.ref}: {where}"
        else:
            assert sum(where.values()) == replicas, f"{a.ref}: {where}"
        members = [fleet[n] for n in where]
        for c in members:
            assert c.status is not None and c.status.ready(), f"{a.ref} on {c.metadata.name}, down"
            for taint in c.spec.taints:
                assert _tolerated(taint, placement.cluster_tolerations), (
                    f"{a.ref} on {c.metadata.name}, tainted {taint.key}"
                )
        terms = placement.affinity_terms
        assert any(all(_matches(t, c) for c in members) for t in terms), (
            f"{a.ref}: {sorted(where)} in no one affinity group"
        )
        if how in ("static", "single"):  # one cluster meets no minGroups above 1
            continue
        constraints = placement.spread_constraints
        assert sum(c.grouping != "cluster" for c in constraints) <= 1, f"{a.ref} placed"
        spans = {c.grouping: len({_group(m, c.grouping) for m in members}) for c in constraints}
        for constraint in constraints:
            groups = spans[constraint.grouping]
            cap = constraint.max_groups
            if cap and constraint.grouping == "cluster":  # one cluster per group, as Karmada
                cap = max([cap, *(n for by, n in spans.items() if by != "cluster")])
            if cap:
                assert groups <= cap, f"{a.ref}: {constraint} {where}"
            if how == "duplicated":  # divided, a cluster given 0 replicas drops out
                assert groups >= constraint.min_groups, f"{a.ref}: {constraint} {where}"
    admitted = {str(a.ref) for a in result.usage.admissions()}
    waiting = {str(j.ref) for j in result.pending.jobs()}
    for key in jobs:  # none lost: admitted now or before, or still waiting
        assert (key in admitted) != (key in waiting), f"{key}: admitted and waiting, or neither"
        if key in result.reasons:
            assert result.reasons[key], f"{key} waits without a reason"


@pytest.mark.parametrize("seed", range(200))
def test_no_placement_leaves_its_policy(seed: int) -> None:
    rng = random.Random(seed)
    clusters = _fleet(rng)
    fleet = {c.metadata.name: c for c in clusters}
    names = list(fleet)
    snapshot = snap.build(clusters)
    scheduler = cycle.Scheduler(SchedulerSettings())
    usage, pending = Usage(), PendingStore()
    jobs: dict[str, tuple[PendingJob, str]] = {}
    statics: set[str] = set()
    for number in range(3):
        for i in range(rng.randint(4, 12)):
            placement, how = _policy(rng, names)
            gpu = rng.random() < 0.25
            w = workload(
                f"s{number}-{i}",
                kind=rng.choice(["Deployment", "Job"]),
                priority=rng.randint(0, 2),
                cpu=rng.choice(["1", "2", "4"]),
                replicas=rng.randint(1, 5),
                **({"gpus": 1, "chips": rng.choice([A100, f"{H100},{A100}"])} if gpu else {}),  # type: ignore[arg-type]
            )
            j = job(w, placement=placement if rng.random() < 0.85 else None, seq=number * 100 + i)
            jobs[str(j.ref)] = (j, _division(w.kind, how))
            if how == "static" and j.placement is not None:
                statics.add(str(j.ref))
            pending.add(j)
        result = scheduler.run_cycle(snapshot, pending, usage, NOW)
        _check(result, jobs, fleet)
        _check_room([a for a in result.usage.admissions() if str(a.ref) not in statics], snapshot)
        usage, pending = result.usage, result.pending
