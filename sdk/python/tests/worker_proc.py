"""A worker process for the tests that need one to stop or die:
`python3 worker_proc.py graceful|effect`, with LATCH_URL and LATCH_KEY.

graceful: kind "slow"; the handler says "started <id>", then waits until the
  worker is told to stop (SIGTERM/SIGINT) and completes {"saw_stop": true};
  the process prints "stopped" when Worker.run returns.
effect: kind "scenario-b"; the handler appends "start <attempt>" to $EFFECT_FILE,
  says "started <attempt>", then with HANG=1 hangs (to be killed), else appends
  "done <attempt>" and completes {"attempt": <attempt>}. Lease: 2 s.
"""

import os
import sys
import threading

from latch_client import Client, Job, Worker


def main() -> int:
    mode = sys.argv[1]
    c = Client(os.environ["LATCH_URL"], os.environ["LATCH_KEY"])
    if mode == "graceful":
        w = Worker(c, concurrency=1, wait_seconds=1, lease_seconds=10)

        @w.handle("slow")
        def slow(job: Job) -> dict:
            print("started", job.execution_id, flush=True)
            w.stop_event.wait(20)
            return {"saw_stop": w.stop_event.is_set()}
    elif mode == "effect":
        w = Worker(c, concurrency=1, wait_seconds=1, lease_seconds=2)

        @w.handle("scenario-b")
        def effect(job: Job) -> dict:
            path = os.environ["EFFECT_FILE"]
            with open(path, "a") as f:
                f.write(f"start {job.attempt}\n")
            print("started", job.attempt, flush=True)
            if os.environ.get("HANG") == "1":
                threading.Event().wait()  # until SIGKILL
            with open(path, "a") as f:
                f.write(f"done {job.attempt}\n")
            return {"attempt": job.attempt}
    else:
        print("unknown mode", mode, file=sys.stderr)
        return 2
    w.run()
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
