"""A real `latch serve` for the tests: one per test process, on a temp SQLite file.

The binary is $LATCH_BIN when set, else built once with `go build` from the
repository root. The server listens on a free port of 127.0.0.1, has no
in-process workers (the tests' kinds are run by the SDK's worker), and is
stopped when the test process exits.
"""

import atexit
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
SDK = os.path.dirname(HERE)
SRC = os.path.join(SDK, "src")
REPO = os.path.dirname(os.path.dirname(SDK))
sys.path.insert(0, SRC)  # the tests run the package from this tree

from latch_client import Client  # noqa: E402

ADMIN_KEY = "lk_python-sdk-admin-key-for-the-tests-only"
MAX_SCHEDULES = 3  # small, so schedule_limit is quick to reach
MIN_SCHEDULE_INTERVAL = "1m"  # so that every "30s" is schedule_too_frequent


class Server:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="latch-pysdk-")
        self.bin = os.environ.get("LATCH_BIN") or self._build()
        self.logs = open(os.path.join(self.dir, "serve.log"), "w+b")
        self.proc: Optional[subprocess.Popen] = None
        self.url = ""
        self._start()

    def _build(self) -> str:
        out = os.path.join(self.dir, "latch")
        res = subprocess.run(["go", "build", "-o", out, "./cmd/latch"], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if res.returncode != 0:
            raise RuntimeError("go build ./cmd/latch failed:\n" + res.stdout.decode(errors="replace"))
        return out

    def _start(self) -> None:
        for _ in range(3):
            port = free_port()
            self.url = f"http://127.0.0.1:{port}"
            env = dict(os.environ, LATCH_ADMIN_KEY=ADMIN_KEY)
            self.proc = subprocess.Popen(
                [self.bin, "serve", "--addr", f"127.0.0.1:{port}",
                 "--store", "sqlite:" + os.path.join(self.dir, "latch.db"),
                 "--workers", "0", "--rescue-interval", "200ms", "--shutdown-grace", "1s",
                 "--max-schedules", str(MAX_SCHEDULES), "--min-schedule-interval", MIN_SCHEDULE_INTERVAL,
                 "--console=false"],
                env=env, stdout=self.logs, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    with urllib.request.urlopen(self.url + "/readyz", timeout=1) as r:
                        if r.status == 200:
                            return
                except OSError:
                    pass
                time.sleep(0.05)  # polling a process we cannot be notified by
            if self.proc.poll() is None:
                self.stop()
                raise RuntimeError("latch serve not ready after 30 s:\n" + self.log_text())
            if b"address already in use" not in self.log_bytes():
                raise RuntimeError("latch serve exited at start:\n" + self.log_text())
        raise RuntimeError("no free port for latch serve")

    def log_bytes(self) -> bytes:
        self.logs.flush()
        with open(self.logs.name, "rb") as f:
            return f.read()

    def log_text(self) -> str:
        return self.log_bytes().decode(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logs.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def admin(self) -> Client:
        return Client(self.url, ADMIN_KEY)

    def new_tenant(self, prefix: str = "t", **opts) -> "Client":
        """A new tenant with a unique name; a client with its key (.tenant_name set)."""
        name = f"{prefix}-{os.getpid()}-{next(_seq)}"
        t = self.admin().create_tenant(name, **opts)
        c = Client(self.url, t["api_key"])
        c.tenant_name = name  # type: ignore[attr-defined]
        return c


_seq = itertools.count(1)
_server: Optional[Server] = None
_lock = threading.Lock()


def server() -> Server:
    """The test process's server, started on first use."""
    global _server
    with _lock:
        if _server is None:
            _server = Server()
            atexit.register(_server.stop)
        return _server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    # Linux: the server gets SIGKILL when the test process dies unexpectedly.
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
