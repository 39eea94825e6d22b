import { Client, Worker } from "@latch-run/client";

const client = new Client({ baseUrl: process.env.LATCH_URL ?? "http://127.0.0.1:8080", key: process.env.LATCH_KEY });
const worker = new Worker(client);

worker.handle("await-payment", async (job) => {
  // Waits for the event order-paid published with this order's key: an
  // event published since the submit is taken at once, otherwise the
  // execution suspends (this run ends) until one is.
  const ev = await job.waitEvent("paid", "order-paid", { key: job.payload.order, timeout: 24 * 3600 });
  return { paid: ev.data };
});

const e = await client.submit("await-payment", { order: "order-7" });
await worker.runOnce({ waitSeconds: 5 }); // suspends waiting for the event
console.log((await client.get(e.execution_id)).status); // suspended

// Resumes every execution waiting for order-paid with key order-7.
const pub = await client.publish("order-paid", { amount: 120 }, { key: "order-7", idempotencyKey: "paid-order-7" });
console.log(pub.resumed); // 1
await worker.runOnce({ waitSeconds: 5 }); // resumes with the event
const done = await client.get(e.execution_id);
console.log(done.status, JSON.stringify(done.result));
