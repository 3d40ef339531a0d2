"""Who is calling, and may they: bearer tokens or client certificates, then tenant rules.

Role: the outermost gate of the REST API. Fed by a tokens file (`tokens.TokenTable`: token
→ user, groups; optionally group → namespaces) and by the TLS peer certificate (CN is the
user, each O a group, as Kubernetes does); feeds every inner middleware and handler with
the request's `Principal`, and the object and plan APIs with an `admit` check for each
document created, updated, applied or planned (`bodies.admit_each`).

The rules, kept small so they can be read in one sitting:

    admin               everything
    tenant (a group `tenant:NS`, or a group mapped to namespaces in the tokens file)
        read            clusters (kubeconfigs stay redacted), queues, accelerator profiles;
                        any namespaced resource in its own namespaces, and the Works of
                        their workloads; what Bindings and events say of a workload of
                        another namespace is "a workload of another namespace"
                        (`visible.told`); a list that names no namespace (and of Works) is
                        cut to them (`ObjectsApi`), and so is a watch of one
        write           workloads, propagation and override policies in its own namespaces;
                        the Namespace template of one of them, which is that namespace's
                        (deleting it deletes what the namespace holds: refused whole if
                        that includes anything the tenant may not write, such as a quota);
                        never a cluster-scoped workload (a ClusterRole, a webhook
                        configuration: by the kind's scope, `kinds.is_namespaced`, whatever
                        namespace the document or the URL gives), nor a ResourceQuota or
                        LimitRange template (`TENANT_LIMITS`), nor a policy that selects
                        one (`selected_limits`: it would edit or move the admin's), nor,
                        by update or deletion, a stored policy that does
        plan            (/plan) only documents it may write, as `/apply` judges them: a
                        plan previews the write, as a Kubernetes dry run does; what the
                        plan says of stored objects is cut to its namespaces
        status views    (/apis/status.fedctl.io) workloads and their costs in its own
                        namespaces only: the list is cut to them, naming another
                        namespace is 403;
                        queue usage (aggregates, no workload names) as it reads queues
    anyone signed in    /validate (it reads only clusters, accelerator profiles and queues,
                        which every caller may read); GET on other paths;
                        the multiplexed /watch, which streams each kind it names if the
                        caller may list it across namespaces (`may_list`), cut to its
                        namespaces if the kind is namespaced (or Works)
    admin only          drills (they break a member on purpose, and their reports name
                        workloads of every namespace)
    admin or `metrics`  /metrics, which shows what every namespace's work costs (the
                        group a Prometheus scrape's token is given; as the Kubernetes API
                        server's /metrics, it needs credentials)
    nobody signed in    /healthz, /livez, /readyz, and the dashboard's page and static
                        files (`/`, `/ui/...`), which hold no data

No or a bad credential is 401; a known caller outside its rights is 403. Tokens are kept
only as SHA-256 digests in memory and are never logged: logs and the audit trail carry a
short digest prefix (`sha256:1a2b3c4d`) that identifies a token without revealing it.
Federated quotas are namespaced but read-only to tenants, who must not raise their own.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from federation import errors
from federation.api import status, tokens
from federation.registry import keys
from federation.registry import objects as reg_objects
from policies.models.base import KubeObject
from policies.models.override import OverridePolicy
from policies.models.propagation import FedctlPropagationPolicy, PropagationPolicy

__all__ = [
    "PRINCIPAL",
    "TENANT_LIMITS",
    "Authenticator",
    "Principal",
    "TokenTable",
    "may_list",
    "readable",
    "selected_limits",
    "token_id",
]

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

ADMIN_GROUP = "admin"
TokenTable = tokens.TokenTable
"""The tokens file read (`tokens.py`), kept here too as the Authenticator's own input."""
METRICS_GROUP = "metrics"
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/"})
PUBLIC_PREFIXES = ("/ui/",)  # the dashboard's static files: no data, and it asks for a token
_API = "/apis/fedctl.io/v1alpha1"
_DRILLS = _API + "/drills"
_WATCH = _API + "/watch"
_STATUS = "/apis/status.fedctl.io/v1alpha1"
_METRICS = "/metrics"
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_TENANT_READS_CLUSTER_SCOPED = frozenset({"clusters", "queues", "acceleratorprofiles"})
_TENANT_WRITES = frozenset({"workloads", "propagationpolicies", "overridepolicies"})
TENANT_LIMITS = frozenset({"ResourceQuota", "LimitRange"})
"""Core kinds (as `Kind.group` key segments) a tenant may read but not write: a template
of one becomes the namespace's quota or limits in the members, so a tenant writing one
raises (or, deleting it, removes) its own limits, as a FederatedResourceQuota's would."""


_TENANT_POLICIES = (PropagationPolicy, FedctlPropagationPolicy, OverridePolicy)
"""The policies a tenant may write: what they select is judged (`selected_limits`)."""


