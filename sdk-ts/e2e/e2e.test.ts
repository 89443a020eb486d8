// End to end: the packed SDK, installed into a fresh project with npm, runs
// the examples' workers against a real server in dev mode, and the SDK's
// client applies resources and waits for them.
//
// Two `converge dev` processes share one database: the first starts the
// throwaway PostgreSQL and stays up for the whole run; the second is the
// server under test (workers and the client talk to it), started on that
// database so it can be stopped and started again on the same database and
// port, as a server restart.
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { after, before, describe, it } from "node:test";
import { freePort, poll, run, start, type Proc } from "./procs.js";

type SDK = typeof import("../src/index.js");

// build/test/e2e → the sdk-ts package and the repository.
const here = dirname(fileURLToPath(import.meta.url));
const pkg = join(here, "..", "..", "..");
const repo = join(pkg, "..");
const examples = join(pkg, "build", "test", "examples");

const readyTimeout = 60_000;
const waitTimeout = 30_000;

let tmp = "";
let app = "";
let converge = "";
let dbURL = "";
let apiURL = "";
let listen = "";
let holder: Proc | undefined;
let server: Proc | undefined;
let serverStarts = 0;
const workers: Proc[] = [];
let sdk: SDK;
let client: InstanceType<SDK["Client"]>;

function diagnostics(): string {
  return [holder, server, ...workers].filter((p): p is Proc => p !== undefined).map((p) => p.tail()).join("\n");
}

async function startServer(): Promise<void> {
  serverStarts++;
  // Short leases and retries, as the Go end-to-end tests use.
  server = start(`converge-dev-${serverStarts}`, tmp, converge, [
    "dev", "--database-url", dbURL, "--listen", listen,
    "--lease", "3s", "--heartbeat", "500ms", "--poll", "200ms", "--retry-base", "100ms", "--retry-max", "1s",
  ], repo);
  const s = server;
  await poll(`${s.name} to answer /readyz`, readyTimeout, async () => {
    if (!s.running) throw new Error(`${s.name} exited:\n${s.tail()}`);
    const r = await fetch(`${apiURL}/readyz`);
    return r.status === 200 ? true : undefined;
  });
}

function startWorker(name: string, example: string): Proc {
  const p = start(name, tmp, process.execPath, [join(example, "main.js"), "--server", apiURL], app);
  workers.push(p);
  return p;
}

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "converge-sdk-ts-e2e-"));
  converge = join(tmp, "converge");
  await run("go", ["build", "-o", converge, "./server/cmd/converge"], repo);

  // The package exactly as published, installed the way a user would.
  const packed = await run("npm", ["pack", "--ignore-scripts", "--pack-destination", tmp, "--json"], pkg);
  const tarball = join(tmp, (JSON.parse(packed) as { filename: string }[])[0].filename);
  app = join(tmp, "app");
  mkdirSync(app);
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ name: "sdk-e2e-app", private: true, type: "module", dependencies: { "@converge/sdk": `file:${tarball}` } }),
  );
  await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], app);
  for (const ex of ["leaf", "composer"]) {
    mkdirSync(join(app, ex));
    for (const f of readdirSync(join(examples, ex)).filter((f) => f.endsWith(".js"))) {
      copyFileSync(join(examples, ex, f), join(app, ex, f));
    }
  }
  const entry = createRequire(join(app, "package.json")).resolve("@converge/sdk");
  sdk = (await import(pathToFileURL(entry).href)) as SDK;

  holder = start("converge-dev-holder", tmp, converge, ["dev", "--listen", `127.0.0.1:${await freePort()}`], repo);
  const h = holder;
  dbURL = await poll("the holder's database URL", readyTimeout, () => {
    if (!h.running) throw new Error(`holder exited:\n${h.tail()}`);
    return /Database:\s+(postgres:\/\/\S+)/.exec(h.output())?.[1];
  });
  listen = `127.0.0.1:${await freePort()}`;
  apiURL = `http://${listen}`;
  await startServer();
  client = new sdk.Client({ url: apiURL });
  for (const f of [join(pkg, "examples", "leaf", "hello.yaml"), join(pkg, "examples", "composer", "kinds.yaml")]) {
    await client.applyDocuments(sdk.parseDocuments(readFileSync(f, "utf8"), f));
  }
  startWorker("leaf-worker", "leaf");
  startWorker("composer-worker", "composer");
});

after(async () => {
  for (const w of workers) {
    await w.stop("SIGKILL");
  }
  await server?.stop("SIGINT");
  await holder?.stop("SIGINT");
  if (tmp && process.env.KEEP_E2E !== "1") {
    rmSync(tmp, { recursive: true, force: true });
  }
});

