// Builds the package into dist/: the TypeScript sources and the generated
// code (gen/, committed; scripts/gen.sh regenerates it), compiled with tsc.
//
//   node scripts/build.mjs            build the package (dist/)
//   node scripts/build.mjs --tests    also compile tests, examples and the benchmark (build/)
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { cpSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: "inherit" });

rmSync(join(pkg, "dist"), { recursive: true, force: true });
const tsc = createRequire(join(pkg, "package.json")).resolve("typescript/bin/tsc");
if (process.argv.includes("--tests")) {
  // One compile of everything into build/test (the examples see the SDK's
  // sources through tsconfig paths); the package's part of it is dist.
  const out = join(pkg, "build", "test");
  rmSync(out, { recursive: true, force: true });
  run(process.execPath, [tsc, "-p", join(pkg, "tsconfig.test.json")], pkg);
  for (const dir of ["src", "gen"]) {
    cpSync(join(out, dir), join(pkg, "dist", dir), { recursive: true });
  }
} else {
  run(process.execPath, [tsc, "-p", join(pkg, "tsconfig.json")], pkg);
}
