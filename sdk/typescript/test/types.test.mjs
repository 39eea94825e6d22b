// The types of src/types.ts against api/openapi.json: every interface named
// like a schema of the document has exactly the schema's fields, the
// required ones not optional, and `| null` exactly where the schema allows
// null. Execution, Lease and Problem must be among them. Read with the
// TypeScript compiler's own checker (typescript is a dev dependency).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import ts from "typescript";

import { REPO, SDK } from "./latchserver.mjs";

const doc = JSON.parse(fs.readFileSync(path.join(REPO, "api", "openapi.json"), "utf8"));
const schemas = doc.components.schemas;

function resolve(s) {
  if (s.$ref) return resolve(schemas[s.$ref.split("/").at(-1)]);
  if (s.allOf) {
    const parts = s.allOf.map(resolve);
    return {
      properties: Object.assign({}, ...parts.map((p) => p.properties ?? {})),
      required: parts.flatMap((p) => p.required ?? []),
    };
  }
  return s;
}

/** Whether a property schema admits null (true for "any JSON": no type at all). */
function nullable(p) {
  if (p.$ref) return nullable(schemas[p.$ref.split("/").at(-1)]);
  if (p.oneOf || p.anyOf) return (p.oneOf ?? p.anyOf).some(nullable);
  if (p.type === undefined && p.enum === undefined && p.const === undefined) return true;
  if (Array.isArray(p.type)) return p.type.includes("null");
  return p.type === "null";
}

test("the interfaces of src/types.ts match the schemas of api/openapi.json", () => {
  const file = path.join(SDK, "src", "types.ts");
  const program = ts.createProgram([file], { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, types: [] });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const moduleSym = checker.getSymbolAtLocation(source);
  const checked = [];
  for (const sym of checker.getExportsOfModule(moduleSym)) {
    const name = sym.getName();
    if (!(sym.flags & ts.SymbolFlags.Interface) || !schemas[name]) continue;
    const schema = resolve(schemas[name]);
    if (!schema.properties) continue;
    const decl = sym.declarations[0];
    const type = checker.getDeclaredTypeOfSymbol(sym);
    const props = new Map(checker.getPropertiesOfType(type).map((p) => [p.getName(), p]));
    assert.deepEqual([...props.keys()].sort(), Object.keys(schema.properties).sort(), `${name}: the fields`);
    const required = new Set(schema.required ?? []);
    for (const [field, ps] of Object.entries(schema.properties)) {
      const p = props.get(field);
      const optional = (p.flags & ts.SymbolFlags.Optional) !== 0;
      assert.equal(optional, !required.has(field), `${name}.${field}: optional exactly when the schema does not require it`);
      const t = checker.getTypeOfSymbolAtLocation(p, decl);
      const parts = t.isUnion() ? t.types : [t];
      const hasNull = parts.some((x) => x.flags & ts.TypeFlags.Null);
      assert.equal(hasNull, nullable(ps), `${name}.${field}: | null exactly where the schema allows null (${checker.typeToString(t)})`);
      if (ps.enum && ps.type === "string") {
        const lits = parts.filter((x) => x.isStringLiteral()).map((x) => x.value).sort();
        assert.deepEqual(lits, [...ps.enum].sort(), `${name}.${field}: the enum`);
      }
    }
    checked.push(name);
  }
  for (const must of ["Execution", "Lease", "Problem"]) assert.ok(checked.includes(must), `${must} is checked`);
  // Enumerations kept as type aliases: the same members as the schema's enum.
  for (const [alias, schemaName] of [["ExecutionStatus", "ExecutionStatus"], ["RunOutcome", "RunOutcome"], ["ProblemCode", null]]) {
    const sym = checker.getExportsOfModule(moduleSym).find((s) => s.getName() === alias);
    const t = checker.getDeclaredTypeOfSymbol(sym);
    const lits = (t.isUnion() ? t.types : [t]).map((x) => x.value).sort();
    const want = schemaName ? schemas[schemaName].enum : schemas.Problem.properties.code.enum;
    assert.deepEqual(lits, [...want].sort(), alias);
  }
  assert.ok(checked.length >= 15, checked.join(", "));
});

