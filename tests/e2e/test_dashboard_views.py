"""The dashboard's views in headless Chromium against the running stack, read as a user
reads them: each figure beside the CLI's for the same state (`fedctl get queues`, `get
workloads`, `cost`), what a tenant's token cannot see said so, and every control
reachable from the keyboard.

The stack, the page and the workload helpers are those of `test_dashboard`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from federation.registry import codec, keys
from federation.registry import store as st
from policies.models.cluster import Cluster
from tests.e2e import test_dashboard as board
from tests.e2e.stack import API, Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]

expect: Any = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (make deps)"
).expect

team = board.team
bindings = board.bindings
stored_drills = board.stored_drills


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


def spare_cluster(name: str) -> str:
    """A Cluster whose context no kubeconfig has: listed, never Ready, which is enough for
    the drill form's list of names."""
    return f"""\
apiVersion: fedctl.io/v1alpha1
kind: Cluster
metadata:
  name: {name}
spec:
  region: eu-west
  connection:
    context: no-such-context
"""


async def replace_cluster(stack: Stack, old: str, new: str) -> None:
    """`old` deleted and `new` (its copy) stored in one transaction: the page never sees
    the list one shorter in between."""
    assert stack.store is not None
    clusters = codec.Codec(Cluster)
    stored = await stack.store.get(keys.cluster_key(old))
    assert stored is not None
    copy = clusters.decode(keys.cluster_key(old), stored.value)
    renamed = copy.model_copy(update={"metadata": copy.metadata.model_copy(update={"name": new})})
    await stack.store.commit(
        [st.Delete(keys.cluster_key(old)), st.Put(keys.cluster_key(new), clusters.encode(renamed))]
    )


@pytest.fixture
def spare_clusters(stack: Stack) -> Iterator[list[str]]:
    """Names of Clusters a test may create; deleted again after it (the stack is shared)."""
    names = ["zz-a", "zz-b"]
    yield names
    for name in names:
        stack.http("DELETE", f"{API}/clusters/{name}")


def test_the_drill_form_offers_a_replacement_cluster_of_the_same_count(
    page: Any, stack: Stack, spare_clusters: list[str]
) -> None:
    """The cluster list was rebuilt only when the number of clusters changed: a cluster
    deleted as another was added left the old name offered and the new one missing."""
    old, new = spare_clusters
    status, body = stack.http("POST", f"{API}/apply", spare_cluster(old),
                              ctype="application/yaml")  # fmt: skip
    assert status == 200, body
    board.open_view(page, stack, "drills")
    options = page.locator("#drill-cluster option")
    expect(options.filter(has_text=old)).to_have_count(1)
    count = options.count()
    stack.call(lambda: replace_cluster(stack, old, new))
    expect(options.filter(has_text=new)).to_have_count(1)
    expect(options.filter(has_text=old)).to_have_count(0)
    expect(options).to_have_count(count)


def test_a_drill_s_start_is_shown_in_the_viewer_s_time_with_utc_in_its_title(
    page: Any, stack: Stack, stored_drills: tuple[str, str]
) -> None:
    """It read `started 2026-12-06T23:00:00+00:00`, the stored UTC value with its
    microseconds, in whatever zone the viewer is."""
    good, _ = stored_drills
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setTimezoneOverride", {"timezoneId": "Asia/Tokyo"})
    cdp.send("Emulation.setLocaleOverride", {"locale": "en-GB"})
    board.open_view(page, stack, "drills")
    page.locator(f'#drill-list [data-drill="{good}"]').click()
    started = page.locator("#drill-timeline [data-started]")
    expect(started).to_have_text("7 Dec 2026, 08:00")  # 23:00 UTC is 08:00 the next day
    expect(started).to_have_attribute("title", "2026-12-06T23:00:00+00:00")


