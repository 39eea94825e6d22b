// Each call of the Client against a real `latch serve`.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";

import { Client, DedupKeyReused, InvalidRequest, LatchError, NotFound, PayloadTooLarge, TERMINAL, Unfinished } from "../dist/index.js";
import { ADMIN_KEY, Server } from "./latchserver.mjs";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("Client", () => {
  let srv;
  let c;
  before(async () => (srv = await Server.start()));
  after(() => srv.stop());
  beforeEach(async () => (c = await srv.newTenant("client")));

  async function claimOne(kind) {
    const leases = await c.claim("t-worker", { kinds: [kind], wait_seconds: 2 });
    assert.equal(leases.length, 1, JSON.stringify(leases));
    return leases[0];
  }

  test("submit with a dedup key", async () => {
    const a = await c.submit("mail", { to: "ann" }, { dedup_key: "order-1" });
    assert.equal(a.deduplicated, false);
    assert.deepEqual([a.status, a.kind, a.payload, a.dedup_key], ["queued", "mail", { to: "ann" }, "order-1"]);
    const b = await c.submit("mail", { to: "ann" }, { dedup_key: "order-1" });
    assert.equal(b.deduplicated, true);
    assert.equal(b.execution_id, a.execution_id);
    await assert.rejects(c.submit("mail", { to: "bob" }, { dedup_key: "order-1" }), DedupKeyReused);
  });

  test("submit with an Idempotency-Key header", async () => {
    const a = await c.submit("mail", { n: 1 }, { idempotencyKey: "idem-1" });
    assert.equal(a.dedup_key, "idem-1");
    const b = await c.submit("mail", { n: 1 }, { idempotencyKey: "idem-1" });
    assert.deepEqual([b.execution_id, b.deduplicated], [a.execution_id, true]);
    await assert.rejects(c.submit("mail", { n: 1 }, { idempotencyKey: "idem-2", dedup_key: "other" }),
      (e) => e instanceof InvalidRequest && e.status === 400);
  });

  test("submit without a key gets a fresh one", async () => {
    const a = await c.submit("mail");
    const b = await c.submit("mail");
    assert.notEqual(a.execution_id, b.execution_id);
    assert.match(a.dedup_key, UUID); // a UUID the client made
    assert.notEqual(a.dedup_key, b.dedup_key);
    assert.deepEqual(a.payload, {});
  });

  test("submit options", async () => {
    const runAt = new Date(Date.now() + 3600_000);
    const e = await c.submit("mail", { x: 1 }, {
      queue: "q.1", priority: 5, max_attempts: 7, timeout_seconds: 9, run_at: runAt,
      concurrency_key: "ck", concurrency_limit: 2, rate_key: "rk",
    });
    assert.deepEqual([e.queue, e.priority, e.max_attempts, e.timeout_seconds, e.status], ["q.1", 5, 7, 9, "scheduled"]);
    assert.deepEqual([e.concurrency_key, e.concurrency_limit, e.rate_key], ["ck", 2, "rk"]);
    assert.equal(Date.parse(e.run_at), Math.floor(runAt.getTime()));
    assert.equal((await c.submit("mail", null, { delay_seconds: 3600 })).status, "scheduled");
  });

  test("submitBatch", async () => {
    const items = await c.submitBatch([
      { kind: "mail", payload: { n: 1 }, dedup_key: "b-1" },
      { kind: "mail", payload: { n: 1 }, dedup_key: "b-1" },
      { kind: "", payload: {} },
      { kind: "mail", payload: { n: 2 } },
      { kind: "mail", payload: { big: "x".repeat(1 << 20) } },
    ]);
    assert.deepEqual(items.map((i) => i.status), [201, 200, 400, 201, 400]);
    assert.equal(items[0].execution.execution_id, items[1].execution.execution_id);
    assert.ok(items[2].error instanceof InvalidRequest);
    assert.equal(items[2].execution, null);
    assert.match(items[3].execution.dedup_key, UUID); // the client gave it one
    assert.ok(items[4].error instanceof PayloadTooLarge);
  });

  test("get and its long poll", async () => {
    const e = await c.submit("job");
    assert.equal((await c.get(e.execution_id)).status, "queued");
    await assert.rejects(c.get(crypto.randomUUID()), NotFound);
    const lease = await claimOne("job");
    const poll = c.get(e.execution_id, { waitSeconds: 20 }).then((x) => [x, Date.now()]);
    await c.complete(lease.execution_id, lease.lease_token, { ok: true });
    const done = Date.now();
    const [got, at] = await poll;
    assert.equal(got.status, "succeeded");
    assert.deepEqual(got.result, { ok: true });
    assert.ok(at - done < 10_000, "the long poll did not end at the completion");
    assert.equal((await c.wait(e.execution_id, { timeout: 5 })).status, "succeeded");
  });

  test("wait rejects with Unfinished when the execution outlives the timeout", async () => {
    const e = await c.submit("nobody-claims-this");
    const t0 = Date.now();
    const err = await c.wait(e.execution_id, { timeout: 1 }).then(
      () => assert.fail("wait answered a queued execution"),
      (x) => x,
    );
    assert.ok(err instanceof Unfinished && err instanceof LatchError, String(err));
    assert.ok(Date.now() - t0 >= 900);
    assert.equal(err.code, "unfinished");
    assert.equal(err.execution.execution_id, e.execution_id);
    assert.equal(err.execution.status, "queued");
  });

  test("list follows the cursor pages", async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await c.submit("listed", { i })).execution_id);
    await c.submit("other");
    const page = await c.listPage({ kind: "listed", limit: 2 });
    assert.equal(page.items.length, 2);
    assert.ok(page.next_cursor);
    const pages = [];
    for await (const p of c.pages({ kind: "listed", limit: 2 })) pages.push(p);
    assert.deepEqual(pages.map((p) => p.items.length), [2, 2, 1]);
    assert.equal(pages.at(-1).next_cursor, null);
    const listed = [];
    for await (const e of c.list({ kind: "listed", limit: 2 })) listed.push(e.execution_id);
    assert.deepEqual(listed, [...ids].reverse()); // newest first
    const one = await c.listPage({ dedup_key: (await c.get(ids[2])).dedup_key });
    assert.deepEqual(one.items.map((e) => e.execution_id), [ids[2]]);
    assert.equal((await c.listPage({ status: "queued", limit: 500 })).items.length, 6);
    const whole = await c.listPage({ id_prefix: ids[3] });
    assert.deepEqual(whole.items.map((e) => e.execution_id), [ids[3]]);
    const near = [];
    for await (const e of c.list({ id_prefix: ids[3].slice(0, 8), limit: 2 })) near.push(e.execution_id);
    assert.ok(near.includes(ids[3]) && near.every((id) => id.startsWith(ids[3].slice(0, 8))));
    await assert.rejects(c.listPage({ id_prefix: "abc" }), (e) => e instanceof InvalidRequest);
  });

  test("cancel and delete", async () => {
    const e = await c.submit("job");
    await assert.rejects(c.delete(e.execution_id), (err) => err.code === "not_terminal");
    assert.equal((await c.cancel(e.execution_id)).status, "cancelled");
    assert.equal((await c.cancel(e.execution_id)).status, "cancelled"); // terminal: unchanged
    await c.delete(e.execution_id);
    await assert.rejects(c.get(e.execution_id), NotFound);
    const f = await c.submit("job");
    await c.delete(f.execution_id, { force: true });
    await assert.rejects(c.get(f.execution_id), NotFound);
  });

  test("cancel of a running execution", async () => {
    await c.submit("job");
    const lease = await claimOne("job");
    const e = await c.cancel(lease.execution_id);
    assert.deepEqual([e.status, e.cancel_requested], ["running", true]);
    const hb = await c.heartbeat(lease.execution_id, lease.lease_token, { lease_seconds: 10 });
    assert.equal(hb.cancel_requested, true);
    assert.equal((await c.complete(lease.execution_id, lease.lease_token, null)).status, "cancelled");
  });

  test("signal and its idempotency key", async () => {
    const e = await c.submit("flow");
    assert.equal(await c.signal(e.execution_id, "go", { n: 1 }), false); // kept for a later wait
    assert.equal(await c.signal(e.execution_id, "go", { n: 2 }, { idempotencyKey: "s-1" }), false);
    await c.cancel(e.execution_id);
    // a repeat with its key answers the first answer, even after the end
    assert.equal(await c.signal(e.execution_id, "go", { n: 2 }, { idempotencyKey: "s-1" }), false);
    await assert.rejects(c.signal(e.execution_id, "go", { n: 3 }, { idempotencyKey: "s-2" }), (err) => err.code === "not_active");
  });

  test("fail and retry", async () => {
    const e = await c.submit("job", null, { max_attempts: 5 });
    let lease = await claimOne("job");
    const f = await c.fail(lease.execution_id, lease.lease_token, "boom", { retry: false });
    assert.deepEqual([f.status, f.error], ["failed", "boom"]);
    const r = await c.retry(e.execution_id);
    assert.deepEqual([r.status, r.attempt, r.error], ["queued", 0, null]);
    lease = await claimOne("job");
    const g = await c.fail(lease.execution_id, lease.lease_token, "again", { retry: true, retry_after_seconds: 3600 });
    assert.deepEqual([g.status, g.attempt], ["scheduled", 1]);
  });

  test("steps and attempts", async () => {
    const e = await c.submit("flow");
    const lease = await claimOne("flow");
    assert.deepEqual(lease.steps, {});
    const rec = await c.recordStep(lease.execution_id, lease.lease_token, "s1", { v: 1 }, { started_at: new Date() });
    assert.deepEqual(rec, { name: "s1", result: { v: 1 }, recorded: true });
    const again = await c.recordStep(lease.execution_id, lease.lease_token, "s1", { v: 2 });
    assert.deepEqual(again, { name: "s1", result: { v: 1 }, recorded: false });
    await c.complete(lease.execution_id, lease.lease_token, "done");
    const steps = await c.steps(e.execution_id);
    assert.deepEqual(steps.map((s) => [s.name, s.result, s.attempt]), [["s1", { v: 1 }, 1]]);
    assert.ok(steps[0].started_at);
    const att = await c.attempts(e.execution_id);
    assert.deepEqual(att.map((a) => [a.attempt, a.worker_id, a.outcome]), [[1, "t-worker", "succeeded"]]);
  });

  test("suspend: sleep and wait", async () => {
    const e = await c.submit("flow");
    let lease = await claimOne("flow");
    const s = await c.suspend(lease.execution_id, lease.lease_token, "nap", { until: new Date(Date.now() + 3600_000) });
    assert.equal(s.status, "suspended");
    assert.ok(s.wake_at);
    const w = await c.submit("flow");
    lease = await claimOne("flow");
    const t = await c.suspend(lease.execution_id, lease.lease_token, "wait", { signal: "go", timeout_seconds: 60 });
    assert.deepEqual([t.status, t.waiting_for], ["suspended", "go"]);
    assert.equal(await c.signal(w.execution_id, "go", { ok: 1 }), true);
    assert.equal((await c.get(e.execution_id)).status, "suspended");
  });

  test("schedules", async () => {
    const s = await c.putSchedule("nightly", { cron: "0 3 * * *", kind: "report", payload: { r: 1 } });
    assert.deepEqual([s.name, s.cron, s.kind, s.payload, s.timezone], ["nightly", "0 3 * * *", "report", { r: 1 }, "UTC"]);
    assert.equal((await c.getSchedule("nightly")).cron, "0 3 * * *");
    const back = await c.putSchedule("nightly", await c.getSchedule("nightly")); // a GET answer PUT back
    assert.deepEqual(back.payload, { r: 1 });
    await c.putSchedule("hourly", { every: "1h", kind: "report" });
    const page = await c.listSchedulesPage({ limit: 1 });
    assert.equal(page.items.length, 1);
    assert.ok(page.next_cursor);
    const names = [];
    for await (const x of c.schedules({ limit: 1 })) names.push(x.name);
    assert.deepEqual(names, ["hourly", "nightly"]);
    const x = await c.triggerSchedule("nightly", { idempotencyKey: "tick-1" });
    const y = await c.triggerSchedule("nightly", { idempotencyKey: "tick-1" });
    assert.deepEqual([x.execution_id, x.schedule], [y.execution_id, "nightly"]);
    await c.deleteSchedule("hourly");
    await assert.rejects(c.getSchedule("hourly"), NotFound);
    assert.equal((await c.get(x.execution_id)).schedule, "nightly"); // its executions stay
  });

  test("schedule pause and resume", async () => {
    await c.putSchedule("pausable", { every: "1h", kind: "report", payload: { r: 2 } });
    const p = await c.pauseSchedule("pausable");
    assert.deepEqual([p.name, p.enabled, p.next_run_at, p.payload], ["pausable", false, null, { r: 2 }]);
    assert.deepEqual(await c.pauseSchedule("pausable"), p); // a repeat changes nothing
    assert.deepEqual(await c.getSchedule("pausable"), p);
    const r = await c.resumeSchedule("pausable");
    assert.deepEqual([r.enabled, r.every, r.payload], [true, "1h", { r: 2 }]);
    assert.ok(r.next_run_at);
    assert.deepEqual(await c.resumeSchedule("pausable"), r);
    await assert.rejects(c.pauseSchedule("missing"), NotFound);
    await assert.rejects(c.resumeSchedule("missing"), NotFound);
  });

  test("rate limits", async () => {
    const r = await c.putRateLimit("api", { rate: 10, per_seconds: 60, burst: 3 });
    assert.deepEqual([r.key, r.rate, r.per_seconds, r.burst], ["api", 10, 60, 3]);
    assert.equal((await c.getRateLimit("api")).burst, 3);
    assert.equal((await c.putRateLimit("api", { rate: 5, per_seconds: 1 })).burst, 1);
    assert.equal((await c.deleteRateLimit("api")).rate, 5);
    await assert.rejects(c.getRateLimit("api"), NotFound);
  });

  test("stream tickets and events", async () => {
    const e = await c.submit("job");
    await c.cancel(e.execution_id);
    const t = await c.streamTicket(e.execution_id);
    assert.equal(t.expires_in, 60);
    const anon = new Client({ baseUrl: srv.url }); // a ticket needs no key
    const events = [];
    for await (const ev of anon.events(e.execution_id, { ticket: t.ticket })) events.push(ev);
    assert.deepEqual(events.map((ev) => [ev.event, ev.data.status]), [["status", "cancelled"]]);
    assert.ok(TERMINAL.has(events.at(-1).data.status));
    const withKey = [];
    for await (const ev of c.events(e.execution_id)) withKey.push(ev);
    assert.equal(withKey.at(-1).event, "status");
  });

  test("watch yields each status until a terminal one", async () => {
    const e = await c.submit("job");
    const seen = [];
    const watching = (async () => {
      for await (const x of c.watch(e.execution_id)) {
        seen.push(x.status);
        if (x.status === "queued") {
          const lease = await claimOne("job");
          await c.complete(lease.execution_id, lease.lease_token, { ok: 1 });
        }
      }
    })();
    await watching;
    assert.equal(seen[0], "queued");
    assert.equal(seen.at(-1), "succeeded");
    assert.ok(seen.every((s, i) => i === 0 || s !== seen[i - 1]), seen.join(","));
    // The browser's path (a ticket, then an EventSource) needs an EventSource: test/browser runs it in Chromium.
    await assert.rejects(async () => {
      for await (const _ of c.watch(e.execution_id, { transport: "eventsource" })) void _;
    }, /no EventSource; use transport "fetch"/);
  });

  test("watch of a missing execution throws NotFound", async () => {
    await assert.rejects(async () => {
      for await (const _ of c.watch(crypto.randomUUID())) void _;
    }, NotFound);
  });

  test("watch ends when its signal aborts", async () => {
    const e = await c.submit("job");
    const ac = new AbortController();
    const seen = [];
    await assert.rejects(async () => {
      for await (const x of c.watch(e.execution_id, { signal: ac.signal })) {
        seen.push(x.status);
        ac.abort(new Error("enough"));
      }
    }, /enough/);
    assert.deepEqual(seen, ["queued"]);
  });

  test("tenants and keys", async () => {
    const admin = srv.admin();
    const name = `adm-${crypto.randomUUID().slice(0, 8)}`;
    const t = await admin.createTenant(name, { max_inflight: 5 });
    assert.ok(t.api_key.startsWith("lk_"));
    assert.equal((await admin.getTenant(name)).max_inflight, 5);
    assert.equal((await admin.updateTenant(name, { max_inflight: 6 })).max_inflight, 6);
    const k = await admin.createKey(name);
    assert.equal((await admin.listKeys(name)).length, 2);
    const own = new Client({ baseUrl: srv.url, key: k.api_key });
    assert.equal((await own.getTenant(name)).name, name);
    await admin.deleteKey(name, k.key_id);
    assert.equal((await admin.listKeys(name)).length, 1);
    const asTenant = new Client({ baseUrl: srv.url, key: ADMIN_KEY, tenant: name });
    assert.equal((await asTenant.submit("job")).tenant, name);
    await admin.deleteTenant(name, { force: true });
    await assert.rejects(admin.getTenant(name), NotFound);
    assert.equal(await c.ready(), true);
  });
});
