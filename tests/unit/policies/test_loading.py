"""The loader's contract: every bad input gets one exact, placed, actionable finding."""

from __future__ import annotations

import os
import time
from decimal import Decimal
from pathlib import Path

import pytest

from policies.loading import (
    MAX_FILE_BYTES,
    Finding,
    SourceMap,
    load_paths,
    load_text,
    validate_document,
)
from policies.models.queue import Queue

QUEUE = """\
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata:
  name: web
spec:
"""

PROPAGATION = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
  namespace: web
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "apiVersion: v1\nkind: [Pod\n",
            "q.yaml:3:1: invalid YAML: expected ',' or ']', but got '<stream end>'"
            " (while parsing a flow sequence started at 2:7)",
            id="malformed YAML names the unclosed bracket and where it opened",
        ),
        pytest.param(
            "a:\n\tb: 1\n",
            "q.yaml:2:1: invalid YAML: found character '\\t' that cannot start any token",
            id="a tab used for indentation is a syntax error at its line",
        ),
        pytest.param(
            "a: 1\nb: \x00\n",
            "q.yaml:2:1: invalid YAML: unacceptable character #x0000: special characters are"
            " not allowed",
            id="a control character names its line",
        ),
        pytest.param(
            "a: 1\nb: " + "[" * 1000 + "]" * 1000,
            "q.yaml:2:1: invalid YAML: brackets nested deeper than 64 levels",
            id="absurd bracket nesting is refused before parsing",
        ),
        pytest.param(
            "".join(" " * i + "a:\n" for i in range(500)),
            "q.yaml: invalid YAML: nested too deeply",
            id="absurd block nesting is refused, not a crash",
        ),
        pytest.param(
            QUEUE + "  weight: heavy\n",
            "q.yaml:6:11: spec.weight: expected an integer, got string 'heavy'",
            id="wrong type points at the value",
        ),
        pytest.param(
            QUEUE + "  reclaimable: sometimes\n",
            "q.yaml:6:16: spec.reclaimable: expected true or false, got string 'sometimes'",
            id="a boolean that is not true or false",
        ),
        pytest.param(
            QUEUE + "  wieght: 2\n",
            "q.yaml:6:3: spec.wieght: unknown field 'wieght' (did you mean 'weight'?)",
            id="unknown field points at the key and suggests the closest field",
        ),
        pytest.param(
            QUEUE + "  colour: blue\n",
            "q.yaml:6:3: spec.colour: unknown field 'colour'; known fields: capability,"
            " dequeueStrategy, guarantee, maxHourlyCost, namespaces, parent, priority,"
            " priorityClasses, reclaimable, weight",
            id="unknown field with nothing close lists the known fields",
        ),
        pytest.param(
            PROPAGATION.replace("      kind: Deployment\n", "")
            + "  placement:\n    clusterAffinity:\n      clusterNames: [a]\n",
            "q.yaml:8:7: spec.resourceSelectors[0].kind: required field 'kind' is missing",
            id="missing required field points at its parent mapping",
        ),
        pytest.param(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n"
            "metadata:\n  name: x\nspec:\n  placement: {}\n",
            "q.yaml:5:1: spec.resourceSelectors: required field 'resourceSelectors' is missing",
            id="missing top-level spec field points at the spec key",
        ),
        pytest.param(
            QUEUE + "  capability:\n    cpu: -2\n",
            "q.yaml:7:10: spec.capability.cpu: invalid quantity -2: must not be negative",
            id="negative quantity",
        ),
        pytest.param(
            QUEUE + "  capability:\n    memory: 12GB\n",
            "q.yaml:7:13: spec.capability.memory: invalid quantity '12GB': unknown suffix 'GB'"
            " (did you mean '12G' or '12Gi'?)",
            id="malformed quantity",
        ),
        pytest.param(
            QUEUE + "  dequeueStrategy: StrictFifo\n",
            "q.yaml:6:20: spec.dequeueStrategy: invalid value 'StrictFifo': expected one of"
            " BestEffortFIFO, StrictFIFO (did you mean 'StrictFIFO'?)",
            id="misspelt enum value suggests the intended one",
        ),
        pytest.param(
            PROPAGATION + "  placement:\n    replicaScheduling:\n"
            "      replicaSchedulingType: Divded\n",
            "q.yaml:12:30: spec.placement.replicaScheduling.replicaSchedulingType: invalid value"
            " 'Divded': expected one of Duplicated, Divided (did you mean 'Divided'?)",
            id="misspelt Karmada enum deep in a policy",
        ),
        pytest.param(
            QUEUE + "  weight: 1\n  weight: 2\n",
            "q.yaml:7:3: spec.weight: duplicate key 'weight' (first defined at line 6)",
            id="duplicate key points at the second occurrence",
        ),
        pytest.param(
            "apiVersion: v1\nmetadata:\n  name: x\n",
            "q.yaml:1:1: kind: required field 'kind' is missing",
            id="a document without kind",
        ),
        pytest.param(
            "kind: Queue\nmetadata:\n  name: x\n",
            "q.yaml:1:1: apiVersion: required field 'apiVersion' is missing",
            id="a document without apiVersion",
        ),
        pytest.param(
            "apiVersion: fedctl.io/v1alpha1\nkind: Queu\nmetadata:\n  name: x\n",
            "q.yaml:2:7: kind: unknown kind 'Queu' for apiVersion fedctl.io/v1alpha1 (did you"
            " mean 'Queue'?); known kinds: AcceleratorProfile, Cluster, ClusterPropagationPolicy,"
            " PropagationPolicy, Queue",
            id="unknown kind lists the known kinds",
        ),
        pytest.param(
            "apiVersion: policy.karmada.io/v1beta1\nkind: PropagationPolicy\n",
            "q.yaml:1:13: apiVersion: unknown apiVersion 'policy.karmada.io/v1beta1'; use"
            " policy.karmada.io/v1alpha1",
            id="unknown version of a known group, at the apiVersion",
        ),
        pytest.param(
            "apiVersion: apps/v1\nkind: Queue\nmetadata:\n  name: x\n",
            "q.yaml:1:13: apiVersion: kind Queue belongs to apiVersion fedctl.io/v1alpha1",
            id="a policy kind under a workload apiVersion",
        ),
        pytest.param(
            "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: m\n",
            "q.yaml:1:13: apiVersion: a Karmada Cluster (cluster.karmada.io) is not read:"
            " fedctl's is fedctl.io/v1alpha1 Cluster, which also holds the member's region,"
            " chips and prices; `fedctl cluster join NAME --kubeconfig FILE --region R`"
            " writes one",
            id="a Karmada Cluster says how fedctl joins a member",
        ),
        pytest.param(
            "apiVersion: apps.karmada.io/v1alpha1\nkind: WorkloadRebalancer\nmetadata:\n"
            "  name: demo\n",
            "q.yaml:1:13: apiVersion: a Karmada WorkloadRebalancer (apps.karmada.io) is not"
            " read: stored as a workload, it would only be copied to the members, where"
            " nothing acts on it; `fedctl rebalance --workload NS/NAME` (or --all) places"
            " workloads afresh",
            id="a Karmada WorkloadRebalancer says how fedctl rebalances",
        ),
        pytest.param(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterTaintPolicy\nmetadata:\n"
            "  name: detect-not-ready\n",
            "q.yaml:2:7: kind: a Karmada ClusterTaintPolicy is not read: fedctl taints an"
            " unhealthy member itself (cluster.fedctl.io/not-ready or unreachable, NoSchedule"
            " at once, NoExecute after the eviction grace: FEDCTL_FAILOVER__EVICTION_GRACE,"
            " or the Cluster's spec.evictionGraceSeconds), and a policy's"
            " placement.clusterTolerations say which workloads stay; `fedctl cluster taint"
            " NAME KEY[=VALUE]:EFFECT` taints a member by hand",
            id="a Karmada ClusterTaintPolicy says how fedctl taints members, not a typo",
        ),
        pytest.param(
            "apiVersion: config.karmada.io/v1alpha1\nkind: ResourceInterpreterCustomization\n"
            "metadata:\n  name: demo\n",
            "q.yaml:1:13: apiVersion: a Karmada ResourceInterpreterCustomization"
            " (config.karmada.io) is not read: stored as a workload, it would only be copied to"
            " the members, where nothing acts on it",
            id="any other Karmada kind is refused, not stored as a workload",
        ),
        pytest.param(
            "just a string\n",
            "q.yaml:1:1: a document must be a mapping, got string 'just a string'",
            id="a document that is not a mapping",
        ),
        pytest.param(
            "",
            "q.yaml:1:1: file is empty: no YAML documents",
            id="an empty text",
        ),
        pytest.param(
            "# only a comment\n---\n",
            "q.yaml:1:1: file is empty: no YAML documents",
            id="comments and separators only count as empty",
        ),
    ],
)
def test_bad_input_gets_one_exact_finding(text: str, expected: str) -> None:
    result = load_text(text, filename="q.yaml")

    assert [str(f) for f in result.findings] == [expected]
    assert not result.ok
    assert result.objects == []


