// Every problem code answers its typed error; safe requests are retried on
// connection errors, 429 and 503, and the others are not.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";

import {
  Client, Conflict, DedupKeyReused, ERRORS, Forbidden, HeadersTooLarge, InternalError, InvalidRequest, InvalidTicket,
  LatchError, LeaseLost, MethodNotAllowed, NotActive, NotFailed, NotFound, NotTerminal, PayloadTooLarge, QuotaExceeded,
  ScheduleLimit, ScheduleTooFrequent, SignalBufferFull, StorageExceeded, TenantDisabled, TenantExists, TooManyRequests, TooManySteps, TransportError,
  Unauthorized, Unavailable, UnsupportedMediaType, Worker,
} from "../dist/index.js";
import { MAX_SCHEDULES, REPO, Server } from "./latchserver.mjs";

const ALL_CODES = [
  "unauthorized", "invalid_ticket", "forbidden", "tenant_disabled", "not_found", "invalid_request",
  "payload_too_large", "unsupported_media_type", "quota_exceeded", "too_many_requests", "schedule_limit",
  "dedup_key_reused", "tenant_exists", "not_terminal", "lease_lost", "not_active", "not_failed",
  "too_many_steps", "journal_too_large", "signal_buffer_full", "method_not_allowed", "internal", "unavailable", "headers_too_large",
  "storage_exceeded", "schedule_too_frequent", "too_many_children", "too_many_subscriptions",
].sort();

const MAX_BUFFERED_SIGNALS = 1000; // store.MaxBufferedSignals

const noRetry = { retry: { maxRetries: 0 } };

