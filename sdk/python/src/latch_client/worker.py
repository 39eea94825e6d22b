"""A worker over latch's HTTP API: claims, heartbeats, completes and fails,
and runs flows (steps, sleeps, signal waits, children) with the journal its
lease carries."""

import contextvars
import datetime
import json
import logging
import math
import os
import signal as _signal
import socket
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from .client import Client, format_time
from .errors import JournalTooLarge, LatchError, LeaseLost, StorageExceeded, TooManyChildren, TooManySteps
from .tracing import reset_traceparent, set_traceparent, valid_traceparent

log = logging.getLogger("latch_client")

Handler = Callable[["Job"], Any]


class Suspended(BaseException):
    """Raised by Job.sleep, Job.wait_signal, Job.wait_event and Job.wait_children (so by
    spawn_and_wait and map) when the flow suspends: the attempt ends there,
    without complete or fail. It derives from BaseException so that a
    handler's ``except Exception`` lets it through; the worker catches it."""

    def __init__(self, execution: Dict[str, Any]) -> None:
        super().__init__(f"suspended ({execution.get('status')})")
        self.execution = execution


class WaitTimedOut(Exception):
    """Job.wait_signal, Job.wait_event: the wait's timeout passed before the signal or event came."""


class ChildrenTimedOut(WaitTimedOut):
    """Job.wait_children: the wait's timeout passed before enough children
    ended. children holds every child of the spawn as it was then (see
    Job.wait_children)."""

    def __init__(self, message: str, children: List[Dict[str, Any]]) -> None:
        super().__init__(message)
        self.children = children


class JobCancelled(Exception):
    """Job.raise_if_cancelled: a cancel was requested (or the lease was lost)."""


class Fail(Exception):
    """Raise it from a handler to fail the attempt as you choose: retry False
    fails the execution for good, retry_after_seconds sets the delay of the
    next attempt (else the server's exponential backoff)."""

    def __init__(self, message: str, *, retry: bool = True, retry_after_seconds: Optional[int] = None) -> None:
        super().__init__(message)
        self.retry = retry
        self.retry_after_seconds = retry_after_seconds


TIMED_OUT = {"timed_out": True}


