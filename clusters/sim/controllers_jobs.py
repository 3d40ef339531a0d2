"""Batch controllers of a simulated cluster: Job, Volcano Job and PyTorchJob.

Called by the worker in `controllers.py` when a job object or one of its pods changes.
Training workloads are what the federation controller places on GPU and NPU members, so
their lifecycle has to be observable the way it is on a real cluster: a batch/v1 Job runs
`parallelism` pods until `completions` succeed (Complete) or more than `backoffLimit` fail
(Failed/BackoffLimitExceeded) or it has been active `activeDeadlineSeconds`
(Failed/DeadlineExceeded), with `active`/`ready`/`succeeded`/`failed` counts and start
and completion times; pods refused by quota leave `active: 0` and a FailedCreate event; a
finished Job with `ttlSecondsAfterFinished` is deleted that long after, as upstream.
The Volcano Job and PyTorchJob kinds are opaque to the API server, but here they still get
their pods (per task / per replica type) and a status: Volcano's `state.phase`
(Pending/Running/Completed/Failed) and the Kubeflow conditions (Created/Running/Succeeded/
Failed). Pod run time and failure come from the kubelet stand-in (`sim.fedctl.io/*`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from clusters.sim.api_errors import ApiError
from clusters.sim.controllers_base import (
    JOB,
    POD,
    PYTORCHJOB,
    VCJOB,
    Context,
    back_off,
    create_pod,
    creation_paused,
    pod_active,
    pod_ready,
    set_condition,
    write_status,
)

__all__ = ["reconcile_job", "reconcile_pytorchjob", "reconcile_vcjob"]

Obj = Mapping[str, Any]

_JOB_COMPONENT = "job-controller"
_INDEX = "batch.kubernetes.io/job-completion-index"


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase", "Pending"))


def _fail_create(ctx: Context, owner: Obj, key: tuple[str, str, str], exc: ApiError) -> None:
    ctx.recorder.event(
        owner,
        reason="FailedCreate",
        etype="Warning",
        message=f"Error creating: {exc.message}",
        component=_JOB_COMPONENT,
    )
    back_off(ctx, owner, key)


# -- batch/v1 Job ----------------------------------------------------------------------------


def reconcile_job(ctx: Context, ns: str, name: str) -> None:
    job = ctx.peek(JOB, ns, name)
    if job is None or job["metadata"].get("deletionTimestamp"):
        return
    spec, old = job.get("spec") or {}, job.get("status") or {}
    if _finished(old):
        _expire(ctx, job)
        return
    pods = ctx.owned_pods(job)
    succeeded = sum(1 for p in pods if _phase(p) == "Succeeded")
    failed = sum(1 for p in pods if _phase(p) == "Failed")
    active = [p for p in pods if pod_active(p)]
    completions = spec.get("completions")
    parallelism = int(spec.get("parallelism", 1))
    now = ctx.now()
    conds = [dict(c) for c in old.get("conditions") or ()]
    suspended = bool(spec.get("suspend"))
    status: dict[str, Any] = {}
    if old.get("startTime") or not suspended:
        status["startTime"] = old.get("startTime", now)
    conds = _suspension(ctx, job, conds, suspended=suspended, now=now)
    if _resumed(job, conds):
        status["startTime"] = now  # upstream restarts the clock of a resumed Job
    if suspended:
        for pod in active:
            ctx.store.delete(POD, ns, pod["metadata"]["name"])
        active = []
    elif failed > int(spec.get("backoffLimit", 6)):
        conds = _fail(ctx, job, active, conds, reason="BackoffLimitExceeded", now=now)
        active = []
    elif _past_deadline(ctx, job, status.get("startTime")):
        conds = _fail(ctx, job, active, conds, reason="DeadlineExceeded", now=now)
        active = []
    elif (completions is not None and succeeded >= int(completions)) or (
        completions is None and succeeded > 0 and not active
    ):
        for ctype in ("SuccessCriteriaMet", "Complete"):
            conds = set_condition(
                conds,
                {
                    "type": ctype,
                    "status": "True",
                    "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                    "lastProbeTime": now,
                },
                now=now,
            )
        status["completionTime"] = now
        ctx.recorder.event(
            job, reason="Completed", message="Job completed", component=_JOB_COMPONENT
        )
    else:
        want = (
            parallelism if completions is None else min(parallelism, int(completions) - succeeded)
        )
        active += _start_job_pods(
            ctx, job, want - len(active), pods, indexed=(spec.get("completionMode") == "Indexed")
        )
    status.update(
        active=len(active),
        ready=sum(1 for p in active if pod_ready(p)),
        succeeded=succeeded,
        failed=failed,
        terminating=0,
        uncountedTerminatedPods={},
    )
    if conds:
        status["conditions"] = conds
    write_status(ctx, JOB, ctx.fetch(JOB, ns, name), status)
    if _finished(status):
        _expire(ctx, job)


_FAILURES = {
    "BackoffLimitExceeded": "Job has reached the specified backoff limit",
    "DeadlineExceeded": "Job was active longer than specified deadline",
}
"""The job controller's message for each reason it fails a Job with."""


