"""kubectl's label selector syntax for `fedctl get -l`."""

from __future__ import annotations

import pytest

from federation import errors
from federation.cli import labels


def obj(**given: str) -> dict[str, object]:
    return {"metadata": {"name": "x", "labels": given}}


@pytest.mark.parametrize(
    ("selector", "taken", "left"),
    [
        ("app=web", [obj(app="web")], [obj(app="db"), obj()]),
        (
            "app==web,tier!=db",
            [obj(app="web", tier="fe"), obj(app="web")],
            [obj(app="web", tier="db")],
        ),
        ("env in (prod, staging)", [obj(env="prod"), obj(env="staging")], [obj(env="dev"), obj()]),
        (
            "env notin (dev),gpu",
            [obj(env="prod", gpu="a100"), obj(gpu="l4")],
            [obj(env="dev", gpu="x")],
        ),
        ("!legacy", [obj(), obj(app="web")], [obj(legacy="true")]),
        ("team=", [obj(team="")], [obj(team="ml")]),
    ],
)
def test_selectors_take_what_kubectl_takes(
    selector: str, taken: list[dict[str, object]], left: list[dict[str, object]]
) -> None:
    parsed = labels.parse(selector)
    assert all(labels.matches(parsed, o) for o in taken)
    assert not any(labels.matches(parsed, o) for o in left)


@pytest.mark.parametrize("selector", ["app=web,", "env in (a,b", "a=b=c", "x y"])
def test_a_selector_that_does_not_read_is_refused_with_the_syntax(selector: str) -> None:
    with pytest.raises(errors.Invalid, match="label selector"):
        labels.parse(selector)