def test_findings_point_at_the_value_line_in_a_later_document() -> None:
    text = (
        QUEUE
        + "  weight: 2\n---\n"
        + QUEUE.replace("web", "ml")
        + ("  guarantee:\n    cpu: 4\n  capability:\n    cpu: 2\n")
    )

    result = load_text(text, filename="q.yaml")

    assert [str(f) for f in result.findings] == [
        "q.yaml:14:10: spec.guarantee.cpu: guarantee of cpu (4) exceeds the capability (2);"
        " a queue cannot be promised more than it may hold"
    ]
    assert [o.model.metadata.name for o in result.objects] == ["web"]
    assert (result.objects[0].line, result.objects[0].doc_index) == (1, 0)


def test_every_document_is_checked_even_after_an_invalid_one() -> None:
    text = QUEUE + "  weight: -1\n---\n" + QUEUE.replace("web", "ml") + "  weght: 1\n"

    result = load_text(text, filename="q.yaml")

    assert [str(f) for f in result.findings] == [
        "q.yaml:6:11: spec.weight: must be at least 1, got -1",
        "q.yaml:13:3: spec.weght: unknown field 'weght' (did you mean 'weight'?)",
    ]


def test_resource_names_with_dots_are_bracketed_in_the_path() -> None:
    result = load_text(QUEUE + "  capability:\n    nvidia.com/gpu: lots\n", filename="q.yaml")

    assert [f.path for f in result.findings] == ['spec.capability["nvidia.com/gpu"]']


def test_alias_bombs_are_refused() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i, name in enumerate("bcdefg"):
        previous = "abcdefg"[i]
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 10) + "]")

    result = load_text("\n".join(lines) + "\n", filename="bomb.yaml")

    assert [str(f) for f in result.findings] == [
        "bomb.yaml:1:1: document expands to more than 100000 nodes (aliases included)"
    ]


