"""Readiness on a real etcd that stops answering: `/readyz` says why within a probe's wait."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import aiohttp
import pytest

from federation.api import app as api_app
from federation.registry import embedded
from federation.registry.etcd import EtcdStore
from federation.settings import ApiSettings
from tests.conftest import etcd_settings
from tests.serving import serving
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

PROBE_TIMEOUT = 3.0  # deploy/kustomize/base/deployment.yaml readinessProbe.timeoutSeconds


@pytest.fixture
def hung_etcd(own_etcd: embedded.EmbeddedEtcd) -> Iterator[embedded.EmbeddedEtcd]:
    """`own_etcd`, resumed at teardown if the test left it stopped."""
    yield own_etcd
    if own_etcd.pid is not None:
        os.kill(own_etcd.pid, signal.SIGCONT)


async def _readyz(session: aiohttp.ClientSession, base: str) -> tuple[int, str, float]:
    started = time.monotonic()
    async with session.get(base + "/readyz") as resp:
        return resp.status, await resp.text(), time.monotonic() - started


async def test_readyz_answers_503_with_the_reason_while_etcd_hangs(
    hung_etcd: embedded.EmbeddedEtcd,
) -> None:
    """etcd stopped (SIGSTOP): its connection stays open and nothing answers. Readiness went
    through the store's retries (5 s per try, 8 s in all) and answered after about 15 s,
    past the probe's 3 s, so the kubelet saw only timeouts. Now it makes one try with a
    short deadline and answers 503 with the reason in time; ready again once etcd is."""
    store = EtcdStore(etcd_settings(hung_etcd.url))
    await store.connect()
    settings = ApiSettings(readiness_timeout=1.0)
    try:
        async with (
            serving(api_app.build_app(store, settings=settings)) as base,
            aiohttp.ClientSession() as session,
        ):
            assert (await _readyz(session, base))[0] == 200
            assert hung_etcd.pid is not None
            os.kill(hung_etcd.pid, signal.SIGSTOP)
            code, text, took = await _readyz(session, base)
            assert code == 503, text
            assert took < PROBE_TIMEOUT, took
            assert text.startswith("registry unavailable: etcd at ") and "1s" in text, text
            os.kill(hung_etcd.pid, signal.SIGCONT)

            async def ready() -> bool:
                return (await _readyz(session, base))[0] == 200

            await wait_for(ready, timeout=10, message="/readyz 200 once etcd answers again")
    finally:
        await store.close()
