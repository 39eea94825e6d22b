import os

from latch_client import Client, Job, Worker

client = Client(os.environ.get("LATCH_URL", "http://127.0.0.1:8080"), os.environ["LATCH_KEY"])
worker = Worker(client)


@worker.handle("await-payment")
def await_payment(job: Job) -> dict:
    # Waits for the event order-paid published with this order's key: an
    # event published since the submit is taken at once, otherwise the
    # execution suspends (this run ends) until one is.
    ev = job.wait_event("paid", "order-paid", key=job.payload["order"], timeout=24 * 3600)
    return {"paid": ev["data"]}


e = client.submit("await-payment", {"order": "order-7"})
worker.run_once(wait_seconds=5)  # suspends waiting for the event
print(client.get(e["execution_id"])["status"])  # suspended

# Resumes every execution waiting for order-paid with key order-7.
pub = client.publish("order-paid", {"amount": 120}, key="order-7", idempotency_key="paid-order-7")
print(pub["resumed"])  # 1
worker.run_once(wait_seconds=5)  # resumes with the event
done = client.get(e["execution_id"])
print(done["status"], done["result"])
