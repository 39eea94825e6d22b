// Typed errors: one class per problem `code` of latch's HTTP API (api/problem.go).
//
// Every error answer of the API is an RFC 9457 problem document whose `code`
// is stable; errorFor maps it onto the classes below, so callers branch with
// `err instanceof DedupKeyReused` (or on `err.code`) instead of comparing strings.

import type { Execution, Problem } from "./types.js";

/**
 * An error answer of the API (or, as TransportError, no answer at all).
 *
 * code: the problem's `code` ("quota_exceeded"), status: the HTTP status (0
 * when no answer came), detail: the problem's `detail`, for people.
 * retryAfter: the seconds of a Retry-After header (or of a batch slot's
 * `retry_after_seconds`), else null. problem: the whole document.
 */
export class LatchError extends Error {
  static readonly codeName: string = "";
  readonly code: string;
  readonly status: number;
  readonly detail: string;
  readonly title: string;
  readonly retryAfter: number | null;
  readonly problem: Partial<Problem> & Record<string, unknown>;

  constructor(
    code: string,
    status: number,
    detail = "",
    opts: { title?: string; retryAfter?: number | null; problem?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(detail ? `${code}: ${detail}` : code, opts.cause !== undefined ? { cause: opts.cause } : undefined);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.detail = detail;
    this.title = opts.title ?? "";
    this.retryAfter = opts.retryAfter ?? null;
    this.problem = opts.problem ?? {};
  }
}

/** No answer: the connection failed or timed out (after the retries). */
export class TransportError extends LatchError {
  static override readonly codeName = "transport_error";
}

/**
 * Client.wait ran out of time before the execution ended (no error of the
 * server: status 0). `execution` is the execution as last read, still not
 * terminal.
 */
export class Unfinished extends LatchError {
  static override readonly codeName = "unfinished";
  readonly execution: Execution;

