import { Client, Fail, Worker } from "@latch-run/client";

const client = new Client({ baseUrl: process.env.LATCH_URL ?? "http://127.0.0.1:8080", key: process.env.LATCH_KEY });
const worker = new Worker(client);

worker.handle("resize", (job) => {
  if (job.payload.width <= 0) throw new Fail("width must be positive", { retry: false });
  return { width: Math.floor(job.payload.width / 2) };
});

worker.handle("resize-all", async (job) => {
  // One child execution per image, run in parallel by any worker. The first
  // run spawns them and suspends; the run their ends resume gets every
  // outcome in item order. A failed child is reported, not thrown.
  const outs = await job.map("resize", "resize", job.payload.images);
  return {
    resized: outs.filter((o) => o.status === "succeeded").map((o) => o.result),
    errors: outs.filter((o) => o.status !== "succeeded").map((o) => o.error),
  };
});

const e = await client.submit("resize-all", { images: [{ width: 640 }, { width: 0 }, { width: 1024 }] });
await worker.runOnce({ waitSeconds: 5 }); // spawns three children, then suspends waiting for them
console.log((await client.get(e.execution_id)).waiting_for);
for (let i = 0; i < 3; i++) await worker.runOnce({ waitSeconds: 5 }); // one child each
await worker.runOnce({ waitSeconds: 5 }); // the parent resumes with their outcomes
const done = await client.get(e.execution_id);
console.log(done.status, JSON.stringify(done.result));
console.log((await client.children(e.execution_id)).map((c) => c.status).join(" "));
