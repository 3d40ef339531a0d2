"""`fedctl get KIND` rows for kinds without their own table: NAMESPACE, NAME and AGE."""

from __future__ import annotations

import datetime as dt

from federation.cli import render

NOW = dt.datetime(2026, 12, 7, 12, 0, tzinfo=dt.UTC)


def test_a_binding_s_age_is_since_it_was_last_scheduled() -> None:
    """The scheduler writes Bindings without a creation time: every row read `<unknown>`."""
    binding = {
        "metadata": {"name": "storefront", "namespace": "web"},
        "status": {"phase": "Scheduled", "lastScheduledTime": "2026-12-07T11:55:00Z"},
    }
    queue = {"metadata": {"name": "ml", "creationTimestamp": "2026-12-07T09:00:00Z"}}
    bare = {"metadata": {"name": "x", "namespace": "web"}}
    text = render.objects([binding, bare], namespaced=True, now=NOW, wide=False)
    assert text is not None
    assert [line.split() for line in text.splitlines()[1:]] == [
        ["web", "storefront", "5m"],
        ["web", "x", "<unknown>"],
    ]
    queues = render.objects([queue], namespaced=False, now=NOW, wide=False)
    assert queues is not None and queues.splitlines()[1].split() == ["ml", "3h"]
