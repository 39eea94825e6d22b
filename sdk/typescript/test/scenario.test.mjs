// The shared SDK scenario, sdk/SCENARIO.md, step by step.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { Worker } from "../dist/index.js";
import { Server } from "./latchserver.mjs";
import { startWorkerProcess } from "./procs.mjs";

describe("sdk/SCENARIO.md", () => {
  let srv;
  before(async () => (srv = await Server.start()));
  after(() => srv.stop());

  test("(a) one dedup key, 64 concurrent submits", async () => {
    const c = await srv.newTenant("scenario-a");
    // The barrier: 64 tasks wait on one promise, then each submits once, at the same moment.
    let release;
    const barrier = new Promise((r) => (release = r));
    let waiting = 0;
    const tasks = Array.from({ length: 64 }, async () => {
      if (++waiting === 64) release();
      await barrier;
      return c.submit("scenario-a", { n: 1 }, { dedup_key: "scenario-a" });
    });
    const settled = await Promise.allSettled(tasks);
    assert.deepEqual(settled.filter((s) => s.status === "rejected").map((s) => String(s.reason)), []);
    const answers = settled.map((s) => s.value);
    assert.equal(answers.length, 64);
    const ids = new Set(answers.map((a) => a.execution_id));
    assert.equal(ids.size, 1, [...ids].join(","));
    assert.deepEqual(answers.map((a) => a.deduplicated).sort(), [false, ...Array(63).fill(true)]);
    const listed = await c.listPage({ dedup_key: "scenario-a" });
    assert.deepEqual(listed.items.map((e) => e.execution_id), [...ids]);
    assert.equal((await c.getTenant(c.tenantName)).inflight, 1);
  });

  test("(b) a worker killed mid-job", async () => {
    const c = await srv.newTenant("scenario-b");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "latch-effect-"));
    const effect = path.join(dir, "effect");
    fs.writeFileSync(effect, "");
    try {
      const e = await c.submit("scenario-b", {}, { max_attempts: 3 });
      const id = e.execution_id;

      const a = startWorkerProcess(srv, c.key, "effect", { EFFECT_FILE: effect, HANG: "1" });
      try {
        const line = await a.readLine();
        assert.deepEqual(line.split(" "), ["started", "1"], line ? "" : a.stderrText);
        const running = await c.get(id);
        assert.deepEqual([running.status, running.attempt], ["running", 1]);
      } finally {
        a.kill("SIGKILL");
      }
      assert.deepEqual(await a.exited, { code: null, signal: "SIGKILL" });

      const b = startWorkerProcess(srv, c.key, "effect", { EFFECT_FILE: effect });
      try {
        const done = await c.wait(id, { timeout: 20 });
        assert.deepEqual([done.status, done.attempt, done.result], ["succeeded", 2, { attempt: 2 }]);
        assert.deepEqual(fs.readFileSync(effect, "utf8").split("\n").filter(Boolean), ["start 1", "start 2", "done 2"]);
        assert.deepEqual((await c.attempts(id)).map((x) => [x.attempt, x.outcome]), [[1, "expired"], [2, "succeeded"]]);
        b.kill("SIGTERM");
        const { code } = await b.exited;
        assert.equal(code, 0, b.stderrText);
        assert.deepEqual(await b.rest(), ["started 2", "stopped"]);
      } finally {
        b.kill("SIGKILL");
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("(c) a two-step flow that waits for a signal between its steps", async () => {
    const c = await srv.newTenant("scenario-c");
    const calls = { one: 0, two: 0 };
    const one = (order) => (calls.one++, { reserved: order });
    const two = (by) => (calls.two++, { shipped_by: by });
    const w = new Worker(c, {
      handlers: {
        "scenario-c": async (job) => {
          const r1 = await job.step("one", () => one(job.payload.order));
          const approval = await job.waitSignal("approval", "approve", { timeout: 60 });
          const r2 = await job.step("two", () => two(approval.by));
          return { one: r1, two: r2 };
        },
      },
    });
    const id = (await c.submit("scenario-c", { order: 7 })).execution_id;

    assert.equal(await w.runOnce({ waitSeconds: 5 }), 1);
    const s = await c.get(id);
    assert.deepEqual([s.status, s.waiting_for, s.attempt], ["suspended", "approve", 1]);
    assert.deepEqual((await c.steps(id)).map((x) => [x.name, x.result]), [["one", { reserved: 7 }]]);

    assert.equal(await c.signal(id, "approve", { by: "ann" }), true);

    assert.equal(await w.runOnce({ waitSeconds: 5 }), 1);
    const done = await c.get(id);
    assert.deepEqual([done.status, done.attempt], ["succeeded", 1]);
    assert.deepEqual(done.result, { one: { reserved: 7 }, two: { shipped_by: "ann" } });
    assert.deepEqual((await c.steps(id)).map((x) => [x.name, x.result, x.attempt]),
      [["one", { reserved: 7 }, 1], ["approval", { by: "ann" }, 1], ["two", { shipped_by: "ann" }, 1]]);
    assert.deepEqual(calls, { one: 1, two: 1 });
  });
});
