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
