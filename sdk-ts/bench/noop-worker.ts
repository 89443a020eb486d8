// The TypeScript no-op worker the overhead benchmark runs: the TS twin of
// sdk-go/examples/noop. It reports the status {"ok":true} for every task.
//
//   node build/test/bench/noop-worker.js --server URL --kind KIND [--capacity N]
import { Worker, shutdownSignal } from "../src/index.js";

function flag(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}

const ok = { status: { ok: true } };
const w = new Worker({ url: flag("server", "http://localhost:7070"), capacity: Number(flag("capacity", "256")), name: "ts-noop" });
w.handle(flag("kind", "bench.leaf"), 1, "reconcile", () => ok);
await w.run(shutdownSignal());
