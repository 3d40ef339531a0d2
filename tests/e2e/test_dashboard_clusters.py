"""The Clusters view for a big fleet, in headless Chromium: it lists only what it shows,
each list once, and has a filter box and regions that fold.

At 144 clusters the view downloaded every workload and 1.5 MB of Bindings besides the
clusters, every list twice (once at start, again at the stream's first bookmark), and
"which GPU clusters are not Ready" meant scrolling through some 36 screens.

The page's `fetch` is counted as in `test_dashboard_load`.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.stack import API, Stack
from tests.e2e.test_dashboard import open_view
from tests.e2e.test_dashboard_load import COUNTING, asked

pytestmark = [pytest.mark.integration, pytest.mark.slow]

expect: Any = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make deps)"
).expect

STATUS = "/apis/status.fedctl.io/v1alpha1"
NOT_FOR_CLUSTERS = [
    f"{API}/workloads",
    f"{API}/bindings",
    f"{API}/queues",
    f"{STATUS}/workloads",
    f"{STATUS}/queues",
    f"{STATUS}/costs",
]


def test_the_clusters_view_lists_the_clusters_once_and_nothing_else(
    page: Any, stack: Stack
) -> None:
    page.add_init_script(f"({COUNTING})()")
    open_view(page, stack, "clusters")
    expect(page.locator("[data-cluster]")).to_have_count(8)
    expect(page.locator("#live")).to_have_attribute("data-resources", "clusters")
    # A bookmark every 2 s on the test stack: the second is past the first list's answer.
    page.wait_for_function("() => window.__bookmarks >= 2", timeout=15_000)
    page.wait_for_function(f"() => window.__inFlight[{f'{API}/clusters'!r}] === 0")
    assert asked(page, f"{API}/clusters") == 1
    assert {path: asked(page, path) for path in NOT_FOR_CLUSTERS} == dict.fromkeys(
        NOT_FOR_CLUSTERS, 0
    )

    # The Workloads view, opened, lists what it shows, each once.
    page.locator('#nav a[data-view="workloads"]').click()
    expect(page.locator('[data-workload="web/storefront"]')).to_have_count(1)
    expect(page.locator("#live")).to_have_attribute("data-resources", "clusters,workloads,bindings")
    for path in (f"{API}/workloads", f"{API}/bindings", f"{STATUS}/workloads"):
        page.wait_for_function(f"() => window.__inFlight[{path!r}] === 0")
        assert asked(page, path) == 1, path
    assert asked(page, f"{API}/queues") == 0


def test_without_a_stream_the_view_lists_its_kinds_all_the_same(page: Any, stack: Stack) -> None:
    """The lists wait for the stream's bookmarks; a stream refused must not leave the view
    saying "Loading" for ever."""
    page.route(
        "**/watch?**",
        lambda route: route.fulfill(status=500, body='{"message":"no stream today"}'),
    )
    open_view(page, stack, "workloads")  # kinds that no poll lists while the stream is down
    expect(page.locator('[data-workload="web/storefront"]')).to_have_count(1)
    expect(page.locator("#live")).not_to_have_text("live")


@pytest.mark.parametrize(
    ("typed", "clusters", "counted"),
    [
        pytest.param(
            "gcp", ["ap-southeast-l4", "eu-west-h100"], "2 of 8 clusters match", id="a provider"
        ),
        pytest.param(
            "AWS arm64",
            ["ap-southeast-cpu", "eu-west-arm"],
            "2 of 8 clusters match",
            id="every word, any case: aws clusters with arm64 nodes",
        ),
        pytest.param(
            "nvidia",
            ["ap-southeast-l4", "eu-west-h100", "us-east-a100"],
            "3 of 8 clusters match",
            id="a chip model's part",
        ),
        pytest.param("cn-north-4b", ["cn-north-cpu"], "1 of 8 clusters match", id="a zone"),
        pytest.param("notready", [], "0 of 8 clusters match", id="readiness: none is down"),
        pytest.param("", None, "8 clusters", id="an empty filter shows every cluster"),
    ],
)
def test_the_filter_box_shows_the_clusters_it_matches(
    page: Any, stack: Stack, typed: str, clusters: list[str] | None, counted: str
) -> None:
    open_view(page, stack, "clusters")
    expect(page.locator("[data-cluster]")).to_have_count(8)
    box = page.get_by_label("Filter")
    box.focus()
    page.keyboard.type(typed)
    expect(page.locator("#cluster-count")).to_have_text(counted)
    shown = page.locator("[data-cluster]")
    if clusters is None:
        expect(shown).to_have_count(8)
    else:
        expect(shown).to_have_count(len(clusters))
        assert sorted(shown.evaluate_all("els => els.map((e) => e.dataset.cluster)")) == clusters
    if clusters == []:
        expect(page.locator("#clusters .empty")).to_have_text('No cluster matches "notready".')
    page.keyboard.press("Escape")  # a search box's own key: cleared, all shown again
    expect(shown).to_have_count(8)


def test_a_region_folds_from_the_keyboard_and_stays_folded_across_redraws(
    page: Any, stack: Stack
) -> None:
    open_view(page, stack, "clusters")
    region = page.locator('section[data-region="us-east"]')
    expect(region.locator("[data-cluster]")).to_have_count(2)
    region.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(region.locator('[data-cluster="us-east-a100"]')).to_be_hidden()
    expect(region.locator("summary")).to_contain_text("2/2 ready")
    # Typing in the filter redraws the view; the fold stays, other regions stay open.
    page.get_by_label("Filter").fill("aws")
    expect(page.locator("#cluster-count")).to_have_text("4 of 8 clusters match")
    expect(region.locator('[data-cluster="us-east-a100"]')).to_be_hidden()
    expect(page.locator('[data-cluster="eu-west-arm"]')).to_be_visible()
    expect(region.locator("summary")).to_contain_text("2/2 ready")
    region.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(region.locator('[data-cluster="us-east-a100"]')).to_be_visible()
