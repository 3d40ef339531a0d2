"""OverridePolicy and ClusterOverridePolicy rules applied to one member's manifest (pure).

Fed by render with the template's copy for one cluster, the Cluster it goes to and every
override policy in the registry; feeds render. The order is Karmada's: ClusterOverride
Policies first, then namespaced OverridePolicies; within each, broader resource selectors
before narrower ones (every resource < label selector < name), ties by policy name, so the
most specific policy has the last word. Inside a rule the overriders run image, command,
args, labels, annotations, then plaintext, as Karmada's `applyPolicyOverriders` does.

Why pure: rendering must be reproducible from the registry alone so a restarted
controller renders exactly what it rendered before and touches no member needlessly.
A path that does not exist in the manifest is an error naming the policy, not a crash.

Why Karmada's quirks are kept: a policy must render the same manifest under both systems.
A namespaced OverridePolicy never edits a cluster-scoped object; an image edit without a
predicate touches `containers`, not `initContainers`; a Tag value that ends up neither a
tag nor a digest leaves the image alone. One deliberate difference: an image pinned by
both tag and digest keeps the digest unless a Tag add or replace sets a new tag, where
Karmada's parser drops it on any edit and the member runs whatever the tag points to now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from federation import errors
from policies.loading import LoadResult
from policies.loading.documents import finding_at
from policies.loading.findings import Finding
from policies.models import kinds
from policies.models import override as override_model
from policies.models.cluster import Cluster
from policies.models.common import ClusterAffinity, LabelSelector, ResourceSelector
from policies.models.override import (
    ClusterOverridePolicy,
    CommandArgsOverrider,
    ImageOverrider,
    LabelAnnotationOverrider,
    OverridePolicy,
    Overriders,
    PlaintextOverrider,
)
from policies.models.workload import Workload

__all__ = [
    "AnyOverride",
    "affinity_matches",
    "apply_overriders",
    "container_findings",
    "ordered",
    "pod_specs",
    "selector_matches",
    "split_image",
    "unselected",
]

AnyOverride = OverridePolicy | ClusterOverridePolicy
Obj = dict[str, Any]


def selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """Kubernetes label selector semantics (matchLabels and matchExpressions)."""
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return False
    for req in selector.match_expressions:
        present = req.key in labels
        value = labels.get(req.key)
        ok = {
            "In": present and value in req.values,
            "NotIn": not (present and value in req.values),
            "Exists": present,
            "DoesNotExist": not present,
        }[req.operator]
        if not ok:
            return False
    return True


def affinity_matches(affinity: ClusterAffinity | None, cluster: Cluster) -> bool:
    """Karmada's ClusterAffinity: every part that is set must match; exclude always wins."""
    if affinity is None:
        return True
    name = cluster.metadata.name
    if name in affinity.exclude:
        return False
    if affinity.cluster_names and name not in affinity.cluster_names:
        return False
    if affinity.label_selector is not None and not selector_matches(
        affinity.label_selector, cluster.metadata.labels
    ):
        return False
    if affinity.field_selector is not None:
        spec = cluster.spec
        fields = {"region": spec.region, "zone": spec.zone, "provider": spec.provider}
        for req in affinity.field_selector.match_expressions:
            if (req.operator == "In") != (fields[req.key] in req.values):
                return False
    return True


def _namespace(template: Mapping[str, Any]) -> str | None:
    """The template's namespace; a namespaced kind without one is in `default` (as kubectl
    and the API server assume), a cluster-scoped kind has none."""
    named = (template.get("metadata") or {}).get("namespace")
    if named:
        return str(named)
    return "default" if kinds.is_namespaced(str(template.get("kind"))) else None


def _specificity(sel: ResourceSelector, template: Mapping[str, Any]) -> int | None:
    meta = template.get("metadata") or {}
    if (sel.api_version, sel.kind) != (template.get("apiVersion"), template.get("kind")):
        return None
    if sel.namespace and sel.namespace != _namespace(template):
        return None
    if sel.name:
        return 2 if sel.name == meta.get("name") else None
    if sel.label_selector is not None:
        return 1 if selector_matches(sel.label_selector, meta.get("labels") or {}) else None
    return 0


def _match_level(policy: AnyOverride, template: Mapping[str, Any]) -> int | None:
    if isinstance(policy, OverridePolicy):
        namespace = _namespace(template)
        if namespace is None or (policy.metadata.namespace or "default") != namespace:
            return None
    if not policy.spec.resource_selectors:
        return 0
    levels = [_specificity(s, template) for s in policy.spec.resource_selectors]
    found = [level for level in levels if level is not None]
    return max(found) if found else None


