// Flows through the Worker: steps recorded once, sleeps, signal waits (with a
// timeout, and a signal sent before the wait), all with the lease's journal.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";

import { Job, Suspended, WaitTimedOut, Worker } from "../dist/index.js";
import { Server } from "./latchserver.mjs";

describe("flows", () => {
  let srv;
  let c;
  before(async () => (srv = await Server.start()));
  after(() => srv.stop());
  beforeEach(async () => (c = await srv.newTenant("flow")));

  test("step, sleep, step", async () => {
    const calls = [];
    const w = new Worker(c, {
      handlers: {
        napper: async (job) => {
          const a = await job.step("a", () => (calls.push("a"), { v: 1 }));
          await job.sleep("nap", { seconds: 1 });
          const b = await job.step("b", async () => (calls.push("b"), { v: 2 }));
          return { a, b };
        },
      },
    });
    const e = await c.submit("napper");
    assert.equal(await w.runOnce({ waitSeconds: 2 }), 1);
    const s = await c.get(e.execution_id);
    assert.deepEqual([s.status, s.waiting_for], ["suspended", null]);
    assert.ok(s.wake_at);
    assert.equal(await w.runOnce({ waitSeconds: 10 }), 1); // claimed once the sleep is due
    const done = await c.get(e.execution_id);
    assert.deepEqual([done.status, done.attempt], ["succeeded", 1]);
    assert.deepEqual(done.result, { a: { v: 1 }, b: { v: 2 } });
    assert.deepEqual(calls, ["a", "b"]);
    assert.deepEqual((await c.steps(e.execution_id)).map((x) => [x.name, x.result]), [["a", { v: 1 }], ["nap", null], ["b", { v: 2 }]]);
    assert.deepEqual((await c.attempts(e.execution_id)).map((x) => x.outcome), ["suspended", "succeeded"]);
  });

  test("a journal larger than the lease replays", async () => {
    // Three steps of 600 KB: the lease after the sleep carries the first two
    // (1 MiB at most, the step that reaches it included) and says it is
    // partial; the third comes from the steps read, and none runs twice.
    const calls = [];
    const leases = [];
    const big = Object.fromEntries(["s0", "s1", "s2"].map((n) => [n, n + "x".repeat(600 << 10)]));
    const w = new Worker(c, {
      handlers: {
        big: async (job) => {
          leases.push(job.lease);
          for (const n of ["s0", "s1", "s2"]) {
            assert.equal(await job.step(n, () => (calls.push(n), big[n])), big[n]);
          }
          await job.sleep("nap", { until: new Date(Date.now() - 1000) });
          return "done";
        },
      },
    });
    const e = await c.submit("big");
    assert.equal(await w.runOnce({ waitSeconds: 2 }), 1);
    assert.equal((await c.get(e.execution_id)).status, "queued"); // the sleep was due: queued at once
    assert.equal(await w.runOnce({ waitSeconds: 5 }), 1);
    const done = await c.get(e.execution_id);
    assert.deepEqual([done.status, done.result], ["succeeded", "done"]);
    assert.deepEqual(calls, ["s0", "s1", "s2"]);
    assert.equal(leases[1].steps_complete, false);
    assert.deepEqual(Object.keys(leases[1].steps).sort(), ["s0", "s1"]);
    const page = await c.stepsPage(e.execution_id, { limit: 2 });
    assert.deepEqual(page.items.map((x) => x.name), ["s0", "s1"]);
    assert.ok(page.next_cursor);
    assert.deepEqual((await c.steps(e.execution_id)).map((x) => x.name), ["s0", "s1", "s2", "nap"]);
  });

  test("sleep until a time", async () => {
    const w = new Worker(c, {
      handlers: {
        until: async (job) => {
          await job.sleep("past", { until: new Date(Date.now() - 1000) });
          return "woke";
        },
      },
    });
    const e = await c.submit("until");
    await w.runOnce({ waitSeconds: 2 });
    assert.equal((await c.get(e.execution_id)).status, "queued"); // not in the future: queued at once
    await w.runOnce({ waitSeconds: 5 });
    assert.equal((await c.get(e.execution_id)).result, "woke");
    const job = new Job(c, { execution_id: e.execution_id, lease_token: "t", kind: "until", steps: {} });
    await assert.rejects(job.sleep("n", {}), TypeError); // neither seconds nor until
    await assert.rejects(job.sleep("n", { seconds: 1, until: new Date() }), TypeError); // both
  });

  test("a wait that times out", async () => {
    const w = new Worker(c, {
      handlers: {
        approver: async (job) => {
          try {
            await job.waitSignal("approval", "approve", { timeout: 1 });
          } catch (err) {
            if (err instanceof WaitTimedOut) return "timed out";
            throw err;
          }
          return "approved";
        },
      },
    });
    const e = await c.submit("approver");
    await w.runOnce({ waitSeconds: 2 });
    const s = await c.get(e.execution_id);
    assert.deepEqual([s.status, s.waiting_for], ["suspended", "approve"]);
    assert.equal(await w.runOnce({ waitSeconds: 10 }), 1);
    assert.equal((await c.get(e.execution_id)).result, "timed out");
  });

  test("a signal sent before the wait", async () => {
    const suspends = [];
    const w = new Worker(c, {
      handlers: {
        early: async (job) => {
          try {
            return await job.waitSignal("w", "go");
          } catch (err) {
            if (err instanceof Suspended) suspends.push(err.execution.status);
            throw err;
          }
        },
      },
    });
    const e = await c.submit("early");
    assert.equal(await c.signal(e.execution_id, "go", { early: true }), false); // kept
    await w.runOnce({ waitSeconds: 2 });
    assert.deepEqual(suspends, ["queued"]); // consumed at once
    await w.runOnce({ waitSeconds: 5 });
    assert.deepEqual((await c.get(e.execution_id)).result, { early: true });
  });

  test("a handler that swallows Suspended still ends the run suspended", async () => {
    const w = new Worker(c, {
      handlers: {
        broad: async (job) => {
          try {
            await job.waitSignal("w", "go");
          } catch {
            return "swallowed"; // a broad catch: the suspend already ended the lease
          }
          return "resumed";
        },
      },
    });
    const e = await c.submit("broad");
    const [lease] = await w.claim({ waitSeconds: 2 });
    assert.equal(await w.runLease(lease), "suspended");
    assert.equal((await c.get(e.execution_id)).status, "suspended");
  });
});
