// Worker processes for the tests: started with the server's URL and a key,
// read line by line.
import { spawn } from "node:child_process";
import path from "node:path";
import readline from "node:readline";

import { HERE } from "./latchserver.mjs";

export function startWorkerProcess(srv, key, mode, env = {}) {
  const p = spawn(process.execPath, [path.join(HERE, "worker_proc.mjs"), mode], {
    env: { ...process.env, LATCH_URL: srv.url, LATCH_KEY: key, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  p.stderrText = "";
  p.stderr.setEncoding("utf8");
  p.stderr.on("data", (d) => (p.stderrText += d));
  p.exited = new Promise((resolve) => p.once("exit", (code, signal) => resolve({ code, signal })));
  const rl = readline.createInterface({ input: p.stdout });
  const lines = [];
  const waiting = [];
  rl.on("line", (l) => (waiting.length ? waiting.shift()(l) : lines.push(l)));
  rl.on("close", () => {
    while (waiting.length) waiting.shift()("");
  });
  p.outLines = lines;
  /** The next line of stdout; "" when none comes within timeout ms (the process is then killed). */
  p.readLine = (timeout = 20_000) => {
    if (lines.length) return Promise.resolve(lines.shift());
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        p.kill("SIGKILL");
        resolve("");
      }, timeout);
      waiting.push((l) => {
        clearTimeout(t);
        resolve(l);
      });
    });
  };
  /** The rest of stdout once the process exited, as lines. */
  p.rest = async () => {
    await p.exited;
    await new Promise((r) => (rl.closed ? r() : rl.once("close", r)));
    return lines.splice(0);
  };
  return p;
}
