"""Events and subscriptions against a real `latch serve`: publish (once per
idempotency key), flows waiting for an event (by key, since, a timeout, an
event published before the wait, one event resuming many, each consumed once
per execution), subscriptions starting executions, and tenants kept apart."""

import datetime
import time
import unittest
from typing import Any, List

import latchserver
from latch_client import (InvalidRequest, Job, NotFound, Suspended, TooManySubscriptions, WaitTimedOut, Worker,
                          format_time)


class EventsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = latchserver.server()

    def setUp(self) -> None:
        self.c = self.srv.new_tenant("events")

    def test_publish_once_per_idempotency_key(self) -> None:
        a = self.c.publish("ping", {"n": 1}, idempotency_key="ping-1")
        self.assertEqual((a["resumed"], a["started"]), (0, []))
        self.assertTrue(a["event_id"])
        again = self.c.publish("ping", {"n": 1}, idempotency_key="ping-1")
        self.assertEqual(again, a)
        other = self.c.publish("ping", {"n": 1})  # a fresh key: another event
        self.assertNotEqual(other["event_id"], a["event_id"])
        with self.assertRaises(InvalidRequest):
            self.c.publish("not a name!", {})
        with self.assertRaises(InvalidRequest):
            self.c.publish("ping", {}, key="")

    def test_wait_by_key_then_publish(self) -> None:
        suspends: List[str] = []

        def flow(job: Job) -> Any:
            try:
                ev = job.wait_event("paid", "payment", key=job.payload["order"])
            except Suspended as s:
                suspends.append(s.execution["status"])
                raise
            return {"data": ev["data"], "key": ev["key"], "name": ev["name"], "id": ev["event_id"]}

        w = Worker(self.c, {"order": flow})
        e = self.c.submit("order", {"order": "o-7"})
        w.run_once(wait_seconds=2)
        self.assertEqual(suspends, ["suspended"])
        s = self.c.get(e["execution_id"])
        self.assertEqual((s["status"], s["waiting_for"]), ("suspended", "event:payment"))
        self.assertEqual(self.c.publish("payment", {"amount": 1}, key="o-8")["resumed"], 0)  # another key
        pub = self.c.publish("payment", {"amount": 2}, key="o-7")
        self.assertEqual(pub["resumed"], 1)
        self.assertEqual(self.c.get(e["execution_id"])["status"], "queued")
        self.assertEqual(w.run_once(wait_seconds=5), 1)
        done = self.c.wait(e["execution_id"], timeout=5)
        self.assertEqual(done["result"], {"data": {"amount": 2}, "key": "o-7", "name": "payment",
                                          "id": pub["event_id"]})
        [st] = self.c.steps(e["execution_id"])
        self.assertEqual((st["name"], st["result"]["event_id"]), ("paid", pub["event_id"]))
        self.assertIn("published_at", st["result"])

    def test_an_event_before_the_wait_is_consumed_once(self) -> None:
        suspends: List[str] = []

        def flow(job: Job) -> Any:
            got = []
            for step in ("first", "second"):
                try:
                    got.append(job.wait_event(step, "tick", timeout=1)["data"])
                except WaitTimedOut:
                    got.append("timed out")
                except Suspended as s:
                    suspends.append(s.execution["status"])
                    raise
            return got

        w = Worker(self.c, {"ticker": flow})
        e = self.c.submit("ticker")
        self.assertEqual(self.c.publish("tick", 1)["resumed"], 0)  # kept: no one waits yet
        w.run_once(wait_seconds=2)
        # The first wait consumed it at once; the second does not get it again.
        self.assertEqual(suspends, ["queued"])
        w.run_once(wait_seconds=5)
        self.assertEqual(suspends, ["queued", "suspended"])
        self.assertEqual(w.run_once(wait_seconds=10), 1)  # the timeout ends the second wait
        self.assertEqual(self.c.wait(e["execution_id"], timeout=5)["result"], [1, "timed out"])

    def test_since_and_one_event_resumes_many(self) -> None:
        since: List[str] = []

        def flow(job: Job) -> Any:
            return job.wait_event("go", "go", since=None if job.payload["default"] else since[0])["data"]

        w = Worker(self.c, {"goer": flow})
        ids = [self.c.submit("goer", {"default": d})["execution_id"] for d in (True, False, False)]
        self.c.publish("go", "old")  # after all three were created
        time.sleep(0.05)
        since.append(format_time(datetime.datetime.now(datetime.timezone.utc)))
        self.assertEqual(w.run_once(max=3, wait_seconds=2), 3)
        # The default since (its creation) takes the old event at once; a
        # later since does not.
        self.assertEqual([self.c.get(i)["status"] for i in ids], ["queued", "suspended", "suspended"])
        self.assertEqual(self.c.publish("go", "new")["resumed"], 2)  # one event, two waits
        while w.run_once(max=3, wait_seconds=3):
            pass
        self.assertEqual([self.c.wait(i, timeout=5)["result"] for i in ids], ["old", "new", "new"])

    def test_subscriptions(self) -> None:
        sub = self.c.put_subscription("on-signup", event="signup", kind="welcome", max_attempts=2)
        self.assertEqual((sub["name"], sub["event"], sub["kind"], sub["max_attempts"], sub["enabled"], sub["tenant"]),
                         ("on-signup", "signup", "welcome", 2, True, self.c.tenant_name))  # type: ignore[attr-defined]
        self.c.put_subscription("off", {"event": "signup", "kind": "audit", "enabled": False})
        self.assertEqual(self.c.get_subscription("on-signup")["kind"], "welcome")
        self.assertEqual(sorted(s["name"] for s in self.c.list_subscriptions()), ["off", "on-signup"])

        pub = self.c.publish("signup", {"user": "ann"}, key="ann", idempotency_key="signup-ann")
        self.assertEqual([s["subscription"] for s in pub["started"]], ["on-signup"])  # not the disabled one
        eid = pub["started"][0]["execution_id"]
        e = self.c.get(eid)
        self.assertEqual((e["kind"], e["max_attempts"], e["dedup_key"]),
                         ("welcome", 2, f"event:{pub['event_id']}:on-signup"))
        self.assertEqual((e["payload"]["event_id"], e["payload"]["name"], e["payload"]["key"], e["payload"]["data"]),
                         (pub["event_id"], "signup", "ann", {"user": "ann"}))
        self.assertEqual(self.c.publish("signup", {"user": "ann"}, key="ann", idempotency_key="signup-ann"), pub)
        self.assertEqual(len(list(self.c.iter_executions(kind="welcome"))), 1)  # the repeat started nothing

        replaced = self.c.put_subscription("on-signup", event="signup", kind="welcome-2")
        self.assertEqual((replaced["kind"], replaced["created_at"]), ("welcome-2", sub["created_at"]))
        # A GET answer is a valid body: sent back, it changes nothing.
        self.assertEqual(self.c.put_subscription("on-signup", self.c.get_subscription("on-signup"))["kind"], "welcome-2")
        self.c.delete_subscription("on-signup")
        with self.assertRaises(NotFound):
            self.c.get_subscription("on-signup")
        self.assertEqual(self.c.publish("signup", {})["started"], [])
        with self.assertRaises(InvalidRequest):
            self.c.put_subscription("bad", event="signup")  # no kind

    def test_too_many_subscriptions(self) -> None:
        for i in range(100):
            self.c.put_subscription(f"s{i:03d}", event="e", kind="k")
        with self.assertRaises(TooManySubscriptions) as cm:
            self.c.put_subscription("one-more", event="e", kind="k")
        self.assertEqual((cm.exception.code, cm.exception.status), ("too_many_subscriptions", 409))
        self.assertEqual(self.c.put_subscription("s000", event="e", kind="k2")["kind"], "k2")  # a replace is allowed
        self.assertEqual(len(self.c.list_subscriptions()), 100)
        with self.assertRaises(NotFound):
            self.c.get_subscription("one-more")
        # The admin's list of every tenant's takes more than one page of
        # 100: list_subscriptions follows next_cursor to the end.
        other = self.srv.new_tenant("events-more")
        other.put_subscription("last", event="e", kind="k")
        every = self.srv.admin().list_subscriptions()
        mine = [s["name"] for s in every if s["tenant"] == self.c.tenant_name]  # type: ignore[attr-defined]
        self.assertEqual(mine, [f"s{i:03d}" for i in range(100)])
        self.assertIn((other.tenant_name, "last"), [(s["tenant"], s["name"]) for s in every])  # type: ignore[attr-defined]
        self.assertEqual(every, sorted(every, key=lambda s: (s["tenant"], s["name"])))

    def test_tenants_apart(self) -> None:
        other = self.srv.new_tenant("events-other")
        other.put_subscription("theirs", event="shared", kind="x")

        def flow(job: Job) -> Any:
            return job.wait_event("w", "shared", timeout=2)

        w = Worker(self.c, {"waiter": flow})
        e = self.c.submit("waiter")
        w.run_once(wait_seconds=2)
        pub = other.publish("shared", "theirs")
        self.assertEqual(pub["resumed"], 0)  # not this tenant's wait
        self.assertEqual(self.c.publish("shared", "ours")["started"], [])  # not their subscription
        with self.assertRaises(NotFound):
            self.c.get_subscription("theirs")
        w.run_once(wait_seconds=5)
        self.assertEqual(self.c.wait(e["execution_id"], timeout=5)["result"]["data"], "ours")


if __name__ == "__main__":
    unittest.main()
