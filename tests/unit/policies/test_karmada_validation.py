"""What Karmada's webhook refuses, `fedctl validate` refuses, naming the file, line and field.

Rules from `pkg/util/validation/validation.go`: one spread constraint per spreadByField,
qualified affinity names, JSON pointers for image predicates and field overriders,
Kubernetes label and annotation keys, and a field overrider that is JSON or YAML, not both.
What Karmada accepts and ignores (a value on a plaintext `remove`) loads with a warning.
"""

from __future__ import annotations

import textwrap

import pytest

from policies.loading import LoadResult, load_text


def load(text: str) -> LoadResult:
    return load_text(textwrap.dedent(text), filename="k.yaml")


def lines(result: LoadResult) -> list[str]:
    return [str(f) for f in result.findings]


def pp(placement: str) -> str:
    """A PropagationPolicy whose placement is `placement` (indented by four)."""
    head = """\
        apiVersion: policy.karmada.io/v1alpha1
        kind: PropagationPolicy
        metadata: {name: web, namespace: default}
        spec:
          resourceSelectors:
            - {apiVersion: apps/v1, kind: Deployment, name: web}
          placement:
        """
    return textwrap.dedent(head) + textwrap.indent(textwrap.dedent(placement), "    ")


def op(overriders: str) -> str:
    """An OverridePolicy with one rule whose overriders are `overriders` (indented by eight)."""
    head = """\
        apiVersion: policy.karmada.io/v1alpha1
        kind: OverridePolicy
        metadata: {name: web, namespace: default}
        spec:
          overrideRules:
            - overriders:
        """
    return textwrap.dedent(head) + textwrap.indent(textwrap.dedent(overriders), "        ")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            pp(
                """\
                spreadConstraints:
                  - {spreadByField: cluster, minGroups: 1, maxGroups: 1}
                  - {spreadByField: cluster, minGroups: 2, maxGroups: 2}
                """
            ),
            [
                "k.yaml:10:25: spec.placement.spreadConstraints[1].spreadByField: a second spread"
                " constraint by cluster (the first is spreadConstraints[0]): only one"
                " constraint per spreadByField is allowed"
            ],
            id="two cluster spread constraints",
        ),
        pytest.param(
            pp(
                """\
                spreadConstraints:
                  - {minGroups: 2}
                  - {spreadByField: cluster, spreadByLabel: rack, minGroups: 3, maxGroups: 2}
                """
            ),
            [
                "k.yaml:10:49: spec.placement.spreadConstraints[1].spreadByLabel: spreadByField"
                " and spreadByLabel cannot both be set",
                "k.yaml:10:66: spec.placement.spreadConstraints[1].minGroups: minGroups (3) must"
                " not exceed maxGroups (2)",
            ],
            id="every broken rule of one spread constraint is reported",
        ),
        pytest.param(
            pp(
                """\
                spreadConstraints:
                  - {minGroups: 2}
                  - {spreadByField: cluster, maxGroups: 3}
                  - {spreadByField: region, minGroups: 2}
                  - {spreadByField: region, minGroups: 3}
                """
            ),
            [
                "k.yaml:10:25: spec.placement.spreadConstraints[1].spreadByField: a second spread"
                " constraint by cluster (the first is spreadConstraints[0]): only one"
                " constraint per spreadByField is allowed",
                "k.yaml:12:25: spec.placement.spreadConstraints[3].spreadByField: a second spread"
                " constraint by region (the first is spreadConstraints[2]): only one"
                " constraint per spreadByField is allowed",
            ],
            id="a constraint without a field is by cluster, and each repeat is reported",
        ),
        pytest.param(
            pp(
                """\
                clusterAffinities:
                  - {affinityName: "Bad Name!", clusterNames: [a]}
                  - {affinityName: example.com/primary, clusterNames: [b]}
                  - {affinityName: Example.com/backup, clusterNames: [c]}
                """
            ),
            [
                "k.yaml:9:24: spec.placement.clusterAffinities[0].affinityName: affinityName"
                " 'Bad Name!' is not a qualified name: its name part must be letters, digits,"
                " '-', '_' or '.', beginning and ending with a letter or digit",
                "k.yaml:11:24: spec.placement.clusterAffinities[2].affinityName: affinityName"
                " 'Example.com/backup' is not a qualified name: its prefix 'Example.com' is not"
                " a DNS subdomain (lowercase letters, digits, '-' and '.')",
            ],
            id="affinity names that are not qualified names",
        ),
        pytest.param(
            pp(
                """\
                clusterTolerations:
                  - {key: "bad key", operator: Exists}
                  - {key: example.com/gpu, operator: Equal, value: "a b"}
                spreadConstraints:
                  - {spreadByLabel: "a/b/c", minGroups: 1}
                """
            ),
            [
                "k.yaml:9:15: spec.placement.clusterTolerations[0].key: toleration key 'bad key'"
                " is not a qualified name: its name part must be letters, digits, '-', '_' or"
                " '.', beginning and ending with a letter or digit",
                "k.yaml:10:56: spec.placement.clusterTolerations[1].value: toleration value"
                " 'a b' of 'example.com/gpu' is not valid: it must be empty or letters, digits,"
                " '-', '_' or '.', beginning and ending with a letter or digit",
                "k.yaml:12:25: spec.placement.spreadConstraints[0].spreadByLabel: spreadByLabel"
                " key 'a/b/c' is not a qualified name: it has more than one '/'",
            ],
            id="toleration and grouping label keys no cluster can carry",
        ),
        pytest.param(
            op(
                """\
                imageOverrider:
                  - predicate: {path: spec/template/spec/containers/0/image}
                    component: Registry
                    operator: replace
                    value: m.io
                """
            ),
            [
                "k.yaml:8:31: spec.overrideRules[0].overriders.imageOverrider[0].predicate.path:"
                " path 'spec/template/spec/containers/0/image' is not a JSON pointer: it must"
                " start with '/' (e.g. /spec/template/spec/containers/0/image)"
            ],
            id="an image predicate path without its leading slash",
        ),
        pytest.param(
            op(
                """\
                labelsOverrider:
                  - operator: add
                    value: {"bad key!": x, example.com/team: "not valid!", ok: ""}
                """
            ),
            [
                "k.yaml:9:21: spec.overrideRules[0].overriders.labelsOverrider[0]"
                ".value[\"bad key!\"]: label key 'bad key!' is not a qualified name: its name"
                " part must be letters, digits, '-', '_' or '.', beginning and ending with a"
                " letter or digit",
                "k.yaml:9:54: spec.overrideRules[0].overriders.labelsOverrider[0]"
                ".value[\"example.com/team\"]: label value 'not valid!' of 'example.com/team'"
                " is not valid: it must be empty or letters, digits, '-', '_' or '.', beginning"
                " and ending with a letter or digit",
            ],
            id="label keys and values Kubernetes refuses",
        ),
        pytest.param(
            op(
                """\
                annotationsOverrider:
                  - operator: add
                    value: {"bad key with spaces": x, Example.COM/Note: y, a/b/c: z}
                """
            ),
            [
                "k.yaml:9:21: spec.overrideRules[0].overriders.annotationsOverrider[0]"
                ".value[\"bad key with spaces\"]: annotation key 'bad key with spaces' is not a"
                " qualified name: its name part must be letters, digits, '-', '_' or '.',"
                " beginning and ending with a letter or digit",
                "k.yaml:9:68: spec.overrideRules[0].overriders.annotationsOverrider[0]"
                ".value[\"a/b/c\"]: annotation key 'a/b/c' is not a qualified name: it has more"
                " than one '/'",
            ],
            id="annotation keys Kubernetes refuses (their case is free)",
        ),
        pytest.param(
            op(
                """\
                fieldOverrider:
                  - fieldPath: data/config.json
                    json: [{subPath: /a, operator: add}]
                    yaml: [{subPath: b, operator: remove}]
                """
            ),
            [
                "k.yaml:8:24: spec.overrideRules[0].overriders.fieldOverrider[0].fieldPath: path"
                " 'data/config.json' is not a JSON pointer: it must start with '/'"
                " (e.g. /data/config.json)",
                "k.yaml:9:20: spec.overrideRules[0].overriders.fieldOverrider[0].json[0].value:"
                " operator add needs a value",
                "k.yaml:10:30: spec.overrideRules[0].overriders.fieldOverrider[0].yaml[0]"
                ".subPath: path 'b' is not a JSON pointer: it must start with '/' (e.g. /b)",
            ],
            id="a field overrider's paths and values",
        ),
        pytest.param(
            op(
                """\
                fieldOverrider:
                  - fieldPath: /data/config.json
                    json: [{subPath: /a, operator: add, value: 1}]
                    yaml: [{subPath: /b, operator: replace, value: 1}]
                """
            ),
            [
                "k.yaml:10:13: spec.overrideRules[0].overriders.fieldOverrider[0].yaml: json and"
                " yaml cannot both be set"
            ],
            id="a field overrider with both json and yaml",
        ),
    ],
)
def test_what_karmada_refuses_is_refused_at_its_field(text: str, expected: list[str]) -> None:
    result = load(text)

    assert lines(result) == expected
    assert result.objects == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            op(
                """\
                plaintext:
                  - {path: /metadata/annotations, operator: remove, value: ""}
                """
            ),
            [
                "k.yaml:8:68: spec.overrideRules[0].overriders.plaintext[0].value: warning:"
                " ignored: operator remove takes no value (Karmada ignores it as well)"
            ],
            id="a plaintext removal with a value",
        ),
        pytest.param(
            op(
                """\
                imageOverrider:
                  - {component: Tag, operator: replace, value: -debug}
                """
            ),
            [
                "k.yaml:8:56: spec.overrideRules[0].overriders.imageOverrider[0].value: warning:"
                " '-debug' is neither a tag nor a digest (sha256:<hex>): as in Karmada, the"
                " image is left unchanged"
            ],
            id="a tag replacement that is neither a tag nor a digest",
        ),
        pytest.param(
            pp(
                """\
                spreadConstraints:
                  - {spreadByField: region, minGroups: 2}
                """
            ),
            [],
            id="spread by region without a cluster constraint (a fedctl extension)",
        ),
        pytest.param(
            pp(
                """\
                spreadConstraints:
                  - {spreadByLabel: rack}
                  - {spreadByLabel: rack}
                  - {spreadByField: cluster}
                """
            ),
            [
                "k.yaml:10:9: spec.placement.spreadConstraints[1]: warning: workloads this"
                " policy places stay Pending: fedctl spreads by one of region, zone, provider"
                " or a label at a time, and spreadConstraints[0] spreads by label rack"
            ],
            id="label constraints are not counted per field, as in Karmada (a warning)",
        ),
    ],
)
def test_what_karmada_accepts_loads(text: str, expected: list[str]) -> None:
    result = load(text)

    assert lines(result) == expected
    assert len(result.objects) == 1
