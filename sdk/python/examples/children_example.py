import os

from latch_client import Client, Fail, Job, Worker

client = Client(os.environ.get("LATCH_URL", "http://127.0.0.1:8080"), os.environ["LATCH_KEY"])
worker = Worker(client)


@worker.handle("resize")
def resize(job: Job) -> dict:
    if job.payload["width"] <= 0:
        raise Fail("width must be positive", retry=False)
    return {"width": job.payload["width"] // 2}


@worker.handle("resize-all")
def resize_all(job: Job) -> dict:
    # One child execution per image, run in parallel by any worker. The first
    # run spawns them and suspends; the run their ends resume gets every
    # outcome in item order. A failed child is reported, not raised.
    outs = job.map("resize", "resize", job.payload["images"])
    return {"resized": [o["result"] for o in outs if o["status"] == "succeeded"],
            "errors": [o["error"] for o in outs if o["status"] != "succeeded"]}


e = client.submit("resize-all", {"images": [{"width": 640}, {"width": 0}, {"width": 1024}]})
worker.run_once(wait_seconds=5)  # spawns three children, then suspends waiting for them
print(client.get(e["execution_id"])["waiting_for"])
for _ in range(3):
    worker.run_once(wait_seconds=5)  # one child each
worker.run_once(wait_seconds=5)  # the parent resumes with their outcomes
done = client.get(e["execution_id"])
print(done["status"], done["result"])
print([c["status"] for c in client.children(e["execution_id"])])
