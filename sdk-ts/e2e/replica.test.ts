// End to end: the SDK's client reads its own writes through a read replica.
//
// pgpair starts a real primary and a real hot standby of it, the standby
// applying each commit 2 s late (recovery_min_apply_delay), so that a read
// the replica serves right after a write does not see it unless it waited
// for it. `converge serve` runs on the primary with the standby as its
// --read-database-url; its staleness bound is above that delay, so the
// replica serves reads. A read without a token then misses a fresh write,
// and the client's own read, carrying the write's token, sees it, served
// by the replica once it has replayed that far (converge_reads_total says
// which database served each read, and why).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { Client } from "../src/client.js";
import { freePort, poll, run, start, type Proc } from "./procs.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..", "..", "..");
const applyDelayMs = 2000;
const readyTimeout = 120_000;
// No worker serves it: the test reads resources, it does not reconcile them.
const noteKind = {
  kind: "note",
  kind_version: 1,
  owner: "examples",
  spec_schema: { type: "object" },
  status_schema: { type: "object" },
  reactions: [{ name: "reconcile", trigger: "specChange", emits: ["status"] }],
};

let tmp = "";
let pair: Proc | undefined;
let server: Proc | undefined;
let apiURL = "";
let metricsURL = "";

function diagnostics(): string {
  return [pair, server].filter((p): p is Proc => p !== undefined).map((p) => p.tail()).join("\n");
}

/** reads returns converge_reads_total by "source/reason". */
async function reads(): Promise<Map<string, number>> {
  const text = await (await fetch(`${metricsURL}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^converge_reads_total\{([^}]*)\} (\S+)$/gm)) {
    const label = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(m[1])?.[1] ?? "";
    out.set(`${label("source")}/${label("reason")}`, Number(m[2]));
  }
  return out;
}

function delta(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) {
    if (v !== (before.get(k) ?? 0)) out[k] = v - (before.get(k) ?? 0);
  }
  return out;
}

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "converge-sdk-ts-replica-"));
  const converge = join(tmp, "converge");
  const pgpair = join(tmp, "pgpair");
  await run("go", ["build", "-o", converge, "./server/cmd/converge"], repo);
  await run("go", ["build", "-o", pgpair, "./server/internal/pgtest/pgpair"], repo);

  pair = start("pgpair", tmp, pgpair, ["-standby-setting", `recovery_min_apply_delay=${applyDelayMs}ms`], repo);
  const p = pair;
  const urls = await poll("pgpair's database URLs", readyTimeout, () => {
    if (!p.running) throw new Error(`pgpair exited:\n${p.tail()}`);
    const line = /^\{"primary".*\}$/m.exec(p.output())?.[0];
    return line ? (JSON.parse(line) as { primary: string; standby: string }) : undefined;
  });

  const listen = `127.0.0.1:${await freePort()}`;
  const metrics = `127.0.0.1:${await freePort()}`;
  apiURL = `http://${listen}`;
  metricsURL = `http://${metrics}`;
  server = start("converge-serve", tmp, converge, [
    "serve", "--database-url", urls.primary, "--read-database-url", urls.standby,
    "--read-max-lag", "8s", "--read-wait", "15s", "--listen", listen, "--metrics-listen", metrics,
  ], repo);
  const s = server;
  await poll("the server to answer /readyz", readyTimeout, async () => {
    if (!s.running) throw new Error(`the server exited:\n${s.tail()}`);
    return (await fetch(`${apiURL}/readyz`)).status === 200 ? true : undefined;
  });
  // The replica's staleness is unknown until it has replayed past a
  // position the primary had once the server started; reads stay off it
  // until then.
  const probe = new Client({ url: apiURL });
  await poll("a read served by the replica", readyTimeout, async () => {
    await probe.rpc.countResources({});
    return [...(await reads())].some(([k, v]) => k.startsWith("replica/") && v > 0) ? true : undefined;
  }).catch((e) => {
    throw new Error(`${(e as Error).message}\n${diagnostics()}`);
  });
});

after(async () => {
  await server?.stop("SIGTERM");
  await pair?.stop("SIGTERM");
  if (tmp && process.env.KEEP_E2E !== "1") {
    rmSync(tmp, { recursive: true, force: true });
  }
});

describe("TypeScript SDK with a read replica", () => {
  it("a read right after a write sees it, served by the replica once it has replayed the write", async () => {
    const writer = new Client({ url: apiURL });
    const stranger = new Client({ url: apiURL }); // has written nothing, so sends no token
    await writer.applyKind(noteKind);
    assert.match(writer.readAfterToken, /^[0-9a-f]{16}$/, "a write is answered with a token the client keeps");

    const before = await reads();
    const wrote = Date.now();
    await writer.apply({ kind: "note", kindVersion: 1, name: "fresh", spec: { text: "hi" } });
    const missed = await stranger.get("note", "fresh").then(
      () => false,
      (e) => e instanceof ConnectError && e.code === Code.NotFound,
    );
    const mid = await reads();
    const r = await writer.get("note", "fresh");
    const tookMs = Date.now() - wrote;
    const after = await reads();

    assert.equal(missed, true, `a read without a token, right after the write, is served by the lagging replica and misses it; reads: ${JSON.stringify(delta(before, mid))}`);
    assert.deepEqual(delta(before, mid), { "replica/fresh": 1 }, "the tokenless read ran on the replica");
    assert.equal(r.name, "fresh");
    assert.deepEqual(r.spec, { text: "hi" });
    assert.deepEqual(delta(mid, after), { "replica/caught_up": 1 }, "the writer's read waited for the replica and ran there");
    assert.ok(tookMs >= applyDelayMs / 2, `the read came back after ${tookMs} ms: it cannot have waited for a replica ${applyDelayMs} ms behind`);
  });

  it("waitFor, list and Watch carry the token too", async () => {
    const writer = new Client({ url: apiURL });
    await writer.applyKind(noteKind);
    await writer.apply({ kind: "note", kindVersion: 1, name: "second", spec: { text: "again" } });
    const before = await reads();
    const r = await writer.waitFor("note", "second", () => true, { timeoutMs: 30_000 });
    assert.equal(r.name, "second");
    const all = await writer.list({ kind: "note" });
    assert.ok(all.some((x) => x.name === "second"), `list shows the write: ${all.map((x) => x.name).join(",")}`);
    const d = delta(before, await reads());
    assert.ok(!Object.keys(d).some((k) => k.startsWith("primary/behind")), `no read gave up on the replica: ${JSON.stringify(d)}`);
    assert.ok((d["replica/caught_up"] ?? 0) + (d["replica/fresh"] ?? 0) >= 2, `the reads ran on the replica: ${JSON.stringify(d)}`);
  });
});
