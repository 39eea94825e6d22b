"""The shapes of the API's answers (api/openapi.json), as TypedDicts.

The client answers plain dicts — JSON as it came — typed with these, so a
type checker knows `e["status"]` is a str and `e["finished_at"]` may be
None. A field the document marks optional (present only sometimes) is
optional here; a field it allows null is Optional. tests/test_types.py
holds these to the document, field by field, both ways.
"""

from typing import Any, Dict, List, Optional, TypedDict


class _ExecutionFields(TypedDict):
    execution_id: str
    tenant: str
    kind: str
    queue: str
    priority: int
    status: str
    dedup_key: Optional[str]
    concurrency_key: Optional[str]
    concurrency_limit: Optional[int]
    rate_key: Optional[str]
    payload: Any
    result: Any
    error: Optional[str]
    attempt: int
    max_attempts: int
    timeout_seconds: int
    schedule: Optional[str]
    created_at: str
    run_at: str
    started_at: Optional[str]
    finished_at: Optional[str]
    cancel_requested: bool
    wake_at: Optional[str]
    waiting_for: Optional[str]
    dedup_hits: int
    last_dedup_hit_at: Optional[str]
    parent_id: Optional[str]
    parent_step: Optional[str]


class Execution(_ExecutionFields, total=False):
    """One requested run of a job kind. Every field is always present, except trace_parent, left out when
    the execution has none; optional values are null when unset. Times are RFC 3339 UTC."""

    trace_parent: str


class SubmitResponse(Execution):
    """The answer to a submit: the execution, and whether its dedup key already mapped to it."""

    deduplicated: bool


class _LeaseFields(TypedDict):
    execution_id: str
    lease_token: str
    kind: str
    payload: Any
    attempt: int
    lease_expires_at: str
    tenant: str
    queue: str
    max_attempts: int
    timeout_seconds: int
    steps: Dict[str, Any]
    steps_complete: bool


class Lease(_LeaseFields, total=False):
    """One leased execution of a claim's answer; steps is the flow's journal at the claim (its first
    steps, with steps_complete false when there are more)."""

    trace_parent: str


class HeartbeatResponse(TypedDict):
    """The answer to a heartbeat."""

    lease_expires_at: str
    cancel_requested: bool


class Tenant(TypedDict):
    """A tenant and its settings."""

    name: str
    max_inflight: int
    inflight: int
    dedup_ttl_seconds: int
    retention_seconds: int
    disabled: bool
    max_stored_bytes: int
    stored_bytes: int
    event_retention_seconds: int


class TenantCreated(TypedDict):
    """A new tenant, with its first key (shown only this once)."""

    name: str
    key_id: str
    api_key: str
    max_inflight: int
    dedup_ttl_seconds: int
    retention_seconds: int
    max_stored_bytes: int
    event_retention_seconds: int


class APIKey(TypedDict):
    """A new key of a tenant (shown only this once)."""

    key_id: str
    api_key: str


class APIKeyInfo(TypedDict):
    """One of a tenant's keys, without the key itself."""

    key_id: str
    created_at: str
    last_used_at: Optional[str]


class Schedule(TypedDict):
    """A tenant's recurring submission. Every field is always present; optional values are null when unset.
    Settings left to their defaults are answered with their effective values. Times are RFC 3339 UTC."""

    name: str
    tenant: str
    cron: Optional[str]
    every: Optional[str]
    timezone: str
    kind: str
    payload: Any
    queue: str
    priority: int
    max_attempts: int
    timeout_seconds: int
    rate_key: Optional[str]
    overlap: str
    catchup: str
    enabled: bool
    next_run_at: Optional[str]
    last_run_at: Optional[str]
    last_execution_id: Optional[str]
    running: bool
    created_at: str
    updated_at: str


class RateLimit(TypedDict):
    """A tenant's token bucket for one rate key."""

    key: str
    rate: int
    per_seconds: int
    burst: int
    created_at: str
    updated_at: str


class StepRecorded(TypedDict):
    """The answer to recording a step: recorded is False when a step of that name was there first."""

    name: str
    result: Any
    recorded: bool


class Step(TypedDict):
    """One recorded step of a flow's journal."""

    name: str
    result: Any
    started_at: Optional[str]
    recorded_at: str
    attempt: int


class Attempt(TypedDict):
    """One run of an execution: the lease a claim gave, and how it ended."""

    attempt: int
    worker_id: str
    claimed_at: str
    started_at: str
    ended_at: Optional[str]
    outcome: Optional[str]
    error: Optional[str]


class StreamTicket(TypedDict):
    """A one-use ticket for an execution's event stream."""

    ticket: str
    expires_in: int


class SignalResponse(TypedDict):
    """The answer to a signal: delivered is True when it ended a wait at once."""

    delivered: bool


class ChildRef(TypedDict):
    """One child of a spawn's answer: its id and its status then."""

    execution_id: str
    status: str


class Spawned(TypedDict):
    """The answer to a spawn: recorded is False when the step was recorded before (nothing admitted)."""

    step: str
    recorded: bool
    children: List[ChildRef]


class _EventStartFields(TypedDict):
    subscription: str


class EventStart(_EventStartFields, total=False):
    """One subscription's start in a publish's answer: execution_id, the execution it started, or
    error, the refusal ("quota_exceeded" or "storage_exceeded") that kept it from starting."""

    execution_id: str
    error: str


class PublishResponse(TypedDict):
    """The answer to a publish: the event, how many waiting executions it resumed, and what each
    enabled subscription on its name started."""

    event_id: str
    resumed: int
    started: List[EventStart]


class Subscription(TypedDict):
    """A tenant's subscription: each event named event starts an execution of kind."""

    name: str
    tenant: str
    event: str
    kind: str
    queue: str
    priority: int
    max_attempts: int
    timeout_seconds: int
    concurrency_key: Optional[str]
    concurrency_limit: Optional[int]
    enabled: bool
    created_at: str
    updated_at: str
