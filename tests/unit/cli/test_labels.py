"""kubectl's label selector syntax for `fedctl get -l`."""

from __future__ import annotations

import pytest

from federation import errors
from federation.cli import cluster_cmd, labels, main


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


@pytest.mark.parametrize(
    ("selector", "reason"),
    [
        ("Example.com/app=web", "its prefix 'Example.com' is not a DNS subdomain"),
        ("tier in (ok, not ok)", "label value 'not ok' of 'tier' is not valid"),
        ("-tier", "label key '-tier' is not a qualified name"),
    ],
)
def test_a_selector_no_label_can_match_is_refused_with_the_rule(selector: str, reason: str) -> None:
    """kubectl refuses these too: a selector naming a label no object can carry matches
    nothing, and an empty table would say nothing of why."""
    with pytest.raises(errors.Invalid, match="label selector") as refused:
        labels.parse(selector)
    assert reason in str(refused.value)


def test_cluster_label_refuses_what_kubernetes_refuses_before_writing() -> None:
    """`fedctl cluster label X "bad key!=x"` stored the label and said `labeled`; the
    arguments are judged before the Cluster is read, so nothing is written. A key to
    remove is not judged: a label stored before the rule existed can still be removed."""
    with pytest.raises(errors.Invalid) as refused:
        cluster_cmd.parse_labels(["tier=web", "bad key!=x"])
    assert str(refused.value) == (
        "label 'bad key!=x': label key 'bad key!' is not a qualified name: its name part must"
        " be letters, digits, '-', '_' or '.', beginning and ending with a letter or digit"
    )
    with pytest.raises(errors.Invalid, match="label 'tier=x y': label value 'x y'"):
        cluster_cmd.parse_labels(["tier=x y"])
    with pytest.raises(errors.Invalid, match="more than 63"):
        cluster_cmd.parse_labels([f"{'a' * 64}=x"])
    assert cluster_cmd.parse_labels(["example.com/tier=", "bad key!-"]) == (
        {"example.com/tier": ""},
        {"bad key!"},
    )


def test_join_refuses_a_label_without_a_value_instead_of_dropping_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`cluster join x --label tier` joined x without the label, saying nothing."""
    code = main.main(
        [
            "cluster",
            "join",
            "x",
            "--region",
            "r",
            "--label",
            "tier",
            "--server",
            "http://127.0.0.1:9",
        ]
    )
    assert code == 1
    assert "--label 'tier': expected KEY=VALUE" in capsys.readouterr().err
