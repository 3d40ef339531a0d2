"""A full registry's refusals are logged once per 30 s, saying how many were held back.

Each loop logged each key's refusal at each retry: about 3,400 lines in the minute it
took to free space at 1,000 Jobs, all with the same cause and remedy."""

from __future__ import annotations

import logging

import pytest

from federation import errors
from federation.cli.main import _Repeats, configure_logging
from federation.registry.store import WATCH_RECONNECTING


def _record(text: str, at: float, level: int = logging.WARNING) -> logging.LogRecord:
    record = logging.LogRecord("x", level, __file__, 1, "%s", (text,), None)
    record.created = at
    return record


def test_refusals_for_space_are_folded_and_everything_else_passes() -> None:
    full = f"propagation of w|a not converged: etcd at e {errors.RegistryFull.MARK} (...)"
    repeats = _Repeats(errors.RegistryFull.MARK, every=30)
    kept = [
        r.getMessage()
        for r in (
            _record(full, 0),
            _record(full, 1),
            _record("cluster a: status not converged: timeout", 2),  # another cause
            _record(full, 10),
            _record(full, 20, logging.INFO),  # below warning: not the flood this is for
            _record(full, 31),
        )
        if repeats.filter(r)
    ]
    assert kept == [
        full,
        "cluster a: status not converged: timeout",
        full,
        f"{full} (and 2 more like it before)",
    ]


def test_lost_watches_are_folded_too(capsys: pytest.CaptureFixture[str]) -> None:
    """An etcd restart loses every watch of every component at once: some 125 lines each
    time, one per watch per backoff."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    configure_logging("warning", json_logs=False)
    try:
        log = logging.getLogger("federation.registry.etcd")
        for prefix in ("/fedctl/bindings/", "/fedctl/works/", "/fedctl/clusters/") * 10:
            log.warning(
                "watch on %s from revision %d lost (%s)" + WATCH_RECONNECTING + " %.2fs",
                prefix, 7, "UNAVAILABLE", 0.1,
            )  # fmt: skip
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "watch on /fedctl/bindings/ from revision 7 lost" in lines[0]
