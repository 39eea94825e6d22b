"""Every problem code answers its typed error; safe requests are retried on
connection errors, 429 and 503, and the others are not."""

import http.server
import json
import os
import re
import threading
import unittest
import uuid
from typing import Any, List, Optional, Tuple

import latchserver
from latch_client import (ERRORS, Client, Conflict, DedupKeyReused, Forbidden, HeadersTooLarge, InternalError,
                          InvalidRequest, InvalidTicket, LatchError, LeaseLost, MethodNotAllowed, NotActive,
                          NotFailed, NotFound, NotTerminal, PayloadTooLarge, QuotaExceeded, RetryPolicy,
                          ScheduleLimit, ScheduleTooFrequent, SignalBufferFull, StorageExceeded, TenantDisabled, TenantExists, TooManyRequests,
                          TooManySteps, TransportError, Unauthorized, Unavailable, UnsupportedMediaType, Worker)

ALL_CODES = {"unauthorized", "invalid_ticket", "forbidden", "tenant_disabled", "not_found", "invalid_request",
             "payload_too_large", "unsupported_media_type", "quota_exceeded", "too_many_requests",
             "schedule_limit", "dedup_key_reused", "tenant_exists", "not_terminal", "lease_lost", "not_active",
             "not_failed", "too_many_steps", "journal_too_large", "signal_buffer_full", "method_not_allowed", "internal",
             "unavailable", "headers_too_large", "storage_exceeded", "schedule_too_frequent",
             "too_many_children", "too_many_subscriptions"}

MAX_BUFFERED_SIGNALS = 1000  # store.MaxBufferedSignals


