"""Where `fedctl apply` puts what only the controller can check, from a user audit: a queue
under a parent nobody defined, a child capped above its stored parent, a same-name object
of another API group. These were printed as the bare server message, with no file or line
to go to and no did-you-mean for a mistyped parent. Each is now printed at `FILE:LINE:COL`
of the field the controller names, or `FILE:LINE` of the document, with its message kept.

The API is the real one over a real etcd; the CLI is `main.main`. The last case is a
controller older than the client, which refuses a field it does not know yet.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from aiohttp import web

from federation import errors
from federation.api import app as api_app
from federation.registry import embedded, keys
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from tests.conftest import etcd_settings
from tests.integration.test_api import wipe
from tests.serving import fedctl, serving

pytestmark = pytest.mark.integration

REFUSED = "fedctl: 1 error(s) found by the controller; nothing was applied"

STORED = """\
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata: {name: ml}
spec:
  capability: {cpu: "64"}
---
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata: {name: ml-research}
spec:
  parent: ml
  guarantee: {cpu: "40"}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: storefront, namespace: web}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: storefront}
"""

FINE = """\
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata:
  name: fine
spec:
  weight: 1
---
"""

ORPHAN = (
    FINE
    + """\
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata:
  name: orphan
spec:
  weight: 1
  parent: ml-reserch
"""
)

TOO_BIG = (
    FINE
    + """\
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata:
  name: big
spec:
  parent: ml
  capability:
    cpu: "100"
"""
)

OVER_GUARANTEED = (
    FINE
    + """\
apiVersion: fedctl.io/v1alpha1
kind: Queue
metadata:
  name: greedy
spec:
  parent: ml
  guarantee:
    cpu: "30"
"""
)

OTHER_GROUP = (
    FINE
    + """\
apiVersion: fedctl.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: storefront
  namespace: web
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: storefront}
"""
)


@pytest.fixture
async def server(etcd_server: embedded.EmbeddedEtcd, tmp_path: Path) -> AsyncIterator[str]:
    """The controller's API over a wiped etcd holding `STORED`."""
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    await wipe(store)
    async with serving(api_app.build_app(store)) as url:
        stored = tmp_path / "stored.yaml"
        stored.write_text(STORED)
        assert await fedctl(url, "apply", "-f", str(stored)) == 0
        yield url
    await wipe(store)
    await store.close()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            ORPHAN,
            lambda f: (
                f"{f}:14:11: Queue orphan: spec.parent: parent queue 'ml-reserch' is not"
                " defined (known queues: fine, ml, ml-research, orphan) (did you mean"
                " 'ml-research'?)"
            ),
            id="an unknown parent, at spec.parent, with the stored queue it resembles",
        ),
        pytest.param(
            TOO_BIG,
            lambda f: (
                f"{f}:15:10: Queue big: spec.capability.cpu: capability of cpu (100)"
                " exceeds parent 'ml' (64)"
            ),
            id="a capability above the stored parent's, at the amount",
        ),
        pytest.param(
            OVER_GUARANTEED,
            lambda f: (
                f"{f}:8: Queue ml: spec.capability.cpu: children (greedy, ml-research)"
                " are guaranteed 70 of cpu in total, more than the parent's capability 64"
            ),
            id="a stored parent overcommitted, at the child in the file that does it",
        ),
        pytest.param(
            OTHER_GROUP,
            lambda f: (
                f"{f}:8: PropagationPolicy web/storefront: a policy.karmada.io/v1alpha1"
                " PropagationPolicy of that name exists, and a fedctl.io/v1alpha1 one would"
                " replace it (both share one name per namespace): delete the other first, or"
                " choose another name"
            ),
            id="a same-name object of another API group, at its document",
        ),
    ],
)
async def test_a_refusal_only_the_controller_finds_is_printed_where_it_is_in_the_file(
    server: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    expected: Callable[[Path], str],
) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    capsys.readouterr()
    assert await fedctl(server, "apply", "-f", str(path)) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-2:] == [expected(path), REFUSED], err
    assert await fedctl(server, "get", "queue", "fine") == 1  # nothing was applied
    assert capsys.readouterr().err == 'fedctl: not found: queues "fine"\n'


UNKNOWN = "spec.weight: unknown field 'weight'; known fields: capability, parent"