# ---------------------------------------------------------------- files and directories


def test_a_missing_file_is_a_finding(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"

    result = load_paths([missing])

    assert [str(f) for f in result.findings] == [f"{missing}: no such file or directory"]


def test_an_empty_file_is_a_finding(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")

    result = load_paths([empty])

    assert [str(f) for f in result.findings] == [f"{empty}:1:1: file is empty: no YAML documents"]


def test_a_10_mb_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:
        handle.truncate(10 * 1024 * 1024)  # sparse: instant to create
    started = time.perf_counter()

    result = load_paths([big])

    assert time.perf_counter() - started < 0.5
    assert [str(f) for f in result.findings] == [
        f"{big}: file is too large: 10485760 bytes; policy files must be smaller than 10 MB"
        " (10000000 bytes)"
    ]
    assert MAX_FILE_BYTES == 10_000_000


def test_a_directory_is_read_recursively_in_sorted_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "b" / "z.yml").write_text(QUEUE.replace("web", "z") + "  weight: 1\n")
    (tmp_path / "a.yaml").write_text(
        QUEUE.replace("web", "a1")
        + "  weight: 1\n---\n"
        + QUEUE.replace("web", "a2")
        + "  weight: 2\n"
    )
    (tmp_path / ".hidden" / "x.yaml").write_text("not: [valid\n")
    (tmp_path / "notes.txt").write_text("not yaml at all: [")

    result = load_paths([tmp_path])

    assert result.findings == []
    assert [o.model.metadata.name for o in result.objects] == ["a1", "a2", "z"]
    assert result.files == [str(tmp_path / "a.yaml"), str(tmp_path / "b" / "z.yml")]
    assert [(o.line, o.doc_index) for o in result.objects] == [(1, 0), (8, 1), (1, 0)]


def test_many_files_and_the_same_file_twice(tmp_path: Path) -> None:
    one = tmp_path / "one.yaml"
    two = tmp_path / "two.yaml"
    one.write_text(QUEUE.replace("web", "one") + "  weight: 1\n")
    two.write_text(QUEUE.replace("web", "two") + "  weight: 1\n")

    result = load_paths([one, two, str(one)])

    assert [o.model.metadata.name for o in result.objects] == ["one", "two"]
    assert all(isinstance(o.model, Queue) for o in result.objects)


def test_an_empty_directory_is_a_finding(tmp_path: Path) -> None:
    result = load_paths([tmp_path])

    assert [str(f) for f in result.findings] == [
        f"{tmp_path}: no .yaml or .yml files in this directory"
    ]


def test_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"apiVersion: v1\nkind: Caf\xe9\n")

    result = load_paths([bad])

    assert [str(f) for f in result.findings] == [
        f"{bad}:2:1: not UTF-8 text (byte 24: invalid continuation byte)"
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_file(tmp_path: Path) -> None:
    locked = tmp_path / "locked.yaml"
    locked.write_text("a: 1\n")
    locked.chmod(0)

    result = load_paths([locked])

    assert [str(f) for f in result.findings] == [f"{locked}: cannot read: Permission denied"]


def test_the_same_object_twice_is_an_error() -> None:
    """Reported at the second one's name, naming the line of the first one's name (not
    of its document's start), and the second one is not a valid object of the set."""
    text = QUEUE + "  weight: 1\n---\n" + QUEUE + "  weight: 2\n"

    result = load_text(text, filename="q.yaml")

    assert [str(f) for f in result.findings] == [
        "q.yaml:11:9: metadata.name: Queue web is defined twice (first at q.yaml:4)"
    ]
    [first] = result.objects
    assert (first.line, first.model.spec.weight) == (1, 1)


# ---------------------------------------------------------------- JSON documents (the API)


def test_validate_document_without_a_source_has_no_line_numbers() -> None:
    doc = {
        "apiVersion": "fedctl.io/v1alpha1",
        "kind": "Queue",
        "metadata": {"name": "web"},
        "spec": {"wieght": 2},
    }

    checked = validate_document(doc, filename="<request>")

    assert checked.model is None
    assert [str(f) for f in checked.findings] == [
        "<request>: spec.wieght: unknown field 'wieght' (did you mean 'weight'?)"
    ]
    assert checked.findings[0].to_dict() == {
        "file": "<request>",
        "line": 0,
        "col": 0,
        "path": "spec.wieght",
        "message": "unknown field 'wieght' (did you mean 'weight'?)",
        "severity": "error",
    }


def test_validate_document_with_a_source_map_places_findings() -> None:
    doc = {"apiVersion": "fedctl.io/v1alpha1", "kind": "Queue", "metadata": {"name": "web"}}
    doc["spec"] = {"weight": 0}
    source = SourceMap(values={("spec", "weight"): (9, 11)}, keys={("spec", "weight"): (9, 3)})

    checked = validate_document(doc, source=source, filename="body.json")

    assert checked.findings == [
        Finding("body.json", 9, 11, "spec.weight", "must be at least 1, got 0")
    ]


def test_validate_document_returns_the_model_and_its_warnings() -> None:
    doc = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "web", "namespace": "web"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "schedulerName": "other-scheduler",
        },
    }

    checked = validate_document(doc)

    assert checked.ok
    assert checked.model is not None and checked.model.kind == "PropagationPolicy"
    assert [str(f) for f in checked.findings] == [
        "<input>: spec.schedulerName: warning: schedulerName is accepted but not acted on:"
        " fedctl has a single scheduler"
    ]


