"""`fedctl cost`: what placed work costs an hour, summed from the Bindings by queue,
namespace, cluster, region, provider, chip or workload; finished jobs, waiting workloads, objects
without pods (a ConfigMap) and workloads already deleted cost nothing and are counted
apart or left out.

The real API over an in-memory registry; the CLI is `main.main`.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from federation.api import app as api_app
from federation.api import auth
from federation.api import workloads as workloads_api
from federation.cli import cost_cmd
from federation.registry import codec, keys, objects
from federation.registry import store as st
from federation.registry.memory import MemoryStore
from federation.scheduler import spend
from policies.models.binding import Binding, TargetCluster
from policies.models.cluster import Cluster
from policies.models.queue import Queue
from policies.models.work import WorkloadStatus
from policies.models.workload import Workload
from tests.serving import api_server, fedctl, serving
from tests.unit.scheduler.test_loop import binding

pytestmark = pytest.mark.integration


def workload(kind: str, ns: str, name: str, *, queue: str | None = None) -> Workload:
    doc: dict[str, Any] = {
        "apiVersion": "v1" if kind == "ConfigMap" else "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": ns},
    }
    if queue:
        doc["metadata"]["annotations"] = {"fedctl.io/queue": queue}
    if kind == "Deployment":
        doc["spec"] = {
            "replicas": 1,
            "template": {"spec": {"containers": [{"name": "c"}]}},
        }
    return Workload.model_validate(doc)


def cluster(name: str, region: str, provider: str | None = None) -> Cluster:
    return Cluster.model_validate(
        {
            "metadata": {"name": name},
            "spec": {"region": region, "connection": {"context": name}}
            | ({"provider": provider} if provider else {}),
        }
    )


def placed(w: Workload, targets: dict[str, tuple[int, str | None]], **kw: Any) -> Binding:
    b = binding(w, {name: n for name, (n, _) in targets.items()}, **kw)
    clusters = [
        TargetCluster(name=name, replicas=n, chip="amd64", hourly_cost=Decimal(v) if v else None)
        for name, (n, v) in targets.items()
    ]
    pod = {"cpu": "1"} if w.kind != "ConfigMap" else {}
    return b.model_copy(
        update={"spec": b.spec.model_copy(update={"clusters": clusters, "pod_requests": pod})}
    )


async def registry() -> MemoryStore:
    store = MemoryStore()
    shop = workload("Deployment", "web", "shop", queue="web")
    search = workload("Deployment", "web", "search", queue="web")
    train = workload("Deployment", "ml", "train", queue="ml")
    done = workload("Deployment", "ml", "done", queue="ml")
    waiting = workload("Deployment", "ml", "waiting", queue="ml")
    config = workload("ConfigMap", "web", "settings")
    gone = workload("Deployment", "web", "gone", queue="web")
    bindings = [
        (shop, placed(shop, {"us-1": (2, "0.50"), "eu-1": (1, "0.20")})),
        (search, placed(search, {"eu-1": (3, "0.30"), "cn-1": (1, None)})),
        (train, placed(train, {"us-1": (1, "4.00")})),
        (done, placed(done, {"us-1": (1, "9.00")})),
        (waiting, placed(waiting, {}, phase="Pending", reason="queue ml at capability")),
        (config, placed(config, {"us-1": (1, "0"), "eu-1": (1, "0")})),
        (gone, placed(gone, {"us-1": (5, "5.00")})),
    ]
    encode = objects.ObjectCodec().encode
    ops: list[st.Op] = [
        st.Put(objects.key_for(c), encode(c))
        for c in (cluster("us-1", "us-east", "aws"), cluster("eu-1", "eu-west"))
    ]
    for w, b in bindings:
        ref = objects.workload_ref(w)
        if w is not gone:  # its template deleted; the Binding goes with its copies
            ops.append(st.Put(objects.key_for(w), encode(w)))
        ops.append(st.Put(keys.binding_key(ref), codec.Codec(Binding).encode(b)))
    finished = WorkloadStatus.model_validate(
        {
            "workload": {"apiVersion": "apps/v1", "kind": "Deployment"}
            | {"namespace": "ml", "name": "done"},
            "phase": "Succeeded",
        }
    )
    ops.append(
        st.Put(
            keys.workload_status_key(objects.workload_ref(done)),
            codec.Codec(WorkloadStatus).encode(finished),
        )
    )
    await store.commit(ops)
    return store


async def test_cost_by_queue_and_region(capsys: pytest.CaptureFixture[str]) -> None:
    async with api_server(await registry()) as server:
        capsys.readouterr()
        assert await fedctl(server, "cost") == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[:4] == [  # web's search runs one replica where no price is known
            "QUEUE   WORKLOADS   REPLICAS   USD/H                  USD/30D    SHARE",
            "ml      1           1          4.0000                 2,880.00   80.0%",
            "web     2           7          1.0000 (+1 unpriced)   720.00     20.0%",
            "TOTAL   3           8          5.0000 (+1 unpriced)   3,600.00   100.0%",
        ]
        assert lines[4:7] == [
            "  1 replica(s) run where no price is known (a cluster without prices for them, or"
            " priced in a currency with no rate to USD): not in the sums",
            "  1 workload(s) waiting to be placed cost nothing yet",
            "  1 finished job(s) cost nothing more",
        ]
        assert await fedctl(server, "cost", "--by", "region", "-o", "json") == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["currency"] == "USD" and doc["by"] == "region"
        by_region = {i["name"]: (i["hourlyCost"], i["replicas"]) for i in doc["items"]}
        # cn-1 is not a joined cluster: its replicas group under "-".
        assert by_region == {"us-east": ("4.50", 3), "eu-west": ("0.50", 4), "-": ("0", 1)}
        assert doc["total"]["unpricedReplicas"] == 1
        # A multi-cloud team's first question: eu-1 names no provider, cn-1 is not joined.
        assert await fedctl(server, "cost", "--by", "provider", "-o", "json") == 0
        doc = json.loads(capsys.readouterr().out)
        by_provider = {i["name"]: (i["hourlyCost"], i["replicas"]) for i in doc["items"]}
        assert doc["by"] == "provider", doc
        assert by_provider == {"aws": ("4.50", 3), "-": ("0.50", 5)}
        assert await fedctl(server, "cost", "--by", "workload", "-n", "web") == 0
        out = capsys.readouterr().out
        assert "web/Deployment.apps/shop" in out and "ml/" not in out
        assert "finished" not in out  # the finished job is ml's


async def test_the_wide_workload_table_shows_queue_priority_and_cost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with api_server(await registry()) as server:
        capsys.readouterr()
        assert await fedctl(server, "get", "workloads", "-A", "-o", "wide") == 0
        lines = capsys.readouterr().out.splitlines()
    # Labelled with the currency: a federation in EUR showed unlabelled EUR figures.
    assert lines[0].split()[-4:] == ["CHIPS", "QUEUE", "PRIORITY", "COST/H(USD)"]
    cells = {line.split()[1]: line.split()[-3:] for line in lines[1:]}
    assert cells["shop"] == ["web", "0", "0.7000"]
    # One of its clusters has no price: the rest's sum, and what it leaves out.
    assert lines[[line.split()[1] for line in lines].index("search")].split()[-3:] == [
        "0.3000",
        "(+1",
        "unpriced)",
    ]
    assert cells["train"] == ["ml", "0", "4.0000"]
    assert cells["done"][-1] == "-"  # finished: its Binding's estimate is no longer spent


async def test_a_tenant_sees_the_cost_of_its_own_namespaces_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tokens = "tokens:\n  - {token: ml-token, user: mia, groups: ['tenant:ml']}\n"
    authn = auth.Authenticator(auth.TokenTable.from_yaml(tokens))
    app = api_app.build_app(await registry(), auth=authn)
    async with serving(app) as server:
        capsys.readouterr()
        assert await fedctl(server, "cost", "-o", "json", "--token", "ml-token") == 0
        doc = json.loads(capsys.readouterr().out)
        assert [i["name"] for i in doc["items"]] == ["ml"]
        assert doc["total"]["hourlyCost"] == "4.00"
        assert await fedctl(server, "cost", "-n", "web", "--token", "ml-token") != 0
        assert "has no access to namespace 'web'" in capsys.readouterr().err


async def test_queues_show_their_cost_a_parent_its_subtree_s(
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = await registry()
    typed = codec.TypedStore(store, objects.ObjectCodec())
    for name, parent in (("all", None), ("web", "all"), ("ml", "all")):
        spec = {"parent": parent} if parent else {"maxHourlyCost": "10"}
        queue = Queue.model_validate({"metadata": {"name": name}, "spec": spec})
        await typed.put(objects.key_for(queue), queue)
    async with api_server(store) as server:
        capsys.readouterr()
        assert await fedctl(server, "get", "queues", "-o", "wide") == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].split()[-2:] == ["COST/H(USD)", "BUDGET/H(USD)"]
        cost = {line.split()[0]: line.split()[-4:] for line in lines[1:]}
        assert (cost["all"], cost["ml"][-2:], cost["web"]) == (
            ["5.0000", "(+1", "unpriced)", "10.0000"],
            ["4.0000", "-"],
            ["1.0000", "(+1", "unpriced)", "-"],
        )
        assert await fedctl(server, "get", "queues", "all", "-o", "json") == 0
        status = json.loads(capsys.readouterr().out)["status"]
        assert (status["hourlyCost"], status["currency"]) == ("5.0000", "USD")
        assert await fedctl(server, "describe", "queue", "all") == 0
        assert "Cost:        5.0000 of its 10.0000 budget USD/h (what its placed work" in (
            capsys.readouterr().out
        )
        assert await fedctl(server, "describe", "queue", "web") == 0
        assert "Cost:        1.0000 USD/h (what its placed work" in capsys.readouterr().out


async def test_a_binding_written_again_is_read_again_and_an_unreadable_one_left_out() -> None:
    """The view keeps what it read of each key until the key's revision moves."""
    store = await registry()
    url = "/apis/status.fedctl.io/v1alpha1/costs?by=queue"
    train = workload("Deployment", "ml", "train", queue="ml")
    key = keys.binding_key(objects.workload_ref(train))

    async def total(server: str, session: aiohttp.ClientSession) -> str:
        async with session.get(server + url) as answer:
            return str((await answer.json())["total"]["hourlyCost"])

    async with api_server(store) as server, aiohttp.ClientSession() as session:
        assert await total(server, session) == "5.00"
        moved = placed(train, {"eu-1": (1, "2.50")})
        await store.commit([st.Put(key, codec.Codec(Binding).encode(moved))])
        assert await total(server, session) == "3.50"
        await store.commit([st.Put(key, b'{"not": "a binding"}')])
        assert await total(server, session) == "1.00"


