"""What a pod needs from its namespace before it can start, and what is missing of it.

Fed by `kubelet` (ConfigMaps, Secrets and the ServiceAccount, checked when a bound pod is
due to start) and by the scheduler step in `controllers` (PersistentVolumeClaims, checked
before a pod is placed); both read the objects the controllers' listener keeps
(`Context.peek`). The simulator started every pod whatever it referenced, so a Job whose
non-optional `envFrom` ConfigMap did not exist ran to Succeeded, and the failure that
propagating a workload's dependencies exists to prevent could never be seen.

What a real member does, and what is kept of it here:

    env / envFrom ConfigMap or Secret   kubelet: CreateContainerConfigError, retried
    configMap / secret / projected vol  kubelet: ContainerCreating, FailedMount, retried
    ServiceAccount                      admission refuses the pod; here it waits instead
                                        (reason CreateContainerConfigError), so the pod's
                                        owner is not left retrying creations
    persistentVolumeClaim volume        scheduler: Unschedulable, `persistentvolumeclaim
                                        "x" not found`

References marked `optional: true` never hold a pod back, as upstream. Only existence is
checked (a missing key in an existing ConfigMap is not), and the ServiceAccount `default`
(or none named) always counts as there: the simulator runs no controller that creates it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from clusters.sim.controllers_base import CLAIM, CONFIGMAP, SECRET, SERVICEACCOUNT, Context
from clusters.sim.resources import ResourceType

__all__ = ["Missing", "missing_claim", "missing_config"]

Obj = Mapping[str, Any]

_NAMES = {CONFIGMAP: "configmap", SECRET: "secret", SERVICEACCOUNT: "serviceaccount"}


@dataclass(frozen=True, slots=True)
class Missing:
    """The first thing a pod waits for, as the kubelet says it."""

    reason: str
    """The container's waiting reason: `CreateContainerConfigError` or `ContainerCreating`."""
    message: str
    """`configmap "app-config" not found`, as upstream words it."""
    event: str
    """The Event's reason (`Failed`, `FailedMount`) and its message follow upstream's."""
    event_message: str


def _spec(pod: Obj) -> Mapping[str, Any]:
    spec = pod.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _containers(pod: Obj) -> Iterator[Mapping[str, Any]]:
    spec = _spec(pod)
    for section in ("initContainers", "containers"):
        for c in spec.get(section) or ():
            if isinstance(c, Mapping):
                yield c


def _env_refs(pod: Obj) -> Iterator[tuple[ResourceType, str]]:
    """The non-optional ConfigMaps and Secrets the containers' environments read."""
    for c in _containers(pod):
        for env in c.get("env") or ():
            source = (env or {}).get("valueFrom") or {}
            for field, rt in (("configMapKeyRef", CONFIGMAP), ("secretKeyRef", SECRET)):
                ref = source.get(field)
                if isinstance(ref, Mapping) and ref.get("name") and not ref.get("optional"):
                    yield rt, str(ref["name"])
        for env_from in c.get("envFrom") or ():
            for field, rt in (("configMapRef", CONFIGMAP), ("secretRef", SECRET)):
                ref = (env_from or {}).get(field)
                if isinstance(ref, Mapping) and ref.get("name") and not ref.get("optional"):
                    yield rt, str(ref["name"])


def _volume_refs(pod: Obj) -> Iterator[tuple[str, ResourceType, str]]:
    """(volume, kind, name) of the non-optional ConfigMaps and Secrets mounted."""
    for vol in _spec(pod).get("volumes") or ():
        if not isinstance(vol, Mapping):
            continue
        name = str(vol.get("name", ""))
        cm, secret = vol.get("configMap"), vol.get("secret")
        if isinstance(cm, Mapping) and cm.get("name") and not cm.get("optional"):
            yield name, CONFIGMAP, str(cm["name"])
        if isinstance(secret, Mapping) and secret.get("secretName") and not secret.get("optional"):
            yield name, SECRET, str(secret["secretName"])
        for source in (vol.get("projected") or {}).get("sources") or ():
            for field, rt in (("configMap", CONFIGMAP), ("secret", SECRET)):
                ref = (source or {}).get(field)
                if isinstance(ref, Mapping) and ref.get("name") and not ref.get("optional"):
                    yield name, rt, str(ref["name"])


def missing_config(ctx: Context, pod: Obj) -> Missing | None:
    """What keeps a bound pod from starting (None: nothing), the first found: its
    ServiceAccount, then its environment, then its volumes."""
    ns = pod["metadata"].get("namespace", "")
    account = _spec(pod).get("serviceAccountName") or "default"
    if account != "default" and ctx.peek(SERVICEACCOUNT, ns, str(account)) is None:
        text = f'serviceaccount "{account}" not found'
        return Missing("CreateContainerConfigError", text, "Failed", f"Error: {text}")
    for rt, name in _env_refs(pod):
        if ctx.peek(rt, ns, name) is None:
            text = f'{_NAMES[rt]} "{name}" not found'
            return Missing("CreateContainerConfigError", text, "Failed", f"Error: {text}")
    for volume, rt, name in _volume_refs(pod):
        if ctx.peek(rt, ns, name) is None:
            text = f'{_NAMES[rt]} "{name}" not found'
            return Missing(
                "ContainerCreating",
                f'volume "{volume}": {text}',
                "FailedMount",
                f'MountVolume.SetUp failed for volume "{volume}" : {text}',
            )
    return None


def missing_claim(ctx: Context, pod: Obj) -> str:
    """The scheduler's message for the first claim the pod mounts that does not exist
    (empty: none is missing). A claim that exists is Bound (`api_validation`)."""
    ns = pod["metadata"].get("namespace", "")
    for vol in _spec(pod).get("volumes") or ():
        claim = (vol or {}).get("persistentVolumeClaim") if isinstance(vol, Mapping) else None
        name = str(claim.get("claimName") or "") if isinstance(claim, Mapping) else ""
        if name and ctx.peek(CLAIM, ns, name) is None:
            return f'persistentvolumeclaim "{name}" not found'
    return ""