def test_a_tenant_s_cost_column_is_its_own_and_hidden_work_is_said_to_be_hidden(
    page: Any, stack: Stack
) -> None:
    """With a tenant's token the costs view covers its namespaces only (`namespaces`), so
    another team's queue read `USD 0.0000/h` under "what its placed work costs"; and work
    the token cannot see was called "no Binding yet: waiting for the scheduler", though it
    had one. The answers of a tenant's token are stood in for here: the stack has no
    tokens."""
    view = {
        "items": [
            {"name": "web", "defined": True, "implicit": False, "parent": None,
             "children": [], "weight": 2, "admitted": 1, "pending": 2, "used": {},
             "share": 0.0},
        ],
        "revision": 1, "ageSeconds": 0.0, "stale": False, "source": "scheduler",
    }  # fmt: skip
    costs = {
        "currency": "USD", "by": "queue", "namespaces": ["web"],
        "items": [{"name": "web", "workloads": 1, "replicas": 2, "hourlyCost": "0.0256",
                   "unpricedReplicas": 0}],
        "waiting": 0, "finished": 0,
    }  # fmt: skip
    page.route(
        re.compile(r"/apis/status\.fedctl\.io/v1alpha1/queues$"),
        lambda route: route.fulfill(json=view),
    )
    page.route(
        re.compile(r"/apis/status\.fedctl\.io/v1alpha1/costs\?"),
        lambda route: route.fulfill(json=costs),
    )
    board.open_view(page, stack, "queues")
    header = page.locator("#queues th", has_text="Cost")
    expect(header).to_have_text("Cost (yours)")
    expect(header).to_have_attribute("title", re.compile(r"in your namespaces \(web\)"))
    row = page.locator('[data-queue="web"]')
    expect(row.locator("[data-cost]")).to_have_text("USD 0.0256/h")
    expect(row.locator("[data-unbound]")).to_have_text(
        "2 not visible to you: in namespaces your token cannot read, or with no Binding yet"
    )
    expect(page.locator("#queues")).not_to_contain_text("waiting for the scheduler")


def member(cluster: str, ready: int, replicas: int, health: str, **fields: Any) -> dict[str, Any]:
    """One member's report in a workload's aggregated status (wire names)."""
    return {"cluster": cluster, "applied": True, "replicas": replicas, "readyReplicas": ready,
            "health": health, **fields}  # fmt: skip


def test_a_card_shows_health_and_ready_replicas_per_member_not_only_its_placement(
    page: Any, stack: Stack, team: board.Team
) -> None:
    """A crash-looping workload (`fedctl get workloads`: Progressing, us-east-cpu 0/1)
    showed a green "Scheduled" and `us-east-cpu x 1`, the Binding's count, as if it ran."""
    crashy = team.add("crashy", "ml-prod")
    team.bind(crashy, board.queued("crashy", "ml-prod", "Scheduled", cost="0.24"))
    team.report(crashy, health="Progressing", replicas=1, readyReplicas=0,
                clusters=[member("us-east-cpu", 0, 1, "Progressing")])  # fmt: skip
    # The ready counts come from the workload status view, which the stream does not
    # carry: asked every second here (`?poll=1`) instead of every 15.
    page.goto(f"{stack.url}/?poll=1#workloads")
    expect(page.locator("body[data-ready=true]")).to_have_count(1)
    card = page.locator('[data-workload="team/crashy"]')
    badge = card.locator("header [data-health]")
    expect(badge).to_have_text("Progressing")
    expect(badge).to_have_class(re.compile(r"\bprogressing\b"))
    expect(card.locator("header [data-ready]")).to_have_text("0/1 ready")
    target = card.locator('.placement [data-target="us-east-cpu"]')
    expect(target.locator("[data-ready]")).to_have_text("0/1 ready")
    expect(target.locator("[title]").first).to_have_attribute(
        "title", "1 replica(s) placed on us-east-cpu by the Binding"
    )
    # Scheduled says where it was placed, not that it is well: no green for it.
    scheduled = card.locator("header .phase")
    expect(scheduled).to_have_text("Scheduled")
    expect(scheduled).to_have_css("background-color", "rgb(238, 240, 244)")
    # Its member goes down: its last report is no evidence that anything runs there.
    team.report(crashy, health="Unknown", replicas=1, readyReplicas=1,
                clusters=[member("us-east-cpu", 1, 1, "Healthy", stale=True)])  # fmt: skip
    expect(target.locator("[data-ready]")).to_have_text(
        "?/1 ready (member not Ready)", timeout=5_000
    )
    expect(badge).to_have_text("Unknown")
    team.report(crashy, health="Healthy", replicas=1, readyReplicas=1,
                clusters=[member("us-east-cpu", 1, 1, "Healthy")])  # fmt: skip
    expect(badge).to_have_text("Healthy", timeout=5_000)
    expect(target.locator("[data-ready]")).to_have_text("1/1 ready")


def focused_id(page: Any) -> str:
    return str(page.evaluate("document.activeElement && document.activeElement.id"))


def test_tab_indents_in_the_editor_and_escape_then_tab_leaves_it(page: Any, stack: Stack) -> None:
    """Every Tab and Shift+Tab was taken to indent: a keyboard user who entered the YAML
    could not leave it (WCAG 2.1.2). Escape then Tab leaves, as in code editors, and the
    hint the text area is described by says so."""
    board.open_view(page, stack, "policy")
    area = page.locator("#yaml")
    expect(area).to_have_attribute("aria-describedby", "yaml-keys")
    expect(page.locator("#yaml-keys")).to_be_visible()
    expect(page.locator("#yaml-keys")).to_contain_text("Esc then Tab")
    area.focus()
    page.keyboard.type("kind: Queue")
    page.keyboard.press("Home")
    page.keyboard.press("Tab")
    expect(area).to_have_value("  kind: Queue")
    assert focused_id(page) == "yaml"
    page.keyboard.press("Shift+Tab")
    expect(area).to_have_value("kind: Queue")
    assert focused_id(page) == "yaml"
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    expect(area).to_have_value("kind: Queue")
    assert focused_id(page) != "yaml"
    area.focus()
    page.keyboard.press("Escape")
    page.keyboard.press("Shift+Tab")
    assert focused_id(page) != "yaml"


