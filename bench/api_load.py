"""API overload on loopback: many concurrent clients against the secured controller API.

The controller runs in its own process (authentication, audit trail, rate limits on, real
etcd behind it, as `fedctl controller` serves it); this process runs `--clients` concurrent
clients for `--seconds`, each a loop of authenticated GETs of clusters, queues and single
objects, never waiting between requests (the worst client there is; with `--polite` a
client waits the `Retry-After` it is given, as `fedctl` clients should). The tokens are spread
over `--users` users, each with its own rate-limit bucket. What must hold: every answer is a
200, or a 429 once the limiter's budget is spent — no 5xx, no timeouts, no resets. Prints
one JSON document with counts by status, errors, throughput and latency percentiles.

    .venv/bin/python bench/api_load.py [--clients 1000] [--seconds 30] [--users 10] [--polite]

The default per-user budget (2/s, burst 5, ten users) is deliberately below what one
controller process on a small machine serves, so the run shows load being shed as 429s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

API = "/apis/fedctl.io/v1alpha1"
ROOT = Path(__file__).resolve().parents[1]


def pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


# ---------------------------------------------------------------- server (child process)


async def serve(args: argparse.Namespace) -> None:
    from aiohttp import web

    from federation.api import app as api_app
    from federation.api import audit, auth
    from federation.registry.etcd import EtcdStore
    from federation.settings import ApiSettings, EtcdSettings

    store = EtcdStore(EtcdSettings(endpoints=(args.etcd,)))
    await store.connect()
    app = api_app.build_app(
        store,
        settings=ApiSettings(rate_limit=args.rate, rate_burst=args.burst),
        auth=auth.Authenticator(auth.TokenTable.from_file(args.tokens)),
        audit=audit.AuditLog(args.audit_log),
    )
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", args.port, backlog=2048).start()
    print("ready", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
        await store.close()


# ---------------------------------------------------------------- load (this process)


async def seed(base: str, token: str) -> None:
    from policies import loading

    loaded = loading.load_paths([ROOT / "policies" / "examples"])
    items = [o.model.to_wire() for o in loaded.objects]
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession(headers=headers) as session,
        session.post(f"{base}{API}/apply", json={"items": items}) as resp,
    ):
        if resp.status != 200:
            raise SystemExit(f"seeding failed: {resp.status} {await resp.text()}")


async def client(
    session: aiohttp.ClientSession,
    base: str,
    token: str,
    *,
    until: float,
    paths: list[str],
    record: list[tuple[int, float]],
    errors: Counter[str],
    polite: bool,
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    i = 0
    while time.perf_counter() < until:
        path = paths[i % len(paths)]
        i += 1
        began = time.perf_counter()
        try:
            async with session.get(base + path, headers=headers) as resp:
                await resp.read()
                record.append((resp.status, time.perf_counter() - began))
                wait = float(resp.headers.get("Retry-After", 0)) if resp.status == 429 else 0
        except (aiohttp.ClientError, TimeoutError) as exc:
            errors[type(exc).__name__] += 1
            continue
        if polite and wait:
            await asyncio.sleep(min(wait, max(0.0, until - time.perf_counter())))


async def load(args: argparse.Namespace, base: str, tokens: list[str]) -> dict[str, Any]:
    paths = [f"{API}/clusters", f"{API}/queues", f"{API}/clusters/us-east-a100"]
    record: list[tuple[int, float]] = []
    errors: Counter[str] = Counter()
    timeout = aiohttp.ClientTimeout(total=args.request_timeout)
    connector = aiohttp.TCPConnector(limit=args.clients, limit_per_host=args.clients)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        began = time.perf_counter()
        until = began + args.seconds
        async with asyncio.TaskGroup() as tasks:
            for n in range(args.clients):
                tasks.create_task(
                    client(session, base, tokens[n % len(tokens)], until=until, paths=paths,
                           record=record, errors=errors, polite=args.polite)
                )  # fmt: skip
        elapsed = time.perf_counter() - began
    by_status = Counter(code for code, _ in record)
    ok = [s for code, s in record if code == 200]
    everything = [s for _, s in record]
    return {
        "clients": args.clients,
        "users": args.users,
        "seconds": round(elapsed, 2),
        "rate_limit_per_user": args.rate,
        "burst_per_user": args.burst,
        "clients_honour_retry_after": args.polite,
        "requests": len(record),
        "by_status": {str(k): v for k, v in sorted(by_status.items())},
        "errors": dict(errors),
        "only_200_and_429": set(by_status) <= {200, 429} and not errors,
        "throughput_rps": round(len(record) / elapsed, 1),
        "ok_rps": round(len(ok) / elapsed, 1),
        "latency_ms": {
            "all": {f"p{p}": round(pct(everything, p) * 1000, 1) for p in (50, 90, 99)},
            "ok": {f"p{p}": round(pct(ok, p) * 1000, 1) for p in (50, 90, 99)},
            "max": round(max(everything, default=0.0) * 1000, 1),
        },
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    import secrets

    from federation.registry import embedded

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tokens = [secrets.token_urlsafe(24) for _ in range(args.users)]
        lines = [
            f"  - {{token: {t}, user: user{i}, groups: [admin]}}" for i, t in enumerate(tokens)
        ]
        (work / "tokens.yaml").write_text("tokens:\n" + "\n".join(lines) + "\n")
        etcd = embedded.EmbeddedEtcd(data_dir=work / "etcd")
        etcd.start()
        port = embedded.free_port()
        server = subprocess.Popen(  # noqa: ASYNC220 - started once, before any load
            [sys.executable, __file__, "--serve", "--etcd", etcd.url, "--port", str(port),
             "--tokens", str(work / "tokens.yaml"), "--audit-log", str(work / "audit.log"),
             "--rate", str(args.rate), "--burst", str(args.burst)],
            stdout=subprocess.PIPE, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        try:
            assert server.stdout is not None
            if server.stdout.readline().strip() != b"ready":
                raise SystemExit("the API server did not start")
            base = f"http://127.0.0.1:{port}"
            await seed(base, tokens[0])
            return await load(args, base, tokens)
        finally:
            server.terminate()
            server.wait(timeout=10)
            etcd.stop()


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--users", type=int, default=10, help="distinct tokens, one bucket each")
    p.add_argument("--rate", type=float, default=2.0, help="requests/s per user")
    p.add_argument("--burst", type=int, default=5, help="burst per user")
    p.add_argument("--polite", action="store_true", help="clients wait Retry-After after a 429")
    p.add_argument("--request-timeout", type=float, default=30.0)
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--etcd", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--tokens", help=argparse.SUPPRESS)
    p.add_argument("--audit-log", help=argparse.SUPPRESS)
    return p.parse_args()


if __name__ == "__main__":
    arguments = parse()
    if arguments.serve:
        asyncio.run(serve(arguments))
    else:
        print(json.dumps(asyncio.run(main(arguments)), indent=2))
