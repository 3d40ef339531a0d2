"""Offline policy commands: `fedctl validate` and `fedctl schema`.

Role: lets a platform engineer check policy and workload YAML without a controller, and
gives editors a JSON Schema (yaml-language-server) for completion and checking as they
type. Fed by files on disk through `policies.loading` and the kind table in
`policies.models.kinds`; feeds stdout (findings, a summary, or a schema) and the exit
code: 0 valid (warnings allowed), 1 invalid, 2 usage.

Why the imports of `policies` happen inside the commands: every `fedctl` invocation builds
the whole parser, and model classes take a noticeable fraction of a second to build; only
the commands that need them should pay for them.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["register"]

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `validate` and `schema` to the `fedctl` parser."""
    validate = subparsers.add_parser(
        "validate",
        help="check policy and workload YAML files offline",
        description="Validate files or directories of multi-document YAML. Findings read"
        " FILE:LINE:COL: path.to.field: message. Exit 0 when valid (warnings allowed),"
        " 1 when any document is invalid, 2 on a usage error.",
    )
    validate.add_argument(
        "-f",
        "--filename",
        dest="paths",
        action="extend",
        nargs="+",
        required=True,
        metavar="FILE|DIR",
        help="file or directory (searched recursively for *.yaml, *.yml); repeatable",
    )
    validate.add_argument(
        "-o",
        "--output",
        choices=["text", "json"],
        default="text",
        help="text (default) or json for machines",
    )
    validate.set_defaults(func=_validate)

    schema = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of fedctl's documents (for editors)",
        description="Print a JSON Schema for one KIND (e.g. PropagationPolicy, Queue, or"
        " fedctl.io/v1alpha1/PropagationPolicy), or for every kind at once, discriminated by"
        " apiVersion and kind. Point yaml-language-server at it with a"
        " `# yaml-language-server: $schema=FILE` comment or the yaml.schemas setting.",
    )
    schema.add_argument("kind", nargs="?", metavar="KIND", help="one kind (default: all)")
    schema.add_argument("-o", "--output", metavar="FILE", help="write to FILE, not stdout")
    schema.set_defaults(func=_schema)


def _validate(args: argparse.Namespace) -> int:
    from federation.propagation import overrides
    from federation.scheduler import claims
    from policies.loading import load_paths

    result = load_paths(args.paths)
    result = result.with_findings(overrides.container_findings(result))
    result = result.with_findings(claims.chip_findings(result))
    result = result.with_findings(claims.division_findings(result))
    if args.output == "json":
        print(json.dumps(_report(result), indent=2))
    else:
        for finding in result.findings:
            print(finding)
        print(_summary(result))
    return EXIT_OK if result.ok else EXIT_INVALID


def _report(result: Any) -> dict[str, Any]:
    return {
        "valid": result.ok,
        "files": result.files,
        "errors": len(result.errors),
        "warnings": len(result.warnings),
        "objects": [
            {
                "file": obj.file,
                "line": obj.line,
                "docIndex": obj.doc_index,
                "apiVersion": obj.model.api_version,
                "kind": obj.model.kind,
                "namespace": obj.model.metadata.namespace,
                "name": obj.model.metadata.name,
            }
            for obj in result.objects
        ],
        "findings": [finding.to_dict() for finding in result.findings],
    }


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _summary(result: Any) -> str:
    files = _plural(len(result.files), "file")
    objects = _plural(len(result.objects), "valid object")
    warnings = _plural(len(result.warnings), "warning")
    if result.ok:
        return f"valid: {objects} in {files}, {warnings}"
    errors = _plural(len(result.errors), "error")
    return f"invalid: {errors}, {warnings}; {objects} in {files}"


def _schema(args: argparse.Namespace) -> int:
    from policies.models import kinds

    if args.kind:
        found = kinds.lookup(args.kind)
        if found is None:
            names = sorted({k for _, k in kinds.POLICY_KINDS})
            print(
                f"fedctl schema: unknown kind {args.kind!r}; known kinds: {', '.join(names)}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        document = kinds.json_schema(*found)
    else:
        document = kinds.json_schema()
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as out:
                out.write(text)
        except OSError as err:
            print(f"fedctl schema: cannot write {args.output}: {err.strerror}", file=sys.stderr)
            return EXIT_INVALID
    else:
        sys.stdout.write(text)
    return EXIT_OK
