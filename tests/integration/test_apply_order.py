"""Jobs created by one `fedctl apply` queue in the order of the file, not of their names,
and keep that place when applied again: FIFO is by creation, as in Kubernetes and Kueue,
where `kubectl apply -f` creates one document after another.

Real pieces: etcd, the API (one apply, one transaction: one create revision for all),
the CLI and the scheduling loop.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from federation import clock
from federation.registry import codec, embedded, keys, objects
from federation.registry.etcd import EtcdStore
from federation.scheduler.loop import SchedulerLoop
from federation.settings import SchedulerSettings
from policies.models.binding import Binding
from tests.conftest import etcd_settings
from tests.integration.test_scheduler_loop import with_member
from tests.serving import api_server, fedctl
from tests.unit.scheduler import fleet
from tests.waiting import background, wait_for

pytestmark = pytest.mark.integration

_STEPS = ("step-9", "step-10", "step-11")
"""In file order; by name, step-10 and step-11 come before step-9."""


@pytest.fixture
async def store(own_etcd: embedded.EmbeddedEtcd) -> AsyncIterator[EtcdStore]:
    """A registry on an etcd of its own, holding cluster a (2 nodes of 16 cores)."""
    real = EtcdStore(etcd_settings(own_etcd.url))
    await real.connect()
    await with_member(real)
    yield real
    await real.close()


def _file(path: Path, names: tuple[str, ...], *, label: str = "") -> Path:
    """A StrictFIFO queue with room for one 2-core Job, and the Jobs `names` in order."""
    queue = fleet.queue("sq", capability={"cpu": "2"}, dequeueStrategy="StrictFIFO")
    docs: list[dict[str, Any]] = [queue.to_wire()]
    for name in names:
        job = fleet.workload(name, cpu="2", queue="sq").to_wire()
        if label:
            job["metadata"]["labels"] = {"edit": label}
        docs.append(job)
    path.write_text("\n---\n".join(json.dumps(d) for d in docs))
    return path


async def _bindings(store: EtcdStore) -> dict[str, Binding]:
    listed = await codec.TypedStore(store, codec.Codec(Binding)).list(keys.prefix("bindings"))
    return {item.obj.metadata.name: item.obj for item in listed.items}


async def test_jobs_of_one_apply_queue_in_file_order_and_keep_it_when_applied_again(
    store: EtcdStore, tmp_path: Path
) -> None:
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", str(_file(tmp_path / "a.yaml", _STEPS))) == 0
        # Applied again, in another order and with an edit: still where each was created.
        again = _file(tmp_path / "b.yaml", _STEPS[::-1], label="again")
        assert await fedctl(server, "apply", "-f", str(again)) == 0
    stored = await codec.TypedStore(store, objects.ObjectCodec()).list(keys.prefix("workloads"))
    created = {item.obj.metadata.name: item.create_revision for item in stored.items}
    assert len(set(created.values())) == 1  # one transaction: the revision cannot tell them apart

    loop = SchedulerLoop(store, settings=SchedulerSettings(), clock=clock.real, debounce=0.05)
    async with background(loop.run()):

        async def settled() -> dict[str, Binding] | None:
            found = await _bindings(store)
            return found if set(found) == set(_STEPS) else None

        found = await wait_for(settled, timeout=15, message="a Binding for every step")
    assert found["step-9"].status.phase == "Scheduled"
    assert found["step-10"].status.phase == "Pending"
    assert found["step-10"].status.reason.startswith("queue sq at capability for cpu")
    assert found["step-11"].status.reason.startswith(
        "waiting behind team/Job.batch/step-10 in queue sq"
    )
