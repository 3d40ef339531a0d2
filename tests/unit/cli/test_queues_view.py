"""`fedctl get queues` and `fedctl describe queue` text, from the queue status view."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from federation.cli import queues_view

NOW = dt.datetime(2026, 12, 4, 12, 0, tzinfo=dt.UTC)


def item(name: str, **over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": name,
        "defined": True,
        "implicit": False,
        "created": "2026-12-04T11:00:00Z",
        "parent": None,
        "children": [],
        "weight": 1,
        "priority": 0,
        "admitted": 0,
        "pending": 0,
        "used": {},
        "capability": None,
        "guarantee": {},
        "share": 0.0,
    }
    return base | over


ITEMS = [
    item("default", defined=False, implicit=True, created=None, admitted=1),
    item("ml", weight=3, children=["ml-prod"], admitted=2, pending=1, share=0.125,
         used={"nvidia.com/gpu": "8"}, capability={"nvidia.com/gpu": "32"}),
    item("ml-prod", parent="ml", weight=2, priority=100, admitted=2, pending=1, share=0.25,
         used={"nvidia.com/gpu": "8"}, guarantee={"nvidia.com/gpu": "8"}),
    item("mlprod", defined=False, created=None, pending=1),
]  # fmt: skip


def rows(text: str | None) -> dict[str, list[str]]:
    assert text is not None
    return {line.split()[0]: line.split()[1:] for line in text.splitlines()[1:]}


def test_each_queue_with_its_parent_counts_share_and_age() -> None:
    text = queues_view.table(ITEMS, now=NOW)
    assert text is not None and text.splitlines()[0].split() == queues_view.HEADERS
    got = rows(text)
    assert got["ml"] == ["-", "3", "0", "2", "1", "12.5%", "1h"]
    assert got["ml-prod"] == ["ml", "2", "100", "2", "1", "25.0%", "1h"]
    assert got["default"] == ["-", "-", "-", "1", "0", "0.0%", "<implicit>"]
    assert got["mlprod"] == ["-", "-", "-", "0", "1", "0.0%", "<not", "defined>"]


def test_one_queue_by_name_and_the_wide_columns() -> None:
    got = rows(queues_view.table(ITEMS, now=NOW, only="ml-prod", wide=True))
    assert list(got) == ["ml-prod"]
    # USED, CAPABILITY, GUARANTEE, COST/H ("-": the costs view was not read), BUDGET/H.
    assert got["ml-prod"][-5:] == ["nvidia.com/gpu=8", "-", "nvidia.com/gpu=8", "-", "-"]
    assert queues_view.table(ITEMS, now=NOW, only="none") is None
    assert queues_view.table([], now=NOW) is None


def test_the_wide_table_shows_the_budget_and_leaves_out_what_is_no_longer_held() -> None:
    web = item(
        "web",
        used={"accelerator/nvidia-l4": "0", "cpu": "6", "nvidia.com/gpu": "0"},
        maxHourlyCost="0.35",
        hourlyCost=Decimal("0.3093"),
        currency="USD",
    )
    got = rows(queues_view.table([web], now=NOW, wide=True))
    assert got["web"][-5:] == ["cpu=6", "-", "-", "0.3093", "0.3500"]
    (doc,) = queues_view.documents([web], [], only="web")
    assert (doc["status"]["hourlyCost"], doc["status"]["currency"]) == ("0.3093", "USD")


def test_describe_lists_every_resource_used_guaranteed_or_capped() -> None:
    text = queues_view.usage(ITEMS[1] | {"used": {"nvidia.com/gpu": "8", "cpu": "12"}})
    assert "Children:    ml-prod" in text
    table = {line.split()[0]: line.split()[1:] for line in text.splitlines()[-2:]}
    assert table == {"cpu": ["12", "-", "-"], "nvidia.com/gpu": ["8", "-", "32"]}
    assert queues_view.usage(item("idle")).endswith("Usage:       <none>")


def test_work_with_no_price_reads_unpriced_in_every_queue_view_never_free() -> None:
    """`get queues -o wide`, `-o json` and `describe queue` printed 0.0000 for a queue whose
    work runs where no price is known, while `fedctl cost` said unpriced; a queue partly
    unpriced showed its priced part with no sign that replicas were missing from it."""
    costs = {
        "currency": "USD",
        "items": [
            {"name": "uq", "replicas": 2, "hourlyCost": "0", "unpricedReplicas": 2},
            {"name": "team-a", "replicas": 5, "hourlyCost": "0.5", "unpricedReplicas": 2},
        ],
    }
    items = queues_view.costed(
        [item("dept", children=["team-a"]), item("team-a", parent="dept"), item("uq")], costs
    )
    got = rows(queues_view.table(items, now=NOW, wide=True))
    assert got["uq"][-2:] == ["unpriced", "-"]
    assert got["team-a"][-4:] == ["0.5000", "(+2", "unpriced)", "-"]
    assert got["dept"][-4:] == ["0.5000", "(+2", "unpriced)", "-"]  # its subtree's
    docs = {d["metadata"]["name"]: d["status"] for d in queues_view.documents(items, [], only="uq")}
    assert (docs["uq"]["hourlyCost"], docs["uq"]["unpricedReplicas"]) == ("0.0000", 2)
    described = {
        i["name"]: next(x for x in queues_view.usage(i).splitlines() if x.startswith("Cost:"))
        for i in items
    }
    assert described["uq"] == (
        "Cost:        unpriced (its 2 replica(s) run where no price is known: fedctl cost)"
    )
    assert described["team-a"].startswith(
        "Cost:        0.5000 USD/h (what its placed work costs an hour, as estimated when"
        " placed; 2 replica(s) run where no price is known and are not in it: fedctl cost)"
    )