def test_the_queue_tree_is_checked_across_documents() -> None:
    text = (
        QUEUE.replace("name: web", "name: child")
        + "  parent: ml\n  capability:\n    cpu: 10\n---\n"
        + QUEUE.replace("name: web", "name: orphan")
        + "  parent: elsewhere\n---\n"
        + QUEUE.replace("name: web", "name: ml")
        + "  capability:\n    cpu: 5\n"
    )

    result = load_text(text, filename="q.yaml")

    assert [str(f) for f in result.findings] == [
        "q.yaml:8:10: spec.capability.cpu: capability of cpu (10) exceeds parent 'ml' (5)",
        "q.yaml:15:11: spec.parent: warning: parent queue 'elsewhere' is not in these files:"
        " apply refuses this queue unless the server already holds it (fedctl get queues"
        " elsewhere)",
    ]
    assert not result.ok


def test_a_parent_outside_the_files_is_judged_against_the_servers_queues() -> None:
    """`apply -f kid.yaml` warned that apply refuses kid unless the server holds team-a,
    while the server held it. Against the server's queues, only a parent held nowhere is
    warned about, as what the server refuses, with the held queue it resembles."""
    text = (
        QUEUE.replace("name: web", "name: kid")
        + "  parent: team-a\n---\n"
        + QUEUE.replace("name: web", "name: typo")
        + "  parent: teama\n"
    )
    result = load_text(text, filename="q.yaml")
    assert [(f.line, f.severity) for f in result.findings] == [(6, "warning"), (13, "warning")]
    assert result.needs_queues

    held = [Queue.model_validate({"metadata": {"name": n}}) for n in ("team-a", "team-b")]
    judged = result.with_stored_queues(held)

    assert [str(f) for f in judged.findings] == [
        "q.yaml:13:11: spec.parent: warning: parent queue 'teama' is not defined on the"
        " server or in these files (did you mean 'team-a'?): the server refuses this queue"
    ]
    assert judged.with_stored_queues(held).findings == judged.findings
    assert not load_text(QUEUE + "  weight: 1\n", filename="q.yaml").needs_queues


def test_a_top_level_parent_guaranteeing_less_than_its_children_is_an_error() -> None:
    """Only a parent nobody defined is a warning (the server may hold it); what the server
    refuses on apply, `validate` must not call valid."""
    text = (
        QUEUE.replace("name: web", "name: dept-a")
        + "  parent: dept\n  guarantee:\n    cpu: 40\n---\n"
        + QUEUE.replace("name: web", "name: dept-b")
        + "  parent: dept\n  guarantee:\n    cpu: 40\n---\n"
        + QUEUE.replace("name: web", "name: dept")
        + "  guarantee:\n    cpu: 50\n"
    )

    result = load_text(text, filename="q.yaml")

    assert [f.severity for f in result.findings] == ["error"]
    assert "children (dept-a, dept-b) are guaranteed 80 of cpu in total" in str(result.findings[0])
    assert not result.ok


def test_a_priority_class_the_queue_given_alongside_lacks_is_an_error() -> None:
    job = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  annotations:
    fedctl.io/queue: web
    fedctl.io/priority: {priority}
spec:
  template:
    spec:
      containers:
        - name: c
          resources:
            requests:
              cpu: "1"