describe("TypeScript SDK end to end", () => {
  it("a leaf resource becomes Ready with its handler's status", async () => {
    const r = await client.waitForPhase("hello", "hello-world", "Ready", { timeoutMs: waitTimeout }).catch((e) => {
      throw new Error(`${(e as Error).message}\n${diagnostics()}`);
    });
    assert.deepEqual(r.status, { message: "Hello, world!" });
  });

  it("a handler's terminal() error makes the resource Failed with the message", async () => {
    await client.apply({ kind: "hello", kindVersion: 1, name: "nobody", spec: { name: "" } });
    const r = await client.waitForPhase("hello", "nobody", ["Failed", "Ready"], { timeoutMs: waitTimeout });
    assert.equal(r.phase, "Failed");
    assert.equal(r.failure?.terminal, true);
    assert.match(r.failure?.message ?? "", /spec\.name is empty: say who to greet/);
  });

  it("a composer's children become Ready, with values flowed from one into the other", async () => {
    const app = await client.waitForPhase("webapp", "shop", "Ready", { timeoutMs: waitTimeout }).catch((e) => {
      throw new Error(`${(e as Error).message}\n${diagnostics()}`);
    });
    assert.deepEqual(app.status, { components: 2 });
    const children = await client.list({ kind: "service" });
    const svc = children.find((c) => c.name === "shop-svc");
    assert.ok(svc, "the service child exists");
    assert.equal(svc.owner?.name, "shop");
    assert.equal(svc.spec?.database_endpoint, "shop-db.db.internal:5432");
    assert.equal(svc.spec?.database_url, "postgres://shop-db.db.internal:5432/shop");
    assert.match(String(svc.status?.url), /db postgres:\/\/shop-db\.db\.internal:5432\/shop/);
    const db = await client.get("database", "shop-db");
    assert.equal(db.phase, "Ready");
  });

  it("a plan predicts the children the apply then makes, composed as a preview by the composer's own handler", async () => {
    type Plan = Awaited<ReturnType<typeof client.rpc.planChange>>;
    const doc = (replicas: number) => ({ namespace: "default", kind: "webapp", kindVersion: 1, name: "planned", spec: { image: "nginx:1", replicas } });
    const byKey = (p: Plan) => {
      assert.equal(p.composites.length, 1, JSON.stringify(p.composites));
      const c = p.composites[0];
      assert.equal(c.notPreviewed, "", `not previewed: ${c.notPreviewed}\n${diagnostics()}`);
      assert.match(c.composer, /^worker /);
      return new Map(c.children.map((ch) => [`${ch.kind}/${ch.name}`, ch]));
    };

    // A new composite: both children are to be created; the service waits
    // for the database, which does not exist yet.
    const created = byKey(await client.rpc.planChange({ resources: [doc(1)] }));
    assert.deepEqual([...created.keys()].sort(), ["database/planned-db", "service/planned-svc"]);
    assert.ok([...created.values()].every((c) => c.action === "create"));
    assert.match(created.get("service/planned-svc")?.waiting ?? "", /planned-db/);
    await assert.rejects(client.get("webapp", "planned"), /not found/i, "the plan created nothing");

    await client.apply(doc(1));
    await client.waitForPhase("webapp", "planned", "Ready", { timeoutMs: waitTimeout });
    const children = (await client.list()).filter((r) => r.owner?.name === "planned");
    assert.deepEqual(children.map((r) => `${r.kind}/${r.name}`).sort(), [...created.keys()].sort());
    assert.deepEqual((await client.get("database", "planned-db")).spec, created.get("database/planned-db")?.specAfter);

    // A change: the service is updated, with the values that flow from the
    // database's current status written into its planned spec.
    const changed = byKey(await client.rpc.planChange({ resources: [doc(2)] }));
    assert.equal(changed.get("database/planned-db")?.action, "unchanged");
    const svc = changed.get("service/planned-svc");
    assert.equal(svc?.action, "update");
    assert.equal(svc?.waiting, "");
    assert.equal(svc?.specAfter?.database_endpoint, "planned-db.db.internal:5432");
    await client.apply(doc(2));
    const after = await client.waitFor("service", "planned-svc", (r) => r.spec?.replicas === 2 && r.phase === "Ready", { timeoutMs: waitTimeout });
    assert.deepEqual(after.spec, svc?.specAfter);
  });

  it("workers reconnect after the server restarts on the same database and port, and new work is done", async () => {
    assert.equal(await server?.stop("SIGTERM"), 0, `the server should exit cleanly:\n${server?.tail()}`);
    await startServer();
    await client.apply({ kind: "hello", kindVersion: 1, name: "after-restart", spec: { name: "again", greeting: "Welcome back" } });
    await client.apply({ kind: "webapp", kindVersion: 1, name: "blog", spec: { image: "blog:2" } });
    const r = await client.waitForPhase("hello", "after-restart", "Ready", { timeoutMs: waitTimeout }).catch((e) => {
      throw new Error(`${(e as Error).message}\n${diagnostics()}`);
    });
    assert.deepEqual(r.status, { message: "Welcome back, again!" });
    await client.waitForPhase("webapp", "blog", "Ready", { timeoutMs: waitTimeout });
    for (const w of workers) {
      assert.ok(w.running, `${w.name} is still running`);
      assert.match(w.output(), /worker stream ended; reconnecting/, `${w.name} logged the reconnect`);
    }
  });

  it("a worker and a client reach a mutual-TLS server with the tls option", async () => {
    // Certificates from openssl: a CA, the server's for 127.0.0.1, and a
    // client's carrying a SPIFFE ID the server's allowlist admits.
    const dir = join(tmp, "tls");
    mkdirSync(dir);
    const ssl = (...args: string[]) => run("openssl", args, dir);
    const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
    await ssl("req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=test-ca", "-days", "1");
    for (const [name, san] of [["server", "IP:127.0.0.1"], ["client", "URI:spiffe://test/ops"]]) {
      writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\n`);
      await ssl("req", ...ec, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`);
      await ssl("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", `${name}.crt`, "-days", "1", "-extfile", `${name}.ext`);
    }
    const tlsListen = `127.0.0.1:${await freePort()}`;
    const tlsURL = `https://${tlsListen}`;
    const tlsServer = start("converge-dev-tls", tmp, converge, [
      "dev", "--database-url", dbURL, "--listen", tlsListen, "--poll", "200ms",
      "--tls-cert", join(dir, "server.crt"), "--tls-key", join(dir, "server.key"),
      "--tls-client-ca", join(dir, "ca.crt"), "--allow-api-ids", "spiffe://test/ops",
    ], repo);
    const files = { caFile: join(dir, "ca.crt"), certFile: join(dir, "client.crt"), keyFile: join(dir, "client.key") };
    const w = new sdk.Worker({ url: tlsURL, tls: files, name: "tls-worker", logger: sdk.silentLogger });
    const ac = new AbortController();
    try {
      const tlsClient = new sdk.Client({ url: tlsURL, tls: files });
      await poll("the TLS server to answer", readyTimeout, async () => {
        if (!tlsServer.running) throw new Error(`TLS server exited:\n${tlsServer.tail()}`);
        return (await tlsClient.rpc.listKinds({}).then(() => true, () => undefined));
      });
      // Without a client certificate the handshake is refused.
      const anonymous = new sdk.Client({ url: tlsURL, tls: { caFile: files.caFile } });
      await assert.rejects(anonymous.rpc.listKinds({}));
      await tlsClient.applyDocuments(sdk.parseDocuments(
        "type: manifest\nkind: tls.ping\nkind_version: 1\nreactions:\n  - {name: reconcile, trigger: specChange, emits: [status]}\n", "tls.yaml"));
      w.handle("tls.ping", 1, "reconcile", async () => ({ status: { over: "mutual TLS" } }));
      const running = w.run(ac.signal);
      await tlsClient.apply({ kind: "tls.ping", kindVersion: 1, name: "one", spec: {} });
      const r = await tlsClient.waitForPhase("tls.ping", "one", "Ready", { timeoutMs: waitTimeout }).catch((e) => {
        throw new Error(`${(e as Error).message}\n${tlsServer.tail()}`);
      });
      assert.deepEqual(r.status, { over: "mutual TLS" });
      ac.abort();
      await running;
    } finally {
      ac.abort();
      await tlsServer.stop("SIGINT");
    }
  });

  it("a worker registering a reaction its applied kind does not declare is refused: run() rejects", async () => {
    const w = new sdk.Worker({ url: apiURL, name: "typo-worker", logger: sdk.silentLogger });
    w.handle("hello", 1, "reconcle", () => {});
    const t0 = Date.now();
    await assert.rejects(w.run(new AbortController().signal), (e: unknown) => {
      assert.ok(e instanceof sdk.ConnectError, String(e));
      assert.equal(e.code, sdk.Code.FailedPrecondition);
      assert.match(e.rawMessage, /kind hello v1 has no reaction "reconcle"; it declares: reconcile/);
      return true;
    });
    assert.ok(Date.now() - t0 < waitTimeout, "run() rejected without retrying");
  });

  it("a draining worker hands its running task back at the drain timeout and another worker runs it long before the lease", async () => {
    // A replica with a 30 s lease, on the same database: only the workers
    // below serve the kind, and they dial it.
    const longListen = `127.0.0.1:${await freePort()}`;
    const longURL = `http://${longListen}`;
    const longServer = start("converge-dev-long-lease", tmp, converge, [
      "dev", "--database-url", dbURL, "--listen", longListen, "--lease", "30s", "--heartbeat", "1s", "--poll", "200ms",
    ], repo);
    const logged: string[] = [];
    const logger = (who: string) => ({
      debug: () => {},
      info: (m: string) => logged.push(`${who}: ${m}`),
      warn: (m: string) => logged.push(`${who}: ${m}`),
      error: (m: string) => logged.push(`${who}: ${m}`),
    });
    const slowStop = new AbortController();
    const quickStop = new AbortController();
    let release: () => void = () => {};
    const stuck = new Promise<void>((r) => (release = r));
    const slow = new sdk.Worker({ url: longURL, name: "slow", drainTimeoutMs: 300, logger: logger("slow") });
    let slowStarted = false;
    // Ignores its abort signal: the hand-back must not wait for it.
    slow.handle("drainer", 1, "reconcile", async () => {
      slowStarted = true;
      await stuck;
      return { status: { by: "slow" } };
    });
    const quick = new sdk.Worker({ url: longURL, name: "quick", logger: logger("quick") });
    let quickAttempt = 0;
    quick.handle("drainer", 1, "reconcile", (t) => {
      quickAttempt = t.attempt;
      return { status: { by: "quick" } };
    });
    const runs: Promise<void>[] = [];
    try {
      const longClient = new sdk.Client({ url: longURL });
      await poll("the long-lease server to answer", readyTimeout, async () => {
        if (!longServer.running) throw new Error(`long-lease server exited:\n${longServer.tail()}`);
        return await longClient.rpc.listKinds({}).then(() => true, () => undefined);
      });
      await longClient.applyDocuments(sdk.parseDocuments(
        "type: manifest\nkind: drainer\nkind_version: 1\nreactions:\n  - {name: reconcile, trigger: specChange, emits: [status]}\n", "drainer.yaml"));
      runs.push(slow.run(slowStop.signal));
      await longClient.apply({ kind: "drainer", kindVersion: 1, name: "one", spec: {} });
      await poll("the slow worker to start the task", waitTimeout, () => (slowStarted ? true : undefined));
      runs.push(quick.run(quickStop.signal));
      await poll("the quick worker to subscribe", waitTimeout, () => (logged.includes("quick: converge: worker subscribed") ? true : undefined));
      const t0 = Date.now();
      slowStop.abort();
      const r = await longClient.waitForPhase("drainer", "one", "Ready", { timeoutMs: 5000 }).catch((e) => {
        throw new Error(`${(e as Error).message}\n${logged.join("\n")}\n${longServer.tail()}`);
      });
      const took = Date.now() - t0;
      // The lease is 30 s; the hand-back makes the task claimable at once.
      assert.ok(took < 5000, `the task was done ${took} ms after the drain began`);
      assert.deepEqual(r.status, { by: "quick" });
      assert.equal(quickAttempt, 1, "the handed-back attempt does not count");
      assert.equal(r.failure, undefined);
      assert.ok(logged.some((l) => l.startsWith("slow: converge: drain timeout: giving the running tasks back")), logged.join("\n"));
    } finally {
      slowStop.abort();
      quickStop.abort();
      release();
      await Promise.allSettled(runs);
      await longServer.stop("SIGINT");
    }
  });

  it("workers drain on SIGTERM and exit with status 0", async () => {
    for (const w of workers) {
      const t0 = Date.now();
      assert.equal(await w.stop("SIGTERM"), 0, `${w.name} after SIGTERM:\n${w.tail()}`);
      // An idle worker's drain is quick; a timer left behind (the drain's
      // 5 s bounds) would hold the process.
      assert.ok(Date.now() - t0 < 4500, `${w.name} took ${Date.now() - t0} ms to exit after SIGTERM`);
      assert.match(w.output(), /worker draining/);
    }
  });

  it("the installed converge-ts-types command writes types from a manifest", async () => {
    const out = await run(join(app, "node_modules", ".bin", "converge-ts-types"), [join(pkg, "examples", "composer", "kinds.yaml")], app);
    assert.match(out, /export interface ServiceV1Spec \{/);
    assert.match(out, /size\?: "small" \| "large";/);
  });
});
