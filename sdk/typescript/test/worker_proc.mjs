// A worker process for the tests that need one to stop or die:
// `node worker_proc.mjs graceful|effect`, with LATCH_URL and LATCH_KEY.
//
// graceful: kind "slow"; the handler says "started <id>", then waits until
//   the worker is told to stop (SIGTERM/SIGINT) and completes {saw_stop: true};
//   the process prints "stopped" when Worker.run resolves.
// effect: kind "scenario-b"; the handler appends "start <attempt>" to
//   $EFFECT_FILE, says "started <attempt>", then with HANG=1 hangs (to be
//   killed), else appends "done <attempt>" and completes {attempt}. Lease: 2 s.
import fs from "node:fs";
import { once } from "node:events";

import { Client, Worker } from "../dist/index.js";

const mode = process.argv[2];
const c = new Client({ baseUrl: process.env.LATCH_URL, key: process.env.LATCH_KEY });
let w;
if (mode === "graceful") {
  w = new Worker(c, { concurrency: 1, waitSeconds: 1, leaseSeconds: 10 });
  w.handle("slow", async (job) => {
    console.log("started", job.executionId);
    const until = AbortSignal.any([w.stopSignal, AbortSignal.timeout(20_000)]); // the stop, or 20 s
    if (!until.aborted) await once(until, "abort");
    return { saw_stop: w.stopping };
  });
} else if (mode === "effect") {
  w = new Worker(c, { concurrency: 1, waitSeconds: 1, leaseSeconds: 2 });
  w.handle("scenario-b", async (job) => {
    const path = process.env.EFFECT_FILE;
    fs.appendFileSync(path, `start ${job.attempt}\n`);
    console.log("started", job.attempt);
    if (process.env.HANG === "1") await new Promise(() => setInterval(() => {}, 1 << 30)); // until SIGKILL
    fs.appendFileSync(path, `done ${job.attempt}\n`);
    return { attempt: job.attempt };
  });
} else {
  console.error("unknown mode", mode);
  process.exit(2);
}
await w.run();
console.log("stopped");
