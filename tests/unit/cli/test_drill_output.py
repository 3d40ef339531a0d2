"""What `fedctl drill run` prints at the end, by drill size: the per-workload table on the
terminal for a small drill or with -v, in the report files always."""

from __future__ import annotations

from pathlib import Path

import pytest

from federation.cli import drill_cmd, main
from federation.failover import drills


def finished(n: int) -> drills.Report:
    rows = [
        drills.WorkloadTimeline(f"web/Deployment.apps/svc-{i:03d}", 3.0, 5.0, "recovered")
        for i in range(n)
    ]
    return drills.Report(
        id="d1", cluster="a", fault="down", started="t", duration=10, detect=1.0,
        replace=3.0, rto=5.0, affected=n, healed_at=11.0, workloads=rows,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("n", "verbose", "rows_printed"),
    [
        pytest.param(20, False, 20, id="a small drill prints its table as it always did"),
        pytest.param(220, False, 0, id="a busy member's drill prints the numbers alone"),
        pytest.param(220, True, 220, id="-v prints every row"),
    ],
)
def test_the_printed_report_lists_the_workloads_only_when_few_or_asked(
    n: int, verbose: bool, rows_printed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A drill of 220 workloads ended with a 220-row table that scrolled its headline
    numbers off the terminal; report.md keeps every row whatever is printed."""
    drill_cmd._write(finished(n), tmp_path, verbose=verbose)
    out = capsys.readouterr().out
    assert out.count("| recovered |") == rows_printed
    assert "| RTO (all ready elsewhere) | 5.0s |" in out
    assert ("`fedctl drill show d1`" in out) == (rows_printed == 0)
    assert (tmp_path / "report.md").read_text().count("| recovered |") == n


def test_drill_run_takes_verbose() -> None:
    parser = main.build_parser()
    args = parser.parse_args(["drill", "run", "a", "-v"])
    assert args.verbose is True
    assert parser.parse_args(["drill", "run", "a"]).verbose is False
