import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { SubscribedSchema } from "../gen/converge/v1/worker_pb.js";
import { Backoff } from "../src/backoff.js";
import type { Report } from "../src/chunk.js";
import { isTerminal, terminal, TerminalError } from "../src/errors.js";
import { boundUTF8, hasConfig } from "../src/json.js";
import { Ledger } from "../src/ledger.js";
import { boundReason } from "../src/readiness.js";
import { heartbeatInterval } from "../src/session.js";
import { newTask } from "../src/task.js";
import { version } from "../src/version.js";
import { task } from "./helpers.js";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

describe("backoff", () => {
  it("grows the ceiling from min to max, with full jitter, and starts over on reset", () => {
    const top = new Backoff(100, 1000, () => 0.999999);
    assert.deepEqual([1, 2, 3, 4, 5, 6].map(() => top.next()), [100, 200, 400, 800, 1000, 1000]);
    top.reset();
    assert.equal(top.next(), 100);
    const bottom = new Backoff(100, 1000, () => 0);
    assert.deepEqual([1, 2, 3].map(() => bottom.next()), [0, 0, 0]);
  });
});

describe("terminal", () => {
  it("marks an error terminal, keeps its message and cause, and is seen through cause chains", () => {
    const base = new Error("boom");
    const t = terminal(base);
    assert.ok(t instanceof TerminalError);
    assert.equal(t.message, "boom");
    assert.equal(t.cause, base);
    assert.equal(terminal(t), t);
    assert.ok(isTerminal(t));
    assert.ok(isTerminal(new Error("outer", { cause: t })));
    assert.ok(!isTerminal(base));
    assert.ok(!isTerminal(undefined));
    assert.equal(terminal("plain words").message, "plain words");
    const loop: { cause?: unknown } = {};
    loop.cause = loop;
    assert.ok(!isTerminal(loop), "a cause cycle ends the search");
  });
});

describe("wire helpers", () => {
  it("hasConfig: no bytes, blanks and null are no config", () => {
    const b = (s: string) => new TextEncoder().encode(s);
    assert.deepEqual([undefined, b(""), b("  \n"), b(" null "), b("{}"), b('{"a":1}')].map(hasConfig), [false, false, false, false, true, true]);
  });

  it("boundReason keeps at most 1024 characters", () => {
    assert.equal([...boundReason("x".repeat(2000))].length, 1024);
    assert.ok(boundReason("y".repeat(2000)).endsWith("…"));
    assert.equal(boundReason("short"), "short");
  });

  it("boundUTF8 cuts at a character boundary", () => {
    assert.equal(boundUTF8("aé", 2, "|"), "a|");
    assert.equal(boundUTF8("abc", 3, "|"), "abc");
  });

  it("heartbeatInterval: the server's, else a third of the lease, else 5 s; never below 10 ms", () => {
    const s = (h: number, l: number) => heartbeatInterval(create(SubscribedSchema, { heartbeatIntervalMs: h, leaseSeconds: l }));
    assert.deepEqual([s(700, 30), s(0, 30), s(0, 0), s(1, 0)], [700, 10_000, 5000, 10]);
  });

  it("newTask parses spec, status and config, and names a field that is not JSON", () => {
    const t = newTask(task(1, { config: new TextEncoder().encode('{"region":"eu"}') }), new AbortController().signal);
    assert.deepEqual([t.spec, t.status, t.config], [{ name: "world" }, undefined, { region: "eu" }]);
    const bad = task(2);
    if (bad.resource) bad.resource.status = new TextEncoder().encode("{");
    assert.throws(() => newTask(bad, new AbortController().signal), /decode status of greeting default\/r2: not valid JSON/);
  });

  it("newTask says whether the task is a plan's preview", () => {
    const signal = new AbortController().signal;
    assert.equal(newTask(task(1), signal).preview, false);
    assert.equal(newTask(task(2, { preview: true }), signal).preview, true);
  });

  it("the version matches package.json", () => {
    const pkg = JSON.parse(readFileSync(fileURLToPath(new URL("../../../package.json", import.meta.url)), "utf8"));
    assert.equal(version, pkg.version);
  });
});

describe("ledger", () => {
  const rep = (id: number, chunks = 0): Report => ({
    chunks: Array.from({ length: chunks }, () => ({}) as Report["chunks"][number]),
    result: { lease: task(id).lease } as Report["result"],
    size: 10,
  });

  it("hands out unsent results in order, in batches of whole reports, and re-queues them for a new stream", () => {
    const l = new Ledger(10);
    const exs = [1, 2, 3].map((id) => {
      const r = l.accept(task(id), () => {});
      assert.ok(Array.isArray(r));
      return r[0];
    });
    let kicks = 0;
    l.beginSession([], () => kicks++);
    l.finish(exs[0], rep(1, 2));
    l.finish(exs[1], rep(2, 2));
    l.finish(exs[2], rep(3));
    assert.ok(kicks >= 3);
    const first = l.takeUnsent(4);
    assert.deepEqual(first.reps.map((r) => r.result.lease?.taskId), [1n]);
    assert.equal(first.more, true);
    const rest = l.takeUnsent(4);
    assert.deepEqual(rest.reps.map((r) => r.result.lease?.taskId), [2n, 3n]);
    assert.equal(rest.more, false);
    l.endSession();
    assert.deepEqual(l.resumable().map((x) => x.taskId), [1n, 2n, 3n]);
    l.ack("2/1");
    l.beginSession([task(3).lease!], () => {});
    assert.deepEqual(l.takeUnsent(256).reps.map((r) => r.result.lease?.taskId), [1n]);
  });

  it("refuses duplicates, tasks while draining, and tasks beyond the waiting limit", () => {
    const l = new Ledger(1);
    l.limits.maxWaiting = 1;
    assert.ok(Array.isArray(l.accept(task(1), () => {})));
    assert.equal(l.accept(task(1), () => {}), "task already held");
    assert.deepEqual(l.accept(task(2), () => {}), []);
    assert.equal(l.accept(task(3), () => {}), "too many tasks waiting for a free slot");
    assert.deepEqual(l.attested().map((x) => x.taskId), [1n, 2n]);
    l.startDrain();
    assert.deepEqual(l.attested().map((x) => x.taskId), [1n], "waiting tasks are dropped");
    assert.equal(l.accept(task(4), () => {}), "worker is draining");
  });
});
