"""The Worker: complete, fail and retry, cancel through the heartbeat, a lost
lease, concurrency, and a graceful stop on SIGTERM and SIGINT."""

import datetime
import os
import queue
import signal
import subprocess
import sys
import threading
import unittest
from typing import Any, Dict, List

import latchserver
from latch_client import Fail, Job, Worker, parse_time

HERE = os.path.dirname(os.path.abspath(__file__))


def start_worker_process(srv: latchserver.Server, key: str, mode: str, **env: str) -> subprocess.Popen:
    e = dict(os.environ, LATCH_URL=srv.url, LATCH_KEY=key, PYTHONPATH=latchserver.SRC, **env)
    return subprocess.Popen([sys.executable, os.path.join(HERE, "worker_proc.py"), mode], env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def read_line(p: subprocess.Popen, timeout: float = 20) -> str:
    """The next line of p's stdout; "" when none comes within timeout (p is then killed)."""
    q: "queue.Queue[str]" = queue.Queue()
    threading.Thread(target=lambda: q.put(p.stdout.readline()), daemon=True).start()
    try:
        return q.get(timeout=timeout)
    except queue.Empty:
        p.kill()
        return ""


class WorkerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = latchserver.server()

    def setUp(self) -> None:
        self.c = self.srv.new_tenant("worker")

    def test_complete(self) -> None:
        w = Worker(self.c, {"double": lambda job: {"n": job.payload["n"] * 2, "attempt": job.attempt}},
                   wait_seconds=2)
        e = self.c.submit("double", {"n": 21})
        self.assertEqual(w.run_once(), 1)
        got = self.c.get(e["execution_id"])
        self.assertEqual((got["status"], got["result"]), ("succeeded", {"n": 42, "attempt": 1}))
        self.assertEqual(w.run_once(wait_seconds=0), 0)  # nothing left

    def test_result_over_the_storage_budget_fails_without_retry(self) -> None:
        c = self.srv.new_tenant("worker", max_stored_bytes=100)
        w = Worker(c, {"big": lambda job: "x" * 200}, wait_seconds=2)
        e = c.submit("big", max_attempts=3)
        self.assertEqual(w.run_once(), 1)
        got = c.get(e["execution_id"])
        self.assertEqual((got["status"], got["attempt"], got["result"]), ("failed", 1, None))
        self.assertIn("StorageExceeded", got["error"])

    def test_fail_is_retried(self) -> None:
        def boom(job: Job) -> None:
            raise ValueError("bad input")

        w = Worker(self.c, {"boom": boom})
        e = self.c.submit("boom", max_attempts=3)
        w.run_once(wait_seconds=2)
        got = self.c.get(e["execution_id"])
        self.assertEqual((got["attempt"], got["error"]), (1, "ValueError: bad input"))
        self.assertIn(got["status"], ("scheduled", "queued"))  # after the server's backoff of about a second

    def test_fail_choices(self) -> None:
        outcomes: Dict[str, Any] = {
            "final": Fail("no use", retry=False),
            "later": Fail("try later", retry_after_seconds=3600),
        }

        def handler(job: Job) -> None:
            raise outcomes[job.payload["o"]]

        w = Worker(self.c, {"choose": handler, "last": lambda job: 1 / 0, "notjson": lambda job: {1, 2}})
        final = self.c.submit("choose", {"o": "final"}, max_attempts=5)
        later = self.c.submit("choose", {"o": "later"}, max_attempts=5)
        last = self.c.submit("last", max_attempts=1)
        notjson = self.c.submit("notjson", max_attempts=5)
        for _ in range(4):
            self.assertEqual(w.run_once(wait_seconds=2), 1)
        f = self.c.get(final["execution_id"])
        self.assertEqual((f["status"], f["error"]), ("failed", "no use"))
        lt = self.c.get(later["execution_id"])
        self.assertEqual(lt["status"], "scheduled")
        run_at = parse_time(lt["run_at"])
        ahead = (run_at - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
        self.assertTrue(3500 < ahead <= 3600, ahead)
        la = self.c.get(last["execution_id"])
        self.assertEqual((la["status"], la["error"]), ("failed", "ZeroDivisionError: division by zero"))
        nj = self.c.get(notjson["execution_id"])
        self.assertEqual(nj["status"], "failed")
        self.assertIn("not JSON", nj["error"])

    def test_cancel_seen_through_heartbeat(self) -> None:
        started = threading.Event()
        seen: Dict[str, bool] = {}

        def long(job: Job) -> str:
            started.set()
            seen["cancelled"] = job.cancelled.wait(15)
            job.raise_if_cancelled()
            return "not reached"

        w = Worker(self.c, {"long": long}, lease_seconds=3)  # a heartbeat every second
        e = self.c.submit("long")
        outcome: List[str] = []
        t = threading.Thread(target=lambda: outcome.extend(w.run_lease(l) for l in w.claim(wait_seconds=2)))
        t.start()
        self.assertTrue(started.wait(10))
        self.assertTrue(self.c.cancel(e["execution_id"])["cancel_requested"])
        t.join(20)
        self.assertTrue(seen["cancelled"])
        self.assertEqual(outcome, ["failed"])
        self.assertEqual(self.c.get(e["execution_id"])["status"], "cancelled")

    def test_lease_lost(self) -> None:
        started = threading.Event()

        def long(job: Job) -> str:
            started.set()
            job.lease_lost.wait(15)
            return "dropped"

        w = Worker(self.c, {"long": long}, lease_seconds=3)
        e = self.c.submit("long")
        outcome: List[str] = []
        t = threading.Thread(target=lambda: outcome.extend(w.run_lease(l) for l in w.claim(wait_seconds=2)))
        t.start()
        self.assertTrue(started.wait(10))
        self.c.delete(e["execution_id"], force=True)
        t.join(20)
        self.assertEqual(outcome, ["lease_lost"])

    def test_concurrency(self) -> None:
        barrier = threading.Barrier(3, timeout=15)

        def meet(job: Job) -> str:
            barrier.wait()  # passes only when three jobs run at once
            return threading.current_thread().name

        w = Worker(self.c, {"meet": meet}, concurrency=3, wait_seconds=1)
        ids = [self.c.submit("meet")["execution_id"] for _ in range(3)]
        t = threading.Thread(target=w.run, kwargs={"install_signal_handlers": False})
        t.start()
        try:
            results = [self.c.wait(i, timeout=20) for i in ids]
        finally:
            w.stop()
            t.join(10)
        self.assertFalse(t.is_alive())
        self.assertEqual([r["status"] for r in results], ["succeeded"] * 3)
        self.assertEqual(len({r["result"] for r in results}), 3)

    def test_graceful_stop(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name):
                c = self.srv.new_tenant("graceful")
                first = c.submit("slow", priority=1)
                second = c.submit("slow")
                p = start_worker_process(self.srv, c.key, "graceful")
                try:
                    line = read_line(p)
                    self.assertEqual(line.split(), ["started", first["execution_id"]],
                                     p.stderr.read() if not line else "")
                    p.send_signal(sig)
                    out, err = p.communicate(timeout=20)
                finally:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
                self.assertEqual((p.returncode, out.split()), (0, ["stopped"]), err)
                got = c.get(first["execution_id"])
                self.assertEqual((got["status"], got["result"]), ("succeeded", {"saw_stop": True}))
                self.assertEqual(c.get(second["execution_id"])["status"], "queued")  # not claimed after the stop


if __name__ == "__main__":
    unittest.main()
