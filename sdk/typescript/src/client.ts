// The client of latch's HTTP API (docs/api.md), on the platform's fetch: no
// runtime dependencies, for Node >= 20 and browsers.

import { errorFor, LatchError, TransportError, Unfinished } from "./errors.js";
import type {
  APIKey, APIKeyInfo, Attempt, BatchSubmitItem, ChildItem, Execution, ExecutionList, ExecutionStatus,
  HeartbeatResponse, JSONValue, Lease, OnParentEnd, PublishResponse, RateLimit, Schedule, ScheduleRequest,
  SignalResponse, Spawned, Step, StepRecorded, StreamTicket, SubmitOptions, SubmitResponse, Subscription,
  SubscriptionRequest, Tenant, TenantCreated,
} from "./types.js";
import { TERMINAL } from "./types.js";

/**
 * How safe requests are retried: on connection errors, 429 and 503.
 *
 * Waits grow from `base` seconds, doubling per try up to `cap`, each a random
 * point in the upper half (jitter); a Retry-After header is honoured, up to
 * `maxRetryAfter` seconds. `maxRetries` 0 turns retries off. `sleep` waits
 * the seconds given (tests replace it).
 */
export interface RetryPolicy {
  maxRetries: number;
  base: number;
  cap: number;
  maxRetryAfter: number;
  sleep: (seconds: number, signal?: AbortSignal) => Promise<void>;
}

export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({
  maxRetries: 4,
  base: 0.2,
  cap: 5,
  maxRetryAfter: 30,
  sleep: sleep,
});

/** The wait before retry number `attempt` (0 for the first): the upper half of min(cap, base·2^attempt). */
export function backoff(policy: Pick<RetryPolicy, "base" | "cap">, attempt: number): number {
  const d = Math.min(policy.cap, policy.base * 2 ** attempt);
  return d / 2 + Math.random() * (d / 2);
}

export interface ClientOptions {
  /** The server, "http://127.0.0.1:8080"; "" in a browser page means the page's own origin. */
  baseUrl: string;
  /** A tenant's key (or the admin key, with `tenant` naming the tenant it acts for). */
  key?: string;
  /** Sent as Latch-Tenant: the tenant the admin key acts for. */
  tenant?: string;
  /** Seconds a request may take, on top of any wait it holds (a long poll). Default 30. */
  timeout?: number;
  retry?: Partial<RetryPolicy>;
  /** Sent as User-Agent where the platform allows it (not in browsers). */
  userAgent?: string;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /**
   * The W3C traceparent every request sends, so that what it submits joins
   * the caller's trace: a value, or a function asked at each request (none
   * when it answers undefined, null or ""), to read it from your own
   * context, e.g. OpenTelemetry's `propagation.inject(context.active(), carrier)`.
   * A request's own `traceparent` option wins. An invalid value throws a TypeError.
   */
  traceparent?: string | (() => string | null | undefined);
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | null | undefined>;
  headers?: Record<string, string>;
  /** The request is safe to repeat: retried per the retry policy. */
  retry?: boolean;
  /** Seconds the server may hold the request (a long poll), added to the timeout. */
  hold?: number;
  /** A body sent as it is (with the headers given) instead of `body` as JSON. */
  rawBody?: BodyInit;
  /** Latch-Tenant for this request (default: the client's). */
  tenant?: string;
  /** Aborts the request, and the waits between its retries. */
  signal?: AbortSignal;
  /** The W3C traceparent of this request (default: the client's `traceparent`). */
  traceparent?: string;
}

export interface Response<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
}

/** One page of a listing: its items and the cursor of the next page (null at the end). */
export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** One slot of a batch answer: status 201 (new), 200 (deduplicated) or an error. */
export interface BatchResult {
  status: number;
  execution: Execution | null;
  error: LatchError | null;
}

export interface ListFilters {
  status?: ExecutionStatus;
  kind?: string;
  queue?: string;
  dedup_key?: string;
  schedule?: string;
  /** The children of this execution, in spawn order. */
  parent_id?: string;
  /** Executions whose id starts with this (8 or more characters, lower case). */
  id_prefix?: string;
  limit?: number;
  cursor?: string;
}

export interface ClaimOptions {
  kinds?: string[];
  queues?: string[];
  max?: number;
  lease_seconds?: number;
  wait_seconds?: number;
  signal?: AbortSignal;
}

/** An event of an execution's stream: "status" with the execution, or "error" with a problem. */
export interface StreamEvent {
  event: string;
  data: unknown;
}

