"""`fedctl rebalance [--workload NS/NAME | --all] [--dry-run]`: fail-back on request.

Fed by the command line and the registry (etcd, as `fedctl drill` reads and writes it);
feeds the registry with amended Bindings (`failover.rebalance.apply`: compare-and-swap on
the revision each decision was made on), which the propagator renders - new placement
first, the old copy kept as a graceful eviction task until the new one is ready - and
stdout with one line per workload: moved (or would move) from -> to and why, or why not.

Why straight to the registry like `fedctl drill`: a move is a Binding amendment of the kind
failover itself makes, judged by the same pure rules, and the controller's API has no
Binding writes. A Binding the scheduler or failover changed after the decision is never
overwritten: it is read and decided again, up to `ATTEMPTS` times with backoff (the
controller rewrites Bindings routinely, and one lost race should not fail the command);
one still changing after that is reported as changed and left alone.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from federation import errors
from federation import settings as settings_mod
from federation.cli import registry_cmd

if TYPE_CHECKING:
    from federation.failover import rebalance

__all__ = ["register"]

EXIT_OK, EXIT_ERROR = 0, 1
ATTEMPTS = 4
"""Decisions per workload whose Binding keeps changing under it."""


def register(sub: Any) -> None:
    cmd = sub.add_parser(
        "rebalance",
        help="move work back to the clusters its policy prefers now (gracefully)",
        description="After a failover, work runs on a less preferred cluster until someone"
        " moves it back. This plans every placed workload afresh and moves those whose"
        " policy now prefers other clusters (an earlier affinity group, a lower cost, a"
        " clearly higher score); the old copy runs until the new one is ready. Batch jobs"
        " are never moved.",
    )
    which = cmd.add_mutually_exclusive_group(required=True)
    which.add_argument("--workload", action="append", metavar="NS/NAME", help="repeatable")
    which.add_argument("--all", action="store_true", help="every placed workload")
    cmd.add_argument("--dry-run", action="store_true", help="print what would move; write nothing")
    cmd.add_argument("-o", "--output", choices=["text", "json"], default="text")
    registry_cmd.etcd_option(cmd)
    cmd.set_defaults(func=_rebalance)


def _matches(ref: str, wanted: list[str]) -> bool:
    """`ns/name` or the full `ns/Kind.group/name`."""
    ns, _, rest = ref.partition("/")
    name = rest.rpartition("/")[2]
    return ref in wanted or f"{ns}/{name}" in wanted


async def _rebalance(args: argparse.Namespace) -> int:
    import tenacity

    from federation import clock
    from federation.failover import rebalance
    from federation.registry import codec
    from federation.runtime import whatif
    from policies.models.binding import Binding

    for wanted in args.workload or ():
        if "/" not in wanted:  # a bare name matched nothing, and said only "not found"
            raise errors.Invalid(
                f"--workload {wanted!r}: give it as NS/NAME (or NS/Kind.group/NAME), as"
                " `fedctl get workloads -A` lists them"
            )
    store = await registry_cmd.connect(args)
    scheduler = settings_mod.from_env().scheduler  # as the controller reads them
    decided: dict[str, rebalance.Verdict] = {}  # the latest decision per workload
    moved: list[str] = []
    remaining: set[str] | None = None  # after the first round: the refs that changed

    async def one_round() -> list[str]:
        """Decide (and unless a dry run, write) every wanted workload; the refs whose
        Binding changed under the decision."""
        found = whatif.candidates(await whatif.load(store), settings=scheduler)
        if remaining is not None:
            found = [c for c in found if _ref(c) in remaining]
        elif args.workload:
            found = [c for c in found if _matches(_ref(c), args.workload)]
            missing = [w for w in args.workload if not any(_matches(_ref(c), [w]) for c in found)]
            if missing:
                raise errors.NotFound(f"placed workload {', '.join(missing)}")
        verdicts = [rebalance.decide(c) for c in found]
        decided.update((v.ref, v) for v in verdicts)
        if args.dry_run:
            return []
        typed = codec.TypedStore(store, codec.Codec(Binding))
        outcome = await rebalance.apply(typed, verdicts, now=clock.real.now())
        moved.extend(outcome.moved)
        return outcome.changed

    async def rounds() -> list[str]:
        nonlocal remaining
        changed = await one_round()
        remaining = set(changed)
        return changed

    retrying = tenacity.AsyncRetrying(
        retry=tenacity.retry_if_result(bool),
        wait=tenacity.wait_exponential(multiplier=0.1, max=1.0),
        stop=tenacity.stop_after_attempt(ATTEMPTS),
        retry_error_callback=lambda state: state.outcome.result() if state.outcome else [],
    )
    try:
        changed: list[str] = await retrying(rounds)
    finally:
        await store.close()
    verdicts = list(decided.values())
    _print(args, verdicts, rebalance.Outcome(moved=moved, changed=list(changed)))
    return EXIT_ERROR if changed else EXIT_OK


def _ref(candidate: rebalance.Candidate) -> str:
    from federation.registry import keys

    return str(keys.parse_workload_key(candidate.key))


def _print(
    args: argparse.Namespace, verdicts: list[rebalance.Verdict], outcome: rebalance.Outcome
) -> None:
    changed = set(outcome.changed)
    if args.output == "json":
        doc = [
            {
                "workload": v.ref,
                "move": v.move,
                "result": _result(v, args.dry_run, changed),
                "why": v.why,
                "from": v.candidate.current.describe(),
                "to": v.candidate.preferred.describe() if v.candidate.preferred else None,
            }
            for v in verdicts
        ]
        print(json.dumps(doc, indent=2))
        return
    for v in verdicts:
        result = _result(v, args.dry_run, changed)
        if v.move:
            before = v.candidate.current.describe()
            after = v.candidate.preferred.describe() if v.candidate.preferred else "-"
            print(f"{result:14} {v.ref}: {before} -> {after}; {v.why}")
        else:
            print(f"{result:14} {v.ref}: {v.why}")
    moving = sum(v.move for v in verdicts)
    verb = "would move" if args.dry_run else "moved"
    print(f"{moving - len(changed)} {verb}, {len(verdicts) - moving} stay, {len(changed)} changed")


def _result(verdict: rebalance.Verdict, dry_run: bool, changed: set[str]) -> str:
    if not verdict.move:
        return "stays"
    if dry_run:
        return "would move"
    return "changed, skipped" if verdict.ref in changed else "moved"
