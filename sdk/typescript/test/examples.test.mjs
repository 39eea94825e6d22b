// The examples of README.md run as written: each is a file of examples/ (or
// the browser test's page), shown verbatim in the README, and the Node ones
// run here against the test server, importing the package by its name.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { Worker } from "../dist/index.js";
import { Server, SDK } from "./latchserver.mjs";

const EXAMPLES = path.join(SDK, "examples");

function runExample(srv, key, name, extraEnv = {}) {
  const p = spawn(process.execPath, [path.join(EXAMPLES, name)], {
    env: { ...process.env, LATCH_URL: srv.url, LATCH_KEY: key, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  p.stdout.setEncoding("utf8").on("data", (d) => (out += d));
  p.stderr.setEncoding("utf8").on("data", (d) => (err += d));
  p.done = new Promise((resolve) => p.once("close", (code) => resolve({ code, out, err })));
  return p;
}

describe("README examples", () => {
  let srv;
  before(async () => (srv = await Server.start()));
  after(() => srv.stop());

  test("README.md shows the examples as they are", () => {
    const readme = fs.readFileSync(path.join(SDK, "README.md"), "utf8");
    const blocks = [...readme.matchAll(/```(?:js|html)\n([\s\S]*?)```/g)].map((m) => m[1]);
    for (const f of ["examples/client.mjs", "examples/worker.mjs", "examples/flow.mjs", "examples/children.mjs", "examples/trace.mjs", "examples/trace-worker.mjs", "test/browser/page.mjs", "test/browser/index.html"]) {
      assert.ok(blocks.includes(fs.readFileSync(path.join(SDK, f), "utf8")), `README.md does not show ${f} as it is`);
    }
  });

  test("client", async () => {
    const c = await srv.newTenant("example");
    const { code, out, err } = await runExample(srv, c.key, "client.mjs").done;
    assert.equal(code, 0, err);
    assert.deepEqual(out.trim().split("\n"), ["true true", "dedup_key_reused 422", "true queued", "deleted"]);
  });

  test("worker", async () => {
    const c = await srv.newTenant("example");
    const good = await c.submit("resize", { width: 640 });
    const bad = await c.submit("resize", { width: "wide" });
    const p = runExample(srv, c.key, "worker.mjs");
    try {
      assert.deepEqual((await c.wait(good.execution_id, { timeout: 20 })).result, { width: 320 });
      const b = await c.wait(bad.execution_id, { timeout: 20 });
      assert.deepEqual([b.status, b.error], ["failed", "payload.width must be an integer"]);
      p.kill("SIGTERM");
      const { code, out, err } = await p.done;
      assert.deepEqual([code, out], [0, "worker stopped\n"], err);
    } finally {
      p.kill("SIGKILL");
    }
  });

  test("flow", async () => {
    const c = await srv.newTenant("example");
    const { code, out, err } = await runExample(srv, c.key, "flow.mjs").done;
    assert.equal(code, 0, err);
    assert.deepEqual(out.trim().split("\n"), [
      "suspended",
      'succeeded {"seat":{"order":7,"seat":"12A"},"shipped":{"by":"ann"}}',
      "reserve approval ship",
    ]);
  });

  test("children", async () => {
    const c = await srv.newTenant("example");
    const { code, out, err } = await runExample(srv, c.key, "children.mjs").done;
    assert.equal(code, 0, err);
    assert.deepEqual(out.trim().split("\n"), [
      "children:resize",
      'succeeded {"errors":["width must be positive"],"resized":[{"width":320},{"width":512}]}',
      "succeeded failed succeeded",
    ]);
  });

  test("events", async () => {
    const c = await srv.newTenant("example");
    const { code, out, err } = await runExample(srv, c.key, "events.mjs").done;
    assert.equal(code, 0, err);
    assert.deepEqual(out.trim().split("\n"), ["suspended", "1", 'succeeded {"paid":{"amount":120}}']);
  });

  test("trace", async () => {
    // The example submits in the caller's trace; a worker here runs it and
    // sees that trace as job.traceparent.
    const c = await srv.newTenant("example");
    const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const seen = [];
    const w = new Worker(c, { waitSeconds: 1, handlers: { "call-partner": (job) => { seen.push(job.traceparent); return { partner: 202 }; } } });
    const running = w.run({ installSignalHandlers: false });
    try {
      const { code, out, err } = await runExample(srv, c.key, "trace.mjs", { TRACEPARENT: tp }).done;
      assert.equal(code, 0, err);
      assert.deepEqual(out.trim().split("\n"), ["true", 'succeeded {"partner":202}']);
    } finally {
      w.stop();
      await running;
    }
    assert.deepEqual(seen.map((x) => x?.slice(3, 35)), [tp.slice(3, 35)]);
  });

  test("trace worker", async () => {
    // The example's worker passes the run's traceparent on to a partner,
    // here a server that records the header it got.
    const got = [];
    const partner = http.createServer((req, res) => {
      got.push(req.headers.traceparent);
      req.resume();
      res.writeHead(202).end();
    });
    await new Promise((r) => partner.listen(0, "127.0.0.1", r));
    const c = await srv.newTenant("example");
    const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const p = runExample(srv, c.key, "trace-worker.mjs", { PARTNER_URL: `http://127.0.0.1:${partner.address().port}/orders` });
    let done;
    try {
      const e = await c.submit("call-partner", { order: 42 }, { traceparent: tp });
      done = await c.wait(e.execution_id, { timeout: 30 });
      p.kill("SIGTERM");
      const { code, err } = await p.done;
      assert.equal(code, 0, err);
    } finally {
      p.kill("SIGKILL");
      partner.close();
    }
    assert.deepEqual([done.status, done.result], ["succeeded", { partner: 202 }]);
    assert.deepEqual(got, [done.trace_parent]);
    assert.equal(got[0].slice(3, 35), tp.slice(3, 35));
  });
});
