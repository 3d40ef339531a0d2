"""A List (what `kubectl get -o yaml` writes) and a JSON list (what `fedctl get -o json`
writes) load as their items, as kubectl apply takes them, with findings at each item's
own lines: a List was refused for a missing name, or stored as one workload whose items
nobody read, and `fedctl get -o json` output could not be applied back."""

from __future__ import annotations

from pathlib import Path

from federation.cli import render
from policies.loading import load_paths, load_text

EXAMPLES = Path(__file__).resolve().parents[3] / "policies" / "examples"

LIST = """\
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
  - apiVersion: fedctl.io/v1alpha1
    kind: Queue
    metadata:
      name: from-list
    spec: {weight: 2}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings, namespace: web}
    data: {a: b}
"""


def test_a_list_loads_as_its_items() -> None:
    result = load_text(LIST, filename="l.yaml")

    assert result.findings == []
    assert [(o.model.kind, o.model.metadata.name, o.line) for o in result.objects] == [
        ("Queue", "from-list", 5),
        ("ConfigMap", "settings", 10),
    ]


def test_a_finding_in_an_item_points_at_the_items_line() -> None:
    text = LIST.replace("spec: {weight: 2}", "spec: {wieght: 2}")

    result = load_text(text, filename="l.yaml")

    assert [str(f) for f in result.findings] == [
        "l.yaml:9:12: spec.wieght: unknown field 'wieght' (did you mean 'weight'?)"
    ]
    assert [o.model.metadata.name for o in result.objects] == ["settings"]


def test_an_item_defined_twice_is_refused_at_the_later_item() -> None:
    text = LIST + LIST.split("items:\n")[1]

    result = load_text(text, filename="l.yaml")

    assert [str(f) for f in result.findings] == [
        "l.yaml:17:13: metadata.name: Queue from-list is defined twice (first at l.yaml:8)",
        "l.yaml:21:22: metadata.name: ConfigMap web/settings is defined twice (first at l.yaml:12)",
    ]
    assert len(result.objects) == 2


def test_a_list_whose_items_are_not_a_list_says_so_at_them() -> None:
    result = load_text("apiVersion: v1\nkind: List\nitems: {a: b}\n", filename="l.yaml")

    assert [str(f) for f in result.findings] == [
        "l.yaml:3:1: items: a List holds its objects in items, a list; got a mapping"
    ]


def test_fedctl_get_json_output_applies_back(tmp_path: Path) -> None:
    """`fedctl get pp -A -o json > f.json`, then `fedctl apply -f f.json`."""
    loaded = load_paths([EXAMPLES])
    wires = [o.model.to_wire() for o in loaded.objects]
    (tmp_path / "f.json").write_text(render.dump(wires, "json"))
    (tmp_path / "one.json").write_text(render.dump(wires[0], "json"))
    listed = {"apiVersion": "fedctl.io/v1alpha1", "kind": "QueueList", "items": wires[:2]}
    (tmp_path / "api.json").write_text(render.dump(listed, "json"))

    for name, count in (("f.json", len(wires)), ("one.json", 1), ("api.json", 2)):
        result = load_paths([tmp_path / name])

        assert result.errors == [], name
        assert [o.model for o in result.objects] == [o.model for o in loaded.objects][:count]
