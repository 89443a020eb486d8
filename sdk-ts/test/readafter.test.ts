import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter, createConnectTransport } from "@connectrpc/connect-node";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { ControlService } from "../gen/converge/v1/control_pb.js";
import { Client, readAfterHeader } from "../src/client.js";
import { ReadAfter } from "../src/readafter.js";

/**
 * A fake ControlService that answers applies with the token the test sets
 * and records the token every call arrives with.
 */
class TokenServer {
  answer = "";
  sent: string[] = [];
  private server: http.Server | undefined;
  url = "";

  async start(): Promise<void> {
    const routes = (router: ConnectRouter) =>
      router.service(ControlService, {
        applyResource: (_req, ctx) => {
          this.sent.push(ctx.requestHeader.get(readAfterHeader) ?? "");
          if (this.answer !== "") ctx.responseHeader.set(readAfterHeader, this.answer);
          return { result: "created" };
        },
        getResource: (_req, ctx) => {
          this.sent.push(ctx.requestHeader.get(readAfterHeader) ?? "");
          return {};
        },
        async *watch(_req, ctx) {
          server.sent.push(ctx.requestHeader.get(readAfterHeader) ?? "");
          yield { heartbeat: true, cursor: "c1" };
        },
      });
    this.server = http.createServer(connectNodeAdapter({ routes }));
    await new Promise<void>((r) => this.server?.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

let server: TokenServer;
before(async () => {
  server = new TokenServer();
  await server.start();
});
after(() => server.stop());

async function write(c: Client, answer: string): Promise<void> {
  server.answer = answer;
  await c.apply({ kind: "greeting", kindVersion: 1, name: "a" });
}

describe("read-your-writes tokens", () => {
  it("ReadAfter keeps the greatest token of the width it holds", () => {
    const ra = new ReadAfter();
    const seen: string[] = [];
    for (const tok of ["", "00000000000000a0", null, "0000000000000090", "bogus", "00000000000000b0", undefined]) {
      ra.observe(tok);
      seen.push(ra.latest);
    }
    assert.deepEqual(seen, ["", "00000000000000a0", "00000000000000a0", "00000000000000a0", "00000000000000a0", "00000000000000b0", "00000000000000b0"]);
  });

  it("a client sends the latest token it was answered with on later calls and streams", async () => {
    const c = new Client({ url: server.url });
    server.sent = [];
    await c.get("greeting", "a"); // nothing written yet: no token
    await write(c, "00000000000000a0");
    assert.equal(c.readAfterToken, "00000000000000a0");
    await c.get("greeting", "a");
    await write(c, "0000000000000090"); // an older token, from a call that overlapped
    await write(c, ""); // a server without a replica sends none
    await c.get("greeting", "a");
    for await (const r of c.watch({ kind: "greeting" })) {
      assert.ok(r.heartbeat);
      break;
    }
    assert.deepEqual(server.sent, ["", "", "00000000000000a0", "00000000000000a0", "00000000000000a0", "00000000000000a0", "00000000000000a0"]);
  });

  it("a token the caller set is left alone", async () => {
    const c = new Client({ url: server.url });
    await write(c, "00000000000000a0");
    server.sent = [];
    await c.rpc.getResource({ kind: "greeting", name: "a" }, { headers: { [readAfterHeader]: "0000000000000001" } });
    assert.deepEqual(server.sent, ["0000000000000001"]);
  });

  it("tokens travel over a transport the caller gave", async () => {
    const c = new Client({ transport: createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }) });
    server.sent = [];
    await write(c, "00000000000000c0");
    await c.get("greeting", "a");
    assert.deepEqual(server.sent, ["", "00000000000000c0"]);
  });

  it("clients keep their own tokens", async () => {
    const a = new Client({ url: server.url });
    const b = new Client({ url: server.url });
    await write(a, "00000000000000d0");
    server.sent = [];
    await b.get("greeting", "a");
    assert.deepEqual(server.sent, [""]);
  });
});