export interface WatchOptions {
  /** Ends the watch (the iterator throws the signal's reason). */
  signal?: AbortSignal;
  /**
   * "eventsource": a stream ticket, then an EventSource on ?ticket= (what a
   * browser must do: an EventSource cannot send the key); "fetch": a
   * streamed fetch with the Authorization header. Default: "eventsource"
   * where the platform has EventSource, else "fetch".
   */
  transport?: "eventsource" | "fetch";
}

const NO_BODY: unique symbol = Symbol("no body");

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * Whether `value` is a W3C traceparent the server keeps: lower-case hex,
 * trace and parent ids not all zero, version not ff (a version 00 value has
 * nothing after its flags).
 */
export function validTraceparent(value: unknown): value is string {
  const m = typeof value === "string" ? TRACEPARENT.exec(value) : null;
  if (!m) return false;
  const [, version, traceId, parentId, , rest] = m;
  if (version === "ff" || (version === "00" && rest !== undefined)) return false;
  return !/^0+$/.test(traceId!) && !/^0+$/.test(parentId!);
}

function checkTraceparent(value: string | null | undefined): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (!validTraceparent(value)) {
    throw new TypeError(`not a W3C traceparent: ${JSON.stringify(value)} (want 00-<32 hex>-<16 hex>-<2 hex>)`);
  }
  return value;
}

/** A fresh dedup or idempotency key (a random UUID). */
export function newKey(): string {
  return crypto.randomUUID();
}

/** RFC 3339 in UTC. */
export function formatTime(t: string | Date): string {
  return typeof t === "string" ? t : t.toISOString();
}

/** Waits the seconds given; rejects with the signal's reason when it aborts. */
export function sleep(seconds: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, seconds * 1000));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * A client of one latch server. Safe to share between concurrent tasks.
 *
 * Requests that are safe to repeat are retried per `retry`: GETs, PUTs,
 * cancels, POSTs that carry a dedup or idempotency key, and the worker calls
 * fenced by a lease token (heartbeat, step, complete, fail, suspend: a repeat
 * of one that was done answers LeaseLost and changes nothing). Submits always
 * carry a key (a fresh UUID when the caller gives none), so a submit whose
 * answer was lost is sent again without ever making a second execution.
 * Claims, retries, deletes, tenant and key creation and signals without a key
 * are sent once.
 *
 * Fields of request bodies keep the API's names (`dedup_key`, `max_attempts`);
 * options of the client itself are camelCase (`idempotencyKey`, `waitSeconds`).
 */
export class Client {
  readonly baseUrl: string;
  readonly key: string;
  readonly tenant: string | undefined;
  readonly timeout: number;
  readonly retryPolicy: RetryPolicy;
  readonly userAgent: string;
  private readonly fetchFn: typeof fetch;
  private readonly options: ClientOptions;

  constructor(opts: ClientOptions) {
    if (typeof opts?.baseUrl !== "string") throw new TypeError("Client: baseUrl is required");
    if (typeof opts.traceparent === "string") checkTraceparent(opts.traceparent);
    this.options = { ...opts };
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.key = opts.key ?? "";
    this.tenant = opts.tenant;
    this.timeout = opts.timeout ?? 30;
    this.retryPolicy = { ...DEFAULT_RETRY, ...opts.retry };
    this.userAgent = opts.userAgent ?? "latch-client-typescript/0.1";
    const f = opts.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new TypeError("Client: no fetch on this platform; pass one");
    this.fetchFn = f.bind(globalThis);
  }

  /**
   * A client like this one whose requests send `traceparent` (undefined:
   * none): what a worker does for the calls under a lease, and what a
   * caller does to submit in its trace. An invalid value throws a TypeError.
   */
  withTraceparent(traceparent: string | undefined): Client {
    return new Client({ ...this.options, traceparent: checkTraceparent(traceparent) });
  }

  /** The traceparent the client's requests send now (its option's), undefined when none. */
  get traceparent(): string | undefined {
    const tp = this.options.traceparent;
    return checkTraceparent(typeof tp === "function" ? tp() : tp);
  }

  // ------------------------------------------------------------------ core

  private headers(tenant: string | undefined, extra?: Record<string, string>): Record<string, string> {
    const h: Record<string, string> = { Accept: "application/json" };
    if (isNode()) h["User-Agent"] = this.userAgent;
    if (this.key) h["Authorization"] = "Bearer " + this.key;
    const t = tenant ?? this.tenant;
    if (t) h["Latch-Tenant"] = t;
    return { ...h, ...extra };
  }

