"""How `fedctl get | describe | delete | diff` address one object, from a user audit:

- a workload name shared by several kinds is refused (with the address of each), never
  resolved by list order, and a delete says which kind it removed;
- a cluster-scoped workload (a Namespace) is named without a namespace, and a missing one
  is reported by its name, never by its registry key;
- a file `diff`s as unchanged right after `apply`, whatever the key order the API returns;
- namespaced policies take NS/NAME in `delete` as in `describe`.

The controller is the real API over an in-memory registry; the CLI is `main.main`.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from federation.api import app as api_app
from federation.cli import main
from federation.registry import keys
from federation.registry.memory import MemoryStore
from federation.settings import ApiSettings
from tests.serving import api_server, serving

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "policies" / "examples"

DUP = """\
apiVersion: batch/v1
kind: Job
metadata: {name: dup, namespace: teams}
spec:
  template:
    spec:
      containers:
        - {name: t, image: busybox, resources: {requests: {cpu: "1"}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: dup, namespace: teams}
spec:
  replicas: 1
  selector: {matchLabels: {app: dup}}
  template:
    metadata: {labels: {app: dup}}
    spec:
      containers:
        - {name: t, image: busybox, resources: {requests: {cpu: "1"}}}
"""
NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: teams2}\n"
JOB_KEY = keys.workload_key(keys.WorkloadRef("teams", "Job.batch", "dup"))
DEPLOYMENT_KEY = keys.workload_key(keys.WorkloadRef("teams", "Deployment.apps", "dup"))
NAMESPACE_KEY = keys.workload_key(keys.WorkloadRef(keys.CLUSTER_SCOPE, "Namespace", "teams2"))


async def fedctl(server: str, *args: str) -> int:
    return await asyncio.to_thread(main.main, [*args, "--server", server])


async def stored(store: MemoryStore, *wanted: str) -> list[str]:
    """Which of the `wanted` keys the registry holds."""
    return [key for key in wanted if await store.get(key) is not None]


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "address",
    [
        pytest.param(["dup", "-n", "teams"], id="NAME with -n"),
        pytest.param(["teams/dup"], id="NS/NAME"),
    ],
)
async def test_deleting_an_ambiguous_workload_name_deletes_nothing_and_says_how_to_pick(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], address: list[str]
) -> None:
    """The audit: this printed `workload dup deleted` and removed the Deployment."""
    store = MemoryStore()
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", write(tmp_path / "dup.yaml", DUP)) == 0
        capsys.readouterr()
        assert await fedctl(server, "delete", "workload", *address) == 1
        assert capsys.readouterr().err.splitlines() == [
            "fedctl: teams/dup names several workloads: Deployment.apps, Job.batch;"
            " name one as teams/Deployment.apps/dup or teams/Job.batch/dup"
        ]
        assert await stored(store, JOB_KEY, DEPLOYMENT_KEY) == [JOB_KEY, DEPLOYMENT_KEY]


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        pytest.param(["teams/Job.batch/dup"], "Job.batch", id="NS/KIND/NAME"),
        pytest.param(["Deployment.apps/dup", "-n", "teams"], "Deployment.apps", id="KIND/NAME -n"),
        pytest.param(["teams/job/dup"], "Job.batch", id="the kind without its group"),
    ],
)
async def test_a_workload_named_with_its_kind_is_deleted_alone_and_the_kind_is_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], address: list[str], kind: str
) -> None:
    (chosen,) = [key for key in (JOB_KEY, DEPLOYMENT_KEY) if f"/{kind}/" in key]
    (other,) = {JOB_KEY, DEPLOYMENT_KEY} - {chosen}
    store = MemoryStore()
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", write(tmp_path / "dup.yaml", DUP)) == 0
        capsys.readouterr()
        assert await fedctl(server, "describe", "workload", *address) == 0
        assert f"Kind:        {kind.partition('.')[0]} (" in capsys.readouterr().out
        assert await fedctl(server, "delete", "workload", *address) == 0
        assert capsys.readouterr().out == f"{kind.lower()}/dup deleted\n"
        assert await stored(store, JOB_KEY, DEPLOYMENT_KEY) == [other]
        # Now unambiguous, the bare name deletes the other, and names its kind.
        assert await fedctl(server, "delete", "workload", "dup", "-n", "teams") == 0
        assert capsys.readouterr().out.endswith("/dup deleted\n")
        assert await stored(store, JOB_KEY, DEPLOYMENT_KEY) == []


@pytest.mark.parametrize(
    ("resource", "address", "kind"),
    [
        pytest.param("deploy", ["dup", "-n", "teams"], "Deployment.apps", id="deploy NAME -n"),
        pytest.param("jobs", ["teams/dup"], "Job.batch", id="jobs NS/NAME"),
        pytest.param("Deployment", ["teams/dup"], "Deployment.apps", id="the kind itself"),
    ],
)
async def test_a_workload_kind_as_kubectl_names_it_addresses_that_kind_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], resource: str, address: list[str], kind: str
) -> None:
    """`fedctl get deploy` was refused as an unknown resource; the kind also settles a name
    two kinds share."""
    (chosen,) = [key for key in (JOB_KEY, DEPLOYMENT_KEY) if f"/{kind}/" in key]
    (other,) = {JOB_KEY, DEPLOYMENT_KEY} - {chosen}
    store = MemoryStore()
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", write(tmp_path / "dup.yaml", DUP)) == 0
        capsys.readouterr()
        assert await fedctl(server, "get", resource, "-n", "teams") == 0
        (row,) = capsys.readouterr().out.splitlines()[1:]
        assert row.split()[:3] == ["teams", "dup", kind]
        assert await fedctl(server, "describe", resource, *address) == 0
        assert f"Kind:        {kind.partition('.')[0]} (" in capsys.readouterr().out
        assert await fedctl(server, "delete", resource, *address) == 0
        assert capsys.readouterr().out == f"{kind.lower()}/dup deleted\n"
        assert await stored(store, JOB_KEY, DEPLOYMENT_KEY) == [other]
        assert await fedctl(server, "get", resource, "-n", "teams") == 0
        assert capsys.readouterr().err == f"No {kind} workloads found.\n"
        assert await fedctl(server, "get", "deploymnets") == 1
        assert "or a workload kind as kubectl names it" in capsys.readouterr().err


STORED_KINDS = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-priority}
value: 1000
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a-cq}
spec: {cohort: platform}
"""


@pytest.mark.parametrize(
    ("resource", "kind", "name"),
    [
        pytest.param("priorityclasses", "PriorityClass.scheduling.k8s.io", "high-priority"),
        pytest.param("pc", "PriorityClass.scheduling.k8s.io", "high-priority", id="short name"),
        pytest.param(
            "priorityclasses.scheduling.k8s.io",
            "PriorityClass.scheduling.k8s.io",
            "high-priority",
            id="plural.group",
        ),
        pytest.param(
            "clusterqueues.kueue.x-k8s.io",
            "ClusterQueue.kueue.x-k8s.io",
            "team-a-cq",
            id="a custom resource's plural.group, resolved against what is stored",
        ),
    ],
)
async def test_a_kind_apply_stores_is_listed_and_described_by_its_kubectl_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], resource: str, kind: str, name: str
) -> None:
    """`fedctl get priorityclasses` and `get clusterqueues.kueue.x-k8s.io` were refused as
    unknown resources, though `apply` had stored both and `get workloads` listed them."""
    store = MemoryStore()
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", write(tmp_path / "k.yaml", STORED_KINDS)) == 0
        capsys.readouterr()
        assert await fedctl(server, "get", resource, "-A") == 0
        (row,) = capsys.readouterr().out.splitlines()[1:]
        assert row.split()[:2] == [name, kind], "cluster-scoped: no NAMESPACE, as kubectl"
        assert await fedctl(server, "describe", resource, name) == 0
        assert f"Name:        {name}" in capsys.readouterr().out
        assert await fedctl(server, "get", f"{resource}/{name}") == 0
        assert name in capsys.readouterr().out
        assert await fedctl(server, "get", "clusterqueues") == 1  # no group: still refused
        assert "unknown resource 'clusterqueues'" in capsys.readouterr().err