def unselected(
    policies: Sequence[AnyOverride], templates: Sequence[Mapping[str, Any]]
) -> list[str]:
    """A note for each policy that selects none of `templates` (the workloads as stored
    after a write), and for each command or args edit naming a container a selected
    workload lacks: valid, and silently doing nothing, as a misspelt name leaves it."""
    out = []
    for policy in policies:
        namespaced = isinstance(policy, OverridePolicy)
        scope = f"{policy.metadata.namespace or 'default'}/" if namespaced else ""
        label = f"{policy.kind} {scope}{policy.metadata.name}"
        selected = [t for t in templates if _match_level(policy, t) is not None]
        if not selected:
            out.append(
                f"{label} selects no workload: it overrides nothing until one it selects is"
                " created (check its resourceSelectors' kind, name and namespace)"
            )
            continue
        out.extend(f"{label}: {note}" for note in _missing_containers(policy, selected))
    return out


def _missing_containers(policy: AnyOverride, templates: Sequence[Mapping[str, Any]]) -> list[str]:
    return [note for _, note in missing_containers(policy, templates)]


def missing_containers(
    policy: AnyOverride, templates: Sequence[Mapping[str, Any]]
) -> list[tuple[tuple[str | int, ...], str]]:
    """A command or args edit naming a container that a selected workload among
    `templates` lacks, with the path of its `containerName` in the policy: Karmada skips
    it, so the edit silently does nothing there (a misspelt `containerName`)."""
    spec = policy.spec
    base: tuple[str | int, ...] = ("spec", "overrideRules") if spec.override_rules else ("spec",)
    edits = [
        ((*base, i, "overriders", which, j, "containerName") if spec.override_rules
         else (*base, "overriders", which, j, "containerName"), which, edit.container_name)
        for i, rule in enumerate(spec.effective_rules())
        for which, given in (
            ("commandOverrider", rule.overriders.command_overrider),
            ("argsOverrider", rule.overriders.args_overrider),
        )
        for j, edit in enumerate(given)
    ]  # fmt: skip
    found: list[tuple[tuple[str | int, ...], str]] = []
    for template in templates if edits else ():
        if _match_level(policy, template) is None:
            continue
        names = sorted(_container_names(template))
        meta = template.get("metadata") or {}
        ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
        where = f"{template.get('kind')} {ns}{meta.get('name')}"
        found.extend(
            (
                path,
                f"{which} containerName {name!r} matches no container of {where} (its"
                f" containers: {', '.join(names) or 'none'}): the edit does nothing there",
            )
            for path, which, name in edits
            if name not in names
        )
    return found


def container_findings(result: LoadResult) -> list[Finding]:
    """`missing_containers` among the files `result` loaded, at each `containerName`'s
    line: what the apply route notes of the stored workloads, told by `fedctl validate`
    and an offline plan, which have only the files."""
    templates = [o.model.to_wire() for o in result.objects if isinstance(o.model, Workload)]
    return [
        finding_at(obj, path, note)
        for obj in result.objects
        if isinstance(obj.model, AnyOverride)
        for path, note in missing_containers(obj.model, templates)
    ]


def _container_names(template: Mapping[str, Any]) -> set[str]:
    # `pod_specs` hands out the template's own dicts; they are only read here.
    return {
        str(c.get("name"))
        for spec in pod_specs(cast("Obj", template))
        for c in spec.get("containers") or ()
        if isinstance(c, Mapping)
    }


def ordered(policies: Sequence[AnyOverride], template: Mapping[str, Any]) -> list[AnyOverride]:
    """The policies that select `template`, in the order their rules are applied."""
    ranked = []
    for policy in policies:
        level = _match_level(policy, template)
        if level is not None:
            scope = 1 if isinstance(policy, OverridePolicy) else 0
            ranked.append(((scope, level, policy.metadata.name), policy))
    ranked.sort(key=lambda pair: pair[0])
    return [policy for _, policy in ranked]


# --------------------------------------------------------------------------- pod templates


def pod_specs(obj: Obj) -> list[Obj]:
    """Every pod spec inside a manifest (mutable references), whatever the kind."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    if obj.get("kind") == "Pod":
        return [spec]
    found: list[Obj] = []
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        found.append(template["spec"])
    for task in spec.get("tasks") or ():
        inner = (task or {}).get("template") or {}
        if isinstance(inner.get("spec"), dict):
            found.append(inner["spec"])
    for replica in (spec.get("pytorchReplicaSpecs") or {}).values():
        inner = (replica or {}).get("template") or {}
        if isinstance(inner.get("spec"), dict):
            found.append(inner["spec"])
    return found


def containers(obj: Obj, *, init: bool = True) -> list[Obj]:
    fields = ("containers", "initContainers") if init else ("containers",)
    return [
        c
        for pod in pod_specs(obj)
        for field in fields
        for c in pod.get(field) or ()
        if isinstance(c, dict)
    ]


# --------------------------------------------------------------------------- images


def _parse_image(image: str) -> tuple[str, str, str, str]:
    """(registry, repository, tag, digest) of `[registry/]repository[:tag][@digest]`."""
    registry, rest = "", image
    first, slash, after = image.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, rest = first, after
    rest, _, digest = rest.partition("@")
    tag = ""
    if ":" in rest:
        rest, _, tag = rest.rpartition(":")
    return registry, rest, tag, digest


def split_image(image: str) -> tuple[str, str, str, str]:
    """(registry, repository, separator, tag-or-digest) of `[registry/]repository[:tag]`;
    the tag wins when both are given, as in Karmada's `TagOrDigest`."""
    registry, repository, tag, digest = _parse_image(image)
    if tag:
        return registry, repository, ":", tag
    return registry, repository, ("@" if digest else ""), digest


