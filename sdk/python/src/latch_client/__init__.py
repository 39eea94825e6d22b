"""latch_client: a client and worker for latch's HTTP API, standard library only.

    from latch_client import Client, Worker
    c = Client("http://127.0.0.1:8080", key)
    e = c.submit("email", {"to": "ann"}, dedup_key="welcome-ann")
"""

from .client import TERMINAL, BatchItem, Client, Execution, Page, RetryPolicy, format_time, new_key, parse_time
from .errors import (ERRORS, Conflict, DedupKeyReused, Forbidden, HeadersTooLarge, InternalError, Invalid,
                     InvalidRequest, InvalidTicket, JournalTooLarge, LatchError, LeaseLost, MethodNotAllowed, NotActive,
                     NotFailed, NotFound, NotTerminal, PayloadTooLarge, QuotaExceeded, ScheduleLimit,
                     ScheduleTooFrequent, SignalBufferFull, StorageExceeded, TenantDisabled, TenantExists, TooManyChildren,
                     TooManyRequests, TooManySteps, TransportError, Unimplemented, Unauthorized,
                     Unavailable, UnsupportedMediaType, error_for)
from .worker import TIMED_OUT, Fail, Job, JobCancelled, Suspended, WaitTimedOut, Worker

__version__ = "0.1.0"

__all__ = [
    "TERMINAL", "TIMED_OUT", "BatchItem", "Client", "Execution", "Page", "RetryPolicy", "format_time", "new_key",
    "parse_time", "ERRORS", "Conflict", "DedupKeyReused", "Forbidden", "HeadersTooLarge", "InternalError",
    "Invalid", "InvalidRequest", "InvalidTicket", "JournalTooLarge", "LatchError", "LeaseLost", "MethodNotAllowed", "NotActive",
    "NotFailed", "NotFound", "NotTerminal", "PayloadTooLarge", "QuotaExceeded", "ScheduleLimit", "ScheduleTooFrequent",
    "SignalBufferFull", "StorageExceeded",
    "TenantDisabled", "TenantExists", "TooManyChildren", "TooManyRequests", "TooManySteps", "TransportError", "Unauthorized", "Unimplemented", "Unavailable", "UnsupportedMediaType",
    "error_for", "Fail", "Job", "JobCancelled", "Suspended", "WaitTimedOut", "Worker",
]
