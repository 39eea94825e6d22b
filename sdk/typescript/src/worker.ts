// A worker over latch's HTTP API: claims, heartbeats, completes and fails,
// and runs flows (steps, sleeps, signal waits, children) with the journal its lease carries.

import { Client, formatTime, sleep, validTraceparent } from "./client.js";
import { JournalTooLarge, LatchError, LeaseLost, StorageExceeded, TooManyChildren, TooManySteps } from "./errors.js";
import type {
  ChildItem, ChildOutcome, EventRecord, Execution, FanIn, JSONValue, Lease, OnParentEnd, SubmitOptions,
} from "./types.js";

/**
 * A handler: gets the job, answers its result (JSON; undefined stores null).
 * P is the payload's type and R the result's, as the handler declares them
 * (`worker.handle<{ n: number }, number>("double", (job) => job.payload.n * 2)`):
 * the worker does not check the payload against P — it is what the
 * submitter sent, so declare what your submitters send.
 */
export type Handler<P = JSONValue, R = unknown> = (job: Job<P>) => R | Promise<R>;

/**
 * Thrown by Job.sleep, Job.waitSignal, Job.waitEvent and Job.waitChildren (so by
 * spawnAndWait and map) when the flow suspends: the attempt
 * ends there, without complete or fail. Let it through (rethrow it from a
 * catch): the worker ends the run as suspended even when a handler swallows
 * it, since the suspend already ended the lease.
 */
export class Suspended extends Error {
  readonly execution: Execution;
  constructor(execution: Execution) {
    super(`suspended (${execution.status})`);
    this.name = "Suspended";
    this.execution = execution;
  }
}

/** Job.waitSignal, Job.waitEvent: the wait's timeout passed before the signal or event came. */
export class WaitTimedOut extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WaitTimedOut";
  }
}

/**
 * Job.waitChildren: the wait's timeout passed before enough children ended.
 * `children` holds every child of the spawn as it was then.
 */
export class ChildrenTimedOut extends WaitTimedOut {
  readonly children: ChildOutcome[];
  constructor(message: string, children: ChildOutcome[]) {
    super(message);
    this.name = "ChildrenTimedOut";
    this.children = children;
  }
}

/** The reason of a job's AbortSignal: a cancel was requested, or the lease was lost. */
export class JobCancelled extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JobCancelled";
  }
}

/**
 * Throw it from a handler to fail the attempt as you choose: `retry` false
 * fails the execution for good, `retryAfterSeconds` sets the delay of the
 * next attempt (else the server's exponential backoff).
 */
export class Fail extends Error {
  readonly retry: boolean;
  readonly retryAfterSeconds: number | undefined;
  constructor(message: string, opts: { retry?: boolean; retryAfterSeconds?: number } = {}) {
    super(message);
    this.name = "Fail";
    this.retry = opts.retry ?? true;
    this.retryAfterSeconds = opts.retryAfterSeconds;
  }
}

/** What a wait's step records when its timeout passed. */
export const TIMED_OUT = Object.freeze({ timed_out: true });

function isTimedOut(v: unknown): boolean {
  return v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 1
    && (v as { timed_out?: unknown }).timed_out === true;
}

/**
 * One leased execution, handed to a handler.
 *
 * The lease's fields are here in camelCase. `signal` is an AbortSignal that
 * aborts (reason: a JobCancelled) when a heartbeat answer says a cancel was
 * requested, or the lease was lost (`leaseLost` is true then too): pass it
 * to fetch and timers, or check it, and stop. `steps` is the flow's journal:
 * the lease's, plus what this run records.
 *
 * `traceparent` is the execution's W3C traceparent (the trace its submit
 * continued), undefined when it has none: a handler that traces its own work
 * makes its span a child of it. `client` sends it on every request (the
 * worker's calls under the lease go through it), so what the handler
 * submits with `job.client` joins the run's trace.
 */
