// The objects of latch's HTTP API (docs/api.md), as api/openapi.json gives
// them. Each interface named like a schema of that document is checked
// against it by test/types.test.mjs: the same fields, the required ones not
// optional, and `| null` exactly where the schema allows null.

/** Any JSON value. */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };

export type ExecutionStatus =
  | "scheduled" | "queued" | "running" | "suspended" | "succeeded" | "failed" | "cancelled" | "skipped";

/** The statuses an execution never leaves. */
export const TERMINAL: ReadonlySet<ExecutionStatus> = new Set(["succeeded", "failed", "cancelled", "skipped"]);

export type ProblemCode =
  | "unauthorized" | "invalid_ticket" | "forbidden" | "tenant_disabled" | "not_found" | "invalid_request"
  | "payload_too_large" | "unsupported_media_type" | "quota_exceeded" | "too_many_requests"
  | "dedup_key_reused" | "tenant_exists" | "schedule_limit" | "not_terminal" | "lease_lost" | "not_active"
  | "not_failed" | "too_many_steps" | "journal_too_large" | "signal_buffer_full" | "method_not_allowed" | "internal"
  | "unavailable" | "headers_too_large" | "storage_exceeded" | "schedule_too_frequent" | "too_many_children"
  | "too_many_subscriptions";

/** An RFC 9457 problem document: every error answer. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ProblemCode;
  /** Only on a batch slot answered 429. */
  retry_after_seconds?: number;
}

/** One requested run of a job kind (docs/api.md, "Executions"). */
export interface Execution {
  execution_id: string;
  tenant: string;
  kind: string;
  queue: string;
  priority: number;
  status: ExecutionStatus;
  dedup_key: string | null;
  concurrency_key: string | null;
  concurrency_limit: number | null;
  rate_key: string | null;
  payload: JSONValue;
  result: JSONValue;
  error: string | null;
  attempt: number;
  max_attempts: number;
  timeout_seconds: number;
  schedule: string | null;
  created_at: string;
  run_at: string;
  started_at: string | null;
  finished_at: string | null;
  cancel_requested: boolean;
  wake_at: string | null;
  waiting_for: string | null;
  /** The execution that spawned this one, and its spawn step; null for one no one spawned. */
  parent_id: string | null;
  parent_step: string | null;
  /** How many submits (and schedule fires) its dedup key answered with this execution. */
  dedup_hits: number;
  last_dedup_hit_at: string | null;
  /** The W3C traceparent its runs continue; absent when it has none. */
  trace_parent?: string;
}

/** The answer to a submit: the execution, and whether the dedup key already mapped to it. */
export interface SubmitResponse extends Execution {
  deduplicated: boolean;
}

/** One leased execution of a claim's answer. */
export interface Lease {
  execution_id: string;
  lease_token: string;
  kind: string;
  payload: JSONValue;
  attempt: number;
  lease_expires_at: string;
  tenant: string;
  queue: string;
  max_attempts: number;
  timeout_seconds: number;
  /**
   * The flow's journal at the claim: step name → recorded result, its first
   * steps, the leases of a claim up to 1 MiB together.
   */
  steps: { [name: string]: JSONValue };
  /** false when the journal holds more steps than `steps` (read them with Client.steps). */
  steps_complete: boolean;
  /** The execution's W3C traceparent, absent when it has none: a run's span continues it. */
  trace_parent?: string;
}

export interface HeartbeatResponse {
  lease_expires_at: string;
  cancel_requested: boolean;
}

export interface ExecutionList {
  items: Execution[];
  next_cursor: string | null;
}

export interface Tenant {
  name: string;
  max_inflight: number;
  inflight: number;
  dedup_ttl_seconds: number;
  retention_seconds: number;
  disabled: boolean;
  /** The storage budget in bytes, and what the tenant's executions hold of it. */
  max_stored_bytes: number;
  stored_bytes: number;
  /** How long the tenant's events are kept after their publish. */
  event_retention_seconds: number;
}

export interface TenantCreated {
  name: string;
  key_id: string;
  api_key: string;
  max_inflight: number;
  dedup_ttl_seconds: number;
  retention_seconds: number;
  max_stored_bytes: number;
  event_retention_seconds: number;
}

export interface APIKey {
  key_id: string;
  api_key: string;
}

export interface APIKeyInfo {
  key_id: string;
  created_at: string;
  last_used_at: string | null;
}

export interface Schedule {
  name: string;
  tenant: string;
  cron: string | null;
  every: string | null;
  timezone: string;
  kind: string;
  payload: JSONValue;
  queue: string;
  priority: number;
  max_attempts: number;
  timeout_seconds: number;
  rate_key: string | null;
  overlap: "skip" | "queue" | "allow";
  catchup: "none" | "one";
  enabled: boolean;
  next_run_at: string | null;
  last_run_at: string | null;
  last_execution_id: string | null;
  running: boolean;
  created_at: string;
  updated_at: string;
}

