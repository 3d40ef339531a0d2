"""Shared building blocks of every fedctl model: strict frozen models, metadata, envelopes.

Why strict: a misspelt field in policy YAML that is silently dropped is the worst bug a
platform team can hit, so every model forbids unknown fields (the loader turns the error
into `FILE:LINE:COL: path: unknown field 'x' (did you mean 'y'?)`). Why frozen: objects are
shared between the cache, the scheduler snapshot and the API; nobody may mutate them.
Field names are Kubernetes camelCase on the wire and snake_case in Python. Why metadata
checks its label and annotation keys (`rules`): a member refuses an object whose labels
break Kubernetes' rules, so one fedctl stored would be admitted, charged to its queue and
never run, and a Cluster label no selector can name matches nothing, silently.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from policies.models.rules import Annotations, Labels

__all__ = ["FrozenModel", "KubeObject", "ObjectMeta", "OwnedMeta"]


class FrozenModel(BaseModel):
    """Frozen, unknown fields forbidden, camelCase aliases (Kubernetes style)."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        alias_generator=to_camel,
        use_enum_values=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict with camelCase keys and without unset defaults."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ObjectMeta(FrozenModel):
    """The subset of Kubernetes ObjectMeta that fedctl objects carry."""

    name: str = Field(
        min_length=1,
        max_length=253,
        description="A DNS subdomain (lowercase letters, digits, '-' and '.'), or for a"
        " Namespace a DNS label (at most 63, no '.'), on every kind, as members' API servers"
        " want it; `validate`, `apply` and the API refuse any other at this line.",
    )
    namespace: str | None = Field(
        default=None,
        description="A DNS label (lowercase letters, digits and '-', at most 63). Not one"
        " Kubernetes keeps for itself (kube-*) for a workload template or a"
        " FederatedResourceQuota: fedctl propagates nothing there, as Karmada.",
    )
    labels: Labels = Field(
        default_factory=dict,
        description="Keys are qualified names ([DNS-subdomain prefix/]name, the name at most"
        " 63 characters of letters, digits, '-', '_' and '.', starting and ending with a"
        " letter or digit); values at most 63 of the same, or empty.",
    )
    annotations: Annotations = Field(
        default_factory=dict,
        description="Keys are qualified names, as label keys; values are free.",
    )
    resource_version: str | None = Field(
        default=None, description="Registry mod revision; set by the API, echoed for CAS."
    )
    uid: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    # Carried so manifests pasted from `kubectl get -o yaml` load; fedctl does not act on them.
    generate_name: str | None = None
    owner_references: list[dict[str, Any]] | None = None
    finalizers: list[str] | None = None
    managed_fields: list[dict[str, Any]] | None = None
    deletion_timestamp: str | None = None
    self_link: str | None = None


class OwnedMeta(ObjectMeta):
    """Metadata of objects fedctl writes itself (bindings, works, status)."""


class KubeObject(FrozenModel):
    """The envelope every stored document has: apiVersion, kind, metadata."""

    api_version: str
    kind: str
    metadata: ObjectMeta

    @model_validator(mode="before")
    @classmethod
    def _status_is_read_only(cls, data: Any) -> Any:
        """A `status` on a kind that keeps none of its own is dropped, not refused: what
        `fedctl get -o yaml` prints (a Queue with its admitted and pending counts) must
        apply again as it stands, as with kubectl, where the server ignores status."""
        if isinstance(data, dict) and "status" in data and "status" not in cls.model_fields:
            return {k: v for k, v in data.items() if k != "status"}
        return data
