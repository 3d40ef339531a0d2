"""Karmada's policy kinds: written the way Karmada's documentation writes them, they load as is.

Cross-field rules that Karmada's webhook enforces are enforced at load time, with messages
that name the field, and fields fedctl accepts without acting on them yet are warned about.
"""

from __future__ import annotations

import textwrap

import pytest

from federation.resources import ResourceList
from policies.loading import LoadResult, load_text
from policies.models.common import ClusterAffinity
from policies.models.frq import FederatedResourceQuota
from policies.models.override import ClusterOverridePolicy, OverridePolicy
from policies.models.propagation import (
    ClusterPropagationPolicy,
    FedctlPropagationPolicy,
    PropagationPolicy,
)


def load(text: str) -> LoadResult:
    return load_text(textwrap.dedent(text), filename="k.yaml")


def lines(result: LoadResult) -> list[str]:
    return [str(f) for f in result.findings]


PP = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
  namespace: default
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
"""


def pp(spec_tail: str) -> str:
    """A PropagationPolicy whose spec continues with `spec_tail` (indented by two)."""
    return PP + textwrap.indent(textwrap.dedent(spec_tail), "  ")


KARMADA_STYLE = [
    pytest.param(
        """
        placement:
          clusterAffinity:
            labelSelector:
              matchLabels:
                location: us
              matchExpressions:
                - key: env
                  operator: NotIn
                  values: [test]
            fieldSelector:
              matchExpressions:
                - key: region
                  operator: In
                  values: [cn-south-1, cn-north-1]
            exclude:
              - member3
        """,
        id="cluster affinity by labels, fields and exclusion",
    ),
    pytest.param(
        """
        placement:
          clusterAffinities:
            - affinityName: local-clusters
              clusterNames: [local-member1, local-member2]
            - affinityName: cloud-clusters
              labelSelector:
                matchLabels:
                  provider: cloud
        """,
        id="ordered cluster affinity groups as fallbacks",
    ),
    pytest.param(
        """
        placement:
          clusterTolerations:
            - key: cluster.karmada.io/not-ready
              operator: Exists
              effect: NoExecute
              tolerationSeconds: 300
            - key: dedicated
              operator: Equal
              value: gpu
              effect: NoSchedule
        """,
        id="cluster tolerations with a toleration period",
    ),
    pytest.param(
        """
        placement:
          spreadConstraints:
            - spreadByField: region
              maxGroups: 2
              minGroups: 2
            - spreadByField: cluster
              maxGroups: 2
              minGroups: 2
        """,
        id="spread constraints by region and cluster",
    ),
    pytest.param(
        """
        placement:
          replicaScheduling:
            replicaSchedulingType: Duplicated
        """,
        id="duplicated replicas",
    ),
    pytest.param(
        """
        placement:
          clusterAffinity:
            clusterNames: [member1, member2]
          replicaScheduling:
            replicaSchedulingType: Divided
            replicaDivisionPreference: Weighted
            weightPreference:
              staticWeightList:
                - targetCluster:
                    clusterNames: [member1]
                  weight: 1
                - targetCluster:
                    labelSelector:
                      matchLabels:
                        tier: big
                  weight: 2
        """,
        id="divided by a static weight list",
    ),
    pytest.param(
        """
        placement:
          replicaScheduling:
            replicaSchedulingType: Divided
            replicaDivisionPreference: Weighted
            weightPreference:
              dynamicWeight: AvailableReplicas
        """,
        id="divided by available replicas",
    ),
    pytest.param(
        """
        placement:
          replicaScheduling:
            replicaSchedulingType: Divided
            replicaDivisionPreference: Aggregated
        """,
        id="divided into as few clusters as possible",
    ),
    pytest.param(
        """
        propagateDeps: true
        priority: 10
        conflictResolution: Overwrite
        suspension:
          dispatchingOnClusters:
            clusterNames: [member2]
        failover:
          application:
            decisionConditions:
              tolerationSeconds: 120
            purgeMode: Graciously
            gracePeriodSeconds: 600
        """,
        id="priority, conflict resolution, suspension and application failover",
    ),
    pytest.param(
        """
        propagateDeps: true
        failover:
          application:
            decisionConditions:
              tolerationSeconds: 60
            purgeMode: Directly
          cluster:
            purgeMode: Gracefully
        """,
        id="the newer purge mode spellings and cluster failover",
    ),
]


@pytest.mark.parametrize("spec_tail", KARMADA_STYLE)
def test_karmada_propagation_policies_load_without_findings(spec_tail: str) -> None:
    result = load(pp(spec_tail))

    assert lines(result) == []
    assert isinstance(result.objects[0].model, PropagationPolicy)


def test_a_propagation_policy_keeps_karmada_defaults() -> None:
    result = load(pp("placement:\n  replicaScheduling: {}\n"))

    spec = result.objects[0].model.spec  # type: ignore[attr-defined]
    assert (spec.priority, spec.preemption, spec.conflict_resolution) == (0, "Never", "Abort")
    assert spec.placement.replica_scheduling.replica_scheduling_type == "Divided"
    assert spec.placement.replica_scheduling.division == "Weighted"
    assert spec.placement.affinity_terms == [ClusterAffinity()]


def test_without_replica_scheduling_karmada_duplicates() -> None:
    result = load(PP)

    spec = result.objects[0].model.spec  # type: ignore[attr-defined]
    assert spec.placement.replica_scheduling is None
    assert spec.placement.scheduling.replica_scheduling_type == "Duplicated"


def test_a_cluster_propagation_policy_selecting_namespaces() -> None:
    result = load(
        """\
        apiVersion: policy.karmada.io/v1alpha1
        kind: ClusterPropagationPolicy
        metadata:
          name: namespaces
        spec:
          resourceSelectors:
            - apiVersion: v1
              kind: Namespace
              labelSelector:
                matchExpressions:
                  - key: team
                    operator: Exists
          placement:
            clusterAffinity:
              clusterNames: [member1]
        """
    )

    assert lines(result) == []
    assert isinstance(result.objects[0].model, ClusterPropagationPolicy)


OVERRIDE = """\
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata:
  name: example
  namespace: default
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
      labelSelector:
        matchLabels:
          app: nginx
  overrideRules:
    - targetCluster:
        clusterNames: [member1]
      overriders:
        plaintext:
          - path: /spec/template/spec/containers/0/image
            operator: replace
            value: nginx:1.19.0
          - path: /metadata/annotations
            operator: add
            value:
              foo: bar
          - path: /metadata/labels/unwanted
            operator: remove
        imageOverrider:
          - predicate:
              path: /spec/template/spec/containers/0/image
            component: Registry
            operator: replace
            value: registry.cn-hangzhou.aliyuncs.com
          - component: Tag
            operator: remove
        commandOverrider:
          - containerName: nginx
            operator: add
            value: [--cluster=member1]
        argsOverrider:
          - containerName: nginx
            operator: remove
            value: [--debug]
        labelsOverrider:
          - operator: add
            value:
              cluster: member1
        annotationsOverrider:
          - operator: remove
            value:
              deprecated: ""
    - overriders:
        labelsOverrider:
          - operator: replace
            value:
              tier: web