def _fail(
    ctx: Context, job: Obj, active: list[Obj], conds: list[dict[str, Any]], *, reason: str, now: str
) -> list[dict[str, Any]]:
    """Fail `job` as the job controller does: its active pods deleted, FailureTarget and
    Failed set with `reason`, and a Warning event of that reason."""
    for pod in active:
        ctx.store.delete(POD, pod["metadata"]["namespace"], pod["metadata"]["name"])
    message = _FAILURES[reason]
    for ctype in ("FailureTarget", "Failed"):
        cond = {"type": ctype, "status": "True", "reason": reason, "message": message}
        conds = set_condition(conds, {**cond, "lastProbeTime": now}, now=now)
    ctx.recorder.event(
        job, reason=reason, message=message, etype="Warning", component=_JOB_COMPONENT
    )
    return conds


def _past_deadline(ctx: Context, job: Obj, started: str | None) -> bool:
    """Whether the Job has been active `activeDeadlineSeconds` since its startTime; if
    not yet, it is looked at again when it will have been, as the job controller requeues
    it then: no pod may change meanwhile (a pod of 120s under a deadline of 15s)."""
    deadline = (job.get("spec") or {}).get("activeDeadlineSeconds")
    if deadline is None or not started:
        return False
    begun = dt.datetime.strptime(started, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    left = float(deadline) - (ctx.clock.now() - begun).total_seconds()
    if left <= 0:
        return True
    meta = job["metadata"]
    ctx.queue.add_after(("job", meta["namespace"], meta["name"]), left)
    return False


def _suspension(
    ctx: Context, job: Obj, conds: list[dict[str, Any]], *, suspended: bool, now: str
) -> list[dict[str, Any]]:
    """The `Suspended` condition as the Job controller keeps it: True (JobSuspended) while
    `spec.suspend` holds, False (JobResumed) once it is lifted, with an event each time it
    turns; a Job never suspended gets none."""
    current = next((c for c in conds if c.get("type") == "Suspended"), None)
    want = "True" if suspended else "False"
    if (current is None and not suspended) or (current or {}).get("status") == want:
        return conds
    reason, message = (
        ("JobSuspended", "Job suspended") if suspended else ("JobResumed", "Job resumed")
    )
    ctx.recorder.event(
        job,
        reason="Suspended" if suspended else "Resumed",
        message=message,
        component=_JOB_COMPONENT,
    )
    cond = {"type": "Suspended", "status": want, "reason": reason, "message": message}
    return set_condition(conds, {**cond, "lastProbeTime": now}, now=now)


def _resumed(job: Obj, conds: list[dict[str, Any]]) -> bool:
    """Whether this pass turned `Suspended` from True to False."""
    before = next(
        (
            c
            for c in (job.get("status") or {}).get("conditions") or ()
            if c.get("type") == "Suspended"
        ),
        None,
    )
    after = next((c for c in conds if c.get("type") == "Suspended"), None)
    return bool(
        before and after and before.get("status") == "True" and after.get("status") == "False"
    )


def _expire(ctx: Context, job: Obj) -> None:
    """The TTL-after-finished controller: a finished Job with `ttlSecondsAfterFinished`
    is deleted, pods and all, that long after it finished (counted from when this
    controller saw it finish, on the simulated clock)."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    if ttl is None:
        return
    meta = job["metadata"]
    slot, now = f"ttl/{meta['uid']}", ctx.clock.monotonic()
    due = ctx.deadlines.setdefault(slot, now + max(0.0, float(ttl)))
    if now < due:
        ctx.queue.add_after(("job", meta["namespace"], meta["name"]), due - now)
        return
    ctx.deadlines.pop(slot, None)
    ctx.store.delete(JOB, meta["namespace"], meta["name"])


def _finished(status: Obj) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )


def _start_job_pods(
    ctx: Context, job: Obj, count: int, pods: list[Obj], *, indexed: bool
) -> list[Obj]:
    meta = job["metadata"]
    labels = {
        "batch.kubernetes.io/job-name": meta["name"],
        "job-name": meta["name"],
        "batch.kubernetes.io/controller-uid": meta["uid"],
        "controller-uid": meta["uid"],
    }
    taken = {
        (p["metadata"].get("annotations") or {}).get(_INDEX)
        for p in pods
        if pod_active(p) or _phase(p) == "Succeeded"
    }
    free = (
        str(i)
        for i in range(int((job.get("spec") or {}).get("completions") or 0))
        if str(i) not in taken
    )
    created: list[Obj] = []
    if creation_paused(ctx, job, ("job", meta["namespace"], meta["name"])):
        return created
    for _ in range(max(0, count)):
        annotations: dict[str, str] = {}
        pod_labels = dict(labels)
        if indexed:
            index = next(free, None)
            if index is None:
                break
            annotations[_INDEX] = index
            pod_labels[_INDEX] = index
        try:
            pod = create_pod(
                ctx,
                job,
                (job.get("spec") or {}).get("template") or {},
                labels=pod_labels,
                annotations=annotations,
            )
        except ApiError as exc:
            _fail_create(ctx, job, ("job", meta["namespace"], meta["name"]), exc)
            break
        ctx.recorder.event(
            job,
            reason="SuccessfulCreate",
            message=f"Created pod: {pod['metadata']['name']}",
            component=_JOB_COMPONENT,
        )
        created.append(pod)
    return created


# -- opaque training kinds -----------------------------------------------------------------------


def _ensure_pods(
    ctx: Context,
    owner: Obj,
    key: tuple[str, str, str],
    groups: list[tuple[str, int, Obj]],
    labels_for: Any,
) -> dict[str, list[Obj]]:
    """Create missing `<owner>-<group>-<i>` pods; returns the pods per group."""
    meta = owner["metadata"]
    pods = {p["metadata"]["name"]: p for p in ctx.owned_pods(owner)}
    out: dict[str, list[Obj]] = {}
    for group, replicas, template in groups:
        for i in range(replicas):
            pod_name = f"{meta['name']}-{group.lower()}-{i}"
            pod = pods.get(pod_name)
            if pod is None:
                if creation_paused(ctx, owner, key):
                    continue
                try:
                    pod = create_pod(
                        ctx, owner, template, name=pod_name, labels=labels_for(group, i)
                    )
                except ApiError as exc:
                    _fail_create(ctx, owner, key, exc)
                    continue
            out.setdefault(group, []).append(pod)
    return out


def reconcile_vcjob(ctx: Context, ns: str, name: str) -> None:
    job = ctx.peek(VCJOB, ns, name)
    if job is None or job["metadata"].get("deletionTimestamp"):
        return
    old = job.get("status") or {}
    if (old.get("state") or {}).get("phase") in ("Completed", "Failed"):
        return
    tasks = (job.get("spec") or {}).get("tasks") or []
    groups = [
        (t.get("name") or f"task{i}", int(t.get("replicas", 1)), t.get("template") or {})
        for i, t in enumerate(tasks)
    ]
    by_task = _ensure_pods(
        ctx,
        job,
        ("vcjob", ns, name),
        groups,
        lambda task, i: {
            "volcano.sh/job-name": name,
            "volcano.sh/task-spec": task,
            "volcano.sh/task-index": str(i),
        },
    )
    pods = [p for ps in by_task.values() for p in ps]
    counts = {
        k: sum(1 for p in pods if _phase(p) == k)
        for k in ("Pending", "Running", "Succeeded", "Failed")
    }
    total = sum(r for _, r, _ in groups)
    min_available = int((job.get("spec") or {}).get("minAvailable", total))
    if counts["Failed"]:
        phase = "Failed"
    elif total and counts["Succeeded"] == total:
        phase = "Completed"
    elif counts["Running"] + counts["Succeeded"] >= min_available and counts["Running"]:
        phase = "Running"
    else:
        phase = "Pending"
    now = ctx.now()
    prev = old.get("state") or {}
    state = {
        "phase": phase,
        "lastTransitionTime": prev.get("lastTransitionTime", now)
        if prev.get("phase") == phase
        else now,
    }
    status = {
        "state": state,
        "minAvailable": min_available,
        "pending": counts["Pending"],
        "running": counts["Running"],
        "succeeded": counts["Succeeded"],
        "failed": counts["Failed"],
        "taskStatusCount": {
            task: {
                "phase": {
                    k: sum(1 for p in ps if _phase(p) == k)
                    for k in ("Pending", "Running", "Succeeded", "Failed")
                    if any(_phase(p) == k for p in ps)
                }
            }
            for task, ps in by_task.items()
        },
    }
    write_status(ctx, VCJOB, ctx.fetch(VCJOB, ns, name), status)


def reconcile_pytorchjob(ctx: Context, ns: str, name: str) -> None:
    job = ctx.peek(PYTORCHJOB, ns, name)
    if job is None or job["metadata"].get("deletionTimestamp"):
        return
    old = job.get("status") or {}
    if any(
        c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True"
        for c in old.get("conditions") or ()
    ):
        return
    specs = (job.get("spec") or {}).get("pytorchReplicaSpecs") or {}
    groups = [
        (rtype, int(s.get("replicas", 1)), s.get("template") or {})
        for rtype, s in sorted(specs.items())
    ]
    by_type = _ensure_pods(
        ctx,
        job,
        ("ptjob", ns, name),
        groups,
        lambda rtype, i: {
            "training.kubeflow.org/job-name": name,
            "training.kubeflow.org/replica-type": rtype.lower(),
            "training.kubeflow.org/replica-index": str(i),
        },
    )
    replica_statuses = {
        rtype: {
            "active": sum(1 for p in ps if pod_active(p)),
            "succeeded": sum(1 for p in ps if _phase(p) == "Succeeded"),
            "failed": sum(1 for p in ps if _phase(p) == "Failed"),
        }
        for rtype, ps in by_type.items()
    }
    # The training operator's rule: the master decides, else the workers. A role without
    # pods decides nothing: a copy whose Master was scaled to 0 read Succeeded at once,
    # as 0 of 0 master pods had succeeded, while its workers still ran.
    staffed = [rtype for rtype, count, _ in groups if count > 0]
    leader = "Master" if "Master" in staffed else next(iter(staffed), "")
    lead = replica_statuses.get(leader, {})
    lead_total = int((specs.get(leader) or {}).get("replicas", 1))
    now = ctx.now()
    conds = [dict(c) for c in old.get("conditions") or ()]
    conds = set_condition(
        conds, _kf("Created", f"PyTorchJob {name} is created.", now), now=now, progress=False
    )
    status: dict[str, Any] = {
        "replicaStatuses": replica_statuses,
        "startTime": old.get("startTime", now),
    }
    if any(rs["failed"] for rs in replica_statuses.values()):
        conds = set_condition(conds, _kf("Failed", f"PyTorchJob {name} has failed.", now), now=now)
        status["completionTime"] = now
    elif leader and lead.get("succeeded", 0) >= lead_total:
        conds = set_condition(
            conds, _kf("Succeeded", f"PyTorchJob {name} is successfully completed.", now), now=now
        )
        status["completionTime"] = now
    elif any(_phase(p) == "Running" for ps in by_type.values() for p in ps):
        conds = set_condition(
            conds, _kf("Running", f"PyTorchJob {name} is running.", now), now=now, progress=False
        )
    status["conditions"] = conds
    write_status(ctx, PYTORCHJOB, ctx.fetch(PYTORCHJOB, ns, name), status)


def _kf(ctype: str, message: str, now: str) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": "True",
        "reason": f"PyTorchJob{ctype}",
        "message": message,
        "lastUpdateTime": now,
    }
