"""Each call of the Client against a real `latch serve`."""

import datetime
import threading
import time
import unittest
import uuid

import latchserver
from latch_client import (BatchItem, Client, DedupKeyReused, InvalidRequest, LatchError, NotFound, Page,
                          PayloadTooLarge, TERMINAL, Unfinished)


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = latchserver.server()

    def setUp(self) -> None:
        self.c = self.srv.new_tenant("client")

    def claim_one(self, kind: str) -> dict:
        leases = self.c.claim("t-worker", kinds=[kind], wait_seconds=2)
        self.assertEqual(len(leases), 1, leases)
        return leases[0]

    def test_submit_dedup_key(self) -> None:
        a = self.c.submit("mail", {"to": "ann"}, dedup_key="order-1")
        self.assertFalse(a["deduplicated"])
        self.assertEqual((a["status"], a["kind"], a["payload"], a["dedup_key"]),
                         ("queued", "mail", {"to": "ann"}, "order-1"))
        b = self.c.submit("mail", {"to": "ann"}, dedup_key="order-1")
        self.assertTrue(b["deduplicated"])
        self.assertEqual(b["execution_id"], a["execution_id"])
        with self.assertRaises(DedupKeyReused):
            self.c.submit("mail", {"to": "bob"}, dedup_key="order-1")

    def test_submit_idempotency_key_header(self) -> None:
        a = self.c.submit("mail", {"n": 1}, idempotency_key="idem-1")
        self.assertEqual(a["dedup_key"], "idem-1")
        b = self.c.submit("mail", {"n": 1}, idempotency_key="idem-1")
        self.assertEqual((b["execution_id"], b["deduplicated"]), (a["execution_id"], True))
        with self.assertRaises(InvalidRequest) as cm:
            self.c.submit("mail", {"n": 1}, idempotency_key="idem-2", dedup_key="other")
        self.assertEqual(cm.exception.status, 400)

    def test_submit_without_key_gets_a_fresh_one(self) -> None:
        a = self.c.submit("mail")
        b = self.c.submit("mail")
        self.assertNotEqual(a["execution_id"], b["execution_id"])
        self.assertEqual(str(uuid.UUID(a["dedup_key"])), a["dedup_key"])  # a UUID the client made
        self.assertNotEqual(a["dedup_key"], b["dedup_key"])
        self.assertEqual(a["payload"], {})

    def test_submit_options(self) -> None:
        run_at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        e = self.c.submit("mail", {"x": 1}, queue="q.1", priority=5, max_attempts=7, timeout_seconds=9,
                          run_at=run_at, concurrency_key="ck", concurrency_limit=2, rate_key="rk")
        self.assertEqual((e["queue"], e["priority"], e["max_attempts"], e["timeout_seconds"], e["status"]),
                         ("q.1", 5, 7, 9, "scheduled"))
        self.assertEqual((e["concurrency_key"], e["concurrency_limit"], e["rate_key"]), ("ck", 2, "rk"))
        d = self.c.submit("mail", delay_seconds=3600)
        self.assertEqual(d["status"], "scheduled")

    def test_submit_batch(self) -> None:
        items = self.c.submit_batch([
            {"kind": "mail", "payload": {"n": 1}, "dedup_key": "b-1"},
            {"kind": "mail", "payload": {"n": 1}, "dedup_key": "b-1"},
            {"kind": "", "payload": {}},
            {"kind": "mail", "payload": {"n": 2}},
            {"kind": "mail", "payload": {"big": "x" * (1 << 20)}},
        ])
        self.assertEqual([i.status for i in items], [201, 200, 400, 201, 400])
        self.assertIsInstance(items[0], BatchItem)
        self.assertEqual(items[0].execution["execution_id"], items[1].execution["execution_id"])
        self.assertIsInstance(items[2].error, InvalidRequest)
        self.assertIsNone(items[2].execution)
        self.assertIsNotNone(items[3].execution["dedup_key"])  # the client gave it one
        self.assertIsInstance(items[4].error, PayloadTooLarge)

    def test_get_and_long_poll(self) -> None:
        e = self.c.submit("job")
        self.assertEqual(self.c.get(e["execution_id"])["status"], "queued")
        with self.assertRaises(NotFound):
            self.c.get(str(uuid.uuid4()))
        lease = self.claim_one("job")
        got = {}

        def poll() -> None:
            got["e"] = self.c.get(e["execution_id"], wait_seconds=20)
            got["t"] = time.monotonic()

        t = threading.Thread(target=poll)
        t.start()
        self.c.complete(lease["execution_id"], lease["lease_token"], {"ok": True})
        done = time.monotonic()
        t.join(25)
        self.assertEqual(got["e"]["status"], "succeeded")
        self.assertEqual(got["e"]["result"], {"ok": True})
        self.assertLess(got["t"] - done, 10, "the long poll did not end at the completion")
        self.assertEqual(self.c.wait(e["execution_id"], timeout=5)["status"], "succeeded")

    def test_wait_raises_unfinished(self) -> None:
        e = self.c.submit("nobody-claims-this")
        t0 = time.monotonic()
        with self.assertRaises(Unfinished) as cm:
            self.c.wait(e["execution_id"], timeout=1)
        self.assertGreaterEqual(time.monotonic() - t0, 0.9)
        self.assertEqual(cm.exception.execution["execution_id"], e["execution_id"])
        self.assertEqual(cm.exception.execution["status"], "queued")
        self.assertEqual(cm.exception.code, "unfinished")
        self.assertIsInstance(cm.exception, LatchError)

    def test_list_pages(self) -> None:
        ids = [self.c.submit("listed", {"i": i})["execution_id"] for i in range(5)]
        self.c.submit("other")
        page = self.c.list_executions(kind="listed", limit=2)
        self.assertIsInstance(page, Page)
        self.assertEqual(len(page.items), 2)
        self.assertIsNotNone(page.next_cursor)
        pages = list(self.c.execution_pages(kind="listed", limit=2))
        self.assertEqual([len(p.items) for p in pages], [2, 2, 1])
        self.assertIsNone(pages[-1].next_cursor)
        self.assertEqual([e["execution_id"] for e in self.c.iter_executions(kind="listed", limit=2)],
                         list(reversed(ids)))  # newest first
        one = self.c.list_executions(dedup_key=self.c.get(ids[2])["dedup_key"])
        self.assertEqual([e["execution_id"] for e in one.items], [ids[2]])
        self.assertEqual(len(self.c.list_executions(status="queued", limit=500).items), 6)
        whole = self.c.list_executions(id_prefix=ids[3])
        self.assertEqual([e["execution_id"] for e in whole.items], [ids[3]])
        near = [e["execution_id"] for e in self.c.iter_executions(id_prefix=ids[3][:8], limit=2)]
        self.assertIn(ids[3], near)
        self.assertTrue(all(i.startswith(ids[3][:8]) for i in near))
        with self.assertRaises(InvalidRequest):
            self.c.list_executions(id_prefix="abc")

    def test_cancel_and_delete(self) -> None:
        e = self.c.submit("job")
        with self.assertRaises(Exception) as cm:
            self.c.delete(e["execution_id"])
        self.assertEqual(cm.exception.code, "not_terminal")
        self.assertEqual(self.c.cancel(e["execution_id"])["status"], "cancelled")
        self.assertEqual(self.c.cancel(e["execution_id"])["status"], "cancelled")  # terminal: unchanged
        self.c.delete(e["execution_id"])
        with self.assertRaises(NotFound):
            self.c.get(e["execution_id"])
        f = self.c.submit("job")
        self.c.delete(f["execution_id"], force=True)
        with self.assertRaises(NotFound):
            self.c.get(f["execution_id"])

    def test_cancel_running(self) -> None:
        self.c.submit("job")
        lease = self.claim_one("job")
        e = self.c.cancel(lease["execution_id"])
        self.assertEqual((e["status"], e["cancel_requested"]), ("running", True))
        hb = self.c.heartbeat(lease["execution_id"], lease["lease_token"], lease_seconds=10)
        self.assertTrue(hb["cancel_requested"])
        done = self.c.complete(lease["execution_id"], lease["lease_token"], None)
        self.assertEqual(done["status"], "cancelled")

    def test_signal_and_idempotency(self) -> None:
        e = self.c.submit("flow")
        self.assertFalse(self.c.signal(e["execution_id"], "go", {"n": 1}))  # kept for a later wait
        self.assertFalse(self.c.signal(e["execution_id"], "go", {"n": 2}, idempotency_key="s-1"))
        self.c.cancel(e["execution_id"])
        # a repeat with its key answers the first answer, even after the end
        self.assertFalse(self.c.signal(e["execution_id"], "go", {"n": 2}, idempotency_key="s-1"))
        with self.assertRaises(Exception) as cm:
            self.c.signal(e["execution_id"], "go", {"n": 3}, idempotency_key="s-2")
        self.assertEqual(cm.exception.code, "not_active")

    def test_fail_and_retry(self) -> None:
        e = self.c.submit("job", max_attempts=5)
        lease = self.claim_one("job")
        f = self.c.fail(lease["execution_id"], lease["lease_token"], "boom", retry=False)
        self.assertEqual((f["status"], f["error"]), ("failed", "boom"))
        r = self.c.retry(e["execution_id"])
        self.assertEqual((r["status"], r["attempt"], r["error"]), ("queued", 0, None))
        lease = self.claim_one("job")
        f = self.c.fail(lease["execution_id"], lease["lease_token"], "again", retry=True, retry_after_seconds=3600)
        self.assertEqual((f["status"], f["attempt"]), ("scheduled", 1))

    def test_steps_and_attempts(self) -> None:
        e = self.c.submit("flow")
        lease = self.claim_one("flow")
        self.assertEqual(lease["steps"], {})
        rec = self.c.record_step(lease["execution_id"], lease["lease_token"], "s1", {"v": 1},
                                 started_at=datetime.datetime.now(datetime.timezone.utc))
        self.assertEqual(rec, {"name": "s1", "result": {"v": 1}, "recorded": True})
        again = self.c.record_step(lease["execution_id"], lease["lease_token"], "s1", {"v": 2})
        self.assertEqual(again, {"name": "s1", "result": {"v": 1}, "recorded": False})
        self.c.complete(lease["execution_id"], lease["lease_token"], "done")
        steps = self.c.steps(e["execution_id"])
        self.assertEqual([(s["name"], s["result"], s["attempt"]) for s in steps], [("s1", {"v": 1}, 1)])
        att = self.c.attempts(e["execution_id"])
        self.assertEqual([(a["attempt"], a["worker_id"], a["outcome"]) for a in att], [(1, "t-worker", "succeeded")])

    def test_suspend_sleep(self) -> None:
        e = self.c.submit("flow")
        lease = self.claim_one("flow")
        until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        s = self.c.suspend(lease["execution_id"], lease["lease_token"], "nap", until=until)
        self.assertEqual(s["status"], "suspended")
        self.assertIsNotNone(s["wake_at"])
        w = self.c.submit("flow")
        lease = self.claim_one("flow")
        s = self.c.suspend(lease["execution_id"], lease["lease_token"], "wait", signal="go", timeout_seconds=60)
        self.assertEqual((s["status"], s["waiting_for"]), ("suspended", "go"))
        self.assertTrue(self.c.signal(w["execution_id"], "go", {"ok": 1}))
        self.assertEqual(self.c.get(e["execution_id"])["status"], "suspended")

    def test_schedules(self) -> None:
        s = self.c.put_schedule("nightly", {"cron": "0 3 * * *", "kind": "report"}, payload={"r": 1})
        self.assertEqual((s["name"], s["cron"], s["kind"], s["payload"], s["timezone"]),
                         ("nightly", "0 3 * * *", "report", {"r": 1}, "UTC"))
        self.assertEqual(self.c.get_schedule("nightly")["cron"], "0 3 * * *")
        back = self.c.put_schedule("nightly", self.c.get_schedule("nightly"))  # a GET answer PUT back
        self.assertEqual(back["payload"], {"r": 1})
        self.c.put_schedule("hourly", every="1h", kind="report")
        pages = list(self.c.schedule_pages(limit=1))
        self.assertEqual([p.items[0]["name"] for p in pages], ["hourly", "nightly"])
        x = self.c.trigger_schedule("nightly", idempotency_key="tick-1")
        y = self.c.trigger_schedule("nightly", idempotency_key="tick-1")
        self.assertEqual((x["execution_id"], x["schedule"]), (y["execution_id"], "nightly"))
        self.c.delete_schedule("hourly")
        with self.assertRaises(NotFound):
            self.c.get_schedule("hourly")
        self.assertEqual(self.c.get(x["execution_id"])["schedule"], "nightly")  # its executions stay

    def test_schedule_pause_resume(self) -> None:
        self.c.put_schedule("pausable", {"every": "1h", "kind": "report"}, payload={"r": 2})
        p = self.c.pause_schedule("pausable")
        self.assertEqual((p["name"], p["enabled"], p["next_run_at"], p["payload"]), ("pausable", False, None, {"r": 2}))
        self.assertEqual(self.c.pause_schedule("pausable"), p)  # a repeat changes nothing
        self.assertEqual(self.c.get_schedule("pausable"), p)
        r = self.c.resume_schedule("pausable")
        self.assertEqual((r["enabled"], r["every"], r["payload"]), (True, "1h", {"r": 2}))
        self.assertIsNotNone(r["next_run_at"])
        self.assertEqual(self.c.resume_schedule("pausable"), r)
        with self.assertRaises(NotFound):
            self.c.pause_schedule("missing")
        with self.assertRaises(NotFound):
            self.c.resume_schedule("missing")

    def test_rate_limits(self) -> None:
        r = self.c.put_rate_limit("api", 10, 60, burst=3)
        self.assertEqual((r["key"], r["rate"], r["per_seconds"], r["burst"]), ("api", 10, 60, 3))
        self.assertEqual(self.c.get_rate_limit("api")["burst"], 3)
        self.assertEqual(self.c.put_rate_limit("api", 5, 1)["burst"], 1)
        self.assertEqual(self.c.delete_rate_limit("api")["rate"], 5)
        with self.assertRaises(NotFound):
            self.c.get_rate_limit("api")

    def test_stream_ticket_and_events(self) -> None:
        e = self.c.submit("job")
        self.c.cancel(e["execution_id"])
        t = self.c.stream_ticket(e["execution_id"])
        self.assertEqual(t["expires_in"], 60)
        anon = Client(self.srv.url, "")  # a ticket needs no key
        events = list(anon.events(e["execution_id"], ticket=t["ticket"]))
        self.assertEqual([(ev, d["status"]) for ev, d in events], [("status", "cancelled")])
        self.assertIn(events[-1][1]["status"], TERMINAL)
        events = list(self.c.events(e["execution_id"]))  # with the key
        self.assertEqual(events[-1][0], "status")

    def test_tenants_and_keys(self) -> None:
        admin = self.srv.admin()
        name = f"adm-{uuid.uuid4().hex[:8]}"
        t = admin.create_tenant(name, max_inflight=5)
        self.assertTrue(t["api_key"].startswith("lk_"))
        self.assertEqual(admin.get_tenant(name)["max_inflight"], 5)
        self.assertEqual(admin.update_tenant(name, max_inflight=6)["max_inflight"], 6)
        k = admin.create_key(name)
        self.assertEqual(len(admin.list_keys(name)), 2)
        own = Client(self.srv.url, k["api_key"])
        self.assertEqual(own.get_tenant(name)["name"], name)
        admin.delete_key(name, k["key_id"])
        self.assertEqual(len(admin.list_keys(name)), 1)
        as_tenant = Client(self.srv.url, latchserver.ADMIN_KEY, tenant=name)
        self.assertEqual(as_tenant.submit("job")["tenant"], name)
        admin.delete_tenant(name, force=True)
        with self.assertRaises(NotFound):
            admin.get_tenant(name)
        self.assertTrue(self.c.ready())


if __name__ == "__main__":
    unittest.main()