describe("problem codes, caused for real", () => {
  let srv;
  let c;
  before(async () => (srv = await Server.start()));
  after(() => srv.stop());
  beforeEach(async () => (c = await srv.newTenant("errors", {}, noRetry)));

  async function check(cls, status, fn) {
    let caught;
    await assert.rejects(async () => {
      try {
        await fn();
      } catch (e) {
        caught = e;
        throw e;
      }
    }, cls);
    assert.ok(caught instanceof LatchError);
    assert.ok(caught instanceof Error);
    assert.deepEqual([caught.code, caught.status], [cls.codeName, status]);
    assert.equal(caught.name, cls.name);
    assert.ok(caught.detail);
    assert.equal(caught.problem.code, caught.code);
    return caught;
  }

  test("every code of api/problem.go has its class", () => {
    assert.deepEqual(Object.keys(ERRORS).sort(), ALL_CODES);
    // ALL_CODES is the server's own list: the constants of api/problem.go
    const src = fs.readFileSync(path.join(REPO, "api", "problem.go"), "utf8");
    const serverCodes = [...src.matchAll(/^\s*Code\w+\s+Code\s*=\s*"([a-z_]+)"/gm)].map((m) => m[1]).sort();
    assert.deepEqual(serverCodes, ALL_CODES);
    for (const [code, cls] of Object.entries(ERRORS)) {
      assert.equal(cls.codeName, code);
      assert.ok(cls.prototype instanceof LatchError);
    }
  });

  test("invalid_request", async () => {
    const e = await check(InvalidRequest, 400, () => c.submit("", {}));
    assert.ok(e.detail.startsWith("kind"), e.detail);
  });

  test("unauthorized", async () => {
    await check(Unauthorized, 401, () => new Client({ baseUrl: srv.url, key: "lk_nope" }).get("x"));
    await check(Unauthorized, 401, () => new Client({ baseUrl: srv.url }).listPage());
  });

  test("invalid_ticket", async () => {
    const e = await c.submit("job");
    const anon = new Client({ baseUrl: srv.url });
    await check(InvalidTicket, 401, async () => {
      for await (const _ of anon.events(e.execution_id, { ticket: "bogus" })) void _;
    });
  });

  test("forbidden", () => check(Forbidden, 403, () => c.createTenant("nope")));

  test("tenant_disabled", async () => {
    await srv.admin().updateTenant(c.tenantName, { disabled: true });
    await check(TenantDisabled, 403, () => c.submit("job"));
  });

  test("not_found", async () => {
    await check(NotFound, 404, () => c.get(crypto.randomUUID()));
    await check(NotFound, 404, () => c.request("GET", "/api/nothing-here"));
  });

  test("method_not_allowed", () => check(MethodNotAllowed, 405, () => c.request("PATCH", "/api/executions", {})));

  test("conflicts", async () => {
    const e = await c.submit("job");
    assert.ok(NotTerminal.prototype instanceof Conflict);
    await check(NotTerminal, 409, () => c.delete(e.execution_id));
    await check(LeaseLost, 409, () => c.heartbeat(e.execution_id, "not-the-token"));
    await check(NotFailed, 409, () => c.retry(e.execution_id));
    await c.cancel(e.execution_id);
    await check(NotActive, 409, () => c.signal(e.execution_id, "go"));
    await check(TenantExists, 409, () => srv.admin().createTenant(c.tenantName));
  });

  test("schedule_limit", async () => {
    for (let i = 0; i < MAX_SCHEDULES; i++) await c.putSchedule(`s${i}`, { every: "1h", kind: "job" });
    await check(ScheduleLimit, 409, () => c.putSchedule("one-more", { every: "1h", kind: "job" }));
    await c.putSchedule("s0", { every: "2h", kind: "job" }); // replacing one always works
  });

  test("schedule_too_frequent", async () => {
    await check(ScheduleTooFrequent, 400, () => c.putSchedule("fast", { every: "30s", kind: "job" }));
    await c.putSchedule("fast", { every: "1m", kind: "job" });
  });

  test("storage_exceeded", async () => {
    const small = await srv.newTenant("errors", { max_stored_bytes: 50 }, noRetry);
    await check(StorageExceeded, 409, () => small.submit("job", { pad: "x".repeat(100) }));
    assert.ok(new StorageExceeded("storage_exceeded", 409) instanceof Conflict);
    assert.equal((await srv.admin().getTenant(small.tenantName)).stored_bytes, 0);
  });

  test("signal_buffer_full", async () => {
    const e = await c.submit("job"); // no worker runs it: every signal is kept
    for (let i = 0; i < MAX_BUFFERED_SIGNALS; i++) {
      assert.equal(await c.signal(e.execution_id, "item", i, { idempotencyKey: `k${i}` }), false);
    }
    await check(SignalBufferFull, 409, () => c.signal(e.execution_id, "item", "over"));
    await check(SignalBufferFull, 409, () => c.signal(e.execution_id, "item", "over", { idempotencyKey: "new" }));
    assert.ok(new SignalBufferFull("signal_buffer_full", 409) instanceof Conflict);
    // A repeat answers its first answer, full or not.
    assert.equal(await c.signal(e.execution_id, "item", 0, { idempotencyKey: "k0" }), false);
  });

  test("payload_too_large", () => check(PayloadTooLarge, 413, () => c.submit("job", { x: "y".repeat(1 << 20) })));

  test("unsupported_media_type", () => check(UnsupportedMediaType, 415, () => c.request("POST", "/api/executions",
    undefined, { rawBody: '{"kind":"job"}', headers: { "Content-Type": "text/plain" } })));

  test("dedup_key_reused", async () => {
    await c.submit("job", { a: 1 }, { dedup_key: "k" });
    await check(DedupKeyReused, 422, () => c.submit("job", { a: 2 }, { dedup_key: "k" }));
  });

  test("quota_exceeded", async () => {
    const q = await srv.newTenant("quota", { max_inflight: 1 }, noRetry);
    await q.submit("job");
    const e = await check(QuotaExceeded, 429, () => q.submit("job"));
    assert.equal(e.retryAfter, 5);
  });

  test("too_many_requests", async () => {
    const e = await c.submit("job");
    for (let i = 0; i < 100; i++) await c.streamTicket(e.execution_id);
    const err = await check(TooManyRequests, 429, () => c.streamTicket(e.execution_id));
    assert.notEqual(err.retryAfter, null);
  });

  test("headers_too_large", () => check(HeadersTooLarge, 431, () => c.request("GET", "/api/executions", undefined,
    { headers: { "X-Big": "a".repeat(70 << 10) } })));
});

// ---------------------------------------------------------------- the fake

/** An HTTP server that answers from a script: each entry [status, headers, body] or "close" (no answer). */
class Fake {
  static async start(script) {
    const f = new Fake();
    f.script = [...script];
    f.requests = [];
    f.server = http.createServer((req, res) => {
      const chunks = [];
      req.on("data", (d) => chunks.push(d));
      req.on("end", () => {
        const raw = Buffer.concat(chunks).toString();
        f.requests.push({ method: req.method, path: req.url, headers: req.headers, body: raw ? JSON.parse(raw) : null });
        const step = f.script.length ? f.script.shift() : [500, {}, ""];
        if (step === "close") {
          req.socket.destroy();
          return;
        }
        const [status, headers, body] = step;
        res.writeHead(status, { ...headers, "Content-Length": Buffer.byteLength(body) });
        res.end(body);
      });
    });
    await new Promise((r) => f.server.listen(0, "127.0.0.1", r));
    f.url = `http://127.0.0.1:${f.server.address().port}`;
    return f;
  }

