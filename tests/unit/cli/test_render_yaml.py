"""`fedctl get -o yaml`: text kubectl, PyYAML and fedctl all read back as the same object,
so a backup taken with it can be handed to any of them."""

from __future__ import annotations

import pytest
import yaml
from ruamel.yaml import YAML

from federation.cli import render

YAML_11_WORDS = ["yes", "Yes", "NO", "on", "Off", "y", "N", "1:20", "-1:30:00", "190:20:30.15"]


@pytest.mark.parametrize("word", YAML_11_WORDS)
def test_yaml_output_quotes_what_yaml_1_1_reads_as_another_type(word: str) -> None:
    """`fedctl get cm flags -o yaml` wrote `debug: yes`: kubectl and PyYAML (YAML 1.1)
    read it back as true, and a ConfigMap's value turned into a bool the API server
    refuses. kubectl quotes such strings; so does fedctl now, keys as well as values."""
    doc = {"data": {"debug": word, word: "key"}, "items": [word]}
    text = render.dump(doc, "yaml")
    assert f'"{word}"' in text
    assert yaml.safe_load(text) == doc
    assert list(YAML(typ="safe").load_all(render.dump([doc, doc], "yaml"))) == [doc, doc]


def test_yaml_output_leaves_plain_what_reads_the_same_everywhere() -> None:
    doc = {"name": "storefront", "replicas": 3, "suspend": True, "tier": "yesterday"}
    text = render.dump(doc, "yaml")
    assert text == "name: storefront\nreplicas: 3\nsuspend: true\ntier: yesterday"
