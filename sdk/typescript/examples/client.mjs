import { Client, DedupKeyReused, NotFound } from "@latch-run/client";

const client = new Client({ baseUrl: process.env.LATCH_URL ?? "http://127.0.0.1:8080", key: process.env.LATCH_KEY });

// Submit once per order: the dedup key makes a resubmit (or a retry after a
// lost answer) return the same execution instead of running it twice.
const e = await client.submit("send-invoice", { order: 42 }, { dedup_key: "invoice-42", max_attempts: 5 });
const again = await client.submit("send-invoice", { order: 42 }, { dedup_key: "invoice-42" });
console.log(e.execution_id === again.execution_id, again.deduplicated); // true true

try {
  await client.submit("send-invoice", { order: 43 }, { dedup_key: "invoice-42" });
} catch (err) {
  if (!(err instanceof DedupKeyReused)) throw err;
  console.log(err.code, err.status); // dedup_key_reused 422
}

// Every queued invoice, newest first, following the cursor pages.
for await (const x of client.list({ kind: "send-invoice", status: "queued", limit: 100 })) {
  console.log(x.execution_id === e.execution_id, x.status); // true queued
}

await client.cancel(e.execution_id);
await client.delete(e.execution_id);
try {
  await client.get(e.execution_id);
} catch (err) {
  if (!(err instanceof NotFound)) throw err;
  console.log("deleted");
}
