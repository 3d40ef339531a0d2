"""The dashboard's one watch stream in headless Chromium, when its connection stalls.

A NAT, load balancer or VPN can keep a connection open and carry nothing more: the page
kept saying `live` over stale data for as long as the socket stayed (a browser's fetch
has no read timeout). The stream now carries a bookmark every period its server names
(2 s on the test stack), and the page takes two and a half periods of silence as a dead
stream: it says `reconnecting`, watches again and lists what changed meanwhile.

The stall is made in the page: its `fetch` of the stream is wrapped so that, once told,
the body passes nothing more and never ends, as a stalled socket does, while aborting
it still errors it, as aborting a real fetch does.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from federation.registry import codec
from policies.models.binding import Binding
from tests.e2e.stack import API, Stack
from tests.e2e.test_dashboard import BINDING_KEY, binding, bindings, open_view

pytestmark = [pytest.mark.integration, pytest.mark.slow]

expect: Any = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make deps)"
).expect

__all__ = ["bindings"]  # the fixture, used here as in the dashboard tests

STALLABLE = """() => {
  window.__watches = 0;       // streams opened so far
  window.__stalled = 0;       // the one that carries nothing more (0: none)
  window.__badge = [];        // every text the live badge has shown
  const real = window.fetch;
  window.fetch = async (url, init = {}) => {
    const resp = await real(url, init);
    if (!String(url).includes("/watch?")) return resp;
    const id = ++window.__watches;
    const reader = resp.body.getReader();
    const body = new ReadableStream({
      start(ctrl) {
        init.signal?.addEventListener("abort", () =>
          ctrl.error(new DOMException("aborted", "AbortError")));
      },
      async pull(ctrl) {
        if (window.__stalled === id) return new Promise(() => {});
        const { value, done } = await reader.read();
        if (window.__stalled === id) return new Promise(() => {});
        if (done) ctrl.close(); else ctrl.enqueue(value);
      },
      cancel(reason) { return reader.cancel(reason); },
    });
    return new Response(body, { status: resp.status, headers: resp.headers });
  };
  new MutationObserver(() => {
    const el = document.getElementById("live");
    if (el && window.__badge.at(-1) !== el.textContent) window.__badge.push(el.textContent);
  }).observe(document, { subtree: true, childList: true, characterData: true });
}"""


def test_a_stalled_stream_is_taken_for_dead_and_the_page_catches_up(
    page: Any, stack: Stack, bindings: codec.TypedStore[Binding]
) -> None:
    page.add_init_script(f"({STALLABLE})()")
    open_view(page, stack, "workloads")
    card = page.locator('[data-workload="web/storefront"]')
    expect(page.locator("#live")).to_have_text("live")
    expect(card.locator(".phase")).to_have_text("not scheduled")
    page.evaluate("() => { window.__stalled = window.__watches; }")
    stack.call(lambda: bindings.put(BINDING_KEY, binding("Pending", reason="while stalled")))
    # 5 s of silence (2.5 bookmark periods), then a new stream and the Bindings listed again.
    with page.expect_request(lambda r: f"{API}/watch?" in r.url, timeout=15_000):
        pass
    expect(card.locator(".reason")).to_have_text("while stalled", timeout=15_000)
    expect(page.locator("#live")).to_have_text("live")
    assert page.evaluate("window.__watches") >= 2
    assert "reconnecting" in page.evaluate("window.__badge"), page.evaluate("window.__badge")


OUTAGE = "registry unavailable: etcd at http://127.0.0.1:1 did not answer within 1s"
STATUS_503 = (
    '{"kind":"Status","code":503,"reason":"ServiceUnavailable","message":'
    '"the registry (etcd at http://127.0.0.1:1) did not answer within 8s"}'
)


def test_the_badge_says_the_registry_is_unreachable_and_recovers(page: Any, stack: Stack) -> None:
    """With etcd unreachable the stream, served from the controller's caches, stayed open:
    the badge said a green `live` while every view failed. The outage is played in the
    browser (the stack's etcd serves every other test): the API's lists answer 503 and
    `/readyz` says what it says when etcd does not answer."""
    open_view(page, stack, "clusters")
    expect(page.locator("#live")).to_have_text("live")

    def refuse_lists(route: Any) -> None:
        if "/watch?" in route.request.url:
            route.continue_()
        else:
            route.fulfill(status=503, body=STATUS_503, content_type="application/json")

    lists = re.compile(r".*/apis/fedctl\.io/v1alpha1/.*")
    page.route(lists, refuse_lists)
    page.route("**/readyz", lambda route: route.fulfill(status=503, body=OUTAGE))
    page.reload()  # every view lists again, and each list answers 503
    expect(page.locator("#live")).to_have_text("registry unreachable", timeout=10_000)
    expect(page.locator("#live")).to_have_attribute("title", OUTAGE)
    expect(page.locator("#banner")).to_contain_text("The registry is unreachable")
    page.unroute(lists)
    page.unroute("**/readyz")
    expect(page.locator("#live")).to_have_text("live", timeout=15_000)
    expect(page.locator("#banner")).to_be_hidden()