@pytest.mark.parametrize(
    ("finding", "line"),
    [
        pytest.param(f"<request>: {UNKNOWN}", 10,
                     id="naming no document: the one holding the field"),
        pytest.param(f"items[2] (Queue again): {UNKNOWN}", 17,
                     id="naming its item: that document, of two holding the field"),
        pytest.param(f"items[1] (Queue fine): {UNKNOWN}", 10,
                     id="naming its item: the first of two holding the field"),
    ],
)  # fmt: skip
async def test_a_field_an_older_controller_does_not_know_is_placed_in_the_document_holding_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], finding: str, line: int
) -> None:
    """A finding naming no document (`<request>: PATH: message`) is placed in the one
    document of the files that holds that field. One naming its item (`items[N] (Kind
    name): ...`, as the controller names the items of the JSON `fedctl apply` sends) is
    placed in that document, even where several hold the field."""

    async def refuse(_: web.Request) -> web.Response:
        body = {
            "kind": "Status",
            "code": 400,
            "reason": "Invalid",
            "message": finding,
            "details": {"findings": [finding]},
        }
        return web.json_response(body, status=400)

    app = web.Application()
    app.router.add_post("/apis/fedctl.io/v1alpha1/apply", refuse)
    path = tmp_path / "mine.yaml"
    again = FINE.replace("name: fine", "name: again").removesuffix("---\n")
    plain = "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: plain}\n---\n"
    path.write_text(plain + FINE + again if "items" in finding else plain + FINE)
    async with serving(app) as url:
        assert await fedctl(url, "apply", "-f", str(path)) == 1
    assert capsys.readouterr().err.splitlines() == [f"{path}:{line}:11: {UNKNOWN}", REFUSED]


@pytest.mark.parametrize(
    "kib",
    [
        pytest.param(1700, id="past etcd's request limit (1.5 MiB)"),
        pytest.param(2100, id="past its gRPC message limit (2 MiB)"),
    ],
)
async def test_an_object_too_large_for_etcd_is_refused_by_name_as_too_large(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], kib: int
) -> None:
    """etcd refuses a write past its request size; the API answered 500 InternalError
    with etcd's words alone, naming no object. Now 413, naming the object and its size,
    judged before anything is written. (A Job: Kubernetes limits no environment value,
    where a ConfigMap past 1 MiB is refused as the file is read.)"""
    path = tmp_path / "huge.yaml"
    path.write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: huge, namespace: web}\n"
        "spec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: x\n"
        f"        env: [{{name: BLOB, value: {'x' * (kib * 1024)}}}]\n"
    )
    capsys.readouterr()
    assert await fedctl(server, "apply", "-f", str(path)) == 1
    err = capsys.readouterr().err
    assert f"Job web/huge is {kib / 1024:.1f} MiB, more than the 1.5 MiB the registry" in err
    assert "nothing was stored" in err, err
    assert await fedctl(server, "get", "workloads", "-n", "web") == 0
    assert "huge" not in capsys.readouterr().out  # nothing was stored


async def test_a_full_registry_is_reported_as_out_of_space_not_as_a_large_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """etcd past its storage quota answers every write with RESOURCE_EXHAUSTED, as it
    answers a request past its size limit. A one-line ConfigMap was refused as "too large
    for one request", which sends the user to shrink the wrong thing. Now 507, saying the
    registry is out of space and what frees it."""
    server = embedded.EmbeddedEtcd(quota_backend_bytes=16 * 1024 * 1024)
    server.start()
    store = EtcdStore(etcd_settings(server.url))
    try:
        await store.connect()
        with pytest.raises(errors.RegistryFull):
            for i in range(200):  # 100 MB over ten keys: history outgrows 16 MiB
                await st.put(store, f"{keys.ROOT}/filler/{i % 10}", b"x" * 500_000)
        path = tmp_path / "small.yaml"
        path.write_text(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: small, namespace: web}\n"
            "data:\n  a: b\n"
        )
        async with serving(api_app.build_app(store)) as url:
            capsys.readouterr()
            assert await fedctl(url, "apply", "-f", str(path)) == 1
            err = capsys.readouterr().err
            assert "is out of space (etcdserver: mvcc: database space exceeded)" in err, err
            assert "alarm disarm" in err and "too large" not in err, err
            # The embedded etcd (fedctl up's) frees itself when started on a full
            # directory: history compacted and defragmented, the alarm disarmed.
            await asyncio.to_thread(server.restart)
            assert await fedctl(url, "apply", "-f", str(path)) == 0, capsys.readouterr().err
        kept = await store.get(f"{keys.ROOT}/filler/3")
        assert kept is not None and kept.value == b"x" * 500_000  # values survive
    finally:
        await store.close()
        server.cleanup()


RUNNING_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: ml
spec:
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
        - {name: t, image: busybox, resources: {requests: {cpu: "4"}}}
