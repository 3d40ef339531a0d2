"""`fedctl plan`: what-if placement of workload YAML under policy YAML, writing nothing.

Fed by files (`-f`, repeatable: workloads, policies, queues, quotas) and a fleet: a
simulator profile (`--clusters PROFILE`) or the live controller (`--live`: the files are
sent to the API's plan route, which plans them against the controller's registry, counting
the capacity, queue and quota usage of the workloads admitted there). Feeds
stdout: the clusters that pass with their score breakdown, those the filters turn down
counted by filter (`-v`: each with its reason), then the division, the chip and the cost;
`-o json` for scripts, with every verdict. Offline, the files' workloads are planned in
file order, each counting what the ones before it take, as the controller admits them (a
live plan counts what the controller has admitted instead). Live, a policy in the files
re-plans every stored workload it claims: the files' workloads are shown, the others
summed up in one line (`--all-workloads` shows them too). Exit 0 when every workload
could be placed, 3 when some would stay pending, 1 on bad input. A policy in the files
that selects nothing, or selects a workload another policy claims, is noted on stderr
(`note:`), with the rule that decides. The warnings a fleet decides (an affinity no
member matches, a spread the members cannot form, a member not joined) are judged against
the fleet planned on: the profile, or the controller's members as `fedctl apply` judges
them, so a policy does not look fine in one mode only. This is what an engineer runs
while editing policy YAML.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from federation import errors

if TYPE_CHECKING:
    from policies.loading import LoadResult

__all__ = ["register"]

EXIT_OK, EXIT_PENDING = 0, 3
NO_WORKLOAD = "no workload with pods in the given files (Deployment, Job, ...)"
"""As the offline plan says it (`scheduler.plan.plan_files`)."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `plan` to the `fedctl` parser."""
    parser = subparsers.add_parser(
        "plan",
        help="show where workloads would be placed, and why (writes nothing)",
        description="Run the scheduler's filters, scores and replica division for each"
        " workload in the files against a fleet, in file order, each counting what the ones"
        " before it take, and print the clusters that pass (the others counted by filter;"
        " -v lists each), the division, the chip and the estimated hourly cost.",
    )
    parser.add_argument(
        "-f",
        "--filename",
        dest="paths",
        action="extend",
        nargs="+",
        required=True,
        metavar="FILE|DIR",
        help="workload, policy, queue or quota YAML; repeatable",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--clusters", metavar="PROFILE", help="simulator profile YAML (offline)")
    where.add_argument("--live", action="store_true", help="plan against the running controller")
    parser.add_argument("-o", "--output", choices=["text", "json"], default="text")
    parser.add_argument(
        "-v",
        "--all-clusters",
        action="store_true",
        help="list every cluster's verdict, not only the clusters that pass (text output;"
        " -o json always holds every verdict)",
    )
    parser.add_argument(
        "--all-workloads",
        action="store_true",
        help="with --live: also show each stored workload the files' policies or queues"
        " re-plan (by default only the files' own workloads are shown, the others counted"
        " in one line)",
    )
    parser.add_argument(
        "--server",
        default=os.environ.get("FEDCTL_SERVER", "http://127.0.0.1:8080"),
        help="controller API URL for --live (env FEDCTL_SERVER; default %(default)s)",
    )
    parser.add_argument("--token", default=None, help="bearer token (env FEDCTL_TOKEN)")
    parser.set_defaults(func=_plan)


def _plan(args: argparse.Namespace) -> int | Awaitable[int]:
    from federation.scheduler import plan

    if args.live:
        loaded, text, filename = _live_body(args.paths)
        return _plan_live(args, loaded, text=text, filename=filename)
    from federation import settings

    # The controller's settings where it reads them (score weights, currency, ...).
    scheduler = settings.from_env().scheduler
    from federation.propagation import overrides

    planned = plan.plan_files(
        args.paths,
        profile=args.clusters,
        settings=scheduler,
        warn=_warn,
        checks=overrides.container_findings,
    )
    if args.output == "json":
        doc = [p.plan.to_json(p.policy) for p in planned]
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        blocks = (plan.render(p, every=args.all_clusters) for p in planned)
        sys.stdout.write("\n\n".join(blocks) + "\n")
    return EXIT_OK if all(p.plan.placement for p in planned) else EXIT_PENDING


def _warn(line: str) -> None:
    print(line, file=sys.stderr)


def _live_body(paths: list[str]) -> tuple[LoadResult, str, str]:
    """The files `paths` name, loaded, then joined into one body for the plan route, and
    its name.

    Each file is checked first, under its own name, by the loader `fedctl validate` uses:
    every finding then points at its real file and line, which in the joined body it
    would not, and nothing is sent while one is wrong. Its warnings wait to be judged
    against the live fleet (`_plan_live`).
    """
    from policies import loading

    if "-" in paths:
        raise errors.Invalid("plan --live reads files, not standard input: save it to a file")
    loaded = loading.load_paths(paths)
    if not loaded.ok:
        raise errors.Invalid(
            f"{len(loaded.errors)} error(s) in the input; nothing was planned",
            findings=[str(f) for f in loaded.errors],
        )
    text = "\n---\n".join(Path(f).read_text(encoding="utf-8-sig") for f in loaded.files)
    name = loaded.files[0] if len(loaded.files) == 1 else f"<{len(loaded.files)} files joined>"
    return loaded, text, name


async def _plan_live(
    args: argparse.Namespace, loaded: LoadResult, *, text: str, filename: str
) -> int:
    """Print the warnings of the files `loaded`, judged against the controller's fleet as
    `fedctl apply` judges them (an offline plan judges them against its profile: a policy
    no live member can satisfy must not look fine only live); POST them, joined in
    `text`, to the controller's plan route; print the `after` plan of each workload it
    planned, after how it stands now when the files change it (what a raised limit admits,
    where an edited policy moves a workload)."""
    from federation.cli import client, objects_cmd
    from federation.scheduler import plan as planning

    async with client.ApiClient(args.server, token=args.token) as api:
        for finding in (await objects_cmd.against_server(api, loaded)).warnings:
            _warn(str(finding))
        try:
            answer = await api.request(
                "POST",
                "/apis/fedctl.io/v1alpha1/plan",
                text=text,
                content_type="application/yaml",
                params={"filename": filename},
            )
        except client.ApiError as exc:
            if exc.code == 403:  # a document the token may not write: say which, and where
                raise objects_cmd.refused_at(exc, loaded.objects) from exc
            raise
    plans = [entry["after"] for entry in answer.get("plans", [])]
    notes = answer.get("notes") or []
    for note in notes:
        _warn(f"note: {note}")
    if not plans and not notes:
        # The controller plans the files' workloads and those their policies claim: none.
        raise errors.Invalid(NO_WORKLOAD)
    if args.output == "json":
        json.dump(plans, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif plans:
        held = answer.get("admitted", 0)
        sys.stdout.write(
            f"live: counting what {held} admitted workload(s) hold (capacity, queues, quotas)\n\n"
        )
        entries = answer.get("plans", [])
        own = _workloads_of(loaded)
        shown = [e for e in entries if args.all_workloads or not own or _ref(e) in own]
        blocks = [
            _changed(entry.get("before"), entry["after"])
            + planning.render_wire(entry["after"], every=args.all_clusters)
            for entry in shown
        ]
        others = _others([e for e in entries if e not in shown])
        sys.stdout.write("\n\n".join(blocks) + "\n" + (f"\n{others}\n" if others else ""))
    return EXIT_OK if all(p.get("placement") for p in plans) else EXIT_PENDING


def _workloads_of(loaded: LoadResult) -> set[str]:
    """The workloads in the files, as a plan names them (`ns/Kind.group/name`)."""
    from federation.registry import objects
    from policies.models.workload import Workload

    return {
        str(objects.workload_ref(o.model)) for o in loaded.objects if isinstance(o.model, Workload)
    }


def _ref(entry: dict[str, Any]) -> str:
    return str(entry["after"].get("workload", ""))


def _others(entries: list[dict[str, Any]]) -> str:
    """One line for the stored workloads a live plan re-planned but does not show: a
    policy file re-plans every workload it claims (520 of them printed 79,000 lines when
    the two of the files were asked about), and how many would move or wait is what a
    policy edit needs to know of them."""
    if not entries:
        return ""
    moved = sum(
        1 for e in entries if e.get("before") and _outcome(e["before"]) != _outcome(e["after"])
    )
    waiting = sum(1 for e in entries if not e["after"].get("placement"))
    return (
        f"also re-planned: {len(entries)} other stored workload(s) the files' policies or"
        f" queues claim ({moved} would change placement, {waiting} would wait);"
        " --all-workloads shows them"
    )


def _outcome(plan: dict[str, Any]) -> str:
    placement = plan.get("placement") or {}
    if placement:
        return "placed on " + ", ".join(f"{n}:{r}" for n, r in sorted(placement.items()))
    return f"waits: {plan.get('reason') or 'not placed'}"


def _changed(before: dict[str, Any] | None, after: dict[str, Any]) -> str:
    """`now:` and `with these files:` lines when the files change the workload's outcome:
    a plan of a raised limit showed only the after, so it did not say the job waits now."""
    if before is None or _outcome(before) == _outcome(after):
        return ""
    return f"now:              {_outcome(before)}\nwith these files: {_outcome(after)}\n"
