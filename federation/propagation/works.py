"""Works in the registry: one per (workload, cluster), and the workload status beside them.

Fed by the workload pass (`converge.py`) with the Works it computed and the events it
wants to record; feeds the registry, where the propagator alone writes `keys.work_key` and
`keys.workload_status_key`. Keeps what it wrote (with mod revisions) so the next write is
a compare-and-swap without a read, and a pass that changed nothing writes nothing.

Why one transaction per pass: every Work of a workload, its aggregated status and its
events go to etcd together — one round trip, and a reader never sees Works that disagree
with the status beside them. A lost compare-and-swap (someone edited a Work by hand) falls
back to key-by-key writes after a re-read.

Why every write carries `guards`: under HA only the leader's propagator may write Works and
statuses; a deposed leader that wakes up mid-pass must not overwrite what its successor
wrote, so each transaction is fenced on the leader key and fails with `errors.Fenced`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from operator import itemgetter
from typing import Any

from federation import errors
from federation.propagation import interpreter
from federation.propagation import status as status_mod
from federation.registry import codec, keys
from federation.registry import store as st
from policies.models.base import ObjectMeta
from policies.models.binding import Binding, WorkloadReference
from policies.models.work import FINISHED_PHASES, Work, WorkloadStatus, WorkSpec, WorkStatus
from policies.models.workload import Workload

__all__ = ["Guards", "WorkRecords", "Write", "new_work", "unfenced"]

Guards = Callable[[], tuple[st.Guard, ...]]
"""The leader's fence, asked afresh for every write (raises `errors.Fenced` when deposed)."""


def unfenced() -> tuple[st.Guard, ...]:
    """No fence: a single propagator without election (tests, `fedctl up` without HA)."""
    return ()


Write = tuple[str, "codec.Stored[Work] | None", Work]
"""(cluster, the Work stored before or None, the Work wanted now)."""


def _spec(
    ref: keys.WorkloadRef,
    target: str,
    manifest: dict[str, Any],
    revision: int,
    uid: str | None,
    *,
    preserve: bool,
    suspended: bool,
    deps: bool,
) -> WorkSpec:
    return WorkSpec(
        cluster=target,
        workload=WorkloadReference(
            api_version=str(manifest.get("apiVersion")),
            kind=str(manifest.get("kind")),
            namespace=ref.namespace,
            name=ref.name,
            uid=uid,
        ),
        binding_revision=revision,
        manifest=manifest,
        preserve_on_deletion=preserve,
        propagate_deps=deps,
        suspend_dispatching=suspended,
    )


def new_work(
    *,
    ref: keys.WorkloadRef,
    cluster: str,
    old: codec.Stored[Work] | None,
    manifest: dict[str, Any],
    revision: int,
    status: WorkStatus,
    uid: str | None,
    preserve: bool = False,
    suspended: bool = False,
    deps: bool = False,
) -> Work:
    """The Work for one cluster; an unchanged condition keeps its transition time. `uid`:
    the template object's, so a copy of an object deleted and created again under its
    name is told apart (`WorkloadSync.sync` removes it before applying the new one).
    `suspended`: its policy suspends dispatching there, so nothing is applied. `deps`:
    its policy's propagateDeps."""
    if old is not None and old.obj.status.conditions and status.conditions:
        same = old.obj.status.conditions[0].model_copy(
            update={"last_transition_time": status.conditions[0].last_transition_time}
        )
        if same == status.conditions[0]:
            status = status.model_copy(update={"conditions": old.obj.status.conditions})
    return Work(
        metadata=ObjectMeta(name=ref.name, namespace=ref.namespace),
        spec=_spec(
            ref,
            cluster,
            manifest,
            revision,
            uid,
            preserve=preserve,
            suspended=suspended,
            deps=deps,
        ),
        status=status,
    )


