"""The dashboard's views in headless Chromium against the running stack, read as a user
reads them: each figure beside the CLI's for the same state (`fedctl get queues`, `get
workloads`, `cost`), what a tenant's token cannot see said so, and every control
reachable from the keyboard.

The stack, the page and the workload helpers are those of `test_dashboard`.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e import test_dashboard as board
from tests.e2e.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]

expect: Any = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make deps)"
).expect

team = board.team
bindings = board.bindings


def test_the_implicit_default_queue_is_listed_with_the_work_it_admits(
    page: Any, stack: Stack, team: board.Team
) -> None:
    """`fedctl get queues` lists `default` (where work naming no queue goes) before any
    workload runs in it; the Queues view left it out, and its admitted work and cost with it."""
    board.open_view(page, stack, "queues")
    row = page.locator('[data-queue="default"]')
    expect(row).to_contain_text("(implicit)")
    expect(row.locator("[data-admitted]")).to_have_text("0")
    placed = team.add("plain", "default")
    team.bind(placed, board.queued("plain", "default", "Scheduled", cost="0.24"))
    expect(row.locator("[data-admitted]")).to_have_text("1")
    expect(row.locator("[data-cost]")).to_have_text("USD 0.2400/h")
    expect(row).to_have_attribute("data-counted-by", "view")