async def test_get_l_keeps_the_workloads_and_policies_whose_labels_match(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labelled = DUP.replace(
        "metadata: {name: dup, namespace: teams}",
        "metadata: {name: dup, namespace: teams, labels: {tier: batch}}",
        1,
    )
    policy = (
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n"
        "metadata: {name: p, namespace: teams, labels: {tier: batch}}\n"
        "spec: {resourceSelectors: [{apiVersion: batch/v1, kind: Job}]}\n"
    )
    store = MemoryStore()
    async with api_server(store) as server:
        path = write(tmp_path / "dup.yaml", labelled + "---\n" + policy)
        assert await fedctl(server, "apply", "-f", path) == 0
        capsys.readouterr()
        assert await fedctl(server, "get", "workloads", "-n", "teams", "-l", "tier=batch") == 0
        rows = [line.split()[:3] for line in capsys.readouterr().out.splitlines()[1:]]
        assert rows == [["teams", "dup", "Job.batch"]]  # the Deployment has no labels
        assert await fedctl(server, "get", "workloads", "-A", "-l", "!tier", "-o", "json") == 0
        (doc,) = json.loads(capsys.readouterr().out)
        assert doc["kind"] == "Deployment"
        assert await fedctl(server, "get", "pp", "-n", "teams", "-l", "tier in (batch,web)") == 0
        assert [line.split()[:2] for line in capsys.readouterr().out.splitlines()[1:]] == [
            ["teams", "p"]
        ]
        assert await fedctl(server, "get", "pp", "-A", "-l", "tier=web") == 0
        assert "No propagationpolicies found." in capsys.readouterr().err
        assert await fedctl(server, "get", "workloads", "-l", "tier in (a") == 1
        assert "label selector" in capsys.readouterr().err


async def test_a_cluster_scoped_workload_is_addressed_without_a_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The audit: `describe workload teams2` said `workloads "default/teams2"` not found,
    and `delete -f ns.yaml` failed with `not found: /fedctl/workloads/default/...`."""
    store = MemoryStore()
    ns_file = write(tmp_path / "ns.yaml", NAMESPACE)
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", ns_file) == 0
        capsys.readouterr()
        assert await fedctl(server, "get", "workload", "teams2") == 0
        assert "Namespace" in capsys.readouterr().out
        assert await fedctl(server, "describe", "workload", "teams2") == 0
        out = capsys.readouterr().out
        assert "Name:        teams2" in out and "Kind:        Namespace (v1)" in out
        for address in ("Namespace/teams2", "_/teams2"):  # by kind; the `_` of its key
            assert await fedctl(server, "describe", "workload", address) == 0
        capsys.readouterr()

        assert await fedctl(server, "delete", "-f", ns_file) == 0
        assert capsys.readouterr().out == "namespace/teams2 deleted\n"
        assert await stored(store, NAMESPACE_KEY) == []

        assert await fedctl(server, "delete", "-f", ns_file) == 1
        assert capsys.readouterr().err == "fedctl: not found: namespace/teams2\n"
        assert await fedctl(server, "apply", "-f", ns_file) == 0
        capsys.readouterr()
        assert await fedctl(server, "delete", "workload", "teams2") == 0
        assert capsys.readouterr().out == "namespace/teams2 deleted\n"
        assert await stored(store, NAMESPACE_KEY) == []


@pytest.mark.parametrize(
    ("example", "edit", "changed"),
    [
        pytest.param(
            "web.yaml",
            ("replicas: 12", "replicas: 13"),
            ["-  replicas: 12", "+  replicas: 13"],
            id="a Deployment",
        ),
        pytest.param(
            "namespaces.yaml",
            ("  name: web\n", "  name: web\n  labels: {tier: a}\n"),
            ["-  labels: {}", "+  labels:", "+    tier: a"],
            id="a Namespace",
        ),
    ],
)
async def test_a_file_diffs_as_unchanged_right_after_apply_and_a_real_change_still_shows(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    example: str,
    edit: tuple[str, str],
    changed: list[str],
) -> None:
    """The audit: the live object came back with sorted keys and every container field
    was reported as changed; every Namespace showed as entirely new."""
    store = MemoryStore()
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", str(EXAMPLES / example)) == 0
        capsys.readouterr()
        assert await fedctl(server, "diff", "-f", str(EXAMPLES / example)) == 0
        assert capsys.readouterr().out == ""

        edited = tmp_path / example
        shutil.copy(EXAMPLES / example, edited)
        text = edited.read_text()
        edited.write_text(text.replace(*edit, 1))
        assert edited.read_text() != text, f"the example should contain {edit[0]!r}"
        assert await fedctl(server, "diff", "-f", str(edited)) == 1
        out = capsys.readouterr().out
        lines = out.splitlines()
        assert [line for line in lines if line[:1] in "+-" and line[:3] not in ("+++", "---")] == (
            changed
        ), out


async def test_a_file_without_a_namespace_diffs_against_the_default_one_it_was_stored_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job_only = DUP.partition("---")[0].replace(", namespace: teams", "")
    job = write(tmp_path / "job.yaml", job_only)
    async with api_server(MemoryStore()) as server:
        assert await fedctl(server, "apply", "-f", job) == 0
        capsys.readouterr()
        assert await fedctl(server, "diff", "-f", job) == 0
        assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    "address",
    [
        pytest.param(["web/storefront"], id="NS/NAME"),
        pytest.param(["storefront", "-n", "web"], id="NAME with -n"),
    ],
)
async def test_a_namespaced_policy_is_deleted_by_ns_slash_name_as_describe_takes_it(
    capsys: pytest.CaptureFixture[str], address: list[str]
) -> None:
    """The audit: `delete pp web/storefront` gave `no route .../namespaces/default/...`."""
    store = MemoryStore()
    key = keys.policy_key("PropagationPolicy", "web", "storefront")
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", str(EXAMPLES / "web.yaml")) == 0
        assert await fedctl(server, "describe", "pp", "web/storefront") == 0
        capsys.readouterr()
        assert await fedctl(server, "delete", "pp", *address) == 0
        assert capsys.readouterr().out == "propagationpolicy web/storefront deleted\n"
        assert await stored(store, key) == []
        assert await fedctl(server, "delete", "pp", *address) == 1
        assert capsys.readouterr().err == (
            'fedctl: not found: propagationpolicies "web/storefront"\n'
        )


async def test_delete_f_goes_on_past_an_object_already_gone_and_reports_in_file_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`delete -f` of a sweep: requests go several at a time (one at a time, 10,000 Jobs
    took three minutes), results print in file order, and one already gone is reported
    while the rest are deleted (before, the first missing one stopped the command)."""
    store = MemoryStore()
    jobs = _jobs(40)
    every = write(tmp_path / "all.yaml", "---\n".join(jobs))
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", every) == 0
        assert await fedctl(server, "delete", "-f", write(tmp_path / "one.yaml", jobs[7])) == 0
        capsys.readouterr()

        assert await fedctl(server, "delete", "-f", every) == 1

        captured = capsys.readouterr()
        expected = [f"job.batch/job-{i:02d} deleted" for i in range(40) if i != 7]
        assert captured.out.splitlines() == expected
        assert captured.err == "fedctl: not found: job.batch/job-07\n"
        listed = await store.list(keys.prefix("workloads"))
        assert listed.items == []


async def test_requests_refused_for_the_clients_rate_are_tried_again_after_the_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A controller allowing 20 requests a second (burst 5): `delete -f` of 30 Jobs, 16
    requests in flight, is refused with 429 and `Retry-After` many times. The client waits
    as told and goes on; before, the first 429 ended the command half done."""
    store = MemoryStore()
    jobs = _jobs(30)
    every = write(tmp_path / "all.yaml", "---\n".join(jobs))
    app = api_app.build_app(store, settings=ApiSettings(rate_limit=20, rate_burst=5))
    async with serving(app) as server:
        assert await fedctl(server, "apply", "-f", every) == 0
        capsys.readouterr()

        assert await fedctl(server, "delete", "-f", every) == 0

        assert len(capsys.readouterr().out.splitlines()) == 30
        assert (await store.list(keys.prefix("workloads"))).items == []


async def test_delete_takes_several_names_and_goes_on_past_one_not_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kubectl delete job a b` deletes both; `fedctl delete job big next` stopped at
    `unrecognized arguments: next`. Each name is deleted in turn, one not found is
    reported and the rest still deleted (exit status 1), as kubectl does; KIND/NAME
    arguments may be given several at a time too."""
    store = MemoryStore()
    every = write(tmp_path / "all.yaml", "---\n".join(_jobs(5)))
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", every) == 0
        capsys.readouterr()

        assert await fedctl(server, "delete", "job", "job-00", "job-01", "-n", "teams") == 0
        assert capsys.readouterr().out.splitlines() == [
            "job.batch/job-00 deleted",
            "job.batch/job-01 deleted",
        ]
        assert await fedctl(server, "delete", "job", "job-02", "gone", "job-03", "-n", "teams") == 1
        captured = capsys.readouterr()
        assert captured.out.splitlines() == ["job.batch/job-02 deleted", "job.batch/job-03 deleted"]
        assert captured.err == 'fedctl: not found: workloads "Job.batch/gone"\n'
        assert await fedctl(server, "delete", "job/job-04", "queue/none", "-n", "teams") == 1
        captured = capsys.readouterr()
        assert captured.out.splitlines() == ["job.batch/job-04 deleted"]
        assert 'not found: queues "none"' in captured.err
        assert (await store.list(keys.prefix("workloads"))).items == []


def _jobs(count: int) -> list[str]:
    """`count` one-container Jobs in namespace teams, one YAML document each."""
    return [
        f"apiVersion: batch/v1\nkind: Job\nmetadata: {{name: job-{i:02d}, namespace: teams}}\n"
        "spec: {template: {spec: {containers: [{name: t, image: x}]}}}\n"
        for i in range(count)
    ]


BROKEN_QUEUE = (
    "apiVersion: fedctl.io/v1alpha1\nkind: Queue\nmetadata: {name: q}\nspec:\n  wieght: 1\n"
)


async def test_diff_exits_above_one_for_an_error_as_kubectl_diff_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kubectl diff: 0 no differences, 1 differences, above 1 an error. fedctl exited 1 for
    a broken file as for a pending change, so `fedctl diff -f x || apply` could not tell
    them apart, and said "nothing was applied" of a diff."""
    broken = write(tmp_path / "broken.yaml", BROKEN_QUEUE)
    job = write(tmp_path / "job.yaml", DUP.partition("---")[0])
    async with api_server(MemoryStore()) as server:
        assert await fedctl(server, "diff", "-f", job) == 1  # not applied yet: a difference
        capsys.readouterr()
        assert await fedctl(server, "diff", "-f", broken) == 2
        err = capsys.readouterr().err.splitlines()
        assert err[0].startswith(f"{broken}:5:3: spec.wieght: unknown field")
        assert err[-1] == "fedctl: 1 error(s) in the input; nothing was compared"
    # An API that does not answer is an error too, not a difference.
    assert await fedctl("http://127.0.0.1:1", "diff", "-f", job) == 2


async def test_delete_of_a_broken_file_says_nothing_was_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = write(tmp_path / "broken.yaml", BROKEN_QUEUE)
    async with api_server(MemoryStore()) as server:
        assert await fedctl(server, "delete", "-f", broken) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "fedctl: 1 error(s) in the input; nothing was deleted"
    )


def _labelled(kind: str, name: str, tier: str) -> str:
    api = "apps/v1" if kind == "Deployment" else "batch/v1"
    pod = "{containers: [{name: t, image: busybox}], restartPolicy: Never}"
    spec = (
        f"replicas: 1\n  selector: {{matchLabels: {{app: {name}}}}}\n"
        f"  template: {{metadata: {{labels: {{app: {name}}}}},"
        " spec: {containers: [{name: t, image: busybox}]}}"
        if kind == "Deployment"
        else f"template: {{spec: {pod}}}"
    )
    return (
        f"apiVersion: {api}\nkind: {kind}\n"
        f"metadata: {{name: {name}, namespace: team-a, labels: {{tier: {tier}}}}}\n"
        f"spec:\n  {spec}\n"
    )


async def test_delete_by_label_deletes_the_matching_objects_of_the_kind_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fedctl delete deploy -n team-a -l tier=fe` said "unrecognized arguments"."""
    docs = [
        _labelled("Deployment", "fe-1", "fe"),
        _labelled("Deployment", "fe-2", "fe"),
        _labelled("Deployment", "be-1", "be"),
        _labelled("Job", "fe-job", "fe"),
    ]
    store = MemoryStore()
    ref = keys.WorkloadRef
    left = [
        keys.workload_key(ref("team-a", "Deployment.apps", "be-1")),
        keys.workload_key(ref("team-a", "Job.batch", "fe-job")),
    ]
    gone = [keys.workload_key(ref("team-a", "Deployment.apps", f"fe-{i}")) for i in (1, 2)]
    async with api_server(store) as server:
        path = write(tmp_path / "all.yaml", "---\n".join(docs))
        assert await fedctl(server, "apply", "-f", path) == 0
        capsys.readouterr()
        assert await fedctl(server, "delete", "deploy", "-n", "team-a", "-l", "tier=fe") == 0
        assert sorted(capsys.readouterr().out.splitlines()) == [
            "deployment.apps/fe-1 deleted",
            "deployment.apps/fe-2 deleted",
        ]
        assert await stored(store, *left, *gone) == left
        assert await fedctl(server, "delete", "deploy", "-n", "team-a", "-l", "tier=fe") == 0
        assert capsys.readouterr().out == "No resources found in team-a namespace.\n"


TWO_JOBS = """\
apiVersion: batch/v1
kind: Job
metadata: {name: etl, namespace: hunt, labels: {team: data}}
spec:
  template:
    metadata: {labels: {team: data}}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train, namespace: hunt, labels: {team: data}}
spec:
  minAvailable: 1
  tasks:
    - name: t
      replicas: 1
      template:
        metadata: {labels: {team: data}}
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox}]
"""
ETL_KEY = keys.workload_key(keys.WorkloadRef("hunt", "Job.batch", "etl"))
TRAIN_KEY = keys.workload_key(keys.WorkloadRef("hunt", "Job.batch.volcano.sh", "train"))


@pytest.mark.parametrize(
    ("resource", "kind", "key"),
    [
        pytest.param("jobs", "Job.batch", ETL_KEY, id="jobs is batch's alone"),
        pytest.param("job", "Job.batch", ETL_KEY, id="job"),
        pytest.param("jobs.batch", "Job.batch", ETL_KEY, id="jobs.batch"),
        pytest.param("vcjob", "Job.batch.volcano.sh", TRAIN_KEY, id="Volcano's short name"),
        pytest.param(
            "jobs.batch.volcano.sh", "Job.batch.volcano.sh", TRAIN_KEY, id="Volcano's group"
        ),
    ],
)
async def test_jobs_means_batch_jobs_as_in_kubectl_and_volcano_jobs_need_their_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], resource: str, kind: str, key: str
) -> None:
    """`fedctl delete jobs -l team=data` also deleted Volcano's training gangs: `jobs` took
    every kind named Job. kubectl resolves `jobs` to the built-in `jobs.batch`."""
    store = MemoryStore()
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", write(tmp_path / "j.yaml", TWO_JOBS)) == 0
        capsys.readouterr()
        assert await fedctl(server, "get", resource, "-n", "hunt") == 0
        (row,) = capsys.readouterr().out.splitlines()[1:]
        assert row.split()[2] == kind
        assert await fedctl(server, "delete", resource, "-n", "hunt", "-l", "team=data") == 0
        assert capsys.readouterr().out == f"{kind.lower()}/{key.rpartition('/')[2]} deleted\n"
        assert await stored(store, ETL_KEY, TRAIN_KEY) == [
            k for k in (ETL_KEY, TRAIN_KEY) if k != key
        ]


