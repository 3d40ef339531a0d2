"""Fixtures for the end-to-end tests: one running stack for the whole run, one headless
Chromium (Debian's, driven by Playwright), a fresh page per test and a screenshot in
`tests/e2e/artifacts/` for every test that fails in the browser.

Browser tests skip, saying why, when Playwright or Chromium is missing; `make test`
installs both (`make browser`, and `playwright` in the dev extras).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.stack import API, Stack

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = os.environ.get("FEDCTL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """etcd, the demo fleet, the controller API with the dashboard and the monitor, with
    `policies/examples/` applied and every demo cluster reported Ready."""
    running = Stack(tmp_path_factory.mktemp("e2e"))
    running.start()
    try:
        running.apply_examples()
        wait_until(lambda: all_ready(running), timeout=30, message="every demo cluster Ready")
        yield running
    finally:
        running.stop()


def all_ready(stack: Stack) -> bool:
    status, listed = stack.http("GET", f"{API}/clusters")
    items = listed.get("items", []) if status == 200 else []
    ready = [
        cond.get("status") == "True"
        for item in items
        for cond in item.get("status", {}).get("conditions", [])
        if cond.get("type") == "Ready"
    ]
    return len(items) == len(ready) == 8 and all(ready)


def wait_until(probe: Any, *, timeout: float, message: str) -> Any:
    """The synchronous twin of tests.waiting.wait_for, for fixtures outside any loop."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {message}")
        time.sleep(0.1)


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Chromium context with a fresh profile directory, shared by the browser tests."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (make deps)"
    )
    if not (os.access(CHROMIUM, os.X_OK) or shutil.which(CHROMIUM)):
        pytest.skip(f"no Chromium at {CHROMIUM} (make browser installs Debian's chromium)")
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        context.set_default_timeout(10_000)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser: Any, stack: Stack, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh page; JavaScript errors fail the test; a failure leaves a screenshot."""
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
        assert not errors, f"JavaScript errors in the dashboard: {errors}"
    finally:
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            ARTIFACTS.mkdir(exist_ok=True)
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)[-150:]
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
            (ARTIFACTS / f"{name}.errors.json").write_text(json.dumps(errors))
        page.close()