/** The diagnostics of compiling `code` (a module beside src/) strictly. */
function diagnose(code) {
  const file = path.join(SDK, "src", "__typed_handler_check.ts");
  const host = ts.createCompilerHost({});
  const read = host.readFile;
  host.readFile = (f) => (path.resolve(f) === file ? code : read(f));
  const exists = host.fileExists;
  host.fileExists = (f) => path.resolve(f) === file || exists(f);
  const program = ts.createProgram([file], {
    strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext, types: [], skipLibCheck: true, lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
  }, host);
  return ts.getPreEmitDiagnostics(program).filter((d) => d.file && path.resolve(d.file.fileName) === file)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
}

test("a handler declares its payload's and result's types, and the compiler holds it to them", () => {
  const typed = `
import { Client, Worker } from "./index.js";
const w = new Worker(new Client({ baseUrl: "http://x", key: "k" }));
w.handle<{ n: number }, number>("double", (job) => job.payload.n * 2);
w.handle<{ url: string }>("fetch", async (job) => job.payload.url.length);
w.handle("untyped", (job) => job.payload);
`;
  assert.deepEqual(diagnose(typed), []);
  const wrong = `
import { Client, Worker } from "./index.js";
const w = new Worker(new Client({ baseUrl: "http://x", key: "k" }));
w.handle<{ n: number }, number>("double", (job) => job.payload.m);
w.handle<{ n: number }, string>("double", (job) => job.payload.n * 2);
w.handle("untyped", (job) => job.payload.n);
`;
  const errs = diagnose(wrong).join("\n");
  assert.match(errs, /Property 'm' does not exist on type '\{ n: number; \}'/);
  assert.match(errs, /Type 'number' is not assignable to type 'string \| Promise<string>'/);
  assert.match(errs, /'job\.payload' is possibly 'null'/, "an untyped payload stays JSONValue");
});

test("children: the compiler refuses a child's dedup_key and types the outcomes", () => {
  const typed = `
import { Client, Worker, type ChildOutcome } from "./index.js";
const w = new Worker(new Client({ baseUrl: "http://x", key: "k" }));
w.handle("parent", async (job) => {
  const ids: string[] = await job.spawn("kids", [{ kind: "a", payload: { n: 1 }, max_attempts: 2 }], { on_parent_end: "abandon" });
  const outs: ChildOutcome[] = await job.waitChildren("all", "kids", { count: 1, timeout: 5 });
  const mapped = await job.map("m", "a", [1, 2], { child: { queue: "q" } });
  return { ids, s: outs.map((o) => o.status), e: mapped.map((o) => o.error) };
});
`;
  assert.deepEqual(diagnose(typed), []);
  const wrong = `
import { Client, Worker } from "./index.js";
const w = new Worker(new Client({ baseUrl: "http://x", key: "k" }));
w.handle("parent", async (job) => {
  await job.spawn("kids", [{ kind: "a", dedup_key: "once" }]);
  await job.spawn("kids2", [{ kind: "a" }], { on_parent_end: "orphan" });
});
`;
  const errs = diagnose(wrong).join("\n");
  assert.match(errs, /'dedup_key' does not exist/);
  assert.match(errs, /"orphan"/);
});

test("events: waitEvent answers an EventRecord, publish a PublishResponse", () => {
  const typed = `
import { Client, Worker, type EventStart } from "./index.js";
const c = new Client({ baseUrl: "http://x", key: "k" });
const w = new Worker(c);
w.handle("order", async (job) => {
  const ev = await job.waitEvent("paid", "payment", { key: "o-7", since: new Date(), timeout: 5 });
  const key: string | null = ev.key;
  const at: string = ev.published_at;
  return { key, at, data: ev.data };
});
async function f() {
  const p = await c.publish("payment", { amount: 1 }, { key: "o-7", idempotencyKey: "i" });
  const s: EventStart[] = p.started;
  const n: number = p.resumed;
  const sub = await c.putSubscription("s", { event: "payment", kind: "k", concurrency_key: null });
  return [s, n, sub.tenant];
}
f();
`;
  assert.deepEqual(diagnose(typed), []);
  const wrong = `
import { Client } from "./index.js";
const c = new Client({ baseUrl: "http://x", key: "k" });
c.putSubscription("s", { event: "payment" });
`;
  assert.match(diagnose(wrong).join("\n"), /'kind' is missing/);
});