"""
    text = (
        QUEUE
        + "  priorityClasses:\n    high: 100\n    low: 0\n---\n"
        + job.format(name="ok", priority="high")
        + "---\n"
        + job.format(name="typo", priority="hgih")
    )

    result = load_text(text, filename="q.yaml")

    assert [str(f) for f in result.findings] == [
        "q.yaml:32:25: metadata.annotations[\"fedctl.io/priority\"]: priority class 'hgih'"
        " is not defined in queue web (its priorityClasses: high, low) (did you mean 'high'?)"
    ]
    assert not result.ok


def test_a_priority_class_a_stored_queue_lacks_is_warned_at_apply() -> None:
    """`fedctl.io/priority: hgih` under queue team-a, which the server holds with classes
    high and low, passed validate and apply without a word; the job then waited with the
    scheduler's reason. Judged against the server's queues it is a warning at the
    annotation, in the scheduler's words; so is any class under the implicit default
    queue, which defines none. A class its queue given alongside lacks stays an error."""
    job = (
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: t\n"
        "  annotations:\n{annotations}"
        "spec: {{template: {{spec: {{containers: [{{name: c, image: x}}]}}}}}}\n---\n"
    )
    text = (
        "".join(
            job.format(name=name, annotations="".join(f"    {a}\n" for a in annotations))
            for name, annotations in [
                ("typo", ["fedctl.io/queue: team-a", "fedctl.io/priority: hgih"]),
                ("fine", ["fedctl.io/queue: team-a", "fedctl.io/priority: high"]),
                ("number", ["fedctl.io/queue: team-a", "fedctl.io/priority: '7'"]),
                ("nameless", ["fedctl.io/priority: high"]),
                ("nowhere", ["fedctl.io/queue: nowhere", "fedctl.io/priority: high"]),
                ("local", ["fedctl.io/queue: web", "fedctl.io/priority: urgent"]),
            ]
        )
        + QUEUE
        + "  priorityClasses: {low: 0}\n"
    )
    result = load_text(text, filename="j.yaml")
    assert [(f.line, f.severity) for f in result.findings] == [(57, "error")]
    assert result.needs_queues
    held = [
        Queue.model_validate(
            {"metadata": {"name": "team-a"}, "spec": {"priorityClasses": {"low": 1, "high": 500}}}
        ),
        Queue.model_validate({"metadata": {"name": "web"}, "spec": {"priorityClasses": {}}}),
    ]

    judged = result.with_stored_queues(held)

    assert [str(f) for f in judged.findings[1:]] == [
        'j.yaml:8:25: metadata.annotations["fedctl.io/priority"]: warning: priority class'
        " 'hgih' is not defined in queue team-a on the server (its priorityClasses: high"
        " (500), low (1)) (did you mean 'high'?): the workload waits, Pending, until it is"
        " defined there or fedctl.io/priority names one that is",
        'j.yaml:37:25: metadata.annotations["fedctl.io/priority"]: warning: priority class'
        " 'high' is not defined in queue default on the server (its priorityClasses: none):"
        " the workload waits, Pending, until it is defined there or fedctl.io/priority names"
        " one that is",
    ]


def test_what_members_would_refuse_is_refused_here_with_its_line() -> None:
    """A workload no member's API server accepts would otherwise be admitted, hold its
    queue's quota and never run: a name that is not a DNS name, a fraction of a device, a
    device request and limit that differ. A device request without a limit is a warning."""
    text = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: Bad_Job
  namespace: Teams
spec:
  template:
    spec:
      containers:
        - name: c
          resources:
            requests: {cpu: "1", nvidia.com/gpu: "0.5", example.com/fpga: "2"}
            limits: {example.com/fpga: "4"}
        - name: d
          resources:
            requests: {nvidia.com/gpu: 1}
"""
    result = load_text(text, filename="j.yaml")

    assert [str(f) for f in result.findings] == [
        "j.yaml:4:9: metadata.name: name 'Bad_Job' is not a DNS subdomain (lowercase letters,"
        " digits, '-' and '.'): members refuse it",
        "j.yaml:5:14: metadata.namespace: namespace 'Teams' is not a DNS label (lowercase"
        " letters, digits and '-', at most 63): members refuse it",
        'j.yaml:12:50: spec.template.spec.containers[0].resources.requests["nvidia.com/gpu"]:'
        " nvidia.com/gpu: '0.5' is not a whole number: a device is never shared",
        'j.yaml:12:75: spec.template.spec.containers[0].resources.requests["example.com/fpga"]:'
        " example.com/fpga is requested as 2 but limited to 4: Kubernetes wants the two equal"
        " for a device",
    ]
    assert not result.ok


def test_labels_and_annotation_keys_members_refuse_are_refused_at_their_key() -> None:
    """`fedctl cluster label X "bad key!=x"` stored `bad key!: x`, and a Cluster file with it
    validated: no selector can name such a label, and a member refuses an object carrying
    it. Every kind's metadata is checked, and so are the selectors that match labels."""
    text = """\
apiVersion: fedctl.io/v1alpha1
kind: Cluster
metadata:
  name: us-east-cpu
  labels:
    bad key!: x
    tier: not valid!
    example.com/zone: ""
    Example.com/gpu: "yes"
  annotations:
    a/b/c: z
    Team.Example.com/Owner: me
spec:
  region: us-east
---
""" + PROPAGATION.replace(
        "kind: Deployment",
        "kind: Deployment\n      labelSelector:\n"
        "        matchLabels: {app: web, bad key!: x}\n"
        "        matchExpressions:\n"
        "          - {key: tier, operator: In, values: [ok, not ok]}\n"
        "          - {key: -tier, operator: Exists}\n",
    )

    result = load_text(text, filename="c.yaml")

    assert [str(f) for f in result.findings] == [
        "c.yaml:6:5: metadata.labels[\"bad key!\"]: label key 'bad key!' is not a qualified"
        " name: its name part must be letters, digits, '-', '_' or '.', beginning and ending"
        " with a letter or digit",
        "c.yaml:7:11: metadata.labels.tier: label value 'not valid!' of 'tier' is not valid:"
        " it must be empty or letters, digits, '-', '_' or '.', beginning and ending with a"
        " letter or digit",
        "c.yaml:9:5: metadata.labels[\"Example.com/gpu\"]: label key 'Example.com/gpu' is not"
        " a qualified name: its prefix 'Example.com' is not a DNS subdomain (lowercase"
        " letters, digits, '-' and '.')",
        "c.yaml:11:5: metadata.annotations[\"a/b/c\"]: annotation key 'a/b/c' is not a"
        " qualified name: it has more than one '/'",
        'c.yaml:26:33: spec.resourceSelectors[0].labelSelector.matchLabels["bad key!"]: label'
        " key 'bad key!' is not a qualified name: its name part must be letters, digits, '-',"
        " '_' or '.', beginning and ending with a letter or digit",
        "c.yaml:28:52: spec.resourceSelectors[0].labelSelector.matchExpressions[0].values[1]:"
        " label value 'not ok' of 'tier' is not valid: it must be empty or letters, digits,"
        " '-', '_' or '.', beginning and ending with a letter or digit",
        "c.yaml:29:19: spec.resourceSelectors[0].labelSelector.matchExpressions[1].key: label"
        " key '-tier' is not a qualified name: its name part must be letters, digits, '-',"
        " '_' or '.', beginning and ending with a letter or digit",
    ]
    assert not result.objects