"""


def fixed(kind: str, field: str) -> str:
    """The tail of the refusal of a change to `kind`'s immutable `field`."""
    indexed = " (but for an Indexed Job's, set with spec.parallelism to the same number)"
    return (
        f"field is immutable: a {kind}'s {field} cannot change once it is created"
        f"{indexed if field == 'spec.completions' else ''} (its members"
        f" refuse it, and their copies keep the old one); delete the {kind} and apply it again"
        " to run the new one"
    )


async def edited(
    server: str,
    path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    document: str,
    edit: tuple[str, str],
    refusal: str | None,
) -> str:
    """Apply `document`, then it with `edit` made: `configured` when `refusal` is None,
    else refused with `refusal` as the finding's line. The second apply's stderr."""
    path.write_text(document)  # noqa: ASYNC240 (a few bytes to a test's own file)
    assert await fedctl(server, "apply", "-f", str(path)) == 0
    path.write_text(document.replace(*edit))  # noqa: ASYNC240
    capsys.readouterr()
    if refusal is None:
        assert await fedctl(server, "apply", "-f", str(path)) == 0
        assert capsys.readouterr().out.endswith(" configured\n")
        return ""
    assert await fedctl(server, "apply", "-f", str(path)) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-2:] == [refusal, REFUSED], err
    return err


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: sel, namespace: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: sel}
  template:
    metadata: {labels: {app: sel}}
    spec:
      containers: [{name: c, image: nginx}]
"""
STATEFUL_SET = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: web}
spec:
  replicas: 1
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: postgres}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 1Gi}}
"""
INDEXED_JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: shards, namespace: ml}
spec:
  completionMode: Indexed
  completions: 4
  parallelism: 4
  template:
    spec:
      restartPolicy: Never
      containers: [{name: t, image: busybox}]
"""
COUNTED_JOB = INDEXED_JOB.replace("  completionMode: Indexed\n", "").replace("shards", "count")


@pytest.mark.parametrize(
    ("document", "edit", "expected"),
    [
        pytest.param(
            RUNNING_JOB,
            ("image: busybox", 'image: "busybox:1.36"'),
            (12, 28, "Job ml/train: spec.template.spec.containers[0].image", "Job"),
            id="a Job's new image: refused at spec.template, nothing stored",
        ),
        pytest.param(
            RUNNING_JOB,
            ('cpu: "4"', 'cpu: "150"'),
            (
                12,
                65,
                "Job ml/train: spec.template.spec.containers[0].resources.requests.cpu",
                "Job",
            ),
            id="a Job's new requests: refused, so the running job is never placed again for them",
        ),
        pytest.param(
            RUNNING_JOB, ("parallelism: 2", "parallelism: 3"), None, id="parallelism may change"
        ),
        pytest.param(
            DEPLOYMENT,
            ("matchLabels: {app: sel}", "matchLabels: {app: sel2}"),
            (7, 24, "Deployment web/sel: spec.selector.matchLabels.app", "Deployment"),
            id="a Deployment's selector",
        ),
        pytest.param(
            DEPLOYMENT.replace("Deployment", "ReplicaSet"),
            ("matchLabels: {app: sel}", "matchLabels: {app: sel, tier: fe}"),
            (7, 35, "ReplicaSet web/sel: spec.selector.matchLabels.tier", "ReplicaSet"),
            id="a ReplicaSet's selector, a label added",
        ),
        pytest.param(
            DEPLOYMENT.replace("Deployment", "DaemonSet").replace("  replicas: 2\n", ""),
            ("matchLabels: {app: sel}", "matchLabels: {app: sel2}"),
            (6, 24, "DaemonSet web/sel: spec.selector.matchLabels.app", "DaemonSet"),
            id="a DaemonSet's selector",
        ),
        pytest.param(
            STATEFUL_SET,
            ("serviceName: db", "serviceName: db2"),
            (6, 16, "StatefulSet web/db: spec.serviceName", "StatefulSet"),
            id="a StatefulSet's serviceName",
        ),
        pytest.param(
            STATEFUL_SET,
            ("storage: 1Gi", "storage: 2Gi"),
            (
                17,
                41,
                "StatefulSet web/db: spec.volumeClaimTemplates[0].spec.resources.requests.storage",
                "StatefulSet",
            ),
            id="a StatefulSet's volumeClaimTemplates",
        ),
        pytest.param(
            STATEFUL_SET,
            ("  replicas: 1\n", "  replicas: 1\n  podManagementPolicy: Parallel\n"),
            (6, 24, "StatefulSet web/db: spec.podManagementPolicy", "StatefulSet"),
            id="a StatefulSet's podManagementPolicy, added other than its default",
        ),
        pytest.param(
            COUNTED_JOB,
            ("completions: 4", "completions: 6"),
            (5, 16, "Job ml/count: spec.completions", "Job"),
            id="a Job's completions",
        ),
        pytest.param(
            INDEXED_JOB,
            ("completions: 4", "completions: 6"),
            (6, 16, "Job ml/shards: spec.completions", "Job"),
            id="an Indexed Job's completions, without parallelism",
        ),
        pytest.param(
            INDEXED_JOB,
            ("completionMode: Indexed", "completionMode: NonIndexed"),
            (5, 19, "Job ml/shards: spec.completionMode", "Job"),
            id="a Job's completionMode",
        ),
        pytest.param(DEPLOYMENT, ("replicas: 2", "replicas: 5"), None, id="replicas may change"),
        pytest.param(
            STATEFUL_SET,
            ("  replicas: 1\n", "  replicas: 3\n  podManagementPolicy: OrderedReady\n"),
            None,
            id="a StatefulSet's replicas, and its default podManagementPolicy given",
        ),
        pytest.param(
            INDEXED_JOB,
            ("completions: 4\n  parallelism: 4", "completions: 6\n  parallelism: 6"),
            None,
            id="an Indexed Job's completions, with parallelism",
        ),
    ],
)
async def test_a_field_kubernetes_makes_immutable_is_refused_at_its_line(
    server: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    document: str,
    edit: tuple[str, str],
    expected: tuple[int, int, str, str] | None,
) -> None:
    """A Deployment applied with a new selector said `configured`; its member refused it,
    and the workload stayed `rejected the object: field is immutable` for good. A running
    Job applied with a new pod template did too, then kept running the old one (or, its
    new pods fitting nowhere it ran, ran again from the start elsewhere). Kubernetes
    refuses such a write at once, naming the field."""
    path = tmp_path / "w.yaml"
    if expected is None:
        await edited(server, path, capsys, document=document, edit=edit, refusal=None)
        return
    line, column, at, kind = expected
    field = ".".join(at.partition(": ")[2].split(".")[:2]).partition("[")[0]
    refusal = f"{path}:{line}:{column}: {at}: {fixed(kind, field)}"
    await edited(server, path, capsys, document=document, edit=edit, refusal=refusal)
    path.write_text(document)
    assert await fedctl(server, "apply", "-f", str(path)) == 0
    assert capsys.readouterr().out.endswith(" unchanged\n")  # the stored one stands


FROZEN_CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: web}
immutable: true
data:
  mode: fast
"""
FROZEN_SECRET = """\
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: web}
type: Opaque
immutable: true
data:
  password: aHVudGVyMg==
"""