class Job:
    """One leased execution, handed to a handler.

    execution_id, kind, payload, attempt, max_attempts, tenant, queue,
    timeout_seconds and lease_token are the lease's. cancelled is an Event
    set when a heartbeat answer says a cancel was requested, or the lease was
    lost (lease_lost is set then too): a handler that sees it should stop.
    steps is the flow's journal: the lease's, plus what this run records. A
    lease carries the journal's first steps only when it is large
    (steps_complete false): then the first name not found in steps makes the
    job read the rest (Client.steps) before it runs anything under it.

    traceparent is the execution's W3C traceparent (the trace its submit
    continued), None when it has none. The worker runs the handler with it
    current (see use_traceparent): every call made under the lease, the
    worker's and the handler's own through any Client of its thread, sends
    it, so a submit from the handler joins the run's trace. A handler that
    traces its own work makes its span a child of it.
    """

    def __init__(self, client: Client, lease: Mapping[str, Any]) -> None:
        self.client = client
        self.lease = dict(lease)
        self.execution_id: str = lease["execution_id"]
        self.lease_token: str = lease["lease_token"]
        self.kind: str = lease["kind"]
        self.payload: Any = lease.get("payload")
        self.attempt: int = lease.get("attempt", 0)
        self.max_attempts: int = lease.get("max_attempts", 0)
        self.tenant: Optional[str] = lease.get("tenant")
        self.queue: Optional[str] = lease.get("queue")
        self.timeout_seconds: Optional[int] = lease.get("timeout_seconds")
        tp = lease.get("trace_parent")
        self.traceparent: Optional[str] = tp if isinstance(tp, str) and valid_traceparent(tp) else None
        self.steps: Dict[str, Any] = dict(lease.get("steps") or {})
        self._steps_complete: bool = lease.get("steps_complete", True) is not False
        self.cancelled = threading.Event()
        self.lease_lost = threading.Event()

    @property
    def is_cancelled(self) -> bool:
        return self.cancelled.is_set()

    def raise_if_cancelled(self) -> None:
        """Raises JobCancelled once a cancel was requested or the lease lost."""
        if self.cancelled.is_set():
            raise JobCancelled("lease lost" if self.lease_lost.is_set() else "cancel requested")

    # ------------------------------------------------------------- flows

    def _recorded(self, name: str) -> bool:
        """Whether the journal holds name, reading the rest of a journal the
        lease carried in part the first time a name is not in steps."""
        if name in self.steps or self._steps_complete:
            return name in self.steps
        for st in self.client.steps(self.execution_id):
            self.steps.setdefault(st["name"], st["result"])
        self._steps_complete = True
        return name in self.steps

    def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """Runs fn once for the flow: the recorded result when the journal has
        name, else fn's result, recorded (the first record wins, and that is
        what every run gets). fn's result must be JSON. A new name when the
        journal holds as many steps as it may raises TooManySteps: let it
        through, and the attempt fails without a retry."""
        if self._recorded(name):
            return self.steps[name]
        started = datetime.datetime.now(datetime.timezone.utc)
        result = fn()
        rec = self.client.record_step(self.execution_id, self.lease_token, name, result, started_at=started)
        self.steps[name] = rec["result"]
        return rec["result"]

    def sleep(self, name: str, seconds: Optional[float] = None, *,
              until: Optional[Union[str, datetime.datetime]] = None) -> None:
        """Sleeps until a time (or for seconds from the first run that got
        here) under the step name: the first time, the execution is suspended
        and this run ends (Suspended is raised); the run that resumes it
        returns at once."""
        if self._recorded(name):
            return
        if (seconds is None) == (until is None):
            raise ValueError("sleep: give seconds or until, not both")
        if until is None:
            until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=float(seconds or 0))
        e = self.client.suspend(self.execution_id, self.lease_token, name, until=format_time(until))
        raise Suspended(e)

    def wait_signal(self, name: str, signal: str, timeout: Optional[float] = None) -> Any:
        """Waits for the signal under the step name and returns its data: the
        first time, the execution is suspended and this run ends (Suspended
        is raised); the run that resumes it gets the data, or WaitTimedOut
        when timeout seconds passed first (None: no timeout)."""
        if self._recorded(name):
            v = self.steps[name]
            if v == TIMED_OUT:
                raise WaitTimedOut(f"{name}: no signal {signal!r} within the timeout")
            return v
        t = None if timeout is None else max(1, int(math.ceil(timeout)))
        e = self.client.suspend(self.execution_id, self.lease_token, name, signal=signal, timeout_seconds=t)
        raise Suspended(e)

    def wait_event(self, name: str, event: str, *, key: Optional[str] = None,
                   since: Optional[Union[str, datetime.datetime]] = None, timeout: Optional[float] = None) -> Any:
        """Waits under the step name for an event its tenant publishes
        (Client.publish) and returns it: {"event_id", "name", "key", "data",
        "published_at"}. It matches an event of that name (and key, when
        given) published at or after since (default: the execution's
        creation) that this execution has not consumed in an earlier wait:
        the oldest retained one is consumed at once; otherwise the execution
        is suspended and this run ends (Suspended is raised) until one is
        published. WaitTimedOut when timeout seconds passed first (None: no
        timeout)."""
        if self._recorded(name):
            v = self.steps[name]
            if v == TIMED_OUT:
                raise WaitTimedOut(f"{name}: no event {event!r} within the timeout")
            return v
        t = None if timeout is None else max(1, int(math.ceil(timeout)))
        e = self.client.suspend(self.execution_id, self.lease_token, name, event=event, key=key, since=since,
                                timeout_seconds=t)
        raise Suspended(e)

    # ---------------------------------------------------------- children

    def spawn(self, name: str, items: Sequence[Mapping[str, Any]], *,
              on_parent_end: Optional[str] = None) -> List[str]:
        """Admits child executions under the flow step name, all of them or
        none, and returns their ids in the order given. Each item is a submit
        body without dedup_key ({"kind", "payload", "queue", "priority",
        ...}): an ordinary execution of the tenant that knows its parent
        (parent_id, parent_step). When the journal has name (a replay after
        a crash, a retry or a resume), nothing is admitted and the first
        spawn's ids are returned.

        on_parent_end: "cancel" (default: the parent's end cancels its live
        children in the same operation) or "abandon" (they outlive it).
        QuotaExceeded when the tenant's quota has no room for them all
        (nothing admitted: let it through and the attempt is retried later);
        TooManyChildren past the bounds fails the execution for good."""
        if self._recorded(name):
            return list(self.steps[name]["children"])
        ans = self.client.spawn_children(self.execution_id, self.lease_token, name, items,
                                         on_parent_end=on_parent_end)
        ids = [c["execution_id"] for c in ans["children"]]
        self.steps[name] = {"children": ids}
        return ids

    def wait_children(self, name: str, spawn: str, *, count: Optional[int] = None,
                      timeout: Optional[float] = None) -> List[Dict[str, Any]]:
        """Waits, as the flow step name, for the children of the spawn step
        spawn: until count of them (None: all) have ended, or timeout seconds
        passed. Returns every child of the spawn as it was when the wait
        ended, in spawn order: {"execution_id", "status", "result",
        "error"} each (status "deleted" for a child deleted meanwhile). A
        child that failed does not fail the wait: its status and error say
        so, and the flow decides. Children that ended before the wait count:
        when enough have, it does not suspend. Until then the execution is
        suspended and this run ends (Suspended is raised). When the timeout
        ended the wait, ChildrenTimedOut (a WaitTimedOut) is raised, holding
        the children as they were."""
        if not self._recorded(name):
            t = None if timeout is None else max(1, int(math.ceil(timeout)))
            e = self.client.suspend(self.execution_id, self.lease_token, name, children=spawn, count=count,
                                    timeout_seconds=t)
            raise Suspended(e)
        v = self.steps[name] or {}
        children = list(v.get("children") or [])
        if v.get("timed_out"):
            raise ChildrenTimedOut(f"{name}: the children of {spawn!r} had not ended within the timeout", children)
        return children

    def spawn_and_wait(self, name: str, items: Sequence[Mapping[str, Any]], *,
                       on_parent_end: Optional[str] = None) -> List[Dict[str, Any]]:
        """spawn under the step name, then wait_children for all of them
        under the step name + "/wait": their outcomes in the order given, once
        all have ended (Suspended is raised until then)."""
        self.spawn(name, items, on_parent_end=on_parent_end)
        return self.wait_children(name + "/wait", name)

    def map(self, name: str, kind: str, items: Sequence[Any], *, on_parent_end: Optional[str] = None,
            **child: Any) -> List[Dict[str, Any]]:
        """Runs one child execution of kind per item, its payload the item,
        in parallel, and returns their outcomes in item order once all have
        ended: spawn_and_wait under the step name. child: submit fields
        every child gets (queue, priority, max_attempts, timeout_seconds,
        ...). Suspended is raised until they have all ended.

            outs = job.map("ship", "ship-parcel", parcels)
            failed = [o for o in outs if o["status"] != "succeeded"]
        """
        return self.spawn_and_wait(name, [dict(child, kind=kind, payload=it) for it in items],
                                   on_parent_end=on_parent_end)


