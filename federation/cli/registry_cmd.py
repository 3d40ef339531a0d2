"""`fedctl registry ...`: look straight into etcd, for operators and for the demo.

This is the one command group that bypasses the REST API on purpose: when the controller is
down or a value is corrupt, an operator still needs to see what the registry holds.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from federation import errors
from federation.registry import keys
from federation.settings import EtcdSettings

if TYPE_CHECKING:
    from federation.registry.etcd import EtcdStore

__all__ = ["connect", "etcd_option", "register"]


def register(sub: Any) -> None:
    registry = sub.add_parser("registry", help="inspect the etcd registry directly")
    verbs = registry.add_subparsers(dest="verb", metavar="VERB", required=True)
    dump = verbs.add_parser("dump", help="print every key under PREFIX with its value")
    dump.add_argument("prefix", nargs="?", default=keys.ROOT + "/", help="default %(default)s")
    dump.add_argument("-o", "--output", choices=["text", "json"], default="text")
    etcd_option(dump)
    dump.set_defaults(func=_dump)


def etcd_option(parser: argparse.ArgumentParser) -> None:
    """`--etcd URL` after the command too, for each command that reads the registry
    directly: the docs say to give them `--etcd URL`, and `fedctl drill list --etcd URL`
    is how that reads. Given here it overrides the global option (and FEDCTL_ETCD); not
    given, nothing is set, and the global one stands."""
    parser.add_argument(
        "--etcd",
        default=argparse.SUPPRESS,
        metavar="URL",
        help="etcd endpoint(s) of the registry, comma-separated (also before the command;"
        " env FEDCTL_ETCD; default http://127.0.0.1:2379)",
    )


def endpoints(args: argparse.Namespace) -> EtcdSettings:
    """Settings for the etcd named by the global `--etcd` option."""
    return EtcdSettings(endpoints=tuple(e.strip() for e in args.etcd.split(",") if e.strip()))


async def connect(args: argparse.Namespace) -> EtcdStore:
    """A connected store for the commands that use the registry directly (drill,
    rebalance, registry dump): the global `--etcd` endpoints, the rest (TLS, timeouts)
    from FEDCTL_ETCD__*."""
    from federation import settings as settings_mod
    from federation.registry.etcd import EtcdStore  # grpc is slow to import; only when used

    settings = settings_mod.from_env(etcd={"endpoints": list(endpoints(args).endpoints)})
    store = EtcdStore(settings.etcd)
    await _connect(store)
    return store


async def _connect(store: EtcdStore) -> None:
    """Connect, saying where the URL comes from when etcd does not answer: after `fedctl
    up` a user has FEDCTL_SERVER set, which these commands do not use, and met only
    "etcd at http://127.0.0.1:2379 did not answer". Only when nothing takes the
    connection: an etcd that takes it and stays silent is at the right address but hung,
    and the hint sent its user looking for another URL."""
    from federation.registry import etcd

    try:
        await store.connect()
    except etcd.Unresponsive:
        await store.close()
        raise
    except errors.Unavailable as exc:
        await store.close()
        raise errors.Unavailable(
            f"{exc}: this command reads the registry directly, not through the API;"
            " point --etcd or FEDCTL_ETCD at it (fedctl up prints its URL)",
            endpoint=exc.endpoint,
        ) from exc


def _decode(value: bytes) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value.decode(errors="replace")


async def _dump(args: argparse.Namespace) -> int:
    store = await connect(args)
    try:
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