export class Job<P = JSONValue> {
  readonly client: Client;
  readonly lease: Lease;
  readonly executionId: string;
  readonly leaseToken: string;
  readonly kind: string;
  readonly payload: P;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly tenant: string;
  readonly queue: string;
  readonly timeoutSeconds: number;
  readonly steps: Record<string, JSONValue>;
  readonly signal: AbortSignal;
  readonly traceparent: string | undefined;
  leaseLost = false;
  /** Whether `steps` holds the whole journal at the claim (the lease's steps_complete). */
  private stepsComplete: boolean;
  /** Set once sleep or waitSignal suspended the execution: the lease has ended. */
  suspended = false;
  private readonly controller = new AbortController();

  constructor(client: Client, lease: Lease) {
    this.traceparent = validTraceparent(lease.trace_parent) ? lease.trace_parent : undefined;
    this.client = this.traceparent ? client.withTraceparent(this.traceparent) : client;
    this.lease = lease;
    this.executionId = lease.execution_id;
    this.leaseToken = lease.lease_token;
    this.kind = lease.kind;
    this.payload = (lease.payload ?? null) as P;
    this.attempt = lease.attempt ?? 0;
    this.maxAttempts = lease.max_attempts ?? 0;
    this.tenant = lease.tenant;
    this.queue = lease.queue;
    this.timeoutSeconds = lease.timeout_seconds;
    this.steps = { ...(lease.steps ?? {}) };
    this.stepsComplete = lease.steps_complete !== false;
    this.signal = this.controller.signal;
  }

  /**
   * Whether the journal holds `name`, reading the rest of a journal the lease
   * carried in part (steps_complete false) the first time a name is not in
   * `steps`: no recorded step runs again for want of its record.
   */
  private async recorded(name: string): Promise<boolean> {
    const has = () => Object.prototype.hasOwnProperty.call(this.steps, name);
    if (has() || this.stepsComplete) return has();
    for (const st of await this.client.steps(this.executionId)) {
      if (!Object.prototype.hasOwnProperty.call(this.steps, st.name)) this.steps[st.name] = st.result;
    }
    this.stepsComplete = true;
    return has();
  }

  /** True once a cancel was requested or the lease lost. */
  get cancelled(): boolean {
    return this.signal.aborted;
  }

  /** Throws the JobCancelled reason once a cancel was requested or the lease lost. */
  throwIfCancelled(): void {
    this.signal.throwIfAborted();
  }

  /** @internal the heartbeat's news. */
  cancel(leaseLost: boolean): void {
    if (leaseLost) this.leaseLost = true;
    if (!this.signal.aborted) this.controller.abort(new JobCancelled(leaseLost ? "lease lost" : "cancel requested"));
  }

  /**
   * Runs fn once for the flow: the recorded result when the journal has
   * `name`, else fn's result, recorded (the first record wins, and that is
   * what every run gets). fn's result must be JSON. A new name when the
   * journal holds as many steps as it may throws TooManySteps: let it
   * through, and the attempt fails without a retry.
   */
  async step<T extends JSONValue>(name: string, fn: () => T | Promise<T>): Promise<T> {
    if (await this.recorded(name)) return this.steps[name] as T;
    const started = new Date();
    const result = await fn();
    const rec = await this.client.recordStep(this.executionId, this.leaseToken, name, result === undefined ? null : result,
      { started_at: started });
    this.steps[name] = rec.result;
    return rec.result as T;
  }

  /**
   * Sleeps until a time (or for `seconds` from the first run that got here)
   * under the step `name`: the first time, the execution is suspended and
   * this run ends (Suspended is thrown); the run that resumes it returns at once.
   */
  async sleep(name: string, opts: { seconds?: number; until?: string | Date }): Promise<void> {
    if (await this.recorded(name)) return;
    if ((opts.seconds === undefined) === (opts.until === undefined)) {
      throw new TypeError("sleep: give seconds or until, not both");
    }
    const until = opts.until ?? new Date(Date.now() + opts.seconds! * 1000);
    const e = await this.client.suspend(this.executionId, this.leaseToken, name, { until: formatTime(until) });
    this.suspended = true;
    throw new Suspended(e);
  }