def test_a_finding_is_reached_and_followed_from_the_keyboard(page: Any, stack: Stack) -> None:
    """Findings were list items that only a click opened."""
    board.open_view(page, stack, "policy")
    board.type_policy(page, board.broken("Weighted", "Sideways"))
    finding = page.locator('#findings li[data-line="16"] button')
    expect(finding).to_have_count(1)
    page.locator("#yaml").focus()
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    expect(finding).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#yaml")).to_be_focused()
    line = page.evaluate(
        "() => { const a = document.querySelector('#yaml');"
        " return a.value.slice(0, a.selectionStart).split('\\n').length; }"
    )
    assert line == 16


def test_every_drill_report_opens_from_the_keyboard(
    page: Any, stack: Stack, stored_drills: tuple[str, str]
) -> None:
    """The list entries had a click handler only: the keyboard reached none of them."""
    good, _ = stored_drills
    board.open_view(page, stack, "drills")
    entry = page.locator(f'#drill-list [data-drill="{good}"] button')
    entry.focus()
    expect(entry).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#drill-timeline h2")).to_have_text(f"Drill {good}")
    expect(entry).to_have_attribute("aria-current", "true")


def test_the_token_field_has_a_label(page: Any, stack: Stack) -> None:
    """It had only a placeholder, which a screen reader may not announce."""
    board.open_view(page, stack, "clusters")
    page.locator("#token-button").click()
    expect(page.get_by_label("Bearer token")).to_have_id("token-input")
    page.locator("#token-dialog button[value=save]").click()


# The contrast of an element's text on what is drawn behind it (WCAG's ratio), for the
# classes whose text the dashboard colours: each made on the page, styled by its sheet.
CONTRAST = """(specs) => {
  const rgb = (c) => c.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => {
    v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  }).reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const behind = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const bg = rgb(getComputedStyle(e).backgroundColor);
      if (bg.length < 4 || bg[3] > 0) return bg;
    }
    return [255, 255, 255];
  };
  const box = document.createElement("div");
  document.querySelector("main").append(box);
  const out = {};
  for (const [name, html] of Object.entries(specs)) {
    box.innerHTML = html;
    const el = box.querySelector("[data-probe]");
    const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(behind(el))];
    out[name] = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  }
  box.remove();
  return out;
}"""

PROBES = {
    "Running / Unknown badge": '<span class="phase Running" data-probe>x</span>',
    "unknown health": '<span class="health unknown" data-probe>x</span>',
    "warning text": '<p class="hint timing warn" data-probe>x</p>',
    "warning finding": '<ul class="findings"><li class="warning" data-probe>x</li></ul>',
    "gutter warning": '<div class="gutter"><div class="ln warn" data-probe>1</div></div>',
    "inline warning": '<div class="mark warn"><span class="inline-msg" data-probe>x</span></div>',
    "Ready badge": '<span class="health ready" data-probe>x</span>',
    "Pending badge": '<span class="phase Pending" data-probe>x</span>',
    "NotReady badge": '<span class="health notready" data-probe>x</span>',
    "gutter line number": '<div class="gutter"><div class="ln" data-probe>1</div></div>',
    "muted text": '<span class="muted" data-probe>x</span>',
    "Progressing badge": '<span class="health progressing" data-probe>x</span>',
    "Suspended badge": '<span class="health idle" data-probe>x</span>',
    "ready on a member": '<span class="member-ready ready" data-probe>x</span>',
    "progressing on a member": '<span class="member-ready progressing" data-probe>x</span>',
    "not ready on a member": '<span class="member-ready notready" data-probe>x</span>',
}


def test_coloured_text_has_at_least_aa_contrast(page: Any, stack: Stack) -> None:
    """Amber badges and warnings (2.7:1), green (3.1:1) and red (3.8:1) badges and the
    gutter's line numbers (2.3:1) were below the 4.5:1 that 11-12 px text needs."""
    board.open_view(page, stack, "clusters")
    ratios = page.evaluate(CONTRAST, PROBES)
    low = {name: round(r, 2) for name, r in ratios.items() if r < 4.5}
    assert not low, f"below 4.5:1: {low}"
