"""A policy written for a workload another policy holds, or for no workload at all, is
said so where it is written and where it is planned, not left to look like a no-op.

The registry holds storefront, claimed by PropagationPolicy web/storefront (its Binding
records the claim). The real API over an in-memory registry; the CLI is `main.main`.
"""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest

from federation.registry import codec, keys, objects
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from federation.scheduler import claims, plan
from policies.loading import load_paths
from policies.models.binding import CLAIMED_BY, Binding
from policies.models.cluster import Cluster
from policies.models.propagation import PropagationPolicy
from policies.models.workload import Workload
from tests.serving import api_server, fedctl
from tests.unit.scheduler.test_loop import binding

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "policies" / "examples"

STOREFRONT = Workload.model_validate(
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "storefront", "namespace": "web"},
        "spec": {
            "replicas": 2,
            "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
            },
        },
    }
)


def policy_yaml(name: str, *, selects: str = "storefront", extra: str = "") -> str:
    return f"""\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: {name}
  namespace: web
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: {selects}
{extra}"""


PREEMPTING = policy_yaml("a-first", extra="  priority: 1\n  preemption: Always\n")
"""a-first, allowed to take storefront from the policy that claimed it."""


async def registry() -> MemoryStore:
    store = MemoryStore()
    holder = PropagationPolicy.model_validate(
        {
            "metadata": {"name": "storefront", "namespace": "web"},
            "spec": {
                "resourceSelectors": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "storefront"}
                ]
            },
        }
    )
    bound = binding(STOREFRONT, {"us-east-cpu": 2})
    bound = bound.model_copy(
        update={
            "metadata": bound.metadata.model_copy(
                update={"annotations": {CLAIMED_BY: plan.policy_id(holder)}}
            )
        }
    )
    encode = objects.ObjectCodec().encode
    await store.commit(
        [
            st.Put(objects.key_for(STOREFRONT), encode(STOREFRONT)),
            st.Put(objects.key_for(holder), encode(holder)),
            st.Put(
                keys.binding_key(objects.workload_ref(STOREFRONT)),
                codec.Codec(Binding).encode(bound),
            ),
        ]
    )
    return store


