"""A pod template's own `kubernetes.io/arch` (its nodeSelector, or a required node affinity
`In`) restricts the arches the scheduler considers, as a policy's `spec.fedctl.arches`
does. Ignored, an Arm-only service went to the cheaper amd64-only cluster, where its pods
could never start."""

from __future__ import annotations

from typing import Any

import pytest

from federation.cache import snapshot as snap
from federation.quota.accounting import Usage
from federation.scheduler import claims, cycle
from policies.loading import load_text
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


def _deployment(pod: str, *, annotations: str = "{}") -> str:
    """A Deployment `svc` in namespace ml whose pod spec starts with `pod` (YAML lines
    indented for `spec.template.spec`)."""
    return (
        "apiVersion: apps/v1\n"
        "kind: Deployment\n"
        f"metadata: {{name: svc, namespace: ml, annotations: {annotations}}}\n"
        "spec:\n"
        "  replicas: 3\n"
        "  selector: {matchLabels: {app: svc}}\n"
        "  template:\n"
        "    metadata: {labels: {app: svc}}\n"
        "    spec:\n"
        f"{pod}"
        "      containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]\n"
    )


ARM_SELECTOR = "      nodeSelector: {kubernetes.io/arch: arm64}\n"
AMD_AFFINITY = (
    "      affinity:\n"
    "        nodeAffinity:\n"
    "          requiredDuringSchedulingIgnoredDuringExecution:\n"
    "            nodeSelectorTerms:\n"
    "            - matchExpressions:\n"
    "              - {key: kubernetes.io/arch, operator: In, values: [amd64]}\n"
)
AMD64_POLICY = (
    "---\n"
    "apiVersion: fedctl.io/v1alpha1\n"
    "kind: PropagationPolicy\n"
    "metadata: {name: svc, namespace: ml}\n"
    "spec:\n"
    "  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: svc}]\n"
    "  fedctl: {arches: [amd64]}\n"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            _deployment(ARM_SELECTOR, annotations="{fedctl.io/chips: amd64}"),
            [
                'k.yaml:10:42: spec.template.spec.nodeSelector["kubernetes.io/arch"]:'
                " kubernetes.io/arch allows arm64, and its fedctl.io/chips accepts only amd64:"
                " it could be placed nowhere (make them agree)"
            ],
            id="an arch its own fedctl.io/chips leaves out",
        ),
        pytest.param(
            _deployment(ARM_SELECTOR + AMD_AFFINITY),
            [
                'k.yaml:10:42: spec.template.spec.nodeSelector["kubernetes.io/arch"]:'
                " kubernetes.io/arch: its nodeSelector and required node affinity allow no"
                " arch together, so its pods could run on no node"
            ],
            id="a nodeSelector and a node affinity that exclude each other",
        ),
        pytest.param(_deployment(ARM_SELECTOR), [], id="an arch alone is the template's own"),
    ],
)
def test_a_template_arch_nothing_could_place_is_refused_at_its_field(
    text: str, expected: list[str]
) -> None:
    result = load_text(text, filename="k.yaml")

    assert [str(f) for f in result.findings if "arch" in str(f)] == expected
    assert result.ok is not bool(expected)


def test_a_template_arch_the_claiming_policy_leaves_out_is_refused_at_apply() -> None:
    """The policy in the same files accepts amd64 only: `fedctl apply` (and validate, and
    an offline plan) refuse the Arm-only template, naming its line and field."""
    result = claims.against(
        load_text(_deployment(ARM_SELECTOR) + AMD64_POLICY, filename="k.yaml"), []
    )

    assert [str(f) for f in result.errors] == [
        'k.yaml:10:42: spec.template.spec.nodeSelector["kubernetes.io/arch"]:'
        " kubernetes.io/arch allows arm64, and PropagationPolicy ml/svc, which claims this"
        " workload, accepts only amd64: it could be placed nowhere (make them agree)"
    ]