@pytest.mark.parametrize("selector", ["", " "])
async def test_delete_with_an_empty_selector_is_refused_and_deletes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], selector: str
) -> None:
    """`fedctl delete pp -l "$UNSET"` deleted every policy of the namespace: an empty
    selector matches everything. kubectl refuses it, naming no object."""
    store = MemoryStore()
    async with api_server(store) as server:
        assert await fedctl(server, "apply", "-f", write(tmp_path / "j.yaml", TWO_JOBS)) == 0
        capsys.readouterr()
        for dry in ([], ["--dry-run"]):
            assert await fedctl(server, "delete", "jobs", "-n", "hunt", "-l", selector, *dry) == 2
            assert capsys.readouterr().err == (
                "fedctl delete: -l takes a selector (app=web); an empty one would select"
                " every object: give KIND NAME to delete one\n"
            )
        assert await stored(store, ETL_KEY, TRAIN_KEY) == [ETL_KEY, TRAIN_KEY]


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        pytest.param(
            ["b.yaml", "c.yaml"],
            "fedctl delete: b.yaml c.yaml: -f takes one file or directory; give -f before"
            " each (-f a.yaml -f b.yaml), or the directory that holds them. KIND and NAME"
            " cannot be given with -f, nor -l",
            id="more files after one -f",
        ),
        pytest.param(
            ["-l", "app=web"],
            "fedctl delete: -l app=web: -f takes one file or directory; give -f before"
            " each (-f a.yaml -f b.yaml), or the directory that holds them. KIND and NAME"
            " cannot be given with -f, nor -l",
            id="a selector beside -f",
        ),
    ],
)
async def test_delete_f_with_anything_it_would_not_use_is_refused_and_deletes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], said: str
) -> None:
    """`delete -f a.yaml b.yaml c.yaml` deleted a.yaml's objects and exited 0: the other
    paths were read as KIND and NAME, which -f ignored. As `apply -f a b` ("unrecognized
    arguments") and kubectl (resource arguments with -f), it is refused."""
    store = MemoryStore()
    async with api_server(store) as server:
        first = write(tmp_path / "a.yaml", TWO_JOBS)
        assert await fedctl(server, "apply", "-f", first) == 0
        capsys.readouterr()
        extra = [str(tmp_path / e) if e.endswith(".yaml") else e for e in extra]
        assert await fedctl(server, "delete", "-f", first, *extra) == 2
        err = capsys.readouterr().err
        assert err == said.replace("b.yaml c.yaml", " ".join(extra)) + "\n"
        assert await stored(store, ETL_KEY, TRAIN_KEY) == [ETL_KEY, TRAIN_KEY]
