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
from policies.models.queue import Queue
from policies.models.rules import STORED
from policies.models.workload import Workload

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
{meta}spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: busybox
          resources: {{requests: {{cpu: "1"}}}}
"""

KUEUE_LABEL = (
    "label kueue.x-k8s.io/queue-name is Kueue's and fedctl does not read it: set the"
    " fedctl.io/queue annotation; without it the workload goes to the queue named default"
    " (uncapped unless a Queue default is defined), not to its team's; name a fedctl Queue,"
    " which is cluster-scoped: one name for every namespace it serves"
)


def said(text: str) -> list[str]:
    return [str(f) for f in load_text(text, filename="m.yaml").findings]


def job(meta: str) -> str:
    return JOB.format(meta=meta)


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        pytest.param(
            "  labels:\n    kueue.x-k8s.io/queue-name: team-a-lq\n",
            [f'm.yaml:7:32: metadata.labels["kueue.x-k8s.io/queue-name"]: warning: {KUEUE_LABEL}'],
            id="Kueue's queue label, at its line, naming the annotation read instead",
        ),
        pytest.param(
            "  labels:\n    kueue.x-k8s.io/priority-class: prod\n",
            [
                'm.yaml:7:36: metadata.labels["kueue.x-k8s.io/priority-class"]: warning: label'
                " kueue.x-k8s.io/priority-class is Kueue's and fedctl does not read it: set"
                " the fedctl.io/priority annotation; without it the workload is ordered at"
                " priority 0"
            ],
            id="Kueue's priority class label",
        ),
        pytest.param(
            "  labels:\n    fedctl.io/queue: team-a\n",
            [
                'm.yaml:7:22: metadata.labels["fedctl.io/queue"]: warning: fedctl.io/queue is'
                " read as an annotation, not a label: move it to metadata.annotations;"
                + KUEUE_LABEL.partition(";")[2]
            ],
            id="fedctl's own queue key written as a label, as Kueue's is",
        ),
        pytest.param(
            "  labels:\n    kueue.x-k8s.io/queue-name: team-a-lq\n"
            "  annotations:\n    fedctl.io/queue: team-a\n",
            [],
            id="the Kueue label kept for a member's Kueue beside the annotation: nothing said",
        ),
    ],
)
def test_a_queue_or_priority_given_as_a_label_is_warned_about(
    meta: str, expected: list[str]
) -> None:
    assert said(job(meta)) == expected


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


def test_a_volcano_jobs_spec_queue_that_differs_from_its_annotation_is_warned_about() -> None:
    text = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: vc
  namespace: team-a
  annotations: {fedctl.io/queue: team-a}
spec:
  queue: team-b
  tasks:
    - replicas: 1
      template: {spec: {containers: [{name: w, image: busybox}]}}
"""
    assert said(text) == [
        "m.yaml:8:10: spec.queue: warning: spec.queue 'team-b' differs from the"
        " fedctl.io/queue annotation 'team-a': fedctl admits this job in queue 'team-a',"
        " while the member's Volcano schedules it in its Volcano Queue 'team-b'"
    ]
    assert said(text.replace("team-b", "team-a")) == []


QUEUE = "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: q}\nspec:\n"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            "  guarantee:\n    resource: {cpu: '8'}\n",
            "m.yaml:6:5: spec.guarantee.resource: Volcano's guarantee.resource: fedctl's"
            " guarantee is the resource list itself (guarantee: {cpu: 8, memory: 32Gi})",
            id="Volcano's guarantee.resource, once an invalid quantity",
        ),
        pytest.param(
            "  deserved: {cpu: '8'}\n",
            "m.yaml:5:3: spec.deserved: unknown field 'deserved': Volcano's deserved share has"
            " no fixed equivalent: a queue's share of what is free follows its spec.weight,"
            " spec.guarantee reserves a part of it and spec.capability caps it",
            id="Volcano's deserved",
        ),
        pytest.param(
            "  cohort: ml\n",
            "m.yaml:5:3: spec.cohort: unknown field 'cohort': Kueue's cohort is a parent Queue"
            " here: set spec.parent to a Queue whose capability caps its children together",
            id="Kueue's cohort",
        ),
        pytest.param(
            "  borrowingLimit: {cpu: 4}\n",
            "m.yaml:5:3: spec.borrowingLimit: unknown field 'borrowingLimit': a queue borrows"
            " up to spec.capability: set capability to nominalQuota + borrowingLimit",
            id="Kueue's borrowingLimit",
        ),
        pytest.param(
            "  lendingLimit: {cpu: 4}\n",
            "m.yaml:5:3: spec.lendingLimit: unknown field 'lendingLimit': spec.guarantee is"
            " never lent and the rest is: set guarantee to nominalQuota - lendingLimit",
            id="Kueue's lendingLimit",
        ),
        pytest.param(
            "  namespaceSelector: {}\n",
            "m.yaml:5:3: spec.namespaceSelector: unknown field 'namespaceSelector':"
            " spec.namespaces lists the namespaces the queue serves, by name",
            id="Kueue's namespaceSelector",
        ),
        pytest.param(
            "  priorityClasses: {prod: 99999999999}\n",
            "m.yaml:5:27: spec.priorityClasses.prod: priority class 'prod': 99999999999 is"
            " outside the priorities Kubernetes allows (-2147483648 to 2147483647, int32)",
            id="a priority class beyond int32",
        ),
    ],
)
def test_a_queue_translated_from_volcano_or_kueue_is_told_fedctls_field(
    spec: str, expected: str
) -> None:
    assert said(QUEUE + spec) == [expected]


