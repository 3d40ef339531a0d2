"""An apply that has hundreds of things to say says all of them, and an answer the CLI
cannot read is one line, never a traceback.

One `Warning` header per note made a large apply's answer unreadable to aiohttp's client
(more than 128 headers): everything was stored, yet `fedctl apply` ended in a traceback
and printed neither the outcomes nor the notes. The real API over an in-memory registry;
the CLI is `main.main`.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from federation.api import objects as objects_api
from federation.registry.memory import MemoryStore
from tests.serving import api_server, fedctl, serving

pytestmark = pytest.mark.integration

POLICIES = 300


def unselecting(count: int) -> str:
    """`count` PropagationPolicies that each select a Deployment not written yet: one note
    ("selects no workload") each."""
    return "---\n".join(
        f"""\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: p{i:03d}, namespace: hunt}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: not-yet-{i}}}]
"""
        for i in range(count)
    )


async def test_an_apply_with_hundreds_of_notes_prints_every_outcome_and_every_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(unselecting(POLICIES), encoding="utf-8")
    async with api_server(MemoryStore()) as server:
        capsys.readouterr()
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        out, err = capsys.readouterr()
    assert out.count(" created\n") == POLICIES
    assert "Traceback" not in err
    warnings = [line for line in err.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == POLICIES  # each once: from the body, not the capped headers
    assert all(
        line.startswith(f"Warning: PropagationPolicy hunt/p{i:03d} selects no workload:")
        for i, line in enumerate(warnings)
    )
    assert "more warning(s)" not in err


async def test_a_diff_with_hundreds_of_notes_prints_every_note_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fedctl diff` asks the same dry-run apply, and printed the capped headers, the
    last of them pointing at a body it never showed."""
    path = tmp_path / "many.yaml"
    path.write_text(unselecting(POLICIES), encoding="utf-8")
    async with api_server(MemoryStore()) as server:
        capsys.readouterr()
        assert await fedctl(server, "diff", "-f", str(path)) == 1  # differences
        err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == POLICIES
    assert "more warning(s)" not in err


async def test_the_api_caps_its_warning_headers_and_keeps_every_note_in_the_body() -> None:
    async with (
        api_server(MemoryStore()) as server,
        aiohttp.ClientSession() as session,
        session.post(
            f"{server}{objects_api.API_PREFIX}/apply",
            data=unselecting(POLICIES),
            headers={"Content-Type": "application/yaml"},
        ) as resp,
    ):
        assert resp.status == 200, await resp.text()
        headers = resp.headers.getall("Warning")
        body = await resp.json()
    cap = objects_api.WARNING_HEADERS
    assert len(headers) == cap
    assert "p000 selects no workload" in headers[0]
    assert headers[-1] == (
        f'299 - "{POLICIES - cap + 1} more warning(s) in the body\'s `warnings`"'
    )
    assert len(body["warnings"]) == POLICIES


def answering(headers: list[tuple[str, str]], body: str) -> web.Application:
    """An app whose lists are empty and whose answer to every POST is `headers` and
    `body`: a server whose answer to an apply the CLI cannot read."""

    async def listed(_: web.Request) -> web.Response:
        return web.json_response({"items": []})

    async def written(_: web.Request) -> web.Response:
        return web.Response(text=body, content_type="application/json", headers=headers)

    app = web.Application()
    app.router.add_get("/{tail:.*}", listed)
    app.router.add_post("/{tail:.*}", written)
    return app


@pytest.mark.parametrize(
    ("header_count", "body", "said"),
    [
        pytest.param(200, "{}", "Too many headers received", id="more headers than it reads"),
        pytest.param(0, "<html>proxy error</html>", "a body that is not JSON", id="not JSON"),
    ],
)
async def test_an_answer_the_cli_cannot_read_is_one_line_naming_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    header_count: int,
    body: str,
    said: str,
) -> None:
    path = tmp_path / "one.yaml"
    path.write_text(unselecting(1), encoding="utf-8")
    headers = [("Warning", f'299 - "note {i}"') for i in range(header_count)]
    async with serving(answering(headers, body)) as server:
        capsys.readouterr()
        code = await fedctl(server, "apply", "-f", str(path))
        err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err
    (line,) = [line for line in err.splitlines() if line.startswith("fedctl:")]
    assert line.startswith(
        "fedctl: the controller answered POST /apis/fedctl.io/v1alpha1/apply with a response"
        f" fedctl cannot read: {said}"
    )
    assert line.endswith("the request may have been carried out (check with `fedctl get`)")
