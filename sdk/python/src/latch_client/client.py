"""The client of latch's HTTP API (docs/api.md), standard library only."""

import datetime
import http.client
import json
import random
import re
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import LatchError, TransportError, Unfinished, error_for
from .tracing import check_traceparent, current_traceparent

from .types import (APIKey, APIKeyInfo, Attempt, Execution, HeartbeatResponse, Lease, RateLimit, Schedule,
                    PublishResponse, SignalResponse, Spawned, Step, StepRecorded, StreamTicket, SubmitResponse,
                    Subscription, Tenant, TenantCreated)

JSON = Any

_NO_BODY = object()

TimeLike = Union[str, datetime.datetime]


def format_time(t: TimeLike) -> str:
    """RFC 3339 in UTC; a naive datetime is taken as UTC."""
    if isinstance(t, str):
        return t
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return t.astimezone(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


_FRACTION = re.compile(r"\.(\d+)")


def parse_time(s: str) -> datetime.datetime:
    """An RFC 3339 time of the API as an aware datetime (nanoseconds cut to
    microseconds, which datetime.fromisoformat before Python 3.11 refuses)."""
    s = s.strip().replace("Z", "+00:00").replace("z", "+00:00")
    s = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], s, count=1)
    return datetime.datetime.fromisoformat(s)


def new_key() -> str:
    """A fresh dedup or idempotency key (a random UUID)."""
    return str(uuid.uuid4())


@dataclass
class Page:
    """One page of a listing: its items and the cursor of the next page (None at the end)."""

    items: List[Dict[str, Any]]
    next_cursor: Optional[str]


@dataclass
class BatchItem:
    """One slot of a batch answer: status 201 (new), 200 (deduplicated) or an error."""

    status: int
    execution: Optional[Execution]
    error: Optional[LatchError]


@dataclass
class RetryPolicy:
    """How safe requests are retried: on connection errors, 429 and 503.

    Waits grow from `base` seconds, doubling per try up to `cap`, each a random
    point in the upper half (jitter); a Retry-After header is honoured, up to
    `max_retry_after` seconds. `max_retries` 0 turns retries off.
    """

    max_retries: int = 4
    base: float = 0.2
    cap: float = 5.0
    max_retry_after: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def backoff(self, attempt: int) -> float:
        d = min(self.cap, self.base * (2 ** attempt))
        return d / 2 + random.uniform(0, d / 2)


