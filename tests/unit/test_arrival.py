"""The uids the API gives objects it creates sort in creation order, and a workload's FIFO
sequence is its create revision, then that order among objects of one transaction."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from federation.registry import arrival

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    "times",
    [
        pytest.param([T0] * 5000, id="one millisecond, past the counter's 4096 values"),
        pytest.param(
            [T0, T0 + dt.timedelta(seconds=1), T0, T0 - dt.timedelta(hours=1)],
            id="the clock stepping back",
        ),
        pytest.param([T0 + dt.timedelta(milliseconds=i) for i in range(10)], id="time moving on"),
    ],
)
def test_uids_made_one_after_another_sort_in_that_order(times: list[dt.datetime]) -> None:
    made = arrival.Uids()
    uids = [made.new(t) for t in times]
    assert all(uuid.UUID(u).version == 7 for u in uids)
    sequences = [arrival.sequence(7, u) for u in uids]
    assert sequences == sorted(sequences)
    assert len(set(sequences)) == len(sequences)


def test_the_create_revision_comes_before_the_uid() -> None:
    made = arrival.Uids()
    earlier, later = made.new(T0), made.new(T0)
    assert arrival.sequence(3, later) < arrival.sequence(4, earlier)


@pytest.mark.parametrize(
    "uid",
    [
        pytest.param(None, id="none"),
        pytest.param(str(uuid.uuid4()), id="a random uuid"),
        pytest.param("not-a-uuid", id="any other string"),
    ],
)
def test_a_uid_of_another_form_orders_nothing(uid: str | None) -> None:
    assert arrival.sequence(5, uid) == arrival.sequence(5, None) == 5 << 64
