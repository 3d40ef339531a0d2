"""Entry point of `fedctl`: global options, logging, and dispatch to command groups.

Every command module exposes `register(subparsers)` which adds its parser and sets
`func` to a coroutine or plain function taking the parsed namespace and returning an exit
code. Errors from our own tree become one line on stderr and exit status 1 (or the
command's `error_exit`), never a traceback (unless `--log-level debug`); bad input
(`errors.Invalid`) lists its findings, `FILE:LINE:COL: field: problem`, one a line before
it.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.metadata
import inspect
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

from federation import __version__, errors
from federation.registry.store import WATCH_RECONNECTING

__all__ = ["build_parser", "main"]

# Command groups inside federation, by module; each has register(subparsers).
_COMMAND_MODULES = (
    "federation.cli.registry_cmd",
    "federation.cli.policy_cmd",
    "federation.cli.plan_cmd",
    "federation.cli.objects_cmd",
    "federation.cli.controller_cmd",
    "federation.cli.up_cmd",
    "federation.cli.cluster_cmd",
    "federation.cli.drill_cmd",
    "federation.cli.rebalance_cmd",
    "federation.cli.cost_cmd",
)

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": record.created,
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry)


class _Repeats(logging.Filter):
    """One warning per `every` seconds that carries `mark`, saying how many were held back.

    A full registry refuses every write, and each loop logs each key's refusal at each
    retry: about 3,400 lines in the minute it took to free space at 1,000 Jobs, all with
    the same cause and the same remedy."""

    def __init__(self, mark: str, *, every: float = 30.0) -> None:
        super().__init__()
        self.mark, self.every = mark, every
        self._last = float("-inf")
        self._held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        text = record.getMessage()
        if self.mark not in text:
            return True
        if record.created - self._last < self.every:
            self._held += 1
            return False
        if self._held:
            record.msg, record.args = f"{text} (and {self._held} more like it before)", ()
        self._last, self._held = record.created, 0
        return True


def configure_logging(level: str, *, json_logs: bool) -> None:
    """Logs go to stderr so command output on stdout stays machine-readable."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_Repeats(errors.RegistryFull.MARK))
    handler.addFilter(_Repeats(WATCH_RECONNECTING, every=10.0))
    if json_logs:
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


_VALUED_GLOBALS = {"--etcd", "--log-level"}


def _command_in(argv: Sequence[str]) -> str | None:
    """The command word of `argv`, skipping global options and their values."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _VALUED_GLOBALS:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


class _Parser(argparse.ArgumentParser):
    """A command's parser that takes its options between its positionals, as kubectl
    does: `fedctl get deploy -n web storefront` was refused ("unrecognized arguments:
    storefront"), since a plain parser fills an optional positional before the options.

    A parser with command groups under it (`cluster`, `drill`) parses as before: the
    intermixed parse cannot take them, and their own commands' parsers are of this class.
    So does `--help`, whose `%(default)s` the intermixed parse hides while it runs.
    """

    _parsing = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        grouped = any(
            action.nargs in (argparse.PARSER, argparse.REMAINDER) for action in self._actions
        )
        asks_help = any(arg in ("-h", "--help") for arg in args or ())
        if self._parsing or grouped or asks_help:  # help: the intermixed parse hides defaults
            return super().parse_known_args(args, namespace)
        self._parsing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._parsing = False


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fedctl",
        description="Multi-cluster federation for heterogeneous fleets.",
    )
    parser.add_argument("--version", action="version", version=f"fedctl {__version__}")
    parser.add_argument(
        "--etcd",
        default=os.environ.get("FEDCTL_ETCD", "http://127.0.0.1:2379"),
        help="etcd endpoint(s), comma-separated (env FEDCTL_ETCD; default %(default)s)",
    )
    parser.add_argument(
        "--log-level",
        default=os.environ.get("FEDCTL_LOG_LEVEL", "warning"),
        choices=["debug", "info", "warning", "error"],
        help="log verbosity (env FEDCTL_LOG_LEVEL; default %(default)s)",
    )
    parser.add_argument(
        "--log-json",
        action="store_true",
        default=os.environ.get("FEDCTL_LOG_JSON", "").lower() in ("1", "true", "yes"),
        help="write logs as JSON lines (env FEDCTL_LOG_JSON)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    wanted = _command_in(sys.argv[1:] if argv is None else argv)
    for entry in importlib.metadata.entry_points(group="fedctl.commands"):
        if wanted != entry.name:
            # Plugin command groups (the simulator) are imported only when used, so every
            # other command starts fast; `fedctl NAME --help` shows their full help.
            sub.add_parser(entry.name, help=f"{entry.name} commands (fedctl {entry.name} --help)")
            continue
        try:
            entry.load()(sub)
        except (ImportError, AttributeError) as exc:
            logging.getLogger(__name__).debug("command group %s unavailable: %s", entry.name, exc)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    configure_logging(args.log_level, json_logs=args.log_json)
    func: Callable[[argparse.Namespace], Any] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        result = func(args)
        if inspect.isawaitable(result):
            result = asyncio.run(_run(result))
        return int(result or 0)
    except errors.FedctlError as exc:
        if args.log_level == "debug":
            raise
        _print_error(exc)
        # A command whose exit status 1 means something else (`diff`: differences found)
        # sets its own for an error.
        return int(getattr(args, "error_exit", EXIT_ERROR))
    except KeyboardInterrupt:
        return 130
    except Terminated:
        return 143
    except BrokenPipeError:
        # `fedctl get workloads | head`: the reader left; say nothing more, like coreutils.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_ERROR


def _print_error(exc: errors.FedctlError) -> None:
    """The findings of bad input first, one a line (each names its file, line and field,
    so an editor can jump there), then the error itself as the last line. A finding the
    message already says (`Invalid(text)` alone, or findings joined into it) is not
    repeated."""
    message = str(exc)
    findings = exc.findings if isinstance(exc, errors.Invalid) else []
    for finding in findings:
        if finding not in message:
            print(finding, file=sys.stderr)
    print(f"fedctl: {message}", file=sys.stderr)


class Terminated(Exception):
    """SIGTERM arrived: the command was cancelled, its cleanup ran (exit 143)."""


async def _run(awaitable: Any) -> Any:
    """Run a command; SIGTERM cancels it as Ctrl-C does, so its `finally` blocks run.

    Why: a drill killed with SIGTERM (a CI job cancelled, `timeout`) skipped its heal and
    left its member broken, as only SIGINT unwound the command."""
    task = asyncio.ensure_future(awaitable)
    loop = asyncio.get_running_loop()
    terminated = False

    def terminate() -> None:
        nonlocal terminated
        terminated = True
        task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, terminate)
    except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
        return await task
    try:
        return await task
    except asyncio.CancelledError:
        if terminated:
            raise Terminated from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
