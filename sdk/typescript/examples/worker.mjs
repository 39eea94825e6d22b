import { Client, Fail, Worker } from "@latch-run/client";

const client = new Client({ baseUrl: process.env.LATCH_URL ?? "http://127.0.0.1:8080", key: process.env.LATCH_KEY });
const worker = new Worker(client, { concurrency: 4, leaseSeconds: 30, waitSeconds: 5 });

worker.handle("resize", async (job) => {
  const width = job.payload?.width;
  if (!Number.isInteger(width)) {
    throw new Fail("payload.width must be an integer", { retry: false }); // no point retrying
  }
  for (let slice = 0; slice < 3; slice++) {
    job.throwIfCancelled(); // a cancel arrives through the heartbeats (job.signal aborts)
    // ... a slice of the work, e.g. await fetch(url, { signal: job.signal }) ...
  }
  return { width: Math.floor(width / 2) }; // the result: complete
});

// Runs until SIGTERM or SIGINT: then it claims no more (a claim waiting for
// work ends within waitSeconds, and what it brings is run), lets the running
// jobs finish, and resolves.
await worker.run();
console.log("worker stopped");
