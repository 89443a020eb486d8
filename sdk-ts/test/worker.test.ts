import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ConfigsSchema, ResultAckSchema, type TaskResult } from "../gen/converge/v1/worker_pb.js";
import { terminal } from "../src/errors.js";
import { Worker } from "../src/worker.js";
import { sdkName } from "../src/version.js";
import { FakeServer, type FakeSession } from "../src/testing/index.js";
import { Gate, eventually, lease, parse, task, worker } from "./helpers.js";

let fake: FakeServer;
let stop: AbortController;
let running: Promise<void> | undefined;

beforeEach(async () => {
  // Acks are sent by hand: several tests hold them back.
  fake = await FakeServer.start({ autoAck: false });
  stop = new AbortController();
  running = undefined;
});

afterEach(async () => {
  stop.abort();
  await running;
  await fake.stop();
});

function start(w: Worker): void {
  running = w.run(stop.signal);
}

/** result waits for the result of a task id on s. */
async function result(s: FakeSession, id: number): Promise<TaskResult> {
  const batch = await s.next("results", (r) => r.results.some((x) => x.lease?.taskId === BigInt(id)));
  return batch.results.find((x) => x.lease?.taskId === BigInt(id)) as TaskResult;
}

function ack(s: FakeSession, ...ids: number[]): void {
  s.send({ case: "acks", value: { acks: ids.map((id) => create(ResultAckSchema, { lease: lease(id), applied: true })) } });
}

