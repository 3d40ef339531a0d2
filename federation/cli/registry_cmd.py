"""`fedctl registry ...`: look straight into etcd, for operators and for the demo.

This is the one command group that bypasses the REST API on purpose: when the controller is
down or a value is corrupt, an operator still needs to see what the registry holds.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from federation.registry import keys
from federation.settings import EtcdSettings

if TYPE_CHECKING:
    from federation.registry.etcd import EtcdStore

__all__ = ["connect", "register"]


def register(sub: Any) -> None:
    registry = sub.add_parser("registry", help="inspect the etcd registry directly")
    verbs = registry.add_subparsers(dest="verb", metavar="VERB", required=True)
    dump = verbs.add_parser("dump", help="print every key under PREFIX with its value")
    dump.add_argument("prefix", nargs="?", default=keys.ROOT + "/", help="default %(default)s")
    dump.add_argument("-o", "--output", choices=["text", "json"], default="text")
    dump.set_defaults(func=_dump)


def endpoints(args: argparse.Namespace) -> EtcdSettings:
    """Settings for the etcd named by the global `--etcd` option."""
    return EtcdSettings(endpoints=tuple(e.strip() for e in args.etcd.split(",") if e.strip()))


async def connect(args: argparse.Namespace) -> EtcdStore:
    """A connected store for the commands that write the registry directly (drill,
    rebalance): the global `--etcd` endpoints, the rest (TLS, timeouts) from FEDCTL_ETCD__*."""
    from federation import settings as settings_mod
    from federation.registry.etcd import EtcdStore  # grpc is slow to import; only when used

    settings = settings_mod.from_env(etcd={"endpoints": list(endpoints(args).endpoints)})
    store = EtcdStore(settings.etcd)
    await store.connect()
    return store


def _decode(value: bytes) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value.decode(errors="replace")


async def _dump(args: argparse.Namespace) -> int:
    from federation.registry.etcd import EtcdStore  # grpc is slow to import; only when used

    store = EtcdStore(endpoints(args))
    try:
        await store.connect()
        result = await store.list(args.prefix)
    finally:
        await store.close()
    if args.output == "json":
        doc = {
            "revision": result.revision,
            "items": [
                {"key": kv.key, "modRevision": kv.mod_revision, "value": _decode(kv.value)}
                for kv in result.items
            ],
        }
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 0
    print(f"# {len(result.items)} keys under {args.prefix} at revision {result.revision}")
    for kv in result.items:
        print(f"{kv.key}  (revision {kv.mod_revision})")
        value = _decode(kv.value)
        text = json.dumps(value, indent=2) if not isinstance(value, str) else value
        print("  " + text.replace("\n", "\n  "))
    return 0
