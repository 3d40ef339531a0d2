"""Drill reports rendered: a timeline of moments, Markdown for people, an SVG timeline.

Fed by a judged `drill_report.Report` (a finished drill's, a stored one, or a running
drill's partial one); feeds `fedctl drill run/show`, the `--report` folder and the
controller's drill API, through `drills`, the drill's one face, which names these too.
Pure: nothing here reads the registry or the clock. Apart from `drills` so that running a
drill and saying what it found each stay within a module's budget.
"""

from __future__ import annotations

from typing import Any

from federation.failover.drill_report import Report

__all__ = ["LOSES_MEMBER", "events", "markdown", "svg"]

LOSES_MEMBER = frozenset({"down", "blackhole"})
"""Faults the controller must notice by itself; the taint is its own detection."""


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def events(report: Report) -> list[dict[str, Any]]:
    """The report as a timeline of moments, earliest first: the fault, its detection, each
    workload re-placed and ready elsewhere, the heal, recovery, and what did not recover.
    Times are seconds from the fault, as everywhere in the report."""
    out: list[dict[str, Any]] = [
        {"t": 0.0, "event": "fault", "message": f"{report.fault} on {report.cluster}"}
    ]
    if report.detect is not None:
        out.append(
            {"t": report.detect, "event": "detected", "message": f"{report.cluster} tainted"}
        )
    for w in report.workloads:
        if w.replaced is not None:
            out.append({"t": w.replaced, "event": "re-placed", "workload": w.workload})
        if w.ready is not None:
            out.append({"t": w.ready, "event": "ready", "workload": w.workload})
    if report.healed_at is not None:
        out.append({"t": report.healed_at, "event": "healed", "message": "fault removed"})
    if report.rto is not None:
        out.append(
            {"t": report.rto, "event": "recovered", "message": "all affected ready elsewhere"}
        )
    out.sort(key=lambda e: float(e["t"]))
    end = max([float(e["t"]) for e in out])
    for w in report.workloads:
        if w.outcome.startswith(("lost", "pending")):
            reason = report.shortfall.get(w.workload, "")
            message = f"{w.outcome}: {reason}" if reason else w.outcome
            event = "lost" if w.outcome.startswith("lost") else "pending"
            out.append({"t": end, "event": event, "workload": w.workload, "message": message})
    for name in report.not_back:
        message = "not placed on the member again; fedctl rebalance --all --dry-run"
        out.append({"t": end, "event": "not-back", "workload": name, "message": message})
    if report.error:
        out.append({"t": end, "event": "failed", "message": report.error})
    return out


def markdown(report: Report, *, table: bool = True) -> str:
    """The report for people: headline numbers, then one line per affected workload.

    Without `table` the per-workload rows are left out for a line saying where they are:
    a terminal after a drill of 220 workloads scrolled the headline numbers away."""
    lines = [
        f"# Drill {report.id}: `{report.fault}` on `{report.cluster}`",
        "",
        f"Started {report.started}; fault held {report.duration:g}s, healed at "
        f"{_s(report.healed_at)}.",
        "",
        *([f"**Stopped early:** {report.error}", ""] if report.error else []),
        *_undetected(report),
        "| measure | value |",
        "|---|---|",
        f"| time to detect | {_s(report.detect)} |",
        f"| time to re-place | {_last(report, report.replace, 'replaced', 're-placed')} |",
        f"| RTO (all ready elsewhere) | {_last(report, report.rto, 'ready', 'ready elsewhere')} |",
        f"| workloads affected | {report.affected} |",
        f"| lost (must be 0) | {report.lost} |",
        f"| double-runs (must be 0) | {report.double_runs} |",
        f"| capacity shortfall | {len(report.shortfall)} |",
        *(
            [f"| services not back on the member | {len(report.not_back)} |"]
            if report.not_back
            else []
        ),
        "",
    ]
    if table:
        lines += ["| workload | re-placed | ready | outcome |", "|---|---|---|---|"]
        lines += [
            f"| {w.workload} | {_s(w.replaced)} | {_s(w.ready)} | {w.outcome} |"
            for w in report.workloads
        ]
    else:
        lines.append(
            f"The {len(report.workloads)} workloads one by one: `fedctl drill show"
            f" {report.id}`, or report.md under `--report`."
        )
    if report.shortfall:
        lines += ["", "## Not placed", ""]
        lines += [f"- {name}: {reason}" for name, reason in sorted(report.shortfall.items())]
    lines += _not_back(report) + _kept_away(report)
    return "\n".join(lines) + "\n"


