"""The libyaml path reads every input exactly as ruamel's own composer does.

`parse_documents` composes through libyaml's events when PyYAML has it and falls back to
ruamel for what that path does not take. Users must not be able to tell: the same data,
the same place for every field, the same findings, on the repository's own YAML and on
inputs chosen for the corners where two YAML readers differ.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from policies.loading import source

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted(
    p
    for p in ROOT.rglob("*.yaml")
    if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
)

CORNERS = {
    "YAML 1.2 scalars": "a: yes\nb: 0777\nc: 0o17\nd: 1_000\ne: ~\nf: .inf\ng: 12:30\nh: True\n",
    "quoted and tagged": "a: '3'\nb: \"true\"\nc: !!str 3\nd: !!int '4'\ne: !custom x\n",
    "anchors, aliases and a merge key": (
        "base: &b {cpu: 1, memory: 2Gi}\nuse: *b\nmerged:\n  <<: *b\n  cpu: 2\n"
    ),
    "block scalars": "a: |\n  line one\n  line two\nb: >-\n  folded\n  text\n",
    "nested block and flow": "a:\n  - b: [1, {c: d}]\n    e:\n    - f\n  - - g\n    - h\n",
    "several documents, empty ones between": "---\na: 1\n---\n---\nb: 2\n...\n---\n- c\n",
    "duplicate key": "a: 1\nb:\n  c: 2\n  c: 3\n",
    "a mapping as a key": "? {a: 1}\n: b\nc: d\n",
    "a version directive": "%YAML 1.1\n---\na: yes\nb: 0777\n",
    "a tag directive": "%TAG !e! tag:example.com,2000:\n---\na: !e!thing x\n",
    "an alias never defined": "a: *nowhere\n",
    "a syntax error after a good document": "a: 1\n---\nb: [c\n",
    "a tab for indentation": "a:\n\tb: 1\n",
    "a control character": "a: 1\nb: \x00\n",
    "comments everywhere": "# top\na: 1 # one\n# between\nb:\n  # inside\n  - x # item\n",
    "unicode and escapes": 'a: "caf\\u00e9 \\t tab"\nb: naïve\nc: "\\x41"\n',
    "an alias bomb": (
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n"
            for i in range(5)
        )
    ),
    "deep block nesting": "".join(" " * i + "a:\n" for i in range(500)),
    "empty input": "",
    "only a comment": "# nothing here\n",
}


def _both(text: str) -> tuple[object, object]:
    fast = source.parse_documents(text, filename="f.yaml")
    saved, source._LIBYAML = source._LIBYAML, None
    try:
        slow = source.parse_documents(text, filename="f.yaml")
    finally:
        source._LIBYAML = saved
    return fast, slow


def _same(text: str) -> None:
    (fast_docs, fast_findings), (slow_docs, slow_findings) = _both(text)
    assert fast_findings == slow_findings
    assert [(d.data, d.index, d.line, d.clean) for d in fast_docs] == [
        (d.data, d.index, d.line, d.clean) for d in slow_docs
    ]
    assert [d.source for d in fast_docs] == [d.source for d in slow_docs]


def test_libyaml_is_there_to_be_compared() -> None:
    """Without it both sides would be ruamel and the comparisons below would prove nothing;
    PyYAML's wheels carry libyaml on every platform CI runs on."""
    assert source._LIBYAML is not None


@pytest.mark.parametrize("text", list(CORNERS.values()), ids=list(CORNERS))
def test_corners_read_the_same(text: str) -> None:
    _same(text)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_the_repositorys_yaml_reads_the_same(path: Path) -> None:
    text = path.read_text()
    assert source._fast_compose_all(source._yaml(), text) is not None, "libyaml path not taken"
    _same(text)


def test_a_big_file_reads_the_same() -> None:
    """Many documents of one file, as `fedctl apply` of a sweep sends them."""
    job = (
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: sweep-{i:04d}\n"
        "  namespace: ml\n  labels: {{queue: q{q}}}\nspec:\n  template:\n    spec:\n"
        "      restartPolicy: Never\n      containers:\n      - name: main\n"
        "        image: registry.example.com/ml/sweep:{i}\n"
        "        resources:\n          requests: {{cpu: '{cpu}', memory: {mem}Gi}}\n"
    )
    text = "---\n".join(
        job.format(i=i, q=i % 3, cpu=1 + i % 4, mem=2 * (1 + i % 3)) for i in range(300)
    )
    assert source._fast_compose_all(source._yaml(), text) is not None
    _same(text)
