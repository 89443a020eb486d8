import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { ControlService, WatchResponseSchema, type WatchRequest, type WatchResponse } from "../gen/converge/v1/control_pb.js";
import { ChangeSchema, ResourceSchema, type Resource } from "../gen/converge/v1/types_pb.js";
import { Client } from "../src/client.js";
import { Waiter } from "../src/testing/index.js";

/** A fake ControlService: resources in a map, watch streams the test feeds. */
class FakeControl {
  resources = new Map<string, Resource>();
  watches = new Waiter<{ req: WatchRequest; push: (r: WatchResponse) => void; end: (e?: Error) => void }>();
  headers: string[] = [];
  pages = 0;
  server: http.Server | undefined;
  url = "";

  async start(): Promise<void> {
    const routes = (router: ConnectRouter) =>
      router.service(ControlService, {
        getResource: (req, ctx) => {
          this.headers.push(ctx.requestHeader.get("authorization") ?? "");
          const r = this.resources.get(`${req.namespace}/${req.kind}/${req.name}`);
          if (!r) throw new ConnectError(`resource ${req.name} not found`, Code.NotFound);
          return { resource: r };
        },
        listResources: (req) => {
          this.pages++;
          const all = [...this.resources.values()].filter((r) => !req.kind || r.kind === req.kind);
          const start = Number(req.pageToken || 0);
          const next = start + 2 < all.length ? String(start + 2) : "";
          return { resources: all.slice(start, start + 2), nextPageToken: next };
        },
        watch: (req) => this.stream(req),
      });
    this.server = http.createServer(connectNodeAdapter({ routes }));
    await new Promise<void>((r) => this.server?.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async *stream(req: WatchRequest): AsyncGenerator<WatchResponse> {
    const queue: (WatchResponse | Error | null)[] = [];
    let wake: (() => void) | undefined;
    const put = (x: WatchResponse | Error | null) => {
      queue.push(x);
      wake?.();
    };
    this.watches.push({ req, push: (r) => put(r), end: (e) => put(e ?? null) });
    for (;;) {
      while (queue.length > 0) {
        const x = queue.shift();
        if (x === null) return;
        if (x instanceof Error) throw x;
        yield x as WatchResponse;
      }
      await new Promise<void>((r) => (wake = r));
    }
  }

  set(name: string, phase: string, kind = "hello"): void {
    this.resources.set(`default/${kind}/${name}`, create(ResourceSchema, { namespace: "default", kind, name, phase }));
  }

  async stop(): Promise<void> {
    for (const w of this.watches.items) w.end();
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

const heartbeat = (cursor: string) => create(WatchResponseSchema, { heartbeat: true, cursor });
const change = (name: string, cursor: string, phase = "Ready") =>
  create(WatchResponseSchema, { changes: [create(ChangeSchema, { namespace: "default", kind: "hello", name, cursor, phase })] });

let fake: FakeControl;
let client: Client;

before(async () => {
  fake = new FakeControl();
  await fake.start();
  client = new Client({ url: fake.url, headers: { authorization: "Bearer t" } });
});
after(() => fake.stop());
beforeEach(() => {
  fake.resources.clear();
});

describe("Client", () => {
  it("watch resumes a broken stream from the last cursor, yielding one heartbeat per stream", async () => {
    const from = fake.watches.items.length;
    const got: string[] = [];
    const ac = new AbortController();
    const done = (async () => {
      for await (const r of client.watch({ kind: "hello" }, { signal: ac.signal })) {
        got.push(r.heartbeat ? `hb:${r.cursor}` : r.changes.map((c) => `${c.name}@${c.cursor}`).join(","));
        if (got.length === 4) ac.abort();
      }
    })();
    const w1 = await fake.watches.next((_) => true, "first watch", from);
    assert.equal(w1.req.cursor, "");
    w1.push(heartbeat("c1"));
    w1.push(heartbeat("c2")); // a later heartbeat only moves the cursor
    w1.push(change("a", "c3"));
    w1.end(new ConnectError("connection reset", Code.Unavailable));
    const w2 = await fake.watches.next((_) => true, "second watch", from + 1);
    assert.equal(w2.req.cursor, "c3");
    assert.equal(w2.req.kind, "hello");
    w2.push(heartbeat("c3"));
    w2.push(change("b", "c4"));
    await done;
    assert.deepEqual(got, ["hb:c1", "a@c3", "hb:c3", "b@c4"]);
  });

  it("watch gives up on a request the server refuses", async () => {
    const from = fake.watches.items.length;
    const it = client.watch({ cursor: "bogus" });
    const first = it.next();
    const w = await fake.watches.next((_) => true, "watch", from);
    w.end(new ConnectError("cursor expired", Code.InvalidArgument));
    await assert.rejects(first, /cursor expired/);
  });

  it("waitFor reads the resource once the watch is registered and after each change", async () => {
    fake.set("x", "Reconciling");
    const from = fake.watches.items.length;
    const wait = client.waitForPhase("hello", "x", "Ready", { timeoutMs: 5000 });
    const w = await fake.watches.next((_) => true, "watch", from);
    assert.deepEqual([w.req.namespace, w.req.kind, w.req.name], ["default", "hello", "x"]);
    w.push(heartbeat("c1"));
    fake.set("x", "Ready");
    w.push(change("x", "c2"));
    const r = await wait;
    assert.equal(r.phase, "Ready");
    assert.equal(fake.headers.at(-1), "Bearer t", "the header option reaches the server");
  });

  it("waitFor rejects with NotFound for a missing resource", async () => {
    const from = fake.watches.items.length;
    const wait = client.waitForPhase("hello", "missing", "Ready");
    (await fake.watches.next((_) => true, "watch", from)).push(heartbeat("c1"));
    await assert.rejects(wait, (e: unknown) => e instanceof ConnectError && e.code === Code.NotFound && /default\/hello\/missing not found/.test(e.message));
  });

  it("waitFor times out saying what it last saw", async () => {
    fake.set("slow", "Reconciling");
    fake.resources.get("default/hello/slow")!.waiting = "dependency vpc/v not synced";
    const from = fake.watches.items.length;
    const wait = client.waitForPhase("hello", "slow", "Ready", { timeoutMs: 300 });
    (await fake.watches.next((_) => true, "watch", from)).push(heartbeat("c1"));
    await assert.rejects(wait, /wait for resource default\/hello\/slow: timed out after 300 ms; last seen phase Reconciling \(dependency vpc\/v not synced\)/);
  });

  it("list follows every page", async () => {
    for (const n of ["a", "b", "c", "d", "e"]) fake.set(n, "Ready");
    fake.pages = 0;
    const all = await client.list({ kind: "hello" });
    assert.deepEqual(all.map((r) => r.name), ["a", "b", "c", "d", "e"]);
    assert.equal(fake.pages, 3);
  });
});
