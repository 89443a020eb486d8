import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { importNotFound, isTerminal, reasonOf, silentLogger, terminal, Worker, type Handler, type Task } from "@converge/sdk";
import { FakeServer, runHandler, taskFor, wireTask, testLease } from "@converge/sdk/testing";
import { KindManifestSchema } from "../gen/converge/v1/types_pb.js";
import { newTask } from "../src/task.js";

const manifests = `
type: manifest
kind: db
kind_version: 2
reactions:
  - {name: reconcile, trigger: specChange, emits: [status, conditions]}
  - {name: settle, trigger: childrenSettled, emits: [status]}
  - {name: backup, trigger: operation, verb: backup, emits: [operationOutput]}
  - {name: teardown, trigger: deleteRequested, emits: [finalizer]}
  - {name: look, trigger: observe, emits: [status]}
---
type: manifest
kind: pager
kind_version: 1
reactions:
  - {name: notify, trigger: reactor, emits: [sideEffect]}
---
type: resource
kind: db
kind_version: 2
name: main
spec: {}
`;

describe("taskFor", () => {
  it("fills every field of a task from the manifest, the spec and defaults", () => {
    const t = taskFor(manifests, "reconcile", { size: "small" }, { kind: "db" });
    const { signal, event, ...rest } = t;
    assert.equal(signal.aborted, false);
    assert.equal(typeof event, "function");
    assert.deepEqual(rest, {
      kind: "db",
      kindVersion: 2,
      reaction: "reconcile",
      trigger: "specChange",
      namespace: "default",
      name: "test",
      uid: "uid-test",
      generation: 1,
      labels: {},
      spec: { size: "small" },
      status: undefined,
      rejectedStatus: undefined,
      importId: undefined,
      observing: false,
      attempt: 1,
      dedupToken: "test/db/test/specChange/1",
      deadline: undefined,
      config: undefined,
      rollup: undefined,
      operation: undefined,
      reactor: undefined,
      traceparent: undefined,
      preview: false,
    });
  });

  it("makes observe tasks that carry the import id", () => {
    const t = taskFor(manifests, "look", {}, { kind: "db", importId: "vpc-0abc" });
    assert.deepEqual([t.trigger, t.observing, t.importId], ["observe", true, "vpc-0abc"]);
    const e = importNotFound(t.importId ?? "");
    assert.equal(isTerminal(e), true);
    assert.equal(reasonOf(e), "ImportNotFound");
    assert.equal(e.message, 'import: no object with id "vpc-0abc" exists');
  });

  it("takes the options' fields, through JSON as on the wire", () => {
    const deadline = new Date(Date.UTC(2030, 0, 2, 3, 4, 5, 678));
    const ac = new AbortController();
    const t = taskFor(manifests, "reconcile", { when: new Date(0) }, {
      kind: "db", name: "main", namespace: "prod", generation: 7, attempt: 3, labels: { team: "a" },
      status: { ready: true }, config: { region: "eu" }, deadline, signal: ac.signal, dedupToken: "tok",
    });
    assert.deepEqual(
      [t.name, t.namespace, t.generation, t.attempt, t.labels, t.status, t.config, t.dedupToken, t.spec],
      ["main", "prod", 7, 3, { team: "a" }, { ready: true }, { region: "eu" }, "tok", { when: "1970-01-01T00:00:00.000Z" }],
    );
    assert.equal(t.deadline?.getTime(), deadline.getTime());
    assert.equal(t.signal, ac.signal);
  });

  it("gives an operation its verb, a childrenSettled reaction a rollup, and a reactor its event and no resource", () => {
    const op = taskFor(manifests, "backup", undefined, { kind: "db", operation: { input: { full: true } } });
    assert.deepEqual(op.operation, { id: "op-1", verb: "backup", input: { full: true } });
    assert.equal(op.trigger, "operation");
    const settle = taskFor(manifests, "settle", {}, { kind: "db", rollup: { total: 2, ready: 1 } });
    assert.deepEqual(settle.rollup, { total: 2, ready: 1, reconciling: 0, degraded: 0, failed: 0, deleting: 0, excluded: 0, culprits: [] });
    const r = taskFor(manifests, "notify", undefined, { kind: "pager", reactor: { transition: "failed", watched: { kind: "db", name: "main" } } });
    assert.equal(r.name, "");
    assert.deepEqual(r.reactor, {
      binding: "test", transition: "failed", watched: { kind: "db", name: "main" },
      watchedKindVersion: 1, watchedGeneration: 1, watchedPhase: "Ready", watchedStatus: undefined,
    });
  });

  it("takes a manifest as an object (proto or JSON names) or a KindManifest message", () => {
    const obj = { kind: "hello", kind_version: 1, reactions: [{ name: "reconcile", trigger: "specChange", emits: ["status"] }] };
    assert.equal(taskFor(obj, "reconcile").kind, "hello");
    assert.equal(taskFor({ ...obj, kind_version: undefined, kindVersion: 3 }, "reconcile").kindVersion, 3);
    const msg = create(KindManifestSchema, { kind: "m", kindVersion: 1, reactions: [{ name: "r", trigger: "resync", emits: ["status"] }] });
    assert.equal(taskFor(msg, "r").trigger, "resync");
  });

  const refused: [string, () => unknown, RegExp][] = [
    ["several manifests and no kind", () => taskFor(manifests, "reconcile"), /2 manifests among db v2, pager v1, want exactly one: pick one with options.kind/],
    ["a kind not in the text", () => taskFor(manifests, "reconcile", {}, { kind: "nope" }), /0 manifests of kind "nope" among db v2, pager v1/],
    ["an unknown reaction", () => taskFor(manifests, "reconcil", {}, { kind: "db" }), /kind "db" v2 declares no reaction "reconcil" \(it declares: reconcile, settle, backup, teardown, look\)/],
    ["an unknown manifest field", () => taskFor({ kind: "x", kind_version: 1, reactons: [] }, "r"), /taskFor manifest \(manifest\): .*reactons/],
    ["another document type", () => taskFor({ type: "resource", kind: "x" }, "r"), /type is "resource", want "manifest" or none/],
    ["a bad kind name", () => taskFor({ kind: "Bad", kind_version: 1 }, "r"), /manifest: kind: "Bad" must be lower-case/],
    ["a spec that is not an object", () => taskFor(manifests, "reconcile", [1] as never, { kind: "db" }), /taskFor: spec: must be a JSON object, got an array/],
    ["a spec for a reactor", () => taskFor(manifests, "notify", { a: 1 }, { kind: "pager" }), /a reactor task carries no resource, so no spec/],
    ["YAML that does not parse", () => taskFor("kind: [", "r"), /taskFor manifest: document 1/],
  ];
  for (const [what, f, want] of refused) {
    it(`refuses ${what}, saying why`, () => assert.throws(f, want));
  }

  it("wireTask is the inverse of the worker's reading of a task", () => {
    for (const t of [
      taskFor(manifests, "reconcile", { a: [1] }, { kind: "db", status: { s: 1 }, config: { c: 2 }, deadline: new Date(1234567), labels: { l: "v" } }),
      taskFor(manifests, "backup", undefined, { kind: "db" }),
      taskFor(manifests, "settle", {}, { kind: "db", rollup: { culprits: [{ resource: { kind: "vpc", name: "v" }, phase: "Failed", message: "m", path: [{ namespace: "n", kind: "k", name: "p" }] }] } }),
      taskFor(manifests, "notify", undefined, { kind: "pager", reactor: { watchedStatus: { x: 1 } } }),
    ]) {
      // The event methods are closures of their own: compared by behaviour in events.test.ts.
      const fields = (x: object) => Object.fromEntries(Object.entries(x).filter(([k]) => k !== "event"));
      assert.deepEqual(fields(newTask(wireTask(t, testLease(t)), t.signal)), fields(t));
    }
  });
});