def _join_image(registry: str, repository: str, tag: str, digest: str) -> str:
    head = f"{registry}/{repository}" if registry else repository
    return head + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")


def _edit_image(image: str, rule: ImageOverrider) -> str:
    """Karmada's `overrideImage`, so one policy yields one image under both systems: `add`
    appends the value as is (to the tag, or to the digest when there is no tag), and a Tag
    value is written as `:tag` or `@digest` by its form."""
    registry, repository, tag, digest = _parse_image(image)
    value, operator = rule.value, rule.operator
    if rule.component == "Registry":
        registry = {"add": registry + value, "replace": value, "remove": ""}[operator]
    elif rule.component == "Repository":
        repository = {"add": repository + value, "replace": value, "remove": ""}[operator]
    elif operator == "remove" and tag:
        tag = ""
    elif operator == "remove":
        digest = ""
    else:
        wanted = (tag or digest) + value if operator == "add" else value
        if override_model.IMAGE_TAG.fullmatch(wanted):
            tag, digest = wanted, ""
        elif override_model.IMAGE_DIGEST.fullmatch(wanted):
            tag, digest = "", wanted
    return _join_image(registry, repository, tag, digest)


def _apply_image(obj: Obj, rule: ImageOverrider) -> None:
    if rule.predicate is not None:
        parent, last = _locate(obj, rule.predicate.path)
        current = parent[last] if isinstance(parent, dict) else parent[int(last)]
        _set(parent, last, _edit_image(str(current), rule))
        return
    for container in containers(obj, init=False):
        if isinstance(container.get("image"), str):
            container["image"] = _edit_image(container["image"], rule)


def _apply_command(obj: Obj, rule: CommandArgsOverrider, field: str) -> None:
    for container in containers(obj, init=False):
        if container.get("name") != rule.container_name:
            continue
        current = list(container.get(field) or [])
        if rule.operator == "add":
            current.extend(rule.value)
        else:
            current = [item for item in current if item not in rule.value]
        container[field] = current


def _apply_meta(obj: Obj, rule: LabelAnnotationOverrider, field: str) -> None:
    meta = obj.setdefault("metadata", {})
    values = dict(meta.get(field) or {})
    for key, value in rule.value.items():
        if rule.operator == "remove":
            values.pop(key, None)
        elif rule.operator == "add" or key in values:
            values[key] = value
    meta[field] = values


# --------------------------------------------------------------------------- JSON pointer


def _tokens(path: str) -> list[str]:
    if not path.startswith("/"):
        raise errors.Invalid(f"path {path!r} is not a JSON pointer: it must start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _locate(obj: Obj, path: str) -> tuple[Any, str]:
    *parents, last = _tokens(path)
    node: Any = obj
    for token in parents:
        try:
            node = node[int(token)] if isinstance(node, list) else node[token]
        except (KeyError, IndexError, ValueError, TypeError):
            raise errors.Invalid(f"path {path!r} does not exist in the manifest") from None
    if not isinstance(node, dict | list):
        raise errors.Invalid(f"path {path!r} does not exist in the manifest")
    return node, last


def _set(parent: Any, last: str, value: Any) -> None:
    if isinstance(parent, list):
        parent[int(last)] = value
    else:
        parent[last] = value


def _apply_plaintext(obj: Obj, rule: PlaintextOverrider) -> None:
    parent, last = _locate(obj, rule.path)
    try:
        if rule.operator == "remove":
            del parent[int(last) if isinstance(parent, list) else last]
        elif rule.operator == "add" and isinstance(parent, list):
            parent.insert(len(parent) if last == "-" else int(last), rule.value)
        elif rule.operator == "replace" and isinstance(parent, dict) and last not in parent:
            raise KeyError(last)
        else:
            _set(parent, last, rule.value)
    except (KeyError, IndexError, ValueError) as exc:
        raise errors.Invalid(f"path {rule.path!r} does not exist in the manifest") from exc


def apply_overriders(obj: Obj, overriders: Overriders) -> None:
    """Apply one rule's overriders to `obj` in place, in Karmada's order."""
    for image in overriders.image_overrider:
        _apply_image(obj, image)
    for command in overriders.command_overrider:
        _apply_command(obj, command, "command")
    for args in overriders.args_overrider:
        _apply_command(obj, args, "args")
    for labels in overriders.labels_overrider:
        _apply_meta(obj, labels, "labels")
    for notes in overriders.annotations_overrider:
        _apply_meta(obj, notes, "annotations")
    for plain in overriders.plaintext:
        _apply_plaintext(obj, plain)