  /**
   * Waits for the signal under the step `name` and answers its data: the
   * first time, the execution is suspended and this run ends (Suspended is
   * thrown); the run that resumes it gets the data, or WaitTimedOut when
   * `timeout` seconds passed first (none: no timeout).
   */
  async waitSignal<T extends JSONValue = JSONValue>(name: string, signal: string, opts: { timeout?: number } = {}): Promise<T> {
    if (await this.recorded(name)) {
      const v = this.steps[name];
      if (isTimedOut(v)) throw new WaitTimedOut(`${name}: no signal ${JSON.stringify(signal)} within the timeout`);
      return v as T;
    }
    const t = opts.timeout === undefined ? undefined : Math.max(1, Math.ceil(opts.timeout));
    const e = await this.client.suspend(this.executionId, this.leaseToken, name, { signal, timeout_seconds: t });
    this.suspended = true;
    throw new Suspended(e);
  }

  /**
   * Waits under the step `name` for an event its tenant publishes
   * (Client.publish) and answers it: {event_id, name, key, data,
   * published_at}. It matches an event of that name (and `key`, when given)
   * published at or after `since` (default: the execution's creation) that
   * this execution has not consumed in an earlier wait: the oldest retained
   * one is consumed at once; otherwise the execution is suspended and this
   * run ends (Suspended is thrown) until one is published. WaitTimedOut when
   * `timeout` seconds passed first (none: no timeout).
   */
  async waitEvent(name: string, event: string,
    opts: { key?: string; since?: string | Date; timeout?: number } = {}): Promise<EventRecord> {
    if (await this.recorded(name)) {
      const v = this.steps[name];
      if (isTimedOut(v)) throw new WaitTimedOut(`${name}: no event ${JSON.stringify(event)} within the timeout`);
      return v as unknown as EventRecord;
    }
    const t = opts.timeout === undefined ? undefined : Math.max(1, Math.ceil(opts.timeout));
    const e = await this.client.suspend(this.executionId, this.leaseToken, name,
      { event, key: opts.key, since: opts.since, timeout_seconds: t });
    this.suspended = true;
    throw new Suspended(e);
  }

  /**
   * Admits child executions under the flow step `name`, all of them or
   * none, and answers their ids in the order given. Each item is a submit
   * without dedup_key ({kind, payload, queue, priority, ...}): an ordinary
   * execution of the tenant that knows its parent (parent_id, parent_step).
   * When the journal has `name` (a replay after a crash, a retry or a
   * resume), nothing is admitted and the first spawn's ids are answered.
   *
   * `on_parent_end`: "cancel" (default: the parent's end cancels its live
   * children in the same operation) or "abandon" (they outlive it).
   * QuotaExceeded when the tenant's quota has no room for them all (nothing
   * admitted: let it through and the attempt is retried later);
   * TooManyChildren past the bounds fails the execution for good.
   */
  async spawn(name: string, items: ChildItem[], opts: { on_parent_end?: OnParentEnd } = {}): Promise<string[]> {
    if (await this.recorded(name)) return [...((this.steps[name] as { children: string[] }).children)];
    const ans = await this.client.spawnChildren(this.executionId, this.leaseToken, name, items, opts);
    const ids = ans.children.map((c) => c.execution_id);
    this.steps[name] = { children: ids };
    return ids;
  }

