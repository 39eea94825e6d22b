// Trace context: the client sends the caller's W3C traceparent (a request's
// own, or the client's: a value or a function asked at each request), and
// the worker hands the lease's to the handler (job.traceparent) and sends it
// on every call under the lease, through job.client.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";

import { Client, Worker, validTraceparent } from "../dist/index.js";
import { Server } from "./latchserver.mjs";

const TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const traceId = (tp) => (tp ? tp.slice(3, 35) : undefined);

/** A fetch that records [method, path, traceparent] of each request, then sends it. */
function recorder() {
  const sent = [];
  const fetchFn = (url, init) => {
    const u = new URL(url);
    sent.push([init?.method ?? "GET", u.pathname, new Headers(init?.headers).get("traceparent") ?? undefined]);
    return fetch(url, init);
  };
  return { sent, fetch: fetchFn };
}

describe("trace context", () => {
  let srv;
  let c;
  let rec;
  before(async () => (srv = await Server.start()));
  after(() => srv.stop());
  beforeEach(async () => {
    rec = recorder();
    c = await srv.newTenant("trace", {}, { fetch: rec.fetch });
  });

  test("validTraceparent", () => {
    assert.ok(validTraceparent(TP));
    assert.ok(validTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later"));
    for (const bad of ["", "garbage", TP.toUpperCase(), "ff" + TP.slice(2), TP + "-x", undefined,
      "00-" + "0".repeat(32) + "-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-" + "0".repeat(16) + "-01"]) {
      assert.equal(validTraceparent(bad), false, String(bad));
    }
  });

  test("submit sends the traceparent given; the execution keeps its trace", async () => {
    const e = await c.submit("traced", { n: 1 }, { traceparent: TP });
    assert.deepEqual(rec.sent.at(-1), ["POST", "/api/executions", TP]);
    assert.equal(traceId((await c.get(e.execution_id)).trace_parent), traceId(TP));
    const plain = await c.submit("traced", { n: 2 });
    assert.equal(rec.sent.at(-1)[2], undefined);
    assert.equal((await c.get(plain.execution_id)).trace_parent, undefined);
  });

  test("a bad traceparent is refused before anything is sent", async () => {
    await assert.rejects(c.submit("traced", null, { traceparent: "00-nope" }), { name: "TypeError", message: /not a W3C traceparent/ });
    assert.throws(() => c.withTraceparent("00-nope"), TypeError);
    assert.throws(() => new Client({ baseUrl: srv.url, traceparent: "00-nope" }), TypeError);
    assert.deepEqual(rec.sent, []);
    assert.deepEqual((await c.listPage({ kind: "traced" })).items, []);
  });

  test("the client's traceparent: a value (withTraceparent) or a function asked at each request", async () => {
    const traced = c.withTraceparent(TP);
    const e = await traced.submit("traced");
    await traced.submitBatch([{ kind: "traced" }]);
    await traced.signal(e.execution_id, "go");
    await traced.publish("ev");
    await traced.submit("traced", null, { traceparent: OTHER }); // a request's own wins
    await c.get(e.execution_id); // c itself sends none
    assert.deepEqual(rec.sent.map((r) => r[2]), [TP, TP, TP, TP, OTHER, undefined]);

    let current = TP;
    const ambient = new Client({ baseUrl: srv.url, key: c.key, fetch: rec.fetch, traceparent: () => current });
    rec.sent.length = 0;
    await ambient.get(e.execution_id);
    current = undefined;
    await ambient.get(e.execution_id);
    current = OTHER;
    await ambient.get(e.execution_id);
    assert.deepEqual(rec.sent.map((r) => r[2]), [TP, undefined, OTHER]);
  });

  test("the worker runs the handler in the run's trace", async () => {
    const e = await c.submit("traced-flow", { n: 1 }, { traceparent: TP });
    const parentTp = (await c.get(e.execution_id)).trace_parent; // the submit's (its span's, with tracing on)
    assert.equal(traceId(parentTp), traceId(TP));
    rec.sent.length = 0;
    const got = {};
    const w = new Worker(c, {
      leaseSeconds: 3, waitSeconds: 2,
      handlers: {
        "traced-flow": async (job) => {
          got.job = job.traceparent;
          await job.step("one", () => 1);
          await new Promise((r) => setTimeout(r, 1400)); // a heartbeat (every leaseSeconds / 3) falls in the run
          got.child = (await job.client.submit("traced-child", {})).execution_id; // the handler's own call joins the trace
          return { ok: true };
        },
      },
    });
    assert.equal(await w.runOnce(), 1);
    assert.equal(got.job, parentTp);
    const claim = rec.sent.filter(([, p]) => p === "/api/workers/claim");
    assert.deepEqual(claim.map((r) => r[2]), [undefined]);
    const under = rec.sent.filter(([, p]) => p !== "/api/workers/claim");
    const ops = under.map(([, p]) => p.split("/").at(-1));
    assert.equal(ops[0], "steps");
    assert.ok(ops.includes("heartbeat"), ops.join(","));
    assert.deepEqual(ops.slice(-2), ["executions", "complete"]);
    assert.deepEqual([...new Set(under.map((r) => r[2]))], [parentTp]);
    assert.equal(traceId((await c.get(got.child)).trace_parent), traceId(TP));
    assert.equal((await c.get(e.execution_id)).status, "succeeded");
  });

  test("a lease without a trace context: job.traceparent undefined, job.client the worker's", async () => {
    await c.submit("plain", null);
    let job;
    const w = new Worker(c, { waitSeconds: 2, handlers: { plain: (j) => { job = j; return null; } } });
    assert.equal(await w.runOnce(), 1);
    assert.equal(job.traceparent, undefined);
    assert.equal(job.client, c);
  });
});
