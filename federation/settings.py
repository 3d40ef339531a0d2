"""Every tunable of the controller, grouped by the component that reads it.

Each group is a frozen pydantic model so a component gets its settings at construction and
no module hard-codes a period (STYLE.md §13). Every field says its unit and default.
`FEDCTL_<GROUP>__<FIELD>` environment variables override defaults (`from_env`).
"""

from __future__ import annotations

import json
import os
import re
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from federation import errors

__all__ = [
    "SCORE_WEIGHTS",
    "ApiSettings",
    "EtcdSettings",
    "FailoverSettings",
    "MemberSettings",
    "MonitorSettings",
    "PropagationSettings",
    "SchedulerSettings",
    "Settings",
    "from_env",
]


SCORE_WEIGHTS = {"cost": 3, "binpack": 1, "locality": 2, "affinity": 1}
"""The score plugins and their default weights in a cluster's total."""


class _Group(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EtcdSettings(_Group):
    """How the registry reaches etcd."""

    endpoints: tuple[str, ...] = Field(
        default=("http://127.0.0.1:2379",),
        description="etcd client URLs; the first that answers is used. Default: local etcd.",
    )
    ca_file: str | None = Field(default=None, description="CA bundle for TLS (path).")
    cert_file: str | None = Field(default=None, description="Client certificate (path).")
    key_file: str | None = Field(default=None, description="Client key (path).")
    connect_timeout: float = Field(default=5.0, gt=0, description="Seconds to connect.")
    request_timeout: float = Field(default=5.0, gt=0, description="Seconds per request.")
    retry_attempts: int = Field(
        default=30,
        ge=1,
        description="Most tries for a transient gRPC error; by default the deadline ends"
        " a retried call first (six tries were spent in about a second, less than an etcd"
        " restart takes).",
    )
    retry_initial: float = Field(default=0.05, gt=0, description="First backoff, seconds.")
    retry_max: float = Field(default=2.0, gt=0, description="Largest backoff, seconds.")
    retry_deadline: float = Field(
        default=8.0, gt=0, description="Seconds after which a retried call gives up."
    )
    watch_reconnect_max: float = Field(
        default=2.0, gt=0, description="Largest pause between watch reconnects, seconds."
    )


class MonitorSettings(_Group):
    """Cluster monitor: probing members and writing ClusterStatus."""

    probe_period: float = Field(default=10.0, gt=0, description="Seconds between probes.")
    probe_timeout: float = Field(default=5.0, gt=0, description="Seconds a probe may take.")
    recovery_probe_period: float = Field(
        default=2.0,
        gt=0,
        description="Seconds between probes of a member that is not Ready (at most"
        " probe_period): its return is seen sooner, which ends the seconds in which a batch"
        " job that moved away still runs in its old copy there.",
    )
    failure_threshold: float = Field(
        default=30.0, ge=0, description="Seconds of failures, from the first, before Ready=False."
    )
    success_threshold: float = Field(
        default=30.0,
        ge=0,
        description="Seconds of good probes, from the first, before a member that was"
        " Ready=False is Ready again (0: at its first good probe). A member that fails in"
        " between starts again, so one that flaps is not trusted, and its work is not moved"
        " back and away again, on each short return (Karmada's --cluster-success-threshold,"
        " 30 s). A member not judged yet (just joined) is Ready at its first good probe.",
    )
    heartbeat: float = Field(
        default=300.0, gt=0, description="Seconds between status writes when nothing changed."
    )
    capacity_change_fraction: float = Field(
        default=0.05, ge=0, description="Relative change of free capacity that forces a write."
    )
    workers: int = Field(
        default=8, ge=1, description="Workers converging cluster statuses in parallel."
    )
    watch_backoff_max: float = Field(
        default=30.0, gt=0, description="Largest pause before re-listing a failed watch, seconds."
    )
    discovery_period: float = Field(
        default=60.0,
        gt=0,
        description="Seconds between re-reading a member's Kubernetes version, APIs and"
        " cluster id while it answers (at once after a failed probe or a broken watch).",
    )
    retry_max: float = Field(
        default=60.0,
        gt=0,
        description="Largest pause before connecting again to a member whose kubeconfig could"
        " not be loaded, or whose monitoring failed, seconds (doubling from probe_period).",
    )


class MemberSettings(_Group):
    """The member connector: timeouts and the retry policy for calls to a member's API."""

    request_timeout: float = Field(default=10.0, gt=0, description="Seconds per member call.")
    retry_attempts: int = Field(
        default=5, ge=1, description="Tries of a call that failed transiently (429, 5xx, I/O)."
    )
    retry_initial: float = Field(default=0.1, gt=0, description="First backoff, seconds.")
    retry_max: float = Field(
        default=5.0, gt=0, description="Largest backoff, and largest Retry-After honoured, seconds."
    )
    retry_deadline: float = Field(
        default=30.0, gt=0, description="Seconds after which a retried call gives up."
    )
    watch_timeout: float = Field(
        default=300.0,
        gt=0,
        description="Seconds a watch stream may stay open (server-side timeoutSeconds); also"
        " the longest silence tolerated on it before the connection counts as lost.",
    )
    insecure_kubeconfig_exec: bool = Field(
        default=False,
        description="Let the controller's own kubeconfig file (--kubeconfig) run credential"
        " plugins (exec, auth-provider); a Cluster's inline kubeconfig or kubeconfigPath"
        " never may.",
    )


class SchedulerSettings(_Group):
    """Queueing, admission and placement."""

    default_queue: str = Field(default="default", description="Queue of a workload naming none.")
    preemption: bool = Field(default=True, description="Higher priority may evict lower.")
    reclaim: bool = Field(
        default=True,
        description="A queue under its guarantee may evict work other queues borrowed.",
    )
    score_weights: dict[str, int] = Field(
        default_factory=lambda: dict(SCORE_WEIGHTS),
        description="Weight of each score plugin in the total (0 turns one off); the ones"
        " given replace their defaults, e.g. cost=5,locality=0.",
    )
    binpack: bool = Field(
        default=True, description="Prefer fuller clusters (True) or emptier ones (False)."
    )
    default_duration_hours: float = Field(
        default=1.0, gt=0, description="Expected duration of a job that names none, hours."
    )
    cycle_batch: int = Field(default=1000, ge=1, description="Jobs considered per cycle.")
    cycle_batch_max: int = Field(
        default=5000,
        ge=1,
        description="With a larger backlog a cycle takes a tenth of it, up to this many jobs.",
    )
    cycle_debounce: float = Field(
        default=0.05, ge=0, description="Seconds a change waits for others before a cycle runs."
    )
    currency: str = Field(
        default="USD",
        pattern=r"^[A-Z]{3}$",
        description="The currency every cost is compared, recorded and capped in (ISO 4217).",
    )
    exchange_rates: dict[str, Decimal] = Field(
        default_factory=dict,
        description="What one unit of another currency is worth in `currency`, for clusters"
        " priced in it (e.g. CNY=0.14,EUR=1.08); a cluster priced in a currency with no rate"
        " is taken as unpriced.",
    )

    @field_validator("score_weights", mode="before")
    @classmethod
    def _weights(cls, value: Any) -> Any:
        """`cost=5,locality=0` (an environment variable) or a mapping, over the defaults:
        naming one weight must not reset the others (unnamed plugins weighed 1, not their
        default), and a misspelt plugin would weigh nothing while its default stayed."""
        if isinstance(value, str) and value.strip().startswith("{"):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a JSON object: {exc}") from None
        if isinstance(value, str):
            value = _pairs(value, "PLUGIN=WEIGHT,... (e.g. cost=5,locality=0)")
        if not isinstance(value, dict):
            return value
        for name, weight in value.items():
            if name not in SCORE_WEIGHTS:
                raise ValueError(
                    f"no score plugin {name!r}: the score plugins are {', '.join(SCORE_WEIGHTS)}"
                )
            try:
                whole = int(str(weight))
            except ValueError:
                raise ValueError(
                    f"the weight of {name} is not a whole number: {weight!r}"
                ) from None
            if whole < 0:
                raise ValueError(f"the weight of {name} must be 0 or more, got {weight}")
        return {**SCORE_WEIGHTS, **value}

    @field_validator("exchange_rates", mode="before")
    @classmethod
    def _rates(cls, value: Any) -> Any:
        """`CNY=0.14,EUR=1.08` (an environment variable) as a mapping; each rate above 0."""
        if isinstance(value, str):
            value = _pairs(value, "CODE=RATE,CODE=RATE (e.g. CNY=0.14)")
        if isinstance(value, dict):
            for code, rate in value.items():
                if not re.fullmatch(r"[A-Z]{3}", str(code)):
                    raise ValueError(f"{code!r} is not a currency code like CNY or EUR")
                try:
                    if Decimal(str(rate)) <= 0:
                        raise ValueError(f"the rate of {code} must be above 0, got {rate}")
                except ArithmeticError:
                    raise ValueError(f"the rate of {code} is not a number: {rate!r}") from None
        return value


def _pairs(value: str, expected: str) -> dict[str, str]:
    """`KEY=VALUE,KEY=VALUE` (how an environment variable gives a mapping) as a mapping."""
    pairs = [p.partition("=") for p in value.split(",") if p.strip()]
    if any(not sep for _, sep, _ in pairs):
        raise ValueError(f"expected {expected}, got {value!r}")
    return {key.strip(): item.strip() for key, _, item in pairs}


class PropagationSettings(_Group):
    """Rendering and applying Works in members."""

    concurrency_per_member: int = Field(default=8, ge=1, description="Parallel applies a member.")
    field_manager: str = Field(default="fedctl", description="Server-side apply field manager.")
    request_timeout: float = Field(default=10.0, gt=0, description="Seconds per member call.")
    workers: int = Field(default=32, ge=1, description="Workloads converged at once.")
    gc_interval: float = Field(
        default=60.0,
        ge=0,
        description="Seconds between passes deleting member copies nothing wants (a deposed"
        " leader's late apply) and namespaces fedctl created that nothing of its uses any"
        " more; 0 runs the pass only at start-up.",
    )
    status_coalesce: float = Field(
        default=0.2,
        ge=0,
        description="Seconds a member status change waits so a burst becomes one registry write.",
    )


class FailoverSettings(_Group):
    """Taints, eviction and graceful eviction."""

    eviction_grace: float = Field(
        default=30.0, ge=0, description="Seconds NotReady before NoSchedule becomes NoExecute."
    )
    graceful_timeout: float = Field(
        default=600.0,
        gt=0,
        description="Seconds an evicted copy is kept waiting for the new (a last copy, its"
        " workload placed nowhere else, stays past it on a member that answers), and at"
        " least how long application failover keeps the workload off the member it failed on.",
    )
    eviction_rate: float = Field(default=10.0, gt=0, description="Evictions per second, healthy.")
    eviction_burst: int = Field(
        default=200, ge=1, description="Evictions allowed at once while the fleet is healthy."
    )
    secondary_eviction_rate: float = Field(
        default=0.3, ge=0, description="Evictions per second when much of the fleet is unhealthy."
    )
    unhealthy_threshold: float = Field(
        default=0.55, ge=0, le=1, description="Unhealthy fraction that slows eviction down."
    )
    lease_ttl: float = Field(default=15.0, gt=0, description="Leader lease TTL, seconds.")


class ApiSettings(_Group):
    """The REST API and dashboard."""

    listen: str = Field(default="127.0.0.1:8080", description="Address the API listens on.")
    max_body_bytes: int = Field(default=4 * 1024 * 1024, gt=0, description="Largest request.")
    max_object_bytes: int = Field(
        default=1536 * 1024 - 1024,
        gt=0,
        description="Largest object stored, bytes, key and encoding included: etcd's"
        " --max-request-bytes (1.5 MiB by default) less 1 KiB for the request around it."
        " An apply holding a larger object is refused whole, before anything is written;"
        " raise it only with etcd's.",
    )
    request_timeout: float = Field(default=30.0, gt=0, description="Seconds per request.")
    watch_write_timeout: float = Field(
        default=15.0,
        gt=0,
        description="Seconds a watch stream waits for its client to take the next event;"
        " past it the stream is closed, with a warning naming the client, and what was"
        " queued for it freed. A client that stopped reading held tens of MB meanwhile; a"
        " client closed so lists and watches again, as from the Kubernetes API server.",
    )
    watch_bookmark_interval: float = Field(
        default=30.0,
        gt=0,
        description="Seconds between the BOOKMARK events of a watch that asked for them"
        " (`allowWatchBookmarks=true`, as the dashboard does), sent however quiet the"
        " stream is, so a client can tell a quiet stream from a dead one: the dashboard"
        " takes about two and a half times this without a line as a stalled connection"
        " (one a NAT, load balancer or VPN keeps open but no longer carries) and watches"
        " again. The Kubernetes API server sends them about once a minute.",
    )
    watch_min_lifetime: float = Field(
        default=1800.0,
        gt=0,
        description="Seconds a watch without `timeoutSeconds` stays open at least: it ends"
        " between this and twice this (chosen at random, so the clients of a restart do"
        " not all come back at once), and its client lists and watches again, as"
        " kube-apiserver ends such watches after its --min-request-timeout (1800 s). A"
        " client that did not ask for bookmarks gets no line on a quiet stream, and this"
        " bounds how long a stalled connection can leave it unaware.",
    )
    readiness_timeout: float = Field(
        default=1.0,
        gt=0,
        description="Seconds `/readyz` waits for etcd's answer, in one try, before it"
        " answers 503 with the reason: well under a readiness probe's timeout"
        " (the shipped one waits 3 s), so the probe sees why.",
    )
    rate_limit: float = Field(default=200.0, gt=0, description="Requests per second per client.")
    rate_burst: int = Field(default=400, gt=0, description="Burst above the rate per client.")
    auth_failure_rate: float = Field(
        default=1.0,
        gt=0,
        description="Failed sign-ins (401) per second allowed from one client address; past"
        " the burst, its requests are answered 429 until the rate allows one again.",
    )
    auth_failure_burst: int = Field(
        default=20, gt=0, description="Failed sign-ins from one address before the rate holds."
    )


class Settings(_Group):
    """All groups; `Settings()` gives the documented defaults."""

    etcd: EtcdSettings = EtcdSettings()
    monitor: MonitorSettings = MonitorSettings()
    member: MemberSettings = MemberSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    propagation: PropagationSettings = PropagationSettings()
    failover: FailoverSettings = FailoverSettings()
    api: ApiSettings = ApiSettings()


def from_env(environ: dict[str, str] | None = None, **overrides: Any) -> Settings:
    """Defaults, then `FEDCTL_<GROUP>__<FIELD>` variables, then explicit overrides.

    Lists are comma-separated (`FEDCTL_ETCD__ENDPOINTS=http://a:2379,http://b:2379`).
    """
    env = os.environ if environ is None else environ
    data: dict[str, dict[str, Any]] = {}
    for key, value in env.items():
        if not key.startswith("FEDCTL_") or "__" not in key:
            continue
        group, _, field = key[len("FEDCTL_") :].lower().partition("__")
        if group in Settings.model_fields:
            parsed: Any = value.split(",") if field == "endpoints" else value
            data.setdefault(group, {})[field] = parsed
    for group, values in overrides.items():
        data.setdefault(group, {}).update(values)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = [
            f"FEDCTL_{str(e['loc'][0]).upper()}__{str(e['loc'][1]).upper()}: {e['msg']}"
            if len(e["loc"]) >= 2
            else f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
            for e in exc.errors()
        ]
        raise errors.Invalid("invalid settings: " + "; ".join(problems), findings=problems) from exc
