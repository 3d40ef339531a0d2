"""An override policy applied is judged as its copies render, and what it writes is checked.

A per-cluster tweak applied on its own after its base policy is judged with the base's
edits (the apply route passes every stored override policy), so it is not said to fail;
a field its other edit misspells is warned about, as it would be in a template. The real
API over an in-memory registry holding storefront; the CLI is `main.main`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_api_claim_notes import registry
from tests.integration.test_scheduler_loop import with_member
from tests.serving import api_server, fedctl

pytestmark = pytest.mark.integration


BASE_ENV = """\
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: base-env}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, namespace: web}]
  overrideRules:
  - overriders:
      plaintext:
      - {operator: add, path: /spec/template/spec/containers/0/env, value: [{name: L, value: info}]}
"""

TWEAK = """\
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: tweak, namespace: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: storefront}]
  overrideRules:
  - targetCluster: {clusterNames: [us-east-cpu]}
    overriders:
      plaintext:
      - {operator: replace, path: /spec/template/spec/containers/0/env/0/value, value: debug}
      - {operator: add, path: /spec/template/spec/nodeSelectr, value: {disk: ssd}}
"""


async def test_apply_judges_an_override_after_the_stored_policies_applied_before_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The base policy applied first, its per-cluster tweak later on its own: the tweak's
    `env/0/value` exists once the base renders, so it is not said to fail; the misspelt
    field its other edit writes is said, as a template's would be."""
    base, tweak = tmp_path / "base.yaml", tmp_path / "tweak.yaml"
    base.write_text(BASE_ENV, encoding="utf-8")
    tweak.write_text(TWEAK, encoding="utf-8")
    async with api_server(await registry()) as server:
        assert await fedctl(server, "apply", "-f", str(base)) == 0
        capsys.readouterr()
        assert await fedctl(server, "apply", "-f", str(tweak)) == 0
        err = capsys.readouterr().err
    assert "will not be rendered" not in err, err
    assert (
        "Warning: OverridePolicy web/tweak overrideRules[0].plaintext[1]:"
        " spec.template.spec.nodeSelectr:"
        " unknown field 'nodeSelectr' (did you mean 'nodeSelector'?): members refuse it, in"
        " the copies of Deployment web/storefront"
    ) in err, err


MISTARGETED = """\
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: zz-owner}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, namespace: web}]
  overrideRules:
    - targetCluster: {labelSelector: {matchLabels: {tier: nonexistent}}}
      overriders: {labelsOverrider: [{operator: add, value: {owner: platform}}]}
"""


async def test_apply_of_override_policies_alone_warns_of_a_target_no_cluster_matches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file of override policies only: the joined clusters were not read, since no
    placing policy needed them, and a targetCluster label no member has went unsaid,
    where `fedctl plan` warned of it."""
    path = tmp_path / "copall.yaml"
    path.write_text(MISTARGETED, encoding="utf-8")
    store = await registry()
    await with_member(store)
    async with api_server(store) as server:
        capsys.readouterr()
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        err = capsys.readouterr().err
    assert (
        f"{path}:7:7: spec.overrideRules[0].targetCluster: warning: none of the 1 joined"
        " clusters matches this targetCluster"
    ) in err, err


SCALE = """\
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: scale, namespace: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: storefront}]
  overrideRules:
    - overriders:
        plaintext: [{path: /spec/replicas, operator: replace, value: 8}]
"""


async def test_apply_of_an_override_raising_replicas_says_quota_does_not_count_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """storefront's template has 2 replicas, which admission, quota and cost counted; the
    override makes its copies run 8, which they do not."""
    path = tmp_path / "scale.yaml"
    path.write_text(SCALE, encoding="utf-8")
    async with api_server(await registry()) as server:
        capsys.readouterr()
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        err = capsys.readouterr().err
    assert (
        "Warning: OverridePolicy web/scale overrideRules[0].plaintext[0]: Deployment"
        " web/storefront runs 8 pod(s) where its template has 2: queues,"
        " FederatedResourceQuota and cost count the template"
    ) in err, err
