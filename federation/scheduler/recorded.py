"""What a stored Binding records about how it was admitted: the fingerprint it was
admitted under and the policy that claimed it (annotations `fedctl.io/fingerprint` and
`fedctl.io/policy`), and the Bindings that record a claim changed.

Fed by the Bindings in the registry cache and what the scheduling loop remembers for
those that record nothing; feeds `reconcile`, which tells from them whether a workload is
admitted as it stands, and the loop, which writes the amended Bindings.
"""

from __future__ import annotations

from federation.scheduler.binder import CLAIMED_BY, FINGERPRINT
from policies.models.binding import Binding

__all__ = ["admitted_as", "claimed_as", "finished", "orphaned", "with_claim"]


def admitted_as(binding: Binding, remembered: str | None, now: str) -> str:
    """The fingerprint `binding` was admitted under: the one stored on it, else the one the
    loop remembers, else `now`.

    Stored first because it is the record of the placement actually in the registry: it
    survives a restart or a change of leader, and a write that never landed leaves the old
    one there, so the workload is placed again rather than counted on a stale placement.
    Failover and rebalance rewrite a Binding from the stored one, keeping it. A Binding
    without one (written before fingerprints were stored, or by hand) falls back to the
    loop's memory, then to `now`: adopted as it stands, as a restart always did.
    """
    return binding.metadata.annotations.get(FINGERPRINT) or remembered or now


def claimed_as(binding: Binding | None, remembered: str | None) -> str | None:
    """The policy (`plan.policy_id`) that claimed a workload: the one its Binding records,
    else the one the loop remembers claiming it, else None (no claim to keep).

    Recorded first for the reasons `admitted_as` gives. A Binding records "" once its
    policy is gone and it stays where it is (`orphaned`); one without a record (claimed by
    none, or written before claims were recorded) falls back to the loop's memory, which
    holds what the ledger kept last (`Ledger.held`).
    """
    if binding is not None:
        recorded = binding.metadata.annotations.get(CLAIMED_BY)
        if recorded is not None:
            return recorded
    return remembered


def orphaned(binding: Binding, claimant: str, *, deleted: bool) -> Binding:
    """`binding` kept where it is though `claimant`, the policy that claimed it, is gone
    and no other claims it: recorded as claimed by none, with a reason that says so.

    Why keep it: Karmada keeps the ResourceBinding and the copies in the members when the
    claiming policy is deleted, until another policy claims the template; placing it
    again through the no-policy path would delete its copies in all members but one.
    """
    gone = "was deleted" if deleted else "no longer selects it"
    reason = (
        f"Kept where it is: its policy {claimant} {gone} and no other policy claims it;"
        " it stays until one does"
    )
    notes = {**binding.metadata.annotations, CLAIMED_BY: ""}
    return binding.model_copy(
        update={
            "metadata": binding.metadata.model_copy(update={"annotations": notes}),
            "status": binding.status.model_copy(update={"reason": reason}),
        }
    )


def finished(binding: Binding | None, phase: str) -> Binding | None:
    """The Binding to write for a workload that finished (`phase`, Succeeded or Failed)
    while it waited to be placed again with copies still running (a Pending Binding that
    names clusters), or None when there is none to write.

    Why: a finished workload is never placed again, so its Binding, left Pending, said
    "it can never be admitted … (still running on …)" for good, minutes after the job was
    done. It ran where the Binding names, at the size it was admitted with: Scheduled there.
    """
    if binding is None or binding.status.phase != "Pending" or not binding.spec.clusters:
        return None
    names = ", ".join(t.name for t in binding.spec.clusters)
    reason = f"{phase} on {names} at the size it was admitted with; later changes never ran"
    return binding.model_copy(
        update={
            "status": binding.status.model_copy(update={"phase": "Scheduled", "reason": reason})
        }
    )


def with_claim(binding: Binding, claimant: str) -> Binding:
    """`binding` recording `claimant`, the policy that claims it now.

    For a Binding written before claims were recorded: the loop remembered its claim only
    in memory, so a new leader, or a restart, after its policy was deleted re-placed it
    through the no-policy path instead of keeping it where it is (`orphaned`).
    """
    notes = {**binding.metadata.annotations, CLAIMED_BY: claimant}
    return binding.model_copy(
        update={"metadata": binding.metadata.model_copy(update={"annotations": notes})}
    )