  /**
   * Waits, as the flow step `name`, for the children of the spawn step
   * `spawn`: until `count` of them (default: all) have ended, or `timeout`
   * seconds passed. Answers every child of the spawn as it was when the wait
   * ended, in spawn order. A child that failed does not fail the wait: its
   * status and error say so, and the flow decides. Children that ended
   * before the wait count: when enough have, it does not suspend. Until then
   * the execution is suspended and this run ends (Suspended is thrown).
   * When the timeout ended the wait, ChildrenTimedOut (a WaitTimedOut) is
   * thrown, holding the children as they were.
   */
  async waitChildren(name: string, spawn: string, opts: { count?: number; timeout?: number } = {}): Promise<ChildOutcome[]> {
    if (!(await this.recorded(name))) {
      const t = opts.timeout === undefined ? undefined : Math.max(1, Math.ceil(opts.timeout));
      const e = await this.client.suspend(this.executionId, this.leaseToken, name,
        { children: spawn, count: opts.count, timeout_seconds: t });
      this.suspended = true;
      throw new Suspended(e);
    }
    const v = (this.steps[name] ?? {}) as unknown as Partial<FanIn>;
    const children = [...(v.children ?? [])];
    if (v.timed_out) throw new ChildrenTimedOut(`${name}: the children of ${JSON.stringify(spawn)} had not ended within the timeout`, children);
    return children;
  }

  /**
   * spawn under the step `name`, then waitChildren for all of them under the
   * step `name + "/wait"`: their outcomes in the order given, once all have
   * ended (Suspended is thrown until then).
   */
  async spawnAndWait(name: string, items: ChildItem[], opts: { on_parent_end?: OnParentEnd } = {}): Promise<ChildOutcome[]> {
    await this.spawn(name, items, opts);
    return this.waitChildren(name + "/wait", name);
  }

  /**
   * Runs one child execution of `kind` per item, its payload the item, in
   * parallel, and answers their outcomes in item order once all have ended:
   * spawnAndWait under the step `name`. `opts.child`: submit fields every
   * child gets (queue, priority, max_attempts, ...). Suspended is thrown
   * until they have all ended.
   *
   *     const outs = await job.map("ship", "ship-parcel", parcels);
   *     const failed = outs.filter((o) => o.status !== "succeeded");
   */
  map(name: string, kind: string, items: JSONValue[],
    opts: { on_parent_end?: OnParentEnd; child?: Omit<SubmitOptions, "dedup_key"> } = {}): Promise<ChildOutcome[]> {
    return this.spawnAndWait(name, items.map((payload) => ({ ...opts.child, kind, payload })),
      { on_parent_end: opts.on_parent_end });
  }
}

export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string, err?: unknown): void;
}

const consoleLogger: Logger = {
  info: () => {},
  warn: (m) => console.warn(m),
  error: (m, err) => console.error(m, err ?? ""),
};

export interface WorkerOptions {
  /** kind → handler. More with worker.handle(kind, fn). */
  // any: each kind's handler declares its own payload type (Handler)
  handlers?: Record<string, Handler<any>>;
  workerId?: string;
  queues?: string[];
  /** Jobs run at once, each slot claiming one execution at a time. Default 1. */
  concurrency?: number;
  /** The lease asked for, 1–3600 s; a heartbeat renews it every third of it. Default 30. */
  leaseSeconds?: number;
  /** The claim's long poll, 0–30 s. Default 5. */
  waitSeconds?: number;
  logger?: Logger;
}

/** How a run ended: completed, failed, suspended, lease_lost, or unrecorded (the outcome could not be written; the lease expires and the server runs it again). */
export type RunResult = "completed" | "failed" | "suspended" | "lease_lost" | "unrecorded";

/**
 * Runs handlers for the kinds it is given, over HTTP.
 *
 * A handler's result completes the attempt; a thrown error fails it (retried
 * while attempts remain; throw Fail to choose); Suspended (from job.sleep /
 * job.waitSignal) ends it without either.
 *
 * run() resolves after stop() or, in Node when it installed them, SIGTERM or
 * SIGINT: then no slot claims again, running jobs finish and run() resolves.
 * `stopSignal` aborts from then on.
 */
export class Worker {
  readonly client: Client;
  // any: each kind's handler declares its own payload type (Handler)
  readonly handlers: Record<string, Handler<any>>;
  readonly workerId: string;
  readonly queues: string[] | undefined;
  readonly concurrency: number;
  readonly leaseSeconds: number;
  readonly waitSeconds: number;
  readonly logger: Logger;
  private readonly stopper = new AbortController();