  close() {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(r));
  }
}

function problem(code, status, retryAfter) {
  const h = { "Content-Type": "application/problem+json" };
  if (retryAfter !== undefined) h["Retry-After"] = String(retryAfter);
  return [status, h, JSON.stringify({ type: "https://latch.run/problems/" + code, title: code, status, detail: "from the fake", code })];
}

function ok(status, doc) {
  return [status, { "Content-Type": "application/json" }, JSON.stringify(doc)];
}

const EXEC = { execution_id: "e1", status: "queued", deduplicated: false };

describe("retries", () => {
  const fakes = [];
  after(() => Promise.all(fakes.map((f) => f.close())));

  async function setup(script, maxRetries = 4) {
    const f = await Fake.start(script);
    fakes.push(f);
    const slept = [];
    const c = new Client({
      baseUrl: f.url, key: "lk_x",
      retry: { maxRetries, base: 0.2, cap: 5, sleep: async (s) => void slept.push(s) },
    });
    return { f, c, slept };
  }

  test("internal and unavailable", async () => {
    const { c } = await setup([problem("internal", 500), problem("unavailable", 503, 1)], 0);
    await assert.rejects(c.get("e1"), (e) => e instanceof InternalError && e.code === "internal" && e.status === 500);
    await assert.rejects(c.get("e1"), (e) => e instanceof Unavailable && e.retryAfter === 1);
  });

  test("an unknown code, and an answer that is not JSON", async () => {
    const { c } = await setup([problem("brand_new", 418), [502, { "Content-Type": "text/html" }, "<h1>bad gateway</h1>"]], 0);
    await assert.rejects(c.get("e1"), (e) => e.constructor === LatchError && e.code === "brand_new" && e.status === 418);
    await assert.rejects(c.get("e1"), (e) => e.code === "http_502" && e.status === 502 && e.detail.includes("bad gateway"));
  });

  test("a submit is retried with one dedup key", async () => {
    const { f, c, slept } = await setup(["close", problem("unavailable", 503), ok(201, EXEC)]);
    assert.equal((await c.submit("job", { a: 1 })).execution_id, "e1");
    assert.equal(f.requests.length, 3);
    assert.equal(new Set(f.requests.map((r) => r.body.dedup_key)).size, 1, "every retry of a submit carries the same dedup key");
    assert.equal(slept.length, 2);
    assert.ok(slept[0] >= 0.1 && slept[0] <= 0.2 && slept[1] >= 0.2 && slept[1] <= 0.4, String(slept)); // backoff with jitter
  });

  test("an Idempotency-Key is kept across retries", async () => {
    const { f, c } = await setup([problem("unavailable", 503), ok(201, EXEC)]);
    await c.submit("job", null, { idempotencyKey: "ik" });
    assert.deepEqual(f.requests.map((r) => r.headers["idempotency-key"]), ["ik", "ik"]);
    assert.ok(f.requests.every((r) => !("dedup_key" in r.body)));
  });

  test("Retry-After is honoured", async () => {
    const { c, slept } = await setup([problem("quota_exceeded", 429, 3), problem("too_many_requests", 429, 1), ok(200, EXEC)]);
    await c.get("e1", { waitSeconds: 5 });
    assert.deepEqual(slept, [3, 1]);
  });

  test("gives up after maxRetries", async () => {
    const { c, slept } = await setup([problem("unavailable", 503), problem("unavailable", 503), problem("unavailable", 503)], 2);
    await assert.rejects(c.get("e1"), Unavailable);
    assert.equal(slept.length, 2);
    const t = await setup(["close", "close", "close"], 2);
    await assert.rejects(t.c.get("e1"), (e) => e instanceof TransportError && e.code === "transport_error" && e.status === 0);
  });

  test("unsafe requests are not retried", async () => {
    const { f, c, slept } = await setup([problem("unavailable", 503), "close", problem("unavailable", 503), "close", ok(200, {})]);
    await assert.rejects(c.retry("e1"), Unavailable);
    await assert.rejects(c.delete("e1"), TransportError);
    await assert.rejects(c.signal("e1", "go", 1), Unavailable); // no idempotency key
    await assert.rejects(c.claim("w", { wait_seconds: 1 }), TransportError);
    assert.deepEqual([f.requests.length, slept], [4, []]);
  });

  test("fenced worker calls are retried", async () => {
    const { f, c, slept } = await setup(["close", ok(200, EXEC), problem("unavailable", 503), ok(200, EXEC),
      "close", ok(200, EXEC), "close", ok(200, { lease_expires_at: "x", cancel_requested: false })]);
    await c.complete("e1", "tok", { r: 1 });
    await c.fail("e1", "tok", "boom", { retry: false });
    await c.suspend("e1", "tok", "w", { signal: "go" });
    await c.heartbeat("e1", "tok");
    assert.deepEqual(f.requests.map((r) => r.path.split("/").at(-1)),
      ["complete", "complete", "fail", "fail", "suspend", "suspend", "heartbeat", "heartbeat"]);
    assert.equal(new Set(f.requests.map((r) => r.body.lease_token)).size, 1);
    assert.equal(slept.length, 4);
  });

  test("a signal with a key is retried", async () => {
    const { f, c } = await setup([problem("unavailable", 503), ok(202, { delivered: true })]);
    assert.equal(await c.signal("e1", "go", { x: 1 }, { idempotencyKey: "s1" }), true);
    assert.deepEqual(f.requests.map((r) => r.headers["idempotency-key"]), ["s1", "s1"]);
  });

  test("a trigger carries a key", async () => {
    const { f, c } = await setup(["close", ok(201, EXEC)]);
    await c.triggerSchedule("nightly");
    const keys = f.requests.map((r) => r.headers["idempotency-key"]);
    assert.equal(keys.length, 2);
    assert.ok(keys[0]);
    assert.equal(keys[0], keys[1]);
  });

  test("a redirect is not followed", async () => {
    const { f, c } = await setup([[302, { Location: "http://127.0.0.1:1/elsewhere" }, ""]], 0);
    await assert.rejects(c.get("e1"), (e) => e instanceof LatchError && e.status === 302);
    assert.equal(f.requests.length, 1);
  });

  test("an abort signal ends a request and its retries", async () => {
    const f = await Fake.start([problem("unavailable", 503, 30)]);
    fakes.push(f);
    const c = new Client({ baseUrl: f.url, key: "lk_x" });
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("gave up")), 100);
    await assert.rejects(c.submit("job", null, { signal: ac.signal }), /gave up/);
  });
});

