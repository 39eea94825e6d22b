"""The shared SDK scenario, sdk/SCENARIO.md, step by step."""

import os
import signal
import tempfile
import threading
import unittest
from typing import Any, Dict, List

import latchserver
from latch_client import Job, Worker
from test_worker import read_line, start_worker_process


class ScenarioTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = latchserver.server()

    def test_a_one_dedup_key_64_concurrent_submits(self) -> None:
        c = self.srv.new_tenant("scenario-a")
        barrier = threading.Barrier(64, timeout=30)
        answers: List[Dict[str, Any]] = []
        errors: List[BaseException] = []
        lock = threading.Lock()

        def submit() -> None:
            try:
                barrier.wait()
                e = c.submit("scenario-a", {"n": 1}, dedup_key="scenario-a")
                with lock:
                    answers.append(e)
            except BaseException as err:  # reported below
                with lock:
                    errors.append(err)

        threads = [threading.Thread(target=submit) for _ in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        self.assertEqual(len(answers), 64)
        ids = {a["execution_id"] for a in answers}
        self.assertEqual(len(ids), 1, ids)
        self.assertEqual(sorted(a["deduplicated"] for a in answers), [False] + [True] * 63)
        listed = c.list_executions(dedup_key="scenario-a").items
        self.assertEqual([e["execution_id"] for e in listed], list(ids))
        self.assertEqual(c.get_tenant(c.tenant_name)["inflight"], 1)

    def test_b_worker_killed_mid_job(self) -> None:
        c = self.srv.new_tenant("scenario-b")
        fd, effect = tempfile.mkstemp(prefix="latch-effect-")
        os.close(fd)
        self.addCleanup(os.remove, effect)
        e = c.submit("scenario-b", {}, max_attempts=3)
        eid = e["execution_id"]

        a = start_worker_process(self.srv, c.key, "effect", EFFECT_FILE=effect, HANG="1")
        try:
            line = read_line(a)
            self.assertEqual(line.split(), ["started", "1"], a.stderr.read() if not line else "")
            running = c.get(eid)
            self.assertEqual((running["status"], running["attempt"]), ("running", 1))
        finally:
            a.send_signal(signal.SIGKILL)
            a.communicate()
        self.assertEqual(a.returncode, -signal.SIGKILL)

        b = start_worker_process(self.srv, c.key, "effect", EFFECT_FILE=effect)
        try:
            done = c.wait(eid, timeout=20)
            self.assertEqual((done["status"], done["attempt"], done["result"]), ("succeeded", 2, {"attempt": 2}))
            with open(effect) as f:
                self.assertEqual(f.read().splitlines(), ["start 1", "start 2", "done 2"])
            self.assertEqual([(x["attempt"], x["outcome"]) for x in c.attempts(eid)],
                             [(1, "expired"), (2, "succeeded")])
            b.send_signal(signal.SIGTERM)
            out, err = b.communicate(timeout=20)
        finally:
            if b.poll() is None:
                b.kill()
                b.wait()
        self.assertEqual(b.returncode, 0, err)
        self.assertEqual(out.split(), ["started", "2", "stopped"])

    def test_c_two_step_flow_waits_for_a_signal(self) -> None:
        c = self.srv.new_tenant("scenario-c")
        calls = {"one": 0, "two": 0}

        def one(order: int) -> Dict[str, Any]:
            calls["one"] += 1
            return {"reserved": order}

        def two(by: str) -> Dict[str, Any]:
            calls["two"] += 1
            return {"shipped_by": by}

        def flow(job: Job) -> Dict[str, Any]:
            r1 = job.step("one", lambda: one(job.payload["order"]))
            approval = job.wait_signal("approval", "approve", timeout=60)
            r2 = job.step("two", lambda: two(approval["by"]))
            return {"one": r1, "two": r2}

        w = Worker(c, {"scenario-c": flow})
        eid = c.submit("scenario-c", {"order": 7})["execution_id"]

        self.assertEqual(w.run_once(wait_seconds=5), 1)
        s = c.get(eid)
        self.assertEqual((s["status"], s["waiting_for"], s["attempt"]), ("suspended", "approve", 1))
        self.assertEqual([(x["name"], x["result"]) for x in c.steps(eid)], [("one", {"reserved": 7})])

        self.assertTrue(c.signal(eid, "approve", {"by": "ann"}))

        self.assertEqual(w.run_once(wait_seconds=5), 1)
        done = c.get(eid)
        self.assertEqual((done["status"], done["attempt"]), ("succeeded", 1))
        self.assertEqual(done["result"], {"one": {"reserved": 7}, "two": {"shipped_by": "ann"}})
        self.assertEqual([(x["name"], x["result"], x["attempt"]) for x in c.steps(eid)],
                         [("one", {"reserved": 7}, 1), ("approval", {"by": "ann"}, 1),
                          ("two", {"shipped_by": "ann"}, 1)])
        self.assertEqual(calls, {"one": 1, "two": 1})


if __name__ == "__main__":
    unittest.main()
