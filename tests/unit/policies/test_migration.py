"""What a team moving from Kueue or Volcano writes, and what `validate` says of it.

From a migration audit: a Job labelled with Kueue's queue went to the uncapped default
queue without a word; a ClusterQueue was told it was a misspelt `Cluster` and stored in
namespace `default`; a Volcano Queue could not be stored at all; a Queue translated with
Volcano's `guarantee.resource` or Kueue's `cohort` got errors naming no fedctl field; a
20-digit priority loaded; and a job in a namespace its queue does not serve was accepted
silently although the queue was in the same files. Each case here is what the loader,
which both `fedctl validate` and `fedctl apply` run, now says, at its line.
"""

from __future__ import annotations

import pytest

from policies.loading import load_text
from policies.models import kinds
from policies.models.workload import Workload


@pytest.mark.parametrize(
    ("api_version", "kind", "instead"),
    [
        pytest.param("kueue.x-k8s.io/v1beta1", "ClusterQueue", "cohort -> spec.parent",
                     id="ClusterQueue, once told it was a misspelt Cluster"),
        pytest.param("kueue.x-k8s.io/v1beta1", "LocalQueue", "spec.namespaces",
                     id="LocalQueue"),
        pytest.param("kueue.x-k8s.io/v1beta1", "ResourceFlavor", "accelerator/<chip model>",
                     id="ResourceFlavor, once told it was a misspelt ResourceQuota"),
        pytest.param("kueue.x-k8s.io/v1beta1", "WorkloadPriorityClass", "priorityClasses",
                     id="WorkloadPriorityClass"),
        pytest.param("kueue.x-k8s.io/v1alpha1", "Cohort", "parent Queue",
                     id="Cohort, once said nothing of"),
        pytest.param("kueue.x-k8s.io/v1beta1", "AdmissionCheck", "no admission checks",
                     id="AdmissionCheck"),
        pytest.param("scheduling.volcano.sh/v1beta1", "PodGroup", "fedctl.io/min-available",
                     id="Volcano PodGroup"),
        pytest.param("scheduling.volcano.sh/v1beta1", "Queue", "ClusterPropagationPolicy",
                     id="Volcano Queue, once refused for sharing fedctl's kind name"),
    ],
)  # fmt: skip
def test_a_kueue_or_volcano_kind_is_kept_with_what_fedctl_reads_instead(
    api_version: str, kind: str, instead: str
) -> None:
    result = load_text(
        f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: x, namespace: team-a}}\n",
        filename="m.yaml",
    )

    assert [o.model.kind for o in result.objects] == [kind]
    [finding] = result.findings
    scheduler = "Kueue" if api_version.startswith("kueue") else "Volcano"
    group = api_version.partition("/")[0]
    assert str(finding).startswith(
        f"m.yaml:2:7: kind: warning: a {scheduler} {kind} ({group}) is not read by"
        f" fedctl's scheduler; it is kept and propagated as is, for members that run"
        f" {scheduler}. Instead, "
    )
    assert instead in finding.message and "did you mean" not in finding.message


@pytest.mark.parametrize(
    ("kind", "namespaced"),
    [
        ("ClusterQueue", False),
        ("ResourceFlavor", False),
        ("WorkloadPriorityClass", False),
        ("Cohort", False),
        ("AdmissionCheck", False),
        ("Queue", False),
        ("LocalQueue", True),
        ("PodGroup", True),
    ],
)
def test_kueue_and_volcano_kinds_keep_their_scope(kind: str, namespaced: bool) -> None:
    """A ClusterQueue was stored in namespace `default`: a tenant of `default` could write
    it, and a member's API server drops the namespace of a cluster-scoped kind."""
    model = Workload.model_validate(
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": kind, "metadata": {"name": "x"}}
    )
    assert kinds.is_namespaced(kind) is namespaced
    assert (model.namespace == "default") is namespaced


def test_a_volcano_queue_is_an_opaque_workload_and_a_typo_of_fedctls_is_still_refused() -> None:
    volcano = kinds.model_for("scheduling.volcano.sh/v1beta1", "Queue")
    assert volcano is Workload
    with pytest.raises(kinds.UnknownKind, match=r"belongs to apiVersion fedctl\.io/v1alpha1"):
        kinds.model_for("fedctl.oi/v1alpha1", "Queue")
