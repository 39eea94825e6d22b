import os

from latch_client import Client, Fail, Job, Worker

client = Client(os.environ.get("LATCH_URL", "http://127.0.0.1:8080"), os.environ["LATCH_KEY"])
worker = Worker(client, concurrency=4, lease_seconds=30, wait_seconds=5)


@worker.handle("resize")
def resize(job: Job) -> dict:
    width = job.payload.get("width")
    if not isinstance(width, int):
        raise Fail("payload.width must be an integer", retry=False)  # no point retrying
    for _ in range(3):
        job.raise_if_cancelled()  # a cancel arrives through the heartbeats
        # ... a slice of the work ...
    return {"width": width // 2}  # the result: complete


# Runs until SIGTERM or SIGINT: then it claims no more (a claim waiting for work
# ends within wait_seconds, and what it brings is run), lets the running jobs
# finish, and returns.
worker.run()
print("worker stopped")
