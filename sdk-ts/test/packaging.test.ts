import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const pkg = fileURLToPath(new URL("../../../", import.meta.url));
const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as {
  exports: Record<string, string | { types: string; default: string }>;
  typesVersions: Record<string, Record<string, string[]>>;
};

describe("packaging", () => {
  it("ships the repository's LICENSE unchanged", () => {
    const root = readFileSync(join(pkg, "..", "LICENSE"), "utf8");
    assert.match(root, /Apache License\s+Version 2\.0, January 2004/);
    assert.equal(readFileSync(join(pkg, "LICENSE"), "utf8"), root, "sdk-ts/LICENSE differs from LICENSE: copy it again");
  });

  it("links from the README only to absolute URLs or its own headings, so they work on npm", () => {
    const readme = readFileSync(join(pkg, "README.md"), "utf8");
    const anchors = new Set(
      [...readme.matchAll(/^#+ (.+)$/gm)].map((m) => "#" + m[1].toLowerCase().replace(/[^\w\- ]/g, "").replace(/ /g, "-")),
    );
    const links = [...readme.matchAll(/\]\(([^)]+)\)/g)].map((m) => m[1]);
    assert.ok(links.length > 5);
    const bad = links.filter((l) => !(l.startsWith("https://") || anchors.has(l)));
    assert.deepEqual(bad, [], `links that break on npm (anchors: ${[...anchors].join(" ")})`);
  });

  it("gives every subpath export its declarations under node10 resolution too", () => {
    const tv = manifest.typesVersions["*"];
    for (const [path, target] of Object.entries(manifest.exports)) {
      if (typeof target === "string") continue; // ./package.json
      const sub = path.replace(/^\.\/?/, "");
      if (sub === "") continue; // the root: "types"
      assert.deepEqual(tv[sub], [target.types], `typesVersions for ${path}`);
      if (!sub.includes("*")) {
        assert.ok(existsSync(join(pkg, target.types)) && existsSync(join(pkg, target.default)), `${path} is built`);
      }
    }
    assert.deepEqual(Object.keys(tv).sort(), Object.keys(manifest.exports).filter((p) => p !== "." && p !== "./package.json").map((p) => p.slice(2)).sort());
  });
});
