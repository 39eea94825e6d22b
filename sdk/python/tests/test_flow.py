"""Flows through the Worker: steps recorded once, sleeps, signal waits (with
a timeout, and a signal sent before the wait), all with the lease's journal."""

import datetime
import unittest
from typing import Any, Dict, List

import latchserver
from latch_client import Job, Suspended, WaitTimedOut, Worker


class FlowTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = latchserver.server()

    def setUp(self) -> None:
        self.c = self.srv.new_tenant("flow")

    def test_step_sleep_step(self) -> None:
        calls: List[str] = []

        def flow(job: Job) -> Dict[str, Any]:
            a = job.step("a", lambda: calls.append("a") or {"v": 1})
            job.sleep("nap", 1)
            b = job.step("b", lambda: calls.append("b") or {"v": 2})
            return {"a": a, "b": b}

        w = Worker(self.c, {"napper": flow})
        e = self.c.submit("napper")
        self.assertEqual(w.run_once(wait_seconds=2), 1)
        s = self.c.get(e["execution_id"])
        self.assertEqual((s["status"], s["waiting_for"]), ("suspended", None))
        self.assertIsNotNone(s["wake_at"])
        self.assertEqual(w.run_once(wait_seconds=10), 1)  # claimed once the sleep is due
        done = self.c.get(e["execution_id"])
        self.assertEqual((done["status"], done["attempt"]), ("succeeded", 1))
        self.assertEqual(done["result"], {"a": {"v": 1}, "b": {"v": 2}})
        self.assertEqual(calls, ["a", "b"])
        self.assertEqual([(s["name"], s["result"]) for s in self.c.steps(e["execution_id"])],
                         [("a", {"v": 1}), ("nap", None), ("b", {"v": 2})])
        self.assertEqual([a["outcome"] for a in self.c.attempts(e["execution_id"])], ["suspended", "succeeded"])

    def test_journal_larger_than_the_lease(self) -> None:
        # Three steps of 600 KB: the lease after the sleep carries the first
        # two (1 MiB at most, the step that reaches it included) and says it
        # is partial; the third comes from the steps read, and none runs twice.
        calls: List[str] = []
        big = {n: n + "x" * (600 << 10) for n in ("s0", "s1", "s2")}
        leases: List[Dict[str, Any]] = []

        def flow(job: Job) -> str:
            leases.append(dict(job.lease))
            for n in ("s0", "s1", "s2"):
                got = job.step(n, lambda n=n: calls.append(n) or big[n])
                self.assertEqual(got, big[n])
            job.sleep("nap", until=datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1))
            return "done"

        w = Worker(self.c, {"big": flow})
        e = self.c.submit("big")
        self.assertEqual(w.run_once(wait_seconds=2), 1)
        self.assertEqual(self.c.get(e["execution_id"])["status"], "queued")  # the sleep was due: queued at once
        self.assertEqual(w.run_once(wait_seconds=5), 1)
        done = self.c.get(e["execution_id"])
        self.assertEqual((done["status"], done["result"]), ("succeeded", "done"))
        self.assertEqual(calls, ["s0", "s1", "s2"])
        self.assertIs(leases[1]["steps_complete"], False)
        self.assertEqual(sorted(leases[1]["steps"]), ["s0", "s1"])
        page = self.c.steps_page(e["execution_id"], limit=2)
        self.assertEqual([s["name"] for s in page.items], ["s0", "s1"])
        self.assertIsNotNone(page.next_cursor)
        self.assertEqual([s["name"] for s in self.c.steps(e["execution_id"])], ["s0", "s1", "s2", "nap"])

    def test_sleep_until(self) -> None:
        def flow(job: Job) -> str:
            job.sleep("past", until=datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1))
            return "woke"

        w = Worker(self.c, {"until": flow})
        e = self.c.submit("until")
        w.run_once(wait_seconds=2)
        self.assertEqual(self.c.get(e["execution_id"])["status"], "queued")  # not in the future: queued at once
        w.run_once(wait_seconds=5)
        self.assertEqual(self.c.get(e["execution_id"])["result"], "woke")

    def test_wait_signal_timeout(self) -> None:
        def flow(job: Job) -> str:
            try:
                job.wait_signal("approval", "approve", timeout=1)
            except WaitTimedOut:
                return "timed out"
            return "approved"

        w = Worker(self.c, {"approver": flow})
        e = self.c.submit("approver")
        w.run_once(wait_seconds=2)
        s = self.c.get(e["execution_id"])
        self.assertEqual((s["status"], s["waiting_for"]), ("suspended", "approve"))
        self.assertEqual(w.run_once(wait_seconds=10), 1)
        self.assertEqual(self.c.get(e["execution_id"])["result"], "timed out")

    def test_signal_before_wait(self) -> None:
        suspends: List[str] = []

        def flow(job: Job) -> Any:
            try:
                return job.wait_signal("w", "go")
            except Suspended as s:
                suspends.append(s.execution["status"])
                raise

        w = Worker(self.c, {"early": flow})
        e = self.c.submit("early")
        self.assertFalse(self.c.signal(e["execution_id"], "go", {"early": True}))  # kept
        w.run_once(wait_seconds=2)
        self.assertEqual(suspends, ["queued"])  # consumed at once
        w.run_once(wait_seconds=5)
        self.assertEqual(self.c.get(e["execution_id"])["result"], {"early": True})

    def test_suspended_passes_except_exception(self) -> None:
        def flow(job: Job) -> str:
            try:
                job.wait_signal("w", "go")
            except Exception:  # a handler's broad except does not swallow the suspend
                return "swallowed"
            return "resumed"

        w = Worker(self.c, {"broad": flow})
        e = self.c.submit("broad")
        w.run_once(wait_seconds=2)
        self.assertEqual(self.c.get(e["execution_id"])["status"], "suspended")


if __name__ == "__main__":
    unittest.main()