describe("Worker", () => {
  it("subscribes with its sorted reactions, capacity, name and SDK, then heartbeats", async () => {
    const w = worker(fake, { capacity: 3, name: "w1" });
    w.handle("zeta", 2, "reconcile", () => {});
    w.handle("alpha", 1, "teardown", () => {});
    w.handle("alpha", 1, "compose", () => {});
    start(w);
    const s = await fake.session(0);
    assert.equal(s.subscribe.workerName, "w1");
    assert.equal(s.subscribe.capacity, 3);
    assert.equal(s.subscribe.sdk, sdkName);
    assert.deepEqual(
      s.subscribe.reactions.map((r) => `${r.kind}/${r.kindVersion}/${r.reaction}`),
      ["alpha/1/compose", "alpha/1/teardown", "zeta/2/reconcile"],
    );
    assert.deepEqual(s.subscribe.resumed, []);
    const first = await s.next("heartbeat");
    assert.deepEqual(first.inFlight, []);
    // The server's 50 ms interval brings more.
    await s.next("heartbeat", () => true, s.received.items.indexOf(s.received.items.find((m) => m.msg.case === "heartbeat")!) + 1);
    assert.equal(s.all("readiness").length, 0, "every reaction is ready, so nothing is reported");
  });

  it("sends its bearer token on the stream, from the options or CONVERGE_TOKEN", async () => {
    const saved = process.env.CONVERGE_TOKEN;
    try {
      delete process.env.CONVERGE_TOKEN;
      const plain = worker(fake, { name: "plain" });
      plain.handle("alpha", 1, "reconcile", () => {});
      const given = worker(fake, { name: "given", token: "tok-given" });
      given.handle("alpha", 1, "reconcile", () => {});
      process.env.CONVERGE_TOKEN = " tok-env ";
      const env = worker(fake, { name: "env" });
      env.handle("alpha", 1, "reconcile", () => {});
      const ctrl = [plain, given, env].map((w) => {
        const c = new AbortController();
        return { c, done: w.run(c.signal) };
      });
      const auth = new Map<string, string | null>();
      for (let n = 0; n < 3; n++) {
        const s = await fake.session(n);
        auth.set(s.subscribe.workerName, s.requestHeader.get("authorization"));
      }
      assert.deepEqual(Object.fromEntries(auth), { plain: null, given: "Bearer tok-given", env: "Bearer tok-env" });
      for (const { c, done } of ctrl) {
        c.abort();
        await done;
      }
    } finally {
      if (saved === undefined) delete process.env.CONVERGE_TOKEN;
      else process.env.CONVERGE_TOKEN = saved;
    }
    assert.throws(() => new Worker({ url: fake.url, token: "two words" }), /options\.token/);
  });

  it("runs a leaf and reports its status, with the task's fields parsed", async () => {
    const w = worker(fake);
    let seen: unknown;
    w.handle<{ name: string }, { message: string }>("greeting", 1, "reconcile", async (t) => {
      seen = { name: t.name, ns: t.namespace, spec: t.spec, attempt: t.attempt, token: t.dedupToken, gen: t.generation };
      return { status: { message: `hello ${t.spec.name}` }, conditions: [{ type: "Greeted", status: "True" }] };
    });
    start(w);
    const s = await fake.session(0);
    s.send({ case: "tasks", value: { tasks: [task(1)] } });
    const r = await result(s, 1);
    assert.equal(r.outcome.case, "success");
    if (r.outcome.case !== "success") return;
    assert.deepEqual(parse(r.outcome.value.status), { message: "hello world" });
    assert.equal(r.outcome.value.conditions[0].type, "Greeted");
    assert.deepEqual(seen, { name: "r1", ns: "default", spec: { name: "world" }, attempt: 1, token: "tok-1", gen: 1 });
  });

  it("logs a failed task once, naming the attempt and trace id; a success is not logged", async () => {
    const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
    const rec = (level: string) => (msg: string, fields?: Record<string, unknown>) => lines.push({ level, msg, fields });
    const w = worker(fake, { logger: { debug: rec("debug"), info: rec("info"), warn: rec("warn"), error: rec("error") } });
    w.handle("greeting", 1, "reconcile", (t) => {
      if (t.name === "r1") throw terminal(new Error("no such region"));
      if (t.name === "r2") throw new Error("try later");
      return {};
    });
    start(w);
    const s = await fake.session(0);
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    s.send({ case: "tasks", value: { tasks: [task(1, { traceparent }), task(2), task(3)] } });
    await Promise.all([1, 2, 3].map((id) => result(s, id)));
    const failed = lines.filter((l) => l.msg === "converge: task failed");
    assert.deepEqual(
      failed
        .map((l) => [l.level, l.fields?.name, l.fields?.terminal, l.fields?.error, l.fields?.attempt, l.fields?.kind, l.fields?.trace_id])
        .sort(),
      [
        ["error", "r1", true, "no such region", 1, "greeting", "4bf92f3577b34da6a3ce929d0e0e4736"],
        ["warn", "r2", false, "try later", 1, "greeting", undefined],
      ],
    );
  });

  it("reports thrown errors: terminal() as terminal, others as transient", async () => {
    const w = worker(fake);
    w.handle("greeting", 1, "reconcile", (t) => {
      if (t.name === "r1") throw terminal(new Error("spec.name is empty"));
      if (t.name === "r2") throw new Error("try later");
      throw "a string";
    });
    start(w);
    const s = await fake.session(0);
    s.send({ case: "tasks", value: { tasks: [task(1), task(2), task(3)] } });
    const errs = await Promise.all([1, 2, 3].map((id) => result(s, id)));
    assert.deepEqual(
      errs.map((r) => (r.outcome.case === "error" ? [r.outcome.value.message, r.outcome.value.terminal] : r.outcome.case)),
      [
        ["spec.name is empty", true],
        ["try later", false],
        ["a string", false],
      ],
    );
  });

  it("fails a task for a reaction it has no handler for, terminally", async () => {
    const w = worker(fake, { name: "w1" });
    w.handle("greeting", 1, "reconcile", () => {});
    start(w);
    const s = await fake.session(0);
    s.send({ case: "tasks", value: { tasks: [task(1, { reaction: "teardown" })] } });
    const r = await result(s, 1);
    assert.equal(r.outcome.case, "error");
    if (r.outcome.case !== "error") return;
    assert.equal(r.outcome.value.terminal, true);
    assert.match(r.outcome.value.message, /worker "w1" has no handler for kind "greeting" version 1 reaction "teardown"/);
  });

  it("batches results that finish together into one message", async () => {
    const w = worker(fake, { capacity: 64 });
    w.handle("greeting", 1, "reconcile", () => ({ status: { ok: true } }));
    start(w);
    const s = await fake.session(0);
    const ids = Array.from({ length: 50 }, (_, i) => i + 1);
    s.send({ case: "tasks", value: { tasks: ids.map((id) => task(id)) } });
    await Promise.all(ids.map((id) => result(s, id)));
    const batches = s.all("results");
    assert.equal(batches.reduce((n, b) => n + b.results.length, 0), 50);
    assert.ok(batches.length <= 5, `${batches.length} Results messages for 50 results that finished together`);
  });

  it("logs an onConfig that throws and keeps calling it", async () => {
    const lines: string[] = [];
    const logger = { debug() {}, info() {}, warn() {}, error: (m: string) => void lines.push(m) };
    const seen: unknown[] = [];
    const w = worker(fake, {
      logger,
      onConfig: (_k, _v, c) => {
        seen.push(c);
        if (seen.length === 1) throw new Error("first one fails");
      },
    });
    w.handle("db", 1, "reconcile", () => {});
    start(w);
    const s = await fake.session(0);
    const cfg = (v: unknown) =>
      s.send({ case: "configs", value: { configs: [{ kind: "db", kindVersion: 1, config: new TextEncoder().encode(JSON.stringify(v)) }] } });
    cfg({ n: 1 });
    await eventually(() => seen.length === 1 && lines.length === 1, "the first call and its error log");
    assert.match(lines[0], /onConfig threw/);
    cfg({ n: 2 });
    await eventually(() => seen.length === 2, "the second call");
    assert.deepEqual(seen, [{ n: 1 }, { n: 2 }]);
  });

  it("runs at most capacity handlers and attests running and waiting tasks", async () => {
    const w = worker(fake, { capacity: 2 });
    const gate = new Gate();
    let now = 0;
    let peak = 0;
    w.handle("greeting", 1, "reconcile", async () => {
      now++;
      peak = Math.max(peak, now);
      await gate.promise;
      now--;
    });
    start(w);
    const s = await fake.session(0);
    s.send({ case: "tasks", value: { tasks: [1, 2, 3, 4, 5].map((id) => task(id)) } });
    await eventually(() => now === 2, "two handlers running");
    const hb = await s.next("heartbeat", (h) => h.inFlight.length === 5);
    assert.deepEqual(hb.inFlight.map((l) => Number(l.taskId)).sort(), [1, 2, 3, 4, 5]);
    gate.open();
    await Promise.all([1, 2, 3, 4, 5].map((id) => result(s, id)));
    assert.equal(peak, 2);
  });

  it("stops starting tasks while the result buffer is full, and starts them once acked", async () => {
    const w = worker(fake, { capacity: 4 });
    (w as unknown as { ledger: { limits: { maxUnacked: number } } }).ledger.limits.maxUnacked = 1;
    let calls = 0;
    w.handle("greeting", 1, "reconcile", () => {
      calls++;
    });
    start(w);
    const s = await fake.session(0);
    s.send({ case: "tasks", value: { tasks: [task(1)] } });
    await result(s, 1);
    s.send({ case: "tasks", value: { tasks: [task(2)] } });
    // The buffer holds task 1's result: task 2 waits, attested.
    await s.next("heartbeat", (h) => h.inFlight.some((l) => l.taskId === 2n));
    assert.equal(calls, 1);
    ack(s, 1);
    await result(s, 2);
    assert.equal(calls, 2);
  });

  it("re-sends unacknowledged results on a new stream and resumes their leases", async () => {
    const w = worker(fake);
    w.handle("greeting", 1, "reconcile", () => ({ status: { ok: true } }));
    start(w);
    const s0 = await fake.session(0);
    s0.send({ case: "tasks", value: { tasks: [task(1), task(2)] } });
    await result(s0, 1);
    await result(s0, 2);
    ack(s0, 1);
    await eventually(() => (w as unknown as { ledger: { unacked(): number } }).ledger.unacked() === 1, "task 1 acked");
    s0.end();
    const s1 = await fake.session(1);
    assert.deepEqual(
      s1.subscribe.resumed.map((l) => Number(l.taskId)),
      [2],
    );
    const r = await result(s1, 2);
    assert.equal(r.outcome.case, "success");
    ack(s1, 2);
  });

  it("keeps a handler running across a reconnect and delivers its result on the new stream", async () => {
    const w = worker(fake);
    const gate = new Gate();
    const started = new Gate();
    w.handle("greeting", 1, "reconcile", async (t) => {
      started.open();
      await gate.promise;
      return { status: { aborted: t.signal.aborted } };
    });
    start(w);
    const s0 = await fake.session(0);
    s0.send({ case: "tasks", value: { tasks: [task(5)] } });
    await started.promise;
    s0.end();
    const s1 = await fake.session(1);
    assert.deepEqual(s1.subscribe.resumed.map((l) => Number(l.taskId)), [5], "the running task is resumed");
    await s1.next("heartbeat", (h) => h.inFlight.some((l) => l.taskId === 5n));
    gate.open();
    const r = await result(s1, 5);
    assert.deepEqual(r.outcome.case === "success" && parse(r.outcome.value.status), { aborted: false });
    ack(s1, 5);
  });

  it("aborts a handler's signal when the task's deadline passes", async () => {
    const w = worker(fake);
    w.handle("greeting", 1, "reconcile", (t) =>
      new Promise((_, reject) => t.signal.addEventListener("abort", () => reject(t.signal.reason))),
    );
    start(w);
    const s = await fake.session(0);
    const soon = Date.now() + 100;
    s.send({ case: "tasks", value: { tasks: [task(1, { deadline: { seconds: BigInt(Math.floor(soon / 1000)), nanos: (soon % 1000) * 1e6 } })] } });
    const r = await result(s, 1);
    assert.equal(r.outcome.case, "error");
    assert.match(r.outcome.case === "error" ? r.outcome.value.message : "", /task deadline passed/);
    assert.equal(r.outcome.case === "error" && r.outcome.value.terminal, false);
  });

  it("drops results of leases the server declares lost on resume", async () => {
    fake = await (async () => {
      await fake.stop();
      return FakeServer.start({ autoAck: false, subscribed: (sub) => ({ heartbeatIntervalMs: 50, lost: sub.resumed }) });
    })();
    const w = worker(fake);
    w.handle("greeting", 1, "reconcile", () => ({ status: { ok: true } }));
    start(w);
    const s0 = await fake.session(0);
    s0.send({ case: "tasks", value: { tasks: [task(1)] } });
    await result(s0, 1);
    s0.end();
    const s1 = await fake.session(1);
    assert.equal(s1.subscribe.resumed.length, 1);
    await s1.next("heartbeat");
    await eventually(() => (w as unknown as { ledger: { unacked(): number } }).ledger.unacked() === 0, "lost result dropped");
    assert.equal(s1.all("results").length, 0);
  });

  it("aborts a handler the server cancels and drops its result", async () => {
    const w = worker(fake);
    let aborted: unknown;
    const started = new Gate();
    w.handle("greeting", 1, "reconcile", (t) => {
      started.open();
      return new Promise((resolve) => {
        t.signal.addEventListener("abort", () => {
          aborted = t.signal.reason;
          resolve({ status: { late: true } });
        });
      });
    });
    start(w);
    const s = await fake.session(0);
    s.send({ case: "tasks", value: { tasks: [task(1)] } });
    await started.promise;
    s.send({ case: "cancel", value: { lease: lease(1), reason: "superseded" } });
    await eventually(() => aborted !== undefined, "handler aborted");
    assert.match(String((aborted as Error).message), /cancelled by the server: superseded/);
    const mark = s.received.items.length;
    await s.next("heartbeat", (h) => h.inFlight.length === 0, mark);
    assert.equal(s.all("results").length, 0);
  });

  it("drains: sends Drain, waits for running handlers, reports and waits for acks, then run resolves", async () => {
    const w = worker(fake);
    const gate = new Gate();
    const started = new Gate();
    w.handle("greeting", 1, "reconcile", async () => {
      started.open();
      await gate.promise;
      return { status: { done: true } };
    });
    start(w);
    const s = await fake.session(0);
    s.send({ case: "tasks", value: { tasks: [task(1)] } });
    await started.promise;
    stop.abort();
    await s.next("drain");
    // A task dispatched during the drain is refused, not run.
    s.send({ case: "tasks", value: { tasks: [task(2)] } });
    let resolved = false;
    void running?.then(() => (resolved = true));
    gate.open();
    await result(s, 1);
    assert.equal(resolved, false, "run waits for the ack");
    ack(s, 1);
    await running;
    await s.ended;
    assert.ok(!s.all("results").some((b) => b.results.some((r) => r.lease?.taskId === 2n)));
  });

  it("gives back unstarted tasks at once when draining, and running ones at the drain timeout, dropping their results", async () => {
    const w = worker(fake, { capacity: 1, drainTimeoutMs: 200 });
    const started = new Gate();
    const starts = new Map<string, number>();
    let aborted: unknown;
    w.handle("greeting", 1, "reconcile", (t) => {
      starts.set(t.dedupToken, (starts.get(t.dedupToken) ?? 0) + 1);
      started.open();
      return new Promise((_, reject) =>
        t.signal.addEventListener("abort", () => {
          aborted = t.signal.reason;
          reject(t.signal.reason);
        }),
      );
    });
    start(w);
    const s = await fake.session(0);
    s.send({ case: "tasks", value: { tasks: [task(1), task(2)] } }); // 2 waits for the one slot
    await started.promise;
    stop.abort();
    await s.next("drain");
    const ids = (r: { leases: { taskId: bigint }[] }) => r.leases.map((l) => Number(l.taskId));
    assert.deepEqual(ids(await s.next("release")), [2], "the waiting task is given back at once");
    const mark = s.received.items.length;
    s.send({ case: "tasks", value: { tasks: [task(3)] } }); // sent before the server saw the Drain
    assert.deepEqual(ids(await s.next("release", () => true, mark)), [3], "a task arriving during the drain is given back");
    const mark2 = s.received.items.length;
    assert.deepEqual(ids(await s.next("release", () => true, mark2)), [1], "the running task is given back at the timeout");
    await running;
    assert.match(String((aborted as Error).message), /drain timeout/);
    assert.equal(s.all("results").length, 0, "a released task reports no result");
    assert.deepEqual([...starts.keys()], ["tok-1"], "released tasks never start");
  });

  it("reconnects with backoff after the server goes away and comes back on the same port", async () => {
    const w = worker(fake);
    let n = 0;
    w.handle("greeting", 1, "reconcile", () => {
      n++;
    });
    start(w);
    await fake.session(0);
    await fake.stop();
    await new Promise((r) => setTimeout(r, 100)); // some failed dials
    await fake.start();
    const s = await fake.session(1);
    s.send({ case: "tasks", value: { tasks: [task(7)] } });
    await result(s, 7);
    assert.equal(n, 1);
  });

  it("sends a large composition's chunks before its result, on the same stream", async () => {
    const w = worker(fake);
    w.handle("web", 1, "compose", (t) => ({
      compose: true,
      children: Array.from({ length: 2500 }, (_, i) => ({ kind: "vpc", kindVersion: 1, name: `${t.name}-${i}` })),
    }));
    start(w);
    const s = await fake.session(0);
    s.send({ case: "tasks", value: { tasks: [task(1, { kind: "web", reaction: "compose" })] } });
    const r = await result(s, 1);
    const chunks = s.all("composeChunk");
    assert.deepEqual(chunks.map((c) => [c.index, c.part?.children.length]), [
      [0, 1000],
      [1, 1000],
    ]);
    const at = (m: unknown) => s.received.items.findIndex((x) => x.msg.value === m);
    assert.ok(at(chunks[1]) < s.received.items.findIndex((x) => x.msg.case === "results"), "chunks come first");
    assert.equal(r.outcome.case === "success" && r.outcome.value.composeChunks, 2);
    assert.equal(r.outcome.case === "success" && r.outcome.value.composition?.children.length, 500);
  });

  it("gives operation, rollup and reactor tasks their parts, and reports an operation's output", async () => {
    const w = worker(fake);
    const seen: unknown[] = [];
    w.handle("db", 1, "restart", (t) => {
      seen.push(t.operation);
      return { output: { restarted: (t.operation?.input as { force: boolean }).force } };
    });
    w.handle("db", 1, "rollup", (t) => {
      seen.push(t.rollup);
      return { status: { ready: t.rollup?.ready } };
    });
    w.handle("pager", 1, "notify", (t) => {
      seen.push(t.reactor);
    });
    start(w);
    const s = await fake.session(0);
    s.send({
      case: "tasks",
      value: {
        tasks: [
          task(1, { kind: "db", reaction: "restart", trigger: "operation", operation: { id: "op-1", verb: "restart", input: new TextEncoder().encode('{"force":true}') } }),
          task(2, {
            kind: "db",
            reaction: "rollup",
            trigger: "childrenSettled",
            rollup: { total: 3, ready: 2, failed: 1, culprits: [{ resource: { kind: "vpc", name: "v" }, phase: "Failed", message: "boom", path: [{ kind: "net", name: "n" }] }] },
          }),
          task(3, {
            kind: "pager",
            reaction: "notify",
            trigger: "reactor",
            reactor: { binding: "page-on-failure", transition: "failed", watched: { namespace: "prod", kind: "db", name: "main" }, watchedGeneration: 4n, watchedPhase: "Failed" },
          }),
        ],
      },
    });
    const [r1, r2, r3] = await Promise.all([result(s, 1), result(s, 2), result(s, 3)]);
    assert.deepEqual(r1.outcome.case === "success" && parse(r1.outcome.value.operationOutput), { restarted: true });
    assert.deepEqual(r2.outcome.case === "success" && parse(r2.outcome.value.status), { ready: 2 });
    assert.equal(r3.outcome.case, "success");
    assert.deepEqual(seen, [
      { id: "op-1", verb: "restart", input: { force: true } },
      {
        total: 3, ready: 2, reconciling: 0, degraded: 0, failed: 1, deleting: 0, excluded: 0,
        culprits: [{ resource: { kind: "vpc", name: "v" }, phase: "Failed", message: "boom", path: [{ kind: "net", name: "n" }] }],
      },
      {
        binding: "page-on-failure", transition: "failed", watched: { namespace: "prod", kind: "db", name: "main" },
        watchedKindVersion: 0, watchedGeneration: 4, watchedPhase: "Failed", watchedStatus: undefined,
      },
    ]);
  });

  it("rejects run without handlers, a second run, and handle after run", async () => {
    const w = worker(fake);
    await assert.rejects(w.run(stop.signal), /no handler registered/);
    await assert.rejects(w.run(stop.signal), /run called more than once/);
    assert.throws(() => w.handle("greeting", 1, "reconcile", () => {}), /called after run/);
  });

  it("checks handle's arguments and the options", () => {
    const w = worker(fake);
    assert.throws(() => w.handle("Bad_Kind", 1, "r", () => {}), /kind: "Bad_Kind" must be lower-case/);
    assert.throws(() => w.handle("k", 0, "r", () => {}), /kind_version: 0 is not an integer between 1 and 32767/);
    assert.throws(() => w.handle("k", 1, "", () => {}), /reaction: must not be empty/);
    w.handle("k", 1, "r", () => {});
    assert.throws(() => w.handle("k", 1, "r", () => {}), /already registered/);
    assert.throws(() => new Worker({ url: "ftp://x" }), /scheme must be http or https/);
    assert.throws(() => new Worker({ url: fake.url, capacity: 0 }), /capacity: 0 must be an integer between 1 and 10000/);
    assert.throws(() => new Worker({ url: fake.url, reconnectMinMs: 10, reconnectMaxMs: 5 }), /need 0 < min <= max/);
    assert.throws(() => w.setReady("k", 1, "other", false), /no handler is registered/);
  });
});

