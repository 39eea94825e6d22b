// Children through the Worker, against a real `latch serve`: a flow spawns
// children and waits for them, a replay gets the same ids and admits nothing,
// a failed child is reported (not thrown), waits with a count and a timeout,
// map, the parent's end, and the listing of children.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";

import { ChildrenTimedOut, Fail, InvalidRequest, Suspended, WaitTimedOut, Worker } from "../dist/index.js";
import { Server } from "./latchserver.mjs";

function square(job) {
  const { n } = job.payload;
  if (n === 2) throw new Fail("two is not welcome", { retry: false });
  return n * n;
}

describe("children", () => {
  let srv;
  let c;
  let kids;
  before(async () => (srv = await Server.start()));
  after(() => srv.stop());
  beforeEach(async () => {
    c = await srv.newTenant("children");
    kids = new Worker(c, { handlers: { square } });
  });

  async function runChildren(n) {
    for (let i = 0; i < n; i++) assert.equal(await kids.runOnce({ waitSeconds: 5 }), 1);
  }

  test("spawn three, wait for all, replay the same ids, a failed child reported", async () => {
    const spawned = [];
    const replays = [];
    const suspends = [];
    const w = new Worker(c, {
      handlers: {
        parent: async (job) => {
          const ids = await job.spawn("kids", [1, 2, 3].map((n) => ({ kind: "square", payload: { n } })));
          spawned.push(ids);
          if (spawned.length > 1) {
            // The server's own replay: the same step admits nothing and
            // answers the first spawn's children, whatever the items.
            replays.push(await job.client.spawnChildren(job.executionId, job.leaseToken, "kids",
              [{ kind: "square", payload: { n: 9 } }]));
          }
          let outs;
          try {
            outs = await job.waitChildren("all", "kids");
          } catch (err) {
            if (err instanceof Suspended) suspends.push(err.execution.status);
            throw err;
          }
          return { ids, outs };
        },
      },
    });
    const pid = (await c.submit("parent")).execution_id;
    assert.equal(await w.runOnce({ waitSeconds: 2 }), 1);
    assert.deepEqual(suspends, ["suspended"]);
    const s = await c.get(pid);
    assert.deepEqual([s.status, s.waiting_for], ["suspended", "children:kids"]);
    const ids = spawned[0];
    assert.equal(new Set(ids).size, 3);

    const children = await c.children(pid);
    assert.deepEqual(children.map((k) => k.execution_id), ids); // spawn order
    assert.deepEqual(children.map((k) => [k.parent_id, k.parent_step, k.kind]), ids.map(() => [pid, "kids", "square"]));
    assert.deepEqual(children.map((k) => k.payload), [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const page = await c.listPage({ parent_id: pid, limit: 2 });
    assert.deepEqual(page.items.map((k) => k.execution_id), ids.slice(0, 2));
    assert.ok(page.next_cursor);
    assert.equal((await c.getTenant(c.tenantName)).inflight, 4);

    await runChildren(3);
    assert.equal(await w.runOnce({ waitSeconds: 10 }), 1); // the last child's end queued the parent
    const done = await c.wait(pid, { timeout: 5 });
    assert.deepEqual([done.status, done.attempt], ["succeeded", 1]);
    assert.deepEqual(spawned, [ids, ids]); // the replay got the same ids from the journal
    assert.equal(replays.length, 1);
    assert.equal(replays[0].recorded, false);
    assert.deepEqual(replays[0].children.map((x) => x.execution_id), ids);
    assert.equal((await c.children(pid)).length, 3); // nothing admitted by the replays
    const outs = done.result.outs;
    assert.deepEqual(outs.map((o) => o.execution_id), ids);
    assert.deepEqual(outs.map((o) => o.status), ["succeeded", "failed", "succeeded"]);
    assert.deepEqual(outs.map((o) => o.result), [1, null, 9]);
    assert.equal(outs[0].error, null);
    assert.match(outs[1].error, /two is not welcome/);
    const steps = await c.steps(pid);
    assert.deepEqual(steps.map((x) => x.name), ["kids", "all"]);
    assert.deepEqual(steps[0].result, { children: ids });
  });

  test("a wait for a count; the parent's end cancels the live child", async () => {
    const w = new Worker(c, {
      handlers: {
        parent: async (job) => {
          await job.spawn("kids", [{ kind: "square", payload: { n: 3 } }, { kind: "nobody-runs-this", payload: {} }]);
          const outs = await job.waitChildren("first", "kids", { count: 1 });
          return outs.map((o) => o.status);
        },
      },
    });
    const pid = (await c.submit("parent")).execution_id;
    await w.runOnce({ waitSeconds: 2 });
    assert.equal((await c.get(pid)).status, "suspended");
    await runChildren(1);
    assert.equal(await w.runOnce({ waitSeconds: 10 }), 1);
    assert.deepEqual((await c.wait(pid, { timeout: 5 })).result, ["succeeded", "queued"]);
    assert.deepEqual((await c.children(pid)).map((k) => k.status), ["succeeded", "cancelled"]);
  });

  test("a wait's timeout throws ChildrenTimedOut with the children; abandoned children outlive the parent", async () => {
    const w = new Worker(c, {
      handlers: {
        parent: async (job) => {
          await job.spawn("kids", [{ kind: "nobody-runs-this" }], { on_parent_end: "abandon" });
          try {
            await job.waitChildren("all", "kids", { timeout: 1 });
          } catch (err) {
            if (!(err instanceof ChildrenTimedOut)) throw err;
            assert.ok(err instanceof WaitTimedOut);
            return { timed_out: err.children.map((x) => x.status) };
          }
          return "all ended";
        },
      },
    });
    const pid = (await c.submit("parent")).execution_id;
    await w.runOnce({ waitSeconds: 2 });
    const s = await c.get(pid);
    assert.deepEqual([s.status, s.waiting_for], ["suspended", "children:kids"]);
    assert.ok(s.wake_at);
    assert.equal(await w.runOnce({ waitSeconds: 10 }), 1);
    assert.deepEqual((await c.wait(pid, { timeout: 5 })).result, { timed_out: ["queued"] });
    assert.deepEqual((await c.children(pid)).map((k) => k.status), ["queued"]);
  });

  test("map", async () => {
    const w = new Worker(c, {
      handlers: {
        parent: async (job) => {
          const outs = await job.map("sq", "square", [3, 4, 5].map((n) => ({ n })), { child: { max_attempts: 1 } });
          return outs.map((o) => o.result);
        },
      },
    });
    const pid = (await c.submit("parent")).execution_id;
    await w.runOnce({ waitSeconds: 2 });
    assert.deepEqual((await c.children(pid)).map((k) => k.max_attempts), [1, 1, 1]);
    await runChildren(3);
    await w.runOnce({ waitSeconds: 10 });
    assert.deepEqual((await c.wait(pid, { timeout: 5 })).result, [9, 16, 25]);
    assert.deepEqual((await c.steps(pid)).map((x) => x.name), ["sq", "sq/wait"]);
  });

  test("a spawn or a wait that breaks a rule changes nothing", async () => {
    const errors = [];
    const w = new Worker(c, {
      handlers: {
        parent: async (job) => {
          try {
            await job.spawn("kids", [{ kind: "square", dedup_key: "no" }]);
          } catch (err) {
            errors.push(err);
          }
          try {
            await job.waitChildren("w", "not-a-spawn");
          } catch (err) {
            errors.push(err);
          }
          return "done";
        },
      },
    });
    const pid = (await c.submit("parent")).execution_id;
    await w.runOnce({ waitSeconds: 2 });
    assert.equal((await c.wait(pid, { timeout: 5 })).result, "done");
    assert.deepEqual(errors.map((e) => [e instanceof InvalidRequest, e.code]), [[true, "invalid_request"], [true, "invalid_request"]]);
    assert.match(errors[0].message, /dedup_key/);
    assert.deepEqual(await c.children(pid), []);
    assert.deepEqual(await c.steps(pid), []);
  });
});
