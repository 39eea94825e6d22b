import os

from latch_client import Client, Job, WaitTimedOut, Worker

client = Client(os.environ.get("LATCH_URL", "http://127.0.0.1:8080"), os.environ["LATCH_KEY"])
worker = Worker(client)


@worker.handle("ship-order")
def ship_order(job: Job) -> dict:
    # Each step runs until it is recorded, then never again: a later run
    # (after a crash, a retry or a resume) takes its result from the journal.
    seat = job.step("reserve", lambda: {"order": job.payload["order"], "seat": "12A"})
    try:
        # Suspends the execution until the signal comes: this run ends here,
        # and the run that resumes it gets the signal's data.
        approval = job.wait_signal("approval", "approve", timeout=7 * 24 * 3600)
    except WaitTimedOut:
        return {"seat": seat, "shipped": None}
    shipped = job.step("ship", lambda: {"by": approval["by"]})
    return {"seat": seat, "shipped": shipped}


e = client.submit("ship-order", {"order": 7})
worker.run_once(wait_seconds=5)  # reserves, then suspends waiting for "approve"
print(client.get(e["execution_id"])["status"])  # suspended

client.signal(e["execution_id"], "approve", {"by": "ann"})
worker.run_once(wait_seconds=5)  # resumes: "reserve" from the journal, then ships
done = client.get(e["execution_id"])
print(done["status"], done["result"])
print([s["name"] for s in client.steps(e["execution_id"])])