async def test_a_budget_below_what_the_queue_spends_is_warned_at_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "web.yaml"
    text = "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: web}\nspec: SPEC\n"
    async with api_server(await registry()) as server:
        capsys.readouterr()
        path.write_text(text.replace("SPEC", "{maxHourlyCost: '0.5'}"), encoding="utf-8")
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        assert capsys.readouterr().err.strip() == (
            "Warning: queue web's placed work costs 1.0000 USD/h, above its budget 0.5000:"
            " admitted work keeps running; nothing more is admitted to it until its cost falls"
            " below the budget"
        )
        path.write_text(text.replace("SPEC", "{maxHourlyCost: '2'}"), encoding="utf-8")
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        assert "Warning" not in capsys.readouterr().err


async def test_an_unknown_grouping_is_refused_by_name() -> None:
    async with api_server(await registry()) as server, aiohttp.ClientSession() as session:
        url = f"{server}/apis/status.fedctl.io/v1alpha1/costs?by=team"
        async with session.get(url) as answer:
            assert answer.status == 400
            body = await answer.json()
    assert body["message"].startswith("by must be one of queue, namespace, cluster, region")


def test_lines_are_dearest_first_then_by_name() -> None:
    found = [
        spend.Charge("a", "ns", "q", "x", "amd64", 1, Decimal("1")),
        spend.Charge("b", "ns", "q", "y", "amd64", 2, Decimal("1")),
        spend.Charge("c", "ns", "q", "z", "arm64", 1, Decimal("3")),
        spend.Charge("c", "ns", "q", "w", "arm64", 1, None),
    ]
    lines, total = spend.tally(found, "cluster")
    assert [line.name for line in lines] == ["z", "x", "y", "w"]
    assert (total.hourly, total.replicas, total.unpriced, len(total.workloads)) == (
        Decimal(5),
        5,
        1,
        3,
    )
    by_chip, _ = spend.tally(found, "chip")
    assert [(line.name, line.hourly, len(line.workloads)) for line in by_chip] == [
        ("arm64", Decimal(3), 1),
        ("amd64", Decimal(2), 2),
    ]


