// The browser test's page (test/sdk/typescript_test.go serves it, the built
// client under /dist/ and latch's /api/ from one origin). It watches the
// execution named in the fragment, #key=<tenant key>&id=<execution id>, and
// shows each status it sees; body[data-done] is the terminal one.
import { Client } from "/dist/index.js";

const params = new URLSearchParams(location.hash.slice(1));
const id = params.get("id");
document.getElementById("id").textContent = id;
const client = new Client({ baseUrl: "", key: params.get("key") }); // "": the page's own origin
const list = document.getElementById("statuses");
try {
  let last = null;
  for await (const e of client.watch(id)) {
    const li = document.createElement("li");
    li.dataset.status = e.status;
    li.textContent = `${e.status} (attempt ${e.attempt})`;
    list.append(li);
    last = e.status;
  }
  document.body.dataset.done = last;
} catch (err) {
  document.getElementById("error").textContent = `${err.name}: ${err.message}`;
  document.body.dataset.done = "error";
}