  constructor(client: Client, opts: WorkerOptions = {}) {
    const concurrency = opts.concurrency ?? 1;
    const leaseSeconds = opts.leaseSeconds ?? 30;
    const waitSeconds = opts.waitSeconds ?? 5;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError("concurrency must be at least 1");
    if (!(leaseSeconds >= 1 && leaseSeconds <= 3600)) throw new RangeError("leaseSeconds must be 1–3600");
    if (!(waitSeconds >= 0 && waitSeconds <= 30)) throw new RangeError("waitSeconds must be 0–30");
    this.client = client;
    this.handlers = { ...opts.handlers };
    this.workerId = opts.workerId ?? defaultWorkerId();
    this.queues = opts.queues?.length ? [...opts.queues] : undefined;
    this.concurrency = concurrency;
    this.leaseSeconds = leaseSeconds;
    this.waitSeconds = waitSeconds;
    this.logger = opts.logger ?? consoleLogger;
  }

  /** Registers fn as the handler of kind; P and R type its payload and result (see Handler). */
  handle<P = JSONValue, R = unknown>(kind: string, fn: Handler<P, R>): this {
    this.handlers[kind] = fn;
    return this;
  }

  get stopping(): boolean {
    return this.stopper.signal.aborted;
  }

  /** Aborts once the worker is told to stop. */
  get stopSignal(): AbortSignal {
    return this.stopper.signal;
  }

  /** Stops claiming; run() resolves once the running jobs have finished. */
  stop(): void {
    if (!this.stopping) this.stopper.abort(new Error("worker stopped"));
  }

  /** Claims and runs until stopped (see the class). */
  async run(opts: { installSignalHandlers?: boolean } = {}): Promise<void> {
    if (Object.keys(this.handlers).length === 0) throw new Error("no handlers");
    const proc = (globalThis as { process?: NodeJS.Process }).process;
    const install = (opts.installSignalHandlers ?? true) && typeof proc?.on === "function";
    const onSignal = () => this.stop();
    if (install) {
      proc!.on("SIGTERM", onSignal);
      proc!.on("SIGINT", onSignal);
    }
    try {
      await Promise.all(Array.from({ length: this.concurrency }, () => this.loop()));
    } finally {
      if (install) {
        proc!.off("SIGTERM", onSignal);
        proc!.off("SIGINT", onSignal);
      }
    }
  }

  /** One claim (up to `max` leases) and the runs of what it got; answers how many leases it ran. */
  async runOnce(opts: { max?: number; waitSeconds?: number } = {}): Promise<number> {
    const leases = await this.claim(opts);
    for (const lease of leases) await this.runLease(lease);
    return leases.length;
  }

  claim(opts: { max?: number; waitSeconds?: number } = {}): Promise<Lease[]> {
    return this.client.claim(this.workerId, {
      kinds: Object.keys(this.handlers).sort(), queues: this.queues, max: opts.max ?? 1,
      lease_seconds: this.leaseSeconds, wait_seconds: opts.waitSeconds ?? this.waitSeconds,
    });
  }

