// The package as published: `npm pack`, installed into fresh projects set
// up as the README says, where an import of every export type-checks under
// each of TypeScript's module resolutions (node10, node16, bundler) and
// loads in Node.js. It needs npm and the registry (for the dependencies),
// not a server.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { run } from "./procs.js";

const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, "..", "..", "..");
const repo = join(pkg, "..");
const tsc = createRequire(join(pkg, "package.json")).resolve("typescript/bin/tsc");

let tmp = "";
let tarball = "";

// Every export of package.json, as a consumer imports it.
const gen = readdirSync(join(pkg, "gen", "converge", "v1")).filter((f) => f.endsWith("_pb.ts")).map((f) => f.replace(/\.ts$/, ""));
const specifiers = ["@converge/sdk", "@converge/sdk/typegen", "@converge/sdk/testing", ...gen.map((g) => `@converge/sdk/gen/converge/v1/${g}`)];

// Imports every export and uses a type from each, so a module that resolves
// to nothing (an implicit any) is an error too.
const check = `${specifiers.map((s, i) => `import * as m${i} from "${s}";`).join("\n")}
import pkgJson from "@converge/sdk/package.json" with { type: "json" };
interface Spec { name: string }
interface Status { message: string }
const w: m0.Worker = new m0.Worker({ url: "http://localhost:7070", capacity: 2 });
w.handle<Spec, Status>("greeting", 1, "reconcile", async (t: m0.Task<Spec, Status>) => {
  if (!t.spec.name) throw m0.terminal(new Error("spec.name is empty"));
  return { status: { message: "hello " + t.spec.name } };
});
const mw: m0.Middleware = (next) => next;
w.handle("web", 1, "compose", () => ({ compose: true, children: [], edges: [m0.dependsOn({ kind: "a", name: "b" }, { kind: "c", name: "d" }, m0.flowFrom("/x", "/y"))] }), { middleware: [mw] });
const c = new m0.Client({ url: "http://localhost:7070" });
const p: Promise<string> = c.waitForPhase("greeting", "x", m0.Phase.Ready).then((r) => r.phase);
const s: string = m1.generateTypes([]);
const t: m0.Task = m2.taskFor({ kind: "greeting", kind_version: 1, reactions: [] }, "reconcile");
const o: Promise<m2.Outcome> = m2.runHandler(() => undefined, t);
const f: Promise<m2.FakeServer> = m2.FakeServer.start();
${gen.map((g, i) => `const g${i}: typeof m${i + 3}.file_converge_v1_${g.replace(/_pb$/, "")} = m${i + 3}.file_converge_v1_${g.replace(/_pb$/, "")};`).join("\n")}
const v: string = pkgJson.version;
export { p, s, o, f, v${gen.map((_, i) => `, g${i}`).join("")} };
`;

/** readmeTsconfig is the tsconfig.json the README tells a consumer to write. */
function readmeTsconfig(): { compilerOptions: Record<string, unknown> } {
  const readme = readFileSync(join(pkg, "README.md"), "utf8");
  const block = [...readme.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => b.includes('"compilerOptions"'));
  assert.ok(block, "the README has a tsconfig.json block");
  return JSON.parse(block) as { compilerOptions: Record<string, unknown> };
}

/** project makes a fresh project as the README says and installs the tarball into it. */
async function project(name: string): Promise<string> {
  const dir = join(tmp, name);
  mkdirSync(dir);
  await run("npm", ["init", "-y"], dir);
  await run("npm", ["pkg", "set", "type=module"], dir);
  await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", tarball], dir);
  // Under src/, where the README's tsconfig (rootDir src) puts sources.
  mkdirSync(join(dir, "src"));
  writeFileSync(join(dir, "src", "check.ts"), check);
  return dir;
}

async function typecheck(dir: string, compilerOptions: Record<string, unknown>): Promise<void> {
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true, target: "ES2022", noEmit: true, resolveJsonModule: true,
        // A Node project has @types/node; the workspace's is used rather than installing it.
        types: ["node"], typeRoots: [join(repo, "node_modules", "@types")],
        ...compilerOptions,
      },
      files: ["src/check.ts"],
    }),
  );
  await run(process.execPath, [tsc, "-p", "tsconfig.json"], dir);
}

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "converge-sdk-ts-pack-"));
  const packed = await run("npm", ["pack", "--ignore-scripts", "--pack-destination", tmp, "--json"], pkg);
  tarball = join(tmp, (JSON.parse(packed) as { filename: string }[])[0].filename);
});

after(() => {
  if (tmp && process.env.KEEP_E2E !== "1") {
    rmSync(tmp, { recursive: true, force: true });
  }
});

describe("the packed TypeScript SDK", () => {
  it("holds the built code, declarations, README and LICENSE, and no tests, sources or source maps", async () => {
    const out = await run("npm", ["pack", "--dry-run", "--ignore-scripts", "--json"], pkg);
    const files = (JSON.parse(out) as { files: { path: string }[] }[])[0].files.map((f) => f.path);
    for (const want of ["dist/src/index.js", "dist/src/index.d.ts", "dist/src/testing/index.d.ts", "README.md", "LICENSE", "package.json"]) {
      assert.ok(files.includes(want), `${want} is missing from:\n${files.join("\n")}`);
    }
    const bad = files.filter((f) => /\.map$|\.test\.|(^|\/)test\/|^src\/|^gen\/|\.ts$/.test(f) && !f.endsWith(".d.ts"));
    assert.deepEqual(bad, []);
  });

  it("every export type-checks under node16 with the README's tsconfig, and loads in Node.js", async (t) => {
    const dir = await project("node16");
    const { compilerOptions } = readmeTsconfig();
    await typecheck(dir, { ...compilerOptions, noEmit: true, outDir: undefined });
    // skipLibCheck off: the package's own declarations are checked too
    // (connect's name DOM types such as HeadersInit).
    // module node20: node16's does not take the JSON import's attributes.
    await typecheck(dir, { module: "node20", moduleResolution: "node16", skipLibCheck: false, lib: ["ES2023", "DOM"] });
    const load = specifiers.map((s) => `await import(${JSON.stringify(s)});`).join(" ");
    await run(process.execPath, ["--input-type=module", "-e", `${load} console.log("loaded")`], dir);
    const kb = Number((await run("du", ["-sk", "node_modules"], dir)).split(/\s/)[0]);
    t.diagnostic(`installed size: node_modules of a fresh project with the tarball: ${kb} KiB`);
    console.log(`installed size: ${kb} KiB (du -sk node_modules)`);
  });

  for (const [mode, module] of [["node10", "ESNext"], ["bundler", "ESNext"]]) {
    it(`every export type-checks under ${mode} resolution`, async () => {
      const dir = await project(mode);
      // allowSyntheticDefaultImports for the JSON import, as a node10 project has it.
      await typecheck(dir, { module, moduleResolution: mode, skipLibCheck: false, lib: ["ES2023", "DOM"], allowSyntheticDefaultImports: true });
    });
  }
});
