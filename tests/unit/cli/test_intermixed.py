"""Options between a command's positionals, as kubectl takes them."""

from __future__ import annotations

import pytest

from federation.cli import main


@pytest.mark.parametrize("verb", ["get", "describe", "delete"])
def test_a_name_after_the_namespace_option_is_the_name(verb: str) -> None:
    """`fedctl get deploy -n web storefront` said "unrecognized arguments: storefront"."""
    args = main.build_parser().parse_args([verb, "deploy", "-n", "web", "storefront"])
    named = ["storefront"] if verb == "delete" else "storefront"  # delete takes several
    assert (args.kind, args.name, args.namespace) == ("deploy", named, "web")


def test_delete_takes_several_names_around_its_options() -> None:
    """`kubectl delete job a -n web b` deletes a and b."""
    args = main.build_parser().parse_args(["delete", "job", "a", "-n", "web", "b"])
    assert (args.kind, args.name, args.namespace) == ("job", ["a", "b"], "web")


def test_commands_with_verbs_under_them_parse_as_before() -> None:
    args = main.build_parser().parse_args(["registry", "dump", "/fedctl/leader", "-o", "json"])
    assert (args.prefix, args.output) == ("/fedctl/leader", "json")
