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

import copy
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, cast

from federation import errors
from policies.loading import LoadResult, kube_fields
from policies.loading.documents import finding_at
from policies.loading.findings import Finding, format_path
from policies.models import kinds
from policies.models import override as override_model
from policies.models.cluster import Cluster
from policies.models.common import ClusterAffinity, ResourceSelector
from policies.models.matching import affinity_matches, selector_matches
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
    "apply_policies",
    "container_findings",
    "failing_rules",
    "ordered",
    "pod_specs",
    "policy_label",
    "rule_label",
    "selector_matches",
    "selects",
    "shaping",
    "split_image",
    "unselected",
]

AnyOverride = OverridePolicy | ClusterOverridePolicy
Obj = dict[str, Any]


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


def selects(policy: AnyOverride, template: Mapping[str, Any]) -> bool:
    """Whether `policy`'s resource selectors (and namespace) reach `template`."""
    return _match_level(policy, template) is not None


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
    policies: Sequence[AnyOverride],
    templates: Sequence[Mapping[str, Any]],
    *,
    among: Sequence[AnyOverride] = (),
) -> list[str]:
    """A note for each policy that selects none of `templates` (the workloads as stored
    after a write), for each command or args edit naming a container a selected
    workload lacks (valid, and silently doing nothing, as a misspelt name leaves it), and
    for each rule whose edit cannot apply to a selected workload (`failing_rules`, judged
    after the rules of every policy `among` those stored after the write that render
    before it)."""
    out = []
    for policy in policies:
        label = policy_label(policy)
        selected = [t for t in templates if _match_level(policy, t) is not None]
        if not selected:
            out.append(
                f"{label} selects no workload: it overrides nothing until one it selects is"
                " created (check its resourceSelectors' kind, name and namespace)"
            )
            continue
        out.extend(
            f"{label} {_rule_of(policy, at)}.{note}"
            for at, note in _problems(policy, selected, among=among)
        )
    return out


def _rule_of(policy: AnyOverride, at: PolicyPath) -> str:
    """The rule a note's path in `policy` lies in, as the Work's error names it
    (`overrideRules[1]`): the note's own `plaintext[0]` is in every rule of a policy whose
    rules each have one."""
    index = at[2] if policy.spec.override_rules and len(at) > 2 else 0
    return rule_label(policy, index if isinstance(index, int) else 0)


PolicyPath = tuple[str | int, ...]


def _problems(
    policy: AnyOverride, templates: Sequence[Mapping[str, Any]], *, among: Sequence[AnyOverride]
) -> list[tuple[PolicyPath, str]]:
    return [
        *missing_containers(policy, templates),
        *failing_rules(policy, templates, among=among),
    ]


def _where(template: Mapping[str, Any]) -> str:
    meta = template.get("metadata") or {}
    ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{template.get('kind')} {ns}{meta.get('name')}"


def failing_rules(
    policy: AnyOverride,
    templates: Sequence[Mapping[str, Any]],
    *,
    among: Sequence[AnyOverride] = (),
) -> list[tuple[PolicyPath, str]]:
    """Each rule's first edit that cannot apply to the selected workloads among
    `templates` as written, with its path in the policy: their copies would not be
    rendered (each workload shows the error), so it is said before; and each edit that
    writes a field the kind does not have (`_unknown_made`), which members refuse as they
    refuse it in a template. One note per edit and error, naming the workloads (the first
    few of many: a ClusterOverridePolicy without selectors reaches every one). Judged on
    the template alone, in every cluster: what the chip translation adds in a member is
    not there yet.

    A rule is judged as it renders, after the rules applied before it: this policy's
    earlier rules, and those of the policies `among` (every override policy there is)
    that `ordered` puts first. Which of them reach a copy depends on its cluster, not
    known here, so a rule is said to fail only when it fails both on the template alone
    and after every earlier edit that applies: a per-cluster tweak of what a base policy
    or rule added (an `env` added, then its value replaced) renders, and was said not to."""
    found: dict[tuple[PolicyPath, str, str], list[str]] = {}
    rules = policy.spec.effective_rules()
    for template in templates if rules else ():
        if _match_level(policy, template) is None:
            continue
        layered: Obj | None = None
        for index, rule in enumerate(rules):
            base = template
            edited, problem = _trial(rule.overriders, template, template)
            if problem is not None:
                if layered is None:
                    layered = _before(policy, among, template, upto=index)
                base = layered
                edited, problem = _trial(rule.overriders, layered, template)
            if problem is not None:  # said as it fails after the earlier edits
                at = (*_rule_path(policy, index), "overriders", *problem.at)
                said = _unrendered(rule.target_cluster)
                found.setdefault((at, str(problem), said), []).append(_where(template))
            else:
                for at, note in _unknown_made(rule.overriders, base, edited):
                    key = ((*_rule_path(policy, index), "overriders", *at), note, _REFUSED)
                    found.setdefault(key, []).append(_where(template))
            if layered is not None:
                _apply_if_clean(layered, rule.overriders, template)
    return [(at, said.format(error=error, some=_some(wheres), its=_its(wheres)))
            for (at, error, said), wheres in found.items()]  # fmt: skip