async def test_apply_warns_of_a_policy_that_a_claimed_workload_does_not_follow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "a-first" would claim storefront first on a fresh start (the same priority, both by
    # name, its name first), but storefront's Binding records web/storefront.
    path = tmp_path / "a-first.yaml"
    path.write_text(policy_yaml("a-first"), encoding="utf-8")
    async with api_server(await registry()) as server:
        capsys.readouterr()
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        out, err = capsys.readouterr()
        assert "a-first created" in out
        (warning,) = [line for line in err.splitlines() if line.startswith("Warning:")]
        assert warning == (
            "Warning: PropagationPolicy web/a-first selects Deployment web/storefront, but it"
            " stays with PropagationPolicy web/storefront, which claimed it first: a policy"
            " takes a claimed workload only with `preemption: Always` and a priority above 0"
            " (this one: preemption Never, priority 0)"
        )
        # Applied again unchanged: nothing new to say.
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        assert "Warning:" not in capsys.readouterr().err
        # With the right to preempt, it takes storefront: nothing to warn of.
        path.write_text(PREEMPTING, encoding="utf-8")
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        assert "Warning:" not in capsys.readouterr().err


async def test_apply_warns_of_a_policy_that_selects_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(policy_yaml("typo", selects="storefrnt"), encoding="utf-8")
    async with api_server(await registry()) as server:
        capsys.readouterr()
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        err = capsys.readouterr().err
    assert "Warning: PropagationPolicy web/typo selects no workload: it places nothing" in err


async def test_a_live_plan_of_such_a_policy_shows_the_claim_kept_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "a-first.yaml"
    path.write_text(policy_yaml("a-first"), encoding="utf-8")
    async with api_server(await registry()) as server:
        capsys.readouterr()
        code = await fedctl(server, "plan", "--live", "-f", str(path))
        out, err = capsys.readouterr()
        # The controller keeps storefront with its policy, so nothing is planned anew (the
        # plan used to show a-first taking it) and the note says why, with exit 0.
        assert code == 0
        assert "workload web/" not in out
        assert (
            "note: PropagationPolicy web/a-first selects Deployment web/storefront, but it" in err
        )
        # Allowed to preempt, it takes storefront: the plan shows it under a-first.
        path.write_text(PREEMPTING, encoding="utf-8")
        await fedctl(server, "plan", "--live", "-f", str(path))
        out, err = capsys.readouterr()
        assert "workload web/Deployment.apps/storefront  policy: a-first" in out
        assert "note:" not in err


async def test_deleting_the_claiming_policy_says_what_becomes_of_its_workload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "a-first.yaml"
    path.write_text(policy_yaml("a-first"), encoding="utf-8")
    async with api_server(await registry()) as server:
        capsys.readouterr()
        # web/storefront claims storefront (recorded); a-first selects it too.
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        capsys.readouterr()
        assert await fedctl(server, "delete", "pp", "web/storefront") == 0
        err = capsys.readouterr().err
        assert (
            "Warning: Deployment web/storefront, which PropagationPolicy web/storefront"
            " claimed, is placed again under PropagationPolicy web/a-first"
        ) in err
        assert await fedctl(server, "delete", "pp", "web/a-first") == 0
        assert (
            "Warning: PropagationPolicy web/a-first claimed Deployment web/storefront, which"
            " no other policy selects: they stay where they are"
        ) in capsys.readouterr().err


async def test_the_examples_apply_without_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    """Every example policy claims what it selects, Namespaces and opaque kinds included."""
    async with api_server(MemoryStore()) as server:
        capsys.readouterr()
        assert await fedctl(server, "apply", "-f", str(EXAMPLES)) == 0
        assert "Warning:" not in capsys.readouterr().err


async def test_apply_dry_run_stores_nothing_and_says_what_would_happen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--dry-run` (the API's `dryRun=All`): every check runs, the outcomes and the notes
    are those of the real apply, and the registry is left as it was."""
    store = await registry()
    before = [(kv.key, kv.value) for kv in (await store.list("/fedctl/")).items]
    path = tmp_path / "a-first.yaml"
    path.write_text(policy_yaml("a-first") + "---\n" + policy_yaml("typo", selects="x"))
    async with api_server(store) as server:
        capsys.readouterr()
        assert await fedctl(server, "apply", "--dry-run", "-f", str(path)) == 0
        out, err = capsys.readouterr()
        assert out.splitlines() == [
            "propagationpolicy.policy.karmada.io/a-first created (server dry run)",
            "propagationpolicy.policy.karmada.io/typo created (server dry run)",
        ]
        warnings = [line for line in err.splitlines() if line.startswith("Warning:")]
        assert len(warnings) == 2
        assert "it stays with PropagationPolicy web/storefront" in warnings[0]
        assert "PropagationPolicy web/typo selects no workload" in warnings[1]
        after = [(kv.key, kv.value) for kv in (await store.list("/fedctl/")).items]
        assert after == before
        # What only the server can refuse is refused as well: a queue under a parent
        # that is not defined there.
        path.write_text(
            "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: q}\n"
            "spec: {parent: nowhere}\n"
        )
        assert await fedctl(server, "apply", "--dry-run", "-f", str(path)) == 1
        assert "nowhere" in capsys.readouterr().err
        assert [(kv.key, kv.value) for kv in (await store.list("/fedctl/")).items] == before


async def test_describe_policy_lists_what_it_claims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "a-first.yaml"
    path.write_text(policy_yaml("a-first"), encoding="utf-8")
    async with api_server(await registry()) as server:
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        capsys.readouterr()
        assert await fedctl(server, "describe", "pp", "web/storefront") == 0
        claimed = capsys.readouterr().out.split("Claims:")[1].splitlines()
        assert claimed[0].strip() == "1 workload(s)"
        assert claimed[2].split()[:2] == ["web/Deployment.apps/storefront", "us-east-cpu"]
        # a-first selects storefront too, but claims nothing.
        assert await fedctl(server, "describe", "pp", "web/a-first") == 0
        assert "Claims:      <none>" in capsys.readouterr().out


OVERRIDE = """\
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: op, namespace: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: SELECTED}]
  overrideRules:
    - overriders:
        argsOverrider: [{containerName: CONTAINER, operator: add, value: [--fast]}]
"""


@pytest.mark.parametrize(
    ("wrong", "warning"),
    [
        pytest.param(
            {"SELECTED": "storefrnt", "CONTAINER": "c"},
            "Warning: OverridePolicy web/op selects no workload: it overrides nothing",
            id="a selector that matches nothing",
        ),
        pytest.param(
            {"SELECTED": "storefront", "CONTAINER": "web"},
            "Warning: OverridePolicy web/op overrideRules[0].argsOverrider containerName 'web'"
            " matches no"
            " container of Deployment web/storefront (its containers: c): the edit does"
            " nothing there",
            id="an args edit naming a container the workload lacks",
        ),
    ],
)
async def test_an_override_policy_that_would_do_nothing_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], wrong: dict[str, str], warning: str
) -> None:
    def text(values: dict[str, str]) -> str:
        out = OVERRIDE
        for key, value in values.items():
            out = out.replace(key, value)
        return out

    path = tmp_path / "op.yaml"
    async with api_server(await registry()) as server:
        capsys.readouterr()
        path.write_text(text(wrong))
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        assert warning in capsys.readouterr().err
        path.write_text(text({"SELECTED": "storefront", "CONTAINER": "c"}))
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        assert "Warning:" not in capsys.readouterr().err


async def test_delete_dry_run_says_what_would_happen_and_deletes_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = await registry()
    before = [(kv.key, kv.value) for kv in (await store.list("/fedctl/")).items]
    async with api_server(store) as server:
        capsys.readouterr()
        assert await fedctl(server, "delete", "pp", "web/storefront", "--dry-run") == 0
        out, err = capsys.readouterr()
        assert out == "propagationpolicy web/storefront deleted (server dry run)\n"
        assert (
            "Warning: PropagationPolicy web/storefront claimed Deployment web/storefront,"
            " which no other policy selects: they stay where they are"
        ) in err
        assert await fedctl(server, "delete", "deploy", "web/storefront", "--dry-run") == 0
        assert capsys.readouterr().out.endswith("storefront deleted (server dry run)\n")
        assert await fedctl(server, "delete", "pp", "web/nothing", "--dry-run") == 1
        assert [(kv.key, kv.value) for kv in (await store.list("/fedctl/")).items] == before


async def test_a_note_that_cannot_be_worked_out_never_fails_the_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object, **__: object) -> list[str]:
        raise RuntimeError("a bug in the notes")

    monkeypatch.setattr(claims, "notes", broken)
    path = tmp_path / "a-first.yaml"
    path.write_text(policy_yaml("a-first"), encoding="utf-8")
    store = await registry()
    async with api_server(store) as server:
        capsys.readouterr()
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        assert "a-first created" in capsys.readouterr().out
    assert await store.get(keys.policy_key("PropagationPolicy", "web", "a-first")) is not None


async def test_apply_warns_of_an_affinity_no_joined_cluster_matches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = await registry()
    joined = load_paths([EXAMPLES / "clusters.yaml"])
    typed = codec.TypedStore(store, objects.ObjectCodec())
    for cluster in (o.model for o in joined.objects if isinstance(o.model, Cluster)):
        await typed.put(objects.key_for(cluster), cluster)
    path = tmp_path / "p.yaml"
    affinity = "    clusterAffinity:\n      labelSelector: {matchLabels: {tier: TIER}}\n"
    async with api_server(store) as server:
        capsys.readouterr()
        path.write_text(
            policy_yaml("storefront", extra="  placement:\n" + affinity.replace("TIER", "gold"))
        )
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        err = capsys.readouterr().err
        assert f"{path}:12:5: spec.placement.clusterAffinity: warning: none of the 8 joined" in err
        assert "labels here: tier=general, tier=inference, tier=training" in err
        path.write_text(
            policy_yaml("storefront", extra="  placement:\n" + affinity.replace("TIER", "general"))
        )
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        assert "warning" not in capsys.readouterr().err


async def test_deleting_a_policy_with_the_workload_it_claims_warns_of_nothing_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fedctl delete -f` of a file holding the policy and the workload it claims: the
    policy's deletion was judged while the workload was still there, so it warned that
    the workload "stays where it is, its copies running", though the same command deleted
    it. Workloads go first now."""
    store = await registry()
    path = tmp_path / "all.yaml"
    docs = [
        objects.ObjectCodec().decode(key, (await store.get(key)).value).to_wire()  # type: ignore[union-attr]
        for key in (
            "/fedctl/policies/PropagationPolicy/web/storefront",
            objects.key_for(STOREFRONT),
        )
    ]
    path.write_text("\n---\n".join(json.dumps(d) for d in docs), encoding="utf-8")
    async with api_server(store) as server:
        capsys.readouterr()
        assert await fedctl(server, "delete", "-f", str(path)) == 0
        out, err = capsys.readouterr()
    assert "Warning" not in err, err
    assert out.splitlines() == [
        "deployment.apps/storefront deleted",
        "propagationpolicy.policy.karmada.io/storefront deleted",
    ]


def second(selects: str) -> dict[str, object]:
    """PropagationPolicy web/second, selecting the Deployment `selects`."""
    selector = {"apiVersion": "apps/v1", "kind": "Deployment", "name": selects}
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "second", "namespace": "web"},
        "spec": {"resourceSelectors": [selector]},
    }


API = "/apis/fedctl.io/v1alpha1"


@pytest.mark.parametrize(
    ("method", "path", "prepare"),
    [
        pytest.param("POST", "namespaces/web/propagationpolicies", False, id="POST"),
        pytest.param("POST", "namespaces/web/propagationpolicies?dryRun=All", False,
                     id="POST, dry run"),
        pytest.param("PUT", "namespaces/web/propagationpolicies/second", True, id="PUT"),
        pytest.param("PUT", "namespaces/web/propagationpolicies/second?dryRun=All", True,
                     id="PUT, dry run"),
        pytest.param("POST", "apply", False, id="apply, as it always did"),
    ],
)  # fmt: skip
async def test_every_write_of_a_policy_sends_the_notes_apply_sends(
    method: str, path: str, prepare: bool
) -> None:
    """POST and PUT of a policy that a claimed workload does not follow (or that selects
    nothing) answered with no `Warning`, where /apply said why."""
    body = second("storefront")
    async with api_server(await registry()) as server, aiohttp.ClientSession() as session:
        if prepare:  # stored first, selecting nothing, then edited to select storefront
            items = {"items": [second("nothing")]}
            async with session.post(f"{server}{API}/apply", json=items) as resp:
                assert resp.status == 200
                assert "selects no workload" in resp.headers.get("Warning", ""), resp.headers
        sent = {"items": [body]} if path == "apply" else body
        async with session.request(method, f"{server}{API}/{path}", json=sent) as resp:
            assert resp.status in (200, 201), await resp.text()
            warnings = resp.headers.getall("Warning", [])
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(
        '299 - "PropagationPolicy web/second selects Deployment web/storefront, but it stays'
        " with PropagationPolicy web/storefront, which claimed it first"
    ), warnings
