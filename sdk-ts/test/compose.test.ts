import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ComposeChunkSchema, SuccessSchema, TaskResultSchema } from "../gen/converge/v1/worker_pb.js";
import { attachComposition, partLimits, sizeOf, splitComposition } from "../src/chunk.js";
import { dependsOn, encodeComposition, flowExpr, flowFrom, refTo, type Child } from "../src/compose.js";
import { lease, parse } from "./helpers.js";

const child = (name: string, spec: unknown = {}): Child => ({ kind: "vpc", kindVersion: 1, name, spec });

describe("encodeComposition", () => {
  it("encodes children, edges with both kinds of flow, and references", () => {
    const acct: Child = { kind: "account", kindVersion: 1, name: "a-0", labels: { team: "net" }, spec: { index: 0 } };
    const vpc = child("v-0");
    const shared = refTo("dns.zone", "root", "shared");
    const comp = encodeComposition({
      children: [acct, vpc],
      edges: [
        dependsOn(vpc, acct, flowFrom("/account_id", "/account_id"), flowExpr('status.cidr + "/24"', "/cidr")),
        dependsOn(acct, shared),
      ],
      references: [shared],
    });
    assert.deepEqual(comp.children.map((c) => [c.kind, c.kindVersion, c.name, c.labels, parse(c.spec)]), [
      ["account", 1, "a-0", { team: "net" }, { index: 0 }],
      ["vpc", 1, "v-0", {}, {}],
    ]);
    const e = comp.edges[0];
    assert.deepEqual([e.dependent?.kind, e.dependent?.name, e.dependency?.name], ["vpc", "v-0", "a-0"]);
    assert.deepEqual(e.flows.map((f) => [f.source.case, f.source.value, f.to]), [
      ["from", "/account_id", "/account_id"],
      ["expr", 'status.cidr + "/24"', "/cidr"],
    ]);
    assert.equal(comp.edges[1].dependency?.namespace, "shared");
    assert.deepEqual(comp.references.map((r) => [r.namespace, r.kind, r.name]), [["shared", "dns.zone", "root"]]);
  });

  it("an absent spec is an empty object", () => {
    const comp = encodeComposition({ children: [{ kind: "vpc", kindVersion: 1, name: "x" }] });
    assert.deepEqual(parse(comp.children[0].spec), {});
  });

  const cases: [string, Parameters<typeof encodeComposition>[0], RegExp][] = [
    ["a bad child name", { children: [child("ok"), child("Bad Name")] }, /children\[1\] "Bad Name": name: "Bad Name" must be lower-case/],
    ["a bad kind", { children: [{ kind: "VPC", kindVersion: 1, name: "x" }] }, /children\[0\] "x": kind: "VPC" must be lower-case/],
    ["a bad kind version", { children: [{ kind: "vpc", kindVersion: 0, name: "x" }] }, /children\[0\] "x": kind_version: 0 is not/],
    ["a duplicate child", { children: [child("x"), child("x")] }, /children\[1\] "x": duplicates children\[0\] \(same kind "vpc" and name\)/],
    ["a spec that is not an object", { children: [child("x", [1, 2])] }, /children\[0\] "x": spec: must be a JSON object, got an array/],
    ["a spec that cannot be encoded", { children: [child("x", { n: 1n })] }, /children\[0\] "x": spec: .*BigInt/],
    ["a bad label", { children: [{ ...child("x"), labels: { "-bad": "v" } }] }, /children\[0\] "x": labels\["-bad"\]: key must be/],
    ["a self edge", { edges: [dependsOn(refTo("vpc", "x"), refTo("vpc", "x"))] }, /edges\[0\] \(vpc "x" → vpc "x"\): a resource cannot depend on itself/],
    [
      "a dependent in another namespace",
      { edges: [dependsOn(refTo("vpc", "x", "other"), refTo("vpc", "y"))] },
      /edges\[0\] \(vpc "other\/x" → vpc "y"\): dependent.namespace: "other"/,
    ],
    [
      "a duplicate edge",
      { edges: [dependsOn(refTo("vpc", "x"), refTo("vpc", "y")), dependsOn(refTo("vpc", "x"), refTo("vpc", "y"))] },
      /edges\[1\] .*same dependent and dependency as edges\[0\]; put all flows between two resources in one edge/,
    ],
    [
      "a flow with both sources",
      { edges: [dependsOn(refTo("vpc", "x"), refTo("vpc", "y"), { from: "/a", expr: "1", to: "/b" })] },
      /edges\[0\] .*: flows\[0\]: set from or expr, not both/,
    ],
    [
      "a flow with no source",
      { edges: [dependsOn(refTo("vpc", "x"), refTo("vpc", "y"), { to: "/b" })] },
      /flows\[0\]: set from \(a JSON pointer into the dependency's status\) or expr/,
    ],
    [
      "a flow target that is not a pointer",
      { edges: [dependsOn(refTo("vpc", "x"), refTo("vpc", "y"), flowFrom("/a", "b"))] },
      /flows\[0\]\.to: "b" is not a JSON pointer: it must start with '\/'/,
    ],
    [
      "a bad escape in a pointer",
      { edges: [dependsOn(refTo("vpc", "x"), refTo("vpc", "y"), flowFrom("/a~2", "/b"))] },
      /flows\[0\]\.from: "\/a~2" is not a JSON pointer: '~' must be followed by 0 or 1/,
    ],
    [
      "too many flows",
      { edges: [dependsOn(refTo("vpc", "x"), refTo("vpc", "y"), ...Array.from({ length: 33 }, (_, i) => flowFrom(`/${i}`, `/${i}`)))] },
      /flows: 33 flows, more than 32/,
    ],
    ["a bad reference", { references: [refTo("vpc", "")] }, /references\[0\] \(vpc ""\): reference.name: must not be empty/],
  ];
  for (const [what, input, want] of cases) {
    it(`refuses ${what}, naming it`, () => {
      assert.throws(() => encodeComposition(input), want);
    });
  }
});

describe("composition parts", () => {
  it("splits by count: 2500 children and 6000 edges fill parts of at most 1000 and 5000", () => {
    const children = Array.from({ length: 2500 }, (_, i) => child(`c-${i}`));
    const edges = Array.from({ length: 6000 }, (_, i) => dependsOn(refTo("vpc", `c-${i % 2500}`), refTo("vpc", `d-${i}`)));
    const parts = splitComposition(encodeComposition({ children, edges }));
    assert.deepEqual(parts.map((p) => [p.children.length, p.edges.length]), [
      [1000, 5000],
      [1000, 1000],
      [500, 0],
    ]);
  });

  it("splits by bytes: every part stays under the budget", () => {
    const big = "x".repeat(20_000);
    const children = Array.from({ length: 200 }, (_, i) => child(`c-${i}`, { big }));
    const parts = splitComposition(encodeComposition({ children }));
    assert.ok(parts.length >= 4, `${parts.length} parts`);
    assert.equal(parts.reduce((n, p) => n + p.children.length, 0), 200);
    for (const p of parts) {
      assert.ok(sizeOf(ComposeChunkSchema, create(ComposeChunkSchema, { lease: lease(1), index: 0, part: p })) < 1 << 20);
    }
    assert.ok(partLimits.bytes < 1 << 20);
  });

  it("puts the last part in the result and numbers the chunks before it", () => {
    const children = Array.from({ length: 2100 }, (_, i) => child(`c-${i}`));
    const s = create(SuccessSchema);
    const chunks = attachComposition(lease(9), s, encodeComposition({ children }));
    assert.deepEqual(chunks.map((c) => [c.index, c.part?.children.length, c.lease?.taskId]), [
      [0, 1000, 9n],
      [1, 1000, 9n],
    ]);
    assert.equal(s.composeChunks, 2);
    assert.equal(s.composition?.children.length, 100);
    assert.ok(sizeOf(TaskResultSchema, create(TaskResultSchema, { lease: lease(9), outcome: { case: "success", value: s } })) < 1 << 20);
  });

  it("an empty composition is one empty part in the result, with no chunks", () => {
    const s = create(SuccessSchema);
    assert.deepEqual(attachComposition(lease(1), s, encodeComposition({})), []);
    assert.equal(s.composeChunks, 0);
    assert.ok(s.composition);
  });
});