def selected_limits(obj: KubeObject) -> str | None:
    """What of `TENANT_LIMITS` a tenant-writable policy can select, as the end of a
    sentence opening 'selects'; None when it can select none of them.

    A selector names its kind (required, matched exactly), so a policy selects a quota
    only by naming the kind: whatever its name or labelSelector, such a selector can
    reach the admin's template, so the kind alone decides (any group: a sound
    over-approximation). An OverridePolicy with no selectors edits every template of
    its namespace, quotas included. The stored policy does not record who wrote it, so
    the rule is kept at the write, where the writer is known."""
    if not isinstance(obj, _TENANT_POLICIES):
        return None
    selectors = obj.spec.resource_selectors
    if not selectors:
        return "every template of its namespace, ResourceQuota and LimitRange ones too"
    named = sorted({s.kind for s in selectors if s.kind in TENANT_LIMITS})
    return " and ".join(f"{kind} templates" for kind in named) or None


def token_id(token: str) -> str:
    """A short, non-reversible name for a token, safe for logs and the audit trail."""
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:8]


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller: user, groups, the namespaces it owns, and how it signed in."""

    user: str
    groups: frozenset[str] = frozenset()
    namespaces: frozenset[str] = frozenset()
    via: str = ""

    @property
    def is_admin(self) -> bool:
        return ADMIN_GROUP in self.groups


PRINCIPAL: web.RequestKey[Principal] = web.RequestKey("fedctl_principal", Principal)


def _cert_principal(peercert: Mapping[str, Any] | None, table: TokenTable) -> Principal | None:
    """CN → user, every O → a group; None when there is no verified client certificate."""
    if not peercert:
        return None
    names: list[tuple[str, str]] = [pair for rdn in peercert.get("subject", ()) for pair in rdn]
    user = next((v for k, v in names if k == "commonName"), "")
    if not user:
        return None
    groups = frozenset(v for k, v in names if k == "organizationName")
    return Principal(user, groups, table.namespaces_of(groups), via=f"cert:{user}")


class Authenticator:
    """Authentication middleware plus the authorization rules above."""

    def __init__(
        self,
        tokens: TokenTable,
        *,
        public_paths: frozenset[str] = PUBLIC_PATHS,
        public_prefixes: tuple[str, ...] = PUBLIC_PREFIXES,
    ) -> None:
        self.tokens = tokens
        self.public_paths = public_paths
        self.public_prefixes = public_prefixes

    def is_public(self, path: str) -> bool:
        if path in self.public_paths:
            return True
        return ".." not in path and path.startswith(self.public_prefixes or ("\0",))

    def authenticate(self, request: web.Request) -> Principal | str:
        """The caller, or why it is not one (a reason for the 401 message)."""
        header = request.headers.get("Authorization", "")
        if header:
            scheme, _, token = header.partition(" ")
            token = token.strip()
            if scheme.lower() != "bearer" or not token:
                return "the Authorization header must be `Bearer TOKEN`"
            entry = self.tokens.lookup(token)
            if entry is None:
                # WARNING: a run of these is someone guessing (`limits.FailedAuthLimiter`).
                log.warning("rejected unknown token %s from %s", token_id(token), request.remote)
                return "invalid or unknown token"
            namespaces = self.tokens.namespaces_of(entry.groups)
            return Principal(entry.user, entry.groups, namespaces, via=token_id(token))
        peercert = request.transport.get_extra_info("peercert") if request.transport else None
        principal = _cert_principal(peercert, self.tokens)
        return principal or "no credentials: send `Authorization: Bearer TOKEN`"

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self.is_public(request.path):
            return await handler(request)
        who = self.authenticate(request)
        if isinstance(who, str):
            resp = status.status_response(401, "Unauthorized", who)
            resp.headers["WWW-Authenticate"] = 'Bearer realm="fedctl"'
            return resp
        request[PRINCIPAL] = who
        denied = self.decide(who, request)
        if denied is not None:
            return status.status_response(403, "Forbidden", f"user {who.user!r} {denied}")
        return await handler(request)

    def decide(self, who: Principal, request: web.Request) -> str | None:
        """None when allowed, else the end of a 'user X ...' sentence saying why not."""
        if who.is_admin:
            return None
        path, method = request.path, request.method
        if path.startswith(_STATUS + "/"):
            return _status_rule(who, request)
        if path == _METRICS:
            if METRICS_GROUP in who.groups:
                return None
            return (
                "may not read /metrics, which shows what every namespace's work costs:"
                f" it needs a token of group {ADMIN_GROUP} or {METRICS_GROUP}"
            )
        if not path.startswith(_API + "/"):
            return None if method in _READ_METHODS else f"may not {method} {path}"
        if path in (_API + "/validate", _API + "/plan", _API + "/apply"):
            return None  # validate reads nothing private; plan and apply `admit` each object
        if path == _DRILLS or path.startswith(_DRILLS + "/"):
            return "may not run or read drills (admins only)"
        if path == _WATCH:  # each kind it names is checked by `may_list` as it is streamed
            return None if method in _READ_METHODS else f"may not {method} {path}"
        info = request.match_info
        try:
            res = reg_objects.resource_named(info.get("plural", ""))
        except errors.Invalid:
            return f"may not use {path}"
        ns = info.get("ns")
        listing = method in _READ_METHODS and not info.get("name")
        if listing and ns is None and (res.namespaced or res.plural == "works"):
            return None  # a list (or watch) of every namespace: cut to the tenant's
        if res.plural == "workloads" and ns and info.get("kind") and info.get("name"):
            # A Namespace template is its namespace's (`namespace_of`): its tenant may
            # read and delete it, and with it what it holds, if it may write that too.
            ref = keys.WorkloadRef(ns, info["kind"], info["name"])
            ns = reg_objects.namespace_of(ref) or ns
        return _tenant_rule(
            who,
            plural=res.plural,
            namespaced=res.namespaced,
            ns=ns,
            method=method,
            kind=info.get("kind"),
        )

    def admit(
        self,
        request: web.Request,
        res: reg_objects.Resource,
        ns: str | None,
        *,
        kind: str | None = None,
        selects: str | None = None,
        what: str = "",
    ) -> None:
        """Raise 403 unless the caller may write objects of `res` (of workload `kind`, its
        `Kind.group` key segment) in namespace `ns` (None: cluster-scoped;
        `reg_objects.access_namespace` says which an object needs): each document of an
        apply, a create or an update, each document a plan is asked about, and each
        resource a Namespace's deletion takes with it. `selects` is what of a tenant's
        quota and limits a policy can select (`selected_limits`). `what` names the object
        refused (`ClusterRole ml-admin (document 2)`), which opens the message."""
        who = request.get(PRINCIPAL)
        if who is None or who.is_admin:
            return
        denied = _tenant_rule(
            who,
            plural=res.plural,
            namespaced=res.namespaced,
            ns=ns,
            method="PUT",
            kind=kind,
            selects=selects,
        )
        if denied is not None:
            prefix = f"{what}: " if what else ""
            raise web.HTTPForbidden(text=f"{prefix}user {who.user!r} {denied}")


def readable(who: Principal | None) -> frozenset[str] | None:
    """The namespaces whose objects `who` may read; None: every one (an admin, or a
    server without authentication). A list across namespaces is cut to these."""
    if who is None or who.is_admin:
        return None
    return who.namespaces


def may_list(who: Principal, plural: str) -> str | None:
    """None when `who` may list every object of `plural` (across all namespaces), as a
    `GET .../{plural}` would be decided; else the end of a 'user X ...' sentence."""
    if who.is_admin:
        return None
    res = reg_objects.resource_named(plural)
    return _tenant_rule(who, plural=res.plural, namespaced=res.namespaced, ns=None, method="GET")


def _status_rule(who: Principal, request: web.Request) -> str | None:
    """The joined workload views: a named namespace must be the tenant's own; a list that
    names none is allowed, and `WorkloadsApi` cuts it to the tenant's namespaces."""
    if request.method not in _READ_METHODS:
        return f"may not {request.method} {request.path}"
    info = request.match_info
    ns = info.get("ns") or request.query.get("namespace")
    if ns and info.get("kind") and info.get("name"):  # a Namespace template is its tenant's
        ns = reg_objects.namespace_of(keys.WorkloadRef(ns, info["kind"], info["name"])) or ns
    if ns and ns not in who.namespaces:
        return f"has no access to namespace {ns!r}"
    return None


