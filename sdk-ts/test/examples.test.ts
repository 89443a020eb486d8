import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isTerminal } from "../src/errors.js";
import { newTask } from "../src/task.js";
import { composeWebapp, reconcileService } from "../examples/composer/webapp.js";
import { reconcileHello } from "../examples/leaf/hello.js";
import { task } from "./helpers.js";

const signal = new AbortController().signal;

describe("examples", () => {
  it("hello greets, and fails terminally for an empty name", async () => {
    const ok = await reconcileHello(newTask(task(1, {}, { name: "Ada", greeting: "Hi" }), signal) as never);
    assert.deepEqual(ok, { status: { message: "Hi, Ada!" } });
    await assert.rejects(
      async () => reconcileHello(newTask(task(2, {}, { name: "" }), signal) as never),
      (e: unknown) => isTerminal(e) && /spec\.name is empty/.test((e as Error).message),
    );
  });

  it("webapp composes a database and a service that depends on it through two flows", async () => {
    const t = newTask(task(1, { kind: "webapp" }, { image: "shop:1", replicas: 2 }), signal);
    const r = await composeWebapp(t as never);
    assert.ok(r);
    assert.equal(r.compose, true);
    assert.deepEqual(r.children?.map((c) => `${c.kind}/${c.name}`), ["database/r1-db", "service/r1-svc"]);
    assert.deepEqual(r.edges, [
      {
        dependent: { kind: "service", name: "r1-svc" },
        dependency: { kind: "database", name: "r1-db" },
        flows: [
          { from: "/endpoint", to: "/database_endpoint" },
          { expr: '"postgres://" + status.endpoint + "/r1"', to: "/database_url" },
        ],
      },
    ]);
  });

  it("service waits (transiently) for its flowed values", async () => {
    await assert.rejects(
      async () => reconcileService(newTask(task(1, { kind: "service" }, { image: "x", replicas: 1 }), signal) as never),
      (e: unknown) => !isTerminal(e) && /database_endpoint is not set yet/.test((e as Error).message),
    );
  });
});