  private async loop(): Promise<void> {
    let pause = 0;
    while (!this.stopping) {
      if (pause) {
        try {
          await sleep(pause, this.stopSignal);
        } catch {
          return; // stopped
        }
      }
      let leases: Lease[];
      try {
        leases = await this.claim();
        pause = 0;
      } catch (err) {
        // The server is away, refused, or answered what this client cannot read: back off, up to 5 s.
        const ra = err instanceof LatchError ? err.retryAfter : null;
        pause = ra !== null ? Math.min(30, ra) : Math.min(5, (pause || 0.1) * 2);
        this.logger.warn(`latch worker ${this.workerId}: claim: ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      for (const lease of leases) {
        try {
          await this.runLease(lease);
        } catch (err) {
          // The lease expires and runs again; this slot goes on.
          this.logger.error(`latch worker ${this.workerId}: running ${lease.execution_id}`, err);
        }
      }
    }
  }

  /** Runs one lease with its handler, heartbeating meanwhile; answers how it ended. */
  async runLease(lease: Lease): Promise<RunResult> {
    const job = new Job(this.client, lease);
    const done = new AbortController();
    const hb = this.heartbeat(job, done.signal);
    try {
      return await this.runJob(job);
    } finally {
      done.abort();
      await hb;
    }
  }

  private async heartbeat(job: Job, done: AbortSignal): Promise<void> {
    const interval = this.leaseSeconds / 3;
    for (;;) {
      try {
        await sleep(interval, done);
      } catch {
        return;
      }
      try {
        const ans = await job.client.heartbeat(job.executionId, job.leaseToken,
          { lease_seconds: this.leaseSeconds, signal: done });
        if (ans.cancel_requested) job.cancel(false);
      } catch (err) {
        if (done.aborted) return;
        if (err instanceof LeaseLost) {
          job.cancel(true);
          return;
        }
        this.logger.warn(`latch worker ${this.workerId}: heartbeat of ${job.executionId}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }

  private async runJob(job: Job): Promise<RunResult> {
    const handler = Object.prototype.hasOwnProperty.call(this.handlers, job.kind) ? this.handlers[job.kind] : undefined;
    const c = job.client; // sends the lease's traceparent
    const id = job.executionId;
    const tok = job.leaseToken;
    try {
      let result: unknown;
      try {
        if (!handler) throw new Fail(`this worker has no handler for kind ${JSON.stringify(job.kind)}`);
        result = await handler(job);
      } catch (err) {
        if (err instanceof Suspended || job.suspended) return "suspended";
        if (err instanceof LeaseLost || job.leaseLost) return "lease_lost";
        if (err instanceof Fail) {
          await c.fail(id, tok, err.message, { retry: err.retry, retry_after_seconds: err.retryAfterSeconds });
          return "failed";
        }
        if (err instanceof JobCancelled || (job.cancelled && isAbort(err))) {
          await c.fail(id, tok, job.signal.reason instanceof Error ? job.signal.reason.message : "cancel requested", { retry: false });
          return "failed";
        }
        if (err instanceof TooManySteps || err instanceof JournalTooLarge || err instanceof TooManyChildren) {
          // The bounds never shrink: no later attempt could go on.
          await c.fail(id, tok, `${err.name}: ${err.message}`, { retry: false });
          return "failed";
        }
        // The handler's error fails the attempt.
        const msg = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
        await c.fail(id, tok, msg.slice(0, 65536));
        return "failed";
      }
      if (job.suspended) return "suspended";
      if (job.leaseLost) return "lease_lost";
      let json: JSONValue;
      try {
        json = result === undefined ? null : JSON.parse(JSON.stringify(result)) as JSONValue;
      } catch (err) {
        await c.fail(id, tok, `the result is not JSON: ${err instanceof Error ? err.message : String(err)}`, { retry: false });
        return "failed";
      }
      try {
        await c.complete(id, tok, json);
      } catch (err) {
        if (!(err instanceof StorageExceeded)) throw err;
        // The work is done; running it again would only redo it.
        await c.fail(id, tok, `the result was not stored: StorageExceeded: ${err.message}`, { retry: false });
        return "failed";
      }
      return "completed";
    } catch (err) {
      if (err instanceof LeaseLost) {
        this.logger.info(`latch worker ${this.workerId}: lease of ${id} lost; attempt dropped`);
        return "lease_lost";
      }
      if (err instanceof LatchError) {
        this.logger.warn(`latch worker ${this.workerId}: ${id}: outcome not recorded: ${err.message}`);
        return "unrecorded";
      }
      throw err;
    }
  }
}

function isAbort(err: unknown): boolean {
  return err instanceof JobCancelled || (err instanceof Error && (err.name === "AbortError" || err.name === "JobCancelled"));
}

function defaultWorkerId(): string {
  const proc = (globalThis as { process?: NodeJS.Process }).process;
  if (proc?.pid !== undefined) return `ts-${proc.pid}-${crypto.randomUUID().slice(0, 8)}`;
  return `ts-${crypto.randomUUID()}`;
}
