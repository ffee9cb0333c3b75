"""The bench's decode baseline reads exactly the pages the sync received: the sync records every list
page's size as it arrives, the spool fetches the same lists again over the same client, and a
difference (the server's content moved in between) shows. The decode halves run in fresh processes."""

from __future__ import annotations

import orjson
from factories import job

from taudash.bench.measure import decode_elsewhere, initial_sync, read_spool, spool_pages
from taudash.engine.store import Store
from taudash.sim.server import SimServer


async def test_the_spool_holds_the_pages_the_sync_received_and_a_change_shows(tmp_path, monkeypatch):
    monkeypatch.setattr("taudash.engine.sources.kube.LIST_PAGE", 5)  # several pages for the bigger kinds
    async with SimServer() as sim:
        sync = await initial_sync(sim.kubeconfig, Store())
        try:
            assert sync.target.transport == "https"
            assert max(len(sizes) for sizes in sync.pages.values()) >= 2
            spool = tmp_path / "pages.bin"
            with spool.open("wb") as out:
                same = await spool_pages(sync.source, out)
            assert same == sync.pages
            bodies = read_spool(spool)
            assert [len(b) for b in bodies] == [n for kind in same for n in same[kind]]
            items = sum(len(orjson.loads(b)["items"]) for b in bodies)
            assert items == sum(sync.counts.values()) == sum(sync.store.count(k) for k in sync.counts)
            run = decode_elsewhere(spool)  # a fresh process decodes them all
            assert (run.pages, run.bytes) == (len(bodies), spool.stat().st_size - 8 * len(bodies))
            assert run.seconds > 0 and run.cpu_seconds >= 0

            sim.db.create(job("one-more", "train"))  # the server's content moves: the pages differ
            with (tmp_path / "later.bin").open("wb") as out:
                later = await spool_pages(sync.source, out)
            assert later != sync.pages and later["Job"] != sync.pages["Job"]
            assert {k: v for k, v in later.items() if k != "Job"} == {k: v for k, v in sync.pages.items() if k != "Job"}
        finally:
            await sync.source.stop()
            await sync.target.close()
