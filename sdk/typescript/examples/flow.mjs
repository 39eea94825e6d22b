import { Client, WaitTimedOut, Worker } from "@latch-run/client";

const client = new Client({ baseUrl: process.env.LATCH_URL ?? "http://127.0.0.1:8080", key: process.env.LATCH_KEY });
const worker = new Worker(client);

worker.handle("ship-order", async (job) => {
  // Each step runs until it is recorded, then never again: a later run
  // (after a crash, a retry or a resume) takes its result from the journal.
  const seat = await job.step("reserve", () => ({ order: job.payload.order, seat: "12A" }));
  let approval;
  try {
    // Suspends the execution until the signal comes: this run ends here (the
    // call throws Suspended, which the worker catches), and the run that
    // resumes it gets the signal's data.
    approval = await job.waitSignal("approval", "approve", { timeout: 7 * 24 * 3600 });
  } catch (err) {
    if (err instanceof WaitTimedOut) return { seat, shipped: null };
    throw err;
  }
  const shipped = await job.step("ship", () => ({ by: approval.by }));
  return { seat, shipped };
});

const e = await client.submit("ship-order", { order: 7 });
await worker.runOnce({ waitSeconds: 5 }); // reserves, then suspends waiting for "approve"
console.log((await client.get(e.execution_id)).status); // suspended

await client.signal(e.execution_id, "approve", { by: "ann" });
await worker.runOnce({ waitSeconds: 5 }); // resumes: "reserve" from the journal, then ships
const done = await client.get(e.execution_id);
console.log(done.status, JSON.stringify(done.result));
console.log((await client.steps(e.execution_id)).map((s) => s.name).join(" "));
