"""A member's GC pass skipped on a timeout says so: a TimeoutError's own text is empty,
and 273 lines of `gc: us-west-cpu-09 skipped: ` told an operator nothing."""

from __future__ import annotations

from federation import errors
from federation.propagation import controller


def test_a_timeout_says_how_long_it_waited() -> None:
    assert controller._reason(TimeoutError(), 15.0) == "timed out after 15s"


def test_another_error_keeps_its_words() -> None:
    error = errors.Unavailable("connection refused by http://127.0.0.1:1")
    assert controller._reason(error, 15.0) == "connection refused by http://127.0.0.1:1"