def _unrendered(target: ClusterAffinity | None) -> str:
    """What a rule that cannot apply costs: the copies of the clusters it targets, which
    render fails, not every copy (a rule for cn-north-cpu leaves the others rendered)."""
    named = [] if target is None else [n for n in target.cluster_names if n not in target.exclude]
    if target is None or target == ClusterAffinity():
        where = ""
    elif named and target.label_selector is None and target.field_selector is None:
        where = f" on {', '.join(named)}"
    else:
        where = " on the clusters its targetCluster selects"
    return "{error} on {some}: {its} copies" + where + " will not be rendered"


_REFUSED = "{error}, in the copies of {some}"


def _its(wheres: Sequence[str]) -> str:
    return "its" if len(wheres) == 1 else "their"


def _unknown_made(
    overriders: Overriders, before: Mapping[str, Any], after: Mapping[str, Any]
) -> list[tuple[PolicyPath, str]]:
    """Each field of the kind's schema (`kube_fields`) that is unknown in `after`, one
    rule's result, and was not in `before`, with the `plaintext` edit that wrote it: the
    one whose path leads to it (the only overrider that writes arbitrary fields)."""
    had = {path for path, _ in kube_fields.unknown_fields(before)}
    edits = [
        (j, tuple(_tokens(edit.path)))
        for j, edit in enumerate(overriders.plaintext)
        if edit.operator != "remove"
    ]
    out: list[tuple[PolicyPath, str]] = []
    for path, message in kube_fields.unknown_fields(after):
        if path in had:
            continue
        words = tuple(str(p) for p in path)
        j = next((j for j, toks in edits if _leads_to(toks, words)), None)
        at: PolicyPath = ("plaintext",) if j is None else ("plaintext", j)
        label = "plaintext" if j is None else f"plaintext[{j}]"
        out.append((at, f"{label}: {format_path(path)}: {message}"))
    return out


