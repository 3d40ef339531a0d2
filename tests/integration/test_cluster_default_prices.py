"""`fedctl cluster list`, `cluster describe` and `get cluster -o json` price a chip its
Cluster's on-demand table leaves out at its AcceleratorProfile's `defaultPricePerHour`, as
the scheduler charges it (`status.defaultPrices`, filled by the API on read).

The real API over an in-memory registry; the CLI is `main.main`.
"""

from __future__ import annotations

import json

import pytest

from federation.registry import codec, keys, objects
from federation.registry.memory import MemoryStore
from policies.models.accelerator import AcceleratorProfile
from policies.models.cluster import ClusterStatus
from tests.serving import api_server, fedctl
from tests.unit.scheduler import fleet

pytestmark = pytest.mark.integration

L4 = {
    "arch": "amd64",
    "vendor": "nvidia",
    "resourceName": "nvidia.com/gpu",
    "nodeSelector": {"fedctl.io/accelerator": "nvidia-l4"},
    "defaultPricePerHour": "0.85",
}


async def registry(gpu_prices: dict[str, str] | None = None) -> MemoryStore:
    """Cluster l4 (one node of 16 cores, 64 GiB and 4 L4s) and the L4's profile."""
    store = MemoryStore()
    member = fleet.cluster(
        "l4",
        fleet.flavor(chip="nvidia-l4", devices=4, nodes=1),
        cpu_price="0.05",
        gpu_prices=gpu_prices,
    )
    assert member.status is not None
    typed = codec.TypedStore(store, objects.ObjectCodec())
    await typed.put(keys.cluster_key("l4"), member.model_copy(update={"status": None}))
    await codec.TypedStore(store, codec.Codec(ClusterStatus)).put(
        keys.cluster_status_key("l4"), member.status
    )
    profile = AcceleratorProfile.model_validate({"metadata": {"name": "nvidia-l4"}, "spec": L4})
    await typed.put(objects.key_for(profile), profile)
    return store


async def test_a_chip_without_a_price_of_its_own_is_shown_at_its_profile_s_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The views read the table alone: no L4 price, and a whole-cluster price without the
    3.40 an hour the scheduler charges for the four L4s."""
    async with api_server(await registry()) as server:
        capsys.readouterr()
        assert await fedctl(server, "cluster", "describe", "l4") == 0
        out = capsys.readouterr().out
        assert (
            "Prices:      USD cpu=0.05/core-h memory=0.005/GiB-h, nvidia-l4=0.85/h (profile"
            " default) (on demand)" in out
        ), out
        # 16 x 0.05 + 64 x 0.005 + 4 x 0.85
        assert "Per hour:    4.52 USD (whole cluster)" in out, out
        assert await fedctl(server, "cluster", "list") == 0
        (row,) = capsys.readouterr().out.splitlines()[1:]
        assert row.split()[-2:] == ["4.52", "USD"]
        assert await fedctl(server, "get", "cluster", "l4", "-o", "json") == 0
        status = json.loads(capsys.readouterr().out)["status"]
        assert status["defaultPrices"] == {"nvidia-l4": "0.85"}


async def test_a_chip_priced_by_its_cluster_keeps_that_price(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with api_server(await registry({"nvidia-l4": "1.00"})) as server:
        capsys.readouterr()
        assert await fedctl(server, "cluster", "describe", "l4") == 0
        out = capsys.readouterr().out
        assert "nvidia-l4=1.00/h (on demand)" in out and "profile default" not in out, out
        assert "Per hour:    5.12 USD (whole cluster)" in out, out  # 4 x 1.00, not 4 x 0.85
