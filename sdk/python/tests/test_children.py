"""Children through the Worker, against a real `latch serve`: a flow spawns
children and waits for them, a replay gets the same ids and admits nothing,
a failed child is reported (not raised), waits with a count and a timeout,
map, the parent's end, and the listing of children."""

import unittest
from typing import Any, Dict, List

import latchserver
from latch_client import ChildrenTimedOut, Fail, InvalidRequest, Job, Suspended, Worker


def square(job: Job) -> int:
    n = job.payload["n"]
    if n == 2:
        raise Fail("two is not welcome", retry=False)
    return n * n


class ChildrenTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = latchserver.server()

    def setUp(self) -> None:
        self.c = self.srv.new_tenant("children")
        self.kids = Worker(self.c, {"square": square})

    def run_children(self, n: int) -> None:
        for _ in range(n):
            self.assertEqual(self.kids.run_once(wait_seconds=5), 1)

    def test_spawn_three_wait_for_all_replay_and_a_failed_child(self) -> None:
        spawned: List[List[str]] = []
        replays: List[Dict[str, Any]] = []
        suspends: List[str] = []

        def parent(job: Job) -> Any:
            ids = job.spawn("kids", [{"kind": "square", "payload": {"n": n}} for n in (1, 2, 3)])
            spawned.append(ids)
            if len(spawned) > 1:
                # The server's own replay: the same step admits nothing and
                # answers the first spawn's children, whatever the items.
                replays.append(job.client.spawn_children(job.execution_id, job.lease_token, "kids",
                                                         [{"kind": "square", "payload": {"n": 9}}]))
            try:
                outs = job.wait_children("all", "kids")
            except Suspended as s:
                suspends.append(s.execution["status"])
                raise
            return {"ids": ids, "outs": outs}

        w = Worker(self.c, {"parent": parent})
        e = self.c.submit("parent")
        pid = e["execution_id"]
        self.assertEqual(w.run_once(wait_seconds=2), 1)
        self.assertEqual(suspends, ["suspended"])
        s = self.c.get(pid)
        self.assertEqual((s["status"], s["waiting_for"]), ("suspended", "children:kids"))
        ids = spawned[0]
        self.assertEqual(len(set(ids)), 3)

        kids = self.c.children(pid)
        self.assertEqual([k["execution_id"] for k in kids], ids)  # spawn order
        self.assertEqual({(k["parent_id"], k["parent_step"], k["kind"]) for k in kids}, {(pid, "kids", "square")})
        self.assertEqual([k["payload"] for k in kids], [{"n": 1}, {"n": 2}, {"n": 3}])
        page = self.c.list_executions(parent_id=pid, limit=2)
        self.assertEqual([k["execution_id"] for k in page.items], ids[:2])
        self.assertIsNotNone(page.next_cursor)
        self.assertEqual(self.c.get_tenant(self.c.tenant_name)["inflight"], 4)  # type: ignore[attr-defined]

        self.run_children(3)
        self.assertEqual(w.run_once(wait_seconds=10), 1)  # the last child's end queued the parent
        done = self.c.wait(pid, timeout=5)
        self.assertEqual((done["status"], done["attempt"]), ("succeeded", 1))
        self.assertEqual(spawned, [ids, ids])  # the replay got the same ids from the journal
        self.assertEqual(len(replays), 1)
        self.assertIs(replays[0]["recorded"], False)
        self.assertEqual([c["execution_id"] for c in replays[0]["children"]], ids)
        self.assertEqual(len(self.c.children(pid)), 3)  # nothing admitted by the replays
        outs = done["result"]["outs"]
        self.assertEqual([o["execution_id"] for o in outs], ids)
        self.assertEqual([o["status"] for o in outs], ["succeeded", "failed", "succeeded"])
        self.assertEqual([o["result"] for o in outs], [1, None, 9])
        self.assertIsNone(outs[0]["error"])
        self.assertIn("two is not welcome", outs[1]["error"])
        self.assertEqual([st["name"] for st in self.c.steps(pid)], ["kids", "all"])
        self.assertEqual(self.c.steps(pid)[0]["result"], {"children": ids})

    def test_wait_for_a_count(self) -> None:
        def parent(job: Job) -> Any:
            job.spawn("kids", [{"kind": "square", "payload": {"n": 3}},
                               {"kind": "nobody-runs-this", "payload": {}}])
            outs = job.wait_children("first", "kids", count=1)
            return [o["status"] for o in outs]

        w = Worker(self.c, {"parent": parent})
        pid = self.c.submit("parent")["execution_id"]
        w.run_once(wait_seconds=2)
        self.assertEqual(self.c.get(pid)["status"], "suspended")
        self.run_children(1)
        self.assertEqual(w.run_once(wait_seconds=10), 1)
        done = self.c.wait(pid, timeout=5)
        self.assertEqual(done["result"], ["succeeded", "queued"])
        # The parent ended: its live child, spawned with the default
        # on_parent_end, was cancelled in the same operation.
        self.assertEqual([k["status"] for k in self.c.children(pid)], ["succeeded", "cancelled"])

    def test_wait_timeout_raises_with_the_children(self) -> None:
        def parent(job: Job) -> Any:
            job.spawn("kids", [{"kind": "nobody-runs-this"}], on_parent_end="abandon")
            try:
                job.wait_children("all", "kids", timeout=1)
            except ChildrenTimedOut as t:
                return {"timed_out": [c["status"] for c in t.children]}
            return "all ended"

        w = Worker(self.c, {"parent": parent})
        pid = self.c.submit("parent")["execution_id"]
        w.run_once(wait_seconds=2)
        s = self.c.get(pid)
        self.assertEqual((s["status"], s["waiting_for"]), ("suspended", "children:kids"))
        self.assertIsNotNone(s["wake_at"])
        self.assertEqual(w.run_once(wait_seconds=10), 1)
        self.assertEqual(self.c.wait(pid, timeout=5)["result"], {"timed_out": ["queued"]})
        # Abandoned: the child outlives its parent.
        self.assertEqual([k["status"] for k in self.c.children(pid)], ["queued"])

    def test_map(self) -> None:
        def parent(job: Job) -> Any:
            outs = job.map("sq", "square", [{"n": n} for n in (3, 4, 5)], max_attempts=1)
            return [o["result"] for o in outs]

        w = Worker(self.c, {"parent": parent})
        pid = self.c.submit("parent")["execution_id"]
        w.run_once(wait_seconds=2)
        kids = self.c.children(pid)
        self.assertEqual([k["max_attempts"] for k in kids], [1, 1, 1])
        self.run_children(3)
        w.run_once(wait_seconds=10)
        done = self.c.wait(pid, timeout=5)
        self.assertEqual(done["result"], [9, 16, 25])
        self.assertEqual([st["name"] for st in self.c.steps(pid)], ["sq", "sq/wait"])

    def test_a_spawn_that_breaks_a_rule_changes_nothing(self) -> None:
        errors: List[Exception] = []

        def parent(job: Job) -> Any:
            try:
                job.spawn("kids", [{"kind": "square", "dedup_key": "no"}])
            except InvalidRequest as err:
                errors.append(err)
            try:
                job.wait_children("w", "not-a-spawn")
            except InvalidRequest as err:
                errors.append(err)
            return "done"

        w = Worker(self.c, {"parent": parent})
        pid = self.c.submit("parent")["execution_id"]
        w.run_once(wait_seconds=2)
        self.assertEqual(self.c.wait(pid, timeout=5)["result"], "done")
        self.assertEqual([e.code for e in errors], ["invalid_request", "invalid_request"])
        self.assertIn("dedup_key", str(errors[0]))
        self.assertEqual(self.c.children(pid), [])
        self.assertEqual(self.c.steps(pid), [])


if __name__ == "__main__":
    unittest.main()