  constructor(execution: Execution, timeout: number) {
    super(Unfinished.codeName, 0, `execution ${execution.execution_id} is still ${execution.status} after ${timeout}s`);
    this.execution = execution;
  }
}

/** 400: a field, header or query parameter breaks its rule; the detail names it. */
export class InvalidRequest extends LatchError {
  static override readonly codeName = "invalid_request";
}
/**
 * 400: the schedule's timing ticks more often than the server allows
 * (`latch serve --min-schedule-interval`). Nothing was written.
 */
export class ScheduleTooFrequent extends LatchError {
  static override readonly codeName = "schedule_too_frequent";
}
/** 401: no key, or a key that is unknown or revoked. */
export class Unauthorized extends LatchError {
  static override readonly codeName = "unauthorized";
}
/** 401: a stream ticket that is unknown, expired, used or for another execution. */
export class InvalidTicket extends LatchError {
  static override readonly codeName = "invalid_ticket";
}
/** 403: a tenant key called an admin endpoint, or named another tenant. */
export class Forbidden extends LatchError {
  static override readonly codeName = "forbidden";
}
/** 403: the key's tenant is disabled. */
export class TenantDisabled extends LatchError {
  static override readonly codeName = "tenant_disabled";
}
/** 404: no such resource for this caller, or no such endpoint. */
export class NotFound extends LatchError {
  static override readonly codeName = "not_found";
}
/** 405: the path exists, the method does not. */
export class MethodNotAllowed extends LatchError {
  static override readonly codeName = "method_not_allowed";
}
/** Base of the 409 codes. */
export class Conflict extends LatchError {}
/** 409: deleting an execution, or a tenant, that still has work in flight. */
export class NotTerminal extends Conflict {
  static override readonly codeName = "not_terminal";
}
/** 409: the lease token is not the execution's current, unexpired lease: drop the attempt. */
export class LeaseLost extends Conflict {
  static override readonly codeName = "lease_lost";
}
/** 409: a new signal to an execution that has ended. */
export class NotActive extends Conflict {
  static override readonly codeName = "not_active";
}
/** 409: retrying an execution that is not failed. */
export class NotFailed extends Conflict {
  static override readonly codeName = "not_failed";
}
/**
 * 409: a new step name (job.step, or a sleep or wait under a new name) when the
 * execution's journal holds as many steps as it may (10,000). Nothing was
 * recorded, and repeating cannot help: the Worker fails the attempt without a
 * retry when a handler lets it through.
 */
export class TooManySteps extends Conflict {
  static override readonly codeName = "too_many_steps";
}
/**
 * 409: a new step (job.step, the outcome of a sleep or wait, or a signal's
 * data ending a wait) would make the execution's journal larger than it may
 * be (64 MiB of step names and results). Nothing was written, and repeating
 * cannot help: the Worker fails the attempt without a retry when a handler
 * lets it through.
 */
export class JournalTooLarge extends Conflict {
  static override readonly codeName = "journal_too_large";
}
/**
 * 409: the signal would be kept for a later wait, and the execution keeps as
 * many signals no wait has consumed as it may (1,000). Nothing was written; a
 * wait of the flow that consumes one makes room.
 */
export class SignalBufferFull extends Conflict {
  static override readonly codeName = "signal_buffer_full";
}
/**
 * 409: the tenant's stored bytes would pass its storage budget
 * (max_stored_bytes). Nothing was written; waiting does not help until
 * executions are deleted or pruned, or the budget is raised. The Worker fails
 * an attempt whose result is refused so, without a retry.
 */
export class StorageExceeded extends Conflict {
  static override readonly codeName = "storage_exceeded";
}
/**
 * 409: a spawn of more than 1,000 children, or past 10,000 children of one
 * execution or 16 levels of spawns. Nothing was written, and repeating cannot
 * help.
 */
export class TooManyChildren extends Conflict {
  static override readonly codeName = "too_many_children";
}
/** 409: a new subscription past the tenant's 100. Nothing was written; delete one first (replacing one is allowed). */
export class TooManySubscriptions extends Conflict {
  static override readonly codeName = "too_many_subscriptions";
}
/** 409: creating a tenant whose name is taken. */
export class TenantExists extends Conflict {
  static override readonly codeName = "tenant_exists";
}
/** 409: the tenant has as many schedules as it may. */
export class ScheduleLimit extends Conflict {
  static override readonly codeName = "schedule_limit";
}
/** 413 (400 in a batch slot): a body, payload or result over its limit. */
export class PayloadTooLarge extends LatchError {
  static override readonly codeName = "payload_too_large";
}
/** 415: the body is not application/json in UTF-8. */
export class UnsupportedMediaType extends LatchError {
  static override readonly codeName = "unsupported_media_type";
}
/** 422: the dedup key maps to an execution submitted with another kind or payload. */
export class DedupKeyReused extends LatchError {
  static override readonly codeName = "dedup_key_reused";
}
/** 429: admitting would take the tenant's inflight above max_inflight. */
export class QuotaExceeded extends LatchError {
  static override readonly codeName = "quota_exceeded";
}
/** 429: the tenant holds as many streams, long polls or stream tickets as it may. */
export class TooManyRequests extends LatchError {
  static override readonly codeName = "too_many_requests";
}
/** 431: the request's headers exceed the server's limit. */
export class HeadersTooLarge extends LatchError {
  static override readonly codeName = "headers_too_large";
}
/** 500: a fault of the server. */
export class InternalError extends LatchError {
  static override readonly codeName = "internal";
}
/** 503: the store does not answer, the request ran out of time, or the body budget is spent. */
export class Unavailable extends LatchError {
  static override readonly codeName = "unavailable";
}

type ErrorClass = typeof LatchError;

/** The class of each problem code the server defines (api/problem.go). */
export const ERRORS: Readonly<Record<string, ErrorClass>> = Object.freeze(
  Object.fromEntries(
    [
      InvalidRequest, Unauthorized, InvalidTicket, Forbidden, TenantDisabled, NotFound, MethodNotAllowed,
      NotTerminal, LeaseLost, NotActive, NotFailed, TooManySteps, JournalTooLarge, SignalBufferFull, StorageExceeded,
      TooManyChildren, TooManySubscriptions, TenantExists, ScheduleLimit, ScheduleTooFrequent, PayloadTooLarge,
      UnsupportedMediaType, DedupKeyReused, QuotaExceeded, TooManyRequests, HeadersTooLarge, InternalError,
      Unavailable,
    ].map((cls) => [cls.codeName, cls as ErrorClass]),
  ),
);

/** The typed error of a problem document (a plain LatchError for an unknown code). */
export function errorFor(
  status: number,
  problem: unknown,
  retryAfter: number | null = null,
  fallbackDetail = "",
): LatchError {
  const p = (problem !== null && typeof problem === "object" && !Array.isArray(problem)
    ? problem
    : {}) as Record<string, unknown>;
  const code = typeof p.code === "string" && p.code ? p.code : `http_${status}`;
  const detail = typeof p.detail === "string" ? p.detail : fallbackDetail;
  const title = typeof p.title === "string" ? p.title : "";
  let ra = retryAfter;
  if (ra === null && typeof p.retry_after_seconds === "number") ra = p.retry_after_seconds;
  const cls = Object.prototype.hasOwnProperty.call(ERRORS, code) ? ERRORS[code]! : LatchError;
  return new cls(code, status, detail, { title, retryAfter: ra, problem: p });
}
