"""`labelSelector` and `fieldSelector` as the Kubernetes API server takes them, and a 400
naming the parameter for what is malformed or not supported (never ignored: a script
deleting by selector would have deleted every object). `limit` alone is ignored, as
Kubernetes lets a server that does not page ignore it: kubectl sends it on every list."""

from __future__ import annotations

from typing import Any

import pytest

from federation import errors
from federation.api import selectors


def obj(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta}


OBJECTS = [
    obj("a", "ci", app="web", tier="front"),
    obj("b", "ci", app="db"),
    obj("c", "web"),
]


@pytest.mark.parametrize(
    ("query", "names"),
    [
        pytest.param({"labelSelector": "app=web"}, ["a"], id="equals"),
        pytest.param({"labelSelector": "app==web"}, ["a"], id="double equals"),
        pytest.param({"labelSelector": "app!=web"}, ["b", "c"], id="not equals, unlabelled too"),
        pytest.param({"labelSelector": "app in (web, db)"}, ["a", "b"], id="in"),
        pytest.param({"labelSelector": "app notin (web)"}, ["b", "c"], id="notin"),
        pytest.param({"labelSelector": "app"}, ["a", "b"], id="exists"),
        pytest.param({"labelSelector": "!app"}, ["c"], id="does not exist"),
        pytest.param({"labelSelector": "app in (web,db),tier"}, ["a"], id="all must hold"),
        pytest.param({"fieldSelector": "metadata.name=b"}, ["b"], id="by name"),
        pytest.param({"fieldSelector": "metadata.namespace!=ci"}, ["c"], id="by namespace"),
        pytest.param(
            {"fieldSelector": "metadata.namespace=ci", "labelSelector": "app=db"},
            ["b"],
            id="both",
        ),
        pytest.param({"labelSelector": ""}, ["a", "b", "c"], id="empty selects everything"),
        pytest.param({"limit": "500"}, ["a", "b", "c"], id="limit ignored, as kubectl sends it"),
        pytest.param(
            {"limit": "1", "labelSelector": "app"}, ["a", "b"], id="limit ignored with a selector"
        ),
    ],
)
def test_selectors_choose_as_kubernetes_does(query: dict[str, str], names: list[str]) -> None:
    chosen = selectors.from_query(query)
    assert [o["metadata"]["name"] for o in OBJECTS if chosen.matches(o)] == names


CLUSTERS = [
    {"metadata": {"name": "eu-1"}, "spec": {"region": "eu-west", "provider": "aws"}},
    {"metadata": {"name": "eu-2"}, "spec": {"region": "eu-west", "zone": "eu-west-1b"}},
    {"metadata": {"name": "us-1"}, "spec": {"region": "us-east", "provider": "gcp"}},
]


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        pytest.param("spec.region=eu-west", ["eu-1", "eu-2"], id="region"),
        pytest.param("spec.provider!=aws", ["eu-2", "us-1"], id="not a provider, none too"),
        pytest.param("spec.zone=", ["eu-1", "us-1"], id="no zone"),
        pytest.param("spec.region==eu-west,spec.zone=eu-west-1b", ["eu-2"], id="both"),
    ],
)
def test_clusters_are_chosen_by_region_zone_and_provider(selector: str, names: list[str]) -> None:
    """They are spec fields, not labels: `-l region=eu-west` chose none, and nothing else
    chose by them."""
    chosen = selectors.from_query({"fieldSelector": selector}, kind="clusters")
    assert [o["metadata"]["name"] for o in CLUSTERS if chosen.matches(o)] == names


def test_a_clusters_field_is_not_one_of_another_kind() -> None:
    with pytest.raises(errors.Invalid) as info:
        selectors.from_query({"fieldSelector": "spec.region=eu"}, kind="queues")
    assert str(info.value) == (
        "fieldSelector: 'spec.region' is not a known field selector of queues: only"
        " 'metadata.name', 'metadata.namespace'"
    )


@pytest.mark.parametrize(
    ("query", "message"),
    [
        pytest.param({"labelSelector": "app=(web"}, "labelSelector: Invalid value", id="bad"),
        pytest.param({"labelSelector": "app in ()"}, "labelSelector:", id="empty set"),
        pytest.param({"labelSelector": "app>3"}, "labelSelector:", id="gt not supported"),
        pytest.param(
            {"fieldSelector": "spec.weight=1"},
            "fieldSelector: 'spec.weight' is not a known field selector",
            id="unknown field",
        ),
        pytest.param({"limit": "ten"}, "limit: Invalid value: 'ten'", id="limit not a count"),
        pytest.param({"limit": "-1"}, "limit: Invalid value: '-1'", id="negative limit"),
        pytest.param(
            {"continue": "abc"}, "continue: Invalid value: 'abc': no continue token", id="continue"
        ),
    ],
)
def test_what_is_not_supported_is_refused_naming_the_parameter(
    query: dict[str, str], message: str
) -> None:
    with pytest.raises(errors.Invalid) as info:
        selectors.from_query(query)
    assert str(info.value).startswith(message), info.value


@pytest.mark.parametrize(
    ("kind", "before", "after", "sent"),
    [
        pytest.param("MODIFIED", "app=web", "app=web", "MODIFIED", id="still matches"),
        pytest.param("MODIFIED", "app=web", "app=db", "DELETED", id="stops matching"),
        pytest.param("MODIFIED", "app=db", "app=web", "ADDED", id="starts matching"),
        pytest.param("MODIFIED", "app=db", "app=db", None, id="never matches"),
        pytest.param("ADDED", None, "app=web", "ADDED", id="created matching"),
        pytest.param("DELETED", None, "app=db", None, id="deleted, never matched"),
    ],
)
def test_a_filtered_watch_sends_what_a_filtering_client_would_keep(
    kind: str, before: str | None, after: str, sent: str | None
) -> None:
    chosen = selectors.from_query({"labelSelector": "app=web"})

    def labelled(pair: str) -> dict[str, Any]:
        key, _, value = pair.partition("=")
        return obj("x", **{key: value})

    assert chosen.event(kind, labelled(after), before and labelled(before)) == sent
