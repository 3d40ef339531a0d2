"""`fedctl controller`: the long-running process that serves the API and runs the loops.

Every component starts under the runtime supervisor; SIGINT and SIGTERM stop them in
reverse order so the API stops accepting writes before the loops behind it go away.
Security is opt-in per flag: `--tokens` turns on authentication, `--tls-cert/--tls-key`
serve HTTPS, `--client-ca` accepts client certificates and, as kube-apiserver's
`--client-ca-file`, turns authentication on by itself (a caller with neither a
certificate nor a token is 401; without either flag the API trusts everyone and says so
at start-up, loudly when it listens beyond loopback), `--audit-log` writes the
audit trail to a file, and `--encryption-key-file` seals member kubeconfigs in etcd.
`--insecure-kubeconfig-exec` lets the `--kubeconfig` file run credential plugins, which
no kubeconfig reaching the controller through the API or the registry may
(`clusters.kube.kubeconfig`).
Several replicas may run on one etcd: each serves the API, the one holding the leader lease
(`--lease-ttl`) runs the write loops (and the drills any replica is asked for: they reach it
through the registry), and every registry write of those loops is fenced on the leader key
so a deposed leader's late write is refused.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from federation import errors
from federation import settings as settings_mod

if TYPE_CHECKING:
    import ssl

    from aiohttp import web

    from federation.runtime.election import Election
    from federation.runtime.supervisor import Supervisor

__all__ = ["Security", "register", "serve"]

log = logging.getLogger(__name__)


def register(sub: Any) -> None:
    cmd = sub.add_parser("controller", help="run the federation controller and its REST API")
    cmd.add_argument(
        "--listen",
        default=settings_mod.ApiSettings().listen,
        help="HOST:PORT for the API and dashboard (default %(default)s)",
    )
    cmd.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG"),
        help="kubeconfig for members whose connection names only a context (env KUBECONFIG)",
    )
    cmd.add_argument(
        "--insecure-kubeconfig-exec",
        action="store_true",
        default=None,
        help="let the --kubeconfig file run credential plugins (exec, auth-provider): they"
        " run commands on this host; a Cluster's own kubeconfig never may"
        " (default: FEDCTL_MEMBER__INSECURE_KUBECONFIG_EXEC, else off)",
    )
    cmd.add_argument(
        "--lease-ttl",
        type=float,
        default=None,
        help="leader lease TTL in seconds: how soon a follower takes over from a dead leader"
        " (default: FEDCTL_FAILOVER__LEASE_TTL, else 15)",
    )
    cmd.add_argument("--tokens", default=None, help="tokens file (YAML or CSV); enables auth")
    cmd.add_argument("--tls-cert", default=None, help="PEM certificate to serve HTTPS with")
    cmd.add_argument("--tls-key", default=None, help="PEM private key for --tls-cert")
    cmd.add_argument("--client-ca", default=None, help="CA whose client certificates are accepted")
    cmd.add_argument("--audit-log", default=None, help="append the audit trail to this file")
    cmd.add_argument(
        "--encryption-key-file",
        default=None,
        help="key file sealing member kubeconfigs at rest (else env FEDCTL_ENCRYPTION_KEY)",
    )
    cmd.set_defaults(func=_run)


@dataclass(frozen=True, slots=True)
class Security:
    """The controller's security flags; all None is an open, plain-HTTP development API."""

    tokens: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    client_ca: str | None = None
    audit_log: str | None = None
    encryption_key_file: str | None = None


def split_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    return (host or "127.0.0.1").strip("[]"), int(port)