describe("runHandler", () => {
  const leaf = taskFor(manifests, "reconcile", { size: "small" }, { kind: "db" });

  it("reports a result as the server reads it, and a throw as a failure", async () => {
    const h: Handler = () => ({ status: { ok: true }, unhealthy: true, conditions: [{ type: "Up", status: "False", reason: "Down" }] });
    assert.deepEqual(await runHandler(h, leaf), {
      ok: true, status: { ok: true }, unhealthy: true, conditions: [{ type: "Up", status: "False", reason: "Down" }],
    });
    assert.deepEqual(await runHandler(() => undefined, leaf), { ok: true });
    assert.deepEqual(await runHandler(() => { throw new Error("later"); }, leaf), { ok: false, message: "later", terminal: false });
    assert.deepEqual(await runHandler(async () => { throw terminal("never"); }, leaf), { ok: false, message: "never", terminal: true });
  });

  it("applies the worker's checks to the result, with its messages", async () => {
    const out = await runHandler(() => ({ output: { a: 1 } }), leaf);
    assert.deepEqual(out, {
      ok: false, terminal: true,
      message: 'converge: result output: set for a task that runs no operation (trigger "specChange"); only an operation reaction reports an output',
    });
    const op = taskFor(manifests, "backup", undefined, { kind: "db" });
    assert.deepEqual(await runHandler(() => ({ output: { a: 1 } }), op), { ok: true, output: { a: 1 } });
    const reactor = taskFor(manifests, "notify", undefined, { kind: "pager" });
    const r = await runHandler(() => ({ status: { a: 1 } }), reactor);
    assert.match(r.ok ? "" : r.message, /of a reactor task carries status: a reactor emits side effects only/);
    const bad = await runHandler(() => ({ children: [{ kind: "vpc", kindVersion: 1, name: "a" }, { kind: "vpc", kindVersion: 1, name: "a" }] }), leaf);
    assert.match(bad.ok ? "" : bad.message, /^converge: result children\[1\] "a": duplicates children\[0\]/);
  });

  it("puts a large composition's parts back together", async () => {
    const children = Array.from({ length: 2500 }, (_, i) => ({ kind: "vpc", kindVersion: 1, name: `c-${i}` }));
    const out = await runHandler(() => ({ compose: true, children }), leaf);
    assert.equal(out.ok && out.children?.length, 2500);
    assert.deepEqual(out.ok && out.children?.[2499], { kind: "vpc", kindVersion: 1, name: "c-2499", spec: {} });
  });

  it("wraps the handler in middleware, the first outermost", async () => {
    const seen: string[] = [];
    const tag = (n: string) => (next: Handler) => async (t: Task) => {
      seen.push(`${n}>`);
      const r = await next(t);
      seen.push(`<${n}`);
      return r;
    };
    const out = await runHandler(() => ({ status: { v: 1 } }), leaf, { middleware: [tag("a"), tag("b")] });
    assert.deepEqual(out, { ok: true, status: { v: 1 } });
    assert.deepEqual(seen, ["a>", "b>", "<b", "<a"]);
    await assert.rejects(runHandler(() => {}, leaf, { middleware: [() => undefined as never] }), /middleware\[0\] returned undefined, not a handler function/);
  });
});

