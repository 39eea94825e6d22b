"""Typed errors: one class per problem `code` of latch's HTTP API.

Every error answer of the API is an RFC 9457 problem document whose `code`
is stable; `error_for` maps it onto the class below, so callers branch with
``except DedupKeyReused:`` instead of comparing strings.
"""

from typing import Any, Dict, Optional, Type


class LatchError(Exception):
    """An error answer of the API (or, as TransportError, no answer at all).

    code: the problem's `code` ("quota_exceeded"), status: the HTTP status
    (0 when no answer came), detail: the problem's `detail`, for people.
    retry_after: the seconds of a Retry-After header (or of a batch slot's
    `retry_after_seconds`), else None. problem: the whole document.
    """

    code_name: str = ""

    def __init__(self, code: str, status: int, detail: str = "", *, title: str = "",
                 retry_after: Optional[float] = None, problem: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.status = status
        self.detail = detail
        self.title = title
        self.retry_after = retry_after
        self.problem: Dict[str, Any] = problem or {}


class TransportError(LatchError):
    """No answer: the connection failed or timed out (after the retries)."""

    code_name = "transport_error"


class Unfinished(LatchError):
    """Client.wait ran out of time before the execution ended (no error of
    the server: status 0). execution is the execution as last read, still
    not terminal."""

    code_name = "unfinished"

    def __init__(self, execution: Dict[str, Any], timeout: float) -> None:
        super().__init__(self.code_name, 0,
                         f"execution {execution.get('execution_id')} is still {execution.get('status')} "
                         f"after {timeout:g}s")
        self.execution = execution


class InvalidRequest(LatchError):
    """400: a field, header or query parameter breaks its rule; the detail names it."""

    code_name = "invalid_request"


Invalid = InvalidRequest


class ScheduleTooFrequent(LatchError):
    """400: the schedule's timing ticks more often than the server allows
    (`latch serve --min-schedule-interval`). Nothing was written."""

    code_name = "schedule_too_frequent"


class Unauthorized(LatchError):
    """401: no key, or a key that is unknown or revoked."""

    code_name = "unauthorized"


class InvalidTicket(LatchError):
    """401: a stream ticket that is unknown, expired, used or for another execution."""

    code_name = "invalid_ticket"


class Forbidden(LatchError):
    """403: a tenant key called an admin endpoint, or named another tenant."""

    code_name = "forbidden"


class TenantDisabled(LatchError):
    """403: the key's tenant is disabled."""

    code_name = "tenant_disabled"


class NotFound(LatchError):
    """404: no such resource for this caller, or no such endpoint."""

    code_name = "not_found"


class MethodNotAllowed(LatchError):
    """405: the path exists, the method does not."""

    code_name = "method_not_allowed"


class Conflict(LatchError):
    """Base of the 409 codes."""


class NotTerminal(Conflict):
    """409: deleting an execution, or a tenant, that still has work in flight."""

    code_name = "not_terminal"


class LeaseLost(Conflict):
    """409: the lease token is not the execution's current, unexpired lease: drop the attempt."""

    code_name = "lease_lost"


class NotActive(Conflict):
    """409: a new signal to an execution that has ended."""

    code_name = "not_active"


class NotFailed(Conflict):
    """409: retrying an execution that is not failed."""

    code_name = "not_failed"


class TooManySteps(Conflict):
    """409: a new step name (Job.step, or a sleep or wait under a new name) when
    the execution's journal holds as many steps as it may (10,000). Nothing was
    recorded, and repeating cannot help: the Worker fails the attempt without a
    retry when a handler lets it through."""

    code_name = "too_many_steps"


class JournalTooLarge(Conflict):
    """409: a new step (Job.step, the outcome of a sleep or wait, or a signal's
    data ending a wait) would make the execution's journal larger than it may
    be (64 MiB of step names and results). Nothing was written, and repeating
    cannot help: the Worker fails the attempt without a retry when a handler
    lets it through."""

    code_name = "journal_too_large"


class SignalBufferFull(Conflict):
    """409: the signal would be kept for a later wait, and the execution keeps as
    many signals no wait has consumed as it may (1,000). Nothing was written; a
    wait of the flow that consumes one makes room."""

    code_name = "signal_buffer_full"


class StorageExceeded(Conflict):
    """409: the tenant's stored bytes would pass its storage budget
    (max_stored_bytes). Nothing was written; waiting does not help until
    executions are deleted or pruned, or the budget is raised. The Worker
    fails an attempt whose result is refused so, without a retry."""

    code_name = "storage_exceeded"


class TooManyChildren(Conflict):
    """409: a spawn of more than 1,000 children, or past 10,000 children of one
    execution or 16 levels of spawns. Nothing was written, and repeating cannot
    help."""

    code_name = "too_many_children"


class TooManySubscriptions(Conflict):
    """409: a new subscription past the tenant's 100. Nothing was written;
    delete one first (replacing one is allowed)."""

    code_name = "too_many_subscriptions"


class TenantExists(Conflict):
    """409: creating a tenant whose name is taken."""

    code_name = "tenant_exists"


class ScheduleLimit(Conflict):
    """409: the tenant has as many schedules as it may."""

    code_name = "schedule_limit"


class PayloadTooLarge(LatchError):
    """413 (400 in a batch slot): a body, payload or result over its limit."""

    code_name = "payload_too_large"


class UnsupportedMediaType(LatchError):
    """415: the body is not application/json in UTF-8."""

    code_name = "unsupported_media_type"


class DedupKeyReused(LatchError):
    """422: the dedup key maps to an execution submitted with another kind or payload."""

    code_name = "dedup_key_reused"


class QuotaExceeded(LatchError):
    """429: admitting would take the tenant's inflight above max_inflight."""

    code_name = "quota_exceeded"


class TooManyRequests(LatchError):
    """429: the tenant holds as many streams, long polls or stream tickets as it may."""

    code_name = "too_many_requests"


class HeadersTooLarge(LatchError):
    """431: the request's headers exceed the server's limit."""

    code_name = "headers_too_large"


class InternalError(LatchError):
    """500: a fault of the server."""

    code_name = "internal"


class Unavailable(LatchError):
    """503: the store does not answer, the request ran out of time, or the body budget is spent."""

    code_name = "unavailable"


ERRORS: Dict[str, Type[LatchError]] = {
    cls.code_name: cls
    for cls in (InvalidRequest, Unauthorized, InvalidTicket, Forbidden, TenantDisabled, NotFound,
                MethodNotAllowed, NotTerminal, LeaseLost, NotActive, NotFailed, TooManySteps,
                JournalTooLarge, SignalBufferFull, StorageExceeded, TooManyChildren, TooManySubscriptions, TenantExists,
                ScheduleLimit, ScheduleTooFrequent, PayloadTooLarge, UnsupportedMediaType, DedupKeyReused, QuotaExceeded,
                TooManyRequests, HeadersTooLarge, InternalError, Unavailable)
}
"""The class of each problem code the server defines (api/problem.go)."""


def error_for(status: int, problem: Optional[Dict[str, Any]], retry_after: Optional[float] = None,
              fallback_detail: str = "") -> LatchError:
    """The typed error of a problem document (a LatchError for an unknown code)."""
    p = problem if isinstance(problem, dict) else {}
    code = p.get("code")
    if not isinstance(code, str) or not code:
        code = f"http_{status}"
    detail = p.get("detail")
    if not isinstance(detail, str):
        detail = fallback_detail
    title = p.get("title") if isinstance(p.get("title"), str) else ""
    if retry_after is None and isinstance(p.get("retry_after_seconds"), (int, float)):
        retry_after = float(p["retry_after_seconds"])
    cls = ERRORS.get(code, LatchError)
    return cls(code, status, detail, title=title, retry_after=retry_after, problem=p)
