"""AsyncClient: the Client for asyncio code, standard library only.

Each call runs the synchronous Client's call in a thread of the
AsyncClient's own pool (max_concurrency threads, default 32), so an event
loop never blocks on the network and that many calls — long polls included —
run at once; retries, idempotency keys and errors are the Client's.
Iterators become async iterators, each step in a thread.
"""

import asyncio
import contextvars
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, AsyncIterator, Callable, List, Mapping, Optional, Sequence, Tuple, TypeVar

from .client import JSON, BatchItem, Client, Page, TimeLike
from .types import (APIKey, APIKeyInfo, Attempt, Execution, HeartbeatResponse, Lease, RateLimit, Schedule,
                    PublishResponse, SignalResponse, Spawned, Step, StepRecorded, StreamTicket, SubmitResponse,
                    Subscription, Tenant, TenantCreated)

_END = object()
_T = TypeVar("_T")


class AsyncClient:
    """The calls of Client, as coroutines: `await AsyncClient(url, key).submit("email", {...})`.

    Takes what Client takes, or an existing Client as sync=; max_concurrency
    bounds the calls in flight at once (more wait their turn). close() (or
    `async with`) ends the pool's threads.
    """

    def __init__(self, *args: Any, sync: Optional[Client] = None, max_concurrency: int = 32,
                 **kwargs: Any) -> None:
        self.sync = sync if sync is not None else Client(*args, **kwargs)
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="latch-aio")

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Ends the pool's threads once the calls in flight are done."""
        self._pool.shutdown(wait=False)

    async def _run(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        # In the caller's context: the traceparent current in the task (use_traceparent) is sent.
        ctx = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(self._pool, functools.partial(ctx.run, fn, *args, **kwargs))

    async def submit(self, kind: str, payload: JSON = None, *, dedup_key: Optional[str] = None,
                     idempotency_key: Optional[str] = None, queue: Optional[str] = None,
                     priority: Optional[int] = None, run_at: Optional[TimeLike] = None,
                     delay_seconds: Optional[int] = None, max_attempts: Optional[int] = None,
                     timeout_seconds: Optional[int] = None, concurrency_key: Optional[str] = None,
                     concurrency_limit: Optional[int] = None, rate_key: Optional[str] = None,
                     tenant: Optional[str] = None, traceparent: Optional[str] = None) -> SubmitResponse:
        """Client.submit, awaited."""
        return await self._run(
            self.sync.submit, kind, payload, dedup_key=dedup_key, idempotency_key=idempotency_key,
            queue=queue, priority=priority, run_at=run_at, delay_seconds=delay_seconds,
            max_attempts=max_attempts, timeout_seconds=timeout_seconds,
            concurrency_key=concurrency_key, concurrency_limit=concurrency_limit, rate_key=rate_key,
            tenant=tenant, traceparent=traceparent)

    async def submit_batch(self, items: Sequence[Mapping[str, Any]], *, tenant: Optional[str] = None,
                           traceparent: Optional[str] = None) -> List[BatchItem]:
        """Client.submit_batch, awaited."""
        return await self._run(self.sync.submit_batch, items, tenant=tenant, traceparent=traceparent)

    async def get(self, execution_id: str, *, wait_seconds: Optional[int] = None) -> Execution:
        """Client.get, awaited."""
        return await self._run(self.sync.get, execution_id, wait_seconds=wait_seconds)

    async def wait(self, execution_id: str, timeout: float = 60.0) -> Execution:
        """Client.wait, awaited."""
        return await self._run(self.sync.wait, execution_id, timeout)

    async def list_executions(self, *, status: Optional[str] = None, kind: Optional[str] = None,
                              queue: Optional[str] = None, dedup_key: Optional[str] = None,
                              schedule: Optional[str] = None, parent_id: Optional[str] = None,
                              id_prefix: Optional[str] = None,
                              limit: Optional[int] = None, cursor: Optional[str] = None) -> Page:
        """Client.list_executions, awaited."""
        return await self._run(
            self.sync.list_executions, status=status, kind=kind, queue=queue, dedup_key=dedup_key,
            schedule=schedule, parent_id=parent_id, id_prefix=id_prefix, limit=limit, cursor=cursor)

    async def children(self, execution_id: str) -> List[Execution]:
        """Client.children, awaited."""
        return await self._run(self.sync.children, execution_id)

    async def execution_pages(self, **filters: Any) -> AsyncIterator[Page]:
        """Client.execution_pages, awaited (each item in a thread)."""
        it = iter(self.sync.execution_pages(**filters))
        while True:
            item = await self._run(next, it, _END)
            if item is _END:
                return
            yield item

    async def iter_executions(self, **filters: Any) -> AsyncIterator[Execution]:
        """Client.iter_executions, awaited (each item in a thread)."""
        it = iter(self.sync.iter_executions(**filters))
        while True:
            item = await self._run(next, it, _END)
            if item is _END:
                return
            yield item

    async def cancel(self, execution_id: str) -> Execution:
        """Client.cancel, awaited."""
        return await self._run(self.sync.cancel, execution_id)

    async def delete(self, execution_id: str, *, force: bool = False) -> None:
        """Client.delete, awaited."""
        return await self._run(self.sync.delete, execution_id, force=force)

    async def attempts(self, execution_id: str) -> List[Attempt]:
        """Client.attempts, awaited."""
        return await self._run(self.sync.attempts, execution_id)

    async def steps_page(self, execution_id: str, *, limit: Optional[int] = None,
                         cursor: Optional[str] = None) -> Page:
        """Client.steps_page, awaited."""
        return await self._run(self.sync.steps_page, execution_id, limit=limit, cursor=cursor)

    async def steps(self, execution_id: str) -> List[Step]:
        """Client.steps, awaited."""
        return await self._run(self.sync.steps, execution_id)

    async def signal(self, execution_id: str, name: str, data: JSON = None, *,
                     idempotency_key: Optional[str] = None) -> SignalResponse:
        """Client.signal, awaited."""
        return await self._run(
            self.sync.signal, execution_id, name, data, idempotency_key=idempotency_key)

    async def retry(self, execution_id: str) -> Execution:
        """Client.retry, awaited."""
        return await self._run(self.sync.retry, execution_id)

    async def stream_ticket(self, execution_id: str) -> StreamTicket:
        """Client.stream_ticket, awaited."""
        return await self._run(self.sync.stream_ticket, execution_id)

    async def events(self, execution_id: str, *, ticket: Optional[str] = None) -> AsyncIterator[Tuple[str, JSON]]:
        """Client.events, awaited (each item in a thread)."""
        it = iter(self.sync.events(execution_id, ticket=ticket))
        while True:
            item = await self._run(next, it, _END)
            if item is _END:
                return
            yield item

    async def put_schedule(self, name: str, schedule: Optional[Mapping[str, Any]] = None, **fields: Any) -> Schedule:
        """Client.put_schedule, awaited."""
        return await self._run(self.sync.put_schedule, name, schedule, **fields)

    async def get_schedule(self, name: str) -> Schedule:
        """Client.get_schedule, awaited."""
        return await self._run(self.sync.get_schedule, name)

    async def list_schedules(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Page:
        """Client.list_schedules, awaited."""
        return await self._run(self.sync.list_schedules, limit=limit, cursor=cursor)

    async def schedule_pages(self, **kw: Any) -> AsyncIterator[Page]:
        """Client.schedule_pages, awaited (each item in a thread)."""
        it = iter(self.sync.schedule_pages(**kw))
        while True:
            item = await self._run(next, it, _END)
            if item is _END:
                return
            yield item

    async def delete_schedule(self, name: str) -> None:
        """Client.delete_schedule, awaited."""
        return await self._run(self.sync.delete_schedule, name)

    async def trigger_schedule(self, name: str, *, idempotency_key: Optional[str] = None) -> Execution:
        """Client.trigger_schedule, awaited."""
        return await self._run(self.sync.trigger_schedule, name, idempotency_key=idempotency_key)

    async def pause_schedule(self, name: str) -> Schedule:
        """Client.pause_schedule, awaited."""
        return await self._run(self.sync.pause_schedule, name)

    async def resume_schedule(self, name: str) -> Schedule:
        """Client.resume_schedule, awaited."""
        return await self._run(self.sync.resume_schedule, name)

    async def publish(self, name: str, data: JSON = None, *, key: Optional[str] = None,
                      idempotency_key: Optional[str] = None) -> PublishResponse:
        """Client.publish, awaited."""
        return await self._run(self.sync.publish, name, data, key=key, idempotency_key=idempotency_key)

    async def put_subscription(self, name: str, subscription: Optional[Mapping[str, Any]] = None,
                               **fields: Any) -> Subscription:
        """Client.put_subscription, awaited."""
        return await self._run(self.sync.put_subscription, name, subscription, **fields)

    async def get_subscription(self, name: str) -> Subscription:
        """Client.get_subscription, awaited."""
        return await self._run(self.sync.get_subscription, name)

    async def list_subscriptions(self) -> List[Subscription]:
        """Client.list_subscriptions, awaited."""
        return await self._run(self.sync.list_subscriptions)

    async def delete_subscription(self, name: str) -> None:
        """Client.delete_subscription, awaited."""
        await self._run(self.sync.delete_subscription, name)

    async def put_rate_limit(self, key: str, rate: int, per_seconds: int, burst: Optional[int] = None) -> RateLimit:
        """Client.put_rate_limit, awaited."""
        return await self._run(self.sync.put_rate_limit, key, rate, per_seconds, burst)

    async def get_rate_limit(self, key: str) -> RateLimit:
        """Client.get_rate_limit, awaited."""
        return await self._run(self.sync.get_rate_limit, key)

    async def delete_rate_limit(self, key: str) -> RateLimit:
        """Client.delete_rate_limit, awaited."""
        return await self._run(self.sync.delete_rate_limit, key)

    async def claim(self, worker_id: str, *, kinds: Optional[Sequence[str]] = None,
                    queues: Optional[Sequence[str]] = None, max: Optional[int] = None,
                    lease_seconds: Optional[int] = None, wait_seconds: Optional[int] = None) -> List[Lease]:
        """Client.claim, awaited."""
        return await self._run(
            self.sync.claim, worker_id, kinds=kinds, queues=queues, max=max,
            lease_seconds=lease_seconds, wait_seconds=wait_seconds)

    async def heartbeat(self, execution_id: str, lease_token: str, *, lease_seconds: Optional[int] = None) -> HeartbeatResponse:
        """Client.heartbeat, awaited."""
        return await self._run(
            self.sync.heartbeat, execution_id, lease_token, lease_seconds=lease_seconds)

    async def complete(self, execution_id: str, lease_token: str, result: JSON = None) -> Execution:
        """Client.complete, awaited."""
        return await self._run(self.sync.complete, execution_id, lease_token, result)

    async def fail(self, execution_id: str, lease_token: str, error: str, *, retry: Optional[bool] = None,
                   retry_after_seconds: Optional[int] = None) -> Execution:
        """Client.fail, awaited."""
        return await self._run(
            self.sync.fail, execution_id, lease_token, error, retry=retry,
            retry_after_seconds=retry_after_seconds)

    async def record_step(self, execution_id: str, lease_token: str, name: str, result: JSON = None, *,
                          started_at: Optional[TimeLike] = None) -> StepRecorded:
        """Client.record_step, awaited."""
        return await self._run(
            self.sync.record_step, execution_id, lease_token, name, result, started_at=started_at)

    async def suspend(self, execution_id: str, lease_token: str, step: str, *, until: Optional[TimeLike] = None,
                      signal: Optional[str] = None, children: Optional[str] = None, count: Optional[int] = None,
                      event: Optional[str] = None, key: Optional[str] = None, since: Optional[TimeLike] = None,
                      timeout_seconds: Optional[int] = None) -> Execution:
        """Client.suspend, awaited."""
        return await self._run(
            self.sync.suspend, execution_id, lease_token, step, until=until, signal=signal, children=children,
            count=count, event=event, key=key, since=since, timeout_seconds=timeout_seconds)

    async def spawn_children(self, execution_id: str, lease_token: str, step: str,
                             items: Sequence[Mapping[str, Any]], *, on_parent_end: Optional[str] = None) -> Spawned:
        """Client.spawn_children, awaited."""
        return await self._run(
            self.sync.spawn_children, execution_id, lease_token, step, items, on_parent_end=on_parent_end)

    async def create_tenant(self, name: str, *, max_inflight: Optional[int] = None,
                            dedup_ttl_seconds: Optional[int] = None,
                            retention_seconds: Optional[int] = None,
                            max_stored_bytes: Optional[int] = None,
                            event_retention_seconds: Optional[int] = None) -> TenantCreated:
        """Client.create_tenant, awaited."""
        return await self._run(
            self.sync.create_tenant, name, max_inflight=max_inflight,
            dedup_ttl_seconds=dedup_ttl_seconds, retention_seconds=retention_seconds,
            max_stored_bytes=max_stored_bytes, event_retention_seconds=event_retention_seconds)

    async def get_tenant(self, name: str) -> Tenant:
        """Client.get_tenant, awaited."""
        return await self._run(self.sync.get_tenant, name)

    async def update_tenant(self, name: str, **fields: Any) -> Tenant:
        """Client.update_tenant, awaited."""
        return await self._run(self.sync.update_tenant, name, **fields)

    async def delete_tenant(self, name: str, *, force: bool = False) -> None:
        """Client.delete_tenant, awaited."""
        return await self._run(self.sync.delete_tenant, name, force=force)

    async def create_key(self, tenant: str) -> APIKey:
        """Client.create_key, awaited."""
        return await self._run(self.sync.create_key, tenant)

    async def list_keys(self, tenant: str) -> List[APIKeyInfo]:
        """Client.list_keys, awaited."""
        return await self._run(self.sync.list_keys, tenant)

    async def delete_key(self, tenant: str, key_id: str) -> None:
        """Client.delete_key, awaited."""
        return await self._run(self.sync.delete_key, tenant, key_id)

    async def ready(self) -> bool:
        """Client.ready, awaited."""
        return await self._run(self.sync.ready)
