// Failure reasons, retry-after and a refused subscription: what the worker
// sends for them and how run() ends.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createValidator } from "@bufbuild/protovalidate";
import { Code, ConnectError } from "@connectrpc/connect";
import { TaskResultSchema } from "../gen/converge/v1/worker_pb.js";
import { isTerminal, reasonOf, retryAfter, retryAfterOf, terminal, withReason } from "../src/errors.js";
import { buildResult } from "../src/result.js";
import { FakeServer } from "../src/testing/index.js";
import { task, worker } from "./helpers.js";

describe("failure reasons and retry-after", () => {
  it("compose with terminal in any order; the outermost wins", () => {
    const base = new Error("boom");
    const a = terminal(withReason("InvalidRegion", base));
    assert.equal(isTerminal(a), true);
    assert.equal(reasonOf(a), "InvalidRegion");
    assert.equal(a.message, "boom");
    const b = withReason("InvalidRegion", terminal(base));
    assert.equal(isTerminal(b), true);
    assert.equal(reasonOf(b), "InvalidRegion");
    const c = retryAfter(60_000, withReason("Throttled", base));
    assert.equal(retryAfterOf(c), 60_000);
    assert.equal(reasonOf(c), "Throttled");
    assert.equal(isTerminal(c), false);
    assert.equal(reasonOf(withReason("Outer", withReason("Inner", base))), "Outer");
    assert.equal(reasonOf(base), "");
    assert.equal(retryAfterOf(base), undefined);
  });

  const cases: { name: string; err: unknown; terminal: boolean; reason: string; retryMs?: number; contains: RegExp }[] = [
    { name: "a reason", err: withReason("QuotaExceeded", new Error("boom")), terminal: false, reason: "QuotaExceeded", contains: /^boom$/ },
    { name: "a terminal reason", err: terminal(withReason("InvalidRegion", "boom")), terminal: true, reason: "InvalidRegion", contains: /^boom$/ },
    { name: "a retry-after", err: retryAfter(1500, withReason("Throttled", "boom")), terminal: false, reason: "Throttled", retryMs: 1500, contains: /^boom$/ },
    { name: "a day's retry-after", err: retryAfter(86_400_000, "boom"), terminal: false, reason: "", retryMs: 86_400_000, contains: /^boom$/ },
    { name: "a lower-case reason", err: withReason("quotaExceeded", "boom"), terminal: true, reason: "", contains: /invalid failure: .*reason.*; the handler's error: boom/ },
    { name: "a reason with a space", err: withReason("Quota Exceeded", "boom"), terminal: true, reason: "", contains: /reason/ },
    { name: "a too long reason", err: withReason("A" + "b".repeat(63), "boom"), terminal: true, reason: "", contains: /reason/ },
    { name: "a zero retry-after", err: retryAfter(0, "boom"), terminal: true, reason: "", contains: /retry_after/ },
    { name: "a NaN retry-after", err: retryAfter(NaN, "boom"), terminal: true, reason: "", contains: /retry_after/ },
    { name: "a retry-after over a day", err: retryAfter(86_400_001, "boom"), terminal: true, reason: "", contains: /retry_after/ },
    { name: "a terminal retry-after", err: terminal(retryAfter(1000, "boom")), terminal: true, reason: "", contains: /retry_after is for transient failures/ },
  ];
  for (const c of cases) {
    it(`reports ${c.name}`, () => {
      const rep = buildResult(task(1), undefined, c.err, true);
      const v = createValidator().validate(TaskResultSchema, rep.result);
      assert.equal(v.kind, "valid", v.kind === "invalid" ? v.error.message : "");
      assert.equal(rep.result.outcome.case, "error");
      const f = rep.result.outcome.value as Extract<typeof rep.result.outcome, { case: "error" }>["value"];
      assert.equal(f.terminal, c.terminal);
      assert.equal(f.reason, c.reason);
      const ms = f.retryAfter ? Number(f.retryAfter.seconds) * 1000 + f.retryAfter.nanos / 1e6 : undefined;
      assert.equal(ms, c.retryMs);
      assert.match(f.message, c.contains);
    });
  }
});

describe("a refused subscription", () => {
  for (const code of [Code.FailedPrecondition, Code.InvalidArgument]) {
    it(`rejects run() with the server's ${Code[code]} instead of retrying`, async () => {
      let streams = 0;
      const fake = await FakeServer.start({
        subscribed: () => {
          streams++;
          throw new ConnectError(`kind greeting v1 has no reaction "reconcle"; it declares: reconcile`, code);
        },
      });
      try {
        const w = worker(fake);
        w.handle("greeting", 1, "reconcle", () => {});
        await assert.rejects(w.run(new AbortController().signal), (e: unknown) => {
          assert.ok(e instanceof ConnectError, String(e));
          assert.equal(e.code, code);
          assert.match(e.rawMessage, /kind greeting v1 has no reaction "reconcle"; it declares: reconcile/);
          return true;
        });
        assert.equal(streams, 1);
      } finally {
        await fake.stop();
      }
    });
  }
});