  private url(path: string, query?: RequestOptions["query"]): string {
    let url = this.baseUrl + path;
    if (query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) {
        if (v !== undefined && v !== null) q.set(k, String(v));
      }
      const s = q.toString();
      if (s) url += "?" + s;
    }
    return url;
  }

  /**
   * Sends one request; answers its status, decoded JSON (null when empty)
   * and headers. An error answer throws its LatchError subclass; no answer
   * throws TransportError (after the retries, when `retry` is set).
   */
  async request<T = unknown>(method: string, path: string, body: unknown = NO_BODY,
    opts: RequestOptions = {}): Promise<Response<T>> {
    const url = this.url(path, opts.query);
    const extra: Record<string, string> = {};
    let data: BodyInit | undefined;
    if (opts.rawBody !== undefined) {
      data = opts.rawBody;
    } else if (body !== NO_BODY) {
      data = JSON.stringify(body === undefined ? null : body);
      extra["Content-Type"] = "application/json";
    }
    const tp = opts.traceparent !== undefined ? checkTraceparent(opts.traceparent) : this.traceparent;
    if (tp) extra["traceparent"] = tp;
    const headers = this.headers(opts.tenant, { ...extra, ...opts.headers });
    const policy = this.retryPolicy;
    for (let attempt = 0; ; attempt++) {
      const timeout = AbortSignal.timeout((this.timeout + (opts.hold ?? 0)) * 1000);
      const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
      let res: globalThis.Response;
      let raw: string;
      try {
        res = await this.fetchFn(url, { method, headers, body: data, signal, redirect: "manual" });
        raw = await res.text();
      } catch (err) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (opts.retry && attempt < policy.maxRetries) {
          await policy.sleep(backoff(policy, attempt), opts.signal);
          continue;
        }
        const why = timeout.aborted ? `no answer within ${this.timeout + (opts.hold ?? 0)} s` : describe(err);
        throw new TransportError("transport_error", 0, `${method} ${path}: ${why}`, { cause: err });
      }
      if (res.status >= 200 && res.status < 300) {
        return { status: res.status, body: decode(raw) as T, headers: res.headers };
      }
      const ra = retryAfter(res.headers.get("Retry-After"));
      if (opts.retry && (res.status === 429 || res.status === 503) && attempt < policy.maxRetries) {
        await policy.sleep(ra !== null ? Math.min(ra, policy.maxRetryAfter) : backoff(policy, attempt), opts.signal);
        continue;
      }
      const problem = decode(raw);
      const isDoc = problem !== null && typeof problem === "object";
      const fallback = res.status === 0 || res.type === "opaqueredirect"
        ? "the server answered with a redirect, which the API never does"
        : raw.slice(0, 200) || res.statusText;
      throw errorFor(res.status, isDoc ? problem : null, ra, isDoc ? "" : fallback);
    }
  }

  private async call<T>(method: string, path: string, body: unknown = NO_BODY, opts: RequestOptions = {}): Promise<T> {
    return (await this.request<T>(method, path, body, opts)).body;
  }

  // ------------------------------------------------------------ executions

  /**
   * Submits an execution of kind; answers it with `deduplicated` (true when
   * the dedup key already mapped to it). `dedup_key` goes in the body,
   * `idempotencyKey` in the Idempotency-Key header (the same thing to the
   * server). With neither, a fresh UUID is the dedup key, so the retries of
   * this one call are one execution. `traceparent` (default: the client's)
   * is the W3C trace context the execution's runs continue.
   */
  async submit(kind: string, payload?: JSONValue,
    opts: SubmitOptions & { idempotencyKey?: string; tenant?: string; signal?: AbortSignal; traceparent?: string } = {}): Promise<SubmitResponse> {
    const { idempotencyKey, tenant, signal, traceparent, ...fields } = opts;
    const body = submitBody({ kind, payload, ...fields });
    const headers: Record<string, string> = {};
    if (idempotencyKey !== undefined) headers["Idempotency-Key"] = idempotencyKey;
    else if (body.dedup_key === undefined) body.dedup_key = newKey();
    return this.call("POST", "/api/executions", body, { headers, retry: true, tenant, signal, traceparent });
  }

  /**
   * Submits 1–1000 items in one request; answers a BatchResult per item, in
   * order. An item without a dedup_key gets a fresh UUID, so the request is
   * safe to retry.
   */
  async submitBatch(items: BatchSubmitItem[],
    opts: { tenant?: string; signal?: AbortSignal; traceparent?: string } = {}): Promise<BatchResult[]> {
    const body = {
      items: items.map((it) => {
        const b = submitBody(it);
        if (b.dedup_key === undefined || b.dedup_key === null) b.dedup_key = newKey();
        return b;
      }),
    };
    const ans = await this.call<{ items: Array<{ status: number; execution: Execution | null; error: unknown }> }>(
      "POST", "/api/executions/batch", body, { retry: true, ...opts });
    return ans.items.map((slot) => ({
      status: slot.status,
      execution: slot.execution ?? null,
      error: slot.error ? errorFor(slot.status, slot.error) : null,
    }));
  }

  /**
   * The execution; with waitSeconds (0–60) the server holds the answer until
   * it is terminal or the wait ends (a long poll).
   */
  get(id: string, opts: { waitSeconds?: number; signal?: AbortSignal } = {}): Promise<Execution> {
    return this.call("GET", "/api/executions/" + seg(id), NO_BODY, {
      query: { wait_seconds: opts.waitSeconds }, retry: true, hold: opts.waitSeconds ?? 0, signal: opts.signal,
    });
  }

  /**
   * Long-polls until the execution is terminal and answers it; rejects with
   * Unfinished (carrying the execution as last read) when `timeout` seconds
   * (default 60) pass first.
   */
  async wait(id: string, opts: { timeout?: number; signal?: AbortSignal } = {}): Promise<Execution> {
    const timeout = opts.timeout ?? 60;
    const deadline = Date.now() + timeout * 1000;
    for (;;) {
      const left = Math.max(0, Math.min(60, Math.floor((deadline - Date.now()) / 1000)));
      const e = await this.get(id, { waitSeconds: left, signal: opts.signal });
      if (TERMINAL.has(e.status)) return e;
      if (Date.now() >= deadline) throw new Unfinished(e, timeout);
    }
  }

  /** One page of the caller's executions, newest first. */
  listPage(filters: ListFilters = {}, opts: { signal?: AbortSignal } = {}): Promise<Page<Execution>> {
    return this.call<ExecutionList>("GET", "/api/executions", NO_BODY, {
      query: { ...filters }, retry: true, signal: opts.signal,
    });
  }

  /** Every page of listPage(filters), following the cursors. */
  pages(filters: ListFilters = {}, opts: { signal?: AbortSignal } = {}): AsyncGenerator<Page<Execution>> {
    return follow((cursor) => this.listPage({ ...filters, cursor }, opts), filters.cursor);
  }

  /** Every execution the filters find, page after page: `for await (const e of client.list({status: "failed"}))`. */
  async *list(filters: ListFilters = {}, opts: { signal?: AbortSignal } = {}): AsyncGenerator<Execution> {
    for await (const page of this.pages(filters, opts)) yield* page.items;
  }

  /**
   * Every child the execution spawned, in spawn order, each as it is now
   * (list with parent_id, page after page). Another tenant's execution has none.
   */
  async children(id: string, opts: { signal?: AbortSignal } = {}): Promise<Execution[]> {
    const out: Execution[] = [];
    for await (const e of this.list({ parent_id: id, limit: 500 }, opts)) out.push(e);
    return out;
  }

  /** Cancels: at once unless running; a running one ends when its worker stops. Retried: a repeat changes nothing. */
  cancel(id: string): Promise<Execution> {
    return this.call("POST", `/api/executions/${seg(id)}/cancel`, NO_BODY, { retry: true });
  }

  /** Deletes a terminal execution (NotTerminal otherwise); `force` deletes in any state. */
  async delete(id: string, opts: { force?: boolean } = {}): Promise<void> {
    await this.call("DELETE", "/api/executions/" + seg(id), NO_BODY, { query: { force: opts.force ? "true" : undefined } });
  }

  /** Every run of the execution, oldest first. */
  async attempts(id: string): Promise<Attempt[]> {
    return (await this.call<{ items: Attempt[] }>("GET", `/api/executions/${seg(id)}/attempts`, NO_BODY, { retry: true })).items;
  }

  /**
   * One page of the execution's journal, in record order: at most `limit`
   * steps (1-10000, the server's default 10000: every step), cut by the server's bound of
   * bytes; page on with next_cursor until it is null.
   */
  stepsPage(id: string, opts: { limit?: number; cursor?: string } = {}): Promise<Page<Step>> {
    return this.call("GET", `/api/executions/${seg(id)}/steps`, NO_BODY, { query: { ...opts }, retry: true });
  }

  /** The execution's whole journal, in record order, page after page. */
  async steps(id: string): Promise<Step[]> {
    const out: Step[] = [];
    for await (const page of follow((cursor) => this.stepsPage(id, { cursor }))) out.push(...page.items);
    return out;
  }

  /**
   * Sends the signal `name` with data; true when it resumed a waiting
   * execution, false when kept for a later wait. With idempotencyKey a repeat
   * changes nothing (and is retried safely).
   */
  async signal(id: string, name: string, data: JSONValue = null,
    opts: { idempotencyKey?: string; traceparent?: string } = {}): Promise<boolean> {
    const headers: Record<string, string> = {};
    if (opts.idempotencyKey !== undefined) headers["Idempotency-Key"] = opts.idempotencyKey;
    const ans = await this.call<SignalResponse>("POST", `/api/executions/${seg(id)}/signals/${seg(name)}`, { data },
      { headers, retry: opts.idempotencyKey !== undefined, traceparent: opts.traceparent });
    return Boolean(ans.delivered);
  }

  /** Queues a failed execution again, with its journal (NotFailed otherwise). */
  retry(id: string): Promise<Execution> {
    return this.call("POST", `/api/executions/${seg(id)}/retry`);
  }

  /** A one-use ticket ({ticket, expires_in}) for the execution's event stream. */
  streamTicket(id: string, opts: { signal?: AbortSignal } = {}): Promise<StreamTicket> {
    return this.call("POST", `/api/executions/${seg(id)}/stream-ticket`, NO_BODY, { signal: opts.signal });
  }

  /**
   * The execution's event stream over fetch: {event, data} pairs, "status"
   * with the execution, ending after the terminal one (or an "error" with a
   * problem). With `ticket` it is sent instead of the key.
   */
  async *events(id: string, opts: { ticket?: string; signal?: AbortSignal } = {}): AsyncGenerator<StreamEvent> {
    const url = this.url(`/api/executions/${seg(id)}/events`, { ticket: opts.ticket });
    const headers = opts.ticket !== undefined ? { Accept: "text/event-stream" }
      : this.headers(undefined, { Accept: "text/event-stream" });
    let res: globalThis.Response;
    try {
      res = await this.fetchFn(url, { headers, signal: opts.signal, redirect: "manual" });
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw new TransportError("transport_error", 0, `GET events: ${describe(err)}`, { cause: err });
    }
    if (res.status !== 200 || !res.body) {
      const raw = await res.text().catch(() => "");
      throw errorFor(res.status, decode(raw), retryAfter(res.headers.get("Retry-After")), raw.slice(0, 200));
    }
    try {
      yield* parseSSE(res.body, opts.signal);
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (err instanceof LatchError) throw err;
      throw new TransportError("transport_error", 0, `GET events: ${describe(err)}`, { cause: err });
    }
  }

  /**
   * Each status of the execution as it changes, from the current one, ending
   * after a terminal status. A stream cut short is opened again (with a new
   * ticket) per the retry policy; a status already yielded is not repeated.
   * In a browser it asks for a stream ticket with the key and opens an
   * EventSource on ?ticket=, since an EventSource cannot send the key; in
   * Node it streams a fetch with the Authorization header (see WatchOptions).
   */
  async *watch(id: string, opts: WatchOptions = {}): AsyncGenerator<Execution> {
    const transport = opts.transport
      ?? (typeof (globalThis as { EventSource?: unknown }).EventSource === "function" ? "eventsource" : "fetch");
    const policy = this.retryPolicy;
    let last: Execution | null = null;
    let failures = 0;
    for (;;) {
      let cause: unknown = null;
      const events = transport === "eventsource" ? this.eventSource(id, opts.signal) : this.events(id, { signal: opts.signal });
      try {
        for await (const ev of events) {
          if (ev.event === "error") {
            const p = ev.data as { status?: number } | null;
            throw errorFor(typeof p?.status === "number" ? p.status : 0, p);
          }
          if (ev.event !== "status") continue;
          const e = ev.data as Execution;
          failures = 0;
          if (last === null || last.status !== e.status || last.attempt !== e.attempt) {
            last = e;
            yield e;
          }
          if (TERMINAL.has(e.status)) return;
        }
      } catch (err) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        const transient = err instanceof TransportError || (err instanceof LatchError && (err.status === 503 || err.status === 429));
        if (!transient) throw err;
        cause = err;
      }
      // The stream ended before a terminal status: open it again.
      if (failures >= policy.maxRetries) {
        if (cause instanceof LatchError) throw cause;
        throw new TransportError("transport_error", 0, `watch ${id}: the event stream ended before a terminal status`);
      }
      const ra = cause instanceof LatchError ? cause.retryAfter : null;
      await policy.sleep(ra !== null ? Math.min(ra, policy.maxRetryAfter) : backoff(policy, failures), opts.signal);
      failures++;
    }
  }

  /** The events of one EventSource opened with a fresh stream ticket, until it ends or fails. */
  private async *eventSource(id: string, signal?: AbortSignal): AsyncGenerator<StreamEvent> {
    const ES = (globalThis as { EventSource?: typeof EventSource }).EventSource;
    if (typeof ES !== "function") throw new TypeError("watch: this platform has no EventSource; use transport \"fetch\"");
    const { ticket } = await this.streamTicket(id, { signal });
    const queue = new Channel<StreamEvent | { event: "$closed" }>();
    const es = new ES(this.url(`/api/executions/${seg(id)}/events`, { ticket }));
    const onAbort = () => queue.push({ event: "$closed" });
    es.addEventListener("status", (ev) => queue.push({ event: "status", data: decode((ev as MessageEvent).data) }));
    es.addEventListener("error", (ev) => {
      const data = (ev as MessageEvent).data;
      // The server's "error" event carries a problem; a failed or ended connection does not.
      if (typeof data === "string" && data) queue.push({ event: "error", data: decode(data) });
      else queue.push({ event: "$closed" });
    });
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        const ev = await queue.next();
        if (ev.event === "$closed") {
          if (signal?.aborted) throw signal.reason;
          throw new TransportError("transport_error", 0, `events of ${id}: the EventSource closed`);
        }
        yield ev as StreamEvent;
      }
    } finally {
      es.close();
      signal?.removeEventListener("abort", onAbort);
    }
  }

  // ------------------------------------------------------------- schedules

  /** Creates or replaces the schedule `name`: {cron or every, kind, ...}. */
  putSchedule(name: string, schedule: ScheduleRequest): Promise<Schedule> {
    return this.call("PUT", "/api/schedules/" + seg(name), schedule, { retry: true });
  }

  getSchedule(name: string): Promise<Schedule> {
    return this.call("GET", "/api/schedules/" + seg(name), NO_BODY, { retry: true });
  }

  listSchedulesPage(opts: { limit?: number; cursor?: string } = {}): Promise<Page<Schedule>> {
    return this.call("GET", "/api/schedules", NO_BODY, { query: { ...opts }, retry: true });
  }

  /** Every schedule, page after page. */
  async *schedules(opts: { limit?: number } = {}): AsyncGenerator<Schedule> {
    for await (const page of follow((cursor) => this.listSchedulesPage({ ...opts, cursor }))) yield* page.items;
  }

  async deleteSchedule(name: string): Promise<void> {
    await this.call("DELETE", "/api/schedules/" + seg(name));
  }

  /** Fires an off-cycle tick; answers its execution. Without a key a fresh one is sent, so the call's own retries are one tick. */
  triggerSchedule(name: string, opts: { idempotencyKey?: string } = {}): Promise<SubmitResponse> {
    return this.call("POST", `/api/schedules/${seg(name)}/trigger`, NO_BODY, {
      headers: { "Idempotency-Key": opts.idempotencyKey ?? newKey() }, retry: true,
    });
  }

  /** Pauses the schedule: enabled false, nothing else changed, in one request (a PUT at the same time is never undone). Pausing a paused one answers it unchanged. */
  pauseSchedule(name: string): Promise<Schedule> {
    return this.call("POST", `/api/schedules/${seg(name)}/pause`, NO_BODY, { retry: true });
  }

  /** Resumes the schedule from its first tick after now (missed ticks are not run), in one request. Resuming an enabled one answers it unchanged. */
  resumeSchedule(name: string): Promise<Schedule> {
    return this.call("POST", `/api/schedules/${seg(name)}/resume`, NO_BODY, { retry: true });
  }

  // ---------------------------------------------------------------- events

  /**
   * Publishes the event `name` with data (and a correlation `key`): in one
   * operation it resumes every execution of the tenant waiting for it (for
   * that key, when its wait named one) and starts one execution per enabled
   * subscription on the name. Without `idempotencyKey` a fresh one is sent,
   * so the call's own retries are one event; a repeat of a key answers the
   * first answer and changes nothing.
   */
  publish(name: string, data: JSONValue = null,
    opts: { key?: string; idempotencyKey?: string; signal?: AbortSignal; traceparent?: string } = {}): Promise<PublishResponse> {
    return this.call("POST", "/api/events", stripUndefined({ name, data, key: opts.key }), {
      headers: { "Idempotency-Key": opts.idempotencyKey ?? newKey() }, retry: true, signal: opts.signal,
      traceparent: opts.traceparent,
    });
  }

  /** Creates or replaces the subscription `name`: {event, kind, queue?, priority?, ...}. */
  putSubscription(name: string, subscription: SubscriptionRequest): Promise<Subscription> {
    return this.call("PUT", "/api/subscriptions/" + seg(name), subscription, { retry: true });
  }

  getSubscription(name: string): Promise<Subscription> {
    return this.call("GET", "/api/subscriptions/" + seg(name), NO_BODY, { retry: true });
  }

  /**
   * Every subscription of the tenant (at most 100), by name; the admin's
   * without a tenant: every tenant's, by tenant then name. It reads page
   * after page until next_cursor is null.
   */
  async subscriptions(): Promise<Subscription[]> {
    const out: Subscription[] = [];
    const page = (cursor: string | undefined) =>
      this.call<Page<Subscription>>("GET", "/api/subscriptions", NO_BODY, { query: { cursor }, retry: true });
    for await (const p of follow(page)) out.push(...p.items);
    return out;
  }

  async deleteSubscription(name: string): Promise<void> {
    await this.call("DELETE", "/api/subscriptions/" + seg(name));
  }

  // ----------------------------------------------------------- rate limits

  putRateLimit(key: string, limit: { rate: number; per_seconds: number; burst?: number }): Promise<RateLimit> {
    return this.call("PUT", "/api/rate-limits/" + seg(key), limit, { retry: true });
  }

  getRateLimit(key: string): Promise<RateLimit> {
    return this.call("GET", "/api/rate-limits/" + seg(key), NO_BODY, { retry: true });
  }

  /** Deletes the limit; answers it as it was just before. */
  deleteRateLimit(key: string): Promise<RateLimit> {
    return this.call("DELETE", "/api/rate-limits/" + seg(key));
  }

  // --------------------------------------------------------------- workers

  /**
   * Claims up to `max` executions; with wait_seconds (0–30) the server holds
   * the request until one is claimed or the wait ends. Not retried: a lost
   * answer's leases would only expire.
   */
  async claim(workerId: string, opts: ClaimOptions = {}): Promise<Lease[]> {
    const { signal, ...fields } = opts;
    const body = stripUndefined({ worker_id: workerId, ...fields });
    return (await this.call<{ leases: Lease[] }>("POST", "/api/workers/claim", body,
      { hold: opts.wait_seconds ?? 0, signal })).leases;
  }

  /** Extends the lease; answers {lease_expires_at, cancel_requested}. LeaseLost: drop the attempt. */
  heartbeat(id: string, leaseToken: string, opts: { lease_seconds?: number; signal?: AbortSignal } = {}): Promise<HeartbeatResponse> {
    return this.call("POST", `/api/executions/${seg(id)}/heartbeat`,
      stripUndefined({ lease_token: leaseToken, lease_seconds: opts.lease_seconds }), { retry: true, signal: opts.signal });
  }

  /**
   * Completes the attempt with result. Retried, like fail and suspend: the
   * lease token fences them, so a repeat of one that was done answers
   * LeaseLost and changes nothing.
   */
  complete(id: string, leaseToken: string, result: JSONValue = null): Promise<Execution> {
    return this.call("POST", `/api/executions/${seg(id)}/complete`, { lease_token: leaseToken, result }, { retry: true });
  }

  /**
   * Fails the attempt; it runs again unless `retry` is false or attempts are
   * spent, after retry_after_seconds or the server's backoff.
   */
  fail(id: string, leaseToken: string, error: string,
    opts: { retry?: boolean; retry_after_seconds?: number } = {}): Promise<Execution> {
    return this.call("POST", `/api/executions/${seg(id)}/fail`,
      stripUndefined({ lease_token: leaseToken, error, ...opts }), { retry: true });
  }

  /** Records a flow step (the first record of a name wins); answers {name, result, recorded}, the result being the first record's. */
  recordStep(id: string, leaseToken: string, name: string, result: JSONValue = null,
    opts: { started_at?: string | Date } = {}): Promise<StepRecorded> {
    const body = stripUndefined({
      lease_token: leaseToken, name, result, started_at: opts.started_at === undefined ? undefined : formatTime(opts.started_at),
    });
    return this.call("POST", `/api/executions/${seg(id)}/steps`, body, { retry: true });
  }

  /**
   * Ends the attempt as a flow's sleep (`until`), wait for a signal
   * (`signal`), wait for children (`children`: the spawn step; `count` of
   * them, default all) or wait for an event (`event`, with `key` and
   * `since`); answers the execution, suspended or queued again at once.
   */
  suspend(id: string, leaseToken: string, step: string,
    opts: {
      until?: string | Date; signal?: string; children?: string; count?: number; event?: string; key?: string;
      since?: string | Date; timeout_seconds?: number;
    }): Promise<Execution> {
    const body = stripUndefined({
      lease_token: leaseToken, step, until: opts.until === undefined ? undefined : formatTime(opts.until),
      signal: opts.signal, children: opts.children, count: opts.count, event: opts.event, key: opts.key,
      since: opts.since === undefined ? undefined : formatTime(opts.since), timeout_seconds: opts.timeout_seconds,
    });
    return this.call("POST", `/api/executions/${seg(id)}/suspend`, body, { retry: true });
  }

  /**
   * Admits `items` as children of the execution, all or none, recorded as
   * the flow step `step`; answers {step, recorded, children: [{execution_id,
   * status}]}. A repeat of the step admits nothing and answers the first
   * spawn's children with `recorded` false, so it is retried safely.
   * `on_parent_end`: "cancel" (default) or "abandon".
   */
  spawnChildren(id: string, leaseToken: string, step: string, items: ChildItem[],
    opts: { on_parent_end?: OnParentEnd } = {}): Promise<Spawned> {
    const body = stripUndefined({
      lease_token: leaseToken, step, items: items.map((it) => submitBody(it)), on_parent_end: opts.on_parent_end,
    });
    return this.call("POST", `/api/executions/${seg(id)}/children`, body, { retry: true });
  }

  // ------------------------------------------------------- tenants (admin)

  /** Creates a tenant (admin key); the answer holds its first api_key. */
  createTenant(
    name: string,
    opts: {
      max_inflight?: number; dedup_ttl_seconds?: number; retention_seconds?: number; max_stored_bytes?: number;
      event_retention_seconds?: number;
    } = {},
  ): Promise<TenantCreated> {
    return this.call("POST", "/api/tenants", stripUndefined({ name, ...opts }));
  }

  getTenant(name: string): Promise<Tenant> {
    return this.call("GET", "/api/tenants/" + seg(name), NO_BODY, { retry: true });
  }

  /** PATCH: any of max_inflight, dedup_ttl_seconds, retention_seconds, max_stored_bytes, event_retention_seconds, disabled. */
  updateTenant(name: string, fields: Partial<Omit<Tenant, "name" | "inflight">>): Promise<Tenant> {
    return this.call("PATCH", "/api/tenants/" + seg(name), fields, { retry: true });
  }

  async deleteTenant(name: string, opts: { force?: boolean } = {}): Promise<void> {
    await this.call("DELETE", "/api/tenants/" + seg(name), NO_BODY, { query: { force: opts.force ? "true" : undefined } });
  }

  createKey(tenant: string): Promise<APIKey> {
    return this.call("POST", `/api/tenants/${seg(tenant)}/keys`);
  }

  async listKeys(tenant: string): Promise<APIKeyInfo[]> {
    return (await this.call<{ items: APIKeyInfo[] }>("GET", `/api/tenants/${seg(tenant)}/keys`, NO_BODY, { retry: true })).items;
  }

  async deleteKey(tenant: string, keyId: string): Promise<void> {
    await this.call("DELETE", `/api/tenants/${seg(tenant)}/keys/${seg(keyId)}`);
  }

  // ------------------------------------------------------------ operations

  /** True when the server answers /readyz 200. */
  async ready(): Promise<boolean> {
    try {
      await this.request("GET", "/readyz");
      return true;
    } catch (err) {
      if (err instanceof LatchError) return false;
      throw err;
    }
  }
}