def test_the_cli_offers_the_groupings_the_api_takes() -> None:
    # The CLI keeps its own copy so that building its parser imports no models.
    assert cost_cmd.BY == workloads_api.COST_BY


def test_a_line_with_no_price_reads_unpriced_not_free() -> None:
    """`fedctl cost --by workload` printed an unpriced workload as 0.0000, as if free."""
    line = {"workloads": 1, "replicas": 2, "hourlyCost": "0", "unpricedReplicas": 2}
    doc = {
        "by": "workload",
        "currency": "USD",
        "items": [
            {"name": "web/priced", **line, "hourlyCost": "0.5", "unpricedReplicas": 0},
            {"name": "web/unknown", **line},
        ],
        "total": {**line, "name": "total", "hourlyCost": "0.5", "replicas": 4},
        "waiting": 0,
        "finished": 0,
    }
    rows = {r.split()[0]: r.split() for r in cost_cmd.table(doc).splitlines()[1:3]}
    assert rows["web/unknown"][3:] == ["unpriced", "-", "-"]
    assert rows["web/priced"][3] == "0.5000"


async def test_a_tenants_queue_cost_says_it_covers_its_namespaces_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A tenant's `describe queue` showed the whole queue's counts beside a cost cut to
    its namespaces (`Admitted: 1`, `Cost: 0.0000`), and read as wrong: each now says what
    it covers."""
    store = await registry()
    typed = codec.TypedStore(store, objects.ObjectCodec())
    queue = Queue.model_validate({"metadata": {"name": "web"}, "spec": {}})
    await typed.put(objects.key_for(queue), queue)
    tokens = "tokens:\n  - {token: ml-token, user: mia, groups: ['tenant:ml']}\n"
    authn = auth.Authenticator(auth.TokenTable.from_yaml(tokens))
    async with serving(api_app.build_app(store, auth=authn)) as server:
        capsys.readouterr()
        assert await fedctl(server, "describe", "queue", "web", "--token", "ml-token") == 0
        assert (
            "Cost:        0.0000 USD/h (what its placed work in your namespaces (ml) costs an"
            " hour, as estimated when placed: fedctl cost; the counts above are the whole"
            " queue's)"
        ) in capsys.readouterr().out
        assert await fedctl(server, "get", "queues", "-o", "wide", "--token", "ml-token") == 0
        assert capsys.readouterr().out.splitlines()[0].split()[-2:] == [
            "COST/H(USD,YOURS)",
            "BUDGET/H(USD)",
        ]
        assert (
            await fedctl(server, "get", "queues", "web", "-o", "json", "--token", "ml-token") == 0
        )
        status = json.loads(capsys.readouterr().out)["status"]
        assert status["hourlyCostNamespaces"] == ["ml"]


def test_a_line_partly_without_a_price_says_how_many_replicas_it_leaves_out() -> None:
    """The footnote gave only a total count of unpriced replicas, not whose they were."""
    doc = {
        "by": "queue",
        "currency": "USD",
        "items": [{"name": "team-a", "workloads": 2, "replicas": 5, "hourlyCost": "0.5",
                   "unpricedReplicas": 2}],
        "total": {"name": "TOTAL", "workloads": 2, "replicas": 5, "hourlyCost": "0.5",
                  "unpricedReplicas": 2},
        "waiting": 0,
        "finished": 0,
    }  # fmt: skip
    (row,) = cost_cmd.table(doc).splitlines()[1:2]
    assert row.split()[3:6] == ["0.5000", "(+2", "unpriced)"]
