"""A full registry's refusals are logged once per 30 s, saying how many were held back.

Each loop logged each key's refusal at each retry: about 3,400 lines in the minute it
took to free space at 1,000 Jobs, all with the same cause and remedy."""

from __future__ import annotations

import logging

from federation import errors
from federation.cli.main import _Repeats


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
