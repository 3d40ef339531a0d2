"""Sealing member kubeconfigs: round trip, tampering, rotation, and the registry codec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusters.kube import kubeconfig
from federation import errors, secrets
from federation.registry import objects
from policies.models.cluster import Cluster, Connection

PLAIN = "apiVersion: v1\nkind: Config\nclusters: []\n"
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: member-secret-token}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
"""


def test_seal_and_open_round_trip_without_plaintext() -> None:
    cipher = secrets.Cipher([secrets.generate_key()])
    sealed = cipher.seal(PLAIN)
    assert secrets.is_sealed(sealed) and "Config" not in sealed
    assert cipher.seal(PLAIN) != sealed, "the same plaintext never seals to the same bytes"
    assert cipher.open(sealed) == PLAIN
    assert cipher.seal(sealed) == sealed and cipher.open(PLAIN) == PLAIN


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda s: s[:-4], id="truncated"),
        pytest.param(lambda s: s[:30] + ("A" if s[30] != "A" else "B") + s[31:], id="tampered"),
    ],
)
def test_damaged_values_fail_loudly(damage: object) -> None:
    cipher = secrets.Cipher([secrets.generate_key()])
    with pytest.raises(errors.Invalid, match="cannot be opened"):
        cipher.open(damage(cipher.seal(PLAIN)))  # type: ignore[operator]


def test_rotation_old_key_still_opens_new_key_seals(tmp_path: Path) -> None:
    old, new = secrets.generate_key(), secrets.generate_key()
    sealed_old = secrets.Cipher([old]).seal(PLAIN)
    path = tmp_path / "key"
    path.write_text(f"# rotated\n{new}\n{old}\n")
    both = secrets.Cipher.from_file(path)
    assert both.open(sealed_old) == PLAIN
    assert secrets.Cipher([new]).open(both.seal(PLAIN)) == PLAIN
    with pytest.raises(errors.Invalid):
        secrets.Cipher([secrets.generate_key()]).open(sealed_old)


@pytest.mark.parametrize(
    ("env", "configured"),
    [
        pytest.param({}, False, id="no key configured"),
        pytest.param({"FEDCTL_ENCRYPTION_KEY": "K"}, True, id="key in the environment"),
        pytest.param({"FEDCTL_ENCRYPTION_KEY_FILE": "F"}, True, id="key file named"),
    ],
)
def test_from_env(tmp_path: Path, env: dict[str, str], configured: bool) -> None:
    key = secrets.generate_key()
    (tmp_path / "f").write_text(key)
    resolved = {k: key if v == "K" else str(tmp_path / "f") for k, v in env.items()}
    cipher = secrets.from_env(resolved)
    assert (cipher is not None) is configured


def test_bad_key_is_invalid_and_does_not_echo_it() -> None:
    with pytest.raises(errors.Invalid) as caught:
        secrets.Cipher(["not-a-key-at-all"])
    assert "not-a-key-at-all" not in str(caught.value)


def _cluster(kubeconfig_text: str) -> Cluster:
    return Cluster.model_validate(
        {
            "apiVersion": "fedctl.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": "eu"},
            "spec": {
                "region": "eu",
                "chips": [{"model": "amd64", "count": 1}],
                "connection": {"kubeconfig": kubeconfig_text, "context": "ctx"},
            },
        }
    )


def test_object_codec_seals_on_write_and_opens_on_read() -> None:
    codec = objects.ObjectCodec(cipher=secrets.Cipher([secrets.generate_key()]))
    data = codec.encode(_cluster(KUBECONFIG))
    assert b"member-secret-token" not in data and b"kind: Config" not in data
    stored = json.loads(data)["object"]["spec"]["connection"]["kubeconfig"]
    assert secrets.is_sealed(stored)
    decoded = codec.decode("/fedctl/clusters/eu", data)
    assert isinstance(decoded, Cluster) and decoded.spec.connection.kubeconfig == KUBECONFIG


def test_codec_without_a_key_keeps_todays_plaintext() -> None:
    data = objects.ObjectCodec().encode(_cluster(KUBECONFIG))
    assert b"member-secret-token" in data


async def test_connector_opens_a_sealed_kubeconfig(monkeypatch: pytest.MonkeyPatch) -> None:
    key = secrets.generate_key()
    sealed = secrets.Cipher([key]).seal(KUBECONFIG)
    connection = Connection(kubeconfig=sealed, context="ctx")
    monkeypatch.delenv("FEDCTL_ENCRYPTION_KEY", raising=False)
    monkeypatch.delenv("FEDCTL_ENCRYPTION_KEY_FILE", raising=False)
    with pytest.raises(errors.Invalid, match="no key is configured"):
        await kubeconfig.load(connection)
    monkeypatch.setenv("FEDCTL_ENCRYPTION_KEY", key)
    cfg = await kubeconfig.load(connection)
    assert cfg.host == "https://127.0.0.1:6443"
