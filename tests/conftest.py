"""Fixtures shared by every test: a real etcd process, stores, and unique key prefixes."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from federation.registry import embedded
from federation.registry.etcd import EtcdStore
from federation.registry.memory import MemoryStore
from federation.registry.store import Store
from federation.settings import EtcdSettings


@pytest.fixture(scope="session")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded.EmbeddedEtcd]:
    """One etcd for the session; tests isolate themselves by key prefix."""
    server = embedded.EmbeddedEtcd(data_dir=tmp_path_factory.mktemp("etcd"))
    server.start()
    yield server
    server.cleanup()


@pytest.fixture
def own_etcd(tmp_path: object) -> Iterator[embedded.EmbeddedEtcd]:
    """A private etcd for tests that stop, restart or compact it."""
    server = embedded.EmbeddedEtcd()
    server.start()
    yield server
    server.cleanup()


def etcd_settings(url: str, **overrides: object) -> EtcdSettings:
    return EtcdSettings.model_validate({"endpoints": [url], **overrides})


@pytest.fixture
async def etcd_store(etcd_server: embedded.EmbeddedEtcd) -> AsyncIterator[EtcdStore]:
    store = EtcdStore(etcd_settings(etcd_server.url))
    await store.connect()
    yield store
    await store.close()


@pytest.fixture(params=["memory", "etcd"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    """The contract suite runs once per Store implementation."""
    if request.param == "memory":
        mem = MemoryStore()
        yield mem
        await mem.close()
    else:
        server: embedded.EmbeddedEtcd = request.getfixturevalue("etcd_server")
        real = EtcdStore(etcd_settings(server.url))
        await real.connect()
        yield real
        await real.close()


@pytest.fixture
def prefix() -> str:
    """A key prefix no other test uses."""
    return f"/t/{uuid.uuid4().hex[:12]}/"
