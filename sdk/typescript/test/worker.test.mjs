// The Worker: complete, fail and retry, cancel through the heartbeat (the
// job's AbortSignal), a lost lease, concurrency, and a graceful stop on
// SIGTERM and SIGINT.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";

import { Fail, JobCancelled, Worker } from "../dist/index.js";
import { Server } from "./latchserver.mjs";
import { startWorkerProcess } from "./procs.mjs";

const quiet = { info() {}, warn() {}, error() {} };

describe("Worker", () => {
  let srv;
  let c;
  before(async () => (srv = await Server.start()));
  after(() => srv.stop());
  beforeEach(async () => (c = await srv.newTenant("worker")));

  test("complete", async () => {
    const w = new Worker(c, { handlers: { double: (job) => ({ n: job.payload.n * 2, attempt: job.attempt }) }, waitSeconds: 2 });
    const e = await c.submit("double", { n: 21 });
    assert.equal(await w.runOnce(), 1);
    const got = await c.get(e.execution_id);
    assert.deepEqual([got.status, got.result], ["succeeded", { n: 42, attempt: 1 }]);
    assert.equal(await w.runOnce({ waitSeconds: 0 }), 0); // nothing left
  });

  test("a result over the storage budget fails the attempt without a retry", async () => {
    const small = await srv.newTenant("worker", { max_stored_bytes: 100 });
    const w = new Worker(small, { handlers: { big: () => "x".repeat(200) }, waitSeconds: 2, logger: quiet });
    const e = await small.submit("big", null, { max_attempts: 3 });
    assert.equal(await w.runOnce(), 1);
    const got = await small.get(e.execution_id);
    assert.deepEqual([got.status, got.attempt, got.result], ["failed", 1, null]);
    assert.match(got.error, /StorageExceeded/);
  });

  test("a failure is retried", async () => {
    const w = new Worker(c, { handlers: { boom: () => { throw new RangeError("bad input"); } } });
    const e = await c.submit("boom", null, { max_attempts: 3 });
    await w.runOnce({ waitSeconds: 2 });
    const got = await c.get(e.execution_id);
    assert.deepEqual([got.attempt, got.error], [1, "RangeError: bad input"]);
    assert.ok(["scheduled", "queued"].includes(got.status), got.status); // after the server's backoff of about a second
    // It runs again once due: the second attempt completes.
    const w2 = new Worker(c, { handlers: { boom: (job) => ({ attempt: job.attempt }) } });
    assert.equal(await w2.runOnce({ waitSeconds: 10 }), 1);
    const done = await c.get(e.execution_id);
    assert.deepEqual([done.status, done.attempt, done.result], ["succeeded", 2, { attempt: 2 }]);
  });

  test("the failure a handler chooses", async () => {
    const outcomes = { final: new Fail("no use", { retry: false }), later: new Fail("try later", { retryAfterSeconds: 3600 }) };
    const w = new Worker(c, {
      handlers: {
        choose: (job) => { throw outcomes[job.payload.o]; },
        last: async () => { throw new TypeError("x is not a function"); },
        notjson: () => ({ n: 1n }),
      },
      logger: quiet,
    });
    const final = await c.submit("choose", { o: "final" }, { max_attempts: 5 });
    const later = await c.submit("choose", { o: "later" }, { max_attempts: 5 });
    const last = await c.submit("last", null, { max_attempts: 1 });
    const notjson = await c.submit("notjson", null, { max_attempts: 5 });
    for (let i = 0; i < 4; i++) assert.equal(await w.runOnce({ waitSeconds: 2 }), 1);
    const f = await c.get(final.execution_id);
    assert.deepEqual([f.status, f.error], ["failed", "no use"]);
    const lt = await c.get(later.execution_id);
    assert.equal(lt.status, "scheduled");
    const ahead = (Date.parse(lt.run_at) - Date.now()) / 1000;
    assert.ok(ahead > 3500 && ahead <= 3600, String(ahead));
    const la = await c.get(last.execution_id);
    assert.deepEqual([la.status, la.error], ["failed", "TypeError: x is not a function"]);
    const nj = await c.get(notjson.execution_id);
    assert.equal(nj.status, "failed");
    assert.match(nj.error, /not JSON/);
  });

  test("a cancel reaches the handler through the heartbeat, as its AbortSignal", async () => {
    let started;
    const startedP = new Promise((r) => (started = r));
    let reason;
    const w = new Worker(c, {
      leaseSeconds: 3, // a heartbeat every second
      handlers: {
        long: async (job) => {
          started();
          await new Promise((resolve, reject) => {
            const t = setTimeout(() => reject(new Error("no cancel within 15 s")), 15_000);
            job.signal.addEventListener("abort", () => {
              clearTimeout(t);
              reason = job.signal.reason;
              resolve();
            });
          });
          job.throwIfCancelled();
          return "not reached";
        },
      },
    });
    const e = await c.submit("long");
    const leases = await w.claim({ waitSeconds: 2 });
    const outcome = w.runLease(leases[0]);
    await startedP;
    assert.equal((await c.cancel(e.execution_id)).cancel_requested, true);
    assert.equal(await outcome, "failed");
    assert.ok(reason instanceof JobCancelled);
    assert.equal(reason.message, "cancel requested");
    assert.equal((await c.get(e.execution_id)).status, "cancelled");
  });

  test("a lost lease drops the attempt", async () => {
    let started;
    const startedP = new Promise((r) => (started = r));
    const w = new Worker(c, {
      leaseSeconds: 3,
      logger: quiet,
      handlers: {
        long: async (job) => {
          started();
          await new Promise((resolve) => job.signal.addEventListener("abort", resolve));
          assert.equal(job.leaseLost, true);
          return "dropped";
        },
      },
    });
    const e = await c.submit("long");
    const [lease] = await w.claim({ waitSeconds: 2 });
    const outcome = w.runLease(lease);
    await startedP;
    await c.delete(e.execution_id, { force: true });
    assert.equal(await outcome, "lease_lost");
  });

  test("concurrency", async () => {
    let running = 0;
    let arrive;
    const together = new Promise((r) => (arrive = r));
    const w = new Worker(c, {
      concurrency: 3,
      waitSeconds: 1,
      handlers: {
        meet: async (job) => {
          running++;
          if (running === 3) arrive();
          await together; // passes only when three jobs run at once
          return { id: job.executionId, together: running };
        },
      },
    });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await c.submit("meet")).execution_id);
    const run = w.run({ installSignalHandlers: false });
    let results;
    try {
      results = await Promise.all(ids.map((id) => c.wait(id, { timeout: 20 })));
    } finally {
      w.stop();
      await run;
    }
    assert.deepEqual(results.map((r) => r.status), ["succeeded", "succeeded", "succeeded"]);
    assert.deepEqual(results.map((r) => r.result.together), [3, 3, 3]);
  });

  for (const sig of ["SIGTERM", "SIGINT"]) {
    test(`graceful stop on ${sig}: the running job finishes, nothing new is claimed`, async () => {
      const t = await srv.newTenant("graceful");
      const first = await t.submit("slow", null, { priority: 1 });
      const second = await t.submit("slow");
      const p = startWorkerProcess(srv, t.key, "graceful");
      try {
        const line = await p.readLine();
        assert.deepEqual(line.split(" "), ["started", first.execution_id], p.stderrText);
        p.kill(sig);
        const { code } = await p.exited;
        assert.deepEqual([code, await p.rest()], [0, ["stopped"]], p.stderrText);
      } finally {
        p.kill("SIGKILL");
      }
      const got = await t.get(first.execution_id);
      assert.deepEqual([got.status, got.result], ["succeeded", { saw_stop: true }]);
      assert.equal((await t.get(second.execution_id)).status, "queued"); // not claimed after the stop
    });
  }
});
