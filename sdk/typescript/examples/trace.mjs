import { Client } from "@latch-run/client";

// The caller's W3C trace context. With OpenTelemetry, the current span's:
//   const carrier = {}; propagation.inject(context.active(), carrier); carrier.traceparent
const traceparent = process.env.TRACEPARENT;

// Every request of this client sends it (submit's `traceparent` option does
// it for one call; a function instead of a value is asked at each request):
// the execution's runs, on any worker, continue this trace.
const client = new Client({
  baseUrl: process.env.LATCH_URL ?? "http://127.0.0.1:8080", key: process.env.LATCH_KEY, traceparent,
});
const e = await client.submit("call-partner", { order: 42 }, { dedup_key: "call-partner-42" });
console.log(e.trace_parent.slice(3, 35) === traceparent.slice(3, 35)); // true: the same trace id

const done = await client.wait(e.execution_id, { timeout: 30 });
console.log(done.status, JSON.stringify(done.result));
