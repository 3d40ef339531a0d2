"""Which kinds live outside a namespace: every built-in cluster-scoped kind of Kubernetes.

A kind missing from the list was taken for namespaced: a tenant wrote, under its own
namespace, a MutatingWebhookConfiguration that a member's API server would have applied
to every namespace. The Kubernetes API itself, as kubernetes_asyncio's clients serve it,
says which kinds are cluster-scoped: those read or created without a namespace.
"""

from __future__ import annotations

import inspect
import re

import kubernetes_asyncio.client as kube_client
import pytest

from policies.models import kinds

_UNNAMESPACED = re.compile(r"(read|create)_(?!namespaced_)[a-z_]+")
_KIND = re.compile(r":rtype: V\d+(?:alpha\d+|beta\d+)?(?P<kind>\w+)")


def _cluster_scoped_kinds() -> set[str]:
    """Kinds some Kubernetes API group reads or creates without a namespace."""
    found: set[str] = set()
    for name, api in inspect.getmembers(kube_client, inspect.isclass):
        if not name.endswith("Api") or name == "ApiClient":
            continue
        for method, fn in inspect.getmembers(api, inspect.isfunction):
            if not _UNNAMESPACED.fullmatch(method) or method.endswith(
                ("_status", "_with_http_info", "_approval")
            ):
                continue
            typed = _KIND.search(inspect.getdoc(fn) or "")
            if typed:
                found.add(typed["kind"])
    return found


def test_every_built_in_cluster_scoped_kind_is_known() -> None:
    scoped = _cluster_scoped_kinds()
    assert {"MutatingWebhookConfiguration", "Namespace", "StorageClass"} <= scoped
    assert sorted(k for k in scoped if kinds.is_namespaced(k)) == []


@pytest.mark.parametrize(
    "kind", ["Deployment", "Job", "Secret", "ConfigMap", "ResourceQuota", "Role", "Ingress"]
)
def test_namespaced_kinds_stay_namespaced(kind: str) -> None:
    assert kinds.is_namespaced(kind)