// ------------------------------------------------------------------ helpers

function isNode(): boolean {
  return typeof process !== "undefined" && typeof process.versions?.node === "string";
}

function seg(s: string): string {
  return encodeURIComponent(s);
}

function decode(raw: string): unknown {
  if (!raw) return null;
  try {
    return JSON.parse(raw);
  } catch {
    return null;
  }
}

function retryAfter(v: string | null): number | null {
  if (!v) return null;
  const n = Number(v.trim());
  return Number.isFinite(n) ? Math.max(0, n) : null;
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}

function stripUndefined<T extends Record<string, unknown>>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function submitBody(it: BatchSubmitItem): Record<string, unknown> {
  const b = stripUndefined({ ...it } as Record<string, unknown>);
  if (b.run_at instanceof Date) b.run_at = formatTime(b.run_at);
  return b;
}

async function* follow<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>, cursor?: string): AsyncGenerator<Page<T>> {
  for (;;) {
    const page = await fetchPage(cursor);
    yield page;
    if (!page.next_cursor) return;
    cursor = page.next_cursor;
  }
}

/** The events of a text/event-stream body (https://html.spec.whatwg.org/#event-stream-interpretation). */
async function* parseSSE(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<StreamEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let event = "";
  let data: string[] = [];
  const onAbort = () => void reader.cancel().catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (data.length) yield { event: event || "message", data: decode(data.join("\n")) };
          event = "";
          data = [];
        } else if (!line.startsWith(":")) {
          const i = line.indexOf(":");
          const k = i < 0 ? line : line.slice(0, i);
          let v = i < 0 ? "" : line.slice(i + 1);
          if (v.startsWith(" ")) v = v.slice(1);
          if (k === "event") event = v;
          else if (k === "data") data.push(v);
        }
      }
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    reader.cancel().catch(() => {});
  }
}

/** An unbounded queue read by one consumer. */
class Channel<T> {
  private items: T[] = [];
  private waiting: ((v: T) => void) | null = null;

  push(v: T): void {
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = null;
      w(v);
    } else {
      this.items.push(v);
    }
  }

  next(): Promise<T> {
    if (this.items.length) return Promise.resolve(this.items.shift()!);
    return new Promise((resolve) => (this.waiting = resolve));
  }
}
