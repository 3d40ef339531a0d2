"""A pod template's own `kubernetes.io/arch` (its nodeSelector, or a required node affinity
`In`) restricts the arches the scheduler considers, as a policy's `spec.fedctl.arches`
does. Ignored, an Arm-only service went to the cheaper amd64-only cluster, where its pods
could never start."""

from __future__ import annotations

from typing import Any

import pytest

from federation.cache import snapshot as snap
from federation.quota.accounting import Usage
from federation.scheduler import cycle
from policies.models.workload import Workload
from tests.unit.scheduler.fleet import cluster, flavor, job, placed, run, workload

CHEAP_AMD = cluster("us-cpu", flavor(), cpu_price="0.01")
ARM = cluster("eu-arm", flavor(arch="arm64"))
AMD = cluster("us-cpu", flavor())
CHEAP_ARM = cluster("eu-arm", flavor(arch="arm64"), cpu_price="0.01")


def pinned(pod: dict[str, Any]) -> Workload:
    """A one-pod Deployment whose pod spec also has `pod`'s fields."""
    wire = workload("svc", kind="Deployment", cpu="2").to_wire()
    wire["spec"]["template"]["spec"].update(pod)
    return Workload.model_validate(wire)


def affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    required = {"nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}
    return {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    }


def arch_in(*values: str) -> dict[str, Any]:
    return {"key": "kubernetes.io/arch", "operator": "In", "values": list(values)}


@pytest.mark.parametrize(
    ("pod", "fleet", "where", "chip"),
    [
        pytest.param({"nodeSelector": {"kubernetes.io/arch": "arm64"}}, [CHEAP_AMD, ARM],
                     "eu-arm", "arm64", id="nodeSelector arm64 passes over a cheaper amd64 one"),
        pytest.param({"nodeSelector": {"kubernetes.io/arch": "amd64"}}, [AMD, CHEAP_ARM],
                     "us-cpu", "amd64", id="nodeSelector amd64 is not moved to a cheaper Arm one"),
        pytest.param(affinity([arch_in("arm64")]), [CHEAP_AMD, ARM], "eu-arm", "arm64",
                     id="a required node affinity In arm64 holds too"),
        pytest.param(affinity([arch_in("arm64")], [{"key": "disk", "operator": "Exists"}]),
                     [CHEAP_AMD, ARM], "us-cpu", "amd64",
                     id="a term that names no arch allows any (terms are ORed)"),
        pytest.param({"nodeSelector": {"disk": "ssd"}}, [CHEAP_AMD, ARM], "us-cpu", "amd64",
                     id="a selector without the arch label leaves the arch to the scheduler"),
    ],
)  # fmt: skip
def test_the_template_s_own_arch_decides_where_it_may_go(
    pod: dict[str, Any], fleet: list[Any], where: str, chip: str
) -> None:
    result = run(fleet, [job(pinned(pod))])

    assert placed(result) == {"svc": {where: 1}}
    (binding,) = result.bindings
    assert [t.chip for t in binding.spec.clusters] == [chip]


FEDCTL = {"arches": ["amd64"]}


def test_a_template_arch_its_policy_s_arches_leave_out_waits_and_says_why() -> None:
    arm_only = pinned({"nodeSelector": {"kubernetes.io/arch": "arm64"}})

    result = run([AMD, ARM], [job(arm_only, fedctl=FEDCTL)])

    assert placed(result) == {}
    assert "2 filtered by chips" in result.reasons["team/Deployment.apps/svc"]
    planned = cycle.Scheduler().plan(job(arm_only, fedctl=FEDCTL), snap.build([ARM]), Usage())
    (verdict,) = planned.verdicts
    assert "kubernetes.io/arch" in " ".join(verdict.reasons), verdict
