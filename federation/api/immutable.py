"""Fields Kubernetes refuses to change once an object exists, refused here alike.

Fed by the object routes (`api.objects`) with the stored object and the one replacing it,
on every update (PUT, and `apply` of an object already stored); feeds them an
`errors.Invalid` naming the object and field (a 400 that writes nothing).

Why here, and not left to the members: a template is stored in the federation and sent
to members, and a member refuses such an edit only after fedctl has answered `configured`.
A running Job whose pod template was edited then either kept running the old template
while the federation's showed the new one, or, its new pods fitting nowhere it ran, was
deleted and run again from the start on another member. kube-apiserver, and so Karmada's,
refuses the write itself: `spec.template: Invalid value: field is immutable`.

A Job's pod template is the one such field fedctl checks. Kubernetes also lets a suspended
Job that never started change its template's scheduling directives (node selector,
tolerations, labels, annotations, scheduling gates); fedctl does not know whether its
copies started, so it refuses those too: delete the Job and apply it again.
"""

from __future__ import annotations

from typing import Any

from federation import errors
from policies.loading.findings import PathPart, format_path
from policies.models.base import KubeObject

__all__ = ["check"]

_JOB = ("batch/v1", "Job")


def check(old: KubeObject, new: KubeObject) -> None:
    """Refuse `new` replacing `old` where it changes a field that cannot change, naming
    the first value it changes (`spec.template.spec.containers[0].image`), so the client
    can point at its line."""
    if (old.api_version, old.kind) != _JOB or (new.api_version, new.kind) != _JOB:
        return
    was, now = old.to_wire().get("spec") or {}, new.to_wire().get("spec") or {}
    changed = _changed(was.get("template"), now.get("template"), ("spec", "template"))
    if changed is None:
        return
    where = f"{new.metadata.namespace}/" if new.metadata.namespace else ""
    found = (
        f"Job {where}{new.metadata.name}: {format_path(changed)}: field is immutable: a Job's"
        " pod template (spec.template) cannot change once it is created (its members refuse"
        " it, and their copies keep running the old one); delete the Job and apply it again"
        " to run the new template"
    )
    raise errors.Invalid(found, findings=[found])


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