def _tenant_rule(
    who: Principal,
    *,
    plural: str,
    namespaced: bool,
    ns: str | None,
    method: str,
    kind: str | None = None,
    selects: str | None = None,
) -> str | None:
    """The tenant rules of the module docstring for one request or object; `kind` is a
    workload's `Kind.group` key segment, when the caller names one; `selects`, what of
    the namespace's limits a policy can select (`selected_limits`)."""
    reading = method in _READ_METHODS
    verb = "read" if reading else "change"
    if not namespaced:
        if reading and plural in _TENANT_READS_CLUSTER_SCOPED:
            return None
        return f"may not {verb} cluster-scoped {plural}"
    if ns is None:
        return f"may not list {plural} across all namespaces; name a namespace"
    if ns == keys.CLUSTER_SCOPE:  # a cluster-scoped workload other than a Namespace
        return f"may not {verb} cluster-scoped {kind or plural} objects (admins only)"
    if ns not in who.namespaces:
        return f"has no access to namespace {ns!r}"
    if reading:
        return None
    if plural == "workloads" and kind in TENANT_LIMITS:
        return (
            f"may not change {kind} templates: they set the limits of the namespace's"
            " members, which tenants may not raise (read-only for tenants)"
        )
    if selects is not None:
        return (
            f"may not change a policy that selects {selects}: it would edit or move the"
            " namespace's limits in its members, which tenants may not raise; name the"
            " kinds it acts on in resourceSelectors, none of them ResourceQuota or LimitRange"
        )
    if plural in _TENANT_WRITES:
        return None
    return f"may not change {plural} (read-only for tenants)"
