"""The registry against a real etcd: restarts, unreachable endpoints, corrupt values."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel, ConfigDict

from federation import errors
from federation.api import metrics as metrics_mod
from federation.registry import codec, embedded
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from federation.registry.memory import MemoryStore
from tests.conftest import etcd_settings
from tests.waiting import wait_for

pytestmark = pytest.mark.integration


class Thing(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    size: int


async def test_watch_survives_etcd_restart_exactly_once(own_etcd: embedded.EmbeddedEtcd) -> None:
    store = EtcdStore(etcd_settings(own_etcd.url, retry_deadline=30, retry_attempts=60))
    await store.connect()
    seen: list[st.WatchEvent] = []
    try:
        start = await store.current_revision() + 1

        async def follow() -> None:
            async for event in store.watch("/r/", start_revision=start):
                seen.append(event)

        follower = asyncio.create_task(follow())
        for i in range(50):
            await st.put(store, f"/r/{i % 7}", f"before-{i}".encode())
        await wait_for(lambda: len(seen) == 50, message="events before the restart")
        own_etcd.restart(kill=True)
        for i in range(50):
            await st.put(store, f"/r/{i % 7}", f"after-{i}".encode())
        await st.delete(store, "/r/0")
        await wait_for(lambda: len(seen) == 101, timeout=30, message="events after the restart")
        follower.cancel()
    finally:
        await store.close()
    values = [e.value.decode() for e in seen[:-1]]
    assert values == [f"before-{i}" for i in range(50)] + [f"after-{i}" for i in range(50)]
    assert seen[-1].type == "delete"
    revisions = [e.mod_revision for e in seen]
    assert revisions == sorted(set(revisions)), "an event was repeated or reordered"


async def test_a_call_with_the_default_settings_rides_out_a_short_etcd_restart(
    own_etcd: embedded.EmbeddedEtcd,
) -> None:
    """`fedctl up` starts a killed etcd again within a second or two; six quick tries
    were spent in about a second, so every API call in that window failed with 503
    though `retry_deadline` promised eight."""
    store = EtcdStore(etcd_settings(own_etcd.url))  # the defaults, as the controller runs
    await store.connect()
    try:
        await st.put(store, "/r/k", b"v")
        own_etcd.stop(kill=True)
        back = asyncio.get_running_loop().call_later(2.5, own_etcd.start)
        try:
            kv = await store.get("/r/k")  # asked while etcd is down
        finally:
            back.cancel()
        assert kv is not None and kv.value == b"v"
    finally:
        await store.close()


async def test_every_etcd_call_and_each_failed_attempt_is_a_metric(
    own_etcd: embedded.EmbeddedEtcd,
) -> None:
    """An SRE could not tell a slow or restarting etcd from a slow controller: no series
    counted etcd's answers or timed them. Each attempt of a retried call counts with its
    gRPC code, so an etcd restart reads as UNAVAILABLE Ranges while the caller saw none."""
    metrics = metrics_mod.Metrics()
    store = EtcdStore(etcd_settings(own_etcd.url), observe=metrics.etcd_request)
    await store.connect()
    try:
        await st.put(store, "/r/k", b"v")
        await store.commit([st.Put("/r/a", b"1"), st.Put("/r/b", b"2")])
        own_etcd.stop(kill=True)
        back = asyncio.get_running_loop().call_later(1.5, own_etcd.start)
        try:
            kv = await store.get("/r/k")
        finally:
            back.cancel()
        assert kv is not None and kv.value == b"v"
    finally:
        await store.close()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(metrics.exposition().decode())
        for s in family.samples
    }

    def calls(operation: str, code: str) -> float:
        labels = (("code", code), ("operation", operation))
        return samples.get(("fedctl_etcd_requests_total", labels), 0.0)

    assert calls("Put", "OK") == 1 and calls("Txn", "OK") == 1
    assert calls("Range", "OK") >= 1 and calls("Range", "UNAVAILABLE") >= 1
    timed = samples[("fedctl_etcd_request_duration_seconds_count", (("operation", "Range"),))]
    assert timed == calls("Range", "OK") + calls("Range", "UNAVAILABLE")


def test_cli_names_unreachable_etcd_and_exits_fast() -> None:
    port = embedded.free_port()
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "federation.cli.main", "--etcd", f"http://127.0.0.1:{port}",
         "registry", "dump"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    elapsed = time.monotonic() - began
    assert proc.returncode == 1
    assert f"http://127.0.0.1:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert elapsed < 10


def test_cli_dump_shows_keys_and_values(etcd_server: embedded.EmbeddedEtcd, prefix: str) -> None:
    async def seed() -> None:
        store = EtcdStore(etcd_settings(etcd_server.url))
        await store.connect()
        await st.put(store, prefix + "hello", b'{"greeting": "hi"}')
        await store.close()

    asyncio.run(seed())
    proc = subprocess.run(
        [sys.executable, "-m", "federation.cli.main", "--etcd", etcd_server.url,
         "registry", "dump", prefix],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"# 1 keys under {prefix}" in proc.stdout
    assert prefix + "hello" in proc.stdout and '"greeting": "hi"' in proc.stdout


@pytest.fixture(params=["memory", "etcd"])
async def typed(request: pytest.FixtureRequest) -> codec.TypedStore[Thing]:
    raw: st.Store
    if request.param == "memory":
        raw = MemoryStore()
    else:
        server: embedded.EmbeddedEtcd = request.getfixturevalue("etcd_server")
        raw = EtcdStore(etcd_settings(server.url))
        await raw.connect()
    return codec.TypedStore(raw, codec.Codec(Thing))


async def test_hand_edited_value_is_reported_with_its_key_and_skipped(
    typed: codec.TypedStore[Thing], prefix: str
) -> None:
    await typed.create(prefix + "good", Thing(name="good", size=1))
    await st.put(
        typed.store, prefix + "bad", b'{"schemaVersion":1,"object":{"name":"x","size":"big"}}'
    )
    await st.put(typed.store, prefix + "garbage", b"not json at all")
    listed = await typed.list(prefix)
    assert [i.obj.name for i in listed.items] == ["good"]
    assert sorted(s.key for s in listed.skipped) == [prefix + "bad", prefix + "garbage"]
    assert "size" in next(s.error for s in listed.skipped if s.key == prefix + "bad")
    with pytest.raises(errors.Invalid, match=prefix + "bad"):
        await typed.get(prefix + "bad")


async def test_typed_watch_skips_bad_values_and_carries_on(
    typed: codec.TypedStore[Thing], prefix: str
) -> None:
    start = (await typed.store.current_revision()) + 1
    await st.put(typed.store, prefix + "bad", b"{}")
    await typed.put(prefix + "a", Thing(name="a", size=2))
    await typed.delete(prefix + "a")
    got: list[object] = []

    async def run() -> None:
        async for event in typed.watch(prefix, start_revision=start):
            got.append(event)
            if len(got) == 2:
                return

    await asyncio.wait_for(run(), 10)
    assert isinstance(got[0], codec.Put) and got[0].item.obj == Thing(name="a", size=2)
    assert isinstance(got[1], codec.Deleted) and got[1].previous == Thing(name="a", size=2)


async def test_typed_watch_resyncs_after_compaction(
    typed: codec.TypedStore[Thing], prefix: str
) -> None:
    first = await typed.put(prefix + "a", Thing(name="a", size=1))
    latest = await typed.put(prefix + "a", Thing(name="a", size=2))
    await typed.store.compact(latest.revision)
    async for event in typed.watch(prefix, start_revision=first.revision):
        assert isinstance(event, codec.Resync)
        assert [i.obj.size for i in event.items] == [2]
        break


async def test_mutate_retries_after_a_lost_race(
    typed: codec.TypedStore[Thing], prefix: str
) -> None:
    await typed.create(prefix + "n", Thing(name="n", size=0))

    def bump(current: Thing | None) -> Thing:
        assert current is not None
        return current.model_copy(update={"size": current.size + 1})

    await asyncio.gather(*(typed.mutate(prefix + "n", bump) for _ in range(8)))
    final = await typed.get(prefix + "n")
    assert final is not None and final.obj.size == 8


def test_codec_migrates_old_schema_versions() -> None:
    def v1_to_v2(obj: dict[str, object]) -> dict[str, object]:
        return {"name": obj["title"], "size": obj["size"]}

    c = codec.Codec(Thing, version=2, migrations={1: v1_to_v2})
    old = b'{"schemaVersion":1,"object":{"title":"t","size":3}}'
    assert c.decode("/k", old) == Thing(name="t", size=3)
    assert c.decode("/k", c.encode(Thing(name="u", size=4))) == Thing(name="u", size=4)
    with pytest.raises(errors.Invalid, match="newer than this fedctl"):
        c.decode("/k", b'{"schemaVersion":3,"object":{}}')
