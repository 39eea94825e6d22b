"""latch_client: a client and worker for latch's HTTP API, standard library only.

    from latch_client import Client, Worker
    c = Client("http://127.0.0.1:8080", key)
    e = c.submit("email", {"to": "ann"}, dedup_key="welcome-ann")

AsyncClient has the same calls as coroutines, for asyncio code.
"""

from .aio import AsyncClient
from .client import TERMINAL, BatchItem, Client, Execution, Page, RetryPolicy, format_time, new_key, parse_time
from .errors import (ERRORS, Conflict, DedupKeyReused, Forbidden, HeadersTooLarge, InternalError, Invalid,
                     InvalidRequest, InvalidTicket, JournalTooLarge, LatchError, LeaseLost, MethodNotAllowed, NotActive,
                     NotFailed, NotFound, NotTerminal, PayloadTooLarge, QuotaExceeded, ScheduleLimit,
                     ScheduleTooFrequent, SignalBufferFull, StorageExceeded, TenantDisabled, TenantExists, TooManyChildren,
                     TooManySubscriptions,
                     TooManyRequests, TooManySteps, TransportError, Unauthorized, Unfinished,
                     Unavailable, UnsupportedMediaType, error_for)
from .types import (APIKey, APIKeyInfo, Attempt, ChildRef, EventStart, HeartbeatResponse, Lease, PublishResponse,
                    RateLimit, Schedule, SignalResponse, Spawned, Step, StepRecorded, StreamTicket, SubmitResponse,
                    Subscription, Tenant, TenantCreated)
from .tracing import current_traceparent, reset_traceparent, set_traceparent, use_traceparent, valid_traceparent
from .worker import TIMED_OUT, ChildrenTimedOut, Fail, Job, JobCancelled, Suspended, WaitTimedOut, Worker

__version__ = "0.1.0"

__all__ = [
    "TERMINAL", "TIMED_OUT", "AsyncClient", "BatchItem", "Client", "Execution", "Page", "RetryPolicy", "format_time", "new_key",
    "parse_time", "ERRORS", "Conflict", "DedupKeyReused", "Forbidden", "HeadersTooLarge", "InternalError",
    "Invalid", "InvalidRequest", "InvalidTicket", "JournalTooLarge", "LatchError", "LeaseLost", "MethodNotAllowed", "NotActive",
    "NotFailed", "NotFound", "NotTerminal", "PayloadTooLarge", "QuotaExceeded", "ScheduleLimit", "ScheduleTooFrequent",
    "SignalBufferFull", "StorageExceeded",
    "TenantDisabled", "TenantExists", "TooManyChildren", "TooManySubscriptions", "TooManyRequests", "TooManySteps", "TransportError", "Unauthorized",
    "Unfinished", "Unavailable", "UnsupportedMediaType",
    "error_for", "APIKey", "APIKeyInfo", "Attempt", "ChildRef", "EventStart", "HeartbeatResponse", "PublishResponse", "Subscription", "Lease", "RateLimit", "Schedule",
    "SignalResponse", "Spawned", "Step", "StepRecorded", "StreamTicket", "SubmitResponse", "Tenant", "TenantCreated", "Fail", "Job",
    "JobCancelled", "Suspended", "WaitTimedOut", "ChildrenTimedOut", "Worker",
    "current_traceparent", "reset_traceparent", "set_traceparent", "use_traceparent", "valid_traceparent",
]
