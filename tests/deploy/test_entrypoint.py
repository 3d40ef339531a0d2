"""The dev overlay's controller container, run as a local process: the image's entrypoint
with the Deployment's arguments and environment, secrets mounted as files, against a test
etcd. Proves the manifest and the program agree on flags, settings and paths.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import secrets
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from federation.registry import embedded
from tests.deploy import manifests as mf
from tests.deploy import render
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

Obj = dict[str, Any]
ADMIN_TOKEN = secrets.token_urlsafe(24)
# What a test writes for each Secret key the pod mounts: real-looking, never the placeholder.
SECRET_FILES = {
    ("fedctl-tokens", "tokens.yaml"): (
        f"tokens:\n  - token: {ADMIN_TOKEN}\n    user: ops\n    groups: [admin]\n"
    ),
    ("fedctl-encryption-key", "keys"): base64.urlsafe_b64encode(os.urandom(32)).decode() + "\n",
}


def mount_volumes(objects: list[Obj], pod: Obj, c: Obj, root: Path) -> dict[str, Path]:
    """A directory per volume mount, filled as the kubelet would; mountPath → directory."""
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounted: dict[str, Path] = {}
    for mount in c.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        target = root / mount["name"]
        target.mkdir()
        if "secret" in volume:
            name = volume["secret"]["secretName"]
            secret = mf.find(objects, "Secret", name)
            for key in {**secret.get("data", {}), **secret.get("stringData", {})}:
                assert (name, key) in SECRET_FILES, f"no test content for secret {name}/{key}"
                (target / key).write_text(SECRET_FILES[(name, key)])
        elif "configMap" in volume:
            data = mf.find(objects, "ConfigMap", volume["configMap"]["name"])["data"]
            for key, value in data.items():
                (target / key).write_text(value)
        else:
            assert "emptyDir" in volume, f"volume type of {mount['name']} not emulated"
        mounted[mount["mountPath"]] = target
    return mounted


def relocate(value: str, mounted: dict[str, Path]) -> str:
    for path, local in mounted.items():
        if value == path or value.startswith(path + "/"):
            return str(local) + value[len(path) :]
    return value


def container_env(objects: list[Obj], c: Obj) -> dict[str, str]:
    env: dict[str, str] = {}
    for source in c.get("envFrom", []):
        env.update(mf.find(objects, "ConfigMap", source["configMapRef"]["name"])["data"])
    for item in c.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            ref = item["valueFrom"]["configMapKeyRef"]
            env[item["name"]] = mf.find(objects, "ConfigMap", ref["name"])["data"][ref["key"]]
    return env


def entry_command(
    objects: list[Obj], tmp: Path, *, etcd: str, port: int
) -> tuple[list[str], dict[str, str]]:
    deployment = mf.find(objects, "Deployment", "fedctl-controller")
    c = mf.container(deployment, "controller")
    mounted = mount_volumes(objects, mf.pod_spec(deployment), c, tmp)
    argv = c.get("command") or mf.dockerfile_instruction("ENTRYPOINT")
    args = c.get("args") or mf.dockerfile_instruction("CMD")
    args = [relocate(a, mounted) for a in args]
    args[args.index("--listen") + 1] = f"127.0.0.1:{port}"
    env = {k: relocate(v, mounted) for k, v in container_env(objects, c).items()}
    assert "FEDCTL_ETCD" in env, "the Deployment must tell the controller where etcd is"
    env["FEDCTL_ETCD"] = etcd
    bin_dir = str(Path(sys.executable).parent)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("FEDCTL_", "KUBECONFIG"))}
    base["PATH"] = bin_dir + os.pathsep + base.get("PATH", "")
    return [os.path.join(bin_dir, argv[0]), *argv[1:], *args], {**base, **env}


async def status_of(url: str, token: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as r:
            return r.status
    except aiohttp.ClientError:
        return 0


async def test_dev_controller_container_serves_readyz_against_etcd(
    own_etcd: embedded.EmbeddedEtcd, tmp_path: Path
) -> None:
    port = embedded.free_port()
    argv, env = entry_command(render.render("dev"), tmp_path, etcd=own_etcd.url, port=port)
    log = tmp_path / "controller.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            *argv, env=env, cwd=tmp_path, stdout=out, stderr=asyncio.subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    try:

        async def ready() -> bool:
            assert proc.returncode is None, f"controller exited:\n{log.read_text()}"
            return await status_of(f"{base}/readyz") == 200

        await wait_for(ready, timeout=20, message=f"/readyz 200 ({argv})")
        clusters = f"{base}/apis/fedctl.io/v1alpha1/clusters"
        assert await status_of(clusters) == 401, "the tokens file must switch auth on"
        assert await status_of(clusters, ADMIN_TOKEN) == 200
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=15) == 0, log.read_text()
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