/** The body of PUT /api/schedules/{name}: a Schedule's writable fields (a GET answer may be sent back). */
export interface ScheduleRequest {
  name?: string;
  cron?: string | null;
  every?: string | null;
  timezone?: string;
  kind: string;
  payload?: JSONValue;
  queue?: string;
  priority?: number;
  max_attempts?: number;
  timeout_seconds?: number;
  rate_key?: string | null;
  overlap?: "skip" | "queue" | "allow";
  catchup?: "none" | "one";
  enabled?: boolean;
  tenant?: string;
  next_run_at?: string | null;
  last_run_at?: string | null;
  last_execution_id?: string | null;
  running?: boolean;
  created_at?: string;
  updated_at?: string;
}

export interface RateLimit {
  key: string;
  rate: number;
  per_seconds: number;
  burst: number;
  created_at: string;
  updated_at: string;
}

export interface StepRecorded {
  name: string;
  result: JSONValue;
  recorded: boolean;
}

/** One entry of an execution's journal. */
export interface Step {
  name: string;
  result: JSONValue;
  started_at: string | null;
  recorded_at: string;
  attempt: number;
}

export type RunOutcome = "succeeded" | "failed" | "cancelled" | "released" | "suspended" | "expired";

/** One run of an execution (a lease a claim gave). */
export interface Attempt {
  attempt: number;
  worker_id: string;
  claimed_at: string;
  started_at: string;
  ended_at: string | null;
  outcome: RunOutcome | null;
  error: string | null;
}

export interface StreamTicket {
  ticket: string;
  expires_in: number;
}

export interface SignalResponse {
  delivered: boolean;
}

/** One child of a spawn's answer: its id and its status then. */
export interface ChildRef {
  execution_id: string;
  status: ExecutionStatus;
}

/** The answer to a spawn: `recorded` is false when the step was recorded before (nothing admitted). */
export interface Spawned {
  step: string;
  recorded: boolean;
  /** The spawn's children in item order. */
  children: ChildRef[];
}

/**
 * One child as a wait for children saw it: terminal for the children that
 * ended, another status for those a count or a timeout did not wait for,
 * "deleted" for a child deleted meanwhile. `result` and `error` are null
 * when the child has none.
 */
export interface ChildOutcome {
  execution_id: string;
  status: ExecutionStatus | "deleted";
  result: JSONValue;
  error: string | null;
}

/** What a wait for children records: every child of the spawn, in spawn order. */
export interface FanIn {
  children: ChildOutcome[];
  timed_out: boolean;
  /** true when the children's results did not all fit in the journal (read the rest with Client.get). */
  results_omitted?: boolean;
}

/** What a child gets when its parent ends: cancelled (the default) or left to run. */
export type OnParentEnd = "cancel" | "abandon";

/**
 * One enabled subscription's start in a publish's answer: `execution_id`, the
 * execution it started, or `error`, the refusal that kept it from starting.
 */
export interface EventStart {
  subscription: string;
  execution_id?: string;
  error?: "quota_exceeded" | "storage_exceeded";
}

/** The answer to a publish. */
export interface PublishResponse {
  event_id: string;
  /** How many executions waiting for the event it resumed. */
  resumed: number;
  /** One entry per enabled subscription on the name, in subscription name order. */
  started: EventStart[];
}

/**
 * An event as a wait for it records it, and as the payload of an execution
 * a subscription starts. `data` null and `data_omitted` true when the event
 * did not fit in the journal.
 */
export interface EventRecord {
  event_id: string;
  name: string;
  key: string | null;
  data: JSONValue;
  published_at: string;
  data_omitted?: boolean;
}

/** A tenant's subscription: each event named `event` starts an execution of `kind`. */
export interface Subscription {
  name: string;
  tenant: string;
  event: string;
  kind: string;
  queue: string;
  priority: number;
  max_attempts: number;
  timeout_seconds: number;
  concurrency_key: string | null;
  concurrency_limit: number | null;
  enabled: boolean;
  created_at: string;
  updated_at: string;
}

/** The body of PUT /api/subscriptions/{name}: a Subscription's writable fields (a GET answer may be sent back). */
export interface SubscriptionRequest {
  name?: string;
  event: string;
  kind: string;
  queue?: string;
  priority?: number;
  max_attempts?: number;
  timeout_seconds?: number;
  concurrency_key?: string | null;
  concurrency_limit?: number | null;
  enabled?: boolean;
  tenant?: string;
  created_at?: string;
  updated_at?: string;
}

/** The fields of a submit (docs/api.md, "Submit"), as options of Client.submit and items of submitBatch. */
export interface SubmitOptions {
  dedup_key?: string;
  queue?: string;
  priority?: number;
  run_at?: string | Date;
  delay_seconds?: number;
  max_attempts?: number;
  timeout_seconds?: number;
  concurrency_key?: string;
  concurrency_limit?: number;
  rate_key?: string;
}

export interface BatchSubmitItem extends SubmitOptions {
  kind: string;
  payload?: JSONValue;
}

/** A child of a spawn: a submit without dedup_key (the spawn step makes it once-only). */
export type ChildItem = Omit<BatchSubmitItem, "dedup_key">;
