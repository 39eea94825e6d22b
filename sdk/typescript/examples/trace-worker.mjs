import { Client, Worker } from "@latch-run/client";

const client = new Client({ baseUrl: process.env.LATCH_URL ?? "http://127.0.0.1:8080", key: process.env.LATCH_KEY });
const worker = new Worker(client, { waitSeconds: 1 });

worker.handle("call-partner", async (job) => {
  // job.traceparent is the trace the run continues (undefined without one);
  // job.client sends it on every call. Pass it on to continue the trace downstream.
  const headers = job.traceparent ? { traceparent: job.traceparent } : {};
  const res = await fetch(process.env.PARTNER_URL, { method: "POST", body: "{}", headers, signal: job.signal });
  return { partner: res.status };
});

await worker.run();
