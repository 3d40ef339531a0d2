"""Commands that read etcd directly say where its URL comes from when it does not answer.

After `fedctl up` a user has FEDCTL_SERVER and FEDCTL_TOKEN set, which `fedctl drill` and
`fedctl registry` do not use: they met only "etcd at http://127.0.0.1:2379 did not answer"."""

from __future__ import annotations

import asyncio
import socket

import pytest

from federation.cli import main


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    "argv",
    [["drill", "plan", "--cluster", "a"], ["registry", "dump", "/fedctl/leader"]],
    ids=["drill", "registry"],
)
async def test_an_unreachable_registry_names_the_option_that_points_at_it(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FEDCTL_ETCD__CONNECT_TIMEOUT", "0.3")
    url = f"http://127.0.0.1:{_closed_port()}"
    code = await asyncio.to_thread(main.main, ["--etcd", url, *argv])
    err = capsys.readouterr().err
    assert code == 1
    assert "did not answer within 0.3s" in err, err
    assert "point --etcd or FEDCTL_ETCD at it (fedctl up prints its URL)" in err, err


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["drill", "list"], id="drill list"),
        pytest.param(["drill", "plan", "--cluster", "a"], id="drill plan"),
        pytest.param(["drill", "show", "d1"], id="drill show"),
        pytest.param(["drill", "run", "--cluster", "a", "--fault", "taint"], id="drill run"),
        pytest.param(["registry", "dump", "/fedctl/leader"], id="registry dump"),
        pytest.param(["rebalance", "--all"], id="rebalance"),
    ],
)
async def test_etcd_given_after_the_command_is_the_registry_it_reads(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The docs say to give these commands `--etcd URL`; after the command it was refused
    as an unrecognized argument (exit 2), and only `fedctl --etcd URL drill ...` worked.
    Given in both places, the one after the command wins, as the nearer is the meant."""
    monkeypatch.setenv("FEDCTL_ETCD__CONNECT_TIMEOUT", "0.3")
    url = f"http://127.0.0.1:{_closed_port()}"
    unused = f"http://127.0.0.1:{_closed_port()}"
    code = await asyncio.to_thread(main.main, ["--etcd", unused, *argv, "--etcd", url])
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"etcd at {url} did not answer" in err, err


@pytest.mark.parametrize("argv", [["drill", "list"], ["registry", "dump"], ["rebalance"]])
def test_the_etcd_option_is_in_the_command_help(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main.main([*argv, "--help"])
    assert "--etcd URL" in capsys.readouterr().out
