"""A FederatedResourceQuota read through the API carries the status its member quotas
report (Karmada's `overall`, `overallUsed` and per-member rows), so `fedctl describe frq`
and `fedctl get frq -o yaml` show what is used, not only what is allowed.

The real API over an in-memory registry; the CLI is `main.main`.
"""

from __future__ import annotations

import pytest

from federation.registry import codec, keys, objects
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from federation.resources import ResourceList
from policies.models.frq import FederatedResourceQuota
from policies.models.work import ClusterQuota, QuotaStatus
from tests.serving import api_server, fedctl

pytestmark = pytest.mark.integration


async def test_describe_frq_shows_what_the_member_quotas_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = MemoryStore()
    frq = FederatedResourceQuota.model_validate(
        {
            "metadata": {"name": "team", "namespace": "team"},
            "spec": {
                "overall": {"cpu": "8"},
                "staticAssignments": [{"clusterName": "a", "hard": {"cpu": "8"}}],
            },
        }
    )
    await codec.TypedStore(store, objects.ObjectCodec()).put(objects.key_for(frq), frq)
    hard = ResourceList.from_wire({"cpu": "8"})
    used = ResourceList.from_wire({"cpu": "3"})
    status = QuotaStatus(
        overall=hard,
        overall_used=used,
        aggregated_status=[ClusterQuota(cluster="a", hard=hard, used=used, applied=True)],
    )
    key = keys.policy_status_key("FederatedResourceQuota", "team", "team")
    await codec.TypedStore(store, codec.Codec(QuotaStatus)).put(key, status)
    async with api_server(store) as server:
        capsys.readouterr()
        assert await fedctl(server, "describe", "frq", "team", "-n", "team") == 0
        out = capsys.readouterr().out
        status_part = out.split("\nStatus:\n")[1]
        assert "overallUsed:\n    cpu: '3'" in status_part
        assert "- cluster: a" in status_part
        # A quota whose members have not reported yet has no status, and says nothing.
        await store.commit([st.Delete(key)])
        assert await fedctl(server, "describe", "frq", "team", "-n", "team") == 0
        assert "\nStatus:" not in capsys.readouterr().out
