"""Fault injection for drills: break one member on purpose, then mend it.

Fed by the fleet state file `<kubeconfig>.fleet.json` that `fedctl sim up` writes (a
simulated member's admin URL; federation never imports the simulator, it reads the file)
and by the registry (the member's Cluster object, for the taint); feeds
`federation.failover.drills.run` with the inject/heal pair, for `fedctl drill run` and the
controller's drill API alike, so both break and mend a member the same way.

Why a taint for real members: it is the only fault that is safe on a production cluster
(nothing is broken, work is simply moved away) and it is removed when the drill ends. A
real member asked for any other fault gets the taint instead, and `Injector.fault` says so.

Errors: a simulator that does not answer, or refuses the fault, is `errors.Unavailable`; a
taint on a cluster that is not registered is `errors.NotFound`. The HTTP client and the
registry codecs are imported where used: `fedctl` imports this module for every command
line it parses (the fault names are its `--fault` choices), and must start quickly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from federation import clock as clock_mod
from federation import errors

if TYPE_CHECKING:
    from federation.registry import store as st
    from policies.models.base import KubeObject

__all__ = [
    "BACKSTOP",
    "DRILL_TAINT",
    "FAULTS",
    "Injector",
    "admin_url",
    "drill_taint_left",
    "injector",
    "set_taint",
]

FAULTS = ("down", "blackhole", "slow", "errors", "taint")
DRILL_TAINT = "fedctl.io/drill"
_ADMIN_TIMEOUT = 10.0
BACKSTOP = 30.0
"""Seconds past its hold a fault ends by itself, though nothing heals it: a drill's process
that dies (SIGKILL, a leader lost with the drill it ran) left its member broken for good.
The simulator is told the fault's end with the fault (`for`); the drill taint carries it as
its value (Unix seconds), and failover lifts a drill taint past it (`drill_taint_left`)."""


def drill_taint_left(value: str, *, now: float) -> float | None:
    """Seconds until a drill taint of `value` expires (<= 0: expired), or None when it
    carries no end (a taint set by hand, or by an older release: left alone)."""
    try:
        until = float(value)
    except ValueError:
        return None
    return until - now


def admin_url(kubeconfig: str, cluster: str) -> str | None:
    """The simulator admin URL of `cluster`, or None when it is not a simulated member."""
    state_file = Path(kubeconfig + ".fleet.json")
    if not state_file.exists():
        return None
    member = json.loads(state_file.read_text()).get("clusters", {}).get(cluster)
    return str(member["adminUrl"]) if member and member.get("adminUrl") else None


async def _post(url: str, body: dict[str, Any]) -> None:
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=_ADMIN_TIMEOUT)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(url, json=body) as resp,
        ):
            if resp.status != 200:
                raise errors.Unavailable(
                    f"{url} answered {resp.status}: {await resp.text()}", endpoint=url
                )
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise errors.Unavailable(f"{url} did not answer: {exc!r}", endpoint=url) from exc


async def set_taint(
    store: st.Store,
    cluster: str,
    *,
    on: bool,
    clock: clock_mod.Clock = clock_mod.real,
    hold: float | None = None,
) -> None:
    """Add (or remove) the drill's NoExecute taint on the member's Cluster object; one
    added for `hold` seconds carries its end, `BACKSTOP` later, as its value."""
    from federation.registry import codec, keys, objects
    from policies.models.cluster import Cluster, Taint

    typed = codec.TypedStore(store, objects.ObjectCodec())
    key = keys.cluster_key(cluster)

    def change(current: KubeObject | None) -> KubeObject:
        if not isinstance(current, Cluster):
            raise errors.NotFound(key)
        kept = [t for t in current.spec.taints if t.key != DRILL_TAINT]
        if on:  # with its time, or a toleration's tolerationSeconds would never run out
            now = clock.now()
            until = "" if hold is None else str(int(now.timestamp() + hold + BACKSTOP))
            kept.append(Taint(key=DRILL_TAINT, value=until, effect="NoExecute", time_added=now))
        return current.model_copy(update={"spec": current.spec.model_copy(update={"taints": kept})})

    await typed.mutate(key, change)


@dataclass(frozen=True, slots=True)
class Injector:
    """How one drill breaks and mends one member; `fault` is what is really injected."""

    store: st.Store
    cluster: str
    fault: str
    requested: str
    url: str | None = None
    hold: float | None = None
    """How long the drill holds the fault: it ends by itself `BACKSTOP` after that."""

    @property
    def fell_back(self) -> bool:
        """True when a real member was asked for a fault only a simulator can play."""
        return self.fault != self.requested

    async def inject(self) -> None:
        if self.fault == "taint" or self.url is None:
            await set_taint(self.store, self.cluster, on=True, hold=self.hold)
        else:
            body: dict[str, Any] = {"mode": self.fault}
            if self.hold is not None:
                body["for"] = self.hold + BACKSTOP
            await _post(f"{self.url}/fault", body)

    async def heal(self) -> None:
        if self.fault == "taint" or self.url is None:
            await set_taint(self.store, self.cluster, on=False)
        else:
            await _post(f"{self.url}/heal", {})


TAINT_LIKE = frozenset({"down", "blackhole", "taint"})
"""Faults the drill taint may stand in for: the member is lost and its work moves away."""


def injector(
    store: st.Store,
    *,
    cluster: str,
    fault: str,
    kubeconfig: str | None,
    hold: float | None = None,
) -> Injector:
    """The injector for `fault` on `cluster`: the simulator's fault API when the fleet state
    file names the member, else the NoExecute taint; held `hold` seconds (`BACKSTOP`)."""
    if fault not in FAULTS:
        raise errors.Invalid(f"fault: {fault!r} is not one of {', '.join(FAULTS)}")
    url = admin_url(kubeconfig, cluster) if kubeconfig else None
    if url is None and fault not in TAINT_LIKE:
        raise errors.Invalid(
            f"fault: {fault} needs the simulator's fault API of {cluster}, and none was found"
            " (no fleet kubeconfig names it). A member that is only degraded keeps its work;"
            " the drill taint would evict it instead, so no drill was started: use fault taint"
            " to rehearse losing the member"
        )
    actual = fault if fault == "taint" or url is not None else "taint"
    return Injector(store, cluster, actual, fault, url, hold)
