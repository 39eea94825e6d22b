import os

from latch_client import Client, DedupKeyReused, NotFound

client = Client(os.environ.get("LATCH_URL", "http://127.0.0.1:8080"), os.environ["LATCH_KEY"])

# Submit once per order: the dedup key makes a resubmit (or a retry after a
# lost answer) return the same execution instead of running it twice.
e = client.submit("send-invoice", {"order": 42}, dedup_key="invoice-42", max_attempts=5)
again = client.submit("send-invoice", {"order": 42}, dedup_key="invoice-42")
print(e["execution_id"] == again["execution_id"], again["deduplicated"])  # True True

try:
    client.submit("send-invoice", {"order": 43}, dedup_key="invoice-42")
except DedupKeyReused as err:
    print(err.code, err.status)  # dedup_key_reused 422

# Every page of the queued invoices, newest first.
for page in client.execution_pages(kind="send-invoice", status="queued", limit=100):
    for x in page.items:
        print(x["execution_id"] == e["execution_id"], x["status"])  # True queued

client.cancel(e["execution_id"])
client.delete(e["execution_id"])
try:
    client.get(e["execution_id"])
except NotFound:
    print("deleted")