@pytest.mark.parametrize(
    ("document", "edit", "expected"),
    [
        pytest.param(
            FROZEN_CONFIG,
            ("mode: fast", "mode: slow"),
            (6, 9, "ConfigMap web/settings: data.mode", "ConfigMap"),
            id="an immutable ConfigMap's data",
        ),
        pytest.param(
            FROZEN_CONFIG,
            ("immutable: true", "immutable: false"),
            (4, 12, "ConfigMap web/settings: immutable", "ConfigMap"),
            id="an immutable ConfigMap made mutable again",
        ),
        pytest.param(
            FROZEN_SECRET,
            ("aHVudGVyMg==", "c2VjcmV0"),
            (7, 13, "Secret web/creds: data.password", "Secret"),
            id="an immutable Secret's data, named by key without its value",
        ),
        pytest.param(
            FROZEN_CONFIG.replace("immutable: true\n", ""),
            ("mode: fast", "mode: slow"),
            None,
            id="a ConfigMap not marked immutable may change",
        ),
        pytest.param(
            FROZEN_CONFIG.replace("immutable: true\n", ""),
            ("\ndata:", "\nimmutable: true\ndata:"),
            None,
            id="a ConfigMap may be made immutable",
        ),
    ],
)
async def test_an_immutable_configmap_or_secret_keeps_its_data(
    server: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    document: str,
    edit: tuple[str, str],
    expected: tuple[int, int, str, str] | None,
) -> None:
    """An edit of a ConfigMap marked `immutable: true` was `configured` and sent to its
    members, which refuse it (`field is immutable when immutable is set`), so the copies
    kept the old data while the federation showed the new. Kubernetes refuses the write."""
    path = tmp_path / "c.yaml"
    if expected is None:
        await edited(server, path, capsys, document=document, edit=edit, refusal=None)
        return
    line, column, at, kind = expected
    tail = (
        f"field is immutable when `immutable` is set: a {kind} marked immutable keeps its"
        f" data for good, as in Kubernetes; delete the {kind} and apply it again to change it"
    )
    refusal = f"{path}:{line}:{column}: {at}: {tail}"
    err = await edited(server, path, capsys, document=document, edit=edit, refusal=refusal)
    assert "c2VjcmV0" not in err and "aHVudGVyMg" not in err