describe("FakeServer", () => {
  it("acknowledges results, so a worker drains at once", async () => {
    const fake = await FakeServer.start();
    const w = new Worker({ url: fake.url, logger: silentLogger });
    w.handle("db", 2, "reconcile", (t) => ({ status: { name: t.name } }));
    const stop = new AbortController();
    const running = w.run(stop.signal);
    try {
      const s = await fake.session();
      assert.deepEqual(s.reactions, ["db/2/reconcile"]);
      const leases = s.dispatch(taskFor(manifests, "reconcile", {}, { kind: "db", name: "a" }), taskFor(manifests, "reconcile", {}, { kind: "db", name: "b" }));
      assert.deepEqual(leases.map((l) => l.taskId), [1n, 2n]);
      assert.deepEqual(await s.result(2), { ok: true, status: { name: "b" } });
      assert.deepEqual(await s.result(leases[0]), { ok: true, status: { name: "a" } });
      const t0 = Date.now();
      stop.abort();
      await s.drained();
      await running;
      assert.ok(Date.now() - t0 < 2000, "no wait for acknowledgements");
      await s.ended;
    } finally {
      stop.abort();
      await running;
      await fake.stop();
    }
  });

  it("sends default configs after Subscribed, and lets a test cancel a task", async () => {
    const fake = await FakeServer.start({ configs: [{ kind: "db", kindVersion: 2, config: { region: "eu" } }] });
    const w = new Worker({ url: fake.url, logger: silentLogger });
    let aborted = "";
    w.handle("db", 2, "reconcile", (t) =>
      new Promise((_, reject) => t.signal.addEventListener("abort", () => reject(((aborted = String(t.signal.reason)), t.signal.reason)))),
    { needsConfig: true });
    const stop = new AbortController();
    const running = w.run(stop.signal);
    try {
      const s = await fake.session();
      const [l] = s.dispatch(taskFor(manifests, "reconcile", {}, { kind: "db", config: { region: "eu" } }));
      await s.next("heartbeat", (h) => h.inFlight.some((x) => x.taskId === l.taskId));
      s.cancel(l.taskId, "superseded");
      const from = s.received.items.length;
      await s.next("heartbeat", (h) => h.inFlight.length === 0, from);
      assert.match(aborted, /superseded/);
      assert.deepEqual(w.defaultConfig("db", 2), { region: "eu" });
    } finally {
      stop.abort();
      await running;
      await fake.stop();
    }
  });
});