class Client:
    """A client of one latch server.

    base_url: "http://127.0.0.1:8080"; key: a tenant's key (or the admin key,
    with `tenant` naming the tenant it acts for: the Latch-Tenant header).
    timeout: seconds a request may take, on top of any wait_seconds it holds.
    The client is safe to share between threads.

    Requests that are safe to repeat are retried per `retry` (a RetryPolicy):
    GETs, PUTs, cancels, POSTs that carry a dedup or idempotency key, and the
    worker calls fenced by a lease token (heartbeat, step, complete, fail,
    suspend: a repeat of one that was done answers LeaseLost and changes
    nothing). Submits always carry a key (a fresh UUID when the caller gives
    none), so a submit whose answer was lost is sent again without ever
    making a second execution. Claims, retries, deletes, tenant and key
    creation and signals without a key are sent once.
    """

    def __init__(self, base_url: str, key: str = "", *, tenant: Optional[str] = None,
                 timeout: float = 30.0, retry: Optional[RetryPolicy] = None,
                 user_agent: str = "latch-client-python/0.1") -> None:
        self.base_url = base_url.rstrip("/")
        self.key = key
        self.tenant = tenant
        self.timeout = timeout
        self.retry_policy = retry if retry is not None else RetryPolicy()
        self.user_agent = user_agent
        self._opener = urllib.request.build_opener(_NoRedirect())

    # ----------------------------------------------------------------- core

    def request(self, method: str, path: str, body: Any = _NO_BODY, *,
                query: Optional[Mapping[str, Any]] = None, headers: Optional[Mapping[str, str]] = None,
                retry: bool = False, hold: float = 0.0, raw_body: Optional[bytes] = None,
                tenant: Optional[str] = None) -> Tuple[int, Any, "http.client.HTTPMessage"]:
        """Sends one request and returns (status, decoded JSON or None, headers).

        An error answer raises its LatchError subclass; no answer raises
        TransportError. retry: the request is safe to repeat. hold: seconds
        the server may hold it (a long poll). raw_body: bytes sent as they
        are (with the headers given), instead of body as JSON.
        """
        url = self.base_url + path
        if query:
            q = {k: _query_value(v) for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        data: Optional[bytes] = None
        hdrs: Dict[str, str] = {"Accept": "application/json", "User-Agent": self.user_agent}
        if self.key:
            hdrs["Authorization"] = "Bearer " + self.key
        t = tenant if tenant is not None else self.tenant
        if t:
            hdrs["Latch-Tenant"] = t
        if raw_body is not None:
            data = raw_body
        elif body is not _NO_BODY:
            data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        tp = current_traceparent()
        if tp:
            hdrs["traceparent"] = tp
        if headers:
            hdrs.update(headers)
        policy = self.retry_policy
        attempt = 0
        while True:
            req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
            try:
                with self._opener.open(req, timeout=self.timeout + hold) as res:
                    raw = res.read()
                    return res.status, _decode(raw), res.headers
            except urllib.error.HTTPError as err:
                try:
                    raw = err.read()
                except (OSError, http.client.HTTPException):
                    raw = b""
                finally:
                    err.close()
                ra = _retry_after(err.headers.get("Retry-After") if err.headers else None)
                problem = _decode(raw)
                text = raw[:200].decode("utf-8", "replace") if not isinstance(problem, dict) else ""
                e = error_for(err.code, problem if isinstance(problem, dict) else None, ra,
                              text or err.reason or "")
                if retry and err.code in (429, 503) and attempt < policy.max_retries:
                    wait = min(ra, policy.max_retry_after) if ra is not None else policy.backoff(attempt)
                    policy.sleep(wait)
                    attempt += 1
                    continue
                raise e from None
            except (urllib.error.URLError, http.client.HTTPException, OSError) as err:
                reason = getattr(err, "reason", err)
                if retry and attempt < policy.max_retries:
                    policy.sleep(policy.backoff(attempt))
                    attempt += 1
                    continue
                raise TransportError("transport_error", 0, f"{method} {path}: {reason}") from err

    def _call(self, method: str, path: str, body: Any = _NO_BODY, **kw: Any) -> Any:
        return self.request(method, path, body, **kw)[1]

    # ---------------------------------------------------------- executions

    def submit(self, kind: str, payload: JSON = None, *, dedup_key: Optional[str] = None,
               idempotency_key: Optional[str] = None, queue: Optional[str] = None,
               priority: Optional[int] = None, run_at: Optional[TimeLike] = None,
               delay_seconds: Optional[int] = None, max_attempts: Optional[int] = None,
               timeout_seconds: Optional[int] = None, concurrency_key: Optional[str] = None,
               concurrency_limit: Optional[int] = None, rate_key: Optional[str] = None,
               tenant: Optional[str] = None, traceparent: Optional[str] = None) -> SubmitResponse:
        """Submits an execution of kind; answers it with "deduplicated" (True
        when the dedup key already mapped to it).

        dedup_key goes in the body, idempotency_key in the Idempotency-Key
        header (the same thing to the server). With neither, a fresh UUID is
        the dedup key, so the retries of this one call are one execution.
        traceparent (a W3C traceparent; default: the current one, see
        use_traceparent) is the trace the execution's runs continue.
        """
        body = _submit_body(kind, payload, dedup_key=dedup_key, queue=queue, priority=priority,
                            run_at=run_at, delay_seconds=delay_seconds, max_attempts=max_attempts,
                            timeout_seconds=timeout_seconds, concurrency_key=concurrency_key,
                            concurrency_limit=concurrency_limit, rate_key=rate_key)
        headers = {}
        if check_traceparent(traceparent):
            headers["traceparent"] = traceparent
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        elif dedup_key is None:
            body["dedup_key"] = new_key()
        return self._call("POST", "/api/executions", body, headers=headers, retry=True, tenant=tenant)

    def submit_batch(self, items: Sequence[Mapping[str, Any]], *, tenant: Optional[str] = None,
                     traceparent: Optional[str] = None) -> List[BatchItem]:
        """Submits 1–1000 items (each a submit body: {"kind", "payload", ...})
        in one request; answers a BatchItem per item, in order. An item without
        a dedup_key gets a fresh UUID, so the request is safe to retry.
        traceparent: as submit's, for every item."""
        body_items = []
        for it in items:
            d = dict(it)
            if "run_at" in d and isinstance(d["run_at"], datetime.datetime):
                d["run_at"] = format_time(d["run_at"])
            if d.get("dedup_key") is None:
                d["dedup_key"] = new_key()
            body_items.append(d)
        headers = {"traceparent": traceparent} if check_traceparent(traceparent) else None
        ans = self._call("POST", "/api/executions/batch", {"items": body_items}, headers=headers, retry=True,
                         tenant=tenant)
        out = []
        for slot in ans["items"]:
            err = None
            if slot.get("error"):
                err = error_for(slot["status"], slot["error"])
            out.append(BatchItem(status=slot["status"], execution=slot.get("execution"), error=err))
        return out

    def get(self, execution_id: str, *, wait_seconds: Optional[int] = None) -> Execution:
        """The execution; with wait_seconds (0–60) the server holds the answer
        until it is terminal or the wait ends (a long poll)."""
        return self._call("GET", "/api/executions/" + _seg(execution_id),
                          query={"wait_seconds": wait_seconds}, retry=True, hold=float(wait_seconds or 0))

    def wait(self, execution_id: str, timeout: float = 60.0) -> Execution:
        """Long-polls until the execution is terminal and answers it; raises
        Unfinished (with the execution as last read) when timeout seconds
        pass first."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            e = self.get(execution_id, wait_seconds=max(0, min(60, int(left))))
            if e["status"] in TERMINAL:
                return e
            if time.monotonic() >= deadline:
                raise Unfinished(e, timeout)

    def list_executions(self, *, status: Optional[str] = None, kind: Optional[str] = None,
                        queue: Optional[str] = None, dedup_key: Optional[str] = None,
                        schedule: Optional[str] = None, parent_id: Optional[str] = None,
                        id_prefix: Optional[str] = None,
                        limit: Optional[int] = None, cursor: Optional[str] = None) -> Page:
        """One page of the caller's executions, newest first; with parent_id,
        the children of that execution, in spawn order; with id_prefix (8
        or more characters of an id, lower case), those whose id starts
        with it."""
        ans = self._call("GET", "/api/executions", retry=True,
                         query={"status": status, "kind": kind, "queue": queue, "dedup_key": dedup_key,
                                "schedule": schedule, "parent_id": parent_id, "id_prefix": id_prefix,
                                "limit": limit, "cursor": cursor})
        return Page(items=ans["items"], next_cursor=ans.get("next_cursor"))

    def children(self, execution_id: str) -> List[Execution]:
        """Every child the execution spawned, in spawn order, each as it is
        now (list_executions with parent_id, page after page). Another
        tenant's execution has none."""
        return list(self.iter_executions(parent_id=execution_id, limit=500))

    def execution_pages(self, **filters: Any) -> Iterator[Page]:
        """Every page of list_executions(**filters), following the cursors."""
        return _pages(self.list_executions, filters)

    def iter_executions(self, **filters: Any) -> Iterator[Execution]:
        """Every execution list_executions(**filters) finds, page after page."""
        for page in self.execution_pages(**filters):
            yield from page.items

    def cancel(self, execution_id: str) -> Execution:
        """Cancels: at once unless running; a running one ends when its worker
        stops. Retried: a repeat changes nothing."""
        return self._call("POST", f"/api/executions/{_seg(execution_id)}/cancel", retry=True)

    def delete(self, execution_id: str, *, force: bool = False) -> None:
        """Deletes a terminal execution (NotTerminal otherwise); force deletes in any state."""
        self._call("DELETE", "/api/executions/" + _seg(execution_id),
                   query={"force": "true" if force else None})

    def attempts(self, execution_id: str) -> List[Attempt]:
        """Every run of the execution, oldest first."""
        return self._call("GET", f"/api/executions/{_seg(execution_id)}/attempts", retry=True)["items"]

    def steps_page(self, execution_id: str, *, limit: Optional[int] = None,
                   cursor: Optional[str] = None) -> Page:
        """One page of the execution's journal, in record order: at most limit
        steps (1-10000, the server's default 10000: every step), cut by the server's bound of
        bytes; page on with next_cursor until it is None."""
        ans = self._call("GET", f"/api/executions/{_seg(execution_id)}/steps", retry=True,
                         query={"limit": limit, "cursor": cursor})
        return Page(items=ans["items"], next_cursor=ans.get("next_cursor"))

    def steps(self, execution_id: str) -> List[Step]:
        """The execution's whole journal, in record order, page after page."""
        out: List[Dict[str, Any]] = []
        for page in _pages(lambda **kw: self.steps_page(execution_id, **kw), {}):
            out.extend(page.items)
        return out

    def signal(self, execution_id: str, name: str, data: JSON = None, *,
               idempotency_key: Optional[str] = None) -> SignalResponse:
        """Sends the signal name with data; True when it resumed a waiting
        execution, False when kept for a later wait. With idempotency_key a
        repeat changes nothing (and is retried safely)."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key is not None else {}
        ans = self._call("POST", f"/api/executions/{_seg(execution_id)}/signals/{_seg(name)}", {"data": data},
                         headers=headers, retry=idempotency_key is not None)
        return bool(ans["delivered"])

    def retry(self, execution_id: str) -> Execution:
        """Queues a failed execution again, with its journal (NotFailed otherwise)."""
        return self._call("POST", f"/api/executions/{_seg(execution_id)}/retry")

    def stream_ticket(self, execution_id: str) -> StreamTicket:
        """A one-use ticket ({"ticket", "expires_in"}) for the execution's event stream."""
        return self._call("POST", f"/api/executions/{_seg(execution_id)}/stream-ticket")

    def events(self, execution_id: str, *, ticket: Optional[str] = None) -> Iterator[Tuple[str, JSON]]:
        """The execution's event stream: (event, data) pairs, "status" with the
        execution, ending after the terminal one (or an "error" with a problem)."""
        url = f"{self.base_url}/api/executions/{_seg(execution_id)}/events"
        hdrs = {"Accept": "text/event-stream", "User-Agent": self.user_agent}
        if ticket is not None:
            url += "?" + urllib.parse.urlencode({"ticket": ticket})
        elif self.key:
            hdrs["Authorization"] = "Bearer " + self.key
        if self.tenant and ticket is None:
            hdrs["Latch-Tenant"] = self.tenant
        req = urllib.request.Request(url, headers=hdrs)
        try:
            res = self._opener.open(req, timeout=max(self.timeout, 60.0))
        except urllib.error.HTTPError as err:
            raw = err.read()
            err.close()
            p = _decode(raw)
            raise error_for(err.code, p if isinstance(p, dict) else None) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as err:
            raise TransportError("transport_error", 0, f"GET events: {getattr(err, 'reason', err)}") from err
        with res:
            event, data = "message", []  # type: str, List[str]
            for line in res:
                s = line.decode("utf-8").rstrip("\r\n")
                if s == "":
                    if data:
                        yield event, _decode("\n".join(data).encode("utf-8"))
                    event, data = "message", []
                elif s.startswith(":"):
                    continue
                else:
                    k, _, v = s.partition(":")
                    v = v[1:] if v.startswith(" ") else v
                    if k == "event":
                        event = v
                    elif k == "data":
                        data.append(v)

    # ---------------------------------------------------------- schedules

    def put_schedule(self, name: str, schedule: Optional[Mapping[str, Any]] = None, **fields: Any) -> Schedule:
        """Creates or replaces the schedule name: {"cron" or "every", "kind", ...}
        as a mapping, keywords, or both."""
        body = dict(schedule or {})
        body.update(fields)
        return self._call("PUT", "/api/schedules/" + _seg(name), body, retry=True)

    def get_schedule(self, name: str) -> Schedule:
        return self._call("GET", "/api/schedules/" + _seg(name), retry=True)

    def list_schedules(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Page:
        ans = self._call("GET", "/api/schedules", query={"limit": limit, "cursor": cursor}, retry=True)
        return Page(items=ans["items"], next_cursor=ans.get("next_cursor"))

    def schedule_pages(self, **kw: Any) -> Iterator[Page]:
        return _pages(self.list_schedules, kw)

    def delete_schedule(self, name: str) -> None:
        self._call("DELETE", "/api/schedules/" + _seg(name))

    def trigger_schedule(self, name: str, *, idempotency_key: Optional[str] = None) -> Execution:
        """Fires an off-cycle tick; answers its execution. Without a key a
        fresh one is sent, so the call's own retries are one tick."""
        key = idempotency_key if idempotency_key is not None else new_key()
        return self._call("POST", f"/api/schedules/{_seg(name)}/trigger",
                          headers={"Idempotency-Key": key}, retry=True)

    def pause_schedule(self, name: str) -> Schedule:
        """Pauses the schedule: enabled false, nothing else changed, in one
        request (a PUT running at the same time is never undone). Answers the
        schedule; pausing a paused one answers it unchanged."""
        return self._call("POST", f"/api/schedules/{_seg(name)}/pause", retry=True)

    def resume_schedule(self, name: str) -> Schedule:
        """Resumes the schedule from its first tick after now (missed ticks are
        not run), in one request. Answers the schedule; resuming an enabled one
        answers it unchanged."""
        return self._call("POST", f"/api/schedules/{_seg(name)}/resume", retry=True)

    # ---------------------------------------------------------- events

    def publish(self, name: str, data: JSON = None, *, key: Optional[str] = None,
                idempotency_key: Optional[str] = None) -> PublishResponse:
        """Publishes the event name with data (and a correlation key): in one
        operation it resumes every execution of the tenant waiting for it
        (for that key, when its wait named one) and starts one execution per
        enabled subscription on the name. Answers {"event_id", "resumed",
        "started": [{"subscription", "execution_id"}, ...]} (a start refused
        by the quota carries "error" instead). Without idempotency_key a
        fresh one is sent, so the call's own retries are one event; a repeat
        of a key answers the first answer and changes nothing."""
        body: Dict[str, Any] = {"name": name, "data": data}
        if key is not None:
            body["key"] = key
        k = idempotency_key if idempotency_key is not None else new_key()
        return self._call("POST", "/api/events", body, headers={"Idempotency-Key": k}, retry=True)

    def put_subscription(self, name: str, subscription: Optional[Mapping[str, Any]] = None,
                         **fields: Any) -> Subscription:
        """Creates or replaces the subscription name: {"event", "kind",
        "queue", "priority", "max_attempts", "timeout_seconds",
        "concurrency_key", "concurrency_limit", "enabled"} as a mapping,
        keywords, or both. Each event of that name then starts an execution
        of kind, its payload the event."""
        body = dict(subscription or {})
        body.update(fields)
        return self._call("PUT", "/api/subscriptions/" + _seg(name), body, retry=True)

    def get_subscription(self, name: str) -> Subscription:
        return self._call("GET", "/api/subscriptions/" + _seg(name), retry=True)

    def list_subscriptions(self) -> List[Subscription]:
        """Every subscription of the tenant (at most 100), by name; the
        admin's without a tenant: every tenant's, by tenant then name. It
        reads page after page until next_cursor is None."""
        out: List[Subscription] = []
        for page in _pages(self._subscriptions_page, {}):
            out.extend(page.items)
        return out

    def _subscriptions_page(self, *, cursor: Optional[str] = None) -> Page:
        ans = self._call("GET", "/api/subscriptions", query={"cursor": cursor}, retry=True)
        return Page(items=ans["items"], next_cursor=ans.get("next_cursor"))

    def delete_subscription(self, name: str) -> None:
        self._call("DELETE", "/api/subscriptions/" + _seg(name))

    # ---------------------------------------------------------- rate limits

    def put_rate_limit(self, key: str, rate: int, per_seconds: int, burst: Optional[int] = None) -> RateLimit:
        body: Dict[str, Any] = {"rate": rate, "per_seconds": per_seconds}
        if burst is not None:
            body["burst"] = burst
        return self._call("PUT", "/api/rate-limits/" + _seg(key), body, retry=True)

    def get_rate_limit(self, key: str) -> RateLimit:
        return self._call("GET", "/api/rate-limits/" + _seg(key), retry=True)

    def delete_rate_limit(self, key: str) -> RateLimit:
        """Deletes the limit; answers it as it was just before."""
        return self._call("DELETE", "/api/rate-limits/" + _seg(key))

    # ---------------------------------------------------------- workers

    def claim(self, worker_id: str, *, kinds: Optional[Sequence[str]] = None,
              queues: Optional[Sequence[str]] = None, max: Optional[int] = None,
              lease_seconds: Optional[int] = None, wait_seconds: Optional[int] = None) -> List[Lease]:
        """Claims up to max executions; with wait_seconds (0–30) the server
        holds the request until one is claimed or the wait ends. Not retried:
        a lost answer's leases would only expire."""
        body: Dict[str, Any] = {"worker_id": worker_id}
        for k, v in (("kinds", kinds), ("queues", queues), ("max", max), ("lease_seconds", lease_seconds),
                     ("wait_seconds", wait_seconds)):
            if v is not None:
                body[k] = list(v) if k in ("kinds", "queues") else v
        return self._call("POST", "/api/workers/claim", body, hold=float(wait_seconds or 0))["leases"]

    def heartbeat(self, execution_id: str, lease_token: str, *, lease_seconds: Optional[int] = None) -> HeartbeatResponse:
        """Extends the lease; answers {"lease_expires_at", "cancel_requested"}. LeaseLost: drop the attempt."""
        body: Dict[str, Any] = {"lease_token": lease_token}
        if lease_seconds is not None:
            body["lease_seconds"] = lease_seconds
        return self._call("POST", f"/api/executions/{_seg(execution_id)}/heartbeat", body, retry=True)

    def complete(self, execution_id: str, lease_token: str, result: JSON = None) -> Execution:
        """Completes the attempt with result. Retried, like fail and suspend:
        the lease token fences them, so a repeat of one that was done answers
        LeaseLost and changes nothing."""
        return self._call("POST", f"/api/executions/{_seg(execution_id)}/complete",
                          {"lease_token": lease_token, "result": result}, retry=True)

    def fail(self, execution_id: str, lease_token: str, error: str, *, retry: Optional[bool] = None,
             retry_after_seconds: Optional[int] = None) -> Execution:
        """Fails the attempt; it runs again unless retry is False or attempts
        are spent, after retry_after_seconds or the server's backoff."""
        body: Dict[str, Any] = {"lease_token": lease_token, "error": error}
        if retry is not None:
            body["retry"] = retry
        if retry_after_seconds is not None:
            body["retry_after_seconds"] = retry_after_seconds
        return self._call("POST", f"/api/executions/{_seg(execution_id)}/fail", body, retry=True)

    def record_step(self, execution_id: str, lease_token: str, name: str, result: JSON = None, *,
                    started_at: Optional[TimeLike] = None) -> StepRecorded:
        """Records a flow step (the first record of a name wins); answers
        {"name", "result", "recorded"}, the result being the first record's."""
        body: Dict[str, Any] = {"lease_token": lease_token, "name": name, "result": result}
        if started_at is not None:
            body["started_at"] = format_time(started_at)
        return self._call("POST", f"/api/executions/{_seg(execution_id)}/steps", body, retry=True)

    def suspend(self, execution_id: str, lease_token: str, step: str, *, until: Optional[TimeLike] = None,
                signal: Optional[str] = None, children: Optional[str] = None, count: Optional[int] = None,
                event: Optional[str] = None, key: Optional[str] = None, since: Optional[TimeLike] = None,
                timeout_seconds: Optional[int] = None) -> Execution:
        """Ends the attempt as a flow's sleep (until), wait for a signal
        (signal), wait for children (children: the spawn step; count of
        them, default all) or wait for an event (event, with key and since);
        answers the execution, suspended or queued again at once."""
        body: Dict[str, Any] = {"lease_token": lease_token, "step": step}
        if until is not None:
            body["until"] = format_time(until)
        if since is not None:
            body["since"] = format_time(since)
        for k, v in (("signal", signal), ("children", children), ("count", count), ("event", event),
                     ("key", key), ("timeout_seconds", timeout_seconds)):
            if v is not None:
                body[k] = v
        return self._call("POST", f"/api/executions/{_seg(execution_id)}/suspend", body, retry=True)

    def spawn_children(self, execution_id: str, lease_token: str, step: str, items: Sequence[Mapping[str, Any]], *,
                       on_parent_end: Optional[str] = None) -> Spawned:
        """Admits items (each a submit body without dedup_key: {"kind",
        "payload", ...}) as children of the execution, all or none, recorded
        as the flow step `step`; answers {"step", "recorded", "children":
        [{"execution_id", "status"}]}. A repeat of the step admits nothing
        and answers the first spawn's children with recorded False, so it is
        retried safely. on_parent_end: "cancel" (default) or "abandon"."""
        body: Dict[str, Any] = {"lease_token": lease_token, "step": step,
                                "items": [_child_body(it) for it in items]}
        if on_parent_end is not None:
            body["on_parent_end"] = on_parent_end
        return self._call("POST", f"/api/executions/{_seg(execution_id)}/children", body, retry=True)

    # ---------------------------------------------------------- tenants (admin)

    def create_tenant(self, name: str, *, max_inflight: Optional[int] = None,
                      dedup_ttl_seconds: Optional[int] = None,
                      retention_seconds: Optional[int] = None,
                      max_stored_bytes: Optional[int] = None,
                      event_retention_seconds: Optional[int] = None) -> TenantCreated:
        """Creates a tenant (admin key); the answer holds its first api_key."""
        body: Dict[str, Any] = {"name": name}
        for k, v in (("max_inflight", max_inflight), ("dedup_ttl_seconds", dedup_ttl_seconds),
                     ("retention_seconds", retention_seconds), ("max_stored_bytes", max_stored_bytes),
                     ("event_retention_seconds", event_retention_seconds)):
            if v is not None:
                body[k] = v
        return self._call("POST", "/api/tenants", body)

    def get_tenant(self, name: str) -> Tenant:
        return self._call("GET", "/api/tenants/" + _seg(name), retry=True)

    def update_tenant(self, name: str, **fields: Any) -> Tenant:
        """PATCH: any of max_inflight, dedup_ttl_seconds, retention_seconds, max_stored_bytes,
        event_retention_seconds, disabled."""
        return self._call("PATCH", "/api/tenants/" + _seg(name), fields, retry=True)

    def delete_tenant(self, name: str, *, force: bool = False) -> None:
        self._call("DELETE", "/api/tenants/" + _seg(name), query={"force": "true" if force else None})

    def create_key(self, tenant: str) -> APIKey:
        return self._call("POST", f"/api/tenants/{_seg(tenant)}/keys")

    def list_keys(self, tenant: str) -> List[APIKeyInfo]:
        return self._call("GET", f"/api/tenants/{_seg(tenant)}/keys", retry=True)["items"]

    def delete_key(self, tenant: str, key_id: str) -> None:
        self._call("DELETE", f"/api/tenants/{_seg(tenant)}/keys/{_seg(key_id)}")

    # ---------------------------------------------------------- operations

    def ready(self) -> bool:
        """True when the server answers /readyz 200."""
        try:
            self.request("GET", "/readyz")
            return True
        except LatchError:
            return False


TERMINAL = frozenset({"succeeded", "failed", "cancelled", "skipped"})
"""The statuses an execution never leaves."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # The API never redirects; following one would resend the key elsewhere.
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


def _submit_body(kind: str, payload: JSON, **opts: Any) -> Dict[str, Any]:
    body: Dict[str, Any] = {"kind": kind}
    if payload is not None:
        body["payload"] = payload
    for k, v in opts.items():
        if v is not None:
            body[k] = format_time(v) if k == "run_at" else v
    return body


def _child_body(item: Mapping[str, Any]) -> Dict[str, Any]:
    d = dict(item)
    if isinstance(d.get("run_at"), datetime.datetime):
        d["run_at"] = format_time(d["run_at"])
    return d


def _pages(fetch: Callable[..., Page], filters: Dict[str, Any]) -> Iterator[Page]:
    cursor = filters.pop("cursor", None)
    while True:
        page = fetch(cursor=cursor, **filters)
        yield page
        if not page.next_cursor:
            return
        cursor = page.next_cursor


def _seg(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError:
        return None


def _retry_after(v: Optional[str]) -> Optional[float]:
    if not v:
        return None
    try:
        return max(0.0, float(v))
    except ValueError:
        return None