async def serve(
    app: web.Application,
    *,
    host: str,
    port: int,
    ready: asyncio.Event | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> None:
    """Serve `app` until cancelled; the supervisor owns this coroutine."""
    from aiohttp import web

    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
    try:
        await site.start()
    except OSError as exc:  # the address in use, say: one line, not a traceback
        await runner.cleanup()
        raise errors.Unavailable(
            f"cannot listen on {host}:{port}: {os.strerror(exc.errno) if exc.errno else exc}"
            " (is another fedctl up or controller running there? choose another address"
            " with --listen)"
        ) from exc
    scheme = "https" if ssl_context else "http"
    log.info("API listening on %s://%s:%d", scheme, host, port)
    print(f"fedctl controller: API on {scheme}://{host}:{port}", flush=True)
    if ready is not None:
        ready.set()
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


async def _run(args: argparse.Namespace) -> int:
    security = Security(
        tokens=args.tokens,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        client_ca=args.client_ca,
        audit_log=args.audit_log,
        encryption_key_file=args.encryption_key_file,
    )
    return await run_controller(
        etcd=args.etcd,
        listen=args.listen,
        kubeconfig=args.kubeconfig,
        security=security,
        lease_ttl=args.lease_ttl,
        kubeconfig_exec=args.insecure_kubeconfig_exec,
    )


def _api_security(security: Security) -> dict[str, Any]:
    """build_app keyword arguments and the TLS context for the flags given."""
    from federation import secrets
    from federation.api import audit, auth, tls

    if security.encryption_key_file:
        # The member connector opens sealed kubeconfigs with the key named here.
        os.environ[secrets.ENV_KEY_FILE] = os.path.abspath(security.encryption_key_file)
    if bool(security.tls_cert) != bool(security.tls_key):
        raise SystemExit("fedctl controller: --tls-cert and --tls-key go together")
    if security.client_ca and not security.tls_cert:
        raise SystemExit(
            "fedctl controller: --client-ca needs --tls-cert and --tls-key: client"
            " certificates are only presented over HTTPS"
        )
    # Either turns authentication on, as kube-apiserver's --client-ca-file does: a client
    # without a certificate (or a token) is 401, not trusted because no tokens were given.
    signing_in = security.tokens or security.client_ca
    table = auth.TokenTable.from_file(security.tokens) if security.tokens else auth.TokenTable()
    return {
        "auth": auth.Authenticator(table) if signing_in else None,
        "audit": audit.AuditLog(security.audit_log),
        "cipher": secrets.from_env(),
        "ssl_context": tls.server_context(
            security.tls_cert, security.tls_key, client_ca=security.client_ca
        )
        if security.tls_cert and security.tls_key
        else None,
    }


def _warn_open(host: str) -> None:
    """Say loudly that the API trusts every caller; the louder off this machine."""
    import ipaddress

    try:
        local = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = False
    if local:
        log.warning("API without authentication: every local caller is an admin (--tokens)")
        return
    log.warning(
        "API on %s WITHOUT AUTHENTICATION: anyone who can reach it is an admin of every"
        " member; give --tokens FILE or --client-ca (with --tls-cert/--tls-key)",
        host,
    )


def _settings(
    *, etcd: str, listen: str, lease_ttl: float | None, kubeconfig_exec: bool | None = None
) -> settings_mod.Settings:
    """The environment's settings with the command line's endpoints, address, lease and
    credential-plugin opt-in."""
    overrides: dict[str, Any] = {
        "etcd": {"endpoints": [e.strip() for e in etcd.split(",") if e.strip()]},
        "api": {"listen": listen},
    }
    if lease_ttl is not None:
        overrides["failover"] = {"lease_ttl": lease_ttl}
    if kubeconfig_exec is not None:
        overrides["member"] = {"insecure_kubeconfig_exec": kubeconfig_exec}
    return settings_mod.from_env(None, **overrides)


def _while_leader(
    supervisor: Supervisor,
    election: Election,
    name: str,
    build: Callable[[], Callable[[], Awaitable[None]]],
) -> None:
    """Run `build()()` under the supervisor each time this replica leads.

    A fresh component every term: a replica that leads again must not carry the caches
    (written revisions, status watches) of a term another leader followed."""

    async def term() -> None:
        await build()()

    supervisor.add(name, lambda: election.while_leader(name, term))


async def run_controller(
    *,
    etcd: str,
    listen: str,
    kubeconfig: str | None = None,
    stop: asyncio.Event | None = None,
    ready: asyncio.Event | None = None,
    security: Security | None = None,
    lease_ttl: float | None = None,
    kubeconfig_exec: bool | None = None,
    etcd_patience: float | None = None,
) -> int:
    """Run every controller component until `stop` (or SIGINT/SIGTERM when not given);
    `kubeconfig_exec` True lets the `kubeconfig` file run credential plugins (None: as
    the environment's settings say); `etcd_patience` bounds the wait for etcd at start
    (seconds; None: no bound, `EtcdStore.connect`)."""
    from federation import clock as clock_mod
    from federation.api import app as api_app
    from federation.api import metrics as metrics_mod
    from federation.failover.controller import FailoverController
    from federation.monitor.monitor import ClusterMonitor
    from federation.propagation.controller import Propagator
    from federation.registry.etcd import EtcdStore
    from federation.runtime.election import Election
    from federation.runtime.supervisor import Supervisor
    from federation.runtime.whatif import failback
    from federation.scheduler import plan, queue_view
    from federation.scheduler.loop import SchedulerLoop

    if kubeconfig:
        # Members whose connection names only a context are looked up in this file.
        os.environ["KUBECONFIG"] = kubeconfig

    settings = _settings(
        etcd=etcd, listen=listen, lease_ttl=lease_ttl, kubeconfig_exec=kubeconfig_exec
    )
    published = queue_view.Published()  # the leading scheduling loop's queue tally, for the API
    metrics = metrics_mod.Metrics(queue_view=published)
    store = EtcdStore(settings.etcd, observe=metrics.etcd_request)
    await store.connect(patience=etcd_patience)  # waits out an etcd restarting as we start
    host, port = split_listen(settings.api.listen)
    supervisor = Supervisor()
    extras = _api_security(security or Security())
    ssl_context = extras.pop("ssl_context")
    if extras["auth"] is None:
        _warn_open(host)
    # Every replica serves the API; only the elected leader runs the write loops.
    election = Election(store, ttl=settings.failover.lease_ttl, observe=metrics.set_leader)
    app = api_app.build_app(
        store,
        settings=settings.api,
        metrics=metrics,
        kubeconfig=kubeconfig,  # drills find a simulated member's fault API through it
        guards=election.guards,  # fences its leader's drills
        queue_view=published,
        scheduler=settings.scheduler,
        monitor=settings.monitor,  # what the drill form says a fault must outlast
        failover=settings.failover,
        **extras,
    )
    supervisor.add("metrics-cache", lambda: metrics.cache.run(store))
    supervisor.add("event-loop-lag", metrics.follow_loop_lag)
    supervisor.add(
        "api", lambda: serve(app, host=host, port=port, ready=ready, ssl_context=ssl_context)
    )
    supervisor.add("election", election.run)
    leading = functools.partial(_while_leader, supervisor, election)

    leading(
        "cluster-monitor",
        lambda: (
            ClusterMonitor(
                store,
                settings=settings.monitor,
                member_settings=settings.member,
                guards=election.guards,
            ).run
        ),
    )
    leading(
        "propagator",
        lambda: (
            Propagator(
                store,
                settings=settings.propagation,
                member_settings=settings.member,
                claim=plan.claim,
                guards=election.guards,
                failed=metrics.propagation_error,
                collected=metrics.gc_deleted,
            ).run
        ),
    )
    leading(
        "failover",
        lambda: (
            FailoverController(
                store,
                settings=settings.failover,
                member_settings=settings.member,
                claim=plan.claim,
                guards=election.guards,
                failback=failback(store, guards=election.guards, settings=settings.scheduler),
                metrics=metrics,
            ).run
        ),
    )
    leading("drills", lambda: app[api_app.DRILLS].lead)  # a drill asked of any replica
    leading(
        "scheduler",
        lambda: (
            SchedulerLoop(
                store,
                settings=settings.scheduler,
                clock=clock_mod.real,
                guards=election.guards,
                metrics=metrics,
                queue_view=published,
            ).run
        ),
    )
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    log.info("controller: API on http://%s:%d, registry %s", host, port, store.endpoint)
    try:
        await supervisor.run(stop)
    finally:
        extras["audit"].close()
        await store.close()
    return 0