def test_every_unreadable_workload_value_is_reported_at_once() -> None:
    text = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: sweep
  annotations:
    fedctl.io/priority: "High Priority!"
    fedctl.io/expected-duration: 2 days
spec:
  template:
    spec:
      containers:
        - name: c
          resources:
            requests: {cpu: lots}
"""
    result = load_text(text, filename="j.yaml")

    assert [f.path for f in result.findings] == [
        'metadata.annotations["fedctl.io/priority"]',
        'metadata.annotations["fedctl.io/expected-duration"]',
        "spec.template.spec.containers[0].resources.requests.cpu",
    ]
    assert not result.ok


def test_a_status_printed_by_get_applies_again_and_is_dropped() -> None:
    """`fedctl get queue X -o yaml` prints a status; applying that output must work, as with
    kubectl, and store no status the kind does not keep."""
    text = (
        "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: ml}\n"
        "spec: {weight: 2}\nstatus: {admitted: 3, pending: 1}\n"
    )
    result = load_text(text, filename="q.yaml")
    assert result.ok, [str(f) for f in result.findings]
    [loaded] = result.objects
    assert "status" not in loaded.model.to_wire()
    assert loaded.model.spec.weight == 2


def test_quota_entries_admission_does_not_count_are_warned_about() -> None:
    """`pods: 2` let four pods in without a word: admission charges what pods request."""
    text = (
        "apiVersion: policy.karmada.io/v1alpha1\nkind: FederatedResourceQuota\n"
        "metadata: {name: q, namespace: team}\nspec:\n  overall:\n"
        '    cpu: "4"\n    pods: "2"\n    limits.cpu: "8"\n    nvidia.com/gpu: "2"\n'
        "  staticAssignments:\n    - clusterName: a\n      hard: {pods: 1}\n"
    )
    result = load_text(text, filename="q.yaml")
    assert result.ok
    assert [(f.path, f.severity) for f in result.findings] == [
        ('spec.overall["limits.cpu"]', "warning"),
        ("spec.overall.pods", "warning"),
    ]
    assert "give it in staticAssignments" in result.findings[0].message
    assert "each member still enforces its staticAssignments share" in result.findings[1].message


def test_a_fedctl_annotation_fedctl_does_not_read_is_warned_at_its_line() -> None:
    """`fedctl.io/qeue` sent the job to the default queue without a word."""
    text = (
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  namespace: team\n"
        "  annotations:\n    fedctl.io/qeue: ml\n    fedctl.io/priority: '5'\n"
        "    fedctl.io/gpu-model: a100\n    example.com/owner: me\n"
        "    fedctl.io/workload-ref: team/Job.batch/j\n"
        "spec: {template: {spec: {containers: [{name: c, image: x}]}}}\n"
    )
    result = load_text(text, filename="j.yaml")
    assert result.ok
    assert [(f.line, f.path, f.severity) for f in result.findings] == [
        (7, 'metadata.annotations["fedctl.io/qeue"]', "warning"),
        (9, 'metadata.annotations["fedctl.io/gpu-model"]', "warning"),
    ]
    typo, unknown = (f.message for f in result.findings)
    assert "(did you mean 'fedctl.io/queue'?)" in typo
    assert "did you mean" not in unknown
    assert unknown.endswith("reads queue, priority, chips, expected-duration and min-available")


def test_a_workload_naming_a_queue_that_takes_no_work_is_warned_at_the_annotation() -> None:
    """A queue misspelt, or a parent queue, leaves the job Pending with no error anywhere
    before it; `apply` and the editor judge the name against the server's queues."""
    text = (
        "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: local}\n"
        "spec: {parent: ml}\n---\n"
        + "".join(
            f"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j{i}\n  namespace: t\n"
            f"  annotations: {{fedctl.io/queue: {q}}}\n"
            "spec: {template: {spec: {containers: [{name: c, image: x}]}}}\n---\n"
            for i, q in enumerate(["mlprod", "ml", "ml-prod", "local", "default"])
        )
        + "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v, namespace: t}\n"
        "spec: {queue: nowhere, tasks: [{replicas: 1, template: {spec: {containers: []}}}]}\n"
    )
    result = load_text(text, filename="j.yaml")
    assert result.ok and result.names_queues
    checked = result.with_defined_queues({"ml": ["ml-prod"], "ml-prod": [], "web": []})
    warned = [(f.line, f.path, f.message) for f in checked.findings[len(result.findings) :]]
    assert [(line, path) for line, path, _ in warned] == [
        (11, 'metadata.annotations["fedctl.io/queue"]'),
        (19, 'metadata.annotations["fedctl.io/queue"]'),
        (49, "spec.queue"),
    ]
    assert "queue 'mlprod' is not defined" in warned[0][2]
    assert "(did you mean 'ml-prod'?)" in warned[0][2]
    assert "queue 'ml' is a parent" in warned[1][2]
    assert "(local, ml-prod)" in warned[1][2]  # a child defined in the files counts
    assert "queue 'nowhere' is not defined" in warned[2][2]


def _holding(kind: str, field: str, value: str, count: int = 1) -> str:
    data = "".join(f"  k{i}: {value}\n" for i in range(count))
    return (
        f"apiVersion: v1\nkind: {kind}\nmetadata: {{name: big, namespace: web}}\n{field}:\n{data}"
    )


