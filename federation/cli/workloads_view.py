"""`fedctl get workloads`, `fedctl describe workload` and `fedctl get works`: placement and
readiness per cluster.

Fed by the read-only workload views of the REST API (`federation.api.workloads`: template,
Binding, aggregated status, Works, recent events) and its Work list; feeds the terminal.
Called from `objects_cmd` for the workloads and works resources only. Why a view of its
own: the question a user asks of a workload is "where is it and is it ready there", which
no single stored object answers. `status` gives that answer as data, so `-o json` says
what the table says.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from federation import errors
from federation.cli import addressing, render
from federation.propagation.interpreter.base import timestamp
from federation.registry import events as event_log
from federation.registry import keys
from policies.models import workload as workload_model
from policies.models.binding import CLAIMED_BY, TargetCluster, hourly_total, known_cost
from policies.models.common import COMMON_KINDS
from policies.models.work import FINISHED_PHASES

__all__ = [
    "CLUSTERS_SHOWN",
    "COSTS",
    "PREFIX",
    "WORK_HEADERS",
    "address",
    "claimed_by",
    "describe",
    "documents",
    "is_kind_named",
    "kind_named",
    "labelled",
    "of_kind",
    "on_cluster",
    "pick",
    "placement_cell",
    "status",
    "table",
    "with_kind",
    "works_table",
]

PREFIX = "/apis/status.fedctl.io/v1alpha1"
COSTS = f"{PREFIX}/costs"
"""What placed work costs (`fedctl cost`, and the queue views' cost figures)."""
WORK_HEADERS = ["NAMESPACE", "NAME", "KIND", "CLUSTER", "APPLIED", "HEALTH", "READY", "AGE"]


SUSPENDED = "dispatching suspended"
"""What a Work or a member's share shows while its policy suspends dispatching there."""
_STILL_RUNNING = re.compile(r" \(still running on [^()]*\)$")
"""The suffix a waiting Binding's reason names its kept copies with; the cell shows them."""
_FEDERATION_ONLY = "- (no propagation policy selects it: kept in the federation only)"


def _per_cluster(status: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {row["cluster"]: row for row in (status or {}).get("clusters", [])}


def _readiness(row: dict[str, Any] | None) -> str:
    """One member's share as a cell. A member that is not Ready (`stale`) shows `?` for
    its ready count: its last report is no evidence that anything still runs there. One
    its policy suspends dispatching to says so: its copy does not follow the template."""
    if row is None:
        return "-"
    if row.get("suspended"):
        return f"{_readiness({**row, 'suspended': False})} ({SUSPENDED})"
    if row.get("error") and not row.get("applied") and row.get("phase") not in FINISHED_PHASES:
        return "error"  # a finished copy ran to the end as it was: its phase says more
    if row.get("stale"):
        shown = row.get("phase") or f"?/{row.get('replicas') or 0}"
        return f"{shown} (member not Ready)"
    if row.get("phase"):
        return str(row["phase"])
    return f"{row.get('readyReplicas') or 0}/{row.get('replicas') or 0}"


CLUSTERS_SHOWN = 3
"""Targets a `get workloads` row names before it counts the rest: a Namespace sent to
144 members made rows of 3,186 characters. `-o wide` and `describe` name every one."""


def placement_cell(item: dict[str, Any], *, cap: int | None = None) -> str:
    """`cluster ready/replicas` for each target, then the copies its needers' policies
    send elsewhere (propagateDeps), then the copies being left (a graceful eviction keeps
    them until the new placement is ready: shown apart, as READY leaves them out), or why
    the workload is not placed. With `cap`, past that many targets the first `cap` are
    named and the rest counted, with how many of all took their copy (`_beyond`)."""
    binding = item.get("binding")
    rows = _per_cluster(item.get("status"))
    needers = _needers(item.get("status"))
    if not binding and needers:
        copies = ", ".join(f"{name} {_readiness(row)}" for name, row in rows.items())
        return f"{copies or 'on no cluster yet'} ({needers})"
    if not binding and item.get("federationOnly"):
        return _FEDERATION_ONLY
    if not binding or not binding["spec"].get("clusters"):
        phase = (item.get("status") or {}).get("phase")
        if binding and phase in FINISHED_PHASES:
            # A job that finished on a member since unjoined: its Binding lost the member,
            # and the job is done, not waiting (an unjoin read as hundreds pending).
            return f"- ({phase} on a member that has left)"
        reason = ((binding or {}).get("status") or {}).get("reason") or "not scheduled yet"
        leaving = [f"{n} {_readiness(row)}" for n, row in rows.items() if row.get("leaving")]
        if leaving:  # a graceful eviction keeps it running there until it is placed again
            return f"Pending: {reason}; leaving " + ", ".join(leaving)
        return f"Pending: {reason}"
    cells = []
    targets = {target["name"] for target in binding["spec"]["clusters"]}
    for target in binding["spec"]["clusters"]:
        cells.append(f"{target['name']} {_readiness(rows.get(target['name']))}")
    if cap is not None and len(cells) > cap:
        cells = [*cells[:cap], _beyond(binding["spec"]["clusters"], rows, shown=cap)]
    placed = ", ".join(cells)
    extra = [
        f"{name} {_readiness(row)}"
        for name, row in rows.items()
        if name not in targets and not row.get("leaving")
    ]
    if extra:
        placed += f"; {needers}: " + ", ".join(extra)
    leaving = [f"{name} {_readiness(row)}" for name, row in rows.items() if row.get("leaving")]
    if leaving:
        placed += "; leaving " + ", ".join(leaving)
    status = binding.get("status") or {}
    if status.get("phase", "Scheduled") == "Scheduled":
        return placed
    # Copies kept while it waits to be placed again: shown as running, and as waiting.
    reason = _STILL_RUNNING.sub("", status.get("reason") or "") or "not placed again yet"
    return f"{placed}; Pending: {reason}"


def _beyond(targets: list[dict[str, Any]], rows: dict[str, dict[str, Any]], *, shown: int) -> str:
    """`+141 more (144 clusters, 143 applied, 1 error)`: the targets a capped cell leaves
    out, and of all of them how many took their copy, so a failure among those not named
    is still seen."""
    found = [rows.get(t["name"]) for t in targets]
    applied = sum(1 for row in found if row and row.get("applied"))
    failed = sum(1 for row in found if _readiness(row) == "error")
    counts = f"{len(targets)} clusters, {applied} applied" + (f", {failed} error" * bool(failed))
    return f"+{len(targets) - shown} more ({counts})"


def _needers(status: dict[str, Any] | None) -> str:
    """`a dependency of W, ...` for an object that policies with `propagateDeps` send
    where their workloads run, or "" for one no such workload needs."""
    needers = (status or {}).get("requiredBy") or []
    return f"a dependency of {', '.join(needers)}" if needers else ""


def claimed_by(items: list[dict[str, Any]], wanted: str) -> str:
    """The workloads whose Binding records the policy `wanted` (`plan.policy_id`) as their
    claimant, with where each runs (`fedctl describe pp`: what this policy places, which
    its selectors alone do not say when other policies select the same workloads)."""
    rows = [
        [address(i), placement_cell(i)]
        for i in sorted(items, key=lambda i: (i["namespace"], i["name"], i["kind"]))
        if ((i.get("binding") or {}).get("metadata") or {}).get("annotations", {}).get(CLAIMED_BY)
        == wanted
    ]
    if not rows:
        return "Claims:      <none>"
    body = render.table(["WORKLOAD", "CLUSTERS"], rows)
    return f"Claims:      {len(rows)} workload(s)\n  " + body.replace("\n", "\n  ")


def on_cluster(items: list[dict[str, Any]], cluster: str) -> str:
    """The workloads whose Binding places replicas on `cluster`, or that are leaving it
    (`fedctl cluster describe`: what runs there, before maintenance or a drill)."""
    rows = []
    for item in sorted(items, key=lambda i: (i["namespace"], i["name"], i["kind"])):
        spec = (item.get("binding") or {}).get("spec") or {}
        mine = [t for t in spec.get("clusters") or () if t["name"] == cluster]
        leaving = [t for t in spec.get("evictionTasks") or () if t["cluster"] == cluster]
        if not mine and not leaving:
            continue
        ready = _readiness(_per_cluster(item.get("status")).get(cluster))
        if mine:
            target = mine[0]
            finished = (item.get("status") or {}).get("phase") in FINISHED_PHASES
            rows.append(
                [
                    address(item),
                    target["replicas"],
                    target.get("chip") or "-",
                    # A finished job costs nothing more, as `fedctl cost` counts it.
                    "-" if finished else _hourly([target], spec),
                    ready,
                ]
            )
        else:
            rows.append([address(item), leaving[0].get("replicas", 0), "-", "-", "leaving"])
    if not rows:
        return "Workloads:   <none>"
    cost = render.per_hour("COST/H", _currency(items))
    body = render.table(["WORKLOAD", "REPLICAS", "CHIP", cost, "READY"], rows)
    return f"Workloads:   {len(rows)} placed here\n  " + body.replace("\n", "\n  ")


def _queue_lines(
    workload: dict[str, Any], spec: dict[str, Any], state: dict[str, Any]
) -> list[str]:
    """The queue and priority the Binding holds (admitted under, or waiting in), and the
    named class the workload asked for: a Kueue user's `describe workload` shows both,
    and `fedctl.io/queue` is an annotation no selector reads."""
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    asked = annotations.get(workload_model.ANNOTATION_PRIORITY)
    named = f" (class {asked})" if asked and not asked.lstrip("-").isdigit() else ""
    how = "waiting in" if state.get("phase") == "Pending" else "admitted under"
    return [
        f"Queue:       {spec.get('queue', '-')} ({how} it)",
        f"Priority:    {spec.get('priority', 0)}{named}",
    ]


def table(items: list[dict[str, Any]], *, wide: bool, now: dt.datetime | None = None) -> str:
    """CLUSTERS names the first `CLUSTERS_SHOWN` targets and counts the rest; `wide` names
    every one, and adds the chip chosen on each cluster, the queue and priority the
    workload was admitted under and what its replicas cost an hour (as `fedctl cost` sums
    it). Jobs
    alone read as `kubectl get jobs` does: COMPLETIONS, and DURATION when `now` is given."""
    jobs = bool(items) and all(i["kind"] == _JOB for i in items)
    timed = jobs and now is not None
    headers = ["NAMESPACE", "NAME", "KIND", "HEALTH", "COMPLETIONS" if jobs else "READY"]
    headers += ["DURATION"] if timed else []
    headers += ["CLUSTERS"]
    if wide:
        headers += ["CHIPS", "QUEUE", "PRIORITY", render.per_hour("COST/H", _currency(items))]
    rows = []
    for item in sorted(items, key=lambda i: (i["namespace"], i["name"], i["kind"])):
        status = item.get("status") or {}
        ready = (
            status.get("phase")
            or f"{status.get('readyReplicas') or 0}/{status.get('replicas') or 0}"
            if status
            else "-"
        )
        row = [
            # Empty for a cluster-scoped object (a Namespace), as kubectl leaves it; `_` is
            # only how the registry keys it.
            "" if item["namespace"] == keys.CLUSTER_SCOPE else item["namespace"],
            item["name"],
            item["kind"],
            _health(item),
            _completions(item) if jobs else ready,
            *([_duration(status, now)] if timed and now is not None else []),
            placement_cell(item, cap=None if wide else CLUSTERS_SHOWN),
        ]
        if wide:
            spec = (item.get("binding") or {}).get("spec") or {}
            targets = spec.get("clusters") or []
            row += [
                ",".join(f"{t['name']}={t.get('chip') or '-'}" for t in targets),
                spec.get("queue", "-"),
                spec.get("priority", "-"),
                # A finished job costs nothing more (as `fedctl cost` leaves it out), though
                # its Binding keeps the estimate it was placed by.
                "-" if status.get("phase") in FINISHED_PHASES else _hourly(targets, spec),
            ]
        rows.append(row)
    return render.table(headers, rows)


_JOB = "Job.batch"
_BATCH = frozenset({_JOB, "Job.batch.volcano.sh", "PyTorchJob.kubeflow.org"})
"""The kinds whose status carries Kubernetes' job fields (`status`)."""


def _health(item: dict[str, Any]) -> str:
    """HEALTH: a suspended job's is Suspended, as kubectl's STATUS of a Job says; it runs
    nothing, and `Unknown` (no copy reports) read as if something were wrong."""
    if item.get("suspended"):
        return "Suspended"
    return str((item.get("status") or {}).get("health", "-"))


def _completions(item: dict[str, Any]) -> str:
    """kubectl's COMPLETIONS of a Job: succeeded of `completions`, else of 1 (`of N` with a
    `parallelism` above 1), so `fedctl get jobs` reads `2/4` as `kubectl get jobs` does."""
    done = (item.get("status") or {}).get("succeeded") or 0
    completions, parallelism = item.get("completions"), item.get("parallelism")
    if completions is not None:
        return f"{done}/{completions}"
    if isinstance(parallelism, int) and parallelism > 1:
        return f"{done}/1 of {parallelism}"
    return f"{done}/1"


def _duration(status: dict[str, Any], now: dt.datetime) -> str:
    """kubectl's DURATION of a Job: from its start to its completion, or to now while it
    runs; `-` before it starts (suspended, or waiting in its queue)."""
    start = timestamp(status.get("startTime"))
    if start is None:
        return "-"
    end = timestamp(status.get("completionTime")) or now
    return human_duration(max(0, int((end - start).total_seconds())))


def human_duration(seconds: int) -> str:
    """As kubectl's `duration.HumanDuration`: two units while the second still says
    something (`2m30s`, `3h20m`, `2d5h`), one after (`45m`, `20h`, `12d`)."""
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if days < 730:
        return f"{days}d"
    years, rest = days // 365, days % 365
    if days < 2920:
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def _hourly(targets: list[dict[str, Any]], spec: dict[str, Any]) -> str:
    """What the targets cost together an hour (`render.hourly`: replicas run where no price
    is known said so, as a partial sum would read as the whole); `-` when none is placed,
    or for an object that runs no pods (a ConfigMap, which costs nothing)."""
    placed = [TargetCluster.model_validate(t) for t in targets if t.get("replicas")]
    if not placed:
        return "-"
    total = hourly_total(placed)
    if total is not None:
        return f"{total:.4f}"
    if not _runs_pods(spec):
        return "-"
    return render.hourly(
        known_cost(placed),
        replicas=sum(t.replicas for t in placed),
        unpriced=sum(t.replicas for t in placed if t.hourly_cost is None),
    )


def _currency(items: list[dict[str, Any]]) -> str | None:
    """The currency the items' costs are in (the federation's, on each item)."""
    return next((str(i["currency"]) for i in items if i.get("currency")), None)


def _runs_pods(spec: dict[str, Any]) -> bool:
    """Whether the Binding places pods (it records their requests): a Namespace or
    ConfigMap is bound too, and having no price it is not unpriced but free."""
    return bool(spec.get("podRequests"))


def _money(value: Any, spec: dict[str, Any]) -> str:
    """A recorded cost to four places, as every other cost is shown (it is stored exact:
    `0.0054125`); `unpriced` for pods placed where no price is known."""
    if value is None:
        return render.UNPRICED if _runs_pods(spec) else "-"
    return f"{Decimal(str(value)):.4f}"


def _verdict_details(v: dict[str, Any]) -> str:
    """A scored cluster's breakdown (`cost=100 binpack=3`) and notes, or the filter that
    refused it and why, as `fedctl plan` words them: an ok row showed a PLUGIN `-` and an
    empty REASONS, telling nothing of why one cluster won."""
    reasons = "; ".join(v.get("reasons") or [])
    if v.get("verdict") != "ok":
        return f"{v.get('plugin') or '-'}: {reasons}" if reasons else v.get("plugin") or "-"
    scores = " ".join(f"{k}={n}" for k, n in (v.get("scores") or {}).items())
    return " ".join(part for part in (scores, f"({reasons})" if reasons else "") if part)


def _filtered_line(filtered: dict[str, int], explanation: list[dict[str, Any]]) -> str:
    """The clusters the filters turned down, counted by filter. A Scheduled Binding lists
    none of them (they are "more" than its rows); a Pending one lists the nearest, so the
    line counts every one and says how many the rows above leave out."""
    total = sum(filtered.values())
    counts = ", ".join(f"{n} by {plugin}" for plugin, n in sorted(filtered.items()))
    plan = "`fedctl plan --live -f FILE` gives each one's reason"
    listed = sum(1 for v in explanation if v.get("verdict") != "ok")
    if not listed:
        return f"Filtered:    {total} more clusters ({counts}); {plan}"
    left = total - listed
    return f"Filtered:    {total} clusters ({counts})" + (
        f"; {left} not listed above: {plan}" if left > 0 else ""
    )


def _section(title: str, headers: list[str], rows: list[list[Any]]) -> str:
    if not rows:
        return f"{title}: <none>"
    body = render.table(headers, rows).replace("\n", "\n  ")
    return f"{title}:\n  {body}"


def _claimant(binding: dict[str, Any]) -> str:
    """The policy a Binding records as its workload's claimant (`CLAIMED_BY`), as `fedctl
    get` names it: which policy places a workload is the first thing to know when several
    select it, and only the Binding knows which of them claimed it first."""
    annotations = (binding.get("metadata") or {}).get("annotations") or {}
    recorded = annotations.get(CLAIMED_BY)
    if recorded is None:  # or a Binding written before claims were recorded
        return "none: no propagation policy claims it (placed whole on the best cluster)"
    if not recorded:
        return "none: the policy that claimed it is gone; it stays where it is"
    kind, _, name = recorded.partition("/")
    return f"{kind} {name}"


def describe(doc: dict[str, Any]) -> str:
    """The full story of one workload, as text."""
    workload = doc.get("workload") or {}
    binding = doc.get("binding") or {}
    status = doc.get("status") or {}
    meta = workload.get("metadata") or {}
    namespace = meta.get("namespace", binding.get("metadata", {}).get("namespace"))
    lines = [
        f"Name:        {meta.get('name', binding.get('metadata', {}).get('name'))}",
        f"Namespace:   {namespace or '- (cluster-scoped)'}",
        f"Kind:        {workload.get('kind')} ({workload.get('apiVersion')})",
        f"Health:      {'Suspended' if doc.get('suspended') else status.get('health', '-')}",
    ]
    if status.get("phase"):
        lines.append(
            f"Phase:       {status['phase']} (running {status.get('running', 0)},"
            f" succeeded {status.get('succeeded', 0)}, failed {status.get('failed', 0)})"
        )
        lines.extend(_job_times(status))
    else:
        lines.append(
            f"Ready:       {status.get('readyReplicas') or 0}/{status.get('replicas') or 0}"
        )
    spec = binding.get("spec") or {}
    state = binding.get("status") or {}
    needers = _needers(status)
    if not binding:
        why = _FEDERATION_ONLY[2:] if doc.get("federationOnly") else "(not scheduled yet)"
        lines.append(f"Binding:     none {f'({needers})' if needers else why}")
    else:
        lines.append(
            f"Binding:     {state.get('phase', 'none')} (revision {doc.get('bindingRevision')})"
            + (f": {state['reason']}" if state.get("reason") else "")
        )
        lines.append(f"Policy:      {_claimant(binding)}")
        lines.extend(_queue_lines(workload, spec, state))
        if state.get("schedulerObservingAffinityName"):
            lines.append(
                f"Affinity:    group {state['schedulerObservingAffinityName']}"
                " (its policy's clusterAffinities group the workload was placed in)"
            )
        if needers:
            lines.append(f"Needed by:   {needers.removeprefix('a dependency of ')}")
    for missing in status.get("missingDependencies") or ():
        lines.append(
            f"Missing:     {missing} (not in the federation, so propagateDeps cannot send"
            " it: each member must have its own)"
        )
    # A finished job costs nothing more, as `get workloads`, `cluster describe`, `fedctl
    # cost` and the dashboard count it; what it was placed at is said once, below.
    finished = status.get("phase") in FINISHED_PHASES
    lines.append(
        _section(
            "Placement",
            ["CLUSTER", "REPLICAS", "CHIP", render.per_hour("COST/H", doc.get("currency"))],
            [
                [
                    t["name"],
                    t["replicas"],
                    t.get("chip") or "-",
                    "-" if finished else _money(t.get("hourlyCost"), spec),
                ]
                for t in spec.get("clusters", [])
            ],
        )
    )
    if finished and spec.get("clusters"):
        ran = _hourly(spec["clusters"], spec)
        lines.append(
            f"Cost:        {status['phase'].lower()}: costs nothing more"
            + (f" (it was placed at {ran}/h)" if ran not in ("-", render.UNPRICED) else "")
        )
    if spec.get("evictionTasks"):
        lines.append(
            _section(
                "Leaving",
                ["CLUSTER", "REPLICAS", "PURGE", "SINCE", "REASON"],
                [
                    [
                        t["cluster"],
                        t.get("replicas", 0),
                        t.get("purgeMode", "Gracefully")
                        + (f" ({t['gracePeriodSeconds']}s)" if t.get("gracePeriodSeconds") else ""),
                        t.get("creationTime", "-"),
                        t.get("reason") or "-",
                    ]
                    for t in spec["evictionTasks"]
                ],
            )
        )
    lines.append(
        _section(
            "Explanation",
            ["CLUSTER", "VERDICT", "SCORE", "DETAILS"],
            [
                [
                    v["cluster"],
                    v["verdict"] + (" (selected)" if v.get("selected") else ""),
                    v.get("score", "-"),
                    _verdict_details(v),
                ]
                for v in spec.get("explanation", [])
            ],
        )
    )
    filtered = spec.get("filteredSummary") or {}
    if filtered:
        lines.append(_filtered_line(filtered, spec.get("explanation", [])))
    lines.append(_works(doc.get("works", []), _per_cluster(status)))
    lines.append(
        _section(
            "Events",
            ["TIME", "TYPE", "REASON", "CLUSTER", "MESSAGE"],
            [
                [_when(e), e["type"], e["reason"], e.get("cluster") or "-", e.get("message", "")]
                for e in doc.get("events", [])
            ],
        )
    )
    return "\n".join(lines)


def _job_times(status: dict[str, Any]) -> list[str]:
    """A job's start and completion times and its finishing condition, as `kubectl
    describe job` gives them (across members, as Karmada aggregates them)."""
    lines = []
    if status.get("startTime"):
        lines.append(f"Start Time:  {status['startTime']}")
    if status.get("completionTime"):
        lines.append(f"Completed:   {status['completionTime']}")
    for cond in status.get("conditions") or ():
        why = ": ".join(part for part in (cond.get("reason"), cond.get("message")) if part)
        lines.append(
            f"Condition:   {cond.get('type')}={cond.get('status')}" + (f" ({why})" if why else "")
        )
    return lines


EVENT_HEADERS = ["LAST SEEN", "TYPE", "REASON", "OBJECT", "CLUSTER", "MESSAGE"]


def events_table(events: list[dict[str, Any]], *, now: dt.datetime) -> str | None:
    """One row per event across workloads, oldest first, as `kubectl get events` lists
    them: after a drill, what was applied and removed where, and what failed, without
    describing each workload. None when there is none (they are kept about an hour)."""
    rows = [
        [
            seen(e, now=now),
            e.get("type", ""),
            e.get("reason", ""),
            e.get("object", ""),
            e.get("cluster") or "-",
            e.get("message", ""),
        ]
        for e in sorted(events, key=event_log.last_seen)
    ]
    return render.table(EVENT_HEADERS, rows) if rows else None


def _when(event: dict[str, Any]) -> str:
    """When an event happened, or last happened and since when for one that happened
    again: `2026-12-07T13:29:40Z (x18 since 2026-12-07T13:23:48Z)`."""
    count = int(event.get("count") or 1)
    if count == 1:
        return str(event.get("time", ""))
    return f"{event_log.last_seen(event)} (x{count} since {event.get('time', '')})"


def seen(event: dict[str, Any], *, now: dt.datetime) -> str:
    """When an event last happened, and for one that happened again how often since
    when, as `kubectl events` says it: `20s (x18 over 6m)`. A failure met at every retry
    showed as one event whose age kept growing, as if it were over."""
    last = event_log.last_seen(event)
    shown = render.age(last, now=now)
    count = int(event.get("count") or 1)
    if count > 1:
        first = dt.datetime.fromisoformat(last.replace("Z", "+00:00"))
        shown += f" (x{count} over {render.age(event.get('time'), now=first)})"
    return shown


def _works(works: list[dict[str, Any]], rows_now: dict[str, dict[str, Any]]) -> str:
    """Each Work, as its member last reported it; a member not Ready now (`stale` in the
    workload status) reads Unknown, as `fedctl get workloads` reads it: its last report is
    no evidence that anything still runs there (it showed Healthy 2/2 on a dead member)."""
    rows = []
    for work in works:
        st = work.get("status") or {}
        seen = st.get("observed") or {}
        now = rows_now.get(work["spec"]["cluster"]) or {}
        rows.append(
            [
                work["spec"]["cluster"],
                _applied(work),
                "Unknown" if now.get("stale") else seen.get("health", "Unknown"),
                _readiness(now) if now.get("stale") else _ready(seen),
                work["spec"].get("bindingRevision"),
                _message(st, seen),
            ]
        )
    headers = ["CLUSTER", "APPLIED", "HEALTH", "READY", "REVISION", "MESSAGE"]
    return _section("Works", headers, rows)


def _message(st: dict[str, Any], seen: dict[str, Any]) -> str:
    """Why the member did not take the copy, else why the copy is not healthy there (its
    quota refusing the pods, a stalled rollout): the member's own words, which the Work
    keeps. An empty cell beside `Unhealthy 14/15` told nothing."""
    if st.get("error"):
        return str(st["error"])
    if seen.get("health") in ("Healthy", "Completed"):
        return ""
    return str(seen.get("message") or "")


def _applied(work: dict[str, Any]) -> str:
    """Whether the member took the Work's manifest, and whether dispatching to it is
    suspended (the copy there, if any, is left as it is: it may be an older one)."""
    applied = "yes" if (work.get("status") or {}).get("applied") else "no"
    if (work.get("spec") or {}).get("suspendDispatching"):
        return f"{applied} ({SUSPENDED})"
    return applied


def _ready(seen: dict[str, Any]) -> str:
    return str(seen.get("phase") or f"{seen.get('readyReplicas') or 0}/{seen.get('replicas') or 0}")


def works_table(works: list[dict[str, Any]], *, now: dt.datetime, wide: bool) -> str | None:
    """One row per Work (a workload's manifest for one member): whether the member took
    it, and what it reports of it. `wide` adds the Binding revision it renders and the
    apply error. None when there is no row.

    AGE is the time since the Work's Applied condition last changed: a Work has no
    creation time of its own (the propagator writes it, not the API), and the propagator
    keeps that time while the outcome stays the same, so an applied Work's AGE is how long
    it has been applied."""
    rows = []
    for work in works:
        meta, spec = work.get("metadata") or {}, work.get("spec") or {}
        st = work.get("status") or {}
        seen = st.get("observed") or {}
        target = spec.get("workload") or {}
        since = meta.get("creationTimestamp") or min(
            (
                c["lastTransitionTime"]
                for c in st.get("conditions", [])
                if c.get("lastTransitionTime")
            ),
            default=None,
        )
        row: list[object] = [
            meta.get("namespace", ""),
            meta.get("name", ""),
            _kind(target),
            spec.get("cluster", ""),
            _applied(work),
            seen.get("health", "Unknown"),
            _ready(seen),
            render.age(since, now=now),
        ]
        if wide:
            row += [spec.get("bindingRevision", "-"), st.get("error") or "-"]
        rows.append(row)
    rows.sort(key=lambda r: [str(c) for c in r[:4]])
    headers = WORK_HEADERS + (["REVISION", "ERROR"] if wide else [])
    return render.table(headers, rows) if rows else None


def status(item: dict[str, Any]) -> dict[str, Any]:
    """What the table says of one workload (an item of the workload view), as data for
    `-o json|yaml`. Every key is always there, null when not known yet: health, phase and
    ready counts across members; the queue it waits in or was admitted from; the
    scheduler's verdict (`scheduling`: Scheduled or Pending, and why); whether no policy
    propagates it; and per target cluster its replicas, chip and what that member reports.
    A job's also has Kubernetes' fields as Karmada aggregates a Job's (`active`,
    `succeeded`, `failed`, `startTime`, `completionTime`, `conditions`), and a suspended
    job's health is Suspended."""
    own = item.get("status") or {}
    binding = item.get("binding") or {}
    spec, verdict = binding.get("spec") or {}, binding.get("status") or {}
    reports = _per_cluster(own)
    clusters = []
    for target in spec.get("clusters", []):
        row = reports.get(target["name"]) or {}
        clusters.append(
            {
                "name": target["name"],
                "replicas": target.get("replicas"),
                "chip": target.get("chip"),
                "applied": bool(row.get("applied")),
                "health": row.get("health"),
                "phase": row.get("phase"),
                "readyReplicas": row.get("readyReplicas"),
                "error": row.get("error") or None,
            }
        )
    batch = item.get("kind") in _BATCH
    return {
        "health": _health(item) if own or item.get("suspended") else None,
        "phase": own.get("phase"),
        "replicas": own.get("replicas"),
        "readyReplicas": own.get("readyReplicas"),
        "suspended": bool(item.get("suspended")),
        # A job's status as Kubernetes words it, summed over its copies as Karmada does.
        "active": own.get("running", 0) if batch else None,
        "succeeded": own.get("succeeded", 0) if batch else None,
        "failed": own.get("failed", 0) if batch else None,
        "startTime": own.get("startTime"),
        "completionTime": own.get("completionTime"),
        "conditions": own.get("conditions") or [],
        "queue": spec.get("queue"),
        "scheduling": {"phase": verdict.get("phase"), "reason": verdict.get("reason") or None},
        "federationOnly": bool(item.get("federationOnly")) and not _needers(own),
        "clusters": clusters,
    }


def documents(items: list[dict[str, Any]], templates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The templates (as the API returns them) that `items` of the workload view list, in
    template order, each with `status` of its item as its status."""
    answers = {(i["namespace"], i["kind"], i["name"]): i for i in items}
    return [{**t, "status": status(answers[_ref(t)])} for t in templates if _ref(t) in answers]


def labelled(
    items: list[dict[str, Any]], templates: list[dict[str, Any]], keep: Callable[[Any], bool]
) -> list[dict[str, Any]]:
    """The `items` whose template `keep` takes (a label selector: the view has no labels)."""
    wanted = {_ref(t) for t in templates if keep(t)}
    return [i for i in items if (i["namespace"], i["kind"], i["name"]) in wanted]


def _ref(doc: dict[str, Any]) -> tuple[str, str, str]:
    """(namespace, Kind.group, name) of a template, the triple the workload view names it
    by: a cluster-scoped one's namespace is `_`."""
    meta = doc.get("metadata") or {}
    return (meta.get("namespace") or keys.CLUSTER_SCOPE, _kind(doc), str(meta.get("name", "")))


def _kind(doc: dict[str, Any]) -> str:
    """`Kind.group` (`Kind` for the core group), as the KIND column prints it."""
    group = str(doc.get("apiVersion", "")).rpartition("/")[0]
    return f"{doc.get('kind', '')}.{group}" if group else str(doc.get("kind", ""))


def pick(items: list[dict[str, Any]], *, name: str, namespace: str | None) -> dict[str, Any]:
    """NAME is looked for in -n NS, or without -n in `default` and among cluster-scoped
    workloads; NS/NAME in NS; KIND/NAME as NAME is, and among cluster-scoped workloads;
    NS/KIND/NAME exactly. KIND is `Kind.group` as the KIND column prints it, or the kind
    alone (`job`), in any case."""
    parts = name.split("/")
    if len(parts) > 3 or not all(parts):
        raise errors.Invalid(f"workload {name!r}: give NAME, NS/NAME, KIND/NAME or NS/KIND/NAME")
    scopes = {namespace} if namespace else {"default", keys.CLUSTER_SCOPE}
    found = [i for i in items if i["name"] == parts[-1] and _fits(i, parts[:-1], scopes)]
    shown = f"{namespace}/{name}" if namespace and len(parts) == 1 else name
    if not found:
        # Where else the name is (a NAME without -n is looked for in `default` only).
        others = {
            i["namespace"]
            for i in items
            if i["name"] == parts[-1] and _fits(i, parts[-2:-1], {i["namespace"]})
        }
        raise addressing.not_found(f'workloads "{shown}"', sorted(others - scopes))
    if len(found) > 1:
        found.sort(key=lambda i: (i["kind"], i["namespace"]))
        kinds = ", ".join(i["kind"] for i in found)
        addresses = " or ".join(address(i) for i in found)
        raise errors.Invalid(f"{shown} names several workloads: {kinds}; name one as {addresses}")
    return found[0]


def _fits(item: dict[str, Any], qualifiers: list[str], scopes: set[str]) -> bool:
    """Whether a workload of the wanted name fits the NS and KIND parts given before it."""
    ns, kind = item["namespace"], item["kind"]
    wanted = qualifiers[-1].lower() if qualifiers else None
    is_kind = wanted is not None and (
        wanted in (kind.lower(), kind.partition(".")[0].lower()) or is_kind_named(kind, wanted)
    )
    if len(qualifiers) == 2:
        return ns == qualifiers[0] and is_kind
    if len(qualifiers) == 1:
        return ns == qualifiers[0] or (is_kind and (ns in scopes or ns == keys.CLUSTER_SCOPE))
    return ns in scopes


_SHORT_NAMES = {
    "deploy": "Deployment",
    "sts": "StatefulSet",
    "rs": "ReplicaSet",
    "ds": "DaemonSet",
    "cj": "CronJob",
    "po": "Pod",
    "ns": "Namespace",
    "cm": "ConfigMap",
    "svc": "Service",
    "sa": "ServiceAccount",
    "pvc": "PersistentVolumeClaim",
    "ing": "Ingress",
    "netpol": "NetworkPolicy",
    "pdb": "PodDisruptionBudget",
    "hpa": "HorizontalPodAutoscaler",
    "crd": "CustomResourceDefinition",
    "limits": "LimitRange",
    "quota": "ResourceQuota",
    "vcjob": "Job.batch.volcano.sh",
    "vj": "Job.batch.volcano.sh",
    "pc": "PriorityClass",
}
"""kubectl's short names of the kinds teams propagate, and Volcano's of its Job."""

_MORE_KINDS = frozenset({"PriorityClass"})
"""Kinds a file commonly carries beside its workloads that selectors seldom name, so
`COMMON_KINDS` leaves them out: `apply` stores them, and `get` must find them by name."""

_GROUPS = {
    **dict.fromkeys(("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet"), "apps"),
    **dict.fromkeys(("Job", "CronJob"), "batch"),
    "PyTorchJob": "kubeflow.org",
    **dict.fromkeys(("Ingress", "NetworkPolicy"), "networking.k8s.io"),
    "PodDisruptionBudget": "policy",
    "HorizontalPodAutoscaler": "autoscaling",
    **dict.fromkeys(
        ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"), "rbac.authorization.k8s.io"
    ),
    "CustomResourceDefinition": "apiextensions.k8s.io",
    "PriorityClass": "scheduling.k8s.io",
}
"""The group kubectl resolves each common kind's name to (none: the core group). A name
two groups serve is the built-in one's, as kubectl's discovery orders them: `jobs` is
`jobs.batch`, never Volcano's `jobs.batch.volcano.sh`."""


def kind_named(name: str) -> str | None:
    """The workload kind `name` means as a kubectl resource (`deploy`, `deployments`,
    `Job`, `networkpolicies`), as the KIND column prints it (`Deployment.apps`,
    `ConfigMap`); None for any other name. `fedctl get deploy -n web` is what kubectl
    habit types; refusing it for `workloads` helped no one. The group is kubectl's:
    `delete jobs -l team=data` deleting Volcano's training gangs beside the batch Jobs
    would surprise anyone who typed it."""
    low = name.lower()
    if low in _SHORT_NAMES:
        return _grouped(_SHORT_NAMES[low])
    for kind in sorted(COMMON_KINDS | _MORE_KINDS):
        if low in _plurals(kind):
            return _grouped(kind)
    return None


def _plurals(kind: str) -> tuple[str, ...]:
    """The lower-case names kubectl takes for `kind`: itself and its plural forms."""
    k = kind.lower()
    return (k, k + "s", k + "es", k[:-1] + "ies" if k.endswith("y") else k)


def is_kind_named(kind: str, wanted: str) -> bool:
    """Whether `kind` (`Kind.group`, as the KIND column prints it) is the kind `wanted`
    names as `plural.group` (`clusterqueues.kueue.x-k8s.io`), a form `addressing.resource`
    leaves as typed for a kind fedctl knows nothing of. Resolved against what is stored
    rather than a table, since any custom resource `apply` accepts is stored, and `get`
    refused every one of them as an unknown resource."""
    base, _, group = kind.partition(".")
    wanted_base, _, wanted_group = wanted.lower().partition(".")
    return bool(group) and group.lower() == wanted_group and wanted_base in _plurals(base)


def _grouped(kind: str) -> str:
    """`Kind.group` of a common kind, its group as kubectl resolves it."""
    group = _GROUPS.get(kind)
    return f"{kind}.{group}" if group else kind


def with_kind(name: str, kind: str) -> str:
    """A `pick` address (NAME or NS/NAME) narrowed to `kind`: KIND/NAME, NS/KIND/NAME."""
    parts = name.split("/")
    if len(parts) == 1:
        return f"{kind}/{name}"
    if len(parts) == 2:
        return f"{parts[0]}/{kind}/{parts[1]}"
    return name


def of_kind(items: list[dict[str, Any]], kind: str | None) -> list[dict[str, Any]]:
    """Status-view items (`Kind.group`) or templates (`Kind` and `apiVersion`) of `kind`,
    `Kind.group` (that group alone: `jobs.batch` is not Volcano's Job) or `Kind` (the core
    group's); all for None."""
    if kind is None:
        return items
    return [i for i in items if _kind(i) == kind or is_kind_named(_kind(i), kind)]


def address(item: dict[str, Any]) -> str:
    """The form `pick` takes for exactly this workload."""
    if item["namespace"] == keys.CLUSTER_SCOPE:
        return f"{item['kind']}/{item['name']}"
    return f"{item['namespace']}/{item['kind']}/{item['name']}"