class Worker:
    """Runs handlers for the kinds it is given, over HTTP.

    handlers: kind → fn(job) returning the result (JSON). An exception fails
    the attempt (retried while attempts remain; raise Fail to choose),
    Suspended (from job.sleep / job.wait_signal) ends it without either.

    concurrency: threads, each claiming one execution at a time with a long
    poll of wait_seconds. lease_seconds: the lease asked for; a heartbeat
    thread per job renews it every third of it.

    run() blocks until stop() or, when it installed them (the main thread),
    SIGTERM or SIGINT: then no thread claims again, running jobs finish and
    run() returns. stop_event is set from then on.
    """

    def __init__(self, client: Client, handlers: Optional[Mapping[str, Handler]] = None, *,
                 worker_id: Optional[str] = None, queues: Optional[Sequence[str]] = None,
                 concurrency: int = 1, lease_seconds: int = 30, wait_seconds: int = 5) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if not 1 <= lease_seconds <= 3600:
            raise ValueError("lease_seconds must be 1–3600")
        if not 0 <= wait_seconds <= 30:
            raise ValueError("wait_seconds must be 0–30")
        self.client = client
        self.handlers: Dict[str, Handler] = dict(handlers or {})
        self.worker_id = worker_id or f"py-{socket.gethostname()}-{os.getpid()}"
        self.queues = list(queues) if queues else None
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.wait_seconds = wait_seconds
        self.stop_event = threading.Event()

    def handle(self, kind: str) -> Callable[[Handler], Handler]:
        """Decorator: registers fn as the handler of kind."""
        def register(fn: Handler) -> Handler:
            self.handlers[kind] = fn
            return fn
        return register

    @property
    def stopping(self) -> bool:
        return self.stop_event.is_set()

    def stop(self) -> None:
        """Stops claiming; run() returns once the running jobs have finished."""
        self.stop_event.set()

    def run(self, *, install_signal_handlers: bool = True) -> None:
        """Claims and runs until stopped (see the class)."""
        if not self.handlers:
            raise ValueError("no handlers")
        restore: Dict[int, Any] = {}
        if install_signal_handlers and threading.current_thread() is threading.main_thread():
            for sig in (_signal.SIGTERM, _signal.SIGINT):
                restore[sig] = _signal.signal(sig, lambda signum, frame: self.stop())
        try:
            threads = [threading.Thread(target=self._loop, args=(i,), name=f"latch-worker-{i}", daemon=True)
                       for i in range(self.concurrency)]
            for t in threads:
                t.start()
            for t in threads:
                # join with a timeout so the main thread still runs signal handlers
                while t.is_alive():
                    t.join(0.2)
        finally:
            for sig, h in restore.items():
                _signal.signal(sig, h)

    def run_once(self, *, max: int = 1, wait_seconds: Optional[int] = None) -> int:
        """One claim (up to max leases) and the runs of what it got, in this
        thread; answers how many leases it ran."""
        leases = self.claim(max=max, wait_seconds=wait_seconds)
        for lease in leases:
            self.run_lease(lease)
        return len(leases)

    def claim(self, *, max: int = 1, wait_seconds: Optional[int] = None) -> List[Dict[str, Any]]:
        return self.client.claim(self.worker_id, kinds=sorted(self.handlers), queues=self.queues, max=max,
                                 lease_seconds=self.lease_seconds,
                                 wait_seconds=self.wait_seconds if wait_seconds is None else wait_seconds)

    def _loop(self, i: int) -> None:
        pause = 0.0
        while not self.stop_event.is_set():
            if pause:
                self.stop_event.wait(pause)
                if self.stop_event.is_set():
                    return
            try:
                leases = self.claim()
                pause = 0.0
            except LatchError as e:
                # The server is away or refused: back off, up to 5 s.
                pause = min(5.0, (pause or 0.1) * 2) if e.retry_after is None else min(30.0, e.retry_after)
                log.warning("latch worker %s: claim: %s", self.worker_id, e)
                continue
            except Exception:  # an answer this client cannot read: keep the thread, back off
                pause = min(5.0, (pause or 0.1) * 2)
                log.exception("latch worker %s: claim", self.worker_id)
                continue
            for lease in leases:
                try:
                    self.run_lease(lease)
                except Exception:  # the lease expires and runs again; this thread goes on
                    log.exception("latch worker %s: running %s", self.worker_id, lease.get("execution_id"))

    def run_lease(self, lease: Mapping[str, Any]) -> str:
        """Runs one lease with its handler, heartbeating meanwhile; answers
        how it ended: "completed", "failed", "suspended", "lease_lost" or
        "unrecorded" (the outcome could not be written; the lease expires and
        the server runs it again)."""
        job = Job(self.client, lease)
        token = set_traceparent(job.traceparent)  # every call under the lease sends it
        done = threading.Event()
        ctx = contextvars.copy_context()
        hb = threading.Thread(target=ctx.run, args=(self._heartbeat, job, done),
                              name=f"latch-hb-{job.execution_id}", daemon=True)
        hb.start()
        try:
            return self._run(job)
        finally:
            done.set()
            hb.join()
            reset_traceparent(token)

    def _heartbeat(self, job: Job, done: threading.Event) -> None:
        interval = self.lease_seconds / 3.0
        while not done.wait(interval):
            try:
                ans = self.client.heartbeat(job.execution_id, job.lease_token, lease_seconds=self.lease_seconds)
            except LeaseLost:
                job.lease_lost.set()
                job.cancelled.set()
                return
            except LatchError as e:
                log.warning("latch worker %s: heartbeat of %s: %s", self.worker_id, job.execution_id, e)
                continue
            if ans.get("cancel_requested"):
                job.cancelled.set()

    def _run(self, job: Job) -> str:
        handler = self.handlers.get(job.kind)
        c, eid, tok = self.client, job.execution_id, job.lease_token
        try:
            try:
                if handler is None:
                    raise Fail(f"this worker has no handler for kind {job.kind!r}", retry=True)
                result = handler(job)
            except Suspended:
                return "suspended"
            except LeaseLost:
                raise
            except Fail as f:
                if job.lease_lost.is_set():
                    return "lease_lost"
                c.fail(eid, tok, str(f), retry=f.retry, retry_after_seconds=f.retry_after_seconds)
                return "failed"
            except JobCancelled as e:
                if job.lease_lost.is_set():
                    return "lease_lost"
                c.fail(eid, tok, str(e), retry=False)
                return "failed"
            except (TooManySteps, JournalTooLarge, TooManyChildren) as e:  # bounds never shrink: no attempt could go on
                if job.lease_lost.is_set():
                    return "lease_lost"
                c.fail(eid, tok, f"{type(e).__name__}: {e}", retry=False)
                return "failed"
            except Exception as e:  # the handler's error fails the attempt
                if job.lease_lost.is_set():
                    return "lease_lost"
                c.fail(eid, tok, f"{type(e).__name__}: {e}"[:65536])
                return "failed"
            if job.lease_lost.is_set():
                return "lease_lost"
            try:
                json.dumps(result)
            except (TypeError, ValueError) as e:
                c.fail(eid, tok, f"the result is not JSON: {e}", retry=False)
                return "failed"
            try:
                c.complete(eid, tok, result)
            except StorageExceeded as e:  # the work is done; running it again would only redo it
                c.fail(eid, tok, f"the result was not stored: StorageExceeded: {e}", retry=False)
                return "failed"
            return "completed"
        except LeaseLost:
            log.info("latch worker %s: lease of %s lost; attempt dropped", self.worker_id, eid)
            return "lease_lost"
        except LatchError as e:
            log.warning("latch worker %s: %s: outcome not recorded: %s", self.worker_id, eid, e)
            return "unrecorded"
