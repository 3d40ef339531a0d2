"""Fields a Kubernetes kind does not have are refused at their line, as `kubectl apply`'s
strict field validation refuses them: a misspelt `replicas` ran one replica with no
requests, and the member copy carried both."""

from __future__ import annotations

import json
from pathlib import Path

from policies.loading import kube_fields, load_text

TYPOS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replica: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: c
          image: nginx
          resourcez: {requests: {cpu: "1"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: shop}
data: {port: 8080, enabled: true, name: web}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: vc, namespace: shop}
spec:
  anything: goes
  tasks: [{replicas: 1, template: {spec: {containers: [{name: c, image: x}]}}}]
"""


def test_unknown_fields_of_built_in_kinds_are_refused_at_their_key() -> None:
    result = load_text(TYPOS, filename="t.yaml")
    assert [str(f) for f in result.findings] == [
        "t.yaml:5:3: spec.replica: unknown field 'replica' (did you mean 'replicas'?):"
        " members refuse it",
        "t.yaml:13:11: spec.template.spec.containers[0].resourcez: unknown field 'resourcez'"
        " (did you mean 'resources'?): members refuse it",
        "t.yaml:18:14: data.port: data values are strings: quote 8080 (members refuse int"
        " values here)",
        "t.yaml:18:29: data.enabled: data values are strings: quote True (members refuse bool"
        " values here)",
    ]
    # A custom kind has no schema here: judged by the members alone.
    assert [o.model.kind for o in result.objects] == ["Job"]


def test_the_examples_have_no_unknown_field() -> None:
    examples = Path(__file__).resolve().parents[3] / "policies" / "examples"
    for path in sorted(examples.glob("*.yaml")):
        found = load_text(path.read_text(encoding="utf-8"), filename=path.name).findings
        assert not [f for f in found if "unknown field" in f.message], path


def test_the_field_table_is_the_installed_clients() -> None:
    """`python -m policies.loading.kube_fields` writes it; a client upgrade that adds
    fields must be followed by writing it again."""
    stored = json.loads(Path(kube_fields.__file__).with_name("kube_fields.json").read_text())
    assert stored == kube_fields.generate()


def test_status_is_not_judged_for_it_is_never_applied() -> None:
    """`fedctl get deploy -o yaml` adds fedctl's own fields under status, and a
    Kubernetes export carries the member's: the file applies back as kubectl's does."""
    exported = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, resourceVersion: "12"}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
status:
  health: Healthy
  phase: Scheduled
  clusters: [{name: eu, ready: 2}]
  readyReplicas: 2
"""
    result = load_text(exported, filename="sf.yaml")
    assert not result.findings, [str(f) for f in result.findings]


SECRETS = """\
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop}
stringData:
  pin: 987654321
  token: {nested: SECRETVALUE-NESTED-QQQ}
data:
  apikey: not-base64-SECRETVALUE-RRR!!
  short: YWJj=
  wrapped: "YWJj\\nZGVm"
---
apiVersion: v1
kind: ConfigMap
metadata: {name: bin, namespace: shop}
binaryData: {blob: "%%%"}
"""


def test_a_secrets_values_are_judged_and_never_quoted() -> None:
    """A Secret's values were quoted in the findings CI logs keep, and `data` that is not
    base64, which every member refuses, was accepted and propagated."""
    result = load_text(SECRETS, filename="s.yaml")
    assert [str(f) for f in result.findings] == [
        "s.yaml:8:11: data.apikey: data values are base64: illegal base64 data at input byte"
        " 3, which members refuse (give the value as typed under stringData instead, or"
        " encode it)",
        "s.yaml:9:10: data.short: data values are base64: illegal base64 data at input byte"
        " 4: misplaced padding, which members refuse (give the value as typed under"
        " stringData instead, or encode it)",
        "s.yaml:5:8: stringData.pin: stringData values are strings: quote the value"
        " (<secret contents redacted>; members refuse int values here)",
        "s.yaml:6:3: stringData.token: stringData values are strings: quote the value"
        " (<secret contents redacted>; members refuse dict values here)",
        "s.yaml:15:20: binaryData.blob: binaryData values are base64: illegal base64 data at"
        " input byte 0, which members refuse",
    ]
    assert "SECRETVALUE" not in str(result.findings)


KEYS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: keys, namespace: shop}
data:
  "bad key!": x
  good-key_1.conf: y
  "..hidden": z
binaryData:
  good-key_1.conf: eQ==
---
apiVersion: v1
kind: Secret
metadata: {name: keyed, namespace: shop}
stringData:
  "a/b": SECRETVALUE
"""


def test_data_keys_members_refuse_are_refused_at_their_line() -> None:
    """A ConfigMap key with a space was accepted and propagated, and every member refused
    the copy (`a valid config key must consist of alphanumeric characters, '-', '_' or
    '.'`); so was a key given in both `data` and `binaryData`."""
    result = load_text(KEYS, filename="k.yaml")
    assert [str(f) for f in result.findings] == [
        "k.yaml:5:15: data[\"bad key!\"]: 'bad key!' is not a valid config key: it must"
        " consist of alphanumeric characters, '-', '_' or '.' (members refuse it)",
        "k.yaml:7:15: data[\"..hidden\"]: '..hidden' is not a valid config key: it must not"
        " be '.' or start with '..' (members refuse it)",
        "k.yaml:9:20: binaryData[\"good-key_1.conf\"]: 'good-key_1.conf' is given in data"
        " too: a key is in one of data and binaryData (members refuse it)",
        "k.yaml:15:10: stringData[\"a/b\"]: 'a/b' is not a valid config key: it must consist"
        " of alphanumeric characters, '-', '_' or '.' (members refuse it)",
    ]