class ProblemCodesTest(unittest.TestCase):
    """Each code the server answers, caused for real."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = latchserver.server()

    def setUp(self) -> None:
        self.c = self.srv.new_tenant("errors")
        self.c.retry_policy = RetryPolicy(max_retries=0)

    def check(self, cls: type, status: int, fn: Any) -> LatchError:
        with self.assertRaises(cls) as cm:
            fn()
        e = cm.exception
        self.assertIsInstance(e, LatchError)
        self.assertEqual((e.code, e.status), (cls.code_name, status))
        self.assertTrue(e.detail)
        self.assertEqual(e.problem["code"], e.code)
        return e

    def test_every_code_has_a_class(self) -> None:
        self.assertEqual(set(ERRORS), ALL_CODES)
        # ALL_CODES is the server's own list: the constants of api/problem.go
        with open(os.path.join(latchserver.REPO, "api", "problem.go")) as f:
            server_codes = set(re.findall(r'^\s*Code\w+\s+Code\s*=\s*"([a-z_]+)"', f.read(), re.M))
        self.assertEqual(server_codes, ALL_CODES)
        for code, cls in ERRORS.items():
            self.assertEqual(cls.code_name, code)
            self.assertTrue(issubclass(cls, LatchError))

    def test_invalid_request(self) -> None:
        e = self.check(InvalidRequest, 400, lambda: self.c.submit("", {}))
        self.assertTrue(e.detail.startswith("kind"), e.detail)

    def test_unauthorized(self) -> None:
        self.check(Unauthorized, 401, lambda: Client(self.srv.url, "lk_nope").get("x"))
        self.check(Unauthorized, 401, lambda: Client(self.srv.url, "").list_executions())

    def test_invalid_ticket(self) -> None:
        e = self.c.submit("job")
        anon = Client(self.srv.url, "")
        self.check(InvalidTicket, 401, lambda: list(anon.events(e["execution_id"], ticket="bogus")))

    def test_forbidden(self) -> None:
        self.check(Forbidden, 403, lambda: self.c.create_tenant("nope"))

    def test_tenant_disabled(self) -> None:
        self.srv.admin().update_tenant(self.c.tenant_name, disabled=True)
        self.check(TenantDisabled, 403, lambda: self.c.submit("job"))

    def test_not_found(self) -> None:
        self.check(NotFound, 404, lambda: self.c.get(str(uuid.uuid4())))
        self.check(NotFound, 404, lambda: self.c.request("GET", "/api/nothing-here"))

    def test_method_not_allowed(self) -> None:
        self.check(MethodNotAllowed, 405, lambda: self.c.request("PATCH", "/api/executions", {}))

    def test_conflicts(self) -> None:
        e = self.c.submit("job")
        self.assertTrue(issubclass(NotTerminal, Conflict))
        self.check(NotTerminal, 409, lambda: self.c.delete(e["execution_id"]))
        self.check(LeaseLost, 409, lambda: self.c.heartbeat(e["execution_id"], "not-the-token"))
        self.check(NotFailed, 409, lambda: self.c.retry(e["execution_id"]))
        self.c.cancel(e["execution_id"])
        self.check(NotActive, 409, lambda: self.c.signal(e["execution_id"], "go"))
        self.check(TenantExists, 409, lambda: self.srv.admin().create_tenant(self.c.tenant_name))

    def test_schedule_limit(self) -> None:
        for i in range(latchserver.MAX_SCHEDULES):
            self.c.put_schedule(f"s{i}", every="1h", kind="job")
        self.check(ScheduleLimit, 409, lambda: self.c.put_schedule("one-more", every="1h", kind="job"))
        self.c.put_schedule("s0", every="2h", kind="job")  # replacing one always works

    def test_schedule_too_frequent(self) -> None:
        self.check(ScheduleTooFrequent, 400, lambda: self.c.put_schedule("fast", every="30s", kind="job"))
        self.c.put_schedule("fast", every="1m", kind="job")

    def test_storage_exceeded(self) -> None:
        c = self.srv.new_tenant("errors", max_stored_bytes=50)
        c.retry_policy = RetryPolicy(max_retries=0)
        e = self.check(StorageExceeded, 409, lambda: c.submit("job", {"pad": "x" * 100}))
        self.assertIsInstance(e, Conflict)
        self.assertEqual(self.srv.admin().get_tenant(c.tenant_name)["stored_bytes"], 0)  # type: ignore[attr-defined]

    def test_signal_buffer_full(self) -> None:
        e = self.c.submit("job")  # no worker runs it: every signal is kept
        eid = e["execution_id"]
        for i in range(MAX_BUFFERED_SIGNALS):
            self.assertFalse(self.c.signal(eid, "item", i, idempotency_key=f"k{i}"))
        self.check(SignalBufferFull, 409, lambda: self.c.signal(eid, "item", "over"))
        self.check(SignalBufferFull, 409, lambda: self.c.signal(eid, "item", "over", idempotency_key="new"))
        self.assertIsInstance(SignalBufferFull("signal_buffer_full", 409), Conflict)
        # A repeat answers its first answer, full or not.
        self.assertFalse(self.c.signal(eid, "item", 0, idempotency_key="k0"))

    def test_payload_too_large(self) -> None:
        self.check(PayloadTooLarge, 413, lambda: self.c.submit("job", {"x": "y" * (1 << 20)}))

    def test_unsupported_media_type(self) -> None:
        self.check(UnsupportedMediaType, 415, lambda: self.c.request(
            "POST", "/api/executions", raw_body=b'{"kind":"job"}', headers={"Content-Type": "text/plain"}))

    def test_dedup_key_reused(self) -> None:
        self.c.submit("job", {"a": 1}, dedup_key="k")
        self.check(DedupKeyReused, 422, lambda: self.c.submit("job", {"a": 2}, dedup_key="k"))

    def test_quota_exceeded(self) -> None:
        c = self.srv.new_tenant("quota", max_inflight=1)
        c.retry_policy = RetryPolicy(max_retries=0)
        c.submit("job")
        e = self.check(QuotaExceeded, 429, lambda: c.submit("job"))
        self.assertEqual(e.retry_after, 5)

    def test_too_many_requests(self) -> None:
        e = self.c.submit("job")
        for _ in range(100):
            self.c.stream_ticket(e["execution_id"])
        err = self.check(TooManyRequests, 429, lambda: self.c.stream_ticket(e["execution_id"]))
        self.assertIsNotNone(err.retry_after)

    def test_headers_too_large(self) -> None:
        self.check(HeadersTooLarge, 431, lambda: self.c.request(
            "GET", "/api/executions", headers={"X-Big": "a" * (70 << 10)}))


class Fake:
    """An HTTP server that answers from a script: each entry (status,
    headers, body) or "close" (the connection closes without an answer)."""

    def __init__(self, script: List[Any]) -> None:
        self.script = list(script)
        self.requests: List[Tuple[str, str, dict, Optional[Any]]] = []
        fake = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def handle_one(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                fake.requests.append((self.command, self.path, dict(self.headers),
                                      json.loads(raw) if raw else None))
                step = fake.script.pop(0) if fake.script else (500, {}, b"")
                if step == "close":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                status, headers, body = step
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = handle_one

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def problem(code: str, status: int, retry_after: Optional[int] = None) -> Tuple[int, dict, bytes]:
    h = {"Content-Type": "application/problem+json"}
    if retry_after is not None:
        h["Retry-After"] = str(retry_after)
    body = json.dumps({"type": "https://latch.run/problems/" + code, "title": code, "status": status,
                       "detail": "from the fake", "code": code}).encode()
    return status, h, body


def ok(status: int, doc: Any) -> Tuple[int, dict, bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(doc).encode()


EXEC = {"execution_id": "e1", "status": "queued", "deduplicated": False}


class RetryTest(unittest.TestCase):
    def client(self, fake: Fake, retries: int = 4) -> Tuple[Client, List[float]]:
        slept: List[float] = []
        c = Client(fake.url, "lk_x", retry=RetryPolicy(max_retries=retries, base=0.2, cap=5, sleep=slept.append))
        return c, slept

    def fake(self, script: List[Any]) -> Fake:
        f = Fake(script)
        self.addCleanup(f.close)
        return f

    def test_internal_and_unavailable(self) -> None:
        f = self.fake([problem("internal", 500), problem("unavailable", 503, 1)])
        c, _ = self.client(f, retries=0)
        with self.assertRaises(InternalError) as cm:
            c.get("e1")
        self.assertEqual((cm.exception.code, cm.exception.status), ("internal", 500))
        with self.assertRaises(Unavailable) as cm2:
            c.get("e1")
        self.assertEqual(cm2.exception.retry_after, 1)

    def test_unknown_code_and_non_json(self) -> None:
        f = self.fake([problem("brand_new", 418), (502, {"Content-Type": "text/html"}, b"<h1>bad gateway</h1>")])
        c, _ = self.client(f, retries=0)
        with self.assertRaises(LatchError) as cm:
            c.get("e1")
        self.assertIs(type(cm.exception), LatchError)
        self.assertEqual((cm.exception.code, cm.exception.status), ("brand_new", 418))
        with self.assertRaises(LatchError) as cm:
            c.get("e1")
        self.assertEqual((cm.exception.code, cm.exception.status), ("http_502", 502))
        self.assertIn("bad gateway", cm.exception.detail)

    def test_submit_retried_with_one_dedup_key(self) -> None:
        f = self.fake(["close", problem("unavailable", 503), ok(201, EXEC)])
        c, slept = self.client(f)
        self.assertEqual(c.submit("job", {"a": 1})["execution_id"], "e1")
        self.assertEqual(len(f.requests), 3)
        keys = {r[3]["dedup_key"] for r in f.requests}
        self.assertEqual(len(keys), 1, "every retry of a submit carries the same dedup key")
        self.assertEqual(len(slept), 2)
        self.assertTrue(0.1 <= slept[0] <= 0.2 and 0.2 <= slept[1] <= 0.4, slept)  # backoff with jitter

    def test_idempotency_key_kept_across_retries(self) -> None:
        f = self.fake([problem("unavailable", 503), ok(201, EXEC)])
        c, _ = self.client(f)
        c.submit("job", idempotency_key="ik")
        self.assertEqual([r[2].get("Idempotency-Key") for r in f.requests], ["ik", "ik"])
        self.assertTrue(all("dedup_key" not in r[3] for r in f.requests))

    def test_retry_after_honoured(self) -> None:
        f = self.fake([problem("quota_exceeded", 429, 3), problem("too_many_requests", 429, 1), ok(200, EXEC)])
        c, slept = self.client(f)
        c.get("e1", wait_seconds=5)
        self.assertEqual(slept, [3.0, 1.0])

    def test_gives_up_after_max_retries(self) -> None:
        f = self.fake([problem("unavailable", 503)] * 3)
        c, slept = self.client(f, retries=2)
        with self.assertRaises(Unavailable):
            c.list_executions()
        self.assertEqual((len(f.requests), len(slept)), (3, 2))

    def test_connection_refused(self) -> None:
        c = Client(f"http://127.0.0.1:{latchserver.free_port()}", "k",
                   retry=RetryPolicy(max_retries=3, sleep=lambda s: None))
        with self.assertRaises(TransportError) as cm:
            c.get("e1")
        self.assertEqual((cm.exception.code, cm.exception.status), ("transport_error", 0))

    def test_unsafe_requests_not_retried(self) -> None:
        f = self.fake([problem("unavailable", 503), "close", problem("unavailable", 503), "close", ok(200, {})])
        c, slept = self.client(f)
        with self.assertRaises(Unavailable):
            c.retry("e1")
        with self.assertRaises(TransportError):
            c.delete("e1")
        with self.assertRaises(Unavailable):
            c.signal("e1", "go", 1)  # no idempotency key
        with self.assertRaises(TransportError):
            c.claim("w", wait_seconds=1)
        self.assertEqual((len(f.requests), slept), (4, []))

    def test_fenced_worker_calls_retried(self) -> None:
        f = self.fake(["close", ok(200, EXEC), problem("unavailable", 503), ok(200, EXEC),
                       "close", ok(200, EXEC), "close", ok(200, {"lease_expires_at": "x", "cancel_requested": False})])
        c, slept = self.client(f)
        c.complete("e1", "tok", {"r": 1})
        c.fail("e1", "tok", "boom", retry=False)
        c.suspend("e1", "tok", "w", signal="go")
        c.heartbeat("e1", "tok")
        self.assertEqual([r[1].rsplit("/", 1)[1] for r in f.requests],
                         ["complete"] * 2 + ["fail"] * 2 + ["suspend"] * 2 + ["heartbeat"] * 2)
        self.assertEqual(len({r[3]["lease_token"] for r in f.requests}), 1)
        self.assertEqual(len(slept), 4)

    def test_signal_with_key_retried(self) -> None:
        f = self.fake([problem("unavailable", 503), ok(202, {"delivered": True})])
        c, _ = self.client(f)
        self.assertTrue(c.signal("e1", "go", {"x": 1}, idempotency_key="s1"))
        self.assertEqual([r[2].get("Idempotency-Key") for r in f.requests], ["s1", "s1"])

    def test_trigger_carries_a_key(self) -> None:
        f = self.fake(["close", ok(201, EXEC)])
        c, _ = self.client(f)
        c.trigger_schedule("nightly")
        keys = [r[2].get("Idempotency-Key") for r in f.requests]
        self.assertEqual(len(keys), 2)
        self.assertIsNotNone(keys[0])
        self.assertEqual(keys[0], keys[1])



class PagingTest(unittest.TestCase):
    """A page may hold fewer items than the limit, even none, while its
    next_cursor is set (the server bounds the executions one request
    examines): the iterators follow the cursor, not the page's size."""

    def test_empty_page_with_a_cursor_is_followed(self) -> None:
        f = Fake([ok(200, {"items": [{"id": "e3"}], "next_cursor": "c1"}),
                  ok(200, {"items": [], "next_cursor": "c2"}),
                  ok(200, {"items": [{"id": "e1"}], "next_cursor": None})])
        self.addCleanup(f.close)
        c = Client(f.url, "lk_x")
        got = [e["id"] for e in c.iter_executions(kind="rare", limit=2)]
        self.assertEqual(got, ["e3", "e1"])
        cursors = [re.search(r"[?&]cursor=([^&]*)", r[1]) for r in f.requests]
        self.assertEqual([m.group(1) if m else None for m in cursors], [None, "c1", "c2"])


