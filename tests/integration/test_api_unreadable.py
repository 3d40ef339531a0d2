"""A stored object that no longer reads (a hand edit, or a rule a newer release added) is
named in a warning when a list leaves it out, not silently dropped.

The controller is the real API over an in-memory registry; the CLI is `main.main`.
"""

from __future__ import annotations

import pytest

from federation.registry import keys, objects
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from policies.models.propagation import PropagationPolicy
from tests.serving import api_server, fedctl
from tests.unit.scheduler import fleet

pytestmark = pytest.mark.integration


def policy(name: str) -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "metadata": {"name": name, "namespace": "web"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                "failover": {"cluster": {"purgeMode": "Gracefully"}},
            },
        }
    )


async def test_a_list_warns_about_a_stored_policy_it_cannot_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = MemoryStore()
    codec = objects.ObjectCodec()
    good, bad = policy("good"), policy("old")
    # What an older release accepted and this one refuses: Never for a cluster failover.
    raw = codec.encode(bad).replace(b'"Gracefully"', b'"Never"')
    await store.commit(
        [st.Put(objects.key_for(good), codec.encode(good)), st.Put(objects.key_for(bad), raw)]
    )
    async with api_server(store) as server:
        capsys.readouterr()
        assert await fedctl(server, "get", "pp", "-n", "web") == 0
        out, err = capsys.readouterr()
    assert "good" in out and "old" not in out
    (warning,) = [line for line in err.splitlines() if line.startswith("Warning:")]
    assert keys.policy_key("PropagationPolicy", "web", "old") in warning
    assert "cannot be read" in warning and "purgeMode Never" in warning
    assert "apply a corrected version or delete it" in warning
    await store.close()


async def test_a_cluster_stored_with_a_label_now_refused_still_reads_and_can_be_mended(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Labels are checked since a release that stored `bad key!: x` from `fedctl cluster
    label`. Such a Cluster must not vanish from lists (and from the scheduler) on upgrade:
    it is read as stored, a write that keeps the label is refused naming it, and removing
    it mends the Cluster."""
    store = MemoryStore()
    codec = objects.ObjectCodec()
    member = fleet.cluster("us-east-cpu")
    raw = codec.encode(member).replace(b'"labels":{}', b'"labels":{"bad key!":"x"}')
    assert raw != codec.encode(member)
    await store.commit([st.Put(objects.key_for(member), raw)])
    async with api_server(store) as server:
        capsys.readouterr()
        assert await fedctl(server, "get", "clusters") == 0
        out, err = capsys.readouterr()
        assert "us-east-cpu" in out and "Warning" not in err
        assert await fedctl(server, "cluster", "list") == 0
        assert "us-east-cpu" in capsys.readouterr().out
        assert await fedctl(server, "cluster", "label", "us-east-cpu", "tier=web") == 1
        err = capsys.readouterr().err
        assert "metadata.labels[\"bad key!\"]: label key 'bad key!' is not a qualified" in err
        assert await fedctl(server, "cluster", "label", "us-east-cpu", "bad key!-") == 0
        assert capsys.readouterr().out == "cluster us-east-cpu labeled\n"
        assert await fedctl(server, "cluster", "label", "us-east-cpu", "tier=web") == 0
    stored = codec.decode("k", (await store.get(objects.key_for(member))).value)  # type: ignore[union-attr]
    assert stored.metadata.labels == {"tier": "web"}
    await store.close()
