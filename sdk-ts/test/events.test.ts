import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import { EventType, type Task } from "@converge/sdk";
import { FakeServer, eventsOf, runHandler, taskFor } from "@converge/sdk/testing";
import { Ledger } from "../src/ledger.js";
import { eventQueueFull, maxQueuedEvents } from "../src/event.js";
import { Worker } from "../src/worker.js";
import { task, worker } from "./helpers.js";

const manifest = `
type: manifest
kind: greeting
kind_version: 1
reactions:
  - {name: reconcile, trigger: specChange, emits: [status]}
`;

/** warnFirst reports a Warning before it answers, as a handler about to do something drastic does. */
function warnFirst(t: Task) {
  t.event(EventType.Warning, "Replacing", `replacing ${t.name}`);
  t.event(EventType.Normal, "Replaced");
  return { status: { ok: true } };
}

describe("task.event", () => {
  it("keeps a taskFor task's events for eventsOf; a preview's go nowhere", async () => {
    const t = taskFor(manifest, "reconcile", {});
    await runHandler(warnFirst, t);
    assert.deepEqual(eventsOf(t), [
      { type: "Warning", reason: "Replacing", message: "replacing test" },
      { type: "Normal", reason: "Replaced", message: "" },
    ]);
    const p = taskFor(manifest, "reconcile", {}, { preview: true });
    await runHandler(warnFirst, p);
    assert.deepEqual(eventsOf(p), []);
  });

  it("throws for an invalid type, reason or message, naming it and the resource", () => {
    const t = taskFor(manifest, "reconcile", {});
    const bad: [string, string, string, RegExp][] = [
      ["Info", "Replacing", "", /type/],
      ["Normal", "replacing", "", /reason/],
      ["Normal", "", "", /reason/],
      ["Normal", "A".repeat(64), "", /reason/],
      ["Warning", "Replacing", "x".repeat(4097), /message/],
    ];
    for (const [type, reason, message, what] of bad) {
      assert.throws(() => t.event(type as typeof EventType.Normal, reason, message), (e: Error) => what.test(e.message) && e.message.includes("greeting default/test"));
    }
    assert.deepEqual(eventsOf(t), []);
  });

  it("bounds the queue and drops an abandoned task's events quietly", () => {
    const l = new Ledger(1);
    const starts = l.accept(task(1), () => {});
    assert.ok(Array.isArray(starts) && starts.length === 1);
    const ex = starts[0];
    for (let i = 0; i < maxQueuedEvents; i++) {
      l.queueEvent(ex, { type: "Normal", reason: "Step", message: "" });
    }
    assert.throws(() => l.queueEvent(ex, { type: "Normal", reason: "Step", message: "" }), { message: eventQueueFull });
    assert.equal(l.takeEvents().length, maxQueuedEvents);
    l.abandon(ex.key, "cancelled");
    l.queueEvent(ex, { type: "Normal", reason: "Step", message: "" });
    assert.equal(l.takeEvents().length, 0);
  });
});

describe("Worker task events", () => {
  let fake: FakeServer;
  let stop: AbortController;
  let running: Promise<void> | undefined;
  beforeEach(async () => {
    fake = await FakeServer.start();
    stop = new AbortController();
  });
  afterEach(async () => {
    stop.abort();
    await running;
    await fake.stop();
  });

  it("sends a handler's events under its lease, in order, before its result", async () => {
    const w: Worker = worker(fake);
    w.handle("greeting", 1, "reconcile", warnFirst);
    running = w.run(stop.signal);
    const s = await fake.session(0);
    s.send({ case: "tasks", value: { tasks: [task(7)] } });
    await s.next("results");
    const sent = s.received.items.flatMap((m) => (m.msg.case === "taskEvent" || m.msg.case === "results" ? [m.msg] : []));
    assert.deepEqual(
      sent.map((m) => (m.case === "taskEvent" ? `${m.value.lease?.taskId} ${m.value.type} ${m.value.reason}` : m.case)),
      ["7 Warning Replacing", "7 Normal Replaced", "results"],
    );
  });
});
