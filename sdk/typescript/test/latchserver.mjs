// A real `latch serve` for the tests: one per test file (node --test runs
// each file in a process of its own), on a temp SQLite file.
//
// The binary is $LATCH_BIN when set (`npm test`, test/run.mjs, builds it once
// for all the files), else built with `go build` from the repository root. The server
// listens on a free port of 127.0.0.1, has no in-process workers (the tests'
// kinds are run by the SDK's worker) unless asked, and is stopped when the
// test file ends.

import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "../dist/index.js";

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const SDK = path.dirname(HERE);
export const REPO = path.dirname(path.dirname(SDK));
export const ADMIN_KEY = "lk_typescript-sdk-admin-key-for-the-tests-only";
export const MAX_SCHEDULES = 3; // small, so schedule_limit is quick to reach
export const MIN_SCHEDULE_INTERVAL = "1m"; // so that every "30s" is schedule_too_frequent

let seq = 0;

/** $LATCH_BIN, or (a test file run on its own) latch built for this process, removed at its exit. */
export function latchBin() {
  if (process.env.LATCH_BIN) return process.env.LATCH_BIN;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "latch-tssdk-bin-"));
  process.once("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
  const bin = path.join(dir, "latch");
  execFileSync("go", ["build", "-o", bin, "./cmd/latch"], { cwd: REPO, stdio: ["ignore", "inherit", "inherit"] });
  process.env.LATCH_BIN = bin;
  return bin;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export class Server {
  /** Starts `latch serve`; `workers` in-process worker slots (0 by default). */
  static async start({ workers = 0 } = {}) {
    const srv = new Server();
    await srv.#start(workers);
    return srv;
  }

  async #start(workers) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "latch-tssdk-"));
    this.bin = latchBin();
    this.logPath = path.join(this.dir, "serve.log");
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      this.url = `http://127.0.0.1:${port}`;
      const log = fs.openSync(this.logPath, "w");
      this.proc = spawn(this.bin, [
        "serve", "--addr", `127.0.0.1:${port}`, "--store", "sqlite:" + path.join(this.dir, "latch.db"),
        "--workers", String(workers), "--rescue-interval", "200ms", "--shutdown-grace", "1s",
        "--max-schedules", String(MAX_SCHEDULES), "--min-schedule-interval", MIN_SCHEDULE_INTERVAL,
        "--console=false",
      ], { env: { ...process.env, LATCH_ADMIN_KEY: ADMIN_KEY }, stdio: ["ignore", log, log] });
      fs.closeSync(log);
      this.exited = once(this.proc, "exit");
      process.once("exit", () => this.proc.kill("SIGKILL"));
      const deadline = Date.now() + 30_000;
      let running = true;
      this.exited.then(() => (running = false));
      while (Date.now() < deadline && running) {
        try {
          const r = await fetch(this.url + "/readyz");
          if (r.status === 200) return;
        } catch {
          // not listening yet
        }
        await new Promise((r) => setTimeout(r, 50)); // polling a process we cannot be notified by
      }
      if (running) {
        await this.stop();
        throw new Error("latch serve not ready after 30 s:\n" + this.log());
      }
      if (!this.log().includes("address already in use")) throw new Error("latch serve exited at start:\n" + this.log());
    }
    throw new Error("no free port for latch serve");
  }

  log() {
    try {
      return fs.readFileSync(this.logPath, "utf8").slice(-4000);
    } catch {
      return "";
    }
  }

  async stop() {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill("SIGTERM");
      const t = setTimeout(() => this.proc.kill("SIGKILL"), 10_000);
      await this.exited;
      clearTimeout(t);
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  admin(opts = {}) {
    return new Client({ baseUrl: this.url, key: ADMIN_KEY, ...opts });
  }

  /** A new tenant with a unique name; a client with its key (and .tenantName). */
  async newTenant(prefix = "t", opts = {}, clientOpts = {}) {
    const name = `${prefix}-${process.pid}-${++seq}`;
    const t = await this.admin().createTenant(name, opts);
    const c = new Client({ baseUrl: this.url, key: t.api_key, ...clientOpts });
    c.tenantName = name;
    return c;
  }
}