@pytest.mark.parametrize(
    ("text", "held"),
    [
        pytest.param(_holding("ConfigMap", "data", "x" * 2_000_000), 2_000_000,
                     id="a ConfigMap of 1.9 MiB"),
        pytest.param(_holding("ConfigMap", "data", "x" * 400_000, count=3), 1_200_000,
                     id="a ConfigMap whose entries together pass 1 MiB"),
        pytest.param(_holding("ConfigMap", "binaryData", "eHh4" * 400_000), 1_200_000,
                     id="binaryData, counted decoded"),
        pytest.param(_holding("Secret", "data", "eHh4" * 400_000), 1_200_000,
                     id="a Secret, counted decoded"),
        pytest.param(_holding("Secret", "stringData", "x" * 1_100_000), 1_100_000,
                     id="a Secret's stringData"),
    ],
)  # fmt: skip
def test_a_configmap_or_secret_holding_more_than_1_mib_is_refused_as_kubernetes_does(
    text: str, held: int
) -> None:
    """Every member's API server refuses it (Kubernetes' MaxSecretSize), and etcd refused
    one of 1.9 MiB only when an apply wrote it, after the documents before it were stored.
    Now it is refused where the file is read, at the field, as `kubectl apply` is."""
    result = load_text(text, filename="big.yaml")
    assert not result.ok
    (finding,) = result.findings
    assert (finding.line, finding.col, finding.path) == (4, 1, text.split("\n")[3][:-1])
    assert finding.message.startswith("Too long: must have at most 1048576 bytes")
    assert f"holds {held} bytes" in finding.message


def test_a_configmap_of_1_mib_exactly_is_taken() -> None:
    assert load_text(_holding("ConfigMap", "data", "x" * 1024 * 1024), filename="a.yaml").ok


def test_a_queue_limit_on_a_misspelt_resource_is_warned_with_the_name_meant() -> None:
    """`nvidia.com/gpus: 2` loaded and capped nothing: no pod asks for it."""
    limits = (
        "  capability:\n    nvidia.com/gpus: '2'\n    huawei.com/ascend-910b: '4'\n"
        "    cpu: '8'\n    example.com/widget: '3'\n"
    )
    result = load_text(QUEUE + limits, filename="q.yaml")
    assert result.ok
    found = {w.path: w.message for w in result.warnings}
    assert set(found) == {
        'spec.capability["nvidia.com/gpus"]',
        'spec.capability["huawei.com/ascend-910b"]',
    }
    assert found['spec.capability["nvidia.com/gpus"]'].endswith("(did you mean 'nvidia.com/gpu'?)")
    assert (
        "'accelerator/ascend-910b' to cap that chip model"
        in (found['spec.capability["huawei.com/ascend-910b"]'])
    )


def test_a_queue_s_namespaces_are_namespace_names() -> None:
    result = load_text(QUEUE + "  namespaces: [web, Shop_B]\n", filename="q.yaml")
    [finding] = result.findings
    assert finding.path == "spec.namespaces[1]"
    assert "invalid namespace 'Shop_B'" in finding.message


def test_a_priority_class_name_without_a_fedctl_priority_is_warned() -> None:
    """A Volcano Job's `priorityClassName: high-priority` was taken at priority 0 silently."""
    volcano = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: vj, namespace: ml}
spec:
  priorityClassName: high-priority
  tasks:
  - name: w
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: x}]
"""
    [warning] = load_text(volcano, filename="vj.yaml").warnings
    assert warning.path == "spec.priorityClassName"
    assert "this job is ordered at priority 0" in warning.message
    given = volcano.replace(
        "namespace: ml}", "namespace: ml, annotations: {fedctl.io/priority: '9'}}"
    )
    assert load_text(given, filename="vj.yaml").warnings == []


def test_a_device_price_for_a_chip_the_cluster_lacks_is_warned_at_its_line() -> None:
    """`nvidia-a100: 0.5` on a cluster of nvidia-a100-80gb priced nothing: the chip was
    billed at its AcceleratorProfile's default, silently."""
    text = """\
apiVersion: fedctl.io/v1alpha1
kind: Cluster
metadata: {name: eu-gpu}
spec:
  region: eu-west
  chips: [{model: nvidia-a100-80gb, arch: amd64, count: 8}]
  prices:
    onDemand:
      cpu: "0.01"
      accelerators:
        nvidia-a100: "0.5"
        nvidia-a100-80gb: "2.5"
    spot:
      accelerators: {h100: "1.0"}
"""
    result = load_text(text, filename="c.yaml")
    assert [str(f) for f in result.findings] == [
        "c.yaml:8:5: spec.prices.onDemand: warning: no memory price: memory is priced at 0"
        " (free) here; give memory: 0 to say so",
        "c.yaml:11:22: spec.prices.onDemand.accelerators.nvidia-a100: warning: this cluster"
        " lists no chip 'nvidia-a100' (did you mean 'nvidia-a100-80gb'?), so this price is"
        " never used; its chips: nvidia-a100-80gb",
        "c.yaml:14:28: spec.prices.spot.accelerators.h100: warning: this cluster lists no chip"
        " 'h100', so this price is never used; its chips: nvidia-a100-80gb",
    ]


SPOT_CLUSTER = """\
apiVersion: fedctl.io/v1alpha1
kind: Cluster
metadata: {name: ascend}
spec:
  region: cn-north
  prices:
    onDemand: {cpu: "0.04", memory: "0.005"}
    spot:
      accelerators: {ascend-910b: "0.8"}
"""


