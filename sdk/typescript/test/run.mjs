// `npm test`: builds latch once when $LATCH_BIN is not set (go build
// ./cmd/latch from the repository root, into a temporary directory removed
// afterwards), then runs every test file with node --test against it.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { HERE, REPO } from "./latchserver.mjs";

let tmp = null;
const env = { ...process.env };
if (!env.LATCH_BIN) {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "latch-tssdk-bin-"));
  env.LATCH_BIN = path.join(tmp, "latch");
  execFileSync("go", ["build", "-o", env.LATCH_BIN, "./cmd/latch"], { cwd: REPO, stdio: "inherit" });
}
const files = fs.readdirSync(HERE).filter((f) => f.endsWith(".test.mjs")).sort().map((f) => path.join("test", f));
const res = spawnSync(process.execPath, ["--test", ...process.argv.slice(2), ...files], {
  cwd: path.dirname(HERE), env, stdio: "inherit",
});
if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
process.exit(res.status ?? 1);