@pytest.mark.parametrize(
    "field",
    ["preemption", "resourceGroups", "nominalQuota", "queueingStrategy", "fairSharing"],
)
def test_every_kueue_queue_field_names_a_fedctl_one(field: str) -> None:
    [finding] = said(QUEUE + f"  {field}: {{}}\n")
    assert f"unknown field {field!r}: " in finding and "known fields" not in finding
    assert "spec." in finding.partition(": unknown field")[2]


def test_a_priority_beyond_int32_is_refused_when_written_and_read_back_when_stored() -> None:
    huge = '  annotations: {fedctl.io/priority: "99999999999999999999"}\n'
    assert said(job(huge)) == [
        'm.yaml:6:37: metadata.annotations["fedctl.io/priority"]: annotation'
        " fedctl.io/priority: 99999999999999999999 is outside the priorities Kubernetes"
        " allows (-2147483648 to 2147483647, int32)"
    ]
    assert said(job(huge.replace("99999999999999999999", "-2147483648"))) == []
    wire = load_text(job(""), filename="m.yaml").objects[0].model.to_wire()
    wire["metadata"]["annotations"] = {"fedctl.io/priority": "99999999999999999999"}
    assert Workload.model_validate(wire, context=STORED).priority == 10**20 - 1
    queue = {"metadata": {"name": "q"}, "spec": {"priorityClasses": {"x": 2**40}}}
    assert Queue.model_validate(queue, context=STORED).spec.priority_classes == {"x": 2**40}


QUEUES = """\
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata: {name: platform}
spec:
  namespaces: [team-a, team-b]
---
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata: {name: team-b}
spec:
  parent: platform
  namespaces: [team-b]
---
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata: {name: outside}
spec:
  parent: platform
  namespaces: [team-c]
---
"""


def test_queues_given_alongside_say_which_jobs_and_queues_can_never_take_work() -> None:
    named = "  annotations: {{fedctl.io/queue: {}}}\n"
    text = QUEUES + job(named.format("team-b")) + "---\n"
    text += job(named.format("platform")).replace("name: train", "name: parent")
    text += "---\n" + job(named.format("outside")).replace("name: train", "name: other")

    assert said(text) == [
        "m.yaml:19:3: spec.namespaces: warning: namespaces (team-c) share none with"
        " platform's (team-a, team-b): an ancestor's list holds for its whole subtree, so"
        " this queue can never take work",
        'm.yaml:26:34: metadata.annotations["fedctl.io/queue"]: warning: queue team-b takes'
        " work from namespaces team-b only, not team-a: the workload waits, Pending (a"
        " fedctl Queue is cluster-scoped and serves the namespaces its spec.namespaces"
        " lists; add this one there, or name a queue that serves it)",
        "m.yaml:41:34: metadata.annotations[\"fedctl.io/queue\"]: warning: queue 'platform'"
        " is a parent: it takes no work, so the workload waits; name one of its children"
        " (outside, team-b)",
        'm.yaml:56:34: metadata.annotations["fedctl.io/queue"]: warning: queue outside'
        " takes work from namespaces team-c only, not team-a: the workload waits, Pending"
        " (a fedctl Queue is cluster-scoped and serves the namespaces its spec.namespaces"
        " lists; add this one there, or name a queue that serves it)",
    ]
