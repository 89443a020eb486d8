import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { Client, silentLogger, terminal, Worker, type Handler, type Middleware, type Task } from "@converge/sdk";
import { FakeServer, taskFor } from "@converge/sdk/testing";

const manifest = {
  kind: "greeting",
  kind_version: 1,
  reactions: [
    { name: "reconcile", trigger: "specChange", emits: ["status"] },
    { name: "teardown", trigger: "deleteRequested", emits: ["finalizer"] },
  ],
};

let fake: FakeServer;
before(async () => {
  fake = await FakeServer.start();
});
after(async () => {
  await fake.stop();
});

/** serve runs w against the fake until the returned stop is called. */
async function serve(w: Worker, n: number) {
  const ac = new AbortController();
  const running = w.run(ac.signal);
  const s = await fake.session(n);
  return { s, stop: async () => (ac.abort(), await running) };
}

describe("Worker middleware", () => {
  it("wraps every handler, the worker's outside the reaction's, first outermost, seeing the task and the result or error", async () => {
    const log: string[] = [];
    const tag =
      (n: string): Middleware =>
      (next) =>
      async (t) => {
        log.push(`${n}> ${t.reaction} ${t.name}`);
        try {
          const r = await next(t);
          log.push(`<${n} ${JSON.stringify(r?.status)}`);
          return r;
        } catch (e) {
          log.push(`<${n} threw ${(e as Error).message}`);
          throw e;
        }
      };
    const w = new Worker({ url: fake.url, logger: silentLogger, middleware: [tag("w1"), tag("w2")] });
    w.handle("greeting", 1, "reconcile", (t) => ({ status: { hi: t.name } }), { middleware: [tag("h")] });
    w.handle("greeting", 1, "teardown", () => {
      throw terminal(new Error("stuck"));
    });
    const { s, stop } = await serve(w, 0);
    try {
      assert.deepEqual(await s.run(taskFor(manifest, "reconcile", {}, { name: "a" })), { ok: true, status: { hi: "a" } });
      assert.deepEqual(await s.run(taskFor(manifest, "teardown", {}, { name: "b" })), { ok: false, message: "stuck", terminal: true });
    } finally {
      await stop();
    }
    assert.deepEqual(log, [
      "w1> reconcile a", "w2> reconcile a", "h> reconcile a", '<h {"hi":"a"}', '<w2 {"hi":"a"}', '<w1 {"hi":"a"}',
      "w1> teardown b", "w2> teardown b", "<w2 threw stuck", "<w1 threw stuck",
    ]);
  });

  it("may change the task and the result, or fail the task, and the result it returns is the one checked", async () => {
    const upper: Middleware = (next) => (t) => next({ ...t, name: t.name.toUpperCase() });
    const stamp: Middleware = (next) => async (t) => {
      const r = await next(t);
      return t.reaction === "reconcile" ? { ...r, status: { ...r?.status, by: "middleware" } } : r;
    };
    const gate: Middleware = (next) => (t) => {
      if (t.labels.blocked) throw new Error(`blocked by ${t.labels.blocked}`);
      return next(t);
    };
    const breaks: Middleware = () => () => ({ status: "not an object" as never });
    const w = new Worker({ url: fake.url, logger: silentLogger, middleware: [gate, stamp] });
    w.handle("greeting", 1, "reconcile", (t) => ({ status: { name: t.name } }), { middleware: [upper] });
    w.handle("greeting", 1, "teardown", () => {}, { middleware: [breaks] });
    const { s, stop } = await serve(w, 1);
    try {
      assert.deepEqual(await s.run(taskFor(manifest, "reconcile", {}, { name: "x" })), { ok: true, status: { name: "X", by: "middleware" } });
      assert.deepEqual(await s.run(taskFor(manifest, "reconcile", {}, { labels: { blocked: "ops" } })), {
        ok: false, message: "blocked by ops", terminal: false,
      });
      const bad = await s.run(taskFor(manifest, "teardown", {}));
      assert.match(bad.ok ? "" : bad.message, /^converge: result status: must be a JSON object, got a string/);
    } finally {
      await stop();
    }
  });

  it("refuses middleware that is not a function, or that returns no handler, when it is given", () => {
    assert.throws(() => new Worker({ middleware: "x" as never }), /options.middleware: must be an array of functions/);
    assert.throws(() => new Worker({ middleware: [() => (() => {}) as Handler, 3 as never] }), /options.middleware\[1\]: must be a function/);
    const w = new Worker({ middleware: [(next) => next, () => 7 as never] });
    assert.throws(
      () => w.handle("greeting", 1, "reconcile", () => {}, { middleware: [(next) => next, () => null as never] }),
      { name: "TypeError", message: 'converge: handle("greeting", 1, "reconcile"): options.middleware[1] returned null, not a handler function' },
    );
    assert.throws(() => w.handle("greeting", 1, "reconcile", () => {}), /new Worker: options.middleware\[1\] returned number, not a handler function/);
    assert.throws(() => w.handle("greeting", 1, "teardown", () => {}, { middleware: [{} as never] }), /handle\("greeting", 1, "teardown"\): options.middleware\[0\]: must be a function/);
  });

  it("types a reaction's middleware with the handler's types", () => {
    interface Spec { name: string }
    const typed: Middleware<Spec, { message: string }> = (next) => (t: Task<Spec, { message: string }>) => next(t);
    const w = new Worker({ logger: silentLogger });
    w.handle<Spec, { message: string }>("greeting", 1, "reconcile", (t) => ({ status: { message: t.spec.name } }), { middleware: [typed] });
  });
});

describe("the server URL", () => {
  const saved = process.env.CONVERGE_SERVER;
  afterEach(() => {
    if (saved === undefined) delete process.env.CONVERGE_SERVER;
    else process.env.CONVERGE_SERVER = saved;
  });

  it("defaults to CONVERGE_SERVER for a worker given no URL", async () => {
    process.env.CONVERGE_SERVER = fake.url;
    const w = new Worker({ logger: silentLogger });
    w.handle("greeting", 1, "reconcile", () => ({ status: { via: "env" } }));
    const { s, stop } = await serve(w, 2);
    try {
      assert.deepEqual(await s.run(taskFor(manifest, "reconcile", {})), { ok: true, status: { via: "env" } });
    } finally {
      await stop();
    }
  });

  it("names where an invalid URL came from", () => {
    process.env.CONVERGE_SERVER = "localhost:7070";
    assert.throws(() => new Worker(), {
      name: "TypeError",
      message: 'converge: server URL "localhost:7070" (from the CONVERGE_SERVER environment variable): scheme must be http or https, e.g. http://localhost:7070',
    });
    assert.throws(() => new Client(), /\(from the CONVERGE_SERVER environment variable\): scheme must be http or https/);
    // A URL given wins over the environment, and is named as the source.
    assert.doesNotThrow(() => new Worker({ url: "http://127.0.0.1:1" }));
    assert.throws(() => new Worker({ url: "http://" }), /server URL "http:\/\/" \(from options.url\): not a valid URL/);
    assert.throws(() => new Client({ url: "ftp://x" }), /server URL "ftp:\/\/x" \(from options.url\): scheme must be http or https/);
    process.env.CONVERGE_SERVER = "";
    assert.doesNotThrow(() => new Worker(), "an empty CONVERGE_SERVER is unset, as for conctl");
  });
});
