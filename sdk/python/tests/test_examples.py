"""The examples of README.md run as written: each is a file of examples/,
shown verbatim in the README, and run here against the test server."""

import os
import re
import signal
import subprocess
import sys
import http.server
import threading
import unittest
from typing import Dict, Optional

import latchserver
from latch_client import Worker

EXAMPLES = os.path.join(latchserver.SDK, "examples")


def run_example(srv: latchserver.Server, key: str, name: str, extra_env: Optional[Dict[str, str]] = None,
                **kw) -> subprocess.Popen:
    env = dict(os.environ, LATCH_URL=srv.url, LATCH_KEY=key, PYTHONPATH=latchserver.SRC, **(extra_env or {}))
    return subprocess.Popen([sys.executable, os.path.join(EXAMPLES, name)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, **kw)


class ExamplesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = latchserver.server()

    def test_readme_shows_the_examples(self) -> None:
        with open(os.path.join(latchserver.SDK, "README.md")) as f:
            blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
        for name in ("client_example.py", "worker_example.py", "flow_example.py", "children_example.py",
                     "trace_example.py", "trace_worker_example.py"):
            with open(os.path.join(EXAMPLES, name)) as f:
                self.assertIn(f.read(), blocks, f"README.md does not show examples/{name} as it is")

    def test_client_example(self) -> None:
        c = self.srv.new_tenant("example")
        p = run_example(self.srv, c.key, "client_example.py")
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.splitlines(), ["True True", "dedup_key_reused 422", "True queued", "deleted"])

    def test_worker_example(self) -> None:
        c = self.srv.new_tenant("example")
        good = c.submit("resize", {"width": 640})
        bad = c.submit("resize", {"width": "wide"})
        p = run_example(self.srv, c.key, "worker_example.py")
        try:
            self.assertEqual(c.wait(good["execution_id"], timeout=20)["result"], {"width": 320})
            b = c.wait(bad["execution_id"], timeout=20)
            self.assertEqual((b["status"], b["error"]), ("failed", "payload.width must be an integer"))
            p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual((p.returncode, out), (0, "worker stopped\n"), err)

    def test_flow_example(self) -> None:
        c = self.srv.new_tenant("example")
        p = run_example(self.srv, c.key, "flow_example.py")
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.splitlines(), [
            "suspended",
            "succeeded {'seat': {'order': 7, 'seat': '12A'}, 'shipped': {'by': 'ann'}}",
            "['reserve', 'approval', 'ship']",
        ])

    def test_children_example(self) -> None:
        c = self.srv.new_tenant("example")
        p = run_example(self.srv, c.key, "children_example.py")
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.splitlines(), [
            "children:resize",
            "succeeded {'errors': ['width must be positive'], 'resized': [{'width': 320}, {'width': 512}]}",
            "['succeeded', 'failed', 'succeeded']",
        ])

    def test_events_example(self) -> None:
        c = self.srv.new_tenant("example")
        p = run_example(self.srv, c.key, "events_example.py")
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.splitlines(), ["suspended", "1", "succeeded {'paid': {'amount': 120}}"])

    def test_trace_example(self) -> None:
        # The example submits in the caller's trace; a worker here runs it
        # and sees that trace as job.traceparent.
        c = self.srv.new_tenant("example")
        tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        seen = []
        w = Worker(c, {"call-partner": lambda job: seen.append(job.traceparent) or {"partner": 202}}, wait_seconds=1)
        t = threading.Thread(target=w.run, kwargs={"install_signal_handlers": False}, daemon=True)
        t.start()
        try:
            p = run_example(self.srv, c.key, "trace_example.py", {"TRACEPARENT": tp})
            out, err = p.communicate(timeout=60)
        finally:
            w.stop()
            t.join(10)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.splitlines(), ["True", "succeeded {'partner': 202}"])
        self.assertEqual([x[3:35] if x else x for x in seen], [tp[3:35]])

    def test_trace_worker_example(self) -> None:
        # The example's worker passes the run's traceparent on to a partner,
        # here a server that records the header it got.
        got = []

        class Partner(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                got.append(self.headers.get("traceparent"))
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a) -> None:
                pass

        partner = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Partner)
        threading.Thread(target=partner.serve_forever, daemon=True).start()
        c = self.srv.new_tenant("example")
        tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        p = run_example(self.srv, c.key, "trace_worker_example.py",
                        {"PARTNER_URL": f"http://127.0.0.1:{partner.server_address[1]}/orders"})
        try:
            e = c.submit("call-partner", {"order": 42}, traceparent=tp)
            done = c.wait(e["execution_id"], timeout=30)
            p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=30)
        finally:
            partner.shutdown()
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual((done["status"], done["result"]), ("succeeded", {"partner": 202}))
        self.assertEqual(got, [done["trace_parent"]])
        self.assertEqual(got[0][3:35], tp[3:35])


if __name__ == "__main__":
    unittest.main()
