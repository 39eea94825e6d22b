import os

from latch_client import Client, use_traceparent

client = Client(os.environ.get("LATCH_URL", "http://127.0.0.1:8080"), os.environ["LATCH_KEY"])

# The caller's W3C trace context. With OpenTelemetry, the current span's:
#   carrier = {}; opentelemetry.propagate.inject(carrier); traceparent = carrier["traceparent"]
traceparent = os.environ["TRACEPARENT"]

# Every call in the block sends it (submit(..., traceparent=...) does it for
# one call): the execution's runs, on any worker, continue this trace.
with use_traceparent(traceparent):
    e = client.submit("call-partner", {"order": 42}, dedup_key="call-partner-42")
print(e["trace_parent"][3:35] == traceparent[3:35])  # True: the same trace id

done = client.wait(e["execution_id"], timeout=30)
print(done["status"], done["result"])
