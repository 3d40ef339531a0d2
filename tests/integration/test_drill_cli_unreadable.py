"""`fedctl drill list` and `drill show` with a stored report this release cannot read (a
newer release's, or one edited by hand): the list names it and goes on, `show` says why,
where the list stopped at it with a bare error and `show` gave only the exception."""

from __future__ import annotations

import asyncio
import json

import pytest

from federation.cli import main
from federation.failover import drills
from federation.registry import embedded, keys
from federation.registry import store as st
from federation.registry.etcd import EtcdStore
from tests.conftest import etcd_settings
from tests.unit.api.test_drill_unreadable import BROKEN, GOOD, NEWER, report

pytestmark = pytest.mark.integration


async def test_an_unreadable_report_is_named_and_hides_nothing(
    own_etcd: embedded.EmbeddedEtcd, capsys: pytest.CaptureFixture[str]
) -> None:
    store = EtcdStore(etcd_settings(own_etcd.url))
    await store.connect()
    newer = json.loads(drills.encode(report(NEWER)))
    newer["object"]["workloads"][0]["movedBy"] = "eviction"  # a field this release lacks
    try:
        await store.commit(
            [
                st.Put(keys.drill_key(GOOD), drills.encode(report(GOOD))),
                st.Put(keys.drill_key(NEWER), json.dumps(newer).encode()),
                st.Put(keys.drill_key(BROKEN), b"{not json"),
            ]
        )
    finally:
        await store.close()
    etcd = ["--etcd", own_etcd.url]
    assert await asyncio.to_thread(main.main, [*etcd, "drill", "list"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert set(rows) == {GOOD, NEWER, BROKEN}
    assert "40.0s" in rows[GOOD]  # its detection, read as ever
    assert "<unreadable: TypeError:" in rows[NEWER] and "movedBy" in rows[NEWER]
    assert "<unreadable: JSONDecodeError:" in rows[BROKEN]
    assert await asyncio.to_thread(main.main, [*etcd, "drill", "show", NEWER]) == 1
    err = capsys.readouterr().err
    assert f"drill '{NEWER}': its stored report does not read (TypeError:" in err
    assert "another release" in err and "Traceback" not in err