describe("Worker configs and readiness", () => {
  function configs(s: FakeSession, ...cs: [string, number, unknown][]): void {
    s.send({
      case: "configs",
      value: create(ConfigsSchema, {
        configs: cs.map(([kind, kindVersion, v]) => ({
          kind,
          kindVersion,
          config: v === undefined ? new Uint8Array() : new TextEncoder().encode(JSON.stringify(v)),
        })),
      }),
    });
  }

  it("reports a needsConfig reaction not ready until its default config arrives, per stream", async () => {
    const seen: [string, number, unknown][] = [];
    const w = worker(fake, { onConfig: (k, v, c) => void seen.push([k, v, c]) });
    w.handle("db", 1, "reconcile", () => {}, { needsConfig: true });
    start(w);
    const s0 = await fake.session(0);
    const r0 = await s0.next("readiness");
    assert.deepEqual(
      r0.reactions.map((r) => [r.reaction?.kind, r.ready, r.reason]),
      [["db", false, "no default provider config yet"]],
    );
    configs(s0, ["db", 1, { region: "eu" }], ["other", 1, { x: 1 }]);
    const r1 = await s0.next("readiness", (r) => r.reactions[0].ready);
    assert.equal(r1.reactions[0].reason, "");
    await eventually(() => seen.length === 1, "onConfig called");
    assert.deepEqual(seen[0], ["db", 1, { region: "eu" }]);
    assert.deepEqual(w.defaultConfig("db", 1), { region: "eu" });
    assert.equal(w.defaultConfig("other", 1), undefined, "a kind the worker does not serve is ignored");

    // A new stream starts from "all ready"; the first Configs is the whole
    // set, so a config missing from it is gone.
    s0.end();
    const s1 = await fake.session(1);
    await s1.next("heartbeat");
    assert.equal(s1.all("readiness").length, 0, "ready reactions are not re-reported");
    configs(s1);
    const r2 = await s1.next("readiness");
    assert.deepEqual(r2.reactions.map((r) => [r.ready, r.reason]), [[false, "no default provider config yet"]]);
    await eventually(() => seen.length === 2, "onConfig told of the removal");
    assert.deepEqual(seen[1], ["db", 1, undefined]);
  });

  it("re-reports setReady on a new stream and combines it with the config", async () => {
    const w = worker(fake);
    w.handle("db", 1, "reconcile", () => {});
    w.setReady("db", 1, "reconcile", false, "database down");
    start(w);
    const s0 = await fake.session(0);
    const r0 = await s0.next("readiness");
    assert.deepEqual(r0.reactions.map((r) => [r.ready, r.reason]), [[false, "database down"]]);
    s0.end();
    const s1 = await fake.session(1);
    await s1.next("readiness", (r) => !r.reactions[0].ready);
    w.setReady("db", 1, "reconcile", true);
    await s1.next("readiness", (r) => r.reactions[0].ready);
  });

  it("never calls a needsConfig handler for a task without a config", async () => {
    const w = worker(fake);
    let called = 0;
    w.handle("db", 1, "reconcile", (t) => {
      called++;
      return { status: { region: (t.config as { region: string }).region } };
    }, { needsConfig: true });
    start(w);
    const s = await fake.session(0);
    s.send({ case: "tasks", value: { tasks: [task(1, { kind: "db" }), task(2, { kind: "db", config: new TextEncoder().encode('{"region":"eu"}') })] } });
    const r1 = await result(s, 1);
    assert.equal(r1.outcome.case, "error");
    assert.equal(r1.outcome.case === "error" && r1.outcome.value.terminal, false);
    const r2 = await result(s, 2);
    assert.equal(r2.outcome.case, "success");
    assert.equal(called, 1);
  });
});
