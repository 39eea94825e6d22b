// Events and subscriptions against a real `latch serve`: publish (once per
// idempotency key), flows waiting for an event (by key, since, a timeout, an
// event published before the wait, one event resuming many, each consumed
// once per execution), subscriptions starting executions, and tenants kept apart.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";

import { InvalidRequest, NotFound, Suspended, TooManySubscriptions, WaitTimedOut, Worker, formatTime } from "../dist/index.js";
import { Server } from "./latchserver.mjs";

describe("events", () => {
  let srv;
  let c;
  before(async () => (srv = await Server.start()));
  after(() => srv.stop());
  beforeEach(async () => (c = await srv.newTenant("events")));

  test("publish once per idempotency key", async () => {
    const a = await c.publish("ping", { n: 1 }, { idempotencyKey: "ping-1" });
    assert.deepEqual([a.resumed, a.started], [0, []]);
    assert.ok(a.event_id);
    assert.deepEqual(await c.publish("ping", { n: 1 }, { idempotencyKey: "ping-1" }), a);
    const other = await c.publish("ping", { n: 1 }); // a fresh key: another event
    assert.notEqual(other.event_id, a.event_id);
    await assert.rejects(c.publish("not a name!", {}), InvalidRequest);
    await assert.rejects(c.publish("ping", {}, { key: "" }), InvalidRequest);
  });

  test("a wait by key, then the publish", async () => {
    const suspends = [];
    const w = new Worker(c, {
      handlers: {
        order: async (job) => {
          let ev;
          try {
            ev = await job.waitEvent("paid", "payment", { key: job.payload.order });
          } catch (err) {
            if (err instanceof Suspended) suspends.push(err.execution.status);
            throw err;
          }
          return { data: ev.data, key: ev.key, name: ev.name, id: ev.event_id };
        },
      },
    });
    const e = await c.submit("order", { order: "o-7" });
    await w.runOnce({ waitSeconds: 2 });
    assert.deepEqual(suspends, ["suspended"]);
    const s = await c.get(e.execution_id);
    assert.deepEqual([s.status, s.waiting_for], ["suspended", "event:payment"]);
    assert.equal((await c.publish("payment", { amount: 1 }, { key: "o-8" })).resumed, 0); // another key
    const pub = await c.publish("payment", { amount: 2 }, { key: "o-7" });
    assert.equal(pub.resumed, 1);
    assert.equal((await c.get(e.execution_id)).status, "queued");
    assert.equal(await w.runOnce({ waitSeconds: 5 }), 1);
    const done = await c.wait(e.execution_id, { timeout: 5 });
    assert.deepEqual(done.result, { data: { amount: 2 }, key: "o-7", name: "payment", id: pub.event_id });
    const [st] = await c.steps(e.execution_id);
    assert.deepEqual([st.name, st.result.event_id], ["paid", pub.event_id]);
    assert.ok(st.result.published_at);
  });

  test("an event published before the wait is consumed at once, and once", async () => {
    const suspends = [];
    const w = new Worker(c, {
      handlers: {
        ticker: async (job) => {
          const got = [];
          for (const step of ["first", "second"]) {
            try {
              got.push((await job.waitEvent(step, "tick", { timeout: 1 })).data);
            } catch (err) {
              if (err instanceof WaitTimedOut) got.push("timed out");
              else {
                if (err instanceof Suspended) suspends.push(err.execution.status);
                throw err;
              }
            }
          }
          return got;
        },
      },
    });
    const e = await c.submit("ticker");
    assert.equal((await c.publish("tick", 1)).resumed, 0); // kept: no one waits yet
    await w.runOnce({ waitSeconds: 2 });
    assert.deepEqual(suspends, ["queued"]); // the first wait consumed it at once
    await w.runOnce({ waitSeconds: 5 });
    assert.deepEqual(suspends, ["queued", "suspended"]); // the second does not get it again
    assert.equal(await w.runOnce({ waitSeconds: 10 }), 1); // the timeout ends the second wait
    assert.deepEqual((await c.wait(e.execution_id, { timeout: 5 })).result, [1, "timed out"]);
  });

  test("since, and one event resuming many", async () => {
    let since;
    const w = new Worker(c, {
      handlers: {
        goer: async (job) => (await job.waitEvent("go", "go", { since: job.payload.default ? undefined : since })).data,
      },
    });
    const ids = [];
    for (const d of [true, false, false]) ids.push((await c.submit("goer", { default: d })).execution_id);
    await c.publish("go", "old"); // after all three were created
    await new Promise((r) => setTimeout(r, 50));
    since = formatTime(new Date());
    assert.equal(await w.runOnce({ max: 3, waitSeconds: 2 }), 3);
    // The default since (its creation) takes the old event at once; a later since does not.
    assert.deepEqual(await Promise.all(ids.map(async (i) => (await c.get(i)).status)), ["queued", "suspended", "suspended"]);
    assert.equal((await c.publish("go", "new")).resumed, 2); // one event, two waits
    while (await w.runOnce({ max: 3, waitSeconds: 3 }));
    assert.deepEqual(await Promise.all(ids.map(async (i) => (await c.wait(i, { timeout: 5 })).result)), ["old", "new", "new"]);
  });

  test("subscriptions", async () => {
    const sub = await c.putSubscription("on-signup", { event: "signup", kind: "welcome", max_attempts: 2 });
    assert.deepEqual([sub.name, sub.event, sub.kind, sub.max_attempts, sub.enabled, sub.tenant],
      ["on-signup", "signup", "welcome", 2, true, c.tenantName]);
    await c.putSubscription("off", { event: "signup", kind: "audit", enabled: false });
    assert.equal((await c.getSubscription("on-signup")).kind, "welcome");
    assert.deepEqual((await c.subscriptions()).map((s) => s.name).sort(), ["off", "on-signup"]);

    const pub = await c.publish("signup", { user: "ann" }, { key: "ann", idempotencyKey: "signup-ann" });
    assert.deepEqual(pub.started.map((s) => s.subscription), ["on-signup"]); // not the disabled one
    const e = await c.get(pub.started[0].execution_id);
    assert.deepEqual([e.kind, e.max_attempts, e.dedup_key], ["welcome", 2, `event:${pub.event_id}:on-signup`]);
    assert.deepEqual([e.payload.event_id, e.payload.name, e.payload.key, e.payload.data],
      [pub.event_id, "signup", "ann", { user: "ann" }]);
    assert.deepEqual(await c.publish("signup", { user: "ann" }, { key: "ann", idempotencyKey: "signup-ann" }), pub);
    const welcomes = [];
    for await (const x of c.list({ kind: "welcome" })) welcomes.push(x);
    assert.equal(welcomes.length, 1); // the repeat started nothing

    const replaced = await c.putSubscription("on-signup", { event: "signup", kind: "welcome-2" });
    assert.deepEqual([replaced.kind, replaced.created_at], ["welcome-2", sub.created_at]);
    // A GET answer is a valid body: sent back, it changes nothing.
    const back = await c.putSubscription("on-signup", await c.getSubscription("on-signup"));
    assert.equal(back.kind, "welcome-2");
    await c.deleteSubscription("on-signup");
    await assert.rejects(c.getSubscription("on-signup"), NotFound);
    assert.deepEqual((await c.publish("signup", {})).started, []);
    await assert.rejects(c.putSubscription("bad", { event: "signup" }), InvalidRequest); // no kind
  });

  test("too many subscriptions", async () => {
    for (let i = 0; i < 100; i++) await c.putSubscription(`s${String(i).padStart(3, "0")}`, { event: "e", kind: "k" });
    const err = await c.putSubscription("one-more", { event: "e", kind: "k" }).catch((x) => x);
    assert.ok(err instanceof TooManySubscriptions, String(err));
    assert.deepEqual([err.code, err.status], ["too_many_subscriptions", 409]);
    assert.equal((await c.putSubscription("s000", { event: "e", kind: "k2" })).kind, "k2"); // a replace is allowed
    assert.equal((await c.subscriptions()).length, 100);
    await assert.rejects(c.getSubscription("one-more"), NotFound);
    // The admin's list of every tenant's takes more than one page of 100:
    // subscriptions() follows next_cursor to the end.
    const other = await srv.newTenant("events-more");
    await other.putSubscription("last", { event: "e", kind: "k" });
    const every = await srv.admin().subscriptions();
    const mine = every.filter((s) => s.tenant === c.tenantName).map((s) => s.name);
    assert.deepEqual(mine, Array.from({ length: 100 }, (_, i) => "s" + String(i).padStart(3, "0")));
    assert.ok(every.some((s) => s.tenant === other.tenantName && s.name === "last"));
    const keys = every.map((s) => [s.tenant, s.name]);
    const sorted = [...keys].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    assert.deepEqual(keys, sorted);
  });

  test("tenants apart", async () => {
    const other = await srv.newTenant("events-other");
    await other.putSubscription("theirs", { event: "shared", kind: "x" });
    const w = new Worker(c, { handlers: { waiter: (job) => job.waitEvent("w", "shared", { timeout: 2 }) } });
    const e = await c.submit("waiter");
    await w.runOnce({ waitSeconds: 2 });
    assert.equal((await other.publish("shared", "theirs")).resumed, 0); // not this tenant's wait
    assert.deepEqual((await c.publish("shared", "ours")).started, []); // not their subscription
    await assert.rejects(c.getSubscription("theirs"), NotFound);
    await w.runOnce({ waitSeconds: 5 });
    assert.equal((await c.wait(e.execution_id, { timeout: 5 })).result.data, "ours");
  });
});
