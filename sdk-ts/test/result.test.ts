import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { TaskResult } from "../gen/converge/v1/worker_pb.js";
import { terminal } from "../src/errors.js";
import { buildResult } from "../src/result.js";
import { outcomeOf } from "../src/testing/index.js";
import { task } from "./helpers.js";

// The result read back as the server reads it.
const outcome = (r: TaskResult) => outcomeOf(r);

const leaf = task(1);
const op = task(2, { trigger: "operation", operation: { id: "op-1", verb: "restart", input: new TextEncoder().encode('{"force":true}') } });
const reactor = task(3, { trigger: "reactor", reactor: { binding: "b", transition: "failed" } });

describe("buildResult", () => {
  it("reports nothing as a success that leaves the status", () => {
    assert.deepEqual(outcome(buildResult(leaf, undefined, undefined, false).result), { ok: true });
  });

  it("encodes a status object, and passes pre-encoded JSON bytes through", () => {
    assert.deepEqual(outcome(buildResult(leaf, { status: { a: 1 } }, undefined, false).result), { ok: true, status: { a: 1 } });
    const bytes = new TextEncoder().encode('{"b":2}');
    assert.deepEqual(outcome(buildResult(leaf, { status: bytes }, undefined, false).result), { ok: true, status: { b: 2 } });
  });

  const refused: [string, unknown, RegExp][] = [
    ["a result that is not an object", 42, /result must be an object .* got number/],
    ["a status that is not an object", { status: "ready" }, /result status: must be a JSON object, got a string/],
    ["a status over 512 KiB", { status: { x: "y".repeat(600_000) } }, /result status: \d+ bytes encoded, more than the limit of 524288/],
    ["pre-encoded status that is not JSON", { status: new TextEncoder().encode("{nope") }, /result status: is not valid JSON/],
    ["an output for a task that runs no operation", { output: { a: 1 } }, /output: set for a task that runs no operation \(trigger "specChange"\)/],
    ["a condition the protocol refuses", { conditions: [{ type: "9lives", status: "True" }] }, /invalid result: .*type/],
    ["a condition with a bad status", { conditions: [{ type: "Ok", status: "Yes" }] }, /invalid result: .*status/],
    ["a bad child", { children: [{ kind: "vpc", kindVersion: 1, name: "" }] }, /result children\[0\] "": name: must not be empty/],
  ];
  for (const [what, res, want] of refused) {
    it(`makes ${what} a terminal failure saying why`, () => {
      const o = outcome(buildResult(leaf, res, undefined, false).result);
      assert.equal(o.ok, false);
      if (o.ok) return;
      assert.equal(o.terminal, true);
      assert.match(o.message, want);
    });
  }

  it("reports an operation's output", () => {
    assert.deepEqual(outcome(buildResult(op, { output: { restarted: 3 } }, undefined, false).result), { ok: true, output: { restarted: 3 } });
  });

  it("refuses a reactor result that carries anything", () => {
    assert.deepEqual(outcome(buildResult(reactor, undefined, undefined, false).result), { ok: true });
    const o = outcome(buildResult(reactor, { status: { a: 1 }, unhealthy: true }, undefined, false).result);
    assert.equal(o.ok, false);
    assert.match(o.ok ? "" : o.message, /of a reactor task carries status, unhealthy: a reactor emits side effects only/);
  });

  it("bounds and repairs error messages", () => {
    const long = buildResult(leaf, undefined, new Error("é".repeat(40_000)), true).result;
    const o = outcome(long);
    assert.equal(o.ok, false);
    if (o.ok) return;
    assert.ok(new TextEncoder().encode(o.message).length <= 32 * 1024 + 20);
    assert.match(o.message, /é …\(truncated\)$/);
    const lone = outcome(buildResult(leaf, undefined, new Error("bad \ud800 surrogate"), true).result);
    assert.equal(lone.ok ? "" : lone.message, "bad \ufffd surrogate");
  });

  it("keeps terminal() through a cause chain", () => {
    const wrapped = new Error("outer", { cause: terminal(new Error("inner")) });
    const o = outcome(buildResult(leaf, undefined, wrapped, true).result);
    assert.deepEqual(o, { ok: false, message: "outer", terminal: true });
  });

  it("chunks a large composition ahead of its result", () => {
    const children = Array.from({ length: 1500 }, (_, i) => ({ kind: "vpc", kindVersion: 1, name: `c-${i}` }));
    const rep = buildResult(leaf, { compose: true, children }, undefined, false);
    assert.equal(rep.chunks.length, 1);
    assert.equal(rep.result.outcome.case === "success" && rep.result.outcome.value.composeChunks, 1);
  });
});