if __name__ == "__main__":
    unittest.main()


class TooManyStepsTest(unittest.TestCase):
    """A step past the journal's bound raises TooManySteps in the handler, and
    the Worker fails the attempt without a retry (no later attempt could record
    it), instead of burning the execution's attempts."""

    def test_step_past_the_bound_fails_without_retry(self) -> None:
        fake = Fake([problem("too_many_steps", 409), ok(200, {"execution_id": "e1", "status": "failed"})])
        self.addCleanup(fake.close)
        c = Client(fake.url, "lk_x", retry=RetryPolicy(max_retries=3, sleep=lambda s: None))
        seen: List[BaseException] = []

        def flow(job: Any) -> Any:
            try:
                return job.step("one more", lambda: 1)
            except LatchError as e:
                seen.append(e)
                raise

        w = Worker(c, {"flow": flow})
        lease = {"execution_id": "e1", "lease_token": "t1", "kind": "flow", "steps": {}, "attempt": 1,
                 "max_attempts": 5}
        self.assertEqual(w.run_lease(lease), "failed")
        self.assertEqual(len(seen), 1)
        self.assertIsInstance(seen[0], TooManySteps)
        self.assertIsInstance(seen[0], Conflict)
        self.assertEqual([(m, p) for m, p, _, _ in fake.requests],
                         [("POST", "/api/executions/e1/steps"), ("POST", "/api/executions/e1/fail")])
        body = fake.requests[1][3]
        self.assertIs(body["retry"], False)
        self.assertIn("too_many_steps", body["error"])