def test_a_spot_table_of_chips_alone_prices_cpu_and_memory_as_on_demand() -> None:
    """A spot table without cpu or memory made them free (0) for spot work, silently."""
    (loaded,) = load_text(SPOT_CLUSTER, filename="c.yaml").objects
    spot = loaded.model.spec.prices.spot
    assert (spot.cpu, spot.memory) == (Decimal("0.04"), Decimal("0.005"))
    given = SPOT_CLUSTER.replace("spot:", "spot:\n      cpu: '0.01'")
    (loaded,) = load_text(given, filename="c.yaml").objects
    spot = loaded.model.spec.prices.spot
    assert (spot.cpu, spot.memory) == (Decimal("0.01"), Decimal("0.005"))


def test_an_on_demand_table_without_a_memory_price_is_warned_at_its_line() -> None:
    text = SPOT_CLUSTER.replace(', memory: "0.005"', "")
    result = load_text(text, filename="c.yaml")
    assert [str(f) for f in result.findings] == [
        "c.yaml:7:5: spec.prices.onDemand: warning: no memory price: memory is priced at 0"
        " (free) here; give memory: 0 to say so"
    ]
    assert load_text(SPOT_CLUSTER, filename="c.yaml").findings == []


@pytest.mark.parametrize(
    ("old", "new", "at"),
    [
        pytest.param(
            'cpu: "0.04"', 'cpu: "1e400"', "c.yaml:7:21: spec.prices.onDemand.cpu", id="cpu"
        ),
        pytest.param(
            '"0.8"',
            '"1e400"',
            "c.yaml:9:35: spec.prices.spot.accelerators.ascend-910b",
            id="a chip",
        ),
    ],
)
def test_an_absurd_price_is_refused_at_its_line(old: str, new: str, at: str) -> None:
    """`1e400` was stored, and printed as a cost of 400 digits in every view."""
    result = load_text(SPOT_CLUSTER.replace(old, new), filename="c.yaml")
    (error,) = result.errors
    assert str(error).startswith(f"{at}: ") and "at most 1000000" in error.message


def test_an_integer_too_long_to_read_is_a_finding_not_a_traceback(tmp_path: Path) -> None:
    """`fedctl validate` of a file holding an integer past Python's 4,300 digits ended in
    ruamel's ValueError traceback; the rest of the file is still read and judged."""
    path = tmp_path / "big.yaml"
    path.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: n, namespace: web}\n"
        f"spec: {{replicas: 3, template: {{spec: {{priority: {'7' * 4301}}}}}}}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok, namespace: web}\n"
    )
    result = load_paths([path])
    assert [str(f) for f in result.findings] == [
        f"{path}:4:49: spec.template.spec.priority: an integer of 4301 digits is longer"
        " than the 4300 digits a number may have here (a Kubernetes integer has at most 19)"
    ]
    assert [o.model.metadata.name for o in result.objects] == ["ok"]


def test_a_storage_quota_is_named_and_warned_about_as_written() -> None:
    """`requests.storage` was shown and warned about as `storage`, a name no ResourceQuota
    takes, at the line of `overall`: it keeps its name, and the warning its own line."""
    text = (
        "apiVersion: policy.karmada.io/v1alpha1\nkind: FederatedResourceQuota\n"
        "metadata: {name: q, namespace: team}\nspec:\n  overall:\n"
        '    cpu: "4"\n    requests.storage: 10Gi\n'
        "  staticAssignments:\n    - clusterName: a\n      hard: {storage: 4Gi}\n"
    )
    result = load_text(text, filename="q.yaml")
    assert result.ok, [str(f) for f in result.findings]
    [finding] = result.findings
    assert (finding.path, finding.line, finding.severity) == (
        'spec.overall["requests.storage"]',
        7,
        "warning",
    )
    assert finding.message.startswith("requests.storage is not counted at admission")
    spec = result.objects[0].model.to_wire()["spec"]
    assert spec["overall"] == {"cpu": "4", "requests.storage": "10Gi"}
    assert spec["staticAssignments"][0]["hard"] == {"requests.storage": "4Gi"}


def test_a_class_a_parent_queue_defines_serves_its_childrens_workloads() -> None:
    """A child inherits its parent's priority classes (a Kueue team writes its cluster-wide
    classes once, on the department's parent): a job in the child naming one is valid,
    given alongside or held by the server; a name neither defines is still refused."""
    parent = (
        "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: dept}\n"
        "spec:\n  priorityClasses: {prod: 1000}\n---\n"
    )
    child = (
        "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: team}\n"
        "spec: {parent: dept}\n---\n"
    )
    job = (
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: t\n"
        "  annotations: {{fedctl.io/queue: team, fedctl.io/priority: {cls}}}\n"
        "spec: {{template: {{spec: {{containers: [{{name: c, image: x}}]}}}}}}\n---\n"
    )
    jobs = job.format(name="ok", cls="prod") + job.format(name="typo", cls="prdo")
    result = load_text(parent + child + jobs, filename="q.yaml")
    assert [(f.line, f.message) for f in result.findings] == [
        (
            25,
            "priority class 'prdo' is not defined in queue team (its priorityClasses: prod)"
            " (did you mean 'prod'?)",
        )
    ]
    held = [
        Queue.model_validate(
            {"metadata": {"name": "dept"}, "spec": {"priorityClasses": {"prod": 1000}}}
        ),
        Queue.model_validate({"metadata": {"name": "team"}, "spec": {"parent": "dept"}}),
    ]
    judged = load_text(jobs, filename="j.yaml").with_stored_queues(held)
    assert [f.line for f in judged.findings] == [14], "only the typo, on the server too"