def _leads_to(tokens: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """Whether an edit at JSON pointer `tokens` wrote `path` (`-` appends: any index)."""
    return len(tokens) <= len(path) and all(
        t == p or (t == "-" and p.isdigit()) for t, p in zip(tokens, path, strict=False)
    )


def _fails(
    overriders: Overriders, obj: Mapping[str, Any], template: Mapping[str, Any]
) -> OverrideFailed | None:
    """Why one rule's edits cannot apply to (a copy of) `obj`, or None when they can."""
    return _trial(overriders, obj, template)[1]


def _apply_if_clean(obj: Obj, overriders: Overriders, template: Mapping[str, Any]) -> None:
    """Apply one rule's edits to `obj` when they all apply; leave it as it was if not."""
    edited, problem = _trial(overriders, obj, template)
    if problem is None:
        obj.clear()
        obj.update(edited)


def _trial(
    overriders: Overriders, obj: Mapping[str, Any], template: Mapping[str, Any]
) -> tuple[Obj, OverrideFailed | None]:
    """A copy of `obj` with one rule's edits applied, and why they could not be if not."""
    trial = copy.deepcopy(dict(obj))
    try:
        apply_overriders(trial, overriders)
        _check_shape(trial, template)
    except OverrideFailed as exc:
        return trial, exc
    return trial, None


def _before(
    policy: AnyOverride, among: Sequence[AnyOverride], template: Mapping[str, Any], *, upto: int
) -> Obj:
    """`template` with every edit that renders before rule `upto` of `policy` and applies
    (`failing_rules`): the earlier policies' rules in `ordered`'s order, then its own."""
    mine = (policy.kind, policy.metadata.namespace, policy.metadata.name)
    others = [p for p in among if (p.kind, p.metadata.namespace, p.metadata.name) != mine]
    obj = copy.deepcopy(dict(template))
    for earlier in ordered([*others, policy], template):
        rules = earlier.spec.effective_rules()
        last = upto if earlier is policy else len(rules)
        for rule in rules[:last]:
            _apply_if_clean(obj, rule.overriders, template)
        if earlier is policy:
            break
    return obj


def _some(names: Sequence[str], shown: int = 3) -> str:
    if len(names) == 1:
        return names[0]
    more = f", and {len(names) - shown} more" if len(names) > shown else ""
    return f"{len(names)} workloads ({', '.join(names[:shown])}{more})"


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
    """`missing_containers` and `failing_rules` among the files `result` loaded, at the
    line of each `containerName` or failing edit: what the apply route notes of the stored
    workloads, told by `fedctl validate` and an offline plan, which have only the files."""
    templates = [o.model.to_wire() for o in result.objects if isinstance(o.model, Workload)]
    among = [o.model for o in result.objects if isinstance(o.model, AnyOverride)]
    return [
        finding_at(obj, path, note)
        for obj in result.objects
        if isinstance(obj.model, AnyOverride)
        for path, note in _problems(obj.model, templates, among=among)
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
    """Every pod spec inside a manifest (mutable references), whatever the kind: a
    workload's `spec.template`, a CronJob's Job template's, a Volcano Job's tasks' and a
    PyTorchJob's replicas'. The one notion of "the pod templates of a kind" that the
    overriders, the chip translation and propagateDeps (deps.py) share."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    if obj.get("kind") == "Pod":
        return [spec]
    found: list[Obj] = []
    if obj.get("kind") == "CronJob" and str(obj.get("apiVersion", "")).startswith("batch/"):
        # The Jobs it starts take their pods from here, as Karmada's interpreter reads it.
        job = (spec.get("jobTemplate") or {}).get("spec")
        spec = job if isinstance(job, dict) else {}
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
        path = rule.predicate.path
        parent, last = _locate(obj, path)
        key = _index(parent, last, path) if isinstance(parent, list) else last
        if isinstance(parent, dict) and key not in parent:
            raise errors.Invalid(f"path {path!r} does not exist in the manifest")
        current = parent[key]
        if not isinstance(current, str):
            # Karmada's predicate names the image itself; a container (a mapping) turned
            # into a string would be refused by the member, or worse, run as something else.
            raise errors.Invalid(
                f"path {path!r} holds a {override_model.json_type(current)}, not an image string"
                " (point the predicate at a container's image, e.g. .../containers/0/image)"
            )
        _set(parent, last, _edit_image(current, rule))
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


def _index(parent: list[Any], last: str, path: str, *, adding: bool = False) -> int:
    """The list index `last` names, as RFC 6902 reads it: digits only, below the
    length, or equal to it (or `-`) for an `add`, which appends. Anything else is an
    error: Karmada's JSON patch library refuses an add past the end, where `insert`
    would append silently."""
    if adding and last == "-":
        return len(parent)
    if not last.isdigit():
        raise errors.Invalid(f"path {path!r}: {last!r} is not an index into a list")
    index, size = int(last), len(parent)
    if index > size or (index == size and not adding):
        raise errors.Invalid(
            f"path {path!r}: index {index} is past the end of a list of {size} item(s)"
        )
    return index


def _set(parent: Any, last: str, value: Any) -> None:
    if isinstance(parent, list):
        parent[int(last)] = value
    else:
        parent[last] = value


def _apply_plaintext(obj: Obj, rule: PlaintextOverrider) -> None:
    path = rule.path
    parent, last = _locate(obj, path)
    if isinstance(parent, list):
        index = _index(parent, last, path, adding=rule.operator == "add")
        if rule.operator == "remove":
            del parent[index]
        elif rule.operator == "add":
            parent.insert(index, rule.value)
        else:
            parent[index] = rule.value
    elif rule.operator != "add" and last not in parent:
        raise errors.Invalid(f"path {path!r} does not exist in the manifest")
    elif rule.operator == "remove":
        del parent[last]
    else:
        parent[last] = rule.value


_Apply = Callable[[Obj, Any], None]


def _steps(overriders: Overriders) -> list[tuple[str, Sequence[Any], _Apply]]:
    """Each overrider field with its edits and how one is applied, in Karmada's order."""
    return [
        ("imageOverrider", overriders.image_overrider, _apply_image),
        ("commandOverrider", overriders.command_overrider,
         partial(_apply_command, field="command")),
        ("argsOverrider", overriders.args_overrider, partial(_apply_command, field="args")),
        ("labelsOverrider", overriders.labels_overrider, partial(_apply_meta, field="labels")),
        ("annotationsOverrider", overriders.annotations_overrider,
         partial(_apply_meta, field="annotations")),
        ("plaintext", overriders.plaintext, _apply_plaintext),
    ]  # fmt: skip


class OverrideFailed(errors.Invalid):
    """An edit of one rule that cannot apply; `at`: where under the rule's `overriders`
    (`("plaintext", 0)`), so a note can point at it in the policy's file."""

    def __init__(self, message: str, *, at: tuple[str | int, ...]) -> None:
        super().__init__(message)
        self.at = at


def _rule_path(policy: AnyOverride, index: int) -> tuple[str | int, ...]:
    """Rule `index`'s path in the policy (the deprecated form's rule is `spec` itself)."""
    return ("spec", "overrideRules", index) if policy.spec.override_rules else ("spec",)


_BROKEN = (KeyError, IndexError, ValueError, TypeError, AttributeError)
"""What an edit of a manifest whose shape it did not expect can raise: each one is made
an `errors.Invalid` naming the edit, so no override can stop the propagator."""


def apply_overriders(obj: Obj, overriders: Overriders) -> None:
    """Apply one rule's overriders to `obj` in place, in Karmada's order; raises
    `errors.Invalid` naming the overrider (`imageOverrider[0]`) and its path when one
    cannot apply, `obj` then partly edited (render drops it)."""
    for field, edits, apply in _steps(overriders):
        for index, edit in enumerate(edits):
            try:
                apply(obj, edit)
            except errors.Invalid as exc:
                raise OverrideFailed(f"{field}[{index}]: {exc}", at=(field, index)) from None
            except _BROKEN as exc:
                raise OverrideFailed(
                    f"{field}[{index}]: cannot apply to this manifest ({exc!r})",
                    at=(field, index),
                ) from None


def policy_label(policy: AnyOverride) -> str:
    """`OverridePolicy ns/name` or `ClusterOverridePolicy name`, as messages name one."""
    if isinstance(policy, OverridePolicy):
        return f"{policy.kind} {policy.metadata.namespace or 'default'}/{policy.metadata.name}"
    return f"{policy.kind} {policy.metadata.name}"


def rule_label(policy: AnyOverride, index: int) -> str:
    """Where rule `index` of `effective_rules()` is written: `overrideRules[i]`, or
    `overriders` for the deprecated single-rule form."""
    return f"overrideRules[{index}]" if policy.spec.override_rules else "overriders"


def apply_policies(
    obj: Obj, policies: Sequence[AnyOverride], *, template: Mapping[str, Any], cluster: Cluster
) -> None:
    """Every rule of `policies` that selects `template` and targets `cluster`, in
    Karmada's order; raises `errors.Invalid` naming the policy, the rule, the overrider and
    the path of the first that cannot apply, or that leaves a manifest no member can
    take (metadata that is not a mapping, another name, kind or namespace)."""
    for policy in ordered(policies, template):
        for index, rule in enumerate(policy.spec.effective_rules()):
            if not affinity_matches(rule.target_cluster, cluster):
                continue
            try:
                apply_overriders(obj, rule.overriders)
                _check_shape(obj, template)
            except errors.Invalid as exc:
                where = f"{policy_label(policy)} {rule_label(policy, index)}"
                raise errors.Invalid(f"{where}.{exc}") from None


def shaping(
    policies: Sequence[AnyOverride], *, template: Mapping[str, Any], cluster: Cluster
) -> list[str]:
    """The rules `apply_policies` applies to `template`'s copy for `cluster`, as messages
    name them (`OverridePolicy kt12/badtype overrideRules[0]`): a member that refuses a
    copy is refusing what they made of the template, which its error does not say."""
    return [
        f"{policy_label(policy)} {rule_label(policy, index)}"
        for policy in ordered(policies, template)
        for index, rule in enumerate(policy.spec.effective_rules())
        if affinity_matches(rule.target_cluster, cluster)
    ]


def _check_shape(obj: Obj, template: Mapping[str, Any]) -> None:
    """What render and every member rely on after the overrides: metadata, its labels and
    annotations mappings; the name, namespace, kind and apiVersion the template's.

    Why no rename: the copy under the new name is not the one the Work and the garbage
    collector know, so both names ran in the member and the renamed one stayed for good
    (Karmada's own renaming is not supported)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise OverrideFailed(
            f"plaintext: path '/metadata' holds a {override_model.json_type(meta)}, not a mapping",
            at=("plaintext",),
        )
    for field in ("labels", "annotations"):
        value = meta.get(field)
        if value is not None and not (
            isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
        ):
            raise OverrideFailed(
                f"plaintext: path '/metadata/{field}' must map names to strings, not hold a"
                f" {override_model.json_type(value)}",
                at=("plaintext",),
            )
    before = template.get("metadata") or {}
    for path, now, was in (
        ("/metadata/name", meta.get("name"), before.get("name")),
        ("/metadata/namespace", meta.get("namespace"), before.get("namespace")),
        ("/kind", obj.get("kind"), template.get("kind")),
        ("/apiVersion", obj.get("apiVersion"), template.get("apiVersion")),
    ):
        if now != was:
            raise OverrideFailed(
                f"plaintext: path {path!r} cannot be overridden: the copy must keep the"
                f" template's ({was!r}), not {now!r}",
                at=("plaintext",),
            )
