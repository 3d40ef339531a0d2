"""Contract: a Secret's `stringData` is merged into `data` and never stored.

The simulator stored `stringData` verbatim beside an unchanged `data`, so a member whose
password was changed through `stringData` still read the old one, and a federation saw no
drift to restore.
"""

from __future__ import annotations

import base64

from clusters.sim.resources import by_kind
from tests.sim.conftest import SimServer

SECRETS = by_kind("v1", "Secret")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


async def test_string_data_becomes_data_and_type_defaults_to_opaque(
    sim_server: SimServer,
) -> None:
    body = {"metadata": {"name": "s"}, "data": {"a": _b64("1"), "b": _b64("2")}}
    body["stringData"] = {"b": "two", "c": "three"}
    created = await sim_server.core.create_namespaced_secret("default", body)
    assert created.data == {"a": _b64("1"), "b": _b64("two"), "c": _b64("three")}
    assert created.string_data is None
    assert created.type == "Opaque"
    assert SECRETS is not None
    stored = sim_server.store.get(SECRETS, "default", "s")
    assert "stringData" not in stored


async def test_a_patch_of_string_data_changes_data(sim_server: SimServer) -> None:
    body = {"metadata": {"name": "s"}, "type": "kubernetes.io/basic-auth"}
    body["stringData"] = {"password": "old"}
    await sim_server.core.create_namespaced_secret("default", body)
    patched = await sim_server.core.patch_namespaced_secret(
        "s", "default", {"stringData": {"password": "changed"}}
    )
    assert patched.data == {"password": _b64("changed")}
    assert patched.string_data is None
    assert patched.type == "kubernetes.io/basic-auth"
