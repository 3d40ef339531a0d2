"""`fedctl sim up|fault|heal|status` as an operator uses them."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from clusters.sim import cli, kubeconfig
from tests.sim.behaviour_support import eventually

PROFILE = """
clusters:
  - name: alpha
    region: us-east
    nodePools: [{name: cpu, count: 2, cpu: "8", memory: 32Gi}]
  - name: beta
    region: cn-north
    nodePools:
      - name: npu
        count: 1
        arch: arm64
        cpu: "192"
        memory: 1536Gi
        accelerators: [{model: ascend-910b, resourceName: huawei.com/Ascend910, countPerNode: 8}]
"""


def _read(path: Path) -> str:
    return path.read_text()


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="fedctl")
    cli.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(list(argv))


async def run(*argv: str) -> int:
    args = parse(*argv)
    result = args.func(args)
    if inspect.isawaitable(result):
        result = await result
    return int(result)


STARTUP: dict[Path, str] = {}


@pytest.fixture
async def fleet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> AsyncIterator[Path]:
    """`fedctl sim up` running in this event loop; yields the kubeconfig path."""
    prof = tmp_path / "fleet.yaml"
    prof.write_text(PROFILE)
    kc = tmp_path / "sim.kubeconfig"
    task = asyncio.create_task(
        run("sim", "up", "--profile", str(prof), "--kubeconfig", str(kc), "--speed", "50")
    )
    await eventually(lambda: kubeconfig.state_path(kc).exists() or task.done())
    assert not task.done()
    STARTUP[kc] = capsys.readouterr().out
    yield kc
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_up_prints_the_fleet_and_writes_kubeconfig_and_state(fleet: Path) -> None:
    out = STARTUP.pop(fleet)
    header, alpha, beta = out.splitlines()[:3]
    assert header.split() == [
        "CLUSTER",
        "REGION",
        "ZONE",
        "API",
        "ADMIN",
        "NODES",
        "CPU",
        "MEMORY",
        "CHIPS",
    ]
    assert alpha.split()[0:2] == ["alpha", "us-east"]
    assert beta.split()[-4:] == ["1", "192", "1536Gi", "ascend-910b=8"]
    state = kubeconfig.load_state(fleet)
    assert sorted(state["clusters"]) == ["alpha", "beta"]
    assert "contexts" in _read(fleet)


async def test_fault_and_heal_go_through_the_admin_url(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    url = kubeconfig.load_state(fleet)["clusters"]["alpha"]["url"]
    code = await run("sim", "fault", "alpha", "down", "--for", "30s", "--kubeconfig", str(fleet))
    assert code == 0
    reply = json.loads(capsys.readouterr().out)
    assert [f["mode"] for f in reply["faults"]] == ["down"]
    with pytest.raises(aiohttp.ClientConnectorError):
        async with aiohttp.ClientSession() as s, s.get(f"{url}/version"):
            pass
    assert await run("sim", "status", "--kubeconfig", str(fleet)) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[1].split() == ["alpha", "false", "2/2", "0", table[1].split()[4], "down"]
    assert table[2].split()[:3] == ["beta", "true", "1/1"]
    assert await run("sim", "heal", "alpha", "--kubeconfig", str(fleet)) == 0
    assert json.loads(capsys.readouterr().out)["healed"] == ["down"]
    async with aiohttp.ClientSession() as s, s.get(f"{url}/version") as resp:
        assert resp.status == 200


async def test_fault_parameters_reach_the_member(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = await run(
        "sim",
        "fault",
        "beta",
        "slow",
        "--latency",
        "200ms",
        "--jitter",
        "0",
        "--kubeconfig",
        str(fleet),
    )
    assert code == 0
    [fault] = json.loads(capsys.readouterr().out)["faults"]
    assert fault["params"] == {"latency": 0.2, "jitter": 0.0}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ("sim", "fault", "gamma", "down"),
            "no cluster 'gamma'",
            id="unknown cluster names the known ones",
        ),
        pytest.param(
            ("sim", "fault", "alpha", "down", "--for", "soon"),
            "invalid duration",
            id="bad duration",
        ),
        pytest.param(("sim", "heal", "gamma"), "no cluster 'gamma'", id="heal unknown cluster"),
    ],
)
async def test_operator_errors_are_one_line_and_exit_1(
    fleet: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    capsys.readouterr()
    assert await run(*argv, "--kubeconfig", str(fleet)) == 1
    err = capsys.readouterr().err
    assert err.startswith("fedctl sim: ") and message in err
    assert len(err.strip().splitlines()) == 1


async def test_fault_without_a_running_fleet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = await run("sim", "fault", "alpha", "down", "--kubeconfig", str(tmp_path / "nope"))
    assert code == 1
    assert "no running fleet" in capsys.readouterr().err


async def test_stopping_up_removes_the_state_file(tmp_path: Path) -> None:
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE)
    kc = tmp_path / "k"
    task = asyncio.create_task(run("sim", "up", "--profile", str(prof), "--kubeconfig", str(kc)))
    await eventually(lambda: kubeconfig.state_path(kc).exists())
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert not kubeconfig.state_path(kc).exists()
    assert kc.exists()


def test_bad_profile_is_reported_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prof = tmp_path / "bad.yaml"
    prof.write_text("clusters: [{name: a, region: r, shape: round}]\n")
    args: Any = parse("sim", "up", "--profile", str(prof), "--kubeconfig", str(tmp_path / "k"))
    assert args.func(args) == 1
    assert "cannot load profile" in capsys.readouterr().err


def test_the_entry_point_is_declared() -> None:
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert 'sim = "clusters.sim.cli:register"' in pyproject