// A step past the journal's bound throws TooManySteps in the handler, and the
// Worker fails the attempt without a retry (no later attempt could record it),
// instead of burning the execution's attempts.
describe("too_many_steps in a flow", () => {
  test("fails the attempt without a retry", async () => {
    const f = await Fake.start([problem("too_many_steps", 409), ok(200, { execution_id: "e1", status: "failed" })]);
    after(() => f.close());
    const c = new Client({ baseUrl: f.url, key: "lk_x", retry: { maxRetries: 3, sleep: async () => {} } });
    const seen = [];
    const w = new Worker(c, {
      handlers: {
        flow: async (job) => {
          try {
            return await job.step("one more", () => 1);
          } catch (err) {
            seen.push(err);
            throw err;
          }
        },
      },
    });
    const lease = { execution_id: "e1", lease_token: "t1", kind: "flow", steps: {}, attempt: 1, max_attempts: 5 };
    assert.equal(await w.runLease(lease), "failed");
    assert.equal(seen.length, 1);
    assert.ok(seen[0] instanceof TooManySteps && seen[0] instanceof Conflict);
    assert.deepEqual(f.requests.map((r) => [r.method, r.path]),
      [["POST", "/api/executions/e1/steps"], ["POST", "/api/executions/e1/fail"]]);
    assert.equal(f.requests[1].body.retry, false);
    assert.match(f.requests[1].body.error, /too_many_steps/);
  });
});

// A page may hold fewer items than the limit, even none, while its
// next_cursor is set (the server bounds the executions one request
// examines): the iterators follow the cursor, not the page's size.
describe("paging", () => {
  test("an empty page with a cursor is followed", async () => {
    const f = await Fake.start([
      ok(200, { items: [{ id: "e3" }], next_cursor: "c1" }),
      ok(200, { items: [], next_cursor: "c2" }),
      ok(200, { items: [{ id: "e1" }], next_cursor: null }),
    ]);
    try {
      const c = new Client({ baseUrl: f.url, key: "lk_x" });
      const got = [];
      for await (const e of c.list({ kind: "rare", limit: 2 })) got.push(e.id);
      assert.deepEqual(got, ["e3", "e1"]);
      assert.deepEqual(f.requests.map((r) => new URL(r.path, f.url).searchParams.get("cursor")), [null, "c1", "c2"]);
    } finally {
      await f.close();
    }
  });
});
