"""`fedctl describe KIND NAME`: one object in detail, read through the REST API.

A stored object is its metadata, spec and status; a queue adds its usage against its
limits (`queues_view`), a propagation policy the workloads it claims and where each runs,
a workload its Binding, every cluster's verdict and its works (`workloads_view`), and a
cluster the member's view (`cluster_cmd`). The object is the one NAME addresses by the
rule every verb shares (`addressing`); works and events, which have no name of their
own, are each of the workload's.
"""

from __future__ import annotations

import argparse
from typing import Any

from federation import errors
from federation.cli import addressing, client, render

__all__ = ["describe"]


async def describe(args: argparse.Namespace) -> int:
    """Print the object KIND NAME (or KIND/NAME) addresses; refused if it names none."""
    res = addressing.resolve(args)
    if not args.name:
        raise errors.Invalid("describe one object: give KIND NAME or KIND/NAME")
    if res.plural == "workloads":
        return await _describe_workload(args)
    if res.plural == "clusters" and args.name:
        # The member's view (readiness, capacity by chip, prices, taints, what runs there),
        # as `fedctl cluster describe` gives it: a dump of its spec told less.
        from federation.cli import cluster_cmd

        return await cluster_cmd.describe(args)
    addressing.check_name(args, res)
    async with client.ApiClient(args.server, token=args.token) as api:
        if res.plural in addressing.ABOUT:  # a workload's works or events: all of them
            listed = await api.request("GET", addressing.list_path(res, args))
            found = [i for i in listed["items"] if addressing.matches(i, args.name)]
            if not found:
                raise errors.NotFound(f'{res.plural} "{args.name}"')
        else:
            try:
                found = [await addressing.one(api, res, args)]
            except errors.NotFound:
                if res.plural == "queues" and await _describe_implicit_queue(args):
                    return 0
                raise
    for i, item in enumerate(found):
        if i:
            print()
        await _describe_one(args, res, item)
    return 0


async def _describe_one(args: argparse.Namespace, res: Any, item: dict[str, Any]) -> None:
    """`describe` of one stored object: its metadata, spec and status; for a queue, its
    usage against its limits; for a propagation policy, the workloads it claims."""
    meta = item.get("metadata", {})
    print(f"Name:        {meta.get('name')}")
    if meta.get("namespace"):
        print(f"Namespace:   {meta.get('namespace')}")
    print(f"Kind:        {item.get('kind')} ({item.get('apiVersion')})")
    print(f"Revision:    {meta.get('resourceVersion')}")
    for section in ("spec", "status"):
        if item.get(section):
            print(f"{section.capitalize()}:")
            print("  " + render.dump(item[section], "yaml").replace("\n", "\n  "))
    if res.plural == "queues":
        from federation.cli import queues_view, workloads_view

        async with client.ApiClient(args.server, token=args.token) as api:
            status = await api.request("GET", queues_view.PATH)
            costs = await queues_view.costs(api)
            placed = await api.request("GET", f"{workloads_view.PREFIX}/workloads")
        costed = queues_view.costed(status["items"], costs)
        mine = [q for q in costed if q["name"] == meta.get("name")]
        if mine:
            # The limits as stored (shown above), not as the view last read them: it may
            # be seconds behind a write.
            limits = {
                k: (item.get("spec") or {}).get(k)
                for k in ("capability", "guarantee", "maxHourlyCost")
            }
            print(queues_view.usage({**mine[0], **limits}))
        names = queues_view.subtree(status["items"], str(meta.get("name")))
        print(queues_view.waiting(placed["items"], names))
    if res.plural in ("propagationpolicies", "clusterpropagationpolicies"):
        from federation.cli import workloads_view
        from federation.scheduler import plan as planning
        from policies.models import kinds
        from policies.models.rules import STORED

        model = kinds.model_for(item["apiVersion"], item["kind"])
        policy = model.model_validate(item, context=STORED)
        assert isinstance(policy, planning.AnyPolicy)  # the plurals above are those kinds
        async with client.ApiClient(args.server, token=args.token) as api:
            placed = await api.request("GET", f"{workloads_view.PREFIX}/workloads")
        print(workloads_view.claimed_by(placed["items"], planning.policy_id(policy)))


async def _describe_implicit_queue(args: argparse.Namespace) -> bool:
    """The default queue works with no Queue object, so `get queues` lists it; describe
    answers for it too: what it is, how to give it limits, and what it holds."""
    from federation.cli import queues_view, workloads_view

    async with client.ApiClient(args.server, token=args.token) as api:
        status = await api.request("GET", queues_view.PATH)
    mine = [q for q in status["items"] if q["name"] == args.name and q.get("implicit")]
    if not mine:
        return False
    print(f"Name:        {args.name}")
    print("Kind:        Queue (implicit: no Queue object is stored)")
    print(
        "Spec:        weight 1, priority 0, no capability or guarantee; apply a Queue named"
        f" {args.name} to set them"
    )
    print(queues_view.usage(mine[0]))
    async with client.ApiClient(args.server, token=args.token) as api:
        placed = await api.request("GET", f"{workloads_view.PREFIX}/workloads")
    print(queues_view.waiting(placed["items"], {args.name}))
    return True


async def _describe_workload(args: argparse.Namespace) -> int:
    from federation.cli import workloads_view

    async with client.ApiClient(args.server, token=args.token) as api:
        item = await addressing.find_workload(api, args)
        doc = await api.request("GET", f"{workloads_view.PREFIX}/{addressing.workload_path(item)}")
    print(workloads_view.describe(doc))
    return 0
