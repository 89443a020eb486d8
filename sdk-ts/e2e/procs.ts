// Processes the end-to-end test starts: each is remembered, logged to a
// file, and killed (by its pid) when the test process exits.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of live) {
    p.kill("SIGKILL");
  }
});

/** Proc is a started process with its output in a log file. */
export class Proc {
  readonly exited: Promise<number | null>;
  private code: number | null | undefined;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly log: string,
  ) {
    live.add(child);
    this.exited = new Promise((resolve) =>
      child.once("exit", (code, signal) => {
        live.delete(child);
        this.code = code ?? (signal ? -1 : null);
        resolve(this.code);
      }),
    );
  }

  get running(): boolean {
    return this.code === undefined;
  }

  /** output returns what the process wrote so far. */
  output(): string {
    try {
      return readFileSync(this.log, "utf8");
    } catch {
      return "";
    }
  }

  /** tail returns the last lines of the output, for failure messages. */
  tail(lines = 30): string {
    return `--- last output of ${this.name} (${this.log}):\n${this.output().split("\n").slice(-lines).join("\n")}`;
  }

  /** stop sends sig and waits for the exit, SIGKILLing after ms. */
  async stop(sig: NodeJS.Signals = "SIGTERM", ms = 15000): Promise<number | null> {
    if (!this.running) {
      return this.code ?? null;
    }
    this.child.kill(sig);
    const timer = setTimeout(() => this.child.kill("SIGKILL"), ms);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}

/** start runs cmd with args in dir, its output going to dir/logs/<name>.log. */
export function start(name: string, dir: string, cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Proc {
  const log = join(dir, `${name.replace(/[^a-z0-9.-]+/gi, "_")}.log`);
  const out = createWriteStream(log, { flags: "a" });
  const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  return new Proc(name, child, log);
}

/** run runs a command to completion and returns its output; it throws with the output on failure. */
export async function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout?.on("data", (b) => (out += b));
  child.stderr?.on("data", (b) => (out += b));
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  if (code !== 0) {
    throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) exited with ${code}:\n${out}`);
  }
  return out;
}

/** freePort returns a loopback port nothing listens on. */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** poll calls check until it returns a value other than undefined, failing after ms with what. */
export async function poll<T>(what: string, ms: number, check: () => Promise<T | undefined> | T | undefined, every = 100): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) {
        return v;
      }
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: last error: ${(last as Error).message}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, every));
  }
}
