"""Trace context: the client sends the caller's W3C traceparent (given to
submit, or current through use_traceparent, in threads and asyncio tasks),
and the worker hands the lease's to the handler (job.traceparent) and sends
it on every call under the lease, the handler's own included."""

import asyncio
import threading
import time
import unittest
from typing import Any, Dict, List, Optional, Tuple

import latchserver
from latch_client import AsyncClient, Client, Worker, current_traceparent, use_traceparent, valid_traceparent

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def trace_id(tp: Optional[str]) -> Optional[str]:
    return tp[3:35] if tp else None


class Recorder:
    """Wraps a client's opener: records (method, path, traceparent) of each request sent."""

    def __init__(self, client: Client) -> None:
        self.sent: List[Tuple[str, str, Optional[str]]] = []
        self.lock = threading.Lock()
        opener = client._opener
        inner = opener.open

        def open_(req: Any, *a: Any, **kw: Any) -> Any:
            path = req.full_url.split("?")[0][len(client.base_url):]
            with self.lock:
                self.sent.append((req.get_method(), path, req.get_header("Traceparent")))
            return inner(req, *a, **kw)

        opener.open = open_  # type: ignore[method-assign]

    def calls(self) -> List[Tuple[str, str, Optional[str]]]:
        with self.lock:
            return list(self.sent)


class TraceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = latchserver.server()

    def setUp(self) -> None:
        self.c = self.srv.new_tenant("trace")

    def test_valid_traceparent(self) -> None:
        self.assertTrue(valid_traceparent(TP))
        self.assertTrue(valid_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later"))
        for bad in ("", "garbage", TP.upper(), "ff" + TP[2:], TP + "-x",
                    "00-" + "0" * 32 + "-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-" + "0" * 16 + "-01"):
            self.assertFalse(valid_traceparent(bad), bad)

    def test_submit_sends_the_traceparent_given(self) -> None:
        rec = Recorder(self.c)
        e = self.c.submit("traced", {"n": 1}, traceparent=TP)
        self.assertEqual(rec.calls()[-1], ("POST", "/api/executions", TP))
        self.assertEqual(trace_id(self.c.get(e["execution_id"]).get("trace_parent")), trace_id(TP))
        plain = self.c.submit("traced", {"n": 2})
        self.assertEqual(rec.calls()[-1][2], None)
        self.assertNotIn("trace_parent", self.c.get(plain["execution_id"]))

    def test_a_bad_traceparent_is_refused_before_sending(self) -> None:
        rec = Recorder(self.c)
        with self.assertRaisesRegex(ValueError, "not a W3C traceparent"):
            self.c.submit("traced", traceparent="00-nope")
        with self.assertRaises(ValueError):
            with use_traceparent("00-nope"):
                self.c.submit("traced")
        self.assertEqual(rec.calls(), [])
        self.assertEqual(self.c.list_executions(kind="traced").items, [])

    def test_use_traceparent_covers_every_call_of_the_block(self) -> None:
        rec = Recorder(self.c)
        with use_traceparent(TP):
            self.assertEqual(current_traceparent(), TP)
            e = self.c.submit("traced")
            self.c.submit_batch([{"kind": "traced"}])
            self.c.signal(e["execution_id"], "go")
            with use_traceparent(OTHER):  # nested: the inner one, then the outer again
                self.c.submit("traced")
            self.c.publish("ev")
            # Another thread has its own context: nothing current there.
            seen: List[Optional[str]] = []
            t = threading.Thread(target=lambda: seen.append(current_traceparent()))
            t.start()
            t.join()
            self.assertEqual(seen, [None])
        self.assertIsNone(current_traceparent())
        self.c.get(e["execution_id"])
        self.assertEqual([tp for _, _, tp in rec.calls()], [TP, TP, TP, OTHER, TP, None])

    def test_async_client_sends_the_tasks_traceparent(self) -> None:
        rec = Recorder(self.c)

        async def main() -> Dict[str, Any]:
            async with AsyncClient(sync=self.c) as ac:
                async def traced() -> Dict[str, Any]:
                    with use_traceparent(TP):
                        return await ac.submit("traced")

                async def plain() -> Dict[str, Any]:
                    return await ac.submit("traced")

                a, _ = await asyncio.gather(traced(), plain())
                return a

        e = asyncio.run(main())
        self.assertEqual(sorted(tp or "" for _, _, tp in rec.calls()), ["", TP])
        self.assertEqual(trace_id(self.c.get(e["execution_id"]).get("trace_parent")), trace_id(TP))

    def test_worker_runs_the_handler_in_the_runs_trace(self) -> None:
        e = self.c.submit("traced-flow", {"n": 1}, traceparent=TP)
        parent_tp = self.c.get(e["execution_id"])["trace_parent"]  # the submit's (its span's, with tracing on)
        self.assertEqual(trace_id(parent_tp), trace_id(TP))
        wc = Client(self.c.base_url, self.c.key)
        rec = Recorder(wc)
        got: Dict[str, Any] = {}

        def handler(job: Any) -> Any:
            got["job"] = job.traceparent
            got["current"] = current_traceparent()
            job.step("one", lambda: 1)
            time.sleep(1.4)  # a heartbeat (every lease_seconds / 3) falls in the run
            child = job.client.submit("traced-child", {})  # the handler's own call joins the trace
            got["child"] = child["execution_id"]
            return {"ok": True}

        w = Worker(wc, {"traced-flow": handler}, lease_seconds=3, wait_seconds=2)
        self.assertEqual(w.run_once(), 1)
        self.assertEqual(got["job"], parent_tp)
        self.assertEqual(got["current"], parent_tp)
        self.assertIsNone(current_traceparent())  # restored after the run
        under = [(m, p.rsplit("/", 1)[-1], tp) for m, p, tp in rec.calls() if p != "/api/workers/claim"]
        ops = [op for _, op, _ in under]
        self.assertIn("heartbeat", ops)
        self.assertEqual(ops[0], "steps")
        self.assertEqual(ops[-2:], ["executions", "complete"])
        self.assertEqual({tp for _, _, tp in under}, {parent_tp})
        claim = [tp for _, p, tp in rec.calls() if p == "/api/workers/claim"]
        self.assertEqual(claim, [None])
        self.assertEqual(trace_id(self.c.get(got["child"]).get("trace_parent")), trace_id(TP))
        self.assertEqual(self.c.get(e["execution_id"])["status"], "succeeded")


if __name__ == "__main__":
    unittest.main()
