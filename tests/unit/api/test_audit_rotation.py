"""The audit file under log rotation: the trail follows the path, not the first file.

logrotate's default (`create`) renames the file and creates an empty one in its place;
the controller kept writing into the renamed file for good, and the new one stayed
empty. Now each record goes to whatever file is at the path, as Python's
`WatchedFileHandler` does it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from federation.api import audit


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(
    "rotate",
    [
        pytest.param(lambda p: p.rename(p.with_name("audit.log.1")), id="renamed, none created"),
        pytest.param(
            lambda p: (p.rename(p.with_name("audit.log.1")), p.touch()),
            id="renamed and created (logrotate's create)",
        ),
        pytest.param(lambda p: p.unlink(), id="deleted"),
    ],
)
def test_records_after_a_rotation_go_to_the_file_at_the_path(
    tmp_path: Path, rotate: Callable[[Path], object]
) -> None:
    path = tmp_path / "audit.log"
    trail = audit.AuditLog(path)
    try:
        trail.write({"n": 1})
        rotate(path)
        trail.write({"n": 2})
        trail.write({"n": 3})
    finally:
        trail.close()
    assert lines(path) == [{"n": 2}, {"n": 3}]
    rotated = tmp_path / "audit.log.1"
    if rotated.exists():
        assert lines(rotated) == [{"n": 1}]


def test_records_keep_going_to_the_same_file_while_it_stays(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    trail = audit.AuditLog(path)
    try:
        for n in range(3):
            trail.write({"n": n})
    finally:
        trail.close()
    assert lines(path) == [{"n": 0}, {"n": 1}, {"n": 2}]
