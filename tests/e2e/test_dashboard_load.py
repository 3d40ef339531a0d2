"""What an idle dashboard tab asks of the server, in headless Chromium.

One idle tab on the Workloads view of 1,500 finished Jobs cost the server a tenth of a
core: it asked for the 3.5 MB workload status view (every item with its Binding, which
the page lists anyway) every 5 s though nothing changed, asked again every second while
a load that took 1.1 s was still in flight, and drew all three views, hidden ones too,
on every answer. Now it asks for the view without the Bindings, never has two loads of
one view in flight, polls it only as a slow safety net while the stream is live, and
draws only the view on screen.

The page's `fetch` is wrapped to count each request and how many of a kind were in
flight at once, and can hold the status view's answers until released.
"""

from __future__ import annotations

from typing import Any

import pytest

from federation.registry import codec
from policies.models.binding import Binding
from tests.e2e.stack import Stack
from tests.e2e.test_dashboard import BINDING_KEY, binding, bindings, open_view

pytestmark = [pytest.mark.integration, pytest.mark.slow]

expect: Any = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make deps)"
).expect

__all__ = ["bindings"]  # the fixture, used here as in the dashboard tests

STATUS_VIEW = "/apis/status.fedctl.io/v1alpha1/workloads"

COUNTING = """() => {
  window.__asked = {};       // path -> requests made
  window.__urls = [];        // every URL asked for
  window.__inFlight = {};    // path -> requests not yet answered
  window.__most = {};        // path -> the most in flight at once
  window.__bookmarks = 0;    // BOOKMARK lines the stream has carried
  window.__held = null;      // a promise the status view's answers wait on, when held
  const real = window.fetch;
  window.fetch = async (url, init = {}) => {
    const path = String(url).split("?")[0];
    window.__urls.push(String(url));
    window.__asked[path] = (window.__asked[path] || 0) + 1;
    window.__inFlight[path] = (window.__inFlight[path] || 0) + 1;
    window.__most[path] = Math.max(window.__most[path] || 0, window.__inFlight[path]);
    try {
      if (path.endsWith("/status.fedctl.io/v1alpha1/workloads") && window.__held) {
        await window.__held;
      }
      const resp = await real(url, init);
      if (!path.endsWith("/watch")) return resp;
      const reader = resp.body.getReader();
      const body = new ReadableStream({
        async pull(ctrl) {
          const { value, done } = await reader.read();
          if (done) return ctrl.close();
          window.__bookmarks += new TextDecoder().decode(value).split("BOOKMARK").length - 1;
          ctrl.enqueue(value);
        },
        cancel(reason) { return reader.cancel(reason); },
      });
      return new Response(body, { status: resp.status, headers: resp.headers });
    } finally {
      window.__inFlight[path] -= 1;
    }
  };
}"""
HOLD = """() => {
  window.__heldAt = performance.now();
  window.__held = new Promise((r) => { window.__release = r; });
}"""
RELEASE = "() => { window.__held = null; window.__release(); }"


def asked(page: Any, path: str) -> int:
    return int(page.evaluate(f"window.__asked[{path!r}] || 0"))


def counted(page: Any, stack: Stack) -> None:
    """The Workloads view open, its fetches counted, the example storefront drawn."""
    page.add_init_script(f"({COUNTING})()")
    open_view(page, stack, "workloads")
    expect(page.locator('[data-workload="web/storefront"]')).to_have_count(1)


def test_the_workloads_view_asks_for_the_status_view_without_bindings(
    page: Any, stack: Stack
) -> None:
    counted(page, stack)
    urls = [u for u in page.evaluate("window.__urls") if STATUS_VIEW in u]
    assert urls, "the status view was asked for"
    assert all("binding=false" in u for u in urls), urls


def test_a_status_load_in_flight_is_waited_for_however_many_changes_come(
    page: Any, stack: Stack, bindings: codec.TypedStore[Binding]
) -> None:
    counted(page, stack)
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator('[data-workload="web/storefront"] .phase')).to_have_text("not scheduled")
    page.evaluate(HOLD)
    before = asked(page, STATUS_VIEW)
    # Change after change for 2.5 s of the page's time: each re-lists the Bindings, and
    # each asks for the status view, whose first load is held unanswered meanwhile (the
    # old pacing began another every second).
    held_for = 0.0
    for n in range(500):
        changed = binding("Pending", reason=f"r{n}")
        stack.call(lambda: bindings.put(BINDING_KEY, changed))  # noqa: B023
        expect(page.locator('[data-workload="web/storefront"] .reason')).to_have_text(f"r{n}")
        held_for = float(page.evaluate("performance.now() - window.__heldAt"))
        if held_for >= 2500:
            break
    assert held_for >= 2500
    assert asked(page, STATUS_VIEW) == before + 1, "one load, held; no other began"
    page.evaluate(RELEASE)
    page.wait_for_function(
        f"() => (window.__asked[{STATUS_VIEW!r}] || 0) >= {before + 2}"
        f" && window.__inFlight[{STATUS_VIEW!r}] === 0"
    )
    assert page.evaluate(f"window.__most[{STATUS_VIEW!r}]") == 1


def test_with_the_stream_live_an_idle_tab_does_not_poll_the_status_view_every_5_s(
    page: Any, stack: Stack
) -> None:
    counted(page, stack)
    expect(page.locator("#live")).to_have_text("live")
    # A bookmark per kind the view follows (workloads and Bindings: two) every 2 s on the
    # test stack. Past the second round, the loads the stream's start asked for are done;
    # three more rounds are 6 s, past the old 5 s poll.
    page.wait_for_function("() => window.__bookmarks >= 4", timeout=15_000)
    page.wait_for_function(f"() => window.__inFlight[{STATUS_VIEW!r}] === 0")
    settled = asked(page, STATUS_VIEW)
    marks = int(page.evaluate("window.__bookmarks"))
    page.wait_for_function(f"() => window.__bookmarks >= {marks + 6}", timeout=15_000)
    assert asked(page, STATUS_VIEW) == settled


def test_only_the_view_on_screen_is_drawn(page: Any, stack: Stack) -> None:
    open_view(page, stack, "clusters")
    expect(page.locator("[data-cluster]").first).to_be_visible()
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#workloads [data-workload]")).to_have_count(0)
    page.locator('#nav a[data-view="workloads"]').click()
    expect(page.locator('[data-workload="web/storefront"]')).to_have_count(1)
