"""The ledger still equals a full `reconcile` once Bindings record their claiming policy:
random runs of the changes a loop sees, plus claims recorded, policies that keep, preempt
or vanish, and the loop's memory of claims updated as the loop updates it.

Why: the claim a workload is read under comes from its own Binding, or from what the loop
remembers, so a remembered claim that changed must not need sorting again (it does not:
reading a workload under the claim it gave yields that claim again).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from federation.scheduler import binder as binder_mod
from federation.scheduler import plan, reconcile, recorded
from policies.models.binding import Binding
from tests.unit.scheduler import test_ledger as base
from tests.unit.scheduler.fleet import workload
from tests.unit.scheduler.test_claim_preemption import claimed
from tests.unit.scheduler.test_loop import DUPLICATED, key


def _policy(name: str, priority: int, preemption: str) -> Any:
    return DUPLICATED.model_copy(
        update={
            "metadata": DUPLICATED.metadata.model_copy(update={"name": name}),
            "spec": DUPLICATED.spec.model_copy(
                update={"priority": priority, "preemption": preemption}
            ),
        }
    )


NEVER = _policy("never", 9, "Never")
TAKER = _policy("taker", 5, "Always")
CLAIMS = [plan.policy_id(p) for p in (DUPLICATED, NEVER, TAKER)] + [
    "",
    "PropagationPolicy/team/gone",
]
POLICY_SETS: list[list[Any]] = [[], [DUPLICATED], [DUPLICATED, NEVER], [DUPLICATED, TAKER], [NEVER]]


class ClaimWorld(base.World):
    """`test_ledger`'s world, whose Bindings also record claims and whose loop remembers."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.claims: dict[str, str] = {}

    def step(self, marks: dict[str, str]) -> set[str]:
        rng = self.rng
        if rng.random() >= 0.4:
            return super().step(marks)
        name = rng.choice(self.names)
        ref = key(workload(name, kind="Deployment"))
        ref = ref if ref in self.workloads else key(workload(name))
        action = rng.choice(["record", "record", "policies", "remember"])
        if action == "policies":
            self.policies = list(rng.choice(POLICY_SETS))
            return set()
        if action == "remember":
            choice = rng.choice([*(c for c in CLAIMS if c), None])  # "" only on Bindings
            if choice is None:
                self.claims.pop(ref, None)
            else:
                self.claims[ref] = choice
            return {ref}
        bound = self.bindings.get(ref)
        if bound is None:
            return set()
        self.bindings[ref] = claimed(bound, rng.choice(CLAIMS))
        return {ref}

    def inputs(self) -> dict[str, Any]:
        return {**super().inputs(), "claims": dict(self.claims)}

    def remember(self, ledger: reconcile.Ledger, dirty: set[str] | None) -> None:
        """What the loop's step 4 does with the claims the ledger read."""
        if dirty is None:
            self.claims = ledger.held()
            return
        for ref in dirty:
            claim = ledger.held_by(ref)
            if claim is None:
                self.claims.pop(ref, None)
            else:
                self.claims[ref] = claim


def _amends(amends: dict[str, Binding]) -> dict[str, tuple[object, ...]]:
    return {
        ref: (
            b.spec,
            b.status.phase,
            b.status.reason,
            b.metadata.annotations.get(binder_mod.CLAIMED_BY),  # none: a finished job's
        )
        for ref, b in amends.items()
    }


@pytest.mark.parametrize("seed", range(12))
def test_the_ledger_with_recorded_claims_equals_a_full_reconcile(seed: int) -> None:
    world = ClaimWorld(random.Random(seed))
    ledger, memo, prepared = reconcile.Ledger(), {}, reconcile.Prepared()  # type: ignore[var-annotated]
    full_memo: dict[str, Any] = {}
    full_prepared = reconcile.Prepared()
    ledger.update(None, **world.inputs(), memo=memo, prepared=prepared)
    world.remember(ledger, None)
    seen = {"kept": 0, "amended": 0, "incremental": 0}
    for _ in range(200):
        dirty = world.step(dict(ledger.marks))
        changes = ledger.update(dirty, **world.inputs(), memo=memo, prepared=prepared)
        full = reconcile.reconcile(**world.inputs(), memo=full_memo, prepared=full_prepared)
        assert base._ledger_view(ledger) == base._view(full)
        assert (ledger.claims, ledger.held()) == (full.claims, full.held)
        by_ref = {str(binder_mod.binding_ref(b)): b for b in full.amends}
        assert _amends(ledger.amends) == _amends(by_ref)
        seen["incremental"] += changes is not None
        seen["amended"] += bool(ledger.amends)
        seen["kept"] += sum(  # admitted, though no policy claims what its Binding stands for
            recorded.claimed_as(world.bindings[k], world.claims.get(k)) is not None
            for k in set(ledger.admitted) - set(ledger.claims)
        )
        world.remember(ledger, None if changes is None else dirty)
    assert min(seen.values()) > 5  # the runs kept, amended and mostly sorted per workload
