"""Registry throughput and latency on a local etcd; prints one JSON document.

Measures: sequential puts/s through the Store, batched puts/s (transactions of 100),
watch delivery latency p50/p99 over 10,000 writes, and the typed layer's overhead (pydantic
encode + compare-and-swap) against raw aetcd puts of the same bytes.

    .venv/bin/python bench/registry.py [--writes 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import aetcd
from pydantic import BaseModel, ConfigDict

from federation.registry import codec, embedded
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from federation.settings import EtcdSettings


class Sample(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    region: str
    replicas: int
    labels: dict[str, str]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def sequential(store: EtcdStore, n: int) -> float:
    began = time.perf_counter()
    for i in range(n):
        await st.put(store, f"/bench/seq/{i % 500}", b'{"x":%d}' % i)
    return n / (time.perf_counter() - began)


async def batched(store: EtcdStore, n: int, batch: int = 100) -> float:
    began = time.perf_counter()
    for start in range(0, n, batch):
        ops: list[st.Op] = [
            st.Put(f"/bench/batch/{i}", b'{"x":1}') for i in range(start, start + batch)
        ]
        await store.commit(ops)
    return n / (time.perf_counter() - began)


async def watch_latency(store: EtcdStore, n: int) -> dict[str, float]:
    start = await store.current_revision() + 1
    latencies: list[float] = []
    done = asyncio.Event()

    async def follow() -> None:
        async for event in store.watch("/bench/watch/", start_revision=start):
            latencies.append(time.perf_counter() - float(event.value))
            if len(latencies) >= n:
                done.set()
                return

    follower = asyncio.create_task(follow())
    await asyncio.sleep(0.2)
    for i in range(n):
        await st.put(store, f"/bench/watch/{i % 100}", repr(time.perf_counter()).encode())
    await asyncio.wait_for(done.wait(), 60)
    follower.cancel()
    ms = [x * 1000 for x in latencies]
    return {"p50_ms": round(pct(ms, 50), 3), "p99_ms": round(pct(ms, 99), 3), "events": len(ms)}


async def overhead(store: EtcdStore, url: str, n: int) -> dict[str, float]:
    typed = codec.TypedStore(store, codec.Codec(Sample))
    obj = Sample(name="web", region="eu-west", replicas=3, labels={"team": "a", "tier": "web"})
    data = typed.codec.encode(obj)
    host, port = url.removeprefix("http://").split(":")
    async with aetcd.Client(host=host, port=int(port)) as raw:
        for _ in range(200):  # warm both paths
            await raw.put(b"/bench/raw/warm", data)
            await typed.put("/bench/typed/warm", obj)
        raw_s = typed_s = 0.0
        for _round in range(5):
            began = time.perf_counter()
            for i in range(n // 5):
                await raw.put(f"/bench/raw/{i % 200}".encode(), data)
            raw_s += time.perf_counter() - began
            began = time.perf_counter()
            for i in range(n // 5):
                await typed.put(f"/bench/typed/{i % 200}", obj)
            typed_s += time.perf_counter() - began
    return {
        "raw_aetcd_puts_per_s": round(n / raw_s),
        "typed_puts_per_s": round(n / typed_s),
        "typed_overhead_pct": round((typed_s / raw_s - 1) * 100, 1),
    }


async def main(writes: int) -> dict[str, object]:
    with embedded.EmbeddedEtcd() as server:
        store = EtcdStore(EtcdSettings(endpoints=(server.url,)))
        await store.connect()
        try:
            result: dict[str, object] = {
                "benchmark": "registry",
                "etcd": server.url,
                "sequential_puts_per_s": round(await sequential(store, min(writes, 5000))),
                "batched_puts_per_s": round(await batched(store, writes)),
                "watch_latency": await watch_latency(store, writes),
            }
            result.update(await overhead(store, server.url, min(writes, 5000)))
            result["typed_overhead_goal_pct"] = 20
            return result
        finally:
            await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writes", type=int, default=10_000)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.writes)), indent=2))
