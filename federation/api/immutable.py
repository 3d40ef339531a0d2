"""Fields Kubernetes refuses to change once an object exists, refused here alike.

Fed by the object routes (`api.objects`) with the stored object and the one replacing it,
on every update (PUT, and `apply` of an object already stored); feeds them an
`errors.Invalid` naming the object and field (a 400 that writes nothing).

Why here, and not left to the members: a template is stored in the federation and sent
to members, and a member refuses such an edit only after fedctl has answered `configured`.
The federation then showed a spec no member ran, and the workload never converged: a
Deployment whose selector changed stayed `rejected the object` on every member; a running
Job whose pod template was edited either kept running the old template, or, its new pods
fitting nowhere it ran, was deleted and run again from the start on another member.
kube-apiserver, and so Karmada's, refuses the write itself (`field is immutable`).

The fields are Kubernetes' own (`pkg/apis/apps/validation`, `pkg/apis/batch/validation`):

- Deployment, ReplicaSet, DaemonSet: `spec.selector`;
- StatefulSet: every spec field but `replicas`, `ordinals`, `template`,
  `updateStrategy`, `revisionHistoryLimit`, `persistentVolumeClaimRetentionPolicy` and
  `minReadySeconds`, that is `selector`, `serviceName`, `volumeClaimTemplates` and
  `podManagementPolicy`;
- Job: `selector`, `template`, `completionMode`, `podFailurePolicy`,
  `backoffLimitPerIndex`, `managedBy`, `successPolicy`, and `completions`, which an
  Indexed Job may change together with `parallelism` (to the same number).

A field omitted on both sides is unchanged (members apply server-side, so a field fedctl
never sent keeps what the member defaulted), and one given on one side only changes only
if it differs from Kubernetes' default (`podManagementPolicy: OrderedReady` added to a
StatefulSet that had none is no change). Kubernetes also lets a suspended Job that never
started change its template's scheduling directives (node selector, tolerations, labels,
annotations, scheduling gates); fedctl does not know whether its copies started, so it
refuses those too: delete the Job and apply it again.

A ConfigMap or Secret marked `immutable: true` keeps its `data`, `binaryData` and the mark
itself for good (`pkg/apis/core/validation`: "field is immutable when `immutable` is
set"), and a Secret's `type` never changes. Its members refuse the edit the same way, and
the copies kept the old data while the federation showed the new.
"""

from __future__ import annotations

from typing import Any

from federation import errors
from policies.loading.findings import PathPart, format_path
from policies.models.base import KubeObject

__all__ = ["check"]

_ABSENT = object()
"""A field the spec does not give (unlike one given as null)."""

_APPS = ("Deployment", "ReplicaSet", "DaemonSet", "StatefulSet")

_FIELDS: dict[tuple[str, str], dict[str, Any]] = {
    **{("apps", kind): {"selector": None} for kind in _APPS},
    ("apps", "StatefulSet"): {
        "selector": None,
        "serviceName": "",
        "volumeClaimTemplates": [],
        "podManagementPolicy": "OrderedReady",
    },
    ("batch", "Job"): {
        "selector": None,
        "completions": None,
        "template": None,
        "completionMode": "NonIndexed",
        "podFailurePolicy": None,
        "backoffLimitPerIndex": None,
        "managedBy": None,
        "successPolicy": None,
    },
}
"""(group, kind) -> its immutable spec fields, each with Kubernetes' default (what an
omitted field is taken to be when the other side gives it)."""


_FROZEN = ("immutable", "data", "binaryData")
"""The fields of a ConfigMap or Secret marked immutable that cannot change."""


def check(old: KubeObject, new: KubeObject) -> None:
    """Refuse `new` replacing `old` where it changes a field that cannot change, naming
    the first value it changes (`spec.template.spec.containers[0].image`), so the client
    can point at its line."""
    if new.api_version == "v1" and new.kind in ("ConfigMap", "Secret"):
        _check_data(old, new)
        return
    group = new.api_version.rpartition("/")[0]
    fields = _FIELDS.get((group, new.kind))
    if fields is None or (old.api_version, old.kind) != (new.api_version, new.kind):
        return
    was, now = old.to_wire().get("spec") or {}, new.to_wire().get("spec") or {}
    for field, default in fields.items():
        before, after = was.get(field, _ABSENT), now.get(field, _ABSENT)
        if before is _ABSENT and after is _ABSENT:
            continue
        before = default if before is _ABSENT else before
        after = default if after is _ABSENT else after
        if field == "completions" and _elastic(now, after):
            continue
        changed = _changed(before, after, ("spec", field))
        if changed is not None:
            raise _refusal(new, changed)


def _check_data(old: KubeObject, new: KubeObject) -> None:
    """Refuse a change to a Secret's type, or to the data of a ConfigMap or Secret marked
    immutable. The path names a key, never its value (a Secret's value must not show)."""
    if (old.api_version, old.kind) != (new.api_version, new.kind):
        return
    was, now = old.to_wire(), new.to_wire()
    if new.kind == "Secret":
        changed = _changed(was.get("type", "Opaque"), now.get("type", "Opaque"), ("type",))
        if changed is not None:
            raise _refusal(new, changed)
    if was.get("immutable") is not True:
        return
    for field in _FROZEN:
        changed = _changed(was.get(field), now.get(field), (field,))
        if changed is not None:
            found = (
                f"{_named(new)}: {format_path(changed)}: field is immutable when `immutable`"
                f" is set: a {new.kind} marked immutable keeps its data for good, as in"
                f" Kubernetes; delete the {new.kind} and apply it again to change it"
            )
            raise errors.Invalid(found, findings=[found])


def _named(new: KubeObject) -> str:
    """`KIND NAMESPACE/NAME`, as a refusal begins."""
    where = f"{new.metadata.namespace}/" if new.metadata.namespace else ""
    return f"{new.kind} {where}{new.metadata.name}"


def _elastic(spec: dict[str, Any], after: Any) -> bool:
    """Whether an Indexed Job changes `completions` as Kubernetes lets it: to a number,
    together with `parallelism` (ElasticIndexedJob)."""
    indexed = spec.get("completionMode") == "Indexed"
    return indexed and after is not None and after == spec.get("parallelism")


def _refusal(new: KubeObject, changed: tuple[PathPart, ...]) -> errors.Invalid:
    """The refusal of `new` changing the immutable value at `changed`."""
    field = format_path(changed[:2])
    extra = (
        " (but for an Indexed Job's, set with spec.parallelism to the same number)"
        if field == "spec.completions"
        else ""
    )
    found = (
        f"{_named(new)}: {format_path(changed)}: field is immutable:"
        f" a {new.kind}'s {field} cannot change once it is created{extra} (its members"
        f" refuse it, and their copies keep the old one); delete the {new.kind} and apply it"
        " again to run the new one"
    )
    return errors.Invalid(found, findings=[found])


def _changed(was: Any, now: Any, at: tuple[PathPart, ...]) -> tuple[PathPart, ...] | None:
    """The path of the first value `now` changes, adds or removes in `was`; None if equal.
    A value whose type changed, or a list whose length did, is named whole."""
    if was == now:
        return None
    if isinstance(was, dict) and isinstance(now, dict):
        for key in [*was, *(k for k in now if k not in was)]:
            found = _changed(was.get(key), now.get(key), (*at, key))
            if found is not None:
                return found
    if isinstance(was, list) and isinstance(now, list) and len(was) == len(now):
        for index, (a, b) in enumerate(zip(was, now, strict=True)):
            found = _changed(a, b, (*at, index))
            if found is not None:
                return found
    return at