"""


def test_an_override_policy_with_every_overrider() -> None:
    result = load(OVERRIDE)

    assert lines(result) == []
    model = result.objects[0].model
    assert isinstance(model, OverridePolicy)
    rules = model.spec.effective_rules()
    assert [r.target_cluster for r in rules] == [ClusterAffinity(cluster_names=["member1"]), None]
    assert rules[0].overriders.plaintext[1].value == {"foo": "bar"}


def test_the_deprecated_single_rule_form_loads_with_a_warning() -> None:
    result = load(
        """\
        apiVersion: policy.karmada.io/v1alpha1
        kind: ClusterOverridePolicy
        metadata:
          name: legacy
        spec:
          resourceSelectors:
            - apiVersion: apps/v1
              kind: Deployment
          targetCluster:
            clusterNames: [member1]
          overriders:
            imageOverrider:
              - component: Registry
                operator: replace
                value: mirror.example.com
        """
    )

    assert lines(result) == [
        "k.yaml:11:3: spec.overriders: warning: deprecated since Karmada v1.0:"
        " use overrideRules instead"
    ]
    model = result.objects[0].model
    assert isinstance(model, ClusterOverridePolicy)
    (rule,) = model.spec.effective_rules()
    assert rule.target_cluster == ClusterAffinity(cluster_names=["member1"])
    assert rule.overriders.image_overrider[0].value == "mirror.example.com"


FRQ = """\
apiVersion: policy.karmada.io/v1alpha1
kind: FederatedResourceQuota
metadata:
  name: team-quota
  namespace: team
