"""W3C trace context (traceparent) for the client and the worker, standard
library only: no OpenTelemetry dependency.

The traceparent a call sends is, first, the one given to the call
(``submit(..., traceparent=...)``), else the current one of this context:
set with ``use_traceparent`` (a context manager) or ``set_traceparent``. The
worker runs each handler with the lease's traceparent current, so every call
the handler and the worker make under the lease carries it, and
``job.traceparent`` hands it to the handler's own tracing.

With OpenTelemetry in your program, pass its context on:

    carrier = {}
    opentelemetry.propagate.inject(carrier)
    with use_traceparent(carrier.get("traceparent")):
        client.submit("email", {...})
"""

import contextlib
import contextvars
import re
from typing import Iterator, Optional

_current: "contextvars.ContextVar[Optional[str]]" = contextvars.ContextVar("latch_traceparent", default=None)

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")


def valid_traceparent(value: str) -> bool:
    """Whether value is a W3C traceparent the server keeps: lower-case hex,
    trace and parent ids not all zero, version not ff (a version 00 value
    has nothing after its flags)."""
    m = _TRACEPARENT.match(value) if isinstance(value, str) else None
    if m is None:
        return False
    version, trace_id, parent_id, _, rest = m.groups()
    if version == "ff" or (version == "00" and rest is not None):
        return False
    return trace_id != "0" * 32 and parent_id != "0" * 16


def check_traceparent(value: Optional[str]) -> Optional[str]:
    """value when it is None, "" (none) or a valid traceparent; ValueError otherwise."""
    if value is None or value == "":
        return None
    if not valid_traceparent(value):
        raise ValueError(f"not a W3C traceparent: {value!r} (want 00-<32 hex>-<16 hex>-<2 hex>)")
    return value


def current_traceparent() -> Optional[str]:
    """The traceparent calls of this context send, None when there is none."""
    return _current.get()


def set_traceparent(value: Optional[str]) -> "contextvars.Token[Optional[str]]":
    """Makes value (None: none) the current traceparent of this context;
    answers a token for reset_traceparent. ValueError when it is not one."""
    return _current.set(check_traceparent(value))


def reset_traceparent(token: "contextvars.Token[Optional[str]]") -> None:
    """Restores the traceparent set_traceparent replaced."""
    _current.reset(token)


@contextlib.contextmanager
def use_traceparent(value: Optional[str]) -> Iterator[Optional[str]]:
    """``with use_traceparent(tp):`` every call of the block (in this thread,
    or asyncio task) sends tp. None or "" sends none."""
    token = set_traceparent(value)
    try:
        yield _current.get()
    finally:
        _current.reset(token)
