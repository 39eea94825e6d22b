#!/usr/bin/env python3
"""A flow worker that talks to latch over HTTP only, with Python's standard library.

It claims one execution of kind `py-flow` and runs it as a flow:

  1. step "reserve": reserve a seat for the payload's order (skipped when the
     lease's journal has it: a run after a crash or a resume does not reserve
     twice);
  2. wait for the signal "approve", under the step "approval": the execution is
     suspended and this run ends;
  3. on the run that resumes it: step "ship" with the signal's data, then
     complete.

Run it again after `latch signal ID approve '{"by": "ann"}'` to finish the flow.

Settings: LATCH_URL (default http://127.0.0.1:8080), LATCH_KEY (a tenant's key),
LATCH_WAIT (seconds a claim waits for work, default 5). Exit status 0 when it
ran a lease or found none, 1 on an error.
"""

import datetime
import json
import os
import sys
import urllib.error
import urllib.request

URL = os.environ.get("LATCH_URL", "http://127.0.0.1:8080").rstrip("/")
KEY = os.environ.get("LATCH_KEY", "")
WAIT = int(os.environ.get("LATCH_WAIT", "5"))
APPROVAL_TIMEOUT = 7 * 24 * 3600  # a week, then the wait ends {"timed_out": true}


class LeaseLost(Exception):
    """The lease is not ours any more: drop the attempt, write nothing."""


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(URL + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + KEY)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=WAIT + 30) as res:
            return json.load(res)
    except urllib.error.HTTPError as err:
        try:
            problem = json.load(err)
        except ValueError:
            problem = {}
        if problem.get("code") == "lease_lost":
            raise LeaseLost(problem.get("detail")) from None
        raise RuntimeError(f"{method} {path}: {err.code} {problem.get('code')}: {problem.get('detail')}") from None


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def step(lease, name, work):
    """Runs work once for the flow: its recorded result when the journal has
    the step, else work's result, recorded (the first record wins)."""
    if name in lease["steps"]:
        return lease["steps"][name]
    started = now()
    result = work()
    rec = call("POST", f"/api/executions/{lease['execution_id']}/steps",
               {"lease_token": lease["lease_token"], "name": name, "result": result, "started_at": started})
    return rec["result"]


def run(lease):
    eid, token = lease["execution_id"], lease["lease_token"]
    order = lease["payload"].get("order")
    seat = step(lease, "reserve", lambda: {"order": order, "seat": "12A"})

    if "approval" not in lease["steps"]:
        e = call("POST", f"/api/executions/{eid}/suspend",
                 {"lease_token": token, "step": "approval", "signal": "approve",
                  "timeout_seconds": APPROVAL_TIMEOUT})
        # suspended: the signal resumes it; queued: it had come already and
        # the next run goes on. Either way this run is over.
        print(f"{eid}: waiting for approve ({e['status']})")
        return
    approval = lease["steps"]["approval"]
    if approval == {"timed_out": True}:
        call("POST", f"/api/executions/{eid}/fail",
             {"lease_token": token, "error": "not approved in time", "retry": False})
        print(f"{eid}: not approved in time")
        return

    shipped = step(lease, "ship", lambda: approval)
    call("POST", f"/api/executions/{eid}/complete",
         {"lease_token": token, "result": {"seat": seat, "shipped": shipped}})
    print(f"{eid}: shipped")


def main():
    if not KEY:
        print("flow_worker: set LATCH_KEY to a tenant's key", file=sys.stderr)
        return 1
    claim = call("POST", "/api/workers/claim",
                 {"worker_id": f"py-flow-{os.getpid()}", "kinds": ["py-flow"], "wait_seconds": WAIT})
    if not claim["leases"]:
        print("nothing to run")
        return 0
    lease = claim["leases"][0]
    try:
        run(lease)
    except LeaseLost as err:
        print(f"{lease['execution_id']}: lease lost, attempt dropped: {err}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as err:  # one line for a person, and exit 1
        print(f"flow_worker: {err}", file=sys.stderr)
        sys.exit(1)