spec:
  overall:
    cpu: 100
    memory: 200Gi
    nvidia.com/gpu: 8
  staticAssignments:
    - clusterName: member1
      hard:
        cpu: 20
        memory: 50Gi
    - clusterName: member2
      hard:
        cpu: 80
        requests.nvidia.com/gpu: 8
"""


def test_a_federated_resource_quota() -> None:
    result = load(FRQ)

    assert lines(result) == []
    model = result.objects[0].model
    assert isinstance(model, FederatedResourceQuota)
    assert model.spec.overall == ResourceList.from_wire(
        {"cpu": "100", "memory": "200Gi", "nvidia.com/gpu": "8"}
    )
    assert model.spec.static_assignments[1].hard.amount("nvidia.com/gpu") == 8000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            pp(
                """
                placement:
                  clusterAffinity:
                    clusterNames: [a]
                  clusterAffinities:
                    - affinityName: primary
                      clusterNames: [b]
                """
            ),
            "k.yaml:15:5: spec.placement.clusterAffinities: clusterAffinity and"
            " clusterAffinities cannot both be set",
            id="clusterAffinity and clusterAffinities together",
        ),
        pytest.param(
            pp(
                """
                placement:
                  replicaScheduling:
                    replicaSchedulingType: Divided
                    weightPreference:
                      staticWeightList:
                        - targetCluster:
                            clusterNames: [a]
                          weight: 0
                """
            ),
            "k.yaml:19:21: spec.placement.replicaScheduling.weightPreference"
            ".staticWeightList[0].weight: must be greater than 0, got 0",
            id="a static weight of zero",
        ),
        pytest.param(
            pp(
                """
                placement:
                  clusterAffinities:
                    - affinityName: primary
                      clusterNames: [a]
                    - affinityName: primary
                      clusterNames: [b]
                """
            ),
            "k.yaml:16:23: spec.placement.clusterAffinities[1].affinityName:"
            " duplicate affinityName 'primary'",
            id="two affinity groups with one name",
        ),
        pytest.param(
            pp(
                "placement:\n  spreadConstraints:\n"
                "    - {spreadByField: region, spreadByLabel: x}\n"
            ),
            "k.yaml:13:48: spec.placement.spreadConstraints[0].spreadByLabel: spreadByField and"
            " spreadByLabel cannot both be set",
            id="spread by field and by label at once",
        ),
        pytest.param(
            pp(
                "placement:\n  spreadConstraints:\n    - {spreadByField: region, minGroups: 3,"
                " maxGroups: 2}\n"
            ),
            "k.yaml:13:44: spec.placement.spreadConstraints[0].minGroups: minGroups (3) must not"
            " exceed maxGroups (2)",
            id="more minimum groups than maximum",
        ),
        pytest.param(
            pp(
                "suspension:\n  dispatching: true\n  dispatchingOnClusters:\n"
                "    clusterNames: [a]\n"
            ),
            "k.yaml:13:5: spec.suspension.dispatchingOnClusters: dispatching and"
            " dispatchingOnClusters cannot both be set",
            id="suspend everywhere and on some clusters",
        ),
        pytest.param(
            pp("failover:\n  cluster:\n    purgeMode: Never\n"),
            "k.yaml:13:18: spec.failover.cluster.purgeMode: purgeMode Never applies only to"
            " application failover; a cluster failover purges the old copy Directly (at once)"
            " or Gracefully (once the workload is ready elsewhere)",
            id="never purging after a cluster failover",
        ),
        pytest.param(
            pp("propagateDeps: true\nfailover:\n  application:\n    purgeMode: Never\n"),
            "k.yaml:14:18: spec.failover.application.purgeMode: purgeMode Never is not"
            " supported yet: fedctl would have to keep the old copy until someone confirms its"
            " deletion; use Gracefully with gracePeriodSeconds",
            id="never purging after an application failover",
        ),
        pytest.param(
            pp("failover:\n  application:\n    purgeMode: Directly\n"),
            "k.yaml:6:1: spec.propagateDeps: failover.application is set, so propagateDeps"
            " must be true",
            id="application failover without its dependencies",
        ),
        pytest.param(
            pp(
                "propagateDeps: true\nfailover:\n  application:\n    purgeMode: Immediately\n"
                "    gracePeriodSeconds: 60\n"
            ),
            "k.yaml:15:27: spec.failover.application.gracePeriodSeconds: gracePeriodSeconds"
            " applies only to purgeMode Gracefully, not Immediately",
            id="a grace period for an immediate purge",
        ),
        pytest.param(
            pp(
                "placement:\n  clusterAffinity:\n    fieldSelector:\n      matchExpressions:\n"
                "        - {key: city, operator: In, values: [paris]}\n"
            ),
            "k.yaml:15:19: spec.placement.clusterAffinity.fieldSelector.matchExpressions[0].key:"
            " invalid value 'city': expected one of provider, region, zone",
            id="a field selector on a field Karmada does not have",
        ),
        pytest.param(
            pp(
                "placement:\n  clusterAffinity:\n    labelSelector:\n      matchExpressions:\n"
                "        - {key: env, operator: In}\n"
            ),
            "k.yaml:15:13: spec.placement.clusterAffinity.labelSelector.matchExpressions[0]"
            ".values: operator In needs at least one value",
            id="a label expression In without values",
        ),
        pytest.param(
            pp("placement:\n  clusterTolerations:\n    - {key: a, operator: Exists, value: b}\n"),
            "k.yaml:13:43: spec.placement.clusterTolerations[0].value: operator Exists takes"
            " no value",
            id="a toleration that both exists and equals",
        ),
        pytest.param(
            PP.replace(
                "  resourceSelectors:\n    - apiVersion: apps/v1\n      kind: Deployment\n"
                "      name: nginx\n",
                "  resourceSelectors: []\n",
            ),
            "k.yaml:7:3: spec.resourceSelectors: must have at least 1 item",
            id="no resource selector at all",
        ),
        pytest.param(
            pp("fedctl:\n  chips: [ascend-910b]\n"),
            "k.yaml:11:3: spec.fedctl: unknown field 'fedctl'; known fields: activationPreference,"
            " association, conflictResolution, dependentOverrides, failover, placement,"
            " preemption, preserveResourcesOnDeletion, priority, propagateDeps,"
            " resourceSelectors, schedulePriority, schedulerName, suspension",
            id="spec.fedctl needs the fedctl.io apiVersion",
        ),
        pytest.param(
            FRQ.replace("        memory: 50Gi\n", "        memory: 50Gi\n        pods: 10\n"),
            "k.yaml:16:15: spec.staticAssignments[0].hard.pods: resource 'pods' is assigned"
            " but not present in overall",
            id="an assigned resource missing from overall",
        ),
        pytest.param(
            FRQ.replace("        cpu: 80\n", "        cpu: 81\n"),
            "k.yaml:8:10: spec.overall.cpu: static assignments of 'cpu' add up to 101,"
            " more than overall 100",
            id="assignments adding up to more than overall",
        ),
        pytest.param(
            FRQ.replace("clusterName: member2", "clusterName: member1"),
            "k.yaml:16:20: spec.staticAssignments[1].clusterName: cluster 'member1' is"
            " assigned twice (also staticAssignments[0])",
            id="one cluster assigned twice",
        ),
        pytest.param(
            OVERRIDE.replace("            value: registry.cn-hangzhou.aliyuncs.com\n", ""),
            "k.yaml:29:13: spec.overrideRules[0].overriders.imageOverrider[0].value:"
            " operator replace needs a value",
            id="an image replacement without a value",
        ),
        pytest.param(
            OVERRIDE.replace("- path: /metadata/annotations", "- path: spec/replicas"),
            "k.yaml:22:19: spec.overrideRules[0].overriders.plaintext[1].path: path"
            " 'spec/replicas' is not a JSON pointer: it must start with '/' (e.g. /spec/replicas)",
            id="a plaintext path that is not a JSON pointer",
        ),
        pytest.param(
            OVERRIDE.replace(
                "  overrideRules:\n",
                "  overriders:\n    labelsOverrider: [{operator: add, value: {a: b}}]\n"
                "  overrideRules:\n",
            ),
            "k.yaml:14:3: spec.overriders: overrideRules cannot be combined with the deprecated"
            " targetCluster/overriders",
            id="the deprecated form mixed with overrideRules",
        ),
    ],
)
def test_cross_field_rules(text: str, expected: str) -> None:
    result = load(text)

    assert lines(result) == [expected]
    assert result.objects == []


@pytest.mark.parametrize(
    ("spec_tail", "expected"),
    [
        pytest.param(
            "dependentOverrides: [op-a]\n",
            "k.yaml:11:3: spec.dependentOverrides: warning: dependentOverrides is accepted but"
            " not acted on: fedctl does not wait for dependent overrides yet",
            id="dependent overrides",
        ),
        pytest.param(
            "activationPreference: Lazy\n",
            "k.yaml:11:25: spec.activationPreference: warning: activationPreference is accepted"
            " but not acted on: lazy activation is not implemented yet",
            id="lazy activation",
        ),
        pytest.param(
            "schedulePriority:\n  priorityClassSource: KubePriorityClass\n"
            "  priorityClassName: high\n",
            "k.yaml:11:3: spec.schedulePriority: warning: schedulePriority is accepted but not"
            " acted on: use a queue or the fedctl.io/priority annotation instead",
            id="schedule priority",
        ),
        pytest.param(
            "association: true\n",
            "k.yaml:11:16: spec.association: warning: association is accepted but not acted"
            " on: deprecated in Karmada in favour of propagateDeps",
            id="the deprecated association flag",
        ),
        pytest.param(
            "placement:\n  workloadAffinity:\n    affinity:\n      groupByLabelKey: app\n",
            "k.yaml:12:5: spec.placement.workloadAffinity: warning: placement.workloadAffinity"
            " is accepted but not acted on: workload affinity is not implemented yet",
            id="workload affinity",
        ),
        pytest.param(
            "propagateDeps: true\nfailover:\n  application:\n    statePreservation:\n"
            "      rules:\n        - {aliasLabelName: ckpt, jsonPath: '{.checkpoint}'}\n",
            "k.yaml:14:7: spec.failover.application.statePreservation: warning:"
            " failover.application.statePreservation is accepted but not acted on:"
            " state preservation is not implemented",
            id="application state preservation",
        ),
        pytest.param(
            "failover:\n  cluster:\n    statePreservation:\n"
            "      rules:\n        - {aliasLabelName: ckpt, jsonPath: '{.checkpoint}'}\n",
            "k.yaml:13:7: spec.failover.cluster.statePreservation: warning:"
            " failover.cluster.statePreservation is accepted but not acted on:"
            " state preservation is not implemented",
            id="state preservation",
        ),
        pytest.param(
            "placement:\n  replicaScheduling:\n    replicaSchedulingType: Duplicated\n"
            "    replicaDivisionPreference: Weighted\n",
            "k.yaml:14:34: spec.placement.replicaScheduling.replicaDivisionPreference: warning:"
            " ignored: replicas are not divided when replicaSchedulingType is Duplicated",
            id="a division preference for duplicated replicas",
        ),
        pytest.param(
            "placement:\n  replicaScheduling:\n    weightPreference:\n"
            "      dynamicWeight: AvailableReplicas\n      staticWeightList:\n"
            "        - {targetCluster: {clusterNames: [a]}, weight: 1}\n",
            "k.yaml:15:9: spec.placement.replicaScheduling.weightPreference.staticWeightList:"
            " warning: ignored: dynamicWeight is set, so the static weight list has no effect",
            id="a static weight list next to a dynamic weight",
        ),
        pytest.param(
            "placement:\n  spreadConstraints:\n    - {spreadByField: region, minGroups: 2}\n"
            "    - {spreadByField: cluster, maxGroups: 2}\n"
            "    - {spreadByLabel: topology.example.com/rack}\n",
            "k.yaml:15:9: spec.placement.spreadConstraints[2]: warning: workloads this policy"
            " places stay Pending: fedctl spreads by one of region, zone, provider or a label at"
            " a time, and spreadConstraints[0] spreads by region",
            id="spread by region and by a label",
        ),
        pytest.param(
            "placement:\n  spreadConstraints:\n    - {spreadByField: zone, minGroups: 3}\n"
            "    - {spreadByField: cluster, maxGroups: 2}\n",
            "k.yaml:14:45: spec.placement.spreadConstraints[1].maxGroups: warning: exceeded: as"
            " in Karmada, the best cluster of each of at least 3 zones (spreadConstraints[0]) is"
            " taken, more than 2",
            id="more zones than clusters",
        ),
        pytest.param(
            "placement:\n  replicaScheduling:\n    replicaSchedulingType: Divided\n"
            "    weightPreference:\n      staticWeightList:\n"
            "        - {targetCluster: {clusterNames: [a]}, weight: 1}\n"
            "  spreadConstraints:\n    - {spreadByField: cluster, maxGroups: 2}\n",
            "k.yaml:17:5: spec.placement.spreadConstraints: warning: ignored: replicas are"
            " divided by static weights, which spread constraints do not bound (as in Karmada)",
            id="spread under static weights",
        ),
        pytest.param(
            "placement:\n  replicaScheduling:\n    replicaSchedulingType: Divided\n"
            "  spreadConstraints:\n    - {spreadByField: cluster, maxGroups: 2}\n",
            "k.yaml:14:5: spec.placement.spreadConstraints: warning: ignored: replicas are"
            " divided as Karmada divides without a weightPreference (equal static weights),"
            " which ignores spread constraints",
            id="spread divided with no weights given",
        ),
    ],
)
def test_fields_not_acted_on_are_named_in_a_warning(spec_tail: str, expected: str) -> None:
    result = load(pp(spec_tail))

    assert lines(result) == [expected]
    assert result.ok
    assert len(result.objects) == 1


JOBS = PP.replace(
    "apiVersion: apps/v1\n      kind: Deployment\n      name: nginx\n",
    "apiVersion: batch/v1\n      kind: Job\n",
)
SPREAD = "  spreadConstraints:\n    - {spreadByField: region, minGroups: 2}\n"


@pytest.mark.parametrize(
    ("scheduling", "at"),
    [
        pytest.param("", "12:44", id="duplicated by default"),
        pytest.param(
            "  replicaScheduling:\n    replicaSchedulingType: Divided\n"
            "    replicaDivisionPreference: Aggregated\n",
            "15:44",
            id="aggregated",
        ),
    ],
)
def test_groups_a_whole_job_cannot_span_are_warned_about(scheduling: str, at: str) -> None:
    """A Job goes whole to one cluster unless divided by weight (`plan` places it so,
    passing over the constraint): said at apply, where the policy is edited."""
    result = load(JOBS + "  placement:\n" + textwrap.indent(scheduling + SPREAD, "  "))

    assert lines(result) == [
        f"k.yaml:{at}: spec.placement.spreadConstraints[0].minGroups:"
        " warning: not applied to the Jobs this policy selects: a job goes whole to one"
        " cluster unless its replicas are divided by weight, so it runs in one region, not 2"
    ]
    assert result.ok


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(pp("placement:\n" + SPREAD), id="a Deployment spreads"),
        pytest.param(
            JOBS + "  placement:\n    replicaScheduling:\n      replicaSchedulingType: Divided\n"
            "      weightPreference: {dynamicWeight: AvailableReplicas}\n"
            + textwrap.indent(SPREAD, "  "),
            id="a Job divided by free capacity spreads",
        ),
        pytest.param(
            JOBS
            + "  placement:\n    spreadConstraints:\n"
            + "      - {spreadByField: region, minGroups: 1}\n",
            id="one group",
        ),
    ],
)
def test_groups_a_job_can_span_are_not_warned_about(text: str) -> None:
    assert lines(load(text)) == []


def test_defaults_do_not_warn() -> None:
    result = load(pp("preemption: Never\nschedulerName: default-scheduler\nassociation: false\n"))

    assert lines(result) == []


def test_a_field_overrider_is_named_in_a_warning() -> None:
    text = OVERRIDE.replace(
        "    - overriders:\n",
        "    - overriders:\n        fieldOverrider:\n          - fieldPath: /data/config.yaml\n"
        "            yaml:\n              - {subPath: /db/host, operator: replace, value: db}\n",
    )

    result = load(text)

    assert lines(result) == [
        "k.yaml:53:9: spec.overrideRules[1].overriders.fieldOverrider: warning: fieldOverrider"
        " is accepted but not acted on: editing a JSON or YAML document held in a string"
        " field is not implemented yet"
    ]


FEDCTL_PP = """\
apiVersion: fedctl.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: train
  namespace: ml