def _kept_away(report: Report) -> list[str]:
    """The services that moved off the member and that failover never brings back, said
    apart from `_not_back`'s: named among them, an aggregated service was given causes
    that were not its own (an earlier affinity group, too short a `--settle`)."""
    if not report.kept_away:
        return []
    return [
        "",
        "## Kept where they went",
        "",
        f"Divided aggregated or by dynamic weights, these services keep the replicas where"
        f" they stand (Karmada's Steady division): failover does not place them on"
        f" `{report.cluster}` again when it returns. `fedctl rebalance` moves them back on"
        " request, or their policy's `spec.fedctl.failback: Automatic` lets failover do it.",
        "",
        *(f"- {name}" for name in report.kept_away),
    ]


def _not_back(report: Report) -> list[str]:
    """The services the member did not get back after the fault was lifted, why, and what
    moves them: after a taint drill the member stayed empty while every line said
    `recovered`, and nothing said so."""
    if not report.not_back:
        return []
    n = len(report.not_back)
    services = "service was" if n == 1 else "services were"
    if report.fault in LOSES_MEMBER:
        why = (
            "Failover places services on a member again once it lifts its own taints from"
            " it, where their policy wants them there: these were not back when the drill"
            " stopped watching, because their placement now leaves the member out (coming"
            " back to an earlier affinity group is a rebalance's move) or because they"
            " needed longer than `--settle`."
        )
    else:
        why = (
            "Lifting a taint moves no divided service back, as `kubectl uncordon` moves no"
            " pod back: the member gets only what is placed anew."
        )
    return [
        "",
        "## Not back on the member",
        "",
        f"{n} {services} moved off `{report.cluster}` and not placed on it again after the"
        f" fault was lifted. {why} `fedctl rebalance --all --dry-run` shows what would move"
        " back; without `--dry-run` it moves it, starting each new copy before the old one"
        " goes.",
        "",
        *(f"- {name}" for name in report.not_back),
    ]


def _last(report: Report, value: float | None, field: str, what: str) -> str:
    """A measure taken when the last affected workload got somewhere, or `-` saying how
    many never did: a bare dash beside a line that moved read as nothing having moved."""
    if value is not None:
        return _s(value)
    affected = [w for w in report.workloads if w.affected]
    short = sum(1 for w in affected if getattr(w, field) is None)
    return f"- ({short} of {len(affected)} affected never {what})" if short else "-"


def _undetected(report: Report) -> list[str]:
    """Why a dead member's drill measured nothing, when the fault ended before the
    controller could notice: a `down` drill of 30 s reports only dashes otherwise, which
    reads like failover not working."""
    if report.detect is not None or report.error or report.fault not in LOSES_MEMBER:
        return []
    return [
        f"**Not detected:** the controller never marked `{report.cluster}` NotReady while"
        f" the fault lasted ({report.duration:g}s). It does so after"
        " FEDCTL_MONITOR__FAILURE_THRESHOLD seconds of uninterrupted failure (30 by"
        " default, plus up to a probe period) and moves work after a further"
        " FEDCTL_FAILOVER__EVICTION_GRACE (30): hold the fault longer than both, for"
        " example `--duration 90s`.",
        "",
    ]


def svg(report: Report, *, width: int = 800, row: int = 14) -> str:
    """A timeline: one bar per workload from the fault to re-placement (amber) and on to
    ready (green); vertical marks for detection and heal."""
    span = max(
        [1.0, report.healed_at or 0.0, report.rto or 0.0, report.replace or 0.0]
        + [w.ready or w.replaced or 0.0 for w in report.workloads]
    )
    left, top = 220, 30
    scale = (width - left - 40) / span  # room for the last mark's label
    height = top + row * max(1, len(report.workloads)) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}"'
        ' font-family="sans-serif" font-size="10">',
        f'<text x="4" y="14" font-size="12">Drill {_esc(report.id)}: {_esc(report.fault)}'
        f" on {_esc(report.cluster)} (RTO {_s(report.rto)})</text>",
    ]
    for i, w in enumerate(report.workloads):
        y = top + i * row
        parts.append(f'<text x="4" y="{y + 10}">{_esc(w.workload[-36:])}</text>')
        if w.replaced is not None:
            parts.append(_bar(left, y, w.replaced * scale, "#f0a030"))
        if w.replaced is not None and w.ready is not None:
            parts.append(
                _bar(left + w.replaced * scale, y, (w.ready - w.replaced) * scale, "#40a040")
            )
    for label, at, colour in (
        ("detect", report.detect, "#c03030"),
        ("heal", report.healed_at, "#3050c0"),
    ):
        if at is not None:
            x = left + at * scale
            parts.append(
                f'<line x1="{x:.1f}" y1="{top - 8}" x2="{x:.1f}" y2="{height - 20}"'
                f' stroke="{colour}"/><text x="{x + 2:.1f}" y="{top - 10}">{label}</text>'
            )
    parts.append(f'<text x="{left}" y="{height - 6}">0s = fault; axis {span:.1f}s</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _bar(x: float, y: int, w: float, colour: str) -> str:
    return f'<rect x="{x:.1f}" y="{y}" width="{max(1.0, w):.1f}" height="{10}" fill="{colour}"/>'


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
