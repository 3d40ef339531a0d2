"""`fedctl up`: the whole federation on one machine — etcd, a simulated fleet, the controller.

Role: what `make demo` runs and what a platform engineer uses to rehearse. It starts an
embedded etcd (data under `.fedctl/`), the simulated members from a profile (as a child
`fedctl sim up` process, so the controller reaches them only over HTTP, exactly like real
clusters), and the controller with its API; then applies `policies/examples/` (its members
first, the rest once they are Ready: `--join-timeout`) and prints where to look. Ctrl-C
stops everything it started, in reverse order, leaving no process. An etcd that dies is
started again with its data; a simulated fleet that dies ends the run (exit 1), saying
so. With `--tour` (what `make demo` runs) the scripted tour of `federation.cli.tour`
follows. With `--etcd URL --kubeconfig FILE` it uses an existing etcd and real members
instead. The API requires a token even here: an admin token is generated once into
`.fedctl/tokens.yaml` (mode 0600) and printed, and member kubeconfigs are sealed in etcd
with a key generated into `.fedctl/encryption.key`, and the API's audit trail is appended
to `.fedctl/audit.log` (`--audit-log`), so the demo runs as production would.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import datetime as _dt
    from collections.abc import Iterable

    from federation.cli import controller_cmd as controller_cmd_mod
    from federation.cli.client import ApiClient
    from federation.registry import embedded
    from policies.models.base import KubeObject
    from policies.models.cluster import ClusterStatus

__all__ = ["register"]

_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PROFILE = _ROOT / "clusters" / "sim" / "profiles" / "demo.yaml"
DEFAULT_EXAMPLES = _ROOT / "policies" / "examples"


def register(sub: Any) -> None:
    up = sub.add_parser("up", help="run etcd, a simulated fleet and the controller locally")
    up.add_argument("--profile", default=str(DEFAULT_PROFILE), help="simulated fleet profile")
    up.add_argument("--data-dir", default=".fedctl", help="state directory (default %(default)s)")
    up.add_argument("--listen", default="127.0.0.1:8080", help="API and dashboard address")
    up.add_argument("--examples", default=str(DEFAULT_EXAMPLES), help="objects to apply at start")
    up.add_argument("--speed", type=float, default=1.0, help="simulated seconds per real second")
    up.add_argument(
        "--kubeconfig", default=None, help="use real members from this kubeconfig (no simulator)"
    )
    up.add_argument(
        "--etcd",
        "--use-etcd",
        dest="use_etcd",
        default=None,
        help="use this etcd URL instead of starting one",
    )
    up.add_argument(
        "--join-timeout",
        type=float,
        default=60.0,
        help="seconds to wait for the members to be Ready before applying the rest"
        " (default %(default)s)",
    )
    up.add_argument(
        "--audit-log",
        default=None,
        help="append the API's audit trail to this file (default DATA_DIR/audit.log)",
    )
    up.add_argument("--fresh", action="store_true", help="wipe the data directory first")
    up.add_argument(
        "--tour", action="store_true", help="then run the scripted tour (what `make demo` shows)"
    )
    up.set_defaults(func=_up)


def _step(n: int, total: int, text: str) -> None:
    print(f"[{n}/{total}] {text}", flush=True)


async def _wait_file(path: Path, proc: subprocess.Popen[bytes], *, timeout: float) -> None:
    from federation import clock

    deadline = clock.real.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise RuntimeError(f"the simulated fleet exited with code {proc.returncode}")
        if clock.real.monotonic() > deadline:
            raise RuntimeError(f"the simulated fleet did not start within {timeout:g}s")
        await clock.real.sleep(0.1)


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


async def _keep(
    etcd: embedded.EmbeddedEtcd | None, fleet: subprocess.Popen[bytes] | None, *, data: Path
) -> str:
    """Start etcd again whenever it exits; return why once the simulated fleet has exited.

    Before, an etcd killed (by the OOM killer, or a user's `kill`) left every command
    failing and the log repeating watch reconnects until Ctrl-C. Its data directory holds
    everything, so a restart on the same port loses nothing and the controller reconnects
    by itself. The fleet keeps its members in memory, and a new one would be empty members
    under the old names: that ends `fedctl up`, saying so."""
    from federation import clock

    while True:
        await clock.real.sleep(1.0)
        if etcd is not None and (code := etcd.exit_code()) is not None:
            print(
                f"fedctl up: etcd exited with code {code}; starting it again at {etcd.url}"
                f" (its data is kept; log: {data / 'etcd' / 'etcd.log'})",
                flush=True,
            )
            await asyncio.to_thread(etcd.start)
            print("fedctl up: etcd is back", flush=True)
        if fleet is not None and fleet.poll() is not None:
            return (
                f"the simulated fleet exited with code {fleet.returncode}"
                f" (see {data / 'fleet.log'}); stopping"
            )


async def _up(args: argparse.Namespace) -> int:
    import shutil

    from federation.registry import embedded

    data = Path(args.data_dir).resolve()
    _stop_leftovers(data)  # before --fresh wipes the pid files that name them
    if args.fresh and data.exists():
        shutil.rmtree(data)
    data.mkdir(parents=True, exist_ok=True)
    if args.tour:
        from federation.cli import tour

        for changed in tour.prepare_env(os.environ):  # read by the controller's settings
            print(f"tour: {changed} (fast failover for the drill)", flush=True)
    etcd: embedded.EmbeddedEtcd | None = None
    fleet: subprocess.Popen[bytes] | None = None
    try:
        if args.use_etcd:
            etcd_url = args.use_etcd
            _step(1, 5, f"using etcd at {etcd_url}")
        else:
            _step(1, 5, "starting etcd")
            etcd = embedded.EmbeddedEtcd(data_dir=data / "etcd")
            etcd.start()
            etcd_url = etcd.url
        if args.kubeconfig:
            kubeconfig = Path(args.kubeconfig).resolve()
            _step(2, 5, f"using members from {kubeconfig}")
        else:
            kubeconfig = data / "fleet.kubeconfig"
            state = kubeconfig.with_name(kubeconfig.name + ".fleet.json")
            state.unlink(missing_ok=True)
            _step(2, 5, f"starting the simulated fleet from {args.profile}")
            fleet = subprocess.Popen(
                [sys.executable, "-m", "federation.cli.main", "sim", "up",
                 "--profile", args.profile, "--kubeconfig", str(kubeconfig),
                 "--speed", str(args.speed)],
                stdout=(data / "fleet.log").open("ab"), stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
            embedded.write_pid(data / "fleet.pid", fleet.pid)
            await _wait_file(state, fleet, timeout=60)
        keeper = asyncio.create_task(_keep(etcd, fleet, data=data))
        keeper.add_done_callback(_stop_on_loss)
        try:
            code = await _run_controller(args, etcd_url=etcd_url, kubeconfig=kubeconfig)
        finally:
            keeper.cancel()
        lost = keeper.done() and not keeper.cancelled()  # then it said why, and stopped us
        return 1 if lost else code
    finally:
        _stop(fleet)
        if fleet is not None:
            (data / "fleet.pid").unlink(missing_ok=True)
        if etcd is not None:
            etcd.stop()
        print("fedctl up: stopped everything it started", flush=True)


def _stop_leftovers(data: Path) -> None:
    """Stop the etcd and simulated fleet a `fedctl up` on `data` left when it was killed
    (SIGKILL, the OOM killer): each runs in a session of its own, so it outlived its
    parent, holding the data directory (`embedded.stop_leftover`). Refuses, naming them,
    while the run that started them still runs."""
    from federation.registry import embedded

    embedded.EmbeddedEtcd(data_dir=data / "etcd").stop_leftover()
    kubeconfig = data / "fleet.kubeconfig"
    embedded.stop_leftover(
        data / "fleet.pid", what="simulated fleet", marks=(" sim up ", f"{kubeconfig} ")
    )


def _stop_on_loss(keeper: asyncio.Task[str]) -> None:
    """A lost fleet, or an etcd that will not start again, stops everything as Ctrl-C
    does (through the controller's signal handler)."""
    if keeper.cancelled():
        return
    failed = keeper.exception()  # etcd would not start again, say
    print(f"fedctl up: {failed if failed is not None else keeper.result()}", flush=True)
    os.kill(os.getpid(), signal.SIGTERM)


def _admin_token(data: Path) -> tuple[Path, str]:
    """The tokens file under `data` with one admin token, made on first use."""
    import secrets as random_secrets

    from ruamel.yaml import YAML

    path = data / "tokens.yaml"
    if path.exists():
        doc = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8")) or {}
        for item in doc.get("tokens") or []:
            if "admin" in (item.get("groups") or []):
                return path, str(item["token"])
    token = random_secrets.token_urlsafe(32)
    _write_private(
        path,
        "# fedctl API tokens: token -> user, groups (see federation/api/auth.py)\n"
        f"tokens:\n  - token: {token}\n    user: admin\n    groups: [admin]\n",
    )
    return path, token


def _write_private(path: Path, text: str) -> None:
    """Write a secret file readable by its owner only, from the first byte on."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def _encryption_key(data: Path) -> Path:
    """The key file sealing member kubeconfigs, made on first use."""
    from federation import secrets

    path = data / "encryption.key"
    if not path.exists():
        _write_private(path, secrets.generate_key() + "\n")
    return path


def _security(args: argparse.Namespace, *, data: Path, tokens: Path) -> controller_cmd_mod.Security:
    """The controller's security flags under `fedctl up`: its tokens, its sealing key and
    an audit trail in the data directory (`--audit-log` elsewhere), so the demo records
    every mutation as production would, whatever the log level."""
    from federation.cli import controller_cmd

    return controller_cmd.Security(
        tokens=str(tokens),
        encryption_key_file=str(_encryption_key(data)),
        audit_log=args.audit_log or str(data / "audit.log"),
    )


async def _run_controller(args: argparse.Namespace, *, etcd_url: str, kubeconfig: Path) -> int:
    from federation import clock
    from federation.cli import controller_cmd

    data = Path(args.data_dir).resolve()
    tokens, token = _admin_token(data)
    security = _security(args, data=data, tokens=tokens)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    ready = asyncio.Event()
    started = clock.real.now()  # a member is ready once this controller has seen it so
    controller = asyncio.create_task(
        controller_cmd.run_controller(
            etcd=etcd_url,
            listen=args.listen,
            kubeconfig=str(kubeconfig),
            stop=stop,
            ready=ready,
            security=security,
            etcd_patience=_etcd_patience(),
        )
    )
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait({controller, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if controller.done():
        waiter.cancel()
        return controller.result()
    _step(3, 5, f"controller up at http://{args.listen}")
    server = f"http://{args.listen}"
    await _apply_examples(
        server, args.examples, token=token, join_timeout=args.join_timeout, since=started
    )
    await _dump(etcd_url)
    context = _a_context(kubeconfig)
    kubectl = (
        f"  kubectl --kubeconfig {kubeconfig} get nodes --context {context}\n" if context else ""
    )
    print(
        f"\nfedctl is up.\n"
        f"  API and dashboard:  {server}/\n"
        f"  registry (etcd):    {etcd_url}\n"
        f"  members kubeconfig: {kubeconfig}\n"
        f"  admin token:        {token}  (in {tokens})\n"
        f"\nTry:\n"
        f"  export FEDCTL_SERVER={server}\n"
        f"  export FEDCTL_TOKEN={token}\n"
        f"  export FEDCTL_ETCD={etcd_url} KUBECONFIG={kubeconfig}  # drill, registry\n"
        f"  fedctl get clusters\n"
        f"  fedctl get queues\n"
        f"  fedctl cost --by region\n"
        f"{kubectl}"
        f"\nCtrl-C stops everything.",
        flush=True,
    )
    if not args.tour:
        return await controller
    return await _with_tour(args, controller, etcd_url=etcd_url, kubeconfig=kubeconfig, token=token)


def _etcd_patience() -> float:
    """How long `fedctl up` waits for an etcd that does not answer at start: one registry
    call's deadline (`FEDCTL_ETCD__RETRY_DEADLINE`), as a person at a terminal who gave a
    wrong `--etcd` URL should hear so soon; its own etcd is ready before it asks."""
    from federation import settings

    return settings.from_env(None).etcd.retry_deadline


async def _with_tour(
    args: argparse.Namespace,
    controller: asyncio.Task[int],
    *,
    etcd_url: str,
    kubeconfig: Path,
    token: str,
) -> int:
    """Run the tour beside the controller; Ctrl-C during the tour stops both."""
    from federation.cli import tour

    server = f"http://{args.listen}"
    guide = tour.Tour(
        server=server,
        token=token,
        etcd=etcd_url,
        kubeconfig=kubeconfig,
        data=Path(args.data_dir).resolve(),
    )

    async def run_tour() -> None:
        await guide.run()
        guide.closing(dashboard=f"{server}/", token=token)

    touring = asyncio.create_task(run_tour())
    await asyncio.wait({controller, touring}, return_when=asyncio.FIRST_COMPLETED)
    if not touring.done():
        touring.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await touring
    return await controller


async def _apply_examples(
    server: str, examples: str, *, token: str, join_timeout: float, since: _dt.datetime
) -> None:
    """Apply the members first and the rest once they are Ready and failover has lifted
    their joining taints, so the first placement sees the whole fleet. Work applied
    earlier would get a late member's share only when that member's taint goes; a member
    that is not ready in time is named and the rest applied anyway. Ready counts only as
    probed `since` this controller started (`_why_not_ready`)."""
    from federation.cli import client
    from policies import loading

    result = loading.load_paths([examples])
    for finding in result.errors:
        print(str(finding), file=sys.stderr)
    members = [o.model for o in result.objects if o.model.kind == "Cluster"]
    rest = [o.model for o in result.objects if o.model.kind != "Cluster"]
    async with client.ApiClient(server, token=token) as api:
        if members:
            plural = "s" if len(members) != 1 else ""
            _step(4, 5, f"joining {len(members)} member{plural} from {examples}")
            await _apply(api, members)
            names = [m.metadata.name for m in members]
            await _await_members(api, names, timeout=join_timeout, since=since)
        else:
            _step(4, 5, f"no Cluster in {examples}: members join with `fedctl cluster join`")
        _step(5, 5, f"applying the rest of {examples}")
        await _apply(api, rest)


async def _apply(api: ApiClient, objects: list[KubeObject]) -> None:
    answer = await api.request("POST", "apply", body={"items": [o.to_wire() for o in objects]})
    outcomes: dict[str, int] = {}
    for item in answer["results"]:
        outcomes[item["result"]] = outcomes.get(item["result"], 0) + 1
    print("      " + ", ".join(f"{n} {what}" for what, n in sorted(outcomes.items())), flush=True)


async def _await_members(
    api: ApiClient, names: list[str], *, timeout: float, since: _dt.datetime
) -> None:
    """Wait, bounded, until every named member is Ready without a health taint, printing
    each change in the count."""
    from federation import clock

    waiting = await _not_ready(api, names, since=since)
    start = clock.real.monotonic()
    deadline = start + timeout
    shown = -1
    while waiting and clock.real.monotonic() < deadline:
        if len(waiting) != shown:
            shown = len(waiting)
            print(f"      {len(names) - shown}/{len(names)} members ready", flush=True)
        await clock.real.sleep(0.5)
        waiting = await _not_ready(api, names, since=since)
    if not waiting:
        took = clock.real.monotonic() - start
        print(f"      {len(names)}/{len(names)} members ready ({took:.1f}s)", flush=True)
        return
    print(
        f"      not ready after {timeout:g}s: "
        + "; ".join(f"{name} ({why})" for name, why in sorted(waiting.items()))
        + ". Applying the rest: those members get their share once ready.",
        flush=True,
    )


async def _not_ready(api: ApiClient, names: list[str], *, since: _dt.datetime) -> dict[str, str]:
    """Each named member not yet ready for work, with why."""
    from policies.models.cluster import ClusterStatus

    listed = await api.request("GET", "clusters")
    statuses = {doc["metadata"]["name"]: doc.get("status") for doc in listed["items"]}
    out: dict[str, str] = {}
    for name in names:
        raw = statuses.get(name)
        status = ClusterStatus.model_validate(raw) if raw else None
        if (why := _why_not_ready(status, since=since)) is not None:
            out[name] = why
    return out


def _why_not_ready(status: ClusterStatus | None, *, since: _dt.datetime) -> str | None:
    """Why a member with `status` is not ready for work, or None when it is: Ready, by a
    probe of this controller's (at or after `since`), and without a health taint. A
    registry from elsewhere (a restored snapshot, `--etcd`) holds Ready conditions written
    for another fleet: "8/8 members ready (0.0s)" was read from them before any member of
    this one was probed, and a member that failed to start counted as ready."""
    from policies.models.cluster import HEALTH_TAINTS

    if status is None:
        return "no status yet"
    cond = status.condition("Ready")
    if cond is None:
        return "no Ready condition"
    if cond.last_probe_time is None or cond.last_probe_time < since:
        return "not probed yet by this controller"
    if not status.ready():
        return f"Ready={cond.status}: {cond.reason}"
    if any(t.key in HEALTH_TAINTS for t in status.taints):
        return "tainted " + ",".join(t.key for t in status.taints if t.key in HEALTH_TAINTS)
    return None


async def _dump(etcd_url: str) -> None:
    """One line of what the registry holds, by kind: a key per line was one line per
    member, 144 lines of noise at a real fleet's size."""
    from federation.registry import keys
    from federation.registry.etcd import EtcdStore
    from federation.settings import EtcdSettings

    store = EtcdStore(EtcdSettings(endpoints=(etcd_url,)))
    await store.connect()
    try:
        listed = await store.list(keys.ROOT + "/")
    finally:
        await store.close()
    print(f"\nregistry at revision {listed.revision}: {_by_prefix(k.key for k in listed.items)}")


def _by_prefix(names: Iterable[str]) -> str:
    """`8 clusters, 25 workloads, ...`: how many keys under each top-level prefix."""
    counts: dict[str, int] = {}
    for name in names:
        top = name.removeprefix("/").split("/")[1] if name.count("/") > 1 else name
        counts[top] = counts.get(top, 0) + 1
    return ", ".join(f"{n} {top}" for top, n in sorted(counts.items())) or "empty"


def _a_context(kubeconfig: Path) -> str | None:
    """A context of the members' kubeconfig, for the kubectl hint: the fleet started may
    be any profile, and a hard-coded name was one a custom profile lacks."""
    from ruamel.yaml import YAML

    try:
        doc = YAML(typ="safe", pure=True).load(kubeconfig.read_text(encoding="utf-8")) or {}
    except (OSError, ValueError):
        return None
    names = [str(c.get("name")) for c in doc.get("contexts") or [] if c.get("name")]
    current = doc.get("current-context")
    return str(current) if current in names else (names[0] if names else None)
