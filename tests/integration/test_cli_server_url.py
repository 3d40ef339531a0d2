"""`--server` / FEDCTL_SERVER as users type it: `fedctl up --listen` takes a bare
`127.0.0.1:8080`, so the same bare address must reach the API (as `http://`), and a value
that is no usable URL is one line naming the flag, never a traceback.

The controller is the real API over an in-memory registry; the CLI is `main.main`.
"""

from __future__ import annotations

import pytest

from federation.registry.memory import MemoryStore
from tests.serving import api_server, fedctl

pytestmark = pytest.mark.integration


async def test_a_bare_host_and_port_is_taken_as_http(capsys: pytest.CaptureFixture[str]) -> None:
    """It printed a 40-line aiohttp traceback (NonHttpUrlClientError)."""
    async with api_server(MemoryStore()) as server:
        bare = server.removeprefix("http://")
        assert await fedctl(bare, "get", "clusters") == 0
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("server", "problem"),
    [
        pytest.param("ftp://127.0.0.1:8080", "scheme 'ftp'", id="a scheme other than http(s)"),
        pytest.param("http://", "no host", id="a scheme and no host"),
        pytest.param("http://127.0.0.1:port", "not a URL", id="a port that is no number"),
        pytest.param("http://[::1", "not a URL", id="an unclosed bracket"),
    ],
)
async def test_an_unusable_server_is_one_line_naming_the_flag(
    capsys: pytest.CaptureFixture[str], server: str, problem: str
) -> None:
    assert await fedctl(server, "get", "queues") == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"fedctl: --server / FEDCTL_SERVER {server!r}: ")
    assert problem in line
    assert "http://HOST:PORT" in line