spec:
  resourceSelectors:
    - apiVersion: batch/v1
      kind: Job
  fedctl:
    chips: [nvidia-a100-80gb, ascend-910c]
    expectedDuration: 2h30m
"""

PROFILE = """\
---
apiVersion: fedctl.io/v1alpha1
kind: AcceleratorProfile
metadata:
  name: nvidia-a100-80gb
spec:
  arch: amd64
  resourceName: nvidia.com/gpu
---
apiVersion: fedctl.io/v1alpha1
kind: Cluster
metadata:
  name: cn-north-npu
spec:
  region: cn-north
  chips:
    - {model: ascend-910b, arch: arm64, count: 8}
"""


def test_the_fedctl_variant_carries_the_placement_extension() -> None:
    result = load(FEDCTL_PP.replace("ascend-910c", "ascend-910b") + PROFILE)

    assert lines(result) == []
    model = result.objects[0].model
    assert isinstance(model, FedctlPropagationPolicy)
    assert model.spec.fedctl is not None
    assert model.spec.fedctl.chips == ["nvidia-a100-80gb", "ascend-910b"]
    assert model.spec.fedctl.expected_duration == 9000


def test_a_chip_defined_nowhere_is_a_warning_across_documents() -> None:
    result = load(FEDCTL_PP + PROFILE)

    assert lines(result) == [
        "k.yaml:11:31: spec.fedctl.chips[1]: warning: chip 'ascend-910c' is not defined by any"
        " AcceleratorProfile or Cluster in the loaded documents (did you mean 'ascend-910b'?)"
    ]
    assert result.ok


def test_a_workload_naming_an_unknown_chip_is_a_warning() -> None:
    result = load(
        """\
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: train
          annotations:
            fedctl.io/chips: nvidia-a100-80gb
        spec:
          template:
            spec:
              containers: [{name: a, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
        """
    )

    assert lines(result) == [
        'k.yaml:6:22: metadata.annotations["fedctl.io/chips"]: warning: chip'
        " 'nvidia-a100-80gb' is not defined by any AcceleratorProfile or Cluster in the loaded"
        " documents"
    ]


def test_chips_a_server_defines_are_not_warned_about() -> None:
    """What `fedctl apply` checks against the server it applies to: only the chips
    neither the documents nor the server define are named."""
    result = load(
        """\
        apiVersion: fedctl.io/v1alpha1
        kind: Queue
        metadata:
          name: research
        spec:
          capability:
            accelerator/nvidia-h100-80gb: 4
            accelerator/ascend-910c: 4
        """
    )
    assert len(result.warnings) == 2

    checked = result.with_known_chips({"nvidia-h100-80gb", "ascend-910b"})

    assert lines(checked) == [
        'k.yaml:8:30: spec.capability["accelerator/ascend-910c"]: warning: chip'
        " 'ascend-910c' is not defined by any AcceleratorProfile or Cluster in the loaded"
        " documents or on the server (did you mean 'ascend-910b'?)"
    ]
    assert not load(PROFILE).with_known_chips(()).names_undefined_chips


def test_accelerator_chips_on_a_pod_that_requests_no_device_is_a_warning() -> None:
    """A CPU-only pod never runs on accelerator nodes, so `chips: nvidia-a100-80gb` alone
    was ignored without a word, and the job ran on a CPU cluster."""
    result = load(
        """\
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: train
          annotations:
            fedctl.io/chips: nvidia-a100-80gb
        spec:
          template:
            spec:
              containers: [{name: a, image: x, resources: {requests: {cpu: 1}}}]
        """
    )

    assert lines(result)[0] == (
        'k.yaml:6:22: metadata.annotations["fedctl.io/chips"]: warning: fedctl.io/chips lists'
        " accelerator models (nvidia-a100-80gb) but no pod requests a device, and a pod without"
        " one never runs on accelerator nodes: the list is ignored (request the device, e.g."
        " nvidia.com/gpu, or list an arch)"
    )


def test_a_queue_capping_an_unknown_chip_is_a_warning() -> None:
    result = load(
        textwrap.dedent(
            """\
        apiVersion: fedctl.io/v1alpha1
        kind: Queue
        metadata:
          name: research
        spec:
          capability:
            accelerator/nvidia-a100-80gb: 8
            accelerator/nvidia-h100: 4
        """
        )
        + PROFILE
    )

    assert lines(result) == [
        'k.yaml:8:30: spec.capability["accelerator/nvidia-h100"]: warning: chip'
        " 'nvidia-h100' is not defined by any AcceleratorProfile or Cluster in the loaded"
        " documents (did you mean 'nvidia-a100-80gb'?)"
    ]


def test_every_broken_quota_rule_is_reported_at_once() -> None:
    broken = FRQ.replace("clusterName: member2", "clusterName: member1").replace(
        "        cpu: 80\n", "        cpu: 81\n        pods: 3\n"
    )
    assert lines(load(broken)) == [
        "k.yaml:8:10: spec.overall.cpu: static assignments of 'cpu' add up to 101,"
        " more than overall 100",
        "k.yaml:16:20: spec.staticAssignments[1].clusterName: cluster 'member1' is"
        " assigned twice (also staticAssignments[0])",
        "k.yaml:19:15: spec.staticAssignments[1].hard.pods: resource 'pods' is assigned but"
        " not present in overall",
    ]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        pytest.param(
            "Deploymnet",
            "k.yaml:9:13: spec.resourceSelectors[0].kind: warning: 'Deploymnet' is not a kind"
            " fedctl knows (did you mean 'Deployment'?): it selects nothing unless the members"
            " serve a custom resource of that name",
            id="a misspelt kind",
        ),
        pytest.param(
            "deployment",
            "k.yaml:9:13: spec.resourceSelectors[0].kind: warning: 'deployment' is not a kind"
            " fedctl knows (did you mean 'Deployment'?): it selects nothing unless the members"
            " serve a custom resource of that name",
            id="a kind in lower case",
        ),
        pytest.param("RayCluster", None, id="a custom resource far from every common kind"),
        pytest.param("Deployment", None, id="the kind itself"),
    ],
)
def test_a_selector_kind_that_looks_misspelt_is_warned_about(
    kind: str, expected: str | None
) -> None:
    result = load(PP.replace("kind: Deployment\n", f"kind: {kind}\n"))
    assert lines(result) == ([expected] if expected else [])
    assert result.ok


NAMED = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement:
    clusterAffinities:
      - affinityName: main
        clusterNames: [alpha, betta]
        exclude: [gamma]
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - {targetCluster: {clusterNames: [delta]}, weight: 1}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: web, namespace: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  overrideRules:
    - targetCluster: {clusterNames: [alpha], exclude: [epsilon]}
      overriders: {plaintext: [{path: /spec/replicas, operator: replace, value: 1}]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: FederatedResourceQuota
metadata: {name: web, namespace: web}
spec:
  overall: {cpu: "8"}
  staticAssignments: [{clusterName: zeta, hard: {cpu: "4"}}]
---
apiVersion: fedctl.io/v1alpha1
kind: Cluster
metadata: {name: zeta}
spec: {region: eu-west}
"""


def test_every_cluster_a_policy_or_quota_names_is_checked_against_the_joined_ones() -> None:
    """Affinity groups and their exclusions, static weights, override targets and quota
    assignments: each name not joined (nor defined alongside, as `zeta` is) is warned at
    its own place, with the closest joined name."""
    result = load(NAMED)
    assert result.ok and result.names_clusters
    checked = result.with_joined_clusters(["alpha", "beta", "gamma", "delta"])
    assert [str(f) for f in checked.warnings if "not joined" in f.message] == [
        "k.yaml:9:31: spec.placement.clusterAffinities[0].clusterNames[1]: warning: cluster"
        " 'betta' is not joined (did you mean 'beta'?): nothing is placed there, or taken from"
        " there, until a cluster of that name joins",
        "k.yaml:24:56: spec.overrideRules[0].targetCluster.exclude[0]: warning: cluster"
        " 'epsilon' is not joined: nothing is placed there, or taken from there, until a"
        " cluster of that name joins",
    ]
    assert not load(QUEUE_ONLY).names_clusters


QUEUE_ONLY = "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: q}\nspec: {}\n"


def test_preserve_resources_on_deletion_loads_without_a_warning() -> None:
    """The propagator acts on it now (copies released, not deleted, with the template)."""
    result = load(pp("preserveResourcesOnDeletion: true\n"))
    assert lines(result) == []
    [loaded] = result.objects
    assert loaded.model.spec.preserve_resources_on_deletion is True  # type: ignore[attr-defined]


def test_a_karmada_kind_stored_before_it_was_refused_still_reads() -> None:
    """A WorkloadRebalancer applied by an older release is a stored workload: the loader
    refuses a new one, but the registry still reads the old one, so it lists and deletes."""
    from federation.registry import objects
    from policies.models.workload import Workload

    rebalancer = Workload.model_validate(
        {
            "apiVersion": "apps.karmada.io/v1alpha1",
            "kind": "WorkloadRebalancer",
            "metadata": {"name": "demo"},
            "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment"}]},
        }
    )
    codec = objects.ObjectCodec()

    decoded = codec.decode("/fedctl/workloads/_/WorkloadRebalancer/demo", codec.encode(rebalancer))

    assert decoded == rebalancer
