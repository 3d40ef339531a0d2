"""`fedctl get -w`: the table once, then only rows that changed; a minute passing (AGE) is
no change; an API that stops answering is said once, and its return too."""

from __future__ import annotations

import asyncio

import pytest

from federation import clock, errors
from federation.cli import render, watching
from tests.waiting import wait_for

HEADER = ["NAME", "READY", "AGE", "CLUSTERS"]


def table(*rows: list[str]) -> str:
    return render.table(HEADER, list(rows))


def test_cells_are_cut_by_the_header_and_leave_age_out() -> None:
    text = table(["web", "12/12", "7m", "us-east 6/6, eu-west 6/6"])
    header, row = text.splitlines()
    assert watching.cells(header, row) == ("web", "12/12", "us-east 6/6, eu-west 6/6")


def test_only_new_or_changed_rows_are_printed_again() -> None:
    first = table(["a", "1/1", "1m", "x"], ["b", "0/1", "1m", "y"]).splitlines()
    rows, seen = watching.changed(first[0], first[1:], set())
    assert rows == first[1:]
    # A minute later, b is ready and a wider cell moves the columns: only b is printed.
    later = table(["a", "1/1", "2m", "x"], ["b", "1/1", "2m", "y, somewhere-long"]).splitlines()
    rows, _ = watching.changed(later[0], later[1:], seen)
    assert rows == [later[2]]


async def test_the_watch_prints_the_header_once_and_rides_out_an_api_failure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    polls = [
        table(["a", "0/1", "1m", "-"]),
        errors.FedctlError("API unavailable: connection refused"),
        errors.FedctlError("API unavailable: connection refused"),
        table(["a", "0/1", "2m", "-"]),
        table(["a", "1/1", "2m", "us-east 1/1"]),
    ]

    async def once() -> int:
        step = polls.pop(0)
        if isinstance(step, Exception):
            raise step
        print(step)
        return 0

    fake = clock.FakeClock()
    task = asyncio.create_task(watching.watch(once, clock=fake, polls=5))
    for _ in range(5):
        await wait_for(lambda: fake.sleepers > 0 or task.done(), message="the watch waiting")
        await fake.advance(watching.INTERVAL)
    assert await task == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        table(["a", "0/1", "1m", "-"]).splitlines()[0],
        table(["a", "0/1", "1m", "-"]).splitlines()[1],
        table(["a", "1/1", "2m", "us-east 1/1"]).splitlines()[1],
    ]
    assert err.splitlines() == [
        "fedctl: API unavailable: connection refused; still watching",
        "fedctl: the API answers again",
    ]


async def test_a_slow_listing_is_asked_for_less_often(capsys: pytest.CaptureFixture[str]) -> None:
    """A listing that takes 3 s (10,000 workloads on a busy server) is asked for again
    after 6 s, not every second: a watch left open never pins the controller."""
    fake = clock.FakeClock()
    calls: list[float] = []

    async def once() -> int:
        calls.append(fake.monotonic())
        await fake.advance(3)  # the server's time to answer
        print(table(["a", "1/1", "1m", "-"]))
        return 0

    task = asyncio.create_task(watching.watch(once, clock=fake, polls=2))
    await wait_for(lambda: fake.sleepers > 0, message="the watch waiting after one listing")
    await fake.advance(5.9)
    assert calls == [0.0]
    await fake.advance(0.2)
    await wait_for(lambda: len(calls) == 2, message="the second listing")
    assert calls == [0.0, 9.0]
    await wait_for(lambda: fake.sleepers > 0 or task.done(), message="the watch waiting")
    await fake.advance(10)
    assert await task == 0


def test_a_later_row_is_laid_out_by_the_header_printed_first() -> None:
    """Each poll pads to its own widest cell: a Warning row after a poll of Normal ones
    shifted against the header printed at the start (`get events -w`)."""
    first = render.table(["TYPE", "REASON", "MESSAGE"], [["Normal", "Applied", "applied to a"]])
    later = render.table(
        ["TYPE", "REASON", "MESSAGE"],
        [["Normal", "Applied", "applied to a"], ["Warning", "Evicted", "evicted from a"]],
    )
    header, row = first.splitlines()[0], later.splitlines()[2]
    assert row.index("Evicted") != header.index("REASON")  # as the poll printed it
    moved = watching.realigned(header, later.splitlines()[0], row)
    assert moved.index("Evicted") == header.index("REASON")
    assert moved.index("evicted from a") == header.index("MESSAGE")
    assert moved.split() == row.split()
    # A cell wider than the first header's column keeps two spaces before the next.
    long = render.table(["TYPE", "REASON", "MESSAGE"], [["Warning", "FailedApplyRetry", "m"]])
    shifted = watching.realigned(header, long.splitlines()[0], long.splitlines()[1])
    assert "FailedApplyRetry  m" in shifted


async def polled(capsys: pytest.CaptureFixture[str], polls: list[str | Exception]) -> list[str]:
    """What `get -w` prints over `polls`: each a table `once` prints, or an error it raises."""

    async def once() -> int:
        step = polls.pop(0)
        if isinstance(step, Exception):
            raise step
        if step:  # an empty listing prints nothing on stdout ("No ... found." on stderr)
            print(step)
        return 0

    fake = clock.FakeClock()
    count = len(polls)
    task = asyncio.create_task(watching.watch(once, clock=fake, polls=count))
    for _ in range(count):
        await wait_for(lambda: fake.sleepers > 0 or task.done(), message="the watch waiting")
        await fake.advance(watching.INTERVAL)
    assert await task == 0
    return capsys.readouterr().out.splitlines()


NAMESPACED = ["NAMESPACE", "NAME", "KIND", "READY", "AGE"]


FIRST = render.table(
    NAMESPACED,
    [["web", "a", "Deployment.apps", "1/1", "1m"], ["web", "b", "Deployment.apps", "2/2", "1m"]],
).splitlines()


@pytest.mark.parametrize(
    ("later", "printed"),
    [
        pytest.param(
            render.table(NAMESPACED, [["web", "a", "Deployment.apps", "1/1", "2m"]]),
            [FIRST[2]],
            id="one of two deleted",
        ),
        pytest.param("", FIRST[1:], id="the last ones deleted (an empty listing)"),
        pytest.param(errors.NotFound('workloads "web/b"'), FIRST[1:], id="the one named deleted"),
        pytest.param(
            render.table(
                NAMESPACED,
                [
                    ["web", "a", "Deployment.apps", "1/1", "2m"],
                    ["web", "b", "Job.batch", "0/1", "1s"],
                ],
            ),
            [FIRST[2], "web  b  Job.batch  0/1  1s"],
            id="another kind of the same name is another object",
        ),
    ],
)
async def test_a_deleted_object_s_last_row_is_printed_as_kubectl_does(
    capsys: pytest.CaptureFixture[str], later: str | Exception, printed: list[str]
) -> None:
    """`fedctl get deploy -w` printed nothing when a Deployment was deleted: its row just
    stopped. kubectl prints the object's last row when it goes (once)."""
    out = await polled(capsys, ["\n".join(FIRST), later, later])
    assert [line.split() for line in out] == [line.split() for line in [*FIRST, *printed]]


async def test_an_api_that_stops_answering_deletes_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    row = ["web", "a", "Deployment.apps", "1/1", "1m"]
    text = render.table(NAMESPACED, [row])
    out = await polled(capsys, [text, errors.FedctlError("API unavailable"), text])
    assert out == text.splitlines()
