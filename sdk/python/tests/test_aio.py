"""AsyncClient against a real `latch serve`: the Client's calls as coroutines."""

import asyncio
import unittest

import latchserver
from latch_client import AsyncClient, NotFound, Unfinished


class AsyncClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = latchserver.server()

    def setUp(self) -> None:
        self.c = AsyncClient(sync=self.srv.new_tenant("aio"))
        self.addCleanup(self.c.close)

    def test_concurrent_same_key_submits_get_one_execution(self) -> None:
        async def run() -> set:
            answers = await asyncio.gather(*(self.c.submit("mail", {"to": "ann"}, dedup_key="aio-1")
                                             for _ in range(64)))
            self.assertEqual(sum(not a["deduplicated"] for a in answers), 1)
            return {a["execution_id"] for a in answers}
        ids = asyncio.run(run())
        self.assertEqual(len(ids), 1, ids)

    def test_calls_iterators_and_errors(self) -> None:
        async def run() -> None:
            e = await self.c.submit("listed", {"n": 1})
            await self.c.submit("listed", {"n": 2})
            got = [x["execution_id"] async for x in self.c.iter_executions(kind="listed", limit=1)]
            self.assertEqual(len(got), 2)
            self.assertIn(e["execution_id"], got)
            [lease] = await self.c.claim("aio-worker", kinds=["listed"], max=1, wait_seconds=2)
            done = await self.c.complete(lease["execution_id"], lease["lease_token"], {"ok": True})
            self.assertEqual(done["status"], "succeeded")
            self.assertEqual((await self.c.wait(lease["execution_id"], timeout=5))["result"], {"ok": True})
            with self.assertRaises(NotFound):
                await self.c.get("00000000-0000-0000-0000-000000000000")
            left = next(i for i in got if i != lease["execution_id"])
            with self.assertRaises(Unfinished):
                await self.c.wait(left, timeout=1)
        asyncio.run(run())

    def test_calls_run_at_once(self) -> None:
        # Sixteen long polls of 2 s each held at once end in about 2 s, not
        # 32 one after another (nor 6 in asyncio's default pool of 6 threads
        # on 2 cores): the client's own pool holds them all at once.
        async def run() -> float:
            ids = [(await self.c.submit("idle"))["execution_id"] for _ in range(16)]
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            await asyncio.gather(*(self.c.get(i, wait_seconds=2) for i in ids))
            return loop.time() - t0
        self.assertLess(asyncio.run(run()), 5)

    def test_children_events_and_subscriptions(self) -> None:
        async def run() -> None:
            sub = await self.c.put_subscription("on-go", event="go", kind="gone")
            self.assertEqual(sub["kind"], "gone")
            self.assertEqual([s["name"] for s in await self.c.list_subscriptions()], ["on-go"])
            self.assertEqual((await self.c.get_subscription("on-go"))["event"], "go")
            pub = await self.c.publish("go", {"n": 1}, key="k", idempotency_key="go-1")
            self.assertEqual(await self.c.publish("go", {"n": 1}, key="k", idempotency_key="go-1"), pub)
            [start] = pub["started"]
            [lease] = await self.c.claim("aio-worker", kinds=["gone"], max=1, wait_seconds=2)
            self.assertEqual(lease["execution_id"], start["execution_id"])
            spawned = await self.c.spawn_children(lease["execution_id"], lease["lease_token"], "kids",
                                                  [{"kind": "kid", "payload": {"i": i}} for i in range(2)])
            self.assertIs(spawned["recorded"], True)
            kids = await self.c.children(lease["execution_id"])
            self.assertEqual([k["execution_id"] for k in kids], [k["execution_id"] for k in spawned["children"]])
            page = await self.c.list_executions(parent_id=lease["execution_id"], limit=1)
            self.assertEqual([k["execution_id"] for k in page.items], [kids[0]["execution_id"]])
            e = await self.c.suspend(lease["execution_id"], lease["lease_token"], "all", children="kids", count=1,
                                     timeout_seconds=60)
            self.assertEqual((e["status"], e["waiting_for"]), ("suspended", "children:kids"))
            await self.c.delete_subscription("on-go")
            with self.assertRaises(NotFound):
                await self.c.get_subscription("on-go")
        asyncio.run(run())


if __name__ == "__main__":
    unittest.main()
