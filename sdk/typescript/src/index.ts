// @latch-run/client: the client, worker and flows of latch's HTTP API.
export * from "./types.js";
export * from "./errors.js";
export * from "./client.js";
export * from "./worker.js";
