import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { generateTypes, manifestsFromYAML } from "../src/typegen/index.js";

const pkg = fileURLToPath(new URL("../../../", import.meta.url));
const bin = join(pkg, "build", "test", "src", "bin", "converge-ts-types.js");

function types(specSchema: unknown): string {
  return generateTypes([{ kind: "t", kindVersion: 1, specSchema }], { sdkModule: "" });
}

describe("converge-ts-types", () => {
  it("the examples' committed kinds.ts are what the generator makes of their manifests", () => {
    for (const [dir, yaml] of [["leaf", "hello.yaml"], ["composer", "kinds.yaml"]]) {
      const src = `examples/${dir}/${yaml}`;
      const want = generateTypes(manifestsFromYAML(readFileSync(join(pkg, src), "utf8"), src), { source: src });
      assert.equal(readFileSync(join(pkg, "examples", dir, "kinds.ts"), "utf8"), want, `examples/${dir}/kinds.ts is stale; regenerate it (see the README)`);
    }
  });

  it("translates types, required and optional properties, enums, consts, arrays and tuples", () => {
    const out = types({
      type: "object",
      required: ["name", "weird-key"],
      additionalProperties: false,
      properties: {
        name: { type: "string", description: "Who. */ closes nothing" },
        count: { type: "integer", default: 3 },
        size: { enum: ["small", "large", 3, null] },
        mode: { const: "fast" },
        tags: { type: "array", items: { type: "string" } },
        pair: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }], items: false },
        either: { type: ["string", "null"] },
        "weird-key": { type: "boolean" },
        nested: { type: "object", properties: { x: { type: "number" } } },
      },
    });
    for (const want of [
      "export interface TV1Spec {",
      "  name: string;",
      "  count?: number;",
      '  size?: "small" | "large" | 3 | null;',
      '  mode?: "fast";',
      "  tags?: string[];",
      "  pair?: [string, number];",
      "  either?: string | null;",
      '  "weird-key": boolean;',
      "  nested?: {\n    x?: number;\n  };",
      "@default 3",
      "Who. *\\/ closes nothing",
    ]) {
      assert.ok(out.includes(want), `missing ${JSON.stringify(want)} in:\n${out}`);
    }
  });

  it("translates $defs references (recursive too), unions, intersections and maps", () => {
    const out = types({
      $defs: { node: { type: "object", properties: { children: { type: "array", items: { $ref: "#/$defs/node" } } } } },
      type: "object",
      properties: {
        root: { $ref: "#/$defs/node" },
        any: { oneOf: [{ type: "string" }, { type: "array", items: { type: "integer" } }] },
        both: { allOf: [{ type: "object", properties: { a: { type: "string" } } }, { type: "object", properties: { b: { type: "string" } } }] },
        labels: { type: "object", additionalProperties: { type: "string" } },
        list: { type: "array", items: { anyOf: [{ type: "string" }, { type: "number" }] } },
        free: {},
        never: false,
        remote: { $ref: "https://example.com/x.json" },
      },
    });
    for (const want of [
      "root?: TV1Node;",
      "export type TV1Node = {\n  children?: TV1Node[];\n};",
      "any?: string | number[];",
      "both?: {\n    a?: string;\n  } & {\n    b?: string;\n  };",
      "labels?: {\n    [key: string]: string;\n  };",
      "list?: (string | number)[];",
      "free?: unknown;",
      "never?: never;",
      "remote?: unknown;",
    ]) {
      assert.ok(out.includes(want), `missing ${JSON.stringify(want)} in:\n${out}`);
    }
  });

  it("declares the kind's version, reactions, triggers and verbs as constants", () => {
    const [m] = manifestsFromYAML(
      [
        "type: manifest",
        "kind: demo.app",
        "kind_version: 2",
        "reactions:",
        "  - {name: reconcile, trigger: specChange, emits: [status]}",
        "  - {name: on-delete, trigger: deleteRequested, emits: [finalizer]}",
        "  - {name: rotate, trigger: operation, verb: rotate-keys, emits: [operationOutput]}",
        "operations:",
        "  - {verb: rotate-keys}",
      ].join("\n"),
    );
    assert.deepEqual(m.reactions, [
      { name: "reconcile", trigger: "specChange", verb: undefined },
      { name: "on-delete", trigger: "deleteRequested", verb: undefined },
      { name: "rotate", trigger: "operation", verb: "rotate-keys" },
    ]);
    const out = generateTypes([m], { sdkModule: "" });
    const want = [
      "export const DemoAppV2 = {",
      '  kind: "demo.app",',
      "  kindVersion: 2,",
      '  reactions: { reconcile: "reconcile", "on-delete": "on-delete", rotate: "rotate" },',
      '  triggers: { reconcile: "specChange", "on-delete": "deleteRequested", rotate: "operation" },',
      '  verbs: { "rotate-keys": "rotate-keys" },',
      "} as const;",
    ].join("\n");
    assert.ok(out.includes(want), `missing\n${want}\nin:\n${out}`);
    const bare = generateTypes([{ kind: "t", kindVersion: 1 }], { sdkModule: "" });
    assert.ok(bare.includes("  reactions: {},\n  triggers: {},\n  verbs: {},\n} as const;"), bare);
  });

  it("never throws on odd schemas", () => {
    for (const s of [null, 42, "x", [], { type: 7 }, { properties: [] }, { enum: [] }, { required: "x" }, { items: { items: { items: {} } } }]) {
      assert.doesNotThrow(() => types(s), JSON.stringify(s));
    }
  });

  it("the command writes a file, and explains bad usage with exit status 2", () => {
    const dir = mkdtempSync(join(tmpdir(), "typegen-"));
    try {
      const out = join(dir, "k.ts");
      execFileSync(process.execPath, [bin, "-o", out, join(pkg, "examples", "leaf", "hello.yaml")]);
      assert.match(readFileSync(out, "utf8"), /export interface HelloV1Spec/);
      // -o into a directory that does not exist yet makes it.
      const nested = join(dir, "src", "gen", "kinds.ts");
      execFileSync(process.execPath, [bin, "-o", nested, join(pkg, "examples", "leaf", "hello.yaml")]);
      assert.match(readFileSync(nested, "utf8"), /export interface HelloV1Spec/);
      writeFileSync(join(dir, "file"), "");
      const blocked = spawnSync(process.execPath, [bin, "-o", join(dir, "file", "k.ts"), join(pkg, "examples", "leaf", "hello.yaml")], { encoding: "utf8" });
      assert.equal(blocked.status, 1);
      assert.match(blocked.stderr, /^converge-ts-types: .*(EEXIST|ENOTDIR)/);
      assert.doesNotMatch(blocked.stderr, /\n\s+at /);
      const none = spawnSync(process.execPath, [bin], { encoding: "utf8" });
      assert.equal(none.status, 2);
      assert.match(none.stderr, /no manifest file given/);
      writeFileSync(join(dir, "r.yaml"), "type: resource\nkind: hello\nkind_version: 1\nname: x\n");
      const noManifest = spawnSync(process.execPath, [bin, join(dir, "r.yaml")], { encoding: "utf8" });
      assert.equal(noManifest.status, 2);
      assert.match(noManifest.stderr, /no manifest \(a document with "type: manifest"\)/);
      writeFileSync(join(dir, "bad.yaml"), "type: manifest\nkind: x\nkind_version: zero\n");
      const bad = spawnSync(process.execPath, [bin, join(dir, "bad.yaml")], { encoding: "utf8" });
      assert.equal(bad.status, 2);
      assert.match(bad.stderr, /bad\.yaml: document 1: kind_version: must be an integer of at least 1/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
