"""Quantities parse exactly and print the way the apiserver prints them."""

from __future__ import annotations

import pytest

from clusters.sim import quantity
from clusters.sim.clock import parse_duration


@pytest.mark.parametrize(
    ("text", "milli", "printed"),
    [
        pytest.param("500m", 500, "500m", id="milli cores"),
        pytest.param("0.1", 100, "100m", id="a decimal fraction becomes milli"),
        pytest.param("1000", 1_000_000, "1k", id="whole thousands take the k suffix"),
        pytest.param("1500", 1_500_000, "1500", id="not a whole thousand stays plain"),
        pytest.param("2Gi", 2 * 1024**3 * 1000, "2Gi", id="binary suffix"),
        pytest.param("1.5Gi", 1536 * 1024**2 * 1000, "1536Mi", id="binary fraction drops a unit"),
        pytest.param("1e3", 1_000_000, "1e3", id="exponent notation keeps its form"),
        pytest.param("8", 8000, "8", id="GPU count"),
        pytest.param("1n", 1, "1n", id="nano rounds up to one milli"),
    ],
)
def test_parse_and_print(text: str, milli: int, printed: str) -> None:
    q = quantity.parse(text)
    assert q.milli() == milli
    assert str(q) == printed


@pytest.mark.parametrize(
    ("left", "right", "printed"),
    [
        pytest.param("0", "2Gi", "2147483648", id="sum takes the left operand's decimal format"),
        pytest.param("1Gi", "512Mi", "1536Mi", id="binary plus binary stays binary"),
        pytest.param("500m", "500m", "1", id="milli adds up to a whole core"),
        pytest.param("0.1", "0.2", "300m", id="no floating point drift"),
    ],
)
def test_sums_print_like_upstream(left: str, right: str, printed: str) -> None:
    assert str(quantity.parse(left) + quantity.parse(right)) == printed


@pytest.mark.parametrize("text", ["", "1.2.3", "5 Gi", "Gi", "1Xi", "--1"])
def test_rejects_what_upstream_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        quantity.parse(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("30s", 30.0, id="seconds"),
        pytest.param("1m30s", 90.0, id="minutes and seconds"),
        pytest.param("500ms", 0.5, id="milliseconds"),
        pytest.param("2h", 7200.0, id="hours"),
        pytest.param("45", 45.0, id="a bare number is seconds"),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_bad_duration() -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration("soon")