class WorkRecords:
    """The Works and workload statuses this propagator wrote, by workload."""

    def __init__(
        self,
        works: codec.TypedStore[Work],
        statuses: codec.TypedStore[WorkloadStatus],
        *,
        guards: Guards = unfenced,
    ) -> None:
        self.works_store = works
        self.status_store = statuses
        self.guards = guards
        self.works: dict[str, dict[str, codec.Stored[Work]]] = {}
        self.written: dict[str, codec.Stored[WorkloadStatus]] = {}

    async def commit(
        self,
        ref: keys.WorkloadRef,
        writes: list[Write],
        status: WorkloadStatus | None,
        extra: list[st.Op],
    ) -> None:
        """Works, the workload status and events, in as few transactions as etcd takes.

        Usually one round trip. But each Work carries the whole manifest, so a ConfigMap of
        a few hundred KiB going to every member made one transaction of megabytes, past
        etcd's request limit (1.5 MiB by default): refused on every pass, the Works were
        never recorded and every member was applied to again and again. So the writes go
        in transactions of at most `st.TXN_BYTES` (and `_TXN_OPS` operations), the status
        and events last. Each is whole; a pass cut off between two is finished by the next
        (a copy applied without its Work is applied again, as after a crash).
        """
        ops: list[tuple[st.Op, Write | None]] = []
        for write in writes:
            key = keys.work_key(write[0], ref)
            old, work = write[1], write[2]
            ops.append(
                (
                    self.works_store.create_op(key, work)
                    if old is None
                    else self.works_store.update_op(key, work, revision=old.revision),
                    write,
                )
            )
        status_key = keys.workload_status_key(ref)
        old_status = self.written.get(str(ref))
        last: list[st.Op] = []
        if status is not None and (old_status is None or old_status.obj != status):
            last.append(self.status_store.put_op(status_key, status))
        elif status is None and old_status is not None:
            last.append(st.Delete(status_key))
        if not ops and not last and not extra:
            return
        ops.extend((op, None) for op in [*last, *extra])
        per_ref = self.works.setdefault(str(ref), {})
        done = 0
        for chunk in st.batches(ops, itemgetter(0), most=_TXN_OPS):
            try:
                result = await self.works_store.store.commit(
                    [op for op, _ in chunk], guards=self.guards()
                )
            except (errors.Conflict, errors.AlreadyExists, errors.NotFound):
                await self._commit_slowly(ref, writes[done:], status)
                return
            for _, written in chunk:
                if written is not None:
                    cluster, work = written[0], written[2]
                    per_ref[cluster] = codec.Stored(
                        keys.work_key(cluster, ref), work, result.revision
                    )
                    done += 1
        if status is None:
            self.written.pop(str(ref), None)
        else:
            self.written[str(ref)] = codec.Stored(status_key, status, result.revision)

    async def _commit_slowly(
        self,
        ref: keys.WorkloadRef,
        writes: list[Write],
        status: WorkloadStatus | None,
    ) -> None:
        """After a lost compare-and-swap (a Work changed behind our back): key by key."""
        for cluster, _, work in writes:
            key = keys.work_key(cluster, ref)
            fresh = await self.works_store.get(key)
            stored = await (
                self.works_store.create(key, work, guards=self.guards())
                if fresh is None
                else self.works_store.update(
                    key, work, revision=fresh.revision, guards=self.guards()
                )
            )
            self.works.setdefault(str(ref), {})[cluster] = stored
        status_key = keys.workload_status_key(ref)
        if status is None:
            await self.status_store.delete(status_key, guards=self.guards())
            self.written.pop(str(ref), None)
        else:
            self.written[str(ref)] = await self.status_store.put(
                status_key, status, guards=self.guards()
            )

    def status(
        self,
        ref: keys.WorkloadRef,
        workload: Workload | None,
        stored: codec.Stored[Binding] | None,
        writes: list[Write],
        *,
        placed: Mapping[str, int] | None = None,
        unready: Collection[str] = (),
    ) -> WorkloadStatus | None:
        """The aggregated status after `writes`; None when the workload is gone everywhere.
        `placed`: the replicas asked of each cluster the Binding targets (None: no Binding
        is known); `unready` as `status.aggregate` takes it.

        A finished job stays finished once its copies are removed. Its Binding can go
        Pending after it finished - preempted, reclaimed or evicted by a decision made a
        moment before its status arrived - and with no copy left the aggregate would
        have no phase: the scheduler would read the job as unfinished and run it again.
        Kept only for the same object (uid): a job deleted and created again under its
        name starts afresh. What it keeps is the outcome; the clusters (none now) and the
        Binding revision are current, so failover sees the copy gone and ends the task.
        """
        works = {c: w.obj for c, w in self.works.get(str(ref), {}).items()}
        works.update({cluster: work for cluster, _, work in writes})
        if workload is None and not works:
            return None
        if workload is not None:
            reference = WorkloadReference(
                api_version=workload.api_version,
                kind=workload.kind,
                namespace=ref.namespace,
                name=ref.name,
                uid=workload.metadata.uid,
            )
        else:
            reference = next(iter(works.values())).spec.workload
        revision = stored.revision if stored else 0
        old = self.written.get(str(ref))
        if (
            not works
            and old is not None
            and old.obj.phase in FINISHED_PHASES
            and reference.uid is not None
            and old.obj.workload.uid == reference.uid
        ):
            return old.obj.model_copy(update={"binding_revision": revision, "clusters": []})
        return status_mod.aggregate(
            ref,
            reference,
            works.values(),
            binding_revision=revision,
            placed=placed,
            unready=unready,
            desired=_desired(workload),
            asked=placed,
        )


def _desired(workload: Workload | None) -> int | None:
    """The replicas `workload`'s template asks for, as its kind counts them (None: none
    known, or a kind propagated whole)."""
    if workload is None:
        return None
    plugin = interpreter.for_kind(workload.api_version, workload.kind)
    return plugin.replicas({"spec": workload.spec})


_TXN_OPS = 100
"""Operations per transaction: under etcd's default `--max-txn-ops` (128)."""
