import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { parseDocuments } from "../src/documents.js";

const example = (p: string) => readFileSync(fileURLToPath(new URL(`../../../examples/${p}`, import.meta.url)), "utf8");

describe("parseDocuments", () => {
  it("reads the examples' manifests and resources", () => {
    const docs = parseDocuments(example("composer/kinds.yaml"), "kinds.yaml");
    assert.deepEqual(docs.map((d) => d.type), ["manifest", "manifest", "manifest", "resource"]);
    const m = docs[0];
    assert.equal(m.type === "manifest" && m.message.kind, "webapp");
    assert.equal(m.type === "manifest" && m.message.reactions[0].emits.join(","), "children,edges,status");
    const r = docs[3];
    assert.equal(r.type === "resource" && r.message.namespace, "default");
    assert.deepEqual(r.type === "resource" && r.message.spec, { image: "shop:1.0", replicas: 2 });
  });

  it("names the document and the problem", () => {
    assert.throws(() => parseDocuments("type: manifest\nkind: x\n---\ntype: gadget\n", "f.yaml"), /f\.yaml: document 2 \(line 4\): type: "gadget" must be one of manifest, providerconfig, reactorbinding, resource/);
    assert.throws(() => parseDocuments("type: resource\nkind: x\nnmae: y\n", "f.yaml"), /f\.yaml: document 1 \(line 1\) \(resource\): .*nmae/);
    assert.throws(() => parseDocuments("type: manifest\nkind_version: one\n", "f.yaml"), /document 1 .*kind_version/);
    assert.throws(() => parseDocuments("a: [\n", "f.yaml"), /f\.yaml: document 1/);
  });
});
