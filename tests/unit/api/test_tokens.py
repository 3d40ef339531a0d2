"""Mistakes in the tokens file stop the start-up at the file, line and field they are at.

Each was taken silently and changed who may do what: a string where a list of namespaces
goes gave one-letter namespaces, a misspelt `grups:` a user without groups, a token
listed twice the rights of whichever entry came last.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from federation import errors
from federation.api import auth

GOOD = """\
tokens:
  - {token: admintok, user: root, groups: [admin]}
  - {token: mltok, user: alice, groups: [dept-ml]}
namespaces:
  dept-ml: [ml-prod, ml-research]
"""


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        pytest.param(GOOD.replace("[ml-prod, ml-research]", "ml-prod"),
                     "tokens.yaml:5:3: namespaces.dept-ml: expected a list of namespaces,"
                     " as [ml-prod]",
                     id="a namespace given as a string, which made one-letter namespaces"),
        pytest.param(GOOD.replace("mltok, user: alice, groups", "mltok, user: alice, grups"),
                     "tokens.yaml:3:33: tokens[1].grups: unknown field; known fields: groups,"
                     " token, user",
                     id="a misspelt key, which gave a user no groups"),
        pytest.param(GOOD.replace("{token: mltok", "{token: admintok"),
                     "tokens.yaml:3:5: tokens[1]: a token listed before again: each token must"
                     " stand for one user and its groups; remove one of the two entries",
                     id="a token listed twice, which took the last entry's rights"),
        pytest.param(GOOD.replace("namespaces:", "namespace:"),
                     "tokens.yaml:4:1: namespace: unknown field; known fields: namespaces,"
                     " tokens",
                     id="a misspelt top-level key, which owned nothing"),
        pytest.param("tokens:\n  - {user: x}\n",
                     "tokens.yaml:2:5: tokens[0]: every token needs a non-empty token and user",
                     id="an entry without a token"),
    ],
)  # fmt: skip
def test_a_mistake_in_the_tokens_file_is_refused_where_it_is(
    tmp_path: Path, text: str, refused: str
) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_text(text)
    with pytest.raises(errors.Invalid) as caught:
        auth.TokenTable.from_file(path)
    assert str(caught.value) == f"{tmp_path}/{refused}"
    assert "admintok" not in str(caught.value), "a token is never repeated"


def test_a_good_tokens_file_reads_as_written() -> None:
    table = auth.TokenTable.from_yaml(GOOD)
    alice = table.lookup("mltok")
    assert alice is not None and alice.groups == {"dept-ml"}
    assert table.namespaces_of(alice.groups) == {"ml-prod", "ml-research"}


def test_a_csv_token_listed_twice_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text("# who\nt1,alice,admin\n\nt1,bob,tenant:web\n")
    with pytest.raises(errors.Invalid, match=r"tokens\.csv:4: a token listed before again"):
        auth.TokenTable.from_file(path)
