// Per-task overhead of the TypeScript worker against the Go worker.
//
// It builds converge and the Go no-op worker (sdk-go/examples/noop), starts
// `converge dev` (a throwaway PostgreSQL), and runs both no-op workers at
// once, each serving a kind of its own (bench.go, bench.ts). A run applies
// N resources of one kind (1,000 per request) and times it from the request to
// the last resource Ready; the worker's CPU time over the run is read from
// /proc. After one untimed batch each, runs alternate between the two
// workers; the figures are medians.
// The server's share of a run is the same for both kinds, so the
// difference between the two is what the TS worker adds per task.
//
//   npm run bench -- [--tasks 1000] [--runs 5] [--capacity 256]
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client, Code, ConnectError } from "../src/index.js";

function flag(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i > 0 ? Number(process.argv[i + 1]) : def;
  if (!Number.isInteger(v) || v < 1) {
    throw new Error(`--${name}: ${process.argv[i + 1]} is not a positive integer`);
  }
  return v;
}

const tasks = flag("tasks", 1000);
const runs = flag("runs", 5);
const capacity = flag("capacity", 256);
const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, "..", "..", "..");
const repo = join(pkg, "..");
const procs: ChildProcess[] = [];
process.on("exit", () => procs.forEach((p) => p.kill("SIGKILL")));

function startProc(cmd: string, args: string[]): { child: ChildProcess; out: () => string } {
  const child = spawn(cmd, args, { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
  procs.push(child);
  let out = "";
  child.stdout?.on("data", (b) => (out += b));
  child.stderr?.on("data", (b) => (out += b));
  return { child, out: () => out };
}

async function until<T>(what: string, ms: number, f: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await Promise.resolve().then(f).catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** cpuSeconds is a process's user+system CPU time from /proc, or NaN where there is none. */
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in ticks of 1/100 s
  } catch {
    return NaN;
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const bin = mkdtempSync(join(tmpdir(), "converge-ts-bench-"));
try {
  console.log(`building converge and the Go no-op worker into ${bin} ...`);
  execFileSync("go", ["build", "-o", bin, "./server/cmd/converge", "./sdk-go/examples/noop"], { cwd: repo, stdio: "inherit" });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = startProc(join(bin, "converge"), ["dev", "--listen", `127.0.0.1:${port}`, "--log-level", "warn"]);
  await until("converge dev to be ready", 60_000, async () => ((await fetch(`${url}/readyz`)).ok ? true : undefined));
  const c = new Client({ url });
  const kinds = { go: "bench.go", ts: "bench.ts" } as const;
  for (const kind of Object.values(kinds)) {
    await c.applyKind({
      kind,
      kind_version: 1,
      description: "The overhead benchmark's no-op leaf.",
      spec_schema: { type: "object", properties: { i: { type: "integer" } } },
      status_schema: { type: "object", properties: { ok: { type: "boolean" } } },
      reactions: [{ name: "reconcile", trigger: "specChange", emits: ["status"] }],
    });
  }
  const workers = {
    go: startProc(join(bin, "noop"), ["-server", url, "-kinds", `${kinds.go}:1:reconcile`, "-capacity", String(capacity)]),
    ts: startProc(process.execPath, [join(here, "noop-worker.js"), "--server", url, "--kind", kinds.ts, "--capacity", String(capacity)]),
  };
  const ready = (kind: string, name: string) =>
    until(`${kind}/${name} Ready`, 60_000, async () => ((await c.get(kind, name)).phase === "Ready" ? true : undefined));
  for (const [w, kind] of Object.entries(kinds)) {
    await c.apply({ kind, kindVersion: 1, name: "warmup", spec: { i: 0 } });
    await ready(kind, "warmup").catch((e) => {
      throw new Error(`${(e as Error).message}\n${workers[w as "go" | "ts"].out()}`);
    });
  }

  /** batch applies tasks resources of the worker's kind and returns the wall and worker CPU time until all are Ready. */
  const batch = async (w: "go" | "ts", prefix: string) => {
    const kind = kinds[w];
    const pid = workers[w].child.pid;
    const cpu0 = cpuSeconds(pid);
    const t0 = performance.now();
    const resources = Array.from({ length: tasks }, (_, i) => ({
      namespace: "default", kind, kindVersion: 1, name: `${prefix}-${i}`, spec: { i },
    }));
    for (let i = 0; i < resources.length; i += 1000) {
      await c.rpc.applyResources({ resources: resources.slice(i, i + 1000) });
    }
    // Done when no resource of the kind is anything but Ready.
    await until(`${tasks} ${kind} resources Ready`, 300_000, async () => {
      const r = await c.rpc.listResources({ kind, phases: ["Reconciling", "Failed", "Degraded"], pageSize: 1, summary: true });
      return r.resources.length === 0 ? true : undefined;
    });
    return { wall: performance.now() - t0, cpu: cpuSeconds(pid) - cpu0 };
  };
  // One untimed batch each, so the runs measure warm workers (Node's JIT
  // compiles the hot paths during the first few hundred tasks).
  for (const w of ["go", "ts"] as const) {
    await batch(w, "warm");
  }
  const results: Record<"go" | "ts", { wall: number; cpu: number }[]> = { go: [], ts: [] };
  for (let run = 0; run < runs; run++) {
    for (const w of (run % 2 === 0 ? ["go", "ts"] : ["ts", "go"]) as ("go" | "ts")[]) {
      const r = await batch(w, `r${run}`);
      results[w].push(r);
      console.log(`run ${run + 1} ${w}: ${tasks} tasks in ${r.wall.toFixed(0)} ms, worker CPU ${(r.cpu * 1000).toFixed(0)} ms`);
    }
  }

  const row = (w: "go" | "ts") => {
    const wall = median(results[w].map((r) => r.wall));
    const cpu = median(results[w].map((r) => r.cpu));
    return { wall, cpu, perTask: (wall * 1000) / tasks, cpuPerTask: (cpu * 1e6) / tasks };
  };
  const go = row("go");
  const ts = row("ts");
  console.log(`\nmedian of ${runs} runs of ${tasks} no-op tasks each (capacity ${capacity}):`);
  console.log(`worker  wall ms  tasks/s  wall µs/task  worker CPU µs/task`);
  for (const [name, r] of [["go", go], ["ts", ts]] as const) {
    console.log(
      `${name.padEnd(6)}  ${r.wall.toFixed(0).padStart(7)}  ${((tasks * 1000) / r.wall).toFixed(0).padStart(7)}  ${r.perTask.toFixed(0).padStart(12)}  ${r.cpuPerTask.toFixed(0).padStart(18)}`,
    );
  }
  console.log(
    `TS minus Go per task: ${(ts.perTask - go.perTask).toFixed(0)} µs wall, ${(ts.cpuPerTask - go.cpuPerTask).toFixed(0)} µs worker CPU`,
  );
  for (const w of Object.values(workers)) {
    w.child.kill("SIGTERM");
  }
  server.child.kill("SIGINT");
  await new Promise((r) => server.child.once("exit", r));
} catch (e) {
  if (e instanceof ConnectError && e.code === Code.Unavailable) {
    console.error("the server went away");
  }
  throw e;
} finally {
  rmSync(bin, { recursive: true, force: true });
}
