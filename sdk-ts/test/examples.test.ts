import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { silentLogger } from "@converge/sdk";
import { FakeServer, runHandler, taskFor } from "@converge/sdk/testing";
import { composeWebapp, reconcileService } from "../examples/composer/webapp.js";
import { webappWorker } from "../examples/composer/worker.js";
import { reconcileHello } from "../examples/leaf/hello.js";
import { helloWorker } from "../examples/leaf/worker.js";

const pkg = fileURLToPath(new URL("../../../", import.meta.url));
const hello = readFileSync(join(pkg, "examples", "leaf", "hello.yaml"), "utf8");
const webapp = readFileSync(join(pkg, "examples", "composer", "kinds.yaml"), "utf8");

describe("examples", () => {
  it("hello greets, and fails terminally for an empty name", async () => {
    assert.deepEqual(await runHandler(reconcileHello, taskFor(hello, "reconcile", { name: "Ada", greeting: "Hi" })), {
      ok: true,
      status: { message: "Hi, Ada!" },
    });
    assert.deepEqual(await runHandler(reconcileHello, taskFor(hello, "reconcile", { name: "" })), {
      ok: false,
      message: "spec.name is empty: say who to greet",
      terminal: true,
    });
  });

  it("webapp composes a database and a service that depends on it through two flows", async () => {
    const out = await runHandler(composeWebapp, taskFor(webapp, "compose", { image: "shop:1", replicas: 2 }, { kind: "webapp", name: "shop" }));
    assert.deepEqual(out, {
      ok: true,
      status: { components: 2 },
      compose: true,
      children: [
        { kind: "database", kindVersion: 1, name: "shop-db", spec: { size: "small" } },
        { kind: "service", kindVersion: 1, name: "shop-svc", labels: { app: "shop" }, spec: { image: "shop:1", replicas: 2 } },
      ],
      edges: [
        {
          dependent: { kind: "service", name: "shop-svc" },
          dependency: { kind: "database", name: "shop-db" },
          flows: [
            { from: "/endpoint", to: "/database_endpoint" },
            { expr: '"postgres://" + status.endpoint + "/shop"', to: "/database_url" },
          ],
        },
      ],
      references: [],
    });
  });

  it("a composite whose name makes a bad child name fails terminally, with the message a worker sends", async () => {
    const t = taskFor(webapp, "compose", { image: "x" }, { kind: "webapp", name: "Shop" });
    const out = await runHandler(composeWebapp, t);
    assert.equal(out.ok, false);
    assert.ok(!out.ok && out.terminal);
    assert.match(out.ok ? "" : out.message, /^converge: result children\[0\] "Shop-db": name: "Shop-db" must be lower-case/);

    // The same task through a whole worker: the same report.
    const fake = await FakeServer.start();
    const stop = new AbortController();
    const running = webappWorker({ url: fake.url, logger: silentLogger }).run(stop.signal);
    try {
      const s = await fake.session();
      assert.deepEqual(await s.run(t), out);
    } finally {
      stop.abort();
      await running;
      await fake.stop();
    }
  });

  it("service waits (transiently) for its flowed values", async () => {
    const out = await runHandler(reconcileService, taskFor(webapp, "reconcile", { image: "x", replicas: 1 }, { kind: "service" }));
    assert.deepEqual(out, { ok: false, message: "spec.database_endpoint is not set yet", terminal: false });
  });

  it("the example workers subscribe to their reactions, serve tasks and drain", async () => {
    const fake = await FakeServer.start();
    const stop = new AbortController();
    const workers = [helloWorker({ url: fake.url, logger: silentLogger }), webappWorker({ url: fake.url, logger: silentLogger })];
    const running = workers.map((w) => w.run(stop.signal));
    try {
      const [a, b] = await Promise.all([fake.session(0), fake.session(1)]);
      const [leaf, composer] = a.reactions.length === 1 ? [a, b] : [b, a];
      assert.deepEqual(leaf.reactions, ["hello/1/reconcile"]);
      assert.deepEqual(composer.reactions, ["database/1/reconcile", "service/1/reconcile", "webapp/1/compose"]);
      assert.deepEqual(await leaf.run(taskFor(hello, "reconcile", { name: "world" })), { ok: true, status: { message: "Hello, world!" } });
      const db = await composer.run(taskFor(webapp, "reconcile", {}, { kind: "database", name: "shop-db" }));
      assert.deepEqual(db, { ok: true, status: { endpoint: "shop-db.db.internal:5432" } });
      stop.abort();
      await Promise.all([leaf.drained(), composer.drained()]);
      await Promise.all(running);
      await Promise.all([leaf.ended, composer.ended]);
    } finally {
      stop.abort();
      await Promise.all(running);
      await fake.stop();
    }
  });
});
